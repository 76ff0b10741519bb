//! Multi-session tapes (format v2): one tape holding several sessions in series gives, session
//! for session, the results of the one-session tapes it was made of, and every per-session
//! state starts again at each `session` event.

use kestrel_desk::bus::{Bus, Event, canonical_line};
use kestrel_desk::engine::{Engine, EngineConfig};
use kestrel_desk::lang::{self, Mode};
use kestrel_desk::market::tape::SessionSpec;
use kestrel_desk::market::*;

/// Plans that trade shares every session (a momentum entry with a timed exit, and a
/// resting dip-buy) and declare a WAKE: fires, fills, settlement and marks all happen.
const PLANS: &str = "USING signal SPX exec SPY\n\nPLAN vwap-cross budget 1R ttl +25m\n  WHEN spot crosses above vwap AND NOT phase open\n  DO buy 100 shares @ ask\n  EXIT NOT plan(vwap-cross).filled within 5m\n\nPLAN dip budget 1R ttl +20m\n  WHEN spot < open\n  DO buy 50 shares @ bid\n";

const N: usize = 5;

/// Five short (30-minute) generated sessions on consecutive weekdays, cycling regimes.
fn members() -> Vec<(TapeHeader, Vec<TapeEvent>)> {
    let mut date = Date::new(2025, 4, 9).unwrap();
    let regimes = [Regime::Trend, Regime::Range, Regime::Shock];
    (0..N)
        .map(|i| {
            let g = generate_with(
                regimes[i % 3],
                40 + i as u64,
                date,
                GenOptions {
                    minutes: Some(30),
                    ..GenOptions::default()
                },
            );
            let h = g.header().clone();
            let evs: Vec<TapeEvent> = g.collect();
            date = date.next_weekday().unwrap();
            (h, evs)
        })
        .collect()
}

fn bytes(h: &TapeHeader, evs: &[TapeEvent]) -> Vec<u8> {
    let mut out = Vec::new();
    write_tape(&mut out, h, evs.iter().cloned()).unwrap();
    out
}

/// The five sessions as one v2 tape: the first member's header (as v2), its events, then a
/// `session` event and the events of each next member.
fn joined(ms: &[(TapeHeader, Vec<TapeEvent>)]) -> Vec<u8> {
    let mut h = ms[0].0.clone();
    h.v = 2;
    h.name = "week".into();
    let mut evs = ms[0].1.clone();
    for (mh, me) in &ms[1..] {
        evs.push(TapeEvent::Session(Box::new(SessionSpec {
            date: mh.date,
            open: mh.open,
            close: mh.close,
            prior: mh.symbols.iter().map(|s| (s.sym, s.prior_close)).collect(),
        })));
        evs.extend(me.iter().cloned());
    }
    bytes(&h, &evs)
}

/// Replay a tape file's bytes as `kestrel run` does; the Bus keeps its events.
fn replay(tape: &[u8]) -> Bus {
    replay_with(tape, PLANS)
}

/// [`replay`] with other plans.
fn replay_with(tape: &[u8], plans: &str) -> Bus {
    let doc = lang::check(plans, Mode::File).expect("plans");
    let mut r = TapeReader::new(tape).expect("header");
    let mut e = Engine::new(
        r.header(),
        EngineConfig::strict(Px(1000 * 10_000)),
        Bus::new(None).keeping(),
    );
    e.arm_document(&doc);
    let evs: Vec<_> = r.by_ref().map(|ev| ev.expect("event")).collect();
    e.on_events(&evs);
    r.check_complete().expect("whole");
    e.finish()
}

/// The Bus cut at each `session-start`: per session, its canonical lines after the
/// `session-start` itself (which names the tape and the session number).
fn by_session(b: &Bus) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for ev in b.events() {
        if matches!(ev, Event::SessionStart { .. }) {
            out.push(Vec::new());
            continue;
        }
        let line = String::from_utf8(canonical_line(ev)).unwrap();
        out.last_mut().expect("session-start first").push(line);
    }
    out
}

