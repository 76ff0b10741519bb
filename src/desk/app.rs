//! The desk's state machine: focus, modals, the editor, turns and their routing, the
//! attached author, co-pilot / autopilot. Pure state: key events in, commands to the replay
//! out; no terminal. [`App::tick`] pulls the latest replay snapshot and author events.

use super::agent::{DeskAgent, LiveWorker, WorkerMsg};
use super::editor::Editor;
use super::engine::{Act, Applied, Command, DeskSnapshot, EngineHandle};
use super::keys::{Action, KeyMap};
use super::runtime::{AgentAct, AgentCall, AgentTurnLine};
use super::theme::Theme;
use crate::lang::{self, ast};
use crate::market::Ts;
use crate::tokens::{self, Encoding, TurnTokens};
use crate::turn::repair::RepairRun;
use crate::turn::{self, AuthorKind, Outcome, Profile, Reply, RoutedTurn, TurnContext, WakePhase};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::VecDeque;
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
}

/// What a prompt asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKind {
    /// The STAND-DOWN reason.
    StandDown,
    /// A tape time to seek to.
    Seek,
}

/// Bus / Blotter toggle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusMode {
    /// The live event stream.
    Bus,
    /// Positions, orders, fills, P&L.
    Blotter,
}

/// Where a turn is.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnStatus {
    /// Routed; nothing for the runtime to do (pass, invalid, view request, ...).
    Routed,
    /// Sent to the runtime, not yet applied.
    Sent,
    /// Applied by the runtime.
    Applied(Applied),
    /// Rejected in co-pilot (never routed).
    Rejected,
}

/// One turn, from any author.
#[derive(Debug, Clone)]
pub struct TurnRecord {
    /// The desk's id.
    pub id: u64,
    /// `you` or the agent's name.
    pub author: String,
    /// Tape time it was routed (or proposed).
    pub ts: Ts,
    /// The routed turn (`None` for a rejected proposal).
    pub routed: Option<RoutedTurn>,
    /// Token figures.
    pub tokens: Option<TurnTokens>,
    /// Where it is.
    pub status: TurnStatus,
    /// Tape events applied when it was routed (orders turns when a session is replayed).
    pub seq: u64,
}

/// An agent's answer waiting for the person (co-pilot).
#[derive(Debug, Clone)]
pub struct Proposal {
    /// The run the call belongs to.
    pub segment: u32,
    /// The call.
    pub call: u64,
    /// The agent's name.
    pub author: String,
    /// The wake it answers.
    pub wake: String,
    /// The answer: the routed turn and its attempts.
    pub run: RepairRun,
}

/// One row of the Journal and Tokens panes: a desk turn or an agent's (from the Bus).
#[derive(Debug, Clone, Copy)]
pub enum TurnRow<'a> {
    /// Routed at the desk (a person's, the examples).
    Desk(&'a TurnRecord),
    /// The agent's, from the Bus.
    Agent(&'a AgentTurnLine),
}

impl TurnRow<'_> {
    /// Tape time.
    pub fn ts(&self) -> Ts {
        match self {
            TurnRow::Desk(t) => t.ts,
            TurnRow::Agent(a) => a.ts,
        }
    }
    /// Who wrote it.
    pub fn author(&self) -> &str {
        match self {
            TurnRow::Desk(t) => &t.author,
            TurnRow::Agent(a) => &a.author,
        }
    }
    /// The routed turn (`None`: rejected).
    pub fn routed(&self) -> Option<&RoutedTurn> {
        match self {
            TurnRow::Desk(t) => t.routed.as_ref(),
            TurnRow::Agent(a) => a.routed.as_ref(),
        }
    }
    /// Token figures.
    pub fn tokens(&self) -> Option<&TurnTokens> {
        match self {
            TurnRow::Desk(t) => t.tokens.as_ref(),
            TurnRow::Agent(a) => a.tokens.as_ref(),
        }
    }
    /// Re-asks of its repair loop.
    pub fn repairs(&self) -> usize {
        match self {
            TurnRow::Desk(_) => 0,
            TurnRow::Agent(a) => a.attempts.saturating_sub(1),
        }
    }
    /// What became of it, for the Journal.
    pub fn label(&self) -> String {
        match self {
            TurnRow::Desk(t) => match (&t.routed, &t.status) {
                (None, _) => "rejected".into(),
                (Some(r), TurnStatus::Applied(a)) => {
                    format!("{} → {}", r.outcome.name(), a.result)
                }
                (Some(r), TurnStatus::Sent) => format!("{} (pending)", r.outcome.name()),
                (Some(r), _) => r.outcome.name().to_string(),
            },
            TurnRow::Agent(a) => match (&a.routed, &a.rejected) {
                (_, Some((outcome, by))) => format!("{outcome} rejected ({by})"),
                (Some(r), None) => {
                    let mut l = format!("{} @ wake {}", r.outcome.name(), a.wake);
                    if a.attempts > 1 {
                        l.push_str(&format!(" after {} re-asks", a.attempts - 1));
                    }
                    l
                }
                (None, None) => String::new(),
            },
        }
    }
}

