//! The desk: the ratatui terminal app where a person and an agent fly one book on a replayed
//! tape (DESK.md). `kestrel` with no arguments (or `kestrel desk`) opens it on the bundled
//! tape with the example plan armed and the recorded house agent attached.
//!
//! Structure (one way data flow, nothing blocks drawing):
//!
//! - [`engine`]: the replay [`Driver`](engine::Driver) on its own thread behind an
//!   [`EngineHandle`](engine::EngineHandle): commands in, snapshots out.
//! - [`runtime`]: the seam the driver feeds: market only today, the tick engine later.
//! - [`author`]: attached authors as async tasks whose turns arrive as events.
//! - [`app`]: the state machine (keys, focus, dialogs, routing turns); no terminal.
//! - [`ui`]: drawing, a pure function of the app.
//! - [`editor`], [`theme`], [`keys`], [`session`]: the pieces.

pub mod app;
pub mod author;
pub mod editor;
pub mod engine;
pub mod keys;
pub mod runtime;
pub mod session;
pub mod theme;
pub mod ui;

use app::App;
use engine::{Driver, EngineHandle, RuntimeFactory, TapeSource};
use runtime::{EngineRt, MarketOnly, Runtime};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The tape the desk opens on when none is given.
pub const BUNDLED_TAPE: (&str, &[u8]) = (
    "trend-2025-04-09-s1",
    include_bytes!("../../tapes/trend-2025-04-09-s1.jsonl"),
);

/// The example plan armed at the open.
pub const EXAMPLE_PLAN: &str = include_str!("../../examples/chase.kestrel");

/// `kestrel desk` options.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DeskArgs {
    /// A tape (JSON Lines); default: the bundled trend session.
    #[arg(long)]
    pub tape: Option<PathBuf>,
    /// Replay a saved session (its tape and its acts at their recorded tape points).
    #[arg(long)]
    pub open: Option<PathBuf>,
    /// A recording to attach as the agent (JSON Lines); default: the house agent.
    #[arg(long)]
    pub agent: Option<PathBuf>,
    /// Start with no agent attached.
    #[arg(long)]
    pub no_agent: bool,
    /// Start in co-pilot mode (agent turns wait for accept / reject).
    #[arg(long)]
    pub copilot: bool,
    /// Do not arm the example plan at the open.
    #[arg(long)]
    pub no_example: bool,
    /// Do not save the session (nothing is written).
    #[arg(long)]
    pub no_save: bool,
    /// Start playing at once.
    #[arg(long)]
    pub play: bool,
    /// Dollars per 1R.
    #[arg(long, default_value_t = runtime::DEFAULT_R_USD)]
    pub r_usd: i64,
    /// Replay the market only (no tick engine: plans are listed, not evaluated).
    #[arg(long)]
    pub market_only: bool,
}

/// Resolve a tape label (`bundled:<name>` or a path) to its bytes.
pub fn tape_source(label: Option<&str>) -> Result<TapeSource, String> {
    match label {
        None => Ok(TapeSource {
            label: format!("bundled:{}", BUNDLED_TAPE.0),
            bytes: Arc::from(BUNDLED_TAPE.1),
        }),
        Some(l) if l.starts_with("bundled:") => tape_source(None),
        Some(p) => std::fs::read(p)
            .map(|b| TapeSource {
                label: p.to_string(),
                bytes: Arc::from(b),
            })
            .map_err(|e| format!("{p}: {e}")),
    }
}

fn bus_sink(session: &Option<PathBuf>, n: u32) -> Option<Box<dyn std::io::Write>> {
    session.as_ref().and_then(|s| {
        std::fs::File::create(session::bus_path(s, n))
            .ok()
            .map(|f| Box::new(f) as Box<dyn std::io::Write>)
    })
}

/// A factory of market-only runtimes writing their stream beside `session` (when given).
pub fn market_only_factory(session: Option<PathBuf>) -> RuntimeFactory {
    Box::new(move |h, n| Box::new(MarketOnly::new(h, bus_sink(&session, n))) as Box<dyn Runtime>)
}

