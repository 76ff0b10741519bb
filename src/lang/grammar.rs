//! The Kestrel grammar as data, for decode-time constraint (LANGUAGE.md §8).
//!
//! [`grammar`] builds one rule table (rule name → a [`Term`] tree of literals, character
//! classes, bounded free text, rule references, sequences, alternatives and bounded
//! repetition) from the same word tables the parser reads ([`super::lexicon`]). Two exporters
//! write it out: [`to_gbnf`] (llama.cpp's `grammar` field, also read by xgrammar) and
//! [`to_lark`] (llguidance's Lark dialect). Nothing here is maintained beside the parser by
//! hand: the keyword, pane, anchor, series and modifier words all come from the shared tables,
//! and the tests check the exported grammar against the parser on the corpus, the examples,
//! generated documents and mutations of them.
//!
//! The grammar is **character-level**: every terminal is one character (a literal is a
//! sequence of one-character terminals), except free text, which is one bounded run (and, in
//! the Lark export, runs of blanks and the two-space indentation, each one lexeme: see
//! [`to_lark`]). That is deliberate. llguidance lexes greedily without backtracking, so two multi-character
//! terminals that share a prefix at the same position (say the symbol `NOTE.spot` against the
//! keyword `NOT`) would make it refuse text the parser accepts. With one-character terminals
//! there is nothing to split, and the GBNF and Lark exports are the same grammar.
//!
//! The language of the grammar is the parser's `syntax`-level language intersected with the
//! bounds in [`GrammarOptions`]: free text (comments, the STAND-DOWN reason) is at most
//! `free_text_max` characters, and every other unbounded run (spaces, digits, name characters,
//! repeated list items) at most `run_max`, so a constrained generation cannot ramble past its
//! token budget inside one field (seed 001). Semantic rules (§6) stay post-parse: a CFG
//! cannot see them, and the grammar does not try.

use super::lexicon::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One character class: a set of character ranges, or its complement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CharClass {
    /// When true the class matches every character *not* in `ranges`.
    pub negated: bool,
    /// Inclusive character ranges.
    pub ranges: Vec<(char, char)>,
}

impl CharClass {
    /// The class of the given ranges.
    pub fn of(ranges: &[(char, char)]) -> CharClass {
        CharClass {
            negated: false,
            ranges: ranges.to_vec(),
        }
    }

    /// Every character except the given ranges.
    pub fn not(ranges: &[(char, char)]) -> CharClass {
        CharClass {
            negated: true,
            ranges: ranges.to_vec(),
        }
    }

    /// Does the class match `c`?
    pub fn matches(&self, c: char) -> bool {
        self.ranges.iter().any(|&(a, b)| a <= c && c <= b) != self.negated
    }
}

/// A grammar expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    /// Exact text.
    Lit(String),
    /// Text matched ASCII-case-insensitively (anchors, series, price functions).
    LitCi(String),
    /// One character of a class.
    Class(CharClass),
    /// Free text: zero to `max` characters of a class (comments, the STAND-DOWN reason).
    Text(CharClass, u32),
    /// A reference to another rule.
    Ref(String),
    /// A sequence.
    Seq(Vec<Term>),
    /// Alternatives.
    Alt(Vec<Term>),
    /// Repetition: at least `min`, at most `max` (`None`: unbounded).
    Rep(Box<Term>, u32, Option<u32>),
}

/// One named rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// snake_case name (GBNF writes it kebab-case).
    pub name: String,
    pub body: Term,
}

/// Which surface the grammar covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GrammarScope {
    /// An author's turn (TURNS.md §1): either one directive (STAND-DOWN, SHOW VIEW, CANCEL)
    /// with comments and blank lines around it, or a module of statements (or nothing but
    /// comments: a pass).
    #[default]
    Turn,
    /// A `.kestrel` file: statements, comments and blank lines; no directives.
    File,
}

/// Bounds that make the exported grammar safe to constrain a generation with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrammarOptions {
    pub scope: GrammarScope,
    /// Longest free text in characters: a comment after its `#`, a STAND-DOWN reason, the
    /// blanks before a trailing comment.
    pub free_text_max: u32,
    /// Longest run of anything else the parser leaves unbounded: spaces, digits, name and
    /// symbol characters, repeated list items.
    pub run_max: u32,
}

impl Default for GrammarOptions {
    fn default() -> Self {
        GrammarOptions {
            scope: GrammarScope::Turn,
            free_text_max: 160,
            run_max: 32,
        }
    }
}

/// A grammar: rules in order, the first is the start rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grammar {
    pub options: GrammarOptions,
    pub rules: Vec<Rule>,
}

impl Grammar {
    /// The rule of that name.
    pub fn rule(&self, name: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.name == name)
    }

    /// Every literal in the grammar (case-sensitive and case-insensitive), for coverage
    /// checks against the lexicon.
    pub fn literals(&self) -> Vec<String> {
        fn walk(t: &Term, out: &mut Vec<String>) {
            match t {
                Term::Lit(s) | Term::LitCi(s) => out.push(s.clone()),
                Term::Seq(v) | Term::Alt(v) => v.iter().for_each(|x| walk(x, out)),
                Term::Rep(x, _, _) => walk(x, out),
                _ => {}
            }
        }
        let mut out = Vec::new();
        for r in &self.rules {
            walk(&r.body, &mut out);
        }
        out
    }
}

