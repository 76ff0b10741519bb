//! Importing real data into canonical v2 tapes: trades and quotes from CSV files and from
//! Databento DBN files (`kestrel tape import`, docs/tapes.md §5).
//!
//! Every source yields [`Record`]s in its own time order (a record earlier than the one
//! before it in the same file is refused). Several files are merged in time order (ties:
//! the order of the files on the command line, then the file's own order). The tape is made
//! in two streaming passes over the inputs: the first checks every record and learns the
//! sessions (dates, last times, prior closes) and symbols the header needs; the second
//! writes. Memory holds per-session and per-symbol figures, never the records.

pub mod csv;
pub mod dbn;
pub mod tz;

use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::fmt;
use std::io::{self, Write};

use crate::market::tape::header_line;
use crate::market::tape::{
    SessionSpec, SymbolSpec, TAPE_VERSION_2, TapeHeader, VolSpec, write_event,
};
use crate::market::{Date, OptionKey, Px, QuoteInst, Sym, TapeEvent, TapeQuote, Tick, Ts};

pub use tz::Zone;

/// What one input record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A trade.
    Trade {
        /// Price.
        px: Px,
        /// Size.
        sz: u64,
    },
    /// A top-of-book quote.
    Quote {
        /// Bid.
        bid: Px,
        /// Ask.
        ask: Px,
        /// Bid size.
        bsz: u64,
        /// Ask size.
        asz: u64,
    },
}

/// One input record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// UTC instant, nanoseconds since the Unix epoch.
    pub ns: i64,
    /// Symbol (for an option, its underlying: the OCC root).
    pub sym: Sym,
    /// The option contract, for a record on an OCC option symbol.
    pub opt: Option<OptionKey>,
    /// Trade or quote.
    pub kind: Kind,
    /// Record number in its file (1-based; a CSV's data rows, a DBN file's records).
    pub no: u64,
}

/// A refused input: the file, the record number (0: the file itself) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportError {
    /// The file, as named on the command line; `None` for a refusal of the inputs together
    /// (several inputs of which none keeps a record), printed without `file=` and `record=`.
    pub file: Option<String>,
    /// Record number (0 for the file as a whole: opening it, its header or metadata).
    pub record: u64,
    /// Why.
    pub reason: String,
    /// The code: [`ImportError::CODE`], or `USAGE` for flags the inputs show to be wrong
    /// ([`ImportError::usage`]).
    pub code: &'static str,
    /// For a record refused as invalid market data (a crossed quote, a price or a side of
    /// a book at 0 or below), what kind of invalid it is (`crossed quotes`, …): the
    /// records `--skip-invalid` skips and counts by this. `None` for every other refusal
    /// (a file's structure, a timestamp, a number that is not one), which no flag skips.
    pub invalid: Option<&'static str>,
    /// The line of the file the record is on (a CSV row's, from the reader), when known.
    pub line: Option<u64>,
}

impl ImportError {
    /// The stable error code.
    pub const CODE: &'static str = "IMPORT";

    /// A refusal of record `record` of `file`.
    pub fn new(file: &str, record: u64, reason: impl Into<String>) -> ImportError {
        ImportError {
            file: Some(file.to_string()),
            record,
            reason: reason.into(),
            code: Self::CODE,
            invalid: None,
            line: None,
        }
    }

    /// A refusal of record `record` of `file` as invalid market data of the kind `what`
    /// (see [`ImportError::invalid`]): skipped with `--skip-invalid`.
    pub fn invalid(
        file: &str,
        record: u64,
        what: &'static str,
        reason: impl Into<String>,
    ) -> ImportError {
        ImportError {
            invalid: Some(what),
            ..ImportError::new(file, record, reason)
        }
    }

    /// A refusal of the inputs together, not of one file (printed without `file=`).
    pub fn inputs(reason: impl Into<String>) -> ImportError {
        ImportError {
            file: None,
            record: 0,
            reason: reason.into(),
            code: Self::CODE,
            invalid: None,
            line: None,
        }
    }

    /// Flags the inputs show to be wrong (`error code=USAGE message=…`): a per-symbol flag
    /// naming a symbol the tape does not have.
    pub fn usage(reason: impl Into<String>) -> ImportError {
        ImportError {
            code: "USAGE",
            ..ImportError::inputs(reason)
        }
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(
                f,
                "error code={} file={file} record={} message={}",
                self.code, self.record, self.reason
            ),
            None => write!(f, "error code={} message={}", self.code, self.reason),
        }
    }
}

impl std::error::Error for ImportError {}

/// Something in the input that is likely wrong but not refused (the import goes on):
/// printed before the summary line as `warning code=CODE file=F record=N message=…`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportWarning {
    /// The stable code: [`ImportWarning::PRICE_JUMP`], [`ImportWarning::WEEKEND`],
    /// [`ImportWarning::SHORT_FILE`], [`ImportWarning::ONE_INSTANT`], ….
    pub code: &'static str,
    /// The file and record it is about (`None`: the count of those not shown).
    pub at: Option<(String, u64)>,
    /// What was seen, and what it may mean.
    pub message: String,
}

impl ImportWarning {
    /// A trade more than [`JUMP_PCT`]% away from the previous trade of its symbol.
    pub const PRICE_JUMP: &'static str = "PRICE-JUMP";
    /// A session on a Saturday or a Sunday.
    pub const WEEKEND: &'static str = "WEEKEND";
    /// Records of one input repeating another input's, too few to be the same data twice.
    pub const REPEATED_ACROSS: &'static str = "REPEATED-ACROSS";
    /// A DBN file whose records stop well before the end of its query.
    pub const SHORT_FILE: &'static str = "SHORT-FILE";
    /// Most records on the dates imported fall outside the hours (a wrong `--tz`).
    pub const OUTSIDE_HOURS: &'static str = "OUTSIDE-HOURS";
    /// Every record kept (at least [`ONE_INSTANT_MIN`]) on one tape millisecond.
    pub const ONE_INSTANT: &'static str = "ONE-INSTANT";
}

impl fmt::Display for ImportWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.at {
            Some((file, record)) => write!(
                f,
                "warning code={} file={file} record={record} message={}",
                self.code, self.message
            ),
            None => write!(f, "warning code={} message={}", self.code, self.message),
        }
    }
}

/// The warnings of an import, at most [`Warnings::SHOWN`] of each code; the rest counted
/// (one line says how many more), so a feed full of bad prints does not flood stderr.
#[derive(Clone, Debug, Default)]
struct Warnings {
    list: Vec<ImportWarning>,
    more: BTreeMap<&'static str, u64>,
}

impl Warnings {
    /// The most warnings of one code shown.
    const SHOWN: usize = 5;

    fn push(&mut self, code: &'static str, file: &str, record: u64, message: String) {
        if self.list.iter().filter(|w| w.code == code).count() < Self::SHOWN {
            self.list.push(ImportWarning {
                code,
                at: Some((file.to_string(), record)),
                message,
            });
        } else {
            *self.more.entry(code).or_default() += 1;
        }
    }

    fn finish(mut self) -> Vec<ImportWarning> {
        for (code, n) in self.more {
            self.list.push(ImportWarning {
                code,
                at: None,
                message: format!("{n} more like the {} above (not shown)", Self::SHOWN),
            });
        }
        self.list
    }
}

/// A record kept: its input, its record number and its tape millisecond.
type KeptAt = (usize, u64, i64);

/// The fewest records kept, all on one millisecond, that are warned of
/// ([`ImportWarning::ONE_INSTANT`]): a trade and its quote, or a handful of prints of one
/// cross, may share an instant; a file's worth of records does not.
pub const ONE_INSTANT_MIN: u64 = 10;

