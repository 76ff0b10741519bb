//! The runtime seam: what the desk drives behind the replay clock.
//!
//! A [`Runtime`] receives every tape event in order and the acts routed turns carry (arm a
//! document, stand down, cancel). It owns the market state the Frame is rendered from and
//! reports plans, the book, the event stream and the determinism hash. [`MarketOnly`] is the
//! runtime used until the tick engine is wired: it keeps the market and a canonical log of
//! the acts it received (hashed with BLAKE3), and lists armed plans without evaluating them.

use crate::bus::{self, Bus, Event};
use crate::engine::{Engine, EngineConfig};
use crate::lang::{self, Document, ast::StatementKind};
use crate::market::Px;
use crate::market::TapeReader;
use crate::market::{MarketState, TapeEvent, TapeHeader, Ts};
use crate::session::{Session, SessionConfig, TurnSource, WakeAsk};
use crate::tokens::{self, Encoding, TurnTokens};
use crate::turn::repair::{RepairAttempt, RepairRun};
use crate::turn::{AuthorKind, Outcome, Profile, RoutedTurn, TurnContext};
use crate::view::Snapshot;
use std::collections::BTreeMap;
use std::io::Cursor;
use std::io::Write;
use std::sync::Arc;

/// One plan as the Plans pane shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanInfo {
    /// The plan's name.
    pub name: String,
    /// armed / fired / resting / filled / expired / stood down / done / de-armed.
    pub state: String,
    /// The plan's budget in R.
    pub budget_r: f64,
    /// Risk used, in R.
    pub used_r: f64,
    /// `ttl` as written (`+30m`, `14:45`).
    pub ttl: String,
    /// The clause that fired last, or why the plan is in its state.
    pub note: String,
    /// The plan in canonical Kestrel.
    pub text: String,
}

impl PlanInfo {
    /// The row the Frame's plans pane and the Blotter read (everything but the text).
    pub fn row(&self) -> crate::view::snapshot::PlanRow {
        crate::view::snapshot::PlanRow {
            name: self.name.clone(),
            state: self.state.clone(),
            budget_r: self.budget_r,
            used_r: self.used_r,
            ttl: self.ttl.clone(),
            note: self.note.clone(),
        }
    }
}

/// A mark on the chart: a fill or a fire at a tape time.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// When.
    pub ts: Ts,
    /// The plan.
    pub plan: String,
    /// `buy` / `sell` for fills, the clause for fires.
    pub what: String,
}

/// What the desk drives behind the clock. Implementations must be deterministic: the same
/// events and acts in the same order give the same log bytes and hash.
pub trait Runtime {
    /// `market-only` or `engine`.
    fn name(&self) -> &'static str;
    /// Feed one tape event (in tape order).
    fn on_event(&mut self, ev: &TapeEvent);
    /// The market state (what the Frame is rendered from).
    fn market(&self) -> &MarketState;
    /// Arm a checked document at the current tape time; returns the plans armed.
    fn arm(&mut self, doc: &Document, now: Ts) -> Vec<String>;
    /// STAND-DOWN: de-arm the book; the reason is kept verbatim.
    fn stand_down(&mut self, reason: &str, now: Ts);
    /// CANCEL a plan by name; whether one was live.
    fn cancel(&mut self, target: &str, now: Ts) -> bool;
    /// Armed plans and their states.
    fn plans(&self) -> Vec<PlanInfo>;
    /// The book for the Frame's kernel / plans / blotter panes and the Blotter pane.
    fn book(&self) -> Snapshot;
    /// The newest `n` lines of the event stream (canonical JSON).
    fn tail(&self, n: usize) -> Vec<String>;
    /// Events in the stream so far.
    fn event_count(&self) -> u64;
    /// Fills and fires so far, for the chart.
    fn marks(&self) -> (Vec<Mark>, Vec<Mark>);
    /// The determinism hash of the stream so far (BLAKE3 hex).
    fn hash(&self) -> String;
    /// Close the session at the end of the tape (idempotent).
    fn finish(&mut self) {}
    /// Put a turn routed at the desk (a person's, or a linked author's) on the stream as a
    /// `turn` event; its act arrives separately. Runtimes without a Bus ignore it.
    fn record_turn(&mut self, _routed: &RoutedTurn, _now: Ts) {}
    /// An act of the attached agent (answer, reject, co-pilot hold, attach); returns what
    /// it did. Runtimes without an agent refuse it.
    fn agent_act(&mut self, _act: &AgentAct, _now: Ts) -> String {
        "refused: no agent on this runtime".into()
    }
    /// While quiet (a rewind re-running recorded acts) calls are not sent out; leaving
    /// quiet re-sends the one outstanding, if any.
    fn set_quiet(&mut self, _quiet: bool) {}
    /// The agent's turns and rejections so far, from the Bus (Journal and Tokens panes).
    fn agent_turns(&self) -> Arc<Vec<AgentTurnLine>> {
        Arc::default()
    }
}

