//! Syntax pieces that parse **and** describe themselves: the one definition the parser runs
//! and the constrained-decoding grammar is generated from (LANGUAGE.md §8).
//!
//! Every piece implements [`Syn`]: `parse` reads Kestrel on winnow's input with the parser's
//! guided errors, `describe` writes the same piece as a grammar [`Term`], and `lead` tells,
//! without consuming, whether the piece starts here (how alternatives and optional parts are
//! chosen, the way the hand-written parser used to peek). The statement, clause, pane,
//! trigger, ticket and price rules in [`super::syntax`] are values built from these pieces,
//! so what the parser sequences is exactly what the grammar says. Pieces that only refuse
//! (guided messages for common escapes such as `@ spot`) describe as nothing: the grammar has
//! no production for what the parser refuses.
//!
//! The leaves are lexemes ([`Lexeme`]): a fast hand-written lexer (names, numbers, durations,
//! clocks, symbols, expiries...) and its character-level term, defined together, one value
//! each. That pairing is the one place where a lexer and its term are two pieces of code;
//! `tests/grammar.rs` checks the whole grammar, lexemes included, against the parser.
//!
//! Performance: pieces are built once (`rule!` keeps each rule in a `OnceLock`), words are
//! compared byte by byte, and a choice asks each alternative whether it leads before parsing
//! it. `cargo bench --bench lang` measures the result (docs/language.md).

use super::grammar::{GrammarOptions, Rule as GRule, Term};
use super::syntax::{In, PErr, R, expected, expected_no_space, expected_space, fail, found};
use std::collections::HashMap;
use std::sync::OnceLock;
use winnow::error::ErrMode;
use winnow::stream::Stream;

/// Whether a piece starts at some text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lead<'s> {
    /// It does not.
    No,
    /// It does (the piece decides here: an alternative or optional part is committed to).
    Yes,
    /// Spaces that match; whether the piece after them starts decides.
    Skip(&'s str),
}

/// Does `s` start with `w`? The first byte is compared first: most tries fail there, and
/// that saves a `memcmp` call per try (the parser tries many words at each position).
#[inline]
pub(crate) fn starts(s: &str, w: &str) -> bool {
    let (s, w) = (s.as_bytes(), w.as_bytes());
    if s.len() < w.len() {
        return false;
    }
    // Words are short: a byte loop beats a call to `memcmp`.
    for k in 0..w.len() {
        if s[k] != w[k] {
            return false;
        }
    }
    true
}

/// The bytes a piece may start with (a superset: "all" when a piece cannot tell cheaply).
/// Alternatives use it to skip, without a call, the arms that cannot lead here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Firsts([u64; 4]);

impl Firsts {
    pub const ALL: Firsts = Firsts([u64::MAX; 4]);
    pub const NONE: Firsts = Firsts([0; 4]);

    pub fn of(bytes: impl IntoIterator<Item = u8>) -> Firsts {
        let mut f = Firsts::NONE;
        for b in bytes {
            f.0[(b >> 6) as usize] |= 1 << (b & 63);
        }
        f
    }

    /// The first bytes of words, in both ASCII cases when `ci`.
    fn words<'a>(words: impl IntoIterator<Item = &'a str>, ci: bool) -> Firsts {
        Firsts::of(
            words
                .into_iter()
                .filter_map(|w| w.as_bytes().first())
                .flat_map(|&b| {
                    if ci {
                        [b.to_ascii_lowercase(), b.to_ascii_uppercase()]
                    } else {
                        [b, b]
                    }
                }),
        )
    }

    pub fn union(self, o: Firsts) -> Firsts {
        Firsts([
            self.0[0] | o.0[0],
            self.0[1] | o.0[1],
            self.0[2] | o.0[2],
            self.0[3] | o.0[3],
        ])
    }

    /// May a piece start at `s`? (The empty text: only if the piece may match nothing,
    /// which "all" stands for.)
    #[inline]
    pub fn may(&self, s: &str) -> bool {
        match s.as_bytes().first() {
            Some(&b) => self.0[(b >> 6) as usize] & (1 << (b & 63)) != 0,
            None => *self == Firsts::ALL,
        }
    }
}

/// Collects the grammar's rules while pieces describe themselves.
pub(crate) struct Describer {
    pub opts: GrammarOptions,
    rules: Vec<GRule>,
    named: HashMap<&'static str, usize>,
}

impl Describer {
    pub fn new(opts: GrammarOptions) -> Describer {
        Describer {
            opts,
            rules: Vec::new(),
            named: HashMap::new(),
        }
    }

    /// A reference to rule `name`, described by `body` the first time it is met (rules come
    /// out in first-use order, so the start rule is first).
    pub fn rule(&mut self, name: &'static str, body: impl FnOnce(&mut Describer) -> Term) -> Term {
        if !self.named.contains_key(name) {
            let k = self.rules.len();
            self.named.insert(name, k);
            self.rules.push(GRule {
                name: name.to_string(),
                body: Term::Seq(Vec::new()),
            });
            let t = simplify(body(self));
            self.rules[k].body = t;
        }
        Term::Ref(name.to_string())
    }

    /// The bound on unbounded runs (spaces, digits, list items).
    pub fn run(&self) -> u32 {
        self.opts.run_max.max(1)
    }

    pub fn into_rules(self) -> Vec<GRule> {
        self.rules
    }
}

