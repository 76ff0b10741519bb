//! `kestrel agent`: a headless session with an attached author, writing the Bus and printing
//! the run report and the outcome counts.

use super::run::{json_report, text_report};
use crate::bus::{self, Bus};
use crate::session::replay::{self, Recording};
use crate::session::{self, Headless, RunConfig, Session, TurnSource};
use crate::turn::{AuthorKind, Profile};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfileArg {
    AuthoringV2,
    ViewshopV2,
    AuthoringV1,
    CompletionV1,
}

/// Arguments of `kestrel agent`.
#[derive(Debug, clap::Args)]
pub struct AgentArgs {
    /// The tape (JSON Lines).
    #[arg(long)]
    pub tape: PathBuf,
    /// The author: `http(s)://HOST/v1` is an OpenAI-compatible server; an existing
    /// `.jsonl` file is a saved Bus (its turns replay) or a script of `{"reply": "..."}`
    /// lines answered in order; `cmd:COMMAND` is a command run with `sh -c` (the prompt on
    /// its stdin, the reply on its stdout). A bare command line or executable script runs
    /// as a command too; a missing path, a Kestrel document, a directory or a file that is
    /// not executable is refused.
    #[arg(long)]
    pub author: String,
    #[command(flatten)]
    pub how: session::AuthorFlags,
    /// Documents armed at the open, before the author's first turn (repeatable).
    #[arg(long)]
    pub plans: Vec<PathBuf>,
    /// The prompt profile.
    #[arg(long, value_enum, default_value = "authoring-v2")]
    pub profile: ProfileArg,
    #[command(flatten)]
    pub engine: super::flags::Engine,
    /// Write the Bus (JSON Lines) to this file, atomically (`-` is refused: standard output
    /// carries the report).
    #[arg(long)]
    pub bus: Option<PathBuf>,
    #[command(flatten)]
    pub out: super::flags::Json,
}

fn load_author(a: &AgentArgs) -> Result<(Box<dyn TurnSource>, AuthorKind), String> {
    a.how.spec(&a.author).open()
}

