//! The tape format (JSON Lines, `v` = 1): the header, the events, a streaming reader that
//! refuses malformed lines with their line number and reason, and a canonical writer.
//!
//! See `docs/tapes.md` for the format.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, BufRead, Write};
use std::path::Path;

use serde_json::{Map, Value};

use super::quote::{QuoteInst, TapeQuote, looks_occ, occ_symbol, parse_occ};
use super::types::{Date, Px, SYM_MAX_LEN, Sym, Ts, swar};

/// The first tape format version (trades, vol changes and headlines). The generator writes
/// it; a v1 tape replays exactly as it always has.
pub const TAPE_VERSION: u64 = 1;

/// Format version 2: v1 plus `quote` events (and `session` events). The newest this crate
/// reads; the importer writes it.
pub const TAPE_VERSION_2: u64 = 2;

/// Longest line the reader accepts, in bytes (without the newline). A longer line is refused,
/// so a reader never buffers more than this much of one line.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Per-symbol header entry.
#[derive(Clone, Debug, PartialEq)]
pub struct SymbolSpec {
    /// The symbol.
    pub sym: Sym,
    /// The prior session's close.
    pub prior_close: Px,
    /// Strike grid of the symbol's option chain; `Some` marks an exec symbol with options.
    pub strike_step: Option<Px>,
}

/// Per-symbol volatility surface parameters (see the market model for the smile).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VolSpec {
    /// The symbol the options are on.
    pub sym: Sym,
    /// At-the-money implied volatility (annualised, e.g. `0.32`).
    pub atm_iv: f64,
    /// Smile slope per unit of log-moneyness (`iv = atm_iv + skew * ln(K/S)`).
    pub skew: f64,
}

/// The first line of a tape.
#[derive(Clone, Debug, PartialEq)]
pub struct TapeHeader {
    /// Format version ([`TAPE_VERSION`] or [`TAPE_VERSION_2`]).
    pub v: u64,
    /// Tape name.
    pub name: String,
    /// Session date.
    pub date: Date,
    /// Exchange time zone name (informational; all times on the tape are in it).
    pub tz: String,
    /// Session open (e.g. 09:30).
    pub open: Ts,
    /// Session close (e.g. 16:00).
    pub close: Ts,
    /// Symbols, sorted by symbol.
    pub symbols: Vec<SymbolSpec>,
    /// Volatility parameters, sorted by symbol; each names a symbol of `symbols`.
    pub vol: Vec<VolSpec>,
    /// Risk-free rate (annualised, continuously compounded).
    pub rate: f64,
    /// Free-text provenance, e.g. `synthetic seed=7 regime=shock`.
    pub source: String,
    /// Tags (`regime`, `date`, `source`, …), sorted by key.
    pub tags: BTreeMap<String, String>,
}

impl TapeHeader {
    /// The header of one session of a multi-session tape: this header with the session's
    /// date, open, close and prior closes (and a `date` tag, where the header has one, set
    /// to the session's date). Symbols, vol, rate, name and source are the file's.
    pub fn for_session(&self, s: &SessionSpec) -> TapeHeader {
        let mut h = self.clone();
        h.date = s.date;
        h.open = s.open;
        h.close = s.close;
        for sp in &mut h.symbols {
            if let Some((_, px)) = s.prior.iter().find(|(sym, _)| *sym == sp.sym) {
                sp.prior_close = *px;
            }
        }
        if let Some(d) = h.tags.get_mut("date") {
            *d = s.date.to_string();
        }
        h
    }

    /// The first session of the tape as a [`SessionSpec`] (the header's date, open, close
    /// and prior closes).
    pub fn first_session(&self) -> SessionSpec {
        SessionSpec {
            date: self.date,
            open: self.open,
            close: self.close,
            prior: self
                .symbols
                .iter()
                .map(|s| (s.sym, s.prior_close))
                .collect(),
        }
    }

    /// The header entry of a symbol.
    pub fn symbol(&self, sym: &str) -> Option<&SymbolSpec> {
        self.symbols.iter().find(|s| s.sym.as_str() == sym)
    }

    /// The volatility parameters of a symbol.
    pub fn vol_of(&self, sym: &str) -> Option<&VolSpec> {
        self.vol.iter().find(|s| s.sym.as_str() == sym)
    }
}

/// A trade print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tick {
    /// Time of the print.
    pub ts: Ts,
    /// Symbol (one of the header's).
    pub sym: Sym,
    /// Price (positive).
    pub px: Px,
    /// Size in shares (0 for an index).
    pub sz: u64,
}

/// A change of a symbol's volatility parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IvChange {
    /// Time of the change.
    pub ts: Ts,
    /// Symbol (one of the header's).
    pub sym: Sym,
    /// New at-the-money implied volatility.
    pub atm_iv: f64,
    /// New skew, if it changed.
    pub skew: Option<f64>,
}

/// A news headline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Headline {
    /// Time the headline crossed.
    pub ts: Ts,
    /// The text.
    pub text: String,
}

/// The start of a new session (`{"type":"session",...}`, v2): the sessions of a tape follow
/// one another in date order; the header describes the first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionSpec {
    /// Session date (after the previous session's).
    pub date: Date,
    /// Session open.
    pub open: Ts,
    /// Session close.
    pub close: Ts,
    /// Prior close of every header symbol, sorted by symbol.
    pub prior: Vec<(Sym, Px)>,
}

/// One event line of a tape (everything but the header).
#[derive(Clone, Debug, PartialEq)]
pub enum TapeEvent {
    /// `{"type":"tick",...}`
    Tick(Tick),
    /// `{"type":"iv",...}`
    Iv(IvChange),
    /// `{"type":"headline",...}`
    Headline(Headline),
    /// `{"type":"quote",...}` (v2): a top-of-book quote for a symbol or an option.
    Quote(TapeQuote),
    /// `{"type":"session",...}` (v2): a new session starts; the events after it are its.
    Session(Box<SessionSpec>),
}

impl TapeEvent {
    /// The event's timestamp.
    pub fn ts(&self) -> Ts {
        match self {
            TapeEvent::Tick(t) => t.ts,
            TapeEvent::Iv(i) => i.ts,
            TapeEvent::Headline(h) => h.ts,
            TapeEvent::Quote(q) => q.ts,
            // A session starts before any of its events: midnight of its date.
            TapeEvent::Session(_) => Ts(0),
        }
    }
}

/// Why a tape line was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TapeErrorKind {
    /// The underlying reader failed.
    Io,
    /// The input has no header line.
    Empty,
    /// A line longer than [`MAX_LINE_BYTES`].
    TooLong,
    /// A line that is not UTF-8.
    Utf8,
    /// A blank line.
    Blank,
    /// Truncated JSON (the line ends inside a value).
    Truncated,
    /// Invalid JSON, or not a JSON object.
    Json,
    /// The header's `v` is not a version this reader reads (1 or 2).
    BadVersion,
    /// The first line is not a header, or a header appears later.
    BadHeader,
    /// A required field is absent.
    MissingField,
    /// A field has the wrong type or an invalid value.
    BadField,
    /// A `type` this version does not know.
    UnknownType,
    /// A `sym` not declared in the header.
    UnknownSymbol,
    /// A timestamp earlier than the previous event's.
    OutOfOrder,
    /// A price that is not a finite, positive number with at most 4 decimals.
    BadPrice,
    /// The tape ends (at a line boundary) long before the session close: cut short.
    EndsEarly,
}

impl TapeErrorKind {
    /// A stable, kebab-case reason name (printed at the start of the message).
    pub fn as_str(self) -> &'static str {
        match self {
            TapeErrorKind::Io => "io",
            TapeErrorKind::Empty => "empty",
            TapeErrorKind::TooLong => "too-long",
            TapeErrorKind::Utf8 => "utf8",
            TapeErrorKind::Blank => "blank-line",
            TapeErrorKind::Truncated => "truncated",
            TapeErrorKind::Json => "invalid-json",
            TapeErrorKind::BadVersion => "bad-version",
            TapeErrorKind::BadHeader => "bad-header",
            TapeErrorKind::MissingField => "missing-field",
            TapeErrorKind::BadField => "bad-field",
            TapeErrorKind::UnknownType => "unknown-type",
            TapeErrorKind::UnknownSymbol => "unknown-symbol",
            TapeErrorKind::OutOfOrder => "out-of-order",
            TapeErrorKind::BadPrice => "bad-price",
            TapeErrorKind::EndsEarly => "ends-early",
        }
    }
}

/// A refused tape line. Displays as
/// `error code=TAPE line=12 message=out-of-order: ...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TapeError {
    /// 1-based line number (0 when no line was involved, e.g. opening the file).
    pub line: u64,
    /// The reason.
    pub kind: TapeErrorKind,
    /// Human-readable detail (without the reason prefix).
    pub detail: String,
}

impl TapeError {
    /// The stable error code of every tape error.
    pub const CODE: &'static str = "TAPE";

    fn new(line: u64, kind: TapeErrorKind, detail: impl Into<String>) -> TapeError {
        TapeError {
            line,
            kind,
            detail: detail.into(),
        }
    }

    /// The stable error code (`TAPE`).
    pub fn code(&self) -> &'static str {
        Self::CODE
    }

    /// `reason: detail`, as printed after `message=`.
    pub fn message(&self) -> String {
        format!("{}: {}", self.kind.as_str(), self.detail)
    }
}

impl fmt::Display for TapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "error code={} line={} message={}",
            Self::CODE,
            self.line,
            self.message()
        )
    }
}

impl std::error::Error for TapeError {}

type Res<T> = Result<T, TapeError>;

/// The longest gap allowed between a tape's last event and its session close (60 s: a
/// tape ticks every second; a quiet minute at the close is plausible, an hour is not).
pub const MAX_END_GAP_MS: u32 = 60_000;

/// Streaming tape reader: reads the header on construction, then yields one event per line.
///
/// Memory is bounded by the longest line ([`MAX_LINE_BYTES`]) and the header; nothing is
/// collected. The first refused line is yielded as `Err` and the iterator then ends (it
/// never skips a bad line and carries on).
#[derive(Debug)]
pub struct TapeReader<R> {
    r: R,
    header: TapeHeader,
    /// The current session's header (the file header until a `session` event).
    session: TapeHeader,
    /// The current session's number, from 1.
    session_no: u32,
    line: u64,
    last_ts: Option<Ts>,
    buf: Vec<u8>,
    done: bool,
    /// Decode canonical tick lines with [`fast_tick`], and canonical tick and `iv` lines the
    /// general path read whole with [`fast_line`] (off only in tests of the fast paths).
    fast: bool,
    /// The header's symbols with their keys ([`SymKeys`]), for the fast paths.
    keys: SymKeys,
}

/// The header's symbols, each with its 16-byte key ([`Sym::key`]), made once per reader: the
/// fast tick decoder matches a line's symbol against them at every line.
type SymKeys = Vec<(u128, Sym)>;

fn sym_keys(header: &TapeHeader) -> SymKeys {
    header
        .symbols
        .iter()
        .map(|sp| (sp.sym.key(), sp.sym))
        .collect()
}

enum RawLine {
    Eof,
    Line,
    TooLong,
}

/// The UTF-8 byte-order mark's bytes.
pub(crate) const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";