/// Flatten nested sequences, drop empty ones, unwrap singletons.
fn simplify(t: Term) -> Term {
    match t {
        Term::Seq(v) => {
            let mut out = Vec::new();
            for x in v.into_iter().map(simplify) {
                match x {
                    Term::Seq(inner) => out.extend(inner),
                    x => out.push(x),
                }
            }
            if out.len() == 1 {
                out.pop().unwrap_or(Term::Seq(Vec::new()))
            } else {
                Term::Seq(out)
            }
        }
        Term::Alt(v) => {
            let mut out: Vec<Term> = Vec::new();
            for x in v.into_iter().map(simplify) {
                let x = match x {
                    Term::Seq(s) if s.is_empty() => Term::Lit(String::new()),
                    x => x,
                };
                match x {
                    Term::Alt(inner) => out.extend(inner),
                    x => out.push(x),
                }
            }
            if out.len() == 1 {
                out.pop().unwrap_or(Term::Seq(Vec::new()))
            } else {
                Term::Alt(out)
            }
        }
        Term::Rep(x, min, max) => match simplify(*x) {
            Term::Seq(s) if s.is_empty() => Term::Seq(s),
            x => Term::Rep(Box::new(x), min, max),
        },
        t => t,
    }
}

/// What a piece says when it is not there.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Need {
    /// "expected {what}, found {found}".
    Expected(&'static str),
    /// A message of its own (`{found}` is replaced by what was found) and a caret label.
    Guide(&'static str, &'static str),
}

impl Need {
    /// The refusal (cold, out of line: see [`fail`](super::syntax::fail)).
    #[cold]
    #[inline(never)]
    pub fn fail<T>(self, i: &In<'_>) -> R<T> {
        match self {
            Need::Expected(what) => expected(i, what),
            Need::Guide(msg, label) => fail(i, msg.replace("{found}", &found(i)), label),
        }
    }
}

/// A piece of syntax.
pub(crate) trait Syn: Send + Sync {
    type Out;
    fn parse(&self, i: &mut In<'_>) -> R<Self::Out>;
    fn describe(&self, d: &mut Describer) -> Term;
    fn lead<'s>(&self, s: &'s str) -> Lead<'s>;

    /// The bytes this piece may start with ([`Firsts::ALL`] unless a piece knows better).
    fn firsts(&self) -> Firsts {
        Firsts::ALL
    }

    /// The piece parsed if it leads here, else `None` with nothing consumed: what an
    /// alternative, an optional part or a list's separator asks. It is `lead` then `parse`,
    /// one question instead of two for the pieces that find their match while leading (a
    /// keyword table looks its word up once, not once to lead and again to parse).
    #[inline]
    fn take(&self, i: &mut In<'_>) -> Option<R<Self::Out>> {
        if leads(self.lead(i.input)) {
            Some(self.parse(i))
        } else {
            None
        }
    }

    /// Does this piece's `lead` decide on its own (never [`Lead::Skip`])? A sequence that
    /// starts with such a piece leads exactly when the piece does, so it is taken by
    /// taking its first piece ([`Syn::take`]).
    fn decisive(&self) -> bool {
        false
    }

    /// The piece with the source span it covered.
    fn spanned(self) -> Spanned<Self>
    where
        Self: Sized,
    {
        Spanned(self)
    }

    fn map<F, O>(self, f: F) -> Map<Self, F>
    where
        Self: Sized,
        F: Fn(Self::Out) -> O + Send + Sync,
    {
        Map { s: self, f }
    }
}

/// A boxed piece (alternatives of different shapes, rules).
pub(crate) type Dyn<O> = Box<dyn Syn<Out = O>>;

impl<O> Syn for Dyn<O> {
    type Out = O;
    fn parse(&self, i: &mut In<'_>) -> R<O> {
        (**self).parse(i)
    }
    fn describe(&self, d: &mut Describer) -> Term {
        (**self).describe(d)
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        (**self).lead(s)
    }
    fn firsts(&self) -> Firsts {
        (**self).firsts()
    }
    fn take(&self, i: &mut In<'_>) -> Option<R<O>> {
        (**self).take(i)
    }
    fn decisive(&self) -> bool {
        (**self).decisive()
    }
}

// ---------------------------------------------------------------- words and blanks

/// Does `s` start with `w`, and (when `whole`) does a word end right after it? The one
/// test behind keywords, exact texts and word lists.
#[inline]
pub(crate) fn at_word(s: &str, w: &str, whole: bool) -> bool {
    starts(s, w) && (!whole || super::syntax::ends_word(&s[w.len()..]))
}

/// Exact text: a keyword when `WHOLE` (it must end where a word ends: [`Kw`]), or any text
/// with no word boundary ([`Lit`]).
pub(crate) struct Exact<const WHOLE: bool>(pub &'static str, pub Need);

impl<const WHOLE: bool> Exact<WHOLE> {
    /// The text is not here. Spaces, then something else (`TP 2 frac 0.5`, where `x` is
    /// due): the space is not the mistake, and joining would not give the text, so the
    /// message says what is expected and what was found, not "no space goes here; write
    /// `2frac`" (which [`Need::fail`] says where spaces stand before the very text due, as in
    /// `velocity(1m )`).
    #[cold]
    #[inline(never)]
    fn missing<T>(&self, i: &In<'_>) -> R<T> {
        let rest = i.input.trim_start_matches(' ');
        if let Need::Expected(what) = self.1
            && rest.len() < i.input.len()
            && !rest.is_empty()
            && !rest.starts_with(self.0)
        {
            let t = super::syntax::next_token(rest);
            return super::syntax::fail(
                i,
                format!("expected {what}, found a space and then `{t}`"),
                format!("expected {what}"),
            );
        }
        self.1.fail(i)
    }
}

/// A keyword, case-sensitive, as a whole word.
pub(crate) type Kw = Exact<true>;
/// Exact text, no word boundary.
pub(crate) type Lit = Exact<false>;

impl<const WHOLE: bool> Syn for Exact<WHOLE> {
    type Out = ();
    fn parse(&self, i: &mut In<'_>) -> R<()> {
        if at_word(i.input, self.0, WHOLE) {
            let _ = i.next_slice(self.0.len());
            Ok(())
        } else {
            self.missing(i)
        }
    }
    /// One look at the text (the default asks `lead`, then `parse` looks again).
    #[inline]
    fn take(&self, i: &mut In<'_>) -> Option<R<()>> {
        if at_word(i.input, self.0, WHOLE) {
            let _ = i.next_slice(self.0.len());
            Some(Ok(()))
        } else {
            None
        }
    }
    fn describe(&self, _: &mut Describer) -> Term {
        Term::Lit(self.0.to_string())
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        if at_word(s, self.0, WHOLE) {
            Lead::Yes
        } else {
            Lead::No
        }
    }
    fn firsts(&self) -> Firsts {
        if self.0.is_empty() {
            Firsts::ALL
        } else {
            Firsts::words([self.0], false)
        }
    }
    fn decisive(&self) -> bool {
        true
    }
}

/// `kw(w, what)`: keyword `w`, or "expected {what}".
pub(crate) fn kw(w: &'static str, what: &'static str) -> Kw {
    Exact(w, Need::Expected(what))
}

pub(crate) fn lit(s: &'static str, what: &'static str) -> Lit {
    Exact(s, Need::Expected(what))
}

/// A word (the characters `chars` accepts) that is in `table`, ignoring ASCII case. Gives the
/// table's value and the word as written.
pub(crate) struct CiTable<T: 'static> {
    pub table: &'static [(&'static str, T)],
    /// The table's words by first byte ([`ci_index`]): a lookup compares only the words
    /// that start with the text's first byte (most lookups are of other words, and compare
    /// none).
    pub index: CiIndex,
    /// Give the word as written (`false`: an empty `String`, no allocation, for a call
    /// head whose spelling nothing keeps).
    pub text: bool,
    pub chars: WordChars,
    /// Must be followed directly by this text (consumed), like the `(` of `lean(`.
    pub then: &'static str,
    pub need: Need,
}

