//! The engine's per-event shortcuts against the plain computations they replace:
//!
//! - dirty tracking and the sorted level index (a trigger whose inputs did not move is not
//!   re-evaluated) against re-evaluating every trigger on every event: the same Bus bytes;
//! - the fixed-point open P&L of a shares leg and the integer rounding of `money_of` against
//!   the f64 expressions (`libm::round`) the Bus figures were always computed with.

use super::*;
use crate::bus::Bus;
use crate::market::read_tape_bytes;
use proptest::prelude::*;

/// Two symbols: SPX (signal, no chain) and SPY (exec, a chain).
const HDR2: &str = r#"{"type":"header","v":1,"name":"floor","date":"2025-04-09","open":"09:30","close":"16:00","symbols":{"SPX":{"prior_close":5000.0},"SPY":{"prior_close":500.0,"strike_step":1.0}},"vol":{"SPY":{"atm_iv":0.2,"skew":-0.5}},"rate":0.04}"#;

/// A tape from steps `(gap seconds, which symbol, move in cents)`: a gap of 0 puts the tick
/// at the same instant as the previous one (the clock does not move).
fn tape(steps: &[(u32, bool, i32)]) -> String {
    let mut s = String::from(HDR2);
    s.push('\n');
    let (mut spx, mut spy) = (500_000i64, 50_000i64);
    let mut t = Ts::hms(9, 30, 0, 0).ms();
    for &(gap, on_spx, mv) in steps {
        t = (t + gap * 1000).min(Ts::hms(16, 0, 0, 0).ms());
        let (sym, px) = if on_spx {
            spx = (spx + i64::from(mv) * 10).max(100);
            ("SPX", spx)
        } else {
            spy = (spy + i64::from(mv)).max(100);
            ("SPY", spy)
        };
        s.push_str(&format!(
            "{{\"type\":\"tick\",\"ts\":\"{}\",\"sym\":\"{sym}\",\"px\":{}.{:02},\"sz\":10}}\n",
            Ts(t),
            px / 100,
            px % 100
        ));
    }
    s
}

/// Plans with levels on shared series (thresholds from `lv`), clock levels, held,
/// percentiles, crosses of two series, and the busy synthetic set.
fn plans(lv: &[i32]) -> String {
    let mut s = synthetic_plans(10);
    for (i, l) in lv.iter().enumerate() {
        let x = 5000.0 + f64::from(*l) / 10.0;
        let v = f64::from(*l) / 1000.0;
        s.push_str(&match i % 10 {
            0 => format!(
                "\nPLAN l{i} budget 0.2R ttl 15:50\n  WHEN spot crosses above {x:.1}\n  DO buy 1 ATM C @ ask\n  EXIT spot crosses below {:.1}\n",
                x - 1.0
            ),
            1 => format!(
                "\nPLAN l{i} budget 0.2R ttl 15:50\n  WHEN spot < {x:.1} AND NOT phase open\n  DO buy 10 shares @ ask\n  EXIT T-{} OR spot > {:.1}\n",
                i % 40 + 1,
                x + 2.0
            ),
            2 => format!(
                "\nPLAN l{i} budget 0.2R ttl 15:50\n  WHEN velocity(1m) > {v:.3}\n  DO buy 1 +1 C @ fair peg\n  EXIT velocity(1m) < {:.3}\n",
                -v
            ),
            3 => format!(
                "\nPLAN l{i} budget 0.2R ttl 15:50\n  WHEN time >= {}:{:02} AND spot > {x:.1}\n  DO buy 10 shares @ ask\n  TP 1.001x @ bid\n  EXIT phase close\n",
                9 + (i % 6),
                (i * 7) % 60
            ),
            4 => format!(
                "\nPLAN l{i} budget 0.2R ttl 15:50\n  WHEN spot >= {x:.1} held {}s OR spot > p{}\n  DO buy 10 shares @ bid\n  EXIT spot crosses below vwap\n",
                i % 30 + 1,
                50 + i % 40
            ),
            6 => format!(
                "\nPLAN l{i} budget 0.2R ttl +{}m\n  WHEN spot crosses above {x:.1}\n  DO buy 10 shares @ ask\n  ARM l{i}f\n  TP 1.001x @ bid\n\nPLAN l{i}f budget 0.2R ttl +{}m\n  WHEN spot > {:.1}\n  DO buy 10 shares @ ask\n  INVALIDATE spot < {:.1} -> halt\n  EXIT T-5\n",
                i % 50 + 1,
                i % 20 + 1,
                x - 1.0,
                x - 4.0
            ),
            7 => format!(
                "\nPLAN l{i} budget 0.2R ttl +{}m\n  WHEN time >= 10:{:02} AND spot < {x:.1}\n  DO buy 10 shares @ bid\n  INVALIDATE spot crosses below {:.1} -> halt, ride\n  EXIT phase close\n",
                i % 90 + 1,
                (i * 11) % 60,
                x - 3.0
            ),
            // Holders: bought and held with nothing left to fire (quiet), entries open
            // until a relative ttl; shares (valued by instrument) and an option (one by one);
            // every other one with level EXITs left, which it watches while quiet (the
            // option's with a `held` one: it reads the clock only while it holds).
            8 => format!(
                "\nPLAN l{i} budget 0.2R ttl +{}m\n  WHEN spot > {x:.1}\n  DO buy {} shares @ ask\n{}",
                i % 60 + 1,
                10 + i % 3,
                if (i / 10) % 2 == 1 {
                    format!("  EXIT spot crosses below {:.1}\n", x - 1.0)
                } else {
                    String::new()
                }
            ),
            9 => format!(
                "\nPLAN l{i} budget 0.2R ttl 15:50\n  WHEN spot < {x:.1}\n  DO buy 1 ATM P @ ask\n{}",
                if (i / 10) % 2 == 1 {
                    format!("  EXIT spot > {:.1} held {}s OR T-{}\n", x + 1.5, i % 4 + 1, i % 30 + 1)
                } else {
                    String::new()
                }
            ),
            _ => format!(
                "\nPLAN l{i} budget 0.2R ttl 15:50\n  WHEN SPY.spot > {:.2} AND spot crosses above vwap\n  DO buy 1 -1 P @ min(fair, mid) cancel-if spot < {:.1}\n  EXIT pnl < -0.01 OR fills.avg_px > 1000\n",
                500.0 + f64::from(*l) / 100.0,
                x - 3.0
            ),
        });
    }
    s
}