/// The desk.
pub struct App {
    /// The replay.
    pub engine: EngineHandle,
    /// The latest snapshot.
    pub snap: Arc<DeskSnapshot>,
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
    /// The key map.
    pub keys: KeyMap,
    /// The open dialog.
    pub modal: Option<Modal>,
    /// Turns, oldest first.
    pub turns: Vec<TurnRecord>,
    next_id: u64,
    /// Co-pilot (true: agent turns wait for accept / reject) or autopilot.
    pub copilot: bool,
    /// The agent's answer proposed now (co-pilot).
    pub proposal: Option<Proposal>,
    /// Recorded turns of an opened session, listed when the tape reaches their seq.
    pub recorded: VecDeque<TurnRecord>,
    /// The agent seated in the session.
    pub agent: Option<DeskAgent>,
    /// Is it attached (asked at wakes)?
    pub agent_attached: bool,
    /// Calls from the session's agent (live asks, co-pilot proposals).
    calls: Option<std::sync::mpsc::Receiver<AgentCall>>,
    /// A live author's worker.
    pub live: Option<LiveWorker>,
    /// The wake a live author is answering, and the tape time it was asked.
    pub waiting: Option<(String, Ts)>,
    /// The last live answer: wall time, output tokens across its attempts, re-asks.
    pub last_answer: Option<(std::time::Duration, usize, u32)>,
    /// Replaying a saved session: nobody is asked; recorded answers act.
    pub replaying: bool,
    /// What the agent is writing now (streamed).
    pub thinking: String,
    /// Bus or Blotter.
    pub bus_mode: BusMode,
    /// Selected plan row.
    pub plan_sel: usize,
    /// Selected Bus event (its number in the stream, 0 = the first); `None` follows the
    /// newest.
    pub bus_sel: Option<u64>,
    /// Scroll of the View pane.
    pub view_scroll: u16,
    /// The last message for the status area.
    pub message: Option<String>,
    /// Warnings from config loading (themes, keys).
    pub warnings: Vec<String>,
    /// Set when the user quits.
    pub quit: bool,
    /// Prompt-side token counts: (card, menu).
    pub prompt_tokens: (usize, usize),
}

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

impl App {
    /// A desk over a replay handle.
    pub fn new(mut engine: EngineHandle, themes: Vec<Theme>, keys: KeyMap) -> App {
        let snap = engine.latest();
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
        App {
            engine,
            snap,
            focus: Pane::Chart,
            prev_focus: Pane::Chart,
            tab: Pane::View,
            editor: Editor::default(),
            themes,
            theme: 0,
            keys,
            modal: None,
            turns: Vec::new(),
            next_id: 1,
            copilot: false,
            proposal: None,
            recorded: VecDeque::new(),
            agent: None,
            agent_attached: false,
            calls: None,
            live: None,
            waiting: None,
            last_answer: None,
            replaying: false,
            thinking: String::new(),
            bus_mode: BusMode::Bus,
            plan_sel: 0,
            bus_sel: None,
            view_scroll: 0,
            message: None,
            warnings: Vec::new(),
            quit: false,
            prompt_tokens: (card, count(&menu)),
        }
    }

    /// The theme in use.
    pub fn theme(&self) -> &Theme {
        &self.themes[self.theme.min(self.themes.len() - 1)]
    }

