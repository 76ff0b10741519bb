//! Language verbs: parse, print, fmt, check, rules.

use crate::lang::{self, Diagnostic, Document, Mode, Rule};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct ParseArgs {
    /// The document (`-` reads stdin).
    pub file: PathBuf,
    /// Check as an author's turn (turn directives allowed) instead of a file.
    #[arg(long)]
    pub turn: bool,
    #[command(flatten)]
    pub out: super::flags::Json,
}

#[derive(Debug, clap::Args)]
pub struct PrintArgs {
    /// Documents (`-` reads stdin), printed in order; with several, each is preceded by a
    /// `# == FILE` comment line.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
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
    /// With --check: print a unified diff (file as it is, file canonical) after each file.
    #[arg(long, requires = "check")]
    pub diff: bool,
}

/// `check --format`: an alias of `--json` kept for scripts written before it.
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
    #[command(flatten)]
    pub out: super::flags::Json,
    /// The same as --json (`--format json`); `text` is the default.
    #[arg(long, value_enum, default_value = "text", hide_possible_values = true)]
    pub format: Format,
    /// Check as an author's turn (turn directives allowed) instead of a file.
    #[arg(long)]
    pub turn: bool,
    /// Always show the source snippet under each error, even when not at a terminal.
    #[arg(long)]
    pub pretty: bool,
}

#[derive(Debug, clap::Args)]
pub struct RulesArgs {
    #[command(flatten)]
    pub out: super::flags::Json,
}

/// Why a document could not be read as text.
pub(crate) enum Unread {
    /// An I/O failure or a file of another kind, already printed: exit 1.
    Failed,
    /// Read, but not UTF-8 text (rule `syntax` at the first bad byte), or past the size
    /// limit (rule `limit`, read no further than the limit): a refused document, exit 2.
    /// Not printed, so `check --json` can list it with its file.
    NotText(Diagnostic),
}

impl Unread {
    /// Print the refusal (an I/O failure is printed already); the exit code.
    pub(crate) fn report(self, path: &Path) -> i32 {
        match self {
            Unread::Failed => 1,
            Unread::NotText(d) => {
                errln!("{}: {}", path.display(), d.one_line());
                super::flags::EXIT_REFUSED
            }
        }
    }
}

/// Read a Kestrel document; `-` is stdin. A tape, a Bus or another file the project writes
/// is refused with what it is and where it goes. I/O errors are printed (`Err(1)`); text
/// that is not UTF-8 is a refused document, printed, `Err(2)`.
pub(crate) fn read_document(path: &Path) -> Result<String, i32> {
    read_document_text(path).map_err(|u| u.report(path))
}

/// [`read_document`], a refusal of its text not printed.
pub(crate) fn read_document_text(path: &Path) -> Result<String, Unread> {
    if let Some(e) = super::sniff::not_a_document(path) {
        errln!("{e}");
        return Err(Unread::Failed);
    }
    let text = read_text(path)?;
    // A pipe, a FIFO or stdin is not read ahead (it is read once): what it is is told from
    // the text read.
    if super::sniff::is_stream(path)
        && let Some(e) = super::sniff::not_a_document_text(path, &text)
    {
        errln!("{e}");
        return Err(Unread::Failed);
    }
    Ok(text)
}

/// Read a file as text; `-` is stdin. I/O errors are printed (`Err(1)`); text that is not
/// UTF-8 is refused as a document is, printed, `Err(2)`.
pub(crate) fn read_source(path: &Path) -> Result<String, i32> {
    read_text(path).map_err(|u| u.report(path))
}

fn read_text(path: &Path) -> Result<String, Unread> {
    if path != Path::new("-") && path.is_dir() {
        // As `check` and `run` name a directory (`turn DIR` was `code=IO`).
        let kind = super::sniff::Kind::Directory;
        errln!("{}", super::sniff::wrong_kind(path, kind, "a file", ""));
        return Err(Unread::Failed);
    }
    // At most the document limit is read, from a file, a FIFO, a device or stdin alike:
    // `check /dev/zero` and `check <(yes)` read until the machine ran out of memory.
    use crate::limits::{MAX_DOCUMENT_BYTES, ReadError};
    let r = if path == Path::new("-") {
        crate::limits::read_bounded(std::io::stdin().lock(), MAX_DOCUMENT_BYTES)
    } else {
        crate::limits::read_file_bounded(path, MAX_DOCUMENT_BYTES)
    };
    match r {
        Ok(b) => lang::decode(b).map_err(Unread::NotText),
        Err(ReadError::TooLarge(t)) => Err(Unread::NotText(lang::too_large(t))),
        Err(ReadError::Io(e)) => {
            errln!("{}", super::cannot_read(path, &e));
            Err(Unread::Failed)
        }
    }
}

