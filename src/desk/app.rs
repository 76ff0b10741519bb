//! The desk's screen state: focus, dialogs, the editor, selections. Pure state: key events
//! in, [`Command`]s to the [`Session`](crate::session::Session) out; no terminal and no
//! market, engine or agent state — [`App::tick`] takes the latest [`SessionSnapshot`].

use super::chart::{ChartState, Move};
use super::editor::Editor;
use super::handle::SessionHandle;
use super::keys::{Action, KeyMap};
use super::log::Log;
use super::theme::Theme;
use crate::lang;
use crate::market::Ts;
use crate::session::agent::Proposal;
use crate::session::owner::{AgentStatus, NoticeLevel, TurnLine};
use crate::session::{Command, SessionSnapshot};
use crate::tokens::{self, Encoding};
use crate::turn::{self, AuthorKind, Outcome, Profile, WakePhase};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::sync::Arc;

/// The panes, in focus order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pane {
    /// The price chart.
    Chart,
    /// The Frame as the agent receives it.
    View,
    /// Armed plans.
    Plans,
    /// Bus / Blotter.
    Bus,
    /// Journal.
    Journal,
    /// Token meters.
    Tokens,
    /// The turn editor.
    Editor,
}

impl Pane {
    /// Every pane in focus order.
    pub const ALL: [Pane; 7] = [
        Pane::Chart,
        Pane::View,
        Pane::Plans,
        Pane::Bus,
        Pane::Journal,
        Pane::Tokens,
        Pane::Editor,
    ];

    /// The pane's title.
    pub fn title(self) -> &'static str {
        match self {
            Pane::Chart => "Chart",
            Pane::View => "View",
            Pane::Plans => "Plans",
            Pane::Bus => "Bus",
            Pane::Journal => "Journal",
            Pane::Tokens => "Tokens",
            Pane::Editor => "Editor",
        }
    }
}

/// A dialog over the panes.
#[derive(Debug, Clone, PartialEq)]
pub enum Modal {
    /// Every key.
    Help,
    /// A one-line prompt.
    Prompt {
        /// What is asked.
        kind: PromptKind,
        /// The text so far.
        input: String,
    },
    /// SHOW VIEW: panes of the catalog, checked or not.
    ViewPicker {
        /// Cursor.
        sel: usize,
        /// Checked, per catalog entry.
        checked: Vec<bool>,
    },
    /// A plan's canonical text.
    PlanText(String),
    /// One Bus event, pretty-printed.
    Event(String),
    /// The editor's first coded error, whole (its area under the text cut it).
    Error(String),
    /// A yes / no question before a restart or an undo.
    Confirm(Confirm),
}

/// What a confirmation asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confirm {
    /// Restart the session (the book and the clock back to the open).
    Restart,
    /// Take back the person's last turn.
    Undo {
        /// `10:05 turn (armed my-dip)`.
        turn: String,
        /// The agent's turns after it that go with it (the session goes back to the turn:
        /// docs/desk.md, "Undo"), in words: `house's supersede @ wake open (routed 09:31)`,
        /// `your reject of house's supersede @ wake open`.
        also: Vec<String>,
    },
    /// Take back the person's accept or reject of a proposal: the proposal waits again.
    UndoDecision {
        /// `reject of house's supersede @ wake open (decided 09:30)`.
        what: String,
    },
    /// Act while turns of the person's are recorded ahead of the tape (after a seek back or
    /// Home): the act branches the session and drops them.
    Branch {
        /// What is dropped: `your 10:00 turn (PLAN calls …)`.
        dropped: String,
        /// The act asked about, taken on yes.
        act: PersonAct,
    },
}

/// An act of the person's that the session takes at the tape point: with acts recorded
/// ahead of the tape, it branches the session and drops them ([`App::person`] asks first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PersonAct {
    /// A turn (the editor's, a STAND-DOWN, a SHOW VIEW from the picker).
    Turn(String),
    /// Accept the waiting proposal.
    Accept,
    /// Reject the waiting proposal.
    Reject,
    /// Co-pilot on or off.
    Copilot,
    /// Detach or attach the agent.
    Attach,
}

/// What a prompt asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKind {
    /// The STAND-DOWN reason.
    StandDown,
    /// A tape time to seek to.
    Seek,
    /// The Log's filter.
    Filter,
}

/// Bus / Blotter toggle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusMode {
    /// The live event stream.
    Bus,
    /// Positions, orders, fills, P&L.
    Blotter,
}

