//! Views and the Frame: every pane on a hand-written tape with numbers worked out here,
//! determinism, prefix stability of the tape pane over a whole bundled session, and budgets
//! that hold at every minute of every bundled session (measured with cl100k).

mod common;

use kestrel_desk::lang;
use kestrel_desk::lang::ast::{StatementKind, View};
use kestrel_desk::market::{TapeReader, Ts, open_tape};
use kestrel_desk::view::snapshot::{FillRow, JournalRow, OrderRow, PlanRow, PositionRow};
use kestrel_desk::view::{self, Replay, Snapshot, render::keyframe_every, tape_section};

const TINY: &str = r#"{"type":"header","v":1,"name":"tiny","date":"2025-04-09","open":"09:30","close":"16:00","symbols":{"SPX":{"prior_close":4990.00},"SPY":{"prior_close":499.00,"strike_step":1.00}},"vol":{"SPY":{"atm_iv":0.20,"skew":0}},"rate":0}
{"type":"tick","ts":"09:30:00.000","sym":"SPX","px":5000.00,"sz":0}
{"type":"tick","ts":"09:30:00.000","sym":"SPY","px":500.00,"sz":100}
{"type":"tick","ts":"09:31:00.000","sym":"SPX","px":5010.00,"sz":0}
{"type":"tick","ts":"09:33:00.000","sym":"SPX","px":4990.00,"sz":0}
{"type":"tick","ts":"09:34:59.000","sym":"SPX","px":4995.00,"sz":0}
{"type":"tick","ts":"09:35:00.000","sym":"SPX","px":5005.00,"sz":0}
{"type":"tick","ts":"09:35:00.000","sym":"SPY","px":502.00,"sz":300}
{"type":"headline","ts":"09:36:00.000","text":"Test headline"}
{"type":"tick","ts":"09:39:59.000","sym":"SPX","px":5020.00,"sz":0}
{"type":"tick","ts":"09:40:00.000","sym":"SPX","px":5025.00,"sz":0}
"#;

fn view_of(src: &str) -> View {
    match lang::check(src, lang::Mode::File)
        .expect("view parses")
        .statements
        .remove(0)
        .kind
    {
        StatementKind::View(v) => v,
        _ => panic!("not a view"),
    }
}

fn tiny_at(view: &View, at: Ts) -> Replay<std::io::Cursor<&'static [u8]>> {
    let r = TapeReader::new(std::io::Cursor::new(TINY.as_bytes())).expect("tiny tape");
    let mut rep = Replay::new(r, view).expect("replay");
    rep.advance_to(at).expect("advance");
    rep
}

fn at(s: &str) -> Ts {
    Ts::parse(s).expect("time")
}

#[test]
fn market_panes_on_a_hand_written_tape() {
    let v = view_of(
        "VIEW all\n  tape 5m\n  levels\n  chain 0dte strikes 2\n  velocity 1m\n  headlines\n",
    );
    let rep = tiny_at(&v, at("09:40:00.000"));
    let r = rep.frame(&v, &Snapshot::default(), None, 0, &view::cl100k);
    let text = &r.text;
    // Tape: 5m bars complete by 09:40:00 are 09:30 and 09:35. Anchor = first open 5000.00.
    // 09:30: o 5000 (0bp) h 5010 (+0.2% = 20bp) l 4990 (-20bp) c 4995 (-0.1% = -10bp).
    // 09:35: o 5005 (+10bp) h 5020 (+40bp) l 5005 (+10bp) c 5020 (+40bp); 09:40 is forming.
    assert!(
        text.contains("@09:30 5000.00\n09:30 0 20 -20 -10\n09:35 10 40 10 40\n"),
        "{text}"
    );
    // Levels: SPX prints carry size 0, so VWAP is the equal-weight mean of its 7 prints:
    // (5000+5010+4990+4995+5005+5020+5025)/7 = 35045/7 = 5006.428... -> 5006.43.
    assert!(
        text.contains(
            "spot 5025.00 hod 5025.00 lod 4990.00 vwap 5006.43 open 5000.00 prior-close 4990.00"
        ),
        "{text}"
    );
    assert!(text.contains("SPY spot 502.00"));
    // Chain: ATM is the strike nearest SPY 502.00; with rate 0 put-call parity is
    // C - P = S - K, so at 502 the fairs are equal and at 500 the call is 2.00 over the put.
    let row = |k: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{k} ")) || l.starts_with(&format!("{k}* ")))
            .unwrap_or_else(|| panic!("row {k}: {text}"))
            .to_string()
    };
    let fairs = |l: &str| {
        let w: Vec<&str> = l.split_whitespace().collect();
        (
            w[2].parse::<f64>().expect("c fair"),
            w[7].parse::<f64>().expect("p fair"),
        )
    };
    assert!(row("502").starts_with("502* "));
    let (c, p) = fairs(&row("502"));
    assert!((c - p).abs() < 0.011, "{c} {p}");
    let (c, p) = fairs(&row("500"));
    assert!((c - p - 2.0).abs() < 0.011, "{c} {p}");
    // Two strikes each side of 502: 500..504, five rows.
    assert!(row("500").starts_with("500 ") && row("504").starts_with("504 "));
    assert!(!text.contains("\n499 ") && !text.contains("\n505 "));
    // Velocity(1m): spot one minute earlier (09:39:00) was the 09:35:00 print 5005.00;
    // now 5025.00: (5025/5005 - 1) * 100 = +0.3996% -> +0.400%.
    assert!(text.contains("[velocity SPX 1m] +0.400%"), "{text}");
    assert!(text.contains("[headlines]\n09:36 Test headline\n"));
    assert!(text.starts_with("FRAME tape=tiny t=09:40:00 view=all\n"));
}

