//! The desk: the ratatui terminal app where a person and an agent fly one book on a replayed
//! tape (DESK.md). `kestrel` with no arguments (or `kestrel desk`) opens it on the bundled
//! tape with the example plans armed and the recorded house agent seated.
//!
//! The desk is a client of the [`Session`](crate::session::Session), which owns the run
//! (docs/desk.md, "One owner"): keys become [`Command`]s, the screen draws
//! [`SessionSnapshot`](crate::session::SessionSnapshot)s. The desk keeps no market, engine
//! or bar state of its own.
//!
//! - [`handle`]: the session on its own thread (or inline, for tests).
//! - [`app`]: the state machine of the screen (keys, focus, dialogs, the editor); no
//!   terminal.
//! - [`ui`]: drawing, a pure function of the app.
//! - [`editor`], [`theme`], [`keys`]: the pieces.

pub mod app;
pub mod chart;
pub mod editor;
pub mod fit;
pub mod handle;
pub mod keys;
pub mod legend;
pub mod log;
pub mod theme;
pub mod ui;

use crate::session::agent::Agent;
use crate::session::owner::NoticeLevel;
use crate::session::{
    self, AuthorTarget, Command, FlagUser, Opening, Session, SessionSnapshot, Settings, TapeSource,
    saved,
};
use crate::turn::{AuthorKind, Outcome, Profile, Reply, TurnContext, WakePhase};
use app::App;
use handle::SessionHandle;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use crate::session::owner::BUNDLED_TAPE;

/// The example plan (`examples/chase.kestrel`, the README's first sample).
pub const EXAMPLE_PLAN: &str = include_str!("../../examples/chase.kestrel");

/// The plans bare `kestrel` arms at the open (`examples/desk.kestrel`, run-desk's plans): on the bundled
/// tape they fire, fill, move and exit within the first hour (the README's tour).
pub const DEFAULT_PLANS: &str = include_str!("../../examples/desk.kestrel");

/// The bundled house agent: a script of replies, one per wake.
pub const HOUSE_AGENT_SCRIPT: &str = session::agent::HOUSE_AGENT_SCRIPT;

/// `kestrel desk` options (also `kestrel` with no subcommand).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DeskArgs {
    /// A tape (JSON Lines); default: the bundled trend session.
    #[arg(long)]
    pub tape: Option<PathBuf>,
    /// Reopen a saved session: its tape, settings and acts, resumed where it was left
    /// (Home goes back to the open). Nothing is written until you act.
    #[arg(long)]
    pub open: Option<PathBuf>,
    /// Documents to arm at the open (checked first), instead of the example plans.
    #[arg(long, num_args = 1..)]
    pub plans: Vec<PathBuf>,
    /// A script of `{"reply": "..."}` lines to seat as the agent, one reply per wake;
    /// default: the house agent.
    #[arg(long)]
    pub agent: Option<PathBuf>,
    /// A live author instead: `http(s)://HOST/v1` (an OpenAI-compatible server, key from
    /// KESTREL_API_KEY or the config directory), a saved Bus (`.jsonl`, its turns replay),
    /// or `cmd:COMMAND`, a command run with `sh -c` (prompt on stdin, reply on stdout; the
    /// bare form runs a command line or an executable script, never a document or a file
    /// that is not executable).
    #[arg(long, conflicts_with = "agent")]
    pub author: Option<String>,
    #[command(flatten)]
    pub how: crate::session::AuthorFlags,
    /// Start with no agent seated.
    #[arg(long)]
    pub no_agent: bool,
    /// Start in co-pilot mode (agent turns wait for accept / reject).
    #[arg(long)]
    pub copilot: bool,
    /// In co-pilot, keep the tape playing while a proposal waits (by default it pauses
    /// until you accept or reject, so a proposal never drifts from its wake).
    #[arg(long)]
    pub no_copilot_pause: bool,
    /// Do not arm the example plans (examples/desk.kestrel) at the open.
    #[arg(long)]
    pub no_example: bool,
    /// Do not save the session (nothing is written).
    #[arg(long)]
    pub no_save: bool,
    /// Start playing at once.
    #[arg(long)]
    pub play: bool,
    /// Dollars per 1R, whole dollars, as a session file keeps it (run, agent and grade take
    /// up to four decimals) [default: 1000].
    #[arg(long, allow_negative_numbers = true)]
    pub r_usd: Option<String>,
    /// The fill model [default: strict-cross-v1].
    #[arg(long)]
    pub fill: Option<String>,
    /// Dollars per million tokens sent to the agent (its prompt): with `--price-out`, the
    /// Tokens pane shows what the session's agent cost. Without a price no cost is shown.
    #[arg(long, value_name = "USD", allow_negative_numbers = true)]
    pub price_in: Option<String>,
    /// Dollars per million tokens the agent wrote (its replies); goes with `--price-in`.
    #[arg(long, value_name = "USD", allow_negative_numbers = true)]
    pub price_out: Option<String>,
    /// Start in this theme: `dark`, `light`, `high-contrast` (or a theme of your own in the
    /// config directory's `themes/`) [default: the `theme` of the config directory's
    /// `desk.toml`, else dark]. `t` cycles them and saves the choice there.
    #[arg(long)]
    pub theme: Option<String>,
}

