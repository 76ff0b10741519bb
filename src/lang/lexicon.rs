//! The word lists of the language, in one place: the parser ([`super::syntax`]), its guided
//! messages and the constrained-decoding grammars ([`super::grammar`]) all read these tables,
//! so a keyword added here reaches every one of them. The anchor and series tables live on
//! the model types ([`AnchorKind::ALL`], [`SIMPLE_SERIES`]) because the parser maps words to
//! those types; they are re-exported here so the grammar has a single place to look.
//!
//! Tests in `grammar.rs` parse one sample line per entry of every table with the real parser,
//! so a table that drifts from the parser fails the build's tests, not a model's generation.

pub use super::ast::{AnchorKind, PANE_CATALOG, SIMPLE_SERIES};
pub use super::diag::RESERVED_WORDS;

/// Statement head keywords allowed in files and turns (column 1, upper case).
pub const STATEMENT_KEYWORDS: &[&str] = &[
    "IMPORT", "USING", "VIEW", "WAKE", "PLAN", "POD", "BOOK", "GRADE",
];

/// Turn directive head keywords (LANGUAGE.md §4). `SHOW` is always followed by `VIEW`.
pub const DIRECTIVE_KEYWORDS: &[&str] = &["STAND-DOWN", "SHOW", "CANCEL"];

/// PLAN clause keywords (indented two spaces under a PLAN), in the order of LANGUAGE.md §3.1.
pub const CLAUSE_KEYWORDS: &[&str] = &[
    "USING",
    "WHEN",
    "DO",
    "ALSO",
    "RELOAD",
    "TP",
    "EXIT",
    "INVALIDATE",
    "CANCEL-IF",
    "ARM",
];

/// Ticket modifiers that take no argument.
pub const FLAG_MODIFIERS: &[&str] = &["peg", "fix"];
/// Ticket modifiers that take one price (`cap <price>`, `floor <price>`).
pub const PRICE_MODIFIERS: &[&str] = &["cap", "floor"];
/// The escalation modifier: `esc <price> <dur>` (repeatable).
pub const ESC_MODIFIER: &str = "esc";
/// The line-level cancel modifier: `cancel-if <trigger>` (ends the line).
pub const CANCEL_IF_MODIFIER: &str = "cancel-if";

/// Order sides.
pub const SIDES: &[&str] = &["buy", "sell"];
/// Option rights.
pub const RIGHTS: &[&str] = &["C", "P"];
/// The at-the-money strike word.
pub const ATM: &str = "ATM";
/// The share instrument word.
pub const SHARES: &str = "shares";

/// Two-price functions: `min(a, b)`, `max(a, b)` (case-insensitive).
pub const PRICE_PAIR_FUNCTIONS: &[&str] = &["min", "max"];
/// The weighted price function `lean(a, b, w)` (case-insensitive).
pub const LEAN: &str = "lean";
/// The minimum-tick price word (case-insensitive).
pub const STUB: &str = "stub";
/// Offset units after an anchor offset: cents, percent (bare = price units).
pub const OFFSET_UNITS: &[&str] = &["c", "%"];

/// Trigger connectives.
pub const OR: &str = "OR";
pub const AND: &str = "AND";
pub const NOT: &str = "NOT";
/// Comparison operators, longest first (the parser tries them in this order).
pub const CMP_OPS: &[&str] = &[">=", "<=", ">", "<"];
/// `crosses above|below`.
pub const CROSSES: &str = "crosses";
pub const CROSS_DIRS: &[&str] = &["above", "below"];
/// `phase open|close`.
pub const PHASE: &str = "phase";
pub const PHASES: &[&str] = &["open", "close"];
/// `plan(<name>).fired|filled`.
pub const PLAN_EVENTS: &[&str] = &["fired", "filled"];
/// The headline event.
pub const HEADLINE: &str = "headline";
/// The series with an argument: `velocity(<dur>)` (case-insensitive).
pub const VELOCITY: &str = "velocity";
/// Duration units: seconds, minutes, hours.
pub const DUR_UNITS: &[char] = &['s', 'm', 'h'];

/// What a pane takes after its name (LANGUAGE.md §3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaneArgs {
    /// Nothing: `levels`.
    None,
    /// An optional bar duration: `tape [5m]`.
    OptBar,
    /// An expiry and optional `strikes <n>`: `chain 0dte [strikes 7]`.
    ExpiryStrikes,
    /// An expiry: `gex 0dte`.
    Expiry,
    /// A delta with `d`: `skew 25d`.
    Delta,
    /// A window duration: `velocity 1m`.
    Window,
    /// An optional `last <n>`: `blotter [last 5]`.
    OptLast,
}

/// The pane catalog with each pane's arguments, in catalog order ([`PANE_CATALOG`]).
pub const PANES: &[(&str, PaneArgs)] = &[
    ("tape", PaneArgs::OptBar),
    ("levels", PaneArgs::None),
    ("chain", PaneArgs::ExpiryStrikes),
    ("gex", PaneArgs::Expiry),
    ("skew", PaneArgs::Delta),
    ("velocity", PaneArgs::Window),
    ("kernel", PaneArgs::None),
    ("plans", PaneArgs::None),
    ("blotter", PaneArgs::OptLast),
    ("journal", PaneArgs::OptLast),
    ("headlines", PaneArgs::OptLast),
];

/// GRADE subjects.
pub const GRADE_SUBJECTS: &[&str] = &["plan", "wake", "view", "pod"];
/// GRADE counterfactuals (`VS null`, `VS ungated`).
pub const COUNTERFACTUALS: &[&str] = &["null", "ungated"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pane_table_matches_the_catalog() {
        let names: Vec<&str> = PANES.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, PANE_CATALOG);
    }
}
