//! Ticket prices compiled from the typed model (LANGUAGE.md §3.2) and their evaluation
//! against an instrument's quote.
//!
//! Anchors: `fair` (model value), `intrinsic`, `basis` (the plan's average cost of this
//! instrument; UNKNOWN while it holds none), `bid`, `ask`, `mid`, `last`, `join` (the
//! order's own side's best: bid for a buy, ask for a sell), `improve` (one tick better than
//! join, never crossing: a buy at `min(bid + tick, ask - tick)` but not below the bid).
//! Offsets: `c` cents, `%` percent of the anchor, bare in price units. `stub` is the minimum
//! tick (0.01). The result is put on the instrument's tick grid toward the conservative side
//! (a buy rounds down, a sell rounds up) and is never below one tick.

use crate::lang::ast::{AnchorKind, OffsetUnit, Price};
use crate::market::Px;

/// A compiled price.
#[derive(Debug, Clone, PartialEq)]
pub enum CPrice {
    /// An anchor with an optional offset `(signed amount, unit)`.
    Anchor(AnchorKind, Option<(f64, OffsetUnit)>),
    /// A fixed price.
    Num(f64),
    /// The minimum tick.
    Stub,
    /// `lean(a, b, w)` = a + w (b − a).
    Lean(Box<CPrice>, Box<CPrice>, f64),
    /// `min(a, b)`.
    Min(Box<CPrice>, Box<CPrice>),
    /// `max(a, b)`.
    Max(Box<CPrice>, Box<CPrice>),
}

/// An instrument's quote, as the pricing reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuoteF {
    /// Model value.
    pub fair: f64,
    /// Intrinsic (options); last trade (shares).
    pub intrinsic: Px,
    /// Best bid.
    pub bid: Px,
    /// Best ask.
    pub ask: Px,
    /// Mid.
    pub mid: Px,
    /// Last.
    pub last: Px,
    /// Is this an option (ticks 0.01 below 3.00, 0.05 above; shares 0.01)?
    pub option: bool,
    /// Are bid and ask the tape's quote (not the spread model's or last ± 0.01)?
    pub quoted: bool,
}

impl QuoteF {
    /// The tick at a price level.
    pub fn tick_at(&self, level: f64) -> Px {
        if self.option {
            crate::market::options::option_tick(level)
        } else {
            Px::CENT
        }
    }
}

/// Compile a price expression.
pub fn compile(p: &Price) -> CPrice {
    match p {
        Price::Anchor { anchor, offset } => CPrice::Anchor(
            anchor.kind,
            offset.as_ref().map(|o| {
                let a = o.amount.value();
                (if o.negative { -a } else { a }, o.unit)
            }),
        ),
        Price::Number { value } => CPrice::Num(value.value()),
        Price::Stub { .. } => CPrice::Stub,
        Price::Lean { a, b, w, .. } => {
            CPrice::Lean(Box::new(compile(a)), Box::new(compile(b)), w.value())
        }
        Price::Min { a, b, .. } => CPrice::Min(Box::new(compile(a)), Box::new(compile(b))),
        Price::Max { a, b, .. } => CPrice::Max(Box::new(compile(a)), Box::new(compile(b))),
    }
}

impl CPrice {
    /// The raw (unrounded) value for an order on `buy` side; `None` is UNKNOWN (e.g. `basis`
    /// with no position).
    pub fn value(&self, q: &QuoteF, buy: bool, basis: Option<f64>) -> Option<f64> {
        let v = match self {
            CPrice::Anchor(k, off) => {
                let a = match k {
                    AnchorKind::Fair => q.fair,
                    AnchorKind::Intrinsic => q.intrinsic.to_f64(),
                    AnchorKind::Basis => basis?,
                    AnchorKind::Bid => q.bid.to_f64(),
                    AnchorKind::Ask => q.ask.to_f64(),
                    AnchorKind::Mid => q.mid.to_f64(),
                    AnchorKind::Last => q.last.to_f64(),
                    AnchorKind::Join => {
                        if buy {
                            q.bid.to_f64()
                        } else {
                            q.ask.to_f64()
                        }
                    }
                    AnchorKind::Improve => {
                        if buy {
                            let t = q.tick_at(q.bid.to_f64());
                            q.bid.max((q.bid + t).min(q.ask - t)).to_f64()
                        } else {
                            let t = q.tick_at(q.ask.to_f64());
                            q.ask.min((q.ask - t).max(q.bid + t)).to_f64()
                        }
                    }
                };
                match off {
                    None => a,
                    Some((x, OffsetUnit::Price)) => a + x,
                    Some((x, OffsetUnit::Cents)) => a + x / 100.0,
                    Some((x, OffsetUnit::Percent)) => a * (1.0 + x / 100.0),
                }
            }
            CPrice::Num(x) => *x,
            CPrice::Stub => 0.01,
            CPrice::Lean(a, b, w) => {
                let a = a.value(q, buy, basis)?;
                let b = b.value(q, buy, basis)?;
                a + w * (b - a)
            }
            CPrice::Min(a, b) => a.value(q, buy, basis)?.min(b.value(q, buy, basis)?),
            CPrice::Max(a, b) => a.value(q, buy, basis)?.max(b.value(q, buy, basis)?),
        };
        v.is_finite().then_some(v)
    }

