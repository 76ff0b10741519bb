//! The agent's seat: who answers the session's wakes, and how, without the tape waiting.
//!
//! Every agent sits in the [`Session`](crate::session::Session) and is asked
//! at every WAKE it fires (the OPEN wake first), with the View that wake delivers: the same
//! `view-delivered`, `repair` and `turn` events a headless `kestrel agent` run writes.
//!
//! - A **script** (the bundled house agent, `--agent FILE`, or a saved Bus given with
//!   `--author FILE.jsonl`) has already thought: in autopilot it answers inline at the
//!   wake's instant, so a replay at any speed gives the same Bus. In co-pilot its answer is
//!   held and proposed; the person accepts (it acts at the tape point of the accept) or
//!   rejects (a `turn-rejected` event; nothing routes).
//! - A **live** author (an OpenAI-compatible server or a command, `--author URL|CMD`) runs
//!   on its own worker thread: each wake is sent out as a call, the tape keeps moving, the
//!   text streams into the Journal pane as it is written, and the routed answer acts at the
//!   tape point it arrives (wakes in between are logged as suppressed: the author is busy).
//!   In co-pilot the answer is proposed first, as above.
//!
//! Answers, rejections, co-pilot switches and attach / detach are acts: recorded with their
//! tape point in the session file, so `kestrel desk --open` replays them to the same hash.

use crate::author::DeltaSink;
use crate::session::{self, AuthorSpec, TurnSource, WakeAsk};
use crate::turn::TurnContext;
use crate::turn::repair::RepairRun;
use std::sync::Arc;
use std::sync::mpsc;

/// The agent in a run's seat: a script (or a recording) answers inline on the tape thread,
/// having already thought; a live author answers off it, on its [`LiveWorker`].
pub enum Seat {
    /// Answers inline at the wake's instant (unless held for co-pilot).
    Script(Box<dyn TurnSource>),
    /// Answers off the tape thread: every wake is a call.
    Remote,
}

/// An act of the seated agent, applied at a tape point like any act and recorded in the
/// session file, so `kestrel desk --open` replays it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "agent", rename_all = "kebab-case")]
pub enum AgentAct {
    /// The answer to call `call` acted (it arrived in autopilot, or the person accepted it).
    Answer {
        /// The call answered.
        call: u64,
        /// The repair run: the routed turn and every attempt.
        run: RepairRun,
    },
    /// The answer to call `call` arrived in co-pilot and waits for the person (a live
    /// author's: a script's proposal is its script's answer again on replay). Recorded when
    /// it arrives, so a desk quit (or killed) while it waits reopens with it waiting, at the
    /// same hash: a live author is not called again on a reopened session, and the proposal
    /// was otherwise lost (the call rejected by `nobody`).
    Propose {
        /// The call answered.
        call: u64,
        /// The wake it answers.
        wake: String,
        /// The tape time the wake fired.
        #[serde(with = "crate::bus::ts_str")]
        asked_at: crate::market::Ts,
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
    /// Attach (asked at wakes) or detach (not asked; a call out is dropped as rejected by
    /// `detached`).
    Attach {
        /// On or off.
        on: bool,
    },
}

/// An agent's answer waiting for the person (co-pilot).
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    /// The call it answers.
    pub call: u64,
    /// The wake it answers.
    pub wake: String,
    /// The tape time the wake fired.
    pub asked_at: crate::market::Ts,
    /// The answer: the routed turn and its attempts.
    pub run: RepairRun,
    /// cl100k tokens of the View its wake delivered (the prompt's view part, as a routed
    /// turn's [`TurnLine::view_tokens`](super::owner::TurnLine::view_tokens)).
    pub view_tokens: usize,
    /// Token figures of the reply it would route (as a routed turn's), measured once.
    pub tokens: Option<crate::tokens::TurnTokens>,
}