/// A trade further than this (percent) from the previous trade of its symbol is warned of
/// ([`ImportWarning::PRICE_JUMP`]): a bad print (`.5` among `500.00`s) would otherwise
/// import silently, and the first trade of a session becomes the prior close.
pub const JUMP_PCT: i64 = 20;

/// The warning for a trade of `sym` at `px` after one at `prev` (`prev_at`: which record
/// that was), if it is more than [`JUMP_PCT`]% away.
fn price_jump(sym: Sym, px: Px, prev: Px, prev_at: &str) -> Option<String> {
    let (a, b) = (i128::from(px.raw()), i128::from(prev.raw()));
    if (a - b).abs() * 100 <= b * i128::from(JUMP_PCT) {
        return None;
    }
    let pct = (a - b) as f64 * 100.0 / b as f64;
    Some(format!(
        "{sym} trades at {px}, {pct:+.1}% from its previous trade at {prev} ({prev_at}): a move over {JUMP_PCT}% between two trades is more often a bad print (a misplaced decimal point, a wrong symbol) than the market; it is imported as it is (the first trade of a symbol is its prior close)"
    ))
}

/// The warning for a session on a weekend (exchanges are closed), if `d` is one: a wrong
/// `--tz` or epoch unit moves records onto another date more often than a market trades on
/// a Saturday.
fn weekend(d: Date) -> Option<String> {
    let day = match d.weekday() {
        5 => "Saturday",
        6 => "Sunday",
        _ => return None,
    };
    Some(format!(
        "the session {d} is a {day}, when exchanges are closed: if the data is not from a weekend, a wrong --tz (or a CSV's --ts-unit) may have moved its times; this record is its first"
    ))
}

/// A record's time for a message: its local date and time in the import's zone
/// (`2025-03-07 09:32:30.000`), to the nanosecond when `fine`; nanoseconds since the epoch
/// when the zone cannot place it.
fn local_time(zone: &Zone, ns: i64, fine: bool) -> String {
    match zone.local(ns) {
        Some((d, t)) if fine => format!("{d} {t}{:06}", ns.rem_euclid(1_000_000)),
        Some((d, t)) => format!("{d} {t}"),
        None => format!("{ns} ns since the Unix epoch"),
    }
}

/// A stream of records from one file.
pub trait Source {
    /// The next record, a refusal, or `None` at the end.
    fn next_record(&mut self) -> Option<Result<Record, ImportError>>;
    /// Bytes of the file read so far (for progress).
    fn bytes_read(&self) -> u64;
    /// Input records read so far: a CSV's data rows, a DBN file's records (every one,
    /// those that give no event too), however many events each gave.
    fn records_read(&self) -> u64;
    /// The instant (UTC ns) the file's data was asked up to, when it says (a DBN file's
    /// metadata `end`, the query's end): records stopping well before it may be a file cut
    /// on a record boundary, which reads as whole.
    fn query_end(&self) -> Option<i64> {
        None
    }
    /// Whether the file's trades are bars (a DBN ohlcv schema: four ticks a bar), whose
    /// volume is that of the trades of their symbol, which must not be imported with them.
    fn bars(&self) -> bool {
        false
    }
}

/// What to keep and how to make the sessions.
#[derive(Clone, Debug)]
pub struct Options {
    /// Exchange time zone: record times are converted into it.
    pub zone: Zone,
    /// Its name, written into the header's `tz`.
    pub tz_name: String,
    /// Keep only these symbols (all when empty).
    pub symbols: BTreeSet<Sym>,
    /// Keep sessions on or after this date.
    pub from: Option<Date>,
    /// Keep sessions on or before this date.
    pub to: Option<Date>,
    /// Keep only sessions whose date is one of these (all when empty).
    pub session_filter: BTreeSet<Date>,
    /// Extended hours (04:00 to 20:00) instead of regular hours (09:30 to 16:00).
    pub extended: bool,
    /// Prior close of the first session per symbol (otherwise its first trade).
    pub prior: BTreeMap<Sym, Px>,
    /// Tape name.
    pub name: String,
    /// Header `source`.
    pub source: String,
    /// The strike grid of an underlying's option chain (otherwise: the greatest common
    /// divisor of the strikes its option records name).
    pub strike_step: BTreeMap<Sym, Px>,
    /// At-the-money implied vol and skew of an underlying's chain (the header's `vol`):
    /// required for every underlying with option records.
    pub iv: BTreeMap<Sym, (f64, f64)>,
    /// Skip records refused as invalid market data ([`ImportError::invalid`]: crossed
    /// quotes, prices and book sides at 0 or below), counting them, instead of refusing
    /// the import (`--skip-invalid`).
    pub skip_invalid: bool,
}

impl Options {
    /// Session bounds (open, close).
    pub fn hours(&self) -> (Ts, Ts) {
        if self.extended {
            (Ts::hms(4, 0, 0, 0), Ts::hms(20, 0, 0, 0))
        } else {
            (Ts::hms(9, 30, 0, 0), Ts::hms(16, 0, 0, 0))
        }
    }

    /// The local date and time of a record, if the options keep it.
    fn keep(&self, r: &Record) -> Option<(Date, Ts)> {
        self.keep_or_why(r).ok()
    }

    /// The local date and time of a record, or the first filter that drops it (in this
    /// order: `--symbols`, the hours, `--from`/`--to`, `--session-filter`).
    fn keep_or_why(&self, r: &Record) -> Result<(Date, Ts), Dropped> {
        if !self.symbols.is_empty() && !self.symbols.contains(&r.sym) {
            return Err(Dropped::Symbol);
        }
        let (d, t) = self.zone.local(r.ns).ok_or(Dropped::Hours)?;
        let (open, close) = self.hours();
        if t < open || t > close {
            return Err(Dropped::Hours);
        }
        if self.from.is_some_and(|f| d < f) || self.to.is_some_and(|x| d > x) {
            return Err(Dropped::Range(d));
        }
        if !self.session_filter.is_empty() && !self.session_filter.contains(&d) {
            return Err(Dropped::SessionFilter(d));
        }
        Ok((d, t))
    }

    /// Whether a record outside the hours is on a date the import keeps (`--from`/`--to`,
    /// `--session-filter`): the records the outside-hours warning weighs.
    fn in_dates(&self, ns: i64) -> bool {
        let Some((d, _)) = self.zone.local(ns) else {
            return false;
        };
        self.from.is_none_or(|f| d >= f)
            && self.to.is_none_or(|x| d <= x)
            && (self.session_filter.is_empty() || self.session_filter.contains(&d))
    }

    /// The hours as words: `regular hours 09:30-16:00 in America/New_York`.
    fn hours_words(&self) -> String {
        let (o, c) = self.hours();
        format!(
            "{} hours {}-{} in {}",
            if self.extended { "extended" } else { "regular" },
            o.hhmm(),
            c.hhmm(),
            self.tz_name
        )
    }
}

/// Which filter drops a record ([`Options::keep_or_why`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dropped {
    /// Not in `--symbols`.
    Symbol,
    /// Outside the session hours (regular or extended).
    Hours,
    /// On a date outside `--from`/`--to`.
    Range(Date),
    /// On a date `--session-filter` does not name.
    SessionFilter(Date),
}