#[test]
fn five_sessions_in_one_tape_match_five_one_session_tapes() {
    let ms = members();
    let multi = replay(&joined(&ms));
    let got = by_session(&multi);
    assert_eq!(got.len(), N);
    let starts: Vec<(Option<u32>, String)> = multi
        .events()
        .iter()
        .filter_map(|e| match e {
            Event::SessionStart { session, date, .. } => Some((*session, date.clone())),
            _ => None,
        })
        .collect();
    let results = multi.blotter().session_results();
    assert_eq!(results.len(), N);
    let mut total = 0i64;
    let mut traded = 0;
    for (i, (h, evs)) in ms.iter().enumerate() {
        let one = replay(&bytes(h, evs));
        let want = by_session(&one);
        assert_eq!(want.len(), 1);
        // Event for event, the session's Bus is the one-session tape's.
        assert_eq!(got[i], want[0], "session {}", i + 1);
        assert_eq!(starts[i], (Some(i as u32 + 1), h.date.to_string()));
        // The report's per-session figures are the one-session tape's.
        let b = one.blotter();
        let r = &results[i];
        assert_eq!(r.session, i as u32 + 1);
        assert_eq!(r.date, h.date.to_string());
        assert_eq!(r.pnl, b.book_pnl(), "session {} pnl", i + 1);
        for p in &r.plans {
            let l = &b.plans[&p.name];
            assert_eq!((p.fires, p.fills, p.state), (l.fires, l.fills, l.state));
            assert_eq!(p.pnl, b.pnl(&p.name));
            traded += p.fills;
        }
        assert_eq!(r.plans.len(), b.plans.len());
        total += b.book_pnl();
    }
    // Something happened in the sessions (not five empty ones), and the totals add up.
    assert!(traded > 0, "no fills in any session");
    assert_eq!(multi.blotter().book_pnl(), total);
}

#[test]
fn market_state_resets_at_each_session() {
    let ms = members();
    let tape = joined(&ms);
    let r = TapeReader::new(tape.as_slice()).unwrap();
    let mut st = MarketState::new(r.header());
    st.track("SPX", Series::Spot);
    let mut k = 0;
    for ev in r {
        let ev = ev.unwrap();
        if let TapeEvent::Session(s) = &ev {
            // Before: the last session's state is there.
            assert!(st.hod("SPY").is_some() && st.vwap("SPY").is_some());
            st.apply(&ev);
            k += 1;
            let h = &ms[k].0;
            assert_eq!(st.date(), s.date);
            assert_eq!(st.date(), h.date);
            assert_eq!((st.open_time(), st.close_time()), (h.open, h.close));
            for sym in ["SPX", "SPY"] {
                assert_eq!(st.spot(sym), None);
                assert_eq!(st.hod(sym), None);
                assert_eq!(st.lod(sym), None);
                assert_eq!(st.vwap(sym), None);
                assert_eq!(st.open_px(sym), None);
                assert_eq!(st.prior_close(sym), h.symbol(sym).map(|x| x.prior_close));
            }
            assert_eq!(st.samples_recorded(), 0);
            assert_eq!(st.now(), None);
            assert!(st.headlines().is_empty());
            continue;
        }
        st.apply(&ev);
    }
    assert_eq!(k, N - 1);
    // At the end the last session's values are a one-session replay's.
    let (h, evs) = &ms[N - 1];
    let mut one = MarketState::new(h);
    one.track("SPX", Series::Spot);
    for ev in evs {
        one.apply(ev);
    }
    for sym in ["SPX", "SPY"] {
        assert_eq!(st.hod(sym), one.hod(sym));
        assert_eq!(st.lod(sym), one.lod(sym));
        assert_eq!(
            st.vwap(sym).map(f64::to_bits),
            one.vwap(sym).map(f64::to_bits)
        );
        assert_eq!(
            st.percentile(sym, Series::Spot, 50.0).map(f64::to_bits),
            one.percentile(sym, Series::Spot, 50.0).map(f64::to_bits)
        );
    }
}

