//! A saved session's agent as a GRADE subject (`docs/grade.md`, "Agents").
//!
//! A saved session is a Bus file (JSON Lines) written by `kestrel agent`, `kestrel run` or
//! the desk. Its `turn` events are the agent's routed turns, wake by wake. Grading the agent
//! replays those turns over other tapes: each tape runs a [`Session`] whose author answers the
//! `n`-th ask at wake `W` with the `n`-th recorded turn at `W` (its canonical Kestrel), at the
//! wake's instant, and passes when `W`'s recorded turns run out.
//!
//! Attribution is by plan name (the Blotter's key): a plan belongs to the turn that first
//! armed it (its wake, and the View that turn answered). A plan re-sent by later turns keeps
//! that attribution.

use std::collections::{BTreeMap, VecDeque};
use std::io::Cursor;

use crate::bus::{Bus, Event, parse_bus};
use crate::engine::EngineConfig;
use crate::lang::ast::{Document, StatementKind};
use crate::lang::{self, Mode};
use crate::market::{TapeEvent, TapeHeader, TapeReader, Ts, write_tape};
use crate::session::{Answer, Headless, Reader, RunConfig, Session, TurnSource, WakeAsk};
use crate::turn::repair::{self, Ask, RepairPolicy};
use crate::turn::{AuthorKind, Outcome, Profile, Reply, TurnContext};

use super::GradeError;

/// A plan as the agent first armed it.
#[derive(Debug, Clone)]
pub struct Intro {
    /// Plan name.
    pub name: String,
    /// The wake whose turn armed it.
    pub wake: String,
    /// The View that turn answered (the last one delivered at that wake before the turn).
    pub view: String,
    /// The turn's document (the plan, its ARM targets and the USING they read).
    pub doc: Document,
}

/// A saved session read for grading: the agent's turns, wake by wake.
#[derive(Debug, Clone)]
pub struct AgentSession {
    /// Path as given.
    pub path: String,
    /// BLAKE3 of the file (part of the job, so shards of different sessions never merge).
    pub blake3: String,
    /// The profile the turns were answered under (the first turn's).
    pub profile: Profile,
    /// Documents armed before the first turn (`--plans` of `kestrel agent`): replayed as
    /// context, never graded.
    pub initial: Vec<Document>,
    /// A desk's Bus on which an agent sat ([`crate::session::replay::seated_desk`]): the
    /// texts of `initial`, the person's documents, which each replay arms as the desk did,
    /// as the person's, with the agent's supersede, STAND-DOWN and CANCEL reaching only its
    /// own plans (`Session::seat_desk`). `None`: a headless session's Bus, one book.
    pub persons: Option<Vec<String>>,
    /// Wake name → the recorded turns' canonical Kestrel, in order (empty for a turn that
    /// carried no Kestrel: invalid, truncated, provider error; replayed as a pass).
    pub replies: BTreeMap<String, Vec<String>>,
    /// Wake name → how long after its View each recorded turn acted, in tape ms (0 for a
    /// headless session's; a desk's live author, or a person accepting in co-pilot, took
    /// longer). The replay keeps the delay: the turn acts that long after the wake.
    pub delays: BTreeMap<String, Vec<u32>>,
    /// Plans in the order the agent first armed them.
    pub intros: Vec<Intro>,
}

fn bad(path: &str, m: impl std::fmt::Display) -> GradeError {
    GradeError::new("GRADE", format!("{path}: {m}"))
}

