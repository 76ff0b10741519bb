//! The pane renderers and the Frame: the text an agent receives, rendered from the market
//! state at an instant, kept under the View's token budget by measurement.

use super::bars::{Bar, Bars, effective_size};
use super::snapshot::Snapshot;
use crate::lang::ast::{self, Pane};
use crate::market::{Expiry, MarketState, Px, Right, Series, Sym, Ts};
use std::fmt::Write;

/// Bars per keyframe block for a bar size: 12 bars, or an hour of bars for bars under 5
/// minutes (at most 60 rows).
pub fn keyframe_every(size_secs: u32) -> usize {
    let size = effective_size(size_secs) as usize;
    if size >= 300 {
        12
    } else {
        (3600 / size).clamp(12, 60)
    }
}

/// How many keyframe blocks the tape pane shows at most (newest last).
pub const TAPE_BLOCKS: usize = 2;

/// Default bar size of a `tape` pane written without one.
pub const DEFAULT_BAR_SECS: u32 = 300;

/// The least VIEW budget, in cl100k tokens (rule `number-range`): a Frame over its budget
/// keeps its header line (tape, time, view, why it woke) and says what it dropped, which
/// takes 20–60 tokens; below this a budget could not hold them.
pub const MIN_VIEW_BUDGET: usize = 100;

/// What woke the author, for the Frame header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Woke {
    /// The wake's name (or `open`, `manual`, ...).
    pub by: String,
    /// Why: the trigger as canonical text.
    pub why: String,
}

/// Everything a Frame is rendered from.
pub struct FrameInput<'a> {
    pub tape: &'a str,
    pub market: &'a MarketState,
    /// Bars of the signal symbol.
    pub bars: &'a Bars,
    pub signal: Sym,
    pub exec: Sym,
    pub snapshot: &'a Snapshot,
    pub woke: Option<Woke>,
    /// Lines longer than this are wrapped (0: no limit).
    pub width: usize,
}

/// A rendered Frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub text: String,
    /// Tokens of `text`, as measured by the counter the Frame was rendered with.
    pub tokens: usize,
    pub budget: Option<usize>,
    /// What was cut or dropped to stay under the budget, in order.
    pub dropped: Vec<String>,
}

/// Render-time detail of each pane (reduced, step by step, to meet a budget).
#[derive(Debug, Clone)]
struct PaneDetail {
    pane: Pane,
    /// Tape: keyframe blocks shown; then rows kept (tail) when a single block is too much.
    blocks: usize,
    rows: Option<usize>,
    /// Chain / gex: strikes each side of ATM.
    strikes: usize,
    dropped: bool,
}

fn pane_name(p: &Pane) -> &'static str {
    match p {
        Pane::Tape { .. } => "tape",
        Pane::Levels => "levels",
        Pane::Chain { .. } => "chain",
        Pane::Gex { .. } => "gex",
        Pane::Skew { .. } => "skew",
        Pane::Velocity { .. } => "velocity",
        Pane::Kernel => "kernel",
        Pane::Plans => "plans",
        Pane::Blotter { .. } => "blotter",
        Pane::Journal { .. } => "journal",
        Pane::Headlines { .. } => "headlines",
    }
}

/// Order in which whole panes are dropped when cutting detail is not enough (first dropped
/// first). The tape and levels go last: they are the percept.
const DROP_ORDER: &[&str] = &[
    "headlines",
    "journal",
    "blotter",
    "gex",
    "skew",
    "velocity",
    "chain",
    "plans",
    "kernel",
    "levels",
    "tape",
];

/// Render a View as a Frame. `count` measures tokens (cl100k in the desk); with a budget
/// detail is cut, then panes are dropped, and the Frame says what went, until it measures
/// within the budget. Only the header line is never cut (a wake's `why` is shortened to
/// `…` first): a header alone over the budget (an absurdly long tape or view name) leaves
/// the Frame over it, and `tokens` says by how much.
pub fn render_frame(
    view: &ast::View,
    input: &FrameInput<'_>,
    count: &dyn Fn(&str) -> usize,
) -> Rendered {
    let halving = !STEPPED.with(std::cell::Cell::get);
    render_frame_by(view, input, count, halving)
}