/// Read one line (without `\n` and a trailing `\r`) into `buf`, at most `MAX_LINE_BYTES`.
fn read_line_capped<R: BufRead>(r: &mut R, buf: &mut Vec<u8>) -> io::Result<RawLine> {
    buf.clear();
    let mut any = false;
    loop {
        let avail = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            break;
        }
        any = true;
        match avail.iter().position(|&c| c == b'\n') {
            Some(i) => {
                if buf.len() + i > MAX_LINE_BYTES {
                    r.consume(i + 1);
                    return Ok(RawLine::TooLong);
                }
                buf.extend_from_slice(&avail[..i]);
                r.consume(i + 1);
                if buf.last() == Some(&b'\r') {
                    buf.pop();
                }
                return Ok(RawLine::Line);
            }
            None => {
                let n = avail.len();
                if buf.len() + n > MAX_LINE_BYTES {
                    r.consume(n);
                    return Ok(RawLine::TooLong);
                }
                buf.extend_from_slice(avail);
                r.consume(n);
            }
        }
    }
    if !any {
        return Ok(RawLine::Eof);
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(RawLine::Line)
}

/// Parse an unsigned JSON integer (no sign, no leading zero, at most `max_digits` digits,
/// at most `u64::MAX`) at the start of `b`: the value and its digit count. Fewer than 8
/// digits (with 8 bytes to look at) are read a word at a time, others a digit at a time
/// ([`fast_uint_scalar`], the reference it is property-tested against).
#[inline(always)]
fn fast_uint(b: &[u8], max_digits: usize) -> Option<(u64, usize)> {
    if let Some(w) = b.first_chunk::<8>() {
        let w = u64::from_le_bytes(*w);
        let n = swar::digit_count(w);
        if n < 8 && n as usize <= max_digits {
            // JSON forbids leading zeros ("007"); "0" alone is fine.
            if n == 0 || (n > 1 && w as u8 == b'0') {
                return None;
            }
            return Some((swar::digits_value(w, n), n as usize));
        }
    }
    fast_uint_scalar(b, max_digits)
}

/// [`fast_uint`] a digit at a time.
#[cold]
fn fast_uint_scalar(b: &[u8], max_digits: usize) -> Option<(u64, usize)> {
    let mut v: u64 = 0;
    let mut n = 0;
    while let Some(&c) = b.get(n) {
        if !c.is_ascii_digit() {
            break;
        }
        if n == max_digits {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
        n += 1;
    }
    // JSON forbids leading zeros ("007"); "0" alone is fine.
    if n == 0 || (n > 1 && b[0] == b'0') {
        return None;
    }
    Some((v, n))
}

/// The longest canonical tick line, with its `\r\n`: the fixed text and the clock (42 bytes
/// to the symbol, 7 to the price, 6 to the size, `}\r\n`), the longest symbol, the longest
/// price the fast path reads (12 integer digits, the point, 4 decimals) and 20 size digits.
const TICK_LINE_MAX: usize = 42 + SYM_MAX_LEN + 7 + 17 + 6 + 20 + 3;

/// Eight bytes of a text as one little-endian word.
const fn word(t: &[u8], at: usize) -> u64 {
    u64::from_le_bytes([
        t[at],
        t[at + 1],
        t[at + 2],
        t[at + 3],
        t[at + 4],
        t[at + 5],
        t[at + 6],
        t[at + 7],
    ])
}

/// The text before the clock, `{"type":"tick","ts":"` (21 bytes), and after it to the
/// symbol, `","sym":"` (9 bytes).
const TICK_HEAD: &[u8; 21] = br#"{"type":"tick","ts":""#;
const TICK_SYM: &[u8; 9] = br#"","sym":""#;

/// The zero-copy decoder of one canonical tick line, exactly as the writer emits it:
/// `{"type":"tick","ts":"HH:MM:SS.mmm","sym":"SYM","px":DIGITS[.D{1,4}],"sz":DIGITS}`
/// followed by `\n` or `\r\n`, all within `b`. Returns the tick and the bytes used (with the
/// line end), or `None` for anything else, valid or not, which the general path then reads.
///
/// It accepts only what the general path accepts, with the same value: the price's digits
/// go straight into the fixed point ([`Px::from_decimal_prefix`]: at most 4 decimals, at
/// most 10^11, the value [`Px::from_f64_exact`] gives for the float serde_json parses, which
/// is property-tested), the symbol is compared as bytes (the line is not UTF-8-validated:
/// every byte it accepts is ASCII); any value the general path would refuse (an unknown
/// symbol, a bad clock, a zero price) falls back to it, so refusals are the general path's
/// own.
///
/// One bounds check per line: the decoder reads a window of [`TICK_LINE_MAX`] bytes at
/// fixed offsets (the text to the symbol, 42 bytes, in six words and one test) and a word
/// at a time. A line nearer than that to the end of `b` is read from a zero-padded copy (no
/// byte it accepts is zero, so it never reads past `b`).
#[inline]
fn fast_tick(b: &[u8], keys: &[(u128, Sym)]) -> Option<(Tick, usize)> {
    match b.first_chunk::<TICK_LINE_MAX>() {
        Some(w) => fast_tick_in(w, keys),
        None => fast_tick_short(b, keys),
    }
}

/// [`fast_tick`] of a line nearer than [`TICK_LINE_MAX`] bytes to the end of `b`.
#[cold]
#[inline(never)]
fn fast_tick_short(b: &[u8], keys: &[(u128, Sym)]) -> Option<(Tick, usize)> {
    let mut w = [0u8; TICK_LINE_MAX];
    w[..b.len()].copy_from_slice(b);
    fast_tick_in(&w, keys).filter(|&(_, used)| used <= b.len())
}

/// [`fast_tick`] over a window of [`TICK_LINE_MAX`] bytes.
#[inline(always)]
fn fast_tick_in(a: &[u8; TICK_LINE_MAX], keys: &[(u128, Sym)]) -> Option<(Tick, usize)> {
    let at = |i: usize| u64::from_le_bytes(*a[i..].first_chunk::<8>().expect("in the window"));
    // The fixed text: bytes 0..21 (three overlapping words) and 33..42 (two), one test.
    let fixed = (at(0) ^ word(TICK_HEAD, 0))
        | (at(8) ^ word(TICK_HEAD, 8))
        | (at(13) ^ word(TICK_HEAD, 13))
        | (u64::from(a[33]) ^ u64::from(TICK_SYM[0]))
        | (at(34) ^ word(TICK_SYM, 1));
    if fixed != 0 {
        return None;
    }
    let ts = Ts::parse_bytes(&a[21..33])?;
    // The symbol: its closing quote among the 16 bytes after `"sym":"` (a symbol has at
    // most 15), then its bytes and length as one key against the header's.
    let s = u128::from_le_bytes(*a[42..].first_chunk::<16>().expect("in the window"));
    let x = s ^ u128::from_le_bytes([b'"'; 16]);
    let quotes =
        x.wrapping_sub(u128::from_le_bytes([1; 16])) & !x & u128::from_le_bytes([0x80; 16]);
    // The lowest marked byte is exactly the first quote (16: none).
    let q = (quotes.trailing_zeros() / 8) as usize;
    if q > SYM_MAX_LEN {
        return None;
    }
    let key = (s & ((1u128 << (8 * q)) - 1)) | ((q as u128) << 120);
    let sym = keys.iter().find(|k| k.0 == key)?.1;
    // `","px":` (7 bytes).
    let p = 42 + q;
    if at(p) & 0x00ff_ffff_ffff_ffff != word(br#"","px":_"#, 0) & 0x00ff_ffff_ffff_ffff {
        return None;
    }
    // The price, straight into the fixed point (no float round trip).
    let (px, np) = Px::from_decimal_prefix(&a[p + 7..])?;
    // `,"sz":` (6 bytes).
    let z = p + 7 + np;
    if at(z) & 0x0000_ffff_ffff_ffff != word(br#","sz":__"#, 0) & 0x0000_ffff_ffff_ffff {
        return None;
    }
    let (sz, nz) = fast_uint(&a[z + 6..], 20)?;
    let e = z + 6 + nz;
    let used = match a.get(e..e + 3)? {
        [b'}', b'\n', _] => e + 2,
        [b'}', b'\r', b'\n'] => e + 3,
        _ => return None,
    };
    Some((Tick { ts, sym, px, sz }, used))
}

/// The general path's line, `buf` (read whole, without its line end), decoded without
/// serde when it is a canonical tick or `iv` line: a tick line the reader's buffer cut in
/// two ([`fast_tick`] reads only lines wholly in the buffer: about one in two thousand on a
/// bundled tape read from its file), a last line without its line end, a tick out of order
/// (decoded, then refused by the order check as before), and the `iv` lines
/// ([`fast_iv`]). `None` for anything else, valid or not, which [`parse_object`] and
/// [`parse_event`] then read: the same events either way (property-tested), and every
/// refusal is theirs.
fn fast_line(buf: &mut Vec<u8>, keys: &[(u128, Sym)]) -> Option<TapeEvent> {
    if buf.last() != Some(&b'}') {
        return None;
    }
    if buf.starts_with(TICK_HEAD) {
        // `fast_tick` wants the line end: the `}` it ends with, then `\n`.
        buf.push(b'\n');
        let tick = fast_tick(buf, keys).filter(|&(_, used)| used == buf.len());
        buf.pop();
        return tick.map(|(t, _)| TapeEvent::Tick(t));
    }
    fast_iv(buf, keys).map(TapeEvent::Iv)
}

/// The decoder of one canonical `iv` line without a skew, as the writer emits it, without
/// its line end: `{"type":"iv","ts":"HH:MM:SS.mmm","sym":"SYM","atm_iv":INT.FRAC}`. `None`
/// for anything else, and for a value the general path refuses (outside (0, 10]).
fn fast_iv(b: &[u8], keys: &[(u128, Sym)]) -> Option<IvChange> {
    let rest = b.strip_prefix(br#"{"type":"iv","ts":""#)?;
    let ts = Ts::parse_bytes(rest.get(..12)?)?;
    let rest = rest[12..].strip_prefix(TICK_SYM)?;
    let q = rest.iter().position(|&c| c == b'"')?;
    // Compared as bytes: a header symbol has no `\\`, so a match is the same string unescaped.
    let sym = keys.iter().find(|k| k.1.as_bytes() == &rest[..q])?.1;
    let num = rest[q..]
        .strip_prefix(br#"","atm_iv":"#)?
        .strip_suffix(b"}")?;
    let atm_iv = fast_decimal(num)?;
    (atm_iv > 0.0 && atm_iv <= 10.0).then_some(IvChange {
        ts,
        sym,
        atm_iv,
        skew: None,
    })
}

/// Exact powers of ten, `1e0..=1e15`.
const POW10: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// A JSON number `INT.FRAC` (no sign, no exponent, no leading zero, at most 15 digits in
/// all) as serde_json reads it: its digits as an integer over a power of ten. Both are exact
/// in an `f64` (below 2^53, at most 10^15), so the quotient is the one correctly rounded
/// value, which serde_json gives with or without its `float_roundtrip` feature. `None` for
/// any other text.
fn fast_decimal(b: &[u8]) -> Option<f64> {
    let dot = b.iter().position(|&c| c == b'.')?;
    let (int, frac) = (&b[..dot], &b[dot + 1..]);
    if int.is_empty()
        || frac.is_empty()
        || (int.len() > 1 && int[0] == b'0')
        || int.len() + frac.len() > 15
    {
        return None;
    }
    let mut sig = 0u64;
    for &c in int.iter().chain(frac) {
        if !c.is_ascii_digit() {
            return None;
        }
        sig = sig * 10 + u64::from(c - b'0');
    }
    Some(sig as f64 / POW10[frac.len()])
}

/// The text of the number `n` that `key` holds on the line `text`, as the file writes it
/// (`1e12`, `999999999999.99999`), for a refusal: the first `"key":` whose number reads as
/// `n` (the key may be in several objects of the line: each header symbol's
/// `prior_close`). `None` when none does (a key written with escapes).
#[cold]
fn number_text(text: &str, key: &str, n: &serde_json::Number) -> Option<String> {
    let quoted = format!("\"{key}\"");
    text.match_indices(&quoted).find_map(|(at, _)| {
        let rest = text[at + quoted.len()..].trim_start().strip_prefix(':')?;
        let rest = rest.trim_start();
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E')))
            .unwrap_or(rest.len());
        let num = &rest[..end];
        (serde_json::from_str::<serde_json::Number>(num)
            .ok()
            .as_ref()
            == Some(n))
        .then(|| num.to_string())
    })
}

/// Parse one line into a JSON object (and the line as text), or refuse it.
fn parse_object(line_no: u64, bytes: &[u8]) -> Res<(Map<String, Value>, &str)> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        TapeError::new(
            line_no,
            TapeErrorKind::Utf8,
            format!("line is not valid UTF-8 (byte {})", e.valid_up_to()),
        )
    })?;
    if text.trim().is_empty() {
        return Err(TapeError::new(
            line_no,
            TapeErrorKind::Blank,
            "blank line (every line must be one JSON object)",
        ));
    }
    match serde_json::from_str::<Value>(text) {
        // `Value` keeps a repeated key's last value: refused instead.
        Ok(Value::Object(m)) => match repeated_key(text) {
            None => Ok((m, text)),
            Some(r) => Err(TapeError::new(
                line_no,
                TapeErrorKind::BadField,
                r.message(),
            )),
        },
        Ok(other) => Err(TapeError::new(
            line_no,
            TapeErrorKind::Json,
            format!("expected a JSON object, got {}", json_kind(&other)),
        )),
        Err(e) => {
            if has_non_finite_literal(text) {
                return Err(TapeError::new(
                    line_no,
                    TapeErrorKind::BadPrice,
                    "non-finite number (NaN/Infinity is not a valid price or value)",
                ));
            }
            let kind = if e.classify() == serde_json::error::Category::Eof {
                TapeErrorKind::Truncated
            } else {
                TapeErrorKind::Json
            };
            let what = if kind == TapeErrorKind::Truncated {
                "line ends inside a JSON value"
            } else {
                "invalid JSON"
            };
            Err(TapeError::new(
                line_no,
                kind,
                format!("{what} ({} at column {})", category_text(&e), e.column()),
            ))
        }
    }
}

