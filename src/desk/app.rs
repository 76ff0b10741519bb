//! The desk's state machine: focus, modals, the editor, turns and their routing, the
//! attached author, co-pilot / autopilot. Pure state: key events in, commands to the replay
//! out; no terminal. [`App::tick`] pulls the latest replay snapshot and author events.

use super::author::{AuthorLink, AuthorMsg, AuthorTurn};
use super::editor::Editor;
use super::engine::{Act, Applied, Command, DeskSnapshot, EngineHandle};
use super::keys::{Action, KeyMap};
use super::theme::Theme;
use crate::lang::{self, ast};
use crate::market::Ts;
use crate::tokens::{self, Encoding, TurnTokens};
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
    /// Agent turns waiting for their tape time (co-pilot) before they are proposed.
    pub incoming: VecDeque<AuthorTurn>,
    /// The agent turn proposed now (co-pilot).
    pub proposal: Option<AuthorTurn>,
    /// Autopilot turns routed and scheduled, listed once the clock reaches them.
    pub scheduled: Vec<TurnRecord>,
    /// Recorded turns of an opened session, listed when the tape reaches their seq.
    pub recorded: VecDeque<TurnRecord>,
    /// The attached author.
    pub author: Option<AuthorLink>,
    /// What re-attaching starts (the recorded house agent), when known.
    pub attach_turns: Option<Vec<AuthorTurn>>,
    /// Runtime handle for author tasks.
    pub rt: Option<tokio::runtime::Handle>,
    /// What the agent is writing now (streamed).
    pub thinking: String,
    /// Bus or Blotter.
    pub bus_mode: BusMode,
    /// Selected plan row.
    pub plan_sel: usize,
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
            incoming: VecDeque::new(),
            proposal: None,
            scheduled: Vec::new(),
            recorded: VecDeque::new(),
            author: None,
            attach_turns: None,
            rt: None,
            thinking: String::new(),
            bus_mode: BusMode::Bus,
            plan_sel: 0,
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

    /// Attach an author link (the recorded house agent, or any author task).
    pub fn attach(&mut self, link: AuthorLink) {
        self.message = Some(format!("attached author {}", link.name));
        self.author = Some(link);
    }

    /// Detach the author: its task stops; turns not yet applied are dropped.
    pub fn detach(&mut self) {
        if let Some(mut a) = self.author.take() {
            a.detach();
            self.message = Some(format!("detached author {}", a.name));
        }
        self.incoming.clear();
        self.proposal = None;
        self.thinking.clear();
        let ids: Vec<u64> = self.scheduled.drain(..).map(|t| t.id).collect();
        if !ids.is_empty() {
            self.engine.send(Command::Unschedule(ids));
        }
    }

    /// Send a command to the replay.
    pub fn send(&mut self, c: Command) {
        self.engine.send(c);
        self.snap = self.engine.latest();
    }

    /// Pull the latest snapshot and author events; release turns whose time has come.
    pub fn tick(&mut self) {
        self.snap = self.engine.latest();
        let mut msgs = Vec::new();
        if let Some(a) = self.author.as_mut() {
            while let Ok(m) = a.rx.try_recv() {
                msgs.push(m);
            }
        }
        for m in msgs {
            self.author_msg(m);
        }
        let clock = self.snap.clock;
        // Co-pilot: propose the next turn once its tape time has come.
        if self.proposal.is_none()
            && self
                .incoming
                .front()
                .is_some_and(|t| t.at.is_none_or(|at| at <= clock))
        {
            self.proposal = self.incoming.pop_front();
        }
        // Autopilot: list scheduled turns once the clock reaches them.
        let (due, rest): (Vec<TurnRecord>, Vec<TurnRecord>) = std::mem::take(&mut self.scheduled)
            .into_iter()
            .partition(|t| t.ts <= clock);
        self.scheduled = rest;
        self.turns.extend(due);
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

    /// Handle an author event.
    pub fn author_msg(&mut self, m: AuthorMsg) {
        match m {
            AuthorMsg::Thinking(s) => {
                self.thinking.push_str(&s);
                if self.thinking.len() > 2000 {
                    let cut = self.thinking.len() - 2000;
                    let cut = (cut..self.thinking.len())
                        .find(|i| self.thinking.is_char_boundary(*i))
                        .unwrap_or(0);
                    self.thinking.drain(..cut);
                }
            }
            AuthorMsg::Gone(why) => {
                let name = self
                    .author
                    .as_ref()
                    .map(|a| a.name.clone())
                    .unwrap_or_default();
                self.message = Some(format!("author {name}: {why}"));
            }
            AuthorMsg::Turn(t) => {
                self.thinking.clear();
                if self.copilot {
                    self.incoming.push_back(t);
                } else {
                    let mut rec = self.route(&t.author, t.kind, &t.reply, t.at);
                    if let Some(at) = t.at
                        && at > self.snap.clock
                    {
                        rec.ts = at;
                        self.scheduled.push(rec);
                    } else {
                        self.turns.push(rec);
                    }
                }
            }
        }
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

    /// Route a reply through the one router and act on the outcome: arm, stand down,
    /// cancel (sent to the replay at `at`, or now), or show a requested view.
    pub fn route(
        &mut self,
        author: &str,
        kind: AuthorKind,
        reply: &Reply,
        at: Option<Ts>,
    ) -> TurnRecord {
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
            at,
        });
        if let Some(act) = act {
            self.engine.send(Command::Apply { id, act, at });
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
        let rec = self.route("you", AuthorKind::Human, &Reply::text(text), None);
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
                self.scheduled.clear();
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
                self.message = Some(if self.copilot {
                    "co-pilot: agent turns wait for your accept / reject".into()
                } else {
                    "autopilot: agent turns route as they arrive".into()
                });
            }
            Action::Accept => {
                if let Some(t) = self.proposal.take() {
                    let rec = self.route(&t.author, t.kind, &t.reply, None);
                    self.turns.push(rec);
                }
            }
            Action::Reject => {
                if let Some(t) = self.proposal.take() {
                    let id = self.next_id;
                    self.next_id += 1;
                    self.engine.send(Command::Record(serde_json::json!({
                        "type": "rejected", "id": id, "author": t.author,
                    })));
                    self.turns.push(TurnRecord {
                        id,
                        author: t.author.clone(),
                        ts: self.snap.clock,
                        routed: None,
                        tokens: None,
                        status: TurnStatus::Rejected,
                        seq: self.snap.seq,
                    });
                    self.message = Some(format!("rejected {}'s turn: it was not routed", t.author));
                }
            }
            Action::Attach => {
                if self.author.is_some() {
                    self.detach();
                } else if let (Some(rt), Some(turns)) = (&self.rt, &self.attach_turns) {
                    let clock = self.snap.clock;
                    let turns = turns
                        .iter()
                        .filter(|t| t.at.is_none_or(|at| at >= clock))
                        .cloned()
                        .collect();
                    let link = super::author::spawn_recorded(rt, "house", turns);
                    self.attach(link);
                } else {
                    self.message = Some("no author to attach".into());
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
                Pane::View => self.view_scroll = self.view_scroll.saturating_sub(1),
                _ => {}
            },
            Action::Down => match self.focus {
                Pane::Plans => {
                    self.plan_sel = (self.plan_sel + 1).min(self.snap.plans.len().saturating_sub(1))
                }
                Pane::View => self.view_scroll = self.view_scroll.saturating_add(1),
                _ => {}
            },
            Action::Open => {
                if let Some(p) = self.snap.plans.get(self.plan_sel) {
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
            Modal::Help | Modal::PlanText(_) => {
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
        for t in &self.turns {
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
