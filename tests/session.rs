//! Sessions: wakes deliver Views, authors' turns route and act, everything lands on the Bus;
//! capture and replay give a byte-identical Bus; repairs are recorded; provider errors are
//! never passes.

mod common;

use kestrel_desk::bus::{Bus, Event};
use kestrel_desk::engine::EngineConfig;
use kestrel_desk::market::{Px, open_tape};
use kestrel_desk::session::{self, Recorded, Run, RunConfig, TurnSource};
use kestrel_desk::turn::repair::RepairPolicy;
use kestrel_desk::turn::{AuthorKind, Profile, Reply};

fn cfg(profile: Profile, author: AuthorKind) -> RunConfig {
    RunConfig {
        engine: EngineConfig::strict(Px(1000 * 10_000)),
        profile,
        author,
        open_wake: true,
        view_request_cap: None,
    }
}

fn trend() -> std::path::PathBuf {
    common::root().join("tapes/trend-2025-04-09-s1.jsonl")
}

fn run(author: &mut dyn TurnSource, profile: Profile, kind: AuthorKind) -> (Bus, session::Counts) {
    let s = Run::new(
        open_tape(&trend()).expect("tape"),
        cfg(profile, kind),
        &[],
        Bus::new(Some(Box::new(Vec::<u8>::new()))).keeping(),
    )
    .expect("session");
    let counts_probe = std::rc::Rc::new(std::cell::RefCell::new(session::Counts::default()));
    let _ = counts_probe;
    let mut s = s;
    while !s.is_done() {
        let fired = s.step().expect("tape");
        for w in &fired {
            s.wake(w, author);
        }
    }
    let counts = s.counts.clone();
    (s.engine.finish(), counts)
}

const OPEN_TURN: &str = "# The open drive is real; follow it.
VIEW scan budget 600
  tape 5m
  levels
  kernel
  plans

WAKE range-break WHEN spot crosses above hod OR spot crosses below lod DELIVER scan BUDGET 3 wakes/day
PLAN drive-follow budget 0.2R ttl 15:30
  USING signal SPX exec SPY 0dte
  WHEN spot crosses above vwap
  DO buy 1 ATM C @ min(fair, ask)
  EXIT spot < vwap held 120s @ fair
";

fn bus_bytes(b: &Bus) -> Vec<u8> {
    b.events()
        .iter()
        .flat_map(kestrel_desk::bus::canonical_line)
        .collect()
}

#[test]
fn a_scripted_session_wakes_delivers_routes_and_acts() {
    let mut author = session::scripted(
        "script",
        vec![
            OPEN_TURN.into(),
            "# still trending; let it work\n".into(),
            "STAND-DOWN enough for today — flat into the close\n".into(),
        ],
    );
    let (bus, counts) = run(&mut author, Profile::AuthoringV2, AuthorKind::File);
    let ev = bus.events();
    // The OPEN wake delivered the default view, then the turn superseded the empty book.
    let first_view = ev.iter().position(|e| matches!(e, Event::ViewDelivered { wake, view, .. } if wake == "open" && view == "default"));
    let first_turn = ev
        .iter()
        .position(|e| matches!(e, Event::Turn { wake, .. } if wake == "open"));
    assert!(
        first_view.is_some() && first_turn > first_view,
        "view before turn"
    );
    // range-break fired (budget 3), delivering the `scan` view the turn stood up.
    let rb: Vec<_> = ev
        .iter()
        .filter(|e| matches!(e, Event::WakeFired { wake, .. } if wake == "range-break"))
        .collect();
    assert!(!rb.is_empty() && rb.len() <= 3, "{}", rb.len());
    assert!(ev.iter().any(|e| matches!(e, Event::ViewDelivered { wake, view, frame, .. } if wake == "range-break" && view == "scan" && frame.contains("woke=range-break"))));
    // The plan armed and fired on the trend tape (spot crosses above vwap).
    assert!(ev.iter().any(|e| matches!(e, Event::DocumentArmed { plans, .. } if plans == &vec!["drive-follow".to_string()])));
    // Three answered wakes at most were scripted: a supersede, a pass, a stand-down.
    assert_eq!(counts.supersede, 1);
    assert!(counts.pass >= 1);
    assert_eq!(counts.provider_error, 0);
    if counts.wakes >= 3 {
        assert_eq!(counts.stand_down, 1);
        assert!(ev.iter().any(|e| matches!(e, Event::StandDown { reason, .. } if reason == "enough for today — flat into the close")));
    }
    // The journal was lifted and the turn is canonical Kestrel on the Bus.
    let turn = ev
        .iter()
        .find_map(|e| match e {
            Event::Turn { turn, .. } => Some(serde_json::to_value(turn).unwrap()),
            _ => None,
        })
        .expect("turn");
    assert_eq!(turn["outcome"], "supersede");
    assert_eq!(turn["journal"][0], "The open drive is real; follow it.");
    assert!(
        turn["kestrel"]
            .as_str()
            .unwrap_or("")
            .starts_with("# The open drive is real")
    );
}

