//! The Blotter: positions, resting orders, fills, realised and open P&L in dollars and in R,
//! as a pure projection of the Bus. [`Blotter::from_events`] over a saved Bus gives exactly
//! the Blotter the engine held when it wrote that Bus.
//!
//! Money is fixed-point ([`Px`] units: ten-thousandths of a dollar), so P&L is exact.
//! Positions use average cost: closing `k` of `q` units releases `k/q` of the cost
//! (integer division, truncating toward zero).

use std::collections::BTreeMap;

use super::{BusSide, Event, OrderRole, PlanState};
use crate::market::{Px, Ts};

/// One position: a plan's holding of one instrument.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Position {
    /// Signed quantity (positive = long).
    pub qty: i64,
    /// Signed cost of the open quantity, money units (Σ qty·px·mult).
    pub cost: i128,
    /// Realised P&L on this instrument, money units.
    pub realised: i64,
    /// The position's own mark: its latest fill, settlement or `mark` event. The live market
    /// mark the engine gives after every tape event is held per instrument and read through
    /// [`Blotter::mark_of`], which gives whichever of the two is newer.
    pub mark: Option<Px>,
    /// Is the own mark a model price (an option's fair), not a quote or a trade?
    pub model: bool,
    /// Contract multiplier.
    pub mult: u32,
    /// When the own mark was set: the Blotter's [`events`](Blotter::events) count then.
    pub at: u64,
}

impl Position {
    /// Open P&L at its own latest mark, money units (0 when flat or unmarked). The Blotter's
    /// open P&L marks live: [`Blotter::open_pnl_of`].
    pub fn open_pnl(&self) -> i64 {
        self.open_at(self.mark)
    }

    /// Open P&L at `mark`, money units (0 when flat or unmarked).
    pub fn open_at(&self, mark: Option<Px>) -> i64 {
        match mark {
            Some(m) if self.qty != 0 => {
                let value = i128::from(m.raw()) * i128::from(self.qty) * i128::from(self.mult);
                clamp_i64(value - self.cost)
            }
            _ => 0,
        }
    }

    /// Average cost per unit (price units), if not flat.
    pub fn avg_px(&self) -> Option<Px> {
        if self.qty == 0 || self.mult == 0 {
            return None;
        }
        Some(Px(clamp_i64(
            self.cost / (i128::from(self.qty) * i128::from(self.mult)),
        )))
    }

    /// Apply a trade of `signed` units at `px`.
    pub fn trade(&mut self, signed: i64, px: Px, mult: u32) {
        self.mult = mult;
        self.mark = Some(px);
        self.model = false;
        let m = i128::from(mult);
        let p = i128::from(px.raw());
        let mut rest = signed;
        if self.qty != 0 && (self.qty > 0) != (signed > 0) {
            let k = signed.unsigned_abs().min(self.qty.unsigned_abs()) as i64;
            let q = self.qty.unsigned_abs() as i128;
            let removed = self.cost * i128::from(k) / q;
            let sign: i64 = if self.qty > 0 { 1 } else { -1 };
            let proceeds = p * m * i128::from(k) * i128::from(sign);
            self.realised = clamp_i64(i128::from(self.realised) + proceeds - removed);
            self.cost -= removed;
            self.qty -= k * sign;
            rest = signed + k * sign;
            if self.qty == 0 {
                self.cost = 0;
            }
        }
        if rest != 0 {
            self.cost += p * m * i128::from(rest);
            self.qty += rest;
        }
    }
}

fn clamp_i64(x: i128) -> i64 {
    x.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// A resting order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resting {
    /// Plan name.
    pub plan: String,
    /// Clause that placed it.
    pub clause: String,
    /// Role.
    pub role: OrderRole,
    /// Instrument key.
    pub leg: String,
    /// Side.
    pub side: BusSide,
    /// Quantity.
    pub qty: u64,
    /// Current limit.
    pub limit: Px,
}

/// Where an order (or a ticket L0 risk refused) stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderState {
    /// Placed and resting.
    Working,
    /// Filled whole.
    Filled,
    /// Cancelled (what filled before stays filled).
    Cancelled,
    /// Refused by L0 risk: never placed.
    Vetoed,
}

impl OrderState {
    /// The word the Blotter shows.
    pub fn name(self) -> &'static str {
        match self {
            OrderState::Working => "working",
            OrderState::Filled => "filled",
            OrderState::Cancelled => "cancelled",
            OrderState::Vetoed => "vetoed",
        }
    }
}

/// One order of the session (or a vetoed ticket), newest state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderLine {
    /// Tape time it was placed (or vetoed).
    pub ts: Ts,
    /// Order id (`None`: a vetoed ticket, never placed).
    pub id: Option<u64>,
    /// Plan name.
    pub plan: String,
    /// Clause that placed it.
    pub clause: String,
    /// Instrument key (empty for a vetoed ticket).
    pub leg: String,
    /// Side (`None` for a vetoed ticket).
    pub side: Option<BusSide>,
    /// Quantity placed.
    pub qty: u64,
    /// Quantity filled so far.
    pub filled: u64,
    /// The average price it filled at (`None` until a fill): a limit order fills at its
    /// limit or better, so a trader reads both.
    pub fill_px: Option<Px>,
    /// Current limit (`None` for a vetoed ticket).
    pub limit: Option<Px>,
    /// Its state.
    pub state: OrderState,
    /// Tape time it left the book: its fill (strict-cross-v1 fills an order whole) or its
    /// cancel. `None` while it works, and for a vetoed ticket (never placed).
    pub closed: Option<Ts>,
    /// What L0 risk did to it: `qty 100→96 plan`, `VETO worst $58 > $0 left`.
    pub risk: Option<String>,
}

/// A position settled at the session's close (a 0dte option at its intrinsic value): it
/// leaves the book without a fill, so the Blotter keeps it beside the fills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled {
    /// Tape time (the close).
    pub ts: Ts,
    /// Plan name.
    pub plan: String,
    /// Instrument key.
    pub leg: String,
    /// The position settled, signed (positive: a long one).
    pub qty: i64,
    /// Settlement price.
    pub px: Px,
}

/// One fill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FillRow {
    /// Tape time, `HH:MM:SS.mmm`.
    pub ts: String,
    /// Order id.
    pub order: u64,
    /// Plan name.
    pub plan: String,
    /// Instrument key.
    pub leg: String,
    /// Side.
    pub side: BusSide,
    /// Quantity.
    pub qty: u64,
    /// Price.
    pub px: Px,
    /// Filled against the tape's quote (not the model's book).
    pub quoted: bool,
}

