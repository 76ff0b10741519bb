//! Issue 16, the I/O half, through the binary: files keep their mode and links and are not
//! rewritten when read-only, `--bus` never overwrites an input, a signal finishes the Bus,
//! and author strings that name nothing are refused instead of run.

use std::io::Write;
#[cfg(unix)]
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const KESTREL: &str = env!("CARGO_BIN_EXE_kestrel");
const TAPE: &str = "tapes/range-2025-04-09-s2.jsonl";
const PLANS: &str = "examples/run-desk.kestrel";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn kestrel(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(KESTREL)
        .args(args)
        .current_dir(root())
        .stdin(Stdio::null())
        .output()
        .expect("run kestrel");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kestrel-fcio-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch");
    d
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf8 path")
}

/// Hidden temporary files (`.NAME.tmp-PID`) left in `d`.
fn temp_files(d: &Path) -> Vec<String> {
    std::fs::read_dir(d)
        .expect("read dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).expect("stat").permissions().mode() & 0o777
}

/// `fmt` rewrote 0600 files as 0644, replaced a symlink with a regular file, and rewrote
/// read-only files.
#[cfg(unix)]
#[test]
fn fmt_keeps_the_mode_writes_through_symlinks_and_refuses_read_only_files() {
    use std::os::unix::fs::PermissionsExt;
    let d = scratch("fmt");
    let messy = "STAND-DOWN   tired\n";
    let canon = "STAND-DOWN tired\n";
    let private = d.join("private.kestrel");
    std::fs::write(&private, messy).expect("w");
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let (code, _, err) = kestrel(&["fmt", s(&private)]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&private).expect("r"), canon);
    assert_eq!(mode(&private), 0o600);

    let target = d.join("target.kestrel");
    std::fs::write(&target, messy).expect("w");
    let link = d.join("link.kestrel");
    std::os::unix::fs::symlink("target.kestrel", &link).expect("ln");
    let (code, _, err) = kestrel(&["fmt", s(&link)]);
    assert_eq!(code, 0, "{err}");
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("lstat")
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&target).expect("r"), canon);

    let ro = d.join("readonly.kestrel");
    std::fs::write(&ro, messy).expect("w");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o400)).expect("chmod");
    let (code, _, err) = kestrel(&["fmt", s(&ro)]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("error code=IO") && err.contains("read-only"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&ro).expect("r"), messy, "untouched");
    assert_eq!(mode(&ro), 0o400);
    assert!(temp_files(&d).is_empty(), "{:?}", temp_files(&d));
    let _ = std::fs::remove_dir_all(&d);
}

/// `run --tape t --bus t` destroyed the tape; `--bus` naming any input (the tape, a plans
/// file, the author file, also through a symlink) is refused before anything is written.
#[test]
fn a_bus_naming_an_input_file_is_refused_before_any_write() {
    let d = scratch("bus-input");
    let tape = d.join("t.jsonl");
    std::fs::copy(root().join(TAPE), &tape).expect("copy");
    let plans = d.join("p.kestrel");
    std::fs::copy(root().join(PLANS), &plans).expect("copy");
    let before = std::fs::read(&tape).expect("r");
    let recording = d.join("house.jsonl");
    std::fs::copy(root().join("examples/house-agent.jsonl"), &recording).expect("copy");
    let rec_before = std::fs::read(&recording).expect("r");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&tape, d.join("alias.jsonl")).expect("ln");
    let mut cases: Vec<Vec<String>> = vec![
        vec![
            "run",
            "--tape",
            s(&tape),
            "--plans",
            s(&plans),
            "--r-usd",
            "1000",
            "--bus",
            s(&tape),
        ],
        vec![
            "run",
            "--tape",
            s(&tape),
            "--plans",
            s(&plans),
            "--r-usd",
            "1000",
            "--bus",
            s(&plans),
        ],
        vec![
            "agent",
            "--tape",
            s(&tape),
            "--author",
            s(&recording),
            "--bus",
            s(&tape),
        ],
        vec![
            "agent",
            "--tape",
            s(&tape),
            "--author",
            s(&recording),
            "--bus",
            s(&recording),
        ],
    ]
    .into_iter()
    .map(|v| v.into_iter().map(String::from).collect())
    .collect();
    #[cfg(unix)]
    cases.push(
        [
            "run",
            "--tape",
            s(&tape),
            "--plans",
            s(&plans),
            "--r-usd",
            "1000",
            "--bus",
        ]
        .iter()
        .map(|x| x.to_string())
        .chain(std::iter::once(s(&d.join("alias.jsonl")).to_string()))
        .collect(),
    );
    for c in &cases {
        let args: Vec<&str> = c.iter().map(String::as_str).collect();
        let (code, out, err) = kestrel(&args);
        assert_eq!(code, 1, "{args:?}: {out}{err}");
        assert!(
            err.contains("error code=USAGE") && err.contains("names an input file"),
            "{args:?}: {err}"
        );
        assert_eq!(
            std::fs::read(&tape).expect("r"),
            before,
            "{args:?}: the tape changed"
        );
        assert_eq!(
            std::fs::read(&recording).expect("r"),
            rec_before,
            "{args:?}"
        );
        assert!(temp_files(&d).is_empty(), "{args:?}: {:?}", temp_files(&d));
    }
    // A Bus elsewhere is written as before.
    let bus = d.join("out.bus.jsonl");
    let (code, _, err) = kestrel(&[
        "run",
        "--tape",
        s(&tape),
        "--plans",
        s(&plans),
        "--r-usd",
        "1000",
        "--bus",
        s(&bus),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(bus.is_file());
    let _ = std::fs::remove_dir_all(&d);
}

/// The child's exit status, waiting at most `limit` (the test fails past it, saying `what`).
#[cfg(unix)]
fn exit_within(
    child: &mut std::process::Child,
    limit: Duration,
    what: &str,
) -> std::process::ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            return st;
        }
        assert!(t.elapsed() < limit, "no exit within {limit:?} {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGTERM during a run left no output and a hidden temp file; now the Bus is finished as at
/// an error (an `error` event naming the signal, then `session-end`), renamed into place,
/// and no temporary file remains.
#[cfg(unix)]
#[test]
fn sigterm_during_a_run_finishes_the_bus_and_leaves_no_temp_file() {
    let d = scratch("sigterm");
    let fifo = d.join("tape.fifo");
    let ok = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(ok.success());
    let bus = d.join("run.bus.jsonl");
    let mut child = Command::new(KESTREL)
        .args([
            "run",
            "--tape",
            s(&fifo),
            "--plans",
            PLANS,
            "--r-usd",
            "1000",
            "--bus",
            s(&bus),
        ])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let tape = std::fs::read_to_string(root().join(TAPE)).expect("tape");
    let lines: Vec<&str> = tape.lines().collect();
    // The run blocks reading the FIFO after these lines: the tape is "long".
    let mut w = std::fs::OpenOptions::new()
        .write(true)
        .open(&fifo)
        .expect("open fifo");
    for l in &lines[..200] {
        writeln!(w, "{l}").expect("write");
    }
    w.flush().expect("flush");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "still running"
    );
    assert!(
        !temp_files(&d).is_empty(),
        "the Bus is being written beside its name"
    );
    let pid = child.id() as i32;
    // SAFETY: sends SIGTERM to the child we spawned.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    std::thread::sleep(Duration::from_millis(100));
    // One more line wakes the blocked read; the run then sees the signal.
    let _ = writeln!(w, "{}", lines[200]);
    let _ = w.flush();
    let status = exit_within(&mut child, Duration::from_secs(10), "after SIGTERM");
    drop(w);
    let out = child.wait_with_output().expect("output");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("error code=INTERRUPTED") && err.contains("SIGTERM"),
        "{err}"
    );
    let text = std::fs::read_to_string(&bus).expect("the Bus was written");
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON Lines: {l}: {e}")))
        .collect();
    assert!(text.ends_with('\n'));
    assert_eq!(events[0]["type"], "session-start");
    let n = events.len();
    assert_eq!(events[n - 1]["type"], "session-end", "{}", events[n - 1]);
    assert_eq!(events[n - 2]["type"], "error", "{}", events[n - 2]);
    assert!(
        events[n - 2]["message"]
            .as_str()
            .expect("message")
            .contains("SIGTERM")
    );
    assert!(temp_files(&d).is_empty(), "{:?}", temp_files(&d));
    let _ = std::fs::remove_dir_all(&d);
}

