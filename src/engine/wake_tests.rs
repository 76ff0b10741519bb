//! WAKE scheduling on tiny hand-written tapes: rising edges, budgets, priority, DELIVER, and
//! supersede. Expected events are worked out from the ticks in each test.

use super::*;
use crate::bus::{Bus, Event};
use crate::market::read_tape_bytes;

const HDR: &str = r#"{"type":"header","v":1,"name":"tiny","date":"2025-04-09","open":"09:30","close":"16:00","symbols":{"SPY":{"prior_close":100.0}}}"#;

/// SPY ticks one second apart from 09:30:00.
fn tape(pxs: &[f64]) -> String {
    let mut s = format!("{HDR}\n");
    for (i, p) in pxs.iter().enumerate() {
        s.push_str(&format!(
            "{{\"type\":\"tick\",\"ts\":\"09:{:02}:{:02}.000\",\"sym\":\"SPY\",\"px\":{p:.2},\"sz\":10}}\n",
            30 + i / 60,
            i % 60
        ));
    }
    s
}

fn run(pxs: &[f64], src: &str) -> (Bus, Vec<FiredWake>) {
    let (h, evs) = read_tape_bytes(tape(pxs).as_bytes()).expect("tape");
    let mut e = Engine::new(
        &h,
        EngineConfig::strict(Px(1000 * 10_000)),
        Bus::new(None).keeping(),
    );
    let doc = crate::lang::check(src, crate::lang::Mode::File).expect("valid");
    e.arm_document(&doc);
    let mut fired = Vec::new();
    for ev in &evs {
        e.on_event(ev);
        fired.extend(e.take_fired_wakes());
    }
    (e.finish(), fired)
}