/// Per-plan summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanLine {
    /// Latest state.
    pub state: PlanState,
    /// Entry fires (WHEN and RELOAD).
    pub fires: u64,
    /// Fills (every role).
    pub fills: u64,
    /// Maximum adverse excursion, money units (≤ 0), from the `excursion` event.
    pub mae: i64,
    /// Order in which plans first appeared.
    pub seq: u64,
    /// Who armed it, where the book is shared (the desk).
    pub owner: Option<String>,
    /// The last clause that fired (`WHEN fired 09:31`) or why the plan is in its state.
    pub note: Option<String>,
    /// When [`note`](PlanLine::note) was written (tape time): the desk shows the newer of
    /// the note and the risk decision first.
    pub note_ts: Option<Ts>,
    /// The last risk decision on its tickets: a veto or a size clamp, with the arithmetic.
    pub risk: Option<Risk>,
    /// How many of its tickets (or their re-prices) L0 risk refused, and how many it scaled
    /// down: `kestrel run`'s report says so, where a vetoed plan read like one that did not
    /// fill.
    pub vetoes: u64,
    /// How many of its tickets (or their re-prices) L0 risk scaled down to fit.
    pub clamps: u64,
    /// Why the plan is in its latest state, as its `plan-state` event said (`UNKNOWN symbol
    /// SPX: the tape does not carry it (USING)` for a de-armed plan); `None` when that event
    /// gave no reason. Unlike [`note`](PlanLine::note), a later fire does not replace it.
    pub reason: Option<String>,
}

impl PlanLine {
    /// What the plan's row says under its state: see [`summary_of`].
    pub fn summary(&self) -> String {
        summary_of(self.note.as_deref(), self.fires, self.fills)
    }
}

/// What a plan's row says under its state: the note when there is one (the clause that
/// fired, or why it is in its state), else its fires and fills (`no fire yet` while it has
/// none, not `fires 0 fills 0`).
pub fn summary_of(note: Option<&str>, fires: u64, fills: u64) -> String {
    match (note, fires, fills) {
        (Some(n), _, _) => n.to_string(),
        (None, 0, 0) => "no fire yet".into(),
        (None, f, n) => format!("fired {f}× · {n} fill{}", if n == 1 { "" } else { "s" }),
    }
}

/// A POD's day-loss halt (`pod-halt`) with what the engine did to the book at it, read from
/// the events it wrote after it at the same tape time: the plans it halted (their
/// `plan-state` says `POD <name> day-loss`), the working orders it pulled (`pod halt`) and
/// the plans it flattened (`FLATTEN` orders).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodHaltLine {
    /// Tape time of the breach.
    pub ts: Ts,
    /// The POD's name.
    pub pod: String,
    /// The book's loss at the breach, dollars (positive).
    pub loss: Px,
    /// The POD's day-loss limit, dollars.
    pub limit: Px,
    /// The plans it halted, in the order it halted them.
    pub halted: Vec<String>,
    /// The plans whose working orders it pulled, each once, with how many.
    pub pulled: Vec<(String, u64)>,
    /// The plans whose positions it flattened, each once.
    pub flattened: Vec<String>,
}

impl PodHaltLine {
    /// The `plan-state` reason of a plan this POD halted.
    pub fn reason(&self) -> String {
        pod_halt_reason(&self.pod)
    }
}

/// The `plan-state` reason the engine gives a plan a POD's day-loss halted (the engine writes
/// it with this function, and the Blotter and `kestrel run` read it back by it).
pub fn pod_halt_reason(pod: &str) -> String {
    format!("POD {pod} day-loss")
}

/// A risk decision on a plan's ticket (`veto`, `clamp` events), for the screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Risk {
    /// Tape time.
    pub ts: Ts,
    /// The clause whose ticket it was.
    pub clause: String,
    /// Refused, or reduced from one quantity to another.
    pub kind: RiskKind,
    /// Which budget decided.
    pub budget: String,
    /// The arithmetic, as the engine wrote it.
    pub reason: String,
}

impl Risk {
    /// The decision in a few words, for a plan's row and an order's:
    /// `VETO worst $58.00 > $0.00 left` or `qty 100→96 plan`.
    pub fn short(&self) -> String {
        match self.kind {
            RiskKind::Veto => format!("VETO {}", short_reason(&self.reason)),
            RiskKind::Clamp { from, to } => format!("qty {from}→{to} {}", self.budget),
        }
    }
}

/// `worst case $58.00 exceeds the $0.00 left …` → `worst $58.00 > $0.00 left`; a re-price's
/// `re-price esc#1 to 0.64: worst case $128.00 exceeds the $100.00 left …` → `worst $128.00 >
/// $100.00 left (re-price esc#1 0.64)`: the figures first, as a fire's, so a row cut at 100x30
/// still shows the room left (the long reason was cut before it at every size); any other
/// reason as written.
fn short_reason(reason: &str) -> String {
    if let Some((at, rest)) = reason
        .strip_prefix("re-price ")
        .and_then(|r| r.split_once(": "))
        .filter(|(_, rest)| rest.starts_with("worst case"))
    {
        let at = at.replacen(" to ", " ", 1);
        return format!("{} (re-price {at})", short_reason(rest));
    }
    let amounts: Vec<&str> = reason
        .split_whitespace()
        .filter(|w| w.starts_with('$'))
        .take(2)
        .collect();
    match amounts.as_slice() {
        [want, left] if reason.starts_with("worst case") => {
            format!("worst {} > {} left", cents(want), cents(left))
        }
        _ => reason.to_string(),
    }
}

/// A dollar amount as the engine writes it (`$4.1408`, Px's four decimals) to the cent, for
/// the screen: `$4.14`, rounded half away from zero. Anything else is returned as written.
fn cents(word: &str) -> String {
    let Some(body) = word.strip_prefix('$') else {
        return word.to_string();
    };
    let body = body.trim_end_matches([',', ';', '.', ')']);
    let (neg, digits) = match body.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, body),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let ok = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || int.len() > 15 || frac.len() > 4 || !ok(int) || !ok(frac) {
        return word.to_string();
    }
    let frac4 = format!("{frac:0<4}");
    let raw = int.parse::<i64>().unwrap_or(0) * 10_000 + frac4.parse::<i64>().unwrap_or(0);
    format!("${}", Px(if neg { -raw } else { raw }).cents())
}

