//! Sessions: the one owner of a run, and the authors that answer its wakes.
//!
//! - [`Session`] ([`owner`]) owns a run: the tape, the [`Run`] (market, engine, wakes,
//!   views, the author's asks, the Bus), the clock, the acts, the agent's seat and the
//!   session file. The desk and the tests drive it with [`Command`]s and draw
//!   [`SessionSnapshot`]s; the headless verbs (`run`, `agent`, `grade`) open it with
//!   [`Session::headless`] and play it to the end.
//! - [`Run`] ([`run`]) is one pass of the tape from the open, inside a session.
//! - The authors: [`TurnSource`] answers a wake; [`Live`] / [`scripted`] write replies,
//!   [`Recorded`] replays a saved Bus, [`Attached`] runs an `author::Author` (a model, a
//!   command). [`agent`] seats one of them for the desk; [`saved`] reads and writes
//!   session files.

pub mod agent;
pub mod candles;
pub mod owner;
pub mod replay;
pub mod run;
pub mod saved;

pub use owner::{
    Act, Command, DEFAULT_R_USD, Headless, Opening, Reader, Session, SessionSnapshot, Settings,
    Speed, TapeSource,
};
pub use run::{Counts, Run, RunConfig};

use crate::bus::{Event, parse_bus};
use crate::lang::{self, ast};
use crate::market::Ts;
use crate::turn::repair::{self, Ask, RepairAttempt, RepairPolicy, RepairRun};
use crate::turn::{AuthorKind, Reply, TurnContext, WakePhase};
use crate::view;
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
    /// A recorded rejection ([`Recorded`] replaying a desk's Bus): the person (or the
    /// close) rejected this answer, so nothing routes and a `turn-rejected` is written as
    /// recorded, after its attempts. `None` for every live answer.
    pub rejected: Option<Rejected>,
}

/// Who rejected a recorded answer and the outcome the Bus named (`turn-rejected`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// `human`, `close`, `detached`, `nobody`.
    pub by: String,
    /// The outcome's name as recorded (`supersede`, `unanswered`).
    pub outcome: String,
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
    /// Who the author is, for the Bus's `session-start` (`None`: a script or a recording,
    /// whose identity is its file).
    fn identity(&self) -> Option<crate::author::AuthorInfo> {
        None
    }
    /// The identity a recording carries, exactly as its `session-start` wrote it (a saved
    /// Bus of a model or command author): a replay writes it back, so the Bus and its
    /// determinism hash are the recording's. `None` for every live or scripted author.
    fn recorded_identity(&self) -> Option<crate::bus::AuthorIdentity> {
        None
    }
    /// The saved Bus a recording replays, as read ([`Recorded`]): a replay is held to it
    /// ([`replay`]). `None` for every other author.
    fn recorded_bus(&self) -> Option<&[u8]> {
        None
    }
    /// A script's replies for a named wake that no ask took ([`Script`]); `None` for every
    /// other author, and for a script that used them all.
    fn unused(&self) -> Option<Unused> {
        None
    }
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
            rejected: None,
        }
    }
    fn name(&self) -> String {
        self.name.clone()
    }
}

/// A scripted author: replies in order from a list, one per ask (re-asks included); when the
/// script runs out it passes (an empty reply from a file is a pass).
pub fn scripted(name: &str, replies: Vec<String>) -> Script {
    scripted_by_wake(name, replies.into_iter().map(|r| (None, r)).collect())
}

/// A scripted author whose replies may name the wake they answer (`{"wake": "range-break",
/// "reply": ...}`): a reply recorded for wake W answers W (the first unused one for W),
/// whenever W fires, never by its place in the file; untagged replies answer, in order, any
/// wake no tagged reply is left for. Re-asks take the next reply the same way. When nothing
/// is left for a wake it passes.
pub fn scripted_by_wake(name: &str, replies: Vec<(Option<String>, String)>) -> Script {
    let lines = replies
        .into_iter()
        .map(|(wake, reply)| ScriptLine {
            line: None,
            wake,
            reply,
        })
        .collect();
    Script::new(name, lines)
}

/// One reply of a script: the file line it was read from (`None`: given in code), the wake
/// it answers (`None`: any, in order), and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptLine {
    pub line: Option<usize>,
    pub wake: Option<String>,
    pub reply: String,
}

/// A scripted author ([`scripted_by_wake`]). It remembers which replies it gave and which
/// wakes asked, so a run can say which replies for a named wake were never used: a wake
/// name the session never fires (a typo, another tape's wake) otherwise passes in silence.
pub struct Script {
    name: String,
    lines: Vec<ScriptLine>,
    used: Vec<bool>,
    /// The wakes that asked, in the order they first asked.
    asked: Vec<String>,
    policy: RepairPolicy,
}

impl Script {
    /// A script of these replies, none used yet.
    pub fn new(name: &str, lines: Vec<ScriptLine>) -> Script {
        Script {
            name: name.to_string(),
            used: vec![false; lines.len()],
            lines,
            asked: Vec::new(),
            policy: RepairPolicy::default(),
        }
    }

    /// The reply for the next ask at `wake`: the first unused one tagged `wake`, else the
    /// first unused untagged one, else none (a pass).
    fn take(&mut self, wake: &str) -> String {
        let free = |i: &usize| !self.used[*i];
        let tagged = (0..self.lines.len())
            .filter(free)
            .find(|i| self.lines[*i].wake.as_deref() == Some(wake));
        let pick = tagged.or_else(|| {
            (0..self.lines.len())
                .filter(free)
                .find(|i| self.lines[*i].wake.is_none())
        });
        match pick {
            Some(i) => {
                self.used[i] = true;
                self.lines[i].reply.clone()
            }
            None => String::new(),
        }
    }
}

