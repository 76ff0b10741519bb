//! Attached authors (DESK.md §3): one interface, several kinds.
//!
//! - [`openai::OpenAiAuthor`]: any OpenAI-compatible chat-completions server, streamed over
//!   SSE, with timeouts and bounded retries that end in a provider error, and the exported
//!   GBNF sent as `grammar` when constrained decoding is on;
//! - [`command::CommandAuthor`]: an external program, prompt on stdin, reply on stdout;
//!
//! The trait is async and object-safe (a boxed future), so the desk can hold a
//! `Box<dyn Author>` and run it on a tokio task; the tick loop never waits on it. An author
//! returns an [`Completion`]: the reply text as written (routing is the turn router's job), or a
//! [`ProviderError`]: the transport failed. A provider error is never a pass: TURNS.md §1.4
//! keeps the three outcomes distinct, and for a model author an empty completion is a
//! provider error (seed 001).

pub mod command;
pub mod openai;
pub mod secret;
mod sse;

use std::future::Future;
use std::pin::Pin;

/// What an author is asked: the profile's text, the language card, the rendered View and the
/// menu of legal moves, as plain strings (the turn layer builds them). `repair` carries the
/// guided error and the author's previous reply on a bounded repair re-ask.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prompt {
    pub profile: String,
    pub card: String,
    pub view: String,
    pub menu: String,
    pub repair: Option<String>,
    /// `true`: the profile is completion-style (a base model continues a few-shot document;
    /// no chat roles). An OpenAI-compatible author then calls `/completions` with
    /// [`Prompt::completion_text`] instead of `/chat/completions`.
    pub completion: bool,
}

impl Prompt {
    /// The standing instructions: profile text then the card.
    pub fn system_text(&self) -> String {
        join(&[&self.profile, &self.card])
    }

    /// This wake's part: the View, the menu, and a repair note if any.
    pub fn user_text(&self) -> String {
        join(&[&self.view, &self.menu, self.repair.as_deref().unwrap_or("")])
    }

    /// Everything, for authors with one input channel (a command's stdin).
    pub fn full_text(&self) -> String {
        if self.completion {
            return self.completion_text();
        }
        join(&[&self.system_text(), &self.user_text()])
    }

    /// The document a base model continues: the rendered profile (instructions and whole
    /// example turns), this wake's View under `### View`, the repair note if any, and an
    /// open `### Reply` heading. The reply ends where the model writes [`COMPLETION_STOP`].
    pub fn completion_text(&self) -> String {
        let mut out = join(&[&self.profile, &self.card]);
        out.push_str("\n### View\n");
        out.push_str(self.view.trim_end_matches('\n'));
        out.push('\n');
        if !self.menu.is_empty() {
            out.push_str("\n### Menu\n");
            out.push_str(self.menu.trim_end_matches('\n'));
            out.push('\n');
        }
        if let Some(r) = &self.repair {
            out.push_str("\n### Refused\n");
            out.push_str(r.trim_end_matches('\n'));
            out.push('\n');
        }
        out.push_str("\n### Reply\n");
        out
    }
}

/// Where a completion-style reply ends: the next `###` heading of the few-shot document.
pub const COMPLETION_STOP: &str = "\n###";

fn join(parts: &[&str]) -> String {
    let mut out = String::new();
    for p in parts.iter().filter(|p| !p.is_empty()) {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(p.trim_end_matches('\n'));
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// Why an author produced no reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderErrorKind {
    /// Could not connect or send the request.
    Connect,
    /// A timeout: connect, first token, or the total budget (or a command's).
    Timeout,
    /// The server answered with a non-success HTTP status (after bounded retries).
    Http,
    /// The completion was empty (or only whitespace): a dead provider, never a pass.
    EmptyCompletion,
    /// The stream ended before the completion did: the partial text is not a reply.
    StreamCut,
    /// The response could not be understood.
    BadResponse,
    /// A command exited non-zero.
    Exit,
    /// A command could not be started.
    Spawn,
    /// A recording has no more replies.
    Exhausted,
    /// The human's channel closed.
    Closed,
    /// A signal (SIGTERM, SIGINT) arrived while the author was answering.
    Interrupted,
}

impl ProviderErrorKind {
    /// A stable name for logs and the Bus.
    pub fn name(self) -> &'static str {
        match self {
            ProviderErrorKind::Connect => "connect",
            ProviderErrorKind::Timeout => "timeout",
            ProviderErrorKind::Http => "http",
            ProviderErrorKind::EmptyCompletion => "empty-completion",
            ProviderErrorKind::StreamCut => "stream-cut",
            ProviderErrorKind::BadResponse => "bad-response",
            ProviderErrorKind::Exit => "exit",
            ProviderErrorKind::Spawn => "spawn",
            ProviderErrorKind::Exhausted => "exhausted",
            ProviderErrorKind::Closed => "closed",
            ProviderErrorKind::Interrupted => "interrupted",
        }
    }
}

