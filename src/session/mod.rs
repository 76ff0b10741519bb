//! A session: one tape, the engine, its WAKEs, the Views they deliver, and an author's
//! turns, all on one Bus.
//!
//! The loop is: feed the next tape event to the engine; when a WAKE fires (or at the OPEN
//! wake), render the View it delivers at that instant (a `view-delivered` event carries the
//! Frame exactly as sent), ask the author through the bounded repair loop, and apply the
//! routed turn (`supersede`, `stand-down`, `cancel`, `pass`; a SHOW VIEW request is answered
//! at the same frozen cutoff and the author is asked again) at the tape time the reply
//! arrives. Only routed turns cross into the Bus (`turn`, plus one `repair` event per
//! attempt), canonicalised; a [`Recorded`] author replays them from a saved Bus, so the same
//! tape with the same recording gives a byte-identical Bus and the same determinism hash.
//!
//! Headless sessions pace replies by their recorded arrival time, or take them at the wake's
//! instant (the frozen cutoff) for authors that answer synchronously; the desk runs the same
//! session with a live author on its own task, so the tape never waits.

use crate::bus::{Bus, Event, PlanState, parse_bus};
use crate::engine::{Engine, EngineConfig, FiredWake};
use crate::lang::{self, Scope, ast};
use crate::market::{TapeError, TapeEvent, TapeReader, Ts};
use crate::turn::repair::{self, Ask, RepairAttempt, RepairPolicy, RepairRun};
use crate::turn::{AuthorKind, Outcome, Profile, Reply, RoutedTurn, TurnContext, WakePhase};
use crate::view::snapshot::{JournalRow, PlanRow};
use crate::view::{self, Bars, Rendered, Snapshot, Woke};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

/// What the author is asked at a wake.
#[derive(Debug, Clone)]
pub struct WakeAsk {
    /// The wake's tape time (the Frame's cutoff).
    pub ts: Ts,
    /// The wake's name (`open` for the OPEN wake).
    pub wake: String,
    pub phase: WakePhase,
    /// The Frame, exactly as delivered.
    pub frame: String,
    /// The prompt: the profile's text with the menu (the card is the author's to add).
    pub prompt: String,
}

/// An author's answer to a wake: the repair run (the routed turn and every attempt) and the
/// tape time the reply arrived (`None`: at the wake's instant).
#[derive(Debug, Clone)]
pub struct Answer {
    pub run: RepairRun,
    pub at: Option<Ts>,
}

/// Something that answers wakes.
pub trait TurnSource {
    /// Answer one wake. `ctx` is the router's context (phase, profile, standing book).
    fn answer(&mut self, ask: &WakeAsk, ctx: &TurnContext) -> Answer;
    /// A short name for reports and the status line.
    fn name(&self) -> String;
    /// Stream the text being written to `sink` as it arrives (authors that write live; the
    /// desk shows it). Others ignore it.
    fn stream_to(&mut self, _sink: crate::author::DeltaSink) {}
}

/// An author that writes replies (a person, a program, a model): each wake runs the bounded
/// repair loop around it; the reply acts at the wake's instant.
pub struct Live<F: FnMut(&WakeAsk, &Ask) -> Reply> {
    pub name: String,
    pub write: F,
    pub policy: RepairPolicy,
}

impl<F: FnMut(&WakeAsk, &Ask) -> Reply> TurnSource for Live<F> {
    fn answer(&mut self, ask: &WakeAsk, ctx: &TurnContext) -> Answer {
        let write = &mut self.write;
        let mut author = |a: &Ask| write(ask, a);
        Answer {
            run: repair::drive(&mut author, ctx, self.policy),
            at: None,
        }
    }
    fn name(&self) -> String {
        self.name.clone()
    }
}

/// A scripted author: replies in order from a list, one per ask (re-asks included); when the
/// script runs out it passes (an empty reply from a file is a pass).
pub fn scripted(name: &str, replies: Vec<String>) -> impl TurnSource + use<> {
    let mut it = replies.into_iter();
    Live {
        name: name.to_string(),
        write: move |_: &WakeAsk, _: &Ask| Reply::Text(it.next().unwrap_or_default()),
        policy: RepairPolicy::default(),
    }
}

/// A recorded author: replays the routed turns and repair attempts of a saved Bus, wake by
/// wake, at their recorded arrival times.
pub struct Recorded {
    name: String,
    /// (wake, wake time) → answers in order.
    answers: Vec<(String, Ts, Answer)>,
    next: usize,
}

