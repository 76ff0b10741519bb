//! `kestrel turn`: route one reply as a turn and print the outcome, the journal and the
//! token figures.

use super::lang::read_source;
use crate::lang::Scope;
use crate::tokens::{self, Encoding};
use crate::turn::{
    self, AuthorKind, Outcome, Profile, Reply, RoutedTurn, TurnClass, TurnContext, WakePhase,
};
use std::path::PathBuf;

/// The wake phase, on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PhaseArg {
    Open,
    Mid,
}

impl From<PhaseArg> for WakePhase {
    fn from(p: PhaseArg) -> WakePhase {
        match p {
            PhaseArg::Open => WakePhase::Open,
            PhaseArg::Mid => WakePhase::Mid,
        }
    }
}

/// The prompt profile, on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfileArg {
    #[value(name = "authoring-v2")]
    AuthoringV2,
    #[value(name = "viewshop-v2")]
    ViewshopV2,
    #[value(name = "authoring-v1")]
    AuthoringV1,
    #[value(name = "completion-v1")]
    CompletionV1,
}

impl From<ProfileArg> for Profile {
    fn from(p: ProfileArg) -> Profile {
        match p {
            ProfileArg::AuthoringV2 => Profile::AuthoringV2,
            ProfileArg::ViewshopV2 => Profile::ViewshopV2,
            ProfileArg::AuthoringV1 => Profile::AuthoringV1,
            ProfileArg::CompletionV1 => Profile::CompletionV1,
        }
    }
}

/// Who wrote the reply, on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuthorArg {
    Human,
    Model,
    File,
}

impl From<AuthorArg> for AuthorKind {
    fn from(a: AuthorArg) -> AuthorKind {
        match a {
            AuthorArg::Human => AuthorKind::Human,
            AuthorArg::Model => AuthorKind::Model,
            AuthorArg::File => AuthorKind::File,
        }
    }
}

/// A tokenizer encoding, on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EncodingArg {
    Cl100k,
    O200k,
}