/// The author's transport failed. The message never contains a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderError {
    pub kind: ProviderErrorKind,
    pub message: String,
}

impl ProviderError {
    /// A provider error's message as [`Display`](std::fmt::Display) writes it on the Bus
    /// (`provider-error kind=K said`), in its parts: the kind's name and what was said. A
    /// message not written so is all said.
    pub fn parts(message: &str) -> (Option<&str>, &str) {
        let m = message.strip_prefix("provider-error ").unwrap_or(message);
        match m.strip_prefix("kind=").and_then(|r| r.split_once(' ')) {
            Some((kind, said)) => (Some(kind), said),
            None => (None, m),
        }
    }
}

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "provider-error kind={} {}",
            self.kind.name(),
            self.message
        )
    }
}

/// What one authoring call produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// The reply as written (the router extracts, parses and routes it).
    Reply(String),
    /// Text that did not end with `finish_reason: "stop"`, and why ([`Cut`]; it reads as its
    /// text). The session settles it ([`Cut::reply_kind`]): a reply the provider stopped
    /// (`length` at the output-token limit, `content_filter`, ...) is routed as *truncated*
    /// (`turn::Reply::CutOff`) whatever it parses to, since a cut prefix of a plan may parse
    /// yet lack its EXIT; a stream that broke before it ended is a `stream-cut` provider
    /// error; one that ended without a finish reason is a whole reply.
    CutOff(Cut),
    /// No reply: the transport failed.
    ProviderError(ProviderError),
    /// A reply past [`MAX_REPLY_BYTES`](crate::limits::MAX_REPLY_BYTES): the transport
    /// kept its first bytes and counted the rest ([`Bounded`]), so a runaway author costs
    /// memory up to the limit, not its output. The router refuses it by size.
    Oversized {
        /// Its first bytes (at most [`KEPT_REPLY_BYTES`](crate::limits::KEPT_REPLY_BYTES)).
        head: String,
        /// Its whole size in bytes.
        bytes: usize,
    },
}

/// Why a reply did not end with `finish_reason: "stop"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CutReason {
    /// The provider stopped it and said why: the finish reason (`length` at the
    /// output-token limit, `content_filter`, ...).
    Stopped(String),
    /// The stream ended (`[DONE]`), or a non-streamed body arrived whole, with no finish
    /// reason: the server ended the reply itself without saying why. A server that stops at
    /// its output-token limit says `length`, so this is not a truncation at the budget.
    Unsaid,
    /// The connection closed or broke mid-reply: no finish reason and no `[DONE]` (a crashed
    /// server, a proxy timeout, a dropped connection). The text is a prefix of a reply the
    /// server may never have finished, and nothing says the budget ended it.
    Broken,
}

/// Text that did not end as a complete reply ([`Completion::CutOff`]), and why. It reads as
/// its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    pub text: String,
    pub reason: CutReason,
}

/// How the session takes a [`Cut`] reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CutKind {
    /// Truncated: the provider stopped it (routed `turn::Reply::CutOff`).
    Truncated,
    /// A whole reply: the stream ended without a finish reason (routed `turn::Reply::Text`).
    Whole,
    /// No reply: the stream broke mid-way, this `stream-cut` provider error.
    Failed(ProviderError),
}

impl Cut {
    /// A cut reply of `text` for `reason`.
    pub fn new(text: impl Into<String>, reason: CutReason) -> Cut {
        Cut {
            text: text.into(),
            reason,
        }
    }

    /// How the session takes it: a reply the provider stopped is truncated, one whose stream
    /// ended without a finish reason is whole, and one whose connection broke mid-reply is
    /// a `stream-cut` provider error. Before 2026-12-05 all three were truncated, so a
    /// dropped connection was counted (and told to the model) as a cut at the output-token
    /// limit: "write a shorter, complete turn".
    pub fn reply_kind(&self) -> CutKind {
        match &self.reason {
            CutReason::Stopped(_) => CutKind::Truncated,
            CutReason::Unsaid => CutKind::Whole,
            CutReason::Broken => CutKind::Failed(ProviderError {
                kind: ProviderErrorKind::StreamCut,
                message: format!(
                    "the stream ended after {} bytes of text with no finish reason and no [DONE] (the connection closed mid-reply): the partial text is not a reply",
                    self.text.len()
                ),
            }),
        }
    }
}

