//! CSV trades and quotes. Columns are named by the caller (defaults below); one file may
//! hold trades, quotes or both (a `type` column, or the row's filled-in columns, says which).
//!
//! Defaults: `ts`, `symbol`, `price`, `size`, `bid`, `ask`, `bid_size`, `ask_size`, no type
//! column. Timestamps: an integer (or decimal) count of `s`, `ms`, `us` or `ns` since the
//! Unix epoch (UTC), or `iso` text `YYYY-MM-DD[T ]HH:MM:SS[.fraction][Z|±HH:MM]` (without
//! an offset, the time is local in the import's time zone). The unit is always given.

use std::fs::File;
use std::io::{self, BufReader};

use super::{
    BAD_PRICE, BAD_SIDE, CROSSED, Counting, ImportError, Kind, Record, Source, Zone, not_positive,
    parse_price, tape_inst,
};
use crate::market::{Date, Px};

/// How timestamps are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TsUnit {
    /// Seconds since the epoch.
    S,
    /// Milliseconds.
    Ms,
    /// Microseconds.
    Us,
    /// Nanoseconds.
    Ns,
    /// ISO-8601 text.
    Iso,
}

impl TsUnit {
    /// From its flag value.
    pub fn parse(s: &str) -> Option<TsUnit> {
        Some(match s {
            "s" => TsUnit::S,
            "ms" => TsUnit::Ms,
            "us" => TsUnit::Us,
            "ns" => TsUnit::Ns,
            "iso" => TsUnit::Iso,
            _ => return None,
        })
    }
}

/// The column names of a CSV layout.
#[derive(Clone, Debug)]
pub struct Columns {
    pub ts: String,
    pub symbol: String,
    pub price: String,
    pub size: String,
    pub bid: String,
    pub ask: String,
    pub bid_size: String,
    pub ask_size: String,
    /// A column saying `trade`/`quote` (the words of [`TRADE_WORDS`] and [`QUOTE_WORDS`],
    /// any case), if any.
    pub kind: Option<String>,
    /// A fixed symbol for files without a symbol column. A file that has the `symbol`
    /// column anyway must agree with it on every row (an empty cell takes it): a column of
    /// other symbols is refused, not renamed (their prices would become this symbol's).
    pub fixed_symbol: Option<String>,
}

impl Default for Columns {
    fn default() -> Columns {
        Columns {
            ts: "ts".into(),
            symbol: "symbol".into(),
            price: "price".into(),
            size: "size".into(),
            bid: "bid".into(),
            ask: "ask".into(),
            bid_size: "bid_size".into(),
            ask_size: "ask_size".into(),
            kind: None,
            fixed_symbol: None,
        }
    }
}

/// What a `--type-col` cell says of a trade (compared in lower case).
pub const TRADE_WORDS: [&str; 4] = ["trade", "trades", "t", "print"];
/// What a `--type-col` cell says of a quote (compared in lower case).
pub const QUOTE_WORDS: [&str; 5] = ["quote", "quotes", "q", "bbo", "nbbo"];

struct Idx {
    ts: usize,
    symbol: Option<usize>,
    price: Option<usize>,
    size: Option<usize>,
    bid: Option<usize>,
    ask: Option<usize>,
    bid_size: Option<usize>,
    ask_size: Option<usize>,
    kind: Option<usize>,
}

/// A CSV file as a record source.
pub struct CsvSource {
    file: String,
    rd: csv::Reader<Counting<BufReader<File>>>,
    n: std::rc::Rc<std::cell::Cell<u64>>,
    idx: Idx,
    unit: TsUnit,
    zone: Zone,
    /// `--symbol`: the symbol as given and what it names.
    fixed: Option<(
        String,
        (crate::market::Sym, Option<crate::market::OptionKey>),
    )>,
    /// The symbol column's name (for a refusal of a row that disagrees with `--symbol`).
    symbol_col: String,
    row: csv::StringRecord,
    no: u64,
    /// Data rows read.
    rows: u64,
    /// A row that is both a quote and a trade gives the quote first, then this.
    pending: Option<Record>,
}

