//! The Bus pane as a log people read: one row per event, `time  kind  plan  summary`, a
//! colour per kind, `/` filters by kind or plan, repeated events collapse into one row with
//! a count, new events scroll in unless the person has scrolled up (like `less +F`), and
//! Enter shows the event whole (a Frame's text as text, not with `\n`).
//!
//! The rows are the snapshot's Bus lines decoded into typed [`Event`]s, once each, as they
//! arrive ([`Log::sync`]); the desk holds the decoded rows as a view cache, never market or
//! engine state.

use super::fit;
use super::theme::Theme;
use crate::bus::{BusSide, Event};
use crate::session::SessionSnapshot;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use std::cell::Cell;
use std::collections::HashMap;

/// The most rows of chatter (re-prices, marks, suppressions) the log keeps; past it the
/// oldest chatter goes first (`Log::trim`).
pub const KEEP: usize = 5000;

/// The most rows the log keeps in all.
pub const KEEP_ALL: usize = 50_000;

/// Rows over [`KEEP`] before a trim (trimmed in batches, not at every event).
const TRIM_SLACK: usize = 500;

/// A kind of event, as the log colours it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Session start and end.
    Session,
    /// A document armed.
    Armed,
    /// A plan's state changed.
    Plan,
    /// A plan fired.
    Fired,
    /// An order placed, repriced or cancelled.
    Order,
    /// A fill or a settlement.
    Fill,
    /// A veto, a clamp, a pod halt.
    Risk,
    /// A mark or an excursion.
    Mark,
    /// A wake fired.
    Wake,
    /// A wake suppressed.
    Suppressed,
    /// A Frame delivered.
    Frame,
    /// A turn routed, rejected or repaired.
    Turn,
    /// A stand-down or a cancel.
    StandDown,
    /// A headline.
    Headline,
    /// An error.
    Error,
    /// Anything else (a line that does not decode, a gap).
    Other,
}

impl Kind {
    /// The kind's word in the log's kind column (what `/` matches, with the event type).
    pub fn label(self) -> &'static str {
        match self {
            Kind::Session => "session",
            Kind::Armed => "armed",
            Kind::Plan => "plan",
            Kind::Fired => "fire",
            Kind::Order => "order",
            Kind::Fill => "fill",
            Kind::Risk => "risk",
            Kind::Mark => "mark",
            Kind::Wake => "wake",
            Kind::Suppressed => "suppressed",
            Kind::Frame => "frame",
            Kind::Turn => "turn",
            Kind::StandDown => "stand-down",
            Kind::Headline => "headline",
            Kind::Error => "error",
            Kind::Other => "other",
        }
    }

    /// The kind's word in a narrow Log's kind column, at most five columns (what `/` also
    /// matches): `suppressed` and `stand-down` took ten of a 46-column row and cut the plan's
    /// name in every order and fill row (`vwa…: #5 sell 48 @ 518.02…` at 160x48, with the
    /// order's number before the quantity then).
    pub fn short(self) -> &'static str {
        match self {
            Kind::Session => "tape",
            Kind::Suppressed => "muted",
            Kind::StandDown => "stop",
            Kind::Headline => "news",
            k => k.label(),
        }
    }
}

/// One event, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Its number on the Bus (0 = the first).
    pub no: u64,
    /// Tape time `HH:MM:SS` (empty when the event has none).
    pub time: String,
    /// Its kind.
    pub kind: Kind,
    /// The event type as the Bus spells it (`wake-suppressed`).
    pub ty: String,
    /// The plan it is about (empty when none). A re-price or a cancellation names only its
    /// order on the Bus: the Log gives it the plan of that order's `order-placed`.
    pub plan: String,
    /// The order it is about, where the event names one.
    pub order: Option<u64>,
    /// What happened, in words.
    pub summary: String,
    /// The canonical JSON line.
    pub json: String,
}

/// The type of the row that counts events the Log left out (it is no Bus event).
const GAP: &str = "gap";

impl Row {
    /// The row counting events left out ([`GAP`]), not an event.
    fn is_gap(&self) -> bool {
        self.ty == GAP
    }
}

/// One row on screen: a run of equal rows collapsed (`first..=last` in [`Log::rows`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shown {
    /// The first row of the run.
    pub first: usize,
    /// The last row of the run (the one shown and inspected).
    pub last: usize,
    /// Rows in the run.
    pub count: usize,
}

/// The log's state: the decoded rows, the filter, the selection.
#[derive(Debug, Clone, Default)]
pub struct Log {
    rows: Vec<Row>,
    next: u64,
    segment: u32,
    /// A whole-book `stand-down` not yet named by its turn (its Bus number), and the
    /// author and time of a STAND-DOWN turn not yet matched to its event.
    stand_down_event: Option<u64>,
    stand_down_turn: Option<(String, String)>,
    view: Vec<Shown>,
    /// The filter (`/`): every word must match the kind, the event type or the plan.
    pub filter: String,
    /// The selected shown row (`None`: follow the newest).
    pub sel: Option<usize>,
    /// Rows that fit at the last draw (the page step).
    pub page: Cell<usize>,
    /// Each order's plan, from its `order-placed` (never chatter, so never left out): a
    /// re-price or a cancellation is shown, and filtered, under its plan.
    order_plans: HashMap<u64, String>,
}

fn px(p: crate::market::Px) -> String {
    format!("{:.2}", p.to_f64())
}

fn side(s: BusSide) -> &'static str {
    match s {
        BusSide::Buy => "buy",
        BusSide::Sell => "sell",
    }
}

/// An owner on the Bus (`person`, `agent`) as the log names it: `you`, or the seated
/// agent (named by [`Log::sync`], which knows its name).
fn who(owner: &str) -> &str {
    match owner {
        "person" => "you",
        "agent" => AGENT,
        o => o,
    }
}

/// A `document-armed` in words: `armed a, b by you`, and the plans sent again unchanged,
/// which stand as they were (`; kept hold as it stands (sent unchanged)`).
fn armed_and_kept(plans: &[String], kept: &[String], by: Option<&str>) -> String {
    let new: Vec<&str> = plans
        .iter()
        .filter(|p| !kept.contains(p))
        .map(String::as_str)
        .collect();
    let mut s = if new.is_empty() && !kept.is_empty() {
        "sent again".to_string()
    } else if new.is_empty() {
        // Every plan of the document was left out (its name another owner's live plan: the
        // `error` row before says so): the row read `armed  by …`, naming no plan.
        "armed no plan".to_string()
    } else {
        format!("armed {}", new.join(", "))
    };
    if let Some(o) = by {
        s.push_str(" by ");
        s.push_str(o);
    }
    if !kept.is_empty() {
        s.push_str(&format!(
            "; kept {} as it stands (sent unchanged)",
            kept.join(", ")
        ));
    }
    s
}

/// The agent in a summary until [`Log::sync`] puts its name there.
const AGENT: &str = "the agent";

/// A whole-book stand-down's summary until its turn names who stood down.
const WHOLE_BOOK: &str = "stand-down of every plan: ";

/// An instrument as the Log names it, the way a trader reads a contract: an option of the
/// session's own date `date` (`YYYY-MM-DD`) by its symbol, strike and right
/// (`SPY 2025-04-09 518.00 C` reads `SPY 518C`, `518.50` reads `518.5C`), one of another day
/// with its expiry after them (`SPY 518C 04-10`, the year too when it is another year);
/// shares and anything else as the Bus names them (`SPY shares`). Until 2026-12-06 the Log
/// wrote the long name, date first, and a row cut it before the strike at every size
/// (`buy 2 @ 0.49 SPY…` at 160x48, `SPY 2025-04-09…` at 200x60).
pub fn trader_leg(leg: &str, date: &str) -> String {
    let Some((sym, expiry, strike, right)) = option_parts(leg) else {
        return leg.to_string();
    };
    let Some((y, md)) = expiry.split_once('-') else {
        return leg.to_string();
    };
    if expiry == date {
        format!("{sym} {strike}{right}")
    } else if date.split_once('-').is_some_and(|(dy, _)| dy == y) {
        format!("{sym} {strike}{right} {md}")
    } else {
        format!("{sym} {strike}{right} {expiry}")
    }
}

