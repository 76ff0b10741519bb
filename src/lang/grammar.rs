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
//! In code the grammar is **character-level**: every terminal is one character (a literal is
//! a sequence of one-character terminals), except free text, which is one bounded run. That is
//! deliberate. llguidance lexes greedily without backtracking, so two multi-character
//! terminals that share a prefix at the same position (say the symbol `NOTE.spot` against the
//! keyword `NOT`) would make it refuse text the parser accepts. With one-character terminals
//! there is nothing to split. The Lark export differs in one way, between code items: there
//! the line layer (trailing blanks and comment, the newline, blank and comment lines, the next
//! line's indentation) is one lexeme per gap, so llguidance's per-mask item limit holds on a
//! full vocabulary (see [`to_lark`] and docs/grammar.md).
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

/// The default bound on consecutive blank or comment-only lines: room for a journal of a
/// dozen comment lines, none for a page of line breaks.
pub const TRIVIA_LINES_MAX: u32 = 12;

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
    /// Most consecutive blank or comment-only lines (`None`: unbounded). The empty line
    /// after a final newline counts as one. Without it a constrained model can fill its
    /// whole token budget with line breaks (`\r\n` x 512) and still match.
    pub trivia_lines_max: Option<u32>,
}

impl Default for GrammarOptions {
    fn default() -> Self {
        GrammarOptions {
            scope: GrammarScope::Turn,
            free_text_max: 160,
            run_max: 32,
            trivia_lines_max: Some(TRIVIA_LINES_MAX),
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
         {comment} Free text <= {} chars, other runs <= {}{}. Semantic rules (docs/language.md#rules, `kestrel rules`) are checked after parsing.\n",
        g.options.free_text_max,
        g.options.run_max,
        match g.options.trivia_lines_max {
            Some(k) => format!(", consecutive blank/comment lines <= {k}"),
            None => String::new(),
        }
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

/// Lark for llguidance. The start rule is `start`; the whole text, newlines included, is
/// matched by rules (no `%ignore`).
///
/// - **Code** (the rules that hold no line break: statement heads, clauses, panes, and
///   everything under them) is written as it is in the table, lower-case rules whose
///   terminals are one character (a keyword is a rule spelling it `"P" "L" "A" "N"`), except
///   free text and runs of blanks, each one bounded regex.
/// - **The line layer** (`start`, `module`, `unit`, the blocks, `*_line`, and whatever else
///   holds a line break) is regular: it is flattened to an automaton over code items and the
///   gap rules (`GAP_RULES`: `trivia`, `blank`, `comment_line`, `comment`, `line_end`,
///   `indent`; and the `"\n"` literal), and written back as a left-linear
///   grammar in which everything between two code items (a line's trailing blanks and
///   comment, the newline, any blank and comment lines, the next line's indentation) is
///   **one lexeme**, a `GAP_n` terminal (`LineLayer` below has the construction).
///
/// Why: llguidance computes a token mask by walking the whole vocabulary through its lexer
/// and parser, and every lexeme that ends inside a vocabulary token costs an Earley row.
/// With a newline and each part of a line as separate lexemes, inside a comment every
/// cl100k token ending in a newline (`".\n"`, `"})\n"`, ... about 2 000) made two rows, which
/// broke llguidance's default per-mask item limit (docs/grammar.md). Inside a gap those
/// tokens only move the lexer.
///
/// If the line layer is not regular (a rule that holds a line break is recursive), the rules
/// are written as they are, one character per terminal ([`to_lark_plain`]).
pub fn to_lark(g: &Grammar) -> String {
    match LineLayer::of(g) {
        Some(layer) => {
            let mut o = LarkOut::new(g);
            let mut out = header(g, "//");
            layer.write(g, &mut o, &mut out);
            out.push_str("\n// Code: rules without a line break.\n");
            for rule in &g.rules {
                if layer.layer.contains(rule.name.as_str()) || is_gap_rule(&rule.name) {
                    continue;
                }
                let body = o.term(&rule.body, false);
                let _ = writeln!(out, "{}: {}", rule.name, body);
            }
            o.write_lits(&mut out);
            out
        }
        None => to_lark_plain(g),
    }
}

/// Lark with the rules as they are: every terminal one character except free text, runs of
/// blanks and the indentation. Correct, but over a large vocabulary the masks inside a
/// comment exceed llguidance's default item limit; [`to_lark`] uses it only when the line
/// layer is not regular.
pub fn to_lark_plain(g: &Grammar) -> String {
    let mut o = LarkOut::new(g);
    let mut out = header(g, "//");
    for rule in &g.rules {
        let body = o.term(&rule.body, false);
        let _ = writeln!(out, "{}: {}", rule.name, body);
    }
    o.write_lits(&mut out);
    out
}

impl LarkOut {
    fn new(g: &Grammar) -> LarkOut {
        LarkOut {
            lits: BTreeMap::new(),
            used: g.rules.iter().map(|r| r.name.clone()).collect(),
        }
    }

    fn write_lits(&self, out: &mut String) {
        out.push_str(
            "\n// Keywords and words, one character per terminal (see the module docs).\n",
        );
        for ((s, ci), name) in &self.lits {
            let parts: Vec<String> = s
                .chars()
                .map(|c| {
                    if *ci && c.is_ascii_alphabetic() {
                        format!("/[{}{}]/", c.to_ascii_lowercase(), c.to_ascii_uppercase())
                    } else {
                        format!("\"{}\"", lark_str_char(c))
                    }
                })
                .collect();
            let _ = writeln!(out, "{name}: {}", parts.join(" "));
        }
    }
}

// ---------------------------------------------------------------- Lark: the line layer

/// The rules that make up the space between code items: a line's end (trailing blanks, a
/// comment), blank and comment lines, the indentation of a block's line. With the `"\n"`
/// literal (and any other literal of only blanks and line breaks in a rule that holds a line
/// break), these are the gap symbols of the line layer.
const GAP_RULES: &[&str] = &[
    "trivia",
    "blank",
    "comment_line",
    "comment",
    "line_end",
    "indent",
];

fn is_gap_rule(name: &str) -> bool {
    GAP_RULES.contains(&name)
}

fn is_gap_lit(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| matches!(c, '\n' | '\r' | ' ' | '\t'))
}

/// A regular expression over the line layer's symbols (code items and gap symbols).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Re {
    /// The empty language (nothing matches).
    Empty,
    /// The empty text.
    Eps,
    Sym(usize),
    Cat(Vec<Re>),
    Or(Vec<Re>),
    Star(Box<Re>),
}

/// The elements of a concatenation (a single element for anything else).
fn re_parts(r: Re) -> Vec<Re> {
    match r {
        Re::Cat(v) => v,
        Re::Eps => vec![],
        x => vec![x],
    }
}

fn re_seq(v: Vec<Re>) -> Re {
    v.into_iter().fold(Re::Eps, re_cat)
}

fn re_cat(a: Re, b: Re) -> Re {
    if a == Re::Empty || b == Re::Empty {
        return Re::Empty;
    }
    let mut v = re_parts(a);
    for x in re_parts(b) {
        // x* x* = x*, x* x? = x*, x? x* = x*.
        if let Some(last) = v.last() {
            let star_of = |r: &Re| match r {
                Re::Star(y) => Some((**y).clone()),
                _ => None,
            };
            let opt_of = |r: &Re| match r {
                Re::Or(w) if w.len() == 2 && w[0] == Re::Eps => Some(w[1].clone()),
                _ => None,
            };
            if let (Some(y), Some(z)) = (star_of(last), star_of(&x).or(opt_of(&x)))
                && y == z
            {
                continue;
            }
            if let (Some(y), Some(z)) = (opt_of(last), star_of(&x))
                && y == z
            {
                v.pop();
            }
        }
        v.push(x);
    }
    match v.len() {
        0 => Re::Eps,
        1 => v.pop().unwrap_or(Re::Eps),
        _ => Re::Cat(v),
    }
}

/// `y` when `r` is `y y*` (so that `ε | y y*` becomes `y*`).
fn re_plus_base(r: &Re) -> Option<Re> {
    let v = match r {
        Re::Cat(v) if v.len() >= 2 => v,
        _ => return None,
    };
    match v.last() {
        Some(Re::Star(y)) if re_seq(v[..v.len() - 1].to_vec()) == **y => Some((**y).clone()),
        _ => None,
    }
}

fn re_or(a: Re, b: Re) -> Re {
    let mut v: Vec<Re> = Vec::new();
    for x in [a, b] {
        let parts = match x {
            Re::Empty => vec![],
            Re::Or(w) => w,
            x => vec![x],
        };
        for p in parts {
            if !v.contains(&p) {
                v.push(p);
            }
        }
    }
    // Factor a common first (or last) element of two alternatives: `a b | a c` = `a (b | c)`.
    'factor: loop {
        for i in 0..v.len() {
            for j in i + 1..v.len() {
                let (pi, pj) = (re_parts(v[i].clone()), re_parts(v[j].clone()));
                if pi.is_empty() || pj.is_empty() {
                    continue;
                }
                let merged = if pi[0] == pj[0] {
                    re_cat(
                        pi[0].clone(),
                        re_or(re_seq(pi[1..].to_vec()), re_seq(pj[1..].to_vec())),
                    )
                } else if pi[pi.len() - 1] == pj[pj.len() - 1] {
                    re_cat(
                        re_or(
                            re_seq(pi[..pi.len() - 1].to_vec()),
                            re_seq(pj[..pj.len() - 1].to_vec()),
                        ),
                        pi[pi.len() - 1].clone(),
                    )
                } else {
                    continue;
                };
                v.remove(j);
                v[i] = merged;
                continue 'factor;
            }
        }
        break;
    }
    // ε | x x* = x*; ε | x* = x*.
    if v.contains(&Re::Eps) {
        for x in v.iter_mut() {
            if let Some(y) = re_plus_base(x) {
                *x = re_star(y);
            }
        }
        if v.iter().any(|x| matches!(x, Re::Star(_))) {
            v.retain(|x| *x != Re::Eps);
        }
        // Keep ε first, so `x?` reads as such.
        if let Some(k) = v.iter().position(|x| *x == Re::Eps) {
            let e = v.remove(k);
            v.insert(0, e);
        }
    }
    match v.len() {
        0 => Re::Empty,
        1 => v.pop().unwrap_or(Re::Empty),
        _ => Re::Or(v),
    }
}

fn re_star(a: Re) -> Re {
    match a {
        Re::Empty | Re::Eps => Re::Eps,
        Re::Star(x) => Re::Star(x),
        Re::Or(v) if v.contains(&Re::Eps) => re_star(
            v.into_iter()
                .filter(|x| *x != Re::Eps)
                .fold(Re::Empty, re_or),
        ),
        x => Re::Star(Box::new(x)),
    }
}

fn re_nullable(r: &Re, sym: &dyn Fn(usize) -> bool) -> bool {
    match r {
        Re::Empty => false,
        Re::Eps | Re::Star(_) => true,
        Re::Sym(i) => sym(*i),
        Re::Cat(v) => v.iter().all(|x| re_nullable(x, sym)),
        Re::Or(v) => v.iter().any(|x| re_nullable(x, sym)),
    }
}

/// The non-empty texts of `r`; `ne(i)` is the symbol of symbol `i`'s non-empty texts (or
/// `None` when it has none).
fn re_nonempty(
    r: &Re,
    nullable: &dyn Fn(usize) -> bool,
    ne: &dyn Fn(usize) -> Option<usize>,
) -> Re {
    match r {
        Re::Empty | Re::Eps => Re::Empty,
        Re::Sym(i) if nullable(*i) => ne(*i).map_or(Re::Empty, Re::Sym),
        Re::Sym(i) => Re::Sym(*i),
        Re::Cat(v) if !re_nullable(r, nullable) => Re::Cat(v.clone()),
        // Every part may be empty: the first non-empty part, then the rest.
        Re::Cat(v) => (0..v.len()).fold(Re::Empty, |acc, k| {
            let mut w = vec![re_nonempty(&v[k], nullable, ne)];
            w.extend(v[k + 1..].iter().cloned());
            re_or(acc, re_seq(w))
        }),
        Re::Or(v) => v
            .iter()
            .fold(Re::Empty, |acc, x| re_or(acc, re_nonempty(x, nullable, ne))),
        Re::Star(x) => re_cat(re_nonempty(x, nullable, ne), Re::Star(x.clone())),
    }
}

/// Alternatives, nested ones flattened: `None` for none, the term itself for one.
fn one_alt(alts: impl Iterator<Item = Term>) -> Option<Term> {
    let mut alts: Vec<Term> = alts
        .flat_map(|x| match x {
            Term::Alt(w) => w,
            x => vec![x],
        })
        .collect();
    match alts.len() {
        0 => None,
        1 => alts.pop(),
        _ => Some(Term::Alt(alts)),
    }
}

/// The non-empty texts of `t` as a term (`None`: it has none); rule references are
/// inlined where the rule may be empty.
fn term_nonempty(t: &Term, rules: &BTreeMap<&str, &Term>) -> Option<Term> {
    let nullable = |t: &Term| term_nullable(t, rules, &mut Vec::new());
    if !nullable(t) {
        return Some(t.clone());
    }
    match t {
        Term::Lit(_) | Term::LitCi(_) | Term::Class(_) => None,
        Term::Text(c, max) => {
            (*max > 0).then(|| Term::Rep(Box::new(Term::Class(c.clone())), 1, Some(*max)))
        }
        Term::Ref(n) => term_nonempty(rules.get(n.as_str())?, rules),
        Term::Seq(v) => one_alt((0..v.len()).filter_map(|k| {
            let mut w = vec![term_nonempty(&v[k], rules)?];
            w.extend(v[k + 1..].iter().cloned());
            Some(if w.len() == 1 {
                w.remove(0)
            } else {
                Term::Seq(w)
            })
        })),
        Term::Alt(v) => one_alt(v.iter().filter_map(|x| term_nonempty(x, rules))),
        Term::Rep(x, _, max) => {
            if max == &Some(0) {
                return None;
            }
            if !nullable(x) {
                return Some(match max {
                    Some(1) => (**x).clone(),
                    _ => Term::Rep(x.clone(), 1, *max),
                });
            }
            let first = term_nonempty(x, rules)?;
            let rest = Term::Rep(x.clone(), 0, max.map(|m| m - 1));
            Some(Term::Seq(vec![first, rest]))
        }
    }
}

/// Does `t` match the empty text? (`rules` for references; a reference cycle counts as not.)
fn term_nullable(t: &Term, rules: &BTreeMap<&str, &Term>, seen: &mut Vec<String>) -> bool {
    match t {
        Term::Lit(s) | Term::LitCi(s) => s.is_empty(),
        Term::Class(_) => false,
        Term::Text(..) => true,
        Term::Ref(n) => {
            if seen.contains(n) {
                return false;
            }
            seen.push(n.clone());
            let r = rules
                .get(n.as_str())
                .is_some_and(|b| term_nullable(b, rules, seen));
            seen.pop();
            r
        }
        Term::Seq(v) => v.iter().all(|x| term_nullable(x, rules, seen)),
        Term::Alt(v) => v.iter().any(|x| term_nullable(x, rules, seen)),
        Term::Rep(x, min, _) => *min == 0 || term_nullable(x, rules, seen),
    }
}

/// The line layer of a grammar, flattened to a minimal deterministic automaton over its
/// symbols.
///
/// The layer is `start` and every rule that (through its references) holds a line break:
/// a `"\n"` literal or a gap rule. Its symbols are the gap symbols (references to
/// [`GAP_RULES`], literals of blanks and line breaks) and the code items (every other
/// reference or terminal). Inlining the layer's rules into `start` gives a regular
/// expression over the symbols when the layer is not recursive; from it, a DFA (subset
/// construction, then Moore's minimisation).
///
/// It is written back as a left-linear grammar: one rule `after_…` per anchor state (a
/// state entered by a code item; the start state is the empty prefix), with one production
/// per anchor `s`, code item `c` and anchor `u` such that a path of gap symbols leads from
/// `s` to a state with a `c` transition into `u`. The language of those paths (by state
/// elimination), with each gap symbol spelled out as its rule's characters, is one terminal,
/// `GAP_n`: a lexeme never matches the empty text, so it is the paths' non-empty texts,
/// written `GAP_n?` when the gap may be empty. `start` is the anchors from which gap paths
/// reach an accepting state. Because the automaton is deterministic, the gaps before one
/// code item from one anchor are disjoint; where gaps before different items match the
/// same text, llguidance scans every lexeme that matches it, so no reading is lost.
///
/// Lexing stays exact because a gap and what borders it cannot trade characters: code
/// never starts with a blank, `#` or a line break, and ends in one only through `sp`/`sp0`
/// (spaces, always followed by more code) or free text that stops at `#` and line breaks
/// (the STAND-DOWN reason, lexed with its separator, see `LarkOut::term`).
struct LineLayer {
    /// The names of the layer's rules (they are not written as rules).
    layer: std::collections::BTreeSet<String>,
    /// Symbols: the term and whether it is a gap symbol.
    syms: Vec<(Term, bool)>,
    /// The minimal DFA: transitions by symbol, accepting states; state 0 is the start.
    trans: Vec<BTreeMap<usize, usize>>,
    accept: Vec<bool>,
    /// Per symbol: can it match the empty text?
    sym_nullable: Vec<bool>,
    /// Per gap symbol, the symbol of its non-empty texts (itself when it is never empty;
    /// `None` when it is only ever empty).
    ne: Vec<Option<usize>>,
}

impl LineLayer {
    /// The line layer of `g`, or `None` when `start` holds no line break or the layer is
    /// recursive.
    fn of(g: &Grammar) -> Option<LineLayer> {
        let rules: BTreeMap<&str, &Term> =
            g.rules.iter().map(|r| (r.name.as_str(), &r.body)).collect();
        // Rules that hold a line break, to a fixpoint.
        fn holds(t: &Term, layer: &std::collections::BTreeSet<String>) -> bool {
            match t {
                Term::Lit(s) => s.contains('\n'),
                Term::Ref(n) => is_gap_rule(n) || layer.contains(n),
                Term::Seq(v) | Term::Alt(v) => v.iter().any(|x| holds(x, layer)),
                Term::Rep(x, _, _) => holds(x, layer),
                _ => false,
            }
        }
        let mut layer = std::collections::BTreeSet::new();
        loop {
            let before = layer.len();
            for r in &g.rules {
                if !is_gap_rule(&r.name) && holds(&r.body, &layer) {
                    layer.insert(r.name.clone());
                }
            }
            if layer.len() == before {
                break;
            }
        }
        if !layer.contains("start") {
            return None;
        }
        let mut syms: Vec<(Term, bool)> = Vec::new();
        let re = Self::flatten(rules[&"start"], &rules, &layer, &mut syms, &mut Vec::new())?;
        let (trans, accept) = dfa(&re, syms.len());
        let mut sym_nullable: Vec<bool> = syms
            .iter()
            .map(|(t, _)| term_nullable(t, &rules, &mut Vec::new()))
            .collect();
        let mut ne = Vec::new();
        for i in 0..syms.len() {
            ne.push(if !sym_nullable[i] {
                Some(i)
            } else if let Some(t) = term_nonempty(&syms[i].0, &rules) {
                syms.push((t, true));
                sym_nullable.push(false);
                Some(syms.len() - 1)
            } else {
                None
            });
        }
        Some(LineLayer {
            layer,
            syms,
            trans,
            accept,
            sym_nullable,
            ne,
        })
    }

