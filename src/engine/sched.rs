//! Which plans step at an event: the plan loop's schedule (trigger module docs, "Parking").
//!
//! A plan waiting to fire whose WHEN and INVALIDATEs were all current and settled at its
//! latest step is *parked*: it is not stepped again until something it reads can change. The
//! schedule keeps one bit per position in the evaluation order:
//!
//! - `idle`: the plan needs no step unless woken (parked, dormant, closed, or *quiet*: holding
//!   with nothing left to fire but EXITs on levels, valued outside the loop; the `quiet`
//!   module);
//! - `wakeable`: of those, the parked ones and the quiet ones watching EXITs, which wake when
//!   their inputs move (a quiet plan with no EXIT left is woken only by [`Sched::wake`]).
//!
//! A plan subscribes two groups: its WHEN and INVALIDATEs, and its EXITs (when they read
//! series only as levels); either wakes it. A woken quiet plan whose EXITs' inputs did not
//! move stays quiet without a step (`engine::still_quiet`).
//!
//! At each event the plans to step are `!idle | (woken & wakeable)`, visited in evaluation
//! order (a bit scan, a word per 64 plans). *Woken* is the union of the subscriptions of what
//! moved at this refresh ([`Dirt`]): per series slot bit, the plans whose group reads the slot
//! as a value (`moved`) or as a level (`jumped`, becoming known or UNKNOWN); per percentile
//! slot bit (`pct_moved`); per pair slot bit (`pair_moved`: a series against another or its
//! percentile changed sign); the clock; the groups whose levels were crossed (`Dirt::woke`); and
//! a plan's ttl when the clock reaches it. So an event costs the plans that can change, not
//! the plans armed. Anything done to the plans from outside the plan loop (arming, a cancel,
//! STAND-DOWN, a pod halt) marks the schedule stale, and it is rebuilt from the plans' states
//! at the next event: every armed plan steps once and settles again.
//!
//! A plan whose orders rest with nothing else to do *sleeps* ([`Sched::sleep`]): idle, and
//! not woken by its groups, until an event of one of its orders' symbols (indexed by symbol:
//! a word per 64 plans) or its time (its next escalation or ttl). At its symbols' events it
//! steps light ([`Sched::take_light`]: its orders re-priced, and it sleeps on); at its time,
//! or when a light step came to something ([`Sched::unsleep`]), or at a rebuild, its sleep is
//! over.

use super::trigger::{Dirt, Park};
use crate::market::Ts;

/// The schedule (module docs).
#[derive(Debug, Clone, Default)]
pub(crate) struct Sched {
    /// Rebuild before the next event.
    pub stale: bool,
    idle: Vec<u64>,
    wakeable: Vec<u64>,
    /// Bits to step at this event (scratch, filled by [`Sched::plan`]).
    run: Vec<u64>,
    /// Per series slot bit: the positions whose group reads the slot as a value.
    sub_mkt: Vec<Vec<u64>>,
    /// Per series slot bit: the positions whose group reads the slot as a level.
    sub_lvl: Vec<Vec<u64>>,
    /// Per percentile slot bit.
    sub_pct: Vec<Vec<u64>>,
    /// Per pair slot bit (a series against another or its percentile: its sign changed).
    sub_pair: Vec<Vec<u64>>,
    /// The slot bits some group subscribes to, per kind (`sub_mkt`, `sub_lvl`, `sub_pct`,
    /// `sub_pair`): what moved outside them wakes no one.
    any: [u64; 4],
    /// The positions whose group reads the clock.
    sub_clock: Vec<u64>,
    /// Some group reads the clock.
    any_clock: bool,
    /// Per id in [`Dirt::touched`]: the position of the plan whose group it is.
    group_pos: Vec<u32>,
    /// Armed plans' ttls, sorted, and the first not yet reached.
    ttls: Vec<(Ts, u32)>,
    ttl_next: usize,
    /// The positions asleep on their resting orders ([`Sched::sleep`]), how many, and per
    /// position what ends its sleep: an event of one of its symbols (bits by symbol index) or
    /// its time.
    asleep: Vec<u64>,
    sleepers: usize,
    naps: Vec<(u64, Option<Ts>)>,
    /// Per symbol bit, the positions asleep on it.
    by_sym: Vec<Vec<u64>>,
    /// The symbol bits with a sleeper (a superset: a bit stays after its last sleep ends).
    sym_any: u64,
    /// No sleeper's time is before this (it may be early: the sleeper whose time it was may
    /// have woken since; the scan at that time sets it again).
    next_until: Option<Ts>,
    /// Of the positions to step at this event, the sleepers woken by an event of one of their
    /// symbols before their time: they step their orders only, and stay asleep unless
    /// something came of it ([`Sched::take_light`]).
    light: Vec<u64>,
    len: usize,
}

