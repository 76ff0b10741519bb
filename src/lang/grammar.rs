//! The Kestrel grammar as data, for decode-time constraint (LANGUAGE.md §8).
//!
//! [`grammar`] builds one rule table (rule name → a [`Term`] tree of literals, character
//! classes, bounded free text, rule references, sequences, alternatives and bounded
//! repetition) by asking the parser's own syntax definitions to describe themselves: the
//! statement table, the clause, pane, trigger, ticket and price rules are values of
//! [`super::syn`] pieces that both parse and describe ([`super::syntax::describe_document`]
//! starts from the line layer). Nothing here is maintained beside the parser: change a rule in
//! `syntax.rs` and the exported grammar changes with it. Two exporters write the table out:
//! [`to_gbnf`] (llama.cpp's `grammar` field, also read by xgrammar) and [`to_lark`]
//! (llguidance's Lark dialect). The tests check the exported grammar against the parser on
//! the corpus, the examples, generated documents and mutations of them.
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
// Small constructors the syntax definitions use to write their lexemes' terms.

pub(crate) fn lit(s: &str) -> Term {
    Term::Lit(s.to_string())
}
pub(crate) fn ci(s: &str) -> Term {
    Term::LitCi(s.to_string())
}
pub(crate) fn r(name: &str) -> Term {
    Term::Ref(name.to_string())
}
pub(crate) fn seq(v: Vec<Term>) -> Term {
    Term::Seq(v)
}
pub(crate) fn alt(v: Vec<Term>) -> Term {
    Term::Alt(v)
}
pub(crate) fn opt(t: Term) -> Term {
    Term::Rep(Box::new(t), 0, Some(1))
}
pub(crate) fn star(t: Term) -> Term {
    Term::Rep(Box::new(t), 0, None)
}
pub(crate) fn rep(t: Term, min: u32, max: u32) -> Term {
    Term::Rep(Box::new(t), min, Some(max))
}
pub(crate) fn class(ranges: &[(char, char)]) -> Term {
    Term::Class(CharClass::of(ranges))
}
pub(crate) fn not_class(ranges: &[(char, char)]) -> Term {
    Term::Class(CharClass::not(ranges))
}

/// The characters `char::is_whitespace` accepts (Unicode White_Space), which end a token
/// for the parser's `next_token`.
pub(crate) const WHITESPACE: &[(char, char)] = &[
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
pub(crate) const TOKEN_PUNCT: &[(char, char)] =
    &[('(', ')'), (',', ','), ('{', '{'), ('}', '}'), ('@', '@')];

pub(crate) fn ws_plus(extra: &[(char, char)]) -> Vec<(char, char)> {
    let mut v = WHITESPACE.to_vec();
    v.extend_from_slice(extra);
    v
}

/// Build the grammar for `opts`: the parser's syntax definitions describe themselves
/// ([`super::syn`]), starting from the document's line layer.
pub fn grammar(opts: GrammarOptions) -> Grammar {
    let mut d = super::syn::Describer::new(opts);
    super::syntax::describe_document(&mut d);
    Grammar {
        options: opts,
        rules: d.into_rules(),
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
        "{comment} Kestrel desk dialect v1, scope {scope}: generated by `kestrel grammar` from the parser's syntax definitions.\n\
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
                let parts: Vec<String> = v.iter().map(|x| self.term(x, true)).collect();
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