/// A key that appears twice in one object of a line: the key, and the line's field it is
/// inside (`None`: the line's own object).
struct RepeatedKey {
    field: Option<String>,
    key: String,
}

impl RepeatedKey {
    fn message(&self) -> String {
        // Keys are the file's text: escaped, so that a control or bidirectional character
        // never reaches the terminal raw.
        let key = self.key.escape_debug();
        match &self.field {
            None => {
                format!(
                    "field `{key}` appears twice on the line (a key may appear once in an object)"
                )
            }
            Some(f) => format!(
                "field `{}` holds key `{key}` twice (a key may appear once in an object)",
                f.escape_debug()
            ),
        }
    }
}

/// The first key repeated in an object of `text` (the line's object or one inside it), which
/// serde_json has read as valid JSON, so only its strings and brackets need following: a
/// string where an object expects a key is one (unescaped by serde_json when it holds an
/// escape, so `"p\u0078"` is `px`). serde_json's [`Value`] keeps the last value of a
/// repeated key (`"px":500.00,"px":1.0` read as 1.0); the reader refuses the line. Only the
/// general path calls this: a canonical line the fast paths take has each key once by its
/// form.
fn repeated_key(text: &str) -> Option<RepeatedKey> {
    let b = text.as_bytes();
    // Per open bracket: the keys of an object so far, or `None` for an array.
    let mut open: Vec<Option<Vec<std::borrow::Cow<'_, str>>>> = Vec::new();
    let mut want_key = false;
    // The line's field the scan is inside (its last key at depth 1).
    let mut field: Option<std::borrow::Cow<'_, str>> = None;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' => {
                open.push(Some(Vec::new()));
                want_key = true;
            }
            b'[' => {
                open.push(None);
                want_key = false;
            }
            b'}' | b']' => {
                open.pop();
                want_key = false;
            }
            b',' => want_key = matches!(open.last(), Some(Some(_))),
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                if want_key {
                    let raw = text.get(start..=i)?;
                    let key: std::borrow::Cow<'_, str> = if raw.contains('\\') {
                        serde_json::from_str::<String>(raw).ok()?.into()
                    } else {
                        raw[1..raw.len() - 1].into()
                    };
                    let depth = open.len();
                    let keys = open.last_mut()?.as_mut()?;
                    if keys.contains(&key) {
                        return Some(RepeatedKey {
                            field: (depth > 1).then(|| field.unwrap_or_default().into_owned()),
                            key: key.into_owned(),
                        });
                    }
                    if depth == 1 {
                        field = Some(key.clone());
                    }
                    keys.push(key);
                    want_key = false;
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn category_text(e: &serde_json::Error) -> String {
    // serde_json's message ends with " at line L column C"; keep just the reason.
    let s = e.to_string();
    match s.find(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// A bare `NaN`, `Infinity` or `-Infinity` outside a string.
fn has_non_finite_literal(text: &str) -> bool {
    let mut in_str = false;
    let mut esc = false;
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if in_str {
            if esc {
                esc = false;
            } else if c == b'\\' {
                esc = true;
            } else if c == b'"' {
                in_str = false;
            }
        } else if c == b'"' {
            in_str = true;
        } else if b[i..].starts_with(b"NaN") || b[i..].starts_with(b"Infinity") {
            return true;
        }
        i += 1;
    }
    false
}

/// What kind of JSON value `v` is, as a message says it (`a number`, `an object`): the tape
/// reader's and the model author's messages about a field of the wrong type.
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

struct Fields<'a> {
    line: u64,
    what: &'static str,
    m: &'a Map<String, Value>,
    /// The whole line, for a refusal that quotes a number as the file writes it.
    text: &'a str,
}

impl<'a> Fields<'a> {
    fn get(&self, key: &str) -> Res<&'a Value> {
        self.m.get(key).ok_or_else(|| {
            TapeError::new(
                self.line,
                TapeErrorKind::MissingField,
                format!("{} is missing field `{key}`", self.what),
            )
        })
    }

    fn bad(&self, key: &str, why: impl fmt::Display) -> TapeError {
        TapeError::new(
            self.line,
            TapeErrorKind::BadField,
            format!("{} field `{key}`: {why}", self.what),
        )
    }

    fn str(&self, key: &str) -> Res<&'a str> {
        match self.get(key)? {
            Value::String(s) => Ok(s),
            v => Err(self.bad(key, format!("expected a string, got {}", json_kind(v)))),
        }
    }

    fn opt_str(&self, key: &str) -> Res<Option<&'a str>> {
        if self.m.contains_key(key) {
            self.str(key).map(Some)
        } else {
            Ok(None)
        }
    }

    fn f64(&self, key: &str) -> Res<f64> {
        match self.get(key)? {
            Value::Number(n) => match n.as_f64() {
                Some(x) if x.is_finite() => Ok(x),
                _ => Err(self.bad(key, "not a finite number")),
            },
            v => Err(self.bad(key, format!("expected a number, got {}", json_kind(v)))),
        }
    }

    fn opt_f64(&self, key: &str) -> Res<Option<f64>> {
        if self.m.contains_key(key) {
            self.f64(key).map(Some)
        } else {
            Ok(None)
        }
    }

    fn ts(&self, key: &str) -> Res<Ts> {
        let s = self.str(key)?;
        Ts::parse(s).ok_or_else(|| self.bad(key, format!("{s:?} is not HH:MM:SS.mmm")))
    }

    /// A price: a JSON number, finite, positive, at most 4 decimals.
    fn px(&self, key: &str) -> Res<Px> {
        let price_err = |why: String| {
            TapeError::new(
                self.line,
                TapeErrorKind::BadPrice,
                format!("{} field `{key}`: {why}", self.what),
            )
        };
        match self.get(key)? {
            Value::Number(n) => {
                // Refusals quote the number as the line writes it (serde_json keeps only
                // its float, which prints `999999999999.99999` as `1000000000000.0`).
                let shown = || number_text(self.text, key, n).unwrap_or_else(|| n.to_string());
                let x = n
                    .as_f64()
                    .ok_or_else(|| price_err(format!("{} is not a number", shown())))?;
                if !x.is_finite() {
                    return Err(price_err(format!("{} is not finite", shown())));
                }
                if x <= 0.0 {
                    return Err(price_err(format!("{} is not positive", shown())));
                }
                Px::from_f64_exact(x).ok_or_else(|| {
                    price_err(if x > Px::MAX.to_f64() {
                        Px::too_large(shown())
                    } else {
                        format!("{} has more than 4 decimal places", shown())
                    })
                })
            }
            Value::String(s) => Err(price_err(format!(
                "expected a number, got the string {s:?}{}",
                if s.eq_ignore_ascii_case("nan") || s.to_ascii_lowercase().contains("inf") {
                    " (non-finite)"
                } else {
                    ""
                }
            ))),
            v => Err(price_err(format!(
                "expected a number, got {}",
                json_kind(v)
            ))),
        }
    }
}

