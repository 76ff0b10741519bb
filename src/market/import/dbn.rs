//! Databento DBN files (plain or zstd-compressed) through the official `dbn` crate: the
//! trades, mbp-1, tbbo, ohlcv-1s and ohlcv-1m schemas, symbols from the file's metadata.
//!
//! - trades: each record is a trade (`price`, `size`) at `ts_recv`.
//! - mbp-1: each record's top of book is a quote (when both sides are defined and it
//!   differs from the symbol's previous quote); a record whose `action` is `T` is also a
//!   trade, after the quote. tbbo: the quote before the trade, then the trade. At `ts_recv`.
//! - ohlcv-1s / ohlcv-1m: each bar becomes four trades inside the bar, from its start
//!   (`ts_event`): open at +0, then the low and the high (the high first when the bar
//!   closed below its open) at +¼ and +½ of the bar, the close at its last millisecond;
//!   sizes: the bar's volume split in four, the remainder on the close.
//!
//! Truncation: the `dbn` decoder reads a file cut inside a record, or a zstd stream cut
//! inside a frame, as a clean end. This source refuses both: it counts the bytes it was
//! given against the metadata and the records decoded, and turns the zstd decoder's
//! unexpected end into an error (docs/tapes.md §5). A file cut exactly on a record boundary
//! cannot be told from a whole one; its records stopping well before the metadata's `end`
//! (the query's) is warned of ([`Source::query_end`]).

use std::cell::Cell;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::rc::Rc;

use dbn::decode::{DbnMetadata, DecodeRecordRef};
use dbn::{HasRType, Mbp1Msg, OhlcvMsg, Schema, TradeMsg, UNDEF_PRICE, VersionUpgradePolicy};

use super::{
    BAD_PRICE, BAD_SIDE, CROSSED, Counting, ImportError, Kind, Record, Source, px_from_nanos,
    tape_inst,
};
use crate::market::{OptionKey, Px, Sym};

/// A record's instrument: the symbol (an option's root) and the option contract, if any.
type Inst = (Sym, Option<OptionKey>);

/// An unexpected end of a zstd stream as an error (not the clean end the `dbn` decoder
/// would make of it).
struct NoSilentEof<R>(R);

impl<R: Read> Read for NoSilentEof<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.0.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{CUT_ZSTD} ({e})"),
            )),
            r => r,
        }
    }
}

/// What the zstd reader says of a stream cut inside a frame ([`NoSilentEof`]).
const CUT_ZSTD: &str = "truncated zstd stream";

/// Is this the zstd reader's cut stream ([`NoSilentEof`])?
fn is_cut_zstd(e: &dbn::Error) -> bool {
    matches!(e, dbn::Error::Io { source, .. }
        if source.kind() == io::ErrorKind::InvalidData && source.to_string().contains(CUT_ZSTD))
}

/// A `dbn` error as a sentence (the crate's own text carries Rust debug forms such as
/// `Custom { kind: InvalidData, .. }` and `Utf8Error { .. }`). `record`: the record being
/// read, `None` while reading the metadata. "not a DBN file" only for a file that does not
/// start as one.
fn describe(e: &dbn::Error, record: Option<u64>) -> String {
    let inside = || match record {
        Some(n) => format!("record {n}"),
        None => "its metadata".to_string(),
    };
    match e {
        dbn::Error::Io { source, .. } => {
            if is_cut_zstd(e) {
                format!(
                    "truncated: the zstd stream is cut short inside {} (an incomplete frame); fetch the file whole",
                    inside()
                )
            } else if source.kind() == io::ErrorKind::UnexpectedEof {
                format!(
                    "truncated: the file ends inside {} (cut short?); fetch it whole",
                    inside()
                )
            } else {
                let what = source.get_ref().map_or_else(
                    || source.kind().to_string(),
                    std::string::ToString::to_string,
                );
                format!("cannot read {}: {what}", inside())
            }
        }
        dbn::Error::Utf8 { source, context } => {
            // The crate's context names the field ("reading dataset from metadata").
            let field = context
                .trim_start_matches("reading ")
                .trim_start_matches("decoding ")
                .trim_start_matches("parsing ")
                .trim_end_matches(" from metadata");
            let whole = match record {
                Some(n) => format!("record {n}"),
                None => "the metadata".to_string(),
            };
            format!(
                "{whole} is not valid UTF-8 at byte {} of its {field}",
                source.valid_up_to()
            )
        }
        dbn::Error::Decode(m) if m == "invalid DBN header" => {
            "not a DBN file (it does not start with the DBN prefix)".into()
        }
        dbn::Error::Decode(m) if record.is_none() => format!("the metadata is unreadable: {m}"),
        dbn::Error::Decode(m) => format!("{} is unreadable: {m}", inside()),
        other => format!("{} is unreadable: {other}", inside()),
    }
}