/// What L0 risk did to a ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RiskKind {
    /// Refused whole.
    Veto,
    /// Quantity reduced to fit.
    Clamp {
        /// Asked.
        from: u64,
        /// Allowed.
        to: u64,
    },
}

/// A fire or a fill at a tape time (the chart's marks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    /// When.
    pub ts: Ts,
    /// The plan.
    pub plan: String,
    /// A fill (`Some(side)`) or a fire (`None`).
    pub fill: Option<BusSide>,
    /// A fire's clause as the Bus names it (`WHEN`, `TP#1`, `EXIT#1`); empty for a fill.
    pub clause: String,
}

/// Where a session of a multi-session Bus (v2 tapes) began in the Blotter's totals.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionMark {
    /// Session number (1, 2, …).
    pub session: u32,
    /// Session date.
    pub date: String,
    /// Per plan at the session's start: (P&L, fires, fills) so far.
    base: BTreeMap<String, (i64, u64, u64)>,
    /// Per plan at the session's end, with its state then (set when the next one starts).
    end: Option<BTreeMap<String, (i64, u64, u64, PlanState)>>,
    /// Plans that had an event in the session.
    seen: std::collections::BTreeSet<String>,
    /// Where the session's orders and fills begin in [`Blotter::orders`] and
    /// [`Blotter::fills`].
    pub orders_at: usize,
    pub fills_at: usize,
    /// Where its settlements begin in [`Blotter::settled`].
    pub settled_at: usize,
    /// Where its fires and fills begin in [`Blotter::marks`].
    pub marks_at: usize,
    /// Per plan and leg: the realised P&L booked before the session.
    real_base: BTreeMap<String, BTreeMap<String, i64>>,
}

/// One plan's result in one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionPlan {
    /// Plan name.
    pub name: String,
    /// State at the session's end.
    pub state: PlanState,
    /// Entry fires in the session.
    pub fires: u64,
    /// Fills in the session.
    pub fills: u64,
    /// P&L of the session, money units.
    pub pnl: i64,
}

/// One session's results (see [`Blotter::session_results`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionResult {
    /// Session number.
    pub session: u32,
    /// Session date.
    pub date: String,
    /// The plans active in it, in order of first appearance on the Bus.
    pub plans: Vec<SessionPlan>,
    /// The book's P&L in the session, money units.
    pub pnl: i64,
}

/// One instrument's live mark: what the engine last gave for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LiveMark {
    px: Px,
    model: bool,
    /// The Blotter's event count when it was given.
    at: u64,
}

/// The engine's live marks, one per instrument key ([`Blotter::mark_live`]).
///
/// Not a projection of the Bus (a replayed Bus marks at fills and the close only), so two
/// Blotters are equal whatever live marks they hold: `Blotter::from_events` over a saved Bus
/// equals the Blotter the engine held when it wrote it.
///
/// Held per instrument, not per position, so marking costs one lookup per instrument per tape
/// event however many plans hold it; a position reads its instrument's mark when the mark is
/// newer than its own (a fill, a settlement or a `mark` event since replaces it until the
/// engine marks again). An instrument is marked only while some position in it is open, and a
/// position is opened only by a fill, so a live mark newer than an open position's own was
/// given while it was open: the same mark the engine used to write into every open position.
#[derive(Debug, Clone, Default)]
pub struct LiveMarks(BTreeMap<String, LiveMark>);

impl PartialEq for LiveMarks {
    fn eq(&self, _: &LiveMarks) -> bool {
        true
    }
}

impl Eq for LiveMarks {}

impl LiveMarks {
    /// `p`'s mark (held in instrument `leg`) and whether it is a model price.
    fn mark(&self, leg: &str, p: &Position) -> (Option<Px>, bool) {
        match self.0.get(leg) {
            Some(l) if p.qty != 0 && l.at >= p.at => (Some(l.px), l.model),
            _ => (p.mark, p.model),
        }
    }
}

/// Where each order id is in [`Blotter::orders`]: the engine's ids (counted from 1) by
/// index in a vector, any id from 2^20 on in a map. An order's every re-price looks it up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct OrderIndex {
    small: Vec<u32>,
    large: BTreeMap<u64, usize>,
}

impl OrderIndex {
    const SMALL: u64 = 1 << 20;

    fn insert(&mut self, id: u64, at: usize) {
        match u32::try_from(at) {
            Ok(at) if id < Self::SMALL && at != u32::MAX => {
                let i = id as usize;
                if self.small.len() <= i {
                    self.small.resize(i + 1, u32::MAX);
                }
                self.small[i] = at;
                self.large.remove(&id);
            }
            _ => {
                if let Some(x) = usize::try_from(id).ok().and_then(|i| self.small.get_mut(i)) {
                    *x = u32::MAX;
                }
                self.large.insert(id, at);
            }
        }
    }

    fn get(&self, id: u64) -> Option<usize> {
        let small = usize::try_from(id)
            .ok()
            .and_then(|i| self.small.get(i))
            .filter(|&&at| at != u32::MAX);
        match small {
            Some(&at) => Some(at as usize),
            None => self.large.get(&id).copied(),
        }
    }
}

/// Resting orders by id, in id order: a sorted vector (a book holds a handful, and ids come
/// in increasing order, so an order is placed at the end), searched by halves. A working
/// order is re-priced at most events of its symbol; a map's node walk cost four times the
/// search.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestingBook(Vec<(u64, Resting)>);

impl RestingBook {
    fn at(&self, id: u64) -> Result<usize, usize> {
        self.0.binary_search_by_key(&id, |e| e.0)
    }

    /// Place (or replace) order `id`.
    pub fn insert(&mut self, id: u64, r: Resting) {
        match self.at(id) {
            Ok(i) => self.0[i].1 = r,
            Err(i) => self.0.insert(i, (id, r)),
        }
    }

    /// Order `id`, if it rests. (the tests' reading of the book)
    #[cfg(test)]
    pub fn get(&self, id: u64) -> Option<&Resting> {
        self.at(id).ok().map(|i| &self.0[i].1)
    }

    /// Order `id`, if it rests, to change.
    pub fn get_mut(&mut self, id: u64) -> Option<&mut Resting> {
        let i = self.at(id).ok()?;
        Some(&mut self.0[i].1)
    }

    /// Take order `id` off the book.
    pub fn remove(&mut self, id: u64) -> Option<Resting> {
        let i = self.at(id).ok()?;
        Some(self.0.remove(i).1)
    }

    /// The resting orders, by id. (the tests' reading of the book)
    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = (u64, &Resting)> {
        self.0.iter().map(|(id, r)| (*id, r))
    }