/// The desk.
pub struct App {
    /// The session (the one owner of the run).
    pub session: SessionHandle,
    /// The Editor text last sent to the session ([`Command::Draft`]).
    draft_sent: String,
    /// The latest snapshot.
    pub snap: Arc<SessionSnapshot>,
    /// The focused pane.
    pub focus: Pane,
    /// The pane focused before the editor (Esc goes back).
    pub prev_focus: Pane,
    /// On a compact screen, the pane shown in the tabbed column.
    pub tab: Pane,
    /// The turn editor.
    pub editor: Editor,
    /// Available themes.
    pub themes: Vec<Theme>,
    /// The theme in use.
    pub theme: usize,
    /// Where `t` saves its choice (the config directory's `desk.toml`; `None`: not saved).
    pub theme_dir: Option<std::path::PathBuf>,
    /// The key map.
    pub keys: KeyMap,
    /// The open dialog.
    pub modal: Option<Modal>,
    /// Bus or Blotter.
    pub bus_mode: BusMode,
    /// Selected plan row.
    pub plan_sel: usize,
    /// Scroll of the View pane, in drawn rows (a wrapped line of the Frame takes several).
    pub view_scroll: u16,
    /// The View's rows and the rows that showed at the last draw: (total, height). The
    /// View's keys scroll within them.
    pub view_rows: std::cell::Cell<(usize, usize)>,
    /// How far the Blotter is scrolled, in rows (0: its glance; `ui::blotter_view`).
    pub blotter_scroll: usize,
    /// The Blotter's furthest scroll and its page, as last drawn.
    pub blotter_rows: std::cell::Cell<(usize, usize)>,
    /// Whether the last draw was compact (the tabbed column): `b` then shows the Bus tab.
    pub compact: std::cell::Cell<bool>,
    /// The last message of the screen's own (a theme switch, a bad seek time).
    pub message: Option<String>,
    /// Notices of the session already shown.
    notices_seen: usize,
    /// The message as last seen by [`tick`](Self::tick), the tape time it is of (a notice's
    /// own time, else the clock when it was set) and the wall time it was first shown.
    message_seen: (Option<String>, Ts, std::time::Instant),
    /// How long a message stays at least, in wall time, however fast the tape plays; after
    /// that it goes once the tape is [`MESSAGE_TAPE_MS`] past it, or back before it.
    pub message_hold: std::time::Duration,
    /// The number of the next turn submitted, and the one whose result is awaited with
    /// the editor text it was submitted from.
    next_submit: u64,
    awaiting_submit: Option<(u64, Option<String>)>,
    /// The undo sent and not yet answered (its number), with what its dialog called the
    /// turn (`10:05 turn (armed my-dip)`), so the notice after it names the same.
    awaiting_undo: Option<(u64, Option<String>)>,
    /// What the undo dialog on screen calls the turn it takes back (`None`: a turn ahead of
    /// the tape, which the session's own summary names better).
    undo_said: Option<String>,
    /// The footer showed the message over a waiting proposal at the last look
    /// ([`message_over_proposal`](Self::message_over_proposal)): when that changes, the
    /// footer is drawn again.
    footer_over: bool,
    /// The proposal waiting (its call) and the wall time the desk first saw it: a message
    /// said before it does not take its place on the footer.
    proposal_since: Option<(u64, std::time::Instant)>,
    /// The call a live author is writing (its wake and when it was asked, on the tape) and
    /// the wall time the desk first saw it out, with the whole seconds the status line last
    /// showed: `writing 3s` counts up while the author thinks, a redraw each second.
    writing_since: Option<(WritingCall, std::time::Instant, u64)>,
    /// Warnings from config loading (themes, keys).
    pub warnings: Vec<String>,
    /// Set when the user quits.
    pub quit: bool,
    /// Prompt-side token counts: (card, menu).
    pub prompt_tokens: (usize, usize),
    /// Dollars per million tokens, (sent, written): `--price-in` / `--price-out`; the
    /// Tokens pane shows a cost only with them.
    pub price: Option<(f64, f64)>,
    /// The chart's interval, symbol, zoom and cursor.
    pub chart: ChartState,
    /// The Bus pane's log: decoded rows, filter, selection.
    pub log: Log,
    /// How far the help or an inspected event is scrolled, in drawn rows.
    pub modal_scroll: u16,
    /// The open dialog's rows and the rows that showed at the last draw: (total, height).
    pub modal_rows: std::cell::Cell<(usize, usize)>,
}

/// A live author's call out, as the snapshot names it: its wake and when it was asked.
/// A call a live author writes: its wake, when it was asked, and the run segment it was
/// asked in (after Home the same wake's ask is a new call, the old one abandoned).
type WritingCall = (String, crate::market::Ts, u32);

/// The catalog spelling of each pane when picked in SHOW VIEW (defaults for required
/// arguments).
pub fn pane_spelling(name: &str) -> &'static str {
    match name {
        "tape" => "tape 5m",
        "levels" => "levels",
        "chain" => "chain 0dte strikes 3",
        "gex" => "gex 0dte",
        "skew" => "skew 25d",
        "velocity" => "velocity 1m",
        "kernel" => "kernel",
        "plans" => "plans",
        "blotter" => "blotter",
        "journal" => "journal",
        "headlines" => "headlines last 3",
        _ => "levels",
    }
}

/// How far (tape milliseconds) the tape plays past a message before it goes: five minutes.
pub const MESSAGE_TAPE_MS: u32 = 5 * 60 * 1000;

impl App {
    /// A desk over a session.
    pub fn new(mut session: SessionHandle, themes: Vec<Theme>, keys: KeyMap) -> App {
        let snap = session.latest();
        let themes = if themes.is_empty() {
            vec![super::theme::default_theme()]
        } else {
            themes
        };
        let menu = turn::Menu::for_wake(WakePhase::Mid, Profile::AuthoringV2, 0).prompt_text();
        let count = |s: &str| tokens::count(s, Encoding::Cl100k).unwrap_or(0);
        let card = lang::card::build(&menu, None, &count)
            .map(|c| c.tokens)
            .unwrap_or(0);
        let notices_seen = snap.notices_total;
        // (A warning given at the open, a reopened file's last line cut short, is put first
        // by `desk::opening_message`.)
        let message = snap.agent.as_ref().map(|a| {
            format!(
                "agent {} seated: it is asked at every wake{}",
                a.name,
                if a.copilot {
                    " (co-pilot: you accept or reject)"
                } else {
                    ""
                }
            )
        });
        let clock = snap.clock;
        let mut app = App {
            session,
            snap,
            focus: Pane::Chart,
            prev_focus: Pane::Chart,
            tab: Pane::View,
            editor: Editor::default(),
            themes,
            theme: 0,
            theme_dir: None,
            keys,
            modal: None,
            bus_mode: BusMode::Bus,
            plan_sel: 0,
            view_scroll: 0,
            view_rows: std::cell::Cell::new((0, 0)),
            blotter_scroll: 0,
            blotter_rows: std::cell::Cell::new((0, 0)),
            compact: std::cell::Cell::new(false),
            // The seated message is looked at now: a proposal that appears after it is
            // not hidden by it.
            message_seen: (message.clone(), clock, std::time::Instant::now()),
            message,
            notices_seen,
            message_hold: std::time::Duration::from_secs(3),
            next_submit: 1,
            awaiting_submit: None,
            awaiting_undo: None,
            undo_said: None,
            footer_over: false,
            proposal_since: None,
            writing_since: None,
            warnings: Vec::new(),
            quit: false,
            prompt_tokens: (card, count(&menu)),
            price: None,
            chart: ChartState::default(),
            log: Log::default(),
            modal_scroll: 0,
            modal_rows: std::cell::Cell::new((0, 0)),
            draft_sent: String::new(),
        };
        app.log.sync(&app.snap);
        app.editor.set_scope(&app.snap.standing);
        // A reopened session's draft, written and not submitted when the person left.
        if let Some(d) = app.snap.draft_opened.clone() {
            app.editor.set_text(&d);
            let back = format!(
                "your draft, not submitted when you left, is back in the Editor ({} focuses it, {} submits)",
                app.keys.label(Action::Editor),
                app.keys.label(Action::Submit)
            );
            app.message = Some(match app.message.take() {
                Some(m) => format!("{m}; {back}"),
                None => back,
            });
        }
        app.draft_sent = app.editor.text();
        app
    }

