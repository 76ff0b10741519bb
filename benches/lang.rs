//! Parse and parse+print throughput of the Kestrel parser on about 1 MB of realistic
//! documents, beside `toml_edit` (a format-preserving parser on winnow) parsing and
//! re-printing TOML of the same byte count, in the same run; and a typical 1 KB plan.
//!
//! Run: `cargo bench --bench lang`. Figures are recorded in docs/language.md.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kestrel_desk::lang;
use std::hint::black_box;

/// Realistic documents: the project's examples, renamed per copy, until `target` bytes.
fn kestrel_corpus(target: usize) -> Vec<String> {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut seeds = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(format!("{root}/examples"))
        .expect("examples/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "kestrel"))
        .collect();
    paths.sort();
    for p in paths {
        seeds.push(std::fs::read_to_string(p).expect("read example"));
    }
    let mut docs = Vec::new();
    let mut total = 0;
    let mut n = 0usize;
    while total < target {
        let seed = &seeds[n % seeds.len()];
        // Rename declared names so each copy is a distinct document.
        let doc = seed
            .replace("breakout-chase", &format!("breakout-chase-{n}"))
            .replace("band-fade", &format!("band-fade-{n}"))
            .replace("call-spread", &format!("call-spread-{n}"))
            .replace("desk-scan", &format!("desk-scan-{n}"));
        total += doc.len();
        docs.push(doc);
        n += 1;
    }
    docs
}

/// Realistic TOML of about `target` bytes: tables, arrays of tables, inline tables, strings,
/// numbers, dates, comments (the shape of a Cargo manifest plus an app config).
fn toml_corpus(target: usize) -> String {
    let mut s = String::new();
    let mut n = 0;
    while s.len() < target {
        s.push_str(&format!(
            r#"# Strategy {n}: range fade with a ladder
[strategy-{n}]
name = "band-fade-{n}"
budget = 0.30           # in R
ttl = "14:45"
regime = {{ intraday = "range", vol = "falling" }}
symbols = ["SPX", "SPY"]
enabled = true
created = 2025-04-09T09:30:00Z

[[strategy-{n}.rung]]
trigger = "spot crosses below 5120"
qty = 1
strike = -1
price = {{ anchor = "bid", lean = "fair", weight = 0.4 }}

[[strategy-{n}.rung]]
trigger = "spot crosses below 5114"
qty = 1
strike = -2
price = {{ anchor = "bid", lean = "fair", weight = 0.4 }}

[strategy-{n}.exit]
take-profit = 1.8
fraction = 0.5
invalidate = "spot > 5160 held 90s"

"#
        ));
        n += 1;
    }
    s
}

fn bench(c: &mut Criterion) {
    let docs = kestrel_corpus(1 << 20);
    let kbytes: usize = docs.iter().map(String::len).sum();
    for d in &docs {
        assert!(lang::parse(d).is_ok(), "bench corpus must parse");
    }
    let toml = toml_corpus(kbytes);
    assert!(toml.parse::<toml_edit::DocumentMut>().is_ok());

    let mut g = c.benchmark_group("1MB");
    g.sample_size(20);
    g.throughput(Throughput::Bytes(kbytes as u64));
    g.bench_function(BenchmarkId::new("kestrel", "parse"), |b| {
        b.iter(|| {
            for d in &docs {
                black_box(lang::parse(black_box(d)).ok());
            }
        })
    });
    g.bench_function(BenchmarkId::new("kestrel", "parse+print"), |b| {
        b.iter(|| {
            for d in &docs {
                if let Ok(doc) = lang::parse(black_box(d)) {
                    black_box(lang::print(&doc));
                }
            }
        })
    });
    g.throughput(Throughput::Bytes(toml.len() as u64));
    g.bench_function(BenchmarkId::new("toml_edit", "parse"), |b| {
        b.iter(|| black_box(black_box(&toml).parse::<toml_edit::DocumentMut>().ok()))
    });
    g.bench_function(BenchmarkId::new("toml_edit", "parse+print"), |b| {
        b.iter(|| {
            let d = black_box(&toml)
                .parse::<toml_edit::DocumentMut>()
                .expect("toml");
            black_box(d.to_string())
        })
    });
    g.finish();

    // A typical plan of about 1 KB: the chase example plus a ladder, as one document.
    let root = env!("CARGO_MANIFEST_DIR");
    let plan = std::fs::read_to_string(format!("{root}/examples/chase.kestrel")).expect("chase")
        + "\n"
        + &std::fs::read_to_string(format!("{root}/examples/fade-ladder.kestrel")).expect("ladder");
    let mut g = c.benchmark_group("plan-1KB");
    g.throughput(Throughput::Bytes(plan.len() as u64));
    g.bench_function("kestrel/parse", |b| {
        b.iter(|| black_box(lang::parse(black_box(&plan)).ok()))
    });
    g.bench_function("kestrel/check", |b| {
        b.iter(|| black_box(lang::check(black_box(&plan), lang::Mode::File).ok()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
