//! GRADE: honest, counterfactual evaluation of a plan over many tapes (LANGUAGE.md §3.5,
//! `docs/grade.md`).
//!
//! A grade is computed in three steps, each a pure function of its inputs:
//!
//! 1. [`prepare`] resolves every GRADE statement of the given documents into a [`Job`]: the
//!    subject plan and its ARM lineage, the tapes its range selects (with their tags), the
//!    counterfactuals and the `BY` keys. The job is what a report needs besides results, and
//!    it is what every shard file carries in its first line.
//! 2. The job is cut into **work units** — one per (grade, tape, run): the plan itself,
//!    `VS null` draw `j` (`0 ≤ j < draws`), `VS ungated` — numbered in that order
//!    ([`Job::units`]). [`run_units`] replays a contiguous slice of them ([`shard_range`]) and
//!    returns one [`UnitResult`] each (P&L as integers).
//! 3. [`report_json`] / [`report_text`] turn the job and the complete, index-sorted list of
//!    unit results into the report. A single run and a merge of shard files
//!    ([`merge_shards`]) therefore print the same bytes.
//!
//! Statistics (cells, the paired differences, the bootstrap) are in [`stats`] and written
//! down in `docs/grade.md`.

pub mod agent;
pub mod glob;
mod resolve;
pub mod stats;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::bus::{Blotter, Bus, Event};

use crate::engine::{Engine, EngineConfig, fill, gate};
use crate::lang::ast::{
    self, ClauseKind, CmpOp, Counterfactual, Document, GradeClauseKind, GradeRange, GradeSubject,
    Num, Predicate, Series, SeriesKind, Span, Statement, StatementKind, Trigger, Ttl, Value,
};
use crate::market::{Px, TapeEvent, TapeHeader, Ts};
pub use agent::AgentSession;

/// Version of the shard file format and of the job (part of the fingerprint).
pub const GRADE_FORMAT: u32 = 1;
/// Default number of `VS null` draws per tape.
pub const DEFAULT_DRAWS: u32 = 20;
/// A cell with fewer runs than this gets no confidence interval (a bootstrap of one run is a
/// point, not an interval).
pub const MIN_CI_RUNS: usize = 2;
/// Default number of bootstrap resamples per interval.
pub const DEFAULT_RESAMPLES: u32 = 2000;
/// The most `VS null` draws per tape: each draw is one more replay of every tape the
/// subject entered on, and a tape's draws are averaged before the bootstrap, so the spread
/// of that average shrinks as `1/√D` (at 10,000, to 1% of one draw's).
pub const MAX_DRAWS: u32 = 10_000;
/// The fewest bootstrap resamples of a 95% percentile interval: its bounds are the sorted
/// resample means at `⌊0.025·B⌋` and `⌈0.975·B⌉ − 1`, and below 40 resamples 2.5% of them
/// is less than one, so the bounds are the smallest and the largest resample (at `B = 1`,
/// one resample's mean twice), not a 95% interval. At 40 they are the 2nd and the 39th.
pub const MIN_RESAMPLES: u32 = 40;
/// The most bootstrap resamples per interval (each is held: 16 bytes, so 16 MB an
/// interval); 2^32 − 1 aborted allocating 64 GiB.
pub const MAX_RESAMPLES: u32 = 1_000_000;

/// Refuse null draw and resample counts a grade cannot use: no draw (a `VS null` of no
/// draws is no null), too few resamples for a 95% percentile interval, or more than the
/// grade runs or holds. The error names the flag and the value (`--draws 0: …`).
pub fn check_counts(draws: u32, resamples: u32) -> Result<(), String> {
    let range = |lo: u32, hi: u32, default: u32| format!("give {lo} to {hi} (default {default})");
    if draws == 0 {
        return Err(format!(
            "--draws 0: a VS null needs at least 1 draw per tape; {}",
            range(1, MAX_DRAWS, DEFAULT_DRAWS)
        ));
    }
    if draws > MAX_DRAWS {
        return Err(format!(
            "--draws {draws}: at most {MAX_DRAWS} null draws per tape; {}",
            range(1, MAX_DRAWS, DEFAULT_DRAWS)
        ));
    }
    if resamples < MIN_RESAMPLES {
        return Err(format!(
            "--resamples {resamples}: a 95% percentile interval needs at least {MIN_RESAMPLES} resamples (with fewer, its bounds are the smallest and the largest resample); {}",
            range(MIN_RESAMPLES, MAX_RESAMPLES, DEFAULT_RESAMPLES)
        ));
    }
    if resamples > MAX_RESAMPLES {
        return Err(format!(
            "--resamples {resamples}: at most {MAX_RESAMPLES} resamples per interval; {}",
            range(MIN_RESAMPLES, MAX_RESAMPLES, DEFAULT_RESAMPLES)
        ));
    }
    Ok(())
}

/// What went wrong; `code()` is `GRADE` (a statement that cannot be graded: exit 2), `TAPE`
/// (a bad tape), `IO`, `USAGE`, `SHARD` or `INTERRUPTED` (a signal stopped the work: exit 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GradeError {
    /// `GRADE`, `TAPE`, `IO`, `USAGE`, `SHARD`, `REPLAY` (a saved session that does not
    /// replay) or `INTERRUPTED`.
    pub code: &'static str,
    /// What happened and how to fix it.
    pub message: String,
}

impl GradeError {
    fn new(code: &'static str, message: impl Into<String>) -> GradeError {
        GradeError {
            code,
            message: message.into(),
        }
    }

    /// The process exit code for this error: 2 for a statement that cannot be graded, 1
    /// otherwise.
    pub fn exit_code(&self) -> i32 {
        // A refused document, and a refused recording (a saved Bus cut, edited or not
        // replayable: `BUS`, `REPLAY`), as every verb that reads one exits.
        if self.code == "GRADE" || crate::session::replay::REFUSED_RECORDING.contains(&self.code) {
            2
        } else {
            1
        }
    }
}

impl fmt::Display for GradeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error code={} message={}", self.code, self.message)
    }
}

impl std::error::Error for GradeError {}

/// Options of a grade run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Dollars per 1R.
    pub r_usd: Px,
    /// `VS null` draws per tape.
    pub draws: u32,
    /// Bootstrap resamples per interval.
    pub resamples: u32,
    /// `--tapes`: the candidate tapes (a glob, or a directory meaning `DIR/*.jsonl`). A glob
    /// range then selects, among them, the files whose name matches the range's last
    /// component; a month range filters them by date. Without it, a glob range is expanded
    /// relative to the current directory and a month range looks in `tapes/*.jsonl`.
    pub tapes: Option<String>,
    /// `--agent`: the saved session whose agent `wake` / `view` subjects (and `plan`
    /// subjects no file defines) grade.
    pub agent: Option<Arc<AgentSession>>,
    /// Grades of the whole agent (`--agent` with `--over`): each is graded like a GRADE
    /// statement whose subject is every plan the agent armed (its subject keyword and name
    /// are ignored).
    pub agent_grades: Vec<ast::Grade>,
}

impl Options {
    /// Defaults: 1R = $1000, 20 null draws, 2000 resamples, no `--tapes`, no agent.
    pub fn new(r_usd: Px) -> Options {
        Options {
            r_usd,
            draws: DEFAULT_DRAWS,
            resamples: DEFAULT_RESAMPLES,
            tapes: None,
            agent: None,
            agent_grades: Vec::new(),
        }
    }
}

/// One tape a grade runs over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TapeRef {
    /// Path as selected (relative paths stay relative).
    pub path: String,
    /// The header's `name`.
    pub name: String,
    /// The header's tags.
    pub tags: BTreeMap<String, String>,
    /// BLAKE3 of the tape's bytes when the grade was prepared: part of the job's
    /// fingerprint (shards graded on different tape contents never merge), and checked
    /// again when a shard loads the tape.
    pub blake3: String,
    /// One session of a multi-session tape (v2): each session is graded as one tape of
    /// the family, named `<name>@<date>` with its own date tag. Absent for a one-session
    /// tape (so a v1 grade's job is unchanged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u32>,
}

/// A plan of the subject's lineage (the subject and the plans its ARM clauses reach).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineageEntry {
    /// Plan name.
    pub name: String,
    /// The plan that ARMs it (`None` for the subject).
    pub parent: Option<String>,
    /// The chain from the subject, `subject>child>…` (the `BY lineage` cell name).
    pub path: String,
}

/// One GRADE statement, resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GradeJob {
    /// The statement as one canonical line (`GRADE plan x OVER r FILL m VS null BY k`).
    pub title: String,
    /// The file the statement is in.
    pub file: String,
    /// The subject's kind: `plan`, `pod`, `wake`, `view`, or `agent` (the whole agent).
    #[serde(default)]
    pub subject_kind: String,
    /// The subject's name (for `agent`, the session file).
    pub subject: String,
    /// The file that defines the subject (for agent subjects, the saved session).
    pub subject_file: String,
    /// For agent subjects: BLAKE3 of the saved session (so shards of different sessions
    /// never merge).
    #[serde(default)]
    pub session_blake3: Option<String>,
    /// Fill model name.
    pub fill: String,
    /// `VS null` requested.
    pub null: bool,
    /// `VS ungated` requested.
    pub ungated: bool,
    /// `BY` keys, in author order.
    pub by: Vec<String>,
    /// Whether any plan of the lineage has a `regime {…}` gate.
    pub gated: bool,
    /// The lineage, subject first.
    pub lineage: Vec<LineageEntry>,
    /// The tapes, sorted by path.
    pub tapes: Vec<TapeRef>,
    /// Where `--tapes` took them from (`DIR/*.jsonl, names matching *`), shown in the text
    /// report's header; `None` when the statement's own OVER range found them (and then not
    /// written, so such a job's bytes and fingerprint are what they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tapes_from: Option<String>,
}

