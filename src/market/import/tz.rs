//! Time zones for imports: UTC, fixed offsets, and every IANA zone (`Europe/London`,
//! `Asia/Tokyo`, `America/New_York`, …) from the tz database bundled into the binary by the
//! `jiff` crate (its `tzdb-bundle-always` feature: nothing is read from the system or
//! downloaded at run time, so an import gives the same tape on every machine). A name the
//! database does not know is refused (docs/tapes.md §5).

use std::cell::Cell;

use crate::market::{Date, Ts};

/// A time zone an import converts UTC instants into.
#[derive(Clone, Debug)]
pub enum Zone {
    /// A fixed offset from UTC, in seconds (UTC is 0).
    Fixed(i32),
    /// A zone of the tz database, with its rules (daylight saving, history).
    Tz(Box<TzZone>),
}

/// An IANA zone and a cache of the offset in force over the stretch last asked about.
#[derive(Clone, Debug)]
pub struct TzZone {
    name: String,
    tz: jiff::tz::TimeZone,
    /// `[from, to)` in UTC seconds and the offset in force there: records come in time
    /// order, so almost every lookup is the stretch before the next transition.
    cache: Cell<(i64, i64, i32)>,
}

impl PartialEq for Zone {
    fn eq(&self, other: &Zone) -> bool {
        match (self, other) {
            (Zone::Fixed(a), Zone::Fixed(b)) => a == b,
            (Zone::Tz(a), Zone::Tz(b)) => a.name == b.name,
            _ => false,
        }
    }
}

impl Eq for Zone {}

/// Nanoseconds per second / day.
pub const NS_PER_SEC: i64 = 1_000_000_000;
const SECS_PER_DAY: i64 = 86_400;

impl Zone {
    /// The zone of a name: `UTC` (`Etc/UTC`, `Z`), a fixed offset `+HH:MM` / `-HH:MM`, or
    /// any name of the bundled tz database (links such as `US/Eastern` included).
    pub fn parse(name: &str) -> Option<Zone> {
        match name {
            "UTC" | "Etc/UTC" | "Z" => Some(Zone::Fixed(0)),
            _ => parse_offset(name).map(Zone::Fixed).or_else(|| {
                // Offsets read as fixed above; the database's own fixed zones (`Etc/GMT+5`)
                // and every named zone come from it.
                if name.is_empty() || name.starts_with(['+', '-']) {
                    return None;
                }
                let tz = jiff::tz::TimeZone::get(name).ok()?;
                Some(Zone::Tz(Box::new(TzZone {
                    name: name.to_string(),
                    tz,
                    cache: Cell::new((0, 0, 0)),
                })))
            }),
        }
    }

    /// The offset from UTC (seconds) in force at the UTC instant `utc_secs`.
    pub fn offset_at(&self, utc_secs: i64) -> i32 {
        match self {
            Zone::Fixed(o) => *o,
            Zone::Tz(z) => {
                let (from, to, off) = z.cache.get();
                if utc_secs >= from && utc_secs < to {
                    return off;
                }
                let Ok(ts) = jiff::Timestamp::from_second(utc_secs) else {
                    return 0;
                };
                let off = z.tz.to_offset(ts).seconds();
                // Valid from here up to the next transition (strictly after `ts`).
                let to =
                    z.tz.following(ts)
                        .next()
                        .map_or(i64::MAX, |t| t.timestamp().as_second());
                z.cache.set((utc_secs, to, off));
                off
            }
        }
    }

    /// The local date and time of day (milliseconds, truncated) of a UTC instant in
    /// nanoseconds since the Unix epoch.
    pub fn local(&self, utc_ns: i64) -> Option<(Date, Ts)> {
        let secs = utc_ns.div_euclid(NS_PER_SEC);
        let sub_ms = utc_ns.rem_euclid(NS_PER_SEC) / 1_000_000;
        let local = secs + i64::from(self.offset_at(secs));
        let date = Date::from_days(local.div_euclid(SECS_PER_DAY))?;
        let tod = local.rem_euclid(SECS_PER_DAY);
        Some((date, Ts(u32::try_from(tod * 1000 + sub_ms).ok()?)))
    }