/// What the schedule needs of one plan, in evaluation order.
pub(crate) struct PlanView {
    /// Its group, when it can park at all.
    pub park: Option<Park>,
    /// Its EXITs' group, when it can watch them while quiet.
    pub park_exit: Option<Park>,
    /// Dormant or closed: never stepped unless armed.
    pub dead: bool,
    /// Its ttl, while armed.
    pub ttl: Option<Ts>,
}

fn set(bits: &mut [u64], k: usize, on: bool) {
    if let Some(w) = bits.get_mut(k / 64) {
        let b = 1u64 << (k % 64);
        if on {
            *w |= b;
        } else {
            *w &= !b;
        }
    }
}

#[inline(always)]
fn bit_at(bits: &[u64], k: usize) -> bool {
    bits.get(k / 64)
        .is_some_and(|w| w & (1u64 << (k % 64)) != 0)
}

/// `run |= woken & wakeable`.
fn or_woken(run: &mut [u64], woken: &[u64], wakeable: &[u64]) {
    for ((r, s), w) in run.iter_mut().zip(woken).zip(wakeable) {
        *r |= *s & *w;
    }
}

/// Step position `k` if it is wakeable.
fn wake_at(run: &mut [u64], wakeable: &[u64], k: usize) {
    if bit_at(wakeable, k) {
        set(run, k, true);
    }
}

/// `f` for every set bit of `mask`.
fn each_bit(mut mask: u64, mut f: impl FnMut(usize)) {
    while mask != 0 {
        f(mask.trailing_zeros() as usize);
        mask &= mask - 1;
    }
}

impl Sched {
    /// Positions scheduled (the plans at the latest rebuild).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Rebuild from the plans, in evaluation order (`touched_len`: ids in `Dirt::touched`).
    /// Every plan that is neither dormant nor closed steps at the next event.
    pub fn rebuild(&mut self, plans: impl Iterator<Item = PlanView>, touched_len: usize) {
        let plans: Vec<PlanView> = plans.collect();
        let words = plans.len().div_ceil(64);
        let empty = || vec![0u64; words];
        self.idle = empty();
        // The bits past the last plan: idle and never woken, so no scan reaches them.
        if let Some(last) = self.idle.last_mut()
            && !plans.len().is_multiple_of(64)
        {
            *last = u64::MAX << (plans.len() % 64);
        }
        self.any = [0; 4];
        self.any_clock = false;
        self.wakeable = empty();
        self.run = empty();
        self.sub_mkt = vec![Vec::new(); 64];
        self.sub_lvl = vec![Vec::new(); 64];
        self.sub_pct = vec![Vec::new(); 64];
        self.sub_pair = vec![Vec::new(); 64];
        self.sub_clock = empty();
        self.group_pos = vec![u32::MAX; touched_len];
        self.ttls.clear();
        self.ttl_next = 0;
        self.asleep = empty();
        self.light = empty();
        self.sleepers = 0;
        self.naps = vec![(0, None); plans.len()];
        self.by_sym = vec![Vec::new(); 64];
        self.sym_any = 0;
        self.next_until = None;
        for (k, p) in plans.iter().enumerate() {
            let pos = u32::try_from(k).unwrap_or(u32::MAX);
            set(&mut self.idle, k, p.dead);
            if let Some(t) = p.ttl.filter(|_| !p.dead) {
                self.ttls.push((t, pos));
            }
            for g in [p.park, p.park_exit].into_iter().flatten() {
                self.subscribe(&g, k, words);
            }
        }
        self.ttls.sort_unstable();
        self.len = plans.len();
        self.stale = false;
    }

