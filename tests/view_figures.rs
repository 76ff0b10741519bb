//! The figures docs/views.md reports, measured with cl100k on the bundled sessions, and the
//! goals asserted: at most 12 tokens per appended bar, at most 900 tokens for a full default
//! View. Run with `--nocapture` to see them:
//! `cargo test --release --test view_figures -- --nocapture`.

mod common;

use kestrel_desk::market::{Ts, open_tape};
use kestrel_desk::view::{self, Replay, Snapshot, render::keyframe_every, tape_section};

/// The same bars as JSON objects, the shape an envelope-era View would send.
fn bars_json(rep: &Replay<impl std::io::BufRead>, size: u32, now: Ts) -> String {
    let bars = view::render::visible_bars(&rep.bars, size, now, 2);
    let rows: Vec<serde_json::Value> = bars
        .iter()
        .map(|b| {
            serde_json::json!({
                "t": b.start.to_string().get(..5).unwrap_or(""),
                "o": b.open.to_f64(), "h": b.high.to_f64(), "l": b.low.to_f64(), "c": b.close.to_f64(),
            })
        })
        .collect();
    serde_json::to_string(
        &serde_json::json!({"tape": {"sym": rep.signal.as_str(), "bar": "5m", "bars": rows}}),
    )
    .unwrap_or_default()
}

#[test]
fn view_token_figures() {
    let mut per_bar_text: Vec<usize> = Vec::new();
    let mut per_bar_json: Vec<i64> = Vec::new();
    let mut full_default: Vec<usize> = Vec::new();
    let mut full_default_json: Vec<usize> = Vec::new();
    let mut unbudgeted = view::default_view();
    unbudgeted.budget = None;
    for path in common::bundled_tapes() {
        let mut rep = Replay::new(open_tape(&path).expect("tape"), &unbudgeted).expect("replay");
        let mut prev: Option<(usize, usize, usize)> = None;
        let mut t = Ts::parse("09:35:00.000").expect("t").ms();
        let close = Ts::parse("16:00:00.000").expect("t").ms();
        while t <= close {
            rep.advance_to(Ts(t)).expect("advance");
            let now = Ts(t);
            let n = rep.bars.completed(300, now).len();
            let text = view::cl100k(&tape_section(&rep.bars, 300, now, 2, None));
            let json = view::cl100k(&bars_json(&rep, 300, now));
            if let Some((pn, pt, pj)) = prev
                && n == pn + 1
                && !(n - 1).is_multiple_of(keyframe_every(300))
            {
                per_bar_text.push(text - pt);
                per_bar_json.push(json as i64 - pj as i64);
            }
            prev = Some((n, text, json));
            if t.is_multiple_of(30 * 60_000) {
                let r = rep.frame(&unbudgeted, &Snapshot::default(), None, 0, &view::cl100k);
                full_default.push(r.tokens);
                // The same information as JSON: the Frame's lines as structured fields.
                let j = serde_json::json!({
                    "frame": {"tape": rep.header.name, "t": now.to_string()},
                    "tape": serde_json::from_str::<serde_json::Value>(&bars_json(&rep, 300, now)).unwrap_or_default(),
                    "panes": r.text.lines().skip(1).filter(|l| !l.starts_with('@') && !l.starts_with(|c: char| c.is_ascii_digit() && l.len() < 30)).collect::<Vec<_>>(),
                });
                full_default_json
                    .push(view::cl100k(&serde_json::to_string(&j).unwrap_or_default()));
            }
            t += 60_000;
        }
    }
    let avg = |v: &[usize]| v.iter().sum::<usize>() as f64 / v.len().max(1) as f64;
    let avg_text = avg(&per_bar_text);
    let max_text = per_bar_text.iter().copied().max().unwrap_or(0);
    let avg_json = per_bar_json.iter().sum::<i64>() as f64 / per_bar_json.len().max(1) as f64;
    let max_full = full_default.iter().copied().max().unwrap_or(0);
    let avg_full = avg(&full_default);
    let avg_full_json = avg(&full_default_json);
    println!(
        "tokens per appended 5m bar (text): mean {avg_text:.2}, max {max_text}, over {} bars",
        per_bar_text.len()
    );
    println!("tokens per appended 5m bar (JSON objects): mean {avg_json:.2}");
    println!(
        "full default View (no budget, every 30 min, 3 sessions): mean {avg_full:.0}, max {max_full}"
    );
    println!("the same information as JSON: mean {avg_full_json:.0}");
    assert!(per_bar_text.len() > 100);
    assert!(
        avg_text <= 12.0,
        "goal: at most 12 tokens per appended bar, measured {avg_text:.2}"
    );
    assert!(
        max_full <= 900,
        "goal: a full default View within 900 tokens, measured {max_full}"
    );
}