thread_local! {
    /// Set by [`with_strikes_stepped`]: strikes are cut one at a time.
    static STEPPED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run `f` with Frames on this thread cutting strikes one at a time, as before 2026-12-06:
/// the reference `tests/view.rs` holds the halving to, Frame for Frame.
#[doc(hidden)]
pub fn with_strikes_stepped<R>(f: impl FnOnce() -> R) -> R {
    STEPPED.with(|s| s.set(true));
    let r = f();
    STEPPED.with(|s| s.set(false));
    r
}

/// [`render_frame`]; `halving`: strikes are cut by halving (else one at a time, the
/// reference the tests hold the halving to).
fn render_frame_by(
    view: &ast::View,
    input: &FrameInput<'_>,
    count: &dyn Fn(&str) -> usize,
    halving: bool,
) -> Rendered {
    let budget = view
        .budget
        .as_ref()
        .and_then(|b| b.text.parse::<f64>().ok())
        .filter(|b| *b > 0.0)
        .map(|b| b as usize);
    let mut details: Vec<PaneDetail> = view
        .panes
        .iter()
        .map(|p| PaneDetail {
            pane: p.pane.clone(),
            blocks: TAPE_BLOCKS,
            rows: None,
            strikes: match &p.pane {
                Pane::Chain {
                    strikes: Some(n), ..
                } => n.text.parse().unwrap_or(3),
                Pane::Chain { .. } => 3,
                Pane::Gex { .. } => 5,
                _ => 0,
            },
            dropped: false,
        })
        .collect();
    let mut dropped: Vec<String> = Vec::new();
    let name = &view.name.text;
    loop {
        let text = compose(name, input, &details, &dropped);
        let tokens = count(&text);
        let Some(b) = budget else {
            return Rendered {
                text,
                tokens,
                budget,
                dropped,
            };
        };
        if tokens <= b {
            return Rendered {
                text,
                tokens,
                budget,
                dropped,
            };
        }
        if let Some(i) = strike_step(&details).filter(|_| halving) {
            // Strikes go one each side at a time until the Frame fits (or one is left).
            // Fewer strikes never measure more, so the most that fit are found by halving,
            // with the result of stepping down one by one: log N renderings where stepping
            // took N (`chain 0dte strikes 1000` under `budget 100` took 9 s of CPU a Frame
            // before 2026-12-06).
            let (mut lo, mut hi, mut most) = (1, details[i].strikes - 1, 1);
            while lo <= hi {
                let mid = lo + (hi - lo) / 2;
                details[i].strikes = mid;
                let mut d = dropped.clone();
                note(&mut d, &strikes_cut(&details[i]));
                if count(&compose(name, input, &details, &d)) <= b {
                    most = mid;
                    lo = mid + 1;
                } else {
                    hi = mid - 1;
                }
            }
            details[i].strikes = most;
            note(&mut dropped, &strikes_cut(&details[i]));
            continue;
        }
        if !reduce(&mut details, &mut dropped, input) {
            // Nothing left to cut, and the list of what was dropped is itself too long:
            // it says so in a word (a view with no pane dropped nothing). Then a wake's
            // `why` (its trigger, of any length) goes to `…`. The rest of the header (tape,
            // time, view, who woke it) is never cut: a Frame without its time is worse
            // than one over budget, and a budget under [`MIN_VIEW_BUDGET`] is refused
            // before it gets here.
            let every = if dropped.is_empty() {
                Vec::new()
            } else {
                vec!["every pane".to_string()]
            };
            let mut text = compose(name, input, &details, &every);
            if count(&text) > b
                && let Some(w) = &input.woke
            {
                let short = FrameInput {
                    woke: Some(Woke {
                        by: w.by.clone(),
                        why: "…".into(),
                    }),
                    ..*input
                };
                text = compose(name, &short, &details, &every);
            }
            let tokens = count(&text);
            return Rendered {
                text,
                tokens,
                budget,
                dropped,
            };
        }
    }
}

/// The pane whose strikes [`reduce`] cuts next: none while a tape pane has older blocks to
/// cut (they go first), else the first chain or gex pane with more than one strike a side.
fn strike_step(details: &[PaneDetail]) -> Option<usize> {
    let blocks_first = details
        .iter()
        .any(|d| !d.dropped && matches!(d.pane, Pane::Tape { .. }) && d.blocks > 1);
    if blocks_first {
        return None;
    }
    strike_pane(details)
}

/// The first chain or gex pane with more than one strike a side to cut.
fn strike_pane(details: &[PaneDetail]) -> Option<usize> {
    details.iter().position(|d| {
        !d.dropped && matches!(d.pane, Pane::Chain { .. } | Pane::Gex { .. }) && d.strikes > 1
    })
}

/// What the Frame says a pane's strikes were cut to (`chain: strikes beyond ±2`).
fn strikes_cut(d: &PaneDetail) -> String {
    format!("{}: strikes beyond ±{}", pane_name(&d.pane), d.strikes)
}

/// One step of reduction; false when nothing is left to reduce.
fn reduce(details: &mut [PaneDetail], dropped: &mut Vec<String>, input: &FrameInput<'_>) -> bool {
    // 1. Older tape blocks.
    for d in details.iter_mut().filter(|d| !d.dropped) {
        if let Pane::Tape { bar } = &d.pane
            && d.blocks > 1
        {
            d.blocks -= 1;
            let size = bar
                .as_ref()
                .map(|b| b.seconds() as u32)
                .unwrap_or(DEFAULT_BAR_SECS);
            note(
                dropped,
                &format!(
                    "tape {}: older keyframe blocks",
                    fmt_size(effective_size(size))
                ),
            );
            return true;
        }
    }
    // 2. Chain and gex strikes, down to one each side.
    if let Some(i) = strike_pane(details) {
        details[i].strikes -= 1;
        note(dropped, &strikes_cut(&details[i]));
        return true;
    }
    // 3. Older tape rows inside the last block (keep at least 6).
    for d in details.iter_mut().filter(|d| !d.dropped) {
        if let Pane::Tape { bar } = &d.pane {
            let size = bar
                .as_ref()
                .map(|b| b.seconds() as u32)
                .unwrap_or(DEFAULT_BAR_SECS);
            let now = input.market.now().unwrap_or(Ts(0));
            let have = visible_bars(input.bars, size, now, d.blocks).len();
            let rows = d.rows.unwrap_or(have);
            if rows > 6 {
                d.rows = Some((rows * 2 / 3).max(6));
                note(
                    dropped,
                    &format!("tape {}: older rows", fmt_size(effective_size(size))),
                );
                return true;
            }
        }
    }
    // 4. Whole panes.
    for name in DROP_ORDER {
        if let Some(d) = details
            .iter_mut()
            .find(|d| !d.dropped && pane_name(&d.pane) == *name)
        {
            d.dropped = true;
            dropped.push(format!("{name} pane"));
            return true;
        }
    }
    false
}

/// Record a cut; a later cut of the same kind (`gex: strikes beyond ±2` after `±3`) replaces
/// the earlier one.
fn note(dropped: &mut Vec<String>, s: &str) {
    let kind = s.split(['±']).next().unwrap_or(s);
    if let Some(e) = dropped.iter_mut().find(|e| e.starts_with(kind)) {
        *e = s.to_string();
    } else {
        dropped.push(s.to_string());
    }
}

fn compose(
    view_name: &str,
    input: &FrameInput<'_>,
    details: &[PaneDetail],
    dropped: &[String],
) -> String {
    let mut out = String::with_capacity(2048);
    let now = input.market.now();
    let t = now
        .map(|t| t.to_string())
        .unwrap_or_else(|| "before-open".into());
    let t = t.split('.').next().unwrap_or("").to_string();
    let _ = write!(out, "FRAME tape={} t={} view={}", input.tape, t, view_name);
    if let Some(w) = &input.woke {
        let _ = write!(out, " woke={} why={}", w.by, w.why);
    }
    out.push('\n');
    for d in details.iter().filter(|d| !d.dropped) {
        let start = out.len();
        pane(&mut out, d, input);
        if input.width > 0 {
            let section = out.split_off(start);
            out.push_str(&wrap(&section, input.width));
        }
    }
    if !dropped.is_empty() {
        let _ = writeln!(out, "(over budget, dropped: {})", dropped.join("; "));
    }
    out
}

fn wrap(s: &str, width: usize) -> String {
    let mut out = String::with_capacity(s.len());
    for line in s.lines() {
        let mut cur = 0;
        for word in line.split(' ') {
            let w = word.chars().count();
            if cur > 0 && cur + 1 + w > width {
                out.push_str("\n  ");
                cur = 2;
            } else if cur > 0 {
                out.push(' ');
                cur += 1;
            }
            out.push_str(word);
            cur += w;
        }
        out.push('\n');
    }
    out
}

fn fmt_size(secs: u32) -> String {
    if secs.is_multiple_of(3600) {
        format!("{}h", secs / 3600)
    } else if secs.is_multiple_of(60) {
        format!("{}m", secs / 60)
    } else {
        format!("{secs}s")
    }
}

/// The bars the tape pane shows: the last `blocks` keyframe blocks of completed bars.
pub fn visible_bars(bars: &Bars, size_secs: u32, now: Ts, blocks: usize) -> Vec<Bar> {
    let all = bars.completed(size_secs, now);
    let k = keyframe_every(size_secs);
    if all.is_empty() {
        return all;
    }
    let current_block = (all.len() - 1) / k;
    let first_block = current_block.saturating_sub(blocks.saturating_sub(1));
    all[first_block * k..].to_vec()
}

/// Basis points of `px` against `anchor`, rounded to the nearest integer.
pub fn bp(px: Px, anchor: Px) -> i64 {
    if anchor.raw() == 0 {
        return 0;
    }
    let num = (px.raw() - anchor.raw()) as i128 * 10_000;
    let den = anchor.raw() as i128;
    // Round half away from zero, in integers (deterministic on every machine).
    let q = (num.abs() * 2 + den.abs()) / (den.abs() * 2);
    (if (num < 0) != (den < 0) { -q } else { q }) as i64
}

fn hhmm(ts: Ts, with_secs: bool) -> String {
    if with_secs { ts.hhmmss() } else { ts.hhmm() }
}

fn pane(out: &mut String, d: &PaneDetail, input: &FrameInput<'_>) {
    let m = input.market;
    let sig = input.signal.as_str();
    let exec = input.exec.as_str();
    match &d.pane {
        Pane::Tape { bar } => {
            let size = bar
                .as_ref()
                .map(|b| b.seconds() as u32)
                .unwrap_or(DEFAULT_BAR_SECS);
            let eff = effective_size(size);
            let now = m.now().unwrap_or(Ts(0));
            out.push_str(&tape_section(input.bars, size, now, d.blocks, d.rows));
            if eff != size.max(1) {
                let _ = writeln!(out, "(tape bars rounded to {})", fmt_size(eff));
            }
        }
        Pane::Levels => {
            let _ = writeln!(out, "[levels {sig}]");
            let f = |x: Option<Px>| x.map(|p| p.to_string()).unwrap_or_else(|| "?".into());
            let v = m
                .vwap(sig)
                .map(|v| format!("{v:.2}"))
                .unwrap_or_else(|| "?".into());
            let _ = writeln!(
                out,
                "spot {} hod {} lod {} vwap {} open {} prior-close {}",
                f(m.spot(sig)),
                f(m.hod(sig)),
                f(m.lod(sig)),
                v,
                f(m.open_px(sig)),
                f(m.prior_close(sig))
            );
            if exec != sig {
                let _ = writeln!(out, "{exec} spot {}", f(m.spot(exec)));
            }
        }
        Pane::Chain { expiry, .. } => {
            let e = to_expiry(expiry);
            let n = d.strikes as i32;
            let _ = writeln!(
                out,
                "[chain {exec} {} ±{n}: strike C fair bid ask | P fair bid ask]",
                expiry_text(expiry)
            );
            if m.strike_step(exec).is_none() {
                // The tape lists no chain for this symbol (an imported tape without
                // options): said, where the header stood alone over no rows.
                out.push_str("(no option chain on this tape)\n");
            }
            for off in -n..=n {
                let Some(k) = m.strike_for(exec, off) else {
                    continue;
                };
                let c = m.quote(exec, e, k, Right::Call);
                let p = m.quote(exec, e, k, Right::Put);
                if let (Some(c), Some(p)) = (c, p) {
                    let atm = if off == 0 { "*" } else { "" };
                    let k = strike_text(k);
                    // A contract the tape quotes is marked `q` (its bid/ask are the
                    // tape's); unmarked prices are the model's.
                    let qc = if c.quoted { " q" } else { "" };
                    let qp = if p.quoted { " q" } else { "" };
                    let _ = writeln!(
                        out,
                        "{k}{atm} C {:.2} {} {}{qc} | P {:.2} {} {}{qp}",
                        c.fair, c.bid, c.ask, p.fair, p.bid, p.ask
                    );
                }
            }
        }
        Pane::Gex { expiry } => {
            let e = to_expiry(expiry);
            let n = d.strikes as i32;
            let _ = writeln!(
                out,
                "[gex {exec} {} $ per 1% by strike]",
                expiry_text(expiry)
            );
            let mut total = 0.0;
            let mut cells = Vec::new();
            for off in -n..=n {
                if let Some(k) = m.strike_for(exec, off)
                    && let Some(g) = m.gex(exec, e, k)
                {
                    total += g;
                    cells.push(format!("{} {}", strike_text(k), compact(g)));
                }
            }
            if cells.is_empty() {
                out.push_str("? (no spot yet)\n");
            } else {
                let _ = writeln!(out, "{}", cells.join(", "));
                let _ = writeln!(out, "net {}", compact(total));
            }
        }
        Pane::Skew { delta } => {
            let dv = delta.value() / 100.0;
            let e = Expiry::ZeroDte;
            let call = m
                .strike_for_delta(exec, e, Right::Call, dv, 40)
                .and_then(|k| m.quote(exec, e, k, Right::Call).map(|q| (k, q.iv)));
            let put = m
                .strike_for_delta(exec, e, Right::Put, -dv, 40)
                .and_then(|k| m.quote(exec, e, k, Right::Put).map(|q| (k, q.iv)));
            match (call, put) {
                (Some((kc, ic)), Some((kp, ip))) => {
                    let _ = writeln!(
                        out,
                        "[skew {exec} 0dte {}d] call {} iv {:.1}% | put {} iv {:.1}% | rr {:+.1} vol pts",
                        delta.text,
                        strike_text(kc),
                        ic * 100.0,
                        strike_text(kp),
                        ip * 100.0,
                        (ic - ip) * 100.0
                    );
                }
                _ => {
                    let _ = writeln!(out, "[skew {exec} {}d] ?", delta.text);
                }
            }
        }
        Pane::Velocity { window } => {
            let secs = window.seconds().min(u64::from(u32::MAX)) as u32;
            let w = format!("{}{}", window.text, unit(window));
            match m.velocity(sig, secs) {
                Some(v) => {
                    let rank = percentile_rank(m, sig, secs, v)
                        .map(|r| format!("p{r:.0}"))
                        .unwrap_or_else(|| "p?".into());
                    let _ = writeln!(out, "[velocity {sig} {w}] {v:+.3}% rank {rank} of today");
                }
                None => {
                    let _ = writeln!(out, "[velocity {sig} {w}] ?");
                }
            }
        }
        Pane::Kernel => {
            let s = input.snapshot;
            let _ = write!(
                out,
                "[kernel] pnl {} ({:+.2}R) risk used {:.2}R",
                whole_usd(s.pnl_usd),
                s.pnl_r,
                s.budget_used_r
            );
            if let Some(b) = s.budget_r {
                let _ = write!(out, " of {}R", budget_text(b));
            }
            let _ = write!(out, " wakes {}", s.wakes_used);
            if let Some(b) = s.wakes_budget {
                let _ = write!(out, "/{b}");
            }
            out.push('\n');
            if s.positions.is_empty() && s.orders.is_empty() {
                out.push_str("flat, no resting orders\n");
            }
            for p in &s.positions {
                let _ = writeln!(
                    out,
                    "pos {} {:+} {} avg {:.2} mark {:.2} open {} real {}",
                    p.plan,
                    p.qty,
                    p.instrument,
                    p.avg_px,
                    p.mark,
                    whole_usd(p.open_usd),
                    whole_usd(p.real_usd)
                );
            }
            for o in &s.orders {
                let _ = writeln!(
                    out,
                    "order {} {} {} {} @ {:.2}",
                    o.plan, o.side, o.qty, o.instrument, o.limit
                );
            }
        }
        Pane::Plans => {
            let s = input.snapshot;
            out.push_str("[plans]\n");
            if s.plans.is_empty() {
                out.push_str("none armed\n");
            }
            for p in &s.plans {
                let _ = write!(
                    out,
                    "{} {} {:.2}/{}R ttl {}",
                    p.name,
                    crate::bus::canon::state_name(p.state),
                    p.used_r,
                    budget_text(p.budget_r),
                    p.ttl
                );
                if !p.note.is_empty() {
                    let _ = write!(out, " ({})", p.note);
                }
                out.push('\n');
            }
        }
        Pane::Blotter { last } => {
            let n = count_of(last, 5);
            let s = input.snapshot;
            out.push_str("[blotter]\n");
            if s.fills.is_empty() {
                out.push_str("no fills\n");
            }
            for f in s.fills.iter().rev().take(n).rev() {
                let _ = writeln!(
                    out,
                    "{} {} {} {} {} @ {:.2}{}",
                    f.time,
                    f.plan,
                    f.side,
                    f.qty,
                    f.instrument,
                    f.px,
                    if f.quoted { " (quoted)" } else { "" }
                );
            }
        }
        Pane::Journal { last } => {
            let n = count_of(last, 5);
            let s = input.snapshot;
            out.push_str("[journal]\n");
            if s.journal.is_empty() {
                out.push_str("empty\n");
            }
            for j in s.journal.iter().rev().take(n).rev() {
                let _ = writeln!(out, "{} {}: {}", j.time, j.author, one_line(&j.text));
            }
        }
        Pane::Headlines { last } => {
            let n = count_of(last, 3);
            out.push_str("[headlines]\n");
            let h = m.headlines();
            if h.is_empty() {
                out.push_str("none\n");
            }
            for x in h.iter().rev().take(n).rev() {
                let _ = writeln!(out, "{} {}", hhmm(x.ts, false), one_line(&x.text));
            }
        }
    }
}

/// Free text from a tape or an author (a headline, a journal line) as one line of a Frame:
/// a line break or tab becomes a space, and every other control character (ESC and the rest
/// of C0, DEL, C1) or bidirectional / line-separator format character becomes `\u{FFFD}`.
/// So a headline can neither forge a line of the Frame (a fake `[kernel]` section the agent
/// would read as the desk's) nor send an escape sequence to the terminal that shows it.
pub fn one_line(s: &str) -> std::borrow::Cow<'_, str> {
    fn bad(c: char) -> bool {
        c.is_control()
            || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    }
    if !s.chars().any(bad) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(
        s.chars()
            .map(|c| match c {
                '\n' | '\r' | '\t' => ' ',
                c if bad(c) => '\u{FFFD}',
                c => c,
            })
            .collect(),
    )
}

