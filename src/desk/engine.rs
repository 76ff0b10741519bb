//! The replay driver and its handle: the tape clock, the runtime behind it, and the
//! snapshots the screen draws.
//!
//! [`Driver`] is synchronous and deterministic: it walks the tape, feeds a [`Runtime`], and
//! applies acts (arm, stand down, cancel) at exact points of the tape (before the first event
//! later than the act's time, or at a recorded event count when a session is replayed).
//! [`EngineHandle`] runs a driver on its own thread, off the draw loop: commands go in over a
//! channel, snapshots come out over a `watch` channel, and neither side ever waits on the
//! other. Tests use [`EngineHandle::inline`], which applies commands at once and advances
//! only when told.

use super::runtime::{AgentAct, AgentTurnLine, Mark, PlanInfo, Runtime};
use crate::lang::{self, ast};
use crate::market::{Sym, TapeEvent, TapeHeader, TapeReader, Ts};
use crate::view::{self, Bars, Rendered, Snapshot};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::io::{Cursor, Write};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Replay speeds, slowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Speed {
    /// Real time.
    X1,
    /// Ten times real time.
    X10,
    /// A minute of tape per second.
    X60,
    /// Ten minutes of tape per second.
    X600,
    /// As fast as the machine goes (drawing is never waited for).
    Max,
}

impl Speed {
    /// Every speed, slowest first.
    pub const ALL: [Speed; 5] = [Speed::X1, Speed::X10, Speed::X60, Speed::X600, Speed::Max];

    /// Tape seconds per wall second (`None` for max).
    pub fn factor(self) -> Option<f64> {
        match self {
            Speed::X1 => Some(1.0),
            Speed::X10 => Some(10.0),
            Speed::X60 => Some(60.0),
            Speed::X600 => Some(600.0),
            Speed::Max => None,
        }
    }

    /// `1x`, `10x`, `60x`, `600x`, `max`.
    pub fn label(self) -> &'static str {
        match self {
            Speed::X1 => "1x",
            Speed::X10 => "10x",
            Speed::X60 => "60x",
            Speed::X600 => "600x",
            Speed::Max => "max",
        }
    }

    /// One step faster (max stays max).
    pub fn faster(self) -> Speed {
        let i = Speed::ALL.iter().position(|s| *s == self).unwrap_or(0);
        Speed::ALL[(i + 1).min(Speed::ALL.len() - 1)]
    }

    /// One step slower (1x stays 1x).
    pub fn slower(self) -> Speed {
        let i = Speed::ALL.iter().position(|s| *s == self).unwrap_or(0);
        Speed::ALL[i.saturating_sub(1)]
    }
}

/// An act a routed turn carries into the runtime.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "act", rename_all = "kebab-case")]
pub enum Act {
    /// Arm (supersede with) a document, given in canonical Kestrel.
    Arm {
        /// Canonical text.
        text: String,
    },
    /// De-arm the book.
    StandDown {
        /// The reason, verbatim.
        reason: String,
    },
    /// Stand one plan down.
    Cancel {
        /// The plan's name.
        target: String,
    },
    /// Record a turn routed at the desk (a person's, or a linked author's) on the Bus as a
    /// `turn` event; its act (if any) follows as its own act.
    Turn {
        /// The routed turn, as serialised.
        routed: serde_json::Value,
    },
    /// An act of the attached agent: an answer, a rejection, co-pilot on/off, attach.
    Agent(AgentAct),
}

/// An act the driver applied: which turn, at which point of the tape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The desk's turn id.
    pub id: u64,
    /// Tape events applied before it.
    pub seq: u64,
    /// Tape time it took effect.
    pub ts: Ts,
    /// What it did (plans armed, or the runtime's answer).
    pub result: String,
}