impl TurnSource for Script {
    fn answer(&mut self, ask: &WakeAsk, ctx: &TurnContext) -> Answer {
        if !self.asked.contains(&ask.wake) {
            self.asked.push(ask.wake.clone());
        }
        let policy = self.policy;
        let mut author = |_: &Ask| Reply::Text(self.take(&ask.wake));
        Answer {
            run: repair::drive(&mut author, ctx, policy),
            at: None,
            rejected: None,
        }
    }
    fn name(&self) -> String {
        self.name.clone()
    }
    fn unused(&self) -> Option<Unused> {
        let replies: Vec<(String, String)> = self
            .lines
            .iter()
            .zip(&self.used)
            .enumerate()
            .filter(|(_, (_, used))| !**used)
            .filter_map(|(i, (l, _))| {
                let at = l
                    .line
                    .map_or(format!("reply {}", i + 1), |n| format!("line {n}"));
                Some((at, l.wake.clone()?))
            })
            .collect();
        (!replies.is_empty()).then(|| Unused {
            author: self.name.clone(),
            replies,
            asked: self.asked.clone(),
        })
    }
}

/// A script's replies for a named wake that no ask took, once the run is over (an
/// untagged reply left over is not one: it answers whatever asks, and the asks ran out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unused {
    /// The author's name (its file).
    pub author: String,
    /// The replies never used: where each is (`line 3` of the file, or `reply 3` of a
    /// script given in code) and the wake it names.
    pub replies: Vec<(String, String)>,
    /// The wakes that asked, in the order they first asked.
    pub asked: Vec<String>,
}

impl Unused {
    /// How many replies [`note`](Self::note) lists by line; the rest are counted.
    const SHOWN: usize = 5;

    /// The note for a person: `FILE: 1 script reply never used: line 1 (wake "nosuch"); the
    /// wakes asked were "open", "last-hour"`.
    pub fn note(&self) -> String {
        let n = self.replies.len();
        let mut listed: Vec<String> = self
            .replies
            .iter()
            .take(Self::SHOWN)
            .map(|(at, wake)| format!("{at} (wake {wake:?})"))
            .collect();
        if n > Self::SHOWN {
            listed.push(format!("and {} more", n - Self::SHOWN));
        }
        let asked = if self.asked.is_empty() {
            "no wake asked".to_string()
        } else {
            let names: Vec<String> = self.asked.iter().map(|w| format!("{w:?}")).collect();
            format!("the wakes asked were {}", names.join(", "))
        };
        format!(
            "{}: {n} script {} never used: {}; {asked}",
            self.author,
            if n == 1 { "reply" } else { "replies" },
            listed.join(", ")
        )
    }
}

/// A recorded author: replays the routed turns and repair attempts of a saved Bus, wake by
/// wake, at their recorded arrival times.
pub struct Recorded {
    name: String,
    /// The author the recording's first `session-start` names (a model or command author
    /// recorded by `kestrel agent`), so a replay writes the same `session-start`.
    author: Option<crate::bus::AuthorIdentity>,
    /// (wake, wake time, Bus line of the turn) → answers in order.
    answers: Vec<(String, Ts, usize, Answer)>,
    /// Which answers have been given.
    used: Vec<bool>,
    next: usize,
    /// The file's bytes, to hold a replay to ([`replay`]).
    bytes: Vec<u8>,
}

/// Why a saved Bus does not replay: a line that is not a Bus event, or a record the
/// admission gate refuses.
enum BusRefusal {
    /// The line (0: the file as a whole) and what is wrong with it.
    Line(usize, String),
    Replay(crate::turn::admit::ReplayError),
}

impl Recorded {
    /// Read the turns of a saved Bus (JSON Lines). Errors are `line N: ...` for a line that
    /// is not a Bus event, or the gate's `error code=REPLAY ...` line.
    pub fn from_bus(name: &str, bytes: &[u8]) -> Result<Recorded, String> {
        Self::read(name, bytes).map_err(|e| match e {
            BusRefusal::Line(line, e) => format!("line {line}: {e}"),
            BusRefusal::Replay(e) => e.to_string(),
        })
    }

    /// [`Recorded::from_bus`] for a file at `path` (as the user named it), with errors as
    /// the coded lines a verb prints, naming the file: `error code=BUS message=FILE: line N:
    /// ...` for a line that is not a Bus event (a Bus cut mid-line), `error code=REPLAY
    /// rule=R line=N message=FILE: ...` for a record the gate refuses (docs/limits.md).
    pub fn from_bus_file(path: &str, bytes: &[u8]) -> Result<Recorded, String> {
        Self::read(path, bytes).map_err(|e| match e {
            BusRefusal::Line(0, e) => format!("error code=BUS message={path}: {e}"),
            // (`parse_bus` words the parser's position as the line's column: `bus::line_error`.)
            BusRefusal::Line(line, e) => format!("error code=BUS message={path}: line {line}: {e}"),
            BusRefusal::Replay(e) => format!(
                "error code={} rule={} line={} message={path}: {}",
                crate::turn::admit::ReplayError::CODE,
                e.rule,
                e.line,
                e.message.replace('\n', " ")
            ),
        })
    }