/// What [`Prefix`] has seen of the records' framing, shared with the source.
#[derive(Clone, Copy, Debug, Default)]
struct Framing {
    /// The last record whose start went by: its number (1-based; 0 for none), offset in the
    /// plain stream, length (from its header's length byte) and record type (once its
    /// second byte went by).
    last: (u64, u64, u64, Option<u8>),
    /// A record whose length no DBN record has (its number and length): the stream stopped
    /// before it.
    bad: Option<(u64, u64)>,
}

/// Captures the first 8 bytes (the DBN prefix with the metadata length), then follows the
/// records' framing as the bytes go by: each record starts with its length in 4-byte words,
/// and every DBN record is a whole number of 8-byte words of at least the 16-byte header.
/// A length that is not stops the stream just before that record (the decoder gets every
/// record before it, then an error): the `dbn` decoder would otherwise take the bytes
/// after it at a misaligned offset as records (a debug build panics on the alignment; a
/// release build reads garbage until a length runs past the end, which looked like a file
/// cut short). Walked for DBN versions 1 to 3, whose framing this is.
struct Prefix<R> {
    inner: R,
    head: Rc<Cell<[u8; 8]>>,
    seen: usize,
    /// Bytes passed on so far.
    pos: u64,
    /// The offset of the next record's start (`None` until the prefix is read, or for a
    /// version whose framing this does not follow, or after a bad length).
    next: Option<u64>,
    /// The next record's number.
    no: u64,
    framing: Rc<Cell<Framing>>,
}

/// The smallest DBN record: its header.
const HEADER_LEN: u64 = 16;

impl<R: Read> Read for Prefix<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut f = self.framing.get();
        if f.bad.is_some() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, BAD_FRAME));
        }
        let k = self.inner.read(buf)?;
        if self.seen < 8 {
            let mut h = self.head.get();
            let take = (8 - self.seen).min(k);
            h[self.seen..self.seen + take].copy_from_slice(&buf[..take]);
            self.head.set(h);
            self.seen += take;
            if self.seen == 8 && &h[..3] == DBN_PREFIX && (1..=3).contains(&h[3]) {
                self.next = Some(8 + u64::from(u32::from_le_bytes([h[4], h[5], h[6], h[7]])));
                self.no = 1;
            }
        }
        let (start, end) = (self.pos, self.pos + k as u64);
        let at = |o: u64| buf[(o - start) as usize];
        let mut give = k;
        // The last record's type, when its second byte comes in this read.
        let (no, first, len, rtype) = f.last;
        if no > 0 && rtype.is_none() && (start..end).contains(&(first + 1)) {
            f.last = (no, first, len, Some(at(first + 1)));
        }
        while let Some(n) = self.next.filter(|&n| n < end) {
            let len = u64::from(at(n)) * 4;
            if len < HEADER_LEN || len % 8 != 0 {
                f.bad = Some((self.no, len));
                self.next = None;
                give = (n - start) as usize;
                break;
            }
            let rtype = (n + 1 < end).then(|| at(n + 1));
            f.last = (self.no, n, len, rtype);
            self.no += 1;
            self.next = Some(n + len);
        }
        self.framing.set(f);
        self.pos += give as u64;
        if give == 0 && k > 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, BAD_FRAME));
        }
        Ok(give)
    }
}