/// A tape whose exec symbol has no option chain (any `tape import` without options) showed
/// the chain pane's header over no rows, which read like a chain with nothing quoted. It
/// says the tape has no chain; a tape with one is unchanged.
#[test]
fn a_chain_pane_on_a_tape_without_options_says_so() {
    const NO_CHAIN: &str = r#"{"type":"header","v":1,"name":"one","date":"2025-04-09","open":"09:30","close":"16:00","symbols":{"SPY":{"prior_close":499.00}}}
{"type":"tick","ts":"09:30:00.000","sym":"SPY","px":500.00,"sz":100}
{"type":"tick","ts":"09:31:00.000","sym":"SPY","px":501.00,"sz":100}
"#;
    let v = view_of("VIEW c\n  chain 0dte strikes 3\n");
    let r = TapeReader::new(std::io::Cursor::new(NO_CHAIN.as_bytes())).expect("tape");
    let mut rep = Replay::new(r, &v).expect("replay");
    rep.advance_to(at("09:31:00.000")).expect("advance");
    let text = rep
        .frame(&v, &Snapshot::default(), None, 0, &view::cl100k)
        .text;
    assert!(
        text.contains(
            "[chain SPY 0dte ±3: strike C fair bid ask | P fair bid ask]\n(no option chain on this tape)\n"
        ),
        "{text}"
    );
    let text = tiny_at(&v, at("09:40:00.000"))
        .frame(&v, &Snapshot::default(), None, 0, &view::cl100k)
        .text;
    assert!(!text.contains("no option chain"), "{text}");
}