    /// The resting orders, in id order.
    pub fn values(&self) -> impl Iterator<Item = &Resting> {
        self.0.iter().map(|e| &e.1)
    }

    /// How many rest. (the tests' reading of the book)
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// None rests. (the tests' reading of the book)
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

/// The Blotter: a pure projection of the Bus.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Blotter {
    /// Tape name.
    pub tape: String,
    /// Fill model.
    pub fill_model: String,
    /// Dollars per R, money units.
    pub r_usd: Px,
    /// Positions by plan, then instrument key.
    pub positions: BTreeMap<String, BTreeMap<String, Position>>,
    /// Resting orders by id.
    pub resting: RestingBook,
    /// Every fill, in order.
    pub fills: Vec<FillRow>,
    /// Every settlement at a close, in order.
    pub settled: Vec<Settled>,
    /// Per-plan lines.
    pub plans: BTreeMap<String, PlanLine>,
    /// Events applied.
    pub events: u64,
    /// Every fire and fill, in order.
    pub marks: Vec<Mark>,
    /// Every order placed (and every ticket vetoed), in order, with its state.
    pub orders: Vec<OrderLine>,
    /// Where each order id is in [`Blotter::orders`].
    order_at: OrderIndex,
    /// A clamp waiting for the order it sized: (plan, clause) → `qty 100→96 plan`.
    clamped: BTreeMap<(String, String), String>,
    /// The sessions of a multi-session Bus (empty on a v1 tape's).
    pub sessions: Vec<SessionMark>,
    /// Every POD day-loss halt, in order, with what it did.
    pub pod_halts: Vec<PodHaltLine>,
    /// The engine's live marks (not part of the projection: see [`LiveMarks`]).
    live: LiveMarks,
}

impl Blotter {
    /// Rebuild from a whole Bus.
    pub fn from_events(events: &[Event]) -> Blotter {
        let mut b = Blotter::default();
        for e in events {
            b.apply(e);
        }
        b
    }

    /// The last POD halt, if it was at `ts`: the engine writes what a halt does right after
    /// its `pod-halt` event, in the same step (after every plan stepped, so nothing else of
    /// the step comes between).
    fn pod_halt_at(&mut self, ts: Ts) -> Option<&mut PodHaltLine> {
        self.pod_halts.last_mut().filter(|h| h.ts == ts)
    }

    /// Note a risk decision on one of `plan`'s tickets.
    /// The short form of a plan's latest risk decision (`qty 3→2 plan`, `VETO …`).
    fn risk_short(&self, plan: &str) -> Option<String> {
        self.plans
            .get(plan)
            .and_then(|l| l.risk.as_ref())
            .map(Risk::short)
    }

    fn risk(
        &mut self,
        plan: &str,
        ts: Ts,
        clause: &str,
        kind: RiskKind,
        budget: &str,
        reason: &str,
    ) {
        let line = self.line(plan);
        match kind {
            RiskKind::Veto => line.vetoes += 1,
            RiskKind::Clamp { .. } => line.clamps += 1,
        }
        line.risk = Some(Risk {
            ts,
            clause: clause.to_string(),
            kind,
            budget: budget.to_string(),
            reason: reason.to_string(),
        });
    }

    /// Mark instrument `leg` at the market (`model`: an option's model fair): what the engine
    /// gives after a tape event that moved it, while some position in it is open, so open P&L
    /// follows the market. Not a Bus event (a replayed Bus marks at fills and the close only);
    /// every open position in `leg` reads it ([`LiveMarks`]).
    pub fn mark_live(&mut self, leg: &str, px: Px, model: bool) {
        let m = LiveMark {
            px,
            model,
            at: self.events,
        };
        match self.live.0.get_mut(leg) {
            Some(l) => *l = m,
            None => {
                self.live.0.insert(leg.to_string(), m);
            }
        }
    }

    /// Position `p` (held in instrument `leg`)'s mark, and whether it is a model price: the
    /// engine's live mark of `leg` when newer than the position's own, else its own.
    pub fn mark_of(&self, leg: &str, p: &Position) -> (Option<Px>, bool) {
        self.live.mark(leg, p)
    }

    /// Position `p` (held in instrument `leg`)'s open P&L at [`Blotter::mark_of`], money units.
    pub fn open_pnl_of(&self, leg: &str, p: &Position) -> i64 {
        p.open_at(self.mark_of(leg, p).0)
    }

    /// An `order-repriced` event applied: [`apply`](Self::apply) of one, by its fields.
    pub(crate) fn repriced(&mut self, order: u64, limit: Px) {
        self.events += 1;
        self.set_limit(order, limit);
    }

    /// A working order's new limit, resting and in its line.
    #[inline(always)]
    fn set_limit(&mut self, order: u64, limit: Px) {
        if let Some(r) = self.resting.get_mut(order) {
            r.limit = limit;
        }
        if let Some(o) = self.order_mut(order) {
            o.limit = Some(limit);
        }
    }

    fn order_mut(&mut self, id: u64) -> Option<&mut OrderLine> {
        let i = self.order_at.get(id)?;
        self.orders.get_mut(i)
    }

    fn line(&mut self, plan: &str) -> &mut PlanLine {
        if let Some(s) = self.sessions.last_mut()
            && !s.seen.contains(plan)
        {
            s.seen.insert(plan.to_string());
        }
        let n = self.plans.len() as u64;
        self.plans.entry(plan.to_string()).or_insert(PlanLine {
            state: PlanState::Armed,
            fires: 0,
            fills: 0,
            mae: 0,
            seq: n,
            owner: None,
            note: None,
            note_ts: None,
            risk: None,
            vetoes: 0,
            clamps: 0,
            reason: None,
        })
    }

    /// What the plan of this name holds now, in words (`+100 SPY shares and 1 working
    /// order`), or `None` when it is flat with no working order: what a plan sent again
    /// changed leaves riding beside its new version.
    pub fn holding_of(&self, plan: &str) -> Option<String> {
        let mut parts: Vec<String> = self
            .positions
            .get(plan)
            .into_iter()
            .flat_map(|legs| legs.iter())
            .filter(|(_, p)| p.qty != 0)
            .map(|(leg, p)| format!("{:+} {leg}", p.qty))
            .collect();
        let working = self.resting.values().filter(|r| r.plan == plan).count();
        if working > 0 {
            parts.push(format!(
                "{working} working order{}",
                if working == 1 { "" } else { "s" }
            ));
        }
        (!parts.is_empty()).then(|| parts.join(" and "))
    }

