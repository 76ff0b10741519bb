//! Samples of a price series counted by the cent: the order-statistics structure of a
//! tracked `spot`, `hod` or `lod` ([`MarketState::track`](super::MarketState::track)).
//!
//! A price series' samples are prices, and on a tape whose prices are whole cents they fall
//! on a grid. Counting them per cent makes a sample's insertion two increments (its cent's
//! count and its chunk's), where a sorted sequence moves values to make room; a percentile's
//! rank is found by walking the counts from where the previous read of the same percentile
//! found it (a sampled series moves little from one second to the next). A sample off the
//! cent grid, or a range of more than [`MAX_CENTS`] cents, ends it: the caller goes back to
//! the sorted blocks.
//!
//! The value of a rank is its cent's price as [`Px::to_f64`] gives it, which is the sample's
//! own `f64` bit for bit (a sample is counted only when that holds), so every percentile is
//! the one the sorted sequence gives.

use std::sync::atomic::{AtomicU64, Ordering};

use super::types::Px;

/// The next [`CentCounts`]' `id` (0 is no structure's).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Buckets per chunk: a read without a usable hint sums chunks, then buckets of one chunk.
const CHUNK: usize = 64;

/// The widest range of cents counted (1 MiB of counts): wider, the samples go back to the
/// sorted blocks.
pub(crate) const MAX_CENTS: usize = 1 << 18;

/// Where a read of one percentile found its rank: kept by the reader and handed in again at
/// its next read ([`MarketState::percentile_at`](super::MarketState::percentile_at)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankHint {
    /// The block of the sorted blocks.
    pub(crate) block: usize,
    /// The cent of the counts.
    cent: i64,
    /// Samples below `cent` when the structure held `at` samples.
    below: usize,
    /// `usize::MAX`: no cent yet.
    at: usize,
    /// The [`CentCounts`] it was found in (its `id`).
    of: u64,
}

impl Default for RankHint {
    fn default() -> Self {
        RankHint {
            block: usize::MAX,
            cent: 0,
            below: 0,
            at: usize::MAX,
            of: 0,
        }
    }
}

/// Bounds on a percentile for the next few samples, found where its read left its rank
/// ([`CentCounts::bound`]): while at most `lo_for` samples more are counted, the percentile
/// is at least `lo`; while at most `hi_for` more are, it is at most `hi`. A reader that
/// only needs to know on which side of the percentile a value lies (a series against its
/// own percentile) need not read it again while the value stays clear of the bounds.
///
/// Why they hold: counting `m` samples more moves the value of rank `r` to between the
/// old values of ranks `r - m` and `r`, and the rank read (`floor((n - 1) p / 100)`) only
/// grows, by at most `m` (plus one for rounding) — so the rank-`k` value stays at least
/// the old value of rank `k - m`, and the rank-`k + 1` value at most the old value of rank
/// `k + m + 2`. The interpolated percentile `a + f (b - a)` is at least `a` (every step
/// rounds a value at least `a`), and at most `b` plus a few units in the last place, which
/// the margin on `hi` covers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PctBound {
    pub(crate) lo: f64,
    pub(crate) lo_for: usize,
    pub(crate) hi: f64,
    pub(crate) hi_for: usize,
}

impl PctBound {
    /// No bound: the percentile is read again at the next sample.
    pub const NONE: PctBound = PctBound {
        lo: f64::NEG_INFINITY,
        lo_for: 0,
        hi: f64::INFINITY,
        hi_for: 0,
    };
}

/// One cent in [`Px`]'s fixed point.
const CENT_RAW: i64 = super::types::PX_SCALE / 100;

/// Below this many cents (in magnitude) a cent's `f64` times 100 is found again exactly by
/// [`cents_of`] (which refuses 1e15 and above): [`CentCounts::insert_px`] takes the cents
/// of a price straight from its fixed point below it.
const MAX_EXACT: i64 = 1_000_000_000_000_000 / 2;

/// The whole cents of a price sample, when `x` is exactly what [`Px::to_f64`] gives for
/// them (bit for bit).
pub(crate) fn cents_of(x: f64) -> Option<i64> {
    let y = x * 100.0;
    if y.is_nan() || y.abs() >= 1e15 {
        return None;
    }
    // Rounded half away from zero (the check below makes any rounding exact or refused).
    let c = if y >= 0.0 {
        (y + 0.5) as i64
    } else {
        (y - 0.5) as i64
    };
    (Px::from_cents(c).to_f64().to_bits() == x.to_bits()).then_some(c)
}