    /// Use the theme called `name`; `false` (the theme unchanged) when none is.
    pub fn set_theme(&mut self, name: &str) -> bool {
        match self.themes.iter().position(|t| t.name == name) {
            Some(i) => {
                self.theme = i;
                true
            }
            None => false,
        }
    }

    /// The themes' names, in `t`'s order.
    pub fn theme_names(&self) -> Vec<String> {
        self.themes.iter().map(|t| t.name.clone()).collect()
    }

    /// The theme in use.
    pub fn theme(&self) -> &Theme {
        &self.themes[self.theme.min(self.themes.len() - 1)]
    }

    /// The seated agent, as the session reports it.
    pub fn agent(&self) -> Option<&AgentStatus> {
        self.snap.agent.as_ref()
    }

    /// Is an agent seated and attached?
    pub fn agent_attached(&self) -> bool {
        self.agent().is_some_and(|a| a.attached)
    }

    /// Co-pilot (agent turns wait for the person) or autopilot.
    pub fn copilot(&self) -> bool {
        self.agent().is_some_and(|a| a.copilot)
    }

    /// How loud the message is: the level of the session's notice it shows (a message of
    /// the screen's own is information).
    pub fn message_level(&self) -> NoticeLevel {
        if self.message.is_some() && self.message == self.snap.save_error {
            return NoticeLevel::Error;
        }
        self.message
            .as_ref()
            .and_then(|m| self.snap.notices.iter().rev().find(|n| n.text == *m))
            .map_or(NoticeLevel::Info, |n| n.level)
    }

    /// A message goes stale: once shown for [`message_hold`](Self::message_hold), it is
    /// cleared when the tape has played [`MESSAGE_TAPE_MS`] past it or was taken back before
    /// it (a veto at 09:34 is not the news at 16:00, nor after a seek to 09:00).
    fn age_message(&mut self) -> bool {
        if self.message != self.message_seen.0 {
            self.message_seen = (
                self.message.clone(),
                self.snap.clock,
                std::time::Instant::now(),
            );
            return false;
        }
        let (at, since) = (self.message_seen.1, self.message_seen.2);
        let now = self.snap.clock;
        let stale = now < at || now.0.saturating_sub(at.0) > MESSAGE_TAPE_MS;
        if self.message.is_some() && stale && since.elapsed() >= self.message_hold {
            self.message = None;
            self.message_seen.0 = None;
            return true;
        }
        false
    }

    /// Follow the call a live author is writing: a new call starts its wall clock (the
    /// desk's, from when it first saw it out). Is there a new second to show?
    fn time_writing(&mut self) -> bool {
        let segment = self.snap.segment;
        let call = self
            .agent()
            .and_then(|a| a.waiting.clone())
            .map(|(wake, at)| (wake, at, segment));
        match (call, &mut self.writing_since) {
            (None, since) => since.take().is_some(),
            (Some(call), Some((seen, at, shown))) if *seen == call => {
                let secs = at.elapsed().as_secs();
                std::mem::replace(shown, secs) != secs
            }
            (Some(call), since) => {
                *since = Some((call, std::time::Instant::now(), 0));
                true
            }
        }
    }

    /// How long (wall time) the live author has been writing its answer, while it writes.
    pub fn writing_for(&self) -> Option<std::time::Duration> {
        self.writing_since.as_ref().map(|(_, at, _)| at.elapsed())
    }

    /// The agent's answer waiting for the person.
    pub fn proposal(&self) -> Option<&Proposal> {
        self.agent().and_then(|a| a.proposal.as_ref())
    }

    /// Does the footer show the message in place of the waiting proposal's line? The
    /// proposal's line holds the footer while it waits, so a message said then (the answer
    /// to the person's own act: an undo, `nothing to undo`, a theme, a refused turn, a veto)
    /// is shown first, for [`message_hold`](Self::message_hold), with the proposal's keys
    /// kept at the right; then the proposal's line comes back. The proposal's own notice is
    /// not shown so: its line says the same.
    pub fn message_over_proposal(&self) -> bool {
        let (Some(m), Some(p)) = (self.message.as_ref(), self.proposal()) else {
            return false;
        };
        let name = self.agent().map_or("", |a| a.name.as_str());
        // Said since the proposal appeared (or set by a key and not yet looked at), and
        // not up for its hold yet.
        let since = self
            .proposal_since
            .filter(|(call, _)| *call == p.call)
            .map(|(_, at)| at);
        let fresh = self.message_seen.0.as_ref() != Some(m)
            || (since.is_some_and(|at| self.message_seen.2 >= at)
                && self.message_seen.2.elapsed() < self.message_hold);
        // A notice the tape has left behind (played more than MESSAGE_TAPE_MS past it, or
        // taken back before it) is not shown over a waiting proposal: after a seek to 09:45
        // the 09:34 veto held the footer and the proposal's line, with its age, did not show.
        let (at, now) = (self.message_seen.1, self.snap.clock);
        let current = now >= at && now.0.saturating_sub(at.0) <= MESSAGE_TAPE_MS;
        fresh && current && *m != crate::session::owner::proposal_notice(name, p)
    }

    /// The Editor's text as it stands goes to the session, for the `left` record: a draft
    /// not submitted is kept when the person leaves (or a signal closes the desk), and
    /// `--open` gives it back.
    pub fn sync_draft(&mut self) {
        let draft = self.editor.text();
        if draft != self.draft_sent {
            self.session.send(Command::Draft(draft.clone()));
            self.draft_sent = draft;
        }
    }

    /// Send a command to the session.
    pub fn send(&mut self, c: Command) {
        self.session.send(c);
        self.tick();
    }

