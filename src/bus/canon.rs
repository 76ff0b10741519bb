//! The fast canonical writer: each event's fields as `(key, value)` pairs, sorted by key and
//! written into a reused buffer, with no intermediate map. It writes exactly the bytes of the
//! reference path (`serde_json::to_value` then `to_vec`, whose map sorts keys); a test checks
//! that on every variant.

use super::{BusSide, Event, OrderRole, PlanState};
use crate::market::{Px, Ts};

enum V<'a> {
    S(&'a str),
    U(u64),
    I(i64),
    P(Px),
    T(Ts),
    L(&'a [String]),
    /// A JSON boolean.
    B(bool),
    /// A JSON value, written compact with sorted keys (serde_json's default map).
    J(&'a serde_json::Value),
}

fn side(s: BusSide) -> &'static str {
    match s {
        BusSide::Buy => "buy",
        BusSide::Sell => "sell",
    }
}

fn role(r: OrderRole) -> &'static str {
    match r {
        OrderRole::Entry => "entry",
        OrderRole::Tp => "tp",
        OrderRole::Exit => "exit",
        OrderRole::Flatten => "flatten",
    }
}

/// The kebab-case name of a plan state.
pub fn state_name(s: PlanState) -> &'static str {
    match s {
        PlanState::Dormant => "dormant",
        PlanState::Armed => "armed",
        PlanState::Fired => "fired",
        PlanState::Resting => "resting",
        PlanState::Filled => "filled",
        PlanState::Expired => "expired",
        PlanState::StoodDown => "stood-down",
        PlanState::Halted => "halted",
        PlanState::DeArmed => "de-armed",
        PlanState::Done => "done",
    }
}

fn push_u64(out: &mut Vec<u8>, n: u64) {
    if n < 10 {
        out.push(b'0' + n as u8);
        return;
    }
    push_u64_long(out, n);
}

fn push_u64_long(out: &mut Vec<u8>, n: u64) {
    let mut buf = [0u8; 20];
    let i = digits_before(&mut buf, 20, n);
    out.extend_from_slice(&buf[i..]);
}

/// Write `n`'s decimal digits into `buf` so that they end just before `end`; the index of the
/// first digit. (`buf` holds them: at most 20 digits for a `u64`.)
fn digits_before(buf: &mut [u8], end: usize, mut n: u64) -> usize {
    let mut i = end;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return i;
        }
    }
}

/// `Px`'s display (2 to 4 decimals, trailing zeros past the second trimmed), without `fmt`:
/// written backwards into a stack buffer, then appended at once.
fn push_px(out: &mut Vec<u8>, p: Px) {
    let mut buf = [0u8; 24];
    let i = px_digits(&mut buf, 24, p);
    out.extend_from_slice(&buf[i..]);
}

/// `Px`'s display written into `buf` so that it ends just before `end`; the index of its
/// first byte. At most 21 bytes: a sign, 15 integer digits (|i64| / 10^4), the point and 4
/// decimals.
fn px_digits(buf: &mut [u8], end: usize, p: Px) -> usize {
    let raw = p.raw();
    let abs = raw.unsigned_abs();
    let frac = (abs % 10_000) as u32;
    // Two decimals always; the third and fourth only when not trailing zeros.
    let (hi, lo) = (frac / 100, frac % 100);
    let mut i = end;
    if lo != 0 {
        if lo % 10 != 0 {
            i -= 2;
            buf[i..i + 2].copy_from_slice(&two_digits(lo));
        } else {
            i -= 1;
            buf[i] = b'0' + (lo / 10) as u8;
        }
    }
    i -= 3;
    buf[i] = b'.';
    buf[i + 1..i + 3].copy_from_slice(&two_digits(hi));
    i = digits_before(buf, i, abs / 10_000);
    if raw < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    i
}