/// The bundled shock tape's text.
fn shock_tape() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tapes/shock-2025-04-09-s7.jsonl"
    ))
    .expect("bundled tape")
}

fn run(t: &str, plans: &str, naive: bool) -> Bus {
    run_counting(t, plans, naive).0
}

/// The Bus and the number of full trigger evaluations.
fn run_counting(t: &str, plans: &str, naive: bool) -> (Bus, u64) {
    let (b, n, _) = run_stepping(t, plans, naive);
    (b, n)
}

/// The Bus, the number of full trigger evaluations, and the plan steps.
fn run_stepping(t: &str, plans: &str, naive: bool) -> (Bus, u64, u64) {
    run_with(t, plans, naive, &[])
}

/// [`run_stepping`] with acts from outside the plan loop at given events (before the event at
/// that index is fed): `cancel NAME`, or a STAND-DOWN with that reason.
fn run_with(t: &str, plans: &str, naive: bool, acts: &[(usize, &str)]) -> (Bus, u64, u64) {
    let (h, evs) = read_tape_bytes(t.as_bytes()).expect("tape");
    let mut e = Engine::new(
        &h,
        EngineConfig::strict(Px(1000 * 10_000)),
        Bus::new(None).keeping(),
    );
    e.sh.slots.dirt.naive = naive;
    let d = crate::lang::check(plans, crate::lang::Mode::File).expect("valid plans");
    e.arm_document(&d);
    for (k, ev) in evs.iter().enumerate() {
        for &(_, act) in acts.iter().filter(|a| a.0 == k) {
            if let Some(text) = act.strip_prefix("arm ") {
                let d = crate::lang::check(text, crate::lang::Mode::File).expect("valid plans");
                e.arm_document(&d);
                continue;
            }
            match act.strip_prefix("cancel ") {
                Some(name) => {
                    e.cancel(name);
                }
                None => e.stand_down(act),
            }
        }
        e.on_event(ev);
    }
    let n = e.sh.slots.dirt.full_evals.get();
    let steps = e.sh.plan_steps;
    (e.finish(), n, steps)
}

/// The dirty-tracked run's Bus, held to the naive scan's (the same events and hash), with the
/// full evaluations and plan steps of each: `(bus, (evals, steps), (naive_evals, naive_steps))`.
fn against_naive(t: &str, plans: &str) -> (Bus, (u64, u64), (u64, u64)) {
    against_naive_acting(t, plans, &[])
}

