//! Tape resolution for the MCP tools: a bundled tape by short name (`trend-2025-04-09-s1`), or a
//! path to a readable regular file. Anything else is refused with a coded error, never opened
//! (a directory, a FIFO or a device such as `/dev/zero` would otherwise hang or fail obscurely).

use super::tools::CodedError;
use std::path::{Path, PathBuf};

/// Environment variable naming extra directories (a `PATH`-style list) searched for bundled
/// tapes before the defaults.
pub const TAPES_ENV: &str = "KESTREL_TAPES";

/// The directories searched for bundled tapes, in order: `$KESTREL_TAPES`, `./tapes`, the
/// `tapes/` directory beside the executable's checkout (`<exe>/../../tapes`, for
/// `target/<profile>/kestrel`), and the `tapes/` directory of the source tree the binary was
/// built from.
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(v) = std::env::var_os(TAPES_ENV) {
        dirs.extend(std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()));
    }
    dirs.push(PathBuf::from("tapes"));
    if let Some(root) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent()?.parent()?.parent().map(Path::to_path_buf))
    {
        dirs.push(root.join("tapes"));
    }
    dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("tapes"));
    let mut seen = Vec::new();
    dirs.retain(|d| {
        let key = std::fs::canonicalize(d).unwrap_or_else(|_| d.clone());
        if seen.contains(&key) {
            false
        } else {
            seen.push(key);
            true
        }
    });
    dirs
}

/// The short names of every bundled tape found, sorted and without duplicates.
pub fn bundled_names() -> Vec<String> {
    let mut names: Vec<String> = search_dirs()
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|rd| rd.filter_map(Result::ok))
        .filter(|e| e.path().is_file())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".jsonl"))
                .map(str::to_string)
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Is `s` shaped like a short tape name (no separators, no leading dot)?
fn is_short_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('.')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Check that `p` is a regular file we can open for reading.
fn readable_file(p: &Path, shown: &str) -> Result<PathBuf, Box<CodedError>> {
    let meta = std::fs::metadata(p).map_err(|e| {
        Box::new(CodedError::plain(
            "IO",
            format!("cannot read tape {shown}: {e}"),
        ))
    })?;
    if !meta.is_file() {
        return Err(Box::new(CodedError::plain(
            "IO",
            format!("cannot read tape {shown}: not a regular file"),
        )));
    }
    std::fs::File::open(p).map_err(|e| {
        Box::new(CodedError::plain(
            "IO",
            format!("cannot read tape {shown}: {e}"),
        ))
    })?;
    Ok(p.to_path_buf())
}

/// Resolve a tape argument: a bundled short name (with or without `.jsonl`) or a path.
pub fn resolve(tape: &str) -> Result<PathBuf, Box<CodedError>> {
    let tape = tape.trim();
    if tape.is_empty() {
        return Err(Box::new(CodedError::plain(
            "USAGE",
            "tape is empty: give a bundled tape name (e.g. trend-2025-04-09-s1) or a path",
        )));
    }
    let as_path = Path::new(tape);
    let looks_like_path = tape.contains('/') || tape.contains('\\') || as_path.is_absolute();
    if !looks_like_path && is_short_name(tape) {
        let stem = tape.strip_suffix(".jsonl").unwrap_or(tape);
        for d in search_dirs() {
            let p = d.join(format!("{stem}.jsonl"));
            if p.is_file() {
                return readable_file(&p, tape);
            }
        }
        // Not bundled: a file of that name in the working directory still counts as a path.
        if as_path.is_file() {
            return readable_file(as_path, tape);
        }
        let names = bundled_names();
        let list = if names.is_empty() {
            format!("no bundled tapes were found (set {TAPES_ENV} to the tapes directory)")
        } else {
            format!("bundled tapes: {}", names.join(", "))
        };
        return Err(Box::new(CodedError::plain(
            "USAGE",
            format!("unknown tape {tape:?}: {list}; or give a path to a .jsonl tape"),
        )));
    }
    readable_file(as_path, tape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_resolve_and_bad_paths_are_refused() {
        let p = resolve("trend-2025-04-09-s1").expect("bundled tape");
        assert!(p.ends_with("trend-2025-04-09-s1.jsonl"));
        assert!(resolve("trend-2025-04-09-s1.jsonl").is_ok());
        let e = resolve("no-such-tape").unwrap_err();
        assert_eq!(e.code, "USAGE");
        assert!(e.message.contains("trend-2025-04-09-s1"), "{}", e.message);
        let e = resolve("/dev/zero").unwrap_err();
        assert_eq!(e.code, "IO");
        assert!(e.message.contains("not a regular file"));
        assert_eq!(resolve("/").unwrap_err().code, "IO");
        assert_eq!(resolve("/no/such/file.jsonl").unwrap_err().code, "IO");
        assert_eq!(resolve("  ").unwrap_err().code, "USAGE");
    }
}