/// Everything a report needs besides the results. Carried by every shard file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    /// [`GRADE_FORMAT`].
    pub format: u32,
    /// 1R in dollars (exact decimal).
    pub r_usd: String,
    /// `VS null` draws per tape.
    pub draws: u32,
    /// Bootstrap resamples.
    pub resamples: u32,
    /// The grades, in file and statement order.
    pub grades: Vec<GradeJob>,
}

/// Which run a work unit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// The subject as written (regime gate on).
    Plan,
    /// A `VS null` draw.
    Null,
    /// The subject with its regime gate removed.
    Ungated,
}

/// One work unit: (grade, tape, run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    /// Global index.
    pub index: u64,
    /// Grade index in the job.
    pub grade: usize,
    /// Tape index in the grade.
    pub tape: usize,
    /// Run kind.
    pub kind: RunKind,
    /// Null draw number (0 otherwise).
    pub draw: u32,
}

/// One lineage plan's result in a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanResult {
    /// Plan name.
    pub name: String,
    /// P&L in units of 0.0001 R (the Blotter's 4-decimal R).
    pub pnl: i64,
    /// Entry fires (WHEN and RELOAD).
    pub fires: u64,
    /// Fills.
    pub fills: u64,
    /// Why the plan ended de-armed on this tape (`UNKNOWN symbol SPX: the tape does not
    /// carry it (USING)`): it could not act here, which its zero P&L does not tell apart
    /// from never triggering. Absent otherwise, and for the regime gate's de-arming (the
    /// plan's choice, which `VS ungated` measures), so shard lines keep their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub de_armed: Option<String>,
}

/// The result of one work unit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitResult {
    /// Global unit index.
    pub unit: u64,
    /// Grade index.
    pub grade: usize,
    /// Tape index.
    pub tape: usize,
    /// Run kind.
    pub kind: RunKind,
    /// Null draw number (0 otherwise).
    pub draw: u32,
    /// For a null run: the entry instants drawn (`HH:MM:SS`), empty when the subject made no
    /// entry on this tape (the null then makes none either and is not replayed).
    pub instants: Vec<String>,
    /// Per lineage plan, in lineage order.
    pub plans: Vec<PlanResult>,
}

/// A prepared grade: the serialisable [`Job`] plus what the runs need (documents).
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The job.
    pub job: Job,
    r_usd: Px,
    runs: Vec<GradeRun>,
}

#[derive(Debug, Clone)]
enum GradeRun {
    /// Plans from files, armed at the open (plan and pod subjects).
    Book {
        /// The lineage, with BOOK / POD statements and effective USINGs.
        doc: Document,
        /// Per root: (lineage index, statement index in `doc`).
        roots: Vec<(usize, usize)>,
    },
    /// A saved session's agent, replayed turn by turn.
    Agent {
        agent: Arc<AgentSession>,
        /// Per root: (lineage index, the document its null arms, the root's statement).
        roots: Vec<(usize, Document, usize)>,
    },
}

/// A document given to `grade`, with the path it came from.
#[derive(Debug, Clone)]
pub struct Source {
    /// Path as given.
    pub path: String,
    /// The checked document.
    pub doc: Document,
}

// ------------------------------------------------------------------ resolution

fn grade_title(g: &ast::Grade) -> String {
    let subject = match g.subject {
        GradeSubject::Plan => "plan",
        GradeSubject::Wake => "wake",
        GradeSubject::View => "view",
        GradeSubject::Pod => "pod",
    };
    let over = match &g.over {
        GradeRange::Glob(s) => s.clone(),
        GradeRange::Months { from, to: None } => from.clone(),
        GradeRange::Months { from, to: Some(t) } => format!("{from}..{t}"),
    };
    let mut s = format!(
        "GRADE {subject} {} OVER {over} FILL {}",
        g.name.text, g.fill
    );
    for c in &g.clauses {
        match &c.kind {
            GradeClauseKind::Vs(Counterfactual::Null) => s.push_str(" VS null"),
            GradeClauseKind::Vs(Counterfactual::Ungated) => s.push_str(" VS ungated"),
            GradeClauseKind::By(k) => {
                s.push_str(" BY ");
                s.push_str(k);
            }
        }
    }
    s
}