/// [`against_naive`] with acts from outside the loop ([`run_with`]) in both runs.
fn against_naive_acting(
    t: &str,
    plans: &str,
    acts: &[(usize, &str)],
) -> (Bus, (u64, u64), (u64, u64)) {
    let (fast, evals, steps) = run_with(t, plans, false, acts);
    let (naive, naive_evals, naive_steps) = run_with(t, plans, true, acts);
    assert_eq!(fast.events(), naive.events(), "acts {acts:?}");
    assert_eq!(fast.hash_hex(), naive.hash_hex());
    (fast, (evals, steps), (naive_evals, naive_steps))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Dirty tracking and the level index write exactly the Bus of evaluating every
    /// trigger on every event.
    #[test]
    fn dirty_tracking_writes_the_bus_of_the_naive_scan(
        steps in proptest::collection::vec((prop_oneof![Just(0u32), Just(1), 1u32..400], any::<bool>(), -60i32..=60), 1..300),
        lv in proptest::collection::vec(-300i32..=300, 0..18),
    ) {
        let t = tape(&steps);
        let p = plans(&lv);
        let fast = run(&t, &p, false);
        let naive = run(&t, &p, true);
        prop_assert_eq!(fast.events(), naive.events());
        prop_assert_eq!(fast.hash_hex(), naive.hash_hex());
    }

    /// `money_of` rounds half away from zero exactly as `libm::round`, clamped.
    #[test]
    fn money_of_is_libm_round(x in prop_oneof![
        -1e6f64..1e6,
        -1e16f64..1e16,
        (-1_000_000i64..1_000_000).prop_map(|k| k as f64 + 0.5),
        (-1_000_000i64..1_000_000).prop_map(|k| k as f64 - 0.5),
        any::<f64>(),
    ]) {
        let r = libm::round(x);
        let want = if r.is_finite() { r.clamp(i64::MIN as f64, i64::MAX as f64) as i64 } else { 0 };
        prop_assert_eq!(money_of(x), want);
    }

    /// The fixed-point open P&L of a shares leg is the f64 figure, bit for bit; options are
    /// the f64 figure by construction.
    #[test]
    fn fixed_point_marks_are_the_f64_marks(
        px in prop_oneof![1i64..10_000_000, 1i64..100_000_000_000, Just(0i64)],
        qty in prop_oneof![-1_000i64..1_000, -10_000_000i64..10_000_000],
        cost_px in 1i64..10_000_000,
        mult in prop_oneof![Just(1u32), Just(100u32)],
        option in any::<bool>(),
    ) {
        let pos = Position {
            qty,
            cost: i128::from(cost_px) * i128::from(qty) * i128::from(mult),
            realised: 0,
            mark: None,
            model: false,
            mult,
            at: 0,
        };
        let q = QuoteF {
            fair: Px(px).to_f64(),
            intrinsic: Px(px),
            bid: Px(px),
            ask: Px(px),
            mid: Px(px),
            last: Px(px),
            option,
            quoted: false,
        };
        let val = q.fair * 1e4 * pos.qty as f64 * f64::from(pos.mult);
        let want = money_of(val - pos.cost as f64);
        prop_assert_eq!(leg_open_pnl(&pos, &q), want);
    }

    /// The walk from a slot's kept position marks exactly the levels the binary search of
    /// `touch_levels` marks, and returns the levels below the new value, whatever the hint
    /// (right, stale, or past the end), with repeated thresholds.
    #[test]
    fn the_level_walk_is_the_binary_search(
        mut at in proptest::collection::vec(-20i32..20, 0..40),
        a in -25i32..25,
        c in -25i32..25,
        half in any::<(bool, bool)>(),
        hint in 0usize..50,
        right in any::<bool>(),
    ) {
        at.sort_unstable();
        let levels: Vec<(f64, u32)> = at.iter().enumerate().map(|(i, &x)| (f64::from(x), i as u32)).collect();
        let (a, c) = (f64::from(a) + if half.0 { 0.5 } else { 0.0 }, f64::from(c) + if half.1 { 0.5 } else { 0.0 });
        prop_assume!(a != c);
        let hint = if right { levels.partition_point(|l| l.0 < a) } else { hint };
        let n = levels.len();
        let (mut want, mut got) = (vec![0u64; n], vec![0u64; n]);
        let (mut woke_want, mut woke_got) = (Vec::new(), Vec::new());
        let group_of: Vec<u32> = (0..n as u32).map(|i| i % 3).collect();
        trigger::touch_levels(&levels, a.min(c), a.max(c), 9, &mut want, (&group_of, &mut woke_want));
        let below = trigger::touch_moved(&levels, hint, (a, c), 9, &mut got, (&group_of, &mut woke_got));
        prop_assert_eq!(got, want);
        woke_want.sort_unstable();
        woke_got.sort_unstable();
        prop_assert_eq!(woke_got, woke_want);
        prop_assert_eq!(below, levels.partition_point(|l| l.0 < c));
    }

    /// The clock's levels marked at each refresh are those the binary search of
    /// `touch_levels` finds between the previous clock and this one, whether the clock moves
    /// forward (past levels or below the next one, where no walk is made), stands or goes back,
    /// and with levels added between refreshes (the first refresh marks them all).
    #[test]
    fn the_clock_marks_the_levels_it_crossed(
        // Levels in the first minutes, where the clock walks in half seconds.
        first in proptest::collection::vec(34_200i32..34_380, 1..10),
        steps in proptest::collection::vec(
            (-6i32..12, proptest::option::of(34_200i32..34_380), any::<bool>()),
            1..150,
        ),
    ) {
        let (h, _) = read_tape_bytes(HDR2.as_bytes()).expect("header");
        let ms = MarketState::new(&h);
        let mut slots = trigger::Slots::default();
        let (mut mkt, mut pct) = (Vec::new(), Vec::new());
        // Every level with its trigger id, kept sorted for the reference search.
        let mut levels: Vec<(f64, u32)> = Vec::new();
        let add = |slots: &mut trigger::Slots, levels: &mut Vec<(f64, u32)>, x: f64| {
            let id = slots.new_clock_level(x);
            levels.push((x, id));
            levels.sort_by(|a, b| a.0.total_cmp(&b.0));
        };
        for &x in &first {
            add(&mut slots, &mut levels, f64::from(x));
        }
        let mut ms_now = i64::from(Ts::hms(9, 30, 0, 0).ms());
        let mut prev: Option<f64> = None;
        for (step, level, half) in steps {
            if let Some(x) = level {
                // On a whole second, or half a second past it (a level the clock can stand on).
                add(&mut slots, &mut levels, f64::from(x) + if half { 0.5 } else { 0.0 });
            }
            ms_now = (ms_now + i64::from(step) * 500).clamp(0, i64::from(Ts::hms(16, 0, 0, 0).ms()));
            let clock = Ts(u32::try_from(ms_now).expect("in the day"));
            slots.refresh(&ms, &[], &mut mkt, &mut pct, clock);
            let d = &slots.dirt;
            let c = clock.secs_f64();
            let mut want = vec![0u64; d.touched.len()];
            match prev {
                None => {
                    for l in &levels {
                        want[l.1 as usize] = d.epoch;
                    }
                }
                Some(p) if p != c => trigger::touch_levels(
                    &levels,
                    p.min(c),
                    p.max(c),
                    d.epoch,
                    &mut want,
                    (&[], &mut Vec::new()),
                ),
                Some(_) => {}
            }
            let got: Vec<bool> = d.touched.iter().map(|&t| t == d.epoch).collect();
            let want: Vec<bool> = want.iter().map(|&t| t == d.epoch).collect();
            prop_assert_eq!(got, want, "clock {} from {:?}", c, prev);
            prev = Some(c);
        }
    }

    /// `i128_f64` is `as f64`.
    #[test]
    fn i128_to_f64_is_as_f64(x in prop_oneof![any::<i64>().prop_map(i128::from), any::<i128>()]) {
        prop_assert_eq!(i128_f64(x).to_bits(), (x as f64).to_bits());
    }
}