/// An option's leg as the Bus writes it (`SPY 2025-04-09 518.00 C`) in its parts: symbol,
/// expiry, strike without the zeros after its point ([`fit::trim_decimal`]: `518`,
/// `518.5`) and right; `None` for shares or anything else. The Log's and the chart's short
/// names of a contract are made from it.
pub(crate) fn option_parts(leg: &str) -> Option<(&str, &str, &str, &str)> {
    let parts: Vec<&str> = leg.split(' ').collect();
    let [sym, expiry, strike, right @ ("C" | "P")] = parts.as_slice() else {
        return None;
    };
    strike
        .parse::<f64>()
        .is_ok()
        .then(|| (*sym, *expiry, fit::trim_decimal(strike), *right))
}

/// Decode one canonical Bus line into a row, in a session of date `date` (`YYYY-MM-DD`,
/// which names its options short: [`trader_leg`]).
pub fn decode(no: u64, line: &str, date: &str) -> Row {
    let ty = serde_json::from_str::<serde_json::Value>(line)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string))
        .unwrap_or_else(|| "?".into());
    let mut row = Row {
        no,
        time: String::new(),
        kind: Kind::Other,
        ty,
        plan: String::new(),
        order: None,
        summary: String::new(),
        json: line.to_string(),
    };
    let Ok(ev) = serde_json::from_str::<Event>(line) else {
        row.summary = fit::fit(line, 120);
        return row;
    };
    let hms = crate::market::Ts::hhmmss;
    let name = |l: &str| trader_leg(l, date);
    let (ts, kind, plan, summary) = match ev {
        Event::SessionStart {
            tape,
            fill_model,
            r_usd,
            open,
            ..
        } => (
            Some(open),
            Kind::Session,
            String::new(),
            format!("start {tape} · fill {fill_model} · 1R = ${}", px(r_usd)),
        ),
        Event::DocumentArmed {
            ts,
            plans,
            kept,
            owner,
            ..
        } => (
            Some(ts),
            Kind::Armed,
            plans.first().cloned().unwrap_or_default(),
            armed_and_kept(&plans, &kept, owner.as_deref().map(who)),
        ),
        Event::PlanState {
            ts,
            plan,
            state,
            reason,
        } => (
            Some(ts),
            Kind::Plan,
            plan,
            match reason {
                Some(r) => format!("{}: {r}", crate::bus::canon::state_name(state)),
                None => crate::bus::canon::state_name(state).to_string(),
            },
        ),
        Event::PlanFired { ts, plan, clause } => {
            (Some(ts), Kind::Fired, plan, format!("fired {clause}"))
        }
        Event::OrderPlaced {
            ts,
            order,
            plan,
            leg,
            side: s,
            qty,
            limit,
            ..
        } => {
            row.order = Some(order);
            (
                Some(ts),
                Kind::Order,
                plan,
                // As a fill reads: quantity and limit first, the instrument's long name and
                // the order's number after them (`sell 48 @ 518.02 SPY shares (#5)`): a
                // narrow row keeps the plan's name and the price, where `#5 ` before them
                // cut the name to `vwa…` at 160x48.
                format!(
                    "{} {qty} @ {} {} (#{order})",
                    side(s),
                    px(limit),
                    name(&leg)
                ),
            )
        }
        Event::OrderRepriced {
            ts,
            order,
            limit,
            reason,
        } => {
            row.order = Some(order);
            (
                Some(ts),
                Kind::Order,
                String::new(),
                format!("#{order} repriced to {} ({reason})", px(limit)),
            )
        }
        Event::OrderCancelled { ts, order, reason } => {
            row.order = Some(order);
            (
                Some(ts),
                Kind::Order,
                String::new(),
                format!("#{order} cancelled: {reason}"),
            )
        }
        Event::Fill {
            ts,
            order,
            plan,
            leg,
            side: s,
            qty,
            px: p,
            ..
        } => (
            Some(ts),
            Kind::Fill,
            plan,
            // Quantity and price first: a narrow row cuts the instrument's long name, not
            // the price (`sell 48 @ 518.08 SPY shares`).
            format!("{} {qty} @ {} {} (#{order})", side(s), px(p), name(&leg)),
        ),
        Event::Clamp {
            ts,
            plan,
            from_qty,
            to_qty,
            budget,
            reason,
            ..
        } => (
            Some(ts),
            Kind::Risk,
            plan,
            format!("clamp qty {from_qty}→{to_qty} {budget}: {reason}"),
        ),
        Event::Veto {
            ts,
            plan,
            clause,
            budget,
            reason,
            ..
        } => (
            Some(ts),
            Kind::Risk,
            plan,
            format!("VETO {clause}: {reason} ({budget})"),
        ),
        Event::Settlement {
            ts,
            plan,
            leg,
            qty,
            px: p,
            ..
        } => (
            Some(ts),
            Kind::Fill,
            plan,
            format!("settled {qty} @ {} {}", px(p), name(&leg)),
        ),
        Event::Mark {
            ts,
            plan,
            leg,
            px: p,
        } => (
            Some(ts),
            Kind::Mark,
            plan,
            format!("mark {} {}", name(&leg), px(p)),
        ),
        Event::Headline { ts, text } => (Some(ts), Kind::Headline, String::new(), text),
        Event::WakeFired {
            ts,
            wake,
            why,
            used,
            ..
        } => (
            Some(ts),
            Kind::Wake,
            String::new(),
            format!("{wake}: {why} (wake {used} today)"),
        ),
        Event::WakeSuppressed { ts, wake, reason } => (
            Some(ts),
            Kind::Suppressed,
            String::new(),
            format!("{wake}: {reason}"),
        ),
        Event::ViewDelivered {
            ts,
            wake,
            view,
            tokens,
            dropped,
            ..
        } => (
            Some(ts),
            Kind::Frame,
            String::new(),
            format!(
                "{view} to {wake}: {tokens} tok{}",
                if dropped.is_empty() {
                    String::new()
                } else {
                    format!(", cut {}", dropped.join(", "))
                }
            ),
        ),
        Event::Turn { ts, wake, turn } => {
            let first = turn
                .kestrel
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
                .to_string();
            // The person's typed turn is said as theirs: its wake (`desk`) names no one.
            let who = match turn.author {
                crate::turn::AuthorKind::Human => "you",
                _ => wake.as_str(),
            };
            (
                Some(ts),
                Kind::Turn,
                String::new(),
                format!("{who}: {} {first}", turn.outcome.label()),
            )
        }
        Event::TurnRejected {
            ts,
            wake,
            by,
            outcome,
        } => (
            Some(ts),
            Kind::Turn,
            String::new(),
            format!("{wake}: {outcome} rejected by {by}"),
        ),
        Event::Repair { ts, wake, attempt } => (
            Some(ts),
            Kind::Turn,
            String::new(),
            format!("{wake}: {}", attempt_summary(&attempt)),
        ),
        // `owner` says whose book was de-armed (`agent`: the agent's own plans); absent, the
        // whole book was, and the event does not say by whom: the turn next to it does
        // ([`Log::sync`] names the author from it, and the agent by its name).
        Event::StandDown { ts, reason, owner } => (
            Some(ts),
            Kind::StandDown,
            String::new(),
            match owner.as_deref() {
                None => format!("{WHOLE_BOOK}{reason}"),
                Some(o) => format!("stand-down by {} (own plans): {reason}", who(o)),
            },
        ),
        Event::Cancel {
            ts,
            target,
            outcome,
        } => (
            Some(ts),
            Kind::StandDown,
            target.clone(),
            format!("cancel {target}: {outcome}"),
        ),
        Event::PodHalt {
            ts,
            pod,
            loss_usd,
            limit_usd,
        } => (
            Some(ts),
            Kind::Risk,
            String::new(),
            format!(
                "pod {pod} halted: loss ${} ≥ ${}",
                px(loss_usd),
                px(limit_usd)
            ),
        ),
        Event::Excursion { ts, plan, mae_usd } => (
            Some(ts),
            Kind::Mark,
            plan,
            format!("worst excursion ${}", px(mae_usd)),
        ),
        Event::Error { ts, plan, message } => {
            (Some(ts), Kind::Error, plan.unwrap_or_default(), message)
        }
        Event::SessionEnd { ts, tape_events } => (
            Some(ts),
            Kind::Session,
            String::new(),
            format!("end: {tape_events} tape events"),
        ),
    };
    row.time = ts.map(hms).unwrap_or_default();
    row.kind = kind;
    row.plan = plan;
    row.summary = summary.replace('\n', " ");
    row
}