impl std::ops::Deref for Cut {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

/// A reply as the transport reads it, kept within [`MAX_REPLY_BYTES`]: its first bytes up
/// to the limit are kept, the rest is only counted. The router refuses a reply past the
/// limit unread, so keeping it whole would only let a runaway author (a command writing
/// 300 MB, a stream that never ends) take the memory: before 2026-12-05 a command's 300 MB
/// reply took 622 MB of memory to be refused.
///
/// [`MAX_REPLY_BYTES`]: crate::limits::MAX_REPLY_BYTES
#[derive(Debug, Default)]
pub(crate) struct Bounded {
    kept: Vec<u8>,
    bytes: usize,
}

impl Bounded {
    /// Add a piece read; the part of it that is kept (what may be shown as it is written:
    /// nothing past the limit).
    pub(crate) fn push<'a>(&mut self, b: &'a [u8]) -> &'a [u8] {
        let room = crate::limits::MAX_REPLY_BYTES
            .saturating_sub(self.bytes)
            .min(b.len());
        self.bytes = self.bytes.saturating_add(b.len());
        self.kept.extend_from_slice(&b[..room]);
        &b[..room]
    }

    /// Nothing read yet.
    pub(crate) fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// The reply read whole, or, past the limit, the [`Completion::Oversized`] that stands
    /// for it (its head made text as the Bus keeps it, `map` applied: a redaction).
    pub(crate) fn finish(self, map: impl Fn(String) -> String) -> Result<Vec<u8>, Completion> {
        use crate::limits::{KEPT_REPLY_BYTES, MAX_REPLY_BYTES, prefix};
        if self.bytes <= MAX_REPLY_BYTES {
            return Ok(self.kept);
        }
        let cut = self.kept.len().min(KEPT_REPLY_BYTES);
        let head = map(String::from_utf8_lossy(&self.kept[..cut]).into_owned());
        Err(Completion::Oversized {
            head: prefix(&head, KEPT_REPLY_BYTES).to_string(),
            bytes: self.bytes,
        })
    }
}

impl Completion {
    pub(crate) fn error(kind: ProviderErrorKind, message: impl Into<String>) -> Completion {
        Completion::ProviderError(ProviderError {
            kind,
            message: message.into(),
        })
    }
}

/// Who is authoring, as the config identity needs it (TURNS.md §5): the kind, the model,
/// whether decode-time constraint is on, and the temperature.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthorInfo {
    /// `openai`, `command`, `recorded` or `human`.
    pub kind: &'static str,
    /// The model name, the program, the recording's path, or `human`.
    pub model: String,
    /// Is the exported grammar constraining decoding?
    pub constrained: bool,
    pub temperature: Option<f64>,
    /// The output-token limit of one request, where the author has one.
    pub max_tokens: Option<u32>,
    /// A model server's base URL as messages show it (no userinfo, query values
    /// `[redacted]`); `None` for a command.
    pub server: Option<String>,
}

impl AuthorInfo {
    /// The fields as one canonical line, ready to be hashed into a config id.
    pub fn identity(&self) -> String {
        format!(
            "kind={} model={} constrained={} temperature={}",
            self.kind,
            self.model,
            if self.constrained { "on" } else { "off" },
            self.temperature
                .map(|t| format!("{t}"))
                .unwrap_or_else(|| "-".into())
        )
    }
}

/// Streamed pieces of a reply as they arrive (the desk shows the author typing). Only
/// [`Completion::Reply`] counts as authored; deltas of a failed call are display only.
pub type DeltaSink = tokio::sync::mpsc::UnboundedSender<String>;

/// Sent on a [`DeltaSink`] when a new reply starts (a re-ask, or a transport retry after a
/// reply cut off mid-stream): a record separator, which no reply holds as a whole delta.
/// What the desk shows as being written starts again.
pub const NEW_ATTEMPT: &str = "\u{1e}";

/// Sent on a [`DeltaSink`] (after [`NEW_ATTEMPT`]) when the reply before was refused and the
/// author is asked again: a unit separator, which no reply holds as a whole delta, then why
/// ([`re_ask_note`]). The desk counts them while the author writes (`writing @ open 65s ·
/// re-ask 1`) and its Journal says why each reply was refused.
pub const RE_ASK: &str = "\u{1f}";

