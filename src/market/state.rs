//! The market model: per-tape state updated one event at a time, reading only the past.
//!
//! # Series
//!
//! Per symbol: `spot` (last trade, including any pre-open trade), and the *session* series
//! computed from trades at or after the open: `hod`, `lod`, `open` (first trade at or after
//! the open), `vwap`, plus `prior-close` (header), `velocity(w)` and `time`.
//!
//! **VWAP**: size-weighted over session trades, `Σ px·sz / Σ sz`, exact in integers. For a
//! symbol whose session trades so far all have `sz = 0` (an index) it is the equal-weighted
//! mean of its session trade prices (one weight per tick). Once any trade has size, the
//! size-weighted form is used.
//!
//! # The one-second sample grid
//!
//! Sample `k` of a series is its value *as of* the instant `open + k` seconds (after every
//! event with `ts <= open + k`). A sample is recorded when the clock moves past its instant
//! (an event with a later `ts`, or [`MarketState::advance_to`]), for `k` from 0 to the close.
//! So at time `t` only samples of instants strictly before `t` exist: no look-ahead.
//!
//! **velocity(w)** = `100 · (spot(t) / spot_sample(j) − 1)` where `j` is the latest whole
//! second of the grid at or before `t − w` (percent; UNKNOWN until `t − w` reaches the open
//! and that sample has a spot).
//!
//! **Percentiles** compare with the series' own samples. `pN` uses linear interpolation
//! between closest ranks (`h = (n−1)·N/100`, `x[⌊h⌋] + (h−⌊h⌋)(x[⌊h⌋+1] − x[⌊h⌋])`) over the
//! `n` defined samples, and is UNKNOWN (`None`) while `n < MIN_PERCENTILE_SAMPLES`.
//! [`MarketState::track`] keeps a series' samples in a blocked order-statistics structure
//! (one insertion per second moves at most one block; a query is a binary search over the
//! blocks), holding exactly the sequence binary insertion into one sorted vector would; an
//! untracked series is computed on demand by sorting a copy (correct, slower).

use super::cents::{CentCounts, PctBound, RankHint};
use super::options::{
    BookQuote, Expiry, MoneyMemo, Quote, Right, ShareQuote, Smile, black_scholes, book_quote,
    book_quote_memo, open_interest, price_option,
};
use super::quote::{OptionKey, QuoteInst};
use super::tape::{Headline, TapeEvent, TapeHeader};
use super::types::{Date, Px, Sym, Ts};

/// Minimum number of samples before a percentile is defined (30 seconds of session).
pub const MIN_PERCENTILE_SAMPLES: usize = 30;

/// Length of `phase open` and `phase close`, in milliseconds (15 minutes).
pub const PHASE_MS: u32 = 15 * 60 * 1000;

/// A series a plan can read (LANGUAGE.md §3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Series {
    /// Last trade.
    Spot,
    /// Session high.
    Hod,
    /// Session low.
    Lod,
    /// Session VWAP.
    Vwap,
    /// First session trade.
    Open,
    /// Prior close (header).
    PriorClose,
    /// Percent change over the trailing window, in seconds (≥ 1).
    Velocity(u32),
    /// Clock, seconds since midnight.
    Time,
}

impl Series {
    /// The language spelling (`velocity` without its window).
    pub fn name(self) -> &'static str {
        match self {
            Series::Spot => "spot",
            Series::Hod => "hod",
            Series::Lod => "lod",
            Series::Vwap => "vwap",
            Series::Open => "open",
            Series::PriorClose => "prior-close",
            Series::Velocity(_) => "velocity",
            Series::Time => "time",
        }
    }
}

/// A series whose samples are kept sorted.
#[derive(Debug)]
struct Tracked {
    series: Series,
    sorted: Ranked,
}

/// A tracked series' order statistics: a price series on the cent grid counted by the cent
/// ([`CentCounts`]), anything else (or a price series once a sample is off the grid or the
/// range too wide) in [`SortedSamples`]. Both give every rank the same sample, bit for bit.
#[derive(Debug)]
enum Ranked {
    Cents(CentCounts),
    Blocks(SortedSamples),
}

impl Ranked {
    /// From sorted samples of `series`: counted by the cent when it is a price series whose
    /// samples allow it.
    fn from_sorted(series: Series, v: &[f64]) -> Ranked {
        if matches!(series, Series::Spot | Series::Hod | Series::Lod)
            && let Some(c) = CentCounts::from_sorted(v)
        {
            return Ranked::Cents(c);
        }
        Ranked::Blocks(SortedSamples::from_sorted(v))
    }

    fn len(&self) -> usize {
        match self {
            Ranked::Cents(c) => c.len(),
            Ranked::Blocks(b) => b.len(),
        }
    }

    /// Insert the sample of a price series (`None`: none, as NaN is), as
    /// [`insert`](Self::insert) of its `f64` does, the cents taken from the fixed point.
    #[inline]
    fn insert_px(&mut self, px: Option<Px>) {
        match self {
            Ranked::Cents(c) => {
                if !c.insert_px(px) {
                    self.make_blocks().insert(px_or_nan(px));
                }
            }
            Ranked::Blocks(b) => b.insert(px_or_nan(px)),
        }
    }

    /// Insert a sample (non-finite ones are ignored); a sample the counts cannot take moves
    /// every sample to the sorted blocks first.
    #[inline]
    fn insert(&mut self, x: f64) {
        match self {
            Ranked::Cents(c) => {
                if !c.insert(x) {
                    self.make_blocks().insert(x);
                }
            }
            Ranked::Blocks(b) => b.insert(x),
        }
    }

    #[cold]
    fn make_blocks(&mut self) -> &mut SortedSamples {
        if let Ranked::Cents(c) = self {
            let v = c.to_sorted();
            *self = Ranked::Blocks(SortedSamples::from_sorted(&v));
        }
        match self {
            Ranked::Blocks(b) => b,
            Ranked::Cents(_) => unreachable!("moved to the blocks above"),
        }
    }

    #[inline]
    fn get_pair_from(&self, k: usize, hint: &mut RankHint) -> Option<(f64, Option<f64>)> {
        match self {
            Ranked::Cents(c) => c.get_pair_from(k, hint),
            Ranked::Blocks(b) => b.get_pair_from(k, &mut hint.block),
        }
    }
}

/// Samples per block of [`SortedSamples`] (a block splits in two when it reaches twice this).
const BLOCK: usize = 128;

/// An order-statistics structure over `f64` samples: the sorted sequence cut into blocks of
/// `BLOCK..2·BLOCK` values, with each block's starting rank. Insertion moves at most one
/// block's values (instead of half the session's, as one sorted vector would), and the
/// `k`-th value is a binary search over the block starts.
///
/// The sequence is exactly the one binary insertion into a single sorted vector builds
/// (each value goes after every value `<=` it), so every percentile is bit-for-bit the
/// same.
#[derive(Debug, Default, Clone)]
struct SortedSamples {
    blocks: Vec<Vec<f64>>,
    /// Rank of each block's first value.
    starts: Vec<usize>,
    /// Each block's last value (`+inf` for an empty block), side by side: the block an
    /// insertion goes to is found without visiting the blocks.
    lasts: Vec<f64>,
    len: usize,
    /// Where the previous value went (block, index): a sampled series moves little from one
    /// second to the next, so the next value usually goes at or near it. Only a hint (after
    /// a block splits it may point past its block's end): checked at every insertion, and
    /// searched for when wrong.
    hint: (usize, usize),
}

impl SortedSamples {
    /// From values already in order.
    fn from_sorted(v: &[f64]) -> SortedSamples {
        let mut out = SortedSamples::default();
        for c in v.chunks(BLOCK) {
            let mut b = Vec::with_capacity(2 * BLOCK);
            b.extend_from_slice(c);
            out.starts.push(out.len);
            out.len += c.len();
            out.lasts.push(b.last().copied().unwrap_or(f64::INFINITY));
            out.blocks.push(b);
        }
        out
    }

    fn len(&self) -> usize {
        self.len
    }

