//! One pass of a tape from the open: the engine, the bars, the wakes, the Views they
//! deliver, and an author's asks and answers, all on one Bus.
//!
//! The loop is: feed the next tape event to the engine; when a WAKE fires (or at the OPEN
//! wake), render the View it delivers at that instant (a `view-delivered` event carries the
//! Frame exactly as sent), ask the author through the bounded repair loop, and apply the
//! routed turn (`supersede`, `stand-down`, `cancel`, `pass`; a SHOW VIEW request is answered
//! at the same frozen cutoff and the author is asked again) at the tape time the reply
//! arrives. Only routed turns cross into the Bus (`turn`, plus one `repair` event per
//! attempt), canonicalised.
//!
//! A [`Run`] is what the [`Session`](super::Session) holds between restarts; headless verbs
//! with one author drive it to the end of the tape with [`Run::run`].

use super::{Answer, TurnSource, WakeAsk};
use crate::bus::{Bus, Event, PlanState};
use crate::engine::{Engine, EngineConfig, FiredWake};
use crate::lang::{Scope, ast};
use crate::market::{TapeError, TapeEvent, TapeReader, Ts};
use crate::turn::repair::RepairRun;
use crate::turn::{AuthorKind, Outcome, Profile, RoutedTurn, TurnContext, WakePhase};
use crate::view::snapshot::{JournalRow, PlanRow};
use crate::view::{self, Bars, Rendered, Snapshot, Woke};
use std::collections::BTreeMap;
use std::io::BufRead;

/// How a run is set up.
pub struct RunConfig {
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
    /// Re-asks: every attempt of a turn after its first.
    pub reasks: u64,
}

/// One pass of a tape from the open.
pub struct Run<R: BufRead> {
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
    /// A wake asked of an author that answers off the tape thread ([`Run::ask`]): the
    /// author is busy until [`Run::resolve`] or [`Run::reject`].
    awaiting: Option<Awaiting>,
    done: bool,
    /// The next tape event, read ahead by [`Run::peek_ts`].
    next: Option<TapeEvent>,
    /// The refusal of the line read ahead (it stands: every later read gives it again).
    bad: Option<TapeError>,
    /// The owner the author's acts carry where the book is shared (the desk: `agent`);
    /// `None` in a headless run with one author, whose supersede replaces the whole book.
    author_owner: Option<String>,
    /// What each armed plan's document said of it (owner, budget, ttl, text), by name.
    plan_meta: BTreeMap<String, PlanMeta>,
    /// Every turn recorded on the Bus and every rejection, in order.
    turn_log: Vec<TurnEntry>,
    /// Acts that reached another owner's plan, for the desk to say.
    notices: Vec<CrossOwner>,
    /// The author's wakes before the current session (the kernel pane counts its own).
    wakes_before: u64,
    /// cl100k tokens of the last View delivered (what the author answering now was sent).
    view_tokens: usize,
}

/// An act that reached a plan another owner armed (an agent's CANCEL of the person's plan).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrossOwner {
    /// Tape time.
    pub ts: Ts,
    /// Who acted.
    pub actor: String,
    /// Whose plan it was.
    pub owner: String,
    /// The plan.
    pub plan: String,
}

/// What a plan's document said of it when it was armed.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanMeta {
    /// Who armed it (`None` in a headless run).
    pub owner: Option<String>,
    /// The budget in R.
    pub budget_r: f64,
    /// The ttl as written.
    pub ttl: ast::Ttl,
    /// The plan in canonical Kestrel.
    pub text: String,
}

