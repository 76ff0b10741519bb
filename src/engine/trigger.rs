//! Triggers compiled from the typed model (LANGUAGE.md §3.3) and their three-valued
//! evaluation.
//!
//! A trigger is compiled once, when its plan arms, into a flat list of predicates plus a
//! small tree of AND / OR / NOT over predicate indices. Evaluation first evaluates *every*
//! predicate (so the state of `crosses` and `held` advances on every evaluation, whatever
//! short-circuiting would have skipped), then folds the tree with Kleene logic:
//! `F AND U = F`, `T OR U = T`, `NOT U = U`. A clause acts only on `T`: **UNKNOWN is not
//! false, and nothing fires on it.** Evaluation never allocates.
//!
//! **Dirty tracking.** Most events move few of a trigger's inputs, and a predicate whose
//! inputs did not move gives the same answer again — except a `crosses`, which was true on
//! the evaluation where its sign changed and is false on the next one with the same sign.
//! So a trigger that was evaluated on the previous event and none of whose inputs moved is
//! not re-evaluated: its previous value stands (with a `crosses` that had just fired set back
//! to false). Its inputs are, per predicate:
//!
//! - a market series compared with a **constant** (`velocity(1m) < -0.02`, `spot crosses
//!   above 5000`): a *level*. Levels are kept per series slot **sorted by threshold**
//!   ([`Slots`]); when the series moves from `a` to `b`, only the levels in `[a, b]` can
//!   change sign, and only their triggers are marked to re-evaluate (a walk from where the
//!   value was, kept per slot, over the levels crossed): the cost grows with the plans that
//!   can fire, not the plans armed. A series becoming known or UNKNOWN re-evaluates all of
//!   its levels' triggers.
//! - the clock compared with a constant (`time >= 10:07`, `T-15`, `phase open`): a level
//!   on the clock, the same way;
//! - a market series compared with another market series or with its own percentile
//!   (`spot >= hod`, `spot > p95`, `spot crosses above vwap`): a *pair*. The sign of their
//!   difference is taken once per event for each distinct pair, when either side moved
//!   ([`Slots`]); a comparison or a `crosses` between the two is a function of that sign and
//!   of its own state, so it is re-evaluated only when the sign changes or becomes known or
//!   UNKNOWN — when spot makes or leaves the high, not at every tick of either;
//! - `held`: while its comparison holds (its start is set) the value moves with the clock,
//!   so the trigger is re-evaluated whenever the clock moves and does not settle; while it
//!   does not hold it is false until the comparison changes, which its inputs above tell;
//! - the clock against a series: re-evaluated whenever the clock moves;
//! - the plan's own reads (`pnl`, `fills.avg_px`, leg quotes) and plan / headline events:
//!   always re-evaluated.
//!
//! **Parking.** A plan waiting to fire reads only its WHEN and INVALIDATEs, and most of the
//! time none of their inputs moved; visiting each trigger only to read its cache back would
//! still cost every armed plan something on every event. So such a plan's triggers form a
//! group ([`Park`]: the union of their inputs) and, once every trigger in it was current and
//! [`settled`](CTrigger::settled) at the plan's step, the plan is *parked*: not stepped at
//! all until one of the group's inputs moves (or its ttl comes). Which plans step is the
//! engine's schedule (`engine::sched`): subscriptions per input, so that an event costs the
//! plans that can change and nothing for the others. The triggers are not touched while
//! parked; the first step after it [`resume`](CTrigger::resume)s each of them at the
//! previous event, so that its cache reads exactly as if it had been read on every event.
//! A plan holding a position with only EXITs left to fire parks the same way when its EXITs
//! read series only as levels ([`Park::of_levels`]; `engine::quiet`).
//!
//! **Slots no trigger can read.** A plan reads different triggers in each phase (waiting:
//! its WHEN and INVALIDATEs; active: what is left of its INVALIDATEs, CANCEL-IFs, RELOADs,
//! EXITs and its orders' cancel-ifs; closed: none), so most of the day a series may be read
//! by no trigger that can be evaluated (a `velocity(1m)` WHEN that fired at 09:31). The
//! engine tells [`Slots::skip`] which; a skipped slot is not refreshed, and is read again,
//! from its old value, at the first refresh after a trigger that reads it can be read.

use crate::lang::ast::{self, CmpOp, CrossDir, Phase, Predicate, SeriesKind, Trigger};
use crate::market::{MarketState, PctBound, RankHint, Series as MSeries, Sym, Ts};

/// A three-valued truth, ordered `F < U < T`: AND is the least, OR the greatest (Kleene).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tri {
    /// Known false.
    F,
    /// Unknown (a series not yet defined).
    U,
    /// Known true.
    T,
}

impl Tri {
    /// F if either is F, else U if either is U, else T: the lesser.
    fn and(self, o: Tri) -> Tri {
        self.min(o)
    }
    /// T if either is T, else U if either is U, else F: the greater.
    fn or(self, o: Tri) -> Tri {
        self.max(o)
    }
    fn not(self) -> Tri {
        match self {
            Tri::T => Tri::F,
            Tri::F => Tri::T,
            Tri::U => Tri::U,
        }
    }
    fn of(b: bool) -> Tri {
        if b { Tri::T } else { Tri::F }
    }
}

/// The plan's option-leg quote series (marks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegSeries {
    /// `mark` (= mid of the synthetic book).
    Mark,
    /// `mid`.
    Mid,
    /// `bid`.
    Bid,
    /// `ask`.
    Ask,
}

/// A compiled series reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CSeries {
    /// A market series of a symbol, read through a per-event cache slot.
    Mkt(Sym, MSeries, u16),
    /// The clock, seconds since midnight.
    Time,
    /// The plan's P&L in R, valued at fair.
    Pnl,
    /// The plan's average entry fill price.
    AvgPx,
    /// The plan's leg quotes.
    Leg(LegSeries),
}

/// A compiled comparison value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CValue {
    /// A constant (numbers, clocks as seconds since midnight).
    Num(f64),
    /// Another series.
    Series(CSeries),
    /// The compared series' own intraday percentile `p`, read through a per-event cache slot
    /// (the second), and the pair slot of the series against it (the third; `u16::MAX`
    /// for none).
    Pct(f64, u16, u16),
}

/// A compiled predicate with its evaluation state.
#[derive(Debug, Clone, PartialEq)]
pub enum CPred {
    /// `s crosses above|below v`: true on the evaluation where `s - v` goes from `<= 0` to
    /// `> 0` (above) or from `>= 0` to `< 0` (below), both evaluations known.
    Cross {
        /// Series.
        s: CSeries,
        /// Above (true) or below.
        above: bool,
        /// Level.
        v: CValue,
        /// Sign of `s - v` at the previous evaluation (None = unknown or none yet).
        prev: Option<i8>,
    },
    /// `s op v [held d]`.
    Cmp {
        /// Series.
        s: CSeries,
        /// Operator.
        op: CmpOp,
        /// Value.
        v: CValue,
        /// `held` duration in ms.
        held_ms: Option<u32>,
        /// Since when the comparison has been continuously true.
        since: Option<Ts>,
    },
    /// `plan(x).fired [within d]`: x's WHEN fired (latched; with `within`, the latest fire
    /// is at most d old).
    Fired {
        /// Plan index.
        plan: usize,
        /// Window, ms.
        within_ms: Option<u32>,
    },
    /// `plan(x).filled [within d]`: x got its first entry fill.
    Filled {
        /// Plan index.
        plan: usize,
        /// Window, ms.
        within_ms: Option<u32>,
    },
    /// `headline [within d]`: a headline has crossed (latched; with `within`, the latest is
    /// at most d old).
    Headline {
        /// Window, ms.
        within_ms: Option<u32>,
    },
    /// `T-n`: `now >= close - n minutes`.
    TMinus(u32),
    /// `phase open` / `phase close`.
    Phase(bool),
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    And(Vec<Node>),
    Or(Vec<Node>),
    Not(Box<Node>),
    Pred(usize),
}

/// A compiled trigger.
#[derive(Debug, Clone, PartialEq)]
pub struct CTrigger {
    root: Node,
    preds: Vec<CPred>,
    vals: Vec<Tri>,
    /// Reads the plan's leg quotes (mark / mid / bid / ask).
    pub uses_leg: bool,
    /// Reads the plan's P&L or fills.
    pub uses_plan: bool,
    /// What the value depends on (see the module docs, "Dirty tracking").
    deps: Deps,
    /// The refresh epoch of the latest evaluation (0: never evaluated).
    last_epoch: u64,
    /// The latest value.
    last: Tri,
    /// A `crosses` predicate was true at the latest evaluation.
    cross_hit: bool,
    /// A `held` comparison was holding at the latest evaluation (its `since` is set): its
    /// value moves with the clock until it stops holding, so the trigger is re-evaluated
    /// whenever the clock moves and does not settle. Not holding, it is false until its
    /// comparison's inputs move, like any other.
    held_live: bool,
}