    /// Insert a finite value after every value `<=` it (others are ignored).
    fn insert(&mut self, x: f64) {
        if !x.is_finite() {
            return;
        }
        if self.blocks.is_empty() {
            self.blocks.push(Vec::with_capacity(2 * BLOCK));
            self.starts.push(0);
            self.lasts.push(f64::INFINITY);
        }
        // The first block whose last value is > x takes it (or the last block): every value
        // before that block is <= x, so this is the single vector's insertion point.
        let last = self.blocks.len() - 1;
        let (h, hi) = self.hint;
        let bi = if h <= last
            && (h == 0 || self.lasts[h - 1] <= x)
            && (h == last || self.lasts[h] > x)
        {
            h
        } else {
            self.lasts.partition_point(|&y| y <= x).min(last)
        };
        let b = &mut self.blocks[bi];
        let i = if bi == h {
            partition_near(b, x, hi)
        } else {
            b.partition_point(|&y| y <= x)
        };
        b.insert(i, x);
        self.hint = (bi, i);
        self.len += 1;
        for s in &mut self.starts[bi + 1..] {
            *s += 1;
        }
        if b.len() >= 2 * BLOCK {
            let mut tail = Vec::with_capacity(2 * BLOCK);
            tail.extend_from_slice(&b[BLOCK..]);
            b.truncate(BLOCK);
            let tail_last = tail.last().copied().unwrap_or(f64::INFINITY);
            self.blocks.insert(bi + 1, tail);
            self.starts.insert(bi + 1, self.starts[bi] + BLOCK);
            self.lasts.insert(bi + 1, tail_last);
        }
        let b = &self.blocks[bi];
        self.lasts[bi] = b.last().copied().unwrap_or(f64::INFINITY);
    }

    /// The values of ranks `k` and `k + 1` (0-based), with one search when both are in one
    /// block.
    #[cfg(test)]
    fn get_pair(&self, k: usize) -> Option<(f64, Option<f64>)> {
        let mut hint = usize::MAX;
        self.get_pair_from(k, &mut hint)
    }

    /// [`get_pair`](Self::get_pair) starting from block `hint` (where the previous read of
    /// the same percentile found its rank; set to where this one does): no search while the
    /// rank stays in that block.
    fn get_pair_from(&self, k: usize, hint: &mut usize) -> Option<(f64, Option<f64>)> {
        if k >= self.len {
            return None;
        }
        let h = *hint;
        let bi = if self.starts.get(h).is_some_and(|&s| s <= k)
            && self.starts.get(h + 1).is_none_or(|&s| s > k)
        {
            h
        } else {
            self.starts.partition_point(|&s| s <= k).checked_sub(1)?
        };
        *hint = bi;
        let b = self.blocks.get(bi)?;
        let i = k - self.starts[bi];
        let a = *b.get(i)?;
        let next = match b.get(i + 1) {
            Some(&x) => Some(x),
            None => self.blocks.get(bi + 1).and_then(|n| n.first().copied()),
        };
        Some((a, next))
    }

    /// The value of rank `k` (0-based): the tests' reference for [`get_pair`](Self::get_pair).
    #[cfg(test)]
    fn get(&self, k: usize) -> Option<f64> {
        if k >= self.len {
            return None;
        }
        let bi = self.starts.partition_point(|&s| s <= k).checked_sub(1)?;
        self.blocks.get(bi)?.get(k - self.starts[bi]).copied()
    }
}

/// Per-symbol state.
#[derive(Debug)]
struct SymState {
    sym: Sym,
    prior_close: Px,
    strike_step: Option<Px>,
    smile: Option<Smile>,
    last: Option<Px>,
    open: Option<Px>,
    open_at: Option<Ts>,
    hod: Option<Px>,
    lod: Option<Px>,
    /// HOD / LOD before the symbol's latest print (what triggers compare against).
    hod_before: Option<Px>,
    lod_before: Option<Px>,
    /// Σ px_raw · sz over session trades.
    vw_num: i128,
    /// Σ sz over session trades.
    vw_den: u128,
    /// Σ px_raw over session trades (equal weights).
    eq_num: i128,
    /// Number of session trades.
    eq_den: u64,
    /// Samples on the one-second grid (NaN = not defined at that instant).
    spot_s: Vec<f64>,
    hod_s: Vec<f64>,
    lod_s: Vec<f64>,
    vwap_s: Vec<f64>,
    tracked: Vec<Tracked>,
    /// The latest `quote` for the symbol itself (bid, ask); `None` on a tape without one.
    book: Option<(Px, Px)>,
    /// The latest `quote` of each option contract on the symbol (v2 tapes), sorted by
    /// [`OptionKey::order`]: these replace the spread model's book for that contract.
    opt_books: Vec<((i64, u8, i64), Px, Px)>,
}

impl SymState {
    /// The tape's latest quote of one contract, if any.
    fn opt_book(&self, expiry: Date, right: Right, strike: Px) -> Option<(Px, Px)> {
        if self.opt_books.is_empty() {
            return None;
        }
        let key = OptionKey {
            root: self.sym,
            expiry,
            right,
            strike,
        }
        .order();
        self.opt_books
            .binary_search_by_key(&key, |e| e.0)
            .ok()
            .map(|i| (self.opt_books[i].1, self.opt_books[i].2))
    }

    fn vwap(&self) -> Option<f64> {
        if self.vw_den > 0 {
            Some(i128_f64(self.vw_num) / u128_f64(self.vw_den) / 1e4)
        } else if self.eq_den > 0 {
            Some(i128_f64(self.eq_num) / self.eq_den as f64 / 1e4)
        } else {
            None
        }
    }

    fn samples(&self, s: Series) -> Option<&[f64]> {
        match s {
            Series::Spot => Some(&self.spot_s),
            Series::Hod => Some(&self.hod_s),
            Series::Lod => Some(&self.lod_s),
            Series::Vwap => Some(&self.vwap_s),
            _ => None,
        }
    }

    /// Count grid sample `k` (just recorded) into the tracked series: a price series from
    /// its fixed point (the sample just pushed is its `f64`), the others as sampled.
    #[inline(always)]
    fn sample_tracked(&mut self, k: usize) {
        for t in 0..self.tracked.len() {
            let px = match self.tracked[t].series {
                Series::Spot => Some(self.last),
                Series::Hod => Some(self.hod),
                Series::Lod => Some(self.lod),
                _ => None,
            };
            match px {
                Some(px) => self.tracked[t].sorted.insert_px(px),
                None => {
                    let x = self.sample_at(self.tracked[t].series, k);
                    self.tracked[t].sorted.insert(x);
                }
            }
        }
    }

    /// The value of a sampled series at grid index `k` (NaN if undefined).
    fn sample_at(&self, s: Series, k: usize) -> f64 {
        match s {
            Series::Velocity(w) => {
                let w = w as usize;
                if w == 0 || k < w {
                    return f64::NAN;
                }
                let (Some(&now), Some(&then)) = (self.spot_s.get(k), self.spot_s.get(k - w)) else {
                    return f64::NAN;
                };
                velocity_pct(now, then)
            }
            _ => self
                .samples(s)
                .and_then(|v| v.get(k).copied())
                .unwrap_or(f64::NAN),
        }
    }
}

/// `b.partition_point(|&y| y <= x)` for a sorted `b`, found by stepping from `from` when it
/// is within [`NEAR`] steps of it (the hint of [`SortedSamples::insert`]), else by halving.
/// A step reads the neighbours of the previous insertion, already in cache; a halving's
/// reads each wait for the one before.
#[inline]
fn partition_near(b: &[f64], x: f64, from: usize) -> usize {
    let mut j = from.min(b.len());
    if j > 0 && b[j - 1] > x {
        // Down: the first value > x is at or before j - 1.
        for _ in 0..NEAR {
            j -= 1;
            if j == 0 || b[j - 1] <= x {
                return j;
            }
        }
    } else {
        // Up: every value before j is <= x.
        for _ in 0..NEAR {
            if j == b.len() || b[j] > x {
                return j;
            }
            j += 1;
        }
    }
    b.partition_point(|&y| y <= x)
}

/// How far [`partition_near`] steps before it halves instead.
const NEAR: usize = 8;

fn px_or_nan(p: Option<Px>) -> f64 {
    p.map_or(f64::NAN, Px::to_f64)
}