    /// The UTC instant (ns) of a local wall-clock time. In the repeated hour of a fall-back
    /// the earlier instant is taken; a time in the skipped hour of a spring-forward reads
    /// with the offset before the gap (02:30 on a US spring-forward day is 03:30 daylight
    /// time): the database's "compatible" rule.
    pub fn to_utc_ns(&self, date: Date, tod_ns: i64) -> i64 {
        let local_secs = date.days() * SECS_PER_DAY + tod_ns.div_euclid(NS_PER_SEC);
        let sub = tod_ns.rem_euclid(NS_PER_SEC);
        let off = match self {
            Zone::Fixed(o) => *o,
            Zone::Tz(z) => {
                let day = local_secs.div_euclid(SECS_PER_DAY);
                let sod = local_secs.rem_euclid(SECS_PER_DAY);
                let civil = Date::from_days(day).and_then(|d| {
                    jiff::civil::DateTime::new(
                        i16::try_from(d.y).ok()?,
                        d.m as i8,
                        d.d as i8,
                        (sod / 3600) as i8,
                        ((sod / 60) % 60) as i8,
                        (sod % 60) as i8,
                        0,
                    )
                    .ok()
                });
                match civil.and_then(|c| z.tz.to_ambiguous_timestamp(c).compatible().ok()) {
                    Some(ts) => return ts.as_second() * NS_PER_SEC + sub,
                    // Outside the database's range: the offset at that instant read as UTC.
                    None => self.offset_at(local_secs),
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
        assert_eq!(Zone::parse("Europe/Nowhere"), None);
        assert_eq!(Zone::parse("+5"), None);
        // The link names the database keeps are the same zone's rules.
        let e = Zone::parse("US/Eastern").unwrap();
        assert_eq!(e.offset_at(utc("2025-07-01", 12, 0)), -4 * 3600);
        // Before 2007 the US rules were others (first Sunday of April to last of
        // October): 2006-04-01 was standard time, 2006-04-03 daylight.
        assert_eq!(ny.offset_at(utc("2006-04-01", 12, 0)), -5 * 3600);
        assert_eq!(ny.offset_at(utc("2006-04-03", 12, 0)), -4 * 3600);
    }

    #[test]
    fn london_and_a_southern_zone_change_on_their_own_dates() {
        let utc = |d: &str, h: i64, m: i64| {
            Date::parse(d).unwrap().days() * SECS_PER_DAY + h * 3600 + m * 60
        };
        let lon = Zone::parse("Europe/London").unwrap();
        // 2025: British Summer Time from 2025-03-30 01:00 UTC to 2025-10-26 01:00 UTC
        // (the last Sundays of March and October), weeks after New York's change.
        assert_eq!(lon.offset_at(utc("2025-03-30", 0, 59)), 0);
        assert_eq!(lon.offset_at(utc("2025-03-30", 1, 0)), 3600);
        assert_eq!(lon.offset_at(utc("2025-10-26", 0, 59)), 3600);
        assert_eq!(lon.offset_at(utc("2025-10-26", 1, 0)), 0);
        // Asked out of order too (the cache is only a shortcut).
        assert_eq!(lon.offset_at(utc("2025-01-15", 8, 0)), 0);
        assert_eq!(lon.offset_at(utc("2025-06-15", 8, 0)), 3600);
        // 08:00 London on 2025-03-31 is 07:00 UTC; on 2025-03-28, 08:00 UTC.
        let d = |s: &str| Date::parse(s).unwrap();
        assert_eq!(
            lon.to_utc_ns(d("2025-03-31"), 8 * 3600 * NS_PER_SEC),
            utc("2025-03-31", 7, 0) * NS_PER_SEC
        );
        assert_eq!(
            lon.to_utc_ns(d("2025-03-28"), 8 * 3600 * NS_PER_SEC),
            utc("2025-03-28", 8, 0) * NS_PER_SEC
        );
        // The skipped hour (01:30 on 2025-03-30) reads with the offset before it: 01:30
        // UTC; the repeated one (01:30 on 2025-10-26) is its earlier instant, 00:30 UTC.
        let half = (3600 + 1800) * NS_PER_SEC;
        assert_eq!(
            lon.to_utc_ns(d("2025-03-30"), half),
            utc("2025-03-30", 1, 30) * NS_PER_SEC
        );
        assert_eq!(
            lon.to_utc_ns(d("2025-10-26"), half),
            utc("2025-10-26", 0, 30) * NS_PER_SEC
        );
        // Sydney's daylight time ends in April: +11:00 to +10:00 at 03:00 local on
        // 2025-04-06, which is 16:00 UTC the day before.
        let syd = Zone::parse("Australia/Sydney").unwrap();
        assert_eq!(syd.offset_at(utc("2025-04-05", 15, 59)), 11 * 3600);
        assert_eq!(syd.offset_at(utc("2025-04-05", 16, 0)), 10 * 3600);
    }
}