/// An event line shown whole: its fields one per line, nested objects indented, and a
/// string with line breaks (a Frame, a turn's text) as its lines, not with `\n`.
pub fn inspect(line: &str) -> String {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
        return line.to_string();
    };
    let mut out = String::new();
    write_value(&mut out, None, &v, 0);
    out
}

fn write_value(out: &mut String, key: Option<&str>, v: &serde_json::Value, depth: usize) {
    use serde_json::Value;
    let pad = "  ".repeat(depth);
    let head = key
        .map(|k| format!("{pad}{k}:"))
        .unwrap_or_else(|| pad.clone());
    match v {
        Value::Object(m) => {
            if key.is_some() {
                out.push_str(&head);
                out.push('\n');
            }
            // The type first, then the rest in the Bus's (sorted) order.
            let d = if key.is_some() { depth + 1 } else { depth };
            if let Some(t) = m.get("type") {
                write_value(out, Some("type"), t, d);
            }
            for (k, x) in m.iter().filter(|(k, _)| k.as_str() != "type") {
                write_value(out, Some(k), x, d);
            }
        }
        Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) => {
            let items: Vec<String> = a.iter().map(scalar).collect();
            out.push_str(&format!("{head} [{}]\n", items.join(", ")));
        }
        Value::Array(a) => {
            out.push_str(&head);
            out.push('\n');
            for x in a {
                write_value(out, Some("-"), x, depth + 1);
            }
        }
        Value::String(s) if s.contains('\n') => {
            out.push_str(&format!("{head} |\n"));
            for l in s.trim_end_matches('\n').lines() {
                out.push_str(&format!("{pad}  {l}\n"));
            }
        }
        x => out.push_str(&format!("{head} {}\n", scalar(x))),
    }
}

fn scalar(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        x => x.to_string(),
    }
}

impl Log {
    /// Decode the snapshot's new Bus lines (a restart or a rewind starts over; events that
    /// scrolled past between two snapshots are said, as a gap).
    pub fn sync(&mut self, s: &SessionSnapshot) {
        let n = s.bus_events;
        let held = s.bus.len() as u64;
        let first = n.saturating_sub(held);
        if s.segment != self.segment || n < self.next {
            self.rows.clear();
            self.stand_down_event = None;
            self.stand_down_turn = None;
            self.order_plans.clear();
            self.segment = s.segment;
            // From the open: what the tail does not hold comes from the landmarks.
            self.next = 0;
            self.sel = None;
        }
        if self.next >= n {
            return;
        }
        let agent = s.agent.as_ref().map(|a| a.name.as_str());
        if self.next < first {
            // Events the snapshots did not carry line by line (a fast replay, or a run's
            // history at a restart): every fire, fill, turn and risk decision among them
            // from the landmarks, and one row for the chatter left out.
            let from = self.next;
            let marks = &s.landmarks;
            let start = marks.partition_point(|(no, _)| *no < from);
            let between: Vec<&(u64, std::sync::Arc<str>)> = marks[start..]
                .iter()
                .take_while(|(no, _)| *no < first)
                .collect();
            let left_out = (first - from).saturating_sub(between.len() as u64);
            if left_out > 0 {
                self.rows.push(Row {
                    no: from,
                    time: String::new(),
                    kind: Kind::Other,
                    ty: GAP.into(),
                    plan: String::new(),
                    order: None,
                    summary: format!(
                        "… {} left out (re-prices, marks, suppressions); every fire, fill and turn is kept",
                        fit::count(left_out, "older event")
                    ),
                    json: String::new(),
                });
            }
            for (no, line) in between {
                self.push(decode(*no, line, &s.date), agent);
            }
            self.next = first;
        }
        for no in self.next..n {
            if let Some(line) = usize::try_from(no - first).ok().and_then(|i| s.bus.get(i)) {
                self.push(decode(no, line, &s.date), agent);
            }
        }
        self.next = n;
        let keep = self.selected_no();
        self.trim();
        self.rebuild_at(keep);
    }

    /// Add a decoded row (the agent named, a stand-down's author found).
    fn push(&mut self, mut row: Row, agent: Option<&str>) {
        if let Some(name) = agent {
            name_agent(&mut row, name);
        }
        if let Some(order) = row.order {
            if row.ty == "order-placed" {
                self.order_plans.insert(order, row.plan.clone());
            } else if row.plan.is_empty()
                && let Some(plan) = self.order_plans.get(&order)
            {
                row.plan = plan.clone();
            }
        }
        self.rows.push(row);
        self.name_stand_down(agent);
    }

    /// Keep the rows within bounds: past [`KEEP`] rows of chatter the oldest chatter goes
    /// (its runs read fewer, from later); every other row stays, up to [`KEEP_ALL`] rows in
    /// all, past which the oldest go.
    fn trim(&mut self) {
        if self.rows.len() <= KEEP + TRIM_SLACK {
            return;
        }
        // A gap row (what went by unseen) goes with the chatter it counts.
        let goes = |r: &Row| is_chatter(r) || r.is_gap();
        let chatter = self.rows.iter().filter(|r| goes(r)).count();
        if chatter > KEEP + TRIM_SLACK {
            let mut drop = chatter - KEEP;
            self.rows.retain(|r| {
                if drop > 0 && goes(r) {
                    drop -= 1;
                    false
                } else {
                    true
                }
            });
        }
        if self.rows.len() > KEEP_ALL {
            let cut = self.rows.len() - KEEP_ALL;
            self.rows.drain(..cut);
        }
    }

    /// Name who stood down a whole book. The `stand-down` event says whose book only when
    /// it was an agent's own (`owner`); a person's (the desk's kill switch) and a headless
    /// author's carry none, so the log takes the author from the STAND-DOWN turn at the same
    /// time: a person's turn is put on the Bus after its act, an author's before it.
    fn name_stand_down(&mut self, agent: Option<&str>) {
        let Some(row) = self.rows.last() else { return };
        if row.kind == Kind::StandDown && row.ty == "stand-down" {
            let whole = matches!(
                serde_json::from_str::<Event>(&row.json),
                Ok(Event::StandDown { owner: None, .. })
            );
            let turn = self.stand_down_turn.take();
            if !whole {
                return;
            }
            match turn {
                Some((by, time)) if time == row.time => self.set_stand_down_author(row.no, &by),
                _ => self.stand_down_event = Some(row.no),
            }
        } else if row.ty == "turn" {
            let Ok(Event::Turn { turn, .. }) = serde_json::from_str::<Event>(&row.json) else {
                return;
            };
            if !matches!(turn.outcome, crate::turn::Outcome::StandDown { .. }) {
                return;
            }
            let by = match turn.author {
                crate::turn::AuthorKind::Human => "you",
                _ => agent.unwrap_or(AGENT),
            }
            .to_string();
            let time = row.time.clone();
            let waiting = self.stand_down_event.take().and_then(|no| {
                self.rows
                    .iter()
                    .rev()
                    .find(|r| r.no == no && r.time == time)
                    .map(|r| r.no)
            });
            match waiting {
                Some(no) => self.set_stand_down_author(no, &by),
                None => self.stand_down_turn = Some((by, time)),
            }
        }
    }

    fn set_stand_down_author(&mut self, no: u64, by: &str) {
        if let Some(r) = self.rows.iter_mut().rev().find(|r| r.no == no)
            && let Some(reason) = r.summary.strip_prefix(WHOLE_BOOK)
        {
            r.summary = format!("stand-down by {by} (every plan): {reason}");
        }
    }

    /// Every decoded row, oldest first.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The rows on screen: filtered, equal neighbours collapsed.
    pub fn shown(&self) -> &[Shown] {
        &self.view
    }

    fn matches(&self, r: &Row) -> bool {
        let f = self.filter.to_lowercase();
        f.split_whitespace().all(|w| {
            r.kind.label().contains(w)
                || r.kind.short().contains(w)
                || r.ty.contains(w)
                || r.plan.to_lowercase().contains(w)
        })
    }

    /// Recompute the rows on screen (after new rows or a new filter).
    pub fn rebuild(&mut self) {
        let keep = self.selected_no();
        self.rebuild_at(keep);
    }