impl CsvSource {
    /// Open `path` with this layout.
    pub fn open(
        path: &std::path::Path,
        cols: &Columns,
        unit: TsUnit,
        zone: Zone,
    ) -> Result<CsvSource, ImportError> {
        let file = path.display().to_string();
        let f = File::open(path)
            .map_err(|e| ImportError::new(&file, 0, format!("cannot open: {e}")))?;
        let (c, n) = Counting::new(BufReader::new(f));
        let mut rd = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(false)
            .from_reader(c);
        let hdr = rd
            .headers()
            .map_err(|e| ImportError::new(&file, 0, format!("cannot read the header row: {e}")))?
            .clone();
        if hdr.is_empty() {
            // Not "no column ts in the header row ()": there is no header row at all.
            return Err(ImportError::new(
                &file,
                0,
                "nothing to import: the file is empty (no header row, no records)",
            ));
        }
        let find = |name: &str| column(&hdr, name).map_err(|e| ImportError::new(&file, 0, e));
        let need = |name: &str, flag: &str| {
            find(name)?.ok_or_else(|| ImportError::new(&file, 0, missing(&hdr, name, flag)))
        };
        let fixed = match &cols.fixed_symbol {
            Some(s) => Some((
                s.trim().to_string(),
                tape_inst(s).map_err(|e| ImportError::new(&file, 0, e))?,
            )),
            None => None,
        };
        let idx = Idx {
            ts: need(&cols.ts, "--ts-col")?,
            // With --symbol the column is optional, but read when there: its rows must agree.
            symbol: if fixed.is_some() {
                find(&cols.symbol)?
            } else {
                Some(need(&cols.symbol, "--symbol-col")?)
            },
            price: find(&cols.price)?,
            size: find(&cols.size)?,
            bid: find(&cols.bid)?,
            ask: find(&cols.ask)?,
            bid_size: find(&cols.bid_size)?,
            ask_size: find(&cols.ask_size)?,
            kind: match &cols.kind {
                Some(k) => Some(need(k, "--type-col")?),
                None => None,
            },
        };
        if idx.price.is_none() && (idx.bid.is_none() || idx.ask.is_none()) {
            return Err(ImportError::new(
                &file,
                0,
                format!(
                    "neither a price column ({:?}) nor bid and ask columns ({:?}, {:?}): nothing to import",
                    cols.price, cols.bid, cols.ask
                ),
            ));
        }
        Ok(CsvSource {
            file,
            rd,
            n,
            idx,
            unit,
            zone,
            fixed,
            symbol_col: cols.symbol.clone(),
            row: csv::StringRecord::new(),
            no: 0,
            rows: 0,
            pending: None,
        })
    }

    fn field(&self, i: Option<usize>) -> &str {
        i.and_then(|i| self.row.get(i)).map_or("", str::trim)
    }

    fn bad(&self, why: impl Into<String>) -> ImportError {
        ImportError {
            line: self.row.position().map(|p| p.line()),
            ..ImportError::new(&self.file, self.no, why)
        }
    }

    /// A refusal of the row as invalid market data of the kind `what` (skipped with
    /// `--skip-invalid`).
    fn invalid(&self, what: &'static str, why: impl Into<String>) -> ImportError {
        ImportError {
            invalid: Some(what),
            ..self.bad(why)
        }
    }

    /// The price in column `i` (`what`: `bid: `, `ask: ` or empty), positive or (`zero`) 0;
    /// a number at 0 or below is invalid market data of the kind `kind`.
    fn price(
        &self,
        i: Option<usize>,
        zero: bool,
        what: &str,
        kind: &'static str,
    ) -> Result<Px, ImportError> {
        let s = self.field(i);
        parse_price(s, zero).map_err(|e| {
            if not_positive(s) {
                self.invalid(kind, format!("{what}{e}"))
            } else {
                self.bad(format!("{what}{e}"))
            }
        })
    }

