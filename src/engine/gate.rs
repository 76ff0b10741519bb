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

/// Check a plan's regime entries against a tape's tags. Every entry must match (AND). A key
/// whose tag the tape does not carry is UNKNOWN, which is not a match (unknown is not
/// true): the plan does not arm. `Err` carries the logged reason.
pub fn check(tags: &BTreeMap<String, String>, regime: &[RegimeEntry]) -> Result<(), String> {
    for e in regime {
        let tag = tag_for_key(&e.key);
        match tags.get(tag) {
            None => {
                return Err(format!(
                    "regime gate: {}: UNKNOWN, the tape carries no `{tag}` tag",
                    e.key
                ));
            }
            Some(v) if *v != e.value => {
                return Err(format!(
                    "regime gate: {} is {v} on this tape, the plan wants {}",
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