/// A level armed from outside the loop inside the gap between the levels a slot's latest
/// walk left it in (`spot` at 5005 between none and 5010, a plan armed on 5006) is walked at
/// the slot's next move: the plan armed later fires at the cross, as in the naive scan.
#[test]
fn a_level_armed_inside_a_slots_gap_is_crossed() {
    // A SPY trade (the shares' quote), then SPX from 5000 up by 0.50 a second to 5005, still
    // twice, then 5007 (across 5006), 5007.50 and back to 5004.50.
    let mut steps: Vec<(u32, bool, i32)> = vec![(1, false, 0)];
    steps.extend((0..10).map(|_| (1, true, 5)));
    steps.extend([
        (1, true, 0),
        (1, true, 0),
        (1, true, 20),
        (1, true, 5),
        (1, true, -30),
    ]);
    let t = tape(&steps);
    let first = "USING signal SPX exec SPY\n\nPLAN a budget 0.2R ttl 15:50\n  WHEN spot crosses above 5010.0\n  DO buy 10 shares @ ask\n";
    let later = "arm USING signal SPX exec SPY\n\nPLAN b budget 0.2R ttl 15:50\n  WHEN spot crosses above 5006.0\n  DO buy 10 shares @ ask\n";
    let (bus, _, _) = against_naive_acting(&t, first, &[(12, later)]);
    let fired: Vec<&str> = bus
        .events()
        .iter()
        .filter_map(|e| match e {
            Event::PlanFired { plan, .. } => Some(plan.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(fired, ["b"]);
}

/// The level index visits only the levels a move crossed.
#[test]
fn a_move_touches_only_the_levels_it_crossed() {
    let levels: Vec<(f64, u32)> = (0..100).map(|i| (f64::from(i), i as u32)).collect();
    let mut touched = vec![0u64; 100];
    trigger::touch_levels(&levels, 10.5, 13.0, 7, &mut touched, (&[], &mut Vec::new()));
    let hit: Vec<usize> = (0..100).filter(|&i| touched[i] == 7).collect();
    assert_eq!(hit, vec![11, 12, 13]);
}

/// Plans whose series are read only after a fire: a line cancel-if, a CANCEL-IF, a RELOAD,
/// EXITs (one `held`, one `crosses`), an active plan's INVALIDATE, and a dormant plan's WHEN
/// armed by a fill's ARM (which steps it at the same event). Each reads a series no other
/// plan reads, so each is skipped until its trigger can be read (`Slots::skip`).
const LATE_READERS: &str = "USING signal SPX exec SPY 0dte

PLAN a0 budget 0.5R ttl 15:30
  WHEN time >= 10:05
  DO buy 1 +1 C @ fair-3c cancel-if velocity(2m) > 0.05
  TP 1.2x @ fair
  EXIT velocity(3m) < -0.08 OR lod crosses below 5300

PLAN a1 budget 0.5R ttl 15:30
  WHEN time >= 11:40
  DO buy 10 shares @ bid
  RELOAD WHEN velocity(30s) < -0.01 buy 10 shares @ bid
  CANCEL-IF velocity(90s) > 0.2
  INVALIDATE SPY.spot < 470 -> halt, ride
  EXIT vwap > 5400 OR T-30
  ARM a2

PLAN a2 budget 0.5R ttl +40m
  WHEN velocity(4m) < -0.05 OR hod crosses above 5500
  DO buy 1 ATM P @ fair peg cancel-if velocity(45s) > 0.1
  EXIT velocity(4m) > 0.05

PLAN a3 budget 0.5R ttl 15:50
  WHEN velocity(1m) < -0.2
  DO buy 1 -1 P @ fair esc ask 20s
  EXIT velocity(2m) > 0.1 held 20s OR velocity(5m) crosses above 0
  TP 1.4x @ fair
";

/// A bundled tape's text.
fn bundled_tape(name: &str) -> String {
    let path = format!("{}/tapes/{name}.jsonl", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).expect("bundled tape")
}

/// The series slots no trigger that can be read reads are not refreshed, and a slot read
/// again (an order's cancel-if, EXITs and a RELOAD after a fire, a plan armed by a fill) is
/// read from where it was left: the Bus of refreshing every slot at every event (the naive
/// scan), on the three bundled tapes, with and without the busy set's slots beside them.
#[test]
fn series_read_again_after_a_fire_give_the_bus_of_reading_every_slot() {
    let busy = synthetic_plans(10);
    let with_busy = format!(
        "{LATE_READERS}{}",
        busy.trim_start_matches("USING signal SPX exec SPY 0dte\n")
    );
    for tape in [
        "shock-2025-04-09-s7",
        "trend-2025-04-09-s1",
        "range-2025-04-09-s2",
    ] {
        let t = bundled_tape(tape);
        for p in [LATE_READERS, with_busy.as_str()] {
            let (bus, _, _) = against_naive(&t, p);
            let fired = bus
                .events()
                .iter()
                .filter(|e| matches!(e, Event::PlanFired { plan, .. } if plan.starts_with('a')))
                .count();
            assert!(fired >= 6, "{tape}: {fired} fires of the late readers");
        }
    }
}

/// Plans that read a pair (a series against `vwap` or a percentile) only once they hold:
/// `vwap` is read by no one before, so its pairs with `spot` (which `b3` reads all day) are
/// skipped and taken again when an EXIT reads them.
const LATE_PAIRS: &str = "USING signal SPX exec SPY 0dte

PLAN b0 budget 0.5R ttl 15:30
  WHEN time >= 10:05
  DO buy 10 shares @ ask
  EXIT spot crosses below vwap OR spot < p40

PLAN b1 budget 0.5R ttl 15:30
  WHEN time >= 11:40
  DO buy 10 shares @ ask
  EXIT spot > vwap held 30s OR hod crosses above vwap

PLAN b2 budget 0.5R ttl 15:30
  WHEN time >= 09:45
  DO buy 10 shares @ ask
  EXIT spot crosses above vwap

PLAN b3 budget 0.5R ttl 15:30
  WHEN spot > 99999
  DO buy 10 shares @ ask
";

/// A pair with a side no trigger that can be read reads is not taken, and is taken again
/// when that side is read again: the Bus of reading every slot and pair at every event, on
/// the three bundled tapes (each with `vwap` skipped before the first fire).
#[test]
fn pairs_read_again_after_a_fire_give_the_bus_of_reading_every_pair() {
    for tape in [
        "shock-2025-04-09-s7",
        "trend-2025-04-09-s1",
        "range-2025-04-09-s2",
    ] {
        let t = bundled_tape(tape);
        let (bus, _, _) = against_naive(&t, LATE_PAIRS);
        let fills = bus
            .events()
            .iter()
            .filter(|e| matches!(e, Event::Fill { plan, .. } if plan.starts_with('b')))
            .count();
        assert!(
            fills >= 5,
            "{tape}: {fills} fills (three entries and their exits)"
        );
    }
}

/// Plans that read a percentile in their WHEN only (skipped once they fire), in an EXIT
/// only (read from the fire on), and against `spot` from below and from above: the Bus of
/// computing every percentile at every sample.
const LATE_PCTS: &str = "USING signal SPX exec SPY 0dte

PLAN c0 budget 0.5R ttl 15:30
  WHEN spot > p60
  DO buy 10 shares @ ask
  EXIT spot < p30 OR spot crosses below p45

PLAN c1 budget 0.5R ttl 15:30
  WHEN time >= 10:40
  DO buy 10 shares @ ask
  EXIT spot > p85 held 20s OR spot crosses above p97

PLAN c2 budget 0.5R ttl 15:30
  WHEN spot <= p8 AND NOT phase open
  DO buy 10 shares @ ask
  EXIT hod >= p99 OR lod < p3

PLAN c3 budget 0.5R ttl 15:30
  WHEN spot < p1 OR spot > p100
  DO buy 10 shares @ ask
";

/// A percentile no trigger that can be read reads is not computed, and is computed again
/// when one reads it again (an EXIT after the fire); a series against its own percentile
/// is decided from the percentile's bounds while the series stays clear of them: the Bus
/// of computing every percentile at every sample and comparing the values, on the three
/// bundled tapes, and the percentile slots are skipped once their only readers fired.
#[test]
fn percentiles_skipped_and_bounded_give_the_bus_of_computing_them_all() {
    for tape in [
        "shock-2025-04-09-s7",
        "trend-2025-04-09-s1",
        "range-2025-04-09-s2",
    ] {
        let t = bundled_tape(tape);
        let (bus, _, _) = against_naive(&t, LATE_PCTS);
        let fired = |p: &str| {
            bus.events()
                .iter()
                .filter(|e| matches!(e, Event::PlanFired { plan, .. } if plan == p))
                .count()
        };
        assert!(fired("c1") >= 1, "{tape}: c1 enters at 10:40");
        assert!(
            fired("c0") + fired("c2") >= 1,
            "{tape}: a percentile WHEN fires"
        );
        // With the busy set, the percentile plans' WHENs are their slots' only readers.
        let busy = synthetic_plans(10);
        let (h, evs) = read_tape_bytes(t.as_bytes()).expect("tape");
        let mut e = Engine::new(
            &h,
            EngineConfig::strict(Px(1000 * 10_000)),
            Bus::new(None).keeping(),
        );
        let d = crate::lang::check(&busy, crate::lang::Mode::File).expect("plans");
        e.arm_document(&d);
        let mut skipped_from = None;
        for ev in &evs {
            e.on_event(ev);
            let all = (1u64 << e.sh.slots.pcts.len()) - 1;
            if skipped_from.is_none() && e.sh.slots.skipped_pcts() == all {
                skipped_from = Some(e.sh.now);
            }
        }
        let fires = e
            .bus()
            .events()
            .iter()
            .filter_map(|x| match x {
                Event::PlanFired { plan, ts, .. } if plan == "p3" || plan == "p8" => Some(*ts),
                _ => None,
            })
            .collect::<Vec<_>>();
        // Skipped from the step after the later fire, or after the ttl (15:30) of a plan
        // that never fired.
        let end = match fires.as_slice() {
            [a, b] => (*a).max(*b),
            _ => Ts::hms(15, 30, 0, 0),
        };
        assert!(
            skipped_from.is_some_and(|at| at >= end && at.ms() - end.ms() <= 1000),
            "{tape}: fires {fires:?}, skipped from {skipped_from:?}"
        );
    }
}

/// Which slots are skipped follows the plans' phases: on the shock tape with the busy set,
/// `velocity(1m)` is read while its plans wait (until 09:31:42, when the second fires; the
/// cancel-ifs of the percentile plans' orders would read it, but they never fire),
/// `velocity(5m)` while the clock plans' INVALIDATEs can fire (until 10:24:55), and `vwap`
/// while a plan can read it: the crosses plans until the second is done (10:25:36; the held
/// plans' `EXIT spot < vwap` is not read while they wait). Each is skipped from the event
/// after the step that ended its last reader (the exec symbol's tick of the same second).
/// `spot` and `hod`, which the waiting plans read, are refreshed all day.
#[test]
fn slots_are_skipped_by_the_plans_phases() {
    let (h, evs) = read_tape_bytes(shock_tape().as_bytes()).expect("tape");
    let mut e = Engine::new(
        &h,
        EngineConfig::strict(Px(1000 * 10_000)),
        Bus::new(None).keeping(),
    );
    let d = crate::lang::check(&synthetic_plans(10), crate::lang::Mode::File).expect("plans");
    e.arm_document(&d);
    let slot = |e: &Engine, m: MSeries| {
        let at = e.sh.slots.series.iter().position(|x| x.1 == m);
        1u64 << at.expect("a slot of the busy set")
    };
    let mut seen = Vec::new();
    for ev in &evs {
        e.on_event(ev);
        let skipped = e.sh.slots.skipped();
        let v1 = skipped & slot(&e, MSeries::Velocity(60)) != 0;
        let v5 = skipped & slot(&e, MSeries::Velocity(300)) != 0;
        let vwap = skipped & slot(&e, MSeries::Vwap) != 0;
        for m in [MSeries::Spot, MSeries::Hod] {
            assert_eq!(skipped & slot(&e, m), 0, "{m:?} at {}", e.sh.now);
        }
        if seen.last().map(|x: &(_, _)| x.1) != Some((v1, v5, vwap)) {
            seen.push((e.sh.now.to_string(), (v1, v5, vwap)));
        }
        if e.sh.now >= Ts::hms(15, 0, 0, 0) {
            break;
        }
    }
    let at = |t: &str, x| (t.to_string(), x);
    assert_eq!(
        seen,
        vec![
            at("09:30:00.000", (false, false, false)),
            at("09:31:42.000", (true, false, false)),
            at("10:24:55.000", (true, true, false)),
            at("10:25:36.000", (true, true, true)),
        ]
    );
}

/// On the bundled shock tape with the synthetic plans, dirty tracking skips evaluations
/// (the signal's triggers on the exec symbol's ticks, levels not crossed) and writes the
/// same Bus.
#[test]
fn dirty_tracking_skips_work_on_the_shock_tape() {
    let t = shock_tape();
    let p = synthetic_plans(10);
    let (fast, nf) = run_counting(&t, &p, false);
    let (naive, nn) = run_counting(&t, &p, true);
    assert_eq!(fast.hash_hex(), naive.hash_hex());
    assert!(
        nf * 2 < nn,
        "full evaluations: {nf} with dirty tracking, {nn} naive"
    );
}

/// Quiet plans: holders with nothing left to fire but level EXITs are not stepped but
/// valued (the shares ones by instrument, lazily; an option one by one), woken by their
/// ttl, by a pod halt's flatten and by their EXITs' levels, and write the Bus of stepping
/// every plan on every event: the same excursions at the close, the same pod halt (it reads
/// every plan's P&L at every event), the same wakes on `pnl` and the same EXITs.
#[test]
fn quiet_plans_are_valued_as_their_steps_would() {
    let t = shock_tape();
    for (pod, wake) in [(false, false), (true, false), (false, true)] {
        let mut p = String::from("USING signal SPX exec SPY 0dte\n");
        if pod {
            p.push_str("POD desk RISK day-loss 0.2R -> halt\n");
        }
        if wake {
            p.push_str("WAKE down WHEN pnl < -0.01\n");
        }
        for i in 0..40 {
            let ttl = if i % 3 == 0 {
                format!("+{}m", i + 1)
            } else {
                "15:50".into()
            };
            let what = if i % 10 == 9 {
                "1 ATM C".to_string()
            } else {
                format!("{} shares", 10 + i)
            };
            // Every other plan watches level EXITs: crossed for some, never for others.
            let exit = match i % 4 {
                1 => format!("  EXIT spot crosses below {}\n", 4790 + i),
                3 => format!("  EXIT spot < {} OR T-{}\n", 4700 + 4 * i, i % 20 + 1),
                _ => String::new(),
            };
            p.push_str(&format!(
                "\nPLAN h{i} budget 0.5R ttl {ttl}\n  WHEN spot > {}\n  DO buy {what} @ ask\n{exit}",
                4800 + i
            ));
        }
        let (fast, _, steps) = run_stepping(&t, &p, false);
        let (naive, _, naive_steps) = run_stepping(&t, &p, true);
        let (a, b) = (fast.events(), naive.events());
        if let Some(k) = (0..a.len().max(b.len())).find(|&k| a.get(k) != b.get(k)) {
            panic!(
                "pod {pod} wake {wake}: event {k} differs:\n quiet {:?}\n naive {:?}",
                a.get(k),
                b.get(k)
            );
        }
        assert_eq!(fast.hash_hex(), naive.hash_hex());
        let count = |f: fn(&Event) -> bool| fast.events().iter().filter(|e| f(e)).count();
        assert!(count(|e| matches!(e, Event::Fill { .. })) >= 30);
        assert!(count(|e| matches!(e, Event::Excursion { mae_usd, .. } if mae_usd.raw() < 0)) > 0);
        assert_eq!(count(|e| matches!(e, Event::PodHalt { .. })) > 0, pod);
        let exits =
            count(|e| matches!(e, Event::PlanFired { clause, .. } if clause.starts_with("EXIT")));
        assert!(pod || exits > 0, "some watched EXITs fire");
        assert!(
            steps * 10 < naive_steps,
            "plan steps: {steps} quiet, {naive_steps} naive"
        );
    }
}

/// Parking: fifty armed plans waiting on levels of the signal, most of them never crossed,
/// are stepped only at the events that move what they read (their levels crossed, the clock
/// reaching a ttl) and write the Bus of stepping every plan on every event.
#[test]
fn parked_plans_step_only_when_their_inputs_move() {
    let t = shock_tape();
    let mut p = String::from("USING signal SPX exec SPY 0dte\n");
    for i in 0..50 {
        // Levels from 4790 to 4839 (the tape opens near 4826): some cross, most never do.
        p.push_str(&format!(
            "\nPLAN w{i} budget 0.2R ttl 15:30\n  WHEN spot crosses above {}\n  DO buy 10 shares @ ask\n  INVALIDATE spot < 4000 -> halt\n  EXIT spot crosses below {}\n",
            4790 + i,
            4789 + i
        ));
    }
    let (fast, (_, steps), (_, naive_steps)) = against_naive(&t, &p);
    assert!(
        fast.events()
            .iter()
            .any(|e| matches!(e, Event::Fill { .. })),
        "some levels are crossed"
    );
    // Naive: every live plan at every event. Parked: a small fraction.
    assert!(
        steps * 10 < naive_steps,
        "plan steps: {steps} parked, {naive_steps} naive"
    );
}

/// A quiet holder whose relative ttl comes at an event that moves its price leaves the quiet
/// set before the holders take that price: its step values it at that price (its excursion
/// sees the low), as stepping it at every event does. (Found by the property test above.)
#[test]
fn a_holder_leaving_at_its_ttl_is_valued_at_that_events_price() {
    let t = tape(&[
        (119, false, 0),
        (203, true, 0),
        (218, false, -1),
        (0, false, 1),
        (0, false, 0),
    ]);
    let p = "USING signal SPX exec SPY 0dte\n\nPLAN h budget 0.2R ttl +9m\n  WHEN spot > 4999.9\n  DO buy 12 shares @ ask\n";
    let fast = run(&t, p, false);
    let naive = run(&t, p, true);
    assert_eq!(fast.events(), naive.events());
    // Bought at 500.01, marked at 499.99 at the ttl's event: 12 x -0.02.
    assert!(
        fast.events()
            .iter()
            .any(|e| matches!(e, Event::Excursion { mae_usd, .. } if *mae_usd == Px(-2400)))
    );
}

/// A working order's plan whose orders rest having seen their quotes sleeps through the
/// events that cannot move it (`idle_resting`, `Sched::sleep`: the signal's ticks) until its
/// symbol's next event or its escalation's time: the Bus of stepping every plan at every
/// event, in a little over half the steps on a tape whose two symbols tick in turn.
#[test]
fn idle_working_orders_are_not_stepped() {
    let t = shock_tape();
    // Pegged far under the market: it rests, re-priced at the exec symbol's ticks; and one
    // that escalates once. (2R: the put's peg climbs past what 0.2R lets a re-price reach.)
    let p = "USING signal SPX exec SPY 0dte\n\nPLAN r budget 2R ttl 15:30\n  WHEN time >= 09:31\n  DO buy 1 ATM P @ fair-50% peg\n  EXIT T-15\n\nPLAN e budget 2R ttl 15:30\n  WHEN time >= 09:32\n  DO buy 1 +1 C @ fair-50% esc fair-40% 90s\n";
    let (fast, (_, steps), (_, naive_steps)) = against_naive(&t, p);
    let count = |f: fn(&Event) -> bool| fast.events().iter().filter(|e| f(e)).count();
    assert!(count(|e| matches!(e, Event::OrderRepriced { .. })) > 5_000);
    assert_eq!(
        count(|e| matches!(e, Event::OrderRepriced { reason, .. } if reason == "esc#1")),
        1
    );
    assert!(
        steps * 10 < naive_steps * 6,
        "plan steps: {steps} skipping idle ones, {naive_steps} naive"
    );
}

/// A series against another series or its own percentile is re-evaluated only when the
/// sign of their difference changes (pair slots): plans waiting on `spot >= hod held`,
/// `spot > p95` and `spot crosses above vwap`, then holding with `spot < vwap` or `spot
/// crosses below vwap` as their EXIT, write the naive scan's Bus in a fraction of its plan
/// steps and full evaluations. (Re-evaluated at every move of either side, as before pair slots,
/// they would step at each of the signal's ticks: about half the naive scan's steps.)
#[test]
fn pairs_step_only_when_their_sign_changes() {
    let t = shock_tape();
    let mut p = String::from("USING signal SPX exec SPY 0dte\n");
    for i in 0..5 {
        p.push_str(&format!(
            "\nPLAN h{i} budget 0.2R ttl 15:30\n  WHEN spot >= hod held {}s\n  DO buy 10 shares @ bid\n  EXIT spot < vwap\n",
            2 + i
        ));
        p.push_str(&format!(
            "\nPLAN q{i} budget 0.2R ttl 15:30\n  WHEN spot > p{} AND NOT phase open\n  DO buy 10 shares @ ask\n  EXIT spot crosses below vwap\n",
            95 + i
        ));
        p.push_str(&format!(
            "\nPLAN v{i} budget 0.2R ttl 15:30\n  WHEN spot crosses above vwap AND time >= 1{i}:00\n  DO buy 10 shares @ ask\n  EXIT spot < vwap\n"
        ));
    }
    let (fast, (evals, steps), (naive_evals, naive_steps)) = against_naive(&t, &p);
    let fills = fast
        .events()
        .iter()
        .filter(|e| matches!(e, Event::Fill { .. }))
        .count();
    assert!(fills >= 10, "{fills} fills: the plans should trade");
    assert!(
        steps * 50 < naive_steps,
        "plan steps: {steps} with pair slots, {naive_steps} naive"
    );
    assert!(
        evals * 50 < naive_evals,
        "full evaluations: {evals} with pair slots, {naive_evals} naive"
    );
}

/// Plans asleep on their resting orders, cancelled or stood down from outside the plan loop
/// while they sleep (at an SPX event: their own symbol's is next), write the naive scan's
/// Bus: the act ends every sleep (the schedule is rebuilt), and the light steps before it
/// are what full steps would have been.
#[test]
fn sleepers_acted_on_from_outside_write_the_bus_of_the_naive_scan() {
    let t = shock_tape();
    let p = "USING signal SPX exec SPY 0dte\n\nPLAN r budget 2R ttl 15:30\n  WHEN time >= 09:31\n  DO buy 1 ATM P @ fair-50% peg\n\nPLAN s budget 2R ttl 15:30\n  WHEN time >= 09:31\n  DO buy 1 -1 P @ fair-50% peg\n\nPLAN u budget 2R ttl 15:30\n  WHEN time >= 09:31\n  DO buy 1 +1 C @ fair-50% peg esc fair-40% 3000s\n";
    // Events come in pairs (SPX, then SPY, each second): odd indices are SPY's.
    for acts in [
        vec![(2_000, "cancel r")],
        vec![(2_001, "cancel s"), (9_000, "drill")],
        vec![(4_000, "cancel u"), (4_002, "cancel r")],
    ] {
        let (fast, (_, steps), (_, naive_steps)) = against_naive_acting(&t, p, &acts);
        let cancelled = fast
            .events()
            .iter()
            .filter(|e| matches!(e, Event::OrderCancelled { .. }))
            .count();
        assert!(
            cancelled >= acts.len(),
            "{cancelled} orders cancelled, acts {acts:?}"
        );
        assert!(
            steps * 10 < naive_steps * 6,
            "plan steps: {steps} asleep between SPY events, {naive_steps} naive"
        );
    }
}

/// Quiet holders keep their assumed share stops (`Engine::quiet_stops_hit`): holders of
/// shares with no stop written, entered at different times and sizes (so their stops
/// differ), some with a TP or a watched EXIT, write the naive scan's Bus on the shock tape,
/// where the bid reaches some of their stops and not others, while staying quiet.
#[test]
fn quiet_holders_keep_their_assumed_stops_as_the_naive_scan() {
    let mut p = String::from("USING signal SPY exec SPY\n");
    for i in 0..12 {
        let at = format!("{:02}:{:02}", 9 + (30 + i * 17) / 60, (30 + i * 17) % 60);
        let tail = match i % 3 {
            0 => String::new(),
            1 => "  TP 1.01x @ ask\n".to_string(),
            _ => format!("  EXIT spot < {}\n", 400 + i),
        };
        p.push_str(&format!(
            "\nPLAN s{i} budget 0.{}R ttl 15:50\n  WHEN time >= {at}\n  DO buy {} shares @ ask\n{tail}",
            i % 5 + 1,
            10 + i * 7
        ));
    }
    let (fast, (_, steps), (_, naive_steps)) = against_naive(&shock_tape(), &p);
    let stops = fast
        .events()
        .iter()
        .filter(|e| matches!(e, Event::PlanFired { clause, .. } if clause == "STOP"))
        .count();
    assert!(
        (1..8).contains(&stops),
        "{stops} of the 8 unstopped holders stop out"
    );
    assert!(
        steps * 10 < naive_steps,
        "plan steps: {steps} quiet, {naive_steps} naive"
    );
}
