//! The tick engine: arms documents, evaluates their PLANs on every tape event, fires and
//! manages orders under a named fill model, enforces L0 risk, and writes every act to the
//! [`Bus`](crate::bus::Bus). Semantics are documented in `docs/runtime.md`.
//!
//! ```
//! use kestrel_desk::engine::{self, EngineConfig};
//! use kestrel_desk::market::{Px, read_tape_bytes};
//! let tape = concat!(
//!     r#"{"type":"header","v":1,"name":"t","date":"2025-04-09","open":"09:30","close":"16:00","symbols":{"SPY":{"prior_close":100.0}}}"#, "\n",
//!     r#"{"type":"tick","ts":"09:30:00.000","sym":"SPY","px":100.00,"sz":10}"#, "\n",
//!     r#"{"type":"tick","ts":"09:30:01.000","sym":"SPY","px":101.00,"sz":10}"#, "\n",
//! );
//! let plans = "PLAN up budget 1R ttl +10m\n  WHEN spot > 100.5\n  DO buy 10 shares @ ask\n";
//! let doc = kestrel_desk::lang::check(plans, kestrel_desk::lang::Mode::File).unwrap();
//! let (header, events) = read_tape_bytes(tape.as_bytes()).unwrap();
//! let cfg = EngineConfig::strict(Px::from_cents(100_000));
//! let bus = engine::replay(&header, events.into_iter().map(Ok), &[doc], cfg, kestrel_desk::bus::Bus::new(None)).unwrap();
//! assert_eq!(bus.blotter().fills.len(), 1);
//! ```

pub mod arming;
pub mod fill;
pub mod gate;
pub mod price;
mod quiet;
mod sched;
pub mod trigger;
pub mod wakes;

#[cfg(test)]
mod floor_tests;
#[cfg(test)]
mod quote_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod wake_tests;

use crate::bus::{Bus, BusSide, Event, OrderRole, PlanState, blotter::Position};
use crate::lang::ast::{
    self, AnchorKind, ClauseKind, Document, Instrument, InvalidateAction, Modifier, OffsetUnit,
    Side, StatementKind, Strike, Ttl,
};
use crate::market::state::i128_f64;
use crate::market::{
    Expiry, MarketState, MoneyMemo, Px, Right, Series as MSeries, Sym, TapeError, TapeEvent,
    TapeHeader, Ts,
};

pub use arming::ArmWarning;
pub use fill::{FillModel, StrictCrossV1};
use price::{CPrice, QuoteF, to_grid};
use trigger::{
    CPred, CSeries, CTrigger, CValue, Ctx, EventTimes, Park, PlanReads, Reads, Resolver, Slots, Tri,
};
pub use wakes::FiredWake;
use wakes::WakeRt;

/// Default stop distance for a shares ticket whose plan writes no price stop: 1% of the
/// limit (see docs/runtime.md, "Risk").
pub const DEFAULT_SHARE_STOP: f64 = 0.01;

/// The evaluation context of a trigger, from the shared state and a plan's reads.
macro_rules! ctx {
    ($sh:expr, $reads:expr) => {
        Ctx {
            ms: &$sh.ms,
            now: $sh.now,
            open: $sh.open,
            close: $sh.close,
            ev: &$sh.ev,
            plan: $reads,
            mkt: &$sh.mvals,
            pct: &$sh.pvals,
            dirt: &$sh.slots.dirt,
        }
    };
}

/// Evaluate a trigger: its cached value when none of its inputs moved (no [`Ctx`] built),
/// else in full.
macro_rules! eval {
    ($t:expr, $sh:expr, $reads:expr) => {{
        let t = $t;
        match t.cached(&$sh.slots.dirt) {
            Some(v) => v,
            None => t.eval_all(&ctx!($sh, $reads)),
        }
    }};
}

/// Engine configuration.
pub struct EngineConfig {
    /// Dollars per 1R.
    pub r_usd: Px,
    /// The fill model.
    pub fill: Box<dyn FillModel>,
    /// Regime gate (off by default): a PLAN with `regime {k: v}` arms only on a tape whose
    /// header tags match ([`gate::check`]); otherwise it is de-armed with the reason.
    pub regime_gate: bool,
    /// The attached author's identity, recorded on `session-start` (`None`: not recorded).
    pub author: Option<crate::bus::AuthorIdentity>,
}

impl EngineConfig {
    /// `strict-cross-v1` with 1R = `r_usd` dollars.
    pub fn strict(r_usd: Px) -> EngineConfig {
        EngineConfig {
            r_usd,
            fill: Box::new(StrictCrossV1),
            regime_gate: false,
            author: None,
        }
    }

    /// The same configuration with the regime gate on or off.
    pub fn with_regime_gate(mut self, on: bool) -> EngineConfig {
        self.regime_gate = on;
        self
    }
}

impl std::fmt::Debug for EngineConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineConfig")
            .field("r_usd", &self.r_usd)
            .field("fill", &self.fill.name())
            .field("regime_gate", &self.regime_gate)
            .finish()
    }
}

// ------------------------------------------------------------------ compiled forms

#[derive(Debug, Clone, Copy, PartialEq)]
enum StrikeSpec {
    Rel(i32),
    Abs(Px),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum InstSpec {
    Opt(StrikeSpec, Right),
    Shares,
}

#[derive(Debug, Clone, Default)]
struct Mods {
    peg: bool,
    esc: Vec<(CPrice, u32)>,
    cap: Option<CPrice>,
    floor: Option<CPrice>,
    cancel_if: Option<CTrigger>,
}

#[derive(Debug, Clone)]
struct TicketT {
    clause: String,
    side: BusSide,
    qty: u64,
    inst: InstSpec,
    price: CPrice,
    mods: Mods,
}

#[derive(Debug, Clone)]
struct TpRt {
    mult: f64,
    frac: Option<f64>,
    price: CPrice,
    mods: Mods,
    done: bool,
}

#[derive(Debug, Clone)]
struct ExitRt {
    when: CTrigger,
    price: Option<CPrice>,
    mods: Mods,
    done: bool,
}

#[derive(Debug, Clone)]
struct InstRt {
    sym: Sym,
    /// Its symbol's index in `Shared::syms`, and in the market state (`usize::MAX`: none).
    sym_i: usize,
    ms_i: usize,
    kind: InstKind,
    key: String,
    mult: u32,
    stamp: u64,
    q: Option<QuoteF>,
    /// Plans' legs open in it (the Blotter is marked live only while some are).
    held: u32,
    /// The latest live mark given to the Blotter: price, model, and the engine's trade
    /// count then (a trade re-marks a position at its fill price, so a new trade marks again).
    marked: Option<(Px, bool, u64)>,
    /// The symbol's event count and the engine's trade count at the latest live mark pass:
    /// while neither moved, the quote and the mark stand.
    marked_at: (u64, u64),
    /// The latest pegged limit priced at `q` (cleared when `q` is priced again).
    peg: Option<PegMemo>,
    /// An option's recent moneyness logs by spot, for its re-pricing (`None` for shares).
    money: Option<MoneyMemo>,
}

/// A pegged limit priced at an instrument's current quote, for the next order pegged alike:
/// several plans resting the same `buy 1 ATM P @ fair peg` re-price at each move of the
/// quote to the same limit, computed once (`peg_limit`).
#[derive(Debug, Clone, Copy)]
struct PegMemo {
    /// The anchor and its offset (never `basis`: that one is the plan's own).
    anchor: AnchorKind,
    offset: Option<(f64, OffsetUnit)>,
    side: BusSide,
    limit: Option<Px>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum InstKind {
    Opt {
        expiry: Expiry,
        strike: Px,
        right: Right,
    },
    Shares,
}

#[derive(Debug, Clone)]
struct Order {
    id: u64,
    inst: usize,
    side: BusSide,
    qty: u64,
    limit: Px,
    role: OrderRole,
    price: CPrice,
    mods: Mods,
    esc_next: usize,
    esc_since: Ts,
    seen: u64,
    /// The worst case L0 risk committed for it (an entry buy's; 0 otherwise): at its
    /// placement limit, and grown to a higher one's at a re-price ([`refit`]).
    worst: i64,
    /// The clause that placed it (`DO#1`), for the risk events of a re-price.
    clause: String,
    /// A sell that a fire's buys cover: the ids of those buys not yet filled. It cannot fill
    /// while one is left, and is cancelled (`uncovered`) when one is cancelled
    /// ([`drop_uncovered`]): a covered sell waits for its cover.
    cover: Vec<u64>,
    /// An entry buy of shares sized on the assumed stop ([`DEFAULT_SHARE_STOP`]): its fill
    /// puts that stop in force ([`Leg::assumed_stop`]).
    assumed_stop: bool,
}

impl Order {
    /// The next rung of `esc` and when its wait is over, if any rung is left.
    fn esc_next_at(&self) -> Option<(&CPrice, Ts)> {
        let (ep, dur) = self.mods.esc.get(self.esc_next)?;
        Some((ep, Ts(self.esc_since.ms().saturating_add(*dur))))
    }

    /// The escalation price whose wait is over at `now` (the next rung of `esc`), if any.
    /// (`esc_since` is never after the engine's clock, which only moves forward.)
    fn esc_due(&self, now: Ts) -> Option<&CPrice> {
        self.esc_next_at()
            .and_then(|(ep, at)| (now >= at).then_some(ep))
    }
}

#[derive(Debug, Clone)]
struct Leg {
    inst: usize,
    pos: Position,
    /// The stop the risk check assumed for shares bought with no stop written
    /// ([`DEFAULT_SHARE_STOP`]), kept by the engine: the shares so bought, and the sum over
    /// their fills of price × qty less the worst case each was let open with (money units).
    /// Their stop is `stop_num / stop_qty`; a bid at or under it closes the plan (`STOP`),
    /// so what the budget was told is what can be lost (up to the bid's slippage past it).
    stop_qty: u64,
    stop_num: i128,
}

impl Leg {
    /// The assumed stop in force on a held leg (raw price units), if any.
    fn assumed_stop(&self) -> Option<f64> {
        (self.stop_qty > 0 && self.pos.qty > 0).then(|| self.stop_num as f64 / self.stop_qty as f64)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Dormant,
    Armed,
    Active,
    Closed,
}

/// A document armed before a session's first event ([`Engine::opening_documents`]).
#[derive(Debug, Clone)]
struct Opening {
    doc: Document,
    owner: Option<String>,
    /// Added to the owner's book ([`Engine::add_as`]) rather than armed as it is.
    added: bool,
}

#[derive(Debug)]
struct PlanRt {
    name: String,
    /// Who armed it (`None` in a headless run with one author).
    owner: Option<String>,
    status: Status,
    label: PlanState,
    signal: Sym,
    exec: Sym,
    expiry: Expiry,
    budget: i64,
    ttl: Ttl,
    ttl_at: Option<Ts>,
    entries_open: bool,
    when: Option<CTrigger>,
    entries: Vec<TicketT>,
    reloads: Vec<(CTrigger, TicketT, bool)>,
    tps: Vec<TpRt>,
    exits: Vec<ExitRt>,
    invalidates: Vec<(CTrigger, bool, bool)>,
    cancel_ifs: Vec<(CTrigger, bool)>,
    arms: Vec<usize>,
    orders: Vec<Order>,
    legs: Vec<Leg>,
    /// How many of `legs` hold a position (kept by `trade_leg`): `holding` without a walk.
    open_legs: u32,
    committed: i64,
    book: Option<usize>,
    stop_levels: Vec<(Sym, f64)>,
    entry_qty: u64,
    entry_cost: f64,
    had_fill: bool,
    mae: i64,
    pnl_now: i64,
    uses_leg: bool,
    uses_plan: bool,
    price_err: bool,
    priority: f64,
    /// The WHEN and INVALIDATEs as one group, while the plan waits to fire (`None`: the plan
    /// reads something that moves on every event, and is stepped on every event).
    park: Option<Park>,
    /// The EXITs as one group, when they read series and the clock only as levels
    /// ([`Park::of_levels`]): a quiet plan with EXITs left *watches* them ([`quiet`]).
    park_exit: Option<Park>,
    /// Parked at its latest step: every trigger of `park` was current and settled there, and
    /// the plan steps again only when one of their inputs moves (`engine::sched`). Also set
    /// while a quiet plan watches its EXITs (`park_exit`).
    parked: bool,
    /// What the latest valuation saw: the engine's trade count and the sum of the legs'
    /// symbol versions (quotes are re-priced only when a version moves). The same again
    /// gives the same value.
    valued: Option<(u64, u64)>,
    /// Holding with nothing left to do but hold, or to watch EXITs on levels ([`quiet`]):
    /// not stepped, only revalued at every event, until that changes (`Engine::step_quiet`)
    /// or an EXIT's level is crossed (the schedule wakes it).
    quiet: bool,
    /// A plan of its name was armed after it (it was stood down for that): its inventory
    /// still rides its TP / EXIT, but its state changes are its own and no longer the
    /// name's, so they are not put on the Bus (the name's row is the new plan's).
    replaced: bool,
    /// What the plan says, in canonical text without comments, with the USING it was
    /// armed under ([`plan_text`]): a plan sent again with the same text is kept as it
    /// stands ([`Engine::resent`]).
    text: String,
    /// Stood down by its author (a supersede that left it out, a STAND-DOWN, a CANCEL): sent
    /// again, even unchanged, it is armed afresh.
    dropped: bool,
}

#[derive(Debug)]
struct BookRt {
    name: String,
    budget: i64,
    coverage: Vec<String>,
    committed: i64,
}

#[derive(Debug)]
struct PodRt {
    name: String,
    limit: i64,
    halted: bool,
}

/// Everything the plans share (split from the plans so that a plan can be stepped with a
/// mutable borrow of both).
struct Shared {
    ms: MarketState,
    bus: Bus,
    fill: Box<dyn FillModel>,
    r_usd: Px,
    insts: Vec<InstRt>,
    /// Per symbol: its events that re-price its instruments (trades, quotes, volatility),
    /// and its trades alone (what moves its series; `Slots::refresh`).
    syms: Vec<(Sym, u64, u64)>,
    ev: EventTimes,
    now: Ts,
    open: Ts,
    close: Ts,
    date: crate::market::Date,
    next_order: u64,
    to_arm: Vec<(usize, usize)>,
    books: Vec<BookRt>,
    has_chain: Vec<Sym>,
    slots: Slots,
    /// Which plans step at an event.
    sched: sched::Sched,
    /// Plan steps so far (each plan the schedule named, at each event).
    plan_steps: u64,
    /// Per plan index: the series and percentile slots read by its triggers that can be
    /// read in its phase ([`live_series`]); the slots none of them nor a WAKE reads are not
    /// refreshed ([`Slots::skip`]).
    live: Vec<Reads>,
    /// Take `live` again for every plan before the next refresh (an act from outside the
    /// plan loop: arming, a stand-down, a cancel, a pod halt).
    live_stale: bool,
    /// A plan's `live` changed at its step, or `live_stale`: the slots to skip are taken
    /// again before the next refresh (one flag read per event).
    live_moved: bool,
    mvals: Vec<Option<f64>>,
    pvals: Vec<Option<f64>>,
    /// The tape's tags when the regime gate is on.
    gate: Option<std::collections::BTreeMap<String, String>>,
    /// Position trades so far (fills and settlements): a live mark is given again after one.
    trades: u64,
    /// The symbols (bits by index in `syms`, from 63 on sharing bit 63) with an event at
    /// this tape event: what wakes a plan asleep on its resting orders (`Sched::sleep`).
    sym_events: u64,
    /// Orders resting per symbol (by index in `syms`), and the symbols with any (bits as in
    /// `sym_events`): a print with more of its instant to come looks at resting orders only
    /// where its symbol has some ([`Engine::meet_print`]).
    resting_on: Vec<u32>,
    resting_syms: u64,
    /// The warnings at arming not yet taken ([`Engine::take_arm_warnings`]): not on the Bus.
    arm_warnings: Vec<ArmWarning>,
}

/// The tick engine. Drive it with [`Engine::on_event_before`] for each tape event (or
/// [`Engine::on_events`] for a slice), so the plans step once per instant, and close it with
/// [`Engine::finish`]; or use [`replay`]. [`Engine::on_event`] steps at every event (no
/// look-ahead: an SPX print steps before the same second's SPY print is read).
pub struct Engine {
    sh: Shared,
    plans: Vec<PlanRt>,
    order: Vec<usize>,
    /// The quiet plans (see [`quiet`]): (plan, position in `order`).
    quiet: Vec<(usize, usize)>,
    /// Of those, the ones valued one by one at every event (`quiet` module).
    quiet_each: Vec<usize>,
    /// The rest, valued lazily, by instrument (`quiet` module).
    holders: Vec<quiet::Holders>,
    /// The earliest ttl of a quiet plan with entries open (it wakes the plan).
    quiet_ttl: Option<Ts>,
    /// The assumed share stops the quiet plans keep ([`Leg::assumed_stop`]): by instrument,
    /// the highest (the first a falling bid reaches), rebuilt when the quiet set changed.
    quiet_stops: Vec<(usize, f64)>,
    quiet_stops_stale: bool,
    pods: Vec<PodRt>,
    closed: bool,
    /// `session-end` was written.
    ended: bool,
    /// An event was applied whose instant has more events to come: the plans step after
    /// the last of them ([`Engine::on_event_before`]).
    step_owed: bool,
    tape_events: u64,
    wakes: Vec<WakeRt>,
    /// The owner of the document being armed (see [`Engine::arm_document_as`]).
    arming_owner: Option<String>,
    wake_seq: u64,
    fired_wakes: Vec<FiredWake>,
    /// How often each WAKE (by owner and name) has woken its author this session: its
    /// `BUDGET n wakes/day` counts against this, so a WAKE re-sent (a supersede re-sends the
    /// book) or armed again keeps what it has spent. Before 2026-12-06 each arming started
    /// at 0, and an agent re-sending `BUDGET 1` woke four times in a day.
    wake_used: std::collections::BTreeMap<(Option<String>, String), u64>,
    /// The tape's header (each later session is derived from it).
    base: Box<TapeHeader>,
    /// The session number (1 for the header's session); `None` on a v1 tape.
    session_no: Option<u32>,
    /// The documents armed before the session's first event, with their owners and how
    /// each was armed: each session of a multi-session tape starts from them again, the
    /// same way (a document added replaces the owner's plans of its names again).
    opening: Vec<Opening>,
    regime_gate: bool,
    /// The author's identity, for every session's `session-start`.
    author: Option<crate::bus::AuthorIdentity>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("plans", &self.plans.len())
            .field("tape_events", &self.tape_events)
            .finish()
    }
}

impl Shared {
    /// An act from outside the plan loop changed the plans (arming, a stand-down, a
    /// cancel, a pod halt): the schedule is rebuilt and every plan's readable series taken
    /// again before the next step and refresh.
    fn plans_changed(&mut self) {
        self.sched.stale = true;
        self.live_stale = true;
        self.live_moved = true;
    }

