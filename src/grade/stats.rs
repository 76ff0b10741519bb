//! Exact statistics for grade cells: integer sums, medians, a seeded percentile bootstrap and
//! fixed-precision decimal printing. Every input is an integer (P&L in units of 0.0001 R), so
//! every figure is a ratio of integers and prints the same on any machine, in any order of
//! work units.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

/// A ChaCha8 stream seeded from the BLAKE3 hash of `key`.
pub fn rng_for(key: &str) -> ChaCha8Rng {
    ChaCha8Rng::from_seed(*blake3::hash(key.as_bytes()).as_bytes())
}

/// Uniform integer in `0..n` (`n > 0`), unbiased (rejection sampling); 0 when `n == 0`.
pub fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    if n <= 1 {
        return 0;
    }
    let zone = u64::MAX - (u64::MAX % n);
    loop {
        let x = rng.next_u64();
        if x < zone {
            return x % n;
        }
    }
}

/// `num / den` rounded half away from zero to an integer (`den > 0`).
pub fn round_div(num: i128, den: i128) -> i128 {
    if den <= 0 {
        return 0;
    }
    let q = num / den;
    let r = num % den;
    if 2 * r.abs() >= den {
        q + num.signum()
    } else {
        q
    }
}

/// `num / den` ten-thousandths printed with exactly four decimals (`-0.0125`, `0.3000`):
/// the value is rounded half away from zero to 0.0001.
pub fn fmt4(num: i128, den: i128) -> String {
    let q = round_div(num, den);
    let sign = if q < 0 { "-" } else { "" };
    let a = q.abs();
    format!("{sign}{}.{:04}", a / 10_000, a % 10_000)
}

/// [`fmt4`] with an explicit `+` on positive values (differences).
pub fn fmt4_signed(num: i128, den: i128) -> String {
    let s = fmt4(num, den);
    if s.starts_with('-') || round_div(num, den) == 0 {
        s
    } else {
        format!("+{s}")
    }
}

/// The median of integer values as a ratio `(num, den)` (`den` is 1 or 2); `(0, 1)` when
/// empty.
pub fn median(values: &[i64]) -> (i128, i128) {
    if values.is_empty() {
        return (0, 1);
    }
    let mut v = values.to_vec();
    v.sort_unstable();
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        (i128::from(v[m]), 1)
    } else {
        (i128::from(v[m - 1]) + i128::from(v[m]), 2)
    }
}

/// A percentile bootstrap confidence interval of a mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ci {
    /// Lower bound, as a sum over one resample (divide by `n · scale`).
    pub lo_sum: i128,
    /// Upper bound, as a sum over one resample.
    pub hi_sum: i128,
}

impl Ci {
    /// The interval lies strictly above or strictly below zero.
    pub fn excludes_zero(&self) -> bool {
        self.lo_sum > 0 || self.hi_sum < 0
    }
}

/// Index of the lower and upper bounds among `b` sorted resample means for a 95% interval:
/// `⌊0.025·b⌋` and `⌈0.975·b⌉ − 1` (for `b = 2000`: the 51st and the 1950th).
pub fn ci_indices(b: usize) -> (usize, usize) {
    let lo = b * 25 / 1000;
    let hi = (b * 975).div_ceil(1000).saturating_sub(1);
    (lo.min(b.saturating_sub(1)), hi.min(b.saturating_sub(1)))
}

/// Percentile bootstrap of the mean of `values` (integers): `resamples` resamples of
/// `values.len()` draws with replacement from a ChaCha8 stream seeded by `seed_key`. Sums
/// are exact; the bounds are returned as sums (the mean is `sum / values.len()`). `None`
/// for no values or no resamples.
pub fn bootstrap_mean(values: &[i128], resamples: u32, seed_key: &str) -> Option<Ci> {
    if values.is_empty() || resamples == 0 {
        return None;
    }
    let n = values.len();
    let mut rng = rng_for(seed_key);
    let mut sums: Vec<i128> = Vec::with_capacity(resamples as usize);
    for _ in 0..resamples {
        let mut s: i128 = 0;
        for _ in 0..n {
            s += values[below(&mut rng, n as u64) as usize];
        }
        sums.push(s);
    }
    sums.sort_unstable();
    let (lo, hi) = ci_indices(sums.len());
    Some(Ci {
        lo_sum: sums[lo],
        hi_sum: sums[hi],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_round_half_away_from_zero() {
        assert_eq!(fmt4(12_345, 1), "1.2345");
        assert_eq!(fmt4(-5, 1), "-0.0005");
        assert_eq!(fmt4(1, 2), "0.0001");
        assert_eq!(fmt4(-1, 2), "-0.0001");
        assert_eq!(fmt4(1, 3), "0.0000");
        assert_eq!(fmt4(0, 1), "0.0000");
        assert_eq!(fmt4_signed(3_000, 1), "+0.3000");
        assert_eq!(fmt4_signed(0, 1), "0.0000");
        assert_eq!(fmt4_signed(-1, 1), "-0.0001");
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3, 1, 2]), (2, 1));
        assert_eq!(median(&[4, 1, 2, 3]), (5, 2));
        assert_eq!(median(&[]), (0, 1));
    }

    #[test]
    fn ci_indices_for_2000() {
        assert_eq!(ci_indices(2000), (50, 1949));
        assert_eq!(ci_indices(1), (0, 0));
    }

    #[test]
    fn bootstrap_is_seeded_and_brackets_the_mean() {
        let v: Vec<i128> = (0..40).map(|i| (i % 7) * 100 - 250).collect();
        let a = bootstrap_mean(&v, 2000, "k").unwrap();
        assert_eq!(Some(a), bootstrap_mean(&v, 2000, "k"));
        assert_ne!(Some(a), bootstrap_mean(&v, 2000, "other"));
        let sum: i128 = v.iter().sum();
        assert!(a.lo_sum <= sum && sum <= a.hi_sum, "{a:?} {sum}");
        // A constant sample has a degenerate interval at the constant.
        let c = bootstrap_mean(&[7, 7, 7], 100, "c").unwrap();
        assert_eq!((c.lo_sum, c.hi_sum), (21, 21));
        assert!(bootstrap_mean(&[], 100, "e").is_none());
    }

    #[test]
    fn below_is_in_range() {
        let mut r = rng_for("x");
        for n in 1..50u64 {
            assert!(below(&mut r, n) < n);
        }
        assert_eq!(below(&mut r, 0), 0);
    }
}