/// Plan names referenced by `plan(x).fired` / `plan(x).filled` anywhere in a plan.
pub(crate) fn plan_refs(p: &ast::Plan) -> BTreeSet<String> {
    fn walk(v: &serde_json::Value, out: &mut BTreeSet<String>) {
        match v {
            serde_json::Value::Object(m) => {
                let kind = m.get("kind").and_then(|k| k.as_str());
                if matches!(kind, Some("plan-fired") | Some("plan-filled"))
                    && let Some(t) = m
                        .get("plan")
                        .and_then(|p| p.get("text"))
                        .and_then(|t| t.as_str())
                {
                    out.insert(t.to_string());
                }
                for x in m.values() {
                    walk(x, out);
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    if let Ok(v) = serde_json::to_value(p) {
        walk(&v, &mut out);
    }
    out
}

#[cfg(test)]
fn plans_of(doc: &Document) -> Vec<(usize, &ast::Plan)> {
    doc.statements
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match &s.kind {
            StatementKind::Plan(p) => Some((i, p)),
            _ => None,
        })
        .collect()
}

pub(crate) fn stmt(kind: StatementKind) -> Statement {
    Statement {
        leading: Vec::new(),
        kind,
        trailing: None,
        span: Span::default(),
    }
}

/// The glob `--tapes` means (a directory means `DIR/*.jsonl`).
fn candidates_glob(spec: &str) -> String {
    if Path::new(spec).is_dir() {
        format!("{}/*.jsonl", spec.trim_end_matches('/'))
    } else {
        spec.to_string()
    }
}

/// The candidate tapes of `--tapes` (a directory means `DIR/*.jsonl`).
fn candidates(spec: &str) -> Result<Vec<PathBuf>, GradeError> {
    if let Some(e) = missing_dir(spec) {
        return Err(GradeError::new("IO", format!("--tapes {spec}: {e}")));
    }
    let pat = candidates_glob(spec);
    glob::expand(&pat).map_err(|e| GradeError::new("IO", format!("cannot list {pat}: {e}")))
}

/// Why `spec` (a directory, a file or a glob) can select nothing because what it names is
/// not there: the path, or the directory a glob's pattern sits in, does not exist (`None`:
/// it does, and the glob or the range decides).
fn missing_dir(spec: &str) -> Option<String> {
    let wild = |c: char| matches!(c, '*' | '?' | '[');
    if !spec.contains(wild) {
        return (!Path::new(spec).exists()).then(|| "no such file or directory".to_string());
    }
    // The part before the first component with a wildcard.
    let fixed: Vec<&str> = spec.split('/').take_while(|c| !c.contains(wild)).collect();
    let dir = fixed.join("/");
    let dir = if dir.is_empty() && spec.starts_with('/') {
        "/".to_string()
    } else {
        dir
    };
    (!dir.is_empty() && !Path::new(&dir).is_dir()).then(|| format!("no such directory {dir}"))
}

/// Where the tapes of `over` come from, in words, when `--tapes` chose them (`None`: the
/// statement's own glob). The text report's header and the no-tapes error say it.
fn tapes_from(over: &GradeRange, opts: &Options) -> Option<String> {
    let given = |t: &str| format!("--tapes {t} ({})", candidates_glob(t));
    match over {
        GradeRange::Glob(pat) => opts.tapes.as_deref().map(|t| {
            let last = pat.rsplit('/').next().unwrap_or(pat);
            format!("{}, file names matching {last}", given(t))
        }),
        GradeRange::Months { from, to } => opts.tapes.as_deref().map(|t| {
            let to = to.as_deref().unwrap_or(from);
            let months = if to == from.as_str() {
                from.clone()
            } else {
                format!("{from}..{to}")
            };
            format!("{}, dated {months}", given(t))
        }),
    }
}

/// `YYYY-MM` with a month of the year (01 to 12).
fn month_ok(m: &str) -> bool {
    let b = m.as_bytes();
    b.len() == 7
        && b[4] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || c.is_ascii_digit())
        && matches!(m[5..].parse::<u8>(), Ok(1..=12))
}

/// What is wrong with a month range, if anything: a month that is not one (`2025-13`), or
/// an end before the start.
fn bad_months(from: &str, to: Option<&str>) -> Option<String> {
    if let Some(m) = [Some(from), to]
        .into_iter()
        .flatten()
        .find(|m| !month_ok(m))
    {
        return Some(format!("{m} is not a month"));
    }
    match to {
        Some(t) if t < from => Some(format!("{from}..{t} ends before it starts")),
        _ => None,
    }
}

/// A refused tape as one coded line, the form of every tape error of a grade: `PATH line N:
/// REASON: …` (`PATH: REASON: …` when no line was involved), never the reader's own coded
/// line inside another.
fn tape_error(path: &str, e: &crate::market::TapeError) -> GradeError {
    // A file refused at its first line may be no tape at all (a saved Bus, a document, CSV
    // market data): said so, with what to do, as `run --tape` says it (`code=USAGE`).
    if e.line <= 1
        && let Some(line) = crate::cli::sniff::not_a_grade_tape(std::path::Path::new(path))
        && let Some(m) = line.strip_prefix("error code=USAGE message=")
    {
        return GradeError::new("USAGE", m.to_string());
    }
    let at = match e.line {
        0 => String::new(),
        n => format!(" line {n}"),
    };
    GradeError::new("TAPE", format!("{path}{at}: {}", e.message()))
}

fn select_tapes(over: &GradeRange, opts: &Options) -> Result<Vec<TapeRef>, GradeError> {
    let paths: Vec<PathBuf> = match over {
        GradeRange::Glob(pat) => match &opts.tapes {
            Some(t) => {
                let last = pat.rsplit('/').next().unwrap_or(pat);
                candidates(t)?
                    .into_iter()
                    .filter(|p| {
                        p.file_name()
                            .is_some_and(|n| glob::matches(last, &n.to_string_lossy()))
                    })
                    .collect()
            }
            None => {
                if let Some(e) = missing_dir(pat) {
                    return Err(GradeError::new("IO", format!("OVER {pat}: {e}")));
                }
                glob::expand(pat)
                    .map_err(|e| GradeError::new("IO", format!("cannot list {pat}: {e}")))?
            }
        },
        GradeRange::Months { .. } => candidates(opts.tapes.as_deref().unwrap_or("tapes"))?,
    };
    let mut out = Vec::new();
    for p in paths {
        let path = p.display().to_string();
        let bytes = crate::limits::read_file_bounded(&p, crate::limits::MAX_TAPE_BYTES)
            .map_err(|e| GradeError::new("IO", format!("cannot read {path}: {e}")))?;
        let r =
            crate::market::TapeReader::new(bytes.as_slice()).map_err(|e| tape_error(&path, &e))?;
        let first = r.header().clone();
        // A v2 tape may hold several sessions: each is one tape of the family.
        let mut sessions = vec![first.clone()];
        if first.v >= crate::market::tape::TAPE_VERSION_2 {
            let mut r = r;
            while let Some(ev) = r.next() {
                let ev = ev.map_err(|e| tape_error(&path, &e))?;
                if let crate::market::TapeEvent::Session(_) = ev {
                    sessions.push(r.session_header().clone());
                }
            }
        }
        let many = sessions.len() > 1;
        let blake = blake3::hash(&bytes).to_hex().to_string();
        for (i, h) in sessions.iter().enumerate() {
            if let GradeRange::Months { from, to } = over {
                let date = h
                    .tags
                    .get("date")
                    .cloned()
                    .unwrap_or_else(|| h.date.to_string());
                let month = date.get(..7).unwrap_or("");
                let to = to.as_deref().unwrap_or(from);
                if month < from.as_str() || month > to {
                    continue;
                }
            }
            out.push(TapeRef {
                path: path.clone(),
                name: if many {
                    format!("{}@{}", h.name, h.date)
                } else {
                    h.name.clone()
                },
                tags: h.tags.clone(),
                blake3: blake.clone(),
                session: many.then_some(i as u32 + 1),
            });
        }
    }
    Ok(out)
}

/// Resolve every GRADE statement of `sources` (in order) into a [`Prepared`] job.
pub fn prepare(sources: &[Source], opts: &Options) -> Result<Prepared, GradeError> {
    if opts.r_usd <= Px::ZERO {
        return Err(GradeError::new(
            "USAGE",
            "1R must be a positive amount of dollars",
        ));
    }
    check_counts(opts.draws, opts.resamples).map_err(|m| GradeError::new("USAGE", m))?;
    let files = resolve::load(sources)?;
    let mut grades = Vec::new();
    let mut runs = Vec::new();
    let given = sources
        .iter()
        .flat_map(|s| {
            s.doc
                .statements
                .iter()
                .filter_map(move |st| match &st.kind {
                    StatementKind::Grade(g) => Some((s.path.clone(), g, false)),
                    _ => None,
                })
        })
        .chain(opts.agent_grades.iter().map(|g| {
            let path = opts
                .agent
                .as_ref()
                .map_or_else(String::new, |a| a.path.clone());
            (path, g, true)
        }));
    for (file, g, whole_agent) in given {
        let title = if whole_agent {
            let t = grade_title(g);
            let rest = t.split_once(" OVER ").map_or("", |x| x.1);
            format!("GRADE agent {file} OVER {rest}")
        } else {
            grade_title(g)
        };
        if fill::by_name(&g.fill).is_none() {
            return Err(GradeError::new(
                "GRADE",
                format!(
                    "{title}: unknown fill model {} (known: {})",
                    g.fill,
                    fill::FILL_MODELS.join(", ")
                ),
            ));
        }
        if let GradeRange::Months { from, to } = &g.over
            && let Some(what) = bad_months(from, to.as_deref())
        {
            return Err(GradeError::new(
                "GRADE",
                format!(
                    "{title}: {what}: a month range is YYYY-MM[..YYYY-MM] (months 01 to 12), in order"
                ),
            ));
        }
        let mut null = false;
        let mut ungated = false;
        let mut by = Vec::new();
        for c in &g.clauses {
            match &c.kind {
                GradeClauseKind::Vs(Counterfactual::Null) => null = true,
                GradeClauseKind::Vs(Counterfactual::Ungated) => ungated = true,
                GradeClauseKind::By(k) => {
                    if !by.contains(k) {
                        by.push(k.clone())
                    }
                }
            }
        }
        let name = g.name.text.as_str();
        let need_agent = |what: &str| -> Result<Arc<AgentSession>, GradeError> {
            opts.agent.clone().ok_or_else(|| {
                GradeError::new(
                    "GRADE",
                    format!(
                        "{title}: {what} grades an agent's turns: pass the saved session (the Bus written by `kestrel agent --bus`, `kestrel run --bus` or the desk) with --agent SESSION.jsonl"
                    ),
                )
            })
        };
        let agent_run = |a: Arc<AgentSession>, pick: resolve::AgentPick<'_>| {
            let r = resolve::agent(&a, pick, &title, null)?;
            let run = GradeRun::Agent {
                agent: a.clone(),
                roots: r.roots,
            };
            Ok::<_, GradeError>((
                a.path.clone(),
                r.lineage,
                run,
                r.gated,
                Some(a.blake3.clone()),
            ))
        };
        let (kind, subject, (subject_file, lineage, run, gated, session)) = if whole_agent {
            let a = need_agent("the whole agent")?;
            let path = a.path.clone();
            ("agent", path, agent_run(a, resolve::AgentPick::All)?)
        } else {
            match g.subject {
                GradeSubject::Plan => {
                    let defs = resolve::defining(&files, name);
                    match (defs.as_slice(), &opts.agent) {
                        ([fi], _) => {
                            let b = resolve::book(&files, *fi, &[name.to_string()], name)?;
                            let run = GradeRun::Book {
                                doc: b.doc,
                                roots: b.roots,
                            };
                            (
                                "plan",
                                name.to_string(),
                                (b.file, b.lineage, run, b.gated, None),
                            )
                        }
                        ([], Some(a)) => (
                            "plan",
                            name.to_string(),
                            agent_run(a.clone(), resolve::AgentPick::Plan(name))?,
                        ),
                        ([], None) => {
                            return Err(GradeError::new(
                                "GRADE",
                                format!(
                                    "{title}: no PLAN named {name} in the given files or the files they IMPORT (a plan an agent armed needs --agent SESSION.jsonl)"
                                ),
                            ));
                        }
                        (many, _) => {
                            let fs: Vec<&str> =
                                many.iter().map(|i| files[*i].path.as_str()).collect();
                            return Err(GradeError::new(
                                "GRADE",
                                format!(
                                    "{title}: plan {name} is defined in several files ({}): names are keys",
                                    fs.join(", ")
                                ),
                            ));
                        }
                    }
                }
                GradeSubject::Pod => {
                    let fi = match resolve::pod_files(&files, name).as_slice() {
                        [fi] => *fi,
                        [] => {
                            return Err(GradeError::new(
                                "GRADE",
                                format!(
                                    "{title}: no POD named {name} in the given files or the files they IMPORT"
                                ),
                            ));
                        }
                        many => {
                            let fs: Vec<&str> =
                                many.iter().map(|i| files[*i].path.as_str()).collect();
                            return Err(GradeError::new(
                                "GRADE",
                                format!(
                                    "{title}: POD {name} is defined in several files ({}): names are keys",
                                    fs.join(", ")
                                ),
                            ));
                        }
                    };
                    let roots = resolve::pod_roots(&files[fi]);
                    if roots.is_empty() {
                        return Err(GradeError::new(
                            "GRADE",
                            format!("{title}: POD {name}'s file {} has no PLAN", files[fi].path),
                        ));
                    }
                    let b = resolve::book(&files, fi, &roots, &format!("POD {name}"))?;
                    let run = GradeRun::Book {
                        doc: b.doc,
                        roots: b.roots,
                    };
                    (
                        "pod",
                        name.to_string(),
                        (b.file, b.lineage, run, b.gated, None),
                    )
                }
                GradeSubject::Wake => {
                    let a = need_agent(&format!("wake {name}"))?;
                    (
                        "wake",
                        name.to_string(),
                        agent_run(a, resolve::AgentPick::Wake(name))?,
                    )
                }
                GradeSubject::View => {
                    let a = need_agent(&format!("view {name}"))?;
                    (
                        "view",
                        name.to_string(),
                        agent_run(a, resolve::AgentPick::View(name))?,
                    )
                }
            }
        };
        let tapes = select_tapes(&g.over, opts)?;
        let tapes_from = tapes_from(&g.over, opts);
        if tapes.is_empty() {
            let what = match &tapes_from {
                Some(from) => format!("the range selects no tapes in {from}"),
                None => "the range selects no tapes".to_string(),
            };
            return Err(GradeError::new("USAGE", format!("{title}: {what}")));
        }
        grades.push(GradeJob {
            title,
            file,
            subject_kind: kind.to_string(),
            subject,
            subject_file,
            session_blake3: session,
            fill: g.fill.clone(),
            null,
            ungated,
            by,
            gated,
            lineage,
            tapes,
            tapes_from,
        });
        runs.push(run);
    }
    if grades.is_empty() {
        return Err(GradeError::new(
            "USAGE",
            "no GRADE statement in the given files",
        ));
    }
    Ok(Prepared {
        job: Job {
            format: GRADE_FORMAT,
            r_usd: opts.r_usd.to_string(),
            draws: opts.draws,
            resamples: opts.resamples,
            grades,
        },
        r_usd: opts.r_usd,
        runs,
    })
}

// ------------------------------------------------------------------ units

impl GradeJob {
    /// Runs per tape: the plan, the null draws, the ungated run.
    fn per_tape(&self, draws: u32) -> u64 {
        1 + if self.null { u64::from(draws) } else { 0 } + u64::from(self.ungated)
    }
}

impl Job {
    /// Total number of work units.
    pub fn unit_count(&self) -> u64 {
        self.grades
            .iter()
            .map(|g| g.per_tape(self.draws) * g.tapes.len() as u64)
            .sum()
    }

    /// Every work unit, in index order: grade, then tape, then plan / null draws / ungated.
    pub fn units(&self) -> Vec<Unit> {
        let mut out = Vec::new();
        let mut index = 0;
        for (gi, g) in self.grades.iter().enumerate() {
            for ti in 0..g.tapes.len() {
                let mut push = |kind, draw| {
                    out.push(Unit {
                        index,
                        grade: gi,
                        tape: ti,
                        kind,
                        draw,
                    });
                    index += 1;
                };
                push(RunKind::Plan, 0);
                if g.null {
                    for j in 0..self.draws {
                        push(RunKind::Null, j);
                    }
                }
                if g.ungated {
                    push(RunKind::Ungated, 0);
                }
            }
        }
        out
    }

    /// BLAKE3 of the job's JSON: shards of one grade carry the same fingerprint.
    pub fn fingerprint(&self) -> String {
        let s = serde_json::to_string(self).unwrap_or_default();
        blake3::hash(s.as_bytes()).to_hex().to_string()
    }
}

/// The contiguous slice of unit indices shard `i` of `n` runs: `[⌊U·i/n⌋, ⌊U·(i+1)/n⌋)`.
/// Contiguous slices keep a tape's runs together, so each shard reads few tapes.
pub fn shard_range(total: u64, i: u64, n: u64) -> (u64, u64) {
    if n == 0 {
        return (0, 0);
    }
    let lo = u128::from(total) * u128::from(i) / u128::from(n);
    let hi = u128::from(total) * u128::from(i + 1) / u128::from(n);
    (lo as u64, hi.min(u128::from(total)) as u64)
}

fn time_trigger(secs: u32) -> Trigger {
    Trigger::Pred {
        pred: Box::new(Predicate::Compare {
            series: Series {
                kind: SeriesKind::Time,
                text: "time".into(),
                span: Span::default(),
            },
            op: CmpOp::Ge,
            value: Value::Number {
                value: Num {
                    text: secs.to_string(),
                    span: Span::default(),
                },
            },
            held: None,
            span: Span::default(),
        }),
    }
}

/// A plan's active window on a tape, in ms since midnight: from `start` (when it is armed:
/// the open for documents, the turn's instant for an agent's plan) to its ttl (`HH:MM`, or
/// `start` plus `+dur`), capped at the close. Empty when the ttl is not after `start`.
fn active_window(ttl: &Ttl, start: u32, h: &TapeHeader) -> (u32, u32) {
    let end = match ttl {
        Ttl::At(c) => c.minutes() * 60_000,
        Ttl::After(d) => start
            .saturating_add(u32::try_from(d.seconds().saturating_mul(1000)).unwrap_or(u32::MAX)),
    };
    (start, end.min(h.close.ms()).max(start))
}

fn hms(secs: u32) -> String {
    Ts(secs * 1000).hhmmss()
}

/// The null rewrite of one root for one draw: its entry instants (seconds since midnight)
/// and the plan entering at them. `entries` is the root's entry fires on this tape (WHEN
/// plus RELOADs); `window` its active window (ms). Seeds:
/// `kestrel-grade-null-v1|<plan>|<tape name>|<draw>`.
fn null_plan(
    p: &ast::Plan,
    window: (u32, u32),
    tape: &str,
    draw: u32,
    entries: u64,
) -> Option<(Vec<u32>, ast::Plan)> {
    if entries == 0 {
        return None;
    }
    let (ws, we) = (window.0.div_ceil(1000), window.1 / 1000);
    if we <= ws {
        return None;
    }
    let subject = &p.name.text;
    let mut rng = stats::rng_for(&format!("kestrel-grade-null-v1|{subject}|{tape}|{draw}"));
    let u0 = ws + stats::below(&mut rng, u64::from(we - ws)) as u32;
    let mut instants = vec![u0];
    let reloads = entries - 1;
    let mut plan = p.clone();
    let mut kept = 0u64;
    plan.clauses.retain_mut(|c| match &mut c.kind {
        ClauseKind::When(t) => {
            *t = time_trigger(u0);
            true
        }
        ClauseKind::Reload { when, .. } => {
            if kept >= reloads || u0 + 1 >= we {
                return false;
            }
            kept += 1;
            let u = u0 + 1 + stats::below(&mut rng, u64::from(we - u0 - 1)) as u32;
            instants.push(u);
            *when = time_trigger(u);
            true
        }
        _ => true,
    });
    Some((instants, plan))
}

/// A root that made no entry on a tape makes none in the null either: its WHEN can never be
/// true (`time >= 86400`) and its RELOADs go; it stays in the document so that what reads it
/// still resolves.
fn never_enters(p: &ast::Plan) -> ast::Plan {
    let mut plan = p.clone();
    plan.clauses.retain_mut(|c| match &mut c.kind {
        ClauseKind::When(t) => {
            *t = time_trigger(86_400);
            true
        }
        ClauseKind::Reload { .. } => false,
        _ => true,
    });
    plan
}

/// The null of a plan or pod subject for one draw: every root that entered is rewritten by
/// [`null_plan`], the others never enter. `None` when no root makes an entry (the null is
/// then P&L 0, not replayed).
fn null_book(
    doc: &Document,
    roots: &[(usize, usize)],
    subject: &[PlanResult],
    tape: &str,
    draw: u32,
    h: &TapeHeader,
) -> Option<(Vec<u32>, Document)> {
    let mut out = doc.clone();
    let mut instants = Vec::new();
    for (li, si) in roots {
        let StatementKind::Plan(p) = &doc.statements.get(*si)?.kind else {
            return None;
        };
        let entries = subject.get(*li).map_or(0, |r| r.fires);
        let window = active_window(&p.ttl, h.open.ms(), h);
        let plan = match null_plan(p, window, tape, draw, entries) {
            Some((inst, plan)) => {
                instants.extend(inst);
                plan
            }
            None => never_enters(p),
        };
        out.statements[*si].kind = StatementKind::Plan(plan);
    }
    (!instants.is_empty()).then_some((instants, out))
}

/// Documents to arm during a replay: at the open (`None`) or after the last event at or
/// before an instant.
type Schedule = Vec<(Option<Ts>, Document)>;

/// The null of an agent subject for one draw: each root that entered, with its ARM
/// descendants, armed when the agent first armed it on this tape, entering at seeded
/// instants of its window from then.
fn null_agent(
    roots: &[(usize, Document, usize)],
    subject: &SubjectRun,
    tape: &str,
    draw: u32,
    h: &TapeHeader,
) -> Option<(Vec<u32>, Schedule)> {
    let mut instants = Vec::new();
    let mut sched = Vec::new();
    for (li, doc, si) in roots {
        let entries = subject.plans.get(*li).map_or(0, |r| r.fires);
        let Some(Some(at)) = subject.armed.get(*li) else {
            continue;
        };
        let StatementKind::Plan(p) = &doc.statements.get(*si)?.kind else {
            continue;
        };
        let window = active_window(&p.ttl, at.0, h);
        if let Some((inst, plan)) = null_plan(p, window, tape, draw, entries) {
            instants.extend(inst);
            let mut d = doc.clone();
            d.statements[*si].kind = StatementKind::Plan(plan);
            sched.push((Some(*at), d));
        }
    }
    sched.sort_by_key(|(t, _)| *t);
    (!instants.is_empty()).then_some((instants, sched))
}

fn engine_config(fill_name: &str, r_usd: Px, gate_on: bool) -> Result<EngineConfig, GradeError> {
    let model = fill::by_name(fill_name)
        .ok_or_else(|| GradeError::new("GRADE", format!("unknown fill model {fill_name}")))?;
    Ok(EngineConfig {
        fill: model,
        ..EngineConfig::strict(r_usd)
    }
    .with_regime_gate(gate_on))
}

#[cfg(test)]
fn replay(
    h: &TapeHeader,
    events: &[TapeEvent],
    doc: &Document,
    fill_name: &str,
    r_usd: Px,
    gate_on: bool,
) -> Result<Bus, GradeError> {
    replay_sched(h, events, &[(None, doc.clone())], fill_name, r_usd, gate_on)
}

/// Replay documents over a tape: a document with no instant arms before the first event,
/// one with an instant `t` after the last event at or before `t` (as a turn acts after the
/// wake's event).
fn replay_sched(
    h: &TapeHeader,
    events: &[TapeEvent],
    sched: &[(Option<Ts>, Document)],
    fill_name: &str,
    r_usd: Px,
    gate_on: bool,
) -> Result<Bus, GradeError> {
    let mut e = Engine::new(h, engine_config(fill_name, r_usd, gate_on)?, Bus::new(None));
    let mut next = 0;
    while let Some((None, d)) = sched.get(next) {
        e.arm_document(d);
        next += 1;
    }
    // Stop once every plan is closed and nothing is left to arm: nothing later can change a
    // fill or a P&L (the results read only those from the Blotter).
    for (i, ev) in events.iter().enumerate() {
        while let Some((Some(t), d)) = sched.get(next) {
            if *t >= ev.ts() {
                break;
            }
            e.arm_document(d);
            next += 1;
        }
        if next == sched.len() && e.all_plans_closed() {
            break;
        }
        e.on_event_before(ev, events.get(i + 1).map(TapeEvent::ts));
    }
    Ok(e.finish())
}

/// The subject's run on one tape: per lineage plan its result and, for an agent, when the
/// agent first armed it (its null's window starts there).
#[derive(Debug, Clone)]
struct SubjectRun {
    plans: Vec<PlanResult>,
    armed: Vec<Option<Ts>>,
}

fn run_subject(
    run: &GradeRun,
    g: &GradeJob,
    lt: &LoadedTape,
    r_usd: Px,
    gate_on: bool,
) -> Result<SubjectRun, GradeError> {
    let (h, evs) = (&lt.header, lt.events.as_slice());
    match run {
        GradeRun::Book { doc, .. } => {
            let bus = replay_sched(h, evs, &[(None, doc.clone())], &g.fill, r_usd, gate_on)?;
            Ok(SubjectRun {
                plans: results_of(bus.blotter(), &g.lineage),
                armed: vec![None; g.lineage.len()],
            })
        }
        GradeRun::Agent { agent, .. } => {
            let cfg = engine_config(&g.fill, r_usd, gate_on)?;
            let bus = agent::replay(agent, h, evs, cfg)?;
            let mut armed = vec![None; g.lineage.len()];
            let mut turned = false;
            for ev in bus.events() {
                match ev {
                    Event::Turn { .. } => turned = true,
                    Event::DocumentArmed { ts, plans, .. } if turned => {
                        for (i, l) in g.lineage.iter().enumerate() {
                            if armed[i].is_none() && plans.contains(&l.name) {
                                armed[i] = Some(*ts);
                            }
                        }
                    }
                    _ => {}
                }
            }
            Ok(SubjectRun {
                plans: results_of(bus.blotter(), &g.lineage),
                armed,
            })
        }
    }
}

fn results_of(b: &Blotter, lineage: &[LineageEntry]) -> Vec<PlanResult> {
    lineage
        .iter()
        .map(|l| {
            let line = b.plans.get(&l.name);
            PlanResult {
                name: l.name.clone(),
                pnl: b.in_r(b.pnl(&l.name)).unwrap_or(Px::ZERO).raw(),
                fires: line.map_or(0, |x| x.fires),
                fills: line.map_or(0, |x| x.fills),
                de_armed: line
                    .filter(|x| x.state == crate::bus::PlanState::DeArmed)
                    .and_then(|x| x.reason.clone())
                    .filter(|r| !crate::engine::gate::is_gate_reason(r)),
            }
        })
        .collect()
}

/// A `warning code=NOT-ARMED` line for each grade whose subject ended de-armed on some of
/// its tapes (its `plan` runs): on how many of them, and why on the first. Such a subject
/// could not act there (a `USING` symbol the tape lacks), and its runs count as flat ones,
/// so the report alone reads like a plan that never triggered.
pub fn not_armed_warnings(job: &Job, results: &[UnitResult]) -> Vec<String> {
    let by_grade = results_by_grade(job, results);
    let mut out = Vec::new();
    for (gi, g) in job.grades.iter().enumerate() {
        let Some(subject) = g.lineage.first() else {
            continue;
        };
        let runs: Vec<&UnitResult> = by_grade[gi]
            .iter()
            .copied()
            .filter(|r| r.kind == RunKind::Plan)
            .collect();
        let de_armed: Vec<(&UnitResult, &str)> = runs
            .iter()
            .filter_map(|r| {
                let p = r.plans.iter().find(|p| p.name == subject.name)?;
                Some((*r, p.de_armed.as_deref()?))
            })
            .collect();
        let Some((first, why)) = de_armed.first() else {
            continue;
        };
        let tape = g.tapes.get(first.tape).map_or("?", |t| t.name.as_str());
        out.push(format!(
            "warning code=NOT-ARMED message={}: {} could not arm on {} of {} tapes (their runs count as flat), the first {}: {}",
            g.title,
            subject.name,
            de_armed.len(),
            runs.len(),
            tape,
            crate::lang::diag::visible_line(why)
        ));
    }
    out
}

/// A tape loaded for replay.
#[derive(Debug, Clone)]
pub struct LoadedTape {
    /// Header.
    pub header: TapeHeader,
    /// Every event.
    pub events: Vec<TapeEvent>,
}

/// Where tapes come from: files by path (the CLI), or memory (tests, benchmarks).
pub trait TapeSource {
    /// Load the tape `t`.
    fn load(&mut self, t: &TapeRef) -> Result<std::sync::Arc<LoadedTape>, GradeError>;
}

/// Loads tapes from their paths, keeping the last one (units are grouped by tape).
#[derive(Debug, Default)]
pub struct FileTapes {
    last: Option<(TapeKey, std::sync::Arc<LoadedTape>)>,
}

/// A loaded tape's path and session (`None`: the whole one-session tape).
type TapeKey = (String, Option<u32>);

impl TapeSource for FileTapes {
    fn load(&mut self, t: &TapeRef) -> Result<std::sync::Arc<LoadedTape>, GradeError> {
        if let Some(((p, n), lt)) = &self.last
            && *p == t.path
            && *n == t.session
        {
            return Ok(lt.clone());
        }
        let bytes = crate::limits::read_file_bounded(
            std::path::Path::new(&t.path),
            crate::limits::MAX_TAPE_BYTES,
        )
        .map_err(|e| GradeError::new("IO", format!("cannot read {}: {e}", t.path)))?;
        let hash = blake3::hash(&bytes).to_hex().to_string();
        if hash != t.blake3 {
            return Err(GradeError::new(
                "TAPE",
                format!(
                    "{}: the tape's bytes are not the ones the grade was prepared on (blake3 {} here, {} in the job): grade every shard on the same tapes",
                    t.path,
                    &hash[..12],
                    t.blake3.get(..12).unwrap_or(&t.blake3)
                ),
            ));
        }
        // Whole, as `run` and the desk require: a tape cut short is refused, not graded as
        // a session that closed early (one pass: every line, then the end).
        let (header, events) = crate::market::tape::read_whole_tape_bytes(&bytes)
            .map_err(|e| tape_error(&t.path, &e))?;
        let (header, events) = match t.session {
            None => (header, events),
            Some(n) => crate::market::tape::split_sessions(&header, events)
                .into_iter()
                .nth(n.saturating_sub(1) as usize)
                .ok_or_else(|| {
                    GradeError::new("TAPE", format!("{}: the tape has no session {n}", t.path))
                })?,
        };
        let lt = std::sync::Arc::new(LoadedTape { header, events });
        self.last = Some(((t.path.clone(), t.session), lt.clone()));
        Ok(lt)
    }
}

/// Run the units with indices in `[lo, hi)`, in order. A null unit needs the subject's entry
/// counts on its tape: they are taken from the plan unit when that is in the slice, else the
/// subject is replayed again (deterministic, so every shard agrees).
pub fn run_units(
    p: &Prepared,
    lo: u64,
    hi: u64,
    tapes: &mut dyn TapeSource,
) -> Result<Vec<UnitResult>, GradeError> {
    let units: Vec<Unit> = p
        .job
        .units()
        .into_iter()
        .filter(|u| u.index >= lo && u.index < hi)
        .collect();
    let mut out = Vec::with_capacity(units.len());
    // (grade, tape) -> the subject's run (cached for the current tape).
    let mut cache: Option<((usize, usize), SubjectRun)> = None;
    let of = units.len();
    for (done, u) in units.into_iter().enumerate() {
        // A caught SIGINT / SIGTERM (once the verb installed the handlers) stops the work
        // between units: no partial result leaves.
        if let Some(sig) = crate::signals::caught() {
            return Err(GradeError::new(
                "INTERRUPTED",
                format!(
                    "{sig}: the grade stopped after {done} of {of} work units; nothing was written"
                ),
            ));
        }
        let g = &p.job.grades[u.grade];
        let run = &p.runs[u.grade];
        let tref = &g.tapes[u.tape];
        let lt = tapes.load(tref)?;
        let h = &lt.header;
        let subject = |cache: &mut Option<((usize, usize), SubjectRun)>| {
            if let Some((k, r)) = cache
                && *k == (u.grade, u.tape)
            {
                return Ok::<_, GradeError>(r.clone());
            }
            let r = run_subject(run, g, &lt, p.r_usd, true)?;
            *cache = Some(((u.grade, u.tape), r.clone()));
            Ok(r)
        };
        let zero = || {
            g.lineage
                .iter()
                .map(|l| PlanResult {
                    name: l.name.clone(),
                    pnl: 0,
                    fires: 0,
                    fills: 0,
                    de_armed: None,
                })
                .collect()
        };
        let (instants, plans) = match u.kind {
            RunKind::Plan => (Vec::new(), subject(&mut cache)?.plans),
            RunKind::Ungated => (Vec::new(), run_subject(run, g, &lt, p.r_usd, false)?.plans),
            RunKind::Null => {
                let subj = subject(&mut cache)?;
                let null = match run {
                    GradeRun::Book { doc, roots } => {
                        null_book(doc, roots, &subj.plans, &tref.name, u.draw, h)
                            .map(|(i, d)| (i, vec![(None, d)]))
                    }
                    GradeRun::Agent { roots, .. } => {
                        null_agent(roots, &subj, &tref.name, u.draw, h)
                    }
                };
                match null {
                    Some((inst, sched)) => {
                        let bus = replay_sched(h, &lt.events, &sched, &g.fill, p.r_usd, true)?;
                        (
                            inst.into_iter().map(hms).collect(),
                            results_of(bus.blotter(), &g.lineage),
                        )
                    }
                    None => (Vec::new(), zero()),
                }
            }
        };
        out.push(UnitResult {
            unit: u.index,
            grade: u.grade,
            tape: u.tape,
            kind: u.kind,
            draw: u.draw,
            instants,
            plans,
        });
    }
    Ok(out)
}

// ------------------------------------------------------------------ shards

/// The first line of a shard file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardHeader {
    /// Always `kestrel-grade-shard`.
    pub kind: String,
    /// This shard, 0-based.
    pub shard: u64,
    /// Number of shards.
    pub of: u64,
    /// First unit index (inclusive).
    pub lo: u64,
    /// Last unit index (exclusive).
    pub hi: u64,
    /// Total units of the job.
    pub total: u64,
    /// [`Job::fingerprint`].
    pub fingerprint: String,
    /// The job.
    pub job: Job,
    /// The results that follow: how many lines, and the BLAKE3 of those lines as written
    /// ([`ResultsDigest`]). The fingerprint covers only the job; this covers what the shard
    /// computed, so a result line edited or corrupted on a shared volume is not merged into
    /// the report. Absent in a shard written before it: refused, to be regenerated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<ResultsDigest>,
}

