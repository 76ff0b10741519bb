//! `kestrel run`: headless replay of a tape with armed documents, and a per-plan report.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::bus::{self, Blotter, Bus};
use crate::engine::{Engine, EngineConfig, fill};
use crate::lang::{self, Document, Mode};
use crate::market::{Px, open_tape};

/// Arguments of `kestrel run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The tape (JSON Lines).
    #[arg(long)]
    pub tape: PathBuf,
    /// The documents to arm at the open (repeatable).
    #[arg(long, required = true)]
    pub plans: Vec<PathBuf>,
    /// The fill model.
    #[arg(long, default_value = "strict-cross-v1")]
    pub fill: String,
    /// Dollars per 1R (e.g. 1000).
    #[arg(long = "r-usd")]
    pub r_usd: String,
    /// Print the canonical JSON report.
    #[arg(long)]
    pub json: bool,
    /// Write the Bus (JSON Lines) here, atomically.
    #[arg(long)]
    pub bus: Option<PathBuf>,
}

/// One plan's line of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanReport {
    /// Plan name.
    pub name: String,
    /// Final state.
    pub state: String,
    /// Entry fires.
    pub fires: u64,
    /// Fills.
    pub fills: u64,
    /// P&L, dollars.
    pub pnl_usd: Px,
    /// P&L, R.
    pub pnl_r: Px,
    /// Maximum adverse excursion, dollars.
    pub mae_usd: Px,
    /// Maximum adverse excursion, R.
    pub mae_r: Px,
}

/// Per-plan lines from a Blotter, in order of first appearance.
pub fn plan_reports(b: &Blotter) -> Vec<PlanReport> {
    b.plan_names()
        .into_iter()
        .filter_map(|n| {
            let l = b.plans.get(&n)?;
            let pnl = b.pnl(&n);
            let state = serde_json::to_value(l.state)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            Some(PlanReport {
                state,
                fires: l.fires,
                fills: l.fills,
                pnl_usd: Px(pnl),
                pnl_r: b.in_r(pnl).unwrap_or(Px::ZERO),
                mae_usd: Px(l.mae),
                mae_r: b.in_r(l.mae).unwrap_or(Px::ZERO),
                name: n,
            })
        })
        .collect()
}