    fn size(&self, i: Option<usize>, what: &str) -> Result<u64, ImportError> {
        let s = self.field(i);
        if s.is_empty() {
            return Ok(0);
        }
        // Some exports write sizes as `100.0`.
        let t = s.strip_suffix(".0").unwrap_or(s);
        t.parse::<u64>().map_err(|_| {
            // Digits that do not fit are a number too large, not a malformed one.
            if !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit()) {
                self.bad(format!(
                    "{what} {s:?} is too large: a size is at most {} (2^64 - 1)",
                    u64::MAX
                ))
            } else {
                self.bad(format!("{what} {s:?} is not a non-negative integer"))
            }
        })
    }

    /// The row's instrument: its symbol column's, or `--symbol`'s. With `--symbol`, a
    /// symbol column that names another symbol is refused (code `USAGE`: the flag is wrong
    /// for this file), not overwritten: `--symbol SPY` on a file of SPY and QQQ rows wrote
    /// QQQ's prices as SPY prints. An empty cell takes `--symbol`.
    fn instrument(
        &self,
    ) -> Result<(crate::market::Sym, Option<crate::market::OptionKey>), ImportError> {
        let cell = self.field(self.idx.symbol);
        let Some((given, inst)) = &self.fixed else {
            return tape_inst(cell).map_err(|e| self.bad(e));
        };
        if cell.is_empty() || tape_inst(cell).is_ok_and(|c| c == *inst) {
            return Ok(*inst);
        }
        Err(ImportError {
            code: "USAGE",
            ..self.bad(format!(
                "--symbol {given} is given, but the file's {:?} column says {cell:?} on this row: --symbol is the one symbol of a file without a symbol column, and would write this row's prices as {given}'s; to import the file's symbols drop --symbol (the column is read then), and to keep only {given}'s rows give --symbols {given} instead",
                self.symbol_col
            ))
        })
    }

    /// Whether a row is a trade, a quote, or both: what its `--type-col` cell says, or
    /// without one, which of its price and bid/ask columns are filled in.
    fn kinds(&self) -> Result<(bool, bool), ImportError> {
        if self.idx.kind.is_none() {
            return Ok((
                !self.field(self.idx.price).is_empty(),
                !self.field(self.idx.bid).is_empty() && !self.field(self.idx.ask).is_empty(),
            ));
        }
        let cell = self.field(self.idx.kind);
        let word = cell.to_ascii_lowercase();
        if TRADE_WORDS.contains(&word.as_str()) {
            Ok((true, false))
        } else if QUOTE_WORDS.contains(&word.as_str()) {
            Ok((false, true))
        } else {
            // Quoted as the file writes it, with every word accepted.
            Err(self.bad(format!(
                "type {cell:?} is neither a trade ({}) nor a quote ({}), in any case",
                TRADE_WORDS.join(", "),
                QUOTE_WORDS.join(", ")
            )))
        }
    }

    /// The row's quote, or `None` for an option's book without an offer (an ask of 0, as
    /// many vendors write "no ask"): skipped, as a DBN book without an ask is. An option's
    /// bid may be 0 (no bid), as on the tape.
    fn quote(&self, option: bool) -> Result<Option<Kind>, ImportError> {
        let bid = self.price(self.idx.bid, option, "bid: ", BAD_SIDE)?;
        let ask = self.price(self.idx.ask, option, "ask: ", BAD_SIDE)?;
        if ask == Px::ZERO {
            return Ok(None);
        }
        if bid > ask {
            return Err(self.invalid(
                CROSSED,
                format!("crossed quote: bid {bid} is above ask {ask}"),
            ));
        }
        Ok(Some(Kind::Quote {
            bid,
            ask,
            bsz: self.size(self.idx.bid_size, "bid size")?,
            asz: self.size(self.idx.ask_size, "ask size")?,
        }))
    }

    /// The row's record (a row with a quote and a trade gives the quote, then the trade
    /// from `pending`), or `None` for a row whose only quote is skipped ([`Self::quote`]).
    fn parse_row(&mut self) -> Result<Option<Record>, ImportError> {
        let ts_s = self.field(Some(self.idx.ts)).to_string();
        let ns = parse_ts(&ts_s, self.unit, &self.zone).map_err(|e| self.bad(e))?;
        let (sym, opt) = self.instrument()?;
        let (is_trade, is_quote) = self.kinds()?;
        let trade = if is_trade {
            let px = self.price(self.idx.price, false, "", BAD_PRICE)?;
            Some(Kind::Trade {
                px,
                sz: self.size(self.idx.size, "size")?,
            })
        } else {
            None
        };
        let quote = if is_quote {
            self.quote(opt.is_some())?
        } else {
            None
        };
        let mk = |kind| Record {
            ns,
            sym,
            opt,
            kind,
            no: self.no,
        };
        match (quote, trade) {
            (Some(q), Some(t)) => {
                self.pending = Some(mk(t));
                Ok(Some(mk(q)))
            }
            (Some(q), None) => Ok(Some(mk(q))),
            (None, Some(t)) => Ok(Some(mk(t))),
            (None, None) if is_quote => Ok(None),
            (None, None) => Err(self.bad("the row has neither a price nor a bid and an ask")),
        }
    }
}