/// What the runtime's agent sends out of the replay thread to the desk.
#[derive(Debug, Clone)]
pub enum AgentCall {
    /// Ask the attached live author this wake; it answers with [`AgentAct::Answer`] (or, in
    /// co-pilot, the person decides first).
    Ask {
        /// The run (restart / rewind count) the call belongs to.
        segment: u32,
        /// The call's number within the run.
        call: u64,
        /// What the author is asked (the View, the prompt).
        ask: WakeAsk,
        /// The router's context.
        ctx: TurnContext,
    },
    /// Co-pilot: the scripted agent's answer, waiting for accept ([`AgentAct::Answer`]) or
    /// reject ([`AgentAct::Reject`]).
    Proposal {
        /// The run the call belongs to.
        segment: u32,
        /// The call's number within the run.
        call: u64,
        /// The wake it answers.
        wake: String,
        /// The answer.
        run: RepairRun,
    },
}

/// An act of the attached agent, applied at a tape point like any act (and recorded, so a
/// saved session replays it).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "agent", rename_all = "kebab-case")]
pub enum AgentAct {
    /// The answer to call `call` arrived (or the person accepted it).
    Answer {
        /// The call answered.
        call: u64,
        /// The repair run: the routed turn and every attempt.
        run: RepairRun,
    },
    /// The person rejected the answer to call `call`: nothing routes.
    Reject {
        /// The call rejected.
        call: u64,
        /// The outcome the rejected turn had.
        outcome: String,
    },
    /// Co-pilot on (answers wait for the person) or off.
    Hold {
        /// On or off.
        on: bool,
    },
    /// Attach (the agent is asked at wakes) or detach (it is not; an outstanding call is
    /// dropped as rejected by `detached`).
    Attach {
        /// On or off.
        on: bool,
    },
}

/// The agent attached to the engine runtime.
pub enum AgentSeat {
    /// Answers inline on the replay thread (a script or a recording: it has already
    /// thought), unless held for co-pilot.
    Script(Box<dyn TurnSource>),
    /// Answers off the replay thread (a model, a command): every wake is a call sent out.
    Remote,
}

struct Agent {
    seat: AgentSeat,
    name: String,
    out: Option<std::sync::mpsc::Sender<AgentCall>>,
    attached: bool,
    hold: bool,
    quiet: bool,
    segment: u32,
    calls: u64,
    outstanding: Option<AgentCall>,
}

impl Agent {
    fn call(&mut self, ask: WakeAsk, ctx: TurnContext) {
        self.calls += 1;
        let call = self.calls;
        let c = match &mut self.seat {
            AgentSeat::Script(src) => AgentCall::Proposal {
                segment: self.segment,
                call,
                wake: ask.wake.clone(),
                run: src.answer(&ask, &ctx).run,
            },
            AgentSeat::Remote => AgentCall::Ask {
                segment: self.segment,
                call,
                ask,
                ctx,
            },
        };
        self.outstanding = Some(c.clone());
        if !self.quiet
            && let Some(o) = &self.out
        {
            let _ = o.send(c);
        }
    }

    fn outstanding_call(&self) -> Option<u64> {
        match &self.outstanding {
            Some(AgentCall::Ask { call, .. } | AgentCall::Proposal { call, .. }) => Some(*call),
            None => None,
        }
    }
}

/// An agent's turn (or a rejected one) as the Journal and Tokens panes list it, read off
/// the Bus.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentTurnLine {
    /// Tape time it acted (or was rejected).
    pub ts: Ts,
    /// The wake it answered.
    pub wake: String,
    /// The agent's name.
    pub author: String,
    /// The routed turn (`None` when rejected).
    pub routed: Option<RoutedTurn>,
    /// The rejected turn's outcome and who rejected it.
    pub rejected: Option<(String, String)>,
    /// Token figures of the reply that acted.
    pub tokens: Option<TurnTokens>,
    /// Attempts in its repair loop (1: no re-ask).
    pub attempts: usize,
}

