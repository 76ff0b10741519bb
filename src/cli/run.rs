//! `kestrel run`: headless replay of a tape with armed documents, and a per-plan report.

use std::path::PathBuf;

use super::out;

use crate::bus::{self, Blotter, Bus};
use crate::engine::{ArmWarning, EngineConfig, fill};
use crate::market::{Px, TapeReader};
use crate::session::{Headless, Reader, RunConfig, Session};

/// Arguments of `kestrel run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The tape (JSON Lines).
    #[arg(long)]
    pub tape: PathBuf,
    /// The documents to arm at the open (repeatable).
    #[arg(long, required = true)]
    pub plans: Vec<PathBuf>,
    #[command(flatten)]
    pub engine: super::flags::Engine,
    #[command(flatten)]
    pub out: super::flags::Json,
    /// Write the Bus (JSON Lines) to this file, atomically (`-` is refused: standard output
    /// carries the report).
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
    /// Realised P&L, dollars.
    pub real_usd: Px,
    /// Open P&L at the marks (docs/runtime.md, "Marking"), dollars.
    pub open_usd: Px,
    /// P&L (realised + open), dollars.
    pub pnl_usd: Px,
    /// P&L, R.
    pub pnl_r: Px,
    /// Maximum adverse excursion, dollars.
    pub mae_usd: Px,
    /// Maximum adverse excursion, R.
    pub mae_r: Px,
    /// Why a de-armed plan was de-armed (`UNKNOWN symbol SPX: the tape does not carry it
    /// (USING)`): a plan that never could act on this tape, told apart from one that never
    /// triggered. `None` for every other state.
    pub reason: Option<String>,
    /// Tickets (or re-prices) L0 risk refused.
    pub vetoes: u64,
    /// Tickets (or re-prices) L0 risk scaled down.
    pub clamps: u64,
    /// The last of those decisions in a few words, with the budget that made it
    /// (`VETO worst $50.00 > $21.00 left (re-price esc#1 1.04), by the book spy budget`).
    pub risk: Option<String>,
    /// The POD whose day-loss halt left the plan `halted` (its `plan-state` said `POD desk
    /// day-loss`): told apart from a plan an INVALIDATE halted. `None` for every other plan.
    pub pod: Option<String>,
}