    /// Take the latest snapshot; a new notice of the session becomes the message, and the
    /// result of a submitted turn arrives (an authored turn clears the editor it came from;
    /// a SHOW VIEW focuses the View pane).
    pub fn tick(&mut self) -> bool {
        self.sync_draft();
        let snap = self.session.latest();
        let changed = !Arc::ptr_eq(&snap, &self.snap);
        self.snap = snap;
        if changed {
            self.log.sync(&self.snap);
            self.editor.set_scope(&self.snap.standing);
        }
        if self.snap.notices_total != self.notices_seen {
            // Of the notices new since the last look, the loudest (the newest of those): a
            // veto is not hidden by the routine line said after it.
            let new = self
                .snap
                .notices_total
                .saturating_sub(self.notices_seen)
                .min(self.snap.notices.len());
            let fresh = &self.snap.notices[self.snap.notices.len() - new..];
            if let Some(n) = fresh.iter().max_by_key(|n| n.level as u8) {
                self.message = Some(n.text.clone());
                self.message_seen = (self.message.clone(), n.ts, std::time::Instant::now());
            }
            self.notices_seen = self.snap.notices_total;
        }
        // A message that went stale is a change to draw, even with the snapshot unchanged
        // (paused, or at the end); so is the proposal's line coming back over a message.
        let cleared = self.age_message();
        // A session file or Bus file that could not be written stays on the footer, in the
        // error colour, whenever no newer message is shown: the session is not being saved.
        if self.message.is_none()
            && let Some(e) = &self.snap.save_error
        {
            self.message = Some(e.clone());
        }
        let call = self.proposal().map(|p| p.call);
        if call != self.proposal_since.map(|(c, _)| c) {
            self.proposal_since = call.map(|c| (c, std::time::Instant::now()));
        }
        let over = self.message_over_proposal();
        let cleared = cleared || std::mem::replace(&mut self.footer_over, over) != over;
        let cleared = self.time_writing() || cleared;
        if let (Some((id, text)), Some(r)) = (&self.awaiting_submit, &self.snap.last_submit)
            && r.id == *id
        {
            if r.authored && text.as_ref().is_some_and(|t| self.editor.text() == *t) {
                self.editor.set_text("");
            }
            if r.view_request {
                self.set_focus(Pane::View);
                self.view_scroll = 0;
            }
            self.awaiting_submit = None;
        }
        if let (Some((id, said)), Some(u)) = (&self.awaiting_undo, &self.snap.last_undo)
            && u.id == *id
        {
            // The undo's message is said now, over a proposal that came back with it (the
            // session went back to before an accept): the proposal and the message arrive in
            // one snapshot, and the proposal, seen after it, held the footer (before
            // 2026-12-06 the documented `undone, and back at …` never showed).
            if (u.turn.is_some() || u.rewound) && self.message.is_some() {
                self.message_seen.2 = std::time::Instant::now();
            }
            // The undone turn's text comes back to an empty editor, to mend and send again;
            // over a draft it is shown instead (y copies it in), so neither is lost.
            if let Some((_, text)) = &u.turn {
                if self.editor.text().trim().is_empty() {
                    self.editor.set_text(text);
                    if !u.rewound {
                        // What it did, as the dialog said (`armed my-dip`), not its first
                        // line of code (`USING signal SPX ...`).
                        let what = said
                            .as_ref()
                            .map_or_else(|| u.summary.clone(), |t| format!("your {t}"));
                        self.message = Some(format!(
                            "undone: {what}; its text is back in the editor ({})",
                            self.keys.label(Action::Editor)
                        ));
                    }
                } else if self.modal.is_none() {
                    self.modal = Some(Modal::PlanText(text.clone()));
                }
            }
            self.awaiting_undo = None;
        }
        changed || cleared
    }

    /// The event numbers the Bus pane holds: (oldest, newest).
    pub fn bus_window(&self) -> (u64, u64) {
        let n = self.snap.bus_events;
        let held = self.snap.bus.len() as u64;
        (n.saturating_sub(held), n.saturating_sub(1))
    }

    /// Every turn for the Journal and Tokens panes, in tape order: the person's and the
    /// agent's.
    pub fn turn_rows(&self) -> &[TurnLine] {
        &self.snap.turns
    }

    /// Submit a turn as the person. With an inline session the routed turn is back at
    /// once (a threaded one answers in a later snapshot: see [`App::tick`]).
    pub fn human_turn(&mut self, text: &str) -> Option<TurnLine> {
        let before = self.snap.turns.len();
        let id = self.next_submit;
        self.next_submit += 1;
        // The editor is cleared by an authored answer only when this turn is its text: a
        // STAND-DOWN from the kill switch or a SHOW VIEW from the picker leaves a draft be.
        let draft = self.editor.text();
        let from_editor = draft == text;
        self.awaiting_submit = Some((id, from_editor.then_some(draft)));
        self.send(Command::Submit {
            id,
            author: "you".into(),
            kind: AuthorKind::Human,
            text: text.to_string(),
        });
        if self.snap.last_submit.as_ref().is_none_or(|r| r.id != id) {
            return None;
        }
        self.snap.turns.get(before..).and_then(|t| {
            t.iter()
                .rev()
                .find(|l| l.wake == crate::session::owner::DESK_WAKE)
                .cloned()
        })
    }

    /// Ask before taking back the person's last turn of this run (`10:05 turn (armed
    /// my-dip)`); with none, the session answers that there is nothing to undo.
    fn confirm_undo(&mut self) {
        let mine = self.snap.turns.iter().rposition(|l| l.author == "you");
        match mine.map(|k| &self.snap.turns[k]) {
            Some(l) => {
                // The agent's turns after it were given to a book that had it: they go with
                // it, and the dialog names them (before 2026-12-06 an accept of the agent's
                // turn was taken back without a word).
                let name = self.agent().map_or("the agent", |a| a.short_name.as_str());
                let also: Vec<String> = self.snap.turns[mine.unwrap_or(0) + 1..]
                    .iter()
                    .filter(|t| !t.from_desk())
                    .filter_map(|t| match (&t.routed, &t.rejected) {
                        (Some(r), None) => Some(format!(
                            "{name}'s {} @ wake {} (routed {})",
                            r.outcome.label(),
                            t.wake,
                            t.ts.hhmm()
                        )),
                        (_, Some((outcome, by))) if by == "human" => Some(format!(
                            "your reject of {name}'s {outcome} @ wake {}",
                            t.wake
                        )),
                        _ => None,
                    })
                    .collect();
                let did = if l.result.is_empty() {
                    l.routed
                        .as_ref()
                        .map_or("rejected", |r| r.outcome.name())
                        .to_string()
                } else {
                    l.result.clone()
                };
                let turn = format!("{} turn ({did})", l.ts.hhmm());
                self.undo_said = Some(turn.clone());
                self.modal = Some(Modal::Confirm(Confirm::Undo { turn, also }));
            }
            None => {
                self.undo_said = None;
                self.undo();
            }
        }
    }

