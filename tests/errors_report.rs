//! `kestrel errors report`: real sessions whose scripted authors make mistakes and then fix
//! them (or do not) write Bus files; the report's aggregates are checked against numbers
//! worked out by hand from the scripts. Bad Bus files fail closed naming the file and line.
//!
//! Every session runs on the trend tape with no WAKE armed, so only the OPEN wake asks (a
//! SHOW VIEW answered under `viewshop-v2` asks again at the same wake). The repair budget is
//! the default: 1 reply + 2 re-asks.

mod common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use kestrel_desk::bus::{Bus, canonical_line};
use kestrel_desk::engine::EngineConfig;
use kestrel_desk::market::{Px, open_tape};
use kestrel_desk::session::{self, Run, RunConfig};
use kestrel_desk::tokens::{Encoding, count};
use kestrel_desk::turn::repair::{Ask, RepairPolicy};
use kestrel_desk::turn::{AuthorKind, Profile, Reply};

const TAPE: &str = "tapes/trend-2025-04-09-s1.jsonl";
/// PARSE/syntax: WHEN and DO on one line.
const COLLAPSED: &str = "PLAN x budget 0.1R ttl 15:00\n  WHEN spot > hod DO buy 1 ATM C @ fair\n";
const FIXED: &str = "PLAN x budget 0.1R ttl 15:00\n  WHEN spot > hod\n  DO buy 1 ATM C @ fair\n";
/// TURN/menu under authoring-v2 (no SHOW VIEW on its menu).
const SHOW_BAD: &str = "SHOW VIEW probe budget 300\n  levels\n";
/// A SHOW VIEW the view-shop answers.
const SHOW_OK: &str = "SHOW VIEW probe budget 300\n  chain 0dte strikes 2\n  levels\n";
/// ENVELOPE/envelope-shape.
const JSON_OTHER: &str = "{\"foo\": 1}";
/// TURN/turn-mix.
const MIX: &str = "STAND-DOWN a\nSTAND-DOWN b\n";
const STAND: &str = "STAND-DOWN no edge\n";

fn kestrel(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .expect("run kestrel");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kestrel-errors-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("tmp dir");
    d
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf8 path")
}

fn t(text: &str) -> u64 {
    count(text, Encoding::Cl100k).expect("cl100k") as u64
}

/// `kestrel agent` with a script of replies (one per ask, re-asks included).
fn agent_session(dir: &Path, name: &str, replies: &[&str], profile: &str) -> PathBuf {
    let script = dir.join(format!("{name}.jsonl"));
    let mut f = std::fs::File::create(&script).expect("script");
    for r in replies {
        writeln!(f, "{}", serde_json::json!({ "reply": r })).expect("write");
    }
    let bus = dir.join(format!("{name}.bus.jsonl"));
    let (code, _, err) = kestrel(&[
        "agent",
        "--tape",
        TAPE,
        "--author",
        s(&script),
        "--profile",
        profile,
        "--bus",
        s(&bus),
    ]);
    assert_eq!(code, 0, "{err}");
    bus
}

/// A library session with a model author (replies in order, re-asks included), its Bus
/// saved to `dir/name.bus.jsonl`.
fn model_session(dir: &Path, name: &str, replies: Vec<Reply>) -> PathBuf {
    let mut it = replies.into_iter();
    let mut author = session::Live {
        name: name.into(),
        write: move |_: &session::WakeAsk, _: &Ask| {
            it.next()
                .unwrap_or(Reply::Text("# nothing to add\n".into()))
        },
        policy: RepairPolicy::default(),
    };
    let cfg = RunConfig {
        engine: EngineConfig::strict(Px(1000 * 10_000)),
        profile: Profile::AuthoringV2,
        author: AuthorKind::Model,
        open_wake: true,
        view_request_cap: None,
    };
    let s = Run::new(
        open_tape(&common::root().join(TAPE)).expect("tape"),
        cfg,
        &[],
        Bus::new(None).keeping(),
    )
    .expect("session");
    let bus = s.run(&mut author).expect("run");
    let bytes: Vec<u8> = bus.events().iter().flat_map(canonical_line).collect();
    let path = dir.join(format!("{name}.bus.jsonl"));
    std::fs::write(&path, bytes).expect("write bus");
    path
}