/// A JSON number from an exact decimal (printing is then the shortest round-trip form of that
/// decimal, the same on every machine).
fn num(p: Px) -> serde_json::Value {
    p.to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// The canonical JSON report (sorted keys, exact decimals, one line).
pub fn json_report(bus: &Bus, tape_path: &str) -> String {
    let b = bus.blotter();
    let plans: Vec<serde_json::Value> = plan_reports(b)
        .into_iter()
        .map(|p| {
            serde_json::json!({
                "name": p.name,
                "state": p.state,
                "fires": p.fires,
                "fills": p.fills,
                "pnl_usd": num(p.pnl_usd),
                "pnl_r": num(p.pnl_r),
                "mae_usd": num(p.mae_usd),
                "mae_r": num(p.mae_r),
            })
        })
        .collect();
    let total = b.book_pnl();
    let v = serde_json::json!({
        "tape": b.tape,
        "tape_path": tape_path,
        "fill_model": b.fill_model,
        "r_usd": num(b.r_usd),
        "determinism_hash": bus.hash_hex(),
        "bus_events": bus.count(),
        "plans": plans,
        "pnl_usd": num(Px(total)),
        "pnl_r": num(b.in_r(total).unwrap_or(Px::ZERO)),
    });
    v.to_string()
}

/// The human report.
pub fn text_report(bus: &Bus) -> String {
    let b = bus.blotter();
    let mut s = String::new();
    s.push_str(&format!(
        "tape {}  fill {}  1R = ${}\n",
        b.tape, b.fill_model, b.r_usd
    ));
    s.push_str(&format!(
        "{:<24} {:<11} {:>5} {:>5} {:>12} {:>9} {:>12} {:>9}\n",
        "plan", "state", "fires", "fills", "pnl $", "pnl R", "mae $", "mae R"
    ));
    for p in plan_reports(b) {
        s.push_str(&format!(
            "{:<24} {:<11} {:>5} {:>5} {:>12} {:>9} {:>12} {:>9}\n",
            p.name,
            p.state,
            p.fires,
            p.fills,
            p.pnl_usd.to_string(),
            p.pnl_r.to_string(),
            p.mae_usd.to_string(),
            p.mae_r.to_string()
        ));
    }
    let total = b.book_pnl();
    s.push_str(&format!(
        "book pnl ${} ({}R)\ndeterminism {}\n",
        Px(total),
        b.in_r(total).unwrap_or(Px::ZERO),
        bus.hash_hex()
    ));
    s
}

fn temp_path(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "bus".into());
    out.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Run `kestrel run`; returns the exit code (0 ok, 1 usage / I/O / bad tape, 2 refused
/// document).
pub fn run(a: Args) -> i32 {
    let r_usd = match bus::parse_px(a.r_usd.trim()) {
        Some(p) if p > Px::ZERO => p,
        _ => {
            eprintln!(
                "error code=USAGE message=--r-usd must be a positive amount of dollars, got {:?}",
                a.r_usd
            );
            return 1;
        }
    };
    let Some(model) = fill::by_name(&a.fill) else {
        eprintln!(
            "error code=USAGE message=unknown fill model {:?} (known: {})",
            a.fill,
            fill::FILL_MODELS.join(", ")
        );
        return 1;
    };
    let mut docs: Vec<Document> = Vec::new();
    let mut refused = false;
    for path in &a.plans {
        let src = match std::fs::read_to_string(path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error code=IO message=cannot read {}: {e}", path.display());
                return 1;
            }
        };
        match lang::check(&src, Mode::File) {
            Ok(d) => docs.push(d),
            Err(errs) => {
                refused = true;
                for e in errs {
                    eprintln!("{}: {}", path.display(), e.one_line());
                }
            }
        }
    }
    if refused {
        return 2;
    }
    let reader = match open_tape(&a.tape) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{}: {e}", a.tape.display());
            return 1;
        }
    };
    let header = reader.header().clone();
    let tmp = a.bus.as_ref().map(|o| temp_path(o));
    let sink: Option<Box<dyn Write>> = match &tmp {
        Some(t) => match std::fs::File::create(t) {
            Ok(f) => Some(Box::new(std::io::BufWriter::new(f))),
            Err(e) => {
                eprintln!("error code=IO message=cannot create {}: {e}", t.display());
                return 1;
            }
        },
        None => None,
    };
    let cleanup = |t: &Option<PathBuf>| {
        if let Some(t) = t {
            let _ = std::fs::remove_file(t);
        }
    };
    let cfg = EngineConfig { r_usd, fill: model };
    let mut engine = Engine::new(&header, cfg, Bus::new(sink));
    for d in &docs {
        engine.arm_document(d);
    }
    for ev in reader {
        match ev {
            Ok(ev) => engine.on_event(&ev),
            Err(e) => {
                drop(engine);
                cleanup(&tmp);
                eprintln!("{}: {e}", a.tape.display());
                return 1;
            }
        }
    }
    let bus = engine.finish();
    if let Some(e) = bus.error() {
        eprintln!("error code=IO message=writing the bus: {e}");
        drop(bus);
        cleanup(&tmp);
        return 1;
    }
    let report = if a.json {
        json_report(&bus, &a.tape.display().to_string()) + "\n"
    } else {
        text_report(&bus)
    };
    match bus.into_sink() {
        Ok(sink) => drop(sink),
        Err(e) => {
            eprintln!("error code=IO message=flushing the bus: {e}");
            cleanup(&tmp);
            return 1;
        }
    }
    if let (Some(t), Some(out)) = (&tmp, &a.bus) {
        if let Err(e) = std::fs::rename(t, out) {
            eprintln!("error code=IO message=cannot write {}: {e}", out.display());
            cleanup(&tmp);
            return 1;
        }
    }
    let mut o = std::io::stdout().lock();
    if o.write_all(report.as_bytes()).is_err() {
        return 1;
    }
    0
}
