//! Rule `number-range`: every number in a document fits the field it is written in.
//!
//! The grammar reads numbers as digit strings of any length, and the model keeps them as
//! text; it is the engine that turns them into integers and prices, and a conversion from an
//! out-of-range text saturates (a 20-digit relative strike became `i32::MAX` strikes from
//! ATM: the furthest strike on the chain, and it filled). So the checker refuses, at the
//! number's span, any number that does not fit:
//!
//! - every number: at most 15 significant digits (an `f64` holds it exactly) and at most
//!   [`MAX_ABS`] in size (the range of the engine's fixed-point price);
//! - per field: [`BOUNDS`] (a quantity, a strike offset, a budget, `T-` minutes, a TP
//!   multiple), every duration at most [`MAX_DURATION_S`], a `<n>dte` at most [`MAX_DTE`].
//!
//! The check walks the typed model a statement at a time ([`statement`]; only when a scan of
//! the text finds a number that might not fit, [`may_refuse`]). Its reference is the walk
//! over the model's serialization (kept for the tests), the one place that lists every
//! number of every statement: a number object is `{"text", "span"}`, a duration
//! `{"amount", "unit", "text", "span"}`, an expiry `{"kind": "dte", "value"}`, and the bound
//! of a field is found by the key it sits under. `the_model_walk_is_the_tape_walk` holds the
//! two to the same refusals over every example with its numbers redrawn, so a field added
//! later (and used in an example) that the typed walk misses fails that test.

use super::ast::*;
#[cfg(test)]
use super::ranges_tape::{Ev, Tape};

/// The largest magnitude of any number (the engine's price range, `Px`).
pub const MAX_ABS: f64 = 1.0e11;
/// The most significant digits a number may have (exact in an `f64`).
pub const MAX_DIGITS: usize = 15;
/// The longest duration (held, within, esc, velocity, ttl, bars): one day.
pub const MAX_DURATION_S: u64 = 86_400;
/// The furthest expiry, `<n>dte`: ten years.
pub const MAX_DTE: u64 = 3_650;

/// Per-field bounds: (key the number sits under, largest magnitude, what it is).
pub const BOUNDS: &[(&str, f64, &str)] = &[
    ("qty", 1_000_000.0, "a quantity"),
    ("relative", 1_000.0, "a strike offset from ATM"),
    ("minutes", 1_440.0, "minutes before the close"),
    ("budget", 1_000_000.0, "a budget"),
    ("day_loss", 1_000_000.0, "a day-loss limit"),
    ("mult", 1_000.0, "a TP multiple"),
    ("strikes", 1_000.0, "a strike count"),
    ("last", 1_000_000.0, "a row count"),
    ("priority", 1_000_000.0, "a priority"),
];

/// One refusal: byte range, message, caret label.
pub(crate) type Refusal = (std::ops::Range<usize>, String, &'static str);

/// Every number of `doc` (parsed from `src`) that does not fit its field: the walk over
/// the model ([`statement`]) of each statement, when the scan [`may_refuse`] finds a
/// number that might not fit.
#[cfg(test)]
pub(crate) fn check(src: &str, doc: &Document) -> Vec<Refusal> {
    let mut out = Vec::new();
    if may_refuse(src) {
        for st in &doc.statements {
            statement(st, &mut out);
        }
    }
    out
}

/// The walk over the serialization (a tape of each statement's serde events), the
/// reference the walk over the model is held to: it reads every number a field added
/// later would hold.
#[cfg(test)]
fn walk_document(doc: &Document) -> Vec<Refusal> {
    let mut out = Vec::new();
    let mut tape = Tape::default();
    // The document serializes as `{"statements": [...], "tail": [...]}`: each element is
    // walked under its key, with no enclosing span (the document has none).
    for st in &doc.statements {
        if tape.fill(st).is_err() {
            return Vec::new();
        }
        walk(&tape, 0, "statements", 0..0, &mut out);
    }
    for t in &doc.tail {
        if tape.fill(t).is_err() {
            return Vec::new();
        }
        walk(&tape, 0, "tail", 0..0, &mut out);
    }
    out
}

/// Could any number of a document parsed from `src` be refused? Every number of the model
/// is a lexeme of its text (spans point into it), so a scan of the text's digit runs
/// decides it conservatively: a run passes when it has at most [`MAX_DIGITS`] digits, its
/// value is at most the smallest bound of any field (of [`BOUNDS`], [`MAX_DTE`],
/// [`MAX_ABS`]), and, followed by a duration unit, the duration is at most
/// [`MAX_DURATION_S`]. A text with a run that does not pass gets the full walk, which gives
/// the exact refusals (a `2000` that is a strike count, say, or a `1441m`). The bounds are
/// read from the same constants, so a tighter bound added to [`BOUNDS`] tightens the scan.
pub(crate) fn may_refuse(src: &str) -> bool {
    let smallest = BOUNDS
        .iter()
        .map(|b| b.1)
        .fold(MAX_ABS.min(MAX_DTE as f64), f64::min);
    let b = src.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
            i += 1;
        }
        let run = &src[start..i];
        let digits = run.bytes().filter(u8::is_ascii_digit).count();
        let Ok(x) = run.trim_end_matches('.').parse::<f64>() else {
            return true;
        };
        if digits > MAX_DIGITS || x > smallest {
            return true;
        }
        let per = match b.get(i) {
            Some(b'h') => 3600.0,
            Some(b'm') => 60.0,
            _ => 1.0,
        };
        if x * per > MAX_DURATION_S as f64 {
            return true;
        }
    }
    false
}