/// A trigger's inputs, for dirty tracking.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Deps {
    /// Its id in [`Dirt::touched`] (its levels mark it there).
    id: u32,
    /// Series slots read as values (any move re-evaluates), one bit per slot (slots from 63
    /// on share bit 63).
    mkt: u64,
    /// Series slots read only as levels against constants (a move that crosses no level
    /// does not re-evaluate; becoming known or UNKNOWN does).
    lvl: u64,
    /// Percentile slots.
    pct: u64,
    /// Pair slots: a market series against another or its percentile, re-evaluated when
    /// the sign of their difference changes ([`Slots`]).
    pair: u64,
    /// Re-evaluated whenever the clock moves (the clock against a series). A `held`
    /// comparison reads the clock only while it holds ([`CTrigger::held_live`]).
    clock: bool,
    /// Re-evaluated on every evaluation (plan reads, plan and headline events).
    always: bool,
    /// Every series slot it reads, as a value, a level or a side of a pair, and every
    /// percentile slot, as a value or a side of a pair: what [`Slots::refresh`] must keep
    /// current while the trigger can be read ([`Slots::skip`]).
    reads: Reads,
}

/// Slots a trigger reads (or a set of triggers: `|`): series slot bits as in
/// [`Dirt::moved`], percentile slot bits as in [`Dirt::pct_moved`] (slots from 63 on share
/// bit 63). What [`Slots::skip`] is told to keep current.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reads {
    /// Series slots.
    pub series: u64,
    /// Percentile slots.
    pub pcts: u64,
}

impl Reads {
    /// Every slot (the naive schedule of the tests reads them all).
    pub const ALL: Reads = Reads {
        series: u64::MAX,
        pcts: u64::MAX,
    };
}

impl std::ops::BitOr for Reads {
    type Output = Reads;
    #[inline]
    fn bitor(self, o: Reads) -> Reads {
        Reads {
            series: self.series | o.series,
            pcts: self.pcts | o.pcts,
        }
    }
}

impl std::ops::Not for Reads {
    type Output = Reads;
    #[inline]
    fn not(self) -> Reads {
        Reads {
            series: !self.series,
            pcts: !self.pcts,
        }
    }
}

fn bit(slot: u16) -> u64 {
    1u64 << slot.min(63)
}

/// What moved at the latest [`Slots::refresh`] (see the module docs, "Dirty tracking").
#[derive(Debug, Clone, Default)]
pub struct Dirt {
    /// Refresh count: the event being evaluated (0 before the first refresh).
    pub epoch: u64,
    /// Series slots whose value changed at this refresh (bit per slot, as in `Deps`).
    pub moved: u64,
    /// Series slots whose value became known or UNKNOWN at this refresh.
    pub jumped: u64,
    /// Percentile slots whose value changed at this refresh.
    pub pct_moved: u64,
    /// Pair slots whose sign changed at this refresh (or became known or UNKNOWN).
    pub pair_moved: u64,
    /// Per pair slot: the sign of `lhs - rhs` at the latest refresh (`UNKNOWN_SIGN` when
    /// either is UNKNOWN; `NEVER` before the first). A series against its own percentile
    /// is read from it ([`eval_market`]): the percentile itself is not always read (see
    /// [`Slots::refresh`]).
    pub signs: Vec<i8>,
    /// The clock moved since the previous refresh.
    pub clock: bool,
    /// Per trigger id: the epoch at which the series crossed one of its levels. A [`Park`]
    /// group has an id here too, marked with its triggers.
    pub touched: Vec<u64>,
    /// Per trigger id: the id of its [`Park`] group in `touched` (`u32::MAX`: none).
    pub group_of: Vec<u32>,
    /// The [`Park`] groups whose levels were crossed at this refresh.
    pub woke: Vec<u32>,
    /// Re-evaluate every trigger on every event (the reference the tests compare the dirty
    /// tracking with).
    pub naive: bool,
    /// Triggers evaluated in full so far (every predicate read and folded).
    pub full_evals: std::cell::Cell<u64>,
}

/// Times of the events predicates read, and the session clock.
#[derive(Debug, Clone, Default)]
pub struct EventTimes {
    /// Latest WHEN fire per plan index.
    pub fired: Vec<Option<Ts>>,
    /// First entry fill per plan index.
    pub filled: Vec<Option<Ts>>,
    /// Latest headline.
    pub headline: Option<Ts>,
    /// The plan a name means now, per plan index: a plan armed again by name (a corrected
    /// plan, an agent's supersede keeping it) stands for the ones it replaced, so a standing
    /// `plan(x)` or `ARM x` compiled against an earlier x reaches the new one. Empty until a
    /// name is armed again (every index means itself).
    pub current: Vec<usize>,
}

impl EventTimes {
    /// The plan index `plan` means now (see [`EventTimes::current`]).
    pub fn current(&self, plan: usize) -> usize {
        self.current.get(plan).copied().unwrap_or(plan)
    }
}

/// Plan-local reads for one evaluation.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlanReads {
    /// P&L in R at fair (None before R is known).
    pub pnl_r: Option<f64>,
    /// Average entry fill price.
    pub avg_px: Option<f64>,
    /// Leg quote: mid, bid, ask.
    pub leg: Option<(f64, f64, f64)>,
}

/// Everything an evaluation reads.
pub struct Ctx<'a> {
    /// Market state (series, percentiles).
    pub ms: &'a MarketState,
    /// Now.
    pub now: Ts,
    /// Session open.
    pub open: Ts,
    /// Session close.
    pub close: Ts,
    /// Event times.
    pub ev: &'a EventTimes,
    /// Plan reads.
    pub plan: PlanReads,
    /// Market series values this event, by slot (see [`Slots`]).
    pub mkt: &'a [Option<f64>],
    /// Percentile values this event, by slot.
    pub pct: &'a [Option<f64>],
    /// What moved since the previous event.
    pub dirt: &'a Dirt,
}

/// Interned market reads: each distinct `(symbol, series)` and `(symbol, series, p)` read by
/// any trigger gets one slot, refreshed once per tape event, so triggers read an array.
#[derive(Debug, Clone, Default)]
pub struct Slots {
    /// Series slots.
    pub series: Vec<(Sym, MSeries)>,
    /// Percentile slots.
    pub pcts: Vec<(Sym, MSeries, f64)>,
    /// The first `pct_fresh` percentile values were computed with `pct_samples` grid
    /// samples recorded; they change only when a sample is recorded (see `refresh`).
    pct_fresh: usize,
    /// Percentile slot bits a trigger reads as a value (not through its pair: none the
    /// language can write today), computed at every sample as the naive schedule does.
    pct_direct: u64,
    pct_samples: usize,
    /// Per series slot: where its symbol is in the market state, and its levels' hint.
    series_seen: Vec<Seen>,
    /// The series slots by symbol.
    by_sym: Vec<SymSlots>,
    /// The series slot bits and percentile slot bits some pair reads, and a pair not yet
    /// evaluated: a refresh that moved none of them leaves every pair's sign as it was.
    pair_mkt: u64,
    pair_pct: u64,
    pair_new: bool,
    /// Per series slot: the levels compared with it, sorted by threshold, with the id of
    /// their trigger.
    levels: Vec<Vec<(f64, u32)>>,
    /// Levels on the clock (seconds since midnight), sorted, with their trigger ids.
    clock_levels: Vec<(f64, u32)>,
    /// Pair slots: each distinct market series compared with another market series or
    /// with a percentile, and the sign of their difference at the latest refresh.
    pairs: Vec<Pair>,
    /// The session's open and close (the clock levels of `phase` and `T-n`).
    session: Option<(Ts, Ts)>,
    /// The clock at the previous refresh.
    clock_prev: Option<Ts>,
    /// How many clock levels lie below it (a hint for [`touch_moved`]).
    clock_below: usize,
    /// The lowest clock level not below it (the one `clock_below` points at; infinite when
    /// none), known since the latest walk of the clock's levels: a clock that moves forward
    /// and stays below it crosses no level, so no walk. 0 (no clock is below it): not known,
    /// as before the first walk or after a level was added.
    clock_next: f64,
    /// Some percentile slot is of `open` (it moves without a new sample).
    pct_open: bool,
    /// Per percentile slot: its symbol's index in the market state, and where its previous
    /// read found its rank ([`MarketState::percentile_at`]).
    pct_hint: Vec<(usize, RankHint)>,
    /// Samples recorded at the latest refresh of the pairs.
    pair_samples: usize,
    /// Series slot bits no trigger that can be read reads (slots from 63 on share bit 63):
    /// not refreshed until one can be again ([`skip`](Slots::skip)). 0 (read every slot) by
    /// default.
    skipped: u64,
    /// Percentile slot bits no trigger that can be read reads: not computed until one can
    /// be again ([`skip`](Slots::skip)).
    skipped_pct: u64,
    /// What moved at the latest refresh.
    pub dirt: Dirt,
}

/// The right-hand side of a pair slot: a series slot or a percentile slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PairRhs {
    Mkt(u16),
    Pct(u16),
}

