//! Envelope-free turns: how an author's reply becomes a routed act (TURNS.md, seed 000).
//!
//! One router for every author (a person at the desk, an LLM, a program, a recording):
//!
//! 1. [`extract`](extract::extract) the document forgivingly (one fence stripped, else the
//!    whole body, trimmed);
//! 2. lift own-line `#` comments into the journal (they stay in the document);
//! 3. a body starting with `{` (or fenced as `json`) is the legacy JSON envelope, normalised to
//!    Kestrel text by [`envelope::ingest`] and then routed like any Kestrel reply;
//! 4. route on the first significant statement: a directive (STAND-DOWN, SHOW VIEW, CANCEL)
//!    alone, or a module of statements (supersede), or nothing (pass); anything else is
//!    invalid with a coded, guided error;
//! 5. check the move against the [`Menu`] and every fail-closed rule.
//!
//! ```
//! use kestrel_desk::turn::{self, Reply, TurnContext, WakePhase, Profile, AuthorKind};
//! let ctx = TurnContext::new(WakePhase::Mid, Profile::AuthoringV2, AuthorKind::Model);
//! let t = turn::route(&Reply::text("STAND-DOWN chop, no edge"), &ctx);
//! assert_eq!(t.outcome.name(), "stand-down");
//! assert_eq!(t.kestrel, "STAND-DOWN chop, no edge\n");
//! ```
//!
//! The three outcomes stay distinct ([`TurnClass`]): *authored*, *invalid* (invalid,
//! truncated, and the terminal fail-closed pass of [`repair`]), and *provider-error*.
//! [`RoutedTurn`] and [`RepairAttempt`] are plain serde records: they are what the Bus will
//! carry (canonical Kestrel text, never the raw reply).

pub mod admit;
pub mod envelope;
pub mod extract;
pub mod menu;
pub mod profile;
pub mod repair;
pub mod report;

pub use menu::{Menu, Move, WakePhase};
pub use profile::{Config, Profile, Wire};
pub use repair::{Ask, Author, RepairAttempt, RepairPolicy, RepairRun, drive};

use crate::lang::{self, Diagnostic, Document, Mode, Scope, ast::StatementKind};
use serde::{Deserialize, Serialize};

/// Who wrote the reply. Only a model's empty reply is a provider error; an empty turn from a
/// person or a file is a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuthorKind {
    /// A person typing at the desk.
    Human,
    /// An LLM behind a provider.
    Model,
    /// A file or an external program (a recording, a script).
    File,
}

impl AuthorKind {
    /// `human`, `model` or `file`.
    pub fn name(self) -> &'static str {
        match self {
            AuthorKind::Human => "human",
            AuthorKind::Model => "model",
            AuthorKind::File => "file",
        }
    }
}

/// What the author's transport delivered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "text", rename_all = "kebab-case")]
pub enum Reply {
    /// A completed reply.
    Text(String),
    /// A reply the provider reports it stopped at its output-token limit. It is routed as
    /// *truncated* whatever it parses to: a cut prefix of a plan may parse yet lack its EXIT.
    CutOff(String),
    /// A reply the provider stopped for another reason than its output-token limit (its
    /// `finish_reason`: `content_filter`, ...). Routed *truncated* as a [`CutOff`](Reply::CutOff)
    /// is, its message naming the reason (a content filter's stop was told to write a shorter
    /// turn).
    Stopped {
        /// The text written before the stop.
        text: String,
        /// The provider's finish reason.
        reason: String,
    },
    /// The transport failed (timeout, HTTP error, a dead provider); the text says how.
    ProviderError(String),
    /// A reply past [`MAX_REPLY_BYTES`](crate::limits::MAX_REPLY_BYTES), which the
    /// transport did not keep: its first bytes (`head`, at most
    /// [`KEPT_REPLY_BYTES`](crate::limits::KEPT_REPLY_BYTES), what the Bus keeps of it) and
    /// how many bytes it was. It is refused by size ([`admit::admit`]), unread.
    Oversized {
        /// Its first bytes.
        head: String,
        /// Its whole size in bytes.
        bytes: usize,
    },
}

