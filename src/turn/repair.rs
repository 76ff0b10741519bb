//! Bounded repair (TURNS.md §2, seed 001).
//!
//! An invalid (or truncated) turn is answered by re-asking the author with the guided error —
//! the same text `kestrel check` prints — and the author's own previous reply. At most
//! `repair_budget` re-asks, within an authoring token budget (output tokens of the replies,
//! cl100k). When either is spent the turn ends as the terminal fail-closed pass. A provider
//! error ends the loop at once as provider-error, never as a pass. The parser is never
//! loosened. Every attempt is a [`RepairAttempt`] record, ready for the Bus.

use super::{Menu, Reply, RoutedTurn, TurnClass, TurnContext, TurnError, guided_text, route};
use crate::tokens::{self, Encoding};
use serde::{Deserialize, Serialize};

/// What the desk asks the author for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ask {
    /// 0 for the first ask, then 1, 2, ... for each re-ask.
    pub attempt: u32,
    /// The guided error of the previous reply (re-asks only).
    pub guided_error: Option<String>,
    /// The author's previous reply, as written (re-asks only).
    pub previous_reply: Option<String>,
    /// The moves on offer.
    pub menu: Menu,
}

/// Errors a re-ask lists; the rest are counted (`and N more errors`).
pub const REASK_ERRORS: usize = 3;
/// The longest repair note [`Ask::repair_prompt`] writes, in bytes.
pub const REASK_NOTE_MAX: usize = 1536;
/// The longest one listed error line in a repair note, in bytes.
const REASK_ERROR_LINE: usize = 240;

impl Ask {
    /// The re-ask text sent to the author (`None` on the first ask, where the profile's
    /// prompt and the View are sent instead), at most [`REASK_NOTE_MAX`] bytes.
    pub fn repair_prompt(&self) -> Option<String> {
        self.repair_note(REASK_NOTE_MAX)
    }

    /// The re-ask text in at most `max` bytes, whatever the size of the refused reply and of
    /// its error list: the first [`REASK_ERRORS`] errors (each cut to one line of at most
    /// 240 bytes) and a count of the rest, the menu, and whole lines from the start of the
    /// previous reply (in at most a quarter of `max`), with a count of the lines not shown.
    /// The parts go in by priority (the first error, the closing line, the count, the reply
    /// excerpt, the other errors, the menu), each only if it fits; the result is then cut
    /// to `max` bytes at a character boundary, so the bound always holds.
    pub fn repair_note(&self, max: usize) -> Option<String> {
        let err = self.guided_error.as_deref()?;
        let prev = self.previous_reply.as_deref().unwrap_or("");
        let errors: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        let head = "Your reply was refused; nothing was armed.\n";
        let tail = "Reply again with the whole turn, corrected.\n";
        let listed: Vec<String> = errors
            .iter()
            .take(REASK_ERRORS)
            .map(|l| format!("{}\n", cut(l, REASK_ERROR_LINE)))
            .collect();
        let more = errors.len().saturating_sub(listed.len());
        let count = if more > 0 {
            format!("(and {more} more errors, not shown)\n")
        } else {
            String::new()
        };
        let menu = format!("The menu is {}.\n", self.menu.describe());
        let mut used = head.len() + tail.len();
        let take = |s: &str, used: &mut usize| -> bool {
            if *used + s.len() <= max {
                *used += s.len();
                true
            } else {
                false
            }
        };
        let first = listed
            .first()
            .filter(|s| take(s.as_str(), &mut used))
            .cloned();
        let count = take(&count, &mut used).then_some(count);
        // The reply excerpt: whole lines from its start, in at most a quarter of the bound.
        let label = "\nYour reply began:\n";
        let total_lines = prev.lines().count();
        let mut excerpt = String::new();
        let mut shown_lines = 0;
        // Room for the label and the "(N more lines not shown)" line.
        let frame = label.len() + 40;
        let room = (max / 4).min(max.saturating_sub(used + frame));
        for l in prev.lines() {
            if excerpt.len() + l.len() + 1 > room {
                break;
            }
            excerpt.push_str(l);
            excerpt.push('\n');
            shown_lines += 1;
        }
        if shown_lines > 0 {
            used += frame + excerpt.len();
        }
        let rest: Vec<String> = listed
            .iter()
            .skip(1)
            .filter(|s| take(s.as_str(), &mut used))
            .cloned()
            .collect();
        let menu = take(&menu, &mut used).then_some(menu);
        let mut out = String::from(head);
        out.push_str(first.as_deref().unwrap_or(""));
        for r in &rest {
            out.push_str(r);
        }
        out.push_str(count.as_deref().unwrap_or(""));
        if shown_lines > 0 {
            out.push_str(label);
            out.push_str(&excerpt);
            if shown_lines < total_lines {
                out.push_str(&format!(
                    "({} more lines not shown)\n",
                    total_lines - shown_lines
                ));
            }
            out.push('\n');
        }
        out.push_str(menu.as_deref().unwrap_or(""));
        out.push_str(tail);
        Some(cut(&out, max).to_string())
    }
}