/// The count and BLAKE3 (hex) of a shard's result lines, each with its line end, in file
/// order: the bytes after the header line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultsDigest {
    /// Result lines.
    pub lines: u64,
    /// BLAKE3 of the result lines (each followed by `\n`), hex.
    pub blake3: String,
}

impl ResultsDigest {
    /// The digest of these result lines (without their line ends).
    pub fn of<'a>(lines: impl IntoIterator<Item = &'a str>) -> ResultsDigest {
        let mut h = blake3::Hasher::new();
        let mut n = 0u64;
        for l in lines {
            h.update(l.as_bytes());
            h.update(b"\n");
            n += 1;
        }
        ResultsDigest {
            lines: n,
            blake3: h.finalize().to_hex().to_string(),
        }
    }
}

/// Parse `I/N` (0-based `I < N`).
pub fn parse_shard(s: &str) -> Option<(u64, u64)> {
    let (i, n) = s.split_once('/')?;
    let (i, n): (u64, u64) = (i.trim().parse().ok()?, n.trim().parse().ok()?);
    (n >= 1 && i < n).then_some((i, n))
}

/// Run shard `i` of `n` and return its file contents (JSON Lines: a [`ShardHeader`], with
/// the digest of the lines after it, then one [`UnitResult`] per line).
pub fn run_shard(
    p: &Prepared,
    i: u64,
    n: u64,
    tapes: &mut dyn TapeSource,
) -> Result<String, GradeError> {
    let total = p.job.unit_count();
    let (lo, hi) = shard_range(total, i, n);
    let results = run_units(p, lo, hi, tapes)?;
    let lines = results
        .iter()
        .map(|r| {
            serde_json::to_string(r)
                .map_err(|e| GradeError::new("IO", format!("serialising a result: {e}")))
        })
        .collect::<Result<Vec<String>, GradeError>>()?;
    let header = ShardHeader {
        kind: "kestrel-grade-shard".into(),
        shard: i,
        of: n,
        lo,
        hi,
        total,
        fingerprint: p.job.fingerprint(),
        job: p.job.clone(),
        results: Some(ResultsDigest::of(lines.iter().map(String::as_str))),
    };
    let mut s = serde_json::to_string(&header)
        .map_err(|e| GradeError::new("IO", format!("serialising the shard header: {e}")))?;
    s.push('\n');
    for l in &lines {
        s.push_str(l);
        s.push('\n');
    }
    Ok(s)
}