impl Proposal {
    /// The answer to `call` at `wake` (asked at `asked_at`, with a View of `view_tokens`)
    /// held for the person, its reply's token figures measured as a routed turn's are.
    pub fn new(
        call: u64,
        wake: String,
        asked_at: crate::market::Ts,
        run: RepairRun,
        view_tokens: usize,
    ) -> Proposal {
        let written = run.attempts.last().map_or("", |a| a.written.as_str());
        let tokens = super::owner::reply_tokens(written, Some(&run.turn), run.oversized());
        Proposal {
            call,
            wake,
            asked_at,
            run,
            view_tokens,
            tokens,
        }
    }
}

/// The bundled house agent: a script of replies, one per wake.
pub const HOUSE_AGENT_SCRIPT: &str = include_str!("../../examples/house-agent.jsonl");

/// A URL with any `user:password@` part removed (what the screen and the session file
/// show of a server address: credentials are never displayed or written).
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let host_end = rest.find('/').unwrap_or(rest.len());
    match rest[..host_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// An author spec as the screen and the session file show it: a server URL without its
/// `user:password@`, and a `cmd:` line without its secrets — the value after a flag or an
/// assignment whose name says key, token, secret or password (`--api-key X`, `TOKEN=X`), the
/// word after `Bearer`, any URL's credentials, and every API key the environment holds
/// (`KESTREL_API_KEY`, `OPENAI_API_KEY`), in any of the forms [`crate::author::secret`]
/// redacts. Words are rejoined with single spaces (the record is for reading: a session file
/// never re-runs a command).
pub fn redact_spec(spec: &str) -> String {
    fn quote(s: &str) -> &str {
        s.trim_matches(|c| c == '"' || c == '\'')
    }
    let secretish = |name: &str| {
        let n = name.to_ascii_lowercase();
        ["key", "token", "secret", "password", "passwd"]
            .iter()
            .any(|w| n.contains(w))
    };
    let out = if spec.contains(char::is_whitespace) {
        let mut words: Vec<String> = Vec::new();
        let mut hide_next = false;
        for w in spec.split_whitespace() {
            if hide_next {
                words.push("[redacted]".into());
                hide_next = false;
                continue;
            }
            if let Some((name, _)) = w.split_once('=')
                && secretish(quote(name))
            {
                words.push(format!("{name}=[redacted]"));
            } else if (w.starts_with('-') && secretish(w))
                || quote(w).eq_ignore_ascii_case("bearer")
            {
                words.push(w.to_string());
                hide_next = true;
            } else if w.contains("://") {
                words.push(redact_url(w));
            } else {
                words.push(w.to_string());
            }
        }
        words.join(" ")
    } else {
        redact_url(spec)
    };
    crate::author::secret::redact_all(&out, &crate::author::secret::known_keys())
}

/// Who sits in the agent's seat.
#[derive(Debug, Clone)]
pub enum Agent {
    /// A script of replies answered wake by wake.
    Script {
        /// Display name.
        name: String,
        /// The replies, in order (re-asks take the next one).
        replies: Vec<String>,
        /// The wake each reply answers, where the script names one (`wakes[i]` for
        /// `replies[i]`; missing or `None`: in order). See [`crate::session::scripted_by_wake`].
        wakes: Vec<Option<String>>,
    },
    /// A saved Bus whose turns replay at their wakes.
    Recorded {
        /// Display name.
        name: String,
        /// The Bus file's bytes.
        bus: Arc<[u8]>,
    },
    /// A model or a command, answering off the replay thread.
    Live(AuthorSpec),
    /// An author a headless run (`kestrel agent`, `kestrel grade`) seats itself: it answers
    /// inline at each wake while the tape waits (see [`Session::headless`]).
    ///
    /// [`Session::headless`]: crate::session::Session::headless
    Inline {
        /// Its name (the report's `author`).
        name: String,
    },
}

impl Agent {
    /// The bundled house agent.
    pub fn house() -> Agent {
        Agent::script("house", HOUSE_AGENT_SCRIPT).unwrap_or(Agent::Script {
            name: "house".into(),
            replies: Vec::new(),
            wakes: Vec::new(),
        })
    }

    /// A script of `{"reply": ..., "wake": ...}` lines (see [`session::parse_script_by_wake`]).
    pub fn script(name: &str, text: &str) -> Result<Agent, String> {
        let (wakes, replies) = session::parse_script_by_wake(text)?.into_iter().unzip();
        Ok(Agent::Script {
            name: name.to_string(),
            replies,
            wakes,
        })
    }

    /// The name on the status line.
    pub fn name(&self) -> String {
        match self {
            Agent::Script { name, .. } | Agent::Recorded { name, .. } | Agent::Inline { name } => {
                name.clone()
            }
            Agent::Live(s) => {
                let full = if s.spec.starts_with("http") {
                    format!("{} @ {}", s.model, redact_spec(&s.spec))
                } else {
                    s.spec.clone()
                };
                // The status line has room for a short name.
                if full.chars().count() > 28 {
                    let mut short: String = full.chars().take(27).collect();
                    short.push('…');
                    short
                } else {
                    full
                }
            }
        }
    }

    /// A name for a narrow column (the Plans pane's `by`): a model author's model, a command
    /// author's program ([`short_author`]), any other author's name. The status line and the
    /// Journal keep the full [`name`](Self::name).
    pub fn short_name(&self) -> String {
        match self {
            // A server's own default model is named for its host (`127.0.0.1:8080`):
            // `default` says nothing about who wrote a plan.
            Agent::Live(s) if s.spec.starts_with("http") && s.model == "default" => s
                .spec
                .split("://")
                .nth(1)
                .and_then(|rest| rest.split('/').next())
                .map(|host| host.rsplit('@').next().unwrap_or(host).to_string())
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| s.model.clone()),
            Agent::Live(s) if s.spec.starts_with("http") => s.model.clone(),
            Agent::Live(s) => program_of(s.spec.strip_prefix("cmd:").unwrap_or(&s.spec))
                .unwrap_or_else(|| self.name()),
            _ => self.name(),
        }
    }

    /// Is it a live author (worker thread, calls out)?
    pub fn is_live(&self) -> bool {
        matches!(self, Agent::Live(_))
    }

    /// Its seat in a fresh run (a script starts over at every run).
    pub fn seat(&self) -> Result<Seat, String> {
        Ok(match self {
            Agent::Script {
                name,
                replies,
                wakes,
            } => {
                let tagged = replies
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (wakes.get(i).cloned().flatten(), r.clone()))
                    .collect();
                Seat::Script(Box::new(session::scripted_by_wake(name, tagged)))
            }
            Agent::Recorded { name, bus } => {
                Seat::Script(Box::new(session::Recorded::from_bus(name, bus)?))
            }
            Agent::Live(_) => Seat::Remote,
            Agent::Inline { name } => {
                return Err(format!(
                    "{name}: an inline author is seated by its headless run, not from settings"
                ));
            }
        })
    }

    /// The session-file record that lets `--open` seat the same agent again (a live author
    /// is not called again on replay: its recorded answers act at their tape points).
    pub fn record(&self) -> serde_json::Value {
        match self {
            Agent::Script {
                name,
                replies,
                wakes,
            } => {
                let mut v = serde_json::json!({"type": "agent", "name": name, "replies": replies});
                if wakes.iter().any(Option::is_some) {
                    v["wakes"] = serde_json::json!(wakes);
                }
                v
            }
            Agent::Recorded { name, bus } => serde_json::json!({
                "type": "agent", "name": name,
                "bus": String::from_utf8_lossy(bus),
            }),
            Agent::Live(s) => serde_json::json!({
                "type": "agent", "name": self.name(), "live": redact_spec(&s.spec), "model": s.model,
            }),
            Agent::Inline { name } => {
                serde_json::json!({"type": "agent", "name": name, "inline": true})
            }
        }
    }

    /// Read an agent record back (see [`Agent::record`]). A live author comes back as a
    /// [`Agent::Live`] whose calls nobody answers but the recording.
    pub fn from_record(v: &serde_json::Value) -> Option<Agent> {
        let name = v.get("name")?.as_str()?.to_string();
        if let Some(r) = v.get("replies").and_then(|r| r.as_array()) {
            let replies = r
                .iter()
                .map(|x| x.as_str().unwrap_or_default().to_string())
                .collect();
            let wakes = v
                .get("wakes")
                .and_then(|w| w.as_array())
                .map(|w| w.iter().map(|x| x.as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            return Some(Agent::Script {
                name,
                replies,
                wakes,
            });
        }
        if let Some(b) = v.get("bus").and_then(|b| b.as_str()) {
            return Some(Agent::Recorded {
                name,
                bus: Arc::from(b.as_bytes()),
            });
        }
        let spec = v.get("live")?.as_str()?.to_string();
        let model = v.get("model").and_then(|m| m.as_str()).unwrap_or(&name);
        Some(Agent::Live(AuthorSpec {
            spec,
            model: model.to_string(),
            temperature: 0.0,
            constrained: false,
            timeout_secs: 1,
            max_tokens: crate::author::openai::DEFAULT_MAX_TOKENS,
            first_token_secs: 1,
            pass_api_key: false,
        }))
    }
}

/// A call for the live worker.
#[derive(Debug)]
struct Job {
    segment: u32,
    call: u64,
    ask: WakeAsk,
    ctx: TurnContext,
}

/// What the live worker sends back.
#[derive(Debug)]
pub enum WorkerMsg {
    /// The answer to a call.
    Answered {
        /// The run the call was made in.
        segment: u32,
        /// The call.
        call: u64,
        /// The wake it answers.
        wake: String,
        /// The repair run.
        run: Box<RepairRun>,
        /// Wall time the author took (every attempt of the repair loop). Shown, never on
        /// the Bus: the Bus is deterministic, a provider's speed is not.
        wall: std::time::Duration,
    },
    /// The author could not be opened, or failed mid-call (a panic): the worker stopped.
    Failed(String),
}

/// A live author on its own worker thread: calls in, answers and streamed text out. Dropping
/// it stops the worker: a call in flight is abandoned (its request dropped, a command
/// author's process group killed) and the drop waits up to [`STOP_WAIT`] for that, so
/// quitting the desk leaves nothing running.
pub struct LiveWorker {
    jobs: Option<mpsc::Sender<Job>>,
    /// Set on drop: the call in flight stops at its next check (every 50 ms).
    stop: Arc<std::sync::atomic::AtomicBool>,
    /// The session's run segment ([`LiveWorker::abandon_before`]): a call for an older one
    /// stops at its next check, and a queued one is not started.
    current: Arc<std::sync::atomic::AtomicU32>,
    /// Answers.
    pub answers: mpsc::Receiver<WorkerMsg>,
    /// Text as it is written.
    pub deltas: tokio::sync::mpsc::UnboundedReceiver<String>,
    join: Option<std::thread::JoinHandle<()>>,
}

impl LiveWorker {
    /// Start a worker over a turn source made on its thread (`make` opens the author).
    pub fn spawn<F>(make: F) -> Result<LiveWorker, String>
    where
        F: FnOnce() -> Result<Box<dyn TurnSource>, String> + Send + 'static,
    {
        let (jtx, jrx) = mpsc::channel::<Job>();
        let (atx, arx) = mpsc::channel::<WorkerMsg>();
        let (dtx, drx): (DeltaSink, _) = tokio::sync::mpsc::unbounded_channel();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop_here = stop.clone();
        let stop_seen = stop.clone();
        let current = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let current_here = current.clone();
        let current_seen = current.clone();
        let join = std::thread::Builder::new()
            .name("kestrel-author".into())
            .spawn(move || {
                session::stop_calls_on_this_thread_with(stop_here, current_here);
                let mut src = match make() {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = atx.send(WorkerMsg::Failed(e));
                        return;
                    }
                };
                src.stream_to(dtx);
                while let Ok(j) = jrx.recv() {
                    // Stopped: a queued call is not started (its process would only be killed).
                    if stop_seen.load(std::sync::atomic::Ordering::SeqCst) {
                        return;
                    }
                    // Asked before a restart or a rewind: its answer would be dropped as
                    // stale, so it is not asked (the re-run asks again where it needs to).
                    if j.segment < current_seen.load(std::sync::atomic::Ordering::SeqCst) {
                        continue;
                    }
                    session::calls_on_this_thread_answer_segment(j.segment);
                    let started = std::time::Instant::now();
                    // An author that panics stops the agent with a notice, never silently:
                    // the desk showed "writing" for the rest of the session when the worker
                    // died on a panic (an `Instant + Duration` overflow before 2026-12-06).
                    let answered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        src.answer(&j.ask, &j.ctx).run
                    }));
                    let run = match answered {
                        Ok(run) => run,
                        Err(p) => {
                            let why = p
                                .downcast_ref::<&str>()
                                .map(|s| s.to_string())
                                .or_else(|| p.downcast_ref::<String>().cloned())
                                .unwrap_or_else(|| "a panic".into());
                            let _ = atx.send(WorkerMsg::Failed(format!(
                                "the author failed at wake {}: {why}",
                                j.ask.wake
                            )));
                            return;
                        }
                    };
                    let msg = WorkerMsg::Answered {
                        segment: j.segment,
                        call: j.call,
                        wake: j.ask.wake,
                        run: Box::new(run),
                        wall: started.elapsed(),
                    };
                    if atx.send(msg).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| format!("cannot start the author's worker: {e}"))?;
        Ok(LiveWorker {
            jobs: Some(jtx),
            stop,
            current,
            answers: arx,
            deltas: drx,
            join: Some(join),
        })
    }

    /// Start a worker for an author spec.
    pub fn for_spec(spec: &AuthorSpec) -> Result<LiveWorker, String> {
        let spec = spec.clone();
        LiveWorker::spawn(move || spec.open().map(|(s, _)| s))
    }

    /// The session is at run segment `segment` now (it restarted or rewound): a call asked
    /// for an older one is abandoned at its next check (every 50 ms: a request in flight is
    /// dropped, a command author's process group killed) and a queued one is not started,
    /// so the re-run's calls do not wait behind answers that would be dropped as stale.
    pub fn abandon_before(&self, segment: u32) {
        self.current
            .fetch_max(segment, std::sync::atomic::Ordering::SeqCst);
    }

    /// Send a call (never blocks; calls queue while the author is busy).
    pub fn ask(&self, segment: u32, call: u64, ask: WakeAsk, ctx: TurnContext) {
        if let Some(j) = &self.jobs {
            let _ = j.send(Job {
                segment,
                call,
                ask,
                ctx,
            });
        }
    }
}

