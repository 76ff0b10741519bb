//! The parser: a line layer (indentation, comments, blank lines) over winnow parsers for each
//! line's code. Syntax errors are recovered line by line so `check` can report every broken
//! line, but any error refuses the whole document (fail closed).

use super::ast::*;
use super::diag::{Diagnostic, LineIndex, RESERVED_WORDS, Rule};
use super::lexicon::{DIRECTIVE_KEYWORDS, STATEMENT_KEYWORDS};
use winnow::error::{ErrMode, ParserError};
use winnow::stream::{Stateful, Stream};
use winnow::token::take_while;
use winnow::{ModalResult, Parser};

/// The whole document rides along as parser state; spans are computed from slice addresses
/// (every line slice is a subslice of it).
pub(crate) type In<'a> = Stateful<&'a str, &'a str>;
type R<T> = ModalResult<T, PErr>;

/// A syntax error inside a line: absolute byte range, rule, message and caret label.
#[derive(Debug, Clone)]
pub(crate) struct PErr {
    pub start: usize,
    pub end: usize,
    pub rule: Rule,
    pub msg: String,
    pub label: String,
}

impl<'a> ParserError<In<'a>> for PErr {
    type Inner = Self;

    fn from_input(input: &In<'a>) -> Self {
        let p = pos(input);
        PErr {
            start: p,
            end: p + next_token(input.input).len(),
            rule: Rule::Syntax,
            msg: String::new(),
            label: String::new(),
        }
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

fn pos(i: &In<'_>) -> usize {
    i.input.as_ptr() as usize - i.state.as_ptr() as usize
}

/// The document text between `start` and the current position.
fn consumed_since<'a>(i: &In<'a>, start: usize) -> &'a str {
    i.state.get(start..pos(i)).unwrap_or("")
}

/// The next token as a person would name it in "found `x`".
fn next_token(s: &str) -> &str {
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

fn found(i: &In<'_>) -> String {
    let t = next_token(i.input);
    if t.is_empty() {
        "end of line".to_string()
    } else {
        format!("`{t}`")
    }
}

/// A cut error at the current position covering the next token.
fn fail<T>(i: &In<'_>, msg: impl Into<String>, label: impl Into<String>) -> R<T> {
    let rest = i.input.trim_start_matches(' ');
    let start = pos(i) + (i.input.len() - rest.len());
    let tok = next_token(rest);
    Err(ErrMode::Cut(PErr {
        start,
        end: start + tok.len().max(if rest.is_empty() { 0 } else { 1 }),
        rule: Rule::Syntax,
        msg: msg.into(),
        label: label.into(),
    }))
}

fn fail_rule<T>(i: &In<'_>, rule: Rule, msg: impl Into<String>, label: &str) -> R<T> {
    match fail::<T>(i, msg, label) {
        Err(ErrMode::Cut(mut e)) => {
            e.rule = rule;
            Err(ErrMode::Cut(e))
        }
        other => other,
    }
}

fn expected<T>(i: &In<'_>, what: &str) -> R<T> {
    let f = found(i);
    fail(
        i,
        format!("expected {what}, found {f}"),
        format!("expected {what}"),
    )
}

// ---------------------------------------------------------------- lexical helpers

/// One or more spaces. A tab between tokens is refused.
fn sp(i: &mut In<'_>) -> R<()> {
    let n = i.input.len() - i.input.trim_start_matches(' ').len();
    if i.input[n..].starts_with('\t') {
        let _ = i.next_slice(n);
        return fail(
            i,
            "a tab separates tokens here: separate tokens with single spaces",
            "tab",
        );
    }
    if n == 0 {
        return Err(ErrMode::Backtrack(PErr::from_input(i)));
    }
    let _ = i.next_slice(n);
    Ok(())
}

fn sp0(i: &mut In<'_>) {
    let n = i.input.len() - i.input.trim_start_matches(' ').len();
    let _ = i.next_slice(n);
}

/// Does a word end where `rest` starts (end, or a char that cannot continue a word)?
fn ends_word(rest: &str) -> bool {
    rest.chars()
        .next()
        .is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '/')))
}

/// Does the input start with keyword `kw` as a whole word?
fn at_kw(i: &In<'_>, kw: &str) -> bool {
    i.input.starts_with(kw) && ends_word(&i.input[kw.len()..])
}

/// After spaces, is the next word `kw`? (Does not consume.)
fn peek_sp_kw(i: &In<'_>, kw: &str) -> bool {
    let rest = i.input.trim_start_matches(' ');
    rest.len() < i.input.len() && rest.starts_with(kw) && ends_word(&rest[kw.len()..])
}

/// Consume keyword `kw` (case-sensitive, whole word) or fail with `expected`.
fn kw(i: &mut In<'_>, kw: &str, what: &str) -> R<()> {
    if at_kw(i, kw) {
        let _ = i.next_slice(kw.len());
        Ok(())
    } else {
        expected(i, what)
    }
}

/// Spaces then keyword.
fn sp_kw(i: &mut In<'_>, k: &str, what: &str) -> R<()> {
    if sp(i).is_err() {
        return expected(i, what);
    }
    kw(i, k, what)
}

fn word<'a>(i: &mut In<'a>) -> &'a str {
    let r: R<&str> = take_while(0.., |c: char| {
        c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'
    })
    .parse_next(i);
    r.unwrap_or("")
}

/// The longest prefix of the input whose chars satisfy `f` (not consumed).
fn peek_word<'a>(i: &In<'a>, f: impl Fn(char) -> bool) -> &'a str {
    let s = i.input;
    let end = s
        .char_indices()
        .find(|&(_, c)| !f(c))
        .map(|(n, _)| n)
        .unwrap_or(s.len());
    &s[..end]
}

fn span_from(start: usize, i: &In<'_>) -> Span {
    Span::new(start, pos(i))
}

fn is_reserved(w: &str) -> bool {
    RESERVED_WORDS.iter().any(|r| r.eq_ignore_ascii_case(w))
}

fn reserved_err<T>(i: &In<'_>, w: &str) -> R<T> {
    fail_rule(
        i,
        Rule::ReservedWord,
        format!("`{w}` is a reserved word, kept for a future version of Kestrel: remove it"),
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
    if let Some(c) = i.input.chars().next()
        && (c.is_ascii_alphanumeric() || c == '_')
    {
        let _ = text;
        let _ = word(i);
        let bad = consumed_since(i, start);
        return Err(ErrMode::Cut(PErr {
            start,
            end: pos(i),
            rule: Rule::Syntax,
            msg: format!(
                "a name is kebab-case, `[a-z][a-z0-9-]*`: `{bad}` has `{c}` (write it in lower case with `-` between words)"
            ),
            label: "not a kebab-case name".into(),
        }));
    }
    Ok(Name {
        text: text.to_string(),
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
            text: t.to_string(),
            span: span_from(start, i),
        }),
        None => expected(i, what),
    }
}