    /// Apply one event.
    pub fn apply(&mut self, ev: &Event) {
        self.events += 1;
        match ev {
            Event::SessionStart {
                tape,
                fill_model,
                r_usd,
                date,
                session,
                ..
            } => {
                self.tape = tape.clone();
                self.fill_model = fill_model.clone();
                self.r_usd = *r_usd;
                if let Some(n) = session {
                    self.start_session(*n, date);
                }
            }
            Event::DocumentArmed {
                ts,
                plans,
                kept,
                owner,
                ..
            } => {
                for p in plans {
                    if kept.contains(p) {
                        // Sent again unchanged: the plan stands as it was, row and all.
                        continue;
                    }
                    let again = self.plans.contains_key(p) && self.in_current_session(p);
                    let held = if again { self.holding_of(p) } else { None };
                    let l = self.line(p);
                    l.owner = owner.clone();
                    if again {
                        // A plan armed again by name (a person's corrected plan, an agent's
                        // supersede changing it): what was said of the plan it replaced, and
                        // any veto or clamp of it, is not said of this one. What the replaced
                        // plan still holds is: the new version can enter on top of it.
                        l.note_ts = Some(*ts);
                        l.note = Some(match held {
                            Some(h) => format!(
                                "re-armed {}: {p} holds {h}: the new version can enter again",
                                ts.hhmm()
                            ),
                            None => format!("re-armed {}", ts.hhmm()),
                        });
                        l.risk = None;
                    }
                }
            }
            Event::PlanState {
                ts,
                plan,
                state,
                reason,
            } => {
                let l = self.line(plan);
                l.state = *state;
                l.reason = reason.clone();
                if let Some(r) = reason {
                    l.note = Some(r.clone());
                    l.note_ts = Some(*ts);
                }
                if *state == PlanState::Halted
                    && let Some(h) = self.pod_halt_at(*ts)
                    && reason.as_deref() == Some(h.reason().as_str())
                {
                    h.halted.push(plan.clone());
                }
            }
            Event::PlanFired {
                ts, plan, clause, ..
            } => {
                let l = self.line(plan);
                if clause == "WHEN" || clause.starts_with("RELOAD") {
                    l.fires += 1;
                }
                l.note = Some(format!("{clause} fired {}", ts.hhmm()));
                l.note_ts = Some(*ts);
                self.marks.push(Mark {
                    ts: *ts,
                    plan: plan.clone(),
                    fill: None,
                    clause: clause.clone(),
                });
            }
            Event::Veto {
                ts,
                plan,
                clause,
                budget,
                reason,
                order,
            } => {
                self.risk(plan, *ts, clause, RiskKind::Veto, budget, reason);
                // A re-price refused: the order it was is cancelled next (its row says so,
                // with this veto as its risk), no ticket row of its own.
                if let Some(id) = order {
                    let short = self.risk_short(plan);
                    if let Some(o) = self.order_mut(*id) {
                        o.risk = short;
                    }
                    return;
                }
                let short = self.risk_short(plan);
                self.orders.push(OrderLine {
                    ts: *ts,
                    id: None,
                    plan: plan.clone(),
                    clause: clause.clone(),
                    leg: String::new(),
                    side: None,
                    qty: 0,
                    filled: 0,
                    fill_px: None,
                    limit: None,
                    state: OrderState::Vetoed,
                    closed: None,
                    risk: short,
                });
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
                let kind = RiskKind::Clamp {
                    from: *from_qty,
                    to: *to_qty,
                };
                self.risk(plan, *ts, clause, kind, budget, reason);
                // A resting order's re-price scaled: it works on at the quantity allowed.
                if let Some(id) = order {
                    if let Some(r) = self.resting.get_mut(*id) {
                        r.qty = *to_qty;
                    }
                    let short = self.risk_short(plan);
                    if let Some(o) = self.order_mut(*id) {
                        o.qty = *to_qty;
                        o.risk = short;
                    }
                    return;
                }
                if let Some(short) = self.risk_short(plan) {
                    self.clamped.insert((plan.clone(), clause.clone()), short);
                }
            }
            Event::OrderPlaced {
                ts,
                order,
                plan,
                clause,
                role,
                leg,
                side,
                qty,
                limit,
                ..
            } => {
                let risk = self.clamped.remove(&(plan.clone(), clause.clone()));
                if *role == OrderRole::Flatten
                    && let Some(h) = self.pod_halt_at(*ts)
                    && !h.flattened.contains(plan)
                {
                    h.flattened.push(plan.clone());
                }
                self.order_at.insert(*order, self.orders.len());
                self.orders.push(OrderLine {
                    ts: *ts,
                    id: Some(*order),
                    plan: plan.clone(),
                    clause: clause.clone(),
                    leg: leg.clone(),
                    side: Some(*side),
                    qty: *qty,
                    filled: 0,
                    fill_px: None,
                    limit: Some(*limit),
                    state: OrderState::Working,
                    closed: None,
                    risk,
                });
                self.resting.insert(
                    *order,
                    Resting {
                        plan: plan.clone(),
                        clause: clause.clone(),
                        role: *role,
                        leg: leg.clone(),
                        side: *side,
                        qty: *qty,
                        limit: *limit,
                    },
                );
            }
            Event::OrderRepriced { order, limit, .. } => self.set_limit(*order, *limit),
            Event::OrderCancelled { ts, order, reason } => {
                let pulled = self.resting.remove(*order);
                if reason == "pod halt"
                    && let Some(r) = pulled
                    && let Some(h) = self.pod_halt_at(*ts)
                {
                    match h.pulled.iter_mut().find(|(p, _)| *p == r.plan) {
                        Some((_, n)) => *n += 1,
                        None => h.pulled.push((r.plan, 1)),
                    }
                }
                if let Some(o) = self.order_mut(*order)
                    && o.state == OrderState::Working
                {
                    o.state = OrderState::Cancelled;
                    o.closed = Some(*ts);
                }
            }
            Event::Fill {
                ts,
                order,
                plan,
                leg,
                side,
                qty,
                px,
                mult,
                quoted,
            } => {
                self.resting.remove(*order);
                if let Some(o) = self.order_mut(*order) {
                    // Weighted by quantity over the fills so far (strict-cross-v1 fills an
                    // order whole: one fill, its price).
                    o.fill_px = Some(match o.fill_px {
                        Some(before) if o.filled > 0 => {
                            let (a, b) = (i128::from(o.filled), i128::from(*qty));
                            let sum = i128::from(before.0) * a + i128::from(px.0) * b;
                            Px(i64::try_from(sum / (a + b).max(1)).unwrap_or(px.0))
                        }
                        _ => *px,
                    });
                    o.filled = o.filled.saturating_add(*qty);
                    o.state = OrderState::Filled;
                    o.closed = Some(*ts);
                }
                self.marks.push(Mark {
                    ts: *ts,
                    plan: plan.clone(),
                    fill: Some(*side),
                    clause: String::new(),
                });
                let signed = i64::try_from(*qty).unwrap_or(i64::MAX) * side.sign();
                let at = self.events;
                let p = self
                    .positions
                    .entry(plan.clone())
                    .or_default()
                    .entry(leg.clone())
                    .or_default();
                p.trade(signed, *px, *mult);
                p.at = at;
                self.fills.push(FillRow {
                    ts: ts.to_string(),
                    order: *order,
                    plan: plan.clone(),
                    leg: leg.clone(),
                    side: *side,
                    qty: *qty,
                    px: *px,
                    quoted: *quoted,
                });
                self.line(plan).fills += 1;
            }
            Event::Settlement {
                ts,
                plan,
                leg,
                qty,
                px,
                mult,
            } => {
                self.settled.push(Settled {
                    ts: *ts,
                    plan: plan.clone(),
                    leg: leg.clone(),
                    qty: *qty,
                    px: *px,
                });
                let at = self.events;
                let p = self
                    .positions
                    .entry(plan.clone())
                    .or_default()
                    .entry(leg.clone())
                    .or_default();
                p.trade(-qty, *px, *mult);
                p.at = at;
            }
            Event::Mark { plan, leg, px, .. } => {
                if let Some(p) = self.positions.get_mut(plan).and_then(|m| m.get_mut(leg)) {
                    p.mark = Some(*px);
                    p.at = self.events;
                    // The close marks options at fair, shares at last. An option's fair is
                    // a model price unless the tape quoted it, which the engine's live mark of
                    // the leg says (a replayed Bus has none: fair is then labelled model).
                    p.model = !leg.ends_with(" shares")
                        && self.live.0.get(leg.as_str()).is_none_or(|l| l.model);
                }
            }
            Event::Excursion { plan, mae_usd, .. } => self.line(plan).mae = mae_usd.raw(),
            Event::PodHalt {
                ts,
                pod,
                loss_usd,
                limit_usd,
            } => self.pod_halts.push(PodHaltLine {
                ts: *ts,
                pod: pod.clone(),
                loss: *loss_usd,
                limit: *limit_usd,
                halted: Vec::new(),
                pulled: Vec::new(),
                flattened: Vec::new(),
            }),
            _ => {}
        }
    }