/// A pair slot: `lhs` (a series slot) against `rhs`, and the sign of `lhs - rhs` at the
/// latest refresh (`UNKNOWN_SIGN` when either is UNKNOWN; `NEVER` before the first).
///
/// A comparison (`>`, `<`, `>=`, `<=`, `held` or not) or a `crosses` between the two is a
/// function of this sign alone and of its own state (a `crosses`'s previous sign, a `held`
/// start), so it is re-evaluated only when the sign changes — `spot >= hod` or `spot > p95`
/// re-evaluates when spot makes or leaves the high or crosses the percentile, not at every
/// tick of either — and one pair serves every trigger that compares the same two.
#[derive(Debug, Clone, Copy)]
struct Pair {
    lhs: u16,
    rhs: PairRhs,
    /// A percentile `rhs`: bounds on it from its latest read ([`PctBound`]), with the
    /// market state's generation and the samples recorded at that read.
    bound: PctBound,
    bound_at: (u64, usize),
    /// The slot bits of its sides (as in [`Dirt::moved`] and [`Dirt::pct_moved`]): `lhs`'s
    /// and a series `rhs`'s, a percentile `rhs`'s. Its sign is taken again when one moved.
    mkt_bits: u64,
    pct_bits: u64,
}

const UNKNOWN_SIGN: i8 = 2;
const NEVER: i8 = 3;

/// A series slot's value as triggers read it: finite, or UNKNOWN.
#[inline(always)]
fn mkt_value(mkt: &[Option<f64>], k: u16) -> Option<f64> {
    mkt.get(usize::from(k))
        .copied()
        .flatten()
        .filter(|x| x.is_finite())
}

/// A slot's value as [`Slots::refresh`] stored it: finite or UNKNOWN already (the value
/// vectors are the engine's, written only there), so no check is made again.
#[inline(always)]
fn stored(vals: &[Option<f64>], k: u16) -> Option<f64> {
    let v = vals.get(usize::from(k)).copied().flatten();
    debug_assert!(v.is_none_or(f64::is_finite));
    v
}

/// The sign of `x` against a pair's percentile slot (`(symbol, series, p)`, where its
/// symbol is in the market state and its rank hint, its value), read again: its value,
/// its hint and the pair's bounds kept ([`Slots::refresh_pairs`]).
#[inline(never)]
fn read_pct(
    ms: &MarketState,
    slot: Option<&(Sym, MSeries, f64)>,
    hint: Option<&mut (usize, RankHint)>,
    v: Option<&mut Option<f64>>,
    pair: &mut Pair,
    x: f64,
) -> i8 {
    let (Some(&(_, m, p)), Some((at, hint)), Some(v)) = (slot, hint, v) else {
        return UNKNOWN_SIGN;
    };
    let (new, b) = ms.percentile_bounded_at(*at, m, p, hint, x);
    *v = new.filter(|y| y.is_finite());
    pair.bound = b;
    pair.bound_at = (ms.generation(), ms.samples_recorded());
    sign_of(Some(x), *v)
}

/// A percentile slot's value as triggers read it.
#[inline(always)]
fn pct_value(pct: &[Option<f64>], k: u16) -> Option<f64> {
    pct.get(usize::from(k)).copied().flatten()
}

/// The sign of `a - b` (`UNKNOWN_SIGN` when either is UNKNOWN): what a `crosses` keeps.
#[inline(always)]
fn sign_of(a: Option<f64>, b: Option<f64>) -> i8 {
    match (a, b) {
        (Some(a), Some(b)) => {
            if a > b {
                1
            } else if a < b {
                -1
            } else {
                0
            }
        }
        _ => UNKNOWN_SIGN,
    }
}

/// A series slot's symbol, resolved once, and its levels' hint ([`Slots::refresh`]; when it
/// is read again is its symbol's [`SymSlots`]).
#[derive(Debug, Clone, Copy)]
struct Seen {
    /// Its symbol's index in the market state (`usize::MAX`: not there).
    ms: usize,
    /// Its series (the slot's in [`Slots::series`]).
    m: MSeries,
    /// How many of its levels lie below its value (a hint for [`touch_moved`]).
    below: usize,
    /// The levels on either side of `below` at the latest walk of its levels (infinite
    /// where there is none): no level lies strictly between them, so a move within that gap
    /// touches none and leaves `below` as it is, without the walk. `lo > hi`: not known (a
    /// new slot, or a level added since).
    lo: f64,
    hi: f64,
}

/// The series slots of one symbol, read again together when the symbol had an event; those
/// that move with the clock (`velocity`, `time`) also when the clock moved.
#[derive(Debug, Clone)]
struct SymSlots {
    sym: Sym,
    /// The symbol's index in the engine's event counts (`usize::MAX`: not there, so its
    /// slots are read at every refresh).
    count: usize,
    /// Its event count and the clock when its slots were read.
    ticks: u64,
    at: Option<Ts>,
    /// Every series slot of the symbol.
    slots: Vec<u32>,
    /// Those refreshed (not [`Slots::skip`]ped), and of them those that move with the clock.
    all: Vec<u32>,
    clocked: Vec<u32>,
}

/// Mark the triggers of the levels in `[lo, hi]` of a sorted level list, and list their
/// [`Park`] groups (`group_of`, per trigger id) in `woke`: the reference the tests hold
/// [`touch_moved`] (which the series and the clock use) to.
#[cfg(test)]
pub(crate) fn touch_levels(
    levels: &[(f64, u32)],
    lo: f64,
    hi: f64,
    epoch: u64,
    touched: &mut [u64],
    (group_of, woke): (&[u32], &mut Vec<u32>),
) {
    let a = levels.partition_point(|l| l.0 < lo);
    let b = levels.partition_point(|l| l.0 <= hi);
    for l in levels.get(a..b).unwrap_or(&[]) {
        touch(touched, (group_of, woke), l.1, epoch);
    }
}

/// A series moved from `a` to `c` (`a != c`): mark the triggers of its levels in
/// `[min(a, c), max(a, c)]` (as [`touch_levels`] does) and return how many levels lie below
/// `c`. `below` is how many lay below `a` (a hint kept per slot: checked, and searched for
/// when wrong), so the walk visits only the levels crossed, plus one to see where to stop.
#[inline(always)]
pub(crate) fn touch_moved(
    levels: &[(f64, u32)],
    below: usize,
    (a, c): (f64, f64),
    epoch: u64,
    touched: &mut [u64],
    (group_of, woke): (&[u32], &mut Vec<u32>),
) -> usize {
    let fits = below <= levels.len()
        && (below == 0 || levels[below - 1].0 < a)
        && levels.get(below).is_none_or(|l| l.0 >= a);
    let p = if fits {
        below
    } else {
        levels.partition_point(|l| l.0 < a)
    };
    let mut j = p;
    if c > a {
        // Up from the first level at or above `a`, to the last at or below `c`.
        while let Some(l) = levels.get(j).filter(|l| l.0 < c) {
            touch(touched, (group_of, woke), l.1, epoch);
            j += 1;
        }
        let below_c = j;
        while let Some(l) = levels.get(j).filter(|l| l.0 <= c) {
            touch(touched, (group_of, woke), l.1, epoch);
            j += 1;
        }
        below_c
    } else {
        // The levels at `a` itself, then down from below `a` to the first at or above `c`.
        while let Some(l) = levels.get(j).filter(|l| l.0 <= a) {
            touch(touched, (group_of, woke), l.1, epoch);
            j += 1;
        }
        let mut k = p;
        while let Some(l) = k
            .checked_sub(1)
            .and_then(|i| levels.get(i))
            .filter(|l| l.0 >= c)
        {
            touch(touched, (group_of, woke), l.1, epoch);
            k -= 1;
        }
        k
    }
}

#[inline]
fn touch(touched: &mut [u64], (group_of, woke): (&[u32], &mut Vec<u32>), id: u32, epoch: u64) {
    if let Some(t) = touched.get_mut(id as usize) {
        *t = epoch;
    }
    if let Some(&g) = group_of.get(id as usize)
        && g != u32::MAX
    {
        woke.push(g);
    }
}

/// Does this series move with the clock alone (between its symbol's trades)?
#[inline]
fn on_clock(m: MSeries) -> bool {
    matches!(m, MSeries::Velocity(_) | MSeries::Time)
}

fn insert_level(levels: &mut Vec<(f64, u32)>, at: f64, id: u32) {
    let i = levels.partition_point(|l| l.0.total_cmp(&at).is_le());
    levels.insert(i, (at, id));
}

impl Slots {
    /// Slots for a session with this open and close (the clock levels of `phase` and
    /// `T-n`; without them those predicates re-evaluate whenever the clock moves).
    pub fn for_session(open: Ts, close: Ts) -> Slots {
        Slots {
            session: Some((open, close)),
            ..Slots::default()
        }
    }

    fn new_trigger_id(&mut self) -> u32 {
        self.dirt.touched.push(0);
        self.dirt.group_of.push(u32::MAX);
        u32::try_from(self.dirt.touched.len() - 1).unwrap_or(u32::MAX)
    }