    /// Seat the session's agent: `calls` is where its calls arrive (the replay thread's
    /// other end). A live author's worker starts now (not when replaying a saved session).
    pub fn seat(
        &mut self,
        agent: Option<DeskAgent>,
        calls: std::sync::mpsc::Receiver<AgentCall>,
    ) -> Result<(), String> {
        self.calls = Some(calls);
        if let Some(DeskAgent::Live(spec)) = &agent
            && !self.replaying
        {
            self.live = Some(LiveWorker::for_spec(spec)?);
        }
        if let Some(a) = &agent {
            self.message = Some(format!(
                "agent {} seated: it is asked at every wake{}",
                a.name(),
                if self.copilot {
                    " (co-pilot: you accept or reject)"
                } else {
                    ""
                }
            ));
        }
        self.agent_attached = agent.is_some();
        self.agent = agent;
        Ok(())
    }

    /// Detach the agent: it is no longer asked; a call outstanding is dropped (on the Bus
    /// as rejected by `detached`); a live worker stops.
    pub fn detach(&mut self) {
        if !self.agent_attached {
            return;
        }
        self.agent_attached = false;
        self.live = None;
        self.proposal = None;
        self.waiting = None;
        self.thinking.clear();
        self.agent_act_now(AgentAct::Attach { on: false });
        let name = self.agent.as_ref().map(DeskAgent::name).unwrap_or_default();
        self.message = Some(format!("detached agent {name}"));
    }

    /// Attach the seated agent again (a live author gets a fresh worker).
    pub fn attach(&mut self) {
        let Some(a) = self.agent.clone() else {
            self.message = Some(
                "no agent: start the desk with --author URL|CMD|FILE or --agent SCRIPT".into(),
            );
            return;
        };
        if self.agent_attached {
            return;
        }
        if let DeskAgent::Live(spec) = &a
            && !self.replaying
        {
            match LiveWorker::for_spec(spec) {
                Ok(w) => self.live = Some(w),
                Err(e) => {
                    self.message = Some(format!("attach {}: {e}", a.name()));
                    return;
                }
            }
        }
        self.agent_attached = true;
        self.agent_act_now(AgentAct::Attach { on: true });
        self.message = Some(format!("attached agent {}", a.name()));
    }

    /// Apply an agent act now (recorded with its tape point).
    fn agent_act_now(&mut self, act: AgentAct) {
        self.send(Command::Apply {
            id: 0,
            act: Act::Agent(act),
            at: None,
        });
    }

    /// Send a command to the replay.
    pub fn send(&mut self, c: Command) {
        self.engine.send(c);
        self.snap = self.engine.latest();
    }

    /// Pull the latest snapshot, the agent's calls and a live author's answers and text.
    pub fn tick(&mut self) {
        self.snap = self.engine.latest();
        let calls: Vec<AgentCall> = self
            .calls
            .as_ref()
            .map(|c| c.try_iter().collect())
            .unwrap_or_default();
        for c in calls {
            self.agent_call(c);
        }
        let mut answers = Vec::new();
        if let Some(w) = self.live.as_mut() {
            while let Ok(d) = w.deltas.try_recv() {
                self.thinking.push_str(&d);
            }
            answers.extend(w.answers.try_iter());
        }
        self.trim_thinking();
        for m in answers {
            self.worker_msg(m);
        }
        while self
            .recorded
            .front()
            .is_some_and(|t| t.seq <= self.snap.seq)
        {
            if let Some(t) = self.recorded.pop_front() {
                self.turns.push(t);
            }
        }
        // Mark applied turns.
        for a in &self.snap.applied {
            if let Some(t) = self.turns.iter_mut().find(|t| t.id == a.id)
                && !matches!(t.status, TurnStatus::Applied(_))
            {
                t.status = TurnStatus::Applied(a.clone());
            }
        }
    }

    fn trim_thinking(&mut self) {
        if self.thinking.len() > 2000 {
            let cut = self.thinking.len() - 2000;
            let cut = (cut..self.thinking.len())
                .find(|i| self.thinking.is_char_boundary(*i))
                .unwrap_or(0);
            self.thinking.drain(..cut);
        }
    }

