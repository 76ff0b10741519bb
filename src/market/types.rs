//! Small exact value types shared by tapes and the market model: [`Px`] (fixed-point price),
//! [`Ts`] (time of day in milliseconds), [`Date`] (civil date) and [`Sym`] (inline symbol).

use std::fmt;
use std::ops::{Add, Neg, Sub};

/// Number of [`Px`] units in one currency unit (prices are ten-thousandths).
pub const PX_SCALE: i64 = 10_000;

/// Largest magnitude a [`Px`] accepts from a float (keeps every raw value exactly
/// representable in an `f64`).
const PX_MAX_ABS: f64 = 1.0e11;

/// [`PX_MAX_ABS`] in ten-thousandths: the largest raw price read from text.
const PX_MAX_RAW: u64 = 1_000_000_000_000_000;

/// An exact fixed-point price in ten-thousandths of a currency unit (`5002.10` is
/// `Px(50_021_000)`). Equality, ordering and printing are exact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Px(pub i64);

/// Which way [`Px::to_grid`] rounds a price that is not on the grid.
#[derive(Debug, Clone, Copy)]
enum Grid {
    Round,
    Floor,
    Ceil,
}

impl Px {
    /// Without trailing zeros, as a strike is written (`517`, `517.5`).
    pub fn trimmed(self) -> String {
        let s = self.to_string();
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }

    /// Zero.
    pub const ZERO: Px = Px(0);
    /// One cent.
    pub const CENT: Px = Px(100);
    /// The largest price a tape holds, 10^11 ([`PX_MAX_ABS`]): the tape reader refuses a
    /// larger one, and `tape import` refuses to write one, both in [`Px::too_large`]'s words.
    pub const MAX: Px = Px(PX_MAX_RAW as i64);

    /// Why a price written `shown` (its text, as in the file) is refused as above
    /// [`Px::MAX`]: the same words from the tape reader and the importer.
    #[cold]
    pub fn too_large(shown: impl fmt::Display) -> String {
        format!("{shown} is too large: a tape price is at most {PX_MAX_ABS} (10^11)")
    }

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

    /// The positive JSON decimal at the start of `b`, read straight into the fixed point (no
    /// float; a word at a time, see `decimal_prefix_scalar` for
    /// the digit-at-a-time reference): `0` or digits without a leading zero (at most 12), then
    /// optionally `.` and 1 to 4 digits. Returns the price and the bytes read.
    ///
    /// `None` for anything else: no digits, a leading zero (`007`), more than 4 decimals, a
    /// zero price, or a value above the range [`from_f64_exact`](Self::from_f64_exact)
    /// accepts (10^11). What follows the number is the caller's to check (a sign, an
    /// exponent or a fifth decimal digit after the bytes read means the number is not one
    /// this reads). For every number it reads whole, the price is the one
    /// `from_f64_exact` gives for the float the same text parses to (property-tested): a
    /// decimal with at most 4 decimals and at most 10^11 is `raw / 10^4` exactly, and its
    /// float round-trips through `round(x * 10^4)` with an error far under a half unit.
    /// Every other form is left to the general path, which alone refuses.
    #[inline]
    pub fn from_decimal_prefix(b: &[u8]) -> Option<(Px, usize)> {
        /// `10^(4-k)`: the scale of a number with `k` decimals.
        const SCALE_OF: [u64; 8] = [10_000, 1_000, 100, 10, 1, 0, 0, 0];
        // Word at a time: the integer digits in the first 8 bytes, the decimals in the 8
        // after the point (property-tested against the scalar reader).
        let Some(w) = b.first_chunk::<16>() else {
            return Self::decimal_prefix_scalar(b);
        };
        let all = u128::from_le_bytes(*w);
        let w0 = all as u64;
        let n = swar::digit_count(w0);
        if n.wrapping_sub(1) >= 7 {
            // No digit (not a number this reads), or 8 or more integer digits.
            return if n == 0 {
                None
            } else {
                Self::decimal_prefix_scalar(b)
            };
        }
        // JSON forbids leading zeros ("007"); "0" alone is fine.
        if n > 1 && w[0] == b'0' {
            return None;
        }
        let mut raw = swar::digits_value(w0, n) * 10_000;
        let mut used = n as usize;
        if (w0 >> (8 * n)) as u8 == b'.' {
            let w1 = (all >> (8 * (n + 1))) as u64;
            let k = swar::digit_count(w1);
            // 1 to 4 decimals (a fifth digit: more precision than a price has).
            if k.wrapping_sub(1) >= 4 {
                return None;
            }
            raw += swar::digits_value(w1, k) * SCALE_OF[k as usize & 7];
            used += 1 + k as usize;
        }
        // At most 7 integer digits: far under the 10^11 bound.
        if raw == 0 {
            return None;
        }
        Some((Px(raw as i64), used))
    }