/// A command to the driver.
#[derive(Debug, Clone)]
pub enum Command {
    /// Start the clock.
    Play,
    /// Stop the clock.
    Pause,
    /// Play if paused, pause if playing.
    TogglePlay,
    /// Set the replay speed.
    Speed(Speed),
    /// Advance to the next tape event's time (pauses).
    StepTick,
    /// Advance to the next bar boundary ([`BAR_SECS`]) (pauses).
    StepBar,
    /// Move the clock to a tape time (backwards re-runs the session up to it).
    Seek(Ts),
    /// Start the session over: the clock at the open, the book empty.
    Restart,
    /// Apply an act at tape time `at` (or now, when `None` or already past).
    Apply {
        /// The desk's turn id.
        id: u64,
        /// The act.
        act: Act,
        /// When it takes effect.
        at: Option<Ts>,
    },
    /// An agent act answering a call of run `segment` (dropped when the run has since been
    /// restarted or rewound: the call belongs to a run that no longer exists).
    AgentReply {
        /// The run the call was made in.
        segment: u32,
        /// The act.
        act: AgentAct,
    },
    /// Show this View in the View pane (a SHOW VIEW, or the default).
    SetView(ast::View),
    /// Write a record to the session log (stamped with the tape point).
    Record(serde_json::Value),
    /// Advance the clock by this much wall time at the current speed (inline handles only).
    Tick(Duration),
    /// Stop the driver thread.
    Quit,
}

/// The bar the `step bar` key advances by, in seconds.
pub const BAR_SECS: u32 = 60;

/// The chart series: the signal symbol sampled every [`CHART_SAMPLE_SECS`].
pub const CHART_SAMPLE_SECS: u32 = 10;

/// Chart data at an instant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChartData {
    /// The charted symbol.
    pub sym: String,
    /// (seconds since midnight, price), one point per sample.
    pub points: Vec<(f64, f64)>,
    /// High of day.
    pub hod: Option<f64>,
    /// Low of day.
    pub lod: Option<f64>,
    /// Volume-weighted average (or the average, for an index).
    pub vwap: Option<f64>,
    /// Fills: (seconds, signal price then).
    pub fills: Vec<(f64, f64)>,
    /// Fires: (seconds, signal price then).
    pub fires: Vec<(f64, f64)>,
}

/// Everything the screen draws of the replay, at one instant.
#[derive(Debug, Clone)]
pub struct DeskSnapshot {
    /// The tape's name.
    pub tape: String,
    /// The tape clock.
    pub clock: Ts,
    /// Session open and close.
    pub open: Ts,
    /// Session close.
    pub close: Ts,
    /// Is the clock running?
    pub playing: bool,
    /// Replay speed.
    pub speed: Speed,
    /// The tape is exhausted.
    pub ended: bool,
    /// Tape events applied.
    pub seq: u64,
    /// `market-only` or `engine`.
    pub runtime: &'static str,
    /// Determinism hash so far.
    pub hash: String,
    /// Events in the runtime's stream.
    pub bus_events: u64,
    /// The current Frame.
    pub frame: Arc<Rendered>,
    /// The View it renders.
    pub view_name: String,
    /// Chart data.
    pub chart: Arc<ChartData>,
    /// Plans.
    pub plans: Vec<PlanInfo>,
    /// The book.
    pub book: Snapshot,
    /// The newest lines of the event stream.
    pub bus: Vec<String>,
    /// Every act applied so far (this run).
    pub applied: Vec<Applied>,
    /// A tape error, if the tape stopped on one.
    pub error: Option<String>,
    /// Tape events per wall second over the last play interval.
    pub events_per_sec: f64,
    /// The run (restarts and rewinds count up).
    pub segment: u32,
    /// The agent's turns and rejections, from the Bus.
    pub agent_turns: Arc<Vec<AgentTurnLine>>,
}

/// A tape held in memory, so restarts and seeks re-read it without I/O.
#[derive(Clone)]
pub struct TapeSource {
    /// What the status line calls it (the file name).
    pub label: String,
    /// The JSON Lines bytes.
    pub bytes: Arc<[u8]>,
}

type Reader = TapeReader<Cursor<Arc<[u8]>>>;

/// How a run starts: its number (restarts and rewinds count up from 0) and whether the
/// agent's answers wait for the person (co-pilot).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunStart {
    /// The run's number.
    pub segment: u32,
    /// Co-pilot at the start of the run.
    pub hold: bool,
}

/// Makes a fresh runtime for a run.
pub type RuntimeFactory = Box<dyn Fn(&TapeHeader, RunStart) -> Box<dyn Runtime> + Send>;

struct Scheduled {
    id: u64,
    at: Ts,
    act: Act,
}