#[test]
fn session_events_round_trip_and_refusals_name_the_line() {
    let ms = members();
    let tape = joined(&ms);
    let (h, evs) = read_tape_bytes(&tape).unwrap();
    assert_eq!(bytes(&h, &evs), tape, "canonical round trip");
    let text = String::from_utf8(tape.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("{\"type\":\"session\""))
        .unwrap();
    assert!(
        lines[at].starts_with("{\"type\":\"session\",\"date\":\"2025-04-10\",\"open\":\"09:30\",\"close\":\"10:00\",\"prior\":{\"SPX\":"),
        "{}",
        lines[at]
    );
    let with = |i: usize, l: &str| -> String {
        let mut v: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        v[i] = l.to_string();
        v.join("\n") + "\n"
    };
    let err = |t: String| read_tape_bytes(t.as_bytes()).unwrap_err();
    let line = at as u64 + 1;
    // A session dated on or before the previous one.
    let e = err(with(at, &lines[at].replace("2025-04-10", "2025-04-09")));
    assert_eq!((e.line, e.kind), (line, TapeErrorKind::OutOfOrder), "{e}");
    // A prior close missing for a header symbol.
    let e = err(with(at, &lines[at].replace("\"SPX\":", "\"QQQ\":")));
    assert_eq!(
        (e.line, e.kind),
        (line, TapeErrorKind::UnknownSymbol),
        "{e}"
    );
    // The previous session cut short: the session line is refused as ends-early.
    let mut cut: Vec<&str> = lines[..at - 200].to_vec();
    cut.extend_from_slice(&lines[at..]);
    let e = err(cut.join("\n") + "\n");
    assert_eq!(
        (e.line, e.kind),
        (at as u64 - 199, TapeErrorKind::EndsEarly),
        "{e}"
    );
    assert!(e.to_string().contains("session 1 (2025-04-09)"), "{e}");
    // A v1 tape refuses `session` (and a v2 `ts` clock restarts after it: the events of
    // session 2 start at 09:30 again, which the joined tape already shows is accepted).
    let v1 = text.replacen("\"v\":2", "\"v\":1", 1);
    let e = err(v1);
    assert_eq!((e.line, e.kind), (line, TapeErrorKind::UnknownType), "{e}");
}

/// The author's turns: a pure function of the wake, so that a session of the tape and the
/// one-session tape of it are asked the same and answer the same. At the OPEN wake it arms a
/// plan that trades, a WAKE with a budget of two a day and a VIEW; at that wake it passes.
fn author_reply(wake: &str) -> String {
    match wake {
        "open" => "VIEW scan budget 600\n  tape 5m\n  levels\n  plans\n\nWAKE swing WHEN spot crosses above vwap OR spot crosses below vwap DELIVER scan BUDGET 2 wakes/day\nPLAN drive budget 0.5R ttl +20m\n  USING signal SPX exec SPY\n  WHEN spot crosses above vwap\n  DO buy 20 shares @ ask\n  EXIT NOT plan(drive).filled within 5m\n".into(),
        _ => "# nothing new; let it work\n".into(),
    }
}

fn author() -> Box<dyn kestrel_desk::session::TurnSource> {
    use kestrel_desk::session::Live;
    use kestrel_desk::turn::Reply;
    use kestrel_desk::turn::repair::RepairPolicy;
    Box::new(Live {
        name: "by-wake".into(),
        write: |ask: &kestrel_desk::session::WakeAsk, _: &kestrel_desk::turn::repair::Ask| {
            Reply::Text(author_reply(&ask.wake))
        },
        policy: RepairPolicy::default(),
    })
}

/// A headless run with the author seated, as `kestrel agent` plays it (its starting book
/// is `PLANS`); the Bus and the outcome counts.
fn agent_run(tape: &[u8]) -> (Bus, kestrel_desk::session::Counts) {
    use kestrel_desk::session::{Headless, RunConfig, Session};
    use kestrel_desk::turn::{AuthorKind, Profile};
    let reader: Box<dyn std::io::BufRead> = Box::new(std::io::Cursor::new(tape.to_vec()));
    let cfg = RunConfig {
        engine: EngineConfig::strict(Px(1000 * 10_000)),
        profile: Profile::AuthoringV2,
        author: AuthorKind::Model,
        open_wake: true,
        view_request_cap: None,
    };
    let h = Headless {
        bus: Bus::new(None).keeping(),
        docs: vec![lang::check(PLANS, Mode::File).expect("plans")],
        author: Some(author()),
    };
    let mut s =
        Session::headless("t", TapeReader::new(reader).expect("header"), cfg, h).expect("session");
    assert_eq!(s.play_to_end(&mut || None).expect("tape"), None);
    let counts = s.counts().clone();
    (s.finish(), counts)
}