impl Source for CsvSource {
    fn next_record(&mut self) -> Option<Result<Record, ImportError>> {
        if let Some(r) = self.pending.take() {
            return Some(Ok(r));
        }
        loop {
            let mut row = std::mem::take(&mut self.row);
            let got = self.rd.read_record(&mut row);
            self.row = row;
            self.no += 1;
            match got {
                Ok(false) => return None,
                Ok(true) => {
                    self.rows += 1;
                    // A skipped row (an option's book without an ask) gives no record.
                    if let Some(r) = self.parse_row().transpose() {
                        return Some(r);
                    }
                }
                Err(e) => return Some(Err(self.bad(format!("unreadable row: {e}")))),
            }
        }
    }

    fn bytes_read(&self) -> u64 {
        self.n.get()
    }

    fn records_read(&self) -> u64 {
        self.rows
    }
}

/// The refusal of a header row without the required column `name` (named by `flag`): the
/// header's columns, and the flag to give with the column it most likely is (a name
/// holding `time` for the timestamp, `sym` or `ticker` for the symbol), so that
/// `TIMESTAMP,TICKER,…` says `--ts-col TIMESTAMP`, not only that `ts` is missing.
fn missing(hdr: &csv::StringRecord, name: &str, flag: &str) -> String {
    if let [one] = hdr.iter().collect::<Vec<_>>()[..]
        && let Some(d) = [';', '\t', '|'].into_iter().find(|d| one.contains(*d))
    {
        // `ts;symbol;price;size` is one column to a comma-separated reader.
        return format!(
            "the header row ({one}) is one column: the file looks separated by {d:?}, and tape import reads comma-separated files (with a point for decimals); convert it to commas first"
        );
    }
    let hints: &[&str] = match flag {
        "--ts-col" => &["time", "ts", "date"],
        "--symbol-col" => &["sym", "ticker", "instrument", "root"],
        _ => &["type", "kind", "side"],
    };
    let cols: Vec<&str> = hdr.iter().map(str::trim).collect();
    let guess = hints.iter().find_map(|h| {
        cols.iter()
            .find(|c| c.to_ascii_lowercase().contains(h))
            .copied()
    });
    let quote = |c: &str| {
        if c.contains(|ch: char| ch.is_whitespace() || ch == '"') {
            format!("{c:?}")
        } else {
            c.to_string()
        }
    };
    let give = match guess {
        Some(c) => format!("give {flag} {}", quote(c)),
        None => format!("give {flag} COLUMN, one of the header's"),
    };
    let symbol = if flag == "--symbol-col" {
        " (or --symbol SYM for a file of one symbol without a symbol column)"
    } else {
        ""
    };
    format!(
        "no column {name:?} in the header row ({}), in any case: {give}{symbol}; the --*-col flags name the columns of every CSV input",
        cols.join(",")
    )
}