#[test]
fn book_panes_render_the_snapshot() {
    let v = view_of("VIEW b\n  kernel\n  plans\n  blotter last 1\n  journal last 1\n");
    let rep = tiny_at(&v, at("09:40:00.000"));
    let snap = Snapshot {
        positions: vec![PositionRow {
            plan: "probe".into(),
            instrument: "SPY 0dte 503 C".into(),
            qty: 2,
            avg_px: 0.60,
            mark: 0.65,
            model: true,
            // A plan that banked $45 on an earlier lot and holds two more.
            pnl_usd: 55.0,
            real_usd: 45.0,
            open_usd: 10.0,
        }],
        orders: vec![OrderRow {
            plan: "probe".into(),
            side: "sell".into(),
            qty: 1,
            instrument: "SPY 0dte 503 C".into(),
            limit: 1.20,
        }],
        plans: vec![PlanRow {
            name: "probe".into(),
            state: kestrel_desk::bus::PlanState::Filled,
            budget_r: 0.25,
            used_r: 0.12,
            ttl: "10:30".into(),
            note: "WHEN spot crosses above hod".into(),
        }],
        fills: vec![
            FillRow {
                time: "09:36:00".into(),
                plan: "probe".into(),
                side: "buy".into(),
                qty: 1,
                instrument: "SPY 0dte 503 C".into(),
                px: 0.55,
                quoted: false,
            },
            FillRow {
                time: "09:37:00".into(),
                plan: "probe".into(),
                side: "buy".into(),
                qty: 1,
                instrument: "SPY 0dte 503 C".into(),
                px: 0.65,
                quoted: false,
            },
        ],
        journal: vec![
            JournalRow {
                time: "09:35:10".into(),
                author: "agent".into(),
                text: "first".into(),
            },
            JournalRow {
                time: "09:36:10".into(),
                author: "agent".into(),
                text: "breakout is real".into(),
            },
        ],
        budget_used_r: 0.12,
        budget_r: Some(1.5),
        wakes_used: 2,
        wakes_budget: Some(6),
        pnl_usd: 10.0,
        pnl_r: 0.02,
        realised_usd: 0.0,
        realised_r: 0.0,
        open_usd: 10.0,
        open_r: 0.01,
        r_usd: 1000.0,
        order_log: Vec::new(),
        tape_total: None,
        settled: Vec::new(),
    };
    let r = rep.frame(
        &v,
        &snap,
        Some(view::Woke {
            by: "range-break".into(),
            why: "spot crosses above hod".into(),
        }),
        0,
        &view::cl100k,
    );
    let expected = "FRAME tape=tiny t=09:40:00 view=b woke=range-break why=spot crosses above hod
[kernel] pnl +$10 (+0.02R) risk used 0.12R of 1.50R wakes 2/6
pos probe +2 SPY 0dte 503 C avg 0.60 mark 0.65 open +$10 real +$45
order probe sell 1 SPY 0dte 503 C @ 1.20
[plans]
probe filled 0.12/0.25R ttl 10:30 (WHEN spot crosses above hod)
[blotter]
09:37:00 probe buy 1 SPY 0dte 503 C @ 0.65
[journal]
09:36:10 agent: breakout is real
";
    assert_eq!(r.text, expected);
    assert_eq!(r.tokens, view::cl100k(expected));

    // A loss is written as the Blotter writes it (`-$68`, not `$-68`); a position's open
    // loss and realised gain each keep their own sign.
    let mut loss = snap.clone();
    loss.pnl_usd = -67.98;
    loss.pnl_r = -0.068;
    loss.positions[0].open_usd = -30.4;
    loss.positions[0].pnl_usd = 14.6;
    let r = rep.frame(&v, &loss, None, 0, &view::cl100k);
    assert!(r.text.contains("[kernel] pnl -$68 (-0.07R) "), "{}", r.text);
    assert!(
        r.text.contains("mark 0.65 open -$30 real +$45\n"),
        "{}",
        r.text
    );
}

#[test]
fn frames_are_deterministic() {
    let v = view::default_view();
    let a = tiny_at(&v, at("09:40:00.000")).frame(&v, &Snapshot::default(), None, 0, &view::cl100k);
    let b = tiny_at(&v, at("09:40:00.000")).frame(&v, &Snapshot::default(), None, 0, &view::cl100k);
    assert_eq!(a, b);
    // Before the open nothing is known: every number reads `?`, nothing panics.
    let early =
        tiny_at(&v, at("09:00:00.000")).frame(&v, &Snapshot::default(), None, 0, &view::cl100k);
    assert!(
        early.text.contains("no completed bar yet"),
        "{}",
        early.text
    );
    assert!(early.text.contains("spot ? hod ?"), "{}", early.text);
}

#[test]
fn default_view_parses_and_names_the_catalog() {
    let d = lang::check(view::DEFAULT_VIEW, lang::Mode::File).expect("default view");
    assert_eq!(lang::print(&d), view::DEFAULT_VIEW);
    assert!(view::default_view().panes.len() >= 6);
}