    fn read(name: &str, bytes: &[u8]) -> Result<Recorded, BusRefusal> {
        let events = parse_bus(bytes).map_err(|(line, e)| BusRefusal::Line(line, e))?;
        let author = events.iter().find_map(|ev| match ev {
            Event::SessionStart { author, .. } => Some(author.clone()),
            _ => None,
        });
        let mut answers = Vec::new();
        let mut attempts: Vec<RepairAttempt> = Vec::new();
        // Every recorded turn is admitted again, as a live reply would be.
        let mut gate = crate::turn::admit::ReplayGate::default();
        for (n, ev) in events.into_iter().enumerate() {
            let line = n + 1;
            // A person's turn at the desk is not an answer of the author's: the documents
            // armed at the open are the replay's opening documents (`Recording::
            // persons_at_desk`), and the person's later acts are not replayed headless.
            let persons = matches!(&ev, Event::Turn { wake, turn, .. } if gate.persons(wake, turn));
            let admitted = gate.record(line, &ev).map_err(BusRefusal::Replay)?;
            match (ev, admitted) {
                (Event::Repair { attempt, .. }, _) => attempts.push(attempt),
                (Event::Turn { .. }, Some(_)) if persons => {}
                (Event::Turn { ts, wake, .. }, Some(turn)) => {
                    // A turn answers the wake whose View was delivered before it, keyed by
                    // that View's time (the gate checked it names that wake, whatever its
                    // name: `desk` is also one an author may give a WAKE). A turn before any
                    // View answers none: keyed by its own.
                    let (w, wt) = match gate.delivered() {
                        Some((asked, at)) if asked == wake => (wake.clone(), at),
                        _ => (wake.clone(), ts),
                    };
                    let re_asks = attempts.len().saturating_sub(1) as u32;
                    let tokens_spent = attempts.iter().map(|a| a.tokens).sum();
                    let fail_closed = None;
                    answers.push((
                        w,
                        wt,
                        line,
                        Answer {
                            run: RepairRun {
                                turn,
                                attempts: std::mem::take(&mut attempts),
                                re_asks,
                                tokens_spent,
                                fail_closed,
                            },
                            at: Some(ts),
                            rejected: None,
                        },
                    ));
                }
                // A proposal the person rejected (or nobody decided at the close): that
                // wake's answer is the rejection, with the attempts recorded before it
                // (none in a Bus written before 2026-12-06).
                (
                    Event::TurnRejected {
                        ts,
                        wake,
                        by,
                        outcome,
                    },
                    _,
                ) => {
                    let (w, wt) = match gate.delivered() {
                        Some((asked, at)) if asked == wake => (wake.clone(), at),
                        _ => (wake.clone(), ts),
                    };
                    let attempts = std::mem::take(&mut attempts);
                    answers.push((
                        w,
                        wt,
                        line,
                        Answer {
                            run: RepairRun {
                                turn: rejected_turn(&wake, ts, &by),
                                re_asks: attempts.len().saturating_sub(1) as u32,
                                tokens_spent: attempts.iter().map(|a| a.tokens).sum(),
                                attempts,
                                fail_closed: None,
                            },
                            at: Some(ts),
                            rejected: Some(Rejected { by, outcome }),
                        },
                    ));
                }
                _ => {}
            }
        }
        gate.finish().map_err(BusRefusal::Replay)?;
        Ok(Recorded {
            name: name.to_string(),
            author: author.flatten(),
            used: vec![false; answers.len()],
            answers,
            next: 0,
            bytes: bytes.to_vec(),
        })
    }

    /// The author identity the recording's `session-start` carries (`None`: a Bus of the
    /// desk, `run`, or a script author, which record none).
    pub fn recorded_author(&self) -> Option<&crate::bus::AuthorIdentity> {
        self.author.as_ref()
    }

    /// Turns left to replay.
    pub fn remaining(&self) -> usize {
        self.answers.len() - self.next
    }
}

impl TurnSource for Recorded {
    fn answer(&mut self, ask: &WakeAsk, ctx: &TurnContext) -> Answer {
        // By wake: the turn recorded at wake W (its name and instant) answers W, wherever it
        // is in the file (a wake that is not asked this time leaves its turn unused).
        let hit = self
            .answers
            .iter()
            .zip(&self.used)
            .position(|((w, t, ..), used)| !used && *w == ask.wake && *t == ask.ts);
        match hit.map(|i| (i, &self.answers[i])) {
            Some((i, (_, _, line, a))) => {
                self.used[i] = true;
                self.next += 1;
                let mut a = a.clone();
                if a.rejected.is_some() {
                    return a;
                }
                // Admitted again under the live book: a turn the live checker refuses arms
                // nothing.
                if let Err(e) = crate::turn::admit::readmit(&a.run.turn, ctx, *line) {
                    a.run.turn = crate::turn::admit::refused(ctx, &e);
                }
                a
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
                rejected: None,
            },
        }
    }
    fn name(&self) -> String {
        self.name.clone()
    }
    fn recorded_identity(&self) -> Option<crate::bus::AuthorIdentity> {
        self.author.clone()
    }
    fn recorded_bus(&self) -> Option<&[u8]> {
        Some(&self.bytes)
    }
}

/// The turn a replayed rejection carries in its [`RepairRun`]: never routed nor written
/// (the Bus records only the rejected outcome's name), a provider-error record saying so.
fn rejected_turn(wake: &str, ts: Ts, by: &str) -> crate::turn::RoutedTurn {
    let ctx = TurnContext::new(
        WakePhase::Mid,
        crate::turn::Profile::AuthoringV2,
        AuthorKind::Model,
    );
    crate::turn::route(
        &Reply::ProviderError(format!(
            "the answer to wake {wake} was rejected by {by} at {ts}: it was not routed"
        )),
        &ctx,
    )
}

