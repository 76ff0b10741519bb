//! Fill models: named and versioned, so every report can say which one made its fills.

use crate::bus::BusSide;
use crate::market::Px;

/// A fill model decides when and at what price an order fills against the book.
pub trait FillModel: Send + Sync {
    /// Name and version, e.g. `strict-cross-v1`.
    fn name(&self) -> &'static str;
    /// At placement (and at every re-price, which is a new order for the book): the fill
    /// price if the order is marketable.
    fn on_place(&self, side: BusSide, limit: Px, bid: Px, ask: Px) -> Option<Px>;
    /// On a later book update while the order rests: the fill price, if it fills.
    fn on_book(&self, side: BusSide, limit: Px, bid: Px, ask: Px) -> Option<Px>;
}

/// `strict-cross-v1` (RUNTIME.md §4): a marketable order fills at the opposite best at
/// placement; a resting buy at limit L fills at L on the first book update whose ask is
/// strictly below L (a sell: bid strictly above L). Whole quantity, no partial fills.
#[derive(Debug, Clone, Copy, Default)]
pub struct StrictCrossV1;

impl FillModel for StrictCrossV1 {
    fn name(&self) -> &'static str {
        "strict-cross-v1"
    }

    fn on_place(&self, side: BusSide, limit: Px, bid: Px, ask: Px) -> Option<Px> {
        match side {
            BusSide::Buy => (ask > Px::ZERO && limit >= ask).then_some(ask),
            BusSide::Sell => (bid > Px::ZERO && limit <= bid).then_some(bid),
        }
    }

    fn on_book(&self, side: BusSide, limit: Px, bid: Px, ask: Px) -> Option<Px> {
        match side {
            BusSide::Buy => (ask > Px::ZERO && ask < limit).then_some(limit),
            BusSide::Sell => (bid > limit).then_some(limit),
        }
    }
}

/// The fill model with this name, if known.
pub fn by_name(name: &str) -> Option<Box<dyn FillModel>> {
    match name {
        "strict-cross-v1" => Some(Box::new(StrictCrossV1)),
        _ => None,
    }
}

/// Names of the known fill models.
pub const FILL_MODELS: &[&str] = &["strict-cross-v1"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_cross() {
        let m = StrictCrossV1;
        let c = Px::from_cents;
        // Marketable buy at 1.30 vs ask 1.26: fills at the ask.
        assert_eq!(
            m.on_place(BusSide::Buy, c(130), c(121), c(126)),
            Some(c(126))
        );
        // Resting buy at 1.20: ask 1.20 is not strictly below; 1.19 is -> fills at 1.20.
        assert_eq!(m.on_place(BusSide::Buy, c(120), c(115), c(122)), None);
        assert_eq!(m.on_book(BusSide::Buy, c(120), c(115), c(120)), None);
        assert_eq!(
            m.on_book(BusSide::Buy, c(120), c(114), c(119)),
            Some(c(120))
        );
        // Sell: marketable at bid; resting fills when bid > L.
        assert_eq!(
            m.on_place(BusSide::Sell, c(100), c(101), c(104)),
            Some(c(101))
        );
        assert_eq!(m.on_book(BusSide::Sell, c(105), c(105), c(108)), None);
        assert_eq!(
            m.on_book(BusSide::Sell, c(105), c(106), c(108)),
            Some(c(105))
        );
        // A zero bid never takes a sell.
        assert_eq!(m.on_place(BusSide::Sell, c(1), Px::ZERO, c(1)), None);
        assert_eq!(
            by_name("strict-cross-v1").map(|m| m.name()),
            Some("strict-cross-v1")
        );
        assert!(by_name("nope").is_none());
    }
}
