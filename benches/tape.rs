//! The tape reader against its floor, in one run: `TapeReader` over the tick lines of the
//! bundled shock tape (its header and its 46,802 canonical tick lines, held in memory) next to
//! a *positional decode* of the same bytes, a minimal decoder written here that knows the
//! canonical tick line's layout and checks nothing it does not need to find the fields:
//!
//! ```text
//! {"type":"tick","ts":"HH:MM:SS.mmm","sym":"SYM","px":DIGITS[.D{1,4}],"sz":DIGITS}
//! ```
//!
//! The reader does everything a tape needs (line limits, order checks, every refusal, the
//! general path for any other line); the positional decoder is what no reader of these lines
//! can do without. Both produce the same ticks (checked before measuring), and the ratio
//! reader / positional is the issue's "within 1.3x" figure. `reader/full-tape` reads the whole
//! tape (its iv and headline lines go through the general serde path).
//!
//! Run: `cargo bench --bench tape`. Instruction counts per line (callgrind, the decode loop
//! alone): `KESTREL_TAPE_ONE=reader|positional valgrind --tool=callgrind
//! --toggle-collect='*one_pass*' target/release/deps/tape-*` (docs/runtime.md, "The tape
//! reader at its floor"). Figures are recorded in docs/runtime.md.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use kestrel_desk::market::{Px, Sym, TapeEvent, TapeReader, Tick, Ts};

const TAPE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tapes/shock-2025-04-09-s7.jsonl"
);

/// The tape's header line and its tick lines, in order (the canonical writer's bytes).
fn tick_lines(all: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(all.len());
    for (i, line) in all.split_inclusive(|&c| c == b'\n').enumerate() {
        if i == 0 || line.starts_with(br#"{"type":"tick""#) {
            out.extend_from_slice(line);
        }
    }
    out
}

/// Two ASCII digits at `b[i..i + 2]`.
#[inline]
fn two(b: &[u8], i: usize) -> u32 {
    u32::from(b[i] - b'0') * 10 + u32::from(b[i + 1] - b'0')
}

/// Digits at the start of `b`: their value and their count.
#[inline]
fn uint(b: &[u8]) -> (u64, usize) {
    let mut v = 0u64;
    let mut n = 0;
    while n < b.len() && b[n].is_ascii_digit() {
        v = v * 10 + u64::from(b[n] - b'0');
        n += 1;
    }
    (v, n)
}

/// The positional decode of the canonical tick line at the start of `l`: the fields at their
/// offsets, the price's digits into the fixed point, the symbol looked up among `syms`; the
/// tick and the bytes of the line (with its `\n`). Panics on a line that is not canonical
/// (the bench's input is).
#[inline]
fn positional_tick(l: &[u8], syms: &[Sym]) -> (Tick, usize) {
    // `{"type":"tick","ts":"` is 21 bytes; the clock is the next 12.
    let ts = Ts::hms(two(l, 21), two(l, 24), two(l, 27), {
        u32::from(l[30] - b'0') * 100 + two(l, 31)
    });
    // `","sym":"` is 9 bytes.
    let s = &l[42..];
    let q = s.iter().position(|&c| c == b'"').expect("sym");
    let sym = *syms
        .iter()
        .find(|x| {
            let a = x.as_bytes();
            a.len() == q && a.iter().zip(s).all(|(x, y)| x == y)
        })
        .expect("known sym");
    // `","px":` is 7 bytes.
    let p = &s[q + 7..];
    let (int, ni) = uint(p);
    let mut raw = int * 10_000;
    let mut at = ni;
    if p[ni] == b'.' {
        let (frac, nf) = uint(&p[ni + 1..]);
        raw += frac * [10_000, 1_000, 100, 10, 1][nf];
        at += 1 + nf;
    }
    // `,"sz":` is 6 bytes; `}\n` ends the line.
    let (sz, nz) = uint(&p[at + 6..]);
    let used = 42 + q + 7 + at + 6 + nz + 2;
    let tick = Tick {
        ts,
        sym,
        px: Px(raw as i64),
        sz,
    };
    (tick, used)
}