/// A keyword table's words by first byte: for each bucket (a byte, ASCII case folded, its
/// low six bits: bytes may share a bucket, which only costs a comparison), the set of the
/// table's entries whose word starts there, one bit per entry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CiIndex([u32; 64]);

impl CiIndex {
    /// The entries whose word may start with byte `b`.
    #[inline]
    fn candidates(&self, b: u8) -> u32 {
        self.0[usize::from(b.to_ascii_lowercase() & 63)]
    }
}

/// The index of a table's words, for [`CiTable::index`]. A table holds at most 32 words.
pub(crate) const fn ci_index<T>(table: &[(&str, T)]) -> CiIndex {
    assert!(table.len() <= 32, "a keyword table holds at most 32 words");
    let mut ix = [0u32; 64];
    let mut k = 0;
    while k < table.len() {
        let w = table[k].0.as_bytes();
        if !w.is_empty() {
            ix[(w[0].to_ascii_lowercase() & 63) as usize] |= 1 << k;
        }
        k += 1;
    }
    CiIndex(ix)
}

/// Which characters make up a word, for [`CiTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WordChars {
    /// Price words: ASCII letters, digits, `_` and `.` (`fair-3c` is the word `fair`).
    Price,
    /// Series words: those and `-` (`prior-close`).
    Series,
}

impl WordChars {
    /// The word at the start of `s` (not consumed; guided messages name it).
    pub fn word(self, s: &str) -> &str {
        &s[..self.end(s)]
    }

    /// The length of the word at the start of `s` (words are ASCII).
    #[inline]
    fn end(self, s: &str) -> usize {
        s.bytes().position(|b| !self.has(b)).unwrap_or(s.len())
    }

    /// Is `b` one of these word characters?
    #[inline]
    fn has(self, b: u8) -> bool {
        // One table read per byte: bit 1, a price word's byte; bit 2, a series word's.
        const fn table() -> [u8; 256] {
            let mut t = [0u8; 256];
            let mut b = 0;
            while b < 256 {
                let c = b as u8;
                if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' {
                    t[b] = 3;
                } else if c == b'-' {
                    t[b] = 2;
                }
                b += 1;
            }
            t
        }
        static WORD: [u8; 256] = table();
        let bit = match self {
            WordChars::Price => 1,
            WordChars::Series => 2,
        };
        WORD[usize::from(b)] & bit != 0
    }
}

impl<T> CiTable<T> {
    /// The entry whose word is the word at the start of `s` (ignoring ASCII case), with the
    /// word's length, when `then` follows it. Inlined: it is called at nearly every token,
    /// and most calls end at the first-byte index.
    #[inline]
    fn find(&self, s: &str) -> Option<(usize, usize)> {
        let b = s.as_bytes();
        // Only the words that start with this byte are compared (usually one, or none).
        // A table word `x` is the word here when the text starts with it, ignoring case, and
        // the word ends right after it: a table's words are made of its word characters
        // (`keyword_table_words_are_distinct_ignoring_case`), so the text's word is then
        // exactly `x`, and no two words of a table are equal ignoring case, so at most one
        // is. (A byte loop: the words are a few bytes, shorter than a call to `memcmp`.)
        let mut cands = self.index.candidates(*b.first()?);
        while cands != 0 {
            let k = cands.trailing_zeros() as usize;
            cands &= cands - 1;
            let x = self.table[k].0.as_bytes();
            let n = x.len();
            if b.len() >= n && eq_ci(x, &b[..n]) && b.get(n).is_none_or(|&c| !self.chars.has(c)) {
                return starts(&s[n..], self.then).then_some((k, n));
            }
        }
        None
    }
}

/// Are two ASCII words of one length equal ignoring case? (Each byte pair is compared as
/// written first: table words are nearly always written as the table spells them.)
#[inline]
fn eq_ci(x: &[u8], w: &[u8]) -> bool {
    x.iter()
        .zip(w)
        .all(|(&a, &b)| a == b || a.eq_ignore_ascii_case(&b))
}