/// The tape pane: vertical, newest last, open/high/low/close of each completed bar in basis
/// points against the block's keyframe anchor (the open of the block's first bar), which a
/// keyframe line `@HH:MM <price>` stamps every [`keyframe_every`] bars. Appending a bar
/// appends one line.
pub fn tape_section(
    bars: &Bars,
    size_secs: u32,
    now: Ts,
    blocks: usize,
    rows: Option<usize>,
) -> String {
    let eff = effective_size(size_secs);
    let k = keyframe_every(size_secs);
    let all = bars.completed(size_secs, now);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "[tape {} {}: bp vs anchor, rows time open high low close]",
        bars.sym(),
        fmt_size(eff)
    );
    if all.is_empty() {
        out.push_str("no completed bar yet\n");
        return out;
    }
    let current_block = (all.len() - 1) / k;
    let first_block = current_block.saturating_sub(blocks.max(1) - 1);
    let mut from = first_block * k;
    if let Some(r) = rows {
        from = from.max(all.len().saturating_sub(r));
    }
    let secs = !eff.is_multiple_of(60);
    let mut anchor: Option<Px> = None;
    for (i, b) in all.iter().enumerate().skip(from) {
        if i % k == 0 || anchor.is_none() {
            // The anchor is the first bar of this block (even when rows were cut).
            let a = all[(i / k) * k];
            anchor = Some(a.open);
            let _ = writeln!(out, "@{} {}", hhmm(a.start, secs), a.open);
        }
        let a = anchor.unwrap_or(b.open);
        let _ = writeln!(
            out,
            "{} {} {} {} {}",
            hhmm(b.start, secs),
            bp(b.open, a),
            bp(b.high, a),
            bp(b.low, a),
            bp(b.close, a)
        );
    }
    out
}