/// A turn recorded on the Bus (or a rejected proposal), as the Journal and Tokens panes
/// list it.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnEntry {
    /// Tape time it acted (or was rejected).
    pub ts: Ts,
    /// The wake it answered (`desk` for a person's turn).
    pub wake: String,
    /// The routed turn (`None`: rejected).
    pub turn: Option<RoutedTurn>,
    /// The rejected turn's outcome and who rejected it.
    pub rejected: Option<(String, String)>,
    /// Attempts of its repair loop (1: no re-ask; 0: rejected or a person's).
    pub attempts: usize,
    /// The text the author wrote last (what the token figures measure).
    pub written: String,
    /// What failed, when the author wrote no valid turn ([`RepairRun::failure`]: why a
    /// fail-closed pass's last reply was refused, what a provider error reported).
    ///
    /// [`RepairRun::failure`]: crate::turn::RepairRun::failure
    pub failure: Option<String>,
    /// The size in bytes of the last reply when it was refused unread for its size: only its
    /// first bytes are kept in [`written`](Self::written), and its tokens are an estimate
    /// ([`RepairRun::oversized`](crate::turn::RepairRun::oversized)).
    pub oversized: Option<usize>,
    /// What every attempt of its repair loop cost (the refused replies too), by what
    /// measured it: the desk's cl100k counts, estimates, the provider's `usage`.
    pub spend: crate::turn::repair::Spend,
    /// cl100k tokens of the View the wake it answered delivered (0 for a person's turn):
    /// the desk's estimate of the prompt's view part when the provider gave no `usage`.
    pub view_tokens: usize,
    /// What its supersede did when the engine left a plan of it out (its name another
    /// owner's live plan): `armed nothing: PLAN x not armed: …` or `armed a; PLAN x not
    /// armed: …`, with the engine's reasons. `None`: every plan armed, or no supersede.
    pub refused: Option<String>,
    /// What a rejected proposal that routed proposed (`PLAN breakout`, `STAND-DOWN quiet`:
    /// [`proposal_summary`](super::owner::proposal_summary)), for the Journal after the
    /// reject. `None`: not rejected, no proposal, or it failed ([`failure`](Self::failure)).
    pub proposed: Option<String>,
}

/// A wake whose answer is outstanding (asked with [`Run::ask`]).
#[derive(Debug, Clone)]
struct Awaiting {
    ts: Ts,
    wake: String,
    phase: WakePhase,
    views_requested: u32,
    frame: String,
}

/// How long (tape milliseconds after the open) the OPEN wake waits for every declared
/// symbol's first print.
pub const OPEN_WAIT_MS: u32 = 60_000;

fn cl100k(s: &str) -> usize {
    view::cl100k(s)
}

impl<R: BufRead> Run<R> {
    /// A session over a tape writing to `bus` (give it a sink to write the Bus as it goes;
    /// keep its events with [`Bus::keeping`] for the Blotter-backed panes); `docs` arm at the
    /// open, before the first event.
    pub fn new(
        reader: TapeReader<R>,
        cfg: RunConfig,
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
        let mut run = Run {
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
            next: None,
            bad: None,
            author_owner: None,
            plan_meta: BTreeMap::new(),
            turn_log: Vec::new(),
            notices: Vec::new(),
            wakes_before: 0,
            view_tokens: 0,
        };
        for d in docs {
            run.note_plans(d, None);
        }
        Ok(run)
    }

    /// The tape's name.
    pub fn tape(&self) -> &str {
        &self.tape
    }

    /// Is the tape finished: every event applied, and the tape whole (a refusal read ahead
    /// is still to be given by the next step)?
    pub fn is_done(&self) -> bool {
        self.done && self.next.is_none() && self.bad.is_none()
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
        Ok(self.step_event()?.map(|(_, f)| f).unwrap_or_default())
    }

    /// The time of the next tape event (`None` at the end of the tape), read ahead.
    #[inline]
    pub fn peek_ts(&mut self) -> Result<Option<Ts>, TapeError> {
        match &self.next {
            Some(ev) => Ok(Some(ev.ts())),
            None => self.read_ahead(),
        }
    }