impl PlanReport {
    /// The state as the text report's table says it: `halted (pod)` for a plan a POD's
    /// day-loss halt left halted (an INVALIDATE's is `halted`).
    pub fn shown_state(&self) -> String {
        match &self.pod {
            Some(_) => format!("{} (pod)", self.state),
            None => self.state.clone(),
        }
    }
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
            let reason = l
                .reason
                .clone()
                .filter(|_| l.state == crate::bus::PlanState::DeArmed);
            let pod = b
                .pod_halts
                .iter()
                .rev()
                .find(|h| {
                    l.state == crate::bus::PlanState::Halted
                        && l.reason.as_deref() == Some(h.reason().as_str())
                })
                .map(|h| h.pod.clone());
            Some(PlanReport {
                state,
                reason,
                pod,
                vetoes: l.vetoes,
                clamps: l.clamps,
                risk: l
                    .risk
                    .as_ref()
                    .map(|r| format!("{}, by the {} budget", r.short(), r.budget)),
                fires: l.fires,
                fills: l.fills,
                real_usd: Px(b.realised(&n)),
                open_usd: Px(b.open(&n)),
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
/// `warnings`: the warnings at arming the run's engine gave ([`arm_warnings`]), in a
/// `warnings` array as the MCP tools carry theirs (`code`, `message`, the `warning` line).
pub fn json_report(bus: &Bus, tape_path: &str, warnings: &[ArmWarning]) -> String {
    let b = bus.blotter();
    let plans: Vec<serde_json::Value> = plan_reports(b)
        .into_iter()
        .map(|p| {
            let mut v = serde_json::json!({
                "name": p.name,
                "state": p.state,
                "fires": p.fires,
                "fills": p.fills,
                "realised_usd": num(p.real_usd),
                "open_usd": num(p.open_usd),
                "pnl_usd": num(p.pnl_usd),
                "pnl_r": num(p.pnl_r),
                "mae_usd": num(p.mae_usd),
                "mae_r": num(p.mae_r),
            });
            // Only a de-armed plan, or one a POD's day-loss halt left halted (the Bus's
            // reason, `POD desk day-loss`), has one, so every other report keeps its bytes.
            let pod = p.pod.as_deref().map(crate::bus::blotter::pod_halt_reason);
            if let (Some(r), Some(o)) = (p.reason.or(pod), v.as_object_mut()) {
                o.insert("reason".into(), serde_json::Value::String(r));
            }
            // Only a plan L0 risk refused or scaled has them: the rest keep their bytes.
            if let Some(o) = v.as_object_mut() {
                for (key, n) in [("vetoes", p.vetoes), ("clamps", p.clamps)] {
                    if n > 0 {
                        o.insert(key.into(), n.into());
                    }
                }
            }
            v
        })
        .collect();
    let total = b.book_pnl();
    let halts: Vec<serde_json::Value> = b
        .pod_halts
        .iter()
        .map(|h| {
            serde_json::json!({
                "pod": h.pod,
                "ts": h.ts.to_string(),
                "loss_usd": num(h.loss),
                "limit_usd": num(h.limit),
                "halted": h.halted,
                "pulled": h.pulled.iter().map(|(plan, n)| serde_json::json!({"plan": plan, "orders": n})).collect::<Vec<_>>(),
                "flattened": h.flattened,
                "note": pod_halt_note(h),
            })
        })
        .collect();
    let mut v = serde_json::json!({
        "tape": b.tape,
        "tape_path": tape_path,
        "fill_model": b.fill_model,
        "r_usd": num(b.r_usd),
        "determinism_hash": bus.hash_hex(),
        "bus_events": bus.count(),
        "plans": plans,
        "realised_usd": num(Px(b.book_realised())),
        "open_usd": num(Px(b.book_open())),
        "pnl_usd": num(Px(total)),
        "pnl_r": num(b.in_r(total).unwrap_or(Px::ZERO)),
    });
    // Only a run with a POD halt, or a warning at arming, has them: the rest keep their
    // bytes.
    if let Some(o) = v.as_object_mut() {
        if !halts.is_empty() {
            o.insert("pod_halts".into(), serde_json::Value::Array(halts));
        }
        if !warnings.is_empty() {
            o.insert("warnings".into(), warnings_json(warnings));
        }
    }
    // A multi-session tape (v2): each session's results too; the top-level figures are
    // the sums over its sessions. A v1 tape's report is unchanged.
    let sessions = b.session_results();
    if sessions.len() > 1
        && let Some(o) = v.as_object_mut()
    {
        let list: Vec<serde_json::Value> = sessions
            .iter()
            .map(|s| {
                let plans: Vec<serde_json::Value> = s
                    .plans
                    .iter()
                    .map(|p| {
                        serde_json::json!({
                            "name": p.name,
                            "state": crate::bus::canon::state_name(p.state),
                            "fires": p.fires,
                            "fills": p.fills,
                            "pnl_usd": num(Px(p.pnl)),
                            "pnl_r": num(b.in_r(p.pnl).unwrap_or(Px::ZERO)),
                        })
                    })
                    .collect();
                serde_json::json!({
                    "session": s.session,
                    "date": s.date,
                    "plans": plans,
                    "pnl_usd": num(Px(s.pnl)),
                    "pnl_r": num(b.in_r(s.pnl).unwrap_or(Px::ZERO)),
                })
            })
            .collect();
        o.insert("sessions".into(), serde_json::Value::Array(list));
    }
    bus::canonical_json(&v)
}

/// Dollars with cents, rounded half away from zero: `-1.3274` → `-1.33`, `191` → `191.00`.
pub(crate) fn usd(p: Px) -> String {
    p.cents()
}

/// An amount with its dollar sign after the minus, as the desk writes money: `$609.56`,
/// `-$16.34` (not `$-16.34`).
fn dollars(p: Px) -> String {
    let c = usd(p);
    match c.strip_prefix('-') {
        Some(abs) => format!("-${abs}"),
        None => format!("${c}"),
    }
}

/// An amount of R with exactly four decimals (the Blotter's precision): `0.191` → `0.1910`.
pub(crate) fn in_r(p: Px) -> String {
    let raw = i128::from(p.raw());
    let abs = raw.abs();
    let sign = if raw < 0 { "-" } else { "" };
    format!("{sign}{}.{:04}", abs / 10_000, abs % 10_000)
}

/// Columns padded to their widest cell: the first `left` columns left-aligned, the rest
/// right-aligned (so decimal points line up), two spaces apart, no trailing spaces.
fn table(rows: &[Vec<String>], left: usize) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            let w = width[c];
            if c < left {
                line.push_str(&format!("{cell:<w$}"));
            } else {
                line.push_str(&format!("{cell:>w$}"));
            }
        }
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s
}

/// One line per de-armed plan saying why (`note: plan a de-armed: UNKNOWN symbol SPX: the
/// tape does not carry it (USING)`), under the plan table: a plan that could not act on this
/// tape is told apart from one that never triggered. Empty when no plan was de-armed.
fn why_de_armed(plans: &[PlanReport]) -> String {
    plans
        .iter()
        .filter_map(|p| {
            let r = p.reason.as_deref()?;
            Some(format!(
                "note: plan {} {}: {}\n",
                p.name,
                p.state,
                crate::lang::diag::visible_line(r)
            ))
        })
        .collect()
}

/// One line per plan L0 risk refused or scaled (`note: plan c done: vetoed 1×: last VETO
/// worst $50.00 > $21.00 left (re-price esc#1 1.04), by the book spy budget`): the counts,
/// the last decision in a few words and the budget that made it, so a plan its budget (or
/// its BOOK's) stopped is told apart from one that did not fill. Empty when risk decided
/// nothing.
fn risk_notes(plans: &[PlanReport]) -> String {
    plans
        .iter()
        .filter_map(|p| {
            let last = p.risk.as_deref()?;
            let mut said = Vec::new();
            if p.vetoes > 0 {
                said.push(format!("vetoed {}×", p.vetoes));
            }
            if p.clamps > 0 {
                said.push(format!("clamped {}×", p.clamps));
            }
            Some(format!(
                "note: plan {} {}: {}: last {}\n",
                p.name,
                p.state,
                said.join(", "),
                crate::lang::diag::visible_line(last)
            ))
        })
        .collect()
}

/// What a POD's day-loss halt did, as the engine did it: `POD desk halted at 09:35:29: day
/// loss $15.36 over its $10.00 limit; halted breakout, vwap-flush; pulled 1 working order
/// of breakout; flattened vwap-flush`.
fn pod_halt_note(h: &crate::bus::blotter::PodHaltLine) -> String {
    let mut s = format!(
        "POD {} halted at {}: day loss {} over its {} limit",
        h.pod,
        h.ts.hhmmss(),
        dollars(h.loss),
        dollars(h.limit)
    );
    if h.halted.is_empty() {
        s.push_str("; no plan was live to halt");
    } else {
        s.push_str(&format!("; halted {}", h.halted.join(", ")));
    }
    if !h.pulled.is_empty() {
        let n: u64 = h.pulled.iter().map(|(_, n)| n).sum();
        let of: Vec<&str> = h.pulled.iter().map(|(p, _)| p.as_str()).collect();
        s.push_str(&format!(
            "; pulled {n} working order{} of {}",
            if n == 1 { "" } else { "s" },
            of.join(", ")
        ));
    }
    if !h.flattened.is_empty() {
        s.push_str(&format!("; flattened {}", h.flattened.join(", ")));
    }
    s
}

/// The warnings at arming once each, in order: a multi-session tape arms its opening
/// documents again at every session, and says the same of them each time.
pub fn arm_warnings(warnings: Vec<ArmWarning>) -> Vec<ArmWarning> {
    let mut seen = std::collections::BTreeSet::new();
    warnings
        .into_iter()
        .filter(|w| seen.insert((w.code, w.plan.clone(), w.message.clone())))
        .collect()
}

/// The `warnings` array of a JSON report: each warning's code, plan, tape time, message and
/// the line `kestrel run` printed for it.
fn warnings_json(warnings: &[ArmWarning]) -> serde_json::Value {
    warnings
        .iter()
        .map(|w| {
            serde_json::json!({
                "code": w.code,
                "plan": w.plan,
                "ts": w.ts.to_string(),
                "message": w.message,
                "warning": w.line(),
            })
        })
        .collect()
}

/// One line per warning at arming (`note: plan late done: its ttl 09:00 is already past at
/// 09:30: it expires at once, before it can fire (TTL-PAST)`), with the plan's state.
fn warning_notes(plans: &[PlanReport], warnings: &[ArmWarning]) -> String {
    warnings
        .iter()
        .map(|w| {
            let state = plans
                .iter()
                .find(|p| p.name == w.plan)
                .map(|p| format!(" {}", p.shown_state()))
                .unwrap_or_default();
            format!(
                "note: plan {}{state}: {} ({})\n",
                w.plan,
                crate::lang::diag::visible_line(&w.message),
                w.code
            )
        })
        .collect()
}

/// The human report: money in dollars and cents, R to four decimals, columns aligned.
/// `warnings`: the warnings at arming the run's engine gave ([`arm_warnings`]), each a note.
pub fn text_report(bus: &Bus, warnings: &[ArmWarning]) -> String {
    let b = bus.blotter();
    let mut s = String::new();
    s.push_str(&format!(
        "tape {}  fill {}  1R = ${}\n",
        b.tape,
        b.fill_model,
        // The R the run used, to its last decimal (`250.505`): rounded to cents, two runs
        // that differ in R read the same (`$250.51`) over different figures.
        b.r_usd
    ));
    let mut rows = vec![
        [
            "plan", "state", "fires", "fills", "real $", "open $", "pnl $", "pnl R", "mae $",
            "mae R",
        ]
        .map(String::from)
        .to_vec(),
    ];
    let plans = plan_reports(b);
    for p in plans.iter().cloned() {
        rows.push(vec![
            p.name.clone(),
            p.shown_state(),
            p.fires.to_string(),
            p.fills.to_string(),
            usd(p.real_usd),
            usd(p.open_usd),
            usd(p.pnl_usd),
            in_r(p.pnl_r),
            usd(p.mae_usd),
            in_r(p.mae_r),
        ]);
    }
    s.push_str(&table(&rows, 2));
    for h in &b.pod_halts {
        s.push_str(&format!("note: {}\n", pod_halt_note(h)));
    }
    s.push_str(&why_de_armed(&plans));
    s.push_str(&risk_notes(&plans));
    s.push_str(&warning_notes(&plans, warnings));
    let sessions = b.session_results();
    if sessions.len() > 1 {
        let mut rows = vec![
            [
                "session", "date", "plan", "state", "fires", "fills", "pnl $", "pnl R",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for x in &sessions {
            for p in &x.plans {
                rows.push(vec![
                    x.session.to_string(),
                    x.date.clone(),
                    p.name.clone(),
                    crate::bus::canon::state_name(p.state).to_string(),
                    p.fires.to_string(),
                    p.fills.to_string(),
                    usd(Px(p.pnl)),
                    in_r(b.in_r(p.pnl).unwrap_or(Px::ZERO)),
                ]);
            }
            rows.push(vec![
                x.session.to_string(),
                x.date.clone(),
                "(book)".into(),
                String::new(),
                String::new(),
                String::new(),
                usd(Px(x.pnl)),
                in_r(b.in_r(x.pnl).unwrap_or(Px::ZERO)),
            ]);
        }
        s.push_str(&table(&rows, 4));
    }
    let total = b.book_pnl();
    s.push_str(&format!(
        "book pnl {} ({}R): realised {}, open {}\ndeterminism {}\n",
        dollars(Px(total)),
        in_r(b.in_r(total).unwrap_or(Px::ZERO)),
        dollars(Px(b.book_realised())),
        dollars(Px(b.book_open())),
        bus.hash_hex()
    ));
    s
}

/// Dollars per 1R, from its text (`1000`, `250.50`), or the usage message saying what is
/// wrong with it: not positive, more than four decimals, or not written as plain digits
/// (`1e3`, `+1000`, `1,000`: all read as "must be positive" before).
pub(crate) fn parse_r_usd(r_name: &str, text: &str) -> Result<Px, String> {
    let t = text.trim();
    let parsed = bus::parse_px(t);
    if let Some(p) = parsed.filter(|p| *p > Px::ZERO) {
        return Ok(p);
    }
    let unsigned = t.strip_prefix('-').unwrap_or(t);
    let (int, frac) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    let plain = digits(int) && (frac.is_empty() || digits(frac)) && !unsigned.ends_with('.');
    // Zero, or a negative amount written as a number (of any precision or size).
    if parsed.is_some() || (plain && t.starts_with('-')) {
        return Err(format!(
            "{r_name} must be a positive amount of dollars, got {text:?}"
        ));
    }
    let why = if t.is_empty() {
        "is empty"
    } else if !plain {
        "is not written as plain digits"
    } else if frac.len() > 4 {
        "has more than four decimals"
    } else {
        "is too large"
    };
    Err(format!(
        "{r_name} {text:?} {why}: write dollars like 1000 or 250.50"
    ))
}

/// Dollars per 1R and a fill model's name as an engine configuration, or the usage message
/// to print. `r_name` names the amount as the caller's interface does (`--r-usd` on the
/// command line, `r_usd` for the MCP `run` tool).
pub(crate) fn engine_config(
    r_name: &str,
    r_usd: &str,
    fill_name: &str,
) -> Result<EngineConfig, String> {
    let r_usd = parse_r_usd(r_name, r_usd)?;
    let Some(model) = fill::by_name(fill_name) else {
        return Err(format!(
            "unknown fill model {fill_name:?} (known: {})",
            fill::FILL_MODELS.join(", ")
        ));
    };
    Ok(EngineConfig {
        fill: model,
        ..EngineConfig::strict(r_usd)
    })
}

/// What a headless replay reads and writes: the checked documents, the open tape, and the
/// Bus file (written beside its final name, renamed when the run is done).
pub(crate) struct Inputs {
    pub docs: Vec<crate::lang::Document>,
    pub reader: TapeReader<Reader>,
    pub pending: Option<out::Pending>,
    pub sink: Option<out::Sink>,
}

/// Why `--bus -` is refused.
const BUS_DASH: &str = "--bus - names no file: give a file path (standard output carries the report; the Bus is written to its file atomically)";

/// Check `--plans`, open `--tape` and `--bus` for `kestrel run` and `kestrel agent`; on a
/// refusal the message is printed and the exit code returned. A `--bus` that names one of
/// the inputs (`--tape`, a `--plans` file, or one of `others`, such as the author file) is
/// refused before anything is written: the Bus would be renamed over it; so is `--bus -`
/// (standard output carries the report).
pub(crate) fn open_inputs(
    plans: &[PathBuf],
    tape: &std::path::Path,
    bus: Option<&std::path::Path>,
    others: &[(&str, &std::path::Path)],
) -> Result<Inputs, i32> {
    if let Some(b) = bus {
        // `-` is standard output elsewhere (`tape gen -o -`), but here standard output
        // carries the report: a file named `-` was written where the Bus was expected.
        if b == std::path::Path::new("-") {
            errln!("error code=USAGE message={BUS_DASH}");
            return Err(1);
        }
        let inputs = std::iter::once(("--tape", tape))
            .chain(plans.iter().map(|p| ("--plans", p.as_path())))
            .chain(others.iter().copied());
        for (flag, input) in inputs {
            if out::same_file(b, input) {
                errln!(
                    "error code=USAGE message=--bus {} names an input file ({flag} {}): refusing to overwrite it; write the Bus elsewhere",
                    b.display(),
                    input.display()
                );
                return Err(1);
            }
        }
    }
    let docs = super::lang::check_files_with_source(plans)?;
    if let Some(e) = names_across_documents(plans, &docs) {
        errln!("{e}");
        return Err(super::flags::EXIT_REFUSED);
    }
    let docs = docs.into_iter().map(|(d, _)| d).collect();
    let reader = open_tape_or_say(tape).map_err(|e| {
        errln!("{e}");
        1
    })?;
    let (pending, sink) = out::bus_sink(bus).map_err(|e| {
        errln!("{e}");
        1
    })?;
    Ok(Inputs {
        docs,
        reader,
        pending,
        sink,
    })
}

/// The refusal of `--plans` documents that declare one name twice between them (a PLAN, a
/// VIEW, a WAKE, a POD or a BOOK, as one document may not: `rule=duplicate-name`), naming
/// both files and lines; `None` when every name is declared once. Two live plans of one
/// name would each have their own budget and share one report row; the headless verbs have
/// one author, whose starting book is every document at once, so one of them cannot
/// replace the other the way a person's later turn replaces a plan at the desk.
pub(crate) fn names_across_documents(
    paths: &[PathBuf],
    docs: &[(crate::lang::Document, String)],
) -> Option<String> {
    // (name space, name) -> (document, (line, col)) of its first declaration.
    type First = (usize, (usize, usize));
    let mut seen: std::collections::BTreeMap<(&str, &str), First> =
        std::collections::BTreeMap::new();
    for (i, (doc, src)) in docs.iter().enumerate() {
        let index = crate::lang::LineIndex::new(src);
        for st in &doc.statements {
            // The checker's name spaces, except that a SHOW VIEW's name is a view's too:
            // across documents, one VIEW and one SHOW VIEW of one name are one view twice.
            let ns = match crate::lang::rules::name_space(&st.kind) {
                Some("SHOW VIEW") => "VIEW",
                Some(ns) => crate::lang::rules::name_word(ns),
                None => continue,
            };
            let Some(name) = st.kind.name() else {
                continue;
            };
            let at = index.line_col(st.span.start as usize);
            match seen.get(&(ns, name.text.as_str())) {
                // Twice in one document is the checker's to refuse (it was).
                Some(&(j, _)) if j != i && out::same_file(&paths[i], &paths[j]) => {
                    return Some(format!(
                        "{}: error code=PARSE rule=duplicate-name message=the file is given twice to --plans (duplicate {ns} name `{}`): give it once",
                        paths[i].display(),
                        name.text
                    ));
                }
                Some(&(j, first)) if j != i => {
                    return Some(format!(
                        "{}: error code=PARSE rule=duplicate-name message=duplicate {ns} name `{}`: {} declares it too (line {}, col {}); names are keys (lineage, ARM, plan(...) and the Blotter use them), and two --plans documents cannot both arm one: rename one of them (line {}, col {})",
                        paths[i].display(),
                        name.text,
                        paths[j].display(),
                        first.0,
                        first.1,
                        at.0,
                        at.1
                    ));
                }
                Some(_) => {}
                None => {
                    seen.insert((ns, name.text.as_str()), (i, at));
                }
            }
        }
    }
    None
}

/// Open `--tape`, or the line to print: for a file that is not a tape at all (a Kestrel
/// document, a Bus, a directory, no file) what it is and what to do; otherwise the tape
/// reader's own coded error, after the path.
pub(crate) fn open_tape_or_say(tape: &std::path::Path) -> Result<TapeReader<Reader>, String> {
    crate::market::open_tape(tape)
        .map(TapeReader::boxed)
        .map_err(|e| {
            super::sniff::not_a_tape(tape).unwrap_or_else(|| format!("{}: {e}", tape.display()))
        })
}

/// Read the whole of `--tape` as the replay will ([`crate::market::check_tape`]), or the line
/// to print: the tape reader's coded error after the path, as [`play`] prints it at the end.
/// For a verb whose replay has costs before the end (`kestrel agent` asks its author at
/// every wake) so a tape it would refuse at the end is refused before it starts.
pub(crate) fn check_whole_tape(tape: &std::path::Path) -> Result<(), String> {
    // Only a regular file can be read a second time: a pipe or a FIFO (`--tape
    // /dev/stdin`, `<(zcat t.gz)`) is streamed once, and checked as `run` checks it, at its
    // end.
    if !std::fs::metadata(tape).is_ok_and(|m| m.is_file()) {
        return Ok(());
    }
    let f = std::fs::File::open(tape).map_err(|e| super::cannot_read(tape, &e))?;
    crate::market::check_tape(std::io::BufReader::with_capacity(1 << 16, f))
        .map(drop)
        .map_err(|e| format!("{}: {e}", tape.display()))
}

/// Play a headless session to the end, stopping at SIGTERM/SIGINT: the session at the end
/// of the tape, or the exit code once the refusal or the interruption has been said (and an
/// interrupted run's Bus committed).
pub(crate) fn play(
    mut s: Session,
    tape: &std::path::Path,
    pending: &mut Option<out::Pending>,
) -> Result<Session, i32> {
    match s.play_to_end(&mut super::signals::caught) {
        Ok(None) => Ok(s),
        Ok(Some(sig)) => Err(finish_interrupted(
            s.interrupt(&interrupted_message(sig)),
            pending.take(),
            sig,
        )),
        Err(e) => {
            errln!("{}: {e}", tape.display());
            Err(1)
        }
    }
}

/// A headless session over `reader` with `docs` armed at the open and nobody asked at the
/// wakes: the whole book is the documents (`kestrel run`, the MCP `run` tool).
pub(crate) fn book_session(
    label: &str,
    reader: TapeReader<Reader>,
    docs: Vec<crate::lang::Document>,
    engine: EngineConfig,
    bus: Bus,
) -> Result<Session, String> {
    let cfg = RunConfig {
        engine,
        profile: crate::turn::Profile::AuthoringV2,
        author: crate::turn::AuthorKind::File,
        open_wake: false,
        view_request_cap: None,
    };
    let h = Headless {
        bus,
        docs,
        author: None,
    };
    Session::headless(label, reader, cfg, h)
}

/// The Bus `error` message of a run cut short by `sig`.
pub(crate) fn interrupted_message(sig: &str) -> String {
    format!("interrupted by {sig}: the run stopped here, before the end of the tape")
}

/// Flush and commit the Bus of an interrupted run, and say so; the exit code (1).
pub(crate) fn finish_interrupted(bus: Bus, pending: Option<out::Pending>, sig: &str) -> i32 {
    let flushed = bus
        .error()
        .map(|e| e.to_string())
        .map_or_else(|| bus.into_sink().map(drop).map_err(|e| e.to_string()), Err);
    if let Err(e) = flushed {
        errln!("error code=IO message=writing the bus: {e}");
        return 1;
    }
    if let Err(e) = out::commit(pending) {
        errln!("{e}");
        return 1;
    }
    errln!(
        "error code=INTERRUPTED message={sig}: the run stopped before the end of the tape; the Bus ends with an error event there"
    );
    1
}

/// Does any of `docs` hold a PLAN? A run without one replays with nothing armed (`NO-PLANS`).
pub(crate) fn holds_a_plan(docs: &[crate::lang::ast::Document]) -> bool {
    docs.iter()
        .flat_map(|d| &d.statements)
        .any(|st| matches!(st.kind, crate::lang::ast::StatementKind::Plan(_)))
}

/// The `NO-PLANS` warning's message for `what` (`--plans a.kestrel`, `plans`), whose verb
/// is `holds` or `hold`.
pub(crate) fn no_plans_message(what: &str, verb: &str) -> String {
    format!("{what} {verb} no PLAN: the tape replays with nothing armed")
}

/// The `NO-PLANS` warning line (`warning code=NO-PLANS message=...`) for `what`, as `run`
/// and `check` write it on stderr.
pub(crate) fn no_plans_warning(what: &str, verb: &str) -> String {
    format!(
        "warning code=NO-PLANS message={}",
        no_plans_message(what, verb)
    )
}

/// Run `kestrel run`; returns the exit code (0 ok, 1 usage / I/O / bad tape, 2 refused
/// document).
pub fn run(a: Args) -> i32 {
    let cfg = match engine_config("--r-usd", &a.engine.r.r_usd, &a.engine.fill) {
        Ok(c) => c,
        Err(e) => {
            errln!("error code=USAGE message={e}");
            return 1;
        }
    };
    let Inputs {
        docs,
        reader,
        pending,
        sink,
    } = match open_inputs(&a.plans, &a.tape, a.bus.as_deref(), &[]) {
        Ok(x) => x,
        Err(code) => return code,
    };
    if !holds_a_plan(&docs) {
        // Valid, and runs (the tape's own figures), but nothing can trade: say so. `run`
        // arms what the files say; an IMPORT is followed only by `grade`.
        let files: Vec<String> = a.plans.iter().map(|p| p.display().to_string()).collect();
        errln!(
            "{}",
            no_plans_warning(
                &format!("--plans {}", files.join(", ")),
                if files.len() == 1 { "holds" } else { "hold" }
            )
        );
    }
    super::signals::install();
    let label = a.tape.display().to_string();
    let s = match book_session(&label, reader, docs, cfg, Bus::new(sink)) {
        Ok(s) => s,
        Err(e) => {
            errln!("error code=TAPE message={e}");
            return 1;
        }
    };
    // The plans armed at the open are warned of before the tape plays; those an ARM arms
    // later, once it has.
    let mut s = s;
    let opening = arm_warnings(s.take_arm_warnings());
    for w in &opening {
        errln!("{}", w.line());
    }
    let mut pending = pending;
    let mut s = match play(s, &a.tape, &mut pending) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let mut all = opening.clone();
    all.extend(s.take_arm_warnings());
    let warnings = arm_warnings(all);
    for w in &warnings[opening.len()..] {
        errln!("{}", w.line());
    }
    let bus = s.finish();
    if let Some(e) = bus.error() {
        errln!("error code=IO message=writing the bus: {e}");
        return 1;
    }
    let report = if a.out.json {
        json_report(&bus, &a.tape.display().to_string(), &warnings) + "\n"
    } else {
        text_report(&bus, &warnings)
    };
    match bus.into_sink() {
        Ok(sink) => drop(sink),
        Err(e) => {
            errln!("error code=IO message=flushing the bus: {e}");
            return 1;
        }
    }
    if let Err(e) = out::commit(pending) {
        errln!("{e}");
        return 1;
    }
    out::stdout(&report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::{self, Mode};
    use crate::market::open_tape;
    use std::path::Path;

    // The session closes at 09:31, right after the last tick (a tape that ends long before
    // its close is refused as cut short).
    const HDR: &str = r#"{"type":"header","v":1,"name":"tiny","date":"2025-04-09","open":"09:30","close":"09:31","symbols":{"SPY":{"prior_close":100.0}}}"#;
    const PLAN: &str =
        "PLAN up budget 1R ttl +10m\n  WHEN spot crosses above 100.7\n  DO buy 10 shares @ ask\n";

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("kestrel-run-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn args(d: &Path, tape: &str, plans: &str, json: bool) -> Args {
        std::fs::write(d.join("t.jsonl"), tape).unwrap();
        std::fs::write(d.join("p.kestrel"), plans).unwrap();
        Args {
            tape: d.join("t.jsonl"),
            plans: vec![d.join("p.kestrel")],
            engine: super::super::flags::Engine::default(),
            out: super::super::flags::Json { json },
            bus: Some(d.join("out.bus.jsonl")),
        }
    }

    /// The report's book line wrote a loss `$-16.34` where the desk writes `-$16.34`.
    #[test]
    fn book_money_puts_the_minus_before_the_dollar() {
        assert_eq!(dollars(Px(-163_400)), "-$16.34");
        assert_eq!(dollars(Px(6_095_600)), "$609.56");
        assert_eq!(dollars(Px::ZERO), "$0.00");
    }

    fn good_tape() -> String {
        let mut s = format!("{HDR}\n");
        for (i, px) in ["100.00", "100.50", "101.00", "102.00", "101.50"]
            .iter()
            .enumerate()
        {
            s.push_str(&format!(
                "{{\"type\":\"tick\",\"ts\":\"09:30:0{i}.000\",\"sym\":\"SPY\",\"px\":{px},\"sz\":10}}\n"
            ));
        }
        s
    }

    #[test]
    fn money_is_in_cents_and_r_has_four_decimals() {
        let px = |s: &str| bus::parse_px(s).unwrap();
        for (v, want) in [
            ("-1.3274", "-1.33"),
            ("191", "191.00"),
            ("0.005", "0.01"),
            ("-0.005", "-0.01"),
            ("-0.0049", "0.00"),
            ("418.5649", "418.56"),
            ("0", "0.00"),
        ] {
            assert_eq!(usd(px(v)), want, "{v}");
        }
        assert_eq!(usd(Px(i64::MIN)), "-922337203685477.58");
        for (v, want) in [
            ("0.191", "0.1910"),
            ("-0.0013", "-0.0013"),
            ("12", "12.0000"),
        ] {
            assert_eq!(in_r(px(v)), want, "{v}");
        }
    }

    #[test]
    fn table_columns_line_up_whatever_the_widths() {
        let rows: Vec<Vec<String>> = [
            ["plan", "n", "pnl $"],
            ["a-very-long-plan-name-indeed", "1", "-1.33"],
            ["x", "12345", "191.00"],
        ]
        .iter()
        .map(|r| r.iter().map(|c| c.to_string()).collect())
        .collect();
        let t = table(&rows, 1);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3);
        // Every line has the same length (right-aligned last column, no trailing spaces).
        assert!(lines.iter().all(|l| l.len() == lines[0].len()), "{t}");
        assert!(
            lines[1].starts_with("a-very-long-plan-name-indeed  "),
            "{t}"
        );
        assert!(lines[2].starts_with(&format!("{:<30}12345", "x")), "{t}");
    }

    #[test]
    fn run_writes_the_bus_atomically_and_the_same_run_is_byte_identical() {
        let d = dir("ok");
        assert_eq!(run(args(&d, &good_tape(), PLAN, true)), 0);
        let bus1 = std::fs::read(d.join("out.bus.jsonl")).unwrap();
        assert_eq!(run(args(&d, &good_tape(), PLAN, true)), 0);
        let bus2 = std::fs::read(d.join("out.bus.jsonl")).unwrap();
        assert_eq!(bus1, bus2);
        // The Blotter rebuilt from the saved Bus reports the hand-worked P&L:
        // buy 10 @ 101.01 at 09:30:02, marked at 101.50: 4.90 = 0.0049R.
        let evs = bus::parse_bus(&bus1).unwrap();
        let b = Blotter::from_events(&evs);
        let r = plan_reports(&b);
        assert_eq!((r[0].fires, r[0].fills), (1, 1));
        assert_eq!(
            (r[0].pnl_usd.to_string(), r[0].pnl_r.to_string()),
            ("4.90".into(), "0.0049".into())
        );
        // No temp file is left behind.
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
    }

    #[test]
    fn json_report_is_canonical() {
        let d = dir("json");
        let a = args(&d, &good_tape(), PLAN, true);
        let reader = open_tape(&a.tape).unwrap();
        let h = reader.header().clone();
        let doc = lang::check(PLAN, Mode::File).unwrap();
        let go = || {
            let evs = open_tape(&a.tape).unwrap();
            crate::engine::replay(
                &h,
                evs,
                std::slice::from_ref(&doc),
                EngineConfig::strict(Px(10_000_000)),
                Bus::new(None),
            )
            .unwrap()
        };
        let j1 = json_report(&go(), "t", &[]);
        let j2 = json_report(&go(), "t", &[]);
        assert_eq!(j1, j2);
        let v: serde_json::Value = serde_json::from_str(&j1).unwrap();
        assert_eq!(v["fill_model"], "strict-cross-v1");
        assert_eq!(v["tape"], "tiny");
        assert_eq!(v["plans"][0]["name"], "up");
        assert_eq!(v["plans"][0]["pnl_usd"], 4.9);
        assert_eq!(v["plans"][0]["pnl_r"], 0.0049);
        assert_eq!(v["determinism_hash"].as_str().unwrap().len(), 64);
        // Keys are sorted at every level.
        assert!(j1.starts_with("{\"bus_events\":"));
    }

    /// The Bus of `plans` replayed over the good tape at 1R = $1,000, as `kestrel run` would.
    fn replayed(d: &Path, plans: &str) -> Bus {
        let a = args(d, &good_tape(), plans, true);
        let h = open_tape(&a.tape).unwrap().header().clone();
        let doc = lang::check(plans, Mode::File).unwrap();
        crate::engine::replay(
            &h,
            open_tape(&a.tape).unwrap(),
            std::slice::from_ref(&doc),
            EngineConfig::strict(Px(10_000_000)),
            Bus::new(None),
        )
        .unwrap()
    }

    /// A plan whose USING names a symbol the tape lacks is de-armed at the open; the report
    /// said only `de-armed`, and why was on the Bus alone. The JSON's plan has a `reason`
    /// (absent for any other state, so other reports keep their bytes) and the text a note.
    #[test]
    fn a_de_armed_plan_says_why_in_both_reports() {
        let d = dir("de-armed");
        let plans = format!(
            "{PLAN}\nPLAN elsewhere budget 1R ttl +10m\n  USING signal QQQ exec SPY\n  WHEN spot crosses above 1\n  DO buy 10 shares @ ask\n"
        );
        let bus = replayed(&d, &plans);
        let v: serde_json::Value = serde_json::from_str(&json_report(&bus, "t", &[])).unwrap();
        let why = "UNKNOWN symbol QQQ: the tape does not carry it (USING)";
        assert_eq!(v["plans"][1]["name"], "elsewhere");
        assert_eq!(v["plans"][1]["state"], "de-armed");
        assert_eq!(v["plans"][1]["reason"], why);
        assert!(v["plans"][0].get("reason").is_none(), "{v}");
        let text = text_report(&bus, &[]);
        assert!(
            text.contains(&format!("\nnote: plan elsewhere de-armed: {why}\n")),
            "{text}"
        );
        assert_eq!(text.matches("note:").count(), 1, "{text}");
    }

    /// A plan its budget vetoed read in the report like one that never filled (`done 1 0
    /// 0.00 …`), a clamped one like any other: the decisions were on the Bus alone. The
    /// text now has a note per such plan, and the JSON counts (absent at zero, so other
    /// plans keep their bytes).
    #[test]
    fn a_vetoed_or_clamped_plan_says_so_in_both_reports() {
        let d = dir("risk-notes");
        let plans = format!(
            "{PLAN}\nPLAN tiny budget 0.001R ttl +10m\n  WHEN spot crosses above 100.7\n  DO buy 10 shares @ ask\n\
             PLAN some budget 0.005R ttl +10m\n  WHEN spot crosses above 100.7\n  DO buy 10 shares @ ask\n"
        );
        let bus = replayed(&d, &plans);
        let v: serde_json::Value = serde_json::from_str(&json_report(&bus, "t", &[])).unwrap();
        assert_eq!(v["plans"][1]["name"], "tiny");
        assert_eq!(v["plans"][1]["vetoes"], 1, "{v}");
        assert!(v["plans"][1].get("clamps").is_none(), "{v}");
        assert_eq!(v["plans"][2]["clamps"], 1, "{v}");
        assert!(v["plans"][2].get("vetoes").is_none(), "{v}");
        for k in ["vetoes", "clamps"] {
            assert!(v["plans"][0].get(k).is_none(), "{v}");
        }
        let text = text_report(&bus, &[]);
        assert!(
            text.contains("\nnote: plan tiny ") && text.contains(": vetoed 1×: last VETO worst $"),
            "{text}"
        );
        assert!(
            text.contains("\nnote: plan some ") && text.contains(": clamped 1×: last qty 10→"),
            "{text}"
        );
        assert_eq!(text.matches("note:").count(), 2, "{text}");
    }

    #[test]
    fn bad_tapes_are_refused_with_exit_1_and_nothing_half_written() {
        let good = good_tape();
        let mut lines: Vec<String> = good.lines().map(String::from).collect();
        let cases: Vec<(&str, String)> = vec![
            ("truncated", {
                let mut l = lines.clone();
                l[3] = l[3][..l[3].len() - 8].to_string();
                l.join("\n") + "\n"
            }),
            ("out-of-order", {
                let mut l = lines.clone();
                l.swap(2, 3);
                l.join("\n") + "\n"
            }),
            ("unknown-symbol", {
                let mut l = lines.clone();
                l[4] = l[4].replace("SPY", "QQQ");
                l.join("\n") + "\n"
            }),
            ("nan", {
                lines[3] = lines[3].replace("101.00", "NaN");
                lines.join("\n") + "\n"
            }),
        ];
        for (name, tape) in cases {
            let d = dir(name);
            assert_eq!(run(args(&d, &tape, PLAN, false)), 1, "{name}");
            let names: Vec<_> = std::fs::read_dir(&d)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(names.len(), 2, "{name}: {names:?} (no bus, no temp file)");
            // The reader names the line.
            let err = crate::market::read_tape_bytes(tape.as_bytes()).unwrap_err();
            assert!(err.line >= 4, "{name}: {err}");
        }
    }

    #[test]
    fn refused_document_exits_2_and_usage_errors_exit_1() {
        let d = dir("refused");
        assert_eq!(
            run(args(
                &d,
                &good_tape(),
                "PLAN x budget 0R ttl +1m\n  WHEN spot > 1\n  DO buy 1 shares @ ask\n",
                false
            )),
            2
        );
        assert!(!d.join("out.bus.jsonl").exists());
        let mut a = args(&d, &good_tape(), PLAN, false);
        a.engine.r.r_usd = "-5".into();
        assert_eq!(run(a), 1);
        let mut a = args(&d, &good_tape(), PLAN, false);
        a.engine.fill = "optimistic".into();
        assert_eq!(run(a), 1);
        let mut a = args(&d, &good_tape(), PLAN, false);
        a.tape = d.join("missing.jsonl");
        assert_eq!(run(a), 1);
    }
}