/// A shard's result lines (every line after its header) against the digest its header
/// carries ([`ShardHeader::results`]); a shard without one predates it and is refused.
fn check_digest(name: &str, text: &str, d: Option<&ResultsDigest>) -> Result<(), String> {
    let Some(d) = d else {
        return Err(format!(
            "{name}: the header carries no results digest (a shard written by an older kestrel): regenerate it with kestrel grade --shard"
        ));
    };
    let got = ResultsDigest::of(text.lines().skip(1));
    if got.lines != d.lines {
        return Err(format!(
            "{name}: {} result lines where the header says {}: the shard was changed after it was written; regenerate it",
            got.lines, d.lines
        ));
    }
    if got.blake3 != d.blake3 {
        return Err(format!(
            "{name}: the result lines' BLAKE3 {} is not the header's {}: the shard was changed after it was written; regenerate it",
            got.blake3, d.blake3
        ));
    }
    Ok(())
}

/// Combine shard files (their contents, with names for messages) into the job and the
/// complete, index-sorted unit results. Refuses shards of different jobs, a missing or
/// repeated shard, results that do not cover every unit exactly once, and result lines that
/// are not the ones the header's digest was taken of (or a header without one).
pub fn merge_shards(files: &[(String, String)]) -> Result<(Job, Vec<UnitResult>), GradeError> {
    let bad = |m: String| GradeError::new("SHARD", m);
    let mut job: Option<(Job, String, u64, u64)> = None;
    let mut seen: BTreeSet<u64> = BTreeSet::new();
    let mut results: Vec<UnitResult> = Vec::new();
    // The first shard whose result lines are not those its header's digest was taken of:
    // said last, so a shard whose lines are wrong in a way named more precisely (a unit
    // repeated, cut short, P&L past the range) says that.
    let mut digest: Option<String> = None;
    for (name, text) in files {
        let mut lines = text.lines();
        let first = lines
            .next()
            .ok_or_else(|| bad(format!("{name}: empty shard file")))?;
        let h: ShardHeader = serde_json::from_str(first).map_err(|e| {
            bad(format!(
                "{name}: line 1 is not a shard header: {}",
                crate::bus::line_error(&e.to_string())
            ))
        })?;
        if h.kind != "kestrel-grade-shard" || h.job.format != GRADE_FORMAT {
            return Err(bad(format!(
                "{name}: not a kestrel grade shard of format {GRADE_FORMAT}"
            )));
        }
        if h.job.fingerprint() != h.fingerprint {
            return Err(bad(format!(
                "{name}: the header's job does not match its fingerprint"
            )));
        }
        check_counts(h.job.draws, h.job.resamples)
            .map_err(|m| bad(format!("{name}: not a job kestrel grade runs: {m}")))?;
        match &job {
            None => job = Some((h.job.clone(), h.fingerprint.clone(), h.of, h.total)),
            Some((_, fp, of, total)) => {
                if *fp != h.fingerprint || *of != h.of || *total != h.total {
                    return Err(bad(format!(
                        "{name}: shard of a different grade run (fingerprint, shard count or unit count differ)"
                    )));
                }
            }
        }
        if !seen.insert(h.shard) {
            return Err(bad(format!(
                "{name}: shard {}/{} given twice",
                h.shard, h.of
            )));
        }
        if (h.lo, h.hi) != shard_range(h.total, h.shard, h.of) {
            return Err(bad(format!(
                "{name}: unit range does not match shard {}/{}",
                h.shard, h.of
            )));
        }
        // Unit -> the line it is on, to name a repeated one (and count the units).
        let mut lines_of: BTreeMap<u64, usize> = BTreeMap::new();
        for (k, line) in lines.enumerate() {
            let r: UnitResult = serde_json::from_str(line).map_err(|e| {
                bad(format!(
                    "{name}: line {}: not a unit's result: {}",
                    k + 2,
                    crate::bus::line_error(&e.to_string())
                ))
            })?;
            if r.unit < h.lo || r.unit >= h.hi {
                return Err(bad(format!(
                    "{name}: line {}: unit {} outside the shard",
                    k + 2,
                    r.unit
                )));
            }
            if let Some(first) = lines_of.insert(r.unit, k + 2) {
                return Err(bad(format!(
                    "{name}: line {}: unit {} repeated (first on line {first}): a shard holds each unit once",
                    k + 2,
                    r.unit
                )));
            }
            if r.plans
                .iter()
                .try_fold(0i64, |a, p| a.checked_add(p.pnl))
                .is_none()
            {
                return Err(bad(format!(
                    "{name}: line {}: unit {}: its plans' P&L sums past the 64-bit range ({}): not a result kestrel grade writes",
                    k + 2,
                    r.unit,
                    PNL_RANGE
                )));
            }
            results.push(r);
        }
        let count = lines_of.len() as u64;
        if count != h.hi - h.lo {
            return Err(bad(format!(
                "{name}: {count} results for {} units (truncated shard?)",
                h.hi - h.lo
            )));
        }
        if digest.is_none() {
            digest = check_digest(name, text, h.results.as_ref()).err();
        }
    }
    let Some((job, _, of, total)) = job else {
        return Err(GradeError::new("USAGE", "no shard files"));
    };
    let missing: Vec<String> = (0..of)
        .filter(|i| !seen.contains(i))
        .map(|i| format!("{i}/{of}"))
        .collect();
    if !missing.is_empty() {
        return Err(bad(format!("missing shards: {}", missing.join(", "))));
    }
    results.sort_by_key(|r| r.unit);
    null_sums_fit(&results).map_err(bad)?;
    let expected = job.units();
    if results.len() as u64 != total || expected.len() as u64 != total {
        return Err(bad("results do not cover every unit".into()));
    }
    for (r, u) in results.iter().zip(&expected) {
        if r.unit != u.index
            || r.grade != u.grade
            || r.tape != u.tape
            || r.kind != u.kind
            || r.draw != u.draw
        {
            return Err(bad(format!(
                "unit {} is missing, repeated or mislabelled",
                u.index
            )));
        }
    }
    if let Some(e) = digest {
        return Err(bad(e));
    }
    Ok((job, results))
}