/// Fold a tick into a checksum (so neither loop's work can be optimised away, and both can
/// be compared).
#[inline]
fn fold(acc: u64, t: &Tick) -> u64 {
    acc.wrapping_mul(31)
        .wrapping_add(t.px.raw() as u64)
        .wrapping_add(t.sz)
        .wrapping_add(u64::from(t.ts.ms()))
        .wrapping_add(u64::from(t.sym.as_bytes()[2]))
}

/// One positional pass over the bytes (the header line skipped): (ticks, checksum).
#[inline(never)]
fn positional_one_pass(bytes: &[u8], syms: &[Sym]) -> (u64, u64) {
    let mut at = bytes.iter().position(|&c| c == b'\n').expect("header") + 1;
    let (mut n, mut acc) = (0u64, 0u64);
    while at < bytes.len() {
        let (t, used) = positional_tick(&bytes[at..], syms);
        acc = fold(acc, &t);
        n += 1;
        at += used;
    }
    (n, acc)
}

/// One `TapeReader` pass over the bytes (header included): (ticks, checksum).
#[inline(never)]
fn reader_one_pass(bytes: &[u8]) -> (u64, u64) {
    let r = TapeReader::new(bytes).expect("valid tape");
    let (mut n, mut acc) = (0u64, 0u64);
    for ev in r {
        if let TapeEvent::Tick(t) = ev.expect("valid tape") {
            acc = fold(acc, &t);
            n += 1;
        }
    }
    (n, acc)
}

fn main() {
    let all = std::fs::read(TAPE).expect("bundled tape");
    let ticks = tick_lines(&all);
    let header = TapeReader::new(&ticks[..])
        .expect("valid tape")
        .header()
        .clone();
    let syms: Vec<Sym> = header.symbols.iter().map(|s| s.sym).collect();
    let lines = ticks.iter().filter(|&&c| c == b'\n').count() as u64 - 1;

    // One pass of one decoder and nothing else, for callgrind
    // (`--toggle-collect='*one_pass*'` counts just that pass).
    if let Ok(which) = std::env::var("KESTREL_TAPE_ONE") {
        let (n, sum) = match which.as_str() {
            "reader" => reader_one_pass(black_box(&ticks)),
            "positional" => positional_one_pass(black_box(&ticks), &syms),
            other => panic!("KESTREL_TAPE_ONE={other}: reader or positional"),
        };
        println!("{which}: {n} ticks of {lines} lines, checksum {sum:x}");
        return;
    }

    let reader = reader_one_pass(&ticks);
    let positional = positional_one_pass(&ticks, &syms);
    assert_eq!(reader, positional, "both decoders read the same ticks");
    assert_eq!(reader.0, lines, "every line is a tick");

    let mut c = Criterion::default().configure_from_args();
    let mut g = c.benchmark_group("tape/ticks");
    g.sample_size(30);
    g.measurement_time(Duration::from_secs(4));
    g.throughput(Throughput::Elements(reader.0));
    g.bench_function("positional", |b| {
        b.iter(|| positional_one_pass(black_box(&ticks), &syms))
    });
    g.bench_function("reader", |b| b.iter(|| reader_one_pass(black_box(&ticks))));
    g.finish();

    let mut g = c.benchmark_group("tape/full");
    g.sample_size(30);
    g.measurement_time(Duration::from_secs(4));
    g.throughput(Throughput::Elements(
        all.iter().filter(|&&c| c == b'\n').count() as u64 - 1,
    ));
    g.bench_function("reader", |b| {
        b.iter(|| {
            let r = TapeReader::new(black_box(&all[..])).expect("valid tape");
            r.fold(0u64, |n, ev| n + u64::from(ev.is_ok()))
        })
    });
    g.finish();
    c.final_summary();
}
