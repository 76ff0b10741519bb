//! The parser: a line layer (indentation, comments, blank lines) over winnow parsers for each
//! line's code. Syntax errors are recovered line by line so `check` can report every broken
//! line, but any error refuses the whole document (fail closed).

use super::ast::*;
use super::diag::{Diagnostic, LineIndex, RESERVED_WORDS, Rule};
use super::grammar::{self as g, CharClass, GrammarScope, Term};
use super::lexicon::*;
use super::syn::*;
use std::sync::OnceLock;
use winnow::error::{ErrMode, ParserError};
use winnow::stream::{Stateful, Stream};
use winnow::token::take_while;
use winnow::{ModalResult, Parser};

/// The whole document rides along as parser state; spans are computed from slice addresses
/// (every line slice is a subslice of it).
pub(crate) type In<'a> = Stateful<&'a str, Doc<'a>>;

/// The parser's state: the document text, and how deep the recursive rules (groups, `NOT`,
/// price calls) are nested right now ([`Nest`] counts it against
/// [`MAX_NESTING`](crate::limits::MAX_NESTING)).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Doc<'a> {
    pub text: &'a str,
    pub depth: &'a std::cell::Cell<u32>,
}
/// A parser's result. The error is boxed: a failure is rare (a choice asks which arm leads
/// before parsing it), and a result that carries only a pointer for it is small, so every
/// layer of the parser moves fewer bytes on the way up (an unboxed error made even `R<()>`
/// 80 bytes).
pub(crate) type R<T> = ModalResult<T, Box<PErr>>;

/// A syntax error inside a line: absolute byte range, rule, message and caret label.
#[derive(Debug, Clone)]
pub(crate) struct PErr {
    pub start: usize,
    pub end: usize,
    pub rule: Rule,
    pub msg: String,
    pub label: String,
}

impl PErr {
    /// An error with no message yet at the token `input` is at.
    fn at(input: &In<'_>) -> PErr {
        let p = pos(input);
        PErr {
            start: p,
            end: p + next_token(input.input).len(),
            rule: Rule::Syntax,
            msg: String::new(),
            label: String::new(),
        }
    }
}

impl<'a> ParserError<In<'a>> for Box<PErr> {
    type Inner = Self;

    fn from_input(input: &In<'a>) -> Self {
        Box::new(PErr::at(input))
    }

    fn into_inner(self) -> Result<Self::Inner, Self> {
        Ok(self)
    }

    fn or(self, other: Self) -> Self {
        match (self.msg.is_empty(), other.msg.is_empty()) {
            (false, true) => self,
            (true, false) => other,
            _ if self.start > other.start => self,
            _ => other,
        }
    }
}

pub(crate) fn pos(i: &In<'_>) -> usize {
    i.input.as_ptr() as usize - i.state.text.as_ptr() as usize
}

/// The document text between `start` and the current position.
pub(crate) fn consumed_since<'a>(i: &In<'a>, start: usize) -> &'a str {
    i.state.text.get(start..pos(i)).unwrap_or("")
}

/// The next token as a person would name it in "found `x`".
pub(crate) fn next_token(s: &str) -> &str {
    let s = s.trim_start_matches(' ');
    if s.is_empty() {
        return "";
    }
    let end = s
        .char_indices()
        .find(|&(i, c)| {
            c.is_whitespace() || (i > 0 && matches!(c, '(' | ')' | ',' | '{' | '}' | '@'))
        })
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    if end == 0 {
        let c = s.chars().next().map(char::len_utf8).unwrap_or(0);
        &s[..c]
    } else {
        &s[..end]
    }
}

#[cold]
#[inline(never)]
pub(crate) fn found(i: &In<'_>) -> String {
    let t = next_token(i.input);
    if t.is_empty() {
        "end of line".to_string()
    } else if t.starts_with('\t') {
        // A raw tab between backticks reads as nothing: name it.
        "a tab (separate tokens with a single space)".to_string()
    } else {
        format!("`{t}`")
    }
}

/// A cut error at the current position covering the next token.
///
/// Errors are cold and never inlined (so are the helpers below): a piece that can refuse
/// then keeps its refusal out of line, and its common path saves fewer registers.
#[cold]
#[inline(never)]
pub(crate) fn fail<T>(i: &In<'_>, msg: impl Into<String>, label: impl Into<String>) -> R<T> {
    let rest = i.input.trim_start_matches(' ');
    let start = pos(i) + (i.input.len() - rest.len());
    let tok = next_token(rest);
    Err(ErrMode::Cut(Box::new(PErr {
        start,
        end: start + tok.len().max(if rest.is_empty() { 0 } else { 1 }),
        rule: Rule::Syntax,
        msg: msg.into(),
        label: label.into(),
    })))
}

/// A cut error under rule `limit` (a resource limit, such as the nesting depth).
#[cold]
#[inline(never)]
pub(crate) fn fail_limit<T>(i: &In<'_>, msg: impl Into<String>, label: &str) -> R<T> {
    fail_rule(i, Rule::Limit, msg, label)
}

#[cold]
#[inline(never)]
fn fail_rule<T>(i: &In<'_>, rule: Rule, msg: impl Into<String>, label: &str) -> R<T> {
    match fail::<T>(i, msg, label) {
        Err(ErrMode::Cut(mut e)) => {
            e.rule = rule;
            Err(ErrMode::Cut(e))
        }
        other => other,
    }
}

#[cold]
#[inline(never)]
pub(crate) fn expected<T>(i: &In<'_>, what: &str) -> R<T> {
    let f = found(i);
    let rest = i.input.trim_start_matches(' ');
    if rest.len() < i.input.len() && !rest.is_empty() {
        // Spaces where the grammar takes none (`velocity(1m )`): the token after them may
        // be just what is expected, so the message names the space.
        return expected_no_space(i, what);
    }
    fail(
        i,
        format!("expected {what}, found {f}"),
        format!("expected {what}"),
    )
}

/// "expected {what}" where spaces stand where the grammar takes none (`plan( p )`,
/// `velocity( 1m )`): the token after them is often just what is expected, so the message
/// names the space and shows the text without it, in the author's words.
#[cold]
#[inline(never)]
pub(crate) fn expected_no_space<T>(i: &In<'_>, what: &str) -> R<T> {
    let t = next_token(i.input);
    fail(
        i,
        format!(
            "expected {what}, found a space before `{t}`: no space goes here; write `{}{t}`",
            word_before(i)
        ),
        "remove the space",
    )
}

/// "expected {what}" where the next token is joined to the one before it (`halt,ride`,
/// `->halt`, `NOT(spot > hod)`): the grammar needs a space there, and the token found may be
/// just what is expected, so the message names the missing space and shows the two tokens
/// apart, in the author's words.
#[cold]
#[inline(never)]
pub(crate) fn expected_space<T>(i: &In<'_>, what: &str) -> R<T> {
    let t = next_token(i.input);
    let before = word_before(i);
    if t.starts_with(['=', '!']) {
        // Equality has its own message, where the comparison is read.
        return expected(i, what);
    }
    let op = t.len() - t.trim_start_matches(['<', '>', '=']).len();
    if op > 0 && matches!(before, "<" | ">" | "<=" | ">=") {
        // `>>=`, `<<`, `><`: one operator with a character too many, not two words joined.
        let written = format!("{before}{}", &t[..op]);
        return fail(
            i,
            format!(
                "`{written}` is no comparison: write one of `<`, `<=`, `>`, `>=` (or `crosses above`, `crosses below`), with a space on each side, e.g. `spot >= vwap`"
            ),
            "not a comparison",
        );
    }
    let fix = if op > 0 {
        let joined = format!("{before} {} {}", &t[..op], &t[op..]);
        format!(
            "a comparison has a space on each side: `{}`",
            joined.trim_end()
        )
    } else {
        format!("put one space between them: `{before} {t}`")
    };
    fail(
        i,
        format!("expected {what}, found `{t}` with no space before it: {fix}"),
        "a space is missing here",
    )
}

/// The text of the line just before the current position, back to its last space (the
/// token the next one is joined to, or the spaces follow).
fn word_before<'a>(i: &In<'a>) -> &'a str {
    let before = i.state.text.get(..pos(i)).unwrap_or("");
    let before = before.trim_end_matches(' ');
    let start = before.rfind([' ', '\n']).map_or(0, |k| k + 1);
    &before[start..]
}

// ---------------------------------------------------------------- lexical helpers

/// Does a word end where `rest` starts (end, or a char that cannot continue a word)?
#[inline]
pub(crate) fn ends_word(rest: &str) -> bool {
    match rest.as_bytes().first() {
        None => true,
        // ASCII (nearly always): no decoding.
        Some(&b) if b.is_ascii() => {
            !(b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'))
        }
        Some(_) => rest
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))),
    }
}

// ---------------------------------------------------------------- lexeme strings

thread_local! {
    /// Strings of statements already checked and printed (`check_print` gives each
    /// statement back), emptied, for the next statements' lexemes: a lexeme read then costs
    /// no allocation, and a statement dropped frees fewer. At most [`POOL_MAX`]; emptied by
    /// [`clear_pool`] when the document is done.
    static POOL: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The most strings the pool keeps.
const POOL_MAX: usize = 1 << 13;
/// The least capacity of a lexeme's `String`: malloc's smallest chunk holds 24 bytes
/// whatever is asked, and a string given back then holds any short lexeme without growing.
const LEXEME_CAP: usize = 24;
/// The largest string the pool takes back.
const POOL_CAP: usize = 64;

/// A thread-local pool of things given back ([`POOL`], [`BOXES`], [`PREDS`]; filled through
/// [`Bin`]).
type Pool<T> = std::thread::LocalKey<std::cell::RefCell<Vec<T>>>;

/// The last thing given back to `pool`, if any (none while the thread's pool is gone or
/// borrowed).
fn pool_take<T>(pool: &'static Pool<T>) -> Option<T> {
    pool.try_with(|p| p.try_borrow_mut().ok().and_then(|mut p| p.pop()))
        .ok()
        .flatten()
}

/// Empty `pool` (its memory goes back to the allocator).
fn pool_clear<T>(pool: &'static Pool<T>) {
    let _ = pool.try_with(|p| {
        if let Ok(mut p) = p.try_borrow_mut() {
            *p = Vec::new();
        }
    });
}

/// `s` as an owned lexeme, in a string from the pool when it has one.
pub(crate) fn lexeme_string(s: &str) -> String {
    match pool_take(&POOL) {
        Some(mut t) => {
            t.clear();
            t.push_str(s);
            t
        }
        None => {
            let mut t = String::with_capacity(s.len().max(LEXEME_CAP));
            t.push_str(s);
            t
        }
    }
}

/// The pools, borrowed once for a whole statement given back: its strings and operand
/// boxes go in without a thread-local lookup each (a plan holds about a thousand).
struct Bin<'p> {
    strings: &'p mut Vec<String>,
    /// The boxes themselves are what is kept (as in [`BOXES`]).
    #[allow(clippy::vec_box)]
    boxes: &'p mut Vec<Box<Price>>,
    /// Predicate boxes (as in [`PREDS`]).
    #[allow(clippy::vec_box)]
    preds: &'p mut Vec<Box<Predicate>>,
}

impl Bin<'_> {
    /// Borrow both pools for `f` (nothing is kept while a pool is gone or borrowed).
    fn with(f: impl FnOnce(&mut Bin<'_>)) {
        let _ = POOL.try_with(|strings| {
            BOXES.try_with(|boxes| {
                PREDS.try_with(|preds| {
                    if let (Ok(mut strings), Ok(mut boxes), Ok(mut preds)) = (
                        strings.try_borrow_mut(),
                        boxes.try_borrow_mut(),
                        preds.try_borrow_mut(),
                    ) {
                        f(&mut Bin {
                            strings: &mut strings,
                            boxes: &mut boxes,
                            preds: &mut preds,
                        });
                    }
                })
            })
        });
    }

    /// Keep a lexeme's string (a short one, while the pool has room).
    fn string(&mut self, s: &mut String) {
        if s.capacity() == 0 || s.capacity() > POOL_CAP || self.strings.len() >= POOL_MAX {
            return;
        }
        self.strings.push(std::mem::take(s));
    }

    /// Keep an operand's box (while the pool has room), as it is: its strings were taken
    /// (or, past the pool's bounds, are kept until the box is reused) and its own operands'
    /// boxes too, so it holds nothing, and the price put in it next drops it once.
    fn boxed(&mut self, b: Box<Price>) {
        keep(self.boxes, b);
    }

    /// Keep a predicate's box, as [`boxed`](Self::boxed) keeps an operand's. Its lexeme
    /// strings were taken.
    fn pred(&mut self, b: Box<Predicate>) {
        keep(self.preds, b);
    }
}

/// Keep a box given back in its pool, while the pool has room.
#[allow(clippy::vec_box)]
fn keep<T>(pool: &mut Vec<Box<T>>, b: Box<T>) {
    if pool.len() < POOL_MAX {
        pool.push(b);
    }
}

/// Empty the pools (their memory goes back to the allocator).
pub(crate) fn clear_pool() {
    pool_clear(&POOL);
    pool_clear(&BOXES);
    pool_clear(&PREDS);
}

/// Give every lexeme string of a plan to the pool (the statement is then dropped).
fn harvest_plan(p: &mut Plan, bin: &mut Bin<'_>) {
    bin.string(&mut p.name.text);
    bin.string(&mut p.budget.text);
    if let Some(n) = &mut p.priority {
        bin.string(&mut n.text);
    }
    for c in &mut p.clauses {
        match &mut c.kind {
            ClauseKind::Using(u) => {
                bin.string(&mut u.signal.text);
                bin.string(&mut u.exec.text);
            }
            ClauseKind::When(t) | ClauseKind::CancelIf(t) => harvest_trigger(t, bin),
            ClauseKind::Do(t) | ClauseKind::Also(t) => harvest_ticket(t, bin),
            ClauseKind::Reload { when, ticket } => {
                harvest_trigger(when, bin);
                harvest_ticket(ticket, bin);
            }
            ClauseKind::Tp {
                mult,
                frac,
                price,
                modifiers,
            } => {
                bin.string(&mut mult.text);
                if let Some(f) = frac {
                    bin.string(&mut f.text);
                }
                harvest_price(price, bin);
                harvest_modifiers(modifiers, bin);
            }
            ClauseKind::Exit {
                when,
                price,
                modifiers,
            } => {
                harvest_trigger(when, bin);
                if let Some(p) = price {
                    harvest_price(p, bin);
                }
                harvest_modifiers(modifiers, bin);
            }
            ClauseKind::Invalidate { when, .. } => harvest_trigger(when, bin),
            ClauseKind::Arm(n) => bin.string(&mut n.text),
        }
    }
}

fn harvest_ticket(t: &mut Ticket, bin: &mut Bin<'_>) {
    bin.string(&mut t.qty.text);
    if let Instrument::Option {
        strike: Strike::Relative(n) | Strike::Absolute(n),
        ..
    } = &mut t.instrument
    {
        bin.string(&mut n.text);
    }
    harvest_price(&mut t.price, bin);
    harvest_modifiers(&mut t.modifiers, bin);
}

fn harvest_modifiers(m: &mut [Modifier], bin: &mut Bin<'_>) {
    for m in m {
        match m {
            Modifier::Esc { price, after } => {
                harvest_price(price, bin);
                bin.string(&mut after.text);
            }
            Modifier::Cap { price } | Modifier::Floor { price } => harvest_price(price, bin),
            Modifier::CancelIf { when } => harvest_trigger(when, bin),
            Modifier::Peg | Modifier::Fix => {}
        }
    }
}

thread_local! {
    /// The boxes of `lean(...)`, `min(...)` and `max(...)` operands given back, for the next
    /// statements' (with [`POOL`]; emptied by [`clear_pool`]). The boxes themselves are
    /// what is kept: each is an allocation the next operand reuses.
    #[allow(clippy::vec_box)]
    static BOXES: std::cell::RefCell<Vec<Box<Price>>> = const { std::cell::RefCell::new(Vec::new()) };
}