    /// A call from the session's agent.
    pub fn agent_call(&mut self, c: AgentCall) {
        // A replay's answers are recorded acts; a call sent just before a detach is void
        // (the runtime dropped it as rejected by `detached`).
        if self.replaying || !self.agent_attached {
            return;
        }
        let name = self.agent.as_ref().map(DeskAgent::name).unwrap_or_default();
        match c {
            AgentCall::Ask {
                segment,
                call,
                ask,
                ctx,
            } => {
                if let Some(w) = &self.live {
                    self.thinking.clear();
                    self.waiting = Some((ask.wake.clone(), ask.ts));
                    self.message = Some(format!("asked {name} at wake {}", ask.wake));
                    w.ask(segment, call, ask, ctx);
                }
            }
            AgentCall::Proposal {
                segment,
                call,
                wake,
                run,
            } => self.answered(segment, call, wake, run),
        }
    }

    /// A live worker's message.
    fn worker_msg(&mut self, m: WorkerMsg) {
        match m {
            WorkerMsg::Answered {
                segment,
                call,
                wake,
                run,
                wall,
            } => {
                self.waiting = None;
                self.last_answer = Some((wall, run.tokens_spent, run.re_asks));
                if segment == self.snap.segment {
                    self.answered(segment, call, wake, run);
                }
            }
            WorkerMsg::Failed(e) => {
                // The author could not be opened: detach, so the call out is dropped (on the
                // Bus as rejected by `detached`) and later wakes are not held for it.
                self.detach();
                self.message = Some(format!("agent stopped: {e} (A attaches again)"));
            }
        }
    }

    /// An answer came: in co-pilot it is proposed; in autopilot it acts now.
    fn answered(&mut self, segment: u32, call: u64, wake: String, run: RepairRun) {
        let author = self.agent.as_ref().map(DeskAgent::name).unwrap_or_default();
        if self.copilot {
            self.message = Some(format!(
                "{author} proposes {} at wake {wake}: accept or reject",
                run.turn.outcome.name()
            ));
            self.proposal = Some(Proposal {
                segment,
                call,
                author,
                wake,
                run,
            });
        } else {
            self.message = Some(format!("{author}: {}", run.turn.outcome.name()));
            self.thinking.clear();
            self.send(Command::AgentReply {
                segment,
                act: AgentAct::Answer { call, run },
            });
        }
    }

    /// Accept the proposal: it routes now.
    pub fn accept(&mut self) {
        if let Some(p) = self.proposal.take() {
            self.message = Some(format!(
                "accepted {}'s {}",
                p.author,
                p.run.turn.outcome.name()
            ));
            self.thinking.clear();
            self.send(Command::AgentReply {
                segment: p.segment,
                act: AgentAct::Answer {
                    call: p.call,
                    run: p.run,
                },
            });
        }
    }

    /// Reject the proposal: nothing routes (a `turn-rejected` event).
    pub fn reject(&mut self) {
        if let Some(p) = self.proposal.take() {
            let outcome = p.run.turn.outcome.name().to_string();
            self.message = Some(format!(
                "rejected {}'s {outcome}: it was not routed",
                p.author
            ));
            self.thinking.clear();
            self.send(Command::AgentReply {
                segment: p.segment,
                act: AgentAct::Reject {
                    call: p.call,
                    outcome,
                },
            });
        }
    }

    /// The event numbers the Bus pane holds: (oldest, newest).
    pub fn bus_window(&self) -> (u64, u64) {
        let n = self.snap.bus_events;
        let held = self.snap.bus.len() as u64;
        (n.saturating_sub(held), n.saturating_sub(1))
    }

    /// The selected Bus event's line (the newest when following).
    pub fn selected_event(&self) -> Option<&str> {
        let (first, last) = self.bus_window();
        let i = self.bus_sel.unwrap_or(last).clamp(first, last);
        self.snap
            .bus
            .get(usize::try_from(i - first).ok()?)
            .map(String::as_str)
    }