/// Parse a document for a session (file rules).
pub fn load_plans(src: &str) -> Result<ast::Document, Vec<lang::Diagnostic>> {
    lang::check(src, lang::Mode::File)
}

/// An attached author (`crate::author`: an OpenAI-compatible model, a command, a recording
/// of replies, a person) as a session's turn source. Each wake runs the bounded repair loop;
/// the prompt is the *rendered* profile (its `{{menu}}` and `{{card}}` filled: the language
/// card built around this wake's menu), then the View (plus the bounded repair note on a
/// re-ask). In a headless session the reply acts at the wake's instant (the frozen
/// cutoff); the desk runs authors on their own task so the tape keeps moving.
pub struct Attached {
    author: Box<dyn crate::author::Author>,
    rt: tokio::runtime::Runtime,
    /// The card for each menu text seen (a menu differs by phase and view-shop use).
    cards: std::collections::BTreeMap<String, String>,
    deltas: Option<crate::author::DeltaSink>,
    pub policy: RepairPolicy,
}

/// The system text an attached author is sent for `profile` at a wake offering `menu`:
/// the profile's template with `{{card}}` replaced by the language card (whose `## The
/// menu` section is `menu`) and `{{menu}}` by nothing (the card carries it, once).
pub fn rendered_profile(profile: crate::turn::Profile, card: &str) -> String {
    profile.render("", card).replace("\n\n\n", "\n\n")
}

impl Attached {
    /// Attach an author.
    pub fn new(author: Box<dyn crate::author::Author>) -> Result<Attached, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the async runtime: {e}"))?;
        Ok(Attached {
            author,
            rt,
            cards: std::collections::BTreeMap::new(),
            deltas: None,
            policy: RepairPolicy::default(),
        })
    }

    /// The author's identity (kind, model, constrained, temperature).
    pub fn info(&self) -> crate::author::AuthorInfo {
        self.author.info()
    }

    /// The most bytes a re-ask's repair note may take for this author: half its output
    /// budget, at most 1,536 bytes (`author::openai::reask_note_bound`).
    pub fn note_bound(&self) -> usize {
        match self.author.info().max_tokens {
            Some(m) => crate::author::openai::reask_note_bound(m),
            None => repair::REASK_NOTE_MAX,
        }
    }
}

impl TurnSource for Attached {
    fn answer(&mut self, ask: &WakeAsk, ctx: &TurnContext) -> Answer {
        let note_bound = self.note_bound();
        let author = &mut self.author;
        let rt = &self.rt;
        let cards = &mut self.cards;
        let deltas = &self.deltas;
        let profile = ctx.profile;
        let mut retries: Vec<Vec<String>> = Vec::new();
        let mut usage: Vec<Option<crate::author::Usage>> = Vec::new();
        let mut write = |a: &Ask| -> Reply {
            let menu = a.menu.prompt_text();
            let card = cards
                .entry(menu.clone())
                .or_insert_with(|| {
                    crate::lang::card::build(&menu, None, &view::cl100k)
                        .map(|c| c.text)
                        .unwrap_or_default()
                })
                .clone();
            let prompt = crate::author::Prompt {
                profile: rendered_profile(profile, &card),
                card: String::new(),
                view: ask.frame.clone(),
                menu: String::new(),
                repair: a.repair_note(note_bound),
                completion: profile.completion_style(),
            };
            // A re-ask starts a new reply: the desk shows the one being written, not the
            // refused one with the new one after it.
            if !retries.is_empty()
                && let Some(d) = deltas
            {
                let _ = d.send(crate::author::NEW_ATTEMPT.to_string());
                let _ = d.send(crate::author::re_ask_note(a.guided_error.as_deref()));
            }
            let done = rt.block_on(or_signal(author.author(&prompt, deltas.clone())));
            retries.push(author.take_retries());
            usage.push(author.take_usage());
            match done {
                crate::author::Completion::Reply(text) => Reply::Text(text),
                crate::author::Completion::CutOff(cut) => match cut.reply_kind() {
                    crate::author::CutKind::Truncated => match cut.reason {
                        crate::author::CutReason::Stopped(r) if r != "length" => Reply::Stopped {
                            text: cut.text,
                            reason: r,
                        },
                        _ => Reply::CutOff(cut.text),
                    },
                    crate::author::CutKind::Whole => Reply::Text(cut.text),
                    crate::author::CutKind::Failed(e) => Reply::ProviderError(e.to_string()),
                },
                crate::author::Completion::Oversized { head, bytes } => {
                    Reply::Oversized { head, bytes }
                }
                crate::author::Completion::ProviderError(e) => Reply::ProviderError(e.to_string()),
            }
        };
        let mut run = repair::drive(&mut write, ctx, self.policy);
        for ((a, r), u) in run.attempts.iter_mut().zip(retries).zip(usage) {
            a.retries = r;
            a.usage = u;
        }
        Answer {
            run,
            at: None,
            rejected: None,
        }
    }
    fn name(&self) -> String {
        let i = self.author.info();
        format!("{} {}", i.kind, i.model)
    }
    fn stream_to(&mut self, sink: crate::author::DeltaSink) {
        self.deltas = Some(sink);
    }
    fn identity(&self) -> Option<crate::author::AuthorInfo> {
        Some(self.author.info())
    }
}