thread_local! {
    /// The boxes of predicates given back, for the next statements' (with [`POOL`]; emptied
    /// by [`clear_pool`]).
    #[allow(clippy::vec_box)]
    static PREDS: std::cell::RefCell<Vec<Box<Predicate>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A predicate's box, from the pool when it has one.
fn boxed_pred(p: Predicate) -> Box<Predicate> {
    reuse_box(&PREDS, p)
}

/// `v` in a box from `pool` when it has one (what the box held is dropped), else a new one.
fn reuse_box<T>(pool: &'static Pool<Box<T>>, v: T) -> Box<T> {
    match pool_take(pool) {
        Some(mut b) => {
            *b = v;
            b
        }
        None => Box::new(v),
    }
}

/// A price operand's box, from the pool when it has one.
fn boxed_price(p: Price) -> Box<Price> {
    reuse_box(&BOXES, p)
}

/// A price with nothing in it (no allocation): what is left where a call's operands were taken.
fn empty_price() -> Price {
    Price::Stub {
        text: String::new(),
        span: Span::default(),
    }
}

fn harvest_price(p: &mut Price, bin: &mut Bin<'_>) {
    if let Price::Lean { a, b, .. } | Price::Min { a, b, .. } | Price::Max { a, b, .. } = p {
        harvest_price(a, bin);
        harvest_price(b, bin);
        if let Price::Lean { w, .. } = p {
            bin.string(&mut w.text);
        }
        if let Price::Lean { a, b, .. } | Price::Min { a, b, .. } | Price::Max { a, b, .. } =
            std::mem::replace(p, empty_price())
        {
            bin.boxed(a);
            bin.boxed(b);
        }
        return;
    }
    match p {
        Price::Anchor { anchor, offset } => {
            bin.string(&mut anchor.text);
            if let Some(o) = offset {
                bin.string(&mut o.amount.text);
            }
        }
        Price::Number { value } => bin.string(&mut value.text),
        Price::Stub { text, .. } => bin.string(text),
        Price::Lean { a, b, w, .. } => {
            harvest_price(a, bin);
            harvest_price(b, bin);
            bin.string(&mut w.text);
        }
        Price::Min { a, b, .. } | Price::Max { a, b, .. } => {
            harvest_price(a, bin);
            harvest_price(b, bin);
        }
    }
}

fn harvest_trigger(t: &mut Trigger, bin: &mut Bin<'_>) {
    match t {
        Trigger::Or { terms } | Trigger::And { terms } => {
            terms.iter_mut().for_each(|t| harvest_trigger(t, bin))
        }
        Trigger::Not { inner } | Trigger::Group { inner } => harvest_trigger(inner, bin),
        Trigger::Pred { pred } => {
            harvest_pred(pred, bin);
            // The box goes back too (the trigger is dropped next: an empty `And` costs nothing).
            if let Trigger::Pred { pred } = std::mem::replace(t, Trigger::And { terms: Vec::new() })
            {
                bin.pred(pred);
            }
        }
    }
}

fn harvest_pred(pred: &mut Predicate, bin: &mut Bin<'_>) {
    match pred {
        Predicate::Cross {
            series,
            value,
            held,
            ..
        }
        | Predicate::Compare {
            series,
            value,
            held,
            ..
        } => {
            harvest_series(series, bin);
            match value {
                Value::Number { value } => bin.string(&mut value.text),
                Value::Series { series } => harvest_series(series, bin),
                Value::Percentile { pct } => bin.string(&mut pct.text),
                Value::Clock { .. } => {}
            }
            if let Some(d) = held {
                bin.string(&mut d.text);
            }
        }
        Predicate::Event { event, within, .. } => {
            if let Event::PlanFired { plan } | Event::PlanFilled { plan } = event {
                bin.string(&mut plan.text);
            }
            if let Some(d) = within {
                bin.string(&mut d.text);
            }
        }
        Predicate::TMinus { minutes, .. } => bin.string(&mut minutes.text),
        Predicate::Phase { .. } => {}
    }
}

fn harvest_series(s: &mut Series, bin: &mut Bin<'_>) {
    bin.string(&mut s.text);
    match &mut s.kind {
        SeriesKind::Velocity { window } => bin.string(&mut window.text),
        SeriesKind::SymSpot { sym } => bin.string(&mut sym.text),
        _ => {}
    }
}

fn span_from(start: usize, i: &In<'_>) -> Span {
    Span::new(start, pos(i))
}

fn is_reserved(w: &str) -> bool {
    RESERVED_WORDS.iter().any(|r| r.eq_ignore_ascii_case(w))
}

fn reserved_err<T>(i: &In<'_>, w: &str) -> R<T> {
    // What to write instead, where Kestrel already has it.
    let instead = match w.to_ascii_lowercase().as_str() {
        "market" => {
            ": every order has a limit: write `@ ask` to buy at the offer (`@ bid` to sell), or cap it, like `@ min(fair+0.05, ask)`"
        }
        _ => ": remove it",
    };
    fail_rule(
        i,
        Rule::ReservedWord,
        format!("`{w}` is a reserved word, kept for a future version of Kestrel{instead}"),
        "reserved",
    )
}

pub(crate) fn name(i: &mut In<'_>, what: &str) -> R<Name> {
    let start = pos(i);
    let first = i.input.chars().next();
    if !first.is_some_and(|c| c.is_ascii_lowercase()) {
        let f = found(i);
        let hint = if first.is_some_and(|c| c.is_ascii_uppercase() || c.is_ascii_digit()) {
            ": names are kebab-case, `[a-z][a-z0-9-]*` (for example `fade-ladder`)"
        } else {
            ""
        };
        return fail(
            i,
            format!("expected {what}, found {f}{hint}"),
            format!("expected {what}"),
        );
    }
    let text: &str = take_while(1.., |c: char| {
        c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'
    })
    .parse_next(i)?;
    // A letter outside `[a-z]` (`Big`, `pé`) or `_` inside a name: the whole word is named,
    // not the letter taken for the start of the next clause ("expected `budget` ... found
    // `é`").
    if let Some(c) = i.input.chars().next()
        && (c.is_alphanumeric() || c == '_')
    {
        let _ = text;
        let _: R<&str> = take_while(0.., |c: char| {
            c.is_alphanumeric() || c == '-' || c == '_' || c == '.'
        })
        .parse_next(i);
        let bad = consumed_since(i, start);
        let how = if c.is_ascii() {
            "write it in lower case with `-` between words"
        } else {
            "a name is ASCII: letters `a`-`z`, digits and `-`"
        };
        return Err(ErrMode::Cut(Box::new(PErr {
            start,
            end: pos(i),
            rule: Rule::Syntax,
            msg: format!("a name is kebab-case, `[a-z][a-z0-9-]*`: `{bad}` has `{c}` ({how})"),
            label: "not a kebab-case name".into(),
        })));
    }
    Ok(Name {
        text: lexeme_string(text),
        span: span_from(start, i),
    })
}

/// An unsigned or signed decimal number lexeme: `-?[0-9]+(\.[0-9]+)?`.
fn number_lexeme<'a>(i: &mut In<'a>) -> Option<&'a str> {
    let s = i.input;
    let b = s.as_bytes();
    let mut n = 0;
    if b.first() == Some(&b'-') {
        n = 1;
    }
    let d0 = n;
    while n < b.len() && b[n].is_ascii_digit() {
        n += 1;
    }
    if n == d0 {
        return None;
    }
    if n + 1 < b.len() && b[n] == b'.' && b[n + 1].is_ascii_digit() {
        n += 1;
        while n < b.len() && b[n].is_ascii_digit() {
            n += 1;
        }
    }
    Some(i.next_slice(n))
}

pub(crate) fn number(i: &mut In<'_>, what: &str) -> R<Num> {
    let start = pos(i);
    match number_lexeme(i) {
        Some(t) => Ok(Num {
            text: lexeme_string(t),
            span: span_from(start, i),
        }),
        // `.4`: the number it stands for, where a fraction can be meant (not a quantity).
        None if i.input.starts_with('.')
            && next_token(i.input).len() > 1
            && next_token(i.input)[1..].bytes().all(|c| c.is_ascii_digit())
            && !what.contains("integer") =>
        {
            let t = next_token(i.input);
            fail(
                i,
                format!("expected {what}, found `{t}`: a number starts with a digit; write `0{t}`"),
                "write a digit before the point",
            )
        }
        None => expected(i, what),
    }
}

/// A number that must end the token (not followed by a letter or digit run).
fn number_tok(i: &mut In<'_>, what: &str) -> R<Num> {
    let n = number(i, what)?;
    // The next byte: a letter, digit or `.` is ASCII, so no character is decoded.
    if let Some(&c) = i.input.as_bytes().first()
        && (c.is_ascii_alphanumeric() || c == b'.')
    {
        return no_space_after(i, &n);
    }
    Ok(n)
}

/// A number run into the token after it (`5x`, `1.2.3`): cold, out of line.
#[cold]
#[inline(never)]
fn no_space_after<T>(i: &In<'_>, n: &Num) -> R<T> {
    // `pnl > 0.5R`: pnl is in R already, the compared number takes no unit.
    if i.input.starts_with('R') && ends_word(&i.input[1..]) {
        let line = line_before(i);
        let words: Vec<&str> = line
            .strip_suffix(n.text.as_str())
            .unwrap_or(line)
            .split_whitespace()
            .collect();
        let series = match words.as_slice() {
            [.., s, ">" | "<" | ">=" | "<="] => Some((*s, &words[words.len() - 1..])),
            [.., s, "crosses", "above" | "below"] => Some((*s, &words[words.len() - 2..])),
            _ => None,
        };
        if let Some((s, op)) = series
            && s.eq_ignore_ascii_case("pnl")
        {
            return fail(
                i,
                format!(
                    "expected a space after the number `{}`, found `R`: pnl is already in R; write `{s} {} {}`",
                    n.text,
                    op.join(" "),
                    n.text
                ),
                "pnl is in R",
            );
        }
    }
    expected(i, &format!("a space after the number `{}`", n.text))
}

/// `<number>R`
fn risk(i: &mut In<'_>, what: &str) -> R<Num> {
    let n = number(i, what)?;
    if i.input.starts_with('R') {
        let _ = i.next_slice(1);
        Ok(n)
    } else {
        let f = found(i);
        fail(
            i,
            format!(
                "expected `R` after `{}`: risk amounts are fractions of the risk unit, like `{}R`, found {f}",
                n.text, n.text
            ),
            "write the amount in R",
        )
    }
}

fn dur(i: &mut In<'_>, what: &str) -> R<Dur> {
    let start = pos(i);
    let b = i.input.as_bytes();
    let mut n = 0;
    while n < b.len() && b[n].is_ascii_digit() {
        n += 1;
    }
    let unit = b.get(n).copied();
    let ok_unit = matches!(unit, Some(b's' | b'm' | b'h'));
    let after = b.get(n + 1).copied();
    if n == 0 || !ok_unit || after.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'.') {
        let f = found(i);
        return fail(
            i,
            format!("expected {what}, a duration like `30s`, `5m` or `2h`, found {f}"),
            "expected a duration",
        );
    }
    let digits = i.next_slice(n);
    let _ = i.next_slice(1);
    let amount = digits.parse::<u64>().unwrap_or(u64::MAX);
    Ok(Dur {
        amount,
        unit: match unit {
            Some(b's') => DurUnit::S,
            Some(b'm') => DurUnit::M,
            _ => DurUnit::H,
        },
        text: lexeme_string(digits),
        span: span_from(start, i),
    })
}

/// Does the text start like a clock (one or two digits, then `:`)? `try_clock` then reads it
/// or refuses it.
fn looks_like_clock(s: &str) -> bool {
    let b = s.as_bytes();
    let colon = if b.len() >= 3 && b[1] == b':' {
        1
    } else if b.len() >= 4 && b[2] == b':' {
        2
    } else {
        return false;
    };
    b[..colon].iter().all(u8::is_ascii_digit)
}

fn regime_word(i: &mut In<'_>, what: &str) -> R<String> {
    let w: &str = take_while(0.., |c: char| {
        c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_' || c == '.'
    })
    .parse_next(i)?;
    if w.is_empty() || !w.starts_with(|c: char| c.is_ascii_lowercase()) {
        return expected(i, what);
    }
    Ok(w.to_string())
}

/// `HH:MM` if the input starts with one.
fn try_clock(i: &mut In<'_>) -> R<Option<Clock>> {
    let b = i.input.as_bytes();
    let colon = if b.len() >= 3 && b[1] == b':' {
        1
    } else if b.len() >= 4 && b[2] == b':' {
        2
    } else {
        return Ok(None);
    };
    if !b[..colon].iter().all(u8::is_ascii_digit) {
        return Ok(None);
    }
    let start = pos(i);
    if b.len() < colon + 3
        || !b[colon + 1..colon + 3].iter().all(u8::is_ascii_digit)
        || b.get(colon + 3)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b':')
    {
        return fail(
            i,
            "expected a clock time `HH:MM` (24h, exchange time)",
            "bad clock",
        );
    }
    let text = &i.input[..colon + 3];
    let hour: u8 = text[..colon].parse().unwrap_or(99);
    let minute: u8 = text[colon + 1..].parse().unwrap_or(99);
    if colon != 2 || hour > 23 || minute > 59 {
        return fail(
            i,
            format!(
                "`{text}` is not a clock time: write `HH:MM` in 24h exchange time, like `09:45` or `14:30`"
            ),
            "bad clock",
        );
    }
    let _ = i.next_slice(colon + 3);
    Ok(Some(Clock {
        hour,
        minute,
        span: span_from(start, i),
    }))
}

fn sym(i: &mut In<'_>, what: &str) -> R<Sym> {
    let start = pos(i);
    let n = sym_len(i.input.as_bytes());
    if n == 0 {
        return expected(i, what);
    }
    let t = i.next_slice(n);
    Ok(Sym {
        text: lexeme_string(t),
        span: span_from(start, i),
    })
}

fn expiry(i: &mut In<'_>, what: &str) -> R<Expiry> {
    let s = i.input;
    let b = s.as_bytes();
    let mut n = 0;
    while n < b.len() && b[n].is_ascii_digit() {
        n += 1;
    }
    if n > 0
        && s[n..].starts_with("dte")
        && !s[n + 3..].starts_with(|c: char| c.is_ascii_alphanumeric())
    {
        let days = s[..n].parse().unwrap_or(u32::MAX);
        let _ = i.next_slice(n + 3);
        return Ok(Expiry::Dte(days));
    }
    if b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
        && !b.get(10).is_some_and(|c| c.is_ascii_alphanumeric())
    {
        let y: u16 = s[..4].parse().unwrap_or(0);
        let m: u8 = s[5..7].parse().unwrap_or(0);
        let d: u8 = s[8..10].parse().unwrap_or(0);
        if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
            return fail(
                i,
                format!("`{}` is not a date: write `YYYY-MM-DD`", &s[..10]),
                "bad date",
            );
        }
        let last = days_in_month(y, m);
        if d > last {
            return fail(
                i,
                format!(
                    "`{}` is not a date: {}-{:02} has {last} days; write `YYYY-MM-DD` with a day of the month, like `{}-{last:02}`",
                    &s[..10],
                    &s[..4],
                    m,
                    &s[..7]
                ),
                "no such day",
            );
        }
        let t = i.next_slice(10);
        return Ok(Expiry::Date(t.to_string()));
    }
    expected(i, what)
}

/// The days of month `m` (1 to 12) of year `y` in the Gregorian calendar: February has 29
/// in a year divisible by 4, except a century not divisible by 400.
fn days_in_month(y: u16, m: u8) -> u8 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if y.is_multiple_of(4) && (!y.is_multiple_of(100) || y.is_multiple_of(400)) => 29,
        2 => 28,
        _ => 31,
    }
}

fn eol(i: &mut In<'_>, after: &str) -> R<()> {
    Sp0.parse(i)?;
    if i.input.is_empty() {
        return Ok(());
    }
    not_eol(i, after)
}

/// Why the line goes on where it should end ([`eol`]): cold, out of line.
#[cold]
#[inline(never)]
fn not_eol(i: &mut In<'_>, after: &str) -> R<()> {
    let t = next_token(i.input);
    if let Some(m) = sign_msg(i, t, after) {
        return fail(i, m, "unexpected");
    }
    let msg = match t {
        "WHEN" | "DO" | "ALSO" | "RELOAD" | "TP" | "EXIT" | "INVALIDATE" | "CANCEL-IF" | "ARM" => {
            format!(
                "{t} belongs on its own line: end the line after {after} and put `{t} ...` on the next line, indented two spaces"
            )
        }
        t if is_reserved(t) => {
            return reserved_err(i, t);
        }
        t if t.starts_with('\t') => "a tab separates tokens here: use single spaces".to_string(),
        // A trigger's `and` / `or` in lower case (`WHEN spot > vwap and ...`), where the
        // trigger is still open: not a ticket's modifier, but the keyword misspelled.
        t if case_of(t, &[AND, OR]).is_some() && trigger_open(line_before(i)) => {
            keyword_case_msg("trigger", t)
        }
        // `budget` / `deliver` / `priority` after a WAKE line: its keywords are upper case.
        t if after.contains("WAKE") && case_of(t, WAKE_TAILS).is_some() => {
            keyword_case_msg("WAKE", t)
        }
        _ if ["DO", "ALSO", "RELOAD", "TP", "EXIT"]
            .iter()
            .any(|c| after.contains(c)) =>
        {
            format!("unexpected `{t}` after {after}: a ticket's modifiers are {MODIFIER_LIST}")
        }
        _ => format!("unexpected `{t}` after {after}: the line should end here"),
    };
    fail(i, msg, "unexpected")
}

/// The keywords a WAKE line takes after its trigger.
const WAKE_TAILS: &[&str] = &["DELIVER", "PRIORITY", "BUDGET"];

/// The keyword of `words` that `t` spells in another case (`and` for `AND`), if any.
fn case_of(t: &str, words: &[&'static str]) -> Option<&'static str> {
    words
        .iter()
        .find(|w| w.eq_ignore_ascii_case(t) && **w != t)
        .copied()
}

/// "`kind` keywords are upper case: write `AND` instead of `and`" (docs/language.md,
/// decision "keyword case": a wrong case gets a message naming the right spelling).
fn keyword_case_msg(kind: &str, t: &str) -> String {
    format!(
        "{kind} keywords are upper case: write `{}` instead of `{t}`",
        t.to_ascii_uppercase()
    )
}

/// Is a trigger still being written at the end of `line` (the line's text before the
/// cursor)? The last trigger word (a clause keyword that takes a trigger, `cancel-if`,
/// `AND`/`OR`/`NOT`) opens it; a price (`@`, a modifier) or a WAKE's `DELIVER` and the
/// like after it close it.
fn trigger_open(line: &str) -> bool {
    let mut open = false;
    for w in line.split_whitespace() {
        match w {
            "WHEN" | "EXIT" | "INVALIDATE" | "CANCEL-IF" | "cancel-if" | "AND" | "OR" | "NOT" => {
                open = true
            }
            "@" | "cap" | "floor" | "esc" | "peg" | "fix" | "->" | "DELIVER" | "PRIORITY"
            | "BUDGET" => open = false,
            w if w.starts_with('@') => open = false,
            _ => {}
        }
    }
    open
}

/// The message for an arithmetic sign `t` at the cursor ([`arithmetic_msg`]), or `None`
/// where `t` is no sign (or `->`) or the plain message fits: where a line should end
/// ([`eol`]) and where a RELOAD's trigger runs into its ticket.
fn sign_msg(i: &In<'_>, t: &str, after: &str) -> Option<String> {
    if !t.starts_with(['+', '-', '*', '/']) || t.starts_with("->") {
        return None;
    }
    let rest = i.input.trim_start_matches(' ');
    let next = next_token(rest.get(t.len()..).unwrap_or(""));
    arithmetic_msg(t, next, after, line_before(i))
}

/// The text of the current line before the cursor.
fn line_before<'a>(i: &In<'a>) -> &'a str {
    let before = &i.state.text[..pos(i)];
    before.rsplit('\n').next().unwrap_or(before)
}

/// Where an arithmetic sign stands on its line ([`sign_context`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SignAt {
    /// After a price word: `@ fair + 2c`, `cap ask + 5c`.
    Price,
    /// After a comparison's value: `spot > vwap + 2`.
    Trigger,
    /// Anywhere else (a duration, a budget, a pane's count): the plain messages.
    Other,
}

