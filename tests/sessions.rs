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
    let doc = lang::check(PLANS, Mode::File).expect("plans");
    let mut r = TapeReader::new(tape).expect("header");
    let mut e = Engine::new(
        r.header(),
        EngineConfig::strict(Px(1000 * 10_000)),
        Bus::new(None).keeping(),
    );
    e.arm_document(&doc);
    for ev in r.by_ref() {
        e.on_event(&ev.expect("event"));
    }
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