impl Recorded {
    /// Read the turns of a saved Bus (JSON Lines).
    pub fn from_bus(name: &str, bytes: &[u8]) -> Result<Recorded, String> {
        let events = parse_bus(bytes).map_err(|(line, e)| format!("line {line}: {e}"))?;
        let mut answers = Vec::new();
        let mut attempts: Vec<RepairAttempt> = Vec::new();
        let mut asked: Option<(String, Ts)> = None;
        for ev in events {
            match ev {
                Event::ViewDelivered { ts, wake, .. } => asked = Some((wake, ts)),
                Event::Repair { attempt, .. } => {
                    let a: RepairAttempt = serde_json::from_value(attempt)
                        .map_err(|e| format!("a repair record does not read back: {e}"))?;
                    attempts.push(a);
                }
                Event::Turn { ts, wake, turn } => {
                    let turn: RoutedTurn = serde_json::from_value(turn)
                        .map_err(|e| format!("a turn record does not read back: {e}"))?;
                    let (w, wt) = asked.clone().unwrap_or((wake.clone(), ts));
                    let re_asks = attempts.len().saturating_sub(1) as u32;
                    let tokens_spent = attempts.iter().map(|a| a.tokens).sum();
                    let fail_closed = None;
                    answers.push((
                        w,
                        wt,
                        Answer {
                            run: RepairRun {
                                turn,
                                attempts: std::mem::take(&mut attempts),
                                re_asks,
                                tokens_spent,
                                fail_closed,
                            },
                            at: Some(ts),
                        },
                    ));
                }
                _ => {}
            }
        }
        Ok(Recorded {
            name: name.to_string(),
            answers,
            next: 0,
        })
    }

    /// Turns left to replay.
    pub fn remaining(&self) -> usize {
        self.answers.len() - self.next
    }
}

impl TurnSource for Recorded {
    fn answer(&mut self, ask: &WakeAsk, ctx: &TurnContext) -> Answer {
        match self.answers.get(self.next) {
            Some((w, t, a)) if *w == ask.wake && *t == ask.ts => {
                self.next += 1;
                a.clone()
            }
            _ => Answer {
                run: RepairRun {
                    turn: crate::turn::route(
                        &Reply::ProviderError(format!(
                            "the recording has no turn for wake {} at {}",
                            ask.wake, ask.ts
                        )),
                        ctx,
                    ),
                    attempts: Vec::new(),
                    re_asks: 0,
                    tokens_spent: 0,
                    fail_closed: None,
                },
                at: None,
            },
        }
    }
    fn name(&self) -> String {
        self.name.clone()
    }
}

/// Session settings.
pub struct SessionConfig {
    pub engine: EngineConfig,
    pub profile: Profile,
    pub author: AuthorKind,
    /// Ask the author at the open (the OPEN wake).
    pub open_wake: bool,
    /// SHOW VIEW requests answered per wake (the profile's cap when `None`).
    pub view_request_cap: Option<u32>,
}

/// Outcome counts across a session.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    pub wakes: u64,
    pub supersede: u64,
    pub stand_down: u64,
    pub view_request: u64,
    pub cancel: u64,
    pub pass: u64,
    pub fail_closed_pass: u64,
    pub invalid: u64,
    pub truncated: u64,
    pub provider_error: u64,
    pub repairs: u64,
    pub repaired: u64,
}

/// A running session.
pub struct Session<R: BufRead> {
    reader: TapeReader<R>,
    pub engine: Engine,
    pub bars: Bars,
    pub signal: crate::market::Sym,
    pub exec: crate::market::Sym,
    tape: String,
    views: BTreeMap<String, ast::View>,
    default_view: ast::View,
    profile: Profile,
    author: AuthorKind,
    open_wake: bool,
    opened: bool,
    view_cap: Option<u32>,
    journal: Vec<JournalRow>,
    pub counts: Counts,
    /// A turn that arrives later than its wake: (arrival, wake, answer).
    pending: Option<(Ts, String, Answer)>,
    /// A wake asked of an author that answers off the tape thread ([`Session::ask`]): the
    /// author is busy until [`Session::resolve`] or [`Session::reject`].
    awaiting: Option<Awaiting>,
    done: bool,
}

/// A wake whose answer is outstanding (asked with [`Session::ask`]).
#[derive(Debug, Clone)]
struct Awaiting {
    ts: Ts,
    wake: String,
    phase: WakePhase,
    views_requested: u32,
    frame: String,
}

fn cl100k(s: &str) -> usize {
    view::cl100k(s)
}