/// The synchronous, deterministic replay driver.
pub struct Driver {
    src: TapeSource,
    make: RuntimeFactory,
    reader: Reader,
    header: TapeHeader,
    pending: Option<TapeEvent>,
    rt: Box<dyn Runtime>,
    bars: Bars,
    signal: Sym,
    exec: Sym,
    clock: Ts,
    last_event: Ts,
    seq: u64,
    playing: bool,
    speed: Speed,
    ended: bool,
    view: ast::View,
    chart: Vec<(f64, f64)>,
    scheduled: Vec<Scheduled>,
    script: VecDeque<(u64, Ts, u64, Act)>,
    history: Vec<(u64, Ts, u64, Act)>,
    applied: Vec<Applied>,
    record: Option<Box<dyn Write + Send>>,
    replaying: bool,
    error: Option<String>,
    segment: u32,
    hold: bool,
    run_hold: bool,
    frame: Option<Arc<Rendered>>,
    frame_seq: Option<(u64, Ts)>,
    chart_cache: Option<Arc<ChartData>>,
    rate: (u64, Duration),
    events_per_sec: f64,
    changed: bool,
}

fn open_reader(src: &TapeSource) -> Result<Reader, String> {
    TapeReader::new(Cursor::new(src.bytes.clone())).map_err(|e| e.to_string())
}

impl Driver {
    /// A driver at the session open, paused at 60x, with the default View.
    pub fn new(src: TapeSource, make: RuntimeFactory) -> Result<Driver, String> {
        Driver::start(src, make, false)
    }

    /// A driver whose agent starts held for co-pilot (`hold`) or not.
    pub fn start(src: TapeSource, make: RuntimeFactory, hold: bool) -> Result<Driver, String> {
        let reader = open_reader(&src)?;
        let header = reader.header().clone();
        let (signal, exec) = view::symbols_of(&header).ok_or("the tape has no symbols")?;
        let rt = make(&header, RunStart { segment: 0, hold });
        let open = rt.market().open_time();
        let mut d = Driver {
            bars: Bars::new(signal, open),
            src,
            make,
            reader,
            header,
            pending: None,
            rt,
            signal,
            exec,
            clock: open,
            last_event: open,
            seq: 0,
            playing: false,
            speed: Speed::X60,
            ended: false,
            view: view::default_view(),
            chart: Vec::new(),
            scheduled: Vec::new(),
            script: VecDeque::new(),
            history: Vec::new(),
            applied: Vec::new(),
            record: None,
            replaying: false,
            error: None,
            segment: 0,
            hold,
            run_hold: hold,
            frame: None,
            frame_seq: None,
            chart_cache: None,
            rate: (0, Duration::ZERO),
            events_per_sec: 0.0,
            changed: true,
        };
        d.advance_to(open);
        Ok(d)
    }

    /// Send session records (acts applied, turns, controls) to `w` as JSON Lines.
    pub fn with_record(mut self, w: Box<dyn Write + Send>) -> Driver {
        self.record = Some(w);
        let v = serde_json::json!({
            "type": "desk-session", "v": 1, "tape": self.src.label,
            "tape_name": self.header.name, "runtime": self.rt.name(), "hold": self.hold,
        });
        self.write_record(v);
        self
    }

    /// Acts to apply at recorded tape points (`kestrel desk --open`).
    pub fn with_script(mut self, acts: Vec<(u64, Ts, u64, Act)>) -> Driver {
        self.script = acts.into();
        self.apply_script();
        self
    }

    /// The tape header.
    pub fn header(&self) -> &TapeHeader {
        &self.header
    }

    /// The tape clock.
    pub fn clock(&self) -> Ts {
        self.clock
    }

    /// Is the clock running?
    pub fn playing(&self) -> bool {
        self.playing
    }

    /// The speed.
    pub fn speed(&self) -> Speed {
        self.speed
    }

    /// Did anything change since the last snapshot?
    pub fn changed(&self) -> bool {
        self.changed
    }

    fn write_record(&mut self, mut v: serde_json::Value) {
        if let Some(o) = v.as_object_mut() {
            o.entry("seq").or_insert(self.seq.into());
            o.entry("ts").or_insert(self.clock.to_string().into());
        }
        if let Some(w) = self.record.as_mut() {
            let line = v.to_string();
            let ok = w
                .write_all(line.as_bytes())
                .and_then(|_| w.write_all(b"\n"))
                .and_then(|_| w.flush());
            if let Err(e) = ok {
                self.error = Some(format!("session log: {e}"));
                self.record = None;
            }
        }
    }

    fn control(&mut self, what: &str) {
        self.write_record(serde_json::json!({"type": "control", "action": what}));
    }