/// Where a sign at the end of `line` (the line's text before it) stands: the last price word
/// (`@`, `cap`, `floor`, `esc`) or trigger word (a comparison, `crosses above|below`, a clause
/// keyword that takes a trigger, `AND`/`OR`/`NOT`, `cancel-if`) decides, and any other
/// keyword (`held`, `within`, `->`, a header's `budget`/`ttl`, `DELIVER`, `PRIORITY`, ...)
/// or a duration just before the sign makes it neither.
fn sign_context(line: &str) -> SignAt {
    let mut at = SignAt::Other;
    for w in line.split_whitespace() {
        at = match w {
            "@" | "cap" | "floor" | "esc" => SignAt::Price,
            w if w.starts_with('@') => SignAt::Price,
            ">" | "<" | ">=" | "<=" | "above" | "below" | "AND" | "OR" | "NOT" | "WHEN"
            | "EXIT" | "INVALIDATE" | "CANCEL-IF" | "cancel-if" => SignAt::Trigger,
            "held" | "within" | "->" | "DELIVER" | "PRIORITY" | "BUDGET" | "budget" | "ttl"
            | "frac" | "regime" | "priority" | "USING" | "ARM" | "PLAN" | "WAKE" | "VIEW"
            | "SHOW" | "strikes" | "last" => SignAt::Other,
            _ => at,
        };
    }
    // The grammar's `dur`: digits, then `s`, `m` or `h`.
    let duration = |w: &str| {
        w.strip_suffix(crate::lang::lexicon::DUR_UNITS)
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
    };
    if line.split_whitespace().last().is_some_and(duration) {
        return SignAt::Other;
    }
    at
}

/// The message for an arithmetic sign where a line should end (`spot > vwap + 2`,
/// `@ fair + 2c`), or `None` where the plain message fits ([`SignAt::Other`]). Kestrel has no
/// arithmetic but a price's offset, so the message says what the author can write, in the
/// words of where the sign stands; an offset written apart from its anchor (`ask + 5c`) is
/// shown joined, in the author's own words (`ask+5c`). `next` is the token after the sign.
fn arithmetic_msg(t: &str, next: &str, after: &str, line: &str) -> Option<String> {
    match sign_context(line) {
        SignAt::Other => None,
        SignAt::Price => {
            let anchor = line.split_whitespace().last().unwrap_or("");
            let joined = if matches!(t, "+" | "-")
                && anchor.chars().all(|c| c.is_ascii_lowercase())
                && !anchor.is_empty()
                && next.starts_with(|c: char| c.is_ascii_digit())
            {
                format!("write `{anchor}{t}{next}`; ")
            } else {
                Default::default()
            };
            Some(format!(
                "unexpected `{t}` after {after}: {joined}a price is an anchor with its offset \
                 written together, no space (`fair+2c`, `bid-0.05`, `fair+10%`), or \
                 min/max/lean of prices (`min(fair+2c, ask)`); it takes no other arithmetic"
            ))
        }
        SignAt::Trigger => Some(format!(
            "unexpected `{t}` after {after}: a trigger does no arithmetic; a comparison's right \
             side is one value, a number, a clock, a series or a percentile (`spot > 5150`, \
             `spot > vwap`, `velocity(1m) > p90`); for a margin over a level, hold it \
             (`spot > vwap held 60s`)"
        )),
    }
}

// ---------------------------------------------------------------- lexemes
//
// Each lexeme is its lexer (above) and its character-level term, side by side. Everything
// built from lexemes below is one definition: the parser runs it and the grammar is written
// from it.

fn first_is(s: &str, f: impl Fn(char) -> bool) -> bool {
    s.chars().next().is_some_and(f)
}

fn digit() -> Term {
    g::class(&[('0', '9')])
}

fn nat_body(d: &mut Describer) -> Term {
    g::rep(digit(), 1, d.run())
}

fn nat_term(d: &mut Describer) -> Term {
    d.rule("nat", nat_body)
}

fn unsigned_body(d: &mut Describer) -> Term {
    let nat = nat_term(d);
    g::seq(vec![nat.clone(), g::opt(g::seq(vec![g::lit("."), nat]))])
}

fn unsigned_term(d: &mut Describer) -> Term {
    d.rule("unsigned", unsigned_body)
}

fn number_body(d: &mut Describer) -> Term {
    let u = unsigned_term(d);
    g::seq(vec![g::opt(g::lit("-")), u])
}

fn number_term(d: &mut Describer) -> Term {
    d.rule("number", number_body)
}

fn sym_body(d: &mut Describer) -> Term {
    let n = d.run();
    let sym_char = || g::class(&[('A', 'Z'), ('0', '9')]);
    g::seq(vec![
        g::class(&[('A', 'Z')]),
        g::rep(sym_char(), 0, n),
        g::rep(g::seq(vec![g::lit("."), g::rep(sym_char(), 1, n)]), 0, n),
    ])
}

fn dur_body(d: &mut Describer) -> Term {
    let units: Vec<(char, char)> = DUR_UNITS.iter().map(|&c| (c, c)).collect();
    let nat = nat_term(d);
    g::seq(vec![nat, g::class(&units)])
}

static NAME: Lexeme<Name> = Lexeme {
    rule: "name",
    lex: name,
    looks: |s| first_is(s, |c| c.is_ascii_lowercase()),
    term: |d| {
        let n = d.run();
        g::seq(vec![
            g::class(&[('a', 'z')]),
            g::rep(g::class(&[('a', 'z'), ('0', '9'), ('-', '-')]), 0, n),
        ])
    },
};

/// A number that ends its token.
static NUMBER: Lexeme<Num> = Lexeme {
    rule: "number",
    lex: number_tok,
    looks: |s| first_is(s, |c| c.is_ascii_digit() || c == '-'),
    term: number_body,
};

/// A number directly followed by its unit (`2x`, `25d`, `0.5)`).
static NUMBER_RAW: Lexeme<Num> = Lexeme {
    rule: "number",
    lex: number,
    looks: |s| first_is(s, |c| c.is_ascii_digit() || c == '-'),
    term: number_body,
};

/// An unsigned number that ends its token.
const UNSIGNED_LEX: fn(&mut In<'_>, &str) -> R<Num> = |i, what| {
    if first_is(i.input, |c| c.is_ascii_digit()) {
        number_tok(i, what)
    } else {
        expected(i, what)
    }
};

/// An unsigned number that ends its token (prices, strikes, percentiles).
static UNSIGNED: Lexeme<Num> = Lexeme {
    rule: "unsigned",
    lex: UNSIGNED_LEX,
    looks: |s| first_is(s, |c| c.is_ascii_digit()),
    term: unsigned_body,
};

/// Whole minutes (`T-30`).
static MINUTES: Lexeme<Num> = Lexeme {
    rule: "nat",
    lex: |i, what| {
        minutes_unit(i)?;
        let minutes = number_tok(i, what)?;
        if minutes.text.starts_with('-') || minutes.text.contains('.') {
            return fail(i, "T-n takes whole minutes, like `T-30`", "whole minutes");
        }
        Ok(minutes)
    },
    looks: |s| first_is(s, |c| c.is_ascii_digit()),
    term: nat_body,
};

/// `T-30m`, `T-1h`: T- counts minutes and takes no unit; the message gives the minutes.
fn minutes_unit(i: &In<'_>) -> R<()> {
    let b = i.input.as_bytes();
    let n = b.iter().take_while(|c| c.is_ascii_digit()).count();
    let unit = b.get(n).copied();
    if n == 0
        || !matches!(unit, Some(b's' | b'm' | b'h'))
        || b.get(n + 1)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'.')
    {
        return Ok(());
    }
    let amount: u64 = i.input[..n].parse().unwrap_or(u64::MAX);
    let minutes = match unit {
        Some(b'h') => amount.checked_mul(60),
        Some(b'm') => Some(amount),
        _ => amount.is_multiple_of(60).then_some(amount / 60),
    };
    let fix = match minutes {
        Some(m) => format!("write `T-{m}`"),
        None => "write whole minutes, like `T-30`".to_string(),
    };
    fail(
        i,
        format!(
            "`T-{}` takes no unit: T-n counts minutes before the close; {fix}",
            &i.input[..n + 1]
        ),
        "T- counts minutes",
    )
}

static RISK: Lexeme<Num> = Lexeme {
    rule: "risk",
    lex: risk,
    looks: |s| first_is(s, |c| c.is_ascii_digit() || c == '-'),
    term: |d| {
        let n = number_term(d);
        g::seq(vec![n, g::lit("R")])
    },
};

static DUR: Lexeme<Dur> = Lexeme {
    rule: "dur",
    lex: dur,
    looks: |s| first_is(s, |c| c.is_ascii_digit()),
    term: dur_body,
};

static CLOCK: Lexeme<Clock> = Lexeme {
    rule: "clock",
    lex: |i, what| match try_clock(i)? {
        Some(c) => Ok(c),
        None => expected(i, what),
    },
    looks: looks_like_clock,
    term: |_| {
        g::seq(vec![
            g::alt(vec![
                g::seq(vec![g::class(&[('0', '1')]), digit()]),
                g::seq(vec![g::lit("2"), g::class(&[('0', '3')])]),
            ]),
            g::lit(":"),
            g::class(&[('0', '5')]),
            digit(),
        ])
    },
};

static SYM: Lexeme<Sym> = Lexeme {
    rule: "sym",
    lex: sym,
    looks: |s| first_is(s, |c| c.is_ascii_uppercase()),
    term: sym_body,
};

/// `<SYM>.spot`: the symbol, then `.spot` in any case. The symbol is greedy, so after its
/// `.` only a lower-case `s` can follow.
/// The length of a `<SYM>` at the start of `b` (upper case, digits, `.`-joined groups).
fn sym_len(b: &[u8]) -> usize {
    if !b.first().is_some_and(u8::is_ascii_uppercase) {
        return 0;
    }
    let mut n = 1;
    loop {
        while n < b.len() && (b[n].is_ascii_uppercase() || b[n].is_ascii_digit()) {
            n += 1;
        }
        if n + 1 < b.len()
            && b[n] == b'.'
            && (b[n + 1].is_ascii_uppercase() || b[n + 1].is_ascii_digit())
        {
            n += 1;
            continue;
        }
        return n;
    }
}

/// The length of a `<SYM>.spot` at the start of `s`, if there is one.
fn sym_spot_len(s: &str) -> Option<usize> {
    let n = sym_len(s.as_bytes());
    (n > 0
        && s.get(n..n + 5)
            .is_some_and(|x| x.eq_ignore_ascii_case(".spot"))
        && ends_word(&s[n + 5..]))
    .then_some(n + 5)
}

/// `<SYM>.spot`: the symbol, then `.spot` in any case. The symbol is greedy, so after its
/// `.` only a lower-case `s` can follow.
static SYM_SPOT: Lexeme<(Sym, String)> = Lexeme {
    rule: "sym_spot",
    lex: |i, what| {
        let start = pos(i);
        let Some(n) = sym_spot_len(i.input) else {
            return expected(i, what);
        };
        let s = sym(i, what)?;
        let _ = i.next_slice(n - s.text.len());
        Ok((s, consumed_since(i, start).to_string()))
    },
    looks: |s| sym_spot_len(s).is_some(),
    term: |d| {
        let s = d.rule("sym", sym_body);
        g::seq(vec![s, g::lit(".s"), g::ci("pot")])
    },
};

static EXPIRY: Lexeme<Expiry> = Lexeme {
    rule: "expiry",
    lex: expiry,
    looks: |s| first_is(s, |c| c.is_ascii_digit()),
    term: |d| {
        let nat = nat_term(d);
        g::alt(vec![g::seq(vec![nat, g::lit("dte")]), date_term()])
    },
};

/// `YYYY-MM-DD`, a day of the calendar: months of 31 and of 30 days, February's 28, and
/// February 29 in a leap year (written as a regular language: a year divisible by 4 whose
/// last two digits are not `00`, or a `00` year whose century is divisible by 4).
fn date_term() -> Term {
    let year = || g::rep(digit(), 4, 4);
    let c = |a: char, b: char| g::class(&[(a, b)]);
    let d28 = g::alt(vec![
        g::seq(vec![g::lit("0"), c('1', '9')]),
        g::seq(vec![g::lit("1"), digit()]),
        g::seq(vec![g::lit("2"), c('0', '8')]),
    ]);
    let d30 = g::alt(vec![d28.clone(), g::lit("29"), g::lit("30")]);
    let d31 = g::alt(vec![d30.clone(), g::lit("31")]);
    let months = |ms: &[&str]| g::alt(ms.iter().map(|m| g::lit(m)).collect());
    // Two digits divisible by 4: an even tens digit then 0, 4 or 8; an odd one then 2 or 6.
    let by4 = || {
        g::alt(vec![
            g::seq(vec![
                g::class(&[('0', '0'), ('2', '2'), ('4', '4'), ('6', '6'), ('8', '8')]),
                g::class(&[('0', '0'), ('4', '4'), ('8', '8')]),
            ]),
            g::seq(vec![
                g::class(&[('1', '1'), ('3', '3'), ('5', '5'), ('7', '7'), ('9', '9')]),
                g::class(&[('2', '2'), ('6', '6')]),
            ]),
        ])
    };
    // By 4 but not `00`: `04`, `08`, then the tens digits 1 to 9.
    let by4_not_00 = g::alt(vec![
        g::seq(vec![g::lit("0"), g::class(&[('4', '4'), ('8', '8')])]),
        g::seq(vec![
            g::class(&[('2', '2'), ('4', '4'), ('6', '6'), ('8', '8')]),
            g::class(&[('0', '0'), ('4', '4'), ('8', '8')]),
        ]),
        g::seq(vec![
            g::class(&[('1', '1'), ('3', '3'), ('5', '5'), ('7', '7'), ('9', '9')]),
            g::class(&[('2', '2'), ('6', '6')]),
        ]),
    ]);
    let leap = g::alt(vec![
        g::seq(vec![digit(), digit(), by4_not_00]),
        g::seq(vec![by4(), g::lit("00")]),
    ]);
    g::alt(vec![
        g::seq(vec![
            year(),
            g::lit("-"),
            months(&["01", "03", "05", "07", "08", "10", "12"]),
            g::lit("-"),
            d31,
        ]),
        g::seq(vec![
            year(),
            g::lit("-"),
            months(&["04", "06", "09", "11"]),
            g::lit("-"),
            d30,
        ]),
        g::seq(vec![year(), g::lit("-02-"), d28]),
        g::seq(vec![leap, g::lit("-02-29")]),
    ])
}

/// Regime keys and values, GRADE `BY` keys.
static KEY: Lexeme<String> = Lexeme {
    rule: "key",
    lex: regime_word,
    looks: |s| first_is(s, |c| c.is_ascii_lowercase()),
    term: |d| {
        let n = d.run();
        g::seq(vec![
            g::class(&[('a', 'z')]),
            g::rep(
                g::class(&[('a', 'z'), ('0', '9'), ('_', '_'), ('.', '.'), ('-', '-')]),
                0,
                n,
            ),
        ])
    },
};

/// A parser token: any non-blank first character, then characters that do not end a token;
/// `#` always starts a comment.
type Ranges = Vec<(char, char)>;

fn token_classes() -> (Ranges, Ranges) {
    let first = g::ws_plus(&[('#', '#')]);
    let mut rest = first.clone();
    rest.extend_from_slice(g::TOKEN_PUNCT);
    (first, rest)
}

/// An IMPORT path: one parser token.
static PATH: Lexeme<String> = Lexeme {
    rule: "path",
    lex: |i, what| {
        let p = next_token(i.input);
        if p.is_empty() || first_is(i.input, char::is_whitespace) {
            return expected(i, what);
        }
        Ok(i.next_slice(p.len()).to_string())
    },
    looks: |s| !next_token(s).is_empty() && !first_is(s, char::is_whitespace),
    term: |d| {
        let n = d.run();
        let (first, rest) = token_classes();
        g::seq(vec![
            g::not_class(&first),
            g::rep(g::not_class(&rest), 0, n),
        ])
    },
};

fn is_month(s: &str) -> bool {
    s.len() == 7
        && s.as_bytes()[..4].iter().all(u8::is_ascii_digit)
        && s.as_bytes()[4] == b'-'
        && s.as_bytes()[5..].iter().all(u8::is_ascii_digit)
}

/// GRADE's `OVER`: a month range `YYYY-MM[..YYYY-MM]`, or else a tape glob (one token).
static OVER: Lexeme<GradeRange> = Lexeme {
    rule: "over",
    lex: |i, what| {
        let tok = next_token(i.input);
        if tok.is_empty() || first_is(i.input, char::is_whitespace) {
            return expected(i, what);
        }
        let over = if is_month(tok.get(..7).unwrap_or(""))
            && (tok.len() == 7 || tok[7..].starts_with(".."))
        {
            let from = tok[..7].to_string();
            let to = if tok.len() > 7 {
                let t = &tok[9..];
                if !is_month(t) {
                    return fail(i, "a month range is `YYYY-MM..YYYY-MM`", "bad range");
                }
                Some(t.to_string())
            } else {
                None
            };
            GradeRange::Months { from, to }
        } else {
            GradeRange::Glob(tok.to_string())
        };
        let _ = i.next_slice(tok.len());
        Ok(over)
    },
    looks: |s| !next_token(s).is_empty() && !first_is(s, char::is_whitespace),
    term: over_term,
};

fn over_term(d: &mut Describer) -> Term {
    let n = d.run();
    let month = d.rule("month", |_| {
        g::seq(vec![
            g::rep(digit(), 4, 4),
            g::lit("-"),
            g::rep(digit(), 2, 2),
        ])
    });
    let months = d.rule("months", |_| {
        g::seq(vec![
            month.clone(),
            g::opt(g::seq(vec![g::lit(".."), month.clone()])),
        ])
    });
    // A glob is any token that does not start like a month range `YYYY-MM..`: such a token
    // is read as a range and refused unless it is exactly `YYYY-MM..YYYY-MM`. The chain
    // glob, glob_1 .. glob_8 spells "not that prefix" as a regular language.
    const GLOB: [&str; 9] = [
        "glob", "glob_1", "glob_2", "glob_3", "glob_4", "glob_5", "glob_6", "glob_7", "glob_8",
    ];
    let (tok_first, tok_rest) = token_classes();
    for k in (0..9).rev() {
        let prefix = match k {
            4 => g::lit("-"),
            7 | 8 => g::lit("."),
            _ => digit(),
        };
        let excl: &[(char, char)] = match k {
            4 => &[('-', '-')],
            7 | 8 => &[('.', '.')],
            _ => &[('0', '9')],
        };
        let mut but = if k == 0 {
            tok_first.clone()
        } else {
            tok_rest.clone()
        };
        but.extend_from_slice(excl);
        let mut alts = Vec::new();
        if k > 0 {
            alts.push(g::lit(""));
        }
        alts.push(g::seq(vec![
            g::not_class(&but),
            g::rep(g::not_class(&tok_rest), 0, n),
        ]));
        if k < 8 {
            alts.push(g::seq(vec![prefix, g::r(GLOB[k + 1])]));
        }
        d.rule(GLOB[k], |_| g::alt(alts));
    }
    g::alt(vec![months, g::r("glob")])
}

