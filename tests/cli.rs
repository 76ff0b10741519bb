//! The verbs as a user runs them: output, exit codes (0 ok, 1 usage / I/O, 2 refused), stdin.

use std::io::Write;
use std::process::{Command, Stdio};

fn kestrel(args: &[&str], stdin: Option<&str>) -> (i32, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kestrel"));
    c.args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn kestrel");
    if let Some(s) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(s.as_bytes())
            .expect("write");
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const BAD: &str = "PLAN x budget 0.2R ttl 15:00\n  WHEN spot > hod\n  DO buy 1 +1 C @ spot\n";

#[test]
fn check_exit_codes() {
    let (code, out, _) = kestrel(&["check", "examples/chase.kestrel"], None);
    assert_eq!(code, 0);
    assert!(out.contains("ok: examples/chase.kestrel (1 statement)"));
    let (code, _, err) = kestrel(&["check", "-"], Some(BAD));
    assert_eq!(code, 2);
    assert!(err.contains("-: error code=PARSE rule=syntax message=expected a price anchor after `@`, found `spot`"), "{err}");
    assert!(err.contains("(line 3, col 19)"));
    let (code, _, err) = kestrel(&["check", "no/such/file.kestrel"], None);
    assert_eq!(code, 1);
    assert!(err.contains("error code=IO"));
    let (code, _, _) = kestrel(&["check", "--no-such-flag", "x"], None);
    assert_eq!(code, 1, "usage errors exit 1");
    let (code, _, _) = kestrel(&["--help"], None);
    assert_eq!(code, 0);
}

#[test]
fn check_pretty_renders_a_snippet_and_json_is_data() {
    let (_, _, err) = kestrel(&["check", "--pretty", "-"], Some(BAD));
    assert!(err.contains("3 |   DO buy 1 +1 C @ spot"), "{err}");
    assert!(err.contains("^^^^ a series is not a price"), "{err}");
    let (code, out, _) = kestrel(&["check", "--format", "json", "-"], Some(BAD));
    assert_eq!(code, 2);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v[0]["ok"], false);
    assert_eq!(v[0]["errors"][0]["rule"], "syntax");
    assert_eq!(v[0]["errors"][0]["line"], 3);
    assert_eq!(v[0]["errors"][0]["code"], "PARSE");
}

#[test]
fn parse_prints_the_model_and_print_is_canonical() {
    let (code, out, _) = kestrel(&["parse", "examples/spread.kestrel"], None);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["statements"][0]["kind"]["statement"], "plan");
    assert_eq!(v["statements"][0]["kind"]["name"]["text"], "call-spread");
    let src = "PLAN   x  budget 0.2R ttl 15:00\n  WHEN spot  >  hod\n  DO buy 1 +1 C @ lean(bid,fair,0.5)\n";
    let (code, out, _) = kestrel(&["print", "-"], Some(src));
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "PLAN x budget 0.2R ttl 15:00\n  WHEN spot > hod\n  DO buy 1 +1 C @ lean(bid, fair, 0.5)\n"
    );
    let (code, _, _) = kestrel(&["print", "-"], Some(BAD));
    assert_eq!(code, 2);
}