/// `s` cut to at most `max` bytes at a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A command author's message with its program named by its file alone (`` `fail.sh`
/// exited with … `` for `` `/home/me/agents/fail.sh` ``): the reason, after it, is what a
/// person needs to see on a short line.
fn short_program(said: &str) -> String {
    let Some(rest) = said.strip_prefix('`') else {
        return said.to_string();
    };
    match rest.split_once('`') {
        Some((program, after)) => {
            let short: Vec<&str> = program
                .split(' ')
                .map(|w| w.rsplit('/').next().unwrap_or(w))
                .collect();
            format!("`{}`{after}", short.join(" "))
        }
        None => said.to_string(),
    }
}

/// An author that can be asked (and re-asked) for a turn: a provider client, a person at
/// the desk, a recording, or a test script. Closures `FnMut(&Ask) -> Reply` are authors.
pub trait Author {
    /// Write a reply to one ask (the first, or a re-ask carrying the guided error).
    fn write(&mut self, ask: &Ask) -> Reply;
}

impl<F: FnMut(&Ask) -> Reply> Author for F {
    fn write(&mut self, ask: &Ask) -> Reply {
        self(ask)
    }
}

/// The bounds of the repair loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepairPolicy {
    /// Re-asks after the first reply (default 2).
    pub repair_budget: u32,
    /// Output tokens (cl100k) the author may spend on this turn across all attempts;
    /// `None` for no token bound.
    pub authoring_token_budget: Option<usize>,
}

impl Default for RepairPolicy {
    fn default() -> Self {
        RepairPolicy {
            repair_budget: 2,
            authoring_token_budget: Some(4000),
        }
    }
}

/// One attempt in the loop: what was written, the error, whether the next attempt parsed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepairAttempt {
    /// 0 for the first reply, then each re-ask.
    pub attempt: u32,
    /// The reply as written (empty for a provider error).
    pub written: String,
    /// The routed outcome's name.
    pub outcome: String,
    /// The errors, when the reply was refused.
    pub errors: Vec<TurnError>,
    /// The guided error text the author was (or would have been) re-asked with.
    pub guided: Option<String>,
    /// cl100k tokens of what was written.
    pub tokens: usize,
    /// Whether the next attempt was an authored turn; `None` for the last attempt.
    pub next_parsed: Option<bool>,
    /// The transport's own retries inside this attempt (a first-token timeout, an HTTP 5xx,
    /// an empty completion retried by the client), one line each; absent when there were
    /// none, so Bus files without retries keep their bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retries: Vec<String>,
    /// What the provider said this attempt cost ([`Usage`](crate::author::Usage): prompt and
    /// completion tokens by its own tokenizer, summed over the transport's retries), when the
    /// server sent a `usage`; absent otherwise, so Bus files without it keep their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::author::Usage>,
}

impl RepairAttempt {
    /// Are its `tokens` an estimate (a quarter of the bytes of a reply refused unread for
    /// its size, [`tokens::count_reply`]) rather than a cl100k count?
    pub fn estimated(&self) -> bool {
        self.errors
            .iter()
            .any(|e| super::admit::oversized_bytes(e).is_some())
    }
}