fn velocity_pct(now: f64, then: f64) -> f64 {
    if now.is_finite() && then.is_finite() && then > 0.0 {
        100.0 * (now / then - 1.0)
    } else {
        f64::NAN
    }
}

/// Insert into a sorted vector (finite values only): the reference [`SortedSamples`] is
/// tested against.
#[cfg(test)]
fn insert_sorted(v: &mut Vec<f64>, x: f64) {
    if x.is_finite() {
        let i = v.partition_point(|&y| y <= x);
        v.insert(i, x);
    }
}

/// Linear-interpolation percentile of sorted values.
fn percentile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    percentile_ranked(sorted.len(), p, |k| {
        Some((*sorted.get(k)?, sorted.get(k + 1).copied()))
    })
}

/// An `i128` as the nearest `f64` (`as f64`), through the one-instruction `i64`
/// conversion when it fits (both round the same exact integer to nearest).
///
/// The `i64` is passed through [`std::hint::black_box`]: the compiler otherwise sees that
/// both arms give the same value and keeps only the 128-bit conversion (a library call of
/// about 45 instructions), which is what this function is here to avoid.
pub(crate) fn i128_f64(x: i128) -> f64 {
    match i64::try_from(x) {
        Ok(v) => std::hint::black_box(v) as f64,
        Err(_) => x as f64,
    }
}

/// A `u128` as the nearest `f64` (`as f64`), through `u64` when it fits.
fn u128_f64(x: u128) -> f64 {
    match u64::try_from(x) {
        Ok(v) => v as f64,
        Err(_) => x as f64,
    }
}

/// The rank a percentile `p` of `n` sorted values reads and its fraction towards the next
/// (`None`: UNKNOWN, too few samples or `p` out of range).
#[inline(always)]
fn rank_of(n: usize, p: f64) -> Option<(usize, f64)> {
    if n < MIN_PERCENTILE_SAMPLES || !(0.0..=100.0).contains(&p) {
        return None;
    }
    // `n` is a sample count (far below 2^63): through `i64` the conversions are one
    // instruction each, and give the same values as `usize`'s (exact integers either way).
    let h = (n - 1) as i64 as f64 * p / 100.0;
    // `h` is finite, not negative and at most `n - 1`: truncation is `floor`, exact in `i64`.
    let lo = h as i64;
    Some((lo as usize, h - lo as f64))
}

/// Linear-interpolation percentile of `n` sorted values, read by rank with `at`.
#[inline]
fn percentile_ranked(
    n: usize,
    p: f64,
    at: impl FnOnce(usize) -> Option<(f64, Option<f64>)>,
) -> Option<f64> {
    let (lo, frac) = rank_of(n, p)?;
    let (a, b) = at(lo)?;
    match b {
        Some(b) if frac > 0.0 => Some(a + frac * (b - a)),
        _ => Some(a),
    }
}

/// The market state of one tape, updated with [`MarketState::apply`].
#[derive(Debug)]
pub struct MarketState {
    date: Date,
    open: Ts,
    close: Ts,
    rate: f64,
    syms: Vec<SymState>,
    now: Option<Ts>,
    /// Number of grid samples recorded (same for every symbol).
    sampled: usize,
    /// Grid length: samples 0..=session seconds.
    grid_len: usize,
    headlines: Vec<Headline>,
    /// The tape's header (for the next session of a multi-session tape).
    base: Box<TapeHeader>,
    /// This state's own number (a new session's state has another): what a reader's
    /// [`PctBound`] was found in.
    generation: u64,
}

