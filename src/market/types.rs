//! Small exact value types shared by tapes and the market model: [`Px`] (fixed-point price),
//! [`Ts`] (time of day in milliseconds), [`Date`] (civil date) and [`Sym`] (inline symbol).

use std::fmt;
use std::ops::{Add, Neg, Sub};

/// Number of [`Px`] units in one currency unit (prices are ten-thousandths).
pub const PX_SCALE: i64 = 10_000;

/// Largest magnitude a [`Px`] accepts from a float (keeps every raw value exactly
/// representable in an `f64`).
const PX_MAX_ABS: f64 = 1.0e11;

/// An exact fixed-point price in ten-thousandths of a currency unit (`5002.10` is
/// `Px(50_021_000)`). Equality, ordering and printing are exact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Px(pub i64);

impl Px {
    /// Zero.
    pub const ZERO: Px = Px(0);
    /// One cent.
    pub const CENT: Px = Px(100);

    /// A price from its raw ten-thousandths.
    pub const fn from_raw(raw: i64) -> Px {
        Px(raw)
    }

    /// The raw ten-thousandths.
    pub const fn raw(self) -> i64 {
        self.0
    }

    /// A price from whole cents.
    pub const fn from_cents(cents: i64) -> Px {
        Px(cents * 100)
    }

    /// The price as an `f64` (exact for every value a tape can carry).
    pub fn to_f64(self) -> f64 {
        self.0 as f64 / PX_SCALE as f64
    }

    /// The `Px` whose decimal value is exactly the decimal the float was parsed from, if that
    /// decimal has at most 4 decimal places. `None` for non-finite values, values too large,
    /// and values with more precision (e.g. `5002.12345`).
    ///
    /// This works because a JSON number `d` with at most 4 decimals is read as the float
    /// nearest to `d`, and `raw / 10_000` (correctly rounded) is that same float.
    pub fn from_f64_exact(x: f64) -> Option<Px> {
        if !x.is_finite() || x.abs() > PX_MAX_ABS {
            return None;
        }
        let raw = libm::round(x * PX_SCALE as f64);
        if raw / PX_SCALE as f64 == x {
            Some(Px(raw as i64))
        } else {
            None
        }
    }

    /// Round a float to the nearest multiple of `tick` (half away from zero). `None` for
    /// non-finite or out-of-range input, or a non-positive tick.
    pub fn round_to(x: f64, tick: Px) -> Option<Px> {
        Self::to_grid(x, tick, libm::round)
    }

    /// Round a float down to the tick grid.
    pub fn floor_to(x: f64, tick: Px) -> Option<Px> {
        Self::to_grid(x, tick, libm::floor)
    }

    /// Round a float up to the tick grid.
    pub fn ceil_to(x: f64, tick: Px) -> Option<Px> {
        Self::to_grid(x, tick, libm::ceil)
    }

    fn to_grid(x: f64, tick: Px, f: fn(f64) -> f64) -> Option<Px> {
        if !x.is_finite() || x.abs() > PX_MAX_ABS || tick.0 <= 0 {
            return None;
        }
        // Work in raw units first so that a value already on the grid (up to float noise
        // below 1e-7 of a unit) stays where it is.
        let raw = x * PX_SCALE as f64;
        let steps = raw / tick.0 as f64;
        let nearest = libm::round(steps);
        let steps = if (steps - nearest).abs() < 1e-7 {
            nearest
        } else {
            f(steps)
        };
        Some(Px(steps as i64 * tick.0))
    }

    /// Round to the nearest cent (half away from zero).
    pub fn round_cents(x: f64) -> Option<Px> {
        Self::round_to(x, Px::CENT)
    }
}

impl Add for Px {
    type Output = Px;
    fn add(self, o: Px) -> Px {
        Px(self.0.saturating_add(o.0))
    }
}

impl Sub for Px {
    type Output = Px;
    fn sub(self, o: Px) -> Px {
        Px(self.0.saturating_sub(o.0))
    }
}

impl Neg for Px {
    type Output = Px;
    fn neg(self) -> Px {
        Px(self.0.saturating_neg())
    }
}

impl fmt::Display for Px {
    /// Prints with at least two and at most four decimals, trailing zeros beyond the second
    /// trimmed: `5002.10`, `0.0125`, `-3.00`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let neg = self.0 < 0;
        let abs = self.0.unsigned_abs();
        let int = abs / PX_SCALE as u64;
        let mut frac = abs % PX_SCALE as u64;
        let mut digits = 4;
        while digits > 2 && frac % 10 == 0 {
            frac /= 10;
            digits -= 1;
        }
        let sign = if neg { "-" } else { "" };
        write!(f, "{sign}{int}.{frac:0digits$}")
    }
}