/// The index of the column named `name` in the header row (names compared trimmed, and in
/// any case when no column is written exactly as `name`: `TS` is `ts`), `None`
/// when there is none, or why not: a column the import reads that the header names twice
/// (`ts,symbol,price,size,price`) is refused rather than read from the first, as the tape
/// reader refuses a repeated key. A column the import does not read may repeat.
fn column(hdr: &csv::StringRecord, name: &str) -> Result<Option<usize>, String> {
    let name = name.trim();
    let exact = hdr.iter().filter(|h| h.trim() == name).count();
    // The name as written when the header has it so; else in any case (`TS` for `ts`,
    // `Price` for `price`): vendors capitalise their headers.
    let mut at = hdr
        .iter()
        .enumerate()
        .filter(|(_, h)| {
            if exact > 0 {
                h.trim() == name
            } else {
                h.trim().eq_ignore_ascii_case(name)
            }
        })
        .map(|(i, _)| i);
    match (at.next(), at.next()) {
        (Some(a), Some(b)) => Err(format!(
            "the header row names column {name:?} twice (columns {} and {}): which one is meant is not clear, so neither is read; rename or remove one",
            a + 1,
            b + 1
        )),
        (first, _) => Ok(first),
    }
}

impl TsUnit {
    /// What a timestamp in this unit looks like, for messages.
    fn expected(self) -> &'static str {
        match self {
            TsUnit::S => "a count of seconds since the Unix epoch (--ts-unit s)",
            TsUnit::Ms => "a count of milliseconds since the Unix epoch (--ts-unit ms)",
            TsUnit::Us => "a count of microseconds since the Unix epoch (--ts-unit us)",
            TsUnit::Ns => "a count of nanoseconds since the Unix epoch (--ts-unit ns)",
            TsUnit::Iso => "YYYY-MM-DD[T ]HH:MM:SS[.fraction][Z|+HH:MM] (--ts-unit iso)",
        }
    }
}

/// A timestamp in `unit` as UTC nanoseconds since the epoch.
pub fn parse_ts(s: &str, unit: TsUnit, zone: &Zone) -> Result<i64, String> {
    if s.trim().is_empty() {
        return Err(format!(
            "the timestamp field is empty (expected {})",
            unit.expected()
        ));
    }
    let per = match unit {
        TsUnit::S => 1_000_000_000i64,
        TsUnit::Ms => 1_000_000,
        TsUnit::Us => 1_000,
        TsUnit::Ns => 1,
        TsUnit::Iso => return parse_iso(s, zone),
    };
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty()
        || !int.bytes().all(|c| c.is_ascii_digit())
        || !frac.bytes().all(|c| c.is_ascii_digit())
    {
        return Err(format!("timestamp {s:?} is not {}", unit.expected()));
    }
    let whole: i64 = int
        .parse::<i64>()
        .ok()
        .and_then(|v| v.checked_mul(per))
        .ok_or_else(|| {
            format!(
                "timestamp {s:?} is out of range as {}{}",
                unit.expected(),
                unit_hint(int, unit, zone)
            )
        })?;
    let mut sub = 0i64;
    let mut scale = per;
    for c in frac.bytes() {
        scale /= 10;
        if scale == 0 {
            break;
        }
        sub += i64::from(c - b'0') * scale;
    }
    // Saturated past i64: refused below as after 2099 (it overflowed within a second of it).
    let ns = whole.saturating_add(sub);
    if !(PLAUSIBLE_FROM_NS..PLAUSIBLE_TO_NS).contains(&i128::from(ns)) {
        // In range of the type but not of market data: a count in a smaller unit than the
        // one given (`1744205400000`, ms, read as ns is 1969-12-31 19:29:04 New York) would
        // import every record at one instant on a date decades before any feed.
        let day = zone
            .local(ns)
            .map_or(String::new(), |(d, t)| format!(" ({d} {})", t.hhmmss()));
        return Err(format!(
            "timestamp {s:?} as {} falls {}{day}: an epoch count is read from 1990 to 2099{}",
            unit.expected(),
            if i128::from(ns) < PLAUSIBLE_FROM_NS {
                "before 1990"
            } else {
                "in 2100 or later"
            },
            unit_hint(int, unit, zone)
        ));
    }
    Ok(ns)
}