/// The five sessions of the worked example, in `dir`.
///
/// | file | author, profile | replies | turns |
/// | --- | --- | --- | --- |
/// | a | file, authoring-v2 | COLLAPSED → FIXED | 1 repaired supersede |
/// | b | file, authoring-v2 | SHOW_BAD → COLLAPSED → JSON_OTHER | 1 fail-closed pass |
/// | c | file, viewshop-v2 | SHOW_OK; then MIX → STAND | view-request, repaired stand-down |
/// | d | model, authoring-v2 | COLLAPSED → COLLAPSED → FIXED | 1 repaired supersede |
/// | e | model, authoring-v2 | COLLAPSED → provider error | 1 provider-error |
fn sessions(dir: &Path) -> Vec<PathBuf> {
    vec![
        agent_session(dir, "a", &[COLLAPSED, FIXED], "authoring-v2"),
        agent_session(dir, "b", &[SHOW_BAD, COLLAPSED, JSON_OTHER], "authoring-v2"),
        agent_session(dir, "c", &[SHOW_OK, MIX, STAND], "viewshop-v2"),
        model_session(
            dir,
            "d",
            vec![
                Reply::text(COLLAPSED),
                Reply::text(COLLAPSED),
                Reply::text(FIXED),
            ],
        ),
        model_session(
            dir,
            "e",
            vec![
                Reply::text(COLLAPSED),
                Reply::ProviderError("HTTP 503".into()),
            ],
        ),
    ]
}

fn report_json(args: &[&str]) -> (String, serde_json::Value) {
    let mut all = vec!["errors", "report", "--json"];
    all.extend_from_slice(args);
    let (code, out, err) = kestrel(&all);
    assert_eq!(code, 0, "{err}");
    let v = serde_json::from_str(&out).expect("json report");
    (out, v)
}