    /// Position `k` wakes when an input of group `g` moves (a plan may have two groups: its
    /// WHEN and INVALIDATEs, and its EXITs).
    fn subscribe(&mut self, g: &Park, k: usize, words: usize) {
        let ([mkt, lvl, pct, pair], clock, id) = g.inputs();
        for ((subs, mask), any) in [
            (&mut self.sub_mkt, mkt),
            (&mut self.sub_lvl, lvl),
            (&mut self.sub_pct, pct),
            (&mut self.sub_pair, pair),
        ]
        .into_iter()
        .zip(&mut self.any)
        {
            *any |= mask;
            each_bit(mask, |b| {
                if subs[b].is_empty() {
                    subs[b] = vec![0u64; words];
                }
                set(&mut subs[b], k, true);
            });
        }
        if clock {
            set(&mut self.sub_clock, k, true);
            self.any_clock = true;
        }
        if let Some(x) = self.group_pos.get_mut(id as usize) {
            *x = u32::try_from(k).unwrap_or(u32::MAX);
        }
    }

    /// Fill the bits to step at this event from what moved (`now`: the engine's clock):
    /// `!idle | (woken & wakeable)`. Only the kinds and slot bits some group subscribes to
    /// are visited, so an event that moved nothing subscribed costs a word per 64 plans.
    #[inline(always)]
    pub fn plan(&mut self, d: &Dirt, now: Ts, sym_events: u64) {
        let words = self.idle.len();
        if self.run.len() != words {
            self.run.resize(words, 0);
        }
        if d.naive {
            self.run.fill(u64::MAX);
            return;
        }
        // The bits past the last plan are idle and not wakeable (`rebuild`).
        if let ([r], [i]) = (&mut self.run[..], &self.idle[..]) {
            // Up to 64 plans: one word, without the vectorized loop's set-up.
            *r = !*i;
        } else {
            for (r, i) in self.run.iter_mut().zip(&self.idle) {
                *r = !*i;
            }
        }
        let [mkt, lvl, pct, pair] = self.any;
        let woken = d.moved & mkt != 0
            || d.jumped & lvl != 0
            || d.pct_moved & pct != 0
            || d.pair_moved & pair != 0
            || (d.clock && self.any_clock)
            || !d.woke.is_empty()
            || self.ttls.get(self.ttl_next).is_some_and(|&(t, _)| now >= t);
        if woken {
            self.wake_moved(d, now);
        }
        if self.sleepers != 0 {
            self.wake_sleepers(sym_events, now);
        }
    }

    /// Step the sleepers whose time came (their sleep is over: their step sets their state
    /// again) or whose symbols had an event (`sym_events`): those step *light*
    /// ([`take_light`](Self::take_light)) and stay asleep.
    #[inline]
    fn wake_sleepers(&mut self, sym_events: u64, now: Ts) {
        if self.next_until.is_some_and(|t| now >= t) {
            let mut next: Option<Ts> = None;
            for w in 0..self.asleep.len() {
                each_bit(self.asleep[w], |b| {
                    let k = w * 64 + b;
                    match self.naps[k].1 {
                        Some(t) if now >= t => {
                            self.unsleep(k);
                            self.run[w] |= 1u64 << b;
                        }
                        Some(t) => next = Some(next.map_or(t, |n| n.min(t))),
                        None => {}
                    }
                });
            }
            self.next_until = next;
        }
        each_bit(sym_events & self.sym_any, |b| {
            for ((r, l), &m) in self
                .run
                .iter_mut()
                .zip(&mut self.light)
                .zip(&self.by_sym[b])
            {
                *r |= m;
                *l |= m;
            }
        });
    }

