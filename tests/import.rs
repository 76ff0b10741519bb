//! `kestrel tape import`: DBN files written with the `dbn` crate's own encoder (trades,
//! mbp-1, ohlcv-1m) and CSV files in two vendors' layouts import to the expected tapes, byte
//! for byte; importing twice gives the same bytes; a bad record, an out-of-order record and
//! truncated files are refused with the record number, and no partial tape is left.
//!
//! `KESTREL_BLESS=1 cargo test --test import` rewrites the sample inputs in
//! `examples/import/` (made here from the generator, not copied from a vendor).

use std::path::{Path, PathBuf};
use std::process::Command;

use dbn::encode::{EncodeRecord, dbn::Encoder};
use dbn::{
    BidAskPair, FlagSet, MappingInterval, Mbp1Msg, Metadata, MetadataBuilder, OhlcvMsg,
    RecordHeader, SType, Schema, SymbolMapping, TradeMsg, rtype,
};

const T0: u64 = 1_744_205_400_000_000_000; // 2025-04-09 13:30:00 UTC = 09:30 New York
const D2: u64 = 1_744_291_800_000_000_000; // 2025-04-10 13:30:00 UTC
const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kestrel-import-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn kestrel(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args(args)
        .output()
        .expect("kestrel runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Import `files` (with `flags`) into `out`; the tape's text, or the stderr of a refusal.
fn import(files: &[&Path], out: &Path, flags: &[&str]) -> Result<String, String> {
    let mut args: Vec<String> = vec!["tape".into(), "import".into()];
    args.extend(files.iter().map(|p| p.display().to_string()));
    args.push("-o".into());
    args.push(out.display().to_string());
    args.extend(flags.iter().map(|s| s.to_string()));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, err) = kestrel(&a);
    if code == 0 {
        Ok(std::fs::read_to_string(out).unwrap())
    } else {
        Err(err)
    }
}

fn date(d: u8) -> time::Date {
    time::Date::from_calendar_date(2025, time::Month::April, d).unwrap()
}

fn metadata(schema: Schema, syms: &[(&str, u32)]) -> Metadata {
    MetadataBuilder::new()
        .dataset("XNAS.ITCH")
        .schema(Some(schema))
        .start(T0 - 3600 * SEC)
        .stype_in(Some(SType::RawSymbol))
        .stype_out(SType::InstrumentId)
        .symbols(syms.iter().map(|s| s.0.to_string()).collect())
        .mappings(
            syms.iter()
                .map(|(s, id)| SymbolMapping {
                    raw_symbol: s.to_string(),
                    intervals: vec![MappingInterval {
                        start_date: date(9),
                        end_date: date(11),
                        symbol: id.to_string(),
                    }],
                })
                .collect(),
        )
        .build()
}

fn px(p: f64) -> i64 {
    (p * 1e4).round() as i64 * 100_000
}

fn trade(id: u32, ts: u64, p: f64, size: u32) -> TradeMsg {
    TradeMsg {
        hd: RecordHeader::new::<TradeMsg>(rtype::MBP_0, 1, id, ts),
        price: px(p),
        size,
        action: b'T' as std::ffi::c_char,
        side: b'N' as std::ffi::c_char,
        flags: FlagSet::default(),
        depth: 0,
        ts_recv: ts,
        ts_in_delta: 0,
        sequence: 0,
    }
}

fn mbp1(id: u32, ts: u64, action: u8, p: f64, size: u32, book: (f64, f64, u32, u32)) -> Mbp1Msg {
    Mbp1Msg {
        hd: RecordHeader::new::<Mbp1Msg>(rtype::MBP_1, 1, id, ts),
        price: px(p),
        size,
        action: action as std::ffi::c_char,
        side: b'N' as std::ffi::c_char,
        flags: FlagSet::default(),
        depth: 0,
        ts_recv: ts,
        ts_in_delta: 0,
        sequence: 0,
        levels: [BidAskPair {
            bid_px: px(book.0),
            ask_px: px(book.1),
            bid_sz: book.2,
            ask_sz: book.3,
            bid_ct: 1,
            ask_ct: 1,
        }],
    }
}

fn bar(id: u32, ts: u64, o: f64, h: f64, l: f64, c: f64, v: u64) -> OhlcvMsg {
    OhlcvMsg {
        hd: RecordHeader::new::<OhlcvMsg>(rtype::OHLCV_1M, 1, id, ts),
        open: px(o),
        high: px(h),
        low: px(l),
        close: px(c),
        volume: v,
    }
}

fn write_dbn<R: dbn::encode::DbnEncodable>(path: &Path, md: &Metadata, recs: &[R], zstd: bool) {
    let f = std::fs::File::create(path).unwrap();
    if zstd {
        let mut e = Encoder::with_zstd(f, md).unwrap();
        for r in recs {
            e.encode_record(r).unwrap();
        }
        e.flush().unwrap();
    } else {
        let mut e = Encoder::new(f, md).unwrap();
        for r in recs {
            e.encode_record(r).unwrap();
        }
        e.flush().unwrap();
    }
}

fn header(name: &str, priors: &str, source: &str) -> String {
    format!(
        "{{\"type\":\"header\",\"v\":2,\"name\":\"{name}\",\"date\":\"2025-04-09\",\"tz\":\"America/New_York\",\"open\":\"09:30\",\"close\":\"16:00\",\"symbols\":{{{priors}}},\"vol\":{{}},\"rate\":0.0,\"source\":\"{source}\",\"tags\":{{\"date\":\"2025-04-09\",\"source\":\"import\"}}}}\n"
    )
}

#[test]
fn dbn_trades_two_sessions_import_to_the_expected_tape() {
    let d = dir("trades");
    let f = d.join("trades.dbn");
    let md = metadata(Schema::Trades, &[("SPY", 1), ("QQQ", 2)]);
    write_dbn(
        &f,
        &md,
        &[
            trade(1, T0 - 60 * SEC, 499.00, 10), // 09:29: before the open, not kept
            trade(1, T0, 500.12, 100),
            trade(2, T0 + 500 * MS, 430.05, 50),
            trade(1, T0 + 23_370 * SEC, 501.00, 200), // 15:59:30
            trade(1, D2, 502.00, 10),
            trade(1, D2 + 23_400 * SEC - MS, 503.50, 1), // 15:59:59.999
        ],
        false,
    );
    let out = d.join("t.jsonl");
    let got = import(&[&f], &out, &[]).unwrap();
    let want = header(
        "t",
        "\"QQQ\":{\"prior_close\":430.05},\"SPY\":{\"prior_close\":500.12}",
        "import dbn trades.dbn",
    ) + concat!(
        "{\"type\":\"tick\",\"ts\":\"09:30:00.000\",\"sym\":\"SPY\",\"px\":500.12,\"sz\":100}\n",
        "{\"type\":\"tick\",\"ts\":\"09:30:00.500\",\"sym\":\"QQQ\",\"px\":430.05,\"sz\":50}\n",
        "{\"type\":\"tick\",\"ts\":\"15:59:30.000\",\"sym\":\"SPY\",\"px\":501.00,\"sz\":200}\n",
        "{\"type\":\"session\",\"date\":\"2025-04-10\",\"open\":\"09:30\",\"close\":\"16:00\",\"prior\":{\"QQQ\":430.05,\"SPY\":501.00}}\n",
        "{\"type\":\"tick\",\"ts\":\"09:30:00.000\",\"sym\":\"SPY\",\"px\":502.00,\"sz\":10}\n",
        "{\"type\":\"tick\",\"ts\":\"15:59:59.999\",\"sym\":\"SPY\",\"px\":503.50,\"sz\":1}\n",
    );
    assert_eq!(got, want);
    // The tape reads (both sessions whole), and importing again gives the same bytes.
    kestrel_desk::market::read_tape_bytes(got.as_bytes()).unwrap();
    let again = import(&[&f], &d.join("t2.jsonl"), &["--name", "t"]).unwrap();
    assert_eq!(again, got);
    // Filters: one session, one symbol.
    let one = import(
        &[&f],
        &d.join("one.jsonl"),
        &["--session-filter", "2025-04-10", "--symbols", "SPY"],
    )
    .unwrap();
    assert!(one.contains("\"date\":\"2025-04-10\""), "{one}");
    assert!(
        !one.contains("QQQ") && !one.contains("\"type\":\"session\""),
        "{one}"
    );
    // Extended hours keep the 09:29 print (the session opens at 04:00).
    let ext = import(&[&f], &d.join("ext.jsonl"), &["--extended-hours"]).unwrap();
    assert!(
        ext.contains("\"ts\":\"09:29:00.000\",\"sym\":\"SPY\",\"px\":499.00"),
        "{ext}"
    );
    assert!(ext.contains("\"open\":\"04:00\""), "{ext}");
}

#[test]
fn dbn_mbp1_zstd_gives_quotes_and_trades() {
    let d = dir("mbp1");
    let f = d.join("spy.mbp-1.dbn.zst");
    let md = metadata(Schema::Mbp1, &[("SPY", 7)]);
    write_dbn(
        &f,
        &md,
        &[
            mbp1(7, T0, b'A', 500.10, 300, (500.10, 500.12, 300, 200)),
            mbp1(
                7,
                T0 + 100 * MS,
                b'T',
                500.12,
                100,
                (500.10, 500.12, 300, 100),
            ),
            mbp1(
                7,
                T0 + 200 * MS,
                b'C',
                500.12,
                0,
                (500.10, 500.12, 300, 100),
            ),
            mbp1(
                7,
                T0 + 23_390 * SEC,
                b'A',
                500.50,
                10,
                (500.50, 500.55, 10, 10),
            ),
        ],
        true,
    );
    let got = import(&[&f], &d.join("q.jsonl"), &[]).unwrap();
    let want = header(
        "q",
        "\"SPY\":{\"prior_close\":500.12}",
        "import dbn spy.mbp-1.dbn.zst",
    ) + concat!(
        "{\"type\":\"quote\",\"ts\":\"09:30:00.000\",\"sym\":\"SPY\",\"bid\":500.10,\"ask\":500.12,\"bsz\":300,\"asz\":200}\n",
        "{\"type\":\"quote\",\"ts\":\"09:30:00.100\",\"sym\":\"SPY\",\"bid\":500.10,\"ask\":500.12,\"bsz\":300,\"asz\":100}\n",
        "{\"type\":\"tick\",\"ts\":\"09:30:00.100\",\"sym\":\"SPY\",\"px\":500.12,\"sz\":100}\n",
        "{\"type\":\"quote\",\"ts\":\"15:59:50.000\",\"sym\":\"SPY\",\"bid\":500.50,\"ask\":500.55,\"bsz\":10,\"asz\":10}\n",
    );
    assert_eq!(got, want);
    // A zstd stream cut short is refused with the record being read, and no tape is left.
    let bytes = std::fs::read(&f).unwrap();
    let cut = d.join("cut.dbn.zst");
    std::fs::write(&cut, &bytes[..bytes.len() - 12]).unwrap();
    let out = d.join("cut.jsonl");
    let err = import(&[&cut], &out, &[]).unwrap_err();
    assert!(err.contains("code=IMPORT"), "{err}");
    assert!(err.contains("record="), "{err}");
    assert!(err.contains("truncated"), "{err}");
    assert!(!out.exists());
    assert!(
        std::fs::read_dir(&d).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains(".tmp."))
    );
}

