//! OHLC bars built from ticks, at a fixed base resolution, aggregated on demand.

use crate::market::{Px, Sym, Tick, Ts};

/// The base resolution of stored bars, in seconds. Any bar size that is a multiple of it can
/// be rendered; other sizes round up to the next multiple (the tape pane says so).
pub const BASE_SECS: u32 = 5;

/// One bar: open, high, low, close, and the time its interval starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bar {
    pub start: Ts,
    pub open: Px,
    pub high: Px,
    pub low: Px,
    pub close: Px,
}

/// Base bars of one symbol since the session open.
#[derive(Debug, Clone)]
pub struct Bars {
    sym: Sym,
    open: Ts,
    /// Base bars in time order (gaps are allowed: a base interval with no tick has no bar).
    bars: Vec<Bar>,
    /// The time of the last tick applied.
    last: Option<Ts>,
}

impl Bars {
    /// Bars of `sym` for a session opening at `open`.
    pub fn new(sym: Sym, open: Ts) -> Bars {
        Bars {
            sym,
            open,
            bars: Vec::with_capacity(4800),
            last: None,
        }
    }

    pub fn sym(&self) -> Sym {
        self.sym
    }

    /// Apply a tick (ticks of other symbols and before the open are ignored).
    pub fn apply(&mut self, t: &Tick) {
        if t.sym != self.sym || t.ts < self.open {
            return;
        }
        self.last = Some(t.ts);
        let idx = (t.ts.ms() - self.open.ms()) / (BASE_SECS * 1000);
        let start = Ts(self.open.ms() + idx * BASE_SECS * 1000);
        match self.bars.last_mut() {
            Some(b) if b.start == start => {
                b.high = b.high.max(t.px);
                b.low = b.low.min(t.px);
                b.close = t.px;
            }
            _ => self.bars.push(Bar {
                start,
                open: t.px,
                high: t.px,
                low: t.px,
                close: t.px,
            }),
        }
    }

    /// Completed bars of `size_secs` (rounded up to a multiple of [`BASE_SECS`]) as of
    /// `now`: a bar is complete once `now` has reached its end. Oldest first.
    pub fn completed(&self, size_secs: u32, now: Ts) -> Vec<Bar> {
        let size = effective_size(size_secs);
        let size_ms = size * 1000;
        let mut out: Vec<Bar> = Vec::new();
        for b in &self.bars {
            let idx = (b.start.ms() - self.open.ms()) / size_ms;
            let start = Ts(self.open.ms() + idx * size_ms);
            if start.ms() + size_ms > now.ms() {
                break;
            }
            match out.last_mut() {
                Some(a) if a.start == start => {
                    a.high = a.high.max(b.high);
                    a.low = a.low.min(b.low);
                    a.close = b.close;
                }
                _ => out.push(Bar { start, ..*b }),
            }
        }
        out
    }

    /// The time of the last tick applied.
    pub fn last_tick(&self) -> Option<Ts> {
        self.last
    }
}

/// A requested bar size as rendered: at least [`BASE_SECS`], rounded up to a multiple of it.
pub fn effective_size(size_secs: u32) -> u32 {
    let s = size_secs.max(BASE_SECS);
    s.div_ceil(BASE_SECS) * BASE_SECS
}