    fn flatten(
        t: &Term,
        rules: &BTreeMap<&str, &Term>,
        layer: &std::collections::BTreeSet<String>,
        syms: &mut Vec<(Term, bool)>,
        stack: &mut Vec<String>,
    ) -> Option<Re> {
        let mut sym = |t: &Term, gap: bool| {
            let i = match syms.iter().position(|(s, _)| s == t) {
                Some(i) => i,
                None => {
                    syms.push((t.clone(), gap));
                    syms.len() - 1
                }
            };
            Re::Sym(i)
        };
        Some(match t {
            Term::Lit(s) if s.is_empty() => Re::Eps,
            Term::Lit(s) if is_gap_lit(s) => sym(t, true),
            Term::Ref(n) if is_gap_rule(n) => sym(t, true),
            Term::Ref(n) if layer.contains(n) => {
                if stack.contains(n) {
                    return None;
                }
                stack.push(n.clone());
                let r = Self::flatten(rules.get(n.as_str())?, rules, layer, syms, stack);
                stack.pop();
                r?
            }
            Term::Seq(v) => {
                let mut r = Re::Eps;
                for x in v {
                    r = re_cat(r, Self::flatten(x, rules, layer, syms, stack)?);
                }
                r
            }
            Term::Alt(v) => {
                let mut r = Re::Empty;
                for x in v {
                    r = re_or(r, Self::flatten(x, rules, layer, syms, stack)?);
                }
                r
            }
            Term::Rep(x, min, max) => {
                let x = Self::flatten(x, rules, layer, syms, stack)?;
                let mut r = Re::Eps;
                for _ in 0..*min {
                    r = re_cat(r, x.clone());
                }
                match max {
                    None => re_cat(r, re_star(x)),
                    Some(m) if m - min <= 64 => {
                        let mut tail = Re::Eps;
                        for _ in *min..*m {
                            tail = re_or(Re::Eps, re_cat(x.clone(), tail));
                        }
                        re_cat(r, tail)
                    }
                    Some(_) => return None,
                }
            }
            _ => sym(t, false),
        })
    }