/// The runtime used until the engine is wired: market state plus a canonical log of acts.
pub struct MarketOnly {
    market: MarketState,
    plans: Vec<PlanInfo>,
    log: Vec<String>,
    hasher: blake3::Hasher,
    sink: Option<Box<dyn Write>>,
}

impl MarketOnly {
    /// A runtime for a tape; `sink` receives the log as JSON Lines (flushed per line).
    pub fn new(header: &TapeHeader, sink: Option<Box<dyn Write>>) -> MarketOnly {
        let mut m = MarketOnly {
            market: MarketState::new(header),
            plans: Vec::new(),
            log: Vec::new(),
            hasher: blake3::Hasher::new(),
            sink,
        };
        m.emit(serde_json::json!({
            "type": "session-start",
            "tape": header.name,
            "date": header.date.to_string(),
            "runtime": "market-only",
        }));
        m
    }

    fn emit(&mut self, v: serde_json::Value) {
        // serde_json's Map is a BTreeMap here: keys come out sorted (canonical).
        let line = v.to_string();
        self.hasher.update(line.as_bytes());
        self.hasher.update(b"\n");
        if let Some(w) = self.sink.as_mut() {
            let ok = w
                .write_all(line.as_bytes())
                .and_then(|_| w.write_all(b"\n"))
                .and_then(|_| w.flush());
            if ok.is_err() {
                self.sink = None;
            }
        }
        self.log.push(line);
    }
}

/// The PLAN statements of a document as Plans-pane rows, in the given state.
pub fn plan_infos(doc: &Document, state: &str) -> Vec<PlanInfo> {
    doc.statements
        .iter()
        .filter_map(|s| match &s.kind {
            StatementKind::Plan(p) => {
                let one = Document {
                    statements: vec![s.clone()],
                    tail: Vec::new(),
                };
                let text = lang::print(&one);
                let head = text
                    .lines()
                    .find(|l| l.starts_with("PLAN"))
                    .unwrap_or_default();
                let ttl = head
                    .split_whitespace()
                    .skip_while(|w| *w != "ttl")
                    .nth(1)
                    .unwrap_or("-")
                    .to_string();
                Some(PlanInfo {
                    name: p.name.text.clone(),
                    state: state.to_string(),
                    budget_r: p.budget.value(),
                    used_r: 0.0,
                    ttl,
                    note: String::new(),
                    text,
                })
            }
            _ => None,
        })
        .collect()
}

impl Runtime for MarketOnly {
    fn name(&self) -> &'static str {
        "market-only"
    }

    fn on_event(&mut self, ev: &TapeEvent) {
        self.market.apply(ev);
    }

    fn market(&self) -> &MarketState {
        &self.market
    }

    fn arm(&mut self, doc: &Document, now: Ts) -> Vec<String> {
        let text = lang::print(doc);
        let infos = plan_infos(doc, "armed");
        let names: Vec<String> = infos.iter().map(|p| p.name.clone()).collect();
        self.emit(serde_json::json!({
            "type": "document-armed",
            "ts": now.to_string(),
            "text": text,
            "blake3": blake3::hash(text.as_bytes()).to_hex().to_string(),
            "plans": names,
        }));
        // A supersede replaces the standing book.
        self.plans = infos
            .into_iter()
            .map(|mut p| {
                p.note = "not evaluated: market-only runtime".into();
                p
            })
            .collect();
        names
    }

    fn stand_down(&mut self, reason: &str, now: Ts) {
        self.emit(serde_json::json!({
            "type": "stand-down", "ts": now.to_string(), "reason": reason,
        }));
        for p in &mut self.plans {
            p.state = "stood down".into();
            p.note = format!("STAND-DOWN {reason}");
        }
    }

    fn cancel(&mut self, target: &str, now: Ts) -> bool {
        let mut hit = false;
        for p in self.plans.iter_mut().filter(|p| p.name == target) {
            hit = true;
            p.state = "stood down".into();
            p.note = "CANCEL".into();
        }
        self.emit(serde_json::json!({
            "type": "cancel", "ts": now.to_string(), "target": target,
            "result": if hit { "stood down" } else { "no such plan" },
        }));
        hit
    }

    fn plans(&self) -> Vec<PlanInfo> {
        self.plans.clone()
    }

    fn book(&self) -> Snapshot {
        Snapshot {
            plans: self.plans.iter().map(PlanInfo::row).collect(),
            ..Snapshot::default()
        }
    }

    fn tail(&self, n: usize) -> Vec<String> {
        self.log[self.log.len().saturating_sub(n)..].to_vec()
    }

    fn event_count(&self) -> u64 {
        self.log.len() as u64
    }

    fn marks(&self) -> (Vec<Mark>, Vec<Mark>) {
        (Vec::new(), Vec::new())
    }

    fn hash(&self) -> String {
        self.hasher.finalize().to_hex().to_string()
    }
}

