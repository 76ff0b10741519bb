//! `kestrel experiment`: seed 001's constrained-decoding experiment against a real model
//! server, headless, with progress on stderr.
//!
//! Arms: constrained decoding off / on × the profiles (`--profiles`; by default the seed's
//! `authoring-v1`, the JSON envelope, and `authoring-v2`, pure Kestrel; `completion-v1`, the
//! few-shot profile for base models, can be added) × each output-token budget (`--budgets`,
//! sent as `max_tokens`). Each arm replays the given tapes in turn, a whole session each (the
//! author is asked at the OPEN wake and at every WAKE it schedules), until it has `--turns`
//! turns; a session still running when the arm has its turns is interrupted there. Every
//! session's Bus is kept (`OUT/<arm>/<n>.bus.jsonl`, its `session-start` naming the arm, so
//! `kestrel errors report OUT/*/` splits them), and the table is printed and written to
//! `OUT/table.md` with each Bus file's blake3.
//!
//! Everything that can refuse the experiment is checked before the model is first asked:
//! the flags (a profile or a budget given twice is one arm: two arms of one name would
//! share, and overwrite, one directory), `--out` (new or empty: an earlier run's files
//! left in it would be read as this run's), and every tape, read whole as `kestrel agent`
//! reads its one (a tape cut short is `ends-early`). A signal ends the experiment as it
//! ends `agent`: the session in play gets an `error` event naming the signal and its
//! `session-end`, the table keeps the arms up to there (an ask the signal cut is no turn
//! of the model's), and the verb exits 1 with `error code=INTERRUPTED`. An arm whose every
//! turn was a provider error fails the experiment (`error code=PROVIDER`, exit 1, after
//! the table), as a run whose every reply failed fails `agent`.
//!
//! Per arm: *escapes* are completed replies (the model stopped by itself: not cut at the
//! budget, not a provider error) refused by the parser with a `syntax` error, i.e. outside
//! the grammar the constraint sends, over completed replies; *truncations* are replies cut
//! at the budget, over all replies; *invalid / pass / plan / stand-down / provider-error*
//! are how turns ended (invalid: the fail-closed pass after the repair budget), over turns;
//! *tokens/turn* are the cl100k tokens written per turn (every attempt; an oversized reply's
//! bytes/4 estimate is added after it, marked, never into the count); *wall* is the arm's
//! wall time and per turn; *provider prompt/turn* and *provider completion/turn* are the
//! server's own `usage` per turn (`-` when it sent none): the only columns that count the
//! prompt, and in the model's tokenizer.

use crate::bus::{self, Bus};
use crate::session::{AuthorFlags, Run, RunConfig};
use crate::turn::report::read_asks;
use crate::turn::{AuthorKind, Outcome, Profile};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Arguments of `kestrel experiment`.
#[derive(Debug, clap::Args)]
pub struct ExperimentArgs {
    /// The model server (`http(s)://HOST/v1`).
    #[arg(long)]
    pub author: String,
    /// Tapes to replay, in turn (repeatable).
    #[arg(long = "tape", required = true)]
    pub tapes: Vec<PathBuf>,
    /// Turns per arm.
    #[arg(long, allow_negative_numbers = true, default_value_t = 200)]
    pub turns: u64,
    /// Output-token budgets (`max_tokens`), one arm each: `--budgets 256,512` (a budget
    /// given twice is one arm).
    #[arg(long, value_delimiter = ',', default_values_t = [256u32, 512])]
    pub budgets: Vec<u32>,
    /// Prompt profiles, one axis of the grid: `--profiles authoring-v1,authoring-v2` (the
    /// seed's two), or add `completion-v1` (few-shot, for base models); a profile given
    /// twice is one arm.
    #[arg(long, value_delimiter = ',', value_enum,
          default_values_t = [super::turn::ProfileArg::AuthoringV1, super::turn::ProfileArg::AuthoringV2])]
    pub profiles: Vec<super::turn::ProfileArg>,
    /// The directory for the Bus files and `table.md`: a new or an empty one (created).
    #[arg(long)]
    pub out: PathBuf,
    /// The model name sent to the server.
    #[arg(long, default_value = "default")]
    pub model: String,
    /// Sampling temperature, from 0 to 2.
    #[arg(long, allow_negative_numbers = true, default_value_t = 0.7, value_parser = crate::session::temperature)]
    pub temperature: f64,
    /// Seconds one reply may take (every retry included).
    #[arg(long, allow_negative_numbers = true, default_value_t = crate::author::openai::DEFAULT_TOTAL_SECS, value_parser = crate::session::positive_secs)]
    pub timeout: u64,
    /// Seconds to the first streamed token.
    #[arg(long, allow_negative_numbers = true, default_value_t = crate::author::openai::DEFAULT_FIRST_TOKEN_SECS, value_parser = crate::session::positive_secs)]
    pub first_token_timeout: u64,
}

