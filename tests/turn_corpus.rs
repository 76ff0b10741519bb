//! Every row of the shared turn corpus (`../shared/corpus/turns.tsv`) gets its outcome.
//! A fresh clone has no `../shared`: the test then says it is skipping and passes.

use kestrel_desk::turn::{
    self, AuthorKind, Outcome, Profile, Reply, Source, TurnContext, WakePhase,
};
use std::path::PathBuf;

fn corpus_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if dir.join("turns.tsv").is_file() {
        Some(dir)
    } else {
        println!(
            "skipping the shared turn corpus: {} is absent (a fresh clone has no ../shared)",
            dir.display()
        );
        None
    }
}

fn context(phase: &str) -> TurnContext {
    let (p, prof) = match phase {
        "mid" => (WakePhase::Mid, Profile::AuthoringV2),
        "open" => (WakePhase::Open, Profile::AuthoringV2),
        "open+viewshop" => (WakePhase::Open, Profile::ViewshopV2),
        "mid+viewshop" => (WakePhase::Mid, Profile::ViewshopV2),
        other => panic!("unknown phase `{other}` in turns.tsv"),
    };
    TurnContext::new(p, prof, AuthorKind::File)
}

/// Check what a row's detail column promises, where it is checkable.
fn check_detail(file: &str, raw: &str, detail: &str, t: &turn::RoutedTurn) -> Result<(), String> {
    let d = detail.to_lowercase();
    if let Some(rest) = d.strip_prefix("journal has ") {
        let n: usize = rest
            .split_whitespace()
            .next()
            .and_then(|x| x.parse().ok())
            .ok_or_else(|| format!("{file}: unreadable detail `{detail}`"))?;
        if t.journal.len() != n {
            return Err(format!(
                "{file}: journal {:?}, expected {n} lines",
                t.journal
            ));
        }
    }
    if d.contains("verbatim") {
        let want = raw.trim().strip_prefix("STAND-DOWN ").unwrap_or("").trim();
        match &t.outcome {
            Outcome::StandDown { reason } if reason == want => {}
            o => return Err(format!("{file}: reason not verbatim: {o:?}, want {want:?}")),
        }
    }
    if d.contains("trailing comment") {
        match &t.outcome {
            Outcome::ViewRequest {
                reason: Some(r), ..
            } if !r.is_empty() => {}
            o => return Err(format!("{file}: no reason: {o:?}")),
        }
    }
    if d.contains("canonical kestrel") {
        if t.source != Source::JsonEnvelope || t.kestrel.trim_start().starts_with('{') {
            return Err(format!("{file}: not logged as Kestrel: {:?}", t.kestrel));
        }
        kestrel_desk::lang::check(&t.kestrel, kestrel_desk::lang::Mode::Turn)
            .map_err(|e| format!("{file}: logged text does not check: {e:?}"))?;
    }
    if d.contains("fence") && !t.kestrel.is_empty() && t.kestrel.contains("```") {
        return Err(format!("{file}: fence left in {:?}", t.kestrel));
    }
    if d.contains("expected keys") {
        let m = t
            .outcome
            .errors()
            .first()
            .map(|e| e.message.clone())
            .unwrap_or_default();
        for k in ["journal", "actions", "kind", "requestView"] {
            if !m.contains(k) {
                return Err(format!("{file}: message does not name `{k}`: {m}"));
            }
        }
    }
    if d.contains("rule syntax") {
        let e = t.outcome.errors().first().cloned();
        match e {
            Some(e) if e.rule == "syntax" && e.message.contains("own line") => {}
            e => return Err(format!("{file}: not a guided syntax error: {e:?}")),
        }
    }
    if d.contains("not on the menu") {
        let e = t.outcome.errors().first().cloned();
        match e {
            Some(e) if e.rule == "menu" && e.message.contains("the menu is {") => {}
            e => return Err(format!("{file}: not a menu error naming the menu: {e:?}")),
        }
    }
    if d.contains("schedules the next wake") {
        match &t.outcome {
            Outcome::Supersede { wakes, .. } if !wakes.is_empty() => {}
            o => return Err(format!("{file}: no wake scheduled: {o:?}")),
        }
    }
    if d.contains("fenced block is the document") && t.kestrel.contains("Looking") {
        return Err(format!("{file}: prose leaked into {:?}", t.kestrel));
    }
    Ok(())
}

#[test]
fn every_corpus_turn_gets_its_outcome() {
    let Some(dir) = corpus_dir() else { return };
    let tsv = std::fs::read_to_string(dir.join("turns.tsv")).expect("read turns.tsv");
    let mut failures = Vec::new();
    let mut rows = 0;
    for line in tsv.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        let (file, phase, want) = (cols[0], cols[1], cols[2]);
        let detail = cols.get(3).copied().unwrap_or("");
        let raw = std::fs::read_to_string(dir.join(file)).expect("read turn");
        let ctx = context(phase);
        let t = turn::route(&Reply::text(raw.clone()), &ctx);
        rows += 1;
        if t.outcome.name() != want {
            failures.push(format!(
                "{file} at {phase}: got {} ({:?}), want {want}",
                t.outcome.name(),
                t.outcome
            ));
            continue;
        }
        if let Err(e) = check_detail(file, &raw, detail, &t) {
            failures.push(e);
        }
    }
    assert!(rows >= 15, "only {rows} rows read");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    println!("{rows} corpus turns routed as expected");
}
