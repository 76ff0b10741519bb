//! What the book looks like at an instant, as plain data for the kernel, plans, blotter and
//! journal panes. The engine fills it; the renderer only reads it.

use serde::Serialize;

/// A position in the book.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PositionRow {
    pub plan: String,
    /// `SPY 0dte 501 C` or `SPY shares`.
    pub instrument: String,
    pub qty: i64,
    pub avg_px: f64,
    /// The mark: the exec symbol's mid for shares, the option's model fair for options
    /// (docs/runtime.md, "Marking"), after every tape event.
    pub mark: f64,
    /// Is the mark a model price (an option's fair)?
    pub model: bool,
    /// Realised and open P&L on this instrument, dollars.
    pub pnl_usd: f64,
    /// Realised P&L, dollars.
    pub real_usd: f64,
    /// Open (unrealised) P&L at the mark, dollars.
    pub open_usd: f64,
}

/// An order of the session (or a vetoed ticket), with its state, for the desk's Blotter.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OrderLogRow {
    /// `HH:MM:SS`: when it was placed (or vetoed).
    pub time: String,
    /// `HH:MM:SS`: when it left the book, filled or cancelled (`None` while it works).
    pub closed: Option<String>,
    pub plan: String,
    pub clause: String,
    /// `buy`, `sell`, or empty for a vetoed ticket.
    pub side: String,
    pub qty: u64,
    pub instrument: String,
    pub limit: Option<f64>,
    /// The average price it filled at, once it has.
    pub fill_px: Option<f64>,
    /// `working`, `filled`, `cancelled`, `vetoed`.
    pub state: String,
    /// What L0 risk did: `qty 100→96 plan`, `VETO worst $58.00 > $0.00 left`.
    pub risk: Option<String>,
}

/// A resting order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OrderRow {
    pub plan: String,
    pub side: String,
    pub qty: i64,
    pub instrument: String,
    pub limit: f64,
}

/// A plan and its state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanRow {
    pub name: String,
    /// armed / fired / resting / filled / expired / stood-down / done / de-armed.
    pub state: crate::bus::PlanState,
    pub budget_r: f64,
    pub used_r: f64,
    /// When it expires on the tape's clock (`14:45`; a ttl written `+30m` reads at its end
    /// once armed: [`ttl_shown`]).
    pub ttl: String,
    /// Why it is in that state (the clause that fired, what is UNKNOWN, ...), led by the
    /// last L0 risk decision on its tickets when there was one (`VETO worst $58.00 > $0.00
    /// left · WHEN fired 09:41`, `qty 3→2 plan · …`), as the desk's Plans pane says it.
    pub note: String,
}

/// A plan's ttl as the desk's Plans pane and the View's `[plans]` section show it: when the
/// plan expires, on the tape's clock. A ttl written from the arming (`ttl +30m`) is shown at
/// its `end` once armed (`11:11`), which is what a trader (or an agent) watches; the
/// document keeps what was written. Seconds show only where the end has them.
pub fn ttl_shown(ttl: &crate::lang::ast::Ttl, end: Option<crate::market::Ts>) -> String {
    match (ttl, end) {
        (crate::lang::ast::Ttl::After(_), Some(end)) => clock_text(end),
        (ttl, _) => crate::lang::print::ttl_text(ttl),
    }
}

/// A tape time as a ttl reads: `HH:MM`, with the seconds where it has them (`10:51:30`).
pub fn clock_text(t: crate::market::Ts) -> String {
    t.clock_text()
}

/// A fill.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FillRow {
    /// `HH:MM:SS`.
    pub time: String,
    pub plan: String,
    pub side: String,
    pub qty: i64,
    pub instrument: String,
    pub px: f64,
    /// Filled against the tape's quote, not the model's book (absent when false).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub quoted: bool,
}

/// A position settled at the close (a 0dte option at its intrinsic value).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SettledRow {
    /// `HH:MM:SS`.
    pub time: String,
    pub plan: String,
    /// The position settled, signed (positive: a long one).
    pub qty: i64,
    pub instrument: String,
    /// The settlement price as the Bus writes it (`1.90`, `0.0125`: never rounded).
    pub px: String,
}

/// A journal line lifted from an author's comments.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JournalRow {
    pub time: String,
    pub author: String,
    pub text: String,
}

/// The book at an instant.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Snapshot {
    pub positions: Vec<PositionRow>,
    pub orders: Vec<OrderRow>,
    pub plans: Vec<PlanRow>,
    pub fills: Vec<FillRow>,
    /// The positions settled at the close, oldest first (not drawn in a Frame: the
    /// desk's Blotter lists them with the fills).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub settled: Vec<SettledRow>,
    pub journal: Vec<JournalRow>,
    /// Risk committed across plans, in R.
    pub budget_used_r: f64,
    /// The book's budget, when a BOOK statement sets one.
    pub budget_r: Option<f64>,
    pub wakes_used: u32,
    pub wakes_budget: Option<u32>,
    pub pnl_usd: f64,
    pub pnl_r: f64,
    /// The book's realised P&L, dollars and R.
    pub realised_usd: f64,
    pub realised_r: f64,
    /// The book's open P&L at the marks, dollars and R.
    pub open_usd: f64,
    pub open_r: f64,
    /// 1R in dollars.
    pub r_usd: f64,
    /// Every order of the session with its state, oldest first.
    pub order_log: Vec<OrderLogRow>,
    /// On a tape of several sessions: which one this book is, and the whole tape's P&L (the
    /// figures above are this session's). Not drawn in a Frame.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tape_total: Option<TapeTotal>,
}