impl<R: BufRead> Session<R> {
    /// A session over a tape writing to `bus` (give it a sink to write the Bus as it goes;
    /// keep its events with [`Bus::keeping`] for the Blotter-backed panes); `docs` arm at the
    /// open, before the first event.
    pub fn new(
        reader: TapeReader<R>,
        cfg: SessionConfig,
        docs: &[ast::Document],
        bus: Bus,
    ) -> Result<Self, String> {
        let header = reader.header().clone();
        let (signal, exec) = view::symbols_of(&header).ok_or("the tape carries no symbol")?;
        let mut engine = Engine::new(&header, cfg.engine, bus);
        let mut views = BTreeMap::new();
        for d in docs {
            engine.arm_document(d);
            collect_views(d, &mut views);
        }
        let open = engine.market().open_time();
        Ok(Session {
            reader,
            engine,
            bars: Bars::new(signal, open),
            signal,
            exec,
            tape: header.name.clone(),
            views,
            default_view: view::default_view(),
            profile: cfg.profile,
            author: cfg.author,
            open_wake: cfg.open_wake,
            opened: false,
            view_cap: cfg.view_request_cap,
            journal: Vec::new(),
            counts: Counts::default(),
            pending: None,
            awaiting: None,
            done: false,
        })
    }

    /// The tape's name.
    pub fn tape(&self) -> &str {
        &self.tape
    }