/// The range every P&L sum of a report must stay in, for messages.
const PNL_RANGE: &str = "±922337203685477.5807R";

/// The report sums each tape's null draws (a plan's, and the whole lineage's) in 64 bits:
/// refuse results whose sums would not fit, rather than wrap into a wrong mean.
fn null_sums_fit(results: &[UnitResult]) -> Result<(), String> {
    let mut sums: BTreeMap<(usize, usize, Option<usize>), i64> = BTreeMap::new();
    for r in results.iter().filter(|r| r.kind == RunKind::Null) {
        let total = r.plans.iter().map(|p| p.pnl).fold(0i64, i64::wrapping_add);
        let members = r
            .plans
            .iter()
            .map(|p| p.pnl)
            .enumerate()
            .map(|(i, v)| (Some(i), v));
        for (m, v) in members.chain(std::iter::once((None, total))) {
            let s = sums.entry((r.grade, r.tape, m)).or_insert(0);
            *s = s.checked_add(v).ok_or_else(|| {
                format!(
                    "grade {} tape {}: the null runs' P&L sums past the 64-bit range ({PNL_RANGE}) at unit {}: not results kestrel grade writes",
                    r.grade, r.tape, r.unit
                )
            })?;
        }
    }
    Ok(())
}

// ------------------------------------------------------------------ report

