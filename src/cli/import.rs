//! `kestrel tape import FILE... -o OUT`: real trades and quotes (CSV, Databento DBN) into a
//! canonical v2 tape (docs/tapes.md §5). The output is written atomically (`cli::out`): a
//! temporary file beside it, synced and renamed only when the whole import succeeded, so a
//! refused record never leaves a partial tape; `-o -` writes to standard output. SIGINT or
//! SIGTERM stops the import at the next 65,536 records (or the next 64 KiB written), removes
//! the temporary file, and exits 1 with `code=INTERRUPTED`. The inputs are read twice, so
//! each must be a regular file named once ([`options`] refuses a pipe, a FIFO, `-` and a
//! file given twice before anything is opened or written).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::market::import::csv::{Columns, CsvSource, TsUnit};
use crate::market::import::dbn::DbnSource;
use crate::market::import::{
    ImportError, Options, Source, Sources, Summary, Zone, import, parse_price, tape_sym,
};
use crate::market::{Date, Px, Sym};

/// The input format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Comma-separated trades and quotes.
    Csv,
    /// Databento Binary Encoding (plain or zstd).
    Dbn,
}

/// Arguments of `kestrel tape import`.
#[derive(Clone, Debug, clap::Args)]
pub struct ImportArgs {
    /// Input files (merged in time order): regular files, each named once (each is read
    /// twice).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The tape to write (atomically); `-` for standard output.
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
    /// Input format [default: from the extension: .csv, .dbn, .dbn.zst].
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Exchange time zone: an IANA name (America/New_York, Europe/London, …), UTC, or
    /// a fixed +HH:MM.
    #[arg(long, default_value = "America/New_York")]
    pub tz: String,
    /// CSV timestamps: s, ms, us, ns (since the Unix epoch, UTC) or iso (text; local in
    /// --tz without an offset). Required for CSV.
    #[arg(long)]
    pub ts_unit: Option<String>,
    /// Keep only these symbols (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub symbols: Vec<String>,
    /// Keep sessions on or after this date (YYYY-MM-DD).
    #[arg(long)]
    pub from: Option<String>,
    /// Keep sessions on or before this date (YYYY-MM-DD).
    #[arg(long)]
    pub to: Option<String>,
    /// Keep only these session dates (comma-separated YYYY-MM-DD).
    #[arg(long, value_delimiter = ',')]
    pub session_filter: Vec<String>,
    /// Extended hours, 04:00 to 20:00 (default: regular hours, 09:30 to 16:00).
    #[arg(long)]
    pub extended_hours: bool,
    /// Skip records that are invalid market data (a crossed quote; a bid, an ask or a
    /// price of 0 or below), counted by kind in the summary, instead of refusing the
    /// import; a file's structure (columns, timestamps) is still refused.
    #[arg(long)]
    pub skip_invalid: bool,
    /// The first session's prior close of a symbol, SYM=PRICE (repeatable; default: its
    /// first trade).
    #[arg(long)]
    pub prior: Vec<String>,
    /// The strike grid of an underlying's option chain, SYM=STEP (repeatable; default: the
    /// greatest common divisor of the strikes of its option records).
    #[arg(long)]
    pub strike_step: Vec<String>,
    /// The smile of an underlying's option chain, SYM=ATM_IV or SYM=ATM_IV:SKEW (the
    /// header's `vol`; repeatable). Required for every underlying with option records.
    #[arg(long)]
    pub iv: Vec<String>,
    /// Tape name [default: the output file's stem; with `-o -`, the first input's].
    #[arg(long)]
    pub name: Option<String>,
    /// CSV: timestamp column.
    #[arg(long, default_value = "ts")]
    pub ts_col: String,
    /// CSV: symbol column.
    #[arg(long, default_value = "symbol")]
    pub symbol_col: String,
    /// CSV: one symbol for every row (files without a symbol column; a symbol column that
    /// names another symbol is refused: --symbols filters).
    #[arg(long)]
    pub symbol: Option<String>,
    /// CSV: trade price column.
    #[arg(long, default_value = "price")]
    pub price_col: String,
    /// CSV: trade size column.
    #[arg(long, default_value = "size")]
    pub size_col: String,
    /// CSV: bid column.
    #[arg(long, default_value = "bid")]
    pub bid_col: String,
    /// CSV: ask column.
    #[arg(long, default_value = "ask")]
    pub ask_col: String,
    /// CSV: bid size column.
    #[arg(long, default_value = "bid_size")]
    pub bid_size_col: String,
    /// CSV: ask size column.
    #[arg(long, default_value = "ask_size")]
    pub ask_size_col: String,
    /// CSV: a column saying trade or quote (without it, a row with a price is a trade and
    /// one with a bid and an ask a quote).
    #[arg(long)]
    pub type_col: Option<String>,
}