    /// An act of the person's. While turns of theirs are recorded ahead of the tape (after
    /// a seek back or Home), an act that reaches the session drops them: the desk asks
    /// first, naming them (`this drops your 10:00 turn (PLAN calls …): go on?`), and takes
    /// the act on yes. An act with nothing to act on (no proposal, no agent) only says so.
    pub fn person(&mut self, act: PersonAct) {
        let reaches = match act {
            PersonAct::Turn(_) => true,
            PersonAct::Accept | PersonAct::Reject => self.proposal().is_some(),
            PersonAct::Copilot | PersonAct::Attach => self.agent().is_some(),
        };
        if reaches && !self.snap.turns_ahead.is_empty() && !self.snap.ended {
            let dropped = crate::session::owner::dropped_turns(&self.snap.turns_ahead);
            self.modal = Some(Modal::Confirm(Confirm::Branch { dropped, act }));
        } else {
            self.take(act);
        }
    }

    /// Take the person's act (asked about or not: [`person`](Self::person)).
    fn take(&mut self, act: PersonAct) {
        match act {
            PersonAct::Turn(text) => {
                self.human_turn(&text);
            }
            PersonAct::Copilot => {
                if self.agent().is_none() {
                    self.message = Some("no agent seated: co-pilot has nobody to hold".into());
                    return;
                }
                let on = !self.copilot();
                let name = self.agent().map(|a| a.name.clone()).unwrap_or_default();
                self.send(Command::Copilot(on));
                self.message = Some(if on {
                    format!(
                        "{name}: co-pilot — its turns wait for {} accept / {} reject",
                        self.keys.label(Action::Accept),
                        self.keys.label(Action::Reject)
                    )
                } else {
                    format!("{name}: autopilot — its turns route as they arrive")
                });
            }
            PersonAct::Accept => {
                if let Some(call) = self.proposal().map(|p| p.call) {
                    self.send(Command::Accept { call });
                } else {
                    self.message = Some("nothing to accept: no proposal is waiting".into());
                }
            }
            PersonAct::Reject => {
                if let Some(call) = self.proposal().map(|p| p.call) {
                    self.send(Command::Reject { call });
                } else {
                    self.message = Some("nothing to reject: no proposal is waiting".into());
                }
            }
            PersonAct::Attach => self.toggle_attach(),
        }
    }

    /// Detach the agent or attach it again.
    pub fn toggle_attach(&mut self) {
        match self.agent() {
            None => {
                self.message = Some(
                    "no agent: start the desk with --author URL|CMD|FILE or --agent SCRIPT".into(),
                )
            }
            Some(a) => {
                let (on, name, copilot) = (!a.attached, a.name.clone(), a.copilot);
                // A reopened session's live author is never called: its recorded answers act
                // (docs/desk.md, "The agent in the session"), in co-pilot or not.
                let replayed = a.replay_only && a.live;
                // A proposal waiting when the agent is detached is rejected with it: said
                // with the detach, which takes the footer.
                let undecided = a.proposal.as_ref().filter(|_| !on).map(|p| {
                    crate::session::owner::undecided_notice(&a.short_name, p, "at the detach")
                });
                self.send(Command::Attach(on));
                let key = self.keys.label(Action::Attach);
                self.message = Some(if replayed && !on {
                    format!(
                        "{name} detached: not asked at wakes ({key} attaches; a reopened \
                         session's live author is never called)"
                    )
                } else if replayed {
                    format!(
                        "{name} attached, replayed: the live author is not called on a reopened \
                         session; its recorded answers act, and a wake they do not answer is \
                         rejected by nobody"
                    )
                } else if !on {
                    format!("{name} detached: no longer asked at wakes ({key} attaches)")
                } else if copilot {
                    format!(
                        "{name} attached, co-pilot: its turns wait for {} / {}",
                        self.keys.label(Action::Accept),
                        self.keys.label(Action::Reject)
                    )
                } else {
                    format!("{name} attached, autopilot: its turns route as they arrive")
                });
                if let (Some(u), Some(m)) = (undecided, self.message.as_mut()) {
                    m.push_str("; ");
                    m.push_str(&u);
                }
            }
        }
    }