    fn add_level(&mut self, slot: u16, at: f64, id: u32) {
        let i = usize::from(slot);
        if self.levels.len() <= i {
            self.levels.resize_with(i + 1, Vec::new);
        }
        insert_level(&mut self.levels[i], at, id);
        if let Some(seen) = self.series_seen.get_mut(i) {
            // Its gap is found again at the next walk.
            (seen.lo, seen.hi) = (f64::INFINITY, f64::NEG_INFINITY);
        }
    }

    /// A level on the clock (seconds since midnight) for trigger `id`.
    fn add_clock_level(&mut self, at: f64, id: u32) {
        insert_level(&mut self.clock_levels, at, id);
        // Where the clock stands among its levels is found again at the next walk.
        self.clock_next = 0.0;
    }

    /// A clock level at `at` for a new trigger id, returned (the tests' way in).
    #[cfg(test)]
    pub(crate) fn new_clock_level(&mut self, at: f64) -> u32 {
        let id = self.new_trigger_id();
        self.add_clock_level(at, id);
        id
    }

    fn series_slot(&mut self, sym: Sym, m: MSeries) -> u16 {
        let i = match self.series.iter().position(|x| *x == (sym, m)) {
            Some(i) => i,
            None => {
                self.series.push((sym, m));
                self.series.len() - 1
            }
        };
        u16::try_from(i).unwrap_or(u16::MAX)
    }
    fn pair_slot(&mut self, lhs: u16, rhs: PairRhs) -> u16 {
        let i = match self.pairs.iter().position(|x| x.lhs == lhs && x.rhs == rhs) {
            Some(i) => i,
            None => {
                let (mkt_bits, pct_bits) = match rhs {
                    PairRhs::Mkt(k) => (bit(lhs) | bit(k), 0),
                    PairRhs::Pct(k) => (bit(lhs), bit(k)),
                };
                self.pairs.push(Pair {
                    lhs,
                    rhs,
                    bound: PctBound::NONE,
                    bound_at: (0, 0),
                    mkt_bits,
                    pct_bits,
                });
                self.dirt.signs.push(NEVER);
                self.pair_mkt |= mkt_bits;
                self.pair_pct |= pct_bits;
                self.pair_new = true;
                self.pairs.len() - 1
            }
        };
        u16::try_from(i).unwrap_or(u16::MAX)
    }
    fn pct_slot(&mut self, sym: Sym, m: MSeries, p: f64) -> u16 {
        let i = match self
            .pcts
            .iter()
            .position(|x| x.0 == sym && x.1 == m && x.2 == p)
        {
            Some(i) => i,
            None => {
                self.pcts.push((sym, m, p));
                self.pct_open |= m == MSeries::Open;
                self.pcts.len() - 1
            }
        };
        u16::try_from(i).unwrap_or(u16::MAX)
    }
    /// Refresh only the series and percentile slots outside `skipped`: the engine's slots
    /// of the triggers that can be read now (a plan's phase says which:
    /// `engine::live_series`). A skipped slot keeps its value, its move marks nothing and
    /// touches none of its levels, and it wakes no one, so a trigger that reads it must not
    /// be evaluated, nor resumed from a park, while it is skipped. A slot that is read
    /// again is read at the next refresh whatever moved (its symbol's slots all are; every
    /// percentile is computed again): from its old value, so it moves, jumps and touches
    /// levels as a new slot does, and its readers, not evaluated while it was skipped, are
    /// evaluated in full. A skipped percentile's rank hint goes stale; its next read finds
    /// its rank again from the counts.
    pub fn skip(&mut self, skipped: Reads) {
        if skipped.series == self.skipped && skipped.pcts == self.skipped_pct {
            return;
        }
        let back_pct = self.skipped_pct & !skipped.pcts;
        self.skipped_pct = skipped.pcts;
        if back_pct != 0 {
            // Computed again at the next refresh, samples or none.
            self.pct_fresh = 0;
        }
        let skipped = skipped.series;
        let back = self.skipped & !skipped;
        let series_same = skipped == self.skipped;
        self.skipped = skipped;
        // A pair with a side read again is taken again whatever moved (the refresh skips a
        // pair with a skipped side: no trigger that can be read reads it).
        for (p, sign) in self.pairs.iter().zip(&mut self.dirt.signs) {
            if p.mkt_bits & back != 0 || p.pct_bits & back_pct != 0 {
                *sign = NEVER;
                self.pair_new = true;
            }
        }
        if series_same {
            return;
        }
        for g in &mut self.by_sym {
            g.all.clear();
            g.clocked.clear();
            let mut revived = false;
            for &k in &g.slots {
                let b = bit(u16::try_from(k).unwrap_or(u16::MAX));
                if skipped & b != 0 {
                    continue;
                }
                revived |= back & b != 0;
                g.all.push(k);
                if self
                    .series
                    .get(k as usize)
                    .is_some_and(|&(_, m)| on_clock(m))
                {
                    g.clocked.push(k);
                }
            }
            if revived {
                g.ticks = u64::MAX;
            }
        }
    }

    /// The percentile slot bits not computed ([`skip`](Slots::skip)).
    #[cfg(test)]
    pub(crate) fn skipped_pcts(&self) -> u64 {
        let all = (0..self.pcts.len()).fold(0, |a, i| a | bit(i as u16));
        self.skipped_pct & all
    }

    /// The series slot bits not refreshed ([`skip`](Slots::skip)).
    #[cfg(test)]
    pub(crate) fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Refresh every slot from the market state (`pct` is the vector refreshed last time).
    ///
    /// A percentile is a function of the one-second samples recorded so far (and of
    /// constants), except that of `open`, which also moves with the first session trade: so
    /// the others are recomputed only when a sample was recorded since the last refresh, or
    /// when their slot is new.
    ///
    /// A series value is a function of its symbol's trades (`counts`: per symbol, its events
    /// and its trades) and, for `velocity` and `time` only, of the clock (the sample grid
    /// moves only with the clock); quotes and volatility events move none. So a slot whose
    /// symbol did not trade keeps its value, unless it reads the clock and the clock moved
    /// (e.g. the exec symbol's `spot` on the signal's tick, or on any quote).
    ///
    /// It also records what moved ([`Dirt`]) for the triggers' dirty tracking: `clock` is
    /// the clock the triggers read (the engine's).
    pub fn refresh(
        &mut self,
        ms: &MarketState,
        counts: &[(Sym, u64, u64)],
        mkt: &mut Vec<Option<f64>>,
        pct: &mut Vec<Option<f64>>,
        clock: Ts,
    ) {
        let now = ms.now();
        if mkt.len() != self.series.len() || self.series_seen.len() != self.series.len() {
            self.new_series_slots(ms, counts, mkt);
        }
        let d = &mut self.dirt;
        d.epoch += 1;
        d.moved = 0;
        d.jumped = 0;
        d.pct_moved = 0;
        d.pair_moved = 0;
        d.woke.clear();
        d.clock = self.clock_prev != Some(clock);
        if d.clock {
            if self.clock_levels.is_empty() {
                // Nothing on the clock's levels to touch.
            } else if let Some(prev) = self.clock_prev {
                let c = clock.secs_f64();
                if prev < clock && c < self.clock_next {
                    // Forward, and below the lowest level not below `prev`: no level lies in
                    // [prev, clock] (`touch_moved` would touch none, and leave the count
                    // below as it is).
                } else {
                    // The clock's levels in [prev, clock], walked from where it was.
                    self.clock_below = touch_moved(
                        &self.clock_levels,
                        self.clock_below,
                        (prev.secs_f64(), c),
                        d.epoch,
                        &mut d.touched,
                        (&d.group_of, &mut d.woke),
                    );
                    self.clock_next = self
                        .clock_levels
                        .get(self.clock_below)
                        .map_or(f64::INFINITY, |l| l.0);
                }
            } else {
                for l in &self.clock_levels {
                    touch(&mut d.touched, (&d.group_of, &mut d.woke), l.1, d.epoch);
                }
            }
            self.clock_prev = Some(clock);
        }
        for g in &mut self.by_sym {
            // A symbol's series move at its events; `velocity` and `time` also with the clock.
            let n = counts.get(g.count).map(|u| u.2);
            let list = if n.is_none() || n != Some(g.ticks) {
                g.ticks = n.unwrap_or(u64::MAX);
                &g.all
            } else if g.at != now {
                &g.clocked
            } else {
                continue;
            };
            g.at = now;
            for &k in list {
                let i = k as usize;
                let (Some(v), Some(seen)) = (mkt.get_mut(i), self.series_seen.get_mut(i)) else {
                    continue;
                };
                let new = ms.value_of(seen.ms, seen.m).filter(|x| x.is_finite());
                if new != *v {
                    let b = bit(u16::try_from(k).unwrap_or(u16::MAX));
                    d.moved |= b;
                    let levels = self.levels.get(i).map_or(&[][..], Vec::as_slice);
                    match (*v, new) {
                        // No level on it (a series read only in pairs, say): nothing to
                        // touch, and none below (what `touch_moved` gives, without its walk).
                        (Some(_), Some(_)) if levels.is_empty() => seen.below = 0,
                        // Within the gap between two levels: none in [a, c] to touch.
                        (Some(a), Some(c)) if a.min(c) > seen.lo && a.max(c) < seen.hi => {}
                        (Some(a), Some(c)) => {
                            seen.below = touch_moved(
                                levels,
                                seen.below,
                                (a, c),
                                d.epoch,
                                &mut d.touched,
                                (&d.group_of, &mut d.woke),
                            );
                            seen.lo = (seen.below.checked_sub(1).and_then(|j| levels.get(j)))
                                .map_or(f64::NEG_INFINITY, |l| l.0);
                            seen.hi = levels.get(seen.below).map_or(f64::INFINITY, |l| l.0);
                        }
                        _ => d.jumped |= b,
                    }
                    *v = new;
                }
            }
        }
        if !(self.pcts.is_empty() && pct.is_empty()) {
            self.refresh_pcts(ms, pct);
        }
        if !self.pairs.is_empty() {
            self.refresh_pairs(ms, mkt, pct);
        }
    }

