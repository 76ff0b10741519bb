//! `kestrel grade`: run the GRADE statements of documents over tapes, against
//! counterfactuals; shard the work and merge shard files (see `docs/grade.md`).

use std::path::{Path, PathBuf};

use crate::grade::{self, FileTapes, GradeError, Options, Source};
use crate::lang::{self, Mode};

/// Arguments of `kestrel grade`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    /// `merge`: combine shard files into the report.
    #[command(subcommand)]
    pub command: Option<GradeCommand>,
    /// Documents: every GRADE statement in them runs; subjects resolve across them and the
    /// files they IMPORT.
    pub files: Vec<PathBuf>,
    /// A saved session (the Bus written by `kestrel agent --bus`, `kestrel run --bus` or the
    /// desk): its agent is replayed for `GRADE wake|view` subjects and for `GRADE plan`
    /// subjects no file defines.
    #[arg(long)]
    pub agent: Option<PathBuf>,
    /// With --agent: also grade the whole agent (every plan it armed) over this range (a
    /// tape glob or YYYY-MM[..YYYY-MM]), as a GRADE statement would.
    #[arg(long, requires = "agent")]
    pub over: Option<String>,
    /// With --over: the fill model of the whole-agent grade.
    #[arg(long, default_value = "strict-cross-v1", requires = "over")]
    pub fill: String,
    /// With --over: a counterfactual of the whole-agent grade (`null`, `ungated`; repeatable).
    #[arg(long, requires = "over")]
    pub vs: Vec<String>,
    /// With --over: a BY key of the whole-agent grade (repeatable).
    #[arg(long, requires = "over")]
    pub by: Vec<String>,
    /// Candidate tapes (a glob, or a directory = DIR/*.jsonl). A glob range keeps those whose
    /// file name matches its last component; a month range filters them by date.
    #[arg(long)]
    pub tapes: Option<String>,
    #[command(flatten)]
    pub r: super::flags::RUsd,
    #[command(flatten)]
    pub out_json: super::flags::Json,
    /// Run slice I of N (0-based) of the work units and write its raw results (JSON Lines).
    #[arg(long)]
    pub shard: Option<String>,
    /// Write the report (or, with --shard, the shard file) here, atomically; its directory
    /// is created if missing (`-`: standard output, as without it). It may not name an input.
    /// When the grade fails once it has begun, an earlier file here is removed; a run refused
    /// before it began leaves it as it was.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// VS null draws per tape (1 to 10000).
    #[arg(long, allow_negative_numbers = true, default_value_t = grade::DEFAULT_DRAWS)]
    pub draws: u32,
    /// Bootstrap resamples per confidence interval (40 to 1000000: fewer is no 95% percentile
    /// interval).
    #[arg(long, allow_negative_numbers = true, default_value_t = grade::DEFAULT_RESAMPLES)]
    pub resamples: u32,
}

/// Sub-commands of `kestrel grade`.
#[derive(Debug, clap::Subcommand)]
pub enum GradeCommand {
    /// Combine shard files into the report a single run prints, byte for byte.
    ///
    /// Example: kestrel grade merge out/shard-*.jsonl --json
    Merge(MergeArgs),
}

/// Arguments of `kestrel grade merge`.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// Shard files (every shard of one run, in any order).
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
    #[command(flatten)]
    pub out_json: super::flags::Json,
    /// Write the report here, atomically; its directory is created if missing (`-`: standard
    /// output, as without it). It may not name a shard. A merge refused for its shards leaves
    /// an earlier file here as it was (a note says it is not this run's output); one stopped by
    /// a signal removes it.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

fn fail(e: &GradeError) -> i32 {
    errln!("{e}");
    e.exit_code()
}

/// Write `text` to `out` atomically (temporary file in the same directory, then rename; the
/// directory is created first), or to stdout.
fn emit(out: Option<&Path>, text: &str) -> i32 {
    let Some(p) = out else {
        return super::out::stdout(text);
    };
    if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty())
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        errln!("error code=IO message=cannot create {}: {e}", dir.display());
        return 1;
    }
    if let Err(e) = super::out::write_atomic(p, text.as_bytes()) {
        errln!("error code=IO message=cannot write {}: {e}", p.display());
        return 1;
    }
    0
}