/// What stops the calls of the live worker running on a thread ([`agent::LiveWorker`]).
struct WorkerStop {
    /// Set when the desk closes: every call, now and queued, is abandoned.
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// The session's run segment: a call made for an older one (the session was restarted
    /// or rewound since it was asked, so its answer would be dropped as stale) is abandoned.
    current: std::sync::Arc<std::sync::atomic::AtomicU32>,
    /// The segment of the call in flight.
    job: std::cell::Cell<u32>,
}

std::thread_local! {
    /// The stop flags of the live worker running on this thread: a signal-like stop of the
    /// call in flight.
    static WORKER_STOP: std::cell::RefCell<Option<WorkerStop>> =
        const { std::cell::RefCell::new(None) };
}

/// Make `stop` (the desk closed) and `current` (the session's run segment) what stops
/// calls made on this thread (see [`or_signal`]).
pub(crate) fn stop_calls_on_this_thread_with(
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    current: std::sync::Arc<std::sync::atomic::AtomicU32>,
) {
    WORKER_STOP.with(|s| {
        *s.borrow_mut() = Some(WorkerStop {
            stop,
            current,
            job: std::cell::Cell::new(0),
        })
    });
}

/// The calls made on this thread from now on answer the run segment `segment`.
pub(crate) fn calls_on_this_thread_answer_segment(segment: u32) {
    WORKER_STOP.with(|s| {
        if let Some(w) = s.borrow().as_ref() {
            w.job.set(segment);
        }
    });
}

/// Was this thread's worker told to stop, or is its call for a run segment the session
/// has left? Says why.
fn worker_stopped() -> Option<&'static str> {
    WORKER_STOP.with(|s| {
        let s = s.borrow();
        let w = s.as_ref()?;
        if w.stop.load(std::sync::atomic::Ordering::SeqCst) {
            Some("the desk closed while the author was answering")
        } else if w.job.get() < w.current.load(std::sync::atomic::Ordering::SeqCst) {
            Some("the session was restarted or rewound while the author was answering")
        } else {
            None
        }
    })
}

/// `work`, or a provider error as soon as a signal is caught or the thread's live worker is
/// stopped (checked every 50 ms): a SIGTERM during a minute-long model call ends the run
/// now, not when the call returns, and quitting the desk does not leave the call running.
/// The call's future is dropped (a request in flight is abandoned, a command author's
/// process group is killed).
async fn or_signal(
    work: impl std::future::Future<Output = crate::author::Completion>,
) -> crate::author::Completion {
    if let Some(why) = worker_stopped() {
        // Not started at all (a re-ask of the repair loop after the stop).
        return crate::author::Completion::error(
            crate::author::ProviderErrorKind::Interrupted,
            why,
        );
    }
    tokio::pin!(work);
    loop {
        tokio::select! {
            c = &mut work => return c,
            _ = tokio::time::sleep(std::time::Duration::from_millis(50)) => {
                if let Some(sig) = crate::signals::caught() {
                    return crate::author::Completion::error(
                        crate::author::ProviderErrorKind::Interrupted,
                        format!("interrupted by {sig} while the author was answering"),
                    );
                }
                if let Some(why) = worker_stopped() {
                    return crate::author::Completion::error(
                        crate::author::ProviderErrorKind::Interrupted,
                        why,
                    );
                }
            }
        }
    }
}

/// How a model or command author is run (`kestrel agent`, `kestrel desk`).
#[derive(Debug, Clone, clap::Args)]
pub struct AuthorFlags {
    /// The model name sent to an OpenAI-compatible server.
    #[arg(long, default_value = "default")]
    pub model: String,
    /// Sampling temperature for a model author, from 0 to 2.
    #[arg(long, allow_negative_numbers = true, default_value_t = 0.7, value_parser = temperature)]
    pub temperature: f64,
    /// Send the exported GBNF as `grammar` (llama.cpp-style constrained decoding).
    #[arg(long)]
    pub constrained: bool,
    /// Seconds a model or command author may take for one reply (every retry included).
    #[arg(long, allow_negative_numbers = true, default_value_t = crate::author::openai::DEFAULT_TOTAL_SECS, value_parser = positive_secs)]
    pub timeout: u64,
    /// Output tokens one request to a model may generate (`max_tokens`). A re-ask asks
    /// for this less the bytes of its repair note, so it fits wherever the first ask fit.
    #[arg(long, allow_negative_numbers = true, default_value_t = crate::author::openai::DEFAULT_MAX_TOKENS, value_parser = positive_tokens)]
    pub max_tokens: u32,
    /// Seconds a model may take from the request to its first streamed token (a CPU reads
    /// a long prompt before it writes); a miss is retried, then a provider error.
    #[arg(long, allow_negative_numbers = true, default_value_t = crate::author::openai::DEFAULT_FIRST_TOKEN_SECS, value_parser = positive_secs)]
    pub first_token_timeout: u64,
    /// Leave KESTREL_API_KEY and OPENAI_API_KEY in a command author's environment (by
    /// default they are removed from it).
    #[arg(long)]
    pub pass_api_key: bool,
    /// The flags of this group (and `--profile`, where the verb has it) given on the
    /// command line, by clap id (`max_tokens`), filled from the parsed arguments
    /// ([`AuthorFlags::note_given`]): a flag left at its default is not refused where it
    /// does not apply, one given is.
    #[arg(skip)]
    pub given: Vec<&'static str>,
}