    /// [`peek_ts`](Self::peek_ts) with no event read ahead: read the next line (or give the
    /// refusal that stands).
    fn read_ahead(&mut self) -> Result<Option<Ts>, TapeError> {
        if let Some(e) = &self.bad {
            // The instant the refused line would have ended is not whole: it never steps
            // (its events stand in the market; no plan acts on half an instant).
            self.engine.drop_owed_step();
            return Err(e.clone());
        }
        // (Nothing is read ahead here: `peek_ts` answers from `next` when it holds one.)
        if !self.done {
            match self.reader.next() {
                Some(Ok(ev)) => self.next = Some(ev),
                Some(Err(e)) => {
                    self.bad = Some(e.clone());
                    return Err(e);
                }
                None => {
                    self.done = true;
                    // A tape cut short is refused, not run (and settled) as a whole session.
                    if let Err(e) = self.reader.check_complete() {
                        self.bad = Some(e.clone());
                        return Err(e);
                    }
                }
            }
        }
        Ok(self.next.as_ref().map(TapeEvent::ts))
    }

    /// Is the next event (the one [`Run::peek_ts`] read) a `session` line, the start of the
    /// next session of a multi-session tape?
    pub fn next_is_session(&self) -> bool {
        matches!(self.next, Some(TapeEvent::Session(_)))
    }

    /// Advance by one tape event: the event and the wakes that fired on it (`None` at the
    /// end of the tape).
    pub fn step_event(&mut self) -> Result<Option<(TapeEvent, Vec<FiredWake>)>, TapeError> {
        self.peek_ts()?;
        let Some(ev) = self.next.take() else {
            return Ok(None);
        };
        // The next event's time, read ahead: the plans step once the instant is whole. After
        // this event comes a refused line: the step is owed, and the refusal, given at the
        // next call, drops it (the instant is not known to be whole).
        let next = self.peek_ts().unwrap_or(Some(ev.ts()));
        let fired = self.feed(&ev, next);
        Ok(Some((ev, fired)))
    }

    /// The plans of `doc` the author's supersede would not arm now: their names are live
    /// plans of another owner (the person's, at the desk). Empty when the book is not shared.
    pub fn claimed_names(&self, doc: &ast::Document) -> Vec<String> {
        let Some(owner) = self.author_owner.as_deref() else {
            return Vec::new();
        };
        doc.statements
            .iter()
            .filter_map(|st| match &st.kind {
                ast::StatementKind::Plan(p) => Some(p.name.text.clone()),
                _ => None,
            })
            .filter(|n| self.engine.claimed_by_other(n, owner))
            .collect()
    }

    /// Share the book: the author's acts carry `owner`, so its supersede and STAND-DOWN
    /// reach only the plans it armed (TURNS.md §1, "Whose book").
    pub fn share_book(&mut self, owner: &str) {
        self.author_owner = Some(owner.to_string());
    }

    /// Arm a checked document for `owner`, replacing that owner's book (`None`: the
    /// whole book). Its VIEWs join the standing screens.
    pub fn supersede_as(&mut self, doc: &ast::Document, owner: Option<&str>) -> Vec<String> {
        let names = self.engine.supersede_as(doc, owner);
        collect_views(doc, &mut self.views);
        self.note_plans(doc, owner);
        names
    }

    /// Add a checked document to `owner`'s book: new plans join it, plans of the same names
    /// that `owner` armed are replaced (the person's turns at the desk).
    pub fn add_as(&mut self, doc: &ast::Document, owner: Option<&str>) -> Vec<String> {
        let names = self.engine.add_as(doc, owner);
        collect_views(doc, &mut self.views);
        self.note_plans(doc, owner);
        names
    }

    /// STAND-DOWN of `owner`'s book (`None`: every plan).
    pub fn stand_down_as(&mut self, reason: &str, owner: Option<&str>) {
        self.engine.stand_down_as(reason, owner);
    }

    /// CANCEL a plan by name on behalf of `actor`; whether one was live. A cancel that
    /// reaches another owner's plan is noted for the desk to show.
    pub fn cancel_as(&mut self, target: &str, actor: Option<&str>) -> bool {
        let owner = self.engine.plan_owner(target).map(str::to_string);
        let hit = self.engine.cancel(target);
        if hit
            && let (Some(a), Some(o)) = (actor, owner.as_deref())
            && a != o
        {
            let now = self.engine.market().now().unwrap_or(Ts(0));
            self.notices.push(CrossOwner {
                ts: now,
                actor: a.to_string(),
                owner: o.to_string(),
                plan: target.to_string(),
            });
        }
        hit
    }