/// How long dropping a [`LiveWorker`] waits for its call in flight to be abandoned.
pub const STOP_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

impl Drop for LiveWorker {
    fn drop(&mut self) {
        // Closing the job channel ends the worker after its current answer, and the stop
        // flag cuts that answer short. The wait is bounded, so a provider that does not let
        // go never holds up the desk.
        self.jobs = None;
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(j) = self.join.take() {
            let t = std::time::Instant::now();
            while !j.is_finished() && t.elapsed() < STOP_WAIT {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}

/// An author's name (as the Bus and the Journal give it) for a narrow column: a command
/// author's program (`cmd:/tmp/qa/author.sh` is `author.sh`; its script when it runs one
/// through an interpreter: `cmd:python3 ~/agents/trend.py --fast` is `trend.py`), a file's
/// name without its directories (`examples/run-desk.kestrel` is `run-desk.kestrel`), any
/// other name as it is.
pub fn short_author(name: &str) -> String {
    if let Some(command) = name.strip_prefix("cmd:") {
        return program_of(command).unwrap_or_else(|| name.to_string());
    }
    if name.contains('/') && !name.contains("://") && !name.contains(char::is_whitespace) {
        return base_name(name);
    }
    name.to_string()
}

fn base_name(w: &str) -> String {
    let w = w.trim_matches(|c| c == '"' || c == '\'');
    w.rsplit('/').next().unwrap_or(w).to_string()
}

/// The program a command line runs: its first word, or the script an interpreter in it runs.
///
/// After an interpreter, the script is the first word that reads as one (a path, or a name
/// with a script's extension), so a flag's value (`uv run --with httpx agent.py`) is not
/// taken for it; with no such word, the first word that is not a flag, `run` or an `env`
/// assignment (`python3 -m trend` is `trend`).
fn program_of(command: &str) -> Option<String> {
    const INTERPRETERS: &[&str] = &[
        "sh", "bash", "zsh", "dash", "env", "python", "python3", "node", "deno", "bun", "ruby",
        "perl", "uv", "uvx",
    ];
    const SCRIPTS: &[&str] = &[
        ".sh", ".bash", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl",
    ];
    let mut words = command.split_whitespace();
    let program = base_name(words.next()?);
    if !INTERPRETERS.contains(&program.as_str()) {
        return Some(program);
    }
    // Not a flag, not `uv run`, not an `env` assignment (it may be a key).
    let candidates: Vec<&str> = words
        .filter(|w| !w.starts_with('-') && *w != "run" && !w.contains('='))
        .collect();
    let reads_as_script =
        |w: &str| w.contains('/') || SCRIPTS.iter().any(|x| w.to_ascii_lowercase().ends_with(x));
    let script = candidates
        .iter()
        .find(|w| reads_as_script(w))
        .or(candidates.first());
    Some(script.map_or(program, |w| base_name(w)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Plans pane's `by` column read `cmd:/tm…` for every command author.
    #[test]
    fn a_short_name_is_the_model_or_the_program_and_never_a_secret() {
        let live = |spec: &str| {
            Agent::Live(
                crate::session::AuthorFlags {
                    model: "qwen3-8b".into(),
                    ..Default::default()
                }
                .spec(spec),
            )
            .short_name()
        };
        assert_eq!(live("http://127.0.0.1:8080/v1"), "qwen3-8b");
        assert_eq!(live("cmd:/tmp/qa/author.sh"), "author.sh");
        assert_eq!(live("cmd:python3 -u ~/agents/trend.py --fast"), "trend.py");
        assert_eq!(live("cmd:uv run agent.py"), "agent.py");
        assert_eq!(live("cmd:env OPENAI_API_KEY=sk-2 ./bot --key sk-3"), "bot");
        assert_eq!(live("cmd:sh"), "sh");
        // A flag's value is not the script (it read `httpx`).
        assert_eq!(live("cmd:uv run --with httpx agent.py"), "agent.py");
        assert_eq!(live("cmd:python3 -W ignore ./bots/trend.py"), "trend.py");
        assert_eq!(live("cmd:python3 -m trend"), "trend");
        // A server's default model is named by its host (it read `default`).
        let http = |spec: &str| {
            Agent::Live(crate::session::AuthorFlags::default().spec(spec)).short_name()
        };
        assert_eq!(http("http://127.0.0.1:8080/v1"), "127.0.0.1:8080");
        assert_eq!(http("https://user:pw@example.com/v1"), "example.com");
        let house = Agent::Inline {
            name: "house".into(),
        };
        assert_eq!(house.short_name(), "house");
        assert_eq!(short_author("cmd:/tmp/qa/author.sh"), "author.sh");
        assert_eq!(
            short_author("examples/run-desk.kestrel"),
            "run-desk.kestrel"
        );
        assert_eq!(short_author("you"), "you");
        assert_eq!(
            short_author("http://127.0.0.1:8080/v1"),
            "http://127.0.0.1:8080/v1"
        );
    }

    #[test]
    fn credentials_in_a_server_url_are_never_shown_or_recorded() {
        assert_eq!(
            redact_url("https://u:sk-123@h.example/v1"),
            "https://h.example/v1"
        );
        assert_eq!(
            redact_url("http://127.0.0.1:8080/v1"),
            "http://127.0.0.1:8080/v1"
        );
        assert_eq!(redact_url("sh examples/a.sh"), "sh examples/a.sh");
        // A command line keeps its shape and loses its secrets.
        assert_eq!(
            redact_spec("cmd:my-agent --api-key sk-live-1 --model m"),
            "cmd:my-agent --api-key [redacted] --model m"
        );
        assert_eq!(
            redact_spec(
                "cmd:env OPENAI_API_KEY=sk-2 curl -H \"Authorization: Bearer sk-3\" https://u:p@h/v1"
            ),
            "cmd:env OPENAI_API_KEY=[redacted] curl -H \"Authorization: Bearer [redacted] https://h/v1"
        );
        assert_eq!(redact_spec("cmd:sh examples/a.sh"), "cmd:sh examples/a.sh");
        assert_eq!(
            redact_spec("https://u:sk-123@h.example/v1"),
            "https://h.example/v1"
        );
        let a = Agent::Live(AuthorSpec {
            spec: "https://u:sk-123@h.example/v1".into(),
            model: "m".into(),
            temperature: 0.0,
            constrained: false,
            timeout_secs: 1,
            max_tokens: crate::author::openai::DEFAULT_MAX_TOKENS,
            first_token_secs: 1,
            pass_api_key: false,
        });
        assert!(!a.name().contains("sk-123"));
        assert!(!a.record().to_string().contains("sk-123"));
    }

    /// A turn source that panics on its first ask.
    struct Panics;

    impl TurnSource for Panics {
        fn answer(&mut self, _: &WakeAsk, _: &TurnContext) -> session::Answer {
            panic!("overflow when adding duration to instant")
        }
        fn name(&self) -> String {
            "panics".into()
        }
    }

    /// An author that panics stops the worker with a `Failed` the desk shows ("agent
    /// stopped: ..."), not a worker gone without a word while the desk says "writing".
    #[test]
    fn a_panicking_author_is_a_failed_worker_not_a_silent_one() {
        use crate::turn::{AuthorKind, Profile, WakePhase};
        let w = LiveWorker::spawn(|| Ok(Box::new(Panics) as Box<dyn TurnSource>)).unwrap();
        let ask = WakeAsk {
            ts: crate::market::Ts(0),
            wake: "open".into(),
            phase: WakePhase::Open,
            frame: String::new(),
            prompt: String::new(),
        };
        let ctx = TurnContext::new(WakePhase::Open, Profile::AuthoringV2, AuthorKind::Model);
        w.ask(0, 1, ask, ctx);
        match w.answers.recv_timeout(std::time::Duration::from_secs(10)) {
            Ok(WorkerMsg::Failed(e)) => assert_eq!(
                e,
                "the author failed at wake open: overflow when adding duration to instant"
            ),
            Ok(WorkerMsg::Answered { .. }) => panic!("answered"),
            Err(e) => panic!("no word from the worker: {e}"),
        }
    }

    #[test]
    fn agent_records_read_back() {
        for a in [
            Agent::house(),
            Agent::Recorded {
                name: "r".into(),
                bus: Arc::from(&b"{}"[..]),
            },
        ] {
            let back = Agent::from_record(&a.record()).unwrap();
            assert_eq!(back.record(), a.record());
        }
    }
}
