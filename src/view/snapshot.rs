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
    /// Valued at fair.
    pub mark: f64,
    pub pnl_usd: f64,
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
    /// `14:45` or `+30m from 10:05`.
    pub ttl: String,
    /// Why it is in that state (the clause that fired, what is UNKNOWN, ...).
    pub note: String,
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
    pub journal: Vec<JournalRow>,
    /// Risk committed across plans, in R.
    pub budget_used_r: f64,
    /// The book's budget, when a BOOK statement sets one.
    pub budget_r: Option<f64>,
    pub wakes_used: u32,
    pub wakes_budget: Option<u32>,
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
        for (plan, legs) in &b.positions {
            for (leg, p) in legs.iter().filter(|(_, p)| p.qty != 0) {
                snap.positions.push(PositionRow {
                    plan: plan.clone(),
                    instrument: leg.clone(),
                    qty: p.qty,
                    avg_px: p.avg_px().map(|x| x.to_f64()).unwrap_or(0.0),
                    mark: p.mark.map(|x| x.to_f64()).unwrap_or(0.0),
                    pnl_usd: money(p.open_pnl() + p.realised),
                });
            }
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
        for f in &b.fills {
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
        let pnl = b.book_pnl();
        snap.pnl_usd = money(pnl);
        snap.pnl_r = crate::bus::blotter::to_r(pnl, b.r_usd)
            .map(|x| x.to_f64())
            .unwrap_or(0.0);
        snap
    }
}
