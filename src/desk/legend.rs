//! The legend (`?`): what each pane's terms mean, under the key list.

/// (pane, term, meaning). `{r}` is replaced by the dollar value of 1R in force and `{q}` by
/// a quarter of it.
pub const TERMS: &[(&str, &str, &str)] = &[
    (
        "status",
        "hash … (engine)",
        "the determinism hash of the engine's Bus so far: the same tape and acts give the same hash",
    ),
    (
        "status",
        "mode sim",
        "a replayed tape; nothing reaches a broker",
    ),
    (
        "chart",
        "▲ ▼ ◆",
        "a buy fill, a sell fill (at the fill price on its own symbol), a plan firing",
    ),
    (
        "chart",
        "╌ VWAP HOD LOD",
        "session volume-weighted average, high and low of day (an arrow: off the window)",
    ),
    (
        "view",
        "bp vs anchor",
        "tape rows are basis points (0.01%) against the @HH:MM keyframe price above them",
    ),
    ("view", "516*", "the chain's at-the-money strike is starred"),
    (
        "view",
        "rank p16",
        "a percentile rank among today's once-a-second samples (p16: lower than 84% of them)",
    ),
    (
        "view",
        "[kernel]",
        "the book's own line: P&L in $ and R, risk used, wakes used, positions, orders",
    ),
    (
        "plans",
        "0.25R",
        "a plan's risk budget in R; 1R = ${r} here, so 0.25R = ${q}",
    ),
    (
        "plans",
        "pnl/budget",
        "the plan's P&L in R against its budget in R",
    ),
    (
        "plans",
        "STOP",
        "not a clause you wrote: the engine's budget stop, kept for shares bought with no stop written (assumed 1% under the limit); at or past it the plan sells what it holds at the bid",
    ),
    (
        "blotter",
        "mid / model",
        "how a position is marked: the quote's mid, or a model price (an option's fair value) where no quote marks it",
    ),
    (
        "blotter",
        "@ 0.44 lim 0.45",
        "an order's fill price, and its limit beside it when the fill was better",
    ),
    (
        "blotter",
        "settled … (close)",
        "a position settled at the close without a fill (a 0dte option at its intrinsic value)",
    ),
    (
        "log",
        "kind",
        "tape = session, armed, plan, fire, order, fill, risk = veto, clamp or pod halt, mark, wake, muted = suppressed wake, frame, turn, stop = stand-down or cancel, news = headline, error (/ matches either word)",
    ),
    (
        "log",
        "×N (since …)",
        "N equal events in a row collapsed into one; / filters by kind or plan",
    ),
    (
        "tokens",
        "kestrel / envelope",
        "cl100k tokens of the turn as Kestrel and as the equivalent JSON envelope",
    ),
];

/// The legend's lines for 1R = `r_usd` dollars.
pub fn lines(r_usd: i64) -> Vec<(String, String)> {
    TERMS
        .iter()
        .map(|(pane, term, meaning)| {
            let m = meaning
                .replace("{r}", &r_usd.to_string())
                .replace("{q}", &format!("{:.0}", r_usd as f64 / 4.0));
            (format!("{pane:<6} {term}"), m)
        })
        .collect()
}