impl<T: Copy> CiTable<T> {
    /// Consume the word `find` found (entry `k`, `end` bytes) and what must follow it.
    #[inline]
    fn consume(&self, i: &mut In<'_>, (k, end): (usize, usize)) -> (T, String) {
        let w = i.next_slice(end);
        let t = if self.text {
            super::syntax::lexeme_string(w)
        } else {
            String::new()
        };
        let _ = i.next_slice(self.then.len());
        (self.table[k].1, t)
    }
}

impl<T: Copy + Send + Sync> Syn for CiTable<T> {
    type Out = (T, String);
    fn parse(&self, i: &mut In<'_>) -> R<(T, String)> {
        match self.find(i.input) {
            Some(at) => Ok(self.consume(i, at)),
            None => self.need.fail(i),
        }
    }
    #[inline]
    fn take(&self, i: &mut In<'_>) -> Option<R<(T, String)>> {
        let at = self.find(i.input)?;
        Some(Ok(self.consume(i, at)))
    }
    fn decisive(&self) -> bool {
        true
    }
    fn describe(&self, _: &mut Describer) -> Term {
        let words = Term::Alt(
            self.table
                .iter()
                .map(|(w, _)| Term::LitCi(w.to_string()))
                .collect(),
        );
        if self.then.is_empty() {
            words
        } else {
            Term::Seq(vec![words, Term::Lit(self.then.to_string())])
        }
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        if self.find(s).is_some() {
            Lead::Yes
        } else {
            Lead::No
        }
    }
    fn firsts(&self) -> Firsts {
        Firsts::words(self.table.iter().map(|(w, _)| *w), true)
    }
}

/// One of `words`, case-sensitive, tried in order: gives its index. `whole` words must end
/// where a word ends (`buy`, `above`); otherwise the text is matched exactly (`>=` before `>`).
pub(crate) struct Words {
    pub words: &'static [&'static str],
    pub whole: bool,
    pub need: Need,
}

/// One of `words`, each a whole word.
pub(crate) fn one_of(words: &'static [&'static str], need: Need) -> Words {
    Words {
        words,
        whole: true,
        need,
    }
}

/// One of several exact texts, tried in order.
pub(crate) fn lits(words: &'static [&'static str], need: Need) -> Words {
    Words {
        words,
        whole: false,
        need,
    }
}

impl Words {
    /// The first of the words at the start of `s` (inlined, as [`CiTable::find`] is).
    #[inline]
    fn find(&self, s: &str) -> Option<usize> {
        self.words
            .iter()
            .position(|w| starts(s, w) && (!self.whole || super::syntax::ends_word(&s[w.len()..])))
    }
}

impl Syn for Words {
    type Out = usize;
    fn parse(&self, i: &mut In<'_>) -> R<usize> {
        match self.find(i.input) {
            Some(k) => {
                let _ = i.next_slice(self.words[k].len());
                Ok(k)
            }
            None => self.need.fail(i),
        }
    }
    #[inline]
    fn take(&self, i: &mut In<'_>) -> Option<R<usize>> {
        let k = self.find(i.input)?;
        let _ = i.next_slice(self.words[k].len());
        Some(Ok(k))
    }
    fn decisive(&self) -> bool {
        true
    }
    fn describe(&self, _: &mut Describer) -> Term {
        Term::Alt(
            self.words
                .iter()
                .map(|w| Term::Lit(w.to_string()))
                .collect(),
        )
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        if self.find(s).is_some() {
            Lead::Yes
        } else {
            Lead::No
        }
    }
    fn firsts(&self) -> Firsts {
        Firsts::words(self.words.iter().copied(), false)
    }
}

/// One or more spaces between tokens. A tab, or no space, is refused with the piece's need.
pub(crate) struct Sp(pub Need);

/// `sp(what)`: spaces, or "expected {what}".
pub(crate) fn sp(what: &'static str) -> Sp {
    Sp(Need::Expected(what))
}

#[inline]
fn spaces(s: &str) -> usize {
    s.bytes().position(|b| b != b' ').unwrap_or(s.len())
}

impl Syn for Sp {
    type Out = ();
    fn parse(&self, i: &mut In<'_>) -> R<()> {
        let n = spaces(i.input);
        let _ = i.next_slice(n);
        if n == 0 || i.input.starts_with('\t') {
            // The next token joined to the one before it (`halt,ride`, `NOT(spot`): the
            // token may be just what is expected, so the message names the missing space.
            if let Need::Expected(what) = self.0
                && n == 0
                && !i.input.is_empty()
                && !i.input.starts_with('\t')
            {
                return expected_space(i, what);
            }
            return self.0.fail(i);
        }
        Ok(())
    }
    fn describe(&self, d: &mut Describer) -> Term {
        let n = d.run();
        d.rule("sp", |_| {
            Term::Rep(Box::new(Term::Lit(" ".into())), 1, Some(n))
        })
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        let n = spaces(s);
        if n == 0 || s[n..].starts_with('\t') {
            Lead::No
        } else {
            Lead::Skip(&s[n..])
        }
    }
    fn firsts(&self) -> Firsts {
        Firsts::of([b' '])
    }
}

/// Zero or more spaces.
pub(crate) struct Sp0;

impl Syn for Sp0 {
    type Out = ();
    fn parse(&self, i: &mut In<'_>) -> R<()> {
        let n = spaces(i.input);
        let _ = i.next_slice(n);
        Ok(())
    }
    fn describe(&self, d: &mut Describer) -> Term {
        let n = d.run();
        d.rule("sp0", |_| {
            Term::Rep(Box::new(Term::Lit(" ".into())), 0, Some(n))
        })
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        Lead::Skip(&s[spaces(s)..])
    }
}

// ---------------------------------------------------------------- composition