/// What [`Prefix`] says when it stops before a record of an impossible length.
const BAD_FRAME: &str = "a record of an impossible length";

type Inner = Counting<Prefix<Box<dyn Read>>>;

/// A DBN file as a record source.
pub struct DbnSource {
    file: String,
    dec: dbn::decode::dbn::Decoder<Inner>,
    /// Compressed bytes read (progress).
    raw: Rc<Cell<u64>>,
    /// Decompressed bytes given to the decoder.
    plain: Rc<Cell<u64>>,
    head: Rc<Cell<[u8; 8]>>,
    framing: Rc<Cell<Framing>>,
    /// Records carry an 8-byte send timestamp after them (the metadata's `ts_out`).
    ts_out: bool,
    /// The metadata's `end`: the query's end (UTC ns), or the last record's in a file
    /// split from a larger one.
    end: Option<i64>,
    /// Bytes of the records decoded so far.
    consumed: u64,
    schema: Schema,
    symbols: dbn::TsSymbolMap,
    cache: HashMap<u32, Inst>,
    last_quote: HashMap<u32, (Px, Px, u64, u64)>,
    no: u64,
    queue: std::collections::VecDeque<Record>,
    done: bool,
}

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// How a damaged file's refusal ends.
const DAMAGED: &str = "the file is damaged, not cut short: fetch it again";

/// `a` or `an` before a schema's name.
fn article(s: Schema) -> &'static str {
    if s.to_string().starts_with(['a', 'e', 'i', 'o', 'u', 'm']) {
        "an"
    } else {
        "a"
    }
}

/// The bytes every DBN file starts with.
const DBN_PREFIX: &[u8; 3] = b"DBN";

impl DbnSource {
    /// Open a DBN file (zstd-compressed or not: the first bytes say).
    pub fn open(path: &std::path::Path) -> Result<DbnSource, ImportError> {
        let file = path.display().to_string();
        let err = |r: u64, why: String| ImportError::new(&file, r, why);
        let f = File::open(path).map_err(|e| err(0, format!("cannot open: {e}")))?;
        let (counted, raw) = Counting::new(f);
        let mut br = BufReader::with_capacity(1 << 16, counted);
        let magic = {
            use std::io::BufRead;
            let b = br
                .fill_buf()
                .map_err(|e| err(0, format!("cannot read: {e}")))?;
            b.get(..4).map(|x| x == ZSTD_MAGIC).unwrap_or(false)
        };
        let inner: Box<dyn Read> = if magic {
            Box::new(NoSilentEof(
                zstd::stream::read::Decoder::with_buffer(br)
                    .map_err(|e| err(0, format!("not a zstd stream: {e}")))?,
            ))
        } else {
            Box::new(br)
        };
        let head = Rc::new(Cell::new([0u8; 8]));
        let framing = Rc::new(Cell::new(Framing::default()));
        let (plain_r, plain) = Counting::new(Prefix {
            inner,
            head: head.clone(),
            seen: 0,
            pos: 0,
            next: None,
            no: 0,
            framing: framing.clone(),
        });
        let dec =
            dbn::decode::dbn::Decoder::with_upgrade_policy(plain_r, VersionUpgradePolicy::AsIs)
                .map_err(|e| {
                    // What was read decides whether this is a DBN file at all.
                    let (got, h) = (plain.get(), head.get());
                    let n = (got as usize).min(DBN_PREFIX.len());
                    let why = if is_cut_zstd(&e) {
                        describe(&e, None)
                    } else if got == 0 && raw.get() == 0 {
                        "the file is empty: not a DBN file".to_string()
                    } else if got == 0 {
                        "the zstd stream holds no data: not a DBN file".to_string()
                    } else if h[..n] != DBN_PREFIX[..n] {
                        "not a DBN file (it does not start with the DBN prefix)".to_string()
                    } else {
                        describe(&e, None)
                    };
                    err(0, why)
                })?;
        let md = dec.metadata();
        let ts_out = md.ts_out;
        let end = md.end.and_then(|e| i64::try_from(e.get()).ok());
        let schema = md.schema.ok_or_else(|| {
            err(
                0,
                "the file's metadata names no schema (mixed schemas are not imported)".into(),
            )
        })?;
        match schema {
            Schema::Trades | Schema::Mbp1 | Schema::Tbbo | Schema::Ohlcv1S | Schema::Ohlcv1M => {}
            other => {
                return Err(err(
                    0,
                    format!(
                        "schema {other} is not imported (trades, mbp-1, tbbo, ohlcv-1s and ohlcv-1m are)"
                    ),
                ));
            }
        }
        let symbols = md
            .symbol_map()
            .map_err(|e| err(0, format!("the metadata's symbology is unreadable: {e}")))?;
        Ok(DbnSource {
            file,
            dec,
            raw,
            plain,
            head,
            framing,
            ts_out,
            end,
            consumed: 0,
            schema,
            symbols,
            cache: HashMap::new(),
            last_quote: HashMap::new(),
            no: 0,
            queue: Default::default(),
            done: false,
        })
    }