/// The tick engine behind the desk, inside a [`Session`]: plans evaluated on every tick,
/// orders, fills, P&L, and the Bus (written as it goes, hashed: the determinism hash). When
/// an agent is attached, every WAKE the engine fires (and the OPEN wake) delivers its View to
/// the agent and routes its turn through the bounded repair loop, exactly as a headless
/// session does: `view-delivered`, `repair` and `turn` events on the Bus.
pub struct EngineRt {
    session: Option<Session<Cursor<Vec<u8>>>>,
    agent: Option<Agent>,
    lines: Arc<Vec<AgentTurnLine>>,
    attempts: Vec<RepairAttempt>,
    done: Option<Bus>,
    /// The engine's market is gone once the session is finished; this copy serves the
    /// Frame and chart after the close.
    shadow: MarketState,
    texts: BTreeMap<String, PlanInfo>,
    notes: BTreeMap<String, String>,
    fills: Vec<Mark>,
    fires: Vec<Mark>,
    seen: usize,
    sink: Option<Box<dyn Write>>,
}

/// Dollars per 1R when the desk is not told otherwise.
pub const DEFAULT_R_USD: i64 = 1000;

/// The wake name human (editor) turns are recorded under on the Bus.
pub const DESK_WAKE: &str = "desk";

impl EngineRt {
    /// The engine on a tape, 1R = `r_usd`, fill model strict-cross-v1; the Bus is written to
    /// `sink` as it goes. No agent is attached (wakes fire on the Bus but nobody is asked).
    pub fn new(header: &TapeHeader, r_usd: Px, sink: Option<Box<dyn Write>>) -> EngineRt {
        let mut line = crate::market::tape::header_line(header).into_bytes();
        line.push(b'\n');
        let cfg = SessionConfig {
            engine: EngineConfig::strict(r_usd),
            profile: Profile::AuthoringV2,
            author: AuthorKind::Model,
            open_wake: true,
            view_request_cap: None,
        };
        let (session, done) = match TapeReader::new(Cursor::new(line))
            .map_err(|e| e.to_string())
            .and_then(|r| Session::new(r, cfg, &[], Bus::new(None).keeping()))
        {
            Ok(s) => (Some(s), None),
            // Unreachable for a tape the driver opened; the desk then shows the market only.
            Err(_) => (None, Some(Bus::new(None).keeping())),
        };
        let mut rt = EngineRt {
            session,
            agent: None,
            lines: Arc::default(),
            attempts: Vec::new(),
            done,
            shadow: MarketState::new(header),
            texts: BTreeMap::new(),
            notes: BTreeMap::new(),
            fills: Vec::new(),
            fires: Vec::new(),
            seen: 0,
            sink,
        };
        rt.sync();
        rt
    }

    /// Attach an agent: it is asked at every wake (the OPEN wake first). A script answers
    /// inline (held for the person when `hold`); a remote seat sends every wake out on `out`
    /// and waits for [`AgentAct::Answer`]. `segment` tags the calls of this run.
    pub fn with_agent(
        mut self,
        name: &str,
        seat: AgentSeat,
        hold: bool,
        out: Option<std::sync::mpsc::Sender<AgentCall>>,
        segment: u32,
    ) -> EngineRt {
        self.agent = Some(Agent {
            seat,
            name: name.to_string(),
            out,
            attached: true,
            hold,
            quiet: false,
            segment,
            calls: 0,
            outstanding: None,
        });
        self
    }

    fn engine(&self) -> Option<&Engine> {
        self.session.as_ref().map(|s| &s.engine)
    }

    fn bus(&self) -> Option<&Bus> {
        self.engine().map(Engine::bus).or(self.done.as_ref())
    }