/// A multi-session tape's place and total, as the desk's Blotter heads its book with it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TapeTotal {
    /// This session's number (1, 2, …) and date.
    pub session: u32,
    pub date: String,
    /// Sessions begun so far.
    pub sessions: usize,
    /// The book's P&L over every session so far (realised, and open at the latest marks),
    /// dollars and R.
    pub pnl_usd: f64,
    pub pnl_r: f64,
}

impl Snapshot {
    /// The book as the Blotter projects it: open positions, resting orders, fills, and the
    /// book's P&L in dollars and in R (exact, [`crate::bus::blotter::to_r`]). Plans, the
    /// journal and the wake count are the caller's to fill.
    pub fn from_blotter(b: &crate::bus::blotter::Blotter) -> Snapshot {
        let money = |m: i64| m as f64 / crate::market::types::PX_SCALE as f64;
        let mut snap = Snapshot::default();
        // The current session's book (on a v1 tape's Bus, the whole Bus's): positions are
        // flat at a session's start, its orders and fills are the ones after it.
        let (orders_at, fills_at, settled_at) = b
            .sessions
            .last()
            .map_or((0, 0, 0), |s| (s.orders_at, s.fills_at, s.settled_at));
        for (plan, legs) in &b.positions {
            for (leg, p) in legs.iter().filter(|(_, p)| p.qty != 0) {
                let realised = p.realised.saturating_sub(b.realised_before(plan, leg));
                let (mark, model) = b.mark_of(leg, p);
                let open = p.open_at(mark);
                snap.positions.push(PositionRow {
                    plan: plan.clone(),
                    instrument: leg.clone(),
                    qty: p.qty,
                    avg_px: p.avg_px().map(|x| x.to_f64()).unwrap_or(0.0),
                    mark: mark.map(|x| x.to_f64()).unwrap_or(0.0),
                    model,
                    pnl_usd: money(open.saturating_add(realised)),
                    real_usd: money(realised),
                    open_usd: money(open),
                });
            }
        }
        for o in b.orders.iter().skip(orders_at) {
            snap.order_log.push(OrderLogRow {
                time: o.ts.hhmmss(),
                closed: o.closed.map(crate::market::types::Ts::hhmmss),
                plan: o.plan.clone(),
                clause: o.clause.clone(),
                side: o
                    .side
                    .map(|s| format!("{s:?}").to_lowercase())
                    .unwrap_or_default(),
                qty: o.qty,
                instrument: o.leg.clone(),
                limit: o.limit.map(|x| x.to_f64()),
                fill_px: o.fill_px.map(|x| x.to_f64()),
                state: o.state.name().to_string(),
                risk: o.risk.clone(),
            });
        }
        for o in b.resting.values() {
            snap.orders.push(OrderRow {
                plan: o.plan.clone(),
                side: format!("{:?}", o.side).to_lowercase(),
                qty: o.qty as i64,
                instrument: o.leg.clone(),
                limit: o.limit.to_f64(),
            });
        }
        for f in b.fills.iter().skip(fills_at) {
            snap.fills.push(FillRow {
                time: f.ts.get(..8).unwrap_or(&f.ts).to_string(),
                plan: f.plan.clone(),
                side: format!("{:?}", f.side).to_lowercase(),
                qty: f.qty as i64,
                instrument: f.leg.clone(),
                px: f.px.to_f64(),
                quoted: f.quoted,
            });
        }
        for x in b.settled.iter().skip(settled_at) {
            snap.settled.push(SettledRow {
                time: x.ts.hhmmss(),
                plan: x.plan.clone(),
                qty: x.qty,
                instrument: x.leg.clone(),
                px: x.px.to_string(),
            });
        }
        let in_r = |m: i64| b.in_r(m).map(|x| x.to_f64()).unwrap_or(0.0);
        let (pnl, real) = b.session_book();
        snap.pnl_usd = money(pnl);
        snap.pnl_r = in_r(pnl);
        let open = b.book_open();
        snap.realised_usd = money(real);
        snap.realised_r = in_r(real);
        snap.open_usd = money(open);
        snap.open_r = in_r(open);
        snap.r_usd = b.r_usd.to_f64();
        if let Some(cur) = b.sessions.last().filter(|_| b.sessions.len() > 1) {
            let all = b.book_pnl();
            snap.tape_total = Some(TapeTotal {
                session: cur.session,
                date: cur.date.clone(),
                sessions: b.sessions.len(),
                pnl_usd: money(all),
                pnl_r: in_r(all),
            });
        }
        snap
    }
}