/// The range of a span object `{start, end}`.
#[cfg(test)]
fn span_range(t: &Tape, s: usize) -> Option<std::ops::Range<usize>> {
    let a = t.as_u64(t.get(s, "start")?)? as usize;
    let b = t.as_u64(t.get(s, "end")?)? as usize;
    Some(a..b)
}

/// A key's bit in the one-pass repeat check (equal keys, equal bits).
#[cfg(test)]
#[inline]
fn key_bit(k: &str) -> usize {
    let b = k.as_bytes();
    match b {
        [] => 0,
        [x, .., y] => b.len() * 7 + usize::from(*x) + usize::from(*y) * 3,
        [x] => 1 + usize::from(*x),
    }
}

/// Significant digits of a decimal text (leading zeros, sign and point not counted).
pub(crate) fn significant(text: &str) -> usize {
    text.bytes()
        .filter(u8::is_ascii_digit)
        .skip_while(|&b| b == b'0')
        .count()
        .max(1)
}

/// The value at `v` of the tape. `key`: the field this value sits under (for a strike, the
/// strike's kind); `at`: the nearest enclosing span (for values without one of their own).
/// An object is read as a map: a repeated key is one entry, at its first place, with its
/// last value.
#[cfg(test)]
fn walk(t: &Tape, v: usize, key: &str, at: std::ops::Range<usize>, out: &mut Vec<Refusal>) {
    match t.ev[v] {
        Ev::Arr { end } => {
            let mut j = v + 1;
            while j < end as usize {
                walk(t, j, key, at.clone(), out);
                j = t.skip(j);
            }
        }
        Ev::Obj { .. } => {
            let m = v;
            // One pass over the entries: the values the walk reads (a repeated key: its last
            // value), how many distinct keys there are, and whether any key repeats (keys
            // are told apart by a bit of their bytes first, compared only when bits meet).
            let (mut span, mut text, mut amount, mut unit, mut kind, mut value) =
                (None, None, None, None, None, None);
            let (mut len, mut repeats, mut seen) = (0usize, false, 0u64);
            for (n, (k, x)) in t.entries(m).enumerate() {
                let key = t.key(k);
                let bit = 1u64 << (key_bit(key) & 63);
                let first =
                    seen & bit == 0 || !t.entries(m).take(n).any(|(k0, _)| t.key(k0) == key);
                seen |= bit;
                len += usize::from(first);
                repeats |= !first;
                match key.as_bytes() {
                    b"span" => span = Some(x),
                    b"text" => text = Some(x),
                    b"amount" => amount = Some(x),
                    b"unit" => unit = Some(x),
                    b"kind" => kind = Some(x),
                    b"value" => value = Some(x),
                    _ => {}
                }
            }
            let here = span.and_then(|s| span_range(t, s)).unwrap_or(at);
            let text = text.and_then(|x| t.as_str(x));
            if let Some(text) = text
                && len == 2
                && span.is_some()
            {
                number(text, key, here, out);
                return;
            }
            if let (Some(amount), Some(unit), Some(text)) = (amount, unit, text) {
                let unit = t.as_str(unit);
                let per = match unit {
                    Some("h") => 3600,
                    Some("m") => 60,
                    _ => 1,
                };
                let secs = t.as_u64(amount).map(|a| a.saturating_mul(per));
                if significant(text) > MAX_DIGITS || secs.is_none_or(|s| s > MAX_DURATION_S) {
                    out.push((
                        here,
                        format!(
                            "the duration `{text}{}` is longer than a day ({MAX_DURATION_S}s): a session is one day; write e.g. `30m` or `2h`",
                            unit.unwrap_or("")
                        ),
                        "duration too long",
                    ));
                }
                return;
            }
            let kind = kind.and_then(|x| t.as_str(x));
            if kind == Some("dte")
                && let Some(d) = value.and_then(|x| t.as_u64(x))
                && d > MAX_DTE
            {
                out.push((
                    here.clone(),
                    format!("`{d}dte` is more than {MAX_DTE} days out: write a nearer expiry, like `0dte` or `5dte`"),
                    "expiry too far",
                ));
            }
            // A strike's number sits under `value`, beside its kind (`relative`/`absolute`).
            let kind = kind.unwrap_or("");
            for (i, (k, x)) in t.entries(m).enumerate() {
                let k = t.key(k);
                let x = if repeats {
                    if t.entries(m).take(i).any(|(k0, _)| t.key(k0) == k) {
                        continue;
                    }
                    t.get(m, k).unwrap_or(x)
                } else {
                    x
                };
                let sub = if k == "value" && !kind.is_empty() {
                    kind
                } else {
                    k
                };
                if matches!(t.ev[x], Ev::Arr { .. } | Ev::Obj { .. }) {
                    walk(t, x, sub, here.clone(), out);
                }
            }
        }
        _ => {}
    }
}

