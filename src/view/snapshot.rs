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
    /// armed / fired / resting / filled / expired / stood down / done / de-armed.
    pub state: String,
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
