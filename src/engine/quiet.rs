//! Quiet plans: holding, with nothing left to do but hold.
//!
//! An active plan with a position, no order working and no INVALIDATE, CANCEL-IF, RELOAD, TP
//! or EXIT left to fire ([`quiet`](super::quiet)) would do one thing at its step: revalue
//! itself, so that its P&L (`pnl_now`, read by WAKEs and PODs) and its maximum adverse
//! excursion (`mae`, written at the close) follow the market. Such a plan is taken out of the
//! plan loop (the schedule holds it idle) and valued here instead, until its ttl, or an order
//! placed for it from outside the loop (a pod halt's flatten), gives it something to do.
//!
//! EXITs left do not stop a plan being quiet when they read series (and the clock) only as
//! levels against constants (`spot crosses below 4790`, `T-15`, `phase close`) and were
//! settled and not true at its latest step: such an EXIT keeps its value until one of its
//! levels is crossed or its series becomes known or UNKNOWN, and the schedule wakes the plan
//! then (`Park::of_levels`, the `sched` module). A woken plan whose EXITs' inputs did not
//! move at the event (woken by its WHEN's inputs, say) stays quiet without a step; otherwise
//! it leaves the quiet set, brought up to date, steps, and may join again. An EXIT that reads
//! a series as a value (`spot < vwap`) or the clock (`held`) would wake it at almost every
//! event, so such a plan is stepped as before.
//!
//! Valuing it costs nothing per plan when it holds one instrument of shares, the common case
//! (a plan that bought and rides to the close): its value is `realised + qty·mult·px − cost`,
//! with everything but `px` fixed while it is quiet, so it is monotone in the price. A
//! [`Holders`] group per instrument keeps, per tape event, only the lowest and highest price
//! seen (and whether the quote went missing) since its members were last brought up to date;
//! a *fold* brings them up to date: `pnl_now` at the latest price, `mae` the least of what it
//! was, the value at the lowest and at the highest price (and `realised`, the value with no
//! quote, if the quote went missing). That is exactly the minimum the plan-by-plan valuation
//! reaches over the same events, because a monotone value over a set of prices is least at one
//! of its ends. Folds happen when something reads the values (before WAKEs and PODs are
//! evaluated, at the close), when a member joins or leaves, and when the schedule is rebuilt;
//! the work per event is one price comparison per instrument, whatever the number of plans
//! holding it.
//!
//! Anything else quiet (options, several legs, amounts too large for the fixed-point path) is
//! revalued plan by plan at every event, as its step would.

use super::{FIXED_MAX, InstKind, PlanRt, Shared, quote, revalue};

/// The quiet plans holding one instrument of shares, valued lazily (module docs).
#[derive(Debug)]
pub(super) struct Holders {
    /// The instrument.
    pub inst: usize,
    /// The plans, by index.
    pub members: Vec<usize>,
    /// The largest `|qty·mult|` among the members.
    kmax: i128,
    /// The instrument's symbol version at the latest price taken.
    ver: u64,
    /// The latest price (`None`: no quote).
    last: Option<i64>,
    /// The lowest and highest price since the latest fold (`None`: none since).
    span: Option<(i64, i64)>,
    /// The quote went missing since the latest fold.
    missing: bool,
}

/// Can this quiet plan be valued lazily: one leg, shares, within the fixed-point path?
pub(super) fn lazy_inst(p: &PlanRt, sh: &Shared) -> Option<usize> {
    let [l] = p.legs.as_slice() else {
        return None;
    };
    let ok = p.had_fill
        && matches!(sh.insts[l.inst].kind, InstKind::Shares)
        && l.pos.qty != 0
        && i128::from(l.pos.qty).abs() < FIXED_MAX
        && l.pos.cost.abs() < FIXED_MAX;
    ok.then_some(l.inst)
}