/// A signal while the author is answering was seen only when the call returned (up to
/// `--timeout`); now the call is abandoned within moments: the command's process group is
/// killed, the ask is a `provider-error kind=interrupted`, and the run ends as at an error.
#[cfg(unix)]
#[test]
fn sigterm_during_an_author_call_ends_the_run_at_once() {
    let d = scratch("sigterm-author");
    let bus = d.join("agent.bus.jsonl");
    let marker = d.join("started");
    // The author notes that it started, then takes a minute (a grandchild holds the group).
    let author = format!("cmd:touch {} && sleep 60 | cat", s(&marker));
    let mut child = Command::new(KESTREL)
        .args([
            "agent",
            "--tape",
            TAPE,
            "--author",
            &author,
            "--timeout",
            "120",
        ])
        .args(["--bus", s(&bus)])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let t = Instant::now();
    while !marker.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the author never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id() as i32;
    // SAFETY: sends SIGTERM to the child we spawned.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = exit_within(
        &mut child,
        Duration::from_secs(10),
        "after SIGTERM during an author call",
    );
    let out = child.wait_with_output().expect("output");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("error code=INTERRUPTED"), "{err}");
    let text = std::fs::read_to_string(&bus).expect("the Bus was written");
    assert!(
        text.contains("interrupted by SIGTERM while the author was answering"),
        "{text}"
    );
    let last: Vec<serde_json::Value> = text
        .lines()
        .rev()
        .take(2)
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(last[0]["type"], "session-end");
    assert_eq!(last[1]["type"], "error");
    assert!(temp_files(&d).is_empty(), "{:?}", temp_files(&d));
    let _ = std::fs::remove_dir_all(&d);
}

/// The processes of group `group` still running (not zombies, which wait for a reaper and
/// run nothing), from /proc. Elsewhere than Linux: whether the group answers signal 0.
#[cfg(unix)]
fn live_in_group(group: i32) -> Vec<i32> {
    #[cfg(target_os = "linux")]
    {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                // `pid (comm) state ppid pgrp ...`; comm may hold spaces, so read after ')'.
                std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| {
                    let rest: Vec<&str> = st
                        .rsplit_once(')')
                        .map_or("", |(_, r)| r)
                        .split_whitespace()
                        .collect();
                    rest.first() != Some(&"Z") && rest.get(2) == Some(&group.to_string().as_str())
                })
            })
            .collect()
    }
    #[cfg(not(target_os = "linux"))]
    {
        // SAFETY: signal 0 sends nothing; it asks whether the group has a process.
        if unsafe { libc::killpg(group, 0) } == 0 {
            vec![group]
        } else {
            Vec::new()
        }
    }
}