/// The file name endings that say a format (the longest first).
const EXTENSIONS: [(&str, Format); 3] = [
    (".dbn.zst", Format::Dbn),
    (".dbn", Format::Dbn),
    (".csv", Format::Csv),
];

/// The format of a file from its name.
pub fn format_of(p: &Path) -> Option<Format> {
    let n = p.file_name()?.to_string_lossy().to_ascii_lowercase();
    EXTENSIONS
        .iter()
        .find(|(x, _)| n.ends_with(x))
        .map(|&(_, f)| f)
}

fn usage(msg: impl std::fmt::Display) -> i32 {
    errln!("error code=USAGE message={msg}");
    super::flags::EXIT_USAGE
}

fn date_arg(flag: &str, s: &str) -> Result<Date, String> {
    Date::parse(s).ok_or_else(|| format!("{flag} {s:?} is not a date YYYY-MM-DD"))
}

/// Why an input cannot be imported as given: the import reads each input twice.
const READ_TWICE: &str = "tape import reads each input twice (a first pass checks every record and learns the sessions, a second writes the tape), so an input must be a regular file: save it to one first";

/// Refuse an input that is not a regular file, before anything is opened or written: what
/// the first pass reads of a pipe is gone for the second (a FIFO's second open blocked for
/// ever, and unheeded signals with it, beside an empty temporary output; a piped
/// `/dev/stdin` read as an empty file), and `-` is standard input, not a file. A missing
/// file is left to its open, which says so.
fn check_regular(f: &Path) -> Result<(), String> {
    if f.as_os_str() == "-" {
        return Err(format!("- (standard input) is not a file: {READ_TWICE}"));
    }
    match std::fs::metadata(f) {
        Ok(m) if m.is_dir() => Err(format!(
            "{} is a directory, not a CSV or DBN file",
            f.display()
        )),
        Ok(m) if !m.is_file() => Err(format!(
            "{} is {}: {READ_TWICE}",
            f.display(),
            super::sniff::Kind::Stream.describe()
        )),
        _ => Ok(()),
    }
}

/// Refuse a file the project itself writes (a tape, a Bus, a desk session file, …) or a
/// Kestrel document, given as market data: said what it is and what to do with it, as the
/// other verbs say it (`cli::sniff`). Before 2026-12-06 a tape was `cannot tell the format`
/// and a session file read as CSV suggested a JSON fragment as `--ts-col`. Any other file
/// is left to its reader (CSV and DBN are judged by theirs).
fn check_kind(f: &Path) -> Result<(), String> {
    use super::sniff::{self, Kind};
    let kind = sniff::file(f);
    let p = f.display();
    let hint = match kind {
        Kind::Tape => format!(
            "it is a Kestrel tape already, nothing to import: open it with kestrel desk --tape {p} (or kestrel run --tape {p})"
        ),
        Kind::Bus | Kind::DeskSession | Kind::ReplyScript | Kind::GradeShard | Kind::Kestrel => {
            sniff::use_of(kind, f)
        }
        _ => return Ok(()),
    };
    let e = sniff::wrong_kind(f, kind, "CSV or DBN market data", &hint);
    // `wrong_kind` writes the whole coded line; [`run`] adds the code.
    Err(e
        .strip_prefix("error code=USAGE message=")
        .unwrap_or(&e)
        .to_string())
}

