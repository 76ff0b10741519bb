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
//! Per arm: *escapes* are completed replies (the model stopped by itself: not cut at the
//! budget, not a provider error) refused by the parser with a `syntax` error, i.e. outside
//! the grammar the constraint sends, over completed replies; *truncations* are replies cut
//! at the budget, over all replies; *invalid / pass / plan / stand-down / provider-error*
//! are how turns ended (invalid: the fail-closed pass after the repair budget), over turns;
//! *tokens/turn* are the cl100k tokens written per turn (every attempt); *wall* is the
//! arm's wall time and per turn.

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
    /// Output-token budgets (`max_tokens`), one arm each: `--budgets 256,512`.
    #[arg(long, value_delimiter = ',', default_values_t = [256u32, 512])]
    pub budgets: Vec<u32>,
    /// Prompt profiles, one axis of the grid: `--profiles authoring-v1,authoring-v2` (the
    /// seed's two), or add `completion-v1` (few-shot, for base models).
    #[arg(long, value_delimiter = ',', value_enum,
          default_values_t = [super::turn::ProfileArg::AuthoringV1, super::turn::ProfileArg::AuthoringV2])]
    pub profiles: Vec<super::turn::ProfileArg>,
    /// The directory for the Bus files and `table.md` (created).
    #[arg(long)]
    pub out: PathBuf,
    /// The model name sent to the server.
    #[arg(long, default_value = "default")]
    pub model: String,
    /// Sampling temperature.
    #[arg(long, allow_negative_numbers = true, default_value_t = 0.7)]
    pub temperature: f32,
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
    tokens: u64,
    wall: Duration,
    buses: Vec<(String, String)>,
}

impl Tally {
    fn add(&mut self, asks: &[crate::turn::report::AskRecord]) {
        for a in asks {
            self.turns += 1;
            for at in &a.attempts {
                self.tokens += at.tokens as u64;
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
            match &a.turn.outcome {
                Outcome::Pass { fail_closed: true } => self.invalid += 1,
                Outcome::Pass { .. } => self.pass += 1,
                Outcome::Supersede { plans, .. } if !plans.is_empty() => self.plan += 1,
                Outcome::StandDown { .. } => self.stand_down += 1,
                Outcome::ProviderError { .. } => self.provider_error += 1,
                o if o.class() == crate::turn::TurnClass::Invalid => self.invalid += 1,
                _ => {}
            }
        }
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
    if !(a.author.starts_with("http://") || a.author.starts_with("https://")) {
        errln!("error code=USAGE message=--author must be a model server, http(s)://HOST/v1");
        return 1;
    }
    if let Err(e) = std::fs::create_dir_all(&a.out) {
        errln!(
            "error code=IO message=cannot create {}: {e}",
            a.out.display()
        );
        return 1;
    }
    super::signals::install();
    let mut arms = Vec::new();
    let mut profiles: Vec<Profile> = Vec::new();
    for p in &a.profiles {
        let p = Profile::from(*p);
        if !profiles.contains(&p) {
            profiles.push(p);
        }
    }
    for profile in profiles {
        for constrained in [false, true] {
            for &budget in &a.budgets {
                arms.push(Arm {
                    profile,
                    constrained,
                    budget,
                });
            }
        }
    }
    let started = chrono_free_now();
    let mut results: Vec<(Arm, Tally)> = Vec::new();
    for (i, arm) in arms.iter().enumerate() {
        match run_arm(a, *arm, i, arms.len()) {
            Ok(t) => results.push((*arm, t)),
            Err(e) => {
                errln!("{e}");
                return 1;
            }
        }
        if super::signals::caught().is_some() {
            errln!(
                "error code=INTERRUPTED message=stopped after arm {}",
                arm.name()
            );
            break;
        }
    }
    let table = table(a, &results, &started);
    let path = a.out.join("table.md");
    if let Err(e) = std::fs::write(&path, &table) {
        errln!("error code=IO message=cannot write {}: {e}", path.display());
        return 1;
    }
    super::out::stdout(&table)
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
    };
    let spec = flags.spec(&a.author);
    let mut tally = Tally::default();
    let t0 = Instant::now();
    let mut session = 0usize;
    while tally.turns < a.turns {
        if super::signals::caught().is_some() {
            break;
        }
        let tape = &a.tapes[session % a.tapes.len()];
        session += 1;
        let bus_path = dir.join(format!("{session:04}.bus.jsonl"));
        let (mut author, _) = spec.open().map_err(crate::session::coded)?;
        let want = a.turns - tally.turns;
        let got = one_session(tape, arm, &mut *author, &bus_path, want, |k| {
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
        let bytes = std::fs::read(&bus_path).map_err(|e| {
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

/// One session of `tape` for `arm`, stopped once `want` turns are on its Bus; returns the
/// turns it recorded. `progress(k)` is called after each turn.
fn one_session(
    tape: &Path,
    arm: Arm,
    author: &mut dyn crate::session::TurnSource,
    bus_path: &Path,
    want: u64,
    mut progress: impl FnMut(u64),
) -> Result<u64, String> {
    let reader = crate::market::tape::open_tape(tape)
        .map_err(|e| format!("error code=TAPE message={}: {e}", tape.display()))?;
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
    engine.author = author.identity().map(|i| bus::AuthorIdentity {
        kind: i.kind.to_string(),
        model: i.model,
        constrained: i.constrained,
        profile: arm.profile.name().to_string(),
        prompt_hash: arm.profile.prompt_hash(),
        max_tokens: i.max_tokens,
    });
    let cfg = RunConfig {
        engine,
        profile: arm.profile,
        author: AuthorKind::Model,
        open_wake: true,
        view_request_cap: None,
    };
    let mut s = Run::new(reader, cfg, &[], Bus::new(Some(sink)))
        .map_err(|e| format!("error code=TAPE message={}: {e}", tape.display()))?;
    let mut turns = 0u64;
    let mut stopped = false;
    while !s.is_done() {
        if super::signals::caught().is_some() {
            stopped = true;
            break;
        }
        let fired = s
            .step()
            .map_err(|e| format!("error code=TAPE message={}: {e}", tape.display()))?;
        for w in &fired {
            s.wake(w, author);
            let now = s.turn_log().len() as u64;
            if now > turns {
                turns = now;
                progress(turns);
            }
        }
        if turns >= want {
            stopped = true;
            break;
        }
    }
    let bus = if stopped {
        s.interrupt("experiment: the arm has its turns")
    } else {
        s.finish()
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
    Ok(turns)
}

fn table(a: &ExperimentArgs, results: &[(Arm, Tally)], started: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# seed 001 on a model: {} turns per arm, model `{}` at {}, temperature {}, {}\n",
        a.turns, a.model, a.author, a.temperature, started
    );
    let _ = writeln!(
        s,
        "| arm | turns | escapes / completed | truncated / replies | invalid | pass | plan | stand-down | provider-error | tokens/turn | wall | wall/turn |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (arm, t) in results {
        let per = if t.turns == 0 {
            0.0
        } else {
            t.wall.as_secs_f64() / t.turns as f64
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} ({}/{}) | {} ({}/{}) | {} | {} | {} | {} | {} | {:.0} | {:.0} s | {:.1} s |",
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
            if t.turns == 0 {
                0.0
            } else {
                t.tokens as f64 / t.turns as f64
            },
            t.wall.as_secs_f64(),
            per
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