    /// The limit on the tick grid: a buy rounds down, a sell up; at least one tick.
    #[inline]
    pub fn limit(&self, q: &QuoteF, buy: bool, basis: Option<f64>) -> Option<Px> {
        to_grid(self.value(q, buy, basis)?, q, buy)
    }
}

/// Put a raw price on the instrument's tick grid (buy down, sell up), at least one tick.
pub fn to_grid(x: f64, q: &QuoteF, buy: bool) -> Option<Px> {
    if !x.is_finite() {
        return None;
    }
    let tick = q.tick_at(x);
    let p = if buy {
        Px::floor_to(x, tick)?
    } else {
        Px::ceil_to(x, tick)?
    };
    Some(p.max(Px::CENT))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q() -> QuoteF {
        // An option at fair 1.234: bid 1.21, ask 1.26.
        QuoteF {
            fair: 1.234,
            intrinsic: Px::from_cents(50),
            bid: Px::from_cents(121),
            ask: Px::from_cents(126),
            mid: Px(12_350),
            last: Px::from_cents(123),
            option: true,
            quoted: false,
        }
    }

    fn p(src: &str) -> CPrice {
        let doc = format!("PLAN x budget 1R ttl +1m\n  WHEN spot > 1\n  DO buy 1 ATM C @ {src}\n");
        let d = crate::lang::check(&doc, crate::lang::Mode::File).expect("valid");
        let crate::lang::ast::StatementKind::Plan(pl) = &d.statements[0].kind else {
            panic!()
        };
        let crate::lang::ast::ClauseKind::Do(t) = &pl.clauses[1].kind else {
            panic!()
        };
        compile(&t.price)
    }

    #[test]
    fn anchors_offsets_and_grid() {
        let q = q();
        // fair-3c = 1.204 -> buy rounds down to 1.20.
        assert_eq!(
            p("fair-3c").limit(&q, true, None),
            Some(Px::from_cents(120))
        );
        // fair+10% = 1.3574 -> buy 1.35; as a sell it rounds up to 1.36.
        assert_eq!(
            p("fair+10%").limit(&q, true, None),
            Some(Px::from_cents(135))
        );
        assert_eq!(
            p("fair+10%").limit(&q, false, None),
            Some(Px::from_cents(136))
        );
        // bid+0.05 = 1.26.
        assert_eq!(
            p("bid+0.05").limit(&q, true, None),
            Some(Px::from_cents(126))
        );
        // join (buy) = bid 1.21; improve = 1.22; as a sell join = ask 1.26, improve 1.25.
        assert_eq!(p("join").limit(&q, true, None), Some(Px::from_cents(121)));
        assert_eq!(
            p("improve").limit(&q, true, None),
            Some(Px::from_cents(122))
        );
        assert_eq!(
            p("improve").limit(&q, false, None),
            Some(Px::from_cents(125))
        );
        // lean(bid, fair, 0.5) = 1.21 + 0.5*(0.024) = 1.222 -> 1.22.
        assert_eq!(
            p("lean(bid, fair, 0.5)").limit(&q, true, None),
            Some(Px::from_cents(122))
        );
        // min(fair, ask) = 1.234 -> 1.23; max(intrinsic, bid) = 1.21.
        assert_eq!(
            p("min(fair, ask)").limit(&q, true, None),
            Some(Px::from_cents(123))
        );
        assert_eq!(
            p("max(intrinsic, bid)").limit(&q, true, None),
            Some(Px::from_cents(121))
        );
        // stub = 0.01; a number stays; intrinsic-5 goes negative -> one tick.
        assert_eq!(p("stub").limit(&q, true, None), Some(Px::CENT));
        assert_eq!(p("2.5").limit(&q, true, None), Some(Px::from_cents(250)));
        assert_eq!(p("intrinsic-5").limit(&q, true, None), Some(Px::CENT));
        // basis is UNKNOWN with no position; 1.00 + 20% = 1.20 with one.
        assert_eq!(p("basis+20%").limit(&q, false, None), None);
        assert_eq!(
            p("basis+20%").limit(&q, false, Some(1.0)),
            Some(Px::from_cents(120))
        );
        // Above 3.00 the option grid is 0.05: 3.07 buy -> 3.05.
        assert_eq!(p("3.07").limit(&q, true, None), Some(Px::from_cents(305)));
        assert_eq!(p("3.07").limit(&q, false, None), Some(Px::from_cents(310)));
    }
}