    /// Handle one key event.
    pub fn key(&mut self, k: KeyEvent) {
        if let Some(m) = self.modal.take() {
            self.modal_key(m, k);
            return;
        }
        let action = self.keys.action(&k);
        if self.focus == Pane::Editor {
            match action {
                Some(Action::Submit) => self.submit(),
                Some(Action::ErrorWhole) => {
                    if let Some(m) = super::editor::message(self.editor.diagnostics()) {
                        self.modal = Some(Modal::Error(m));
                    }
                }
                Some(Action::Leave) => self.focus = self.prev_focus,
                _ if k.code == KeyCode::Char('c')
                    && k.modifiers.contains(KeyModifiers::CONTROL) =>
                {
                    self.quit = true
                }
                _ => {
                    self.editor.key(&k);
                }
            }
            return;
        }
        let Some(mut a) = action else { return };
        // In a list, g / home go to the top (elsewhere they seek and go back to the open). A
        // list already at its top has nowhere to go: there g seeks, as everywhere else, so a
        // person who pressed g to seek with a list focused gets the prompt at the second g.
        if matches!(self.focus, Pane::Plans | Pane::Bus | Pane::View)
            && self.keys.binds(Action::Top, &k)
            && !(a == Action::Seek && self.list_at_top())
        {
            if a == Action::Seek {
                self.message = Some("top of the list · g again seeks".to_string());
            }
            a = Action::Top;
        }
        if self.focus == Pane::Chart && self.chart_key(a) {
            return;
        }
        if self.focus == Pane::Bus && self.bus_mode == BusMode::Bus && self.log_key(a) {
            return;
        }
        if self.focus == Pane::Bus && self.bus_mode == BusMode::Blotter && self.blotter_key(a) {
            return;
        }
        match a {
            Action::Quit => self.quit = true,
            Action::Help => self.modal = Some(Modal::Help),
            Action::FocusNext | Action::FocusPrev => {
                let i = Pane::ALL.iter().position(|p| *p == self.focus).unwrap_or(0);
                let n = Pane::ALL.len();
                let j = if a == Action::FocusNext {
                    (i + 1) % n
                } else {
                    (i + n - 1) % n
                };
                self.set_focus(Pane::ALL[j]);
            }
            Action::Editor => self.set_focus(Pane::Editor),
            // At the tape's end nothing plays or steps: the footer says what does.
            Action::PlayPause | Action::StepTick | Action::StepBar if self.snap.ended => {
                self.message = Some(format!(
                    "tape ended {}: {} restarts, {} (chart) back to the open",
                    self.snap.close.hhmm(),
                    self.keys.label(Action::Restart),
                    self.keys.label(Action::BackToOpen)
                ));
            }
            Action::PlayPause => self.send(Command::TogglePlay),
            // Relative to the session's speed, not this snapshot's: `+++` steps three times.
            Action::Faster => self.send(Command::Faster),
            Action::Slower => self.send(Command::Slower),
            Action::StepTick => self.send(Command::StepTick),
            Action::StepBar => self.send(Command::StepBar),
            Action::Seek => {
                self.modal = Some(Modal::Prompt {
                    kind: PromptKind::Seek,
                    input: String::new(),
                })
            }
            Action::Restart => {
                self.modal = Some(Modal::Confirm(Confirm::Restart));
            }
            Action::BackToOpen => {
                let open = self.snap.open;
                self.send(Command::Seek(open));
                self.message = Some(format!(
                    "back to the open {}: Space plays the session again",
                    open.hhmm()
                ));
            }
            Action::Undo => {
                // Asked first (as a restart is): an undo re-runs the session. With no turn
                // of the person's, the session says there is nothing to undo. After a seek
                // back to before every turn of the person's, the first ahead of the tape (it
                // acts again when the tape gets there) is the one taken back.
                if let Some(what) = &self.snap.undo_decision {
                    self.undo_said = None;
                    self.modal = Some(Modal::Confirm(Confirm::UndoDecision { what: what.clone() }));
                } else if let Some((ts, title)) = &self.snap.undo_ahead {
                    self.undo_said = None;
                    self.modal = Some(Modal::Confirm(Confirm::Undo {
                        turn: format!(
                            "{} turn ({title}), ahead of the tape: it acts again at {}",
                            ts.hhmm(),
                            ts.hhmm()
                        ),
                        also: Vec::new(),
                    }));
                } else {
                    self.confirm_undo();
                }
            }
            Action::StandDown => {
                self.modal = Some(Modal::Prompt {
                    kind: PromptKind::StandDown,
                    input: String::new(),
                })
            }
            Action::ShowView => {
                let checked = lang::ast::PANE_CATALOG
                    .iter()
                    .map(|p| matches!(*p, "tape" | "levels"))
                    .collect();
                self.modal = Some(Modal::ViewPicker { sel: 0, checked });
            }
            Action::Copilot => self.person(PersonAct::Copilot),
            Action::Accept => self.person(PersonAct::Accept),
            Action::Reject => self.person(PersonAct::Reject),
            Action::Attach => self.person(PersonAct::Attach),
            Action::Theme => {
                self.theme = (self.theme + 1) % self.themes.len();
                let name = self.theme().name.clone();
                self.message = Some(match &self.theme_dir {
                    Some(dir) => match super::save_theme(dir, &name) {
                        Ok(()) => format!("theme {name} (the next desk starts in it)"),
                        Err(e) => format!("theme {name} (not saved: {e})"),
                    },
                    None => format!("theme {name}"),
                });
            }
            Action::BusToggle => {
                if self.compact.get() && self.tab != Pane::Bus {
                    // The pane is behind another tab: show it, as the Blotter (what `b` is
                    // pressed for), rather than flip a pane no one can see.
                    self.tab = Pane::Bus;
                    self.bus_mode = BusMode::Blotter;
                    self.blotter_scroll = 0;
                } else {
                    self.blotter_scroll = 0;
                    self.bus_mode = match self.bus_mode {
                        BusMode::Bus => BusMode::Blotter,
                        BusMode::Blotter => BusMode::Bus,
                    };
                }
            }
            Action::Up => match self.focus {
                Pane::Plans => self.plan_sel = self.plan_sel.saturating_sub(1),
                Pane::View => self.scroll_view(-1),
                _ => {}
            },
            Action::Down => match self.focus {
                Pane::Plans => {
                    self.plan_sel = (self.plan_sel + 1).min(self.snap.plans.len().saturating_sub(1))
                }
                Pane::View => self.scroll_view(1),
                _ => {}
            },
            Action::Open => {
                if self.focus != Pane::Bus
                    && let Some(p) = self.snap.plans.get(self.plan_sel)
                {
                    self.modal = Some(Modal::PlanText(p.text.clone()));
                }
            }
            Action::Yank => {
                if let Some(p) = self.snap.plans.get(self.plan_sel) {
                    let (text, name) = (p.text.clone(), p.name.clone());
                    self.editor.set_text(&text);
                    self.set_focus(Pane::Editor);
                    self.message = Some(format!("copied {name} into the editor"));
                }
            }
            Action::PageUp | Action::PageDown | Action::Top | Action::Bottom => match self.focus {
                Pane::Plans => {
                    let n = self.snap.plans.len().saturating_sub(1);
                    self.plan_sel = match a {
                        Action::PageUp => self.plan_sel.saturating_sub(10),
                        Action::PageDown => (self.plan_sel + 10).min(n),
                        Action::Top => 0,
                        _ => n,
                    };
                }
                Pane::View => {
                    let page = self.view_rows.get().1.max(1) as isize;
                    match a {
                        Action::PageUp => self.scroll_view(-page),
                        Action::PageDown => self.scroll_view(page),
                        Action::Top => self.view_scroll = 0,
                        _ => self.scroll_view(isize::MAX / 2),
                    }
                }
                _ => {}
            },
            Action::Filter => {
                self.set_focus(Pane::Bus);
                self.bus_mode = BusMode::Bus;
                // A new filter starts empty (as `/` starts a new search in less or vim); the
                // filter in force is shown in the prompt, ↑ recalls it to edit, esc keeps it.
                self.modal = Some(Modal::Prompt {
                    kind: PromptKind::Filter,
                    input: String::new(),
                });
            }
            Action::Submit
            | Action::ErrorWhole
            | Action::Leave
            | Action::Left
            | Action::Right
            | Action::Interval
            | Action::ZoomIn
            | Action::ZoomOut
            | Action::ChartSymbol => {}
        }
    }

    /// The chart's own keys (when it is focused); `false`: not a chart key.
    fn chart_key(&mut self, a: Action) -> bool {
        let n = self.chart.candles(&self.snap.chart).len();
        match a {
            Action::Left => self.chart.step(Move::Left, n),
            Action::Right => self.chart.step(Move::Right, n),
            Action::PageUp => self.chart.step(Move::PageLeft, n),
            Action::PageDown => self.chart.step(Move::PageRight, n),
            Action::Bottom => self.chart.step(Move::Follow, n),
            Action::Interval => {
                let c = self.snap.chart.clone();
                self.chart.toggle_interval(&c);
            }
            Action::ZoomIn => self.chart.zoom(true),
            Action::ZoomOut => self.chart.zoom(false),
            Action::ChartSymbol => {
                let c = self.snap.chart.clone();
                self.chart.next_series(&c);
            }
            _ => return false,
        }
        true
    }