    /// The exec symbol when nothing says otherwise: the first with an option chain, else the
    /// first symbol.
    fn default_exec(&self) -> Option<Sym> {
        self.has_chain
            .first()
            .copied()
            .or_else(|| self.syms.first().map(|s| s.0))
    }

    /// The signal symbol when nothing says otherwise (plans and WAKEs alike): the first
    /// without an option chain, else the default exec.
    fn default_signal(&self) -> Option<Sym> {
        self.syms
            .iter()
            .map(|s| s.0)
            .find(|s| !self.has_chain.contains(s))
            .or_else(|| self.default_exec())
    }
}

fn money_of(px_raw: f64) -> i64 {
    // Below 2^52 in magnitude the rounding is done in integers (truncate, then look at the
    // exact fraction): the same half-away-from-zero value as `libm::round`, without the
    // call (property-tested in `revalue_tests`).
    const EXACT: f64 = 4_503_599_627_370_496.0; // 2^52
    if px_raw.abs() < EXACT {
        let t = px_raw as i64;
        let frac = px_raw - t as f64;
        return if frac >= 0.5 {
            t + 1
        } else if frac <= -0.5 {
            t - 1
        } else {
            t
        };
    }
    let x = libm::round(px_raw);
    if x.is_finite() {
        x.clamp(i64::MIN as f64, i64::MAX as f64) as i64
    } else {
        0
    }
}

/// Magnitude below which an open leg's value is computed in fixed point (see
/// [`leg_open_pnl`]).
const FIXED_MAX: i128 = 1 << 48;

/// The open P&L of a leg valued at `q`, money units: `round(fair·10⁴·qty·mult − cost)` in
/// f64, as the Bus's excursion figures have always been computed. For shares `fair` is a
/// tape price (`intrinsic` holds it exactly), and when every term is below 2^48 the f64
/// expression's error is under 1/4 of a unit while its exact value is an integer, so the
/// fixed-point `fair_raw·qty·mult − cost` is the same number: that is used (no float on
/// the path). Options value at the model's f64 fair, in f64 (property-tested to agree).
fn leg_open_pnl(pos: &Position, q: &QuoteF) -> i64 {
    if !q.option {
        let raw = i128::from(q.intrinsic.raw());
        let qty = i128::from(pos.qty);
        let value = raw * qty * i128::from(pos.mult);
        if value.abs() < FIXED_MAX && pos.cost.abs() < FIXED_MAX && qty.abs() < FIXED_MAX {
            return (value - pos.cost) as i64;
        }
    }
    let val = q.fair * 1e4 * pos.qty as f64 * f64::from(pos.mult);
    money_of(val - i128_f64(pos.cost))
}

impl Engine {
    /// A new engine for a tape with this header; writes `session-start` to the Bus.
    pub fn new(header: &TapeHeader, cfg: EngineConfig, bus: Bus) -> Engine {
        let n = (header.v >= crate::market::tape::TAPE_VERSION_2).then_some(1);
        Engine::for_session(header, header, cfg, bus, n)
    }

    /// The engine of one session (`header`, derived from the tape's `base` header).
    fn for_session(
        base: &TapeHeader,
        header: &TapeHeader,
        cfg: EngineConfig,
        mut bus: Bus,
        session_no: Option<u32>,
    ) -> Engine {
        bus.emit(Event::SessionStart {
            tape: header.name.clone(),
            date: header.date.to_string(),
            fill_model: cfg.fill.name().to_string(),
            r_usd: cfg.r_usd,
            open: header.open,
            close: header.close,
            author: cfg.author.clone(),
            session: session_no,
        });
        let regime_gate = cfg.regime_gate;
        let syms = header.symbols.iter().map(|s| (s.sym, 0, 0)).collect();
        let has_chain = header
            .symbols
            .iter()
            .filter(|s| s.strike_step.is_some())
            .map(|s| s.sym)
            .collect();
        Engine {
            sh: Shared {
                ms: MarketState::new(header),
                bus,
                fill: cfg.fill,
                r_usd: cfg.r_usd,
                insts: Vec::new(),
                syms,
                ev: EventTimes::default(),
                now: header.open,
                open: header.open,
                close: header.close,
                date: header.date,
                next_order: 1,
                to_arm: Vec::new(),
                books: Vec::new(),
                has_chain,
                slots: Slots::for_session(header.open, header.close),
                sched: sched::Sched::default(),
                plan_steps: 0,
                live: Vec::new(),
                live_stale: true,
                live_moved: true,
                sym_events: 0,
                resting_on: vec![0; header.symbols.len()],
                resting_syms: 0,
                mvals: Vec::new(),
                pvals: Vec::new(),
                gate: cfg.regime_gate.then(|| header.tags.clone()),
                trades: 0,
                arm_warnings: Vec::new(),
            },
            plans: Vec::new(),
            order: Vec::new(),
            quiet: Vec::new(),
            quiet_each: Vec::new(),
            holders: Vec::new(),
            quiet_ttl: None,
            quiet_stops: Vec::new(),
            quiet_stops_stale: false,
            pods: Vec::new(),
            closed: false,
            ended: false,
            step_owed: false,
            tape_events: 0,
            wakes: Vec::new(),
            arming_owner: None,
            wake_seq: 0,
            fired_wakes: Vec::new(),
            wake_used: std::collections::BTreeMap::new(),
            base: Box::new(base.clone()),
            session_no,
            opening: Vec::new(),
            regime_gate,
            author: cfg.author.clone(),
        }
    }

    /// The documents armed before the first event, with their owners, in order: each
    /// session of a multi-session tape arms them again.
    pub fn opening_documents(&self) -> impl Iterator<Item = (&Document, Option<&str>)> {
        self.opening.iter().map(|o| (&o.doc, o.owner.as_deref()))
    }

    /// The session number (1, 2, … on a v2 tape; `None` on a v1 tape).
    pub fn session_no(&self) -> Option<u32> {
        self.session_no
    }

    /// A `session` event: close this session (settle, `session-end`) and start the next on
    /// the same Bus, in place: a fresh engine for the session's header (market, plans,
    /// orders, budgets, wakes all new) with the same fill model, R and regime gate, and the
    /// opening documents armed again. So each session of a tape runs exactly as a
    /// one-session tape of it would.
    fn start_session(&mut self, spec: &crate::market::tape::SessionSpec) {
        self.end();
        let header = self.base.for_session(spec);
        let bus = std::mem::replace(&mut self.sh.bus, Bus::new(None));
        let fill = std::mem::replace(&mut self.sh.fill, Box::new(StrictCrossV1));
        let cfg = EngineConfig {
            r_usd: self.sh.r_usd,
            fill,
            regime_gate: self.regime_gate,
            author: self.author.clone(),
        };
        let n = Some(self.session_no.unwrap_or(1) + 1);
        let opening = std::mem::take(&mut self.opening);
        let mut next = Engine::for_session(&self.base, &header, cfg, bus, n);
        for o in &opening {
            if o.added {
                next.add_as(&o.doc, o.owner.as_deref());
            } else {
                next.arm_document_as(&o.doc, o.owner.as_deref());
            }
        }
        next.opening = opening;
        // The warnings of the sessions before stay to be taken, ahead of this one's.
        let mut warned = std::mem::take(&mut self.sh.arm_warnings);
        warned.append(&mut next.sh.arm_warnings);
        next.sh.arm_warnings = warned;
        *self = next;
    }

    /// The warnings at arming since the last call, in order ([`arming`]): a plan armed with
    /// its ttl already past, a fixed strike far from its exec's spot. Not on the Bus.
    pub fn take_arm_warnings(&mut self) -> Vec<ArmWarning> {
        std::mem::take(&mut self.sh.arm_warnings)
    }

    /// The Bus (its Blotter, hash, events).
    pub fn bus(&self) -> &Bus {
        &self.sh.bus
    }

    /// The Bus, to write session events (views delivered, turns) in order with the engine's.
    pub fn bus_mut(&mut self) -> &mut Bus {
        &mut self.sh.bus
    }

    /// The market state.
    pub fn market(&self) -> &MarketState {
        &self.sh.ms
    }

    /// Every plan is closed (done, de-armed, or halted and flat): no position, no resting
    /// order, no entry can come. The rest of the tape cannot change any plan's fills or
    /// P&L, so a caller that needs only those (`kestrel grade`) may stop feeding events and
    /// [`finish`](Engine::finish). A dormant ARM target keeps this false.
    pub fn all_plans_closed(&self) -> bool {
        self.plans.iter().all(|p| p.status == Status::Closed)
    }

    /// Arm a (checked) document at the current tape time: writes `document-armed` with its
    /// canonical text and hash, then compiles each PLAN; a plan that cannot run on this tape
    /// (an UNKNOWN symbol, no option chain for an option ticket) is de-armed with its reason.
    /// BOOK and POD statements set budgets. Other statements (VIEW, WAKE, GRADE, IMPORT) are
    /// not the engine's. Returns the names of the plans that armed (or wait for an ARM).
    pub fn arm_document(&mut self, doc: &Document) -> Vec<String> {
        self.arm_document_as(doc, None)
    }

    /// [`arm_document`](Engine::arm_document) for an owner: where a person and an agent
    /// share one book (the desk), each plan and WAKE carries who armed it, and the
    /// `document-armed` event names the owner.
    pub fn arm_document_as(&mut self, doc: &Document, owner: Option<&str>) -> Vec<String> {
        if self.tape_events == 0 {
            self.opening.push(Opening {
                doc: doc.clone(),
                owner: owner.map(str::to_string),
                added: false,
            });
        }
        self.arm_owned(doc, owner, &std::collections::BTreeSet::new())
    }

    /// Arm for an owner without recording the document as an opening one (a supersede);
    /// `kept`: the standing plans the document sends again unchanged ([`Engine::resent`]),
    /// which stay as they are.
    fn arm_owned(
        &mut self,
        doc: &Document,
        owner: Option<&str>,
        kept: &std::collections::BTreeSet<usize>,
    ) -> Vec<String> {
        self.arming_owner = owner.map(str::to_string);
        let kept: Vec<String> = kept.iter().map(|&i| self.plans[i].name.clone()).collect();
        let names = self.arm_document_inner(doc, &kept);
        self.arming_owner = None;
        names
    }

    fn arm_document_inner(&mut self, doc: &Document, kept: &[String]) -> Vec<String> {
        let text = crate::lang::print(doc);
        let hash = blake3::hash(text.as_bytes()).to_hex().to_string();
        let declared: Vec<String> = doc
            .statements
            .iter()
            .filter_map(|s| match &s.kind {
                StatementKind::Plan(p) => Some(p.name.text.clone()),
                _ => None,
            })
            .collect();
        let now = self.sh.now;
        self.sh.bus.emit(Event::DocumentArmed {
            ts: now,
            text,
            blake3: hash,
            plans: declared.clone(),
            kept: kept.to_vec(),
            owner: self.arming_owner.clone(),
        });
        // The plans this document arms: a kept plan is not armed again.
        let is_kept = |n: &str| kept.iter().any(|k| k == n);
        let names: Vec<String> = declared.into_iter().filter(|n| !is_kept(n)).collect();
        // BOOKs and PODs first: budgets apply to every plan of the document.
        for st in &doc.statements {
            match &st.kind {
                StatementKind::Book(b) => self.sh.books.push(BookRt {
                    name: b.name.text.clone(),
                    budget: money_of(b.budget.value() * self.sh.r_usd.raw() as f64),
                    coverage: b.coverage.iter().map(|s| s.text.clone()).collect(),
                    committed: 0,
                }),
                StatementKind::Pod(p) => self.pods.push(PodRt {
                    name: p.name.text.clone(),
                    limit: money_of(p.day_loss.value() * self.sh.r_usd.raw() as f64),
                    halted: false,
                }),
                _ => {}
            }
        }
        // Chain targets start dormant.
        let mut targets: Vec<&str> = Vec::new();
        for st in &doc.statements {
            if let StatementKind::Plan(p) = &st.kind
                && !is_kept(&p.name.text)
            {
                for c in &p.clauses {
                    if let ClauseKind::Arm(n) = &c.kind {
                        targets.push(&n.text);
                    }
                }
            }
        }
        let base = self.plans.len();
        // A standing plan that can still fill its entry keeps the gate of its ARM targets: a
        // target armed again by name (a corrected plan) waits for it as the old one did.
        let gated: Vec<String> = self
            .plans
            .iter()
            .filter(|q| q.status != Status::Closed && q.entries_open && !q.had_fill)
            .flat_map(|q| q.arms.iter())
            .filter_map(|&j| self.plans.get(j).map(|t| t.name.clone()))
            .collect();
        for g in &gated {
            targets.push(g);
        }
        let mut all_names: Vec<String> = self.plans.iter().map(|p| p.name.clone()).collect();
        all_names.extend(names.iter().cloned());
        let mut using: Option<&ast::Using> = None;
        let mut armed = Vec::new();
        let mut idx = base;
        for st in &doc.statements {
            match &st.kind {
                StatementKind::Using(u) => using = Some(u),
                StatementKind::Plan(p) if !is_kept(&p.name.text) => {
                    let dormant = targets.contains(&p.name.text.as_str());
                    let rt = self.compile_plan(p, using, &all_names, idx, dormant);
                    match rt {
                        Ok(mut rt) => {
                            rt.text = plan_text(p, using);
                            armed.push(rt.name.clone());
                            self.plans.push(rt);
                        }
                        Err((mut rt, why)) => {
                            rt.text = plan_text(p, using);
                            self.plans.push(*rt);
                            let i = self.plans.len() - 1;
                            self.plans[i].status = Status::Closed;
                            set_state(
                                &mut self.plans[i],
                                &mut self.sh,
                                PlanState::DeArmed,
                                Some(why),
                            );
                        }
                    }
                    idx += 1;
                }
                _ => {}
            }
        }
        self.sh.ev.fired.resize(self.plans.len(), None);
        self.sh.ev.filled.resize(self.plans.len(), None);
        self.point_names_at(base);
        for i in base..self.plans.len() {
            if self.plans[i].status == Status::Closed {
                continue;
            }
            if self.plans[i].status == Status::Dormant {
                set_state(&mut self.plans[i], &mut self.sh, PlanState::Dormant, None);
            } else {
                arm_plan(&mut self.plans[i], &mut self.sh, None);
            }
        }
        // Evaluation order: priority (higher first), then document order.
        let mut order: Vec<usize> = (0..self.plans.len()).collect();
        order.sort_by(|&a, &b| {
            self.plans[b]
                .priority
                .total_cmp(&self.plans[a].priority)
                .then(a.cmp(&b))
        });
        self.order = order;
        self.sh.plans_changed();
        self.arm_wakes(doc);
        armed
    }

    /// The plans from `base` on were just armed: an earlier plan of the same name is
    /// replaced by the newest (its state changes leave the Bus), and a standing `ARM` or
    /// `plan(...)` that names it means the new one ([`EventTimes::current`]).
    fn point_names_at(&mut self, base: usize) {
        let n = self.plans.len();
        let ev = &mut self.sh.ev;
        for i in base..n {
            for k in 0..base {
                if self.plans[k].name == self.plans[i].name {
                    if ev.current.is_empty() {
                        ev.current = (0..n).collect();
                    }
                    ev.current[k] = i;
                    self.plans[k].replaced = true;
                }
            }
        }
        if !ev.current.is_empty() {
            let have = ev.current.len();
            ev.current.extend(have..n);
        }
    }