impl From<EncodingArg> for Encoding {
    fn from(e: EncodingArg) -> Encoding {
        match e {
            EncodingArg::Cl100k => Encoding::Cl100k,
            EncodingArg::O200k => Encoding::O200k,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct TurnArgs {
    /// The reply (`-` reads stdin).
    pub file: PathBuf,
    /// The wake the reply answers.
    #[arg(long, value_enum, default_value = "mid")]
    pub phase: PhaseArg,
    /// The prompt profile (decides the menu).
    #[arg(long, value_enum, default_value = "authoring-v2")]
    pub profile: ProfileArg,
    /// Who wrote it: for a model an empty reply is a provider error, otherwise a pass.
    #[arg(long, value_enum, default_value = "human")]
    pub author: AuthorArg,
    #[command(flatten)]
    pub out: super::flags::Json,
    /// Tokenizer for the figures.
    #[arg(long, value_enum, default_value = "cl100k")]
    pub encoding: EncodingArg,
    /// Names in the standing book (plans), in scope for CANCEL, ARM and plan(...).
    #[arg(long, value_delimiter = ',')]
    pub standing: Vec<String>,
    /// SHOW VIEW requests already answered at this wake.
    #[arg(long, allow_negative_numbers = true, default_value_t = 0)]
    pub views_requested: u32,
}

/// Exit code for a routed turn: 0 authored, 2 refused (invalid, truncated, provider-error).
pub(crate) fn exit_code(t: &RoutedTurn) -> i32 {
    if t.class() == TurnClass::Authored {
        0
    } else {
        2
    }
}

fn detail(o: &Outcome) -> String {
    match o {
        Outcome::Supersede {
            plans,
            wakes,
            views,
        } => {
            let mut parts = Vec::new();
            if !plans.is_empty() {
                parts.push(format!("plans {}", plans.join(", ")));
            }
            if !wakes.is_empty() {
                parts.push(format!("next wake {}", wakes.join(", ")));
            }
            if !views.is_empty() {
                parts.push(format!("standing views {}", views.join(", ")));
            }
            parts.join("; ")
        }
        Outcome::StandDown { reason } => format!("reason: {reason}"),
        Outcome::ViewRequest { view, reason } => match reason {
            Some(r) => format!("view {view}; reason: {r}"),
            None => format!("view {view}"),
        },
        Outcome::Cancel { target } => format!("target {target}"),
        Outcome::ProviderError { message } => message.clone(),
        _ => String::new(),
    }
}

/// `outcome: NAME (CLASS): DETAIL`, the class left out when it is the outcome's own name
/// (`outcome: invalid`, not `outcome: invalid (invalid)`), the detail when there is none.
pub(crate) fn outcome_line(name: &str, class: &str, detail: &str) -> String {
    let mut s = format!("outcome: {name}");
    if class != name {
        s.push_str(&format!(" ({class})"));
    }
    if !detail.is_empty() {
        s.push_str(&format!(": {detail}"));
    }
    s
}

/// A warning line for a file given as a reply that is a tape, a Bus or another file the
/// project writes (`kestrel tokens` counts it, as any text, but it is surely not what was
/// meant).
pub(crate) fn not_a_reply(path: &std::path::Path) -> Option<String> {
    not_a_reply_because(path).map(|m| format!("warning code=NOT-A-REPLY message={m}"))
}

/// What a file given as a reply is instead, and what to do with it (`None`: it may be a
/// reply).
fn not_a_reply_because(path: &std::path::Path) -> Option<String> {
    use super::sniff::Kind;
    let kind = super::sniff::file(path);
    match kind {
        Kind::Tape | Kind::Bus | Kind::DeskSession | Kind::ReplyScript | Kind::GradeShard => {
            Some(format!(
                "{} is {}, not an author's reply; {}",
                path.display(),
                kind.describe(),
                super::sniff::use_of(kind, path)
            ))
        }
        _ => None,
    }
}

pub fn run(a: &TurnArgs) -> i32 {
    // The wrong kind of file is a usage error (exit 1), as in every verb that reads one:
    // before 2026-12-06 it was a warning, then the file routed as a reply and refused as an
    // invalid turn (exit 2), a tape as one over the reply limit.
    if let Some(m) = not_a_reply_because(&a.file) {
        errln!("error code=USAGE message={m}");
        return 1;
    }
    let src = match read_source(&a.file) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let mut ctx = TurnContext::new(a.phase.into(), a.profile.into(), a.author.into());
    ctx.views_requested = a.views_requested;
    if !a.standing.is_empty() {
        let mut scope = Scope::default();
        scope.plans.extend(a.standing.iter().cloned());
        ctx.standing = Some(scope);
    }
    let t = turn::route(&Reply::text(src.clone()), &ctx);
    let enc: Encoding = a.encoding.into();
    let figures = tokens::measure(&src, &t, enc);
    // A reply past the reply limit is refused unread: its `reply` figure is the estimate
    // the repair loop charges (a quarter of its bytes), not a count, and says so.
    let estimated = tokens::is_estimated(src.len());
    if a.out.json {
        let mut v = serde_json::to_value(&t).unwrap_or(serde_json::Value::Null);
        if let serde_json::Value::Object(m) = &mut v {
            m.insert(
                "class".into(),
                serde_json::to_value(t.class()).unwrap_or_default(),
            );
            m.insert(
                "menu".into(),
                serde_json::Value::String(ctx.menu().describe()),
            );
            match &figures {
                Ok(f) => {
                    m.insert("tokens".into(), f.json(src.len()));
                }
                Err(e) => {
                    m.insert(
                        "tokens_error".into(),
                        serde_json::Value::String(e.to_string()),
                    );
                }
            }
        }
        // One canonical line (keys sorted), as every verb's `--json`.
        outln!("{}", crate::bus::canonical_json(&v));
        return exit_code(&t);
    }
    let name = a.file.display().to_string();
    let d = detail(&t.outcome);
    let class = match t.class() {
        TurnClass::Authored => "authored",
        TurnClass::Invalid => "invalid",
        TurnClass::ProviderError => "provider-error",
    };
    // The text form is for a terminal: what the author wrote is shown, never obeyed
    // (`lang::diag::visible`); `--json` keeps it exact.
    let shown = crate::lang::diag::visible;
    outln!("{}", shown(&outcome_line(t.outcome.name(), class, &d)));
    for e in t.outcome.errors() {
        errln!("{name}: {}", e.one_line());
    }
    if let Outcome::ProviderError { message } = &t.outcome {
        // The refusal's coded line, as MCP's route_turn gives it (it had none: exit 2 in
        // silence).
        errln!(
            "{name}: error code=PROVIDER message={}",
            crate::lang::diag::visible_line(message)
        );
    }
    if t.outcome.is_refused() {
        outln!("menu: {}", ctx.menu().describe());
    }
    if !t.journal.is_empty() {
        outln!("journal:");
        for l in &t.journal {
            outln!("  {}", shown(l));
        }
    }
    if !t.kestrel.is_empty() && t.source == turn::Source::JsonEnvelope {
        outln!("canonical kestrel (from the JSON envelope):");
        for l in t.kestrel.lines() {
            outln!("  {}", shown(l));
        }
    }
    match figures {
        Ok(f) => {
            let mut s = if estimated {
                format!(
                    "tokens ({}): reply ~{} (estimate: over the {} KiB limit, refused unread)",
                    enc.name(),
                    f.reply,
                    crate::limits::MAX_REPLY_BYTES / 1024
                )
            } else {
                format!("tokens ({}): reply {}", enc.name(), f.reply)
            };
            if let Some(k) = f.kestrel {
                s.push_str(&format!(", kestrel {k}"));
            }
            if let Some(e) = f.envelope {
                s.push_str(&format!(", json envelope {e}"));
            }
            if let (Some(sv), Some(p)) = (f.saving, f.saving_pct) {
                s.push_str(&format!(", saving {sv} ({p:.1}%)"));
            }
            if let (Some(r), Some(e)) = (f.document_raw, f.document_escaped) {
                s.push_str(&format!("; document raw {r}, escaped {e}"));
            }
            outln!("{s}");
        }
        Err(e) => errln!("warning code=TOKENS message=the token figures are not counted: {e}"),
    }
    exit_code(&t)
}
