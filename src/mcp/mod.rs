//! `kestrel mcp`: the desk's language and runtime as Model Context Protocol tools, served over
//! stdio with the official Rust SDK (`rmcp`).
//!
//! Tools: `check`, `print`, `card`, `grammar`, `route_turn`, `frame`, `run`. Each takes one
//! flat JSON object (TURNS.md §4: string enums with defaults, optionals checked after the pick,
//! never a top-level `oneOf`/`anyOf`) and answers as the CLI verb it mirrors does:
//!
//! - success: the verb's stdout as text content, its `--json` form as structured content
//!   (always an object with `"ok": true`);
//! - a refusal (a refused document, an unknown tape, a bad time, a refused turn): a tool
//!   result with `isError: true`, the CLI's one-line coded errors as text, and
//!   `{"ok": false, "errors": [{code, rule, message, line, col, error}]}` as structured content;
//! - a malformed call (wrong argument types, a missing required field, an unknown field, an
//!   unknown tool): a JSON-RPC protocol error (`-32602 invalid params`).
//!
//! Stdout carries only the protocol; logs go to stderr. Every tool body runs on the blocking
//! pool, so a heavy replay never stalls the transport and a panic inside a tool becomes a
//! coded `INTERNAL` refusal instead of taking the server down.

pub mod tapes;
pub mod tools;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerInfo};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use std::time::Instant;
use tools::{CodedError, ToolOutput};

/// What the server tells a client about itself at `initialize`.
pub const INSTRUCTIONS: &str = "Kestrel desk: check, print and route Kestrel documents (bounded \
trading plans), read the language card and grammar, render a View's Frame at a tape time, and \
replay plans over a tape headlessly. Refusals are tool results with isError true and the coded \
errors (code, rule, message, line, col) the kestrel CLI prints. Call `card` first to learn the \
language.";

/// The MCP server: stateless; every call is independent.
#[derive(Debug, Clone)]
pub struct KestrelServer {
    tool_router: ToolRouter<Self>,
    quiet: bool,
}

impl Default for KestrelServer {
    fn default() -> Self {
        Self::new()
    }
}

/// Convert a tool's output to a protocol result.
pub fn to_result(out: ToolOutput) -> CallToolResult {
    let content = vec![ContentBlock::text(out.text)];
    if out.ok {
        let mut r = CallToolResult::success(content);
        r.structured_content = Some(out.data);
        r
    } else {
        let mut r = CallToolResult::error(content);
        r.structured_content = Some(out.data);
        r
    }
}

impl KestrelServer {
    /// A server that logs one line per call on stderr.
    pub fn new() -> Self {
        KestrelServer {
            tool_router: Self::tool_router(),
            quiet: false,
        }
    }

    /// A server that logs nothing.
    pub fn quiet() -> Self {
        KestrelServer {
            quiet: true,
            ..Self::new()
        }
    }