#[test]
fn dbn_ohlcv_bars_become_four_trades() {
    let d = dir("ohlcv");
    let f = d.join("bars.dbn");
    let md = metadata(Schema::Ohlcv1M, &[("SPY", 3)]);
    write_dbn(
        &f,
        &md,
        &[
            bar(3, T0, 500.00, 501.00, 499.50, 500.50, 1000),
            bar(3, T0 + 23_340 * SEC, 500.50, 500.60, 500.10, 500.20, 10),
        ],
        false,
    );
    let got = import(&[&f], &d.join("b.jsonl"), &[]).unwrap();
    let want = header(
        "b",
        "\"SPY\":{\"prior_close\":500.00}",
        "import dbn bars.dbn",
    ) + concat!(
        "{\"type\":\"tick\",\"ts\":\"09:30:00.000\",\"sym\":\"SPY\",\"px\":500.00,\"sz\":250}\n",
        "{\"type\":\"tick\",\"ts\":\"09:30:15.000\",\"sym\":\"SPY\",\"px\":499.50,\"sz\":250}\n",
        "{\"type\":\"tick\",\"ts\":\"09:30:30.000\",\"sym\":\"SPY\",\"px\":501.00,\"sz\":250}\n",
        "{\"type\":\"tick\",\"ts\":\"09:30:59.999\",\"sym\":\"SPY\",\"px\":500.50,\"sz\":250}\n",
        "{\"type\":\"tick\",\"ts\":\"15:59:00.000\",\"sym\":\"SPY\",\"px\":500.50,\"sz\":2}\n",
        "{\"type\":\"tick\",\"ts\":\"15:59:15.000\",\"sym\":\"SPY\",\"px\":500.60,\"sz\":2}\n",
        "{\"type\":\"tick\",\"ts\":\"15:59:30.000\",\"sym\":\"SPY\",\"px\":500.10,\"sz\":2}\n",
        "{\"type\":\"tick\",\"ts\":\"15:59:59.999\",\"sym\":\"SPY\",\"px\":500.20,\"sz\":4}\n",
    );
    assert_eq!(got, want);
    // A plain DBN file cut inside its last record is refused with that record's number.
    let bytes = std::fs::read(&f).unwrap();
    let cut = d.join("cut.dbn");
    std::fs::write(&cut, &bytes[..bytes.len() - 5]).unwrap();
    let err = import(&[&cut], &d.join("c.jsonl"), &[]).unwrap_err();
    assert!(
        err.contains("record=2 ") && err.contains("truncated"),
        "{err}"
    );
}

const EVENTS: &str = concat!(
    "{\"type\":\"tick\",\"ts\":\"09:30:00.000\",\"sym\":\"SPY\",\"px\":500.12,\"sz\":100}\n",
    "{\"type\":\"quote\",\"ts\":\"09:30:00.000\",\"sym\":\"SPY\",\"bid\":500.10,\"ask\":500.12,\"bsz\":3,\"asz\":2}\n",
    "{\"type\":\"quote\",\"ts\":\"09:30:00.400\",\"sym\":\"SPY\",\"bid\":500.11,\"ask\":500.13,\"bsz\":1,\"asz\":4}\n",
    "{\"type\":\"tick\",\"ts\":\"09:30:00.500\",\"sym\":\"SPY\",\"px\":500.13,\"sz\":50}\n",
    "{\"type\":\"tick\",\"ts\":\"15:59:50.000\",\"sym\":\"SPY\",\"px\":501.00,\"sz\":10}\n",
);

#[test]
fn csv_in_two_vendor_layouts_imports_to_the_expected_tape() {
    let d = dir("csv");
    // Vendor A: trades and quotes in two files, nanoseconds since the epoch (UTC).
    let ta = d.join("a-trades.csv");
    std::fs::write(
        &ta,
        "sip_timestamp,ticker,price,size\n1744205400000000000,SPY,500.12,100\n1744205400500000000,SPY,500.13,50\n1744228790000000000,SPY,501.00,10\n",
    )
    .unwrap();
    let qa = d.join("a-quotes.csv");
    std::fs::write(
        &qa,
        "sip_timestamp,ticker,bid_price,bid_size,ask_price,ask_size\n1744205400000000000,SPY,500.10,3,500.12,2\n1744205400400000000,SPY,500.11,1,500.13,4\n",
    )
    .unwrap();
    let a_flags = [
        "--ts-unit",
        "ns",
        "--ts-col",
        "sip_timestamp",
        "--symbol-col",
        "ticker",
        "--bid-col",
        "bid_price",
        "--ask-col",
        "ask_price",
        "--name",
        "spy",
    ];
    let a = import(&[&ta, &qa], &d.join("a.jsonl"), &a_flags).unwrap();
    let want = |src: &str| header("spy", "\"SPY\":{\"prior_close\":500.12}", src) + EVENTS;
    assert_eq!(a, want("import csv a-trades.csv,a-quotes.csv"));
    // The summary counts one session as one ("1 sessions" before); a range whose --to is
    // before its --from is a usage error, not a read of every record that kept none.
    let mut args = vec!["tape", "import", s(&ta), s(&qa), "-o"];
    let summary_out = d.join("a2.jsonl");
    args.push(s(&summary_out));
    args.extend_from_slice(&a_flags);
    let (code, _, err) = kestrel(&args);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("(1 session, symbols SPY"), "{err}");
    args.extend_from_slice(&["--from", "2025-04-10", "--to", "2025-04-01"]);
    let (code, _, err) = kestrel(&args);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        err,
        "error code=USAGE message=--to 2025-04-01 is before --from 2025-04-10: the range is empty (give --from first, --to last)\n"
    );
    // Vendor B: one file, local ISO times, a type column, its own column names.
    let b = d.join("b.csv");
    std::fs::write(
        &b,
        concat!(
            "Date Time,Symbol,Type,Price,Volume,Bid,Ask,BidSize,AskSize\n",
            "2025-04-09 09:30:00.000,SPY,TRADE,500.12,100,,,,\n",
            "2025-04-09 09:30:00.000,SPY,QUOTE,,,500.10,500.12,3,2\n",
            "2025-04-09 09:30:00.400,SPY,QUOTE,,,500.11,500.13,1,4\n",
            "2025-04-09 09:30:00.500,SPY,TRADE,500.13,50,,,,\n",
            "2025-04-09 15:59:50.000,SPY,TRADE,501.00,10,,,,\n",
        ),
    )
    .unwrap();
    let b_flags = [
        "--ts-unit",
        "iso",
        "--ts-col",
        "Date Time",
        "--symbol-col",
        "Symbol",
        "--type-col",
        "Type",
        "--price-col",
        "Price",
        "--size-col",
        "Volume",
        "--bid-col",
        "Bid",
        "--ask-col",
        "Ask",
        "--bid-size-col",
        "BidSize",
        "--ask-size-col",
        "AskSize",
        "--name",
        "spy",
    ];
    let got = import(&[&b], &d.join("b.jsonl"), &b_flags).unwrap();
    assert_eq!(got, want("import csv b.csv"));
    // Twice: the same bytes.
    assert_eq!(import(&[&b], &d.join("b2.jsonl"), &b_flags).unwrap(), got);
    // No unit: refused (the importer does not guess).
    let err = import(&[&b], &d.join("x.jsonl"), &["--ts-col", "Date Time"]).unwrap_err();
    assert!(err.contains("--ts-unit"), "{err}");
}

#[test]
fn bad_and_out_of_order_csv_records_are_refused_with_their_number() {
    let d = dir("bad");
    let bad = d.join("bad.csv");
    std::fs::write(
        &bad,
        "ts,symbol,price,size\n1744205400000,SPY,500.12,1\n1744205401000,SPY,5x0,1\n",
    )
    .unwrap();
    let out = d.join("o.jsonl");
    let err = import(&[&bad], &out, &["--ts-unit", "ms"]).unwrap_err();
    assert!(
        err.contains("file=") && err.contains("bad.csv record=2 "),
        "{err}"
    );
    assert!(err.contains("not a plain decimal"), "{err}");
    assert!(!out.exists());
    let ooo = d.join("ooo.csv");
    std::fs::write(
        &ooo,
        "ts,symbol,price,size\n1744205400000,SPY,500.12,1\n1744205402000,SPY,500.13,1\n1744205401000,SPY,500.14,1\n",
    )
    .unwrap();
    let err = import(&[&ooo], &out, &["--ts-unit", "ms"]).unwrap_err();
    assert!(
        err.contains("ooo.csv record=3 ") && err.contains("out-of-order"),
        "{err}"
    );
    // An existing output is left as it was when an import fails.
    std::fs::write(&out, "keep").unwrap();
    assert!(import(&[&bad], &out, &["--ts-unit", "ms"]).is_err());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep");
}

/// The sample inputs in `examples/import/`, made from a generated session (five minutes of
/// SPY): trades as DBN (zstd), the book around each trade as mbp-1 DBN, one-minute bars as
/// ohlcv-1m DBN, and trades with quotes as CSV.
fn samples(d: &Path) -> Vec<PathBuf> {
    use kestrel_desk::market::*;
    let g = generate_with(
        Regime::Trend,
        1,
        Date::new(2025, 4, 9).unwrap(),
        GenOptions {
            minutes: Some(5),
            ..GenOptions::default()
        },
    );
    let ticks: Vec<Tick> = g
        .filter_map(|e| match e {
            TapeEvent::Tick(t) if t.sym.as_str() == "SPY" => Some(t),
            _ => None,
        })
        .collect();
    let ns = |t: &Tick| T0 + u64::from(t.ts.ms() - Ts::hms(9, 30, 0, 0).ms()) * MS;
    let f = |p: Px| p.to_f64();
    let trades: Vec<TradeMsg> = ticks
        .iter()
        .map(|t| trade(1, ns(t), f(t.px), t.sz as u32))
        .collect();
    let md = metadata(Schema::Trades, &[("SPY", 1)]);
    let p1 = d.join("spy-trades.dbn.zst");
    write_dbn(&p1, &md, &trades, true);
    let book: Vec<Mbp1Msg> = ticks
        .iter()
        .map(|t| {
            let p = f(t.px);
            mbp1(
                1,
                ns(t),
                b'T',
                p,
                t.sz as u32,
                (p - 0.01, p + 0.01, 300, 200),
            )
        })
        .collect();
    let p2 = d.join("spy-mbp-1.dbn");
    write_dbn(&p2, &metadata(Schema::Mbp1, &[("SPY", 1)]), &book, false);
    let mut bars = Vec::new();
    for m in ticks.chunk_by(|a, b| a.ts.ms() / 60_000 == b.ts.ms() / 60_000) {
        let hi = m.iter().map(|t| t.px).max().unwrap();
        let lo = m.iter().map(|t| t.px).min().unwrap();
        let t0 = ns(&m[0]) / (60 * SEC) * (60 * SEC);
        let v = m.iter().map(|t| t.sz).sum();
        bars.push(bar(
            1,
            t0,
            f(m[0].px),
            f(hi),
            f(lo),
            f(m[m.len() - 1].px),
            v,
        ));
    }
    let p3 = d.join("spy-ohlcv-1m.dbn");
    write_dbn(&p3, &metadata(Schema::Ohlcv1M, &[("SPY", 1)]), &bars, false);
    let mut csv = String::from("ts,symbol,price,size,bid,ask,bid_size,ask_size\n");
    for t in &ticks {
        csv.push_str(&format!(
            "{},SPY,{},{},{},{},300,200\n",
            ns(t),
            t.px,
            t.sz,
            t.px - Px::CENT,
            t.px + Px::CENT
        ));
    }
    let p4 = d.join("spy-trades-quotes.csv");
    std::fs::write(&p4, csv).unwrap();
    vec![p1, p2, p3, p4]
}

#[test]
fn shipped_samples_import_as_freshly_made_ones_do() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/import");
    let d = dir("samples");
    let fresh = samples(&d);
    if std::env::var_os("KESTREL_BLESS").is_some() {
        std::fs::create_dir_all(&root).unwrap();
        for p in &fresh {
            std::fs::copy(p, root.join(p.file_name().unwrap())).unwrap();
        }
    }
    for p in &fresh {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let shipped = root.join(&name);
        let flags: &[&str] = if name.ends_with(".csv") {
            &["--ts-unit", "ns", "--name", "s"]
        } else {
            &["--name", "s"]
        };
        let a = import(&[p], &d.join(format!("{name}.fresh.jsonl")), flags).unwrap();
        let b = import(&[&shipped], &d.join(format!("{name}.shipped.jsonl")), flags)
            .unwrap_or_else(|e| {
                panic!(
                    "{name}: {e} (KESTREL_BLESS=1 cargo test --test import rewrites the samples)"
                )
            });
        assert_eq!(a, b, "{name}");
        let (h, evs) = kestrel_desk::market::read_tape_bytes(a.as_bytes()).unwrap();
        assert_eq!(h.v, 2);
        assert!(evs.len() > 20, "{name}: {} events", evs.len());
    }
}