    /// Apply one command.
    pub fn command(&mut self, c: Command) {
        self.changed = true;
        match c {
            Command::Play => self.set_playing(true),
            Command::Pause => self.set_playing(false),
            Command::TogglePlay => self.set_playing(!self.playing),
            Command::Speed(s) => {
                self.speed = s;
                self.control(&format!("speed {}", s.label()));
            }
            Command::StepTick => {
                self.playing = false;
                if let Some(t) = self.peek_ts() {
                    self.advance_to(t);
                }
            }
            Command::StepBar => {
                self.playing = false;
                let bar = BAR_SECS * 1000;
                let next = Ts((self.clock.0 / bar + 1) * bar);
                self.advance_to(next);
            }
            Command::Seek(t) => {
                self.control(&format!("seek {t}"));
                self.seek(t);
            }
            Command::Restart => {
                let hold = self.hold;
                self.write_record(
                    serde_json::json!({"type": "control", "action": "restart", "hold": hold}),
                );
                self.restart();
            }
            Command::Apply { id, act, at } => match at {
                Some(at) if at > self.clock => {
                    let i = self.scheduled.partition_point(|s| s.at <= at);
                    self.scheduled.insert(i, Scheduled { id, at, act });
                }
                _ => {
                    let ts = self.clock;
                    self.apply_act(id, act, ts);
                }
            },
            Command::AgentReply { segment, act } => {
                if segment == self.segment {
                    let ts = self.clock;
                    self.apply_act(0, Act::Agent(act), ts);
                } else {
                    self.control("stale agent reply dropped: its run was restarted");
                }
            }
            Command::SetView(v) => {
                self.view = v;
                self.frame_seq = None;
            }
            Command::Record(v) => self.write_record(v),
            Command::Tick(dt) => self.run_for(dt),
            Command::Quit => {}
        }
    }

    fn set_playing(&mut self, on: bool) {
        if on && self.ended {
            return;
        }
        self.playing = on;
        self.control(if on { "play" } else { "pause" });
    }

    fn peek_ts(&mut self) -> Option<Ts> {
        if self.pending.is_none() {
            self.pending = self.next_event();
        }
        self.pending.as_ref().map(TapeEvent::ts)
    }

    fn next_event(&mut self) -> Option<TapeEvent> {
        match self.reader.next() {
            Some(Ok(ev)) => Some(ev),
            Some(Err(e)) => {
                self.error = Some(e.to_string());
                None
            }
            None => None,
        }
    }

    fn seek(&mut self, t: Ts) {
        if t < self.clock {
            // Re-run from the open, re-applying every act taken before the target.
            let keep: Vec<(u64, Ts, u64, Act)> = self.history.clone();
            let playing = self.playing;
            // The rerun starts as the run did; its acts (co-pilot switches included) replay.
            self.hold = self.run_hold;
            self.restart_with(true);
            self.script = keep.into();
            self.replaying = true;
            self.apply_script();
            self.advance_to(t);
            self.replaying = false;
            self.rt.set_quiet(false);
            self.script.clear();
            self.control("rewound");
            self.playing = playing && !self.ended;
        } else {
            self.advance_to(t);
        }
    }

    fn restart(&mut self) {
        self.restart_with(false);
    }

    /// Start a new run; `quiet`: the agent sends no call until the caller says (a rewind
    /// re-running recorded acts).
    fn restart_with(&mut self, quiet: bool) {
        self.segment += 1;
        match open_reader(&self.src) {
            Ok(r) => self.reader = r,
            Err(e) => {
                self.error = Some(e);
                return;
            }
        }
        self.run_hold = self.hold;
        let start = RunStart {
            segment: self.segment,
            hold: self.hold,
        };
        self.rt = (self.make)(&self.header, start);
        self.rt.set_quiet(quiet);
        let open = self.rt.market().open_time();
        self.bars = Bars::new(self.signal, open);
        self.pending = None;
        self.clock = open;
        self.last_event = open;
        self.seq = 0;
        self.playing = false;
        self.ended = false;
        self.chart.clear();
        self.scheduled.clear();
        self.script.clear();
        self.history.clear();
        self.applied.clear();
        self.error = None;
        self.frame_seq = None;
        self.chart_cache = None;
        self.advance_to(open);
    }