/// One arm of the grid.
#[derive(Debug, Clone, Copy)]
struct Arm {
    profile: Profile,
    constrained: bool,
    budget: u32,
}

impl Arm {
    fn name(&self) -> String {
        format!(
            "{}-{}-{}",
            self.profile.name(),
            if self.constrained {
                "constrained"
            } else {
                "free"
            },
            self.budget
        )
    }
}

/// What one arm counted.
#[derive(Debug, Default, Clone)]
struct Tally {
    turns: u64,
    replies: u64,
    completed: u64,
    escapes: u64,
    truncated: u64,
    invalid: u64,
    pass: u64,
    plan: u64,
    stand_down: u64,
    provider_error: u64,
    /// cl100k tokens written, the estimates of oversized replies, the provider's `usage`.
    spend: crate::turn::repair::Spend,
    wall: Duration,
    buses: Vec<(String, String)>,
    /// The first provider error's message, to say why an arm failed.
    first_provider_error: Option<String>,
    /// The signal that stopped the arm before it had its turns.
    interrupted: Option<&'static str>,
}

impl Tally {
    fn add(&mut self, asks: &[crate::turn::report::AskRecord]) {
        for a in asks.iter().filter(|a| !a.cut_by_a_signal()) {
            // An experiment's arms are headless: no proposal is ever rejected there.
            let Some(turn) = &a.turn else { continue };
            self.turns += 1;
            for at in &a.attempts {
                self.spend.add(at);
                match at.outcome.as_str() {
                    "provider-error" => {}
                    "truncated" => {
                        self.replies += 1;
                        self.truncated += 1;
                    }
                    o => {
                        self.replies += 1;
                        self.completed += 1;
                        if o == "invalid" && at.errors.iter().any(|e| e.rule == "syntax") {
                            self.escapes += 1;
                        }
                    }
                }
            }
            match &turn.outcome {
                Outcome::Pass { fail_closed: true } => self.invalid += 1,
                Outcome::Pass { .. } => self.pass += 1,
                Outcome::Supersede { plans, .. } if !plans.is_empty() => self.plan += 1,
                Outcome::StandDown { .. } => self.stand_down += 1,
                Outcome::ProviderError { message } => {
                    self.provider_error += 1;
                    self.first_provider_error
                        .get_or_insert_with(|| message.clone());
                }
                o if o.class() == crate::turn::TurnClass::Invalid => self.invalid += 1,
                _ => {}
            }
        }
    }

    /// Was every turn of the arm a provider error (no reply the model wrote)?
    fn all_provider_errors(&self) -> bool {
        self.turns > 0 && self.provider_error == self.turns
    }
}

/// An arm's wall time: whole seconds from 10 s up (`33 s`), one decimal below (`0.3 s`), where
/// a fast arm read `0 s`.
fn wall(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 9.95 {
        format!("{secs:.1} s")
    } else {
        format!("{secs:.0} s")
    }
}

fn pct(n: u64, d: u64) -> String {
    if d == 0 {
        "-".into()
    } else {
        format!("{:.1}%", n as f64 * 100.0 / d as f64)
    }
}