#[test]
fn capture_and_replay_give_a_byte_identical_bus() {
    let mut author = session::scripted(
        "script",
        vec![
            OPEN_TURN.into(),
            "PLAN oops budget 0.1R ttl 15:00\n  WHEN spot > hod DO buy 1 ATM C @ fair\n".into(),
            "PLAN fixed budget 0.1R ttl 15:00\n  WHEN spot > hod\n  DO buy 1 ATM C @ fair\n".into(),
            "CANCEL fixed\n".into(),
        ],
    );
    let (bus, _) = run(&mut author, Profile::AuthoringV2, AuthorKind::File);
    let bytes = bus_bytes(&bus);
    let hash = bus.hash_hex();
    let mut rec = Recorded::from_bus("replay", &bytes).expect("recording reads");
    let (again, _) = run(&mut rec, Profile::AuthoringV2, AuthorKind::File);
    assert_eq!(rec.remaining(), 0, "every recorded turn replayed");
    assert_eq!(bus_bytes(&again), bytes, "byte-identical Bus");
    assert_eq!(again.hash_hex(), hash);
}

#[test]
fn a_repaired_turn_is_recorded_and_an_unrepaired_one_fails_closed() {
    // The first reply collapses WHEN and DO; the guided error names the fix; the second
    // reply follows it.
    let collapsed = "PLAN x budget 0.1R ttl 15:00\n  WHEN spot > hod DO buy 1 ATM C @ fair\n";
    let fixed = "PLAN x budget 0.1R ttl 15:00\n  WHEN spot > hod\n  DO buy 1 ATM C @ fair\n";
    let mut seen_error = String::new();
    let mut author = session::Live {
        name: "fixer".into(),
        write: |_: &session::WakeAsk, a: &kestrel_desk::turn::repair::Ask| match &a.guided_error {
            None => Reply::Text(collapsed.into()),
            Some(e) => {
                seen_error = e.clone();
                Reply::Text(fixed.into())
            }
        },
        policy: RepairPolicy::default(),
    };
    let (bus, counts) = run(&mut author, Profile::AuthoringV2, AuthorKind::Model);
    assert!(
        seen_error.contains("rule=syntax") && seen_error.contains("DO belongs on its own line"),
        "{seen_error}"
    );
    assert_eq!(counts.repaired, 1);
    let repairs: Vec<_> = bus
        .events()
        .iter()
        .filter_map(|e| match e {
            Event::Repair { attempt, .. } => Some(serde_json::to_value(attempt).unwrap()),
            _ => None,
        })
        .collect();
    assert_eq!(repairs.len(), 2);
    assert_eq!(repairs[0]["outcome"], "invalid");
    assert_eq!(repairs[0]["next_parsed"], true);
    assert_eq!(repairs[1]["outcome"], "supersede");

    // An author that never repairs ends in the terminal fail-closed pass once the budget is
    // spent: 1 reply + 2 re-asks = 3 attempts, all refused.
    let mut stubborn = session::Live {
        name: "stubborn".into(),
        write: |_: &session::WakeAsk, _: &kestrel_desk::turn::repair::Ask| {
            Reply::Text(collapsed.into())
        },
        policy: RepairPolicy::default(),
    };
    let (bus, counts) = run(&mut stubborn, Profile::AuthoringV2, AuthorKind::Model);
    assert!(counts.fail_closed_pass >= 1);
    assert_eq!(counts.pass, 0, "a fail-closed pass is not an authored pass");
    let first_turn = bus
        .events()
        .iter()
        .find_map(|e| match e {
            Event::Turn { turn, .. } => Some(serde_json::to_value(turn).unwrap()),
            _ => None,
        })
        .expect("turn");
    assert_eq!(first_turn["outcome"], "pass");
    assert_eq!(first_turn["fail_closed"], true);
}

#[test]
fn a_provider_error_is_never_a_pass() {
    let mut dead = session::Live {
        name: "dead".into(),
        write: |_: &session::WakeAsk, _: &kestrel_desk::turn::repair::Ask| {
            Reply::ProviderError("HTTP 503".into())
        },
        policy: RepairPolicy::default(),
    };
    let (bus, counts) = run(&mut dead, Profile::AuthoringV2, AuthorKind::Model);
    assert_eq!(counts.provider_error, 1, "only the OPEN wake asked");
    assert_eq!(counts.pass + counts.fail_closed_pass, 0);
    let t = bus
        .events()
        .iter()
        .find_map(|e| match e {
            Event::Turn { turn, .. } => Some(serde_json::to_value(turn).unwrap()),
            _ => None,
        })
        .expect("turn");
    assert_eq!(t["outcome"], "provider-error");
    // An empty completion from a model is a provider error too.
    let mut empty = session::Live {
        name: "empty".into(),
        write: |_: &session::WakeAsk, _: &kestrel_desk::turn::repair::Ask| {
            Reply::Text(String::new())
        },
        policy: RepairPolicy::default(),
    };
    let (_, counts) = run(&mut empty, Profile::AuthoringV2, AuthorKind::Model);
    assert_eq!(counts.provider_error, 1);
    assert_eq!(counts.pass, 0);
}