/// Between keyframes the tape section at bar n+1 starts with the one at bar n, byte for byte,
/// walking every 5m and 1m bar of a whole bundled session.
#[test]
fn tape_section_is_prefix_stable_between_keyframes() {
    let path = &common::bundled_tapes()[0];
    let v = view_of("VIEW t\n  tape 5m\n  tape 1m\n");
    let mut rep = Replay::new(open_tape(path).expect("tape"), &v).expect("replay");
    let mut prev: [Option<(usize, String)>; 2] = [None, None];
    let mut checked = 0;
    let mut t = Ts::parse("09:30:00.000").expect("t").ms();
    let close = Ts::parse("16:00:00.000").expect("t").ms();
    while t <= close {
        rep.advance_to(Ts(t)).expect("advance");
        for (i, size) in [300u32, 60].into_iter().enumerate() {
            let n = rep.bars.completed(size, Ts(t)).len();
            let s = tape_section(&rep.bars, size, Ts(t), 2, None);
            if let Some((pn, ps)) = &prev[i]
                && n == pn + 1
            {
                let k = keyframe_every(size);
                // A new keyframe block starts when the new bar's index is a multiple of k;
                // the window may then drop its oldest block. Otherwise: pure append.
                if !(n - 1).is_multiple_of(k) {
                    assert!(
                        s.starts_with(ps.as_str()),
                        "{size}s bar {n} at {}:\n{ps}\n---\n{s}",
                        Ts(t)
                    );
                    assert_eq!(s[ps.len()..].lines().count(), 1, "one appended line");
                    checked += 1;
                }
            }
            prev[i] = Some((n, s));
        }
        t += 60_000;
    }
    assert!(checked > 300, "checked {checked}");
}

/// A VIEW budget under the floor is refused at check (it rendered a Frame of the word
/// `FRAME` alone, its tape, time and view cut away); at the floor, a Frame whose list of
/// what it dropped does not fit says `every pane` and keeps its header whole.
#[test]
fn a_frame_over_budget_keeps_its_header_and_says_what_it_dropped() {
    for b in [1, 10, 99] {
        let errs = lang::check(&format!("VIEW a budget {b}\n  levels\n"), lang::Mode::File)
            .expect_err("under the floor");
        assert_eq!(errs[0].rule.name(), "number-range", "{b}");
        assert!(
            errs[0].message.contains("at least 100 tokens"),
            "{}",
            errs[0].message
        );
    }
    let v = view_of(
        "VIEW a budget 100\n  tape 5m\n  levels\n  chain 0dte\n  velocity 1m\n  kernel\n  plans\n  headlines\n",
    );
    let rep = tiny_at(&v, at("09:40:00.000"));
    // A meter that charges a token a byte: even the list of dropped panes is over 100.
    let r = rep.frame(&v, &Snapshot::default(), None, 0, &|s: &str| s.len());
    assert_eq!(
        r.text,
        "FRAME tape=tiny t=09:40:00 view=a\n(over budget, dropped: every pane)\n"
    );
    assert_eq!(r.tokens, r.text.len());
    assert!(!r.dropped.is_empty());
    // Woken by a wake whose trigger is long: its `why` goes to `…` before the header is
    // over budget; who woke it stays.
    let woke = Some(view::Woke {
        by: "w".into(),
        why: "spot crosses above hod AND velocity(1m) >= p90 AND NOT phase open".into(),
    });
    let r = rep.frame(&v, &Snapshot::default(), woke, 0, &|s: &str| s.len());
    assert_eq!(
        r.text,
        "FRAME tape=tiny t=09:40:00 view=a woke=w why=…\n(over budget, dropped: every pane)\n"
    );
    // A view with no pane dropped nothing, and says nothing was.
    let e = view_of("VIEW e budget 100\n");
    let r = tiny_at(&e, at("09:40:00.000"))
        .frame(&e, &Snapshot::default(), None, 0, &|s: &str| s.len() * 10);
    assert_eq!(r.text, "FRAME tape=tiny t=09:40:00 view=e\n");
    assert!(r.dropped.is_empty());
}