/// The first instant an epoch count may name (1990-01-01 UTC, nanoseconds): an earlier one
/// is a count in the wrong unit, not market data.
const PLAUSIBLE_FROM_NS: i128 = 631_152_000 * 1_000_000_000;
/// The first instant an epoch count may not name (2100-01-01 UTC, nanoseconds).
const PLAUSIBLE_TO_NS: i128 = 4_102_444_800 * 1_000_000_000;

/// For a count out of range in `unit`: the unit that puts it between 1990 and 2100, as a
/// hint (`: 19 digits looks like ns (2025-04-09): try --ts-unit ns`), or nothing. The unit is
/// still never guessed: the hint says which flag to give.
fn unit_hint(int: &str, unit: TsUnit, zone: &Zone) -> String {
    let Ok(v) = int.parse::<i128>() else {
        return String::new();
    };
    let units = [
        (TsUnit::S, 1_000_000_000i128, "s"),
        (TsUnit::Ms, 1_000_000, "ms"),
        (TsUnit::Us, 1_000, "us"),
        (TsUnit::Ns, 1, "ns"),
    ];
    for (u, per, name) in units {
        let ns = v.saturating_mul(per);
        if u == unit || !(PLAUSIBLE_FROM_NS..PLAUSIBLE_TO_NS).contains(&ns) {
            continue;
        }
        let day = i64::try_from(ns)
            .ok()
            .and_then(|n| zone.local(n))
            .map_or(String::new(), |(d, _)| format!(" ({d})"));
        return format!(
            ": {} digits looks like {name}{day}: try --ts-unit {name}",
            int.len()
        );
    }
    String::new()
}

/// An ISO timestamp as UTC nanoseconds. A timestamp in the format that names a date or a
/// time that does not exist (`2025-02-30`, `24:00:00`) is refused saying so, not as a
/// format error.
fn parse_iso(s: &str, zone: &Zone) -> Result<i64, String> {
    let bad = || format!("timestamp {s:?} is not YYYY-MM-DD[T ]HH:MM:SS[.fraction][Z|+HH:MM]");
    let b = s.as_bytes();
    if b.len() < 19 || !matches!(b[10], b'T' | b' ') {
        return Err(bad());
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        s.get(r)?.bytes().try_fold(0i64, |v, c| {
            c.is_ascii_digit().then(|| v * 10 + i64::from(c - b'0'))
        })
    };
    if num(0..4).is_none() || b[4] != b'-' || num(5..7).is_none() || b[7] != b'-' {
        return Err(bad());
    }
    num(8..10).ok_or_else(bad)?;
    let date = Date::parse(&s[..10])
        .ok_or_else(|| format!("timestamp {s:?}: there is no date {}", &s[..10]))?;
    if b[13] != b':' || b[16] != b':' {
        return Err(bad());
    }
    let (h, m, sec) = (
        num(11..13).ok_or_else(bad)?,
        num(14..16).ok_or_else(bad)?,
        num(17..19).ok_or_else(bad)?,
    );
    if h > 23 || m > 59 || sec > 60 {
        return Err(format!(
            "timestamp {s:?}: there is no time {} (hours run from 00 to 23, minutes from 00 to 59, seconds from 00 to 60)",
            &s[11..19]
        ));
    }
    let mut i = 19;
    let mut sub = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let mut scale = 100_000_000i64;
        while let Some(c) = b.get(i).filter(|c| c.is_ascii_digit()) {
            sub += i64::from(c - b'0') * scale;
            scale /= 10;
            i += 1;
        }
    }
    let tod = ((h * 60 + m) * 60 + sec) * 1_000_000_000 + sub;
    let rest = &s[i..];
    match rest {
        "" => Ok(zone.to_utc_ns(date, tod)),
        "Z" => Ok(Zone::Fixed(0).to_utc_ns(date, tod)),
        off => match Zone::parse(off) {
            Some(z @ Zone::Fixed(_)) => Ok(z.to_utc_ns(date, tod)),
            _ => Err(bad()),
        },
    }
}