/// Through the agent path: the OPEN wake is asked again at each session, the WAKE and its
/// per-day budget start again (two fires a session, not two a tape), the author's plans
/// are gone at the next open (it arms them again), and the Bus of each session is the
/// one-session tape's, event for event; `session-start` numbers the sessions.
#[test]
fn an_agent_run_over_five_sessions_matches_five_one_session_runs() {
    let ms = members();
    let (multi, counts) = agent_run(&joined(&ms));
    let got = by_session(&multi);
    assert_eq!(got.len(), N);
    let numbers: Vec<Option<u32>> = multi
        .events()
        .iter()
        .filter_map(|e| match e {
            Event::SessionStart { session, .. } => Some(*session),
            _ => None,
        })
        .collect();
    assert_eq!(numbers, (1..=N as u32).map(Some).collect::<Vec<_>>());
    let mut wakes = 0;
    let mut swing_total = 0;
    let mut fills = 0;
    // The one-session tape of each session: the joined tape's header for that session
    // (its name and smile are the file's, docs/tapes.md §1b), the session's events.
    let base = read_tape_bytes(&joined(&ms)).expect("tape").0;
    for (i, (h, evs)) in ms.iter().enumerate() {
        let spec = SessionSpec {
            date: h.date,
            open: h.open,
            close: h.close,
            prior: h.symbols.iter().map(|s| (s.sym, s.prior_close)).collect(),
        };
        let mut one_h = base.for_session(&spec);
        one_h.v = 1;
        let (one, c) = agent_run(&bytes(&one_h, evs));
        let want = by_session(&one);
        assert_eq!(want.len(), 1);
        assert_eq!(got[i], want[0], "session {}", i + 1);
        wakes += c.wakes;
        // Per session: the OPEN wake once, the swing WAKE within its budget of two.
        let named = |w: &str| {
            got[i]
                .iter()
                .filter(|l| {
                    l.contains("\"type\":\"view-delivered\"")
                        && l.contains(&format!("\"wake\":\"{w}\""))
                })
                .count()
        };
        assert_eq!(named("open"), 1, "session {}: one OPEN wake", i + 1);
        let swing = named("swing");
        assert!(
            swing <= 2,
            "session {}: {swing} swing wakes over a budget of 2",
            i + 1
        );
        swing_total += swing;
        fills += got[i]
            .iter()
            .filter(|l| l.contains("\"type\":\"fill\""))
            .count();
    }
    // The budget of two a day started again: more than two swing wakes in all.
    assert!(
        swing_total > 2,
        "only {swing_total} swing wakes over {N} sessions"
    );
    assert!(fills > 0, "no fills in any session");
    // The counts run on across sessions: the sum of the one-session runs'.
    assert_eq!(counts.wakes, wakes);
    assert_eq!(counts.wakes as usize, N + swing_total);
}