    fn bad(&self, why: impl Into<String>) -> ImportError {
        ImportError::new(&self.file, self.no, why)
    }

    fn sym(&mut self, id: u32, ts: u64) -> Result<Inst, ImportError> {
        if let Some(s) = self.cache.get(&id) {
            return Ok(*s);
        }
        let name = self.symbols.get_for_ts(ts, id).cloned().ok_or_else(|| {
            self.bad(format!(
                "instrument_id {id} has no symbol in the file's metadata (symbology) at this time"
            ))
        })?;
        let s = tape_inst(&name).map_err(|e| self.bad(e))?;
        self.cache.insert(id, s);
        Ok(s)
    }

    fn ns(&self, t: u64) -> Result<i64, ImportError> {
        i64::try_from(t).map_err(|_| self.bad(format!("timestamp {t} is out of range")))
    }

    /// A price (`what`: `price`, `bid`, `open`, …); one at 0 or below is invalid market
    /// data (skipped with `--skip-invalid`), more than 4 decimals a refusal.
    fn px(&self, p: i64, what: &str) -> Result<Px, ImportError> {
        px_from_nanos(p).map_err(|e| {
            let why = format!("{what}: {e}");
            match what {
                _ if p > 0 => self.bad(why),
                "bid" | "ask" => ImportError::invalid(&self.file, self.no, BAD_SIDE, why),
                _ => ImportError::invalid(&self.file, self.no, BAD_PRICE, why),
            }
        })
    }

    fn push(&mut self, ns: i64, (sym, opt): Inst, kind: Kind) {
        self.queue.push_back(Record {
            ns,
            sym,
            opt,
            kind,
            no: self.no,
        });
    }

    /// The quote of a top-of-book level, unless one side is empty or it repeats the last.
    /// An option's book with no bid (undefined or 0) is a quote with a bid of 0, as the
    /// tape writes a contract nobody bids for; without an ask it is skipped.
    fn quote(
        &mut self,
        id: u32,
        ns: i64,
        sym: Inst,
        l: &dbn::BidAskPair,
    ) -> Result<(), ImportError> {
        let option = sym.1.is_some();
        let no_bid = l.bid_px == UNDEF_PRICE || l.bid_px <= 0;
        if l.ask_px == UNDEF_PRICE || no_bid && !option {
            return Ok(());
        }
        let bid = if no_bid {
            Px::ZERO
        } else {
            self.px(l.bid_px, "bid")?
        };
        let ask = self.px(l.ask_px, "ask")?;
        if bid > ask {
            return Err(ImportError::invalid(
                &self.file,
                self.no,
                CROSSED,
                format!("crossed book: bid {bid} is above ask {ask}"),
            ));
        }
        let q = (bid, ask, u64::from(l.bid_sz), u64::from(l.ask_sz));
        if self.last_quote.get(&id) == Some(&q) {
            return Ok(());
        }
        self.last_quote.insert(id, q);
        self.push(
            ns,
            sym,
            Kind::Quote {
                bid,
                ask,
                bsz: q.2,
                asz: q.3,
            },
        );
        Ok(())
    }