    /// The percentile slots (the tail of [`refresh`](Self::refresh)). Every percentile is
    /// read by its pair only (a series against its own percentile), which reads it as it
    /// needs ([`refresh_pairs`](Self::refresh_pairs)); here are read those a trigger reads
    /// as a value, and, for the naive schedule of the tests (the reference), every one at
    /// every sample.
    fn refresh_pcts(&mut self, ms: &MarketState, pct: &mut Vec<Option<f64>>) {
        let len = self.pcts.len();
        for &(sym, _, _) in &self.pcts[self.pct_hint.len().min(len)..] {
            self.pct_hint
                .push((ms.sym_index(sym).unwrap_or(usize::MAX), RankHint::default()));
        }
        let d = &mut self.dirt;
        let only = if d.naive { u64::MAX } else { self.pct_direct };
        if only == 0 {
            pct.resize(len, None);
            return;
        }
        let n = ms.samples_recorded();
        if n == self.pct_samples && self.pct_fresh == len && pct.len() == len && !self.pct_open {
            // No sample since every value was computed: they stand.
            return;
        }
        if n != self.pct_samples || pct.len() < self.pct_fresh {
            self.pct_fresh = 0;
            self.pct_samples = n;
        }
        pct.resize(len, None);
        for (i, ((v, (_, m, p)), (at, hint))) in pct
            .iter_mut()
            .zip(&self.pcts)
            .zip(&mut self.pct_hint)
            .enumerate()
        {
            let b = bit(u16::try_from(i).unwrap_or(u16::MAX));
            if (i < self.pct_fresh && *m != MSeries::Open)
                || self.skipped_pct & b != 0
                || only & b == 0
            {
                continue;
            }
            let new = ms
                .percentile_at(*at, *m, *p, hint)
                .filter(|x| x.is_finite());
            if new != *v {
                d.pct_moved |= b;
                *v = new;
            }
        }
        self.pct_fresh = len;
    }

    /// The pair slots whose sides moved at this refresh: their sign again, and a bit in
    /// `pair_moved` when it changed (the tail of [`refresh`](Self::refresh)). A pair with a
    /// [`skip`](Slots::skip)ped side is left as it is: every trigger that reads a pair reads
    /// both its sides, so none that can be read reads it (its sign is taken again when the
    /// side is read again).
    ///
    /// A series against its own percentile is taken at each sample (the percentile moves
    /// only then; `open`'s, at every refresh) and when the series moved. The percentile is
    /// read only when the series is not clear of the bounds its latest read left
    /// ([`PctBound`]): below the lower, the sign is -1; above the upper, 1. The naive
    /// schedule reads every percentile at every sample and compares the values.
    fn refresh_pairs(&mut self, ms: &MarketState, mkt: &[Option<f64>], pct: &mut [Option<f64>]) {
        let d = &mut self.dirt;
        let (moved, pct_moved) = (d.moved, d.pct_moved);
        let (skipped, skipped_pct) = (self.skipped, self.skipped_pct);
        let n = ms.samples_recorded();
        let pct_due = !d.naive && self.pair_pct != 0 && (n != self.pair_samples || self.pct_open);
        self.pair_samples = n;
        if moved & self.pair_mkt == 0
            && pct_moved & self.pair_pct == 0
            && !self.pair_new
            && !pct_due
        {
            return;
        }
        self.pair_new = false;
        let (naive, generation) = (d.naive, ms.generation());
        for (i, (p, sign)) in self.pairs.iter_mut().zip(&mut d.signs).enumerate() {
            if p.mkt_bits & skipped != 0 || p.pct_bits & skipped_pct != 0 {
                continue;
            }
            let due = *sign == NEVER || moved & p.mkt_bits != 0 || pct_moved & p.pct_bits != 0;
            let new = match p.rhs {
                PairRhs::Mkt(k) if due => sign_of(stored(mkt, p.lhs), stored(mkt, k)),
                PairRhs::Pct(k) if naive && due => sign_of(stored(mkt, p.lhs), stored(pct, k)),
                PairRhs::Pct(k) if !naive && (due || pct_due) => match stored(mkt, p.lhs) {
                    None => UNKNOWN_SIGN,
                    Some(x) => {
                        let (b, since) = (&p.bound, n.wrapping_sub(p.bound_at.1));
                        let held = p.bound_at.0 == generation;
                        if held && since <= b.lo_for && x < b.lo {
                            -1
                        } else if held && since <= b.hi_for && x > b.hi {
                            1
                        } else {
                            let k = usize::from(k);
                            read_pct(
                                ms,
                                self.pcts.get(k),
                                self.pct_hint.get_mut(k),
                                pct.get_mut(k),
                                p,
                                x,
                            )
                        }
                    }
                },
                _ => continue,
            };
            if new != *sign {
                *sign = new;
                d.pair_moved |= bit(u16::try_from(i).unwrap_or(u16::MAX));
            }
        }
    }

    /// Fit the value vector to the series slots and resolve the symbols of new slots (the
    /// cold path of [`refresh`](Self::refresh): once per slot, after arming). A value vector
    /// shorter than the slots read so far was handed in anew: every slot is read again.
    #[cold]
    fn new_series_slots(
        &mut self,
        ms: &MarketState,
        counts: &[(Sym, u64, u64)],
        mkt: &mut Vec<Option<f64>>,
    ) {
        if mkt.len() < self.series_seen.len() {
            self.series_seen.clear();
            self.by_sym.clear();
        }
        mkt.resize(self.series.len(), None);
        for i in self.series_seen.len()..self.series.len() {
            let (sym, m) = self.series[i];
            self.series_seen.push(Seen {
                ms: ms.sym_index(sym).unwrap_or(usize::MAX),
                m,
                below: 0,
                lo: f64::INFINITY,
                hi: f64::NEG_INFINITY,
            });
            let g = match self.by_sym.iter().position(|g| g.sym == sym) {
                Some(j) => &mut self.by_sym[j],
                None => {
                    self.by_sym.push(SymSlots {
                        sym,
                        count: counts.iter().position(|u| u.0 == sym).unwrap_or(usize::MAX),
                        ticks: u64::MAX,
                        at: None,
                        slots: Vec::new(),
                        all: Vec::new(),
                        clocked: Vec::new(),
                    });
                    self.by_sym.last_mut().expect("pushed")
                }
            };
            let k = u32::try_from(i).unwrap_or(u32::MAX);
            g.slots.push(k);
            if self.skipped & bit(u16::try_from(i).unwrap_or(u16::MAX)) == 0 {
                g.all.push(k);
                if on_clock(m) {
                    g.clocked.push(k);
                }
            }
            // Its symbol's slots are all read at the next refresh (the new one among them).
            g.ticks = u64::MAX;
        }
    }
}

/// What compilation needs to resolve names.
pub struct Resolver<'a> {
    /// The signal symbol (`spot`, `hod`, ...).
    pub signal: Sym,
    /// Does the tape carry this symbol?
    pub has_symbol: &'a dyn Fn(&str) -> bool,
    /// Plan index by name.
    pub plan_index: &'a dyn Fn(&str) -> Option<usize>,
}

/// Series a percentile may be taken of (and tracked for).
pub fn percentile_target(s: CSeries) -> Option<(Sym, MSeries)> {
    match s {
        CSeries::Mkt(sym, m, _) => Some((sym, m)),
        _ => None,
    }
}

fn compile_series(s: &ast::Series, r: &Resolver<'_>, slots: &mut Slots) -> Result<CSeries, String> {
    let c = compile_series0(s, r)?;
    Ok(match c {
        CSeries::Mkt(sym, m, _) => CSeries::Mkt(sym, m, slots.series_slot(sym, m)),
        other => other,
    })
}

