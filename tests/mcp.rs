//! The MCP server driven by a real MCP client (rmcp's), in process over a duplex pipe, and
//! as a child process (`kestrel mcp`) fed raw JSON-RPC lines the way docs/mcp.md shows.
//!
//! Every tool is called; results are compared with what the CLI verb prints for the same input,
//! refusals must carry the CLI's coded errors, and a malformed call must be a protocol error.

mod common;

use kestrel_desk::mcp::KestrelServer;
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientInfo};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ServiceError, ServiceExt};
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Command, Stdio};

const KESTREL: &str = env!("CARGO_BIN_EXE_kestrel");

/// Run the CLI; (exit code, stdout, stderr).
fn cli(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(KESTREL)
        .args(args)
        .current_dir(common::root())
        .output()
        .expect("run kestrel");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Start the server in process and connect rmcp's client to it.
async fn connect() -> RunningService<RoleClient, ClientInfo> {
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(s) = KestrelServer::quiet().serve(server_io).await {
            let _ = s.waiting().await;
        }
    });
    ClientInfo::default()
        .serve(client_io)
        .await
        .expect("initialize")
}

async fn call(
    client: &RunningService<RoleClient, ClientInfo>,
    tool: &str,
    args: Value,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(m) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(m))
        .await
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn data(r: &CallToolResult) -> &Value {
    r.structured_content.as_ref().expect("structured content")
}

fn is_error(r: &CallToolResult) -> bool {
    r.is_error == Some(true)
}

/// Is this schema node free of `oneOf`/`anyOf`/`allOf` and `$ref` at any depth?
fn no_combinators(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().all(|(k, v)| {
            !matches!(k.as_str(), "oneOf" | "anyOf" | "allOf" | "$ref") && no_combinators(v)
        }),
        Value::Array(a) => a.iter().all(no_combinators),
        _ => true,
    }
}