    /// Per plan: (P&L, fires, fills) so far.
    fn totals(&self) -> BTreeMap<String, (i64, u64, u64)> {
        self.plans
            .iter()
            .map(|(n, l)| (n.clone(), (self.pnl(n), l.fires, l.fills)))
            .collect()
    }

    /// A new session starts (v2 tapes): the previous one's totals are kept for the report,
    /// and positions do not carry over. Each session closes on its own (0dte settled, other
    /// positions marked), so a position still open is booked at its mark (its open P&L
    /// becomes realised) and the book starts flat, as on a one-session tape.
    fn start_session(&mut self, n: u32, date: &str) {
        let totals = self.totals();
        if let Some(prev) = self.sessions.last_mut() {
            let ends = totals
                .iter()
                .map(|(k, &(p, f, x))| {
                    let st = self.plans.get(k).map_or(PlanState::Done, |l| l.state);
                    (k.clone(), (p, f, x, st))
                })
                .collect();
            prev.end = Some(ends);
        }
        for legs in self.positions.values_mut() {
            for (leg, p) in legs.iter_mut() {
                if p.qty != 0 {
                    let open = p.open_at(self.live.mark(leg, p).0);
                    p.realised = p.realised.saturating_add(open);
                    p.qty = 0;
                    p.cost = 0;
                }
            }
        }
        self.resting.clear();
        // A plan's note and risk line are the session's: a plan armed again starts clean.
        for l in self.plans.values_mut() {
            l.note = None;
            l.note_ts = None;
            l.risk = None;
        }
        let real_base = self
            .positions
            .iter()
            .map(|(plan, legs)| {
                let legs = legs.iter().map(|(k, p)| (k.clone(), p.realised)).collect();
                (plan.clone(), legs)
            })
            .collect();
        self.sessions.push(SessionMark {
            session: n,
            date: date.to_string(),
            base: totals,
            end: None,
            seen: Default::default(),
            orders_at: self.orders.len(),
            fills_at: self.fills.len(),
            settled_at: self.settled.len(),
            marks_at: self.marks.len(),
            real_base,
        });
    }

    /// Does `plan` belong to the current session's book (it had an event in it)? Every
    /// plan does on a v1 tape's Bus. The View and the desk show the current session only,
    /// so that each session of a tape looks as the one-session tape of it would.
    pub fn in_current_session(&self, plan: &str) -> bool {
        self.sessions.last().is_none_or(|s| s.seen.contains(plan))
    }

    /// A plan's (P&L, fires, fills) in the current session: the Bus's so far less what it
    /// had when the session began (on a v1 tape's Bus, the whole Bus's).
    pub fn session_figures(&self, plan: &str) -> (i64, u64, u64) {
        let (f, x) = self.plans.get(plan).map_or((0, 0), |l| (l.fires, l.fills));
        let p = self.pnl(plan);
        match self.sessions.last().and_then(|s| s.base.get(plan)) {
            Some(&(bp, bf, bx)) => (
                p.saturating_sub(bp),
                f.saturating_sub(bf),
                x.saturating_sub(bx),
            ),
            None => (p, f, x),
        }
    }

    /// The realised P&L of `plan`'s position in `leg` booked before the current session
    /// (0 on a v1 tape's Bus).
    pub fn realised_before(&self, plan: &str, leg: &str) -> i64 {
        self.sessions
            .last()
            .and_then(|s| s.real_base.get(plan)?.get(leg).copied())
            .unwrap_or(0)
    }

    /// The book's (P&L, realised P&L) in the current session (the whole Bus's on a v1
    /// tape's).
    pub fn session_book(&self) -> (i64, i64) {
        let Some(s) = self.sessions.last() else {
            return (self.book_pnl(), self.book_realised());
        };
        let base_pnl: i64 = s.base.values().map(|x| x.0).sum();
        let base_real: i64 = s.real_base.values().flat_map(|m| m.values()).sum();
        (
            self.book_pnl().saturating_sub(base_pnl),
            self.book_realised().saturating_sub(base_real),
        )
    }