/// Through the desk's Session (typed commands in, snapshots out, as the desk drives it):
/// at a `session` event the clock starts again at the new session's open, a notice says so,
/// the chart and the book are the new session's (the opening plans armed again, no fills,
/// no P&L carried, no marks from the day before), and a rewind inside a later session stays
/// in that session.
#[test]
fn the_desk_starts_each_session_again_at_its_open() {
    use kestrel_desk::session::{Command, Opening, Session, Settings, TapeSource};
    let ms = members();
    // The status line names the tape by its header's name, not the path it came from.
    let tape = TapeSource {
        label: "some/dir/week-of-2025-04-07.jsonl".into(),
        bytes: std::sync::Arc::from(joined(&ms[..3]).into_boxed_slice()),
    };
    let settings = Settings {
        agent: None,
        ..Settings::default()
    };
    let how = Opening {
        plans: vec![("examples".into(), PLANS.into())],
        ..Opening::default()
    };
    let mut s = Session::open(tape, settings, how).expect("session");
    let snap = s.snapshot(true);
    assert_eq!((snap.session, snap.date.as_str()), (Some(1), "2025-04-09"));
    assert_eq!(snap.clock, Ts::hms(9, 30, 0, 0));
    // Session 1 to its close: the plans traded.
    s.command(Command::Seek(Ts::hms(10, 0, 0, 0)));
    let one = s.snapshot(true);
    assert_eq!((one.session, one.clock), (Some(1), Ts::hms(10, 0, 0, 0)));
    assert!(!one.book.fills.is_empty(), "session 1 filled nothing");
    assert!(!one.chart.marks.is_empty());
    // The next step crosses the session event: the clock is at the new open.
    s.command(Command::StepTick);
    let two = s.snapshot(true);
    assert_eq!((two.session, two.date.as_str()), (Some(2), "2025-04-10"));
    assert_eq!(two.clock, two.open);
    assert_eq!((two.open, two.close), (ms[1].0.open, ms[1].0.close));
    assert!(
        two.notices
            .iter()
            .any(|n| n.text == "session 2025-04-10 opens"),
        "{:?}",
        two.notices
    );
    // The book is the new session's: no fills, no P&L, no marks, the plans armed again.
    assert!(two.book.fills.is_empty() && two.book.order_log.is_empty());
    assert_eq!((two.book.pnl_usd, two.book.realised_usd), (0.0, 0.0));
    assert!(two.chart.marks.is_empty());
    assert!(two.chart.series.iter().all(|c| c.candles.bars.is_empty()));
    let names: Vec<&str> = two.plans.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["vwap-cross", "dip"]);
    for p in &two.plans {
        assert_eq!(p.state, kestrel_desk::bus::PlanState::Armed, "{}", p.name);
        assert_eq!(
            (p.note.as_str(), p.pnl_r),
            ("no fire yet", 0.0),
            "{}",
            p.name
        );
    }
    assert!(
        two.frame.text.contains("pnl +$0 (+0.00R)"),
        "{}",
        two.frame.text
    );
    // Into session 2, then back inside it: the rewind stays in session 2.
    s.command(Command::Seek(Ts::hms(9, 50, 0, 0)));
    let fwd = s.snapshot(true);
    assert_eq!((fwd.session, fwd.clock), (Some(2), Ts::hms(9, 50, 0, 0)));
    s.command(Command::Seek(Ts::hms(9, 40, 0, 0)));
    let back = s.snapshot(true);
    assert_eq!((back.session, back.clock), (Some(2), Ts::hms(9, 40, 0, 0)));
    assert_eq!(back.date, "2025-04-10");
    // What the desk shows of session 2 at 09:40 is what a run of session 2 alone gives.
    let alone = {
        let (h, evs) = &ms[1];
        let mut one_h = read_tape_bytes(&joined(&ms[..3]))
            .unwrap()
            .0
            .for_session(&SessionSpec {
                date: h.date,
                open: h.open,
                close: h.close,
                prior: h.symbols.iter().map(|s| (s.sym, s.prior_close)).collect(),
            });
        one_h.v = 1;
        let t = TapeSource {
            label: "alone".into(),
            bytes: std::sync::Arc::from(bytes(&one_h, evs).into_boxed_slice()),
        };
        let mut a = Session::open(
            t,
            Settings {
                agent: None,
                ..Settings::default()
            },
            Opening {
                plans: vec![("examples".into(), PLANS.into())],
                ..Opening::default()
            },
        )
        .expect("session");
        a.command(Command::Seek(Ts::hms(9, 40, 0, 0)));
        a.snapshot(true)
    };
    assert_eq!(back.book.fills, alone.book.fills);
    assert_eq!(back.book.pnl_usd, alone.book.pnl_usd);
    assert_eq!(back.plans, alone.plans);
    assert_eq!(back.chart.marks, alone.chart.marks);
    assert_eq!(back.frame.text, alone.frame.text);
    // Through to the end: three sessions, the last one's book at the last close.
    s.command(Command::Seek(Ts::hms(16, 0, 0, 0)));
    s.command(Command::Seek(Ts::hms(16, 0, 0, 0)));
    s.command(Command::Seek(Ts::hms(16, 0, 0, 0)));
    let end = s.snapshot(true);
    assert_eq!((end.session, end.ended), (Some(3), true));
    let bus = s.finish();
    assert_eq!(bus.blotter().session_results().len(), 3);
}