#[tokio::test]
async fn initialize_and_list_flat_schemas() {
    let client = connect().await;
    let info = client.peer_info().expect("server info");
    assert_eq!(info.server_info.name, "kestrel");
    assert!(info.capabilities.tools.is_some());
    assert!(info.instructions.as_deref().unwrap_or("").contains("card"));

    let tools = client.list_all_tools().await.expect("tools/list");
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    let mut want = vec![
        "card",
        "check",
        "frame",
        "grammar",
        "print",
        "route_turn",
        "run",
    ];
    want.sort();
    for w in &want {
        assert!(
            names.iter().any(|n| n == w),
            "missing tool {w} in {names:?}"
        );
    }
    for t in &tools {
        let s = Value::Object((*t.input_schema).clone());
        assert_eq!(s["type"], "object", "{}: {s}", t.name);
        assert!(s["properties"].is_object(), "{}: {s}", t.name);
        assert_eq!(s["additionalProperties"], false, "{}: {s}", t.name);
        assert!(
            no_combinators(&s),
            "{}: the schema must be one flat object: {s}",
            t.name
        );
        // Enum choices are plain string enums.
        for (k, p) in s["properties"].as_object().expect("properties") {
            if let Some(e) = p.get("enum") {
                assert_eq!(p["type"], "string", "{}.{k}", t.name);
                assert!(
                    e.as_array().is_some_and(|a| !a.is_empty()),
                    "{}.{k}",
                    t.name
                );
            }
        }
        assert!(
            t.description.as_deref().is_some_and(|d| d.len() > 40),
            "{} needs a description",
            t.name
        );
    }
    let check = tools.iter().find(|t| t.name == "check").expect("check");
    assert_eq!(check.input_schema["required"], json!(["document"]));
    assert_eq!(
        check.input_schema["properties"]["mode"]["enum"],
        json!(["file", "turn"])
    );
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn check_and_print_match_the_cli() {
    let client = connect().await;
    let src = std::fs::read_to_string(common::root().join("examples/fade-ladder.kestrel"))
        .expect("example");

    let r = call(&client, "check", json!({ "document": src }))
        .await
        .expect("check");
    assert!(!is_error(&r), "{}", text(&r));
    let n = data(&r)["statements"].as_u64().expect("statements");
    assert_eq!(data(&r)["ok"], true);
    let (code, out, _) = cli(&["check", "examples/fade-ladder.kestrel"]);
    assert_eq!(code, 0);
    assert!(
        out.contains(&format!("({n} statement")),
        "cli says {out}, mcp {n}"
    );

    let r = call(&client, "print", json!({ "document": src }))
        .await
        .expect("print");
    assert!(!is_error(&r));
    let (code, out, _) = cli(&["print", "examples/fade-ladder.kestrel"]);
    assert_eq!(code, 0);
    assert_eq!(text(&r), out, "print: the same canonical text as the CLI");
    assert_eq!(data(&r)["canonical"], out);

    // A refused document: the same coded errors as `kestrel check`, with rule and line.
    let bad = "PLAN fade budget 0.2R ttl 15:00\n  ENTRY buy 1 SPY at mark\n";
    let dir = std::env::temp_dir().join(format!("kestrel-mcp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let path = dir.join("bad.kestrel");
    std::fs::write(&path, bad).expect("write");
    let (code, _, err) = cli(&["check", path.to_str().expect("utf8")]);
    assert_eq!(code, 2);
    let cli_errors: Vec<String> = err
        .lines()
        .filter_map(|l| l.split_once(": error ").map(|(_, e)| format!("error {e}")))
        .collect();
    assert!(!cli_errors.is_empty(), "{err}");

    for tool in ["check", "print"] {
        let r = call(&client, tool, json!({ "document": bad }))
            .await
            .expect("a refusal is a tool result");
        assert!(is_error(&r), "{tool}: a refused document is isError");
        let lines: Vec<String> = text(&r).lines().map(str::to_string).collect();
        assert_eq!(lines, cli_errors, "{tool}: the CLI's one-line errors");
        let d = data(&r);
        assert_eq!(d["ok"], false);
        let e0 = &d["errors"][0];
        assert_eq!(e0["code"], "PARSE");
        assert!(e0["rule"].as_str().is_some_and(|s| !s.is_empty()), "{e0}");
        assert!(e0["line"].as_u64().is_some_and(|l| l >= 1), "{e0}");
        assert!(e0["col"].as_u64().is_some_and(|c| c >= 1), "{e0}");
        assert_eq!(e0["error"], cli_errors[0].as_str());
    }

    // A turn directive: refused in a file, accepted as a turn.
    let r = call(
        &client,
        "check",
        json!({ "document": "STAND-DOWN tired\n" }),
    )
    .await
    .expect("check");
    assert!(is_error(&r));
    assert_eq!(data(&r)["errors"][0]["rule"], "directive-in-file");
    let r = call(
        &client,
        "check",
        json!({ "document": "STAND-DOWN tired\n", "mode": "turn" }),
    )
    .await
    .expect("check");
    assert!(!is_error(&r), "{}", text(&r));
    // A turn the router refuses as a mix is refused here too, with the router's error.
    for tool in ["check", "print"] {
        let r = call(
            &client,
            tool,
            json!({ "document": "STAND-DOWN tired\nCANCEL p\n", "mode": "turn" }),
        )
        .await
        .expect(tool);
        assert!(is_error(&r), "{}", text(&r));
        assert_eq!(data(&r)["errors"][0]["code"], "TURN", "{}", text(&r));
        assert_eq!(data(&r)["errors"][0]["rule"], "turn-mix", "{}", text(&r));
        assert_eq!(data(&r)["errors"][0]["line"], 2, "{}", text(&r));
    }
    let _ = std::fs::remove_dir_all(&dir);
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn card_and_route_turn_match_the_cli() {
    let client = connect().await;
    let r = call(&client, "card", json!({ "budget": 2000, "phase": "open" }))
        .await
        .expect("card");
    assert!(!is_error(&r), "{}", text(&r));
    let (code, out, _) = cli(&["card", "--budget", "2000", "--phase", "open"]);
    assert_eq!(code, 0);
    assert_eq!(text(&r), out);
    assert!(data(&r)["tokens"].as_u64().is_some_and(|t| t <= 2000));

    let r = call(&client, "card", json!({ "budget": 5 }))
        .await
        .expect("card");
    assert!(is_error(&r));
    let (code, _, err) = cli(&["card", "--budget", "5"]);
    assert_eq!(code, 1);
    assert_eq!(text(&r), err.trim_end(), "the CLI's coded error");

    // An authored turn: the same JSON as `kestrel turn --json`.
    let reply_path = "examples/turns/02-stand-down.txt";
    let reply = std::fs::read_to_string(common::root().join(reply_path)).expect("turn");
    let r = call(&client, "route_turn", json!({ "reply": reply }))
        .await
        .expect("route_turn");
    assert!(!is_error(&r), "{}", text(&r));
    let (code, out, _) = cli(&["turn", reply_path, "--json"]);
    assert_eq!(code, 0);
    let mut want: Value = serde_json::from_str(&out).expect("json");
    want["ok"] = json!(true);
    assert_eq!(data(&r), &want);
    assert_eq!(data(&r)["outcome"], "stand-down");

    // Every profile the CLI takes, the tool takes: the same reply under completion-v1 (the
    // base-model profile) routes as `kestrel turn --profile completion-v1 --json` does.
    let r = call(
        &client,
        "route_turn",
        json!({ "reply": reply, "profile": "completion-v1" }),
    )
    .await
    .expect("route_turn");
    assert!(!is_error(&r), "{}", text(&r));
    let (code, out, _) = cli(&["turn", reply_path, "--profile", "completion-v1", "--json"]);
    assert_eq!(code, 0);
    let mut want: Value = serde_json::from_str(&out).expect("json");
    want["ok"] = json!(true);
    assert_eq!(data(&r), &want);

    // A refused turn: SHOW VIEW at a mid wake is off the menu.
    let r = call(
        &client,
        "route_turn",
        json!({ "reply": "SHOW VIEW v\n  levels\n", "phase": "mid", "author": "model" }),
    )
    .await
    .expect("route_turn");
    assert!(is_error(&r), "{}", text(&r));
    let d = data(&r);
    assert_eq!(d["ok"], false);
    assert_eq!(d["class"], "invalid");
    assert!(text(&r).starts_with("error code="), "{}", text(&r));
    assert!(d["errors"][0]["rule"].is_string());

    // A model's empty reply is a provider error.
    let r = call(
        &client,
        "route_turn",
        json!({ "reply": "", "author": "model" }),
    )
    .await
    .expect("route_turn");
    assert!(is_error(&r));
    assert_eq!(data(&r)["outcome"], "provider-error");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn frame_matches_the_cli_and_refuses_bad_tapes() {
    let client = connect().await;
    let view =
        std::fs::read_to_string(common::root().join("examples/view-wake.kestrel")).expect("view");
    let r = call(
        &client,
        "frame",
        json!({ "tape": "trend-2025-04-09-s1", "at": "11:30", "view": view }),
    )
    .await
    .expect("frame");
    assert!(!is_error(&r), "{}", text(&r));
    let (code, out, _) = cli(&[
        "frame",
        "--tape",
        "tapes/trend-2025-04-09-s1.jsonl",
        "--at",
        "11:30",
        "--view",
        "examples/view-wake.kestrel",
        "--json",
    ]);
    assert_eq!(code, 0);
    let want: Value = serde_json::from_str(&out).expect("json");
    let d = data(&r);
    assert_eq!(d["frame"], want["frame"]);
    assert_eq!(d["tokens_cl100k"], want["tokens_cl100k"]);
    assert_eq!(d["dropped"], want["dropped"]);
    assert_eq!(text(&r), want["frame"].as_str().expect("frame text"));

    // By path, with the default view.
    let path = common::root().join("tapes/range-2025-04-09-s2.jsonl");
    let r = call(
        &client,
        "frame",
        json!({ "tape": path.to_str().expect("utf8"), "at": "10:00:30" }),
    )
    .await
    .expect("frame");
    assert!(!is_error(&r), "{}", text(&r));
    assert!(text(&r).starts_with("FRAME tape=range-2025-04-09-s2"));

    // Refusals: coded, never a hang or a protocol error.
    for (args, code) in [
        (json!({ "tape": "no-such-tape", "at": "11:30" }), "USAGE"),
        (json!({ "tape": "/dev/zero", "at": "11:30" }), "IO"),
        (json!({ "tape": "/", "at": "11:30" }), "IO"),
        (json!({ "tape": "Cargo.toml", "at": "11:30" }), "TAPE"),
        (
            json!({ "tape": "trend-2025-04-09-s1", "at": "half past" }),
            "USAGE",
        ),
        // Outside the session, as the CLI refuses it (it framed `spot ?` at 04:00).
        (
            json!({ "tape": "trend-2025-04-09-s1", "at": "04:00" }),
            "USAGE",
        ),
        (
            json!({ "tape": "trend-2025-04-09-s1", "at": "16:30" }),
            "USAGE",
        ),
        (
            json!({ "tape": "trend-2025-04-09-s1", "at": "11:30", "view": "VIEW v\n  nonsense\n" }),
            "PARSE",
        ),
        (
            json!({ "tape": "trend-2025-04-09-s1", "at": "11:30", "view": view, "name": "nope" }),
            "USAGE",
        ),
    ] {
        let r = call(&client, "frame", args.clone()).await.expect("frame");
        assert!(is_error(&r), "{args}: {}", text(&r));
        assert_eq!(data(&r)["errors"][0]["code"], code, "{args}: {}", text(&r));
        assert!(
            text(&r).starts_with(&format!("error code={code}")),
            "{}",
            text(&r)
        );
    }
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn grammar_matches_the_cli() {
    let client = connect().await;
    for (format, scope) in [("gbnf", "turn"), ("lark", "file")] {
        let r = call(
            &client,
            "grammar",
            json!({ "format": format, "scope": scope }),
        )
        .await
        .expect("grammar");
        assert!(!is_error(&r), "{}", text(&r));
        let (code, out, _) = cli(&["grammar", "--format", format, "--scope", scope]);
        assert_eq!(code, 0);
        assert_eq!(text(&r), out, "{format} {scope}");
        assert_eq!(data(&r)["grammar"], out);
    }
    // Defaults: gbnf for a turn.
    let r = call(&client, "grammar", json!({})).await.expect("grammar");
    let (_, out, _) = cli(&["grammar"]);
    assert_eq!(text(&r), out);
    let r = call(&client, "grammar", json!({ "run_max": 0 }))
        .await
        .expect("grammar");
    assert!(is_error(&r));
    assert_eq!(data(&r)["errors"][0]["code"], "USAGE");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn run_matches_the_cli_report() {
    let client = connect().await;
    let plans =
        std::fs::read_to_string(common::root().join("examples/run-desk.kestrel")).expect("plans");
    let (code, out, _) = cli(&[
        "run",
        "--tape",
        "tapes/trend-2025-04-09-s1.jsonl",
        "--plans",
        "examples/run-desk.kestrel",
        "--r-usd",
        "1000",
        "--json",
    ]);
    assert_eq!(code, 0);
    // By path (the report names the path as given), r_usd as a number.
    let r = call(
        &client,
        "run",
        json!({ "plans": plans, "tape": "tapes/trend-2025-04-09-s1.jsonl", "r_usd": 1000 }),
    )
    .await
    .expect("run");
    assert!(!is_error(&r), "{}", text(&r));
    assert_eq!(
        text(&r),
        out.trim_end(),
        "the canonical report, byte for byte"
    );
    let mut want: Value = serde_json::from_str(&out).expect("json");
    want["ok"] = json!(true);
    assert_eq!(data(&r), &want);

    // By short name, r_usd as a string: the same replay (same determinism hash).
    let r = call(
        &client,
        "run",
        json!({ "plans": plans, "tape": "trend-2025-04-09-s1", "r_usd": "1000", "fill": "strict-cross-v1" }),
    )
    .await
    .expect("run");
    assert!(!is_error(&r), "{}", text(&r));
    assert_eq!(data(&r)["determinism_hash"], want["determinism_hash"]);
    assert_eq!(data(&r)["pnl_usd"], want["pnl_usd"]);

    // Refusals with the CLI's codes.
    for (args, code) in [
        (
            json!({ "plans": "PLAN p budget 0.2R ttl 15:00\n", "tape": "trend-2025-04-09-s1", "r_usd": 1000 }),
            "PARSE",
        ),
        (
            json!({ "plans": plans, "tape": "trend-2025-04-09-s1", "r_usd": "0" }),
            "USAGE",
        ),
        (
            json!({ "plans": plans, "tape": "trend-2025-04-09-s1", "r_usd": "lots" }),
            "USAGE",
        ),
        (
            json!({ "plans": plans, "tape": "trend-2025-04-09-s1", "r_usd": 1000, "fill": "generous" }),
            "USAGE",
        ),
        (
            json!({ "plans": plans, "tape": "nope", "r_usd": 1000 }),
            "USAGE",
        ),
        (
            json!({ "plans": plans, "tape": "README.md", "r_usd": 1000 }),
            "TAPE",
        ),
    ] {
        let r = call(&client, "run", args.clone()).await.expect("run");
        assert!(is_error(&r), "{args}: {}", text(&r));
        assert_eq!(data(&r)["errors"][0]["code"], code, "{}", text(&r));
    }
    let r = call(
        &client,
        "run",
        json!({ "plans": "PLAN p budget 0.2R ttl 15:00\n", "tape": "trend-2025-04-09-s1", "r_usd": 1000 }),
    )
    .await
    .expect("run");
    let e0 = &data(&r)["errors"][0];
    assert_eq!(e0["rule"], "clause-count");
    assert_eq!(e0["line"], 1);
    client.cancel().await.expect("close");
}

/// `grammar` took `free_text_max`/`run_max` up to 4294967295 and wrote `{0,4294967295}`
/// bounds, which a server expands into that many rules. Each has a limit (4096, 1024):
/// at the limit it is a grammar, past it a `USAGE` refusal naming the limit, as on the CLI.
#[tokio::test]
async fn grammar_bounds_have_a_limit() {
    let client = connect().await;
    let r = call(
        &client,
        "grammar",
        json!({ "free_text_max": 4096, "run_max": 1024 }),
    )
    .await
    .expect("grammar");
    assert!(!is_error(&r), "{}", text(&r));
    assert!(
        text(&r).contains("{0,4096}") || text(&r).contains(",4096}"),
        "{}",
        text(&r)
    );
    for (args, said) in [
        (
            json!({ "free_text_max": 4_294_967_295u32 }),
            "free_text_max is at most 4096, got 4294967295",
        ),
        (
            json!({ "run_max": 1025 }),
            "run_max is at most 1024, got 1025",
        ),
    ] {
        let r = call(&client, "grammar", args.clone())
            .await
            .expect("grammar");
        assert!(is_error(&r), "{args}: {}", text(&r));
        assert_eq!(data(&r)["errors"][0]["code"], "USAGE");
        assert!(text(&r).contains(said), "{}", text(&r));
    }
    let (code, _, err) = cli(&["grammar", "--run-max", "4294967295"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with("error code=USAGE message=--run-max is at most 1024, got 4294967295"),
        "{err}"
    );
    client.cancel().await.expect("close");
}

/// `run` said nothing of what `kestrel run` warns or notes: a document without a PLAN was a
/// plain success (the CLI: `warning code=NO-PLANS`), and a de-armed plan had no reason. The
/// first has a `warnings` array and the warning's line before the report; the second its
/// `reason`, as in `kestrel run --json`.
#[tokio::test]
async fn run_says_no_plans_and_why_a_plan_was_de_armed() {
    let client = connect().await;
    for plans in ["", "# only a comment\nUSING signal SPX exec SPY 0dte\n"] {
        let r = call(
            &client,
            "run",
            json!({ "plans": plans, "tape": "trend-2025-04-09-s1" }),
        )
        .await
        .expect("run");
        assert!(!is_error(&r), "{}", text(&r));
        let line = "warning code=NO-PLANS message=plans holds no PLAN: the tape replays with nothing armed";
        assert!(text(&r).starts_with(&format!("{line}\n{{")), "{}", text(&r));
        let w = &data(&r)["warnings"];
        assert_eq!(w[0]["code"], "NO-PLANS", "{w}");
        assert_eq!(w[0]["warning"], line, "{w}");
        assert_eq!(data(&r)["plans"], json!([]));
    }
    let plans = "PLAN elsewhere budget 0.2R ttl 15:00\n  USING signal QQQ exec SPY\n  WHEN spot > 1\n  DO buy 1 shares @ ask\n";
    let r = call(
        &client,
        "run",
        json!({ "plans": plans, "tape": "trend-2025-04-09-s1" }),
    )
    .await
    .expect("run");
    assert!(!is_error(&r), "{}", text(&r));
    assert!(data(&r).get("warnings").is_none(), "{}", text(&r));
    let p = &data(&r)["plans"][0];
    assert_eq!(p["state"], "de-armed", "{p}");
    assert_eq!(
        p["reason"], "UNKNOWN symbol QQQ: the tape does not carry it (USING)",
        "{p}"
    );
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn malformed_calls_are_protocol_errors() {
    let client = connect().await;
    for (tool, args) in [
        ("check", json!({ "document": 5 })),
        ("check", json!({})),
        ("check", json!({ "document": "", "mode": "sideways" })),
        ("check", json!({ "document": "", "colour": "red" })),
        ("card", json!({ "budget": "lots" })),
        ("card", json!({ "budget": -3 })),
        ("route_turn", json!({ "reply": "", "standing": "a,b" })),
        (
            "frame",
            json!({ "tape": "trend-2025-04-09-s1", "at": 1130 }),
        ),
        ("grammar", json!({ "format": "yacc" })),
        ("no_such_tool", json!({})),
    ] {
        match call(&client, tool, args.clone()).await {
            Err(ServiceError::McpError(e)) => {
                assert_eq!(e.code.0, -32602, "{tool} {args}: {e:?}");
                // Coded, with the tool named in its data (an unknown tool too: it read
                // "tool not found" with no data).
                assert!(e.message.starts_with("error code=USAGE message="), "{e:?}");
                let data = e.data.as_ref().expect("data");
                assert_eq!(data["code"], "USAGE", "{e:?}");
                assert_eq!(data["tool"], tool, "{e:?}");
                if tool == "no_such_tool" {
                    assert!(
                        e.message.contains("the tools are card, check, frame"),
                        "{e:?}"
                    );
                }
            }
            other => panic!("{tool} {args}: expected a protocol error, got {other:?}"),
        }
    }
    // The server is still up.
    let r = call(&client, "check", json!({ "document": "" }))
        .await
        .expect("check");
    assert!(!is_error(&r), "{}", text(&r));
    client.cancel().await.expect("close");
}

/// The first JSON-RPC lines of docs/mcp.md's try-it command, and its documented output.
fn docs_example() -> (Vec<String>, Vec<Value>) {
    let doc = std::fs::read_to_string(common::root().join("docs/mcp.md")).expect("docs/mcp.md");
    let sh = doc
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a sh block");
    let lines: Vec<String> = sh
        .lines()
        .filter_map(|l| {
            let l = l.trim().trim_end_matches('\\').trim();
            let l = l.strip_prefix('\'')?.strip_suffix('\'')?;
            Some(l.to_string())
        })
        .collect();
    assert!(sh.contains("| kestrel mcp"), "{sh}");
    let text = doc
        .split("```text\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a text block");
    let expected = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("docs: not JSON: {l}: {e}")))
        .collect();
    (lines, expected)
}

/// The docs/mcp.md try-it command, run for real: JSON-RPC lines into `kestrel mcp` as a child
/// process; stdout is only protocol and matches the documented responses.
#[test]
fn child_process_answers_as_the_docs_show() {
    let (lines, expected) = docs_example();
    assert_eq!(lines.len(), 5, "{lines:?}");
    let mut child = Command::new(KESTREL)
        .arg("mcp")
        .current_dir(common::root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kestrel mcp");
    {
        let mut stdin = child.stdin.take().expect("stdin");
        for l in &lines {
            writeln!(stdin, "{l}").expect("write");
        }
    }
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "exit {:?}", out.status);
    let stdout = String::from_utf8(out.stdout).expect("utf8");
    let mut msgs: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON-RPC: {l}: {e}")))
        .collect();
    assert_eq!(msgs.len(), expected.len(), "{stdout}");
    // The docs shorten the instructions; responses may come in any order.
    for m in &mut msgs {
        if let Some(i) = m.pointer_mut("/result/instructions") {
            *i = json!("Kestrel desk: check, print and route Kestrel documents ...");
        }
    }
    for e in &expected {
        let got = msgs
            .iter()
            .find(|m| m["id"] == e["id"])
            .unwrap_or_else(|| panic!("no response {}", e["id"]));
        assert_eq!(got, e, "response {} differs from docs/mcp.md", e["id"]);
    }
    let by_id = |id: u64| msgs.iter().find(|m| m["id"] == id).expect("response");
    assert_eq!(by_id(1)["result"]["serverInfo"]["name"], "kestrel");
    assert_eq!(by_id(3)["result"]["isError"], true);
    assert_eq!(
        by_id(3)["result"]["structuredContent"]["errors"][0]["rule"],
        "clause-count"
    );
    assert_eq!(by_id(4)["error"]["code"], -32602);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("kestrel mcp: serving on stdio"), "{stderr}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Any text in any field is an answer (success or coded refusal), never a panic.
    #[test]
    fn tools_never_panic(text in "\\PC{0,80}", at in "[0-9:.a-z]{0,12}") {
        use kestrel_desk::mcp::tools;
        for mode in [tools::DocMode::File, tools::DocMode::Turn] {
            let a = tools::DocumentArgs { document: text.clone(), mode };
            let c = tools::check(&a);
            let p = tools::print(&a);
            proptest::prop_assert_eq!(c.ok, p.ok);
            if !c.ok {
                proptest::prop_assert!(c.text.starts_with("error code="));
            }
        }
        let r = tools::route_turn(&serde_json::from_value(json!({ "reply": text, "author": "model" })).expect("args"));
        proptest::prop_assert_eq!(r.data["ok"].as_bool(), Some(r.ok));
        let f = tools::frame(&tools::FrameArgs {
            tape: text.clone(),
            at: at.clone(),
            view: Some(text.clone()),
            name: None,
            width: 0,
        });
        proptest::prop_assert!(!f.ok || text.is_empty());
    }
}

// ------------------------------------------------------------ the request reader (issue 16)

const INIT_LINE: &str = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
const INITIALIZED_LINE: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// Run `kestrel mcp` with these lines on stdin (then closed); (exit code, responses).
fn child_session(args: &[&str], lines: &[String], cwd: &std::path::Path) -> (i32, Vec<Value>) {
    let mut child = Command::new(KESTREL)
        .arg("mcp")
        .arg("--quiet")
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kestrel mcp");
    let mut stdin = child.stdin.take().expect("stdin");
    let all: Vec<String> = lines.to_vec();
    let feeder = std::thread::spawn(move || {
        for l in &all {
            if writeln!(stdin, "{l}").is_err() {
                return;
            }
        }
    });
    let out = child.wait_with_output().expect("wait");
    feeder.join().expect("feeder");
    let stdout = String::from_utf8(out.stdout).expect("utf8");
    let msgs = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON-RPC: {l}: {e}")))
        .collect();
    (out.status.code().unwrap_or(-1), msgs)
}

fn by_id<'a>(msgs: &'a [Value], id: &Value) -> Vec<&'a Value> {
    msgs.iter().filter(|m| &m["id"] == id).collect()
}

/// Every request line the server reads gets one answer: the shapes rmcp dropped or misread
/// (params `[]`, a lone surrogate, params 10,000 deep, a batch, ids `1.5`, `2^70`,
/// `{"a":1}`, `tools/call` without params or name or with string arguments) are JSON-RPC
/// errors, and the server goes on serving.
#[test]
fn every_malformed_request_gets_a_json_rpc_error_and_the_server_stays_up() {
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{{"name":"check","arguments":{{"document":{}0{}}}}}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let mut lines = vec![INIT_LINE.to_string(), INITIALIZED_LINE.to_string()];
    let with_id: Vec<(String, i64, Value)> = vec![
        (r#"{"jsonrpc":"2.0","id":10,"method":"tools/list","params":[]}"#.into(), -32602, json!(10)),
        (r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"check","arguments":{"document":"\ud800"}}}"#.into(), -32602, json!(11)),
        (deep, -32602, json!(13)),
        (r#"{"jsonrpc":"2.0","id":14,"method":"tools/call"}"#.into(), -32602, json!(14)),
        (r#"{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"arguments":{}}}"#.into(), -32602, json!(15)),
        (r#"{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"check","arguments":"STAND-DOWN x"}}"#.into(), -32602, json!(16)),
        (r#"{"jsonrpc":"2.0","id":17,"method":"no/such/method"}"#.into(), -32601, json!(17)),
    ];
    let null_id = [
        r#"[{"jsonrpc":"2.0","id":20,"method":"ping"}]"#,
        r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1180591620717411303424,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
        "this is not json",
    ];
    lines.extend(with_id.iter().map(|(l, _, _)| l.clone()));
    lines.extend(null_id.iter().map(|l| l.to_string()));
    lines.push(
        r#"{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"check","arguments":{"document":"STAND-DOWN tired\n","mode":"turn"}}}"#
            .into(),
    );
    let (code, msgs) = child_session(&[], &lines, &common::root());
    assert_eq!(code, 0, "{msgs:?}");
    for (line, want, id) in &with_id {
        let got = by_id(&msgs, id);
        assert_eq!(got.len(), 1, "{}: {got:?}", &line[..line.len().min(80)]);
        assert_eq!(got[0]["error"]["code"], *want, "{}", got[0]);
    }
    let nulls = by_id(&msgs, &Value::Null);
    assert_eq!(nulls.len(), null_id.len(), "{nulls:?}");
    assert!(nulls.iter().all(|m| m["error"]["code"].as_i64().is_some()));
    assert_eq!(nulls[0]["error"]["code"], -32600, "the batch: {}", nulls[0]);
    assert_eq!(nulls[4]["error"]["code"], -32700, "not JSON: {}", nulls[4]);
    let ok = by_id(&msgs, &json!(30));
    assert_eq!(ok.len(), 1);
    assert_eq!(ok[0]["result"]["isError"], false, "{}", ok[0]);
    assert_eq!(
        msgs.len(),
        1 + with_id.len() + null_id.len() + 1,
        "one answer per request"
    );
}

/// An `initialize` rmcp cannot read (no params, params `{}`, a number for the protocol
/// version) is refused with -32602 and the server waits for a good one: it used to stop
/// serving at once, answering every later request -32603 and exiting 1. A client that
/// closes stdin before initializing leaves a server that exits 0.
#[test]
fn a_bad_initialize_is_refused_and_the_server_waits_for_a_good_one() {
    let lines: Vec<String> = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"initialize"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":5,"capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#,
        INIT_LINE,
        INITIALIZED_LINE,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"check","arguments":{"document":"STAND-DOWN tired\n","mode":"turn"}}}"#,
    ]
    .map(String::from)
    .to_vec();
    let (code, msgs) = child_session(&[], &lines, &common::root());
    assert_eq!(code, 0, "{msgs:?}");
    for id in [1, 2, 3] {
        let got = by_id(&msgs, &json!(id));
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0]["error"]["code"], -32602, "{}", got[0]);
        assert!(
            got[0]["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("initialize")),
            "{}",
            got[0]
        );
    }
    assert_eq!(by_id(&msgs, &json!(4))[0]["result"], json!({}));
    assert_eq!(
        by_id(&msgs, &json!("init"))[0]["result"]["serverInfo"]["name"],
        "kestrel"
    );
    let ok = by_id(&msgs, &json!(5));
    assert_eq!(ok.len(), 1, "{msgs:?}");
    assert_eq!(ok[0]["result"]["isError"], false, "{}", ok[0]);
    // Stdin closed before any initialize: a clean exit, nothing written.
    for lines in [
        vec![],
        vec![r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#.to_string()],
    ] {
        let (code, msgs) = child_session(&[], &lines, &common::root());
        assert_eq!(code, 0, "{lines:?}: {msgs:?}");
        assert!(msgs.len() == lines.len(), "{msgs:?}");
    }
}

/// Calls still running when stdin closes are answered before the server exits.
#[test]
fn calls_running_when_stdin_closes_are_answered_before_exit() {
    let plans =
        std::fs::read_to_string(common::root().join("examples/run-desk.kestrel")).expect("plans");
    let mut lines = vec![INIT_LINE.to_string(), INITIALIZED_LINE.to_string()];
    let ids: Vec<i64> = (100..112).collect();
    for id in &ids {
        let tool = if id % 2 == 0 {
            json!({"name": "run", "arguments": {"plans": plans, "tape": "trend-2025-04-09-s1", "r_usd": "1000"}})
        } else {
            json!({"name": "frame", "arguments": {"tape": "shock-2025-04-09-s7", "at": "15:30"}})
        };
        lines.push(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": tool}).to_string(),
        );
    }
    let (code, msgs) = child_session(&[], &lines, &common::root());
    assert_eq!(code, 0);
    for id in &ids {
        let got = by_id(&msgs, &json!(id));
        assert_eq!(got.len(), 1, "id {id}: {got:?}");
        assert_eq!(got[0]["result"]["isError"], false, "id {id}: {}", got[0]);
    }
}

/// Concurrent calls written back to back are all answered while stdin stays open: the
/// client sends nothing more and only reads. A tester saw one answer of 40 withheld until
/// the next line (2026-12-06, F6); the server had written all 40 to stdout (strace), and the
/// line sat in the client's own buffer: its driver waited with `select()` on the pipe, then
/// read with a buffered `readline()`, which reads ahead, so a line read ahead is invisible
/// to the next `select()`. Here the client reads every line through one buffered reader,
/// slowly at first so that answers queue in the pipe, and waits for the ids with no further
/// input; several rounds, each in a fresh server.
#[test]
fn concurrent_calls_are_all_answered_with_no_further_input() {
    use std::io::BufRead;
    let plans =
        std::fs::read_to_string(common::root().join("examples/run-desk.kestrel")).expect("plans");
    for round in 0..3 {
        let mut child = Command::new(KESTREL)
            .args(["mcp", "--quiet"])
            .current_dir(common::root())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn kestrel mcp");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut stdin = child.stdin.take().expect("stdin");
        let ids: Vec<i64> = (100..118).collect();
        let mut all = vec![INIT_LINE.to_string(), INITIALIZED_LINE.to_string()];
        for id in &ids {
            let tool = match id % 3 {
                0 => {
                    json!({"name": "run", "arguments": {"plans": plans, "tape": "trend-2025-04-09-s1"}})
                }
                1 => {
                    json!({"name": "frame", "arguments": {"tape": "shock-2025-04-09-s7", "at": "15:30"}})
                }
                _ => json!({"name": "grammar", "arguments": {"format": "lark", "scope": "file"}}),
            };
            all.push(
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": tool})
                    .to_string(),
            );
        }
        // Back to back, in one write; stdin is then held open and nothing more is sent.
        stdin
            .write_all((all.join("\n") + "\n").as_bytes())
            .expect("write requests");
        stdin.flush().expect("flush");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        let mut answered = std::collections::BTreeSet::new();
        let mut k = 0;
        while answered.len() < ids.len() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let Ok(line) = rx.recv_timeout(left) else {
                let _ = child.kill();
                let missing: Vec<_> = ids.iter().filter(|i| !answered.contains(*i)).collect();
                panic!("round {round}: no answer for {missing:?} with stdin open");
            };
            let msg: Value = serde_json::from_str(&line).expect("JSON-RPC line");
            if let Some(id) = msg["id"].as_i64().filter(|i| ids.contains(i)) {
                assert_eq!(msg["result"]["isError"], false, "id {id}: {msg}");
                assert!(answered.insert(id), "id {id} answered twice");
            }
            // A slow reader for the first answers: the rest queue in the pipe.
            k += 1;
            if k < 8 {
                std::thread::sleep(std::time::Duration::from_millis(30));
            }
        }
        drop(stdin);
        let status = child.wait().expect("wait");
        reader.join().expect("reader");
        assert_eq!(status.code(), Some(0), "round {round}");
    }
}

/// Tape paths are confined to the root (the working directory, or `--root DIR`): outside
/// paths, `..` climbs and symlinks out are refused with one message that quotes nothing of
/// the file and does not tell whether it exists; bundled short names still work.
#[cfg(unix)]
#[test]
fn mcp_file_access_is_confined_to_the_root() {
    let d = std::env::temp_dir().join(format!("kestrel-mcp-root-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let root = d.join("root");
    std::fs::create_dir_all(&root).expect("dir");
    let d = std::fs::canonicalize(&d).expect("canonical");
    let root = d.join("root");
    std::fs::copy(
        common::root().join("tapes/range-2025-04-09-s2.jsonl"),
        root.join("mine.jsonl"),
    )
    .expect("copy");
    // A JSON-shaped file outside the root, with a secret in a field value.
    std::fs::write(
        d.join("secret.jsonl"),
        "{\"type\":\"header\",\"v\":\"hunter2\"}\n",
    )
    .expect("w");
    std::os::unix::fs::symlink(d.join("secret.jsonl"), root.join("link.jsonl")).expect("ln");
    let frame = |id: i64, tape: &str| {
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"frame","arguments":{"tape":tape,"at":"10:00"}}}).to_string()
    };
    let secret = d.join("secret.jsonl").display().to_string();
    let missing = d.join("missing.jsonl").display().to_string();
    let outside = [
        "/etc/shadow",
        "../../../etc/shadow",
        "/etc/no-such-file",
        secret.as_str(),
        missing.as_str(),
        "../secret.jsonl",
        "link.jsonl",
        "./link.jsonl",
    ];
    let mut lines = vec![INIT_LINE.to_string(), INITIALIZED_LINE.to_string()];
    for (i, p) in outside.iter().enumerate() {
        lines.push(frame(i as i64 + 1, p));
    }
    lines.push(frame(50, "mine.jsonl"));
    lines.push(frame(51, &root.join("mine.jsonl").display().to_string()));
    lines.push(frame(52, "trend-2025-04-09-s1"));
    let root_s = root.display().to_string();
    // From another working directory, with --root.
    let (code, msgs) = child_session(&["--root", &root_s], &lines, &std::env::temp_dir());
    assert_eq!(code, 0);
    let mut shapes = Vec::new();
    for (i, p) in outside.iter().enumerate() {
        let r = by_id(&msgs, &json!(i as i64 + 1));
        let r = &r[0]["result"];
        assert_eq!(r["isError"], true, "{p}: {r}");
        let e = &r["structuredContent"]["errors"][0];
        assert_eq!(e["code"], "IO", "{p}: {e}");
        let m = e["message"].as_str().expect("message");
        assert!(m.contains("not under the server's root"), "{p}: {m}");
        assert!(!r.to_string().contains("hunter2"), "{p}: {r}");
        shapes.push(m.replace(p, "<path>"));
    }
    shapes.dedup();
    assert_eq!(shapes.len(), 1, "the refusals differ: {shapes:?}");
    for id in [50, 51, 52] {
        let r = &by_id(&msgs, &json!(id))[0]["result"];
        assert_eq!(r["isError"], false, "{id}: {r}");
    }
    // A tape error over MCP names the line and the reason, never the content.
    std::fs::write(
        root.join("bad.jsonl"),
        "{\"type\":\"header\",\"v\":\"hunter2\"}\n",
    )
    .expect("w");
    let (_, msgs) = child_session(
        &["--root", &root_s],
        &[
            INIT_LINE.to_string(),
            INITIALIZED_LINE.to_string(),
            frame(60, "bad.jsonl"),
        ],
        &std::env::temp_dir(),
    );
    let r = &by_id(&msgs, &json!(60))[0]["result"];
    assert_eq!(r["structuredContent"]["errors"][0]["code"], "TAPE", "{r}");
    assert!(!r.to_string().contains("hunter2"), "{r}");
    let _ = std::fs::remove_dir_all(&d);
}

/// One generated input line and the answer it is owed: `Some(id)` an answer with that id,
/// `Some(null)` an id-less error, `None` nothing (a notification).
fn arb_line() -> impl proptest::strategy::Strategy<Value = (String, Option<Value>)> {
    use proptest::prelude::*;
    let call = |id: i64, args: String| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"check","arguments":{args}}}}}"#
        )
    };
    prop_oneof![
        // Garbage that is not JSON.
        "#[^\n\r]{0,200}".prop_map(|g| (g, Some(Value::Null))),
        // Deep nesting, up to 100,000 levels, inside the arguments.
        (1i64..1000, 1usize..100_000, any::<bool>()).prop_map(move |(id, depth, arr)| {
            let (o, c) = if arr { ("[", "]") } else { ("{\"a\":", "}") };
            let v = format!("{}0{}", o.repeat(depth), c.repeat(depth));
            (call(id, format!("{{\"document\":{v}}}")), Some(json!(id)))
        }),
        // Wide arrays.
        (1i64..1000, 0usize..20_000).prop_map(move |(id, n)| {
            let v = format!("[{}]", vec!["1"; n].join(","));
            (call(id, format!("{{\"document\":{v}}}")), Some(json!(id)))
        }),
        // A well-formed check of arbitrary text.
        (1i64..1000, "\\PC{0,60}").prop_map(move |(id, t)| {
            (
                call(id, json!({"document": t}).to_string()),
                Some(json!(id)),
            )
        }),
        // Cut-off JSON.
        (1i64..1000, 1usize..60).prop_map(move |(id, cut)| {
            let full = call(id, "{\"document\":\"\"}".into());
            (
                full[..cut.min(full.len() - 1)].to_string(),
                Some(Value::Null),
            )
        }),
        // Bad ids and batches.
        prop_oneof![
            Just(r#"{"jsonrpc":"2.0","id":2.5,"method":"ping"}"#.to_string()),
            Just(r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#.to_string()),
            Just("[]".to_string()),
            Just(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.to_string()),
        ]
        .prop_map(|l| (l, Some(Value::Null))),
        // A notification with bad params: never answered.
        Just((
            r#"{"jsonrpc":"2.0","method":"notifications/x","params":[]}"#.to_string(),
            None
        )),
    ]
}

proptest::proptest! {
    // 64 cases in CI; PROPTEST_CASES=N runs N.
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64)
    ))]

    /// The request reader answers every request it reads (garbage, deep to 100,000 levels,
    /// wide to 20,000 elements, cut off, bad ids, batches) and the server never dies: the ids
    /// answered are exactly the ids sent, plus one id-less error per unreadable line.
    #[test]
    fn the_server_answers_every_request_and_never_dies(
        lines in proptest::collection::vec(arb_line(), 1..12)
    ) {
        // Unique ids: renumber the generated ones in order.
        let mut input = vec![INIT_LINE.to_string(), INITIALIZED_LINE.to_string()];
        let mut want_ids = vec![json!("init")];
        let mut want_null = 0usize;
        for (i, (line, owed)) in lines.iter().enumerate() {
            let id = 1000 + i as i64;
            match owed {
                Some(Value::Null) => { want_null += 1; input.push(line.clone()); }
                Some(Value::Number(n)) => {
                    want_ids.push(json!(id));
                    input.push(line.replacen(&format!("\"id\":{n}"), &format!("\"id\":{id}"), 1));
                }
                _ => input.push(line.clone()),
            }
        }
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
        let (code, out) = rt.block_on(async {
            let (w, mut r) = tokio::io::duplex(1 << 20);
            let reader = tokio::spawn(async move {
                let mut s = String::new();
                let _ = tokio::io::AsyncReadExt::read_to_string(&mut r, &mut s).await;
                s
            });
            let bytes = (input.join("\n") + "\n").into_bytes();
            let code = tokio::time::timeout(
                std::time::Duration::from_secs(60),
                kestrel_desk::mcp::serve_lines(KestrelServer::quiet(), std::io::Cursor::new(bytes), w, true),
            ).await.expect("the server finished");
            (code, reader.await.expect("reader"))
        });
        proptest::prop_assert_eq!(code, 0);
        let msgs: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).expect("JSON-RPC")).collect();
        let mut got_ids: Vec<Value> = msgs.iter().filter(|m| !m["id"].is_null()).map(|m| m["id"].clone()).collect();
        let got_null = msgs.iter().filter(|m| m["id"].is_null()).count();
        got_ids.sort_by_key(|v| v.to_string());
        want_ids.sort_by_key(|v| v.to_string());
        proptest::prop_assert_eq!(got_ids, want_ids);
        proptest::prop_assert_eq!(got_null, want_null);
    }
}