/// Run `kestrel experiment`; returns the exit code.
pub fn run(a: &ExperimentArgs) -> i32 {
    if a.turns == 0 || a.budgets.is_empty() || a.budgets.contains(&0) {
        errln!("error code=USAGE message=--turns and every --budgets value must be at least 1");
        return 1;
    }
    if a.profiles.is_empty() {
        errln!("error code=USAGE message=--profiles needs at least one profile");
        return 1;
    }
    if let Some(e) = not_a_model_server(&a.author) {
        errln!("{e}");
        return 1;
    }
    if let Err(e) = check_out(&a.out) {
        errln!("{e}");
        return 1;
    }
    // Signals first, as in `agent`: a signal during a long tape check stops the experiment
    // before the model is asked.
    super::signals::install();
    if let Err(e) = check_tapes(&a.tapes) {
        errln!("{e}");
        return 1;
    }
    if let Err(e) = std::fs::create_dir_all(&a.out) {
        errln!(
            "error code=IO message=cannot create {}: {e}",
            a.out.display()
        );
        return 1;
    }
    let arms = grid(a);
    let started = chrono_free_now();
    let mut results: Vec<(Arm, Tally)> = Vec::new();
    let mut stopped = None;
    for (i, arm) in arms.iter().enumerate() {
        if let Some(sig) = super::signals::caught() {
            let what = format!(
                "the experiment stopped before arm {}/{} {}",
                i + 1,
                arms.len(),
                arm.name()
            );
            stopped = Some((sig, what));
            break;
        }
        match run_arm(a, *arm, i, arms.len()) {
            Ok(t) => {
                if let Some(sig) = t.interrupted {
                    let what = format!(
                        "the experiment stopped in arm {}/{} {} after {} of {} turns",
                        i + 1,
                        arms.len(),
                        arm.name(),
                        t.turns,
                        a.turns
                    );
                    stopped = Some((sig, what));
                }
                results.push((*arm, t));
            }
            Err(e) => {
                errln!("{e}");
                return 1;
            }
        }
        if stopped.is_some() {
            break;
        }
    }
    let table = table(a, &results, &started, stopped.as_ref());
    let path = a.out.join("table.md");
    if let Err(e) = std::fs::write(&path, &table) {
        errln!("error code=IO message=cannot write {}: {e}", path.display());
        return 1;
    }
    let code = super::out::stdout(&table);
    if code != 0 {
        return code;
    }
    let failed = failed_arms(&results);
    if let Some((sig, what)) = &stopped {
        errln!(
            "error code=INTERRUPTED message={sig}: {what}; a session cut short ends its Bus with an error event there, and table.md has the arms up to there"
        );
    }
    if stopped.is_some() || failed > 0 {
        1
    } else {
        0
    }
}

/// Why `author` cannot be put through the grid (`None`: a model server, `http(s)://`). The
/// grid's two axes besides the profile are what the server is sent: the grammar
/// (constrained decoding) and `max_tokens` (the budget). A command author gets neither (it
/// reads the prompt on stdin, and no budget is passed), so its constrained and free arms,
/// and its arms of every budget, would be the same run under different names; a script or
/// a saved Bus replays fixed replies. Decision (2026-12-05): refused, saying what to use.
fn not_a_model_server(author: &str) -> Option<String> {
    if author.starts_with("http://") || author.starts_with("https://") {
        return None;
    }
    let why = if author.starts_with("cmd:") {
        "a command author is sent no grammar and no max_tokens, so the grid's constrained and budget axes would be the same run under different names"
    } else {
        "a script or a saved Bus replays fixed replies, which no grid arm changes"
    };
    Some(format!(
        "error code=USAGE message=--author must be a model server, http(s)://HOST/v1: the experiment's arms are constrained decoding and max_tokens, what a model server is sent; {why}. To compare a command author's profiles, run `kestrel agent --author AUTHOR --profile P --tape T --bus DIR/P-N.bus.jsonl` per profile and tape, then `kestrel errors report DIR/` (one arm per profile)"
    ))
}

/// The arms of the grid: profile × constrained off/on × budget, each profile and each
/// budget once however often it was given (two arms of one name would write one directory).
fn grid(a: &ExperimentArgs) -> Vec<Arm> {
    let mut profiles: Vec<Profile> = Vec::new();
    for p in &a.profiles {
        let p = Profile::from(*p);
        if !profiles.contains(&p) {
            profiles.push(p);
        }
    }
    let mut budgets: Vec<u32> = Vec::new();
    for &b in &a.budgets {
        if !budgets.contains(&b) {
            budgets.push(b);
        }
    }
    let mut arms = Vec::new();
    for profile in profiles {
        for constrained in [false, true] {
            for &budget in &budgets {
                arms.push(Arm {
                    profile,
                    constrained,
                    budget,
                });
            }
        }
    }
    arms
}

