//! The `turn`, `tokens` and `card` verbs, run as a user would; and the card's examples.

use kestrel_desk::lang::{self, Mode, card};
use kestrel_desk::tokens::{self, Encoding};
use kestrel_desk::turn::{
    self, AuthorKind, Menu, Profile, Reply, TurnClass, TurnContext, WakePhase,
};
use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kestrel"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn tmp(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kestrel-turn-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = bin().args(args).output().expect("run kestrel");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn json_outcome(path: &Path, extra: &[&str]) -> (i32, serde_json::Value) {
    let p = path.to_string_lossy().to_string();
    let mut args = vec!["turn", p.as_str(), "--json"];
    args.extend_from_slice(extra);
    let (code, out, err) = run(&args);
    let v: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    (code, v)
}

#[test]
fn turn_verb_outcomes_and_exit_codes() {
    let cases: &[(&str, &[&str], &str, i32)] = &[
        ("STAND-DOWN no edge\n", &[], "stand-down", 0),
        ("# quiet\n", &[], "pass", 0),
        ("", &[], "pass", 0),
        ("", &["--author", "model"], "provider-error", 2),
        ("CANCEL p\n", &[], "cancel", 0),
        (
            "SHOW VIEW v\n  tape\n",
            &["--phase", "open", "--profile", "viewshop-v2"],
            "view-request",
            0,
        ),
        ("SHOW VIEW v\n  tape\n", &[], "invalid", 2),
        (
            "PLAN x budget 0.2R ttl 15:00 WHEN spot > hod DO buy 1 ATM C @ fair\n",
            &[],
            "invalid",
            2,
        ),
        ("{\"actions\":[", &[], "truncated", 2),
        (
            "PLAN p budget 0.1R ttl 15:00\n  WHEN spot > hod\n  DO buy 1 ATM C @ fair\n",
            &[],
            "supersede",
            0,
        ),
    ];
    for (i, (text, extra, want, code)) in cases.iter().enumerate() {
        let p = tmp(&format!("case-{i}.txt"), text);
        let (c, v) = json_outcome(&p, extra);
        assert_eq!(v["outcome"], *want, "{text:?}: {v}");
        assert_eq!(c, *code, "{text:?}");
    }
    let (c, _, err) = run(&["turn", "/nonexistent/turn.txt"]);
    assert_eq!(c, 1, "{err}");
    let (c, _, _) = run(&["turn", "x.txt", "--phase", "later"]);
    assert_eq!(c, 1);
}

#[test]
fn turn_verb_text_output() {
    let p = root().join("examples/turns/01-rider-with-journal.txt");
    let (c, out, _) = run(&["turn", &p.to_string_lossy()]);
    assert_eq!(c, 0);
    assert!(out.starts_with("outcome: supersede (authored)"), "{out}");
    assert!(out.contains("journal:\n  Thesis:"), "{out}");
    assert!(out.contains("tokens (cl100k): reply "), "{out}");
    let p = tmp("bad.txt", "STAND-DOWN a\nCANCEL b\n");
    let (c, out, err) = run(&["turn", &p.to_string_lossy()]);
    assert_eq!(c, 2);
    assert!(out.contains("outcome: invalid"), "{out}");
    assert!(err.contains("rule=turn-mix"), "{err}");
}

#[test]
fn example_turns_route_as_documented() {
    let want = [
        ("01-rider-with-journal.txt", "supersede"),
        ("02-stand-down.txt", "stand-down"),
        ("03-large-nine-clauses.txt", "supersede"),
    ];
    for (f, outcome) in want {
        let src = std::fs::read_to_string(root().join("examples/turns").join(f)).expect("read");
        let ctx = TurnContext::new(WakePhase::Mid, Profile::AuthoringV2, AuthorKind::Human);
        let t = turn::route(&Reply::text(src.clone()), &ctx);
        assert_eq!(t.outcome.name(), outcome, "{f}");
        assert_eq!(t.kestrel, src, "{f} is canonical");
        if outcome == "supersede" {
            assert!(!t.journal.is_empty(), "{f} has a journal");
        }
    }
    // The large plan has nine clauses.
    let src = std::fs::read_to_string(root().join("examples/turns/03-large-nine-clauses.txt"))
        .expect("read");
    let doc = lang::check(&src, Mode::Turn).expect("valid");
    match &doc.statements[0].kind {
        lang::ast::StatementKind::Plan(p) => assert_eq!(p.clauses.len(), 9),
        k => panic!("{k:?}"),
    }
}

#[test]
fn tokens_verb_table() {
    let files: Vec<String> = [
        "01-rider-with-journal.txt",
        "02-stand-down.txt",
        "03-large-nine-clauses.txt",
    ]
    .iter()
    .map(|f| {
        root()
            .join("examples/turns")
            .join(f)
            .to_string_lossy()
            .to_string()
    })
    .collect();
    let mut args = vec!["tokens", "--table"];
    args.extend(files.iter().map(String::as_str));
    let (c, out, err) = run(&args);
    assert_eq!(c, 0, "{err}");
    assert!(
        out.starts_with("| Turn | JSON envelope | pure Kestrel | saving |"),
        "{out}"
    );
    assert!(out.contains("| 02-stand-down (stand-down) |"), "{out}");
    assert!(out.contains("the escaping cost alone"), "{out}");
    // The stand-down saves the most, relatively: the envelope dominates short turns.
    let (c, out, _) = run(&["tokens", &files[1], "--encoding", "o200k"]);
    assert_eq!(c, 0);
    assert!(out.contains("tokens (o200k)"), "{out}");
    let (c, _, _) = run(&["tokens", "/nonexistent"]);
    assert_eq!(c, 1);
}