fn parse_header(line: u64, text: &str, m: &Map<String, Value>) -> Res<TapeHeader> {
    let f = Fields {
        line,
        what: "header",
        m,
        text,
    };
    match m.get("type") {
        Some(Value::String(t)) if t == "header" => {}
        Some(Value::String(t)) => {
            return Err(TapeError::new(
                line,
                TapeErrorKind::BadHeader,
                format!("the first line must be the header, got type {t:?}"),
            ));
        }
        Some(_) => return Err(f.bad("type", "expected a string")),
        None => {
            return Err(TapeError::new(
                line,
                TapeErrorKind::BadHeader,
                "the first line must be the header (field `type` is missing)",
            ));
        }
    }
    let v = match f.get("v")? {
        Value::Number(n) => n.as_u64(),
        _ => None,
    };
    let Some(v) = v.filter(|v| (TAPE_VERSION..=TAPE_VERSION_2).contains(v)) else {
        return Err(TapeError::new(
            line,
            TapeErrorKind::BadVersion,
            format!(
                "header field `v` is {}, this reader reads versions {TAPE_VERSION} and {TAPE_VERSION_2}",
                f.get("v")?
            ),
        ));
    };
    let name = f.str("name")?.to_string();
    // The name is printed in every Frame's first line, the run report and `tape info`: a
    // line break in it would forge a line of the Frame the agent reads, an escape sequence
    // would reach the terminal.
    if name.chars().any(crate::lang::diag::is_control_like) {
        return Err(f.bad(
            "name",
            "it holds a control or bidirectional character (a line break, a tab, ESC, ...): a tape's name is one line of plain text",
        ));
    }
    let (date, open, close) = day_fields(&f)?;
    let tz = f.opt_str("tz")?.unwrap_or("America/New_York").to_string();
    // The zone is printed (`tape info`, the run report): a name the bundled tz database
    // does not know, or one with an escape sequence in it, is refused as `tape import
    // --tz` refuses it (the database is bundled, so every machine reads the same tapes).
    if crate::market::import::tz::Zone::parse(&tz).is_none() {
        return Err(f.bad(
            "tz",
            format!(
                "{:?} is not a time zone (an IANA name such as America/New_York, UTC, or an offset such as -05:00)",
                crate::lang::diag::visible(&tz)
            ),
        ));
    }

    let syms = match f.get("symbols")? {
        Value::Object(o) if !o.is_empty() => o,
        Value::Object(_) => return Err(f.bad("symbols", "no symbols")),
        v => {
            return Err(f.bad(
                "symbols",
                format!("expected an object, got {}", json_kind(v)),
            ));
        }
    };
    let mut symbols = Vec::with_capacity(syms.len());
    for (k, v) in syms {
        let sym =
            Sym::new(k).ok_or_else(|| f.bad("symbols", format!("{k:?} is not a valid symbol")))?;
        let Value::Object(o) = v else {
            return Err(f.bad("symbols", format!("{k}: expected an object")));
        };
        let sf = Fields {
            line,
            what: "header symbol",
            m: o,
            text,
        };
        let prior_close = sf.px("prior_close")?;
        let strike_step = if o.contains_key("strike_step") {
            Some(sf.px("strike_step")?)
        } else {
            None
        };
        symbols.push(SymbolSpec {
            sym,
            prior_close,
            strike_step,
        });
    }
    symbols.sort_by_key(|s| s.sym);

    let mut vol = Vec::new();
    if let Some(vv) = m.get("vol") {
        let Value::Object(o) = vv else {
            return Err(f.bad("vol", format!("expected an object, got {}", json_kind(vv))));
        };
        for (k, v) in o {
            let sym =
                Sym::new(k).ok_or_else(|| f.bad("vol", format!("{k:?} is not a valid symbol")))?;
            if !symbols.iter().any(|s| s.sym == sym) {
                return Err(TapeError::new(
                    line,
                    TapeErrorKind::UnknownSymbol,
                    format!("header field `vol`: {k} is not in `symbols`"),
                ));
            }
            let Value::Object(o) = v else {
                return Err(f.bad("vol", format!("{k}: expected an object")));
            };
            let vf = Fields {
                line,
                what: "header vol",
                m: o,
                text,
            };
            let atm_iv = vf.f64("atm_iv")?;
            if atm_iv <= 0.0 || atm_iv > 10.0 {
                return Err(vf.bad("atm_iv", format!("{atm_iv} is outside (0, 10]")));
            }
            let skew = vf.opt_f64("skew")?.unwrap_or(0.0);
            vol.push(VolSpec { sym, atm_iv, skew });
        }
    }
    vol.sort_by_key(|s| s.sym);
    let rate = f.opt_f64("rate")?.unwrap_or(0.0);
    if rate.abs() > 1.0 {
        return Err(f.bad("rate", format!("{rate} is outside [-1, 1]")));
    }
    let source = f.opt_str("source")?.unwrap_or("").to_string();
    let mut tags = BTreeMap::new();
    if let Some(t) = m.get("tags") {
        let Value::Object(o) = t else {
            return Err(f.bad("tags", format!("expected an object, got {}", json_kind(t))));
        };
        for (k, v) in o {
            let Value::String(s) = v else {
                return Err(f.bad("tags", format!("tag {k:?} must be a string")));
            };
            tags.insert(k.clone(), s.clone());
        }
    }
    Ok(TapeHeader {
        v,
        name,
        date,
        tz,
        open,
        close,
        symbols,
        vol,
        rate,
        source,
        tags,
    })
}

fn parse_event(
    line: u64,
    text: &str,
    m: &Map<String, Value>,
    header: &TapeHeader,
) -> Res<TapeEvent> {
    let ty = match m.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(v) => {
            return Err(TapeError::new(
                line,
                TapeErrorKind::BadField,
                format!("field `type`: expected a string, got {}", json_kind(v)),
            ));
        }
        None => {
            return Err(TapeError::new(
                line,
                TapeErrorKind::MissingField,
                "event is missing field `type`",
            ));
        }
    };
    let sym_of = |f: &Fields<'_>| -> Res<Sym> {
        let s = f.str("sym")?;
        match Sym::new(s) {
            Some(sym) if header.symbols.iter().any(|x| x.sym == sym) => Ok(sym),
            _ => Err(TapeError::new(
                line,
                TapeErrorKind::UnknownSymbol,
                format!(
                    "{} field `sym`: {s:?} is not a symbol of the header",
                    f.what
                ),
            )),
        }
    };
    match ty {
        "tick" => {
            let f = Fields {
                line,
                what: "tick",
                m,
                text,
            };
            let ts = f.ts("ts")?;
            let sym = sym_of(&f)?;
            let px = f.px("px")?;
            let sz = match f.get("sz")? {
                Value::Number(n) => n.as_u64().ok_or_else(|| f.bad("sz", not_a_size(n)))?,
                v => return Err(f.bad("sz", format!("expected an integer, got {}", json_kind(v)))),
            };
            Ok(TapeEvent::Tick(Tick { ts, sym, px, sz }))
        }
        "iv" => {
            let f = Fields {
                line,
                what: "iv",
                m,
                text,
            };
            let ts = f.ts("ts")?;
            let sym = sym_of(&f)?;
            let atm_iv = f.f64("atm_iv")?;
            if atm_iv <= 0.0 || atm_iv > 10.0 {
                return Err(f.bad("atm_iv", format!("{atm_iv} is outside (0, 10]")));
            }
            let skew = f.opt_f64("skew")?;
            Ok(TapeEvent::Iv(IvChange {
                ts,
                sym,
                atm_iv,
                skew,
            }))
        }
        "headline" => {
            let f = Fields {
                line,
                what: "headline",
                m,
                text,
            };
            let ts = f.ts("ts")?;
            let text = f.str("text")?.to_string();
            Ok(TapeEvent::Headline(Headline { ts, text }))
        }
        "quote" if header.v >= TAPE_VERSION_2 => parse_quote(line, text, m, header),
        "session" if header.v >= TAPE_VERSION_2 => parse_session(line, text, m, header),
        "header" => Err(TapeError::new(
            line,
            TapeErrorKind::BadHeader,
            "a header may only be the first line",
        )),
        other if header.v >= TAPE_VERSION_2 => Err(TapeError::new(
            line,
            TapeErrorKind::UnknownType,
            format!(
                "unknown event type {other:?} (known in v2: tick, iv, headline, quote, session)"
            ),
        )),
        other => Err(TapeError::new(
            line,
            TapeErrorKind::UnknownType,
            format!("unknown event type {other:?} (known: tick, iv, headline)"),
        )),
    }
}

/// The `date`, `open` and `close` of a header or a `session` line: a YYYY-MM-DD date and
/// HH:MM times, the close after the open.
fn day_fields(f: &Fields<'_>) -> Res<(Date, Ts, Ts)> {
    let date_s = f.str("date")?;
    let date = Date::parse(date_s)
        .ok_or_else(|| f.bad("date", format!("{date_s:?} is not YYYY-MM-DD")))?;
    let open_s = f.str("open")?;
    let open =
        Ts::parse_hhmm(open_s).ok_or_else(|| f.bad("open", format!("{open_s:?} is not HH:MM")))?;
    let close_s = f.str("close")?;
    let close = Ts::parse_hhmm(close_s)
        .ok_or_else(|| f.bad("close", format!("{close_s:?} is not HH:MM")))?;
    if close <= open {
        return Err(f.bad("close", "the close must be after the open"));
    }
    Ok((date, open, close))
}

/// A `session` line (v2): `date`, `open`, `close` like the header's, and `prior`, the
/// prior close of every header symbol.
fn parse_session(
    line: u64,
    text: &str,
    m: &Map<String, Value>,
    header: &TapeHeader,
) -> Res<TapeEvent> {
    let f = Fields {
        line,
        what: "session",
        m,
        text,
    };
    let (date, open, close) = day_fields(&f)?;
    let Value::Object(o) = f.get("prior")? else {
        return Err(f.bad("prior", "expected an object of symbol: prior close"));
    };
    let pf = Fields {
        line,
        what: "session prior",
        m: o,
        text,
    };
    let mut prior = Vec::with_capacity(header.symbols.len());
    for k in o.keys() {
        if !Sym::new(k).is_some_and(|s| header.symbols.iter().any(|x| x.sym == s)) {
            return Err(TapeError::new(
                line,
                TapeErrorKind::UnknownSymbol,
                format!("session field `prior`: {k:?} is not a symbol of the header"),
            ));
        }
    }
    for sp in &header.symbols {
        if !o.contains_key(sp.sym.as_str()) {
            return Err(TapeError::new(
                line,
                TapeErrorKind::MissingField,
                format!(
                    "session field `prior` has no prior close for {} (every header symbol needs one)",
                    sp.sym
                ),
            ));
        }
        prior.push((sp.sym, pf.px(sp.sym.as_str())?));
    }
    Ok(TapeEvent::Session(Box::new(SessionSpec {
        date,
        open,
        close,
        prior,
    })))
}

/// Why a JSON number is not a size: a whole number past `u64` (JSON reads it as a float,
/// `1e20`) is too large, anything else is not a non-negative integer.
fn not_a_size(n: &serde_json::Number) -> String {
    match n.as_f64() {
        // 2^64: the first whole number a `u64` cannot hold.
        Some(x) if x >= 18_446_744_073_709_551_616.0 => {
            format!("{n} is larger than the largest size, {}", u64::MAX)
        }
        _ => format!("{n} is not a non-negative integer"),
    }
}

/// A `quote` line (v2): `sym` is a header symbol or an OCC option symbol on a header symbol
/// with a chain; `bid` ≤ `ask`; sizes are non-negative integers.
fn parse_quote(
    line: u64,
    text: &str,
    m: &Map<String, Value>,
    header: &TapeHeader,
) -> Res<TapeEvent> {
    let f = Fields {
        line,
        what: "quote",
        m,
        text,
    };
    let ts = f.ts("ts")?;
    let s = f.str("sym")?;
    let unknown = |why: String| TapeError::new(line, TapeErrorKind::UnknownSymbol, why);
    let inst = match Sym::new(s).filter(|sym| header.symbols.iter().any(|x| x.sym == *sym)) {
        Some(sym) => QuoteInst::Sym(sym),
        None if looks_occ(s) => {
            let k = parse_occ(s).map_err(|e| f.bad("sym", format!("{s:?} {e}")))?;
            let Some(spec) = header.symbol(k.root.as_str()) else {
                return Err(unknown(format!(
                    "quote field `sym`: {s:?} is an option on {}, which is not a symbol of the header",
                    k.root
                )));
            };
            let Some(step) = spec.strike_step else {
                return Err(unknown(format!(
                    "quote field `sym`: {s:?} is an option on {}, which has no `strike_step` (no chain) in the header",
                    k.root
                )));
            };
            if k.strike.raw() % step.raw() != 0 {
                return Err(f.bad(
                    "sym",
                    format!(
                        "{s:?}: strike {} is not on {}'s strike grid of {step}",
                        k.strike, k.root
                    ),
                ));
            }
            if k.expiry < header.date {
                return Err(f.bad(
                    "sym",
                    format!(
                        "{s:?}: expiry {} is before the session date {}",
                        k.expiry, header.date
                    ),
                ));
            }
            QuoteInst::Option(k)
        }
        None => {
            return Err(unknown(format!(
                "quote field `sym`: {s:?} is neither a symbol of the header nor an OCC option symbol"
            )));
        }
    };
    let option = matches!(inst, QuoteInst::Option(_));
    let ask = f.px("ask")?;
    // An option's bid may be 0 (no bid); a symbol's must be positive like any price.
    let bid = if option && matches!(m.get("bid"), Some(Value::Number(n)) if n.as_f64() == Some(0.0))
    {
        Px::ZERO
    } else {
        f.px("bid")?
    };
    if bid > ask {
        return Err(TapeError::new(
            line,
            TapeErrorKind::BadPrice,
            format!("quote: crossed book, bid {bid} is above ask {ask}"),
        ));
    }
    let size = |key: &str| -> Res<u64> {
        match f.get(key)? {
            Value::Number(n) => n.as_u64().ok_or_else(|| f.bad(key, not_a_size(n))),
            v => Err(f.bad(key, format!("expected an integer, got {}", json_kind(v)))),
        }
    };
    let bid_sz = size("bsz")?;
    let ask_sz = size("asz")?;
    Ok(TapeEvent::Quote(TapeQuote {
        ts,
        inst,
        bid,
        ask,
        bid_sz,
        ask_sz,
    }))
}

