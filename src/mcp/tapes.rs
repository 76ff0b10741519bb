//! Tape resolution for the MCP tools: a bundled tape by short name (`trend-2025-04-09-s1`), or a
//! path to a readable regular file under the server's [`Root`]. Anything else is refused with a
//! coded error, never opened (a directory, a FIFO or a device such as `/dev/zero` would
//! otherwise hang or fail obscurely).
//!
//! **Confinement.** A path (relative paths are taken from the root) is normalised lexically
//! (`..` cannot climb above the root) and then canonicalized, so a symlink that points out of
//! the root is refused as well. Every path outside the root gets the same refusal whether or
//! not anything exists there (also a missing file whose nearest existing ancestor is a symlink
//! out, and a dangling symlink), so the tools cannot be used to probe the file system.

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

/// The directory tape paths are confined to (canonical), for `kestrel mcp --root DIR`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    dir: Option<PathBuf>,
}

impl Root {
    /// Confine to `dir`; a directory that cannot be canonicalized confines to nothing (every
    /// path is refused; bundled tapes by short name still resolve).
    pub fn new(dir: &Path) -> Root {
        Root {
            dir: std::fs::canonicalize(dir).ok().filter(|d| d.is_dir()),
        }
    }

    /// The working directory (the default root).
    pub fn current() -> Root {
        Root::new(Path::new("."))
    }

    /// The canonical root directory, if it resolved.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The one refusal for any path outside the root.
    fn outside(shown: &str) -> Box<CodedError> {
        Box::new(CodedError::plain(
            "IO",
            format!(
                "cannot read tape {shown}: not under the server's root directory (tape paths are confined to the root, set with `kestrel mcp --root DIR`; bundled tapes are found by short name)"
            ),
        ))
    }

    /// `tape` as a canonical path inside the root, or the refusal.
    pub fn confine(&self, tape: &str) -> Result<PathBuf, Box<CodedError>> {
        let Some(root) = &self.dir else {
            return Err(Root::outside(tape));
        };
        let given = Path::new(tape);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            root.join(given)
        };
        // Lexically first: `..` may not climb out, whatever exists.
        let mut lexical = PathBuf::new();
        for c in joined.components() {
            match c {
                std::path::Component::CurDir => {}
                std::path::Component::ParentDir => {
                    if !lexical.pop() {
                        return Err(Root::outside(tape));
                    }
                }
                other => lexical.push(other),
            }
        }
        if !lexical.starts_with(root) {
            return Err(Root::outside(tape));
        }
        match std::fs::canonicalize(&lexical) {
            Ok(c) if c.starts_with(root) => Ok(c),
            Ok(_) => Err(Root::outside(tape)),
            Err(_) => {
                // Nothing resolves there: say "missing" only when the nearest existing
                // ancestor is inside the root and the leaf is not a dangling symlink.
                if std::fs::symlink_metadata(&lexical).is_ok() {
                    return Err(Root::outside(tape));
                }
                let inside = lexical
                    .ancestors()
                    .skip(1)
                    .find_map(|a| std::fs::canonicalize(a).ok())
                    .is_some_and(|a| a.starts_with(root));
                if inside {
                    Err(Box::new(CodedError::plain(
                        "IO",
                        format!("cannot read tape {tape}: no such file under the root"),
                    )))
                } else {
                    Err(Root::outside(tape))
                }
            }
        }
    }
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

/// Resolve a tape argument with the working directory as the root (see [`resolve_in`]).
pub fn resolve(tape: &str) -> Result<PathBuf, Box<CodedError>> {
    resolve_in(&Root::current(), tape)
}