    fn decode_one(&mut self) -> Result<bool, ImportError> {
        let rec = match self.dec.decode_record_ref() {
            Ok(Some(r)) => r,
            Ok(None) => return Ok(false),
            Err(e) => {
                // The framing stopped the stream before a record of an impossible length.
                if let Some((no, len)) = self.framing.get().bad {
                    return Err(ImportError::new(
                        &self.file,
                        no,
                        format!(
                            "corrupt: record {no}'s length header says {len} bytes, which no DBN record has (a whole number of 8-byte words, at least {HEADER_LEN}); {DAMAGED}"
                        ),
                    ));
                }
                let no = self.no + 1;
                return Err(ImportError::new(&self.file, no, describe(&e, Some(no))));
            }
        };
        self.no += 1;
        let (rtype, size) = (rec.header().rtype, rec.header().record_size());
        self.consumed += size as u64;
        let schema = self.schema;
        // Copy the record out of the decoder's buffer (they are small, fixed-size).
        enum R {
            T(TradeMsg),
            M(Mbp1Msg),
            O(OhlcvMsg),
            Other,
            /// The schema's record type with another length (its size).
            BadSize(usize),
            /// A record type that is neither the schema's nor one without market data.
            BadType,
        }
        let (is_data, want) = match schema {
            Schema::Trades => (rec.has::<TradeMsg>(), size_of::<TradeMsg>()),
            Schema::Mbp1 | Schema::Tbbo => (rec.has::<Mbp1Msg>(), size_of::<Mbp1Msg>()),
            _ => (rec.has::<OhlcvMsg>(), size_of::<OhlcvMsg>()),
        };
        let want = want + if self.ts_out { 8 } else { 0 };
        // A data record is read only at its exact size (`get` panics on a shorter one).
        let r = if is_data && size != want {
            R::BadSize(want)
        } else if is_data {
            match schema {
                Schema::Trades => rec.get::<TradeMsg>().map(|x| R::T(x.clone())),
                Schema::Mbp1 | Schema::Tbbo => rec.get::<Mbp1Msg>().map(|x| R::M(x.clone())),
                _ => rec.get::<OhlcvMsg>().map(|x| R::O(x.clone())),
            }
            .unwrap_or(R::BadType)
        } else if matches!(
            rtype,
            dbn::rtype::SYSTEM | dbn::rtype::ERROR | dbn::rtype::SYMBOL_MAPPING
        ) {
            R::Other
        } else {
            R::BadType
        };
        match r {
            R::BadSize(want) => {
                return Err(self.bad(format!(
                    "corrupt: record {}'s length header says {size} bytes where {} {schema} record has {want}; {DAMAGED}",
                    self.no,
                    article(schema)
                )));
            }
            R::BadType => {
                return Err(self.bad(format!(
                    "corrupt: record {} has record type {rtype:#04x}, neither the file's schema's ({schema}) nor that of a system, error or symbol-mapping record; {DAMAGED}",
                    self.no
                )));
            }
            R::T(t) => {
                let (id, ns) = (t.hd.instrument_id, self.ns(t.ts_recv)?);
                let sym = self.sym(id, t.ts_recv)?;
                let px = self.px(t.price, "price")?;
                self.push(
                    ns,
                    sym,
                    Kind::Trade {
                        px,
                        sz: u64::from(t.size),
                    },
                );
            }
            R::M(m) => {
                let (id, ns) = (m.hd.instrument_id, self.ns(m.ts_recv)?);
                let sym = self.sym(id, m.ts_recv)?;
                self.quote(id, ns, sym, &m.levels[0])?;
                let trade = schema == Schema::Tbbo || m.action as u8 == b'T';
                if trade {
                    let px = self.px(m.price, "price")?;
                    self.push(
                        ns,
                        sym,
                        Kind::Trade {
                            px,
                            sz: u64::from(m.size),
                        },
                    );
                }
            }
            R::O(o) => {
                let (id, t0) = (o.hd.instrument_id, self.ns(o.hd.ts_event)?);
                let sym = self.sym(id, o.hd.ts_event)?;
                let bar: i64 = if schema == Schema::Ohlcv1S {
                    1_000_000_000
                } else {
                    60_000_000_000
                };
                let (op, hi, lo, cl) = (
                    self.px(o.open, "open")?,
                    self.px(o.high, "high")?,
                    self.px(o.low, "low")?,
                    self.px(o.close, "close")?,
                );
                if lo > hi || op < lo || op > hi || cl < lo || cl > hi {
                    return Err(self.bad(format!(
                        "inconsistent bar: open {op} high {hi} low {lo} close {cl}"
                    )));
                }
                let v = o.volume;
                let q = v / 4;
                let (a, b) = if cl < op { (hi, lo) } else { (lo, hi) };
                self.push(t0, sym, Kind::Trade { px: op, sz: q });
                self.push(t0 + bar / 4, sym, Kind::Trade { px: a, sz: q });
                self.push(t0 + bar / 2, sym, Kind::Trade { px: b, sz: q });
                self.push(
                    t0 + bar - 1_000_000,
                    sym,
                    Kind::Trade {
                        px: cl,
                        sz: v - 3 * q,
                    },
                );
            }
            // System, error and symbol-mapping records carry no market data.
            R::Other => {}
        }
        Ok(true)
    }