/// The two decimal digits of `v` (below 100; a larger `v` gives those of `v % 100`).
#[inline(always)]
fn two_digits(v: u32) -> [u8; 2] {
    const PAIRS: [[u8; 2]; 100] = {
        let mut t = [[0u8; 2]; 100];
        let mut i = 0;
        while i < 100 {
            t[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
            i += 1;
        }
        t
    };
    PAIRS[(v % 100) as usize]
}

/// `HH:MM:SS.mmm`.
fn push_ts(out: &mut Vec<u8>, t: Ts) {
    out.extend_from_slice(&ts_bytes(t));
}

/// `HH:MM:SS.mmm`, as bytes.
#[inline(always)]
fn ts_bytes(t: Ts) -> [u8; 12] {
    let ms = t.ms();
    let s = ms / 1000;
    let (h, m, sec, milli) = (s / 3600 % 100, (s / 60) % 60, s % 60, ms % 1000);
    let [h0, h1] = two_digits(h);
    let [m0, m1] = two_digits(m);
    let [s0, s1] = two_digits(sec);
    let [c0, c1] = two_digits(milli / 10);
    [
        h0,
        h1,
        b':',
        m0,
        m1,
        b':',
        s0,
        s1,
        b'.',
        c0,
        c1,
        b'0' + (milli % 10) as u8,
    ]
}

/// The `order-repriced` line: a working order's new limit, written at nearly every tick (a
/// peg, an escalation). Written back to front into one stack buffer (the numbers' digits
/// come last first, so each is written in place) and appended at once, in `write_fields`'s
/// key order and bytes (the variant tests compare it with the reference path like every
/// other); a reason that is long or needs escaping goes through [`json_str`].
pub(crate) fn write_repriced(out: &mut Vec<u8>, ts: Ts, order: u64, limit: Px, reason: &str) {
    const HEAD: &[u8] = b"{\"limit\":\"";
    const ORDER: &[u8] = b"\",\"order\":";
    const REASON: &[u8] = b",\"reason\":";
    const TS: &[u8] = b",\"ts\":\"";
    const TAIL: &[u8] = b"\",\"type\":\"order-repriced\"}\n";
    const MAX_REASON: usize = 32;
    let mut w = Back::default();
    w.put(TAIL);
    w.put(&ts_bytes(ts));
    w.put(TS);
    // A reason that needs escaping (or is long) goes between the head and this tail.
    // `peg`, the reason of nearly every line, needs no check.
    let tail = if reason == "peg" || (reason.len() <= MAX_REASON && plain(reason)) {
        w.put(b"\"");
        w.put(reason.as_bytes());
        w.put(b"\"");
        None
    } else {
        Some(std::mem::take(&mut w))
    };
    w.put(REASON);
    w.i = digits_before(&mut w.buf, w.i, order);
    w.put(ORDER);
    w.i = px_digits(&mut w.buf, w.i, limit);
    w.put(HEAD);
    out.extend_from_slice(w.bytes());
    if let Some(tail) = tail {
        json_str(out, reason);
        out.extend_from_slice(tail.bytes());
    }
}

/// A line's bytes gathered back to front on the stack (at most 160: [`write_repriced`]'s
/// longest line is 154 bytes, with a 21-byte limit, a 20-digit order and a 32-byte reason).
struct Back {
    buf: [u8; 160],
    /// The first byte written.
    i: usize,
}

impl Default for Back {
    fn default() -> Back {
        Back {
            buf: [0; 160],
            i: 160,
        }
    }
}

impl Back {
    /// Write `bytes` before those written so far.
    #[inline(always)]
    fn put(&mut self, bytes: &[u8]) {
        self.i -= bytes.len();
        self.buf[self.i..self.i + bytes.len()].copy_from_slice(bytes);
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[self.i..]
    }
}

/// A string serde_json writes verbatim between quotes: no control character, `"` or `\\`.
#[inline(always)]
fn plain(s: &str) -> bool {
    s.bytes().all(|c| c >= 0x20 && c != b'"' && c != b'\\')
}

/// Write a JSON value compactly with every object's keys sorted (byte order), independent of
/// serde_json's `preserve_order` feature.
pub fn write_json_sorted(out: &mut Vec<u8>, v: &serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_unstable();
            out.push(b'{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json_str(out, k);
                out.push(b':');
                if let Some(x) = m.get(k) {
                    write_json_sorted(out, x);
                }
            }
            out.push(b'}');
        }
        serde_json::Value::Array(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json_sorted(out, x);
            }
            out.push(b']');
        }
        other => {
            let _ = serde_json::to_writer(&mut *out, other);
        }
    }
}

