//! A local model at the desk (issue 17): `kestrel agent` against a loopback
//! OpenAI-compatible server that plays a script of answers, one per request, and records
//! every request. Nothing leaves the machine; every request loop is bounded.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One scripted answer.
#[derive(Clone)]
enum Say {
    /// A streamed chat (or completions) reply that finishes with `stop`.
    Stream(String),
    /// Wait this long before answering at all, then stream the text.
    Late(u64, String),
    /// Stream the text, then close the connection: no finish reason, no `[DONE]`.
    Cut(String),
    /// Stream the text, then `[DONE]` with no finish reason.
    Unsaid(String),
    /// Stream the text with `stop`, then a last chunk with the provider's `usage`
    /// (prompt tokens, completion tokens), then `[DONE]`.
    Costed(String, u64, u64),
}

#[derive(Debug, Clone)]
struct Seen {
    request_line: String,
    body: serde_json::Value,
}

struct Server {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// Serve `script` on 127.0.0.1 (the last answer repeats), at most 64 requests.
fn serve(script: Vec<Say>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    std::thread::spawn(move || {
        for n in 0..64 {
            let Ok((sock, _)) = listener.accept() else {
                return;
            };
            let say = script
                .get(n)
                .or(script.last())
                .cloned()
                .unwrap_or(Say::Stream("# pass".into()));
            let seen = seen2.clone();
            std::thread::spawn(move || {
                let _ = handle(sock, say, seen);
            });
        }
    });
    Server {
        base: format!("http://{addr}/v1"),
        seen,
    }
}

fn handle(mut sock: TcpStream, say: Say, seen: Arc<Mutex<Vec<Seen>>>) -> std::io::Result<()> {
    sock.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let header_end = loop {
        let n = sock.read(&mut tmp)?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_string();
    let request_line = head.lines().next().unwrap_or("").to_string();
    let len: usize = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < header_end + len {
        let n = sock.read(&mut tmp)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    let body = serde_json::from_slice(&buf[header_end..]).unwrap_or(serde_json::Value::Null);
    let completions = request_line.contains("/v1/completions");
    seen.lock().expect("lock").push(Seen { request_line, body });
    let text_only = |sock: &mut TcpStream, text: &str| -> std::io::Result<()> {
        sock.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
        )?;
        let chunk = if completions {
            serde_json::json!({"choices": [{"index": 0, "text": text, "finish_reason": null}]})
        } else {
            serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
        };
        sock.write_all(format!("data: {chunk}\n\n").as_bytes())
    };
    let stream = |sock: &mut TcpStream, text: &str| -> std::io::Result<()> {
        text_only(sock, text)?;
        sock.write_all(b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
    };
    match say {
        Say::Stream(t) => stream(&mut sock, &t)?,
        Say::Late(ms, t) => {
            std::thread::sleep(Duration::from_millis(ms));
            stream(&mut sock, &t)?;
        }
        Say::Cut(t) => text_only(&mut sock, &t)?,
        Say::Unsaid(t) => {
            text_only(&mut sock, &t)?;
            sock.write_all(b"data: [DONE]\n\n")?;
        }
        Say::Costed(t, p, c) => {
            text_only(&mut sock, &t)?;
            sock.write_all(
                b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
            )?;
            let usage = serde_json::json!({"choices": [], "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}});
            sock.write_all(format!("data: {usage}\n\ndata: [DONE]\n\n").as_bytes())?;
        }
    }
    let _ = sock.shutdown(std::net::Shutdown::Both);
    Ok(())
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("kestrel-local-model-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// `kestrel agent` on the trend tape with `args`; (exit code, stdout, stderr, Bus lines).
fn agent(dir: &std::path::Path, args: &[&str]) -> (i32, String, String, Vec<serde_json::Value>) {
    let tape = common::root().join("tapes/trend-2025-04-09-s1.jsonl");
    let bus = dir.join("run.bus.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .arg("agent")
        .arg("--tape")
        .arg(&tape)
        .arg("--bus")
        .arg(&bus)
        .args(args)
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env_remove("KESTREL_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("run kestrel");
    let lines = std::fs::read_to_string(&bus)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a Bus line is JSON"))
        .collect();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        lines,
    )
}

fn system_text(s: &Seen) -> String {
    s.body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn user_text(s: &Seen) -> String {
    s.body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn the_system_prompt_is_the_rendered_profile_and_session_start_names_the_author() {
    let server = serve(vec![Say::Stream("# nothing to do\n".into())]);
    let dir = scratch("rendered");
    let (code, out, err, bus) = agent(&dir, &["--author", &server.base, "--model", "gemma-test"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "author openai gemma-test authoring-v2 constrained=off max_tokens=512 temperature=0.7:"
        ),
        "the report names the arm: {out}"
    );
    let seen = server.seen.lock().expect("lock").clone();
    assert!(!seen.is_empty());
    for s in &seen {
        let sys = system_text(s);
        assert!(!sys.contains("{{"), "an unrendered placeholder: {sys}");
        let menu = sys
            .split("## The menu\n")
            .nth(1)
            .expect("the card's menu section");
        let first = menu.lines().next().unwrap_or("");
        assert!(
            first.starts_with("At the OPEN wake") || first.starts_with("At a mid-session wake"),
            "the menu section is filled: {first:?}"
        );
        assert!(sys.contains("## The menu") && sys.contains("profile: authoring-v2"));
    }
    let start = &bus[0];
    assert_eq!(start["type"], "session-start");
    let a = &start["author"];
    assert_eq!(a["kind"], "openai");
    assert_eq!(a["model"], "gemma-test");
    assert_eq!(a["constrained"], false);
    assert_eq!(a["profile"], "authoring-v2");
    assert_eq!(a["max_tokens"], 512);
    assert_eq!(
        a["prompt_hash"].as_str(),
        Some(
            kestrel_desk::turn::Profile::AuthoringV2
                .prompt_hash()
                .as_str()
        )
    );
    // `kestrel errors report` splits by the arm the session-start names.
    let out = Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args(["errors", "report", "--json"])
        .arg(dir.join("run.bus.jsonl"))
        .output()
        .expect("errors report");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("report JSON");
    let arm = &v["by_arm"]["openai gemma-test authoring-v2 constrained=off max_tokens=512 temperature=0.7"];
    assert_eq!(
        arm["turns"].as_u64(),
        Some(bus.iter().filter(|e| e["type"] == "turn").count() as u64)
    );
}

/// The temperature is part of the author's identity on the Bus and of the arm, and the
/// server's base URL is recorded (not in the arm). Two runs at temperature 0 and 1.5 wrote
/// byte-identical Bus files and were one arm of `errors report`. A Bus saved before the
/// fields (no `temperature`, no `server`) still replays byte for byte and names its arm as
/// before.
#[test]
fn the_temperature_is_on_the_bus_and_in_the_arm() {
    let dir = scratch("temperature-arm");
    let mut arms = Vec::new();
    let mut buses = Vec::new();
    for t in ["0", "1.5"] {
        let server = serve(vec![Say::Stream("# nothing to do\n".into())]);
        let (code, out, err, bus) = agent(
            &dir,
            &["--author", &server.base, "--temperature", t, "--json"],
        );
        assert_eq!(code, 0, "{err}");
        let a = &bus[0]["author"];
        assert_eq!(a["temperature"], t, "{a}");
        assert_eq!(a["server"].as_str(), Some(server.base.as_str()), "{a}");
        let seen = server.seen.lock().expect("lock").clone();
        let sent = if t == "0" { "0.0" } else { t };
        assert_eq!(seen[0].body["temperature"].to_string(), sent);
        let v: serde_json::Value = serde_json::from_str(&out).expect("agent --json");
        arms.push(v["arm"].as_str().unwrap_or_default().to_string());
        let kept = dir.join(format!("t{t}.bus.jsonl"));
        std::fs::rename(dir.join("run.bus.jsonl"), &kept).expect("keep the Bus");
        buses.push(kept);
    }
    assert_eq!(
        arms,
        [
            "openai default authoring-v2 constrained=off max_tokens=512 temperature=0",
            "openai default authoring-v2 constrained=off max_tokens=512 temperature=1.5",
        ]
    );
    let report = Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args(["errors", "report", "--json"])
        .args(&buses)
        .output()
        .expect("errors report");
    let v: serde_json::Value = serde_json::from_slice(&report.stdout).expect("report JSON");
    let keys: Vec<&String> = v["by_arm"].as_object().expect("by_arm").keys().collect();
    assert_eq!(keys, arms.iter().collect::<Vec<_>>());

    // A Bus written before the fields: it replays to the same bytes, its arm as before.
    let text = std::fs::read_to_string(&buses[1]).expect("bus");
    let (first, rest) = text.split_once('\n').expect("lines");
    let mut start: serde_json::Value = serde_json::from_str(first).expect("session-start");
    let author = start["author"].as_object_mut().expect("author");
    author.remove("temperature");
    author.remove("server");
    let old = dir.join("old.bus.jsonl");
    std::fs::write(
        &old,
        format!("{}\n{rest}", kestrel_desk::bus::canonical_json(&start)),
    )
    .expect("old bus");
    let again = dir.join("again.bus.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args(["agent", "--tape"])
        .arg(common::root().join("tapes/trend-2025-04-09-s1.jsonl"))
        .arg("--author")
        .arg(&old)
        .arg("--bus")
        .arg(&again)
        .arg("--json")
        .output()
        .expect("replay");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(&again).expect("replayed"),
        std::fs::read(&old).expect("old")
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("agent --json");
    assert_eq!(
        v["arm"],
        "openai default authoring-v2 constrained=off max_tokens=512"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The provider's `usage` is recorded on each `repair` attempt that had one and totalled in
/// `agent --json` (`spend`) and `errors report`, apart from the desk's cl100k count of the
/// reply. It was thrown away: prompt tokens were counted nowhere. A server that sends no
/// usage leaves the attempt as before (no `usage` key).
#[test]
fn the_providers_usage_is_recorded_per_attempt_and_totalled() {
    let dir = scratch("usage");
    // A refused reply, then a fixed one: two attempts, each with its usage.
    let server = serve(vec![
        Say::Costed(
            "PLAN x budget 0.1R ttl 15:00\n  WHEN spot > hod DO buy 1 ATM C @ fair\n".into(),
            1001,
            31,
        ),
        Say::Costed("# nothing to do\n".into(), 1200, 7),
    ]);
    let (code, out, err, bus) = agent(&dir, &["--author", &server.base, "--json"]);
    assert_eq!(code, 0, "{err}");
    let repairs: Vec<&serde_json::Value> = bus.iter().filter(|e| e["type"] == "repair").collect();
    assert!(repairs.len() >= 2, "{repairs:?}");
    assert_eq!(
        repairs[0]["attempt"]["usage"],
        serde_json::json!({"prompt_tokens": 1001, "completion_tokens": 31})
    );
    assert_eq!(
        repairs[1]["attempt"]["usage"],
        serde_json::json!({"prompt_tokens": 1200, "completion_tokens": 7})
    );
    let n = repairs.len() as u64;
    // The last answer repeats for later wakes.
    let prompt = 1001 + 1200 * (n - 1);
    let completion = 31 + 7 * (n - 1);
    let cl100k: u64 = repairs
        .iter()
        .map(|r| r["attempt"]["tokens"].as_u64().unwrap_or(0))
        .sum();
    let v: serde_json::Value = serde_json::from_str(&out).expect("agent --json");
    assert_eq!(
        v["spend"],
        serde_json::json!({
            "tokens": cl100k,
            "tokens_estimated": 0,
            "provider_attempts": n,
            "provider_prompt_tokens": prompt,
            "provider_completion_tokens": completion,
        })
    );
    let report = Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args(["errors", "report", "--json"])
        .arg(dir.join("run.bus.jsonl"))
        .output()
        .expect("errors report");
    let r: serde_json::Value = serde_json::from_slice(&report.stdout).expect("report JSON");
    assert_eq!(r["totals"]["provider_prompt_tokens"], prompt);
    assert_eq!(r["totals"]["provider_completion_tokens"], completion);
    assert_eq!(r["totals"]["tokens"], cl100k);

    // No usage sent: no `usage` key, and nothing reported.
    let server = serve(vec![Say::Stream("# nothing to do\n".into())]);
    let (code, out, err, bus) = agent(&dir, &["--author", &server.base, "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        bus.iter()
            .filter(|e| e["type"] == "repair")
            .all(|e| e["attempt"].get("usage").is_none())
    );
    let v: serde_json::Value = serde_json::from_str(&out).expect("agent --json");
    assert_eq!(v["spend"]["provider_attempts"], 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_open_view_is_delivered_once_every_symbol_has_printed() {
    let server = serve(vec![Say::Stream("# nothing to do\n".into())]);
    let dir = scratch("open-view");
    let (code, _, err, bus) = agent(&dir, &["--author", &server.base]);
    assert_eq!(code, 0, "{err}");
    let open = bus
        .iter()
        .find(|e| e["type"] == "view-delivered" && e["wake"] == "open")
        .expect("the OPEN view");
    let frame = open["frame"].as_str().expect("frame");
    assert!(
        !frame.contains("spot ?"),
        "a symbol without a print: {frame}"
    );
    let sent = user_text(&server.seen.lock().expect("lock")[0]);
    assert!(
        sent.contains(frame.trim_end()),
        "the author got the delivered frame"
    );
}

#[test]
fn a_reask_after_a_500_error_reply_is_bounded() {
    // 500 lines, each its own syntax error, then a pass.
    let bad: String = (0..500).map(|i| format!("WHEN WHEN {i} ((\n")).collect();
    let server = serve(vec![
        Say::Stream(bad.clone()),
        Say::Stream("# pass\n".into()),
    ]);
    let dir = scratch("reask");
    let (code, _, err, bus) = agent(&dir, &["--author", &server.base, "--max-tokens", "1024"]);
    assert_eq!(code, 0, "{err}");
    let seen = server.seen.lock().expect("lock").clone();
    assert!(seen.len() >= 2, "a re-ask was made");
    let first_user = user_text(&seen[0]);
    let reask_user = user_text(&seen[1]);
    // The note is what the re-ask adds to the first ask's user text.
    let note_len = reask_user.len() - first_user.len();
    let bound = kestrel_desk::author::openai::reask_note_bound(1024);
    assert_eq!(bound, 512);
    assert!(
        note_len <= bound + 4,
        "the re-ask note is {note_len} bytes, over {bound}"
    );
    assert!(
        reask_user.contains("more errors, not shown"),
        "{reask_user}"
    );
    assert!(reask_user.contains("error code=PARSE"), "{reask_user}");
    assert!(reask_user.contains("more lines not shown"), "{reask_user}");
    // The re-ask asks for fewer output tokens by the note's bytes: prompt + output of the
    // re-ask never exceed the first ask's.
    let mt = seen[1].body["max_tokens"].as_u64().expect("max_tokens");
    assert!(
        mt <= 1024 - (note_len as u64).saturating_sub(4),
        "max_tokens {mt}"
    );
    assert!(mt >= 512);
    // The Bus keeps the whole guided error of the refused attempt.
    let rep = bus
        .iter()
        .find(|e| e["type"] == "repair" && e["attempt"]["attempt"] == 0)
        .expect("the first attempt");
    assert!(
        rep["attempt"]["errors"]
            .as_array()
            .is_some_and(|e| e.len() > 3)
    );
}

#[test]
fn a_blank_reply_and_a_timeout_are_retried_and_recorded_on_the_bus() {
    let server = serve(vec![
        Say::Stream("\r\n\r\n\r\n".into()),
        Say::Late(2500, "# late".into()),
        Say::Stream("# pass\n".into()),
    ]);
    let dir = scratch("retries");
    let (code, _, err, bus) = agent(
        &dir,
        &[
            "--author",
            &server.base,
            "--first-token-timeout",
            "1",
            "--timeout",
            "20",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let rep = bus
        .iter()
        .find(|e| e["type"] == "repair" && e["wake"] == "open")
        .expect("the OPEN wake's attempt");
    let retries: Vec<&str> = rep["attempt"]["retries"]
        .as_array()
        .expect("retries on the Bus")
        .iter()
        .filter_map(|r| r.as_str())
        .collect();
    assert_eq!(retries.len(), 2, "{retries:?}");
    assert!(retries[0].contains("empty-completion"), "{}", retries[0]);
    assert!(
        retries[1].contains("timeout") && retries[1].contains("--first-token-timeout"),
        "{}",
        retries[1]
    );
    assert_eq!(rep["attempt"]["outcome"], "pass");
}

#[test]
fn the_limit_flags_reach_the_request_and_a_timeout_names_its_flag() {
    let server = serve(vec![Say::Late(2500, "# late".into())]);
    let dir = scratch("flags");
    let (code, _, err, _) = agent(
        &dir,
        &[
            "--author",
            &server.base,
            "--max-tokens",
            "77",
            "--first-token-timeout",
            "1",
            "--timeout",
            "30",
        ],
    );
    assert_eq!(code, 1, "every wake failed: {err}");
    let seen = server.seen.lock().expect("lock").clone();
    assert_eq!(seen[0].body["max_tokens"], 77);
    assert_eq!(seen.len(), 3, "one try and two retries");
    assert!(err.contains("code=PROVIDER"), "{err}");
    assert!(err.contains("--first-token-timeout"), "{err}");
}

#[test]
fn a_dead_provider_fails_on_stderr_with_a_nonzero_exit() {
    let dir = scratch("dead");
    let (code, out, err, bus) = agent(
        &dir,
        &["--author", "http://127.0.0.1:9/v1", "--timeout", "10"],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("warning code=PROVIDER") && err.contains("kind=connect"),
        "{err}"
    );
    assert!(err.contains("error code=PROVIDER"), "{err}");
    assert!(bus.iter().any(|e| e["type"] == "turn"));
}

#[test]
fn a_url_given_with_chat_completions_is_not_doubled() {
    let server = serve(vec![Say::Stream("# pass\n".into())]);
    let dir = scratch("url");
    let url = format!("{}/chat/completions", server.base);
    let (code, _, err, _) = agent(&dir, &["--author", &url]);
    assert_eq!(code, 0, "{err}");
    let seen = server.seen.lock().expect("lock").clone();
    assert_eq!(seen[0].request_line, "POST /v1/chat/completions HTTP/1.1");
}

#[test]
fn the_completion_profile_sends_a_few_shot_document_to_completions() {
    let server = serve(vec![Say::Stream("# nothing new\n".into())]);
    let dir = scratch("completion");
    let (code, _, err, bus) = agent(
        &dir,
        &["--author", &server.base, "--profile", "completion-v1"],
    );
    assert_eq!(code, 0, "{err}");
    let seen = server.seen.lock().expect("lock").clone();
    assert_eq!(seen[0].request_line, "POST /v1/completions HTTP/1.1");
    let p = seen[0].body["prompt"].as_str().expect("a prompt document");
    assert!(seen[0].body.get("messages").is_none());
    assert!(p.ends_with("\n### Reply\n"), "{p}");
    assert!(!p.contains("{{"));
    assert!(p.contains("## The menu"));
    assert_eq!(seen[0].body["stop"][0], "\n###");
    assert!(
        bus.iter()
            .any(|e| e["type"] == "turn" && e["turn"]["outcome"] == "pass"),
        "the reply routed"
    );
}

#[test]
fn the_completion_profiles_examples_are_authored_turns() {
    use kestrel_desk::turn::{self, AuthorKind, Profile, Reply, TurnClass, TurnContext, WakePhase};
    let ex = Profile::CompletionV1.example_replies();
    assert_eq!(ex.len(), 3);
    for (i, text) in ex.iter().enumerate() {
        let phase = if i == 0 {
            WakePhase::Open
        } else {
            WakePhase::Mid
        };
        let ctx = TurnContext::new(phase, Profile::CompletionV1, AuthorKind::Model);
        let r = turn::route(&Reply::Text(text.to_string()), &ctx);
        assert_eq!(
            r.class(),
            TurnClass::Authored,
            "example {i}: {text}\n{:?}",
            r.outcome
        );
    }
}

/// `kestrel experiment` against `base`, one turn per arm, on `tape`, into `out`, with a fresh
/// HOME under `dir` and no key in the environment; `extra` picks the arms.
fn experiment(
    base: &str,
    dir: &std::path::Path,
    tape: &std::path::Path,
    out: &std::path::Path,
    extra: &[&str],
) -> std::process::Output {
    experiment_command(base, dir, tape, out, extra)
        .output()
        .expect("run kestrel experiment")
}

/// `experiment` with a command author said only `--author must be a model server`. A
/// command is sent no grammar and no budget, so the grid's axes do not apply to it: still
/// refused, before anything is written, but saying why and what to run instead.
#[test]
fn a_command_author_is_refused_by_the_experiment_saying_why_and_what_instead() {
    let dir = scratch("experiment-cmd");
    let tape = common::root().join("tapes/trend-2025-04-09-s1.jsonl");
    let out = dir.join("out");
    let run = experiment("cmd:cat", &dir, &tape, &out, &[]);
    assert_eq!(run.status.code(), Some(1));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.starts_with("error code=USAGE message=--author must be a model server")
            && err.contains("a command author is sent no grammar and no max_tokens")
            && err.contains("kestrel agent --author AUTHOR --profile P")
            && err.contains("kestrel errors report DIR/"),
        "{err}"
    );
    assert!(!out.exists(), "nothing is written");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The command [`experiment`] runs, to spawn it instead.
fn experiment_command(
    base: &str,
    dir: &std::path::Path,
    tape: &std::path::Path,
    out: &std::path::Path,
    extra: &[&str],
) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kestrel"));
    c.args([
        "experiment",
        "--author",
        base,
        "--turns",
        "1",
        "--timeout",
        "20",
    ])
    .args(extra)
    .arg("--tape")
    .arg(tape)
    .arg("--out")
    .arg(out)
    .env("HOME", dir)
    .env("XDG_CONFIG_HOME", dir.join("config"))
    .env_remove("KESTREL_API_KEY")
    .env_remove("OPENAI_API_KEY");
    c
}

#[test]
fn the_experiment_takes_the_completion_profile_as_an_axis() {
    // `--profiles completion-v1`: two arms (free, constrained) at one budget, each sent to
    // /v1/completions as one few-shot document, each a row of the table.
    let server = serve(vec![
        Say::Stream("STAND-DOWN chop\n".into()),
        Say::Stream("# nothing new\n".into()),
    ]);
    let dir = scratch("experiment-completion");
    let out = dir.join("out");
    let tape = common::root().join("tapes/range-2025-04-09-s2.jsonl");
    let run = experiment(
        &server.base,
        &dir,
        &tape,
        &out,
        &["--profiles", "completion-v1", "--budgets", "64"],
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("experiment: arm 2/2"), "progress: {stderr}");
    let table = std::fs::read_to_string(out.join("table.md")).expect("table.md");
    for arm in ["completion-v1-free-64", "completion-v1-constrained-64"] {
        assert!(table.contains(&format!("| {arm} | 1 |")), "{arm}: {table}");
    }
    assert!(!table.contains("| authoring-"), "{table}");
    let seen = server.seen.lock().expect("lock").clone();
    assert!(!seen.is_empty());
    assert!(
        seen.iter()
            .all(|s| s.request_line == "POST /v1/completions HTTP/1.1"),
        "{:?}",
        seen.iter().map(|s| &s.request_line).collect::<Vec<_>>()
    );
    // A profile the verb does not know is a usage error.
    let bad = Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args(["experiment", "--author", &server.base, "--profiles", "nope"])
        .arg("--tape")
        .arg(&tape)
        .arg("--out")
        .arg(dir.join("bad"))
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(1), "{err}");
    assert!(
        err.contains("invalid value 'nope'") && err.contains("completion-v1"),
        "{err}"
    );
}

#[test]
fn the_experiment_runs_every_arm_and_writes_the_table_and_the_bus_files() {
    // A model that writes a plan, then a refused reply, then a stand-down, then a pass.
    let plan = "# follow the drive\nPLAN a budget 0.1R ttl 15:00\n  WHEN spot > hod\n  DO buy 1 ATM C @ fair\n  EXIT spot < vwap @ fair\n";
    let server = serve(vec![
        Say::Stream(plan.into()),
        Say::Stream("WHEN WHEN ((".into()),
        Say::Stream("STAND-DOWN chop\n".into()),
        Say::Stream("# nothing new\n".into()),
    ]);
    let dir = scratch("experiment");
    let out = dir.join("out");
    let tape = common::root().join("tapes/range-2025-04-09-s2.jsonl");
    let run = experiment(&server.base, &dir, &tape, &out, &["--budgets", "64,128"]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("experiment: arm 8/8"), "progress: {stderr}");
    let table = std::fs::read_to_string(out.join("table.md")).expect("table.md");
    assert_eq!(table, stdout);
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("| authoring-"))
        .collect();
    assert_eq!(rows.len(), 8, "{table}");
    for arm in [
        "authoring-v1-free-64",
        "authoring-v1-constrained-128",
        "authoring-v2-free-128",
        "authoring-v2-constrained-64",
    ] {
        assert!(
            rows.iter()
                .any(|r| r.starts_with(&format!("| {arm} | 1 |"))),
            "{arm}: {table}"
        );
    }
    // The constrained arms sent the grammar; the budgets reached max_tokens.
    let seen = server.seen.lock().expect("lock").clone();
    assert!(seen.iter().any(|s| s.body.get("grammar").is_some()));
    assert!(seen.iter().any(|s| s.body.get("grammar").is_none()));
    assert!(
        seen.iter()
            .all(|s| matches!(s.body["max_tokens"].as_u64(), Some(1..=128)))
    );
    // Every Bus file is listed with its hash, and errors report splits the eight arms.
    let buses: Vec<_> = table.lines().filter(|l| l.starts_with("- `")).collect();
    assert!(buses.len() >= 8, "{table}");
    for b in &buses {
        let path = b.split('`').nth(1).expect("path");
        let bytes = std::fs::read(path).expect("the Bus file");
        let hash = b.rsplit(' ').next().expect("hash");
        assert_eq!(kestrel_desk::bus::hash_bytes(&bytes), hash);
    }
    let report = Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args(["errors", "report", "--json"])
        .args(
            std::fs::read_dir(&out)
                .expect("out")
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir()),
        )
        .output()
        .expect("errors report");
    let v: serde_json::Value = serde_json::from_slice(&report.stdout).expect("report JSON");
    assert_eq!(v["by_arm"].as_object().map(|m| m.len()), Some(8), "{v}");
}

/// Wait up to `limit` for `child` to exit; its status.
#[cfg(unix)]
fn exit_within(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let t = std::time::Instant::now();
    loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            return st;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            panic!("no exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The Bus events of a file, in order.
fn bus_events(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("a Bus line is JSON"))
        .collect()
}

/// SIGINT while the model was answering ended the experiment with exit 0, the cut ask
/// counted in table.md as the model's provider error, and the Bus ending with "experiment:
/// the arm has its turns". Now it ends as `kestrel agent` does: exit 1 with `error
/// code=INTERRUPTED` naming the signal, the Bus's last events an `error` naming it and
/// `session-end`; the table keeps the arms up to there and does not count the cut ask.
#[cfg(unix)]
#[test]
fn sigint_during_the_experiment_exits_1_and_the_bus_names_the_signal() {
    let server = serve(vec![Say::Late(60_000, "# pass\n".into())]);
    let dir = scratch("experiment-sigint");
    let out = dir.join("out");
    let tape = common::root().join("tapes/range-2025-04-09-s2.jsonl");
    let mut child = experiment_command(&server.base, &dir, &tape, &out, &["--budgets", "64"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn kestrel experiment");
    let t = std::time::Instant::now();
    while server.seen.lock().expect("lock").is_empty() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the model was never asked"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: sends SIGINT to the child we spawned.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let status = exit_within(&mut child, Duration::from_secs(10));
    let run = child.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error code=INTERRUPTED message=SIGINT: "),
        "{stderr}"
    );
    let events = bus_events(&out.join("authoring-v1-free-64/0001.bus.jsonl"));
    let n = events.len();
    assert_eq!(events[n - 1]["type"], "session-end", "{}", events[n - 1]);
    assert_eq!(events[n - 2]["type"], "error", "{}", events[n - 2]);
    let message = events[n - 2]["message"].as_str().expect("message");
    assert!(message.starts_with("interrupted by SIGINT"), "{message}");
    assert!(
        !events
            .iter()
            .any(|e| e["message"] == "experiment: the arm has its turns")
    );
    // The cut ask was no turn of the model's: the arm's row has none, no provider error.
    let table = std::fs::read_to_string(out.join("table.md")).expect("table.md");
    assert!(
        table.contains("| authoring-v1-free-64 | 0 | - (0/0) | - (0/0) | - | - | - | - | - |"),
        "{table}"
    );
    assert!(
        table.contains(
            "Interrupted by SIGINT: the experiment stopped in arm 1/4 authoring-v1-free-64 after 0 of 1 turns"
        ),
        "{table}"
    );
    assert_eq!(table, String::from_utf8_lossy(&run.stdout));
}

/// `--out exp1/table.md` (an existing file) said `code=IO message=cannot read exp1/table.md:
/// Not a directory`: the output folder is not read, so "cannot read" misled. It is now a
/// usage error saying the path is not a directory and cannot be the output folder; so is a
/// path through a file.
#[test]
fn the_experiment_says_an_out_file_is_not_a_directory() {
    let server = serve(vec![Say::Stream("# nothing new\n".into())]);
    let dir = scratch("experiment-out-file");
    let tape = common::root().join("tapes/range-2025-04-09-s2.jsonl");
    let file = dir.join("table.md");
    std::fs::write(&file, "a table\n").expect("file");
    for (out, why) in [
        (file.clone(), "is a file, not a directory"),
        (
            file.join("sub"),
            "is not a directory (a part of its path is a file)",
        ),
    ] {
        let run = experiment(&server.base, &dir, &tape, &out, &["--budgets", "64"]);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.starts_with(&format!(
                "error code=USAGE message=--out {} {why}: it cannot be used as the output folder",
                out.display()
            )),
            "{stderr}"
        );
        assert!(!stderr.contains("cannot read"), "{stderr}");
    }
    assert!(
        server.seen.lock().expect("lock").is_empty(),
        "the model was asked"
    );
    assert_eq!(std::fs::read_to_string(&file).expect("file"), "a table\n");
}

/// `--out` into a directory holding an earlier run mixed the two: the old arm directories
/// and Bus files stayed beside the new ones, table.md described only the new run, and
/// `kestrel errors report OUT/*/` counted both. A non-empty `--out` is now refused before
/// anything is asked or written; an empty or missing one is used.
#[test]
fn the_experiment_refuses_a_non_empty_out_directory() {
    let server = serve(vec![Say::Stream("# nothing new\n".into())]);
    let dir = scratch("experiment-out");
    let tape = common::root().join("tapes/range-2025-04-09-s2.jsonl");
    let out = dir.join("out");
    let old = out.join("authoring-v1-free-64");
    std::fs::create_dir_all(&old).expect("old arm");
    std::fs::write(old.join("0001.bus.jsonl"), "old\n").expect("old Bus");
    let run = experiment(&server.base, &dir, &tape, &out, &["--budgets", "64"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("error code=USAGE message=--out ") && stderr.contains("is not empty"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        server.seen.lock().expect("lock").is_empty(),
        "the model was asked"
    );
    assert_eq!(std::fs::read_dir(&out).expect("out").count(), 1);
    assert_eq!(
        std::fs::read_to_string(old.join("0001.bus.jsonl")).expect("old Bus"),
        "old\n"
    );
    // An empty directory is used.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).expect("empty out");
    let run = experiment(
        &server.base,
        &dir,
        &tape,
        &empty,
        &["--budgets", "64", "--profiles", "authoring-v2"],
    );
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(empty.join("table.md").is_file());
}

/// `--budgets 64,64` ran each arm twice into one directory, the second writing over the
/// first's Bus files. A budget given twice is one arm, as a profile given twice is.
#[test]
fn a_budget_given_twice_is_one_arm() {
    let server = serve(vec![Say::Stream("# nothing new\n".into())]);
    let dir = scratch("experiment-budgets");
    let out = dir.join("out");
    let tape = common::root().join("tapes/range-2025-04-09-s2.jsonl");
    let run = experiment(
        &server.base,
        &dir,
        &tape,
        &out,
        &[
            "--budgets",
            "64,64",
            "--profiles",
            "authoring-v2,authoring-v2",
        ],
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("experiment: arm 2/2"), "{stderr}");
    assert!(!stderr.contains("arm 3/"), "{stderr}");
    let table = std::fs::read_to_string(out.join("table.md")).expect("table.md");
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("| authoring-"))
        .collect();
    assert_eq!(rows.len(), 2, "{table}");
    assert_eq!(server.seen.lock().expect("lock").len(), 2);
}

/// A bad second tape was read only when an arm reached it, after the model had been asked
/// (a nested `error code=TAPE message=P: error code=TAPE line=1 ...`, a partial `--out`);
/// a tape cut short was played, though `run` and `agent` refuse it (`ends-early`). Every
/// tape is now checked whole, as `agent` checks it, before the first model call: one coded
/// line, no request, no `--out`.
#[test]
fn every_tape_is_checked_before_the_model_is_asked() {
    let server = serve(vec![Say::Stream("# nothing new\n".into())]);
    let dir = scratch("experiment-tapes");
    let good = common::root().join("tapes/range-2025-04-09-s2.jsonl");
    let empty = dir.join("empty.txt");
    std::fs::write(&empty, "").expect("empty tape");
    let text = std::fs::read_to_string(&good).expect("tape");
    let cut = dir.join("cut.jsonl");
    let head: String = text.lines().take(1000).map(|l| format!("{l}\n")).collect();
    std::fs::write(&cut, head).expect("cut tape");
    // An empty file second, after a good tape (refused as `agent` refuses it: it is no
    // tape at all); a tape cut short second, and alone.
    let good = good.to_str().expect("utf8");
    let empty_says = format!(
        "error code=USAGE message={} is an empty file, not a tape",
        empty.display()
    );
    let cut_says = format!("{}: error code=TAPE line=", cut.display());
    for (name, bad, extra, says) in [
        ("second-empty", &empty, vec!["--tape", good], &empty_says),
        ("second-cut-short", &cut, vec!["--tape", good], &cut_says),
        ("cut-short", &cut, vec![], &cut_says),
    ] {
        let out = dir.join(name);
        let mut args = vec!["--budgets", "64"];
        args.extend(extra);
        let run = experiment(&server.base, &dir, bad, &out, &args);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{name}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
        assert!(stderr.starts_with(says.as_str()), "{name}: {stderr}");
        assert_eq!(stderr.matches("code=").count(), 1, "{name}: {stderr}");
        if bad == &cut {
            assert!(stderr.contains(" message=ends-early: "), "{name}: {stderr}");
        }
        assert!(!out.exists(), "{name}: --out was made");
    }
    assert!(
        server.seen.lock().expect("lock").is_empty(),
        "the model was asked"
    );
}

/// An author whose every reply failed (nothing listening) gave exit 0 and a table of 100%
/// provider errors; a run whose every reply failed is a failed run (docs/limits.md), as in
/// `kestrel agent`: the table as usual, then `error code=PROVIDER`, exit 1.
#[test]
fn an_experiment_whose_every_reply_failed_exits_1() {
    let dir = scratch("experiment-dead");
    let out = dir.join("out");
    let tape = common::root().join("tapes/range-2025-04-09-s2.jsonl");
    let run = experiment(
        "http://127.0.0.1:9/v1",
        &dir,
        &tape,
        &out,
        &["--budgets", "64", "--profiles", "authoring-v2"],
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error code=PROVIDER message="), "{stderr}");
    assert!(stderr.contains("kind=connect"), "{stderr}");
    let table = std::fs::read_to_string(out.join("table.md")).expect("table.md");
    assert!(table.contains("| 100.0% | 0 |"), "{table}");
}

/// `--temperature NaN` and `-1` were sent to the server. A temperature is a number from 0
/// to 2 (the OpenAI API's range), for `experiment` as for `agent`; anything else is a usage
/// error before anything is asked.
#[test]
fn an_out_of_range_temperature_is_a_usage_error() {
    let server = serve(vec![Say::Stream("# nothing new\n".into())]);
    let dir = scratch("experiment-temperature");
    let tape = common::root().join("tapes/range-2025-04-09-s2.jsonl");
    for t in ["NaN", "-1", "2.5", "inf", "warm"] {
        let out = dir.join("out");
        let run = experiment(&server.base, &dir, &tape, &out, &["--temperature", t]);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{t}: {stderr}");
        assert!(
            stderr.starts_with("error code=USAGE") && stderr.contains("temperature"),
            "{t}: {stderr}"
        );
        assert!(!out.exists(), "{t}");
        let (code, _, err, _) = agent(&dir, &["--author", &server.base, "--temperature", t]);
        assert_eq!(code, 1, "agent {t}: {err}");
        assert!(err.starts_with("error code=USAGE"), "agent {t}: {err}");
    }
    assert!(
        server.seen.lock().expect("lock").is_empty(),
        "the model was asked"
    );
}

/// A stream the server closed after some text, with no finish reason and no `[DONE]` (a
/// crashed server, a proxy timeout), was counted as truncated at the budget, and the model
/// was told "the reply was cut off at the provider's output-token limit: write a shorter,
/// complete turn". It is a `stream-cut` provider error: no re-ask, the table's
/// provider-error column, and an experiment whose every reply failed exits 1.
#[test]
fn a_stream_cut_mid_reply_is_a_provider_error_not_a_truncation_at_the_budget() {
    let server = serve(vec![Say::Cut("# thesis: follow the ".into())]);
    let dir = scratch("experiment-stream-cut");
    let out = dir.join("out");
    let tape = common::root().join("tapes/range-2025-04-09-s2.jsonl");
    let run = experiment(
        &server.base,
        &dir,
        &tape,
        &out,
        &["--budgets", "4096", "--profiles", "authoring-v2"],
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error code=PROVIDER") && stderr.contains("kind=stream-cut"),
        "{stderr}"
    );
    let table = std::fs::read_to_string(out.join("table.md")).expect("table.md");
    let row = table
        .lines()
        .find(|l| l.starts_with("| authoring-v2-free-4096 |"))
        .unwrap_or_else(|| panic!("no free arm: {table}"));
    assert!(
        row.starts_with("| authoring-v2-free-4096 | 1 | - (0/0) | - (0/0) |"),
        "no reply, so nothing truncated: {row}"
    );
    assert!(row.contains("| 100.0% |"), "a provider error: {row}");
    let arm = out.join("authoring-v2-free-4096");
    let bus: String = std::fs::read_dir(&arm)
        .expect("the arm's directory")
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .collect();
    assert!(bus.contains("kind=stream-cut"), "{bus}");
    assert!(!bus.contains("output-token limit"), "{bus}");
    assert_eq!(
        server.seen.lock().expect("lock").len(),
        2,
        "one ask per arm: text arrived, so no retry, and no re-ask"
    );
}

/// A stream that ends with `[DONE]` but no finish reason was counted as truncated at the
/// budget. The server ended it itself (one stopped at its output-token limit says
/// `length`): it is a whole reply, routed as written.
#[test]
fn a_stream_that_ends_without_a_finish_reason_is_a_whole_reply() {
    let server = serve(vec![Say::Unsaid("STAND-DOWN chop, no edge\n".into())]);
    let dir = scratch("experiment-unsaid");
    let out = dir.join("out");
    let tape = common::root().join("tapes/range-2025-04-09-s2.jsonl");
    let run = experiment(
        &server.base,
        &dir,
        &tape,
        &out,
        &["--budgets", "4096", "--profiles", "authoring-v2"],
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    let table = std::fs::read_to_string(out.join("table.md")).expect("table.md");
    let row = table
        .lines()
        .find(|l| l.starts_with("| authoring-v2-free-4096 |"))
        .unwrap_or_else(|| panic!("no free arm: {table}"));
    assert!(row.contains("| 0.0% (0/1) |"), "not truncated: {row}");
}

/// `--out -` made a directory named `-` (and a second run failed as "not empty"), where `-`
/// is standard output on every other verb. It is a usage error saying why, and nothing is
/// created.
#[test]
fn the_experiment_refuses_out_dash() {
    let server = serve(vec![Say::Stream("# nothing new\n".into())]);
    let dir = scratch("experiment-out-dash");
    let tape = common::root().join("tapes/range-2025-04-09-s2.jsonl");
    let run = experiment_command(
        &server.base,
        &dir,
        &tape,
        std::path::Path::new("-"),
        &["--budgets", "64"],
    )
    .current_dir(&dir)
    .output()
    .expect("run kestrel experiment");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("error code=USAGE message=--out is a directory for the arms' Bus files and table.md; `-` (standard output) cannot hold them"),
        "{stderr}"
    );
    assert!(!dir.join("-").exists(), "no directory named -");
    assert!(
        server.seen.lock().expect("lock").is_empty(),
        "nothing asked"
    );
}
