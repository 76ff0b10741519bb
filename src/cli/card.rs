//! `kestrel card`: the whole language as a prompt card, within a token budget when given.

use super::turn::{EncodingArg, PhaseArg, ProfileArg};
use crate::lang::card;
use crate::tokens::{self, Encoding};
use crate::turn::Menu;

#[derive(Debug, clap::Args)]
pub struct CardArgs {
    /// Stay within this many tokens: optional sections are shortened or dropped, and the card
    /// says what was dropped.
    #[arg(long, allow_negative_numbers = true)]
    pub budget: Option<usize>,
    /// The wake whose menu the card states.
    #[arg(long, value_enum, default_value = "mid")]
    pub phase: PhaseArg,
    /// The profile whose menu the card states.
    #[arg(long, value_enum, default_value = "authoring-v2")]
    pub profile: ProfileArg,
    /// Tokenizer for the budget.
    #[arg(long, value_enum, default_value = "cl100k")]
    pub encoding: EncodingArg,
}

pub fn run(a: &CardArgs) -> i32 {
    let enc: Encoding = a.encoding.into();
    if let Err(e) = tokens::bpe(enc) {
        errln!("error code=IO message={e}");
        return 1;
    }
    let menu = Menu::for_wake(a.phase.into(), a.profile.into(), 0).prompt_text();
    let count = |s: &str| tokens::count(s, enc).unwrap_or(usize::MAX / 2);
    match card::build(&menu, a.budget, &count) {
        Ok(c) => {
            {
                use std::io::Write as _;
                let _ = write!(std::io::stdout().lock(), "{}", c.text);
            }
            if c.dropped.is_empty() {
                errln!("card: {} tokens ({})", c.tokens, enc.name());
            } else {
                errln!(
                    "card: {} tokens ({}); dropped: {}",
                    c.tokens,
                    enc.name(),
                    c.dropped.join("; ")
                );
            }
            0
        }
        Err(e) => {
            errln!("error code=USAGE message={e}");
            1
        }
    }
}