impl AgentSession {
    /// Read a saved session (a Bus whose first event is `session-start`).
    pub fn from_bus(path: &str, bytes: &[u8]) -> Result<AgentSession, GradeError> {
        let events = parse_bus(bytes).map_err(|(line, e)| match line {
            // The whole file (not UTF-8, a byte-order mark), not one of its lines.
            0 => bad(path, format!("not a saved session's Bus: {e}")),
            // A bad line is a refused recording, `code=BUS`, as `agent --author` and
            // `errors report` say it (it was `code=GRADE` here, the same exit 2).
            _ => GradeError::new(
                "BUS",
                format!("{path}: line {line}: not a saved session's Bus line: {e}"),
            ),
        })?;
        if !matches!(events.first(), Some(Event::SessionStart { .. })) {
            return Err(bad(
                path,
                "not a saved session: its first line is not a session-start event (pass the Bus written by `kestrel agent --bus`, `kestrel run` or the desk)",
            ));
        }
        // A headless session's Bus cut off before its `session-end` (a killed run, a partial
        // copy) is refused as `agent --author` refuses it: graded, it was a smaller agent
        // (the turns after the cut gone) with no word. A desk's Bus ends where the person quit.
        if !crate::session::replay::desk_written(&events)
            && let Some(why) = crate::session::replay::cut_off(path, &events)
        {
            return Err(GradeError::new(
                "BUS",
                format!("{why}: a saved session that does not replay is not graded"),
            ));
        }
        // Every record is held to what a replay of the session holds it to (the wake a
        // turn names, each turn admitted again, each armed document against its hash): a
        // Bus that `agent --author` or `desk --open` refuses is not graded either.
        let mut gate = crate::turn::admit::ReplayGate::default();
        // The person's turns at the desk (what they typed, and the documents the desk armed
        // for them at the open), by Bus line: they are not the agent's.
        let mut persons = std::collections::BTreeSet::new();
        let replayable = events
            .iter()
            .enumerate()
            .try_for_each(|(n, ev)| {
                if let Event::Turn { wake, turn, .. } = ev
                    && gate.persons(wake, turn)
                {
                    persons.insert(n + 1);
                }
                gate.record(n + 1, ev).map(|_| ())
            })
            .and_then(|()| gate.finish());
        if let Err(e) = replayable {
            return Err(GradeError::new(
                crate::turn::admit::ReplayError::CODE,
                format!(
                    "{path}: line {}: {} (rule {}): a saved session that does not replay is not graded",
                    e.line, e.message, e.rule
                ),
            ));
        }
        let desk = crate::session::replay::seated_desk(&events);
        let mut s = AgentSession {
            path: path.to_string(),
            blake3: blake3::hash(bytes).to_hex().to_string(),
            profile: Profile::AuthoringV2,
            initial: Vec::new(),
            persons: desk.then(Vec::new),
            replies: BTreeMap::new(),
            delays: BTreeMap::new(),
            intros: Vec::new(),
        };
        let mut turns = 0usize;
        let mut last_view: Option<(String, String)> = None;
        let mut viewed_at: Option<Ts> = None;
        for (n, ev) in events.into_iter().enumerate() {
            match ev {
                Event::DocumentArmed { text, .. } if turns == 0 => {
                    let doc = lang::check(&text, Mode::File)
                        .map_err(|_| bad(path, "a document armed at the open does not parse"))?;
                    s.initial.push(doc);
                    if let Some(p) = s.persons.as_mut() {
                        p.push(text);
                    }
                }
                Event::ViewDelivered { ts, wake, view, .. } => {
                    last_view = Some((wake, view));
                    viewed_at = Some(ts);
                }
                Event::Turn { ts, wake, turn: t } => {
                    // A person's turns (the desk's editor, and the documents armed for
                    // them at the open, which are context above) are not the agent's.
                    if persons.contains(&(n + 1)) {
                        continue;
                    }
                    if turns == 0 {
                        s.profile = t.profile;
                    }
                    turns += 1;
                    s.replies
                        .entry(wake.clone())
                        .or_default()
                        .push(t.kestrel.clone());
                    let delay = viewed_at.map_or(0, |v| ts.0.saturating_sub(v.0));
                    s.delays.entry(wake.clone()).or_default().push(delay);
                    if let Outcome::Supersede { .. } = t.outcome {
                        let Some(doc) = t.document() else {
                            return Err(bad(path, "a supersede turn's Kestrel does not parse"));
                        };
                        let view = match &last_view {
                            Some((w, v)) if *w == wake => v.clone(),
                            _ => "default".to_string(),
                        };
                        for st in &doc.statements {
                            if let StatementKind::Plan(p) = &st.kind
                                && !s.intros.iter().any(|i| i.name == p.name.text)
                            {
                                s.intros.push(Intro {
                                    name: p.name.text.clone(),
                                    wake: wake.clone(),
                                    view: view.clone(),
                                    doc: doc.clone(),
                                });
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        if turns == 0 {
            return Err(bad(
                path,
                "the session has no agent turns (only a person's, or none): there is no agent to grade",
            ));
        }
        Ok(s)
    }

    /// The wakes that have recorded turns, sorted.
    pub fn wakes(&self) -> Vec<String> {
        self.replies.keys().cloned().collect()
    }

    /// The Views the agent's plan-arming turns answered, sorted and deduplicated.
    pub fn views(&self) -> Vec<String> {
        let mut v: Vec<String> = self.intros.iter().map(|i| i.view.clone()).collect();
        v.sort();
        v.dedup();
        v
    }
}

/// The agent's author in a replay: the `n`-th ask at wake `W` gets the `n`-th recorded turn
/// at `W`; a pass once they run out.
struct WakeScript {
    queues: BTreeMap<String, VecDeque<(String, u32)>>,
}

impl TurnSource for WakeScript {
    fn answer(&mut self, ask: &WakeAsk, ctx: &TurnContext) -> Answer {
        let (text, delay) = self
            .queues
            .get_mut(&ask.wake)
            .and_then(VecDeque::pop_front)
            .unwrap_or_default();
        let mut once = Some(text);
        let mut write = |_: &Ask| Reply::Text(once.take().unwrap_or_default());
        Answer {
            run: repair::drive(&mut write, ctx, RepairPolicy::default()),
            // The recorded latency, on this tape's clock.
            at: (delay > 0).then(|| Ts(ask.ts.0.saturating_add(delay))),
            rejected: None,
        }
    }
    fn name(&self) -> String {
        "recorded agent".into()
    }
}

/// Replay the agent over one tape; the Bus keeps its events (the caller reads when each
/// plan was armed).
pub fn replay(
    agent: &AgentSession,
    h: &TapeHeader,
    events: &[TapeEvent],
    engine: EngineConfig,
) -> Result<Bus, GradeError> {
    let mut head = Vec::new();
    write_tape(&mut head, h, std::iter::empty())
        .map_err(|e| GradeError::new("TAPE", format!("{}: {e}", h.name)))?;
    let reader = TapeReader::new(Box::new(Cursor::new(head)) as Reader)
        .map_err(|e| super::tape_error(&h.name, &e))?;
    let cfg = RunConfig {
        engine,
        profile: agent.profile,
        author: AuthorKind::File,
        open_wake: true,
        view_request_cap: None,
    };
    let author = WakeScript {
        queues: agent
            .replies
            .iter()
            .map(|(w, r)| {
                let d = agent.delays.get(w);
                let q = r
                    .iter()
                    .enumerate()
                    .map(|(i, t)| (t.clone(), d.and_then(|d| d.get(i)).copied().unwrap_or(0)))
                    .collect();
                (w.clone(), q)
            })
            .collect(),
    };
    // A desk's book: the person's documents arm as the person's turns at the open, not as
    // the author's starting book (which its first supersede would replace).
    let run = Headless {
        bus: Bus::new(None).keeping(),
        docs: match agent.persons {
            Some(_) => Vec::new(),
            None => agent.initial.clone(),
        },
        author: Some(Box::new(author)),
    };
    let mut s = Session::headless(&h.name, reader, cfg, run)
        .map_err(|e| GradeError::new("TAPE", format!("{}: {e}", h.name)))?;
    if let Some(persons) = &agent.persons {
        let persons = persons
            .iter()
            .map(|t| (AuthorKind::File, t.clone()))
            .collect();
        s.seat_desk(persons)
            .map_err(|e| GradeError::new("GRADE", format!("{}: {e}", agent.path)))?;
    }
    for (i, ev) in events.iter().enumerate() {
        s.feed(ev, events.get(i + 1).map(TapeEvent::ts));
    }
    Ok(s.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::market::{Px, open_tape};
    use crate::session::{Run, scripted};
    use crate::turn::{WakePhase, route};

    fn trend_tape() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tapes/trend-2025-04-09-s1.jsonl")
    }

    /// A session on the bundled trend tape, 1R = $1000, the OPEN wake on.
    fn trend_session(author: AuthorKind) -> Run<std::io::BufReader<std::fs::File>> {
        let cfg = RunConfig {
            engine: EngineConfig::strict(Px::from_cents(100_000)),
            profile: Profile::AuthoringV2,
            author,
            open_wake: true,
            view_request_cap: None,
        };
        Run::new(
            open_tape(&trend_tape()).unwrap(),
            cfg,
            &[],
            Bus::new(None).keeping(),
        )
        .unwrap()
    }

    /// The agent's turns are read wake by wake; a person's turn on the same Bus is not the
    /// agent's and is neither replayed nor counted.
    #[test]
    fn reads_the_agents_turns_and_skips_a_persons() {
        let mut s = trend_session(AuthorKind::File);
        let mut author = scripted(
            "script",
            vec![
                "PLAN mine budget 0.1R ttl 10:00\n  WHEN time >= 09:40\n  DO buy 1 shares @ ask\n"
                    .into(),
            ],
        );
        let mut human_done = false;
        while !s.is_done() {
            for w in s.step().unwrap() {
                s.wake(&w, &mut author);
                if !human_done {
                    human_done = true;
                    let ctx =
                        TurnContext::new(WakePhase::Mid, Profile::AuthoringV2, AuthorKind::Human);
                    let text = "PLAN theirs budget 0.1R ttl 10:00\n  WHEN time >= 09:41\n  DO buy 1 shares @ ask\n";
                    let t = route(&Reply::Text(text.into()), &ctx);
                    // As the desk does: the person's document is armed, then the turn
                    // recorded (`Session::desk_turn`).
                    s.add_as(&t.document().expect("a supersede"), Some("you"));
                    s.record_human(w.ts, "desk", t, text);
                }
            }
        }
        let bus = s.finish();
        let bytes: Vec<u8> = bus
            .events()
            .iter()
            .flat_map(crate::bus::canonical_line)
            .collect();
        let a = AgentSession::from_bus("s.jsonl", &bytes).unwrap();
        let names: Vec<&str> = a.intros.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["mine"]);
        assert_eq!(a.intros[0].wake, "open");
        assert_eq!(a.intros[0].view, "default");
        assert_eq!(a.wakes(), ["open"]);
        assert_eq!(a.replies["open"].len(), 1);
        assert!(a.replies["open"][0].starts_with("PLAN mine"));
        assert_eq!(
            a.delays["open"],
            [0],
            "a headless turn acts at the wake's instant"
        );
    }

    /// A turn that arrived late (a desk's live author) is replayed with the same latency:
    /// on the recorded tape its plan arms at the same instant as it did live.
    #[test]
    fn a_late_answer_is_replayed_with_its_latency() {
        let tape = trend_tape();
        let mut s = trend_session(AuthorKind::Model);
        let plan =
            "PLAN late budget 0.1R ttl 11:00\n  WHEN time >= 09:40\n  DO buy 1 shares @ ask\n";
        let mut asked = None;
        let arrive = Ts::hms(9, 47, 0, 0);
        while !s.is_done() {
            let fired = s.step().unwrap();
            for w in &fired {
                if let Some((_, ctx)) = s.ask(w) {
                    asked = Some((w.ts, ctx));
                }
            }
            // The reply reaches the desk at 09:47 (the tape did not wait).
            if let Some((_, ctx)) = asked.as_ref()
                && s.awaiting().is_some()
                && s.engine.market().now().is_some_and(|t| t >= arrive)
            {
                let mut once = Some(plan.to_string());
                let mut w = |_: &Ask| Reply::Text(once.take().unwrap_or_default());
                let run = repair::drive(&mut w, ctx, RepairPolicy::default());
                let now = s.engine.market().now().unwrap();
                assert!(s.resolve(now, run).is_none());
            }
        }
        let (open_ts, _) = asked.unwrap();
        let live = s.finish();
        let armed_at = |b: &Bus| {
            b.events().iter().find_map(|e| match e {
                Event::DocumentArmed { ts, plans, .. } if plans.iter().any(|p| p == "late") => {
                    Some(*ts)
                }
                _ => None,
            })
        };
        let live_armed = armed_at(&live).unwrap();
        assert!(live_armed >= arrive);
        let bytes: Vec<u8> = live
            .events()
            .iter()
            .flat_map(crate::bus::canonical_line)
            .collect();
        let a = AgentSession::from_bus("s.jsonl", &bytes).unwrap();
        assert_eq!(a.delays["open"], [live_armed.0 - open_ts.0]);
        let (h, events) = crate::market::read_tape_file(&tape).unwrap();
        let replayed = replay(
            &a,
            &h,
            &events,
            EngineConfig::strict(Px::from_cents(100_000)),
        )
        .unwrap();
        assert_eq!(armed_at(&replayed), Some(live_armed));
    }
}