/// Sequences are tuples of pieces.
macro_rules! seq_impl {
    ($n0:ident $v0:ident $(, $n:ident $v:ident)+) => {
        impl<$n0: Syn, $($n: Syn),+> Syn for ($n0, $($n,)+) {
            type Out = ($n0::Out, $($n::Out,)+);
            fn parse(&self, i: &mut In<'_>) -> R<Self::Out> {
                let ($v0, $($v,)+) = self;
                Ok(($v0.parse(i)?, $($v.parse(i)?,)+))
            }
            fn describe(&self, d: &mut Describer) -> Term {
                let ($v0, $($v,)+) = self;
                Term::Seq(vec![$v0.describe(d), $($v.describe(d)),+])
            }
            fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
                let ($v0, $($v,)+) = self;
                let mut s = s;
                match $v0.lead(s) {
                    Lead::Skip(rest) => s = rest,
                    other => return other,
                }
                $(
                    match $v.lead(s) {
                        Lead::Skip(rest) => s = rest,
                        other => return other,
                    }
                )+
                Lead::Skip(s)
            }
            fn firsts(&self) -> Firsts {
                // Only a first piece that is not optional decides; spaces (`Sp`) are.
                self.0.firsts()
            }
            #[inline]
            fn take(&self, i: &mut In<'_>) -> Option<R<Self::Out>> {
                let ($v0, $($v,)+) = self;
                if !$v0.decisive() {
                    return if leads(self.lead(i.input)) {
                        Some(self.parse(i))
                    } else {
                        None
                    };
                }
                // The first piece decides: taking it is leading.
                let first = match $v0.take(i)? {
                    Ok(x) => x,
                    Err(e) => return Some(Err(e)),
                };
                let rest = || -> R<Self::Out> { Ok((first, $($v.parse(i)?,)+)) };
                Some(rest())
            }
            fn decisive(&self) -> bool {
                self.0.decisive()
            }
        }
    };
}
seq_impl!(A a, B b);
seq_impl!(A a, B b, C c);
seq_impl!(A a, B b, C c, D d);
seq_impl!(A a, B b, C c, D d, E e);
seq_impl!(A a, B b, C c, D d, E e, F f);
seq_impl!(A a, B b, C c, D d, E e, F f, G g);
seq_impl!(A a, B b, C c, D d, E e, F f, G g, H h);
seq_impl!(A a, B b, C c, D d, E e, F f, G g, H h, I i2);
seq_impl!(A a, B b, C c, D d, E e, F f, G g, H h, I i2, J j);
seq_impl!(A a, B b, C c, D d, E e, F f, G g, H h, I i2, J j, K k);

/// A piece with its result mapped.
pub(crate) struct Map<S, F> {
    s: S,
    f: F,
}

impl<S: Syn, F: Fn(S::Out) -> O + Send + Sync, O> Syn for Map<S, F> {
    type Out = O;
    fn parse(&self, i: &mut In<'_>) -> R<O> {
        self.s.parse(i).map(&self.f)
    }
    fn describe(&self, d: &mut Describer) -> Term {
        self.s.describe(d)
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        self.s.lead(s)
    }
    fn firsts(&self) -> Firsts {
        self.s.firsts()
    }
    #[inline]
    fn take(&self, i: &mut In<'_>) -> Option<R<O>> {
        self.s.take(i).map(|r| r.map(&self.f))
    }
    fn decisive(&self) -> bool {
        self.s.decisive()
    }
}

fn leads(l: Lead<'_>) -> bool {
    matches!(l, Lead::Yes)
}

/// An optional part: taken when it leads here, and then it must be whole.
pub(crate) struct Opt<S>(pub S);

pub(crate) fn opt<S: Syn>(s: S) -> Opt<S> {
    Opt(s)
}

impl<S: Syn> Syn for Opt<S> {
    type Out = Option<S::Out>;
    fn parse(&self, i: &mut In<'_>) -> R<Option<S::Out>> {
        self.0.take(i).transpose()
    }
    fn describe(&self, d: &mut Describer) -> Term {
        Term::Rep(Box::new(self.0.describe(d)), 0, Some(1))
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        match self.0.lead(s) {
            Lead::Yes => Lead::Yes,
            _ => Lead::Skip(s),
        }
    }
}

/// `item (sep item)*`: the separator decides whether another item follows. `bounded` lists
/// are capped at the grammar's run bound.
pub(crate) struct List<S, P> {
    pub item: S,
    pub sep: P,
    /// The item after a separator (the same piece, with its own message).
    pub next: S,
    pub bounded: bool,
}

impl<S: Syn, P: Syn> Syn for List<S, P> {
    type Out = Vec<S::Out>;
    fn parse(&self, i: &mut In<'_>) -> R<Vec<S::Out>> {
        let mut out = vec![self.item.parse(i)?];
        while let Some(sep) = self.sep.take(i) {
            sep?;
            out.push(self.next.parse(i)?);
        }
        Ok(out)
    }
    fn describe(&self, d: &mut Describer) -> Term {
        let max = self.bounded.then(|| d.run());
        list_term(d, &self.item, &self.sep, max)
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        self.item.lead(s)
    }
}

/// The grammar of `item (sep item)*`, with at most `max` more items.
fn list_term(d: &mut Describer, item: &impl Syn, sep: &impl Syn, max: Option<u32>) -> Term {
    let item = item.describe(d);
    let more = Term::Seq(vec![sep.describe(d), item.clone()]);
    Term::Seq(vec![item, Term::Rep(Box::new(more), 0, max)])
}

/// `item (sep item)*` folded into one value: a lone item is returned as it is (no list is
/// built for the common one-term trigger), several are joined by `many`.
pub(crate) struct Joined<S: Syn, P> {
    pub item: S,
    pub sep: P,
    pub many: fn(Vec<S::Out>) -> S::Out,
}

impl<S: Syn, P: Syn> Syn for Joined<S, P> {
    type Out = S::Out;
    fn parse(&self, i: &mut In<'_>) -> R<S::Out> {
        let first = self.item.parse(i)?;
        let Some(sep) = self.sep.take(i) else {
            return Ok(first);
        };
        sep?;
        let mut out = vec![first, self.item.parse(i)?];
        while let Some(sep) = self.sep.take(i) {
            sep?;
            out.push(self.item.parse(i)?);
        }
        Ok((self.many)(out))
    }
    fn describe(&self, d: &mut Describer) -> Term {
        list_term(d, &self.item, &self.sep, None)
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        self.item.lead(s)
    }
}

