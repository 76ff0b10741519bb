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
pub mod wire;

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

/// The MCP server: stateless; every call is independent. Tape paths are confined to
/// `root` (see [`tapes::Root`]).
#[derive(Debug, Clone)]
pub struct KestrelServer {
    tool_router: ToolRouter<Self>,
    quiet: bool,
    root: std::sync::Arc<tapes::Root>,
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
            root: std::sync::Arc::new(tapes::Root::current()),
        }
    }

    /// Confine tape paths to `dir` (canonicalized; a directory that cannot be resolved
    /// confines to nothing but bundled tapes).
    pub fn with_root(mut self, dir: &std::path::Path) -> Self {
        self.root = std::sync::Arc::new(tapes::Root::new(dir));
        self
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
                "kestrel mcp: {tool}: {} ({} ms)",
                crate::lang::diag::visible(what),
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
        let root = self.root.clone();
        self.call("frame", move || tools::frame_in(&root, &a)).await
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
        let root = self.root.clone();
        self.call("run", move || tools::run_in(&root, &a)).await
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
        if !self.tool_router.has_route(&name) {
            let mut known: Vec<String> = self
                .tool_router
                .list_all()
                .into_iter()
                .map(|t| t.name.to_string())
                .collect();
            known.sort();
            let why = format!("unknown tool '{name}': the tools are {}", known.join(", "));
            let e = ErrorData::invalid_params(
                format!("error code=USAGE message={why}"),
                Some(serde_json::json!({ "code": "USAGE", "tool": name, "message": why })),
            );
            if !self.quiet {
                crate::cli::errln!(
                    "kestrel mcp: {}: protocol error {}: {}",
                    crate::lang::diag::visible(&name),
                    e.code.0,
                    crate::lang::diag::visible(&e.message)
                );
            }
            return Err(e);
        }
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
        if let Err(e) = &r
            && !self.quiet
        {
            crate::cli::errln!(
                "kestrel mcp: {}: protocol error {}: {}",
                crate::lang::diag::visible(&name),
                e.code.0,
                crate::lang::diag::visible(&e.message)
            );
        }
        r
    }

    fn get_info(&self) -> ServerInfo {
        ServerInfo::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("kestrel", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}

/// The largest value of the unsigned integer types the tools' arguments use, by the name
/// serde gives them in "expected u32".
fn largest(ty: &str) -> Option<u64> {
    match ty {
        "u8" => Some(u8::MAX.into()),
        "u16" => Some(u16::MAX.into()),
        "u32" => Some(u32::MAX.into()),
        "u64" => Some(u64::MAX),
        "usize" => u64::try_from(usize::MAX).ok(),
        _ => None,
    }
}

/// serde's words for a number that does not fit a count argument (every integer argument
/// is an unsigned count: a budget, a width, SHOW VIEW requests), in a client's. An integer
/// past `u64` reaches the tool as a float (serde_json keeps integers to `u64` only), so
/// `100000000000000000000` was "invalid type: floating point `1e20`, expected u32" though it
/// was written as an integer; a negative or oversized integer was "invalid value: integer
/// `-1`, expected u32". Any other message is kept as it is.
fn plain_arguments(why: &str) -> String {
    let number = why
        .strip_prefix("invalid type: floating point `")
        .or_else(|| why.strip_prefix("invalid value: integer `"))
        .and_then(|rest| rest.split_once("`, expected "));
    let Some((text, max)) = number.and_then(|(n, ty)| Some((n, largest(ty)?))) else {
        return why.to_string();
    };
    let Ok(n) = text.parse::<f64>() else {
        return why.to_string();
    };
    if !n.is_finite() || n.fract() != 0.0 {
        return format!("{text} is not a whole number: a count is a whole number, 0 to {max}");
    }
    // Digits, as the client wrote an integer (a float past 2^53 is close, not exact).
    let shown = format!("{n:.0}");
    if n < 0.0 {
        format!("{shown} is negative: a count is 0 to {max}")
    } else if n >= 2f64.powi(64) || n as u64 > max {
        format!("{shown} is larger than the largest count, {max}")
    } else {
        format!("{text} is not written as a whole number: write {shown}")
    }
}

/// The protocol error for a call whose arguments do not fit the tool's input schema.
fn malformed(tool: &str, why: &str) -> ErrorData {
    let why = &plain_arguments(why);
    let message =
        format!("error code=USAGE message={tool}: arguments do not fit the input schema: {why}");
    ErrorData::invalid_params(
        message,
        Some(serde_json::json!({ "code": "USAGE", "tool": tool, "message": why })),
    )
}

/// How long calls still running when stdin closes may take to finish; then each is answered
/// `-32603` and the server exits.
pub const DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Requests forwarded to rmcp and not yet answered, by id key. A request whose id is in
/// flight is refused by the screen, so each count is 0 or 1.
#[derive(Default)]
struct InFlight {
    ids: std::sync::Mutex<std::collections::HashMap<String, usize>>,
    changed: tokio::sync::Notify,
    closed: std::sync::atomic::AtomicBool,
}

impl InFlight {
    fn add(&self, key: &str) {
        if let Ok(mut m) = self.ids.lock() {
            *m.entry(key.to_string()).or_default() += 1;
        }
    }
    fn answered(&self, key: &str) {
        if let Ok(mut m) = self.ids.lock()
            && let Some(n) = m.get_mut(key)
        {
            *n -= 1;
            if *n == 0 {
                m.remove(key);
            }
        }
        self.changed.notify_waiters();
    }
    fn contains(&self, key: &str) -> bool {
        self.ids
            .lock()
            .map(|m| m.contains_key(key))
            .unwrap_or(false)
    }
    fn is_empty(&self) -> bool {
        self.ids.lock().map(|m| m.is_empty()).unwrap_or(true)
    }
    /// Every id still owed an answer, once per request.
    fn take_all(&self) -> Vec<String> {
        self.ids
            .lock()
            .map(|mut m| {
                m.drain()
                    .flat_map(|(k, n)| std::iter::repeat_n(k, n))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// One stdin line, bounded.
enum Line {
    Bytes(Vec<u8>),
    TooLong,
    Eof,
}

/// Read one line of at most [`wire::MAX_LINE_BYTES`]; a longer one is skipped to its end.
async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(r: &mut R) -> std::io::Result<Line> {
    use tokio::io::AsyncBufReadExt;
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Line::TooLong,
                (false, true) => Line::Eof,
                (false, false) => Line::Bytes(line),
            });
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], i + 1),
            None => (buf, buf.len()),
        };
        let ended = done > chunk.len();
        if !too_long {
            if line.len() + chunk.len() > wire::MAX_LINE_BYTES {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        r.consume(done);
        if ended {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Bytes(line)
            });
        }
    }
}