/// What the first pass saw of the records it did not keep, per input record (a record
/// giving two events, a quote and a trade, counts once): for the refusal of an import that
/// keeps nothing, which says which filter dropped what.
#[derive(Clone, Debug, Default)]
struct DropScan {
    /// Records dropped by `--symbols`, and (up to [`DropScan::NAMES`]) their symbols.
    symbol: u64,
    symbols: BTreeSet<Sym>,
    /// More symbols than those.
    more_symbols: bool,
    /// Records outside the hours.
    hours: u64,
    /// Records dropped by `--from`/`--to`, by `--session-filter`, and the first and last
    /// date of those.
    range: u64,
    session_filter: u64,
    dates: Option<(Date, Date)>,
    /// Option trades (kept out: a tape has no option prints).
    option_trades: u64,
    /// The last record counted of each input (its number), so a record counts once.
    last: Vec<Option<u64>>,
    /// Records kept (inside every filter; an option's trade too, kept out later), the last
    /// counted of each input, and the first and last instant of them.
    kept: u64,
    kept_last: Vec<Option<u64>>,
    kept_span: Option<(i64, i64)>,
    /// Records outside the hours on dates the import keeps, and the first and last instant
    /// of them: when they outnumber the kept ones, the hours or `--tz` are likely wrong.
    hours_in_dates: u64,
    hours_span: Option<(i64, i64)>,
}

/// Widen `span` (first, last) by `ns`.
fn widen(span: &mut Option<(i64, i64)>, ns: i64) {
    *span = Some(span.map_or((ns, ns), |(a, b)| (a.min(ns), b.max(ns))));
}

impl DropScan {
    /// The most symbols named in the refusal.
    const NAMES: usize = 8;

    fn new(inputs: usize) -> DropScan {
        DropScan {
            last: vec![None; inputs],
            kept_last: vec![None; inputs],
            ..DropScan::default()
        }
    }

    /// Note record `r` of input `fi` kept by the filters (once per record).
    fn keep(&mut self, fi: usize, r: &Record) {
        if let Some(slot) = self.kept_last.get_mut(fi)
            && *slot != Some(r.no)
        {
            *slot = Some(r.no);
            self.kept += 1;
            widen(&mut self.kept_span, r.ns);
        }
    }

    /// Note an event of record `no` of input `fi` that is not kept; `false` when the record
    /// was counted already (its other event).
    fn first_of(&mut self, fi: usize, no: u64) -> bool {
        let Some(slot) = self.last.get_mut(fi) else {
            return false;
        };
        if *slot == Some(no) {
            return false;
        }
        *slot = Some(no);
        true
    }

    fn drop(&mut self, fi: usize, r: &Record, why: Dropped, in_dates: bool) {
        if !self.first_of(fi, r.no) {
            return;
        }
        if why == Dropped::Hours && in_dates {
            self.hours_in_dates += 1;
            widen(&mut self.hours_span, r.ns);
        }
        let mut date = |d: Date| {
            self.dates = Some(match self.dates {
                None => (d, d),
                Some((a, b)) => (a.min(d), b.max(d)),
            });
        };
        match why {
            Dropped::Symbol => {
                self.symbol += 1;
                if self.symbols.len() < Self::NAMES {
                    self.symbols.insert(r.sym);
                } else if !self.symbols.contains(&r.sym) {
                    self.more_symbols = true;
                }
            }
            Dropped::Hours => self.hours += 1,
            Dropped::Range(d) => {
                self.range += 1;
                date(d);
            }
            Dropped::SessionFilter(d) => {
                self.session_filter += 1;
                date(d);
            }
        }
    }

    fn option_trade(&mut self, fi: usize, no: u64) {
        // A row whose quote is kept is kept; its trade is not another record dropped.
        if self.kept_last.get(fi) == Some(&Some(no)) {
            return;
        }
        if self.first_of(fi, no) {
            self.option_trades += 1;
        }
    }

    /// Why nothing was kept of `records` input records: each filter that dropped some, with
    /// how many and what it was given (`skipped`: records `--skip-invalid` skipped).
    fn nothing_kept(&self, opts: &Options, records: u64, inputs: usize, skipped: u64) -> String {
        if records == 0 {
            let what = if inputs == 1 {
                "the file holds no records (no data rows or records after its header)"
            } else {
                "the files hold no records (no data rows or records after their headers)"
            };
            return format!("nothing to import: {what}");
        }
        let mut why = self.reasons(opts, records, skipped);
        if skipped > 0 {
            why.push(format!(
                "{skipped} are invalid market data skipped by --skip-invalid"
            ));
        }
        format!(
            "no record is kept: of the {records} record{} read, {}",
            if records == 1 { "" } else { "s" },
            why.join("; ")
        )
    }

    /// The records dropped, by filter: how many each dropped and what it was given (the
    /// rest of `records` not kept, nor among the `skipped`, give no trade or quote).
    fn reasons(&self, opts: &Options, records: u64, skipped: u64) -> Vec<String> {
        let names = |v: &mut dyn Iterator<Item = String>| v.collect::<Vec<_>>().join(",");
        let mut why: Vec<String> = Vec::new();
        if self.symbol > 0 {
            let more = if self.more_symbols { ",…" } else { "" };
            why.push(format!(
                "{} are on symbols not in --symbols {} (the input's: {}{more})",
                self.symbol,
                names(&mut opts.symbols.iter().map(|s| s.to_string())),
                names(&mut self.symbols.iter().map(|s| s.to_string())),
            ));
        }
        if self.hours > 0 {
            why.push(format!(
                "{} fall outside the {}{}",
                self.hours,
                opts.hours_words(),
                if opts.extended {
                    ""
                } else {
                    " (--extended-hours keeps 04:00-20:00)"
                }
            ));
        }
        let span = self.dates.map_or(String::new(), |(a, b)| {
            if a == b {
                format!("their date: {a}")
            } else {
                format!("their dates: {a} to {b}")
            }
        });
        if self.range > 0 {
            let mut given = Vec::new();
            if let Some(f) = opts.from {
                given.push(format!("--from {f}"));
            }
            if let Some(t) = opts.to {
                given.push(format!("--to {t}"));
            }
            why.push(format!(
                "{} are on dates outside {} ({span})",
                self.range,
                given.join(" ")
            ));
        }
        if self.session_filter > 0 {
            why.push(format!(
                "{} are on dates not in --session-filter {} ({span})",
                self.session_filter,
                names(&mut opts.session_filter.iter().map(|d| d.to_string())),
            ));
        }
        if self.option_trades > 0 {
            why.push(format!(
                "{} are option trades (a tape has no option prints)",
                self.option_trades
            ));
        }
        let counted = self.symbol
            + self.hours
            + self.range
            + self.session_filter
            + self.option_trades
            + self.kept
            + skipped;
        if counted < records {
            why.push(format!(
                "{} give no trade or quote (system, error and symbol-mapping records; books one-sided or unchanged)",
                records - counted
            ));
        }
        why
    }

    /// The warning when most records on the dates kept fall outside the hours (more than
    /// half of those inside them): a wrong `--tz` keeps a slice of the day (London's
    /// 14:30-16:00 of a New York day) and exits 0, so the slice is named, with the times of
    /// the records kept and dropped.
    fn outside_hours(&self, opts: &Options) -> Option<String> {
        let inside = self.kept + self.option_trades;
        if inside == 0 || self.hours_in_dates <= inside {
            return None;
        }
        let total = inside + self.hours_in_dates;
        let span = |s: Option<(i64, i64)>| {
            s.map_or(String::new(), |(a, b)| {
                format!(
                    "{} to {}",
                    local_time(&opts.zone, a, false),
                    local_time(&opts.zone, b, false)
                )
            })
        };
        Some(format!(
            "{} of the {total} records on the dates imported ({}%) fall outside the {} and are dropped: those kept run from {}, those dropped from {} ({} time); if the data's times are another zone's, give --tz ZONE (the zone its times are local to, or that its exchange is in), and to keep pre- and post-market records give --extended-hours",
            self.hours_in_dates,
            self.hours_in_dates * 100 / total,
            opts.hours_words(),
            span(self.kept_span),
            span(self.hours_span),
            opts.tz_name,
        ))
    }
}