/// Zero or more of a piece, while it leads.
pub(crate) struct Many<S>(pub S);

impl<S: Syn> Syn for Many<S> {
    type Out = Vec<S::Out>;
    fn parse(&self, i: &mut In<'_>) -> R<Vec<S::Out>> {
        let mut out = Vec::new();
        while let Some(x) = self.0.take(i) {
            out.push(x?);
        }
        Ok(out)
    }
    fn describe(&self, d: &mut Describer) -> Term {
        Term::Rep(Box::new(self.0.describe(d)), 0, None)
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        match self.0.lead(s) {
            Lead::Yes => Lead::Yes,
            _ => Lead::Skip(s),
        }
    }
}

/// Alternatives built at run time from a table (the pane catalog): the first that leads is
/// taken; when none does, `otherwise` refuses with a guided message. Fixed alternatives are
/// [`Choice`] tuples.
pub(crate) struct Alt<O> {
    pub arms: Vec<Dyn<O>>,
    pub otherwise: fn(&mut In<'_>) -> R<O>,
    /// Each arm's first bytes, computed on first use.
    pub firsts: OnceLock<Vec<Firsts>>,
}

/// Each arm's first bytes.
fn arm_firsts<O>(arms: &[Dyn<O>]) -> Vec<Firsts> {
    arms.iter().map(|a| a.firsts()).collect()
}

impl<O> Syn for Alt<O> {
    type Out = O;
    fn parse(&self, i: &mut In<'_>) -> R<O> {
        let firsts = self.firsts.get_or_init(|| arm_firsts(&self.arms));
        for (a, f) in self.arms.iter().zip(firsts) {
            if f.may(i.input) && leads(a.lead(i.input)) {
                return a.parse(i);
            }
        }
        (self.otherwise)(i)
    }
    fn describe(&self, d: &mut Describer) -> Term {
        Term::Alt(self.arms.iter().map(|a| a.describe(d)).collect())
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        let firsts = self.firsts.get_or_init(|| arm_firsts(&self.arms));
        if self
            .arms
            .iter()
            .zip(firsts)
            .any(|(a, f)| f.may(s) && leads(a.lead(s)))
        {
            Lead::Yes
        } else {
            Lead::No
        }
    }
    fn firsts(&self) -> Firsts {
        self.arms
            .iter()
            .fold(Firsts::NONE, |acc, a| acc.union(a.firsts()))
    }
}

/// Box a piece as an alternative arm.
pub(crate) fn arm<S: Syn + 'static>(s: S) -> Dyn<S::Out> {
    Box::new(s)
}

/// A named grammar rule: built once, shared, and referred to by name in the grammar (rules
/// may be recursive: a price inside `lean(...)`, a trigger inside a group).
pub(crate) struct Named<O: 'static> {
    pub name: &'static str,
    pub get: fn() -> &'static Dyn<O>,
}

impl<O> Syn for Named<O> {
    type Out = O;
    fn parse(&self, i: &mut In<'_>) -> R<O> {
        (self.get)().parse(i)
    }
    fn describe(&self, d: &mut Describer) -> Term {
        let get = self.get;
        d.rule(self.name, |d| get().describe(d))
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        (self.get)().lead(s)
    }
    fn firsts(&self) -> Firsts {
        (self.get)().firsts()
    }
    fn take(&self, i: &mut In<'_>) -> Option<R<O>> {
        (self.get)().take(i)
    }
    fn decisive(&self) -> bool {
        (self.get)().decisive()
    }
}

/// `rule!(fn price -> Price = "price", <piece>)`: a [`Named`] rule built on first use.
macro_rules! rule {
    ($vis:vis fn $f:ident -> $out:ty = $name:literal, $body:expr) => {
        $vis fn $f() -> $crate::lang::syn::Named<$out> {
            fn get() -> &'static $crate::lang::syn::Dyn<$out> {
                static S: std::sync::OnceLock<$crate::lang::syn::Dyn<$out>> =
                    std::sync::OnceLock::new();
                S.get_or_init(|| Box::new($body))
            }
            $crate::lang::syn::Named { name: $name, get }
        }
    };
}
pub(crate) use rule;

/// A lexeme: a hand-written lexer and its character-level term, defined together.
pub(crate) struct Lexeme<O: 'static> {
    /// The grammar rule it is written as.
    pub rule: &'static str,
    pub lex: fn(&mut In<'_>, &str) -> R<O>,
    /// Does the lexeme start here? (Cheap: its first character, or a full try.)
    pub looks: fn(&str) -> bool,
    pub term: fn(&mut Describer) -> Term,
}

impl<O> Lexeme<O> {
    /// The lexeme, refusing with "expected {what}".
    pub fn what(&'static self, what: &'static str) -> Lex<O> {
        Lex { def: self, what }
    }
}

/// A lexeme in use, with what to say when it is not there.
pub(crate) struct Lex<O: 'static> {
    pub def: &'static Lexeme<O>,
    pub what: &'static str,
}

impl<O> Syn for Lex<O> {
    type Out = O;
    fn parse(&self, i: &mut In<'_>) -> R<O> {
        // A space before a lexeme that takes none (`plan( p )`): the lexeme is there after
        // it, so the message is about the space.
        if i.input.starts_with(' ') && !(self.def.looks)(i.input) {
            let rest = i.input.trim_start_matches(' ');
            if !rest.is_empty() && (self.def.looks)(rest) {
                return expected_no_space(i, self.what);
            }
        }
        (self.def.lex)(i, self.what)
    }
    fn describe(&self, d: &mut Describer) -> Term {
        let term = self.def.term;
        d.rule(self.def.rule, term)
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        if (self.def.looks)(s) {
            Lead::Yes
        } else {
            Lead::No
        }
    }
    fn decisive(&self) -> bool {
        true
    }
}

