//! The MCP tools as plain synchronous functions: typed, flat inputs in; a [`ToolOutput`] out.
//!
//! Each tool gives the same results and the same coded errors as the CLI verb it mirrors
//! (`kestrel check`, `print`, `card`, `turn --json`, `frame --json`, ...). The server in
//! [`super`] only adapts these to the protocol, so they can be tested without it.
//!
//! Every input type is one flat JSON object (TURNS.md §4): enums are string enums with a
//! default, optional fields are checked after the pick, and there is never a top-level
//! `oneOf`/`anyOf`. Unknown fields are refused, so a misspelt argument is a malformed call.

use crate::lang::{self, Diagnostic, ast};
use crate::market::{TapeError, Ts, open_tape};
use crate::tokens::{self, Encoding};
use crate::turn::{self, AuthorKind, Profile, Reply, TurnClass, TurnContext, TurnError, WakePhase};
use crate::view::{self, Replay, Snapshot};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One coded error, as the CLI prints it (`error code=... rule=... message=... (line L, col C)`)
/// plus its fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CodedError {
    /// `PARSE`, `TURN`, `ENVELOPE`, `TRUNCATED`, `TAPE`, `USAGE` or `IO`.
    pub code: String,
    /// The stable rule name, for document and turn errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The guiding message.
    pub message: String,
    /// 1-based line (in the document, the reply, or the tape for `TAPE` errors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// 1-based column.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub col: Option<usize>,
    /// The one-line form, exactly as the CLI prints it.
    pub error: String,
}

impl CodedError {
    /// An error with only a code and a message (`USAGE`, `IO`).
    pub fn plain(code: &str, message: impl Into<String>) -> CodedError {
        let message = message.into();
        CodedError {
            error: format!("error code={code} message={}", message.replace('\n', " ")),
            code: code.to_string(),
            rule: None,
            message,
            line: None,
            col: None,
        }
    }
}

impl From<&Diagnostic> for CodedError {
    fn from(d: &Diagnostic) -> CodedError {
        CodedError {
            code: d.code.to_string(),
            rule: Some(d.rule.name().to_string()),
            message: d.message.clone(),
            line: Some(d.line),
            col: Some(d.col),
            error: d.one_line(),
        }
    }
}

impl From<&TurnError> for CodedError {
    fn from(e: &TurnError) -> CodedError {
        CodedError {
            code: e.code.clone(),
            rule: Some(e.rule.clone()),
            message: e.message.clone(),
            line: (e.line > 0).then_some(e.line),
            col: (e.line > 0).then_some(e.col),
            error: e.one_line(),
        }
    }
}

/// A refused tape line, without its detail: the detail can quote the file's content, and the
/// tools never quote a file (the CLI, run by the file's owner, shows it whole).
impl From<&TapeError> for CodedError {
    fn from(e: &TapeError) -> CodedError {
        let message = format!(
            "{}: the tape was refused at this line (run `kestrel run` or `kestrel frame` on the file for the detail)",
            e.kind.as_str()
        );
        CodedError {
            code: e.code().to_string(),
            rule: None,
            error: format!("error code={} line={} message={message}", e.code(), e.line),
            message,
            line: usize::try_from(e.line).ok().filter(|l| *l > 0),
            col: None,
        }
    }
}

/// What a tool returns: its text (what the CLI prints on stdout, or the refusal's one-line
/// errors), its structured JSON, and whether it is a refusal (`isError: true`).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// False for a refusal.
    pub ok: bool,
    /// The text content.
    pub text: String,
    /// The structured content (always a JSON object with an `ok` key).
    pub data: Value,
}

impl ToolOutput {
    /// A success: `data` must be an object; `"ok": true` is added.
    pub fn success(text: impl Into<String>, mut data: Value) -> ToolOutput {
        if let Value::Object(m) = &mut data {
            m.insert("ok".into(), Value::Bool(true));
        }
        ToolOutput {
            ok: true,
            text: text.into(),
            data,
        }
    }

    /// A refusal with these coded errors: the text is their one-line forms, the data
    /// `{"ok": false, "errors": [...]}`.
    pub fn refused(errors: &[CodedError]) -> ToolOutput {
        ToolOutput::refused_with(errors, serde_json::Map::new())
    }