    /// Is the focused list at its top (or is there no list to move in: the Blotter)?
    fn list_at_top(&self) -> bool {
        match self.focus {
            Pane::Plans => self.plan_sel == 0,
            Pane::View => self.view_scroll == 0,
            Pane::Bus => match self.bus_mode {
                BusMode::Blotter => self.blotter_scroll == 0,
                BusMode::Bus => self.log.at_top(),
            },
            _ => true,
        }
    }

    /// The log's own keys (when the Bus pane shows it); `false`: not a log key.
    fn log_key(&mut self, a: Action) -> bool {
        let page = self.log.page.get().max(1) as isize;
        match a {
            Action::Up => self.log.step(-1),
            Action::Down => self.log.step(1),
            Action::PageUp => self.log.step(-page),
            Action::PageDown => self.log.step(page),
            Action::Top => self.log.top(),
            Action::Bottom => self.log.follow(),
            Action::Open => {
                if let Some(r) = self.log.selected() {
                    self.modal = Some(Modal::Event(super::log::inspect(&r.json)));
                }
            }
            _ => return false,
        }
        true
    }

    /// A paste (bracketed by the terminal): into the editor verbatim (it is focused first);
    /// into an open prompt as one line.
    pub fn paste(&mut self, text: &str) {
        match self.modal.take() {
            Some(Modal::Prompt { kind, mut input }) => {
                input.push_str(text.lines().next().unwrap_or(""));
                self.modal = Some(Modal::Prompt { kind, input });
            }
            Some(m) => self.modal = Some(m),
            None => {
                self.set_focus(Pane::Editor);
                self.editor.paste(text);
            }
        }
    }