fn compile_series0(s: &ast::Series, r: &Resolver<'_>) -> Result<CSeries, String> {
    let sig = r.signal;
    Ok(match &s.kind {
        SeriesKind::Spot => CSeries::Mkt(sig, MSeries::Spot, 0),
        SeriesKind::Hod => CSeries::Mkt(sig, MSeries::Hod, 0),
        SeriesKind::Lod => CSeries::Mkt(sig, MSeries::Lod, 0),
        SeriesKind::Vwap => CSeries::Mkt(sig, MSeries::Vwap, 0),
        SeriesKind::Open => CSeries::Mkt(sig, MSeries::Open, 0),
        SeriesKind::PriorClose => CSeries::Mkt(sig, MSeries::PriorClose, 0),
        SeriesKind::Velocity { window } => {
            let w = u32::try_from(window.seconds()).unwrap_or(u32::MAX);
            if w == 0 {
                return Err(format!("velocity({}) has a zero window", window.text));
            }
            CSeries::Mkt(sig, MSeries::Velocity(w), 0)
        }
        SeriesKind::Pnl => CSeries::Pnl,
        SeriesKind::Time => CSeries::Time,
        SeriesKind::FillsAvgPx => CSeries::AvgPx,
        SeriesKind::SymSpot { sym } => {
            if !(r.has_symbol)(&sym.text) {
                return Err(format!(
                    "UNKNOWN symbol {}: the tape does not carry it ({})",
                    sym.text, s.text
                ));
            }
            let sy = Sym::new(&sym.text).ok_or_else(|| format!("bad symbol {}", sym.text))?;
            CSeries::Mkt(sy, MSeries::Spot, 0)
        }
        SeriesKind::Mark => CSeries::Leg(LegSeries::Mark),
        SeriesKind::Mid => CSeries::Leg(LegSeries::Mid),
        SeriesKind::Bid => CSeries::Leg(LegSeries::Bid),
        SeriesKind::Ask => CSeries::Leg(LegSeries::Ask),
    })
}

fn compile_value(
    v: &ast::Value,
    of: CSeries,
    r: &Resolver<'_>,
    slots: &mut Slots,
) -> Result<CValue, String> {
    Ok(match v {
        ast::Value::Number { value } => {
            let x = value.value();
            if !x.is_finite() {
                return Err(format!("bad number {}", value.text));
            }
            CValue::Num(x)
        }
        ast::Value::Clock { clock } => CValue::Num(f64::from(clock.minutes()) * 60.0),
        ast::Value::Series { series } => CValue::Series(compile_series(series, r, slots)?),
        ast::Value::Percentile { pct } => {
            let p = pct.value();
            if !(0.0..=100.0).contains(&p) {
                return Err(format!("percentile p{} is outside 0..100", pct.text));
            }
            let t = percentile_target(of).ok_or_else(|| {
                "a percentile is only defined for market series (spot, hod, lod, vwap, open, prior-close, velocity, SYM.spot)".to_string()
            })?;
            let k = slots.pct_slot(t.0, t.1, p);
            let pair = match of {
                CSeries::Mkt(_, _, a) => slots.pair_slot(a, PairRhs::Pct(k)),
                _ => u16::MAX,
            };
            CValue::Pct(p, k, pair)
        }
    })
}

fn compile_node(
    t: &Trigger,
    r: &Resolver<'_>,
    preds: &mut Vec<CPred>,
    slots: &mut Slots,
) -> Result<Node, String> {
    Ok(match t {
        Trigger::Or { terms } => Node::Or(
            terms
                .iter()
                .map(|x| compile_node(x, r, preds, slots))
                .collect::<Result<_, _>>()?,
        ),
        Trigger::And { terms } => Node::And(
            terms
                .iter()
                .map(|x| compile_node(x, r, preds, slots))
                .collect::<Result<_, _>>()?,
        ),
        Trigger::Not { inner } => Node::Not(Box::new(compile_node(inner, r, preds, slots)?)),
        Trigger::Group { inner } => compile_node(inner, r, preds, slots)?,
        Trigger::Pred { pred } => {
            let p = match &**pred {
                Predicate::Cross {
                    series, dir, value, ..
                } => {
                    let s = compile_series(series, r, slots)?;
                    CPred::Cross {
                        s,
                        above: *dir == CrossDir::Above,
                        v: compile_value(value, s, r, slots)?,
                        prev: None,
                    }
                }
                Predicate::Compare {
                    series,
                    op,
                    value,
                    held,
                    ..
                } => {
                    let s = compile_series(series, r, slots)?;
                    CPred::Cmp {
                        s,
                        op: *op,
                        v: compile_value(value, s, r, slots)?,
                        held_ms: held.as_ref().map(dur_ms),
                        since: None,
                    }
                }
                Predicate::Event { event, within, .. } => {
                    let within_ms = within.as_ref().map(dur_ms);
                    match event {
                        ast::Event::PlanFired { plan } => CPred::Fired {
                            plan: (r.plan_index)(&plan.text)
                                .ok_or_else(|| format!("no plan named {}", plan.text))?,
                            within_ms,
                        },
                        ast::Event::PlanFilled { plan } => CPred::Filled {
                            plan: (r.plan_index)(&plan.text)
                                .ok_or_else(|| format!("no plan named {}", plan.text))?,
                            within_ms,
                        },
                        ast::Event::Headline => CPred::Headline { within_ms },
                    }
                }
                Predicate::TMinus { minutes, .. } => {
                    let m = minutes.value();
                    if !(m.is_finite() && m >= 0.0) {
                        return Err(format!("T-{} is not a number of minutes", minutes.text));
                    }
                    CPred::TMinus((m * 60_000.0) as u32)
                }
                Predicate::Phase { phase, .. } => CPred::Phase(*phase == Phase::Open),
            };
            preds.push(p);
            Node::Pred(preds.len() - 1)
        }
    })
}

fn dur_ms(d: &ast::Dur) -> u32 {
    u32::try_from(d.seconds().saturating_mul(1000)).unwrap_or(u32::MAX)
}

/// A group of triggers checked at once: a waiting plan's WHEN and INVALIDATEs, or a holding
/// plan's EXITs (module docs, "Parking"). The union of their inputs; `deps.id` is the
/// group's own id in [`Dirt::touched`], marked whenever one of its triggers' levels is
/// crossed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Park {
    deps: Deps,
}

impl Park {
    /// The group of `ts`, registered in `slots`; `None` when one of them re-evaluates on
    /// every event (plan reads, plan and headline events, leg quotes): such a group never
    /// parks.
    pub fn of<'a>(
        ts: impl IntoIterator<Item = &'a CTrigger> + Clone,
        slots: &mut Slots,
    ) -> Option<Park> {
        let mut p = Park::default();
        for t in ts.clone() {
            if t.deps.always || t.uses_leg || t.uses_plan {
                return None;
            }
            p.deps.mkt |= t.deps.mkt;
            p.deps.lvl |= t.deps.lvl;
            p.deps.pct |= t.deps.pct;
            p.deps.pair |= t.deps.pair;
            p.deps.clock |= t.deps.clock;
        }
        p.deps.id = slots.new_trigger_id();
        for t in ts {
            if let Some(g) = slots.dirt.group_of.get_mut(t.deps.id as usize) {
                *g = p.deps.id;
            }
        }
        Some(p)
    }

    /// The group of `ts` when every one of them reads series (and the clock) only as levels
    /// against constants: it wakes only when one of its levels is crossed or a series it
    /// reads becomes known or UNKNOWN, never at an ordinary move (a holding plan's EXITs
    /// watched while it is quiet, `engine::quiet`). `None` otherwise; nothing is registered.
    /// (Pairs are left out: the group is subscribed from arming on, so an armed plan would
    /// also wake at each sign change of its EXITs' pairs.)
    pub fn of_levels<'a>(
        ts: impl IntoIterator<Item = &'a CTrigger> + Clone,
        slots: &mut Slots,
    ) -> Option<Park> {
        let levels_only = ts
            .clone()
            .into_iter()
            .all(|t| t.deps.mkt == 0 && t.deps.pct == 0 && t.deps.pair == 0 && !t.deps.clock);
        if levels_only {
            Park::of(ts, slots)
        } else {
            None
        }
    }

    /// What wakes the group: series slot bits read as values, as levels, percentile slot
    /// bits, pair slot bits, the clock, and its id in `Dirt::touched` / `Dirt::woke`.
    pub fn inputs(&self) -> ([u64; 4], bool, u32) {
        let d = &self.deps;
        ([d.mkt, d.lvl, d.pct, d.pair], d.clock, d.id)
    }
}

impl CTrigger {
    /// Compile a trigger. `Err` is the reason its statement de-arms (an UNKNOWN symbol, a
    /// percentile of a series that has none). Market reads are interned into `slots`.
    pub fn compile(t: &Trigger, r: &Resolver<'_>, slots: &mut Slots) -> Result<CTrigger, String> {
        let mut preds = Vec::new();
        let root = compile_node(t, r, &mut preds, slots)?;
        let uses = |f: &dyn Fn(CSeries) -> bool| {
            preds.iter().any(|p| match p {
                CPred::Cross { s, v, .. } | CPred::Cmp { s, v, .. } => {
                    f(*s) || matches!(v, CValue::Series(x) if f(*x))
                }
                _ => false,
            })
        };
        let uses_leg = uses(&|s| matches!(s, CSeries::Leg(_)));
        let uses_plan = uses(&|s| matches!(s, CSeries::Pnl | CSeries::AvgPx));
        let vals = vec![Tri::U; preds.len()];
        let deps = deps_of(&preds, slots);
        Ok(CTrigger {
            root,
            preds,
            vals,
            uses_leg,
            uses_plan,
            deps,
            last_epoch: 0,
            last: Tri::U,
            cross_hit: false,
            held_live: false,
        })
    }