    /// Each session's results on a multi-session Bus (empty on a v1 tape's): per plan
    /// active in it, its fires, fills, P&L and state at the session's end, and the book's
    /// P&L in the session. The sessions' P&L add up to [`book_pnl`](Self::book_pnl).
    pub fn session_results(&self) -> Vec<SessionResult> {
        let now = self.totals();
        let order = self.plan_names();
        self.sessions
            .iter()
            .map(|s| {
                let end: BTreeMap<String, (i64, u64, u64, PlanState)> = match &s.end {
                    Some(e) => e.clone(),
                    None => now
                        .iter()
                        .map(|(k, &(p, f, x))| {
                            let st = self.plans.get(k).map_or(PlanState::Done, |l| l.state);
                            (k.clone(), (p, f, x, st))
                        })
                        .collect(),
                };
                let mut total = 0i64;
                for (k, &(p, ..)) in &end {
                    let b = s.base.get(k).map_or(0, |x| x.0);
                    total = total.saturating_add(p.saturating_sub(b));
                }
                let plans = order
                    .iter()
                    .filter(|n| s.seen.contains(*n))
                    .filter_map(|n| {
                        let &(p, f, x, st) = end.get(n)?;
                        let (bp, bf, bx) = s.base.get(n).copied().unwrap_or((0, 0, 0));
                        Some(SessionPlan {
                            name: n.clone(),
                            state: st,
                            fires: f.saturating_sub(bf),
                            fills: x.saturating_sub(bx),
                            pnl: p.saturating_sub(bp),
                        })
                    })
                    .collect();
                SessionResult {
                    session: s.session,
                    date: s.date.clone(),
                    plans,
                    pnl: total,
                }
            })
            .collect()
    }

    /// A plan's realised P&L, money units.
    pub fn realised(&self, plan: &str) -> i64 {
        self.positions
            .get(plan)
            .map_or(0, |m| m.values().map(|p| p.realised).sum())
    }

    /// A plan's open P&L at the latest marks, money units.
    pub fn open(&self, plan: &str) -> i64 {
        self.positions
            .get(plan)
            .map_or(0, |m| m.iter().map(|(k, p)| self.open_pnl_of(k, p)).sum())
    }

    /// A plan's total P&L (realised + open), money units.
    pub fn pnl(&self, plan: &str) -> i64 {
        self.realised(plan).saturating_add(self.open(plan))
    }

    /// The whole book's P&L, money units.
    pub fn book_pnl(&self) -> i64 {
        self.plans.keys().map(|p| self.pnl(p)).sum()
    }

    /// The whole book's realised P&L, money units.
    pub fn book_realised(&self) -> i64 {
        self.plans.keys().map(|p| self.realised(p)).sum()
    }

    /// The whole book's open P&L at the latest marks, money units.
    pub fn book_open(&self) -> i64 {
        self.plans.keys().map(|p| self.open(p)).sum()
    }

    /// Money in R at this Blotter's `r_usd`, as an exact 4-decimal [`Px`] (rounded half away
    /// from zero). `None` without an R.
    pub fn in_r(&self, money: i64) -> Option<Px> {
        to_r(money, self.r_usd)
    }

    /// Plan names in the order they first appeared.
    pub fn plan_names(&self) -> Vec<String> {
        let mut v: Vec<(&u64, &String)> = self.plans.iter().map(|(k, l)| (&l.seq, k)).collect();
        v.sort();
        v.into_iter().map(|(_, k)| k.clone()).collect()
    }
}