/// A GRADE fill model name.
static FILL: Lexeme<String> = Lexeme {
    rule: "fill",
    lex: |i, what| {
        let fill: &str = take_while(1.., |c: char| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.'
        })
        .parse_next(i)
        .or_else(|_: ErrMode<Box<PErr>>| expected(i, what))?;
        Ok(fill.to_string())
    },
    looks: |s| {
        first_is(s, |c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-'
        })
    },
    term: |d| {
        let n = d.run();
        g::rep(
            g::class(&[('a', 'z'), ('0', '9'), ('.', '.'), ('-', '-')]),
            1,
            n,
        )
    },
};

/// The characters that end the token `STAND-DOWN` (a blank or a token-ending character).
fn ends_stand_down(c: char) -> bool {
    c.is_whitespace() || matches!(c, '(' | ')' | ',' | '{' | '}' | '@')
}

/// The STAND-DOWN reason: the rest of the line (the line layer removed any comment).
static REASON: Lexeme<String> = Lexeme {
    rule: "reason",
    lex: |i, what| {
        if !i.input.is_empty() && !first_is(i.input, ends_stand_down) {
            return expected(i, what);
        }
        let reason = i.input.trim_matches(|c| c == ' ' || c == '\t').to_string();
        let n = i.input.len();
        let _ = i.next_slice(n);
        Ok(reason)
    },
    looks: |_| true,
    term: |d| {
        let mut sep = vec![('\t', '\t'), ('\u{b}', '\r')];
        sep.extend_from_slice(&g::WHITESPACE[1..]);
        sep.extend_from_slice(g::TOKEN_PUNCT);
        let text_max = d.opts.free_text_max;
        g::opt(g::seq(vec![
            g::class(&sep),
            Term::Text(CharClass::not(&[('\n', '\n'), ('#', '#')]), text_max),
        ]))
    },
};

/// An anchor offset: `+`/`-`, an unsigned amount, and `c` (cents), `%` or nothing.
static OFFSET: Lexeme<Offset> = Lexeme {
    rule: "offset",
    lex: |i, _| {
        let negative = i.input.starts_with('-');
        let _ = i.next_slice(1);
        let astart = pos(i);
        let Some(lex) = number_lexeme(i).filter(|l| !l.starts_with('-')) else {
            let sign = if negative { '-' } else { '+' };
            return fail(
                i,
                format!(
                    "expected an offset amount after `{{prev}}{sign}`: like `{{prev}}-3c`, `{{prev}}+0.05` or `{{prev}}+10%`"
                ),
                "expected an amount",
            );
        };
        let amount = Num {
            text: lexeme_string(lex),
            span: span_from(astart, i),
        };
        let unit = if i.input.starts_with('c') {
            let _ = i.next_slice(1);
            OffsetUnit::Cents
        } else if i.input.starts_with('%') {
            let _ = i.next_slice(1);
            OffsetUnit::Percent
        } else {
            OffsetUnit::Price
        };
        Ok(Offset {
            negative,
            amount,
            unit,
        })
    },
    looks: |s| s.starts_with(['+', '-']),
    term: |d| {
        let u = unsigned_term(d);
        g::seq(vec![
            g::class(&[('+', '+'), ('-', '-')]),
            u,
            g::opt(g::alt(OFFSET_UNITS.iter().map(|u| g::lit(u)).collect())),
        ])
    },
};

/// `p95`: a percentile of the series' own history.
static PERCENTILE: Lexeme<Num> = Lexeme {
    rule: "percentile",
    lex: |i, what| {
        if !i.input.starts_with('p') {
            return expected(i, what);
        }
        let _ = i.next_slice(1);
        UNSIGNED_LEX(i, "a percentile like p95")
    },
    looks: |s| s.starts_with('p') && s[1..].starts_with(|c: char| c.is_ascii_digit()),
    term: |d| {
        let u = unsigned_term(d);
        g::seq(vec![g::lit("p"), u])
    },
};

// ---------------------------------------------------------------- small pieces

/// `<what>` needs spaces then keyword `k`.
fn sp_kw(k: &'static str, what: &'static str) -> (Sp, Kw) {
    (sp(what), kw(k, what))
}

/// An optional `<spaces> <keyword> <spaces> <value>` tail, taken when the keyword is there.
fn tail<S: Syn>(k: &'static str, after: &'static str, value: S) -> Opt<(Sp, Kw, Sp, S)> {
    opt((sp("a space"), kw(k, k), sp(after), value))
}

/// `,` between list items, with optional spaces around it.
fn comma(what: &'static str) -> (Sp0, Lit, Sp0) {
    (Sp0, lit(",", what), Sp0)
}

fn close(what: &'static str) -> (Sp0, Lit) {
    (Sp0, lit(")", what))
}

/// A whole word, case-sensitive, giving `T`.
fn word<T: 'static>(w: &'static str, v: fn() -> T) -> Map<Kw, impl Fn(()) -> T + Send + Sync> {
    kw(w, w).map(move |_| v())
}

/// The end of a line, with its guided messages (`WHEN … DO …` collapsed, a stray token).
fn end(after: fn(&mut In<'_>) -> R<()>) -> Check {
    Check(after)
}

// ---------------------------------------------------------------- prices

const ANCHOR_LIST: &str = "fair, intrinsic, basis, bid, ask, mid, last, join, improve";

fn is_series_word(w: &str) -> bool {
    SIMPLE_SERIES.iter().any(|(s, _)| s.eq_ignore_ascii_case(w))
        || w.eq_ignore_ascii_case(VELOCITY)
        || w.ends_with(".spot")
}

const MIN_CALL: &[(&str, ())] = &[(PRICE_PAIR_FUNCTIONS[0], ())];
const MAX_CALL: &[(&str, ())] = &[(PRICE_PAIR_FUNCTIONS[1], ())];

/// A function call head, `lean(` in any case.
fn call(table: &'static [(&'static str, ())]) -> CiTable<()> {
    CiTable {
        table,
        index: ci_index(table),
        text: false,
        chars: WordChars::Price,
        then: "(",
        need: Need::Expected("a price"),
    }
}

rule!(pub(crate) fn price -> Price = "price", Choice { arms: (UNSIGNED.what("a price").map(|value| Price::Number { value }), CiTable {
            table: &[(STUB, ())],
            index: ci_index(&[(STUB, ())]),
            text: true,
            chars: WordChars::Price,
            then: "",
            need: Need::Expected("a price"),
        }
        .spanned()
        .map(|((_, text), span)| Price::Stub { text, span }), (
            Ctx {
                a: CiTable {
                    table: AnchorKind::ALL,
                    index: ci_index(AnchorKind::ALL),
                    text: true,
                    chars: WordChars::Price,
                    then: "",
                    need: Need::Expected("a price"),
                }
                .spanned(),
                b: opt(OFFSET.what("an offset")),
                f: |((_, text), _): &((AnchorKind, String), Span)| text.clone(),
            },
            end(|i| {
                if i.input.starts_with('C')
                    && ends_word(&i.input[1..])
                    && word_before(i).ends_with(|c: char| c.is_ascii_digit())
                {
                    // The price as written, inside `min(` or `lean(` too.
                    let w = word_before(i);
                    let p = w.rsplit(['(', ',']).next().unwrap_or(w).to_ascii_lowercase();
                    return fail(
                        i,
                        format!("expected a space or the end of the price, found `C`: cents are a lower-case `c`; write `{p}c`"),
                        "cents are `c`",
                    );
                }
                if first_is(i.input, |c| c.is_ascii_alphanumeric() || c == '.') {
                    return expected(i, "a space or the end of the price");
                }
                Ok(())
            }),
        )
            .map(|((((kind, text), span), offset), ())| Price::Anchor {
                anchor: Anchor { kind, text, span },
                offset,
            }), (
            call(&[(LEAN, ())]),
            Sp0,
            Nest(price()),
            comma("`,` between the two prices of lean(...)"),
            Nest(price()),
            comma("`,` before the weight of lean(a, b, w)"),
            NUMBER_RAW.what("a weight in [0, 1] as the third argument of lean"),
            close("`)` after lean(a, b, w)"),
        )
            .spanned()
            .map(|((_, _, a, _, b, _, w, _), span)| Price::Lean {
                a: boxed_price(a),
                b: boxed_price(b),
                w,
                span,
            }), (
            call(MIN_CALL),
            Sp0,
            Nest(price()),
            comma("`,` between the two prices of min(...)"),
            Nest(price()),
            close("`)` to close min(...)"),
        )
            .spanned()
            .map(|((_, _, a, _, b, _), span)| Price::Min {
                a: boxed_price(a),
                b: boxed_price(b),
                span,
            }), (
            call(MAX_CALL),
            Sp0,
            Nest(price()),
            comma("`,` between the two prices of max(...)"),
            Nest(price()),
            close("`)` to close max(...)"),
        )
            .spanned()
            .map(|((_, _, a, _, b, _), span)| Price::Max {
                a: boxed_price(a),
                b: boxed_price(b),
                span,
            })), otherwise: price_guide });

/// Why the text at `i` is not a price (the guided escapes: `@ spot`, a negative price).
fn price_guide(i: &mut In<'_>) -> R<Price> {
    if i.input.starts_with('-') {
        return fail(
            i,
            "a price cannot be negative: write an anchor with an offset, like `fair-3c`",
            "negative price",
        );
    }
    let w = WordChars::Price.word(i.input);
    let lw = w.to_ascii_lowercase();
    if w.is_empty() && i.input.is_empty() {
        return fail(
            i,
            format!(
                "expected a price after `@`, found end of line: use an anchor ({ANCHOR_LIST}), a number, or stub"
            ),
            "expected a price",
        );
    }
    if is_series_word(w) || lw == "spot" {
        return fail(
            i,
            format!(
                "expected a price anchor after `@`, found `{w}`: a series is not a price; use an anchor ({ANCHOR_LIST}), a number, or stub, e.g. `@ fair` or `@ min(fair, ask)`"
            ),
            "a series is not a price",
        );
    }
    if is_reserved(w) {
        return reserved_err(i, w);
    }
    let f = found(i);
    fail(
        i,
        format!(
            "expected a price, found {f}: use an anchor ({ANCHOR_LIST}) with an optional offset like `fair-3c`, a number, stub, or lean(a, b, w) / min(a, b) / max(a, b)"
        ),
        "expected a price",
    )
}

// ---------------------------------------------------------------- series and values

const SERIES_LIST: &str = "spot, hod, lod, vwap, open, prior-close, velocity(<dur>), pnl, time, fills.avg_px, <SYM>.spot, mark, mid, bid, ask";

rule!(fn series -> Series = "series", Choice { arms: (SYM_SPOT
            .what("a symbol")
            .spanned()
            .map(|((sym, text), span)| Series {
                kind: SeriesKind::SymSpot { sym },
                text,
                span,
            }), (
            CiTable {
                table: &[(VELOCITY, ())],
                index: ci_index(&[(VELOCITY, ())]),
                text: true,
                chars: WordChars::Series,
                then: "(",
                need: Need::Expected("velocity"),
            },
            DUR.what("the window of velocity(...)"),
            lit(")", "`)` after the velocity window"),
        )
            .spanned()
            .map(|(((_, t), window, ()), span)| Series {
                kind: SeriesKind::Velocity { window },
                text: t,
                span,
            }), CiTable {
            table: SIMPLE_SERIES,
            index: ci_index(SIMPLE_SERIES),
            text: true,
            chars: WordChars::Series,
            then: "",
            need: Need::Expected("a series"),
        }
        .spanned()
        .map(|((mk, text), span)| Series {
            kind: mk(),
            text,
            span,
        })), otherwise: series_guide });

/// Why the text at `i` is not a series (and so not a predicate).
fn series_guide<T>(i: &mut In<'_>) -> R<T> {
    let w = WordChars::Series.word(i.input);
    if w.eq_ignore_ascii_case(VELOCITY) {
        let _ = i.next_slice(w.len());
        if i.input.starts_with('(') {
            return expected(i, "`(<window>)` after velocity, like `velocity(1m)`");
        }
        return velocity_window(i, w);
    }
    if is_reserved(w) {
        return reserved_err(i, w);
    }
    let f = found(i);
    let hint = match w {
        "WHEN" | "DO" => format!(" ({w} belongs on its own line, indented two spaces)"),
        w if case_of(w, &[NOT, AND, OR]).is_some() => {
            format!(": {}", keyword_case_msg("trigger", w))
        }
        _ => String::new(),
    };
    fail(
        i,
        format!(
            "expected a predicate (a series such as {SERIES_LIST}; T-<n>; phase open|close; plan(<name>).fired|filled; headline), found {f}{hint}"
        ),
        "expected a predicate",
    )
}

/// `velocity` written without its window (`velocity > 0.1`, `velocity 1m > 0.1`): the
/// message shows the author's predicate with the window in parentheses, which parses.
#[cold]
#[inline(never)]
fn velocity_window<T>(i: &mut In<'_>, w: &str) -> R<T> {
    // Tabs are named elsewhere, never shown between backticks: spaces here.
    let rest = i.input.replace('\t', " ");
    let rest = rest.trim();
    // A window written apart (`velocity 1m > 0.1`) goes inside the parentheses.
    let t = next_token(rest);
    let is_dur = t.len() > 1
        && t.ends_with(crate::lang::lexicon::DUR_UNITS)
        && t[..t.len() - 1].bytes().all(|b| b.is_ascii_digit());
    let (window, rest) = if is_dur {
        (t, rest[t.len()..].trim_start_matches(' '))
    } else {
        ("1m", rest)
    };
    let fix = if rest.is_empty() {
        format!("`{w}({window})`")
    } else {
        format!("`{w}({window}) {rest}`")
    };
    fail(
        i,
        format!(
            "expected `(<window>)` after velocity: velocity is the move over a window written in parentheses right after it, like `velocity(1m)`; write {fix}"
        ),
        "velocity needs its window",
    )
}

rule!(fn value -> Value = "value", Choice { arms: (CLOCK.what("a clock time").map(|clock| Value::Clock { clock }), NUMBER.what("a number").map(|value| Value::Number { value }), PERCENTILE.what("a percentile").map(|pct| Value::Percentile { pct }), series().map(|series| Value::Series { series })), otherwise: value_guide });

/// Why the text at `i` is not a value to compare with: the predicate before it is whole, so
/// the message is about the value (`p-1`, `+5`, `.5`), not "expected a predicate".
fn value_guide<T>(i: &mut In<'_>) -> R<T> {
    let w = WordChars::Series.word(i.input);
    if w.eq_ignore_ascii_case(VELOCITY) || is_reserved(w) {
        return series_guide(i);
    }
    let t = next_token(i.input);
    let hint = if let Some(n) = t.strip_prefix('+') {
        format!(": a compared number takes no `+`; write `{n}`")
    } else if t.starts_with('.') {
        format!(": a number starts with a digit; write `0{t}`")
    } else if t.len() > 1 && t.starts_with('P') && t[1..].starts_with(|c: char| c.is_ascii_digit())
    {
        format!(": a percentile is a lower-case `p`; write `p{}`", &t[1..])
    } else if t.len() > 1
        && t.starts_with(['p', 'P'])
        && !t[1..].starts_with(|c: char| c.is_ascii_digit())
    {
        ": a percentile is `p` then 0 to 100, like `p95` or `p99.5`".to_string()
    } else {
        String::new()
    };
    let f = found(i);
    fail(
        i,
        format!(
            "expected a value to compare with (a number like `5200` or `-1.5`, a clock `HH:MM`, a percentile like `p95`, or a series such as {SERIES_LIST}), found {f}{hint}"
        ),
        "expected a value",
    )
}

// ---------------------------------------------------------------- triggers

rule!(pub(crate) fn trigger -> Trigger = "trigger", Joined {
    item: and_term(),
    sep: (sp("a space"), kw(OR, OR), sp("a predicate after OR")),
    many: |terms| Trigger::Or { terms },
});

rule!(fn and_term -> Trigger = "and_term", Joined {
    item: unary(),
    sep: (sp("a space"), kw(AND, AND), sp("a predicate after AND")),
    many: |terms| Trigger::And { terms },
});

rule!(fn unary -> Trigger = "unary", ChoiceOr { arms: ((kw(NOT, NOT), sp("a predicate after NOT"), Nest(unary())).map(|(_, _, inner)| {
            Trigger::Not {
                inner: Box::new(inner),
            }
        }), (
            lit("(", "`(`"),
            Sp0,
            Nest(trigger()),
            Check(joiner_case),
            close("`)` to close the group, or AND / OR"),
        )
            .map(|(_, _, inner, (), _)| Trigger::Group {
                inner: Box::new(inner),
            })), last: predicate().map(|pred| Trigger::Pred { pred }) });

/// `(spot > hod and spot > vwap)`: a lower-case `and` / `or` where a group goes on.
fn joiner_case(i: &mut In<'_>) -> R<()> {
    let t = next_token(i.input.trim_start_matches(' '));
    if case_of(t, &[AND, OR]).is_some() {
        return fail(
            i,
            format!(
                "expected `)` to close the group, or AND / OR, found `{t}`: {}",
                keyword_case_msg("trigger", t)
            ),
            "write it in upper case",
        );
    }
    Ok(())
}

/// `within <dur>` after an event; an event cannot be `held`.
/// `<spaces> <keyword> <spaces> <duration>`, optional.
type DurTail = Opt<(Sp, Kw, Sp, Lex<Dur>)>;

fn within() -> (DurTail, Refuse<(Sp, Kw)>) {
    (
        tail(
            "within",
            "a duration after `within`",
            DUR.what("a duration after `within`"),
        ),
        Refuse {
            when: (sp("a space"), kw("held", "held")),
            refuse: |i| {
                let _ = Sp0.parse(i);
                fail(
                    i,
                    "an event is an instant and cannot be held: use `within <dur>` to ask whether it happened recently",
                    "use within",
                )
            },
        },
    )
}

fn held() -> DurTail {
    tail(
        "held",
        "a duration after `held`, like `held 60s`",
        DUR.what("a duration after `held`"),
    )
}

/// What follows a series in a predicate.
enum Tail {
    Cross(CrossDir, Value, Option<Dur>),
    Cmp(CmpOp, Value, Option<Dur>),
}

