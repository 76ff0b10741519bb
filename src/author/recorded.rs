//! The recorded author: replays captured reply texts in order, byte-identically.
//!
//! A recording is JSONL: each line is either a JSON string (the reply) or an object with a
//! `reply` string (other keys, such as `wake` or `note`, are ignored). Blank lines are
//! skipped. When the replies run out, the author answers with a provider error
//! (`exhausted`), never an invented pass.

use super::{Author, AuthorFuture, AuthorInfo, DeltaSink, Outcome, Prompt, ProviderErrorKind};
use std::collections::VecDeque;
use std::path::Path;

/// Replays replies in order.
pub struct RecordedAuthor {
    name: String,
    replies: VecDeque<String>,
}

impl RecordedAuthor {
    /// From replies in memory.
    pub fn new(name: impl Into<String>, replies: impl IntoIterator<Item = String>) -> Self {
        RecordedAuthor {
            name: name.into(),
            replies: replies.into_iter().collect(),
        }
    }

    /// Parse a JSONL recording; the error names the bad line.
    pub fn from_jsonl(name: impl Into<String>, text: &str) -> Result<Self, String> {
        let mut replies = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: serde_json::Value =
                serde_json::from_str(line).map_err(|e| format!("line {}: not JSON: {e}", n + 1))?;
            let reply = match &v {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Object(m) => match m.get("reply") {
                    Some(serde_json::Value::String(s)) => s.clone(),
                    _ => return Err(format!("line {}: an object needs a `reply` string", n + 1)),
                },
                _ => return Err(format!("line {}: expected a string or an object", n + 1)),
            };
            replies.push(reply);
        }
        Ok(RecordedAuthor::new(name, replies))
    }

    /// Read a JSONL recording from a file.
    pub fn from_file(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Self::from_jsonl(path.display().to_string(), &text)
    }

    /// Replies not yet replayed.
    pub fn remaining(&self) -> usize {
        self.replies.len()
    }
}

impl Author for RecordedAuthor {
    fn info(&self) -> AuthorInfo {
        AuthorInfo {
            kind: "recorded",
            model: self.name.clone(),
            constrained: false,
            temperature: None,
        }
    }

    fn author<'a>(
        &'a mut self,
        _prompt: &'a Prompt,
        deltas: Option<DeltaSink>,
    ) -> AuthorFuture<'a> {
        Box::pin(async move {
            match self.replies.pop_front() {
                Some(text) => {
                    if let Some(d) = deltas {
                        let _ = d.send(text.clone());
                    }
                    Outcome::Reply(text)
                }
                None => Outcome::error(
                    ProviderErrorKind::Exhausted,
                    format!("recording {} has no more replies", self.name),
                ),
            }
        })
    }
}