    /// Is the tape finished?
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The standing book's names (for the router's scope).
    pub fn standing(&self) -> Scope {
        let b = self.engine.bus().blotter();
        Scope {
            plans: b.plans.keys().cloned().collect(),
            views: self.views.keys().cloned().collect(),
            wakes: self.engine.wake_names().into_iter().collect(),
        }
    }

    /// Advance by one tape event; returns the wakes that fired on it (the OPEN wake first,
    /// at the session's first event).
    pub fn step(&mut self) -> Result<Vec<FiredWake>, TapeError> {
        let Some(ev) = self.reader.next() else {
            self.done = true;
            return Ok(Vec::new());
        };
        let ev = ev?;
        Ok(self.feed(&ev))
    }

    /// Advance by one tape event given by the caller (a driver that reads the tape itself,
    /// like the desk); returns the wakes that fired on it, as [`Session::step`] does.
    pub fn feed(&mut self, ev: &TapeEvent) -> Vec<FiredWake> {
        // A reply that arrived before this event acts first (one that arrived at the same
        // instant acts after the events of that instant, as the desk applies it).
        if let Some((at, _, _)) = &self.pending
            && *at < ev.ts()
        {
            if let Some((at, wake, ans)) = self.pending.take() {
                self.apply(at, &wake, ans);
            }
        }
        if let TapeEvent::Tick(t) = ev {
            self.bars.apply(t);
        }
        self.engine.on_event(ev);
        let mut fired = Vec::new();
        if self.open_wake && !self.opened && ev.ts() >= self.engine.market().open_time() {
            self.opened = true;
            fired.push(FiredWake {
                ts: ev.ts(),
                wake: "open".into(),
                why: "the session opened".into(),
                deliver: None,
                priority: i64::MAX,
            });
        }
        fired.extend(self.engine.take_fired_wakes());
        fired
    }

    /// Put a turn routed outside the wake loop (a person's, from the desk's editor) on the
    /// Bus as a `turn` event at `at`, counted and journaled like an author's. It is only
    /// recorded: the caller carries out its act.
    pub fn record_human(&mut self, at: Ts, wake: &str, routed: RoutedTurn) {
        let ans = Answer {
            run: RepairRun {
                turn: routed,
                attempts: Vec::new(),
                re_asks: 0,
                tokens_spent: 0,
                fail_closed: None,
            },
            at: Some(at),
        };
        self.record(at, wake, &ans);
    }

    /// Is a turn still outstanding (it arrives later than its wake)?
    pub fn has_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// The book now, for the kernel / plans / blotter / journal panes.
    pub fn snapshot(&self) -> Snapshot {
        let b = self.engine.bus().blotter();
        let mut snap = Snapshot::from_blotter(b);
        snap.journal = self.journal.clone();
        snap.wakes_used = self.wakes_used();
        for (name, p) in &b.plans {
            snap.plans.push(PlanRow {
                name: name.clone(),
                state: crate::bus::canon::state_name(p.state).to_string(),
                budget_r: 0.0,
                used_r: 0.0,
                ttl: String::new(),
                note: format!("fires {} fills {}", p.fires, p.fills),
            });
        }
        snap
    }

    /// The journal lines of every turn so far (the journal pane).
    pub fn journal(&self) -> &[JournalRow] {
        &self.journal
    }

    /// Wakes the author was asked at so far (the kernel pane).
    pub fn wakes_used(&self) -> u32 {
        self.counts.wakes.min(u64::from(u32::MAX)) as u32
    }

    /// Render a View (by name, or the default) at the current instant.
    pub fn render(&self, view: Option<&str>, woke: Option<Woke>) -> (String, Rendered) {
        let v = view
            .and_then(|n| self.views.get(n))
            .unwrap_or(&self.default_view);
        (v.name.text.clone(), self.render_view(v, woke))
    }

    fn render_view(&self, v: &ast::View, woke: Option<Woke>) -> Rendered {
        let input = view::FrameInput {
            tape: &self.tape,
            market: self.engine.market(),
            bars: &self.bars,
            signal: self.signal,
            exec: self.exec,
            snapshot: &self.snapshot(),
            woke,
            width: 0,
        };
        view::render_frame(v, &input, &cl100k)
    }

    fn deliver(&mut self, ts: Ts, wake: &str, view_name: String, r: &Rendered) {
        self.engine.bus_mut().emit(Event::ViewDelivered {
            ts,
            wake: wake.to_string(),
            view: view_name,
            tokens: r.tokens as u64,
            dropped: r.dropped.clone(),
            frame: r.text.clone(),
        });
    }

    /// Deliver a fired wake's View and ask the author; the turn acts now or, when it
    /// arrives later, at its arrival time (a wake while a turn is outstanding is logged as
    /// suppressed: the author is busy).
    pub fn wake(&mut self, w: &FiredWake, author: &mut dyn TurnSource) {
        let Some((mut ask, mut ctx)) = self.open_wake(w) else {
            return;
        };
        let mut views_requested = 0u32;
        loop {
            let ans = author.answer(&ask, &ctx);
            // A SHOW VIEW is answered now, at the same frozen cutoff, then asked again.
            if let Some(frame) = self.view_request(w.ts, &w.wake, views_requested, &ans) {
                let frame = if frame.is_empty() { ask.frame } else { frame };
                views_requested += 1;
                (ask, ctx) = self.make_ask(w.ts, &w.wake, ask.phase, views_requested, frame);
                continue;
            }
            match ans.at {
                Some(at) if at > self.engine.market().now().unwrap_or(w.ts) => {
                    self.pending = Some((at, w.wake.clone(), ans));
                }
                at => {
                    let at = at.unwrap_or(w.ts).max(w.ts);
                    self.apply(at, &w.wake, ans);
                }
            }
            return;
        }
    }

    /// The busy check, the count and the View of a fired wake: delivers the View (a
    /// `view-delivered` event) and gives back what to ask the author, or `None` when the
    /// author is still answering an earlier wake (a `wake-suppressed` event). The wake is
    /// then outstanding until [`Session::resolve`] or [`Session::reject`]: this is how an
    /// author that answers off the tape thread (the desk's) is asked.
    pub fn ask(&mut self, w: &FiredWake) -> Option<(WakeAsk, TurnContext)> {
        let (ask, ctx) = self.open_wake(w)?;
        self.awaiting = Some(Awaiting {
            ts: w.ts,
            wake: w.wake.clone(),
            phase: ask.phase,
            views_requested: 0,
            frame: ask.frame.clone(),
        });
        Some((ask, ctx))
    }

    /// The busy check, the count and the View of a fired wake (see [`Session::ask`]),
    /// without marking it outstanding.
    fn open_wake(&mut self, w: &FiredWake) -> Option<(WakeAsk, TurnContext)> {
        let busy = self
            .pending
            .as_ref()
            .map(|p| p.1.clone())
            .or_else(|| self.awaiting.as_ref().map(|a| a.wake.clone()));
        if let Some(busy) = busy {
            let reason = format!("the author is still answering {busy}");
            self.engine.bus_mut().emit(Event::WakeSuppressed {
                ts: w.ts,
                wake: w.wake.clone(),
                reason,
            });
            return None;
        }
        self.counts.wakes += 1;
        let phase = if w.wake == "open" {
            WakePhase::Open
        } else {
            WakePhase::Mid
        };
        let woke = Woke {
            by: w.wake.clone(),
            why: w.why.clone(),
        };
        let (name, r) = self.render(w.deliver.as_deref(), Some(woke));
        self.deliver(w.ts, &w.wake, name, &r);
        Some(self.make_ask(w.ts, &w.wake, phase, 0, r.text))
    }

    fn make_ask(
        &self,
        ts: Ts,
        wake: &str,
        phase: WakePhase,
        views_requested: u32,
        frame: String,
    ) -> (WakeAsk, TurnContext) {
        let mut ctx = TurnContext::new(phase, self.profile, self.author);
        ctx.views_requested = views_requested;
        ctx.standing = Some(self.standing());
        let menu = ctx.menu();
        let ask = WakeAsk {
            ts,
            wake: wake.to_string(),
            phase,
            frame,
            prompt: self.profile.render(&menu.prompt_text(), ""),
        };
        (ask, ctx)
    }

    /// A SHOW VIEW within the cap: record it, deliver the requested View at the wake's
    /// frozen cutoff `at`, and give back its Frame (the author is asked again).
    fn view_request(
        &mut self,
        at: Ts,
        wake: &str,
        views_requested: u32,
        ans: &Answer,
    ) -> Option<String> {
        if !matches!(ans.run.turn.outcome, Outcome::ViewRequest { .. }) {
            return None;
        }
        let cap = self.view_cap.unwrap_or(self.profile.view_request_cap());
        if views_requested >= cap {
            return None;
        }
        let requested = ans.run.turn.document().and_then(|d| {
            d.statements.into_iter().find_map(|s| match s.kind {
                ast::StatementKind::ShowView(v) => Some(v),
                _ => None,
            })
        });
        self.record(at, wake, ans);
        let mut frame = String::new();
        if let Some(v) = requested {
            let r = self.render_view(&v, None);
            self.deliver(at, wake, v.name.text.clone(), &r);
            frame = r.text;
        }
        Some(frame)
    }

    /// The wake outstanding since [`Session::ask`], if any: (name, tape time).
    pub fn awaiting(&self) -> Option<(&str, Ts)> {
        self.awaiting.as_ref().map(|a| (a.wake.as_str(), a.ts))
    }

    /// The answer to the outstanding wake arrives at `at` (the tape point the reply reached
    /// the desk): a SHOW VIEW within the cap is delivered (at the wake's frozen cutoff) and
    /// the next ask is given back; any other turn is recorded and carried out now. With no
    /// wake outstanding the run is ignored and `None` returned.
    pub fn resolve(&mut self, at: Ts, run: RepairRun) -> Option<(WakeAsk, TurnContext)> {
        let a = self.awaiting.clone()?;
        let ans = Answer { run, at: Some(at) };
        if let Some(frame) = self.view_request(a.ts, &a.wake, a.views_requested, &ans) {
            let n = a.views_requested + 1;
            let frame = if frame.is_empty() { a.frame } else { frame };
            if let Some(aw) = self.awaiting.as_mut() {
                aw.views_requested = n;
                aw.frame = frame.clone();
            }
            return Some(self.make_ask(a.ts, &a.wake, a.phase, n, frame));
        }
        self.awaiting = None;
        self.apply(at.max(a.ts), &a.wake, ans);
        None
    }

    /// The outstanding wake's turn was rejected (co-pilot) or its author went away: a
    /// `turn-rejected` event, nothing routed into the book; the author is free again.
    pub fn reject(&mut self, at: Ts, by: &str, outcome: &str) {
        if let Some(a) = self.awaiting.take() {
            self.engine.bus_mut().emit(Event::TurnRejected {
                ts: at.max(a.ts),
                wake: a.wake,
                by: by.to_string(),
                outcome: outcome.to_string(),
            });
        }
    }

    /// Put a turn and its repair attempts on the Bus; count it.
    fn record(&mut self, at: Ts, wake: &str, ans: &Answer) {
        for a in &ans.run.attempts {
            if ans.run.attempts.len() > 1 {
                self.counts.repairs += 1;
            }
            let attempt = serde_json::to_value(a).unwrap_or(serde_json::Value::Null);
            self.engine.bus_mut().emit(Event::Repair {
                ts: at,
                wake: wake.to_string(),
                attempt,
            });
        }
        if ans.run.repaired() {
            self.counts.repaired += 1;
        }
        let t = &ans.run.turn;
        match &t.outcome {
            Outcome::Supersede { .. } => self.counts.supersede += 1,
            Outcome::StandDown { .. } => self.counts.stand_down += 1,
            Outcome::ViewRequest { .. } => self.counts.view_request += 1,
            Outcome::Cancel { .. } => self.counts.cancel += 1,
            Outcome::Pass { fail_closed: true } => self.counts.fail_closed_pass += 1,
            Outcome::Pass { .. } => self.counts.pass += 1,
            Outcome::Invalid { .. } => self.counts.invalid += 1,
            Outcome::Truncated { .. } => self.counts.truncated += 1,
            Outcome::ProviderError { .. } => self.counts.provider_error += 1,
        }
        let turn = serde_json::to_value(t).unwrap_or(serde_json::Value::Null);
        self.engine.bus_mut().emit(Event::Turn {
            ts: at,
            wake: wake.to_string(),
            turn,
        });
        let author = match t.author {
            AuthorKind::Human => "human",
            AuthorKind::Model => "agent",
            AuthorKind::File => "script",
        };
        for j in &t.journal {
            self.journal.push(JournalRow {
                time: at.to_string().get(..8).unwrap_or("").to_string(),
                author: author.to_string(),
                text: j.clone(),
            });
        }
    }

    /// Record a turn and carry out its act at `at`.
    fn apply(&mut self, at: Ts, wake: &str, ans: Answer) {
        self.record(at, wake, &ans);
        let t = &ans.run.turn;
        match &t.outcome {
            Outcome::Supersede { .. } => {
                if let Some(doc) = t.document() {
                    self.views.clear();
                    collect_views(&doc, &mut self.views);
                    self.engine.supersede(&doc);
                }
            }
            Outcome::StandDown { reason } => self.engine.stand_down(reason),
            Outcome::Cancel { target } => {
                self.engine.cancel(target);
            }
            _ => {}
        }
    }

    /// Close the session (settle at the close) and give back the Bus.
    pub fn finish(mut self) -> Bus {
        if let Some((at, wake, ans)) = self.pending.take() {
            self.apply(at, &wake, ans);
        }
        // A call still out at the close was never answered in time.
        let close = self.engine.market().now().unwrap_or(Ts(0));
        self.reject(close, "close", "unanswered");
        self.engine.finish()
    }

    /// End the session cut short (a signal): see [`Engine::interrupt`].
    pub fn interrupt(self, why: &str) -> Bus {
        self.engine.interrupt(why)
    }

    /// Run to the end of the tape with an author; returns the Bus.
    pub fn run(mut self, author: &mut dyn TurnSource) -> Result<Bus, TapeError> {
        while !self.done {
            let fired = self.step()?;
            for w in &fired {
                self.wake(w, author);
            }
        }
        if let Some((at, wake, ans)) = self.pending.take() {
            self.apply(at, &wake, ans);
        }
        Ok(self.engine.finish())
    }

    /// Plans' states right now (name, state).
    pub fn plan_states(&self) -> Vec<(String, PlanState)> {
        self.engine
            .bus()
            .blotter()
            .plans
            .iter()
            .map(|(n, p)| (n.clone(), p.state))
            .collect()
    }
}