#[test]
fn stand_down_saves_more_than_a_plan() {
    let ctx = TurnContext::new(WakePhase::Mid, Profile::AuthoringV2, AuthorKind::Human);
    let pct = |f: &str| {
        let src = std::fs::read_to_string(root().join("examples/turns").join(f)).expect("read");
        let t = turn::route(&Reply::text(src.clone()), &ctx);
        let m = tokens::measure(&src, &t, Encoding::Cl100k).expect("meter");
        assert!(m.saving.is_some_and(|s| s > 0), "{f}: {m:?}");
        assert!(m.document_escaped >= m.document_raw, "{f}: {m:?}");
        m.saving_pct.unwrap_or_default()
    };
    assert!(pct("02-stand-down.txt") > pct("01-rider-with-journal.txt"));
    assert!(pct("01-rider-with-journal.txt") > 0.0);
}

fn count(s: &str) -> usize {
    tokens::count(s, Encoding::Cl100k).expect("cl100k")
}

#[test]
fn card_has_the_whole_language_under_3000_tokens() {
    for (phase, profile) in [
        (WakePhase::Mid, Profile::AuthoringV2),
        (WakePhase::Open, Profile::ViewshopV2),
    ] {
        let menu = Menu::for_wake(phase, profile, 0).prompt_text();
        let c = card::build(&menu, None, &count).expect("card");
        assert!(c.tokens < 3000, "{} tokens", c.tokens);
        assert!(c.dropped.is_empty());
        for r in lang::Rule::ALL {
            assert!(c.text.contains(r.name()), "rule {} missing", r.name());
        }
        for p in lang::ast::PANE_CATALOG {
            assert!(c.text.contains(p), "pane {p} missing");
        }
        for kw in [
            "STAND-DOWN",
            "SHOW VIEW",
            "CANCEL",
            "PLAN",
            "WAKE",
            "VIEW",
            "fair",
            "crosses",
            "held",
            "## The menu",
        ] {
            assert!(c.text.contains(kw), "{kw} missing");
        }
        assert!(c.text.contains(menu.trim_end()));
    }
}

#[test]
fn card_examples_pass_check() {
    let menu = Menu::for_wake(WakePhase::Open, Profile::ViewshopV2, 0).prompt_text();
    let c = card::build(&menu, None, &count).expect("card");
    for (_, ex) in card::EXAMPLES {
        assert!(c.text.contains(ex), "example not printed: {ex}");
        assert!(
            lang::check(ex, Mode::File).is_ok(),
            "{ex}: {:?}",
            lang::check(ex, Mode::File).err()
        );
        // And through the verb itself.
        let p = tmp("card-example.kestrel", ex);
        let (code, _, err) = run(&["check", &p.to_string_lossy()]);
        assert_eq!(code, 0, "{err}");
    }
    let ctx = TurnContext::new(WakePhase::Open, Profile::ViewshopV2, AuthorKind::Model);
    for d in card::DIRECTIVE_EXAMPLES {
        assert!(c.text.contains(d), "directive example not printed: {d}");
        assert!(lang::check(d, Mode::Turn).is_ok(), "{d}");
        assert_eq!(
            turn::route(&Reply::text(*d), &ctx).class(),
            TurnClass::Authored,
            "{d}"
        );
    }
}

#[test]
fn card_budget_drops_and_says_so() {
    let menu = Menu::for_wake(WakePhase::Mid, Profile::AuthoringV2, 0).prompt_text();
    let full = card::build(&menu, None, &count).expect("card");
    let c = card::build(&menu, Some(full.tokens - 1), &count).expect("card");
    assert!(c.tokens < full.tokens);
    assert_eq!(c.dropped.first().map(String::as_str), Some("examples"));
    assert!(
        c.text
            .contains("card shortened for its token budget: examples")
    );
    assert_eq!(c.tokens, count(&c.text));
    assert!(card::build(&menu, Some(50), &count).is_err());
    let (code, out, err) = run(&["card", "--budget", "1500"]);
    assert_eq!(code, 0);
    assert!(count(&out) <= 1500, "{err}");
    assert!(err.contains("dropped: examples"), "{err}");
    let (code, _, _) = run(&["card", "--budget", "10"]);
    assert_eq!(code, 1);
}

#[test]
fn profiles_are_versioned_text() {
    for p in Profile::ALL {
        let text = p.prompt();
        assert!(text.starts_with(&format!("profile: {}", p.name())));
        assert!(text.contains("{{menu}}") && text.contains("{{card}}"));
        let r = p.render("MENU", "CARD");
        assert!(r.contains("MENU") && r.contains("CARD") && !r.contains("{{"));
        assert_eq!(
            p.prompt_hash(),
            blake3::hash(text.as_bytes()).to_hex().to_string()
        );
    }
}

#[test]
fn an_oversized_reply_is_marked_an_estimate() {
    // 320,000 bytes, past the 256 KiB limit: refused unread, charged a quarter of its bytes.
    let big = "# x y z\n".repeat(40_000);
    let p = tmp("oversized.txt", &big);
    let path = p.to_str().unwrap();
    let est = tokens::estimate(big.len());
    let (_, out, _) = run(&["turn", path]);
    assert!(
        out.contains(&format!(
            "reply ~{est} (estimate: over the 256 KiB limit, refused unread)"
        )),
        "{out}"
    );
    let (_, v) = json_outcome(&p, &[]);
    assert_eq!(v["tokens"]["reply"], est);
    assert_eq!(v["tokens"]["reply_estimated"], true);
    // A reply within the limit is counted, and says so.
    let small = tmp("small.txt", "# a comment\n");
    let (_, v) = json_outcome(&small, &[]);
    assert_eq!(v["tokens"]["reply_estimated"], false);
    let (_, out, _) = run(&["turn", small.to_str().unwrap()]);
    assert!(!out.contains('~'), "{out}");
}