/// The bound of the field a number sits in ([`BOUNDS`]), found once: at compile time for
/// the walk over the model ([`field`] in a `const` block).
#[derive(Clone, Copy)]
struct Field {
    bound: Option<&'static (&'static str, f64, &'static str)>,
}

/// The [`Field`] of a key.
const fn field(key: &str) -> Field {
    let mut k = 0;
    while k < BOUNDS.len() {
        let (a, b) = (BOUNDS[k].0.as_bytes(), key.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return Field {
                    bound: Some(&BOUNDS[k]),
                };
            }
        }
        k += 1;
    }
    Field { bound: None }
}

/// The integer part of a plain decimal lexeme, `-?[0-9]+(\.[0-9]+)?` with at most 15
/// digits; `None` for anything else.
fn plain_int(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    let b = b.strip_prefix(b"-").unwrap_or(b);
    let (mut int, mut digits, mut point) = (0u64, 0usize, false);
    for (n, &c) in b.iter().enumerate() {
        match c {
            b'0'..=b'9' => {
                if !point {
                    int = int * 10 + u64::from(c - b'0');
                }
                digits += 1;
                if digits > MAX_DIGITS {
                    return None;
                }
            }
            b'.' if !point && n > 0 && n + 1 < b.len() => point = true,
            _ => return None,
        }
    }
    (digits > 0).then_some(int)
}

#[cfg(test)]
fn number(text: &str, key: &str, at: std::ops::Range<usize>, out: &mut Vec<Refusal>) {
    number_in(text, field(key), at, out);
}

/// A text of at most this many bytes fits any field without a bound, whatever its bytes: it
/// holds at most 11 digits, so neither more than [`MAX_DIGITS`] significant ones nor a
/// magnitude above [`MAX_ABS`] (a text that is not a decimal is never refused).
const SHORT_FITS: usize = 11;
const _: () = assert!(SHORT_FITS <= MAX_DIGITS && 10u64.pow(SHORT_FITS as u32) as f64 <= MAX_ABS);

fn number_in(text: &str, f: Field, at: std::ops::Range<usize>, out: &mut Vec<Refusal>) {
    // The fastest path: a short number in a field without a bound (a price, a value).
    if f.bound.is_none() && text.len() <= SHORT_FITS {
        return;
    }
    // The fast path: a plain decimal of at most 15 digits whose integer part is below the
    // field's bound and [`MAX_ABS`] (whole numbers) is below both itself, so it fits.
    let limit = f.bound.map_or(MAX_ABS, |b| b.1.min(MAX_ABS));
    if limit.fract() == 0.0
        && let Some(int) = plain_int(text)
        && (int as f64) < limit
    {
        return;
    }
    // Names and symbols share the `{text, span}` shape: only a decimal lexeme is a number
    // (`nan` or `inf` is a name here, never a float).
    let decimal = text.bytes().any(|b| b.is_ascii_digit())
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.'));
    if !decimal {
        return;
    }
    // A short lexeme (the common case) is read without the general float parser.
    let x = match decimal_value(text) {
        Some(x) => x,
        None => match text.parse::<f64>() {
            Ok(x) => x,
            Err(_) => return,
        },
    };
    if significant(text) > MAX_DIGITS || !x.is_finite() || x.abs() > MAX_ABS {
        out.push((
            at,
            format!(
                "the number `{text}` is out of range: a number has at most {MAX_DIGITS} significant digits and is at most {MAX_ABS:e} in size"
            ),
            "number out of range",
        ));
        return;
    }
    if let Some((_, max, what)) = f.bound
        && x.abs() > *max
    {
        out.push((
            at,
            format!("`{text}` is out of range for {what}: at most {max} in size"),
            "number out of range",
        ));
    }
}

// ---------------------------------------------------------------- the walk over the model