/// A time of day in milliseconds since midnight (exchange time zone).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Ts(pub u32);

/// Milliseconds in a day.
pub const MS_PER_DAY: u32 = 86_400_000;

impl Ts {
    /// A time from hours, minutes, seconds and milliseconds (no validation beyond overflow).
    pub const fn hms(h: u32, m: u32, s: u32, ms: u32) -> Ts {
        Ts(((h * 60 + m) * 60 + s) * 1000 + ms)
    }

    /// Milliseconds since midnight.
    pub const fn ms(self) -> u32 {
        self.0
    }

    /// Seconds since midnight, with the milliseconds as a fraction.
    pub fn secs_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    /// Parse the tape timestamp form `HH:MM:SS.mmm` (exactly 12 characters).
    pub fn parse(s: &str) -> Option<Ts> {
        Ts::parse_bytes(s.as_bytes())
    }

    /// [`parse`](Self::parse) of the text's bytes.
    pub fn parse_bytes(b: &[u8]) -> Option<Ts> {
        if b.len() != 12 || b[2] != b':' || b[5] != b':' || b[8] != b'.' {
            return None;
        }
        let h = digits(&b[0..2])?;
        let m = digits(&b[3..5])?;
        let sec = digits(&b[6..8])?;
        let ms = digits(&b[9..12])?;
        if h > 23 || m > 59 || sec > 59 {
            return None;
        }
        Some(Ts::hms(h, m, sec, ms))
    }

    /// Parse a clock time `HH:MM` (as in the tape header's `open` and `close`).
    pub fn parse_hhmm(s: &str) -> Option<Ts> {
        let b = s.as_bytes();
        if b.len() != 5 || b[2] != b':' {
            return None;
        }
        let h = digits(&b[0..2])?;
        let m = digits(&b[3..5])?;
        if h > 23 || m > 59 {
            return None;
        }
        Some(Ts::hms(h, m, 0, 0))
    }

    /// Print as `HH:MM` (seconds and milliseconds dropped).
    pub fn hhmm(self) -> String {
        let m = self.0 / 60_000;
        format!("{:02}:{:02}", m / 60, m % 60)
    }
}

impl fmt::Display for Ts {
    /// `HH:MM:SS.mmm`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0 % 1000;
        let s = self.0 / 1000;
        write!(
            f,
            "{:02}:{:02}:{:02}.{:03}",
            s / 3600,
            (s / 60) % 60,
            s % 60,
            ms
        )
    }
}

fn digits(b: &[u8]) -> Option<u32> {
    let mut v: u32 = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u32::from(c - b'0'))?;
    }
    Some(v)
}

/// A proleptic Gregorian calendar date.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    /// Year (1..=9999).
    pub y: i32,
    /// Month (1..=12).
    pub m: u32,
    /// Day of month (1..=31, valid for the month).
    pub d: u32,
}

impl Date {
    /// A validated date.
    pub fn new(y: i32, m: u32, d: u32) -> Option<Date> {
        if !(1..=9999).contains(&y) || !(1..=12).contains(&m) || d == 0 {
            return None;
        }
        let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let dim = match m {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            _ if leap => 29,
            _ => 28,
        };
        (d <= dim).then_some(Date { y, m, d })
    }

    /// Parse `YYYY-MM-DD`.
    pub fn parse(s: &str) -> Option<Date> {
        let b = s.as_bytes();
        if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
            return None;
        }
        let y = digits(&b[0..4])?;
        let m = digits(&b[5..7])?;
        let d = digits(&b[8..10])?;
        Date::new(i32::try_from(y).ok()?, m, d)
    }

    /// Days since 1970-01-01 (Howard Hinnant's `days_from_civil`).
    pub fn days(self) -> i64 {
        let y = i64::from(self.y) - i64::from(self.m <= 2);
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let m = i64::from(self.m);
        let mp = (m + 9) % 12;
        let doy = (153 * mp + 2) / 5 + i64::from(self.d) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    /// The date `days` days since 1970-01-01 (`civil_from_days`); `None` outside 1..=9999.
    pub fn from_days(z: i64) -> Option<Date> {
        let z = z + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(m <= 2);
        Date::new(
            i32::try_from(y).ok()?,
            u32::try_from(m).ok()?,
            u32::try_from(d).ok()?,
        )
    }

    /// Day of week, 0 = Monday … 6 = Sunday.
    pub fn weekday(self) -> u32 {
        // 1970-01-01 was a Thursday (3).
        ((self.days() + 3).rem_euclid(7)) as u32
    }

    /// The date `n` days later (earlier for negative `n`).
    pub fn add_days(self, n: i64) -> Option<Date> {
        Date::from_days(self.days() + n)
    }

    /// The next weekday (Monday to Friday) strictly after this date. Exchange holidays are
    /// not modelled.
    pub fn next_weekday(self) -> Option<Date> {
        let mut d = self.add_days(1)?;
        while d.weekday() >= 5 {
            d = d.add_days(1)?;
        }
        Some(d)
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.y, self.m, self.d)
    }
}