    /// A refusal carrying extra structured fields beside `ok` and `errors`.
    pub fn refused_with(errors: &[CodedError], mut extra: serde_json::Map<String, Value>) -> Self {
        let text = errors
            .iter()
            .map(|e| e.error.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        extra.insert("ok".into(), Value::Bool(false));
        extra.insert(
            "errors".into(),
            serde_json::to_value(errors).unwrap_or_else(|_| json!([])),
        );
        ToolOutput {
            ok: false,
            text,
            data: Value::Object(extra),
        }
    }
}

impl From<CodedError> for ToolOutput {
    fn from(e: CodedError) -> ToolOutput {
        ToolOutput::refused(&[e])
    }
}

// ---------------------------------------------------------------------------------------------
// Shared argument enums: plain string enums inlined into each schema (`{"type": "string",
// "enum": [...]}`); variants carry no doc comments, which would turn them into `oneOf`.

/// How a document is checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[schemars(inline)]
pub enum DocMode {
    #[default]
    File,
    Turn,
}

impl From<DocMode> for lang::Mode {
    fn from(m: DocMode) -> lang::Mode {
        match m {
            DocMode::File => lang::Mode::File,
            DocMode::Turn => lang::Mode::Turn,
        }
    }
}

/// The wake phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[schemars(inline)]
pub enum Phase {
    Open,
    #[default]
    Mid,
}

impl From<Phase> for WakePhase {
    fn from(p: Phase) -> WakePhase {
        match p {
            Phase::Open => WakePhase::Open,
            Phase::Mid => WakePhase::Mid,
        }
    }
}

/// The prompt profile (decides the menu).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[schemars(inline)]
pub enum ProfileName {
    #[default]
    #[serde(rename = "authoring-v2")]
    AuthoringV2,
    #[serde(rename = "viewshop-v2")]
    ViewshopV2,
    #[serde(rename = "authoring-v1")]
    AuthoringV1,
    #[serde(rename = "completion-v1")]
    CompletionV1,
}

impl From<ProfileName> for Profile {
    fn from(p: ProfileName) -> Profile {
        match p {
            ProfileName::AuthoringV2 => Profile::AuthoringV2,
            ProfileName::ViewshopV2 => Profile::ViewshopV2,
            ProfileName::AuthoringV1 => Profile::AuthoringV1,
            ProfileName::CompletionV1 => Profile::CompletionV1,
        }
    }
}

/// Who wrote a reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[schemars(inline)]
pub enum Author {
    #[default]
    Human,
    Model,
    File,
}

impl From<Author> for AuthorKind {
    fn from(a: Author) -> AuthorKind {
        match a {
            Author::Human => AuthorKind::Human,
            Author::Model => AuthorKind::Model,
            Author::File => AuthorKind::File,
        }
    }
}

/// A tokenizer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum Tokenizer {
    #[default]
    Cl100k,
    O200k,
}