/// A request line longer than the 16 MiB bound is answered `-32600` (id null) without being
/// held whole, and the next request is still served.
#[test]
fn an_over_long_request_line_is_refused_and_the_next_one_served() {
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"check","arguments":{{"document":"{}"}}}}}}"#,
        "x".repeat(kestrel_desk::mcp::wire::MAX_LINE_BYTES + 1)
    );
    let input = [
        INIT_LINE.to_string(),
        INITIALIZED_LINE.to_string(),
        big,
        r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#.to_string(),
    ]
    .join("\n")
        + "\n";
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");
    let (code, out) = rt.block_on(async {
        let (w, mut r) = tokio::io::duplex(1 << 16);
        let reader = tokio::spawn(async move {
            let mut s = String::new();
            let _ = tokio::io::AsyncReadExt::read_to_string(&mut r, &mut s).await;
            s
        });
        let code = kestrel_desk::mcp::serve_lines(
            KestrelServer::quiet(),
            std::io::Cursor::new(input.into_bytes()),
            w,
            true,
        )
        .await;
        (code, reader.await.expect("reader"))
    });
    assert_eq!(code, 0);
    let msgs: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(msgs.len(), 3, "{msgs:?}");
    let long = by_id(&msgs, &Value::Null);
    assert_eq!(long.len(), 1);
    assert_eq!(long[0]["error"]["code"], -32600);
    assert!(
        long[0]["error"]["message"]
            .as_str()
            .expect("message")
            .contains("longer than")
    );
    assert!(by_id(&msgs, &json!(5)).is_empty());
    assert_eq!(by_id(&msgs, &json!(6))[0]["result"], json!({}));
}