/// `kestrel tape info --json` on an imported two-session tape: the counts it prints are the
/// ones a read of the tape gives (counted here from the events), and the text form says the
/// same sessions.
#[test]
fn tape_info_json_counts_what_the_tape_holds() {
    use kestrel_desk::market::{QuoteInst, TapeEvent, read_tape_bytes};
    let d = dir("info");
    let f = d.join("two.csv");
    std::fs::write(
        &f,
        concat!(
            "ts,symbol,price,size,bid,ask,bid_size,ask_size\n",
            "2025-04-09 09:30:00.000,SPY,500.12,100,500.10,500.12,3,2\n",
            "2025-04-09 09:30:01.000,QQQ,430.00,5,,,,\n",
            "2025-04-09 12:00:00.000,SPY,,,500.20,500.22,1,1\n",
            "2025-04-09 15:59:59.000,SPY,500.30,10,,,,\n",
            "2025-04-10 09:30:00.000,SPY,501.00,1,,,,\n",
            "2025-04-10 15:59:30.000,SPY,501.50,1,501.49,501.51,1,1\n",
        ),
    )
    .unwrap();
    let out = d.join("two.jsonl");
    let text = import(&[&f], &out, &["--ts-unit", "iso"]).unwrap();
    let (_, evs) = read_tape_bytes(text.as_bytes()).unwrap();
    let count = |k: &dyn Fn(&TapeEvent) -> bool| evs.iter().filter(|e| k(e)).count() as u64;
    let (code, json, err) = kestrel(&["tape", "info", out.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("one JSON object");
    assert_eq!(v["name"], "two");
    assert_eq!(v["v"], 2);
    assert_eq!(v["tz"], "America/New_York");
    let ev = &v["events"];
    assert_eq!(ev["tick"], count(&|e| matches!(e, TapeEvent::Tick(_))));
    assert_eq!(ev["quote"], count(&|e| matches!(e, TapeEvent::Quote(_))));
    assert_eq!(
        ev["session"],
        count(&|e| matches!(e, TapeEvent::Session(_)))
    );
    assert_eq!(
        (ev["iv"].as_u64(), ev["headline"].as_u64()),
        (Some(0), Some(0))
    );
    for sym in ["SPY", "QQQ"] {
        let trades = count(&|e| matches!(e, TapeEvent::Tick(t) if t.sym.as_str() == sym));
        let quotes = count(
            &|e| matches!(e, TapeEvent::Quote(q) if matches!(&q.inst, QuoteInst::Sym(s) if s.as_str() == sym)),
        );
        assert_eq!(v["symbols"][sym]["trades"], trades, "{sym}");
        assert_eq!(v["symbols"][sym]["quotes"], quotes, "{sym}");
    }
    let s = v["sessions"].as_array().unwrap();
    assert_eq!(s.len(), 2);
    // Events per session: the events between the session lines.
    let at = evs
        .iter()
        .position(|e| matches!(e, TapeEvent::Session(_)))
        .unwrap();
    assert_eq!(s[0]["events"], at as u64);
    assert_eq!(s[1]["events"], (evs.len() - at - 1) as u64);
    assert_eq!(
        (s[0]["session"].as_u64(), s[0]["date"].as_str()),
        (Some(1), Some("2025-04-09"))
    );
    assert_eq!(
        (s[1]["session"].as_u64(), s[1]["date"].as_str()),
        (Some(2), Some("2025-04-10"))
    );
    assert_eq!(s[0]["first"], "09:30:00.000");
    assert_eq!(s[0]["last"], "15:59:59.000");
    assert_eq!(
        (s[0]["open"].as_str(), s[0]["close"].as_str()),
        (Some("09:30"), Some("16:00"))
    );
    // Session 1 is quiet from 09:30:01 to 12:00 and from 12:00 to 15:59:59.
    assert_eq!(s[0]["gap_count"], 2);
    assert_eq!(s[0]["gaps"][0]["from"], "12:00:00.000");
    assert_eq!(s[0]["gaps"][0]["ms"], (3 * 3600 + 59 * 60 + 59) * 1000);
    assert_eq!(v["options"]["prices"], "none");
    // The text form lists the same sessions.
    let (code, txt, _) = kestrel(&["tape", "info", out.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(txt.contains("sessions 2"), "{txt}");
    assert!(txt.contains("2 2025-04-10 09:30-16:00"), "{txt}");
}

/// OCC option symbols import as option quotes (CSV in the padded OSI form, DBN mbp-1 with
/// the compact form in its symbology), on a chain the flags declare (`--iv`; the strike
/// grid from `--strike-step` or the strikes); an option's trade is kept out and counted; the
/// tape reads back and its option quotes replace the model's book for those contracts.
#[test]
fn option_symbols_import_as_quoted_contracts() {
    use kestrel_desk::market::{
        Expiry, MarketState, Px, Right, TapeEvent, TapeReader, read_tape_bytes,
    };
    let d = dir("options");
    let f = d.join("opts.csv");
    std::fs::write(
        &f,
        concat!(
            "ts,symbol,price,size,bid,ask,bid_size,ask_size\n",
            "1744205400000000000,SPY,500.12,100,500.10,500.12,3,2\n",
            "1744205400100000000,SPY   250409C00500000,,,1.15,1.20,10,25\n",
            "1744205400200000000,SPY   250409P00495000,,,0,0.05,0,40\n",
            "1744205400300000000,SPY   250409C00500000,1.18,5,,,,\n",
            "1744228790000000000,SPY,501.00,10,,,,\n",
        ),
    )
    .unwrap();
    let out = d.join("o.jsonl");
    // Without --iv the chain has no smile: refused, naming the record.
    let err = import(&[&f], &out, &["--ts-unit", "ns"]).unwrap_err();
    assert!(
        err.contains("opts.csv record=2 ") && err.contains("--iv SPY="),
        "{err}"
    );
    assert!(!out.exists());
    let got = import(&[&f], &out, &["--ts-unit", "ns", "--iv", "SPY=0.18:-0.5"]).unwrap();
    let want = format!(
        "{{\"type\":\"header\",\"v\":2,\"name\":\"o\",\"date\":\"2025-04-09\",\"tz\":\"America/New_York\",\"open\":\"09:30\",\"close\":\"16:00\",\"symbols\":{{\"SPY\":{{\"prior_close\":500.12,\"strike_step\":5.00}}}},\"vol\":{{\"SPY\":{{\"atm_iv\":0.18,\"skew\":-0.5}}}},\"rate\":0.0,\"source\":\"import csv opts.csv\",\"tags\":{{\"date\":\"2025-04-09\",\"source\":\"import\"}}}}\n{}",
        concat!(
            "{\"type\":\"quote\",\"ts\":\"09:30:00.000\",\"sym\":\"SPY\",\"bid\":500.10,\"ask\":500.12,\"bsz\":3,\"asz\":2}\n",
            "{\"type\":\"tick\",\"ts\":\"09:30:00.000\",\"sym\":\"SPY\",\"px\":500.12,\"sz\":100}\n",
            "{\"type\":\"quote\",\"ts\":\"09:30:00.100\",\"sym\":\"SPY250409C00500000\",\"bid\":1.15,\"ask\":1.20,\"bsz\":10,\"asz\":25}\n",
            "{\"type\":\"quote\",\"ts\":\"09:30:00.200\",\"sym\":\"SPY250409P00495000\",\"bid\":0.00,\"ask\":0.05,\"bsz\":0,\"asz\":40}\n",
            "{\"type\":\"tick\",\"ts\":\"15:59:50.000\",\"sym\":\"SPY\",\"px\":501.00,\"sz\":10}\n",
        )
    );
    assert_eq!(got, want);
    // The tape reads; the quoted contracts' books are the tape's, the others the model's.
    let (h, evs) = read_tape_bytes(got.as_bytes()).unwrap();
    let mut st = MarketState::new(&h);
    for e in evs.iter().take(4) {
        st.apply(e);
    }
    let c500 = st
        .book_quote_sym(
            h.symbols[0].sym,
            Expiry::ZeroDte,
            Px(5_000_000),
            Right::Call,
        )
        .unwrap();
    assert_eq!((c500.bid, c500.ask), (Px(11_500), Px(12_000)));
    assert!(st.option_quoted("SPY", Expiry::ZeroDte, Px(5_000_000), Right::Call));
    assert!(!st.option_quoted("SPY", Expiry::ZeroDte, Px(5_050_000), Right::Call));
    // A grid given by flag; a strike off it is refused with its record.
    let err = import(
        &[&f],
        &d.join("g.jsonl"),
        &[
            "--ts-unit",
            "ns",
            "--iv",
            "SPY=0.18",
            "--strike-step",
            "SPY=2",
        ],
    )
    .unwrap_err();
    assert!(
        err.contains("record=3 ") && err.contains("not on the grid"),
        "{err}"
    );
    // DBN: mbp-1 of an option (its raw symbol the compact OCC form), bid undefined = no bid.
    let fd = d.join("opts.mbp-1.dbn");
    let md = metadata(Schema::Mbp1, &[("SPY", 1), ("SPY250409C00500000", 2)]);
    let mut none_bid = mbp1(2, T0 + 2 * SEC, b'A', 1.2, 1, (0.0, 1.25, 0, 9));
    none_bid.levels[0].bid_px = dbn::UNDEF_PRICE;
    write_dbn(
        &fd,
        &md,
        &[
            mbp1(1, T0, b'T', 500.12, 100, (500.10, 500.12, 3, 2)),
            mbp1(2, T0 + SEC, b'T', 1.18, 5, (1.15, 1.20, 10, 25)),
            none_bid,
            mbp1(1, T0 + 23_390 * SEC, b'A', 500.5, 1, (500.50, 500.55, 1, 1)),
        ],
        false,
    );
    let got = import(&[&fd], &d.join("od.jsonl"), &["--iv", "SPY=0.2"]).unwrap();
    let (h, evs) = read_tape_bytes(got.as_bytes()).unwrap();
    assert_eq!(h.symbols[0].strike_step, Some(Px(5_000_000)));
    let opt: Vec<String> = got
        .lines()
        .filter(|l| l.contains("SPY250409C00500000"))
        .map(str::to_string)
        .collect();
    assert_eq!(
        opt,
        [
            "{\"type\":\"quote\",\"ts\":\"09:30:01.000\",\"sym\":\"SPY250409C00500000\",\"bid\":1.15,\"ask\":1.20,\"bsz\":10,\"asz\":25}",
            "{\"type\":\"quote\",\"ts\":\"09:30:02.000\",\"sym\":\"SPY250409C00500000\",\"bid\":0.00,\"ask\":1.25,\"bsz\":0,\"asz\":9}",
        ]
    );
    // The option's print (action T) is not on the tape: SPY's is.
    let ticks = evs
        .iter()
        .filter(|e| matches!(e, TapeEvent::Tick(_)))
        .count();
    assert_eq!(ticks, 1);
    // `tape info` says the option prices are quoted.
    let (code, info, _) = kestrel(&[
        "tape",
        "info",
        d.join("od.jsonl").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(v["options"]["prices"], "quoted");
    assert_eq!(
        (
            v["options"]["quotes"].as_u64(),
            v["options"]["contracts"].as_u64()
        ),
        (Some(2), Some(1))
    );
    let r = TapeReader::new(got.as_bytes()).unwrap();
    assert_eq!(r.header().vol.len(), 1);
}

/// A non-US zone through the bundled tz database: London trades around the 2025 change to
/// summer time (30 March), ISO times without an offset, London hours given as a fixed
/// session by `--extended-hours`: the UTC instants and the tape's local times follow the
/// zone's own rule (08:00 London is 08:00 UTC on 28 March and 07:00 UTC on 31 March).
#[test]
fn a_london_import_follows_its_own_summer_time() {
    let d = dir("london");
    // The same trades twice: local ISO times in London, and epoch ns (UTC).
    let iso = d.join("lse-iso.csv");
    std::fs::write(
        &iso,
        concat!(
            "ts,symbol,price,size\n",
            "2025-03-28 08:00:00.000,VOD,70.10,100\n",
            "2025-03-28 19:59:00.000,VOD,70.20,100\n",
            "2025-03-31 08:00:00.000,VOD,70.30,100\n",
            "2025-03-31 19:59:30.000,VOD,70.40,100\n",
        ),
    )
    .unwrap();
    let ns = d.join("lse-ns.csv");
    // 2025-03-28 08:00 UTC, 19:59 UTC; 2025-03-31 07:00 UTC (08:00 BST), 18:59:30 UTC.
    std::fs::write(
        &ns,
        concat!(
            "ts,symbol,price,size\n",
            "1743148800000000000,VOD,70.10,100\n",
            "1743191940000000000,VOD,70.20,100\n",
            "1743404400000000000,VOD,70.30,100\n",
            "1743447570000000000,VOD,70.40,100\n",
        ),
    )
    .unwrap();
    let flags = |unit: &'static str| {
        vec![
            "--ts-unit",
            unit,
            "--tz",
            "Europe/London",
            "--extended-hours",
            "--name",
            "vod",
        ]
    };
    let a = import(&[&iso], &d.join("a.jsonl"), &flags("iso")).unwrap();
    let b = import(&[&ns], &d.join("b.jsonl"), &flags("ns")).unwrap();
    let body = |t: &str| t.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&a), body(&b));
    assert!(a.contains("\"tz\":\"Europe/London\""), "{a}");
    for (ts, px) in [
        ("08:00:00.000", "70.10"),
        ("19:59:00.000", "70.20"),
        ("08:00:00.000", "70.30"),
        ("19:59:30.000", "70.40"),
    ] {
        assert!(
            a.contains(&format!("\"ts\":\"{ts}\",\"sym\":\"VOD\",\"px\":{px}")),
            "{ts} {px}: {a}"
        );
    }
    assert!(
        a.contains("{\"type\":\"session\",\"date\":\"2025-03-31\""),
        "{a}"
    );
    // A zone the database does not know is refused, naming it.
    let err = import(
        &[&ns],
        &d.join("x.jsonl"),
        &["--ts-unit", "ns", "--tz", "Europe/Atlantis"],
    )
    .unwrap_err();
    assert!(err.contains("Europe/Atlantis"), "{err}");
}

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// `-o -` wrote a file named `-` while the summary said "into -"; it now writes the tape to
/// standard output, byte for byte the file `-o FILE` writes, the summary on stderr.
#[test]
fn import_to_dash_writes_the_tape_to_standard_output() {
    let d = dir("dash");
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/import/spy-mbp-1.dbn");
    let file = import(&[&sample], &d.join("t.jsonl"), &["--name", "t"]).unwrap();
    let (code, out, err) = kestrel(&["tape", "import", s(&sample), "-o", "-", "--name", "t"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out == file,
        "stdout differs from the file:\n{:.300}\n{:.300}",
        out,
        file
    );
    assert!(
        err.contains("imported ") && err.contains(" into standard output"),
        "{err}"
    );
    assert!(!Path::new("-").exists(), "no file named -");
    // Unnamed, the tape is named after its input, not "-".
    let (code, out, err) = kestrel(&["tape", "import", s(&sample), "-o", "-"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("{\"type\":\"header\",\"v\":2,\"name\":\"spy-mbp-1\""),
        "{out:.200}"
    );
}

/// DBN errors read as sentences: a cut zstd stream, a file cut inside its metadata and
/// metadata that is not UTF-8 showed `Custom { kind: InvalidData, .. }`, `Kind(UnexpectedEof)`
/// and `Utf8Error { .. }`, each after "not a DBN file", which is kept for files that are not.
#[test]
fn dbn_errors_are_sentences_and_not_a_dbn_file_only_when_it_is_not() {
    let d = dir("dbn-errors");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/import");
    let zst = std::fs::read(root.join("spy-trades.dbn.zst")).unwrap();
    let plain = std::fs::read(root.join("spy-mbp-1.dbn")).unwrap();
    let mut flipped = plain.clone();
    flipped[8] = 0xff;
    let cases: [(&str, Vec<u8>, &str); 5] = [
        (
            "cut.dbn.zst",
            zst[..zst.len() - 200].to_vec(),
            "record=0 message=truncated: the zstd stream is cut short inside its metadata (an incomplete frame); fetch the file whole",
        ),
        (
            "meta.dbn",
            plain[..100].to_vec(),
            "record=0 message=truncated: the file ends inside its metadata (cut short?); fetch it whole",
        ),
        (
            "utf8.dbn",
            flipped,
            "record=0 message=the metadata is not valid UTF-8 at byte 0 of its dataset",
        ),
        (
            "text.dbn",
            b"hello, not a DBN file at all\n".to_vec(),
            "record=0 message=not a DBN file (it does not start with the DBN prefix)",
        ),
        (
            "empty.dbn",
            Vec::new(),
            "record=0 message=the file is empty: not a DBN file",
        ),
    ];
    for (name, bytes, want) in cases {
        let f = d.join(name);
        std::fs::write(&f, &bytes).unwrap();
        let err = import(&[&f], &d.join("o.jsonl"), &[]).unwrap_err();
        assert!(err.contains(want), "{name}: {err}");
        for debug in ["Custom {", "Kind(", "Utf8Error", "IO error"] {
            assert!(!err.contains(debug), "{name}: {err}");
        }
        if name != "text.dbn" && name != "empty.dbn" {
            assert!(!err.contains("not a DBN file"), "{name}: {err}");
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A price too large was "not a plain decimal number", a size too large "not a non-negative
/// integer"; an empty timestamp was "not a count of S since the Unix epoch".
#[test]
fn csv_messages_say_what_is_wrong() {
    let d = dir("csv-messages");
    let f = d.join("big.csv");
    std::fs::write(
        &f,
        "ts,symbol,price,size\n1744205400000,SPY,99999999999999.99,1\n",
    )
    .unwrap();
    let err = import(&[&f], &d.join("o.jsonl"), &["--ts-unit", "ms"]).unwrap_err();
    assert!(
        err.contains(
            "price \"99999999999999.99\" is too large: a tape price is at most 100000000000 (10^11)"
        ),
        "{err}"
    );
    // A size too large for any tape (it was "not a non-negative integer"); a bid size too.
    let f = d.join("big-size.csv");
    std::fs::write(
        &f,
        "ts,symbol,price,size\n1744205400000,SPY,500.12,99999999999999999999999\n",
    )
    .unwrap();
    let err = import(&[&f], &d.join("o.jsonl"), &["--ts-unit", "ms"]).unwrap_err();
    assert!(
        err.contains("record=1 message=size \"99999999999999999999999\" is too large: a size is at most 18446744073709551615 (2^64 - 1)"),
        "{err}"
    );
    std::fs::write(
        &f,
        "ts,symbol,price,size,bid,ask,bid_size,ask_size\n1744205401000,SPY,,,500.10,500.12,18446744073709551616,1\n",
    )
    .unwrap();
    let err = import(&[&f], &d.join("o.jsonl"), &["--ts-unit", "ms"]).unwrap_err();
    assert!(
        err.contains("record=1 message=bid size \"18446744073709551616\" is too large"),
        "{err}"
    );
    std::fs::write(&f, "ts,symbol,price,size\n1744205400000,SPY,500.12,-5\n").unwrap();
    let err = import(&[&f], &d.join("o.jsonl"), &["--ts-unit", "ms"]).unwrap_err();
    assert!(
        err.contains("size \"-5\" is not a non-negative integer"),
        "{err}"
    );
    let f = d.join("empty-ts.csv");
    std::fs::write(&f, "ts,symbol,price,size\n,SPY,500.12,1\n").unwrap();
    for (unit, want) in [
        (
            "s",
            "the timestamp field is empty (expected a count of seconds since the Unix epoch (--ts-unit s))",
        ),
        ("iso", "the timestamp field is empty (expected YYYY-MM-DD"),
    ] {
        let err = import(&[&f], &d.join("o.jsonl"), &["--ts-unit", unit]).unwrap_err();
        assert!(err.contains(want), "{unit}: {err}");
    }
    let f = d.join("bad-ts.csv");
    std::fs::write(&f, "ts,symbol,price,size\nnoon,SPY,500.12,1\n").unwrap();
    let err = import(&[&f], &d.join("o.jsonl"), &["--ts-unit", "ms"]).unwrap_err();
    assert!(
        err.contains("timestamp \"noon\" is not a count of milliseconds since the Unix epoch"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// An import that keeps nothing said `file=-` (no input was standard input) and listed every
/// filter it might have been; it names the input (none when several: the refusal is of all
/// of them) and says which filter dropped how many records.
#[test]
fn an_import_that_keeps_nothing_names_its_input_and_the_filter() {
    let d = dir("nothing-kept");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/import");
    let csv = root.join("spy-trades-quotes.csv");
    let mbp = root.join("spy-mbp-1.dbn");
    let out = d.join("o.jsonl");
    let err = import(&[&csv], &out, &["--ts-unit", "ns", "--symbols", "QQQ"]).unwrap_err();
    assert_eq!(
        err,
        format!(
            "error code=IMPORT file={} record=0 message=no record is kept: of the 301 records read, 301 are on symbols not in --symbols QQQ (the input's: SPY)\n",
            csv.display()
        )
    );
    let head = d.join("head.csv");
    std::fs::write(&head, "ts,symbol,price,size\n").unwrap();
    let err = import(&[&head], &out, &["--ts-unit", "ns"]).unwrap_err();
    assert!(
        err.contains(&format!(
            "file={} record=0 message=nothing to import: the file holds no records",
            head.display()
        )),
        "{err}"
    );
    let err = import(&[&mbp], &out, &["--from", "2030-01-01"]).unwrap_err();
    assert!(
        err.contains("record=0 message=no record is kept: of the 301 records read, 301 are on dates outside --from 2030-01-01 (their date: 2025-04-09)"),
        "{err}"
    );
    let err = import(&[&mbp], &out, &["--tz", "Asia/Tokyo"]).unwrap_err();
    assert!(
        err.contains("301 fall outside the regular hours 09:30-16:00 in Asia/Tokyo (--extended-hours keeps 04:00-20:00)"),
        "{err}"
    );
    let err = import(&[&mbp], &out, &["--session-filter", "2025-04-10"]).unwrap_err();
    assert!(
        err.contains(
            "301 are on dates not in --session-filter 2025-04-10 (their date: 2025-04-09)"
        ),
        "{err}"
    );
    // Two inputs: the refusal is of both, without a file.
    let err = import(
        &[&csv, &mbp],
        &out,
        &["--ts-unit", "ns", "--symbols", "QQQ"],
    )
    .unwrap_err();
    assert_eq!(
        err,
        "error code=IMPORT message=no record is kept: of the 602 records read, 602 are on symbols not in --symbols QQQ (the input's: SPY)\n"
    );
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&d);
}

/// The summary said `imported 602 of 602 records` of a CSV of 301 rows (each a quote and a
/// trade) and `580 of 580` of a DBN file of 301 records: it counted events as records. It
/// counts input records (CSV data rows, DBN records), those kept (with an event on the
/// tape) and the events written apart.
#[test]
fn the_summary_counts_input_records_and_events_apart() {
    let d = dir("summary");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/import");
    let summary = |files: &[&Path], flags: &[&str]| -> String {
        let out = d.join("s.jsonl");
        let mut args = vec!["tape", "import"];
        args.extend(files.iter().map(|p| s(p)));
        args.extend_from_slice(&["-o", s(&out)]);
        args.extend_from_slice(flags);
        let (code, _, err) = kestrel(&args);
        assert_eq!(code, 0, "{err}");
        let tape = std::fs::read_to_string(&out).unwrap();
        let events = tape
            .lines()
            .filter(|l| l.starts_with("{\"type\":\"tick\"") || l.starts_with("{\"type\":\"quote\""))
            .count();
        assert!(err.contains(&format!(" as {events} events into ")), "{err}");
        err.replace(s(&out), "OUT")
    };
    let csv = root.join("spy-trades-quotes.csv");
    assert_eq!(
        summary(&[&csv], &["--ts-unit", "ns"]),
        "imported 301 records (301 kept) as 602 events into OUT (1 session, symbols SPY)\n"
    );
    let mbp = root.join("spy-mbp-1.dbn");
    assert_eq!(
        summary(&[&mbp], &[]),
        "imported 301 records (301 kept) as 580 events into OUT (1 session, symbols SPY)\n"
    );
    let bars = root.join("spy-ohlcv-1m.dbn");
    assert_eq!(
        summary(&[&bars], &[]),
        "imported 6 records (6 kept) as 24 events into OUT (1 session, symbols SPY)\n"
    );
    // Two inputs: the records of both. (Until 2026-12-06 this imported the CSV sample with
    // the mbp-1 sample, `602 records (602 kept) as 1182 events`: the two hold the same
    // trades and quotes, every volume doubled, which is now refused; the trades sample and
    // the CSV's quotes alone are two inputs of different records.)
    let quotes = d.join("quotes.csv");
    let rows: Vec<String> = std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            format!("{},SPY,{},{}\n", c[0], c[4], c[5])
        })
        .collect();
    std::fs::write(&quotes, format!("ts,symbol,bid,ask\n{}", rows.concat())).unwrap();
    let trades = root.join("spy-trades.dbn.zst");
    assert_eq!(
        summary(&[&trades, &quotes], &["--ts-unit", "ns"]),
        "imported 602 records (602 kept) as 602 events into OUT (1 session, symbols SPY)\n"
    );
    // A row outside the hours and an option's trade are read, not kept; a row with a quote
    // and a trade is one record kept, two events.
    let f = d.join("mixed.csv");
    std::fs::write(
        &f,
        concat!(
            "ts,symbol,price,size,bid,ask,bid_size,ask_size\n",
            "1744205340000000000,SPY,500.00,1,,,,\n",
            "1744205400000000000,SPY,500.12,100,500.10,500.12,3,2\n",
            "1744205400100000000,SPY   250409C00500000,,,1.15,1.20,10,25\n",
            "1744205400300000000,SPY   250409C00500000,1.18,5,,,,\n",
            "1744228790000000000,SPY,501.00,10,,,,\n",
        ),
    )
    .unwrap();
    // (Since 2026-12-06 the line after the summary says what was dropped and why.)
    assert_eq!(
        summary(&[&f], &["--ts-unit", "ns", "--iv", "SPY=0.2"]),
        concat!(
            "imported 5 records (3 kept) as 4 events into OUT (1 session, symbols SPY; option quotes 1 on 1 contracts, option trades kept out 1)\n",
            "dropped 2 of 5 records: 1 fall outside the regular hours 09:30-16:00 in America/New_York (--extended-hours keeps 04:00-20:00); 1 are option trades (a tape has no option prints)\n"
        )
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// `--prior QQQ=1` for an input without QQQ was ignored without a word (so were `--iv` and
/// `--strike-step`): each per-symbol flag naming a symbol the tape does not have is refused
/// as a usage error naming it, and no tape is written.
#[test]
fn a_per_symbol_flag_for_a_symbol_not_on_the_tape_is_refused() {
    let d = dir("flag-symbols");
    let csv = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/import/spy-trades-quotes.csv");
    let out = d.join("o.jsonl");
    for (flag, value) in [
        ("--prior", "QQQ=1"),
        ("--iv", "QQQ=0.2"),
        ("--strike-step", "QQQ=1"),
    ] {
        let err = import(&[&csv], &out, &["--ts-unit", "ns", flag, value]).unwrap_err();
        assert_eq!(
            err,
            format!(
                "error code=USAGE message={flag} names QQQ, which is not on the tape (no record of it is kept; the tape's symbols: SPY)\n"
            )
        );
        assert!(!out.exists());
    }
    // In the input but not kept (--symbols leaves it out): not on the tape either.
    let f = d.join("two.dbn");
    write_dbn(
        &f,
        &metadata(Schema::Trades, &[("SPY", 1), ("QQQ", 2)]),
        &[
            trade(1, T0, 500.12, 100),
            trade(2, T0 + SEC, 430.05, 50),
            trade(1, T0 + 23_390 * SEC, 501.00, 10),
        ],
        false,
    );
    let err = import(&[&f], &out, &["--symbols", "SPY", "--prior", "QQQ=430"]).unwrap_err();
    assert!(
        err.starts_with("error code=USAGE message=--prior names QQQ, which is not on the tape"),
        "{err}"
    );
    // A symbol on the tape takes the flag.
    let got = import(&[&f], &out, &["--prior", "QQQ=430", "--prior", "SPY=499.5"]).unwrap();
    assert!(
        got.contains(
            "\"symbols\":{\"QQQ\":{\"prior_close\":430.00},\"SPY\":{\"prior_close\":499.50}}"
        ),
        "{got}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A damaged DBN file was called cut short: one byte flipped at offset 3000 of the mbp-1
/// sample (record 34's length byte: 80 bytes read as 940) made the decoder read on at a
/// misaligned offset (a debug build panicked in the `dbn` crate) until a length ran past the
/// end: `truncated: the file ends inside record 77 (340 of its bytes are there)`. A record
/// whose length header no DBN record has, or not its type's, or of a type the file cannot
/// hold, is refused as corrupt, naming it; a file cut inside its last record is still
/// `truncated`.
#[test]
fn a_damaged_dbn_file_is_called_corrupt_not_truncated() {
    let d = dir("dbn-corrupt");
    let src =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/import/spy-mbp-1.dbn"))
            .unwrap();
    let meta = 8 + u32::from_le_bytes([src[4], src[5], src[6], src[7]]) as usize;
    let rec = |n: usize| meta + (n - 1) * 80;
    assert_eq!(rec(34), 3000);
    let flip = |at: usize, f: &dyn Fn(u8) -> u8| {
        let mut b = src.clone();
        b[at] = f(b[at]);
        b
    };
    let damaged = "; the file is damaged, not cut short: fetch it again";
    let cases: [(&str, Vec<u8>, String); 6] = [
        (
            "flip.dbn",
            flip(3000, &|b| !b),
            format!("record=34 message=corrupt: record 34's length header says 940 bytes, which no DBN record has (a whole number of 8-byte words, at least 16){damaged}"),
        ),
        (
            "len88.dbn",
            flip(rec(27), &|_| 22),
            format!("record=27 message=corrupt: record 27's length header says 88 bytes where an mbp-1 record has 80{damaged}"),
        ),
        (
            // Shorter than its type: the `dbn` crate's `get` panics on it.
            "len16.dbn",
            flip(rec(27), &|_| 4),
            format!("record=27 message=corrupt: record 27's length header says 16 bytes where an mbp-1 record has 80{damaged}"),
        ),
        (
            "len0.dbn",
            flip(rec(27), &|_| 0),
            "record=27 message=corrupt: record 27's length header says 0 bytes, which no DBN record has".to_string(),
        ),
        (
            "rtype.dbn",
            flip(rec(27) + 1, &|_| 0xfe),
            format!("record=27 message=corrupt: record 27 has record type 0xfe, neither the file's schema's (mbp-1) nor that of a system, error or symbol-mapping record{damaged}"),
        ),
        (
            // The last record's length runs past the end: not a record cut short either.
            "last.dbn",
            flip(rec(301), &|_| 84),
            format!("record=301 message=corrupt: record 301's length header says 336 bytes where an mbp-1 record has 80 (the file holds 80 bytes from its start){damaged}"),
        ),
    ];
    for (name, bytes, want) in cases {
        assert_eq!(bytes.len(), src.len());
        let f = d.join(name);
        std::fs::write(&f, &bytes).unwrap();
        let out = d.join("o.jsonl");
        let err = import(&[&f], &out, &[]).unwrap_err();
        assert!(err.starts_with("error code=IMPORT "), "{name}: {err}");
        assert!(err.contains(&want), "{name}: {err}");
        assert!(!err.contains("truncated"), "{name}: {err}");
        assert!(!out.exists());
    }
    // The same inside a zstd stream (the framing is followed in the decompressed bytes).
    let f = d.join("flip.dbn.zst");
    std::fs::write(&f, zstd::encode_all(&flip(3000, &|b| !b)[..], 3).unwrap()).unwrap();
    let err = import(&[&f], &d.join("o.jsonl"), &[]).unwrap_err();
    assert!(
        err.contains("record=34 message=corrupt: record 34's length header says 940 bytes"),
        "{err}"
    );
    // Cut inside its last record: truncated, as before.
    let f = d.join("cut.dbn");
    std::fs::write(&f, &src[..rec(301) + 40]).unwrap();
    let err = import(&[&f], &d.join("o.jsonl"), &[]).unwrap_err();
    assert!(
        err.contains("record=301 message=truncated: the file ends inside record 301 (40 of its bytes are there); fetch it whole"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The names in `d`, sorted (to see that no temporary file is left).
fn names(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A spawned import's exit code and stderr, or a panic (after killing it) when it has not
/// ended within 20 s: an import that blocks on an input must fail the test, not hang it.
fn finish(mut child: std::process::Child, d: &Path) -> (i32, String) {
    let t = std::time::Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if t.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the import blocked; files: {:?}", names(d));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// An import reads its inputs twice. A FIFO given as an input hung it for ever on the second
/// open (on the first, when nothing wrote into it), with a 0-byte `.out.jsonl.tmp-PID`
/// beside the output and SIGTERM unheeded while it waited; a piped `/dev/stdin` read as empty
/// the second time (`no column "ts" in the header row ()`). An input that is not a regular
/// file is refused before anything is opened or written.
#[cfg(unix)]
#[test]
fn an_input_that_is_not_a_regular_file_is_refused_before_anything_is_written() {
    use std::io::Write;
    use std::process::Stdio;
    let d = dir("stream-input");
    let fifo = d.join("in.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let out = d.join("out.jsonl");
    let why = "tape import reads each input twice (a first pass checks every record and learns the sessions, a second writes the tape), so an input must be a regular file: save it to one first";
    // Nothing ever writes into the FIFO: an import that opens it blocks.
    let child = Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args(["tape", "import", s(&fifo), "--format", "csv"])
        .args(["--ts-unit", "ns", "-o", s(&out)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let (code, err) = finish(child, &d);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        err,
        format!(
            "error code=USAGE message={} is a pipe or a device: {why}\n",
            fifo.display()
        )
    );
    assert_eq!(names(&d), ["in.fifo"]);
    // A directory is not a file to import either (it was `cannot read the header row: Is a
    // directory (os error 21)`).
    let err = import(&[&d], &out, &["--format", "csv", "--ts-unit", "ns"]).unwrap_err();
    assert_eq!(
        err,
        format!(
            "error code=USAGE message={} is a directory, not a CSV or DBN file\n",
            d.display()
        )
    );
    // Standard input through a pipe, by its name or as `-`.
    let csv = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/import/spy-trades-quotes.csv"),
    )
    .unwrap();
    for (input, shown) in [
        ("/dev/stdin", "/dev/stdin is a pipe or a device"),
        ("-", "- (standard input) is not a file"),
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kestrel"))
            .args(["tape", "import", input, "--format", "csv"])
            .args(["--ts-unit", "ns", "-o", s(&out)])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        // From a thread: the import ends without reading it.
        let mut stdin = child.stdin.take().expect("stdin");
        let bytes = csv.clone();
        let w = std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
        let (code, err) = finish(child, &d);
        let _ = w.join();
        assert_eq!(code, 1, "{input}: {err}");
        assert_eq!(
            err,
            format!("error code=USAGE message={shown}: {why}\n"),
            "{input}"
        );
        assert_eq!(names(&d), ["in.fifo"], "{input}");
    }
    // A file redirected into standard input is a regular file: read twice, imported.
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/import/spy-trades-quotes.csv");
    let o = Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args(["tape", "import", "/dev/stdin", "--format", "csv"])
        .args(["--ts-unit", "ns", "-o", s(&out), "--name", "spy"])
        .stdin(std::fs::File::open(&file).unwrap())
        .output()
        .expect("kestrel runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let direct = import(
        &[&file],
        &d.join("direct.jsonl"),
        &["--ts-unit", "ns", "--name", "spy"],
    )
    .unwrap();
    let via_stdin = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        via_stdin.lines().skip(1).collect::<Vec<_>>(),
        direct.lines().skip(1).collect::<Vec<_>>()
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The importer took prices up to 999999999999.9999 (docs/tapes.md said so) while the tape
/// reader refuses any above 10^11, so an import wrote tapes that `tape info`, `run` and
/// `frame` could not read. Both now hold the reader's limit, in the same words.
#[test]
fn the_importer_refuses_the_prices_the_reader_refuses_and_writes_those_it_reads() {
    let d = dir("price-limit");
    let f = d.join("p.csv");
    let out = d.join("p.jsonl");
    let limit = "is too large: a tape price is at most 100000000000 (10^11)";
    for px in [
        "123456789012.3456",
        "100000000000.0001",
        "999999999999.9999",
    ] {
        std::fs::write(&f, format!("ts,symbol,price,size\n1744205400,SPY,{px},1\n")).unwrap();
        let err = import(&[&f], &out, &["--ts-unit", "s"]).unwrap_err();
        assert!(
            err.contains(&format!("record=1 message=price \"{px}\" {limit}")),
            "{px}: {err}"
        );
        assert!(!out.exists(), "{px}");
    }
    let err = import(
        &[&f],
        &out,
        &["--ts-unit", "s", "--prior", "SPY=100000000001"],
    )
    .unwrap_err();
    assert!(
        err.contains(&format!("--prior: price \"100000000001\" {limit}")),
        "{err}"
    );
    // At the limit and under it: imported, and read back by `tape info`.
    for px in ["100000000000", "99999999999.9999"] {
        std::fs::write(&f, format!("ts,symbol,price,size\n1744205400,SPY,{px},1\n")).unwrap();
        import(&[&f], &out, &["--ts-unit", "s"]).expect(px);
        let (code, info, err) = kestrel(&["tape", "info", s(&out)]);
        assert_eq!(code, 0, "{px}: {err}");
        assert!(
            info.contains("symbols SPY (trades 1, quotes 0)"),
            "{px}: {info}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `tape import X.csv X.csv` imported every record twice (the volume doubled) without a
/// word. The same input given twice, by any path to it, is refused naming it.
#[test]
fn the_same_input_given_twice_is_refused_naming_it() {
    let d = dir("twice");
    let a = d.join("a.csv");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/import/spy-trades-quotes.csv"),
        &a,
    )
    .unwrap();
    std::fs::create_dir_all(d.join("sub")).unwrap();
    let other = d.join("sub/../a.csv");
    let out = d.join("o.jsonl");
    let again = "its records would be imported twice (every volume doubled): give each input once";
    let err = import(&[&a, &a], &out, &["--ts-unit", "ns"]).unwrap_err();
    assert_eq!(
        err,
        format!(
            "error code=USAGE message={} is given twice as an input: {again}\n",
            a.display()
        )
    );
    let err = import(&[&a, &other], &out, &["--ts-unit", "ns"]).unwrap_err();
    assert_eq!(
        err,
        format!(
            "error code=USAGE message={} is the input {} again: {again}\n",
            other.display(),
            a.display()
        )
    );
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&d);
}

/// A CSV header naming a column twice (`ts,symbol,price,size,price`) was read with the first
/// without a word; an empty file said ``no column "ts" in the header row ()``.
#[test]
fn a_column_named_twice_and_an_empty_csv_are_refused_saying_so() {
    let d = dir("csv-header");
    let f = d.join("h.csv");
    let out = d.join("o.jsonl");
    std::fs::write(
        &f,
        "ts,symbol,price,size,price\n1744205400,SPY,500.12,1,501.00\n",
    )
    .unwrap();
    let err = import(&[&f], &out, &["--ts-unit", "s"]).unwrap_err();
    assert_eq!(
        err,
        format!(
            "error code=IMPORT file={} record=0 message=the header row names column \"price\" twice (columns 3 and 5): which one is meant is not clear, so neither is read; rename or remove one\n",
            f.display()
        )
    );
    // Named by a flag, with spaces around it.
    std::fs::write(
        &f,
        "Time,symbol,price,size, Time \n1744205400,SPY,500.12,1,x\n",
    )
    .unwrap();
    let err = import(&[&f], &out, &["--ts-unit", "s", "--ts-col", "Time"]).unwrap_err();
    assert!(
        err.contains("message=the header row names column \"Time\" twice (columns 1 and 5)"),
        "{err}"
    );
    // A column the import does not read may repeat.
    std::fs::write(
        &f,
        "ts,symbol,price,size,venue,venue\n1744205400,SPY,500.12,1,X,Y\n",
    )
    .unwrap();
    import(&[&f], &out, &["--ts-unit", "s"]).expect("an unread column repeated");
    std::fs::remove_file(&out).unwrap();
    for (name, text) in [("empty.csv", ""), ("blank.csv", "\n\n")] {
        let f = d.join(name);
        std::fs::write(&f, text).unwrap();
        let err = import(&[&f], &out, &["--ts-unit", "s"]).unwrap_err();
        assert_eq!(
            err,
            format!(
                "error code=IMPORT file={} record=0 message=nothing to import: the file is empty (no header row, no records)\n",
                f.display()
            ),
            "{name}"
        );
        assert!(!out.exists());
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Run `tape import FILES -o OUT FLAGS`: the exit code and stderr (warnings, summary or
/// refusal).
fn import_stderr(files: &[&Path], out: &Path, flags: &[&str]) -> (i32, String) {
    let mut args: Vec<String> = vec!["tape".into(), "import".into()];
    args.extend(files.iter().map(|p| p.display().to_string()));
    args.extend(["-o".to_string(), out.display().to_string()]);
    args.extend(flags.iter().map(|s| s.to_string()));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, err) = kestrel(&a);
    (code, err)
}

/// `--symbol SPY` on a file whose symbol column holds SPY and QQQ wrote every row as SPY
/// (QQQ's prices became SPY prints, exit 0). A symbol column that names another symbol
/// than `--symbol` is refused (code USAGE, the record, the column and its value, the
/// flags to use); one that agrees, or is empty, imports as before.
#[test]
fn symbol_flag_on_a_file_of_other_symbols_is_refused_not_renamed() {
    let d = dir("symbol-flag");
    let mixed = d.join("mixed.csv");
    std::fs::write(
        &mixed,
        concat!(
            "ts,symbol,price,size\n",
            "2025-03-07T09:30:00,SPY,500.00,100\n",
            "2025-03-07T09:30:00,QQQ,400.00,100\n",
            "2025-03-07T15:59:30,SPY,500.01,1\n",
        ),
    )
    .unwrap();
    let out = d.join("o.jsonl");
    let (code, err) = import_stderr(&[&mixed], &out, &["--ts-unit", "iso", "--symbol", "SPY"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("error code=USAGE file=")
            && err.contains("mixed.csv record=2 message=--symbol SPY is given, but the file's \"symbol\" column says \"QQQ\" on this row")
            && err.contains("give --symbols SPY instead"),
        "{err}"
    );
    assert!(!out.exists());
    // Under another name (--symbol-col) too.
    let t = d.join("ticker.csv");
    std::fs::write(
        &t,
        "ts,Ticker,price,size\n2025-03-07T09:30:00,QQQ,400.00,100\n",
    )
    .unwrap();
    let (code, err) = import_stderr(
        &[&t],
        &out,
        &[
            "--ts-unit",
            "iso",
            "--symbol",
            "SPY",
            "--symbol-col",
            "Ticker",
        ],
    );
    assert!(
        code == 1 && err.contains("record=1 message=--symbol SPY is given, but the file's \"Ticker\" column says \"QQQ\""),
        "{err}"
    );
    // --symbols filters the same file, reading the column.
    let got = import(&[&mixed], &out, &["--ts-unit", "iso", "--symbols", "SPY"]).unwrap();
    assert!(!got.contains("400.00"), "{got}");
    // A column that agrees with --symbol, or is empty, takes it.
    let agree = d.join("agree.csv");
    std::fs::write(
        &agree,
        concat!(
            "ts,symbol,price,size\n",
            "2025-03-07T09:30:00,SPY,500.00,100\n",
            "2025-03-07T15:59:30,,500.01,1\n",
        ),
    )
    .unwrap();
    let got = import(&[&agree], &out, &["--ts-unit", "iso", "--symbol", "SPY"]).unwrap();
    assert_eq!(got.matches("\"sym\":\"SPY\"").count(), 2, "{got}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Refusals quote the input as the file writes it: an out-of-order ISO row gave its time in
/// epoch nanoseconds; an impossible date or time was "not YYYY-MM-DD…" though in that
/// format; `--type-col` quoted the value lowercased and left `nbbo` out of the words it
/// accepts.
#[test]
fn refusals_quote_times_dates_and_types_as_written() {
    let d = dir("as-written");
    let out = d.join("o.jsonl");
    let f = d.join("ooo.csv");
    std::fs::write(
        &f,
        concat!(
            "ts,symbol,price,size\n",
            "2025-03-07T09:33:00,SPY,500.00,1\n",
            "2025-03-07T09:32:30,SPY,500.01,1\n",
        ),
    )
    .unwrap();
    let err = import(&[&f], &out, &["--ts-unit", "iso"]).unwrap_err();
    assert!(
        err.contains("record=2 message=out-of-order: the record's time (2025-03-07 09:32:30.000) is earlier than record 1's (2025-03-07 09:33:00.000), in America/New_York;"),
        "{err}"
    );
    // Apart by less than a millisecond: to the nanosecond.
    std::fs::write(
        &f,
        "ts,symbol,price,size\n1741357980000000700,SPY,500.00,1\n1741357980000000500,SPY,500.01,1\n",
    )
    .unwrap();
    let err = import(&[&f], &out, &["--ts-unit", "ns"]).unwrap_err();
    assert!(
        err.contains("(2025-03-07 09:33:00.000000500) is earlier than record 1's (2025-03-07 09:33:00.000000700)"),
        "{err}"
    );
    for (ts, want) in [
        (
            "2025-02-30T10:00:00",
            "timestamp \"2025-02-30T10:00:00\": there is no date 2025-02-30",
        ),
        (
            "2025-03-07T24:00:00",
            "timestamp \"2025-03-07T24:00:00\": there is no time 24:00:00 (hours run from 00 to 23",
        ),
    ] {
        std::fs::write(&f, format!("ts,symbol,price,size\n{ts},SPY,500.00,1\n")).unwrap();
        let err = import(&[&f], &out, &["--ts-unit", "iso"]).unwrap_err();
        assert!(err.contains(want) && !err.contains("is not YYYY"), "{err}");
    }
    std::fs::write(
        &f,
        "ts,symbol,type,price,size,bid,ask\n2025-03-07T09:30:00,SPY,FOO,500.00,1,,\n",
    )
    .unwrap();
    let err = import(&[&f], &out, &["--ts-unit", "iso", "--type-col", "type"]).unwrap_err();
    assert!(
        err.contains("type \"FOO\" is neither a trade (trade, trades, t, print) nor a quote (quote, quotes, q, bbo, nbbo), in any case"),
        "{err}"
    );
    // Every word listed is accepted.
    std::fs::write(
        &f,
        concat!(
            "ts,symbol,type,price,size,bid,ask\n",
            "2025-03-07T09:30:00,SPY,NBBO,,,499.99,500.01\n",
            "2025-03-07T15:59:30,SPY,Print,500.00,1,,\n",
        ),
    )
    .unwrap();
    let got = import(&[&f], &out, &["--ts-unit", "iso", "--type-col", "type"]).unwrap();
    assert!(
        got.contains("\"type\":\"quote\"") && got.contains("\"type\":\"tick\""),
        "{got}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// An option quote with an ask of 0 (how vendors write "no offer") was refused as "ask:
/// price "0" is not positive", though a book without an ask is skipped (DBN) and a bid of 0
/// is "no bid". It is skipped, as a one-sided book; a stock's ask of 0 is still refused.
#[test]
fn an_option_quote_without_an_offer_is_skipped() {
    let d = dir("ask-zero");
    let f = d.join("opts.csv");
    std::fs::write(
        &f,
        concat!(
            "ts,symbol,price,size,bid,ask,bid_size,ask_size\n",
            "1744205400000000000,SPY,500.12,100,,,,\n",
            "1744205400100000000,SPY   250409C00500000,,,1.15,1.20,10,25\n",
            "1744205400200000000,SPY   250409P00450000,,,0.05,0,3,0\n",
            "1744205400300000000,SPY   250409P00445000,,,0,0,0,0\n",
            "1744228790000000000,SPY,501.00,10,,,,\n",
        ),
    )
    .unwrap();
    let out = d.join("o.jsonl");
    let (code, err) = import_stderr(&[&f], &out, &["--ts-unit", "ns", "--iv", "SPY=0.18"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("imported 5 records (3 kept) as 3 events"),
        "{err}"
    );
    let got = std::fs::read_to_string(&out).unwrap();
    assert!(
        !got.contains("P00450000") && !got.contains("P00445000"),
        "{got}"
    );
    assert!(got.contains("SPY250409C00500000"), "{got}");
    std::fs::write(
        &f,
        "ts,symbol,price,size,bid,ask\n1744205400000000000,SPY,,,500.10,0\n",
    )
    .unwrap();
    let err = import(&[&f], &out, &["--ts-unit", "ns"]).unwrap_err();
    assert!(err.contains("ask: price \"0\" is not positive"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A DBN file cut exactly on a record boundary imported silently as a short session; a
/// price a thousand times off its neighbours silently became a print (and the prior close).
/// Both import, with a warning naming the record; a file whose records reach its query's
/// end, or the close, gets none.
#[test]
fn a_dbn_file_ending_before_its_query_and_a_wild_print_are_warned_of() {
    let d = dir("warn-dbn");
    let recs: Vec<TradeMsg> = (0..60)
        .map(|i| trade(1, T0 + i * SEC, 500.0 + (i % 3) as f64 * 0.01, 10))
        .collect();
    let mut md = metadata(Schema::Trades, &[("SPY", 1)]);
    // The query ran to 16:00 New York; the records stop at 09:30:59.
    md.end = std::num::NonZeroU64::new(T0 + 23_400 * SEC);
    let cut = d.join("cut.dbn");
    write_dbn(&cut, &md, &recs, false);
    let out = d.join("o.jsonl");
    let (code, err) = import_stderr(&[&cut], &out, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning code=SHORT-FILE file=")
            && err.contains("cut.dbn record=60 message=the file's records stop at 2025-04-09 09:30:59.000 (record 60), but its metadata says the query ran to 2025-04-09 16:00:00.000 (America/New_York)"),
        "{err}"
    );
    assert!(err.contains("imported 60 records"), "{err}");
    // A query ending at midnight UTC, records to the close: whole, no warning.
    let mut recs2 = recs.clone();
    recs2.push(trade(1, T0 + 23_390 * SEC, 500.0, 1));
    md.end = std::num::NonZeroU64::new(T0 + 10 * 3600 * SEC);
    let whole = d.join("whole.dbn");
    write_dbn(&whole, &md, &recs2, false);
    let (code, err) = import_stderr(&[&whole], &out, &[]);
    assert!(code == 0 && !err.contains("warning"), "{err}");
    // Without an end in the metadata: nothing to compare, no warning.
    let (code, err) = import_stderr(
        &[&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/import/spy-mbp-1.dbn")],
        &out,
        &[],
    );
    assert!(code == 0 && !err.contains("warning"), "{err}");
    // A bad print: warned of going there and coming back, naming both records.
    let f = d.join("jump.csv");
    std::fs::write(
        &f,
        concat!(
            "ts,symbol,price,size\n",
            "1744205400000,SPY,500.00,1\n",
            "1744205401000,SPY,.5,1\n",
            "1744205402000,SPY,500.01,1\n",
            "1744205403000,SPY,450.00,1\n",
            "1744228790000,SPY,501.00,1\n",
        ),
    )
    .unwrap();
    let (code, err) = import_stderr(&[&f], &out, &["--ts-unit", "ms"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning code=PRICE-JUMP file=")
            && err.contains("jump.csv record=2 message=SPY trades at 0.50, -99.9% from its previous trade at 500.00 (record 1)"),
        "{err}"
    );
    assert!(
        err.contains("jump.csv record=3 message=SPY trades at 500.01, +99902.0% from its previous trade at 0.50 (record 2)"),
        "{err}"
    );
    // 10% is a move, not a bad print.
    assert_eq!(err.matches("PRICE-JUMP").count(), 2, "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `tape import` took a Saturday session without a word (`tape gen` refuses weekends); a
/// weekend date usually means a wrong --tz or epoch unit. It is warned of, naming the
/// session's first record.
#[test]
fn a_weekend_session_is_warned_of() {
    let d = dir("weekend");
    let f = d.join("sat.csv");
    std::fs::write(
        &f,
        concat!(
            "ts,symbol,price,size\n",
            "2025-03-07T09:30:00,SPY,500.00,1\n",
            "2025-03-08T09:30:00,SPY,500.00,1\n",
            "2025-03-08T15:59:30,SPY,500.00,1\n",
        ),
    )
    .unwrap();
    let out = d.join("o.jsonl");
    let (code, err) = import_stderr(&[&f], &out, &["--ts-unit", "iso"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning code=WEEKEND file=")
            && err.contains("sat.csv record=2 message=the session 2025-03-08 is a Saturday, when exchanges are closed"),
        "{err}"
    );
    assert_eq!(err.matches("warning").count(), 1, "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `tape info` listed quiet stretches of at least a minute: one-minute bars (a trade a
/// minute) reported 390 gaps of exactly 1m00s, hiding a real halt. Only stretches longer
/// than a minute are gaps.
#[test]
fn tape_info_lists_gaps_longer_than_a_minute_only() {
    let d = dir("info-gaps");
    let f = d.join("bars.csv");
    let mut csv = String::from("ts,symbol,price,size\n");
    let open_ms: u64 = T0 / MS;
    for i in 0..390u64 {
        // A halt from 12:00 to 12:05.
        if (150..155).contains(&i) {
            continue;
        }
        csv.push_str(&format!("{},SPY,500.00,1\n", open_ms + i * 60_000));
    }
    std::fs::write(&f, csv).unwrap();
    let tape = d.join("bars.jsonl");
    import(&[&f], &tape, &["--ts-unit", "ms"]).unwrap();
    let (code, out, err) = kestrel(&["tape", "info", tape.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("gaps (> 1m00s) 1: 11:59:00.000 for 6m00s\n"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Vendor-A-like trades: every minute from 09:30 to 17:29 New York time, ISO with an
/// explicit `-04:00` offset (480 rows; 391 inside the regular hours, 89 after them).
fn offset_trades(d: &Path) -> PathBuf {
    let f = d.join("offset.csv");
    let mut csv = String::from("Timestamp,Symbol,Price,Size\n");
    for m in 0..480 {
        let (h, mm) = (9 + (30 + m) / 60, (30 + m) % 60);
        csv.push_str(&format!(
            "2025-04-09T{h:02}:{mm:02}:00.000-04:00,SPY,516.{:02},100\n",
            m % 100
        ));
    }
    std::fs::write(&f, csv).unwrap();
    f
}

/// A wrong `--tz` kept 14:30-16:00 London of a New York day (22% of it) and said only
/// `imported 19678 records (4324 kept)`, exit 0; a right one never said that 1444 rows were
/// after 16:00. The summary is followed by what was dropped and why, and when most records
/// on the dates imported fall outside the hours an `OUTSIDE-HOURS` warning names the times
/// kept and dropped and the flags to give; the exit status stays 0.
#[test]
fn dropped_records_are_always_explained_and_a_wrong_tz_is_warned_of() {
    let d = dir("dropped");
    let f = offset_trades(&d);
    let out = d.join("o.jsonl");
    let flags = ["--ts-unit", "iso", "--ts-col", "Timestamp"];
    let (code, err) = import_stderr(&[&f], &out, &flags);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with("imported 480 records (391 kept) as 391 events"),
        "{err}"
    );
    assert_eq!(
        lines[1],
        "dropped 89 of 480 records: 89 fall outside the regular hours 09:30-16:00 in America/New_York (--extended-hours keeps 04:00-20:00)"
    );
    // London: the day's 14:30-16:00 kept, the rest dropped; warned of, exit 0.
    let mut london = flags.to_vec();
    london.extend(["--tz", "Europe/London"]);
    let (code, err) = import_stderr(&[&f], &out, &london);
    assert_eq!(code, 0, "{err}");
    let warn = err.lines().next().unwrap();
    assert!(
        warn.starts_with("warning code=OUTSIDE-HOURS message=389 of the 480 records on the dates imported (81%) fall outside the regular hours 09:30-16:00 in Europe/London"),
        "{err}"
    );
    for want in [
        "those kept run from 2025-04-09 14:30:00.000 to 2025-04-09 16:00:00.000",
        "those dropped from 2025-04-09 16:01:00.000 to 2025-04-09 22:29:00.000",
        "give --tz ZONE",
        "--extended-hours",
    ] {
        assert!(warn.contains(want), "{want}: {err}");
    }
    assert!(
        err.contains("\ndropped 389 of 480 records: 389 fall outside the regular hours 09:30-16:00 in Europe/London"),
        "{err}"
    );
    // Fewer than half outside the hours: counted, not warned of.
    london.push("--extended-hours");
    let (code, err) = import_stderr(&[&f], &out, &london);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("warning"), "{err}");
    assert!(
        err.ends_with("\ndropped 149 of 480 records: 149 fall outside the extended hours 04:00-20:00 in Europe/London\n"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// `examples/import/*.dbn*` imported together gave 626 SPY trades from 301, and bar ticks
/// of 26,000 shares among them; repeated rows in one CSV were not mentioned. The same
/// records from two inputs are refused naming both files and a record (when they are at
/// least 10 and half the smaller input: fewer are a coincidence two real feeds can have, kept
/// and warned of); bars and trades of one symbol are refused; repeated records within one
/// file are kept and counted.
#[test]
fn the_same_data_twice_is_refused_and_repeated_rows_are_counted() {
    let d = dir("same-data");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/import");
    let trades = root.join("spy-trades.dbn.zst");
    let mbp = root.join("spy-mbp-1.dbn");
    let bars = root.join("spy-ohlcv-1m.dbn");
    let out = d.join("o.jsonl");
    let (code, err) = import_stderr(&[&trades, &mbp], &out, &[]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        err,
        format!(
            "error code=IMPORT file={m} record=1 message=301 of its 580 records are also records of {t} (of its 301); the first, this record (SPY trade of 300 at 516.00, 2025-04-09 09:30:00.000), is record 1 there: the two inputs hold the same trades or quotes, which would be imported twice (every volume doubled); import one of them ({t} or {m})\n",
            m = mbp.display(),
            t = trades.display()
        )
    );
    assert!(!out.exists());
    let (code, err) = import_stderr(&[&bars, &trades], &out, &[]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "error code=IMPORT message=SPY has bars in {} (record 1; each bar becomes four ticks carrying its volume) and trades in {} (record 1)",
            bars.display(),
            trades.display()
        )),
        "{err}"
    );
    assert!(
        err.contains("import the bars or the trades of SPY, not both"),
        "{err}"
    );
    // Trades of one file and quotes of another are not the same records.
    let q = d.join("q.csv");
    std::fs::write(
        &q,
        "ts,symbol,bid,ask\n1744205400000000000,SPY,515.99,516.01\n",
    )
    .unwrap();
    let (code, err) = import_stderr(&[&trades, &q], &out, &["--ts-unit", "ns"]);
    assert_eq!(code, 0, "{err}");
    // Two feeds with one print alike (two exchanges' files, a print of the same size at the
    // same price in the same second): a coincidence, kept and warned of, not refused.
    let (a, b) = (d.join("a.csv"), d.join("b.csv"));
    let feed = |cents: u64| {
        let mut csv = String::from("ts,symbol,price,size\n");
        for i in 0..20u64 {
            let px = if i == 5 { 0 } else { cents + i };
            csv.push_str(&format!(
                "{},SPY,516.{px:02},100\n",
                1_744_205_400_000 + i * 1000
            ));
        }
        csv
    };
    std::fs::write(&a, feed(20)).unwrap();
    std::fs::write(&b, feed(50)).unwrap();
    let (code, err) = import_stderr(&[&a, &b], &out, &["--ts-unit", "ms"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!(
            "warning code=REPEATED-ACROSS file={} record=6 message=1 record repeats a record of {} (the first, SPY trade of 100 at 516.00 at 2025-04-09 09:30:05.000, is record 6 there): too few to be the same data twice, so kept",
            b.display(),
            a.display()
        )),
        "{err}"
    );
    // A row repeated twice more in one file: kept, counted.
    let dups = d.join("dups.csv");
    let mut csv = String::from("ts,symbol,price,size\n");
    for i in 0..10u64 {
        let row = format!("{},SPY,516.{i:02},100\n", 1_744_205_400_000 + i * 1000);
        csv.push_str(&row);
        if i == 3 {
            csv.push_str(&row);
            csv.push_str(&row);
        }
    }
    std::fs::write(&dups, csv).unwrap();
    let (code, err) = import_stderr(&[&dups], &out, &["--ts-unit", "ms"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.starts_with("imported 12 records (12 kept) as 12 events"),
        "{err}"
    );
    assert!(
        err.contains("\n2 repeated records kept (each the same instant, symbol, kind, price and size as an earlier record of its file"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// One crossed quote, one bid of 0 or one negative price among thousands refused the whole
/// file, and no message said what to do; `-516.00` was "not a plain decimal number", and a
/// 19-digit count under `--ts-unit ms` only "out of range". The refusal names
/// `--skip-invalid`, which skips such records (CSV rows, DBN records) and counts them by
/// kind with the first one's place; a malformed field is still refused with it.
#[test]
fn skip_invalid_skips_bad_market_data_and_refusals_say_what_to_do() {
    let d = dir("skip-invalid");
    let out = d.join("o.jsonl");
    let f = d.join("bad.csv");
    std::fs::write(
        &f,
        concat!(
            "ts,symbol,price,size,bid,ask\n",
            "1744205400000,SPY,516.00,100,,\n",
            "1744205401000,SPY,,,516.10,516.00\n",
            "1744205402000,SPY,,,0,516.00\n",
            "1744205403000,SPY,-516.00,100,,\n",
            "1744205404000,SPY,,,515.99,516.01\n",
            "1744205405000,SPY,,,516.20,516.00\n",
        ),
    )
    .unwrap();
    let (code, err) = import_stderr(&[&f], &out, &["--ts-unit", "ms"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("bad.csv record=2 message=crossed quote: bid 516.10 is above ask 516.00; the whole import is refused: correct or remove the row, or give --skip-invalid"),
        "{err}"
    );
    let (code, err) = import_stderr(&[&f], &out, &["--ts-unit", "ms", "--skip-invalid"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        err.lines().nth(1),
        Some(
            format!(
                "skipped 4 invalid records (--skip-invalid): bids or asks of 0 or below 1, crossed quotes 2, trade prices of 0 or below 1; the first at {}:3 (record 2): crossed quote: bid 516.10 is above ask 516.00",
                f.display()
            )
            .as_str()
        ),
        "{err}"
    );
    let tape = std::fs::read_to_string(&out).unwrap();
    assert_eq!(tape.lines().count(), 3, "{tape}");
    // A negative price is said to be negative.
    std::fs::write(&f, "ts,symbol,price,size\n1744205403000,SPY,-516.00,100\n").unwrap();
    let (_, err) = import_stderr(&[&f], &out, &["--ts-unit", "ms"]);
    assert!(
        err.contains("message=price \"-516.00\" is negative;"),
        "{err}"
    );
    // Not a number: refused with the flag too.
    std::fs::write(&f, "ts,symbol,price,size\n1744205403000,SPY,abc,100\n").unwrap();
    let (code, err) = import_stderr(&[&f], &out, &["--ts-unit", "ms", "--skip-invalid"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("price \"abc\" is not a plain decimal number\n"),
        "{err}"
    );
    // A count of nanoseconds read as milliseconds: the unit that fits is named.
    std::fs::write(
        &f,
        "ts,symbol,price,size\n1744205399800000000,SPY,516,100\n",
    )
    .unwrap();
    let (_, err) = import_stderr(&[&f], &out, &["--ts-unit", "ms", "--skip-invalid"]);
    assert!(
        err.contains("timestamp \"1744205399800000000\" is out of range as a count of milliseconds since the Unix epoch (--ts-unit ms): 19 digits looks like ns (2025-04-09): try --ts-unit ns"),
        "{err}"
    );
    // DBN: a crossed book skipped whole (its trade with it).
    let book = d.join("crossed.dbn");
    let recs = vec![
        mbp1(1, T0, b'T', 516.00, 100, (515.99, 516.01, 1, 1)),
        mbp1(1, T0 + SEC, b'T', 516.05, 100, (516.10, 516.00, 1, 1)),
        mbp1(1, T0 + 2 * SEC, b'T', 516.02, 100, (516.01, 516.03, 1, 1)),
    ];
    write_dbn(&book, &metadata(Schema::Mbp1, &[("SPY", 1)]), &recs, false);
    let (code, err) = import_stderr(&[&book], &out, &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("record=2 message=crossed book"), "{err}");
    assert!(err.contains("--skip-invalid"), "{err}");
    let (code, err) = import_stderr(&[&book], &out, &["--skip-invalid"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.starts_with("imported 3 records (2 kept) as 4 events"),
        "{err}"
    );
    assert!(err.contains("crossed quotes 1; the first at"), "{err}");
    assert!(!std::fs::read_to_string(&out).unwrap().contains("516.05"));
    let _ = std::fs::remove_dir_all(&d);
}

/// `TS,SYMBOL,PRICE,SIZE` said `no column "ts"`, and a missing column said only "name the
/// columns with the --*-col flags". Known names match in any case (and trimmed); a missing
/// one lists the header and the flag to give, with the column it most likely is.
#[test]
fn header_names_match_in_any_case_and_a_missing_column_names_its_flag() {
    let d = dir("header-case");
    let out = d.join("o.jsonl");
    let f = d.join("upper.csv");
    std::fs::write(
        &f,
        "TS, SYMBOL ,PRICE,SIZE\n1744205400000,SPY,516.00,100\n1744205401000,SPY,516.01,100\n",
    )
    .unwrap();
    let (code, err) = import_stderr(&[&f], &out, &["--ts-unit", "ms"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.starts_with("imported 2 records (2 kept)"), "{err}");
    std::fs::write(
        &f,
        "sip_timestamp,ticker,price,size\n1744205400000,SPY,516.00,100\n",
    )
    .unwrap();
    let (_, err) = import_stderr(&[&f], &out, &["--ts-unit", "ms"]);
    assert!(
        err.contains("record=0 message=no column \"ts\" in the header row (sip_timestamp,ticker,price,size), in any case: give --ts-col sip_timestamp;"),
        "{err}"
    );
    let (_, err) = import_stderr(
        &[&f],
        &out,
        &["--ts-unit", "ms", "--ts-col", "SIP_TIMESTAMP"],
    );
    assert!(
        err.contains("no column \"symbol\" in the header row (sip_timestamp,ticker,price,size), in any case: give --symbol-col ticker (or --symbol SYM"),
        "{err}"
    );
    let f = d.join("semi.csv");
    std::fs::write(&f, "ts;symbol;price;size\n1744205400000;SPY;516,00;100\n").unwrap();
    let (_, err) = import_stderr(&[&f], &out, &["--ts-unit", "ms"]);
    assert!(err.contains("the file looks separated by ';'"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `kestrel run --tape trades.csv` said only "is text that is neither JSON nor Kestrel, not
/// a tape": a trader's CSV or DBN file given as a tape points to `kestrel tape import`.
#[test]
fn market_data_given_as_a_tape_points_to_tape_import() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/import");
    let plans = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/run-desk.kestrel");
    let csv = root.join("spy-trades-quotes.csv");
    let dbn = root.join("spy-mbp-1.dbn");
    for (f, want) in [
        (
            &csv,
            format!(
                "{} is CSV market data, not a tape: make a tape of it with kestrel tape import {} --ts-unit s|ms|us|ns|iso -o TAPE.jsonl",
                csv.display(),
                csv.display()
            ),
        ),
        (
            &dbn,
            format!(
                "{} is a Databento DBN file (market data), not a tape: make a tape of it with kestrel tape import {} -o TAPE.jsonl",
                dbn.display(),
                dbn.display()
            ),
        ),
    ] {
        let (code, _, err) = kestrel(&["run", "--tape", s(f), "--plans", s(&plans)]);
        assert_eq!(code, 1, "{err}");
        assert!(
            err.contains(&format!("error code=USAGE message={want}")),
            "{err}"
        );
        let (code, _, err) = kestrel(&["desk", "--tape", s(f)]);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains(&want), "{err}");
    }
}

/// Milliseconds imported with `--ts-unit ns` read as 1969-12-31, every record within one
/// second of 19:29 New York: refused as "outside the regular hours (--extended-hours keeps
/// 04:00-20:00)", and with `--extended-hours` imported, exit 0, without a word. An epoch
/// count before 1990 (or from 2100) is refused naming the unit that fits, as a count out
/// of range in its unit is.
#[test]
fn a_count_in_the_wrong_unit_is_refused_naming_the_unit_not_imported_in_1969() {
    let d = dir("wrong-unit");
    let f = d.join("ms.csv");
    let out = d.join("w.jsonl");
    let mut csv = String::from("ts,symbol,price,size\n");
    for i in 0..30u64 {
        csv.push_str(&format!("{},SPY,516.{:02},100\n", T0 / MS + i * 10_000, i));
    }
    std::fs::write(&f, &csv).unwrap();
    for flags in [
        &["--ts-unit", "ns"][..],
        &["--ts-unit", "ns", "--extended-hours"],
    ] {
        let (code, err) = import_stderr(&[&f], &out, flags);
        assert_eq!(code, 1, "{flags:?}: {err}");
        assert_eq!(
            err,
            format!(
                "error code=IMPORT file={} record=1 message=timestamp \"1744205400000\" as a count of nanoseconds since the Unix epoch (--ts-unit ns) falls before 1990 (1969-12-31 19:29:04): an epoch count is read from 1990 to 2099: 13 digits looks like ms (2025-04-09): try --ts-unit ms\n",
                f.display()
            ),
            "{flags:?}"
        );
        assert!(!out.exists(), "{flags:?}");
    }
    // The unit it names imports the file, on its own date.
    let (code, err) = import_stderr(&[&f], &out, &["--ts-unit", "ms"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("warning"), "{err}");
    let (code, info, err) = kestrel(&["tape", "info", s(&out)]);
    assert_eq!(code, 0, "{err}");
    assert!(info.contains("1 2025-04-09 09:30-"), "{info}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A whole file of records on one millisecond (a date column given as the timestamp, a
/// feed's time cut off) imported without a word; it is warned of, coded, naming the first
/// and last records and the instant. A few records sharing an instant are not.
#[test]
fn a_file_whose_records_all_fall_on_one_instant_is_warned_of() {
    let d = dir("one-instant");
    let f = d.join("one.csv");
    let out = d.join("o.jsonl");
    let write = |n: u64| {
        let mut csv = String::from("ts,symbol,price,size\n");
        for i in 0..n {
            csv.push_str(&format!("{},SPY,516.{:02},100\n", T0 / MS, i));
        }
        std::fs::write(&f, csv).unwrap();
    };
    write(12);
    let (code, err) = import_stderr(&[&f], &out, &["--ts-unit", "ms"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!(
            "warning code=ONE-INSTANT file={} record=12 message=all 12 records kept, from record 1 of {} to this one, fall on one instant (2025-04-09 09:30:00.000)",
            f.display(),
            f.display()
        )),
        "{err}"
    );
    assert_eq!(err.matches("warning").count(), 1, "{err}");
    write(9);
    let (code, err) = import_stderr(&[&f], &out, &["--ts-unit", "ms"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("ONE-INSTANT"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `tape import` given a file the project writes said `cannot tell the format` of a tape,
/// and read a desk session file as CSV, suggesting a JSON fragment as `--ts-col`. It says
/// what the file is and what to do with it, as the other verbs do, with or without
/// `--format`, before anything is written.
#[test]
fn a_tape_a_session_file_or_a_bus_given_to_import_says_what_it_is() {
    let d = dir("wrong-kind");
    let tape = Path::new(env!("CARGO_MANIFEST_DIR")).join("tapes/trend-2025-04-09-s1.jsonl");
    let session = d.join("s.jsonl");
    std::fs::write(
        &session,
        "{\"type\":\"desk-session\",\"v\":2,\"tape\":\"bundled:trend-2025-04-09-s1\"}\n{\"seq\":0,\"ts\":\"09:30:00.000\"}\n",
    )
    .unwrap();
    let bus = d.join("b.jsonl");
    std::fs::write(&bus, "{\"type\":\"session-start\",\"v\":1}\n").unwrap();
    let out = d.join("o.jsonl");
    let not = "not CSV or DBN market data";
    for (f, want) in [
        (
            tape.as_path(),
            format!(
                "{} is a tape (JSON Lines with a header line), {not}: it is a Kestrel tape already, nothing to import: open it with kestrel desk --tape {} (or kestrel run --tape {})",
                tape.display(),
                tape.display(),
                tape.display()
            ),
        ),
        (
            session.as_path(),
            format!(
                "{} is a desk session file, {not}: open it with kestrel desk --open {}",
                session.display(),
                session.display()
            ),
        ),
        (
            bus.as_path(),
            format!(
                "{} is a saved Bus (a session's event log), {not}: replay it with kestrel agent --author {}",
                bus.display(),
                bus.display()
            ),
        ),
    ] {
        for flags in [&[][..], &["--format", "csv", "--ts-unit", "iso"]] {
            let (code, err) = import_stderr(&[f], &out, flags);
            assert_eq!(code, 1, "{flags:?}: {err}");
            assert!(
                err.starts_with(&format!("error code=USAGE message={want}")),
                "{flags:?}: {err}"
            );
            assert!(!err.contains("--ts-col"), "{err}");
            assert!(!out.exists());
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}