    #[allow(clippy::type_complexity)]
    fn compile_plan(
        &mut self,
        p: &ast::Plan,
        doc_using: Option<&ast::Using>,
        names: &[String],
        idx: usize,
        dormant: bool,
    ) -> Result<PlanRt, (Box<PlanRt>, String)> {
        let using = p.using().or(doc_using);
        let header_has = |s: &str| self.sh.syms.iter().any(|(x, ..)| x.as_str() == s);
        let default_exec = self.sh.default_exec();
        let default_signal = self.sh.default_signal();
        let fallback = self
            .sh
            .syms
            .first()
            .map_or(Sym::new("X").unwrap_or_else(|| unreachable!()), |s| s.0);
        let mut rt = PlanRt {
            name: p.name.text.clone(),
            owner: self.arming_owner.clone(),
            status: if dormant {
                Status::Dormant
            } else {
                Status::Armed
            },
            label: PlanState::Armed,
            signal: default_signal.unwrap_or(fallback),
            exec: default_exec.unwrap_or(fallback),
            expiry: Expiry::ZeroDte,
            budget: money_of(p.budget.value() * self.sh.r_usd.raw() as f64),
            ttl: p.ttl.clone(),
            ttl_at: None,
            entries_open: true,
            when: None,
            entries: Vec::new(),
            reloads: Vec::new(),
            tps: Vec::new(),
            exits: Vec::new(),
            invalidates: Vec::new(),
            cancel_ifs: Vec::new(),
            arms: Vec::new(),
            orders: Vec::new(),
            legs: Vec::new(),
            open_legs: 0,
            committed: 0,
            book: None,
            stop_levels: Vec::new(),
            entry_qty: 0,
            entry_cost: 0.0,
            had_fill: false,
            mae: 0,
            pnl_now: 0,
            uses_leg: false,
            uses_plan: false,
            price_err: false,
            priority: p.priority.as_ref().map_or(0.0, |n| n.value()),
            park: None,
            park_exit: None,
            parked: false,
            quiet: false,
            replaced: false,
            valued: None,
            text: String::new(),
            dropped: false,
        };
        macro_rules! fail {
            ($why:expr) => {
                return Err((Box::new(rt), $why))
            };
        }
        if let Some(u) = using {
            for s in [&u.signal, &u.exec] {
                if !header_has(&s.text) {
                    fail!(format!(
                        "UNKNOWN symbol {}: the tape does not carry it (USING)",
                        s.text
                    ));
                }
            }
            rt.signal = Sym::new(&u.signal.text).unwrap_or(rt.signal);
            rt.exec = Sym::new(&u.exec.text).unwrap_or(rt.exec);
            if let Some(e) = &u.expiry {
                rt.expiry = match e {
                    ast::Expiry::Dte(0) => Expiry::ZeroDte,
                    ast::Expiry::Dte(1) => Expiry::OneDte,
                    ast::Expiry::Dte(n) => match self.sh.date.add_days(i64::from(*n)) {
                        // No option expires on a weekend: `3dte` from a Wednesday named a
                        // Saturday contract, bought and marked (before 2026-12-06). The
                        // weekdays either side are named, as days from the session's date.
                        Some(d) if d.weekday() >= 5 => {
                            let (day, back, on) = match d.weekday() {
                                5 => ("Saturday", 1, 2),
                                _ => ("Sunday", 2, 1),
                            };
                            let n = i64::from(*n);
                            fail!(format!(
                                "expiry {n}dte is {day} {d}: no option expires on a weekend; write {}dte (the Friday before) or {}dte (the Monday after)",
                                n - back,
                                n + on
                            ))
                        }
                        Some(d) => Expiry::Date(d),
                        None => fail!(format!("expiry {n}dte is out of range")),
                    },
                    ast::Expiry::Date(s) => match crate::market::Date::parse(s) {
                        Some(d) if d >= self.sh.date => Expiry::Date(d),
                        _ => fail!(format!("expiry {s} is before the session date")),
                    },
                };
            }
        }
        if default_exec.is_none() {
            fail!("the tape carries no symbol".to_string());
        }
        // The regime gate after the symbols: a plan that cannot run on this tape says so
        // (`grade` warns of it, NOT-ARMED), where the gate's reason hid it.
        if let (Some(tags), Some(regime)) = (&self.sh.gate, &p.regime)
            && let Err(why) = gate::check(tags, regime)
        {
            fail!(why);
        }
        let signal = rt.signal;
        let syms = &self.sh.syms;
        let has = |s: &str| syms.iter().any(|(x, ..)| x.as_str() == s);
        // The latest plan of a name: a document that arms a name again (a person's corrected
        // plan, an agent's supersede) means its own plan in `ARM` and `plan(...)`, not the
        // one it replaced (which is stood down, and never arms or fills again).
        let pidx = |n: &str| names.iter().rposition(|x| x == n);
        let res = Resolver {
            signal,
            has_symbol: &has,
            plan_index: &pidx,
        };
        let mut slots = std::mem::take(&mut self.sh.slots);
        let mut counts = std::collections::BTreeMap::<&str, usize>::new();
        let mut label = |k: &'static str| {
            let n = counts.entry(k).or_insert(0);
            *n += 1;
            format!("{k}#{n}")
        };
        let exec_has_chain = self.sh.has_chain.contains(&rt.exec);
        let exec_step = self.sh.ms.strike_step(rt.exec.as_str());
        let compile_mods = |ms: &[Modifier], slots: &mut Slots| -> Result<Mods, String> {
            let mut m = Mods::default();
            for x in ms {
                match x {
                    Modifier::Peg => m.peg = true,
                    Modifier::Fix => m.peg = false,
                    Modifier::Esc { price, after } => m.esc.push((
                        price::compile(price),
                        u32::try_from(after.seconds().saturating_mul(1000)).unwrap_or(u32::MAX),
                    )),
                    Modifier::Cap { price } => m.cap = Some(price::compile(price)),
                    Modifier::Floor { price } => m.floor = Some(price::compile(price)),
                    Modifier::CancelIf { when } => {
                        m.cancel_if = Some(CTrigger::compile(when, &res, slots)?)
                    }
                }
            }
            Ok(m)
        };
        let ticket =
            |t: &ast::Ticket, clause: String, slots: &mut Slots| -> Result<TicketT, String> {
                let inst = match &t.instrument {
                    Instrument::Shares => InstSpec::Shares,
                    Instrument::Option { strike, right } => {
                        if !exec_has_chain {
                            return Err(format!(
                                "{clause}: {} has no option chain on this tape",
                                rt.exec
                            ));
                        }
                        let r = match right {
                            ast::Right::C => Right::Call,
                            ast::Right::P => Right::Put,
                        };
                        let k = match strike {
                            Strike::Atm => StrikeSpec::Rel(0),
                            Strike::Relative(n) => StrikeSpec::Rel(n.value() as i32),
                            Strike::Absolute(n) => match Px::from_f64_exact(n.value()) {
                                Some(p) => {
                                    off_grid(&clause, &rt.exec, p, exec_step)?;
                                    StrikeSpec::Abs(p)
                                }
                                None => return Err(format!("{clause}: bad strike {}", n.text)),
                            },
                        };
                        InstSpec::Opt(k, r)
                    }
                };
                let qty = t.qty.value();
                if !(qty >= 1.0 && qty.fract() == 0.0 && qty < 1e12) {
                    return Err(format!(
                        "{clause}: quantity {} is not a positive integer",
                        t.qty.text
                    ));
                }
                Ok(TicketT {
                    clause,
                    side: match t.side {
                        Side::Buy => BusSide::Buy,
                        Side::Sell => BusSide::Sell,
                    },
                    qty: qty as u64,
                    inst,
                    price: price::compile(&t.price),
                    mods: compile_mods(&t.modifiers, slots)?,
                })
            };
        let mut arms = Vec::new();
        let mut when = None;
        let mut stop_preds: Vec<CPred> = Vec::new();
        let r: Result<(), String> = (|| {
            for c in &p.clauses {
                match &c.kind {
                    ClauseKind::Using(_) => {}
                    ClauseKind::When(t) => when = Some(CTrigger::compile(t, &res, &mut slots)?),
                    ClauseKind::Do(t) => rt.entries.push(ticket(t, label("DO"), &mut slots)?),
                    ClauseKind::Also(t) => rt.entries.push(ticket(t, label("ALSO"), &mut slots)?),
                    ClauseKind::Reload { when, ticket: t } => {
                        let l = label("RELOAD");
                        rt.reloads.push((
                            CTrigger::compile(when, &res, &mut slots)?,
                            ticket(t, l, &mut slots)?,
                            false,
                        ))
                    }
                    ClauseKind::Tp {
                        mult,
                        frac,
                        price,
                        modifiers,
                    } => rt.tps.push(TpRt {
                        mult: mult.value(),
                        frac: frac.as_ref().map(|f| f.value()),
                        price: price::compile(price),
                        mods: compile_mods(modifiers, &mut slots)?,
                        done: false,
                    }),
                    ClauseKind::Exit {
                        when,
                        price,
                        modifiers,
                    } => {
                        let t = CTrigger::compile(when, &res, &mut slots)?;
                        stop_preds.extend(t.sufficient_preds().into_iter().cloned());
                        rt.exits.push(ExitRt {
                            when: t,
                            price: price.as_ref().map(price::compile),
                            mods: compile_mods(modifiers, &mut slots)?,
                            done: false,
                        })
                    }
                    ClauseKind::Invalidate { when, action } => {
                        let t = CTrigger::compile(when, &res, &mut slots)?;
                        let ride = *action == Some(InvalidateAction::HaltRide);
                        // `-> halt, ride` keeps the inventory: its level closes nothing.
                        if !ride {
                            stop_preds.extend(t.sufficient_preds().into_iter().cloned());
                        }
                        rt.invalidates.push((t, ride, false))
                    }
                    ClauseKind::CancelIf(t) => rt
                        .cancel_ifs
                        .push((CTrigger::compile(t, &res, &mut slots)?, false)),
                    ClauseKind::Arm(n) => arms.push(
                        pidx(&n.text).ok_or_else(|| format!("ARM {}: no such plan", n.text))?,
                    ),
                }
            }
            Ok(())
        })();
        for (sym, m, _) in &slots.pcts {
            self.sh.ms.track(sym.as_str(), *m);
        }
        self.sh.slots = slots;
        if let Err(why) = r {
            fail!(why);
        }
        let Some(when) = when else {
            fail!("no WHEN clause".to_string());
        };
        rt.arms = arms;
        // Price stops for shares risk: `S.spot < L`, `<=`, `crosses below L`, where it alone
        // closes the inventory (an EXIT's or a flattening INVALIDATE's whole trigger, or an
        // alternative of its OR). Before 2026-12-05 a level anywhere counted: a plan with
        // `INVALIDATE time >= 11:40 AND spot < 478.40 -> halt, ride` was sized as stopped at
        // 478.40 (555 shares on a $100 budget), rode to -$2,553, and lost the assumed stop.
        for pr in &stop_preds {
            let (s, v) = match pr {
                CPred::Cmp {
                    s,
                    op: ast::CmpOp::Lt | ast::CmpOp::Le,
                    v,
                    ..
                } => (s, v),
                CPred::Cross {
                    s, above: false, v, ..
                } => (s, v),
                _ => continue,
            };
            if let (CSeries::Mkt(sym, MSeries::Spot, _), CValue::Num(l)) = (s, v) {
                rt.stop_levels.push((*sym, *l));
            }
        }
        let mut uses_leg = when.uses_leg;
        let mut uses_plan = when.uses_plan;
        rt.when = Some(when);
        for t in rt
            .reloads
            .iter()
            .map(|x| &x.0)
            .chain(rt.exits.iter().map(|x| &x.when))
            .chain(rt.invalidates.iter().map(|x| &x.0))
            .chain(rt.cancel_ifs.iter().map(|x| &x.0))
        {
            uses_leg |= t.uses_leg;
            uses_plan |= t.uses_plan;
        }
        rt.uses_leg = uses_leg;
        rt.uses_plan = uses_plan;
        // A plan reading its leg quotes resolves its instrument while it waits: never parked.
        if !uses_leg {
            rt.park = Park::of(
                rt.when.iter().chain(rt.invalidates.iter().map(|x| &x.0)),
                &mut self.sh.slots,
            );
            if !rt.exits.is_empty() {
                rt.park_exit =
                    Park::of_levels(rt.exits.iter().map(|x| &x.when), &mut self.sh.slots);
            }
        }
        rt.book = self
            .sh
            .books
            .iter()
            .position(|b| b.coverage.iter().any(|c| c == rt.exec.as_str()));
        let _ = idx;
        Ok(rt)
    }

    /// Feed one tape event: update the market, then step every live plan. Events after the
    /// session close only update the market (the close settles first). A caller that
    /// knows the next event's time steps the plans once per instant instead
    /// ([`on_event_before`](Self::on_event_before)).
    pub fn on_event(&mut self, ev: &TapeEvent) {
        self.on_event_before(ev, None);
    }

    /// Feed one tape event whose next event (if any) is at `next`: update the market, and
    /// step every live plan once the instant is whole, that is unless `next` is this
    /// event's own time. The events of one instant (an SPX print and an SPY print of the
    /// same second) are one market state: a plan that fires on the first is priced on the
    /// quotes of all of them, never on a quote that instant already replaced (docs/runtime.md,
    /// "One instant, one step"). A step owed when an event of another instant (or the end)
    /// comes instead is taken first.
    pub fn on_event_before(&mut self, ev: &TapeEvent, next: Option<Ts>) {
        if self.step_owed && (ev.ts() != self.sh.now || matches!(ev, TapeEvent::Session(_))) {
            self.step_owed = false;
            if !self.closed {
                self.step();
            }
        }
        if let TapeEvent::Session(spec) = ev {
            self.start_session(spec);
            return;
        }
        let ts = ev.ts();
        if !self.closed && ts > self.sh.close {
            self.close_session();
        }
        self.tape_events += 1;
        self.sh.ms.apply(ev);
        if ts > self.sh.now {
            self.sh.now = ts;
        }
        match ev {
            TapeEvent::Tick(t) => self.bump(t.sym, 1),
            TapeEvent::Iv(i) => self.bump(i.sym, 0),
            TapeEvent::Quote(q) => self.bump(q.inst.sym(), 0),
            TapeEvent::Session(_) => {}
            TapeEvent::Headline(h) => {
                self.sh.ev.headline = Some(h.ts);
                self.sh.bus.emit(Event::Headline {
                    ts: h.ts,
                    text: h.text.clone(),
                });
            }
        }
        if self.closed {
            self.sh.sym_events = 0;
            return;
        }
        if next == Some(ts) {
            self.step_owed = true;
            if self.sh.sym_events & self.sh.resting_syms != 0 {
                self.meet_print();
            }
            return;
        }
        self.step_owed = false;
        self.step();
    }

    /// A print with more of its instant to come: every resting order whose book it moved
    /// meets that book now (RUNTIME.md §4: a resting buy at L fills at L on the first tick
    /// whose ask is strictly below L), so a cross that a later print of the same instant
    /// undoes still fills, as a venue would have matched it. Nothing else of the plan moves
    /// until the instant's step (its TP, EXITs, re-prices and state read the whole
    /// instant); a fill here makes that step a full one for every plan. On the bundled
    /// tapes (one print per symbol per instant) no order's book moves before the instant's
    /// last print, and this finds nothing.
    #[cold]
    #[inline(never)]
    fn meet_print(&mut self) {
        let mut filled = false;
        for i in 0..self.plans.len() {
            let mut k = 0;
            while k < self.plans[i].orders.len() {
                let o = &self.plans[i].orders[k];
                let inst = o.inst;
                if !o.cover.is_empty() || o.seen == WAITED || o.seen == sym_version(&self.sh, inst)
                {
                    k += 1;
                    continue;
                }
                let Some(q) = quote(&mut self.sh, inst) else {
                    k += 1;
                    continue;
                };
                let o = &self.plans[i].orders[k];
                let Some(px) = self.sh.fill.on_book(o.side, o.limit, q.bid, q.ask) else {
                    k += 1;
                    continue;
                };
                if self.plans[i].quiet {
                    self.leave_quiet(i);
                }
                let o = self.plans[i].orders.remove(k);
                unrest(&mut self.sh, &o);
                do_fill(&mut self.plans[i], i, &mut self.sh, o, px);
                filled = true;
            }
        }
        if filled {
            self.sh.plans_changed();
        }
    }

    /// Drop a step owed to an instant that will not be whole: the tape was refused after
    /// one of its events ([`on_event_before`](Self::on_event_before)). Its events stand in
    /// the market; no plan acts on them.
    pub fn drop_owed_step(&mut self) {
        self.step_owed = false;
    }

    /// Feed a tape's events in order, the plans stepping once per instant
    /// ([`on_event_before`](Self::on_event_before)).
    pub fn on_events<'a>(&mut self, events: impl IntoIterator<Item = &'a TapeEvent>) {
        let mut events = events.into_iter().peekable();
        while let Some(ev) = events.next() {
            let next = events.peek().map(|n| n.ts());
            self.on_event_before(ev, next);
        }
    }

    /// Count an event of `sym` (`tick`: 1 for a trade).
    fn bump(&mut self, sym: Sym, tick: u64) {
        for (i, s) in self.sh.syms.iter_mut().enumerate() {
            if s.0 == sym {
                s.1 += 1;
                s.2 += tick;
                self.sh.sym_events |= 1u64 << i.min(63);
            }
        }
    }

    fn step(&mut self) {
        if self.sh.live_moved {
            self.skip_unread();
        }
        let sh = &mut self.sh;
        sh.slots
            .refresh(&sh.ms, &sh.syms, &mut sh.mvals, &mut sh.pvals, sh.now);
        if !self.order.is_empty() {
            self.step_plans();
        }
        if !self.holders.is_empty() && (!self.pods.is_empty() || !self.wakes.is_empty()) {
            self.fold_quiet();
        }
        if !self.pods.is_empty() {
            self.check_pods();
        }
        if !self.wakes.is_empty() {
            self.step_wakes();
        }
        self.mark_live();
        self.sh.sym_events = 0;
    }

    /// Tell the slots which series no trigger that can be read now reads (`Slots::skip`):
    /// every plan's [`live_series`] taken again after an act from outside the loop, or the
    /// union again after a plan's changed at its step; the WAKEs', evaluated at every event,
    /// always. The naive schedule of the tests reads every slot (the reference).
    #[cold]
    #[inline(never)]
    fn skip_unread(&mut self) {
        let sh = &mut self.sh;
        if sh.live_stale || sh.live.len() != self.plans.len() {
            sh.live.clear();
            sh.live.extend(self.plans.iter().map(live_series));
        }
        sh.live_stale = false;
        sh.live_moved = false;
        let read = if sh.slots.dirt.naive {
            Reads::ALL
        } else {
            let plans = sh.live.iter().fold(Reads::default(), |a, &b| a | b);
            self.wakes.iter().fold(plans, |a, w| a | w.trig.reads())
        };
        sh.slots.skip(!read);
    }