/// Serve MCP on stdin/stdout until the client closes the connection. Returns the process
/// exit code (0 on a clean close, 1 if the transport failed).
///
/// Stdin is read here, line by line, and screened ([`wire::Screen`]): a line rmcp would drop
/// or misread is answered with a JSON-RPC error at once; the rest is forwarded to rmcp over
/// an in-process pipe, and each forwarded request is tracked until its response passes out.
/// When stdin closes, the server waits (up to [`DRAIN_TIMEOUT`]) for the calls still
/// running, answers any left `-32603`, and only then closes rmcp's input and exits.
pub fn serve_stdio(quiet: bool, root: &std::path::Path) -> i32 {
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
    let server = if quiet {
        KestrelServer::quiet()
    } else {
        KestrelServer::new()
    }
    .with_root(root);
    let code = rt.block_on(serve_lines(
        server,
        tokio::io::BufReader::new(tokio::io::stdin()),
        tokio::io::stdout(),
        quiet,
    ));
    // A tool body still running on the blocking pool (past DRAIN_TIMEOUT) does not hold
    // the exit.
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    code
}

/// [`serve_stdio`] over any line input and output (tests drive it in process).
pub async fn serve_lines<R, W>(server: KestrelServer, mut input: R, output: W, quiet: bool) -> i32
where
    R: tokio::io::AsyncBufRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use std::sync::Arc;
    use std::sync::atomic::Ordering;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    if !quiet {
        crate::cli::errln!(
            "kestrel mcp: serving on stdio (kestrel {})",
            env!("CARGO_PKG_VERSION")
        );
    }
    let (mut to_rmcp, rmcp_in) = tokio::io::duplex(1 << 16);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(1 << 16);
    let service = tokio::spawn(async move {
        match server.serve((rmcp_in, rmcp_out)).await {
            Ok(s) => s
                .waiting()
                .await
                .map(|_| ())
                .map_err(|e| format!("error code=IO message=MCP transport failed: {e}")),
            Err(e) => Err(format!(
                "error code=IO message=MCP initialization failed: {e}"
            )),
        }
    });
    // One writer owns stdout: whole lines, in the order they are handed over. When stdout
    // fails (the client closed its end: it reads no more answers) the reading below stops.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let out_failed = Arc::new(tokio::sync::Notify::new());
    let writer = {
        let out_failed = out_failed.clone();
        tokio::spawn(async move {
            let mut out = output;
            while let Some(mut line) = rx.recv().await {
                line.push('\n');
                let wrote = async {
                    out.write_all(line.as_bytes()).await?;
                    out.flush().await
                };
                if let Err(e) = wrote.await {
                    out_failed.notify_one();
                    return Err(e);
                }
            }
            Ok(())
        })
    };
    let inflight = Arc::new(InFlight::default());
    let pump = {
        let inflight = inflight.clone();
        let tx = tx.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(from_rmcp).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                // Out of flight before it is written: a client that reuses the id once it
                // has the answer is never refused.
                if let Some(k) = wire::response_key(&line) {
                    inflight.answered(&k);
                }
                let _ = tx.send(line);
            }
            inflight.closed.store(true, Ordering::SeqCst);
            inflight.changed.notify_waiters();
        })
    };
    let mut screen = wire::Screen::default();
    let mut failed = false;
    let mut client_gone = false;
    loop {
        let read = tokio::select! {
            r = read_line(&mut input) => r,
            () = out_failed.notified() => {
                // No answer can reach the client: reading on (what was seen: to the end of
                // stdin, then exit 1 with no word why) serves no one.
                client_gone = true;
                break;
            }
        };
        let line = match read {
            Ok(Line::Eof) => break,
            Ok(Line::TooLong) => {
                let _ = tx.send(wire::error_line(
                    &serde_json::Value::Null,
                    wire::INVALID_REQUEST,
                    &format!(
                        "invalid request: the line is longer than {} bytes",
                        wire::MAX_LINE_BYTES
                    ),
                ));
                continue;
            }
            Ok(Line::Bytes(b)) => b,
            Err(e) => {
                crate::cli::errln!("error code=IO message=reading stdin: {e}");
                failed = true;
                break;
            }
        };
        match screen.screen_in_flight(&line, &|k| inflight.contains(k)) {
            wire::Screened::Ignore => {}
            wire::Screened::Answer(a) => {
                let _ = tx.send(a);
            }
            forward @ (wire::Screened::Forward(_) | wire::Screened::Cancel(_)) => {
                match &forward {
                    wire::Screened::Forward(Some(k)) => inflight.add(k),
                    // rmcp answers a cancelled request with nothing: not waited for at EOF.
                    wire::Screened::Cancel(k) => inflight.answered(k),
                    _ => {}
                }
                let sent = async {
                    to_rmcp.write_all(&line).await?;
                    to_rmcp.write_all(b"\n").await?;
                    to_rmcp.flush().await
                };
                if sent.await.is_err() || inflight.closed.load(Ordering::SeqCst) {
                    // rmcp has stopped: what it was sent is answered below; stop reading.
                    failed = true;
                    break;
                }
            }
        }
    }
    // Stdin closed: let the calls still running finish (bounded), then answer the rest.
    let deadline = tokio::time::Instant::now() + DRAIN_TIMEOUT;
    while !client_gone && !inflight.is_empty() && !inflight.closed.load(Ordering::SeqCst) {
        let changed = inflight.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        if inflight.is_empty() || inflight.closed.load(Ordering::SeqCst) {
            break;
        }
        if tokio::time::timeout_at(deadline, changed).await.is_err() {
            break;
        }
    }
    for key in inflight.take_all() {
        let _ = tx.send(wire::error_line(
            &wire::id_of_key(&key),
            wire::INTERNAL_ERROR,
            "the server stopped before this call finished",
        ));
    }
    drop(to_rmcp);
    // A client gone is owed no answer: the calls still running are not waited for.
    let grace = std::time::Duration::from_millis(if client_gone { 200 } else { 5000 });
    let result = match tokio::time::timeout(grace, service).await {
        Ok(Ok(Ok(()))) => Ok(()),
        Ok(Ok(Err(e))) => Err(e),
        Ok(Err(e)) => Err(format!(
            "error code=INTERNAL message=the MCP service failed: {e}"
        )),
        Err(_) => Err("error code=IO message=the MCP service did not stop".to_string()),
    };
    let mut pump = pump;
    if tokio::time::timeout(grace, &mut pump).await.is_err() {
        pump.abort();
    }
    drop(tx);
    // A client that closed its end of stdout has left, as a reader of `kestrel frame | head`
    // does (src/cli/mod.rs, "Closed pipes"): the server stops quietly with its own exit
    // code. Any other failure to write is an I/O error, said.
    let wrote = match writer.await {
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => true,
        Ok(Err(e)) => {
            crate::cli::errln!("error code=IO message=writing stdout: {e}");
            false
        }
        Ok(Ok(())) => true,
        Err(e) => {
            crate::cli::errln!("error code=INTERNAL message=the MCP writer failed: {e}");
            false
        }
    };
    if (!screen.initialized() && !failed) || client_gone {
        // Stdin closed before any initialize went through: rmcp never started serving
        // (its error is that it was not initialized); the client simply left. Or stdout
        // closed: the client left, whatever rmcp says of its transport.
        return i32::from(!wrote);
    }
    if let Err(e) = result {
        crate::cli::errln!("{e}");
        return 1;
    }
    i32::from(failed || !wrote)
}