/// A check that only refuses: when `when` leads here, `refuse` gives the guided error.
/// It consumes nothing and is not in the grammar.
pub(crate) struct Refuse<S> {
    pub when: S,
    pub refuse: fn(&mut In<'_>) -> R<()>,
}

impl<S: Syn> Syn for Refuse<S> {
    type Out = ();
    fn parse(&self, i: &mut In<'_>) -> R<()> {
        if leads(self.when.lead(i.input)) {
            (self.refuse)(i)
        } else {
            Ok(())
        }
    }
    fn describe(&self, _: &mut Describer) -> Term {
        Term::Seq(Vec::new())
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        Lead::Skip(s)
    }
}

/// A piece that only checks the input, with code (the end of a line with its guided
/// messages): not in the grammar, which the line layer ends.
pub(crate) struct Check(pub fn(&mut In<'_>) -> R<()>);

impl Syn for Check {
    type Out = ();
    fn parse(&self, i: &mut In<'_>) -> R<()> {
        (self.0)(i)
    }
    fn describe(&self, _: &mut Describer) -> Term {
        Term::Seq(Vec::new())
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        Lead::Skip(s)
    }
}

/// A recursive use of a rule (a group inside a trigger, `NOT` before a trigger, a price
/// inside `lean(` / `min(` / `max(`): the parser counts how deep these nest and refuses past
/// [`MAX_NESTING`](crate::limits::MAX_NESTING) with rule `limit`, so no input can run the
/// parser (or any recursive walk of the model after it) out of stack. The limit is a
/// resource bound, not grammar: the piece describes as its inner piece.
pub(crate) struct Nest<S>(pub S);

impl<S: Syn> Syn for Nest<S> {
    type Out = S::Out;
    fn parse(&self, i: &mut In<'_>) -> R<S::Out> {
        let depth = i.state.depth;
        let d = depth.get();
        if d >= crate::limits::MAX_NESTING {
            return too_deep(i);
        }
        depth.set(d + 1);
        let out = self.0.parse(i);
        depth.set(d);
        out
    }
    fn describe(&self, d: &mut Describer) -> Term {
        self.0.describe(d)
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        self.0.lead(s)
    }
    fn firsts(&self) -> Firsts {
        self.0.firsts()
    }
    fn take(&self, i: &mut In<'_>) -> Option<R<S::Out>> {
        let depth = i.state.depth;
        let d = depth.get();
        if d >= crate::limits::MAX_NESTING {
            // Too deep: `parse` gives the refusal, when the piece leads.
            return leads(self.0.lead(i.input)).then(|| self.parse(i));
        }
        depth.set(d + 1);
        let out = self.0.take(i);
        depth.set(d);
        out
    }
    fn decisive(&self) -> bool {
        self.0.decisive()
    }
}

/// The refusal of a [`Nest`] past [`MAX_NESTING`](crate::limits::MAX_NESTING) (cold, out of
/// line).
#[cold]
#[inline(never)]
fn too_deep<T>(i: &In<'_>) -> R<T> {
    super::syntax::fail_limit(
        i,
        format!(
            "nested more than {} deep (groups, NOT and lean/min/max count): flatten the expression, e.g. join predicates with AND / OR instead of nesting groups",
            crate::limits::MAX_NESTING
        ),
        "nested too deep",
    )
}

/// A piece with the source span it covered.
pub(crate) struct Spanned<S>(pub S);

impl<S: Syn> Syn for Spanned<S> {
    type Out = (S::Out, super::ast::Span);
    fn parse(&self, i: &mut In<'_>) -> R<Self::Out> {
        let start = super::syntax::pos(i);
        let out = self.0.parse(i)?;
        Ok((out, super::ast::Span::new(start, super::syntax::pos(i))))
    }
    fn describe(&self, d: &mut Describer) -> Term {
        self.0.describe(d)
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        self.0.lead(s)
    }
    fn firsts(&self) -> Firsts {
        self.0.firsts()
    }
    #[inline]
    fn take(&self, i: &mut In<'_>) -> Option<R<Self::Out>> {
        let start = super::syntax::pos(i);
        let out = self.0.take(i)?;
        Some(out.map(|out| (out, super::ast::Span::new(start, super::syntax::pos(i)))))
    }
    fn decisive(&self) -> bool {
        self.0.decisive()
    }
}

/// Turn a lost alternative into the parser's error at this point.
pub(crate) fn backtrack<T>(i: &mut In<'_>) -> R<T> {
    Err(ErrMode::Backtrack(
        <Box<PErr> as winnow::error::ParserError<In<'_>>>::from_input(&*i),
    ))
}

/// `a` then `b`, where `b`'s messages may name what `a` read: `{prev}` in them is replaced
/// by `f(&a's result)` ("after `fills.avg_px`", "`TP 2x`").
pub(crate) struct Ctx<A, B, F> {
    pub a: A,
    pub b: B,
    pub f: F,
}

impl<A: Syn, B: Syn, F: Fn(&A::Out) -> String + Send + Sync> Syn for Ctx<A, B, F> {
    type Out = (A::Out, B::Out);
    fn parse(&self, i: &mut In<'_>) -> R<Self::Out> {
        let x = self.a.parse(i)?;
        self.then(x, i)
    }
    fn take(&self, i: &mut In<'_>) -> Option<R<Self::Out>> {
        if !self.a.decisive() {
            return leads(self.lead(i.input)).then(|| self.parse(i));
        }
        Some(match self.a.take(i)? {
            Ok(x) => self.then(x, i),
            Err(e) => Err(e),
        })
    }
    fn decisive(&self) -> bool {
        self.a.decisive()
    }
    fn describe(&self, d: &mut Describer) -> Term {
        Term::Seq(vec![self.a.describe(d), self.b.describe(d)])
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        match self.a.lead(s) {
            Lead::Skip(rest) => self.b.lead(rest),
            other => other,
        }
    }
}

impl<A: Syn, B: Syn, F: Fn(&A::Out) -> String> Ctx<A, B, F> {
    /// `b` after `a` gave `x`, its messages naming `x`.
    fn then(&self, x: A::Out, i: &mut In<'_>) -> R<(A::Out, B::Out)> {
        match self.b.parse(i) {
            Ok(y) => Ok((x, y)),
            Err(ErrMode::Cut(e)) => Err(ErrMode::Cut(self.name(e, &x))),
            Err(ErrMode::Backtrack(e)) => Err(ErrMode::Backtrack(self.name(e, &x))),
            Err(e) => Err(e),
        }
    }
}

impl<A, B, F> Ctx<A, B, F> {
    /// `{prev}` in an error named (cold, out of line: an error is rare).
    #[cold]
    #[inline(never)]
    fn name<O>(&self, mut e: Box<PErr>, x: &O) -> Box<PErr>
    where
        F: Fn(&O) -> String,
    {
        if e.msg.contains("{prev}") || e.label.contains("{prev}") {
            let p = (self.f)(x);
            e.msg = e.msg.replace("{prev}", &p);
            e.label = e.label.replace("{prev}", &p);
        }
        e
    }
}

/// Alternatives as a tuple of pieces (no boxes: each arm is compiled in place). The first
/// that leads is taken; when none does, `otherwise` refuses with a guided message.
pub(crate) struct Choice<T, O> {
    pub arms: T,
    pub otherwise: fn(&mut In<'_>) -> R<O>,
}

/// Alternatives as a tuple whose last arm is taken, without asking whether it leads, when no
/// other arm does: its own refusals are then the guided messages. (A predicate's series:
/// asking whether a series leads is the most expensive question the parser asks, so it is
/// asked once.)
pub(crate) struct ChoiceOr<T, L> {
    pub arms: T,
    pub last: L,
}

/// A tuple of arms with one output type.
pub(crate) trait Arms<O> {
    fn take(&self, i: &mut In<'_>) -> Option<R<O>>;
    fn terms(&self, d: &mut Describer, out: &mut Vec<Term>);
    fn any_leads(&self, s: &str) -> bool;
    fn union(&self) -> Firsts;
}

macro_rules! arms_impl {
    ($($n:ident $v:ident),+) => {
        impl<O, $($n: Syn<Out = O>),+> Arms<O> for ($($n,)+) {
            #[inline]
            fn take(&self, i: &mut In<'_>) -> Option<R<O>> {
                let ($($v,)+) = self;
                $(
                    if let Some(r) = $v.take(i) {
                        return Some(r);
                    }
                )+
                None
            }
            fn terms(&self, d: &mut Describer, out: &mut Vec<Term>) {
                let ($($v,)+) = self;
                $(out.push($v.describe(d));)+
            }
            fn any_leads(&self, s: &str) -> bool {
                let ($($v,)+) = self;
                false $(|| leads($v.lead(s)))+
            }
            fn union(&self) -> Firsts {
                let ($($v,)+) = self;
                Firsts::NONE $(.union($v.firsts()))+
            }
        }
    };
}
arms_impl!(A a);
arms_impl!(A a, B b);
arms_impl!(A a, B b, C c);
arms_impl!(A a, B b, C c, D d);
arms_impl!(A a, B b, C c, D d, E e);
arms_impl!(A a, B b, C c, D d, E e, F f);
arms_impl!(A a, B b, C c, D d, E e, F f, G g);
arms_impl!(A a, B b, C c, D d, E e, F f, G g, H h);
arms_impl!(A a, B b, C c, D d, E e, F f, G g, H h, I i2);
arms_impl!(A a, B b, C c, D d, E e, F f, G g, H h, I i2, J j);

impl<O, T: Arms<O> + Send + Sync> Syn for Choice<T, O> {
    type Out = O;
    #[inline]
    fn parse(&self, i: &mut In<'_>) -> R<O> {
        match self.arms.take(i) {
            Some(r) => r,
            None => (self.otherwise)(i),
        }
    }
    #[inline]
    fn take(&self, i: &mut In<'_>) -> Option<R<O>> {
        self.arms.take(i)
    }
    fn decisive(&self) -> bool {
        true
    }
    fn describe(&self, d: &mut Describer) -> Term {
        let mut v = Vec::new();
        self.arms.terms(d, &mut v);
        Term::Alt(v)
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        if self.arms.any_leads(s) {
            Lead::Yes
        } else {
            Lead::No
        }
    }
    fn firsts(&self) -> Firsts {
        self.arms.union()
    }
}

impl<O, T: Arms<O> + Send + Sync, L: Syn<Out = O>> Syn for ChoiceOr<T, L> {
    type Out = O;
    #[inline]
    fn parse(&self, i: &mut In<'_>) -> R<O> {
        match self.arms.take(i) {
            Some(r) => r,
            None => self.last.parse(i),
        }
    }
    #[inline]
    fn take(&self, i: &mut In<'_>) -> Option<R<O>> {
        self.arms.take(i).or_else(|| self.last.take(i))
    }
    fn decisive(&self) -> bool {
        true
    }
    fn describe(&self, d: &mut Describer) -> Term {
        let mut v = Vec::new();
        self.arms.terms(d, &mut v);
        v.push(self.last.describe(d));
        Term::Alt(v)
    }
    fn lead<'s>(&self, s: &'s str) -> Lead<'s> {
        if self.arms.any_leads(s) || leads(self.last.lead(s)) {
            Lead::Yes
        } else {
            Lead::No
        }
    }
    fn firsts(&self) -> Firsts {
        self.arms.union().union(self.last.firsts())
    }
}