/// A number that must end the token (not followed by a letter or digit run).
fn number_tok(i: &mut In<'_>, what: &str) -> R<Num> {
    let n = number(i, what)?;
    if let Some(c) = i.input.chars().next()
        && (c.is_ascii_alphanumeric() || c == '.')
    {
        return expected(i, &format!("a space after the number `{}`", n.text));
    }
    Ok(n)
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
        text: digits.to_string(),
        span: span_from(start, i),
    })
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
    let b = i.input.as_bytes();
    if !b.first().is_some_and(u8::is_ascii_uppercase) {
        return expected(i, what);
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
        break;
    }
    let t = i.next_slice(n);
    Ok(Sym {
        text: t.to_string(),
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
        let m: u8 = s[5..7].parse().unwrap_or(0);
        let d: u8 = s[8..10].parse().unwrap_or(0);
        if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
            return fail(
                i,
                format!("`{}` is not a date: write `YYYY-MM-DD`", &s[..10]),
                "bad date",
            );
        }
        let t = i.next_slice(10);
        return Ok(Expiry::Date(t.to_string()));
    }
    expected(i, what)
}

fn eol(i: &mut In<'_>, after: &str) -> R<()> {
    sp0(i);
    if i.input.is_empty() {
        return Ok(());
    }
    let t = next_token(i.input);
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

// ---------------------------------------------------------------- prices

const ANCHOR_LIST: &str = "fair, intrinsic, basis, bid, ask, mid, last, join, improve";

fn anchor_kind(w: &str) -> Option<AnchorKind> {
    AnchorKind::ALL
        .iter()
        .find(|(s, _)| s.eq_ignore_ascii_case(w))
        .map(|(_, k)| *k)
}

fn is_series_word(w: &str) -> bool {
    SIMPLE_SERIES.iter().any(|(s, _)| s.eq_ignore_ascii_case(w))
        || w.eq_ignore_ascii_case("velocity")
        || w.ends_with(".spot")
}

pub(crate) fn price(i: &mut In<'_>) -> R<Price> {
    let start = pos(i);
    let b = i.input.as_bytes();
    if b.first().is_some_and(|c| c.is_ascii_digit()) {
        let value = number_tok(i, "a price")?;
        return Ok(Price::Number { value });
    }
    if b.first() == Some(&b'-') {
        return fail(
            i,
            "a price cannot be negative: write an anchor with an offset, like `fair-3c`",
            "negative price",
        );
    }
    let w = peek_word(i, |c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    let lw = w.to_ascii_lowercase();
    if (lw == "lean" || lw == "min" || lw == "max") && i.input[w.len()..].starts_with('(') {
        let _ = i.next_slice(w.len() + 1);
        sp0(i);
        let a = price(i)?;
        comma(i, &format!("`,` between the two prices of {lw}(...)"))?;
        let b2 = price(i)?;
        if lw == "lean" {
            comma(i, "`,` before the weight of lean(a, b, w)")?;
            let wt = number(i, "a weight in [0, 1] as the third argument of lean")?;
            close_paren(i, "`)` after lean(a, b, w)")?;
            return Ok(Price::Lean {
                a: Box::new(a),
                b: Box::new(b2),
                w: wt,
                span: span_from(start, i),
            });
        }
        close_paren(i, &format!("`)` to close {lw}(...)"))?;
        let span = span_from(start, i);
        return Ok(if lw == "min" {
            Price::Min {
                a: Box::new(a),
                b: Box::new(b2),
                span,
            }
        } else {
            Price::Max {
                a: Box::new(a),
                b: Box::new(b2),
                span,
            }
        });
    }
    if lw == "stub" {
        let t = i.next_slice(w.len());
        return Ok(Price::Stub {
            text: t.to_string(),
            span: span_from(start, i),
        });
    }
    if let Some(kind) = anchor_kind(&lw) {
        let t = i.next_slice(w.len());
        let anchor = Anchor {
            kind,
            text: t.to_string(),
            span: span_from(start, i),
        };
        let offset = if i.input.starts_with('+') || i.input.starts_with('-') {
            let negative = i.input.starts_with('-');
            let _ = i.next_slice(1);
            let astart = pos(i);
            let Some(lex) = number_lexeme(i).filter(|l| !l.starts_with('-')) else {
                return fail(
                    i,
                    format!(
                        "expected an offset amount after `{t}{}`: like `{t}-3c`, `{t}+0.05` or `{t}+10%`",
                        if negative { '-' } else { '+' }
                    ),
                    "expected an amount",
                );
            };
            let amount = Num {
                text: lex.to_string(),
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
            Some(Offset {
                negative,
                amount,
                unit,
            })
        } else {
            None
        };
        if i.input
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '.')
        {
            return expected(i, "a space or the end of the price");
        }
        return Ok(Price::Anchor { anchor, offset });
    }
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

fn comma(i: &mut In<'_>, what: &str) -> R<()> {
    sp0(i);
    if i.input.starts_with(',') {
        let _ = i.next_slice(1);
        sp0(i);
        Ok(())
    } else {
        expected(i, what)
    }
}

fn close_paren(i: &mut In<'_>, what: &str) -> R<()> {
    sp0(i);
    if i.input.starts_with(')') {
        let _ = i.next_slice(1);
        Ok(())
    } else {
        expected(i, what)
    }
}

// ---------------------------------------------------------------- triggers

pub(crate) fn trigger(i: &mut In<'_>) -> R<Trigger> {
    joined(i, "OR", and_term, |terms| Trigger::Or { terms })
}

fn and_term(i: &mut In<'_>) -> R<Trigger> {
    joined(i, "AND", unary, |terms| Trigger::And { terms })
}

/// `term (<kw> term)*`; a single term stands alone, several are joined by `mk`.
fn joined(
    i: &mut In<'_>,
    op: &str,
    term: fn(&mut In<'_>) -> R<Trigger>,
    mk: fn(Vec<Trigger>) -> Trigger,
) -> R<Trigger> {
    let mut terms = vec![term(i)?];
    while peek_sp_kw(i, op) {
        sp(i)?;
        kw(i, op, op)?;
        if sp(i).is_err() {
            return expected(i, &format!("a predicate after {op}"));
        }
        terms.push(term(i)?);
    }
    Ok(match terms.len() {
        1 => terms.pop().unwrap_or_else(|| mk(Vec::new())),
        _ => mk(terms),
    })
}

fn unary(i: &mut In<'_>) -> R<Trigger> {
    if at_kw(i, "NOT") {
        let _ = i.next_slice(3);
        if sp(i).is_err() {
            return expected(i, "a predicate after NOT");
        }
        let inner = unary(i)?;
        return Ok(Trigger::Not {
            inner: Box::new(inner),
        });
    }
    if i.input.starts_with('(') {
        let _ = i.next_slice(1);
        sp0(i);
        let inner = trigger(i)?;
        close_paren(i, "`)` to close the group, or AND / OR")?;
        return Ok(Trigger::Group {
            inner: Box::new(inner),
        });
    }
    let p = predicate(i)?;
    Ok(Trigger::Pred { pred: p })
}

fn predicate(i: &mut In<'_>) -> R<Predicate> {
    let start = pos(i);
    // T-<minutes>
    if i.input.starts_with("T-") {
        let _ = i.next_slice(2);
        let minutes = number_tok(i, "minutes before the close after `T-`, like `T-30`")?;
        if minutes.text.starts_with('-') || minutes.text.contains('.') {
            return fail(i, "T-n takes whole minutes, like `T-30`", "whole minutes");
        }
        return Ok(Predicate::TMinus {
            minutes,
            span: span_from(start, i),
        });
    }
    if at_kw(i, "phase") {
        let _ = i.next_slice(5);
        if sp(i).is_err() {
            return expected(i, "`open` or `close` after `phase`");
        }
        let phase = if at_kw(i, "open") {
            let _ = i.next_slice(4);
            Phase::Open
        } else if at_kw(i, "close") {
            let _ = i.next_slice(5);
            Phase::Close
        } else {
            return expected(i, "`open` or `close` after `phase`");
        };
        return Ok(Predicate::Phase {
            phase,
            span: span_from(start, i),
        });
    }
    if i.input.starts_with("plan(") {
        let _ = i.next_slice(5);
        let plan = name(i, "a plan name inside plan(...)")?;
        if !i.input.starts_with(").") {
            return expected(i, "`).fired` or `).filled` after plan(<name>")?;
        }
        let _ = i.next_slice(2);
        let event = if at_kw(i, "fired") {
            let _ = i.next_slice(5);
            Event::PlanFired { plan }
        } else if at_kw(i, "filled") {
            let _ = i.next_slice(6);
            Event::PlanFilled { plan }
        } else {
            return expected(i, "`fired` or `filled` after `plan(<name>).`");
        };
        let within = within(i)?;
        return Ok(Predicate::Event {
            event,
            within,
            span: span_from(start, i),
        });
    }
    if at_kw(i, "headline") {
        let _ = i.next_slice(8);
        let within = within(i)?;
        return Ok(Predicate::Event {
            event: Event::Headline,
            within,
            span: span_from(start, i),
        });
    }
    let series = series(i)?;
    if sp(i).is_err() {
        return expected(
            i,
            &format!(
                "`crosses above|below` or a comparison (>, <, >=, <=) after `{}`",
                series.text
            ),
        );
    }
    if at_kw(i, "crosses") {
        let _ = i.next_slice(7);
        if sp(i).is_err() {
            return expected(i, "`above` or `below` after `crosses`");
        }
        let dir = if at_kw(i, "above") {
            let _ = i.next_slice(5);
            CrossDir::Above
        } else if at_kw(i, "below") {
            let _ = i.next_slice(5);
            CrossDir::Below
        } else {
            return expected(i, "`above` or `below` after `crosses`");
        };
        if sp(i).is_err() {
            return expected(
                i,
                "a value to cross (a number, a clock time, a series or pN)",
            );
        }
        let value = value(i)?;
        let held = held(i)?;
        return Ok(Predicate::Cross {
            series,
            dir,
            value,
            held,
            span: span_from(start, i),
        });
    }
    let op = if i.input.starts_with(">=") {
        let _ = i.next_slice(2);
        CmpOp::Ge
    } else if i.input.starts_with("<=") {
        let _ = i.next_slice(2);
        CmpOp::Le
    } else if i.input.starts_with('>') {
        let _ = i.next_slice(1);
        CmpOp::Gt
    } else if i.input.starts_with('<') {
        let _ = i.next_slice(1);
        CmpOp::Lt
    } else if i.input.starts_with('=') || i.input.starts_with("!=") {
        return fail(
            i,
            "Kestrel compares with >, <, >= or <= (prices are never exactly equal): use a comparison or `crosses above|below`",
            "no equality",
        );
    } else {
        return expected(
            i,
            &format!(
                "`crosses above|below` or a comparison (>, <, >=, <=) after `{}`",
                series.text
            ),
        );
    };
    if sp(i).is_err() {
        return expected(i, "a space then a value after the comparison");
    }
    let value = value(i)?;
    let held = held(i)?;
    Ok(Predicate::Compare {
        series,
        op,
        value,
        held,
        span: span_from(start, i),
    })
}

fn within(i: &mut In<'_>) -> R<Option<Dur>> {
    if peek_sp_kw(i, "within") {
        sp(i)?;
        let _ = i.next_slice(6);
        if sp(i).is_err() {
            return expected(i, "a duration after `within`");
        }
        return Ok(Some(dur(i, "a duration after `within`")?));
    }
    if peek_sp_kw(i, "held") {
        sp(i)?;
        return fail(
            i,
            "an event is an instant and cannot be held: use `within <dur>` to ask whether it happened recently",
            "use within",
        );
    }
    Ok(None)
}

fn held(i: &mut In<'_>) -> R<Option<Dur>> {
    if peek_sp_kw(i, "held") {
        sp(i)?;
        let _ = i.next_slice(4);
        if sp(i).is_err() {
            return expected(i, "a duration after `held`, like `held 60s`");
        }
        return Ok(Some(dur(i, "a duration after `held`")?));
    }
    Ok(None)
}

const SERIES_LIST: &str = "spot, hod, lod, vwap, open, prior-close, velocity(<dur>), pnl, time, fills.avg_px, <SYM>.spot, mark, mid, bid, ask";

fn series(i: &mut In<'_>) -> R<Series> {
    let start = pos(i);
    // <SYM>.spot
    if i.input.starts_with(|c: char| c.is_ascii_uppercase()) {
        let mut j = *i;
        if let Ok(s) = sym(&mut j, "a symbol")
            && j.input
                .get(..5)
                .is_some_and(|x| x.eq_ignore_ascii_case(".spot"))
            && ends_word(&j.input[5..])
        {
            let _ = j.next_slice(5);
            *i = j;
            let text = consumed_since(i, start).to_string();
            return Ok(Series {
                kind: SeriesKind::SymSpot { sym: s },
                text,
                span: span_from(start, i),
            });
        }
    }
    let w = peek_word(i, |c| {
        c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'
    });
    if w.eq_ignore_ascii_case("velocity") {
        let t = i.next_slice(w.len());
        if !i.input.starts_with('(') {
            return expected(i, "`(<window>)` after velocity, like `velocity(1m)`");
        }
        let _ = i.next_slice(1);
        let window = dur(i, "the window of velocity(...)")?;
        if !i.input.starts_with(')') {
            return expected(i, "`)` after the velocity window");
        }
        let _ = i.next_slice(1);
        return Ok(Series {
            kind: SeriesKind::Velocity { window },
            text: t.to_string(),
            span: span_from(start, i),
        });
    }
    if let Some((_, mk)) = SIMPLE_SERIES
        .iter()
        .find(|(s, _)| s.eq_ignore_ascii_case(w))
    {
        let t = i.next_slice(w.len());
        return Ok(Series {
            kind: mk(),
            text: t.to_string(),
            span: span_from(start, i),
        });
    }
    if is_reserved(w) {
        return reserved_err(i, w);
    }
    let f = found(i);
    let hint = match w {
        "WHEN" | "DO" => format!(" ({w} belongs on its own line, indented two spaces)"),
        _ if anchor_kind(w).is_some() => String::new(),
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

fn value(i: &mut In<'_>) -> R<Value> {
    if let Some(clock) = try_clock(i)? {
        return Ok(Value::Clock { clock });
    }
    let b = i.input.as_bytes();
    if b.first().is_some_and(|c| c.is_ascii_digit() || *c == b'-') {
        let value = number_tok(i, "a number")?;
        return Ok(Value::Number { value });
    }
    if b.first() == Some(&b'p') && b.get(1).is_some_and(u8::is_ascii_digit) {
        let _ = i.next_slice(1);
        let pct = number_tok(i, "a percentile like p95")?;
        return Ok(Value::Percentile { pct });
    }
    let series = series(i)?;
    Ok(Value::Series { series })
}

// ---------------------------------------------------------------- tickets

fn ticket(i: &mut In<'_>) -> R<Ticket> {
    let start = pos(i);
    let side = if at_kw(i, "buy") {
        let _ = i.next_slice(3);
        Side::Buy
    } else if at_kw(i, "sell") {
        let _ = i.next_slice(4);
        Side::Sell
    } else {
        let f = found(i);
        let w = next_token(i.input);
        let hint = if w.eq_ignore_ascii_case("buy") || w.eq_ignore_ascii_case("sell") {
            format!(": write `{}` in lower case", w.to_ascii_lowercase())
        } else {
            ": a ticket is `buy|sell <qty> <strike> C|P @ <price>` or `buy|sell <qty> shares @ <price>`".to_string()
        };
        return fail(
            i,
            format!("expected `buy` or `sell`, found {f}{hint}"),
            "expected buy or sell",
        );
    };
    if sp(i).is_err() {
        return expected(i, "a quantity after the side");
    }
    let qty = number_tok(i, "a quantity (a positive integer) after the side")?;
    if sp(i).is_err() {
        return expected(
            i,
            "an instrument after the quantity: `<strike> C|P` or `shares`",
        );
    }
    let instrument = if at_kw(i, "shares") {
        let _ = i.next_slice(6);
        Instrument::Shares
    } else {
        let strike = if at_kw(i, "ATM") {
            let _ = i.next_slice(3);
            Strike::Atm
        } else if i.input.starts_with('+') || i.input.starts_with('-') {
            let sstart = pos(i);
            let neg = i.input.starts_with('-');
            let _ = i.next_slice(1);
            let n = number_tok(i, "a strike offset like `+1` or `-2`")?;
            if n.text.starts_with('-') {
                return expected(i, "a strike offset like `+1` or `-2`");
            }
            Strike::Relative(Num {
                text: format!("{}{}", if neg { '-' } else { '+' }, n.text),
                span: span_from(sstart, i),
            })
        } else if i.input.starts_with(|c: char| c.is_ascii_digit()) {
            Strike::Absolute(number_tok(i, "a strike")?)
        } else {
            let f = found(i);
            return fail(
                i,
                format!(
                    "expected an instrument, found {f}: write a strike then C or P (`ATM C`, `+1 C`, `-2 P`, `5200 C`) or `shares`"
                ),
                "expected an instrument",
            );
        };
        if sp(i).is_err() {
            return expected(i, "`C` or `P` after the strike");
        }
        let right = if at_kw(i, "C") {
            let _ = i.next_slice(1);
            Right::C
        } else if at_kw(i, "P") {
            let _ = i.next_slice(1);
            Right::P
        } else {
            return expected(i, "`C` or `P` after the strike");
        };
        Instrument::Option { strike, right }
    };
    if sp(i).is_err() || !i.input.starts_with('@') {
        let f = found(i);
        return fail(
            i,
            format!(
                "expected `@` and a price after the instrument, found {f}: write e.g. `buy 1 +1 C @ fair`"
            ),
            "missing `@`",
        );
    }
    let _ = i.next_slice(1);
    if sp(i).is_err() {
        return expected(i, "a space then a price after `@`");
    }
    let price = price(i)?;
    let modifiers = modifiers(i)?;
    Ok(Ticket {
        side,
        qty,
        instrument,
        price,
        modifiers,
        span: span_from(start, i),
    })
}

const MODIFIER_LIST: &str =
    "peg, fix, esc <price> <dur>, cap <price>, floor <price>, cancel-if <trigger>";

fn modifiers(i: &mut In<'_>) -> R<Vec<Modifier>> {
    let mut out = Vec::new();
    loop {
        let mut j = *i;
        if sp(&mut j).is_err() {
            return Ok(out);
        }
        let w = next_token(j.input);
        let m = match w {
            "peg" => {
                let _ = j.next_slice(3);
                Modifier::Peg
            }
            "fix" => {
                let _ = j.next_slice(3);
                Modifier::Fix
            }
            "esc" => {
                let _ = j.next_slice(3);
                if sp(&mut j).is_err() {
                    return expected(&j, "a price after `esc`");
                }
                let price = price(&mut j)?;
                if sp(&mut j).is_err() {
                    return expected(&j, "a duration after the esc price, like `esc fair 2m`");
                }
                let after = dur(&mut j, "how long to wait before re-pricing")?;
                Modifier::Esc { price, after }
            }
            "cap" | "floor" => {
                let _ = j.next_slice(w.len());
                if sp(&mut j).is_err() {
                    return expected(&j, &format!("a price after `{w}`"));
                }
                let price = price(&mut j)?;
                if w == "cap" {
                    Modifier::Cap { price }
                } else {
                    Modifier::Floor { price }
                }
            }
            "cancel-if" => {
                let _ = j.next_slice(9);
                if sp(&mut j).is_err() {
                    return expected(&j, "a trigger after `cancel-if`");
                }
                let when = trigger(&mut j)?;
                out.push(Modifier::CancelIf { when });
                *i = j;
                // cancel-if ends the line.
                return Ok(out);
            }
            w if is_reserved(w) => return reserved_err(&j, w),
            _ => return Ok(out),
        };
        out.push(m);
        *i = j;
    }
}

// ---------------------------------------------------------------- statements

pub(crate) fn using_body(i: &mut In<'_>) -> R<Using> {
    kw(
        i,
        "signal",
        "`signal <SYM>` after USING: `USING signal SPX exec SPY 0dte`",
    )?;
    if sp(i).is_err() {
        return expected(i, "a symbol after `signal`");
    }
    let signal = sym(i, "a symbol after `signal` (upper case, like `SPX`)")?;
    sp_kw(i, "exec", "`exec <SYM>` after the signal symbol")?;
    if sp(i).is_err() {
        return expected(i, "a symbol after `exec`");
    }
    let exec = sym(i, "a symbol after `exec` (upper case, like `SPY`)")?;
    let mut j = *i;
    let expiry = if sp(&mut j).is_ok() && j.input.starts_with(|c: char| c.is_ascii_digit()) {
        let e = expiry(&mut j, "an expiry: `0dte`, `1dte` or `YYYY-MM-DD`")?;
        *i = j;
        Some(e)
    } else {
        None
    };
    Ok(Using {
        signal,
        exec,
        expiry,
    })
}

fn view_head(i: &mut In<'_>) -> R<View> {
    let name = name(i, "a view name")?;
    let budget = if peek_sp_kw(i, "budget") {
        sp(i)?;
        let _ = i.next_slice(6);
        if sp(i).is_err() {
            return expected(i, "a token count after `budget`");
        }
        Some(number_tok(
            i,
            "a token budget (cl100k tokens), like `budget 900`",
        )?)
    } else {
        None
    };
    Ok(View {
        name,
        budget,
        panes: Vec::new(),
    })
}

fn pane(i: &mut In<'_>) -> R<Pane> {
    let w = next_token(i.input);
    let opt_last = |i: &mut In<'_>| -> R<Option<Num>> {
        if peek_sp_kw(i, "last") {
            sp(i)?;
            let _ = i.next_slice(4);
            if sp(i).is_err() {
                return expected(i, "a count after `last`");
            }
            Ok(Some(number_tok(i, "a count after `last`")?))
        } else {
            Ok(None)
        }
    };
    let p = match w {
        "tape" => {
            let _ = i.next_slice(4);
            let mut j = *i;
            if sp(&mut j).is_ok() && j.input.starts_with(|c: char| c.is_ascii_digit()) {
                let bar = dur(&mut j, "a bar size like `5m`")?;
                *i = j;
                Pane::Tape { bar: Some(bar) }
            } else {
                Pane::Tape { bar: None }
            }
        }
        "levels" => {
            let _ = i.next_slice(6);
            Pane::Levels
        }
        "chain" => {
            let _ = i.next_slice(5);
            if sp(i).is_err() {
                return expected(i, "an expiry after `chain`: `0dte`, `1dte` or `YYYY-MM-DD`");
            }
            let expiry = expiry(i, "an expiry after `chain`: `0dte`, `1dte` or `YYYY-MM-DD`")?;
            let strikes = if peek_sp_kw(i, "strikes") {
                sp(i)?;
                let _ = i.next_slice(7);
                if sp(i).is_err() {
                    return expected(i, "a count after `strikes`");
                }
                Some(number_tok(i, "how many strikes around ATM")?)
            } else {
                None
            };
            Pane::Chain { expiry, strikes }
        }
        "gex" => {
            let _ = i.next_slice(3);
            if sp(i).is_err() {
                return expected(i, "an expiry after `gex`: `0dte`, `1dte` or `YYYY-MM-DD`");
            }
            Pane::Gex {
                expiry: expiry(i, "an expiry after `gex`")?,
            }
        }
        "skew" => {
            let _ = i.next_slice(4);
            if sp(i).is_err() {
                return expected(i, "a delta after `skew`, like `skew 25d`");
            }
            let delta = number(i, "a delta after `skew`, like `skew 25d`")?;
            if !i.input.starts_with('d') {
                return expected(i, "`d` after the skew delta, like `skew 25d`");
            }
            let _ = i.next_slice(1);
            Pane::Skew { delta }
        }
        "velocity" => {
            let _ = i.next_slice(8);
            if sp(i).is_err() {
                return expected(i, "a window after `velocity`, like `velocity 1m`");
            }
            Pane::Velocity {
                window: dur(i, "a window after `velocity`")?,
            }
        }
        "kernel" => {
            let _ = i.next_slice(6);
            Pane::Kernel
        }
        "plans" => {
            let _ = i.next_slice(5);
            Pane::Plans
        }
        "blotter" => {
            let _ = i.next_slice(7);
            Pane::Blotter { last: opt_last(i)? }
        }
        "journal" => {
            let _ = i.next_slice(7);
            Pane::Journal { last: opt_last(i)? }
        }
        "headlines" => {
            let _ = i.next_slice(9);
            Pane::Headlines { last: opt_last(i)? }
        }
        _ => {
            let f = found(i);
            return fail(
                i,
                format!(
                    "unknown pane {f}: the pane catalog is tape [<bar>], levels, chain <expiry> [strikes <n>], gex <expiry>, skew <n>d, velocity <dur>, kernel, plans, blotter [last <n>], journal [last <n>], headlines [last <n>]"
                ),
                "unknown pane",
            );
        }
    };
    Ok(p)
}

fn wake_head(i: &mut In<'_>) -> R<Wake> {
    let wname = name(i, "a wake name")?;
    sp_kw(i, "WHEN", "`WHEN <trigger>` after the wake name")?;
    if sp(i).is_err() {
        return expected(i, "a trigger after WHEN");
    }
    let when = trigger(i)?;
    let mut deliver = None;
    let mut priority = None;
    let mut budget = None;
    if peek_sp_kw(i, "DELIVER") {
        sp(i)?;
        let _ = i.next_slice(7);
        if sp(i).is_err() {
            return expected(i, "a view name after DELIVER");
        }
        deliver = Some(name(i, "a view name after DELIVER")?);
    }
    if peek_sp_kw(i, "PRIORITY") {
        sp(i)?;
        let _ = i.next_slice(8);
        if sp(i).is_err() {
            return expected(i, "a number after PRIORITY");
        }
        priority = Some(number_tok(i, "a priority number")?);
    }
    if peek_sp_kw(i, "BUDGET") {
        sp(i)?;
        let _ = i.next_slice(6);
        if sp(i).is_err() {
            return expected(i, "a count after BUDGET, like `BUDGET 6 wakes/day`");
        }
        budget = Some(number_tok(i, "a count, like `BUDGET 6 wakes/day`")?);
        if sp(i).is_err() || !i.input.starts_with("wakes/day") {
            return expected(i, "`wakes/day` after the wake budget");
        }
        let _ = i.next_slice(9);
    }
    Ok(Wake {
        name: wname,
        when,
        deliver,
        priority,
        budget,
    })
}

fn plan_head(i: &mut In<'_>) -> R<Plan> {
    let name = name(i, "a plan name")?;
    sp_kw(
        i,
        "budget",
        "`budget <n>R` after the plan name: `PLAN <name> budget 0.2R ttl 15:00`",
    )?;
    if sp(i).is_err() {
        return expected(i, "a risk amount after `budget`, like `0.25R`");
    }
    let budget = risk(i, "a risk amount after `budget`, like `0.25R`")?;
    sp_kw(
        i,
        "ttl",
        "`ttl <HH:MM|+dur>` after the budget: `ttl 15:00` or `ttl +30m`",
    )?;
    if sp(i).is_err() {
        return expected(i, "a time after `ttl`: `15:00` or `+30m`");
    }
    let ttl = if i.input.starts_with('+') {
        let _ = i.next_slice(1);
        Ttl::After(dur(i, "a duration after `ttl +`")?)
    } else if let Some(c) = try_clock(i)? {
        Ttl::At(c)
    } else {
        return expected(
            i,
            "a time after `ttl`: a clock `HH:MM` or a relative `+30m`",
        );
    };
    let regime = if peek_sp_kw(i, "regime") {
        sp(i)?;
        let _ = i.next_slice(6);
        if sp(i).is_err() || !i.input.starts_with('{') {
            return expected(i, "`{<key>: <value>, ...}` after `regime`");
        }
        let _ = i.next_slice(1);
        sp0(i);
        let mut entries = Vec::new();
        loop {
            let key = regime_word(i, "a regime key like `intraday`")?;
            if !i.input.starts_with(':') {
                return expected(i, "`:` after the regime key");
            }
            let _ = i.next_slice(1);
            sp0(i);
            let value = regime_word(i, "a regime value like `trend`")?;
            entries.push(RegimeEntry { key, value });
            sp0(i);
            if i.input.starts_with(',') {
                let _ = i.next_slice(1);
                sp0(i);
                continue;
            }
            if i.input.starts_with('}') {
                let _ = i.next_slice(1);
                break;
            }
            return expected(i, "`,` or `}` in the regime map");
        }
        Some(entries)
    } else {
        None
    };
    let priority = if peek_sp_kw(i, "priority") {
        sp(i)?;
        let _ = i.next_slice(8);
        if sp(i).is_err() {
            return expected(i, "a number after `priority`");
        }
        Some(number_tok(i, "a priority number")?)
    } else {
        None
    };
    Ok(Plan {
        name,
        budget,
        ttl,
        regime,
        priority,
        clauses: Vec::new(),
    })
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

fn clause(i: &mut In<'_>) -> R<ClauseKind> {
    let w = next_token(i.input);
    let k = match w {
        "USING" => {
            let _ = i.next_slice(5);
            if sp(i).is_err() {
                return expected(i, "`signal <SYM> exec <SYM>` after USING");
            }
            ClauseKind::Using(using_body(i)?)
        }
        "WHEN" => {
            let _ = i.next_slice(4);
            if sp(i).is_err() {
                return expected(i, "a trigger after WHEN");
            }
            let t = trigger(i)?;
            eol(i, "the WHEN trigger")?;
            ClauseKind::When(t)
        }
        "DO" | "ALSO" => {
            let _ = i.next_slice(w.len());
            if sp(i).is_err() {
                return expected(
                    i,
                    &format!("a ticket after {w}, like `{w} buy 1 +1 C @ fair`"),
                );
            }
            let t = ticket(i)?;
            if w == "DO" {
                ClauseKind::Do(t)
            } else {
                ClauseKind::Also(t)
            }
        }
        "RELOAD" => {
            let _ = i.next_slice(6);
            sp_kw(i, "WHEN", "`WHEN <trigger> <ticket>` after RELOAD")?;
            if sp(i).is_err() {
                return expected(i, "a trigger after RELOAD WHEN");
            }
            let when = trigger(i)?;
            if sp(i).is_err() {
                return expected(
                    i,
                    "a ticket after the RELOAD trigger, like `buy 1 -2 P @ fair`",
                );
            }
            let ticket = ticket(i)?;
            ClauseKind::Reload { when, ticket }
        }
        "TP" => {
            let _ = i.next_slice(2);
            if sp(i).is_err() {
                return expected(i, "a multiple of cost after TP, like `TP 2x @ fair`");
            }
            let mult = number(i, "a multiple of cost after TP, like `TP 2x @ fair`")?;
            if !i.input.starts_with('x') {
                return expected(i, &format!("`x` after the multiple: `TP {}x`", mult.text));
            }
            let _ = i.next_slice(1);
            let frac = if peek_sp_kw(i, "frac") {
                sp(i)?;
                let _ = i.next_slice(4);
                if sp(i).is_err() {
                    return expected(i, "a fraction after `frac`, like `frac 0.5`");
                }
                Some(number_tok(i, "a fraction after `frac`, like `frac 0.5`")?)
            } else {
                None
            };
            if sp(i).is_err() || !i.input.starts_with('@') {
                let f = found(i);
                return fail(
                    i,
                    format!(
                        "expected `@` and a price after the TP multiple, found {f}: write e.g. `TP 2x frac 0.5 @ fair`"
                    ),
                    "missing `@`",
                );
            }
            let _ = i.next_slice(1);
            if sp(i).is_err() {
                return expected(i, "a price after `@`");
            }
            let price = price(i)?;
            let modifiers = modifiers(i)?;
            ClauseKind::Tp {
                mult,
                frac,
                price,
                modifiers,
            }
        }
        "EXIT" => {
            let _ = i.next_slice(4);
            if sp(i).is_err() {
                return expected(i, "a trigger after EXIT");
            }
            let when = trigger(i)?;
            let mut j = *i;
            if sp(&mut j).is_ok() && j.input.starts_with('@') {
                let _ = j.next_slice(1);
                if sp(&mut j).is_err() {
                    return expected(&j, "a price after `@`");
                }
                let price = price(&mut j)?;
                let modifiers = modifiers(&mut j)?;
                *i = j;
                ClauseKind::Exit {
                    when,
                    price: Some(price),
                    modifiers,
                }
            } else {
                ClauseKind::Exit {
                    when,
                    price: None,
                    modifiers: Vec::new(),
                }
            }
        }
        "INVALIDATE" => {
            let _ = i.next_slice(10);
            if sp(i).is_err() {
                return expected(i, "a trigger after INVALIDATE");
            }
            let when = trigger(i)?;
            let mut j = *i;
            let action = if sp(&mut j).is_ok() && j.input.starts_with("->") {
                let _ = j.next_slice(2);
                if sp(&mut j).is_err() || !at_kw(&j, "halt") && !j.input.starts_with("halt,") {
                    return expected(&j, "`halt` or `halt, ride` after `->`");
                }
                let _ = j.next_slice(4);
                let mut k = j;
                sp0(&mut k);
                let a = if k.input.starts_with(',') {
                    let _ = k.next_slice(1);
                    if sp(&mut k).is_err() || !at_kw(&k, "ride") {
                        return expected(&k, "`ride` after `halt,`");
                    }
                    let _ = k.next_slice(4);
                    j = k;
                    InvalidateAction::HaltRide
                } else {
                    InvalidateAction::Halt
                };
                *i = j;
                Some(a)
            } else {
                None
            };
            ClauseKind::Invalidate { when, action }
        }
        "CANCEL-IF" => {
            let _ = i.next_slice(9);
            if sp(i).is_err() {
                return expected(i, "a trigger after CANCEL-IF");
            }
            ClauseKind::CancelIf(trigger(i)?)
        }
        "ARM" => {
            let _ = i.next_slice(3);
            if sp(i).is_err() {
                return expected(i, "a plan name after ARM");
            }
            ClauseKind::Arm(name(i, "a plan name after ARM")?)
        }
        _ => {
            let f = found(i);
            let upper = w.to_ascii_uppercase();
            let hint = if CLAUSES.contains(&upper.as_str()) {
                format!(": clause keywords are upper case, write `{upper}`")
            } else if is_reserved(w) {
                return reserved_err(i, w);
            } else {
                String::new()
            };
            return fail(
                i,
                format!(
                    "expected a PLAN clause (USING, WHEN, DO, ALSO, RELOAD, TP, EXIT, INVALIDATE, CANCEL-IF, ARM), found {f}{hint}"
                ),
                "expected a clause",
            );
        }
    };
    eol(i, &format!("the {} clause", k.keyword()))?;
    Ok(k)
}

/// Clause keywords, from the shared lexicon (the grammars read the same table).
use super::lexicon::CLAUSE_KEYWORDS as CLAUSES;

const STATEMENTS: &str = "IMPORT, USING, VIEW, WAKE, PLAN, POD, BOOK, GRADE (and in a turn: STAND-DOWN, SHOW VIEW, CANCEL)";

fn grade_head(i: &mut In<'_>) -> R<Grade> {
    let subject = if at_kw(i, "plan") {
        GradeSubject::Plan
    } else if at_kw(i, "wake") {
        GradeSubject::Wake
    } else if at_kw(i, "view") {
        GradeSubject::View
    } else if at_kw(i, "pod") {
        GradeSubject::Pod
    } else {
        return expected(i, "what to grade: `plan`, `wake`, `view` or `pod`");
    };
    let n = next_token(i.input).len();
    let _ = i.next_slice(n);
    if sp(i).is_err() {
        return expected(i, "a name to grade");
    }
    let name = name(i, "a name to grade")?;
    sp_kw(i, "OVER", "`OVER <tapes>` after the graded name")?;
    if sp(i).is_err() {
        return expected(i, "a tape glob or `YYYY-MM[..YYYY-MM]` after OVER");
    }
    let tok = next_token(i.input);
    let is_month = |s: &str| {
        s.len() == 7
            && s.as_bytes()[..4].iter().all(u8::is_ascii_digit)
            && s.as_bytes()[4] == b'-'
            && s.as_bytes()[5..].iter().all(u8::is_ascii_digit)
    };
    let over =
        if is_month(tok.get(..7).unwrap_or("")) && (tok.len() == 7 || tok[7..].starts_with("..")) {
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
        } else if tok.is_empty() {
            return expected(i, "a tape glob after OVER");
        } else {
            GradeRange::Glob(tok.to_string())
        };
    let _ = i.next_slice(tok.len());
    sp_kw(
        i,
        "FILL",
        "`FILL <model>` after the range, like `FILL strict-cross-v1`",
    )?;
    if sp(i).is_err() {
        return expected(i, "a fill model name, like `strict-cross-v1`");
    }
    let fill: &str = take_while(1.., |c: char| {
        c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.'
    })
    .parse_next(i)
    .or_else(|_: ErrMode<PErr>| expected(i, "a fill model name, like `strict-cross-v1`"))?;
    Ok(Grade {
        subject,
        name,
        over,
        fill: fill.to_string(),
        clauses: Vec::new(),
    })
}

fn grade_clause(i: &mut In<'_>) -> R<GradeClauseKind> {
    let k = if at_kw(i, "VS") {
        let _ = i.next_slice(2);
        if sp(i).is_err() {
            return expected(i, "`null` or `ungated` after VS");
        }
        if at_kw(i, "null") {
            let _ = i.next_slice(4);
            GradeClauseKind::Vs(Counterfactual::Null)
        } else if at_kw(i, "ungated") {
            let _ = i.next_slice(7);
            GradeClauseKind::Vs(Counterfactual::Ungated)
        } else {
            return expected(i, "a counterfactual after VS: `null` or `ungated`");
        }
    } else if at_kw(i, "BY") {
        let _ = i.next_slice(2);
        if sp(i).is_err() {
            return expected(i, "a key after BY, like `regime.intraday` or `lineage`");
        }
        let k = regime_word(i, "a key after BY, like `regime.intraday` or `lineage`")?;
        GradeClauseKind::By(k)
    } else {
        return expected(i, "a GRADE clause: `VS null`, `VS ungated` or `BY <key>`");
    };
    eol(i, "the GRADE clause")?;
    Ok(k)
}

/// What a head line parsed into.
enum Head {
    Stmt(StatementKind),
}

fn head(i: &mut In<'_>) -> R<Head> {
    let w = next_token(i.input);
    let kind = match w {
        "IMPORT" => {
            let _ = i.next_slice(6);
            if sp(i).is_err() {
                return expected(i, "a name after IMPORT");
            }
            let name = name(i, "a plan name after IMPORT")?;
            sp_kw(i, "FROM", "`FROM <path>` after the imported name")?;
            if sp(i).is_err() {
                return expected(i, "a path after FROM");
            }
            let p = next_token(i.input);
            if p.is_empty() {
                return expected(i, "a path after FROM");
            }
            let path = i.next_slice(p.len()).to_string();
            StatementKind::Import(Import { name, path })
        }
        "USING" => {
            let _ = i.next_slice(5);
            if sp(i).is_err() {
                return expected(i, "`signal <SYM> exec <SYM>` after USING");
            }
            StatementKind::Using(using_body(i)?)
        }
        "VIEW" => {
            let _ = i.next_slice(4);
            if sp(i).is_err() {
                return expected(i, "a view name after VIEW");
            }
            StatementKind::View(view_head(i)?)
        }
        "SHOW" => {
            let _ = i.next_slice(4);
            sp_kw(i, "VIEW", "`VIEW <name>` after SHOW")?;
            if sp(i).is_err() {
                return expected(i, "a view name after SHOW VIEW");
            }
            StatementKind::ShowView(view_head(i)?)
        }
        "WAKE" => {
            let _ = i.next_slice(4);
            if sp(i).is_err() {
                return expected(i, "a wake name after WAKE");
            }
            StatementKind::Wake(wake_head(i)?)
        }
        "PLAN" => {
            let _ = i.next_slice(4);
            if sp(i).is_err() {
                return expected(i, "a plan name after PLAN");
            }
            StatementKind::Plan(plan_head(i)?)
        }
        "POD" => {
            let _ = i.next_slice(3);
            if sp(i).is_err() {
                return expected(i, "a pod name after POD");
            }
            let name = name(i, "a pod name")?;
            sp_kw(i, "RISK", "`RISK day-loss <n>R -> halt` after the pod name")?;
            sp_kw(i, "day-loss", "`day-loss <n>R` after RISK")?;
            if sp(i).is_err() {
                return expected(i, "a risk amount after `day-loss`, like `2R`");
            }
            let day_loss = risk(i, "a risk amount after `day-loss`, like `2R`")?;
            sp_kw(i, "->", "`-> halt` after the day-loss")?;
            sp_kw(i, "halt", "`halt` after `->`")?;
            StatementKind::Pod(Pod { name, day_loss })
        }
        "BOOK" => {
            let _ = i.next_slice(4);
            if sp(i).is_err() {
                return expected(i, "a book name after BOOK");
            }
            let name = name(i, "a book name")?;
            sp_kw(i, "budget", "`budget <n>R` after the book name")?;
            if sp(i).is_err() {
                return expected(i, "a risk amount after `budget`");
            }
            let budget = risk(i, "a risk amount after `budget`, like `1.5R`")?;
            sp_kw(
                i,
                "coverage",
                "`coverage <SYM>[, <SYM>...]` after the budget",
            )?;
            if sp(i).is_err() {
                return expected(i, "a symbol after `coverage`");
            }
            let mut coverage = vec![sym(i, "a symbol after `coverage`, like `SPY`")?];
            loop {
                let mut j = *i;
                sp0(&mut j);
                if j.input.starts_with(',') {
                    let _ = j.next_slice(1);
                    sp0(&mut j);
                    coverage.push(sym(&mut j, "a symbol after `,`")?);
                    *i = j;
                } else {
                    break;
                }
            }
            StatementKind::Book(Book {
                name,
                budget,
                coverage,
            })
        }
        "GRADE" => {
            let _ = i.next_slice(5);
            if sp(i).is_err() {
                return expected(i, "what to grade after GRADE");
            }
            StatementKind::Grade(grade_head(i)?)
        }
        "STAND-DOWN" => {
            let _ = i.next_slice(10);
            // The reason is the rest of the line (the line layer removed any comment).
            let reason = i.input.trim_matches(|c| c == ' ' || c == '\t').to_string();
            let n = i.input.len();
            let _ = i.next_slice(n);
            StatementKind::StandDown(StandDown { reason })
        }
        "CANCEL" => {
            let _ = i.next_slice(6);
            if sp(i).is_err() {
                return expected(i, "what to cancel: a plan or order name");
            }
            StatementKind::Cancel(Cancel {
                target: name(i, "a plan or order name to cancel")?,
            })
        }
        _ => {
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
            return fail(i, msg, "expected a statement");
        }
    };
    let what = match &kind {
        StatementKind::Plan(_) => "the PLAN line",
        StatementKind::Wake(_) => "the WAKE line",
        _ => "the statement",
    };
    // Collapsed PLAN: the first clause keyword on the head line gets its own message.
    sp0(i);
    let t = next_token(i.input);
    if matches!(kind, StatementKind::Plan(_)) && CLAUSES.contains(&t) {
        return fail(
            i,
            format!(
                "{t} belongs on its own line: end the PLAN line after its header and write each clause (WHEN, DO, ...) on its own line, indented two spaces"
            ),
            "put this on its own indented line",
        );
    }
    eol(i, what)?;
    Ok(Head::Stmt(kind))
}

// ---------------------------------------------------------------- the line layer

struct Line<'a> {
    /// Byte offset of the line start in the document.
    start: usize,
    /// The line without its terminator (and without a trailing `\r`).
    text: &'a str,
}

fn lines(src: &str) -> impl Iterator<Item = Line<'_>> {
    let mut start = 0;
    let total = src.len();
    std::iter::from_fn(move || {
        if start >= total {
            return None;
        }
        let rest = &src[start..];
        let (line, next) = match rest.find('\n') {
            Some(n) => (&rest[..n], start + n + 1),
            None => (rest, total),
        };
        let line = line.strip_suffix('\r').unwrap_or(line);
        let l = Line { start, text: line };
        start = next;
        Some(l)
    })
}

/// Split a line into (code, trailing comment). The first `#` starts the comment.
fn split_comment(text: &str) -> (&str, Option<TrailingComment>) {
    match text.find('#') {
        None => (text.trim_end_matches([' ', '\t']), None),
        Some(h) => {
            let code = &text[..h];
            let trimmed = code.trim_end_matches([' ', '\t']);
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
}

/// Parse a document. On any syntax error, every broken line is reported (one error per
/// line) and no document is returned.
pub fn parse_document(src: &str) -> Result<Document, Vec<Diagnostic>> {
    let index = LineIndex::new(src);
    let base: &str = src;
    let mut errors: Vec<Diagnostic> = Vec::new();
    let mut statements: Vec<Statement> = Vec::new();
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
            &index,
            e.rule,
            e.start..e.end,
            e.msg,
            e.label,
        ));
    };

    for line in lines(src) {
        let text = line.text;
        if text.trim_matches([' ', '\t']).is_empty() {
            // A blank line; before the first statement it is dropped.
            if !(statements.is_empty() && pending.is_empty()) {
                push_trivia(&mut pending, Trivia::Blank);
            }
            continue;
        }
        let trimmed = text.trim_start_matches([' ', '\t']);
        if trimmed.starts_with('#') {
            push_trivia(&mut pending, Trivia::Comment(text.to_string()));
            continue;
        }
        let indent = &text[..text.len() - trimmed.len()];
        let (code, trailing) = split_comment(text);
        let mut input = In {
            input: &code[indent.len()..],
            state: base,
        };
        // `text` is a slice of `src`, so pointer arithmetic recovers absolute offsets.
        debug_assert_eq!(pos(&input), line.start + indent.len());

        if indent.contains('\t') {
            let tab = indent.find('\t').unwrap_or(0);
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
            match head(&mut input) {
                Ok(Head::Stmt(kind)) => {
                    open = match &kind {
                        StatementKind::Plan(_) => Open::Plan,
                        StatementKind::View(_) | StatementKind::ShowView(_) => Open::View,
                        StatementKind::Grade(_) => Open::Grade,
                        k => Open::Flat(k.keyword()),
                    };
                    statements.push(Statement {
                        leading: std::mem::take(&mut pending),
                        kind,
                        trailing,
                        span: Span::new(start, line.start + code.len()),
                    });
                }
                Err(e) => {
                    open = Open::Broken;
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
        match (&open, statements.last_mut()) {
            (
                Open::Plan,
                Some(Statement {
                    kind: StatementKind::Plan(p),
                    ..
                }),
            ) => match clause(&mut input) {
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
            ) => {
                let r = pane(&mut input).and_then(|p| eol(&mut input, "the pane").map(|_| p));
                match r {
                    Ok(pane) => v.panes.push(PaneLine {
                        leading: std::mem::take(&mut pending),
                        pane,
                        trailing,
                        span,
                    }),
                    Err(e) => err(&mut errors, into_perr(e, &input)),
                }
            }
            (
                Open::Grade,
                Some(Statement {
                    kind: StatementKind::Grade(g),
                    ..
                }),
            ) => match grade_clause(&mut input) {
                Ok(kind) => g.clauses.push(GradeClause {
                    leading: std::mem::take(&mut pending),
                    kind,
                    trailing,
                    span,
                }),
                Err(e) => err(&mut errors, into_perr(e, &input)),
            },
            (Open::Broken, _) => {}
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
    // Trailing blank lines are not kept.
    while pending.last() == Some(&Trivia::Blank) {
        pending.pop();
    }
    if errors.is_empty() {
        Ok(Document {
            statements,
            tail: pending,
        })
    } else {
        Err(errors)
    }
}

fn into_perr(e: ErrMode<PErr>, i: &In<'_>) -> PErr {
    match e {
        ErrMode::Backtrack(mut p) | ErrMode::Cut(mut p) => {
            if p.msg.is_empty() {
                let f = found(i);
                p.msg = format!("unexpected {f}");
                p.label = "unexpected".into();
            }
            p
        }
        ErrMode::Incomplete(_) => PErr::from_input(i),
    }
}
