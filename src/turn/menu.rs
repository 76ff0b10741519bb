//! The menu: which moves are legal at this wake (TURNS.md §3, seed 002).
//!
//! The desk, not the author, decides what is on offer; the prompt states it, and a move
//! outside it is *invalid* with a message naming the menu. The menu changes only at turn
//! boundaries: it is computed from the wake phase, the profile and how many SHOW VIEW
//! requests this wake has already had answered.

use super::profile::Profile;
use serde::{Deserialize, Serialize};

/// The phase of the wake a turn answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WakePhase {
    /// The OPEN wake (where the view-shop may run).
    Open,
    /// Any wake after the open.
    Mid,
}

impl WakePhase {
    /// `open` or `mid`.
    pub fn name(self) -> &'static str {
        match self {
            WakePhase::Open => "open",
            WakePhase::Mid => "mid",
        }
    }

    /// How the phase reads in a message.
    pub fn describe(self) -> &'static str {
        match self {
            WakePhase::Open => "the OPEN wake",
            WakePhase::Mid => "a mid-session wake",
        }
    }
}

/// One legal move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Move {
    /// `SHOW VIEW …`: render now and ask again.
    ShowView,
    /// A module of PLAN / WAKE / VIEW (and USING) statements superseding the standing book.
    Supersede,
    /// `STAND-DOWN <reason>`.
    StandDown,
    /// `CANCEL <name>`.
    Cancel,
    /// Only comments (or nothing).
    Pass,
}

impl Move {
    /// How the move is written, for menus and messages.
    pub fn label(self) -> &'static str {
        match self {
            Move::ShowView => "SHOW VIEW",
            Move::Supersede => "PLAN/WAKE/VIEW supersede",
            Move::StandDown => "STAND-DOWN",
            Move::Cancel => "CANCEL",
            Move::Pass => "pass (only comments)",
        }
    }
}

/// Statement heads a supersede module may hold. POD, BOOK, GRADE and IMPORT configure the
/// desk or run research; they are not an author's move at a wake.
pub const SUPERSEDE_HEADS: &[&str] = &["PLAN", "WAKE", "VIEW", "USING"];

/// The moves on offer at one wake.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Menu {
    /// The wake's phase.
    pub phase: WakePhase,
    /// The profile in force.
    pub profile: Profile,
    /// Legal moves, in the order the prompt lists them.
    pub moves: Vec<Move>,
    /// SHOW VIEW requests allowed per wake under this profile.
    pub view_request_cap: u32,
    /// SHOW VIEW requests already answered at this wake.
    pub views_requested: u32,
}

impl Menu {
    /// The menu for a wake. SHOW VIEW is offered only at OPEN under a view-shop profile, and
    /// only while the wake's `view_request_cap` is not spent.
    pub fn for_wake(phase: WakePhase, profile: Profile, views_requested: u32) -> Menu {
        let cap = profile.view_request_cap();
        let mut moves = Vec::new();
        if phase == WakePhase::Open && profile.view_shop() && views_requested < cap {
            moves.push(Move::ShowView);
        }
        moves.extend([Move::Supersede, Move::StandDown, Move::Cancel, Move::Pass]);
        Menu {
            phase,
            profile,
            moves,
            view_request_cap: cap,
            views_requested,
        }
    }

    /// Is this move on the menu?
    pub fn allows(&self, m: Move) -> bool {
        self.moves.contains(&m)
    }

    /// The menu in one line: `{PLAN/WAKE/VIEW supersede, STAND-DOWN, CANCEL, pass (only comments)}`.
    pub fn describe(&self) -> String {
        let items: Vec<String> = self
            .moves
            .iter()
            .map(|m| match m {
                Move::ShowView => format!(
                    "SHOW VIEW (up to {} per wake, {} used)",
                    self.view_request_cap, self.views_requested
                ),
                m => m.label().to_string(),
            })
            .collect();
        format!("{{{}}}", items.join(", "))
    }

    /// Why a move is not on the menu, naming the menu (the guided message).
    pub fn refusal(&self, m: Move, what: &str) -> String {
        let why = match m {
            Move::ShowView if self.phase == WakePhase::Open && self.profile.view_shop() => {
                format!(
                    "the view-request cap of {} per wake is spent",
                    self.view_request_cap
                )
            }
            _ => format!(
                "it is not on the menu at {} under profile {}",
                self.phase.describe(),
                self.profile
            ),
        };
        format!(
            "{what}: {why}; the menu is {}. Reply with one of those",
            self.describe()
        )
    }

    /// The menu as prompt lines (for the card and the profiles' interpolation).
    pub fn prompt_text(&self) -> String {
        let mut s = format!(
            "At {} (profile {}) you may reply with:\n",
            self.phase.describe(),
            self.profile
        );
        for m in &self.moves {
            let line = match m {
                Move::ShowView => format!(
                    "- SHOW VIEW <name> [budget <n>] with panes: render them now and ask me again (up to {} per wake, {} used); the reason is a trailing # comment",
                    self.view_request_cap, self.views_requested
                ),
                Move::Supersede => "- a module of PLAN / WAKE / VIEW (and USING) statements: it replaces the standing book; a WAKE schedules your next wake, a VIEW is a standing screen".to_string(),
                Move::StandDown => "- STAND-DOWN <reason>: de-arm the standing book; inventory rides its TP/EXIT".to_string(),
                Move::Cancel => "- CANCEL <name>: pull that resting order or plan".to_string(),
                Move::Pass => "- only # comments: pass; the standing book keeps managing".to_string(),
            };
            s.push_str(&line);
            s.push('\n');
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn show_view_only_at_open_under_viewshop_and_under_cap() {
        assert!(Menu::for_wake(WakePhase::Open, Profile::ViewshopV2, 0).allows(Move::ShowView));
        assert!(Menu::for_wake(WakePhase::Open, Profile::ViewshopV2, 1).allows(Move::ShowView));
        assert!(!Menu::for_wake(WakePhase::Open, Profile::ViewshopV2, 2).allows(Move::ShowView));
        assert!(!Menu::for_wake(WakePhase::Mid, Profile::ViewshopV2, 0).allows(Move::ShowView));
        assert!(!Menu::for_wake(WakePhase::Open, Profile::AuthoringV2, 0).allows(Move::ShowView));
        let m = Menu::for_wake(WakePhase::Open, Profile::ViewshopV2, 2);
        assert!(m.refusal(Move::ShowView, "SHOW VIEW").contains("cap of 2"));
    }
}