/// Every number of one statement that does not fit its field, in the order (and at the
/// spans) of the walk over the statement's serialization, which the tests hold it to: a
/// number object (`{text, span}`: a [`Num`], a [`Name`], a [`Sym`]) is read under the key
/// of the field it sits in (a strike's or a value's number under the kind beside it), a
/// duration at its own span, an expiry at the nearest enclosing span. Trivia and comments
/// hold no number object.
pub(crate) fn statement(st: &Statement, out: &mut Vec<Refusal>) {
    let here = rng(st.span);
    match &st.kind {
        StatementKind::Import(i) => lexeme(&i.name.text, i.name.span, const { field("name") }, out),
        StatementKind::Using(u) => using(u, &here, out),
        StatementKind::View(v) | StatementKind::ShowView(v) => {
            lexeme(&v.name.text, v.name.span, const { field("name") }, out);
            opt_num(&v.budget, const { field("budget") }, out);
            for p in &v.panes {
                pane(&p.pane, &rng(p.span), out);
            }
        }
        StatementKind::Wake(w) => {
            lexeme(&w.name.text, w.name.span, const { field("name") }, out);
            trigger(&w.when, out);
            if let Some(d) = &w.deliver {
                lexeme(&d.text, d.span, const { field("deliver") }, out);
            }
            opt_num(&w.priority, const { field("priority") }, out);
            opt_num(&w.budget, const { field("budget") }, out);
        }
        StatementKind::Plan(p) => {
            lexeme(&p.name.text, p.name.span, const { field("name") }, out);
            num(&p.budget, const { field("budget") }, out);
            if let Ttl::After(d) = &p.ttl {
                dur(d, out);
            }
            opt_num(&p.priority, const { field("priority") }, out);
            for c in &p.clauses {
                clause(&c.kind, &rng(c.span), out);
            }
        }
        StatementKind::Pod(p) => {
            lexeme(&p.name.text, p.name.span, const { field("name") }, out);
            num(&p.day_loss, const { field("day_loss") }, out);
        }
        StatementKind::Book(b) => {
            lexeme(&b.name.text, b.name.span, const { field("name") }, out);
            num(&b.budget, const { field("budget") }, out);
            for s in &b.coverage {
                lexeme(&s.text, s.span, const { field("coverage") }, out);
            }
        }
        StatementKind::Grade(g) => lexeme(&g.name.text, g.name.span, const { field("name") }, out),
        StatementKind::StandDown(_) => {}
        StatementKind::Cancel(c) => lexeme(
            &c.target.text,
            c.target.span,
            const { field("target") },
            out,
        ),
    }
}

fn rng(s: Span) -> std::ops::Range<usize> {
    s.start as usize..s.end as usize
}

fn lexeme(text: &str, at: Span, f: Field, out: &mut Vec<Refusal>) {
    number_in(text, f, rng(at), out);
}

fn num(n: &Num, f: Field, out: &mut Vec<Refusal>) {
    number_in(&n.text, f, rng(n.span), out);
}

fn opt_num(n: &Option<Num>, f: Field, out: &mut Vec<Refusal>) {
    if let Some(n) = n {
        num(n, f, out);
    }
}

fn dur(d: &Dur, out: &mut Vec<Refusal>) {
    // `seconds` saturates: an amount past `u64` seconds is refused like any long one.
    if significant(&d.text) > MAX_DIGITS || d.seconds() > MAX_DURATION_S {
        let unit = match d.unit {
            DurUnit::S => "s",
            DurUnit::M => "m",
            DurUnit::H => "h",
        };
        out.push((
            rng(d.span),
            format!(
                "the duration `{}{unit}` is longer than a day ({MAX_DURATION_S}s): a session is one day; write e.g. `30m` or `2h`",
                d.text
            ),
            "duration too long",
        ));
    }
}

fn expiry(e: Option<&Expiry>, here: &std::ops::Range<usize>, out: &mut Vec<Refusal>) {
    if let Some(Expiry::Dte(d)) = e
        && u64::from(*d) > MAX_DTE
    {
        out.push((
            here.clone(),
            format!("`{d}dte` is more than {MAX_DTE} days out: write a nearer expiry, like `0dte` or `5dte`"),
            "expiry too far",
        ));
    }
}

fn using(u: &Using, here: &std::ops::Range<usize>, out: &mut Vec<Refusal>) {
    lexeme(
        &u.signal.text,
        u.signal.span,
        const { field("signal") },
        out,
    );
    lexeme(&u.exec.text, u.exec.span, const { field("exec") }, out);
    expiry(u.expiry.as_ref(), here, out);
}