    /// The anchors: the start state, then every state a code item enters, in order.
    fn anchors(&self) -> Vec<usize> {
        let mut a = vec![0];
        for tr in &self.trans {
            for (&s, &u) in tr {
                if !self.syms[s].1 && !a.contains(&u) {
                    a.push(u);
                }
            }
        }
        a
    }

    /// From anchor `s`, the states that paths of gap symbols reach (`s` first).
    fn gap_closure(&self, s: usize) -> Vec<usize> {
        let mut nodes = vec![s];
        let mut k = 0;
        while k < nodes.len() {
            for (&a, &t) in &self.trans[nodes[k]] {
                if self.syms[a].1 && !nodes.contains(&t) {
                    nodes.push(t);
                }
            }
            k += 1;
        }
        nodes
    }

    /// The language of the gap paths from `s` to any of `targets`, by state elimination
    /// (the state with the fewest paths through it first, which keeps the expression small).
    fn gap_re(&self, s: usize, targets: &[usize]) -> Re {
        let nodes = self.gap_closure(s);
        let n = nodes.len();
        let (start, end) = (n, n + 1);
        let mut m = vec![vec![Re::Empty; n + 2]; n + 2];
        m[start][0] = Re::Eps;
        for (i, &q) in nodes.iter().enumerate() {
            if targets.contains(&q) {
                m[i][end] = Re::Eps;
            }
            for (&a, &t) in &self.trans[q] {
                if let (true, Some(j)) = (self.syms[a].1, nodes.iter().position(|&x| x == t)) {
                    m[i][j] = re_or(m[i][j].clone(), Re::Sym(a));
                }
            }
        }
        let mut left: Vec<usize> = (0..n).collect();
        while !left.is_empty() {
            let others = |k: usize| left.iter().copied().filter(move |&x| x != k);
            let ins = |k: usize| {
                others(k)
                    .chain([start])
                    .filter(|&i| m[i][k] != Re::Empty)
                    .count()
            };
            let outs = |k: usize| {
                others(k)
                    .chain([end])
                    .filter(|&j| m[k][j] != Re::Empty)
                    .count()
            };
            let pick = (0..left.len())
                .min_by_key(|&x| ins(left[x]) * outs(left[x]))
                .unwrap_or(0);
            let k = left.remove(pick);
            let through = re_star(m[k][k].clone());
            let froms: Vec<usize> = left.iter().copied().chain([start]).collect();
            let tos: Vec<usize> = left.iter().copied().chain([end]).collect();
            for &i in &froms {
                if m[i][k] == Re::Empty {
                    continue;
                }
                for &j in &tos {
                    if m[k][j] == Re::Empty {
                        continue;
                    }
                    let path = re_seq(vec![m[i][k].clone(), through.clone(), m[k][j].clone()]);
                    m[i][j] = re_or(m[i][j].clone(), path);
                }
            }
        }
        m[start][end].clone()
    }