    /// Step the plans the schedule names, in evaluation order. Out of line: inlined, its
    /// registers cost `step` and `on_event` at every event, plans or none.
    #[inline(never)]
    fn step_plans(&mut self) {
        if self.sh.sched.stale || self.sh.sched.len() != self.order.len() {
            // Every plan steps at this event: the quiet ones settle again.
            self.unquiet_all();
            let sh = &mut self.sh;
            let plans = &self.plans;
            let views = self.order.iter().map(|&i| {
                let p = &plans[i];
                sched::PlanView {
                    park: p.park,
                    park_exit: p.park_exit,
                    dead: matches!(p.status, Status::Dormant | Status::Closed),
                    ttl: p.ttl_at.filter(|_| p.status == Status::Armed),
                }
            });
            sh.sched.rebuild(views, sh.slots.dirt.touched.len());
        }
        let sh = &mut self.sh;
        sh.sched.plan(&sh.slots.dirt, sh.now, sh.sym_events);
        if !self.quiet.is_empty() {
            self.step_quiet();
        }
        // The plans to step, in evaluation order: those not parked, and the parked ones whose
        // inputs moved (`sched`).
        let mut k = 0;
        while let Some(pos) = self.sh.sched.next(k) {
            k = pos + 1;
            let Some(&i) = self.order.get(pos) else { break };
            let light = self.sh.sched.take_light(pos);
            // (The rest of what makes it a sleeper is debug-asserted in `step_resting`: every
            // act that can change it marks the schedule stale, which ends every sleep.)
            let p = &self.plans[i];
            if light && p.status == Status::Active && !p.orders.is_empty() {
                // Asleep on its resting orders, woken by an event of their symbols: it steps
                // them, and sleeps on unless something came of it (a fill, a cancel, a quote
                // gone UNKNOWN), when its step is completed and its sleep is over.
                self.sh.plan_steps += 1;
                if step_resting(&mut self.plans[i], i, &mut self.sh) {
                    debug_assert!(idle_resting(&self.plans[i], &self.sh));
                    continue;
                }
                self.sh.sched.unsleep(pos);
            } else {
                if light {
                    // (An act from outside the loop rebuilds the schedule, ending every
                    // sleep; should one have left a sleeper otherwise, it steps in full.)
                    self.sh.sched.unsleep(pos);
                }
                if self.plans[i].quiet {
                    // A quiet plan watching its EXITs, woken by an input of its groups: when
                    // none of its EXITs' inputs moved, their values stand and the step would
                    // do nothing (`quiet` module); else it steps, brought up to date first.
                    if still_quiet(&mut self.plans[i], &self.sh.slots.dirt) {
                        self.sh.sched.after_step(pos, true, true);
                        continue;
                    }
                    self.leave_quiet(i);
                }
                self.sh.plan_steps += 1;
                step_plan(&mut self.plans[i], i, &mut self.sh);
            }
            let read = live_series(&self.plans[i]);
            if let Some(r) = self.sh.live.get_mut(i)
                && *r != read
            {
                *r = read;
                self.sh.live_moved = true;
            }
            let p = &mut self.plans[i];
            let dead = matches!(p.status, Status::Dormant | Status::Closed);
            // (The naive schedule of the tests steps every plan, so none is quiet there.)
            let q = quiet(p) && !self.sh.slots.dirt.naive;
            // Quiet with EXITs left: it watches them (woken when their levels are crossed).
            let watching = q && p.exits.iter().any(|x| !x.done);
            if watching {
                p.parked = true;
            }
            let parked = p.parked && !dead;
            if q {
                self.enter_quiet(i, pos);
            }
            let p = &self.plans[i];
            if !dead && !q && !self.sh.slots.dirt.naive && idle_resting(p, &self.sh) {
                // Its orders rest having seen their quotes, nothing left to do until one of
                // their symbols has an event or its time comes: asleep until then.
                let (syms, until) = sleep_until(p, &self.sh);
                self.sh.sched.sleep(pos, syms, until);
            } else {
                self.sh.sched.after_step(pos, parked, dead || q);
            }
            if self.sh.to_arm.is_empty() {
                continue;
            }
            while let Some((from, j)) = self.sh.to_arm.pop() {
                let j = self.sh.ev.current(j);
                if let Some(t) = self.plans.get_mut(j)
                    && t.status == Status::Dormant
                {
                    let why = format!("ARM from {}", self.plans[from].name);
                    arm_plan(&mut self.plans[j], &mut self.sh, Some(why));
                    // Later in the order: it steps at this event, as it always did.
                    if let Some(at) = self.order.iter().position(|&x| x == j) {
                        self.sh.sched.wake(at);
                    }
                }
            }
        }
    }

    /// The quiet plans at an event, before the plan loop (`quiet` module): a plan whose ttl
    /// came (entries open) leaves the quiet set and is woken to step at this event; the rest
    /// are valued. (Something done from outside the loop, a pod halt's flatten say, marks the
    /// schedule stale: at the next event every plan leaves the quiet set and steps.)
    fn step_quiet(&mut self) {
        let now = self.sh.now;
        if self.quiet_ttl.is_some_and(|t| now >= t) {
            let mut j = 0;
            while let Some(&(i, pos)) = self.quiet.get(j) {
                let p = &self.plans[i];
                if ttl_due(p, now) || !quiet(p) {
                    self.leave_quiet(i);
                    self.sh.sched.wake(pos);
                    continue;
                }
                j += 1;
            }
            self.quiet_ttl = self.next_quiet_ttl();
        }
        if self.quiet_stops_stale || !self.quiet_stops.is_empty() {
            self.quiet_stops_hit();
        }
        let mut k = 0;
        while let Some(h) = self.holders.get_mut(k) {
            if h.take(&mut self.sh) {
                k += 1;
                continue;
            }
            // A price out of the fixed-point range: value the group's plans one by one.
            let mut h = self.holders.swap_remove(k);
            h.fold(&mut self.plans, &self.sh);
            self.quiet_each.extend(h.members);
        }
        quiet::revalue_each(&self.quiet_each, &mut self.plans, &mut self.sh);
    }

    /// The quiet plans whose assumed share stop the bid reached at this event leave the
    /// quiet set and are woken to step (their step sells at the `STOP`): one quote and one
    /// compare per instrument while none is reached.
    fn quiet_stops_hit(&mut self) {
        if self.quiet_stops_stale {
            self.quiet_stops_stale = false;
            self.quiet_stops.clear();
            for &(i, _) in &self.quiet {
                for l in &self.plans[i].legs {
                    let Some(stop) = l.assumed_stop() else {
                        continue;
                    };
                    match self.quiet_stops.iter_mut().find(|x| x.0 == l.inst) {
                        Some(x) => x.1 = x.1.max(stop),
                        None => self.quiet_stops.push((l.inst, stop)),
                    }
                }
            }
        }
        for k in 0..self.quiet_stops.len() {
            let (inst, highest) = self.quiet_stops[k];
            let Some(bid) = quote(&mut self.sh, inst).map(|q| q.bid.raw() as f64) else {
                continue;
            };
            if bid > highest {
                continue;
            }
            let mut j = 0;
            while let Some(&(i, pos)) = self.quiet.get(j) {
                let reached = self.plans[i]
                    .legs
                    .iter()
                    .any(|l| l.inst == inst && l.assumed_stop().is_some_and(|s| bid <= s));
                if reached {
                    self.leave_quiet(i);
                    self.sh.sched.wake(pos);
                    continue;
                }
                j += 1;
            }
        }
    }

    /// The earliest ttl of a quiet plan whose entries are open.
    fn next_quiet_ttl(&self) -> Option<Ts> {
        self.quiet
            .iter()
            .filter_map(|&(i, _)| {
                let p = &self.plans[i];
                p.ttl_at.filter(|_| p.entries_open)
            })
            .min()
    }

    /// Plan `i` (at `pos` in the order) turned quiet after its step.
    fn enter_quiet(&mut self, i: usize, pos: usize) {
        let p = &mut self.plans[i];
        p.quiet = true;
        self.quiet.push((i, pos));
        if p.legs.iter().any(|l| l.assumed_stop().is_some()) {
            self.quiet_stops_stale = true;
        }
        if let Some(t) = p.ttl_at.filter(|_| p.entries_open) {
            self.quiet_ttl = Some(self.quiet_ttl.map_or(t, |q| q.min(t)));
        }
        let joined = match quiet::lazy_inst(p, &self.sh) {
            Some(inst) => {
                let k = match self.holders.iter().position(|h| h.inst == inst) {
                    Some(k) => k,
                    None => {
                        self.holders.push(quiet::Holders::new(inst, &mut self.sh));
                        self.holders.len() - 1
                    }
                };
                self.holders[k].join(i, &mut self.plans, &self.sh)
            }
            None => false,
        };
        if !joined {
            self.quiet_each.push(i);
        }
    }

    /// Plan `i` is quiet no longer (brought up to date first).
    fn leave_quiet(&mut self, i: usize) {
        self.plans[i].quiet = false;
        self.quiet_stops_stale |= !self.quiet_stops.is_empty();
        self.quiet.retain(|&(m, _)| m != i);
        self.quiet_each.retain(|&m| m != i);
        if let Some(k) = self.holders.iter().position(|h| h.members.contains(&i)) {
            self.holders[k].leave(i, &mut self.plans, &self.sh);
            if self.holders[k].members.is_empty() {
                self.holders.swap_remove(k);
            }
        }
    }

    /// Bring every lazily valued quiet plan's P&L and excursion up to date.
    fn fold_quiet(&mut self) {
        for h in &mut self.holders {
            h.fold(&mut self.plans, &self.sh);
        }
    }

    /// No plan is quiet (each brought up to date first): the schedule was rebuilt.
    fn unquiet_all(&mut self) {
        self.fold_quiet();
        for &(i, _) in &self.quiet {
            self.plans[i].quiet = false;
        }
        self.quiet.clear();
        self.quiet_each.clear();
        self.holders.clear();
        self.quiet_ttl = None;
        self.quiet_stops.clear();
        self.quiet_stops_stale = false;
    }

    /// Mark every instrument a plan holds at the market in the Bus's Blotter (not a Bus
    /// event): the exec symbol's mid for shares, the option's model fair on the cent grid for
    /// options (docs/runtime.md, "Marking"). Fixed-point; quotes are the ones the plans just
    /// read. One mark per instrument, whatever the number of plans holding it
    /// ([`crate::bus::blotter::LiveMarks`]).
    ///
    /// A mark equal to the one last given (and no trade since) is not given again: the
    /// Blotter already holds it.
    fn mark_live(&mut self) {
        let sh = &mut self.sh;
        for i in 0..sh.insts.len() {
            if sh.insts[i].held == 0 {
                continue;
            }
            let at = (sym_version(sh, i), sh.trades);
            let ir = &mut sh.insts[i];
            if ir.marked_at == at {
                continue;
            }
            ir.marked_at = at;
            let Some(q) = quote(sh, i) else { continue };
            // A quoted option's fair is its tape quote's mid (`BookQuote::with_tape_book`):
            // the mark is the market's, and only an unquoted one is a model price.
            let (px, model) = if q.option {
                (Px::round_cents(q.fair).unwrap_or(q.mid), !q.quoted)
            } else {
                (q.mid, false)
            };
            let m = Some((px, model, sh.trades));
            let ir = &mut sh.insts[i];
            if ir.marked == m {
                continue;
            }
            ir.marked = m;
            sh.bus.mark_live(&ir.key, px, model);
        }
    }

    /// Evaluate every armed WAKE; fire the first rising one by priority (see [`wakes`]).
    fn step_wakes(&mut self) {
        let total: i64 = self.plans.iter().map(|p| p.pnl_now).sum();
        let r = self.sh.r_usd.raw();
        let reads = PlanReads {
            pnl_r: (r > 0).then(|| total as f64 / r as f64),
            avg_px: None,
            leg: None,
        };
        let mut rising: Vec<usize> = Vec::new();
        for (i, w) in self.wakes.iter_mut().enumerate() {
            let v = eval!(&mut w.trig, self.sh, reads);
            if v == Tri::T && w.prev != Tri::T && w.primed {
                rising.push(i);
            }
            w.prev = v;
            w.primed = true;
        }
        if rising.is_empty() {
            return;
        }
        rising.sort_by_key(|&i| (std::cmp::Reverse(self.wakes[i].priority), self.wakes[i].seq));
        let now = self.sh.now;
        let mut fired: Option<String> = None;
        for i in rising {
            let w = &mut self.wakes[i];
            let reason = match (&fired, w.budget) {
                (_, Some(b)) if w.used >= b => Some(format!("budget of {b} wakes/day spent")),
                (Some(f), _) => Some(format!("{f} fired first at this instant (priority)")),
                _ => None,
            };
            if let Some(reason) = reason {
                self.sh.bus.emit(Event::WakeSuppressed {
                    ts: now,
                    wake: w.name.clone(),
                    reason,
                });
                continue;
            }
            w.used += 1;
            self.wake_used
                .insert((w.owner.clone(), w.name.clone()), w.used);
            self.sh.bus.emit(Event::WakeFired {
                ts: now,
                wake: w.name.clone(),
                why: w.why.clone(),
                deliver: w.deliver.clone().unwrap_or_default(),
                priority: w.priority,
                used: w.used,
            });
            self.fired_wakes.push(FiredWake {
                ts: now,
                wake: w.name.clone(),
                why: w.why.clone(),
                deliver: w.deliver.clone(),
                priority: w.priority,
            });
            fired = Some(w.name.clone());
        }
    }

    /// Did a wake fire since the last [`take_fired_wakes`](Self::take_fired_wakes)? (At most
    /// events none did: the session asks before it takes.)
    pub fn has_fired_wakes(&self) -> bool {
        !self.fired_wakes.is_empty()
    }

    /// Wakes that fired since the last call, oldest first (the session delivers their Views).
    pub fn take_fired_wakes(&mut self) -> Vec<FiredWake> {
        std::mem::take(&mut self.fired_wakes)
    }

    /// Names of the armed WAKEs, in arming order.
    pub fn wake_names(&self) -> Vec<String> {
        self.wakes.iter().map(|w| w.name.clone()).collect()
    }

    /// Supersede the standing book with a document (a turn's `supersede`): every live plan
    /// is stood down (entries pulled, inventory rides its TP / EXIT), every WAKE is dropped,
    /// then the document arms. Returns the names of the plans that armed.
    pub fn supersede(&mut self, doc: &Document) -> Vec<String> {
        self.supersede_as(doc, None)
    }

    /// Supersede one owner's book (TURNS.md §1, "Whose book"): that owner's plans stand down
    /// and its WAKEs are dropped; every other owner's plans keep running. `None` is the
    /// whole book (a headless run with one author).
    ///
    /// A plan sent again unchanged is kept as it stands ([`Engine::resent`]): it is not stood
    /// down and not armed again, so it keeps its state, orders, position, budget and ttl.
    pub fn supersede_as(&mut self, doc: &Document, owner: Option<&str>) -> Vec<String> {
        let doc = self.claimable(doc, owner);
        let doc = doc.as_ref();
        let kept = self.resent(doc, owner);
        for (i, p) in self.plans.iter_mut().enumerate() {
            if owns(owner, p.owner.as_deref()) && !kept.contains(&i) {
                stand_down_plan(p, &mut self.sh, "superseded");
            }
        }
        self.wakes.retain(|w| !owns(owner, w.owner.as_deref()));
        if self.tape_events == 0 {
            // Superseded before the first event: the new document is the opening one.
            self.opening.retain(|o| !owns(owner, o.owner.as_deref()));
            self.opening.push(Opening {
                doc: doc.clone(),
                owner: owner.map(str::to_string),
                added: false,
            });
        }
        self.arm_owned(doc, owner, &kept)
    }

    /// Add a document to one owner's book (the person at the desk): its plans join the book,
    /// replacing only that owner's live plans (and WAKEs) of the same names; everything else
    /// keeps running. A plan sent again unchanged is kept as it stands ([`Engine::resent`]).
    pub fn add_as(&mut self, doc: &Document, owner: Option<&str>) -> Vec<String> {
        let doc = self.claimable(doc, owner);
        let doc = doc.as_ref();
        let kept = self.resent(doc, owner);
        let mut names = std::collections::BTreeSet::new();
        let mut wakes = std::collections::BTreeSet::new();
        for st in &doc.statements {
            match &st.kind {
                StatementKind::Plan(p) => {
                    names.insert(p.name.text.as_str());
                }
                StatementKind::Wake(w) => {
                    wakes.insert(w.name.text.as_str());
                }
                _ => {}
            }
        }
        for (i, p) in self.plans.iter_mut().enumerate() {
            if names.contains(p.name.as_str())
                && owns(owner, p.owner.as_deref())
                && !kept.contains(&i)
            {
                stand_down_plan(p, &mut self.sh, "superseded");
            }
        }
        self.wakes
            .retain(|w| !(wakes.contains(w.name.as_str()) && owns(owner, w.owner.as_deref())));
        if self.tape_events == 0 {
            // Added before the first event (the desk's opening plans): an opening document,
            // added again at each session of a multi-session tape (so it replaces the same
            // plans there as here).
            self.opening.push(Opening {
                doc: doc.clone(),
                owner: owner.map(str::to_string),
                added: true,
            });
        }
        self.arm_owned(doc, owner, &kept)
    }

    /// The owner's standing plans that `doc` sends again unchanged: for each PLAN of the
    /// document, the newest plan of its name when that one is the owner's, was not stood
    /// down by its author, and says the same ([`plan_text`]: canonical text without comments,
    /// with its USING). Such a plan is kept as it stands, whatever its state (armed, filled,
    /// done, expired): an agent re-sends the book it keeps at each wake (a supersede replaces
    /// the book), and a plan re-sent must not trade again, nor get a new ttl from a relative
    /// `ttl +30m`. A name the document declares twice is never kept.
    fn resent(&self, doc: &Document, owner: Option<&str>) -> std::collections::BTreeSet<usize> {
        let mut kept = std::collections::BTreeSet::new();
        let mut using: Option<&ast::Using> = None;
        let declared = |n: &str| {
            doc.statements
                .iter()
                .filter(|st| matches!(&st.kind, StatementKind::Plan(p) if p.name.text == n))
                .count()
        };
        for st in &doc.statements {
            let p = match &st.kind {
                StatementKind::Using(u) => {
                    using = Some(u);
                    continue;
                }
                StatementKind::Plan(p) => p,
                _ => continue,
            };
            let Some(i) = self.plans.iter().rposition(|q| q.name == p.name.text) else {
                continue;
            };
            let q = &self.plans[i];
            if owns(owner, q.owner.as_deref())
                && !q.dropped
                && q.text == plan_text(p, using)
                && declared(&p.name.text) == 1
            {
                kept.insert(i);
            }
        }
        kept
    }

    /// Does a live plan of another owner than `owner` hold the name `name`? A PLAN of that
    /// name `owner` sends is not armed ([`Engine::claimable`]): the desk warns of it on a
    /// proposal before the person accepts it.
    pub fn claimed_by_other(&self, name: &str, owner: &str) -> bool {
        self.plans.iter().any(|p| {
            p.name == name && p.status != Status::Closed && p.owner.as_deref() != Some(owner)
        })
    }