/// Longest symbol accepted, in bytes.
pub const SYM_MAX_LEN: usize = 15;

/// A ticker symbol stored inline (no allocation; `Copy`). Grammar:
/// `[A-Z][A-Z0-9]*(\.[A-Z0-9]+)*`, at most 15 bytes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sym {
    len: u8,
    bytes: [u8; SYM_MAX_LEN],
}

impl Sym {
    /// A validated symbol.
    pub fn new(s: &str) -> Option<Sym> {
        let b = s.as_bytes();
        if b.is_empty() || b.len() > SYM_MAX_LEN || !b[0].is_ascii_uppercase() {
            return None;
        }
        let mut prev_dot = false;
        for &c in b {
            match c {
                b'A'..=b'Z' | b'0'..=b'9' => prev_dot = false,
                b'.' if !prev_dot => prev_dot = true,
                _ => return None,
            }
        }
        if prev_dot {
            return None;
        }
        let mut bytes = [0u8; SYM_MAX_LEN];
        bytes[..b.len()].copy_from_slice(b);
        Some(Sym {
            len: b.len() as u8,
            bytes,
        })
    }

    /// The symbol's bytes (ASCII), without the UTF-8 check of [`as_str`](Self::as_str).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The symbol text.
    pub fn as_str(&self) -> &str {
        // Only ASCII is ever stored, so this cannot fail.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }
}

impl fmt::Debug for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sym({})", self.as_str())
    }
}

impl fmt::Display for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn px_exact_and_display() {
        assert_eq!(Px::from_f64_exact(5002.10), Some(Px(50_021_000)));
        assert_eq!(Px::from_f64_exact(0.0125), Some(Px(125)));
        assert_eq!(Px::from_f64_exact(5002.12345), None);
        assert_eq!(Px::from_f64_exact(f64::NAN), None);
        assert_eq!(Px(50_021_000).to_string(), "5002.10");
        assert_eq!(Px(125).to_string(), "0.0125");
        assert_eq!(Px(-30_000).to_string(), "-3.00");
        assert_eq!(Px(12_345).to_string(), "1.2345");
        assert_eq!(Px(0).to_string(), "0.00");
        assert_eq!(Px::round_to(3.024, Px(500)), Some(Px(30_000)));
        assert_eq!(Px::floor_to(2.999_999_999_9, Px::CENT), Some(Px(30_000)));
        assert_eq!(Px::ceil_to(1.231, Px::CENT), Some(Px(12_400)));
    }

    #[test]
    fn ts_parse_print() {
        let t = Ts::parse("09:30:01.250").unwrap();
        assert_eq!(t, Ts::hms(9, 30, 1, 250));
        assert_eq!(t.to_string(), "09:30:01.250");
        assert_eq!(Ts::parse("9:30:01.250"), None);
        assert_eq!(Ts::parse("24:00:00.000"), None);
        assert_eq!(Ts::parse_hhmm("16:00"), Some(Ts::hms(16, 0, 0, 0)));
        assert_eq!(Ts::hms(16, 0, 0, 0).hhmm(), "16:00");
    }

    #[test]
    fn dates() {
        let d = Date::parse("2025-04-09").unwrap();
        assert_eq!(d.weekday(), 2); // Wednesday
        assert_eq!(Date::from_days(d.days()), Some(d));
        assert_eq!(
            Date::parse("2025-04-11").unwrap().next_weekday(),
            Date::parse("2025-04-14")
        );
        assert_eq!(Date::parse("2025-02-29"), None);
        assert_eq!(
            Date::parse("2024-02-29").map(|d| d.to_string()).as_deref(),
            Some("2024-02-29")
        );
    }

    #[test]
    fn syms() {
        assert_eq!(Sym::new("BRK.B").unwrap().as_str(), "BRK.B");
        assert!(Sym::new("spy").is_none());
        assert!(Sym::new("SPY.").is_none());
        assert!(Sym::new("A..B").is_none());
        assert!(Sym::new("ABCDEFGHIJKLMNOP").is_none());
    }
}
