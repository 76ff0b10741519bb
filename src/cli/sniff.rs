//! What a file looks like, from its first line: so a verb given the wrong kind of file can
//! say so ("this is a Kestrel document, not a tape") instead of reporting the first byte the
//! real reader refused. Sniffing only names the kind; the tape reader and the parser stay the
//! judges of whether a file is good.

use crate::lang::lexicon::{DIRECTIVE_KEYWORDS, STATEMENT_KEYWORDS};
use std::io::Read;
use std::path::Path;

/// How many bytes are read to decide (the first line of a tape or a Bus is well under this).
const PREFIX: u64 = 64 * 1024;

/// The kind of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// No file at the path.
    Missing,
    /// A directory.
    Directory,
    /// Nothing in it.
    Empty,
    /// Only whitespace: blank lines, no first line to read.
    Blank,
    /// A market tape: JSON Lines whose first line is `{"type":"header",…}`.
    Tape,
    /// A saved Bus (`kestrel agent --bus`, `kestrel run --bus`, the desk's `.bus-N.jsonl`).
    Bus,
    /// A desk session file (`desk-session` header).
    DeskSession,
    /// A script of `{"reply": …}` lines (a recorded author).
    ReplyScript,
    /// A `kestrel grade --shard` output.
    GradeShard,
    /// Some other JSON.
    Json,
    /// Text whose first statement line starts with a Kestrel keyword (or only comments).
    Kestrel,
    /// Other text.
    Text,
    /// Not UTF-8 text.
    Binary,
    /// There, but it cannot be read (the reader's own error says why).
    Unreadable,
    /// A pipe, a FIFO or a device (`<(cmd)`, `/dev/stdin`): not read ahead, since what is
    /// read of it is gone (the reader would find it empty, or block on a second open).
    Stream,
}

impl Kind {
    /// "a Kestrel document", "a tape (JSON Lines)", … for messages.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Kind::Missing => "no such file",
            Kind::Directory => "a directory",
            Kind::Empty => "an empty file",
            Kind::Blank => "a file of only blank lines (no header line)",
            Kind::Tape => "a tape (JSON Lines with a header line)",
            Kind::Bus => "a saved Bus (a session's event log)",
            Kind::DeskSession => "a desk session file",
            Kind::ReplyScript => "a script of author replies",
            Kind::GradeShard => "a grade shard file",
            Kind::Json => "JSON",
            Kind::Kestrel => "a Kestrel document",
            Kind::Text => "text that is neither JSON nor Kestrel",
            Kind::Binary => "not UTF-8 text",
            Kind::Unreadable => "a file that cannot be read",
            Kind::Stream => "a pipe or a device",
        }
    }
}

/// Classify the file at `path` (reads at most [`PREFIX`] bytes).
pub(crate) fn file(path: &Path) -> Kind {
    file_and_head(path).0
}

/// [`file`], with the bytes it read (empty when it read none: a missing file, a directory,
/// a stream, one that cannot be read).
fn file_and_head(path: &Path) -> (Kind, Vec<u8>) {
    let Ok(meta) = std::fs::metadata(path) else {
        return (Kind::Missing, Vec::new());
    };
    if meta.is_dir() {
        return (Kind::Directory, Vec::new());
    }
    if !meta.is_file() {
        return (Kind::Stream, Vec::new());
    }
    let mut buf = Vec::new();
    match std::fs::File::open(path).and_then(|f| f.take(PREFIX).read_to_end(&mut buf)) {
        Ok(_) => (bytes(&buf), buf),
        Err(_) => (Kind::Unreadable, Vec::new()),
    }
}

/// Classify the start of a file.
pub(crate) fn bytes(b: &[u8]) -> Kind {
    let text = match std::str::from_utf8(b) {
        Ok(t) => t,
        // A prefix may end inside a character; anything else is not text.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&b[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return Kind::Binary,
    };
    let text = text.trim_start_matches('\u{feff}');
    if text.is_empty() {
        return Kind::Empty;
    }
    if text.trim().is_empty() {
        return Kind::Blank;
    }
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if first.starts_with('{') || first.starts_with('[') {
        return json_kind(first);
    }
    kestrel_or_text(text)
}