fn collect_views(doc: &ast::Document, views: &mut BTreeMap<String, ast::View>) {
    for s in &doc.statements {
        if let ast::StatementKind::View(v) = &s.kind {
            views.insert(v.name.text.clone(), v.clone());
        }
    }
}

/// Parse a document for a session (file rules).
pub fn load_plans(src: &str) -> Result<ast::Document, Vec<lang::Diagnostic>> {
    lang::check(src, lang::Mode::File)
}

/// An attached author (`crate::author`: an OpenAI-compatible model, a command, a recording
/// of replies, a person) as a session's turn source. Each wake runs the bounded repair loop;
/// the prompt is the profile's text, the language card, the View and the menu (plus the
/// guided error on a re-ask). In a headless session the reply acts at the wake's instant
/// (the frozen cutoff); the desk runs authors on their own task so the tape keeps moving.
pub struct Attached {
    author: Box<dyn crate::author::Author>,
    rt: tokio::runtime::Runtime,
    card: String,
    deltas: Option<crate::author::DeltaSink>,
    pub policy: RepairPolicy,
}

impl Attached {
    /// Attach an author; the card is built once (it does not change within a session).
    pub fn new(author: Box<dyn crate::author::Author>) -> Result<Attached, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the async runtime: {e}"))?;
        let card = crate::lang::card::build("", None, &cl100k)
            .map(|c| c.text)
            .unwrap_or_default();
        Ok(Attached {
            author,
            rt,
            card,
            deltas: None,
            policy: RepairPolicy::default(),
        })
    }

    /// The author's identity (kind, model, constrained, temperature).
    pub fn info(&self) -> crate::author::AuthorInfo {
        self.author.info()
    }
}

