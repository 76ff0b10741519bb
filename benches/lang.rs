//! Parse and parse+print throughput of the Kestrel parser on about 1 MB of realistic
//! documents, beside `toml_edit` (a format-preserving parser on winnow) parsing and
//! re-printing TOML of the same byte count, in the same run; and a typical 1 KB plan.
//!
//! The `8MB` group does the same at the document size limit (an 8,000,000-byte document of
//! ladder plans, `corpus::kestrel_ladders`), through the library.
//!
//! Run: `cargo bench --bench lang`. Figures are recorded in docs/language.md.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kestrel_desk::lang;
use std::hint::black_box;

mod corpus;

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

fn bench(c: &mut Criterion) {
    let docs = kestrel_corpus(1 << 20);
    let kbytes: usize = docs.iter().map(String::len).sum();
    for d in &docs {
        assert!(lang::parse(d).is_ok(), "bench corpus must parse");
    }
    let toml = corpus::toml(kbytes);
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

    // At the size limit, through the library: one 8,000,000-byte document checked and
    // printed (what `kestrel print` does, minus reading and writing the file), beside
    // toml_edit parsing and printing as many bytes of TOML.
    let big = corpus::kestrel_ladders(8_000_000);
    assert_eq!(
        lang::check(&big, lang::Mode::File)
            .map(|d| lang::print(&d))
            .ok()
            .as_deref(),
        Some(big.as_str()),
        "the limit document checks and prints back"
    );
    let big_toml = corpus::toml(big.len());
    let mut g = c.benchmark_group("8MB");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(big.len() as u64));
    g.bench_function(BenchmarkId::new("kestrel", "check+print"), |b| {
        b.iter(|| {
            lang::check(black_box(&big), lang::Mode::File)
                .ok()
                .map(|d| black_box(lang::print(&d)))
        })
    });
    // What `kestrel print` runs: check and print a statement at a time.
    g.bench_function(BenchmarkId::new("kestrel", "check_print"), |b| {
        b.iter(|| black_box(lang::check_print(black_box(&big), lang::Mode::File).ok()))
    });
    g.throughput(Throughput::Bytes(big_toml.len() as u64));
    g.bench_function(BenchmarkId::new("toml_edit", "parse+print"), |b| {
        b.iter(|| {
            let d = black_box(&big_toml)
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