// ---------------------------------------------------------------- building blocks

fn lit(s: &str) -> Term {
    Term::Lit(s.to_string())
}
fn ci(s: &str) -> Term {
    Term::LitCi(s.to_string())
}
fn r(name: &str) -> Term {
    Term::Ref(name.to_string())
}
fn seq(v: Vec<Term>) -> Term {
    Term::Seq(v)
}
fn alt(v: Vec<Term>) -> Term {
    Term::Alt(v)
}
fn opt(t: Term) -> Term {
    Term::Rep(Box::new(t), 0, Some(1))
}
fn star(t: Term) -> Term {
    Term::Rep(Box::new(t), 0, None)
}
fn rep(t: Term, min: u32, max: u32) -> Term {
    Term::Rep(Box::new(t), min, Some(max))
}
fn class(ranges: &[(char, char)]) -> Term {
    Term::Class(CharClass::of(ranges))
}
fn not_class(ranges: &[(char, char)]) -> Term {
    Term::Class(CharClass::not(ranges))
}
/// Alternatives of literals from a table.
fn words(ws: &[&str]) -> Term {
    alt(ws.iter().map(|w| lit(w)).collect())
}
/// Alternatives of case-insensitive literals from a table.
fn words_ci<'a>(ws: impl IntoIterator<Item = &'a str>) -> Term {
    alt(ws.into_iter().map(ci).collect())
}
/// A word that must be in `table` (the parser's table); the grammar takes the table's copy.
fn from(table: &[&'static str], w: &str) -> Term {
    lit(table.iter().find(|t| **t == w).copied().unwrap_or(w))
}

/// The characters `char::is_whitespace` accepts (Unicode White_Space), which end a token
/// for the parser's `next_token`.
const WHITESPACE: &[(char, char)] = &[
    ('\u{9}', '\u{d}'),
    (' ', ' '),
    ('\u{85}', '\u{85}'),
    ('\u{a0}', '\u{a0}'),
    ('\u{1680}', '\u{1680}'),
    ('\u{2000}', '\u{200a}'),
    ('\u{2028}', '\u{2029}'),
    ('\u{202f}', '\u{202f}'),
    ('\u{205f}', '\u{205f}'),
    ('\u{3000}', '\u{3000}'),
];

/// Characters that end a token after its first character (`next_token`).
const TOKEN_PUNCT: &[(char, char)] = &[('(', ')'), (',', ','), ('{', '{'), ('}', '}'), ('@', '@')];

fn ws_plus(extra: &[(char, char)]) -> Vec<(char, char)> {
    let mut v = WHITESPACE.to_vec();
    v.extend_from_slice(extra);
    v
}

struct B {
    rules: Vec<Rule>,
}

impl B {
    fn def(&mut self, name: &str, body: Term) {
        self.rules.push(Rule {
            name: name.to_string(),
            body,
        });
    }
}

/// Build the grammar for `opts`.
pub fn grammar(opts: GrammarOptions) -> Grammar {
    let n = opts.run_max.max(1);
    let text_max = opts.free_text_max;
    let mut b = B { rules: Vec::new() };
    let digit = || class(&[('0', '9')]);

    // ------------------------------------------------------------ documents and lines
    match opts.scope {
        GrammarScope::Turn => {
            b.def("start", alt(vec![r("module"), r("directive_turn")]));
        }
        GrammarScope::File => b.def("start", r("module")),
    }
    b.def(
        "module",
        seq(vec![r("unit"), star(seq(vec![lit("\n"), r("unit")]))]),
    );
    b.def("unit", alt(vec![r("trivia"), r("statement")]));
    if opts.scope == GrammarScope::Turn {
        b.def(
            "directive_turn",
            seq(vec![
                star(seq(vec![r("trivia"), lit("\n")])),
                r("directive"),
                star(seq(vec![lit("\n"), r("trivia")])),
            ]),
        );
        b.def(
            "directive",
            alt(vec![
                seq(vec![r("stand_down"), r("line_end")]),
                seq(vec![r("cancel"), r("line_end")]),
                r("show_view_block"),
            ]),
        );
    }
    b.def(
        "statement",
        alt(vec![
            r("plan_block"),
            r("view_block"),
            r("grade_block"),
            seq(vec![
                alt(vec![
                    r("import"),
                    r("using"),
                    r("wake"),
                    r("pod"),
                    r("book"),
                ]),
                r("line_end"),
            ]),
        ]),
    );
    let block = |head: &str, body: &str| {
        seq(vec![
            r(head),
            r("line_end"),
            star(seq(vec![lit("\n"), alt(vec![r(body), r("trivia")])])),
        ])
    };
    b.def("plan_block", block("plan", "clause_line"));
    b.def("view_block", block("view", "pane_line"));
    if opts.scope == GrammarScope::Turn {
        b.def("show_view_block", block("show_view", "pane_line"));
    }
    b.def("grade_block", block("grade", "grade_clause_line"));
    b.def("trivia", alt(vec![r("blank"), r("comment_line")]));
    let space_tab = || class(&[(' ', ' '), ('\t', '\t')]);
    b.def("blank", seq(vec![rep(space_tab(), 0, n), opt(lit("\r"))]));
    b.def(
        "comment_line",
        seq(vec![rep(space_tab(), 0, n), r("comment"), opt(lit("\r"))]),
    );
    b.def(
        "comment",
        seq(vec![
            lit("#"),
            Term::Text(CharClass::not(&[('\n', '\n')]), text_max),
        ]),
    );
    // The end of a code line: trailing blanks, an optional trailing comment, a CR. The gap
    // before a trailing comment is often aligned to a column, so it shares the free-text bound.
    b.def(
        "line_end",
        seq(vec![
            rep(space_tab(), 0, text_max.max(1)),
            opt(r("comment")),
            opt(lit("\r")),
        ]),
    );
    b.def("sp", rep(lit(" "), 1, n));
    b.def("sp0", rep(lit(" "), 0, n));
    b.def("indent", lit("  "));

    // ------------------------------------------------------------ lexical
    b.def("nat", rep(digit(), 1, n));
    b.def(
        "unsigned",
        seq(vec![r("nat"), opt(seq(vec![lit("."), r("nat")]))]),
    );
    b.def("number", seq(vec![opt(lit("-")), r("unsigned")]));
    b.def("risk", seq(vec![r("number"), lit("R")]));
    let units: Vec<(char, char)> = DUR_UNITS.iter().map(|&c| (c, c)).collect();
    b.def("dur", seq(vec![r("nat"), class(&units)]));
    b.def(
        "clock",
        seq(vec![
            alt(vec![
                seq(vec![class(&[('0', '1')]), digit()]),
                seq(vec![lit("2"), class(&[('0', '3')])]),
            ]),
            lit(":"),
            class(&[('0', '5')]),
            digit(),
        ]),
    );
    b.def(
        "name",
        seq(vec![
            class(&[('a', 'z')]),
            rep(class(&[('a', 'z'), ('0', '9'), ('-', '-')]), 0, n),
        ]),
    );
    let sym_char = || class(&[('A', 'Z'), ('0', '9')]);
    b.def(
        "sym",
        seq(vec![
            class(&[('A', 'Z')]),
            rep(sym_char(), 0, n),
            rep(seq(vec![lit("."), rep(sym_char(), 1, n)]), 0, n),
        ]),
    );
    b.def(
        "expiry",
        alt(vec![
            seq(vec![r("nat"), lit("dte")]),
            seq(vec![
                rep(digit(), 4, 4),
                lit("-"),
                alt(vec![
                    seq(vec![lit("0"), class(&[('1', '9')])]),
                    seq(vec![lit("1"), class(&[('0', '2')])]),
                ]),
                lit("-"),
                alt(vec![
                    seq(vec![lit("0"), class(&[('1', '9')])]),
                    seq(vec![class(&[('1', '2')]), digit()]),
                    seq(vec![lit("3"), class(&[('0', '1')])]),
                ]),
            ]),
        ]),
    );
    b.def(
        "key",
        seq(vec![
            class(&[('a', 'z')]),
            rep(
                class(&[('a', 'z'), ('0', '9'), ('_', '_'), ('.', '.'), ('-', '-')]),
                0,
                n,
            ),
        ]),
    );

    // ------------------------------------------------------------ prices
    b.def("anchor", words_ci(AnchorKind::ALL.iter().map(|(w, _)| *w)));
    let unit_terms: Vec<Term> = OFFSET_UNITS.iter().map(|u| lit(u)).collect();
    b.def(
        "offset",
        seq(vec![
            class(&[('+', '+'), ('-', '-')]),
            r("unsigned"),
            opt(alt(unit_terms)),
        ]),
    );
    b.def("comma", seq(vec![r("sp0"), lit(","), r("sp0")]));
    b.def(
        "price",
        alt(vec![
            r("unsigned"),
            ci(STUB),
            seq(vec![r("anchor"), opt(r("offset"))]),
            seq(vec![
                ci(LEAN),
                lit("("),
                r("sp0"),
                r("price"),
                r("comma"),
                r("price"),
                r("comma"),
                r("number"),
                r("sp0"),
                lit(")"),
            ]),
            seq(vec![
                words_ci(PRICE_PAIR_FUNCTIONS.iter().copied()),
                lit("("),
                r("sp0"),
                r("price"),
                r("comma"),
                r("price"),
                r("sp0"),
                lit(")"),
            ]),
        ]),
    );

    // ------------------------------------------------------------ tickets
    b.def(
        "modifier",
        alt(vec![
            words(FLAG_MODIFIERS),
            seq(vec![
                lit(ESC_MODIFIER),
                r("sp"),
                r("price"),
                r("sp"),
                r("dur"),
            ]),
            seq(vec![words(PRICE_MODIFIERS), r("sp"), r("price")]),
        ]),
    );
    b.def(
        "modifiers",
        seq(vec![
            star(seq(vec![r("sp"), r("modifier")])),
            opt(seq(vec![
                r("sp"),
                lit(CANCEL_IF_MODIFIER),
                r("sp"),
                r("trigger"),
            ])),
        ]),
    );
    b.def(
        "strike",
        alt(vec![
            lit(ATM),
            seq(vec![class(&[('+', '+'), ('-', '-')]), r("unsigned")]),
            r("unsigned"),
        ]),
    );
    b.def(
        "instrument",
        alt(vec![
            lit(SHARES),
            seq(vec![r("strike"), r("sp"), words(RIGHTS)]),
        ]),
    );
    b.def(
        "ticket",
        seq(vec![
            words(SIDES),
            r("sp"),
            r("number"),
            r("sp"),
            r("instrument"),
            r("sp"),
            lit("@"),
            r("sp"),
            r("price"),
            r("modifiers"),
        ]),
    );

    // ------------------------------------------------------------ triggers
    b.def(
        "trigger",
        seq(vec![
            r("and_term"),
            star(seq(vec![r("sp"), lit(OR), r("sp"), r("and_term")])),
        ]),
    );
    b.def(
        "and_term",
        seq(vec![
            r("unary"),
            star(seq(vec![r("sp"), lit(AND), r("sp"), r("unary")])),
        ]),
    );
    b.def(
        "unary",
        alt(vec![
            seq(vec![lit(NOT), r("sp"), r("unary")]),
            seq(vec![lit("("), r("sp0"), r("trigger"), r("sp0"), lit(")")]),
            r("predicate"),
        ]),
    );
    b.def(
        "within",
        seq(vec![r("sp"), lit("within"), r("sp"), r("dur")]),
    );
    b.def("held", seq(vec![r("sp"), lit("held"), r("sp"), r("dur")]));
    b.def(
        "predicate",
        alt(vec![
            seq(vec![lit("T-"), r("nat")]),
            seq(vec![lit(PHASE), r("sp"), words(PHASES)]),
            seq(vec![
                lit("plan("),
                r("name"),
                lit(")."),
                words(PLAN_EVENTS),
                opt(r("within")),
            ]),
            seq(vec![lit(HEADLINE), opt(r("within"))]),
            seq(vec![
                r("series"),
                r("sp"),
                lit(CROSSES),
                r("sp"),
                words(CROSS_DIRS),
                r("sp"),
                r("value"),
                opt(r("held")),
            ]),
            seq(vec![
                r("series"),
                r("sp"),
                words(CMP_OPS),
                r("sp"),
                r("value"),
                opt(r("held")),
            ]),
        ]),
    );
    b.def(
        "series",
        alt(vec![
            seq(vec![r("sym"), lit(".s"), ci("pot")]),
            seq(vec![ci(VELOCITY), lit("("), r("dur"), lit(")")]),
            words_ci(SIMPLE_SERIES.iter().map(|(w, _)| *w)),
        ]),
    );
    b.def(
        "value",
        alt(vec![
            r("clock"),
            r("number"),
            seq(vec![lit("p"), r("unsigned")]),
            r("series"),
        ]),
    );

    // ------------------------------------------------------------ PLAN and its clauses
    b.def(
        "using_body",
        seq(vec![
            lit("signal"),
            r("sp"),
            r("sym"),
            r("sp"),
            lit("exec"),
            r("sp"),
            r("sym"),
            opt(seq(vec![r("sp"), r("expiry")])),
        ]),
    );
    let ck = |w: &str| from(CLAUSE_KEYWORDS, w);
    let sk = |w: &str| from(STATEMENT_KEYWORDS, w);
    let dk = |w: &str| from(DIRECTIVE_KEYWORDS, w);
    let price_tail = || seq(vec![r("sp"), lit("@"), r("sp"), r("price"), r("modifiers")]);
    b.def(
        "clause",
        alt(vec![
            seq(vec![ck("USING"), r("sp"), r("using_body")]),
            seq(vec![ck("WHEN"), r("sp"), r("trigger")]),
            seq(vec![alt(vec![ck("DO"), ck("ALSO")]), r("sp"), r("ticket")]),
            seq(vec![
                ck("RELOAD"),
                r("sp"),
                ck("WHEN"),
                r("sp"),
                r("trigger"),
                r("sp"),
                r("ticket"),
            ]),
            seq(vec![
                ck("TP"),
                r("sp"),
                r("number"),
                lit("x"),
                opt(seq(vec![r("sp"), lit("frac"), r("sp"), r("number")])),
                price_tail(),
            ]),
            seq(vec![ck("EXIT"), r("sp"), r("trigger"), opt(price_tail())]),
            seq(vec![
                ck("INVALIDATE"),
                r("sp"),
                r("trigger"),
                opt(seq(vec![
                    r("sp"),
                    lit("->"),
                    r("sp"),
                    lit("halt"),
                    opt(seq(vec![r("sp0"), lit(","), r("sp"), lit("ride")])),
                ])),
            ]),
            seq(vec![ck("CANCEL-IF"), r("sp"), r("trigger")]),
            seq(vec![ck("ARM"), r("sp"), r("name")]),
        ]),
    );
    b.def(
        "clause_line",
        seq(vec![r("indent"), r("clause"), r("line_end")]),
    );
    b.def(
        "plan",
        seq(vec![
            sk("PLAN"),
            r("sp"),
            r("name"),
            r("sp"),
            lit("budget"),
            r("sp"),
            r("risk"),
            r("sp"),
            lit("ttl"),
            r("sp"),
            alt(vec![seq(vec![lit("+"), r("dur")]), r("clock")]),
            opt(seq(vec![
                r("sp"),
                lit("regime"),
                r("sp"),
                lit("{"),
                r("sp0"),
                r("regime_entry"),
                rep(
                    seq(vec![r("sp0"), lit(","), r("sp0"), r("regime_entry")]),
                    0,
                    n,
                ),
                r("sp0"),
                lit("}"),
            ])),
            opt(seq(vec![r("sp"), lit("priority"), r("sp"), r("number")])),
        ]),
    );
    b.def(
        "regime_entry",
        seq(vec![r("key"), lit(":"), r("sp0"), r("key")]),
    );

    // ------------------------------------------------------------ VIEW / SHOW VIEW panes
    let view_rest = || {
        vec![
            r("sp"),
            r("name"),
            opt(seq(vec![r("sp"), lit("budget"), r("sp"), r("number")])),
        ]
    };
    let mut v = vec![sk("VIEW")];
    v.extend(view_rest());
    b.def("view", seq(v));
    if opts.scope == GrammarScope::Turn {
        let mut v = vec![dk("SHOW"), r("sp"), sk("VIEW")];
        v.extend(view_rest());
        b.def("show_view", seq(v));
    }
    let panes: Vec<Term> = PANES
        .iter()
        .map(|&(p, args)| {
            let last = || opt(seq(vec![r("sp"), lit("last"), r("sp"), r("number")]));
            match args {
                PaneArgs::None => lit(p),
                PaneArgs::OptBar => seq(vec![lit(p), opt(seq(vec![r("sp"), r("dur")]))]),
                PaneArgs::ExpiryStrikes => seq(vec![
                    lit(p),
                    r("sp"),
                    r("expiry"),
                    opt(seq(vec![r("sp"), lit("strikes"), r("sp"), r("number")])),
                ]),
                PaneArgs::Expiry => seq(vec![lit(p), r("sp"), r("expiry")]),
                PaneArgs::Delta => seq(vec![lit(p), r("sp"), r("number"), lit("d")]),
                PaneArgs::Window => seq(vec![lit(p), r("sp"), r("dur")]),
                PaneArgs::OptLast => seq(vec![lit(p), last()]),
            }
        })
        .collect();
    b.def("pane", alt(panes));
    b.def(
        "pane_line",
        seq(vec![r("indent"), r("pane"), r("line_end")]),
    );

    // ------------------------------------------------------------ other statements
    b.def(
        "wake",
        seq(vec![
            sk("WAKE"),
            r("sp"),
            r("name"),
            r("sp"),
            ck("WHEN"),
            r("sp"),
            r("trigger"),
            opt(seq(vec![r("sp"), lit("DELIVER"), r("sp"), r("name")])),
            opt(seq(vec![r("sp"), lit("PRIORITY"), r("sp"), r("number")])),
            opt(seq(vec![
                r("sp"),
                lit("BUDGET"),
                r("sp"),
                r("number"),
                r("sp"),
                lit("wakes/day"),
            ])),
        ]),
    );
    // IMPORT paths and GRADE globs are one parser token: any non-blank first character, then
    // characters that do not end a token; `#` always starts a comment.
    let tok_first = ws_plus(&[('#', '#')]);
    let mut tok_rest = ws_plus(&[('#', '#')]);
    tok_rest.extend_from_slice(TOKEN_PUNCT);
    b.def(
        "path",
        seq(vec![not_class(&tok_first), rep(not_class(&tok_rest), 0, n)]),
    );
    b.def(
        "import",
        seq(vec![
            sk("IMPORT"),
            r("sp"),
            r("name"),
            r("sp"),
            lit("FROM"),
            r("sp"),
            r("path"),
        ]),
    );
    b.def("using", seq(vec![sk("USING"), r("sp"), r("using_body")]));
    b.def(
        "pod",
        seq(vec![
            sk("POD"),
            r("sp"),
            r("name"),
            r("sp"),
            lit("RISK"),
            r("sp"),
            lit("day-loss"),
            r("sp"),
            r("risk"),
            r("sp"),
            lit("->"),
            r("sp"),
            lit("halt"),
        ]),
    );
    b.def(
        "book",
        seq(vec![
            sk("BOOK"),
            r("sp"),
            r("name"),
            r("sp"),
            lit("budget"),
            r("sp"),
            r("risk"),
            r("sp"),
            lit("coverage"),
            r("sp"),
            r("sym"),
            rep(seq(vec![r("sp0"), lit(","), r("sp0"), r("sym")]), 0, n),
        ]),
    );
    b.def(
        "grade",
        seq(vec![
            sk("GRADE"),
            r("sp"),
            words(GRADE_SUBJECTS),
            r("sp"),
            r("name"),
            r("sp"),
            lit("OVER"),
            r("sp"),
            alt(vec![r("months"), r("glob")]),
            r("sp"),
            lit("FILL"),
            r("sp"),
            rep(
                class(&[('a', 'z'), ('0', '9'), ('.', '.'), ('-', '-')]),
                1,
                n,
            ),
        ]),
    );
    b.def(
        "month",
        seq(vec![rep(digit(), 4, 4), lit("-"), rep(digit(), 2, 2)]),
    );
    b.def(
        "months",
        seq(vec![r("month"), opt(seq(vec![lit(".."), r("month")]))]),
    );
    // A glob is any token that does not start like a month range `YYYY-MM..`: the parser
    // reads such a token as a range and refuses it unless it is exactly `YYYY-MM..YYYY-MM`.
    // The chain g0..g8 spells "not that prefix" as a regular language.
    let rest = || rep(not_class(&tok_rest), 0, n);
    let but = |extra: &[(char, char)], first: bool| {
        let mut v = if first {
            tok_first.clone()
        } else {
            tok_rest.clone()
        };
        v.extend_from_slice(extra);
        not_class(&v)
    };
    let prefix: [Term; 9] = [
        digit(),
        digit(),
        digit(),
        digit(),
        lit("-"),
        digit(),
        digit(),
        lit("."),
        lit("."),
    ];
    let excl: [&[(char, char)]; 9] = [
        &[('0', '9')],
        &[('0', '9')],
        &[('0', '9')],
        &[('0', '9')],
        &[('-', '-')],
        &[('0', '9')],
        &[('0', '9')],
        &[('.', '.')],
        &[('.', '.')],
    ];
    for (k, (p, ex)) in prefix.into_iter().zip(excl).enumerate() {
        let name = if k == 0 {
            "glob".to_string()
        } else {
            format!("glob_{k}")
        };
        let mut alts = Vec::new();
        if k > 0 {
            alts.push(lit(""));
        }
        alts.push(seq(vec![but(ex, k == 0), rest()]));
        if k < 8 {
            alts.push(seq(vec![p, r(&format!("glob_{}", k + 1))]));
        }
        b.def(&name, alt(alts));
    }
    b.def(
        "grade_clause",
        alt(vec![
            seq(vec![lit("VS"), r("sp"), words(COUNTERFACTUALS)]),
            seq(vec![lit("BY"), r("sp"), r("key")]),
        ]),
    );
    b.def(
        "grade_clause_line",
        seq(vec![r("indent"), r("grade_clause"), r("line_end")]),
    );
    if opts.scope == GrammarScope::Turn {
        let mut sd_sep = vec![('\t', '\t'), ('\u{b}', '\r')];
        sd_sep.extend_from_slice(&WHITESPACE[1..]);
        sd_sep.extend_from_slice(TOKEN_PUNCT);
        // The reason is the rest of the line: the parser's token `STAND-DOWN` ends at a blank
        // or a token-ending character, and everything after it up to `#` is the reason.
        b.def(
            "stand_down",
            seq(vec![
                dk("STAND-DOWN"),
                opt(seq(vec![
                    Term::Class(CharClass::of(&sd_sep)),
                    Term::Text(CharClass::not(&[('\n', '\n'), ('#', '#')]), text_max),
                ])),
            ]),
        );
        b.def("cancel", seq(vec![dk("CANCEL"), r("sp"), r("name")]));
    }
    Grammar {
        options: opts,
        rules: b.rules,
    }
}

// ---------------------------------------------------------------- GBNF

fn gbnf_name(n: &str) -> String {
    if n == "start" {
        "root".to_string()
    } else {
        n.replace('_', "-")
    }
}

fn gbnf_char(c: char, in_class: bool) -> String {
    match c {
        '\n' => "\\n".into(),
        '\r' => "\\r".into(),
        '\t' => "\\t".into(),
        '\\' => "\\\\".into(),
        '"' if !in_class => "\\\"".into(),
        ']' | '[' | '^' | '-' if in_class => format!("\\{c}"),
        c if (c as u32) < 0x20 || (0x7f..=0xa0).contains(&(c as u32)) => {
            format!("\\x{:02X}", c as u32)
        }
        c if (c.is_whitespace() && c != ' ') || (c as u32) > 0xffff => {
            if (c as u32) > 0xffff {
                format!("\\U{:08X}", c as u32)
            } else {
                format!("\\u{:04X}", c as u32)
            }
        }
        c => c.to_string(),
    }
}

fn gbnf_class(c: &CharClass) -> String {
    let mut s = String::from("[");
    if c.negated {
        s.push('^');
    }
    for &(a, b) in &c.ranges {
        s.push_str(&gbnf_char(a, true));
        if b != a {
            s.push('-');
            s.push_str(&gbnf_char(b, true));
        }
    }
    s.push(']');
    s
}

fn gbnf_term(t: &Term, nested: bool) -> String {
    match t {
        Term::Lit(s) => {
            let body: String = s.chars().map(|c| gbnf_char(c, false)).collect();
            format!("\"{body}\"")
        }
        Term::LitCi(s) => {
            let parts: Vec<String> = s
                .chars()
                .map(|c| {
                    if c.is_ascii_alphabetic() {
                        format!("[{}{}]", c.to_ascii_lowercase(), c.to_ascii_uppercase())
                    } else {
                        format!("\"{}\"", gbnf_char(c, false))
                    }
                })
                .collect();
            if nested && parts.len() > 1 {
                format!("({})", parts.join(" "))
            } else {
                parts.join(" ")
            }
        }
        Term::Class(c) => gbnf_class(c),
        Term::Text(c, max) => format!("{}{{0,{max}}}", gbnf_class(c)),
        Term::Ref(n) => gbnf_name(n),
        Term::Seq(v) => group(v.iter().map(|x| gbnf_term(x, true)), " ", nested),
        Term::Alt(v) => group(v.iter().map(|x| gbnf_term(x, false)), " | ", nested),
        Term::Rep(x, min, max) => repeat(
            gbnf_term(x, true),
            matches!(**x, Term::Seq(_) | Term::Alt(_) | Term::LitCi(_)),
            *min,
            *max,
        ),
    }
}

/// Terms joined by `sep` (a sequence or alternatives), parenthesised when nested and more
/// than one (both exporters).
fn group(parts: impl Iterator<Item = String>, sep: &str, nested: bool) -> String {
    let parts: Vec<String> = parts.collect();
    let s = parts.join(sep);
    if nested && parts.len() > 1 {
        format!("({s})")
    } else {
        s
    }
}

/// A repetition with its quantifier; `compound` terms are parenthesised unless they already
/// are (both exporters).
fn repeat(inner: String, compound: bool, min: u32, max: Option<u32>) -> String {
    let inner = if compound && !inner.starts_with('(') {
        format!("({inner})")
    } else {
        inner
    };
    match (min, max) {
        (0, Some(1)) => format!("{inner}?"),
        (0, None) => format!("{inner}*"),
        (1, None) => format!("{inner}+"),
        (m, None) => format!("{inner}{{{m},}}"),
        (m, Some(x)) if m == x => format!("{inner}{{{m}}}"),
        (m, Some(x)) => format!("{inner}{{{m},{x}}}"),
    }
}

fn header(g: &Grammar, comment: &str) -> String {
    let scope = match g.options.scope {
        GrammarScope::Turn => "turn",
        GrammarScope::File => "file",
    };
    format!(
        "{comment} Kestrel desk dialect v1, scope {scope}: generated by `kestrel grammar` from the parser's tables.\n\
         {comment} Free text <= {} chars, other runs <= {}. Semantic rules (LANGUAGE.md section 6) are checked after parsing.\n",
        g.options.free_text_max, g.options.run_max
    )
}

/// GBNF (llama.cpp's `grammar` field; xgrammar reads it too). The start rule is `root`.
pub fn to_gbnf(g: &Grammar) -> String {
    let mut out = header(g, "#");
    for rule in &g.rules {
        let _ = writeln!(
            out,
            "{} ::= {}",
            gbnf_name(&rule.name),
            gbnf_term(&rule.body, false)
        );
    }
    out
}

// ---------------------------------------------------------------- Lark (llguidance)

fn lark_str_char(c: char) -> String {
    match c {
        '\n' => "\\n".into(),
        '\r' => "\\r".into(),
        '\t' => "\\t".into(),
        '\\' => "\\\\".into(),
        '"' => "\\\"".into(),
        c => c.to_string(),
    }
}

fn lark_class_char(c: char) -> String {
    if c.is_ascii_alphanumeric() || c == ' ' || c == '_' {
        c.to_string()
    } else if c.is_ascii_graphic() {
        format!("\\{c}")
    } else {
        format!("\\x{{{:x}}}", c as u32)
    }
}

fn lark_class(c: &CharClass) -> String {
    let mut s = String::from("[");
    if c.negated {
        s.push('^');
    }
    for &(a, b) in &c.ranges {
        s.push_str(&lark_class_char(a));
        if b != a {
            s.push('-');
            s.push_str(&lark_class_char(b));
        }
    }
    s.push(']');
    s
}

/// The Lark class of a blank (a space, or spaces and tabs), when `t` is one.
fn blank_class(t: &Term) -> Option<String> {
    match t {
        Term::Lit(l) if l == " " => Some("[ ]".to_string()),
        Term::Class(c)
            if !c.negated
                && c.ranges
                    .iter()
                    .all(|&(a, b)| a == b && (a == ' ' || a == '\t')) =>
        {
            Some(lark_class(c))
        }
        _ => None,
    }
}

struct LarkOut {
    /// Literal text → the name of the rule that spells it one character at a time.
    lits: BTreeMap<(String, bool), String>,
    used: std::collections::BTreeSet<String>,
}

impl LarkOut {
    fn lit_rule(&mut self, s: &str, ci: bool) -> String {
        if let Some(n) = self.lits.get(&(s.to_string(), ci)) {
            return n.clone();
        }
        let mut base: String = s
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        base = base.trim_matches('_').to_string();
        let base = format!("{}{}", if ci { "ci_" } else { "kw_" }, base);
        let mut name = base.clone();
        let mut k = 2;
        while self.used.contains(&name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        self.used.insert(name.clone());
        self.lits.insert((s.to_string(), ci), name.clone());
        name
    }

    fn term(&mut self, t: &Term, nested: bool) -> String {
        match t {
            Term::Lit(s) if s.is_empty() => "\"\"".to_string(),
            Term::Lit(s) if s.chars().count() == 1 => {
                format!("\"{}\"", lark_str_char(s.chars().next().unwrap_or(' ')))
            }
            // Indentation is one terminal, so it and a blank run (below) lex the same spaces.
            Term::Lit(s) if s.chars().all(|c| c == ' ') => format!("\"{s}\""),
            Term::Lit(s) if !s.chars().any(|c| c.is_ascii_alphanumeric()) => {
                let parts: Vec<String> = s
                    .chars()
                    .map(|c| format!("\"{}\"", lark_str_char(c)))
                    .collect();
                if nested {
                    format!("({})", parts.join(" "))
                } else {
                    parts.join(" ")
                }
            }
            Term::Lit(s) => self.lit_rule(s, false),
            Term::LitCi(s) => self.lit_rule(s, true),
            Term::Class(c) => format!("/{}/", lark_class(c)),
            Term::Text(c, max) => format!("/{}{{1,{max}}}/?", lark_class(c)),
            Term::Ref(n) => n.clone(),
            Term::Seq(v) => {
                let mut parts: Vec<String> = Vec::new();
                let mut i = 0;
                while i < v.len() {
                    // A one-character class that introduces free text (the STAND-DOWN
                    // separator and reason) is one lexeme with it: apart, the blanks of a
                    // reason that starts with one would lex as the line's trailing blanks.
                    if let (Term::Class(c), Some(Term::Text(t, max))) = (&v[i], v.get(i + 1)) {
                        parts.push(format!("/{}{}{{0,{max}}}/", lark_class(c), lark_class(t)));
                        i += 2;
                        continue;
                    }
                    parts.push(self.term(&v[i], true));
                    i += 1;
                }
                group(parts.into_iter(), " ", nested)
            }
            Term::Alt(v) => {
                let parts: Vec<String> = v.iter().map(|x| self.term(x, false)).collect();
                group(parts.into_iter(), " | ", nested)
            }
            // A run of blanks is one lexeme: a vocabulary token full of spaces is then one
            // step for llguidance, not one per space (docs/grammar.md, the item limit).
            Term::Rep(x, min, max) => match blank_class(x) {
                Some(class) => {
                    let body = match max {
                        Some(m) => format!("/{class}{{{},{m}}}/", (*min).max(1)),
                        None => format!("/{class}{{{},}}/", (*min).max(1)),
                    };
                    if *min == 0 { format!("{body}?") } else { body }
                }
                None => {
                    let inner = self.term(x, true);
                    repeat(
                        inner,
                        matches!(**x, Term::Seq(_) | Term::Alt(_)),
                        *min,
                        *max,
                    )
                }
            },
        }
    }
}

/// Lark for llguidance. Lower-case rules only; every terminal is one character (a literal
/// keyword is a rule spelling it `"P" "L" "A" "N"`) except free text (one bounded regex), runs
/// of blanks (one bounded regex) and indentation (one two-space terminal); the whole text,
/// newlines included, is matched by rules (no `%ignore`). The start rule is `start`.
pub fn to_lark(g: &Grammar) -> String {
    let mut o = LarkOut {
        lits: BTreeMap::new(),
        used: g.rules.iter().map(|r| r.name.clone()).collect(),
    };
    let mut out = header(g, "//");
    for rule in &g.rules {
        let body = o.term(&rule.body, false);
        let _ = writeln!(out, "{}: {}", rule.name, body);
    }
    out.push_str("\n// Keywords and words, one character per terminal (see the module docs).\n");
    let lits: Vec<((String, bool), String)> =
        o.lits.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    for ((s, ci), name) in lits {
        let parts: Vec<String> = s
            .chars()
            .map(|c| {
                if ci && c.is_ascii_alphabetic() {
                    format!("/[{}{}]/", c.to_ascii_lowercase(), c.to_ascii_uppercase())
                } else {
                    format!("\"{}\"", lark_str_char(c))
                }
            })
            .collect();
        let _ = writeln!(out, "{name}: {}", parts.join(" "));
    }
    out
}

/// Export format for [`export`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrammarFormat {
    Gbnf,
    Lark,
}

/// The grammar for `opts` in `format`.
pub fn export(format: GrammarFormat, opts: GrammarOptions) -> String {
    let g = grammar(opts);
    match format {
        GrammarFormat::Gbnf => to_gbnf(&g),
        GrammarFormat::Lark => to_lark(&g),
    }
}

#[cfg(test)]
mod lark_tests {
    use super::*;
    use llguidance::api::TopLevelGrammar;
    use llguidance::toktrie::ApproximateTokEnv;
    use llguidance::{Matcher, ParserFactory};

    fn accepts(lark: &str, text: &str) -> bool {
        let env = ApproximateTokEnv::single_byte_env();
        let mut factory = ParserFactory::new_simple(&env).expect("llguidance factory");
        factory.quiet();
        let mut m = Matcher::new(factory.create_parser(TopLevelGrammar::from_lark(lark.into())));
        assert!(m.get_error().is_none(), "{:?}", m.get_error());
        let toks: Vec<u32> = text.bytes().map(u32::from).collect();
        m.consume_tokens(&toks).is_ok() && m.is_accepting().unwrap_or(false)
    }

    /// The STAND-DOWN separator is one lexeme with the reason: otherwise a reason that
    /// starts with a blank (`STAND-DOWN  two spaces`, which the parser reads as the separator
    /// and ` two spaces`) lexes its blanks as the line's trailing blanks and is refused.
    #[test]
    fn a_stand_down_reason_may_start_with_a_blank() {
        let lark = export(GrammarFormat::Lark, GrammarOptions::default());
        for text in [
            "STAND-DOWN  two spaces\n",
            "STAND-DOWN \tx",
            "STAND-DOWN\t\tx\n",
        ] {
            assert!(crate::lang::parse(text).is_ok(), "{text:?}");
            assert!(accepts(&lark, text), "{text:?}");
        }
    }
}