impl Reply {
    /// A completed reply.
    pub fn text(s: impl Into<String>) -> Reply {
        Reply::Text(s.into())
    }

    /// The text written, if any was delivered.
    pub fn written(&self) -> &str {
        match self {
            Reply::Text(s) | Reply::CutOff(s) | Reply::Stopped { text: s, .. } => s,
            Reply::Oversized { head, .. } => head,
            Reply::ProviderError(_) => "",
        }
    }

    /// The size of the reply written, in bytes (an [`Oversized`](Reply::Oversized) one's
    /// whole size, not what was kept of it).
    pub fn size(&self) -> usize {
        match self {
            Reply::Oversized { bytes, .. } => *bytes,
            r => r.written().len(),
        }
    }
}

/// The wake a turn answers.
#[derive(Debug, Clone)]
pub struct TurnContext {
    /// The wake's phase (decides the menu with the profile).
    pub phase: WakePhase,
    /// The prompt profile the author was given.
    pub profile: Profile,
    /// Who is writing.
    pub author: AuthorKind,
    /// SHOW VIEW requests already answered at this wake (counts against `view_request_cap`).
    pub views_requested: u32,
    /// The standing book's names, in scope for `ARM`, `DELIVER`, `plan(...)` and `CANCEL`.
    /// `None` when the router is not told the book (then `CANCEL` targets are not checked).
    pub standing: Option<Scope>,
}

impl TurnContext {
    /// A context with no SHOW VIEW used yet and no standing book known.
    pub fn new(phase: WakePhase, profile: Profile, author: AuthorKind) -> TurnContext {
        TurnContext {
            phase,
            profile,
            author,
            views_requested: 0,
            standing: None,
        }
    }

    /// The menu at this wake.
    pub fn menu(&self) -> Menu {
        Menu::for_wake(self.phase, self.profile, self.views_requested)
    }
}

/// Where the routed text came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// The reply was Kestrel (fenced or not).
    Kestrel,
    /// The reply was the legacy JSON envelope, normalised to Kestrel.
    JsonEnvelope,
    /// Nothing was routed (provider error).
    None,
}

/// The router's own rules, which `kestrel rules` lists after the language's: (code, rule,
/// summary). A [`TurnError`] that is not the language's (`code=PARSE`) carries one of them
/// (the replay's other refusals, `replay-refused`, `replay-divergence`, `replay-hash`, refuse
/// a whole Bus and are not turn errors).
pub const TURN_RULES: &[(&str, &str, &str)] = &[
    (
        "TURN",
        "turn-mix",
        "a turn is one directive (STAND-DOWN, CANCEL, SHOW VIEW) or a module of statements (PLAN, WAKE, VIEW, USING), never a mix",
    ),
    (
        "TURN",
        "menu",
        "the move is not on the menu offered at this wake (the phase, the author's profile, the standing book)",
    ),
    (
        "TURN",
        "limit",
        "the reply is over 256 KiB: refused unread, its tokens estimated as a quarter of its bytes",
    ),
    (
        "ENVELOPE",
        "envelope-shape",
        "a JSON-envelope reply that is not the envelope's shape",
    ),
    (
        "TRUNCATED",
        "truncated",
        "the reply was cut off (the provider stopped it, or its code fence never closes): a cut plan may parse yet lack its exits",
    ),
    (
        "REPLAY",
        "replay-record",
        "a recorded answer that does not replay under the book it meets (edited, or recorded on another tape or by another version)",
    ),
];

/// A coded, guided error on a turn: the language's diagnostics (`code=PARSE`) with their
/// positions mapped back onto the reply, or the router's own (`code=TURN`, `code=ENVELOPE`,
/// `code=TRUNCATED`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnError {
    /// `PARSE`, `TURN`, `ENVELOPE` or `TRUNCATED`.
    pub code: String,
    /// The stable rule name (`syntax`, `turn-mix`, `menu`, `envelope-shape`, `truncated`, ...).
    pub rule: String,
    /// The guiding message: what is wrong and how to fix it.
    pub message: String,
    /// 1-based line in the reply (0 when the error has no position).
    pub line: usize,
    /// 1-based column (characters) in the reply.
    pub col: usize,
}