/// The inputs, each with its name as given.
pub type Sources = Vec<(String, Box<dyn Source>)>;

/// Opens the inputs afresh (each pass reads them again).
pub type Opener<'a> = dyn Fn() -> Result<Sources, ImportError> + 'a;

/// Merge sources in time order: ties go to the earlier source, then the file's own order.
/// A record earlier than its file's previous one is refused (`out-of-order`, with both
/// times in the import's zone).
pub struct Merge {
    sources: Vec<(String, Box<dyn Source>)>,
    /// The import's zone and its name (for the times of a refusal).
    zone: Zone,
    tz_name: String,
    heap: BinaryHeap<std::cmp::Reverse<(i64, usize, u64)>>,
    head: Vec<Option<Record>>,
    last: Vec<Option<(i64, u64)>>,
    started: bool,
    /// Skip records refused as invalid market data (`--skip-invalid`), counting them.
    pub skip_invalid: bool,
    /// The records skipped, by kind ([`ImportError::invalid`]), and the first of them.
    skipped: BTreeMap<&'static str, u64>,
    first_skipped: Option<ImportError>,
}

impl Merge {
    /// A merge of these sources; times in refusals are local in `zone` (named `tz_name`).
    pub fn new(sources: Vec<(String, Box<dyn Source>)>, zone: &Zone, tz_name: &str) -> Merge {
        let n = sources.len();
        Merge {
            sources,
            zone: zone.clone(),
            tz_name: tz_name.to_string(),
            heap: BinaryHeap::new(),
            head: vec![None; n],
            last: vec![None; n],
            started: false,
            skip_invalid: false,
            skipped: BTreeMap::new(),
            first_skipped: None,
        }
    }

    /// Records skipped as invalid (`--skip-invalid`), of every kind.
    fn skipped_total(&self) -> u64 {
        self.skipped.values().sum()
    }

    /// The name of source `i` (as given).
    pub fn name(&self, i: usize) -> &str {
        self.sources.get(i).map_or("-", |s| s.0.as_str())
    }

    /// Bytes read from every source so far.
    pub fn bytes_read(&self) -> u64 {
        self.sources.iter().map(|s| s.1.bytes_read()).sum()
    }

    /// Input records read from every source so far ([`Source::records_read`]).
    pub fn records_read(&self) -> u64 {
        self.sources.iter().map(|s| s.1.records_read()).sum()
    }

    /// Of source `i`: its last record's time and number (once the merge is done, the
    /// file's last) and its query end ([`Source::query_end`]).
    fn end_of(&self, i: usize) -> (Option<(i64, u64)>, Option<i64>) {
        (
            self.last.get(i).copied().flatten(),
            self.sources.get(i).and_then(|s| s.1.query_end()),
        )
    }

    fn pull(&mut self, i: usize) -> Result<(), ImportError> {
        let got = loop {
            match self.sources[i].1.next_record() {
                Some(Err(e)) if e.invalid.is_some() && self.skip_invalid => {
                    // Invalid market data: skipped, counted by kind; the file goes on.
                    let what = e.invalid.unwrap_or_default();
                    *self.skipped.entry(what).or_default() += 1;
                    self.first_skipped.get_or_insert(e);
                }
                Some(Err(mut e)) if e.invalid.is_some() => {
                    e.reason.push_str(
                        "; the whole import is refused: correct or remove the row, or give --skip-invalid to skip such records (they are counted in the summary)",
                    );
                    break Some(Err(e));
                }
                got => break got,
            }
        };
        let (name, _) = &self.sources[i];
        match got {
            None => Ok(()),
            Some(Err(e)) => Err(e),
            Some(Ok(r)) => {
                if let Some((ns, no)) = self.last[i]
                    && r.ns < ns
                {
                    // As the file's times read (not epoch nanoseconds); to the nanosecond
                    // when a millisecond does not tell them apart.
                    let fine = r.ns / 1_000_000 == ns / 1_000_000;
                    return Err(ImportError::new(
                        name,
                        r.no,
                        format!(
                            "out-of-order: the record's time ({}) is earlier than record {no}'s ({}), in {}; a file must be in time order",
                            local_time(&self.zone, r.ns, fine),
                            local_time(&self.zone, ns, fine),
                            self.tz_name
                        ),
                    ));
                }
                self.last[i] = Some((r.ns, r.no));
                self.heap.push(std::cmp::Reverse((r.ns, i, r.no)));
                self.head[i] = Some(r);
                Ok(())
            }
        }
    }

    /// The next record of the merge (with its file's index).
    pub fn next_record(&mut self) -> Option<Result<(usize, Record), ImportError>> {
        if !self.started {
            self.started = true;
            for i in 0..self.sources.len() {
                if let Err(e) = self.pull(i) {
                    return Some(Err(e));
                }
            }
        }
        let std::cmp::Reverse((_, i, _)) = self.heap.pop()?;
        let r = self.head[i].take()?;
        if let Err(e) = self.pull(i) {
            return Some(Err(e));
        }
        Some(Ok((i, r)))
    }
}

/// What the first pass learns of an underlying's option records.
#[derive(Clone, Debug, Default)]
struct ChainScan {
    /// The greatest common divisor of the strikes (raw `Px`).
    gcd: i64,
    /// The first option record (file index, record number) and its strike, for a refusal.
    first: Option<(usize, u64)>,
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a.abs() } else { gcd(b, a % b) }
}

/// What the first pass learns of a session.
#[derive(Clone, Debug, Default)]
struct SessionScan {
    date: Option<Date>,
    last: Ts,
    /// Per symbol: first trade, last trade, first quote's mid.
    first_trade: BTreeMap<Sym, Px>,
    last_trade: BTreeMap<Sym, Px>,
    first_mid: BTreeMap<Sym, Px>,
}

/// The import's outcome.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Input records read (every file): a CSV's data rows, a DBN file's records, each once
    /// however many events it gives (a CSV row with a trade and a quote gives two; an mbp-1
    /// record with a trade, a quote and a tick; an ohlcv bar four ticks) or none.
    pub records: u64,
    /// Input records kept: those that gave at least one event on the tape.
    pub kept: u64,
    /// Events written (`tick` and `quote` lines; the `session` lines are `sessions`).
    pub events: u64,
    /// Sessions written.
    pub sessions: u64,
    /// Symbols on the tape.
    pub symbols: Vec<String>,
    /// Option quotes written, and the contracts they quote.
    pub option_quotes: u64,
    pub option_contracts: u64,
    /// Option trades kept out (a tape has no option prints: docs/tapes.md §5).
    pub option_trades_skipped: u64,
    /// What the first pass saw that is likely wrong but not refused (printed before the
    /// summary line).
    pub warnings: Vec<ImportWarning>,
    /// Input records neither kept nor skipped (dropped by a filter, or giving no trade or
    /// quote), and each reason's count and words (`1444 fall outside the regular hours
    /// 09:30-16:00 in America/New_York …`).
    pub dropped: u64,
    pub dropped_why: Vec<String>,
    /// Records repeating a record of their own file exactly (same instant, symbol, kind,
    /// price and size): kept, as real feeds repeat prints, and counted.
    pub repeated: u64,
    /// Records skipped as invalid market data (`--skip-invalid`), by kind, and where the
    /// first one is (`crossed.csv:6 (record 5)`).
    pub skipped: Vec<(String, u64)>,
    pub first_skipped: Option<String>,
}

