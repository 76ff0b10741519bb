//! Checking text against an exported Lark grammar with llguidance, byte by byte: a
//! single-byte tokenizer (token id = byte value) so acceptance is about the text alone.
#![allow(dead_code)]

use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::ApproximateTokEnv;
use llguidance::{Matcher, ParserFactory};

/// A compiled Lark grammar; each check runs on a fresh clone of the start state.
pub struct Lark {
    fresh: Matcher,
}

impl Lark {
    /// Compile `lark` (panics with llguidance's message if it does not compile: a test).
    pub fn new(lark: &str) -> Lark {
        let env = ApproximateTokEnv::single_byte_env();
        let mut factory = ParserFactory::new_simple(&env).expect("llguidance factory");
        factory.quiet();
        let parser = factory.create_parser(TopLevelGrammar::from_lark(lark.to_string()));
        let fresh = Matcher::new(parser);
        if let Some(e) = fresh.get_error() {
            panic!("the exported Lark grammar does not compile: {e}");
        }
        Lark { fresh }
    }

    /// Does the grammar accept exactly `text`?
    pub fn accepts(&self, text: &str) -> bool {
        let mut m = self.fresh.deep_clone();
        let toks: Vec<u32> = text.bytes().map(u32::from).collect();
        if m.consume_tokens(&toks).is_err() {
            return false;
        }
        m.is_accepting().unwrap_or(false)
    }

    /// How many bytes of `text` the grammar follows before it refuses one (`text.len()` when
    /// it follows all of them).
    pub fn prefix_len(&self, text: &str) -> usize {
        let mut m = self.fresh.deep_clone();
        for (i, b) in text.bytes().enumerate() {
            if m.consume_token(u32::from(b)).is_err() {
                return i;
            }
        }
        text.len()
    }
}