impl TurnError {
    fn new(code: &str, rule: &str, message: impl Into<String>, line: usize, col: usize) -> Self {
        TurnError {
            code: code.to_string(),
            rule: rule.to_string(),
            message: message.into(),
            line,
            col,
        }
    }

    /// The one-line form `kestrel check` prints.
    pub fn one_line(&self) -> String {
        let msg = crate::lang::diag::visible_line(&self.message);
        if self.line == 0 {
            format!(
                "error code={} rule={} message={}",
                self.code, self.rule, msg
            )
        } else {
            format!(
                "error code={} rule={} message={} (line {}, col {})",
                self.code, self.rule, msg, self.line, self.col
            )
        }
    }

    fn from_diag(d: &Diagnostic, line_offset: usize, col_offset: usize) -> TurnError {
        TurnError::new(
            d.code,
            d.rule.name(),
            d.message.clone(),
            d.line + line_offset,
            if d.line == 1 {
                d.col + col_offset
            } else {
                d.col
            },
        )
    }
}

/// The guided error text an author is re-asked with: one line per error, as `kestrel check`
/// prints them.
pub fn guided_text(errors: &[TurnError]) -> String {
    errors
        .iter()
        .map(TurnError::one_line)
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the turn does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    /// Supersede the standing book with this module.
    Supersede {
        /// PLAN names, in order.
        plans: Vec<String>,
        /// WAKE statements: they schedule the next wake.
        wakes: Vec<String>,
        /// Bare VIEW statements: standing screens for future wakes.
        views: Vec<String>,
    },
    /// De-arm the standing book clean; the reason is kept verbatim.
    StandDown {
        /// The rest of the directive's line, verbatim (may be empty).
        reason: String,
    },
    /// Render this view now, at the same frozen cutoff, and ask again.
    ViewRequest {
        /// The requested view's name.
        view: String,
        /// From the directive's trailing comments, else its own-line comments.
        reason: Option<String>,
    },
    /// Pull that resting order or plan.
    Cancel {
        /// The plan or order name.
        target: String,
    },
    /// Do nothing; the standing book keeps managing. `fail_closed` marks the terminal pass
    /// after a spent repair budget (which is not an authored pass).
    Pass {
        /// True only for the terminal pass of a spent repair loop.
        fail_closed: bool,
    },
    /// The reply failed to parse, validate, or fit the menu.
    Invalid {
        /// The coded, guided errors.
        errors: Vec<TurnError>,
    },
    /// The reply was cut off (JSON unbalanced at the end, an unclosed fence around an
    /// unparseable body, or the provider's token limit).
    Truncated {
        /// A `truncated` error first, then any parse errors of the cut text.
        errors: Vec<TurnError>,
    },
    /// The author's transport failed.
    ProviderError {
        /// What the transport reported.
        message: String,
    },
}

/// The three outcome classes, never conflated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TurnClass {
    /// Supersede, stand-down, view-request, cancel or an authored pass.
    Authored,
    /// Invalid, truncated, or the terminal fail-closed pass.
    Invalid,
    /// The transport failed.
    ProviderError,
}