fn json_kind(first: &str) -> Kind {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(first) else {
        return Kind::Json;
    };
    let field = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("");
    match (field("type"), field("kind")) {
        ("header", _) => Kind::Tape,
        ("session-start", _) => Kind::Bus,
        ("desk-session", _) | (_, "desk-session") => Kind::DeskSession,
        (_, "kestrel-grade-shard") => Kind::GradeShard,
        _ if v.get("reply").is_some() => Kind::ReplyScript,
        _ => Kind::Json,
    }
}

/// Kestrel when every line before the first statement is blank or a comment and that line
/// starts with a statement or directive keyword (or the text is only comments).
fn kestrel_or_text(text: &str) -> Kind {
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let word = t.split_whitespace().next().unwrap_or("");
        let known = STATEMENT_KEYWORDS
            .iter()
            .chain(DIRECTIVE_KEYWORDS)
            .any(|k| *k == word);
        return if known { Kind::Kestrel } else { Kind::Text };
    }
    Kind::Kestrel
}

/// The coded error for a file given where `wanted` is expected but that is `kind`, with what
/// to do (`hint`, may be empty). A missing file is an I/O error naming the path.
pub(crate) fn wrong_kind(path: &Path, kind: Kind, wanted: &str, hint: &str) -> String {
    let p = path.display();
    if kind == Kind::Missing {
        return format!("error code=IO message=cannot read {p}: no such file");
    }
    format!(
        "error code=USAGE message={p} is {}, not {wanted}{}",
        kind.describe(),
        if hint.is_empty() {
            String::new()
        } else {
            format!(": {hint}")
        }
    )
}

/// What to do with a file of `kind`, for a message.
pub(crate) fn use_of(kind: Kind, path: &Path) -> String {
    let p = path.display();
    match kind {
        // A tape is read from its file (`--tape -` is no stdin): from a pipe, the file's name
        // is not known.
        Kind::Tape if path == Path::new("-") => {
            "replay it from its file with kestrel run --tape FILE --plans FILE (or the desk's --tape FILE)".into()
        }
        Kind::Tape => {
            format!("replay it with kestrel run --tape {p} --plans FILE (or the desk's --tape)")
        }
        Kind::Kestrel => format!("give it as --plans {p}, or check it with kestrel check {p}"),
        Kind::Bus => match bus_without_author(path) {
            // A `kestrel run --bus`: no author's turn to replay (`agent --author` refuses it).
            Some(tape) => format!(
                "it records a run with no author's turn (as kestrel run --bus writes one): run its plans again with kestrel run --tape {tape} --plans FILE"
            ),
            None => format!("replay it with kestrel agent --author {p}, or grade with --agent {p}"),
        },
        Kind::DeskSession => format!("open it with kestrel desk --open {p}"),
        Kind::ReplyScript => format!("give it as kestrel agent --author {p}"),
        Kind::GradeShard => "merge shard files with kestrel grade merge".into(),
        _ => String::new(),
    }
}

/// The tape a saved Bus names (its `session-start`'s `tape`, as a path to give: the bundled
/// `tapes/NAME.jsonl` when it is there, else `NAME.jsonl`), when the start of the Bus holds
/// no sign of an author (no View delivered, no turn: a `kestrel run --bus`); `None` for a
/// Bus with an author's events, or one this cannot read.
pub(crate) fn bus_without_author(path: &Path) -> Option<String> {
    let (_, head) = file_and_head(path);
    let text = String::from_utf8_lossy(&head);
    if text.contains("\"type\":\"view-delivered\"") || text.contains("\"type\":\"turn") {
        return None;
    }
    let first: serde_json::Value = serde_json::from_str(text.lines().next()?).ok()?;
    let name = first.get("tape")?.as_str()?;
    let bundled = format!("tapes/{name}.jsonl");
    Some(if Path::new(&bundled).is_file() {
        bundled
    } else {
        format!("{name}.jsonl")
    })
}