/// A co-pilot proposal still waiting at a session's close was answered: it is rejected with
/// its outcome by `close` and said, as at the tape's end (before 2026-12-06 the session
/// boundary recorded it `unanswered`, and the proposal stayed on screen into the next
/// session, answering a call no longer out).
#[test]
fn a_proposal_undecided_at_a_sessions_close_is_rejected_with_its_outcome() {
    use kestrel_desk::session::agent::Agent;
    use kestrel_desk::session::{Command, Opening, Session, Settings, TapeSource};
    let ms = members();
    let tape = TapeSource {
        label: "week.jsonl".into(),
        bytes: std::sync::Arc::from(joined(&ms[..2]).into_boxed_slice()),
    };
    let settings = Settings {
        agent: Some(Agent::Script {
            name: "house".into(),
            replies: vec![author_reply("open")],
            wakes: Vec::new(),
        }),
        copilot: true,
        ..Settings::default()
    };
    let mut s = Session::open(tape, settings, Opening::default()).expect("session");
    s.command(Command::Seek(Ts::hms(9, 31, 0, 0)));
    let one = s.snapshot(true);
    let p = one
        .agent
        .as_ref()
        .and_then(|a| a.proposal.clone())
        .expect("the open's proposal waits");
    let outcome = p.run.turn.outcome.name().to_string();
    assert_ne!(outcome, "unanswered");
    // To the close and over the session line.
    s.command(Command::Seek(Ts::hms(16, 0, 0, 0)));
    s.command(Command::StepTick);
    let two = s.snapshot(true);
    assert_eq!(two.session, Some(2));
    assert!(
        two.agent.as_ref().is_some_and(|a| a.proposal.is_none()),
        "the first session's proposal is gone"
    );
    assert!(
        two.notices
            .iter()
            .any(|n| n.text.contains("was not decided: rejected at the close")),
        "{:?}",
        two.notices
    );
    let bus = s.finish();
    let rejected: Vec<String> = bus
        .events()
        .iter()
        .filter(|e| matches!(e, Event::TurnRejected { .. }))
        .map(|e| String::from_utf8_lossy(&canonical_line(e)).into_owned())
        .collect();
    assert!(
        rejected
            .first()
            .is_some_and(|l| l.contains("\"by\":\"close\"")
                && l.contains(&format!("\"outcome\":\"{outcome}\""))),
        "{rejected:?}"
    );
}

/// The desk's status line names the session of a multi-session tape and its date (a v1
/// tape's status line is as before: `tests/desk.rs`).
#[test]
fn the_desk_status_line_names_the_session() {
    use kestrel_desk::desk::{self, ui};
    use kestrel_desk::session::{Command, TapeSource};
    use ratatui::{Terminal, backend::TestBackend};
    let ms = members();
    // The status line names the tape by its header's name, not the path it came from.
    let tape = TapeSource {
        label: "some/dir/week-of-2025-04-07.jsonl".into(),
        bytes: std::sync::Arc::from(joined(&ms[..2]).into_boxed_slice()),
    };
    let mut app = desk::inline_app(tape).expect("desk");
    let status = |app: &kestrel_desk::desk::app::App| {
        let mut t = Terminal::new(TestBackend::new(160, 48)).unwrap();
        t.draw(|f| ui::draw(f, app)).unwrap();
        let buf = t.backend().buffer().clone();
        (0..160)
            .map(|x| buf[(x, 0)].symbol().to_string())
            .collect::<String>()
    };
    let s = status(&app);
    assert!(s.contains("tape week · session 1 2025-04-09"), "{s}");
    app.send(Command::Seek(Ts::hms(10, 0, 0, 0)));
    app.send(Command::StepTick);
    app.tick();
    let s = status(&app);
    assert!(s.contains("tape week · session 2 2025-04-10"), "{s}");
    assert!(s.contains("09:30:00.000"), "{s}");
}

