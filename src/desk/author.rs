//! The attached-author seam: an author runs as a task on the async runtime and its turns
//! arrive at the desk as events over a channel. The tape never waits for it.
//!
//! Today the desk attaches a **recorded** author: captured replies keyed by tape time, read
//! from a JSON Lines file (`examples/desk-agent.jsonl` is the house agent):
//!
//! ```text
//! {"at":"09:46:00","author":"house","reply":"# Thesis ...\nPLAN ..."}
//! {"at":"11:00:00","author":"house","provider_error":"timeout after 30s"}
//! ```
//!
//! A recording has already thought: each turn carries its captured tape time and, in
//! autopilot, arms exactly then (so a replay at any speed arms at the same tape point). Other
//! kinds (HTTP, command) plug in by sending the same [`AuthorMsg`]s from their own task.

use crate::market::Ts;
use crate::turn::{AuthorKind, Reply};
use serde::Deserialize;
use tokio::sync::mpsc;

/// A turn from an attached author.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthorTurn {
    /// The author's display name.
    pub author: String,
    /// Model, file, ...
    pub kind: AuthorKind,
    /// What the transport delivered.
    pub reply: Reply,
    /// The tape time the turn takes effect (`None`: on arrival).
    pub at: Option<Ts>,
}

/// What an author task sends.
#[derive(Debug, Clone, PartialEq)]
pub enum AuthorMsg {
    /// A complete turn.
    Turn(AuthorTurn),
    /// Streaming text of the turn being written (shown as it comes; never routed).
    Thinking(String),
    /// The author stopped (with why).
    Gone(String),
}

/// The desk's end of an attached author.
#[derive(Debug)]
pub struct AuthorLink {
    /// Display name (status line).
    pub name: String,
    /// Turns and thinking, as events.
    pub rx: mpsc::UnboundedReceiver<AuthorMsg>,
    /// The task, when it runs on a runtime (aborted on detach).
    pub task: Option<tokio::task::JoinHandle<()>>,
}

impl AuthorLink {
    /// A link and the sender an author task writes to.
    pub fn channel(name: &str) -> (AuthorLink, mpsc::UnboundedSender<AuthorMsg>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            AuthorLink {
                name: name.to_string(),
                rx,
                task: None,
            },
            tx,
        )
    }

    /// Stop the task.
    pub fn detach(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

impl Drop for AuthorLink {
    fn drop(&mut self) {
        self.detach();
    }
}

#[derive(Deserialize)]
struct Line {
    at: String,
    #[serde(default)]
    author: Option<String>,
    #[serde(default)]
    reply: Option<String>,
    #[serde(default)]
    provider_error: Option<String>,
}

fn parse_at(s: &str) -> Option<Ts> {
    match s.len() {
        5 => Ts::parse_hhmm(s),
        8 => Ts::parse(&format!("{s}.000")),
        _ => Ts::parse(s),
    }
}

/// Parse a recording: one turn per line, in tape order. Errors name the line.
pub fn parse_recording(text: &str) -> Result<Vec<AuthorTurn>, String> {
    let mut out: Vec<AuthorTurn> = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let n = i + 1;
        let line: Line = serde_json::from_str(l).map_err(|e| format!("line {n}: {e}"))?;
        let at = parse_at(&line.at)
            .ok_or_else(|| format!("line {n}: at {:?} is not HH:MM[:SS]", line.at))?;
        if out.last().and_then(|t| t.at).is_some_and(|p| p > at) {
            return Err(format!("line {n}: turns must be in tape order"));
        }
        let reply = match (line.reply, line.provider_error) {
            (Some(r), None) => Reply::Text(r),
            (None, Some(e)) => Reply::ProviderError(e),
            _ => {
                return Err(format!(
                    "line {n}: give exactly one of reply or provider_error"
                ));
            }
        };
        out.push(AuthorTurn {
            author: line.author.unwrap_or_else(|| "house".into()),
            kind: AuthorKind::Model,
            reply,
            at: Some(at),
        });
    }
    Ok(out)
}

/// The bundled house agent's recording.
pub const HOUSE_AGENT: &str = include_str!("../../examples/desk-agent.jsonl");

/// Spawn a recorded author on `rt`: it streams each turn's text as thinking, then sends it.
pub fn spawn_recorded(
    rt: &tokio::runtime::Handle,
    name: &str,
    turns: Vec<AuthorTurn>,
) -> AuthorLink {
    let (mut link, tx) = AuthorLink::channel(name);
    link.task = Some(rt.spawn(async move {
        for t in turns {
            let text = t.reply.written().to_string();
            for chunk in text.split_inclusive('\n').take(3) {
                if tx.send(AuthorMsg::Thinking(chunk.to_string())).is_err() {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            if tx.send(AuthorMsg::Turn(t)).is_err() {
                return;
            }
        }
        let _ = tx.send(AuthorMsg::Gone("recording finished".into()));
    }));
    link
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn house_agent_parses_and_routes() {
        let turns = parse_recording(HOUSE_AGENT).unwrap();
        assert!(turns.len() >= 3);
        let ctx = crate::turn::TurnContext::new(
            crate::turn::WakePhase::Mid,
            crate::turn::Profile::AuthoringV2,
            AuthorKind::Model,
        );
        let outcomes: Vec<&str> = turns
            .iter()
            .map(|t| crate::turn::route(&t.reply, &ctx).outcome.name())
            .collect();
        assert!(outcomes.contains(&"supersede"), "{outcomes:?}");
        assert!(outcomes.contains(&"stand-down"), "{outcomes:?}");
    }

    #[test]
    fn bad_recordings_name_the_line() {
        assert!(
            parse_recording("{\"at\":\"xx\",\"reply\":\"\"}")
                .unwrap_err()
                .contains("line 1")
        );
        let e =
            parse_recording("{\"at\":\"10:00\",\"reply\":\"\"}\n{\"at\":\"09:00\",\"reply\":\"\"}")
                .unwrap_err();
        assert!(e.contains("line 2") && e.contains("order"), "{e}");
    }
}