pub fn run(a: &AgentArgs) -> i32 {
    let engine = match super::run::engine_config("--r-usd", &a.engine.r.r_usd, &a.engine.fill) {
        Ok(c) => c,
        Err(e) => {
            errln!("error code=USAGE message={e}");
            return 1;
        }
    };
    // An author file is an input too: the Bus may not be written over it.
    let author_path = match a.how.spec(&a.author).resolve() {
        Ok(session::AuthorTarget::File(f)) => Some(PathBuf::from(f)),
        _ => None,
    };
    let author_file: Vec<(&str, &std::path::Path)> = author_path
        .as_deref()
        .map(|p| ("--author", p))
        .into_iter()
        .collect();
    let (author, author_kind) = match load_author(a) {
        Ok(x) => x,
        Err(e) => {
            // A saved Bus that does not replay says so with its own code (BUS, REPLAY) and
            // is refused as its whole-recording checks are (exit 2); anything else is usage.
            let line = session::coded(e);
            errln!("{line}");
            return super::flags::exit_of(&line);
        }
    };
    // A saved Bus replays its session: it must be whole, and the replay is held to it
    // (session::replay). A desk's Bus replays its agent's answers over the documents the
    // person armed at the open, and is not (docs/desk.md, "A desk's Bus, headless").
    let mut desk_bus: Option<DeskBus> = None;
    let recording = author.recorded_bus().and_then(|b| {
        Recording::new(&a.author, b).filter(|r| {
            let desk = r.is_desk();
            if desk {
                let (opening, persons) = r.persons_at_desk();
                let d = DeskBus {
                    opening,
                    owners: r.names_owners(),
                    persons,
                    // What the desk's status line showed when it was saved: the BLAKE3 of
                    // the Bus as written (only a desk's Bus needs it).
                    hash: crate::bus::hash_bytes(b),
                };
                errln!("{}", desk_bus_warning(&a.author, &d, !a.plans.is_empty()));
                desk_bus = Some(d);
            }
            !desk
        })
    });
    if let Some(r) = &recording
        && let Err(e) = r.whole().and_then(|()| r.run_bus())
    {
        errln!("{e}");
        return replay::EXIT_REFUSED;
    }
    let super::run::Inputs {
        docs,
        reader,
        pending,
        sink,
    } = match super::run::open_inputs(&a.plans, &a.tape, a.bus.as_deref(), &author_file) {
        Ok(x) => x,
        Err(code) => return code,
    };
    // A desk's Bus: the person's documents at the open arm at the replay's open (unless
    // --plans names others), as the desk armed them before its first wake.
    let docs = match desk_bus.as_ref() {
        Some(d) if a.plans.is_empty() => match d.documents(&a.author) {
            Ok(docs) => docs,
            Err(e) => {
                errln!("{e}");
                return replay::EXIT_REFUSED;
            }
        },
        _ => docs,
    };
    let (sink, held) = match recording {
        Some(r) => {
            let (w, held) = r.hold(sink);
            (Some(w), Some(held))
        }
        None => (sink, None),
    };
    // The whole tape before the author is asked anything: `run` refuses a bad line or a
    // tape cut short only when it reaches it, but by then an author would have been asked
    // (and a command author run) at every wake up to there, for a run that is refused.
    // (Signals first: a SIGTERM during a long check is caught, and the run that follows
    // stops at once with the pending Bus file handled, rather than the process dying with
    // it left behind.)
    super::signals::install();
    if let Err(e) = super::run::check_whole_tape(&a.tape) {
        errln!("{e}");
        return 1;
    }
    let profile = match a.profile {
        ProfileArg::AuthoringV2 => Profile::AuthoringV2,
        ProfileArg::ViewshopV2 => Profile::ViewshopV2,
        ProfileArg::AuthoringV1 => Profile::AuthoringV1,
        ProfileArg::CompletionV1 => Profile::CompletionV1,
    };
    let mut engine = engine;
    // The author's identity goes on session-start, so every report splits the arms. A saved
    // Bus replays with the identity it recorded: the same session-start, the same bytes.
    engine.author = author.recorded_identity().or_else(|| {
        author
            .identity()
            .map(|i| bus::AuthorIdentity::of(i, profile))
    });
    // The report names the arm too (kind, model, profile, constrained, max tokens,
    // temperature).
    let arm = engine.author.as_ref().map(bus::AuthorIdentity::arm);
    let cfg = RunConfig {
        engine,
        profile,
        author: author_kind,
        open_wake: true,
        view_request_cap: None,
    };
    let author_name = author.name();
    let h = Headless {
        bus: Bus::new(sink),
        docs,
        author: Some(author),
    };
    let s = match Session::headless(&a.tape.display().to_string(), reader, cfg, h) {
        Ok(s) => s,
        Err(e) => {
            errln!("error code=TAPE message={e}");
            return 1;
        }
    };
    // Another tape, 1R, fill model or --plans than the recording's: refused before the
    // tape is played (the pending Bus file is removed).
    if let Some(e) = held.as_ref().and_then(|h| h.opening().err()) {
        errln!("{e}");
        return replay::EXIT_REFUSED;
    }
    let mut s = s;
    let opening = super::run::arm_warnings(s.take_arm_warnings());
    for w in &opening {
        errln!("{}", w.line());
    }
    let mut pending = pending;
    let mut s = match super::run::play(s, &a.tape, &mut pending) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let mut all = opening.clone();
    all.extend(s.take_arm_warnings());
    let warnings = super::run::arm_warnings(all);
    for w in &warnings[opening.len()..] {
        errln!("{}", w.line());
    }
    let mut provider_errors = ProviderErrors::default();
    provider_errors.note(s.turn_log());
    let c = s.counts().clone();
    let unused = s.unused_replies();
    let bus = s.finish();
    if let Some(e) = bus.error() {
        errln!("error code=IO message=writing the bus: {e}");
        return 1;
    }
    // The replay wrote the recording line for line, or it is refused (nothing committed).
    if let Some(e) = held.as_ref().and_then(|h| h.verdict().err()) {
        errln!("{e}");
        return replay::EXIT_REFUSED;
    }
    let report = if a.out.json {
        let mut v: serde_json::Value =
            serde_json::from_str(&json_report(&bus, &a.tape.display().to_string(), &warnings))
                .unwrap_or_default();
        v["author"] = serde_json::Value::String(author_name.clone());
        if let Some(arm) = &arm {
            v["arm"] = serde_json::Value::String(arm.clone());
        }
        v["outcomes"] = serde_json::to_value(&c).unwrap_or_default();
        v["spend"] = spend_json(bus.spend());
        bus::canonical_json(&v) + "\n"
    } else {
        format!(
            "{}author {}: wakes {} | supersede {} stand-down {} view-request {} cancel {} pass {} | invalid {} truncated {} provider-error {} | fail-closed pass {} | repaired {}\n",
            text_report(&bus, &warnings),
            arm.clone().unwrap_or_else(|| author_name.clone()),
            c.wakes,
            c.supersede,
            c.stand_down,
            c.view_request,
            c.cancel,
            c.pass,
            c.invalid,
            c.truncated,
            c.provider_error,
            c.fail_closed_pass,
            c.repaired
        )
    };
    if let Err(e) = bus.into_sink() {
        errln!("error code=IO message=flushing the bus: {e}");
        return 1;
    }
    if let Err(e) = super::out::commit(pending) {
        errln!("{e}");
        return 1;
    }
    let code = super::out::stdout(&report);
    if code != 0 {
        return code;
    }
    provider_errors.print();
    // Its hash is not the desk's, and an evaluator comparing the two is told so.
    if let Some(d) = &desk_bus {
        errln!("{}", d.hash_note(&a.author));
    }
    // A script reply for a wake that never asked (a misspelt or another tape's wake) would
    // otherwise pass unseen: the run is the same, the Bus unchanged.
    if let Some(u) = unused {
        errln!(
            "warning code=UNUSED-REPLIES message={}",
            crate::lang::diag::visible_line(&u.note())
        );
    }
    // An author that never answered is a failed run, not a quiet one.
    if c.wakes > 0 && c.provider_error > 0 && all_provider_errors(&c) {
        errln!(
            "error code=PROVIDER message=every reply of the author ({} of {} wakes) was a provider error: check the author (each error is in its turn event on the Bus)",
            c.provider_error,
            c.wakes
        );
        return 1;
    }
    0
}