    /// The Bus number of the selected row (the newest of its run), if one is selected, and
    /// whether it is a gap row (which takes the number of the first event it stands for, so
    /// a landmark may share it).
    fn selected_no(&self) -> Option<(u64, bool)> {
        self.sel
            .and_then(|i| self.view.get(i))
            .and_then(|s| self.rows.get(s.last))
            .map(|r| (r.no, r.is_gap()))
    }

    /// [`rebuild`](Self::rebuild), selecting the run that holds row `keep_sel` (by its Bus
    /// number: the rows may have been trimmed since the view was built).
    fn rebuild_at(&mut self, keep_sel: Option<(u64, bool)>) {
        let mut view: Vec<Shown> = Vec::new();
        for (i, r) in self.rows.iter().enumerate() {
            if !self.matches(r) {
                continue;
            }
            // A row equal to the last run joins it; so does a row equal to the run before,
            // which then moves to the end: two streams that alternate (a pegged order's
            // re-prices between a wake's suppressions) read as two rows, not one row per
            // event. A row of chatter (a re-price, a suppression, a mark) reaches back
            // further across runs of chatter only, to the fourth run from the end: three or
            // four streams (two pegged orders and a wake's suppressions) are as many rows,
            // while a fire, a fill or a turn among them more than one row back keeps its
            // place between the runs (and never reaches back itself past one row). Each run
            // shows its newest row and is placed by it, so the rows stay in time order; the
            // count and "since" say how many and from when.
            let n = view.len();
            let same = |s: &Shown| {
                let p = &self.rows[s.last];
                p.kind == r.kind && p.plan == r.plan && run_key(&p.summary) == run_key(&r.summary)
            };
            let chatter = |s: &Shown| is_chatter(&self.rows[s.last]);
            let mut reach = (n.saturating_sub(STREAMS)..n).rev().take_while(|&k| {
                k + 2 >= n || (is_chatter(r) && view[k + 1..].iter().all(chatter))
            });
            if let Some(k) = reach.find(|&k| same(&view[k])) {
                let mut run = view.remove(k);
                run.last = i;
                run.count += 1;
                view.push(run);
                continue;
            }
            view.push(Shown {
                first: i,
                last: i,
                count: 1,
            });
        }
        self.view = view;
        if let Some((no, gap)) = keep_sel {
            // The run whose newest row was selected, else the one whose span holds it (runs
            // that alternated overlap: the first such).
            self.sel = self
                .view
                .iter()
                .position(|s| {
                    let r = &self.rows[s.last];
                    r.no == no && r.is_gap() == gap
                })
                .or_else(|| {
                    self.view
                        .iter()
                        .position(|s| self.rows[s.first].no <= no && no <= self.rows[s.last].no)
                })
                .or(Some(self.view.len().saturating_sub(1)));
        }
    }

    /// Set the filter.
    pub fn set_filter(&mut self, f: &str) {
        self.filter = f.trim().to_string();
        self.sel = None;
        self.rebuild();
    }

    /// The selected row (the newest when following).
    pub fn selected(&self) -> Option<&Row> {
        let i = self.sel.unwrap_or(self.view.len().checked_sub(1)?);
        self.view.get(i).map(|s| &self.rows[s.last])
    }

    /// Move the selection by `d` rows (negative: up); reaching the bottom follows again.
    pub fn step(&mut self, d: isize) {
        let n = self.view.len();
        if n == 0 {
            return;
        }
        let cur = self.sel.unwrap_or(n - 1) as isize;
        let next = (cur + d).clamp(0, n as isize - 1) as usize;
        self.sel = if next == n - 1 { None } else { Some(next) };
    }

    /// The oldest row.
    pub fn top(&mut self) {
        if !self.view.is_empty() {
            self.sel = Some(0);
        }
    }

    /// Is the first row selected (or shown while following: one row, or none)?
    pub fn at_top(&self) -> bool {
        self.view.len() <= 1 || self.sel == Some(0)
    }

    /// Follow the newest row again.
    pub fn follow(&mut self) {
        self.sel = None;
    }

    /// Draw the log into `area` (the pane's inner area).
    pub fn draw(&self, buf: &mut Buffer, area: Rect, t: &Theme, focused: bool) {
        let base = Style::default().bg(t.bg()).fg(t.fg());
        let muted = base.fg(t.muted());
        buf.set_style(area, base);
        if area.height < 2 || area.width < 20 {
            return;
        }
        let w = usize::from(area.width);
        // Narrow, the plan column folds into the summary (`plan: summary`), the kinds take
        // their short words ([`Kind::short`]), and the kind column is as wide as the widest
        // kind the rows (as filtered) hold: filtered by `/fill`, a fill's price is not cut
        // for an `order` the rows do not have.
        let pw = if w >= 90 {
            16
        } else if w >= 64 {
            12
        } else {
            0
        };
        let kw = if pw > 0 {
            10
        } else {
            self.view
                .iter()
                .map(|s| fit::width(self.rows[s.last].kind.short()))
                .max()
                .unwrap_or(5)
                .clamp(4, 5)
        };
        let tw = 8usize;
        let gaps = if pw > 0 { 3 } else { 2 };
        let sw = w.saturating_sub(tw + kw + pw + gaps);
        let header = if pw > 0 {
            format!(
                "{} {} {} {}",
                fit::cell("time", tw),
                fit::cell("kind", kw),
                fit::cell("plan", pw),
                fit::fit("summary", sw)
            )
        } else {
            format!(
                "{} {} {}",
                fit::cell("time", tw),
                fit::cell("kind", kw),
                fit::fit("plan: summary", sw)
            )
        };
        buf.set_stringn(area.x, area.y, &header, w, muted);
        let h = usize::from(area.height - 1);
        self.page.set(h.max(1));
        let n = self.view.len();
        if n == 0 {
            let msg = if self.filter.is_empty() {
                "no events yet".to_string()
            } else {
                format!("nothing matches /{} (/ then enter clears)", self.filter)
            };
            buf.set_stringn(area.x, area.y + 1, &msg, w, muted);
            return;
        }
        let sel = self.sel.unwrap_or(n - 1).min(n - 1);
        let end = if self.sel.is_none() {
            n
        } else {
            (sel + 1).max(h.min(n)).min(n)
        };
        let end = end.max((sel + 1).min(n));
        let start = end.saturating_sub(h);
        for (k, s) in self.view[start..end].iter().enumerate() {
            let r = &self.rows[s.last];
            let y = area.y + 1 + k as u16;
            let i = start + k;
            let row_st = if focused && i == sel && self.sel.is_some() {
                base.bg(t.selection()).add_modifier(Modifier::BOLD)
            } else {
                base
            };
            let summary = self.summary_cell(s, pw == 0, sw);
            let kind = if pw > 0 {
                r.kind.label()
            } else {
                r.kind.short()
            };
            let mut x = area.x;
            for (text, width, st) in [
                (r.time.as_str(), tw, row_st.fg(t.muted())),
                (kind, kw, row_st.fg(t.event(r.kind))),
                (r.plan.as_str(), pw, row_st),
                (summary.as_str(), sw, row_st),
            ] {
                if width == 0 {
                    continue;
                }
                if x >= area.right() {
                    break;
                }
                let c = fit::cell(text, width);
                buf.set_stringn(x, y, &c, width.min(usize::from(area.right() - x)), st);
                x += width as u16 + 1;
                if x < area.right() && x > area.x {
                    buf[(x - 1, y)].set_style(row_st);
                }
            }
        }
    }

    /// The summary column of shown row `s`, in `sw` columns: a run's count and its first
    /// time, and, `narrow` (no plan column), the plan before the summary ([`plan_first`]).
    /// An order's re-prices say the count as theirs and keep the plan ([`reprice_cell`]).
    fn summary_cell(&self, s: &Shown, narrow: bool, sw: usize) -> String {
        let r = &self.rows[s.last];
        let since = &self.rows[s.first].time;
        if r.ty == "order-repriced"
            && let Some(cell) = reprice_cell(r, s.count, since, narrow, sw)
        {
            return cell;
        }
        let summary = if s.count > 1 {
            format!("×{} {} (since {since})", s.count, r.summary)
        } else {
            r.summary.clone()
        };
        if !narrow || r.plan.is_empty() {
            return summary;
        }
        if r.ty == "order-cancelled" {
            // A cancellation is named by its order (`#1 cancelled: veto`), its plan after
            // it: before it, a narrow row cut what became of the order. Where the plan does
            // not fit whole after it, the order's number says it.
            let with = format!("{summary} · {}", r.plan);
            return if fit::width(&with) <= sw {
                with
            } else {
                summary
            };
        }
        plan_first(&r.plan, &summary, sw)
    }