    fn apply_script(&mut self) {
        while let Some((seq, ..)) = self.script.front() {
            if *seq > self.seq {
                break;
            }
            if let Some((_, ts, id, act)) = self.script.pop_front() {
                self.apply_act(id, act, ts);
            }
        }
    }

    fn apply_due(&mut self, before: Ts, inclusive: bool) {
        while let Some(s) = self.scheduled.first() {
            let due = if inclusive {
                s.at <= before
            } else {
                s.at < before
            };
            if !due {
                break;
            }
            let s = self.scheduled.remove(0);
            self.apply_act(s.id, s.act, s.at);
        }
    }

    fn apply_act(&mut self, id: u64, act: Act, ts: Ts) {
        let result = match &act {
            Act::Arm { text } => match lang::parse(text) {
                Ok(doc) => {
                    if let Some(v) = doc.statements.iter().find_map(|s| match &s.kind {
                        ast::StatementKind::View(v) => Some(v.clone()),
                        _ => None,
                    }) {
                        self.view = v;
                    }
                    let names = self.rt.arm(&doc, ts);
                    format!("armed {}", names.join(", "))
                }
                Err(e) => format!(
                    "refused: {}",
                    e.first().map(|d| d.one_line()).unwrap_or_default()
                ),
            },
            Act::StandDown { reason } => {
                self.rt.stand_down(reason, ts);
                "stood down".to_string()
            }
            Act::Cancel { target } => {
                if self.rt.cancel(target, ts) {
                    format!("{target} stood down")
                } else {
                    format!("no live plan {target}")
                }
            }
            Act::Agent(a) => {
                if let AgentAct::Hold { on } = a {
                    self.hold = *on;
                }
                self.rt.agent_act(a, ts)
            }
            Act::Turn { routed } => {
                match serde_json::from_value::<crate::turn::RoutedTurn>(routed.clone()) {
                    Ok(t) => {
                        self.rt.record_turn(&t, ts);
                        "recorded".to_string()
                    }
                    Err(e) => format!("refused: the turn does not read back: {e}"),
                }
            }
        };
        let is_turn = matches!(act, Act::Turn { .. } | Act::Agent(_));
        let rec = serde_json::json!({
            "type": "act", "id": id, "seq": self.seq, "ts": ts.to_string(),
            "act": serde_json::to_value(&act).unwrap_or_default(), "result": result,
        });
        if !self.replaying {
            self.write_record(rec);
        }
        self.history.push((self.seq, ts, id, act));
        if !is_turn {
            self.applied.push(Applied {
                id,
                seq: self.seq,
                ts,
                result,
            });
        }
        self.frame_seq = None;
        self.changed = true;
    }

    /// Apply every event up to and including `target`; the clock then reads `target` (or
    /// the last event, when the tape ends first).
    pub fn advance_to(&mut self, target: Ts) {
        self.changed = true;
        loop {
            let ev = match self.pending.take().or_else(|| self.next_event()) {
                Some(ev) => ev,
                None => {
                    self.end();
                    break;
                }
            };
            let ts = ev.ts();
            if ts > target {
                self.pending = Some(ev);
                break;
            }
            self.apply_due(ts, false);
            self.apply_script();
            if let TapeEvent::Tick(t) = &ev {
                self.bars.apply(t);
                if t.sym == self.signal {
                    let x = f64::from(ts.0 / 1000 / CHART_SAMPLE_SECS * CHART_SAMPLE_SECS);
                    let y = t.px.to_f64();
                    match self.chart.last_mut() {
                        Some(p) if p.0 == x => p.1 = y,
                        _ => self.chart.push((x, y)),
                    }
                    self.chart_cache = None;
                }
            }
            self.rt.on_event(&ev);
            self.seq += 1;
            self.last_event = ts;
            self.apply_script();
        }
        self.apply_due(target, true);
        if target > self.clock {
            self.clock = if self.ended {
                self.clock.max(self.last_event)
            } else {
                target
            };
        }
        if self.ended {
            self.playing = false;
        }
    }

    fn end(&mut self) {
        if !self.ended {
            self.ended = true;
            self.playing = false;
            self.rt.finish();
            self.control("end of tape");
        }
    }