/// Refuse an input named twice (by the same path or another way to the same file: `..`, a
/// link): each of its records would be imported twice, every volume doubled.
fn check_once(files: &[PathBuf]) -> Result<(), String> {
    const AGAIN: &str =
        "its records would be imported twice (every volume doubled): give each input once";
    let mut seen: Vec<((u64, u64, PathBuf), &Path)> = Vec::new();
    for f in files {
        let id = super::out::file_id(f);
        match seen.iter().find(|(x, _)| *x == id) {
            Some((_, first)) if *first == f.as_path() => {
                return Err(format!(
                    "{} is given twice as an input: {AGAIN}",
                    f.display()
                ));
            }
            Some((_, first)) => {
                return Err(format!(
                    "{} is the input {} again: {AGAIN}",
                    f.display(),
                    first.display()
                ));
            }
            None => seen.push((id, f)),
        }
    }
    Ok(())
}

/// The import options from the flags, or the usage message.
pub fn options(a: &ImportArgs) -> Result<(Options, Vec<Format>), String> {
    for f in &a.files {
        check_regular(f)?;
        check_kind(f)?;
    }
    check_once(&a.files)?;
    let zone = Zone::parse(&a.tz).ok_or_else(|| {
        format!(
            "--tz {:?} is not a zone of the tz database (an IANA name such as America/New_York or Europe/London, UTC, or a fixed +HH:MM)",
            a.tz
        )
    })?;
    let mut formats = Vec::new();
    for f in &a.files {
        formats.push(match a.format.or_else(|| format_of(f)) {
            Some(x) => x,
            None => {
                return Err(format!(
                    "cannot tell the format of {} from its name (.csv, .dbn, .dbn.zst): give --format csv|dbn",
                    f.display()
                ));
            }
        });
    }
    if formats.contains(&Format::Csv) && a.ts_unit.is_none() {
        return Err(
            "CSV timestamps need --ts-unit s|ms|us|ns|iso (the importer does not guess the unit)"
                .into(),
        );
    }
    if let Some(u) = &a.ts_unit
        && TsUnit::parse(u).is_none()
    {
        return Err(format!("--ts-unit {u:?} is not one of s, ms, us, ns, iso"));
    }
    let mut symbols = BTreeSet::new();
    for s in &a.symbols {
        symbols.insert(tape_sym(s).map_err(|e| format!("--symbols: {e}"))?);
    }
    let mut prior: BTreeMap<Sym, Px> = BTreeMap::new();
    for p in &a.prior {
        let (s, v) = p
            .split_once('=')
            .ok_or_else(|| format!("--prior {p:?} is not SYM=PRICE"))?;
        prior.insert(
            tape_sym(s).map_err(|e| format!("--prior: {e}"))?,
            parse_price(v, false).map_err(|e| format!("--prior: {e}"))?,
        );
    }
    let mut strike_step: BTreeMap<Sym, Px> = BTreeMap::new();
    for p in &a.strike_step {
        let (s, v) = p
            .split_once('=')
            .ok_or_else(|| format!("--strike-step {p:?} is not SYM=STEP"))?;
        strike_step.insert(
            tape_sym(s).map_err(|e| format!("--strike-step: {e}"))?,
            parse_price(v, false).map_err(|e| format!("--strike-step: {e}"))?,
        );
    }
    let mut iv: BTreeMap<Sym, (f64, f64)> = BTreeMap::new();
    for p in &a.iv {
        let bad = || {
            format!(
                "--iv {p:?} is not SYM=ATM_IV or SYM=ATM_IV:SKEW (ATM_IV in (0, 10], e.g. 0.18)"
            )
        };
        let (s, v) = p.split_once('=').ok_or_else(bad)?;
        let (atm, skew) = v.split_once(':').unwrap_or((v, "0"));
        let atm: f64 = atm.trim().parse().map_err(|_| bad())?;
        let skew: f64 = skew.trim().parse().map_err(|_| bad())?;
        // NaN fails every comparison: refused with the rest.
        let ok = atm > 0.0 && atm <= 10.0 && skew.is_finite();
        if !ok {
            return Err(bad());
        }
        iv.insert(tape_sym(s).map_err(|e| format!("--iv: {e}"))?, (atm, skew));
    }
    let mut session_filter = BTreeSet::new();
    for d in &a.session_filter {
        session_filter.insert(date_arg("--session-filter", d)?);
    }
    let from = a
        .from
        .as_deref()
        .map(|d| date_arg("--from", d))
        .transpose()?;
    let to = a.to.as_deref().map(|d| date_arg("--to", d)).transpose()?;
    if let (Some(f), Some(t)) = (from, to)
        && t < f
    {
        // Refused as the usage it is (it read every record to say none fell in range).
        return Err(format!(
            "--to {} is before --from {}: the range is empty (give --from first, --to last)",
            a.to.as_deref().unwrap_or_default(),
            a.from.as_deref().unwrap_or_default()
        ));
    }
    let name = match &a.name {
        Some(n) => n.clone(),
        // To standard output: the first input's name, as a file's stem would be.
        None if a.out.as_os_str() == "-" => {
            let first = a.files.first().and_then(|f| f.file_name());
            let stem = first.map_or("import".into(), |n| n.to_string_lossy().into_owned());
            let cut = EXTENSIONS
                .iter()
                .find_map(|(x, _)| stem.strip_suffix(x))
                .unwrap_or(&stem);
            cut.to_string()
        }
        None => {
            let stem = a
                .out
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "import".into());
            stem.strip_suffix(".jsonl").unwrap_or(&stem).to_string()
        }
    };
    if name.chars().any(crate::lang::diag::is_control_like) {
        // A tape whose name holds one is refused by every reader (docs/tapes.md).
        return Err(format!(
            "the tape's name {:?} holds a control or bidirectional character: give a plain one with --name",
            name
        ));
    }
    let names: Vec<String> = a
        .files
        .iter()
        .map(|f| {
            f.file_name().map_or_else(
                || f.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let fmt = if formats.iter().all(|f| *f == Format::Dbn) {
        "dbn"
    } else if formats.iter().all(|f| *f == Format::Csv) {
        "csv"
    } else {
        "csv+dbn"
    };
    Ok((
        Options {
            zone,
            tz_name: a.tz.clone(),
            symbols,
            from,
            to,
            session_filter,
            extended: a.extended_hours,
            prior,
            name,
            source: format!("import {fmt} {}", names.join(",")),
            strike_step,
            iv,
            skip_invalid: a.skip_invalid,
        },
        formats,
    ))
}

fn columns(a: &ImportArgs) -> Columns {
    Columns {
        ts: a.ts_col.clone(),
        symbol: a.symbol_col.clone(),
        price: a.price_col.clone(),
        size: a.size_col.clone(),
        bid: a.bid_col.clone(),
        ask: a.ask_col.clone(),
        bid_size: a.bid_size_col.clone(),
        ask_size: a.ask_size_col.clone(),
        kind: a.type_col.clone(),
        fixed_symbol: a.symbol.clone(),
    }
}

/// Open every input of `a` (once per pass).
fn open_all(a: &ImportArgs, formats: &[Format], zone: &Zone) -> Result<Sources, ImportError> {
    let cols = columns(a);
    let unit = a
        .ts_unit
        .as_deref()
        .and_then(TsUnit::parse)
        .unwrap_or(TsUnit::Ns);
    let mut v: Vec<(String, Box<dyn Source>)> = Vec::new();
    for (f, fmt) in a.files.iter().zip(formats) {
        let name = f.display().to_string();
        let s: Box<dyn Source> = match fmt {
            Format::Csv => Box::new(CsvSource::open(f, &cols, unit, zone.clone())?),
            Format::Dbn => Box::new(DbnSource::open(f)?),
        };
        v.push((name, s));
    }
    Ok(v)
}

/// Import into a writer (no file, no progress): the library entry the tests and the bench use.
pub fn import_to(a: &ImportArgs, out: &mut dyn Write) -> Result<Summary, String> {
    let (opts, formats) = options(a)?;
    let open = || open_all(a, &formats, &opts.zone);
    import(&open, &opts, out, &mut |_, _, _| true).map_err(|e| e.to_string())
}

/// Run `kestrel tape import`; the exit code.
pub fn tape_import(a: &ImportArgs) -> i32 {
    let (opts, formats) = match options(a) {
        Ok(x) => x,
        Err(e) => return usage(e),
    };
    let total: u64 = a
        .files
        .iter()
        .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
        .sum();
    super::signals::install();
    let tty = io::stderr().is_terminal();
    let mut last = Instant::now();
    let mut shown = false;
    let mut progress = |pass: u8, bytes: u64, records: u64| {
        if super::signals::caught().is_some() {
            return false;
        }
        if !tty || last.elapsed().as_millis() < 500 {
            return true;
        }
        last = Instant::now();
        shown = true;
        let pct = (bytes * 100).checked_div(total).unwrap_or(100);
        eprint!("\rimport pass {pass}/2: {pct:>3}% of {total} bytes, {records} records   ");
        true
    };
    let to_stdout = a.out.as_os_str() == "-";
    if a.out.file_name().is_none() && !to_stdout {
        return usage("-o has no file name");
    }
    for f in &a.files {
        if !to_stdout && super::out::same_file(&a.out, f) {
            return usage(format!(
                "-o {} names an input file: refusing to overwrite it",
                a.out.display()
            ));
        }
    }
    let open = || open_all(a, &formats, &opts.zone);
    // A reader of standard output that went away (`| head`) ends the import quietly.
    let gone = std::cell::Cell::new(false);
    let result = if to_stdout {
        let sink = PipeWatch(super::out::Interruptible(io::stdout().lock()), &gone);
        let mut w = io::BufWriter::with_capacity(1 << 16, sink);
        import(&open, &opts, &mut w, &mut progress)
            .map_err(|e| e.to_string())
            .and_then(|s| {
                w.flush()
                    .map(|()| s)
                    .map_err(|e| format!("error code=IO message=writing the tape: {e}"))
            })
    } else {
        (|| -> Result<Summary, String> {
            let (pending, f) = super::out::Pending::open(&a.out)?;
            let mut w = io::BufWriter::with_capacity(1 << 16, super::out::Interruptible(f));
            let s = import(&open, &opts, &mut w, &mut progress).map_err(|e| e.to_string())?;
            let f = w
                .into_inner()
                .map_err(|e| format!("error code=IO message=writing the tape: {}", e.error()))?;
            pending
                .sync(&f.0)
                .map_err(|e| format!("error code=IO message=syncing the tape: {e}"))?;
            drop(f);
            pending.commit()?;
            Ok(s)
        })()
    };
    if shown {
        eprintln!();
    }
    match result {
        Ok(s) => {
            // Likely wrong but not refused: before the summary, one line each.
            for w in &s.warnings {
                errln!("{w}");
            }
            let options = if s.option_quotes + s.option_trades_skipped == 0 {
                String::new()
            } else {
                format!(
                    "; option quotes {} on {} contracts, option trades kept out {}",
                    s.option_quotes, s.option_contracts, s.option_trades_skipped
                )
            };
            let plural =
                |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
            errln!(
                "imported {} ({} kept) as {} into {} ({}, symbols {}{options})",
                plural(s.records, "record", "records"),
                s.kept,
                plural(s.events, "event", "events"),
                if to_stdout {
                    "standard output".to_string()
                } else {
                    a.out.display().to_string()
                },
                plural(s.sessions, "session", "sessions"),
                s.symbols.join(",")
            );
            // What was not imported as read, and why (dropped, skipped, repeated).
            if let Some(b) = s.breakdown() {
                errln!("{b}");
            }
            super::flags::EXIT_OK
        }
        Err(_) if gone.get() => super::flags::EXIT_OK,
        Err(e) => {
            match super::signals::caught() {
                Some(sig) => {
                    // Standard output or a FIFO got what was written before the signal.
                    let partial =
                        to_stdout || std::fs::metadata(&a.out).is_ok_and(|m| !m.is_file());
                    errln!("{}", super::out::interrupted_line(sig, &a.out, partial))
                }
                None => errln!("{e}"),
            }
            super::flags::EXIT_USAGE
        }
    }
}

/// A writer to standard output that notes a reader gone (`EPIPE`) in its flag.
struct PipeWatch<'a, W>(W, &'a std::cell::Cell<bool>);

impl<W: Write> Write for PipeWatch<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).inspect_err(|e| self.note(e))
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().inspect_err(|e| self.note(e))
    }
}

impl<W> PipeWatch<'_, W> {
    fn note(&self, e: &io::Error) {
        if e.kind() == io::ErrorKind::BrokenPipe {
            self.1.set(true);
        }
    }
}