    /// The pane title in `w` columns: the shorter words first where the whole title does
    /// not fit (`· b Blotter` goes, then `enter inspect`, then `events` after the count),
    /// then the keys, then the state. At 160x48 and 100x30 the title was cut in its keys
    /// (`Log — 103 events · following [/ filter ·…`).
    pub fn title(&self, total: u64, w: usize) -> String {
        let filt = if self.filter.is_empty() {
            String::new()
        } else {
            format!(" /{}", self.filter)
        };
        let (follow, short) = match self.sel {
            None => ("following", "following"),
            Some(_) => ("scrolled (G follows)", "G follows"),
        };
        let events = fit::count(total, "event");
        let n = total.to_string();
        let tries = vec![
            format!("Log — {events}{filt} · {follow} [/ filter · enter inspect · b Blotter]"),
            format!("Log — {events}{filt} · {follow} [/ filter · enter inspect]"),
            format!("Log — {n}{filt} · {follow} [/ filter · enter inspect]"),
            format!("Log — {events}{filt} · {follow} [/ filter]"),
            format!("Log — {n}{filt} · {follow} [/ filter]"),
            format!("Log — {n}{filt} · {short} [/ filter]"),
            format!("Log — {n}{filt} · {short}"),
        ];
        fit::first_fitting(tries, w)
    }
}

/// A row that says "the agent" (an `armed` or `stand-down` event whose owner is the agent)
/// names the seated agent.
fn name_agent(row: &mut Row, name: &str) {
    let by = format!(" by {AGENT}");
    if matches!(row.kind, Kind::Armed | Kind::StandDown) && row.summary.contains(&by) {
        row.summary = row.summary.replacen(&by, &format!(" by {name}"), 1);
    }
}

/// The summary cell of a run of `count` re-prices of one order (`count` 1: a single one),
/// the first at `since`: the count said as the re-prices' (`#7 repriced ×7, now 518.36
/// (peg, since 10:38:01)`) and, `narrow`, the plan first, whole, with the shorter words first
/// where the row is too long (`vwap-flush: #7 peg ×7 → 518.36` in the 31 columns of 160x48).
/// Until 2026-12-06 the run read `×7 #7 repriced to 518.36 (peg)…`, the plan (put after it)
/// cut off at every size, the count beside the order's number. `None`: a summary the Log
/// did not write (left as it is).
fn reprice_cell(r: &Row, count: usize, since: &str, narrow: bool, sw: usize) -> Option<String> {
    let (order, rest) = r.summary.split_once(" repriced to ")?;
    let (price, reason) = rest.split_once(" (")?;
    let reason = reason.strip_suffix(')')?;
    let tries = if count > 1 {
        vec![
            format!("{order} repriced ×{count}, now {price} ({reason}, since {since})"),
            format!("{order} repriced ×{count}, now {price} ({reason})"),
            format!("{order} repriced ×{count}, now {price}"),
            format!("{order} {reason} ×{count} → {price}"),
            format!("{order} → {price}"),
        ]
    } else {
        vec![
            format!("{order} repriced to {price} ({reason})"),
            format!("{order} repriced to {price}"),
            format!("{order} {reason} → {price}"),
            format!("{order} → {price}"),
        ]
    };
    let head = if narrow && !r.plan.is_empty() {
        format!("{}: ", r.plan)
    } else {
        String::new()
    };
    let tries = tries.into_iter().map(|t| format!("{head}{t}")).collect();
    Some(fit::first_fitting(tries, sw))
}

/// How many interleaved streams of chatter the Log folds into as many rows.
const STREAMS: usize = 4;

/// A narrow row's `plan: summary` in `w` columns, the price whole: where the row is too
/// long, the plan's name gives way (`spx-52…: buy 2 @ 0.15 SPY …`) before the summary's head
/// up to its price (`buy 2 @ 0.15`, `#1 buy 2 @ 0.15`). At 160x48 a 14-letter plan cut a
/// fill to `spx-5200-break: buy 2 @…` (docs/desk.md: a narrow row cuts the name, not the
/// price). An option's contract is kept with the price where it can be (the name whole, then
/// the contract without its symbol, then the name cut too, to no fewer than five letters and
/// `…`).
fn plan_first(plan: &str, summary: &str, w: usize) -> String {
    let whole = format!("{plan}: {summary}");
    if fit::width(&whole) <= w {
        return whole;
    }
    // The summary up to the end of the price after its ` @ `.
    let Some(at) = summary.find(" @ ") else {
        return whole;
    };
    let price = summary[at + 3..]
        .find(' ')
        .map_or(summary.len(), |i| at + 3 + i);
    // An option's contract after the price (`SPY 518C`, before the order's number) is kept
    // with it: the row says which option traded; where the name whole and the contract do
    // not fit, the contract without its symbol (`breakout: sell 1 @ 1.00 518C…`), then the
    // name cut too (`vwap-re…: sell 1 @ 0.77 516C…`). Shares keep the name whole and the
    // price.
    let contract = summary.find(" (#").unwrap_or(summary.len()).max(price);
    let option = contract > price && !summary[price..contract].ends_with(" shares");
    // The summary without the contract's symbol, and where its contract ends.
    let bare = summary[price..contract]
        .trim_start()
        .split_once(' ')
        .map(|(sym, _)| {
            let cut = price + 1..price + 2 + sym.len();
            let mut b = summary.to_string();
            b.replace_range(cut.clone(), "");
            (b, contract - cut.len())
        });
    let name = fit::width(plan);
    let fits = |summary: &str, end: usize| -> Option<String> {
        let head = fit::width(&summary[..end]);
        // The name whole and the head whole, with the `…` the row is cut with after the
        // head where there is room for it; where there is not, the row ends at the head (a
        // `…` cut `vwap-flush: sell 48 @ 518.0` back to `vwap-flush: sell 48 @…`).
        if name + 2 + head < w {
            Some(format!("{plan}: {summary}"))
        } else if name + 2 + head == w {
            Some(format!("{plan}: {}", &summary[..end]))
        } else {
            None
        }
    };
    // `: ` before the summary, and the `…` the row is cut with after the head; the name
    // keeps `least` columns (`…` among them), or the row is not cut so.
    let cut = |summary: &str, end: usize, least: usize| -> Option<String> {
        let room = w.checked_sub(fit::width(&summary[..end]) + 3)?;
        (room >= least).then(|| format!("{}: {summary}", fit::fit(plan, room)))
    };
    // The summary the contract is cut in: without its symbol where it has one.
    let (shown, end) = bare
        .as_ref()
        .map_or((summary, contract), |(b, end)| (b.as_str(), *end));
    let with_contract = || {
        fits(summary, contract)
            .or_else(|| bare.as_ref().and_then(|(b, end)| fits(b, *end)))
            .or_else(|| cut(shown, end, 6))
    };
    option
        .then(with_contract)
        .flatten()
        .or_else(|| fits(summary, price))
        .or_else(|| cut(summary, price, 4))
        .unwrap_or(whole)
}

/// A row that repeats as a stream (a re-price, a suppression, a mark): a row of chatter may
/// reach past runs of chatter to join an older run of its own ([`Log::rebuild`]).
fn is_chatter(r: &Row) -> bool {
    matches!(r.kind, Kind::Suppressed | Kind::Mark) || r.ty == "order-repriced"
}

/// What makes neighbouring rows one run: the summary, except that an order's re-prices (a
/// pegged order moves with the market on almost every tick) are one run per order, shown
/// with the newest price: `×27 #2 repriced to 1.99 (peg)`.
fn run_key(summary: &str) -> &str {
    summary
        .split_once(" repriced to ")
        .map_or(summary, |(order, _)| order)
}