#[test]
fn show_view_at_the_open_is_answered_at_the_same_cutoff() {
    let mut author = session::scripted(
        "viewshop",
        vec!["SHOW VIEW probe budget 300\n  chain 0dte strikes 2\n  levels\n# need the chain first\n".into(), OPEN_TURN.into()],
    );
    let (bus, counts) = run(&mut author, Profile::ViewshopV2, AuthorKind::File);
    assert_eq!(counts.view_request, 1);
    assert_eq!(counts.supersede, 1);
    let views: Vec<(String, String)> = bus
        .events()
        .iter()
        .filter_map(|e| match e {
            Event::ViewDelivered { ts, view, wake, .. } if wake == "open" => {
                Some((ts.to_string(), view.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(views.len(), 2);
    assert_eq!(views[0].0, views[1].0, "same frozen cutoff");
    assert_eq!(views[1].1, "probe");
}

/// The headless verbs play a `Session` (`Session::headless`): on every bundled tape, with a
/// scripted author and documents armed at the open, it writes exactly the Bus a bare `Run`
/// loop writes, byte for byte (the path `kestrel agent` took before the Session owned it), and
/// the outcome counts agree.
#[test]
fn a_headless_session_writes_the_bus_a_bare_run_writes() {
    use kestrel_desk::lang::{self, Mode};
    use kestrel_desk::session::{Headless, Session};
    let docs = vec![
        lang::check(
            "PLAN early budget 0.1R ttl +30m\n  WHEN spot crosses above vwap\n  DO buy 10 shares @ ask\n",
            Mode::File,
        )
        .expect("doc"),
    ];
    let replies = || {
        vec![
            OPEN_TURN.to_string(),
            "PLAN oops budget 0.1R ttl 15:00\n  WHEN spot > hod DO buy 1 ATM C @ fair\n".into(),
            "CANCEL drive-follow\n".into(),
        ]
    };
    for tape in [
        "trend-2025-04-09-s1",
        "range-2025-04-09-s2",
        "shock-2025-04-09-s7",
    ] {
        let path = common::root().join(format!("tapes/{tape}.jsonl"));
        // The bare loop.
        let mut author = session::scripted("script", replies());
        let mut s = Run::new(
            open_tape(&path).expect("tape"),
            cfg(Profile::AuthoringV2, AuthorKind::Model),
            &docs,
            Bus::new(None).keeping(),
        )
        .expect("run");
        while !s.is_done() {
            for w in &s.step().expect("tape") {
                s.wake(w, &mut author);
            }
        }
        let want_counts = s.counts.clone();
        let want = bus_bytes(&s.finish());
        // The Session.
        let h = Headless {
            bus: Bus::new(None).keeping(),
            docs: docs.clone(),
            author: Some(Box::new(session::scripted("script", replies()))),
        };
        let mut s = Session::headless(
            tape,
            open_tape(&path).expect("tape").boxed(),
            cfg(Profile::AuthoringV2, AuthorKind::Model),
            h,
        )
        .expect("session");
        assert_eq!(s.play_to_end(&mut || None).expect("tape"), None);
        assert_eq!(s.counts(), &want_counts, "{tape}");
        assert!(want_counts.wakes > 0, "{tape}: the author was asked");
        let got = bus_bytes(&s.finish());
        assert_eq!(got, want, "{tape}: the Session's Bus is the bare run's");
    }
}

/// A stop asked between events (a caught SIGTERM) ends a headless session where it is: an
/// `error` event naming why, then `session-end`; nothing settles at a close never reached.
#[test]
fn a_headless_session_stops_where_the_signal_finds_it() {
    use kestrel_desk::session::{Headless, Session};
    let h = Headless {
        bus: Bus::new(None).keeping(),
        docs: Vec::new(),
        author: None,
    };
    let mut s = Session::headless(
        "trend",
        open_tape(&trend()).expect("tape").boxed(),
        cfg(Profile::AuthoringV2, AuthorKind::File),
        h,
    )
    .expect("session");
    let mut n = 0;
    let stopped = s
        .play_to_end(&mut || {
            n += 1;
            (n > 500).then_some("SIGTERM")
        })
        .expect("tape");
    assert_eq!(stopped, Some("SIGTERM"));
    let bus = s.interrupt("interrupted by SIGTERM");
    let evs = bus.events();
    assert!(
        matches!(&evs[evs.len() - 2], Event::Error { message, .. } if message.contains("SIGTERM")),
        "{:?}",
        evs[evs.len() - 2]
    );
    match &evs[evs.len() - 1] {
        Event::SessionEnd { tape_events, .. } => {
            assert!(
                *tape_events <= 500,
                "stopped within 500 events: {tape_events}"
            );
        }
        e => panic!("the Bus ends with {e:?}"),
    }
}

/// The agent's book at the open: `hold` buys 10 shares as soon as the clock passes 09:31 (its
/// WHEN stays true all day) and rides to 15:00; the WAKE `later` asks again at 10:00.
const HOLD_OPEN: &str = "VIEW scan budget 600
  plans

WAKE later WHEN time >= 10:00 DELIVER scan BUDGET 1 wakes/day
";

/// The plan the agent arms at the open, and sends again at 10:00.
const HOLD: &str = "PLAN hold budget 1R ttl +90m
  USING signal SPX exec SPY
  WHEN time >= 09:31
  DO buy 10 shares @ ask
  EXIT time >= 15:00
";

/// A scripted session of `HOLD_OPEN` whose 10:00 turn is `later`: the Bus, and what the
/// Blotter said of `hold` right after that turn.
fn hold_session(later: &str) -> (Bus, String) {
    let mut author = session::scripted("script", vec![format!("{HOLD_OPEN}{HOLD}"), later.into()]);
    let mut s = Run::new(
        open_tape(&trend()).expect("tape"),
        cfg(Profile::AuthoringV2, AuthorKind::File),
        &[],
        Bus::new(Some(Box::new(Vec::<u8>::new()))).keeping(),
    )
    .expect("session");
    let mut note = String::new();
    while !s.is_done() {
        let fired = s.step().expect("tape");
        for w in &fired {
            s.wake(w, &mut author);
            if w.wake == "later" {
                let b = s.engine.bus().blotter();
                note = b.plans["hold"].note.clone().unwrap_or_default();
            }
        }
    }
    (s.engine.finish(), note)
}

/// `hold`'s entry fires and entry fills (buys).
fn hold_entries(b: &Bus) -> (usize, usize) {
    let ev = b.events();
    let fires = ev
        .iter()
        .filter(|e| matches!(e, Event::PlanFired { plan, clause, .. } if plan == "hold" && clause == "WHEN"))
        .count();
    let buys = ev
        .iter()
        .filter(|e| matches!(e, Event::Fill { plan, side, .. } if plan == "hold" && *side == kestrel_desk::bus::BusSide::Buy))
        .count();
    (fires, buys)
}

/// A plan re-sent unchanged (an agent re-sending the book it keeps, TURNS.md) is kept as it
/// stands: `hold` filled at 09:31 and its WHEN is still true at the 10:00 turn that sends it
/// again, and it does not enter again (before 2026-12-05 the engine stood it down and armed
/// a new version, which bought a second 10 shares at once). Its ttl is the one it was armed
/// with (`+90m` from 09:30, not from 10:00). Sent again changed, it is a new version that
/// enters again, and the plan's row says what the replaced version still holds.
#[test]
fn a_plan_re_sent_unchanged_is_kept_and_a_changed_one_says_what_it_holds() {
    let same = format!("# keep the book as it is\n{HOLD}");
    let (bus, note) = hold_session(&same);
    assert_eq!(hold_entries(&bus), (1, 1), "re-sent unchanged: one entry");
    let kept = bus.events().iter().find_map(|e| match e {
        Event::DocumentArmed { kept, ts, .. } if !kept.is_empty() => Some((*ts, kept.clone())),
        _ => None,
    });
    assert_eq!(
        kept.map(|(ts, k)| (ts.hhmm(), k)),
        Some(("10:00".to_string(), vec!["hold".to_string()]))
    );
    assert!(!note.starts_with("re-armed"), "{note}");
    // The kept plan's ttl: 09:30 + 90m, not 10:00 + 90m.
    assert!(
        !bus.events().iter().any(|e| matches!(e, Event::PlanState { plan, reason: Some(r), .. } if plan == "hold" && r.contains("11:30"))),
        "the ttl was renewed by the re-send"
    );

    let changed = HOLD.replace("EXIT time >= 15:00", "EXIT time >= 15:30");
    let (bus, note) = hold_session(&changed);
    assert_eq!(hold_entries(&bus), (2, 2), "re-sent changed: a new version");
    assert_eq!(
        note,
        "re-armed 10:00: hold holds +10 SPY shares: the new version can enter again"
    );
}