fn wake_events(b: &Bus) -> Vec<(String, String, String)> {
    b.events()
        .iter()
        .filter_map(|e| match e {
            Event::WakeFired { ts, wake, .. } => {
                Some((ts.to_string(), "fired".into(), wake.clone()))
            }
            Event::WakeSuppressed { ts, wake, reason } => Some((
                ts.to_string(),
                format!("suppressed: {reason}"),
                wake.clone(),
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn a_wake_fires_on_the_rising_edge_only() {
    // spot: 100, 101, 102, 101, 99, 101.5. `spot > 100.5` is F, T, T, T, F, T: it rises at
    // 09:30:01 and again at 09:30:05. Staying true (09:30:02-03) does not fire again.
    let (b, fired) = run(
        &[100.0, 101.0, 102.0, 101.0, 99.0, 101.5],
        "WAKE up WHEN spot > 100.5\n",
    );
    assert_eq!(
        wake_events(&b),
        vec![
            ("09:30:01.000".into(), "fired".into(), "up".into()),
            ("09:30:05.000".into(), "fired".into(), "up".into()),
        ]
    );
    assert_eq!(fired.len(), 2);
    assert_eq!(fired[0].why, "spot > 100.5");
    assert_eq!(fired[0].deliver, None);
}

#[test]
fn a_wake_budget_caps_wakes_per_day_and_says_so() {
    // `spot crosses above 100.5` rises at 09:30:01 (100 -> 101), 09:30:03 (100 -> 101) and
    // 09:30:05 (100 -> 101). BUDGET 2: the third is suppressed, logged.
    let (b, fired) = run(
        &[100.0, 101.0, 100.0, 101.0, 100.0, 101.0],
        "WAKE x WHEN spot crosses above 100.5 BUDGET 2 wakes/day\n",
    );
    assert_eq!(fired.len(), 2);
    let ev = wake_events(&b);
    assert_eq!(ev.len(), 3);
    assert_eq!(
        ev[2],
        (
            "09:30:05.000".into(),
            "suppressed: budget of 2 wakes/day spent".into(),
            "x".into()
        )
    );
    let used: Vec<u64> = b
        .events()
        .iter()
        .filter_map(|e| match e {
            Event::WakeFired { used, .. } => Some(*used),
            _ => None,
        })
        .collect();
    assert_eq!(used, vec![1, 2]);
}

#[test]
fn priority_decides_which_wake_fires_at_one_instant() {
    // Both rise at 09:30:01 (spot 100 -> 102 crosses 101 and exceeds 100.5). `hi` has
    // PRIORITY 5 over `lo`'s 1, so `hi` fires and `lo` is suppressed, although `lo` comes
    // first in the document. At 09:30:03 only `lo` rises again (102 -> 100 -> 101: `spot >
    // 100.5` goes F then T; the cross of 101 needs > 101), so it fires alone.
    let (b, fired) = run(
        &[100.0, 102.0, 100.0, 100.8],
        "VIEW scan\n  levels\nWAKE lo WHEN spot > 100.5 PRIORITY 1\nWAKE hi WHEN spot crosses above 101 DELIVER scan PRIORITY 5\n",
    );
    let ev = wake_events(&b);
    assert_eq!(ev[0], ("09:30:01.000".into(), "fired".into(), "hi".into()));
    assert_eq!(ev[1].2, "lo");
    assert!(ev[1].1.starts_with("suppressed: hi fired first"));
    assert_eq!(ev[2], ("09:30:03.000".into(), "fired".into(), "lo".into()));
    assert_eq!(fired[0].deliver.as_deref(), Some("scan"));
    assert_eq!(fired[0].priority, 5);
}

#[test]
fn unknown_never_fires_a_wake() {
    // velocity(1m) needs a minute of history: over 10 seconds it is UNKNOWN, so a wake on
    // it never fires, even though the price runs up 5%.
    let pxs: Vec<f64> = (0..10).map(|i| 100.0 + i as f64 * 0.5).collect();
    let (b, fired) = run(&pxs, "WAKE fast WHEN velocity(1m) > 0.1\n");
    assert!(fired.is_empty());
    assert!(wake_events(&b).is_empty());
}

#[test]
fn supersede_replaces_the_standing_wakes_and_plans() {
    let (h, evs) = read_tape_bytes(tape(&[100.0, 101.0, 100.0, 101.0]).as_bytes()).expect("tape");
    let mut e = Engine::new(
        &h,
        EngineConfig::strict(Px(1000 * 10_000)),
        Bus::new(None).keeping(),
    );
    let first = crate::lang::check(
        "WAKE old WHEN spot > 100.5\nPLAN p budget 0.1R ttl 16:00\n  WHEN spot > 1000\n  DO buy 1 shares @ fair\n",
        crate::lang::Mode::File,
    )
    .expect("valid");
    e.arm_document(&first);
    e.on_event(&evs[0]);
    e.on_event(&evs[1]); // old fires at 09:30:01
    let second =
        crate::lang::check("WAKE new WHEN spot > 100.5\n", crate::lang::Mode::File).expect("valid");
    assert_eq!(e.supersede(&second), Vec::<String>::new());
    assert_eq!(e.wake_names(), vec!["new".to_string()]);
    e.on_event(&evs[2]);
    e.on_event(&evs[3]); // new rises at 09:30:03; old is gone
    let b = e.finish();
    let ev = wake_events(&b);
    assert_eq!(
        ev.iter().map(|x| x.2.as_str()).collect::<Vec<_>>(),
        vec!["old", "new"]
    );
    // The unfired plan was stood down by the supersede.
    assert!(b.events().iter().any(
        |x| matches!(x, Event::PlanState { plan, state: PlanState::StoodDown, .. } if plan == "p")
    ));
}

#[test]
fn a_wake_armed_while_its_trigger_is_true_waits_for_a_new_rise() {
    // spot 101 (T), re-armed at 09:30:01 while still T: no fire at 09:30:02 (T); 99 at
    // 09:30:03 (F); 101 at 09:30:04 (rise) fires. Without priming, the re-armed wake would
    // fire at once and a turn re-arming it would wake the author on every tick.
    let (h, evs) =
        read_tape_bytes(tape(&[101.0, 101.0, 101.0, 99.0, 101.0]).as_bytes()).expect("tape");
    let mut e = Engine::new(
        &h,
        EngineConfig::strict(Px(1000 * 10_000)),
        Bus::new(None).keeping(),
    );
    e.on_event(&evs[0]);
    e.on_event(&evs[1]);
    let d =
        crate::lang::check("WAKE w WHEN spot > 100.5\n", crate::lang::Mode::File).expect("valid");
    e.supersede(&d);
    for ev in &evs[2..] {
        e.on_event(ev);
    }
    let b = e.finish();
    assert_eq!(
        wake_events(&b),
        vec![("09:30:04.000".into(), "fired".into(), "w".into())]
    );
}

/// A checked file document.
fn doc(src: &str) -> Document {
    crate::lang::check(src, crate::lang::Mode::File).expect("valid")
}

/// The tiny tape with `first` armed, `act` done to the engine after `upto` events, and the
/// rest played: the Bus.
fn played(pxs: &[f64], first: &str, upto: usize, act: impl FnOnce(&mut Engine)) -> Bus {
    let (h, evs) = read_tape_bytes(tape(pxs).as_bytes()).expect("tape");
    let mut e = Engine::new(
        &h,
        EngineConfig::strict(Px(1000 * 10_000)),
        Bus::new(None).keeping(),
    );
    e.arm_document(&doc(first));
    for ev in &evs[..upto] {
        e.on_event(ev);
    }
    act(&mut e);
    for ev in &evs[upto..] {
        e.on_event(ev);
    }
    e.finish()
}

fn states_of(b: &Bus, name: &str) -> Vec<(String, PlanState)> {
    b.events()
        .iter()
        .filter_map(|x| match x {
            Event::PlanState {
                ts, plan, state, ..
            } if plan == name => Some((ts.to_string(), *state)),
            _ => None,
        })
        .collect()
}

/// A supersede that arms the same names again: `ARM follow` and `plan(big).filled` mean the
/// new document's plans, not the ones it replaced (before 2026-12-04 they meant the first
/// plan of the name, stood down, so the new `follow` stayed dormant for good).
#[test]
fn a_document_that_arms_names_again_arms_and_reads_its_own_plans() {
    let book = |when: &str| {
        format!(
            "PLAN big budget 0.5R ttl 16:00\n  WHEN {when}\n  DO buy 1 shares @ ask\n  ARM follow\nPLAN follow budget 0.5R ttl 16:00\n  WHEN spot > 0\n  DO buy 1 shares @ ask\nPLAN watch budget 0.5R ttl 16:00\n  WHEN plan(big).filled\n  DO buy 1 shares @ ask\n"
        )
    };
    let b = played(&[100.0; 4], &book("spot > 1000"), 2, |e| {
        e.supersede(&doc(&book("spot > 0")));
    });
    for name in ["follow", "watch"] {
        let states = states_of(&b, name);
        assert!(
            states
                .iter()
                .any(|(ts, s)| *s == PlanState::Filled && ts.as_str() >= "09:30:02.000"),
            "{name}: {states:?}"
        );
    }
}

/// CANCEL after a re-arm reaches the plan of the name now armed, not the one it replaced
/// (stood down, still live while its inventory rides).
#[test]
fn a_cancel_reaches_the_newest_live_plan_of_its_name() {
    let first =
        "PLAN p budget 0.5R ttl 16:00\n  WHEN spot > 0\n  DO buy 1 shares @ ask\n  TP 2x @ ask\n";
    let b = played(&[100.0; 4], first, 2, |e| {
        e.supersede(&doc(
            "PLAN p budget 0.5R ttl 16:00\n  WHEN spot > 1000\n  DO buy 1 shares @ ask\n",
        ));
        assert!(e.cancel("p"));
    });
    let states = states_of(&b, "p");
    assert!(
        b.events().iter().any(|x| matches!(
            x,
            Event::PlanState { plan, state: PlanState::StoodDown, reason: Some(r), .. }
                if plan == "p" && r == "cancel"
        )),
        "{states:?}"
    );
}

/// A person's corrected ARM target, sent alone: it waits for the standing plan that ARMs it,
/// as the plan it replaced did, and that plan's fill arms it (before 2026-12-04 it armed at
/// once, and the standing ARM reached the stood-down plan).
#[test]
fn an_arm_target_armed_again_alone_keeps_its_gate() {
    let first = "PLAN big budget 0.5R ttl 16:00\n  WHEN spot > 100.5\n  DO buy 1 shares @ ask\n  ARM follow\nPLAN follow budget 0.5R ttl 16:00\n  WHEN spot > 0\n  DO buy 1 shares @ ask\n";
    let b = played(&[100.0, 100.0, 100.0, 101.0, 101.0], first, 2, |e| {
        e.add_as(
            &doc("PLAN follow budget 0.4R ttl 16:00\n  WHEN spot > 0\n  DO buy 2 shares @ ask\n"),
            None,
        );
    });
    let after: Vec<_> = states_of(&b, "follow")
        .into_iter()
        .filter(|(ts, _)| ts.as_str() >= "09:30:01.000")
        .collect();
    assert_eq!(
        after.first(),
        Some(&("09:30:01.000".to_string(), PlanState::StoodDown)),
        "{after:?}"
    );
    assert_eq!(
        after.get(1).map(|x| x.1),
        Some(PlanState::Dormant),
        "{after:?}"
    );
    assert!(
        after
            .iter()
            .any(|(ts, s)| ts == "09:30:03.000" && *s == PlanState::Filled),
        "big filled at 09:30:03 and armed the new follow: {after:?}"
    );
    // The new follow's ticket (2 shares), not the old one's.
    assert!(b.events().iter().any(|x| matches!(
        x,
        Event::Fill { plan, qty: 2, .. } if plan == "follow"
    )));
}

/// A standing `plan(x).filled` reads the x armed again by name after it was compiled.
#[test]
fn a_standing_plan_reference_reads_the_plan_armed_again() {
    let first = "PLAN x budget 0.5R ttl 16:00\n  WHEN spot > 1000\n  DO buy 1 shares @ ask\nPLAN watch budget 0.5R ttl 16:00\n  WHEN plan(x).filled\n  DO buy 1 shares @ ask\n";
    let b = played(&[100.0, 100.0, 100.0, 100.0], first, 2, |e| {
        e.add_as(
            &doc("PLAN x budget 0.5R ttl 16:00\n  WHEN spot > 0\n  DO buy 1 shares @ ask\n"),
            None,
        );
    });
    let watch = states_of(&b, "watch");
    assert!(
        watch.iter().any(|(_, s)| *s == PlanState::Filled),
        "watch fired on the new x's fill: {watch:?}"
    );
}

/// The plan a name replaced keeps its inventory riding (its TP still fills), but its state
/// changes are no longer the name's: the Bus says only the new plan's.
#[test]
fn a_replaced_plans_state_changes_leave_the_bus() {
    let first = "PLAN p budget 0.5R ttl 16:00\n  WHEN spot > 0\n  DO buy 1 shares @ ask\n  TP 1.01x @ bid\n";
    let b = played(&[100.0, 100.0, 100.0, 100.0, 102.0, 102.0], first, 3, |e| {
        e.add_as(
            &doc("PLAN p budget 0.5R ttl 16:00\n  WHEN spot > 1000\n  DO buy 1 shares @ ask\n"),
            None,
        );
    });
    assert!(
        b.events().iter().any(|x| matches!(
            x,
            Event::Fill { plan, side: BusSide::Sell, ts, .. }
                if plan == "p" && ts.to_string() == "09:30:04.000"
        )),
        "the replaced plan's TP filled"
    );
    // At the TP's fill the old plan went flat (done): not said of the name, whose plan is
    // the new one, armed (it is done only at the tape's end).
    let at_fill: Vec<_> = states_of(&b, "p")
        .into_iter()
        .filter(|(ts, _)| ts == "09:30:04.000")
        .collect();
    assert!(
        at_fill.is_empty(),
        "the new p is armed, not done: {at_fill:?}"
    );
}
