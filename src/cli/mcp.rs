//! `kestrel mcp`: serve the desk's tools over the Model Context Protocol on stdio.

/// Arguments of `kestrel mcp`.
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// Log nothing on stderr (by default one line per tool call).
    #[arg(long)]
    pub quiet: bool,
    /// The directory tape paths are confined to (default: the working directory). Bundled
    /// tapes by short name are found wherever they are.
    #[arg(long)]
    pub root: Option<std::path::PathBuf>,
}

/// Serve until the client closes stdin.
pub fn run(a: &McpArgs) -> i32 {
    let root = match &a.root {
        Some(r) => r.clone(),
        None => std::path::PathBuf::from("."),
    };
    match std::fs::canonicalize(&root) {
        Ok(r) if r.is_dir() => crate::mcp::serve_stdio(a.quiet, &r),
        Ok(_) => {
            errln!(
                "error code=USAGE message=--root {} is not a directory",
                root.display()
            );
            1
        }
        Err(e) => {
            errln!(
                "error code=USAGE message=--root {} cannot be resolved: {e}",
                root.display()
            );
            1
        }
    }
}