/// Serve these lines in process (stdin closed after them); (exit code, responses). Panics
/// when the server takes longer than `secs` to finish.
fn serve_in_process(lines: &[String], secs: u64) -> (i32, Vec<Value>) {
    let input = lines.join("\n") + "\n";
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");
    let (code, out) = rt.block_on(async {
        let (w, mut r) = tokio::io::duplex(1 << 20);
        let reader = tokio::spawn(async move {
            let mut s = String::new();
            let _ = tokio::io::AsyncReadExt::read_to_string(&mut r, &mut s).await;
            s
        });
        let code = tokio::time::timeout(
            std::time::Duration::from_secs(secs),
            kestrel_desk::mcp::serve_lines(
                KestrelServer::quiet(),
                std::io::Cursor::new(input.into_bytes()),
                w,
                true,
            ),
        )
        .await
        .unwrap_or_else(|_| panic!("the server did not finish within {secs} s"));
        (code, reader.await.expect("reader"))
    });
    let msgs = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON-RPC: {l}: {e}")))
        .collect();
    (code, msgs)
}

/// Two requests in flight under one id: the second was forwarded, rmcp answered only one of
/// them, and at EOF the server waited the whole DRAIN_TIMEOUT (120 s) before answering the
/// other `-32603`. A request whose id is still in flight is now refused at once with
/// `-32600` "invalid request: id already in use", and the server exits promptly.
#[test]
fn a_request_whose_id_is_already_in_flight_is_refused_and_the_server_exits_promptly() {
    let plans =
        std::fs::read_to_string(common::root().join("examples/run-desk.kestrel")).expect("plans");
    let run = json!({"name": "run", "arguments": {"plans": plans, "tape": "trend-2025-04-09-s1"}});
    let frame =
        json!({"name": "frame", "arguments": {"tape": "trend-2025-04-09-s1", "at": "11:30"}});
    let lines = vec![
        INIT_LINE.to_string(),
        INITIALIZED_LINE.to_string(),
        r#"{"jsonrpc":"2.0","id":"dup","method":"ping"}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":"dup","method":"ping"}"#.to_string(),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": run}).to_string(),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": frame}).to_string(),
        r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#.to_string(),
    ];
    let t0 = std::time::Instant::now();
    let (code, msgs) = serve_in_process(&lines, 60);
    assert_eq!(code, 0, "{msgs:?}");
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(60),
        "{:?}",
        t0.elapsed()
    );
    let in_use = |m: &Value| {
        m["error"]["code"] == -32600
            && m["error"]["message"]
                .as_str()
                .is_some_and(|s| s.starts_with("invalid request: id already in use"))
    };
    // The pings: each answered, the second either answered or refused (its twin may already
    // be answered when it is read).
    let dup = by_id(&msgs, &json!("dup"));
    assert_eq!(dup.len(), 2, "{dup:?}");
    assert!(
        dup.iter().all(|m| m["result"] == json!({}) || in_use(m)),
        "{dup:?}"
    );
    assert!(dup.iter().any(|m| m["result"] == json!({})), "{dup:?}");
    // The tool calls: the run is still running when its twin is read, which is refused.
    let seven = by_id(&msgs, &json!(7));
    assert_eq!(seven.len(), 2, "{seven:?}");
    assert_eq!(seven.iter().filter(|m| in_use(m)).count(), 1, "{seven:?}");
    let ran: Vec<_> = seven.iter().filter(|m| !in_use(m)).collect();
    assert_eq!(ran[0]["result"]["isError"], false, "{}", ran[0]);
    assert!(
        ran[0]["result"]["structuredContent"]["determinism_hash"].is_string(),
        "the run answered, not the frame: {}",
        ran[0]
    );
    assert_eq!(by_id(&msgs, &json!(8))[0]["result"], json!({}));
    assert!(
        msgs.iter().all(|m| m["error"]["code"] != -32603),
        "nothing is left unanswered: {msgs:?}"
    );
    assert_eq!(msgs.len(), 1 + 2 + 2 + 1, "{msgs:?}");
}

