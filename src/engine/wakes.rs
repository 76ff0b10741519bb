//! WAKEs: when the author wants to be asked again (LANGUAGE.md §3, RUNTIME.md §6).
//!
//! A WAKE's trigger is compiled like a plan's and evaluated on every tape event. It fires on
//! the evaluation where its trigger **becomes** true after it armed (a level that stays true
//! does not fire again until it has been false or unknown; a level already true when the
//! wake arms does not fire), within its `BUDGET n wakes/day`. When several
//! wakes rise at one instant, the highest `PRIORITY` (then document order) fires and the
//! others are logged as suppressed: the author is asked once per instant. In a WAKE, `pnl`
//! is the whole book's P&L in R. Everything lands on the Bus: `wake-fired` and
//! `wake-suppressed`.

use super::trigger::{CTrigger, Tri};
use crate::market::Ts;

/// A compiled, armed WAKE.
#[derive(Debug)]
pub(crate) struct WakeRt {
    pub name: String,
    /// Who armed it (see `Engine::arm_document_as`).
    pub owner: Option<String>,
    /// The trigger as canonical text (the `why` of the Frame header).
    pub why: String,
    pub trig: CTrigger,
    pub deliver: Option<String>,
    pub priority: i64,
    pub budget: Option<u64>,
    pub used: u64,
    pub prev: Tri,
    /// False until the first evaluation after arming, which only records the value: a
    /// WAKE fires on a rise it observes, never on a level already true when it armed (so a
    /// turn that re-arms the wake that woke it does not wake the author again at once).
    pub primed: bool,
    /// Order of arming (ties in priority go to the earlier wake).
    pub seq: u64,
}

/// A wake that fired, for the session to deliver its View.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FiredWake {
    pub ts: Ts,
    pub wake: String,
    /// The trigger as canonical text.
    pub why: String,
    /// The View to deliver (`None`: the default view).
    pub deliver: Option<String>,
    pub priority: i64,
}