/// For `io::Error` conversions in this module.
#[allow(dead_code)]
fn io_err(e: io::Error) -> String {
    e.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        let ny = Zone::parse("America/New_York").unwrap();
        let a = parse_ts("2025-04-09 09:30:00.250", TsUnit::Iso, &ny).unwrap();
        let b = parse_ts("2025-04-09T13:30:00.250Z", TsUnit::Iso, &ny).unwrap();
        let c = parse_ts("2025-04-09T09:30:00.25-04:00", TsUnit::Iso, &ny).unwrap();
        let d = parse_ts("1744205400250", TsUnit::Ms, &ny).unwrap();
        let e = parse_ts("1744205400.25", TsUnit::S, &ny).unwrap();
        assert_eq!((a, b, c, d), (b, c, d, e));
        assert_eq!(a, 1_744_205_400_250_000_000);
        assert!(parse_ts("09:30", TsUnit::Iso, &ny).is_err());
        assert!(parse_ts("-5", TsUnit::Ns, &ny).is_err());
        // In the format, but no such date or time: said so, not "is not YYYY-MM-DD…".
        assert_eq!(
            parse_ts("2025-02-30T10:00:00", TsUnit::Iso, &ny),
            Err("timestamp \"2025-02-30T10:00:00\": there is no date 2025-02-30".into())
        );
        let e = parse_ts("2025-03-07 24:00:00", TsUnit::Iso, &ny).unwrap_err();
        assert!(e.contains(": there is no time 24:00:00 (hours run"), "{e}");
        let e = parse_ts("2025-3-07 10:00:00", TsUnit::Iso, &ny).unwrap_err();
        assert!(e.contains("is not YYYY-MM-DD"), "{e}");
        // Out of range in the unit given: the unit that fits is named, not guessed.
        let e = parse_ts("1744205399800000000", TsUnit::Ms, &ny).unwrap_err();
        assert!(
            e.ends_with(": 19 digits looks like ns (2025-04-09): try --ts-unit ns"),
            "{e}"
        );
        let e = parse_ts("99999999999999999999999", TsUnit::S, &ny).unwrap_err();
        assert!(e.ends_with("(--ts-unit s)"), "{e}");
        // In range of the type but before 1990 (a count in a smaller unit than the one
        // given): refused naming the unit that fits, as a count out of range is.
        let e = parse_ts("1744205400000", TsUnit::Ns, &ny).unwrap_err();
        assert_eq!(
            e,
            "timestamp \"1744205400000\" as a count of nanoseconds since the Unix epoch (--ts-unit ns) falls before 1990 (1969-12-31 19:29:04): an epoch count is read from 1990 to 2099: 13 digits looks like ms (2025-04-09): try --ts-unit ms"
        );
        let e = parse_ts("1744205400", TsUnit::Ms, &ny).unwrap_err();
        assert!(
            e.ends_with(": 10 digits looks like s (2025-04-09): try --ts-unit s"),
            "{e}"
        );
        // No unit fits: the range alone.
        let e = parse_ts("5", TsUnit::S, &ny).unwrap_err();
        assert!(
            e.ends_with("an epoch count is read from 1990 to 2099"),
            "{e}"
        );
        let e = parse_ts("4102444800", TsUnit::S, &ny).unwrap_err();
        assert!(e.contains("falls in 2100 or later"), "{e}");
        // The edges: 1990-01-01 00:00:00 UTC is read, and so is the last instant of 2099.
        assert!(parse_ts("631152000", TsUnit::S, &ny).is_ok());
        assert!(parse_ts("4102444799.999", TsUnit::S, &ny).is_ok());
    }

    #[test]
    fn columns_match_as_written_else_in_any_case() {
        let h = csv::StringRecord::from(vec!["TS", " Price ", "price", "SIZE", "Size"]);
        assert_eq!(column(&h, "ts"), Ok(Some(0)));
        // Written exactly: that one, though another matches in another case.
        assert_eq!(column(&h, "price"), Ok(Some(2)));
        assert!(column(&h, "size").unwrap_err().contains("twice"));
        assert_eq!(column(&h, "bid"), Ok(None));
    }
}