    /// At the end: every byte given to the decoder is the metadata or a whole record. The
    /// bytes after the last whole record are a record cut short, unless its length header
    /// is not its type's: then the file is damaged there, not cut.
    fn check_whole(&self) -> Result<(), ImportError> {
        let h = self.head.get();
        let meta = 8 + u64::from(u32::from_le_bytes([h[4], h[5], h[6], h[7]]));
        let expected = meta + self.consumed;
        let got = self.plain.get();
        let (no, first, len, rtype) = self.framing.get().last;
        let data = match self.schema {
            Schema::Trades => rtype == Some(dbn::rtype::MBP_0),
            Schema::Mbp1 | Schema::Tbbo => rtype == Some(dbn::rtype::MBP_1),
            _ => rtype.is_some_and(|t| OhlcvMsg::has_rtype(u16::from(t))),
        };
        let want = match self.schema {
            Schema::Trades => size_of::<TradeMsg>(),
            Schema::Mbp1 | Schema::Tbbo => size_of::<Mbp1Msg>(),
            _ => size_of::<OhlcvMsg>(),
        } as u64
            + if self.ts_out { 8 } else { 0 };
        if got > expected && no == self.no + 1 && first == expected && data && len != want {
            return Err(ImportError::new(
                &self.file,
                no,
                format!(
                    "corrupt: record {no}'s length header says {len} bytes where {} {} record has {want} (the file holds {} bytes from its start); {DAMAGED}",
                    article(self.schema),
                    self.schema,
                    got - expected
                ),
            ));
        }
        if got > expected {
            return Err(ImportError::new(
                &self.file,
                self.no + 1,
                format!(
                    "truncated: the file ends inside record {} ({} of its bytes are there); fetch it whole",
                    self.no + 1,
                    got - expected
                ),
            ));
        }
        Ok(())
    }
}

impl Source for DbnSource {
    fn next_record(&mut self) -> Option<Result<Record, ImportError>> {
        loop {
            if let Some(r) = self.queue.pop_front() {
                return Some(Ok(r));
            }
            if self.done {
                return None;
            }
            let before = self.queue.len();
            match self.decode_one() {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    if let Err(e) = self.check_whole() {
                        return Some(Err(e));
                    }
                }
                Err(e) if e.invalid.is_some() => {
                    // Invalid market data, not a broken file: the record's other events
                    // go with it (a `--skip-invalid` import skips it whole), and the file
                    // goes on.
                    self.queue.truncate(before);
                    return Some(Err(e));
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }

    fn bars(&self) -> bool {
        matches!(self.schema, Schema::Ohlcv1S | Schema::Ohlcv1M)
    }

    fn bytes_read(&self) -> u64 {
        self.raw.get()
    }

    fn records_read(&self) -> u64 {
        self.no
    }

    fn query_end(&self) -> Option<i64> {
        self.end
    }
}