    /// [`from_decimal_prefix`](Self::from_decimal_prefix) a digit at a time: the reference
    /// the word-at-a-time path is tested against, and what reads the forms it leaves (fewer
    /// than 16 bytes to look at, 8 or more integer digits).
    #[cold]
    pub(crate) fn decimal_prefix_scalar(b: &[u8]) -> Option<(Px, usize)> {
        /// `10^(4-k)`: the scale of a number with `k` decimals.
        const SCALE_OF: [u64; 5] = [10_000, 1_000, 100, 10, 1];
        let mut int: u64 = 0;
        let mut n = 0;
        while let Some(&c) = b.get(n) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            if n == 12 {
                return None;
            }
            int = int * 10 + u64::from(d);
            n += 1;
        }
        // JSON forbids leading zeros ("007"); "0" alone is fine.
        if n == 0 || (n > 1 && b[0] == b'0') {
            return None;
        }
        let mut raw = int * 10_000;
        if b.get(n) == Some(&b'.') {
            let mut frac: u64 = 0;
            let mut k = 0;
            while let Some(&c) = b.get(n + 1 + k) {
                let d = c.wrapping_sub(b'0');
                if d > 9 {
                    break;
                }
                if k == 4 {
                    return None;
                }
                frac = frac * 10 + u64::from(d);
                k += 1;
            }
            if k == 0 {
                return None;
            }
            raw += frac * SCALE_OF[k];
            n += 1 + k;
        }
        if raw == 0 || raw > PX_MAX_RAW {
            return None;
        }
        // `raw <= 10^15` fits an i64.
        Some((Px(raw as i64), n))
    }

    /// Round a float to the nearest multiple of `tick` (half away from zero). `None` for
    /// non-finite or out-of-range input, or a non-positive tick.
    pub fn round_to(x: f64, tick: Px) -> Option<Px> {
        Self::to_grid(x, tick, Grid::Round)
    }

    /// Round a float down to the tick grid.
    pub fn floor_to(x: f64, tick: Px) -> Option<Px> {
        Self::to_grid(x, tick, Grid::Floor)
    }

    /// Round a float up to the tick grid.
    pub fn ceil_to(x: f64, tick: Px) -> Option<Px> {
        Self::to_grid(x, tick, Grid::Ceil)
    }

    #[inline]
    fn to_grid(x: f64, tick: Px, way: Grid) -> Option<Px> {
        if !x.is_finite() || x.abs() > PX_MAX_ABS || tick.0 <= 0 {
            return None;
        }
        // Work in raw units first so that a value already on the grid (up to float noise
        // below 1e-7 of a unit) stays where it is.
        let raw = x * PX_SCALE as f64;
        let steps = raw / tick.0 as f64;
        // |steps| <= 10^15 < 2^52: its integer part (toward zero) and its fraction are both
        // exact, so rounding is done in integers, with libm's round / floor / ceil values
        // (`grid_rounding_matches_libm`).
        let t = steps as i64;
        let frac = steps - t as f64;
        let nearest = if frac >= 0.5 {
            t + 1
        } else if frac <= -0.5 {
            t - 1
        } else {
            t
        };
        let n = if (steps - nearest as f64).abs() < 1e-7 {
            nearest
        } else {
            match way {
                Grid::Round => nearest,
                Grid::Floor => t - i64::from(frac < 0.0),
                Grid::Ceil => t + i64::from(frac > 0.0),
            }
        };
        Some(Px(n * tick.0))
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

impl Px {
    /// Dollars with cents, rounded half away from zero: `-1.3274` → `-1.33`, `191` →
    /// `191.00` (the run report's and the screen's money).
    pub fn cents(self) -> String {
        let raw = i128::from(self.raw());
        let cents = (raw.abs() + 50) / 100;
        let sign = if raw < 0 && cents > 0 { "-" } else { "" };
        format!("{sign}{}.{:02}", cents / 100, cents % 100)
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
        while digits > 2 && frac.is_multiple_of(10) {
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

    /// [`parse`](Self::parse) of the text's bytes, a word at a time: `HH:MM:SS` as one
    /// 8-byte word (every digit checked, and the tens of hours at most 2, of minutes and
    /// seconds at most 5, in one test), `.mmm` as one 4-byte word (property-tested against
    /// a digit-at-a-time reader).
    #[inline]
    pub fn parse_bytes(b: &[u8]) -> Option<Ts> {
        let b: &[u8; 12] = b.try_into().ok()?;
        let (hms, frac) = b.split_first_chunk::<8>()?;
        let frac: &[u8; 4] = frac.try_into().ok()?;
        // Digits to their values, the separators to zero.
        let x = u64::from_le_bytes(*hms) ^ u64::from_le_bytes(*b"00:00:00");
        let y = u32::from_le_bytes(*frac) ^ u32::from_le_bytes(*b".000");
        // A byte is refused if it is above its bound (9, or 2 / 5 for the tens of the hour,
        // minute and second): adding `0x7f - bound` sets its high bit (a byte of 0x80 or
        // more is refused by its own high bit; the carry out of one cannot hide another).
        const HMS_ADD: u64 = u64::from_le_bytes([
            0x7f - 2,
            0x7f - 9,
            0x7f,
            0x7f - 5,
            0x7f - 9,
            0x7f,
            0x7f - 5,
            0x7f - 9,
        ]);
        const HIGH: u64 = 0x8080_8080_8080_8080;
        // The separators must be exact (zero after the xor).
        const SEP: u64 = u64::from_le_bytes([0, 0, 0xff, 0, 0, 0xff, 0, 0]);
        let bad = ((x | x.wrapping_add(HMS_ADD)) & HIGH)
            | (x & SEP)
            | u64::from(((y | y.wrapping_add(0x7676_7600)) & 0x8080_8080) | (y & 0xff));
        if bad != 0 {
            return None;
        }
        // Byte i of `t` is 10 * digit i + digit i + 1 (at most 99: no carry).
        let t = x * 10 + (x >> 8);
        let h = (t & 0xff) as u32;
        let m = ((t >> 24) & 0xff) as u32;
        let sec = ((t >> 48) & 0xff) as u32;
        let ms = ((y >> 8) & 0xff) * 100 + ((y >> 16) & 0xff) * 10 + (y >> 24);
        if h > 23 {
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

    /// A clock time as a person types it: `HH:MM`, `HH:MM:SS` or `HH:MM:SS.mmm`, the hour's
    /// leading zero optional (`9:45`, `9:45:30`), spaces around it ignored. Where a person
    /// gives a time (the desk's seek, `frame --at`, the MCP tools' `at`).
    pub fn parse_clock(s: &str) -> Option<Ts> {
        let s = s.trim();
        let padded;
        let s = if s.find(':') == Some(1) {
            padded = format!("0{s}");
            padded.as_str()
        } else {
            s
        };
        match s.len() {
            5 => Ts::parse_hhmm(s),
            8 => Ts::parse(&format!("{s}.000")),
            12 => Ts::parse(s),
            _ => None,
        }
    }

    /// Print as `HH:MM:SS` (milliseconds dropped): the Display form's first eight bytes.
    pub fn hhmmss(self) -> String {
        let s = self.to_string();
        s.get(..8).unwrap_or(&s).to_string()
    }

    /// As a ttl reads: `HH:MM`, with the seconds where it has them (`10:51:30`); the
    /// milliseconds dropped.
    pub fn clock_text(self) -> String {
        let t = self.hhmmss();
        match t.strip_suffix(":00") {
            Some(hm) => hm.to_string(),
            None => t,
        }
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

/// Word-at-a-time (SWAR) digit routines over 8 bytes read little-endian (byte 0 of the text
/// is the lowest byte of the word).
pub(crate) mod swar {
    const ZEROS: u64 = u64::from_le_bytes(*b"00000000");
    const HIGH: u64 = 0x8080_8080_8080_8080;

    /// The number of ASCII digits at the start of the 8 bytes `w` (0 to 8).
    ///
    /// A byte is a digit when `c ^ b'0'` is at most 9: its high bit or that of
    /// `(c ^ b'0') + 0x76` is set otherwise. The add carries out of a byte only when the
    /// byte is 0x8a or more (not a digit, its own high bit set), so the lowest marked byte
    /// is exactly the first non-digit.
    #[inline(always)]
    pub(crate) const fn digit_count(w: u64) -> u32 {
        let x = w ^ ZEROS;
        let nd = (x | x.wrapping_add(0x7676_7676_7676_7676)) & HIGH;
        nd.trailing_zeros() / 8
    }

    /// The value of the first `n` bytes of `w` as decimal digits (`1 <= n <= 8`; those
    /// bytes ASCII digits, the rest anything).
    #[inline(always)]
    pub(crate) const fn digits_value(w: u64, n: u32) -> u64 {
        // The n digits (now 0 to 9) to the top of the word, zeros (digit 0) below them; the
        // bytes after them are shifted out.
        let x = (w ^ ZEROS) << (8 * (8 - n));
        // Pairs, then fours, then all eight (each lane at most 99, 9999, 99999999).
        let x = (x.wrapping_mul(10 * 256 + 1)) >> 8;
        let x = ((x & 0x00ff_00ff_00ff_00ff).wrapping_mul(100 * 65_536 + 1)) >> 16;
        ((x & 0x0000_ffff_0000_ffff).wrapping_mul(10_000 * (1 << 32) + 1)) >> 32
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
///
/// Stored as 16 bytes: the symbol's bytes, zeros after them, and its length last, so two
/// symbols are equal when their 16 bytes are (one comparison: the engine compares symbols
/// at every tape event). Ordered by length, then bytes, and hashed as length then the 15
/// symbol bytes: the order and the hash of the two fields it had before.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Sym {
    /// `[..15]`: the bytes, zero-padded; `[15]`: the length.
    raw: [u8; SYM_MAX_LEN + 1],
}

impl Ord for Sym {
    fn cmp(&self, other: &Sym) -> std::cmp::Ordering {
        (self.raw[SYM_MAX_LEN], &self.raw[..SYM_MAX_LEN])
            .cmp(&(other.raw[SYM_MAX_LEN], &other.raw[..SYM_MAX_LEN]))
    }
}

impl PartialOrd for Sym {
    fn partial_cmp(&self, other: &Sym) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::hash::Hash for Sym {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.raw[SYM_MAX_LEN].hash(state);
        let bytes: &[u8; SYM_MAX_LEN] = self.raw.first_chunk().expect("15 of 16 bytes");
        bytes.hash(state);
    }
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
        let mut raw = [0u8; SYM_MAX_LEN + 1];
        raw[..b.len()].copy_from_slice(b);
        raw[SYM_MAX_LEN] = b.len() as u8;
        Some(Sym { raw })
    }

    /// The symbol's bytes (ASCII), without the UTF-8 check of [`as_str`](Self::as_str).
    pub fn as_bytes(&self) -> &[u8] {
        &self.raw[..usize::from(self.raw[SYM_MAX_LEN])]
    }

    /// The symbol as one 16-byte key: its bytes (zero after the last) and its length in the
    /// top byte; two symbols are equal when their keys are.
    #[inline]
    pub(crate) fn key(&self) -> u128 {
        u128::from_le_bytes(self.raw)
    }

    /// The symbol text.
    pub fn as_str(&self) -> &str {
        // Only ASCII is ever stored, so this cannot fail.
        std::str::from_utf8(self.as_bytes()).unwrap_or("")
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
    fn a_clock_time_is_taken_as_a_person_types_it() {
        assert!(Ts::parse_clock("11:30").is_some());
        assert!(Ts::parse_clock("11:30:15").is_some());
        assert!(Ts::parse_clock("11:30:15.250").is_some());
        assert_eq!(Ts::parse_clock("9:45"), Ts::parse_clock("09:45"));
        assert_eq!(Ts::parse_clock(" 9:45:30 "), Ts::parse_clock("09:45:30"));
        for bad in [
            "",
            "1130",
            "ab:cd",
            "11:3é",
            "99:99:99:99",
            "é",
            ":45",
            "9:5",
            "123:45",
        ] {
            assert!(Ts::parse_clock(bad).is_none(), "{bad}");
        }
    }

    proptest::proptest! {
        /// A symbol is equal, ordered and hashed as the pair (length, 15 zero-padded bytes)
        /// it was stored as before its 16-byte form: maps keyed by symbol keep their order.
        #[test]
        fn sym_compares_and_hashes_as_length_then_bytes(
            a in "[A-Z][A-Z0-9]{0,5}(\\.[A-Z0-9]{1,3})?",
            b in "[A-Z][A-Z0-9]{0,5}(\\.[A-Z0-9]{1,3})?",
        ) {
            use std::hash::{DefaultHasher, Hash, Hasher};
            let pair = |s: &str| {
                let mut bytes = [0u8; SYM_MAX_LEN];
                bytes[..s.len()].copy_from_slice(s.as_bytes());
                (s.len() as u8, bytes)
            };
            let hash = |h: &dyn Fn(&mut DefaultHasher)| {
                let mut st = DefaultHasher::new();
                h(&mut st);
                st.finish()
            };
            let (sa, sb) = (Sym::new(&a).unwrap(), Sym::new(&b).unwrap());
            proptest::prop_assert_eq!(sa.cmp(&sb), pair(&a).cmp(&pair(&b)));
            proptest::prop_assert_eq!(sa == sb, a == b);
            proptest::prop_assert_eq!(sa.as_str(), a.as_str());
            proptest::prop_assert_eq!(hash(&|st| sa.hash(st)), hash(&|st| pair(&a).hash(st)));
        }
    }

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
    fn decimal_prefix_edges() {
        let read = |s: &str| Px::from_decimal_prefix(s.as_bytes());
        assert_eq!(read("5002.10"), Some((Px(50_021_000), 7)));
        assert_eq!(read("0.0001"), Some((Px(1), 6)));
        assert_eq!(read("100000000000"), Some((Px(1_000_000_000_000_000), 12)));
        assert_eq!(read("100000000000.0001"), None);
        assert_eq!(read("7,\"sz\""), Some((Px(70_000), 1)));
        for bad in [
            "0",
            "0.0",
            "007",
            "1.",
            ".5",
            "1.23456",
            "-1",
            "",
            "1000000000000",
        ] {
            assert_eq!(read(bad), None, "{bad}");
        }
    }

    mod grid_prop {
        use super::*;
        use proptest::prelude::*;

        /// The grid rounding as it was written with libm's functions: the reference.
        fn libm_grid(x: f64, tick: Px, f: fn(f64) -> f64) -> Option<Px> {
            if !x.is_finite() || x.abs() > PX_MAX_ABS || tick.0 <= 0 {
                return None;
            }
            let steps = x * PX_SCALE as f64 / tick.0 as f64;
            let nearest = libm::round(steps);
            let steps = if (steps - nearest).abs() < 1e-7 {
                nearest
            } else {
                f(steps)
            };
            Some(Px(steps as i64 * tick.0))
        }

        fn price() -> impl Strategy<Value = f64> {
            prop_oneof![
                4 => -1000.0f64..1000.0,
                // Halves, grid points and their neighbours.
                3 => (-200_000i64..200_000, -2i64..=2).prop_map(|(k, e)| {
                    k as f64 * 0.005 + e as f64 * f64::EPSILON
                }),
                2 => -1.0e11f64..1.0e11,
                1 => prop_oneof![Just(0.0), Just(-0.0), Just(1.0e11), Just(-1.0e11),
                    Just(1.0e11 + 1.0), Just(f64::NAN), Just(f64::INFINITY), Just(0.5e-4)],
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(8192))]
            #[test]
            fn grid_rounding_matches_libm(x in price(), tick in prop_oneof![
                Just(1i64), Just(100), Just(500), 1i64..100_000, -5i64..=0,
            ]) {
                let tick = Px(tick);
                prop_assert_eq!(Px::round_to(x, tick), libm_grid(x, tick, libm::round));
                prop_assert_eq!(Px::floor_to(x, tick), libm_grid(x, tick, libm::floor));
                prop_assert_eq!(Px::ceil_to(x, tick), libm_grid(x, tick, libm::ceil));
            }
        }
    }

    mod decimal_prop {
        use super::*;
        use proptest::prelude::*;

        /// The general path's price: serde_json's number, then `from_f64_exact` (as the
        /// tape reader's `Fields::px` does), positive only.
        fn general(s: &str) -> Option<Px> {
            let x = serde_json::from_str::<serde_json::Value>(s)
                .ok()?
                .as_f64()?;
            if !x.is_finite() || x <= 0.0 {
                return None;
            }
            Px::from_f64_exact(x)
        }

        /// Canonical JSON decimals: no leading zero, at most 12 integer digits, at most 4
        /// decimals (the form `from_decimal_prefix` reads).
        fn canonical(s: &str) -> bool {
            let (int, frac) = match s.split_once('.') {
                Some((i, f)) => (i, Some(f)),
                None => (s, None),
            };
            let digits = |t: &str| !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit());
            digits(int)
                && int.len() <= 12
                && (int == "0" || !int.starts_with('0'))
                && frac.is_none_or(|f| digits(f) && f.len() <= 4)
        }

        fn number() -> impl Strategy<Value = String> {
            prop_oneof![
                6 => ("[0-9]{1,13}", prop::option::of("[0-9]{0,6}")).prop_map(|(i, f)| match f {
                    Some(f) => format!("{i}.{f}"),
                    None => i,
                }),
                // Around the 10^11 bound.
                2 => (99_999_999_990_000u64..100_000_000_010_000u64)
                    .prop_map(|r| format!("{}.{:04}", r / 10_000, r % 10_000)),
                1 => "-?[0-9]{1,4}(\\.[0-9]{1,3})?([eE][+-]?[0-9]{1,2})?",
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(4096))]
            /// Reading the digits straight into the fixed point agrees with the float path:
            /// what it reads whole has the general path's value, and every canonical
            /// decimal the general path accepts, it reads.
            #[test]
            fn decimal_prefix_agrees_with_the_float_path(s in number()) {
                let fast = Px::from_decimal_prefix(s.as_bytes());
                match fast {
                    Some((px, n)) if n == s.len() => prop_assert_eq!(general(&s), Some(px)),
                    Some((_, n)) => {
                        // Stopped early: never inside a digit run.
                        prop_assert!(!s.as_bytes()[n].is_ascii_digit());
                    }
                    None => prop_assert!(!canonical(&s) || general(&s).is_none(), "{}", s),
                }
                if canonical(&s) {
                    prop_assert_eq!(fast.map(|(p, _)| p), general(&s));
                }
            }
        }
    }

    mod swar_prop {
        use super::*;
        use proptest::prelude::*;

        /// The digit-at-a-time clock reader `Ts::parse_bytes` replaced: the reference.
        fn parse_bytes_scalar(b: &[u8]) -> Option<Ts> {
            let b: &[u8; 12] = b.try_into().ok()?;
            if b[2] != b':' || b[5] != b':' || b[8] != b'.' {
                return None;
            }
            // Every digit position checked without a branch each: a byte below `0` wraps to a
            // large value, so one test per position, or-ed.
            let d = |i: usize| u32::from(b[i].wrapping_sub(b'0'));
            let bad = (d(0) > 9)
                | (d(1) > 9)
                | (d(3) > 9)
                | (d(4) > 9)
                | (d(6) > 9)
                | (d(7) > 9)
                | (d(9) > 9)
                | (d(10) > 9)
                | (d(11) > 9);
            if bad {
                return None;
            }
            let h = d(0) * 10 + d(1);
            let m = d(3) * 10 + d(4);
            let sec = d(6) * 10 + d(7);
            let ms = d(9) * 100 + d(10) * 10 + d(11);
            if h > 23 || m > 59 || sec > 59 {
                return None;
            }
            Some(Ts::hms(h, m, sec, ms))
        }

        /// Bytes that make digit routines take every branch: digits (most), separators,
        /// the bytes next to the digits, signs, letters, and anything.
        fn byte() -> impl Strategy<Value = u8> {
            prop_oneof![
                8 => b'0'..=b'9',
                2 => prop::sample::select(b":./,;+-eE\"}\r\n \x00\x7f\x80\xff\xfa\xb0\xba".to_vec()),
                1 => any::<u8>(),
            ]
        }

        /// A clock text: valid most of the time, with one byte changed or out of range
        /// otherwise.
        fn clock() -> impl Strategy<Value = Vec<u8>> {
            prop_oneof![
                3 => (0u32..30, 0u32..70, 0u32..70, 0u32..1000).prop_map(|(h, m, s, ms)| {
                    format!("{h:02}:{m:02}:{s:02}.{ms:03}").into_bytes()
                }),
                2 => ((0u32..24, 0u32..60, 0u32..60, 0u32..1000), 0usize..12, byte()).prop_map(
                    |((h, m, s, ms), i, c)| {
                        let mut t = format!("{h:02}:{m:02}:{s:02}.{ms:03}").into_bytes();
                        t[i] = c;
                        t
                    }
                ),
                1 => proptest::collection::vec(byte(), 10..14),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(4096))]
            /// The word-at-a-time clock reads what the digit-at-a-time one reads.
            #[test]
            fn clock_swar_agrees_with_scalar(t in clock()) {
                prop_assert_eq!(Ts::parse_bytes(&t), parse_bytes_scalar(&t));
            }

            /// The digit count and value of 8 bytes, against a loop.
            #[test]
            fn digits_swar_agree_with_a_loop(b in proptest::array::uniform8(byte())) {
                let w = u64::from_le_bytes(b);
                let n = b.iter().take_while(|c| c.is_ascii_digit()).count();
                prop_assert_eq!(swar::digit_count(w) as usize, n);
                for k in 1..=n {
                    let v = b[..k].iter().fold(0u64, |v, c| v * 10 + u64::from(c - b'0'));
                    prop_assert_eq!(swar::digits_value(w, k as u32), v);
                }
            }

            /// The word-at-a-time price reader reads what the digit-at-a-time one reads,
            /// whatever follows the number (16 bytes or more: the word path).
            #[test]
            fn decimal_prefix_swar_agrees_with_scalar(
                int in "[0-9]{0,13}",
                frac in prop::option::of("[0-9]{0,6}"),
                tail in proptest::collection::vec(byte(), 16..24),
            ) {
                let mut t = int.into_bytes();
                if let Some(f) = frac {
                    t.push(b'.');
                    t.extend_from_slice(f.as_bytes());
                }
                t.extend_from_slice(&tail);
                prop_assert_eq!(Px::from_decimal_prefix(&t), Px::decimal_prefix_scalar(&t));
                // And every shorter cut of it (the scalar path below 16 bytes).
                for cut in [0, 1, t.len() / 2, 15, 16] {
                    let c = &t[..cut.min(t.len())];
                    prop_assert_eq!(Px::from_decimal_prefix(c), Px::decimal_prefix_scalar(c));
                }
            }
        }
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