/// Each JSON-RPC error the request reader writes says what its code says: `not json` was
/// answered `-32700` (parse error) with the message "invalid request: ...".
#[test]
fn json_rpc_error_messages_match_their_codes() {
    let lines: Vec<String> = [
        INIT_LINE,
        INITIALIZED_LINE,
        "not json",
        "42",
        "\"a string\"",
        "[]",
        "{\"jsonrpc\":\"2.0\",\"id\":1,",
        "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":2}",
        "{\"jsonrpc\":\"1.0\",\"id\":3,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":5}",
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\",\"params\":[]}",
        "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"no/such\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":\"\\ud800\",\"method\":\"ping\"}",
    ]
    .map(String::from)
    .to_vec();
    let (code, msgs) = serve_in_process(&lines, 60);
    assert_eq!(code, 0, "{msgs:?}");
    let errors: Vec<&Value> = msgs.iter().filter(|m| m.get("error").is_some()).collect();
    assert_eq!(errors.len(), lines.len() - 2, "{msgs:?}");
    for e in errors {
        let message = e["error"]["message"].as_str().expect("message");
        let want = match e["error"]["code"].as_i64().expect("code") {
            -32700 => "parse error",
            -32600 => "invalid request",
            -32602 => "invalid params",
            // rmcp's own answer: the message is the method's name.
            -32601 => "no/such",
            other => panic!("unexpected code {other}: {e}"),
        };
        assert!(message.starts_with(want), "{e}");
    }
    let not_json = &msgs
        .iter()
        .find(|m| m["error"]["code"] == -32700)
        .expect("a parse error")["error"]["message"];
    assert!(
        not_json.as_str().is_some_and(|m| m.contains("not JSON")),
        "{not_json}"
    );
}