    /// Advance the clock by `dt` of wall time at the current speed (at max: as far as ~10 ms
    /// of work goes).
    pub fn run_for(&mut self, dt: Duration) {
        if !self.playing || self.ended {
            return;
        }
        let before = self.seq;
        let started = Instant::now();
        match self.speed.factor() {
            Some(f) => {
                let ms = (dt.as_secs_f64() * f * 1000.0).round() as u32;
                let target = Ts(self.clock.0.saturating_add(ms.max(1)));
                self.advance_to(target);
            }
            None => {
                let budget = Duration::from_millis(10);
                while self.playing && !self.ended && started.elapsed() < budget {
                    let target = Ts(self.clock.0.saturating_add(2_000));
                    self.advance_to(target);
                }
            }
        }
        let spent = started.elapsed().max(dt);
        self.rate.0 += self.seq - before;
        self.rate.1 += spent;
        if self.rate.1 >= Duration::from_millis(500) {
            self.events_per_sec = self.rate.0 as f64 / self.rate.1.as_secs_f64();
            self.rate = (0, Duration::ZERO);
        }
    }

    fn render_frame(&mut self) -> Arc<Rendered> {
        let key = (self.seq, self.clock);
        if let (Some(f), Some(k)) = (&self.frame, self.frame_seq)
            && k == key
        {
            return f.clone();
        }
        let book = self.rt.book();
        let input = view::FrameInput {
            tape: &self.header.name,
            market: self.rt.market(),
            bars: &self.bars,
            signal: self.signal,
            exec: self.exec,
            snapshot: &book,
            woke: None,
            width: 0,
        };
        let f = Arc::new(view::render_frame(&self.view, &input, &view::cl100k));
        self.frame = Some(f.clone());
        self.frame_seq = Some(key);
        f
    }

    fn chart_data(&mut self) -> Arc<ChartData> {
        if let Some(c) = &self.chart_cache {
            return c.clone();
        }
        let m = self.rt.market();
        let sym = self.signal.as_str();
        let at = |ts: Ts| -> f64 {
            let x = f64::from(ts.0 / 1000);
            let i = self.chart.partition_point(|p| p.0 <= x);
            self.chart
                .get(i.saturating_sub(1))
                .map(|p| p.1)
                .unwrap_or_default()
        };
        let (fills, fires) = self.rt.marks();
        let pts = |v: &[Mark]| -> Vec<(f64, f64)> {
            v.iter()
                .map(|m| (f64::from(m.ts.0 / 1000), at(m.ts)))
                .collect()
        };
        let c = Arc::new(ChartData {
            sym: sym.to_string(),
            points: self.chart.clone(),
            hod: m.hod(sym).map(|p| p.to_f64()),
            lod: m.lod(sym).map(|p| p.to_f64()),
            vwap: m.vwap(sym),
            fills: pts(&fills),
            fires: pts(&fires),
        });
        self.chart_cache = Some(c.clone());
        c
    }

    /// The screen's view of the replay now. `frame` re-renders the Frame if the tape moved
    /// (otherwise the last one is reused).
    pub fn snapshot(&mut self, frame: bool) -> DeskSnapshot {
        self.changed = false;
        let frame = match (&self.frame, frame) {
            (Some(f), false) => f.clone(),
            _ => self.render_frame(),
        };
        let chart = self.chart_data();
        let m = self.rt.market();
        DeskSnapshot {
            tape: self.src.label.clone(),
            clock: self.clock,
            open: m.open_time(),
            close: m.close_time(),
            playing: self.playing,
            speed: self.speed,
            ended: self.ended,
            seq: self.seq,
            runtime: self.rt.name(),
            hash: self.rt.hash(),
            bus_events: self.rt.event_count(),
            frame,
            view_name: self.view.name.text.clone(),
            chart,
            plans: self.rt.plans(),
            book: self.rt.book(),
            bus: self.rt.tail(200),
            applied: self.applied.clone(),
            error: self.error.clone(),
            events_per_sec: self.events_per_sec,
            segment: self.segment,
            agent_turns: self.rt.agent_turns(),
        }
    }
}

/// The desk's handle on the replay: a driver on its own thread, or inline for tests.
pub enum EngineHandle {
    /// The driver runs on a thread; the draw loop reads the latest snapshot.
    Threaded {
        /// Commands in.
        tx: mpsc::Sender<Command>,
        /// Snapshots out (latest wins).
        rx: tokio::sync::watch::Receiver<Arc<DeskSnapshot>>,
        /// The thread.
        join: Option<std::thread::JoinHandle<()>>,
    },
    /// The driver runs in the caller, one command at a time (tests).
    Inline {
        /// The driver.
        driver: Box<Driver>,
        /// The latest snapshot.
        snap: Arc<DeskSnapshot>,
    },
}