/// The authoring cost of some attempts, each figure by what measured it: the desk's cl100k
/// count of the replies written, the bytes/4 estimate of replies refused unread for their
/// size (kept apart: it is not a count), and what the provider reported (`usage`), with how
/// many attempts reported it. `kestrel agent --json`, `kestrel errors report` and
/// `kestrel experiment` total the same way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spend {
    /// cl100k tokens of the replies written (estimates left out).
    pub tokens: u64,
    /// The bytes/4 estimates of oversized replies.
    pub tokens_estimated: u64,
    /// Attempts whose provider reported a `usage`.
    pub provider_attempts: u64,
    /// Their `usage.prompt_tokens`, summed.
    pub provider_prompt_tokens: u64,
    /// Their `usage.completion_tokens`, summed.
    pub provider_completion_tokens: u64,
    /// Attempts a reply came back for (not a provider error): what the desk's estimate of
    /// the prompts sent counts, since a refused connection or an HTTP error is not known to
    /// have been charged.
    pub replies: u64,
}

impl Spend {
    /// Count one attempt.
    pub fn add(&mut self, a: &RepairAttempt) {
        if a.estimated() {
            self.tokens_estimated += a.tokens as u64;
        } else {
            self.tokens += a.tokens as u64;
        }
        if a.outcome != "provider-error" {
            self.replies += 1;
        }
        if let Some(u) = a.usage {
            self.provider_attempts += 1;
            self.provider_prompt_tokens += u.prompt_tokens;
            self.provider_completion_tokens += u.completion_tokens;
        }
    }
}

/// Why a loop ended in the fail-closed pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Spent {
    /// `repair_budget` re-asks were made and the last reply was still refused.
    RepairBudget,
    /// The authoring token budget was spent.
    TokenBudget,
}

/// A whole loop: the final turn and every attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepairRun {
    /// The turn that acts: authored, provider-error, or the fail-closed pass.
    pub turn: RoutedTurn,
    /// Every attempt, in order.
    pub attempts: Vec<RepairAttempt>,
    /// Re-asks made.
    pub re_asks: u32,
    /// Output tokens spent across attempts.
    pub tokens_spent: usize,
    /// Set when the loop ended in the terminal fail-closed pass.
    pub fail_closed: Option<Spent>,
}

impl RepairRun {
    /// What every attempt of the loop cost (the refused replies too).
    pub fn spend(&self) -> Spend {
        let mut s = Spend::default();
        for a in &self.attempts {
            s.add(a);
        }
        s
    }

    /// Did a refused reply get repaired into an authored turn?
    pub fn repaired(&self) -> bool {
        self.re_asks > 0 && self.turn.class() == TurnClass::Authored
    }

    /// The size in bytes of the last reply, when it was refused unread for its size (its
    /// tokens are then an estimate: [`tokens::count_reply`]).
    pub fn oversized(&self) -> Option<usize> {
        self.attempts
            .last()?
            .errors
            .iter()
            .find_map(super::admit::oversized_bytes)
    }

    /// Are [`tokens_spent`](Self::tokens_spent) in part an estimate (a reply refused unread
    /// for its size: [`tokens::count_reply`])?
    pub fn tokens_estimated(&self) -> bool {
        self.attempts.iter().any(|a| {
            a.errors
                .iter()
                .any(|e| super::admit::oversized_bytes(e).is_some())
        })
    }