impl Outcome {
    /// The outcome's name: `supersede`, `stand-down`, `view-request`, `cancel`, `pass`,
    /// `invalid`, `truncated` or `provider-error`.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Supersede { .. } => "supersede",
            Outcome::StandDown { .. } => "stand-down",
            Outcome::ViewRequest { .. } => "view-request",
            Outcome::Cancel { .. } => "cancel",
            Outcome::Pass { .. } => "pass",
            Outcome::Invalid { .. } => "invalid",
            Outcome::Truncated { .. } => "truncated",
            Outcome::ProviderError { .. } => "provider-error",
        }
    }

    /// The outcome as a person reads it: [`name`](Self::name), except the terminal pass of
    /// a spent repair loop, `fail-closed pass` (the author never wrote a valid turn; a bare
    /// `pass` on the desk read as if it had chosen to do nothing). Not on the Bus.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Pass { fail_closed: true } => "fail-closed pass",
            o => o.name(),
        }
    }

    /// Authored, invalid or provider-error. The fail-closed pass is *invalid*: the author
    /// never wrote a valid turn.
    pub fn class(&self) -> TurnClass {
        match self {
            Outcome::Invalid { .. } | Outcome::Truncated { .. } => TurnClass::Invalid,
            Outcome::Pass { fail_closed: true } => TurnClass::Invalid,
            Outcome::ProviderError { .. } => TurnClass::ProviderError,
            _ => TurnClass::Authored,
        }
    }

    /// Is this an invalid or truncated reply (one that repair would re-ask)?
    pub fn is_refused(&self) -> bool {
        matches!(self, Outcome::Invalid { .. } | Outcome::Truncated { .. })
    }

    /// The errors of a refused reply.
    pub fn errors(&self) -> &[TurnError] {
        match self {
            Outcome::Invalid { errors } | Outcome::Truncated { errors } => errors,
            _ => &[],
        }
    }
}

/// A routed turn: the record that crosses to the Bus. It holds the canonical Kestrel text,
/// never the raw reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoutedTurn {
    /// What the turn does (flattened: the `outcome` key names it).
    #[serde(flatten)]
    pub outcome: Outcome,
    /// Own-line comments, in order, without `# `.
    pub journal: Vec<String>,
    /// The turn in canonical Kestrel (`lang::print`); empty for invalid, truncated and
    /// provider-error turns and for the fail-closed pass.
    pub kestrel: String,
    /// Kestrel, or the JSON envelope normalised to Kestrel.
    pub source: Source,
    /// The wake's phase.
    pub phase: WakePhase,
    /// The profile in force.
    pub profile: Profile,
    /// Who wrote it.
    pub author: AuthorKind,
    /// The checked document the router built, carried so that whoever carries the turn
    /// out does not parse it again (not serialised: a turn read back from a Bus is
    /// re-admitted from its canonical text).
    #[serde(skip)]
    pub checked: Checked,
}

/// The checked document a routed turn carries. Two routed turns are equal when their
/// records are: the carried document is the record's own parse, so it never takes part in
/// comparisons.
#[derive(Clone, Default)]
pub struct Checked(pub Option<std::sync::Arc<Document>>);

impl PartialEq for Checked {
    fn eq(&self, _: &Checked) -> bool {
        true
    }
}

impl std::fmt::Debug for Checked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Checked(..)"
        } else {
            "Checked(None)"
        })
    }
}

impl RoutedTurn {
    /// The journal joined in order, one line per comment.
    pub fn journal_text(&self) -> String {
        self.journal.join("\n")
    }

    /// The class of the outcome.
    pub fn class(&self) -> TurnClass {
        self.outcome.class()
    }

    /// Canonical JSON (sorted keys, no whitespace): the bytes the Bus will carry.
    pub fn canonical_json(&self) -> String {
        serde_json::to_value(self)
            .map(|v| crate::bus::canonical_json(&v))
            .unwrap_or_default()
    }

    /// The checked document of an authored turn: the router's own, or (a turn read back
    /// from a record) parsed from its canonical text.
    pub fn document(&self) -> Option<Document> {
        if self.kestrel.is_empty() {
            None
        } else if let Some(d) = &self.checked.0 {
            Some((**d).clone())
        } else {
            lang::parse(&self.kestrel).ok()
        }
    }

    /// The terminal fail-closed pass that ends a spent repair loop.
    pub fn fail_closed(ctx: &TurnContext) -> RoutedTurn {
        RoutedTurn {
            outcome: Outcome::Pass { fail_closed: true },
            journal: Vec::new(),
            kestrel: String::new(),
            source: Source::None,
            checked: Checked::default(),
            phase: ctx.phase,
            profile: ctx.profile,
            author: ctx.author,
        }
    }
}