    /// Keep what `doc` says of each of its plans that `owner` now holds: a plan the engine
    /// left out (its name is another owner's live plan) does not overwrite that plan's.
    fn note_plans(&mut self, doc: &ast::Document, owner: Option<&str>) {
        for st in &doc.statements {
            if let ast::StatementKind::Plan(p) = &st.kind {
                if self.engine.plan_owner(&p.name.text) != owner {
                    continue;
                }
                let one = ast::Document {
                    statements: vec![st.clone()],
                    tail: Vec::new(),
                };
                self.plan_meta.insert(
                    p.name.text.clone(),
                    PlanMeta {
                        owner: owner.map(str::to_string),
                        budget_r: p.budget.value(),
                        ttl: p.ttl.clone(),
                        text: crate::lang::print(&one),
                    },
                );
            }
        }
    }

    /// What each armed plan's document said of it.
    pub fn plan_meta(&self) -> &BTreeMap<String, PlanMeta> {
        &self.plan_meta
    }

    /// Every turn and rejection so far.
    pub fn turn_log(&self) -> &[TurnEntry] {
        &self.turn_log
    }

    /// Notices about acts that crossed owners, in order.
    pub fn notices(&self) -> &[CrossOwner] {
        &self.notices
    }

    /// Advance by one tape event given by the caller (`kestrel grade` feeds perturbed
    /// copies of a tape's events), whose next event is at `next` (`None`: the last); returns
    /// the wakes that fired on it, as [`Run::step`] does. The plans and WAKEs step once per
    /// instant, after its last event ([`Engine::on_event_before`]): an event with more at
    /// its time fires nothing.
    pub fn feed(&mut self, ev: &TapeEvent, next: Option<Ts>) -> Vec<FiredWake> {
        if let TapeEvent::Session(_) = ev {
            self.next_session(ev);
            return Vec::new();
        }
        // A reply that arrived before this event acts first (one that arrived at the same
        // instant acts after the events of that instant, as the desk applies it).
        if let Some((at, _, _)) = &self.pending
            && *at < ev.ts()
            && let Some((at, wake, ans)) = self.pending.take()
        {
            self.apply(at, &wake, ans);
        }
        if let TapeEvent::Tick(t) = ev {
            self.bars.apply(t);
        }
        self.engine.on_event_before(ev, next);
        let mut fired = Vec::new();
        if next == Some(ev.ts()) {
            return fired;
        }
        if self.open_wake && !self.opened && self.open_ready(ev.ts()) {
            self.opened = true;
            fired.push(FiredWake {
                ts: ev.ts(),
                wake: "open".into(),
                why: "the session opened".into(),
                deliver: None,
                priority: i64::MAX,
            });
        }
        if self.engine.has_fired_wakes() {
            fired.extend(self.engine.take_fired_wakes());
        }
        fired
    }

    /// Is the OPEN wake due after the event at `ts`? At the open, once every symbol the
    /// tape declares has printed (so the View it delivers has a spot and a chain for each);
    /// a symbol still silent [`OPEN_WAIT_MS`] of tape time after the open no longer holds
    /// the wake back (its View then shows `?` for it).
    fn open_ready(&self, ts: Ts) -> bool {
        let m = self.engine.market();
        let open = m.open_time();
        if ts < open {
            return false;
        }
        let printed = m.symbols().all(|s| m.spot(s.as_str()).is_some());
        printed || ts.0 >= open.0.saturating_add(OPEN_WAIT_MS)
    }