impl<R: BufRead> TapeReader<R> {
    /// The same reader over a boxed source (a caller holding tapes from memory and from
    /// files in one type, as the Session does), where it stands.
    pub fn boxed(self) -> TapeReader<Box<dyn BufRead>>
    where
        R: 'static,
    {
        TapeReader {
            r: Box::new(self.r),
            header: self.header,
            session: self.session,
            session_no: self.session_no,
            line: self.line,
            last_ts: self.last_ts,
            buf: self.buf,
            done: self.done,
            fast: self.fast,
            keys: self.keys,
        }
    }

    /// Read and validate the header line.
    pub fn new(mut r: R) -> Result<Self, TapeError> {
        let mut buf = Vec::with_capacity(256);
        let header = match read_line_capped(&mut r, &mut buf) {
            Err(e) => return Err(TapeError::new(1, TapeErrorKind::Io, e.to_string())),
            Ok(RawLine::Eof) => {
                return Err(TapeError::new(
                    1,
                    TapeErrorKind::Empty,
                    "empty tape: expected a header line",
                ));
            }
            Ok(RawLine::TooLong) => {
                return Err(TapeError::new(
                    1,
                    TapeErrorKind::TooLong,
                    format!("line longer than {MAX_LINE_BYTES} bytes"),
                ));
            }
            // A byte-order mark is refused by name (it read as `invalid-json ... column 1`).
            Ok(RawLine::Line) if buf.starts_with(UTF8_BOM) => {
                return Err(TapeError::new(
                    1,
                    TapeErrorKind::BadHeader,
                    "the tape starts with a UTF-8 byte-order mark (U+FEFF): save it without one",
                ));
            }
            Ok(RawLine::Line) => {
                let (m, text) = parse_object(1, &buf)?;
                parse_header(1, text, &m)?
            }
        };
        Ok(TapeReader {
            r,
            keys: sym_keys(&header),
            session: header.clone(),
            session_no: 1,
            header,
            line: 1,
            last_ts: None,
            buf,
            done: false,
            fast: true,
        })
    }

    /// The same reader without the fast paths ([`fast_tick`], [`fast_line`]): every line goes
    /// through the general (serde) decoder. The reference the fast paths are tested against.
    #[doc(hidden)]
    pub fn reference(mut self) -> Self {
        self.fast = false;
        self
    }

    /// The tape's header.
    pub fn header(&self) -> &TapeHeader {
        &self.header
    }

    /// After the last event: is the tape whole? A tape has no closing record, so a file cut
    /// at a line boundary (a truncated download) reads as a valid, shorter tape. What tells
    /// is time: a session's tape runs to its header's `close`, and one whose last event is
    /// more than [`MAX_END_GAP_MS`] before it is refused with `ends-early` (the line named
    /// is the one after the last). A tape that really is shorter says so in its header
    /// (`close` where it ends, as the generator's short sessions do).
    pub fn check_complete(&self) -> Result<(), TapeError> {
        self.check_session_complete(self.line + 1)
    }

    /// The header of the session being read: the file header until the first `session`
    /// event, then [`TapeHeader::for_session`] of the latest.
    pub fn session_header(&self) -> &TapeHeader {
        &self.session
    }

    /// The number of the session being read, from 1.
    pub fn session_no(&self) -> u32 {
        self.session_no
    }

    /// [`check_complete`](Self::check_complete) of the current session, naming `line`.
    fn check_session_complete(&self, line: u64) -> Result<(), TapeError> {
        let close = self.session.close;
        let last = self.last_ts;
        let gap = last.map_or(close.ms().saturating_sub(self.session.open.ms()), |t| {
            close.ms().saturating_sub(t.ms())
        });
        if gap <= MAX_END_GAP_MS {
            return Ok(());
        }
        let at = match last {
            Some(t) => format!("the last event is at {t}"),
            None => "the tape has no event".to_string(),
        };
        let which = if self.session_no > 1 || self.header.v >= TAPE_VERSION_2 {
            format!("session {} ({}): ", self.session_no, self.session.date)
        } else {
            String::new()
        };
        Err(TapeError::new(
            line,
            TapeErrorKind::EndsEarly,
            format!(
                "{which}{at}, {}s before the session close {close} in the header: the tape looks cut short (a truncated download?); fetch it whole, or give a tape whose header `close` is where it ends",
                gap / 1000
            ),
        ))
    }

    /// The time of the last event read, if any.
    pub fn last_ts(&self) -> Option<Ts> {
        self.last_ts
    }

    /// The number of the last line read (1 after the header).
    pub fn line(&self) -> u64 {
        self.line
    }

    /// The general path of one line (the fast path in [`Iterator::next`] did not take it):
    /// the line copied out of the reader, then a canonical tick or `iv` line decoded by
    /// [`fast_line`], anything else parsed as JSON and checked field by field.
    #[inline(never)]
    fn next_event(&mut self) -> Option<Res<TapeEvent>> {
        let line = self.line + 1;
        match read_line_capped(&mut self.r, &mut self.buf) {
            Err(e) => return Some(Err(TapeError::new(line, TapeErrorKind::Io, e.to_string()))),
            Ok(RawLine::Eof) => return None,
            Ok(RawLine::TooLong) => {
                self.line = line;
                return Some(Err(TapeError::new(
                    line,
                    TapeErrorKind::TooLong,
                    format!("line longer than {MAX_LINE_BYTES} bytes"),
                )));
            }
            Ok(RawLine::Line) => {}
        }
        self.line = line;
        if self.fast
            && let Some(ev) = fast_line(&mut self.buf, &self.keys)
        {
            return Some(self.in_order(line, ev));
        }
        let ev = parse_object(line, &self.buf)
            .and_then(|(m, text)| parse_event(line, text, &m, &self.header));
        Some(ev.and_then(|ev| self.in_order(line, ev)))
    }

    /// Refuse an event earlier than the previous one; otherwise advance the clock. A
    /// `session` event ends the current session (which must be whole, as at the end of the
    /// tape) and starts the clock again.
    fn in_order(&mut self, line: u64, ev: TapeEvent) -> Res<TapeEvent> {
        if let TapeEvent::Session(s) = &ev {
            self.check_session_complete(line)?;
            if s.date <= self.session.date {
                return Err(TapeError::new(
                    line,
                    TapeErrorKind::OutOfOrder,
                    format!(
                        "session date {} is not after the previous session's {}",
                        s.date, self.session.date
                    ),
                ));
            }
            self.session = self.header.for_session(s);
            self.session_no += 1;
            self.last_ts = None;
            return Ok(ev);
        }
        let ts = ev.ts();
        if let Some(prev) = self.last_ts
            && ts < prev
        {
            return Err(TapeError::new(
                line,
                TapeErrorKind::OutOfOrder,
                format!("ts {ts} is earlier than the previous event's {prev}"),
            ));
        }
        self.last_ts = Some(ts);
        Ok(ev)
    }
}

impl<R: BufRead> Iterator for TapeReader<R> {
    type Item = Result<TapeEvent, TapeError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.fast {
            // Fast path: a canonical tick line wholly in the reader's buffer, in order, is
            // decoded in place, without copying or allocating. Anything else (another event
            // type, other key order or spacing, an unusual number, a line split across buffer
            // refills, a tick out of order, a refusal) goes through the general path, which
            // alone decides how a line is refused (it hands a canonical tick or `iv` line it
            // read whole to `fast_line`, which accepts only what serde would, with its value).
            match self.r.fill_buf() {
                Ok(avail) => {
                    if let Some((tick, used)) = fast_tick(avail, &self.keys)
                        && self.last_ts.is_none_or(|prev| tick.ts >= prev)
                    {
                        self.r.consume(used);
                        self.line += 1;
                        self.last_ts = Some(tick.ts);
                        return Some(Ok(TapeEvent::Tick(tick)));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Some(Err(self.read_failed(e))),
            }
        }
        let out = self.next_event();
        if !matches!(out, Some(Ok(_))) {
            self.done = true;
        }
        out
    }
}

impl<R> TapeReader<R> {
    /// The reader failed before the next line: the last item.
    #[cold]
    #[inline(never)]
    fn read_failed(&mut self, e: io::Error) -> TapeError {
        self.done = true;
        TapeError::new(self.line + 1, TapeErrorKind::Io, e.to_string())
    }
}

/// The tape file's read buffer: 128 KiB, 26 reads for a bundled tape's 3.3 MB where the
/// default 8 KiB made about 400 (reading was about 4% of a busy run's wall time, most of it
/// the copy, which stays; the calls' own cost goes), and few tick lines cut at its end.
const TAPE_READ_BUF: usize = 128 * 1024;

/// Open a tape file for streaming.
pub fn open_tape(path: &Path) -> Result<TapeReader<io::BufReader<std::fs::File>>, TapeError> {
    let f = std::fs::File::open(path).map_err(|e| {
        TapeError::new(
            0,
            TapeErrorKind::Io,
            format!("cannot open {}: {e}", path.display()),
        )
    })?;
    TapeReader::new(io::BufReader::with_capacity(TAPE_READ_BUF, f))
}

/// Read a whole (small) tape into memory: the header and every event, or the first refusal.
pub fn read_tape_file(path: &Path) -> Result<(TapeHeader, Vec<TapeEvent>), TapeError> {
    let reader = open_tape(path)?;
    let header = reader.header().clone();
    let events = reader.collect::<Result<Vec<_>, _>>()?;
    Ok((header, events))
}

/// Check a whole tape as `kestrel run` and `kestrel tape info` do: every line read, then
/// [`TapeReader::check_complete`] after the last one (a tape cut short is `ends-early`). The
/// first refusal is returned, naming its line; `Ok` is the header. The desk and `kestrel
/// agent` check a tape this way before they open it, so a tape `run` refuses only at its
/// end is refused before anything is played, settled or asked of an author.
pub fn check_tape<R: io::BufRead>(r: R) -> Result<TapeHeader, TapeError> {
    let mut reader = TapeReader::new(r)?;
    for ev in reader.by_ref() {
        ev?;
    }
    reader.check_complete()?;
    Ok(reader.header().clone())
}

/// [`read_tape_bytes`] checked whole as [`check_tape`] checks it (a tape cut short is
/// `ends-early`), in one pass: for a reader that keeps the events of a tape it must refuse
/// when `kestrel run` would (`kestrel grade`).
pub fn read_whole_tape_bytes(bytes: &[u8]) -> Result<(TapeHeader, Vec<TapeEvent>), TapeError> {
    let mut reader = TapeReader::new(bytes)?;
    let header = reader.header().clone();
    let events = reader.by_ref().collect::<Result<Vec<_>, _>>()?;
    reader.check_complete()?;
    Ok((header, events))
}

/// The sessions of a (small, read) tape, each as a one-session tape: its header
/// ([`TapeHeader::for_session`]) and its events. A v1 tape is one session.
pub fn split_sessions(
    header: &TapeHeader,
    events: Vec<TapeEvent>,
) -> Vec<(TapeHeader, Vec<TapeEvent>)> {
    let mut out = vec![(header.clone(), Vec::new())];
    for ev in events {
        match ev {
            TapeEvent::Session(s) => out.push((header.for_session(&s), Vec::new())),
            ev => {
                if let Some(last) = out.last_mut() {
                    last.1.push(ev);
                }
            }
        }
    }
    out
}

/// Read a whole tape from bytes (tests and small tapes).
pub fn read_tape_bytes(bytes: &[u8]) -> Result<(TapeHeader, Vec<TapeEvent>), TapeError> {
    let reader = TapeReader::new(bytes)?;
    let header = reader.header().clone();
    let events = reader.collect::<Result<Vec<_>, _>>()?;
    Ok((header, events))
}

// ---------------------------------------------------------------------------------------
// Canonical writer

fn json_str(s: &str) -> String {
    // Serialising a &str cannot fail.
    serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\""))
}