fn pane(p: &Pane, here: &std::ops::Range<usize>, out: &mut Vec<Refusal>) {
    match p {
        Pane::Tape { bar: Some(d) } | Pane::Velocity { window: d } => dur(d, out),
        Pane::Chain { expiry: e, strikes } => {
            expiry(Some(e), here, out);
            opt_num(strikes, const { field("strikes") }, out);
        }
        Pane::Gex { expiry: e } => expiry(Some(e), here, out),
        Pane::Skew { delta } => num(delta, const { field("delta") }, out),
        Pane::Blotter { last } | Pane::Journal { last } | Pane::Headlines { last } => {
            opt_num(last, const { field("last") }, out)
        }
        Pane::Tape { bar: None } | Pane::Levels | Pane::Kernel | Pane::Plans => {}
    }
}

fn clause(c: &ClauseKind, here: &std::ops::Range<usize>, out: &mut Vec<Refusal>) {
    match c {
        ClauseKind::Using(u) => using(u, here, out),
        ClauseKind::When(t) | ClauseKind::CancelIf(t) => trigger(t, out),
        ClauseKind::Do(t) | ClauseKind::Also(t) => ticket(t, out),
        ClauseKind::Reload { when, ticket: t } => {
            trigger(when, out);
            ticket(t, out);
        }
        ClauseKind::Tp {
            mult,
            frac,
            price: p,
            modifiers: m,
        } => {
            num(mult, const { field("mult") }, out);
            opt_num(frac, const { field("frac") }, out);
            price(p, out);
            modifiers(m, out);
        }
        ClauseKind::Exit {
            when,
            price: p,
            modifiers: m,
        } => {
            trigger(when, out);
            if let Some(p) = p {
                price(p, out);
            }
            modifiers(m, out);
        }
        ClauseKind::Invalidate { when, .. } => trigger(when, out),
        // `{"clause": "arm", "text", "span"}`: three keys, not a number object.
        ClauseKind::Arm(_) => {}
    }
}

fn ticket(t: &Ticket, out: &mut Vec<Refusal>) {
    num(&t.qty, const { field("qty") }, out);
    if let Instrument::Option { strike, .. } = &t.instrument {
        match strike {
            Strike::Relative(n) => num(n, const { field("relative") }, out),
            Strike::Absolute(n) => num(n, const { field("absolute") }, out),
            Strike::Atm => {}
        }
    }
    price(&t.price, out);
    modifiers(&t.modifiers, out);
}

fn modifiers(m: &[Modifier], out: &mut Vec<Refusal>) {
    for m in m {
        match m {
            Modifier::Esc { price: p, after } => {
                price(p, out);
                dur(after, out);
            }
            Modifier::Cap { price: p } | Modifier::Floor { price: p } => price(p, out),
            Modifier::CancelIf { when } => trigger(when, out),
            Modifier::Peg | Modifier::Fix => {}
        }
    }
}

fn price(p: &Price, out: &mut Vec<Refusal>) {
    match p {
        Price::Anchor { offset, .. } => {
            if let Some(o) = offset {
                num(&o.amount, const { field("amount") }, out);
            }
        }
        Price::Number { value } => num(value, const { field("value") }, out),
        Price::Stub { .. } => {}
        Price::Lean { a, b, w, .. } => {
            price(a, out);
            price(b, out);
            num(w, const { field("w") }, out);
        }
        Price::Min { a, b, .. } | Price::Max { a, b, .. } => {
            price(a, out);
            price(b, out);
        }
    }
}

fn trigger(t: &Trigger, out: &mut Vec<Refusal>) {
    match t {
        Trigger::Or { terms } | Trigger::And { terms } => {
            for t in terms {
                trigger(t, out);
            }
        }
        Trigger::Not { inner } | Trigger::Group { inner } => trigger(inner, out),
        Trigger::Pred { pred } => predicate(pred, out),
    }
}

fn predicate(p: &Predicate, out: &mut Vec<Refusal>) {
    match p {
        Predicate::Cross {
            series: s,
            value: v,
            held,
            ..
        }
        | Predicate::Compare {
            series: s,
            value: v,
            held,
            ..
        } => {
            series(s, out);
            match v {
                // `{"kind": "number", "value": {..}}`: the number sits under its kind.
                Value::Number { value } => num(value, const { field("number") }, out),
                Value::Clock { .. } => {}
                Value::Series { series: s } => series(s, out),
                Value::Percentile { pct } => num(pct, const { field("pct") }, out),
            }
            if let Some(d) = held {
                dur(d, out);
            }
        }
        Predicate::Event { event, within, .. } => {
            if let Event::PlanFired { plan } | Event::PlanFilled { plan } = event {
                lexeme(&plan.text, plan.span, const { field("plan") }, out);
            }
            if let Some(d) = within {
                dur(d, out);
            }
        }
        Predicate::TMinus { minutes, .. } => num(minutes, const { field("minutes") }, out),
        Predicate::Phase { .. } => {}
    }
}