fn json_str(out: &mut Vec<u8>, s: &str) {
    // serde_json escapes only control characters, `"` and `\\` (UTF-8 is written as is): a
    // string with none of them is written verbatim between quotes.
    if plain(s) {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        // Writing a &str into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

fn write_fields(out: &mut Vec<u8>, fields: &mut [(&str, V<'_>)]) {
    // The hot variants list their fields already in key order.
    if !fields.is_sorted_by(|a, b| a.0 <= b.0) {
        fields.sort_unstable_by(|a, b| a.0.cmp(b.0));
    }
    out.push(b'{');
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        // Keys are this file's own identifiers: nothing to escape.
        out.push(b'"');
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b"\":");
        match v {
            V::S(s) => json_str(out, s),
            V::U(n) => push_u64(out, *n),
            V::I(n) => {
                if *n < 0 {
                    out.push(b'-');
                }
                push_u64(out, n.unsigned_abs());
            }
            V::P(p) => {
                out.push(b'"');
                push_px(out, *p);
                out.push(b'"');
            }
            V::T(t) => {
                out.push(b'"');
                push_ts(out, *t);
                out.push(b'"');
            }
            V::J(v) => write_json_sorted(out, v),
            V::B(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            V::L(xs) => {
                out.push(b'[');
                for (j, x) in xs.iter().enumerate() {
                    if j > 0 {
                        out.push(b',');
                    }
                    json_str(out, x);
                }
                out.push(b']');
            }
        }
    }
    out.extend_from_slice(b"}\n");
}

/// Append the canonical line of `ev` (with its `\n`) to `out`.
pub fn write_canonical(out: &mut Vec<u8>, ev: &Event) {
    use V::*;
    match ev {
        Event::SessionStart {
            tape,
            date,
            fill_model,
            r_usd,
            open,
            close,
            author,
            session,
        } => {
            let author = author
                .as_ref()
                .map(|a| serde_json::to_value(a).unwrap_or(serde_json::Value::Null));
            let mut f = vec![
                ("type", S("session-start")),
                ("tape", S(tape)),
                ("date", S(date)),
                ("fill_model", S(fill_model)),
                ("r_usd", P(*r_usd)),
                ("open", T(*open)),
                ("close", T(*close)),
            ];
            if let Some(a) = &author {
                f.push(("author", J(a)));
            }
            if let Some(n) = session {
                f.push(("session", U(u64::from(*n))));
            }
            write_fields(out, &mut f)
        }
        Event::DocumentArmed {
            ts,
            text,
            blake3,
            plans,
            kept,
            owner,
        } => {
            let mut f = vec![
                ("type", S("document-armed")),
                ("ts", T(*ts)),
                ("text", S(text)),
                ("blake3", S(blake3)),
                ("plans", L(plans)),
            ];
            if !kept.is_empty() {
                f.push(("kept", L(kept)));
            }
            if let Some(o) = owner {
                f.push(("owner", S(o)));
            }
            write_fields(out, &mut f)
        }
        Event::PlanState {
            ts,
            plan,
            state,
            reason,
        } => match reason {
            Some(r) => write_fields(
                out,
                &mut [
                    ("type", S("plan-state")),
                    ("ts", T(*ts)),
                    ("plan", S(plan)),
                    ("state", S(state_name(*state))),
                    ("reason", S(r)),
                ],
            ),
            None => write_fields(
                out,
                &mut [
                    ("type", S("plan-state")),
                    ("ts", T(*ts)),
                    ("plan", S(plan)),
                    ("state", S(state_name(*state))),
                ],
            ),
        },
        Event::PlanFired { ts, plan, clause } => write_fields(
            out,
            &mut [
                ("type", S("plan-fired")),
                ("ts", T(*ts)),
                ("plan", S(plan)),
                ("clause", S(clause)),
            ],
        ),
        Event::OrderPlaced {
            ts,
            order,
            plan,
            clause,
            role: r,
            leg,
            side: sd,
            qty,
            limit,
            mult,
        } => write_fields(
            out,
            &mut [
                ("clause", S(clause)),
                ("leg", S(leg)),
                ("limit", P(*limit)),
                ("mult", U(u64::from(*mult))),
                ("order", U(*order)),
                ("plan", S(plan)),
                ("qty", U(*qty)),
                ("role", S(role(*r))),
                ("side", S(side(*sd))),
                ("ts", T(*ts)),
                ("type", S("order-placed")),
            ],
        ),
        Event::OrderRepriced {
            ts,
            order,
            limit,
            reason,
        } => {
            write_repriced(out, *ts, *order, *limit, reason);
        }
        Event::OrderCancelled { ts, order, reason } => write_fields(
            out,
            &mut [
                ("order", U(*order)),
                ("reason", S(reason)),
                ("ts", T(*ts)),
                ("type", S("order-cancelled")),
            ],
        ),
        Event::Fill {
            ts,
            order,
            plan,
            leg,
            side: sd,
            qty,
            px,
            mult,
            quoted,
        } => {
            let mut f = vec![
                ("leg", S(leg)),
                ("mult", U(u64::from(*mult))),
                ("order", U(*order)),
                ("plan", S(plan)),
                ("px", P(*px)),
                ("qty", U(*qty)),
                ("side", S(side(*sd))),
                ("ts", T(*ts)),
                ("type", S("fill")),
            ];
            // Absent when the price came from the model, so v1 Bus lines keep their bytes.
            if *quoted {
                f.push(("quoted", B(true)));
            }
            write_fields(out, &mut f)
        }
        Event::Clamp {
            ts,
            plan,
            clause,
            from_qty,
            to_qty,
            budget,
            reason,
            order,
        } => {
            let mut f = vec![
                ("type", S("clamp")),
                ("ts", T(*ts)),
                ("plan", S(plan)),
                ("clause", S(clause)),
                ("from_qty", U(*from_qty)),
                ("to_qty", U(*to_qty)),
                ("budget", S(budget)),
                ("reason", S(reason)),
            ];
            // Absent for a ticket clamped before it was placed: those lines keep their bytes.
            if let Some(o) = order {
                f.push(("order", U(*o)));
            }
            write_fields(out, &mut f)
        }
        Event::Veto {
            ts,
            plan,
            clause,
            budget,
            reason,
            order,
        } => {
            let mut f = vec![
                ("type", S("veto")),
                ("ts", T(*ts)),
                ("plan", S(plan)),
                ("clause", S(clause)),
                ("budget", S(budget)),
                ("reason", S(reason)),
            ];
            if let Some(o) = order {
                f.push(("order", U(*o)));
            }
            write_fields(out, &mut f)
        }
        Event::Settlement {
            ts,
            plan,
            leg,
            qty,
            px,
            mult,
        } => write_fields(
            out,
            &mut [
                ("type", S("settlement")),
                ("ts", T(*ts)),
                ("plan", S(plan)),
                ("leg", S(leg)),
                ("qty", I(*qty)),
                ("px", P(*px)),
                ("mult", U(u64::from(*mult))),
            ],
        ),
        Event::Mark { ts, plan, leg, px } => write_fields(
            out,
            &mut [
                ("type", S("mark")),
                ("ts", T(*ts)),
                ("plan", S(plan)),
                ("leg", S(leg)),
                ("px", P(*px)),
            ],
        ),
        Event::Headline { ts, text } => write_fields(
            out,
            &mut [("type", S("headline")), ("ts", T(*ts)), ("text", S(text))],
        ),
        Event::WakeFired {
            ts,
            wake,
            why,
            deliver,
            priority,
            used,
        } => write_fields(
            out,
            &mut [
                ("type", S("wake-fired")),
                ("ts", T(*ts)),
                ("wake", S(wake)),
                ("why", S(why)),
                ("deliver", S(deliver)),
                ("priority", I(*priority)),
                ("used", U(*used)),
            ],
        ),
        Event::ViewDelivered {
            ts,
            wake,
            view,
            tokens,
            dropped,
            frame,
        } => write_fields(
            out,
            &mut [
                ("type", S("view-delivered")),
                ("ts", T(*ts)),
                ("wake", S(wake)),
                ("view", S(view)),
                ("tokens", U(*tokens)),
                ("dropped", L(dropped)),
                ("frame", S(frame)),
            ],
        ),
        Event::Turn { ts, wake, turn } => {
            let turn = serde_json::to_value(turn).unwrap_or(serde_json::Value::Null);
            write_fields(
                out,
                &mut [
                    ("type", S("turn")),
                    ("ts", T(*ts)),
                    ("wake", S(wake)),
                    ("turn", J(&turn)),
                ],
            )
        }
        Event::Repair { ts, wake, attempt } => {
            let attempt = serde_json::to_value(attempt).unwrap_or(serde_json::Value::Null);
            write_fields(
                out,
                &mut [
                    ("type", S("repair")),
                    ("ts", T(*ts)),
                    ("wake", S(wake)),
                    ("attempt", J(&attempt)),
                ],
            )
        }
        Event::TurnRejected {
            ts,
            wake,
            by,
            outcome,
        } => write_fields(
            out,
            &mut [
                ("type", S("turn-rejected")),
                ("ts", T(*ts)),
                ("wake", S(wake)),
                ("by", S(by)),
                ("outcome", S(outcome)),
            ],
        ),
        Event::WakeSuppressed { ts, wake, reason } => write_fields(
            out,
            &mut [
                ("type", S("wake-suppressed")),
                ("ts", T(*ts)),
                ("wake", S(wake)),
                ("reason", S(reason)),
            ],
        ),
        Event::StandDown { ts, reason, owner } => {
            let mut f = vec![
                ("type", S("stand-down")),
                ("ts", T(*ts)),
                ("reason", S(reason)),
            ];
            if let Some(o) = owner {
                f.push(("owner", S(o)));
            }
            write_fields(out, &mut f)
        }
        Event::Cancel {
            ts,
            target,
            outcome,
        } => write_fields(
            out,
            &mut [
                ("type", S("cancel")),
                ("ts", T(*ts)),
                ("target", S(target)),
                ("outcome", S(outcome)),
            ],
        ),
        Event::PodHalt {
            ts,
            pod,
            loss_usd,
            limit_usd,
        } => write_fields(
            out,
            &mut [
                ("type", S("pod-halt")),
                ("ts", T(*ts)),
                ("pod", S(pod)),
                ("loss_usd", P(*loss_usd)),
                ("limit_usd", P(*limit_usd)),
            ],
        ),
        Event::Excursion { ts, plan, mae_usd } => write_fields(
            out,
            &mut [
                ("type", S("excursion")),
                ("ts", T(*ts)),
                ("plan", S(plan)),
                ("mae_usd", P(*mae_usd)),
            ],
        ),
        Event::Error { ts, plan, message } => match plan {
            Some(p) => write_fields(
                out,
                &mut [
                    ("type", S("error")),
                    ("ts", T(*ts)),
                    ("plan", S(p)),
                    ("message", S(message)),
                ],
            ),
            None => write_fields(
                out,
                &mut [
                    ("type", S("error")),
                    ("ts", T(*ts)),
                    ("message", S(message)),
                ],
            ),
        },
        Event::SessionEnd { ts, tape_events } => write_fields(
            out,
            &mut [
                ("type", S("session-end")),
                ("ts", T(*ts)),
                ("tape_events", U(*tape_events)),
            ],
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One of every variant (and both shapes of the optional fields), with awkward text.
    pub(crate) fn samples() -> Vec<Event> {
        let ts = Ts::hms(10, 1, 2, 345);
        let s = |x: &str| x.to_string();
        vec![
            Event::SessionStart {
                tape: s("t\"1"),
                date: s("2025-04-09"),
                fill_model: s("strict-cross-v1"),
                r_usd: Px(10_000_000),
                open: Ts::hms(9, 30, 0, 0),
                close: Ts::hms(16, 0, 0, 0),
                author: None,
                session: None,
            },
            Event::SessionStart {
                tape: s("t2"),
                date: s("2025-04-09"),
                fill_model: s("strict-cross-v1"),
                r_usd: Px(10_000_000),
                open: Ts::hms(9, 30, 0, 0),
                close: Ts::hms(16, 0, 0, 0),
                author: Some(crate::bus::AuthorIdentity {
                    kind: s("openai"),
                    model: s("gemma \"3\""),
                    constrained: true,
                    profile: s("authoring-v2"),
                    prompt_hash: s("ab"),
                    max_tokens: Some(512),
                    temperature: None,
                    server: None,
                }),
                session: None,
            },
            Event::SessionStart {
                tape: s("t"),
                date: s("2025-04-10"),
                fill_model: s("strict-cross-v1"),
                r_usd: Px(10_000_000),
                open: Ts::hms(9, 30, 0, 0),
                close: Ts::hms(16, 0, 0, 0),
                author: None,
                session: Some(2),
            },
            Event::DocumentArmed {
                ts,
                text: s("PLAN x\n  é \\ \u{1}"),
                blake3: s("ab"),
                plans: vec![s("a"), s("b")],
                kept: Vec::new(),
                owner: None,
            },
            Event::DocumentArmed {
                ts,
                text: s("PLAN y"),
                blake3: s("cd"),
                plans: vec![s("y")],
                kept: vec![s("y")],
                owner: Some(s("house")),
            },
            Event::PlanState {
                ts,
                plan: s("p"),
                state: PlanState::StoodDown,
                reason: Some(s("r")),
            },
            Event::PlanState {
                ts,
                plan: s("p"),
                state: PlanState::DeArmed,
                reason: None,
            },
            Event::PlanFired {
                ts,
                plan: s("p"),
                clause: s("WHEN"),
            },
            Event::OrderPlaced {
                ts,
                order: 7,
                plan: s("p"),
                clause: s("DO#1"),
                role: OrderRole::Flatten,
                leg: s("SPY 2025-04-09 500.00 C"),
                side: BusSide::Sell,
                qty: 3,
                limit: Px(12_345),
                mult: 100,
            },
            Event::OrderRepriced {
                ts,
                order: 7,
                limit: Px(-5),
                reason: s("peg").into(),
            },
            Event::OrderCancelled {
                ts,
                order: 7,
                reason: s("ttl"),
            },
            Event::Fill {
                ts,
                order: 7,
                plan: s("p"),
                leg: s("SPY shares"),
                side: BusSide::Buy,
                qty: 10,
                px: Px(1_000_100),
                mult: 1,
                quoted: false,
            },
            Event::Fill {
                ts,
                order: 8,
                plan: s("p"),
                leg: s("SPY shares"),
                side: BusSide::Sell,
                qty: 10,
                px: Px(1_000_100),
                mult: 1,
                quoted: true,
            },
            Event::Clamp {
                ts,
                plan: s("p"),
                clause: s("DO#1"),
                from_qty: 5,
                to_qty: 1,
                budget: s("plan"),
                reason: s("x"),
                order: None,
            },
            Event::Clamp {
                ts,
                plan: s("p"),
                clause: s("DO#1"),
                from_qty: 3,
                to_qty: 1,
                budget: s("plan"),
                reason: s("re-price"),
                order: Some(7),
            },
            Event::Veto {
                ts,
                plan: s("p"),
                clause: s("DO#1"),
                budget: s("book b"),
                reason: s("y"),
                order: None,
            },
            Event::Veto {
                ts,
                plan: s("p"),
                clause: s("DO#1"),
                budget: s("plan"),
                reason: s("re-price"),
                order: Some(8),
            },
            Event::Settlement {
                ts,
                plan: s("p"),
                leg: s("l"),
                qty: -2,
                px: Px(0),
                mult: 100,
            },
            Event::Mark {
                ts,
                plan: s("p"),
                leg: s("l"),
                px: Px(1),
            },
            Event::Headline {
                ts,
                text: s("news"),
            },
            Event::WakeFired {
                ts,
                wake: s("w"),
                why: s("T-30"),
                deliver: s("scan"),
                priority: -2,
                used: 1,
            },
            Event::WakeSuppressed {
                ts,
                wake: s("w"),
                reason: s("budget"),
            },
            Event::TurnRejected {
                ts,
                wake: s("w"),
                by: s("human"),
                outcome: s("supersede"),
            },
            Event::ViewDelivered {
                ts,
                wake: s("open"),
                view: s("default"),
                tokens: 412,
                dropped: vec![s("headlines pane"), s("q\"uote")],
                frame: s("FRAME tape=t\n[levels SPX]\n"),
            },
            Event::Turn {
                ts,
                wake: s("w"),
                turn: Box::new(crate::turn::route(
                    &crate::turn::Reply::text("# a \"b\"\nSTAND-DOWN é \\ quiet\n"),
                    &crate::turn::TurnContext::new(
                        crate::turn::WakePhase::Mid,
                        crate::turn::Profile::AuthoringV2,
                        crate::turn::AuthorKind::Model,
                    ),
                )),
            },
            Event::Repair {
                ts,
                wake: s("w"),
                attempt: crate::turn::repair::RepairAttempt {
                    attempt: 0,
                    written: s("PLAN x\n"),
                    outcome: s("invalid"),
                    errors: Vec::new(),
                    guided: Some(s("write \"EXIT\"")),
                    tokens: 3,
                    next_parsed: Some(true),
                    retries: Vec::new(),
                    usage: None,
                },
            },
            Event::StandDown {
                ts,
                reason: s(""),
                owner: None,
            },
            Event::StandDown {
                ts,
                reason: s("r"),
                owner: Some(s("you")),
            },
            Event::Cancel {
                ts,
                target: s("p"),
                outcome: s("o"),
            },
            Event::PodHalt {
                ts,
                pod: s("d"),
                loss_usd: Px(1),
                limit_usd: Px(2),
            },
            Event::Excursion {
                ts,
                plan: s("p"),
                mae_usd: Px(-3),
            },
            Event::Error {
                ts,
                plan: Some(s("p")),
                message: s("m"),
            },
            Event::Error {
                ts,
                plan: None,
                message: s("m"),
            },
            Event::SessionEnd { ts, tape_events: 9 },
        ]
    }

    #[test]
    fn fast_number_formatting_matches_display() {
        for raw in [
            0,
            1,
            -1,
            5,
            10,
            100,
            125,
            12_345,
            -30_000,
            50_021_000,
            i64::MAX,
            i64::MIN + 1,
        ] {
            let mut o = Vec::new();
            push_px(&mut o, Px(raw));
            assert_eq!(String::from_utf8(o).unwrap(), Px(raw).to_string());
        }
        for ms in [0, 1, 999, 34_200_000, 57_600_000, 86_399_999] {
            let mut o = Vec::new();
            push_ts(&mut o, Ts(ms));
            assert_eq!(String::from_utf8(o).unwrap(), Ts(ms).to_string());
        }
    }

    #[test]
    fn fast_writer_matches_the_reference_serialisation() {
        for ev in samples() {
            let mut fast = Vec::new();
            write_canonical(&mut fast, &ev);
            assert_eq!(
                String::from_utf8(fast).unwrap(),
                String::from_utf8(super::super::canonical_line_reference(&ev)).unwrap()
            );
        }
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// The verbatim string path writes what serde_json writes, for any text (control
        /// characters, quotes, backslashes, DEL, non-ASCII).
        #[test]
        fn json_str_matches_serde(s in any::<String>(), t in "[ -~\u{7f}\u{e9}\u{1}\n\"\\\\]{0,24}") {
            for x in [&s, &t] {
                let mut fast = Vec::new();
                json_str(&mut fast, x);
                prop_assert_eq!(fast, serde_json::to_vec(x).unwrap());
            }
        }

        /// Every variant, with arbitrary text in its string fields, matches the reference.
        #[test]
        fn canonical_lines_match_reference_with_any_text(s in any::<String>(), n in any::<u64>(), raw in any::<i64>()) {
            let ts = Ts(u32::try_from(n % 86_400_000).unwrap_or(0));
            let evs = [
                Event::OrderRepriced { ts, order: n, limit: Px(raw), reason: s.clone().into() },
                Event::OrderCancelled { ts, order: n, reason: s.clone() },
                Event::Fill { ts, order: n, plan: s.clone(), leg: s.clone(), side: BusSide::Sell, qty: n, px: Px(raw), mult: 100, quoted: n % 2 == 0 },
                Event::OrderPlaced { ts, order: n, plan: s.clone(), clause: s.clone(), role: OrderRole::Tp, leg: s.clone(), side: BusSide::Buy, qty: n, limit: Px(raw), mult: 1 },
                Event::Headline { ts, text: s.clone() },
            ];
            for ev in evs {
                let mut fast = Vec::new();
                write_canonical(&mut fast, &ev);
                prop_assert_eq!(fast, super::super::canonical_line_reference(&ev));
            }
        }
    }
}
