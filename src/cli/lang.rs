//! Language verbs: parse, print, fmt, check, rules.

use crate::lang::{self, Diagnostic, Document, Mode, Rule};
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct ParseArgs {
    /// The document (`-` reads stdin).
    pub file: PathBuf,
    /// Check as an author's turn (turn directives allowed) instead of a file.
    #[arg(long)]
    pub turn: bool,
}

#[derive(Debug, clap::Args)]
pub struct PrintArgs {
    /// The document (`-` reads stdin).
    pub file: PathBuf,
    /// Check as an author's turn (turn directives allowed) instead of a file.
    #[arg(long)]
    pub turn: bool,
}

#[derive(Debug, clap::Args)]
pub struct FmtArgs {
    /// Documents to format in place (`-` formats stdin to stdout).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Do not write: list files that are not canonical and exit 2 if any.
    #[arg(long)]
    pub check: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Documents to check (`-` reads stdin).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Output format: one line per error (plus a source snippet at a terminal), or JSON.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Check as an author's turn (turn directives allowed) instead of a file.
    #[arg(long)]
    pub turn: bool,
    /// Always show the source snippet under each error, even when not at a terminal.
    #[arg(long)]
    pub pretty: bool,
}

/// Read a document; `-` is stdin. Errors are printed; `None` means exit 1.
pub(crate) fn read_source(path: &Path) -> Option<String> {
    let mut s = String::new();
    let r = if path == Path::new("-") {
        std::io::stdin().read_to_string(&mut s).map(|_| s)
    } else {
        std::fs::read(path).and_then(|b| {
            String::from_utf8(b)
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
        })
    };
    match r {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("error code=IO message=cannot read {}: {e}", path.display());
            None
        }
    }
}

/// Read and check documents under the file rules (`--plans`, grade's documents), in order.
/// An unreadable file prints its I/O error and stops at once (`Err(1)`); every refused
/// document prints its errors, and after all are checked any refusal is `Err(2)`.
pub(crate) fn check_files(paths: &[PathBuf]) -> Result<Vec<Document>, i32> {
    let mut docs = Vec::new();
    let mut refused = false;
    for path in paths {
        let Some(src) = read_source(path) else {
            return Err(1);
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
    if refused { Err(2) } else { Ok(docs) }
}

fn mode(turn: bool) -> Mode {
    if turn { Mode::Turn } else { Mode::File }
}

fn report(path: &Path, src: &str, errors: &[Diagnostic], pretty: bool) {
    let stderr = std::io::stderr();
    let color = stderr.is_terminal();
    let show = pretty || color;
    let name = path.display().to_string();
    let mut out = stderr.lock();
    for e in errors {
        let _ = writeln!(out, "{}: {}", name, e.one_line());
        if show {
            let _ = writeln!(out, "{}", e.render(src, &name, color));
        }
    }
}

pub fn parse(a: &ParseArgs) -> i32 {
    let Some(src) = read_source(&a.file) else {
        return 1;
    };
    match lang::check(&src, mode(a.turn)) {
        Ok(doc) => match serde_json::to_string_pretty(&doc) {
            Ok(j) => {
                outln!("{j}");
                0
            }
            Err(e) => {
                eprintln!("error code=IO message={e}");
                1
            }
        },
        Err(errors) => {
            report(&a.file, &src, &errors, false);
            2
        }
    }
}

pub fn print(a: &PrintArgs) -> i32 {
    let Some(src) = read_source(&a.file) else {
        return 1;
    };
    match lang::check(&src, mode(a.turn)) {
        Ok(doc) => {
            let mut o = std::io::stdout().lock();
            if o.write_all(lang::print(&doc).as_bytes()).is_err() {
                return 1;
            }
            0
        }
        Err(errors) => {
            report(&a.file, &src, &errors, false);
            2
        }
    }
}

pub fn fmt(a: &FmtArgs) -> i32 {
    let mut code = 0;
    for path in &a.files {
        let Some(src) = read_source(path) else {
            code = code.max(1);
            continue;
        };
        // fmt formats what parses; it does not enforce semantic rules (check does).
        let doc = match lang::parse(&src) {
            Ok(d) => d,
            Err(errors) => {
                report(path, &src, &errors, false);
                code = 2;
                continue;
            }
        };
        let canon = lang::print(&doc);
        if path == Path::new("-") {
            if a.check {
                if canon != src {
                    outln!("not canonical: -");
                    code = 2;
                }
            } else {
                out!("{canon}");
            }
            continue;
        }
        if canon == src {
            continue;
        }
        if a.check {
            outln!("not canonical: {}", path.display());
            code = 2;
        } else if let Err(e) = super::out::write_atomic(path, canon.as_bytes()) {
            eprintln!("error code=IO message=cannot write {}: {e}", path.display());
            code = code.max(1);
        } else {
            outln!("formatted: {}", path.display());
        }
    }
    code
}

pub fn check(a: &CheckArgs) -> i32 {
    let mut code = 0;
    let mut json = Vec::new();
    for path in &a.files {
        let Some(src) = read_source(path) else {
            code = code.max(1);
            continue;
        };
        match lang::check(&src, mode(a.turn)) {
            Ok(doc) => {
                if a.format == Format::Json {
                    json.push(serde_json::json!({
                        "file": path.display().to_string(),
                        "ok": true,
                        "statements": doc.statements.len(),
                        "errors": [],
                    }));
                } else {
                    let n = doc.statements.len();
                    let s = if n == 1 { "" } else { "s" };
                    outln!("ok: {} ({n} statement{s})", path.display());
                }
            }
            Err(errors) => {
                code = 2;
                if a.format == Format::Json {
                    json.push(serde_json::json!({
                        "file": path.display().to_string(),
                        "ok": false,
                        "errors": errors,
                    }));
                } else {
                    report(path, &src, &errors, a.pretty);
                }
            }
        }
    }
    if a.format == Format::Json {
        match serde_json::to_string_pretty(&json) {
            Ok(s) => outln!("{s}"),
            Err(_) => return 1,
        }
    }
    code
}

pub fn rules() -> i32 {
    for r in Rule::ALL {
        outln!("{:<20} {}", r.name(), r.summary());
    }
    outln!();
    outln!("reserved words: {}", lang::RESERVED_WORDS.join(", "));
    0
}