impl TurnSource for Attached {
    fn answer(&mut self, ask: &WakeAsk, ctx: &TurnContext) -> Answer {
        let author = &mut self.author;
        let rt = &self.rt;
        let card = &self.card;
        let deltas = &self.deltas;
        let profile = ctx.profile;
        let mut write = |a: &Ask| -> Reply {
            let prompt = crate::author::Prompt {
                profile: profile.prompt().to_string(),
                card: card.clone(),
                view: ask.frame.clone(),
                menu: a.menu.prompt_text(),
                repair: a.repair_prompt(),
            };
            match rt.block_on(author.author(&prompt, deltas.clone())) {
                crate::author::Outcome::Reply(text) => Reply::Text(text),
                crate::author::Outcome::CutOff(text) => Reply::CutOff(text),
                crate::author::Outcome::ProviderError(e) => Reply::ProviderError(e.to_string()),
            }
        };
        Answer {
            run: repair::drive(&mut write, ctx, self.policy),
            at: None,
        }
    }
    fn name(&self) -> String {
        let i = self.author.info();
        format!("{} {}", i.kind, i.model)
    }
    fn stream_to(&mut self, sink: crate::author::DeltaSink) {
        self.deltas = Some(sink);
    }
}

/// How a model or command author is run (`kestrel agent`, `kestrel desk`).
#[derive(Debug, Clone, clap::Args)]
pub struct AuthorFlags {
    /// The model name sent to an OpenAI-compatible server.
    #[arg(long, default_value = "default")]
    pub model: String,
    /// Sampling temperature for a model author.
    #[arg(long, default_value_t = 0.7)]
    pub temperature: f32,
    /// Send the exported GBNF as `grammar` (llama.cpp-style constrained decoding).
    #[arg(long)]
    pub constrained: bool,
    /// Seconds a model or command author may take for one reply.
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
    /// Leave KESTREL_API_KEY and OPENAI_API_KEY in a command author's environment (by
    /// default they are removed from it).
    #[arg(long)]
    pub pass_api_key: bool,
}