    /// Write new Bus events to the sink and note fires, fills and reasons.
    fn sync(&mut self) {
        let Some(bus) = self
            .session
            .as_ref()
            .map(|s| s.engine.bus())
            .or(self.done.as_ref())
        else {
            return;
        };
        let evs = &bus.events()[self.seen.min(bus.events().len())..];
        for ev in evs {
            if let Some(w) = self.sink.as_mut()
                && w.write_all(&bus::canonical_line(ev))
                    .and_then(|_| w.flush())
                    .is_err()
            {
                self.sink = None;
            }
            match ev {
                Event::PlanFired { ts, plan, clause } => {
                    self.notes
                        .insert(plan.clone(), format!("{clause} fired {}", ts.hhmm()));
                    self.fires.push(Mark {
                        ts: *ts,
                        plan: plan.clone(),
                        what: clause.clone(),
                    });
                }
                Event::Fill { ts, plan, side, .. } => self.fills.push(Mark {
                    ts: *ts,
                    plan: plan.clone(),
                    what: format!("{side:?}").to_lowercase(),
                }),
                Event::PlanState {
                    plan,
                    reason: Some(r),
                    ..
                } => {
                    self.notes.insert(plan.clone(), r.clone());
                }
                Event::Repair { attempt, .. } => {
                    if let Ok(a) = serde_json::from_value::<RepairAttempt>(attempt.clone()) {
                        self.attempts.push(a);
                    }
                }
                Event::Turn { ts, wake, turn } => {
                    let routed = serde_json::from_value::<RoutedTurn>(turn.clone()).ok();
                    // An agent's supersede: keep its plans' texts for the Plans pane.
                    if let Some(doc) = routed
                        .as_ref()
                        .filter(|t| matches!(t.outcome, Outcome::Supersede { .. }))
                        .and_then(|t| t.document())
                    {
                        for p in plan_infos(&doc, "armed") {
                            self.texts.insert(p.name.clone(), p);
                        }
                    }
                    let attempts = std::mem::take(&mut self.attempts);
                    if wake != DESK_WAKE
                        && let Some(r) = routed
                    {
                        let written = attempts.last().map(|a| a.written.as_str());
                        let tokens =
                            written.and_then(|w| tokens::measure(w, &r, Encoding::Cl100k).ok());
                        let author = self.agent.as_ref().map(|a| a.name.clone());
                        Arc::make_mut(&mut self.lines).push(AgentTurnLine {
                            ts: *ts,
                            wake: wake.clone(),
                            author: author.unwrap_or_else(|| "agent".into()),
                            routed: Some(r),
                            rejected: None,
                            tokens,
                            attempts: attempts.len(),
                        });
                    }
                }
                Event::TurnRejected {
                    ts,
                    wake,
                    by,
                    outcome,
                } => {
                    let author = self.agent.as_ref().map(|a| a.name.clone());
                    Arc::make_mut(&mut self.lines).push(AgentTurnLine {
                        ts: *ts,
                        wake: wake.clone(),
                        author: author.unwrap_or_else(|| "agent".into()),
                        routed: None,
                        rejected: Some((outcome.clone(), by.clone())),
                        tokens: None,
                        attempts: 0,
                    });
                }
                _ => {}
            }
        }
        self.seen += evs.len();
    }
}

fn state_name(s: bus::PlanState) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(|s| s.replace('-', " ")))
        .unwrap_or_default()
}