    /// Every turn for the Journal and Tokens panes, in tape order: the desk's and the
    /// agent's (from the Bus).
    pub fn turn_rows(&self) -> Vec<TurnRow<'_>> {
        let mut rows: Vec<TurnRow> = self.turns.iter().map(TurnRow::Desk).collect();
        rows.extend(self.snap.agent_turns.iter().map(TurnRow::Agent));
        rows.sort_by_key(|r| r.ts());
        rows
    }

    fn context(&self, kind: AuthorKind) -> TurnContext {
        match kind {
            // A person at the desk may always look: SHOW VIEW is on their menu.
            AuthorKind::Human => TurnContext::new(WakePhase::Open, Profile::ViewshopV2, kind),
            _ => {
                let open = self.snap.clock < Ts(self.snap.open.0 + 15 * 60 * 1000);
                let phase = if open {
                    WakePhase::Open
                } else {
                    WakePhase::Mid
                };
                TurnContext::new(phase, Profile::AuthoringV2, kind)
            }
        }
    }

    /// Route a reply through the one router and act on the outcome now: arm, stand down,
    /// cancel (sent to the replay), or show a requested view.
    pub fn route(&mut self, author: &str, kind: AuthorKind, reply: &Reply) -> TurnRecord {
        let ctx = self.context(kind);
        let routed = turn::route(reply, &ctx);
        let toks = tokens::measure(reply.written(), &routed, Encoding::Cl100k).ok();
        let id = self.next_id;
        self.next_id += 1;
        let act = match &routed.outcome {
            Outcome::Supersede { .. } => Some(Act::Arm {
                text: routed.kestrel.clone(),
            }),
            Outcome::StandDown { reason } => Some(Act::StandDown {
                reason: reason.clone(),
            }),
            Outcome::Cancel { target } => Some(Act::Cancel {
                target: target.clone(),
            }),
            Outcome::ViewRequest { .. } => {
                if let Some(v) = routed.document().and_then(|d| {
                    d.statements.into_iter().find_map(|s| match s.kind {
                        ast::StatementKind::ShowView(v) => Some(v),
                        _ => None,
                    })
                }) {
                    self.engine.send(Command::SetView(v));
                    self.set_focus(Pane::View);
                    self.view_scroll = 0;
                }
                None
            }
            _ => None,
        };
        let status = if act.is_some() {
            TurnStatus::Sent
        } else {
            TurnStatus::Routed
        };
        self.engine.send(Command::Record(serde_json::json!({
            "type": "turn", "id": id, "author": author,
            "routed": serde_json::to_value(&routed).unwrap_or_default(),
            "tokens": serde_json::to_value(&toks).unwrap_or_default(),
        })));
        // The routed turn goes on the Bus (a `turn` event) at the point it acts.
        self.engine.send(Command::Apply {
            id,
            act: Act::Turn {
                routed: serde_json::to_value(&routed).unwrap_or_default(),
            },
            at: None,
        });
        if let Some(act) = act {
            self.engine.send(Command::Apply { id, act, at: None });
        }
        self.snap = self.engine.latest();
        let what = match &routed.outcome {
            Outcome::Invalid { errors } | Outcome::Truncated { errors } => {
                errors.first().map(|e| e.one_line()).unwrap_or_default()
            }
            o => o.name().to_string(),
        };
        self.message = Some(format!("{author}: {what}"));
        TurnRecord {
            id,
            author: author.to_string(),
            ts: self.snap.clock,
            routed: Some(routed),
            tokens: toks,
            status,
            seq: self.snap.seq,
        }
    }

    /// Route a human reply and list it.
    pub fn human_turn(&mut self, text: &str) -> &TurnRecord {
        let rec = self.route("you", AuthorKind::Human, &Reply::text(text));
        self.turns.push(rec);
        self.tick();
        let n = self.turns.len() - 1;
        &self.turns[n]
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
        let Some(a) = action else { return };
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
            Action::PlayPause => self.send(Command::TogglePlay),
            Action::Faster => {
                let s = self.snap.speed.faster();
                self.send(Command::Speed(s));
            }
            Action::Slower => {
                let s = self.snap.speed.slower();
                self.send(Command::Speed(s));
            }
            Action::StepTick => self.send(Command::StepTick),
            Action::StepBar => self.send(Command::StepBar),
            Action::Seek => {
                self.modal = Some(Modal::Prompt {
                    kind: PromptKind::Seek,
                    input: String::new(),
                })
            }
            Action::Restart => {
                self.send(Command::Restart);
                self.turns.clear();
                self.proposal = None;
                self.waiting = None;
                self.thinking.clear();
                self.message = Some("restarted from the open".into());
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
            Action::Copilot => {
                self.copilot = !self.copilot;
                self.agent_act_now(AgentAct::Hold { on: self.copilot });
                self.message = Some(if self.copilot {
                    "co-pilot: agent turns wait for your accept / reject".into()
                } else {
                    "autopilot: agent turns route as they arrive".into()
                });
                // Autopilot routes what was waiting.
                if !self.copilot {
                    self.accept();
                }
            }
            Action::Accept => self.accept(),
            Action::Reject => self.reject(),
            Action::Attach => {
                if self.agent_attached {
                    self.detach();
                } else {
                    self.attach();
                }
            }
            Action::Theme => {
                self.theme = (self.theme + 1) % self.themes.len();
                self.message = Some(format!("theme {}", self.theme().name));
            }
            Action::BusToggle => {
                self.bus_mode = match self.bus_mode {
                    BusMode::Bus => BusMode::Blotter,
                    BusMode::Blotter => BusMode::Bus,
                };
            }
            Action::Up => match self.focus {
                Pane::Plans => self.plan_sel = self.plan_sel.saturating_sub(1),
                Pane::Bus => {
                    let (first, last) = self.bus_window();
                    let cur = self.bus_sel.unwrap_or(last);
                    self.bus_sel = Some(cur.saturating_sub(1).max(first).min(last));
                }
                Pane::View => self.view_scroll = self.view_scroll.saturating_sub(1),
                _ => {}
            },
            Action::Down => match self.focus {
                Pane::Plans => {
                    self.plan_sel = (self.plan_sel + 1).min(self.snap.plans.len().saturating_sub(1))
                }
                Pane::View => self.view_scroll = self.view_scroll.saturating_add(1),
                Pane::Bus => {
                    let (_, last) = self.bus_window();
                    self.bus_sel = match self.bus_sel {
                        Some(i) if i + 1 < last => Some(i + 1),
                        _ => None,
                    };
                }
                _ => {}
            },
            Action::Open => match self.focus {
                Pane::Bus => {
                    if let Some(line) = self.selected_event() {
                        let text = serde_json::from_str::<serde_json::Value>(line)
                            .ok()
                            .and_then(|v| serde_json::to_string_pretty(&v).ok())
                            .unwrap_or_else(|| line.to_string());
                        self.modal = Some(Modal::Event(text));
                    }
                }
                _ => {
                    if let Some(p) = self.snap.plans.get(self.plan_sel) {
                        self.modal = Some(Modal::PlanText(p.text.clone()));
                    }
                }
            },
            Action::Yank => {
                if let Some(p) = self.snap.plans.get(self.plan_sel) {
                    let (text, name) = (p.text.clone(), p.name.clone());
                    self.editor.set_text(&text);
                    self.set_focus(Pane::Editor);
                    self.message = Some(format!("copied {name} into the editor"));
                }
            }
            Action::Submit | Action::Leave => {}
        }
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
        let authored = self
            .human_turn(&text)
            .routed
            .as_ref()
            .is_some_and(|r| r.class() == turn::TurnClass::Authored);
        if authored {
            self.editor.set_text("");
        }
    }

    fn modal_key(&mut self, m: Modal, k: KeyEvent) {
        let esc = k.code == KeyCode::Esc;
        match m {
            Modal::Help | Modal::PlanText(_) | Modal::Event(_) => {
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
                        self.human_turn(&text);
                    }
                    PromptKind::Seek => match parse_time(input.trim()) {
                        Some(t) => self.send(Command::Seek(t)),
                        None => {
                            self.message = Some(format!(
                                "seek: {:?} is not a time: write HH:MM or HH:MM:SS",
                                input.trim()
                            ))
                        }
                    },
                },
                KeyCode::Backspace => {
                    input.pop();
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
                            self.human_turn(&text);
                        }
                        return;
                    }
                    _ => {}
                }
                self.modal = Some(Modal::ViewPicker { sel, checked });
            }
        }
    }

    /// Counts of outcomes: (authored, invalid, provider-error, pass, stand-down).
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
            let Some(r) = t.routed() else {
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

/// Parse `HH:MM` or `HH:MM:SS`.
pub fn parse_time(s: &str) -> Option<Ts> {
    match s.len() {
        5 => Ts::parse_hhmm(s),
        8 => Ts::parse(&format!("{s}.000")),
        12 => Ts::parse(s),
        4 => Ts::parse_hhmm(&format!("0{s}")),
        _ => None,
    }
}