#[test]
fn the_report_grades_each_message_by_what_the_author_wrote_next() {
    let dir = tmp("worked");
    let files = sessions(&dir);
    let paths: Vec<&str> = files.iter().map(|p| s(p)).collect();
    let (out, v) = report_json(&paths);

    // Errors, most shown first, then by code and rule.
    let e = v["errors"].as_array().expect("errors");
    let keys: Vec<(String, String)> = e
        .iter()
        .map(|x| (x["code"].to_string(), x["rule"].to_string()))
        .collect();
    assert_eq!(
        keys,
        [
            ("PARSE", "syntax"),
            ("TURN", "menu"),
            ("TURN", "turn-mix"),
            ("ENVELOPE", "envelope-shape")
        ]
        .map(|(c, r)| (format!("{c:?}"), format!("{r:?}")))
        .to_vec()
    );

    // syntax (COLLAPSED) was refused in a, b (2nd reply), d (twice) and e: 5 replies, each
    // followed by a re-ask. What came next: a FIXED (parsed), b JSON_OTHER (refused), d
    // COLLAPSED (refused) then FIXED (parsed), e a provider error (no reply). Repair rate
    // 2 of the 4 replies; only b's turn ended fail-closed.
    let syntax = &e[0];
    assert_eq!(syntax["refused"], 5);
    assert_eq!(syntax["shown"], 5);
    assert_eq!(syntax["unshown"], 0);
    assert_eq!(syntax["provider_error"], 1);
    assert_eq!(syntax["replied"], 4);
    assert_eq!(syntax["parsed_next"], 2);
    assert_eq!(syntax["repair_rate"], 0.5);
    assert_eq!(syntax["fail_closed"], 1);
    assert_eq!(syntax["fail_closed_rate"], 0.2);
    let mut next = [t(FIXED), t(JSON_OTHER), t(COLLAPSED), t(FIXED)];
    next.sort_unstable();
    let median = (next[1] + next[2]) as f64 / 2.0;
    assert_eq!(syntax["next_tokens_median"].as_f64(), Some(median));
    assert_eq!(
        syntax["next_tokens_total"],
        2 * t(FIXED) + t(JSON_OTHER) + t(COLLAPSED)
    );
    assert!(
        syntax["example"]
            .as_str()
            .unwrap_or("")
            .starts_with("DO belongs on its own line"),
        "{syntax}"
    );

    // menu: b's SHOW_BAD, answered by COLLAPSED (refused); b failed closed.
    let menu = &e[1];
    assert_eq!(
        (&menu["refused"], &menu["shown"], &menu["parsed_next"]),
        (&1.into(), &1.into(), &0.into())
    );
    assert_eq!(menu["repair_rate"], 0);
    assert_eq!(menu["fail_closed"], 1);
    assert_eq!(menu["next_tokens_median"], t(COLLAPSED));
    assert!(
        menu["example"]
            .as_str()
            .unwrap_or("")
            .contains("not on the menu at the OPEN wake"),
        "{menu}"
    );

    // turn-mix: c's MIX, answered by STAND (parsed).
    let mix = &e[2];
    assert_eq!(mix["shown"], 1);
    assert_eq!(mix["repair_rate"], 1);
    assert_eq!(mix["fail_closed"], 0);
    assert_eq!(mix["next_tokens_median"], t(STAND));

    // envelope-shape: b's third reply spent the budget; it was never shown.
    let env = &e[3];
    assert_eq!(
        (&env["refused"], &env["shown"], &env["unshown"]),
        (&1.into(), &0.into(), &1.into())
    );
    assert!(env["repair_rate"].is_null() && env["next_tokens_median"].is_null());
    assert!(
        env["example"]
            .as_str()
            .unwrap_or("")
            .starts_with("valid JSON but not a turn"),
        "{env}"
    );

    // Totals: 6 turns (c has two), 4 authored (a, c twice, d), 3 of them after a re-ask
    // (a, c's second, d), b failed closed, e was a provider error. Replies: a 2, b 3,
    // c 3, d 3, e 2 = 13; re-asks 1 + 2 + 1 + 2 + 1 = 7, of which 3 parsed next and 1 was
    // answered by a provider error: repair rate 3 / 6.
    let tot = &v["totals"];
    for (k, n) in [
        ("turns", 6),
        ("authored", 4),
        ("repaired", 3),
        ("fail_closed", 1),
        ("provider_error", 1),
        ("refused", 0),
        ("attempts", 13),
        ("re_asks", 7),
        ("re_asks_parsed", 3),
        ("re_asks_provider_error", 1),
    ] {
        assert_eq!(tot[k], n, "totals.{k}");
    }
    assert_eq!(tot["repair_rate"], 0.5);
    // Written: COLLAPSED 5 times (a, b, d twice, e), FIXED twice (a, d), the rest once; a
    // provider error writes nothing.
    let tokens = t(COLLAPSED) * 5
        + t(FIXED) * 2
        + t(SHOW_BAD)
        + t(JSON_OTHER)
        + t(SHOW_OK)
        + t(MIX)
        + t(STAND);
    assert_eq!(tot["tokens"], tokens);

    // Per author kind and per profile, as the turn records carry them.
    assert_eq!(v["by_author"]["file"]["turns"], 4);
    assert_eq!(v["by_author"]["file"]["fail_closed"], 1);
    assert_eq!(v["by_author"]["model"]["turns"], 2);
    assert_eq!(v["by_author"]["model"]["provider_error"], 1);
    assert_eq!(v["by_author"]["model"]["re_asks"], 3);
    assert_eq!(v["by_profile"]["authoring-v2"]["turns"], 4);
    assert_eq!(v["by_profile"]["viewshop-v2"]["turns"], 2);
    assert_eq!(v["by_profile"]["viewshop-v2"]["repaired"], 1);
    let f = v["files"].as_array().expect("files");
    assert_eq!(f.len(), 5);
    assert_eq!(f[2]["path"], s(&files[2]));
    assert_eq!(f[2]["turns"], 2);

    // Canonical and deterministic: sorted keys; the same bytes whatever the input order,
    // and a directory (its *.bus.jsonl, not the scripts beside them) or a glob reads the
    // same files.
    assert!(out.starts_with("{\"by_author\":"), "{out}");
    let mut rev = paths.clone();
    rev.reverse();
    assert_eq!(report_json(&rev).0, out);
    assert_eq!(report_json(&[s(&dir)]).0, out);
    let glob = format!("{}/*.bus.jsonl", s(&dir));
    assert_eq!(report_json(&[&glob, paths[0]]).0, out);
    // The same file by another spelling, or through a link, is read once (it was counted
    // twice: "2 file(s), 8 turn(s)" for one file of 4).
    let dotted = dir.join(".").join(files[0].file_name().expect("name"));
    let link = dir.join("link-to-first.jsonl");
    let mut again = paths.clone();
    again.push(s(&dotted));
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&files[0], &link).expect("symlink");
        again.push(s(&link));
    }
    let (_, w) = report_json(&again);
    assert_eq!(w["files"].as_array().map(Vec::len), Some(5), "{w}");
    assert_eq!(w["by_author"], v["by_author"]);
    assert_eq!(w["errors"], v["errors"]);
    let _ = std::fs::remove_file(&link);

    // The text table.
    let (code, text, _) = kestrel(&["errors", "report", s(&dir)]);
    assert_eq!(code, 0);
    let row = text
        .lines()
        .find(|l| l.starts_with("PARSE"))
        .expect("syntax row");
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cols[..7], ["PARSE", "syntax", "5", "5", "2", "50.0%", "1"]);
    assert!(text.contains("errors report: 5 file(s), 6 turn(s), 13 repl(ies), 7 re-ask(s)"));
    let all = text.lines().find(|l| l.starts_with("all ")).expect("all");
    assert_eq!(
        all.split_whitespace().collect::<Vec<_>>()[1..8],
        ["6", "4", "3", "1", "1", "7", "50.0%"]
    );
    assert!(text.contains("profile viewshop-v2"));
    // Every group row (all, author, profile, arm, file) has its numbers under the header's
    // columns, however long its name, and the files' turns add up to all's.
    let head = text
        .lines()
        .find(|l| l.starts_with("group "))
        .expect("header");
    let turns_end = head.find("turns").expect("turns") + "turns".len();
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("group "))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    for r in &rows {
        // The turns figure is right-aligned under "turns": it ends where the header does.
        let b = r.as_bytes();
        assert!(
            b.get(turns_end - 1).is_some_and(u8::is_ascii_digit) && b.get(turns_end) == Some(&b' '),
            "not under the header: {r:?} / {head:?}"
        );
    }
    let files: Vec<&&str> = rows.iter().filter(|r| r.starts_with("file ")).collect();
    assert_eq!(files.len(), 5, "{text}");
    let sum: u64 = files
        .iter()
        .map(|r| {
            r[..turns_end]
                .split_whitespace()
                .last()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert_eq!(sum, 6, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_replayed_bus_reports_the_same_repairs() {
    let dir = tmp("replay");
    let orig = agent_session(
        &dir,
        "b",
        &[SHOW_BAD, COLLAPSED, JSON_OTHER],
        "authoring-v2",
    );
    let again = dir.join("again.bus.jsonl");
    let (code, _, err) = kestrel(&[
        "agent",
        "--tape",
        TAPE,
        "--author",
        s(&orig),
        "--bus",
        s(&again),
    ]);
    assert_eq!(code, 0, "{err}");
    let (_, a) = report_json(&[s(&orig)]);
    let (_, b) = report_json(&[s(&again)]);
    assert_eq!(a["errors"], b["errors"]);
    assert_eq!(a["totals"], b["totals"]);
    assert_eq!(a["totals"]["fail_closed"], 1);
    // A Bus with no turns (`kestrel run`) reports nothing refused.
    let run_bus = dir.join("run.bus.jsonl");
    let (code, _, err) = kestrel(&[
        "run",
        "--tape",
        TAPE,
        "--plans",
        "examples/run-desk.kestrel",
        "--r-usd",
        "1000",
        "--bus",
        s(&run_bus),
    ]);
    assert_eq!(code, 0, "{err}");
    let (_, r) = report_json(&[s(&run_bus)]);
    assert_eq!(r["errors"], serde_json::json!([]));
    assert_eq!(r["totals"]["turns"], 0);
    assert!(r["totals"]["repair_rate"].is_null());
    let _ = std::fs::remove_dir_all(&dir);
}

/// An ask a signal cut (`provider-error kind=interrupted`: the person's Ctrl-C or SIGTERM)
/// is not the model's provider error. `kestrel experiment`'s table leaves it out; the report
/// counted it as a turn and a provider error, so an arm stopped by hand read as 100%
/// provider errors. It is now counted only in `interrupted`.
#[test]
fn an_ask_cut_by_a_signal_is_interrupted_not_a_provider_error() {
    let dir = tmp("interrupted");
    let cut = model_session(
        &dir,
        "cut",
        vec![
            Reply::text(COLLAPSED),
            Reply::ProviderError(
                "provider-error kind=interrupted interrupted by SIGTERM while the author was answering"
                    .into(),
            ),
        ],
    );
    let failed = model_session(
        &dir,
        "failed",
        vec![Reply::ProviderError(
            "provider-error kind=http HTTP 503".into(),
        )],
    );
    let (_, v) = report_json(&[s(&cut)]);
    let tot = &v["totals"];
    for (k, n) in [
        ("turns", 0),
        ("provider_error", 0),
        ("interrupted", 1),
        ("attempts", 0),
        ("re_asks", 0),
        ("tokens", 0),
    ] {
        assert_eq!(tot[k], n, "totals.{k}: {v}");
    }
    assert_eq!(v["errors"], serde_json::json!([]), "{v}");
    assert_eq!(v["by_author"]["model"]["interrupted"], 1);
    // A real provider error still is one.
    let (_, w) = report_json(&[s(&failed), s(&cut)]);
    assert_eq!(w["totals"]["turns"], 1);
    assert_eq!(w["totals"]["provider_error"], 1);
    assert_eq!(w["totals"]["interrupted"], 1);
    // The text table's last column.
    let (code, text, _) = kestrel(&["errors", "report", s(&cut)]);
    assert_eq!(code, 0);
    assert!(
        text.lines()
            .any(|l| l.starts_with("group") && l.split_whitespace().nth(9) == Some("interrupted")),
        "{text}"
    );
    let all = text.lines().find(|l| l.starts_with("all ")).expect("all");
    let cols: Vec<&str> = all.split_whitespace().collect();
    assert_eq!((cols[1], cols[5], cols[9]), ("0", "0", "1"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A reply past the 256 KiB limit is refused unread and charged a quarter of its bytes: an
/// estimate, not a cl100k count. It was added to `tokens` with the counts (750,001 for a
/// 3 MB reply); it is now `tokens_estimated`, and `tokens` holds counts only. No provider
/// `usage` was recorded, so the provider columns read `-`.
#[test]
fn an_oversized_replys_estimate_is_kept_apart_from_the_token_counts() {
    let dir = tmp("estimate");
    let f = model_session(
        &dir,
        "huge",
        vec![Reply::Oversized {
            head: "#".repeat(64),
            bytes: 3_000_003,
        }],
    );
    let (_, v) = report_json(&[s(&f)]);
    let tot = &v["totals"];
    assert_eq!(tot["attempts"], 1, "{v}");
    assert_eq!(tot["tokens"], 0, "{v}");
    assert_eq!(tot["tokens_estimated"], 750_001, "{v}");
    assert_eq!(tot["provider_attempts"], 0, "{v}");
    let (code, text, _) = kestrel(&["errors", "report", s(&f)]);
    assert_eq!(code, 0);
    let all = text.lines().find(|l| l.starts_with("all ")).expect("all");
    let cols: Vec<&str> = all.split_whitespace().collect();
    assert_eq!(&cols[8..], ["0", "0", "750001", "-", "-"], "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_bus_files_fail_closed_naming_the_file_and_line() {
    let dir = tmp("bad");
    let good = agent_session(&dir, "a", &[COLLAPSED, FIXED], "authoring-v2");
    let text = std::fs::read_to_string(&good).expect("bus");
    let lines: Vec<&str> = text.lines().collect();
    let first_repair = lines
        .iter()
        .position(|l| l.contains("\"type\":\"repair\""))
        .expect("a repair event");
    let bad_dir = dir.join("bad");
    std::fs::create_dir_all(&bad_dir).expect("dir");
    let cases: Vec<(&str, String, usize, &str)> = vec![
        (
            "garbage",
            {
                let mut l = lines.clone();
                l[2] = "{\"type\":\"fill\",";
                l.join("\n") + "\n"
            },
            3,
            "not a Bus event",
        ),
        (
            "cut",
            lines[..=first_repair].join("\n") + "\n",
            first_repair + 1,
            "no turn after them",
        ),
    ];
    for (name, body, line, what) in cases {
        let p = bad_dir.join(format!("{name}.bus.jsonl"));
        std::fs::write(&p, body).expect("write");
        // A good file beside it changes nothing: nothing is half-printed.
        for json in [true, false] {
            let mut args = vec!["errors", "report", s(&good), s(&p)];
            if json {
                args.push("--json");
            }
            let (code, out, err) = kestrel(&args);
            assert_eq!(code, 2, "{name}");
            assert_eq!(out, "", "{name}: nothing printed");
            let want = format!("error code=BUS message={}: line {line}: ", s(&p));
            assert!(err.starts_with(&want), "{name}: {err}");
            assert!(err.contains(what), "{name}: {err}");
        }
        let _ = std::fs::remove_file(&p);
    }
    // A file that is not a Bus at all is the wrong kind of file: a usage error naming what
    // it is (before 2026-12-06 `code=BUS … line 1: …` in serde's words, exit 2).
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "tape",
            std::fs::read_to_string(common::root().join(TAPE)).expect("tape"),
            "is a tape",
        ),
        ("empty", String::new(), "is an empty file"),
    ];
    for (name, body, what) in cases {
        let p = bad_dir.join(format!("{name}.bus.jsonl"));
        std::fs::write(&p, body).expect("write");
        for json in [true, false] {
            let mut args = vec!["errors", "report", s(&good), s(&p)];
            if json {
                args.push("--json");
            }
            let (code, out, err) = kestrel(&args);
            assert_eq!(code, 1, "{name}");
            assert_eq!(out, "", "{name}: nothing printed");
            let want = format!("error code=USAGE message={} {what}", s(&p));
            assert!(err.starts_with(&want), "{name}: {err}");
            assert!(err.contains(", not a Bus: "), "{name}: {err}");
        }
        let _ = std::fs::remove_file(&p);
    }
    // Usage and I/O.
    let (code, out, err) = kestrel(&["errors", "report", s(&dir.join("missing.bus.jsonl"))]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.starts_with("error code=IO"), "{err}");
    let nothing = format!("{}/*.nothing", s(&dir));
    let (code, _, err) = kestrel(&["errors", "report", &nothing]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("error code=USAGE message=no file matches"),
        "{err}"
    );
    let (code, _, err) = kestrel(&["errors", "report", s(&bad_dir)]);
    assert_eq!(code, 1);
    assert!(err.contains("no Bus files"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A headless Bus cut after its last turn (no `session-end`: a killed run, `head -n`) was
/// averaged in as if whole, while `agent --author` refuses the same file as cut. It is
/// still counted as far as it goes, and a warning names it; the whole file gets none.
#[test]
fn a_cut_headless_bus_is_counted_with_a_warning() {
    let dir = tmp("cutwarn");
    let good = agent_session(&dir, "a", &[COLLAPSED, FIXED], "authoring-v2");
    let text = std::fs::read_to_string(&good).expect("bus");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.last().unwrap().contains("\"type\":\"session-end\""));
    let cut = dir.join("cut.bus.jsonl");
    std::fs::write(&cut, lines[..lines.len() - 1].join("\n") + "\n").expect("write");
    let (code, out, err) = kestrel(&["errors", "report", s(&good)]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("warning"), "a whole Bus: {err}");
    let whole = out;
    let (code, out, err) = kestrel(&["errors", "report", s(&cut)]);
    assert_eq!(code, 0, "{err}");
    let want = format!(
        "warning code=BUS message={}: the Bus ends at line {} without session-end: it was cut off",
        s(&cut),
        lines.len() - 1
    );
    assert!(err.starts_with(&want), "{err}");
    assert!(
        err.contains("its turns are counted as far as it goes"),
        "{err}"
    );
    // Counted as far as it goes: the same turns as the whole file (it was cut after them).
    let all = |o: &str| {
        o.lines()
            .find(|l| l.starts_with("all "))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    };
    assert!(!all(&out).is_empty(), "{out}");
    assert_eq!(all(&out), all(&whole));
    let _ = std::fs::remove_dir_all(&dir);
}

/// An `experiment --out` directory keeps each arm's Bus files one level down: `errors report
/// DIR` said only that DIR holds no Bus files. It now says its subdirectories hold some and
/// gives the glob that reads them, which does.
#[test]
fn a_directory_of_arms_names_the_glob_that_reads_them() {
    let dir = tmp("arms");
    let arm = dir.join("arm-a");
    std::fs::create_dir_all(&arm).unwrap();
    agent_session(&arm, "0001", &[COLLAPSED, FIXED], "authoring-v2");
    let (code, out, err) = kestrel(&["errors", "report", s(&dir)]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    let glob = format!("{}/*/", s(&dir));
    assert!(
        err.starts_with("error code=USAGE message=no Bus files")
            && err.contains(&format!(
                ": 1 of its subdirectories hold some (an experiment's arms): give {glob}"
            )),
        "{err}"
    );
    // The glob it gives (docs/grammar.md's `DIR/*/`, which matched no file before) reads them.
    let (code, out, err) = kestrel(&["errors", "report", &glob]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1 file(s)"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