/// The value of a `BY` key for a tape: `regime.intraday` reads the tape's `regime` tag (as
/// the regime gate does), `regime.<k>` the tag `<k>`, any other key the tag of that name.
/// A tag the tape does not carry is `UNKNOWN`.
pub fn by_value(key: &str, tags: &BTreeMap<String, String>) -> String {
    let k = key.strip_prefix("regime.").unwrap_or(key);
    let tag = gate::tag_for_key(k);
    tags.get(tag).cloned().unwrap_or_else(|| "UNKNOWN".into())
}

/// One tape's numbers in a cell.
#[derive(Debug, Clone, Default)]
struct Row {
    plan: i64,
    active: bool,
    null_sum: i64,
    ungated: i64,
}

/// Comparison of a cell with one counterfactual.
#[derive(Debug, Clone)]
struct Versus {
    /// The counterfactual's mean per run (num, den in 0.0001 R).
    cf_mean: (i128, i128),
    /// Mean paired difference (plan − counterfactual).
    diff: (i128, i128),
    /// CI of the mean difference (num lo, num hi, den).
    ci: Option<(i128, i128, i128)>,
}

#[derive(Debug, Clone)]
struct CellStats {
    key: String,
    runs: u64,
    active: u64,
    wins: u64,
    mean: (i128, i128),
    median: (i128, i128),
    worst: i64,
    vs: Vec<(&'static str, Versus)>,
}

fn versus(values: &[i128], scale: i128, cf_sum: i128, resamples: u32, seed: &str) -> Versus {
    let n = values.len() as i128;
    let sum: i128 = values.iter().sum();
    let ci = if values.len() < MIN_CI_RUNS {
        None
    } else {
        stats::bootstrap_mean(values, resamples, seed).map(|c| (c.lo_sum, c.hi_sum, n * scale))
    };
    Versus {
        cf_mean: (cf_sum, n * scale),
        diff: (sum, n * scale),
        ci,
    }
}

fn cells(job: &Job, gi: usize, results: &[&UnitResult]) -> Vec<CellStats> {
    let g = &job.grades[gi];
    let lineage_split = g.by.iter().any(|k| k == "lineage");
    let d = i64::from(job.draws.max(1));
    // (cell key) -> rows in tape order.
    let mut map: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    for (ti, t) in g.tapes.iter().enumerate() {
        let of_tape: Vec<&&UnitResult> = results.iter().filter(|r| r.tape == ti).collect();
        let members: Vec<Option<usize>> = if lineage_split {
            (0..g.lineage.len()).map(Some).collect()
        } else {
            vec![None]
        };
        for m in members {
            let pick = |r: &UnitResult| -> i64 {
                match m {
                    Some(i) => r.plans.get(i).map_or(0, |x| x.pnl),
                    None => r.plans.iter().map(|x| x.pnl).sum(),
                }
            };
            let mut row = Row::default();
            for r in &of_tape {
                match r.kind {
                    RunKind::Plan => {
                        row.plan = pick(r);
                        row.active = match m {
                            Some(i) => r.plans.get(i).is_some_and(|x| x.fills > 0),
                            None => r.plans.iter().any(|x| x.fills > 0),
                        };
                    }
                    RunKind::Null => row.null_sum += pick(r),
                    RunKind::Ungated => row.ungated = pick(r),
                }
            }
            let mut parts: Vec<String> = Vec::new();
            for k in &g.by {
                if k == "lineage" {
                    let path = m
                        .and_then(|i| g.lineage.get(i))
                        .map_or("", |l| l.path.as_str());
                    parts.push(format!("lineage={path}"));
                } else {
                    parts.push(format!("{k}={}", by_value(k, &t.tags)));
                }
            }
            let key = if parts.is_empty() {
                "all".to_string()
            } else {
                parts.join(" ")
            };
            map.entry(key).or_default().push(row);
        }
    }
    map.into_iter()
        .map(|(key, rows)| {
            let n = rows.len() as i128;
            let plan: Vec<i64> = rows.iter().map(|r| r.plan).collect();
            let active = rows.iter().filter(|r| r.active).count() as u64;
            let wins = rows.iter().filter(|r| r.active && r.plan > 0).count() as u64;
            let sum: i128 = plan.iter().map(|x| i128::from(*x)).sum();
            let mut vs = Vec::new();
            if g.null {
                let diffs: Vec<i128> = rows
                    .iter()
                    .map(|r| i128::from(d) * i128::from(r.plan) - i128::from(r.null_sum))
                    .collect();
                let cf: i128 = rows.iter().map(|r| i128::from(r.null_sum)).sum();
                let seed = format!("kestrel-grade-boot-v1|{}|{key}|null", g.title);
                vs.push((
                    "null",
                    versus(&diffs, i128::from(d), cf, job.resamples, &seed),
                ));
            }
            if g.ungated {
                let diffs: Vec<i128> = rows
                    .iter()
                    .map(|r| i128::from(r.plan) - i128::from(r.ungated))
                    .collect();
                let cf: i128 = rows.iter().map(|r| i128::from(r.ungated)).sum();
                let seed = format!("kestrel-grade-boot-v1|{}|{key}|ungated", g.title);
                vs.push(("ungated", versus(&diffs, 1, cf, job.resamples, &seed)));
            }
            CellStats {
                key,
                runs: rows.len() as u64,
                active,
                wins,
                mean: (sum, n),
                median: stats::median(&plan),
                worst: plan.iter().copied().min().unwrap_or(0),
                vs,
            }
        })
        .collect()
}

fn results_by_grade<'a>(job: &Job, results: &'a [UnitResult]) -> Vec<Vec<&'a UnitResult>> {
    let mut v: Vec<Vec<&UnitResult>> = vec![Vec::new(); job.grades.len()];
    for r in results {
        if let Some(x) = v.get_mut(r.grade) {
            x.push(r);
        }
    }
    v
}

fn f4((n, d): (i128, i128)) -> String {
    stats::fmt4(n, d)
}

/// The canonical JSON report: one line, keys sorted at every level, every P&L figure an
/// exact 4-decimal string in R, counts as integers. Byte-stable.
pub fn report_json(job: &Job, results: &[UnitResult]) -> String {
    use serde_json::{Value as J, json};
    let by_grade = results_by_grade(job, results);
    let grades: Vec<J> = job
        .grades
        .iter()
        .enumerate()
        .map(|(gi, g)| {
            let cells: Vec<J> = cells(job, gi, &by_grade[gi])
                .into_iter()
                .map(|c| {
                    let mut vs = serde_json::Map::new();
                    for (name, v) in &c.vs {
                        let (lo, hi, ex) = match v.ci {
                            Some((lo, hi, den)) => (
                                J::String(stats::fmt4(lo, den)),
                                J::String(stats::fmt4(hi, den)),
                                J::Bool(lo > 0 || hi < 0),
                            ),
                            None => (J::Null, J::Null, J::Bool(false)),
                        };
                        vs.insert(
                            (*name).to_string(),
                            json!({
                                "mean_r": f4(v.cf_mean),
                                "diff_mean_r": f4(v.diff),
                                "ci_low_r": lo,
                                "ci_high_r": hi,
                                "ci_excludes_zero": ex,
                            }),
                        );
                    }
                    json!({
                        "cell": c.key,
                        "runs": c.runs,
                        "active": c.active,
                        "wins": c.wins,
                        "hit_rate": if c.active > 0 {
                            J::String(stats::fmt4(i128::from(c.wins) * 10_000, i128::from(c.active)))
                        } else {
                            J::Null
                        },
                        "mean_r": f4(c.mean),
                        "median_r": f4(c.median),
                        "worst_r": stats::fmt4(i128::from(c.worst), 1),
                        "vs": J::Object(vs),
                    })
                })
                .collect();
            json!({
                "grade": g.title,
                "file": g.file,
                "subject": g.subject,
                "subject_kind": if g.subject_kind.is_empty() { "plan" } else { g.subject_kind.as_str() },
                "subject_file": g.subject_file,
                "session_blake3": g.session_blake3,
                "fill_model": g.fill,
                "gated": g.gated,
                "by": g.by,
                "counterfactuals": {
                    "null": g.null,
                    "ungated": g.ungated,
                },
                "lineage": g.lineage.iter().map(|l| json!({
                    "name": l.name,
                    "parent": l.parent,
                    "path": l.path,
                })).collect::<Vec<_>>(),
                "tapes": g.tapes.iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
                "cells": cells,
            })
        })
        .collect();
    let report = json!({
        "format": job.format,
        "r_usd": job.r_usd,
        "null_draws": job.draws,
        "bootstrap": {
            "resamples": job.resamples,
            "level": "0.95",
            "method": "percentile; tapes resampled with replacement; paired differences",
        },
        "grades": grades,
    });
    crate::bus::canonical_json(&report)
}

