//! `kestrel mcp`: serve the desk's tools over the Model Context Protocol on stdio.

/// Arguments of `kestrel mcp`.
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// Log nothing on stderr (by default one line per tool call).
    #[arg(long)]
    pub quiet: bool,
}

/// Serve until the client closes stdin.
pub fn run(a: &McpArgs) -> i32 {
    crate::mcp::serve_stdio(a.quiet)
}
