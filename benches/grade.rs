//! Grading one plan over 100 full generated sessions (09:30–16:00, ≈ 47 thousand events
//! each; regimes cycle trend, range, shock: `generate_family(100, 1000)`), single process:
//! `GRADE plan vwap-cross OVER tapes/* FILL strict-cross-v1 VS null BY regime.intraday`
//! with 20 null draws per tape and 2,000 bootstrap resamples, i.e. 100 × 21 = 2,100 session
//! replays and 3 report cells.
//!
//! - `grade/files/100`: what `kestrel grade` does after parsing: resolve the job (reading
//!   every tape header), read each tape once from disk, replay every work unit, compute the
//!   report;
//! - `grade/memory/100`: the same with the tapes already decoded in memory (engine + stats).
//!
//! Throughput is in sessions graded. The tapes are written once to
//! `target/grade-bench-tapes/` (≈ 320 MB) and reused.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kestrel_desk::grade::{
    self, FileTapes, GradeError, LoadedTape, Options, Source, TapeRef, TapeSource,
};
use kestrel_desk::lang::{self, Mode};
use kestrel_desk::market::{Px, generate_family, read_tape_file, write_tape};

const SESSIONS: usize = 100;

const DOC: &str = "\
PLAN vwap-cross budget 1R ttl 15:00
  WHEN spot crosses above vwap AND NOT phase open
  DO buy 100 shares @ ask
  EXIT NOT plan(vwap-cross).filled within 5m

GRADE plan vwap-cross OVER tapes/* FILL strict-cross-v1
  VS null
  BY regime.intraday
";

fn tapes_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/grade-bench-tapes");
    let done = d.join(".complete-100");
    if !done.exists() {
        std::fs::create_dir_all(&d).expect("mkdir");
        for m in generate_family(SESSIONS, 1000) {
            let g = m.generate();
            let h = g.header().clone();
            let f = std::fs::File::create(d.join(m.file_name())).expect("create");
            let mut w = std::io::BufWriter::new(f);
            write_tape(&mut w, &h, g).expect("write");
        }
        std::fs::write(&done, "").expect("marker");
    }
    d
}

struct Memory(HashMap<String, Arc<LoadedTape>>);

impl TapeSource for Memory {
    fn load(&mut self, t: &TapeRef) -> Result<Arc<LoadedTape>, GradeError> {
        Ok(self.0[&t.path].clone())
    }
}

fn bench(c: &mut Criterion) {
    let dir = tapes_dir();
    let doc = lang::check(DOC, Mode::File).expect("valid");
    let sources = [Source {
        path: "bench.kestrel".into(),
        doc,
    }];
    let opts = Options {
        tapes: Some(dir.display().to_string()),
        ..Options::new(Px::from_cents(100_000))
    };
    let p = grade::prepare(&sources, &opts).expect("prepare");
    assert_eq!(p.job.grades[0].tapes.len(), SESSIONS);

    let mut group = c.benchmark_group("grade/files");
    group.sample_size(10);
    group.throughput(Throughput::Elements(SESSIONS as u64));
    group.bench_function("100", |b| {
        b.iter(|| {
            let p = grade::prepare(&sources, &opts).expect("prepare");
            let r = grade::run_all(&p, &mut FileTapes::default()).expect("grade");
            grade::report_json(&p.job, &r).len()
        })
    });
    group.finish();

    let mem = Memory(
        p.job.grades[0]
            .tapes
            .iter()
            .map(|t| {
                let (header, events) = read_tape_file(std::path::Path::new(&t.path)).expect("tape");
                (t.path.clone(), Arc::new(LoadedTape { header, events }))
            })
            .collect(),
    );
    let mut group = c.benchmark_group("grade/memory");
    group.sample_size(10);
    group.throughput(Throughput::Elements(SESSIONS as u64));
    group.bench_function("100", |b| {
        let mut m = Memory(mem.0.clone());
        b.iter(|| {
            let r = grade::run_all(&p, &mut m).expect("grade");
            grade::report_json(&p.job, &r).len()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