impl EngineHandle {
    /// Build a driver on its own thread and run it there (the runtime need not be `Send`).
    /// Waits only for the first snapshot.
    pub fn spawn<F>(build: F) -> Result<EngineHandle, String>
    where
        F: FnOnce() -> Result<Driver, String> + Send + 'static,
    {
        let (tx, crx) = mpsc::channel::<Command>();
        let (itx, irx) =
            mpsc::channel::<Result<tokio::sync::watch::Receiver<Arc<DeskSnapshot>>, String>>();
        let join = std::thread::Builder::new()
            .name("kestrel-replay".into())
            .spawn(move || match build() {
                Ok(mut driver) => {
                    let (stx, srx) = tokio::sync::watch::channel(Arc::new(driver.snapshot(true)));
                    if itx.send(Ok(srx)).is_ok() {
                        drive(driver, crx, stx);
                    }
                }
                Err(e) => {
                    let _ = itx.send(Err(e));
                }
            })
            .map_err(|e| e.to_string())?;
        let rx = irx
            .recv()
            .map_err(|_| "the replay thread stopped before it started".to_string())??;
        Ok(EngineHandle::Threaded {
            tx,
            rx,
            join: Some(join),
        })
    }

    /// Run a driver inline (tests): commands apply at once; time moves only by
    /// [`Command::Tick`].
    pub fn inline(mut driver: Driver) -> EngineHandle {
        let snap = Arc::new(driver.snapshot(true));
        EngineHandle::Inline {
            driver: Box::new(driver),
            snap,
        }
    }

    /// Send a command (never blocks).
    pub fn send(&mut self, c: Command) {
        match self {
            EngineHandle::Threaded { tx, .. } => {
                let _ = tx.send(c);
            }
            EngineHandle::Inline { driver, snap } => {
                driver.command(c);
                *snap = Arc::new(driver.snapshot(true));
            }
        }
    }

    /// The latest snapshot (never blocks on the driver).
    pub fn latest(&mut self) -> Arc<DeskSnapshot> {
        match self {
            EngineHandle::Threaded { rx, .. } => rx.borrow_and_update().clone(),
            EngineHandle::Inline { snap, .. } => snap.clone(),
        }
    }

    /// Stop the thread (if any) and wait for it.
    pub fn shutdown(&mut self) {
        if let EngineHandle::Threaded { tx, join, .. } = self {
            let _ = tx.send(Command::Quit);
            if let Some(j) = join.take() {
                let _ = j.join();
            }
        }
    }
}

impl Drop for EngineHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The driver thread: apply commands as they come, advance while playing, publish snapshots
/// at most ~30 times a second (the Frame at most 4 times a second while playing).
fn drive(
    mut d: Driver,
    rx: mpsc::Receiver<Command>,
    tx: tokio::sync::watch::Sender<Arc<DeskSnapshot>>,
) {
    let mut last = Instant::now();
    let mut last_pub = Instant::now();
    let mut last_frame = Instant::now();
    loop {
        let wait = if d.playing() {
            Duration::from_millis(if d.speed() == Speed::Max { 0 } else { 10 })
        } else {
            Duration::from_millis(50)
        };
        let first = if wait.is_zero() {
            match rx.try_recv() {
                Ok(c) => Some(c),
                Err(mpsc::TryRecvError::Empty) => None,
                Err(mpsc::TryRecvError::Disconnected) => return,
            }
        } else {
            match rx.recv_timeout(wait) {
                Ok(c) => Some(c),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            }
        };
        let mut commanded = false;
        let mut next = first;
        while let Some(c) = next {
            if matches!(c, Command::Quit) {
                return;
            }
            d.command(c);
            commanded = true;
            next = rx.try_recv().ok();
        }
        let now = Instant::now();
        let dt = now - last;
        last = now;
        d.run_for(dt);
        let due = now - last_pub >= Duration::from_millis(33);
        if d.changed() && (commanded || due || !d.playing()) {
            let frame = commanded || !d.playing() || now - last_frame >= Duration::from_millis(250);
            if frame {
                last_frame = now;
            }
            let _ = tx.send(Arc::new(d.snapshot(frame)));
            last_pub = now;
        }
    }
}
