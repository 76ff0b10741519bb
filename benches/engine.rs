//! Replays a full generated session (shock regime, seed 7: 09:30 to 16:00, one tick a second
//! for SPX and SPY, about 47 thousand events) with 0, 1, 10 and 50 armed plans.
//!
//! - `engine/replay`: the engine alone over events already decoded in memory (the tick
//!   engine's own throughput);
//! - `engine/stream`: end to end, the streaming tape reader parsing the JSON Lines bytes
//!   plus the engine (what `kestrel run` does, minus file I/O).
//!
//! Throughput is in tape events (ticks plus the few iv and headline events).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kestrel_desk::bus::Bus;
use kestrel_desk::engine::{Engine, EngineConfig, synthetic_plans};
use kestrel_desk::lang::{self, Mode};
use kestrel_desk::market::{DEFAULT_DATE, Px, Regime, TapeReader, generate, write_generated};

fn bench(c: &mut Criterion) {
    let g = generate(Regime::Shock, 7, DEFAULT_DATE);
    let header = g.header().clone();
    let events: Vec<_> = g.collect();
    let mut bytes = Vec::new();
    write_generated(Regime::Shock, 7, DEFAULT_DATE, &mut bytes).expect("generate");
    let n_events = events.len() as u64;

    let mut group = c.benchmark_group("engine/replay");
    group.sample_size(10);
    group.throughput(Throughput::Elements(n_events));
    for n in [0usize, 1, 10, 50] {
        let doc = lang::check(&synthetic_plans(n), Mode::File).expect("valid plans");
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                let mut e = Engine::new(
                    &header,
                    EngineConfig::strict(Px(1000 * 10_000)),
                    Bus::new(None),
                );
                e.arm_document(&doc);
                for ev in &events {
                    e.on_event(ev);
                }
                e.finish().count()
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("engine/stream");
    group.sample_size(10);
    group.throughput(Throughput::Elements(n_events));
    for n in [0usize, 10] {
        let doc = lang::check(&synthetic_plans(n), Mode::File).expect("valid plans");
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                let r = TapeReader::new(bytes.as_slice()).expect("tape");
                let mut e = Engine::new(
                    r.header(),
                    EngineConfig::strict(Px(1000 * 10_000)),
                    Bus::new(None),
                );
                e.arm_document(&doc);
                for ev in r {
                    e.on_event(&ev.expect("event"));
                }
                e.finish().count()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