    /// Run `f` on the blocking pool; a panic becomes an `INTERNAL` refusal. Logs on stderr.
    async fn call<F>(&self, tool: &'static str, f: F) -> Result<CallToolResult, ErrorData>
    where
        F: FnOnce() -> ToolOutput + Send + 'static,
    {
        let t0 = Instant::now();
        let out = match tokio::task::spawn_blocking(f).await {
            Ok(out) => out,
            Err(e) => CodedError::plain(
                "INTERNAL",
                format!("the {tool} tool failed unexpectedly: {e}"),
            )
            .into(),
        };
        if !self.quiet {
            let first = out.text.lines().next().unwrap_or("");
            let what = if out.ok { "ok" } else { first };
            crate::cli::errln!(
                "kestrel mcp: {tool}: {what} ({} ms)",
                t0.elapsed().as_millis()
            );
        }
        Ok(to_result(out))
    }
}

#[tool_router]
impl KestrelServer {
    /// `check`.
    #[tool(
        description = "Check a Kestrel document against the grammar and every fail-closed rule. \
        Returns the statement count, or the coded errors (code, rule, message, line, col) that \
        `kestrel check` prints."
    )]
    async fn check(
        &self,
        Parameters(a): Parameters<tools::DocumentArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call("check", move || tools::check(&a)).await
    }

    /// `print`.
    #[tool(
        description = "Print a Kestrel document in canonical form (the text `kestrel print` \
        writes). A refused document returns its coded errors."
    )]
    async fn print(
        &self,
        Parameters(a): Parameters<tools::DocumentArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call("print", move || tools::print(&a)).await
    }

    /// `card`.
    #[tool(
        description = "The whole Kestrel language as a prompt card, stating the menu of the \
        given wake and profile; with a token budget, optional sections are shortened or dropped \
        and the card says what was dropped."
    )]
    async fn card(
        &self,
        Parameters(a): Parameters<tools::CardArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call("card", move || tools::card(&a)).await
    }

    /// `grammar`.
    #[tool(
        description = "The Kestrel constrained-decoding grammar generated from the parser: \
        GBNF (llama.cpp's grammar field, xgrammar) or Lark (llguidance), for an author's turn or \
        a .kestrel file, as `kestrel grammar` prints it."
    )]
    async fn grammar(
        &self,
        Parameters(a): Parameters<tools::GrammarArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call("grammar", move || tools::grammar(&a)).await
    }

    /// `route_turn`.
    #[tool(
        description = "Route an author's reply as a turn at a wake: the outcome (supersede, \
        stand-down, view-request, cancel, pass, invalid, truncated, provider-error), journal, \
        canonical Kestrel, menu and token figures, as `kestrel turn --json` prints them. A \
        refused turn is returned with isError true and its coded errors."
    )]
    async fn route_turn(
        &self,
        Parameters(a): Parameters<tools::RouteTurnArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call("route_turn", move || tools::route_turn(&a)).await
    }

    /// `frame`.
    #[tool(
        description = "Render a View's Frame at a tape time exactly as an agent receives it, \
        with its cl100k token count. The tape is a bundled tape's short name (e.g. \
        trend-2025-04-09-s1) or a path; the view is a Kestrel document holding a VIEW \
        (default: the built-in default view)."
    )]
    async fn frame(
        &self,
        Parameters(a): Parameters<tools::FrameArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call("frame", move || tools::frame(&a)).await
    }

    /// `run`.
    #[tool(
        description = "Replay a tape headlessly with a document of plans armed at the open and \
        return the canonical JSON run report `kestrel run --json` prints: per-plan state, fires, \
        fills, P&L and MAE in dollars and R, the book P&L and the determinism hash. The tape is \
        a bundled tape's short name (e.g. trend-2025-04-09-s1) or a path."
    )]
    async fn run(
        &self,
        Parameters(a): Parameters<tools::RunArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call("run", move || tools::run(&a)).await
    }
}

/// The prefix rmcp gives an argument-deserialization failure.
const BAD_ARGUMENTS: &str = "failed to deserialize parameters:";

#[tool_handler(router = self.tool_router)]
impl ServerHandler for KestrelServer {
    /// Dispatch a call. rmcp reports arguments that do not fit the tool's schema as a tool
    /// result; the desk treats them as a malformed call, a protocol error (`-32602`), so a
    /// refusal (`isError: true`) always means the desk judged well-formed input.
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let name = request.name.to_string();
        let tcc = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        let r = self.tool_router.call(tcc).await;
        let r = match r {
            Ok(r) if r.is_error == Some(true) && r.structured_content.is_none() => {
                let text = r
                    .content
                    .first()
                    .and_then(|c| c.as_text())
                    .map(|t| t.text.clone())
                    .unwrap_or_default();
                match text.strip_prefix(BAD_ARGUMENTS) {
                    Some(why) => Err(malformed(&name, why.trim())),
                    None => Ok(r),
                }
            }
            other => other,
        };
        if let Err(e) = &r {
            if !self.quiet {
                crate::cli::errln!(
                    "kestrel mcp: {name}: protocol error {}: {}",
                    e.code.0,
                    e.message
                );
            }
        }
        r
    }

    fn get_info(&self) -> ServerInfo {
        ServerInfo::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("kestrel", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}

/// The protocol error for a call whose arguments do not fit the tool's input schema.
fn malformed(tool: &str, why: &str) -> ErrorData {
    let message =
        format!("error code=USAGE message={tool}: arguments do not fit the input schema: {why}");
    ErrorData::invalid_params(
        message,
        Some(serde_json::json!({ "code": "USAGE", "tool": tool, "message": why })),
    )
}

/// Serve MCP on stdin/stdout until the client closes the connection. Returns the process
/// exit code (0 on a clean close, 1 if the transport failed).
pub fn serve_stdio(quiet: bool) -> i32 {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            crate::cli::errln!("error code=IO message=cannot start the async runtime: {e}");
            return 1;
        }
    };
    rt.block_on(async move {
        let server = if quiet {
            KestrelServer::quiet()
        } else {
            KestrelServer::new()
        };
        if !quiet {
            crate::cli::errln!(
                "kestrel mcp: serving on stdio (kestrel {})",
                env!("CARGO_PKG_VERSION")
            );
        }
        let service = match server.serve(rmcp::transport::stdio()).await {
            Ok(s) => s,
            Err(e) => {
                crate::cli::errln!("error code=IO message=MCP initialization failed: {e}");
                return 1;
            }
        };
        match service.waiting().await {
            Ok(_) => 0,
            Err(e) => {
                crate::cli::errln!("error code=IO message=MCP transport failed: {e}");
                1
            }
        }
    })
}