/// The end of a grade or a merge: the text written to `--out` (or stdout), or, on a failure
/// (already printed), its exit code. `started`: the run had accepted its command line and
/// its inputs and begun the work; its failure then removes an earlier `--out` file, so that
/// no stale report is taken for this run's. A run refused before that (a mistyped flag, a
/// missing shard, a tape that is not there) leaves the file as it was and says so: before
/// 2026-12-06 a typo deleted a finished shard or report.
fn finish(out: Option<&Path>, result: Result<String, i32>, started: bool) -> i32 {
    match result {
        Ok(text) => emit(out, text.as_str()),
        Err(code) if !started => {
            if let Some(p) = out.filter(|p| p.is_file()) {
                errln!(
                    "note: {} is left as it was (this run was refused before it began): it is not this run's output",
                    p.display()
                );
            }
            code
        }
        Err(code) => {
            if let Some(p) = out.filter(|p| p.is_file()) {
                match std::fs::remove_file(p) {
                    Ok(()) => errln!(
                        "note: removed the earlier {} (this run wrote none)",
                        p.display()
                    ),
                    Err(e) => errln!(
                        "error code=IO message=cannot remove the earlier {}: {e}; it is not this run's output",
                        p.display()
                    ),
                }
            }
            code
        }
    }
}

/// Run `kestrel grade` / `kestrel grade merge`; returns the exit code (0 ok; 1 usage, I/O,
/// bad tape, bad shard or a caught SIGINT / SIGTERM; 2 a refused document or a GRADE that
/// cannot be graded).
pub fn run(a: Args) -> i32 {
    // SIGINT / SIGTERM stop the work between units and fail as any grade does: nothing is
    // written and an earlier --out is removed (a second signal ends the process at once).
    super::signals::install();
    let mut started = false;
    if let Some(GradeCommand::Merge(m)) = &a.command {
        let out = file(&m.out);
        let inputs: Vec<(&str, &Path)> = m.shards.iter().map(|p| ("shard", p.as_path())).collect();
        if let Err(code) = out_is_not_an_input(out, &inputs) {
            return code;
        }
        let r = merge(m, &mut started).and_then(not_interrupted("merge"));
        return finish(out, r, started);
    }
    let out = file(&a.out);
    let r = grade_text(&a, out, &mut started).and_then(not_interrupted("grade"));
    finish(out, r, started)
}

/// Refuse an `--out` that names one of the run's inputs (`(flag, path)`: the documents, the
/// `--agent` session, the tapes, the shards), before anything is written or removed: before
/// 2026-12-06 `grade DOC --out DOC` replaced the document with its report, `--out` naming a
/// tape replaced the tape, and `grade merge S0 S1 S2 --out S1` the shard.
fn out_is_not_an_input(out: Option<&Path>, inputs: &[(&str, &Path)]) -> Result<(), i32> {
    let Some(o) = out else {
        return Ok(());
    };
    match inputs.iter().find(|(_, p)| super::out::same_file(o, p)) {
        Some((what, p)) => {
            errln!(
                "error code=USAGE message=--out {} names an input file ({what} {}): refusing to overwrite it; write the report elsewhere",
                o.display(),
                p.display()
            );
            Err(1)
        }
        None => Ok(()),
    }
}

/// The file `--out` names: `-` is standard output (where the report goes without `--out`,
/// as for `tape gen -o -`); it wrote a file named `-`.
fn file(out: &Option<PathBuf>) -> Option<&Path> {
    out.as_deref().filter(|p| *p != Path::new("-"))
}

/// The report, unless a signal was caught while it was computed (then the failure, printed:
/// the report is not written).
fn not_interrupted(what: &'static str) -> impl FnOnce(String) -> Result<String, i32> {
    move |text| match super::signals::caught() {
        Some(sig) => {
            errln!(
                "error code=INTERRUPTED message={sig}: the {what} stopped before its report was written"
            );
            Err(1)
        }
        None => Ok(text),
    }
}

/// Say on stderr each grade whose subject could not arm on some tapes
/// ([`grade::not_armed_warnings`]): the report counts those runs as flat.
fn warn_not_armed(job: &grade::Job, results: &[grade::UnitResult]) {
    for w in grade::not_armed_warnings(job, results) {
        errln!("{w}");
    }
}