    /// A `session` event: the session ends (a reply still pending acts first, a call still
    /// out was never answered in time, positions settle), and the next starts as a
    /// one-session tape of it would: the engine starts again from the opening documents,
    /// the bars, the OPEN wake, the standing VIEWs and plan notes are the opening ones.
    /// The counts, the journal and the turn log run on across sessions.
    fn next_session(&mut self, ev: &TapeEvent) {
        if let Some((at, wake, ans)) = self.pending.take() {
            self.apply(at, &wake, ans);
        }
        let close = self.engine.market().now().unwrap_or(Ts(0));
        self.reject(close, "close", "unanswered", "unanswered");
        self.wakes_before = self.counts.wakes;
        self.engine.on_event(ev);
        let open = self.engine.market().open_time();
        self.bars = Bars::new(self.signal, open);
        self.opened = false;
        self.views.clear();
        self.plan_meta.clear();
        // The engine's opening documents: the run's own and those a person armed at the
        // desk before the first event.
        let docs: Vec<(ast::Document, Option<String>)> = self
            .engine
            .opening_documents()
            .map(|(d, o)| (d.clone(), o.map(str::to_string)))
            .collect();
        for (d, owner) in &docs {
            collect_views(d, &mut self.views);
            self.note_plans(d, owner.as_deref());
        }
    }

    /// Put a turn routed outside the wake loop (a person's, from the desk's editor) on the
    /// Bus as a `turn` event at `at`, counted and journaled like an author's. It is only
    /// recorded: the caller carries out its act.
    pub fn record_human(&mut self, at: Ts, wake: &str, routed: RoutedTurn, written: &str) {
        let ans = Answer {
            run: RepairRun {
                turn: routed,
                attempts: Vec::new(),
                re_asks: 0,
                tokens_spent: 0,
                fail_closed: None,
            },
            at: Some(at),
            rejected: None,
        };
        self.record(at, wake, &ans);
        if let Some(e) = self.turn_log.last_mut() {
            // What the person wrote, whole: the reply its token figures count (a refused
            // turn has no canonical text, but its words were still written).
            e.written = written.to_string();
        }
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
        // The worst case the live plans have committed, in R: the figure the risk checks use
        // (it read 0.00R with 147 shares and a spread on, never having been filled in).
        snap.budget_used_r = b
            .in_r(self.engine.live_committed())
            .map_or(0.0, |r| r.to_f64());
        // The current session's plans (a multi-session tape's earlier sessions are not in
        // the View), with their figures in it.
        for (name, p) in b.plans.iter().filter(|(n, _)| b.in_current_session(n)) {
            let meta = self.plan_meta.get(name);
            let (pnl, fires, fills) = b.session_figures(name);
            snap.plans.push(PlanRow {
                name: name.clone(),
                state: p.state,
                budget_r: meta.map_or(0.0, |m| m.budget_r),
                used_r: b.in_r(pnl).map_or(0.0, |r| r.to_f64()),
                // At its end on the clock once armed, as the Plans pane shows it (`10:15`,
                // where `+45m` left the agent to guess when it was armed).
                ttl: meta.map_or_else(String::new, |m| {
                    view::snapshot::ttl_shown(&m.ttl, self.engine.plan_ttl_end(name))
                }),
                // The View's `[plans]` section (author-facing, on the Bus in every frame):
                // the terse counts, unchanged; the desk's Plans pane says `no fire yet`
                // (`PlanLine::summary`). A veto or a clamp of its tickets leads, as on the
                // Plans pane: an agent told only `WHEN fired` sent the vetoed plan again.
                note: {
                    let note = p
                        .note
                        .clone()
                        .unwrap_or_else(|| format!("fires {fires} fills {fills}"));
                    match &p.risk {
                        Some(r) => format!("{} · {note}", r.short()),
                        None => note,
                    }
                },
            });
        }
        snap
    }

    /// The journal lines of every turn so far (the journal pane).
    pub fn journal(&self) -> &[JournalRow] {
        &self.journal
    }