fn series(s: &Series, out: &mut Vec<Refusal>) {
    match &s.kind {
        SeriesKind::Velocity { window } => dur(window, out),
        SeriesKind::SymSpot { sym } => lexeme(&sym.text, sym.span, const { field("sym") }, out),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::ast::{Num, Span, decimal_value};
    use super::super::ranges_tree::{Node, from_value, to_node};
    use super::*;
    use crate::lang::parse;

    fn span_of_tree(m: &Node) -> Option<std::ops::Range<usize>> {
        let s = m.get("span")?;
        let a = s.get("start")?.as_u64()? as usize;
        let b = s.get("end")?.as_u64()? as usize;
        Some(a..b)
    }

    /// The walk over the tree (the reference: what the rule read before the tape).
    /// `key`: the field this value sits under (for a strike, the strike's kind); `at`: the
    /// nearest enclosing span (for values without one of their own).
    fn walk_tree(v: &Node, key: &str, at: std::ops::Range<usize>, out: &mut Vec<Refusal>) {
        match v {
            Node::Arr(a) => a.iter().for_each(|x| walk_tree(x, key, at.clone(), out)),
            Node::Obj(entries) => {
                let m = v;
                let here = span_of_tree(m).unwrap_or(at);
                if let Some(Node::Str(text)) = m.get("text")
                    && entries.len() == 2
                    && m.get("span").is_some()
                {
                    number(text, key, here, out);
                    return;
                }
                if let (Some(amount), Some(unit), Some(Node::Str(text))) =
                    (m.get("amount"), m.get("unit"), m.get("text"))
                {
                    let per = match unit.as_str() {
                        Some("h") => 3600,
                        Some("m") => 60,
                        _ => 1,
                    };
                    let secs = amount.as_u64().map(|a| a.saturating_mul(per));
                    if significant(text) > MAX_DIGITS || secs.is_none_or(|s| s > MAX_DURATION_S) {
                        out.push((
                            here,
                            format!(
                                "the duration `{text}{}` is longer than a day ({MAX_DURATION_S}s): a session is one day; write e.g. `30m` or `2h`",
                                unit.as_str().unwrap_or("")
                            ),
                            "duration too long",
                        ));
                    }
                    return;
                }
                if m.get("kind").and_then(Node::as_str) == Some("dte")
                    && let Some(d) = m.get("value").and_then(Node::as_u64)
                    && d > MAX_DTE
                {
                    out.push((
                        here.clone(),
                        format!("`{d}dte` is more than {MAX_DTE} days out: write a nearer expiry, like `0dte` or `5dte`"),
                        "expiry too far",
                    ));
                }
                // A strike's number sits under `value`, beside its kind (`relative`/`absolute`).
                let kind = m.get("kind").and_then(Node::as_str).unwrap_or("");
                for (k, x) in entries {
                    let sub = if k == "value" && !kind.is_empty() {
                        kind
                    } else {
                        k.as_ref()
                    };
                    walk_tree(x, sub, here.clone(), out);
                }
            }
            _ => {}
        }
    }

    /// The walk of every statement's tree, one after the other (what `check` did before
    /// the tape).
    fn walk_trees(doc: &Document) -> Vec<Refusal> {
        let mut out = Vec::new();
        for st in &doc.statements {
            match to_node(st) {
                Some(n) => walk_tree(&n, "statements", 0..0, &mut out),
                None => return Vec::new(),
            }
        }
        for t in &doc.tail {
            match to_node(t) {
                Some(n) => walk_tree(&n, "tail", 0..0, &mut out),
                None => return Vec::new(),
            }
        }
        out
    }

    /// Documents of every statement kind: the examples, and a few written for the bounds.
    fn sample_documents() -> Vec<String> {
        let mut docs = crate::lang::example_documents();
        docs.push(
            "USING signal SPX exec SPY 2025-04-11\n# note\nPLAN p budget 99999999999999999R ttl +1441m priority 3\n  WHEN spot > 1 held 2h AND NOT (vwap < p99.9 OR T-15)\n  DO buy 2000 +1001 C @ lean(bid, fair, 0.4) esc fair 90000s cap fair+5c\n  TP 1001x frac 0.5 @ fair\n".into(),
        );
        docs.push("USING signal SPX exec SPY 4000dte\nPLAN p budget 1R ttl 15:00\n  WHEN spot > 1\n  DO buy 1 ATM C @ fair\n# tail\n".into());
        docs
    }

    /// Every sample document as written, then `rounds - 1` times with its numbers redrawn
    /// (draws from one xorshift generator seeded with `seed`, document by document).
    fn variants(seed: u64, rounds: usize) -> Vec<String> {
        let mut next = crate::lang::xorshift(seed);
        let mut out = Vec::new();
        for src in sample_documents() {
            for round in 0..rounds {
                out.push(if round == 0 {
                    src.clone()
                } else {
                    renumbered(&src, &mut next)
                });
            }
        }
        out
    }

    /// `src` with every digit run replaced by a number drawn by `next` (some in range, some
    /// past a field's bound, some past every bound).
    fn renumbered(src: &str, next: &mut impl FnMut() -> u64) -> String {
        const PICKS: &[&str] = &[
            "0",
            "1",
            "7",
            "59",
            "999",
            "1000",
            "1001",
            "1440",
            "1441",
            "3650",
            "3651",
            "5000",
            "86400",
            "86401",
            "999999",
            "1000001",
            "1000000000000",
            "99999999999999999",
            "0000000000000000012",
        ];
        let mut out = String::with_capacity(src.len());
        let mut digits = false;
        for c in src.chars() {
            if c.is_ascii_digit() {
                if !digits {
                    out.push_str(PICKS[(next() % PICKS.len() as u64) as usize]);
                }
                digits = true;
            } else {
                digits = false;
                out.push(c);
            }
        }
        out
    }

    /// The walk over the tape refuses what the walk over the tree refuses, in the same
    /// order, and the tape holds each statement's tree: over every sample document with its
    /// numbers redrawn many times (a property test of the fast path against the old one).
    #[test]
    fn the_tape_walk_is_the_tree_walk() {
        let (mut parsed, mut refused) = (0, 0);
        for text in variants(0x9e37_79b9_7f4a_7c15, 60) {
            let Ok(doc) = parse(&text) else { continue };
            parsed += 1;
            let mut tape = Tape::default();
            for st in &doc.statements {
                tape.fill(st).expect("serializes");
                assert_eq!(Some(tape.to_node(0)), to_node(st), "{text}");
            }
            for t in &doc.tail {
                tape.fill(t).expect("serializes");
                assert_eq!(Some(tape.to_node(0)), to_node(t), "{text}");
            }
            let exact = walk_trees(&doc);
            assert_eq!(walk_document(&doc), exact, "{text}");
            refused += usize::from(!exact.is_empty());
        }
        assert!(
            parsed > 150 && refused > 100,
            "{parsed} parsed, {refused} refused"
        );
    }

    /// The walk over the model refuses what the walk over the serialization refuses, at
    /// the same spans, with the same messages, in the same order: over every sample
    /// document with its numbers redrawn many times.
    #[test]
    fn the_model_walk_is_the_tape_walk() {
        let (mut parsed, mut refused) = (0, 0);
        for text in variants(0x2545_f491_4f6c_dd1d, 80) {
            let Ok(doc) = parse(&text) else { continue };
            parsed += 1;
            let exact = walk_document(&doc);
            let mut typed = Vec::new();
            for st in &doc.statements {
                statement(st, &mut typed);
            }
            assert_eq!(typed, exact, "{text}");
            refused += usize::from(!exact.is_empty());
        }
        assert!(
            parsed > 200 && refused > 150,
            "{parsed} parsed, {refused} refused"
        );
    }

    /// The short-decimal fast path reads every lexeme to the bit the float parser reads,
    /// and leaves the rest (too many digits, signs, lone points) to it.
    #[test]
    fn the_decimal_fast_path_is_the_float_parser() {
        let mut next = crate::lang::xorshift(0x853c_49e6_748f_ea9b_u64);
        let mut fast = 0;
        let mut texts: Vec<String> = [
            "0",
            "-0",
            "0.0",
            "-0.0",
            "1",
            "0.1",
            "0.3",
            "4999.75",
            "-1",
            "99999999999999.9",
            "999999999999999",
            "9999999999999999",
            "0.000000000000001",
            "00000000000000012",
            "1.",
            ".5",
            "+1",
            "1.2.3",
            "-",
            "",
            "1e5",
            "12a",
        ]
        .iter()
        .map(|t| t.to_string())
        .collect();
        for _ in 0..20_000 {
            let int = next() % 10_u64.pow((next() % 16) as u32 + 1);
            let frac_digits = (next() % 10) as usize;
            let mut t = if next().is_multiple_of(4) {
                "-".to_string()
            } else {
                String::new()
            };
            t.push_str(&int.to_string());
            if frac_digits > 0 {
                t.push('.');
                for _ in 0..frac_digits {
                    t.push(char::from(b'0' + (next() % 10) as u8));
                }
            }
            texts.push(t);
        }
        for t in &texts {
            let parsed = t.parse::<f64>().ok();
            match decimal_value(t) {
                Some(x) => {
                    fast += 1;
                    assert_eq!(Some(x.to_bits()), parsed.map(f64::to_bits), "{t}");
                }
                None => assert!(
                    t.bytes().filter(u8::is_ascii_digit).count() > 15
                        || !t
                            .bytes()
                            .all(|b| b.is_ascii_digit() || b == b'-' || b == b'.')
                        || t.starts_with('.')
                        || t.ends_with('.')
                        || t.matches('.').count() > 1
                        || t.trim_start_matches('-').is_empty(),
                    "{t} left to the float parser"
                ),
            }
            let n = Num {
                text: t.clone(),
                span: Span::default(),
            };
            let v = n.value();
            assert_eq!(
                v.to_bits(),
                parsed.unwrap_or(f64::NAN).to_bits(),
                "Num::value of {t}"
            );
        }
        assert!(fast > 10_000, "{fast} read by the fast path");
    }

    /// `significant` counts as it did when it collected the digits into a `String`.
    #[test]
    fn significant_digits_are_counted_as_before() {
        fn collected(text: &str) -> usize {
            let digits: String = text.chars().filter(char::is_ascii_digit).collect();
            let t = digits.trim_start_matches('0');
            if t.is_empty() { 1 } else { t.len() }
        }
        for t in [
            "",
            "0",
            "00",
            "0.0",
            "0.05",
            "-0.0500",
            "+12",
            "1000",
            "007.100",
            "99999999999999999",
            "0000000000000000012",
            "1.2.3",
            "x",
            "é9",
        ] {
            assert_eq!(significant(t), collected(t), "{t}");
        }
    }

    /// A repeated key (an internally tagged enum whose variant has a field of the tag's
    /// name) is one entry, at its first place, with its last value, as in the tree.
    #[test]
    fn a_repeated_key_reads_as_in_the_tree() {
        #[derive(serde::Serialize)]
        struct Inner {
            kind: Num,
            text: String,
        }
        #[derive(serde::Serialize)]
        #[serde(tag = "kind")]
        enum Outer {
            A(Inner),
        }
        let n = |t: &str| Num {
            text: t.into(),
            span: Span::new(1, 2),
        };
        let v = Outer::A(Inner {
            kind: n("99999999999999999"),
            text: "x".into(),
        });
        let mut tape = Tape::default();
        tape.fill(&v).expect("serializes");
        assert_eq!(Some(tape.to_node(0)), to_node(&v));
        let mut a = Vec::new();
        walk(&tape, 0, "qty", 0..0, &mut a);
        let mut b = Vec::new();
        walk_tree(&to_node(&v).expect("tree"), "qty", 0..0, &mut b);
        assert_eq!(a, b);
        assert_eq!(a.len(), 1);
    }

    /// The walk over the whole document's serde_json tree (the reference: what the rule
    /// read before it walked statement by statement without a JSON tree).
    fn walk_all(doc: &Document) -> Vec<Refusal> {
        let mut out = Vec::new();
        let v = serde_json::to_value(doc).unwrap();
        walk_tree(&from_value(&v), "", 0..0, &mut out);
        out
    }

    /// The scan never hides a refusal: over every number 0..=3000 (and decimals) in every
    /// kind of numeric field, a text the scan passes has nothing for the walk to refuse,
    /// and every refused number is one the scan flags.
    #[test]
    fn the_scan_never_hides_a_refusal() {
        let templates = [
            "PLAN p budget 1R ttl +{n}m\n  WHEN spot > 1\n  DO buy 1 shares @ ask\n",
            "PLAN p budget 1R ttl 15:00\n  WHEN spot > 1 held {n}s\n  DO buy {n} shares @ ask\n",
            "PLAN p budget 1R ttl 15:00\n  WHEN spot > 1 held {n}h\n  DO buy 1 shares @ ask\n",
            "PLAN p budget {n}R ttl 15:00\n  WHEN spot > {n}\n  DO buy 1 +{n} C @ fair\n",
            "PLAN p budget 1R ttl 15:00\n  WHEN spot > 1\n  DO buy 1 ATM C @ fair\n  TP {n}x @ fair\n  EXIT T-{n}\n",
            "USING signal SPX exec SPY {n}dte\nPLAN p budget 1R ttl 15:00\n  WHEN spot > 1\n  DO buy 1 ATM C @ fair\n",
        ];
        let mut refused = 0;
        for t in templates {
            for n in (0..=3000).map(|n| n.to_string()).chain(
                [
                    "0.5",
                    "999.999",
                    "1000.0001",
                    "0.0000000000000001",
                    "99999999999999999",
                ]
                .map(String::from),
            ) {
                let src = t.replace("{n}", &n);
                let Ok(doc) = parse(&src) else { continue };
                let exact = walk_all(&doc);
                if !may_refuse(&src) {
                    assert!(exact.is_empty(), "the scan passed {src:?}: {exact:?}");
                }
                assert_eq!(check(&src, &doc), exact, "{src:?}");
                refused += usize::from(!exact.is_empty());
            }
        }
        assert!(
            refused > 1000,
            "the sample reaches the bounds ({refused} refused)"
        );
    }
}
