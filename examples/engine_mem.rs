//! Peak memory and throughput of one streamed replay, measured honestly from inside the
//! process: `VmHWM` (peak resident set) from `/proc/self/status` after the run.
//!
//! ```text
//! cargo run --release --example engine_mem -- tapes/shock-2025-04-09-s7.jsonl 50
//! ```
//!
//! Streams the tape file through the reader and the engine with `n` synthetic plans armed
//! (the Bus is hashed and projected, not written), then prints events, seconds, events/s,
//! Bus events and VmHWM in KiB.

use std::time::Instant;

use kestrel_desk::bus::Bus;
use kestrel_desk::engine::{EngineConfig, replay, synthetic_plans};
use kestrel_desk::lang::{self, Mode};
use kestrel_desk::market::{Px, open_tape};

fn vm_hwm_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(path), n) = (args.next(), args.next()) else {
        eprintln!("usage: engine_mem TAPE [N_PLANS]");
        std::process::exit(1);
    };
    let n: usize = n.and_then(|s| s.parse().ok()).unwrap_or(10);
    let doc = match lang::check(&synthetic_plans(n), Mode::File) {
        Ok(d) => d,
        Err(_) => std::process::exit(2),
    };
    let before = vm_hwm_kib().unwrap_or(0);
    let t0 = Instant::now();
    let reader = match open_tape(std::path::Path::new(&path)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    // The plans step once per instant, as `kestrel run` steps them (`engine::replay`).
    let header = reader.header().clone();
    let mut count = 0u64;
    let events = reader.inspect(|ev| count += u64::from(ev.is_ok()));
    let cfg = EngineConfig::strict(Px(1000 * 10_000));
    let bus = match replay(
        &header,
        events,
        std::slice::from_ref(&doc),
        cfg,
        Bus::new(None),
    ) {
        Ok(bus) => bus,
        Err(err) => {
            eprintln!("{err}");
            std::process::exit(1);
        }
    };
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "plans={n} events={count} secs={secs:.4} events_per_sec={:.0} bus_events={} vm_hwm_kib_before={before} vm_hwm_kib={} hash={}",
        count as f64 / secs,
        bus.count(),
        vm_hwm_kib().unwrap_or(0),
        bus.hash_hex()
    );
}