/// One attempt of a repair loop as the Log shows it: which attempt, what came of it, and,
/// for a refused reply, whether the author was asked again. The first reply is "attempt 1",
/// not a re-ask: only an attempt after a refused one is.
fn attempt_summary(a: &crate::turn::repair::RepairAttempt) -> String {
    let n = u64::from(a.attempt) + 1;
    let tokens = a.tokens;
    if a.errors.is_empty() {
        return format!("attempt {n}: {} ({tokens} tokens)", a.outcome);
    }
    let e = a.errors.len();
    let then = match a.next_parsed {
        Some(_) => "re-asked",
        None => "not re-asked",
    };
    format!(
        "attempt {n}: {} with {e} error{} ({tokens} tokens), {then}",
        a.outcome,
        if e == 1 { "" } else { "s" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The session's date in these tests.
    const DATE: &str = "2025-04-09";

    #[test]
    fn a_narrow_row_cuts_the_plans_name_before_the_price() {
        let fill = "buy 2 @ 0.15 SPY 2025-04-09 521.00 C (#1)";
        // Room for all of it: as it was.
        assert_eq!(
            plan_first("spx-5200-break", fill, 80),
            format!("spx-5200-break: {fill}")
        );
        // 26 columns (the Log pane at 160x48): the price whole, the name cut.
        let row = plan_first("spx-5200-break", fill, 26);
        let shown = fit::fit(&row, 26);
        assert!(shown.contains("buy 2 @ 0.15"), "{shown}");
        assert!(shown.starts_with("spx-52"), "{shown}");
        // An order's row keeps its number and price too; a row with no price is as it was.
        let order = "#1 buy 2 @ 0.15 SPY 2025-04-09 521.00 C";
        assert!(fit::fit(&plan_first("spx-5200-break", order, 26), 26).contains("#1 buy 2 @ 0.15"));
        assert_eq!(
            plan_first("spx-5200-break", "fired WHEN spot crosses above 5200", 26),
            "spx-5200-break: fired WHEN spot crosses above 5200"
        );
        // The name and the price just fit: both whole, the row ends at the price (a `…` after
        // it cut the price back to `@…`); one column more and the `…` follows the price.
        let sell = "sell 48 @ 518.02 SPY shares (#5)";
        let exact = plan_first("vwap-flush", sell, 28);
        assert_eq!(fit::fit(&exact, 28), "vwap-flush: sell 48 @ 518.02");
        assert_eq!(
            fit::fit(&plan_first("vwap-flush", sell, 29), 29),
            "vwap-flush: sell 48 @ 518.02…"
        );
    }

    /// The Log wrote `SPY 2025-04-09 518.00 C`, date first, and a row cut it before the
    /// strike at every size: an option reads as a trader writes it, the expiry only when it
    /// is another day; shares and anything else as the Bus names them.
    #[test]
    fn an_option_reads_by_strike_and_right_the_expiry_only_on_another_day() {
        assert_eq!(trader_leg("SPY 2025-04-09 518.00 C", DATE), "SPY 518C");
        assert_eq!(trader_leg("SPY 2025-04-09 518.50 P", DATE), "SPY 518.5P");
        assert_eq!(trader_leg("SPX 2025-04-09 5182.25 C", DATE), "SPX 5182.25C");
        assert_eq!(
            trader_leg("SPY 2025-04-10 518.00 C", DATE),
            "SPY 518C 04-10"
        );
        assert_eq!(
            trader_leg("SPY 2026-01-16 520.00 P", DATE),
            "SPY 520P 2026-01-16"
        );
        for same in [
            "SPY shares",
            "SPY",
            "SPY 2025-04-09 x C",
            "SPY 2025-04-09 518 X",
        ] {
            assert_eq!(trader_leg(same, DATE), same);
        }
        use crate::bus::{BusSide, Event, OrderRole, canonical_line};
        use crate::market::{Px, Ts};
        let placed = Event::OrderPlaced {
            ts: Ts::hms(10, 21, 30, 0),
            order: 3,
            plan: "breakout".into(),
            clause: "DO#1".into(),
            role: OrderRole::Entry,
            leg: "SPY 2025-04-09 518.00 C".into(),
            side: BusSide::Buy,
            qty: 2,
            limit: Px::from_cents(49),
            mult: 100,
        };
        let line = String::from_utf8(canonical_line(&placed)).unwrap();
        let row = decode(0, line.trim_end(), DATE);
        assert_eq!(row.summary, "buy 2 @ 0.49 SPY 518C (#3)");
        // The event whole (Enter) is the Bus's line, the long name in it.
        assert!(inspect(&row.json).contains("SPY 2025-04-09 518.00 C"));
        // At 160x48 (31 columns) the row keeps the plan whole and the contract.
        assert_eq!(
            fit::fit(&plan_first("breakout", &row.summary, 31), 31),
            "breakout: buy 2 @ 0.49 SPY 518C"
        );
        // One column short: the contract without its symbol before a cut name.
        let sell = "sell 1 @ 1.00 SPY 518C (#6)";
        assert_eq!(
            fit::fit(&plan_first("breakout", sell, 31), 31),
            "breakout: sell 1 @ 1.00 518C…"
        );
        // A longer name is cut (to five letters at least) before the contract goes.
        assert_eq!(
            fit::fit(&plan_first("vwap-reclaim", sell, 29), 29),
            "vwap-re…: sell 1 @ 1.00 518C…"
        );
        // Shares keep the name whole and the price, as they did.
        let shares = "sell 48 @ 518.02 SPY shares (#5)";
        assert_eq!(
            fit::fit(&plan_first("vwap-flush", shares, 31), 31),
            "vwap-flush: sell 48 @ 518.02…"
        );
    }

    /// A run of re-prices read `×7 #7 repriced to 518.36 (peg)…`: the plan (put after it)
    /// cut off at every size, the count beside the order's number. The plan comes first and
    /// the count is the re-prices'.
    #[test]
    fn a_run_of_reprices_names_its_plan_and_counts_the_reprices() {
        use crate::bus::{BusSide, Event, OrderRole, canonical_line};
        use crate::market::{Px, Ts};
        let line = |ev: Event| String::from_utf8(canonical_line(&ev)).unwrap();
        let mut lines = vec![line(Event::OrderPlaced {
            ts: Ts::hms(10, 38, 0, 0),
            order: 7,
            plan: "vwap-flush".into(),
            clause: "DO#1".into(),
            role: OrderRole::Entry,
            leg: "SPY shares".into(),
            side: BusSide::Buy,
            qty: 20,
            limit: Px::from_cents(51_820),
            mult: 1,
        })];
        for k in 0..7u32 {
            lines.push(line(Event::OrderRepriced {
                ts: Ts::hms(10, 38, 1 + k, 0),
                order: 7,
                limit: Px::from_cents(51_830 + i64::from(k)),
                reason: "peg".into(),
            }));
        }
        let mut log = Log::default();
        for (no, l) in lines.iter().enumerate() {
            log.push(decode(no as u64, l.trim_end(), DATE), None);
        }
        log.rebuild();
        let run = *log.shown().last().unwrap();
        assert_eq!(run.count, 7);
        let at = |w: usize, narrow: bool| fit::fit(&log.summary_cell(&run, narrow, w), w);
        assert_eq!(
            at(80, true),
            "vwap-flush: #7 repriced ×7, now 518.36 (peg, since 10:38:01)"
        );
        assert_eq!(at(45, true), "vwap-flush: #7 repriced ×7, now 518.36 (peg)");
        assert_eq!(at(31, true), "vwap-flush: #7 peg ×7 → 518.36");
        assert_eq!(at(24, true), "vwap-flush: #7 → 518.36");
        // Wide, the plan has its own column.
        assert_eq!(at(40, false), "#7 repriced ×7, now 518.36 (peg)");
        // One re-price reads as it did, its plan first.
        let one = Shown {
            first: 1,
            last: 1,
            count: 1,
        };
        assert_eq!(
            fit::fit(&log.summary_cell(&one, true, 60), 60),
            "vwap-flush: #7 repriced to 518.30 (peg)"
        );
    }

    /// The title was cut in its keys at 160x48 and 100x30 (`Log — 103 events · following
    /// [/ filter ·…`): the shorter title fits whole.
    #[test]
    fn the_log_title_fits_its_width_shorter_words_first() {
        let mut log = Log::default();
        assert_eq!(
            log.title(103, 80),
            "Log — 103 events · following [/ filter · enter inspect · b Blotter]"
        );
        assert_eq!(
            log.title(103, 56),
            "Log — 103 events · following [/ filter · enter inspect]"
        );
        assert_eq!(
            log.title(103, 44),
            "Log — 103 events · following [/ filter]"
        );
        log.filter = "vwap-reclaim".into();
        log.sel = Some(0);
        for w in [40, 44, 56, 80] {
            let t = log.title(103, w);
            assert!(fit::width(&t) <= w, "{w}: {t}");
            assert!(t.contains("/vwap-reclaim"), "{w}: {t}");
        }
    }

    /// A gap row takes the number of the first event it stands for, which a landmark right
    /// after the last row seen shares: a selected fill jumped to the gap row at the next
    /// rebuild.
    #[test]
    fn a_selected_landmark_stays_selected_beside_a_gap_row_of_its_number() {
        let row = |no: u64, ty: &str, kind: Kind, summary: &str| Row {
            no,
            time: "09:31:00".into(),
            kind,
            ty: ty.into(),
            plan: "p".into(),
            order: None,
            summary: summary.into(),
            json: String::new(),
        };
        let mut log = Log {
            rows: vec![
                row(4, "gap", Kind::Other, "… 3 older events left out"),
                row(4, "fill", Kind::Fill, "buy 1 SPY 518C @ 0.88"),
                row(8, "fill", Kind::Fill, "sell 1 SPY 518C @ 1.01"),
            ],
            ..Log::default()
        };
        log.rebuild();
        log.sel = Some(1);
        assert_eq!(log.selected().map(|r| r.ty.as_str()), Some("fill"));
        log.rebuild();
        assert_eq!(log.sel, Some(1), "the fill, not the gap row");
        log.sel = Some(0);
        log.rebuild();
        assert_eq!(log.sel, Some(0), "the gap row stays selected too");
    }

    #[test]
    fn a_first_reply_is_an_attempt_not_a_re_ask() {
        use crate::bus::{Event, canonical_line};
        use crate::market::Ts;
        use crate::turn::repair::RepairAttempt;
        let attempt = |n: u32, errors: usize, next: Option<bool>| {
            let line = canonical_line(&Event::Repair {
                ts: Ts::hms(9, 30, 0, 0),
                wake: "open".into(),
                attempt: RepairAttempt {
                    attempt: n,
                    written: "PASS".into(),
                    outcome: if errors == 0 { "authored" } else { "invalid" }.into(),
                    errors: (0..errors)
                        .map(|_| crate::turn::TurnError {
                            code: "PARSE".into(),
                            rule: "syntax".into(),
                            message: "expected a plan".into(),
                            line: 1,
                            col: 1,
                        })
                        .collect(),
                    guided: None,
                    tokens: 12,
                    next_parsed: next,
                    retries: Vec::new(),
                    usage: None,
                },
            });
            decode(0, &String::from_utf8(line).unwrap(), DATE).summary
        };
        assert_eq!(attempt(0, 0, None), "open: attempt 1: authored (12 tokens)");
        assert_eq!(
            attempt(0, 2, Some(true)),
            "open: attempt 1: invalid with 2 errors (12 tokens), re-asked"
        );
        assert_eq!(
            attempt(2, 1, None),
            "open: attempt 3: invalid with 1 error (12 tokens), not re-asked"
        );
    }

    #[test]
    fn a_whole_book_stand_down_is_named_by_its_turn_before_or_after_it() {
        use crate::bus::{Event, canonical_line};
        use crate::market::Ts;
        use crate::turn::{AuthorKind, Checked, Outcome, Profile, RoutedTurn, Source, WakePhase};
        let ts = Ts::hms(9, 31, 0, 0);
        let line = |e: &Event| String::from_utf8(canonical_line(e)).unwrap();
        let turn = |author: AuthorKind| {
            line(&Event::Turn {
                ts,
                wake: "tick".into(),
                turn: Box::new(RoutedTurn {
                    outcome: Outcome::StandDown {
                        reason: "done".into(),
                    },
                    journal: Vec::new(),
                    kestrel: "STAND-DOWN done\n".into(),
                    source: Source::Kestrel,
                    phase: WakePhase::Mid,
                    profile: Profile::AuthoringV2,
                    author,
                    checked: Checked(None),
                }),
            })
        };
        let stand_down = line(&Event::StandDown {
            ts,
            reason: "done".into(),
            owner: None,
        });
        let plan = r#"{"plan":"p","reason":"stand-down","state":"stood-down","ts":"09:31:00.000","type":"plan-state"}"#;
        let summary = |lines: &[String]| {
            let mut log = Log::default();
            for (no, l) in lines.iter().enumerate() {
                log.rows.push(decode(no as u64, l.trim_end(), DATE));
                log.name_stand_down(Some("house"));
            }
            log.rows()
                .iter()
                .find(|r| r.ty == "stand-down")
                .map(|r| r.summary.clone())
                .unwrap()
        };
        // A person's: the act first, its turn after (the plans it stood down between).
        assert_eq!(
            summary(&[stand_down.clone(), plan.into(), turn(AuthorKind::Human)]),
            "stand-down by you (every plan): done"
        );
        // A headless author's: its turn first.
        assert_eq!(
            summary(&[turn(AuthorKind::Model), stand_down.clone()]),
            "stand-down by house (every plan): done"
        );
        // No turn to say who: what it did, never `by -`.
        assert_eq!(summary(&[stand_down]), "stand-down of every plan: done");
    }

    #[test]
    fn a_frame_is_shown_as_its_lines() {
        let line = r#"{"frame":"FRAME t=09:31\n[tape]\n09:30 0 1","tokens":12,"ts":"09:31:00.000","type":"view-delivered","view":"default","wake":"open","dropped":[]}"#;
        let text = inspect(line);
        assert!(text.starts_with("type: view-delivered\n"), "{text}");
        assert!(
            text.contains("frame: |\n  FRAME t=09:31\n  [tape]\n  09:30 0 1\n"),
            "{text}"
        );
        assert!(!text.contains("\\n"), "{text}");
    }

    #[test]
    fn repeated_events_collapse_and_the_filter_matches_kind_or_plan() {
        let mut log = Log::default();
        let sup = |s: u32| {
            format!(
                r#"{{"reason":"budget of 2 wakes/day spent","ts":"09:{s:02}:00.000","type":"wake-suppressed","wake":"tick"}}"#
            )
        };
        let fired = r#"{"clause":"WHEN","plan":"chase","ts":"09:40:00.000","type":"plan-fired"}"#;
        for (no, l) in [sup(31), sup(32), sup(33), fired.to_string(), sup(41)]
            .iter()
            .enumerate()
        {
            log.rows.push(decode(no as u64, l, DATE));
        }
        log.rebuild();
        let counts: Vec<usize> = log.shown().iter().map(|s| s.count).collect();
        // The suppression after the fire joins its run, which is shown after the fire (at its
        // newest, 09:41, "since 09:31").
        assert_eq!(counts, vec![1, 4]);
        assert_eq!(log.shown()[0].last, 3);
        assert_eq!((log.shown()[1].first, log.shown()[1].last), (0, 4));
        assert_eq!(log.rows()[3].kind, Kind::Fired);
        assert_eq!(log.rows()[3].summary, "fired WHEN");
        log.set_filter("chase");
        assert_eq!(log.shown().len(), 1);
        log.set_filter("suppressed");
        let counts: Vec<usize> = log.shown().iter().map(|s| s.count).collect();
        assert_eq!(counts, vec![4], "filtered out rows no longer split a run");
    }

    #[test]
    fn an_orders_reprices_collapse_into_one_row_with_the_newest_price() {
        use crate::bus::{Event, canonical_line};
        use crate::market::{Px, Ts};
        let mut log = Log::default();
        let line = |order: u64, cents: i64, s: u32| {
            let ev = Event::OrderRepriced {
                ts: Ts::hms(10, 0, s, 0),
                order,
                limit: Px::from_cents(cents),
                reason: "peg".into(),
            };
            String::from_utf8(canonical_line(&ev)).unwrap()
        };
        for (no, l) in [
            line(2, 190, 1),
            line(2, 195, 2),
            line(2, 199, 3),
            line(3, 50, 4),
        ]
        .iter()
        .enumerate()
        {
            log.rows.push(decode(no as u64, l.trim_end(), DATE));
        }
        log.rebuild();
        let counts: Vec<usize> = log.shown().iter().map(|s| s.count).collect();
        assert_eq!(counts, vec![3, 1], "one run per order");
        let last = &log.rows()[log.shown()[0].last];
        assert_eq!(last.summary, "#2 repriced to 1.99 (peg)");
    }

    /// A re-price and a cancellation name only their order on the Bus: the Log gives them
    /// the plan of that order's `order-placed`, so a filter by plan keeps them (a trader
    /// filtering `/vwap-reclaim` saw its VETO and `done` but not its cancelled order).
    #[test]
    fn an_orders_reprice_and_cancellation_are_under_its_plan_and_its_filter() {
        use crate::bus::{BusSide, Event, OrderRole, canonical_line};
        use crate::market::{Px, Ts};
        let line = |ev: Event| String::from_utf8(canonical_line(&ev)).unwrap();
        let placed = |order: u64, plan: &str| {
            line(Event::OrderPlaced {
                ts: Ts::hms(10, 0, 0, 0),
                order,
                plan: plan.into(),
                clause: "DO#1".into(),
                role: OrderRole::Entry,
                leg: "SPY 2025-04-09 518 C".into(),
                side: BusSide::Buy,
                qty: 1,
                limit: Px::from_cents(120),
                mult: 100,
            })
        };
        let lines = [
            placed(1, "vwap-reclaim"),
            placed(2, "breakout"),
            line(Event::OrderRepriced {
                ts: Ts::hms(10, 0, 1, 0),
                order: 1,
                limit: Px::from_cents(125),
                reason: "peg".into(),
            }),
            line(Event::OrderCancelled {
                ts: Ts::hms(10, 22, 27, 0),
                order: 1,
                reason: "veto".into(),
            }),
            line(Event::OrderCancelled {
                ts: Ts::hms(10, 30, 0, 0),
                order: 2,
                reason: "stand-down".into(),
            }),
            // An order the Log never saw placed keeps no plan rather than a wrong one.
            line(Event::OrderCancelled {
                ts: Ts::hms(10, 31, 0, 0),
                order: 9,
                reason: "ttl".into(),
            }),
        ];
        let mut log = Log::default();
        for (no, l) in lines.iter().enumerate() {
            log.push(decode(no as u64, l.trim_end(), DATE), None);
        }
        let plans: Vec<&str> = log.rows().iter().map(|r| r.plan.as_str()).collect();
        assert_eq!(
            plans,
            [
                "vwap-reclaim",
                "breakout",
                "vwap-reclaim",
                "vwap-reclaim",
                "breakout",
                ""
            ]
        );
        log.set_filter("vwap-reclaim");
        let shown: Vec<&str> = log
            .shown()
            .iter()
            .map(|s| log.rows()[s.last].summary.as_str())
            .collect();
        assert_eq!(
            shown,
            [
                "buy 1 @ 1.20 SPY 518C (#1)",
                "#1 repriced to 1.25 (peg)",
                "#1 cancelled: veto"
            ]
        );
    }

    /// The Bus lines decoded into a Log and folded: the Log and its runs (first, last, count).
    fn folded(lines: &[String]) -> (Log, Vec<(usize, usize, usize)>) {
        let mut log = Log::default();
        for (no, l) in lines.iter().enumerate() {
            log.rows.push(decode(no as u64, l, DATE));
        }
        log.rebuild();
        let runs = log
            .shown()
            .iter()
            .map(|s| (s.first, s.last, s.count))
            .collect();
        (log, runs)
    }

    #[test]
    fn three_and_four_streams_of_chatter_read_as_as_many_rows_and_a_fire_still_splits_them() {
        let sup = |s: u32| {
            format!(
                r#"{{"reason":"budget of 2 wakes/day spent","ts":"10:50:{s:02}.000","type":"wake-suppressed","wake":"range-break"}}"#
            )
        };
        let rep = |order: u32, s: u32| {
            format!(
                r#"{{"limit":"1.{s:02}","order":{order},"reason":"peg","ts":"10:50:{s:02}.000","type":"order-repriced"}}"#
            )
        };
        // Two pegged orders and a wake's suppressions, round after round: three rows.
        let mut three = Vec::new();
        for k in 0..4 {
            three.extend([rep(1, 3 * k), rep(2, 3 * k + 1), sup(3 * k + 2)]);
        }
        assert_eq!(folded(&three).1, vec![(0, 9, 4), (1, 10, 4), (2, 11, 4)]);
        // Four streams: four rows.
        let mut four = Vec::new();
        for k in 0..3 {
            four.extend([
                rep(1, 4 * k),
                rep(2, 4 * k + 1),
                rep(3, 4 * k + 2),
                sup(4 * k + 3),
            ]);
        }
        assert_eq!(
            folded(&four).1,
            vec![(0, 8, 3), (1, 9, 3), (2, 10, 3), (3, 11, 3)]
        );
        // Five streams are past the reach: no row joins, each event is a row.
        let mut five = Vec::new();
        for k in 0..2 {
            five.extend((1..=4).map(|o| rep(o, 5 * k + o)));
            five.push(sup(5 * k + 5));
        }
        assert_eq!(folded(&five).1.len(), 10);
        // A fire among three streams keeps its place: the streams before it and after it
        // are rows of their own (a run reaches past one row of any kind, as two streams
        // do, but not past a fire and more).
        let fired = r#"{"clause":"WHEN","plan":"chase","ts":"10:50:20.000","type":"plan-fired"}"#;
        let split = [
            rep(1, 0),
            rep(2, 1),
            sup(2),
            rep(1, 3),
            rep(2, 4),
            sup(5),
            fired.to_string(),
            rep(1, 21),
            rep(2, 22),
            sup(23),
        ];
        let (_, runs) = folded(&split);
        let fire_at = runs
            .iter()
            .position(|r| r.0 == 6)
            .expect("the fire is a row");
        assert_eq!(&runs[..fire_at], &[(0, 3, 2), (1, 4, 2), (2, 5, 2)]);
        assert!(
            runs[fire_at + 1..].iter().all(|r| r.0 > 6),
            "no run from before the fire joins one after it: {runs:?}"
        );
        // A fire does not reach back across chatter to an earlier fire: each keeps its place.
        let fire = |s: u32| {
            format!(
                r#"{{"clause":"WHEN","plan":"chase","ts":"10:50:{s:02}.000","type":"plan-fired"}}"#
            )
        };
        let (_, runs) = folded(&[fire(0), rep(1, 1), sup(2), rep(1, 3), fire(4)]);
        assert_eq!(runs, vec![(0, 0, 1), (2, 2, 1), (1, 3, 2), (4, 4, 1)]);
    }

    #[test]
    fn two_alternating_streams_read_as_two_rows_in_time_order_and_a_third_splits_them() {
        let sup = |m: u32, s: u32| {
            format!(
                r#"{{"reason":"budget of 2 wakes/day spent","ts":"10:{m:02}:{s:02}.000","type":"wake-suppressed","wake":"range-break"}}"#
            )
        };
        let rep = |m: u32, s: u32, cents: u32| {
            format!(
                r#"{{"limit":"{}.{:02}","order":2,"reason":"peg","ts":"10:{m:02}:{s:02}.000","type":"order-repriced"}}"#,
                cents / 100,
                cents % 100
            )
        };
        let fired = r#"{"clause":"WHEN","plan":"chase","ts":"10:52:00.000","type":"plan-fired"}"#;
        let lines = [
            sup(50, 9),
            rep(50, 9, 330),
            sup(50, 11),
            rep(50, 26, 331),
            rep(50, 27, 332),
            sup(50, 27),
            rep(51, 29, 289),
            fired.to_string(),
            sup(52, 30),
        ];
        let (log, runs) = folded(&lines);
        // Before the fire: two rows (3 suppressions, 4 re-prices), not seven; the
        // fire keeps its place and splits them from the suppression after it.
        assert_eq!(runs, vec![(0, 5, 3), (1, 6, 4), (7, 7, 1), (8, 8, 1)]);
        assert_eq!(
            log.rows()[log.shown()[1].last].summary,
            "#2 repriced to 2.89 (peg)"
        );
    }
}