/// Dollars to the whole dollar with their sign, as the Blotter writes money: `+$65`,
/// `-$68`; what rounds to nothing is `+$0` (never `-$0`).
fn whole_usd(x: f64) -> String {
    let v = x.round();
    if v < 0.0 {
        format!("-${:.0}", -v)
    } else {
        format!("+${:.0}", v.abs())
    }
}

/// A strike without trailing zeros (`517`, `517.5`).
fn strike_text(k: Px) -> String {
    k.trimmed()
}

fn count_of(n: &Option<ast::Num>, default: usize) -> usize {
    n.as_ref()
        .and_then(|n| n.text.parse::<usize>().ok())
        .unwrap_or(default)
}

fn unit(d: &ast::Dur) -> char {
    match d.unit {
        ast::DurUnit::S => 's',
        ast::DurUnit::M => 'm',
        ast::DurUnit::H => 'h',
    }
}

fn compact(x: f64) -> String {
    let a = x.abs();
    let sign = if x < 0.0 { "-" } else { "+" };
    if a >= 1e9 {
        format!("{sign}{:.1}B", a / 1e9)
    } else if a >= 1e6 {
        format!("{sign}{:.1}M", a / 1e6)
    } else if a >= 1e3 {
        format!("{sign}{:.0}k", a / 1e3)
    } else {
        format!("{sign}{a:.0}")
    }
}