/// SIGHUP (a closed terminal window, a dropped ssh session, `tmux kill-session`) took the
/// default action: the process died at once, its Bus unfinished, and a command author's
/// process group (its own group, so the hangup never reached it) ran on, orphaned. Now it
/// ends the run as SIGTERM does, and the author's group is gone.
#[cfg(unix)]
#[test]
fn sighup_during_an_author_call_ends_the_run_and_kills_the_authors_group() {
    let d = scratch("sighup-author");
    let bus = d.join("agent.bus.jsonl");
    let pid_file = d.join("author.pid");
    // The author notes its group (its shell's pid leads it), then takes a minute.
    let author = format!(
        "cmd:echo $$ > {}.tmp && mv {0}.tmp {0} && sleep 60 | cat",
        s(&pid_file)
    );
    let mut child = Command::new(KESTREL);
    child
        .args([
            "agent",
            "--tape",
            TAPE,
            "--author",
            &author,
            "--timeout",
            "120",
        ])
        .args(["--bus", s(&bus)])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // A run started with SIGHUP ignored (`nohup`, as a CI job may be) keeps ignoring it, by
    // design; the child starts with the default disposition, as under a terminal.
    // SAFETY: between fork and exec, only the async-signal-safe `signal`.
    unsafe {
        child.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = child.spawn().expect("spawn");
    let t = Instant::now();
    while !pid_file.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the author never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let group: i32 = std::fs::read_to_string(&pid_file)
        .expect("pid")
        .trim()
        .parse()
        .expect("a pid");
    // SAFETY: sends SIGHUP to the child we spawned.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGHUP) }, 0);
    let status = exit_within(&mut child, Duration::from_secs(10), "after SIGHUP");
    let out = child.wait_with_output().expect("output");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(1), "{status:?} {err}");
    assert!(err.contains("error code=INTERRUPTED"), "{err}");
    let text = std::fs::read_to_string(&bus).expect("the Bus was written");
    assert!(
        text.contains("interrupted by SIGHUP while the author was answering"),
        "{text}"
    );
    let last: serde_json::Value =
        serde_json::from_str(text.lines().last().expect("a line")).expect("JSON");
    assert_eq!(last["type"], "session-end");
    // The author's whole group is gone (`sleep 60 | cat` would still be there, reparented).
    let t = Instant::now();
    while !live_in_group(group).is_empty() {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the author's process group {group} outlived the run: {:?}",
            live_in_group(group)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(temp_files(&d).is_empty(), "{:?}", temp_files(&d));
    let _ = std::fs::remove_dir_all(&d);
}

/// `kestrel agent` killed with SIGKILL (no handler runs) left its command author running
/// forever: the author is in a process group of its own, and nothing killed it. On Linux
/// the author now gets SIGKILL when kestrel dies (`PR_SET_PDEATHSIG`). The Bus's hidden
/// temporary file it leaves is named by the next run that writes that Bus (2026-12-06).
#[cfg(target_os = "linux")]
#[test]
fn a_command_author_dies_with_a_sigkilled_agent() {
    let d = scratch("pdeathsig");
    let pid_file = d.join("author.pid");
    // The shell notes its pid, then becomes `sleep` (exec keeps the death signal).
    let author = format!(
        "cmd:echo $$ > {}.tmp && mv {0}.tmp {0} && exec sleep 60",
        s(&pid_file)
    );
    let mut child = Command::new(KESTREL)
        .args([
            "agent",
            "--tape",
            TAPE,
            "--author",
            &author,
            "--timeout",
            "120",
        ])
        .args(["--bus", s(&d.join("agent.bus.jsonl"))])
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let t = Instant::now();
    while !pid_file.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the author never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("pid")
        .trim()
        .parse()
        .expect("a pid");
    // The `mv` that wrote the pid file may still be exiting (a race seen under load).
    let t = Instant::now();
    while live_in_group(pid) != vec![pid] {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the author runs, alone in its group: {:?}",
            live_in_group(pid)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let t = Instant::now();
    while !live_in_group(pid).is_empty() {
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "the author {pid} outlived a SIGKILLed kestrel"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // No handler removed the Bus's temporary file, hidden by its dot. The next run that
    // writes the same Bus names it, and leaves it: it holds what the killed run wrote.
    let left = format!(".agent.bus.jsonl.tmp-{}", child.id());
    assert_eq!(temp_files(&d), vec![left.clone()]);
    let (code, _, err) = kestrel(&[
        "agent",
        "--tape",
        TAPE,
        "--author",
        "examples/house-agent.jsonl",
        "--bus",
        s(&d.join("agent.bus.jsonl")),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!(
            "note: {} was left by a run that was killed before it finished (process {} is gone)",
            d.join(&left).display(),
            child.id()
        )),
        "{err}"
    );
    assert_eq!(temp_files(&d), vec![left]);
    assert!(d.join("agent.bus.jsonl").is_file());
    let _ = std::fs::remove_dir_all(&d);
}

/// A mistyped author path was run as a shell command and the run exited 0. A path-like
/// value that does not exist is "no such file"; `cmd:` runs a command explicitly; the bare
/// form still runs a command line that cannot be a path.
#[test]
fn a_mistyped_author_path_is_no_such_file_and_cmd_runs_a_command() {
    for typo in [
        "examples/house-agnet.jsonl",
        "runs/missing.json",
        "notes.txt",
        "./brains/none",
    ] {
        let (code, out, err) = kestrel(&["agent", "--tape", TAPE, "--author", typo]);
        assert_eq!(code, 1, "{typo}: {out}{err}");
        assert!(
            err.contains("error code=USAGE") && err.contains("no such file"),
            "{typo}: {err}"
        );
    }
    let (code, _, err) = kestrel(&["agent", "--tape", TAPE, "--author", "README.md.txt"]);
    assert_eq!(code, 1, "{err}");
    let (code, out, err) = kestrel(&[
        "agent",
        "--tape",
        TAPE,
        "--author",
        "cmd:sh examples/command-author.sh",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("report");
    assert_eq!(v["outcomes"]["invalid"], 0);
    assert!(v["outcomes"]["wakes"].as_u64().expect("wakes") >= 1);
    let (code, _, err) = kestrel(&["agent", "--tape", TAPE, "--author", "cmd:"]);
    assert_eq!(code, 1, "{err}");
}

/// `--author ''` ran `sh -c ''` and `--author http://` (no host) ran the whole session,
/// every wake a provider error (`code=PROVIDER`); `cmd:` and `ftp://x/v1` were already
/// refused up front. Both are now `code=USAGE` before the session starts, and the Bus is not
/// written.
#[test]
fn an_empty_author_or_a_url_with_no_host_is_a_usage_error() {
    let d = scratch("author-usage");
    let bus = d.join("never.bus.jsonl");
    for (author, why) in [
        ("", "--author is empty"),
        ("   ", "--author is empty"),
        ("http://", "empty host"),
        ("https://", "empty host"),
    ] {
        let (code, out, err) = kestrel(&[
            "agent",
            "--tape",
            TAPE,
            "--author",
            author,
            "--bus",
            s(&bus),
        ]);
        assert_eq!((code, out.as_str()), (1, ""), "{author:?}: {err}");
        assert!(
            err.starts_with("error code=USAGE message=") && err.contains(why),
            "{author:?}: {err}"
        );
        assert!(err.contains("cmd:COMMAND"), "{author:?}: {err}");
        assert!(!err.contains("PROVIDER"), "{author:?}: {err}");
        assert!(!bus.exists(), "{author:?}: no session ran");
    }
}

/// A run whose every reply was a provider error exited 0 with nothing on stderr; and the
/// author URL's userinfo and query must not reach the Bus.
#[test]
fn a_run_where_every_reply_failed_exits_1_and_the_url_secrets_stay_off_the_bus() {
    let d = scratch("dead");
    let bus = d.join("dead.bus.jsonl");
    let (code, out, err) = kestrel(&[
        "agent",
        "--tape",
        TAPE,
        "--author",
        "http://kuser:USERINFO-SECRET-9@127.0.0.1:9/v1?api_key=QUERY-SECRET-9",
        "--timeout",
        "2",
        "--bus",
        s(&bus),
        "--json",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("error code=PROVIDER") && err.contains("provider error"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_str(&out).expect("the report is still printed");
    assert!(v["outcomes"]["provider_error"].as_u64().expect("n") >= 1);
    let text = std::fs::read_to_string(&bus).expect("the Bus is still written");
    assert!(text.contains("provider-error"), "{text}");
    for secret in ["USERINFO-SECRET-9", "QUERY-SECRET-9", "kuser"] {
        assert!(!text.contains(secret), "{secret} is on the Bus");
        assert!(
            !out.contains(secret) && !err.contains(secret),
            "{secret} printed"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

// ------------------------------------------------------- the desk's open path (review, item 1)

/// The first `n` lines of the bundled trend tape: a tape cut at a line boundary.
fn cut_tape(d: &Path, n: usize) -> PathBuf {
    let text =
        std::fs::read_to_string(root().join("tapes/trend-2025-04-09-s1.jsonl")).expect("tape");
    let cut: String = text.lines().take(n).map(|l| format!("{l}\n")).collect();
    let p = d.join("cut.jsonl");
    std::fs::write(&p, cut).expect("write");
    p
}

/// `run` and `tape info` refused a tape cut short (`ends-early`), but the desk opened it,
/// played it to the cut and settled the book there as at the close. The desk now reads the
/// whole tape before it opens and refuses it with `run`'s own line and exit code, before the
/// terminal is taken over (so nothing but the error is written, and on stderr).
#[test]
fn the_desk_refuses_a_cut_tape_at_the_open_as_run_does() {
    let d = scratch("desk-cut");
    let tape = cut_tape(&d, 20_000);
    let want = format!(
        "{}: error code=TAPE line=20001 message=ends-early: ",
        tape.display()
    );
    let (code, out, err) = kestrel(&["run", "--tape", s(&tape), "--plans", PLANS]);
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with(&want), "run: {err}");
    let (code, out2, err) = kestrel(&["desk", "--tape", s(&tape), "--no-save"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.is_empty() && out2.is_empty(),
        "nothing on stdout: {out2:?}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with(&want), "desk: {err}");
    assert!(!err.contains("code=DESK"), "{err}");
    // Bare `kestrel` is the desk.
    let (code, _, err) = kestrel(&["--tape", s(&tape), "--no-save"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with(&want), "kestrel: {err}");
    // A bad line anywhere in the tape is refused at the open too, naming its line.
    let text =
        std::fs::read_to_string(root().join("tapes/trend-2025-04-09-s1.jsonl")).expect("tape");
    let mut lines: Vec<&str> = text.lines().collect();
    let n = lines.len();
    lines[n - 10] = "{\"type\":\"tick\"";
    let bad = d.join("bad-line.jsonl");
    std::fs::write(&bad, lines.join("\n") + "\n").expect("write");
    let (code, _, err) = kestrel(&["desk", "--tape", s(&bad), "--no-save"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "{}: error code=TAPE line={} ",
            bad.display(),
            n - 9
        )),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// `--open` reopens a saved session on the tape it names: a session on a tape that is cut
/// short is refused at the open the same way.
#[test]
fn reopening_a_session_on_a_cut_tape_is_refused_at_the_open() {
    let d = scratch("desk-cut-open");
    let tape = cut_tape(&d, 20_000);
    let session = d.join("s.jsonl");
    let head = serde_json::json!({
        "type": "desk-session", "v": 2, "tape": s(&tape), "tape_blake3": "",
        "settings": {"r_usd": 1000, "fill": "strict-cross-v1", "profile": "authoring-v2",
                     "copilot": false, "agent": null},
    });
    std::fs::write(&session, format!("{head}\n")).expect("write");
    let (code, _, err) = kestrel(&["desk", "--open", s(&session), "--no-save"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "{}: error code=TAPE line=20001 message=ends-early: ",
            tape.display()
        )),
        "{err}"
    );
    // The library's own open path refuses it too (the desk's tests and the thread the desk
    // opens its session on come here).
    let src = kestrel_desk::session::TapeSource::open(Some(s(&tape))).expect("read");
    let e = kestrel_desk::session::Session::open(
        src,
        kestrel_desk::session::Settings::default(),
        kestrel_desk::session::Opening::default(),
    )
    .err()
    .expect("refused");
    assert!(e.contains("code=TAPE") && e.contains("ends-early"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `kestrel agent` refused a cut tape only at its end, after asking the author at every
/// wake up to there (a command author was run). It now reads the whole tape first.
#[cfg(unix)]
#[test]
fn the_agent_refuses_a_cut_tape_before_its_author_is_asked() {
    let d = scratch("agent-cut");
    let tape = cut_tape(&d, 20_000);
    let marker = d.join("asked");
    let author = format!("cmd:cat >/dev/null; touch {}; echo PASS", s(&marker));
    let (code, out, err) = kestrel(&["agent", "--tape", s(&tape), "--author", &author]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty(), "no report: {out}");
    assert!(
        err.starts_with(&format!(
            "{}: error code=TAPE line=20001 message=ends-early: ",
            tape.display()
        )),
        "{err}"
    );
    assert!(!marker.exists(), "the author was asked");
    let _ = std::fs::remove_dir_all(&d);
}

// ------------------------------------------------------------- --author (review, item 2)

/// A bare `--author` string that named an existing file was run with `sh -c` whatever the
/// file was: `--author examples/chase.kestrel` printed `author command sh -c
/// examples/chase.kestrel` and ran the document as a script (the desk opened with a
/// provider-error footer). A Kestrel document (executable or not), a directory, or a file
/// that is not executable is now refused with what `--author` takes, at `agent` and at the
/// desk alike; an executable script and a command line still run (the documented bare form),
/// and `cmd:` runs anything.
#[cfg(unix)]
#[test]
fn an_author_that_is_a_document_or_not_executable_is_refused_not_run() {
    use std::os::unix::fs::PermissionsExt;
    let d = scratch("author-kind");
    let doc_x = d.join("chase.kestrel");
    std::fs::copy(root().join("examples/chase.kestrel"), &doc_x).expect("copy");
    std::fs::set_permissions(&doc_x, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let script = d.join("author.sh");
    std::fs::copy(root().join("examples/command-author.sh"), &script).expect("copy");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let cases: [(&str, &str); 4] = [
        ("examples/chase.kestrel", "is a Kestrel document"),
        (s(&doc_x), "is a Kestrel document"),
        (s(&script), "is a file that is not executable"),
        ("examples", "is a directory"),
    ];
    for (author, why) in cases {
        for verb in [
            &["agent", "--tape", TAPE][..],
            &["desk", "--tape", TAPE, "--no-save"][..],
        ] {
            let mut args = verb.to_vec();
            args.extend(["--author", author]);
            let (code, out, err) = kestrel(&args);
            assert_eq!(code, 1, "{args:?}: {out}{err}");
            assert!(out.is_empty(), "{args:?}: {out}");
            assert!(
                err.starts_with(&format!("error code=USAGE message={author} {why}, not an author: --author takes http(s)://HOST/v1")),
                "{args:?}: {err}"
            );
            assert!(
                err.contains("cmd:COMMAND") && err.contains(".jsonl"),
                "{err}"
            );
            assert_eq!(err.lines().count(), 1, "{err}");
        }
    }
    // The documented forms still run: an executable script, and cmd: for the one that is not.
    for author in [
        "examples/command-author.sh".to_string(),
        format!("cmd:sh {}", s(&script)),
    ] {
        let (code, out, err) = kestrel(&["agent", "--tape", TAPE, "--author", &author, "--json"]);
        assert_eq!(code, 0, "{author}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("report");
        assert_eq!(v["outcomes"]["invalid"], 0, "{author}");
        assert!(
            v["outcomes"]["supersede"].as_u64().expect("n") >= 1,
            "{author}"
        );
    }
    // An executable `#!` script is run even when all its lines are `#` lines (which alone
    // would read as a Kestrel document of comments): this one answers nothing, so every wake
    // is a provider error and the run fails as such, not as a refused --author.
    let quiet = d.join("quiet.sh");
    std::fs::write(
        &quiet,
        "#!/bin/sh
# an author that never answers
",
    )
    .expect("write");
    std::fs::set_permissions(&quiet, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let (code, _, err) = kestrel(&["agent", "--tape", TAPE, "--author", s(&quiet)]);
    assert_eq!(code, 1, "{err}");
    assert!(!err.contains("code=USAGE"), "run, not refused: {err}");
    assert!(err.contains("code=PROVIDER"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

// --------------------------------------- the desk's codes and exit codes (review, item 4)

/// The desk wrapped every refusal in `code=DESK` and exited 1: a document that fails to
/// parse printed `error code=DESK message=...: error code=PARSE ...` (while `run --plans`
/// exits 2, as the README says of a refused document), and a missing `--open` file printed
/// `code=DESK ... (os error 2)`. The desk now prints the inner error once with its own code
/// and exits as the other verbs do: 2 for a refused document, 1 for a usage or I/O error,
/// worded as theirs (`cannot read PATH: no such file`).
#[test]
fn the_desk_refuses_with_the_codes_and_exit_codes_of_the_other_verbs() {
    let d = scratch("desk-codes");
    let bad = d.join("bad.kestrel");
    std::fs::write(
        &bad,
        "PLAN x budget 1R ttl +5m\n  WHEN spot > 1\n  DO sell 5 ATM C @ spot\n",
    )
    .expect("write");
    let (run_code, _, run_err) = kestrel(&["run", "--tape", TAPE, "--plans", s(&bad)]);
    assert_eq!(run_code, 2, "{run_err}");
    let (code, out, err) = kestrel(&["desk", "--plans", s(&bad), "--no-save"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert_eq!(err, run_err, "the desk refuses the document as run does");
    assert!(
        err.starts_with(&format!("{}: error code=PARSE rule=syntax ", bad.display())),
        "{err}"
    );
    assert_eq!(err.matches("code=").count(), 1, "{err}");
    let missing = d.join("nonexistent");
    let no_such = format!(
        "error code=IO message=cannot read {}: no such file\n",
        missing.display()
    );
    for args in [
        &["desk", "--open", s(&missing)][..],
        &["desk", "--plans", s(&missing), "--no-save"][..],
        &["desk", "--tape", s(&missing), "--no-save"][..],
        &["desk", "--agent", s(&missing), "--no-save"][..],
        &["errors", "report", s(&missing)][..],
        &["run", "--tape", TAPE, "--plans", s(&missing)][..],
    ] {
        let (code, _, err) = kestrel(args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert_eq!(err, no_such, "{args:?}");
    }
    // A bad --r-usd or --fill is a usage error, as at `run`.
    for (args, want) in [
        (
            &["desk", "--r-usd", "-5", "--no-save"][..],
            "error code=USAGE message=--r-usd must be a positive amount of dollars, got \"-5\"\n",
        ),
        // Read as `run` reads it; the desk keeps whole dollars (a session file's 1R).
        (
            &["desk", "--r-usd", "+1000", "--no-save"][..],
            "error code=USAGE message=--r-usd \"+1000\" is not written as plain digits: write whole dollars, like 1000\n",
        ),
        (
            &["desk", "--r-usd", "250.50", "--no-save"][..],
            "error code=USAGE message=--r-usd \"250.50\": the desk's 1R is whole dollars: write e.g. 1000\n",
        ),
        (
            &["desk", "--fill", "optimistic", "--no-save"][..],
            "error code=USAGE message=unknown fill model \"optimistic\" (known: strict-cross-v1)\n",
        ),
    ] {
        let (code, _, err) = kestrel(args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert_eq!(err, want, "{args:?}");
    }
    // A file that is no session: its own code, once.
    let (code, _, err) = kestrel(&["desk", "--open", "examples/house-agent.jsonl"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with(
            "error code=SESSION message=examples/house-agent.jsonl: not a desk session"
        ),
        "{err}"
    );
    assert_eq!(err.matches("code=").count(), 1, "{err}");
    // A saved Bus cut mid-line, seated as the author: its own code, naming the file, as
    // `agent` refuses it (it was wrapped: `code=USAGE message=…: line N: EOF …`).
    let bus = d.join("run.bus.jsonl");
    let (code, _, err) = kestrel(&["run", "--tape", TAPE, "--plans", PLANS, "--bus", s(&bus)]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&bus).expect("bus");
    let cut = d.join("cut.bus.jsonl");
    std::fs::write(&cut, &text[..text.len() - 20]).expect("write");
    let (code, _, agent_err) = kestrel(&["agent", "--tape", TAPE, "--author", s(&cut)]);
    assert_eq!(code, 2, "{agent_err}");
    let (code, _, err) = kestrel(&["desk", "--author", s(&cut), "--no-save"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!("error code=BUS message={}: line ", cut.display())),
        "{err}"
    );
    assert_eq!(err, agent_err, "the desk refuses the Bus as agent does");
    assert_eq!(err.matches("code=").count(), 1, "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_agent_still_streams_a_tape_from_a_pipe() {
    // The whole-tape check reads a regular file twice; a pipe is read once, and checked at
    // its end as `run` checks it.
    let tape = std::fs::read(root().join(TAPE)).expect("tape");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args([
            "agent",
            "--tape",
            "/dev/stdin",
            "--author",
            "examples/house-agent.jsonl",
        ])
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&tape);
    });
    let out = child.wait_with_output().expect("wait");
    writer.join().expect("writer");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("determinism "), "{stdout}");
}

#[test]
fn a_bare_author_word_on_path_is_a_command_whatever_the_directory_holds() {
    // `true` is on PATH; a directory of that name in the working directory does not make
    // it "a directory, not an author".
    let d = scratch("author-on-path");
    std::fs::create_dir_all(d.join("true")).expect("mkdir");
    let out = Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args(["agent", "--tape", s(&root().join(TAPE)), "--author", "true"])
        .current_dir(&d)
        .output()
        .expect("spawn");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("not an author"), "{err}");
    assert!(
        err.contains("`sh` wrote nothing on stdout"),
        "it ran `true` as the command: {err}"
    );
}

#[test]
fn the_desk_without_a_terminal_refuses_and_writes_nothing_to_stdout() {
    // A fresh HOME: nothing saved helps, and nothing may be written there either.
    let home = scratch("desk-no-tty");
    let out = Command::new(KESTREL)
        .arg("desk")
        .env("HOME", &home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        out.stdout.is_empty(),
        "no escape sequence or anything else on stdout: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        err.starts_with("error code=DESK message=the desk needs a terminal"),
        "{err}"
    );
    let written: Vec<_> = std::fs::read_dir(&home)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(written.is_empty(), "nothing saved: {written:?}");
}

/// Read a FIFO to its end on a thread (opening it blocks until a writer opens it too).
#[cfg(unix)]
fn drain_fifo(p: &Path) -> std::thread::JoinHandle<Vec<u8>> {
    let p = p.to_path_buf();
    std::thread::spawn(move || std::fs::read(&p).expect("read the FIFO"))
}

#[cfg(unix)]
fn is_fifo(p: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_fifo())
}

/// Every output was written to a temporary file renamed over the name asked for, whatever
/// it named: `-o FIFO` replaced the FIFO with a regular file (the reader never got a byte),
/// and as root `tape gen -o /dev/null` replaced the system's `/dev/null`. An existing file
/// that is not a regular one is now written into, as `>` would; `/dev/stdout` works.
#[cfg(unix)]
#[test]
fn an_output_that_is_a_fifo_or_a_device_is_written_into_never_replaced() {
    let d = scratch("fifo-out");
    let fifo = d.join("out.fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo")
            .success()
    );
    let (_, want, _) = kestrel(&["tape", "gen", "--seed", "4", "-o", "-"]);
    assert!(want.starts_with("{\"type\":\"header\""), "{want:.200}");
    // tape gen
    let reader = drain_fifo(&fifo);
    let (code, _, err) = kestrel(&["tape", "gen", "--seed", "4", "-o", s(&fifo)]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        String::from_utf8(reader.join().expect("reader")).unwrap(),
        want
    );
    assert!(is_fifo(&fifo), "the FIFO is still a FIFO");
    // run --bus
    let reader = drain_fifo(&fifo);
    let (code, out, err) = kestrel(&[
        "run",
        "--tape",
        TAPE,
        "--plans",
        PLANS,
        "--r-usd",
        "1000",
        "--bus",
        s(&fifo),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let bus = String::from_utf8(reader.join().expect("reader")).unwrap();
    assert!(bus.starts_with("{\"close\""), "{bus:.200}");
    assert!(
        bus.trim_end().ends_with("\"type\":\"session-end\"}"),
        "{bus:.200}"
    );
    assert!(is_fifo(&fifo));
    // tape import
    let reader = drain_fifo(&fifo);
    let (code, _, err) = kestrel(&[
        "tape",
        "import",
        "examples/import/spy-mbp-1.dbn",
        "-o",
        s(&fifo),
    ]);
    assert_eq!(code, 0, "{err}");
    let tape = String::from_utf8(reader.join().expect("reader")).unwrap();
    assert!(tape.starts_with("{\"type\":\"header\""), "{tape:.200}");
    assert!(is_fifo(&fifo));
    assert!(temp_files(&d).is_empty(), "{:?}", temp_files(&d));
    // grade --out /dev/stdout: a link to the pipe, resolved by the kernel.
    let (code, out, err) = kestrel(&[
        "grade",
        "examples/grade.kestrel",
        "--draws",
        "2",
        "--resamples",
        "40",
        "--json",
        "--out",
        "/dev/stdout",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"cells\""), "{out:.300}");
    // ... and when standard output is a file opened to append (`>> log`): appended to
    // through the descriptor, not replaced by a rename nor written over from its start.
    let log = d.join("run.log");
    std::fs::write(&log, "PRE\n").expect("write");
    let ino = |p: &Path| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(p).expect("stat").ino()
    };
    let before = ino(&log);
    let f = std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .expect("open");
    let st = Command::new(KESTREL)
        .args([
            "grade",
            "examples/grade.kestrel",
            "--draws",
            "2",
            "--resamples",
            "40",
            "--json",
            "--out",
            "/dev/stdout",
        ])
        .current_dir(root())
        .stdout(Stdio::from(f))
        .status()
        .expect("grade");
    assert!(st.success());
    let text = std::fs::read_to_string(&log).expect("read");
    assert!(text.starts_with("PRE\n{"), "{text:.200}");
    assert!(text.contains("\"cells\""), "{text:.200}");
    assert_eq!(
        ino(&log),
        before,
        "the same file, not a new one renamed over it"
    );
    // A directory is refused as one.
    let (code, _, err) = kestrel(&["tape", "gen", "-o", s(&d)]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("code=IO") && err.contains("is a directory"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// SIGTERM while `tape gen` wrote a family left the session being written as a hidden
/// temporary file; now the write stops at the signal, the file is removed, and the command
/// exits 1 with `code=INTERRUPTED`. The same holds for `tape import` (checked per 65,536
/// records and per 64 KiB written).
#[cfg(unix)]
#[test]
fn sigterm_during_tape_gen_leaves_no_temporary_file() {
    let d = scratch("sigterm-gen");
    let fam = d.join("fam");
    let mut child = Command::new(KESTREL)
        .args(["tape", "gen", "--count", "500", "-o", s(&fam)])
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let t = Instant::now();
    while !fam.is_dir() || std::fs::read_dir(&fam).expect("dir").count() < 3 {
        assert!(t.elapsed() < Duration::from_secs(60), "no session written");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: sends SIGTERM to the child we spawned.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = exit_within(&mut child, Duration::from_secs(10), "after SIGTERM");
    let out = child.wait_with_output().expect("output");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("error code=INTERRUPTED") && err.contains("SIGTERM"),
        "{err}"
    );
    assert!(temp_files(&fam).is_empty(), "{:?}", temp_files(&fam));
    let _ = std::fs::remove_dir_all(&d);
}

/// SIGTERM during `grade --out` killed the process (exit 143, no `code=INTERRUPTED`) and
/// left an earlier report at `--out`, though a grade that fails removes it so that no stale
/// report outlives the run. Now the grade stops at the next work unit, exits 1 with
/// `error code=INTERRUPTED`, removes the earlier file, and leaves no temporary file.
#[cfg(unix)]
#[test]
fn sigterm_during_grade_removes_the_earlier_out_and_says_interrupted() {
    let d = scratch("sigterm-grade");
    // A plan that enters on every tape, so every null draw is a replay: long enough to be
    // in flight when the signal lands.
    std::fs::write(
        d.join("g.kestrel"),
        "PLAN a budget 1R ttl 15:00\n  WHEN spot > 1\n  DO buy 1 shares @ ask\n  EXIT NOT plan(a).filled within 5m\n\nGRADE plan a OVER tapes/* FILL strict-cross-v1\n  VS null\n",
    )
    .expect("write");
    let out = d.join("out.json");
    std::fs::write(&out, "{\"stale\":true}\n").expect("write");
    let tapes = root().join("tapes");
    let mut child = Command::new(KESTREL)
        .args([
            "grade",
            "g.kestrel",
            "--tapes",
            s(&tapes),
            "--draws",
            "10000",
            "--json",
            "--out",
            "out.json",
        ])
        .current_dir(&d)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(Duration::from_millis(1000));
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "still grading"
    );
    // SAFETY: sends SIGTERM to the child we spawned.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = exit_within(&mut child, Duration::from_secs(10), "after SIGTERM");
    let o = child.wait_with_output().expect("output");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("error code=INTERRUPTED message=SIGTERM: "),
        "{err}"
    );
    assert_eq!(err.matches("error code=").count(), 1, "{err}");
    assert!(err.contains("note: removed the earlier out.json"), "{err}");
    assert!(!out.exists(), "the earlier report is gone");
    assert!(temp_files(&d).is_empty(), "{:?}", temp_files(&d));
    let _ = std::fs::remove_dir_all(&d);
}

// ------------------------------------------------- a replay is held to its recording

/// `kestrel agent` with the house agent on `tape` (and `plans`), its Bus saved to `d/name`:
/// the recording, and its determinism hash.
fn record_agent(d: &Path, name: &str, tape: &str, plans: &[&str]) -> (PathBuf, String) {
    let bus = d.join(name);
    let mut args = vec![
        "agent",
        "--tape",
        tape,
        "--author",
        "examples/house-agent.jsonl",
        "--bus",
        s(&bus),
    ];
    for p in plans {
        args.extend(["--plans", p]);
    }
    let (code, out, err) = kestrel(&args);
    assert_eq!(code, 0, "{err}");
    let hash = out
        .lines()
        .find_map(|l| l.strip_prefix("determinism "))
        .expect("a determinism line")
        .to_string();
    (bus, hash)
}

/// A Bus cut at a line boundary (`head -n 20`, a partial copy, the temporary file a SIGKILL
/// leaves) replayed with exit 0 and another determinism hash, as if it were a session. A
/// complete Bus ends with `session-end`: one that does not is refused, naming its last line.
#[test]
fn a_bus_cut_at_a_line_boundary_is_refused_not_replayed_as_another_session() {
    let d = scratch("replay-cut");
    let (bus, hash) = record_agent(&d, "h.bus.jsonl", TAPE, &[]);
    let text = std::fs::read_to_string(&bus).expect("bus");
    let lines: Vec<&str> = text.lines().collect();
    for n in [1, 5, 20, lines.len() - 1] {
        let cut = d.join(format!("cut{n}.jsonl"));
        std::fs::write(&cut, lines[..n].join("\n") + "\n").expect("write");
        let out_bus = d.join("again.jsonl");
        let (code, out, err) = kestrel(&[
            "agent",
            "--tape",
            TAPE,
            "--author",
            s(&cut),
            "--bus",
            s(&out_bus),
        ]);
        assert_eq!((code, out.as_str()), (2, ""), "{n}: {err}");
        assert_eq!(
            err,
            format!(
                "error code=BUS message={}: the Bus ends at line {n} without session-end: it was cut off (a killed run or a partial copy); it cannot replay its session\n",
                cut.display()
            )
        );
        assert!(!out_bus.exists() && temp_files(&d).is_empty(), "{n}");
    }
    // The whole Bus replays to its hash.
    let (code, out, err) = kestrel(&["agent", "--tape", TAPE, "--author", s(&bus)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("determinism {hash}")), "{out}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A `kestrel run` Bus given to `agent --author` was refused as "arms no document: give the
/// --plans", then, with them, as a Bus "edited, or recorded on another tape or by another
/// version", none of which was so: it has no author to replay, and the refusal says that and
/// what re-runs it.
#[test]
fn a_run_bus_given_as_an_author_is_refused_as_one_with_no_author_to_replay() {
    let d = scratch("replay-run-bus");
    let bus = d.join("run.bus.jsonl");
    let (code, _, err) = kestrel(&["run", "--tape", TAPE, "--plans", PLANS, "--bus", s(&bus)]);
    assert_eq!(code, 0, "{err}");
    for plans in [&[][..], &["--plans", PLANS][..]] {
        let mut args = vec!["agent", "--tape", TAPE, "--author", s(&bus)];
        args.extend_from_slice(plans);
        let (code, out, err) = kestrel(&args);
        assert_eq!((code, out.as_str()), (2, ""), "{err}");
        assert_eq!(
            err,
            format!(
                "error code=BUS message={}: this Bus was written by `kestrel run`: it has no wake and no agent turn, so there is no author to replay; `kestrel run` with its tape and --plans re-runs it (the same Bus, the same determinism hash)\n",
                bus.display()
            )
        );
    }
    // Cut, it is refused as cut first (a cut agent Bus may not have reached its open wake).
    let text = std::fs::read_to_string(&bus).expect("bus");
    let cut = d.join("cut.jsonl");
    std::fs::write(
        &cut,
        text.lines().take(3).collect::<Vec<_>>().join("\n") + "\n",
    )
    .expect("write");
    let (code, _, err) = kestrel(&["agent", "--tape", TAPE, "--author", s(&cut)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("without session-end: it was cut off"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A Bus recorded on the range tape with `--plans chase.kestrel` replayed with exit 0 and a
/// new hash on the trend tape, without its plans, or at `--r-usd 250`, though its
/// `session-start` names the tape and 1R. Each is refused before the tape is played, naming
/// the recorded value, the one given and the flag to give.
#[test]
fn a_replay_on_another_tape_1r_or_book_than_its_recording_is_refused() {
    let d = scratch("replay-other");
    let chase = "examples/chase.kestrel";
    let (bus, hash) = record_agent(&d, "ag.jsonl", TAPE, &[chase]);
    let b = s(&bus);
    let refused = |args: &[&str], want: &str| {
        let mut all = vec!["agent", "--author", b];
        all.extend(args);
        let (code, out, err) = kestrel(&all);
        assert_eq!((code, out.as_str()), (2, ""), "{args:?}: {err}");
        let head = format!("error code=BUS message={b}: this is not the session the Bus records: ");
        assert!(
            err.starts_with(&head) && err.contains(want),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    };
    refused(
        &[
            "--tape",
            "tapes/trend-2025-04-09-s1.jsonl",
            "--plans",
            chase,
        ],
        "it was recorded on tape range-2025-04-09-s2 (2025-04-09), not trend-2025-04-09-s1 (2025-04-09): give that tape with --tape",
    );
    refused(
        &["--tape", TAPE],
        "it armed 1 document (plans breakout-chase, BLAKE3 ",
    );
    refused(
        &["--tape", TAPE],
        "this replay arms no document: give the --plans it was recorded with",
    );
    refused(
        &["--tape", TAPE, "--plans", chase, "--r-usd", "250"],
        "it was recorded at 1R = $1000.00, not $250.00: give --r-usd 1000.00",
    );
    refused(
        &[
            "--tape",
            TAPE,
            "--plans",
            chase,
            "--plans",
            "examples/shares.kestrel",
        ],
        "this replay arms 2 documents",
    );
    // As recorded, it replays to its hash.
    let (code, out, err) = kestrel(&["agent", "--tape", TAPE, "--author", b, "--plans", chase]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("determinism {hash}")), "{out}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A replay re-admitted only the turns: a Bus with its orders, fires or vetoes deleted or
/// its plan states rewritten replayed to the original hash, exit 0. The replay's Bus is now
/// compared with the recording line by line; the first line that differs is refused, both
/// lines quoted, and nothing is written.
#[test]
fn a_replay_that_does_not_write_its_recording_line_for_line_is_refused() {
    let d = scratch("replay-diverged");
    let chase = "examples/chase.kestrel";
    let (bus, _) = record_agent(&d, "ag.jsonl", TAPE, &[chase]);
    let text = std::fs::read_to_string(&bus).expect("bus");
    let lines: Vec<&str> = text.lines().collect();
    let at = |ty: &str| {
        lines
            .iter()
            .position(|l| l.contains(&format!("\"type\":\"{ty}\"")))
            .unwrap_or_else(|| panic!("no {ty} on the Bus"))
    };
    let dropped = |i: usize| {
        let mut l = lines.clone();
        l.remove(i);
        l.join("\n") + "\n"
    };
    let state = lines
        .iter()
        .position(|l| l.contains("\"state\":\"done\""))
        .expect("a plan done");
    let edited = {
        let mut l: Vec<String> = lines.iter().map(|x| x.to_string()).collect();
        l[state] = l[state].replace("\"state\":\"done\"", "\"state\":\"armed\"");
        l.join("\n") + "\n"
    };
    let cases = [
        ("placed", dropped(at("order-placed")), at("order-placed")),
        ("fired", dropped(at("plan-fired")), at("plan-fired")),
        ("state", edited, state),
    ];
    for (what, tampered, i) in cases {
        let file = d.join(format!("{what}.jsonl"));
        std::fs::write(&file, tampered).expect("write");
        let out_bus = d.join("again.jsonl");
        let (code, out, err) = kestrel(&[
            "agent",
            "--tape",
            TAPE,
            "--plans",
            chase,
            "--author",
            s(&file),
            "--bus",
            s(&out_bus),
        ]);
        assert_eq!((code, out.as_str()), (2, ""), "{what}: {err}");
        let n = i + 1;
        let head = format!(
            "error code=BUS-DIVERGED line={n} message={}: line {n}: the replay wrote another event than the recording: recorded ",
            file.display()
        );
        assert!(err.starts_with(&head), "{what}: {err}");
        assert!(err.contains("; replayed "), "{what}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!out_bus.exists() && temp_files(&d).is_empty(), "{what}");
    }
    let _ = std::fs::remove_dir_all(&d);
}
