//! One-minute candles of the charted symbols, built by the [`Session`](super::Session) as the
//! tape is applied (the desk keeps no bar state: it draws these from the snapshot and
//! aggregates them to 5 minutes when asked). Volume is the tape's print sizes (0 for an
//! index, whose prints carry no size).

use crate::market::{Tick, Ts};

/// The base candle, in seconds.
pub const CANDLE_SECS: u32 = 60;

/// One candle: its start (seconds since midnight), OHLC and volume.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candle {
    /// Start of the interval, seconds since midnight.
    pub start: u32,
    /// First print.
    pub open: f64,
    /// Highest print.
    pub high: f64,
    /// Lowest print.
    pub low: f64,
    /// Last print.
    pub close: f64,
    /// Sum of print sizes.
    pub volume: u64,
}

/// Candles of one symbol, oldest first (a minute with no print has no candle).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Candles {
    /// The symbol.
    pub sym: String,
    /// The candles.
    pub bars: Vec<Candle>,
}

impl Candles {
    /// No candles yet of `sym`.
    pub fn new(sym: &str) -> Candles {
        Candles {
            sym: sym.to_string(),
            bars: Vec::with_capacity(400),
        }
    }

    /// Apply a print (prints of other symbols are ignored).
    pub fn apply(&mut self, t: &Tick) {
        if t.sym.as_str() != self.sym {
            return;
        }
        let secs = t.ts.0 / 1000;
        let start = secs / CANDLE_SECS * CANDLE_SECS;
        let px = t.px.to_f64();
        match self.bars.last_mut() {
            Some(b) if b.start == start => {
                b.high = b.high.max(px);
                b.low = b.low.min(px);
                b.close = px;
                b.volume = b.volume.saturating_add(t.sz);
            }
            _ => self.bars.push(Candle {
                start,
                open: px,
                high: px,
                low: px,
                close: px,
                volume: t.sz,
            }),
        }
    }

    /// Forget every candle (a restart).
    pub fn clear(&mut self) {
        self.bars.clear();
    }

    /// Does any print carry a size?
    pub fn has_volume(&self) -> bool {
        self.bars.iter().any(|b| b.volume > 0)
    }

    /// The close of the candle holding `ts` (or the last before it).
    pub fn price_at(&self, ts: Ts) -> Option<f64> {
        let secs = ts.0 / 1000;
        let i = self.bars.partition_point(|b| b.start <= secs);
        self.bars.get(i.checked_sub(1)?).map(|b| b.close)
    }
}

/// Candles of `secs` (a multiple of [`CANDLE_SECS`]; others round up) from one-minute ones.
pub fn aggregate(bars: &[Candle], secs: u32) -> Vec<Candle> {
    let size = secs.max(CANDLE_SECS).div_ceil(CANDLE_SECS) * CANDLE_SECS;
    if size == CANDLE_SECS {
        return bars.to_vec();
    }
    let mut out: Vec<Candle> = Vec::with_capacity(bars.len() / 4 + 1);
    for b in bars {
        let start = b.start / size * size;
        match out.last_mut() {
            Some(a) if a.start == start => {
                a.high = a.high.max(b.high);
                a.low = a.low.min(b.low);
                a.close = b.close;
                a.volume = a.volume.saturating_add(b.volume);
            }
            _ => out.push(Candle { start, ..*b }),
        }
    }
    out
}

/// What a chart mark is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkKind {
    /// A plan fired (its entry clause held).
    Fire,
    /// A buy filled.
    Buy,
    /// A sell filled.
    Sell,
}

/// A fire or a fill for the chart.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartMark {
    /// Tape time, seconds since midnight.
    pub secs: u32,
    /// Fire, buy or sell.
    pub kind: MarkKind,
    /// The plan.
    pub plan: String,
    /// A fire's clause (`WHEN`, `TP#1`, `EXIT#1`; empty for a fill).
    pub clause: String,
    /// A fill's instrument key (empty for a fire).
    pub leg: String,
    /// A fill's quantity (0 for a fire).
    pub qty: u64,
    /// A fill's price (0 for a fire).
    pub px: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(start: u32, o: f64, h: f64, l: f64, cl: f64, v: u64) -> Candle {
        Candle {
            start,
            open: o,
            high: h,
            low: l,
            close: cl,
            volume: v,
        }
    }

    #[test]
    fn five_minute_candles_take_first_open_last_close_extremes_and_sum_volume() {
        let one = [
            c(34200, 10.0, 11.0, 9.5, 10.5, 3),
            c(34260, 10.5, 12.0, 10.0, 11.0, 4),
            c(34440, 11.0, 11.5, 8.0, 9.0, 5),
            c(34500, 9.0, 9.5, 8.5, 9.25, 1),
        ];
        let five = aggregate(&one, 300);
        assert_eq!(
            five,
            vec![
                c(34200, 10.0, 12.0, 8.0, 9.0, 12),
                c(34500, 9.0, 9.5, 8.5, 9.25, 1)
            ]
        );
        assert_eq!(aggregate(&one, 60), one.to_vec());
    }
}