/// The desk's own settings file in the config directory: `theme = "light"`, the theme the
/// desk starts in (`--theme` overrides it; `t` writes it).
pub const DESK_TOML: &str = "desk.toml";

/// The theme named in `desk.toml` of `dir`, with a warning for a file that does not read
/// (kept default, as keys.toml's problems are).
pub fn configured_theme(dir: Option<&Path>) -> (Option<String>, Vec<String>) {
    let Some(path) = dir.map(|d| d.join(DESK_TOML)) else {
        return (None, Vec::new());
    };
    let Ok(text) = crate::limits::read_file_bounded(&path, crate::limits::MAX_SMALL_FILE_BYTES)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
    else {
        return (None, Vec::new());
    };
    match text.parse::<toml::Table>() {
        Ok(t) => match t.get("theme") {
            None => (None, Vec::new()),
            Some(toml::Value::String(name)) => (Some(name.clone()), Vec::new()),
            Some(_) => (
                None,
                vec![format!(
                    "{}: error code=CONFIG message=theme must be a string (a theme's name)",
                    path.display()
                )],
            ),
        },
        Err(e) => (
            None,
            vec![format!(
                "{}: error code=CONFIG message={}",
                path.display(),
                e.to_string().lines().next().unwrap_or_default()
            )],
        ),
    }
}