/// The note a desk's Bus replayed headless gets: its agent's turns replay, the person's acts
/// (in the session file) do not, so the replay is another session and is not held to it.
fn desk_bus_warning(path: &str, d: &DeskBus, plans: bool) -> String {
    let session = crate::session::saved::session_of_bus(std::path::Path::new(path)).map_or_else(
        || "its session file".to_string(),
        |p| p.display().to_string(),
    );
    let opening = match (d.opening.len(), plans) {
        (0, _) => String::new(),
        (n, false) => format!(
            " over the {n} document(s) the person armed at the open (armed here at the open, as --plans would)"
        ),
        (n, true) => format!(
            " over the --plans given (not the {n} document(s) the person armed at the open)"
        ),
    };
    format!(
        "warning code=DESK-BUS message={path} is a desk's Bus: its agent's turns replay{opening}, not the person's other acts (they are in the session file), so this is another session than the desk's and is not compared with it; to replay the desk's session, kestrel desk --open {session}"
    )
}

/// What a replay of a desk's Bus takes from it besides its agent's turns.
struct DeskBus {
    /// The texts of the person's documents at the open ([`Recording::persons_at_desk`]).
    opening: Vec<String>,
    /// Its `document-armed` records name their owners (an agent sat at the desk).
    owners: bool,
    /// The person's turns on it (at the open and after).
    persons: usize,
    /// The desk's determinism hash (BLAKE3 of the file).
    hash: String,
}