    /// Position `k` (an active plan whose orders rest with nothing to do:
    /// `engine::idle_resting`) needs no step until an event of one of `syms` or `until`: it is
    /// idle and not woken by its groups' inputs until then, save for light steps at its
    /// symbols' events. A sleeper put to sleep again has its sleep set anew.
    pub fn sleep(&mut self, k: usize, syms: u64, until: Option<Ts>) {
        if k >= self.naps.len() {
            // Not a scheduled position: it is not put to sleep (nor made idle).
            return;
        }
        set(&mut self.idle, k, true);
        set(&mut self.wakeable, k, false);
        self.unsleep(k);
        self.naps[k] = (syms, until);
        set(&mut self.asleep, k, true);
        self.sleepers += 1;
        let words = self.asleep.len();
        each_bit(syms, |b| {
            let subs = &mut self.by_sym[b];
            if subs.is_empty() {
                *subs = vec![0u64; words];
            }
            set(subs, k, true);
        });
        self.sym_any |= syms;
        if let Some(t) = until {
            self.next_until = Some(self.next_until.map_or(t, |n| n.min(t)));
        }
    }

    /// Position `k` is to step at this event as a sleeper woken by its symbols, before its
    /// time (`wake_sleepers`); it is asked once.
    #[inline(always)]
    pub fn take_light(&mut self, k: usize) -> bool {
        let light = bit_at(&self.light, k);
        if light {
            set(&mut self.light, k, false);
        }
        light
    }

    /// Position `k`'s sleep is over (its light step came to something, or its time): its
    /// state is set again by [`after_step`](Self::after_step) or [`sleep`](Self::sleep).
    pub fn unsleep(&mut self, k: usize) {
        set(&mut self.light, k, false);
        if bit_at(&self.asleep, k) {
            set(&mut self.asleep, k, false);
            self.sleepers -= 1;
            let syms = self.naps[k].0;
            each_bit(syms, |b| set(&mut self.by_sym[b], k, false));
        }
    }

    /// `run |= woken & wakeable`, for what moved at this event ([`plan`](Self::plan)).
    #[inline(never)]
    fn wake_moved(&mut self, d: &Dirt, now: Ts) {
        let (run, wakeable) = (&mut self.run, &self.wakeable);
        let [mkt, lvl, pct, pair] = self.any;
        for (subs, moved) in [
            (&self.sub_mkt, d.moved & mkt),
            (&self.sub_lvl, d.jumped & lvl),
            (&self.sub_pct, d.pct_moved & pct),
            (&self.sub_pair, d.pair_moved & pair),
        ] {
            each_bit(moved, |b| or_woken(run, &subs[b], wakeable));
        }
        if d.clock && self.any_clock {
            or_woken(run, &self.sub_clock, wakeable);
        }
        for &g in &d.woke {
            if let Some(&k) = self.group_pos.get(g as usize) {
                wake_at(run, wakeable, k as usize);
            }
        }
        while let Some(&(t, k)) = self.ttls.get(self.ttl_next) {
            if now < t {
                break;
            }
            wake_at(run, wakeable, k as usize);
            self.ttl_next += 1;
        }
    }

    /// The first position at or after `k` to step at this event.
    pub fn next(&self, k: usize) -> Option<usize> {
        let mut w = k / 64;
        let mut bits = self.run.get(w)? & (u64::MAX << (k % 64));
        loop {
            if bits != 0 {
                return Some(w * 64 + bits.trailing_zeros() as usize);
            }
            w += 1;
            bits = *self.run.get(w)?;
        }
    }

    /// Step position `k` at this event too (a plan armed by an earlier one's ARM).
    pub fn wake(&mut self, k: usize) {
        set(&mut self.run, k, true);
        set(&mut self.idle, k, false);
        set(&mut self.wakeable, k, false);
        self.unsleep(k);
    }