/// The human report: per grade, one block per cell (cells are never averaged together).
pub fn report_text(job: &Job, results: &[UnitResult]) -> String {
    let by_grade = results_by_grade(job, results);
    let mut s = String::new();
    for (gi, g) in job.grades.iter().enumerate() {
        if gi > 0 {
            s.push('\n');
        }
        s.push_str(&g.title);
        s.push('\n');
        let subject = match g.subject_kind.as_str() {
            "" | "plan" => format!("{} ({})", g.subject, g.subject_file),
            "pod" => format!("pod {} ({})", g.subject, g.subject_file),
            "agent" => format!("the agent of {}", g.subject_file),
            k => format!("{k} {} (the agent of {})", g.subject, g.subject_file),
        };
        s.push_str(&format!(
            "  subject {}{}  tapes {}  1R = ${}  fill {}\n",
            subject,
            if g.gated { "  regime-gated" } else { "" },
            g.tapes.len(),
            job.r_usd,
            g.fill
        ));
        if let Some(from) = &g.tapes_from {
            s.push_str(&format!("  tapes from {from}\n"));
        }
        if !matches!(g.subject_kind.as_str(), "" | "plan") {
            let plans: Vec<&str> = g.lineage.iter().map(|l| l.path.as_str()).collect();
            s.push_str(&format!("  plans {}\n", plans.join(", ")));
        }
        if g.null || g.ungated {
            s.push_str(&format!(
                "  differences: plan minus counterfactual, mean per run, 95% percentile bootstrap CI ({} resamples){}\n",
                job.resamples,
                if g.null {
                    format!(", null = {} seeded draws per tape", job.draws)
                } else {
                    String::new()
                }
            ));
        }
        for c in cells(job, gi, &by_grade[gi]) {
            let hit = if c.active > 0 {
                stats::fmt4(i128::from(c.wins) * 10_000, i128::from(c.active))
            } else {
                "-".into()
            };
            s.push_str(&format!(
                "  cell {}\n    runs {}  active {}  hit {}  mean {}R  median {}R  worst {}R\n",
                c.key,
                c.runs,
                c.active,
                hit,
                f4(c.mean),
                f4(c.median),
                stats::fmt4(i128::from(c.worst), 1)
            ));
            for (name, v) in &c.vs {
                let ci = match v.ci {
                    Some((lo, hi, den)) => format!(
                        "[{}, {}]{}",
                        stats::fmt4_signed(lo, den),
                        stats::fmt4_signed(hi, den),
                        if lo > 0 || hi < 0 {
                            "  excludes 0"
                        } else {
                            "  includes 0"
                        }
                    ),
                    None => format!("- (fewer than {MIN_CI_RUNS} runs)"),
                };
                s.push_str(&format!(
                    "    vs {:<8} mean {}R  diff {}R  CI {}\n",
                    name,
                    f4(v.cf_mean),
                    stats::fmt4_signed(v.diff.0, v.diff.1),
                    ci
                ));
            }
        }
    }
    s
}

/// Grade everything in one process: every unit, then the report pieces.
pub fn run_all(p: &Prepared, tapes: &mut dyn TapeSource) -> Result<Vec<UnitResult>, GradeError> {
    run_units(p, 0, p.job.unit_count(), tapes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::{self, Mode};

    /// Stopping once every plan is closed gives the same fills and P&L as replaying the whole
    /// tape, on the bundled sessions with the desk example (chains, reloads, options, a POD).
    #[test]
    fn early_stop_changes_no_result() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let src = std::fs::read_to_string(root.join("examples/run-desk.kestrel")).unwrap();
        let doc = lang::check(&src, Mode::File).unwrap();
        let names: Vec<LineageEntry> = plans_of(&doc)
            .iter()
            .map(|(_, p)| LineageEntry {
                name: p.name.text.clone(),
                parent: None,
                path: p.name.text.clone(),
            })
            .collect();
        let short = "PLAN quick budget 1R ttl 10:00\n  WHEN spot crosses above vwap\n  DO buy 10 shares @ ask\n  EXIT NOT plan(quick).filled within 5m\n";
        let quick = lang::check(short, Mode::File).unwrap();
        let quick_names = vec![LineageEntry {
            name: "quick".into(),
            parent: None,
            path: "quick".into(),
        }];
        let r = Px::from_cents(100_000);
        for t in [
            "trend-2025-04-09-s1",
            "range-2025-04-09-s2",
            "shock-2025-04-09-s7",
        ] {
            let (h, evs) =
                crate::market::read_tape_file(&root.join(format!("tapes/{t}.jsonl"))).unwrap();
            for (d, l) in [(&doc, &names), (&quick, &quick_names)] {
                let early = replay(&h, &evs, d, "strict-cross-v1", r, false).unwrap();
                let mut e = Engine::new(&h, EngineConfig::strict(r), Bus::new(None));
                e.arm_document(d);
                e.on_events(&evs);
                let full = e.finish();
                assert_eq!(
                    results_of(early.blotter(), l),
                    results_of(full.blotter(), l),
                    "{t}"
                );
            }
        }
    }

    #[test]
    fn shard_ranges_partition_the_units() {
        for total in [0u64, 1, 5, 44, 1000] {
            for n in 1..=9u64 {
                let mut next = 0;
                for i in 0..n {
                    let (lo, hi) = shard_range(total, i, n);
                    assert_eq!(lo, next);
                    assert!(hi >= lo);
                    next = hi;
                }
                assert_eq!(next, total);
            }
        }
        assert_eq!(parse_shard("2/7"), Some((2, 7)));
        assert_eq!(parse_shard("7/7"), None);
        assert_eq!(parse_shard("0/0"), None);
        assert_eq!(parse_shard("x"), None);
    }

    #[test]
    fn by_keys_read_tags() {
        let mut tags = BTreeMap::new();
        tags.insert("regime".to_string(), "trend".to_string());
        tags.insert("date".to_string(), "2025-04-09".to_string());
        assert_eq!(by_value("regime.intraday", &tags), "trend");
        assert_eq!(by_value("regime", &tags), "trend");
        assert_eq!(by_value("date", &tags), "2025-04-09");
        assert_eq!(by_value("regime.vix", &tags), "UNKNOWN");
    }

    /// A multi-session tape is graded as one tape per session: `select_tapes` lists each
    /// session (`<name>@<date>`, its own date tag) and loading one gives exactly that
    /// session as a one-session tape (its header and events).
    #[test]
    fn each_session_of_a_tape_is_one_tape_of_its_family() {
        use crate::market::tape::SessionSpec;
        use crate::market::{Date, GenOptions, Regime, TapeEvent, generate_with, write_tape};
        let mut members = Vec::new();
        let mut date = Date::new(2025, 4, 9).unwrap();
        for i in 0..3u64 {
            let g = generate_with(
                Regime::Range,
                i + 1,
                date,
                GenOptions {
                    minutes: Some(10),
                    ..GenOptions::default()
                },
            );
            let h = g.header().clone();
            members.push((h, g.collect::<Vec<TapeEvent>>()));
            date = date.next_weekday().unwrap();
        }
        let mut h = members[0].0.clone();
        h.v = 2;
        let mut evs = members[0].1.clone();
        for (mh, me) in &members[1..] {
            evs.push(TapeEvent::Session(Box::new(SessionSpec {
                date: mh.date,
                open: mh.open,
                close: mh.close,
                prior: mh.symbols.iter().map(|s| (s.sym, s.prior_close)).collect(),
            })));
            evs.extend(me.iter().cloned());
        }
        let dir =
            std::env::temp_dir().join(format!("kestrel-grade-sessions-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("week.jsonl");
        let mut bytes = Vec::new();
        write_tape(&mut bytes, &h, evs).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let opts = Options {
            tapes: Some(dir.display().to_string()),
            ..Options::new(Px(1000 * 10_000))
        };
        let refs = select_tapes(&GradeRange::Glob("tapes/week*".into()), &opts).unwrap();
        assert_eq!(refs.len(), 3);
        let mut src = FileTapes::default();
        for (i, r) in refs.iter().enumerate() {
            let (mh, me) = &members[i];
            assert_eq!(r.session, Some(i as u32 + 1));
            assert_eq!(r.name, format!("{}@{}", h.name, mh.date));
            assert_eq!(r.tags.get("date"), Some(&mh.date.to_string()));
            let lt = src.load(r).unwrap();
            assert_eq!(lt.events, *me);
            assert_eq!(
                (lt.header.date, lt.header.open, lt.header.close),
                (mh.date, mh.open, mh.close)
            );
            assert_eq!(lt.header.symbols, mh.symbols);
        }
        // A one-session tape stays one unnamed-session tape (a v1 grade's job is unchanged).
        let one = dir.join("one.jsonl");
        let mut b = Vec::new();
        write_tape(&mut b, &members[0].0, members[0].1.clone()).unwrap();
        std::fs::write(&one, &b).unwrap();
        let refs = select_tapes(&GradeRange::Glob("tapes/one*".into()), &opts).unwrap();
        assert_eq!((refs.len(), refs[0].session), (1, None));
        assert!(
            !serde_json::to_string(&refs[0])
                .unwrap()
                .contains("\"session\":")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