    /// Evaluated at least once, not true, and no `crosses` was true at the latest
    /// evaluation: its cached value would stand at the next event if no input moved, and a
    /// plan waiting on it would do nothing at that event (a group may park). A true WHEN
    /// whose fire did not go through (a ticket that could not be priced yet) tries again at
    /// every event, so it never parks.
    #[inline]
    pub fn settled(&self) -> bool {
        self.last_epoch != 0 && !self.cross_hit && self.last != Tri::T && !self.held_live
    }

    /// Take up the trigger again after its group was parked through `epoch` (current and
    /// settled when it parked, and no input moved while parked): it is current at `epoch`,
    /// as if its cached value had been read on every event up to it.
    #[inline]
    pub fn resume(&mut self, epoch: u64) {
        if self.last_epoch != 0 && self.last_epoch < epoch {
            self.last_epoch = epoch;
        }
    }

    /// The series and percentile slots it reads (what [`Slots::skip`] is told).
    #[inline]
    pub fn reads(&self) -> Reads {
        self.deps.reads
    }

    /// The compiled predicates.
    pub fn preds(&self) -> &[CPred] {
        &self.preds
    }

    /// The predicates each of which alone makes the trigger true: the whole trigger, or an
    /// alternative of a top-level OR (nested ORs too). One under an AND or a NOT does not
    /// (`spot < L AND T-5` holds at L only at T-5): a level there is not a stop at L.
    pub fn sufficient_preds(&self) -> Vec<&CPred> {
        fn walk<'a>(n: &Node, preds: &'a [CPred], out: &mut Vec<&'a CPred>) {
            match n {
                Node::Pred(i) => out.extend(preds.get(*i)),
                Node::Or(xs) => xs.iter().for_each(|x| walk(x, preds, out)),
                Node::And(_) | Node::Not(_) => {}
            }
        }
        let mut out = Vec::new();
        walk(&self.root, &self.preds, &mut out);
        out
    }

    /// Evaluate (advancing `crosses` / `held` state). A trigger evaluated on the previous
    /// event none of whose inputs moved keeps its value (module docs, "Dirty tracking").
    pub fn eval(&mut self, cx: &Ctx<'_>) -> Tri {
        match self.cached(cx.dirt) {
            Some(v) => v,
            None => self.eval_all(cx),
        }
    }

    /// The value when none of the trigger's inputs moved since its evaluation on the
    /// previous event (with a `crosses` that had just fired set back to false); `None`
    /// when it must be evaluated ([`eval_all`](Self::eval_all)). Callers check this before
    /// building a [`Ctx`].
    #[inline]
    pub fn cached(&mut self, d: &Dirt) -> Option<Tri> {
        let clean = self.last_epoch != 0
            && self.last_epoch.wrapping_add(1) == d.epoch
            && !self.deps.always
            && d.moved & self.deps.mkt == 0
            && d.jumped & self.deps.lvl == 0
            && d.pct_moved & self.deps.pct == 0
            && d.pair_moved & self.deps.pair == 0
            && !(d.clock && (self.deps.clock || self.held_live))
            && d.touched.get(self.deps.id as usize) != Some(&d.epoch);
        if !clean || d.naive {
            return None;
        }
        self.last_epoch = d.epoch;
        if self.cross_hit {
            // The same inputs again: a `crosses` that was true is false now.
            for (v, p) in self.vals.iter_mut().zip(&self.preds) {
                if *v == Tri::T && matches!(p, CPred::Cross { .. }) {
                    *v = Tri::F;
                }
            }
            self.cross_hit = false;
            self.last = fold_near(&self.root, &self.vals);
        }
        Some(self.last)
    }

    /// Evaluate every predicate and fold (what [`eval`](Self::eval) does when an input
    /// moved).
    pub fn eval_all(&mut self, cx: &Ctx<'_>) -> Tri {
        cx.dirt.full_evals.set(cx.dirt.full_evals.get() + 1);
        self.last_epoch = cx.dirt.epoch;
        let mut hit = false;
        let mut live = false;
        for (p, slot) in self.preds.iter_mut().zip(self.vals.iter_mut()) {
            // A market series against a constant, another market series or its percentile
            // (most predicates) reads two slots in place; the rest go out of line.
            let v = match eval_market(p, cx) {
                Some(v) => v,
                None => eval_pred(p, cx),
            };
            hit |= v == Tri::T && matches!(p, CPred::Cross { .. });
            live |= matches!(p, CPred::Cmp { since: Some(_), .. });
            *slot = v;
        }
        self.cross_hit = hit;
        self.held_live = live;
        self.last = fold_near(&self.root, &self.vals);
        self.last
    }
}

/// A trigger's inputs (module docs, "Dirty tracking"), its levels registered in `slots`.
fn deps_of(preds: &[CPred], slots: &mut Slots) -> Deps {
    let mut d = Deps {
        id: slots.new_trigger_id(),
        ..Deps::default()
    };
    let session = slots.session;
    // A clock level at `ms` milliseconds since midnight.
    let clock_ms = |ms: u32| Ts(ms).secs_f64();
    let mut levels: Vec<(Option<u16>, f64)> = Vec::new();
    for p in preds {
        // A `held` comparison reads the clock only while it holds (`held_live`); not
        // holding, it is false until its comparison changes, which its inputs tell.
        let (s, v) = match p {
            CPred::Cross { s, v, .. } | CPred::Cmp { s, v, .. } => (*s, *v),
            CPred::Fired { .. } | CPred::Filled { .. } | CPred::Headline { .. } => {
                d.always = true;
                continue;
            }
            CPred::TMinus(ms) => {
                match session {
                    Some((_, close)) => {
                        levels.push((None, clock_ms(close.ms().saturating_sub(*ms))))
                    }
                    None => d.clock = true,
                }
                continue;
            }
            CPred::Phase(open) => {
                match session {
                    Some((o, _)) if *open => {
                        levels.push((None, clock_ms(o.ms())));
                        levels.push((None, clock_ms(o.ms().saturating_add(PHASE_MS))));
                    }
                    Some((_, c)) => {
                        levels.push((None, clock_ms(c.ms().saturating_sub(PHASE_MS))));
                        levels.push((None, clock_ms(c.ms().saturating_add(1))));
                    }
                    None => d.clock = true,
                }
                continue;
            }
        };
        match (s, v) {
            (CSeries::Mkt(_, _, slot), CValue::Num(c)) => {
                d.lvl |= bit(slot);
                d.reads.series |= bit(slot);
                levels.push((Some(slot), c));
            }
            (CSeries::Time, CValue::Num(c)) => levels.push((None, c)),
            (CSeries::Mkt(_, _, a), CValue::Series(CSeries::Mkt(_, _, b))) => {
                d.pair |= bit(slots.pair_slot(a, PairRhs::Mkt(b)));
                d.reads.series |= bit(a) | bit(b);
            }
            // Its pair was interned with the value (`compile_value`).
            (CSeries::Mkt(_, _, a), CValue::Pct(_, k, pair)) => {
                d.pair |= bit(pair);
                d.reads.series |= bit(a);
                d.reads.pcts |= bit(k);
            }
            _ => {
                for x in [
                    Some(s),
                    if let CValue::Series(x) = v {
                        Some(x)
                    } else {
                        None
                    },
                ]
                .into_iter()
                .flatten()
                {
                    match x {
                        CSeries::Mkt(_, _, slot) => {
                            d.mkt |= bit(slot);
                            d.reads.series |= bit(slot);
                        }
                        CSeries::Time => d.clock = true,
                        CSeries::Pnl | CSeries::AvgPx | CSeries::Leg(_) => d.always = true,
                    }
                }
                if let CValue::Pct(_, slot, _) = v {
                    d.pct |= bit(slot);
                    d.reads.pcts |= bit(slot);
                    slots.pct_direct |= bit(slot);
                }
            }
        }
    }
    for (slot, at) in levels {
        match slot {
            Some(slot) => slots.add_level(slot, at, d.id),
            None => slots.add_clock_level(at, d.id),
        }
    }
    d
}

fn fold(n: &Node, vals: &[Tri]) -> Tri {
    match n {
        Node::Pred(i) => vals.get(*i).copied().unwrap_or(Tri::U),
        Node::Not(x) => fold_near(x, vals).not(),
        Node::And(xs) => xs.iter().fold(Tri::T, |a, x| a.and(fold_near(x, vals))),
        Node::Or(xs) => xs.iter().fold(Tri::F, |a, x| a.or(fold_near(x, vals))),
    }
}