fn turn(
    ctx: &TurnContext,
    outcome: Outcome,
    journal: Vec<String>,
    kestrel: String,
    source: Source,
) -> RoutedTurn {
    RoutedTurn {
        outcome,
        journal,
        kestrel,
        source,
        phase: ctx.phase,
        profile: ctx.profile,
        author: ctx.author,
        checked: Checked::default(),
    }
}

/// Route one reply at one wake, through [`admit::admit`] (the size limit first). Never
/// panics; every input gets exactly one outcome.
pub fn route(reply: &Reply, ctx: &TurnContext) -> RoutedTurn {
    admit::admit(reply, ctx)
}

/// Route one reply already admitted by size ([`admit::admit`] is the only caller).
fn route_reply(reply: &Reply, ctx: &TurnContext) -> RoutedTurn {
    let (text, cut_off) = match reply {
        Reply::ProviderError(m) => {
            return turn(
                ctx,
                Outcome::ProviderError { message: m.clone() },
                Vec::new(),
                String::new(),
                Source::None,
            );
        }
        Reply::Text(s) => (s.as_str(), None),
        Reply::CutOff(s) => (s.as_str(), Some("length")),
        Reply::Stopped { text, reason } => (text.as_str(), Some(reason.as_str())),
        // (Refused by size before routing: `admit` is the only caller.)
        Reply::Oversized { head, .. } => (head.as_str(), Some("length")),
    };
    if ctx.author == AuthorKind::Model && text.trim().is_empty() {
        return turn(
            ctx,
            Outcome::ProviderError {
                message: "empty completion: a model passes by writing only comments, so an empty reply is the provider failing".into(),
            },
            Vec::new(),
            String::new(),
            Source::None,
        );
    }
    let ex = extract::extract(text);
    let unclosed = ex.fence.as_ref().is_some_and(|f| !f.closed);
    let mut routed = if ex.body.starts_with('{') || ex.fenced_json() {
        match envelope::ingest(ex.body) {
            Ok(kestrel) => route_kestrel(&kestrel, 0, 0, ctx, Source::JsonEnvelope),
            Err(envelope::IngestError::Truncated(m)) => turn(
                ctx,
                Outcome::Truncated {
                    errors: vec![TurnError::new("TRUNCATED", "truncated", m, 0, 0)],
                },
                Vec::new(),
                String::new(),
                Source::JsonEnvelope,
            ),
            Err(envelope::IngestError::Invalid(m)) => turn(
                ctx,
                Outcome::Invalid {
                    errors: vec![TurnError::new("ENVELOPE", "envelope-shape", m, 0, 0)],
                },
                Vec::new(),
                String::new(),
                Source::JsonEnvelope,
            ),
        }
    } else {
        route_kestrel(
            ex.body,
            ex.line_offset(text),
            ex.col_offset(text),
            ctx,
            Source::Kestrel,
        )
    };
    // A cut-off reply fails closed as truncated: a valid prefix may lack its exits.
    let cut_msg = match cut_off {
        Some("length") => Some(
            "the reply was cut off at the provider's output-token limit: write a shorter, complete turn"
                .to_string(),
        ),
        Some("content_filter") => Some(
            "the provider's content filter stopped the reply (finish_reason content_filter): the text before the stop is not a turn; write the turn again"
                .to_string(),
        ),
        Some(other) => Some(format!(
            "the provider stopped the reply (finish_reason {}): the text before the stop is not a turn; write the whole turn again",
            crate::author::excerpt(other, 40)
        )),
        None if unclosed && routed.outcome.is_refused() => Some(
            "the reply looks cut off (its code fence never closes): write the whole turn and close the fence, or send it without a fence"
                .to_string(),
        ),
        None => None,
    };
    if let Some(m) = cut_msg
        && routed.outcome.class() != TurnClass::ProviderError
    {
        let mut errors = vec![TurnError::new("TRUNCATED", "truncated", m, 0, 0)];
        errors.extend(routed.outcome.errors().iter().cloned());
        routed.outcome = Outcome::Truncated { errors };
        routed.kestrel.clear();
    }
    routed
}

