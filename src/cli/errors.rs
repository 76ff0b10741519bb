//! `kestrel errors report`: grade the guided error messages from the repair attempts of saved
//! Bus files (TURNS.md §2; `crate::turn::report`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::grade::glob;
use crate::turn::report::{ErrorsReport, read_asks};

/// Sub-commands of `kestrel errors`.
#[derive(Debug, clap::Subcommand)]
pub enum ErrorsCommand {
    /// Per coded error the authors were shown: how often, how often the next reply parsed,
    /// how often the turn still failed closed, what the next reply cost; totals per author
    /// kind, profile and file.
    ///
    /// Example: kestrel errors report /tmp/runs/ --json
    Report(ReportArgs),
}

/// Arguments of `kestrel errors report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Saved Bus files (JSON Lines from `kestrel agent --bus`, `kestrel run --bus`, the
    /// desk), globs of them (`runs/*.bus.jsonl`), or directories (their `*.bus.jsonl` and
    /// `*.bus-N.jsonl` files).
    #[arg(required = true)]
    pub inputs: Vec<String>,
    #[command(flatten)]
    pub out: super::flags::Json,
}

fn has_magic(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// The Bus files an input names, or the usage / I/O error to print.
fn expand(input: &str) -> Result<Vec<PathBuf>, String> {
    if has_magic(input) && input.ends_with('/') {
        // Directories by a glob (`DIR/*/`: an experiment's arms): the Bus files in each, as
        // a directory named alone gives them. Until 2026-12-06 this matched no file at all,
        // though docs/grammar.md gives it.
        let mut files = Vec::new();
        for tail in BUS_NAMES {
            files.extend(glob::expand(&format!("{input}{tail}")).map_err(|e| {
                format!(
                    "error code=IO message=cannot list {input}: {}",
                    super::io_reason(&e)
                )
            })?);
        }
        files.sort();
        files.dedup();
        if files.is_empty() {
            return Err(format!(
                "error code=USAGE message=no Bus files (*.bus.jsonl, *.bus-N.jsonl) in the directories {input} matches"
            ));
        }
        return Ok(files);
    }
    if has_magic(input) {
        let files = glob::expand(input).map_err(|e| {
            format!(
                "error code=IO message=cannot list {input}: {}",
                super::io_reason(&e)
            )
        })?;
        if files.is_empty() {
            return Err(format!("error code=USAGE message=no file matches {input}"));
        }
        return Ok(files);
    }
    let path = Path::new(input);
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let rd = std::fs::read_dir(path).map_err(|e| {
        format!(
            "error code=IO message=cannot list {input}: {}",
            super::io_reason(&e)
        )
    })?;
    let mut files = Vec::new();
    // Subdirectories that hold Bus files (an `experiment --out` directory keeps one per arm).
    let mut below = 0usize;
    for e in rd {
        let e = e.map_err(|e| {
            format!(
                "error code=IO message=cannot list {input}: {}",
                super::io_reason(&e)
            )
        })?;
        let name = e.file_name().to_string_lossy().into_owned();
        let p = path.join(&name);
        if is_bus_name(&name) && p.is_file() {
            files.push(p);
        } else if p.is_dir() && holds_bus_files(&p) {
            below += 1;
        }
    }
    if files.is_empty() {
        let hint = match below {
            0 => String::new(),
            n => format!(
                ": {n} of its subdirectories hold some (an experiment's arms): give {}/*/",
                input.trim_end_matches('/')
            ),
        };
        return Err(format!(
            "error code=USAGE message=no Bus files (*.bus.jsonl, *.bus-N.jsonl) in {input}{hint}"
        ));
    }
    Ok(files)
}

/// A Bus file's names: `*.bus.jsonl`, and `*.bus-N.jsonl` (a desk's runs).
const BUS_NAMES: [&str; 2] = ["*.bus.jsonl", "*.bus-*.jsonl"];

/// Is it a Bus file's name ([`BUS_NAMES`])?
fn is_bus_name(name: &str) -> bool {
    BUS_NAMES.iter().any(|g| glob::matches(g, name))
}

/// Does the directory hold a Bus file (not looking further down)?
fn holds_bus_files(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten()
            .any(|e| is_bus_name(&e.file_name().to_string_lossy()))
    })
}

/// Build the report from the inputs, with the warnings to print (a cut headless Bus), or the
/// error line to print. Every file is read before anything is printed.
pub fn build(inputs: &[String]) -> Result<(ErrorsReport, Vec<String>), String> {
    let mut files = BTreeSet::new();
    for i in inputs {
        files.extend(expand(i)?);
    }
    // The same file named twice (`s.jsonl` and `./s.jsonl`, a path and a link to it, a
    // file and its directory) is read once: its turns were counted again.
    let mut seen = std::collections::HashSet::new();
    let distinct: Vec<&std::path::PathBuf> = files
        .iter()
        .filter(|f| seen.insert(super::out::file_id(f)))
        .collect();
    let mut report = ErrorsReport::default();
    let mut warnings = Vec::new();
    for f in distinct {
        if let Some(e) = super::sniff::not_a_bus(f, "") {
            return Err(e);
        }
        let bytes = crate::limits::read_file_bounded(f, crate::limits::MAX_RECORDING_BYTES)
            .map_err(|e| super::cannot_read_bounded(f, &e))?;
        let asks = read_asks(&bytes).map_err(|e| {
            format!(
                "error code=BUS message={}: line {}: {}",
                f.display(),
                e.line,
                e.message
            )
        })?;
        let arm = crate::turn::report::read_arm(&bytes);
        report.add_file_arm(&f.display().to_string(), arm.as_deref(), &asks);
        if let Some(w) = cut_warning(&f.display().to_string(), &bytes) {
            warnings.push(w);
        }
    }
    Ok((report, warnings))
}

/// A headless session's Bus that stops before its `session-end` was cut off (a killed run,
/// a partial copy, `head -n`): its turns are counted as far as it goes, and a warning says
/// so (before 2026-12-06 it was averaged in as if whole, while `agent --author` refuses the
/// same file as cut). A desk's Bus ends where the person quit: no warning.
fn cut_warning(path: &str, bytes: &[u8]) -> Option<String> {
    let rec = crate::session::replay::Recording::new(path, bytes)?;
    if rec.is_desk() {
        return None;
    }
    let why = rec.cut()?;
    Some(format!(
        "warning code=BUS message={why}; its turns are counted as far as it goes"
    ))
}

/// Run `kestrel errors …`; returns the exit code (0 ok; 1 usage, I/O or a bad Bus file).
pub fn run(cmd: &ErrorsCommand) -> i32 {
    let ErrorsCommand::Report(a) = cmd;
    match build(&a.inputs) {
        Ok((r, warnings)) => {
            for w in warnings {
                errln!("{w}");
            }
            if a.out.json {
                outln!("{}", r.json());
            } else {
                out!("{}", r.text());
            }
            0
        }
        Err(e) => {
            errln!("{e}");
            super::flags::exit_of(&e)
        }
    }
}