const CROSS_DIR_VALUES: [CrossDir; 2] = [CrossDir::Above, CrossDir::Below];
const CMP_OP_VALUES: [CmpOp; 4] = [CmpOp::Ge, CmpOp::Le, CmpOp::Gt, CmpOp::Lt];
const PHASE_VALUES: [Phase; 2] = [Phase::Open, Phase::Close];

// Boxed as soon as it is built: the rest of the parse passes a pointer up, not the predicate.
rule!(fn predicate -> Box<Predicate> = "predicate", ChoiceOr { arms: ((
            lit("T-", "T-"),
            MINUTES.what("minutes before the close after `T-`, like `T-30`"),
        )
            .spanned()
            .map(|((_, minutes), span)| boxed_pred(Predicate::TMinus { minutes, span })), (
            kw(PHASE, PHASE),
            sp("`open` or `close` after `phase`"),
            one_of(PHASES, Need::Expected("`open` or `close` after `phase`")),
        )
            .spanned()
            .map(|((_, _, k), span)| {
                boxed_pred(Predicate::Phase {
                    phase: PHASE_VALUES[k],
                    span,
                })
            }), (
            lit("plan(", "plan("),
            NAME.what("a plan name inside plan(...)"),
            lit(").", "`).fired` or `).filled` after plan(<name>"),
            one_of(
                PLAN_EVENTS,
                Need::Expected("`fired` or `filled` after `plan(<name>).`"),
            ),
            within(),
        )
            .spanned()
            .map(|((_, plan, _, k, (within, ())), span)| {
                boxed_pred(Predicate::Event {
                    event: if k == 0 {
                        Event::PlanFired { plan }
                    } else {
                        Event::PlanFilled { plan }
                    },
                    within: within.map(|(_, _, _, d)| d),
                    span,
                })
            }), (kw(HEADLINE, HEADLINE), within())
            .spanned()
            .map(|((_, (within, ())), span)| {
                boxed_pred(Predicate::Event {
                    event: Event::Headline,
                    within: within.map(|(_, _, _, d)| d),
                    span,
                })
            })), last: Ctx {
            a: series(),
            f: |s: &Series| s.text.clone(),
            b: (
            sp("`crosses above|below` or a comparison (>, <, >=, <=) after `{prev}`"),
            Choice { arms: ((
                        kw(CROSSES, CROSSES),
                        sp("`above` or `below` after `crosses`"),
                        one_of(CROSS_DIRS, Need::Expected("`above` or `below` after `crosses`")),
                        sp("a value to cross (a number, a clock time, a series or pN)"),
                        value(),
                        held(),
                    )
                        .map(|(_, _, k, _, v, h)| {
                            Tail::Cross(CROSS_DIR_VALUES[k], v, h.map(|(_, _, _, d)| d))
                        }), (
                        lits(CMP_OPS, Need::Expected("a comparison")),
                        sp("a space then a value after the comparison"),
                        value(),
                        held(),
                    )
                        .map(|(k, _, v, h)| {
                            Tail::Cmp(CMP_OP_VALUES[k], v, h.map(|(_, _, _, d)| d))
                        })), otherwise: |i| {
                    if let Some(op) = [("=>", ">="), ("=<", "<=")]
                        .iter()
                        .find(|(w, _)| i.input.starts_with(w))
                        .map(|(_, op)| op)
                    {
                        let value = i.input[2..].trim();
                        let value = if value.is_empty() { "<value>" } else { value };
                        return fail(
                            i,
                            format!(
                                "did you mean `{op}`? Kestrel compares with >, <, >= or <=, the `=` last: write `{{prev}} {op} {value}`"
                            ),
                            "write the `=` last",
                        );
                    }
                    if i.input.starts_with('=') || i.input.starts_with("!=") {
                        return fail(
                            i,
                            "Kestrel compares with >, <, >= or <= (prices are never exactly equal): use a comparison or `crosses above|below`",
                            "no equality",
                        );
                    }
                    expected(
                        i,
                        "`crosses above|below` or a comparison (>, <, >=, <=) after `{prev}`",
                    )
                } },
            ),
        }
            .spanned()
            .map(|((series, (_, tail)), span)| boxed_pred(match tail {
                Tail::Cross(dir, value, held) => Predicate::Cross {
                    series,
                    dir,
                    value,
                    held,
                    span,
                },
                Tail::Cmp(op, value, held) => Predicate::Compare {
                    series,
                    op,
                    value,
                    held,
                    span,
                },
            })) });

// ---------------------------------------------------------------- tickets

const MODIFIER_LIST: &str =
    "peg, fix, esc <price> <dur>, cap <price>, floor <price>, cancel-if <trigger>";

/// `@` after spaces, or the guided message for a ticket or TP without one.
fn at_sign(msg: &'static str) -> (Sp, Lit) {
    (
        Sp(Need::Guide(msg, "missing `@`")),
        Exact("@", Need::Guide(msg, "missing `@`")),
    )
}

const SIDE_VALUES: [Side; 2] = [Side::Buy, Side::Sell];
const RIGHT_VALUES: [Right; 2] = [Right::C, Right::P];

rule!(fn strike -> Strike = "strike", Choice { arms: (word(ATM, || Strike::Atm), (
            lits(&["+", "-"], Need::Expected("a sign")),
            UNSIGNED.what("a strike offset like `+1` or `-2`"),
        )
            .spanned()
            .map(|((k, n), span)| {
                // The sign and the digits, in the digits' string (no formatting machinery).
                let mut text = n.text;
                text.insert(0, if k == 1 { '-' } else { '+' });
                Strike::Relative(Num { text, span })
            }), UNSIGNED.what("a strike").map(Strike::Absolute)), otherwise: instrument_guide });

fn instrument_guide<T>(i: &mut In<'_>) -> R<T> {
    let f = found(i);
    fail(
        i,
        format!(
            "expected an instrument, found {f}: write a strike then C or P (`ATM C`, `+1 C`, `-2 P`, `5200 C`) or `shares`"
        ),
        "expected an instrument",
    )
}

rule!(fn instrument -> Instrument = "instrument", Choice { arms: (word(SHARES, || Instrument::Shares), (
            strike(),
            sp("`C` or `P` after the strike"),
            one_of(RIGHTS, Need::Expected("`C` or `P` after the strike")),
        )
            .map(|(strike, _, k)| Instrument::Option {
                strike,
                right: RIGHT_VALUES[k],
            })), otherwise: instrument_guide });

rule!(fn modifier -> Modifier = "modifier", Choice { arms: (word(FLAG_MODIFIERS[0], || Modifier::Peg), word(FLAG_MODIFIERS[1], || Modifier::Fix), (
            kw(ESC_MODIFIER, ESC_MODIFIER),
            sp("a price after `esc`"),
            price(),
            sp("a duration after the esc price, like `esc fair 2m`"),
            DUR.what("how long to wait before re-pricing"),
        )
            .map(|(_, _, price, _, after)| Modifier::Esc { price, after }), (kw(PRICE_MODIFIERS[0], "cap"), sp("a price after `cap`"), price())
            .map(|(_, _, price)| Modifier::Cap { price }), (kw(PRICE_MODIFIERS[1], "floor"), sp("a price after `floor`"), price())
            .map(|(_, _, price)| Modifier::Floor { price })), otherwise: backtrack });

rule!(fn modifiers -> Vec<Modifier> = "modifiers", (
    Many((sp("a space"), modifier()).map(|(_, m)| m)),
    // cancel-if ends the line.
    tail(
        CANCEL_IF_MODIFIER,
        "a trigger after `cancel-if`",
        trigger(),
    ),
)
    .map(|(mut out, cancel)| {
        if let Some((_, _, _, when)) = cancel {
            out.push(Modifier::CancelIf { when });
        }
        out
    }));

rule!(fn ticket -> Ticket = "ticket", (
    Choice { arms: (one_of(SIDES, Need::Expected("`buy` or `sell`")).map(|k| SIDE_VALUES[k]),), otherwise: |i| {
            let f = found(i);
            let w = next_token(i.input);
            // A RELOAD's trigger runs into its ticket: a sign there is arithmetic on the
            // trigger (`RELOAD WHEN spot > hod + 1 buy ...`), told as `eol` tells it.
            if let Some(m) = sign_msg(i, w, "the trigger") {
                return fail(i, m, "unexpected");
            }
            let hint = if w.eq_ignore_ascii_case("buy") || w.eq_ignore_ascii_case("sell") {
                format!(": write `{}` in lower case", w.to_ascii_lowercase())
            } else if case_of(w, &[AND, OR]).is_some() && trigger_open(line_before(i)) {
                format!(": {}", keyword_case_msg("trigger", w))
            } else {
                ": a ticket is `buy|sell <qty> <strike> C|P @ <price>` or `buy|sell <qty> shares @ <price>`".to_string()
            };
            fail(
                i,
                format!("expected `buy` or `sell`, found {f}{hint}"),
                "expected buy or sell",
            )
        } },
    sp("a quantity after the side"),
    NUMBER.what("a quantity (a positive integer) after the side"),
    sp("an instrument after the quantity: `<strike> C|P` or `shares`"),
    instrument(),
    Check(expiry_on_ticket),
    at_sign("expected `@` and a price after the instrument, found {found}: write e.g. `buy 1 +1 C @ fair`"),
    sp("a space then a price after `@`"),
    price(),
    modifiers(),
)
    .spanned()
    .map(|((side, _, qty, _, instrument, (), _, _, price, modifiers), span)| Ticket {
        side,
        qty,
        instrument,
        price,
        modifiers,
        span,
    }));

/// `buy 1 ATM C 0dte @ fair`: the expiry is the plan's, on its USING line. On every
/// ticket, so the common path is one look at the bytes: spaces, then a digit.
#[inline]
fn expiry_on_ticket(i: &mut In<'_>) -> R<()> {
    let b = i.input.as_bytes();
    let spaces = b.iter().take_while(|&&c| c == b' ').count();
    if spaces == 0 || !b.get(spaces).is_some_and(u8::is_ascii_digit) {
        return Ok(());
    }
    expiry_on_ticket_refusal(i)
}

#[cold]
#[inline(never)]
fn expiry_on_ticket_refusal(i: &mut In<'_>) -> R<()> {
    let rest = i.input.trim_start_matches(' ');
    let t = next_token(rest);
    let b = t.as_bytes();
    let dte = t
        .strip_suffix("dte")
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()));
    let date = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(k, c)| k == 4 || k == 7 || c.is_ascii_digit());
    if !(dte || date) {
        return Ok(());
    }
    // The author's ticket without the expiry: its side (the last `buy` / `sell` on the
    // line) to the instrument, then what follows the expiry.
    let line = line_before(i);
    let side = ["buy ", "sell "]
        .iter()
        .filter_map(|w| line.rfind(w))
        .max()
        .unwrap_or(0);
    let after = rest[t.len()..].trim();
    let ticket = format!("{} {after}", line[side..].trim_end());
    fail(
        i,
        format!(
            "expected `@` and a price after the instrument, found `{t}`: a ticket takes no expiry; the expiry goes on the plan's USING clause, like `USING signal SPX exec SPY {t}`, and the ticket is `{}`",
            ticket.trim_end()
        ),
        "the expiry goes on USING",
    )
}

// ---------------------------------------------------------------- PLAN clauses

rule!(pub(crate) fn using_body -> Using = "using_body", (
    kw(
        "signal",
        "`signal <SYM>` after USING: `USING signal SPX exec SPY 0dte`",
    ),
    sp("a symbol after `signal`"),
    SYM.what("a symbol after `signal` (upper case, like `SPX`)"),
    sp_kw("exec", "`exec <SYM>` after the signal symbol"),
    sp("a symbol after `exec`"),
    SYM.what("a symbol after `exec` (upper case, like `SPY`)"),
    opt((
        sp("a space"),
        EXPIRY.what("an expiry: `0dte`, `1dte` or `YYYY-MM-DD`"),
    )),
)
    .map(|(_, _, signal, _, _, exec, expiry)| Using {
        signal,
        exec,
        expiry: expiry.map(|(_, e)| e),
    }));

/// `@ <price> <modifiers>` after a clause's trigger or multiple.
fn priced() -> (Sp, Lit, Sp, Named<Price>, Named<Vec<Modifier>>) {
    (
        sp("a space"),
        lit("@", "`@`"),
        sp("a price after `@`"),
        price(),
        modifiers(),
    )
}

rule!(fn clause -> ClauseKind = "clause", Choice { arms: ((
            kw("USING", "USING"),
            sp("`signal <SYM> exec <SYM>` after USING"),
            using_body(),
            end(|i| eol(i, "the USING clause")),
        )
            .map(|(_, _, u, _)| ClauseKind::Using(u)), (
            kw("WHEN", "WHEN"),
            sp("a trigger after WHEN"),
            trigger(),
            end(|i| eol(i, "the WHEN trigger")),
        )
            .map(|(_, _, t, _)| ClauseKind::When(t)), (
            kw("DO", "DO"),
            sp("a ticket after DO, like `DO buy 1 +1 C @ fair`"),
            ticket(),
            end(|i| eol(i, "the DO clause")),
        )
            .map(|(_, _, t, _)| ClauseKind::Do(t)), (
            kw("ALSO", "ALSO"),
            sp("a ticket after ALSO, like `ALSO buy 1 +1 C @ fair`"),
            ticket(),
            end(|i| eol(i, "the ALSO clause")),
        )
            .map(|(_, _, t, _)| ClauseKind::Also(t)), (
            kw("RELOAD", "RELOAD"),
            sp_kw("WHEN", "`WHEN <trigger> <ticket>` after RELOAD"),
            sp("a trigger after RELOAD WHEN"),
            trigger(),
            sp("a ticket after the RELOAD trigger, like `buy 1 -2 P @ fair`"),
            ticket(),
            end(|i| eol(i, "the RELOAD clause")),
        )
            .map(|(_, _, _, when, _, ticket, _)| ClauseKind::Reload { when, ticket }), (
            kw("TP", "TP"),
            sp("a multiple of cost after TP, like `TP 2x @ fair`"),
            Ctx {
                a: NUMBER_RAW.what("a multiple of cost after TP, like `TP 2x @ fair`"),
                b: (
                    Check(tp_percent),
                    lit(
                        "x",
                        "`x` after the multiple: `TP {prev}x` (a multiple of the cost: `TP 1.5x` is 50% over it)",
                    ),
                ),
                f: |n: &Num| n.text.clone(),
            },
            tail(
                "frac",
                "a fraction after `frac`, like `frac 0.5`",
                (
                    NUMBER.what("a fraction after `frac`, like `frac 0.5`"),
                    Check(frac_percent),
                ),
            ),
            at_sign("expected `@` and a price after the TP multiple, found {found}: write e.g. `TP 2x frac 0.5 @ fair`"),
            sp("a price after `@`"),
            price(),
            modifiers(),
            end(|i| eol(i, "the TP clause")),
        )
            .map(|(_, _, (mult, _), frac, _, _, price, modifiers, _)| ClauseKind::Tp {
                mult,
                frac: frac.map(|(_, _, _, (f, ()))| f),
                price,
                modifiers,
            }), (
            kw("EXIT", "EXIT"),
            sp("a trigger after EXIT"),
            trigger(),
            opt(priced()),
            end(|i| eol(i, "the EXIT clause")),
        )
            .map(|(_, _, when, priced, _)| match priced {
                Some((_, _, _, price, modifiers)) => ClauseKind::Exit {
                    when,
                    price: Some(price),
                    modifiers,
                },
                None => ClauseKind::Exit {
                    when,
                    price: None,
                    modifiers: Vec::new(),
                },
            }), (
            kw("INVALIDATE", "INVALIDATE"),
            sp("a trigger after INVALIDATE"),
            trigger(),
            opt((
                sp("a space"),
                lit("->", "->"),
                sp("`halt` or `halt, ride` after `->`"),
                kw("halt", "`halt` or `halt, ride` after `->`"),
                opt((
                    Sp0,
                    lit(",", ","),
                    sp("`ride` after `halt,`"),
                    kw("ride", "`ride` after `halt,`"),
                )),
            )),
            end(|i| eol(i, "the INVALIDATE clause")),
        )
            .map(|(_, _, when, action, _)| ClauseKind::Invalidate {
                when,
                action: action.map(|(_, _, _, _, ride)| match ride {
                    Some(_) => InvalidateAction::HaltRide,
                    None => InvalidateAction::Halt,
                }),
            }), (
            kw("CANCEL-IF", "CANCEL-IF"),
            sp("a trigger after CANCEL-IF"),
            trigger(),
            end(|i| eol(i, "the CANCEL-IF clause")),
        )
            .map(|(_, _, t, _)| ClauseKind::CancelIf(t)), (
            kw("ARM", "ARM"),
            sp("a plan name after ARM"),
            NAME.what("a plan name after ARM"),
            end(|i| eol(i, "the ARM clause")),
        )
            .map(|(_, _, n, _)| ClauseKind::Arm(n))), otherwise: |i| {
        let w = next_token(i.input);
        let f = found(i);
        let upper = w.to_ascii_uppercase();
        let hint = if CLAUSES.contains(&upper.as_str()) {
            format!(": clause keywords are upper case, write `{upper}`")
        } else if let Some(h) = clause_named_otherwise(&upper) {
            h.to_string()
        } else if is_reserved(w) {
            return reserved_err(i, w);
        } else {
            String::new()
        };
        fail(
            i,
            format!(
                "expected a PLAN clause (USING, WHEN, DO, ALSO, RELOAD, TP, EXIT, INVALIDATE, CANCEL-IF, ARM), found {f}{hint}"
            ),
            "expected a clause",
        )
    } });

/// `TP 1%`: a TP is a multiple of the cost, so the percent over it is written as one
/// (`TP 1.01x`), not as `TP 1x` (which sells at cost and is refused by `tp-multiple`).
fn tp_percent(i: &mut In<'_>) -> R<()> {
    if !i.input.starts_with('%') {
        return Ok(());
    }
    let n = word_before(i);
    let over = percent_over(n)
        .map(|m| format!("; for {n}% over the cost write `TP {m}x`"))
        .unwrap_or_default();
    fail(
        i,
        format!(
            "expected `x` after the multiple, found `%`: a TP is a multiple of the cost, not a percent (`TP 1.5x` is 50% over it){over}"
        ),
        "a TP is a multiple of cost",
    )
}