/// Run the grade (or one shard): the report or shard text, or the exit code of a failure
/// (printed).
fn grade_text(a: &Args, out: Option<&Path>, started: &mut bool) -> Result<String, i32> {
    let r_usd = match super::run::parse_r_usd("--r-usd", &a.r.r_usd) {
        Ok(p) => p,
        Err(e) => {
            errln!("error code=USAGE message={e}");
            return Err(1);
        }
    };
    if let Err(e) = grade::check_counts(a.draws, a.resamples) {
        errln!("error code=USAGE message={e}");
        return Err(1);
    }
    let shard = match a.shard.as_deref().map(grade::parse_shard) {
        None => None,
        Some(Some(s)) => Some(s),
        Some(None) => {
            errln!("error code=USAGE message=--shard is I/N with 0 <= I < N, e.g. 0/4");
            return Err(1);
        }
    };
    if a.files.is_empty() && a.over.is_none() {
        errln!(
            "error code=USAGE message=give the documents whose GRADE statements run (kestrel grade FILE...), or --agent SESSION.jsonl --over RANGE to grade a whole agent"
        );
        return Err(1);
    }
    // A desk's session file names the Bus beside it (the wrong kind of file: exit 1).
    if let Some(e) = a
        .agent
        .as_deref()
        .and_then(|p| super::sniff::not_a_bus(p, " as --agent"))
    {
        errln!("{e}");
        return Err(1);
    }
    let agent = match &a.agent {
        None => None,
        Some(p) => match crate::limits::read_file_bounded(p, crate::limits::MAX_RECORDING_BYTES) {
            Ok(bytes) => match grade::AgentSession::from_bus(&p.display().to_string(), &bytes) {
                Ok(s) => Some(std::sync::Arc::new(s)),
                Err(e) => return Err(fail(&e)),
            },
            Err(e) => {
                errln!("error code=IO message=cannot read {}: {e}", p.display());
                return Err(1);
            }
        },
    };
    let mut agent_grades = Vec::new();
    if let Some(over) = &a.over {
        match whole_agent_grade(over, &a.fill, &a.vs, &a.by) {
            Ok(g) => agent_grades.push(g),
            Err(e) => {
                errln!("error code=USAGE message={e}");
                return Err(1);
            }
        }
    }
    for path in &a.files {
        // A pipe is read once, by the document reader below (which names a Bus too).
        // Its first line is enough (the whole file was read to find it).
        if super::sniff::is_stream(path) {
            continue;
        }
        let e = match super::sniff::file(path) {
            super::sniff::Kind::Tape => super::sniff::tape_to_grade(path),
            // A run's Bus has no author for --agent to replay: its plans are graded as a
            // document over the tape it ran.
            super::sniff::Kind::Bus => match super::sniff::bus_without_author(path) {
                Some(tape) => format!(
                    "error code=USAGE message={} is a saved session of a run with no author's turn (as kestrel run --bus writes one), not a document: grade the plans it ran with a GRADE statement beside them: kestrel grade FILE.kestrel, FILE.kestrel holding the plans (or IMPORTing them) and GRADE plan NAME OVER {tape} FILL strict-cross-v1",
                    path.display()
                ),
                None => format!(
                    "error code=USAGE message={} is a saved session, not a document: pass it with --agent {}",
                    path.display(),
                    path.display()
                ),
            },
            _ => continue,
        };
        errln!("{e}");
        return Err(1);
    }
    let docs = super::lang::check_files(&a.files)?;
    let sources: Vec<Source> = (a.files.iter().zip(docs))
        .map(|(path, doc)| Source {
            path: path.display().to_string(),
            doc,
        })
        .collect();
    let opts = Options {
        tapes: a.tapes.clone(),
        draws: a.draws,
        resamples: a.resamples,
        agent,
        agent_grades,
        ..Options::new(r_usd)
    };
    let prepared = match grade::prepare(&sources, &opts) {
        Ok(p) => p,
        Err(e) => return Err(fail(&e)),
    };
    // Every input is known now (the tapes too): `--out` may be none of them.
    let tapes: Vec<&str> = prepared
        .job
        .grades
        .iter()
        .flat_map(|g| g.tapes.iter().map(|t| t.path.as_str()))
        .collect();
    let inputs: Vec<(&str, &Path)> = (a.files.iter().map(|p| ("document", p.as_path())))
        .chain(a.agent.iter().map(|p| ("--agent", p.as_path())))
        .chain(tapes.iter().map(|t| ("tape", Path::new(*t))))
        .collect();
    out_is_not_an_input(out, &inputs)?;
    *started = true;
    let mut tapes = FileTapes::default();
    let text = match shard {
        Some((i, n)) => match grade::run_shard(&prepared, i, n, &mut tapes) {
            Ok(t) => t,
            Err(e) => return Err(fail(&e)),
        },
        None => match grade::run_all(&prepared, &mut tapes) {
            Ok(results) => {
                warn_not_armed(&prepared.job, &results);
                if a.out_json.json {
                    grade::report_json(&prepared.job, &results) + "\n"
                } else {
                    grade::report_text(&prepared.job, &results)
                }
            }
            Err(e) => return Err(fail(&e)),
        },
    };
    Ok(text)
}

