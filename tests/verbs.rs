//! The verbs as a user meets them (issue 20): one flag vocabulary, errors that say what the
//! input looks like, no crash on a closed pipe. Every test runs the built binary.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const TAPE: &str = "tapes/trend-2025-04-09-s1.jsonl";
const EXIT_FOOTER: &str = "Exit status: 0 ok; 1 a usage error";

fn kestrel_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run kestrel");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn kestrel(args: &[&str]) -> (i32, String, String) {
    kestrel_in(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kestrel-verbs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("tmp dir");
    d
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Run with stdout and stderr pipes whose reading ends are closed at once: every write the
/// verb makes fails with EPIPE. Returns the exit code (`None`: killed by a signal).
fn with_closed_pipes(args: &[&str]) -> Option<i32> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    drop(child.stderr.take());
    child.wait().expect("wait").code()
}

#[test]
fn closed_stdout_and_stderr_pipes_do_not_panic() {
    // The issue's case: a frame (stdout) and its token line (stderr), both pipes gone.
    assert_eq!(
        with_closed_pipes(&["frame", "--tape", TAPE, "--at", "10:00"]),
        Some(0)
    );
    // Errors to a closed stderr keep their own exit codes (1 usage / I/O, 2 refused).
    assert_eq!(
        with_closed_pipes(&[
            "run",
            "--tape",
            "no/such.jsonl",
            "--plans",
            "examples/chase.kestrel"
        ]),
        Some(1)
    );
    assert_eq!(
        with_closed_pipes(&["frame", "--tape", TAPE, "--at", "08:00"]),
        Some(1)
    );
    assert_eq!(with_closed_pipes(&["check", "--no-such-flag"]), Some(1));
    let d = tmp("pipes");
    let bad = d.join("bad.kestrel");
    std::fs::write(
        &bad,
        "PLAN x budget 0R ttl +1m\n  WHEN spot > 1\n  DO buy 1 shares @ ask\n",
    )
    .expect("write");
    assert_eq!(with_closed_pipes(&["check", s(&bad)]), Some(2));
    // Data verbs whose whole product is stdout.
    for args in [
        vec![
            "run",
            "--tape",
            TAPE,
            "--plans",
            "examples/run-desk.kestrel",
        ],
        vec!["grammar", "--format", "lark"],
        vec!["card"],
        vec!["tape", "gen", "-o", "-"],
        vec!["print", "examples/chase.kestrel", "examples/spread.kestrel"],
        vec!["tokens", "--table", "examples/turns/02-stand-down.txt"],
        vec!["--help"],
    ] {
        assert_eq!(with_closed_pipes(&args), Some(0), "{args:?}");
    }
    // The issue's shell pipeline, as typed.
    let k = env!("CARGO_BIN_EXE_kestrel");
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -o pipefail; '{k}' frame --tape {TAPE} --at 10:00 2>&1 | head -1 >/dev/null"
        ))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("bash");
    assert_eq!(out.code(), Some(0));
    let _ = std::fs::remove_dir_all(&d);
}