/// `frac 50%`: frac is the fraction of the position the TP sells, written as a fraction.
fn frac_percent(i: &mut In<'_>) -> R<()> {
    if !i.input.starts_with('%') {
        return Ok(());
    }
    let n = word_before(i);
    let fix = percent_of(n)
        .map(|f| format!(": write `frac {f}`"))
        .unwrap_or_default();
    fail(
        i,
        format!(
            "unexpected `%` after `frac {n}`: frac is the fraction of the position the TP closes, in (0, 1], not a percent{fix}"
        ),
        "frac is a fraction",
    )
}

/// `n` (an unsigned decimal) as `v / 10^scale`, for the exact arithmetic of the percent
/// messages (no float formatting: `1%` over is `1.01`, not `1.0100000000000002`).
fn decimal_parts(n: &str) -> Option<(u128, usize)> {
    let (int, frac) = n.split_once('.').unwrap_or((n, ""));
    if int.is_empty()
        || n.len() > 30
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    Some((format!("{int}{frac}").parse().ok()?, frac.len()))
}

/// `v / 10^scale` written with no trailing zeros (`150, 2` is `1.5`).
fn decimal_text(v: u128, scale: usize) -> String {
    let s = format!("{v:0>w$}", w = scale + 1);
    let (a, b) = s.split_at(s.len() - scale);
    let b = b.trim_end_matches('0');
    if b.is_empty() {
        a.to_string()
    } else {
        format!("{a}.{b}")
    }
}

/// `n`% as a fraction (`50` is `0.5`).
fn percent_of(n: &str) -> Option<String> {
    let (v, scale) = decimal_parts(n)?;
    Some(decimal_text(v, scale + 2))
}

/// One plus `n`% (`1` is `1.01`, `50` is `1.5`).
fn percent_over(n: &str) -> Option<String> {
    let (v, scale) = decimal_parts(n)?;
    let one = 10u128.checked_pow(u32::try_from(scale + 2).ok()?)?;
    Some(decimal_text(v.checked_add(one)?, scale + 2))
}

/// What a trader's word for a clause is in Kestrel: a stop is an EXIT, a target a TP.
fn clause_named_otherwise(upper: &str) -> Option<&'static str> {
    match upper {
        "STOP" | "STOP-LOSS" | "SL" => Some(": a stop is an EXIT clause, like `EXIT spot < lod`"),
        "TARGET" | "TAKE-PROFIT" => Some(": a profit target is a TP clause, like `TP 2x @ fair`"),
        "IF" => Some(": a condition is a WHEN clause, like `WHEN spot > vwap`"),
        _ => None,
    }
}

/// Clause keywords, from the shared lexicon.
use super::lexicon::CLAUSE_KEYWORDS as CLAUSES;

// ---------------------------------------------------------------- VIEW panes

/// What a pane's arguments parsed into, before the pane is named.
#[derive(Default)]
struct PaneVals {
    dur: Option<Dur>,
    expiry: Option<Expiry>,
    num: Option<Num>,
}

fn make_pane(p: &str, v: PaneVals) -> Pane {
    match (p, v) {
        ("tape", v) => Pane::Tape { bar: v.dur },
        (
            "chain",
            PaneVals {
                expiry: Some(expiry),
                num,
                ..
            },
        ) => Pane::Chain {
            expiry,
            strikes: num,
        },
        (
            "gex",
            PaneVals {
                expiry: Some(expiry),
                ..
            },
        ) => Pane::Gex { expiry },
        (
            "skew",
            PaneVals {
                num: Some(delta), ..
            },
        ) => Pane::Skew { delta },
        (
            "velocity",
            PaneVals {
                dur: Some(window), ..
            },
        ) => Pane::Velocity { window },
        ("kernel", _) => Pane::Kernel,
        ("plans", _) => Pane::Plans,
        ("blotter", v) => Pane::Blotter { last: v.num },
        ("journal", v) => Pane::Journal { last: v.num },
        ("headlines", v) => Pane::Headlines { last: v.num },
        _ => Pane::Levels,
    }
}

/// One pane of the catalog, from its row of the lexicon's `PANES` table.
fn pane_arm(p: &'static str, args: PaneArgs) -> Dyn<Pane> {
    let k = move || kw(p, "a pane");
    let mk = move |v: PaneVals| make_pane(p, v);
    // `{prev}` in a message is the pane's name.
    let named = move |_: &()| p.to_string();
    const EXPIRY_WHAT: &str = "an expiry after `{prev}`: `0dte`, `1dte` or `YYYY-MM-DD`";
    match args {
        PaneArgs::None => arm(k().map(move |_| mk(PaneVals::default()))),
        PaneArgs::OptBar => arm(
            (k(), opt((sp("a space"), DUR.what("a bar size like `5m`")))).map(move |(_, d)| {
                mk(PaneVals {
                    dur: d.map(|(_, d)| d),
                    ..PaneVals::default()
                })
            }),
        ),
        PaneArgs::ExpiryStrikes => arm(Ctx {
            a: k(),
            b: (
                sp(EXPIRY_WHAT),
                EXPIRY.what(EXPIRY_WHAT),
                tail(
                    "strikes",
                    "a count after `strikes`",
                    NUMBER.what("how many strikes around ATM"),
                ),
            ),
            f: named,
        }
        .map(move |(_, (_, e, n))| {
            mk(PaneVals {
                expiry: Some(e),
                num: n.map(|(_, _, _, n)| n),
                ..PaneVals::default()
            })
        })),
        PaneArgs::Expiry => arm(Ctx {
            a: k(),
            b: (sp(EXPIRY_WHAT), EXPIRY.what("an expiry after `{prev}`")),
            f: named,
        }
        .map(move |(_, (_, e))| {
            mk(PaneVals {
                expiry: Some(e),
                ..PaneVals::default()
            })
        })),
        PaneArgs::Delta => arm((
            k(),
            sp("a delta after `skew`, like `skew 25d`"),
            NUMBER_RAW.what("a delta after `skew`, like `skew 25d`"),
            lit("d", "`d` after the skew delta, like `skew 25d`"),
        )
            .map(move |(_, _, n, _)| {
                mk(PaneVals {
                    num: Some(n),
                    ..PaneVals::default()
                })
            })),
        PaneArgs::Window => arm(Ctx {
            a: k(),
            b: (
                sp("a window after `{prev}`, like `{prev} 1m`"),
                DUR.what("a window after `{prev}`"),
            ),
            f: named,
        }
        .map(move |(_, (_, d))| {
            mk(PaneVals {
                dur: Some(d),
                ..PaneVals::default()
            })
        })),
        PaneArgs::OptLast => arm((
            k(),
            tail(
                "last",
                "a count after `last`",
                NUMBER.what("a count after `last`"),
            ),
        )
            .map(move |(_, n)| {
                mk(PaneVals {
                    num: n.map(|(_, _, _, n)| n),
                    ..PaneVals::default()
                })
            })),
    }
}

rule!(fn pane -> Pane = "pane", (
    Alt {
        arms: PANES.iter().map(|&(p, args)| pane_arm(p, args)).collect(),
        otherwise: |i| {
            let f = found(i);
            let w = next_token(i.input);
            if let Some(p) = PANES.iter().map(|(p, _)| *p).find(|p| p.eq_ignore_ascii_case(w)) {
                return fail(
                    i,
                    format!("pane names are lower case: write `{p}` instead of `{w}`"),
                    "write it in lower case",
                );
            }
            fail(
                i,
                format!(
                    "unknown pane {f}: the pane catalog is tape [<bar>], levels, chain <expiry> [strikes <n>], gex <expiry>, skew <n>d, velocity <dur>, kernel, plans, blotter [last <n>], journal [last <n>], headlines [last <n>]"
                ),
                "unknown pane",
            )
        },
        firsts: OnceLock::new(),
    },
    end(|i| eol(i, "the pane")),
)
    .map(|(p, _)| p));

// ---------------------------------------------------------------- GRADE clauses

const COUNTERFACTUAL_VALUES: [Counterfactual; 2] = [Counterfactual::Null, Counterfactual::Ungated];
const GRADE_SUBJECT_VALUES: [GradeSubject; 4] = [
    GradeSubject::Plan,
    GradeSubject::Wake,
    GradeSubject::View,
    GradeSubject::Pod,
];

rule!(fn grade_clause -> GradeClauseKind = "grade_clause", (
    Choice { arms: ((
                kw("VS", "VS"),
                sp("`null` or `ungated` after VS"),
                one_of(
                    COUNTERFACTUALS,
                    Need::Expected("a counterfactual after VS: `null` or `ungated`"),
                ),
            )
                .map(|(_, _, k)| GradeClauseKind::Vs(COUNTERFACTUAL_VALUES[k])), (
                kw("BY", "BY"),
                sp("a key after BY, like `regime.intraday` or `lineage`"),
                KEY.what("a key after BY, like `regime.intraday` or `lineage`"),
            )
                .map(|(_, _, k)| GradeClauseKind::By(k))), otherwise: |i| expected(i, "a GRADE clause: `VS null`, `VS ungated` or `BY <key>`") },
    end(|i| eol(i, "the GRADE clause")),
)
    .map(|(k, _)| k));

// ---------------------------------------------------------------- statement heads

rule!(fn view_head -> View = "view_head", (
    NAME.what("a view name"),
    tail(
        "budget",
        "a token count after `budget`",
        NUMBER.what("a token budget (cl100k tokens), like `budget 900`"),
    ),
)
    .map(|(name, budget)| View {
        name,
        budget: budget.map(|(_, _, _, b)| b),
        panes: Vec::new(),
    }));

/// `intraday: trend`: spaces around the `:` are optional (docs/language.md, "Decisions"),
/// as around the map's `,` and braces, and print as `key: value`.
fn regime_entry() -> impl Syn<Out = RegimeEntry> {
    (
        KEY.what("a regime key like `intraday`"),
        Sp0,
        lit(":", "`:` after the regime key, like `intraday: trend`"),
        Sp0,
        KEY.what("a regime value like `trend`"),
    )
        .map(|(key, _, _, _, value)| RegimeEntry { key, value })
}

rule!(fn plan_head -> Plan = "plan_head", (
    NAME.what("a plan name"),
    sp_kw(
        "budget",
        "`budget <n>R` after the plan name: `PLAN <name> budget 0.2R ttl 15:00`",
    ),
    sp("a risk amount after `budget`, like `0.25R`"),
    RISK.what("a risk amount in R after `budget`, like `0.25R` (R is the book's risk unit, not dollars)"),
    sp_kw(
        "ttl",
        "`ttl <HH:MM|+dur>` after the budget: `ttl 15:00` or `ttl +30m`",
    ),
    sp("a time after `ttl`: `15:00` or `+30m`"),
    Choice { arms: ((lit("+", "+"), DUR.what("a duration after `ttl +`")).map(|(_, d)| Ttl::After(d)), CLOCK.what("a clock time").map(Ttl::At)), otherwise: |i| expected(i, "a time after `ttl`: a clock `HH:MM` or a relative `+30m`") },
    opt((
        sp("a space"),
        kw("regime", "regime"),
        Sp(Need::Expected("`{<key>: <value>, ...}` after `regime`")),
        lit("{", "`{<key>: <value>, ...}` after `regime`"),
        Sp0,
        List {
            item: regime_entry(),
            sep: comma("`,`"),
            next: regime_entry(),
            bounded: true,
        },
        Sp0,
        lit("}", "`,` or `}` in the regime map"),
    )),
    tail(
        "priority",
        "a number after `priority`",
        NUMBER.what("a priority number"),
    ),
)
    .map(|(name, _, _, budget, _, _, ttl, regime, priority)| Plan {
        name,
        budget,
        ttl,
        regime: regime.map(|(_, _, _, _, _, entries, _, _)| entries),
        priority: priority.map(|(_, _, _, p)| p),
        clauses: Vec::new(),
    }));

rule!(fn wake_head -> Wake = "wake_head", (
    NAME.what("a wake name"),
    sp_kw("WHEN", "`WHEN <trigger>` after the wake name"),
    sp("a trigger after WHEN"),
    trigger(),
    tail(
        "DELIVER",
        "a view name after DELIVER",
        NAME.what("a view name after DELIVER"),
    ),
    tail(
        "PRIORITY",
        "a number after PRIORITY",
        NUMBER.what("a priority number"),
    ),
    tail(
        "BUDGET",
        "a count after BUDGET, like `BUDGET 6 wakes/day`",
        (
            NUMBER.what("a count, like `BUDGET 6 wakes/day`"),
            sp("`wakes/day` after the wake budget"),
            lit("wakes/day", "`wakes/day` after the wake budget"),
        ),
    ),
)
    .map(|(name, _, _, when, deliver, priority, budget)| Wake {
        name,
        when,
        deliver: deliver.map(|(_, _, _, d)| d),
        priority: priority.map(|(_, _, _, p)| p),
        budget: budget.map(|(_, _, _, (b, _, _))| b),
    }));

rule!(fn grade_head -> Grade = "grade_head", (
    one_of(
        GRADE_SUBJECTS,
        Need::Expected("what to grade: `plan`, `wake`, `view` or `pod`"),
    ),
    sp("a name to grade"),
    NAME.what("a name to grade"),
    sp_kw("OVER", "`OVER <tapes>` after the graded name"),
    sp("a tape glob or `YYYY-MM[..YYYY-MM]` after OVER"),
    OVER.what("a tape glob after OVER"),
    sp_kw(
        "FILL",
        "`FILL <model>` after the range, like `FILL strict-cross-v1`",
    ),
    sp("a fill model name, like `strict-cross-v1`"),
    FILL.what("a fill model name, like `strict-cross-v1`"),
)
    .map(|(k, _, name, _, _, over, _, _, fill)| Grade {
        subject: GRADE_SUBJECT_VALUES[k],
        name,
        over,
        fill,
        clauses: Vec::new(),
    }));

/// What the indented lines under a statement are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Body {
    /// None: the statement is one line.
    Flat,
    Clauses,
    Panes,
    GradeClauses,
}

/// A statement: its head line and its body. The line layer reads this table to parse a
/// document, and [`describe_document`] reads it to write the grammar's blocks.
pub(crate) struct StatementSyntax {
    /// The head's first keyword.
    pub kw: &'static str,
    /// The grammar rule of the head line.
    pub rule: &'static str,
    /// A turn directive (STAND-DOWN, SHOW VIEW, CANCEL): only in the turn grammar.
    pub directive: bool,
    pub body: Body,
    pub head: Dyn<StatementKind>,
}

/// The statement table, in the order of LANGUAGE.md.
pub(crate) fn statements() -> &'static [StatementSyntax] {
    static S: OnceLock<Vec<StatementSyntax>> = OnceLock::new();
    S.get_or_init(|| {
        let st = |kw: &'static str, rule: &'static str, directive, body, head| StatementSyntax {
            kw,
            rule,
            directive,
            body,
            head,
        };
        vec![
            st(
                "IMPORT",
                "import",
                false,
                Body::Flat,
                arm((
                    kw("IMPORT", "IMPORT"),
                    sp("a name after IMPORT"),
                    NAME.what("a plan name after IMPORT"),
                    sp_kw("FROM", "`FROM <path>` after the imported name"),
                    sp("a path after FROM"),
                    PATH.what("a path after FROM"),
                    end(|i| eol(i, "the statement")),
                )
                    .map(|(_, _, name, _, _, path, _)| {
                        StatementKind::Import(Import { name, path })
                    })),
            ),
            st(
                "USING",
                "using",
                false,
                Body::Flat,
                arm((
                    kw("USING", "USING"),
                    sp("`signal <SYM> exec <SYM>` after USING"),
                    using_body(),
                    end(|i| eol(i, "the statement")),
                )
                    .map(|(_, _, u, _)| StatementKind::Using(u))),
            ),
            st(
                "VIEW",
                "view",
                false,
                Body::Panes,
                arm((
                    kw("VIEW", "VIEW"),
                    sp("a view name after VIEW"),
                    view_head(),
                    end(|i| eol(i, "the statement")),
                )
                    .map(|(_, _, v, _)| StatementKind::View(v))),
            ),
            st(
                "WAKE",
                "wake",
                false,
                Body::Flat,
                arm((
                    kw("WAKE", "WAKE"),
                    sp("a wake name after WAKE"),
                    wake_head(),
                    end(|i| eol(i, "the WAKE line")),
                )
                    .map(|(_, _, w, _)| StatementKind::Wake(w))),
            ),
            st(
                "PLAN",
                "plan",
                false,
                Body::Clauses,
                arm((
                    kw("PLAN", "PLAN"),
                    sp("a plan name after PLAN"),
                    plan_head(),
                    // A collapsed PLAN: the first clause keyword on the head line.
                    Refuse {
                        when: (Sp0, one_of(CLAUSES, Need::Expected("a clause"))),
                        refuse: |i| {
                            let _ = Sp0.parse(i);
                            let t = next_token(i.input);
                            fail(
                                i,
                                format!(
                                    "{t} belongs on its own line: end the PLAN line after its header and write each clause (WHEN, DO, ...) on its own line, indented two spaces"
                                ),
                                "put this on its own indented line",
                            )
                        },
                    },
                    end(|i| eol(i, "the PLAN line")),
                )
                    .map(|(_, _, p, _, _)| StatementKind::Plan(p))),
            ),
            st(
                "POD",
                "pod",
                false,
                Body::Flat,
                arm((
                    kw("POD", "POD"),
                    sp("a pod name after POD"),
                    NAME.what("a pod name"),
                    sp_kw("RISK", "`RISK day-loss <n>R -> halt` after the pod name"),
                    sp_kw("day-loss", "`day-loss <n>R` after RISK"),
                    sp("a risk amount after `day-loss`, like `2R`"),
                    RISK.what("a risk amount after `day-loss`, like `2R`"),
                    sp_kw("->", "`-> halt` after the day-loss"),
                    sp_kw("halt", "`halt` after `->`"),
                    end(|i| eol(i, "the statement")),
                )
                    .map(|(_, _, name, _, _, _, day_loss, _, _, _)| {
                        StatementKind::Pod(Pod { name, day_loss })
                    })),
            ),
            st(
                "BOOK",
                "book",
                false,
                Body::Flat,
                arm((
                    kw("BOOK", "BOOK"),
                    sp("a book name after BOOK"),
                    NAME.what("a book name"),
                    sp_kw("budget", "`budget <n>R` after the book name"),
                    sp("a risk amount after `budget`"),
                    RISK.what("a risk amount after `budget`, like `1.5R`"),
                    sp_kw(
                        "coverage",
                        "`coverage <SYM>[, <SYM>...]` after the budget",
                    ),
                    sp("a symbol after `coverage`"),
                    List {
                        item: SYM.what("a symbol after `coverage`, like `SPY`"),
                        sep: comma("`,`"),
                        next: SYM.what("a symbol after `,`"),
                        bounded: true,
                    },
                    end(|i| eol(i, "the statement")),
                )
                    .map(|(_, _, name, _, _, budget, _, _, coverage, _)| {
                        StatementKind::Book(Book {
                            name,
                            budget,
                            coverage,
                        })
                    })),
            ),
            st(
                "GRADE",
                "grade",
                false,
                Body::GradeClauses,
                arm((
                    kw("GRADE", "GRADE"),
                    sp("what to grade after GRADE"),
                    grade_head(),
                    end(|i| eol(i, "the statement")),
                )
                    .map(|(_, _, g, _)| StatementKind::Grade(g))),
            ),
            st(
                "STAND-DOWN",
                "stand_down",
                true,
                Body::Flat,
                arm((
                    kw("STAND-DOWN", "STAND-DOWN"),
                    REASON.what("a blank before the reason"),
                )
                    .map(|(_, reason)| StatementKind::StandDown(StandDown { reason }))),
            ),
            st(
                "SHOW",
                "show_view",
                true,
                Body::Panes,
                arm((
                    kw("SHOW", "SHOW"),
                    sp_kw("VIEW", "`VIEW <name>` after SHOW"),
                    sp("a view name after SHOW VIEW"),
                    view_head(),
                    end(|i| eol(i, "the statement")),
                )
                    .map(|(_, _, _, v, _)| StatementKind::ShowView(v))),
            ),
            st(
                "CANCEL",
                "cancel",
                true,
                Body::Flat,
                arm((
                    kw("CANCEL", "CANCEL"),
                    sp("what to cancel: a plan or order name"),
                    NAME.what("a plan or order name to cancel"),
                    end(|i| eol(i, "the statement")),
                )
                    .map(|(_, _, target, _)| StatementKind::Cancel(Cancel { target }))),
            ),
        ]
    })
}

