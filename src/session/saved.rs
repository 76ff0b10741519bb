//! Session files: where the desk writes as it runs, and reading a saved session back.
//!
//! A session is a JSON Lines file in the data directory (`<data>/sessions/`): a
//! `desk-session` header that records every setting the determinism hash depends on (the
//! tape and its BLAKE3, 1R in dollars, the fill model, the profile, the agent, co-pilot at
//! the start), then `act` records (a person's turn, or an act of the seated agent, at the
//! tape point it took effect: `seq` = tape events applied) and `control` records (play,
//! speed, seek, restart, undo). The Bus goes beside it, one file per run (`<stem>.bus-<n>.jsonl`).
//! Every line is flushed as it is written, so a crash loses at most the line being written.
//!
//! Acts are written once, when they are taken: a rewind replays them without writing them
//! again, and keeps the ones recorded after its target (they replay as the tape reaches
//! them) until the person acts on the new branch (`branch` drops them). `undo` names the person's
//! turn taken back (by its `act_seq` and `act_ts`), which leaves the acts (with every act
//! after it when the record says `rewind`). `left` records
//! where the person left.
//!
//! `kestrel desk --open FILE` reads the settings back, replays the acts at their recorded
//! tape points (the same Bus and the same determinism hash) and resumes where the person
//! left. Nothing is written for an opened session until the person acts; its new file then
//! starts with a copy of the acts it replayed.

use super::agent::AgentAct;
use super::owner::{Act, Settings, Speed, decision_span, undo_span};
use crate::market::Ts;
use std::path::{Path, PathBuf};

/// The session file format this desk writes (and the only one it reads).
pub const SESSION_FORMAT: u64 = 2;

/// The platform directories (`directories::ProjectDirs::from("", "", "kestrel")`).
pub fn project_dirs() -> Option<directories::ProjectDirs> {
    directories::ProjectDirs::from("", "", "kestrel")
}

/// `<config>`: themes/, keys.toml.
pub fn config_dir() -> Option<PathBuf> {
    project_dirs().map(|d| d.config_dir().to_path_buf())
}

/// `<data>/sessions`.
pub fn sessions_dir() -> Option<PathBuf> {
    project_dirs().map(|d| d.data_dir().join("sessions"))
}

/// A fresh session path for a tape, named by tape and wall-clock seconds (a counter is
/// added when that name is taken).
pub fn new_session_path(dir: &Path, tape_name: &str) -> PathBuf {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let safe: String = tape_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut p = dir.join(format!("{safe}-{secs}.jsonl"));
    let mut n = 1;
    while taken(&p) {
        n += 1;
        p = dir.join(format!("{safe}-{secs}-{n}.jsonl"));
    }
    p
}

/// Is this session name taken: the file, or a Bus file of a session by that name (left
/// behind when its session file was removed)?
fn taken(session: &Path) -> bool {
    session.exists() || bus_path(session, 0).exists()
}

/// How the session's files are created for writing: [`create_exclusive`]. (A test gives
/// one that opens `/dev/full`, to see what the desk does on a full disk.)
pub type CreateFile = fn(&Path) -> std::io::Result<std::fs::File>;

/// Create `path` for writing only if no file has that name (`O_CREAT | O_EXCL`): a session's
/// file or Bus file is never written over, nor written by two desks at once.
pub fn create_exclusive(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
}

/// The `n`th name tried for a session meant for `path` (`n` ≥ 2): `<stem>-<n>.jsonl`.
fn nth_name(path: &Path, n: u32) -> PathBuf {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("session");
    path.with_file_name(format!("{stem}-{n}.jsonl"))
}