/// The price of a cent as a sample.
fn value(cent: i64) -> f64 {
    Px::from_cents(cent).to_f64()
}

/// Samples counted by the cent (see the module docs).
#[derive(Debug)]
pub(crate) struct CentCounts {
    /// This structure, for the hints (a hint from another is not caught up with).
    id: u64,
    /// The cent of bucket 0.
    base: i64,
    counts: Vec<u32>,
    /// Each chunk's count ([`CHUNK`] buckets).
    chunks: Vec<u32>,
    len: usize,
    /// The cent of the latest insert: a hint one insert old catches up with it.
    last: i64,
}

impl CentCounts {
    /// From sorted samples; `None` when one is off the cent grid or the range is too wide.
    pub(crate) fn from_sorted(v: &[f64]) -> Option<CentCounts> {
        let mut out = CentCounts {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            base: 0,
            counts: Vec::new(),
            chunks: Vec::new(),
            len: 0,
            last: 0,
        };
        for &x in v {
            if !out.insert(x) {
                return None;
            }
        }
        Some(out)
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Count a sample (a non-finite one is ignored); `false` (and nothing counted) when it
    /// is off the cent grid or would widen the range past [`MAX_CENTS`].
    pub(crate) fn insert(&mut self, x: f64) -> bool {
        if !x.is_finite() {
            return true;
        }
        let Some(c) = cents_of(x) else {
            return false;
        };
        self.insert_cents(c)
    }

    /// Count a sample of `px` (`None`: no sample, as a non-finite one): its cents straight
    /// from the fixed-point price when it is on the grid, else as [`insert`](Self::insert)
    /// takes its `f64` (which refuses it). The same count as `insert(px.to_f64())`: a price
    /// on the cent grid is what [`cents_of`] finds for its `f64`, below the bound it checks.
    #[inline]
    pub(crate) fn insert_px(&mut self, px: Option<Px>) -> bool {
        match px {
            None => true,
            Some(px) if px.raw() % CENT_RAW == 0 && (px.raw() / CENT_RAW).abs() < MAX_EXACT => {
                self.insert_cents(px.raw() / CENT_RAW)
            }
            Some(px) => self.insert(px.to_f64()),
        }
    }

    /// Count a sample of `c` cents; `false` (nothing counted) past [`MAX_CENTS`].
    #[inline]
    fn insert_cents(&mut self, c: i64) -> bool {
        let j = match self.bucket(c) {
            Some(j) => j,
            None => {
                if !self.grow(c) {
                    return false;
                }
                match self.bucket(c) {
                    Some(j) => j,
                    None => return false,
                }
            }
        };
        self.counts[j] += 1;
        self.chunks[j / CHUNK] += 1;
        self.last = c;
        self.len += 1;
        true
    }

    /// The bucket of cent `c`, if the range holds it.
    #[inline]
    fn bucket(&self, c: i64) -> Option<usize> {
        let j = usize::try_from(c.checked_sub(self.base)?).ok()?;
        (j < self.counts.len()).then_some(j)
    }

    /// Widen the range to hold cent `c`, with room on its side; `false` past [`MAX_CENTS`].
    #[cold]
    fn grow(&mut self, c: i64) -> bool {
        let n = self.counts.len() as i64;
        let room = (n / 2).max(256);
        let (lo, hi) = if n == 0 {
            (c - room, c + room)
        } else if c < self.base {
            (c - room, self.base + n - 1)
        } else {
            (self.base, c + room)
        };
        let Ok(width) = usize::try_from(hi - lo + 1) else {
            return false;
        };
        if width > MAX_CENTS {
            return false;
        }
        let mut counts = vec![0u32; width];
        if n > 0 {
            let shift = (self.base - lo) as usize;
            counts[shift..shift + self.counts.len()].copy_from_slice(&self.counts);
        }
        self.counts = counts;
        self.base = lo;
        self.chunks = self
            .counts
            .chunks(CHUNK)
            .map(|b| b.iter().sum::<u32>())
            .collect();
        true
    }

    /// The samples in the sorted order, for going back to the sorted blocks.
    pub(crate) fn to_sorted(&self) -> Vec<f64> {
        let mut v = Vec::with_capacity(self.len);
        for (j, &n) in self.counts.iter().enumerate() {
            let x = value(self.base + j as i64);
            v.extend(std::iter::repeat_n(x, n as usize));
        }
        v
    }

    /// The samples of ranks `k` and `k + 1` (0-based), walking from where `hint` found the
    /// previous rank (caught up with the insert since, if one; else found again from the
    /// chunks).
    #[inline(always)]
    pub(crate) fn get_pair_from(
        &self,
        k: usize,
        hint: &mut RankHint,
    ) -> Option<(f64, Option<f64>)> {
        if k >= self.len {
            return None;
        }
        let (mut j, mut below) = match self.caught_up(hint) {
            Some(at) => at,
            None => self.search_chunks(k),
        };
        // `below` is the count of the buckets before `j`.
        while below > k {
            j -= 1;
            below -= self.counts[j] as usize;
        }
        while below + self.counts[j] as usize <= k {
            below += self.counts[j] as usize;
            j += 1;
        }
        *hint = RankHint {
            block: hint.block,
            cent: self.base + j as i64,
            below,
            at: self.len,
            of: self.id,
        };
        let a = value(self.base + j as i64);
        let next = if k + 1 - below < self.counts[j] as usize {
            Some(a)
        } else if k + 1 < self.len {
            let mut n = j + 1;
            while self.counts[n] == 0 {
                n += 1;
            }
            Some(value(self.base + n as i64))
        } else {
            None
        };
        Some((a, next))
    }

    /// Bounds on the percentile whose rank `k` a read just found (`hint`, as that read
    /// left it), placed halfway between it and `x` (the value compared with it): below it
    /// when `x` is below the rank's cent, above it otherwise. See [`PctBound`].
    #[inline(never)]
    pub(crate) fn bound(&self, hint: &RankHint, k: usize, x: f64) -> PctBound {
        let mut out = PctBound::NONE;
        let Some(j) = self.bucket(hint.cent) else {
            return out;
        };
        if hint.of != self.id || hint.at != self.len || self.counts.is_empty() {
            return out;
        }
        let y = (x * 100.0).floor();
        if !y.is_finite() {
            return out;
        }
        // `x`'s cent as a bucket, clamped to one past either end.
        let last = self.counts.len() - 1;
        let jx = if y < self.base as f64 {
            -1
        } else {
            (y - self.base as f64).min(last as f64 + 1.0) as i64
        };
        if jx < j as i64 {
            // Below: every rank from `a`'s first on is at least its cent.
            let a = ((jx + 1).max(0) as usize + j) / 2;
            let first = hint.below - self.count_in(a, j);
            out.lo = value(self.base + a as i64);
            out.lo_for = k - first;
        } else if jx > j as i64 {
            // Above: every rank below the count up to `b`'s cent is at most its cent.
            let b = (j + (jx as usize).min(last + 1) - 1)
                .div_ceil(2)
                .clamp(j, last);
            let upto = hint.below + self.count_in(j, b + 1);
            if let Some(f) = upto.checked_sub(k + 3) {
                let hi = value(self.base + b as i64);
                let lowest = value(self.base);
                out.hi = hi + (hi.abs() + lowest.abs()) * 1e-12;
                out.hi_for = f;
            }
        }
        out
    }

    /// The samples counted in buckets `lo..hi`.
    fn count_in(&self, lo: usize, hi: usize) -> usize {
        let hi = hi.min(self.counts.len());
        if lo >= hi {
            return 0;
        }
        let (cl, ch) = (lo.div_ceil(CHUNK), hi / CHUNK);
        if cl >= ch {
            return self.counts[lo..hi].iter().map(|&c| c as usize).sum();
        }
        let head: usize = self.counts[lo..cl * CHUNK]
            .iter()
            .map(|&c| c as usize)
            .sum();
        let mid: usize = self.chunks[cl..ch].iter().map(|&c| c as usize).sum();
        let tail: usize = self.counts[ch * CHUNK..hi]
            .iter()
            .map(|&c| c as usize)
            .sum();
        head + mid + tail
    }

    /// The hint's bucket and the count below it now, when it is of this structure and at
    /// most one insert old (the engine reads its percentiles at every sample).
    #[inline(always)]
    fn caught_up(&self, hint: &RankHint) -> Option<(usize, usize)> {
        let since = self.len.wrapping_sub(hint.at);
        if hint.of != self.id || since > 1 {
            return None;
        }
        let j = self.bucket(hint.cent)?;
        Some((
            j,
            hint.below + usize::from(since == 1 && self.last < hint.cent),
        ))
    }

    /// The first bucket of the chunk holding rank `k`, and the count below it.
    #[cold]
    #[inline(never)]
    fn search_chunks(&self, k: usize) -> (usize, usize) {
        let mut below = 0;
        for (i, &n) in self.chunks.iter().enumerate() {
            if below + n as usize > k {
                return (i * CHUNK, below);
            }
            below += n as usize;
        }
        // Not reached for `k < len`: the chunks hold every sample.
        (0, 0)
    }
}