/// The next [`MarketState`]'s `generation`.
static NEXT_GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl MarketState {
    /// A fresh state for a tape with this header. Sample storage for the whole session is
    /// allocated here, so [`apply`](Self::apply) does not allocate in the steady state.
    pub fn new(header: &TapeHeader) -> MarketState {
        let grid_len = ((header.close.ms().saturating_sub(header.open.ms())) / 1000) as usize + 1;
        let syms = header
            .symbols
            .iter()
            .map(|s| SymState {
                sym: s.sym,
                prior_close: s.prior_close,
                strike_step: s.strike_step,
                smile: header.vol_of(s.sym.as_str()).map(|v| Smile {
                    atm_iv: v.atm_iv,
                    skew: v.skew,
                }),
                last: None,
                open: None,
                open_at: None,
                hod: None,
                lod: None,
                hod_before: None,
                lod_before: None,
                vw_num: 0,
                vw_den: 0,
                eq_num: 0,
                eq_den: 0,
                spot_s: Vec::with_capacity(grid_len),
                hod_s: Vec::with_capacity(grid_len),
                lod_s: Vec::with_capacity(grid_len),
                vwap_s: Vec::with_capacity(grid_len),
                tracked: Vec::new(),
                book: None,
                opt_books: Vec::new(),
            })
            .collect();
        MarketState {
            date: header.date,
            open: header.open,
            close: header.close,
            rate: header.rate,
            syms,
            now: None,
            sampled: 0,
            grid_len,
            headlines: Vec::new(),
            base: Box::new(header.clone()),
            generation: NEXT_GENERATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// This state's own number: a new session's state (or another tape's) has another, so
    /// a [`PctBound`] found in one is not taken for another's.
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Start a new session (a `session` event): every per-session value (spot, hod, lod,
    /// open, vwap, samples, quotes, smiles, headlines, the clock) starts again from the
    /// session's header, as on a one-session tape of that session. The series tracked for
    /// percentiles stay tracked.
    pub fn start_session(&mut self, s: &super::tape::SessionSpec) {
        let header = self.base.for_session(s);
        let tracked: Vec<(Sym, Series)> = self
            .syms
            .iter()
            .flat_map(|x| x.tracked.iter().map(move |t| (x.sym, t.series)))
            .collect();
        let mut next = MarketState::new(&header);
        // The file's header stays the base (each session is derived from it).
        std::mem::swap(&mut next.base, &mut self.base);
        *self = next;
        for (sym, series) in tracked {
            self.track(sym.as_str(), series);
        }
    }

    fn sym(&self, sym: &str) -> Option<&SymState> {
        let b = sym.as_bytes();
        self.syms.iter().find(|s| s.sym.as_bytes() == b)
    }

    fn sym_of(&self, sym: Sym) -> Option<&SymState> {
        self.syms.iter().find(|s| s.sym == sym)
    }

    /// Where a symbol's state is, for the by-index reads ([`value_of`](Self::value_of),
    /// [`book_quote_at`](Self::book_quote_at), [`share_quote_at`](Self::share_quote_at)): fixed
    /// for the session.
    pub fn sym_index(&self, sym: Sym) -> Option<usize> {
        self.syms.iter().position(|s| s.sym == sym)
    }

    /// Move the clock to `ts`, recording every grid sample whose instant is before `ts`.
    /// A `ts` earlier than the current clock is ignored (the clock never goes back).
    pub fn advance_to(&mut self, ts: Ts) {
        if self.now.is_some_and(|n| ts < n) {
            return;
        }
        let open_ms = u64::from(self.open.ms());
        while self.sampled < self.grid_len
            && open_ms + (self.sampled as u64) * 1000 < u64::from(ts.ms())
        {
            let k = self.sampled;
            for s in &mut self.syms {
                s.spot_s.push(px_or_nan(s.last));
                s.hod_s.push(px_or_nan(s.hod));
                s.lod_s.push(px_or_nan(s.lod));
                s.vwap_s.push(s.vwap().unwrap_or(f64::NAN));
                if !s.tracked.is_empty() {
                    s.sample_tracked(k);
                }
            }
            self.sampled += 1;
        }
        self.now = Some(ts);
    }

    /// Apply one tape event (after recording the grid samples before its time). Events for
    /// symbols the header does not carry are ignored (the reader already refuses them).
    pub fn apply(&mut self, ev: &TapeEvent) {
        if let TapeEvent::Session(s) = ev {
            self.start_session(s);
            return;
        }
        self.advance_to(ev.ts());
        let open = self.open;
        match ev {
            TapeEvent::Tick(t) => {
                let Some(i) = self.sym_index(t.sym) else {
                    return;
                };
                let s = &mut self.syms[i];
                s.last = Some(t.px);
                if t.ts >= open {
                    if s.open.is_none() {
                        s.open = Some(t.px);
                        s.open_at = Some(t.ts);
                    }
                    s.hod_before = s.hod;
                    s.lod_before = s.lod;
                    s.hod = Some(s.hod.map_or(t.px, |h| h.max(t.px)));
                    s.lod = Some(s.lod.map_or(t.px, |l| l.min(t.px)));
                    let raw = i128::from(t.px.raw());
                    s.vw_num = s
                        .vw_num
                        .saturating_add(raw.saturating_mul(i128::from(t.sz)));
                    s.vw_den = s.vw_den.saturating_add(u128::from(t.sz));
                    s.eq_num = s.eq_num.saturating_add(raw);
                    s.eq_den = s.eq_den.saturating_add(1);
                }
            }
            TapeEvent::Iv(iv) => {
                let Some(i) = self.sym_index(iv.sym) else {
                    return;
                };
                let s = &mut self.syms[i];
                let skew = iv.skew.or(s.smile.map(|v| v.skew)).unwrap_or(0.0);
                s.smile = Some(Smile {
                    atm_iv: iv.atm_iv,
                    skew,
                });
            }
            TapeEvent::Headline(h) => self.headlines.push(h.clone()),
            TapeEvent::Session(_) => {}
            TapeEvent::Quote(q) => {
                let Some(i) = self.sym_index(q.inst.sym()) else {
                    return;
                };
                let s = &mut self.syms[i];
                match q.inst {
                    QuoteInst::Sym(_) => s.book = Some((q.bid, q.ask)),
                    QuoteInst::Option(k) => {
                        let key = k.order();
                        match s.opt_books.binary_search_by_key(&key, |e| e.0) {
                            Ok(j) => s.opt_books[j] = (key, q.bid, q.ask),
                            Err(j) => s.opt_books.insert(j, (key, q.bid, q.ask)),
                        }
                    }
                }
            }
        }
    }

    /// Whether the tape has quoted this contract (its book is the tape's, not the model's).
    pub fn option_quoted(&self, sym: &str, expiry: Expiry, strike: Px, right: Right) -> bool {
        let (Some(s), Some(d)) = (self.sym(sym), expiry.resolve(self.date)) else {
            return false;
        };
        s.opt_book(d, right, strike).is_some()
    }

    /// Whether the tape has quoted the symbol itself (its book is the tape's, not last ±
    /// 0.01).
    pub fn share_quoted(&self, sym: &str) -> bool {
        self.sym(sym).is_some_and(|s| s.book.is_some())
    }

    // ----- clock --------------------------------------------------------------------------

    /// Tape time of the last event (or [`advance_to`](Self::advance_to)).
    pub fn now(&self) -> Option<Ts> {
        self.now
    }

    /// Session date.
    pub fn date(&self) -> Date {
        self.date
    }

    /// Session open (header).
    pub fn open_time(&self) -> Ts {
        self.open
    }

    /// Session close (header).
    pub fn close_time(&self) -> Ts {
        self.close
    }

    /// `phase open`: `open <= now < open + 15m`.
    pub fn phase_open(&self) -> bool {
        self.now
            .is_some_and(|n| n >= self.open && n.ms() < self.open.ms() + PHASE_MS)
    }

    /// `phase close`: `close − 15m <= now <= close`.
    pub fn phase_close(&self) -> bool {
        self.now
            .is_some_and(|n| n.ms() >= self.close.ms().saturating_sub(PHASE_MS) && n <= self.close)
    }

    /// Minutes from now to the close (negative after it); `None` before the first event.
    pub fn minutes_to_close(&self) -> Option<f64> {
        self.now
            .map(|n| (f64::from(self.close.ms()) - f64::from(n.ms())) / 60_000.0)
    }

    /// `T-n`: true from `n` minutes before the close onwards.
    pub fn t_minus(&self, minutes: f64) -> bool {
        self.minutes_to_close().is_some_and(|m| m <= minutes)
    }

    // ----- series -------------------------------------------------------------------------

    /// Whether the tape carries this symbol.
    pub fn has_symbol(&self, sym: &str) -> bool {
        self.sym(sym).is_some()
    }

    /// The tape's symbols, in header order (sorted).
    pub fn symbols(&self) -> impl Iterator<Item = Sym> + '_ {
        self.syms.iter().map(|s| s.sym)
    }

    /// The first symbol with an option chain (a `strike_step` in the header).
    pub fn exec_symbol(&self) -> Option<Sym> {
        self.syms
            .iter()
            .find(|s| s.strike_step.is_some())
            .map(|s| s.sym)
    }

    /// Last trade.
    pub fn spot(&self, sym: &str) -> Option<Px> {
        self.sym(sym)?.last
    }

    /// Session high.
    pub fn hod(&self, sym: &str) -> Option<Px> {
        self.sym(sym)?.hod
    }

    /// Session low.
    pub fn lod(&self, sym: &str) -> Option<Px> {
        self.sym(sym)?.lod
    }

    /// The session high before the symbol's latest print (UNKNOWN until a second print).
    /// Triggers compare against this: a print above it is a new high, so `spot crosses
    /// above hod` is a breakout and `spot > hod` holds while price keeps making highs.
    pub fn hod_before(&self, sym: &str) -> Option<Px> {
        self.sym(sym)?.hod_before
    }

    /// The session low before the symbol's latest print (see [`hod_before`](Self::hod_before)).
    pub fn lod_before(&self, sym: &str) -> Option<Px> {
        self.sym(sym)?.lod_before
    }

    /// First session trade.
    pub fn open_px(&self, sym: &str) -> Option<Px> {
        self.sym(sym)?.open
    }

    /// Prior close (header).
    pub fn prior_close(&self, sym: &str) -> Option<Px> {
        Some(self.sym(sym)?.prior_close)
    }

    /// Session VWAP (see the module docs for the weights).
    pub fn vwap(&self, sym: &str) -> Option<f64> {
        self.sym(sym)?.vwap()
    }

    /// Percent change of spot over the trailing `window_secs` (≥ 1), on the sample grid.
    pub fn velocity(&self, sym: &str, window_secs: u32) -> Option<f64> {
        self.velocity_in(self.sym(sym)?, window_secs)
    }

    fn velocity_in(&self, s: &SymState, window_secs: u32) -> Option<f64> {
        let now = self.now?;
        let spot = s.last?;
        if window_secs == 0 {
            return None;
        }
        let back = u64::from(now.ms()).checked_sub(u64::from(window_secs) * 1000)?;
        let since_open = back.checked_sub(u64::from(self.open.ms()))?;
        let j = usize::try_from(since_open / 1000).ok()?;
        let then = *s.spot_s.get(j)?;
        let v = velocity_pct(spot.to_f64(), then);
        v.is_finite().then_some(v)
    }

    /// Seconds since midnight of the clock.
    pub fn time_secs(&self) -> Option<f64> {
        self.now.map(Ts::secs_f64)
    }

    /// The value of any series as triggers read it, as `f64`; `None` is UNKNOWN (unknown
    /// symbol, or not yet defined). `hod` and `lod` read the extremes **before** the latest
    /// print ([`hod_before`](Self::hod_before)), so a comparison with `spot` can be true.
    pub fn value(&self, sym: &str, series: Series) -> Option<f64> {
        self.value_in(self.sym(sym)?, series)
    }

    /// [`value`](Self::value) by the symbol's [`sym_index`](Self::sym_index) (no search: the
    /// engine's per-event reads); `None` for an index past the symbols.
    pub fn value_of(&self, sym: usize, series: Series) -> Option<f64> {
        self.value_in(self.syms.get(sym)?, series)
    }

    fn value_in(&self, s: &SymState, series: Series) -> Option<f64> {
        match series {
            Series::Spot => s.last.map(Px::to_f64),
            Series::Hod => s.hod_before.map(Px::to_f64),
            Series::Lod => s.lod_before.map(Px::to_f64),
            Series::Vwap => s.vwap(),
            Series::Open => s.open.map(Px::to_f64),
            Series::PriorClose => Some(s.prior_close.to_f64()),
            Series::Velocity(w) => self.velocity_in(s, w),
            Series::Time => self.time_secs(),
        }
    }

    /// Keep `series` of `sym` in an order-statistics structure so that
    /// [`percentile`](Self::percentile) is O(1). Back-fills from the samples so far (past
    /// only). Idempotent; returns `false` for an unknown symbol or a series that needs no
    /// tracking (`open`, `prior-close`, `time` are answered in closed form).
    pub fn track(&mut self, sym: &str, series: Series) -> bool {
        if matches!(series, Series::Open | Series::PriorClose | Series::Time)
            || series == Series::Velocity(0)
        {
            return false;
        }
        let sampled = self.sampled;
        let Some(s) = self
            .syms
            .iter_mut()
            .find(|s| s.sym.as_bytes() == sym.as_bytes())
        else {
            return false;
        };
        if s.tracked.iter().any(|t| t.series == series) {
            return true;
        }
        let mut sorted = Vec::with_capacity(sampled);
        sorted.extend(
            (0..sampled)
                .map(|k| s.sample_at(series, k))
                .filter(|x| x.is_finite()),
        );
        sorted.sort_by(f64::total_cmp);
        s.tracked.push(Tracked {
            series,
            sorted: Ranked::from_sorted(series, &sorted),
        });
        true
    }

    /// The `p`-th percentile (0..=100) of `series`' own one-second samples since the open,
    /// up to now (no look-ahead). `None` (UNKNOWN) for an unknown symbol, `p` out of range,
    /// or fewer than [`MIN_PERCENTILE_SAMPLES`] defined samples.
    pub fn percentile(&self, sym: &str, series: Series, p: f64) -> Option<f64> {
        let mut hint = RankHint::default();
        self.percentile_in(self.sym(sym)?, series, p, &mut hint)
    }

    /// [`percentile`](Self::percentile) by the symbol's [`sym_index`](Self::sym_index), for a
    /// caller that reads the same percentile again and again: `hint` (its own, `usize::MAX`
    /// at first) keeps where the previous read found its rank, so the next one does not
    /// search while it stays there. `None` for an index past the symbols.
    #[inline]
    pub fn percentile_at(
        &self,
        sym: usize,
        series: Series,
        p: f64,
        hint: &mut RankHint,
    ) -> Option<f64> {
        let s = self.syms.get(sym)?;
        // A tracked series (the engine's percentile slots) straight to its ranks: what
        // `percentile_in` does for it (`open`, `prior-close`, `time` and `velocity(0)` are
        // never tracked), without its call and dispatch.
        if let Some(t) = s.tracked.iter().find(|t| t.series == series) {
            let t = &t.sorted;
            return percentile_ranked(t.len(), p, |k| t.get_pair_from(k, hint));
        }
        self.percentile_in(s, series, p, hint)
    }

    /// [`percentile_at`](Self::percentile_at), and bounds on it for the next samples
    /// placed between it and `x` (the value compared with it: [`PctBound`]) when the series
    /// is counted by the cent; [`PctBound::NONE`] otherwise.
    #[inline]
    pub fn percentile_bounded_at(
        &self,
        sym: usize,
        series: Series,
        p: f64,
        hint: &mut RankHint,
        x: f64,
    ) -> (Option<f64>, PctBound) {
        let Some(s) = self.syms.get(sym) else {
            return (None, PctBound::NONE);
        };
        // As `percentile_at` reads it, the series found once.
        match s
            .tracked
            .iter()
            .find(|t| t.series == series)
            .map(|t| &t.sorted)
        {
            Some(Ranked::Cents(c)) => {
                let v = percentile_ranked(c.len(), p, |k| c.get_pair_from(k, hint));
                let b = match (v, rank_of(c.len(), p)) {
                    (Some(_), Some((k, _))) => c.bound(hint, k, x),
                    _ => PctBound::NONE,
                };
                (v, b)
            }
            Some(t) => (
                percentile_ranked(t.len(), p, |k| t.get_pair_from(k, hint)),
                PctBound::NONE,
            ),
            None => (self.percentile_in(s, series, p, hint), PctBound::NONE),
        }
    }

    fn percentile_in(
        &self,
        s: &SymState,
        series: Series,
        p: f64,
        hint: &mut RankHint,
    ) -> Option<f64> {
        if !(0.0..=100.0).contains(&p) {
            return None;
        }
        let n = self.sampled;
        match series {
            Series::PriorClose => (n >= MIN_PERCENTILE_SAMPLES).then(|| s.prior_close.to_f64()),
            Series::Open => {
                let (o, at) = (s.open?, s.open_at?);
                // Samples with instant >= the first session trade.
                let first = (at.ms().saturating_sub(self.open.ms())).div_ceil(1000) as usize;
                (n.saturating_sub(first) >= MIN_PERCENTILE_SAMPLES).then(|| o.to_f64())
            }
            Series::Time => {
                if n < MIN_PERCENTILE_SAMPLES {
                    return None;
                }
                let h = (n - 1) as f64 * p / 100.0;
                Some(self.open.secs_f64() + h)
            }
            Series::Velocity(0) => None,
            _ => {
                if let Some(t) = s.tracked.iter().find(|t| t.series == series) {
                    let t = &t.sorted;
                    return percentile_ranked(t.len(), p, |k| t.get_pair_from(k, hint));
                }
                let mut v: Vec<f64> = (0..n)
                    .map(|k| s.sample_at(series, k))
                    .filter(|x| x.is_finite())
                    .collect();
                v.sort_by(f64::total_cmp);
                percentile_sorted(&v, p)
            }
        }
    }

    /// Number of one-second samples recorded so far.
    pub fn samples_recorded(&self) -> usize {
        self.sampled
    }

    // ----- options and shares ---------------------------------------------------------------

    /// Current smile parameters of a symbol (header `vol`, updated by `iv` events).
    pub fn smile(&self, sym: &str) -> Option<Smile> {
        self.sym(sym)?.smile
    }

    /// Strike grid of a symbol's chain.
    pub fn strike_step(&self, sym: &str) -> Option<Px> {
        self.sym(sym)?.strike_step
    }

    /// The at-the-money strike: the grid strike nearest to spot (a tie goes to the higher
    /// strike).
    pub fn atm_strike(&self, sym: &str) -> Option<Px> {
        let s = self.sym(sym)?;
        let step = s.strike_step?.raw();
        let spot = s.last?.raw();
        let n = spot.saturating_add(step / 2).div_euclid(step);
        Some(Px(n * step))
    }

    /// `ATM + atm_offset` grid steps (`+2` = two strikes above ATM). `None` if spot is not
    /// yet known, the symbol has no chain, or the strike would not be positive.
    pub fn strike_for(&self, sym: &str, atm_offset: i32) -> Option<Px> {
        let atm = self.atm_strike(sym)?;
        let step = self.strike_step(sym)?;
        let k = atm
            .raw()
            .checked_add(step.raw().checked_mul(i64::from(atm_offset))?)?;
        (k > 0).then_some(Px(k))
    }

    /// Time to expiry in years: from now to the close on the expiry date, over a 365-day
    /// year, floored at [`MIN_T_YEARS`](super::options::MIN_T_YEARS).
    #[inline(always)]
    pub fn years_to_expiry(&self, expiry: Expiry) -> Option<f64> {
        let days = match expiry {
            // Today's: no calendar arithmetic.
            Expiry::ZeroDte => 0,
            _ => expiry.resolve(self.date)?.days() - self.date.days(),
        };
        let now = self.now?;
        let secs =
            days as f64 * 86_400.0 + (f64::from(self.close.ms()) - f64::from(now.ms())) / 1000.0;
        Some((secs / (365.0 * 86_400.0)).max(super::options::MIN_T_YEARS))
    }

    /// Price a contract on a symbol's chain. `None` (UNKNOWN) if the symbol has no chain or
    /// smile, spot is unknown, the strike is not positive or not on the strike grid, or the
    /// expiry is in the past.
    pub fn quote(&self, sym: &str, expiry: Expiry, strike: Px, right: Right) -> Option<Quote> {
        self.quote_in(self.sym(sym)?, expiry, strike, right)
    }

    /// [`quote`](Self::quote)'s book (fair, bid, ask, mid, last, intrinsic) by [`Sym`],
    /// without greeks or open interest: the same values, at a fraction of the cost.
    pub fn book_quote_sym(
        &self,
        sym: Sym,
        expiry: Expiry,
        strike: Px,
        right: Right,
    ) -> Option<BookQuote> {
        self.book_quote_at(self.sym_index(sym)?, expiry, strike, right)
    }

    /// [`book_quote_sym`](Self::book_quote_sym) by the symbol's
    /// [`sym_index`](Self::sym_index) (no search: the engine's re-pricing).
    pub fn book_quote_at(
        &self,
        sym: usize,
        expiry: Expiry,
        strike: Px,
        right: Right,
    ) -> Option<BookQuote> {
        let s = self.syms.get(sym)?;
        let (spot, smile, _, t) = self.listed(s, expiry, strike)?;
        let b = book_quote(right, spot, strike, t, self.rate, smile)?;
        self.with_tape_book(s, expiry, strike, right, b)
    }

    /// [`book_quote_at`](Self::book_quote_at) with the contract's own [`MoneyMemo`] (the
    /// engine's re-pricing of a resting option): the same values.
    #[inline]
    pub fn book_quote_memo_at(
        &self,
        sym: usize,
        expiry: Expiry,
        strike: Px,
        right: Right,
        memo: &mut MoneyMemo,
    ) -> Option<BookQuote> {
        let s = self.syms.get(sym)?;
        let (spot, smile, _, t) = self.listed(s, expiry, strike)?;
        let b = book_quote_memo(right, spot, strike, t, self.rate, smile, memo)?;
        self.with_tape_book(s, expiry, strike, right, b)
    }

    /// A model book `b`, with the tape's quote of the contract in place of its bid and ask
    /// when the tape carries one.
    #[inline]
    fn with_tape_book(
        &self,
        s: &SymState,
        expiry: Expiry,
        strike: Px,
        right: Right,
        b: BookQuote,
    ) -> Option<BookQuote> {
        match self.tape_book(s, expiry, strike, right) {
            Some((bid, ask)) => Some(b.with_tape_book(bid, ask)),
            None => Some(b),
        }
    }

    /// The tape's quote of a contract, when the tape carries one.
    fn tape_book(
        &self,
        s: &SymState,
        expiry: Expiry,
        strike: Px,
        right: Right,
    ) -> Option<(Px, Px)> {
        if s.opt_books.is_empty() {
            return None;
        }
        s.opt_book(expiry.resolve(self.date)?, right, strike)
    }

    /// A listed contract's pricing inputs: spot, smile, strike step and years to expiry
    /// (`None` for an unpriced symbol, or a strike off the grid).
    #[inline]
    fn listed(&self, s: &SymState, expiry: Expiry, strike: Px) -> Option<(Px, Smile, Px, f64)> {
        let step = s.strike_step?;
        let smile = s.smile?;
        let spot = s.last?;
        if strike.raw() <= 0 || strike.raw() % step.raw() != 0 {
            return None;
        }
        Some((spot, smile, step, self.years_to_expiry(expiry)?))
    }

    /// [`quote`](Self::quote) by [`Sym`].
    pub fn quote_sym(&self, sym: Sym, expiry: Expiry, strike: Px, right: Right) -> Option<Quote> {
        self.quote_in(self.sym_of(sym)?, expiry, strike, right)
    }

    fn quote_in(&self, s: &SymState, expiry: Expiry, strike: Px, right: Right) -> Option<Quote> {
        let (spot, smile, step, t) = self.listed(s, expiry, strike)?;
        let oi = open_interest(expiry, right, strike, s.prior_close, step);
        let q = price_option(right, spot, strike, t, self.rate, smile, oi)?;
        match self.tape_book(s, expiry, strike, right) {
            Some((bid, ask)) => Some(q.with_tape_book(bid, ask)),
            None => Some(q),
        }
    }

    /// Dealer gamma exposure at a strike, in dollars per 1% move:
    /// `(γ_call · OI_call − γ_put · OI_put) · 100 · S² · 0.01` (dealers long calls, short
    /// puts).
    pub fn gex(&self, sym: &str, expiry: Expiry, strike: Px) -> Option<f64> {
        let c = self.quote(sym, expiry, strike, Right::Call)?;
        let p = self.quote(sym, expiry, strike, Right::Put)?;
        let spot = self.spot(sym)?.to_f64();
        Some(
            (c.gamma * c.open_interest as f64 - p.gamma * p.open_interest as f64)
                * super::options::MULTIPLIER
                * spot
                * spot
                * 0.01,
        )
    }

    /// The strike whose delta is closest to `target` (e.g. `0.25` for calls, `-0.25` for
    /// puts), searched within ±`max_steps` grid steps of ATM.
    pub fn strike_for_delta(
        &self,
        sym: &str,
        expiry: Expiry,
        right: Right,
        target: f64,
        max_steps: i32,
    ) -> Option<Px> {
        let mut best: Option<(f64, Px)> = None;
        for off in -max_steps..=max_steps {
            let Some(k) = self.strike_for(sym, off) else {
                continue;
            };
            let Some(q) = self.quote(sym, expiry, k, right) else {
                continue;
            };
            let d = (q.delta - target).abs();
            if best.is_none_or(|(bd, _)| d < bd) {
                best = Some((d, k));
            }
        }
        best.map(|(_, k)| k)
    }

    /// Black-Scholes value of a contract at an explicit volatility (for scenario views).
    pub fn fair_at_vol(
        &self,
        sym: &str,
        expiry: Expiry,
        strike: Px,
        right: Right,
        iv: f64,
    ) -> Option<f64> {
        let spot = self.spot(sym)?.to_f64();
        let t = self.years_to_expiry(expiry)?;
        black_scholes(right, spot, strike.to_f64(), t, self.rate, iv).map(|b| b.price)
    }

    /// Share quote: fair = last trade; the book is the tape's latest quote of the symbol
    /// when it has one, else one cent either side of the last trade.
    pub fn share_quote(&self, sym: &str) -> Option<ShareQuote> {
        Self::share_quote_in(self.sym(sym)?)
    }

    /// [`share_quote`](Self::share_quote) by the symbol's [`sym_index`](Self::sym_index).
    pub fn share_quote_at(&self, sym: usize) -> Option<ShareQuote> {
        Self::share_quote_in(self.syms.get(sym)?)
    }

    fn share_quote_in(s: &SymState) -> Option<ShareQuote> {
        match s.book {
            Some((bid, ask)) => Some(ShareQuote::from_book(s.last, bid, ask)),
            None => s.last.map(ShareQuote::from_last),
        }
    }

    // ----- headlines ------------------------------------------------------------------------

    /// Every headline seen so far, oldest first.
    pub fn headlines(&self) -> &[Headline] {
        &self.headlines
    }

    /// Time of the latest headline seen.
    pub fn last_headline_at(&self) -> Option<Ts> {
        self.headlines.last().map(|h| h.ts)
    }

    /// `headline within <dur>`: a headline arrived in the last `secs` seconds (inclusive).
    pub fn headline_within(&self, secs: u32) -> bool {
        match (self.now, self.last_headline_at()) {
            (Some(n), Some(h)) => n.ms().saturating_sub(h.ms()) <= secs.saturating_mul(1000),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::market::tape::{Headline, IvChange, SymbolSpec, Tick, VolSpec};
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        // Cheap cases, and the worst ones (a high or low `p`, a value beyond the samples,
        // every new sample on one side) are a small share of them.
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// The bounds a read leaves ([`PctBound`]) hold: while no more samples are counted
        /// than each allows, the percentile read again is at least `lo` and at most `hi`,
        /// whatever the samples, for any `p` and any value they are placed against; and
        /// the read itself is `percentile_at`'s, bit for bit.
        #[test]
        fn a_percentiles_bounds_hold_for_the_samples_they_allow(
            first in proptest::collection::vec(-400i64..400, 30..200),
            // Samples among the first, and the worst: all below or all above every one.
            then in prop_oneof![
                proptest::collection::vec(-400i64..400, 1..200),
                (prop_oneof![Just(-5_000i64), Just(5_000)], 1usize..200)
                    .prop_map(|(c, n)| vec![c; n]),
            ],
            (centre, spread) in (300_000i64..2_000_000, 1i64..40),
            p in prop_oneof![0.0f64..=100.0, 0.0f64..3.0, 97.0f64..=100.0, Just(100.0)],
            x in -500.0f64..500.0,
        ) {
            let h = header();
            let spy = h.symbols[0].sym;
            let mut st = MarketState::new(&h);
            prop_assert!(st.track("SPY", Series::Spot));
            let i = st.sym_index(spy).expect("the header's symbol");
            let tick = |k: usize, c: i64| TapeEvent::Tick(Tick {
                ts: Ts(h.open.0 + 1000 * k as u32),
                sym: spy,
                px: Px::from_cents(centre + c * spread),
                sz: 1,
            });
            for (k, &c) in first.iter().enumerate() {
                st.apply(&tick(k, c));
            }
            let (mut hint, mut again) = (RankHint::default(), RankHint::default());
            // From below the samples to above them, in the samples' own steps.
            let x = Px::from_cents(centre).to_f64() + x * spread as f64 / 100.0;
            let (v, b) = st.percentile_bounded_at(i, Series::Spot, p, &mut hint, x);
            prop_assert_eq!(
                v.map(f64::to_bits),
                st.percentile_at(i, Series::Spot, p, &mut again).map(f64::to_bits)
            );
            let n0 = st.samples_recorded();
            for (k, &c) in then.iter().enumerate() {
                st.apply(&tick(first.len() + k, c));
                let since = st.samples_recorded() - n0;
                let now = st.percentile("SPY", Series::Spot, p).expect("past 30 samples");
                if since <= b.lo_for {
                    prop_assert!(now >= b.lo, "{now} < lo {} after {since}", b.lo);
                }
                if since <= b.hi_for {
                    prop_assert!(now <= b.hi, "{now} > hi {} after {since}", b.hi);
                }
            }
        }
    }

    /// A value far below or above a percentile gets a bound between the two, good for
    /// the next samples: what lets a series against its percentile go unread.
    #[test]
    fn a_value_clear_of_a_percentile_gets_a_bound_for_the_next_samples() {
        let h = header();
        let spy = h.symbols[0].sym;
        let mut st = MarketState::new(&h);
        assert!(st.track("SPY", Series::Spot));
        let i = st.sym_index(spy).expect("the header's symbol");
        for k in 0..600u32 {
            st.apply(&TapeEvent::Tick(Tick {
                ts: Ts(h.open.0 + 1000 * k),
                sym: spy,
                px: Px::from_cents(50_000 + i64::from(k % 97) * 3),
                sz: 1,
            }));
        }
        let mut hint = RankHint::default();
        let (v, below) = st.percentile_bounded_at(i, Series::Spot, 91.0, &mut hint, 490.0);
        let v = v.expect("known");
        assert!(
            below.lo > 490.0 && below.lo <= v && below.lo_for >= 30,
            "{below:?}"
        );
        assert_eq!(below.hi_for, 0);
        let (_, above) = st.percentile_bounded_at(i, Series::Spot, 91.0, &mut hint, 510.0);
        assert!(
            above.hi < 510.0 && above.hi >= v && above.hi_for >= 10,
            "{above:?}"
        );
        assert_eq!(above.lo_for, 0);
    }

    fn header() -> TapeHeader {
        let spy = Sym::new("SPY").unwrap();
        TapeHeader {
            v: 1,
            name: "p".into(),
            date: Date::new(2025, 4, 9).unwrap(),
            tz: "America/New_York".into(),
            open: Ts::hms(9, 30, 0, 0),
            close: Ts::hms(16, 0, 0, 0),
            symbols: vec![SymbolSpec {
                sym: spy,
                prior_close: Px::from_cents(50_000),
                strike_step: Some(Px::from_cents(100)),
            }],
            vol: vec![VolSpec {
                sym: spy,
                atm_iv: 0.2,
                skew: -0.8,
            }],
            rate: 0.04,
            source: String::new(),
            tags: BTreeMap::new(),
        }
    }

    /// A sample value: few distinct values (many ties), signed zeros, extremes, NaN and
    /// infinities (ignored by both structures).
    fn sample_value() -> impl Strategy<Value = f64> {
        prop_oneof![
            (0i32..40).prop_map(|k| f64::from(k) * 0.25 - 5.0),
            Just(0.0),
            Just(-0.0),
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::MIN),
            Just(f64::MAX),
            any::<f64>(),
        ]
    }

    proptest! {
        /// A price sample counted from its fixed point (`insert_px`, the sampling of a
        /// tracked `spot`, `hod` or `lod`) is counted as its `f64` is (`insert`): on the cent
        /// grid or off it, near the bound of the counts' range or past it, huge or none; the
        /// two structures hold the same samples in the same kind, bit for bit.
        #[test]
        fn a_price_counted_from_its_fixed_point_is_its_f64(
            raws in proptest::collection::vec(prop_oneof![
                6 => (499_000i64..501_000).prop_map(|c| Some(c * 100)),
                1 => (49_900_000i64..50_100_000).prop_map(Some),
                1 => (-1_000i64..1_000).prop_map(|c| Some(c * 100)),
                1 => prop_oneof![
                    Just(Some(i64::MAX)),
                    Just(Some(i64::MIN)),
                    (-1i64..=1).prop_map(|d| Some(100_000_000_000_000_000 + d * 100)),
                    any::<i64>().prop_map(|x| Some(x / 100 * 100)),
                ],
                1 => Just(None),
            ], 1..400),
        ) {
            let (mut a, mut b) = (Ranked::from_sorted(Series::Spot, &[]), Ranked::from_sorted(Series::Spot, &[]));
            for raw in raws {
                let px = raw.map(Px);
                a.insert_px(px);
                b.insert(px_or_nan(px));
                prop_assert_eq!(matches!(a, Ranked::Cents(_)), matches!(b, Ranked::Cents(_)));
                prop_assert_eq!(a.len(), b.len());
            }
            let sorted = |r: &Ranked| -> Vec<u64> {
                let mut hint = RankHint::default();
                (0..r.len()).map(|k| r.get_pair_from(k, &mut hint).map_or(0, |x| x.0.to_bits())).collect()
            };
            prop_assert_eq!(sorted(&a), sorted(&b));
        }
    }

    proptest! {
        /// The wide-integer conversions of the VWAP are `as f64`, bit for bit.
        #[test]
        fn wide_conversions_are_as_f64(
            a in prop_oneof![any::<i64>().prop_map(i128::from), any::<i128>()],
            b in prop_oneof![any::<u64>().prop_map(u128::from), any::<u128>()],
        ) {
            prop_assert_eq!(i128_f64(a).to_bits(), (a as f64).to_bits());
            prop_assert_eq!(u128_f64(b).to_bits(), (b as f64).to_bits());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// The blocked order-statistics structure holds exactly the sequence binary insertion
        /// into one sorted vector builds (bit for bit, signed zeros in the same places), and
        /// every percentile agrees, after a back-fill and any insertions.
        #[test]
        fn sorted_samples_match_the_sorted_vector(
            backfill in proptest::collection::vec(sample_value(), 0..300),
            inserts in prop_oneof![
                proptest::collection::vec(sample_value(), 0..1200),
                // A walk, as a sampled series moves: the insertion hint mostly holds.
                (-5.0f64..5.0, proptest::collection::vec(-4i32..=4, 0..1200)).prop_map(|(x0, steps)| {
                    steps.iter().scan(x0, |x, &d| { *x += f64::from(d) * 0.01; Some(*x) }).collect()
                }),
            ],
            ps in proptest::collection::vec(-5.0f64..105.0, 1..8),
        ) {
            let mut reference: Vec<f64> = backfill.iter().copied().filter(|x| x.is_finite()).collect();
            reference.sort_by(f64::total_cmp);
            let mut blocks = SortedSamples::from_sorted(&reference);
            // Each percentile's block hint, kept across insertions as the engine keeps it.
            let mut hints = vec![usize::MAX; ps.len() + 3];
            for (i, &x) in inserts.iter().enumerate() {
                insert_sorted(&mut reference, x);
                blocks.insert(x);
                if i % 97 == 0 || i + 1 == inserts.len() {
                    prop_assert_eq!(blocks.len(), reference.len());
                    for (j, p) in ps.iter().copied().chain([0.0, 50.0, 100.0]).enumerate() {
                        let a = percentile_sorted(&reference, p).map(f64::to_bits);
                        let b = percentile_ranked(blocks.len(), p, |k| blocks.get_pair(k)).map(f64::to_bits);
                        prop_assert_eq!(a, b, "p={}", p);
                        let h = percentile_ranked(blocks.len(), p, |k| blocks.get_pair_from(k, &mut hints[j])).map(f64::to_bits);
                        prop_assert_eq!(a, h, "p={} hinted", p);
                    }
                }
            }
            let all: Vec<u64> = (0..blocks.len()).filter_map(|k| blocks.get(k)).map(f64::to_bits).collect();
            let want: Vec<u64> = reference.iter().map(|x| x.to_bits()).collect();
            prop_assert_eq!(all, want);
            for k in 0..=blocks.len() {
                let pair = blocks.get_pair(k).map(|(a, b)| (a.to_bits(), b.map(f64::to_bits)));
                let want = blocks.get(k).map(|a| (a.to_bits(), blocks.get(k + 1).map(f64::to_bits)));
                prop_assert_eq!(pair, want, "k={}", k);
            }
            prop_assert_eq!(blocks.get(blocks.len()), None);
        }

        /// A price series counted by the cent gives every percentile the sorted vector gives,
        /// bit for bit: walks on the cent grid (the counts' case), jumps that widen the range
        /// on either side, reads at every insert or after gaps (a hint more than one insert
        /// old is found again from the chunks), a hint handed from another structure, and samples off the grid or too far away
        /// (which move every sample to the sorted blocks).
        #[test]
        fn cent_counts_match_the_sorted_vector(
            backfill in proptest::collection::vec(40_000i64..40_400, 0..300),
            x0 in 39_000i64..41_000,
            steps in proptest::collection::vec(prop_oneof![
                8 => (-3i64..=3).prop_map(|d| (d, 0u8)),
                1 => (-5_000i64..5_000).prop_map(|d| (d, 0u8)),
                1 => (0i64..1).prop_map(|d| (d, 1u8)),
                1 => (0i64..1).prop_map(|d| (d, 2u8)),
            ], 0..1500),
            off_grid in any::<bool>(),
            gap in 1usize..20,
            ps in proptest::collection::vec(0.0f64..=100.0, 1..6),
        ) {
            let px = |c: i64| Px::from_cents(c).to_f64();
            let mut reference: Vec<f64> = backfill.iter().map(|&c| px(c)).collect();
            reference.sort_by(f64::total_cmp);
            let mut ranked = Ranked::from_sorted(Series::Spot, &reference);
            prop_assert!(matches!(ranked, Ranked::Cents(_)));
            let mut other = Ranked::from_sorted(Series::Spot, &reference);
            let mut hints = vec![RankHint::default(); ps.len() + 3];
            let mut c = x0;
            for (i, &(d, kind)) in steps.iter().enumerate() {
                let x = match kind {
                    // A NaN (no trade yet) is ignored by both.
                    1 => f64::NAN,
                    2 if off_grid => Px(c * 100 + 37).to_f64(),
                    _ => {
                        c += d;
                        px(c)
                    }
                };
                insert_sorted(&mut reference, x);
                ranked.insert(x);
                if i % 5 == 0 {
                    other.insert(x);
                }
                if i % gap == 0 || i + 1 == steps.len() {
                    prop_assert_eq!(ranked.len(), reference.len());
                    for (j, p) in ps.iter().copied().chain([0.0, 50.0, 100.0]).enumerate() {
                        let a = percentile_sorted(&reference, p).map(f64::to_bits);
                        let h = percentile_ranked(ranked.len(), p, |k| ranked.get_pair_from(k, &mut hints[j])).map(f64::to_bits);
                        prop_assert_eq!(a, h, "p={} at {}", p, i);
                        let mut fresh = RankHint::default();
                        let f = percentile_ranked(ranked.len(), p, |k| ranked.get_pair_from(k, &mut fresh)).map(f64::to_bits);
                        prop_assert_eq!(a, f, "p={} at {} fresh", p, i);
                        // A hint of this structure read in another is found again there.
                        let mut theirs = hints[j];
                        let _ = percentile_ranked(other.len(), p, |k| other.get_pair_from(k, &mut theirs));
                    }
                }
            }
            for k in 0..=reference.len() {
                let want = reference.get(k).map(|a| (a.to_bits(), reference.get(k + 1).map(|b| b.to_bits())));
                let got = ranked.get_pair_from(k, &mut RankHint::default()).map(|(a, b)| (a.to_bits(), b.map(f64::to_bits)));
                prop_assert_eq!(got, want, "k={}", k);
            }
        }

        /// Only a price series on the cent grid is counted by the cent.
        #[test]
        fn only_cent_prices_are_counted(c in -1_000_000i64..1_000_000, frac in 1i64..100) {
            let on = [Px::from_cents(c).to_f64()];
            prop_assert!(matches!(Ranked::from_sorted(Series::Spot, &on), Ranked::Cents(_)));
            prop_assert!(matches!(Ranked::from_sorted(Series::Vwap, &on), Ranked::Blocks(_)));
            let off = [Px(c * 100 + frac).to_f64()];
            prop_assert!(matches!(Ranked::from_sorted(Series::Hod, &off), Ranked::Blocks(_)));
        }

        /// A tracked series read as the engine reads it (`percentile_at`, its hint kept from
        /// one sample to the next) gives, bit for bit, the percentile an untracked state
        /// sorts its samples for, at every second and for any `p` (out of range too).
        #[test]
        fn tracked_percentile_at_is_the_untracked_percentile(
            cents in proptest::collection::vec(49_990i64..50_010, 1..90),
            p in -10.0f64..110.0,
        ) {
            let h = header();
            let spy = h.symbols[0].sym;
            let (mut tracked, mut plain) = (MarketState::new(&h), MarketState::new(&h));
            prop_assert!(tracked.track("SPY", Series::Spot));
            let i = tracked.sym_index(spy).expect("the header's symbol");
            let mut hint = RankHint::default();
            for (k, c) in (0u32..).zip(cents) {
                let ev = TapeEvent::Tick(Tick {
                    ts: Ts(h.open.0 + 1000 * k),
                    sym: spy,
                    px: Px::from_cents(c),
                    sz: 1,
                });
                tracked.apply(&ev);
                plain.apply(&ev);
                let a = tracked.percentile_at(i, Series::Spot, p, &mut hint).map(f64::to_bits);
                let b = plain.percentile("SPY", Series::Spot, p).map(f64::to_bits);
                prop_assert_eq!(a, b);
            }
        }

        /// Any event sequence (even out of order, extreme prices and sizes) never panics,
        /// and every query answers.
        #[test]
        fn apply_and_query_never_panic(
            evs in proptest::collection::vec((0u32..86_400_000, 1i64..i64::MAX / 4, any::<u64>(), 0u8..3), 0..60),
            p in -10.0f64..110.0,
            off in -1000i32..1000,
        ) {
            let h = header();
            let spy = h.symbols[0].sym;
            let mut st = MarketState::new(&h);
            st.track("SPY", Series::Velocity(5));
            for (ts, raw, sz, kind) in evs {
                let ts = Ts(ts);
                let ev = match kind {
                    0 => TapeEvent::Tick(Tick { ts, sym: spy, px: Px(raw), sz }),
                    1 => TapeEvent::Iv(IvChange { ts, sym: spy, atm_iv: (raw % 1000) as f64 / 100.0 + 0.01, skew: None }),
                    _ => TapeEvent::Headline(Headline { ts, text: "x".into() }),
                };
                st.apply(&ev);
                for s in [Series::Spot, Series::Hod, Series::Lod, Series::Vwap, Series::Open,
                          Series::PriorClose, Series::Velocity(5), Series::Velocity(0), Series::Time] {
                    let _ = st.value("SPY", s);
                    let _ = st.percentile("SPY", s, p);
                }
                if let Some(k) = st.strike_for("SPY", off) {
                    for e in [Expiry::ZeroDte, Expiry::OneDte] {
                        let _ = st.quote("SPY", e, k, Right::Call);
                        let _ = st.gex("SPY", e, k);
                    }
                }
                let _ = (st.phase_open(), st.phase_close(), st.t_minus(5.0), st.headline_within(60));
            }
        }
    }
}
