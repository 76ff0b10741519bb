//! `kestrel grammar`: print the constrained-decoding grammar (docs/grammar.md).

use crate::lang::grammar::{self, GrammarFormat, GrammarOptions, GrammarScope};
use clap::ValueEnum;

/// Output format of `kestrel grammar`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// GBNF: llama.cpp's `grammar` request field (xgrammar reads it too).
    Gbnf,
    /// Lark in llguidance's dialect.
    Lark,
}

/// What the grammar covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scope {
    /// An author's turn: one directive, or a module of statements, or only comments.
    Turn,
    /// A `.kestrel` file: statements without directives.
    File,
}

/// Print the grammar generated from the parser's syntax definitions.
///
/// Example: kestrel grammar --format gbnf --scope turn > kestrel-turn.gbnf
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// gbnf or lark.
    #[arg(long, value_enum, default_value = "gbnf")]
    pub format: Format,
    /// turn or file.
    #[arg(long, value_enum, default_value = "turn")]
    pub scope: Scope,
    /// Longest free text (a comment, a STAND-DOWN reason) in characters.
    #[arg(long, allow_negative_numbers = true, default_value_t = GrammarOptions::default().free_text_max)]
    pub free_text_max: u32,
    /// Longest run of spaces, digits or name characters.
    #[arg(long, allow_negative_numbers = true, default_value_t = GrammarOptions::default().run_max)]
    pub run_max: u32,
}

/// The grammar's bounds, or the usage message saying which is out of range: each is at
/// least 1, and at most its limit ([`MAX_GRAMMAR_FREE_TEXT`], [`MAX_GRAMMAR_RUN`]): a server
/// expands a bounded repetition into that many rules, so `{0,4294967295}` (taken before)
/// would take the server receiving it down. `names` are the two bounds as the caller spells
/// them (`--free-text-max`, `free_text_max`).
///
/// [`MAX_GRAMMAR_FREE_TEXT`]: crate::limits::MAX_GRAMMAR_FREE_TEXT
/// [`MAX_GRAMMAR_RUN`]: crate::limits::MAX_GRAMMAR_RUN
pub(crate) fn check_bounds(
    free_text_max: u32,
    run_max: u32,
    names: [&str; 2],
) -> Result<(), String> {
    use crate::limits::{MAX_GRAMMAR_FREE_TEXT, MAX_GRAMMAR_RUN};
    let [free, run] = names;
    if free_text_max == 0 || run_max == 0 {
        return Err(format!("{free} and {run} must be at least 1"));
    }
    for (name, v, max) in [
        (free, free_text_max, MAX_GRAMMAR_FREE_TEXT),
        (run, run_max, MAX_GRAMMAR_RUN),
    ] {
        if v > max {
            return Err(format!(
                "{name} is at most {max}, got {v}: a server expands a bounded repetition into that many rules"
            ));
        }
    }
    Ok(())
}

/// Print the grammar to stdout; exit 0, or 1 on bad bounds.
pub fn run(a: &Args) -> i32 {
    if let Err(e) = check_bounds(a.free_text_max, a.run_max, ["--free-text-max", "--run-max"]) {
        errln!("error code=USAGE message={e}");
        return 1;
    }
    let opts = GrammarOptions {
        scope: match a.scope {
            Scope::Turn => GrammarScope::Turn,
            Scope::File => GrammarScope::File,
        },
        free_text_max: a.free_text_max,
        run_max: a.run_max,
        ..GrammarOptions::default()
    };
    let format = match a.format {
        Format::Gbnf => GrammarFormat::Gbnf,
        Format::Lark => GrammarFormat::Lark,
    };
    super::out::stdout(&grammar::export(format, opts))
}