    /// The document an owner may arm: a PLAN whose name another owner's live plan holds is
    /// left out, with an `error` event saying why (one live plan per name, so a CANCEL, the
    /// Blotter and the Plans pane always mean one plan).
    fn claimable<'d>(
        &mut self,
        doc: &'d Document,
        owner: Option<&str>,
    ) -> std::borrow::Cow<'d, Document> {
        let Some(o) = owner else {
            return std::borrow::Cow::Borrowed(doc);
        };
        let taken: std::collections::BTreeSet<&str> = self
            .plans
            .iter()
            .filter(|p| p.status != Status::Closed && p.owner.as_deref() != Some(o))
            .map(|p| p.name.as_str())
            .collect();
        let clash = |st: &ast::Statement| matches!(&st.kind, StatementKind::Plan(p) if taken.contains(p.name.text.as_str()));
        if !doc.statements.iter().any(clash) {
            return std::borrow::Cow::Borrowed(doc);
        }
        let mut d = doc.clone();
        let mut refused = Vec::new();
        d.statements.retain(|st| {
            if clash(st) {
                if let StatementKind::Plan(p) = &st.kind {
                    refused.push(p.name.text.clone());
                }
                false
            } else {
                true
            }
        });
        for name in refused {
            self.sh.bus.emit(Event::Error {
                ts: self.sh.now,
                plan: Some(name.clone()),
                message: format!(
                    "PLAN {name} not armed: a live plan of another owner has that name (name yours differently)"
                ),
            });
        }
        std::borrow::Cow::Owned(d)
    }

    /// The plan a name means now: the newest live plan of that name, else the newest. A
    /// plan armed again by name leaves the one it replaced stood down but not closed while
    /// that one's inventory rides, so the newest live one is the one the author sees armed.
    fn named(&self, name: &str) -> Option<usize> {
        self.plans
            .iter()
            .rposition(|p| p.name == name && p.status != Status::Closed)
            .or_else(|| self.plans.iter().rposition(|p| p.name == name))
    }

    /// Who armed a plan, if the book has owners: the plan the name means ([`Self::named`],
    /// the one a CANCEL reaches).
    pub fn plan_owner(&self, name: &str) -> Option<&str> {
        self.named(name)
            .and_then(|i| self.plans[i].owner.as_deref())
    }

    /// Does the plan a name means ([`Self::named`]) write a TP or an EXIT (what manages its
    /// inventory after a stand-down)? `false` for an unknown name.
    pub fn plan_has_exits(&self, name: &str) -> bool {
        self.named(name)
            .is_some_and(|i| !self.plans[i].tps.is_empty() || !self.plans[i].exits.is_empty())
    }

    /// When a plan's ttl ends (no new entries after it): set when the plan arms, so `None`
    /// for a plan still waiting for its ARM target (and an unknown name). The plan the name
    /// means ([`Self::named`]).
    pub fn plan_ttl_end(&self, name: &str) -> Option<Ts> {
        self.named(name).and_then(|i| self.plans[i].ttl_at)
    }

    /// The worst case committed now by the plans still live (not closed), money units: what
    /// the fire and re-price checks count against their budgets ([`commit`], [`release`]),
    /// for the View's `[kernel] risk used`. A closed plan's commitment binds nothing more.
    pub fn live_committed(&self) -> i64 {
        self.plans
            .iter()
            .filter(|p| p.status != Status::Closed)
            .map(|p| p.committed)
            .fold(0i64, i64::saturating_add)
    }

    /// Compile and arm a document's WAKEs (a WAKE replaces an armed one of the same name).
    fn arm_wakes(&mut self, doc: &Document) {
        let mut using: Option<&ast::Using> = None;
        let names: Vec<String> = self.plans.iter().map(|p| p.name.clone()).collect();
        for st in &doc.statements {
            let w = match &st.kind {
                StatementKind::Using(u) => {
                    using = Some(u);
                    continue;
                }
                StatementKind::Wake(w) => w,
                _ => continue,
            };
            let signal = using
                .and_then(|u| Sym::new(&u.signal.text))
                .or_else(|| self.sh.default_signal());
            let Some(signal) = signal else {
                continue;
            };
            let syms = &self.sh.syms;
            let has = |s: &str| syms.iter().any(|(x, ..)| x.as_str() == s);
            // The latest plan of a name (a superseding document may reuse names).
            let pidx = |n: &str| names.iter().rposition(|x| x == n);
            let res = Resolver {
                signal,
                has_symbol: &has,
                plan_index: &pidx,
            };
            let mut slots = std::mem::take(&mut self.sh.slots);
            let compiled = CTrigger::compile(&w.when, &res, &mut slots);
            for (sym, m, _) in &slots.pcts {
                self.sh.ms.track(sym.as_str(), *m);
            }
            self.sh.slots = slots;
            self.wakes.retain(|x| x.name != w.name.text);
            match compiled {
                Ok(trig) => {
                    self.wake_seq += 1;
                    self.wakes.push(WakeRt {
                        name: w.name.text.clone(),
                        owner: self.arming_owner.clone(),
                        why: crate::lang::print::trigger_text(&w.when),
                        trig,
                        deliver: w.deliver.as_ref().map(|d| d.text.clone()),
                        priority: w.priority.as_ref().map(|p| p.value() as i64).unwrap_or(0),
                        budget: w.budget.as_ref().map(|b| b.value().max(0.0) as u64),
                        // What this WAKE has spent today, however often it was armed.
                        used: self
                            .wake_used
                            .get(&(self.arming_owner.clone(), w.name.text.clone()))
                            .copied()
                            .unwrap_or(0),
                        prev: Tri::U,
                        primed: false,
                        seq: self.wake_seq,
                    });
                }
                Err(why) => self.sh.bus.emit(Event::Error {
                    ts: self.sh.now,
                    plan: None,
                    message: format!("WAKE {} not armed: {why}", w.name.text),
                }),
            }
        }
    }

    fn check_pods(&mut self) {
        let total: i64 = self.plans.iter().map(|p| p.pnl_now).sum();
        for pi in 0..self.pods.len() {
            let pod = &mut self.pods[pi];
            if pod.halted || total >= 0 || -total <= pod.limit {
                continue;
            }
            pod.halted = true;
            self.sh.plans_changed();
            let (name, limit) = (pod.name.clone(), pod.limit);
            self.sh.bus.emit(Event::PodHalt {
                ts: self.sh.now,
                pod: name.clone(),
                loss_usd: Px(-total),
                limit_usd: Px(limit),
            });
            for p in &mut self.plans {
                if p.status == Status::Closed {
                    continue;
                }
                p.entries_open = false;
                cancel_orders(p, &mut self.sh, |_| true, "pod halt");
                set_state(
                    p,
                    &mut self.sh,
                    PlanState::Halted,
                    Some(crate::bus::blotter::pod_halt_reason(&name)),
                );
                flatten(p, &mut self.sh, "FLATTEN");
                p.status = if p.status == Status::Dormant || p.status == Status::Armed {
                    Status::Closed
                } else {
                    p.status
                };
            }
        }
    }

    /// STAND-DOWN: de-arm every plan (no new entries, resting entry orders pulled); open
    /// inventory rides its TP / EXIT.
    pub fn stand_down(&mut self, reason: &str) {
        self.stand_down_as(reason, None);
    }

    /// STAND-DOWN of one owner's book: only the plans it armed are de-armed (`None`: every
    /// plan). The `stand-down` event names the owner.
    pub fn stand_down_as(&mut self, reason: &str, owner: Option<&str>) {
        self.sh.plans_changed();
        self.sh.bus.emit(Event::StandDown {
            ts: self.sh.now,
            reason: reason.to_string(),
            owner: owner.map(str::to_string),
        });
        for p in &mut self.plans {
            if owns(owner, p.owner.as_deref()) {
                stand_down_plan(p, &mut self.sh, "stand-down");
            }
        }
    }

    /// CANCEL <name>: stand a plan down by name (entries pulled, inventory rides): the
    /// newest live plan of that name (a plan armed again by name, not the one it replaced).
    /// Returns whether a plan of that name was live.
    pub fn cancel(&mut self, name: &str) -> bool {
        let hit = self
            .named(name)
            .filter(|&i| self.plans[i].status != Status::Closed);
        let outcome = match hit {
            Some(_) => "plan stood down: entries pulled, inventory rides".to_string(),
            None => format!("no live plan named {name}"),
        };
        self.sh.bus.emit(Event::Cancel {
            ts: self.sh.now,
            target: name.to_string(),
            outcome,
        });
        if let Some(i) = hit {
            self.sh.plans_changed();
            stand_down_plan(&mut self.plans[i], &mut self.sh, "cancel");
        }
        hit.is_some()
    }

    fn close_session(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.fold_quiet();
        let now = self.sh.now.min(self.sh.close).max(self.sh.now);
        for p in &mut self.plans {
            cancel_orders(p, &mut self.sh, |_| true, "session close");
            for li in 0..p.legs.len() {
                let qty = p.legs[li].pos.qty;
                if qty == 0 {
                    continue;
                }
                let inst = p.legs[li].inst;
                let q = quote(&mut self.sh, inst);
                let ir = &self.sh.insts[inst];
                let zero_dte = match ir.kind {
                    InstKind::Opt { expiry, .. } => {
                        expiry.resolve(self.sh.date) == Some(self.sh.date)
                    }
                    InstKind::Shares => false,
                };
                let (mult, key) = (ir.mult, ir.key.clone());
                if zero_dte {
                    let px = q.map_or(Px::ZERO, |q| q.intrinsic);
                    trade_leg(p, li, &mut self.sh.insts, -qty, px, mult);
                    self.sh.trades += 1;
                    self.sh.bus.emit(Event::Settlement {
                        ts: now,
                        plan: p.name.clone(),
                        leg: key,
                        qty,
                        px,
                        mult,
                    });
                } else if let Some(q) = q {
                    let px = if q.option {
                        Px::round_cents(q.fair).unwrap_or(q.mid)
                    } else {
                        q.last
                    };
                    p.legs[li].pos.mark = Some(px);
                    self.sh.bus.emit(Event::Mark {
                        ts: now,
                        plan: p.name.clone(),
                        leg: key,
                        px,
                    });
                }
            }
            let pnl: i64 = p
                .legs
                .iter()
                .map(|l| l.pos.realised.saturating_add(l.pos.open_pnl()))
                .sum();
            p.pnl_now = pnl;
            if p.had_fill {
                p.mae = p.mae.min(pnl);
                self.sh.bus.emit(Event::Excursion {
                    ts: now,
                    plan: p.name.clone(),
                    mae_usd: Px(p.mae.min(0)),
                });
            }
            if p.status != Status::Closed {
                p.status = Status::Closed;
                set_state(
                    p,
                    &mut self.sh,
                    PlanState::Done,
                    Some("session close".into()),
                );
            }
        }
    }

    /// End a session cut short (a signal): an `error` event saying why at the current tape
    /// time, then `session-end`. Nothing is settled or marked: the session never reached its
    /// close, and the Bus says so instead of reporting a whole one.
    pub fn interrupt(mut self, why: &str) -> Bus {
        self.cut(why);
        self.sh.bus
    }

    /// [`Engine::interrupt`] in place (the caller takes the Bus out after). Once only: an
    /// engine already ended or cut is left as it is.
    pub fn cut(&mut self, why: &str) {
        if self.ended {
            return;
        }
        self.ended = true;
        let ts = self.sh.now;
        self.sh.bus.emit(Event::Error {
            ts,
            plan: None,
            message: why.to_string(),
        });
        self.sh.bus.emit(Event::SessionEnd {
            ts,
            tape_events: self.tape_events,
        });
    }

    /// Close the session (if the tape ended before its close time, the end of the tape is
    /// the close), write `session-end`, and give back the Bus.
    pub fn finish(mut self) -> Bus {
        self.end();
        self.sh.bus
    }

    /// Close the session in place (settle at the close, then `session-end`), keeping the
    /// engine for reading: the desk still draws the book after the close. Idempotent.
    pub fn end(&mut self) {
        if self.ended {
            return;
        }
        self.ended = true;
        if std::mem::take(&mut self.step_owed) && !self.closed {
            self.step();
        }
        self.close_session();
        let ts = self.sh.now;
        self.sh.bus.emit(Event::SessionEnd {
            ts,
            tape_events: self.tape_events,
        });
    }
}

/// Replay a tape: arm `docs` at the open, feed every event, finish. The first refused tape
/// line stops the replay with its error (the Bus is dropped: nothing half-written is kept
/// by callers that write atomically).
pub fn replay<I>(
    header: &TapeHeader,
    events: I,
    docs: &[Document],
    cfg: EngineConfig,
    bus: Bus,
) -> Result<Bus, TapeError>
where
    I: IntoIterator<Item = Result<TapeEvent, TapeError>>,
{
    let mut e = Engine::new(header, cfg, bus);
    for d in docs {
        e.arm_document(d);
    }
    let mut events = events.into_iter().peekable();
    while let Some(ev) = events.next() {
        let ev = ev?;
        let next = match events.peek() {
            Some(Ok(n)) => Some(n.ts()),
            _ => None,
        };
        e.on_event_before(&ev, next);
    }
    Ok(e.finish())
}

// ------------------------------------------------------------------ plan stepping

fn set_state(p: &mut PlanRt, sh: &mut Shared, s: PlanState, reason: Option<String>) {
    if p.label == s {
        return;
    }
    p.label = s;
    if p.replaced {
        return;
    }
    sh.bus.emit(Event::PlanState {
        ts: sh.now,
        plan: p.name.clone(),
        state: s,
        reason,
    });
}

fn arm_plan(p: &mut PlanRt, sh: &mut Shared, reason: Option<String>) {
    p.status = Status::Armed;
    p.parked = false;
    sh.plans_changed();
    p.ttl_at = Some(match &p.ttl {
        Ttl::At(c) => Ts(c.minutes() * 60_000),
        Ttl::After(d) => Ts(sh
            .now
            .ms()
            .saturating_add(u32::try_from(d.seconds().saturating_mul(1000)).unwrap_or(u32::MAX))),
    });
    p.label = PlanState::Dormant;
    set_state(p, sh, PlanState::Armed, reason);
    if !p.replaced {
        let w = arming::check(p, sh);
        sh.arm_warnings.extend(w);
    }
}

/// Does an act by `actor` reach a plan or WAKE of `owner`? An act with no owner (a
/// headless run's, or the person's STAND-DOWN) reaches everything.
fn owns(actor: Option<&str>, owner: Option<&str>) -> bool {
    actor.is_none() || actor == owner
}

/// A plan's canonical text without comments, after the USING it is armed under (a plan's
/// own USING, else the document's): what a plan says, so two plans that say the same run the
/// same ([`Engine::resent`]).
fn plan_text(p: &ast::Plan, doc_using: Option<&ast::Using>) -> String {
    let bare = |kind: StatementKind| ast::Statement {
        leading: Vec::new(),
        kind,
        trailing: None,
        span: Default::default(),
    };
    let mut plan = p.clone();
    for c in &mut plan.clauses {
        c.leading.clear();
        c.trailing = None;
    }
    let mut out = String::new();
    if let Some(u) = doc_using.filter(|_| p.using().is_none()) {
        crate::lang::print::print_statement(&mut out, &bare(StatementKind::Using(u.clone())));
    }
    crate::lang::print::print_statement(&mut out, &bare(StatementKind::Plan(plan)));
    out
}

/// Stand a plan down at its author's word (`why`: superseded, stand-down, cancel): no new
/// entries, resting entries pulled; inventory rides. Sent again, it arms afresh.
fn stand_down_plan(p: &mut PlanRt, sh: &mut Shared, why: &str) {
    p.dropped = true;
    if p.status == Status::Closed {
        return;
    }
    p.entries_open = false;
    cancel_orders(p, sh, |o| o.role == OrderRole::Entry, why);
    set_state(p, sh, PlanState::StoodDown, Some(why.to_string()));
    if matches!(p.status, Status::Dormant | Status::Armed) {
        p.status = Status::Closed;
    }
    check_done(p, sh);
}

fn sym_index(sh: &Shared, sym: Sym) -> usize {
    sh.syms.iter().position(|s| s.0 == sym).unwrap_or(0)
}

/// The instrument for a spec right now (ATM resolved at the current spot), creating it.
fn resolve_inst(p: &PlanRt, sh: &mut Shared, spec: InstSpec) -> Result<usize, String> {
    let sym = p.exec;
    let kind = match spec {
        InstSpec::Shares => InstKind::Shares,
        InstSpec::Opt(k, right) => {
            let strike = match k {
                StrikeSpec::Rel(n) => sh
                    .ms
                    .strike_for(sym.as_str(), n)
                    .ok_or_else(|| format!("no strike ATM{n:+} yet (spot of {sym} UNKNOWN)"))?,
                StrikeSpec::Abs(s) => s,
            };
            InstKind::Opt {
                expiry: p.expiry,
                strike,
                right,
            }
        }
    };
    if let Some(i) = sh.insts.iter().position(|x| x.sym == sym && x.kind == kind) {
        return Ok(i);
    }
    let (key, mult) = match kind {
        InstKind::Shares => (format!("{sym} shares"), 1),
        InstKind::Opt {
            expiry,
            strike,
            right,
        } => {
            let d = expiry
                .resolve(sh.date)
                .map_or_else(|| "expired".to_string(), |d| d.to_string());
            let r = if right == Right::Call { "C" } else { "P" };
            (format!("{sym} {d} {strike} {r}"), 100)
        }
    };
    let sym_i = sym_index(sh, sym);
    let ms_i = sh.ms.sym_index(sym).unwrap_or(usize::MAX);
    sh.insts.push(InstRt {
        sym,
        sym_i,
        ms_i,
        kind,
        key,
        mult,
        stamp: u64::MAX,
        q: None,
        held: 0,
        marked: None,
        marked_at: (u64::MAX, u64::MAX),
        peg: None,
        money: matches!(kind, InstKind::Opt { .. }).then(MoneyMemo::default),
    });
    Ok(sh.insts.len() - 1)
}

/// The instrument's quote, re-priced only when its symbol traded or its smile changed.
/// The event count of an instrument's symbol: its quote is current while its `stamp` is this.
#[inline(always)]
fn sym_version(sh: &Shared, inst: usize) -> u64 {
    sh.syms[sh.insts[inst].sym_i].1
}

