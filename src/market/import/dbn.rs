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
//! unexpected end into an error (docs/tapes.md §5).

use std::cell::Cell;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::rc::Rc;

use dbn::decode::{DbnMetadata, DecodeRecordRef};
use dbn::{Mbp1Msg, OhlcvMsg, Schema, TradeMsg, UNDEF_PRICE, VersionUpgradePolicy};

use super::{Counting, ImportError, Kind, Record, Source, px_from_nanos, tape_inst};
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

/// Captures the first 8 bytes (the DBN prefix with the metadata length).
struct Prefix<R> {
    inner: R,
    head: Rc<Cell<[u8; 8]>>,
    seen: usize,
}

impl<R: Read> Read for Prefix<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(buf)?;
        if self.seen < 8 {
            let mut h = self.head.get();
            let take = (8 - self.seen).min(k);
            h[self.seen..self.seen + take].copy_from_slice(&buf[..take]);
            self.head.set(h);
            self.seen += take;
        }
        Ok(k)
    }
}

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
        let (plain_r, plain) = Counting::new(Prefix {
            inner,
            head: head.clone(),
            seen: 0,
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

    fn px(&self, p: i64, what: &str) -> Result<Px, ImportError> {
        px_from_nanos(p).map_err(|e| self.bad(format!("{what}: {e}")))
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
            return Err(self.bad(format!("crossed book: bid {bid} is above ask {ask}")));
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
                let no = self.no + 1;
                return Err(ImportError::new(&self.file, no, describe(&e, Some(no))));
            }
        };
        self.no += 1;
        self.consumed += rec.header().record_size() as u64;
        let schema = self.schema;
        // Copy the record out of the decoder's buffer (they are small, fixed-size).
        enum R {
            T(TradeMsg),
            M(Mbp1Msg),
            O(OhlcvMsg),
            Other,
        }
        let r = match schema {
            Schema::Trades => rec.get::<TradeMsg>().map(|x| R::T(x.clone())),
            Schema::Mbp1 | Schema::Tbbo => rec.get::<Mbp1Msg>().map(|x| R::M(x.clone())),
            _ => rec.get::<OhlcvMsg>().map(|x| R::O(x.clone())),
        }
        .unwrap_or(R::Other);
        match r {
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

    /// At the end: every byte given to the decoder is the metadata or a whole record.
    fn check_whole(&self) -> Result<(), ImportError> {
        let h = self.head.get();
        let meta = 8 + u64::from(u32::from_le_bytes([h[4], h[5], h[6], h[7]]));
        let expected = meta + self.consumed;
        let got = self.plain.get();
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
            match self.decode_one() {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    if let Err(e) = self.check_whole() {
                        return Some(Err(e));
                    }
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }

    fn bytes_read(&self) -> u64 {
        self.raw.get()
    }

    fn records_read(&self) -> u64 {
        self.no
    }
}