/// Write `theme = "<name>"` to `desk.toml` in `dir`, keeping its other lines: the top-level
/// line that sets `theme` is replaced, or one is added above the first table header.
pub fn save_theme(dir: &Path, name: &str) -> Result<(), String> {
    let path = dir.join(DESK_TOML);
    let text = crate::limits::read_text_bounded(&path, crate::limits::MAX_SMALL_FILE_BYTES)
        .unwrap_or_default();
    let quoted: String = name
        .chars()
        .flat_map(|c| match c {
            '"' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect();
    let line = format!("theme = \"{quoted}\"");
    let sets_theme = |l: &str| {
        l.trim_start()
            .strip_prefix("theme")
            .is_some_and(|rest| rest.trim_start().starts_with('='))
    };
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    // A top-level key lives before the first table header: a `theme =` inside `[table]` is
    // that table's own, and a new top-level line must go above the header to stay top-level.
    let top = lines
        .iter()
        .position(|l| l.trim_start().starts_with('['))
        .unwrap_or(lines.len());
    match lines[..top].iter().position(|l| sets_theme(l)) {
        Some(i) => lines[i] = line,
        None => lines.insert(top, line),
    }
    let out = lines.join("\n") + "\n";
    std::fs::create_dir_all(dir)
        .and_then(|_| std::fs::write(&path, out))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Read a script of `{"reply": "..."}` lines (one reply per wake). Errors name the line.
pub fn parse_script(text: &str) -> Result<Vec<String>, String> {
    crate::session::parse_script(text)
}

/// Resolve a tape label (`bundled:<name>` or a path) to its bytes.
pub fn tape_source(label: Option<&str>) -> Result<TapeSource, String> {
    TapeSource::open(label)
}

/// Load themes and keys from the config directory (or `dir`), with warnings.
pub fn load_config(dir: Option<&Path>) -> (Vec<theme::Theme>, keys::KeyMap, Vec<String>) {
    let (themes, mut warnings) = theme::load_all(dir.map(|d| d.join("themes")).as_deref());
    let keys_path = dir.map(|d| d.join("keys.toml"));
    let keys_text = keys_path.as_ref().and_then(|p| {
        crate::limits::read_text_bounded(p, crate::limits::MAX_SMALL_FILE_BYTES).ok()
    });
    let origin = keys_path
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "keys.toml".into());
    let (keys, w) = keys::KeyMap::with_overrides_from(keys_text.as_deref(), &origin);
    warnings.extend(w);
    (themes, keys, warnings)
}

/// The agent the options ask for (`None`: no agent).
pub fn desk_agent(a: &DeskArgs) -> Result<Option<Agent>, String> {
    let agent = chosen_agent(a)?;
    // A flag the seated author does not use is refused, not dropped.
    let (user, what) = match &agent {
        Some(Agent::Live(spec)) => match spec.resolve() {
            Ok(AuthorTarget::Command(_)) => (FlagUser::Command, "by a command"),
            _ => (FlagUser::Model, "by a model"),
        },
        Some(Agent::Recorded { .. }) => (
            FlagUser::Other,
            "by a saved Bus, which replays its recorded turns",
        ),
        Some(_) if a.author.is_none() && a.agent.is_none() => {
            (FlagUser::Other, "by the house agent, a script of replies")
        }
        Some(_) => (FlagUser::Script, "by a script of replies"),
        None => (FlagUser::Other, "with --no-agent"),
    };
    a.how.refuse_unused(user, what)?;
    Ok(agent)
}

/// The agent the options name, before the author flags are checked against it.
fn chosen_agent(a: &DeskArgs) -> Result<Option<Agent>, String> {
    if a.no_agent {
        // Refused, as other contradicting flags are: before 2026-12-06 the agent named was
        // dropped without a word (`author none`).
        let named = match (&a.author, &a.agent) {
            (Some(s), _) => format!("--author {s}"),
            (None, Some(p)) => format!("--agent {}", p.display()),
            (None, None) => return Ok(None),
        };
        return Err(format!(
            "error code=USAGE message=--no-agent and {named} contradict each other: --no-agent seats no agent, {} seats one; give one of them",
            named.split(' ').next().unwrap_or_default()
        ));
    }
    if let Some(spec) = &a.author {
        let spec = a.how.spec(spec);
        // Read as `kestrel agent` reads it: a string that names no author (a missing path, a
        // Kestrel document, a file that is not executable) is refused with what it takes.
        match spec.resolve() {
            Ok(AuthorTarget::Model(_) | AuthorTarget::Command(_)) => {
                return Ok(Some(Agent::Live(spec)));
            }
            Ok(AuthorTarget::File(_)) => {}
            Err(e) => return Err(format!("error code=USAGE message={e}")),
        }
        let bytes = crate::limits::read_file_bounded(
            Path::new(&spec.spec),
            crate::limits::MAX_RECORDING_BYTES,
        )
        .map_err(|e| crate::cli::cannot_read_bounded(Path::new(&spec.spec), &e))?;
        let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
        let is_bus = serde_json::from_slice::<serde_json::Value>(first)
            .is_ok_and(|v| v["type"] == "session-start");
        let name = spec
            .spec
            .rsplit('/')
            .next()
            .unwrap_or("recorded")
            .to_string();
        if is_bus {
            // Refused with its own code (`BUS`, `REPLAY`), naming the file, as `agent` does.
            crate::session::Recorded::from_bus_file(&spec.spec, &bytes)?;
            return Ok(Some(Agent::Recorded {
                name,
                bus: Arc::from(bytes),
            }));
        }
        return Agent::script(&name, &String::from_utf8_lossy(&bytes))
            .map(Some)
            .map_err(|e| format!("error code=USAGE message={}: {e}", spec.spec));
    }
    match &a.agent {
        Some(p) => {
            if let Some(e) = crate::cli::sniff::not_a_reply_script(p) {
                return Err(e);
            }
            let text = read_text(p)?;
            let name = p
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("agent")
                .to_string();
            Agent::script(&name, &text)
                .map(Some)
                .map_err(|e| format!("error code=USAGE message={}: {e}", p.display()))
        }
        None => Ok(Some(Agent::house())),
    }
}

/// A file as UTF-8 text, or the coded I/O error (`cannot read PATH: no such file`).
fn read_text(p: &Path) -> Result<String, String> {
    crate::limits::read_text_bounded(p, crate::limits::MAX_RECORDING_BYTES)
        .map_err(|e| crate::cli::cannot_read_bounded(p, &e))
}

/// Why the desk did not open: the coded line(s) to print on stderr and the exit code, the
/// same the headless verbs give for the same error (README "The verbs": 1 a usage or I/O
/// error, 2 a refused document).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The lines to print, each `error code=CODE ...` (after the file it is about, where
    /// there is one, as `run` prints a document's or a tape's).
    pub text: String,
    /// The process exit code.
    pub exit: i32,
}

impl Refusal {
    /// A refused document (`--plans`): exit 2.
    fn document(text: String) -> Refusal {
        Refusal {
            text,
            exit: crate::cli::flags::EXIT_REFUSED,
        }
    }
}

impl From<String> for Refusal {
    /// A usage or I/O error (exit 1; a refused recording, `code=BUS`/`REPLAY`, exits 2),
    /// printed as it is when it already carries its code and as `code=DESK` otherwise.
    fn from(e: String) -> Refusal {
        let text = coded(e);
        Refusal {
            // A refused recording (a saved Bus seated as the author, cut or edited) exits 2,
            // as the headless verbs refuse it.
            exit: crate::cli::flags::exit_of(&text),
            text,
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// The desk's `--r-usd`, or the usage error: read as `run`'s is (`+1000` and `1e3` are
/// refused alike, with the same words), in whole dollars, which is what a session file keeps.
fn r_usd_flag(a: &DeskArgs) -> Result<Option<i64>, String> {
    let Some(s) = &a.r_usd else {
        return Ok(None);
    };
    let px = crate::cli::run::parse_r_usd("--r-usd", s)
        .map_err(|e| {
            e.replace(
                "write dollars like 1000 or 250.50",
                "write whole dollars, like 1000",
            )
        })
        .map_err(|e| format!("error code=USAGE message={e}"))?;
    if px.0 % 10_000 != 0 {
        return Err(format!(
            "error code=USAGE message=--r-usd {s:?}: the desk's 1R is whole dollars: write e.g. 1000"
        ));
    }
    Ok(Some(px.0 / 10_000))
}

/// An error line as printed: as it is when it carries its code (alone, or after the file it
/// is about), else under `code=DESK` (the desk's own: no terminal, an interruption).
fn coded(e: String) -> String {
    if e.starts_with("error code=") || e.contains(": error code=") {
        e
    } else {
        format!("error code=DESK message={e}")
    }
}

/// The settings the options ask for: the one path from flags to a session (bare `kestrel`
/// and `kestrel desk` both come here).
pub fn settings(a: &DeskArgs) -> Result<Settings, String> {
    let d = Settings::default();
    let s = Settings {
        r_usd: r_usd_flag(a)?.unwrap_or(d.r_usd),
        fill: a.fill.clone().unwrap_or(d.fill),
        profile: d.profile,
        copilot: a.copilot,
        copilot_pause: !a.no_copilot_pause,
        agent: desk_agent(a)?,
    };
    // A bad --r-usd or --fill, worded as a usage error like `run`'s.
    s.engine_check()
        .map_err(|e| format!("error code=USAGE message={e}"))?;
    Ok(s)
}

/// The documents `--plans` names (or the example plan), checked before the desk opens:
/// (author, text). A document the checker refuses is a [`Refusal::document`] (exit 2, every
/// error as `run --plans` prints them); a file that is not a document or cannot be read,
/// exit 1.
pub fn opening_plans(a: &DeskArgs) -> Result<Vec<(String, String)>, Refusal> {
    if a.plans.is_empty() {
        return Ok(if a.no_example {
            Vec::new()
        } else {
            vec![("examples".into(), DEFAULT_PLANS.into())]
        });
    }
    let mut out = Vec::new();
    for p in &a.plans {
        // A tape, a Bus or a directory given as a document says what it is.
        if let Some(e) = crate::cli::sniff::not_a_document(p) {
            return Err(e.into());
        }
        let text = read_text(p)?;
        // Checked as what it will be: a turn of the person's, routed at the open.
        if let Err(errs) = crate::lang::check(&text, crate::lang::Mode::Turn) {
            let lines: Vec<String> = errs
                .iter()
                .map(|e| format!("{}: {}", p.display(), e.one_line()))
                .collect();
            return Err(Refusal::document(lines.join("\n")));
        }
        // Routed as it will be: a statement a turn does not hold (POD, BOOK) would leave the
        // desk open with nothing of the file armed, and one `invalid` row to say so.
        let ctx = TurnContext::new(WakePhase::Open, Profile::AuthoringV2, AuthorKind::File);
        if let Outcome::Invalid { errors } = crate::turn::route(&Reply::text(&text), &ctx).outcome {
            let menu: Vec<String> = errors
                .iter()
                .filter(|e| e.rule == "menu")
                .map(|e| format!("{}: {}", p.display(), e.one_line()))
                .collect();
            if !menu.is_empty() {
                return Err(Refusal::document(format!(
                    "{}\n{}: the desk arms --plans as your turn at the open, which holds PLAN, WAKE, VIEW and USING; POD and BOOK are for `kestrel run --plans` (examples/desk.kestrel is examples/run-desk.kestrel as a turn)",
                    menu.join("\n"),
                    p.display()
                )));
            }
        }
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("plans")
            .to_string();
        out.push((name, text));
    }
    Ok(out)
}

/// `--open` with flags that contradict the saved session: a clear refusal naming each.
fn contradictions(a: &DeskArgs, s: &saved::Saved) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(Some(r)) = r_usd_flag(a)
        && r != s.settings.r_usd
    {
        out.push(format!(
            "--r-usd {r} (the session ran at 1R = ${})",
            s.settings.r_usd
        ));
    }
    if let Some(f) = &a.fill
        && *f != s.settings.fill
    {
        out.push(format!(
            "--fill {f} (the session ran with {})",
            s.settings.fill
        ));
    }
    if let Some(t) = &a.tape
        && t.display().to_string() != s.tape
    {
        out.push(format!(
            "--tape {} (the session's tape is {})",
            t.display(),
            s.tape
        ));
    }
    if a.author.is_some() || a.agent.is_some() || a.no_agent {
        out.push("--author / --agent / --no-agent (the session's agent is replayed)".into());
    }
    if !a.plans.is_empty() || a.no_example {
        out.push("--plans / --no-example (the session's turns are replayed)".into());
    }
    if a.copilot && !s.settings.copilot {
        out.push("--copilot (the session started in autopilot)".into());
    }
    out
}

/// A desk over an inline session on `src` with the default settings: for tests and
/// benchmarks. Nothing is written; no agent is seated.
pub fn inline_app(src: TapeSource) -> Result<App, String> {
    inline_app_with(src, None, false)
}

/// A desk over an inline session with an agent seated (held for co-pilot when `copilot`).
/// A live agent's worker starts at once. Nothing is written.
pub fn inline_app_with(
    src: TapeSource,
    agent: Option<Agent>,
    copilot: bool,
) -> Result<App, String> {
    let settings = Settings {
        copilot,
        agent,
        ..Settings::default()
    };
    inline_app_from(src, settings, Opening::default())
}

/// A desk over an inline session with these settings.
pub fn inline_app_from(src: TapeSource, settings: Settings, how: Opening) -> Result<App, String> {
    let s = Session::open(src, settings, how)?;
    let (themes, keys, _) = load_config(None);
    let mut app = App::new(SessionHandle::inline(s), themes, keys);
    app.tick();
    Ok(app)
}

/// Run the desk; returns the process exit code.
pub fn run(a: &DeskArgs) -> i32 {
    // The options, the documents and the tape are checked before the terminal is taken
    // over, and refused with the code and exit code the headless verbs give.
    let save = match check_open(a) {
        Ok(s) => s,
        Err(r) => {
            crate::cli::errln!("{}", r.text);
            return r.exit;
        }
    };
    match run_inner(a, save) {
        Ok(()) => 0,
        Err(e) => {
            crate::cli::errln!("{}", coded(e.to_string()));
            1
        }
    }
}

/// `--price-in` and `--price-out`, dollars per million tokens: both or neither, each a
/// finite number not below 0, or the usage error.
pub fn price_flags(a: &DeskArgs) -> Result<Option<(f64, f64)>, String> {
    // A negative amount is read as a value and refused as one (clap took `-3` for a flag
    // before 2026-12-06: `unexpected argument '-3' found`), as the README says of them all.
    let read = |flag: &str, s: &str| match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        Ok(x) if x < 0.0 => Err(format!(
            "error code=USAGE message={flag} {s:?} is negative: a price is 0 or more dollars per million tokens, e.g. 3 or 0.15"
        )),
        _ => Err(format!(
            "error code=USAGE message={flag} {s:?}: not a price: write dollars per million tokens (0 or more), e.g. 3 or 0.15"
        )),
    };
    match (&a.price_in, &a.price_out) {
        (None, None) => Ok(None),
        (Some(i), Some(o)) => Ok(Some((read("--price-in", i)?, read("--price-out", o)?))),
        _ => Err(
            "error code=USAGE message=--price-in and --price-out go together: give both (dollars per million tokens)"
                .to_string(),
        ),
    }
}

/// Where a new session is saved (`None`: `--no-save`, or no data directory).
fn session_path(a: &DeskArgs, tape: &TapeSource) -> Option<PathBuf> {
    if a.no_save {
        return None;
    }
    // The directory is made only once the desk has its terminal (`run_inner`): a refusal
    // leaves nothing behind.
    let d = saved::sessions_dir()?;
    let name = tape.label.rsplit(['/', ':']).next().unwrap_or("tape");
    Some(saved::new_session_path(&d, name.trim_end_matches(".jsonl")))
}

/// Check the options and say where the session will be saved, before the terminal is
/// taken over: a bad `--open`, `--plans` or agent is refused here, and so is a tape
/// `kestrel run` would refuse (the whole tape is read: a bad line, a tape cut short).
pub fn check(a: &DeskArgs) -> Result<Option<PathBuf>, String> {
    check_open(a).map_err(|r| r.text)
}

/// [`check`], with the exit code the refusal is given.
pub fn check_open(a: &DeskArgs) -> Result<Option<PathBuf>, Refusal> {
    price_flags(a)?;
    if let Some(name) = &a.theme {
        let (themes, _) = theme::load_all(saved::config_dir().map(|d| d.join("themes")).as_deref());
        if !themes.iter().any(|t| t.name == *name) {
            let names: Vec<&str> = themes.iter().map(|t| t.name.as_str()).collect();
            return Err(Refusal::from(format!(
                "error code=USAGE message=--theme {name}: no such theme (themes: {})",
                names.join(", ")
            )));
        }
    }
    if let Some(t) = &a.tape
        && let Some(e) = crate::cli::sniff::not_a_tape(t)
    {
        return Err(e.into());
    }
    let tape = match &a.open {
        Some(p) => {
            r_usd_flag(a)?;
            if let Some(e) = crate::cli::sniff::not_a_desk_session(p) {
                return Err(e.into());
            }
            let s = saved::open(p)?;
            let bad = contradictions(a, &s);
            if !bad.is_empty() {
                return Err(Refusal::from(format!(
                    "error code=USAGE message={}: these flags contradict the saved session: {}",
                    p.display(),
                    bad.join("; ")
                )));
            }
            TapeSource::open(Some(&s.tape))?
        }
        None => {
            // The desk reads its inputs here to refuse them on a terminal not yet taken
            // over, then again as the session opens: a pipe or a FIFO would be empty (or
            // block) the second time, and the desk would open without them.
            for p in a.plans.iter().chain(a.tape.as_ref()) {
                if crate::cli::sniff::is_stream(p) {
                    return Err(Refusal::from(format!(
                        "error code=USAGE message={} is a pipe or a device: the desk opens files (save it to a file, then give that)",
                        p.display()
                    )));
                }
            }
            settings(a)?;
            opening_plans(a)?;
            TapeSource::open(a.tape.as_ref().map(|p| p.display().to_string()).as_deref())?
        }
    };
    // The whole tape, as `kestrel run` reads it: a bad line or a tape cut short is refused
    // here, readable on a terminal not yet taken over, not met (and settled) mid-session.
    tape.check()?;
    Ok(session_path(a, &tape))
}

/// Whether the default seat's house agent stays out: it is a recording, its replies (and
/// the Journal's reasons) written for the bundled tape's market, so on another tape it would
/// comment on moves that tape never made. Seated only when no agent was named and the tape is
/// the bundled one byte for byte; `--agent FILE` or `--author` seats one anywhere.
pub fn house_unseated(a: &DeskArgs, tape: &TapeSource) -> bool {
    house_by_default(a) && tape.bytes[..] != BUNDLED_TAPE.1[..]
}

/// Whether the options leave the seat to its default, the house agent: none named, and
/// `--no-agent` not given ([`desk_agent`]'s last case).
fn house_by_default(a: &DeskArgs) -> bool {
    !a.no_agent && a.author.is_none() && a.agent.is_none()
}

/// Open the session the options ask for, saving to `save`: a saved session reopened at its
/// last point, or a new one with its opening plans armed. Bare `kestrel`, `kestrel desk`
/// and the tests all come here.
pub fn open_session(a: &DeskArgs, save: Option<PathBuf>) -> Result<Session, String> {
    if let Some(p) = &a.open {
        return session::owner::reopen(p, save);
    }
    let mut settings = settings(a)?;
    let mut plans = opening_plans(a).map_err(|r| r.text)?;
    let tape = TapeSource::open(a.tape.as_ref().map(|p| p.display().to_string()).as_deref())?;
    let unseated = house_unseated(a, &tape);
    if unseated {
        settings.agent = None;
    }
    let skipped = examples_unarmed(a, &tape);
    if skipped {
        plans.clear();
    }
    let how = Opening {
        save,
        plans,
        ..Opening::default()
    };
    let mut s = Session::open(tape, settings, how)?;
    if skipped {
        // Short enough for the footer at 100x30; the house agent's word folded in.
        s.warn(if unseated {
            "no example plans, no house agent: both are for the bundled tape (--plans, --author)"
                .to_string()
        } else {
            "no example plans: they trade SPX and SPY, not on this tape (--plans arms yours)".into()
        });
    }
    Ok(s)
}

/// The symbols the example plans trade (examples/desk.kestrel's `USING`).
const EXAMPLE_SYMBOLS: [&str; 2] = ["SPX", "SPY"];

/// Whether bare `kestrel`'s example plans stay out: on a tape that does not carry their
/// symbols each would be refused at the open (`UNKNOWN symbol SPX`), four refusals in place
/// of a desk ready to trade. A tape that carries them (the bundled ones) arms them.
pub fn examples_unarmed(a: &DeskArgs, tape: &TapeSource) -> bool {
    if !a.plans.is_empty() || a.no_example {
        return false;
    }
    let Ok(h) = tape.header() else {
        return false;
    };
    !EXAMPLE_SYMBOLS
        .iter()
        .all(|want| h.symbols.iter().any(|s| s.sym.as_str() == *want))
}

fn run_inner(a: &DeskArgs, save: Option<PathBuf>) -> color_eyre::Result<()> {
    use color_eyre::eyre::eyre;
    use std::io::IsTerminal;
    let _ = color_eyre::install();
    // Without a terminal on both sides nothing is started and nothing is written to stdout
    // (not even the escape that leaves the alternate screen): the refusal is the only output.
    for (name, tty) in [
        ("stdin", std::io::stdin().is_terminal()),
        ("stdout", std::io::stdout().is_terminal()),
    ] {
        if !tty {
            return Err(eyre!(
                "the desk needs a terminal ({name} is not one); the headless verbs (kestrel --help) do not"
            ));
        }
    }
    // Where the session is saved (no directory, no saving: as before the terminal check).
    let save = save.filter(|p| {
        p.parent()
            .is_some_and(|d| std::fs::create_dir_all(d).is_ok())
    });
    let (args, to) = (a.clone(), save.clone());
    let handle = SessionHandle::spawn(move || open_session(&args, to)).map_err(|e| eyre!(e))?;
    let dir = saved::config_dir();
    let (themes, keys, mut warnings) = load_config(dir.as_deref());
    let (configured, w) = configured_theme(dir.as_deref());
    warnings.extend(w);
    let mut app = App::new(handle, themes, keys);
    app.price = price_flags(a).ok().flatten();
    // `--theme` (checked before the terminal was taken over), else the saved choice (a name
    // no theme has is a warning, and the desk starts dark).
    if let Some(name) = a.theme.as_ref().or(configured.as_ref())
        && !app.set_theme(name)
    {
        warnings.push(format!(
            "{DESK_TOML}: error code=CONFIG message=no theme {name:?} (themes: {})",
            app.theme_names().join(", ")
        ));
    }
    // `t`'s choice is kept for the next desk, unless nothing is to be written.
    if !a.no_save {
        app.theme_dir = dir;
    }
    app.warnings = warnings;
    opening_message(&mut app, a, save.as_deref());
    if a.play {
        app.send(Command::Play);
    }
    // SIGTERM / SIGINT / SIGHUP (a `kill`, a closed terminal window, a dropped ssh session)
    // leave the desk as `q` does: the terminal restored where there still is one, the session
    // file complete with its `left` record, a command author's process group killed.
    crate::signals::install();
    if let Some(ended) = app.session.ended() {
        leave_if_the_loop_cannot(ended, save.is_some());
    }
    let mut terminal = match ratatui::try_init() {
        Ok(t) => t,
        Err(e) => {
            ratatui::restore();
            return Err(eyre!(
                "the desk needs a terminal ({e}); the headless verbs (kestrel --help) do not"
            ));
        }
    };
    // Pastes arrive whole (bracketed) and the mouse clicks and scrolls.
    {
        use ratatui::crossterm::event::{EnableBracketedPaste, EnableMouseCapture};
        let _ = ratatui::crossterm::execute!(
            std::io::stdout(),
            EnableBracketedPaste,
            EnableMouseCapture
        );
    }
    let res = event_loop(&mut terminal, &mut app);
    {
        use ratatui::crossterm::event::{DisableBracketedPaste, DisableMouseCapture};
        let _ = ratatui::crossterm::execute!(
            std::io::stdout(),
            DisableBracketedPaste,
            DisableMouseCapture
        );
    }
    ratatui::restore();
    // Problems in the config files, each on its own line, where they can be read whole.
    for w in &app.warnings {
        crate::cli::errln!("{w}");
    }
    app.sync_draft();
    let last = app.session.leave();
    drop(app);
    // A write that failed is the desk's error, before a signal's: one coded line, exit 1.
    match save_report(save.is_some(), &last) {
        Ok(Some(said)) => crate::cli::errln!("{said}"),
        Ok(None) => {}
        Err(e) => return Err(eyre!(e)),
    }
    if let Some(sig) = crate::signals::caught() {
        return Err(eyre!(
            "interrupted by {sig}: the desk closed as q does (terminal restored{})",
            if save.is_some() {
                ", session saved"
            } else {
                ""
            }
        ));
    }
    res
}

/// What the desk says of its session file once the person has left (`saving`: a session
/// file was asked for; `last`: the session's last snapshot): `session saved: FILE`, that
/// nothing new was written, or (`Err`) the coded line of a write that failed, which says the
/// session was NOT saved and where what was written before it is. The desk then exits 1.
pub fn save_report(saving: bool, last: &SessionSnapshot) -> Result<Option<String>, String> {
    if !saving {
        return Ok(None);
    }
    let at = last
        .saving
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    match (&last.save_error, last.written) {
        (Some(e), _) => Err(format!(
            "{e}; the session was NOT saved: {at} and its Bus stop where the write failed"
        )),
        (None, true) => Ok(Some(format!("session saved: {at}"))),
        (None, false) => Ok(Some(
            "nothing new to save: the session was only replayed".into(),
        )),
    }
}

/// After a signal, end the process if the draw loop has not ended it within a grace.
///
/// A hung-up terminal (SIGHUP: the window closed, ssh dropped, `tmux kill-session`) can leave
/// the loop inside crossterm's read, which spins on the closed terminal and never returns to
/// see the signal. The session's thread ends by itself at a signal ([`SessionHandle::ended`]:
/// its `left` record written, a command author's process group killed); once it has, this
/// watch gives the loop two seconds to leave as `q` does, then exits as the loop would have
/// (exit 1, the same message). A loop that leaves in time ends the process first.
fn leave_if_the_loop_cannot(ended: handle::Ended, saving: bool) {
    use std::time::Duration;
    let watch = move || {
        let sig = loop {
            if let Some(sig) = crate::signals::caught() {
                break sig;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        while !ended.is_ended() {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_secs(2));
        crate::cli::errln!("{}", coded(signal_watch_says(sig, saving, &ended.last())));
        std::process::exit(1);
    };
    let _ = std::thread::Builder::new()
        .name("kestrel-signal-watch".into())
        .spawn(watch);
}

/// What the signal watch says when it ends the process for a loop that could not
/// (`saving`: a session file was asked for; `last`: the session's last snapshot): that the
/// desk closed as `q` does, and of the session what the quit would say
/// ([`save_report`]): saved, nothing new, or the write that failed and that it was NOT saved.
pub fn signal_watch_says(sig: &str, saving: bool, last: &SessionSnapshot) -> String {
    let how = format!("interrupted by {sig}: the desk closed as q does");
    match save_report(saving, last) {
        Ok(Some(said)) => format!("{how} ({said}; no terminal to restore)"),
        Ok(None) => format!("{how} (no terminal to restore)"),
        Err(e) => format!("{e} ({how}; no terminal to restore)"),
    }
}

/// The footer's first message: a problem in the config files, else a warning the session
/// gave at the open (a reopened file's last line cut short), else where the session was
/// reopened or is saved. A warning is not covered by the routine line: the footer shows one
/// message, and "reopened FILE at 15:05" over "its last line was cut short" hid the one a
/// person needs to read.
pub fn opening_message(app: &mut App, a: &DeskArgs, save: Option<&std::path::Path>) {
    // A warning or an error given at the point the desk opens at (a replayed veto of 09:34
    // is not the news at a reopen at 10:30: the footer would show it, not where it reopened).
    let at_open = app
        .snap
        .notices
        .iter()
        .rev()
        .find(|n| n.ts == app.snap.clock && n.level as u8 > NoticeLevel::Info as u8)
        .map(|n| n.text.clone());
    if let Some(m) = config_message(&app.warnings) {
        app.message = Some(m);
    } else if let Some(m) = at_open {
        app.message = Some(m);
    } else if a.open.is_none()
        && a.tape.is_some()
        && house_by_default(a)
        && app.snap.agent.is_none()
    {
        // Short enough for the footer at 100x30: the whole reason is in docs/desk.md.
        app.message = Some(format!(
            "no agent: the house agent is recorded for {} only (--author seats one)",
            BUNDLED_TAPE.0
        ));
    } else if let Some(p) = &a.open {
        // A draft given back is said first: the rest of the line may be cut.
        let draft = if app.snap.draft_opened.is_some() {
            format!(
                "your draft, not submitted, is back in the Editor ({}) · ",
                app.keys.label(crate::desk::keys::Action::Editor)
            )
        } else {
            String::new()
        };
        app.message = Some(format!(
            "{draft}reopened {} at {} (Home: back to the open)",
            p.display(),
            app.snap.clock
        ));
    } else if let Some(p) = app.snap.saving.as_deref().or(save) {
        // The name the file was created at: another desk may have taken the one asked for.
        app.message = Some(format!("saving to {}", p.display()));
    }
}

/// The footer's word on problems in the config files: the one, or how many and the first
/// (`?` lists every one; each is printed again on stderr when the desk closes).
pub fn config_message(warnings: &[String]) -> Option<String> {
    match warnings {
        [] => None,
        [one] => Some(one.clone()),
        [first, ..] => Some(format!(
            "{} in the config files (? lists them): {first}",
            fit::count(warnings.len() as u64, "problem")
        )),
    }
}

fn event_loop(terminal: &mut ratatui::DefaultTerminal, app: &mut App) -> color_eyre::Result<()> {
    use ratatui::crossterm::event::{self, Event, KeyEventKind};
    use std::time::Duration;
    // Redraw on events, not on a timer: a key, a paste, the mouse, a resize, or a new
    // snapshot of the session. Paused, the loop wakes four times a second to look for a
    // snapshot and sleeps otherwise (docs/desk.md, "Idle").
    let mut dirty = true;
    loop {
        if app.tick() {
            dirty = true;
        }
        if dirty {
            terminal.draw(|f| ui::draw(f, app))?;
            dirty = false;
        }
        let wait = if app.snap.playing {
            Duration::from_millis(33)
        } else {
            Duration::from_millis(250)
        };
        if event::poll(wait)? {
            loop {
                let size = terminal.size()?;
                let area = ratatui::layout::Rect::new(0, 0, size.width, size.height);
                match event::read()? {
                    Event::Key(k) if k.kind != KeyEventKind::Release => app.key(k),
                    Event::Paste(text) => app.paste(&text),
                    Event::Mouse(m) => app.mouse(m, area),
                    _ => {}
                }
                dirty = true;
                if app.quit || !event::poll(Duration::ZERO)? {
                    break;
                }
            }
        }
        if app.quit || crate::signals::caught().is_some() {
            return Ok(());
        }
    }
}