fn quote(sh: &mut Shared, inst: usize) -> Option<QuoteF> {
    let ver = sym_version(sh, inst);
    let ir = &sh.insts[inst];
    if ir.stamp == ver {
        return ir.q;
    }
    let q = match ir.kind {
        InstKind::Opt {
            expiry,
            strike,
            right,
        } => {
            let ms_i = ir.ms_i;
            let money = sh.insts[inst].money.get_or_insert_with(MoneyMemo::default);
            sh.ms
                .book_quote_memo_at(ms_i, expiry, strike, right, money)
                .map(|q| QuoteF {
                    fair: q.fair,
                    intrinsic: q.intrinsic,
                    bid: q.bid,
                    ask: q.ask,
                    mid: q.mid,
                    last: q.last,
                    option: true,
                    quoted: q.quoted,
                })
        }
        InstKind::Shares => sh.ms.share_quote_at(ir.ms_i).map(|q| QuoteF {
            fair: q.fair.to_f64(),
            intrinsic: q.fair,
            bid: q.bid,
            ask: q.ask,
            mid: q.mid,
            last: q.last,
            option: false,
            quoted: q.quoted,
        }),
    };
    let ir = &mut sh.insts[inst];
    ir.stamp = ver;
    ir.q = q;
    ir.peg = None;
    q
}

/// A pegged order's limit at its instrument's current quote `q`: the price on the grid,
/// bounded (`bound`). An order priced at an anchor other than `basis`, with no cap or floor,
/// takes it from the instrument's memo when the previous such order at this quote was
/// pegged alike (same anchor, offset and side); the same value either way.
fn peg_limit(ir: &mut InstRt, o: &Order, q: &QuoteF, basis: Option<f64>) -> Option<Px> {
    let key = match &o.price {
        CPrice::Anchor(k, off)
            if *k != AnchorKind::Basis && o.mods.cap.is_none() && o.mods.floor.is_none() =>
        {
            Some((*k, *off))
        }
        _ => None,
    };
    if let (Some((k, off)), Some(m)) = (key, &ir.peg)
        && m.anchor == k
        && m.side == o.side
        && same_offset(m.offset, off)
    {
        return m.limit;
    }
    let buy = o.side == BusSide::Buy;
    let limit = o
        .price
        .limit(q, buy, basis)
        .map(|l| bound(l, o.side, q, &o.mods, basis));
    if let Some((anchor, offset)) = key {
        ir.peg = Some(PegMemo {
            anchor,
            offset,
            side: o.side,
            limit,
        });
    }
    limit
}

/// Two anchor offsets are the same (the amount bit for bit).
fn same_offset(a: Option<(f64, OffsetUnit)>, b: Option<(f64, OffsetUnit)>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some((x, u)), Some((y, v))) => x.to_bits() == y.to_bits() && u == v,
        _ => false,
    }
}

fn basis_of(p: &PlanRt, inst: usize) -> Option<f64> {
    p.legs
        .iter()
        .find(|l| l.inst == inst)
        .and_then(|l| l.pos.avg_px())
        .map(Px::to_f64)
}

/// Apply cap / floor and the SELL-at-intrinsic floor to a limit.
fn bound(limit: Px, side: BusSide, q: &QuoteF, mods: &Mods, basis: Option<f64>) -> Px {
    let buy = side == BusSide::Buy;
    let mut l = limit;
    if let Some(c) = mods.cap.as_ref().and_then(|c| c.limit(q, buy, basis)) {
        l = l.min(c);
    }
    if let Some(f) = mods.floor.as_ref().and_then(|f| f.limit(q, buy, basis)) {
        l = l.max(f);
    }
    if !buy
        && q.option
        && let Some(i) = to_grid(q.intrinsic.to_f64(), q, false)
        && q.intrinsic > Px::ZERO
    {
        l = l.max(i);
    }
    l
}

/// Apply a trade to a plan's leg `li`, keeping the plan's and its instrument's counts of
/// open legs.
fn trade_leg(p: &mut PlanRt, li: usize, insts: &mut [InstRt], signed: i64, px: Px, mult: u32) {
    let l = &mut p.legs[li];
    let was = l.pos.qty != 0;
    l.pos.trade(signed, px, mult);
    match (was, l.pos.qty != 0) {
        (false, true) => {
            insts[l.inst].held += 1;
            p.open_legs += 1;
        }
        (true, false) => {
            insts[l.inst].held -= 1;
            p.open_legs -= 1;
        }
        _ => {}
    }
}

/// Value the plan at fair (realised + open) and track its maximum adverse excursion.
#[inline(always)]
fn revalue(p: &mut PlanRt, sh: &mut Shared) {
    // Never filled: nothing to value (the usual case, checked without a call).
    if p.had_fill {
        revalue_filled(p, sh);
    }
}

fn revalue_filled(p: &mut PlanRt, sh: &mut Shared) {
    // No trade since, and no leg's symbol re-quoted: the same positions at the same quotes.
    let mut vers = 0u64;
    for l in &p.legs {
        vers = vers.wrapping_add(sym_version(sh, l.inst));
    }
    let seen = Some((sh.trades, vers));
    if p.valued == seen {
        return;
    }
    p.valued = seen;
    let mut pnl: i64 = 0;
    for l in &p.legs {
        // Re-price a quote whose symbol moved (as `quote` does), then read it in place.
        if sh.insts[l.inst].stamp != sym_version(sh, l.inst) {
            quote(sh, l.inst);
        }
        let mut v = l.pos.realised;
        if l.pos.qty != 0
            && let Some(q) = &sh.insts[l.inst].q
        {
            v = v.saturating_add(leg_open_pnl(&l.pos, q));
        }
        pnl = pnl.saturating_add(v);
    }
    p.pnl_now = pnl;
    p.mae = p.mae.min(pnl);
}

fn plan_reads(p: &mut PlanRt, sh: &mut Shared) -> PlanReads {
    let mut r = PlanReads::default();
    revalue(p, sh);
    if p.uses_plan {
        if sh.r_usd.raw() > 0 {
            r.pnl_r = Some(p.pnl_now as f64 / sh.r_usd.raw() as f64);
        }
        if p.entry_qty > 0 {
            r.avg_px = Some(p.entry_cost / p.entry_qty as f64);
        }
    }
    if p.uses_leg {
        let inst = p
            .legs
            .first()
            .map(|l| l.inst)
            .or_else(|| p.orders.first().map(|o| o.inst))
            .or_else(|| {
                let spec = p.entries.first()?.inst;
                resolve_inst(p, sh, spec).ok()
            });
        if let Some(q) = inst.and_then(|i| quote(sh, i)) {
            r.leg = Some((q.mid.to_f64(), q.bid.to_f64(), q.ask.to_f64()));
        }
    }
    r
}

/// The series and percentile slots a plan's triggers read that can be read in its phase, now or at its
/// next step (`Slots::skip`): waiting to fire (armed, or dormant until an ARM, which steps
/// it at the same event), its WHEN and INVALIDATEs; active, its INVALIDATEs, CANCEL-IFs and
/// RELOADs not yet fired, its EXITs not yet fired (read while it holds, watched while
/// quiet) and its working orders' line-level cancel-ifs; closed, none. A trigger read first
/// at a step after the one that made it readable (an order's cancel-if, an EXIT after the
/// fire) finds its slots refreshed at that event.
fn live_series(p: &PlanRt) -> Reads {
    let undone = |a: Reads, (t, done): (&CTrigger, bool)| if done { a } else { a | t.reads() };
    let none = Reads::default();
    let waiting = |p: &PlanRt| p.invalidates.iter().map(|x| (&x.0, x.2)).fold(none, undone);
    match p.status {
        Status::Closed => none,
        Status::Dormant | Status::Armed => {
            waiting(p) | p.when.as_ref().map_or(none, CTrigger::reads)
        }
        Status::Active => {
            let fired = p.cancel_ifs.iter().map(|x| (&x.0, x.1));
            let fired = fired.chain(p.reloads.iter().map(|x| (&x.0, x.2)));
            let fired = fired.chain(p.exits.iter().map(|x| (&x.when, x.done)));
            let orders = p.orders.iter().filter_map(|o| o.mods.cancel_if.as_ref());
            orders.fold(waiting(p) | fired.fold(none, undone), |a, t| a | t.reads())
        }
    }
}

/// After an active plan's step: is it *quiet*, holding with nothing left to do but hold (no
/// order working; no INVALIDATE, CANCEL-IF, RELOAD or TP left to fire; every EXIT left reads
/// series only as levels and is settled, not true)? Its step would then only revalue it
/// until an EXIT's input moves, so it is not stepped but revalued (`Engine::step_quiet`)
/// until that changes. Its ttl (while entries are open) wakes it; so does an order placed
/// for it from outside the plan loop, a fill that leaves it flat, and an EXIT's level
/// crossed (or its series becoming known or UNKNOWN: the schedule, `still_quiet`).
fn quiet(p: &PlanRt) -> bool {
    p.status == Status::Active
        && p.orders.is_empty()
        && p.exits
            .iter()
            .all(|x| x.done || (p.park_exit.is_some() && x.when.settled()))
        && p.tps.iter().all(|t| t.done)
        && holding(p)
        && p.invalidates.iter().all(|x| x.2)
        && p.cancel_ifs.iter().all(|x| x.1)
        && p.reloads.iter().all(|x| x.2)
}

/// A quiet plan watching its EXITs, woken at this event (after its latest step, or its
/// latest check here, the schedule would have woken it at any move of their inputs): true
/// when every EXIT left keeps its value because none of its inputs moved at this event (so
/// none fires, and the step would do nothing). The EXITs are taken up as current.
fn still_quiet(p: &mut PlanRt, d: &trigger::Dirt) -> bool {
    let at = d.epoch.saturating_sub(1);
    p.exits.iter_mut().filter(|x| !x.done).all(|x| {
        x.when.resume(at);
        x.when.cached(d).is_some()
    })
}

/// An active plan, flat, whose step at this event would do nothing: its orders rest with
/// nothing to re-price (no line-level CANCEL-IF, no escalation due, and each has seen its
/// instrument's current quote, which is fresh), nothing of it is evaluated (no INVALIDATE,
/// CANCEL-IF or RELOAD left; TP and EXIT are read only while holding), its P&L cannot move
/// (never filled) and its label stands. Checked after the plan's step: such a plan sleeps
/// (`Sched::sleep`) until one of its orders' symbols has an event or its own time comes
/// (`sleep_until`), so it is not visited at the events that cannot move it — another
/// symbol's ticks. At its symbols' events it steps *light* (`step_resting`: its orders only,
/// the rest of its step being nothing while it is idle) and sleeps on; at its time, after a
/// light step that came to something, or after an act from outside the loop (which rebuilds
/// the schedule), its sleep is over: the same Bus, less work.
#[inline(always)]
fn idle_resting(p: &PlanRt, sh: &Shared) -> bool {
    p.status == Status::Active && !p.orders.is_empty() && idle_orders(p, sh)
}

/// What ends an idle resting plan's idleness (`idle_resting`), short of an act from outside
/// the plan loop (which rebuilds the schedule): an event of one of its orders' symbols (bits
/// as in `Shared::sym_events`: a new quote to re-price at, or a fill to check), or the
/// earliest of its orders' next escalation times and its ttl while entries are open.
fn sleep_until(p: &PlanRt, sh: &Shared) -> (u64, Option<Ts>) {
    let mut syms = 0u64;
    let mut until = p.ttl_at.filter(|_| p.entries_open);
    for o in &p.orders {
        syms |= 1u64 << sh.insts[o.inst].sym_i.min(63);
        if let Some((_, due)) = o.esc_next_at() {
            until = Some(until.map_or(due, |t| t.min(due)));
        }
    }
    (syms, until)
}

/// [`idle_resting`] for an active plan with orders.
fn idle_orders(p: &PlanRt, sh: &Shared) -> bool {
    if p.parked || p.had_fill || p.uses_leg {
        return false;
    }
    let now = sh.now;
    if ttl_due(p, now) {
        return false;
    }
    if p.invalidates.iter().any(|x| !x.2)
        || p.cancel_ifs.iter().any(|x| !x.1)
        || p.reloads.iter().any(|x| !x.2)
        || holding(p)
    {
        return false;
    }
    let mut entry = false;
    for o in &p.orders {
        let ir = &sh.insts[o.inst];
        if o.mods.cancel_if.is_some()
            || ir.stamp != sym_version(sh, o.inst)
            || o.seen != ir.stamp
            || o.esc_due(now).is_some()
        {
            return false;
        }
        entry |= o.role == OrderRole::Entry;
    }
    // `relabel` would set Resting while entries are open and an entry order rests.
    !(p.entries_open && entry && p.label != PlanState::Resting)
}

/// The plan holds a position in some leg.
#[inline(always)]
fn holding(p: &PlanRt) -> bool {
    debug_assert_eq!(
        p.open_legs as usize,
        p.legs.iter().filter(|l| l.pos.qty != 0).count()
    );
    p.open_legs != 0
}

/// The plan's ttl has come while its entries are still open (they close at this step).
#[inline(always)]
fn ttl_due(p: &PlanRt, now: Ts) -> bool {
    p.entries_open && p.ttl_at.is_some_and(|t| now >= t)
}

/// After an armed plan's step: does it park (trigger module docs, "Parking")?
fn settle(p: &mut PlanRt) {
    p.parked = p.park.is_some()
        && p.when.as_ref().is_some_and(CTrigger::settled)
        && p.invalidates.iter().all(|x| x.2 || x.0.settled());
}

#[inline(always)]
fn step_plan(p: &mut PlanRt, pi: usize, sh: &mut Shared) {
    if matches!(p.status, Status::Dormant | Status::Closed) {
        return;
    }
    if p.parked {
        // Parked since its latest step, with none of its inputs moved up to the previous
        // event (the schedule would have woken it).
        p.parked = false;
        let at = sh.slots.dirt.epoch.saturating_sub(1);
        if let Some(w) = p.when.as_mut() {
            w.resume(at);
        }
        for x in &mut p.invalidates {
            x.0.resume(at);
        }
        for x in &mut p.exits {
            x.when.resume(at);
        }
    }
    let reads = plan_reads(p, sh);
    // ttl: no new entries after it.
    if ttl_due(p, sh.now) {
        p.entries_open = false;
        let at = p.ttl_at.map(|t| t.to_string()).unwrap_or_default();
        cancel_orders(p, sh, |o| o.role == OrderRole::Entry, "ttl");
        set_state(p, sh, PlanState::Expired, Some(format!("ttl {at}")));
        if p.status == Status::Armed {
            p.status = Status::Closed;
            set_state(p, sh, PlanState::Done, Some("expired before firing".into()));
            return;
        }
    }
    // INVALIDATE: from arming on.
    for k in 0..p.invalidates.len() {
        if p.invalidates[k].2 {
            continue;
        }
        let hit = eval!(&mut p.invalidates[k].0, sh, reads) == Tri::T;
        if hit {
            p.invalidates[k].2 = true;
            let ride = p.invalidates[k].1;
            emit_fired(p, sh, format!("INVALIDATE#{}", k + 1));
            p.entries_open = false;
            cancel_orders(p, sh, |o| o.role == OrderRole::Entry, "invalidate");
            set_state(
                p,
                sh,
                PlanState::Halted,
                Some(
                    if ride {
                        "invalidate -> halt, ride"
                    } else {
                        "invalidate -> halt"
                    }
                    .into(),
                ),
            );
            if !ride {
                cancel_orders(p, sh, |_| true, "invalidate");
                flatten(p, sh, "FLATTEN");
            }
            if p.status == Status::Armed {
                p.status = Status::Closed;
            }
        }
    }
    if p.status == Status::Armed {
        let hit = match p.when.as_mut() {
            Some(w) => eval!(w, sh, reads) == Tri::T,
            None => false,
        };
        if p.entries_open && hit {
            fire(p, pi, sh, None);
            relabel(p, sh);
            revalue(p, sh);
        }
        if p.status == Status::Armed {
            settle(p);
        }
        return;
    }
    // Active.
    process_orders(p, pi, sh, reads);
    step_active_rest(p, pi, sh, reads);
}

/// A sleeper's step at an event of one of its orders' symbols before its time
/// (`Sched::take_light`): its orders re-priced at their quotes and checked for fills, the
/// whole of what [`step_plan`] does for an idle resting plan (`idle_orders`: no trigger left
/// to evaluate, nothing held, its ttl and escalations later). `true` when its orders all
/// still rest, so that it is idle as it was and its sleep stands; else the rest of the step
/// is taken.
fn step_resting(p: &mut PlanRt, pi: usize, sh: &mut Shared) -> bool {
    debug_assert!(p.status == Status::Active && !p.parked && !p.had_fill && !holding(p));
    debug_assert!(!p.uses_leg);
    // Never filled, it has nothing to revalue: its reads are its plan figures, if it reads them.
    let reads = if p.uses_plan {
        plan_reads(p, sh)
    } else {
        PlanReads::default()
    };
    if process_orders(p, pi, sh, reads) {
        return true;
    }
    step_active_rest(p, pi, sh, reads);
    false
}

/// An active plan's step after its orders: cancel-ifs, reloads, its position, its label,
/// its value, and whether it is done.
fn step_active_rest(p: &mut PlanRt, pi: usize, sh: &mut Shared, reads: PlanReads) {
    for k in 0..p.cancel_ifs.len() {
        if p.cancel_ifs[k].1 {
            continue;
        }
        if eval!(&mut p.cancel_ifs[k].0, sh, reads) == Tri::T {
            p.cancel_ifs[k].1 = true;
            emit_fired(p, sh, format!("CANCEL-IF#{}", k + 1));
            p.entries_open = false;
            cancel_orders(p, sh, |o| o.role == OrderRole::Entry, "cancel-if");
        }
    }
    for k in 0..p.reloads.len() {
        if p.reloads[k].2 {
            continue;
        }
        let hit = eval!(&mut p.reloads[k].0, sh, reads) == Tri::T;
        if hit && p.entries_open {
            p.reloads[k].2 = true;
            fire(p, pi, sh, Some(k));
        }
    }
    manage_position(p, pi, sh, reads);
    relabel(p, sh);
    revalue(p, sh);
    check_done(p, sh);
}

