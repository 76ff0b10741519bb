//! Runtime tests on tiny hand-written tapes. Every expected fill and P&L is worked out by
//! hand in the comments from the book models:
//!
//! - shares: fair = last, bid = last - 0.01, ask = last + 0.01;
//! - options (tape with atm_iv 0.01, skew 0, rate 0): a strike 10 below spot is so deep in
//!   the money that Black-Scholes gives fair = S - K exactly; the book is 3% of fair wide
//!   around it, on a 0.05 grid at or above 3.00 (bid rounded down, ask up). E.g. fair 10.00:
//!   bid = floor(10 - 0.15) = 9.85, ask = ceil(10 + 0.15) = 10.15.

use super::*;
use crate::bus::{Bus, BusSide, Event, PlanState};
use crate::market::read_tape_bytes;

const HDR_SH: &str = r#"{"type":"header","v":1,"name":"tiny","date":"2025-04-09","open":"09:30","close":"16:00","symbols":{"SPY":{"prior_close":100.0}}}"#;
/// As [`HDR_OPT`] with 150% volatility: out-of-the-money options have a bid.
const HDR_VOL: &str = r#"{"type":"header","v":1,"name":"tiny-vol","date":"2025-04-09","open":"09:30","close":"16:00","symbols":{"SPY":{"prior_close":100.0,"strike_step":1.0}},"vol":{"SPY":{"atm_iv":1.5,"skew":0.0}},"rate":0.0}"#;
const HDR_OPT: &str = r#"{"type":"header","v":1,"name":"tiny-opt","date":"2025-04-09","open":"09:30","close":"16:00","symbols":{"SPY":{"prior_close":100.0,"strike_step":1.0}},"vol":{"SPY":{"atm_iv":0.01,"skew":0.0}},"rate":0.0}"#;

/// A tape of SPY ticks: `("09:30:01", 100.5)`; `("H 09:30:05", _)` is a headline.
fn tape(hdr: &str, ticks: &[(&str, f64)]) -> String {
    let mut s = String::from(hdr);
    s.push('\n');
    for (ts, px) in ticks {
        if let Some(t) = ts.strip_prefix("H ") {
            s.push_str(&format!(
                "{{\"type\":\"headline\",\"ts\":\"{t}.000\",\"text\":\"news\"}}\n"
            ));
        } else {
            s.push_str(&format!(
                "{{\"type\":\"tick\",\"ts\":\"{ts}.000\",\"sym\":\"SPY\",\"px\":{px:.2},\"sz\":10}}\n"
            ));
        }
    }
    s
}

/// Ticks one second apart from 09:30:00.
fn secs(pxs: &[f64]) -> Vec<(String, f64)> {
    pxs.iter()
        .enumerate()
        .map(|(i, p)| (format!("09:{:02}:{:02}", 30 + i / 60, i % 60), *p))
        .collect()
}

fn tape_s(hdr: &str, pxs: &[f64]) -> String {
    let v = secs(pxs);
    let r: Vec<(&str, f64)> = v.iter().map(|(a, b)| (a.as_str(), *b)).collect();
    tape(hdr, &r)
}

fn doc(src: &str) -> Document {
    match crate::lang::check(src, crate::lang::Mode::File) {
        Ok(d) => d,
        Err(e) => panic!(
            "{src}\n{:?}",
            e.iter().map(|d| d.one_line()).collect::<Vec<_>>()
        ),
    }
}

fn run_with(t: &str, plans: &str, r_usd: i64, mut act: impl FnMut(&mut Engine, usize)) -> Bus {
    let (h, evs) = read_tape_bytes(t.as_bytes()).expect("tape");
    let mut e = Engine::new(
        &h,
        EngineConfig::strict(Px(r_usd * 10_000)),
        Bus::new(None).keeping(),
    );
    e.arm_document(&doc(plans));
    for (i, ev) in evs.iter().enumerate() {
        act(&mut e, i);
        e.on_event(ev);
    }
    e.finish()
}

fn run(t: &str, plans: &str, r_usd: i64) -> Bus {
    run_with(t, plans, r_usd, |_, _| {})
}

/// (plan, side, qty, px, ts) of every fill.
fn fills(b: &Bus) -> Vec<(String, BusSide, u64, String, String)> {
    b.events()
        .iter()
        .filter_map(|e| match e {
            Event::Fill {
                plan,
                side,
                qty,
                px,
                ts,
                ..
            } => Some((
                plan.clone(),
                *side,
                *qty,
                px.to_string(),
                ts.to_string()[..8].to_string(),
            )),
            _ => None,
        })
        .collect()
}

fn f(
    plan: &str,
    side: BusSide,
    qty: u64,
    px: &str,
    ts: &str,
) -> (String, BusSide, u64, String, String) {
    (plan.into(), side, qty, px.into(), ts.into())
}

fn pnl(b: &Bus, plan: &str) -> String {
    Px(b.blotter().pnl(plan)).to_string()
}

fn states(b: &Bus, plan: &str) -> Vec<(PlanState, Option<String>)> {
    b.events()
        .iter()
        .filter_map(|e| match e {
            Event::PlanState {
                plan: p,
                state,
                reason,
                ..
            } if p == plan => Some((*state, reason.clone())),
            _ => None,
        })
        .collect()
}

fn count(b: &Bus, pred: impl Fn(&Event) -> bool) -> usize {
    b.events().iter().filter(|e| pred(e)).count()
}

use BusSide::{Buy, Sell};

// ------------------------------------------------------------------ WHEN, crosses, fills

#[test]
fn when_crosses_above_fires_once_and_fills_marketable_at_the_ask() {
    // spot 100.00, 100.50, 101.00 (crosses 100.70: 100.50 <= 100.70 < 101.00), 102.00, 101.50.
    let t = tape_s(HDR_SH, &[100.0, 100.5, 101.0, 102.0, 101.5]);
    let b = run(
        &t,
        "PLAN up budget 1R ttl +10m\n  WHEN spot crosses above 100.7\n  DO buy 10 shares @ ask\n",
        1000,
    );
    // Fires at 09:30:02: ask = 101.00 + 0.01 = 101.01, marketable -> fills at 101.01.
    assert_eq!(fills(&b), vec![f("up", Buy, 10, "101.01", "09:30:02")]);
    // Marked at the end at last 101.50: 10 * (101.50 - 101.01) = 4.90.
    assert_eq!(pnl(&b, "up"), "4.90");
    // MAE: at the fill tick fair = 101.00: 10 * (101.00 - 101.01) = -0.10.
    assert_eq!(b.blotter().plans["up"].mae, -1000);
    assert_eq!(b.blotter().plans["up"].fires, 1);
}

#[test]
fn crosses_needs_a_previous_known_evaluation_at_or_below() {
    // Starts above the level and stays above: no sign change, no fire.
    let t = tape_s(HDR_SH, &[101.0, 101.5, 102.0]);
    let b = run(
        &t,
        "PLAN up budget 1R ttl +10m\n  WHEN spot crosses above 100.7\n  DO buy 10 shares @ ask\n",
        1000,
    );
    assert!(fills(&b).is_empty());
    // crosses below: 100.00 -> 99.00 (sign + to -), fires at 09:30:01 at the ask 99.01.
    let t = tape_s(HDR_SH, &[100.0, 99.0, 98.0]);
    let b = run(
        &t,
        "PLAN dn budget 1R ttl +10m\n  WHEN spot crosses below 99.5\n  DO buy 10 shares @ ask\n",
        1000,
    );
    // At 98.00 the bid 97.99 is under the stop the budget assumed for shares with none
    // written (99.01 less 1%, 98.0199): `STOP` sells them (`the_assumed_share_stop_is_kept`).
    assert_eq!(
        fills(&b),
        vec![
            f("dn", Buy, 10, "99.01", "09:30:01"),
            f("dn", Sell, 10, "97.99", "09:30:02")
        ]
    );
}

