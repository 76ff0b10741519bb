//! Replays the bundled shock session (`tapes/shock-2025-04-09-s7.jsonl`: 09:30 to 16:00, one
//! tick a second for SPX and SPY, 47,156 events of which 46,802 ticks) with 0, 1, 10 and 50
//! armed plans (`engine::synthetic_plans`).
//!
//! - `engine/stream`: end to end, the streaming tape reader parsing the JSON Lines bytes
//!   plus the engine (what `kestrel run` does, minus file I/O) — the figure the goal
//!   (2 M tick events/s with 10 plans) is about;
//! - `engine/replay`: the engine alone over events already decoded in memory.
//!
//! - `engine/levels`: end to end on the bundled trend session with the level plans of the
//!   hftbacktest comparison (`scripts/peers/plans/trend/`: 10 and 50 plans `WHEN spot crosses
//!   above L` / `EXIT spot crosses below L-0.50`, and 50 plans that buy and hold), the plans
//!   the parked, quiet and watched paths of the plan loop are about (docs/runtime.md).
//!
//! Throughput is in **tick events** (`Throughput::Elements` = the session's 46,802 ticks;
//! the few iv and headline events are replayed too but not counted), so criterion's
//! `elem/s` is tick events per second.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kestrel_desk::bus::Bus;
use kestrel_desk::engine::{Engine, EngineConfig, replay, synthetic_plans};
use kestrel_desk::lang::{self, Document, Mode};
use kestrel_desk::market::{Px, TapeEvent, TapeReader, read_tape_bytes};

const TAPE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tapes/shock-2025-04-09-s7.jsonl"
);

/// The tape's bytes through the streaming reader into an engine armed with `doc`, 1R =
/// $1,000: what `kestrel run` does, minus file I/O. The Bus's event count.
fn stream(bytes: &[u8], doc: &Document) -> u64 {
    let r = TapeReader::new(bytes).expect("tape");
    let header = r.header().clone();
    let cfg = EngineConfig::strict(Px(1000 * 10_000));
    replay(&header, r, std::slice::from_ref(doc), cfg, Bus::new(None))
        .expect("event")
        .count()
}

fn bench(c: &mut Criterion) {
    let bytes = std::fs::read(TAPE).expect("bundled tape");
    let (header, events) = read_tape_bytes(&bytes).expect("valid tape");
    let ticks = events
        .iter()
        .filter(|e| matches!(e, TapeEvent::Tick(_)))
        .count() as u64;
    let plans = [0usize, 1, 10, 50];

    let mut group = c.benchmark_group("engine/stream");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Elements(ticks));
    for n in plans {
        let doc = lang::check(&synthetic_plans(n), Mode::File).expect("valid plans");
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| stream(&bytes, &doc))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("engine/replay");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Elements(ticks));
    for n in plans {
        let doc = lang::check(&synthetic_plans(n), Mode::File).expect("valid plans");
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                let mut e = Engine::new(
                    &header,
                    EngineConfig::strict(Px(1000 * 10_000)),
                    Bus::new(None),
                );
                e.arm_document(&doc);
                e.on_events(&events);
                e.finish().count()
            })
        });
    }
    group.finish();

    let trend = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tapes/trend-2025-04-09-s1.jsonl"
    ))
    .expect("bundled tape");
    let (_, trend_events) = read_tape_bytes(&trend).expect("valid tape");
    let trend_ticks = trend_events
        .iter()
        .filter(|e| matches!(e, TapeEvent::Tick(_)))
        .count() as u64;
    let mut group = c.benchmark_group("engine/levels");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Elements(trend_ticks));
    for name in ["plans-10", "plans-50", "hold-50"] {
        let path = format!(
            "{}/scripts/peers/plans/trend/{name}.kestrel",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).expect("committed plan file");
        let doc = lang::check(&text, Mode::File).expect("valid plans");
        group.bench_with_input(BenchmarkId::from_parameter(name), &name, |b, _| {
            b.iter(|| stream(&trend, &doc))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