const STATEMENTS: &str = "IMPORT, USING, VIEW, WAKE, PLAN, POD, BOOK, GRADE (and in a turn: STAND-DOWN, SHOW VIEW, CANCEL)";

/// A statement head line (column 1), with what the statement's indented lines are.
fn head(i: &mut In<'_>) -> R<(StatementKind, Body)> {
    let b0 = i.input.as_bytes().first().copied();
    for s in statements() {
        if s.kw.as_bytes().first().copied() == b0 && matches!(s.head.lead(i.input), Lead::Yes) {
            return Ok((s.head.parse(i)?, s.body));
        }
    }
    let w = next_token(i.input);
    let f = found(i);
    let up = w.to_ascii_uppercase();
    let msg = if CLAUSES.contains(&w) {
        format!("{w} is a clause, not a statement: indent it two spaces under its PLAN")
    } else if STATEMENT_KEYWORDS
        .iter()
        .chain(DIRECTIVE_KEYWORDS)
        .any(|k| *k == up)
    {
        format!("statement keywords are upper case: write `{up}` instead of {f}")
    } else {
        format!("expected a statement ({STATEMENTS}) at the start of the line, found {f}")
    };
    fail(i, msg, "expected a statement")
}

// ---------------------------------------------------------------- the line layer

struct Line<'a> {
    /// Byte offset of the line start in the document.
    start: usize,
    /// The line without its terminator (and without a trailing `\r`).
    text: &'a str,
    /// Where its first `#` is, if it has one.
    hash: Option<usize>,
}

fn lines(src: &str) -> impl Iterator<Item = Line<'_>> {
    let mut start = 0;
    let total = src.len();
    std::iter::from_fn(move || {
        if start >= total {
            return None;
        }
        let rest = &src[start..];
        let (n, hash) = line_len(rest.as_bytes());
        // `\n` is ASCII: `n` is a character boundary.
        let line = &rest[..n];
        let next = if n < rest.len() { start + n + 1 } else { total };
        let line = line.strip_suffix('\r').unwrap_or(line);
        let l = Line {
            start,
            text: line,
            hash,
        };
        start = next;
        Some(l)
    })
}

/// The length of the line at the start of `b` (up to its `\n`, or all of `b`) and where
/// its first `#` is. One vectorised search for either byte: a line without a comment (nearly
/// every line) is read once; after a `#`, the rest of the line is searched for its end.
fn line_len(b: &[u8]) -> (usize, Option<usize>) {
    match memchr::memchr2(b'\n', b'#', b) {
        None => (b.len(), None),
        Some(n) if b[n] == b'\n' => (n, None),
        Some(h) => {
            let n = memchr::memchr(b'\n', &b[h + 1..]).map_or(b.len(), |n| h + 1 + n);
            (n, Some(h))
        }
    }
}

/// The length of a line's indentation (its leading spaces and tabs), or `None` for a line of
/// nothing else (blank). Bytes, not characters: both are ASCII, so the first other byte
/// starts a character, and a line is read without decoding it.
fn indent_len(text: &str) -> Option<usize> {
    text.bytes().position(|b| b != b' ' && b != b'\t')
}

/// `text` without its trailing spaces and tabs (`trim_end_matches([' ', '\t'])`, by bytes:
/// the byte before the cut is the last byte of a character or the start of the text).
fn trim_end_blanks(text: &str) -> &str {
    let n = text
        .bytes()
        .rposition(|b| b != b' ' && b != b'\t')
        .map_or(0, |k| k + 1);
    &text[..n]
}

/// Split a line into (code, trailing comment) at `hash`, its first `#` if it has one.
fn split_comment(text: &str, hash: Option<usize>) -> (&str, Option<TrailingComment>) {
    debug_assert_eq!(hash, text.find('#'));
    match hash {
        None => (trim_end_blanks(text), None),
        Some(h) => {
            let code = &text[..h];
            let trimmed = trim_end_blanks(code);
            (
                trimmed,
                Some(TrailingComment {
                    gap: code[trimmed.len()..].to_string(),
                    text: text[h..].to_string(),
                }),
            )
        }
    }
}

enum Open {
    None,
    Plan,
    View,
    Grade,
    /// A statement that takes no indented lines.
    Flat(&'static str),
    /// The head line failed to parse: skip its body.
    Broken,
    /// A head line that failed to parse but names a statement with a body (`PLAN`, `VIEW`,
    /// `SHOW VIEW`, `GRADE`): its body lines are still read, so each broken one is reported
    /// with the head (the document is refused either way), where a person fixing the head
    /// would otherwise meet them one round later.
    BrokenBody(Body),
}

/// The body a statement head that failed to parse would have had, by its first words
/// (`PLAN`, `VIEW`, `SHOW VIEW`, `GRADE`, as written); `None` for any other line.
fn broken_head_body(code: &str) -> Option<Body> {
    let mut words = code.split_ascii_whitespace();
    match words.next()? {
        "PLAN" => Some(Body::Clauses),
        "VIEW" => Some(Body::Panes),
        "SHOW" if words.next() == Some("VIEW") => Some(Body::Panes),
        "GRADE" => Some(Body::GradeClauses),
        _ => None,
    }
}

/// The UTF-8 byte-order mark, refused at the start of a document.
const BOM: char = '\u{feff}';

/// Parse a document. On any syntax error, every broken line is reported (one error per
/// line) and no document is returned.
pub fn parse_document(src: &str) -> Result<Document, Vec<Diagnostic>> {
    let mut statements: Vec<Statement> = Vec::new();
    let tail = parse_statements(src, &mut |st| {
        statements.push(st);
        None
    })?;
    Ok(Document { statements, tail })
}

/// The refusal of a document past [`MAX_DOCUMENT_BYTES`](crate::limits::MAX_DOCUMENT_BYTES)
/// (rule `limit`): by its size when known, or (a pipe or device read up to the limit) as
/// more than the limit.
pub(crate) fn too_large(t: crate::limits::TooLarge) -> Diagnostic {
    Diagnostic::new(
        "",
        &LineIndex::new(""),
        Rule::Limit,
        0..0,
        format!(
            "the document {}; a document is at most {} bytes (8 MiB): split it into smaller files",
            t.is(),
            t.limit
        ),
        "document too large",
    )
}

/// [`parse_document`] a statement at a time: `each` gets every statement as soon as its
/// last line is read, in order, for as long as no syntax error has been found (after one,
/// the document is refused: the rest is only read for its errors). Gives the trivia after
/// the last statement, or every syntax error, exactly as [`parse_document`] does.
///
/// `each` may give the statement back when it is done with it: its clause list's memory is
/// then reused for the next plan's clauses (no list grows from empty again).
pub(crate) fn parse_statements(
    src: &str,
    each: &mut dyn FnMut(Statement) -> Option<Statement>,
) -> Result<Vec<Trivia>, Vec<Diagnostic>> {
    use crate::limits::{MAX_DOCUMENT_BYTES, MAX_STATEMENTS};
    // Line numbers are only needed for errors: the index is built on the first one.
    let index = std::cell::OnceCell::new();
    // A document over the size limit is refused before any line is read (rule `limit`).
    if src.len() > MAX_DOCUMENT_BYTES {
        return Err(vec![too_large(crate::limits::TooLarge {
            limit: MAX_DOCUMENT_BYTES,
            size: Some(src.len() as u64),
        })]);
    }
    // A byte-order mark is invisible: refused by name, before it is read as the start of a
    // statement ("found `\u{feff}PLAN`" showed an empty-looking word).
    if src.starts_with(BOM) {
        return Err(vec![Diagnostic::new(
            src,
            index.get_or_init(|| LineIndex::new(src)),
            Rule::Syntax,
            0..BOM.len_utf8(),
            "the document starts with a UTF-8 byte-order mark (U+FEFF): save it without one",
            "byte-order mark",
        )]);
    }
    let depth = std::cell::Cell::new(0u32);
    let base: &str = src;
    let mut errors: Vec<Diagnostic> = Vec::new();
    // The statement being read (its clauses or panes follow), and how many were read.
    let mut cur: Option<Statement> = None;
    let mut count = 0usize;
    // A clause list given back, emptied, for the next plan.
    let mut spare: Vec<Clause> = Vec::new();
    let mut pending: Vec<Trivia> = Vec::new();
    let mut open = Open::None;

    let push_trivia = |pending: &mut Vec<Trivia>, t: Trivia| {
        if t == Trivia::Blank && pending.last() == Some(&Trivia::Blank) {
            return;
        }
        pending.push(t);
    };

    let err = |errors: &mut Vec<Diagnostic>, e: PErr| {
        errors.push(Diagnostic::new(
            src,
            index.get_or_init(|| LineIndex::new(src)),
            e.rule,
            e.start..e.end,
            e.msg,
            e.label,
        ));
    };

    for line in lines(src) {
        if errors.len() >= MAX_STATEMENTS {
            // The document is refused anyway; the report (and the work) stays bounded.
            break;
        }
        let text = line.text;
        let Some(lead) = indent_len(text) else {
            // A blank line; before the first statement it is dropped.
            if !(count == 0 && pending.is_empty()) {
                push_trivia(&mut pending, Trivia::Blank);
            }
            continue;
        };
        if text.as_bytes()[lead] == b'#' {
            push_trivia(&mut pending, Trivia::Comment(text.to_string()));
            continue;
        }
        let indent = &text[..lead];
        let (code, trailing) = split_comment(text, line.hash);
        depth.set(0);
        let mut input = In {
            input: &code[indent.len()..],
            state: Doc {
                text: base,
                depth: &depth,
            },
        };
        // `text` is a slice of `src`, so pointer arithmetic recovers absolute offsets.
        debug_assert_eq!(pos(&input), line.start + indent.len());

        if let Some(tab) = indent.bytes().position(|b| b == b'\t') {
            err(
                &mut errors,
                PErr {
                    start: line.start + tab,
                    end: line.start + tab + 1,
                    rule: Rule::Syntax,
                    msg: "tab indentation: indent clauses with two spaces, not a tab".into(),
                    label: "indent with two spaces".into(),
                },
            );
            continue;
        }
        if indent.is_empty() {
            // A statement head.
            let start = line.start;
            if count >= MAX_STATEMENTS {
                // Past the limit nothing more is read (rule `limit`): the work stays bounded.
                err(
                    &mut errors,
                    PErr {
                        start,
                        end: start + next_token(input.input).len(),
                        rule: Rule::Limit,
                        msg: format!(
                            "more than {MAX_STATEMENTS} statements: a document holds at most {MAX_STATEMENTS} (PLAN, VIEW, WAKE, ...); split it, or keep the book smaller"
                        ),
                        label: "one statement too many".into(),
                    },
                );
                break;
            }
            match head(&mut input) {
                Ok((kind, body)) => {
                    open = match body {
                        Body::Clauses => Open::Plan,
                        Body::Panes => Open::View,
                        Body::GradeClauses => Open::Grade,
                        Body::Flat => Open::Flat(kind.keyword()),
                    };
                    let mut st = Statement {
                        leading: std::mem::take(&mut pending),
                        kind,
                        trailing,
                        span: Span::new(start, line.start + code.len()),
                    };
                    count += 1;
                    if let Some(done) = cur.take()
                        && errors.is_empty()
                    {
                        recycle(each(done), &mut spare);
                    }
                    if let StatementKind::Plan(p) = &mut st.kind
                        && p.clauses.capacity() == 0
                    {
                        p.clauses = std::mem::take(&mut spare);
                    }
                    cur = Some(st);
                }
                Err(e) => {
                    open = match broken_head_body(&code[indent.len()..]) {
                        Some(b) => Open::BrokenBody(b),
                        None => Open::Broken,
                    };
                    pending.clear();
                    err(&mut errors, into_perr(e, &input));
                }
            }
            continue;
        }
        if indent.len() != 2 {
            let what = if matches!(open, Open::None) {
                "a statement starts in column 1".to_string()
            } else {
                format!(
                    "expected an indentation of two spaces, found {}",
                    indent.len()
                )
            };
            err(
                &mut errors,
                PErr {
                    start: line.start,
                    end: line.start + indent.len(),
                    rule: Rule::Syntax,
                    msg: format!("{what}: clauses are indented exactly two spaces"),
                    label: "indent with two spaces".into(),
                },
            );
            continue;
        }
        let start = line.start + 2;
        let span = Span::new(start, line.start + code.len());
        match (&open, cur.as_mut()) {
            (
                Open::Plan,
                Some(Statement {
                    kind: StatementKind::Plan(p),
                    ..
                }),
            ) => match clause().parse(&mut input) {
                Ok(kind) => p.clauses.push(Clause {
                    leading: std::mem::take(&mut pending),
                    kind,
                    trailing,
                    span,
                }),
                Err(e) => err(&mut errors, into_perr(e, &input)),
            },
            (
                Open::View,
                Some(Statement {
                    kind: StatementKind::View(v) | StatementKind::ShowView(v),
                    ..
                }),
            ) => match pane().parse(&mut input) {
                Ok(pane) => v.panes.push(PaneLine {
                    leading: std::mem::take(&mut pending),
                    pane,
                    trailing,
                    span,
                }),
                Err(e) => err(&mut errors, into_perr(e, &input)),
            },
            (
                Open::Grade,
                Some(Statement {
                    kind: StatementKind::Grade(g),
                    ..
                }),
            ) => match grade_clause().parse(&mut input) {
                Ok(kind) => g.clauses.push(GradeClause {
                    leading: std::mem::take(&mut pending),
                    kind,
                    trailing,
                    span,
                }),
                Err(e) => err(&mut errors, into_perr(e, &input)),
            },
            (Open::Broken, _) => {}
            (Open::BrokenBody(b), _) => {
                // Read for its errors only: the statement above was refused.
                let res = match b {
                    Body::Clauses => clause().parse(&mut input).map(drop),
                    Body::Panes => pane().parse(&mut input).map(drop),
                    Body::GradeClauses => grade_clause().parse(&mut input).map(drop),
                    Body::Flat => Ok(()),
                };
                pending.clear();
                if let Err(e) = res {
                    err(&mut errors, into_perr(e, &input));
                }
            }
            (Open::Flat(kw), _) => {
                let kw = *kw;
                err(
                    &mut errors,
                    PErr {
                        start,
                        end: start + next_token(input.input).len(),
                        rule: Rule::Syntax,
                        msg: format!(
                            "{kw} takes no indented lines: only PLAN (clauses), VIEW / SHOW VIEW (panes) and GRADE (VS / BY) have bodies"
                        ),
                        label: "unexpected indented line".into(),
                    },
                );
            }
            _ => {
                err(
                    &mut errors,
                    PErr {
                        start,
                        end: start + next_token(input.input).len(),
                        rule: Rule::Syntax,
                        msg: "an indented line must belong to a statement above it: start with a statement such as `PLAN <name> budget <n>R ttl <time>` in column 1".into(),
                        label: "no statement above".into(),
                    },
                );
            }
        }
    }
    if let Some(done) = cur
        && errors.is_empty()
    {
        recycle(each(done), &mut spare);
    }
    // Trailing blank lines are not kept.
    while pending.last() == Some(&Trivia::Blank) {
        pending.pop();
    }
    if errors.is_empty() {
        Ok(pending)
    } else {
        Err(errors)
    }
}

/// Keep the clause list of a statement given back (emptied) as the next plan's, when it
/// is the larger.
fn recycle(back: Option<Statement>, spare: &mut Vec<Clause>) {
    if let Some(Statement {
        kind: StatementKind::Plan(mut p),
        ..
    }) = back
    {
        Bin::with(|bin| harvest_plan(&mut p, bin));
        if p.clauses.capacity() > spare.capacity() {
            p.clauses.clear();
            *spare = std::mem::take(&mut p.clauses);
        }
    }
}

fn into_perr(e: ErrMode<Box<PErr>>, i: &In<'_>) -> PErr {
    match e {
        ErrMode::Backtrack(p) | ErrMode::Cut(p) => {
            let mut p = *p;
            if p.msg.is_empty() {
                let f = found(i);
                p.msg = format!("unexpected {f}");
                p.label = "unexpected".into();
            }
            p
        }
        ErrMode::Incomplete(_) => PErr::at(i),
    }
}

// ---------------------------------------------------------------- the document's grammar

/// Write the grammar of a whole document (or turn) into `d`: the line layer above, as
/// rules, over the statement table and the pieces the parser runs.
pub(crate) fn describe_document(d: &mut Describer) {
    let turn = d.opts.scope == GrammarScope::Turn;
    d.rule("start", |d| {
        let module = d.rule("module", |d| {
            let trivia = trivia(d);
            let statement = d.rule("statement", |d| {
                let blocks = statements()
                    .iter()
                    .filter(|s| !s.directive)
                    .map(|s| block(d, s))
                    .collect();
                g::alt(blocks)
            });
            // Trivia lines (blank, comment-only) come in runs of at most K: leading (1..=K
            // lines, also the whole of a pass), between two code lines (0..=K), trailing
            // (0..=K). A block carries no trailing trivia of its own, so a run is never
            // split between a block and the module (which would double the bound).
            let k = d.opts.trivia_lines_max;
            let nl_trivia = g::seq(vec![g::lit("\n"), trivia.clone()]);
            let lead = g::seq(vec![trivia, upto(nl_trivia.clone(), k, 1)]);
            let code = g::seq(vec![
                statement.clone(),
                g::star(g::seq(vec![gap(d), statement])),
            ]);
            g::alt(vec![
                lead.clone(),
                g::seq(vec![
                    g::opt(g::seq(vec![lead, g::lit("\n")])),
                    code,
                    upto(nl_trivia, k, 0),
                ]),
            ])
        });
        if !turn {
            return module;
        }
        // A turn is a module, or one directive with trivia around it (TURNS.md §1).
        let directive_turn = d.rule("directive_turn", |d| {
            let trivia = trivia(d);
            let directive = d.rule("directive", |d| {
                let blocks = statements()
                    .iter()
                    .filter(|s| s.directive)
                    .map(|s| block(d, s))
                    .collect();
                g::alt(blocks)
            });
            let k = d.opts.trivia_lines_max;
            g::seq(vec![
                upto(g::seq(vec![trivia.clone(), g::lit("\n")]), k, 0),
                directive,
                upto(g::seq(vec![g::lit("\n"), trivia]), k, 0),
            ])
        });
        g::alt(vec![module, directive_turn])
    });
}

/// `t` repeated up to `k - less` times (`k`: the trivia-line bound; `None`: unbounded).
fn upto(t: Term, k: Option<u32>, less: u32) -> Term {
    match k {
        Some(k) => g::rep(t, 0, k.max(1).saturating_sub(less)),
        None => g::star(t),
    }
}

/// What lies between two code lines: a line break, then up to K trivia lines each
/// followed by its line break.
fn gap(d: &mut Describer) -> Term {
    let trivia = trivia(d);
    let k = d.opts.trivia_lines_max;
    g::seq(vec![
        upto(g::seq(vec![g::lit("\n"), trivia]), k, 0),
        g::lit("\n"),
    ])
}

/// A statement's lines: its head line, then (for PLAN, VIEW, SHOW VIEW, GRADE) its indented
/// body lines with trivia among them.
fn block(d: &mut Describer, s: &'static StatementSyntax) -> Term {
    let head = d.rule(s.rule, |d| s.head.describe(d));
    let end = line_end(d);
    let (name, line): (&'static str, &'static str) = match (s.body, s.rule) {
        (Body::Flat, _) => return g::seq(vec![head, end]),
        (Body::Clauses, _) => ("plan_block", "clause_line"),
        (Body::Panes, "show_view") => ("show_view_block", "pane_line"),
        (Body::Panes, _) => ("view_block", "pane_line"),
        (Body::GradeClauses, _) => ("grade_block", "grade_clause_line"),
    };
    d.rule(name, |d| {
        let body = d.rule(line, |d| {
            let piece = match s.body {
                Body::Clauses => clause().describe(d),
                Body::Panes => pane().describe(d),
                _ => grade_clause().describe(d),
            };
            let indent = d.rule("indent", |_| g::lit("  "));
            let end = line_end(d);
            g::seq(vec![indent, piece, end])
        });
        let gap = gap(d);
        g::seq(vec![head, end, g::star(g::seq(vec![gap, body]))])
    })
}

/// Blank lines and comment lines (kept as trivia by the line layer).
fn trivia(d: &mut Describer) -> Term {
    d.rule("trivia", |d| {
        let n = d.run();
        let blanks = || g::rep(g::class(&[(' ', ' '), ('\t', '\t')]), 0, n);
        let blank = d.rule("blank", |_| g::seq(vec![blanks(), g::opt(g::lit("\r"))]));
        let comment = comment(d);
        let comment_line = d.rule("comment_line", |_| {
            g::seq(vec![blanks(), comment, g::opt(g::lit("\r"))])
        });
        g::alt(vec![blank, comment_line])
    })
}

/// `#` and the rest of the line (`split_comment`), bounded for the grammar.
fn comment(d: &mut Describer) -> Term {
    let max = d.opts.free_text_max;
    d.rule("comment", |_| {
        g::seq(vec![
            g::lit("#"),
            Term::Text(CharClass::not(&[('\n', '\n')]), max),
        ])
    })
}

/// The end of a code line: trailing blanks, an optional trailing comment, a CR. The gap
/// before a trailing comment is often aligned to a column, so it shares the free-text bound.
fn line_end(d: &mut Describer) -> Term {
    let max = d.opts.free_text_max.max(1);
    d.rule("line_end", |d| {
        let comment = comment(d);
        g::seq(vec![
            g::rep(g::class(&[(' ', ' '), ('\t', '\t')]), 0, max),
            g::opt(comment),
            g::opt(g::lit("\r")),
        ])
    })
}

#[cfg(test)]
mod table_tests {
    use super::*;