    /// A mouse event on a screen of `area`: a click focuses the pane under it, the wheel
    /// scrolls it.
    pub fn mouse(&mut self, m: ratatui::crossterm::event::MouseEvent, area: ratatui::layout::Rect) {
        use ratatui::crossterm::event::{MouseButton, MouseEventKind};
        if self.modal.is_some() {
            return;
        }
        let at = ratatui::layout::Position::new(m.column, m.row);
        let Some(pane) = super::ui::layout(self, area)
            .into_iter()
            .find(|(_, r)| r.contains(at))
            .map(|(p, _)| p)
        else {
            return;
        };
        match m.kind {
            MouseEventKind::Down(MouseButton::Left) => self.set_focus(pane),
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
                let up = m.kind == MouseEventKind::ScrollUp;
                match pane {
                    Pane::Bus if self.bus_mode == BusMode::Blotter => {
                        self.scroll_blotter(if up { -3 } else { 3 })
                    }
                    Pane::Bus => self.log.step(if up { -3 } else { 3 }),
                    Pane::View => self.scroll_view(if up { -3 } else { 3 }),
                    Pane::Plans => {
                        let n = self.snap.plans.len().saturating_sub(1);
                        self.plan_sel = if up {
                            self.plan_sel.saturating_sub(1)
                        } else {
                            (self.plan_sel + 1).min(n)
                        };
                    }
                    Pane::Chart => {
                        let n = self.chart.candles(&self.snap.chart).len();
                        self.chart
                            .step(if up { Move::Left } else { Move::Right }, n);
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// Scroll the Blotter `d` rows (within what it last drew: row 0 is its glance).
    pub fn scroll_blotter(&mut self, d: isize) {
        let max = self.blotter_rows.get().0 as isize;
        let cur = (self.blotter_scroll as isize).min(max);
        self.blotter_scroll = usize::try_from(cur.saturating_add(d).clamp(0, max)).unwrap_or(0);
    }

    /// The Blotter's keys: it scrolls (↑/↓ a row, pgup/pgdn a page, `g`/home to its glance,
    /// `G`/end to its last row).
    fn blotter_key(&mut self, a: Action) -> bool {
        let (max, page) = self.blotter_rows.get();
        let page = page.max(1) as isize;
        match a {
            Action::Up => self.scroll_blotter(-1),
            Action::Down => self.scroll_blotter(1),
            Action::PageUp => self.scroll_blotter(-page),
            Action::PageDown => self.scroll_blotter(page),
            Action::Top => self.blotter_scroll = 0,
            Action::Bottom => self.blotter_scroll = max,
            _ => return false,
        }
        true
    }

    /// Scroll the View by `d` drawn rows (negative: up), within what the last draw showed:
    /// the last row stops at the bottom of the pane. Before the first draw, within the
    /// Frame's lines.
    pub fn scroll_view(&mut self, d: isize) {
        let (total, h) = self.view_rows.get();
        let max = if total == 0 && h == 0 {
            self.snap.frame.text.lines().count()
        } else {
            total.saturating_sub(h)
        };
        let cur = usize::from(self.view_scroll).min(max) as isize;
        let to = cur.saturating_add(d).clamp(0, max as isize);
        self.view_scroll = u16::try_from(to).unwrap_or(u16::MAX);
    }

    /// Focus a pane (the compact layout's tab follows).
    pub fn set_focus(&mut self, p: Pane) {
        if p == Pane::Editor && self.focus != Pane::Editor {
            self.prev_focus = self.focus;
        }
        if super::ui::TABBED.contains(&p) {
            self.tab = p;
        }
        self.focus = p;
    }

    /// Submit the editor's text as a human turn. An authored turn clears the editor; an
    /// invalid one stays, its errors under their lines.
    pub fn submit(&mut self) {
        let text = self.editor.text();
        self.person(PersonAct::Turn(text));
    }

    /// Send an undo; its answer arrives in a snapshot ([`App::tick`]).
    fn undo(&mut self) {
        let id = self.next_submit;
        self.next_submit += 1;
        self.awaiting_undo = Some((id, self.undo_said.take()));
        self.send(Command::Undo { id });
    }

    fn modal_key(&mut self, m: Modal, k: KeyEvent) {
        let esc = k.code == KeyCode::Esc;
        match m {
            Modal::Confirm(c) => {
                if matches!(
                    k.code,
                    KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter
                ) {
                    match c {
                        Confirm::Restart => {
                            self.send(Command::Restart);
                            self.message =
                                Some("restarted from the open: the book is empty".into());
                        }
                        Confirm::Undo { .. } | Confirm::UndoDecision { .. } => self.undo(),
                        Confirm::Branch { act, .. } => self.take(act),
                    }
                }
            }
            Modal::Help | Modal::Event(_) | Modal::Error(_)
                if matches!(
                    k.code,
                    KeyCode::Up
                        | KeyCode::Down
                        | KeyCode::Char('j')
                        | KeyCode::Char('k')
                        | KeyCode::PageUp
                        | KeyCode::PageDown
                        | KeyCode::Home
                        | KeyCode::End
                        | KeyCode::Char('g')
                        | KeyCode::Char('G')
                ) =>
            {
                // Long dialogs scroll (by drawn rows, the last row stopping at the bottom:
                // the bottom border says where and how); any other key closes them.
                let (total, h) = self.modal_rows.get();
                let max = if total == 0 && h == 0 {
                    usize::from(u16::MAX)
                } else {
                    total.saturating_sub(h)
                };
                let page = h.saturating_sub(1).max(1);
                let cur = usize::from(self.modal_scroll).min(max);
                let to = match k.code {
                    KeyCode::Up | KeyCode::Char('k') => cur.saturating_sub(1),
                    KeyCode::PageUp => cur.saturating_sub(page),
                    KeyCode::PageDown => cur + page,
                    KeyCode::Home | KeyCode::Char('g') => 0,
                    KeyCode::End | KeyCode::Char('G') => max,
                    _ => cur + 1,
                };
                self.modal_scroll = u16::try_from(to.min(max)).unwrap_or(u16::MAX);
                self.modal = Some(m);
            }
            Modal::Help | Modal::PlanText(_) | Modal::Event(_) | Modal::Error(_) => {
                self.modal_scroll = 0;
                self.modal_rows.set((0, 0));
                if let (Modal::PlanText(t), Some(Action::Yank)) = (&m, self.keys.action(&k)) {
                    self.editor.set_text(t);
                    self.set_focus(Pane::Editor);
                }
            }
            Modal::Prompt { kind, mut input } => match k.code {
                KeyCode::Esc => {}
                KeyCode::Enter => match kind {
                    PromptKind::StandDown => {
                        let text = format!("STAND-DOWN {}", input.trim());
                        self.person(PersonAct::Turn(text));
                    }
                    PromptKind::Filter => {
                        self.log.set_filter(&input);
                        self.message = Some(if self.log.filter.is_empty() {
                            "log: every event".into()
                        } else {
                            format!(
                                "log filtered by /{}: {} (/ then enter clears)",
                                self.log.filter,
                                super::fit::count(self.log.shown().len() as u64, "row")
                            )
                        });
                    }
                    PromptKind::Seek => match Ts::parse_clock(&input) {
                        Some(t) if t < self.snap.open || t > self.snap.close => {
                            self.message = Some(format!(
                                "seek: {} is outside the session {}–{}: nothing moved",
                                input.trim(),
                                self.snap.open.hhmm(),
                                self.snap.close.hhmm()
                            ))
                        }
                        Some(t) => self.send(Command::Seek(t)),
                        None => {
                            self.message = Some(format!(
                                "seek: {:?} is not a time: write HH:MM, HH:MM:SS or HH:MM:SS.mmm (milliseconds as three digits)",
                                input.trim()
                            ))
                        }
                    },
                },
                KeyCode::Backspace => {
                    input.pop();
                    self.modal = Some(Modal::Prompt { kind, input });
                }
                // C-u clears the line, as in the Editor (it typed a `u`: `/usuppressed`).
                KeyCode::Char('u') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                    input.clear();
                    self.modal = Some(Modal::Prompt { kind, input });
                }
                KeyCode::Up if kind == PromptKind::Filter => {
                    input = self.log.filter.clone();
                    self.modal = Some(Modal::Prompt { kind, input });
                }
                KeyCode::Char(c) => {
                    input.push(c);
                    self.modal = Some(Modal::Prompt { kind, input });
                }
                _ => self.modal = Some(Modal::Prompt { kind, input }),
            },
            Modal::ViewPicker {
                mut sel,
                mut checked,
            } => {
                let n = checked.len();
                match k.code {
                    _ if esc => return,
                    KeyCode::Up | KeyCode::Char('k') => sel = sel.saturating_sub(1),
                    KeyCode::Down | KeyCode::Char('j') => sel = (sel + 1).min(n.saturating_sub(1)),
                    KeyCode::Char(' ') => {
                        if let Some(c) = checked.get_mut(sel) {
                            *c = !*c;
                        }
                    }
                    KeyCode::Enter => {
                        let panes: Vec<&str> = lang::ast::PANE_CATALOG
                            .iter()
                            .zip(&checked)
                            .filter(|(_, c)| **c)
                            .map(|(p, _)| pane_spelling(p))
                            .collect();
                        if panes.is_empty() {
                            self.message = Some("SHOW VIEW: pick at least one pane".into());
                        } else {
                            let mut text = String::from("SHOW VIEW desk-pick budget 900\n");
                            for p in panes {
                                text.push_str("  ");
                                text.push_str(p);
                                text.push('\n');
                            }
                            self.person(PersonAct::Turn(text));
                        }
                        return;
                    }
                    _ => {}
                }
                self.modal = Some(Modal::ViewPicker { sel, checked });
            }
        }
    }

    /// Counts of outcomes: (authored, invalid, provider-error, pass, stand-down, rejected).
    pub fn outcome_counts(&self) -> [(&'static str, usize); 6] {
        let mut c = [
            ("authored", 0),
            ("invalid", 0),
            ("provider-error", 0),
            ("pass", 0),
            ("stand-down", 0),
            ("rejected", 0),
        ];
        for t in self.turn_rows() {
            let Some(r) = &t.routed else {
                c[5].1 += 1;
                continue;
            };
            match r.class() {
                turn::TurnClass::Authored => c[0].1 += 1,
                turn::TurnClass::Invalid => c[1].1 += 1,
                turn::TurnClass::ProviderError => c[2].1 += 1,
            }
            match r.outcome {
                Outcome::Pass { fail_closed: false } => c[3].1 += 1,
                Outcome::StandDown { .. } => c[4].1 += 1,
                _ => {}
            }
        }
        c
    }
}