/// Say each arm whose every turn was a provider error (the model never answered: a dead
/// server, a refused grammar), as `kestrel agent` says a run whose every reply failed;
/// how many there were.
fn failed_arms(results: &[(Arm, Tally)]) -> usize {
    let failed: Vec<_> = results
        .iter()
        .filter(|(_, t)| t.all_provider_errors())
        .collect();
    for (arm, t) in &failed {
        errln!(
            "error code=PROVIDER message=every reply of arm {} ({} of {} turns) was a provider error, the first: {}: check the author (each error is in its turn event on the Bus)",
            arm.name(),
            t.provider_error,
            t.turns,
            crate::lang::diag::visible_line(t.first_provider_error.as_deref().unwrap_or(""))
        );
    }
    failed.len()
}

/// `--out` is new or empty. Each arm's Bus files are numbered from `0001` in `OUT/<arm>/`
/// and `table.md` lists this run's only, so an earlier run's files left there would be
/// overwritten in part and read with this run's by `kestrel errors report OUT/*/`.
/// `--out` naming a file (or a path through one) is not a folder the experiment can use:
/// said so, as a usage error, not as a file it "cannot read"; so is `-`, which is standard
/// output on every other verb and cannot hold a directory.
fn check_out(out: &Path) -> Result<(), String> {
    if out == Path::new("-") {
        // Everywhere else `-` is standard output; here it made a directory named `-`.
        return Err(
            "error code=USAGE message=--out is a directory for the arms' Bus files and table.md; `-` (standard output) cannot hold them: give a new or an empty directory (the table is printed on standard output as well)".into(),
        );
    }
    let not_a_folder = |why: &str| {
        format!(
            "error code=USAGE message=--out {} {why}: it cannot be used as the output folder (the experiment writes its arms' directories and table.md there); give a new or an empty directory",
            out.display()
        )
    };
    if out.exists() && !out.is_dir() {
        return Err(not_a_folder("is a file, not a directory"));
    }
    let empty = match std::fs::read_dir(out) {
        Ok(mut entries) => entries.next().is_none(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            return Err(not_a_folder(
                "is not a directory (a part of its path is a file)",
            ));
        }
        Err(e) => return Err(super::cannot_read(out, &e)),
    };
    if empty {
        return Ok(());
    }
    Err(format!(
        "error code=USAGE message=--out {} is not empty: the experiment writes its arms' directories and table.md there, and an earlier run's files would mix with this one's; give a new or an empty directory",
        out.display()
    ))
}

/// Every tape read whole before the model is first asked, as `kestrel agent` reads its one
/// ([`super::run::check_whole_tape`]): a tape an arm would refuse on reaching it (a bad
/// line, one cut short: `ends-early`) is refused before any arm has called the model. Each
/// arm replays the tapes from their start, so a pipe or a device, which reads once, is
/// refused too.
fn check_tapes(tapes: &[PathBuf]) -> Result<(), String> {
    for tape in tapes {
        if super::sniff::is_stream(tape) {
            return Err(format!(
                "error code=USAGE message=--tape {} is a pipe or a device: every arm replays the tapes from their start, so a tape is a file",
                tape.display()
            ));
        }
        super::run::open_tape_or_say(tape)?;
        super::run::check_whole_tape(tape)?;
    }
    Ok(())
}

/// Seconds since the Unix epoch (the table says when it ran).
fn chrono_free_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("unix time {secs}")
}