    /// Write the layer's rules and its gap terminals.
    fn write(&self, g: &Grammar, o: &mut LarkOut, out: &mut String) {
        let anchors = self.anchors();
        // Names: after_<the code items that enter the anchor>.
        let mut names: BTreeMap<usize, String> = BTreeMap::new();
        for &u in &anchors[1..] {
            let mut items: Vec<String> = Vec::new();
            for tr in &self.trans {
                for (&c, &t) in tr {
                    if t == u && !self.syms[c].1 {
                        let w = match &self.syms[c].0 {
                            Term::Ref(n) => n.clone(),
                            _ => "item".to_string(),
                        };
                        if !items.contains(&w) {
                            items.push(w);
                        }
                    }
                }
            }
            let mut name = format!("after_{}", items.join("_"));
            if name.len() > 40 {
                name = format!("after_{}_etc", items[0]);
            }
            let base = name.clone();
            let mut k = 2;
            while o.used.contains(&name) {
                name = format!("{base}_{k}");
                k += 1;
            }
            o.used.insert(name.clone());
            names.insert(u, name);
        }
        let nullable = |i: usize| self.sym_nullable[i];
        let ne = |i: usize| self.ne[i];
        // Gap terminals by their text; the terminals of rules they use.
        let mut gaps: Vec<String> = Vec::new();
        let mut refs: Vec<String> = Vec::new();
        // A gap as a lexeme reference: none for the empty gap, `GAP_n?` when it may be empty.
        let mut gap_ref = |re: &Re, refs: &mut Vec<String>| -> Option<String> {
            let nonempty = re_nonempty(re, &nullable, &ne);
            if nonempty == Re::Empty {
                return None;
            }
            let optional = re_nullable(re, &nullable);
            let body = self.render(&nonempty, false, refs);
            let k = match gaps.iter().position(|x| *x == body) {
                Some(k) => k,
                None => {
                    gaps.push(body);
                    gaps.len() - 1
                }
            };
            Some(format!("GAP_{}{}", k + 1, if optional { "?" } else { "" }))
        };
        let mut start: Vec<String> = Vec::new();
        let mut rules: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for &s in &anchors {
            let closure = self.gap_closure(s);
            let head = |gap: Option<String>| -> Vec<String> {
                names.get(&s).cloned().into_iter().chain(gap).collect()
            };
            let accepting: Vec<usize> = closure
                .iter()
                .copied()
                .filter(|&t| self.accept[t])
                .collect();
            if !accepting.is_empty() {
                let parts = head(gap_ref(&self.gap_re(s, &accepting), &mut refs));
                start.push(if parts.is_empty() {
                    "\"\"".to_string()
                } else {
                    parts.join(" ")
                });
            }
            // The code items that may follow, each with the anchor it leads to.
            let mut next: Vec<(usize, usize)> = Vec::new();
            for &t in &closure {
                for (&c, &u) in &self.trans[t] {
                    if !self.syms[c].1 && !next.contains(&(c, u)) {
                        next.push((c, u));
                    }
                }
            }
            // One production per (gap, anchor), the code items as alternatives.
            let mut prods: Vec<(usize, Option<String>, Vec<String>)> = Vec::new();
            for (c, u) in next {
                let before: Vec<usize> = closure
                    .iter()
                    .copied()
                    .filter(|&t| self.trans[t].get(&c) == Some(&u))
                    .collect();
                let gap = gap_ref(&self.gap_re(s, &before), &mut refs);
                let item = o.term(&self.syms[c].0, false);
                match prods.iter_mut().find(|p| p.0 == u && p.1 == gap) {
                    Some(p) => p.2.push(item),
                    None => prods.push((u, gap, vec![item])),
                }
            }
            for (u, gap, items) in prods {
                let mut parts = head(gap);
                parts.push(group(items.into_iter(), " | ", true));
                rules.entry(u).or_default().push(parts.join(" "));
            }
        }
        out.push_str(
            "// The line layer: code items and the gaps between them. A GAP is one lexeme: a\n\
             // line's trailing blanks and comment, the newline, blank and comment lines, the\n\
             // next line's indentation (see `to_lark` in src/lang/grammar.rs).\n",
        );
        let _ = writeln!(out, "start: {}", start.join(" | "));
        for &u in &anchors[1..] {
            if let Some(alts) = rules.get(&u) {
                let _ = writeln!(out, "{}: {}", names[&u], alts.join(" | "));
            }
        }
        out.push('\n');
        for (k, body) in gaps.iter().enumerate() {
            let _ = writeln!(out, "GAP_{}: {body}", k + 1);
        }
        // The rules the gaps use, as terminals.
        let rules_by_name: BTreeMap<&str, &Term> =
            g.rules.iter().map(|r| (r.name.as_str(), &r.body)).collect();
        let mut done: Vec<String> = Vec::new();
        while let Some(n) = refs.pop() {
            if done.contains(&n) {
                continue;
            }
            done.push(n.clone());
            if let Some(body) = rules_by_name.get(n.as_str()) {
                let text = terminal_text(body, false, &mut refs);
                let _ = writeln!(out, "{}: {text}", n.to_uppercase());
            }
        }
    }