/// `frame` took `name` without `view` and ignored it (the default view was framed), and
/// refused `11:30:00.5` saying "write HH:MM or HH:MM:SS" although `HH:MM:SS.mmm` is taken.
/// `name` without `view` is refused (it picks a VIEW of the view document); a time that is
/// not one names every accepted form; the CLI says the same.
#[tokio::test]
async fn frame_refuses_a_name_without_a_view_and_names_every_time_form() {
    let client = connect().await;
    let r = call(
        &client,
        "frame",
        json!({ "tape": "trend-2025-04-09-s1", "at": "11:30", "name": "zzz" }),
    )
    .await
    .expect("frame");
    assert!(is_error(&r), "{}", text(&r));
    assert_eq!(data(&r)["errors"][0]["code"], "USAGE", "{}", text(&r));
    assert!(
        text(&r).contains("name") && text(&r).contains("only with view"),
        "{}",
        text(&r)
    );
    // Milliseconds are three digits, as on a tape and on `kestrel frame --at`.
    let full = call(
        &client,
        "frame",
        json!({ "tape": "trend-2025-04-09-s1", "at": "11:30:00.500" }),
    )
    .await
    .expect("frame");
    assert!(!is_error(&full), "{}", text(&full));
    for at in ["11:30:00.5", "11:30:00.50", "11:30:00.5000", "11:30:0"] {
        let r = call(
            &client,
            "frame",
            json!({ "tape": "trend-2025-04-09-s1", "at": at }),
        )
        .await
        .expect("frame");
        assert!(is_error(&r), "{at}: {}", text(&r));
        assert_eq!(
            text(&r),
            format!(
                "error code=USAGE message=at {at:?} is not a time: write HH:MM, HH:MM:SS or HH:MM:SS.mmm (milliseconds as three digits)"
            )
        );
        let (code, _, err) = cli(&[
            "frame",
            "--tape",
            "tapes/trend-2025-04-09-s1.jsonl",
            "--at",
            at,
        ]);
        assert_eq!(code, 1, "{at}");
        assert_eq!(
            err.trim_end(),
            format!(
                "error code=USAGE message=--at {at:?} is not a time: write HH:MM, HH:MM:SS or HH:MM:SS.mmm (milliseconds as three digits)"
            )
        );
    }
    let (code, _, err) = cli(&[
        "frame",
        "--tape",
        "tapes/trend-2025-04-09-s1.jsonl",
        "--at",
        "11:30",
        "--name",
        "zzz",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with("error code=USAGE message=--name") && err.contains("only with --view"),
        "{err}"
    );
    client.cancel().await.expect("close");
}

/// A call the client cancels (`notifications/cancelled`) gets no answer from rmcp, as MCP
/// says; the server still counted it owed and, at EOF, waited the whole DRAIN_TIMEOUT
/// (2 min) to answer it `-32603`. A cancelled request is owed nothing: the server exits
/// promptly and writes nothing for it.
#[test]
fn a_cancelled_call_is_owed_no_answer_and_the_server_exits_promptly() {
    let plans =
        std::fs::read_to_string(common::root().join("examples/run-desk.kestrel")).expect("plans");
    let run = json!({"name": "run", "arguments": {"plans": plans, "tape": "trend-2025-04-09-s1"}});
    let lines = vec![
        INIT_LINE.to_string(),
        INITIALIZED_LINE.to_string(),
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": run}).to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9, "reason": "changed my mind"}}).to_string(),
        r#"{"jsonrpc":"2.0","id":10,"method":"ping"}"#.to_string(),
    ];
    let (code, msgs) = serve_in_process(&lines, 60);
    assert_eq!(code, 0, "{msgs:?}");
    assert_eq!(by_id(&msgs, &json!(10))[0]["result"], json!({}), "{msgs:?}");
    // Nothing, or the run's result if it finished before the cancellation was read: never
    // the drain's -32603.
    let nine = by_id(&msgs, &json!(9));
    assert!(
        nine.is_empty() || (nine.len() == 1 && nine[0]["result"]["isError"] == false),
        "{nine:?}"
    );
    assert!(
        msgs.iter().all(|m| m["error"]["code"] != -32603),
        "{msgs:?}"
    );
}

/// A lone surrogate in a string argument was answered "unexpected end of hex escape" (an
/// escape cut short, it read), and `views_requested: 100000000000000000000`, an integer,
/// "invalid type: floating point `1e20`": serde's words for what serde_json did with the
/// input. Both now say what is wrong with the input itself; the codes are unchanged.
#[test]
fn a_lone_surrogate_and_a_count_too_large_are_named_in_a_clients_words() {
    let call = |id: u32, args: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{}","arguments":{args}}}}}"#,
            if args.contains("reply") {
                "route_turn"
            } else {
                "check"
            }
        )
    };
    let lines = vec![
        INIT_LINE.to_string(),
        INITIALIZED_LINE.to_string(),
        call(1, r#"{"document":"PLAN \ud800"}"#),
        call(2, r#"{"document":"PLAN \udc00"}"#),
        call(3, r#"{"reply":"","views_requested":100000000000000000000}"#),
        call(4, r#"{"reply":"","views_requested":5000000000}"#),
        call(5, r#"{"reply":"","views_requested":-1}"#),
        call(6, r#"{"reply":"","views_requested":1.5}"#),
    ];
    let (code, msgs) = child_session(&[], &lines, &common::root());
    assert_eq!(code, 0, "{msgs:?}");
    let message = |id: u32| {
        let got = by_id(&msgs, &json!(id));
        assert_eq!(got.len(), 1, "{msgs:?}");
        assert_eq!(got[0]["error"]["code"], -32602, "{}", got[0]);
        got[0]["error"]["message"].as_str().unwrap().to_string()
    };
    for id in [1, 2] {
        let m = message(id);
        assert!(
            m.starts_with(r"invalid params: a lone UTF-16 surrogate (a \uD800-\uDFFF escape without its other half) is not text at line 1 column "),
            "{m}"
        );
    }
    let counts = [
        (
            3,
            "100000000000000000000 is larger than the largest count, 4294967295",
        ),
        (4, "5000000000 is larger than the largest count, 4294967295"),
        (5, "-1 is negative: a count is 0 to 4294967295"),
        (
            6,
            "1.5 is not a whole number: a count is a whole number, 0 to 4294967295",
        ),
    ];
    for (id, want) in counts {
        let m = message(id);
        assert_eq!(
            m,
            format!(
                "error code=USAGE message=route_turn: arguments do not fit the input schema: {want}"
            )
        );
        assert!(!m.contains("floating point"), "{m}");
    }
}

/// A client that closes its end of the server's stdout has left: the server stopped reading
/// only at the end of stdin and then exited 1 with no coded line. It now stops at once,
/// quietly, with exit 0, as a verb whose reader went away does (src/cli/mod.rs, "Closed
/// pipes"), while stdin is still open.
#[test]
fn a_client_that_closes_stdout_ends_the_server_quietly() {
    let mut child = Command::new(KESTREL)
        .args(["mcp"])
        .current_dir(common::root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().expect("stdin");
    let t = std::time::Instant::now();
    // Kept open: each line asks for an answer the server cannot write.
    for k in 0..50 {
        let ping = format!(r#"{{"jsonrpc":"2.0","id":{k},"method":"ping"}}"#);
        let line = if k == 0 { INIT_LINE.to_string() } else { ping };
        if writeln!(stdin, "{line}").is_err() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        if child.try_wait().expect("wait").is_some() {
            break;
        }
    }
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        assert!(
            t.elapsed() < std::time::Duration::from_secs(10),
            "the server still reads with stdout closed"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    drop(stdin);
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err)
        .expect("stderr");
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.lines()
            .all(|l| l.starts_with("kestrel mcp: serving on stdio")),
        "only the banner: {err}"
    );
}