/// A factory of tick-engine runtimes (1R = `r_usd` dollars, strict-cross-v1), the Bus
/// written beside `session` (when given).
pub fn engine_factory(session: Option<PathBuf>, r_usd: i64) -> RuntimeFactory {
    agent_factory(session, r_usd, None)
}

/// A factory of tick-engine runtimes with an agent attached on the Bus: a script of replies
/// (`{"reply": ...}` lines, like `examples/house-agent.jsonl`) answered wake by wake, the
/// OPEN wake first. Each run (restart) starts the script over.
pub fn agent_factory(
    session: Option<PathBuf>,
    r_usd: i64,
    agent: Option<(String, Vec<String>)>,
) -> RuntimeFactory {
    let r = crate::market::Px::from_raw(r_usd.saturating_mul(crate::market::types::PX_SCALE));
    Box::new(move |h, n| {
        let mut rt = EngineRt::new(h, r, bus_sink(&session, n));
        if let Some((name, replies)) = &agent {
            rt = rt.with_agent(Box::new(crate::session::scripted(name, replies.clone())));
        }
        Box::new(rt) as Box<dyn Runtime>
    })
}

/// The bundled house agent: a script of replies, one per wake.
pub const HOUSE_AGENT_SCRIPT: &str = include_str!("../../examples/house-agent.jsonl");

/// Read a script of `{"reply": "..."}` lines (one reply per wake). Errors name the line.
pub fn parse_script(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(l).map_err(|e| format!("line {}: not JSON: {e}", i + 1))?;
        let r = v["reply"]
            .as_str()
            .ok_or_else(|| format!("line {}: expected {{\"reply\": \"...\"}}", i + 1))?;
        out.push(r.to_string());
    }
    Ok(out)
}

/// Load themes and keys from the config directory (or `dir`), with warnings.
pub fn load_config(dir: Option<&Path>) -> (Vec<theme::Theme>, keys::KeyMap, Vec<String>) {
    let (themes, mut warnings) = theme::load_all(dir.map(|d| d.join("themes")).as_deref());
    let keys_text = dir.and_then(|d| std::fs::read_to_string(d.join("keys.toml")).ok());
    let (keys, w) = keys::KeyMap::with_overrides(keys_text.as_deref());
    warnings.extend(w);
    (themes, keys, warnings)
}

/// A desk over an inline (synchronous) replay of `src`: for tests and benchmarks. Nothing is
/// written; no author is attached.
pub fn inline_app(src: TapeSource) -> Result<App, String> {
    let driver = Driver::new(src, engine_factory(None, runtime::DEFAULT_R_USD))?;
    let (themes, keys, _) = load_config(None);
    Ok(App::new(EngineHandle::inline(driver), themes, keys))
}

/// Run the desk; returns the process exit code.
pub fn run(a: &DeskArgs) -> i32 {
    match run_inner(a) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error code=DESK message={e}");
            1
        }
    }
}