/// The [`RE_ASK`] delta for a reply refused with these errors (the repair's guided text, one
/// coded error a line): the first error, and how many more.
pub fn re_ask_note(errors: Option<&str>) -> String {
    let mut lines = errors
        .unwrap_or("")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty());
    // `error code=PARSE …`: the Journal's row says it was refused; the code leads.
    let first = lines
        .next()
        .map_or("refused", |l| l.strip_prefix("error ").unwrap_or(l));
    match lines.count() {
        0 => format!("{RE_ASK}{first}"),
        n => format!(
            "{RE_ASK}{first} (and {n} more error{})",
            if n == 1 { "" } else { "s" }
        ),
    }
}

/// Why a reply was refused, from a delta that is a [`re_ask_note`] (`None`: not one).
pub fn re_ask_why(delta: &str) -> Option<&str> {
    delta.strip_prefix(RE_ASK)
}

/// The future an author returns.
pub type AuthorFuture<'a> = Pin<Box<dyn Future<Output = Completion> + Send + 'a>>;

/// One interface for every kind of author.
pub trait Author: Send {
    /// Who this author is, for the config id and the desk's header.
    fn info(&self) -> AuthorInfo;

    /// Ask for one turn. Never panics; every failure is a [`ProviderError`].
    fn author<'a>(&'a mut self, prompt: &'a Prompt, deltas: Option<DeltaSink>) -> AuthorFuture<'a>;

    /// The failed tries the last [`Author::author`] call retried inside itself (a timeout,
    /// an HTTP 5xx, an empty completion...), one line each, oldest first; taking them clears
    /// them. The session records them on the Bus with the attempt they belong to.
    fn take_retries(&mut self) -> Vec<String> {
        Vec::new()
    }

    /// What the provider reported the last [`Author::author`] call cost ([`Usage`]; the
    /// sum over the tries it retried inside itself), when it reported it; taking it clears
    /// it. `None` for a command, and for a server that sends no `usage`.
    fn take_usage(&mut self) -> Option<Usage> {
        None
    }
}

/// What a provider said one call cost: the `usage` object of an OpenAI-compatible response
/// (`prompt_tokens`, `completion_tokens`), counted by the provider's own tokenizer. It is
/// not the desk's cl100k count of the reply (`RepairAttempt::tokens`): the prompt (the
/// profile, the card and the View, sent again on every re-ask) is counted only here, and a
/// Gemma or Llama tokenizer counts the reply differently.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    /// Tokens the provider read (`usage.prompt_tokens`).
    pub prompt_tokens: u64,
    /// Tokens the provider wrote (`usage.completion_tokens`).
    pub completion_tokens: u64,
}

impl Usage {
    /// The `usage` object of a response body or stream event, when it has both counts as
    /// non-negative integers (`null`, absent or partial: `None`).
    pub fn from_json(v: &serde_json::Value) -> Option<Usage> {
        Some(Usage {
            prompt_tokens: v.get("prompt_tokens")?.as_u64()?,
            completion_tokens: v.get("completion_tokens")?.as_u64()?,
        })
    }

    /// The two calls' costs together.
    pub fn plus(self, o: Usage) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens.saturating_add(o.prompt_tokens),
            completion_tokens: self.completion_tokens.saturating_add(o.completion_tokens),
        }
    }
}

/// Cut `s` to at most `max` characters, for error messages.
pub(crate) fn excerpt(s: &str, max: usize) -> String {
    let mut out: String = s.chars().take(max).collect();
    if s.chars().count() > max {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A re-ask's note names the first coded error and how many more, and is told from a
    /// reply's text by its separator alone.
    #[test]
    fn a_re_ask_note_names_the_first_error_and_counts_the_rest() {
        let one = re_ask_note(Some("error code=PARSE rule=syntax message=x\n"));
        assert_eq!(re_ask_why(&one), Some("code=PARSE rule=syntax message=x"));
        let three = re_ask_note(Some("error code=A\n\nerror code=B\nerror code=C"));
        assert_eq!(re_ask_why(&three), Some("code=A (and 2 more errors)"));
        let two = re_ask_note(Some("error code=A\nerror code=B"));
        assert_eq!(re_ask_why(&two), Some("code=A (and 1 more error)"));
        assert_eq!(re_ask_why(&re_ask_note(None)), Some("refused"));
        assert_eq!(re_ask_why("PLAN p budget 0.1R"), None);
        assert_eq!(re_ask_why(NEW_ATTEMPT), None);
    }
}