/// A turn is one directive or a module of statements, never a mix (TURNS.md §1.3): the
/// statement that breaks that (a second directive, a statement after a directive, a
/// directive after statements) and the guided message the router refuses it with (rule
/// `turn-mix`). `kestrel check --turn` and `print --turn` ask the same question.
pub fn mix(doc: &Document) -> Option<(&lang::ast::Statement, String)> {
    let first = doc.statements.first()?;
    if first.kind.is_directive() {
        let second = doc.statements.get(1)?;
        let msg = if second.kind.is_directive() {
            format!(
                "a second directive ({}) after {}: a turn holds one directive (with comments around it), so reply with just one of them",
                second.kind.keyword(),
                first.kind.keyword()
            )
        } else {
            format!(
                "{} after the directive {}: a turn is either one directive or a module of statements, never a mix; reply with the directive alone, or with the statements alone",
                second.kind.keyword(),
                first.kind.keyword()
            )
        };
        return Some((second, msg));
    }
    let d = doc.statements.iter().find(|s| s.kind.is_directive())?;
    let msg = format!(
        "the directive {} after statements: a turn is either one directive or a module of statements, never a mix; reply with the statements alone (several acts are several statements), or with the directive alone",
        d.kind.keyword()
    );
    Some((d, msg))
}

/// [`mix`] as the router's coded error (`code=TURN rule=turn-mix`), its line and column in
/// `body`, the text `doc` was parsed from.
pub fn mix_error(doc: &Document, body: &str) -> Option<TurnError> {
    let (st, msg) = mix(doc)?;
    let (l, c) = lang::LineIndex::new(body).line_col(st.span.start as usize);
    Some(TurnError::new("TURN", "turn-mix", msg, l, c))
}

