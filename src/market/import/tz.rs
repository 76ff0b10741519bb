//! Time zones for imports: UTC, fixed offsets, and the US exchange zones with the US
//! daylight-saving rules in force since 2007 (second Sunday of March 02:00 to first Sunday of
//! November 02:00, local). No tz database is read: the zones a tape can be in are few and
//! their rules fixed; any other name is refused (docs/tapes.md).

use crate::market::{Date, Ts};

/// A time zone an import converts UTC instants into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Zone {
    /// A fixed offset from UTC, in seconds (UTC is 0).
    Fixed(i32),
    /// A US zone: standard offset in seconds (−5 h for New York), +1 h in daylight time.
    Us(i32),
}

/// Nanoseconds per second / day.
pub const NS_PER_SEC: i64 = 1_000_000_000;
const SECS_PER_DAY: i64 = 86_400;

impl Zone {
    /// The zone of a name: `UTC`, `America/New_York` (`US/Eastern`), `America/Chicago`
    /// (`US/Central`), or a fixed offset `+HH:MM` / `-HH:MM`.
    pub fn parse(name: &str) -> Option<Zone> {
        match name {
            "UTC" | "Etc/UTC" | "Z" => Some(Zone::Fixed(0)),
            "America/New_York" | "US/Eastern" => Some(Zone::Us(-5 * 3600)),
            "America/Chicago" | "US/Central" => Some(Zone::Us(-6 * 3600)),
            _ => parse_offset(name).map(Zone::Fixed),
        }
    }

    /// The offset from UTC (seconds) in force at the UTC instant `utc_secs`.
    pub fn offset_at(self, utc_secs: i64) -> i32 {
        match self {
            Zone::Fixed(o) => o,
            Zone::Us(std) => {
                let local_std = utc_secs + i64::from(std);
                let y = Date::from_days(local_std.div_euclid(SECS_PER_DAY)).map_or(1970, |d| d.y);
                let (start, end) = us_dst_bounds(y, std);
                if utc_secs >= start && utc_secs < end {
                    std + 3600
                } else {
                    std
                }
            }
        }
    }

    /// The local date and time of day (milliseconds, truncated) of a UTC instant in
    /// nanoseconds since the Unix epoch.
    pub fn local(self, utc_ns: i64) -> Option<(Date, Ts)> {
        let secs = utc_ns.div_euclid(NS_PER_SEC);
        let sub_ms = utc_ns.rem_euclid(NS_PER_SEC) / 1_000_000;
        let local = secs + i64::from(self.offset_at(secs));
        let date = Date::from_days(local.div_euclid(SECS_PER_DAY))?;
        let tod = local.rem_euclid(SECS_PER_DAY);
        Some((date, Ts(u32::try_from(tod * 1000 + sub_ms).ok()?)))
    }

    /// The UTC instant (ns) of a local wall-clock time. In the repeated hour of a fall-back
    /// the earlier instant is taken; a time in the skipped hour of a spring-forward reads
    /// as standard time.
    pub fn to_utc_ns(self, date: Date, tod_ns: i64) -> i64 {
        let local_secs = date.days() * SECS_PER_DAY + tod_ns.div_euclid(NS_PER_SEC);
        let sub = tod_ns.rem_euclid(NS_PER_SEC);
        let off = match self {
            Zone::Fixed(o) => o,
            Zone::Us(std) => {
                let dst = std + 3600;
                // Try daylight first (the earlier instant of a repeated hour).
                if self.offset_at(local_secs - i64::from(dst)) == dst {
                    dst
                } else {
                    std
                }
            }
        };
        (local_secs - i64::from(off)) * NS_PER_SEC + sub
    }
}

fn parse_offset(s: &str) -> Option<i32> {
    let b = s.as_bytes();
    if b.len() != 6 || !matches!(b[0], b'+' | b'-') || b[3] != b':' {
        return None;
    }
    let num = |x: &[u8]| -> Option<i32> {
        x.iter().try_fold(0i32, |v, &c| {
            c.is_ascii_digit().then(|| v * 10 + i32::from(c - b'0'))
        })
    };
    let (h, m) = (num(&b[1..3])?, num(&b[4..6])?);
    if h > 14 || m > 59 {
        return None;
    }
    let o = h * 3600 + m * 60;
    Some(if b[0] == b'-' { -o } else { o })
}

/// The nth (1-based) Sunday of a month.
fn nth_sunday(y: i32, m: u32, n: u32) -> Option<Date> {
    let first = Date::new(y, m, 1)?;
    // weekday(): 0 = Monday … 6 = Sunday.
    let to_sunday = (6 + 7 - first.weekday()) % 7;
    first.add_days(i64::from(to_sunday + 7 * (n - 1)))
}

/// The UTC instants (s) daylight time starts and ends in year `y` for a US zone.
fn us_dst_bounds(y: i32, std: i32) -> (i64, i64) {
    let at = |d: Option<Date>, off: i32| {
        d.map_or(0, |d| d.days() * SECS_PER_DAY + 2 * 3600 - i64::from(off))
    };
    (
        at(nth_sunday(y, 3, 2), std),
        at(nth_sunday(y, 11, 1), std + 3600),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_york_daylight_rules() {
        let ny = Zone::parse("America/New_York").unwrap();
        let utc = |d: &str, h: i64, m: i64| {
            Date::parse(d).unwrap().days() * SECS_PER_DAY + h * 3600 + m * 60
        };
        // 2025: DST from 2025-03-09 07:00 UTC to 2025-11-02 06:00 UTC.
        assert_eq!(ny.offset_at(utc("2025-03-09", 6, 59)), -5 * 3600);
        assert_eq!(ny.offset_at(utc("2025-03-09", 7, 0)), -4 * 3600);
        assert_eq!(ny.offset_at(utc("2025-11-02", 5, 59)), -4 * 3600);
        assert_eq!(ny.offset_at(utc("2025-11-02", 6, 0)), -5 * 3600);
        // 09:30 New York on 2025-04-09 (daylight) is 13:30 UTC; in January, 14:30 UTC.
        let (d, t) = ny
            .local(utc("2025-04-09", 13, 30) * NS_PER_SEC + 5_000_000)
            .unwrap();
        assert_eq!(
            (d.to_string(), t),
            ("2025-04-09".into(), Ts::hms(9, 30, 0, 5))
        );
        let (_, t) = ny.local(utc("2025-01-15", 14, 30) * NS_PER_SEC).unwrap();
        assert_eq!(t, Ts::hms(9, 30, 0, 0));
        // And back.
        let d = Date::parse("2025-04-09").unwrap();
        let ns = ny.to_utc_ns(d, (9 * 3600 + 30 * 60) * NS_PER_SEC);
        assert_eq!(ns, utc("2025-04-09", 13, 30) * NS_PER_SEC);
        assert_eq!(Zone::parse("+05:30"), Some(Zone::Fixed(5 * 3600 + 1800)));
        assert_eq!(Zone::parse("Europe/Paris"), None);
    }
}