/// `money / r_usd` as a 4-decimal fixed-point number (rounded half away from zero).
pub fn to_r(money: i64, r_usd: Px) -> Option<Px> {
    if r_usd.raw() <= 0 {
        return None;
    }
    let num = i128::from(money) * 10_000;
    let den = i128::from(r_usd.raw());
    let q = num / den;
    let r = num % den;
    let q = if 2 * r.abs() >= den {
        q + num.signum()
    } else {
        q
    };
    Some(Px(clamp_i64(q)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_row_says_what_it_did_not_a_zero_count() {
        let mut l = PlanLine {
            state: PlanState::Armed,
            fires: 0,
            fills: 0,
            mae: 0,
            seq: 0,
            owner: None,
            note: None,
            note_ts: None,
            risk: None,
            vetoes: 0,
            clamps: 0,
            reason: None,
        };
        assert_eq!(l.summary(), "no fire yet");
        (l.fires, l.fills) = (2, 1);
        assert_eq!(l.summary(), "fired 2× · 1 fill");
        l.fills = 3;
        assert_eq!(l.summary(), "fired 2× · 3 fills");
        l.note = Some("WHEN fired 09:31".into());
        assert_eq!(l.summary(), "WHEN fired 09:31");
    }

    #[test]
    fn a_veto_reads_in_cents_on_screen() {
        // What the engine writes (Px's four decimals) against what the row says.
        let r = Risk {
            ts: Ts(0),
            clause: "WHEN".into(),
            kind: RiskKind::Veto,
            budget: "plan".into(),
            reason: "worst case $58.0050 exceeds the $4.1408 left in the budget, and one unit does not fit".into(),
        };
        assert_eq!(r.short(), "VETO worst $58.01 > $4.14 left");
        let r = Risk {
            reason: "re-price esc#1 to 0.64: worst case $128.0000 exceeds the $100.0000 left in the budget, and one unit does not fit: the order is cancelled".into(),
            ..r
        };
        assert_eq!(
            r.short(),
            "VETO worst $128.00 > $100.00 left (re-price esc#1 0.64)"
        );
        assert_eq!(cents("$-0.0049"), "$0.00");
        assert_eq!(cents("$-1.2350,"), "$-1.24");
        assert_eq!(cents("$12"), "$12.00");
        assert_eq!(cents("$1.23456"), "$1.23456");
        assert_eq!(cents("$x"), "$x");
        assert_eq!(cents("12"), "12");
    }

    #[test]
    fn average_cost_long_and_short() {
        // Buy 10 @ 1.00 (x100): cost 1000$. Sell 4 @ 1.50: realised 4*0.50*100 = 200$.
        let mut p = Position::default();
        p.trade(10, Px(10_000), 100);
        p.trade(-4, Px(15_000), 100);
        assert_eq!(p.qty, 6);
        assert_eq!(p.realised, 200 * 10_000);
        // Open at mark 1.50: 6*0.50*100 = 300$.
        assert_eq!(p.open_pnl(), 300 * 10_000);
        // Short 5 shares @ 10, cover @ 9: +5$.
        let mut s = Position::default();
        s.trade(-5, Px(100_000), 1);
        s.trade(5, Px(90_000), 1);
        assert_eq!((s.qty, s.realised), (0, 5 * 10_000));
        // Flip: long 2 @ 1, sell 5 @ 2: realise 2$, short 3 @ 2.
        let mut f = Position::default();
        f.trade(2, Px(10_000), 1);
        f.trade(-5, Px(20_000), 1);
        assert_eq!(
            (f.qty, f.realised, f.avg_px()),
            (-3, 20_000, Some(Px(20_000)))
        );
    }

    fn fill(plan: &str, side: BusSide, qty: u64, px: i64) -> Event {
        Event::Fill {
            ts: Ts(0),
            order: 1,
            plan: plan.into(),
            leg: "SPY shares".into(),
            side,
            qty,
            px: Px(px),
            mult: 1,
            quoted: true,
        }
    }

    /// One live mark per instrument reaches every open position in it; a fill or a `mark`
    /// event since is newer and stands until the next live mark; a flat position keeps its
    /// own; and live marks are not part of the projection.
    #[test]
    fn live_marks_are_per_instrument_and_the_newer_mark_wins() {
        let mut b = Blotter::default();
        let mut evs = vec![
            fill("a", BusSide::Buy, 10, 100_000),
            fill("b", BusSide::Sell, 5, 100_000),
        ];
        for e in &evs {
            b.apply(e);
        }
        let leg = "SPY shares";
        b.mark_live(leg, Px(101_000), false);
        // a: long 10 from 10.00 at 10.10: +1.00; b: short 5: -0.50.
        assert_eq!((b.open("a"), b.open("b")), (10_000, -5_000));
        let a = &b.positions["a"][leg];
        assert_eq!(b.mark_of(leg, a), (Some(Px(101_000)), false));
        assert_eq!(
            a.mark,
            Some(Px(100_000)),
            "the position's own mark is its fill"
        );
        // A fill since the live mark: b marks at its fill price until marked again.
        let e = fill("b", BusSide::Sell, 5, 102_000);
        b.apply(&e);
        evs.push(e);
        // Short 10 (cost −5·10.00 − 5·10.20), marked at 10.20: −0.10.
        assert_eq!(b.open("b"), -10 * 102_000 + (5 * 100_000 + 5 * 102_000));
        assert_eq!(b.open("a"), 10_000);
        b.mark_live(leg, Px(99_000), true);
        assert_eq!(b.open("b"), -10 * 99_000 + (5 * 100_000 + 5 * 102_000));
        assert!(
            b.mark_of(leg, &b.positions["b"][leg]).1,
            "the model flag follows"
        );
        // Flat: its own mark (the closing fill), whatever the market.
        let e = fill("a", BusSide::Sell, 10, 100_500);
        b.apply(&e);
        evs.push(e);
        b.mark_live(leg, Px(98_000), false);
        let a = &b.positions["a"][leg];
        assert_eq!(b.mark_of(leg, a), (Some(Px(100_500)), false));
        assert_eq!((b.open("a"), b.realised("a")), (0, 5_000));
        // A `mark` event since: it stands.
        let e = Event::Mark {
            ts: Ts(0),
            plan: "b".into(),
            leg: leg.into(),
            px: Px(97_000),
        };
        b.apply(&e);
        evs.push(e);
        assert_eq!(
            b.mark_of(leg, &b.positions["b"][leg]),
            (Some(Px(97_000)), false)
        );
        assert_eq!(Blotter::from_events(&evs), b);
    }

    #[test]
    fn r_rounding() {
        assert_eq!(to_r(50 * 10_000, Px(1000 * 10_000)), Some(Px(500))); // 50/1000 = 0.05R
        assert_eq!(to_r(-1, Px(3 * 10_000)), Some(Px(0)));
        assert_eq!(to_r(1, Px(0)), None);
    }
}

#[cfg(test)]
mod order_index_tests {
    use super::{BusSide, OrderIndex, OrderRole, Px, Resting, RestingBook};
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        /// The order index maps ids as one map would, small ids and large, overwritten or not.
        #[test]
        fn order_index_is_a_map(ops in proptest::collection::vec(
            (prop_oneof![0u64..64, (1u64 << 20) - 2..(1u64 << 20) + 2, any::<u64>()],
             prop_oneof![0usize..1000, Just(u32::MAX as usize), Just(usize::MAX)]),
            0..200,
        )) {
            let (mut ix, mut map) = (OrderIndex::default(), BTreeMap::new());
            for &(id, at) in &ops {
                ix.insert(id, at);
                map.insert(id, at);
            }
            for &(id, _) in &ops {
                prop_assert_eq!(ix.get(id), map.get(&id).copied());
                prop_assert_eq!(ix.get(id.wrapping_add(1)), map.get(&id.wrapping_add(1)).copied());
            }
        }

        /// The resting book keeps orders as a map by id would: placed, re-priced and taken
        /// off in any order, and listed in id order.
        #[test]
        fn resting_book_is_a_map(ops in proptest::collection::vec(
            (0u8..3, prop_oneof![0u64..16, any::<u64>()], any::<i64>()),
            0..200,
        )) {
            let (mut book, mut map) = (RestingBook::default(), BTreeMap::new());
            for &(op, id, px) in &ops {
                match op {
                    0 => {
                        let r = Resting {
                            plan: "p".into(),
                            clause: "DO".into(),
                            role: OrderRole::Entry,
                            leg: "SPY shares".into(),
                            side: BusSide::Buy,
                            qty: 1,
                            limit: Px(px),
                        };
                        book.insert(id, r.clone());
                        map.insert(id, r);
                    }
                    1 => {
                        if let Some(r) = book.get_mut(id) {
                            r.limit = Px(px);
                        }
                        if let Some(r) = map.get_mut(&id) {
                            r.limit = Px(px);
                        }
                    }
                    _ => prop_assert_eq!(book.remove(id), map.remove(&id)),
                }
                prop_assert_eq!(book.get(id), map.get(&id));
            }
            prop_assert_eq!(book.len(), map.len());
            prop_assert!(book.iter().map(|(id, r)| (id, r.clone())).eq(map.into_iter()));
        }
    }
}