    /// What failed, for a person, when the author wrote no valid turn: the fail-closed
    /// pass says why its last reply was refused and how far the loop went (`refused after
    /// 2 re-asks: PARSE rule=syntax: …`, `refused, token budget spent: reply too large:
    /// 9489024 bytes > 262144`), a provider error what the transport reported (`provider
    /// error: exit: … exited with exit status: 7: model server unreachable …`). `None` for
    /// an authored turn. Not on the Bus: the `repair` and `turn` events carry the parts.
    pub fn failure(&self) -> Option<String> {
        match &self.turn.outcome {
            super::Outcome::ProviderError { message } => {
                let m = crate::lang::diag::visible_line(message);
                // The author's messages are coded (`provider-error kind=exit ...`).
                let (kind, said) = crate::author::ProviderError::parts(&m);
                let kind = kind.map(|k| format!(" ({k})")).unwrap_or_default();
                Some(format!("provider error{kind}: {}", short_program(said)))
            }
            super::Outcome::Pass { fail_closed: true } => {
                let mut how = match self.re_asks {
                    0 => "refused".to_string(),
                    1 => "refused after 1 re-ask".to_string(),
                    n => format!("refused after {n} re-asks"),
                };
                if self.fail_closed == Some(Spent::TokenBudget) {
                    how.push_str(", token budget spent");
                }
                let what = self
                    .attempts
                    .last()
                    .and_then(|a| a.errors.first())
                    .map(|e| match super::admit::oversized_bytes(e) {
                        Some(n) => format!(
                            "reply too large: {n} bytes > {}",
                            crate::limits::MAX_REPLY_BYTES
                        ),
                        None => format!(
                            "{} rule={}: {}",
                            e.code,
                            e.rule,
                            crate::lang::diag::visible_line(&e.message)
                        ),
                    })
                    .unwrap_or_else(|| "no valid turn".into());
                Some(format!("{how}: {what}"))
            }
            _ => None,
        }
    }
}

/// The output tokens a reply spends ([`tokens::count_reply`]: an oversized reply is not
/// metered and is charged an estimate, one token per four bytes).
fn spend(reply: &Reply) -> usize {
    if tokens::is_estimated(reply.size()) {
        return tokens::estimate(reply.size());
    }
    let w = reply.written();
    tokens::count_reply(w, Encoding::Cl100k).unwrap_or(w.len() / 4 + 1)
}

/// Ask the author for a turn and repair it, within the policy's bounds.
pub fn drive(author: &mut dyn Author, ctx: &TurnContext, policy: RepairPolicy) -> RepairRun {
    let menu = ctx.menu();
    let mut attempts: Vec<RepairAttempt> = Vec::new();
    let mut spent = 0usize;
    let mut guided: Option<String> = None;
    let mut previous: Option<String> = None;
    let mut attempt = 0u32;
    loop {
        let ask = Ask {
            attempt,
            guided_error: guided.take(),
            previous_reply: previous.take(),
            menu: menu.clone(),
        };
        let reply = author.write(&ask);
        let turn = route(&reply, ctx);
        // An oversized reply is kept only in part (never stored whole on the Bus).
        let written = super::admit::kept(&reply).to_string();
        let tokens = spend(&reply);
        spent = spent.saturating_add(tokens);
        let class = turn.class();
        if let Some(last) = attempts.last_mut() {
            last.next_parsed = Some(class == TurnClass::Authored);
        }
        let errors = turn.outcome.errors().to_vec();
        let g = if errors.is_empty() {
            None
        } else {
            Some(guided_text(&errors))
        };
        attempts.push(RepairAttempt {
            attempt,
            written: written.clone(),
            outcome: turn.outcome.name().to_string(),
            errors,
            guided: g.clone(),
            tokens,
            next_parsed: None,
            retries: Vec::new(),
            usage: None,
        });
        if class != TurnClass::Invalid {
            return RepairRun {
                turn,
                attempts,
                re_asks: attempt,
                tokens_spent: spent,
                fail_closed: None,
            };
        }
        let why = if attempt >= policy.repair_budget {
            Some(Spent::RepairBudget)
        } else if policy.authoring_token_budget.is_some_and(|b| spent >= b) {
            Some(Spent::TokenBudget)
        } else {
            None
        };
        if let Some(why) = why {
            return RepairRun {
                turn: RoutedTurn::fail_closed(ctx),
                attempts,
                re_asks: attempt,
                tokens_spent: spent,
                fail_closed: Some(why),
            };
        }
        guided = g;
        previous = Some(written);
        attempt += 1;
    }
}
