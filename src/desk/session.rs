//! Sessions: where the desk writes as it runs, and reading a saved session back.
//!
//! A session is a JSON Lines file in the data directory (`<data>/sessions/`): a
//! `desk-session` header (the tape), then `act` records (what a routed turn did, at which
//! tape point: `seq` = tape events applied), `turn` records (the routed turn, canonical, and
//! its token figures) and `control` records (play, speed, seek, restart). The runtime's own
//! stream (the Bus) goes beside it, one file per run (`<stem>.bus-<n>.jsonl`). Every line is
//! flushed as it is written, so a crash loses at most the line being written.
//!
//! `kestrel desk --open FILE` replays the acts at their recorded tape points, which gives
//! the same runtime stream and the same determinism hash.

use super::engine::Act;
use crate::market::Ts;
use crate::turn::RoutedTurn;
use std::path::{Path, PathBuf};

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

/// A fresh session path for a tape, named by tape and wall-clock seconds.
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
    dir.join(format!("{safe}-{secs}.jsonl"))
}

/// The Bus file of run `n` of a session.
pub fn bus_path(session: &Path, n: u32) -> PathBuf {
    let stem = session
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("session");
    session.with_file_name(format!("{stem}.bus-{n}.jsonl"))
}

/// A saved session, read back.
#[derive(Debug, Clone, Default)]
pub struct Saved {
    /// The tape label (`bundled:<name>` or a path).
    pub tape: String,
    /// Acts of the last run: (seq, ts, id, act).
    pub acts: Vec<(u64, Ts, u64, Act)>,
    /// Routed turns of the last run: (seq, author, routed turn).
    pub turns: Vec<(u64, String, RoutedTurn)>,
    /// The agent seated in the session.
    pub agent: Option<super::agent::DeskAgent>,
    /// Co-pilot at the start of the last run.
    pub hold: bool,
}

/// Read a session file. Errors name the line.
pub fn load(text: &str) -> Result<Saved, String> {
    let mut s = Saved::default();
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let n = i + 1;
        let v: serde_json::Value = serde_json::from_str(l).map_err(|e| format!("line {n}: {e}"))?;
        let seq = v.get("seq").and_then(|x| x.as_u64()).unwrap_or(0);
        match v.get("type").and_then(|t| t.as_str()) {
            Some("desk-session") => {
                s.tape = v
                    .get("tape")
                    .and_then(|t| t.as_str())
                    .unwrap_or_default()
                    .to_string();
                s.hold = v.get("hold").and_then(|h| h.as_bool()).unwrap_or(false);
            }
            Some("agent") => s.agent = super::agent::DeskAgent::from_record(&v),
            Some("act") => {
                let act: Act = serde_json::from_value(v.get("act").cloned().unwrap_or_default())
                    .map_err(|e| format!("line {n}: act: {e}"))?;
                let ts = v
                    .get("ts")
                    .and_then(|t| t.as_str())
                    .and_then(Ts::parse)
                    .ok_or_else(|| format!("line {n}: act without a ts"))?;
                let id = v.get("id").and_then(|x| x.as_u64()).unwrap_or(0);
                s.acts.push((seq, ts, id, act));
            }
            Some("turn") => {
                if let Ok(t) = serde_json::from_value::<RoutedTurn>(
                    v.get("routed").cloned().unwrap_or_default(),
                ) {
                    let author = v
                        .get("author")
                        .and_then(|a| a.as_str())
                        .unwrap_or("?")
                        .to_string();
                    s.turns.push((seq, author, t));
                }
            }
            Some("control") => match v.get("action").and_then(|a| a.as_str()) {
                Some("restart") => {
                    s.acts.clear();
                    s.turns.clear();
                    s.hold = v.get("hold").and_then(|h| h.as_bool()).unwrap_or(s.hold);
                }
                Some("rewound") => {
                    s.acts.retain(|a| a.0 <= seq);
                    s.turns.retain(|t| t.0 <= seq);
                }
                _ => {}
            },
            _ => {}
        }
    }
    if s.tape.is_empty() {
        return Err("not a desk session: no desk-session header line".into());
    }
    Ok(s)
}