#[test]
fn fmt_rewrites_in_place_and_check_reports() {
    let dir = std::env::temp_dir().join(format!("kestrel-fmt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let f = dir.join("a.kestrel");
    std::fs::write(
        &f,
        "PLAN  x budget 0.2R ttl 15:00\r\n  WHEN spot > hod\n  DO buy 1 +1 C @ fair\n\n\n",
    )
    .expect("write");
    let p = f.to_str().expect("utf8");
    let (code, out, _) = kestrel(&["fmt", "--check", p], None);
    assert_eq!(code, 2);
    assert!(out.contains("not canonical"));
    let (code, _, _) = kestrel(&["fmt", p], None);
    assert_eq!(code, 0);
    assert_eq!(
        std::fs::read_to_string(&f).expect("read"),
        "PLAN x budget 0.2R ttl 15:00\n  WHEN spot > hod\n  DO buy 1 +1 C @ fair\n"
    );
    let (code, _, _) = kestrel(&["fmt", "--check", p], None);
    assert_eq!(code, 0);
    // No temporary files are left behind.
    let left: Vec<_> = std::fs::read_dir(&dir).expect("dir").collect();
    assert_eq!(left.len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn turn_mode_allows_directives() {
    let (code, _, _) = kestrel(&["check", "-"], Some("STAND-DOWN no edge\n"));
    assert_eq!(code, 2);
    let (code, _, _) = kestrel(&["check", "--turn", "-"], Some("STAND-DOWN no edge\n"));
    assert_eq!(code, 0);
}

#[test]
fn rules_lists_every_rule() {
    let (code, out, _) = kestrel(&["rules"], None);
    assert_eq!(code, 0);
    for r in kestrel_desk::lang::Rule::ALL {
        assert!(out.contains(r.name()), "{r}");
    }
    // The router's rules too, which `check --turn` and the Journal print.
    for (code, name, _) in kestrel_desk::turn::TURN_RULES {
        assert!(
            out.lines()
                .any(|l| l.starts_with(name) && l.ends_with(&format!("(code={code})"))),
            "{name}: {out}"
        );
    }
    let (_, json, _) = kestrel(&["rules", "--json"], None);
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(
        v["turn_rules"].as_array().map(Vec::len),
        Some(kestrel_desk::turn::TURN_RULES.len())
    );
    // A rule the router gives is one `rules` lists: a mix of a directive and a plan.
    let (_, _, err) = kestrel(
        &["check", "--turn", "-"],
        Some(
            "STAND-DOWN no edge\nPLAN p budget 0.1R ttl +5m\n  USING signal SPX exec SPY 0dte\n  WHEN spot > vwap\n  DO buy 1 ATM C @ fair\n",
        ),
    );
    let rule = err
        .split_whitespace()
        .find_map(|w| w.strip_prefix("rule="))
        .unwrap_or_else(|| panic!("a coded error: {err}"));
    assert!(
        kestrel_desk::turn::TURN_RULES
            .iter()
            .any(|(_, n, _)| *n == rule),
        "{rule}: {err}"
    );
}

#[test]
fn agent_sessions_record_and_replay_to_the_same_hash() {
    let dir = std::env::temp_dir().join(format!("kestrel-agent-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let bus = dir.join("a.bus.jsonl");
    let b = bus.to_str().expect("utf8");
    let (code, out, err) = kestrel(
        &[
            "agent",
            "--tape",
            "tapes/trend-2025-04-09-s1.jsonl",
            "--author",
            "examples/house-agent.jsonl",
            "--bus",
            b,
            "--json",
        ],
        None,
    );
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json report");
    let hash = v["determinism_hash"].as_str().expect("hash").to_string();
    assert_eq!(v["outcomes"]["provider_error"], 0);
    assert!(v["outcomes"]["supersede"].as_u64().expect("n") >= 1);
    // The saved Bus is a recording: replaying it gives the same Bus bytes and hash.
    let again = dir.join("b.bus.jsonl");
    let (code, out, err) = kestrel(
        &[
            "agent",
            "--tape",
            "tapes/trend-2025-04-09-s1.jsonl",
            "--author",
            b,
            "--bus",
            again.to_str().expect("utf8"),
            "--json",
        ],
        None,
    );
    assert_eq!(code, 0, "{err}");
    let w: serde_json::Value = serde_json::from_str(&out).expect("json report");
    assert_eq!(w["determinism_hash"].as_str(), Some(hash.as_str()));
    assert_eq!(
        std::fs::read(&bus).expect("a"),
        std::fs::read(&again).expect("b")
    );
    // A command author: the prompt on stdin, the turn on stdout.
    let (code, out, err) = kestrel(
        &[
            "agent",
            "--tape",
            "tapes/range-2025-04-09-s2.jsonl",
            "--author",
            "sh examples/command-author.sh",
            "--json",
        ],
        None,
    );
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json report");
    assert!(v["outcomes"]["wakes"].as_u64().expect("n") >= 1);
    assert_eq!(v["outcomes"]["invalid"], 0);
    // A dead provider is a provider error, never a pass; a run where every reply was one
    // exits 1 with a coded message (issue 16).
    let (code, out, err) = kestrel(
        &[
            "agent",
            "--tape",
            "tapes/range-2025-04-09-s2.jsonl",
            "--author",
            "http://127.0.0.1:9/v1",
            "--timeout",
            "2",
            "--json",
        ],
        None,
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("error code=PROVIDER"), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json report");
    assert_eq!(v["outcomes"]["provider_error"], 1);
    assert_eq!(v["outcomes"]["pass"], 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Clap's own parse errors (an unknown flag, a bad value, a missing argument) came out in
/// clap's plain `error: ...` form, without the `code=` every other refusal has. They are now
/// `error code=USAGE message=...` (clap's tip and possible values on that line, its usage
/// line after), exit 1; `--help` and `--version` are as before, exit 0.
#[test]
fn clap_errors_are_coded_usage_errors_and_help_is_unchanged() {
    let tape = "tapes/trend-2025-04-09-s1.jsonl";
    let cases: [(&[&str], &str); 4] = [
        (
            &["run", "--bogus"],
            "error code=USAGE message=unexpected argument '--bogus' found\n",
        ),
        (
            &[
                "run",
                "--tape",
                tape,
                "--plans",
                "examples/chase.kestrel",
                "--bu",
                "x",
            ],
            "error code=USAGE message=unexpected argument '--bu' found; tip: a similar argument exists: '--bus'\n",
        ),
        (
            &["tape", "gen", "--regime", "bogus", "-o", "-"],
            "error code=USAGE message=invalid value 'bogus' for '--regime <REGIME>' [possible values: trend, range, shock]\n",
        ),
        (
            &["run", "--tape", tape],
            "error code=USAGE message=the following required arguments were not provided: --plans <PLANS>\n",
        ),
    ];
    for (args, want) in cases {
        let (code, out, err) = kestrel(args, None);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert!(err.starts_with(want), "{args:?}: {err}");
        assert!(err.contains("For more information, try '--help'."), "{err}");
        assert!(!err.lines().any(|l| l.starts_with("error:")), "{err}");
    }
    let (code, _, err) = kestrel(&["run", "--bogus"], None);
    assert_eq!(code, 1);
    assert!(err.contains("\nUsage: kestrel run "), "{err}");
    // Help and version: clap's output, exit 0.
    let (code, out, err) = kestrel(&["run", "--help"], None);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("Replay a tape headless") && !out.contains("code="),
        "{out}"
    );
    assert!(out.contains("Exit status: 0 ok"), "{out}");
    let (code, out, _) = kestrel(&["--version"], None);
    assert_eq!(code, 0);
    assert!(out.starts_with("kestrel "), "{out}");
}

/// `--r-usd -5` was taken for an unknown flag `-5` (clap's "unexpected argument"); it is
/// read as the amount it is and refused by the positive-amount check, as `--r-usd abc` is.
#[test]
fn a_negative_r_usd_is_a_value_refused_as_not_positive() {
    let base = [
        "run",
        "--tape",
        "tapes/trend-2025-04-09-s1.jsonl",
        "--plans",
        "examples/run-desk.kestrel",
        "--r-usd",
    ];
    for (v, shown) in [("-5", "\"-5\""), ("-250.50", "\"-250.50\"")] {
        let mut args = base.to_vec();
        args.push(v);
        let (code, out, err) = kestrel(&args, None);
        assert_eq!(code, 1, "{v}: {err}");
        assert!(out.is_empty(), "{out}");
        assert_eq!(
            err,
            format!(
                "error code=USAGE message=--r-usd must be a positive amount of dollars, got {shown}\n"
            ),
            "{v}"
        );
    }
    // An amount that is not plain digits, or has more decimals than a price keeps, says so
    // (each read "must be a positive amount" before, though 1e3 and +1000 are positive).
    for (v, why) in [
        ("abc", "is not written as plain digits"),
        ("1e3", "is not written as plain digits"),
        ("+1000", "is not written as plain digits"),
        ("1000.12345", "has more than four decimals"),
    ] {
        let mut args = base.to_vec();
        args.push(v);
        let (code, _, err) = kestrel(&args, None);
        assert_eq!(code, 1, "{v}: {err}");
        assert_eq!(
            err,
            format!(
                "error code=USAGE message=--r-usd \"{v}\" {why}: write dollars like 1000 or 250.50\n"
            ),
            "{v}"
        );
    }
}

/// A negative number given to a numeric flag was taken for an unknown flag (`unexpected
/// argument '-1' found`), though the README says negatives are read as values: it is read,
/// and refused for what it is.
#[test]
fn a_negative_number_is_a_value_refused_for_what_it_is() {
    for (args, flag) in [
        (vec!["tape", "gen", "--seed", "-1", "-o", "-"], "--seed"),
        (vec!["tape", "gen", "--count", "-3", "-o", "-"], "--count"),
        (
            vec![
                "frame",
                "--tape",
                "tapes/trend-2025-04-09-s1.jsonl",
                "--at",
                "10:00",
                "--width",
                "-5",
            ],
            "--width",
        ),
        (vec!["card", "--budget", "-100"], "--budget"),
    ] {
        let (code, _, err) = kestrel(&args, None);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
        assert!(err.contains(&format!("'{flag} <")), "{args:?}: {err}");
    }
    // The seed says what it takes (it was Rust's `invalid digit found in string`).
    let (code, _, err) = kestrel(&["tape", "gen", "--seed", "-1", "-o", "-"], None);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("'--seed <SEED>': \"-1\" is not a seed: a seed is a whole number from 0 to 18446744073709551615"),
        "{err}"
    );
    let (code, _, err) = kestrel(
        &[
            "frame",
            "--tape",
            "tapes/trend-2025-04-09-s1.jsonl",
            "--at",
            "-1",
        ],
        None,
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--at \"-1\" is not a time"), "{err}");
}

/// The report's header rounded R to cents: `--r-usd 250.505` and `--r-usd 250.51` both read
/// `1R = $250.51` over different figures. It shows the R the run used.
#[test]
fn the_report_shows_the_r_the_run_used() {
    let run = |r: &str| {
        let (code, out, err) = kestrel(
            &[
                "run",
                "--tape",
                "tapes/trend-2025-04-09-s1.jsonl",
                "--plans",
                "examples/run-desk.kestrel",
                "--r-usd",
                r,
            ],
            None,
        );
        assert_eq!(code, 0, "{err}");
        out.lines().next().unwrap_or_default().to_string()
    };
    assert!(run("250.505").ends_with("1R = $250.505"));
    assert!(run("250.51").ends_with("1R = $250.51"));
    assert!(run("1000").ends_with("1R = $1000.00"));
}

/// A turn the router refuses as `turn-mix` (two directives, a directive with statements) is
/// refused by `check --turn`, `print --turn` and `parse --turn` with the router's own error
/// line and exit 2: a tool that validates a reply with `check --turn` is never told "ok" of a
/// reply that `kestrel turn` routes as invalid.
#[test]
fn check_and_print_as_a_turn_refuse_what_the_router_refuses_as_a_mix() {
    let plan = "PLAN p budget 0.1R ttl +30m\n  WHEN spot > hod\n  DO buy 1 ATM C @ fair\n";
    let mixes = [
        ("STAND-DOWN a\nSTAND-DOWN b\n".to_string(), 2),
        (format!("{plan}STAND-DOWN a\n"), 4),
        ("SHOW VIEW v\n  blotter\nCANCEL p\n".to_string(), 3),
    ];
    for (turn, line) in &mixes {
        let (code, out, err) = kestrel(&["turn", "-"], Some(turn));
        assert_eq!(code, 2, "{turn}\n{out}{err}");
        let routed = format!("{out}{err}");
        let want = routed
            .lines()
            .find_map(|l| l.find("error code=TURN rule=turn-mix").map(|k| &l[k..]))
            .unwrap_or_else(|| panic!("no turn-mix from the router:\n{routed}"))
            .to_string();
        assert!(want.ends_with(&format!("(line {line}, col 1)")), "{want}");
        for verb in ["check", "print", "parse"] {
            let (code, out, err) = kestrel(&[verb, "--turn", "-"], Some(turn));
            assert_eq!(code, 2, "{verb} --turn:\n{turn}\n{out}{err}");
            assert_eq!(err.trim_end(), format!("-: {want}"), "{verb}");
            assert!(out.is_empty(), "{verb} printed {out}");
        }
        let (code, out, _) = kestrel(&["check", "--turn", "--json", "-"], Some(turn));
        assert_eq!(code, 2);
        let v: serde_json::Value = serde_json::from_str(&out).expect("json");
        assert_eq!(v[0]["ok"], false, "{v}");
        assert_eq!(v[0]["errors"][0]["code"], "TURN", "{v}");
        assert_eq!(v[0]["errors"][0]["rule"], "turn-mix", "{v}");
        assert_eq!(v[0]["errors"][0]["line"], *line, "{v}");
    }
    // One directive, or statements alone, are still fine.
    for ok in ["STAND-DOWN a\n", plan, "# a pass\n"] {
        for verb in ["check", "print"] {
            let (code, out, err) = kestrel(&[verb, "--turn", "-"], Some(ok));
            assert_eq!(code, 0, "{verb} {ok}\n{out}{err}");
        }
    }
}

/// Bytes that are not UTF-8 are a refused document, not an I/O failure: rule `syntax` at the
/// first bad byte's line and column, exit 2, and `check --json` lists the file with its
/// error (it printed `[]`, the file dropped, with an I/O error and exit 1).
#[test]
fn a_document_that_is_not_utf8_is_refused_at_its_first_bad_byte() {
    let dir = std::env::temp_dir().join(format!("kestrel-utf8-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let bad = dir.join("bad.kestrel");
    let good = dir.join("good.kestrel");
    let mut bytes = b"PLAN p budget 0.1R ttl +30m\n  WHEN ".to_vec();
    bytes.extend_from_slice(b"\xff\xfe spot > hod\n  DO buy 1 ATM C @ fair\n");
    std::fs::write(&bad, &bytes).expect("write");
    std::fs::write(
        &good,
        "PLAN p budget 0.1R ttl +30m\n  WHEN spot > hod\n  DO buy 1 ATM C @ fair\n",
    )
    .expect("write");
    let (b, g) = (bad.to_str().expect("utf8"), good.to_str().expect("utf8"));
    let (code, out, err) = kestrel(&["check", b], None);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.starts_with(&format!("{b}: error code=PARSE rule=syntax message=the document is not UTF-8 text: the byte 0xFF")),
        "{err}"
    );
    assert!(err.trim_end().ends_with("(line 2, col 8)"), "{err}");
    let (code, out, _) = kestrel(&["check", "--json", g, b], None);
    assert_eq!(code, 2);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v.as_array().map(Vec::len), Some(2), "{v}");
    assert_eq!(v[0]["ok"], true, "{v}");
    assert_eq!(v[1]["file"], b, "{v}");
    assert_eq!(v[1]["ok"], false, "{v}");
    let e = &v[1]["errors"][0];
    assert_eq!(
        (e["rule"].as_str(), e["line"].as_u64(), e["col"].as_u64()),
        (Some("syntax"), Some(2), Some(8)),
        "{v}"
    );
    assert_eq!(e["start"], 35, "{v}");
    for verb in [
        vec!["print", b],
        vec!["parse", b],
        vec!["fmt", "--check", b],
        vec!["turn", b],
    ] {
        let (code, out, err) = kestrel(&verb, None);
        assert_eq!(code, 2, "{verb:?}: {out}{err}");
        assert!(
            err.contains("rule=syntax message=the document is not UTF-8 text"),
            "{verb:?}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A flag the author does not use is refused, not dropped (README: flags that contradict
/// each other are refused). Before 2026-12-06 a Bus replayed after `--temperature 0 --model
/// other` reported the recorded arm, as if the session had been run again so, and a command
/// or a script took `--constrained --max-tokens 7` without a word.
#[test]
fn author_flags_the_author_does_not_use_are_refused() {
    let tape = "tapes/trend-2025-04-09-s1.jsonl";
    let agent = |extra: &[&str]| {
        let mut a = vec!["agent", "--tape", tape];
        a.extend_from_slice(extra);
        kestrel(&a, None)
    };
    // A script of replies is sent nothing: no model flag applies; --profile (its menu) does.
    let script = ["--author", "examples/house-agent.jsonl"];
    let (c, out, e) = agent(&[&script[..], &["--constrained", "--model", "foo"]].concat());
    assert_eq!(c, 1, "{e}");
    assert!(out.is_empty(), "{out}");
    assert!(
        e.starts_with(
            "error code=USAGE message=--model, --constrained are not used by a script of replies"
        ),
        "{e}"
    );
    let (c, _, e) = agent(&[&script[..], &["--profile", "viewshop-v2"]].concat());
    assert_eq!(c, 0, "{e}");
    // A command is run with --timeout and sent the prompt; it has no temperature.
    let cmd = ["--author", "cmd:sh examples/command-author.sh"];
    let (c, _, e) = agent(&[&cmd[..], &["--timeout", "5", "--profile", "viewshop-v2"]].concat());
    assert_eq!(c, 0, "{e}");
    let (c, _, e) = agent(&[&cmd[..], &["--timeout", "5", "--temperature", "1.9"]].concat());
    assert_eq!(c, 1, "{e}");
    assert!(
        e.contains("--temperature is not used by a command") && e.contains("leave it out"),
        "{e}"
    );
    // A default is not a flag given: the same value typed is.
    let (c, _, e) = agent(&[&cmd[..], &["--temperature", "0.7"]].concat());
    assert_eq!(c, 1, "{e}");
    // A saved Bus replays the arm and the profile it recorded: none applies.
    let dir = std::env::temp_dir().join(format!("kestrel-unused-flags-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bus = dir.join("s.bus.jsonl");
    let bus = bus.to_str().unwrap();
    let (c, _, e) = agent(&[&script[..], &["--bus", bus]].concat());
    assert_eq!(c, 0, "{e}");
    let (c, out, e) = agent(&[
        "--author",
        bus,
        "--profile",
        "viewshop-v2",
        "--timeout",
        "9",
    ]);
    assert_eq!(c, 1, "{e}");
    assert!(out.is_empty(), "{out}");
    assert!(
        e.contains("--timeout, --profile are not used by a saved Bus, which replays the arm and profile it recorded"),
        "{e}"
    );
    let (c, _, e) = agent(&["--author", bus]);
    assert_eq!(c, 0, "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