/// The error for a file given where a saved Bus is read (`kestrel errors report`, `grade
/// --agent`; `give`: how it is given, e.g. ` as --agent`) that is another kind of file: a
/// tape, a script of replies, a document, a grade shard, an empty file… (`code=USAGE`, the
/// wrong kind of file, exit 1), with what to do. `None` for a Bus, for JSON of no kind it
/// knows (a Bus cut or edited in its first line: the Bus reader judges it, exit 2), for
/// bytes that are not UTF-8 (the reader names the byte), for a missing or unreadable file (the reader's I/O error) and a stream (never read ahead).
/// A desk session file names the Bus beside it (the other way round of `desk --open` given
/// a Bus: `session::saved::open`). Before 2026-12-06 these verbs answered a desk session
/// file with the Bus reader's list of event types, and every other kind with serde's words
/// (`unknown variant `header`, expected one of …`, `missing field `type``), exit 2.
pub(crate) fn not_a_bus(path: &Path, give: &str) -> Option<String> {
    if is_stream(path) {
        return None;
    }
    match file(path) {
        Kind::DeskSession => Some(desk_session_not_a_bus(path, give)),
        // Not UTF-8 within its first bytes: the reader names the byte (a Bus is text).
        Kind::Bus | Kind::Json | Kind::Binary | Kind::Missing | Kind::Unreadable | Kind::Stream => {
            None
        }
        k => Some(wrong_kind(path, k, "a Bus", &bus_hint(k, path, give))),
    }
}

/// What a Bus is and how to make one, for a file of `kind` given where one is read.
fn bus_hint(kind: Kind, path: &Path, give: &str) -> String {
    let p = path.display();
    let then = format!("then give S.bus.jsonl{give}");
    match kind {
        Kind::Tape => format!(
            "a Bus is what a session on a tape writes: kestrel agent --tape {p} --author AUTHOR --bus S.bus.jsonl, {then}"
        ),
        Kind::ReplyScript => format!(
            "replay it into a Bus with kestrel agent --tape TAPE --author {p} --bus S.bus.jsonl, {then}"
        ),
        Kind::Kestrel => format!(
            "run it into a Bus with kestrel run --tape TAPE --plans {p} --bus S.bus.jsonl, {then}"
        ),
        Kind::GradeShard => "merge shard files with kestrel grade merge SHARD...".into(),
        _ => format!(
            "a Bus is the event log kestrel agent --bus FILE, kestrel run --bus FILE or the desk writes (one JSON event a line, the first a session-start): give one of those{give}"
        ),
    }
}

/// The error for a file given where an author's recording is read (`kestrel agent
/// --author FILE`, the desk's `--author`): a saved Bus or a script of `{"reply": ...}`
/// lines. Another kind of file is `code=USAGE` (exit 1) with what to do; `None` as
/// [`not_a_bus`] leaves it to the readers (and for a script). Before 2026-12-06 an empty
/// file was `line 1 is not JSON (EOF while parsing a value at line 1 column 0)`.
pub(crate) fn not_an_author_file(path: &Path) -> Option<String> {
    if is_stream(path) {
        return None;
    }
    let what = "an author file (a saved Bus or a script of {\"reply\": ...} lines)";
    match file(path) {
        Kind::DeskSession => Some(desk_session_not_a_bus(path, " as --author")),
        Kind::Bus
        | Kind::ReplyScript
        | Kind::Json
        | Kind::Binary
        | Kind::Missing
        | Kind::Unreadable
        | Kind::Stream => None,
        k @ (Kind::Tape | Kind::Kestrel | Kind::GradeShard) => {
            Some(wrong_kind(path, k, what, &use_of(k, path)))
        }
        k => Some(wrong_kind(
            path,
            k,
            what,
            "a script is one {\"reply\": \"...\"} line a turn (docs/authors.md); a saved Bus is what kestrel agent --bus writes",
        )),
    }
}

/// The error for a file given to `kestrel grade merge` that is not a grade shard (a Bus, a
/// tape, a document, an empty file…): `code=USAGE`, exit 1, with what to do. `None` for a
/// shard, JSON of no kind it knows (a shard cut in its header: the merge judges it), and a
/// file the reader reports. Before 2026-12-06 a Bus was `line 1 is not a shard header:
/// missing field `kind``.
pub(crate) fn not_a_shard(path: &Path) -> Option<String> {
    if is_stream(path) {
        return None;
    }
    match file(path) {
        Kind::GradeShard
        | Kind::Json
        | Kind::Missing
        | Kind::Unreadable
        | Kind::Stream
        | Kind::Binary => None,
        k => {
            // (A tape's `give it as --tape` is no use to a grade, which takes `--tapes`.)
            let use_it = if k == Kind::Tape {
                String::new()
            } else {
                use_of(k, path)
            };
            let hint = format!(
                "a shard is what kestrel grade ... --shard I/N --out FILE writes{}",
                if use_it.is_empty() || k == Kind::GradeShard {
                    String::new()
                } else {
                    format!("; {use_it}")
                }
            );
            Some(wrong_kind(path, k, "a grade shard file", &hint))
        }
    }
}

