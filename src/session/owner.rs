//! The one owner of a run: the [`Session`].
//!
//! A session holds everything a run is made of: the tape (at the desk in memory, so a
//! restart or a rewind re-reads it without I/O; in a headless run streamed from its file),
//! the [`Run`] (market state, engine, bars, wakes, views,
//! the author's asks and answers, the Bus), the tape clock, the acts taken so far, the seat
//! of the agent, and the session file. Whoever drives it — the desk, a test, a benchmark —
//! sends typed [`Command`]s and reads typed [`SessionSnapshot`]s; nothing else reaches in.
//!
//! ```text
//!   desk keys ──► Command ──►┌──────────── Session ────────────┐──► SessionSnapshot ──► screen
//!   live author ─► answer ──►│ tape → Run(market → engine) → Bus│──► session file, Bus file
//!                            └──────────────────────────────────┘
//! ```
//!
//! The desk opens one with [`Session::open`]; the headless verbs (`kestrel run`, `kestrel
//! agent`, `kestrel grade`'s agent units) with [`Session::headless`], which streams the tape,
//! writes the Bus to its sink as it goes, and seats the author inline: at each wake the tape
//! waits for its answer (a headless run has no wall clock to keep step with). A headless book
//! has one owner, the author: the documents given with `--plans` are its starting book, as
//! they always were for `run`, `agent` and `grade`; a desk's Bus replayed headless seats the
//! desk's owners instead ([`Session::seat_desk`]).
//!
//! Acts (a person's turn, an act of the agent) take effect at exact points of the tape and
//! are recorded with that point, so a saved session replays to the same Bus bytes and the
//! same determinism hash; a rewind re-runs the acts taken before the target.

use super::agent::{Agent, AgentAct, LiveWorker, Proposal, Seat, WorkerMsg};
use super::candles::{Candles, ChartMark, MarkKind};
use super::run::{PlanMeta, Run, RunConfig, TurnEntry};
use super::saved;
use crate::bus::{self, PlanState};
use crate::engine::{EngineConfig, FiredWake, fill};
use crate::lang::ast;
use crate::market::{Px, Sym, TapeError, TapeEvent, TapeHeader, TapeReader, Ts};
use crate::tokens::{self, Encoding, TurnTokens};
use crate::turn::{self, AuthorKind, Outcome, Profile, Reply, RoutedTurn, TurnContext, WakePhase};
use crate::view::{self, Rendered};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::io::{BufRead, Cursor, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Dollars per 1R when nobody says otherwise (every verb and the desk).
pub const DEFAULT_R_USD: i64 = 1000;

/// The fill model when nobody says otherwise.
pub const DEFAULT_FILL: &str = "strict-cross-v1";

/// The wake name a person's turns are recorded under on the Bus.
pub const DESK_WAKE: &str = "desk";

/// The owner the person's plans carry on the Bus where the book is shared.
pub const PERSON: &str = "person";

/// The owner the agent's plans carry on the Bus where the book is shared.
pub const AGENT: &str = "agent";

/// Bus lines a snapshot carries after a run starts ([`Session::snapshot`]): as many as the
/// desk's Log keeps (`desk::log::KEEP`).
const LONG_TAIL: usize = 5000;

/// Snapshots after a run starts that carry [`LONG_TAIL`] lines: a threaded desk sees only
/// the newest snapshot, so more than one carries them.
const LONG_TAIL_SNAPSHOTS: u8 = 30;

/// The bar the `step bar` key advances by, in seconds.
pub const BAR_SECS: u32 = 60;

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

/// A tape held in memory, so restarts and seeks re-read it without I/O.
#[derive(Clone)]
pub struct TapeSource {
    /// What the status line calls it (`bundled:<name>` or the path).
    pub label: String,
    /// The JSON Lines bytes.
    pub bytes: Arc<[u8]>,
}

/// The tape the desk opens on when none is given.
pub const BUNDLED_TAPE: (&str, &[u8]) = (
    "trend-2025-04-09-s1",
    include_bytes!("../../tapes/trend-2025-04-09-s1.jsonl"),
);

impl TapeSource {
    /// A tape by label: `None` or `bundled:<name>` is the bundled tape, anything else a path
    /// (a file that cannot be read is `error code=IO message=cannot read PATH: ...`).
    pub fn open(label: Option<&str>) -> Result<TapeSource, String> {
        match label {
            None => Ok(TapeSource {
                label: format!("bundled:{}", BUNDLED_TAPE.0),
                bytes: Arc::from(BUNDLED_TAPE.1),
            }),
            Some(l) if l.starts_with("bundled:") => TapeSource::open(None),
            Some(p) => {
                // A session file's header names its tape: `/dev/zero` or a FIFO there was
                // read without end (the desk's own `--tape` refuses a pipe before this).
                if crate::cli::sniff::is_stream(Path::new(p)) {
                    return Err(format!(
                        "error code=USAGE message={p} is a pipe or a device: the desk opens files (save it to a file, then give that)"
                    ));
                }
                crate::limits::read_file_bounded(Path::new(p), crate::limits::MAX_TAPE_BYTES)
                    .map(|b| TapeSource {
                        label: p.to_string(),
                        bytes: Arc::from(b),
                    })
                    .map_err(|e| crate::cli::cannot_read_bounded(Path::new(p), &e))
            }
        }
    }

    /// BLAKE3 of the tape's bytes, hex (the session file records it).
    pub fn blake3(&self) -> String {
        blake3::hash(&self.bytes).to_hex().to_string()
    }

    /// Check the whole tape as `kestrel run` would play it ([`crate::market::check_tape`]):
    /// a bad line anywhere or a tape cut short is refused here, before a session opens on
    /// it, as `run` refuses it: `LABEL: error code=TAPE line=N message=...`.
    pub fn check(&self) -> Result<(), String> {
        crate::market::check_tape(&self.bytes[..])
            .map(drop)
            .map_err(|e| format!("{}: {e}", self.label))
    }

    /// The tape's header (its first line): its name, date, hours and symbols.
    pub fn header(&self) -> Result<TapeHeader, String> {
        self.reader().map(|r| r.header().clone())
    }

    fn reader(&self) -> Result<TapeReader<Reader>, String> {
        TapeReader::new(Box::new(Cursor::new(self.bytes.clone())) as Reader)
            .map_err(|e| e.to_string())
    }
}

/// Every setting the determinism hash depends on (the session file records them; `--open`
/// runs with them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Dollars per 1R.
    pub r_usd: i64,
    /// The fill model's name and version.
    pub fill: String,
    /// The prompt profile the agent is asked with.
    pub profile: Profile,
    /// Co-pilot at the start (the agent's answers wait for the person).
    pub copilot: bool,
    /// In co-pilot, the tape pauses while a proposal waits and plays on once it is
    /// accepted or rejected (on by default; `kestrel desk --no-copilot-pause`).
    #[serde(default = "yes")]
    pub copilot_pause: bool,
    /// Who sits in the agent's seat (`None`: nobody).
    #[serde(with = "agent_record")]
    pub agent: Option<Agent>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            r_usd: DEFAULT_R_USD,
            fill: DEFAULT_FILL.into(),
            profile: Profile::AuthoringV2,
            copilot: false,
            copilot_pause: true,
            agent: Some(Agent::house()),
        }
    }
}

fn yes() -> bool {
    true
}

mod agent_record {
    use super::Agent;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(a: &Option<Agent>, s: S) -> Result<S::Ok, S::Error> {
        a.as_ref().map(Agent::record).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Agent>, D::Error> {
        let v = Option::<serde_json::Value>::deserialize(d)?;
        match v {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(v) => Agent::from_record(&v)
                .map(Some)
                .ok_or_else(|| serde::de::Error::custom("an agent record that does not read")),
        }
    }
}

impl PartialEq for Agent {
    fn eq(&self, other: &Agent) -> bool {
        self.record() == other.record()
    }
}

impl Settings {
    /// Refuse settings the engine cannot run (an unknown fill model, 1R of zero).
    pub fn engine_check(&self) -> Result<(), String> {
        self.engine().map(|_| ())
    }

    fn engine(&self) -> Result<EngineConfig, String> {
        let model = fill::by_name(&self.fill).ok_or_else(|| {
            format!(
                "unknown fill model {:?} (known: {})",
                self.fill,
                fill::FILL_MODELS.join(", ")
            )
        })?;
        if self.r_usd <= 0 {
            return Err(format!(
                "1R must be a positive dollar amount, not {}",
                self.r_usd
            ));
        }
        let r = Px::from_raw(self.r_usd.saturating_mul(crate::market::types::PX_SCALE));
        Ok(EngineConfig {
            fill: model,
            ..EngineConfig::strict(r)
        })
    }
}

/// An act: what a person or the agent did, at a tape point. Recorded in the session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "act", rename_all = "kebab-case")]
pub enum Act {
    /// A turn written at the desk (a person's, or a file armed at the open): routed inside
    /// the session against the standing book, then carried out.
    Turn {
        /// Who wrote it (`you`, `examples`, a file name).
        author: String,
        /// What the router is told of the author.
        kind: AuthorKind,
        /// The reply as written.
        text: String,
    },
    /// An act of the seated agent.
    Agent(AgentAct),
}

impl Act {
    /// A turn the person wrote at the desk (what an undo takes back); the documents armed
    /// at the open are the file's.
    pub(crate) fn is_persons_turn(&self) -> bool {
        matches!(self, Act::Turn { kind, .. } if *kind == AuthorKind::Human)
    }

    /// An answer of the agent's (acted or proposed), or the person's reject of one:
    /// recorded by call number.
    fn is_agents_answer(&self) -> bool {
        matches!(
            self,
            Act::Agent(
                AgentAct::Answer { .. } | AgentAct::Reject { .. } | AgentAct::Propose { .. }
            )
        )
    }
}

/// A command to the session.
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
    /// One speed step faster than the session's speed as it stands (a burst of key presses
    /// steps once each, whatever snapshot the desk last saw).
    Faster,
    /// One speed step slower.
    Slower,
    /// Advance to the next tape event's time (pauses).
    StepTick,
    /// Advance to the next bar boundary ([`BAR_SECS`]) (pauses).
    StepBar,
    /// Move the clock to a tape time (backwards re-runs the session up to it, with every
    /// act taken or recorded before it).
    Seek(Ts),
    /// Start over: the clock at the open, the book empty, a script agent from its start.
    Restart,
    /// A turn written at the desk, routed now against the standing book.
    Submit {
        /// The desk's number for it: the snapshot says what became of it
        /// ([`SessionSnapshot::last_submit`]).
        id: u64,
        /// Who wrote it (`you` for the person).
        author: String,
        /// What the router is told of the author.
        kind: AuthorKind,
        /// The reply as written.
        text: String,
    },
    /// Accept the agent's proposal to call `call` (co-pilot): it routes now. A proposal
    /// the person did not see (another call) is not accepted.
    Accept {
        /// The call the proposal answers.
        call: u64,
    },
    /// Reject the agent's proposal to call `call`: nothing routes (a `turn-rejected` event).
    Reject {
        /// The call the proposal answers.
        call: u64,
    },
    /// Co-pilot on or off (off routes a waiting proposal).
    Copilot(bool),
    /// Attach or detach the seated agent.
    Attach(bool),
    /// Advance the clock by this much wall time at the current speed.
    Tick(Duration),
    /// Take back the person's last turn: the session re-runs from the open to where it
    /// stands with every other act (the agent's later acts stay as recorded). The
    /// snapshot's [`SessionSnapshot::last_undo`] says what was undone.
    Undo {
        /// The desk's number for it.
        id: u64,
    },
    /// The person's Editor text as it stands, not submitted: the `left` record keeps it, and
    /// `--open` gives it back (a draft is not an act: it moves nothing on the tape).
    Draft(String),
}

/// A plan's owner, as the screen shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// The person at the desk (or a file armed at the open).
    Person,
    /// The seated agent, by name.
    Agent(String),
    /// Nobody said (a headless run with one author).
    Unowned,
}

/// One plan as the Plans pane shows it: typed, from the Blotter and the document.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanLine {
    /// The plan's name.
    pub name: String,
    /// Who armed it.
    pub owner: Owner,
    /// Its state.
    pub state: PlanState,
    /// The budget in R.
    pub budget_r: f64,
    /// P&L so far, in R (realised and open).
    pub pnl_r: f64,
    /// The ttl as written.
    pub ttl: Option<ast::Ttl>,
    /// When the ttl ends.
    pub expires: Option<Ts>,
    /// The clause that fired last, or why the plan is in its state.
    pub note: String,
    /// When the note was written, where it was (`None`: a summary of fires and fills).
    pub note_ts: Option<Ts>,
    /// The last risk decision on its tickets (a veto or a clamp).
    pub risk: Option<bus::blotter::Risk>,
    /// The plan in canonical Kestrel.
    pub text: String,
}

/// A turn as the Journal and Tokens panes list it: a person's or the agent's.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnLine {
    /// Tape time it acted (or was rejected).
    pub ts: Ts,
    /// The wake it answered (`desk` for a person's turn).
    pub wake: String,
    /// Who wrote it (`you`, `examples`, or the agent's name).
    pub author: String,
    /// The routed turn (`None`: rejected).
    pub routed: Option<RoutedTurn>,
    /// The rejected turn's outcome and who rejected it.
    pub rejected: Option<(String, String)>,
    /// Token figures of the reply that acted.
    pub tokens: Option<TurnTokens>,
    /// Attempts in its repair loop (1: no re-ask).
    pub attempts: usize,
    /// What it did to the book (`armed breakout`, `no live plan x`), when it acted.
    pub result: String,
    /// What failed, when the agent wrote no valid turn (a fail-closed pass, a provider
    /// error): [`RepairRun::failure`](crate::turn::RepairRun::failure).
    pub failure: Option<String>,
    /// The size in bytes of the reply that acted, when it was refused unread for its size:
    /// its reply tokens ([`tokens`](Self::tokens)) are then an estimate of the whole reply,
    /// not a count of the part kept.
    pub oversized: Option<usize>,
    /// What every attempt of its repair loop cost (a rejected proposal's too).
    pub spend: crate::turn::repair::Spend,
    /// cl100k tokens of the View its wake delivered (the prompt's view part).
    pub view_tokens: usize,
}

impl TurnLine {
    /// Tape time.
    pub fn ts(&self) -> Ts {
        self.ts
    }
    /// Who wrote it.
    pub fn author(&self) -> &str {
        &self.author
    }
    /// The routed turn (`None`: rejected).
    pub fn routed(&self) -> Option<&RoutedTurn> {
        self.routed.as_ref()
    }
    /// Token figures.
    pub fn tokens(&self) -> Option<&TurnTokens> {
        self.tokens.as_ref()
    }
    /// Re-asks of its repair loop.
    pub fn repairs(&self) -> usize {
        self.attempts.saturating_sub(1)
    }
    /// Is it a person's (or a file's) turn, written at the desk?
    pub fn from_desk(&self) -> bool {
        self.wake == DESK_WAKE
    }
    /// What became of it, for the Journal.
    pub fn label(&self) -> String {
        match (&self.routed, &self.rejected) {
            // Nobody was asked (a reopened session's live author is not called): the
            // Journal said `unanswered rejected (nobody)`, as if the agent had been silent.
            (_, Some((_, by))) if by == "nobody" => "not asked (replayed, not called)".into(),
            // What it proposed stays after the reject (`supersede rejected (human): PLAN
            // breakout`); what failed, the Journal's next line. Until 2026-12-06 a rejected
            // proposal kept neither.
            (_, Some((outcome, by))) if self.result.is_empty() => {
                format!("{outcome} rejected ({by})")
            }
            (_, Some((outcome, by))) => format!("{outcome} rejected ({by}): {}", self.result),
            (Some(r), None) if self.from_desk() => {
                let invalid = matches!(
                    r.outcome,
                    Outcome::Invalid { .. } | Outcome::Truncated { .. }
                );
                if self.result.is_empty() || (invalid && self.result.starts_with("refused")) {
                    r.outcome.label().to_string()
                } else {
                    format!("{} → {}", r.outcome.label(), self.result)
                }
            }
            (Some(r), None) => {
                let mut l = format!("{} @ wake {}", r.outcome.label(), self.wake);
                if self.attempts > 1 {
                    l.push_str(&format!(" after {} re-asks", self.attempts - 1));
                }
                // A supersede the engine left a plan of out says so (`→ armed nothing:
                // PLAN x not armed: …`): until 2026-12-06 it read as if it armed.
                if !self.result.is_empty() {
                    l.push_str(&format!(" → {}", self.result));
                }
                l
            }
            (None, None) => String::new(),
        }
    }
}