fn run_arm(a: &ExperimentArgs, arm: Arm, i: usize, n: usize) -> Result<Tally, String> {
    let dir = a.out.join(arm.name());
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("error code=IO message=cannot create {}: {e}", dir.display()))?;
    let flags = AuthorFlags {
        model: a.model.clone(),
        temperature: a.temperature,
        constrained: arm.constrained,
        timeout: a.timeout,
        max_tokens: arm.budget,
        first_token_timeout: a.first_token_timeout,
        pass_api_key: false,
        given: Vec::new(),
    };
    let spec = flags.spec(&a.author);
    let mut tally = Tally::default();
    let t0 = Instant::now();
    let mut session = 0usize;
    while tally.turns < a.turns {
        if let Some(sig) = super::signals::caught() {
            tally.interrupted = Some(sig);
            break;
        }
        let tape = &a.tapes[session % a.tapes.len()];
        session += 1;
        let bus_path = dir.join(format!("{session:04}.bus.jsonl"));
        let (mut author, _) = spec.open().map_err(crate::session::coded)?;
        let want = a.turns - tally.turns;
        let (got, signal) = one_session(tape, arm, &mut *author, &bus_path, want, |k| {
            errln!(
                "experiment: arm {}/{} {}: turn {}/{} ({:.0} s)",
                i + 1,
                n,
                arm.name(),
                tally.turns + k,
                a.turns,
                t0.elapsed().as_secs_f64()
            );
        })?;
        let bytes = crate::limits::read_file_bounded(&bus_path, crate::limits::MAX_RECORDING_BYTES)
            .map_err(|e| {
                format!(
                    "error code=IO message=cannot read {}: {e}",
                    bus_path.display()
                )
            })?;
        let asks = read_asks(&bytes).map_err(|e| {
            format!(
                "error code=BUS message={}: line {}: {}",
                bus_path.display(),
                e.line,
                e.message
            )
        })?;
        tally.add(&asks);
        tally
            .buses
            .push((bus_path.display().to_string(), bus::hash_bytes(&bytes)));
        if signal.is_some() {
            tally.interrupted = signal;
            break;
        }
        if got == 0 {
            return Err(format!(
                "error code=TAPE message={}: a session asked the author nothing (no OPEN wake)",
                tape.display()
            ));
        }
    }
    tally.wall = t0.elapsed();
    Ok(tally)
}