/// [`not_a_bus`] for a desk session file: what it is and the Bus beside it, to give instead
/// (`give`: how, e.g. `--agent`).
fn desk_session_not_a_bus(path: &Path, give: &str) -> String {
    let buses = crate::session::saved::buses_of_session(path);
    let shown: Vec<String> = buses.iter().map(|b| b.display().to_string()).collect();
    let bus = match shown.as_slice() {
        [] => format!(
            "its Bus would be {} beside it, and it is not there",
            crate::session::saved::bus_path(path, 0).display()
        ),
        [one] => format!("its Bus is {one} beside it: give that{give}"),
        [.., last] => format!(
            "its runs' Buses are {} beside it (one a run; {last} is the run it ended on): give one of them{give}",
            shown.join(", ")
        ),
    };
    wrong_kind(
        path,
        Kind::DeskSession,
        "a Bus",
        &format!(
            "{bus} (kestrel desk --open {} replays the session)",
            path.display()
        ),
    )
}

/// The error for a file given as `--tape` that does not open as a tape, when its kind
/// explains why (not a tape at all, or missing); `None` leaves the tape reader's own error.
pub(crate) fn not_a_tape(path: &Path) -> Option<String> {
    let (kind, head) = file_and_head(path);
    if let Some(what) = market_data(path, kind, &head) {
        // A trader's own data: the verb that makes a tape of it, not only "not a tape".
        let p = path.display();
        let unit = match (what == CSV, super::import::format_of(path).is_some()) {
            (true, true) => " --ts-unit s|ms|us|ns|iso",
            (true, false) => " --format csv --ts-unit s|ms|us|ns|iso",
            (false, true) => "",
            (false, false) => " --format dbn",
        };
        return Some(format!(
            "error code=USAGE message={p} is {what}, not a tape: make a tape of it with kestrel tape import {p}{unit} -o TAPE.jsonl (docs/tapes.md §5), then give --tape TAPE.jsonl"
        ));
    }
    match kind {
        Kind::Tape | Kind::Json | Kind::Binary | Kind::Unreadable | Kind::Stream => None,
        k => Some(wrong_kind(path, k, "a tape", &use_of(k, path))),
    }
}

/// [`not_a_tape`] for a file among `kestrel grade`'s `--tapes`: a Kestrel document there is
/// the document to grade (the first argument), not `--plans`, which `grade` has not.
pub(crate) fn not_a_grade_tape(path: &Path) -> Option<String> {
    if file(path) == Kind::Kestrel {
        let p = path.display();
        return Some(wrong_kind(
            path,
            Kind::Kestrel,
            "a tape",
            &format!(
                "the document to grade comes first, the tapes after --tapes: kestrel grade {p} --tapes DIR"
            ),
        ));
    }
    not_a_tape(path)
}

/// The error for a tape (the caller sniffed it) given to `kestrel grade` as the document to
/// grade.
pub(crate) fn tape_to_grade(path: &Path) -> String {
    wrong_kind(
        path,
        Kind::Tape,
        "a Kestrel document",
        &format!(
            "grade takes the document first and its tapes with --tapes: kestrel grade FILE.kestrel --tapes {}",
            path.display()
        ),
    )
}

/// The error for a file given to the desk's `--open` that is a tape (it opens with `--tape`);
/// `None` for the others, which the session reader refuses with its own `code=SESSION`.
pub(crate) fn not_a_desk_session(path: &Path) -> Option<String> {
    (!is_stream(path) && file(path) == Kind::Tape).then(|| {
        wrong_kind(
            path,
            Kind::Tape,
            "a desk session",
            &format!(
                "open the desk on it with kestrel desk --tape {}",
                path.display()
            ),
        )
    })
}

/// The error for a file given to the desk's `--agent` (a script of replies) that is another
/// kind of file: a saved Bus goes to `--author`, a tape to `--tape`.
pub(crate) fn not_a_reply_script(path: &Path) -> Option<String> {
    if is_stream(path) {
        return None;
    }
    let what = "a script of {\"reply\": ...} lines";
    let p = path.display();
    match file(path) {
        // An agent's Bus replays with `--author`; a run's has no turn to replay.
        Kind::Bus => Some(wrong_kind(
            path,
            Kind::Bus,
            what,
            &match bus_without_author(path) {
                Some(_) => use_of(Kind::Bus, path),
                None => format!("a saved Bus replays its agent's turns with --author {p}"),
            },
        )),
        Kind::Tape => Some(wrong_kind(
            path,
            Kind::Tape,
            what,
            &format!("open the desk on it with --tape {p}"),
        )),
        _ => not_an_author_file(path),
    }
}