impl From<Tokenizer> for Encoding {
    fn from(t: Tokenizer) -> Encoding {
        match t {
            Tokenizer::Cl100k => Encoding::Cl100k,
            Tokenizer::O200k => Encoding::O200k,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// check / print

/// Input of `check` and `print`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DocumentArgs {
    /// The Kestrel document's text.
    pub document: String,
    /// `file` (default): a saved file, turn directives (STAND-DOWN, SHOW VIEW, ...) refused;
    /// `turn`: an author's turn, turn directives allowed.
    #[serde(default)]
    pub mode: DocMode,
}

fn doc_errors(errors: &[Diagnostic]) -> Vec<CodedError> {
    errors.iter().map(CodedError::from).collect()
}

/// [`lang::check`] in the document's mode; a turn is also held to the router's shape (one
/// directive or a module of statements: `code=TURN rule=turn-mix`), as `kestrel check --turn`.
fn check_doc(a: &DocumentArgs) -> Result<lang::Document, Vec<CodedError>> {
    let doc = lang::check(&a.document, a.mode.into()).map_err(|e| doc_errors(&e))?;
    if a.mode == DocMode::Turn
        && let Some(e) = crate::turn::mix_error(&doc, &a.document)
    {
        return Err(vec![CodedError::from(&e)]);
    }
    Ok(doc)
}

/// `check`: the document against the grammar and every fail-closed rule.
pub fn check(a: &DocumentArgs) -> ToolOutput {
    match check_doc(a) {
        Ok(doc) => {
            let n = doc.statements.len();
            let s = if n == 1 { "" } else { "s" };
            ToolOutput::success(format!("ok ({n} statement{s})"), json!({ "statements": n }))
        }
        Err(errors) => ToolOutput::refused(&errors),
    }
}

/// `print`: the document in canonical form (refused documents are not printed).
pub fn print(a: &DocumentArgs) -> ToolOutput {
    match check_doc(a) {
        Ok(doc) => {
            let text = lang::print(&doc);
            ToolOutput::success(
                text.clone(),
                json!({ "canonical": text, "changed": text != a.document }),
            )
        }
        Err(errors) => ToolOutput::refused(&errors),
    }
}

// ---------------------------------------------------------------------------------------------
// card

/// Input of `card`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CardArgs {
    /// Stay within this many tokens: optional sections are shortened or dropped, and the card
    /// says what was dropped. Omit for the whole card.
    #[serde(default)]
    pub budget: Option<u32>,
    /// The wake whose menu the card states.
    #[serde(default)]
    pub phase: Phase,
    /// The profile whose menu the card states.
    #[serde(default)]
    pub profile: ProfileName,
    /// Tokenizer for the budget.
    #[serde(default)]
    pub encoding: Tokenizer,
}

/// `card`: the whole language as a prompt card.
pub fn card(a: &CardArgs) -> ToolOutput {
    let enc: Encoding = a.encoding.into();
    if let Err(e) = tokens::bpe(enc) {
        return CodedError::plain("IO", e.to_string()).into();
    }
    let menu = turn::Menu::for_wake(a.phase.into(), a.profile.into(), 0).prompt_text();
    let count = |s: &str| tokens::count(s, enc).unwrap_or(usize::MAX / 2);
    let budget = a.budget.and_then(|b| usize::try_from(b).ok());
    match lang::card::build(&menu, budget, &count) {
        Ok(c) => ToolOutput::success(
            c.text.clone(),
            json!({
                "card": c.text,
                "tokens": c.tokens,
                "encoding": enc.name(),
                "budget": a.budget,
                "dropped": c.dropped,
            }),
        ),
        Err(e) => CodedError::plain("USAGE", e).into(),
    }
}

// ---------------------------------------------------------------------------------------------
// grammar

/// A grammar export format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum GrammarFormat {
    #[default]
    Gbnf,
    Lark,
}

/// What a grammar covers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum GrammarScope {
    #[default]
    Turn,
    File,
}

/// Input of `grammar`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrammarArgs {
    /// `gbnf` (llama.cpp's `grammar` field; xgrammar reads it too) or `lark` (llguidance).
    #[serde(default)]
    pub format: GrammarFormat,
    /// `turn` (an author's turn: one directive, or a module of statements, or only comments)
    /// or `file` (a `.kestrel` file: statements without directives).
    #[serde(default)]
    pub scope: GrammarScope,
    /// Longest free text (a comment, a STAND-DOWN reason) in characters, 1 to 4096.
    #[serde(default = "default_free_text_max")]
    pub free_text_max: u32,
    /// Longest run of spaces, digits or name characters, 1 to 1024.
    #[serde(default = "default_run_max")]
    pub run_max: u32,
}

fn default_free_text_max() -> u32 {
    lang::grammar::GrammarOptions::default().free_text_max
}

fn default_run_max() -> u32 {
    lang::grammar::GrammarOptions::default().run_max
}

/// `grammar`: the constrained-decoding grammar generated from the parser's syntax definitions, as
/// `kestrel grammar` prints it.
pub fn grammar(a: &GrammarArgs) -> ToolOutput {
    use lang::grammar as g;
    if let Err(e) =
        crate::cli::grammar::check_bounds(a.free_text_max, a.run_max, ["free_text_max", "run_max"])
    {
        return CodedError::plain("USAGE", e).into();
    }
    let opts = g::GrammarOptions {
        scope: match a.scope {
            GrammarScope::Turn => g::GrammarScope::Turn,
            GrammarScope::File => g::GrammarScope::File,
        },
        free_text_max: a.free_text_max,
        run_max: a.run_max,
        ..g::GrammarOptions::default()
    };
    let format = match a.format {
        GrammarFormat::Gbnf => g::GrammarFormat::Gbnf,
        GrammarFormat::Lark => g::GrammarFormat::Lark,
    };
    let text = g::export(format, opts);
    ToolOutput::success(
        text.clone(),
        json!({
            "grammar": text,
            "format": a.format,
            "scope": a.scope,
            "free_text_max": a.free_text_max,
            "run_max": a.run_max,
        }),
    )
}

