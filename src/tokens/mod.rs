//! Token meters (TURNS.md §7): cl100k by default, o200k for newer models, via `tiktoken-rs`.
//!
//! The BPE ranks are compiled into `tiktoken-rs` (`include_str!` of its bundled assets), so
//! nothing is downloaded at run time. Each encoding is built once, on first use, and shared
//! (`OnceLock`); a failure to build is reported as an error, never a panic.

use crate::turn::{RoutedTurn, TurnClass, envelope};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;
use tiktoken_rs::CoreBPE;

/// A tokenizer encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// `cl100k_base` (GPT-4 era; the reference project's oracle).
    #[default]
    Cl100k,
    /// `o200k_base` (newer models).
    O200k,
}

impl Encoding {
    /// `cl100k` or `o200k`.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Cl100k => "cl100k",
            Encoding::O200k => "o200k",
        }
    }

    /// Look an encoding up by name (`cl100k`, `cl100k_base`, `o200k`, `o200k_base`).
    pub fn from_name(s: &str) -> Option<Encoding> {
        match s {
            "cl100k" | "cl100k_base" => Some(Encoding::Cl100k),
            "o200k" | "o200k_base" => Some(Encoding::O200k),
            _ => None,
        }
    }
}

/// The tokenizer could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenError(pub String);

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tokenizer unavailable: {}", self.0)
    }
}

impl std::error::Error for TokenError {}

static CL100K: OnceLock<Result<CoreBPE, String>> = OnceLock::new();
static O200K: OnceLock<Result<CoreBPE, String>> = OnceLock::new();

/// The shared tokenizer for an encoding, built on first use.
pub fn bpe(enc: Encoding) -> Result<&'static CoreBPE, TokenError> {
    let cell = match enc {
        Encoding::Cl100k => {
            CL100K.get_or_init(|| tiktoken_rs::cl100k_base().map_err(|e| e.to_string()))
        }
        Encoding::O200k => {
            O200K.get_or_init(|| tiktoken_rs::o200k_base().map_err(|e| e.to_string()))
        }
    };
    cell.as_ref().map_err(|e| TokenError(e.clone()))
}

/// Tokens in a text (special-token spellings count as ordinary text).
///
/// Exact for every text whose lines are at most [`MAX_METERED_RUN`] bytes. BPE on one long
/// run without a break costs far more per byte than on words (a megabyte of one word took
/// seconds), so a text with a longer line is metered line by line, and each such line in
/// chunks of [`MAX_METERED_RUN`] bytes: the count is then close, not exact, and the work is
/// bounded by the text's length.
pub fn count(text: &str, enc: Encoding) -> Result<usize, TokenError> {
    let bpe = bpe(enc)?;
    if text.split('\n').all(|l| l.len() <= MAX_METERED_RUN) {
        return Ok(bpe.encode_ordinary(text).len());
    }
    let mut n = 0usize;
    for line in text.split_inclusive('\n') {
        let mut rest = line;
        while !rest.is_empty() {
            let chunk = crate::limits::prefix(rest, MAX_METERED_RUN.max(4));
            // A chunk is never empty: a character is at most 4 bytes.
            let chunk = if chunk.is_empty() { rest } else { chunk };
            n += bpe.encode_ordinary(chunk).len();
            rest = &rest[chunk.len()..];
        }
    }
    Ok(n)
}

use crate::limits::MAX_METERED_RUN;

/// The tokens a reply spends: metered within the reply limit
/// ([`MAX_REPLY_BYTES`](crate::limits::MAX_REPLY_BYTES)); an oversized reply is refused
/// unread, so it is not metered either (that would be the expensive work the limit
/// prevents) and is charged an estimate, [`estimate`] of its bytes (see [`is_estimated`]).
/// The estimate is past 65,536 tokens, so it still spends the default authoring token budget
/// at once. Before 2026-12-05 such a reply was charged one token per byte: the desk showed a
/// 9,489,024-byte reply as `9489024 tok`, its bytes under the name of tokens.
pub fn count_reply(text: &str, enc: Encoding) -> Result<usize, TokenError> {
    if is_estimated(text.len()) {
        Ok(estimate(text.len()))
    } else {
        count(text, enc)
    }
}

/// The tokens of `bytes` bytes of text not metered: one token per four bytes, rounded up
/// (cl100k's usual yield on English and code; the figure is labelled an estimate wherever
/// it is shown).
pub fn estimate(bytes: usize) -> usize {
    bytes.div_ceil(4)
}