impl Runtime for EngineRt {
    fn name(&self) -> &'static str {
        "engine"
    }

    fn on_event(&mut self, ev: &TapeEvent) {
        self.shadow.apply(ev);
        if let Some(s) = self.session.as_mut() {
            let fired = s.feed(ev);
            if let Some(agent) = self.agent.as_mut().filter(|a| a.attached) {
                for w in &fired {
                    match &mut agent.seat {
                        AgentSeat::Script(src) if !agent.hold => s.wake(w, src.as_mut()),
                        _ => {
                            if let Some((ask, ctx)) = s.ask(w) {
                                agent.call(ask, ctx);
                            }
                        }
                    }
                }
            }
            self.sync();
        }
    }

    fn market(&self) -> &MarketState {
        match self.engine() {
            Some(e) => e.market(),
            None => &self.shadow,
        }
    }

    fn arm(&mut self, doc: &Document, _now: Ts) -> Vec<String> {
        let Some(e) = self.session.as_mut().map(|s| &mut s.engine) else {
            return Vec::new();
        };
        let names = e.arm_document(doc);
        for p in plan_infos(doc, "armed") {
            self.texts.insert(p.name.clone(), p);
        }
        self.sync();
        names
    }

    fn stand_down(&mut self, reason: &str, _now: Ts) {
        if let Some(s) = self.session.as_mut() {
            s.engine.stand_down(reason);
            self.sync();
        }
    }

    fn cancel(&mut self, target: &str, _now: Ts) -> bool {
        let hit = self
            .session
            .as_mut()
            .is_some_and(|s| s.engine.cancel(target));
        self.sync();
        hit
    }

    fn record_turn(&mut self, routed: &RoutedTurn, now: Ts) {
        if let Some(s) = self.session.as_mut() {
            s.record_human(now, DESK_WAKE, routed.clone());
            self.sync();
        }
    }

    fn agent_act(&mut self, act: &AgentAct, now: Ts) -> String {
        let (Some(s), Some(agent)) = (self.session.as_mut(), self.agent.as_mut()) else {
            return "refused: no agent attached to this session".into();
        };
        let result = match act {
            AgentAct::Answer { call, run } => {
                if agent.outstanding_call() != Some(*call) {
                    return format!("refused: call {call} is not outstanding");
                }
                agent.outstanding = None;
                let outcome = run.turn.outcome.name().to_string();
                if let Some((ask, ctx)) = s.resolve(now, run.clone()) {
                    agent.call(ask, ctx);
                }
                format!("answered: {outcome}")
            }
            AgentAct::Reject { call, outcome } => {
                if agent.outstanding_call() != Some(*call) {
                    return format!("refused: call {call} is not outstanding");
                }
                agent.outstanding = None;
                s.reject(now, "human", outcome);
                format!("rejected: {outcome}")
            }
            AgentAct::Hold { on } => {
                agent.hold = *on;
                if *on { "co-pilot" } else { "autopilot" }.to_string()
            }
            AgentAct::Attach { on } => {
                agent.attached = *on;
                if !*on && agent.outstanding.take().is_some() {
                    s.reject(now, "detached", "unanswered");
                }
                if *on { "attached" } else { "detached" }.to_string()
            }
        };
        self.sync();
        result
    }

    fn set_quiet(&mut self, quiet: bool) {
        if let Some(a) = self.agent.as_mut() {
            a.quiet = quiet;
            if !quiet && let (Some(c), Some(o)) = (&a.outstanding, &a.out) {
                let _ = o.send(c.clone());
            }
        }
    }

    fn agent_turns(&self) -> Arc<Vec<AgentTurnLine>> {
        self.lines.clone()
    }

    fn plans(&self) -> Vec<PlanInfo> {
        let Some(bus) = self.bus() else {
            return Vec::new();
        };
        let b = bus.blotter();
        b.plans
            .iter()
            .map(|(name, line)| {
                let base = self.texts.get(name);
                let pnl = b.in_r(b.pnl(name)).map(|p| p.to_f64()).unwrap_or(0.0);
                PlanInfo {
                    name: name.clone(),
                    state: state_name(line.state),
                    budget_r: base.map(|p| p.budget_r).unwrap_or(0.0),
                    used_r: pnl,
                    ttl: base.map(|p| p.ttl.clone()).unwrap_or_default(),
                    note: self
                        .notes
                        .get(name)
                        .cloned()
                        .unwrap_or_else(|| format!("fires {} fills {}", line.fires, line.fills)),
                    text: base.map(|p| p.text.clone()).unwrap_or_default(),
                }
            })
            .collect()
    }

    fn book(&self) -> Snapshot {
        let Some(bus) = self.bus() else {
            return Snapshot::default();
        };
        let mut s = Snapshot::from_blotter(bus.blotter());
        s.plans = self.plans().iter().map(PlanInfo::row).collect();
        if let Some(se) = &self.session {
            s.journal = se.journal().to_vec();
            s.wakes_used = se.wakes_used();
        }
        s
    }

    fn tail(&self, n: usize) -> Vec<String> {
        let Some(bus) = self.bus() else {
            return Vec::new();
        };
        let evs = bus.events();
        evs[evs.len().saturating_sub(n)..]
            .iter()
            .map(|e| {
                String::from_utf8_lossy(&bus::canonical_line(e))
                    .trim_end()
                    .to_string()
            })
            .collect()
    }

    fn event_count(&self) -> u64 {
        self.bus().map(Bus::count).unwrap_or(0)
    }

    fn marks(&self) -> (Vec<Mark>, Vec<Mark>) {
        (self.fills.clone(), self.fires.clone())
    }

    fn hash(&self) -> String {
        self.bus().map(Bus::hash_hex).unwrap_or_default()
    }

    fn finish(&mut self) {
        if let Some(s) = self.session.take() {
            self.done = Some(s.finish());
            self.sync();
        }
    }
}