/// Create a new session file at `path`, or, when that name is taken, at the first free
/// `<stem>-2.jsonl`, `<stem>-3.jsonl`, …, each created exclusively ([`create_exclusive`]).
/// Names carry the wall-clock second, so two desks started in the same second on one tape
/// chose the same name; before 2026-12-06 both wrote it (and its Bus file), each at its own
/// offset, and both sessions were lost. Gives the path created and the file.
pub fn claim(path: &Path, create: CreateFile) -> std::io::Result<(PathBuf, std::fs::File)> {
    const TRIES: u32 = 10_000;
    let mut p = path.to_path_buf();
    for n in 2..=TRIES + 1 {
        if !bus_path(&p, 0).exists() {
            match create(&p) {
                Ok(f) => return Ok((p, f)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        p = nth_name(path, n);
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!("{TRIES} names tried, each taken"),
    ))
}

/// The Bus file of run `n` of a session.
pub fn bus_path(session: &Path, n: u32) -> PathBuf {
    let stem = session
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("session");
    session.with_file_name(format!("{stem}.bus-{n}.jsonl"))
}

/// The session file a Bus file of the desk belongs to (`<stem>.bus-<n>.jsonl` →
/// `<stem>.jsonl`), when the name says so.
pub fn session_of_bus(bus: &Path) -> Option<PathBuf> {
    let name = bus.file_name()?.to_str()?;
    let stem = name.strip_suffix(".jsonl")?;
    let (stem, n) = stem.rsplit_once(".bus-")?;
    n.parse::<u32>().ok()?;
    Some(bus.with_file_name(format!("{stem}.jsonl")))
}

/// The Bus files beside a desk session file, in run order (`<stem>.bus-0.jsonl`,
/// `<stem>.bus-1.jsonl`, …: a restart begins another run), as far as they are there.
pub fn buses_of_session(session: &Path) -> Vec<PathBuf> {
    (0..)
        .map(|n| bus_path(session, n))
        .take_while(|p| p.is_file())
        .collect()
}

/// A saved session, read back.
#[derive(Debug, Clone)]
pub struct Saved {
    /// The settings it ran with.
    pub settings: Settings,
    /// The tape label (`bundled:<name>` or a path).
    pub tape: String,
    /// BLAKE3 of the tape's bytes, hex.
    pub tape_blake3: String,
    /// Acts of the last run: (seq, ts, act).
    pub acts: Vec<(u64, Ts, Act)>,
    /// The tape point `--open` resumes at (seq, ts): where the person left (the `left`
    /// record), else the last point recorded.
    pub last: (u64, Ts),
    /// The replay speed last set (`speed 600x` records); `--open` resumes at it.
    pub speed: Option<Speed>,
    /// The line of each of `acts` (same index), to name it and hold its replay to the
    /// result recorded.
    pub act_lines: Vec<ActLine>,
    /// The number of a last line cut short (no line end, not JSON: a crash mid-write), left
    /// out; the rest of the file opens.
    pub torn: Option<usize>,
    /// The person's Editor draft when they last left (the last `left` record's `draft`).
    pub draft: Option<String>,
}

/// Where an act is in the file, and what the desk said it did.
#[derive(Debug, Clone, PartialEq)]
pub struct ActLine {
    /// Its line number.
    pub line: usize,
    /// What the desk said it did (`armed late-put`, `refused: ...`); `replayed` on the
    /// copy a reopened session's new file starts with.
    pub result: Option<String>,
}

impl Saved {
    /// The act `i` replayed with `got` when its line records another result: the line and
    /// the result recorded. The copies a reopened session's new file starts with record
    /// `replayed`, nothing to hold them to.
    pub fn differs(&self, i: usize, got: &str) -> Option<(usize, &str)> {
        let a = self.act_lines.get(i)?;
        let want = a.result.as_deref()?;
        (want != "replayed" && want != got && want != without_refusals(got))
            .then_some((a.line, want))
    }
}

/// A turn's result as the desk worded it before 2026-12-06, when a plan the engine left out
/// (its name another owner's live plan) was not named: `armed a; PLAN b not armed: …` was
/// `armed a`, and `refused: PLAN b not armed: …` was `armed`. A file written then replays
/// the same act.
fn without_refusals(got: &str) -> String {
    let not_armed = |p: &str| p.starts_with("PLAN ") && p.contains(" not armed");
    if let Some(rest) = got.strip_prefix("refused: ")
        && rest.split("; ").all(not_armed)
    {
        return "armed".into();
    }
    got.split("; ")
        .filter(|p| !not_armed(p))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Why a file is not a session this desk can open.
fn not_a_session(first: &serde_json::Value) -> String {
    if first.get("type").and_then(|t| t.as_str()) == Some("session-start") {
        return "this is a Bus file (the event stream of one run), not a desk session: open \
                the session file beside it (or replay the Bus headless with `kestrel agent \
                --author FILE`)"
            .into();
    }
    "not a desk session: no desk-session header line".into()
}

/// Read a session file. Errors name the line.
pub fn load(text: &str) -> Result<Saved, String> {
    if let Some(e) = crate::bus::bom_refusal(text.as_bytes()) {
        return Err(e.to_string());
    }
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((i, head)) = lines.next() else {
        return Err("an empty file is not a desk session".into());
    };
    let v: serde_json::Value =
        serde_json::from_str(head).map_err(|e| format!("line {}: {e}", i + 1))?;
    if v.get("type").and_then(|t| t.as_str()) != Some("desk-session") {
        return Err(not_a_session(&v));
    }
    let format = v.get("v").and_then(|x| x.as_u64()).unwrap_or(1);
    if format != SESSION_FORMAT {
        return Err(format!(
            "line {}: a session file of format {format}; this desk reads format \
             {SESSION_FORMAT} (replay the run's Bus with `kestrel agent --author BUS`)",
            i + 1
        ));
    }
    let settings: Settings = serde_json::from_value(v.get("settings").cloned().unwrap_or_default())
        .map_err(|e| format!("line {}: settings: {e}", i + 1))?;
    let text_of = |k: &str| {
        v.get(k)
            .and_then(|t| t.as_str())
            .unwrap_or_default()
            .to_string()
    };
    let mut s = Saved {
        settings,
        tape: text_of("tape"),
        tape_blake3: text_of("tape_blake3"),
        acts: Vec::new(),
        last: (0, Ts(0)),
        speed: None,
        act_lines: Vec::new(),
        torn: None,
        draft: None,
    };
    if s.tape.is_empty() {
        return Err(format!("line {}: the header names no tape", i + 1));
    }
    let mut left: Option<(u64, Ts)> = None;
    // The last line, when the file does not end with a line end: the one a crash may have
    // cut short while writing it.
    let unended = (!text.ends_with('\n'))
        .then(|| text.lines().count())
        .filter(|&n| n > i + 1);
    for (i, l) in lines {
        let n = i + 1;
        let v: serde_json::Value = match serde_json::from_str(l) {
            Ok(v) => v,
            Err(_) if unended == Some(n) => {
                s.torn = Some(n);
                break;
            }
            Err(e) => return Err(format!("line {n}: {e}")),
        };
        let seq = v.get("seq").and_then(|x| x.as_u64()).unwrap_or(0);
        let ts_text = v.get("ts").and_then(|t| t.as_str());
        let ts = ts_text.and_then(Ts::parse);
        if let (Some(t), None) = (ts_text, ts) {
            return Err(format!(
                "line {n}: ts {t:?} is not a time of day (HH:MM:SS.mmm)"
            ));
        }
        if let Some(ts) = ts
            && (seq, ts) > s.last
        {
            s.last = (seq, ts);
        }
        if let Some(ts) = ts
            && v.get("action").and_then(|a| a.as_str()) == Some("left")
        {
            left = Some((seq, ts));
            s.draft = v
                .get("draft")
                .and_then(|d| d.as_str())
                .filter(|d| !d.trim().is_empty())
                .map(String::from);
        }
        match v.get("type").and_then(|t| t.as_str()) {
            Some("act") => {
                let act: Act = serde_json::from_value(v.get("act").cloned().unwrap_or_default())
                    .map_err(|e| format!("line {n}: act: {e}"))?;
                let ts = ts.ok_or_else(|| format!("line {n}: act without a ts"))?;
                // Acts are kept in tape order. They are written as they come, and one can come
                // after a later one: an agent's answer asked again after a rewind is recorded
                // at its own (earlier) point behind the old branch's acts still waiting to be
                // replayed. Put in its place (after acts at the same point), the replay takes
                // it where the live session did.
                let at = s.acts.partition_point(|(q, t, _)| (*q, *t) <= (seq, ts));
                s.acts.insert(at, (seq, ts, act));
                let result = v.get("result").and_then(|r| r.as_str()).map(String::from);
                s.act_lines.insert(at, ActLine { line: n, result });
            }
            Some("control") => match v.get("action").and_then(|a| a.as_str()) {
                Some("restart") => {
                    s.acts.clear();
                    s.act_lines.clear();
                    s.last = (0, Ts(0));
                    left = None;
                    if let Some(h) = v.get("hold").and_then(|h| h.as_bool()) {
                        s.settings.copilot = h;
                    }
                }
                // The person acted after a rewind: the acts recorded later than here were
                // another branch's future.
                // (The acts at this point of the tape taken before it stay; one recorded at
                // the same event count but a later time was the future too.)
                Some("branch") => {
                    let ts = ts.ok_or_else(|| format!("line {n}: a branch without a ts"))?;
                    let keep = s.acts.partition_point(|a| (a.0, a.1) <= (seq, ts));
                    s.acts.truncate(keep);
                    s.act_lines.truncate(keep);
                }
                // The person took back a turn: the last one of theirs at that point leaves
                // the acts as the session took it out ([`undo_span`]), or with every act
                // after it when the session went back to it (`rewind`).
                Some("undo") => {
                    let at = (
                        v.get("act_seq").and_then(|x| x.as_u64()),
                        v.get("act_ts").and_then(|t| t.as_str()).and_then(Ts::parse),
                    );
                    let (Some(a_seq), Some(a_ts)) = at else {
                        return Err(format!("line {n}: an undo without act_seq and act_ts"));
                    };
                    // The person's accept or reject of the proposal answering `call`: it
                    // leaves with every act after it ([`decision_span`]).
                    if let Some(call) = v.get("call") {
                        let call = call.as_u64().ok_or_else(|| {
                            format!("line {n}: an undo whose call is not a number")
                        })?;
                        let k = s.acts.iter().rposition(|(q, t, a)| {
                            (*q, *t) == (a_seq, a_ts)
                                && matches!(
                                    a,
                                    Act::Agent(
                                        AgentAct::Answer { call: c, .. }
                                            | AgentAct::Reject { call: c, .. }
                                    ) if *c == call
                                )
                        });
                        let Some(k) = k else {
                            return Err(format!(
                                "line {n}: an undo of a decision the file does not hold (call {call} at {a_ts}, seq {a_seq})"
                            ));
                        };
                        let span = decision_span(&s.acts, k);
                        s.acts.drain(span.clone());
                        s.act_lines.drain(span);
                        continue;
                    }
                    let k = s
                        .acts
                        .iter()
                        .rposition(|(q, t, a)| (*q, *t) == (a_seq, a_ts) && a.is_persons_turn());
                    let Some(k) = k else {
                        return Err(format!(
                            "line {n}: an undo of a turn the file does not hold (at {a_ts}, seq {a_seq})"
                        ));
                    };
                    let rewind = v.get("rewind").and_then(|r| r.as_bool()) == Some(true);
                    let span = undo_span(&s.acts, k, rewind);
                    s.acts.drain(span.clone());
                    s.act_lines.drain(span);
                }
                Some(a) if a.starts_with("speed ") => {
                    s.speed = Speed::ALL
                        .into_iter()
                        .find(|x| a == format!("speed {}", x.label()));
                }
                _ => {}
            },
            _ => {}
        }
    }
    if let Some(l) = left {
        s.last = l;
    }
    Ok(s)
}

/// Read a session file from disk; a Bus file given instead is named for what it is, with
/// the session file it belongs to.
/// Errors are coded lines: `code=IO` for a file that cannot be read, `code=SESSION` for one
/// that is not a session this desk opens (naming the line, or the session file a Bus file
/// belongs to).
pub fn open(path: &Path) -> Result<Saved, String> {
    let text = crate::limits::read_text_bounded(path, crate::limits::MAX_RECORDING_BYTES)
        .map_err(|e| crate::cli::cannot_read_bounded(path, &e))?;
    load(&text).map_err(|e| match session_of_bus(path) {
        Some(s) if e.starts_with("this is a Bus file") => {
            format!(
                "error code=SESSION message={}: {e}: {}",
                path.display(),
                s.display()
            )
        }
        _ => format!("error code=SESSION message={}: {e}", path.display()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bus_file_names_its_session_file() {
        assert_eq!(
            session_of_bus(Path::new("/d/trend-1.bus-2.jsonl")),
            Some(PathBuf::from("/d/trend-1.jsonl"))
        );
        assert_eq!(session_of_bus(Path::new("/d/trend-1.jsonl")), None);
        let e = load("{\"type\":\"session-start\",\"tape\":\"t\"}\n").unwrap_err();
        assert!(e.starts_with("this is a Bus file"), "{e}");
        let e = load("{\"type\":\"desk-session\",\"v\":1,\"tape\":\"t\"}\n").unwrap_err();
        assert!(e.contains("format 1"), "{e}");
        assert!(load("").is_err());
    }

    /// A session file saved by an editor that adds a byte-order mark was refused as
    /// "line 1: expected value at line 1 column 1", naming nothing; it is named.
    #[test]
    fn a_byte_order_mark_is_refused_by_name() {
        let file = format!("\u{feff}{}\n", head());
        assert!(load(&file[3..]).is_ok(), "the file without its mark loads");
        let e = load(&file).unwrap_err();
        assert_eq!(
            e,
            "the file starts with a UTF-8 byte-order mark (U+FEFF): save it without one"
        );
    }

    /// A session file's header with the default settings.
    fn head() -> String {
        let settings = serde_json::to_string(&Settings::default()).unwrap();
        format!("{{\"type\":\"desk-session\",\"v\":2,\"tape\":\"t\",\"settings\":{settings}}}")
    }

    /// An `act` record of a turn (`kind`: `human`, `file`).
    fn turn(seq: u64, ts: &str, text: &str, kind: &str) -> String {
        format!(
            "{{\"type\":\"act\",\"seq\":{seq},\"ts\":\"{ts}\",\"act\":{{\"act\":\"turn\",\"author\":\"you\",\"kind\":\"{kind}\",\"text\":\"{text}\"}}}}"
        )
    }

    /// The acts read back, a turn by its text, an agent's act by its debug form.
    fn texts(s: &Saved) -> Vec<String> {
        s.acts
            .iter()
            .map(|(_, _, a)| match a {
                Act::Turn { text, .. } => text.clone(),
                Act::Agent(a) => format!("{a:?}"),
            })
            .collect()
    }

    /// An `undo` takes the person's last turn at its point out of the acts; one that names
    /// no such turn (a file edited by hand, cut, or from another branch) is refused whole,
    /// with its line, rather than replaying a book the person never had.
    #[test]
    fn an_undo_record_removes_the_turn_it_names_or_the_file_is_refused() {
        let head = head();
        let undo = |seq: u64, ts: &str| {
            format!(
                "{{\"type\":\"control\",\"action\":\"undo\",\"seq\":900,\"ts\":\"11:00:00.000\",\"act_seq\":{seq},\"act_ts\":\"{ts}\"}}"
            )
        };
        let file = [
            head.clone(),
            turn(0, "09:30:00.000", "PLAN a", "file"),
            turn(10, "09:40:00.000", "PLAN b", "human"),
            turn(10, "09:40:00.000", "PLAN c", "human"),
            undo(10, "09:40:00.000"),
        ]
        .join("\n");
        let s = load(&file).unwrap();
        assert_eq!(
            texts(&s),
            ["PLAN a", "PLAN b"],
            "the later of two at one point"
        );
        // The file's own turn (armed at the open) is not the person's to undo.
        let e = load(&format!(
            "{file}\n{}\n{}",
            undo(10, "09:40:00.000"),
            undo(0, "09:30:00.000")
        ))
        .unwrap_err();
        assert!(
            e.starts_with("line 7: an undo of a turn the file does not hold"),
            "{e}"
        );
        let e = load(&format!(
            "{head}\n{{\"type\":\"control\",\"action\":\"undo\"}}"
        ))
        .unwrap_err();
        assert!(e.contains("line 2: an undo without act_seq"), "{e}");

        let hold = serde_json::json!({
            "type": "act",
            "seq": 20,
            "ts": "09:50:00.000",
            "act": Act::Agent(crate::session::agent::AgentAct::Hold { on: true }),
        })
        .to_string();
        let hold = hold.as_str();
        let sd = turn(20, "09:50:00.000", "STAND-DOWN done", "human");
        // A STAND-DOWN's undo takes the hold the desk put on the agent with it ...
        let s = load(
            &[
                head.clone(),
                sd.clone(),
                hold.into(),
                undo(20, "09:50:00.000"),
            ]
            .join("\n"),
        )
        .unwrap();
        assert!(s.acts.is_empty(), "{:?}", texts(&s));
        // ... and another turn's undo leaves a hold at its point alone.
        let plan = turn(20, "09:50:00.000", "PLAN d", "human");
        let s =
            load(&[head.clone(), plan, hold.into(), undo(20, "09:50:00.000")].join("\n")).unwrap();
        assert_eq!(s.acts.len(), 1, "{:?}", texts(&s));
        // `rewind`: the session went back to the turn, and every act after it went too.
        let rewind = undo(10, "09:40:00.000").replace("}", ",\"rewind\":true}");
        let s = load(
            &[
                head.clone(),
                turn(10, "09:40:00.000", "PLAN b", "human"),
                sd,
                rewind,
            ]
            .join("\n"),
        )
        .unwrap();
        assert!(s.acts.is_empty(), "{:?}", texts(&s));
    }

    /// Each act keeps its line and recorded result through the reordering, undos and
    /// branches the reader applies, so a replayed turn is held to its own line.
    #[test]
    fn each_act_keeps_its_line_and_result() {
        let with = |l: String, r: &str| l.replace("}}", &format!("}},\"result\":\"{r}\"}}"));
        let file = [
            head(),
            with(turn(20, "09:50:00.000", "PLAN c", "human"), "armed c"),
            with(turn(10, "09:40:00.000", "PLAN a", "human"), "armed a"),
            with(turn(10, "09:40:00.000", "PLAN b", "human"), "replayed"),
            "{\"type\":\"control\",\"action\":\"branch\",\"seq\":15,\"ts\":\"09:45:00.000\"}"
                .into(),
        ]
        .join("\n");
        let s = load(&file).unwrap();
        assert_eq!(texts(&s), ["PLAN a", "PLAN b"]);
        let lines: Vec<usize> = s.act_lines.iter().map(|a| a.line).collect();
        assert_eq!(lines, [3, 4]);
        assert_eq!(s.differs(0, "armed a"), None);
        assert_eq!(s.differs(0, "refused: x"), Some((3, "armed a")));
        assert_eq!(s.differs(1, "anything"), None, "a copy records no result");
    }

    /// A file written before the desk named the plans it left out replays its acts: the
    /// new wording is the old with the refusals added.
    #[test]
    fn an_older_result_without_the_plans_left_out_is_the_same_act() {
        assert_eq!(without_refusals("armed a; PLAN b not armed: x"), "armed a");
        assert_eq!(without_refusals("refused: PLAN b not armed: x"), "armed");
        assert_eq!(
            without_refusals("refused: PLAN b not armed: x; PLAN c not armed: y"),
            "armed"
        );
        assert_eq!(
            without_refusals("refused: no live plan x"),
            "refused: no live plan x"
        );
        assert_eq!(
            without_refusals("armed a; kept b as it stands"),
            "armed a; kept b as it stands"
        );
    }

    /// A new act after a rewind drops the recorded future: every act past its point, one at
    /// the same event count with a later time too (as the session drops it).
    #[test]
    fn a_branch_drops_the_acts_past_its_point() {
        let act = |seq: u64, ts: &str, text: &str| turn(seq, ts, text, "human");
        let file = [
            head(),
            act(10, "09:40:00.000", "PLAN a"),
            act(12, "09:40:00.500", "PLAN b"),
            act(20, "09:50:00.000", "PLAN c"),
            "{\"type\":\"control\",\"action\":\"branch\",\"seq\":12,\"ts\":\"09:40:00.400\"}"
                .into(),
            act(12, "09:40:00.400", "PLAN d"),
        ]
        .join("\n");
        let s = load(&file).unwrap();
        assert_eq!(texts(&s), ["PLAN a", "PLAN d"]);
    }
}