/// The highest sampling temperature: the OpenAI API's (its range is 0 to 2).
pub const MAX_TEMPERATURE: f64 = 2.0;

/// A sampling temperature: a number from 0 to [`MAX_TEMPERATURE`] (`NaN` and `-1` were
/// taken and sent to the server as they were).
pub(crate) fn temperature(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(t) if (0.0..=MAX_TEMPERATURE).contains(&t) => Ok(t),
        Ok(_) => Err(format!(
            "a temperature is from 0 to {MAX_TEMPERATURE}, the range of the OpenAI API"
        )),
        Err(_) => Err(format!("{s:?} is not a number")),
    }
}

/// A number of seconds an author may take: at least 1 (`--timeout 0` was taken, and a reply
/// that came at once was let through while any other would time out at once), at most
/// [`MAX_TIMEOUT_SECS`](crate::limits::MAX_TIMEOUT_SECS), one day (`--timeout
/// 18446744073709551615` was taken and overflowed the clock at the first wake: a panic,
/// or in the desk an author that never answered again).
pub(crate) fn positive_secs(s: &str) -> Result<u64, String> {
    use crate::limits::MAX_TIMEOUT_SECS;
    match s.trim().parse::<u64>() {
        Ok(0) => Err("a timeout is at least 1 second".into()),
        Ok(n) if n > MAX_TIMEOUT_SECS => Err(format!(
            "a timeout is at most {MAX_TIMEOUT_SECS} seconds (one day), got {n}"
        )),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{s:?} is not a whole number of seconds")),
    }
}

/// A number of output tokens: at least 1.
pub(crate) fn positive_tokens(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(0) => Err("a reply needs at least 1 output token".into()),
        Ok(n) => Ok(n),
        // A whole number too large for the count: say the bound, not that it is no number.
        Err(_) if s.trim().parse::<u128>().is_ok() => Err(format!(
            "a reply's output tokens are at most {}, got {}",
            u32::MAX,
            s.trim()
        )),
        Err(_) => Err(format!("{s:?} is not a whole number of tokens")),
    }
}

impl Default for AuthorFlags {
    fn default() -> Self {
        AuthorFlags {
            model: "default".into(),
            temperature: 0.7,
            constrained: false,
            timeout: crate::author::openai::DEFAULT_TOTAL_SECS,
            max_tokens: crate::author::openai::DEFAULT_MAX_TOKENS,
            first_token_timeout: crate::author::openai::DEFAULT_FIRST_TOKEN_SECS,
            pass_api_key: false,
            given: Vec::new(),
        }
    }
}

/// The flags of [`AuthorFlags`] by clap id and as typed, with `--profile`, and the
/// authors each applies to: (id, flag, for a command, for a script of replies).
const AUTHOR_FLAG_USE: [(&str, &str, bool, bool); 8] = [
    ("model", "--model", false, false),
    ("temperature", "--temperature", false, false),
    ("constrained", "--constrained", false, false),
    ("max_tokens", "--max-tokens", false, false),
    ("first_token_timeout", "--first-token-timeout", false, false),
    ("timeout", "--timeout", true, false),
    ("pass_api_key", "--pass-api-key", true, false),
    ("profile", "--profile", true, true),
];

impl AuthorFlags {
    /// Record which of the author flags `m` (a verb's parsed arguments) were given on the
    /// command line.
    pub fn note_given(&mut self, m: &clap::ArgMatches) {
        self.given = AUTHOR_FLAG_USE
            .iter()
            .filter(|(id, ..)| {
                // (`value_source` is asked only of ids the verb has: `desk` has no
                // `--profile`.)
                m.ids().any(|i| i.as_str() == *id)
                    && m.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
            })
            .map(|(id, ..)| *id)
            .collect();
    }

    /// The flags given that the author `kind` does not use, as typed (`--temperature`):
    /// a model's server takes them all; a command is run with `--timeout` and
    /// `--pass-api-key` and is sent the `--profile`'s prompt; a script of replies is sent
    /// nothing but is routed under the `--profile`'s menu; a saved Bus, the house agent and
    /// no agent take none (a Bus replays its own recorded profile and arm).
    pub fn not_used_by(&self, kind: FlagUser) -> Vec<&'static str> {
        AUTHOR_FLAG_USE
            .iter()
            .filter(|(id, _, command, script)| {
                self.given.contains(id)
                    && match kind {
                        FlagUser::Model => false,
                        FlagUser::Command => !command,
                        FlagUser::Script => !script,
                        FlagUser::Other => true,
                    }
            })
            .map(|(_, flag, ..)| *flag)
            .collect()
    }

    /// `Err` with the coded usage line when flags were given that the author (`kind`,
    /// named by `what`: `by a command`, `with --no-agent`) does not use: refused, as
    /// contradicting flags are, where they were dropped without a word before 2026-12-06 (a
    /// Bus replayed after `--temperature 0 --model other` reported the recorded arm, as if
    /// it had been run again so).
    pub fn refuse_unused(&self, kind: FlagUser, what: &str) -> Result<(), String> {
        let unused = self.not_used_by(kind);
        if unused.is_empty() {
            return Ok(());
        }
        let (are, them) = if unused.len() == 1 {
            ("is", "it")
        } else {
            ("are", "them")
        };
        let detail = match kind {
            FlagUser::Command => {
                "it is run with --timeout and --pass-api-key and sent the --profile's prompt; the others are for a model author, --author http(s)://HOST/v1"
            }
            FlagUser::Script => {
                "its replies are routed under the --profile's menu; the others are for a model author, --author http(s)://HOST/v1"
            }
            FlagUser::Model | FlagUser::Other => {
                "they are for a model or command author: --author http(s)://HOST/v1 or cmd:COMMAND"
            }
        };
        Err(format!(
            "error code=USAGE message={} {are} not used {what} ({detail}): leave {them} out",
            unused.join(", "),
        ))
    }

    /// The author `spec` run this way.
    pub fn spec(&self, spec: &str) -> AuthorSpec {
        AuthorSpec {
            spec: spec.to_string(),
            model: self.model.clone(),
            temperature: self.temperature,
            constrained: self.constrained,
            timeout_secs: self.timeout,
            max_tokens: self.max_tokens,
            first_token_secs: self.first_token_timeout,
            pass_api_key: self.pass_api_key,
        }
    }
}

