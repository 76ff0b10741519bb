//! `kestrel grade`: run the GRADE statements of documents over tapes, against
//! counterfactuals; shard the work and merge shard files (see `docs/grade.md`).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::bus;
use crate::grade::{self, FileTapes, GradeError, Options, Source};
use crate::market::Px;

/// Arguments of `kestrel grade`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    /// `merge`: combine shard files into the report.
    #[command(subcommand)]
    pub command: Option<GradeCommand>,
    /// Documents: every GRADE statement in them runs; subjects resolve across them.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Candidate tapes (a glob, or a directory = DIR/*.jsonl). A glob range keeps those whose
    /// file name matches its last component; a month range filters them by date.
    #[arg(long)]
    pub tapes: Option<String>,
    /// Dollars per 1R.
    #[arg(long = "r-usd", default_value = "1000")]
    pub r_usd: String,
    /// Print the canonical JSON report.
    #[arg(long)]
    pub json: bool,
    /// Run slice I of N (0-based) of the work units and write its raw results (JSON Lines).
    #[arg(long)]
    pub shard: Option<String>,
    /// Write the report (or, with --shard, the shard file) here, atomically.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// VS null draws per tape.
    #[arg(long, default_value_t = grade::DEFAULT_DRAWS)]
    pub draws: u32,
    /// Bootstrap resamples per confidence interval.
    #[arg(long, default_value_t = grade::DEFAULT_RESAMPLES)]
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
    /// Print the canonical JSON report.
    #[arg(long)]
    pub json: bool,
    /// Write the report here, atomically.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

fn fail(e: &GradeError) -> i32 {
    eprintln!("{e}");
    e.exit_code()
}

/// Write `text` to `out` atomically (temporary file in the same directory, then rename), or
/// to stdout.
fn emit(out: Option<&Path>, text: &str) -> i32 {
    match out {
        None => {
            let mut o = std::io::stdout().lock();
            if o.write_all(text.as_bytes()).is_err() {
                return 1;
            }
            0
        }
        Some(p) => {
            if let Err(e) = super::out::write_atomic(p, text.as_bytes()) {
                eprintln!("error code=IO message=cannot write {}: {e}", p.display());
                return 1;
            }
            0
        }
    }
}

/// Run `kestrel grade` / `kestrel grade merge`; returns the exit code (0 ok; 1 usage, I/O,
/// bad tape or bad shard; 2 a refused document or a GRADE that cannot be graded).
pub fn run(a: Args) -> i32 {
    if let Some(GradeCommand::Merge(m)) = a.command {
        return merge(&m);
    }
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
    let shard = match a.shard.as_deref().map(grade::parse_shard) {
        None => None,
        Some(Some(s)) => Some(s),
        Some(None) => {
            eprintln!("error code=USAGE message=--shard is I/N with 0 <= I < N, e.g. 0/4");
            return 1;
        }
    };
    let docs = match super::lang::check_files(&a.files) {
        Ok(d) => d,
        Err(code) => return code,
    };
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
        ..Options::new(r_usd)
    };
    let prepared = match grade::prepare(&sources, &opts) {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    let mut tapes = FileTapes::default();
    let text = match shard {
        Some((i, n)) => match grade::run_shard(&prepared, i, n, &mut tapes) {
            Ok(t) => t,
            Err(e) => return fail(&e),
        },
        None => match grade::run_all(&prepared, &mut tapes) {
            Ok(results) => {
                if a.json {
                    grade::report_json(&prepared.job, &results) + "\n"
                } else {
                    grade::report_text(&prepared.job, &results)
                }
            }
            Err(e) => return fail(&e),
        },
    };
    emit(a.out.as_deref(), &text)
}

fn merge(m: &MergeArgs) -> i32 {
    let mut files = Vec::new();
    for p in &m.shards {
        match std::fs::read_to_string(p) {
            Ok(t) => files.push((p.display().to_string(), t)),
            Err(e) => {
                eprintln!("error code=IO message=cannot read {}: {e}", p.display());
                return 1;
            }
        }
    }
    let (job, results) = match grade::merge_shards(&files) {
        Ok(x) => x,
        Err(e) => return fail(&e),
    };
    let text = if m.json {
        grade::report_json(&job, &results) + "\n"
    } else {
        grade::report_text(&job, &results)
    };
    emit(m.out.as_deref(), &text)
}