    /// Wakes the author was asked at so far in this session (the kernel pane; the counts
    /// run on across the sessions of a tape, the kernel's figure starts again with each).
    pub fn wakes_used(&self) -> u32 {
        self.counts
            .wakes
            .saturating_sub(self.wakes_before)
            .min(u64::from(u32::MAX)) as u32
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
        self.view_tokens = r.tokens;
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
    /// then outstanding until [`Run::resolve`] or [`Run::reject`]: this is how an
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

    /// The busy check, the count and the View of a fired wake (see [`Run::ask`]),
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

    /// cl100k tokens of the last View delivered.
    pub fn view_tokens(&self) -> usize {
        self.view_tokens
    }

    /// The wake outstanding since [`Run::ask`], if any: (name, tape time).
    pub fn awaiting(&self) -> Option<(&str, Ts)> {
        self.awaiting.as_ref().map(|a| (a.wake.as_str(), a.ts))
    }

    /// The answer to the outstanding wake arrives at `at` (the tape point the reply reached
    /// the desk): a SHOW VIEW within the cap is delivered (at the wake's frozen cutoff) and
    /// the next ask is given back; any other turn is recorded and carried out now. With no
    /// wake outstanding the run is ignored and `None` returned.
    pub fn resolve(&mut self, at: Ts, run: RepairRun) -> Option<(WakeAsk, TurnContext)> {
        let a = self.awaiting.clone()?;
        let ans = Answer {
            run,
            at: Some(at),
            rejected: None,
        };
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
    /// `turn-rejected` event, nothing routed into the book; the author is free again. The
    /// Bus names the `outcome`; the Journal shows it as `shown` (a fail-closed pass reads
    /// so there, where the Bus says `pass`). A rejection with no proposal to it (a call
    /// still out at the close, nobody asked): [`Run::reject_run`] with none.
    pub fn reject(&mut self, at: Ts, by: &str, outcome: &str, shown: &str) {
        self.reject_run(at, by, outcome, shown, None);
    }

    /// [`Run::reject`] of a proposal the author wrote (`run`: a co-pilot proposal the person
    /// rejected, or one nobody decided at the close or the detach): its repair attempts go
    /// on the Bus (`repair` events, as an accepted turn's do) before the `turn-rejected`, so
    /// `kestrel errors report`, `grade` and a replay see the replies written and what they
    /// cost; the Journal keeps what it proposed or what failed. Before 2026-12-06 a rejected
    /// proposal's attempts were never written.
    pub fn reject_run(
        &mut self,
        at: Ts,
        by: &str,
        outcome: &str,
        shown: &str,
        run: Option<&RepairRun>,
    ) {
        if let Some(a) = self.awaiting.take() {
            self.rejection(at.max(a.ts), &a.wake, by, outcome, shown, run);
        }
    }

    /// Write a rejection of the answer to `wake` at `ts`: the proposal's attempts (if any),
    /// then `turn-rejected`; the Journal and Tokens panes list it.
    fn rejection(
        &mut self,
        ts: Ts,
        wake: &str,
        by: &str,
        outcome: &str,
        shown: &str,
        run: Option<&RepairRun>,
    ) {
        let attempts = run.map_or(&[][..], |r| &r.attempts[..]);
        for a in attempts {
            self.engine.bus_mut().emit(Event::Repair {
                ts,
                wake: wake.to_string(),
                attempt: a.clone(),
            });
        }
        self.turn_log.push(TurnEntry {
            ts,
            wake: wake.to_string(),
            turn: None,
            rejected: Some((shown.to_string(), by.to_string())),
            attempts: attempts.len(),
            written: attempts
                .last()
                .map(|a| a.written.clone())
                .unwrap_or_default(),
            failure: run.and_then(RepairRun::failure),
            oversized: run.and_then(RepairRun::oversized),
            spend: run.map(RepairRun::spend).unwrap_or_default(),
            view_tokens: self.view_tokens,
            refused: None,
            proposed: run
                .filter(|r| r.failure().is_none() && !r.attempts.is_empty())
                .map(super::owner::proposal_summary),
        });
        self.engine.bus_mut().emit(Event::TurnRejected {
            ts,
            wake: wake.to_string(),
            by: by.to_string(),
            outcome: outcome.to_string(),
        });
    }

    /// Put a turn and its repair attempts on the Bus; count it.
    fn record(&mut self, at: Ts, wake: &str, ans: &Answer) {
        self.counts.reasks += ans.run.attempts.len().saturating_sub(1) as u64;
        for a in &ans.run.attempts {
            if ans.run.attempts.len() > 1 {
                self.counts.repairs += 1;
            }
            self.engine.bus_mut().emit(Event::Repair {
                ts: at,
                wake: wake.to_string(),
                attempt: a.clone(),
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
        self.engine.bus_mut().emit(Event::Turn {
            ts: at,
            wake: wake.to_string(),
            turn: Box::new(t.clone()),
        });
        self.turn_log.push(TurnEntry {
            ts: at,
            wake: wake.to_string(),
            turn: Some(t.clone()),
            rejected: None,
            attempts: ans.run.attempts.len(),
            written: ans
                .run
                .attempts
                .last()
                .map(|a| a.written.clone())
                .unwrap_or_default(),
            failure: ans.run.failure(),
            oversized: ans.run.oversized(),
            spend: ans.run.spend(),
            view_tokens: self.view_tokens,
            refused: None,
            proposed: None,
        });
        let author = match t.author {
            AuthorKind::Human => "human",
            AuthorKind::Model => "agent",
            AuthorKind::File => "script",
        };
        for j in &t.journal {
            self.journal.push(JournalRow {
                time: at.hhmmss(),
                author: author.to_string(),
                text: j.clone(),
            });
        }
    }

    /// Record a turn and carry out its act at `at`.
    fn apply(&mut self, at: Ts, wake: &str, ans: Answer) {
        // A replayed rejection (a co-pilot proposal the person rejected, or one nobody
        // decided): written as recorded, nothing routed.
        if let Some(r) = &ans.rejected {
            self.rejection(at, wake, &r.by, &r.outcome, &r.outcome, Some(&ans.run));
            return;
        }
        self.record(at, wake, &ans);
        let t = &ans.run.turn;
        let owner = self.author_owner.clone();
        match &t.outcome {
            Outcome::Supersede { .. } => {
                if let Some(doc) = t.document() {
                    if owner.is_none() {
                        self.views.clear();
                    }
                    let from = self.engine.bus().events().len();
                    let names = self.supersede_as(&doc, owner.as_deref());
                    // The plans the engine left out say why on the Bus (`error`): the turn
                    // keeps the reasons, so the desk does not report a bare `supersede`.
                    let refused: Vec<String> = self.engine.bus().events()
                        [from.min(self.engine.bus().events().len())..]
                        .iter()
                        .filter_map(|e| match e {
                            Event::Error {
                                plan: Some(_),
                                message,
                                ..
                            } if message.contains(" not armed: ") => Some(message.clone()),
                            _ => None,
                        })
                        .collect();
                    if !refused.is_empty()
                        && let Some(e) = self.turn_log.last_mut()
                    {
                        e.refused = Some(if names.is_empty() {
                            format!("armed nothing: {}", refused.join("; "))
                        } else {
                            format!("armed {}; {}", names.join(", "), refused.join("; "))
                        });
                    }
                }
            }
            Outcome::StandDown { reason } => self.stand_down_as(reason, owner.as_deref()),
            Outcome::Cancel { target } => {
                self.cancel_as(target, owner.as_deref());
            }
            _ => {}
        }
    }

    /// Close the run in place (a reply still pending acts first; a call still out was
    /// never answered in time; positions settle at the close), keeping it for reading.
    pub fn close(&mut self) {
        if let Some((at, wake, ans)) = self.pending.take() {
            self.apply(at, &wake, ans);
        }
        let close = self.engine.market().now().unwrap_or(Ts(0));
        self.reject(close, "close", "unanswered", "unanswered");
        self.engine.end();
    }

    /// End the run cut short (a signal): see [`Engine::interrupt`].
    pub fn interrupt(self, why: &str) -> Bus {
        self.engine.interrupt(why)
    }

    /// Close the session (settle at the close) and give back the Bus.
    pub fn finish(mut self) -> Bus {
        if let Some((at, wake, ans)) = self.pending.take() {
            self.apply(at, &wake, ans);
        }
        // A call still out at the close was never answered in time.
        let close = self.engine.market().now().unwrap_or(Ts(0));
        self.reject(close, "close", "unanswered", "unanswered");
        self.engine.finish()
    }

    /// Run to the end of the tape with an author; returns the Bus.
    pub fn run(mut self, author: &mut dyn TurnSource) -> Result<Bus, TapeError> {
        while !self.is_done() {
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