/// Resolve a tape argument: a bundled short name (with or without `.jsonl`), or a path
/// confined to `root`.
pub fn resolve_in(root: &Root, tape: &str) -> Result<PathBuf, Box<CodedError>> {
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
        // Not bundled: an entry of that name under the root still counts as a path (a
        // directory or a FIFO is refused as one, not as an unknown tape; an entry that leads
        // out of the root is refused as a path is).
        match root.confine(tape) {
            Ok(p) if std::fs::metadata(&p).is_ok() => return readable_file(&p, tape),
            Err(e)
                if root
                    .dir()
                    .is_some_and(|d| std::fs::symlink_metadata(d.join(tape)).is_ok()) =>
            {
                return Err(e);
            }
            _ => {}
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
    let p = root.confine(tape)?;
    readable_file(&p, tape)
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
        // A directory under the root is not a tape; a device is outside the root.
        let e = resolve("./src").unwrap_err();
        assert_eq!(e.code, "IO");
        assert!(e.message.contains("not a regular file"), "{}", e.message);
        let e = resolve("/dev/zero").unwrap_err();
        assert_eq!(e.code, "IO");
        assert!(e.message.contains("not under the server's root"));
        assert_eq!(resolve("/").unwrap_err().code, "IO");
        assert_eq!(resolve("/no/such/file.jsonl").unwrap_err().code, "IO");
        assert_eq!(resolve("  ").unwrap_err().code, "USAGE");
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("kestrel-root-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("root/sub")).unwrap();
        std::fs::canonicalize(&d).unwrap()
    }

    #[cfg(unix)]
    #[test]
    fn paths_are_confined_to_the_root_and_refusals_do_not_reveal_what_exists() {
        let d = scratch("confine");
        let root_dir = d.join("root");
        std::fs::write(root_dir.join("sub/t.jsonl"), "x").unwrap();
        std::fs::write(
            d.join("secret.jsonl"),
            "{\"type\":\"header\",\"pw\":\"hunter2\"}",
        )
        .unwrap();
        std::os::unix::fs::symlink(d.join("secret.jsonl"), root_dir.join("out.jsonl")).unwrap();
        std::os::unix::fs::symlink(&d, root_dir.join("up")).unwrap();
        std::os::unix::fs::symlink(d.join("gone.jsonl"), root_dir.join("dangling.jsonl")).unwrap();
        let root = Root::new(&root_dir);
        assert!(root.confine("sub/t.jsonl").is_ok());
        assert!(root.confine("./sub/../sub/t.jsonl").is_ok());
        let secret = d.join("secret.jsonl").display().to_string();
        let missing = d.join("missing.jsonl").display().to_string();
        let refused = [
            "/etc/shadow",
            "../../../etc/shadow",
            "../secret.jsonl",
            "../missing.jsonl",
            secret.as_str(),
            missing.as_str(),
            "out.jsonl",
            "up/secret.jsonl",
            "up/missing.jsonl",
            "dangling.jsonl",
        ];
        let mut messages = Vec::new();
        for p in refused {
            let e = resolve_in(&root, p).unwrap_err();
            assert_eq!(e.code, "IO", "{p}");
            assert!(
                e.message.contains("not under the server's root"),
                "{p}: {}",
                e.message
            );
            assert!(!e.message.contains("hunter2"));
            messages.push(e.message.replace(p, "<path>"));
        }
        // One message for all of them, existing or not.
        messages.dedup();
        assert_eq!(messages.len(), 1, "{messages:?}");
        // Inside the root, a missing file is said to be missing.
        let e = resolve_in(&root, "sub/none.jsonl").unwrap_err();
        assert!(
            e.message.contains("no such file under the root"),
            "{}",
            e.message
        );
        // Bundled short names still resolve from anywhere.
        assert!(resolve_in(&root, "trend-2025-04-09-s1").is_ok());
        // A bare name that is a directory under the root is refused as what it is, as
        // `./sub` is; it is not an unknown tape.
        for p in ["sub", "./sub"] {
            let e = resolve_in(&root, p).unwrap_err();
            assert_eq!(e.code, "IO", "{p}");
            assert!(
                e.message.contains("not a regular file"),
                "{p}: {}",
                e.message
            );
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}