/// Print an `f64` parameter (iv, skew, rate) deterministically: Rust's shortest round-trip
/// form, which is platform-independent; integral values keep a `.0`.
fn json_f64(x: f64) -> String {
    if x.is_finite() {
        format!("{x:?}")
    } else {
        String::from("null")
    }
}

/// The canonical header line (no newline). Key order is fixed:
/// `type v name date tz open close symbols vol rate source tags`.
pub fn header_line(h: &TapeHeader) -> String {
    let mut s = String::with_capacity(512);
    s.push_str("{\"type\":\"header\",\"v\":");
    s.push_str(&h.v.to_string());
    s.push_str(",\"name\":");
    s.push_str(&json_str(&h.name));
    s.push_str(&format!(
        ",\"date\":\"{}\",\"tz\":{},\"open\":\"{}\",\"close\":\"{}\",\"symbols\":{{",
        h.date,
        json_str(&h.tz),
        h.open.hhmm(),
        h.close.hhmm()
    ));
    for (i, sp) in h.symbols.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!(
            "\"{}\":{{\"prior_close\":{}",
            sp.sym, sp.prior_close
        ));
        if let Some(step) = sp.strike_step {
            s.push_str(&format!(",\"strike_step\":{step}"));
        }
        s.push('}');
    }
    s.push_str("},\"vol\":{");
    for (i, v) in h.vol.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!(
            "\"{}\":{{\"atm_iv\":{},\"skew\":{}}}",
            v.sym,
            json_f64(v.atm_iv),
            json_f64(v.skew)
        ));
    }
    s.push_str(&format!(
        "}},\"rate\":{},\"source\":{},\"tags\":{{",
        json_f64(h.rate),
        json_str(&h.source)
    ));
    for (i, (k, v)) in h.tags.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&json_str(k));
        s.push(':');
        s.push_str(&json_str(v));
    }
    s.push_str("}}");
    s
}

/// Write one event as a canonical line (with its newline). Key orders are fixed:
/// tick `type ts sym px sz`; iv `type ts sym atm_iv [skew]`; headline `type ts text`;
/// quote `type ts sym bid ask bsz asz` (an option's `sym` in compact OCC form); session
/// `type date open close prior` (prior sorted by symbol).
pub fn write_event<W: Write + ?Sized>(w: &mut W, ev: &TapeEvent) -> io::Result<()> {
    match ev {
        TapeEvent::Tick(t) => writeln!(
            w,
            "{{\"type\":\"tick\",\"ts\":\"{}\",\"sym\":\"{}\",\"px\":{},\"sz\":{}}}",
            t.ts, t.sym, t.px, t.sz
        ),
        TapeEvent::Iv(i) => {
            write!(
                w,
                "{{\"type\":\"iv\",\"ts\":\"{}\",\"sym\":\"{}\",\"atm_iv\":{}",
                i.ts,
                i.sym,
                json_f64(i.atm_iv)
            )?;
            if let Some(sk) = i.skew {
                write!(w, ",\"skew\":{}", json_f64(sk))?;
            }
            writeln!(w, "}}")
        }
        TapeEvent::Headline(h) => writeln!(
            w,
            "{{\"type\":\"headline\",\"ts\":\"{}\",\"text\":{}}}",
            h.ts,
            json_str(&h.text)
        ),
        TapeEvent::Quote(q) => {
            let sym = match &q.inst {
                QuoteInst::Sym(s) => s.as_str().to_string(),
                QuoteInst::Option(k) => occ_symbol(k).ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("option {k:?} has no OCC symbol"),
                    )
                })?,
            };
            writeln!(
                w,
                "{{\"type\":\"quote\",\"ts\":\"{}\",\"sym\":\"{}\",\"bid\":{},\"ask\":{},\"bsz\":{},\"asz\":{}}}",
                q.ts, sym, q.bid, q.ask, q.bid_sz, q.ask_sz
            )
        }
        TapeEvent::Session(s) => {
            write!(
                w,
                "{{\"type\":\"session\",\"date\":\"{}\",\"open\":\"{}\",\"close\":\"{}\",\"prior\":{{",
                s.date,
                s.open.hhmm(),
                s.close.hhmm()
            )?;
            for (i, (sym, px)) in s.prior.iter().enumerate() {
                if i > 0 {
                    write!(w, ",")?;
                }
                write!(w, "\"{sym}\":{px}")?;
            }
            writeln!(w, "}}}}")
        }
    }
}