impl Default for AuthorFlags {
    fn default() -> Self {
        AuthorFlags {
            model: "default".into(),
            temperature: 0.7,
            constrained: false,
            timeout: 120,
            pass_api_key: false,
        }
    }
}

impl AuthorFlags {
    /// The author `spec` run this way.
    pub fn spec(&self, spec: &str) -> AuthorSpec {
        AuthorSpec {
            spec: spec.to_string(),
            model: self.model.clone(),
            temperature: self.temperature,
            constrained: self.constrained,
            timeout_secs: self.timeout,
            pass_api_key: self.pass_api_key,
        }
    }
}

/// What an author string names (see [`AuthorSpec::resolve`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthorTarget {
    /// An OpenAI-compatible server (`http(s)://HOST/v1`).
    Model(String),
    /// A command line run with `sh -c`.
    Command(String),
    /// An author file (a saved Bus or a script of replies).
    File(String),
}

/// How to reach an author given as one string (`kestrel agent --author`, `kestrel desk
/// --author`).
#[derive(Debug, Clone)]
pub struct AuthorSpec {
    /// `http(s)://HOST/v1` (an OpenAI-compatible server), an existing `.jsonl` file (a
    /// saved Bus whose turns replay, or a script of `{"reply": "..."}` lines), or
    /// `cmd:COMMAND`, a command run with `sh -c` (prompt on stdin, reply on stdout). The
    /// bare form of a command is still read when it cannot be a path (see
    /// [`AuthorSpec::resolve`]).
    pub spec: String,
    /// The model name sent to a server.
    pub model: String,
    /// Sampling temperature for a model.
    pub temperature: f32,
    /// Send the exported GBNF as `grammar`.
    pub constrained: bool,
    /// Seconds one reply may take.
    pub timeout_secs: u64,
    /// Leave the API key variables in a command author's environment.
    pub pass_api_key: bool,
}