// ---------------------------------------------------------------------------------------------
// route_turn

/// Input of `route_turn`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteTurnArgs {
    /// The author's reply, verbatim (Kestrel, or the JSON envelope).
    pub reply: String,
    /// The wake the reply answers: `open` (the OPEN wake) or `mid` (any later wake).
    #[serde(default)]
    pub phase: Phase,
    /// The prompt profile (decides the menu): `authoring-v2` (pure Kestrel, the default),
    /// `viewshop-v2` (adds SHOW VIEW at the OPEN wake), `authoring-v1` (the JSON envelope) or
    /// `completion-v1` (pure Kestrel, few-shot for base models).
    #[serde(default)]
    pub profile: ProfileName,
    /// Who wrote it (`human`, `model` or `file`): for a model an empty reply is a provider
    /// error, otherwise a pass.
    #[serde(default)]
    pub author: Author,
    /// Names in the standing book (plans), in scope for CANCEL, ARM and plan(...).
    #[serde(default)]
    pub standing: Vec<String>,
    /// SHOW VIEW requests already answered at this wake.
    #[serde(default)]
    pub views_requested: u32,
    /// Tokenizer for the token figures.
    #[serde(default)]
    pub encoding: Tokenizer,
}

/// `route_turn`: the routed outcome as `kestrel turn --json` prints it. A refused turn
/// (invalid, truncated, provider error) is a refusal carrying the same JSON.
pub fn route_turn(a: &RouteTurnArgs) -> ToolOutput {
    let mut ctx = TurnContext::new(a.phase.into(), a.profile.into(), a.author.into());
    ctx.views_requested = a.views_requested;
    if !a.standing.is_empty() {
        let mut scope = lang::Scope::default();
        scope.plans.extend(a.standing.iter().cloned());
        ctx.standing = Some(scope);
    }
    let t = turn::route(&Reply::text(a.reply.clone()), &ctx);
    let enc: Encoding = a.encoding.into();
    let figures = tokens::measure(&a.reply, &t, enc);
    let mut m = match serde_json::to_value(&t) {
        Ok(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    m.insert(
        "class".into(),
        serde_json::to_value(t.class()).unwrap_or_default(),
    );
    m.insert("menu".into(), Value::String(ctx.menu().describe()));
    match &figures {
        Ok(f) => {
            // As `kestrel turn --json` gives them, `reply_estimated` with them.
            m.insert("tokens".into(), f.json(a.reply.len()));
        }
        Err(e) => {
            m.insert("tokens_error".into(), Value::String(e.to_string()));
        }
    }
    let pretty = serde_json::to_string_pretty(&m).unwrap_or_default();
    if t.class() == TurnClass::Authored {
        return ToolOutput::success(pretty, Value::Object(m));
    }
    let mut errors: Vec<CodedError> = t.outcome.errors().iter().map(CodedError::from).collect();
    if let turn::Outcome::ProviderError { message } = &t.outcome {
        errors.push(CodedError::plain("PROVIDER", message.clone()));
    }
    if errors.is_empty() {
        errors.push(CodedError::plain(
            "TURN",
            format!("the turn was routed as {}", t.outcome.name()),
        ));
    }
    let mut out = ToolOutput::refused_with(&errors, m);
    out.text = format!("{}\n{pretty}", out.text);
    out
}

// ---------------------------------------------------------------------------------------------
// frame

/// Input of `frame`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FrameArgs {
    /// A bundled tape's short name (e.g. `trend-2025-04-09-s1`) or a path to a `.jsonl` tape.
    pub tape: String,
    /// Tape time `HH:MM`, `HH:MM:SS` or `HH:MM:SS.mmm` (exchange time; `9:45` is `09:45`;
    /// milliseconds are three digits).
    pub at: String,
    /// A document holding the VIEW to render (default: the built-in default view).
    #[serde(default)]
    pub view: Option<String>,
    /// Which VIEW of the `view` document, when it holds several; only with `view` (a name
    /// without a view is refused).
    #[serde(default)]
    pub name: Option<String>,
    /// Wrap lines at this width (0: no wrapping).
    #[serde(default)]
    pub width: u32,
}

type FileTape = crate::market::TapeReader<std::io::BufReader<std::fs::File>>;

/// A tool's tape argument (a bundled name or a path), resolved and opened; refusals as
/// coded output.
fn open_tool_tape(
    root: &super::tapes::Root,
    tape: &str,
) -> Result<(std::path::PathBuf, FileTape), ToolOutput> {
    let path = super::tapes::resolve_in(root, tape).map_err(|e| ToolOutput::from(*e))?;
    let reader = open_tape(&path).map_err(|e| ToolOutput::from(CodedError::from(&e)))?;
    Ok((path, reader))
}

fn pick_view(src: &str, name: Option<&str>) -> Result<ast::View, ToolOutput> {
    let doc = lang::check(src, lang::Mode::Turn)
        .map_err(|errs| ToolOutput::refused(&doc_errors(&errs)))?;
    match view::pick_view(doc, name) {
        Ok(v) => Ok(v),
        Err(view::PickError::None) => {
            let named = name.map(|n| format!(" named {n}")).unwrap_or_default();
            Err(
                CodedError::plain("USAGE", format!("the view document holds no VIEW{named}"))
                    .into(),
            )
        }
        Err(view::PickError::Several(names)) => Err(CodedError::plain(
            "USAGE",
            format!(
                "the view document holds several views ({}): choose one with name",
                names.join(", ")
            ),
        )
        .into()),
    }
}

/// `frame` with tape paths confined to the working directory.
pub fn frame(a: &FrameArgs) -> ToolOutput {
    frame_in(&super::tapes::Root::current(), a)
}

/// `frame`: render a View at a tape time, exactly as an agent would receive it.
pub fn frame_in(root: &super::tapes::Root, a: &FrameArgs) -> ToolOutput {
    let Some(at) = Ts::parse_clock(&a.at) else {
        return CodedError::plain("USAGE", crate::cli::frame::not_a_time(&a.at, "at")).into();
    };
    if let (Some(n), None) = (&a.name, &a.view) {
        return CodedError::plain(
            "USAGE",
            crate::cli::frame::name_without_view(n, "name", "view"),
        )
        .into();
    }
    let view = match &a.view {
        None => view::default_view(),
        Some(src) => match pick_view(src, a.name.as_deref()) {
            Ok(v) => v,
            Err(out) => return out,
        },
    };
    let (_, reader) = match open_tool_tape(root, &a.tape) {
        Ok(x) => x,
        Err(out) => return out,
    };
    let session = (reader.header().open, reader.header().close);
    if let Some(e) = crate::cli::frame::outside_session(at, &a.at, session, "at") {
        return CodedError::plain("USAGE", e).into();
    }
    let mut replay = match Replay::new(reader, &view) {
        Ok(r) => r,
        Err(e) => return CodedError::plain("TAPE", e).into(),
    };
    if let Err(e) = replay.advance_to(at) {
        return CodedError::from(&e).into();
    }
    let width = usize::try_from(a.width).unwrap_or(0);
    let r = replay.frame(&view, &Snapshot::default(), None, width, &view::cl100k);
    ToolOutput::success(
        r.text.clone(),
        json!({
            "frame": r.text,
            "tokens_cl100k": r.tokens,
            "budget": r.budget,
            "dropped": r.dropped,
            "tape": replay.header.name,
            "at": at.to_string(),
        }),
    )
}

// ---------------------------------------------------------------------------------------------
// run

/// Input of `run`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    /// The Kestrel document of plans (POD, BOOK, PLAN, WAKE, ...) armed at the open.
    pub plans: String,
    /// A bundled tape's short name (e.g. `trend-2025-04-09-s1`) or a path to a `.jsonl` tape.
    pub tape: String,
    /// The fill model (known: `strict-cross-v1`).
    #[serde(default = "default_fill")]
    pub fill: String,
    /// Dollars per 1R, as a decimal string (`"1000"`) or a number (`1000`); 1000 when
    /// absent, as on `kestrel run`.
    #[serde(default = "default_r_usd", deserialize_with = "de_amount")]
    #[schemars(schema_with = "amount_schema")]
    pub r_usd: String,
}