/// A 0dte call bought in every session settles at each session's close; the book the View
/// and the desk show is the current session's, so it lists that session's settlement only.
#[test]
fn each_session_lists_its_own_settlements() {
    let bus = replay_with(
        &joined(&members()[..2]),
        "PLAN c budget 1R ttl +25m\n  USING signal SPX exec SPY 0dte\n  WHEN spot > 0\n  DO buy 1 ATM C @ ask\n",
    );
    let settled: Vec<String> = bus
        .events()
        .iter()
        .filter_map(|ev| match ev {
            Event::Settlement { px, .. } => Some(px.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(settled.len(), 2, "one settlement a session");
    assert_eq!(bus.blotter().settled.len(), 2);
    let book = kestrel_desk::view::Snapshot::from_blotter(bus.blotter());
    let shown: Vec<&str> = book.settled.iter().map(|x| x.px.as_str()).collect();
    assert_eq!(
        shown,
        vec![settled[1].as_str()],
        "the second session's only"
    );
}

/// A document added before the first event (the desk's person correcting an opening plan)
/// replaces the plan of its name in every session, not only the first: the opening
/// documents are armed again at each session the way they were armed (before 2026-12-04 a
/// later session armed both, and the replaced plan traded again).
#[test]
fn a_plan_replaced_before_the_open_stays_replaced_in_every_session() {
    let ms = members();
    let tape = joined(&ms[..2]);
    let first = lang::check(
        "USING signal SPX exec SPY\nPLAN p budget 1R ttl +20m\n  WHEN spot > 0\n  DO buy 1 shares @ ask\n",
        Mode::File,
    )
    .expect("first");
    let fixed = lang::check(
        "USING signal SPX exec SPY\nPLAN p budget 1R ttl +20m\n  WHEN spot > 0\n  DO buy 2 shares @ ask\n",
        Mode::File,
    )
    .expect("fixed");
    let mut r = TapeReader::new(&tape[..]).expect("header");
    let mut e = Engine::new(
        r.header(),
        EngineConfig::strict(Px(1000 * 10_000)),
        Bus::new(None).keeping(),
    );
    e.arm_document_as(&first, Some("person"));
    e.add_as(&fixed, Some("person"));
    let evs: Vec<_> = r.by_ref().map(|ev| ev.expect("event")).collect();
    e.on_events(&evs);
    let b = e.finish();
    let sessions = by_session(&b);
    assert_eq!(sessions.len(), 2);
    for (k, lines) in sessions.iter().enumerate() {
        let fills: Vec<&String> = lines
            .iter()
            .filter(|l| l.contains("\"type\":\"fill\"") && l.contains("\"plan\":\"p\""))
            .collect();
        assert!(!fills.is_empty(), "session {}: p traded", k + 1);
        assert!(
            fills.iter().all(|l| l.contains("\"qty\":2")),
            "session {}: only the corrected p trades: {fills:?}",
            k + 1
        );
    }
}

/// On a tape of several sessions the desk's book is the current session's: a two-day run
/// that lost on both days read only the second day's P&L, with nothing to say so. The
/// Blotter now heads it with the session, its date and the tape's total so far (every
/// session's P&L: what `kestrel run` reports as the book's); one session says nothing more.
#[test]
fn the_blotter_names_the_session_and_the_tapes_total() {
    use kestrel_desk::desk::{self, ui};
    use kestrel_desk::session::{Command, Opening, Settings, TapeSource};
    let ms = members();
    let tape = TapeSource {
        label: "week.jsonl".into(),
        bytes: std::sync::Arc::from(joined(&ms[..2]).into_boxed_slice()),
    };
    let settings = Settings {
        agent: None,
        ..Settings::default()
    };
    let how = Opening {
        plans: vec![("examples".into(), PLANS.into())],
        ..Opening::default()
    };
    let mut app = desk::inline_app_from(tape, settings, how).expect("desk");
    let text = |app: &kestrel_desk::desk::app::App| -> String {
        ui::blotter_lines(app, 40, 120)
            .iter()
            .map(|l| {
                l.spans
                    .iter()
                    .map(|s| s.content.as_ref())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    // Session 1 to its close: one session, nothing more said.
    app.send(Command::Seek(ms[0].0.close));
    app.tick();
    let one = app.snap.clone();
    assert_eq!(one.session, Some(1));
    assert!(one.book.tape_total.is_none());
    assert!(!text(&app).contains("tape total"), "{}", text(&app));
    assert_ne!(one.book.pnl_usd, 0.0, "session 1 traded");
    // Into session 2 and on: the book is session 2's, the total both sessions'.
    app.send(Command::StepTick);
    app.send(Command::Seek(Ts::hms(9, 55, 0, 0)));
    app.tick();
    let two = app.snap.clone();
    assert_eq!(two.session, Some(2));
    let total = two
        .book
        .tape_total
        .clone()
        .expect("a second session has a total");
    assert_eq!((total.session, total.sessions), (2, 2));
    assert_eq!(total.date, "2025-04-10");
    let want = one.book.pnl_usd + two.book.pnl_usd;
    assert!(
        (total.pnl_usd - want).abs() < 0.005,
        "{} vs {want}",
        total.pnl_usd
    );
    let b = text(&app);
    let first = b.lines().next().unwrap_or_default().to_string();
    assert!(
        first.starts_with("session 2 · 2025-04-10 · tape total ")
            && first.ends_with(" over 2 sessions"),
        "{b}"
    );
    let money = |v: f64| {
        let sign = if v < 0.0 { "-" } else { "+" };
        format!("{sign}${:.2}", v.abs())
    };
    assert!(first.contains(&money(total.pnl_usd)), "{b}");
}