/// `qty·mult` of a lazily valued plan's one leg.
fn k_of(p: &PlanRt) -> i128 {
    let pos = &p.legs[0].pos;
    i128::from(pos.qty) * i128::from(pos.mult)
}

/// The plan's value at price `px` (`None`: no quote), as [`revalue`] computes it.
fn value_at(p: &PlanRt, px: Option<i64>) -> i64 {
    let pos = &p.legs[0].pos;
    match px {
        Some(px) => {
            let open = (i128::from(px) * k_of(p) - pos.cost) as i64;
            pos.realised.saturating_add(open)
        }
        None => pos.realised,
    }
}

impl Holders {
    /// A new group for `inst`, its price taken now (its first member's step just valued it).
    pub fn new(inst: usize, sh: &mut Shared) -> Holders {
        let mut h = Holders {
            inst,
            members: Vec::new(),
            kmax: 0,
            ver: u64::MAX,
            last: None,
            span: None,
            missing: false,
        };
        h.take(sh);
        h.span = None;
        h.missing = false;
        h
    }

    /// Take the instrument's price if its symbol moved. `false`: the price is out of the
    /// fixed-point path's range for some member (the caller folds and values them one by
    /// one from now on).
    pub fn take(&mut self, sh: &mut Shared) -> bool {
        let ir = &sh.insts[self.inst];
        let ver = sh.syms[ir.sym_i].1;
        if ver == self.ver {
            return true;
        }
        if ir.stamp != ver {
            quote(sh, self.inst);
        }
        let px = sh.insts[self.inst].q.as_ref().map(|q| q.intrinsic.raw());
        if let Some(x) = px
            && i128::from(x).abs() * self.kmax >= FIXED_MAX
        {
            return false;
        }
        self.ver = ver;
        self.last = px;
        match px {
            Some(x) => {
                self.span = Some(self.span.map_or((x, x), |(lo, hi)| (lo.min(x), hi.max(x))));
            }
            None => self.missing = true,
        }
        true
    }

    /// Bring every member's `pnl_now` and `mae` up to date (module docs).
    pub fn fold(&mut self, plans: &mut [PlanRt], sh: &Shared) {
        // Valued as of the latest price taken: a fold before this event's take (a plan
        // leaving at its ttl) leaves the step's revaluation to take this event's price.
        let seen = Some((sh.trades, self.ver));
        for &i in &self.members {
            let p = &mut plans[i];
            let mut low = p.mae;
            if let Some((lo, hi)) = self.span {
                low = low.min(value_at(p, Some(lo))).min(value_at(p, Some(hi)));
            }
            if self.missing {
                low = low.min(value_at(p, None));
            }
            p.mae = low;
            p.pnl_now = value_at(p, self.last);
            p.valued = seen;
        }
        self.span = None;
        self.missing = false;
    }

    /// Add plan `i` (folding the others first: its span starts now). `false`: the latest
    /// price is out of the fixed-point path's range for it (it is valued one by one).
    pub fn join(&mut self, i: usize, plans: &mut [PlanRt], sh: &Shared) -> bool {
        let k = k_of(&plans[i]).abs();
        if self
            .last
            .is_some_and(|x| i128::from(x).abs() * k >= FIXED_MAX)
        {
            return false;
        }
        self.fold(plans, sh);
        self.kmax = self.kmax.max(k);
        self.members.push(i);
        true
    }

    /// Remove plan `i` (folding first).
    pub fn leave(&mut self, i: usize, plans: &mut [PlanRt], sh: &Shared) {
        self.fold(plans, sh);
        self.members.retain(|&m| m != i);
        self.kmax = self
            .members
            .iter()
            .map(|&m| k_of(&plans[m]).abs())
            .max()
            .unwrap_or(0);
    }
}

/// Value the quiet plans not valued lazily, one by one, as their steps would.
pub(super) fn revalue_each(each: &[usize], plans: &mut [PlanRt], sh: &mut Shared) {
    for &i in each {
        revalue(&mut plans[i], sh);
    }
}
