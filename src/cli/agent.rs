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
    let target = a.how.spec(&a.author).resolve();
    let author_path = match &target {
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
    // A flag the author does not use is refused, not dropped (README: flags that
    // contradict each other are refused).
    let (user, what) = match &target {
        Ok(session::AuthorTarget::Model(_)) => (session::FlagUser::Model, "by a model"),
        Ok(session::AuthorTarget::Command(_)) => (session::FlagUser::Command, "by a command"),
        _ if author.recorded_bus().is_some() => (
            session::FlagUser::Other,
            "by a saved Bus, which replays the arm and profile it recorded",
        ),
        _ => (session::FlagUser::Script, "by a script of replies"),
    };
    if let Err(e) = a.how.refuse_unused(user, what) {
        errln!("{e}");
        return super::flags::EXIT_USAGE;
    }
    // A saved Bus replays its session: it must be whole, and the replay is held to it
    // (session::replay). A desk's Bus replays its agent's answers over the documents the
    // person armed at the open, with the desk's owners seated where an agent sat there, and
    // is not held to it (docs/desk.md, "A desk's Bus, headless").
    let mut desk_bus: Option<DeskBus> = None;
    let recording = author.recorded_bus().and_then(|b| {
        Recording::new(&a.author, b).filter(|r| {
            let desk = r.is_desk();
            if desk {
                let (opening, persons) = r.persons_at_desk();
                let d = DeskBus {
                    opening,
                    seated: r.seated_desk(),
                    persons,
                    cut: r.cut().is_some(),
                    // What the desk's status line showed when it was saved: the BLAKE3 of
                    // the Bus as written (only a desk's Bus needs it).
                    hash: crate::bus::hash_bytes(b),
                };
                if let Some(w) = desk_bus_warning(&a.author, &d, !a.plans.is_empty()) {
                    errln!("{w}");
                }
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
    // --plans names others), as the desk armed them before its first wake: where an agent
    // sat at the desk, as the person's turns, the author seated as the desk's agent
    // (`Session::seat_desk`); else as --plans would arm them.
    let (docs, persons) = match desk_bus.as_ref() {
        Some(d) if a.plans.is_empty() => match d.documents(&a.author) {
            Ok(_) if d.seated => (Vec::new(), Some(d.opening.clone())),
            Ok(docs) => (docs, None),
            Err(e) => {
                errln!("{e}");
                return replay::EXIT_REFUSED;
            }
        },
        Some(d) if d.seated => (docs, Some(Vec::new())),
        _ => (docs, None),
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
    if let Some(persons) = persons
        && let Err(e) = s.seat_desk(persons)
    {
        errln!("error code=REPLAY message={}: {e}", a.author);
        return replay::EXIT_REFUSED;
    }
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
    let hash = bus.hash_hex();
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
        ) + &spend_line(&c, &bus.spend())
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
    // Whether its hash is the desk's, and if not why: an evaluator comparing the two is told.
    if let Some(d) = &desk_bus {
        errln!("{}", d.hash_note(&a.author, &hash, !a.plans.is_empty()));
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

/// The warning a desk's Bus replayed headless gets when the replay cannot be the desk's
/// session: its agent's turns replay (over the person's documents at the open, seated as the
/// person's where an agent sat at the desk), and what the desk's session held besides does
/// not ([`DeskBus::differs`]). `None` when nothing is known to differ: the note after the
/// report then says whether its hash is the desk's.
fn desk_bus_warning(path: &str, d: &DeskBus, plans: bool) -> Option<String> {
    let why = d.differs(plans);
    if why.is_empty() {
        return None;
    }
    let session = crate::session::saved::session_of_bus(std::path::Path::new(path)).map_or_else(
        || "its session file".to_string(),
        |p| p.display().to_string(),
    );
    let armed = if d.seated {
        "as the person's"
    } else {
        "as --plans would"
    };
    let opening = match (d.opening.len(), plans) {
        (0, _) => String::new(),
        (n, false) => format!(
            " over the {n} document(s) the person armed at the open (armed here at the open, {armed})"
        ),
        (n, true) => format!(
            " over the --plans given (not the {n} document(s) the person armed at the open)"
        ),
    };
    let seated = if d.seated {
        ", the author seated as the desk's agent (its supersede, STAND-DOWN and CANCEL reach only its own plans, as at the desk)"
    } else {
        ""
    };
    Some(format!(
        "warning code=DESK-BUS message={path} is a desk's Bus: its agent's turns replay{opening}{seated}, but {}, so this is another session than the desk's and is not compared with it; to replay the desk's session, kestrel desk --open {session}",
        why.join("; ")
    ))
}

/// What a replay of a desk's Bus takes from it besides its agent's turns.
struct DeskBus {
    /// The person's documents at the open, what the router was told of their author and the
    /// text ([`Recording::persons_at_desk`]).
    opening: Vec<(crate::turn::AuthorKind, String)>,
    /// An agent sat at the desk ([`Recording::seated_desk`]): the replay seats the desk's
    /// owners.
    seated: bool,
    /// The person's turns on it (at the open and after).
    persons: usize,
    /// It stops before `session-end` (the desk was left before the close).
    cut: bool,
    /// The desk's determinism hash (BLAKE3 of the file).
    hash: String,
}

impl DeskBus {
    /// The person's documents at the open, checked as the desk checked them (a turn of the
    /// person's where an agent sat, else as `--plans` are): one that no longer checks (the
    /// Bus was recorded by another version) is a `REPLAY` refusal, exit 2.
    fn documents(&self, path: &str) -> Result<Vec<crate::lang::Document>, String> {
        let mode = if self.seated {
            crate::lang::Mode::Turn
        } else {
            crate::lang::Mode::File
        };
        self.opening
            .iter()
            .enumerate()
            .map(|(i, (_, text))| {
                crate::lang::check(text, mode).map_err(|errs| {
                    format!(
                        "error code=REPLAY message={path}: the person's document {} at the open does not check as a document armed at the open ({}): this Bus cannot be replayed headless; kestrel desk --open replays the desk's session",
                        i + 1,
                        errs.first().map(|e| e.one_line()).unwrap_or_default()
                    )
                })
            })
            .collect()
    }

    /// Why a replay of it is known not to be the desk's session (empty: nothing known).
    fn differs(&self, plans: bool) -> Vec<String> {
        let mut why = Vec::new();
        if !self.seated {
            why.push("no agent sat at the desk, and the person's turns are not replayed".into());
        }
        let later = self.persons.saturating_sub(self.opening.len());
        if self.seated && later > 0 {
            why.push(format!(
                "not the person's {later} turn(s) after the open, nor their other acts (they are in the session file)"
            ));
        }
        if plans {
            why.push("the --plans given replace the person's documents at the open".into());
        }
        if self.cut {
            why.push(
                "the desk's Bus stops where the desk was left, before the close (no session-end), and this replay plays on to the close"
                    .into(),
            );
        }
        why
    }

    /// `note: FILE: … its hash is the desk's (…)`, or why it differs: what an evaluator
    /// comparing hashes needs.
    fn hash_note(&self, path: &str, replay: &str, plans: bool) -> String {
        let desk = &self.hash[..self.hash.len().min(12)];
        if replay == self.hash {
            return format!(
                "note: {path}: this replay seated the desk's owners and wrote the desk's Bus byte for byte: its hash is the desk's ({desk}, the BLAKE3 of the file)"
            );
        }
        let mut why = self.differs(plans);
        if why.is_empty() {
            why.push(
                "the desk's session held acts its Bus does not (they are in the session file)"
                    .into(),
            );
        }
        format!(
            "note: {path}: this replay's hash differs from the desk's (the desk's is {desk}, the BLAKE3 of the file; this replay's is the report's determinism): {}; compare hashes of headless runs with headless runs, and the desk's with kestrel desk --open",
            why.join("; ")
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

/// The text report's spend line: the replies that came back and the re-asks among them,
/// the tokens written, and the provider's own `usage`, so a headless run says what it cost
/// without `--json` (before 2026-12-06 a turn refused three times read only `invalid 0 …
/// fail-closed pass 1`). `spend: 3 replies, 2 re-asks | written 36 tokens (cl100k) |
/// provider usage 8523 prompt + 231 completion tokens over 3 attempts`.
fn spend_line(c: &session::Counts, s: &crate::turn::repair::Spend) -> String {
    let mut line = format!(
        "spend: {} repl{}, {} re-ask{} | written {} tokens (cl100k)",
        s.replies,
        if s.replies == 1 { "y" } else { "ies" },
        c.reasks,
        if c.reasks == 1 { "" } else { "s" },
        s.tokens
    );
    if s.tokens_estimated > 0 {
        line.push_str(&format!(
            " + ~{} estimated (replies refused unread for their size)",
            s.tokens_estimated
        ));
    }
    if s.provider_attempts > 0 {
        line.push_str(&format!(
            " | provider usage {} prompt + {} completion tokens over {} attempt{}",
            s.provider_prompt_tokens,
            s.provider_completion_tokens,
            s.provider_attempts,
            if s.provider_attempts == 1 { "" } else { "s" }
        ));
    } else {
        line.push_str(" | no provider usage reported");
    }
    line.push('\n');
    line
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