/// Route a body already known to be Kestrel text. `line_offset`/`col_offset` map error
/// positions back onto the reply.
fn route_kestrel(
    body: &str,
    line_offset: usize,
    col_offset: usize,
    ctx: &TurnContext,
    source: Source,
) -> RoutedTurn {
    let journal = extract::lift_journal(body);
    let invalid = |errors: Vec<TurnError>, journal: Vec<String>| {
        turn(
            ctx,
            Outcome::Invalid { errors },
            journal,
            String::new(),
            source,
        )
    };
    let doc = match lang::parse(body) {
        Ok(d) => d,
        Err(diags) => {
            let errors = diags
                .iter()
                .map(|d| TurnError::from_diag(d, line_offset, col_offset))
                .collect();
            return invalid(errors, journal);
        }
    };
    let at = |st: &lang::ast::Statement| {
        let (l, c) = lang::LineIndex::new(body).line_col(st.span.start as usize);
        (l + line_offset, if l == 1 { c + col_offset } else { c })
    };
    let menu = ctx.menu();
    let Some(first) = doc.statements.first() else {
        // Only comments, or nothing: a pass.
        if !menu.allows(Move::Pass) {
            return invalid(
                vec![TurnError::new(
                    "TURN",
                    "menu",
                    menu.refusal(Move::Pass, "a pass"),
                    0,
                    0,
                )],
                journal,
            );
        }
        let kestrel = lang::print(&doc);
        return turn(
            ctx,
            Outcome::Pass { fail_closed: false },
            journal,
            kestrel,
            source,
        );
    };

    // One directive, or a module of statements: never a mix.
    if let Some((st, msg)) = mix(&doc) {
        let (l, c) = at(st);
        return invalid(vec![TurnError::new("TURN", "turn-mix", msg, l, c)], journal);
    }

    // The move, checked against the menu.
    let mv = match &first.kind {
        StatementKind::StandDown(_) => Move::StandDown,
        StatementKind::ShowView(_) => Move::ShowView,
        StatementKind::Cancel(_) => Move::Cancel,
        _ => Move::Supersede,
    };
    if !menu.allows(mv) {
        let (l, c) = at(first);
        return invalid(
            vec![TurnError::new(
                "TURN",
                "menu",
                menu.refusal(mv, first.kind.keyword()),
                l,
                c,
            )],
            journal,
        );
    }
    if mv == Move::Supersede
        && let Some(st) = doc
            .statements
            .iter()
            .find(|s| !menu::SUPERSEDE_HEADS.contains(&s.kind.keyword()))
    {
        let (l, c) = at(st);
        let what = format!(
            "{} in a turn (a turn's module holds PLAN, WAKE, VIEW and USING statements)",
            st.kind.keyword()
        );
        return invalid(
            vec![TurnError::new(
                "TURN",
                "menu",
                menu.refusal(mv, &what),
                l,
                c,
            )],
            journal,
        );
    }

    // Every fail-closed rule, with the standing book in scope.
    let scope = ctx.standing.clone().unwrap_or_default();
    let doc = match lang::check_in_scope(body, Mode::Turn, &scope) {
        Ok(d) => d,
        Err(diags) => {
            let errors = diags
                .iter()
                .map(|d| TurnError::from_diag(d, line_offset, col_offset))
                .collect();
            return invalid(errors, journal);
        }
    };
    let Some(first) = doc.statements.first() else {
        return invalid(
            vec![TurnError::new(
                "TURN",
                "internal",
                "the document changed between parse and check",
                0,
                0,
            )],
            journal,
        );
    };
    let outcome = match &first.kind {
        StatementKind::StandDown(s) => Outcome::StandDown {
            reason: s.reason.clone(),
        },
        StatementKind::Cancel(c) => {
            if let Some(msg) = ctx
                .standing
                .as_ref()
                .and_then(|book| cancel_unknown(&c.target.text, book))
            {
                let (l, cc) = at(first);
                return invalid(
                    vec![TurnError::new("PARSE", "unknown-ref", msg, l, cc)],
                    journal,
                );
            }
            Outcome::Cancel {
                target: c.target.text.clone(),
            }
        }
        StatementKind::ShowView(v) => {
            let mut trailing: Vec<String> = Vec::new();
            let heads = first
                .trailing
                .iter()
                .chain(v.panes.iter().filter_map(|p| p.trailing.as_ref()));
            for t in heads {
                let r = extract::journal_line(&t.text);
                if !r.is_empty() {
                    trailing.push(r);
                }
            }
            let reason = if !trailing.is_empty() {
                Some(trailing.join(" "))
            } else {
                let own: Vec<&str> = journal
                    .iter()
                    .map(|s| s.trim())
                    .filter(|s| !s.is_empty())
                    .collect();
                if own.is_empty() {
                    None
                } else {
                    Some(own.join(" "))
                }
            };
            Outcome::ViewRequest {
                view: v.name.text.clone(),
                reason,
            }
        }
        _ => {
            let mut plans = Vec::new();
            let mut wakes = Vec::new();
            let mut views = Vec::new();
            for st in &doc.statements {
                match &st.kind {
                    StatementKind::Plan(p) => plans.push(p.name.text.clone()),
                    StatementKind::Wake(w) => wakes.push(w.name.text.clone()),
                    StatementKind::View(v) => views.push(v.name.text.clone()),
                    _ => {}
                }
            }
            Outcome::Supersede {
                plans,
                wakes,
                views,
            }
        }
    };
    let kestrel = lang::print(&doc);
    let mut t = turn(ctx, outcome, journal, kestrel, source);
    t.checked = Checked(Some(std::sync::Arc::new(doc)));
    t
}

/// Why a CANCEL of `target` is refused against the standing `book`: it names no plan there
/// (`None`: it does). The router's `unknown-ref` and the desk editor's live check say the
/// same words.
pub(crate) fn cancel_unknown(target: &str, book: &crate::lang::rules::Scope) -> Option<String> {
    if book.plans.contains(target) {
        return None;
    }
    let known: Vec<&str> = book.plans.iter().map(String::as_str).collect();
    Some(format!(
        "CANCEL names `{target}`, which is not in the standing book; in scope: {}",
        if known.is_empty() {
            "nothing".to_string()
        } else {
            known.join(", ")
        }
    ))
}
