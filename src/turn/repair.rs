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

impl Ask {
    /// The re-ask text sent to the author (`None` on the first ask, where the profile's
    /// prompt and the View are sent instead).
    pub fn repair_prompt(&self) -> Option<String> {
        let err = self.guided_error.as_deref()?;
        let prev = self.previous_reply.as_deref().unwrap_or("");
        Some(format!(
            "Your reply was refused; nothing was armed.\n{err}\n\nYour reply was:\n{prev}\n\nThe menu is {}.\nReply again with the whole turn, corrected.\n",
            self.menu.describe()
        ))
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
    /// Did a refused reply get repaired into an authored turn?
    pub fn repaired(&self) -> bool {
        self.re_asks > 0 && self.turn.class() == TurnClass::Authored
    }
}

/// The output tokens a reply spends ([`tokens::count_reply`]: an oversized reply is not
/// metered and is charged one token per byte).
fn spend(reply: &Reply) -> usize {
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
