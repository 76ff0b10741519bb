//! Resource limits: every bound the desk enforces on untrusted input, in one place.
//!
//! A limit is not grammar (the exported grammar never mentions one): it is how much work the
//! desk agrees to do for one input. Each limit is checked *before* the work it bounds, and a
//! refusal is a coded error like any other (docs/limits.md lists each limit, its error and
//! the test that shows it).
//!
//! The values are generous for real use and small enough that the worst input of each kind
//! costs well under a second:
//!
//! | limit | value | why this value |
//! | --- | --- | --- |
//! | [`MAX_NESTING`] | 64 | real triggers nest 2–4 deep; every recursive walk of the model (check, print, engine) stays far inside a 2 MiB thread stack |
//! | [`MAX_DOCUMENT_BYTES`] | 8 MiB | the largest `.kestrel` file or Bus-embedded document; ~80,000 plan lines |
//! | [`MAX_STATEMENTS`] | 1,000 | statements (PLAN, VIEW, WAKE, ...) per document: a real book holds tens |
//! | [`MAX_REPLY_BYTES`] | 256 KiB | one author reply: a turn is a few KiB; 256 KiB is ~64,000 tokens |
//! | [`MAX_METERED_RUN`] | 64 KiB | the token meter reads a line (a run without `\n`) longer than this in chunks of this size |
//! | [`KEPT_REPLY_BYTES`] | 4 KiB | what is kept of a refused oversized reply (Bus record, re-ask quote) |
//! | [`MAX_GRAMMAR_FREE_TEXT`] | 4,096 | `kestrel grammar` / MCP `grammar`'s `free_text_max`: servers expand a bounded repetition into that many rules, so `{0,4294967295}` would take the server receiving it down; a comment of 4,096 characters is already rambling (the default is 160) |
//! | [`MAX_GRAMMAR_RUN`] | 1,024 | `run_max` likewise (the default is 32) |
//! | [`MAX_RESPONSE_BYTES`] | 8 MiB | one HTTP response body, or one line or event of a stream, from a model server: a turn's JSON is at most ~1.5 MiB (256 KiB, every byte escaped) |

/// How deep groups `( )`, `NOT` and price calls `lean( min( max(` may nest in one line.
pub const MAX_NESTING: u32 = 64;

/// The largest document the parser reads, in bytes.
pub const MAX_DOCUMENT_BYTES: usize = 8 * 1024 * 1024;

/// The most statements one document may hold.
pub const MAX_STATEMENTS: usize = 1_000;

/// The largest reply an author may send for one turn, in bytes.
pub const MAX_REPLY_BYTES: usize = 256 * 1024;

/// The token meter's longest exactly-metered run: a line longer than this is metered in
/// chunks of this many bytes (BPE on one long word costs far more than on words).
pub const MAX_METERED_RUN: usize = 64 * 1024;

/// How much of an oversized reply is kept (on the Bus and in the re-ask).
pub const KEPT_REPLY_BYTES: usize = 4 * 1024;

/// The largest `free_text_max` an exported grammar takes (characters of one free text).
pub const MAX_GRAMMAR_FREE_TEXT: u32 = 4096;

/// The largest `run_max` an exported grammar takes (one run of spaces, digits or name
/// characters, or repeated list items).
pub const MAX_GRAMMAR_RUN: u32 = 1024;

/// The largest HTTP response body, or line or event of a stream, read from a model server.
pub const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

/// The first `max` bytes of `s`, cut back to a character boundary.
pub(crate) fn prefix(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_cuts_on_a_char_boundary() {
        assert_eq!(prefix("abc", 10), "abc");
        assert_eq!(prefix("abc", 2), "ab");
        // `é` is two bytes: a cut inside it backs off to before it.
        assert_eq!(prefix("aé", 2), "a");
        assert_eq!(prefix("", 0), "");
    }
}