    /// After position `k` stepped: parked (waits for its inputs), idle (dormant, closed, or
    /// quiet: woken only by [`Sched::wake`]), or neither (steps at every event).
    pub fn after_step(&mut self, k: usize, parked: bool, idle: bool) {
        debug_assert!(
            !bit_at(&self.asleep, k),
            "a sleeper's sleep ends before its state is set"
        );
        set(&mut self.idle, k, parked || idle);
        set(&mut self.wakeable, k, parked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn views(n: usize, dead: &[usize]) -> Vec<PlanView> {
        (0..n)
            .map(|k| PlanView {
                park: None,
                park_exit: None,
                dead: dead.contains(&k),
                ttl: None,
            })
            .collect()
    }

    fn scheduled(s: &Sched) -> Vec<usize> {
        let mut out = Vec::new();
        let mut k = 0;
        while let Some(p) = s.next(k) {
            out.push(p);
            k = p + 1;
        }
        out
    }

    /// Past 64 plans the bit scan crosses words; dead plans are skipped, parked ones stay
    /// asleep until woken, and a wake ahead of the scan is seen at the same event.
    #[test]
    fn the_scan_visits_live_and_woken_plans_in_order() {
        let mut s = Sched::default();
        s.rebuild(views(130, &[0, 64, 129]).into_iter(), 0);
        let d = Dirt {
            epoch: 1,
            ..Dirt::default()
        };
        s.plan(&d, Ts(0), 0);
        let all = scheduled(&s);
        assert_eq!(all.len(), 127);
        assert!(!all.contains(&0) && !all.contains(&64) && !all.contains(&129));
        s.after_step(3, true, false);
        s.after_step(100, true, false);
        s.plan(&d, Ts(0), 0);
        let next = scheduled(&s);
        assert_eq!(next.len(), 125);
        assert!(!next.contains(&3) && !next.contains(&100));
        s.wake(100);
        assert!(scheduled(&s).contains(&100));
        assert_eq!(s.next(130), None);
    }

    /// A ttl wakes its parked plan once, at the first event at or after it.
    #[test]
    fn a_ttl_wakes_its_plan_once() {
        let mut s = Sched::default();
        let mut v = views(2, &[]);
        v[1].ttl = Some(Ts(5_000));
        s.rebuild(v.into_iter(), 0);
        s.after_step(0, true, false);
        s.after_step(1, true, false);
        let d = Dirt::default();
        s.plan(&d, Ts(4_999), 0);
        assert!(scheduled(&s).is_empty());
        s.plan(&d, Ts(5_000), 0);
        assert_eq!(scheduled(&s), vec![1]);
        s.plan(&d, Ts(6_000), 0);
        assert!(scheduled(&s).is_empty());
    }

    /// A sleeper steps light at each event of one of its symbols and stays asleep; at its
    /// time it steps and its sleep is over. Other symbols' events and its groups' inputs do
    /// not wake it, and an outside wake or a light step that came to something ends it.
    #[test]
    fn a_sleeper_wakes_at_its_symbols_or_its_time() {
        let mut s = Sched::default();
        s.rebuild(views(3, &[]).into_iter(), 0);
        let d = Dirt {
            clock: true,
            ..Dirt::default()
        };
        s.after_step(0, true, false);
        s.sleep(1, 0b10, Some(Ts(9_000)));
        s.after_step(2, false, false);
        s.plan(&d, Ts(1_000), 0b01);
        assert_eq!(scheduled(&s), vec![2]);
        assert!(!s.take_light(1));
        s.plan(&d, Ts(2_000), 0b11);
        assert_eq!(scheduled(&s), vec![1, 2]);
        assert!(s.take_light(1), "woken by its symbol: a light step");
        assert!(!s.take_light(1), "asked once");
        // Still asleep: the next event of another symbol passes it by.
        s.plan(&d, Ts(8_999), 0b01);
        assert_eq!(scheduled(&s), vec![2]);
        s.plan(&d, Ts(9_000), 0b10);
        assert_eq!(scheduled(&s), vec![1, 2]);
        assert!(!s.take_light(1), "its time: a full step");
        // Its sleep is over: idle only as its step leaves it.
        s.after_step(1, false, false);
        s.plan(&d, Ts(9_100), 0);
        assert_eq!(scheduled(&s), vec![1, 2]);
        // A light step that came to something: its sleep ends there.
        s.sleep(1, 0b10, None);
        s.plan(&d, Ts(9_200), 0b10);
        assert!(s.take_light(1));
        s.unsleep(1);
        s.after_step(1, false, true);
        s.plan(&d, Ts(9_300), 0b10);
        assert_eq!(scheduled(&s), vec![2]);
        s.sleep(1, 0b10, None);
        s.wake(1);
        s.after_step(1, false, true);
        s.plan(&d, Ts(9_500), 0b10);
        assert_eq!(
            scheduled(&s),
            vec![2],
            "woken from outside: its sleep is over"
        );
    }
}