/// A notice for the status line: something the person should know happened.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// Tape time.
    pub ts: Ts,
    /// What happened.
    pub text: String,
    /// How loud: a refusal or a veto is an error, a size clamp a warning.
    pub level: NoticeLevel,
}

/// How a notice is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NoticeLevel {
    /// Something happened.
    #[default]
    Info,
    /// Something was changed for you (a size clamped to a budget).
    Warn,
    /// Something was refused (a veto, a CANCEL of no live plan, a turn that did not parse).
    Error,
}

/// Chart data at an instant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChartData {
    /// One-minute candles and levels of the signal symbol, then of the exec symbol when it
    /// is another.
    pub series: Vec<ChartSeries>,
    /// Every fire and fill, in order, with its plan (and a fill's side, qty and price).
    pub marks: Vec<ChartMark>,
}

/// One charted symbol: its candles and levels.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChartSeries {
    /// One-minute candles.
    pub candles: Candles,
    /// High of day.
    pub hod: Option<f64>,
    /// Low of day.
    pub lod: Option<f64>,
    /// Session VWAP (the average, for an index).
    pub vwap: Option<f64>,
}

/// The chart's marks from the Blotter: its fires and fills in order (the n-th fill mark is
/// the n-th fill row), the current session's only (its chart starts at its open).
fn chart_marks(b: &bus::blotter::Blotter) -> Vec<ChartMark> {
    let (marks_at, fills_at) = b
        .sessions
        .last()
        .map_or((0, 0), |s| (s.marks_at, s.fills_at));
    let mut fills = b.fills.iter().skip(fills_at);
    b.marks
        .iter()
        .skip(marks_at)
        .map(|m| {
            let secs = m.ts.0 / 1000;
            match m.fill {
                None => ChartMark {
                    secs,
                    kind: MarkKind::Fire,
                    plan: m.plan.clone(),
                    clause: m.clause.clone(),
                    leg: String::new(),
                    qty: 0,
                    px: 0.0,
                },
                Some(side) => {
                    let row = fills.next();
                    ChartMark {
                        secs,
                        kind: if side == bus::BusSide::Buy {
                            MarkKind::Buy
                        } else {
                            MarkKind::Sell
                        },
                        plan: m.plan.clone(),
                        clause: String::new(),
                        leg: row.map(|r| r.leg.clone()).unwrap_or_default(),
                        qty: row.map_or(0, |r| r.qty),
                        px: row.map_or(0.0, |r| r.px.to_f64()),
                    }
                }
            }
        })
        .collect()
}

/// The refusals of one answer's replies the Journal shows while the author writes again
/// (the repair budget bounds them; a longer loop is counted on the status line).
const REFUSED_SHOWN: usize = 8;

/// The most characters of one refusal kept for the Journal (a coded error's line).
const REFUSED_CHARS: usize = 400;

/// The seated agent as the screen shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentStatus {
    /// Its name.
    pub name: String,
    /// Its name for a narrow column ([`Agent::short_name`](super::agent::Agent::short_name)).
    pub short_name: String,
    /// A live author (model or command)?
    pub live: bool,
    /// Is it asked at wakes?
    pub attached: bool,
    /// Co-pilot now (its answers wait for the person).
    pub copilot: bool,
    /// The wake a live author is answering now, and when it was asked.
    pub waiting: Option<(String, Ts)>,
    /// Its replies to that wake refused and re-asked so far (`· re-ask 1` on the status
    /// line while it writes again).
    pub re_asked: u32,
    /// Why each of them was refused (its first coded error, and how many more), in order:
    /// the Journal shows them while the author writes again.
    pub refused: Vec<String>,
    /// Its answer waiting for the person (co-pilot).
    pub proposal: Option<Proposal>,
    /// The plans of that answer that would not arm if accepted now: their names are live
    /// plans of the person's (the desk warns of it before `a`).
    pub proposal_clash: Vec<String>,
    /// The last live answer, as the worker measured it.
    pub last_answer: Option<LastAnswer>,
    /// The answers in a row that were provider errors since the last one that was not,
    /// with the last error's kind (`connect`): the status line keeps saying so.
    pub failing: Option<(String, u32)>,
    /// What a live author is writing now (the tail of its stream).
    pub thinking: String,
    /// A replay of a saved session: nobody is asked; the recorded answers act.
    pub replay_only: bool,
}

/// A live author's last answer as the status line says it (shown, never on the Bus): it
/// outlives a re-run, which asks nobody.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LastAnswer {
    /// Wall time of the whole repair loop.
    pub wall: Duration,
    /// Output tokens across its attempts.
    pub tokens: usize,
    /// Re-asks made.
    pub re_asks: u32,
    /// Are [`tokens`](Self::tokens) in part an estimate (a reply refused unread for its
    /// size: [`RepairRun::tokens_estimated`](crate::turn::RepairRun::tokens_estimated))?
    pub estimated: bool,
    /// Its cost by attempt kind (the provider's `usage` when it sent one).
    pub spend: crate::turn::repair::Spend,
    /// cl100k tokens of the View it was sent.
    pub view_tokens: usize,
}

/// Everything the screen draws of the session, at one instant.
#[derive(Debug, Clone)]
pub struct SessionSnapshot {
    /// The tape's label (`bundled:<name>` or the path it was opened from).
    pub tape: String,
    /// The tape's name, from its header (what the Frame and `kestrel run` call it).
    pub tape_name: String,
    /// The session of a multi-session tape (1, 2, …; `None` on a v1 tape).
    pub session: Option<u32>,
    /// The session's date (`YYYY-MM-DD`).
    pub date: String,
    /// The tape clock.
    pub clock: Ts,
    /// Session open.
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
    /// The settings in force.
    pub settings: Settings,
    /// Determinism hash so far.
    pub hash: String,
    /// Events on the Bus.
    pub bus_events: u64,
    /// The desk's Frame (the View pane).
    pub frame: Arc<Rendered>,
    /// The View it renders.
    pub view_name: String,
    /// Chart data.
    pub chart: Arc<ChartData>,
    /// Plans, typed.
    pub plans: Vec<PlanLine>,
    /// The book (positions, orders, fills, P&L) as the Frame's panes read it.
    pub book: view::Snapshot,
    /// The newest Bus lines (canonical JSON).
    pub bus: Vec<String>,
    /// Every event of this run that is not chatter ([`bus::Event::is_chatter`]: a re-price,
    /// a mark, a suppression), numbered from 0 as the Bus counts them, canonical JSON: the
    /// fires, fills, turns and risk the Log keeps from the open, where [`bus`](Self::bus)
    /// holds only the newest lines.
    pub landmarks: Arc<Vec<(u64, Arc<str>)>>,
    /// Every turn of this run, in tape order.
    pub turns: Arc<Vec<TurnLine>>,
    /// Notices, newest last (the last 20).
    pub notices: Vec<Notice>,
    /// Notices so far in all (to tell a new one from the last 20).
    pub notices_total: usize,
    /// What became of the last turn submitted at the desk.
    pub last_submit: Option<SubmitResult>,
    /// What the last undo took back.
    pub last_undo: Option<Undone>,
    /// The person's turn `u` takes back when none of theirs is behind the tape: the first
    /// ahead of it (recorded, after a seek back, to act again when the tape reaches it), as
    /// (tape time, the turn in a few words). `None`: a turn of this run's is taken back, or
    /// there is none.
    pub undo_ahead: Option<(Ts, String)>,
    /// The person's accept or reject of an agent's proposal that `u` takes back, when it is
    /// their last act behind the tape (after any turn of theirs), in words: `reject of
    /// house's supersede @ wake open (09:30, decided 09:31)`. `None`: a turn is taken back,
    /// or nothing.
    pub undo_decision: Option<String>,
    /// The person's turns recorded ahead of the tape (after a seek back, or in a reopened
    /// session), as (tape time, the turn in a few words): a new act of the person's drops
    /// them ([`Session::person_act`]), so the desk asks first.
    pub turns_ahead: Vec<(Ts, String)>,
    /// The seated agent.
    pub agent: Option<AgentStatus>,
    /// A tape or file error, if one stopped something.
    pub error: Option<String>,
    /// Tape events per wall second over the last play interval.
    pub events_per_sec: f64,
    /// The run (restarts and rewinds count up).
    pub segment: u32,
    /// Where the session is saved (`None`: nothing is written).
    pub saving: Option<PathBuf>,
    /// Is anything written yet (an opened session writes only once the person acts)?
    pub written: bool,
    /// The first write of the session file or its Bus file that failed, as a coded line
    /// (`error code=IO ...`): the session is not saved whole.
    pub save_error: Option<String>,
    /// The names a turn written now may refer to (the standing book's plans, views and
    /// wakes): the editor's live check resolves `ARM`, `plan(...)` and `DELIVER` against
    /// them, as the Session does at the submit.
    pub standing: Arc<crate::lang::rules::Scope>,
    /// The person's Editor draft the session file gave back at `--open` (not submitted when
    /// they left): the desk puts it back in the Editor.
    pub draft_opened: Option<Arc<str>>,
}

/// The positions still open in the book, each as `plan instrument ±qty` (an option of the
/// session's own date as `SPY 0dte 518.00 C`), in the Blotter's order.
/// What the footer says of a plan sent again changed while its replaced version holds.
const CAN_ENTER_AGAIN: &str = "the new version can enter again";

/// The PLAN names a document declares, in order.
fn plan_names(doc: &ast::Document) -> Vec<String> {
    doc.statements
        .iter()
        .filter_map(|st| match &st.kind {
            ast::StatementKind::Plan(p) => Some(p.name.text.clone()),
            _ => None,
        })
        .collect()
}

/// What a person's document did, for the footer: the plans it armed (`armed a, b`), the
/// ones it sent again unchanged, which stand as they were (`kept hold as it stands`), and
/// for a plan it changed (`standing`: its names that were in the book) what the replaced
/// version still holds, since the new version can enter on top of it
/// (`hold holds +100 SPY shares: the new version can enter again`).
/// A plan of the document the engine did not arm (its name is another owner's live plan)
/// is named with the engine's reason, and a document that armed none of its plans so is
/// refused (`refused: PLAN x not armed: a live plan of another owner has that name …`):
/// until 2026-12-06 the footer and the Journal read `armed`, with nothing after it.
fn armed_result(
    bus: &bus::Bus,
    doc_names: &[String],
    names: &[String],
    standing: &[String],
) -> String {
    let kept: &[String] = bus
        .events()
        .iter()
        .rev()
        .find_map(|e| match e {
            bus::Event::DocumentArmed { kept, .. } => Some(kept.as_slice()),
            _ => None,
        })
        .unwrap_or_default();
    // The engine's reason for each plan it left out (its latest `error` for that plan).
    let refused: Vec<String> = doc_names
        .iter()
        .filter(|n| !names.contains(n) && !kept.contains(n))
        .map(|n| {
            bus.events()
                .iter()
                .rev()
                .find_map(|e| match e {
                    bus::Event::Error {
                        plan: Some(p),
                        message,
                        ..
                    } if p == n && message.contains(" not armed: ") => Some(message.clone()),
                    _ => None,
                })
                .unwrap_or_else(|| format!("PLAN {n} not armed"))
        })
        .collect();
    if names.is_empty() && kept.is_empty() && !refused.is_empty() {
        return format!("refused: {}", refused.join("; "));
    }
    let mut out = if names.is_empty() {
        if kept.is_empty() {
            "armed".to_string()
        } else {
            "armed nothing new".to_string()
        }
    } else {
        format!("armed {}", names.join(", "))
    };
    for r in &refused {
        out.push_str(&format!("; {r}"));
    }
    if !kept.is_empty() {
        out.push_str(&format!(
            "; kept {} as it stands (sent unchanged)",
            kept.join(", ")
        ));
    }
    for n in names.iter().filter(|n| standing.contains(n)) {
        if let Some(h) = bus.blotter().holding_of(n) {
            out.push_str(&format!("; {n} holds {h}: {CAN_ENTER_AGAIN}"));
        }
    }
    out
}

/// The positions still open, each with its plan: (`plan`, `plan SPY shares +20`).
fn riding(b: &bus::Blotter, date: &str) -> Vec<(String, String)> {
    b.positions
        .iter()
        .flat_map(|(plan, legs)| {
            legs.iter()
                .filter(|(_, p)| p.qty != 0)
                .map(move |(leg, p)| {
                    (
                        plan.clone(),
                        format!(
                            "{plan} {} {:+}",
                            crate::market::options::same_day_name(leg, date),
                            p.qty
                        ),
                    )
                })
        })
        .collect()
}

/// The seat of the agent in a run.
struct Chair {
    agent: Agent,
    seat: Seat,
    worker: Option<LiveWorker>,
    attached: bool,
    hold: bool,
    quiet: bool,
    calls: u64,
    outstanding: Option<Outstanding>,
    proposal: Option<Proposal>,
    waiting: Option<(String, Ts)>,
    /// Replies refused and re-asked so far while the author writes its answer.
    re_asked: u32,
    /// Why each was refused (its first coded error), the first [`REFUSED_SHOWN`].
    refused: Vec<String>,
    thinking: String,
    last_answer: Option<LastAnswer>,
    failing: Option<(String, u32)>,
    replay_only: bool,
}

impl Chair {
    /// An agent just seated: attached, nothing asked yet; `hold` is co-pilot at the start,
    /// `replay_only` a saved session's agent (its recorded answers act, nobody is called).
    fn seated(
        agent: Agent,
        seat: Seat,
        worker: Option<LiveWorker>,
        hold: bool,
        replay_only: bool,
    ) -> Chair {
        Chair {
            agent,
            seat,
            worker,
            attached: true,
            hold,
            quiet: false,
            calls: 0,
            outstanding: None,
            proposal: None,
            waiting: None,
            re_asked: 0,
            refused: Vec::new(),
            thinking: String::new(),
            last_answer: None,
            failing: None,
            replay_only,
        }
    }
}

/// A call out to the agent whose answer has not acted yet.
struct Outstanding {
    call: u64,
    /// What a live author is asked (kept so a rewind re-sends it).
    ask: Option<(super::WakeAsk, TurnContext)>,
    /// Was the live author asked it? Not while a rewind re-runs quietly, nor when the
    /// record still to replay answers it ([`records_answer`]): then the recorded answer acts
    /// at its point, and the call is asked only if the person's new act drops that record
    /// ([`Session::ask_unanswered`]).
    asked: bool,
}

/// The session file: written as the session goes, or (an opened session) held until the
/// person acts.
struct Recorder {
    /// Where it is saved: the name asked for until the file is created, then the name it
    /// was created at ([`saved::claim`]: another desk may have taken the first).
    path: Option<PathBuf>,
    file: Option<std::fs::File>,
    held: Vec<String>,
    lazy: bool,
    /// How its files are created ([`saved::create_exclusive`]).
    create: saved::CreateFile,
    /// The first write of the session file or its Bus file that failed (a full disk), as
    /// the coded line the desk shows: nothing is written after it.
    failed: Option<String>,
}

impl Recorder {
    fn write(&mut self, line: String, acted: bool) -> Result<(), String> {
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        if self.failed.is_some() {
            return Ok(());
        }
        self.held.push(line);
        if self.lazy && !acted {
            return Ok(());
        }
        if self.file.is_none() {
            let (at, f) = saved::claim(&path, self.create)
                .map_err(|e| format!("session file {}: {e}", path.display()))?;
            self.path = Some(at);
            self.file = Some(f);
            self.lazy = false;
        }
        let path = self.path.clone().unwrap_or(path);
        if let Some(f) = self.file.as_mut() {
            let said = |e: std::io::Error| format!("session file {}: {e}", path.display());
            for l in self.held.drain(..) {
                f.write_all(l.as_bytes())
                    .and_then(|_| f.write_all(b"\n"))
                    .map_err(said)?;
            }
            f.flush().map_err(said)?;
        }
        Ok(())
    }
}

/// The tape a session reads: the desk's bytes in memory, or a headless run's file.
pub type Reader = Box<dyn BufRead>;