/// Read and check documents under the file rules (`--plans`, grade's documents), in order.
/// An unreadable file prints its I/O error and stops at once (`Err(1)`); every refused
/// document prints its errors, and after all are checked any refusal is `Err(2)`.
pub(crate) fn check_files(paths: &[PathBuf]) -> Result<Vec<Document>, i32> {
    Ok(check_files_with_source(paths)?
        .into_iter()
        .map(|(d, _)| d)
        .collect())
}

/// [`check_files`], each document with its text (for a message naming a line).
pub(crate) fn check_files_with_source(paths: &[PathBuf]) -> Result<Vec<(Document, String)>, i32> {
    let mut docs = Vec::new();
    let mut refused = false;
    for path in paths {
        let src = match read_document_text(path) {
            Ok(s) => s,
            Err(Unread::Failed) => return Err(1),
            Err(Unread::NotText(d)) => {
                refused = true;
                errln!("{}: {}", path.display(), d.one_line());
                continue;
            }
        };
        match lang::check(&src, Mode::File) {
            Ok(d) => docs.push((d, src)),
            Err(errs) => {
                refused = true;
                for e in errs {
                    errln!("{}: {}", path.display(), e.one_line());
                }
            }
        }
    }
    if refused {
        Err(super::flags::EXIT_REFUSED)
    } else {
        Ok(docs)
    }
}

fn mode(turn: bool) -> Mode {
    if turn { Mode::Turn } else { Mode::File }
}

/// Why a document was refused: the language's rules, or (as an author's turn) the router's
/// shape of a turn.
enum Refused {
    Rules(Vec<Diagnostic>),
    /// One directive, or a module of statements, never a mix (`code=TURN rule=turn-mix`):
    /// the router's own check ([`crate::turn::mix`]), so `check --turn` says "ok" only of a
    /// turn `kestrel turn` would route.
    Turn(crate::turn::TurnError),
}

/// [`lang::check`] in the verb's mode; an author's turn is also held to the router's shape.
fn check_doc(src: &str, turn: bool) -> Result<Document, Refused> {
    let doc = lang::check(src, mode(turn)).map_err(Refused::Rules)?;
    if turn && let Some(e) = crate::turn::mix_error(&doc, src) {
        return Err(Refused::Turn(e));
    }
    Ok(doc)
}

impl Refused {
    /// Print the refusal to stderr, each line prefixed by the file name.
    fn report(&self, path: &Path, src: &str, pretty: bool) {
        match self {
            Refused::Rules(errors) => report(path, src, errors, pretty),
            Refused::Turn(e) => errln!("{}: {}", path.display(), e.one_line()),
        }
    }

    /// The errors as `check --json` lists them.
    fn json(&self) -> serde_json::Value {
        match self {
            Refused::Rules(errors) => serde_json::json!(errors),
            Refused::Turn(e) => serde_json::json!([e]),
        }
    }
}

fn report(path: &Path, src: &str, errors: &[Diagnostic], pretty: bool) {
    let stderr = std::io::stderr();
    let color = stderr.is_terminal();
    let show = pretty || color;
    let name = path.display().to_string();
    let mut out = stderr.lock();
    // One line index for every refusal's snippet (not one per refusal).
    let index = show.then(|| lang::LineIndex::new(src));
    for e in errors {
        let _ = writeln!(out, "{}: {}", name, e.one_line());
        if let Some(index) = &index {
            let _ = writeln!(out, "{}", e.render_in(index, &name, color));
        }
    }
}

pub fn parse(a: &ParseArgs) -> i32 {
    let src = match read_document(&a.file) {
        Ok(s) => s,
        Err(code) => return code,
    };
    match check_doc(&src, a.turn) {
        // With `--json`, one canonical line (keys sorted), as every verb's `--json`; without
        // it, indented for reading.
        Ok(doc) if a.out.json => match serde_json::to_value(&doc) {
            Ok(v) => {
                outln!("{}", crate::bus::canonical_json(&v));
                0
            }
            Err(e) => {
                errln!("error code=IO message={e}");
                1
            }
        },
        Ok(doc) => match serde_json::to_string_pretty(&doc) {
            Ok(j) => {
                outln!("{j}");
                0
            }
            Err(e) => {
                errln!("error code=IO message={e}");
                1
            }
        },
        Err(refused) => {
            refused.report(&a.file, &src, false);
            2
        }
    }
}