/// Why a session stopped before the end of its tape.
enum Stop {
    /// The arm has its turns.
    HasTurns,
    /// A signal (its name) was caught.
    Signal(&'static str),
}

/// One session of `tape` for `arm`, stopped once `want` turns are on its Bus or at a signal;
/// returns the asks it recorded and the signal that stopped it, if one did (the Bus then
/// ends as `kestrel agent`'s does: an `error` event naming the signal, then `session-end`).
/// `progress(k)` is called after each turn.
fn one_session(
    tape: &Path,
    arm: Arm,
    author: &mut dyn crate::session::TurnSource,
    bus_path: &Path,
    want: u64,
    mut progress: impl FnMut(u64),
) -> Result<(u64, Option<&'static str>), String> {
    let reader = super::run::open_tape_or_say(tape)?;
    let file = std::fs::File::create(bus_path).map_err(|e| {
        format!(
            "error code=IO message=cannot create {}: {e}",
            bus_path.display()
        )
    })?;
    let sink: Box<dyn std::io::Write> = Box::new(std::io::BufWriter::new(file));
    let mut engine = crate::engine::EngineConfig::strict(crate::market::Px::from_raw(
        crate::session::DEFAULT_R_USD.saturating_mul(crate::market::types::PX_SCALE),
    ));
    engine.author = author
        .identity()
        .map(|i| bus::AuthorIdentity::of(i, arm.profile));
    let cfg = RunConfig {
        engine,
        profile: arm.profile,
        author: AuthorKind::Model,
        open_wake: true,
        view_request_cap: None,
    };
    let mut s = Run::new(reader, cfg, &[], Bus::new(Some(sink)))
        .map_err(|e| format!("{}: {e}", tape.display()))?;
    let mut turns = 0u64;
    let stop = loop {
        if let Some(sig) = super::signals::caught() {
            break Some(Stop::Signal(sig));
        }
        if turns >= want {
            break Some(Stop::HasTurns);
        }
        if s.is_done() {
            break None;
        }
        let fired = s.step().map_err(|e| format!("{}: {e}", tape.display()))?;
        for w in &fired {
            // No more asks once a signal is caught; the ask it cut is no turn to count.
            if super::signals::caught().is_some() {
                break;
            }
            s.wake(w, author);
            let now = s.turn_log().len() as u64;
            if now > turns {
                turns = now;
                if super::signals::caught().is_none() {
                    progress(turns);
                }
            }
        }
    };
    let (bus, signal) = match stop {
        Some(Stop::Signal(sig)) => (
            s.interrupt(&super::run::interrupted_message(sig)),
            Some(sig),
        ),
        Some(Stop::HasTurns) => (s.interrupt("experiment: the arm has its turns"), None),
        None => (s.finish(), None),
    };
    if let Some(e) = bus.error() {
        return Err(format!("error code=IO message=writing the bus: {e}"));
    }
    match bus.into_sink() {
        Ok(Some(mut w)) => w
            .flush()
            .map_err(|e| format!("error code=IO message=flushing the bus: {e}"))?,
        Ok(None) => {}
        Err(e) => return Err(format!("error code=IO message=flushing the bus: {e}")),
    }
    Ok((turns, signal))
}

/// A mean per turn, rounded to a whole number (`0` with no turns).
fn per_turn(n: u64, turns: u64) -> String {
    if turns == 0 {
        "0".into()
    } else {
        format!("{:.0}", n as f64 / turns as f64)
    }
}

/// The cl100k tokens written per turn; an oversized reply's bytes/4 estimate is not a count,
/// so it is added after it, marked: `69 + ~250000 est.`.
fn tokens_per_turn(t: &Tally) -> String {
    let mut s = per_turn(t.spend.tokens, t.turns);
    if t.spend.tokens_estimated > 0 {
        s.push_str(&format!(
            " + ~{} est.",
            per_turn(t.spend.tokens_estimated, t.turns)
        ));
    }
    s
}

/// A provider-reported total per turn, `-` when no reply of the arm reported a `usage`.
fn provided_per_turn(t: &Tally, n: u64) -> String {
    if t.spend.provider_attempts == 0 {
        "-".into()
    } else {
        per_turn(n, t.turns)
    }
}

/// The table of `results`; `stopped` is the signal that stopped the experiment and where
/// (the rows end there).
fn table(
    a: &ExperimentArgs,
    results: &[(Arm, Tally)],
    started: &str,
    stopped: Option<&(&str, String)>,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# seed 001 on a model: {} turns per arm, model `{}` at {}, temperature {}, {}\n",
        a.turns, a.model, a.author, a.temperature, started
    );
    if let Some((sig, what)) = stopped {
        let _ = writeln!(
            s,
            "Interrupted by {sig}: {what}; the rows end there (an ask the signal cut is not counted).\n"
        );
    }
    let _ = writeln!(
        s,
        "| arm | turns | escapes / completed | truncated / replies | invalid | pass | plan | stand-down | provider-error | tokens/turn | wall | wall/turn | provider prompt/turn | provider completion/turn |"
    );
    let _ = writeln!(
        s,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for (arm, t) in results {
        let per = if t.turns == 0 {
            0.0
        } else {
            t.wall.as_secs_f64() / t.turns as f64
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} ({}/{}) | {} ({}/{}) | {} | {} | {} | {} | {} | {} | {} | {:.1} s | {} | {} |",
            arm.name(),
            t.turns,
            pct(t.escapes, t.completed),
            t.escapes,
            t.completed,
            pct(t.truncated, t.replies),
            t.truncated,
            t.replies,
            pct(t.invalid, t.turns),
            pct(t.pass, t.turns),
            pct(t.plan, t.turns),
            pct(t.stand_down, t.turns),
            pct(t.provider_error, t.turns),
            tokens_per_turn(t),
            wall(t.wall),
            per,
            provided_per_turn(t, t.spend.provider_prompt_tokens),
            provided_per_turn(t, t.spend.provider_completion_tokens)
        );
    }
    let _ = writeln!(s, "\nBus files (blake3):\n");
    for (_, t) in results {
        for (p, h) in &t.buses {
            let _ = writeln!(s, "- `{p}` {h}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fast arm's wall read `0 s`: below 10 s it has one decimal.
    #[test]
    fn wall_has_a_decimal_below_ten_seconds() {
        let ms = Duration::from_millis;
        assert_eq!(wall(ms(0)), "0.0 s");
        assert_eq!(wall(ms(340)), "0.3 s");
        assert_eq!(wall(ms(9_940)), "9.9 s");
        assert_eq!(wall(ms(9_960)), "10 s");
        assert_eq!(wall(ms(33_400)), "33 s");
    }
}