/// [`fold`] with a predicate and a negated predicate (the usual leaves) read in place
/// rather than through a call.
#[inline(always)]
fn fold_near(n: &Node, vals: &[Tri]) -> Tri {
    match n {
        Node::Pred(i) => vals.get(*i).copied().unwrap_or(Tri::U),
        Node::Not(x) => match &**x {
            Node::Pred(i) => vals.get(*i).copied().unwrap_or(Tri::U).not(),
            _ => fold(n, vals),
        },
        _ => fold(n, vals),
    }
}

/// Read a series now; `None` is UNKNOWN.
pub fn read_series(s: CSeries, cx: &Ctx<'_>) -> Option<f64> {
    let v = match s {
        CSeries::Mkt(_, _, slot) => mkt_value(cx.mkt, slot),
        CSeries::Time => Some(cx.now.secs_f64()),
        CSeries::Pnl => cx.plan.pnl_r,
        CSeries::AvgPx => cx.plan.avg_px,
        CSeries::Leg(l) => cx.plan.leg.map(|(mid, bid, ask)| match l {
            LegSeries::Mark | LegSeries::Mid => mid,
            LegSeries::Bid => bid,
            LegSeries::Ask => ask,
        }),
    };
    v.filter(|x| x.is_finite())
}

fn read_value(v: CValue, of: CSeries, cx: &Ctx<'_>) -> Option<f64> {
    match v {
        CValue::Num(x) => Some(x),
        CValue::Series(s) => read_series(s, cx),
        CValue::Pct(_, slot, _) => {
            percentile_target(of)?;
            pct_value(cx.pct, slot)
        }
    }
}

fn within(at: Option<Ts>, w: Option<u32>, now: Ts) -> Tri {
    match (at, w) {
        (None, _) => Tri::F,
        (Some(_), None) => Tri::T,
        (Some(t), Some(w)) => Tri::of(now.ms().saturating_sub(t.ms()) <= w && t <= now),
    }
}

/// A `crosses` with both sides read (`None`: UNKNOWN).
#[inline(always)]
fn cross(a: Option<f64>, b: Option<f64>, above: bool, prev: &mut Option<i8>) -> Tri {
    cross_sign(sign_of(a, b), above, prev)
}

/// A `crosses` from the sign of its sides' difference ([`sign_of`]).
#[inline(always)]
fn cross_sign(sign: i8, above: bool, prev: &mut Option<i8>) -> Tri {
    if sign == UNKNOWN_SIGN {
        *prev = None;
        return Tri::U;
    }
    let hit = match *prev {
        None => false,
        Some(ps) if above => ps <= 0 && sign > 0,
        Some(ps) => ps >= 0 && sign < 0,
    };
    *prev = Some(sign);
    Tri::of(hit)
}

/// A comparison with both sides read (`None`: UNKNOWN), `held` timed from `since`.
#[inline(always)]
fn compare(
    (a, b): (Option<f64>, Option<f64>),
    op: CmpOp,
    held_ms: Option<u32>,
    since: &mut Option<Ts>,
    now: Ts,
) -> Tri {
    let (Some(a), Some(b)) = (a, b) else {
        *since = None;
        return Tri::U;
    };
    let ok = match op {
        CmpOp::Gt => a > b,
        CmpOp::Lt => a < b,
        CmpOp::Ge => a >= b,
        CmpOp::Le => a <= b,
    };
    held(ok, held_ms, since, now)
}

/// A comparison from the sign of its sides' difference ([`sign_of`]): what
/// [`compare`] gives for the values.
#[inline(always)]
fn compare_sign(sign: i8, op: CmpOp, held_ms: Option<u32>, since: &mut Option<Ts>, now: Ts) -> Tri {
    if sign == UNKNOWN_SIGN {
        *since = None;
        return Tri::U;
    }
    let ok = match op {
        CmpOp::Gt => sign > 0,
        CmpOp::Lt => sign < 0,
        CmpOp::Ge => sign >= 0,
        CmpOp::Le => sign <= 0,
    };
    held(ok, held_ms, since, now)
}

/// A comparison's truth `ok`, `held` timed from `since`.
#[inline(always)]
fn held(ok: bool, held_ms: Option<u32>, since: &mut Option<Ts>, now: Ts) -> Tri {
    match held_ms {
        None => Tri::of(ok),
        Some(h) => {
            if !ok {
                *since = None;
                return Tri::F;
            }
            let t0 = *since.get_or_insert(now);
            Tri::of(now.ms().saturating_sub(t0.ms()) >= h)
        }
    }
}

/// The predicates most triggers are made of, evaluated in place: a market series (`spot`,
/// `vwap`, `velocity(1m)`, ...) against a constant, another market series or its own
/// percentile, and `phase`. `None`: any other predicate ([`eval_pred`]). The same values
/// as [`eval_pred`]'s: the slots are read as [`read_series`] and [`read_value`] read them.
#[inline(always)]
fn eval_market(p: &mut CPred, cx: &Ctx<'_>) -> Option<Tri> {
    // A market slot's value (finite or UNKNOWN) and the right-hand side, when both are
    // market slots or constants.
    let slot = |k: u16| mkt_value(cx.mkt, k);
    let rhs = |v: CValue| match v {
        CValue::Num(x) => Some(Some(x)),
        CValue::Series(CSeries::Mkt(_, _, k)) => Some(slot(k)),
        CValue::Pct(_, k, _) => Some(pct_value(cx.pct, k)),
        CValue::Series(_) => None,
    };
    // A series against its own percentile: the sign of their pair (the percentile is not
    // read at every refresh). The naive schedule of the tests compares the values.
    let pair = |v: CValue| match v {
        CValue::Pct(_, _, i) if !cx.dirt.naive => cx
            .dirt
            .signs
            .get(usize::from(i))
            .copied()
            .filter(|&s| s != NEVER),
        _ => None,
    };
    match p {
        CPred::Cross {
            s: CSeries::Mkt(_, _, k),
            above,
            v,
            prev,
        } => Some(match pair(*v) {
            Some(sign) => cross_sign(sign, *above, prev),
            None => cross(slot(*k), rhs(*v)?, *above, prev),
        }),
        CPred::Cmp {
            s: CSeries::Mkt(_, _, k),
            op,
            v,
            held_ms,
            since,
        } => Some(match pair(*v) {
            Some(sign) => compare_sign(sign, *op, *held_ms, since, cx.now),
            None => compare((slot(*k), rhs(*v)?), *op, *held_ms, since, cx.now),
        }),
        CPred::Phase(open) => Some(phase(*open, cx)),
        _ => None,
    }
}

/// How long `phase open` and `phase close` last, ms.
const PHASE_MS: u32 = 15 * 60_000;

/// `phase open` (the first 15 minutes) or `phase close` (the last 15, through the close).
#[inline(always)]
fn phase(open: bool, cx: &Ctx<'_>) -> Tri {
    let n = cx.now.ms();
    if open {
        Tri::of(n >= cx.open.ms() && n < cx.open.ms() + PHASE_MS)
    } else {
        Tri::of(n >= cx.close.ms().saturating_sub(PHASE_MS) && n <= cx.close.ms())
    }
}

#[inline(never)]
fn eval_pred(p: &mut CPred, cx: &Ctx<'_>) -> Tri {
    match p {
        CPred::Cross { s, above, v, prev } => {
            cross(read_series(*s, cx), read_value(*v, *s, cx), *above, prev)
        }
        CPred::Cmp {
            s,
            op,
            v,
            held_ms,
            since,
        } => compare(
            (read_series(*s, cx), read_value(*v, *s, cx)),
            *op,
            *held_ms,
            since,
            cx.now,
        ),
        CPred::Fired { plan, within_ms } => within(
            cx.ev.fired.get(cx.ev.current(*plan)).copied().flatten(),
            *within_ms,
            cx.now,
        ),
        CPred::Filled { plan, within_ms } => within(
            cx.ev.filled.get(cx.ev.current(*plan)).copied().flatten(),
            *within_ms,
            cx.now,
        ),
        CPred::Headline { within_ms } => within(cx.ev.headline, *within_ms, cx.now),
        CPred::TMinus(ms) => Tri::of(cx.now.ms() >= cx.close.ms().saturating_sub(*ms)),
        CPred::Phase(open) => phase(*open, cx),
    }
}

#[cfg(test)]
mod tri_tests {
    use super::Tri;

    /// AND and OR as the lesser and the greater are Kleene's tables.
    #[test]
    fn and_or_are_kleene() {
        use Tri::{F, T, U};
        let all = [F, U, T];
        // Row: the left operand, column: the right, both in the order F, U, T.
        let and = [[F, F, F], [F, U, U], [F, U, T]];
        let or = [[F, U, T], [U, U, T], [T, T, T]];
        for (i, a) in all.into_iter().enumerate() {
            for (j, b) in all.into_iter().enumerate() {
                assert_eq!(a.and(b), and[i][j], "{a:?} AND {b:?}");
                assert_eq!(a.or(b), or[i][j], "{a:?} OR {b:?}");
            }
        }
    }
}