/// The verbs and sub-verbs `kestrel --help` lists (recursively), as argument paths.
fn all_verbs() -> Vec<Vec<String>> {
    fn commands(help: &str) -> Vec<String> {
        let mut v = Vec::new();
        let mut inside = false;
        for l in help.lines() {
            if l.starts_with("Commands:") {
                inside = true;
                continue;
            }
            if inside {
                if !l.starts_with("  ") {
                    break;
                }
                let name = l.split_whitespace().next().unwrap_or("");
                if !name.is_empty() && name != "help" {
                    v.push(name.to_string());
                }
            }
        }
        v
    }
    let mut out = Vec::new();
    let mut todo: Vec<Vec<String>> = vec![vec![]];
    while let Some(path) = todo.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let (code, help, _) = kestrel(&args);
        assert_eq!(code, 0, "{args:?}");
        for c in commands(&help) {
            let mut p = path.clone();
            p.push(c);
            out.push(p.clone());
            todo.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn every_help_shows_an_example_and_the_exit_codes() {
    let verbs = all_verbs();
    let names: BTreeSet<String> = verbs.iter().map(|v| v.join(" ")).collect();
    for want in [
        "check",
        "grade merge",
        "errors report",
        "tape gen",
        "paths",
        "print",
    ] {
        assert!(names.contains(want), "{want} missing from {names:?}");
    }
    for v in &verbs {
        let mut args: Vec<&str> = v.iter().map(String::as_str).collect();
        args.push("--help");
        let (_, help, _) = kestrel(&args);
        assert!(help.contains("Example: kestrel"), "{args:?}:\n{help}");
        assert!(help.contains(EXIT_FOOTER), "{args:?}:\n{help}");
    }
    let (_, top, _) = kestrel(&["--help"]);
    assert!(top.contains(EXIT_FOOTER), "{top}");
    // Usage errors exit 1, as the footer says (2 is a refused document).
    let (code, _, err) = kestrel(&["run", "--no-such-flag"]);
    assert_eq!(code, 1, "{err}");
    let (code, _, _) = kestrel(&["print"]);
    assert_eq!(code, 1);
}

#[test]
fn kestrel_paths_and_help_name_the_config_and_data_directories() {
    let (code, out, _) = kestrel(&["paths", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let config = v["config"].as_str().expect("config dir");
    let sessions = v["sessions"].as_str().expect("sessions dir");
    assert!(config.ends_with("kestrel"), "{config}");
    assert!(sessions.ends_with("sessions"), "{sessions}");
    let (_, text, _) = kestrel(&["paths"]);
    assert!(text.contains(config) && text.contains(sessions), "{text}");
    let (_, top, _) = kestrel(&["--help"]);
    assert!(top.contains(config) && top.contains(sessions), "{top}");
    assert!(top.contains("keys.toml"), "{top}");
}

/// Files the data verbs are run on: a Bus (from `agent --bus`) and shard files.
struct Fixtures {
    dir: PathBuf,
    bus: PathBuf,
    shard: PathBuf,
}

fn fixtures(name: &str) -> Fixtures {
    let dir = tmp(name);
    let bus = dir.join("a.bus.jsonl");
    let (code, _, err) = kestrel(&[
        "agent",
        "--tape",
        TAPE,
        "--author",
        "examples/house-agent.jsonl",
        "--bus",
        s(&bus),
    ]);
    assert_eq!(code, 0, "{err}");
    let shard = dir.join("shards/shard-0.jsonl");
    let (code, _, err) = kestrel(&[
        "grade",
        "examples/grade.kestrel",
        "--tapes",
        "tapes/",
        "--draws",
        "2",
        "--resamples",
        "50",
        "--shard",
        "0/1",
        "--out",
        s(&shard),
    ]);
    assert_eq!(code, 0, "{err}");
    Fixtures { dir, bus, shard }
}

/// A run of every verb that offers `--json`, on the files of `f`.
fn json_runs(f: &Fixtures) -> Vec<Vec<&str>> {
    vec![
        vec!["parse", "examples/chase.kestrel", "--json"],
        vec!["check", "examples/chase.kestrel", "--json"],
        vec!["rules", "--json"],
        vec!["frame", "--tape", TAPE, "--at", "11:30", "--json"],
        vec![
            "run",
            "--tape",
            TAPE,
            "--plans",
            "examples/run-desk.kestrel",
            "--json",
        ],
        vec![
            "agent",
            "--tape",
            TAPE,
            "--author",
            "examples/house-agent.jsonl",
            "--json",
        ],
        vec![
            "grade",
            "examples/grade.kestrel",
            "--tapes",
            "tapes/",
            "--draws",
            "2",
            "--resamples",
            "50",
            "--json",
        ],
        vec!["grade", "merge", s(&f.shard), "--json"],
        vec!["turn", "examples/turns/02-stand-down.txt", "--json"],
        vec!["tokens", "examples/turns/02-stand-down.txt", "--json"],
        vec!["errors", "report", s(&f.bus), "--json"],
        vec!["paths", "--json"],
        vec!["tape", "info", TAPE, "--json"],
    ]
}

#[test]
fn every_data_verb_accepts_json() {
    let f = fixtures("json");
    let runs = json_runs(&f);
    let mut ran = BTreeSet::new();
    for args in &runs {
        let (code, out, err) = kestrel(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        let v: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"));
        assert!(v.is_object() || v.is_array(), "{args:?}");
        let verb: Vec<&str> = args
            .iter()
            .take_while(|a| !a.contains(['-', '/', '.']))
            .copied()
            .collect();
        ran.insert(verb.join(" "));
    }
    // Every verb whose --help offers --json is in the list above.
    let offering: BTreeSet<String> = all_verbs()
        .into_iter()
        .filter(|v| {
            let mut a: Vec<&str> = v.iter().map(String::as_str).collect();
            a.push("--help");
            kestrel(&a)
                .1
                .lines()
                .any(|l| l.trim_start().starts_with("--json"))
        })
        .map(|v| v.join(" "))
        .collect();
    assert_eq!(offering, ran);
    // `check --format json` stays an alias.
    let (_, a, _) = kestrel(&["check", "examples/chase.kestrel", "--json"]);
    let (_, b, _) = kestrel(&["check", "examples/chase.kestrel", "--format", "json"]);
    assert_eq!(a, b);
    let _ = std::fs::remove_dir_all(&f.dir);
}

/// `tokens --json` and `turn --json` (and `check`, `rules`, `frame`, `parse`) printed
/// indented JSON with keys unsorted and a float's every digit (`"saving_pct":
/// 19.767441860465116`), where `errors report --json` and `grade --json` print one canonical
/// line. Every `--json` is now one line, the canonical form of what it holds (keys sorted
/// at every level), and `saving_pct` an exact 4-decimal rounding.
#[test]
fn every_json_is_one_canonical_line() {
    let f = fixtures("json-line");
    let mut runs = json_runs(&f);
    runs.push(vec![
        "tokens",
        "--json",
        "examples/turns/01-rider-with-journal.txt",
    ]);
    runs.push(vec![
        "turn",
        "--json",
        "examples/turns/01-rider-with-journal.txt",
    ]);
    for args in &runs {
        let (code, out, err) = kestrel(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert_eq!(out.lines().count(), 1, "{args:?}: {out}");
        let v: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"));
        assert_eq!(
            out.trim_end(),
            kestrel_desk::bus::canonical_json(&v),
            "{args:?}"
        );
    }
    // The saving as a percentage of the envelope, rounded half up to 4 decimals.
    let (_, out, _) = kestrel(&[
        "tokens",
        "--json",
        "examples/turns/01-rider-with-journal.txt",
    ]);
    let (_, turn, _) = kestrel(&["turn", "--json", "examples/turns/01-rider-with-journal.txt"]);
    let turn: serde_json::Value = serde_json::from_str(&turn).unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for m in [&v[0], &turn["tokens"]] {
        let saving = m["saving"].as_i64().expect("a saving");
        let envelope = m["envelope"].as_i64().expect("an envelope");
        assert!(saving > 0 && envelope > 0, "{m}");
        let scaled = (saving * 2_000_000 + envelope) / (2 * envelope);
        let want = format!("{}.{:04}", scaled / 10_000, scaled % 10_000);
        let want = want.trim_end_matches('0').trim_end_matches('.');
        assert_eq!(m["saving_pct"].to_string(), want, "{m}");
    }
    let _ = std::fs::remove_dir_all(&f.dir);
}

#[test]
fn run_agent_and_grade_default_to_the_same_r() {
    let (code, out, err) = kestrel(&[
        "run",
        "--tape",
        TAPE,
        "--plans",
        "examples/run-desk.kestrel",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let run: serde_json::Value = serde_json::from_str(&out).expect("json");
    let (_, out, _) = kestrel(&[
        "agent",
        "--tape",
        TAPE,
        "--author",
        "examples/house-agent.jsonl",
        "--json",
    ]);
    let agent: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(run["r_usd"], 1000.0);
    assert_eq!(run["r_usd"], agent["r_usd"]);
    // An explicit --r-usd is the same run as the default.
    let (_, out, _) = kestrel(&[
        "run",
        "--tape",
        TAPE,
        "--plans",
        "examples/run-desk.kestrel",
        "--r-usd",
        "1000",
        "--json",
    ]);
    let explicit: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(explicit["determinism_hash"], run["determinism_hash"]);
    let (_, help, _) = kestrel(&["grade", "--help"]);
    assert!(help.contains("[default: 1000]"), "{help}");
}

#[test]
fn print_takes_many_files() {
    let (code, both, _) = kestrel(&["print", "examples/chase.kestrel", "examples/spread.kestrel"]);
    assert_eq!(code, 0);
    let (_, one, _) = kestrel(&["print", "examples/chase.kestrel"]);
    let (_, two, _) = kestrel(&["print", "examples/spread.kestrel"]);
    assert_eq!(
        both,
        format!("# == examples/chase.kestrel\n{one}# == examples/spread.kestrel\n{two}")
    );
    // The whole output is still a document.
    let d = tmp("print");
    let joined = d.join("both.kestrel");
    std::fs::write(&joined, &both).expect("write");
    let (code, _, err) = kestrel(&["check", s(&joined)]);
    assert_eq!(code, 0, "{err}");
    // A refused file among good ones: the good ones print, the exit code is 2.
    let bad = d.join("bad.kestrel");
    std::fs::write(&bad, "PLAN x\n").expect("write");
    let (code, out, err) = kestrel(&["print", "examples/chase.kestrel", s(&bad)]);
    assert_eq!(code, 2, "{err}");
    assert!(out.contains(one.trim_end()), "{out}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn wrong_kinds_of_file_say_what_they_are() {
    let (code, _, err) = kestrel(&[
        "run",
        "--tape",
        "examples/chase.kestrel",
        "--plans",
        "examples/chase.kestrel",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains(
            "error code=USAGE message=examples/chase.kestrel is a Kestrel document, not a tape"
        ),
        "{err}"
    );
    assert!(!err.contains("invalid-json"), "{err}");
    for args in [
        vec!["check", TAPE],
        vec!["print", TAPE],
        vec!["run", "--tape", TAPE, "--plans", TAPE],
    ] {
        let (code, _, err) = kestrel(&args);
        assert_eq!(code, 1, "{args:?}");
        assert!(
            err.contains(&format!("{TAPE} is a tape")),
            "{args:?}: {err}"
        );
        assert!(err.contains("not a Kestrel document"), "{args:?}: {err}");
        assert!(err.contains(&format!("--tape {TAPE}")), "{args:?}: {err}");
    }
    // A missing tape names the path and says so; no `line=0`.
    for args in [
        vec![
            "run",
            "--tape",
            "no/such.jsonl",
            "--plans",
            "examples/chase.kestrel",
        ],
        vec!["frame", "--tape", "no/such.jsonl", "--at", "10:00"],
        vec![
            "agent",
            "--tape",
            "no/such.jsonl",
            "--author",
            "examples/house-agent.jsonl",
        ],
    ] {
        let (code, _, err) = kestrel(&args);
        assert_eq!(code, 1, "{args:?}");
        assert!(
            err.contains("no/such.jsonl: no such file"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("line=0"), "{args:?}: {err}");
    }
    // A directory and a saved Bus given as a tape.
    let (_, _, err) = kestrel(&["frame", "--tape", "tapes", "--at", "10:00"]);
    assert!(err.contains("tapes is a directory, not a tape"), "{err}");
    // A directory given as a document is named the same way (it was `code=IO ... Is a
    // directory (os error 21)`), and a tape written into a missing directory is an I/O
    // error (it was `code=USAGE` with the os error).
    for verb in ["check", "print"] {
        let (code, _, err) = kestrel(&[verb, "tapes"]);
        assert_eq!(code, 1, "{verb}");
        assert_eq!(
            err,
            "error code=USAGE message=tapes is a directory, not a Kestrel document\n"
        );
    }
    for verb in ["turn", "tokens"] {
        let (code, _, err) = kestrel(&[verb, "tapes"]);
        assert_eq!(code, 1, "{verb}");
        assert_eq!(
            err,
            "error code=USAGE message=tapes is a directory, not a file\n"
        );
    }
    let (code, _, err) = kestrel(&["tape", "gen", "-o", "/no/such/dir/t.jsonl"]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "error code=IO message=cannot write /no/such/dir/t.jsonl: no such directory\n"
    );
    // `--bus` names the file asked for, not the temporary one beside it.
    let (code, _, err) = kestrel(&[
        "run",
        "--tape",
        TAPE,
        "--plans",
        "examples/chase.kestrel",
        "--bus",
        "/no/such/dir/b.jsonl",
    ]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "error code=IO message=cannot write /no/such/dir/b.jsonl: no such directory\n"
    );
    let f = tmp("kinds");
    let bus = f.join("s.bus.jsonl");
    let (code, _, _) = kestrel(&[
        "run",
        "--tape",
        TAPE,
        "--plans",
        "examples/chase.kestrel",
        "--bus",
        s(&bus),
    ]);
    assert_eq!(code, 0);
    let (_, _, err) = kestrel(&["frame", "--tape", s(&bus), "--at", "10:00"]);
    assert!(err.contains("is a saved Bus"), "{err}");
    let _ = std::fs::remove_dir_all(&f);
}

#[test]
fn tape_gen_outputs_regimes_dates_and_terminals() {
    let d = tmp("gen");
    // -o FILE.jsonl with --count > 1 is refused, and nothing is created.
    let (code, _, err) = kestrel_in(&d, &["tape", "gen", "--count", "2", "-o", "file.jsonl"]);
    assert_eq!(code, 1);
    assert!(err.contains("-o is a directory"), "{err}");
    assert!(!d.join("file.jsonl").exists());
    // A family whose seeds or dates would wrap is refused: the seed wrapped to 0, and the
    // dates stood still at 9999-12-31 (two sessions of one date).
    let (code, _, err) = kestrel_in(
        &d,
        &[
            "tape",
            "gen",
            "--count",
            "2",
            "--seed",
            "18446744073709551615",
            "-o",
            "wrap",
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("code=USAGE") && err.contains("largest seed"),
        "{err}"
    );
    let (code, _, err) = kestrel_in(
        &d,
        &[
            "tape",
            "gen",
            "--count",
            "3",
            "--date",
            "9999-12-30",
            "-o",
            "wrap",
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("code=USAGE") && err.contains("9999-12-31"),
        "{err}"
    );
    // A count past every weekday left is refused before anything is made (it aborted,
    // allocating the family first).
    let (code, _, err) = kestrel_in(
        &d,
        &["tape", "gen", "--count", "100000000000", "-o", "wrap"],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("code=USAGE") && err.contains("9999-12-31"),
        "{err}"
    );
    assert!(!d.join("wrap").exists(), "nothing was written");
    // The last date itself is a session.
    let (code, _, err) = kestrel_in(
        &d,
        &[
            "tape",
            "gen",
            "--count",
            "2",
            "--date",
            "9999-12-30",
            "-o",
            "end",
        ],
    );
    assert_eq!(code, 0, "{err}");
    // --regime and --date hold for every member of a family.
    let (code, out, err) = kestrel_in(
        &d,
        &[
            "tape",
            "gen",
            "--count",
            "3",
            "--regime",
            "shock",
            "--date",
            "2025-04-10",
            "--seed",
            "4",
            "-o",
            "fam",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "no note any more: {err}");
    let files: Vec<&str> = out.lines().collect();
    assert_eq!(
        files,
        [
            "fam/shock-2025-04-10-s4.jsonl",
            "fam/shock-2025-04-11-s5.jsonl",
            "fam/shock-2025-04-14-s6.jsonl"
        ]
    );
    for (f, date) in files.iter().zip(["2025-04-10", "2025-04-11", "2025-04-14"]) {
        let text = std::fs::read_to_string(d.join(f)).expect("tape");
        let header: serde_json::Value =
            serde_json::from_str(text.lines().next().expect("header")).expect("json");
        assert_eq!(header["date"], date, "{f}");
        assert!(
            header["source"]
                .as_str()
                .unwrap_or("")
                .contains("regime=shock"),
            "{header}"
        );
    }
    // Weekends are refused.
    for (date, day) in [("2025-04-12", "Saturday"), ("2025-04-13", "Sunday")] {
        let (code, _, err) = kestrel_in(&d, &["tape", "gen", "--date", date, "-o", "x.jsonl"]);
        assert_eq!(code, 1);
        assert!(err.contains(&format!("is a {day}")), "{err}");
    }
    assert!(!d.join("x.jsonl").exists());
    // `-o -` writes to standard output (here a pipe).
    let (code, out, _) = kestrel_in(&d, &["tape", "gen", "-o", "-"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("{\"type\":\"header\""));
    // Without -o at a terminal: refused. `script` gives the verb a terminal.
    let k = env!("CARGO_BIN_EXE_kestrel");
    match Command::new("script")
        .args(["-qec", &format!("'{k}' tape gen; echo rc=$?"), "/dev/null"])
        .current_dir(&d)
        .stdin(Stdio::null())
        .output()
    {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(text.contains("standard output is a terminal"), "{text}");
            assert!(text.contains("rc=1"), "{text}");
            assert!(!text.contains("\"type\":\"header\""), "{text}");
        }
        _ => println!("SKIP: no `script` to give kestrel a terminal"),
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn frame_outside_the_session_names_its_hours() {
    for (at, side) in [("08:00", "before the open"), ("17:00", "after the close")] {
        let (code, out, err) = kestrel(&["frame", "--tape", TAPE, "--at", at]);
        assert_eq!(code, 1, "{at}");
        assert!(out.is_empty(), "{at}: {out}");
        assert!(
            err.contains(&format!(
                "error code=USAGE message=--at {at} is {side}: the session runs 09:30 to 16:00"
            )),
            "{err}"
        );
    }
    let (code, _, _) = kestrel(&["frame", "--tape", TAPE, "--at", "16:00"]);
    assert_eq!(code, 0);
}

/// A tape cut short (its first 100 lines) is refused `ends-early` by `frame` at a time past
/// the cut, as `run` refuses it: it used to frame 15:00 with the market as it stood at
/// 09:30:49, the 09:30 bar shown as complete. A time before the cut frames as before.
#[test]
fn frame_refuses_a_tape_cut_short_past_its_end() {
    let d = tmp("frame-cut");
    let whole = std::fs::read_to_string(TAPE).expect("tape");
    let cut: String = whole.lines().take(100).map(|l| format!("{l}\n")).collect();
    let path = d.join("cut.jsonl");
    std::fs::write(&path, cut).expect("write");
    let (code, out, err) = kestrel(&["frame", "--tape", s(&path), "--at", "15:00"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("error code=TAPE line=101 message=ends-early"),
        "{err}"
    );
    let (code, _, err) = kestrel(&[
        "run",
        "--tape",
        s(&path),
        "--plans",
        "examples/chase.kestrel",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("ends-early"), "{err}");
    let (code, out, err) = kestrel(&["frame", "--tape", s(&path), "--at", "09:30:10"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("FRAME tape="), "{out}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn grade_names_the_tapes_it_was_given_and_out_is_never_stale() {
    let d = tmp("grade");
    let fam = d.join("fam");
    let (code, _, err) = kestrel(&["tape", "gen", "--count", "2", "--seed", "9", "-o", s(&fam)]);
    assert_eq!(code, 0, "{err}");
    let grade = |extra: &[&str]| {
        let mut a = vec![
            "grade",
            "examples/grade.kestrel",
            "--draws",
            "2",
            "--resamples",
            "50",
        ];
        a.extend_from_slice(extra);
        kestrel(&a)
    };
    let (code, out, err) = grade(&["--tapes", s(&fam)]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!(
            "  tapes from --tapes {} ({}/*.jsonl), file names matching *",
            s(&fam),
            s(&fam)
        )),
        "{out}"
    );
    assert!(out.contains("tapes 2"), "{out}");
    // An empty directory is reported against what was given.
    let empty = d.join("empty");
    std::fs::create_dir_all(&empty).expect("dir");
    let (code, _, err) = grade(&["--tapes", s(&empty)]);
    assert_eq!(code, 1);
    assert!(err.contains("code=USAGE"), "{err}");
    assert!(
        err.contains(&format!("no tapes in --tapes {}", s(&empty))),
        "{err}"
    );
    // --out creates its directory; shards of one run merge into --out.
    let shard = |i: u32| d.join(format!("out/shards/shard-{i}.jsonl"));
    for i in 0..2 {
        let (code, _, err) = grade(&[
            "--tapes",
            s(&fam),
            "--shard",
            &format!("{i}/2"),
            "--out",
            s(&shard(i)),
        ]);
        assert_eq!(code, 0, "{err}");
    }
    let report = d.join("out/report/report.json");
    let (code, _, err) = kestrel(&[
        "grade",
        "merge",
        s(&shard(0)),
        s(&shard(1)),
        "--json",
        "--out",
        s(&report),
    ]);
    assert_eq!(code, 0, "{err}");
    let (_, single, _) = grade(&["--tapes", s(&fam), "--json"]);
    assert_eq!(std::fs::read_to_string(&report).expect("report"), single);
    // A refused merge (a shard missing) leaves the earlier report as it was and says it is
    // not this run's (before 2026-12-06 it removed it: a typo lost a finished report).
    let before = std::fs::read(&report).expect("report");
    let (code, _, err) = kestrel(&[
        "grade",
        "merge",
        s(&shard(0)),
        "--json",
        "--out",
        s(&report),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("code=SHARD"), "{err}");
    assert!(err.contains("missing"), "{err}");
    assert!(
        err.contains(
            "is left as it was (this run was refused before it began): it is not this run's output"
        ),
        "{err}"
    );
    assert_eq!(std::fs::read(&report).expect("report"), before);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn fmt_check_diff_prints_a_unified_diff() {
    let d = tmp("diff");
    let f = d.join("a.kestrel");
    std::fs::write(
        &f,
        "PLAN  x budget 0.2R ttl 15:00\n  WHEN spot > hod\n  DO buy 1 +1 C @ fair\n",
    )
    .expect("write");
    let (code, out, _) = kestrel(&["fmt", "--check", "--diff", s(&f)]);
    assert_eq!(code, 2);
    let want = format!(
        "not canonical: {p}\n--- {p}\n+++ {p} (canonical)\n@@ -1,3 +1,3 @@\n-PLAN  x budget 0.2R ttl 15:00\n+PLAN x budget 0.2R ttl 15:00\n   WHEN spot > hod\n   DO buy 1 +1 C @ fair\n",
        p = s(&f)
    );
    assert_eq!(out, want);
    // The file is untouched; --diff needs --check.
    assert!(
        std::fs::read_to_string(&f)
            .expect("read")
            .starts_with("PLAN  x")
    );
    let (code, _, _) = kestrel(&["fmt", "--diff", s(&f)]);
    assert_eq!(code, 1);
    // A canonical file prints nothing.
    let (code, _, _) = kestrel(&["fmt", s(&f)]);
    assert_eq!(code, 0);
    let (code, out, _) = kestrel(&["fmt", "--check", "--diff", s(&f)]);
    assert_eq!((code, out.as_str()), (0, ""));
    let _ = std::fs::remove_dir_all(&d);
}

/// The card sizes docs/tokens.md and docs/turns.md give are the ones `kestrel card` reports
/// (they said 1,930 and 1,971 after the card had grown to 1,977 and 2,018).
#[test]
fn the_docs_give_the_card_sizes_the_card_reports() {
    let size = |args: &[&str]| {
        let mut all = vec!["card"];
        all.extend_from_slice(args);
        let (code, _, err) = kestrel(&all);
        assert_eq!(code, 0, "{err}");
        let n: usize = err
            .lines()
            .find_map(|l| l.strip_prefix("card: "))
            .and_then(|l| l.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no size in {err}"));
        // As the docs write it: 1,977.
        format!("{},{:03}", n / 1000, n % 1000)
    };
    let mid = size(&[]);
    let open = size(&["--phase", "open", "--profile", "viewshop-v2"]);
    let tokens = std::fs::read_to_string("docs/tokens.md").expect("docs/tokens.md");
    let tokens = tokens.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        tokens.contains(&format!(
            "the whole-language card is {mid} cl100k tokens with the mid-session menu of `authoring-v2`, and {open} with the OPEN menu of `viewshop-v2`"
        )),
        "docs/tokens.md: the card is {mid} / {open}"
    );
    let turns = std::fs::read_to_string("docs/turns.md").expect("docs/turns.md");
    assert!(
        turns.contains(&format!("{mid} cl100k tokens at a mid-session wake")),
        "docs/turns.md: the card is {mid}"
    );
}

/// A verb that needs a subcommand, given none, prints its help and the usage error a
/// missing argument is (it exited 0). The coded line comes first, as every other usage
/// error's does (it came after the whole help, where a reader of the first line missed it).
#[test]
fn a_verb_without_its_subcommand_is_a_usage_error() {
    for (verb, subs) in [("tape", "gen, import, info"), ("errors", "report")] {
        let (code, out, err) = kestrel(&[verb]);
        assert_eq!(code, 1, "{verb}: {err}");
        assert!(out.is_empty(), "{out}");
        assert!(err.contains(&format!("Usage: kestrel {verb}")), "{err}");
        assert!(
            err.contains(&format!(
                "error code=USAGE message=kestrel {verb} needs a subcommand: {subs}"
            )),
            "{err}"
        );
        assert!(
            err.starts_with(&format!(
                "error code=USAGE message=kestrel {verb} needs a subcommand: {subs}"
            )),
            "{err}"
        );
        assert_eq!(err.matches("error code=").count(), 1, "{err}");
        // As a bad flag's: the coded line first, then the verb's usage.
        let (code, _, bad) = kestrel(&[verb, "--bogus"]);
        assert_eq!(code, 1, "{bad}");
        assert!(bad.starts_with("error code=USAGE message="), "{bad}");
    }
}

/// `tokens` on a file past the reply limit (256 KiB) counts its tokens: it printed the
/// file's size in bytes as its tokens (a turn's reply that large is charged a token a byte,
/// unread; a file asked to be counted is counted).
#[test]
fn tokens_counts_a_file_past_the_reply_limit() {
    let d = tmp("tokens-big");
    let one = std::fs::read_to_string("examples/chase.kestrel").expect("example");
    let big = one.repeat(300_000 / one.len() + 1);
    assert!(big.len() > 256 * 1024);
    let f = d.join("big.kestrel");
    std::fs::write(&f, &big).expect("write");
    let (code, out, err) = kestrel(&["tokens", "--json", s(&f)]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let want =
        kestrel_desk::tokens::count(&big, kestrel_desk::tokens::Encoding::Cl100k).expect("count");
    assert_eq!(v[0]["reply"], want, "{out}");
    assert!(
        want < big.len() / 2,
        "{want} tokens for {} bytes",
        big.len()
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn turn_tokens_and_grammar_speak_plainly() {
    let d = tmp("turn");
    let bad = d.join("bad.txt");
    std::fs::write(&bad, "PLAN x\n").expect("write");
    let (code, out, _) = kestrel(&["turn", s(&bad)]);
    assert_eq!(code, 2);
    assert_eq!(out.lines().next(), Some("outcome: invalid"));
    let (_, out, _) = kestrel(&["turn", "examples/turns/01-rider-with-journal.txt"]);
    assert!(out.starts_with("outcome: supersede (authored)"), "{out}");
    // A model's empty reply is a provider error: refused with its coded line (exit 2 said
    // nothing on stderr).
    let empty = d.join("empty.txt");
    std::fs::write(&empty, "").expect("write");
    let (code, out, err) = kestrel(&["turn", s(&empty), "--author", "model"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.starts_with("outcome: provider-error"), "{out}");
    assert!(
        err.contains(&format!("{}: error code=PROVIDER message=", s(&empty))),
        "{err}"
    );
    // tokens warns about a tape and about a file that is not a valid document, and counts.
    let (code, out, err) = kestrel(&["tokens", TAPE, s(&bad)]);
    assert_eq!(code, 0);
    // Coded, as the README says every warning is.
    assert!(
        err.contains(&format!(
            "warning code=NOT-A-REPLY message={TAPE} is a tape"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "warning code=NOT-A-TURN message={} is not a valid document or turn",
            s(&bad)
        )),
        "{err}"
    );
    assert_eq!(out.lines().count(), 2, "{out}");
    let (_, err_ok, _) = kestrel(&["tokens", "examples/turns/02-stand-down.txt"]);
    assert!(!err_ok.contains("warning"));
    // Help and grammar cite pages of this repository.
    let (_, help, _) = kestrel(&["tokens", "--help"]);
    let (_, gbnf, _) = kestrel(&["grammar"]);
    for text in [&help, &gbnf] {
        assert!(
            !text.contains("seed 000") && !text.contains("LANGUAGE.md section"),
            "{text}"
        );
        assert!(text.contains("docs/"), "{text}");
    }
    for cited in ["docs/tokens.md", "docs/language.md"] {
        assert!(Path::new(env!("CARGO_MANIFEST_DIR")).join(cited).is_file());
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The end column of each whitespace-separated cell of a line.
fn cell_ends(line: &str) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut prev = ' ';
    for (i, c) in line.chars().enumerate() {
        if c == ' ' && prev != ' ' {
            ends.push(i);
        }
        prev = c;
    }
    if prev != ' ' {
        ends.push(line.chars().count());
    }
    ends
}

#[test]
fn run_report_is_in_cents_and_aligned_and_the_readme_shows_it() {
    let (code, out, err) = kestrel(&[
        "run",
        "--tape",
        TAPE,
        "--plans",
        "examples/run-desk.kestrel",
    ]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    let header = lines[1];
    assert!(
        header.starts_with("plan") && header.ends_with("mae R"),
        "{header}"
    );
    let head_cells: Vec<&str> = header
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(
        head_cells,
        [
            "plan", "state", "fires", "fills", "real $", "open $", "pnl $", "pnl R", "mae $",
            "mae R"
        ]
    );
    // Right-aligned columns end where their heading ends ("pnl $" is two words).
    let h: Vec<usize> = cell_ends(header);
    let numeric_ends = [h[2], h[3], h[5], h[7], h[9], h[11], h[13], h[15]];
    let rows: Vec<&str> = lines[2..]
        .iter()
        // The plan rows; the notes under them (a plan de-armed, vetoed or clamped) are not.
        .take_while(|l| !l.starts_with("book pnl") && !l.starts_with("note:"))
        .copied()
        .collect();
    assert_eq!(rows.len(), 4);
    for r in &rows {
        let cells: Vec<&str> = r.split_whitespace().collect();
        assert_eq!(cells.len(), 10, "{r}");
        assert_eq!(cell_ends(r)[2..], numeric_ends, "{r}\n{header}");
        for money in [cells[4], cells[5], cells[6], cells[8]] {
            assert_eq!(
                money.split('.').nth(1).map(str::len),
                Some(2),
                "{r}: {money}"
            );
        }
        for r_amount in [cells[7], cells[9]] {
            assert_eq!(
                r_amount.split('.').nth(1).map(str::len),
                Some(4),
                "{r}: {r_amount}"
            );
        }
    }
    let book = lines
        .iter()
        .find(|l| l.starts_with("book pnl $"))
        .expect("book line");
    let dollars = book
        .trim_start_matches("book pnl $")
        .split(' ')
        .next()
        .unwrap_or("");
    assert_eq!(dollars.split('.').nth(1).map(str::len), Some(2), "{book}");
    // The README's sample is this output (its elided lines aside).
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README");
    let cmd = format!("$ kestrel run --tape {TAPE} --plans examples/run-desk.kestrel");
    let sample: Vec<&str> = readme
        .lines()
        .skip_while(|l| *l != cmd)
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .collect();
    assert!(sample.len() >= 4, "README sample after {cmd:?}");
    // Line for line, in order: a line the output prints and the sample leaves out (the
    // VETO note under the table) read as if the run were quieter than it is.
    assert_eq!(
        sample.len(),
        lines.len(),
        "the README sample and the output differ in lines:\n{}\n--\n{out}",
        sample.join("\n")
    );
    for (l, o) in sample.iter().zip(&lines) {
        match l.strip_suffix("...") {
            Some(prefix) => assert!(o.starts_with(prefix), "README: {l}\noutput: {o}"),
            None => assert_eq!(l, o, "README line not the output's\n{out}"),
        }
    }
}

#[test]
fn the_readme_verb_table_matches_the_flags() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README");
    let table: Vec<&str> = readme
        .lines()
        .skip_while(|l| *l != "## The verbs")
        .skip_while(|l| !l.starts_with("| verb"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert!(table.len() >= 15, "{table:?}");
    let mut seen = BTreeSet::new();
    for row in table {
        // `\|` is a `|` inside a cell (alternatives); it is not a column break.
        let row = row.replace("\\|", "¦");
        let usage = row.split('|').nth(1).unwrap_or("");
        // Each `kestrel VERB …` span of the first column (grade has two).
        for span in usage.split('`').filter(|s| s.starts_with("kestrel")) {
            let words: Vec<&str> = span.split_whitespace().skip(1).collect();
            let verb: Vec<&str> = words
                .iter()
                .take_while(|w| w.chars().all(|c| c.is_ascii_lowercase()))
                .copied()
                .collect();
            if verb.is_empty() {
                continue; // `kestrel` alone: the desk
            }
            let mut args = verb.clone();
            args.push("--help");
            let (code, help, _) = kestrel(&args);
            assert_eq!(code, 0, "{span}");
            for flag in words.iter().flat_map(|w| w.split(['[', ']', '¦'])) {
                if flag.starts_with("--") {
                    assert!(
                        help.lines().any(|l| l.trim_start().starts_with(flag)
                            || l.contains(&format!(", {flag}"))),
                        "README `{span}`: {flag} is not a flag of kestrel {}",
                        verb.join(" ")
                    );
                }
            }
            seen.insert(verb.join(" "));
        }
    }
    // Every verb is in the table.
    for v in all_verbs() {
        let name = v.join(" ");
        if name == "tape" || name == "errors" {
            continue; // groups; their sub-verbs are rows
        }
        assert!(
            seen.contains(&name),
            "README's verb table has no row for {name}"
        );
    }
}

#[test]
fn the_mcp_run_tool_defaults_r_usd_like_kestrel_run() {
    use kestrel_desk::mcp::tools;
    let plans = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/run-desk.kestrel"),
    )
    .expect("plans");
    let a: tools::RunArgs = serde_json::from_value(serde_json::json!({
        "plans": plans,
        "tape": "trend-2025-04-09-s1",
    }))
    .expect("r_usd may be left out");
    assert_eq!(a.r_usd, "1000");
    let r = tools::run(&a);
    assert!(r.ok, "{}", r.text);
    let (_, out, _) = kestrel(&[
        "run",
        "--tape",
        TAPE,
        "--plans",
        "examples/run-desk.kestrel",
        "--json",
    ]);
    let cli: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        r.data["determinism_hash"], cli["determinism_hash"],
        "{}",
        r.data
    );
    assert_eq!(r.data["r_usd"], cli["r_usd"]);
}

/// A time is taken as a person types it: `9:45` is `09:45` (the Frame is the same bytes),
/// and a time that is not one is a coded usage error.
#[test]
fn frame_takes_an_hour_without_its_leading_zero() {
    let (code, short, err) = kestrel(&["frame", "--tape", TAPE, "--at", "9:45"]);
    assert_eq!(code, 0, "{err}");
    let (_, padded, _) = kestrel(&["frame", "--tape", TAPE, "--at", "09:45"]);
    assert_eq!(short, padded);
    assert!(short.contains("t=09:45:00"), "{short}");
    for bad in ["9:5", "945", "9h45"] {
        let (code, _, err) = kestrel(&["frame", "--tape", TAPE, "--at", bad]);
        assert_eq!(code, 1, "{bad}");
        assert!(
            err.starts_with("error code=USAGE") && err.contains("is not a time"),
            "{bad}: {err}"
        );
    }
}

/// `run --plans` with documents that arm nothing (empty, only comments, only a USING, only
/// an IMPORT, which `run` does not follow) runs the tape, exit 0, with a coded warning on
/// stderr; a file with a PLAN gets none.
#[test]
fn run_says_when_its_plans_arm_nothing() {
    let d = tmp("noplans");
    let empty = d.join("empty.kestrel");
    let using = d.join("using.kestrel");
    std::fs::write(&empty, "# nothing yet\n").expect("write");
    std::fs::write(&using, "USING signal SPX exec SPY 0dte\n").expect("write");
    let import = d.join("import.kestrel");
    let chase = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/chase.kestrel");
    std::fs::write(
        &import,
        format!("IMPORT breakout-chase FROM {}\n", chase.display()),
    )
    .expect("write");
    for files in [
        vec![s(&empty)],
        vec![s(&empty), s(&using)],
        vec![s(&import)],
    ] {
        let mut args = vec!["run", "--tape", TAPE];
        for f in &files {
            args.extend(["--plans", f]);
        }
        let (code, out, err) = kestrel(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        let verb = if files.len() == 1 { "holds" } else { "hold" };
        assert!(
            err.contains(&format!(
                "warning code=NO-PLANS message=--plans {} {verb} no PLAN",
                files.join(", ")
            )),
            "{args:?}: {err}"
        );
        assert!(!out.is_empty(), "the report is still printed");
    }
    let (code, _, err) = kestrel(&["run", "--tape", TAPE, "--plans", "examples/chase.kestrel"]);
    assert_eq!(code, 0);
    assert!(!err.contains("NO-PLANS"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `check` of a document with nothing in it (empty, only comments, only blank lines) said
/// `ok: … (0 statements)` and nothing more, while `run` of it warns `code=NO-PLANS`: it now
/// gives the same coded warning, exit 0 (a warning does not change the exit code), in text
/// and `--json`. A document with statements but no PLAN (a VIEW and its WAKEs) is for other
/// verbs and gets none, nor does an empty turn (a pass).
#[test]
fn check_says_when_a_document_holds_nothing_as_run_does() {
    let d = tmp("check-noplans");
    let empty = d.join("empty.kestrel");
    let comments = d.join("comments.kestrel");
    let blank = d.join("blank.kestrel");
    std::fs::write(&empty, "").expect("write");
    std::fs::write(&comments, "# nothing yet\n# still nothing\n").expect("write");
    std::fs::write(&blank, "\n   \n\t\n").expect("write");
    for f in [&empty, &comments, &blank] {
        let (_, _, run_err) = kestrel(&["run", "--tape", TAPE, "--plans", s(f)]);
        let run_line = run_err
            .lines()
            .find(|l| l.starts_with("warning code=NO-PLANS"))
            .unwrap_or_else(|| panic!("run warns: {run_err}"));
        for json in [false, true] {
            let mut args = vec!["check", s(f)];
            if json {
                args.push("--json");
            }
            let (code, out, err) = kestrel(&args);
            assert_eq!(code, 0, "{args:?}: {err}");
            let line = format!("warning code=NO-PLANS message={} holds no PLAN", s(f));
            assert!(err.contains(&line), "{args:?}: {err}");
            // The same message as run's, naming the file as check was given it.
            assert_eq!(
                err.trim_end().split_once(" holds ").map(|x| x.1),
                run_line.split_once(" holds ").map(|x| x.1),
                "{err} / {run_line}"
            );
            assert!(out.contains("ok") || out.contains("\"ok\":true"), "{out}");
        }
    }
    for args in [
        vec!["check", "examples/chase.kestrel"],
        vec!["check", "examples/view-wake.kestrel"],
        vec!["check", "--turn", s(&empty)],
    ] {
        let (code, _, err) = kestrel(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(!err.contains("NO-PLANS"), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// An author given no time or no tokens is refused as a usage error (`--timeout 0` was
/// taken: a reply that came at once went through, any other timed out at once).
#[test]
fn an_author_needs_a_second_and_a_token() {
    for (flag, why) in [
        ("--timeout", "a timeout is at least 1 second"),
        ("--first-token-timeout", "a timeout is at least 1 second"),
        ("--max-tokens", "a reply needs at least 1 output token"),
    ] {
        let (code, _, err) = kestrel(&[
            "agent",
            "--tape",
            TAPE,
            "--author",
            "examples/house-agent.jsonl",
            flag,
            "0",
        ]);
        assert_eq!(code, 1, "{flag}: {err}");
        assert!(err.starts_with("error code=USAGE message="), "{err}");
        assert!(err.contains(why), "{flag}: {err}");
    }
}

/// An author's timeouts are at most a day (`--timeout 18446744073709551615` was taken and
/// overflowed `Instant + Duration` at the first wake with a model author: exit 101, no Bus).
#[test]
fn an_author_timeout_is_at_most_a_day() {
    for flag in ["--timeout", "--first-token-timeout"] {
        for big in ["86401", "9223372036854775807", "18446744073709551615"] {
            let (code, _, err) = kestrel(&[
                "agent",
                "--tape",
                TAPE,
                "--author",
                "http://127.0.0.1:9/v1",
                flag,
                big,
            ]);
            assert_eq!(code, 1, "{flag} {big}: {err}");
            assert!(err.starts_with("error code=USAGE message="), "{err}");
            assert!(
                err.contains("a timeout is at most 86400 seconds (one day)"),
                "{flag} {big}: {err}"
            );
            assert!(!err.contains("panicked"), "{err}");
        }
        let (code, _, err) = kestrel(&[
            "agent",
            "--tape",
            TAPE,
            "--author",
            // A command is run with --timeout (a script of replies is refused it, 2026-12-06).
            "cmd:sh examples/command-author.sh",
            flag,
            "86400",
        ]);
        let used = flag == "--timeout";
        assert_eq!(
            code,
            if used { 0 } else { 1 },
            "{flag} 86400 is a day: {err}"
        );
        assert!(used || err.contains("is not used by a command"), "{err}");
    }
}

/// Escape sequences in a document or a reply are shown, never sent raw to the terminal:
/// `check`'s error quotes the token with visible Control Pictures (`␛`, `␇`), its snippet
/// too, with the caret under the token; `turn`'s text form shows the journal and the reason
/// the same way. `--json` keeps the text exact (escaped by JSON).
#[test]
fn escape_sequences_in_documents_and_replies_are_shown_not_obeyed() {
    let d = tmp("escapes");
    let doc = d.join("esc.kestrel");
    std::fs::write(
        &doc,
        "PLAN x budget 1R ttl +5m\n  WHEN spot > 1\n  DO buy 1 +1 C @ \u{1b}]0;pwned\u{7}fair\n",
    )
    .expect("write");
    let (code, _, err) = kestrel(&["check", s(&doc)]);
    assert_eq!(code, 2);
    assert!(!err.chars().any(|c| c.is_control() && c != '\n'), "{err:?}");
    assert!(err.contains("found `␛]0;pwned␇fair`"), "{err}");
    let reply = d.join("esc.txt");
    std::fs::write(
        &reply,
        "# hi \u{1b}[7mINVERSE\u{1b}[0m there\nSTAND-DOWN \u{1b}[2Jgone\n",
    )
    .expect("write");
    let (code, out, _) = kestrel(&["turn", s(&reply)]);
    assert_eq!(code, 0);
    assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out:?}");
    assert!(out.contains("reason: ␛[2Jgone"), "{out}");
    assert!(out.contains("hi ␛[7mINVERSE␛[0m there"), "{out}");
    let (_, json, _) = kestrel(&["turn", s(&reply), "--json"]);
    assert!(json.contains("\\u001b[2Jgone"), "{json}");
    // A refused reply's errors on stderr (turn) and its warning (tokens) too.
    let bad = d.join("bad.txt");
    std::fs::write(
        &bad,
        "PLAN x budget 1R ttl +5m\n  WHEN spot > 1\n  DO buy 1 +1 C @ \u{1b}]0;pwned\u{7}fair\n",
    )
    .expect("write");
    for verb in ["turn", "tokens"] {
        let (_, _, err) = kestrel(&[verb, s(&bad)]);
        assert!(err.contains("␛]0;pwned␇fair"), "{verb}: {err}");
        assert!(
            !err.chars().any(|c| c.is_control() && c != '\n'),
            "{verb}: {err:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The bundled tape, as an absolute path (for runs in a temporary directory).
fn tape_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(TAPE)
}

/// A command author that arms one plan at every wake, and its saved Bus.
fn command_author_bus(d: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = d.join("author.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ncat >/dev/null\nprintf 'PLAN a budget 0.1R ttl 15:30\\n  USING signal SPX exec SPY 0dte\\n  WHEN spot > 1\\n  DO buy 1 +1 C @ fair\\n  EXIT spot < vwap held 60s @ fair\\n'\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bus = d.join("a1.bus.jsonl");
    let (code, _, err) = kestrel_in(
        d,
        &[
            "agent",
            "--tape",
            s(&tape_path()),
            "--author",
            "./author.sh",
            "--bus",
            s(&bus),
        ],
    );
    assert_eq!(code, 0, "{err}");
    bus
}

/// A saved Bus of a command (or model) author replayed without its `author` identity on
/// `session-start`: line 1 differed, so did the determinism hash, and `errors report` lost
/// the arm. The replay now writes the recorded identity back, byte for byte.
#[test]
fn a_command_authors_saved_bus_replays_byte_for_byte_with_its_identity() {
    let d = tmp("replay-identity");
    let a1 = command_author_bus(&d);
    let a2 = d.join("a2.bus.jsonl");
    let (code, out, err) = kestrel_in(
        &d,
        &[
            "agent",
            "--tape",
            s(&tape_path()),
            "--author",
            s(&a1),
            "--bus",
            s(&a2),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (b1, b2) = (std::fs::read(&a1).unwrap(), std::fs::read(&a2).unwrap());
    let first = String::from_utf8_lossy(&b1)
        .lines()
        .next()
        .unwrap()
        .to_string();
    assert!(
        first.contains("\"author\":{") && first.contains("\"prompt_hash\""),
        "{first}"
    );
    assert_eq!(
        String::from_utf8_lossy(&b2),
        String::from_utf8_lossy(&b1),
        "the replay's Bus is the recording's"
    );
    assert!(out.contains("author command sh -c ./author.sh"), "{out}");
    let (code, report, err) = kestrel_in(&d, &["errors", "report", s(&a2), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert!(
        v["by_arm"]
            .as_object()
            .is_some_and(|m| m.keys().any(|k| k.starts_with("command sh -c ./author.sh"))),
        "{report}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A tampered Bus was refused as `error code=USAGE message=error code=REPLAY ...`, and one cut
/// mid-line as `error code=USAGE message=line 13: EOF while parsing ...` without its name.
#[test]
fn a_saved_bus_that_does_not_replay_is_refused_with_its_own_code_naming_the_file() {
    let d = tmp("replay-errors");
    let a1 = command_author_bus(&d);
    let text = std::fs::read_to_string(&a1).unwrap();
    let (n, armed) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("\"type\":\"document-armed\""))
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(armed).unwrap();
    let hash = v["blake3"].as_str().unwrap();
    let forged = d.join("forged.bus.jsonl");
    std::fs::write(&forged, text.replace(hash, &"0".repeat(64))).unwrap();
    let agent = |author: &Path| {
        kestrel_in(
            &d,
            &["agent", "--tape", s(&tape_path()), "--author", s(author)],
        )
    };
    let (code, _, err) = agent(&forged);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!(
            "error code=REPLAY rule=replay-hash line={} message={}: ",
            n + 1,
            forged.display()
        )),
        "{err}"
    );
    assert!(!err.contains("USAGE"), "{err}");
    // Cut inside a line.
    let cut = d.join("cut.bus.jsonl");
    let at = text.find(armed).unwrap() + armed.len() / 2;
    std::fs::write(&cut, &text[..at]).unwrap();
    let (code, _, err) = agent(&cut);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!(
            "error code=BUS message={}: line {}: the line is cut short",
            cut.display(),
            n + 1
        )),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// `run --plans d1 --plans d1` armed two live plans `a`, each with its own budget, in one
/// report row; the same plans in one document are refused (`duplicate-name`). Between
/// documents they are refused too, naming both files.
#[test]
fn two_plans_documents_cannot_arm_one_name_twice() {
    let d = tmp("plans-dup");
    let plan = "PLAN a budget 0.1R ttl 15:30\n  USING signal SPX exec SPY 0dte\n  WHEN spot > 1\n  DO buy 1 +1 C @ fair\n";
    let (d1, d2) = (d.join("d1.kestrel"), d.join("d2.kestrel"));
    std::fs::write(&d1, plan).unwrap();
    std::fs::write(&d2, format!("# the same name\n{plan}")).unwrap();
    let tape = tape_path();
    for verb in [
        vec!["run", "--tape", s(&tape)],
        vec![
            "agent",
            "--tape",
            s(&tape),
            "--author",
            "examples/house-agent.jsonl",
        ],
    ] {
        let (code, out, err) =
            kestrel(&[&verb[..], &["--plans", s(&d1), "--plans", s(&d2)]].concat());
        assert_eq!(code, 2, "{verb:?}: {out}{err}");
        assert!(out.is_empty(), "{out}");
        assert!(
            err.starts_with(&format!(
                "{}: error code=PARSE rule=duplicate-name message=duplicate plan name `a`: {} declares it too (line 1, col 1)",
                d2.display(),
                d1.display()
            )),
            "{err}"
        );
        assert!(err.contains("(line 2, col 1)"), "{err}");
        let (code, _, err) =
            kestrel(&[&verb[..], &["--plans", s(&d1), "--plans", s(&d1)]].concat());
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("given twice to --plans"), "{err}");
    }
    // Other names in two documents still arm together.
    let (code, _, err) = kestrel(&[
        "run",
        "--tape",
        s(&tape),
        "--plans",
        s(&d1),
        "--plans",
        "examples/run-desk.kestrel",
    ]);
    assert_eq!(code, 0, "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A byte-order mark at the start of a document showed as ``found `\u{feff}PLAN` `` (an
/// invisible character), and on a tape as `invalid-json ... column 1`. Both are refused by
/// name.
#[test]
fn a_byte_order_mark_is_refused_by_name() {
    let d = tmp("bom");
    let doc = d.join("bom.kestrel");
    let mut bytes = b"\xef\xbb\xbf".to_vec();
    bytes.extend_from_slice(
        b"PLAN a budget 0.1R ttl 15:30\n  USING signal SPX exec SPY 0dte\n  WHEN spot > 1\n  DO buy 1 +1 C @ fair\n",
    );
    std::fs::write(&doc, &bytes).unwrap();
    let want = "error code=PARSE rule=syntax message=the document starts with a UTF-8 byte-order mark (U+FEFF): save it without one (line 1, col 1)";
    for verb in [
        vec!["check"],
        vec!["print"],
        vec!["turn"],
        vec!["check", "--turn"],
    ] {
        let (code, _, err) = kestrel(&[&verb[..], &[s(&doc)]].concat());
        assert_eq!(code, 2, "{verb:?}: {err}");
        assert!(err.contains(want), "{verb:?}: {err}");
        assert!(!err.contains('\u{feff}'), "{verb:?}: {err}");
    }
    let tape = d.join("bom.jsonl");
    let mut t = b"\xef\xbb\xbf".to_vec();
    t.extend_from_slice(&std::fs::read(tape_path()).unwrap());
    std::fs::write(&tape, &t).unwrap();
    for args in [
        vec!["tape", "info", s(&tape)],
        vec![
            "run",
            "--tape",
            s(&tape),
            "--plans",
            "examples/chase.kestrel",
        ],
    ] {
        let (code, _, err) = kestrel(&args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(
            err.contains("error code=TAPE line=1 message=bad-header: the tape starts with a UTF-8 byte-order mark (U+FEFF): save it without one"),
            "{args:?}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A saved Bus or a reply script that an editor saved with a byte-order mark was refused as
/// "line 1 is not JSON (expected value at line 1 column 1)", naming nothing. Every verb that
/// reads one names the mark: `agent --author`, `errors report`, `grade --agent`.
#[test]
fn a_byte_order_mark_before_a_bus_or_a_script_is_refused_by_name() {
    let d = tmp("bom-bus");
    let bus = command_author_bus(&d);
    let mark = |name: &str, bytes: &[u8]| {
        let p = d.join(name);
        std::fs::write(&p, [&b"\xef\xbb\xbf"[..], bytes].concat()).unwrap();
        p
    };
    let marked_bus = mark("marked.bus.jsonl", &std::fs::read(&bus).unwrap());
    let script = mark("marked-script.jsonl", b"{\"reply\": \"PASS\"}\n");
    let named = "the file starts with a UTF-8 byte-order mark (U+FEFF): save it without one";
    for author in [&marked_bus, &script] {
        let (code, _, err) = kestrel_in(
            &d,
            &["agent", "--tape", s(&tape_path()), "--author", s(author)],
        );
        assert_eq!(code, 1, "{err}");
        assert!(err.contains(named), "{err}");
        assert!(err.contains(s(author)), "names the file: {err}");
        assert!(!err.contains("column 1"), "{err}");
    }
    let (code, _, err) = kestrel_in(&d, &["errors", "report", s(&marked_bus)]);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains(named), "errors report: {err}");
    let (code, _, err) = kestrel_in(
        &d,
        &[
            "grade",
            "--agent",
            s(&marked_bus),
            "--over",
            s(&tape_path()),
        ],
    );
    assert_ne!(code, 0, "{err}");
    assert!(err.contains(named), "grade --agent: {err}");
    assert!(!err.contains("line 0"), "grade --agent: {err}");
    // The same files without the mark are read.
    let (code, _, err) = kestrel_in(
        &d,
        &["agent", "--tape", s(&tape_path()), "--author", s(&bus)],
    );
    assert_eq!(code, 0, "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A tape of only a newline was called "an empty file".
#[test]
fn a_tape_of_only_blank_lines_is_named_so() {
    let d = tmp("blank-tape");
    let nl = d.join("nl.jsonl");
    std::fs::write(&nl, "\n\n").unwrap();
    let (code, _, err) = kestrel(&["tape", "info", s(&nl)]);
    assert_eq!(code, 1);
    assert!(
        err.contains("is a file of only blank lines (no header line), not a tape"),
        "{err}"
    );
    let empty = d.join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let (_, _, err) = kestrel(&["tape", "info", s(&empty)]);
    assert!(err.contains("is an empty file, not a tape"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Run with `input` on a stdin pipe (the verb is given `/dev/stdin`, a pipe, as a path).
fn kestrel_piped(args: &[&str], input: &[u8]) -> (i32, String, String) {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kestrel");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("wait");
    writer.join().expect("writer");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A document given as a pipe (`<(cat doc)`, `/dev/stdin`) was read ahead to tell its kind,
/// and what was read was gone: a refused document came back `ok: /dev/fd/63 (0 statements)`
/// (exit 0), `run --plans` warned of no plans and ran, `turn` routed a pass, `tokens` counted
/// 0, `grade` found no GRADE; a FIFO blocked forever on the second open. A pipe is read once.
#[test]
fn a_document_given_as_a_pipe_or_a_fifo_is_read_once() {
    let bad = b"PLAN x budget 0.1R ttl 15:30\n  USING signal SPX exec SPY 0dte\n  WHEN spot >> 1\n  DO buy 1 +1 C @ fair\n";
    let refused = "/dev/stdin: error code=PARSE rule=syntax";
    for args in [
        vec!["check", "/dev/stdin"],
        vec!["fmt", "--check", "/dev/stdin"],
        vec!["print", "/dev/stdin"],
        vec!["run", "--tape", TAPE, "--plans", "/dev/stdin"],
        vec![
            "frame",
            "--tape",
            TAPE,
            "--at",
            "10:00",
            "--view",
            "/dev/stdin",
        ],
    ] {
        let (code, out, err) = kestrel_piped(&args, bad);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(refused), "{args:?}: {err}");
    }
    let (code, out, err) = kestrel_piped(&["turn", "/dev/stdin"], b"STAND-DOWN chop\n");
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("outcome: stand-down"), "{out}");
    let (code, out, err) = kestrel_piped(&["tokens", "/dev/stdin"], b"STAND-DOWN chop\n");
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains(": 0 tokens"), "{out}");
    let grade = format!(
        "PLAN a budget 0.2R ttl 15:30\n  USING signal SPX exec SPY 0dte\n  WHEN spot crosses above vwap\n  DO buy 1 +1 C @ fair\nGRADE plan a OVER {} FILL strict-cross-v1\n  VS null\n",
        tape_path().display()
    );
    let (code, out, err) = kestrel_piped(
        &["grade", "/dev/stdin", "--draws", "2", "--resamples", "200"],
        grade.as_bytes(),
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("GRADE plan a OVER"), "{out}");
    // The desk reads its inputs twice (refused before the terminal is taken, then opened):
    // a pipe is refused by name, not opened empty.
    for args in [
        vec!["desk", "--plans", "/dev/stdin"],
        vec!["desk", "--tape", "/dev/stdin"],
    ] {
        let (code, _, err) = kestrel_piped(&args, bad);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(
            err.contains("/dev/stdin is a pipe or a device: the desk opens files"),
            "{args:?}: {err}"
        );
    }
    // What it is is told from what was read: a tape piped as a document.
    let tape = std::fs::read(tape_path()).unwrap();
    let (code, _, err) = kestrel_piped(&["check", "/dev/stdin"], &tape);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("/dev/stdin is a tape"), "{err}");
    // A FIFO: written once, read once (it blocked on a second open).
    let d = tmp("fifo-doc");
    let fifo = d.join("doc.kestrel");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let path = fifo.clone();
    let writer = std::thread::spawn(move || std::fs::write(&path, bad));
    let mut child = Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args(["check", s(&fifo)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kestrel");
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if start.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            panic!("check of a FIFO did not return");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    writer.join().expect("writer").expect("write the FIFO");
    assert_eq!(status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&d);
}

/// The house agent's saved Bus (four wakes: open, range-break twice, last-hour).
fn house_agent_bus(d: &Path) -> PathBuf {
    let bus = d.join("house.bus.jsonl");
    let (code, _, err) = kestrel(&[
        "agent",
        "--tape",
        TAPE,
        "--author",
        "examples/house-agent.jsonl",
        "--bus",
        s(&bus),
    ]);
    assert_eq!(code, 0, "{err}");
    bus
}

/// The 1-based lines of a Bus's events of this type.
fn lines_of(text: &str, kind: &str) -> Vec<usize> {
    let tag = format!("\"type\":\"{kind}\"");
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.contains(&tag))
        .map(|(i, _)| i + 1)
        .collect()
}

/// Replace `from` by `to` in line `n` (1-based) of a Bus.
fn edit_line(text: &str, n: usize, from: &str, to: &str) -> String {
    let mut out: Vec<String> = text.lines().map(str::to_string).collect();
    assert!(out[n - 1].contains(from), "line {n}: {}", out[n - 1]);
    out[n - 1] = out[n - 1].replacen(from, to, 1);
    out.join("\n") + "\n"
}

/// A saved Bus's turns were keyed by the View delivered before them and their own `wake`
/// was never read: every turn's wake set to `zzz`, or two wakes' names swapped, replayed to
/// the recording's hash with no word. A turn naming another wake than the one it answers is
/// now refused as a `replay-record` error naming its line.
#[test]
fn a_saved_bus_turn_that_names_another_wake_than_it_answers_is_refused() {
    let d = tmp("replay-wake");
    let bus = house_agent_bus(&d);
    let text = std::fs::read_to_string(&bus).unwrap();
    let turns = lines_of(&text, "turn");
    assert_eq!(turns.len(), 4, "{turns:?}");
    let agent = |author: &Path| kestrel(&["agent", "--tape", TAPE, "--author", s(author)]);
    // The recording itself replays.
    let (code, _, err) = agent(&bus);
    assert_eq!(code, 0, "{err}");
    // Every turn's wake is zzz: refused at the first turn.
    let all_zzz = d.join("zzz.bus.jsonl");
    let mut t = text.clone();
    for (n, w) in turns
        .iter()
        .zip(["open", "range-break", "range-break", "last-hour"])
    {
        t = edit_line(&t, *n, &format!("\"wake\":\"{w}\""), "\"wake\":\"zzz\"");
    }
    std::fs::write(&all_zzz, &t).unwrap();
    let (code, _, err) = agent(&all_zzz);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!(
            "error code=REPLAY rule=replay-record line={} message={}: ",
            turns[0],
            all_zzz.display()
        )),
        "{err}"
    );
    assert!(err.contains("zzz") && err.contains("open"), "{err}");
    // Two wakes' names swapped: refused at the first of them.
    let swapped = d.join("swapped.bus.jsonl");
    let t = edit_line(
        &text,
        turns[1],
        "\"wake\":\"range-break\"",
        "\"wake\":\"last-hour\"",
    );
    let t = edit_line(
        &t,
        turns[3],
        "\"wake\":\"last-hour\"",
        "\"wake\":\"range-break\"",
    );
    std::fs::write(&swapped, &t).unwrap();
    let (code, _, err) = agent(&swapped);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!(
            "error code=REPLAY rule=replay-record line={} message={}: ",
            turns[1],
            swapped.display()
        )),
        "{err}"
    );
    assert!(
        err.contains("last-hour") && err.contains("range-break"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A recorded turn whose text is not the canonical print of its document (`PLAN   x`) was
/// refused saying "the recorded turn says supersede [vwap-reclaim] but its Kestrel routes as
/// supersede [vwap-reclaim]": outcomes that agree, told as a difference. It now says the text
/// is not canonical and shows the first line that differs.
#[test]
fn a_recorded_turn_that_is_not_canonical_text_says_so_plainly() {
    let d = tmp("replay-canonical");
    let bus = house_agent_bus(&d);
    let text = std::fs::read_to_string(&bus).unwrap();
    let first = lines_of(&text, "turn")[0];
    let forged = d.join("spaced.bus.jsonl");
    std::fs::write(
        &forged,
        edit_line(&text, first, "PLAN vwap-reclaim", "PLAN   vwap-reclaim"),
    )
    .unwrap();
    let (code, _, err) = kestrel(&["agent", "--tape", TAPE, "--author", s(&forged)]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!(
            "error code=REPLAY rule=replay-divergence line={first} message={}: ",
            forged.display()
        )),
        "{err}"
    );
    assert!(!err.contains("routes as"), "{err}");
    assert!(
        err.contains("the recorded text is not the canonical print of its document")
            && err.contains(
                "recorded `PLAN   vwap-reclaim budget 0.2R ttl 14:30` canonical `PLAN vwap-reclaim budget 0.2R ttl 14:30`"
            ),
        "{err}"
    );
    // Outcomes that differ still say so.
    let other = d.join("other.bus.jsonl");
    std::fs::write(
        &other,
        edit_line(
            &text,
            first,
            "\"plans\":[\"vwap-reclaim\"]",
            "\"plans\":[\"other\"]",
        ),
    )
    .unwrap();
    let (code, _, err) = kestrel(&["agent", "--tape", TAPE, "--author", s(&other)]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("rule=replay-divergence")
            && err.contains("says supersede [other]")
            && err.contains("routes as supersede [vwap-reclaim]"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// `run --bus - --json` wrote an 11 KB file named `-` in the working directory, where `-`
/// means standard output elsewhere (`tape gen -o -`). Standard output carries the report,
/// so `--bus -` is now a usage error (`give a file path`), for `agent` too, and no file
/// is written.
#[test]
fn bus_dash_is_a_usage_error_not_a_file_named_dash() {
    let d = tmp("bus-dash");
    let plans = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/chase.kestrel");
    let tape = tape_path();
    for args in [
        vec![
            "run",
            "--tape",
            s(&tape),
            "--plans",
            s(&plans),
            "--bus",
            "-",
            "--json",
        ],
        vec![
            "run",
            "--tape",
            s(&tape),
            "--plans",
            s(&plans),
            "--bus",
            "-",
        ],
        vec![
            "agent",
            "--tape",
            s(&tape),
            "--author",
            "cmd:true",
            "--bus",
            "-",
        ],
    ] {
        let (code, out, err) = kestrel_in(&d, &args);
        assert_eq!((code, out.as_str()), (1, ""), "{args:?}: {err}");
        assert!(
            err.starts_with("error code=USAGE message=--bus - names no file: give a file path"),
            "{args:?}: {err}"
        );
        assert!(
            !d.join("-").exists(),
            "{args:?}: a file named - was written"
        );
    }
    let (_, help, _) = kestrel(&["run", "--help"]);
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("`-` is refused"), "{help}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Re-serialise a Bus line after `edit` (sorted keys, as the Bus writes them).
fn edit_event(text: &str, n: usize, edit: impl Fn(&mut serde_json::Value)) -> String {
    let mut out: Vec<String> = text.lines().map(str::to_string).collect();
    let mut v: serde_json::Value = serde_json::from_str(&out[n - 1]).unwrap();
    edit(&mut v);
    out[n - 1] = serde_json::to_string(&v).unwrap();
    out.join("\n") + "\n"
}

/// A saved session whose plan was edited in its `turn` record and, with the BLAKE3
/// recomputed, in its `document-armed` record (`buy 1` made `buy 5`), was replayed and
/// graded as the author's, though the `repair` record before it still held what the author
/// wrote; so was a turn's edited journal, carried into the replay's Bus. The last attempt's
/// reply is now routed again and must give the turn's text, journal and outcome; an author's
/// turn with no repair record at all is refused too.
#[test]
fn a_saved_turn_that_is_not_what_its_reply_routes_to_is_refused() {
    let d = tmp("replay-written");
    let bus = house_agent_bus(&d);
    let text = std::fs::read_to_string(&bus).unwrap();
    let first = lines_of(&text, "turn")[0];
    let armed = lines_of(&text, "document-armed")[0];
    assert_eq!(armed, first + 1, "the author's turn is armed just after it");
    let agent = |author: &Path| kestrel(&["agent", "--tape", TAPE, "--author", s(author)]);
    let grade = |author: &Path| {
        kestrel(&[
            "grade",
            "--agent",
            s(author),
            "--over",
            TAPE,
            "--draws",
            "2",
            "--resamples",
            "50",
        ])
    };
    assert_eq!(agent(&bus).0, 0, "the recording replays");
    let bigger = |v: &mut serde_json::Value, key: &str| {
        let t = v[key]
            .as_str()
            .unwrap()
            .replace("DO buy 1 +1 C", "DO buy 5 +1 C");
        *v.get_mut(key).unwrap() = t.into();
    };
    let t = edit_event(&text, first, |v| bigger(&mut v["turn"], "kestrel"));
    let t = edit_event(&t, armed, |v| {
        bigger(v, "text");
        let h = blake3::hash(v["text"].as_str().unwrap().as_bytes());
        v["blake3"] = h.to_hex().to_string().into();
    });
    let forged = d.join("bigger.bus.jsonl");
    std::fs::write(&forged, &t).unwrap();
    let (code, _, err) = agent(&forged);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!(
            "error code=REPLAY rule=replay-divergence line={first} message={}: the turn recorded here is not what its author wrote: the reply recorded at line {}",
            forged.display(),
            first - 1
        )),
        "{err}"
    );
    assert!(
        err.contains("DO buy 5 +1 C") && err.contains("DO buy 1 +1 C"),
        "{err}"
    );
    let (code, out, err) = grade(&forged);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(
        err.starts_with(&format!(
            "error code=REPLAY message={}: line {first}: the turn recorded here is not what its author wrote",
            forged.display()
        )),
        "{err}"
    );
    // The journal alone.
    let journal = d.join("journal.bus.jsonl");
    let t = edit_event(&text, first, |v| {
        v["turn"]["journal"] = serde_json::json!(["I am a genius"]);
    });
    std::fs::write(&journal, &t).unwrap();
    let (code, _, err) = agent(&journal);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!(
            "error code=REPLAY rule=replay-divergence line={first} message="
        )) && err.contains("I am a genius"),
        "{err}"
    );
    // The repair record dropped: nothing to hold the turn to.
    let dropped: String = text
        .lines()
        .enumerate()
        .filter(|(i, _)| i + 1 != first - 1)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    let no_repair = d.join("no-repair.bus.jsonl");
    std::fs::write(&no_repair, &dropped).unwrap();
    let (code, _, err) = agent(&no_repair);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!(
            "error code=REPLAY rule=replay-record line={} message=",
            first - 1
        )) && err.contains("no repair attempt before it records the reply"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Move a turn and its repair attempts (at `from`, the same wake) to `to`.
fn move_answer(text: &str, wake: &str, from: &str, to: &str) -> String {
    let (w, f) = (format!("\"wake\":\"{wake}\""), format!("\"ts\":\"{from}\""));
    text.lines()
        .map(|l| {
            let answer = l.contains("\"type\":\"turn\"") || l.contains("\"type\":\"repair\"");
            if answer && l.contains(&w) && l.contains(&f) {
                l.replace(&f, &format!("\"ts\":\"{to}\""))
            } else {
                l.to_string()
            }
        })
        .map(|l| l + "\n")
        .collect()
}

/// A saved turn's `ts` was not checked against its wake: moved before the wake fired it
/// replayed to the recording's hash (the time ignored); moved later in a headless agent's
/// Bus, where every turn acts at its wake's instant, it replayed and was graded as an act
/// an hour late. A turn before its wake's View is now refused in any Bus, and one off its
/// wake's instant in a Bus whose `session-start` names its author (`kestrel agent`), as
/// `replay-record` naming the line. A late turn in a Bus naming no author (the desk's
/// co-pilot answers later than its wake) still replays.
#[test]
fn a_saved_turn_moved_off_its_wake_is_refused() {
    let d = tmp("replay-ts");
    let agent = |author: &Path| {
        kestrel_in(
            &d,
            &["agent", "--tape", s(&tape_path()), "--author", s(author)],
        )
    };
    // A headless command author's Bus: its first turn answers the open at 09:30.
    let a1 = command_author_bus(&d);
    let text = std::fs::read_to_string(&a1).unwrap();
    assert!(
        text.lines().next().unwrap().contains("\"author\":{"),
        "names its author"
    );
    let first = lines_of(&text, "turn")[0];
    let later = d.join("later.bus.jsonl");
    std::fs::write(
        &later,
        move_answer(&text, "open", "09:30:00.000", "09:31:00.000"),
    )
    .unwrap();
    let (code, _, err) = agent(&later);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!(
            "error code=REPLAY rule=replay-record line={first} message={}: the turn recorded here at 09:31:00.000 answers wake \"open\", which fired at 09:30:00.000",
            later.display()
        )) && err.contains("a headless agent's turn acts at its wake's instant"),
        "{err}"
    );
    let (code, out, err) = kestrel_in(
        &d,
        &[
            "grade",
            "--agent",
            s(&later),
            "--over",
            s(&tape_path()),
            "--draws",
            "2",
            "--resamples",
            "50",
        ],
    );
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(err.starts_with("error code=REPLAY message="), "{err}");
    // A script author's Bus names none: a turn before its wake is refused all the same.
    let house = house_agent_bus(&d);
    let text = std::fs::read_to_string(&house).unwrap();
    let second = lines_of(&text, "turn")[1];
    let early = d.join("early.bus.jsonl");
    std::fs::write(
        &early,
        move_answer(&text, "range-break", "09:45:11.000", "09:40:00.000"),
    )
    .unwrap();
    let (code, _, err) = agent(&early);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!(
            "error code=REPLAY rule=replay-record line={second} message={}: the turn recorded here at 09:40:00.000 answers wake \"range-break\", whose View was delivered later, at 09:45:11.000",
            early.display()
        )),
        "{err}"
    );
    // Later than its wake, in a Bus naming no author: a late answer, replayed.
    let late = d.join("late.bus.jsonl");
    std::fs::write(
        &late,
        move_answer(&text, "last-hour", "15:00:00.000", "15:00:00.500"),
    )
    .unwrap();
    let (code, _, err) = agent(&late);
    assert_eq!(code, 0, "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `desk` is a name an author may give a WAKE. A turn answering it was keyed as a person's
/// desk turn, by its own time: a late answer (recorded after its View) no longer replayed
/// ("the recording has no turn for wake desk at ...").
#[test]
fn a_late_answer_to_a_wake_named_desk_replays() {
    use std::os::unix::fs::PermissionsExt;
    let d = tmp("wake-desk");
    let script = d.join("a.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ncat >/dev/null\nprintf 'WAKE desk WHEN T-300\\nPLAN a budget 0.1R ttl 15:30\\n  USING signal SPX exec SPY 0dte\\n  WHEN spot > 1\\n  DO buy 1 +1 C @ fair\\n'\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bus = d.join("w.bus.jsonl");
    let (code, _, err) = kestrel_in(
        &d,
        &[
            "agent",
            "--tape",
            s(&tape_path()),
            "--author",
            "cmd:./a.sh",
            "--bus",
            s(&bus),
        ],
    );
    assert_eq!(code, 0, "{err}");
    // The desk wake's repair and turn, recorded half a second after its View. A late
    // answer is a desk co-pilot's, whose Bus names no author: a headless agent's Bus (its
    // `session-start` names the author) acts at the wake's instant, and a late turn there
    // is refused (`a_saved_turn_moved_off_its_wake_is_refused`).
    let text = std::fs::read_to_string(&bus).unwrap();
    let mut late = 0;
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            if l.contains("\"type\":\"session-start\"") {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                v.as_object_mut().unwrap().remove("author");
                return serde_json::to_string(&v).unwrap();
            }
            let answer = l.contains("\"type\":\"turn\"") || l.contains("\"type\":\"repair\"");
            if answer && l.contains("\"wake\":\"desk\"") && l.contains("\"ts\":\"11:00:00.000\"") {
                late += 1;
                l.replace("\"ts\":\"11:00:00.000\"", "\"ts\":\"11:00:00.500\"")
            } else {
                l.to_string()
            }
        })
        .collect();
    assert_eq!(late, 2, "{text}");
    let moved = d.join("late.bus.jsonl");
    std::fs::write(&moved, lines.join("\n") + "\n").unwrap();
    let (code, out, err) = kestrel_in(
        &d,
        &["agent", "--tape", s(&tape_path()), "--author", s(&moved)],
    );
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("no turn for wake desk"), "{err}");
    assert!(
        out.contains("supersede 2") && out.contains("provider-error 0"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A Bus whose two `repair` events were swapped (attempt 1 before attempt 0) replayed with
/// exit 0, wrote the attempts in the tampered order and a new hash, and `errors report` then
/// refused the replay's own Bus (`repair attempt 1 where attempt 0 was due`). The replay now
/// refuses it first, with the same words (one check, `turn::report::AttemptOrder`), as a
/// `replay-record` error naming the line; so does a Bus left with attempts and no turn.
#[test]
fn a_saved_bus_with_its_repair_attempts_out_of_order_is_refused_as_errors_report_refuses_it() {
    let d = tmp("replay-attempts");
    let script = d.join("bad-author.jsonl");
    std::fs::write(
        &script,
        concat!(
            r#"{"wake":"open","reply":"PLAN a budget 0.1R ttl 15:00\n  WHEN spot > vwap DO buy 1 +1 C @ fair\n"}"#,
            "\n",
            r#"{"wake":"open","reply":"PLAN a budget 0.1R ttl 15:00\n  WHEN spot > vwap\n  DO buy 1 +1 C @ fair\n  TP 2x @ fair\n"}"#,
            "\n"
        ),
    )
    .unwrap();
    let bus = d.join("a.bus.jsonl");
    let (code, _, err) = kestrel(&[
        "agent",
        "--tape",
        TAPE,
        "--author",
        s(&script),
        "--bus",
        s(&bus),
    ]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&bus).unwrap();
    let repairs = lines_of(&text, "repair");
    assert_eq!(repairs.len(), 2, "{text}");
    let (a, b) = (repairs[0], repairs[1]);
    assert_eq!(b, a + 1, "{text}");
    let mut lines: Vec<&str> = text.lines().collect();
    lines.swap(a - 1, b - 1);
    let swapped = d.join("swapped.bus.jsonl");
    std::fs::write(&swapped, lines.join("\n") + "\n").unwrap();
    let report = |p: &Path| kestrel(&["errors", "report", s(p)]);
    let words = "repair attempt 1 where attempt 0 was due";
    let (code, _, err) = report(&swapped);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("line {a}: {words}")), "{err}");
    let out2 = d.join("sw2.bus.jsonl");
    let (code, _, err) = kestrel(&[
        "agent",
        "--tape",
        TAPE,
        "--author",
        s(&swapped),
        "--bus",
        s(&out2),
    ]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "error code=REPLAY rule=replay-record line={a} message={}: {words}",
            swapped.display()
        )
    );
    assert!(!out2.exists(), "a refused replay writes no Bus");
    // A Bus ending in attempts with no turn after them: refused at the first of them.
    let cut = d.join("cut.bus.jsonl");
    let mut kept: Vec<&str> = text.lines().collect();
    kept.push(text.lines().nth(a - 1).unwrap());
    std::fs::write(&cut, kept.join("\n") + "\n").unwrap();
    let n = kept.len();
    let (code, _, err) = report(&cut);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("line {n}: repair attempts with no turn")),
        "{err}"
    );
    let (code, _, err) = kestrel(&["agent", "--tape", TAPE, "--author", s(&cut)]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!(
            "error code=REPLAY rule=replay-record line={n} message={}: repair attempts with no turn",
            cut.display()
        )),
        "{err}"
    );
    // The recording itself still replays.
    let (code, _, err) = kestrel(&["agent", "--tape", TAPE, "--author", s(&bus)]);
    assert_eq!(code, 0, "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A blank line at the end of a saved Bus (an editor's extra line end) was `not a Bus event:
/// EOF while parsing a value at line 1 column 0` to `errors report` and `the line is cut
/// short` to `agent --author`. Every reader of a Bus now says the line is blank, in the tape
/// reader's words (`blank-line`).
#[test]
fn a_blank_line_in_a_saved_bus_is_named_blank_by_every_reader() {
    let d = tmp("bus-blank");
    let bus = house_agent_bus(&d);
    let text = std::fs::read_to_string(&bus).unwrap();
    let n = text.lines().count() + 1;
    let blank = d.join("blank.bus.jsonl");
    std::fs::write(&blank, format!("{text}\n")).unwrap();
    let words = format!("line {n}: blank line (every line must be one Bus event)");
    let (code, _, err) = kestrel(&["errors", "report", s(&blank)]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        format!("error code=BUS message={}: {words}", blank.display())
    );
    let (code, _, err) = kestrel(&["agent", "--tape", TAPE, "--author", s(&blank)]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        format!("error code=BUS message={}: {words}", blank.display())
    );
    let (code, _, err) = kestrel(&["desk", "--author", s(&blank), "--no-save"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        format!("error code=BUS message={}: {words}", blank.display())
    );
    let (code, _, err) = kestrel(&[
        "grade",
        "--agent",
        s(&blank),
        "--over",
        TAPE,
        "--draws",
        "3",
        "--resamples",
        "200",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.starts_with("error code=BUS message="), "{err}");
    assert!(
        err.contains(&words.replace(": blank", ": not a saved session's Bus line: blank")),
        "{err}"
    );
    assert!(!err.contains("EOF") && !err.contains("cut short"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A script reply for a wake that never asks (`{"wake":"nosuch", ...}`: a typo, another
/// tape's wake) was never used and nothing said so: exit 0, a silent pass. `agent` now ends
/// with a warning naming the script lines never used and their wake (the Bus is the same
/// bytes); a script whose only leftover is an untagged reply (the house agent's `Nothing
/// new`) says nothing.
#[test]
fn a_script_reply_for_a_wake_that_never_asks_is_named_at_the_end() {
    let d = tmp("script-unused");
    let script = d.join("nosuch.jsonl");
    std::fs::write(
        &script,
        "{\"wake\":\"nosuch\",\"reply\":\"STAND-DOWN x\"}\n\n{\"wake\":\"open\",\"reply\":\"# quiet\\n\"}\n{\"wake\":\"nosuch\",\"reply\":\"CANCEL a\"}\n",
    )
    .unwrap();
    let (bus, plain) = (d.join("n.bus.jsonl"), d.join("p.bus.jsonl"));
    let (code, _, err) = kestrel(&[
        "agent",
        "--tape",
        TAPE,
        "--author",
        s(&script),
        "--bus",
        s(&bus),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "warning code=UNUSED-REPLIES message={}: 2 script replies never used: line 1 (wake \"nosuch\"), line 4 (wake \"nosuch\"); the wakes asked were \"open\"",
            script.display()
        )
    );
    // The same run without the unused lines: the same Bus.
    let only = d.join("only.jsonl");
    std::fs::write(&only, "{\"wake\":\"open\",\"reply\":\"# quiet\\n\"}\n").unwrap();
    let (code, _, err) = kestrel(&[
        "agent",
        "--tape",
        TAPE,
        "--author",
        s(&only),
        "--bus",
        s(&plain),
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(std::fs::read(&bus).unwrap(), std::fs::read(&plain).unwrap());
    let (code, _, err) = kestrel(&[
        "agent",
        "--tape",
        TAPE,
        "--author",
        "examples/house-agent.jsonl",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    let _ = std::fs::remove_dir_all(&d);
}

/// `--r-usd`'s help read "whole dollars" on the desk while `run`, `agent` and `grade` take
/// cents and tenths of cents (`--r-usd 0.001` runs, `1R = $0.001`). Each help now says what
/// its verb takes.
#[test]
fn r_usd_help_says_what_each_verb_takes() {
    for verb in ["run", "agent", "grade"] {
        let (code, out, _) = kestrel(&[verb, "--help"]);
        assert_eq!(code, 0);
        assert!(
            out.contains("a positive amount with at most four decimals"),
            "{verb}: {out}"
        );
    }
    let (_, out, _) = kestrel(&["desk", "--help"]);
    assert!(
        out.contains("whole dollars") && out.contains("up to four decimals"),
        "{out}"
    );
    let (code, out, err) = kestrel(&[
        "run",
        "--tape",
        TAPE,
        "--plans",
        "examples/run-desk.kestrel",
        "--r-usd",
        "0.001",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines().next().unwrap().ends_with("1R = $0.001"),
        "{out}"
    );
}

/// The Bus's events of `kind`, parsed.
fn bus_events(path: &Path, kind: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .expect("bus")
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == kind)
        .collect()
}

/// A POD's day-loss halt is in the report, text and JSON, as the Bus has it: when, the loss
/// over the limit, the plans it halted and the ones it flattened; a plan it left halted
/// reads `halted (pod)` (an INVALIDATE's reads `halted`), and `reason` in JSON. The Bus is
/// the same bytes whichever report is asked for.
#[test]
fn run_report_says_what_a_pod_halt_did() {
    let d = tmp("podhalt");
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/run-desk.kestrel"),
    )
    .expect("example");
    assert!(src.contains("day-loss 2R"), "the example's POD");
    let pod = d.join("pod.kestrel");
    std::fs::write(&pod, src.replace("day-loss 2R", "day-loss 0.01R")).expect("write");
    let (bus_t, bus_j) = (d.join("t.jsonl"), d.join("j.jsonl"));
    let (code, text, err) = kestrel(&[
        "run",
        "--tape",
        TAPE,
        "--plans",
        s(&pod),
        "--bus",
        s(&bus_t),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, json, err) = kestrel(&[
        "run",
        "--tape",
        TAPE,
        "--plans",
        s(&pod),
        "--bus",
        s(&bus_j),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read(&bus_t).unwrap(),
        std::fs::read(&bus_j).unwrap()
    );
    let halt = bus_events(&bus_t, "pod-halt");
    assert_eq!(halt.len(), 1, "the tester's run halts once");
    let h = &halt[0];
    let ts = h["ts"].as_str().unwrap();
    let halted: Vec<String> = bus_events(&bus_t, "plan-state")
        .iter()
        .filter(|e| e["reason"] == "POD desk day-loss" && e["state"] == "halted")
        .map(|e| e["plan"].as_str().unwrap().to_string())
        .collect();
    let flattened: Vec<String> = bus_events(&bus_t, "order-placed")
        .iter()
        .filter(|e| e["role"] == "flatten" && e["ts"] == ts)
        .map(|e| e["plan"].as_str().unwrap().to_string())
        .collect();
    assert!(
        !halted.is_empty() && !flattened.is_empty(),
        "{halted:?} {flattened:?}"
    );
    let note = format!(
        "POD desk halted at {}: day loss ${} over its ${} limit; halted {}; flattened {}",
        &ts[..8],
        h["loss_usd"].as_str().unwrap(),
        h["limit_usd"].as_str().unwrap(),
        halted.join(", "),
        flattened.join(", ")
    );
    assert!(text.contains(&format!("\nnote: {note}\n")), "{text}");
    // The plans still halted at the end say by what; the example's INVALIDATE halt (its
    // own run, no POD breach) keeps `halted`.
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    let plans = v["plans"].as_array().unwrap();
    let still: Vec<&serde_json::Value> = plans.iter().filter(|p| p["state"] == "halted").collect();
    assert!(!still.is_empty(), "{json}");
    for p in &still {
        assert_eq!(p["reason"], "POD desk day-loss", "{p}");
        let name = p["name"].as_str().unwrap();
        let row = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap();
        assert!(row.contains(" halted (pod) "), "{row}");
    }
    let j = &v["pod_halts"][0];
    assert_eq!(j["note"], note.as_str(), "{json}");
    assert_eq!(j["ts"], ts);
    assert_eq!(j["halted"], serde_json::json!(halted));
    assert_eq!(j["flattened"], serde_json::json!(flattened));
    let (code, text, err) = kestrel(&[
        "run",
        "--tape",
        TAPE,
        "--plans",
        "examples/run-desk.kestrel",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(!text.contains("POD ") && !text.contains("(pod)"), "{text}");
    let headline = text
        .lines()
        .find(|l| l.starts_with("headline-puts "))
        .unwrap();
    assert!(headline.contains(" halted "), "{headline}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A plan armed with its ttl already past (at the open, or later by an ARM) arms and expires
/// at once, as before: the run says so on stderr (`TTL-PAST`), and the report has a note
/// and a `warnings` entry. A fixed strike far from the exec's spot at the arming is named
/// likewise (`STRIKE-FAR`), with the level's likely source. The Bus does not change.
#[test]
fn run_warns_of_a_ttl_already_past_and_a_strike_far_from_spot() {
    let d = tmp("armwarn");
    let late = d.join("late.kestrel");
    std::fs::write(
        &late,
        "PLAN p budget 0.25R ttl 09:00\n  WHEN spot > 0\n  DO buy 1 ATM C @ fair\n",
    )
    .expect("write");
    let (code, text, err) = kestrel(&["run", "--tape", TAPE, "--plans", s(&late)]);
    assert_eq!(code, 0, "{err}");
    let header = tape_header();
    let open = header["open"].as_str().unwrap();
    let why =
        format!("its ttl 09:00 is already past at {open}: it expires at once, before it can fire");
    assert!(
        err.contains(&format!("warning code=TTL-PAST message=plan p: {why}\n")),
        "{err}"
    );
    assert!(
        text.contains(&format!("\nnote: plan p done: {why} (TTL-PAST)\n")),
        "{text}"
    );
    let (_, json, _) = kestrel(&["run", "--tape", TAPE, "--plans", s(&late), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(v["warnings"][0]["code"], "TTL-PAST", "{json}");
    assert_eq!(v["warnings"][0]["plan"], "p", "{json}");
    assert_eq!(v["warnings"][0]["message"], why.as_str(), "{json}");
    // Armed later by an ARM, past its ttl by then: warned at that arming's time.
    let chain = d.join("chain.kestrel");
    std::fs::write(
        &chain,
        "PLAN a budget 0.25R ttl +1h\n  WHEN spot > 0 AND NOT phase open\n  DO buy 10 shares @ ask\n  ARM b\nPLAN b budget 0.25R ttl 09:31\n  WHEN spot > 0\n  DO buy 10 shares @ ask\n",
    )
    .expect("write");
    let bus = d.join("chain.jsonl");
    let (code, _, err) = kestrel(&[
        "run",
        "--tape",
        TAPE,
        "--plans",
        s(&chain),
        "--bus",
        s(&bus),
    ]);
    assert_eq!(code, 0, "{err}");
    let armed = bus_events(&bus, "plan-state")
        .into_iter()
        .find(|e| e["plan"] == "b" && e["state"] == "armed")
        .expect("b armed by a");
    let at = &armed["ts"].as_str().unwrap()[..5];
    assert!(
        err.contains(&format!(
            "warning code=TTL-PAST message=plan b: its ttl 09:31 is already past at {at}"
        )),
        "{err}"
    );
    // An SPX level on the SPY exec, armed at the open (SPY's prior close, before its first
    // trade).
    let far = d.join("far.kestrel");
    std::fs::write(
        &far,
        "USING signal SPX exec SPY 0dte\nPLAN m2 budget 0.25R ttl +1h\n  WHEN spot > 0\n  DO buy 1 5123 C @ fair\n",
    )
    .expect("write");
    let (far_bus, base_bus) = (d.join("far.jsonl"), d.join("base.jsonl"));
    let (code, text, err) = kestrel(&[
        "run",
        "--tape",
        TAPE,
        "--plans",
        s(&far),
        "--bus",
        s(&far_bus),
    ]);
    assert_eq!(code, 0, "{err}");
    let close = header["symbols"]["SPY"]["prior_close"].as_f64().unwrap();
    let why = format!(
        "DO#1 strike 5123 is {:.0}% above SPY's prior close {close:.2}: an SPX level on the SPY exec?",
        (5123.0 - close) / close * 100.0
    );
    assert!(
        err.contains(&format!("warning code=STRIKE-FAR message=plan m2: {why}\n")),
        "{err}"
    );
    assert!(text.contains(&format!(": {why} (STRIKE-FAR)\n")), "{text}");
    // Near the money: no warning. The warnings are not on the Bus.
    let near = d.join("near.kestrel");
    std::fs::write(
        &near,
        std::fs::read_to_string(&far)
            .unwrap()
            .replace("5123", "516"),
    )
    .unwrap();
    let (code, _, err) = kestrel(&[
        "run",
        "--tape",
        TAPE,
        "--plans",
        s(&near),
        "--bus",
        s(&base_bus),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("warning"), "{err}");
    for b in [&far_bus, &bus] {
        let text = std::fs::read_to_string(b).unwrap();
        assert!(
            !text.contains("STRIKE-FAR") && !text.contains("TTL-PAST"),
            "{text}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The header of [`TAPE`].
fn tape_header() -> serde_json::Value {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(TAPE)).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

/// A Bus cut mid-line (`head -c`) was `line 4: not a Bus event: EOF while parsing a string at
/// line 1 column 285` to `errors report` and `grade --agent` ("line 4 … at line 1" read as a
/// contradiction), while `agent --author` said the line is cut short. Every reader now says
/// it in those words, the position a column of the line.
#[test]
fn a_bus_cut_mid_line_is_said_cut_short_by_every_reader() {
    let d = tmp("bus-midcut");
    let bus = house_agent_bus(&d);
    let text = std::fs::read_to_string(&bus).unwrap();
    // Into the middle of the fourth line.
    let upto: usize = text.lines().take(3).map(|l| l.len() + 1).sum::<usize>() + 40;
    let cut = d.join("cut.bus.jsonl");
    std::fs::write(&cut, &text.as_bytes()[..upto]).unwrap();
    for args in [
        vec!["errors", "report", s(&cut)],
        vec!["agent", "--tape", TAPE, "--author", s(&cut)],
        vec!["grade", "--agent", s(&cut), "--over", "tapes/*"],
    ] {
        let (code, _, err) = kestrel(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains("line 4: ") && err.contains("the line is cut short (it ends inside "),
            "{args:?}: {err}"
        );
        assert!(!err.contains("at line 1 column"), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `--max-tokens 99999999999` was refused as "not a whole number of tokens"; it is one, too
/// large: the refusal says the bound.
#[test]
fn a_max_tokens_too_large_says_the_bound() {
    let (code, _, err) = kestrel(&[
        "agent",
        "--tape",
        TAPE,
        "--author",
        "examples/house-agent.jsonl",
        "--max-tokens",
        "99999999999",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with("error code=USAGE")
            && err.contains("a reply's output tokens are at most 4294967295, got 99999999999"),
        "{err}"
    );
}

/// `BUDGET n wakes/day` bounds how often a WAKE calls on its author, but every arming
/// started its count at 0: an agent re-sending its book (a supersede re-sends it) with
/// `WAKE nh WHEN headline within 1s BUDGET 1 wakes/day` woke four times on the shock tape.
/// The count is the WAKE's (by owner and name) for the session, however often it is armed.
#[test]
fn a_wake_re_sent_keeps_what_its_budget_has_spent() {
    let d = tmp("wake-budget");
    let replies = d.join("replies.jsonl");
    let reply =
        serde_json::json!({"reply": "WAKE nh WHEN headline within 1s BUDGET 1 wakes/day\n"});
    std::fs::write(&replies, format!("{reply}\n").repeat(5)).unwrap();
    let bus = d.join("b.bus.jsonl");
    let (code, _, err) = kestrel(&[
        "agent",
        "--tape",
        "tapes/shock-2025-04-09-s7.jsonl",
        "--author",
        s(&replies),
        "--bus",
        s(&bus),
    ]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&bus).unwrap();
    let of = |ty: &str| {
        text.lines()
            .filter(|l| l.contains(&format!(r#""type":"{ty}""#)) && l.contains(r#""wake":"nh""#))
            .count()
    };
    assert_eq!(of("wake-fired"), 1, "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains(r#""type":"wake-suppressed""#)
                && l.contains(r#""wake":"nh""#)
                && l.contains("budget of 1 wakes/day spent")),
        "the later headlines are suppressed by the budget"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The words serde uses that no reader of a recording may print.
const SERDE_WORDS: [&str; 6] = [
    "unknown variant",
    "expected one of",
    "missing field",
    "EOF while parsing",
    "at line 1 column",
    "expected value",
];

/// A tape, a script of replies, a document, a grade shard, a Bus or an empty file given
/// where another kind is read was named in serde's words in some verbs (`errors report` a
/// tape: `unknown variant `header`, expected one of …` with 25 names; `grade --agent` the
/// house agent's script: `missing field `type``; `grade merge` a Bus: `line 1 is not a
/// shard header: missing field `kind``; `agent --author` an empty file: `line 1 is not JSON
/// (EOF while parsing a value at line 1 column 0)`), and exited 1 in some verbs and 2 in
/// others. Every verb now says what the file is and what to do, `code=USAGE`, exit 1: the
/// wrong kind of file, as every `--help` footer says.
#[test]
fn every_reader_of_a_recording_names_the_wrong_kind_of_file() {
    let f = fixtures("wrong-kind");
    let empty = f.dir.join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let blank = f.dir.join("blank.jsonl");
    std::fs::write(&blank, "\n\n").unwrap();
    let script = "examples/house-agent.jsonl";
    let doc = "examples/chase.kestrel";
    let (bus, shard) = (s(&f.bus), s(&f.shard));
    let other_tape = "tapes/range-2025-04-09-s2.jsonl";
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec!["errors", "report", TAPE], TAPE, "a tape"),
        (vec!["errors", "report", doc], doc, "a Kestrel document"),
        (
            vec!["errors", "report", script],
            script,
            "a script of author replies",
        ),
        (vec!["errors", "report", shard], shard, "a grade shard file"),
        (
            vec!["errors", "report", s(&empty)],
            s(&empty),
            "an empty file",
        ),
        (
            vec!["grade", "--agent", TAPE, "--over", "tapes/*"],
            TAPE,
            "a tape",
        ),
        (
            vec!["grade", "--agent", script, "--over", "tapes/*"],
            script,
            "a script of author replies",
        ),
        (
            vec!["grade", "--agent", doc, "--over", "tapes/*"],
            doc,
            "a Kestrel document",
        ),
        (vec!["grade", "merge", bus], bus, "a saved Bus"),
        (vec!["grade", "merge", TAPE], TAPE, "a tape"),
        (
            vec!["grade", "merge", s(&empty)],
            s(&empty),
            "an empty file",
        ),
        (
            vec!["agent", "--tape", TAPE, "--author", s(&empty)],
            s(&empty),
            "an empty file",
        ),
        (
            vec!["agent", "--tape", TAPE, "--author", s(&blank)],
            s(&blank),
            "a file of only blank lines",
        ),
        (
            vec!["agent", "--tape", TAPE, "--author", other_tape],
            other_tape,
            "a tape",
        ),
        (
            vec!["agent", "--tape", TAPE, "--author", shard],
            shard,
            "a grade shard file",
        ),
        (
            vec!["agent", "--tape", bus, "--author", script],
            bus,
            "a saved Bus",
        ),
        (vec!["turn", TAPE], TAPE, "a tape"),
        (vec!["turn", bus], bus, "a saved Bus"),
    ];
    for (args, file, kind) in cases {
        let (code, out, err) = kestrel(&args);
        assert_eq!((code, out.as_str()), (1, ""), "{args:?}: {err}");
        let want = format!("error code=USAGE message={file} is {kind}");
        assert!(err.starts_with(&want), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "one line: {args:?}: {err}");
        // What to do: a verb to run or a file to give.
        assert!(
            err.contains("kestrel ") || err.contains("give "),
            "{args:?}: {err}"
        );
        for w in SERDE_WORDS {
            assert!(!err.contains(w), "{args:?}: {err}");
        }
    }
    let _ = std::fs::remove_dir_all(&f.dir);
}

/// A line of a recording that is not what it should be was refused in serde's words where
/// the file is the right kind (a Bus line whose type was edited: `unknown variant `fil`,
/// expected one of …` and 25 names; a line with no type: `missing field `type``; a grade
/// shard cut in its header: `EOF while parsing a string at line 1 column 300` under `line
/// 1`; a script line cut short: `not JSON: EOF while parsing …`). They are said plainly,
/// the position a column of the line, and stay refusals of the recording (a Bus: exit 2;
/// a shard: `code=SHARD`, exit 1, as `grade --help` says of a bad shard set).
#[test]
fn a_bad_line_of_a_recording_is_said_plainly() {
    let f = fixtures("bad-line");
    let text = std::fs::read_to_string(&f.bus).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let edit = |name: &str, i: usize, line: String| {
        let mut l = lines.clone();
        l[i] = &line;
        let p = f.dir.join(name);
        std::fs::write(&p, l.join("\n") + "\n").unwrap();
        p
    };
    let typed = edit(
        "typed.bus.jsonl",
        2,
        lines[2].replacen("\"type\":\"", "\"type\":\"x-", 1),
    );
    let untyped = edit(
        "untyped.bus.jsonl",
        2,
        lines[2].replacen("\"type\":", "\"kind\":", 1),
    );
    let garbage = edit("garbage.bus.jsonl", 2, "hello".into());
    let cases = [
        (
            &typed,
            "line 3: ",
            "is none of the 25 names allowed there (at column ",
        ),
        (&untyped, "line 3: ", "the field `type` is missing"),
        (
            &garbage,
            "line 3: ",
            "it is not JSON (no JSON value at column 1)",
        ),
    ];
    for (p, at, words) in cases {
        for args in [
            vec!["errors", "report", s(p)],
            vec!["agent", "--tape", TAPE, "--author", s(p)],
            vec!["grade", "--agent", s(p), "--over", "tapes/*"],
        ] {
            let (code, _, err) = kestrel(&args);
            assert_eq!(code, 2, "{args:?}: {err}");
            assert!(err.contains(at) && err.contains(words), "{args:?}: {err}");
            for w in SERDE_WORDS {
                assert!(!err.contains(w), "{args:?}: {err}");
            }
        }
    }
    // A shard cut inside its header line.
    let shard = std::fs::read_to_string(&f.shard).unwrap();
    let cut = f.dir.join("cut-shard.jsonl");
    std::fs::write(&cut, &shard.as_bytes()[..300]).unwrap();
    let (code, _, err) = kestrel(&["grade", "merge", s(&cut)]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "error code=SHARD message={}: line 1 is not a shard header: the line is cut short (it ends inside a string at column 300)",
            s(&cut)
        )
    );
    // A script of replies whose second line is cut short.
    let script = f.dir.join("cut-script.jsonl");
    std::fs::write(&script, "{\"reply\": \"PASS\"}\n{\"reply\": \"PA").unwrap();
    let (code, _, err) = kestrel(&["agent", "--tape", TAPE, "--author", s(&script)]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("line 2: the line is cut short (it ends inside a string at column 13)"),
        "{err}"
    );
    for w in SERDE_WORDS {
        assert!(!err.contains(w), "{err}");
    }
    let _ = std::fs::remove_dir_all(&f.dir);
}

/// The Bus of `kestrel run` of the README's desk plans on the trend tape, saved in `dir`.
fn a_run_bus(dir: &Path) -> PathBuf {
    let bus = dir.join("run.bus");
    let (code, _, err) = kestrel(&[
        "run",
        "--tape",
        TAPE,
        "--plans",
        "examples/run-desk.kestrel",
        "--bus",
        s(&bus),
    ]);
    assert_eq!(code, 0, "{err}");
    bus
}

/// A saved Bus given where a tape is read says what to do with it by what it holds: a run's
/// Bus (no author's turn) to run its plans again on its tape, an agent's to replay it; and
/// `--author` takes a saved Bus by what it holds, whatever its name (`s.bus` was refused as a
/// file that is not executable, after `run --tape` had said to give it to `--author`).
#[test]
fn a_bus_given_as_a_tape_says_what_to_do_by_what_it_holds() {
    let d = tmp("bus-kinds");
    let (run_bus, agent_bus) = (a_run_bus(&d), d.join("agent.bus"));
    let (code, _, err) = kestrel(&[
        "agent",
        "--tape",
        TAPE,
        "--author",
        "examples/house-agent.jsonl",
        "--bus",
        s(&agent_bus),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = kestrel(&[
        "run",
        "--tape",
        s(&run_bus),
        "--plans",
        "examples/run-desk.kestrel",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("it records a run with no author's turn")
            && err.contains(&format!("kestrel run --tape {TAPE} --plans FILE")),
        "{err}"
    );
    let (code, _, err) = kestrel(&[
        "run",
        "--tape",
        s(&agent_bus),
        "--plans",
        "examples/run-desk.kestrel",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!(
            "replay it with kestrel agent --author {}",
            s(&agent_bus)
        )),
        "{err}"
    );
    // Doing what it says replays the agent, whatever the file's name.
    let (code, out, err) = kestrel(&["agent", "--tape", TAPE, "--author", s(&agent_bus)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("wakes 4"), "{out}");
    let _ = std::fs::remove_dir_all(&d);
}

/// The wrong file where `grade`, the desk and `print` take one says what to do, and what it
/// says works (a reviewer followed each, 2026-12-06): a document among `grade`'s `--tapes`
/// said `give it as --plans` (grade has no `--plans`); a tape as `grade`'s document said to
/// `run` it; a tape piped to `print -` said `run --tape -` (a tape is read from its file);
/// the desk's `--agent` given a tape said `line 1: expected {"reply": "..."}`, given a run's
/// Bus the same; `--open` given a tape said `no desk-session header line`; `grade` given a
/// run's Bus said `pass it with --agent`, which has no author to replay there (2026-12-07).
#[test]
fn the_wrong_file_for_grade_the_desk_and_print_says_what_to_do() {
    let d = tmp("wrong-file-hints");
    let run_bus = a_run_bus(&d);
    let home = d.join("home");
    let home = s(&home);
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["grade", "examples/grade.kestrel", "--tapes", "examples/shares.kestrel"],
            "the document to grade comes first, the tapes after --tapes: kestrel grade examples/shares.kestrel --tapes DIR".into(),
        ),
        (
            vec!["grade", TAPE],
            format!("grade takes the document first and its tapes with --tapes: kestrel grade FILE.kestrel --tapes {TAPE}"),
        ),
        (
            vec!["desk", "--agent", TAPE],
            format!("is a tape (JSON Lines with a header line), not a script of {{\"reply\": ...}} lines: open the desk on it with --tape {TAPE}"),
        ),
        (
            vec!["desk", "--agent", s(&run_bus)],
            format!("it records a run with no author's turn (as kestrel run --bus writes one): run its plans again with kestrel run --tape {TAPE} --plans FILE"),
        ),
        (
            vec!["grade", s(&run_bus)],
            format!("is a saved session of a run with no author's turn (as kestrel run --bus writes one), not a document: grade the plans it ran with a GRADE statement beside them: kestrel grade FILE.kestrel, FILE.kestrel holding the plans (or IMPORTing them) and GRADE plan NAME OVER {TAPE} FILL strict-cross-v1"),
        ),
        (
            vec!["desk", "--open", TAPE],
            format!("is a tape (JSON Lines with a header line), not a desk session: open the desk on it with kestrel desk --tape {TAPE}"),
        ),
    ];
    for (args, want) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_kestrel"))
            .args(&args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home)
            .env("XDG_DATA_HOME", home)
            .stdin(Stdio::null())
            .output()
            .expect("run kestrel");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.starts_with("error code=USAGE message=") && err.contains(&want),
            "{args:?}: {err}"
        );
    }
    // What the run's Bus hint says works: its plans and a GRADE line over its tape.
    let graded = d.join("graded.kestrel");
    let plans = std::fs::read_to_string("examples/run-desk.kestrel").unwrap();
    std::fs::write(
        &graded,
        format!("{plans}\nGRADE plan breakout OVER {TAPE} FILL strict-cross-v1\n"),
    )
    .unwrap();
    let (code, out, err) = kestrel(&["grade", s(&graded)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("subject breakout"), "{out}");
    let tape = std::fs::read(TAPE).unwrap();
    let (code, _, err) = kestrel_piped(&["print", "-"], &tape);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("replay it from its file with kestrel run --tape FILE --plans FILE")
            && !err.contains("--tape -"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