impl AuthorSpec {
    /// What the string names, or why it names nothing:
    ///
    /// 1. `http://` or `https://`: a model server;
    /// 2. `cmd:COMMAND`: a command (the explicit form);
    /// 3. an existing file ending in `.jsonl`: an author file;
    /// 4. a value that looks like a path — it ends in `.jsonl`, `.json` or `.txt`, or holds a
    ///    `/` and no whitespace — and is not an existing file: refused, *no such file* (a
    ///    mistyped path is never run as a shell command); an existing `.json`/`.txt` file is
    ///    refused too (it is neither an author file nor, unambiguously, a command);
    /// 5. anything else (an existing script path, a command line such as
    ///    `sh examples/command-author.sh`): a command, the old bare form.
    pub fn resolve(&self) -> Result<AuthorTarget, String> {
        let s = self.spec.trim();
        if s.starts_with("http://") || s.starts_with("https://") {
            return Ok(AuthorTarget::Model(s.to_string()));
        }
        if let Some(c) = s.strip_prefix("cmd:") {
            if c.trim().is_empty() {
                return Err("cmd: names no command: write cmd:COMMAND".into());
            }
            return Ok(AuthorTarget::Command(c.to_string()));
        }
        let path = Path::new(s);
        let data_ext = [".jsonl", ".json", ".txt"].iter().any(|e| s.ends_with(e));
        let pathish = data_ext || (s.contains('/') && !s.contains(char::is_whitespace));
        if s.ends_with(".jsonl") && path.is_file() {
            return Ok(AuthorTarget::File(s.to_string()));
        }
        if pathish && !path.exists() {
            return Err(format!(
                "no such file: {s} (an author is http(s)://HOST/v1, an existing .jsonl file, or cmd:COMMAND)"
            ));
        }
        if data_ext {
            return Err(format!(
                "{s} is not a .jsonl author file; to run it as a command write cmd:{s}"
            ));
        }
        Ok(AuthorTarget::Command(s.to_string()))
    }

    /// Does this author write live (a model or a command), rather than replay a file? An
    /// author string that names nothing is not live (opening it reports why).
    pub fn is_live(&self) -> bool {
        matches!(
            self.resolve(),
            Ok(AuthorTarget::Model(_) | AuthorTarget::Command(_))
        )
    }

    /// Open the author as a turn source, with the kind the router is told. The API key of a
    /// model author comes from the environment or the config directory, never from here.
    pub fn open(&self) -> Result<(Box<dyn TurnSource>, AuthorKind), String> {
        use crate::author::command::CommandAuthor;
        use crate::author::openai::{OpenAiAuthor, OpenAiConfig};
        use crate::author::secret::{config_dir, load_api_key};
        let timeout = std::time::Duration::from_secs(self.timeout_secs.max(1));
        match self.resolve()? {
            AuthorTarget::Model(url) => {
                let mut cfg = OpenAiConfig::new(url, &self.model);
                cfg.temperature = self.temperature;
                cfg.constrained = self.constrained;
                cfg.total_timeout = timeout;
                cfg.api_key = load_api_key(None, config_dir().as_deref())?;
                let src = Attached::new(Box::new(OpenAiAuthor::new(cfg)))?;
                Ok((Box::new(src), AuthorKind::Model))
            }
            AuthorTarget::Command(line) => {
                let mut cmd = CommandAuthor::new("sh", vec!["-c".into(), line], timeout);
                cmd.pass_api_key = self.pass_api_key;
                let src = Attached::new(Box::new(cmd))?;
                Ok((Box::new(src), AuthorKind::File))
            }
            AuthorTarget::File(f) => Ok((read_author_file(&f, Path::new(&f))?, AuthorKind::File)),
        }
    }
}

/// Read an author file: a saved Bus (its turns replay) or a script of `{"reply": "..."}`
/// lines answered in order. Errors name the file and line.
pub fn read_author_file(spec: &str, path: &Path) -> Result<Box<dyn TurnSource>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read the author {spec}: {e}"))?;
    let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    let v: serde_json::Value = serde_json::from_slice(first)
        .map_err(|e| format!("{spec}: line 1 is not JSON ({e}): an author file is a saved Bus or a script of {{\"reply\": ...}} lines"))?;
    if v["type"] == "session-start" {
        return Ok(Box::new(Recorded::from_bus(spec, &bytes)?));
    }
    let text = String::from_utf8_lossy(&bytes);
    let replies = parse_script(&text).map_err(|e| format!("{spec}: {e}"))?;
    Ok(Box::new(scripted(spec, replies)))
}

/// Read a script of `{"reply": "..."}` lines (one reply per ask). Errors name the line.
pub fn parse_script(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(l).map_err(|e| format!("line {}: not JSON: {e}", i + 1))?;
        let r = v["reply"]
            .as_str()
            .ok_or_else(|| format!("line {}: expected {{\"reply\": \"...\"}}", i + 1))?;
        out.push(r.to_string());
    }
    Ok(out)
}