pub fn print(a: &PrintArgs) -> i32 {
    let mut code = 0;
    let several = a.files.len() > 1;
    for path in &a.files {
        let src = match read_document(path) {
            Ok(s) => s,
            Err(c) => {
                code = code.max(c);
                continue;
            }
        };
        // Checked and printed a statement at a time: the document's model is never whole. A
        // turn is checked whole, as the router takes it (one directive or statements).
        let printed = if a.turn {
            check_doc(&src, true).map(|doc| lang::print(&doc))
        } else {
            lang::check_print(&src, Mode::File).map_err(Refused::Rules)
        };
        match printed {
            Ok(text) => {
                drop(src);
                let head = if several {
                    format!("# == {}\n", path.display())
                } else {
                    String::new()
                };
                code = code.max(super::out::stdout_with(|o| {
                    o.write_all(head.as_bytes())?;
                    o.write_all(text.as_bytes())
                }));
            }
            Err(refused) => {
                refused.report(path, &src, false);
                code = 2;
            }
        }
    }
    code
}

/// A unified diff from `src` (the file) to `canon` (its canonical form), three lines of
/// context, headed `--- NAME` / `+++ NAME (canonical)`.
pub(crate) fn unified_diff(name: &str, src: &str, canon: &str) -> String {
    similar::TextDiff::from_lines(src, canon)
        .unified_diff()
        .context_radius(3)
        .header(name, &format!("{name} (canonical)"))
        .to_string()
}

pub fn fmt(a: &FmtArgs) -> i32 {
    let mut code = 0;
    for path in &a.files {
        let src = match read_document(path) {
            Ok(s) => s,
            Err(c) => {
                code = code.max(c);
                continue;
            }
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
                    if a.diff {
                        out!("{}", unified_diff("-", &src, &canon));
                    }
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
            if a.diff {
                out!(
                    "{}",
                    unified_diff(&path.display().to_string(), &src, &canon)
                );
            }
            code = 2;
        } else if let Err(e) = super::out::write_atomic(path, canon.as_bytes()) {
            errln!("error code=IO message=cannot write {}: {e}", path.display());
            code = code.max(1);
        } else {
            outln!("formatted: {}", path.display());
        }
    }
    code
}

pub fn check(a: &CheckArgs) -> i32 {
    let as_json = a.out.json || a.format == Format::Json;
    let mut code = 0;
    let mut json = Vec::new();
    for path in &a.files {
        let src = match read_document_text(path) {
            Ok(s) => s,
            Err(Unread::NotText(d)) if as_json => {
                code = code.max(super::flags::EXIT_REFUSED);
                json.push(serde_json::json!({
                    "file": path.display().to_string(),
                    "ok": false,
                    "errors": [d],
                }));
                continue;
            }
            Err(u) => {
                code = code.max(u.report(path));
                continue;
            }
        };
        match check_doc(&src, a.turn) {
            Ok(doc) => {
                // Nothing in it (empty, only comments): valid, but `run` of it arms nothing,
                // and says so; `check` says it as `run` does. An empty turn is a pass.
                if !a.turn && doc.statements.is_empty() {
                    errln!(
                        "{}",
                        super::run::no_plans_warning(&path.display().to_string(), "holds")
                    );
                }
                if as_json {
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
            Err(refused) => {
                code = 2;
                if as_json {
                    json.push(serde_json::json!({
                        "file": path.display().to_string(),
                        "ok": false,
                        "errors": refused.json(),
                    }));
                } else {
                    refused.report(path, &src, a.pretty);
                }
            }
        }
    }
    if as_json {
        // One canonical line (keys sorted), as every verb's `--json`.
        outln!(
            "{}",
            crate::bus::canonical_json(&serde_json::Value::Array(json))
        );
    }
    code
}

pub fn rules(a: &RulesArgs) -> i32 {
    if a.out.json {
        let rules: Vec<serde_json::Value> = Rule::ALL
            .iter()
            .map(|r| serde_json::json!({"name": r.name(), "summary": r.summary()}))
            .collect();
        let turn_rules: Vec<serde_json::Value> = crate::turn::TURN_RULES
            .iter()
            .map(|(code, name, summary)| {
                serde_json::json!({"code": code, "name": name, "summary": summary})
            })
            .collect();
        let v = serde_json::json!({
            "rules": rules,
            "turn_rules": turn_rules,
            "reserved_words": lang::RESERVED_WORDS,
        });
        outln!("{}", crate::bus::canonical_json(&v));
        return 0;
    }
    for r in Rule::ALL {
        outln!("{:<20} {}", r.name(), r.summary());
    }
    outln!();
    // The router's own (`check --turn`, `turn`, the Journal, `errors report` print them).
    outln!("turn rules (code=TURN, ENVELOPE, TRUNCATED, REPLAY):");
    for (code, name, summary) in crate::turn::TURN_RULES {
        outln!("{:<20} {summary} (code={code})", name);
    }
    outln!();
    outln!("reserved words: {}", lang::RESERVED_WORDS.join(", "));
    0
}