/// The one owner of a run. See the module docs.
pub struct Session {
    tape: TapeSource,
    header: TapeHeader,
    settings: Settings,
    run: Run<Reader>,
    signal: Sym,
    exec: Sym,
    clock: Ts,
    last_event: Ts,
    seq: u64,
    playing: bool,
    speed: Speed,
    ended: bool,
    view: ast::View,
    candles: Vec<Candles>,
    script: VecDeque<(u64, Ts, Act)>,
    history: Vec<(u64, Ts, Act)>,
    chair: Option<Chair>,
    desk_turns: Vec<(usize, String, String)>,
    lines: Arc<Vec<TurnLine>>,
    lines_seen: usize,
    notices: Vec<Notice>,
    notices_seen: usize,
    last_submit: Option<SubmitResult>,
    last_undo: Option<Undone>,
    /// Snapshots left that carry the long Bus tail ([`LONG_TAIL_SNAPSHOTS`]).
    long_tail: u8,
    /// The run's events that are not chatter, and how many Bus events were looked at.
    landmarks: Arc<Vec<(u64, Arc<str>)>>,
    landmarks_seen: usize,
    horizon: Ts,
    record: Recorder,
    /// The person has left ([`Session::leave`]): the `left` record is written.
    left: bool,
    /// The person's Editor draft as the desk last said ([`Command::Draft`]), and the one the
    /// session file gave back at `--open`.
    draft: String,
    draft_opened: Option<Arc<str>>,
    bus_written: usize,
    bus_file: Option<std::fs::File>,
    /// The standing book's names as last snapshotted (shared while the run and its Bus do
    /// not move), and the run and Bus count they were built at.
    standing: Arc<crate::lang::rules::Scope>,
    standing_at: Option<(u32, u64)>,
    replaying: bool,
    /// While [`reopen`] replays a file: for each recorded act applied, in order, the tape
    /// events applied and the last one's time when it applied, and what it did; `reopen`
    /// holds them to the file's record.
    replayed: Option<Vec<Replayed>>,
    error: Option<String>,
    segment: u32,
    frame: Option<Arc<Rendered>>,
    frame_key: Option<(u64, Ts, usize)>,
    chart_cache: Option<Arc<ChartData>>,
    rate: (u64, Duration),
    events_per_sec: f64,
    changed: bool,
    headless: bool,
    /// Bus events already scanned for vetoes and clamps (their notices).
    risk_seen: usize,
    /// Playing stops at the event a co-pilot proposal appears on (set while playing).
    stop_for_proposal: bool,
    /// The tape was paused for this call's proposal: it plays on once it is answered.
    paused_for: Option<u64>,
    /// The footer has said once that a live author's wake went unasked
    /// ([`Session::not_called`]).
    unasked_said: bool,
    /// The warnings at arming the person's documents of a headless desk's book
    /// ([`Session::seat_desk`]), which the desk says on the turn's row: kept for
    /// [`Session::take_arm_warnings`], as `--plans`' are.
    arm_warnings: Vec<crate::engine::ArmWarning>,
}

/// What a headless run brings to [`Session::headless`].
pub struct Headless {
    /// The Bus, with its sink (the `--bus` file) or keeping its events (`grade`).
    pub bus: bus::Bus,
    /// Documents armed at the open, before the first event: the author's starting book.
    pub docs: Vec<ast::Document>,
    /// The author asked at every wake, answering inline (`None`: nobody is asked).
    pub author: Option<Box<dyn super::TurnSource>>,
}

/// How a session is opened.
#[derive(Default)]
pub struct Opening {
    /// Write the session file here (`None`: nothing is written).
    pub save: Option<PathBuf>,
    /// Acts to replay at their recorded tape points (`kestrel desk --open`).
    pub script: Vec<(u64, Ts, Act)>,
    /// A saved session: nothing is written until the person acts, and a live agent is not
    /// called (its recorded answers act).
    pub replay: bool,
    /// Documents the person arms at the open, before the first event: (author, text).
    pub plans: Vec<(String, String)>,
    /// How the session's files are created (`None`: [`saved::create_exclusive`]; a test
    /// gives one that fails, as a full disk does).
    pub create: Option<saved::CreateFile>,
}

/// The session file's record of an undo: the act taken back (its `seq` and `ts`) and
/// whether the agent's answers after it were dropped with it (`rewind`).
fn undo_record(seq: u64, ts: Ts, rewind: bool) -> serde_json::Value {
    serde_json::json!({
        "type": "control",
        "action": "undo",
        "act_seq": seq,
        "act_ts": ts.to_string(),
        "rewind": rewind,
    })
}

/// A turn in a few words for a notice: its first line that is not a comment (a turn may
/// open with its reasoning), cut to 32 characters.
/// The person's turns a new act drops, in words: `your 10:00 turn (PLAN calls …)`, or
/// `your 10:00 and 10:30 turns (PLAN calls …; PLAN hold …)`. The desk's question and the
/// session's notice both say it so.
pub fn dropped_turns(turns: &[(Ts, String)]) -> String {
    match turns {
        [] => "nothing of yours".into(),
        [(ts, title)] => format!("your {} turn ({title})", ts.hhmm()),
        _ => {
            let times: Vec<String> = turns.iter().map(|(ts, _)| ts.hhmm()).collect();
            let titles: Vec<&str> = turns.iter().map(|(_, t)| t.as_str()).collect();
            let n = times.len() - 1;
            format!(
                "your {} and {} turns ({})",
                times[..n].join(", "),
                times[n],
                titles.join("; ")
            )
        }
    }
}

fn turn_title(text: &str) -> String {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .or_else(|| text.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or("");
    crate::author::excerpt(first, 31)
}

/// The acts an undo of the person's turn at `k` takes out of `acts` (in the order they were
/// taken): with `rewind` (the session goes back to the turn), the turn and every act after
/// it; else the turn, and after a STAND-DOWN the co-pilot hold the desk put on the agent with
/// it (an act of its own at the same tape point, [`Session::hold_after_stand_down`]). The
/// session and the session-file reader both ask this, so they take out the same acts.
pub(crate) fn undo_span(acts: &[(u64, Ts, Act)], k: usize, rewind: bool) -> std::ops::Range<usize> {
    if rewind {
        return k.min(acts.len())..acts.len();
    }
    let Some((seq, ts, Act::Turn { text, .. })) = acts.get(k) else {
        return k..k;
    };
    let stand_down = text
        .lines()
        .any(|l| l.trim_start().starts_with("STAND-DOWN"));
    let hold = acts.get(k + 1).is_some_and(|(q, t, a)| {
        (q, t) == (seq, ts) && matches!(a, Act::Agent(AgentAct::Hold { on: true }))
    });
    k..k + 1 + usize::from(stand_down && hold)
}

/// The call whose proposal the act at `k` decided, when it is the person's decision: a
/// reject (only the person's `x` records one), or an accept (an answer in the history that
/// follows a recorded proposal of the same call; with a script seated, whose proposals are
/// not recorded acts, every answer in the history is an accept: its answers in autopilot
/// are not recorded either).
pub(crate) fn decision_call(acts: &[(u64, Ts, Act)], k: usize, script: bool) -> Option<u64> {
    match &acts.get(k)?.2 {
        Act::Agent(AgentAct::Reject { call, .. }) => Some(*call),
        Act::Agent(AgentAct::Answer { call, .. }) => {
            let proposed = acts[..k].iter().any(
                |(_, _, a)| matches!(a, Act::Agent(AgentAct::Propose { call: c, .. }) if c == call),
            );
            (script || proposed).then_some(*call)
        }
        _ => None,
    }
}

/// The acts an undo of the person's decision at `k` takes out: it and every act after it
/// (the session goes back to it); an accept made by turning co-pilot off (`c` with a
/// proposal waiting) takes the hold's change at the same point with it, so the proposal
/// waits again in co-pilot. The session and the session-file reader both ask this.
pub(crate) fn decision_span(acts: &[(u64, Ts, Act)], k: usize) -> std::ops::Range<usize> {
    let start = match (k.checked_sub(1).and_then(|j| acts.get(j)), acts.get(k)) {
        (Some((q0, t0, Act::Agent(AgentAct::Hold { on: false }))), Some((q, t, _)))
            if (q0, t0) == (q, t) =>
        {
            k - 1
        }
        _ => k,
    };
    start.min(acts.len())..acts.len()
}

/// What an undo took back ([`Command::Undo`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undone {
    /// The desk's number for the undo.
    pub id: u64,
    /// The turn taken back and the tape time it had acted at; `None`: the person had no
    /// turn in this run to take back.
    pub turn: Option<(Ts, String)>,
    /// The turn in a few words: `your 10:05 turn (PLAN my-dip budget 0.2R ttl +30m)`; one
    /// ahead of the tape says it will not act (`…, ahead of the tape: it will not act at
    /// 10:40`).
    pub summary: String,
    /// The session went back to the turn's point (the agent had answered after it), rather
    /// than re-running to where it stood.
    pub rewound: bool,
}

/// What became of the last turn submitted at the desk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmitResult {
    /// The desk's number for it.
    pub id: u64,
    /// The routed outcome's name (`refused` when nothing was routed).
    pub outcome: String,
    /// Authored (a plan armed, a stand-down, a cancel, a view request, a pass)?
    pub authored: bool,
    /// A SHOW VIEW: the View pane shows it.
    pub view_request: bool,
}

impl Session {
    /// A session at the open of `tape`, paused at 60x (1x with a live author seated), with
    /// the default View. The whole tape is checked first ([`TapeSource::check`]): a tape
    /// `kestrel run` refuses opens no session.
    pub fn open(tape: TapeSource, settings: Settings, how: Opening) -> Result<Session, String> {
        // The whole tape first: the desk plays it in steps and would meet a bad line or a cut
        // end only when it got there (and settle the book at a cut end as if at the close).
        tape.check()?;
        let reader = tape.reader()?;
        let header = reader.header().clone();
        let run = new_run(reader, &settings)?;
        let mut s = Session::around(
            tape, header, settings, run, how.save, how.script, how.replay,
        )?;
        if let Some(create) = how.create {
            s.record.create = create;
        }
        let open = s.clock;
        s.chair = s.seat_agent(how.replay)?;
        // A live author thinks in wall time: at 60x a 55 s answer to the 09:30 wake would
        // land at 10:20. Seated live, the desk starts at 1x (the person may speed up).
        if s.chair.as_ref().is_some_and(|c| c.worker.is_some()) {
            s.speed = Speed::X1;
        }
        let header = serde_json::json!({
            "type": "desk-session", "v": saved::SESSION_FORMAT, "tape": s.tape.label,
            "tape_name": s.header.name, "tape_blake3": s.tape.blake3(),
            "settings": serde_json::to_value(&s.settings).unwrap_or_default(),
        });
        s.write_record(header, false);
        // A reopened session's new file starts as a copy of the acts it replays.
        let copies: Vec<serde_json::Value> = s
            .script
            .iter()
            .map(|(seq, ts, act)| act_record(*seq, *ts, act, "replayed"))
            .collect();
        for c in copies {
            s.write_record(c, false);
        }
        // A saved session's acts, from the first, are held to the record ([`reopen`]).
        if how.replay {
            s.replayed = Some(Vec::new());
        }
        s.apply_script();
        // The opening documents arm at the open, before the first event (and so before the
        // OPEN wake asks the agent), as `run` and `agent` arm theirs.
        for (author, text) in how.plans {
            s.act(Act::Turn {
                author,
                kind: AuthorKind::File,
                text,
            });
        }
        s.advance_to(open);
        Ok(s)
    }

    /// A headless run over `reader` (`label` names the tape in messages): the engine as
    /// `cfg` says, the documents and the author `h` brings. Drive it with
    /// [`Session::play_to_end`] (or [`Session::feed`], for a caller that holds the events),
    /// then [`Session::finish`]. Nothing is saved: the Bus is the record.
    pub fn headless(
        label: &str,
        reader: TapeReader<Reader>,
        cfg: RunConfig,
        h: Headless,
    ) -> Result<Session, String> {
        let header = reader.header().clone();
        let name = h.author.as_ref().map(|a| a.name());
        let settings = Settings {
            // The desk's record of the run: whole dollars (the engine keeps `cfg`'s exact R).
            r_usd: cfg.engine.r_usd.raw() / crate::market::types::PX_SCALE,
            fill: cfg.engine.fill.name().to_string(),
            profile: cfg.profile,
            copilot: false,
            copilot_pause: false,
            agent: name.clone().map(|name| Agent::Inline { name }),
        };
        let run = Run::new(reader, cfg, &h.docs, h.bus)?;
        let tape = TapeSource {
            label: label.to_string(),
            bytes: Arc::from(&[][..]),
        };
        let mut s = Session::around(tape, header, settings, run, None, Vec::new(), false)?;
        s.headless = true;
        if let (Some(name), Some(source)) = (name, h.author) {
            s.chair = Some(Chair::seated(
                Agent::Inline { name },
                Seat::Script(source),
                None,
                false,
                false,
            ));
        }
        Ok(s)
    }

    /// Seat a headless run's book as a desk seats it (a desk's Bus replayed: docs/desk.md,
    /// "A desk's Bus, headless"): the author sits as the desk's agent, whose supersede,
    /// STAND-DOWN and CANCEL reach only the plans it armed ("Whose book"), and `persons`
    /// (the person's documents at the open: what the router is told of their author, and
    /// the text) arm as [`Session::open`] arms the desk's, each the person's turn at the
    /// open: its `document-armed` names the person, its turn (wake `desk`) is on the Bus.
    /// The documents [`Headless::docs`] armed stay with no owner, so no act of the agent's
    /// replaces them either. The person's turns are not the author's: the outcome counts
    /// ([`Session::counts`]) are the author's alone. Refused once the tape has started, or
    /// with no author seated (nothing is changed).
    pub fn seat_desk(&mut self, persons: Vec<(AuthorKind, String)>) -> Result<(), String> {
        if !self.headless || self.chair.is_none() || self.seq > 0 || self.playing {
            return Err(
                "a desk's book is seated at the open of a headless run with an author".into(),
            );
        }
        self.run.share_book(AGENT);
        // The documents armed before (`--plans`) keep their warnings (the desk's turn drops
        // any it finds pending); its own are kept too (by `desk_turn`).
        self.arm_warnings
            .extend(self.run.engine.take_arm_warnings());
        let counts = self.run.counts.clone();
        for (kind, text) in persons {
            self.act(Act::Turn {
                author: PERSON.into(),
                kind,
                text,
            });
        }
        self.run.counts = counts;
        Ok(())
    }

