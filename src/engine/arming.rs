//! Warnings at arming: what the engine sees when it arms a plan that makes the plan unlikely
//! to do what its author meant, while it still runs as written (docs/runtime.md, "Warnings
//! at arming"). They are not on the Bus (a run's Bus and hash are what they were): `kestrel
//! run` prints them on standard error and in its report, the desk on the submit's result.

use super::{InstSpec, PlanRt, Shared, StrikeSpec};
use crate::market::{Px, Ts};

/// A fixed strike further than this fraction from the exec's spot is named (`STRIKE-FAR`).
pub const STRIKE_FAR: f64 = 0.25;

/// One warning at arming a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArmWarning {
    /// `TTL-PAST` or `STRIKE-FAR`.
    pub code: &'static str,
    /// The plan armed.
    pub plan: String,
    /// Tape time of the arming.
    pub ts: Ts,
    /// What is wrong, without the plan's name (`its ttl 09:45 is already past at 10:00: it
    /// expires at once, before it can fire`).
    pub message: String,
}

impl ArmWarning {
    /// The coded line `kestrel run` prints on standard error.
    pub fn line(&self) -> String {
        format!(
            "warning code={} message=plan {}: {}",
            self.code, self.plan, self.message
        )
    }
}

/// `a` or `an` before a symbol read letter by letter (`an SPX`, `a QQQ`).
fn article(sym: &str) -> &'static str {
    match sym.chars().next() {
        Some(c) if "AEFHILMNORSX".contains(c.to_ascii_uppercase()) => "an",
        _ => "a",
    }
}

/// The warnings for plan `p`, armed now (its ttl already taken).
pub(super) fn check(p: &PlanRt, sh: &Shared) -> Vec<ArmWarning> {
    let mut out = Vec::new();
    let warn = |code, message| ArmWarning {
        code,
        plan: p.name.clone(),
        ts: sh.now,
        message,
    };
    if let Some(ttl) = p.ttl_at.filter(|&t| t <= sh.now) {
        out.push(warn(
            "TTL-PAST",
            format!(
                "its ttl {} is already past at {}: it expires at once, before it can fire",
                ttl.clock_text(),
                sh.now.clock_text()
            ),
        ));
    }
    // Before a symbol's first trade (a plan armed at the open), its prior close.
    let spot_of = |sym: &str| match sh.ms.spot(sym) {
        Some(s) => Some((s, "spot")),
        None => sh.ms.prior_close(sym).map(|s| (s, "prior close")),
    };
    let Some((spot, what)) = spot_of(p.exec.as_str()).filter(|s| s.0 > Px::ZERO) else {
        return out;
    };
    let tickets = p.entries.iter().chain(p.reloads.iter().map(|r| &r.1));
    for t in tickets {
        let InstSpec::Opt(StrikeSpec::Abs(k), _) = t.inst else {
            continue;
        };
        let away = |s: Px| (k.to_f64() - s.to_f64()) / s.to_f64();
        let off = away(spot);
        if off.abs() <= STRIKE_FAR {
            continue;
        }
        let hint = match spot_of(p.signal.as_str()).filter(|s| s.0 > Px::ZERO) {
            Some((sig, _)) if p.signal != p.exec && away(sig).abs() <= STRIKE_FAR => {
                format!(
                    "{} {} level on the {} exec?",
                    article(p.signal.as_str()),
                    p.signal,
                    p.exec
                )
            }
            _ => "is that the strike meant?".to_string(),
        };
        out.push(warn(
            "STRIKE-FAR",
            format!(
                "{} strike {} is {:.0}% {} {}'s {what} {}: {hint}",
                t.clause,
                k.trimmed(),
                off.abs() * 100.0,
                if off > 0.0 { "above" } else { "below" },
                p.exec,
                spot.cents()
            ),
        ));
    }
    out
}