impl Summary {
    /// The line after the summary saying what was not imported as read, or `None` when
    /// every record was: the records each filter dropped, the repeated records kept, the
    /// invalid records skipped (`dropped 1444 of 19678 records: 1444 fall outside …`).
    pub fn breakdown(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.dropped > 0 {
            parts.push(format!(
                "dropped {} of {} records: {}",
                self.dropped,
                self.records,
                self.dropped_why.join("; ")
            ));
        }
        let skipped: u64 = self.skipped.iter().map(|(_, n)| n).sum();
        if skipped > 0 {
            let kinds: Vec<String> = self
                .skipped
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            parts.push(format!(
                "skipped {skipped} invalid record{} (--skip-invalid): {}; the first at {}",
                if skipped == 1 { "" } else { "s" },
                kinds.join(", "),
                self.first_skipped.as_deref().unwrap_or("?")
            ));
        }
        if self.repeated > 0 {
            parts.push(format!(
                "{} repeated record{} kept (each the same instant, symbol, kind, price and size as an earlier record of its file: feeds repeat prints; if these are copies, remove them from the file)",
                self.repeated,
                if self.repeated == 1 { "" } else { "s" }
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// The records of the current millisecond, for telling a record that repeats one of its
/// own file (kept, counted) from one that repeats another input's (counted per pair of
/// inputs: enough of them are the same data twice, refused, as it doubles every volume;
/// fewer are kept and warned of, [`Repeats::same_data`]).
#[derive(Debug, Default)]
struct Repeats {
    /// The millisecond (since the epoch) of `at`.
    ms: i64,
    /// Its records so far, each with its input's index.
    at: Vec<(usize, Record)>,
    /// Records repeating one of their own file, and the last counted of each input.
    repeated: u64,
    last: BTreeMap<usize, u64>,
    /// Records seen of each input.
    seen: BTreeMap<usize, u64>,
    /// Per pair of inputs (earlier, later): how many records of the later repeat one of the
    /// earlier's, and the first such (the later's record, the earlier's).
    across: BTreeMap<(usize, usize), (u64, Record, Record)>,
}

impl Repeats {
    /// Whether two records say the same: instrument, kind, prices and sizes.
    fn same(a: &Record, b: &Record) -> bool {
        a.sym == b.sym && a.opt == b.opt && a.kind == b.kind
    }

    /// See record `r` of input `fi`. A record repeating one of its own file at the same
    /// instant is counted; one repeating another input's is counted for the pair. Across
    /// inputs the instant is the tape's millisecond: one vendor's nanoseconds and another's
    /// milliseconds say the same print.
    fn see(&mut self, fi: usize, r: &Record) {
        let ms = r.ns.div_euclid(1_000_000);
        if ms != self.ms {
            self.ms = ms;
            self.at.clear();
        }
        *self.seen.entry(fi).or_default() += 1;
        let mut own = false;
        let mut other = None;
        for (gi, g) in &self.at {
            if !Self::same(g, r) {
                continue;
            }
            if *gi != fi {
                other.get_or_insert((*gi, *g));
            } else {
                own |= g.ns == r.ns && g.no != r.no;
            }
        }
        if let Some((gi, g)) = other {
            self.across.entry((gi, fi)).or_insert((0, *r, g)).0 += 1;
        } else if own && self.last.get(&fi) != Some(&r.no) {
            self.last.insert(fi, r.no);
            self.repeated += 1;
        }
        self.at.push((fi, *r));
    }

    /// The pairs of inputs that hold the same data: at least [`SAME_DATA_MIN`] records of
    /// one repeat the other's, and they are at least half of the smaller input's records.
    /// Fewer are coincidences two real feeds can have (two exchanges' files with a print of
    /// the same size at the same price in the same millisecond): kept, and warned of.
    fn same_data(&self) -> impl Iterator<Item = (usize, usize, u64, &Record, &Record)> {
        self.across.iter().filter_map(|(&(gi, fi), (n, r, g))| {
            let smaller = self.seen[&gi].min(self.seen[&fi]);
            (*n >= SAME_DATA_MIN && n * 2 >= smaller).then_some((gi, fi, *n, r, g))
        })
    }
}

/// The fewest records of one input repeating another's that can be the same data twice.
const SAME_DATA_MIN: u64 = 10;

/// A record's kind and figures for a message: `SPY trade of 300 at 516.00`.
fn describe(r: &Record) -> String {
    let inst = r.opt.as_ref().map_or(r.sym.to_string(), occ_name);
    match r.kind {
        Kind::Trade { px, sz } => format!("{inst} trade of {sz} at {px}"),
        Kind::Quote { bid, ask, bsz, asz } => {
            format!("{inst} quote {bid} x {ask} ({bsz} x {asz})")
        }
    }
}

/// Progress callback: (pass 1 or 2, bytes read, input records read), every 65,536 events and at
/// each pass's end; `false` stops the import ([`STOPPED`]: the command line's SIGINT).
pub type Progress<'a> = dyn FnMut(u8, u64, u64) -> bool + 'a;

/// The reason of the refusal an import ends with when its [`Progress`] callback said stop.
pub const STOPPED: &str = "stopped";

/// The refusal for a stop asked at record `read`.
fn stopped(read: u64) -> ImportError {
    ImportError {
        record: read,
        ..ImportError::inputs(STOPPED)
    }
}

fn mid(bid: Px, ask: Px) -> Px {
    Px((bid.raw() + ask.raw()) / 2)
}

/// A session's close: the regular close, or (when its data ends earlier than a minute
/// before it: a half day, a cut file) the minute after its last event, so that the tape
/// says where it ends (docs/tapes.md §5).
fn session_close(open: Ts, close: Ts, last: Ts) -> Ts {
    if last.ms() + crate::market::tape::MAX_END_GAP_MS >= close.ms() {
        return close;
    }
    let next_min = (last.ms() / 60_000 + 1) * 60_000;
    Ts(next_min.max(open.ms() + 60_000).min(close.ms()))
}

/// Import: read every record twice (check and learn, then write) and write a canonical v2
/// tape to `out`. The first refused record stops it with its file, number and reason.
pub fn import(
    open: &Opener<'_>,
    opts: &Options,
    out: &mut dyn Write,
    progress: &mut Progress<'_>,
) -> Result<Summary, ImportError> {
    // Pass 1: every record checked; sessions and symbols learnt.
    let mut m = Merge::new(open()?, &opts.zone, &opts.tz_name);
    m.skip_invalid = opts.skip_invalid;
    let inputs = m.sources.len();
    let mut dropped = DropScan::new(inputs);
    let mut repeats = Repeats::default();
    // Per symbol: its first kept trade from a file of ticks and from one of bars (input,
    // record): both of one symbol would count its volume twice.
    let mut trade_kinds: BTreeMap<Sym, [Option<(usize, u64)>; 2]> = BTreeMap::new();
    let mut sessions: Vec<SessionScan> = Vec::new();
    let mut syms: BTreeSet<Sym> = BTreeSet::new();
    let mut chains: BTreeMap<Sym, ChainScan> = BTreeMap::new();
    let mut contracts: BTreeSet<(Sym, (i64, u8, i64))> = BTreeSet::new();
    let mut option_quotes = 0u64;
    let mut option_trades_skipped = 0u64;
    let mut warnings = Warnings::default();
    // Per symbol: its last kept trade (price, input, record), for the price-jump warning.
    let mut last_print: BTreeMap<Sym, (Px, usize, u64)> = BTreeMap::new();
    // The first and the last record kept.
    let mut kept_span: Option<(KeptAt, KeptAt)> = None;
    let mut read = 0u64;
    while let Some(r) = m.next_record() {
        let (fi, r) = r?;
        read += 1;
        if read.is_multiple_of(65_536) && !progress(1, m.bytes_read(), m.records_read()) {
            return Err(stopped(read));
        }
        let (d, t) = match opts.keep_or_why(&r) {
            Ok(x) => x,
            Err(why) => {
                let in_dates = why == Dropped::Hours && opts.in_dates(r.ns);
                dropped.drop(fi, &r, why, in_dates);
                continue;
            }
        };
        if let Some(k) = &r.opt {
            // Options: quotes only (the tape has no option prints); the strike on the
            // grid, the contract not expired.
            if matches!(r.kind, Kind::Trade { .. }) {
                option_trades_skipped += 1;
                dropped.option_trade(fi, r.no);
                continue;
            }
            let bad = |why: String| ImportError::new(m.name(fi), r.no, why);
            if k.expiry < d {
                return Err(bad(format!(
                    "option {}: expiry {} is before the session date {d}",
                    occ_name(k),
                    k.expiry
                )));
            }
            if let Some(step) = opts.strike_step.get(&r.sym)
                && k.strike.raw() % step.raw() != 0
            {
                return Err(bad(format!(
                    "option {}: strike {} is not on the grid of --strike-step {}={step}",
                    occ_name(k),
                    k.strike,
                    r.sym
                )));
            }
            if !opts.iv.contains_key(&r.sym) {
                return Err(bad(format!(
                    "option {} on {}: give --iv {}=ATM_IV (the chain's smile: the model's greeks and every unquoted contract are priced from it)",
                    occ_name(k),
                    r.sym,
                    r.sym
                )));
            }
            let c = chains.entry(r.sym).or_default();
            c.gcd = gcd(c.gcd, k.strike.raw());
            c.first.get_or_insert((fi, r.no));
            contracts.insert((r.sym, k.order()));
            option_quotes += 1;
        }
        dropped.keep(fi, &r);
        repeats.see(fi, &r);
        let at = (fi, r.no, r.ns.div_euclid(1_000_000));
        kept_span = Some((kept_span.map_or(at, |(first, _)| first), at));
        if let (Kind::Trade { .. }, None) = (r.kind, r.opt) {
            let bars = m.sources.get(fi).is_some_and(|s| s.1.bars());
            let seen = trade_kinds.entry(r.sym).or_default();
            seen[usize::from(bars)].get_or_insert((fi, r.no));
            if let [Some((ti, tno)), Some((bi, bno))] = *seen {
                return Err(ImportError::inputs(format!(
                    "{} has bars in {} (record {bno}; each bar becomes four ticks carrying its volume) and trades in {} (record {tno}): a bar's volume is that of the same trades, so the two together would count every share twice; import the bars or the trades of {}, not both",
                    r.sym,
                    m.name(bi),
                    m.name(ti),
                    r.sym
                )));
            }
        }
        if sessions.last().and_then(|s| s.date) != Some(d) {
            if let Some(why) = weekend(d) {
                warnings.push(ImportWarning::WEEKEND, m.name(fi), r.no, why);
            }
            sessions.push(SessionScan {
                date: Some(d),
                ..SessionScan::default()
            });
        }
        let s = sessions.last_mut().expect("a session was just pushed");
        s.last = t;
        syms.insert(r.sym);
        match r.kind {
            _ if r.opt.is_some() => {}
            Kind::Trade { px, .. } => {
                s.first_trade.entry(r.sym).or_insert(px);
                s.last_trade.insert(r.sym, px);
                if let Some(&(prev, pfi, pno)) = last_print.get(&r.sym) {
                    let prev_at = if pfi == fi {
                        format!("record {pno}")
                    } else {
                        format!("record {pno} of {}", m.name(pfi))
                    };
                    if let Some(why) = price_jump(r.sym, px, prev, &prev_at) {
                        warnings.push(ImportWarning::PRICE_JUMP, m.name(fi), r.no, why);
                    }
                }
                last_print.insert(r.sym, (px, fi, r.no));
            }
            Kind::Quote { bid, ask, .. } => {
                s.first_mid.entry(r.sym).or_insert(mid(bid, ask));
            }
        }
    }
    if !progress(1, m.bytes_read(), m.records_read()) {
        return Err(stopped(read));
    }
    if let Some((gi, fi, n, r, g)) = repeats.same_data().next() {
        return Err(ImportError::new(
            m.name(fi),
            r.no,
            format!(
                "{n} of its {} records are also records of {} (of its {}); the first, this record ({}, {}), is record {} there: the two inputs hold the same trades or quotes, which would be imported twice (every volume doubled); import one of them ({} or {})",
                repeats.seen[&fi],
                m.name(gi),
                repeats.seen[&gi],
                describe(r),
                local_time(&opts.zone, r.ns, false),
                g.no,
                m.name(gi),
                m.name(fi)
            ),
        ));
    }
    for (&(gi, fi), (n, r, g)) in &repeats.across {
        warnings.push(
            ImportWarning::REPEATED_ACROSS,
            m.name(fi),
            r.no,
            format!(
                "{n} record{} repeat{} a record of {} (the first, {} at {}, is record {} there): too few to be the same data twice, so kept; if the files overlap, import one of them",
                if *n == 1 { "" } else { "s" },
                if *n == 1 { "s" } else { "" },
                m.name(gi),
                describe(r),
                local_time(&opts.zone, r.ns, false),
                g.no
            ),
        );
    }
    for fi in 0..inputs {
        if let Some((no, why)) = short_file(&m, fi, opts) {
            warnings.push(ImportWarning::SHORT_FILE, m.name(fi), no, why);
        }
    }
    let first = sessions.first().ok_or_else(|| {
        // About the one input, or about all of them together.
        let why = dropped.nothing_kept(opts, m.records_read(), inputs, m.skipped_total());
        match inputs {
            1 => ImportError::new(m.name(0), 0, why),
            _ => ImportError::inputs(why),
        }
    })?;
    // A per-symbol flag for a symbol the tape does not have would do nothing: refused, as a
    // typo it most likely is (`--prior SPX=…` for SPY).
    for (flag, named) in [
        ("--prior", opts.prior.keys().collect::<Vec<_>>()),
        ("--strike-step", opts.strike_step.keys().collect()),
        ("--iv", opts.iv.keys().collect()),
    ] {
        if let Some(sym) = named.into_iter().find(|s| !syms.contains(s)) {
            let list: Vec<String> = syms.iter().map(|s| s.to_string()).collect();
            return Err(ImportError::usage(format!(
                "{flag} names {sym}, which is not on the tape (no record of it is kept; the tape's symbols: {})",
                list.join(",")
            )));
        }
    }
    if let Some(((ffi, fno, fms), (lfi, lno, lms))) = kept_span
        && fms == lms
        && dropped.kept >= ONE_INSTANT_MIN
    {
        warnings.push(
            ImportWarning::ONE_INSTANT,
            m.name(lfi),
            lno,
            format!(
                "all {} records kept, from record {fno} of {} to this one, fall on one instant ({}): trades and quotes span time, so the timestamps are most likely not what the file means (a --ts-col naming a date column, a feed's time cut off); it is imported as it is",
                dropped.kept,
                m.name(ffi),
                local_time(&opts.zone, lms * 1_000_000, false)
            ),
        );
    }
    if let Some(why) = dropped.outside_hours(opts) {
        warnings.list.push(ImportWarning {
            code: ImportWarning::OUTSIDE_HOURS,
            at: None,
            message: why,
        });
    }
    let records = m.records_read();
    let dropped_why = dropped.reasons(opts, records, m.skipped_total());
    // Not kept and not skipped: dropped by a filter, or giving no event.
    let dropped_n = records.saturating_sub(dropped.kept + m.skipped_total());
    let skipped: Vec<(String, u64)> = m.skipped.iter().map(|(k, n)| (k.to_string(), *n)).collect();
    let first_skipped = m.first_skipped.as_ref().map(|e| {
        let file = e.file.as_deref().unwrap_or("-");
        let at = e.line.map_or(format!("{file} record {}", e.record), |l| {
            format!("{file}:{l} (record {})", e.record)
        });
        format!("{at}: {}", e.reason)
    });
    let (open_t, close_t) = opts.hours();
    // Prior closes: the first session's from --prior or its first trade (first quote mid
    // for a symbol that never traded); each later session's the previous one's last trade
    // (the prior close carried when a symbol did not trade).
    let mut prior: BTreeMap<Sym, Px> = BTreeMap::new();
    for &sym in &syms {
        let p = opts
            .prior
            .get(&sym)
            .copied()
            .or_else(|| {
                sessions
                    .iter()
                    .find_map(|s| s.first_trade.get(&sym).copied())
            })
            .or_else(|| sessions.iter().find_map(|s| s.first_mid.get(&sym).copied()));
        let Some(p) = p else {
            // Only options of it in the input: the tape still needs its prior close.
            let (fi, no) = chains.get(&sym).and_then(|c| c.first).unwrap_or((0, 0));
            return Err(ImportError::new(
                m.name(fi),
                no,
                format!(
                    "{sym} has option records (this one the first) but no trade or quote of its own: give --prior {sym}=PRICE"
                ),
            ));
        };
        prior.insert(sym, p.max(Px::CENT));
    }
    let mut specs: Vec<SessionSpec> = Vec::with_capacity(sessions.len());
    for s in &sessions {
        let date = s.date.expect("every scanned session has a date");
        specs.push(SessionSpec {
            date,
            open: open_t,
            close: session_close(open_t, close_t, s.last),
            prior: prior.iter().map(|(k, v)| (*k, *v)).collect(),
        });
        for (k, v) in &s.last_trade {
            prior.insert(*k, *v);
        }
    }
    let first_spec = &specs[0];
    let mut tags = BTreeMap::new();
    tags.insert(
        "date".to_string(),
        first.date.map(|d| d.to_string()).unwrap_or_default(),
    );
    tags.insert("source".to_string(), "import".to_string());
    let header = TapeHeader {
        v: TAPE_VERSION_2,
        name: opts.name.clone(),
        date: first_spec.date,
        tz: opts.tz_name.clone(),
        open: first_spec.open,
        close: first_spec.close,
        symbols: first_spec
            .prior
            .iter()
            .map(|(sym, px)| SymbolSpec {
                sym: *sym,
                prior_close: *px,
                strike_step: chains.get(sym).map(|c| {
                    opts.strike_step
                        .get(sym)
                        .copied()
                        .unwrap_or(Px::from_raw(c.gcd))
                }),
            })
            .collect(),
        vol: chains
            .keys()
            .filter_map(|sym| {
                let (atm_iv, skew) = *opts.iv.get(sym)?;
                Some(VolSpec {
                    sym: *sym,
                    atm_iv,
                    skew,
                })
            })
            .collect(),
        rate: 0.0,
        source: opts.source.clone(),
        tags,
    };
    let io = |e: io::Error| ImportError::new("-o", 0, format!("writing the tape: {e}"));
    writeln!(out, "{}", header_line(&header)).map_err(io)?;
    // Pass 2: write.
    let mut m = Merge::new(open()?, &opts.zone, &opts.tz_name);
    m.skip_invalid = opts.skip_invalid;
    let mut k = 0usize;
    let mut cur: Option<Date> = None;
    let mut events = 0u64;
    // Input records with an event written: the last counted of each input (its number).
    let mut kept = 0u64;
    let mut last_kept: Vec<Option<u64>> = vec![None; m.sources.len()];
    let mut read2 = 0u64;
    while let Some(r) = m.next_record() {
        let (fi, r) = r?;
        read2 += 1;
        if read2.is_multiple_of(65_536) && !progress(2, m.bytes_read(), m.records_read()) {
            return Err(stopped(read2));
        }
        let Some((d, ts)) = opts.keep(&r) else {
            continue;
        };
        if r.opt.is_some() && matches!(r.kind, Kind::Trade { .. }) {
            continue;
        }
        if cur != Some(d) {
            if cur.is_some() {
                k += 1;
                let spec = specs.get(k).ok_or_else(|| {
                    ImportError::new(m.name(fi), r.no, "an input changed between the two passes")
                })?;
                write_event(out, &TapeEvent::Session(Box::new(spec.clone()))).map_err(io)?;
            }
            cur = Some(d);
        }
        let ev = match r.kind {
            Kind::Trade { px, sz } => TapeEvent::Tick(Tick {
                ts,
                sym: r.sym,
                px,
                sz,
            }),
            Kind::Quote { bid, ask, bsz, asz } => TapeEvent::Quote(TapeQuote {
                ts,
                inst: r.opt.map_or(QuoteInst::Sym(r.sym), QuoteInst::Option),
                bid,
                ask,
                bid_sz: bsz,
                ask_sz: asz,
            }),
        };
        write_event(out, &ev).map_err(io)?;
        events += 1;
        if let Some(last) = last_kept.get_mut(fi)
            && *last != Some(r.no)
        {
            *last = Some(r.no);
            kept += 1;
        }
    }
    if !progress(2, m.bytes_read(), m.records_read()) {
        return Err(stopped(read2));
    }
    if read2 != read {
        return Err(ImportError::inputs(
            "an input changed between the two passes",
        ));
    }
    out.flush().map_err(io)?;
    Ok(Summary {
        records: m.records_read(),
        kept,
        events,
        sessions: specs.len() as u64,
        symbols: syms.iter().map(|s| s.to_string()).collect(),
        option_quotes,
        option_contracts: contracts.len() as u64,
        option_trades_skipped,
        warnings: warnings.finish(),
        dropped: dropped_n,
        dropped_why,
        repeated: repeats.repeated,
        skipped,
        first_skipped,
    })
}

/// The warning for input `fi` of a finished merge whose records stop well before its query
/// end (a DBN file's metadata `end`), with its last record's number: a file cut exactly on
/// a record boundary decodes as whole, and its last session would quietly close early (a
/// one-minute "half day"). The end that counts is the query's or, when the query ran past
/// it, the close of the hours on the last record's date (no data is due after it); more
/// than the tape's end gap (a minute) before it is warned of. A file without a query end
/// (CSV) is not.
fn short_file(m: &Merge, fi: usize, opts: &Options) -> Option<(u64, String)> {
    let (Some((last, no)), Some(end)) = m.end_of(fi) else {
        return None;
    };
    let (date, _) = opts.zone.local(last)?;
    let close = opts
        .zone
        .to_utc_ns(date, i64::from(opts.hours().1.ms()) * 1_000_000);
    let due = end.min(close);
    let gap_ns = i64::from(crate::market::tape::MAX_END_GAP_MS) * 1_000_000;
    if due - last <= gap_ns {
        return None;
    }
    Some((
        no,
        format!(
            "the file's records stop at {} (record {no}), but its metadata says the query ran to {} ({}): a DBN file cut on a record boundary reads as whole, and its last session closes early; if this file was cut short, fetch it whole",
            local_time(&opts.zone, last, false),
            local_time(&opts.zone, end, false),
            opts.tz_name
        ),
    ))
}

/// An option's OCC name for a message.
fn occ_name(k: &OptionKey) -> String {
    crate::market::occ_symbol(k).unwrap_or_else(|| format!("{} {} {}", k.root, k.expiry, k.strike))
}

/// Parse an exact decimal price (`500.12`, `0.0125`; at most 4 decimals, trailing zeros
/// beyond them allowed, at most [`Px::MAX`]) into a positive [`Px`] (`allow_zero`: 0 too).
pub fn parse_price(s: &str, allow_zero: bool) -> Result<Px, String> {
    let t = s.trim();
    let (int, frac) = match t.split_once('.') {
        Some((a, b)) => (a, b),
        None => (t, ""),
    };
    if t.is_empty() {
        return Err("the price field is empty".into());
    }
    if let Some(abs) = t.strip_prefix('-')
        && is_plain_decimal(abs)
    {
        // A plain decimal, but below zero: said so, not "not a plain decimal number".
        return Err(format!("price {t:?} is negative"));
    }
    if int.is_empty() && frac.is_empty()
        || !int.bytes().all(|c| c.is_ascii_digit())
        || !frac.bytes().all(|c| c.is_ascii_digit())
    {
        return Err(format!("price {t:?} is not a plain decimal number"));
    }
    // The tape reader's limit, in its words (a tape the reader refuses is not written).
    // Leading zeros do not make a price large; more than 12 digits would not fit the count.
    let too_large = || format!("price {}", Px::too_large(format!("{t:?}")));
    if int.trim_start_matches('0').len() > 12 {
        return Err(too_large());
    }
    let frac_t = frac.trim_end_matches('0');
    if frac_t.len() > 4 {
        return Err(format!("price {t:?} has more than 4 decimal places"));
    }
    let int = int.trim_start_matches('0');
    let mut raw: i64 = if int.is_empty() {
        0
    } else {
        int.parse()
            .map_err(|_| format!("price {t:?} is out of range"))?
    };
    raw *= 10_000;
    let mut f = 0i64;
    for (i, c) in frac_t.bytes().enumerate() {
        f += i64::from(c - b'0') * 10i64.pow(3 - i as u32);
    }
    raw += f;
    if raw > Px::MAX.raw() {
        return Err(too_large());
    }
    if raw == 0 && !allow_zero || raw < 0 {
        return Err(format!("price {t:?} is not positive"));
    }
    Ok(Px(raw))
}

/// Digits with at most one decimal point (`500.12`, `.5`, `7.`).
fn is_plain_decimal(t: &str) -> bool {
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    !(int.is_empty() && frac.is_empty())
        && int.bytes().all(|c| c.is_ascii_digit())
        && frac.bytes().all(|c| c.is_ascii_digit())
}

/// Whether a price field is a number at 0 or below (`0`, `0.00`, `-516.00`): invalid
/// market data, which `--skip-invalid` skips, not a field that is not a number (`abc`,
/// `1e3`), which stays a refusal.
pub fn not_positive(s: &str) -> bool {
    let t = s.trim();
    let abs = t.strip_prefix('-').unwrap_or(t);
    is_plain_decimal(abs) && (t.starts_with('-') || abs.bytes().all(|c| matches!(c, b'0' | b'.')))
}

/// What `--skip-invalid` skips, by kind ([`ImportError::invalid`]): a quote whose bid is
/// above its ask.
pub const CROSSED: &str = "crossed quotes";
/// A quote with a bid or an ask of 0 or below (a stock's; an option's bid of 0 is "no bid").
pub const BAD_SIDE: &str = "bids or asks of 0 or below";
/// A trade (or a bar) at a price of 0 or below.
pub const BAD_PRICE: &str = "trade prices of 0 or below";

/// A fixed-point price in units of 1e-9 (DBN) as a [`Px`], refused if it has more than 4
/// decimals or is not positive.
pub fn px_from_nanos(p: i64) -> Result<Px, String> {
    if p <= 0 {
        return Err(format!("price {p}e-9 is not positive"));
    }
    if p % 100_000 != 0 {
        return Err(format!("price {p}e-9 has more than 4 decimal places"));
    }
    Ok(Px(p / 100_000))
}

/// A symbol of the tape, or why not.
pub fn tape_sym(s: &str) -> Result<Sym, String> {
    let t = s.trim();
    Sym::new(t).ok_or_else(|| {
        format!("symbol {t:?} is not a tape symbol ([A-Z][A-Z0-9]*(.[A-Z0-9]+)*, at most 15 bytes)")
    })
}

/// What a record's symbol names: a tape symbol, or an option on one (an OCC symbol,
/// padded `SPY   250409C00500000` or compact `SPY250409C00500000`: its root, and the
/// contract).
pub fn tape_inst(s: &str) -> Result<(Sym, Option<OptionKey>), String> {
    let t = s.trim();
    if crate::market::quote::looks_occ(t) {
        let k = crate::market::quote::parse_occ(t).map_err(|e| format!("symbol {t:?} {e}"))?;
        return Ok((k.root, Some(k)));
    }
    tape_sym(t).map(|s| (s, None))
}

/// Counts the bytes read through it.
pub struct Counting<R> {
    inner: R,
    /// Bytes read.
    pub n: std::rc::Rc<std::cell::Cell<u64>>,
}

impl<R> Counting<R> {
    /// Count the reads of `inner`.
    pub fn new(inner: R) -> (Counting<R>, std::rc::Rc<std::cell::Cell<u64>>) {
        let n = std::rc::Rc::new(std::cell::Cell::new(0));
        (
            Counting {
                inner,
                n: n.clone(),
            },
            n,
        )
    }
}

impl<R: io::Read> io::Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n.set(self.n.get() + k as u64);
        Ok(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_are_exact() {
        assert_eq!(parse_price("500.12", false), Ok(Px(5_001_200)));
        assert_eq!(parse_price("0.0125", false), Ok(Px(125)));
        assert_eq!(parse_price("7", false), Ok(Px(70_000)));
        assert_eq!(parse_price("1.500000", false), Ok(Px(15_000)));
        assert!(parse_price("1.23456", false).is_err());
        assert!(parse_price("0", false).is_err());
        assert_eq!(parse_price("0", true), Ok(Px(0)));
        assert!(parse_price("-1", false).is_err());
        assert!(parse_price("1e3", false).is_err());
        // The tape reader's limit: 10^11, not 12 digits before the point.
        assert_eq!(parse_price("100000000000", false), Ok(Px::MAX));
        assert_eq!(
            parse_price("100000000000.0001", false),
            Err("price \"100000000000.0001\" is too large: a tape price is at most 100000000000 (10^11)".into())
        );
        // A negative price is said to be negative, not malformed.
        assert_eq!(
            parse_price("-516.00", false),
            Err("price \"-516.00\" is negative".into())
        );
        assert!(not_positive("-516.00") && not_positive("0") && not_positive(" 0.00 "));
        assert!(
            !not_positive("abc")
                && !not_positive("516")
                && !not_positive("-")
                && !not_positive("1e3")
        );
        assert_eq!(px_from_nanos(500_120_000_000), Ok(Px(5_001_200)));
        assert!(px_from_nanos(500_120_000_001).is_err());
    }

    #[test]
    fn close_moves_to_the_minute_after_early_data() {
        let (o, c) = (Ts::hms(9, 30, 0, 0), Ts::hms(16, 0, 0, 0));
        assert_eq!(session_close(o, c, Ts::hms(15, 59, 30, 0)), c);
        assert_eq!(
            session_close(o, c, Ts::hms(13, 0, 5, 0)),
            Ts::hms(13, 1, 0, 0)
        );
        assert_eq!(
            session_close(o, c, Ts::hms(9, 30, 0, 0)),
            Ts::hms(9, 31, 0, 0)
        );
    }
}