    /// Play a headless run to the end of the tape, asking `stop` before every event:
    /// `Ok(Some(signal))` when `stop` cut it short (finish it with [`Session::interrupt`]),
    /// `Ok(None)` at the end of the tape (then [`Session::finish`]), `Err` with the tape
    /// reader's coded refusal (a bad line, a tape cut short), where nothing is settled.
    pub fn play_to_end(
        &mut self,
        stop: &mut dyn FnMut() -> Option<&'static str>,
    ) -> Result<Option<&'static str>, TapeError> {
        self.playing = true;
        while !self.ended {
            if let Some(sig) = stop() {
                return Ok(Some(sig));
            }
            match self.run.step_event()? {
                Some((ev, fired)) => {
                    self.on_event(&ev, fired);
                    self.clock = self.last_event;
                }
                None => self.end(),
            }
        }
        Ok(None)
    }

    /// Apply one tape event the caller holds (`kestrel grade` feeds perturbed copies of a
    /// tape's events), whose next event is at `next` (`None`: the last), asking the author
    /// at the wakes it fires (the plans step once per instant: [`Run::feed`]).
    pub fn feed(&mut self, ev: &TapeEvent, next: Option<Ts>) {
        let fired = self.run.feed(ev, next);
        self.on_event(ev, fired);
    }

    /// The turns routed so far (the author's and, at the desk, the person's), in order.
    pub fn turn_log(&self) -> &[TurnEntry] {
        self.run.turn_log()
    }

    /// The outcome counts of the author's turns so far.
    pub fn counts(&self) -> &super::Counts {
        &self.run.counts
    }

    /// The seated script's replies for a named wake that no ask took ([`super::Script`]):
    /// for a note once the tape is played (`None`: no script seated, or all used).
    pub fn unused_replies(&self) -> Option<super::Unused> {
        match &self.chair.as_ref()?.seat {
            Seat::Script(src) => src.unused(),
            Seat::Remote => None,
        }
    }

    /// The engine's warnings at arming since the last call ([`crate::engine::arming`]): not
    /// on the Bus.
    pub fn take_arm_warnings(&mut self) -> Vec<crate::engine::ArmWarning> {
        let mut w = std::mem::take(&mut self.arm_warnings);
        w.extend(self.run.engine.take_arm_warnings());
        w
    }

    /// Close the run (settle at the close, `session-end`) and give back its Bus.
    pub fn finish(mut self) -> bus::Bus {
        self.end();
        self.take_bus()
    }

    /// End the run cut short by `why` (a signal): an `error` event and `session-end` where
    /// it stopped, and the Bus back.
    pub fn interrupt(mut self, why: &str) -> bus::Bus {
        self.ended = true;
        self.run.engine.cut(why);
        self.take_bus()
    }

    fn take_bus(&mut self) -> bus::Bus {
        std::mem::replace(self.run.engine.bus_mut(), bus::Bus::new(None))
    }

    /// The shell of a session around `run`, at the open, paused, nobody seated.
    fn around(
        tape: TapeSource,
        header: TapeHeader,
        settings: Settings,
        run: Run<Reader>,
        save: Option<PathBuf>,
        script: Vec<(u64, Ts, Act)>,
        replay: bool,
    ) -> Result<Session, String> {
        let (signal, exec) = view::symbols_of(&header).ok_or("the tape has no symbols")?;
        let open = run.engine.market().open_time();
        Ok(Session {
            tape,
            header,
            run,
            signal,
            exec,
            clock: open,
            last_event: open,
            seq: 0,
            playing: false,
            speed: Speed::X60,
            ended: false,
            view: view::default_view(),
            candles: if exec == signal {
                vec![Candles::new(signal.as_str())]
            } else {
                vec![Candles::new(signal.as_str()), Candles::new(exec.as_str())]
            },
            script: script.into(),
            history: Vec::new(),
            chair: None,
            desk_turns: Vec::new(),
            lines: Arc::default(),
            lines_seen: 0,
            notices: Vec::new(),
            notices_seen: 0,
            last_submit: None,
            last_undo: None,
            long_tail: LONG_TAIL_SNAPSHOTS,
            landmarks: Arc::default(),
            landmarks_seen: 0,
            horizon: open,
            record: Recorder {
                path: save,
                file: None,
                held: Vec::new(),
                lazy: replay,
                create: saved::create_exclusive,
                failed: None,
            },
            left: false,
            draft: String::new(),
            draft_opened: None,
            bus_written: 0,
            bus_file: None,
            standing: Arc::default(),
            standing_at: None,
            replaying: false,
            replayed: None,
            error: None,
            segment: 0,
            frame: None,
            frame_key: None,
            chart_cache: None,
            rate: (0, Duration::ZERO),
            events_per_sec: 0.0,
            changed: true,
            headless: false,
            risk_seen: 0,
            stop_for_proposal: false,
            paused_for: None,
            unasked_said: false,
            arm_warnings: Vec::new(),
            settings,
        })
    }

    fn seat_agent(&mut self, replay: bool) -> Result<Option<Chair>, String> {
        let Some(agent) = self.settings.agent.clone() else {
            return Ok(None);
        };
        let seat = agent.seat()?;
        self.run.share_book(AGENT);
        let worker = match (&agent, replay) {
            (Agent::Live(spec), false) => Some(LiveWorker::for_spec(spec)?),
            _ => None,
        };
        Ok(Some(Chair::seated(
            agent,
            seat,
            worker,
            self.settings.copilot,
            replay,
        )))
    }

    /// The tape header.
    pub fn header(&self) -> &TapeHeader {
        &self.header
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
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

    /// The determinism hash so far.
    pub fn hash(&self) -> String {
        self.run.engine.bus().hash_hex()
    }

    /// The Bus so far.
    pub fn bus(&self) -> &bus::Bus {
        self.run.engine.bus()
    }

    fn now(&self) -> Ts {
        self.clock
    }

    fn notice(&mut self, text: String) {
        self.notice_at(NoticeLevel::Info, text);
    }

    /// A warning the desk gives as the session opens (the footer's first message): what the
    /// options asked for and the desk did not do, and why.
    pub fn warn(&mut self, text: String) {
        self.notice_at(NoticeLevel::Warn, text);
    }

    fn notice_at(&mut self, level: NoticeLevel, text: String) {
        let ts = self.now();
        self.notices.push(Notice { ts, text, level });
    }

    /// A notice for every veto and size clamp on the Bus since the last look.
    fn risk_notices(&mut self) {
        let bus = self.run.engine.bus();
        let evs = bus.events();
        // The orders the engine's own stop placed (clause `STOP`: the assumed share stop,
        // docs/runtime.md "Risk"): their fills close a position on a stop nobody wrote.
        let stop_order = |id: u64| {
            bus.blotter()
                .orders
                .iter()
                .any(|o| o.id == Some(id) && o.clause == "STOP")
        };
        let new: Vec<Notice> = evs[self.risk_seen.min(evs.len())..]
            .iter()
            .filter_map(|e| match e {
                bus::Event::Veto {
                    ts,
                    plan,
                    clause,
                    budget,
                    reason,
                    ..
                } => Some(Notice {
                    ts: *ts,
                    text: format!("VETO {plan} {clause} ({budget} budget): {reason}"),
                    level: NoticeLevel::Error,
                }),
                bus::Event::Clamp {
                    ts,
                    plan,
                    clause,
                    from_qty,
                    to_qty,
                    budget,
                    reason,
                    ..
                } => Some(Notice {
                    ts: *ts,
                    text: format!(
                        "{plan} {clause}: qty {from_qty}→{to_qty} by the {budget} budget ({reason})"
                    ),
                    level: NoticeLevel::Warn,
                }),
                bus::Event::Fill {
                    ts,
                    order,
                    plan,
                    leg,
                    side,
                    qty,
                    px,
                    ..
                } if stop_order(*order) => Some(Notice {
                    ts: *ts,
                    text: format!(
                        "{plan} STOP: {} {qty} {leg} @ {px}, the engine's assumed {}% stop \
                         (none was written)",
                        if *side == bus::BusSide::Sell {
                            "sold"
                        } else {
                            "bought"
                        },
                        crate::engine::DEFAULT_SHARE_STOP * 100.0
                    ),
                    level: NoticeLevel::Warn,
                }),
                _ => None,
            })
            .collect();
        self.risk_seen = evs.len();
        self.notices.extend(new);
    }

    /// Is a proposal waiting that holds the tape (co-pilot with the pause on)?
    fn proposal_holds(&self) -> bool {
        self.settings.copilot_pause
            && self
                .chair
                .as_ref()
                .is_some_and(|c| c.hold && c.proposal.is_some())
    }

    /// Pause for the waiting proposal, if it holds the tape (remembering to play on once it
    /// is answered).
    fn pause_for_proposal(&mut self) {
        if self.playing && self.proposal_holds() {
            self.paused_for = self
                .chair
                .as_ref()
                .and_then(|c| c.proposal.as_ref())
                .map(|p| p.call);
            self.set_playing(false);
        }
    }

    /// The proposal the tape was paused for was answered: play on.
    fn resume_after_proposal(&mut self, call: u64) {
        if self.paused_for == Some(call) {
            self.paused_for = None;
            if !self.ended {
                self.set_playing(true);
            }
        }
    }

    fn write_record(&mut self, mut v: serde_json::Value, acted: bool) {
        if let Some(o) = v.as_object_mut() {
            o.entry("seq").or_insert(self.seq.into());
            o.entry("ts").or_insert(self.clock.to_string().into());
        }
        if let Err(e) = self.record.write(v.to_string(), acted) {
            self.save_failed(e);
        }
    }

    /// A write of the session file or its Bus file failed (a full disk, a removed
    /// directory): the error is kept, nothing more is written, and the footer says so at once
    /// in the error colour; the quit says the session was not saved (exit 1). Before
    /// 2026-12-06 the error was dropped: the desk went on as if saving and the quit said
    /// `session saved` over a Bus cut mid-line and a file without its `left` record.
    fn save_failed(&mut self, what: String) {
        if self.record.failed.is_some() {
            return;
        }
        let line = format!(
            "error code=IO message={what}: the session is not saved from here on (nothing more is written)"
        );
        self.record.failed = Some(line.clone());
        self.notice_at(NoticeLevel::Error, line);
        self.changed = true;
    }

    /// The coded line of the first write of the session's files that failed: the session
    /// is not saved whole ([`Session::save_failed`]).
    pub fn save_error(&self) -> Option<&str> {
        self.record.failed.as_deref()
    }

    fn control(&mut self, what: &str) {
        self.write_record(
            serde_json::json!({"type": "control", "action": what}),
            false,
        );
    }

    /// Write Bus events not yet written to this run's Bus file (once the session file is).
    fn flush_bus(&mut self) {
        let Some(path) = self.record.path.clone() else {
            return;
        };
        if self.record.file.is_none() || self.record.failed.is_some() {
            return;
        }
        let at = saved::bus_path(&path, self.segment);
        if self.bus_file.is_none() {
            match (self.record.create)(&at) {
                Ok(f) => self.bus_file = Some(f),
                Err(e) => {
                    self.save_failed(format!("Bus file {}: {e}", at.display()));
                    return;
                }
            }
        }
        let evs = self.run.engine.bus().events();
        let mut failed = None;
        if let Some(f) = self.bus_file.as_mut() {
            let mut buf = Vec::new();
            for ev in &evs[self.bus_written.min(evs.len())..] {
                buf.extend_from_slice(&bus::canonical_line(ev));
            }
            if let Err(e) = f.write_all(&buf).and_then(|_| f.flush()) {
                failed = Some(format!("Bus file {}: {e}", at.display()));
            }
        }
        self.bus_written = evs.len();
        if let Some(e) = failed {
            self.bus_file = None;
            self.save_failed(e);
        }
    }

    /// Apply one command.
    pub fn command(&mut self, c: Command) {
        // A draft is kept for the `left` record only: nothing on the screen moves.
        if !matches!(c, Command::Draft(_)) {
            self.changed = true;
            self.poll();
        }
        match c {
            Command::Draft(text) => self.draft = text,
            Command::Play => self.set_playing(true),
            Command::Pause => self.set_playing(false),
            Command::TogglePlay => self.set_playing(!self.playing),
            Command::Speed(s) => {
                self.speed = s;
                self.control(&format!("speed {}", s.label()));
            }
            Command::Faster | Command::Slower => {
                let s = if matches!(c, Command::Faster) {
                    self.speed.faster()
                } else {
                    self.speed.slower()
                };
                self.speed = s;
                self.control(&format!("speed {}", s.label()));
            }
            Command::StepTick => {
                self.playing = false;
                if let Some(t) = self.peek_ts() {
                    // The step over a `session` line is to the next session's open.
                    let t = if self.run.next_is_session() {
                        Ts(u32::MAX)
                    } else {
                        t
                    };
                    self.advance_to(t);
                }
            }
            Command::StepBar => {
                self.playing = false;
                let bar = BAR_SECS * 1000;
                let next = Ts((self.clock.0 / bar + 1) * bar);
                self.advance_to(next);
            }
            Command::Seek(t) => self.seek(t),
            Command::Restart => {
                let hold = self.chair.as_ref().is_some_and(|c| c.hold);
                self.write_record(
                    serde_json::json!({"type": "control", "action": "restart", "hold": hold}),
                    true,
                );
                self.script.clear();
                self.restart_with(false);
                let open = self.clock;
                self.advance_to(open);
            }
            Command::Submit { .. }
            | Command::Accept { .. }
            | Command::Reject { .. }
            | Command::Copilot(_)
            | Command::Attach(_)
                if self.ended =>
            {
                // The close has settled the book: nothing acts after it. (Home is the open
                // from the chart; in a focused list it is the list's top.)
                self.notice(
                    "the tape has ended: nothing acts after the close (R restarts; from the \
                     chart, Home goes back to the open)"
                        .into(),
                );
                if let Command::Submit { id, .. } = c {
                    self.last_submit = Some(SubmitResult {
                        id,
                        outcome: "refused".into(),
                        authored: false,
                        view_request: false,
                    });
                }
            }
            Command::Submit {
                id,
                author,
                kind,
                text,
            } => {
                self.person_act(Act::Turn { author, kind, text });
                let routed = self.run.turn_log().last().and_then(|e| e.turn.clone());
                if routed
                    .as_ref()
                    .is_some_and(|t| matches!(t.outcome, Outcome::StandDown { .. }))
                {
                    self.hold_after_stand_down();
                }
                self.last_submit = Some(SubmitResult {
                    id,
                    outcome: routed
                        .as_ref()
                        .map_or("refused", |t| t.outcome.name())
                        .to_string(),
                    authored: routed
                        .as_ref()
                        .is_some_and(|t| t.class() == turn::TurnClass::Authored),
                    view_request: routed
                        .as_ref()
                        .is_some_and(|t| matches!(t.outcome, Outcome::ViewRequest { .. })),
                });
            }
            Command::Accept { call } => self.accept(Some(call)),
            Command::Reject { call } => {
                if let Some(p) = self
                    .chair
                    .as_ref()
                    .and_then(|c| c.proposal.clone())
                    .filter(|p| p.call == call)
                {
                    let outcome = p.run.turn.outcome.name().to_string();
                    self.person_act(Act::Agent(AgentAct::Reject {
                        call: p.call,
                        outcome,
                    }));
                }
            }
            Command::Copilot(on) => {
                if self.chair.is_some() {
                    self.person_act(Act::Agent(AgentAct::Hold { on }));
                    if !on {
                        self.accept(None);
                    }
                }
            }
            Command::Attach(on) => {
                if self.chair.as_ref().is_some_and(|c| c.attached != on) {
                    self.person_act(Act::Agent(AgentAct::Attach { on }));
                }
            }
            Command::Tick(dt) => self.run_for(dt),
            Command::Undo { id } => self.undo(id),
        }
        self.flush_bus();
    }

    /// After the person's STAND-DOWN, an agent in autopilot is held in co-pilot: its later
    /// turns wait for the person's accept or reject, so the kill switch holds past its next
    /// wake (docs/desk.md, "Stand-down"). The hold is an act of its own in the session file,
    /// so a rewind or a reopened session replays it as it happened.
    fn hold_after_stand_down(&mut self) {
        let Some(chair) = self.chair.as_ref() else {
            return;
        };
        if chair.hold || !chair.attached {
            return;
        }
        let name = chair.agent.short_name();
        self.act(Act::Agent(AgentAct::Hold { on: true }));
        self.notice(format!("{name} now in co-pilot: a / x decide its turns"));
    }

    /// Accept the waiting proposal (the one to `call`, when given).
    fn accept(&mut self, call: Option<u64>) {
        if let Some(p) = self
            .chair
            .as_ref()
            .and_then(|c| c.proposal.clone())
            .filter(|p| call.is_none_or(|c| c == p.call))
        {
            self.person_act(Act::Agent(AgentAct::Answer {
                call: p.call,
                run: p.run,
            }));
        }
    }

    /// Take in what a live author sent: streamed text and answers.
    pub fn poll(&mut self) {
        let Some(chair) = self.chair.as_mut() else {
            return;
        };
        let Some(w) = chair.worker.as_mut() else {
            return;
        };
        let mut changed = false;
        while let Ok(d) = w.deltas.try_recv() {
            if d == crate::author::NEW_ATTEMPT {
                chair.thinking.clear();
            } else if let Some(why) = crate::author::re_ask_why(&d) {
                // A reply came back and was refused: the status line says so while the
                // author writes again (until 2026-12-06 nothing did until the loop ended),
                // and the Journal says why.
                chair.re_asked += 1;
                if chair.refused.len() < REFUSED_SHOWN {
                    chair
                        .refused
                        .push(why.chars().take(REFUSED_CHARS).collect());
                }
            } else {
                chair.thinking.push_str(&d);
            }
            changed = true;
        }
        if chair.thinking.len() > 2000 {
            let cut = chair.thinking.len() - 2000;
            let cut = (cut..chair.thinking.len())
                .find(|i| chair.thinking.is_char_boundary(*i))
                .unwrap_or(0);
            chair.thinking.drain(..cut);
        }
        let msgs: Vec<WorkerMsg> = w.answers.try_iter().collect();
        self.changed |= changed || !msgs.is_empty();
        let acted = !msgs.is_empty();
        for m in msgs {
            self.worker_msg(m);
        }
        if acted {
            self.flush_bus();
        }
    }

    fn worker_msg(&mut self, m: WorkerMsg) {
        match m {
            WorkerMsg::Answered {
                segment,
                call,
                wake,
                run,
                wall,
            } => {
                let Some(chair) = self.chair.as_mut() else {
                    return;
                };
                if segment != self.segment {
                    self.control("stale agent reply dropped: its run was restarted");
                    return;
                }
                let run = *run;
                chair.waiting = None;
                chair.last_answer = Some(LastAnswer {
                    wall,
                    tokens: run.tokens_spent,
                    re_asks: run.re_asks,
                    estimated: run.tokens_estimated(),
                    spend: run.spend(),
                    view_tokens: self.run.view_tokens(),
                });
                chair.failing = match &run.turn.outcome {
                    Outcome::ProviderError { message } => {
                        let kind = crate::author::ProviderError::parts(message)
                            .0
                            .unwrap_or("provider")
                            .to_string();
                        let n = chair.failing.as_ref().map_or(0, |f| f.1);
                        Some((kind, n + 1))
                    }
                    _ => None,
                };
                if chair.outstanding.as_ref().map(|o| o.call) != Some(call) {
                    return;
                }
                // The record answers it (asked before a rewind re-ran to it): the recorded
                // answer acts at its point, not this one where it arrived.
                if records_answer(&self.script, call) {
                    return;
                }
                if chair.hold && needs_decision(&run) {
                    // An act of its own in the session file: reopened, it waits again.
                    let asked_at = self.run.awaiting().map_or(self.clock, |a| a.1);
                    self.act(Act::Agent(AgentAct::Propose {
                        call,
                        wake,
                        asked_at,
                        run,
                    }));
                } else {
                    chair.thinking.clear();
                    self.act(Act::Agent(AgentAct::Answer { call, run }));
                }
            }
            WorkerMsg::Failed(e) => {
                self.act(Act::Agent(AgentAct::Attach { on: false }));
                self.notice(format!("agent stopped: {e} (A attaches again)"));
            }
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
        match self.run.peek_ts() {
            Ok(t) => t,
            Err(e) => {
                self.error = Some(e.to_string());
                None
            }
        }
    }

    fn seek(&mut self, t: Ts) {
        if t < self.clock {
            self.rerun_to(t);
            self.control("rewound");
        } else {
            self.advance_to(t);
            self.control(&format!("seek {t}"));
        }
    }

    /// Re-run from the open to `t` with every act taken (and every recorded act still to
    /// come): the rerun starts as the run did, and the agent is asked nothing it answered.
    fn rerun_to(&mut self, t: Ts) {
        let mut keep: VecDeque<(u64, Ts, Act)> = self.history.drain(..).collect();
        keep.extend(self.script.drain(..));
        let playing = self.playing;
        let session = self.run.engine.session_no();
        self.restart_with(true);
        self.script = keep;
        self.replaying = true;
        self.apply_script();
        // On a multi-session tape `t` is a time of the current session: play through
        // the sessions before it first (each stops at the next one's open).
        while self.run.engine.session_no() < session && !self.ended && self.error.is_none() {
            let seq = self.seq;
            self.advance_to(Ts(u32::MAX));
            if self.seq == seq {
                break;
            }
        }
        self.advance_to(t);
        self.replaying = false;
        // The re-run's notices were said the first time.
        self.notices_seen = self.run.notices().len();
        self.risk_seen = self.run.engine.bus().events().len();
        self.set_quiet(false);
        self.playing = playing && !self.ended;
    }

    /// Take back the person's last turn ([`Command::Undo`]). The turn leaves the acts (with
    /// the co-pilot hold a STAND-DOWN put on the agent: [`undo_span`]) and an `undo` record
    /// names it in the session file, so a reopened session does the same. Then:
    ///
    /// - when no answer of the agent's was recorded after it, the session re-runs from the
    ///   open to where it stood: the book of a session that never had the turn;
    /// - when one was, the agent answered a session that had the turn, and its recorded
    ///   answers are matched to its calls by number, which the turn may have moved: the
    ///   session goes back to the turn's point instead, and the acts after it are dropped
    ///   (as a new act after a rewind drops the recorded future). The agent is asked again
    ///   as the tape plays on.
    ///
    /// Only the person's own turns are undone: an agent's turn is the agent's act.
    fn undo(&mut self, id: u64) {
        if self.headless {
            self.notice("a headless run plays once: nothing to undo".into());
            return;
        }
        // Their accept or reject of a proposal, when it is their last act: the proposal
        // comes back to be decided again (before 2026-12-06 a mistaken `x` was final, and
        // `u` said there was no turn of theirs).
        if let Some((k, call, words)) = self.last_decision() {
            self.undo_decision(id, k, call, words);
            return;
        }
        // After a seek back to before every turn of the person's, their turns are ahead of
        // the tape, recorded to act again when the tape reaches them: still theirs to take
        // back, the one the tape reaches first.
        if self.turn_ahead().is_some() {
            self.undo_ahead(id);
            return;
        }
        let Some(k) = self
            .history
            .iter()
            .rposition(|(_, _, a)| a.is_persons_turn())
        else {
            self.last_undo = Some(Undone {
                id,
                turn: None,
                summary: String::new(),
                rewound: false,
            });
            self.notice(
                "nothing to undo: no turn of yours in this run (the plans armed at the open \
                 stay: CANCEL one, or STAND-DOWN)"
                    .into(),
            );
            return;
        };
        let answered_after = self.history[k + 1..]
            .iter()
            .chain(self.script.iter())
            .any(|(_, _, a)| a.is_agents_answer());
        let (seq, ts) = (self.history[k].0, self.history[k].1);
        let text = match &self.history[k].2 {
            Act::Turn { text, .. } => text.clone(),
            Act::Agent(_) => String::new(),
        };
        self.history
            .drain(undo_span(&self.history, k, answered_after));
        if answered_after {
            self.script.clear();
        }
        self.write_record(undo_record(seq, ts, answered_after), true);
        let now = self.clock;
        // A proposal the tape was paused for is asked again by the re-run: the pause holds.
        let paused_for = self.paused_for;
        let title = turn_title(&text);
        let summary = format!("your {} turn ({title})", ts.hhmm());
        if answered_after {
            self.rerun_to(ts);
            self.playing = false;
            // The outcome first: a narrow footer keeps the start of a notice.
            self.notice(format!(
                "undone, and back at {}: the agent answered after your turn there, so the acts \
                 after it are dropped ({title})",
                ts.hhmm()
            ));
        } else {
            self.rerun_to(now);
            if paused_for.is_some()
                && self
                    .chair
                    .as_ref()
                    .and_then(|c| c.proposal.as_ref())
                    .map(|p| p.call)
                    == paused_for
            {
                self.paused_for = paused_for;
            }
            self.notice(format!(
                "undone: {summary}; re-ran to {} without it",
                now.hhmm()
            ));
        }
        self.last_undo = Some(Undone {
            id,
            turn: Some((ts, text)),
            summary,
            rewound: answered_after,
        });
    }

    /// The person's last decision on a proposal, when it comes after every turn of theirs
    /// behind the tape: (its index in the history, the call, the decision in words).
    fn last_decision(&self) -> Option<(usize, u64, String)> {
        let chair = self.chair.as_ref()?;
        let script = matches!(chair.seat, Seat::Script(_));
        let (k, call) = (0..self.history.len())
            .rev()
            .find_map(|k| decision_call(&self.history, k, script).map(|c| (k, c)))?;
        if self.history[k + 1..]
            .iter()
            .any(|(_, _, a)| a.is_persons_turn())
        {
            return None;
        }
        let name = chair.agent.short_name();
        let decided = self.history[k].1;
        let what = match &self.history[k].2 {
            Act::Agent(AgentAct::Reject { outcome, .. }) => format!("reject of {name}'s {outcome}"),
            Act::Agent(AgentAct::Answer { run, .. }) => {
                format!("accept of {name}'s {}", run.turn.outcome.label())
            }
            _ => return None,
        };
        // The wake it answered, from the Bus's turn lines (a script's proposal is not an act).
        let at = self
            .run
            .turn_log()
            .iter()
            .rev()
            .find(|e| {
                e.ts <= decided && (e.rejected.is_some() || e.turn.is_some()) && e.wake != DESK_WAKE
            })
            .map_or(String::new(), |e| format!(" @ wake {}", e.wake));
        Some((k, call, format!("{what}{at} (decided {})", decided.hhmm())))
    }

    /// Take back the person's accept or reject of the proposal answering `call` (history
    /// index `k`): the session goes back to where it was decided, the proposal waits there
    /// again, and the acts after the decision are dropped (they were taken on a book that had
    /// it). The `undo` record names the call, so a reopened session takes out the same acts.
    fn undo_decision(&mut self, id: u64, k: usize, call: u64, words: String) {
        let (seq, ts) = (self.history[k].0, self.history[k].1);
        let span = decision_span(&self.history, k);
        self.history.drain(span);
        self.script.clear();
        let mut record = undo_record(seq, ts, true);
        record["call"] = serde_json::json!(call);
        self.write_record(record, true);
        self.rerun_to(ts);
        self.playing = false;
        let summary = format!("your {words}");
        // What the person does next first: a narrow footer keeps the start of a notice.
        self.notice(format!(
            "undone, and back at {}: the proposal waits for you again ({summary} is taken \
             back, with the acts after it)",
            ts.hhmm()
        ));
        self.last_undo = Some(Undone {
            id,
            turn: None,
            summary,
            rewound: true,
        });
    }

    /// Take back the person's turn ahead of the tape when none of theirs is behind it
    /// ([`Session::turn_ahead`]): recorded, after a seek back, to act again when the tape
    /// reaches it; of several, the one it reaches first. It leaves the recorded future (with the
    /// co-pilot hold a STAND-DOWN put on the agent: [`undo_span`]), so it does not act when
    /// the tape gets there; the book as it stands never had it, so nothing runs again. When
    /// the agent answered after it, those answers were given to a session that had the turn
    /// (and are matched to calls by number, which it may have moved): they leave with it, as
    /// an undo that goes back to the turn drops them, and the agent is asked again as the
    /// tape plays on. The `undo` record is the one a turn behind the tape gets, so a reopened
    /// session takes out the same acts.
    fn undo_ahead(&mut self, id: u64) {
        let acts = self.script.make_contiguous();
        let Some(k) = acts.iter().position(|(_, _, a)| a.is_persons_turn()) else {
            return;
        };
        let answered_after = acts[k + 1..].iter().any(|(_, _, a)| a.is_agents_answer());
        let (seq, ts) = (acts[k].0, acts[k].1);
        let text = match &acts[k].2 {
            Act::Turn { text, .. } => text.clone(),
            Act::Agent(_) => String::new(),
        };
        let span = undo_span(acts, k, answered_after);
        self.script.drain(span);
        self.write_record(undo_record(seq, ts, answered_after), true);
        let title = turn_title(&text);
        let summary = format!(
            "your {} turn ({title}), ahead of the tape: it will not act at {}",
            ts.hhmm(),
            ts.hhmm()
        );
        let dropped = if answered_after {
            "; the agent's answers recorded after it go with it (it is asked again)"
        } else {
            ""
        };
        self.notice(format!("undone: {summary}{dropped}"));
        if answered_after {
            self.ask_unanswered();
        }
        self.last_undo = Some(Undone {
            id,
            turn: Some((ts, text)),
            summary,
            rewound: false,
        });
    }

    /// The turn `u` takes back when none of the person's is behind the tape (this run has
    /// none): the first of theirs ahead of it, recorded (after a seek back) to act again
    /// when the tape reaches it, as (tape time, the turn in a few words). A turn behind the
    /// tape comes first: the one nearest the tape point is taken back, either way.
    fn turn_ahead(&self) -> Option<(Ts, String)> {
        if self.history.iter().any(|(_, _, a)| a.is_persons_turn()) {
            return None;
        }
        self.turns_ahead().into_iter().next()
    }

    /// The person's turns recorded ahead of the tape (the recorded future a new act of
    /// theirs drops), in tape order, as (tape time, the turn in a few words).
    fn turns_ahead(&self) -> Vec<(Ts, String)> {
        self.script
            .iter()
            .filter_map(|(_, ts, a)| match a {
                Act::Turn { text, .. } if a.is_persons_turn() => Some((*ts, turn_title(text))),
                _ => None,
            })
            .collect()
    }

    /// Write where the session stands (the point `--open` resumes at).
    /// With the person's Editor draft, if any: a draft that differs from the one the file
    /// gave back at `--open` is written even when nothing else was (`acted`), so a reopened
    /// session's edited draft is not lost.
    fn bookmark(&mut self) {
        let mut v = serde_json::json!({"type": "control", "action": "left"});
        if !self.draft.trim().is_empty() {
            v["draft"] = self.draft.clone().into();
        }
        let changed = self.draft_changed();
        self.write_record(v, changed);
    }

    /// The draft differs from the one `--open` gave back (none counts as empty).
    fn draft_changed(&self) -> bool {
        self.draft.trim() != self.draft_opened.as_deref().unwrap_or("").trim()
    }

    fn set_quiet(&mut self, quiet: bool) {
        let Some(c) = self.chair.as_mut() else {
            return;
        };
        c.quiet = quiet;
        if !quiet {
            self.ask_unanswered();
        }
    }

    /// Ask the live author the call that is out and was not asked (a rewind re-ran to it
    /// quietly, or the record answered it and the person's new act dropped that record), if
    /// nothing still to replay answers it. A reopened session's author is not called: the
    /// call is rejected by `nobody`, so later wakes are asked (and not suppressed behind a
    /// call no one will answer).
    fn ask_unanswered(&mut self) {
        let segment = self.segment;
        let Some(c) = self.chair.as_mut() else {
            return;
        };
        let Some(o) = c.outstanding.as_mut() else {
            return;
        };
        if o.asked
            || c.quiet
            || c.proposal.is_some()
            || c.waiting.is_some()
            || !matches!(c.seat, Seat::Remote)
            || records_answer(&self.script, o.call)
        {
            return;
        }
        let Some((ask, ctx)) = o.ask.clone() else {
            return;
        };
        match &c.worker {
            Some(w) if !c.replay_only => {
                o.asked = true;
                c.thinking.clear();
                c.waiting = Some((ask.wake.clone(), ask.ts));
                w.ask(segment, o.call, ask, ctx);
            }
            _ => {
                c.outstanding = None;
                let now = self.clock;
                self.run.reject(now, "nobody", "unanswered", "unanswered");
                self.not_called(&ask.wake, ask.ts);
            }
        }
    }

    /// A wake of a live author's went to `nobody` (a reopened session: its author is not
    /// called, and the record does not answer this wake). The first time, a warning says
    /// so: before 2026-12-06 only the Journal did, one row a wake.
    fn not_called(&mut self, wake: &str, at: Ts) {
        if self.replaying || self.unasked_said {
            return;
        }
        let Some(c) = self.chair.as_ref() else {
            return;
        };
        if !c.agent.is_live() {
            return;
        }
        self.unasked_said = true;
        let name = c.agent.short_name();
        self.notice_at(
            NoticeLevel::Warn,
            format!(
                "the agent is replayed from the record, not called: {name} was not asked at \
                 wake {wake} {} (a reopened session's live author is never called; the wakes \
                 its record does not answer go unasked)",
                at.hhmm()
            ),
        );
    }

    /// Start a new run; `quiet`: the agent sends no call until told (a rewind re-running
    /// recorded acts).
    fn restart_with(&mut self, quiet: bool) {
        if self.headless {
            self.error = Some("a headless run plays once: it does not restart or rewind".into());
            return;
        }
        self.segment += 1;
        let reader = match self.tape.reader() {
            Ok(r) => r,
            Err(e) => {
                self.error = Some(e);
                return;
            }
        };
        // A rewind starts as the run did; a restart starts as the person left it.
        if !quiet && let Some(c) = &self.chair {
            self.settings.copilot = c.hold;
        }
        self.run = match new_run(reader, &self.settings) {
            Ok(r) => r,
            Err(e) => {
                self.error = Some(e);
                return;
            }
        };
        let replay = self.chair.as_ref().is_some_and(|c| c.replay_only);
        let attached = self.chair.as_ref().is_none_or(|c| c.attached);
        let worker = self.chair.as_mut().and_then(|c| c.worker.take());
        // The call out (and any queued) answers the run just left: abandoned, not waited for.
        if let Some(w) = &worker {
            w.abandon_before(self.segment);
        }
        // What the status line says of the provider's last real answer (shown, never on the
        // Bus) outlives a re-run: an undo or a rewind asked nobody (it read `(proposing)`
        // with the figures gone after an undo).
        let last = self
            .chair
            .as_ref()
            .map(|c| (c.last_answer, c.failing.clone()));
        self.chair = match self.seat_agent(true) {
            Ok(c) => c,
            Err(e) => {
                self.error = Some(e);
                None
            }
        };
        if let Some(c) = self.chair.as_mut() {
            if let Some((answer, failing)) = last {
                c.last_answer = answer;
                c.failing = failing;
            }
            c.worker = worker;
            c.replay_only = replay;
            c.quiet = quiet;
            // A restart keeps the seat as the person left it; a rewind re-runs the acts that
            // set it (it starts as the run did).
            if !quiet {
                c.attached = attached;
                if attached
                    && !replay
                    && c.worker.is_none()
                    && let Agent::Live(spec) = &c.agent
                {
                    c.worker = LiveWorker::for_spec(spec).ok();
                }
            }
        }
        if !quiet {
            self.notices_seen = 0;
        }
        let open = self.run.engine.market().open_time();
        self.clock = open;
        self.last_event = open;
        self.seq = 0;
        self.playing = false;
        self.ended = false;
        self.candles.iter_mut().for_each(Candles::clear);
        self.history.clear();
        self.desk_turns.clear();
        self.lines = Arc::default();
        self.lines_seen = 0;
        self.long_tail = LONG_TAIL_SNAPSHOTS;
        self.landmarks = Arc::default();
        self.landmarks_seen = 0;
        self.error = None;
        self.frame_key = None;
        self.chart_cache = None;
        self.bus_written = 0;
        self.bus_file = None;
        self.risk_seen = 0;
        self.paused_for = None;
        self.view = view::default_view();
        // The caller sets the acts to replay, then advances: acts recorded at the open apply
        // before its first event, as they did the first time.
        self.horizon = open;
    }

    /// Apply the recorded acts due at this point of the tape: recorded at the tape events
    /// applied so far, and at a time not past the clock's target.
    fn apply_script(&mut self) {
        while let Some((seq, ts, _)) = self.script.front() {
            if *seq > self.seq || *ts > self.horizon {
                break;
            }
            if let Some((_, ts, act)) = self.script.pop_front() {
                // Where it applies: the events applied, the span of tape time between the
                // last of them and the next (none across a session line or at the end).
                let at = if self.replayed.is_some() {
                    let next = self.run.peek_ts().ok().flatten();
                    let next = next.filter(|_| !self.run.next_is_session());
                    Some((self.seq, self.last_event, next))
                } else {
                    None
                };
                let result = self.apply_act(act, ts, false);
                if let (Some(r), Some((seq, after, before))) = (self.replayed.as_mut(), at) {
                    r.push(Replayed {
                        seq,
                        after,
                        before,
                        result,
                    });
                }
            }
        }
    }

    /// An act of a live author's, now (it never drops recorded acts: see
    /// [`Session::person_act`]).
    fn act(&mut self, act: Act) {
        let ts = self.clock;
        self.apply_act(act, ts, true);
    }

    /// An act of the person's, now. After a rewind (or in a reopened session), the acts
    /// recorded later than now are the future of another branch: the person's new act
    /// drops them (a `branch` record says so in the session file). The notice is a warning
    /// that names the person's turns it drops (the desk asked first: `App::person`), so it
    /// is not covered by the act's own routine notice.
    fn person_act(&mut self, act: Act) {
        let branched = !self.script.is_empty();
        if branched {
            let mine = self.turns_ahead();
            let others = self.script.len() - mine.len();
            self.script.clear();
            self.write_record(
                serde_json::json!({"type": "control", "action": "branch"}),
                true,
            );
            let at = self.clock.hhmm();
            let text = if mine.is_empty() {
                format!("a new act at {at}: the {others} recorded act(s) after it are dropped")
            } else {
                let others = if others > 0 {
                    format!(" (and {others} other recorded act(s))")
                } else {
                    String::new()
                };
                format!(
                    "a new act at {at} dropped {}{others}: it will not act",
                    dropped_turns(&mine)
                )
            };
            self.notice_at(NoticeLevel::Warn, text);
        }
        self.act(act);
        // The call out whose recorded answer went with the dropped future is asked now.
        if branched {
            self.ask_unanswered();
        }
    }

    /// Apply an act at `ts`; `acted`: a new act (not one replayed from a saved session),
    /// which makes an opened session start writing.
    fn apply_act(&mut self, act: Act, ts: Ts, acted: bool) -> String {
        let result = match &act {
            Act::Turn { author, kind, text } => self.desk_turn(author, *kind, text, ts),
            Act::Agent(a) if !acted => {
                // An answer read back from a session file is admitted again, exactly as a
                // live reply is: a hand-edited record the checker refuses arms nothing.
                let a = self.readmit(a);
                self.agent_act(&a, ts)
            }
            Act::Agent(a) => self.agent_act(a, ts),
        };
        // Acts replayed from the record (a rewind, a reopened session) are in the session
        // file already; only new ones are written.
        if acted {
            let rec = act_record(self.seq, ts, &act, &result);
            self.write_record(rec, true);
        }
        self.history.push((self.seq, ts, act));
        self.frame_key = None;
        self.changed = true;
        result
    }

    /// Route a turn written at the desk against the standing book and carry it out.
    fn desk_turn(&mut self, author: &str, kind: AuthorKind, text: &str, ts: Ts) -> String {
        let mut ctx = match kind {
            // A person at the desk may always look: SHOW VIEW is on their menu.
            AuthorKind::Human => TurnContext::new(WakePhase::Open, Profile::ViewshopV2, kind),
            _ => TurnContext::new(WakePhase::Open, self.settings.profile, kind),
        };
        ctx.standing = Some(self.run.standing());
        let reply = Reply::text(text);
        let routed = turn::route(&reply, &ctx);
        let owner = self.chair.as_ref().map(|_| PERSON);
        // The warnings at arming, said after the result (`; late: its ttl 09:45 is already
        // past at 10:00: …`) on the turn's row and the footer. The result the session file
        // records, which a reopen holds the replay to, is without them: a file saved before
        // they were said reopens as it did.
        let mut warned = String::new();
        let result = match &routed.outcome {
            Outcome::Supersede { .. } => match routed.document() {
                Some(doc) => {
                    if let Some(v) = first_view(&doc) {
                        self.view = v;
                    }
                    // A person's plans join the book (same names are replaced): the person
                    // and the agent fly one book (docs/desk.md, "Whose book").
                    let b = self.run.engine.bus().blotter();
                    let doc_names = plan_names(&doc);
                    let standing: Vec<String> = doc_names
                        .iter()
                        .filter(|n| b.plans.contains_key(*n) && b.in_current_session(n))
                        .cloned()
                        .collect();
                    // What arming this document warns of (a ttl already past, a strike far
                    // from spot) is said on its result, not on the Bus.
                    drop(self.run.engine.take_arm_warnings());
                    let names = self.run.add_as(&doc, owner);
                    let warnings = self.run.engine.take_arm_warnings();
                    warned = warned_tail(&warnings);
                    // A headless run says them as it says `--plans`' ([`Session::seat_desk`]).
                    if self.headless {
                        self.arm_warnings.extend(warnings);
                    }
                    armed_result(self.run.engine.bus(), &doc_names, &names, &standing)
                }
                None => "refused: the checked document does not read back".into(),
            },
            // The person's STAND-DOWN is the desk's kill switch: every plan, whoever armed it.
            // What still rides (inventory keeps its TP / EXIT) is named with it.
            Outcome::StandDown { reason } => {
                self.run.stand_down_as(reason, None);
                let date = self.run.engine.market().date().to_string();
                let held = riding(self.run.engine.bus().blotter(), &date);
                // A position whose plan wrote no TP or EXIT rides on nothing of its own: the
                // result (what the session file holds the turn to) keeps its words, and a
                // warning says so (until 2026-12-06 only "rides its TP/EXIT" was said).
                let bare: Vec<&str> = held
                    .iter()
                    .filter(|(plan, _)| !self.run.engine.plan_has_exits(plan))
                    .map(|(_, text)| text.as_str())
                    .collect();
                if !bare.is_empty() && !self.replaying {
                    let (it, has, its) = if bare.len() == 1 {
                        ("it is", "has", "its")
                    } else {
                        ("they are", "have", "their")
                    };
                    let text = format!(
                        "{} {has} no TP or EXIT of {its} own: {it} held to the close unless a stop closes it",
                        bare.join(", ")
                    );
                    self.notice_at(NoticeLevel::Warn, text);
                }
                let riding: Vec<String> = held.into_iter().map(|(_, text)| text).collect();
                match riding.len() {
                    0 => "stood down every plan; flat".into(),
                    1 => format!(
                        "stood down every plan; 1 position rides its TP/EXIT: {}",
                        riding[0]
                    ),
                    n => format!(
                        "stood down every plan; {n} positions ride their TP/EXIT: {}",
                        riding.join(", ")
                    ),
                }
            }
            Outcome::Cancel { target } => {
                if self.run.cancel_as(target, owner) {
                    format!("{target} stood down")
                } else {
                    format!("refused: no live plan {target}")
                }
            }
            Outcome::ViewRequest { .. } => {
                if let Some(v) = routed.document().and_then(|d| {
                    d.statements.into_iter().find_map(|s| match s.kind {
                        ast::StatementKind::ShowView(v) => Some(v),
                        _ => None,
                    })
                }) {
                    self.view = v;
                }
                "shown in the View pane".into()
            }
            Outcome::Invalid { errors } | Outcome::Truncated { errors } => errors
                .first()
                .map(|e| format!("refused: {}", e.one_line()))
                .unwrap_or_else(|| "refused".into()),
            o => o.name().to_string(),
        };
        self.run.record_human(ts, DESK_WAKE, routed.clone(), text);
        let i = self.run.turn_log().len().saturating_sub(1);
        let shown = format!("{result}{warned}");
        self.desk_turns.push((i, author.to_string(), shown.clone()));
        let what = match &routed.outcome {
            Outcome::Invalid { .. } | Outcome::Truncated { .. } => result.clone(),
            Outcome::Cancel { target } if result.starts_with("refused") => {
                format!("CANCEL {target} {result}")
            }
            o => format!("{} → {shown}", o.name()),
        };
        let level = if result.starts_with("refused") {
            NoticeLevel::Error
        } else if !warned.is_empty() || result.contains(CAN_ENTER_AGAIN) {
            // A changed plan whose replaced version still holds (a second position may
            // come), or a warning at arming (a ttl already past, a strike far from spot).
            NoticeLevel::Warn
        } else {
            NoticeLevel::Info
        };
        if !self.replaying {
            self.notice_at(level, format!("{author}: {what}"));
        }
        result
    }

    /// A recorded answer, admitted again under the live book (see `turn::admit::readmit`);
    /// one the checker refuses becomes an invalid turn carrying the `REPLAY` error.
    fn readmit(&self, act: &AgentAct) -> AgentAct {
        let run = match act {
            AgentAct::Answer { run, .. } | AgentAct::Propose { run, .. } => run,
            _ => return act.clone(),
        };
        let t = &run.turn;
        let mut ctx = TurnContext::new(t.phase, t.profile, t.author);
        ctx.standing = Some(self.run.standing());
        match crate::turn::admit::readmit(t, &ctx, 0) {
            Ok(_) => act.clone(),
            Err(e) => {
                let mut run = run.clone();
                run.turn = crate::turn::admit::refused(&ctx, &e);
                let mut act = act.clone();
                if let AgentAct::Answer { run: r, .. } | AgentAct::Propose { run: r, .. } = &mut act
                {
                    *r = run;
                }
                act
            }
        }
    }

    /// The warnings arming left since they were last taken, as a notice's tail
    /// ([`warned_tail`]): an agent's answer says them as a person's submit does.
    fn arm_warned(&mut self) -> String {
        warned_tail(&self.run.engine.take_arm_warnings())
    }

    fn agent_act(&mut self, act: &AgentAct, now: Ts) -> String {
        let Some(chair) = self.chair.as_mut() else {
            return "refused: no agent seated".into();
        };
        let outstanding = chair.outstanding.as_ref().map(|o| o.call);
        match act {
            AgentAct::Answer { call, run } => {
                if outstanding != Some(*call) {
                    return format!("refused: call {call} is not outstanding");
                }
                chair.outstanding = None;
                // A proposal accepted: it routes now, and says how long it waited in tape
                // time (the wake's View is that old).
                let age = chair
                    .proposal
                    .take()
                    .filter(|p| p.call == *call)
                    .map(|p| (p.wake, p.asked_at, Ts(now.0.saturating_sub(p.asked_at.0))));
                chair.thinking.clear();
                // A provider error says what failed (a timeout, a refused connection): the
                // footer said only `provider-error`, the Log's event the rest.
                let outcome = match &run.turn.outcome {
                    crate::turn::Outcome::ProviderError { message } => {
                        let m = crate::lang::diag::visible_line(message);
                        // The author's messages are coded (`provider-error kind=timeout ...`).
                        let m = m.strip_prefix("provider-error ").unwrap_or(&m);
                        format!("provider-error {}", crate::author::excerpt(m, 80))
                    }
                    // A fail-closed pass says why its last reply was refused.
                    o => match run.failure() {
                        Some(f) => format!("{} ({f})", o.label()),
                        None => o.label().to_string(),
                    },
                };
                let level = if run.failure().is_some() {
                    NoticeLevel::Error
                } else {
                    NoticeLevel::Info
                };
                let name = chair.agent.short_name();
                // In co-pilot, an answer that was not proposed (nothing to decide) says so.
                let unproposed = if chair.hold && age.is_none() && !needs_decision(run) {
                    " (not proposed: accepted or rejected, it arms nothing)"
                } else {
                    ""
                };
                // An autopilot answer that arrives a minute or more of tape after its wake
                // (a slow author at speed, or a seek forward while it wrote) acts on a View
                // that old: the notice says so, as a proposal's does. The act's result (what
                // a saved session holds it to) stays as it was.
                let late = age
                    .is_none()
                    .then(|| self.run.awaiting())
                    .flatten()
                    .map(|(wake, at)| (wake.to_string(), at, Ts(now.0.saturating_sub(at.0))))
                    .filter(|(_, _, age)| age.0 >= LATE_ANSWER.0);
                let level = match (&late, level) {
                    (Some(_), NoticeLevel::Info) => NoticeLevel::Warn,
                    (_, level) => level,
                };
                let logged = self.run.turn_log().len();
                // What arming its document warns of (a ttl already past, a strike far from
                // spot) is said on its notice, as on a person's submit (until 2026-12-06 an
                // agent's warnings were dropped at the desk).
                drop(self.run.engine.take_arm_warnings());
                if let Some((ask, ctx)) = self.run.resolve(now, run.clone()) {
                    self.call(ask, ctx);
                }
                let warned = self.arm_warned();
                let level = match level {
                    NoticeLevel::Info if !warned.is_empty() => NoticeLevel::Warn,
                    l => l,
                };
                // A supersede whose plans the engine left out (a name of the person's live
                // plans) says what it armed and why not: it read `supersede` until
                // 2026-12-06, as if it armed.
                let refused = self
                    .run
                    .turn_log()
                    .get(logged..)
                    .and_then(|new| new.iter().rev().find_map(|e| e.refused.as_deref()))
                    .map(for_the_person);
                let level = match &refused {
                    Some(r) if r.starts_with("armed nothing") => NoticeLevel::Error,
                    Some(_) if level == NoticeLevel::Info => NoticeLevel::Warn,
                    _ => level,
                };
                let outcome = match &refused {
                    Some(r) => format!("{outcome} → {r}"),
                    None => outcome,
                };
                let said = match &age {
                    Some((wake, at, age)) => format!(
                        "answered: {outcome} (proposed at wake {wake} {}, accepted {} later)",
                        at.hhmm(),
                        age_text(*age)
                    ),
                    None => format!("answered: {outcome}"),
                };
                if !self.replaying {
                    let late = late.map_or(String::new(), |(wake, at, age)| {
                        format!(
                            " (answer to wake {wake} {}, acted {} later: its View is that old)",
                            at.hhmm(),
                            age_text(age)
                        )
                    });
                    self.notice_at(
                        level,
                        format!(
                            "{name}: {}{warned}{unproposed}{late}",
                            said.trim_start_matches("answered: ")
                        ),
                    );
                }
                self.resume_after_proposal(*call);
                said
            }
            AgentAct::Reject { call, outcome } => {
                if outstanding != Some(*call) {
                    return format!("refused: call {call} is not outstanding");
                }
                chair.outstanding = None;
                // The notice names it as the proposal did (`fail-closed pass`); the Bus keeps
                // the outcome's name.
                let proposal = chair.proposal.take().filter(|p| p.call == *call);
                let shown = proposal
                    .as_ref()
                    .map_or(outcome.as_str(), |p| p.run.turn.outcome.label());
                let name = chair.agent.short_name();
                let text = format!("rejected {name}'s {shown}: it was not routed");
                // Its replies were written (and paid for): their attempts go on the Bus
                // before the `turn-rejected`, and the Tokens pane counts them.
                self.run.reject_run(
                    now,
                    "human",
                    outcome,
                    shown,
                    proposal.as_ref().map(|p| &p.run),
                );
                if !self.replaying {
                    self.notice(text);
                }
                self.resume_after_proposal(*call);
                format!("rejected: {outcome}")
            }
            AgentAct::Propose {
                call,
                wake,
                asked_at,
                run,
            } => {
                if outstanding != Some(*call) {
                    return format!("refused: call {call} is not outstanding");
                }
                let p = Proposal::new(
                    *call,
                    wake.clone(),
                    *asked_at,
                    run.clone(),
                    self.run.view_tokens(),
                );
                let text = proposal_notice(&chair.agent.short_name(), &p);
                let said = format!("proposed: {}", p.run.turn.outcome.label());
                chair.proposal = Some(p);
                if !self.replaying {
                    self.notice(text);
                }
                self.pause_for_proposal();
                said
            }
            AgentAct::Hold { on } => {
                chair.hold = *on;
                if *on { "co-pilot" } else { "autopilot" }.to_string()
            }
            AgentAct::Attach { on } => {
                chair.attached = *on;
                if !*on {
                    chair.worker = None;
                    chair.waiting = None;
                    let proposal = chair.proposal.take();
                    let name = chair.agent.short_name();
                    chair.thinking.clear();
                    if chair.outstanding.take().is_some() {
                        // A proposal waiting was answered: rejected with its outcome, as at
                        // the close, and the tape plays on as after an `x`.
                        match proposal {
                            Some(p) => {
                                self.reject_undecided(now, &p, &name, "detached", "at the detach");
                                self.resume_after_proposal(p.call);
                            }
                            None => self.run.reject(now, "detached", "unanswered", "unanswered"),
                        }
                    }
                } else if let (Agent::Live(spec), false, None) =
                    (&chair.agent, chair.replay_only, &chair.worker)
                {
                    match LiveWorker::for_spec(spec) {
                        Ok(w) => chair.worker = Some(w),
                        Err(e) => {
                            chair.attached = false;
                            return format!("refused: attach: {e}");
                        }
                    }
                }
                if *on { "attached" } else { "detached" }.to_string()
            }
        }
    }

    /// A proposal nobody decided (the close came, or the person detached the agent): the
    /// agent answered, so it is rejected with its routed outcome by `by` (`close`,
    /// `detached`), as a person's `x` keeps it, and a warning says so.
    fn reject_undecided(&mut self, at: Ts, p: &Proposal, name: &str, by: &str, when: &str) {
        let t = &p.run.turn;
        self.run
            .reject_run(at, by, t.outcome.name(), t.outcome.label(), Some(&p.run));
        if !self.replaying {
            self.notice_at(NoticeLevel::Warn, undecided_notice(name, p, when));
        }
    }

    /// Ask the agent (a wake fired, or a SHOW VIEW was answered and it is asked again).
    fn call(&mut self, ask: super::WakeAsk, ctx: TurnContext) {
        let segment = self.segment;
        let Some(chair) = self.chair.as_mut() else {
            return;
        };
        chair.calls += 1;
        let call = chair.calls;
        match &mut chair.seat {
            Seat::Script(src) => {
                // Co-pilot: the script's answer is held for the person, unless there is
                // nothing to decide (a provider error): that routes at the wake, as in
                // autopilot. A replayed session file that records the person's decision on
                // the call (one written before provider errors routed so, or edited) has it
                // act as recorded.
                let run = src.answer(&ask, &ctx).run;
                chair.outstanding = Some(Outstanding {
                    call,
                    ask: None,
                    asked: true,
                });
                if !needs_decision(&run) && !records_answer(&self.script, call) {
                    let said = self.agent_act(&AgentAct::Answer { call, run }, ask.ts);
                    debug_assert!(said.starts_with("answered"), "{said}");
                    return;
                }
                let p = Proposal::new(call, ask.wake.clone(), ask.ts, run, self.run.view_tokens());
                let text = proposal_notice(&chair.agent.short_name(), &p);
                chair.proposal = Some(p);
                if !self.replaying {
                    self.notice(text);
                }
                self.pause_for_proposal();
            }
            Seat::Remote => {
                // Replayed, nobody answers but the record: a call it does not answer is not
                // held open (later wakes are asked, not suppressed).
                if chair.worker.is_none() && !records_answer(&self.script, call) {
                    self.run
                        .reject(ask.ts, "nobody", "unanswered", "unanswered");
                    self.not_called(&ask.wake, ask.ts);
                    return;
                }
                // A call the record still to replay answers is not asked again (a rewind,
                // Home): its recorded answer acts where it was taken. Before 2026-12-06 a
                // live author was asked again after Home for every later recorded wake, and
                // its new answer acted where it arrived, on another book.
                let mut asked = false;
                if !chair.quiet
                    && !chair.replay_only
                    && !records_answer(&self.script, call)
                    && let Some(w) = &chair.worker
                {
                    chair.thinking.clear();
                    chair.waiting = Some((ask.wake.clone(), ask.ts));
                    chair.re_asked = 0;
                    chair.refused.clear();
                    w.ask(segment, call, ask.clone(), ctx.clone());
                    asked = true;
                }
                chair.outstanding = Some(Outstanding {
                    call,
                    ask: Some((ask, ctx)),
                    asked,
                });
            }
        }
    }

    /// The wakes that fired on an event: ask the agent, if one is attached.
    fn wakes(&mut self, fired: Vec<FiredWake>) {
        for w in &fired {
            let Some(chair) = self.chair.as_mut() else {
                return;
            };
            if !chair.attached {
                continue;
            }
            match &mut chair.seat {
                Seat::Script(src) if !chair.hold => {
                    let before = self.run.turn_log().len();
                    let name = chair.agent.name();
                    drop(self.run.engine.take_arm_warnings());
                    self.run.wake(w, src.as_mut());
                    // What arming its documents warns of, said on the last notice.
                    let warned = self.arm_warned();
                    if !self.replaying {
                        let mut said: Vec<(NoticeLevel, String)> = self.run.turn_log()[before..]
                            .iter()
                            .filter_map(|e| {
                                Some((e.turn.as_ref()?, e.failure.as_ref(), e.refused.as_deref()))
                            })
                            .map(|(t, failure, refused)| match (failure, refused) {
                                // What failed, in the error colour.
                                (Some(f), _) => (
                                    NoticeLevel::Error,
                                    format!("{name} @ {}: {} ({f})", w.wake, t.outcome.label()),
                                ),
                                // A plan the engine left out (its name the person's).
                                (None, Some(r)) => (
                                    if r.starts_with("armed nothing") {
                                        NoticeLevel::Error
                                    } else {
                                        NoticeLevel::Warn
                                    },
                                    format!(
                                        "{name} @ {}: {} → {}",
                                        w.wake,
                                        t.outcome.label(),
                                        for_the_person(r)
                                    ),
                                ),
                                (None, None) => (
                                    NoticeLevel::Info,
                                    format!("{name} @ {}: {}", w.wake, t.outcome.label()),
                                ),
                            })
                            .collect();
                        if let Some((level, text)) = said.last_mut()
                            && !warned.is_empty()
                        {
                            text.push_str(&warned);
                            if *level == NoticeLevel::Info {
                                *level = NoticeLevel::Warn;
                            }
                        }
                        for (level, text) in said {
                            self.notice_at(level, text);
                        }
                    }
                }
                _ => {
                    if let Some((ask, ctx)) = self.run.ask(w) {
                        self.call(ask, ctx);
                    }
                }
            }
        }
    }

    /// Apply every event up to and including `target`; the clock then reads `target` (or
    /// the last event, when the tape ends first).
    pub fn advance_to(&mut self, target: Ts) {
        self.changed = true;
        self.horizon = target.max(self.clock);
        loop {
            let ts = match self.run.peek_ts() {
                Ok(Some(ts)) => ts,
                Ok(None) => {
                    self.end();
                    break;
                }
                Err(e) => {
                    self.error = Some(e.to_string());
                    self.end();
                    break;
                }
            };
            // A `session` line comes after every time of the session it ends: only a target
            // past that session's close (playing on, a seek or a step beyond it) crosses it.
            let crossing = self.run.next_is_session();
            if crossing && target <= self.run.engine.market().close_time()
                || !crossing && ts > target
            {
                break;
            }
            self.apply_script();
            if crossing {
                self.settle_chair_at_close();
            }
            let (ev, fired) = match self.run.step_event() {
                Ok(Some(x)) => x,
                Ok(None) => continue,
                Err(e) => {
                    self.error = Some(e.to_string());
                    self.end();
                    break;
                }
            };
            if let TapeEvent::Session(spec) = &ev {
                // A new session of a multi-session tape: the clock starts again at its open
                // (the frame's target was in the session before), the chart with it.
                let open = self.run.engine.market().open_time();
                self.clock = open;
                self.last_event = open;
                self.horizon = open;
                self.candles.iter_mut().for_each(Candles::clear);
                self.chart_cache = None;
                self.seq += 1;
                self.notice(format!("session {} opens", spec.date));
                self.apply_script();
                return;
            }
            self.on_event(&ev, fired);
            self.apply_script();
            if self.stop_for_proposal && self.proposal_holds() {
                // Co-pilot: the tape stops at the event the proposal appeared on.
                self.clock = self.clock.max(ts);
                self.pause_for_proposal();
                return;
            }
        }
        if target > self.clock {
            self.clock = if self.ended {
                self.clock.max(self.last_event)
            } else {
                target
            };
        }
        self.apply_script();
        if self.ended {
            self.playing = false;
        }
    }

    /// What follows one tape event applied to the run: the chart's sample, the wakes it
    /// fired, the count.
    fn on_event(&mut self, ev: &TapeEvent, fired: Vec<FiredWake>) {
        let ts = ev.ts();
        // The chart's series are the desk's: a headless run draws nothing.
        if let TapeEvent::Tick(t) = ev
            && !self.headless
        {
            for c in &mut self.candles {
                c.apply(t);
            }
            self.chart_cache = None;
        }
        self.wakes(fired);
        self.seq += 1;
        self.last_event = ts;
    }

    /// The close (of the tape, or of a session of a multi-session tape): a call still out
    /// was never answered in time; positions settle. A proposal still waiting was answered:
    /// it is rejected with its outcome, by `close`, and the footer says so (before 2026-12-06
    /// it read `unanswered`, the agent's answer lost, and nothing was said; at a session's
    /// close it stayed on screen into the next session, answering a call no longer out).
    fn settle_chair_at_close(&mut self) {
        let undecided = self.chair.as_mut().and_then(|c| {
            c.outstanding = None;
            c.waiting = None;
            c.proposal.take().map(|p| (p, c.agent.short_name()))
        });
        if let Some((p, name)) = undecided {
            let at = self.run.engine.market().now().unwrap_or(self.clock);
            self.reject_undecided(at, &p, &name, "close", "at the close");
            if self.paused_for == Some(p.call) {
                self.paused_for = None;
            }
        }
    }

    fn end(&mut self) {
        if !self.ended {
            self.ended = true;
            self.playing = false;
            self.settle_chair_at_close();
            self.run.close();
            self.control("end of tape");
        }
    }

    /// Advance the clock by `dt` of wall time at the current speed (at max: as far as ~10 ms
    /// of work goes).
    pub fn run_for(&mut self, dt: Duration) {
        if !self.playing || self.ended {
            return;
        }
        if self.proposal_holds() {
            self.pause_for_proposal();
            return;
        }
        let before = self.seq;
        let started = Instant::now();
        self.stop_for_proposal = true;
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
        self.stop_for_proposal = false;
        let spent = started.elapsed().max(dt);
        self.rate.0 += self.seq - before;
        self.rate.1 += spent;
        if self.rate.1 >= Duration::from_millis(500) {
            self.events_per_sec = self.rate.0 as f64 / self.rate.1.as_secs_f64();
            self.rate = (0, Duration::ZERO);
        }
    }

    fn render_frame(&mut self) -> Arc<Rendered> {
        let key = (self.seq, self.clock, self.history.len());
        if let (Some(f), Some(k)) = (&self.frame, self.frame_key)
            && k == key
        {
            return f.clone();
        }
        let book = self.run.snapshot();
        let input = view::FrameInput {
            tape: &self.header.name,
            market: self.run.engine.market(),
            bars: &self.run.bars,
            signal: self.signal,
            exec: self.exec,
            snapshot: &book,
            woke: None,
            width: 0,
        };
        let f = Arc::new(view::render_frame(&self.view, &input, &view::cl100k));
        self.frame = Some(f.clone());
        self.frame_key = Some(key);
        f
    }

    fn chart_data(&mut self) -> Arc<ChartData> {
        if let Some(c) = &self.chart_cache {
            return c.clone();
        }
        let m = self.run.engine.market();
        let c = Arc::new(ChartData {
            series: self
                .candles
                .iter()
                .map(|c| ChartSeries {
                    hod: m.hod(&c.sym).map(|p| p.to_f64()),
                    lod: m.lod(&c.sym).map(|p| p.to_f64()),
                    vwap: m.vwap(&c.sym),
                    candles: c.clone(),
                })
                .collect(),
            marks: chart_marks(self.run.engine.bus().blotter()),
        });
        self.chart_cache = Some(c.clone());
        c
    }

    fn owner_of(&self, o: Option<&str>) -> Owner {
        match (o, &self.chair) {
            (Some(PERSON), _) => Owner::Person,
            (Some(_), chair) => Owner::Agent(
                chair
                    .as_ref()
                    .map_or_else(|| "agent".to_string(), |c| c.agent.short_name()),
            ),
            // With nobody in the agent's seat the book is the person's alone (what the
            // opening files armed included): the desk's book is not shared, so it records
            // no owner.
            (None, None) => Owner::Person,
            (None, Some(_)) => Owner::Unowned,
        }
    }

    fn plan_lines(&self) -> Vec<PlanLine> {
        let b = self.run.engine.bus().blotter();
        let meta = self.run.plan_meta();
        let mut out: Vec<(u64, PlanLine)> = b
            .plans
            .iter()
            .filter(|(name, _)| b.in_current_session(name))
            .map(|(name, line)| {
                let m: Option<&PlanMeta> = meta.get(name);
                let (pnl, fires, fills) = b.session_figures(name);
                let pnl = b.in_r(pnl).map(|p| p.to_f64()).unwrap_or(0.0);
                let p = PlanLine {
                    name: name.clone(),
                    owner: self.owner_of(line.owner.as_deref()),
                    state: line.state,
                    budget_r: m.map_or(0.0, |m| m.budget_r),
                    pnl_r: pnl,
                    ttl: m.map(|m| m.ttl.clone()),
                    // The engine's: a ttl `+30m` runs from when the plan armed (an
                    // ARM target arms it later than its document arrived).
                    expires: self.run.engine.plan_ttl_end(name),
                    note: crate::bus::blotter::summary_of(line.note.as_deref(), fires, fills),
                    note_ts: line.note.as_ref().and(line.note_ts),
                    risk: line.risk.clone(),
                    text: m.map(|m| m.text.clone()).unwrap_or_default(),
                };
                (line.seq, p)
            })
            .collect();
        out.sort_by_key(|(seq, _)| *seq);
        out.into_iter().map(|(_, p)| p).collect()
    }

    /// Bring the Journal and Tokens lines up to date with the run's turn log.
    fn sync_lines(&mut self) {
        let log = self.run.turn_log();
        if self.lines_seen >= log.len() {
            return;
        }
        let agent = self
            .chair
            .as_ref()
            .map_or_else(|| "agent".to_string(), |c| c.agent.name());
        let lines = Arc::make_mut(&mut self.lines);
        for (i, e) in log.iter().enumerate().skip(self.lines_seen) {
            let desk = self.desk_turns.iter().find(|(j, ..)| *j == i);
            lines.push(turn_line(e, desk, &agent));
        }
        self.lines_seen = log.len();
    }

    /// The screen's view of the session now. `frame` re-renders the Frame if the tape moved
    /// (otherwise the last one is reused).
    pub fn snapshot(&mut self, frame: bool) -> SessionSnapshot {
        self.changed = false;
        let frame = match (&self.frame, frame) {
            (Some(f), false) => f.clone(),
            _ => self.render_frame(),
        };
        let chart = self.chart_data();
        self.sync_lines();
        let run_notices = self.run.notices();
        if self.notices_seen < run_notices.len() {
            let agent = self
                .chair
                .as_ref()
                .map_or_else(|| "the agent".to_string(), |c| c.agent.name());
            let new: Vec<Notice> = run_notices[self.notices_seen..]
                .iter()
                .map(|n| Notice {
                    ts: n.ts,
                    text: if n.actor == AGENT && n.owner == PERSON {
                        format!("{agent} cancelled your plan {}", n.plan)
                    } else {
                        format!("{} cancelled {}'s plan {}", n.actor, n.owner, n.plan)
                    },
                    level: NoticeLevel::Warn,
                })
                .collect();
            self.notices_seen = run_notices.len();
            self.notices.extend(new);
        }
        self.risk_notices();
        let m = self.run.engine.market();
        let bus = self.run.engine.bus();
        let evs = bus.events();
        // The newest lines; for a while after a run starts (the open, a restart, a rewind, an
        // undo, a reopened session's replay) as many as the desk's Log keeps, so it starts
        // over from the run's history, not from its last 200 events.
        let keep = if self.long_tail > 0 {
            self.long_tail -= 1;
            LONG_TAIL
        } else {
            200
        };
        let line = |e: &bus::Event| {
            String::from_utf8_lossy(&bus::canonical_line(e))
                .trim_end()
                .to_string()
        };
        let tail = evs[evs.len().saturating_sub(keep)..]
            .iter()
            .map(line)
            .collect();
        if self.landmarks_seen > evs.len() {
            self.landmarks = Arc::default();
            self.landmarks_seen = 0;
        }
        let new = &evs[self.landmarks_seen..];
        if new.iter().any(|e| !e.is_chatter()) {
            // A snapshot still held shares the list: this copies it, a pointer a line.
            let marks = Arc::make_mut(&mut self.landmarks);
            for (i, e) in new.iter().enumerate() {
                if !e.is_chatter() {
                    marks.push(((self.landmarks_seen + i) as u64, Arc::from(line(e))));
                }
            }
        }
        self.landmarks_seen = evs.len();
        let mut book = view::Snapshot::from_blotter(bus.blotter());
        let run = self.run.snapshot();
        book.plans = run.plans;
        book.budget_used_r = run.budget_used_r;
        book.journal = self.run.journal().to_vec();
        book.wakes_used = self.run.wakes_used();
        let notices = self.notices[self.notices.len().saturating_sub(20)..].to_vec();
        // The book's names change only with an event on the Bus (a document armed, a plan
        // stood down): built again only when the Bus has moved.
        let at = (self.segment, bus.count());
        if self.standing_at != Some(at) {
            self.standing = Arc::new(self.run.standing());
            self.standing_at = Some(at);
        }
        SessionSnapshot {
            tape: self.tape.label.clone(),
            tape_name: self.header.name.clone(),
            session: self.run.engine.session_no(),
            date: m.date().to_string(),
            clock: self.clock,
            open: m.open_time(),
            close: m.close_time(),
            playing: self.playing,
            speed: self.speed,
            ended: self.ended,
            seq: self.seq,
            settings: self.settings.clone(),
            hash: bus.hash_hex(),
            bus_events: bus.count(),
            frame,
            view_name: self.view.name.text.clone(),
            chart,
            plans: self.plan_lines(),
            book,
            bus: tail,
            landmarks: self.landmarks.clone(),
            turns: self.lines.clone(),
            notices,
            notices_total: self.notices.len(),
            last_submit: self.last_submit.clone(),
            last_undo: self.last_undo.clone(),
            undo_ahead: self.turn_ahead(),
            undo_decision: self.last_decision().map(|(_, _, words)| words),
            turns_ahead: self.turns_ahead(),
            agent: self.chair.as_ref().map(|c| AgentStatus {
                name: c.agent.name(),
                short_name: c.agent.short_name(),
                live: c.agent.is_live(),
                attached: c.attached,
                copilot: c.hold,
                waiting: c.waiting.clone(),
                re_asked: c.re_asked,
                refused: c.refused.clone(),
                proposal: c.proposal.clone(),
                proposal_clash: c
                    .proposal
                    .as_ref()
                    .filter(|p| matches!(p.run.turn.outcome, Outcome::Supersede { .. }))
                    .and_then(|p| p.run.turn.document())
                    .map(|d| self.run.claimed_names(&d))
                    .unwrap_or_default(),
                last_answer: c.last_answer,
                failing: c.failing.clone(),
                thinking: c.thinking.clone(),
                replay_only: c.replay_only,
            }),
            error: self.error.clone(),
            events_per_sec: self.events_per_sec,
            segment: self.segment,
            saving: self.record.path.clone(),
            written: self.record.file.is_some(),
            save_error: self.record.failed.clone(),
            standing: self.standing.clone(),
            draft_opened: self.draft_opened.clone(),
        }
    }
}

impl Session {
    /// The person leaves: the Bus is written out and the session file says where they left
    /// (its `left` record), so `--open` resumes there. Gives the coded line of a write that
    /// failed, now or before ([`Session::save_error`]): the session is then not saved whole.
    /// Dropping a session leaves it too.
    pub fn leave(&mut self) -> Result<(), String> {
        if self.record.file.is_some() && !self.left {
            self.left = true;
            self.flush_bus();
            self.bookmark();
            self.changed = true;
        } else if !self.left && self.record.path.is_some() && self.draft_changed() {
            // A reopened session the person only replayed, but whose draft they wrote or
            // changed: its file is written for the draft (its Bus after it).
            self.left = true;
            self.bookmark();
            self.flush_bus();
            self.changed = true;
        }
        match self.save_error() {
            Some(e) => Err(e.to_string()),
            None => Ok(()),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.leave();
    }
}

/// A recorded act as [`reopen`] replayed it.
struct Replayed {
    /// The tape events applied when it applied.
    seq: u64,
    /// The time of the last of them (the open before the first).
    after: Ts,
    /// The time of the next event, when one follows in the same session.
    before: Option<Ts>,
    /// What it did.
    result: String,
}

/// Does the record still to replay answer (or reject) the agent's call `call`?
fn records_answer(script: &VecDeque<(u64, Ts, Act)>, call: u64) -> bool {
    script.iter().any(|(_, _, a)| {
        matches!(a, Act::Agent(AgentAct::Answer { call: c, .. } | AgentAct::Reject { call: c, .. } | AgentAct::Propose { call: c, .. }) if *c == call)
    })
}

fn act_record(seq: u64, ts: Ts, act: &Act, result: &str) -> serde_json::Value {
    serde_json::json!({
        "type": "act", "seq": seq, "ts": ts.to_string(),
        "act": serde_json::to_value(act).unwrap_or_default(), "result": result,
    })
}

fn new_run(reader: TapeReader<Reader>, settings: &Settings) -> Result<Run<Reader>, String> {
    let cfg = RunConfig {
        engine: settings.engine()?,
        profile: settings.profile,
        author: AuthorKind::Model,
        open_wake: true,
        view_request_cap: None,
    };
    Run::new(reader, cfg, &[], bus::Bus::new(None).keeping())
}

fn first_view(doc: &ast::Document) -> Option<ast::View> {
    doc.statements.iter().find_map(|s| match &s.kind {
        ast::StatementKind::View(v) => Some(v.clone()),
        _ => None,
    })
}

/// The token figures of a reply `written` that routed to `turn` (cl100k). Of a reply refused
/// for its size (`oversized` bytes) only the first bytes are kept: its reply tokens are the
/// estimate the repair loop charged for the whole, not a count of the part kept.
pub(crate) fn reply_tokens(
    written: &str,
    turn: Option<&RoutedTurn>,
    oversized: Option<usize>,
) -> Option<tokens::TurnTokens> {
    let mut tokens = turn.and_then(|t| tokens::measure(written, t, Encoding::Cl100k).ok());
    if let (Some(t), Some(n)) = (tokens.as_mut(), oversized) {
        t.reply = tokens::estimate(n);
    }
    tokens
}

/// The engine's reason a plan of the agent's was not armed, as the person reads it: the
/// other owner whose live plan has that name is the person (`PLAN x not armed: a live plan
/// of yours has that name`); the Bus keeps the engine's words, written to the agent.
fn for_the_person(refused: &str) -> String {
    refused.replace(
        "a live plan of another owner has that name (name yours differently)",
        "a live plan of yours has that name",
    )
}

fn turn_line(e: &TurnEntry, desk: Option<&(usize, String, String)>, agent: &str) -> TurnLine {
    let tokens = reply_tokens(&e.written, e.turn.as_ref(), e.oversized);
    TurnLine {
        ts: e.ts,
        wake: e.wake.clone(),
        author: desk.map_or_else(|| agent.to_string(), |d| d.1.clone()),
        routed: e.turn.clone(),
        rejected: e.rejected.clone(),
        tokens,
        attempts: e.attempts,
        result: match desk {
            Some(d) => d.2.clone(),
            None => e
                .refused
                .as_deref()
                .map(for_the_person)
                .or_else(|| e.proposed.clone())
                .unwrap_or_default(),
        },
        failure: e.failure.clone(),
        oversized: e.oversized,
        spend: e.spend,
        view_tokens: e.view_tokens,
    }
}

/// Open a session from a saved file: its settings, its tape (checked against the recorded
/// BLAKE3) and its acts, resumed at the last point recorded.
pub fn reopen(path: &Path, save: Option<PathBuf>) -> Result<Session, String> {
    let s = saved::open(path)?;
    let tape = TapeSource::open(Some(&s.tape))?;
    if !s.tape_blake3.is_empty() && tape.blake3() != s.tape_blake3 {
        return Err(format!(
            "error code=SESSION message={}: the tape {} has changed since the session was saved (its BLAKE3 differs): \
             the replay would not reach the recorded hash",
            path.display(),
            s.tape
        ));
    }
    let last = s.last.1;
    let speed = s.speed;
    let torn = s.torn;
    let draft = s.draft.clone();
    // An act is named by its line.
    let line = |i: usize| s.act_lines.get(i).map_or(0, |a| a.line);
    let refuse = |i: usize, why: String| {
        let (seq, ts, _) = &s.acts[i];
        format!(
            "error code=SESSION message={}: line {}: the act recorded at seq {seq}, {ts} {why}: \
             the file was changed since the desk wrote it",
            path.display(),
            line(i)
        )
    };
    // An act past the tape's last event would never be replayed: the book would silently
    // lack it.
    let events = tape.reader()?.count() as u64;
    if let Some(i) = s.acts.iter().position(|(q, _, _)| *q > events) {
        return Err(refuse(
            i,
            format!("is past the tape's end ({events} events)"),
        ));
    }
    let mut session = Session::open(
        tape,
        s.settings.clone(),
        Opening {
            save,
            script: s.acts.clone(),
            replay: true,
            plans: Vec::new(),
            create: None,
        },
    )?;
    session.seek(last);
    let replayed = session.replayed.take().unwrap_or_default();
    // The desk records an act at the tape events applied and the clock when it took
    // effect: replayed, it applies with exactly those events applied, at a time not before
    // the last of them. Another point is a `seq` or `ts` changed by hand: the act would
    // apply where the person never took it.
    for (i, (r, (seq, ts, _))) in replayed.iter().zip(&s.acts).enumerate() {
        if *seq != r.seq || *ts < r.after || r.before.is_some_and(|b| *ts > b) {
            let until = r.before.map(|b| format!(" to {b}")).unwrap_or_default();
            return Err(refuse(
                i,
                format!(
                    "does not fall at that point of the tape (it replays at seq {}, from {}{until})",
                    r.seq, r.after
                ),
            ));
        }
    }
    // A turn replays as it was taken (the same text on the same book). One that does not do
    // what its line says it did (its text changed by hand: the plan it armed now refused)
    // would leave a book the person never had, as an undo of a turn the file does not hold
    // would: the file is refused, naming the line.
    for (i, (r, (_, _, act))) in replayed.iter().zip(&s.acts).enumerate() {
        let got = &r.result;
        if let (Act::Turn { .. }, Some((n, want))) = (act, s.differs(i, got)) {
            return Err(format!(
                "error code=SESSION message={}: line {n}: the turn recorded as {want:?} replays \
                 as {got:?}: the file was changed since the desk wrote it",
                path.display()
            ));
        }
    }
    // The speed the person last chose (a live agent's seat starts at 1x only when nothing
    // was chosen).
    if let Some(sp) = speed {
        session.speed = sp;
    }
    if let Some(d) = draft {
        session.draft = d.clone();
        session.draft_opened = Some(Arc::from(d));
    }
    if let Some(n) = torn {
        session.notice_at(
            NoticeLevel::Warn,
            format!(
                "{}: its last line ({n}) was cut short (a crash while it was written): left out",
                path.display()
            ),
        );
    }
    Ok(session)
}

/// Does the agent's answer wait for the person in co-pilot? A provider error does not: the
/// agent said nothing, so there is nothing to accept or reject, and it arms nothing. Nor,
/// since 2026-12-06, does a fail-closed pass (every reply refused): `a` and `x` both arm
/// nothing, so the tape was held for a choice that changed nothing. Each acts at once, as
/// in autopilot (its `repair` and `turn` events on the Bus where it arrived, a notice in
/// the error colour saying what failed, and that it was not proposed), and the tape does
/// not stop for it; the refused replies are in the Log and the Journal keeps the coded
/// error (docs/desk.md, "Co-pilot keeps step").
pub fn needs_decision(run: &crate::turn::RepairRun) -> bool {
    !matches!(
        run.turn.outcome,
        crate::turn::Outcome::ProviderError { .. }
            | crate::turn::Outcome::Pass { fail_closed: true }
    )
}

/// The notice a proposal is announced with (`house proposes supersede at wake open: accept
/// or reject`), with what failed when the agent wrote no valid turn (`house proposes
/// fail-closed pass at wake open (refused after 2 re-asks: PARSE rule=syntax: …): accept or
/// reject`). The desk knows it by this text: the proposal's own line says it already.
pub fn proposal_notice(name: &str, p: &Proposal) -> String {
    let why = p
        .run
        .failure()
        .map(|f| format!(" ({f})"))
        .unwrap_or_default();
    format!(
        "{name} proposes {} at wake {}{why}: accept or reject",
        p.run.turn.outcome.label(),
        p.wake
    )
}

/// What a proposed turn would do, in a few words: the plans a supersede arms (and whether it
/// also sets a VIEW or a WAKE), a STAND-DOWN's reason, a CANCEL's target; for an agent that
/// wrote no valid turn, what failed (`fail-closed pass: refused after 2 re-asks: PARSE
/// rule=syntax: …`), never `nothing (comments only)`, which is an authored pass's.
pub fn proposal_summary(run: &crate::turn::RepairRun) -> String {
    use crate::lang::ast::StatementKind as K;
    let turn = &run.turn;
    if let Some(f) = run.failure() {
        return format!("{}: {f}", turn.outcome.label());
    }
    match &turn.outcome {
        crate::turn::Outcome::StandDown { reason } if reason.is_empty() => "STAND-DOWN".into(),
        crate::turn::Outcome::StandDown { reason } => format!("STAND-DOWN {reason}"),
        crate::turn::Outcome::Cancel { target } => format!("CANCEL {target}"),
        crate::turn::Outcome::Pass { .. } => "nothing (comments only)".into(),
        crate::turn::Outcome::Supersede { .. } => {
            let Some(doc) = turn.document() else {
                return "a document".into();
            };
            let mut plans = Vec::new();
            let mut also = Vec::new();
            for st in &doc.statements {
                match &st.kind {
                    K::Plan(p) => plans.push(p.name.text.clone()),
                    K::View(_) | K::Wake(_) | K::Pod(_) | K::Book(_) => {
                        let k = st.kind.keyword();
                        if !also.contains(&k) {
                            also.push(k);
                        }
                    }
                    _ => {}
                }
            }
            let arms = match plans.len() {
                0 => "arms no plan".to_string(),
                _ => format!("arms {}", plans.join(", ")),
            };
            if also.is_empty() {
                arms
            } else {
                format!("{arms} (+{})", also.join(", "))
            }
        }
        o => o.name().to_string(),
    }
}

/// What the footer says of a proposal nobody decided, rejected at the close or when the
/// person detached the agent (`house's 15:00 proposal (arms late-fade) was not decided:
/// rejected at the close`): the agent did answer, and the Bus keeps its outcome.
pub fn undecided_notice(name: &str, p: &Proposal, when: &str) -> String {
    format!(
        "{name}'s {} proposal ({}) was not decided: rejected {when}",
        p.asked_at.hhmm(),
        proposal_summary(&p.run)
    )
}

/// How late in tape time an autopilot answer may act before its notice says how old its
/// View is (`… (answer to wake open 09:30, acted 2h15m later: its View is that old)`).
const LATE_ANSWER: Ts = Ts(60_000);

/// A tape-time span as `45s`, `2m13s`, `1h05m`.
pub fn age_text(t: Ts) -> String {
    let s = t.0 / 1000;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s / 60) % 60)
    }
}

/// Warnings at arming as the tail of a turn's result or notice: `; plan: message` each.
fn warned_tail(warnings: &[crate::engine::ArmWarning]) -> String {
    warnings
        .iter()
        .map(|w| format!("; {}: {}", w.plan, w.message))
        .collect()
}