#[test]
fn resting_buy_fills_only_when_the_ask_is_strictly_below_the_limit() {
    // Limit 99.50. Asks: 100.01, 99.52, 99.50 (not strictly below), 99.49 (fills at 99.50).
    let t = tape_s(HDR_SH, &[100.0, 99.51, 99.49, 99.48, 99.60]);
    let b = run(
        &t,
        "PLAN dip budget 1R ttl +10m\n  WHEN spot > 0\n  DO buy 10 shares @ 99.50\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("dip", Buy, 10, "99.50", "09:30:03")]);
    // Mark 99.60: 10 * 0.10 = 1.00.
    assert_eq!(pnl(&b, "dip"), "1.00");
    let st: Vec<PlanState> = states(&b, "dip").into_iter().map(|s| s.0).collect();
    assert_eq!(
        st,
        vec![
            PlanState::Armed,
            PlanState::Fired,
            PlanState::Resting,
            PlanState::Filled,
            PlanState::Done
        ]
    );
}

// ------------------------------------------------------------------ UNKNOWN

#[test]
fn unknown_is_not_false_not_of_unknown_does_not_fire() {
    // velocity(10s) is UNKNOWN until 10 s of history (09:30:10). NOT U = U: nothing fires
    // before; at 09:30:10 velocity = 0 (flat), NOT (0 > 100) = T -> buy at 100.01.
    let pxs = [100.0; 13];
    let t = tape_s(HDR_SH, &pxs);
    let b = run(
        &t,
        "PLAN v budget 1R ttl +10m\n  WHEN NOT velocity(10s) > 100\n  DO buy 10 shares @ ask\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("v", Buy, 10, "100.01", "09:30:10")]);
}

#[test]
fn kleene_and_or() {
    // spot > 100 is T from 09:30:01; velocity(60s) stays UNKNOWN on a 5 s tape.
    let t = tape_s(HDR_SH, &[100.0, 100.5, 100.6, 100.7, 100.8]);
    // T OR U = T: fires at 09:30:01 at 100.51.
    let b = run(
        &t,
        "PLAN o budget 1R ttl +10m\n  WHEN spot > 100 OR velocity(60s) > 1\n  DO buy 10 shares @ ask\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("o", Buy, 10, "100.51", "09:30:01")]);
    // T AND U = U: never fires.
    let b = run(
        &t,
        "PLAN a budget 1R ttl +10m\n  WHEN spot > 100 AND velocity(60s) > -100\n  DO buy 10 shares @ ask\n",
        1000,
    );
    assert!(fills(&b).is_empty());
    // F AND U = F, and NOT F = T: fires on the first tick (spot 100 is not > 100).
    let b = run(
        &t,
        "PLAN n budget 1R ttl +10m\n  WHEN NOT (spot > 100 AND velocity(60s) > 1)\n  DO buy 10 shares @ ask\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("n", Buy, 10, "100.01", "09:30:00")]);
}

#[test]
fn a_predicate_on_a_symbol_the_tape_lacks_de_arms_with_a_reason() {
    let t = tape_s(HDR_SH, &[100.0, 101.0]);
    let b = run(
        &t,
        "PLAN q budget 1R ttl +10m\n  WHEN QQQ.spot > 1\n  DO buy 10 shares @ ask\n\nPLAN u budget 1R ttl +10m\n  USING signal SPX exec SPY\n  WHEN spot > 1\n  DO buy 10 shares @ ask\n",
        1000,
    );
    assert!(fills(&b).is_empty());
    let q = states(&b, "q");
    assert_eq!(q[0].0, PlanState::DeArmed);
    assert!(
        q[0].1.as_deref().unwrap().contains("UNKNOWN symbol QQQ"),
        "{q:?}"
    );
    let u = states(&b, "u");
    assert!(
        u[0].1.as_deref().unwrap().contains("UNKNOWN symbol SPX"),
        "{u:?}"
    );
    // An option ticket on a tape without a chain de-arms too.
    let b = run(
        &t,
        "PLAN o budget 1R ttl +10m\n  WHEN spot > 1\n  DO buy 1 ATM C @ fair\n",
        1000,
    );
    assert!(
        states(&b, "o")[0]
            .1
            .as_deref()
            .unwrap()
            .contains("no option chain")
    );
    // A strike off the chain's grid can never be quoted: de-armed at arming, naming the grid
    // and the strikes either side (it armed and waited all day on `no quote`).
    let t = tape_s(HDR_OPT, &[100.0, 101.0]);
    let b = run(
        &t,
        "PLAN g budget 1R ttl +10m\n  WHEN spot > 1\n  DO buy 1 99.5 C @ fair\n\nPLAN k budget 1R ttl +10m\n  WHEN spot > 1\n  DO buy 1 99 C @ ask\n",
        1000,
    );
    let g = states(&b, "g");
    assert_eq!(g[0].0, PlanState::DeArmed);
    assert_eq!(
        g[0].1.as_deref(),
        Some(
            "DO#1: strike 99.50 is not on SPY's strike grid (every 1.00): no quote can price it; the nearest strikes are 99.00 and 100.00"
        ),
        "{g:?}"
    );
    assert_ne!(states(&b, "k")[0].0, PlanState::DeArmed, "on the grid");
    assert_eq!(fills(&b).len(), 1);
}

/// `Ndte` is N calendar days on; one that lands on a weekend names no contract: de-armed at
/// arming, naming the weekdays either side (it bought and marked a Saturday contract before
/// 2026-12-06). The tape's date, 2025-04-09, is a Wednesday.
#[test]
fn an_ndte_expiry_on_a_weekend_is_de_armed_naming_the_weekdays() {
    let t = tape_s(HDR_OPT, &[100.0, 101.0]);
    let plan = |dte: &str| {
        format!(
            "PLAN e budget 2R ttl +10m\n  USING signal SPY exec SPY {dte}\n  WHEN spot > 0\n  DO buy 1 ATM C @ ask\n"
        )
    };
    for (dte, why) in [
        (
            "3dte",
            "expiry 3dte is Saturday 2025-04-12: no option expires on a weekend; write 2dte (the Friday before) or 5dte (the Monday after)",
        ),
        (
            "4dte",
            "expiry 4dte is Sunday 2025-04-13: no option expires on a weekend; write 2dte (the Friday before) or 5dte (the Monday after)",
        ),
    ] {
        let b = run(&t, &plan(dte), 1000);
        let e = states(&b, "e");
        assert_eq!((e[0].0, e[0].1.as_deref()), (PlanState::DeArmed, Some(why)));
        assert!(fills(&b).is_empty());
    }
    for dte in ["2dte", "5dte"] {
        let b = run(&t, &plan(dte), 1000);
        assert_eq!(fills(&b).len(), 1, "{dte}");
    }
}

// ------------------------------------------------------------------ comparisons, held, time

#[test]
fn held_needs_the_comparison_true_continuously() {
    // > 100 at 0,1 s; 99.90 at 2 s resets; true again from 3 s; held 3 s -> fires at 6 s.
    let t = tape_s(
        HDR_SH,
        &[100.5, 100.5, 99.9, 100.2, 100.2, 100.2, 100.2, 100.2],
    );
    let b = run(
        &t,
        "PLAN h budget 1R ttl +10m\n  WHEN spot > 100 held 3s\n  DO buy 10 shares @ ask\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("h", Buy, 10, "100.21", "09:30:06")]);
}

#[test]
fn comparisons_against_series_and_clock() {
    // `hod` in a trigger is the high *before* the latest print. First tick: no prior high,
    // UNKNOWN, nothing fires. 99 < 100. 100.5 >= 100 (a new high) -> fires at 09:30:02 at
    // the ask 100.51.
    let t = tape_s(HDR_SH, &[100.0, 99.0, 100.5]);
    let b = run(
        &t,
        "PLAN hi budget 1R ttl +10m\n  WHEN spot >= hod\n  DO buy 10 shares @ ask\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("hi", Buy, 10, "100.51", "09:30:02")]);
    // `spot crosses above hod` is a breakout: 100, 99 (s - hod_before = -1), 100.5 (+0.5):
    // the sign goes from <= 0 to > 0 at 09:30:02.
    let b = run(
        &t,
        "PLAN br budget 1R ttl +10m\n  WHEN spot crosses above hod\n  DO buy 10 shares @ ask\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("br", Buy, 10, "100.51", "09:30:02")]);
    // time >= 09:31 fires on the 09:31:00 tick (the 61st second) at its ask.
    let mut pxs = vec![100.0; 60];
    pxs.push(100.3);
    let t = tape_s(HDR_SH, &pxs);
    let b = run(
        &t,
        "PLAN tm budget 1R ttl 10:00\n  WHEN time >= 09:31\n  DO buy 10 shares @ ask\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("tm", Buy, 10, "100.31", "09:31:00")]);
    // spot < prior-close (100): 99.99 at 1 s fires, ask 100.00.
    let t = tape_s(HDR_SH, &[100.0, 99.99]);
    let b = run(
        &t,
        "PLAN pc budget 1R ttl +10m\n  WHEN spot < prior-close\n  DO buy 10 shares @ ask\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("pc", Buy, 10, "100.00", "09:30:01")]);
}

#[test]
fn t_minus_and_phases() {
    // Close 16:00. T-5 is true from 15:55:00; ticks at 15:54:59 and 15:55:00.
    let t = tape(HDR_SH, &[("15:54:59", 100.0), ("15:55:00", 100.2)]);
    let b = run(
        &t,
        "PLAN late budget 1R ttl 16:00\n  WHEN T-5\n  DO buy 10 shares @ ask\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("late", Buy, 10, "100.21", "15:55:00")]);
    // phase close from 15:45:00.
    let t = tape(HDR_SH, &[("15:44:59", 100.0), ("15:45:00", 100.3)]);
    let b = run(
        &t,
        "PLAN pcl budget 1R ttl 16:00\n  WHEN phase close\n  DO buy 10 shares @ ask\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("pcl", Buy, 10, "100.31", "15:45:00")]);
    // phase open is 09:30:00 to 09:44:59.999: NOT phase open fires at 09:45:00.
    let t = tape(HDR_SH, &[("09:44:59", 100.0), ("09:45:00", 100.4)]);
    let b = run(
        &t,
        "PLAN po budget 1R ttl 16:00\n  WHEN NOT phase open\n  DO buy 10 shares @ ask\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("po", Buy, 10, "100.41", "09:45:00")]);
}

#[test]
fn percentiles_are_unknown_before_30_samples_then_past_only() {
    // Flat 100.00 for 40 s with a spike to 101.00 at 09:30:20, then 100.50 at 09:30:40.
    // At 09:30:20 fewer than 30 one-second samples exist: p90 UNKNOWN, no fire on the spike.
    // At 09:30:40 samples 0..39 = 39 x 100.00 and 1 x 101.00; p90 by linear interpolation
    // h = 39 * 0.9 = 35.1 -> x[35] = x[36] = 100.00. 100.50 > 100.00 -> fire at 100.51.
    let mut pxs = vec![100.0; 40];
    pxs[20] = 101.0;
    pxs.push(100.5);
    let t = tape_s(HDR_SH, &pxs);
    let b = run(
        &t,
        "PLAN p budget 1R ttl +10m\n  WHEN spot > p90\n  DO buy 10 shares @ ask\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("p", Buy, 10, "100.51", "09:30:40")]);
}

// ------------------------------------------------------------------ events

#[test]
fn plan_events_within_and_arm_chains() {
    // `a` fires at 09:30:01 (100.5 > 100.4) and fills at 100.51; ARM b: b arms on a's fill and
    // (being later in order) is evaluated on the same tick: spot > 100 -> fills at 100.51.
    // `c` is evaluated before `a`, so it sees a's fire on the next event (09:30:02): within 1s.
    let t = tape_s(HDR_SH, &[100.0, 100.5, 100.6, 100.7]);
    let src = "PLAN c budget 1R ttl +10m\n  WHEN plan(a).fired within 1s\n  DO buy 1 shares @ ask\n\nPLAN a budget 1R ttl +10m\n  WHEN spot > 100.4\n  DO buy 10 shares @ ask\n  ARM b\n\nPLAN b budget 1R ttl +10m\n  WHEN spot > 100\n  DO buy 5 shares @ ask\n\nPLAN d budget 1R ttl +10m\n  WHEN plan(a).filled\n  DO buy 2 shares @ ask\n";
    let b = run(&t, src, 1000);
    assert_eq!(
        fills(&b),
        vec![
            f("a", Buy, 10, "100.51", "09:30:01"),
            f("b", Buy, 5, "100.51", "09:30:01"),
            f("d", Buy, 2, "100.51", "09:30:01"),
            f("c", Buy, 1, "100.61", "09:30:02"),
        ]
    );
    assert_eq!(states(&b, "b")[0].0, PlanState::Dormant);
    assert_eq!(
        states(&b, "b")[1],
        (PlanState::Armed, Some("ARM from a".into()))
    );
}

#[test]
fn headline_within() {
    // A headline at 09:30:02 (on its own line, after the tick of that second): `headline
    // within 1s` is T on the headline event itself -> buy at the last ask 100.21.
    let t = tape(
        HDR_SH,
        &[
            ("09:30:00", 100.0),
            ("09:30:01", 100.1),
            ("09:30:02", 100.2),
            ("H 09:30:02", 0.0),
            ("09:30:05", 100.3),
        ],
    );
    let b = run(
        &t,
        "PLAN n budget 1R ttl +10m\n  WHEN headline within 1s\n  DO buy 10 shares @ ask\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("n", Buy, 10, "100.21", "09:30:02")]);
    assert_eq!(count(&b, |e| matches!(e, Event::Headline { .. })), 1);
}

// ------------------------------------------------------------------ TP, EXIT, RELOAD, INVALIDATE

#[test]
fn tp_mult_frac_sells_a_fraction_when_value_at_fair_reaches_mult_cost() {
    // Buy 10 at 100.01 (cost 1000.10). TP 1.02x: value 10*S >= 1020.102 -> S >= 102.0102.
    // At S = 102.00 no; at 102.02 yes: sell floor(10*0.5) = 5 @ bid 102.01 (marketable).
    let t = tape_s(HDR_SH, &[100.0, 101.0, 102.0, 102.02, 102.5]);
    let b = run(
        &t,
        "PLAN tp budget 1R ttl +10m\n  WHEN spot > 0\n  DO buy 10 shares @ ask\n  TP 1.02x frac 0.5 @ bid\n",
        1000,
    );
    assert_eq!(
        fills(&b),
        vec![
            f("tp", Buy, 10, "100.01", "09:30:00"),
            f("tp", Sell, 5, "102.01", "09:30:03")
        ]
    );
    // Realised 5 * 2.00 = 10.00; open 5 * (102.50 - 100.01) = 12.45; total 22.45.
    assert_eq!(b.blotter().realised("tp"), 100_000);
    assert_eq!(pnl(&b, "tp"), "22.45");
}

#[test]
fn exit_trigger_without_price_is_marketable() {
    // Buy 10 @ 100.01; EXIT spot < 99 at 98.90: sell at the bid 98.89.
    // P&L = 10 * (98.89 - 100.01) = -11.20. MAE: -0.10, -5.10, -11.10 (before the exit, at
    // fair 98.90), then -11.20 realised -> -11.20.
    let t = tape_s(HDR_SH, &[100.0, 99.5, 98.9, 99.5]);
    let b = run(
        &t,
        "PLAN x budget 1R ttl +10m\n  WHEN spot > 0\n  DO buy 10 shares @ ask\n  EXIT spot < 99\n",
        1000,
    );
    assert_eq!(
        fills(&b),
        vec![
            f("x", Buy, 10, "100.01", "09:30:00"),
            f("x", Sell, 10, "98.89", "09:30:02")
        ]
    );
    assert_eq!(pnl(&b, "x"), "-11.20");
    assert_eq!(b.blotter().plans["x"].mae, -112_000);
}

#[test]
fn exit_at_a_price_with_floor_modifier() {
    // Buy 10 @ 100.01. EXIT spot > 101 @ bid-5 floor 101.50: at 101.20 the limit is
    // max(96.19, 101.50) = 101.50 (bid 101.19: rests); at 101.60 the bid 101.59 > 101.50
    // fills at 101.50. P&L = 10 * 1.49 = 14.90.
    let t = tape_s(HDR_SH, &[100.0, 101.2, 101.6]);
    let b = run(
        &t,
        "PLAN x budget 1R ttl +10m\n  WHEN spot > 0\n  DO buy 10 shares @ ask\n  EXIT spot > 101 @ bid-5 floor 101.50\n",
        1000,
    );
    assert_eq!(
        fills(&b),
        vec![
            f("x", Buy, 10, "100.01", "09:30:00"),
            f("x", Sell, 10, "101.50", "09:30:02")
        ]
    );
    assert_eq!(pnl(&b, "x"), "14.90");
}

#[test]
fn reload_ladders_and_fills_avg_px() {
    // DO 10 @ 100.01; RELOAD at spot < 99: 10 @ 98.91. avg = (1000.10 + 989.10) / 20 = 99.46.
    // EXIT spot > fills.avg_px: at 99.60 -> sell 20 @ 99.59: 1991.80 - 1989.20 = 2.60.
    let t = tape_s(HDR_SH, &[100.0, 98.9, 99.3, 99.6]);
    let b = run(
        &t,
        "PLAN l budget 1R ttl +10m\n  WHEN spot > 0\n  DO buy 10 shares @ ask\n  RELOAD WHEN spot < 99 buy 10 shares @ ask\n  EXIT spot > fills.avg_px\n",
        1000,
    );
    assert_eq!(
        fills(&b),
        vec![
            f("l", Buy, 10, "100.01", "09:30:00"),
            f("l", Buy, 10, "98.91", "09:30:01"),
            f("l", Sell, 20, "99.59", "09:30:03"),
        ]
    );
    assert_eq!(pnl(&b, "l"), "2.60");
    assert_eq!(b.blotter().plans["l"].fires, 2);
}

#[test]
fn invalidate_halt_flattens_and_halt_ride_keeps_inventory() {
    // Buy 10 @ 100.01; INVALIDATE spot < 99.5 at 99.40: halt -> flatten at bid 99.39:
    // 10 * (99.39 - 100.01) = -6.20; the RELOAD never fires after it.
    let t = tape_s(HDR_SH, &[100.0, 99.4, 98.0, 101.0]);
    let src = "PLAN i budget 1R ttl +10m\n  WHEN spot > 0\n  DO buy 10 shares @ ask\n  RELOAD WHEN spot < 98.5 buy 10 shares @ ask\n  INVALIDATE spot < 99.5 -> halt\n";
    let b = run(&t, src, 1000);
    assert_eq!(
        fills(&b),
        vec![
            f("i", Buy, 10, "100.01", "09:30:00"),
            f("i", Sell, 10, "99.39", "09:30:01")
        ]
    );
    assert_eq!(pnl(&b, "i"), "-6.20");
    // -> halt, ride: no flatten, no reload; TP 1.005x still sells at S >= 100.51 (101.00,
    // bid 100.99): 10 * (100.99 - 100.01) = 9.80. (A ride's level is no stop: the EXIT
    // under the 98.00 tick is the one written, else the engine's assumed stop would close
    // the shares there.)
    let src = "PLAN r budget 1R ttl +10m\n  WHEN spot > 0\n  DO buy 10 shares @ ask\n  RELOAD WHEN spot < 98.5 buy 10 shares @ ask\n  TP 1.005x @ bid\n  EXIT spot < 97\n  INVALIDATE spot < 99.5 -> halt, ride\n";
    let b = run(&t, src, 1000);
    assert_eq!(
        fills(&b),
        vec![
            f("r", Buy, 10, "100.01", "09:30:00"),
            f("r", Sell, 10, "100.99", "09:30:03")
        ]
    );
    assert_eq!(pnl(&b, "r"), "9.80");
    assert!(states(&b, "r").iter().any(|s| s.0 == PlanState::Halted));
}

#[test]
fn cancel_if_clause_and_line_level_cancel_if() {
    // Resting buy at 99.00 never reached; CANCEL-IF spot > 101 at 101.50 pulls it.
    let t = tape_s(HDR_SH, &[100.0, 100.5, 101.5, 98.0]);
    let b = run(
        &t,
        "PLAN c budget 1R ttl +10m\n  WHEN spot > 0\n  DO buy 10 shares @ 99\n  CANCEL-IF spot > 101\n",
        1000,
    );
    assert!(
        fills(&b).is_empty(),
        "98.00 would have filled it had it not been pulled"
    );
    assert_eq!(
        count(
            &b,
            |e| matches!(e, Event::OrderCancelled { reason, .. } if reason == "cancel-if")
        ),
        1
    );
    // The Blotter's order line says when it left the book: the cancel's time.
    let pulled = b
        .events()
        .iter()
        .find_map(|e| match e {
            Event::OrderCancelled { ts, .. } => Some(*ts),
            _ => None,
        })
        .expect("a cancel");
    let o = &b.blotter().orders[0];
    assert_eq!(
        (o.state, o.closed),
        (crate::bus::blotter::OrderState::Cancelled, Some(pulled))
    );
    assert!(o.ts < pulled, "placed before it was pulled: {o:?}");
    assert_eq!(states(&b, "c").last().unwrap().0, PlanState::Done);
    // The same as a ticket modifier.
    let b = run(
        &t,
        "PLAN m budget 1R ttl +10m\n  WHEN spot > 0\n  DO buy 10 shares @ 99 cancel-if spot > 101\n",
        1000,
    );
    assert!(fills(&b).is_empty());
    assert_eq!(
        count(
            &b,
            |e| matches!(e, Event::OrderCancelled { reason, .. } if reason == "cancel-if")
        ),
        1
    );
}

// ------------------------------------------------------------------ modifiers

#[test]
fn peg_follows_the_anchor_fix_does_not() {
    // bid-0.10: at 100.00 -> 99.89; 100.50 -> bid 100.49 -> 100.39 (re-priced); at 100.20
    // the ask 100.21 is below the limit resting at 100.39: it fills there, before the peg
    // would move it down to 100.09 (RUNTIME.md §4: a resting buy at L fills at L on the first
    // tick whose ask is below L). Before 2026-12-06 the peg moved first, away from every ask
    // that crossed it, and a pegged order under the market never filled.
    let t = tape_s(HDR_SH, &[100.0, 100.5, 100.2, 99.8]);
    let b = run(
        &t,
        "PLAN p budget 1R ttl +10m\n  WHEN spot > 0\n  DO buy 10 shares @ bid-0.10 peg\n",
        1000,
    );
    let re: Vec<String> = b
        .events()
        .iter()
        .filter_map(|e| match e {
            Event::OrderRepriced { limit, reason, .. } if reason == "peg" => {
                Some(limit.to_string())
            }
            _ => None,
        })
        .collect();
    assert_eq!(re, vec!["100.39"]);
    assert_eq!(fills(&b), vec![f("p", Buy, 10, "100.39", "09:30:02")]);
    // A peg that only rises with the market (bid-0.10 on a climbing tape) follows it and
    // never fills: the ask is never below a limit under the bid.
    let up = tape_s(HDR_SH, &[100.0, 100.5, 101.0, 101.5]);
    let b = run(
        &up,
        "PLAN p budget 1R ttl +10m\n  WHEN spot > 0\n  DO buy 10 shares @ bid-0.10 peg\n",
        1000,
    );
    assert_eq!(count(&b, |e| matches!(e, Event::OrderRepriced { .. })), 3);
    assert!(fills(&b).is_empty());
    // fix: stays at 99.89; at 99.80 the ask 99.81 < 99.89 fills at 99.89.
    let b = run(
        &t,
        "PLAN x budget 1R ttl +10m\n  WHEN spot > 0\n  DO buy 10 shares @ bid-0.10 fix\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("x", Buy, 10, "99.89", "09:30:03")]);
}

#[test]
fn esc_reprices_on_a_timer_in_order() {
    // bid-0.10 = 99.89 at 0 s; esc bid 1s -> 99.99 at 1 s (rests: ask 100.01);
    // esc ask 1s -> 100.01 at 2 s: marketable, fills at the ask 100.01.
    let t = tape_s(HDR_SH, &[100.0, 100.0, 100.0, 100.0]);
    let b = run(
        &t,
        "PLAN e budget 1R ttl +10m\n  WHEN spot > 0\n  DO buy 10 shares @ bid-0.10 esc bid 1s esc ask 1s\n",
        1000,
    );
    let re: Vec<(String, String)> = b
        .events()
        .iter()
        .filter_map(|e| match e {
            Event::OrderRepriced { limit, reason, .. } => {
                Some((limit.to_string(), reason.to_string()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        re,
        vec![
            ("99.99".into(), "esc#1".into()),
            ("100.01".into(), "esc#2".into())
        ]
    );
    assert_eq!(fills(&b), vec![f("e", Buy, 10, "100.01", "09:30:02")]);
}

#[test]
fn cap_bounds_a_buy() {
    // ask 100.81 capped at 100.50: rests; at 100.45 the ask 100.46 < 100.50 fills at 100.50.
    let t = tape_s(HDR_SH, &[100.8, 100.45, 100.6]);
    let b = run(
        &t,
        "PLAN c budget 1R ttl +10m\n  WHEN spot > 0\n  DO buy 10 shares @ ask cap 100.50\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("c", Buy, 10, "100.50", "09:30:01")]);
    // Mark 100.60: 10 * 0.10 = 1.00.
    assert_eq!(pnl(&b, "c"), "1.00");
}

// ------------------------------------------------------------------ options

#[test]
fn option_buy_settles_at_intrinsic_at_the_close() {
    // S = 100: 90 C fair 10.00, ask 10.15 -> buy 1 at 10.15 (worst case $1015 <= 2R = $2000).
    // The tape ends at S = 103 (the end of the tape is the close): 0dte settles at intrinsic
    // 13.00. P&L = (13.00 - 10.15) * 100 = 285.00 = 0.285R.
    let t = tape_s(HDR_OPT, &[100.0, 101.0, 103.0]);
    let b = run(
        &t,
        "PLAN o budget 2R ttl +10m\n  WHEN spot > 0\n  DO buy 1 90 C @ ask\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("o", Buy, 1, "10.15", "09:30:00")]);
    assert_eq!(
        count(
            &b,
            |e| matches!(e, Event::Settlement { px, .. } if px.to_string() == "13.00")
        ),
        1
    );
    assert_eq!(pnl(&b, "o"), "285.00");
    assert_eq!(
        b.blotter().in_r(b.blotter().pnl("o")).unwrap().to_string(),
        "0.285"
    );
    // Relative strike -10 from ATM 100 is the same 90 C.
    let b = run(
        &t,
        "PLAN r budget 2R ttl +10m\n  WHEN spot > 0\n  DO buy 1 -10 C @ ask\n",
        1000,
    );
    assert_eq!(pnl(&b, "r"), "285.00");
    // 1dte does not settle: it is marked at fair (S - K = 13.00 at the end, T > 0 but deep ITM).
    let b = run(
        &t,
        "PLAN d budget 2R ttl +10m\n  USING signal SPY exec SPY 1dte\n  WHEN spot > 0\n  DO buy 1 90 C @ ask\n",
        1000,
    );
    assert_eq!(count(&b, |e| matches!(e, Event::Settlement { .. })), 0);
    assert_eq!(
        count(
            &b,
            |e| matches!(e, Event::Mark { px, .. } if px.to_string() == "13.00")
        ),
        1
    );
}

#[test]
fn sell_is_floored_at_intrinsic_and_also_legs() {
    // DO buy 1 90 C @ ask = 10.15. ALSO sell 1 95 C @ bid: fair 5.00, book 4.90/5.10; the
    // bid 4.90 is below intrinsic 5.00, so the limit is floored to 5.00 and rests.
    // At S = 100.50: 95 C fair 5.50, bid floor(5.4175, 0.05) = 5.40 > 5.00 -> fills at 5.00.
    // Settle at S = 100.50: long (10.50 - 10.15) * 100 = 35; short (5.00 - 5.50) * 100 = -50.
    let t = tape_s(HDR_OPT, &[100.0, 100.5]);
    let b = run(
        &t,
        "PLAN s budget 2R ttl +10m\n  WHEN spot > 0\n  DO buy 1 90 C @ ask\n  ALSO sell 1 95 C @ bid\n",
        1000,
    );
    assert_eq!(
        fills(&b),
        vec![
            f("s", Buy, 1, "10.15", "09:30:00"),
            f("s", Sell, 1, "5.00", "09:30:01")
        ]
    );
    assert_eq!(pnl(&b, "s"), "-15.00");
    // EXIT @ 0.05 is floored at intrinsic too: hold 90 C from 10.15; EXIT at S = 101
    // (intrinsic 11.00, bid floor(10.835) = 10.80): rests at 11.00; S = 101.50: bid
    // floor(11.3275) = 11.30 > 11.00 -> fills at 11.00: (11.00 - 10.15) * 100 = 85.00.
    let t = tape_s(HDR_OPT, &[100.0, 101.0, 101.5]);
    let b = run(
        &t,
        "PLAN e budget 2R ttl +10m\n  WHEN spot > 0\n  DO buy 1 90 C @ ask\n  EXIT spot > 100.5 @ 0.05\n",
        1000,
    );
    assert_eq!(
        fills(&b),
        vec![
            f("e", Buy, 1, "10.15", "09:30:00"),
            f("e", Sell, 1, "11.00", "09:30:02")
        ]
    );
    assert_eq!(pnl(&b, "e"), "85.00");
}

#[test]
fn leg_quote_series_and_value_anchors() {
    // WHEN ask < 10.20 on the 90 C: at S = 100 ask 10.15 -> T. DO buy @ fair-0.05 = 9.95:
    // rests (ask 10.15). At S = 99.5 fair 9.50 (book 9.35/9.65: ask 9.65 < 9.95) -> 9.95.
    // TP 1.1x @ basis+10%: value at fair >= 1.1 * 995 = 1094.5 -> S >= 100.945; at S = 101
    // place a sell at 9.95 * 1.10 = 10.945 -> 10.95 (sell rounds up), floored at
    // intrinsic 11.00 -> 11.00; bid floor(10.835) = 10.80 rests; S = 101.6: bid
    // floor(11.6 - 0.174 = 11.426) = 11.40 > 11.00 -> fills at 11.00: (11.00 - 9.95) * 100 = 105.
    let t = tape_s(HDR_OPT, &[100.0, 99.5, 101.0, 101.6]);
    let b = run(
        &t,
        "PLAN l budget 2R ttl +10m\n  WHEN ask < 10.20\n  DO buy 1 90 C @ fair-0.05\n  TP 1.1x @ basis+10%\n",
        1000,
    );
    assert_eq!(
        fills(&b),
        vec![
            f("l", Buy, 1, "9.95", "09:30:01"),
            f("l", Sell, 1, "11.00", "09:30:03")
        ]
    );
    assert_eq!(pnl(&b, "l"), "105.00");
}

// ------------------------------------------------------------------ risk

#[test]
fn risk_clamps_and_vetoes_option_premium() {
    // 5 x 90 C at 10.15 = $5075 at risk; budget 2R = $2000: qty = floor(5 * 2000 / 5075) = 1.
    let t = tape_s(HDR_OPT, &[100.0, 100.0]);
    let b = run(
        &t,
        "PLAN c budget 2R ttl +10m\n  WHEN spot > 0\n  DO buy 5 90 C @ ask\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("c", Buy, 1, "10.15", "09:30:00")]);
    assert_eq!(
        count(&b, |e| matches!(
            e,
            Event::Clamp {
                from_qty: 5,
                to_qty: 1,
                ..
            }
        )),
        1
    );
    // budget 0.5R = $500 < one contract ($1015): veto.
    let b = run(
        &t,
        "PLAN v budget 0.5R ttl +10m\n  WHEN spot > 0\n  DO buy 1 90 C @ ask\n",
        1000,
    );
    assert!(fills(&b).is_empty());
    assert_eq!(
        count(
            &b,
            |e| matches!(e, Event::Veto { budget, .. } if budget == "plan")
        ),
        1
    );
}

#[test]
fn risk_for_shares_uses_the_stop_distance() {
    // EXIT spot < 99: stop distance 100.01 - 99 = 1.01 per share; 100 shares = $101 > budget
    // 0.05R = $50: qty = floor(100 * 50 / 101) = 49 (49 * 1.01 = 49.49 <= 50).
    let t = tape_s(HDR_SH, &[100.0, 100.0]);
    let b = run(
        &t,
        "PLAN s budget 0.05R ttl +10m\n  WHEN spot > 0\n  DO buy 100 shares @ ask\n  EXIT spot < 99\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("s", Buy, 49, "100.01", "09:30:00")]);
    // No stop written: 1% of the limit (1.0001 per share): 100 shares = $100.01 > $50:
    // qty = floor(100 * 50 / 100.01) = 49.
    let b = run(
        &t,
        "PLAN d budget 0.05R ttl +10m\n  WHEN spot > 0\n  DO buy 100 shares @ ask\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("d", Buy, 49, "100.01", "09:30:00")]);
}

/// The stop the risk check assumes for shares with none written is kept: a 0.5R plan of
/// shares with only a clock EXIT lost 0.85R on the shock tape (its worst point 1.7R).
///
/// Worked: budget 0.05R = $50; 1% of the 100.01 limit is 1.0001 a share, so 49 shares
/// (49 × 1.0001 = 49.0049 ≤ 50) at 100.01. Their stop is 100.01 − 1.0001 = 99.0099. The
/// bid is spot − 0.01: 99.49 and 99.01 stand above it; at spot 98.90 the bid 98.89 is under
/// it: `STOP`, sold at 98.89, a loss of 49 × 1.12 = $54.88 (the $50 budget and the gap).
/// A stop the author wrote is theirs: the engine adds none.
#[test]
fn the_assumed_share_stop_is_kept() {
    let t = tape_s(HDR_SH, &[100.0, 99.5, 99.02, 98.9, 100.0]);
    let b = run(
        &t,
        "PLAN d budget 0.05R ttl +10m\n  WHEN spot > 0\n  DO buy 100 shares @ ask\n",
        1000,
    );
    assert_eq!(
        fills(&b),
        vec![
            f("d", Buy, 49, "100.01", "09:30:00"),
            f("d", Sell, 49, "98.89", "09:30:03")
        ]
    );
    assert_eq!(pnl(&b, "d"), "-54.88");
    assert_eq!(
        count(&b, |e| matches!(
            e,
            Event::PlanFired { clause, ts, .. } if clause == "STOP" && ts.to_string() == "09:30:03.000"
        )),
        1
    );
    // Stopped out, it enters no more (the WHEN stays true).
    assert_eq!(
        count(&b, |e| matches!(e, Event::OrderPlaced { .. })),
        2,
        "the entry and the STOP"
    );
    // A written stop below: sized on it (1.01 + 4 = 5.01 a share: 9 shares), kept by the
    // plan's own EXIT, never by the engine.
    let b = run(
        &t,
        "PLAN w budget 0.05R ttl +10m\n  WHEN spot > 0\n  DO buy 100 shares @ ask\n  EXIT spot < 95\n",
        1000,
    );
    assert_eq!(fills(&b), vec![f("w", Buy, 9, "100.01", "09:30:00")]);
    assert_eq!(
        count(
            &b,
            |e| matches!(e, Event::PlanFired { clause, .. } if clause == "STOP")
        ),
        0
    );
}

/// A level is a stop only where it alone closes the inventory: an EXIT's whole trigger or
/// an alternative of its OR, or a flattening INVALIDATE's. Under an AND (it holds at the
/// level only when the rest does) or in a `-> halt, ride` (which keeps the shares) it sizes
/// nothing: the plan is sized on the assumed 1% stop, which the engine then keeps. Before,
/// any such level counted: 9 shares on a stop at 95 that never closed them.
#[test]
fn a_level_sizes_shares_only_where_it_alone_closes_them() {
    let t = tape_s(HDR_SH, &[100.0, 99.5, 99.02, 98.9, 100.0]);
    let sized = |clause: &str| {
        let b = run(
            &t,
            &format!(
                "PLAN d budget 0.05R ttl +10m\n  WHEN spot > 0\n  DO buy 100 shares @ ask\n  {clause}\n"
            ),
            1000,
        );
        let bought = fills(&b)
            .into_iter()
            .find(|x| x.1 == Buy)
            .map(|x| x.2)
            .unwrap_or(0);
        let stop = count(
            &b,
            |e| matches!(e, Event::PlanFired { clause, .. } if clause == "STOP"),
        );
        (bought, stop)
    };
    // Not a stop: sized on the assumed one (49, as with no stop written), and it is kept.
    assert_eq!(
        sized("INVALIDATE time >= 10:00 AND spot < 95 -> halt, ride"),
        (49, 1)
    );
    assert_eq!(sized("INVALIDATE spot < 95 -> halt, ride"), (49, 1));
    assert_eq!(sized("EXIT spot < 95 AND T-5"), (49, 1));
    // (true at once after the fill: it exits before any stop.)
    assert_eq!(sized("EXIT NOT spot < 95"), (49, 0));
    // A stop: sized on 95 (9 shares), the author's, and the engine adds none.
    assert_eq!(sized("EXIT spot < 95 OR T-5"), (9, 0));
    assert_eq!(sized("INVALIDATE spot < 95"), (9, 0));
    assert_eq!(sized("INVALIDATE spot crosses below 95 -> halt"), (9, 0));
}

/// An escalation raises the premium at risk after the fire was checked: the re-price is
/// checked again. 3 × 90 C at 9.00 is $2,700 of a $3,000 budget; escalated to the ask
/// (10.15) it would be $3,045, so the order is scaled to the 2 that fit and fills 2. On a
/// $1,000 budget, 1 at 9.00 fits and 1 at 10.15 does not: the re-price is vetoed and the
/// order cancelled. Before, both escalated whole past their budget.
#[test]
fn an_escalation_past_the_budget_is_scaled_or_vetoed() {
    let t = tape_s(HDR_OPT, &[100.0, 100.0, 100.0, 100.0]);
    let b = run(
        &t,
        "PLAN e budget 0.03R ttl +10m\n  WHEN spot > 0\n  DO buy 3 90 C @ 9.00 esc ask 1s\n",
        100_000,
    );
    assert_eq!(fills(&b), vec![f("e", Buy, 2, "10.15", "09:30:01")]);
    let clamp: Vec<String> = b
        .events()
        .iter()
        .filter_map(|e| match e {
            Event::Clamp {
                from_qty: 3,
                to_qty: 2,
                order: Some(1),
                reason,
                ..
            } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        clamp,
        vec![
            "re-price esc#1 to 10.15: worst case $3045.00 exceeds the $3000.00 left; quantity scaled to 2"
                .to_string()
        ]
    );
    let b = run(
        &t,
        "PLAN v budget 0.01R ttl +10m\n  WHEN spot > 0\n  DO buy 1 90 C @ 9.00 esc ask 1s\n",
        100_000,
    );
    assert!(fills(&b).is_empty(), "{:?}", fills(&b));
    assert_eq!(
        count(
            &b,
            |e| matches!(e, Event::Veto { order: Some(1), reason, .. } if reason.starts_with("re-price esc#1 to 10.15: worst case $1015.00 exceeds the $1000.00 left"))
        ),
        1
    );
    assert_eq!(
        count(
            &b,
            |e| matches!(e, Event::OrderCancelled { order: 1, reason, .. } if reason == "veto")
        ),
        1
    );
    assert_eq!(
        count(&b, |e| matches!(e, Event::OrderRepriced { .. })),
        0,
        "the refused re-price is not made"
    );
    // A spread's buy is checked alike: its sell waits for it, so the sell is scaled with it
    // (3 -> 2 at the clamp) and fills after it, never before; refused, the sell goes too.
    // (On a tape with some volatility, where the short call has a bid.) The budget is
    // chosen from the quotes: 3 at the bid fit, 3 at the ask do not, 2 at the ask do.
    let t = tape_s(HDR_VOL, &[100.0, 100.0, 100.0, 100.0]);
    let spread = |budget: &str| {
        format!(
            "PLAN s budget {budget}R ttl +10m\n  WHEN spot > 0\n  DO buy 3 ATM C @ bid esc ask 1s\n  ALSO sell 3 +1 C @ bid\n"
        )
    };
    let probe = run(&t, &spread("0.5"), 100_000);
    let limits: Vec<i64> = probe
        .events()
        .iter()
        .filter_map(|e| match e {
            Event::OrderPlaced {
                order: 1, limit, ..
            }
            | Event::OrderRepriced {
                order: 1, limit, ..
            } => Some(limit.raw()),
            _ => None,
        })
        .collect();
    let (bid, ask) = (limits[0], limits[1]);
    assert!(ask > bid, "{limits:?}");
    // Dollars of 1R = 100,000; a price's raw units are 1/10,000 of a dollar; × 100 a contract.
    let budget_usd = (3 * bid).max(2 * ask + 1) * 100 / 10_000 + 1;
    assert!(budget_usd * 10_000 < 3 * ask * 100, "{bid} {ask}");
    let b = run(
        &t,
        &spread(&format!("{}", budget_usd as f64 / 100_000.0)),
        100_000,
    );
    let f = fills(&b);
    assert_eq!(f.len(), 2, "{f:?}");
    assert_eq!((f[0].1, f[0].2), (Buy, 2), "{f:?}");
    assert_eq!((f[1].1, f[1].2), (Sell, 2), "{f:?}");
    assert!(f[0].4 <= f[1].4, "{f:?}");
    assert_eq!(
        count(&b, |e| matches!(
            e,
            Event::Clamp { from_qty: 3, to_qty: 2, order: Some(2), reason, .. }
                if reason.starts_with("its cover, order #1, was scaled from 3 to 2")
        )),
        1
    );
    // Not one unit at the ask fits (one at the bid does): the buy is refused and its sell
    // cancelled with it.
    let one =
        spread(&format!("{}", (bid * 100 / 10_000 + 1) as f64 / 100_000.0)).replace(" 3 ", " 1 ");
    assert!((bid * 100 / 10_000 + 1) * 10_000 < ask * 100, "{bid} {ask}");
    let b = run(&t, &one, 100_000);
    assert!(fills(&b).is_empty(), "{:?}", fills(&b));
    assert_eq!(
        count(&b, |e| matches!(e, Event::Veto { order: Some(1), .. })),
        1
    );
    assert_eq!(
        count(
            &b,
            |e| matches!(e, Event::OrderCancelled { order: 2, reason, .. } if reason == "uncovered")
        ),
        1
    );
}

/// A covered sell waits for its cover. `DO sell 1 +1 C @ bid` with `ALSO buy 1 ATM C @ 0.01`
/// (a buy that never fills) passed `naked-sell` and sold the call alone: a naked short held
/// all session. The sell now rests until every buy of its fire has filled, and is cancelled
/// with them; written in either order, a spread whose buy fills sells after it.
#[test]
fn a_covered_sell_waits_for_its_cover() {
    let t = tape_s(HDR_VOL, &[100.0, 100.0, 100.0, 100.0]);
    let stub = run(
        &t,
        "PLAN n budget 0.1R ttl +10m\n  WHEN spot > 0\n  DO sell 1 +1 C @ bid\n  ALSO buy 1 ATM C @ 0.01\n",
        100_000,
    );
    assert!(fills(&stub).is_empty(), "{:?}", fills(&stub));
    let both = run(
        &t,
        "PLAN c budget 0.1R ttl +10m\n  WHEN spot > 0\n  DO sell 1 +1 C @ bid\n  ALSO buy 1 ATM C @ ask\n",
        100_000,
    );
    let f = fills(&both);
    assert_eq!(f.len(), 2, "{f:?}");
    assert_eq!((f[0].1, f[1].1), (Buy, Sell), "the buy fills first: {f:?}");
    assert_eq!(f[0].4, f[1].4, "at the same instant: {f:?}");
    // A buy cancelled by its own line-level CANCEL-IF takes its sell with it.
    let t = tape_s(HDR_VOL, &[100.0, 100.0, 101.0, 101.0]);
    let cut = run(
        &t,
        "PLAN x budget 0.1R ttl +10m\n  WHEN spot > 0\n  DO buy 1 ATM C @ 0.01 cancel-if spot > 100.5\n  ALSO sell 1 +1 C @ bid\n",
        100_000,
    );
    assert!(fills(&cut).is_empty(), "{:?}", fills(&cut));
    assert_eq!(
        count(
            &cut,
            |e| matches!(e, Event::OrderCancelled { order: 2, reason, .. } if reason == "uncovered")
        ),
        1
    );
}

#[test]
fn book_budget_sums_across_plans() {
    // Each plan buys one 90 C at 10.15 ($1015) within its own 2R; BOOK 1.5R = $1500 covers SPY:
    // the first fits, the second has $485 left: veto by the book.
    let t = tape_s(HDR_OPT, &[100.0, 100.0]);
    let src = "BOOK b budget 1.5R coverage SPY\n\nPLAN one budget 2R ttl +10m\n  WHEN spot > 0\n  DO buy 1 90 C @ ask\n\nPLAN two budget 2R ttl +10m\n  WHEN spot > 0\n  DO buy 1 90 C @ ask\n";
    let b = run(&t, src, 1000);
    assert_eq!(fills(&b), vec![f("one", Buy, 1, "10.15", "09:30:00")]);
    assert_eq!(
        count(
            &b,
            |e| matches!(e, Event::Veto { plan, budget, .. } if plan == "two" && budget == "book b")
        ),
        1
    );
}

#[test]
fn pod_day_loss_halts_and_flattens() {
    // Day-loss 0.01R = $10. Buy 10 @ 100.01; at 99.10 P&L at fair = -9.10 (inside); at 98.95
    // -10.60: breach -> halt, flatten at bid 98.94: 10 * (98.94 - 100.01) = -10.70.
    // The armed plan `later` never fires after the halt.
    let t = tape_s(HDR_SH, &[100.0, 99.1, 98.95, 102.0]);
    let src = "POD p RISK day-loss 0.01R -> halt\n\nPLAN x budget 1R ttl +10m\n  WHEN spot > 0\n  DO buy 10 shares @ ask\n\nPLAN later budget 1R ttl +10m\n  WHEN spot > 101\n  DO buy 10 shares @ ask\n";
    let b = run(&t, src, 1000);
    assert_eq!(
        fills(&b),
        vec![
            f("x", Buy, 10, "100.01", "09:30:00"),
            f("x", Sell, 10, "98.94", "09:30:02")
        ]
    );
    assert_eq!(pnl(&b, "x"), "-10.70");
    assert_eq!(count(&b, |e| matches!(e, Event::PodHalt { .. })), 1);
}

// ------------------------------------------------------------------ ttl, acts

#[test]
fn ttl_expires_entries_but_inventory_is_still_managed() {
    // ttl +2s: WHEN never true -> expired at 09:30:02, done.
    let t = tape_s(HDR_SH, &[100.0, 100.0, 100.0, 100.0]);
    let b = run(
        &t,
        "PLAN t budget 1R ttl +2s\n  WHEN spot > 200\n  DO buy 10 shares @ ask\n",
        1000,
    );
    let st = states(&b, "t");
    assert_eq!(st[1], (PlanState::Expired, Some("ttl 09:30:02.000".into())));
    assert_eq!(st[2].0, PlanState::Done);
    // Filled before the ttl; its resting RELOAD-free TP still works after it:
    // buy 10 @ 100.01; ttl at 09:30:01; TP 1.01x at S >= 101.0101 -> 101.02 at 3 s, bid 101.01.
    let t = tape_s(HDR_SH, &[100.0, 100.5, 101.0, 101.02]);
    let b = run(
        &t,
        "PLAN m budget 1R ttl +1s\n  WHEN spot > 0\n  DO buy 10 shares @ ask\n  TP 1.01x @ bid\n",
        1000,
    );
    assert_eq!(
        fills(&b),
        vec![
            f("m", Buy, 10, "100.01", "09:30:00"),
            f("m", Sell, 10, "101.01", "09:30:03")
        ]
    );
    // A resting entry is pulled at the ttl.
    let b = run(
        &t,
        "PLAN r budget 1R ttl +1s\n  WHEN spot > 0\n  DO buy 10 shares @ 90\n",
        1000,
    );
    assert_eq!(
        count(
            &b,
            |e| matches!(e, Event::OrderCancelled { reason, .. } if reason == "ttl")
        ),
        1
    );
}

#[test]
fn stand_down_and_cancel_are_runtime_acts() {
    // `held` filled at 0 s (100.01) with TP 1.01x; `wait` is armed for spot > 101.
    // STAND-DOWN before the 2nd event: wait never fires; held's TP still sells at 101.02
    // (bid 101.01): 10 * 1.00 = 10.00.
    let t = tape_s(HDR_SH, &[100.0, 100.5, 101.02]);
    let src = "PLAN held budget 1R ttl +10m\n  WHEN spot > 0\n  DO buy 10 shares @ ask\n  TP 1.01x @ bid\n\nPLAN wait budget 1R ttl +10m\n  WHEN spot > 101\n  DO buy 10 shares @ ask\n";
    let b = run_with(&t, src, 1000, |e, i| {
        if i == 1 {
            e.stand_down("done for the day");
        }
    });
    assert_eq!(
        fills(&b),
        vec![
            f("held", Buy, 10, "100.01", "09:30:00"),
            f("held", Sell, 10, "101.01", "09:30:02")
        ]
    );
    assert_eq!(pnl(&b, "held"), "10.00");
    assert!(
        states(&b, "wait")
            .iter()
            .any(|s| s.0 == PlanState::StoodDown)
    );
    // CANCEL wait: only that plan.
    let b = run_with(&t, src, 1000, |e, i| {
        if i == 1 {
            assert!(e.cancel("wait"));
            assert!(!e.cancel("nope"));
        }
    });
    assert_eq!(fills(&b).len(), 2);
    assert_eq!(count(&b, |e| matches!(e, Event::Cancel { .. })), 2);
}

// ------------------------------------------------------------------ determinism

#[test]
fn same_run_twice_is_byte_identical_and_the_blotter_rebuilds_from_the_bus() {
    let t = tape_s(HDR_OPT, &[100.0, 99.5, 101.0, 101.6, 100.2, 99.0]);
    let src = "PLAN l budget 2R ttl +10m\n  WHEN ask < 10.20\n  DO buy 1 90 C @ fair-0.05 peg\n  TP 1.1x frac 0.5 @ basis+10%\n  EXIT spot < 99.5\n\nPLAN s budget 1R ttl +10m\n  WHEN spot crosses above 100.5\n  DO buy 10 shares @ improve esc ask 1s\n";
    let go = || {
        let (h, evs) = read_tape_bytes(t.as_bytes()).unwrap();
        let buf = std::rc::Rc::new(std::cell::RefCell::new(Vec::<u8>::new()));
        struct W(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);
        impl std::io::Write for W {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.borrow_mut().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let bus = Bus::new(Some(Box::new(W(buf.clone())))).keeping();
        let bus = replay(
            &h,
            evs.into_iter().map(Ok),
            &[doc(src)],
            EngineConfig::strict(Px(1000 * 10_000)),
            bus,
        )
        .unwrap();
        let bytes = buf.borrow().clone();
        (bus, bytes)
    };
    let (b1, bytes1) = go();
    let (b2, bytes2) = go();
    assert!(!bytes1.is_empty());
    assert_eq!(bytes1, bytes2);
    assert_eq!(b1.hash_hex(), b2.hash_hex());
    assert_eq!(b1.hash_hex(), crate::bus::hash_bytes(&bytes1));
    let evs = crate::bus::parse_bus(&bytes1).unwrap();
    assert_eq!(evs.as_slice(), b1.events());
    assert_eq!(crate::bus::Blotter::from_events(&evs), *b1.blotter());
    // Every line re-serialises to itself (canonical).
    for (line, ev) in bytes1.split(|&c| c == b'\n').zip(&evs) {
        let mut l = line.to_vec();
        l.push(b'\n');
        assert_eq!(crate::bus::canonical_line(ev), l);
    }
}

#[test]
fn synthetic_plans_are_valid_documents() {
    for n in [0, 1, 10, 50] {
        let d = doc(&synthetic_plans(n));
        let plans = d
            .statements
            .iter()
            .filter(|s| matches!(s.kind, crate::lang::ast::StatementKind::Plan(_)))
            .count();
        assert_eq!(plans, n);
    }
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Random walks on the option tape under the busy synthetic plans (SPY as both signal
        /// and exec): never a panic, the same bytes twice, and the Blotter rebuilds.
        #[test]
        fn random_tapes_never_panic_and_are_deterministic(steps in proptest::collection::vec(-40i32..=40, 1..120)) {
            let mut px = 100.0f64;
            let mut pxs = Vec::new();
            for s in steps {
                px = (px + f64::from(s) / 100.0).max(1.0);
                pxs.push(px);
            }
            let t = tape_s(HDR_OPT, &pxs);
            let plans = synthetic_plans(10).replace("USING signal SPX exec SPY 0dte", "USING signal SPY exec SPY 0dte");
            let a = run(&t, &plans, 1000);
            let b = run(&t, &plans, 1000);
            prop_assert_eq!(a.hash_hex(), b.hash_hex());
            prop_assert_eq!(crate::bus::Blotter::from_events(a.events()), a.blotter().clone());
        }
    }
}

/// The events of one instant are one market state: a plan whose signal prints first in a
/// second is priced on its exec symbol's print of that same second, not on the one before
/// (an SPX-signal plan bought SPY at the previous second's ask, and a round trip at one
/// instant made money). Fed one event at a time with no look-ahead (`on_event`), it still
/// steps at every event, and the stale price shows what the instant's step fixed.
#[test]
fn the_events_of_one_instant_are_one_market_state() {
    let hdr = r#"{"type":"header","v":1,"name":"two","date":"2025-04-09","open":"09:30","close":"16:00","symbols":{"SPX":{"prior_close":5000.0},"SPY":{"prior_close":500.0}}}"#;
    let mut t = String::from(hdr);
    for (ts, spx, spy) in [
        ("09:30:00", 5000.0, 500.0),
        ("09:30:01", 5010.0, 501.0),
        ("09:30:02", 5011.0, 501.5),
    ] {
        for (sym, px) in [("SPX", spx), ("SPY", spy)] {
            t.push_str(&format!(
                "\n{{\"type\":\"tick\",\"ts\":\"{ts}.000\",\"sym\":\"{sym}\",\"px\":{px:.2},\"sz\":10}}"
            ));
        }
    }
    t.push('\n');
    let plans = "PLAN spx budget 1R ttl 15:00\n  USING signal SPX exec SPY\n  WHEN spot > 5005\n  DO buy 10 shares @ ask\n  EXIT spot > 0\n\n\
                 PLAN spy budget 1R ttl 15:00\n  USING signal SPY exec SPY\n  WHEN spot > 500.5\n  DO buy 10 shares @ ask\n  EXIT spot > 0\n";
    let (h, evs) = read_tape_bytes(t.as_bytes()).expect("tape");
    let run = |whole: bool| {
        let mut e = Engine::new(
            &h,
            EngineConfig::strict(Px(1000 * 10_000)),
            Bus::new(None).keeping(),
        );
        e.arm_document(&doc(plans));
        if whole {
            e.on_events(&evs);
        } else {
            evs.iter().for_each(|ev| e.on_event(ev));
        }
        e.finish()
    };
    // Both plans fire at 09:30:01 and buy at SPY's ask of that second (501.00 + 0.01); the
    // EXIT sells at the next instant's bid (501.50 - 0.01): +$4.80 each, the same plan on
    // either signal.
    let b = run(true);
    assert_eq!(
        fills(&b),
        vec![
            f("spx", BusSide::Buy, 10, "501.01", "09:30:01"),
            f("spy", BusSide::Buy, 10, "501.01", "09:30:01"),
            f("spx", BusSide::Sell, 10, "501.49", "09:30:02"),
            f("spy", BusSide::Sell, 10, "501.49", "09:30:02"),
        ]
    );
    assert_eq!(pnl(&b, "spx"), "4.80");
    assert_eq!(pnl(&b, "spy"), pnl(&b, "spx"));
    // Stepped at every event: the SPX print fires `spx` on SPY's quote of 09:30:00, and its
    // EXIT sells at 09:30:01's SPY bid once that prints, in the same second (+$9.80).
    let b = run(false);
    assert_eq!(
        fills(&b)[..2],
        [
            f("spx", BusSide::Buy, 10, "500.01", "09:30:01"),
            f("spx", BusSide::Sell, 10, "500.99", "09:30:01"),
        ]
    );
}

/// Two prints of one symbol in one instant: a resting order meets the book each of them
/// leaves (RUNTIME.md §4, "the first tick whose ask is strictly below L"), so a cross that
/// the instant's second print undoes fills, at the limit, at that instant; the plan's state
/// moves at the instant's step. An order placed at the instant's step is priced on its last
/// print.
#[test]
fn a_resting_order_meets_every_print_of_its_instant() {
    // Limit 99.50. 09:30:02 prints 99.40 (ask 99.41: crosses) then 99.70 (ask 99.71).
    let t = tape(
        HDR_SH,
        &[
            ("09:30:00", 100.0),
            ("09:30:01", 99.80),
            ("09:30:02", 99.40),
            ("09:30:02", 99.70),
            ("09:30:03", 99.80),
        ],
    );
    let plans = "PLAN dip budget 1R ttl +10m\n  WHEN spot > 0\n  DO buy 10 shares @ 99.50\n";
    let (h, evs) = read_tape_bytes(t.as_bytes()).expect("tape");
    let mut e = Engine::new(
        &h,
        EngineConfig::strict(Px(1000 * 10_000)),
        Bus::new(None).keeping(),
    );
    e.arm_document(&doc(plans));
    e.on_events(&evs);
    let b = e.finish();
    assert_eq!(fills(&b), vec![f("dip", Buy, 10, "99.50", "09:30:02")]);
    // Marked at the close's last print, 99.80: 10 * 0.30.
    assert_eq!(pnl(&b, "dip"), "3.00");
    let st: Vec<PlanState> = states(&b, "dip").into_iter().map(|s| s.0).collect();
    assert_eq!(
        st,
        vec![
            PlanState::Armed,
            PlanState::Fired,
            PlanState::Resting,
            PlanState::Filled,
            PlanState::Done
        ]
    );
    // The same prints one instant apart: the cross fills as well (the reference).
    let t2 = t.replacen(
        "09:30:02.000\",\"sym\":\"SPY\",\"px\":99.70",
        "09:30:02.500\",\"sym\":\"SPY\",\"px\":99.70",
        1,
    );
    assert_ne!(t, t2);
    let b2 = run(&t2, plans, 1000);
    assert_eq!(fills(&b2), fills(&b));
}

/// Where every instant holds one event, stepping once per instant is stepping at every
/// event: the same Bus, byte for byte. The bundled tapes, with each event of a second moved
/// to its own millisecond (SPX, then SPY one millisecond later, then an iv or a headline),
/// under the busy synthetic plans and the README's desk plans.
#[test]
fn one_event_instants_step_as_every_event_did() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let desk = std::fs::read_to_string(root.join("examples/run-desk.kestrel")).expect("plans");
    for t in ["trend-2025-04-09-s1", "shock-2025-04-09-s7"] {
        let text = std::fs::read_to_string(root.join(format!("tapes/{t}.jsonl"))).expect("tape");
        // The k-th event of a second (SPX, SPY, an iv or a headline) moves to millisecond k.
        let mut second = String::new();
        let mut k = 0;
        let apart: String = text
            .lines()
            .map(|l| {
                let Some(at) = l.find("\"ts\":\"") else {
                    return format!("{l}\n");
                };
                let hms = &l[at + 6..at + 14];
                k = if hms == second { k + 1 } else { 0 };
                second = hms.to_string();
                format!("{}{:03}{}\n", &l[..at + 15], k, &l[at + 18..])
            })
            .collect();
        let (h, evs) = read_tape_bytes(apart.as_bytes()).expect("tape");
        assert!(
            evs.windows(2).all(|w| w[0].ts() != w[1].ts()),
            "{t}: an instant with two events"
        );
        for plans in [synthetic_plans(10), desk.clone()] {
            let run = |whole: bool| {
                let mut e = Engine::new(
                    &h,
                    EngineConfig::strict(Px(1000 * 10_000)),
                    Bus::new(None).keeping(),
                );
                e.arm_document(&doc(&plans));
                if whole {
                    e.on_events(&evs);
                } else {
                    evs.iter().for_each(|ev| e.on_event(ev));
                }
                e.finish()
            };
            let (a, b) = (run(true), run(false));
            assert!(count(&a, |e| matches!(e, Event::Fill { .. })) > 0, "{t}");
            assert_eq!(a.hash_hex(), b.hash_hex(), "{t}");
        }
    }
}
