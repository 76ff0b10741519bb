//! `kestrel agent`: a headless session with an attached author, writing the Bus and printing
//! the run report and the outcome counts.

use super::run::{json_report, text_report};
use crate::author::command::CommandAuthor;
use crate::author::openai::{OpenAiAuthor, OpenAiConfig};
use crate::author::secret::{config_dir, load_api_key};
use crate::bus::{self, Bus};
use crate::market::open_tape;
use crate::session::{self, Attached, Recorded, Session, SessionConfig, TurnSource};
use crate::turn::{AuthorKind, Profile};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfileArg {
    AuthoringV2,
    ViewshopV2,
    AuthoringV1,
}

/// Arguments of `kestrel agent`.
#[derive(Debug, clap::Args)]
pub struct AgentArgs {
    /// The tape (JSON Lines).
    #[arg(long)]
    pub tape: PathBuf,
    /// The author: `http(s)://HOST/v1` is an OpenAI-compatible server; an existing
    /// `.jsonl` file is a saved Bus (its turns replay) or a script of `{"reply": "..."}`
    /// lines answered in order; anything else is a command run with `sh -c` (the prompt on
    /// its stdin, the reply on its stdout).
    #[arg(long)]
    pub author: String,
    /// The model name sent to an OpenAI-compatible server.
    #[arg(long, default_value = "default")]
    pub model: String,
    /// Sampling temperature for a model author.
    #[arg(long, default_value_t = 0.7)]
    pub temperature: f32,
    /// Send the exported GBNF as `grammar` (llama.cpp-style constrained decoding).
    #[arg(long)]
    pub constrained: bool,
    /// Seconds a model or command author may take for one reply.
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
    /// Documents armed at the open, before the author's first turn (repeatable).
    #[arg(long)]
    pub plans: Vec<PathBuf>,
    /// The prompt profile.
    #[arg(long, value_enum, default_value = "authoring-v2")]
    pub profile: ProfileArg,
    /// Dollars per 1R.
    #[arg(long = "r-usd", default_value = "1000")]
    pub r_usd: String,
    /// The fill model.
    #[arg(long, default_value = "strict-cross-v1")]
    pub fill: String,
    /// Write the Bus (JSON Lines) here, atomically.
    #[arg(long)]
    pub bus: Option<PathBuf>,
    /// Print the canonical JSON report.
    #[arg(long)]
    pub json: bool,
}

fn load_author(a: &AgentArgs) -> Result<(Box<dyn TurnSource>, AuthorKind), String> {
    let spec = a.author.as_str();
    let timeout = std::time::Duration::from_secs(a.timeout.max(1));
    if spec.starts_with("http://") || spec.starts_with("https://") {
        let mut cfg = OpenAiConfig::new(spec, &a.model);
        cfg.temperature = a.temperature;
        cfg.constrained = a.constrained;
        cfg.total_timeout = timeout;
        cfg.api_key = load_api_key(None, config_dir().as_deref())?;
        let src = Attached::new(Box::new(OpenAiAuthor::new(cfg)))?;
        return Ok((Box::new(src), AuthorKind::Model));
    }
    let path = Path::new(spec);
    if !(path.is_file() && spec.ends_with(".jsonl")) {
        let cmd = CommandAuthor::new("sh", vec!["-c".into(), spec.to_string()], timeout);
        let src = Attached::new(Box::new(cmd))?;
        return Ok((Box::new(src), AuthorKind::File));
    }
    Ok((read_author_file(spec, path)?, AuthorKind::File))
}

fn read_author_file(spec: &str, path: &Path) -> Result<Box<dyn TurnSource>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read the author {spec}: {e}"))?;
    let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    let v: serde_json::Value = serde_json::from_slice(first)
        .map_err(|e| format!("{spec}: line 1 is not JSON ({e}): an author file is a saved Bus or a script of {{\"reply\": ...}} lines"))?;
    if v["type"] == "session-start" {
        return Ok(Box::new(Recorded::from_bus(spec, &bytes)?));
    }
    let mut replies = Vec::new();
    for (n, line) in bytes.split(|b| *b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let v: serde_json::Value = serde_json::from_slice(line)
            .map_err(|e| format!("{spec}: line {}: not JSON: {e}", n + 1))?;
        let reply = v["reply"]
            .as_str()
            .ok_or_else(|| format!("{spec}: line {}: expected {{\"reply\": \"...\"}}", n + 1))?;
        replies.push(reply.to_string());
    }
    Ok(Box::new(session::scripted(spec, replies)))
}

pub fn run(a: &AgentArgs) -> i32 {
    let engine = match super::run::engine_config("--r-usd", &a.r_usd, &a.fill) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error code=USAGE message={e}");
            return 1;
        }
    };
    let (mut author, author_kind) = match load_author(a) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error code=USAGE message={e}");
            return 1;
        }
    };
    let docs = match super::lang::check_files(&a.plans) {
        Ok(d) => d,
        Err(code) => return code,
    };
    let reader = match open_tape(&a.tape) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{}: {e}", a.tape.display());
            return 1;
        }
    };
    let (pending, sink) = match super::out::bus_sink(a.bus.as_deref()) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let profile = match a.profile {
        ProfileArg::AuthoringV2 => Profile::AuthoringV2,
        ProfileArg::ViewshopV2 => Profile::ViewshopV2,
        ProfileArg::AuthoringV1 => Profile::AuthoringV1,
    };
    let cfg = SessionConfig {
        engine,
        profile,
        author: author_kind,
        open_wake: true,
        view_request_cap: None,
    };
    let s = match Session::new(reader, cfg, &docs, Bus::new(sink)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error code=TAPE message={e}");
            return 1;
        }
    };
    let mut s = s;
    let mut failed = None;
    while !s.is_done() {
        match s.step() {
            Ok(fired) => {
                for w in &fired {
                    s.wake(w, author.as_mut());
                }
            }
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    if let Some(e) = failed {
        eprintln!("{}: {e}", a.tape.display());
        return 1;
    }
    let c = s.counts.clone();
    let bus = s.finish();
    if let Some(e) = bus.error() {
        eprintln!("error code=IO message=writing the bus: {e}");
        return 1;
    }
    let report = if a.json {
        let mut v: serde_json::Value =
            serde_json::from_str(&json_report(&bus, &a.tape.display().to_string()))
                .unwrap_or_default();
        v["author"] = serde_json::Value::String(author.name());
        v["outcomes"] = serde_json::to_value(&c).unwrap_or_default();
        bus::canonical_json(&v) + "\n"
    } else {
        format!(
            "{}author {}: wakes {} | supersede {} stand-down {} view-request {} cancel {} pass {} | invalid {} truncated {} provider-error {} | fail-closed pass {} | repaired {}\n",
            text_report(&bus),
            author.name(),
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
        eprintln!("error code=IO message=flushing the bus: {e}");
        return 1;
    }
    if let Err(e) = super::out::commit(pending) {
        eprintln!("{e}");
        return 1;
    }
    out!("{report}");
    0
}
