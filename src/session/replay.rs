//! Holding a replay to its recording.
//!
//! `kestrel agent --author SAVED.bus.jsonl` re-runs the session a saved Bus records: the same
//! tape, 1R, fill model and opening documents, with the recorded turns handed back at their
//! wakes. A recorded Bus replays byte for byte by design (docs/turns.md, "Capture and replay
//! on the Bus"), so the replay is held to the recording, and a replay that is not the
//! recorded session is refused (`exit 2`) rather than reported with a new determinism hash:
//!
//! - **Whole** ([`Recording::whole`]): a complete Bus ends with `session-end`. One that stops
//!   before it was cut off (a killed run's temporary file, a partial copy, `head -n`):
//!   `error code=BUS`. Before 2026-12-06 it replayed with exit 0 as another session.
//! - **The same session** ([`Held::opening`]): the `session-start` the replay writes (tape,
//!   date, 1R, fill model) and the documents it arms at the open (`--plans`) must be the
//!   recording's: `error code=BUS` naming the recorded value and the one given.
//! - **Event for event** ([`Held::verdict`]): every line the replay writes is compared with
//!   the recording's line of the same number as it is written; the first that differs (an
//!   order, fill, veto or plan state deleted or edited, a line added, the recording longer
//!   or shorter than the replay) is `error code=BUS-DIVERGED line=N`, quoting both lines.
//!   Nothing in a replayed Bus legitimately differs: wall-clock figures (an author's
//!   latency, its streaming) are never on the Bus, and a recorded turn's attempts are
//!   written back as recorded.
//!
//! A desk's Bus (its turns at the desk, wake `desk`, or its documents with an `owner`: a
//! person and an agent shared the book) is not held so: the person's acts are in the session
//! file, not the Bus, and a headless replay hands back only the agent's turns (docs/turns.md);
//! it is replayed as its agent's answers over the person's documents at the open
//! ([`Recording::persons_at_desk`]), seated as the desk seated them where an agent sat there
//! ([`seated_desk`]), with a warning where it is known to be another session than the
//! desk's (docs/desk.md, "A desk's Bus, headless").

use crate::bus::{Event, parse_bus};
use crate::turn::admit::ReplayGate;
use crate::turn::{AuthorKind, Outcome};
use std::io::Write;
use std::sync::{Arc, Mutex};

/// The exit code of a replay refused as not the recorded session.
pub const EXIT_REFUSED: i32 = 2;

/// The codes of a refused recording (a saved Bus cut, edited, not an event stream or not
/// the session it claims to record): every verb that reads one exits [`EXIT_REFUSED`] on
/// them (`cli::flags::exit_of`, `grade::GradeError::exit_code`).
pub const REFUSED_RECORDING: [&str; 3] = ["BUS", "BUS-DIVERGED", "REPLAY"];

/// How much of a line a refusal quotes (each side).
const QUOTED: usize = 160;

/// A saved Bus given to a replay: its lines, as they will be compared.
#[derive(Debug)]
pub struct Recording {
    /// The file as the user named it.
    path: String,
    /// Its lines, without their line ends.
    lines: Vec<String>,
    events: Vec<Event>,
}

impl Recording {
    /// Read a saved Bus (one [`crate::session::Recorded::from_bus`] accepted). `None` when
    /// the bytes are not a Bus.
    pub fn new(path: &str, bytes: &[u8]) -> Option<Recording> {
        let events = parse_bus(bytes).ok()?;
        let text = std::str::from_utf8(bytes).ok()?;
        Some(Recording {
            path: path.to_string(),
            lines: text.lines().map(str::to_string).collect(),
            events,
        })
    }

    /// Is it a desk's Bus: a turn written at the desk (wake `desk`), or a document armed by
    /// its `owner` (a person and an agent flew one book)? A headless session writes neither.
    pub fn is_desk(&self) -> bool {
        desk_written(&self.events)
    }