/// Is a reply of `bytes` bytes charged an [`estimate`] rather than metered (it is past
/// [`MAX_REPLY_BYTES`](crate::limits::MAX_REPLY_BYTES), refused unread)?
pub fn is_estimated(bytes: usize) -> bool {
    bytes > crate::limits::MAX_REPLY_BYTES
}

/// The token figures of one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnTokens {
    /// The encoding counted with.
    pub encoding: Encoding,
    /// The reply as written (whole file, fences and prose included).
    pub reply: usize,
    /// The turn's canonical Kestrel text (`None` when the turn has none).
    pub kestrel: Option<usize>,
    /// The same turn printed as the compact JSON envelope.
    pub envelope: Option<usize>,
    /// `envelope - kestrel`: what envelope-free saved on this turn.
    pub saving: Option<i64>,
    /// The saving as a percentage of the envelope.
    pub saving_pct: Option<f64>,
    /// A supersede's document alone, raw (no own-line comments).
    pub document_raw: Option<usize>,
    /// The same document as a JSON string (quoted, `\n` and `"` escaped).
    pub document_escaped: Option<usize>,
}

impl TurnTokens {
    /// The figures as `kestrel turn --json` and MCP `route_turn` give them, with
    /// `reply_estimated`: a reply of `reply_bytes` past the reply limit is refused unread,
    /// and its `reply` figure is the [`estimate`] the repair loop charges, not a count.
    pub fn json(&self, reply_bytes: usize) -> serde_json::Value {
        let mut v = self.figures_json();
        if let serde_json::Value::Object(m) = &mut v {
            m.insert(
                "reply_estimated".into(),
                serde_json::Value::Bool(is_estimated(reply_bytes)),
            );
        }
        v
    }
}

impl TurnTokens {
    /// The figures as `kestrel tokens --json` gives them: `saving_pct` an exact 4-decimal
    /// rounding of `saving / envelope` (as `errors report --json` gives its rates), not the
    /// float's every digit (`19.767441860465116` before 2026-12-06).
    pub fn figures_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if let (serde_json::Value::Object(m), Some(s), Some(e)) =
            (&mut v, self.saving, self.envelope)
        {
            let pct = match e {
                0 => serde_json::Value::from(0),
                e => crate::turn::report::ratio4(
                    100 * i128::from(s),
                    i128::try_from(e).unwrap_or(i128::MAX),
                ),
            };
            m.insert("saving_pct".into(), pct);
        }
        v
    }
}

/// The text a model would emit for the canonical Kestrel: no final newline (the envelope has
/// none either).
pub fn kestrel_emitted(turn: &RoutedTurn) -> Option<&str> {
    if turn.class() == TurnClass::Authored {
        Some(turn.kestrel.trim_end_matches('\n'))
    } else {
        None
    }
}

/// Measure one turn: the reply, its canonical Kestrel, its envelope projection, the saving,
/// and a supersede's escaping cost.
pub fn measure(reply: &str, turn: &RoutedTurn, enc: Encoding) -> Result<TurnTokens, TokenError> {
    let c = |s: &str| count(s, enc);
    let kestrel = kestrel_emitted(turn).map(c).transpose()?;
    let envelope = envelope::project(turn).map(|s| c(&s)).transpose()?;
    let (saving, saving_pct) = match (kestrel, envelope) {
        (Some(k), Some(e)) => {
            let s = e as i64 - k as i64;
            let pct = if e > 0 {
                100.0 * s as f64 / e as f64
            } else {
                0.0
            };
            (Some(s), Some(pct))
        }
        _ => (None, None),
    };
    let doc = envelope::document_payload(turn);
    let document_raw = doc.as_deref().map(c).transpose()?;
    let document_escaped = doc
        .as_deref()
        .map(|d| c(&serde_json::Value::String(d.to_string()).to_string()))
        .transpose()?;
    Ok(TurnTokens {
        encoding: enc,
        reply: count_reply(reply, enc)?,
        kestrel,
        envelope,
        saving,
        saving_pct,
        document_raw,
        document_escaped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_known_text() {
        // "hello world" is two tokens in both encodings.
        assert_eq!(count("hello world", Encoding::Cl100k), Ok(2));
        assert_eq!(count("hello world", Encoding::O200k), Ok(2));
        assert_eq!(count("", Encoding::Cl100k), Ok(0));
        // Special-token spellings are ordinary text, not a panic.
        assert!(count("<|endoftext|>", Encoding::Cl100k).is_ok_and(|n| n > 1));
    }
}