fn default_fill() -> String {
    crate::cli::flags::DEFAULT_FILL.to_string()
}

fn default_r_usd() -> String {
    crate::cli::flags::DEFAULT_R_USD.to_string()
}

/// An amount given as a JSON string or number, kept as its decimal text.
fn de_amount<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(serde::de::Error::custom(format!(
            "invalid type: {other}, expected a decimal string or a number"
        ))),
    }
}

fn amount_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": ["string", "number"],
        "description": "Dollars per 1R, as a decimal string (\"1000\") or a number (1000); 1000 when absent.",
    })
}

/// `run` with tape paths confined to the working directory.
pub fn run(a: &RunArgs) -> ToolOutput {
    run_in(&super::tapes::Root::current(), a)
}

/// `run`: replay the tape headlessly with the plans armed at the open; the canonical JSON
/// report `kestrel run --json` prints.
pub fn run_in(root: &super::tapes::Root, a: &RunArgs) -> ToolOutput {
    use crate::bus::Bus;

    let cfg = match crate::cli::run::engine_config("r_usd", &a.r_usd, &a.fill) {
        Ok(c) => c,
        Err(e) => return CodedError::plain("USAGE", e).into(),
    };
    let doc = match lang::check(&a.plans, lang::Mode::File) {
        Ok(d) => d,
        Err(errors) => return ToolOutput::refused(&doc_errors(&errors)),
    };
    let has_plans = crate::cli::run::holds_a_plan(std::slice::from_ref(&doc));
    let (path, reader) = match open_tool_tape(root, &a.tape) {
        Ok(x) => x,
        Err(out) => return out,
    };
    // The same headless session `kestrel run` plays (nobody is asked at the wakes).
    let reader = reader.boxed();
    let mut session =
        match crate::cli::run::book_session(&a.tape, reader, vec![doc], cfg, Bus::new(None)) {
            Ok(s) => s,
            Err(e) => return CodedError::plain("TAPE", e).into(),
        };
    let mut warned = session.take_arm_warnings();
    if let Err(e) = session.play_to_end(&mut || None) {
        return CodedError::from(&e).into();
    }
    warned.extend(session.take_arm_warnings());
    let warnings = crate::cli::run::arm_warnings(warned);
    let bus = session.finish();
    // A path under the root is shown relative to it (the root's own place is not told).
    let shown = root
        .dir()
        .and_then(|d| path.strip_prefix(d).ok())
        .unwrap_or(&path);
    let report = crate::cli::run::json_report(&bus, &shown.display().to_string(), &warnings);
    match serde_json::from_str::<Value>(&report) {
        Ok(v) if has_plans => ToolOutput::success(report, v),
        Ok(v) => no_plans(report, v),
        Err(e) => CodedError::plain("INTERNAL", format!("the run report is not JSON: {e}")).into(),
    }
}