    /// The person's turns at a desk's session: the documents they armed at the open, in
    /// order (the texts of the person's supersede turns at the desk, [`ReplayGate::persons`],
    /// recorded before the first View was delivered: `--plans`, or the example plans bare
    /// `kestrel` arms, each armed as the person's turn at the open; a headless replay arms
    /// them at its open, as `--plans` would), and how many turns are theirs, at the open and
    /// after. One pass of the replay gate.
    pub fn persons_at_desk(&self) -> (Vec<(AuthorKind, String)>, usize) {
        let persons = self.persons();
        let opening = persons
            .iter()
            .take_while(|(viewed, _)| !viewed)
            .filter(|(_, t)| matches!(t.outcome, Outcome::Supersede { .. }))
            .map(|(_, t)| (t.author, t.kestrel.clone()))
            .collect();
        (opening, persons.len())
    }

    /// Did an agent sit at the desk whose Bus this is ([`seated_desk`])? Then a headless
    /// replay seats the desk's owners (`Session::seat_desk`).
    pub fn seated_desk(&self) -> bool {
        seated_desk(&self.events)
    }

    /// The person's turns, in order, each with whether a View had been delivered before it
    /// (`false`: at the open).
    fn persons(&self) -> Vec<(bool, &crate::turn::RoutedTurn)> {
        let mut gate = ReplayGate::default();
        let mut viewed = false;
        let mut out = Vec::new();
        for (n, ev) in self.events.iter().enumerate() {
            viewed |= matches!(ev, Event::ViewDelivered { .. });
            if let Event::Turn { wake, turn, .. } = ev
                && gate.persons(wake, turn)
            {
                out.push((viewed, &**turn));
            }
            // Held to the record already (the author was read through the same gate).
            if gate.record(n + 1, ev).is_err() {
                break;
            }
        }
        out
    }

    /// Does it name an owner on any `document-armed` (an agent sat at the desk)?
    pub fn names_owners(&self) -> bool {
        self.events
            .iter()
            .any(|e| matches!(e, Event::DocumentArmed { owner: Some(_), .. }))
    }

    /// Is it a `kestrel run` Bus: no wake fired, no View delivered, no turn? A headless
    /// agent's session always has its open wake, so such a Bus has no author to replay:
    /// `run` re-runs it. Before 2026-12-06 it was refused as "arms no document: give the
    /// --plans", then, with them, as edited or recorded on another tape (neither was so).
    pub fn run_bus(&self) -> Result<(), String> {
        let authored = self.events.iter().any(|e| {
            matches!(
                e,
                Event::WakeFired { .. } | Event::ViewDelivered { .. } | Event::Turn { .. }
            )
        });
        if authored {
            return Ok(());
        }
        Err(format!(
            "error code=BUS message={}: this Bus was written by `kestrel run`: it has no wake and no agent turn, so there is no author to replay; `kestrel run` with its tape and --plans re-runs it (the same Bus, the same determinism hash)",
            self.path
        ))
    }

    /// Does it end with `session-end`, as every complete Bus does (a run played to the end
    /// of its tape, or stopped by a signal: then an `error` and `session-end`)? The refusal
    /// names the last line.
    pub fn whole(&self) -> Result<(), String> {
        match self.cut() {
            None => Ok(()),
            Some(why) => Err(format!(
                "error code=BUS message={why}; it cannot replay its session"
            )),
        }
    }

    /// When it does not end with `session-end`, what to say of it: `F: the Bus ends at line N
    /// without session-end: it was cut off (a killed run or a partial copy)`. `whole`'s
    /// refusal and `kestrel errors report`'s warning both say it.
    pub fn cut(&self) -> Option<String> {
        cut_off(&self.path, &self.events)
    }

    /// Hold a replay to this recording: the Bus sink `inner` (the `--bus` file, if any)
    /// wrapped in a writer that compares each line the replay writes with the recording's,
    /// and the [`Held`] that reads the outcome.
    pub fn hold(self, inner: Option<Box<dyn Write>>) -> (Box<dyn Write>, Held) {
        let state = Arc::new(Mutex::new(Compared::default()));
        let rec = Arc::new(self);
        let w = Comparing {
            inner,
            rec: rec.clone(),
            state: state.clone(),
        };
        (Box::new(w), Held { rec, state })
    }