/// The language's expiry as the market's.
pub fn to_expiry(e: &ast::Expiry) -> Expiry {
    match e {
        ast::Expiry::Dte(0) => Expiry::ZeroDte,
        ast::Expiry::Dte(_) => Expiry::OneDte,
        ast::Expiry::Date(d) => crate::market::Date::parse(d)
            .map(Expiry::Date)
            .unwrap_or(Expiry::ZeroDte),
    }
}

fn expiry_text(e: &ast::Expiry) -> String {
    match e {
        ast::Expiry::Dte(n) => format!("{n}dte"),
        ast::Expiry::Date(d) => d.clone(),
    }
}

/// Where today's velocity samples put `v`: the largest percentile p (0..100) with
/// `percentile(p) <= v`, by bisection on the monotone percentile function.
pub fn percentile_rank(m: &MarketState, sym: &str, secs: u32, v: f64) -> Option<f64> {
    let series = Series::Velocity(secs);
    let lo_v = m.percentile(sym, series, 0.0)?;
    if v < lo_v {
        return Some(0.0);
    }
    let (mut lo, mut hi) = (0.0f64, 100.0f64);
    if m.percentile(sym, series, 100.0)? <= v {
        return Some(100.0);
    }
    for _ in 0..20 {
        let mid = (lo + hi) / 2.0;
        match m.percentile(sym, series, mid) {
            Some(x) if x <= v => lo = mid,
            Some(_) => hi = mid,
            None => return None,
        }
    }
    Some(lo)
}

/// A budget in R as the View and the desk show it: two decimals (`0.50`, `1.00`), as every
/// budget read, unless two decimals would not say it: then as written, its shortest exact
/// form (`0.003`, `0.125`), where `{:.2}` gave `0.00R` for a budget under 0.005R.
pub fn budget_text(r: f64) -> String {
    let two = format!("{r:.2}");
    match two.parse::<f64>() {
        Ok(back) if back == r => two,
        _ => format!("{r}"),
    }
}