fn run_inner(a: &DeskArgs) -> color_eyre::Result<()> {
    use color_eyre::eyre::eyre;
    let _ = color_eyre::install();
    let saved = match &a.open {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| eyre!("{}: {e}", p.display()))?;
            Some(session::load(&text).map_err(|e| eyre!("{}: {e}", p.display()))?)
        }
        None => None,
    };
    let tape_label = match (&saved, &a.tape) {
        (Some(s), _) => Some(s.tape.clone()),
        (None, Some(p)) => Some(p.display().to_string()),
        _ => None,
    };
    let src = tape_source(tape_label.as_deref()).map_err(|e| eyre!(e))?;
    let session_path = if a.no_save {
        None
    } else {
        session::sessions_dir().and_then(|d| {
            std::fs::create_dir_all(&d).ok()?;
            let name = src.label.rsplit(['/', ':']).next().unwrap_or("tape");
            Some(session::new_session_path(
                &d,
                name.trim_end_matches(".jsonl"),
            ))
        })
    };
    let record = match &session_path {
        Some(p) => match std::fs::File::create(p) {
            Ok(f) => Some(f),
            Err(e) => return Err(eyre!("session file {}: {e}", p.display())),
        },
        None => None,
    };
    let script = saved.as_ref().map(|s| s.acts.clone());
    // The agent on the Bus: a script of replies answered wake by wake (the house agent by
    // default). A time-keyed recording given with --agent keeps the older channel seam (and
    // co-pilot); its turns still reach the Bus as `turn` events.
    let mut linked: Option<Vec<author::AuthorTurn>> = None;
    let wake_agent: Option<(String, Vec<String>)> = match &saved {
        Some(s) => s.agent.clone(),
        None if a.no_agent || a.market_only => None,
        None => {
            let text = match &a.agent {
                Some(p) => std::fs::read_to_string(p).map_err(|e| eyre!("{}: {e}", p.display()))?,
                None => HOUSE_AGENT_SCRIPT.to_string(),
            };
            match parse_script(&text) {
                Ok(replies) => Some(("house".to_string(), replies)),
                Err(script_err) => match author::parse_recording(&text) {
                    Ok(turns) => {
                        linked = Some(turns);
                        None
                    }
                    Err(e) => {
                        return Err(eyre!(
                            "agent: not a script ({script_err}) nor a recording ({e})"
                        ));
                    }
                },
            }
        }
    };
    let factory = if a.market_only {
        market_only_factory(session_path.clone())
    } else {
        agent_factory(session_path.clone(), a.r_usd, wake_agent.clone())
    };
    let build = move || {
        let mut d = Driver::new(src, factory)?;
        if let Some(f) = record {
            d = d.with_record(Box::new(f));
            if let Some((name, replies)) = &wake_agent {
                d.command(engine::Command::Record(serde_json::json!({
                    "type": "agent", "name": name, "replies": replies,
                })));
            }
        }
        if let Some(acts) = script {
            d = d.with_script(acts);
        }
        Ok(d)
    };
    let handle = EngineHandle::spawn(build).map_err(|e| eyre!(e))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()?;
    let (themes, keys, warnings) = load_config(session::config_dir().as_deref());
    let mut app = App::new(handle, themes, keys);
    app.warnings = warnings;
    app.rt = Some(rt.handle().clone());
    app.copilot = a.copilot;
    if let Some(s) = saved {
        for (seq, author, routed) in s.turns {
            app.recorded.push_back(app::TurnRecord {
                id: 0,
                author,
                ts: app.snap.clock,
                routed: Some(routed),
                tokens: None,
                status: app::TurnStatus::Routed,
                seq,
            });
        }
        app.message = Some("replaying a saved session".into());
    } else {
        app.attach_turns = linked;
        if !a.no_example {
            let rec = app.route(
                "examples",
                crate::turn::AuthorKind::File,
                &crate::turn::Reply::text(EXAMPLE_PLAN),
                None,
            );
            app.turns.push(rec);
        }
        if !a.no_agent
            && let Some(turns) = app.attach_turns.clone()
        {
            app.attach(author::spawn_recorded(rt.handle(), "house", turns));
        } else if app.author.is_none() && !a.no_agent && !a.market_only {
            app.message = Some("house agent attached on the Bus: it answers every wake".into());
        }
    }
    if let Some(w) = app.warnings.first() {
        app.message = Some(w.clone());
    } else if let Some(p) = &session_path {
        app.message = Some(format!("saving to {}", p.display()));
    }
    if a.play {
        app.send(engine::Command::Play);
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
    let res = event_loop(&mut terminal, &mut app);
    ratatui::restore();
    app.engine.shutdown();
    drop(app);
    rt.shutdown_background();
    if let Some(p) = &session_path {
        eprintln!("session saved: {}", p.display());
    }
    res
}

fn event_loop(terminal: &mut ratatui::DefaultTerminal, app: &mut App) -> color_eyre::Result<()> {
    use ratatui::crossterm::event::{self, Event, KeyEventKind};
    use std::time::Duration;
    loop {
        app.tick();
        terminal.draw(|f| ui::draw(f, app))?;
        if event::poll(Duration::from_millis(33))? {
            loop {
                if let Event::Key(k) = event::read()?
                    && k.kind != KeyEventKind::Release
                {
                    app.key(k);
                }
                if app.quit || !event::poll(Duration::ZERO)? {
                    break;
                }
            }
        }
        if app.quit {
            return Ok(());
        }
    }
}
