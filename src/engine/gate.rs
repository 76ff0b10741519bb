//! The regime gate: an opt-in check of a PLAN's `regime {k: v, ...}` against the tape's
//! header `tags` (see docs/runtime.md, "Regime gate").
//!
//! The gate is off by default ([`EngineConfig::strict`](super::EngineConfig::strict) and
//! `kestrel run`), so `regime {…}` is not read by a plain replay. `kestrel grade` turns it on
//! for the subject and its `VS null` runs and off for `VS ungated`.

use std::collections::BTreeMap;

use crate::lang::ast::RegimeEntry;

/// The tape tag a regime key reads: `intraday` reads the tape's `regime` tag (the generator
/// writes `trend` / `range` / `shock` there); any other key reads the tag of the same name.
pub fn tag_for_key(key: &str) -> &str {
    if key == "intraday" { "regime" } else { key }
}

/// How the gate's reasons start: a plan the gate kept out is `de-armed` by choice (its
/// regime is not this tape's), not because it cannot run here.
pub const REASON_PREFIX: &str = "regime gate: ";

/// Is `reason` (a `de-armed` plan's) the gate's?
pub fn is_gate_reason(reason: &str) -> bool {
    reason.starts_with(REASON_PREFIX)
}

/// Check a plan's regime entries against a tape's tags. Every entry must match (AND). A key
/// whose tag the tape does not carry is UNKNOWN, which is not a match (unknown is not
/// true): the plan does not arm. `Err` carries the logged reason.
pub fn check(tags: &BTreeMap<String, String>, regime: &[RegimeEntry]) -> Result<(), String> {
    for e in regime {
        let tag = tag_for_key(&e.key);
        match tags.get(tag) {
            None => {
                return Err(format!(
                    "{REASON_PREFIX}{}: UNKNOWN, the tape carries no `{tag}` tag",
                    e.key
                ));
            }
            Some(v) if *v != e.value => {
                return Err(format!(
                    "{REASON_PREFIX}{} is {v} on this tape, the plan wants {}",
                    e.key, e.value
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(k: &str, v: &str) -> RegimeEntry {
        RegimeEntry {
            key: k.into(),
            value: v.into(),
        }
    }

    #[test]
    fn intraday_reads_the_regime_tag_and_unknown_is_not_a_match() {
        let mut tags = BTreeMap::new();
        tags.insert("regime".to_string(), "trend".to_string());
        tags.insert("source".to_string(), "synthetic".to_string());
        assert!(check(&tags, &[entry("intraday", "trend")]).is_ok());
        assert!(check(&tags, &[entry("source", "synthetic")]).is_ok());
        assert!(check(&tags, &[]).is_ok());
        let e = check(&tags, &[entry("intraday", "range")]).unwrap_err();
        assert!(e.contains("intraday is trend"), "{e}");
        let e = check(&tags, &[entry("intraday", "trend"), entry("vix", "high")]).unwrap_err();
        assert!(e.contains("UNKNOWN") && e.contains("`vix`"), "{e}");
        assert!(check(&BTreeMap::new(), &[entry("intraday", "trend")]).is_err());
    }
}

#[cfg(test)]
mod engine_tests {
    use crate::bus::{Bus, Event, PlanState};
    use crate::engine::{EngineConfig, replay};
    use crate::market::{Px, read_tape_bytes};

    const TAPE: &str = concat!(
        r#"{"type":"header","v":1,"name":"t","date":"2025-04-09","open":"09:30","close":"16:00","symbols":{"SPY":{"prior_close":100.0}},"tags":{"regime":"range"}}"#,
        "\n",
        r#"{"type":"tick","ts":"09:30:00.000","sym":"SPY","px":100.00,"sz":10}"#,
        "\n",
        r#"{"type":"tick","ts":"09:30:01.000","sym":"SPY","px":101.00,"sz":10}"#,
        "\n",
    );

    fn run(plans: &str, gate: bool) -> Bus {
        let doc = crate::lang::check(plans, crate::lang::Mode::File).unwrap();
        let (h, evs) = read_tape_bytes(TAPE.as_bytes()).unwrap();
        let cfg = EngineConfig::strict(Px::from_cents(100_000)).with_regime_gate(gate);
        replay(
            &h,
            evs.into_iter().map(Ok),
            &[doc],
            cfg,
            Bus::new(None).keeping(),
        )
        .unwrap()
    }

    const PLANS: &str = "PLAN t budget 1R ttl +10m regime {intraday: trend}\n  WHEN spot > 100.5\n  DO buy 1 shares @ ask\n\n\
                         PLAN r budget 1R ttl +10m regime {intraday: range}\n  WHEN spot > 100.5\n  DO buy 1 shares @ ask\n\n\
                         PLAN v budget 1R ttl +10m regime {vix: high}\n  WHEN spot > 100.5\n  DO buy 1 shares @ ask\n";

    #[test]
    fn gate_on_arms_only_matching_plans_and_logs_why() {
        let bus = run(PLANS, true);
        let fills: Vec<&str> = bus
            .blotter()
            .fills
            .iter()
            .map(|f| f.plan.as_str())
            .collect();
        assert_eq!(fills, ["r"]);
        let reasons: Vec<(String, String)> = bus
            .events()
            .iter()
            .filter_map(|e| match e {
                Event::PlanState {
                    plan,
                    state: PlanState::DeArmed,
                    reason: Some(r),
                    ..
                } => Some((plan.clone(), r.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(reasons.len(), 2, "{reasons:?}");
        assert!(
            reasons[0]
                .1
                .contains("intraday is range on this tape, the plan wants trend")
        );
        assert!(reasons[1].1.contains("UNKNOWN"));
    }

    #[test]
    fn gate_off_by_default_reads_no_regime() {
        let bus = run(PLANS, false);
        assert_eq!(bus.blotter().fills.len(), 3);
        assert!(!EngineConfig::strict(Px::from_cents(100)).regime_gate);
    }
}