    /// The documents armed at the open: the `document-armed` events after the first
    /// `session-start`, before anything else that is not their `plan-state`. (BLAKE3, plans.)
    fn opening_documents(events: &[Event]) -> Vec<(String, Vec<String>)> {
        events
            .iter()
            .skip(1)
            .take_while(|e| matches!(e, Event::DocumentArmed { .. } | Event::PlanState { .. }))
            .filter_map(|e| match e {
                Event::DocumentArmed { blake3, plans, .. } => Some((blake3.clone(), plans.clone())),
                _ => None,
            })
            .collect()
    }
}

/// [`Recording::cut`] of a Bus file's events (one per line, as `parse_bus` reads them), for
/// a reader that has them already.
pub fn cut_off(path: &str, events: &[Event]) -> Option<String> {
    if matches!(events.last(), Some(Event::SessionEnd { .. })) {
        return None;
    }
    Some(format!(
        "{path}: the Bus ends at line {} without session-end: it was cut off (a killed run or a partial copy)",
        events.len()
    ))
}

/// Is `events` a desk's Bus ([`Recording::is_desk`]): a turn written at the desk (wake
/// `desk`), or a document armed by its `owner`. A desk's Bus ends where the person quit, so
/// its missing `session-end` is no cut.
pub fn desk_written(events: &[Event]) -> bool {
    events.iter().any(|e| match e {
        Event::Turn { wake, .. } => wake == "desk",
        Event::DocumentArmed { owner, .. } => owner.is_some(),
        _ => false,
    })
}

/// Is `events` a desk's Bus on which an agent sat: written at the desk (its `session-start`
/// names no author, as a headless agent's does; a turn at wake `desk` or a document armed by
/// its `owner`) with an agent seated (a document names its owner, which the desk writes only
/// with an agent seated, or a View was delivered to one)? A replay of its agent's turns
/// then seats the desk's owners: the person's documents at the open are the person's, the
/// agent's supersede, STAND-DOWN and CANCEL reach only its own plans (docs/desk.md, "A
/// desk's Bus, headless"). `kestrel agent --author` and `grade --agent` both ask it.
pub fn seated_desk(events: &[Event]) -> bool {
    let headless = matches!(
        events.first(),
        Some(Event::SessionStart {
            author: Some(_),
            ..
        })
    );
    let mut desk = false;
    let mut seated = false;
    for e in events {
        match e {
            Event::Turn { wake, .. } => desk |= wake == crate::session::owner::DESK_WAKE,
            Event::DocumentArmed { owner: Some(_), .. } => (desk, seated) = (true, true),
            Event::ViewDelivered { .. } => seated = true,
            _ => {}
        }
    }
    !headless && desk && seated
}

/// What the comparison has seen.
#[derive(Debug, Default)]
struct Compared {
    /// The replay's line being written (up to its line end).
    partial: Vec<u8>,
    /// The replay's lines so far (the opening ones are kept whole for [`Held::opening`]).
    written: usize,
    opening: Vec<String>,
    /// The first line that differs: (line number, the replay's line).
    diverged: Option<(usize, String)>,
}

/// A Bus sink that compares as it writes ([`Recording::hold`]). It never fails a write of
/// its own: a difference is kept for [`Held::verdict`], and the Bus is written on.
struct Comparing {
    inner: Option<Box<dyn Write>>,
    rec: Arc<Recording>,
    state: Arc<Mutex<Compared>>,
}

/// Lines kept whole at the start of a replay: its `session-start` and opening documents.
const OPENING_LINES: usize = 64;