/// A run of a document without a PLAN, as `kestrel run` says it (`warning code=NO-PLANS`):
/// its report with a `warnings` array of that one coded warning, and the warning's line
/// before the report in the text. Before, it was a plain success, which reads like a replay
/// of the plans the agent meant to send.
fn no_plans(report: String, mut v: Value) -> ToolOutput {
    let message = crate::cli::run::no_plans_message("plans", "holds");
    let line = crate::cli::run::no_plans_warning("plans", "holds");
    if let Value::Object(m) = &mut v {
        // After any the report carries already.
        let mut all = match m.remove("warnings") {
            Some(Value::Array(a)) => a,
            _ => Vec::new(),
        };
        all.push(json!({ "code": "NO-PLANS", "message": message, "warning": line }));
        m.insert("warnings".into(), Value::Array(all));
    }
    ToolOutput::success(format!("{line}\n{report}"), v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_counts_and_refuses() {
        let ok = check(&DocumentArgs {
            document: "VIEW v\n  levels\n".into(),
            mode: DocMode::File,
        });
        assert!(ok.ok, "{}", ok.text);
        assert_eq!(ok.data["statements"], 1);
        let bad = check(&DocumentArgs {
            document: "STAND-DOWN tired\n".into(),
            mode: DocMode::File,
        });
        assert!(!bad.ok);
        assert!(
            bad.text.starts_with("error code=PARSE rule="),
            "{}",
            bad.text
        );
        assert_eq!(bad.data["errors"][0]["line"], 1);
    }
}