/// A View with a budget never measures above it, at every minute of every bundled session.
#[test]
fn budgets_hold_every_minute_of_every_bundled_session() {
    let views = [
        view_of(
            "VIEW tight budget 120\n  tape 1m\n  levels\n  chain 0dte strikes 5\n  gex 0dte\n  headlines last 5\n",
        ),
        view_of(
            "VIEW mid budget 400\n  tape 5m\n  tape 1m\n  levels\n  chain 0dte strikes 8\n  gex 0dte\n  skew 25d\n  velocity 1m\n  kernel\n  plans\n  blotter\n  journal\n  headlines last 10\n",
        ),
        view::default_view(),
    ];
    let mut frames = 0;
    for path in common::bundled_tapes() {
        let mut reps: Vec<_> = views
            .iter()
            .map(|v| Replay::new(open_tape(&path).expect("tape"), v).expect("replay"))
            .collect();
        let mut t = Ts::parse("09:31:00.000").expect("t").ms();
        let close = Ts::parse("16:00:00.000").expect("t").ms();
        while t <= close {
            for (v, rep) in views.iter().zip(reps.iter_mut()) {
                rep.advance_to(Ts(t)).expect("advance");
                let r = rep.frame(v, &Snapshot::default(), None, 0, &view::cl100k);
                let budget: usize = v
                    .budget
                    .as_ref()
                    .map(|b| b.text.parse().expect("budget"))
                    .expect("budget");
                let measured = view::cl100k(&r.text);
                assert_eq!(measured, r.tokens);
                assert!(
                    measured <= budget,
                    "{} at {}: {measured} > {budget}\n{}",
                    v.name.text,
                    Ts(t),
                    r.text
                );
                if !r.dropped.is_empty() {
                    assert!(
                        r.text.contains("(over budget, dropped: "),
                        "the frame says what it dropped"
                    );
                }
                frames += 1;
            }
            t += 60_000;
        }
    }
    assert!(frames >= 3 * 3 * 390);
}

/// Strikes cut to fit a budget were cut one a side at a time, rendering and counting the
/// Frame after each: `chain 0dte strikes 1000` under `budget 100` took 9 s of CPU a Frame.
/// They are found by halving now; every Frame is the one stepping gives (text, tokens, what
/// was dropped), on every bundled tape, for chains and gex panes of many sizes under budgets
/// that cut them to every depth.
#[test]
fn strikes_cut_by_halving_give_the_frame_of_cutting_one_at_a_time() {
    let mut views = Vec::new();
    for strikes in [2, 3, 5, 9, 17, 40] {
        for budget in [100, 140, 200, 300, 450, 700, 1200] {
            views.push(view_of(&format!(
                "VIEW s{strikes}b{budget} budget {budget}\n  chain 0dte strikes {strikes}\n  gex 0dte\n  levels\n"
            )));
            views.push(view_of(&format!(
                "VIEW t{strikes}b{budget} budget {budget}\n  tape 5m\n  chain 0dte strikes {strikes}\n  headlines last 3\n"
            )));
        }
    }
    let mut cut = 0;
    for path in common::bundled_tapes() {
        let mut rep = Replay::new(open_tape(&path).expect("tape"), &views[0]).expect("replay");
        for t in ["09:45:00.000", "11:30:00.000", "15:50:00.000"] {
            rep.advance_to(at(t)).expect("advance");
            for v in &views {
                let halved = rep.frame(v, &Snapshot::default(), None, 0, &view::cl100k);
                let stepped = view::render::with_strikes_stepped(|| {
                    rep.frame(v, &Snapshot::default(), None, 0, &view::cl100k)
                });
                assert_eq!(
                    (&halved.text, halved.tokens, &halved.dropped),
                    (&stepped.text, stepped.tokens, &stepped.dropped),
                    "{} at {t} on {path:?}",
                    v.name.text
                );
                cut += usize::from(halved.dropped.iter().any(|d| d.contains("strikes beyond")));
            }
        }
    }
    assert!(cut >= 50, "the budgets cut strikes in {cut} Frames");
    // The case that took 9 s: within a budget, and quick (one Frame, well under a second of
    // CPU on any machine; stepping took 1,000 renderings).
    let big = view_of("VIEW big budget 100\n  chain 0dte strikes 1000\n");
    let tape = common::bundled_tapes().into_iter().next().expect("a tape");
    let mut rep = Replay::new(open_tape(&tape).expect("tape"), &big).expect("replay");
    rep.advance_to(at("10:00:00.000")).expect("advance");
    let r = rep.frame(&big, &Snapshot::default(), None, 0, &view::cl100k);
    assert!(r.tokens <= 100, "{}", r.text);
}