/// How [`market_data`] calls a CSV file.
const CSV: &str = "CSV market data";

/// What market data a file that is not a tape is (`None`: not market data, or a tape): a
/// Databento DBN file (by its name, `.dbn`/`.dbn.zst`, or its `DBN` prefix), or CSV (by its
/// name, or text whose first line has three or more comma-separated fields), which
/// `kestrel tape import` makes a tape of. `head`: the file's first bytes, as [`file`] read
/// them.
fn market_data(path: &Path, kind: Kind, head: &[u8]) -> Option<&'static str> {
    use super::import::{Format, format_of};
    if matches!(
        kind,
        Kind::Tape
            | Kind::Missing
            | Kind::Directory
            | Kind::Stream
            | Kind::Unreadable
            | Kind::Empty
            | Kind::Blank
    ) {
        return None;
    }
    match format_of(path) {
        Some(Format::Dbn) => return Some("a Databento DBN file (market data)"),
        Some(Format::Csv) => return Some(CSV),
        None => {}
    }
    if head.starts_with(b"DBN") {
        return Some("a Databento DBN file (market data)");
    }
    let text = String::from_utf8_lossy(head);
    let first = text
        .trim_start_matches('\u{feff}')
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    (kind == Kind::Text && first.split(',').count() >= 3).then_some(CSV)
}

/// The error for a file given as a Kestrel document that is a tape, a Bus or another
/// JSON Lines file the project writes; `None` when it may be a document (the parser judges).
pub(crate) fn not_a_document(path: &Path) -> Option<String> {
    if path == Path::new("-") {
        return None;
    }
    not_a_document_of(path, file(path))
}

/// Is `path` stdin (`-`) or a pipe, a FIFO or a device (read once, never read ahead)?
pub(crate) fn is_stream(path: &Path) -> bool {
    path == Path::new("-") || std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// [`not_a_document`] for text already read from a pipe, a FIFO or stdin (which cannot be
/// read ahead): its kind from its start.
pub(crate) fn not_a_document_text(path: &Path, text: &str) -> Option<String> {
    let head = crate::limits::prefix(text, PREFIX as usize);
    not_a_document_of(path, bytes(head.as_bytes()))
}

fn not_a_document_of(path: &Path, kind: Kind) -> Option<String> {
    match kind {
        Kind::Tape | Kind::Bus | Kind::DeskSession | Kind::ReplyScript | Kind::GradeShard => Some(
            wrong_kind(path, kind, "a Kestrel document", &use_of(kind, path)),
        ),
        // As `run --tape DIR` says it (it was `code=IO ... Is a directory (os error 21)`).
        Kind::Directory => Some(wrong_kind(path, kind, "a Kestrel document", "")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_first_lines() {
        assert_eq!(bytes(b"{\"type\":\"header\",\"v\":1}\n{}"), Kind::Tape);
        assert_eq!(bytes(b"{\"type\":\"session-start\"}\n"), Kind::Bus);
        assert_eq!(bytes(b"{\"reply\": \"STAND-DOWN x\"}\n"), Kind::ReplyScript);
        assert_eq!(
            bytes(b"{\"kind\":\"kestrel-grade-shard\"}\n"),
            Kind::GradeShard
        );
        assert_eq!(bytes(b"{\"a\":1}"), Kind::Json);
        assert_eq!(bytes(b"{not json"), Kind::Json);
        assert_eq!(
            bytes(b"# a comment\n\nPLAN x budget 1R ttl +1m\n"),
            Kind::Kestrel
        );
        assert_eq!(bytes(b"STAND-DOWN no edge\n"), Kind::Kestrel);
        assert_eq!(bytes(b"# only a comment\n"), Kind::Kestrel);
        assert_eq!(bytes(b"hello world\n"), Kind::Text);
        assert_eq!(bytes(b"  \n\t"), Kind::Blank);
        assert_eq!(bytes(b""), Kind::Empty);
        assert_eq!(bytes(b"\xff\xfe\x00"), Kind::Binary);
        // A prefix cut inside a character is still text.
        assert_eq!(
            bytes("PLAN é".as_bytes().split_last().unwrap().1),
            Kind::Kestrel
        );
    }
}