impl DeskBus {
    /// The person's documents at the open, checked as `--plans` are: one that no longer
    /// checks (the Bus was recorded by another version) is a `REPLAY` refusal, exit 2.
    fn documents(&self, path: &str) -> Result<Vec<crate::lang::Document>, String> {
        self.opening
            .iter()
            .enumerate()
            .map(|(i, text)| {
                crate::lang::check(text, crate::lang::Mode::File).map_err(|errs| {
                    format!(
                        "error code=REPLAY message={path}: the person's document {} at the open does not check as a document armed at the open ({}): this Bus cannot be replayed headless; kestrel desk --open replays the desk's session",
                        i + 1,
                        errs.first().map(|e| e.one_line()).unwrap_or_default()
                    )
                })
            })
            .collect()
    }

    /// `note: FILE: a desk's Bus names each document's owner; this headless replay does not,
    /// so its hash differs from the desk's (…)`: what an evaluator comparing hashes needs.
    fn hash_note(&self, path: &str) -> String {
        let what = match (self.owners, self.persons > 0) {
            (true, true) => {
                "a desk's Bus names each document's owner and records the person's turns; this headless replay does neither"
            }
            (true, false) => {
                "a desk's Bus names each document's owner; this headless replay does not"
            }
            (false, _) => "a desk's Bus records the person's turns; this headless replay does not",
        };
        format!(
            "note: {path}: {what}, so its hash differs from the desk's (the desk's is {}, the BLAKE3 of the file; this replay's is the report's determinism): compare hashes of headless runs with headless runs, and the desk's with kestrel desk --open",
            &self.hash[..self.hash.len().min(12)]
        )
    }
}

/// What the run's replies cost, each figure by what measured it (docs/turns.md, "What a
/// turn cost"): `tokens` the desk's cl100k count of the replies written, `tokens_estimated`
/// the bytes/4 estimate of replies refused unread for their size, and the provider's own
/// `usage` totals over the `provider_attempts` replies whose server sent one.
fn spend_json(s: crate::turn::repair::Spend) -> serde_json::Value {
    serde_json::json!({
        "tokens": s.tokens,
        "tokens_estimated": s.tokens_estimated,
        "provider_attempts": s.provider_attempts,
        "provider_prompt_tokens": s.provider_prompt_tokens,
        "provider_completion_tokens": s.provider_completion_tokens,
    })
}

/// The provider errors of a run, for stderr: each distinct message once with its count
/// (the first [`ProviderErrors::SHOWN`] distinct ones; the rest are counted).
#[derive(Default)]
struct ProviderErrors {
    seen: usize,
    messages: Vec<(String, u64)>,
    more: u64,
}

impl ProviderErrors {
    const SHOWN: usize = 5;

    /// Read the turns logged since the last call.
    fn note(&mut self, log: &[session::run::TurnEntry]) {
        for e in log.iter().skip(self.seen) {
            if let Some(crate::turn::Outcome::ProviderError { message }) =
                e.turn.as_ref().map(|t| &t.outcome)
            {
                if let Some(m) = self.messages.iter_mut().find(|(m, _)| m == message) {
                    m.1 += 1;
                } else if self.messages.len() < Self::SHOWN {
                    self.messages.push((message.clone(), 1));
                } else {
                    self.more += 1;
                }
            }
        }
        self.seen = log.len();
    }

    fn print(&self) {
        for (m, n) in &self.messages {
            // A command author's stderr is in the message: one line, shown not obeyed.
            errln!(
                "warning code=PROVIDER count={n} message={}",
                crate::lang::diag::visible_line(m)
            );
        }
        if self.more > 0 {
            errln!(
                "warning code=PROVIDER count={} message=other provider errors (on the Bus)",
                self.more
            );
        }
    }
}

/// Did every wake end in a provider error (no turn authored, refused or passed)?
fn all_provider_errors(c: &session::Counts) -> bool {
    let other = c.supersede
        + c.stand_down
        + c.view_request
        + c.cancel
        + c.pass
        + c.fail_closed_pass
        + c.invalid
        + c.truncated;
    other == 0
}