/// Which author a flag is given to, for [`AuthorFlags::refuse_unused`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagUser {
    /// A model behind an OpenAI-compatible server.
    Model,
    /// A command run with `sh -c`.
    Command,
    /// A script of replies.
    Script,
    /// A saved Bus, the house agent, or no agent.
    Other,
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

/// What `--author` takes, for messages.
pub const AUTHOR_FORMS: &str = "http(s)://HOST/v1 (a model server), an existing .jsonl author file (a saved Bus, or a script of {\"reply\": ...} lines), or cmd:COMMAND (a command run with sh -c)";

/// Is `name` an executable file in one of `PATH`'s directories (what `sh -c name` runs)?
fn on_path(name: &str) -> bool {
    let Some(paths) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&paths).any(|d| {
        std::fs::metadata(d.join(name))
            .is_ok_and(|m| m.is_file() && (executable(&m) || cfg!(not(unix))))
    })
}

/// Has the file an execute bit (what `sh -c PATH` needs to run it)? Off unix: no.
fn executable(meta: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        false
    }
}

/// Why an existing path given as a bare author string is no command to run, as the
/// refusal's message (`None`: no such path, or an executable file that is not a Kestrel
/// document, which the bare form runs).
fn not_a_command(path: &Path, s: &str) -> Option<String> {
    use crate::cli::sniff::{self, Kind};
    let meta = std::fs::metadata(path).ok()?;
    // An executable file that starts with `#!` is a script, as the kernel runs it, even when
    // the rest is only `#` lines (which would also read as a Kestrel document of comments).
    let script = || {
        let mut head = [0u8; 2];
        std::fs::File::open(path)
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
            .is_ok_and(|()| &head == b"#!")
    };
    let (what, hint) = if meta.is_dir() {
        (Kind::Directory.describe(), String::new())
    } else if executable(&meta) && script() {
        return None;
    } else if sniff::file(path) == Kind::Kestrel {
        (
            Kind::Kestrel.describe(),
            format!("; arm a document with --plans {s}"),
        )
    } else {
        if executable(&meta) {
            return None;
        }
        (
            "a file that is not executable",
            format!("; to run it as a script write cmd:sh {s}"),
        )
    };
    Some(format!(
        "{s} is {what}, not an author: --author takes {AUTHOR_FORMS}{hint}"
    ))
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
    pub temperature: f64,
    /// Send the exported GBNF as `grammar`.
    pub constrained: bool,
    /// Seconds one reply may take.
    pub timeout_secs: u64,
    /// Output tokens one model request may generate.
    pub max_tokens: u32,
    /// Seconds to a model's first streamed token.
    pub first_token_secs: u64,
    /// Leave the API key variables in a command author's environment.
    pub pass_api_key: bool,
}