/// The whole-agent grade of `--over/--fill/--vs/--by`, parsed by the language's own GRADE
/// rules (so ranges and keys mean what they mean in a document).
fn whole_agent_grade(
    over: &str,
    fill: &str,
    vs: &[String],
    by: &[String],
) -> Result<lang::ast::Grade, String> {
    let one_token = |what: &str, v: &str| {
        if v.is_empty() || v.chars().any(|c| c.is_whitespace() || c == '#') {
            Err(format!("--{what} takes one word without spaces, got {v:?}"))
        } else {
            Ok(())
        }
    };
    one_token("over", over)?;
    one_token("fill", fill)?;
    let mut text = format!("GRADE wake agent OVER {over} FILL {fill}\n");
    for v in vs {
        one_token("vs", v)?;
        text.push_str(&format!("  VS {v}\n"));
    }
    for k in by {
        one_token("by", k)?;
        text.push_str(&format!("  BY {k}\n"));
    }
    let doc = lang::check(&text, Mode::File).map_err(|es| {
        format!(
            "--over/--fill/--vs/--by do not make a GRADE: {}",
            es.first().map(|e| e.one_line()).unwrap_or_default()
        )
    })?;
    doc.statements
        .into_iter()
        .find_map(|s| match s.kind {
            lang::ast::StatementKind::Grade(g) => Some(g),
            _ => None,
        })
        .ok_or_else(|| "--over/--fill/--vs/--by do not make a GRADE".to_string())
}

/// Merge shard files: the report text, or the exit code of a refusal (printed).
fn merge(m: &MergeArgs, started: &mut bool) -> Result<String, i32> {
    let mut files = Vec::new();
    for p in &m.shards {
        // The wrong kind of file (a Bus, a tape, a report) says what it is (exit 1).
        if let Some(e) = super::sniff::not_a_shard(p) {
            errln!("{e}");
            return Err(1);
        }
        let bytes = match crate::limits::read_file_bounded(p, crate::limits::MAX_RECORDING_BYTES) {
            Ok(b) => b,
            Err(e) => {
                errln!("error code=IO message=cannot read {}: {e}", p.display());
                return Err(1);
            }
        };
        // A file that is not text is a malformed shard like any other (the file was read).
        match String::from_utf8(bytes) {
            Ok(t) => files.push((p.display().to_string(), t)),
            Err(e) => {
                errln!(
                    "error code=SHARD message={}: not a kestrel grade shard: not UTF-8 text (invalid byte at offset {})",
                    p.display(),
                    e.utf8_error().valid_up_to()
                );
                return Err(1);
            }
        }
    }
    let (job, results) = match grade::merge_shards(&files) {
        Ok(x) => x,
        Err(e) => return Err(fail(&e)),
    };
    // The shards are whole and of one job: from here a failure (a signal) is this merge's.
    *started = true;
    warn_not_armed(&job, &results);
    let text = if m.out_json.json {
        grade::report_json(&job, &results) + "\n"
    } else {
        grade::report_text(&job, &results)
    };
    Ok(text)
}