impl Write for Comparing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(w) = self.inner.as_mut() {
            w.write_all(buf)?;
        }
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        for &b in buf {
            if b != b'\n' {
                st.partial.push(b);
                continue;
            }
            let line = String::from_utf8_lossy(&std::mem::take(&mut st.partial)).into_owned();
            let n = st.written;
            st.written += 1;
            if st.diverged.is_none() && self.rec.lines.get(n) != Some(&line) {
                st.diverged = Some((n + 1, line.clone()));
            }
            if n < OPENING_LINES {
                st.opening.push(line);
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.inner.as_mut() {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

/// A replay held to its recording: read once the opening is written, and at the end.
pub struct Held {
    rec: Arc<Recording>,
    state: Arc<Mutex<Compared>>,
}

impl Held {
    fn state(&self) -> std::sync::MutexGuard<'_, Compared> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Is it a desk's Bus ([`Recording::is_desk`])?
    pub fn is_desk(&self) -> bool {
        self.rec.is_desk()
    }

    /// Once the session is open (its `session-start` and opening documents written, nobody
    /// asked yet): is it the recorded session? The recording's tape, date, 1R and fill model
    /// against the replay's, then (not for a desk's Bus, whose opening documents were the
    /// person's turns) the documents armed at the open. The refusal names each recorded value,
    /// the one given, and how to run the replay.
    pub fn opening(&self) -> Result<(), String> {
        let st = self.state();
        let replayed: Vec<Event> = st
            .opening
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let mut bad = Vec::new();
        if let (
            Some(Event::SessionStart {
                tape,
                date,
                fill_model,
                r_usd,
                ..
            }),
            Some(Event::SessionStart {
                tape: t,
                date: d,
                fill_model: f,
                r_usd: r,
                ..
            }),
        ) = (self.rec.events.first(), replayed.first())
        {
            if (tape, date) != (t, d) {
                bad.push(format!(
                    "it was recorded on tape {tape} ({date}), not {t} ({d}): give that tape with --tape"
                ));
            }
            if r_usd != r {
                bad.push(format!(
                    "it was recorded at 1R = ${r_usd}, not ${r}: give --r-usd {r_usd}"
                ));
            }
            if fill_model != f {
                bad.push(format!(
                    "it was recorded with the fill model {fill_model}, not {f}: give --fill {fill_model}"
                ));
            }
        }
        if !self.rec.is_desk() {
            let want = Recording::opening_documents(&self.rec.events);
            let got = Recording::opening_documents(&replayed);
            if want != got {
                bad.push(format!(
                    "it armed {} at the open, this replay arms {}: give the --plans it was recorded with, in the same order",
                    documents(&want),
                    documents(&got)
                ));
            }
        }
        if bad.is_empty() {
            return Ok(());
        }
        Err(format!(
            "error code=BUS message={}: this is not the session the Bus records: {}",
            self.rec.path,
            bad.join("; ")
        ))
    }

    /// Once the replay has ended (`session-end` written): did it write the recording, line
    /// for line? The refusal names the first line that differs and quotes both (shortened).
    pub fn verdict(&self) -> Result<(), String> {
        let st = self.state();
        let at = match &st.diverged {
            Some((n, line)) => Some((*n, Some(line.clone()))),
            // The replay ended before the recording did.
            None if st.written < self.rec.lines.len() => Some((st.written + 1, None)),
            None => None,
        };
        let Some((n, replayed)) = at else {
            return Ok(());
        };
        let recorded = self.rec.lines.get(n - 1);
        let quote = |l: Option<&String>, none: &str| match l {
            Some(l) => crate::author::excerpt(l, QUOTED),
            None => none.to_string(),
        };
        Err(format!(
            "error code=BUS-DIVERGED line={n} message={}: line {n}: the replay wrote another event than the recording: recorded {}; replayed {}: the Bus is not the record of this session (it was edited, or recorded on another tape or by another version)",
            self.rec.path,
            quote(recorded, "nothing (the recording ends before it)"),
            quote(replayed.as_ref(), "nothing (the replay ended before it)"),
        ))
    }
}

/// `2 documents (plans a, b; plans c)`, `no document`.
fn documents(docs: &[(String, Vec<String>)]) -> String {
    match docs {
        [] => "no document".into(),
        _ => {
            let plans: Vec<String> = docs
                .iter()
                .map(|(h, p)| {
                    let names = if p.is_empty() {
                        "no plan".to_string()
                    } else {
                        format!("plans {}", p.join(", "))
                    };
                    format!("{names}, BLAKE3 {}…", &h[..h.len().min(12)])
                })
                .collect();
            format!(
                "{} ({})",
                if docs.len() == 1 {
                    "1 document".to_string()
                } else {
                    format!("{} documents", docs.len())
                },
                plans.join("; ")
            )
        }
    }
}