    /// The keyword tables' words are told apart by case-folded text (a lookup takes the
    /// first word equal to the text's ignoring case: it must be the only one), and each is
    /// made of its table's word characters (a lookup takes a table word that the text
    /// starts with and that ends where the text's word ends for the word it is).
    #[test]
    fn keyword_table_words_are_distinct_ignoring_case() {
        fn words<T>(t: &[(&'static str, T)]) -> Vec<&'static str> {
            t.iter().map(|(w, _)| *w).collect()
        }
        let tables = [
            (words(AnchorKind::ALL), WordChars::Price),
            (words(SIMPLE_SERIES), WordChars::Series),
            (words(MIN_CALL), WordChars::Price),
            (words(MAX_CALL), WordChars::Price),
            (vec![STUB, LEAN], WordChars::Price),
            (vec![VELOCITY], WordChars::Series),
        ];
        let mut seen = 0;
        for (t, chars) in &tables {
            for (a, x) in t.iter().enumerate() {
                assert_eq!(chars.word(x), *x, "{x} is one word");
                for y in &t[a + 1..] {
                    assert!(!x.eq_ignore_ascii_case(y), "{x} and {y}");
                }
                seen += 1;
            }
        }
        assert!(seen > 20, "{seen} words");
    }

    /// The line scan finds what a search for `\n`, then for `#` in the line, finds: over
    /// texts drawn from bytes that matter to it (newlines, `#`, `\r`, bytes next to them in
    /// value, a multi-byte character) at every length up to 39 (across the search's word and
    /// vector widths) and at every start.
    #[test]
    fn the_line_scan_is_the_two_searches() {
        let bytes: &[&str] = &[
            "\n", "#", "\r", "a", " ", "\u{1}", "\u{22}", "\u{24}", "é", "\u{b}",
        ];
        let mut draw = crate::lang::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut checked = 0;
        for len in 0..40 {
            for _ in 0..200 {
                let text: String = (0..len)
                    .map(|_| bytes[(draw() % bytes.len() as u64) as usize])
                    .collect();
                for start in (0..=text.len()).filter(|&k| text.is_char_boundary(k)) {
                    let rest = &text[start..];
                    let n = rest.find('\n').unwrap_or(rest.len());
                    assert_eq!(
                        line_len(rest.as_bytes()),
                        (n, rest[..n].find('#')),
                        "{rest:?}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 50_000, "{checked}");
    }

    /// The line layer's byte reads are the character trims they replace: a line's
    /// indentation and blank test (`trim_start_matches` / `trim_matches` of spaces and tabs)
    /// and its trailing blanks (`trim_end_matches`), over lines of spaces, tabs, `#`, a
    /// letter, a carriage return and multi-byte characters, at every length up to 11.
    #[test]
    fn the_line_layer_bytes_are_the_char_trims() {
        let chars: &[&str] = &[
            " ", "\t", "#", "a", "\r", "é", "\u{a0}", "\u{2003}", "\u{3000}",
        ];
        let mut draw = crate::lang::xorshift(0x2545_f491_4f6c_dd1d);
        let mut checked = 0;
        for len in 0..12 {
            for _ in 0..2_000 {
                let text: String = (0..len)
                    .map(|_| chars[(draw() % chars.len() as u64) as usize])
                    .collect();
                let start = text.trim_start_matches([' ', '\t']);
                let blank = text.trim_matches([' ', '\t']).is_empty();
                assert_eq!(
                    indent_len(&text),
                    (!blank).then(|| text.len() - start.len()),
                    "{text:?}"
                );
                assert_eq!(
                    trim_end_blanks(&text),
                    text.trim_end_matches([' ', '\t']),
                    "{text:?}"
                );
                checked += 1;
            }
        }
        assert!(checked >= 24_000, "{checked}");
    }

    /// Statements given back fill the lexeme pool (bounded), their strings are reused with
    /// the same text as fresh ones, and the pool is empty once `check_print` is done.
    #[test]
    fn the_lexeme_pool_is_reused_and_emptied() {
        let plan = "PLAN p{n} budget 0.3R ttl 14:45\n  WHEN spot crosses below 5000.25 AND velocity(1m) >= p90\n  DO buy 2 +1 C @ lean(bid, fair, 0.4) esc fair 2m\n  RELOAD WHEN spot < 4999.5 buy 1 -2 P @ min(fair-3c, mid)\n";
        let doc: String = (0..50)
            .map(|n| plan.replace("{n}", &format!("-{n}")))
            .collect();
        let mut filled = 0;
        let mut spare = Vec::new();
        let tail = parse_statements(&doc, &mut |st| {
            let back = Some(st);
            recycle(back, &mut spare);
            filled = filled.max(POOL.with(|p| p.borrow().len()));
            None
        });
        assert!(tail.is_ok());
        assert!(filled > 10 && filled <= POOL_MAX, "{filled} in the pool");
        assert!(
            BOXES.with(|b| b.borrow().len()) > 0,
            "operand boxes given back"
        );
        clear_pool();
        assert_eq!(
            crate::lang::check_print(&doc, crate::lang::Mode::File),
            Ok(doc.clone())
        );
        assert_eq!(POOL.with(|p| p.borrow().len()), 0);
        assert_eq!(BOXES.with(|b| b.borrow().len()), 0);
        let fresh = crate::lang::parse(&doc).map(|d| crate::lang::print(&d));
        assert_eq!(fresh, Ok(doc));
    }
}

#[cfg(test)]
mod sign_tests {
    use super::{SignAt, sign_context};

    /// A duration just before a sign is the grammar's `dur` (digits, then `s`, `m` or `h`):
    /// after one the sign is neither a price's nor a trigger's; after another word that ends
    /// in letters the last keyword still decides.
    #[test]
    fn a_duration_is_the_grammars_and_nothing_else() {
        assert_eq!(sign_context("  WHEN spot > hod held 30s "), SignAt::Other);
        assert_eq!(
            sign_context("  DO buy 1 +1 C @ fair esc ask 2m "),
            SignAt::Other
        );
        assert_eq!(sign_context("  WHEN spot > 5150pts "), SignAt::Trigger);
        assert_eq!(sign_context("  WHEN velocity(1m) > p90 "), SignAt::Trigger);
        assert_eq!(sign_context("  DO buy 1 +1 C @ fair "), SignAt::Price);
        assert_eq!(sign_context("PLAN x budget 0.2R ttl +30m "), SignAt::Other);
    }
}

#[cfg(test)]
mod lexeme_tests {
    //! Each lexeme is the one place where a lexer and its grammar term are two pieces of
    //! code. Here every lexer is run against its own term, on many small random texts: the
    //! lexer reads a whole text exactly when the term matches it.
    use super::*;
    use crate::lang::grammar::GrammarOptions;

    /// Every end position at which `t` can finish matching `s` from `at`.
    fn ends(t: &Term, rules: &[g::Rule], s: &[char], at: usize, out: &mut Vec<usize>) {
        match t {
            Term::Lit(l) => {
                let l: Vec<char> = l.chars().collect();
                if s[at..].starts_with(&l) {
                    out.push(at + l.len());
                }
            }
            Term::LitCi(l) => {
                let l: Vec<char> = l.chars().collect();
                if s.len() >= at + l.len()
                    && s[at..at + l.len()]
                        .iter()
                        .zip(&l)
                        .all(|(a, b)| a.eq_ignore_ascii_case(b))
                {
                    out.push(at + l.len());
                }
            }
            Term::Class(c) => {
                if s.get(at).is_some_and(|&ch| c.matches(ch)) {
                    out.push(at + 1);
                }
            }
            Term::Text(c, max) => {
                let mut k = at;
                out.push(k);
                while k < s.len() && k - at < *max as usize && c.matches(s[k]) {
                    k += 1;
                    out.push(k);
                }
            }
            Term::Ref(n) => {
                let r = rules.iter().find(|r| &r.name == n).expect("rule");
                ends(&r.body, rules, s, at, out);
            }
            Term::Seq(v) => {
                let mut cur = vec![at];
                for x in v {
                    let mut next = Vec::new();
                    for &p in &cur {
                        ends(x, rules, s, p, &mut next);
                    }
                    next.sort_unstable();
                    next.dedup();
                    cur = next;
                }
                out.extend(cur);
            }
            Term::Alt(v) => v.iter().for_each(|x| ends(x, rules, s, at, out)),
            Term::Rep(x, min, max) => {
                let mut cur = vec![at];
                let mut n = 0;
                if *min == 0 {
                    out.push(at);
                }
                while !cur.is_empty() && max.is_none_or(|m| n < m) {
                    let mut next = Vec::new();
                    for &p in &cur {
                        ends(x, rules, s, p, &mut next);
                    }
                    next.retain(|&e| !cur.contains(&e) || e > at);
                    next.sort_unstable();
                    next.dedup();
                    n += 1;
                    if n >= *min {
                        out.extend(&next);
                    }
                    if next == cur {
                        break;
                    }
                    cur = next;
                }
            }
        }
    }

    fn term_accepts<O>(lx: &'static Lexeme<O>, text: &str) -> bool {
        let mut d = Describer::new(GrammarOptions::default());
        let t = lx.what("x").describe(&mut d);
        let rules = d.into_rules();
        let s: Vec<char> = text.chars().collect();
        let mut out = Vec::new();
        ends(&t, &rules, &s, 0, &mut out);
        out.contains(&s.len())
    }

    fn lexer_reads<O>(lx: &'static Lexeme<O>, text: &str) -> bool {
        let depth = std::cell::Cell::new(0);
        let mut i = In {
            input: text,
            state: Doc {
                text,
                depth: &depth,
            },
        };
        // The parser asks `looks` before it lexes wherever a lexeme is a choice.
        (lx.looks)(text) && (lx.lex)(&mut i, "x").is_ok() && i.input.is_empty()
    }

    fn check<O>(name: &str, lx: &'static Lexeme<O>, alphabet: &str, samples: &[&str]) {
        let alphabet: Vec<char> = alphabet.chars().collect();
        let mut next = crate::lang::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut texts: Vec<String> = samples.iter().map(|s| s.to_string()).collect();
        for _ in 0..4000 {
            let len = (next() % 12) as usize;
            // Half the texts grow from a valid sample, so both verdicts are exercised.
            let mut t = if next().is_multiple_of(2) && !samples.is_empty() {
                samples[(next() % samples.len() as u64) as usize].to_string()
            } else {
                String::new()
            };
            for _ in 0..len.saturating_sub(t.len() / 2) {
                let c = alphabet[(next() % alphabet.len() as u64) as usize];
                if next().is_multiple_of(3) && !t.is_empty() {
                    let at = (next() as usize) % t.chars().count();
                    let at = t.char_indices().nth(at).map(|(k, _)| k).unwrap_or(0);
                    t.insert(at, c);
                } else {
                    t.push(c);
                }
            }
            texts.push(t);
        }
        let mut both = 0;
        for t in &texts {
            let (l, g) = (lexer_reads(lx, t), term_accepts(lx, t));
            assert_eq!(l, g, "{name}: lexer {l}, term {g} on {t:?}");
            both += l as usize;
        }
        assert!(both > 20, "{name}: too few accepted texts ({both})");
    }

    #[test]
    fn every_lexer_agrees_with_its_term() {
        check("name", &NAME, "az09-_A.", &["fade-ladder", "a1", "x"]);
        check("number", &NUMBER, "0159.-x", &["12", "-3.5", "0.25"]);
        check("number raw", &NUMBER_RAW, "0159.-", &["12", "-3.5"]);
        check("unsigned", &UNSIGNED, "0159.-a", &["12", "3.5"]);
        check("minutes", &MINUTES, "0159.-", &["30", "5"]);
        check("risk", &RISK, "0159.-Rr", &["0.25R", "1R", "-2R"]);
        check("dur", &DUR, "0159smhd.", &["30s", "5m", "2h"]);
        check("clock", &CLOCK, "0129345:", &["09:45", "23:59", "14:30"]);
        check("sym", &SYM, "ASPX09.s", &["SPX", "C2.E", "SPY"]);
        check(
            "sym.spot",
            &SYM_SPOT,
            "ASPX09.spotSPOT",
            &["SPX.spot", "Q.SPOT", "A1.B.spot"],
        );
        check(
            "expiry",
            &EXPIRY,
            "0123dte-9",
            &["0dte", "2025-02-28", "2026-12-31"],
        );
        check("key", &KEY, "az09_.-A", &["intraday", "regime.intraday"]);
        check("fill", &FILL, "az09.-A_", &["strict-cross-v1"]);
        check("percentile", &PERCENTILE, "p0159.-", &["p95", "p99.9"]);
        check("offset", &OFFSET, "+-0159.c%x", &["-3c", "+0.05", "+10%"]);
        check(
            "reason",
            &REASON,
            " \tab(@,\u{a0}x",
            &["", " no setup", "\tchop"],
        );
        // No `#`: the line layer has cut a line's comment off before any lexer runs.
        check(
            "path",
            &PATH,
            "a/.*( )@,\t{}-\u{a0}\u{b}",
            &["lib/base.kestrel", "(x)/y"],
        );
        check(
            "over",
            &OVER,
            "2025-01.x*/(\u{a0}",
            &["2025-01", "2025-01..2025-03", "tapes/*", "2025-01x"],
        );
    }
}