fn relabel(p: &mut PlanRt, sh: &mut Shared) {
    if p.entries_open && p.status == Status::Active {
        let holding = holding(p);
        let resting = p.orders.iter().any(|o| o.role == OrderRole::Entry);
        // The label it has already is not set again (checked here, without a call: a
        // working order's plan passes here at every step).
        if holding && p.label != PlanState::Filled {
            set_state(p, sh, PlanState::Filled, None);
        } else if !holding && resting && p.label != PlanState::Resting {
            set_state(p, sh, PlanState::Resting, None);
        }
    }
}

fn check_done(p: &mut PlanRt, sh: &mut Shared) {
    if p.status != Status::Active {
        return;
    }
    let flat = !holding(p);
    let pending_reload = p.entries_open && p.reloads.iter().any(|r| !r.2);
    if flat && p.orders.is_empty() && (!p.entries_open || !pending_reload) {
        p.status = Status::Closed;
        p.entries_open = false;
        set_state(p, sh, PlanState::Done, None);
    }
}

fn emit_fired(p: &PlanRt, sh: &mut Shared, clause: String) {
    sh.bus.emit(Event::PlanFired {
        ts: sh.now,
        plan: p.name.clone(),
        clause,
    });
}

struct Prepared {
    inst: usize,
    side: BusSide,
    qty: u64,
    limit: Px,
    unit: i64,
    /// Shares sized on the assumed stop (none written).
    assumed_stop: bool,
    price: CPrice,
    mods: Mods,
    clause: String,
}

/// Fire WHEN (`reload = None`) or a RELOAD clause: price every ticket, fit risk, place.
fn fire(p: &mut PlanRt, pi: usize, sh: &mut Shared, reload: Option<usize>) {
    let tickets: Vec<TicketT> = match reload {
        None => p.entries.clone(),
        Some(k) => vec![p.reloads[k].1.clone()],
    };
    let mut prep = Vec::with_capacity(tickets.len());
    for t in &tickets {
        let inst = match resolve_inst(p, sh, t.inst) {
            Ok(i) => i,
            Err(e) => return price_error(p, sh, &t.clause, &e, reload),
        };
        let Some(q) = quote(sh, inst) else {
            return price_error(p, sh, &t.clause, "no quote (UNKNOWN)", reload);
        };
        let buy = t.side == BusSide::Buy;
        let basis = basis_of(p, inst);
        let Some(l) = t.price.limit(&q, buy, basis) else {
            return price_error(
                p,
                sh,
                &t.clause,
                "price UNKNOWN (basis with no position?)",
                reload,
            );
        };
        let limit = bound(l, t.side, &q, &t.mods, basis);
        let mult = sh.insts[inst].mult;
        let (unit, assumed_stop) = if buy {
            if q.option {
                (limit.raw().saturating_mul(i64::from(mult)), false)
            } else {
                share_stop(p, sh, limit)
            }
        } else {
            (0, false)
        };
        prep.push(Prepared {
            inst,
            side: t.side,
            qty: t.qty,
            limit,
            unit,
            assumed_stop,
            price: t.price.clone(),
            mods: t.mods.clone(),
            clause: t.clause.clone(),
        });
    }
    // A RELOAD's sell is covered by the entry's buys (rule `naked-sell`): with none of them
    // held or resting (vetoed, cancelled), it would open naked, so it does not fire yet.
    if reload.is_some()
        && prep.iter().all(|x| x.side == BusSide::Sell)
        && !p.legs.iter().any(|l| l.pos.qty > 0)
        && resting_entry_buys(p).next().is_none()
    {
        let clause = prep.first().map(|x| x.clause.clone()).unwrap_or_default();
        return price_error(
            p,
            sh,
            &clause,
            "its sell would be naked: the plan holds no long leg and no entry buy rests",
            reload,
        );
    }
    let clause = match reload {
        None => "WHEN".to_string(),
        Some(k) => format!("RELOAD#{}", k + 1),
    };
    emit_fired(p, sh, clause.clone());
    if reload.is_none() {
        sh.ev.fired[pi] = Some(sh.now);
        p.status = Status::Active;
        set_state(p, sh, PlanState::Fired, None);
    }
    if !fit_risk(p, sh, &mut prep) {
        check_done(p, sh);
        return;
    }
    // A fire with a sell (a spread, a covered structure): its buys cover the sell, which
    // waits for them: the ids the fire's buys get (`place` numbers orders one by one), or
    // for a RELOAD's sell the plan's resting entry buys. A re-price that scales or refuses
    // one of them scales or cancels the sell with it ([`refit`]).
    let covers = prep.iter().any(|x| x.side == BusSide::Sell && x.qty > 0);
    let first = sh.next_order;
    let cover: Vec<u64> = if !covers {
        Vec::new()
    } else if prep.iter().any(|x| x.side == BusSide::Buy && x.qty > 0) {
        prep.iter()
            .filter(|x| x.qty > 0)
            .zip(first..)
            .filter(|(x, _)| x.side == BusSide::Buy)
            .map(|(_, id)| id)
            .collect()
    } else {
        resting_entry_buys(p).collect()
    };
    for x in prep {
        if x.qty == 0 {
            continue;
        }
        let worst = x.unit.saturating_mul(x.qty as i64);
        commit(p, sh, worst);
        let id = sh.next_order;
        // A buy of this fire placed before the sell and filled is no cover left to wait for.
        let waits: Vec<u64> = if x.side == BusSide::Sell {
            cover
                .iter()
                .copied()
                .filter(|&b| b > id || b < first || p.orders.iter().any(|o| o.id == b))
                .collect()
        } else {
            Vec::new()
        };
        place(
            p,
            pi,
            sh,
            x.inst,
            x.side,
            x.qty,
            x.limit,
            OrderRole::Entry,
            &x.clause,
            x.price,
            x.mods,
            (worst, x.assumed_stop),
            waits,
        );
    }
    if covers {
        fill_covered(p, pi, sh, first);
    }
}

/// The ids of the plan's entry buys still resting: what a RELOAD's sell waits for.
fn resting_entry_buys(p: &PlanRt) -> impl Iterator<Item = u64> + '_ {
    p.orders
        .iter()
        .filter(|o| o.role == OrderRole::Entry && o.side == BusSide::Buy)
        .map(|o| o.id)
}

/// The sells of a fire (its orders from id `first` on) that waited at their placement for
/// buys placed after them, which have all filled at theirs: they go to market now
/// ([`price_covered`]).
fn fill_covered(p: &mut PlanRt, pi: usize, sh: &mut Shared, first: u64) {
    let mut k = 0;
    while k < p.orders.len() {
        let o = &p.orders[k];
        if o.id >= first && o.cover.is_empty() && o.seen == WAITED && price_covered(p, pi, sh, k) {
            continue;
        }
        k += 1;
    }
}

/// Order `k`, a sell whose cover has just filled, goes to market: priced again at the
/// current quote (its price was read when it was placed, maybe long before; `order-repriced`
/// with reason `covered` when that moves its limit) and filled as a placement would be.
/// `true` when it filled (and is gone from the orders).
fn price_covered(p: &mut PlanRt, pi: usize, sh: &mut Shared, k: usize) -> bool {
    let inst = p.orders[k].inst;
    let Some(q) = quote(sh, inst) else {
        return false;
    };
    let basis = basis_of(p, inst);
    let stamp = sh.insts[inst].stamp;
    let o = &mut p.orders[k];
    o.seen = stamp;
    if let Some(l) = o.price.limit(&q, o.side == BusSide::Buy, basis) {
        let l = bound(l, o.side, &q, &o.mods, basis);
        if l != o.limit {
            o.limit = l;
            sh.bus.emit_repriced(sh.now, o.id, l, "covered".into());
        }
    }
    match sh.fill.on_place(o.side, o.limit, q.bid, q.ask) {
        Some(px) => {
            let o = p.orders.remove(k);
            unrest(sh, &o);
            do_fill(p, pi, sh, o, px);
            true
        }
        None => false,
    }
}

/// Count an order now resting on its symbol (`Shared::resting_on`).
fn rest(sh: &mut Shared, o: &Order) {
    let i = sh.insts[o.inst].sym_i;
    if let Some(n) = sh.resting_on.get_mut(i) {
        *n += 1;
        sh.resting_syms |= 1u64 << i.min(63);
    }
}

/// An order taken off the book (filled, cancelled): no longer counted on its symbol.
fn unrest(sh: &mut Shared, o: &Order) {
    let i = sh.insts[o.inst].sym_i;
    if let Some(n) = sh.resting_on.get_mut(i) {
        *n = n.saturating_sub(1);
        if *n == 0 && i < 63 {
            sh.resting_syms &= !(1u64 << i);
        }
    }
}

/// An order's `seen` once the cover it waited for has filled: no quote's stamp, so it is
/// looked at again at its next step.
const WAITED: u64 = u64::MAX;

/// Cancel (`uncovered`) every sell whose cover lost a buy that did not fill: a buy the sell
/// waited for is no longer resting (a fill takes its id off the sell's cover first), so it
/// was cancelled (ttl, a CANCEL-IF, a stand-down, ...) and the sell would be naked.
fn drop_uncovered(p: &mut PlanRt, sh: &mut Shared) {
    if p.orders.iter().all(|o| o.cover.is_empty()) {
        return;
    }
    let resting: Vec<u64> = p.orders.iter().map(|o| o.id).collect();
    cancel_where(
        p,
        sh,
        |o| o.cover.iter().any(|b| !resting.contains(b)),
        "uncovered",
    );
}

fn price_error(p: &mut PlanRt, sh: &mut Shared, clause: &str, why: &str, reload: Option<usize>) {
    if let Some(k) = reload {
        // Let the reload try again on a later evaluation.
        p.reloads[k].2 = false;
    }
    if !p.price_err {
        p.price_err = true;
        sh.bus.emit(Event::Error {
            ts: sh.now,
            plan: Some(p.name.clone()),
            message: format!("{clause}: cannot price the ticket: {why}; not fired"),
        });
    }
}

/// Notional stop distance per share for a buy at `limit` (dollars, money units), and
/// whether it is the assumed one ([`DEFAULT_SHARE_STOP`]: no stop level written below it).
fn share_stop(p: &PlanRt, sh: &Shared, limit: Px) -> (i64, bool) {
    let lim = limit.to_f64();
    let exec_spot = sh.ms.spot(p.exec.as_str()).map(Px::to_f64);
    let mut best: Option<f64> = None;
    for (sym, level) in &p.stop_levels {
        let lvl = if *sym == p.exec {
            Some(*level)
        } else {
            match (exec_spot, sh.ms.spot(sym.as_str()).map(Px::to_f64)) {
                (Some(e), Some(s)) if s > 0.0 => Some(level * e / s),
                _ => None,
            }
        };
        if let Some(l) = lvl
            && l < lim
        {
            let d = lim - l;
            best = Some(best.map_or(d, |b: f64| b.min(d)));
        }
    }
    let d = best.unwrap_or(lim * DEFAULT_SHARE_STOP);
    (money_of(d * 1e4).max(1), best.is_none())
}

/// The room left for new worst cases: the least of the plan's budget and its BOOK's, less
/// what each has committed, and which of them it is (`plan`, `book <name>`).
fn room_left(p: &PlanRt, sh: &Shared) -> (i128, String) {
    let room = i128::from(p.budget) - i128::from(p.committed);
    if let Some(b) = p.book {
        let br = i128::from(sh.books[b].budget) - i128::from(sh.books[b].committed);
        if br < room {
            return (br, format!("book {}", sh.books[b].name));
        }
    }
    (room, "plan".to_string())
}