/// Write a whole tape canonically: the header line, then each event line.
pub fn write_tape<W: Write, I: IntoIterator<Item = TapeEvent>>(
    w: &mut W,
    header: &TapeHeader,
    events: I,
) -> io::Result<()> {
    writeln!(w, "{}", header_line(header))?;
    for ev in events {
        write_event(w, &ev)?;
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HDR: &str = r#"{"type":"header","v":1,"name":"tiny","date":"2025-04-09","tz":"America/New_York","open":"09:30","close":"16:00","symbols":{"SPX":{"prior_close":4983.00},"SPY":{"prior_close":498.30,"strike_step":1.00}},"vol":{"SPY":{"atm_iv":0.32,"skew":-0.8}},"rate":0.043,"source":"synthetic seed=7 regime=shock","tags":{"date":"2025-04-09","regime":"shock","source":"synthetic"}}"#;

    fn tape(lines: &[&str]) -> String {
        let mut s = String::from(HDR);
        s.push('\n');
        for l in lines {
            s.push_str(l);
            s.push('\n');
        }
        s
    }

    fn first_err(text: &str) -> TapeError {
        match read_tape_bytes(text.as_bytes()) {
            Err(e) => e,
            Ok(_) => panic!("expected a refusal"),
        }
    }

    #[test]
    fn good_tape_roundtrips_byte_identical() {
        let text = tape(&[
            r#"{"type":"tick","ts":"09:30:00.000","sym":"SPX","px":5002.10,"sz":0}"#,
            r#"{"type":"tick","ts":"09:30:00.000","sym":"SPY","px":500.12,"sz":1200}"#,
            r#"{"type":"iv","ts":"11:00:00.000","sym":"SPY","atm_iv":0.35}"#,
            r#"{"type":"iv","ts":"11:00:00.000","sym":"SPY","atm_iv":0.35,"skew":-0.9}"#,
            r#"{"type":"headline","ts":"13:19:00.000","text":"Fed \"surprise\""}"#,
        ]);
        let (h, evs) = read_tape_bytes(text.as_bytes()).unwrap();
        assert_eq!(evs.len(), 5);
        assert_eq!(h.symbol("SPY").unwrap().strike_step, Some(Px(10_000)));
        let mut out = Vec::new();
        write_tape(&mut out, &h, evs).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), text);
    }

    /// A size past `u64` was "1e20 is not a non-negative integer": it is one, too large.
    #[test]
    fn a_size_too_large_says_so_and_a_fraction_says_what_it_is() {
        let cases = [
            (
                r#"{"type":"tick","ts":"09:30:00.000","sym":"SPY","px":500.12,"sz":100000000000000000000}"#,
                "sz`: 1e+20 is larger than the largest size, 18446744073709551615",
            ),
            (
                r#"{"type":"tick","ts":"09:30:00.000","sym":"SPY","px":500.12,"sz":1.5}"#,
                "sz`: 1.5 is not a non-negative integer",
            ),
            (
                r#"{"type":"tick","ts":"09:30:00.000","sym":"SPY","px":500.12,"sz":-3}"#,
                "sz`: -3 is not a non-negative integer",
            ),
        ];
        for (line, want) in cases {
            let e = first_err(&tape(&[line]));
            assert_eq!(e.kind, TapeErrorKind::BadField, "{line}: {e}");
            assert!(e.to_string().contains(want), "{line}: {e}");
        }
    }

    /// A price past the reader's limit was "has more than 4 decimal places or is too large",
    /// shown as the float serde_json read (`1000000000000.0` for `999999999999.99999`): it
    /// says which, with the limit the importer refuses past too, and quotes the file's text.
    #[test]
    fn a_price_too_large_says_so_with_the_limit_and_the_text_of_the_file() {
        let limit = "is too large: a tape price is at most 100000000000 (10^11)";
        let tick = |px: &str| {
            format!(r#"{{"type":"tick","ts":"09:30:00.000","sym":"SPY","px":{px},"sz":1}}"#)
        };
        for (px, want) in [
            (
                "123456789012.3456",
                format!("`px`: 123456789012.3456 {limit}"),
            ),
            (
                "999999999999.99999",
                format!("`px`: 999999999999.99999 {limit}"),
            ),
            ("1e12", format!("`px`: 1e12 {limit}")),
            (
                "100000000000.0001",
                format!("`px`: 100000000000.0001 {limit}"),
            ),
            (
                "1.23456",
                "`px`: 1.23456 has more than 4 decimal places".to_string(),
            ),
            ("-1.50", "`px`: -1.50 is not positive".to_string()),
        ] {
            let e = first_err(&tape(&[&tick(px)]));
            assert_eq!((e.line, e.kind), (2, TapeErrorKind::BadPrice), "{px}: {e}");
            assert!(e.to_string().ends_with(&want), "{px}: {e}");
        }
        // The limit itself is a price; so is every 4-decimal price under it.
        for px in ["100000000000", "100000000000.0000", "99999999999.9999"] {
            let (_, evs) = read_tape_bytes(tape(&[&tick(px)]).as_bytes()).expect(px);
            assert_eq!(evs.len(), 1);
        }
        // In the header, among several symbols: the text of the one refused.
        let hdr = HDR.replace("498.30", "123456789012.3456");
        let e = first_err(&hdr);
        assert_eq!((e.line, e.kind), (1, TapeErrorKind::BadPrice), "{e}");
        assert!(
            e.to_string()
                .ends_with(&format!("`prior_close`: 123456789012.3456 {limit}")),
            "{e}"
        );
    }

    #[test]
    fn refusals_name_line_and_reason() {
        let ok = r#"{"type":"tick","ts":"09:30:02.000","sym":"SPX","px":5002.10,"sz":0}"#;
        let cases: &[(&str, TapeErrorKind, &str)] = &[
            (
                r#"{"type":"tick","ts":"09:30:03.000","sym":"SPX","px":50"#,
                TapeErrorKind::Truncated,
                "truncated",
            ),
            (
                r#"{"type":"tick","ts":"09:30:01.000","sym":"SPX","px":5000.00,"sz":0}"#,
                TapeErrorKind::OutOfOrder,
                "out-of-order",
            ),
            (
                r#"{"type":"tick","ts":"09:30:03.000","sym":"QQQ","px":400.00,"sz":0}"#,
                TapeErrorKind::UnknownSymbol,
                "unknown-symbol",
            ),
            (
                r#"{"type":"tick","ts":"09:30:03.000","sym":"SPX","px":NaN,"sz":0}"#,
                TapeErrorKind::BadPrice,
                "bad-price",
            ),
            (
                r#"{"type":"tick","ts":"09:30:03.000","sym":"SPX","px":"NaN","sz":0}"#,
                TapeErrorKind::BadPrice,
                "non-finite",
            ),
            (
                r#"{"type":"tick","ts":"09:30:03.000","sym":"SPX","px":-1.5,"sz":0}"#,
                TapeErrorKind::BadPrice,
                "not positive",
            ),
            (
                r#"{"type":"tick","ts":"09:30:03.000","sym":"SPX","px":0,"sz":0}"#,
                TapeErrorKind::BadPrice,
                "not positive",
            ),
            (
                r#"{"type":"tick","ts":"09:30:03.000","sym":"SPX","px":1.23456,"sz":0}"#,
                TapeErrorKind::BadPrice,
                "4 decimal",
            ),
            (
                r#"{"type":"tick","ts":"09:30:03.000","sym":"SPX","sz":0}"#,
                TapeErrorKind::MissingField,
                "`px`",
            ),
            (
                r#"{"type":"quote","ts":"09:30:03.000"}"#,
                TapeErrorKind::UnknownType,
                "quote",
            ),
            (
                r#"{"type":"tick","ts":"9:30","sym":"SPX","px":1.0,"sz":0}"#,
                TapeErrorKind::BadField,
                "HH:MM:SS.mmm",
            ),
            (
                r#"{"type":"tick","ts":"09:30:03.000","sym":"SPX","px":1.0,"sz":-1}"#,
                TapeErrorKind::BadField,
                "sz",
            ),
            (r#"[1,2]"#, TapeErrorKind::Json, "object"),
            (r#"{"type":"tick",}"#, TapeErrorKind::Json, "invalid"),
            ("", TapeErrorKind::Blank, "blank"),
            (HDR, TapeErrorKind::BadHeader, "first line"),
        ];
        for (bad, kind, needle) in cases {
            let e = first_err(&tape(&[ok, bad, ok]));
            assert_eq!(e.line, 3, "{bad}: {e}");
            assert_eq!(e.kind, *kind, "{bad}: {e}");
            let shown = e.to_string();
            assert!(
                shown.starts_with("error code=TAPE line=3 message="),
                "{shown}"
            );
            assert!(shown.contains(needle), "{bad}: {shown}");
        }
    }

    /// A key twice in an object was read as its last value (`"px":500.00,"px":1.0` put SPY at
    /// 1.00): refused as `bad-field` naming the key, on an event line, in the header and in an
    /// object inside it; the message never prints a key's control character raw.
    #[test]
    fn a_repeated_key_is_refused_naming_it() {
        let ok = r#"{"type":"tick","ts":"09:30:02.000","sym":"SPX","px":5002.10,"sz":0}"#;
        let cases = [
            (
                r#"{"type":"tick","ts":"09:30:03.000","sym":"SPY","px":500.00,"px":1.0,"sz":1}"#,
                "field `px` appears twice on the line",
            ),
            (
                r#"{"type":"tick","type":"tick","ts":"09:30:03.000","sym":"SPY","px":500.00,"sz":1}"#,
                "field `type` appears twice",
            ),
            (
                r#"{"type":"headline","ts":"09:30:03.000","text":"a","text":"b"}"#,
                "field `text` appears twice",
            ),
            (
                r#"{"type":"iv","ts":"09:30:03.000","sym":"SPY","atm_iv":0.35,"atm_iv":0.35}"#,
                "field `atm_iv` appears twice",
            ),
            (
                r#"{"type":"headline","ts":"09:30:03.000","text":"a","x":{"k":1,"k":2}}"#,
                "field `x` holds key `k` twice",
            ),
            (
                r#"{"type":"headline","ts":"09:30:03.000","text":"a","\u001b[31m":1,"\u001b[31m":2}"#,
                "field `\\u{1b}[31m` appears twice",
            ),
        ];
        for (bad, needle) in cases {
            let e = first_err(&tape(&[ok, bad, ok]));
            assert_eq!((e.line, e.kind), (3, TapeErrorKind::BadField), "{bad}: {e}");
            let shown = e.to_string();
            assert!(
                shown.starts_with("error code=TAPE line=3 message=bad-field: "),
                "{shown}"
            );
            assert!(shown.contains(needle), "{bad}: {shown}");
            assert!(!shown.contains('\u{1b}'), "{shown}");
        }
        // The header: a field twice, and a symbol twice inside `symbols`.
        for (hdr, needle) in [
            (
                HDR.replace("\"v\":1,", "\"v\":1,\"v\":2,"),
                "field `v` appears twice",
            ),
            (
                HDR.replace(
                    "\"SPX\":{\"prior_close\":4983.00},",
                    "\"SPY\":{\"prior_close\":1.00},\"SPX\":{\"prior_close\":4983.00},",
                ),
                "field `symbols` holds key `SPY` twice",
            ),
            (
                HDR.replace("\"atm_iv\":0.32,", "\"atm_iv\":0.32,\"atm_iv\":9.0,"),
                "field `vol` holds key `atm_iv` twice",
            ),
        ] {
            let e = first_err(&tape_with(&hdr, &[]));
            assert_eq!((e.line, e.kind), (1, TapeErrorKind::BadField), "{hdr}: {e}");
            assert!(e.to_string().contains(needle), "{e}");
        }
        // A key written with an escape is the same key.
        let e = first_err(&tape(&[
            r#"{"type":"headline","ts":"09:30:03.000","text":"a","p\u0078":1,"px":2}"#,
        ]));
        assert_eq!((e.line, e.kind), (2, TapeErrorKind::BadField), "{e}");
        assert!(e.to_string().contains("field `px` appears twice"), "{e}");
        // The same keys once each still read: in other objects, in arrays, and as text.
        for line in [
            r#"{"type":"headline","ts":"09:30:03.000","text":"a","x":{"k":1,"j":[{"k":2},{"k":3}]}}"#,
            r#"{"type":"headline","ts":"09:30:03.000","text":"text","x":["text","type"]}"#,
            r#"{"type":"headline","ts":"09:30:03.000","text":"{\"text\":1,\"text\":2}, \\"}"#,
        ] {
            let text = tape(&[line]);
            assert_eq!(
                read_tape_bytes(text.as_bytes()).unwrap().1.len(),
                1,
                "{line}"
            );
        }
    }

    fn tape_with(header: &str, lines: &[&str]) -> String {
        let mut s = format!("{header}\n");
        for l in lines {
            s.push_str(l);
            s.push('\n');
        }
        s
    }

    #[test]
    fn truncated_last_line_without_newline() {
        let mut text = tape(&[]);
        text.push_str(r#"{"type":"tick","ts":"09:30:00.000","sym":"SP"#);
        let e = first_err(&text);
        assert_eq!((e.line, e.kind), (2, TapeErrorKind::Truncated));
    }

    #[test]
    fn bad_headers() {
        let e = first_err("");
        assert_eq!((e.line, e.kind), (1, TapeErrorKind::Empty));
        let e = first_err(&HDR.replace("\"v\":1", "\"v\":3"));
        assert_eq!((e.line, e.kind), (1, TapeErrorKind::BadVersion));
        assert!(e.to_string().contains("bad-version"));
        let e = first_err(&HDR.replace("\"name\":\"tiny\",", ""));
        assert_eq!((e.line, e.kind), (1, TapeErrorKind::MissingField));
        let e = first_err(r#"{"type":"tick","ts":"09:30:00.000","sym":"SPX","px":1.0,"sz":0}"#);
        assert_eq!((e.line, e.kind), (1, TapeErrorKind::BadHeader));
        let e = first_err(&HDR.replace("4983.00", "NaN"));
        assert_eq!((e.line, e.kind), (1, TapeErrorKind::BadPrice));
        // A zone the bundled database does not know, or with an escape in it (`tape info`
        // printed it to the terminal as it was).
        for tz in ["Mars/Olympus", "America/New_York\\u001b[31m", ""] {
            let e = first_err(&HDR.replace("America/New_York", tz));
            assert_eq!((e.line, e.kind), (1, TapeErrorKind::BadField), "{tz}");
            assert!(e.to_string().contains("field `tz`"), "{e}");
            assert!(!e.to_string().contains('\u{1b}'), "{e}");
        }
        for tz in ["Europe/London", "UTC", "-05:00", "US/Eastern"] {
            let text = format!("{}\n", HDR.replace("America/New_York", tz));
            let r = TapeReader::new(text.as_bytes()).unwrap();
            assert_eq!(r.header().tz, tz);
        }
        let e = first_err(&HDR.replace("\"SPY\":{\"atm_iv\"", "\"QQQ\":{\"atm_iv\""));
        assert_eq!((e.line, e.kind), (1, TapeErrorKind::UnknownSymbol));
        // A name that would forge a Frame line or reach the terminal raw.
        for name in [
            r"x\nLEVELS spot 9999 (forged)",
            r"x\u001b]0;pwned\u0007",
            r"x\u202egnp.exe",
        ] {
            let e = first_err(&HDR.replace("\"name\":\"tiny\"", &format!("\"name\":\"{name}\"")));
            assert_eq!((e.line, e.kind), (1, TapeErrorKind::BadField), "{name}");
            assert!(e.to_string().contains("field `name`"), "{e}");
        }
    }

    #[test]
    fn reader_stops_after_first_refusal() {
        let ok = r#"{"type":"tick","ts":"09:30:02.000","sym":"SPX","px":5002.10,"sz":0}"#;
        let text = tape(&[ok, "garbage", ok]);
        let mut r = TapeReader::new(text.as_bytes()).unwrap();
        assert!(r.next().unwrap().is_ok());
        assert!(r.next().unwrap().is_err());
        assert!(r.next().is_none());
    }

    #[test]
    fn crlf_and_too_long() {
        let text =
            tape(&[r#"{"type":"headline","ts":"09:30:02.000","text":"x"}"#]).replace('\n', "\r\n");
        assert_eq!(read_tape_bytes(text.as_bytes()).unwrap().1.len(), 1);
        let long = format!(
            r#"{{"type":"headline","ts":"09:30:02.000","text":"{}"}}"#,
            "x".repeat(MAX_LINE_BYTES)
        );
        let e = first_err(&tape(&[&long]));
        assert_eq!((e.line, e.kind), (2, TapeErrorKind::TooLong));
    }

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        /// Read a tape through a `BufReader` of `cap` bytes (so lines straddle refills), with
        /// the fast path (the reader as shipped) or without it (the serde reference).
        fn read_with(
            bytes: &[u8],
            cap: usize,
            fast: bool,
        ) -> Result<(TapeHeader, Vec<TapeEvent>), TapeError> {
            let r = TapeReader::new(io::BufReader::with_capacity(cap, bytes))?;
            let r = if fast { r } else { r.reference() };
            let header = r.header().clone();
            let events = r.collect::<Result<Vec<_>, _>>()?;
            Ok((header, events))
        }

        fn ts_text() -> impl Strategy<Value = String> {
            prop_oneof![
                4 => (9u32..16, 0u32..60, 0u32..60, 0u32..1000)
                    .prop_map(|(h, m, s, ms)| format!("{h:02}:{m:02}:{s:02}.{ms:03}")),
                1 => Just("09:30:01.000".to_string()),
                1 => prop::sample::select(vec![
                    "9:30", "24:00:00.000", "09:60:00.000", "09:30:00.0000", "09:30:00,000",
                    "09:30:00.00", "\\u0030", "", "09:30:0a.000", "23:59:59.999",
                ]).prop_map(str::to_string),
            ]
        }

        fn sym_text() -> impl Strategy<Value = String> {
            prop_oneof![
                4 => prop::sample::select(vec!["SPX", "SPY"]).prop_map(str::to_string),
                1 => prop::sample::select(vec![
                    "QQQ", "spy", "SP", "SPYY", "SP\\u0059", "", "SPY ", "ABCDEFGHIJKLMNOPQ",
                ]).prop_map(str::to_string),
            ]
        }

        fn number_text() -> impl Strategy<Value = String> {
            prop_oneof![
                // Decimals: integer part with or without leading zeros, 0 to 6 decimals.
                6 => ("[0-9]{1,13}", prop::option::of("[0-9]{0,6}")).prop_map(|(i, f)| match f {
                    Some(f) => format!("{i}.{f}"),
                    None => i,
                }),
                1 => "-?[0-9]{1,4}(\\.[0-9]{1,3})?([eE][+-]?[0-9]{1,2})?",
                1 => prop::sample::select(vec![
                    "NaN", "Infinity", "-Infinity", "\"1.0\"", "null", "true", "1e400",
                    "18446744073709551615", "18446744073709551616", "99999999999999999999",
                    "0", "0.0", "0.0001", "00.5", ".5", "5.", "1.00000", "922337203685.4775",
                ]).prop_map(str::to_string),
            ]
        }

        prop_compose! {
            /// A tick line: canonical most of the time, otherwise with one thing changed.
            fn tick_line()(
                ts in ts_text(),
                sym in sym_text(),
                px in number_text(),
                sz in prop_oneof![4 => (0u64..100_000).prop_map(|n| n.to_string()), 1 => number_text()],
                shape in 0u8..12,
            ) -> String {
                match shape {
                    0 => format!(r#"{{"type":"tick", "ts":"{ts}","sym":"{sym}","px":{px},"sz":{sz}}}"#),
                    1 => format!(r#"{{"ts":"{ts}","type":"tick","sym":"{sym}","px":{px},"sz":{sz}}}"#),
                    2 => format!(r#"{{"type":"tick","ts":"{ts}","sym":"{sym}","px":{px},"sz":{sz}}} "#),
                    3 => format!(r#"{{"type":"tick","ts":"{ts}","sym":"{sym}","px":{px},"sz":{sz}}}"#) + "\r",
                    4 => format!(r#"{{"type":"tick","ts":"{ts}","sym":"{sym}","px":{px}}}"#),
                    5 => format!(r#"{{"type":"tick","ts":"{ts}","sym":"{sym}","px":{px},"sz":{sz},"sz":1}}"#),
                    6 => format!(r#"{{"type":"tick","ts":"{ts}","sym":"{sym}","px":{px},"sz":{sz}}}x"#),
                    _ => format!(r#"{{"type":"tick","ts":"{ts}","sym":"{sym}","px":{px},"sz":{sz}}}"#),
                }
            }
        }

        prop_compose! {
            /// An `iv` line: canonical most of the time, otherwise with one thing changed.
            fn iv_line()(
                ts in ts_text(),
                sym in sym_text(),
                iv in prop_oneof![
                    4 => (1u32..=120_000).prop_map(|n| format!("{:?}", f64::from(n) / 1e4)),
                    1 => (0.0001f64..12.0).prop_map(|x| format!("{x:?}")),
                    3 => number_text(),
                ],
                shape in 0u8..10,
            ) -> String {
                match shape {
                    0 => format!(r#"{{"type":"iv","ts":"{ts}","sym":"{sym}","atm_iv":{iv},"skew":-0.5}}"#),
                    1 => format!(r#"{{"ts":"{ts}","type":"iv","sym":"{sym}","atm_iv":{iv}}}"#),
                    2 => format!(r#"{{"type":"iv","ts":"{ts}","sym":"{sym}","atm_iv":{iv}}} "#),
                    3 => format!(r#"{{"type":"iv","ts":"{ts}","sym":"{sym}","atm_iv":{iv},"atm_iv":0.2}}"#),
                    4 => format!(r#"{{"type":"iv","ts":"{ts}","sym":"{sym}","atm_iv":{iv}}}}}"#),
                    _ => format!(r#"{{"type":"iv","ts":"{ts}","sym":"{sym}","atm_iv":{iv}}}"#),
                }
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]
            /// The fast paths and the serde path agree: the same events from generated tick
            /// and `iv` lines (canonical or not, valid or not), and the same refusal (line,
            /// reason and message) of the malformed ones, whatever the buffer size (a small
            /// buffer cuts many tick lines in two: they are read whole by the general path's
            /// line reader and decoded by [`fast_line`]).
            #[test]
            fn fast_path_agrees_with_serde(
                lines in proptest::collection::vec(prop_oneof![3 => tick_line(), 1 => iv_line()], 1..6),
                cap in prop_oneof![Just(8192usize), 1usize..200],
                crlf in any::<bool>(),
                final_newline in any::<bool>(),
            ) {
                let nl = if crlf { "\r\n" } else { "\n" };
                let mut t = String::from(HDR);
                t.push_str(nl);
                t.push_str(r#"{"type":"tick","ts":"09:30:01.000","sym":"SPX","px":5002.10,"sz":0}"#);
                for l in &lines {
                    t.push_str(nl);
                    t.push_str(l);
                }
                if final_newline {
                    t.push_str(nl);
                }
                let fast = read_with(t.as_bytes(), cap, true);
                let slow = read_with(t.as_bytes(), cap, false);
                prop_assert_eq!(&fast, &slow);
                prop_assert_eq!(fast, read_tape_bytes(t.as_bytes()));
            }

            /// Every tick the canonical writer emits takes the fast path, with its value; read
            /// whole by the general path's line reader (a tick the reader's buffer cut in two),
            /// it takes [`fast_line`], as does every canonical `iv` line without a skew.
            #[test]
            fn canonical_lines_take_the_fast_paths(
                ms in 0u32..86_400_000,
                spy in any::<bool>(),
                raw in 1i64..=1_000_000_000_000_000,
                sz in any::<u64>(),
                crlf in any::<bool>(),
                iv_raw in 1u64..=100_000,
            ) {
                let h = read_tape_bytes(format!("{HDR}\n").as_bytes()).unwrap().0;
                let keys = sym_keys(&h);
                let sym = Sym::new(if spy { "SPY" } else { "SPX" }).unwrap();
                let tick = Tick { ts: Ts(ms), sym, px: Px(raw), sz };
                let mut line = Vec::new();
                write_event(&mut line, &TapeEvent::Tick(tick)).unwrap();
                if crlf {
                    line.insert(line.len() - 1, b'\r');
                }
                prop_assert_eq!(fast_tick(&line, &keys), Some((tick, line.len())));
                // The same line cut anywhere before its end is left to the general path.
                for cut in [1, line.len() / 2, line.len() - 1] {
                    prop_assert_eq!(fast_tick(&line[..cut], &keys), None);
                }
                // Four decimals at most, as the bundled tapes write them.
                let atm_iv = iv_raw as f64 / 1e4;
                let iv = TapeEvent::Iv(IvChange { ts: Ts(ms), sym, atm_iv, skew: None });
                for ev in [TapeEvent::Tick(tick), iv] {
                    let mut line = Vec::new();
                    write_event(&mut line, &ev).unwrap();
                    prop_assert_eq!(line.pop(), Some(b'\n'));
                    prop_assert_eq!(fast_line(&mut line, &keys), Some(ev));
                }
            }
        }

        #[test]
        fn fast_decimal_reads_only_plain_decimals_as_serde_does() {
            for t in [
                "0.1413",
                "1.0",
                "10.0",
                "0.0001",
                "123456789.012345",
                "9.99999999999999",
            ] {
                let want: f64 = serde_json::from_str(t).unwrap();
                assert_eq!(
                    fast_decimal(t.as_bytes()).map(f64::to_bits),
                    Some(want.to_bits()),
                    "{t}"
                );
            }
            for t in [
                "",
                ".5",
                "5.",
                "1",
                "01.5",
                "00.5",
                "-0.5",
                "1e-3",
                "0.1e1",
                "1.2.3",
                "1.x",
                "1234567890.1234567",
                "0.1234567890123456",
                " 0.5",
                "0.5 ",
            ] {
                assert_eq!(fast_decimal(t.as_bytes()), None, "{t}");
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2048))]
            /// Any plain decimal of at most 15 digits is the value serde_json reads.
            #[test]
            fn fast_decimal_agrees_with_serde(int in "0|[1-9][0-9]{0,7}", frac in "[0-9]{1,7}") {
                let t = format!("{int}.{frac}");
                let want: f64 = serde_json::from_str(&t).unwrap();
                prop_assert_eq!(fast_decimal(t.as_bytes()).map(f64::to_bits), Some(want.to_bits()));
            }

            /// The word-at-a-time size reader reads what the digit-at-a-time one reads.
            #[test]
            fn fast_uint_agrees_with_scalar(
                digits in "[0-9]{0,22}",
                tail in proptest::collection::vec(
                    prop_oneof![4 => b'0'..=b'9', 2 => Just(b'}'), 1 => any::<u8>()],
                    0..10,
                ),
                max in prop_oneof![Just(20usize), 0usize..22],
            ) {
                let mut t = digits.into_bytes();
                t.extend_from_slice(&tail);
                prop_assert_eq!(fast_uint(&t, max), fast_uint_scalar(&t, max));
            }

            /// A canonical tick followed by anything (the whole window in the buffer, or
            /// not) is read with its value and its length.
            #[test]
            fn canonical_tick_then_anything(
                ms in 0u32..86_400_000,
                spy in any::<bool>(),
                raw in 1i64..=1_000_000_000_000_000,
                sz in any::<u64>(),
                crlf in any::<bool>(),
                tail in proptest::collection::vec(any::<u8>(), 0..160),
            ) {
                let h = read_tape_bytes(format!("{HDR}\n").as_bytes()).unwrap().0;
                let sym = Sym::new(if spy { "SPY" } else { "SPX" }).unwrap();
                let tick = Tick { ts: Ts(ms), sym, px: Px(raw), sz };
                let mut line = Vec::new();
                write_event(&mut line, &TapeEvent::Tick(tick)).unwrap();
                if crlf {
                    line.insert(line.len() - 1, b'\r');
                }
                let n = line.len();
                line.extend_from_slice(&tail);
                prop_assert_eq!(fast_tick(&line, &sym_keys(&h)), Some((tick, n)));
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]
            #[test]
            fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
                let _ = read_tape_bytes(&bytes);
                let mut t = HDR.as_bytes().to_vec();
                t.push(b'\n');
                t.extend_from_slice(&bytes);
                let _ = read_tape_bytes(&t);
            }

            #[test]
            fn mutated_lines_never_panic(
                idx in 0usize..120,
                byte in any::<u8>(),
                cut in 0usize..120,
            ) {
                let line = r#"{"type":"tick","ts":"09:30:02.000","sym":"SPX","px":5002.10,"sz":0}"#;
                let mut b = line.as_bytes().to_vec();
                if idx < b.len() { b[idx] = byte; }
                b.truncate(cut.max(1));
                let mut t = HDR.as_bytes().to_vec();
                t.push(b'\n');
                t.extend_from_slice(&b);
                t.push(b'\n');
                match read_tape_bytes(&t) {
                    Ok(_) => {}
                    Err(e) => prop_assert_eq!(e.line, 2),
                }
            }
        }
    }
}