impl AuthorSpec {
    /// What the string names, or why it names nothing:
    ///
    /// 0. nothing (empty or blanks): refused;
    /// 1. `http://` or `https://`: a model server, refused if it is not a URL (no host);
    /// 2. `cmd:COMMAND`: a command (the explicit form);
    /// 3. an existing file ending in `.jsonl`: an author file;
    /// 4. a value that looks like a path — it ends in `.jsonl`, `.json` or `.txt`, or holds a
    ///    `/` and no whitespace — and is not an existing file: refused, *no such file* (a
    ///    mistyped path is never run as a shell command); an existing `.json`/`.txt` file is
    ///    refused too (it is neither an author file nor, unambiguously, a command);
    /// 5. an existing directory, or an existing file that is a Kestrel document or is not
    ///    executable: refused, with what `--author` takes (`sh -c` could only fail on it, or
    ///    worse, run a document as a script; `cmd:` runs it if that is really meant);
    /// 6. anything else (an existing executable script, a command line such as
    ///    `sh examples/command-author.sh`): a command, the old bare form.
    pub fn resolve(&self) -> Result<AuthorTarget, String> {
        let s = self.spec.trim();
        // Nothing at all: `sh -c ''` would only write nothing, a provider error at every
        // wake.
        if s.is_empty() {
            return Err(format!("--author is empty: --author takes {AUTHOR_FORMS}"));
        }
        if s.starts_with("http://") || s.starts_with("https://") {
            // A server that is not a URL (`http://`, no host) is refused now, not at every
            // wake as a connect error.
            crate::author::openai::endpoint_for(s, crate::author::openai::Api::Chat)
                .map_err(|e| format!("{e}: --author takes {AUTHOR_FORMS}"))?;
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
        // A saved Bus or a script of replies under another name (`s.bus`): what it holds
        // says what it is, where a file that is not executable was refused as no command.
        if path.is_file()
            && std::fs::metadata(path).is_ok_and(|m| !executable(&m))
            && matches!(
                crate::cli::sniff::file(path),
                crate::cli::sniff::Kind::Bus | crate::cli::sniff::Kind::ReplyScript
            )
        {
            return Ok(AuthorTarget::File(s.to_string()));
        }
        if data_ext {
            return Err(format!(
                "{s} is not a .jsonl author file; to run it as a command write cmd:{s}"
            ));
        }
        // A bare word that names a command on PATH (`llm`) is that command, whatever the
        // working directory holds; otherwise the path is looked at.
        let bare = !s.contains('/') && !s.contains(char::is_whitespace);
        if !(bare && on_path(s))
            && let Some(e) = not_a_command(path, s)
        {
            return Err(e);
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
                cfg.max_tokens = self.max_tokens.max(1);
                cfg.first_token_timeout =
                    std::time::Duration::from_secs(self.first_token_secs.max(1));
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
/// lines answered in order. Errors name the file and line; a saved Bus that does not
/// replay is refused with its own coded line (`error code=BUS ...`, `error code=REPLAY
/// ...`: [`Recorded::from_bus_file`]), the others are messages (see [`coded`]).
pub fn read_author_file(spec: &str, path: &Path) -> Result<Box<dyn TurnSource>, String> {
    let bytes = crate::limits::read_file_bounded(path, crate::limits::MAX_RECORDING_BYTES)
        .map_err(|e| format!("cannot read the author {spec}: {e}"))?;
    if let Some(e) = crate::bus::bom_refusal(&bytes) {
        return Err(format!("{spec}: {e}"));
    }
    // The wrong kind of file (a tape, a document, an empty file) says what it is; a desk's
    // session file names the Bus beside it (its agent's turns are there).
    if let Some(e) = crate::cli::sniff::not_an_author_file(path) {
        return Err(e);
    }
    let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    let v: serde_json::Value = serde_json::from_slice(first).map_err(|e| {
        format!(
            "{spec}: line 1: {}: an author file is a saved Bus or a script of {{\"reply\": ...}} lines",
            crate::bus::line_error(&e.to_string())
        )
    })?;
    if v["type"] == "session-start" {
        return Ok(Box::new(Recorded::from_bus_file(spec, &bytes)?));
    }
    let text = String::from_utf8_lossy(&bytes);
    let lines = parse_script_lines(&text).map_err(|e| format!("{spec}: {e}"))?;
    Ok(Box::new(Script::new(spec, lines)))
}

/// An error of [`AuthorSpec::open`] as the line a verb prints: a coded line as it is (a
/// saved Bus's `code=BUS` or `code=REPLAY`), any other message as `code=USAGE`.
pub fn coded(e: String) -> String {
    if e.starts_with("error code=") {
        e
    } else {
        format!("error code=USAGE message={e}")
    }
}

/// The key of a script line's object that appears twice, `reply` or `wake`: serde_json's
/// `Value` keeps the last (`{"reply":"STAND-DOWN x","reply":"PLAN"}` routed `PLAN`), where
/// the tape and Bus readers refuse a repeated key.
fn repeated_script_key(line: &str) -> Option<&'static str> {
    use serde::de::IgnoredAny;
    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Keys {
        reply: Option<IgnoredAny>,
        wake: Option<IgnoredAny>,
    }
    let e = serde_json::from_str::<Keys>(line).err()?;
    let m = e.to_string();
    ["reply", "wake"]
        .into_iter()
        .find(|k| m.starts_with(&format!("duplicate field `{k}`")))
}

/// Read a script of `{"reply": "..."}` lines (one reply per ask). Errors name the line.
pub fn parse_script(text: &str) -> Result<Vec<String>, String> {
    Ok(parse_script_by_wake(text)?
        .into_iter()
        .map(|(_, r)| r)
        .collect())
}

/// Read a script of `{"reply": "...", "wake": "W"}` lines: the wake a reply answers, if it
/// names one (see [`scripted_by_wake`]). Errors name the line.
pub fn parse_script_by_wake(text: &str) -> Result<Vec<(Option<String>, String)>, String> {
    Ok(parse_script_lines(text)?
        .into_iter()
        .map(|l| (l.wake, l.reply))
        .collect())
}

/// [`parse_script_by_wake`], each reply with the file line it was read from (blank lines
/// are skipped), so a note about it can name the line ([`Script`]).
pub fn parse_script_lines(text: &str) -> Result<Vec<ScriptLine>, String> {
    if let Some(e) = crate::bus::bom_refusal(text.as_bytes()) {
        return Err(e.to_string());
    }
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(l)
            .map_err(|e| format!("line {}: {}", i + 1, crate::bus::line_error(&e.to_string())))?;
        if let Some(k) = repeated_script_key(l) {
            return Err(format!(
                "line {}: field `{k}` appears twice (a key may appear once in an object)",
                i + 1
            ));
        }
        let r = v["reply"]
            .as_str()
            .ok_or_else(|| format!("line {}: expected {{\"reply\": \"...\"}}", i + 1))?;
        let wake = match &v["wake"] {
            serde_json::Value::Null => None,
            serde_json::Value::String(w) => Some(w.clone()),
            _ => return Err(format!("line {}: \"wake\" must be a wake's name", i + 1)),
        };
        out.push(ScriptLine {
            line: Some(i + 1),
            wake,
            reply: r.to_string(),
        });
    }
    Ok(out)
}