    /// A path language over gap symbols, as a Lark terminal expression; the rules it uses
    /// are added to `refs`.
    fn render(&self, r: &Re, nested: bool, refs: &mut Vec<String>) -> String {
        match r {
            Re::Empty => "/[^\\x{0}-\\x{10ffff}]/".to_string(),
            Re::Eps => "\"\"".to_string(),
            Re::Sym(i) => terminal_text(&self.syms[*i].0, true, refs),
            Re::Cat(v) => group(v.iter().map(|x| self.render(x, true, refs)), " ", nested),
            Re::Or(v) if v.first() == Some(&Re::Eps) => {
                let rest = re_or(Re::Empty, Re::Or(v[1..].to_vec()));
                format!("{}?", lark_atom(self.render(&rest, true, refs)))
            }
            Re::Or(v) => group(v.iter().map(|x| self.render(x, false, refs)), " | ", true),
            Re::Star(x) => format!("{}*", lark_atom(self.render(x, true, refs))),
        }
    }
}

/// `s` as one Lark atom, to take a quantifier: parenthesised unless it is a name, a string,
/// a regex or already one group.
fn lark_atom(s: String) -> String {
    let simple = s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        || (s.len() >= 2
            && s.starts_with('"')
            && s.ends_with('"')
            && !s[1..s.len() - 1].contains('"'))
        || (s.len() >= 2
            && s.starts_with('/')
            && s.ends_with('/')
            && !s[1..s.len() - 1].contains('/'));
    let one_group = s.starts_with('(') && {
        let mut depth = 0i32;
        let mut closes_at_end = true;
        let mut in_str = false;
        for (k, c) in s.char_indices() {
            match c {
                '"' => in_str = !in_str,
                '(' if !in_str => depth += 1,
                ')' if !in_str => {
                    depth -= 1;
                    if depth == 0 && k != s.len() - 1 {
                        closes_at_end = false;
                    }
                }
                _ => {}
            }
        }
        closes_at_end
    };
    if simple || one_group {
        s
    } else {
        format!("({s})")
    }
}

/// A term as a Lark terminal expression (one regex for llguidance); rule references become
/// references to the UPPERCASE terminal of that rule, collected in `refs`.
fn terminal_text(t: &Term, nested: bool, refs: &mut Vec<String>) -> String {
    match t {
        Term::Lit(s) if s.is_empty() => "\"\"".to_string(),
        Term::Lit(s) => format!("\"{}\"", s.chars().map(lark_str_char).collect::<String>()),
        Term::LitCi(s) => group(
            s.chars().map(|c| {
                if c.is_ascii_alphabetic() {
                    format!("/[{}{}]/", c.to_ascii_lowercase(), c.to_ascii_uppercase())
                } else {
                    format!("\"{}\"", lark_str_char(c))
                }
            }),
            " ",
            nested,
        ),
        Term::Class(c) => format!("/{}/", lark_class(c)),
        Term::Text(c, max) => format!("/{}{{0,{max}}}/", lark_class(c)),
        Term::Ref(n) => {
            refs.push(n.clone());
            n.to_uppercase()
        }
        Term::Seq(v) => group(v.iter().map(|x| terminal_text(x, true, refs)), " ", nested),
        Term::Alt(v) => group(v.iter().map(|x| terminal_text(x, false, refs)), " | ", true),
        Term::Rep(x, min, max) => repeat(
            terminal_text(x, true, refs),
            matches!(**x, Term::Seq(_) | Term::Alt(_) | Term::LitCi(_)),
            *min,
            *max,
        ),
    }
}

/// The minimal DFA of `re` over `n` symbols: transitions and accepting flags, state 0 the
/// start (Thompson's construction, subsets, Moore's partition refinement).
fn dfa(re: &Re, n: usize) -> (Vec<BTreeMap<usize, usize>>, Vec<bool>) {
    use std::collections::BTreeSet;
    // Thompson NFA: epsilon edges and symbol edges per state.
    struct Nfa {
        eps: Vec<Vec<usize>>,
        sym: Vec<Vec<(usize, usize)>>,
    }
    impl Nfa {
        fn state(&mut self) -> usize {
            self.eps.push(Vec::new());
            self.sym.push(Vec::new());
            self.eps.len() - 1
        }
        fn build(&mut self, r: &Re) -> (usize, usize) {
            let (a, b) = (self.state(), self.state());
            match r {
                Re::Empty => {}
                Re::Eps => self.eps[a].push(b),
                Re::Sym(s) => self.sym[a].push((*s, b)),
                Re::Cat(v) => {
                    let mut at = a;
                    for x in v {
                        let (i, o) = self.build(x);
                        self.eps[at].push(i);
                        at = o;
                    }
                    self.eps[at].push(b);
                }
                Re::Or(v) => {
                    for x in v {
                        let (i, o) = self.build(x);
                        self.eps[a].push(i);
                        self.eps[o].push(b);
                    }
                }
                Re::Star(x) => {
                    let (i, o) = self.build(x);
                    self.eps[a].push(i);
                    self.eps[a].push(b);
                    self.eps[o].push(i);
                    self.eps[o].push(b);
                }
            }
            (a, b)
        }
        fn close(&self, mut set: BTreeSet<usize>) -> BTreeSet<usize> {
            let mut todo: Vec<usize> = set.iter().copied().collect();
            while let Some(q) = todo.pop() {
                for &e in &self.eps[q] {
                    if set.insert(e) {
                        todo.push(e);
                    }
                }
            }
            set
        }
    }
    let mut nfa = Nfa {
        eps: Vec::new(),
        sym: Vec::new(),
    };
    let (init, fin) = nfa.build(re);
    let mut sets: Vec<BTreeSet<usize>> = vec![nfa.close(BTreeSet::from([init]))];
    let mut trans: Vec<BTreeMap<usize, usize>> = Vec::new();
    let mut k = 0;
    while k < sets.len() {
        let mut row = BTreeMap::new();
        for a in 0..n {
            let next: BTreeSet<usize> = sets[k]
                .iter()
                .flat_map(|&q| nfa.sym[q].iter().filter(|(s, _)| *s == a).map(|(_, t)| *t))
                .collect();
            if next.is_empty() {
                continue;
            }
            let next = nfa.close(next);
            let j = match sets.iter().position(|s| *s == next) {
                Some(j) => j,
                None => {
                    sets.push(next);
                    sets.len() - 1
                }
            };
            row.insert(a, j);
        }
        trans.push(row);
        k += 1;
    }
    let accept: Vec<bool> = sets.iter().map(|s| s.contains(&fin)).collect();
    // Moore: refine the accepting / non-accepting partition until stable.
    let mut class: Vec<usize> = accept.iter().map(|&a| usize::from(a)).collect();
    loop {
        let mut sigs: Vec<(usize, Vec<(usize, usize)>)> = Vec::new();
        let next: Vec<usize> = (0..trans.len())
            .map(|q| {
                let sig = (
                    class[q],
                    trans[q].iter().map(|(&a, &t)| (a, class[t])).collect(),
                );
                match sigs.iter().position(|s| *s == sig) {
                    Some(i) => i,
                    None => {
                        sigs.push(sig);
                        sigs.len() - 1
                    }
                }
            })
            .collect();
        let stable = sigs.len() == class.iter().collect::<BTreeSet<_>>().len();
        class = next;
        if stable {
            break;
        }
    }
    // Classes are numbered by first appearance, so the start state's class is 0.
    let m = class.iter().max().map_or(0, |x| x + 1);
    let mut min_trans = vec![BTreeMap::new(); m];
    let mut min_accept = vec![false; m];
    for q in 0..trans.len() {
        min_accept[class[q]] = accept[q];
        for (&a, &t) in &trans[q] {
            min_trans[class[q]].insert(a, class[t]);
        }
    }
    (min_trans, min_accept)
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

    #[test]
    fn the_line_layer_is_written_as_gaps_in_both_scopes() {
        for scope in [GrammarScope::Turn, GrammarScope::File] {
            let g = grammar(GrammarOptions {
                scope,
                ..GrammarOptions::default()
            });
            let layer = LineLayer::of(&g).expect("the line layer is regular");
            for name in ["start", "module", "statement", "plan_block", "clause_line"] {
                assert!(layer.layer.contains(name), "{name} is in the line layer");
            }
            let lark = to_lark(&g);
            assert!(lark.contains("\nGAP_1: "), "{lark}");
            for name in ["module", "statement", "plan_block", "clause_line", "trivia"] {
                let def = format!("\n{name}:");
                assert!(!lark.contains(&def), "{name} is not written as a rule");
            }
        }
    }

    #[test]
    fn gaps_accept_what_the_lines_did() {
        let lark = export(GrammarFormat::Lark, GrammarOptions::default());
        for text in [
            "",
            "\n",
            "# only a comment",
            " \t\r\n\n# a\n  # b\r\n",
            "PLAN a budget 0.1R ttl +5m\n  WHEN spot > hod  # why\n\n  # note\n  DO buy 1 ATM C @ fair\n",
            "PLAN a budget 0.1R ttl +5m\n\n\nVIEW v\n  gex 0dte\n  tape 5m",
            "# before\nSTAND-DOWN chop # after\n\n",
            "SHOW VIEW v budget 900\n  gex 0dte\n# need gamma\n",
        ] {
            assert!(accepts(&lark, text), "{text:?}");
        }
        for text in [
            "  PLAN a budget 0.1R ttl +5m\n",
            "PLAN a budget 0.1R ttl +5m\n   WHEN spot > hod\n",
            "VIEW v\nWHEN spot > hod\n",
            "# c\n  WHEN spot > hod\n",
            "STAND-DOWN\nVIEW v\n",
        ] {
            assert!(!accepts(&lark, text), "{text:?}");
        }
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