/// Dollars of a money-unit amount, for the risk events' arithmetic.
fn usd(x: i128) -> Px {
    Px(x.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
}

/// A veto's arithmetic: `want` of worst case against `room` left, and not one unit fits.
fn no_unit_fits(want: i128, room: i128) -> String {
    format!(
        "worst case ${} exceeds the ${} left in the budget, and one unit does not fit",
        usd(want),
        usd(room.max(0))
    )
}

/// Commit `delta` more (or less) worst case to the plan and its BOOK.
fn commit(p: &mut PlanRt, sh: &mut Shared, delta: i64) {
    p.committed = p.committed.saturating_add(delta);
    if let Some(b) = p.book {
        sh.books[b].committed = sh.books[b].committed.saturating_add(delta);
    }
}

/// Check resting entry buy `k` again at the higher limit a re-price (`esc`, `peg`) gives
/// it: nothing opens risk past a budget, and an escalation raises the premium (or the stop
/// distance) at risk after the fire was checked. The order's worst case at `limit` must fit
/// the room its plan and BOOK have left, its own committed worst case counted back in:
/// - it fits: the committed worst case grows to it (a lower re-price never shrinks it);
/// - it does not, but some units do: the order's quantity is scaled to what fits (`clamp`
///   with the order's id and the arithmetic), and it is re-priced;
/// - not one unit fits: the re-price is refused (`veto` with the order's id) and the order
///   cancelled (`veto`); `false`, the order is gone.
///
/// Before 2026-12-05 only the fire was checked: `buy 3 ATM C @ 0.30 esc ask 10s` on a
/// $100 budget passed at $90 and filled 3 @ 0.91, $273 of premium, losing $234.
///
/// The buys of a fire that also sold (a spread: `DO buy 3 ATM C … ALSO sell 3 +2 C`) are
/// checked alike: the sell they cover has not filled, since it waits for them, so a scaled
/// buy scales the sell with it ([`scale_covered`]) and a refused one cancels it
/// ([`drop_uncovered`]). Until 2026-12-05 the sell could fill first, so these buys were not
/// checked: a 0.05R spread escalated to a $156 debit.
fn refit(p: &mut PlanRt, sh: &mut Shared, k: usize, limit: Px, option: bool, why: &str) -> bool {
    let o = &p.orders[k];
    let unit = if option {
        limit.raw().saturating_mul(i64::from(sh.insts[o.inst].mult))
    } else {
        share_stop(p, sh, limit).0
    };
    let qty = o.qty;
    let want = unit.saturating_mul(i64::try_from(qty).unwrap_or(i64::MAX));
    if want <= o.worst {
        return true;
    }
    let (left, which) = room_left(p, sh);
    let room = left + i128::from(o.worst);
    let old = o.worst;
    if i128::from(want) <= room {
        commit(p, sh, want - old);
        p.orders[k].worst = want;
        return true;
    }
    let (id, clause) = (p.orders[k].id, p.orders[k].clause.clone());
    let fits = if room <= 0 || unit <= 0 {
        0
    } else {
        u64::try_from(room / i128::from(unit)).unwrap_or(0).min(qty)
    };
    let at = format!("re-price {why} to {limit}");
    if fits == 0 {
        sh.bus.emit(Event::Veto {
            ts: sh.now,
            plan: p.name.clone(),
            clause,
            budget: which,
            reason: format!(
                "{at}: {}: the order is cancelled",
                no_unit_fits(i128::from(want), room)
            ),
            order: Some(id),
        });
        let o = p.orders.remove(k);
        unrest(sh, &o);
        release(p, sh, &o);
        sh.bus.emit(Event::OrderCancelled {
            ts: sh.now,
            order: id,
            reason: "veto".into(),
        });
        return false;
    }
    let now_worst = unit.saturating_mul(i64::try_from(fits).unwrap_or(i64::MAX));
    sh.bus.emit(Event::Clamp {
        ts: sh.now,
        plan: p.name.clone(),
        clause,
        from_qty: qty,
        to_qty: fits,
        budget: which.clone(),
        reason: format!(
            "{at}: worst case ${} exceeds the ${} left; quantity scaled to {fits}",
            usd(i128::from(want)),
            usd(room)
        ),
        order: Some(id),
    });
    commit(p, sh, now_worst - old);
    let o = &mut p.orders[k];
    o.qty = fits;
    o.worst = now_worst;
    scale_covered(p, sh, id, (qty, fits), &which);
    true
}

/// The sells waiting for buy `id` (a spread's short leg) when a re-price scales the buy
/// from `from` to `to` units: each is scaled alike (`clamp` with the sell's id), so what is
/// sold stays covered; one scaled to nothing is cancelled (`uncovered`).
fn scale_covered(p: &mut PlanRt, sh: &mut Shared, id: u64, (from, to): (u64, u64), budget: &str) {
    for o in p.orders.iter_mut().filter(|o| o.cover.contains(&id)) {
        let n = u64::try_from(u128::from(o.qty) * u128::from(to) / u128::from(from.max(1)))
            .unwrap_or(o.qty);
        if n == o.qty {
            continue;
        }
        sh.bus.emit(Event::Clamp {
            ts: sh.now,
            plan: p.name.clone(),
            clause: o.clause.clone(),
            from_qty: o.qty,
            to_qty: n,
            budget: budget.to_string(),
            reason: format!(
                "its cover, order #{id}, was scaled from {from} to {to}: the sell is scaled alike"
            ),
            order: Some(o.id),
        });
        o.qty = n;
    }
    cancel_where(p, sh, |o| o.qty == 0, "uncovered");
}

/// An absolute strike off the exec symbol's strike grid can never be quoted: refused at
/// arming (the plan de-armed with this reason), naming the strikes on each side. Before
/// 2026-12-05 `buy 1 513.5 C` on a 1.00 grid armed, said `no quote (UNKNOWN)` once at its
/// fire and waited all day.
fn off_grid(clause: &str, exec: &Sym, k: Px, step: Option<Px>) -> Result<(), String> {
    let Some(step) = step.filter(|s| s.raw() > 0) else {
        return Ok(());
    };
    if k.raw() % step.raw() == 0 {
        return Ok(());
    }
    let below = Px(k.raw().div_euclid(step.raw()) * step.raw());
    let above = Px(below.raw() + step.raw());
    Err(format!(
        "{clause}: strike {k} is not on {exec}'s strike grid (every {step}): no quote can price it; the nearest strikes are {below} and {above}"
    ))
}

/// Fit a fire's tickets into the plan and BOOK budgets: clamp every quantity by the same
/// factor (logged), or veto (logged). Returns false on a veto.
fn fit_risk(p: &PlanRt, sh: &mut Shared, prep: &mut [Prepared]) -> bool {
    let want: i128 = prep
        .iter()
        .map(|x| i128::from(x.unit) * i128::from(x.qty))
        .sum();
    if want == 0 {
        return true;
    }
    let (room, which) = room_left(p, sh);
    if want <= room {
        return true;
    }
    let clause = prep.first().map(|x| x.clause.clone()).unwrap_or_default();
    let new: Vec<u64> = prep
        .iter()
        .map(|x| {
            if room <= 0 {
                0
            } else {
                (i128::from(x.qty) * room / want) as u64
            }
        })
        .collect();
    let opened: i128 = prep
        .iter()
        .zip(&new)
        .map(|(x, n)| i128::from(x.unit) * i128::from(*n))
        .sum();
    if opened == 0 {
        sh.bus.emit(Event::Veto {
            ts: sh.now,
            plan: p.name.clone(),
            clause,
            budget: which,
            reason: no_unit_fits(want, room),
            order: None,
        });
        return false;
    }
    for (x, n) in prep.iter_mut().zip(new) {
        if n != x.qty {
            sh.bus.emit(Event::Clamp {
                ts: sh.now,
                plan: p.name.clone(),
                clause: x.clause.clone(),
                from_qty: x.qty,
                to_qty: n,
                budget: which.clone(),
                reason: format!(
                    "worst case ${} exceeds the ${} left; quantity scaled by {}/{}",
                    usd(want),
                    usd(room),
                    usd(room),
                    usd(want)
                ),
                order: None,
            });
            x.qty = n;
        }
    }
    true
}

#[allow(clippy::too_many_arguments)]
fn place(
    p: &mut PlanRt,
    pi: usize,
    sh: &mut Shared,
    inst: usize,
    side: BusSide,
    qty: u64,
    limit: Px,
    role: OrderRole,
    clause: &str,
    price: CPrice,
    mods: Mods,
    (worst, assumed_stop): (i64, bool),
    cover: Vec<u64>,
) {
    let id = sh.next_order;
    sh.next_order += 1;
    let ir = &sh.insts[inst];
    sh.bus.emit(Event::OrderPlaced {
        ts: sh.now,
        order: id,
        plan: p.name.clone(),
        clause: clause.to_string(),
        role,
        leg: ir.key.clone(),
        side,
        qty,
        limit,
        mult: ir.mult,
    });
    let q = quote(sh, inst);
    let o = Order {
        id,
        inst,
        side,
        qty,
        limit,
        role,
        price,
        mods,
        esc_next: 0,
        esc_since: sh.now,
        seen: sh.insts[inst].stamp,
        worst,
        clause: clause.to_string(),
        cover,
        assumed_stop,
    };
    if !o.cover.is_empty() {
        rest(sh, &o);
        p.orders.push(o);
        return;
    }
    match q.and_then(|q| sh.fill.on_place(side, limit, q.bid, q.ask)) {
        Some(px) => do_fill(p, pi, sh, o, px),
        None => {
            rest(sh, &o);
            p.orders.push(o);
        }
    }
}

fn do_fill(p: &mut PlanRt, pi: usize, sh: &mut Shared, o: Order, px: Px) {
    let ir = &sh.insts[o.inst];
    let (key, mult) = (ir.key.clone(), ir.mult);
    let quoted = ir.q.is_some_and(|q| q.quoted);
    let li = match p.legs.iter().position(|l| l.inst == o.inst) {
        Some(i) => i,
        None => {
            p.legs.push(Leg {
                inst: o.inst,
                pos: Position::default(),
                stop_qty: 0,
                stop_num: 0,
            });
            p.legs.len() - 1
        }
    };
    let mut qty = o.qty;
    if o.role != OrderRole::Entry {
        // A closing order never flips the position.
        let held = p.legs[li].pos.qty;
        let closable = if (held > 0) == (o.side == BusSide::Sell) {
            held.unsigned_abs()
        } else {
            0
        };
        qty = qty.min(closable);
        if qty == 0 {
            sh.bus.emit(Event::OrderCancelled {
                ts: sh.now,
                order: o.id,
                reason: "nothing left to close".into(),
            });
            return;
        }
    }
    sh.bus.emit(Event::Fill {
        ts: sh.now,
        order: o.id,
        plan: p.name.clone(),
        leg: key,
        side: o.side,
        qty,
        px,
        mult,
        quoted,
    });
    if o.side == BusSide::Buy {
        for w in &mut p.orders {
            if let Some(at) = w.cover.iter().position(|&b| b == o.id) {
                w.cover.swap_remove(at);
                if w.cover.is_empty() {
                    w.seen = WAITED;
                }
            }
        }
    }
    let signed = i64::try_from(qty).unwrap_or(i64::MAX) * o.side.sign();
    trade_leg(p, li, &mut sh.insts, signed, px, mult);
    sh.trades += 1;
    let leg = &mut p.legs[li];
    if leg.pos.qty == 0 {
        (leg.stop_qty, leg.stop_num) = (0, 0);
    }
    if o.role == OrderRole::Entry && o.assumed_stop && o.side == BusSide::Buy {
        // Entries fill whole: the order's worst case is its fill's.
        leg.stop_qty += qty;
        leg.stop_num +=
            i128::from(px.raw()) * i128::from(qty) * i128::from(mult) - i128::from(o.worst);
    }
    if o.role == OrderRole::Entry {
        if o.side == BusSide::Buy {
            p.entry_qty += qty;
            p.entry_cost += px.to_f64() * qty as f64;
        }
        if !p.had_fill {
            sh.ev.filled[pi] = Some(sh.now);
            for &j in &p.arms {
                sh.to_arm.push((pi, j));
            }
        }
    }
    p.had_fill = true;
}

fn cancel_orders(p: &mut PlanRt, sh: &mut Shared, which: impl Fn(&Order) -> bool, why: &str) {
    cancel_where(p, sh, which, why);
    drop_uncovered(p, sh);
}

/// Cancel the orders `which` picks, for `why`.
fn cancel_where(p: &mut PlanRt, sh: &mut Shared, which: impl Fn(&Order) -> bool, why: &str) {
    let mut k = 0;
    while k < p.orders.len() {
        if which(&p.orders[k]) {
            let o = p.orders.remove(k);
            unrest(sh, &o);
            release(p, sh, &o);
            sh.bus.emit(Event::OrderCancelled {
                ts: sh.now,
                order: o.id,
                reason: why.to_string(),
            });
        } else {
            k += 1;
        }
    }
}

fn release(p: &mut PlanRt, sh: &mut Shared, o: &Order) {
    if o.role == OrderRole::Entry && o.worst > 0 {
        p.committed -= o.worst;
        if let Some(b) = p.book {
            sh.books[b].committed -= o.worst;
        }
    }
}

/// Step the plan's orders at this event: line-level cancel-if, escalation, peg, fills.
/// `true` when all of them still rest, each having seen its quote (none cancelled or filled,
/// no quote UNKNOWN).
fn process_orders(p: &mut PlanRt, pi: usize, sh: &mut Shared, reads: PlanReads) -> bool {
    let mut stands = true;
    let mut k = 0;
    while k < p.orders.len() {
        // Line-level cancel-if.
        let cancel = match p.orders[k].mods.cancel_if.as_mut() {
            Some(t) => eval!(t, sh, reads) == Tri::T,
            None => false,
        };
        if cancel {
            stands = false;
            let o = p.orders.remove(k);
            unrest(sh, &o);
            release(p, sh, &o);
            sh.bus.emit(Event::OrderCancelled {
                ts: sh.now,
                order: o.id,
                reason: "cancel-if".into(),
            });
            continue;
        }
        if p.orders[k].seen == WAITED && p.orders[k].cover.is_empty() {
            stands = false;
            if !price_covered(p, pi, sh, k) {
                k += 1;
            }
            continue;
        }
        let inst = p.orders[k].inst;
        let Some(q) = quote(sh, inst) else {
            stands = false;
            k += 1;
            continue;
        };
        let stamp = sh.insts[inst].stamp;
        let basis = basis_of(p, inst);
        let o = &mut p.orders[k];
        // A book update first meets the order where it rests: a buy resting at L whose ask
        // fell strictly below L fills at L (RUNTIME.md §4) before a peg or an escalation
        // moves it. Re-priced first, a peg to `fair` or `join` moved away from every ask
        // that crossed it and never filled (before 2026-12-06: the README's chase plan).
        // Asked once per new quote: where the order is not re-priced, this is its fill.
        let crossed = if o.seen != stamp {
            sh.fill.on_book(o.side, o.limit, q.bid, q.ask)
        } else {
            None
        };
        if let Some(px) = crossed
            && o.cover.is_empty()
        {
            o.seen = stamp;
            stands = false;
            let o = p.orders.remove(k);
            unrest(sh, &o);
            do_fill(p, pi, sh, o, px);
            continue;
        }
        let buy = o.side == BusSide::Buy;
        let mut new_limit: Option<(Px, std::borrow::Cow<'static, str>)> = None;
        if let Some(ep) = o.esc_due(sh.now) {
            let n = o.esc_next + 1;
            let ep = ep.clone();
            o.esc_next = n;
            o.esc_since = sh.now;
            if let Some(l) = ep.limit(&q, buy, basis) {
                new_limit = Some((
                    bound(l, o.side, &q, &o.mods, basis),
                    format!("esc#{n}").into(),
                ));
            }
            o.price = ep;
        }
        if new_limit.is_none()
            && o.mods.peg
            && o.seen != stamp
            && let Some(l) = peg_limit(&mut sh.insts[inst], o, &q, basis)
            && l != o.limit
        {
            new_limit = Some((l, "peg".into()));
        }
        let fill_px = if let Some((l, why)) = new_limit {
            // A higher limit on an entry buy is a higher worst case: checked again.
            if buy
                && o.role == OrderRole::Entry
                && o.worst > 0
                && !refit(p, sh, k, l, q.option, &why)
            {
                stands = false;
                continue;
            }
            let o = &mut p.orders[k];
            o.limit = l;
            o.seen = stamp;
            let id = o.id;
            sh.bus.emit_repriced(sh.now, id, l, why);
            sh.fill.on_place(o.side, l, q.bid, q.ask)
        } else if o.seen != stamp {
            o.seen = stamp;
            crossed
        } else {
            None
        };
        if let Some(px) = fill_px
            && p.orders[k].cover.is_empty()
        {
            stands = false;
            let o = p.orders.remove(k);
            unrest(sh, &o);
            do_fill(p, pi, sh, o, px);
            continue;
        }
        k += 1;
    }
    if !stands {
        drop_uncovered(p, sh);
    }
    stands
}

/// Place closing orders for every open leg (a fraction `frac` of each, default all), at
/// `price` (or marketable: a sell at the bid, a buy at the ask), never more than is held
/// net of closing orders already resting.
#[allow(clippy::too_many_arguments)]
fn close_legs(
    p: &mut PlanRt,
    pi: usize,
    sh: &mut Shared,
    frac: Option<f64>,
    price: Option<&CPrice>,
    mods: &Mods,
    role: OrderRole,
    clause: &str,
) {
    for li in 0..p.legs.len() {
        let (inst, held) = (p.legs[li].inst, p.legs[li].pos.qty);
        if held == 0 {
            continue;
        }
        let side = if held > 0 {
            BusSide::Sell
        } else {
            BusSide::Buy
        };
        let resting: u64 = p
            .orders
            .iter()
            .filter(|o| o.inst == inst && o.side == side && o.role != OrderRole::Entry)
            .map(|o| o.qty)
            .sum();
        let avail = held.unsigned_abs().saturating_sub(resting);
        let want = match frac {
            Some(f) => ((held.unsigned_abs() as f64 * f).floor() as u64).max(1),
            None => avail,
        }
        .min(avail);
        if want == 0 {
            continue;
        }
        let Some(q) = quote(sh, inst) else {
            continue;
        };
        let buy = side == BusSide::Buy;
        let basis = basis_of(p, inst);
        let (limit, pexpr) = match price {
            Some(pr) => match pr.limit(&q, buy, basis) {
                Some(l) => (l, pr.clone()),
                None => continue,
            },
            None => {
                let l = if buy { q.ask } else { q.bid.max(Px::CENT) };
                (
                    l,
                    CPrice::Anchor(
                        if buy {
                            ast::AnchorKind::Ask
                        } else {
                            ast::AnchorKind::Bid
                        },
                        None,
                    ),
                )
            }
        };
        let limit = bound(limit, side, &q, mods, basis);
        place(
            p,
            pi,
            sh,
            inst,
            side,
            want,
            limit,
            role,
            clause,
            pexpr,
            mods.clone(),
            (0, false),
            Vec::new(),
        );
    }
}

fn flatten(p: &mut PlanRt, sh: &mut Shared, clause: &str) {
    // pi is only used for entry fills; closing fills never touch it.
    close_legs(
        p,
        usize::MAX,
        sh,
        None,
        None,
        &Mods::default(),
        OrderRole::Flatten,
        clause,
    );
}

fn manage_position(p: &mut PlanRt, pi: usize, sh: &mut Shared, reads: PlanReads) {
    if !holding(p) {
        return;
    }
    // The assumed stop of shares bought with none written: the budget let them open on it,
    // so a bid at or under it closes the plan, at the bid.
    for li in 0..p.legs.len() {
        let Some(stop) = p.legs[li].assumed_stop() else {
            continue;
        };
        let Some(q) = quote(sh, p.legs[li].inst) else {
            continue;
        };
        if q.bid.raw() as f64 > stop {
            continue;
        }
        emit_fired(p, sh, "STOP".to_string());
        p.entries_open = false;
        cancel_orders(p, sh, |_| true, "stop");
        close_legs(
            p,
            pi,
            sh,
            None,
            None,
            &Mods::default(),
            OrderRole::Exit,
            "STOP",
        );
        for l in &mut p.legs {
            (l.stop_qty, l.stop_num) = (0, 0);
        }
        if !holding(p) {
            return;
        }
        break;
    }
    // TP: value at fair against cost.
    if p.tps.iter().any(|t| !t.done) {
        let mut value = 0.0;
        let mut cost = 0.0;
        let mut known = true;
        for li in 0..p.legs.len() {
            let (inst, qty, c, mult) = (
                p.legs[li].inst,
                p.legs[li].pos.qty,
                p.legs[li].pos.cost,
                p.legs[li].pos.mult,
            );
            if qty == 0 {
                continue;
            }
            match quote(sh, inst) {
                Some(q) => value += q.fair * qty as f64 * f64::from(mult),
                None => known = false,
            }
            cost += i128_f64(c) / 1e4;
        }
        if known && cost > 0.0 {
            for k in 0..p.tps.len() {
                if p.tps[k].done || value < p.tps[k].mult * cost {
                    continue;
                }
                p.tps[k].done = true;
                let label = format!("TP#{}", k + 1);
                emit_fired(p, sh, label.clone());
                let (frac, pr, mods) =
                    (p.tps[k].frac, p.tps[k].price.clone(), p.tps[k].mods.clone());
                close_legs(p, pi, sh, frac, Some(&pr), &mods, OrderRole::Tp, &label);
            }
        }
    }
    for k in 0..p.exits.len() {
        if p.exits[k].done {
            continue;
        }
        if eval!(&mut p.exits[k].when, sh, reads) != Tri::T {
            continue;
        }
        p.exits[k].done = true;
        let label = format!("EXIT#{}", k + 1);
        emit_fired(p, sh, label.clone());
        p.entries_open = false;
        cancel_orders(p, sh, |_| true, "exit");
        let (pr, mods) = (p.exits[k].price.clone(), p.exits[k].mods.clone());
        close_legs(p, pi, sh, None, pr.as_ref(), &mods, OrderRole::Exit, &label);
        if !holding(p) {
            break;
        }
    }
}

/// `n` synthetic PLANs (five rotating templates with varied parameters: crosses, velocity,
/// held, percentiles, clock triggers; options and shares; esc, peg, cancel-if, TP, EXIT,
/// RELOAD, INVALIDATE) for benchmarks and load tests. The text is a valid document.
///
/// The pegged puts carry 2R: on the shock tape their peg climbs to $16.80 ($1,680 at risk),
/// which a re-price checked against the budget ([`refit`], 2026-12-05) no longer lets a 0.2R
/// plan reach; at 2R they rest and re-price all day, the same Bus as the 0.2R set gave
/// before that check, so the busy set's work (and its figures) stayed what they were.
pub fn synthetic_plans(n: usize) -> String {
    let mut s = String::from("USING signal SPX exec SPY 0dte\n");
    for i in 0..n {
        let k = i / 5 + 1;
        s.push('\n');
        s.push_str(&match i % 5 {
            0 => format!(
                "PLAN p{i} budget 0.2R ttl 15:30\n  WHEN spot crosses above vwap AND NOT phase open\n  DO buy 1 +{} C @ fair+1c esc ask 30s\n  TP 1.5x frac 0.5 @ fair\n  EXIT spot crosses below vwap\n",
                k % 3
            ),
            1 => format!(
                "PLAN p{i} budget 2R ttl 15:30\n  WHEN velocity(1m) < -0.0{}\n  DO buy 1 ATM P @ fair peg\n  TP 1.3x @ fair+2%\n  EXIT T-15\n",
                k % 9 + 1
            ),
            2 => format!(
                "PLAN p{i} budget 0.2R ttl 15:30\n  WHEN spot >= hod held {}s\n  DO buy 10 shares @ bid\n  RELOAD WHEN spot >= hod held 120s buy 10 shares @ bid\n  TP 1.002x @ ask\n  EXIT spot < vwap\n",
                10 + k
            ),
            3 => format!(
                "PLAN p{i} budget 0.2R ttl 15:30\n  WHEN spot > p{} AND NOT phase open\n  DO buy 1 +2 C @ join cancel-if velocity(1m) < 0\n  TP 2x @ fair\n",
                90 + k % 9
            ),
            _ => format!(
                "PLAN p{i} budget 0.2R ttl 15:45\n  WHEN time >= {}:{:02}\n  DO buy 1 -1 P @ fair-2c esc fair 60s\n  INVALIDATE velocity(5m) > 0.3 -> halt, ride\n  EXIT spot > vwap\n",
                10 + k % 5,
                (7 * k) % 60
            ),
        });
    }
    s
}
