//! `kestrel tape import` throughput and memory (docs/tapes.md §5, "Figures").
//!
//! The inputs are made here: a generated SPY session (one trade a second, 23,401 trades per
//! session) encoded as a DBN trades file with the `dbn` crate's encoder, and as a CSV of the
//! same trades. Groups:
//!
//! - `import/read`: a plain read of each file (its bytes through a 64 KiB buffer): the floor;
//! - `import/dbn`, `import/csv`: the whole import (both passes, the tape written to a sink).
//!
//! Throughput is in input bytes (`Throughput::Bytes`), so criterion prints MB/s; records/s is
//! bytes/s over the bytes per record printed at the start. Before the groups, the bench
//! prints the peak heap of an import of 1, 5 and 20 sessions (a counting global allocator):
//! memory is per session and per symbol, so it stays flat as the input grows.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dbn::encode::{EncodeRecord, dbn::Encoder};
use dbn::{
    FlagSet, MappingInterval, MetadataBuilder, RecordHeader, SType, Schema, SymbolMapping,
    TradeMsg, rtype,
};
use kestrel_desk::market::import::csv::{Columns, CsvSource, TsUnit};
use kestrel_desk::market::import::dbn::DbnSource;
use kestrel_desk::market::import::{Options, Source, Zone, import};
use kestrel_desk::market::*;

struct Peak;
static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Peak {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let n = NOW.fetch_add(l.size(), Ordering::Relaxed) + l.size();
        PEAK.fetch_max(n, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        NOW.fetch_sub(l.size(), Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Peak = Peak;

const T0: u64 = 1_744_205_400_000_000_000; // 2025-04-09 13:30 UTC
const DAY: u64 = 86_400_000_000_000;

/// `n` sessions of SPY trades (one a second), as DBN and CSV files in `d`; the record count.
fn inputs(d: &Path, n: usize) -> (PathBuf, PathBuf, u64) {
    let mut trades = Vec::new();
    let mut csv = String::from("ts,symbol,price,size\n");
    let mut date = Date::new(2025, 4, 9).unwrap();
    for k in 0..n {
        // Weekdays only: the calendar days from 2025-04-09 to the session's date.
        let day0 = (date.days() - Date::new(2025, 4, 9).unwrap().days()) as u64;
        let g = generate(Regime::Trend, 1 + k as u64, date);
        for e in g {
            if let TapeEvent::Tick(t) = e
                && t.sym.as_str() == "SPY"
            {
                let ns =
                    T0 + day0 * DAY + u64::from(t.ts.ms() - Ts::hms(9, 30, 0, 0).ms()) * 1_000_000;
                trades.push(TradeMsg {
                    hd: RecordHeader::new::<TradeMsg>(rtype::MBP_0, 1, 1, ns),
                    price: t.px.raw() * 100_000,
                    size: t.sz as u32,
                    action: b'T' as std::ffi::c_char,
                    side: b'N' as std::ffi::c_char,
                    flags: FlagSet::default(),
                    depth: 0,
                    ts_recv: ns,
                    ts_in_delta: 0,
                    sequence: 0,
                });
                csv.push_str(&format!("{ns},SPY,{},{}\n", t.px, t.sz));
            }
        }
        date = date.next_weekday().unwrap();
    }
    let end = time::Date::from_calendar_date(2026, time::Month::January, 1).unwrap();
    let start = time::Date::from_calendar_date(2025, time::Month::April, 9).unwrap();
    let md = MetadataBuilder::new()
        .dataset("XNAS.ITCH")
        .schema(Some(Schema::Trades))
        .start(T0)
        .stype_in(Some(SType::RawSymbol))
        .stype_out(SType::InstrumentId)
        .symbols(vec!["SPY".into()])
        .mappings(vec![SymbolMapping {
            raw_symbol: "SPY".into(),
            intervals: vec![MappingInterval {
                start_date: start,
                end_date: end,
                symbol: "1".into(),
            }],
        }])
        .build();
    let dbn_p = d.join(format!("spy-{n}.dbn"));
    let mut e = Encoder::new(std::fs::File::create(&dbn_p).unwrap(), &md).unwrap();
    for t in &trades {
        e.encode_record(t).unwrap();
    }
    e.flush().unwrap();
    let csv_p = d.join(format!("spy-{n}.csv"));
    std::fs::write(&csv_p, csv).unwrap();
    (dbn_p, csv_p, trades.len() as u64)
}

fn opts() -> Options {
    Options {
        zone: Zone::parse("America/New_York").unwrap(),
        tz_name: "America/New_York".into(),
        symbols: Default::default(),
        from: None,
        to: None,
        session_filter: Default::default(),
        extended: false,
        prior: Default::default(),
        name: "bench".into(),
        source: "bench".into(),
        strike_step: Default::default(),
        iv: Default::default(),
        skip_invalid: false,
    }
}

fn run(p: &Path, csv: bool) -> u64 {
    let o = opts();
    let open =
        || -> Result<kestrel_desk::market::import::Sources, kestrel_desk::market::import::ImportError> {
            let s: Box<dyn Source> = if csv {
                Box::new(CsvSource::open(p, &Columns::default(), TsUnit::Ns, o.zone.clone())?)
            } else {
                Box::new(DbnSource::open(p)?)
            };
            Ok(vec![("in".into(), s)])
        };
    import(&open, &o, &mut std::io::sink(), &mut |_, _, _| true)
        .expect("import")
        .kept
}

fn plain_read(p: &Path) -> u64 {
    let mut f = std::io::BufReader::with_capacity(1 << 16, std::fs::File::open(p).unwrap());
    let mut buf = vec![0u8; 1 << 16];
    let mut n = 0u64;
    loop {
        let k = f.read(&mut buf).unwrap();
        if k == 0 {
            return n;
        }
        n += buf[..k].iter().map(|&b| u64::from(b == b'\n')).sum::<u64>() + k as u64;
    }
}

fn bench(c: &mut Criterion) {
    let d = std::env::temp_dir().join(format!("kestrel-bench-import-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    for n in [1usize, 5, 20] {
        let (dbn_p, csv_p, recs) = inputs(&d, n);
        for (what, p, csv) in [("dbn", &dbn_p, false), ("csv", &csv_p, true)] {
            let size = std::fs::metadata(p).unwrap().len();
            let base = NOW.load(Ordering::Relaxed);
            PEAK.store(base, Ordering::Relaxed);
            let kept = run(p, csv);
            let peak = PEAK.load(Ordering::Relaxed) - base;
            println!(
                "memory: {what} {n:>2} sessions  {recs} records  {size} bytes  kept {kept}  peak heap {} KiB",
                peak / 1024
            );
        }
    }
    let (dbn_p, csv_p, recs) = inputs(&d, 1);
    for (what, p, csv) in [("dbn", dbn_p, false), ("csv", csv_p, true)] {
        let size = std::fs::metadata(&p).unwrap().len();
        println!(
            "input: {what} {recs} records, {size} bytes, {:.1} bytes/record",
            size as f64 / recs as f64
        );
        let mut g = c.benchmark_group(format!("import/{what}"));
        g.sample_size(10);
        g.measurement_time(Duration::from_secs(3));
        g.throughput(Throughput::Bytes(size));
        g.bench_function("plain-read", |b| b.iter(|| plain_read(&p)));
        g.bench_function("import", |b| b.iter(|| run(&p, csv)));
        g.finish();
    }
    let _ = std::fs::remove_dir_all(&d);
}

criterion_group!(benches, bench);
criterion_main!(benches);
