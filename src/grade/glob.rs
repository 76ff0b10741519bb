//! A small path glob for tape selection (`tapes/range-*`): `*` (any run of characters within
//! one path component), `?` (one character) and `[abc]` / `[a-z]` / `[!a-z]` classes, in any
//! component. No `**`, no braces. Names starting with `.` match only a pattern component
//! starting with `.`. Results are regular files, sorted by path.

use std::io;
use std::path::{Path, PathBuf};

fn has_magic(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// Whether `name` matches the one-component pattern `pat`.
pub fn matches(pat: &str, name: &str) -> bool {
    let p: Vec<char> = pat.chars().collect();
    let n: Vec<char> = name.chars().collect();
    if n.first() == Some(&'.') && p.first() != Some(&'.') {
        return false;
    }
    match_at(&p, &n)
}

fn match_at(p: &[char], n: &[char]) -> bool {
    match p.first() {
        None => n.is_empty(),
        Some('*') => (0..=n.len()).any(|k| match_at(&p[1..], &n[k..])),
        Some('?') => !n.is_empty() && match_at(&p[1..], &n[1..]),
        Some('[') => {
            let Some(c) = n.first() else { return false };
            match class(&p[1..], *c) {
                Some((ok, used)) => ok && match_at(&p[1 + used..], &n[1..]),
                // An unclosed `[` is a literal.
                None => *c == '[' && match_at(&p[1..], &n[1..]),
            }
        }
        Some(x) => n.first() == Some(x) && match_at(&p[1..], &n[1..]),
    }
}

/// Match `c` against a class body starting after `[`; returns (matched, chars consumed
/// including the closing `]`).
fn class(p: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 0;
    let neg = matches!(p.first(), Some('!') | Some('^'));
    if neg {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    while i < p.len() {
        if p[i] == ']' && !first {
            return Some((hit != neg, i + 1));
        }
        first = false;
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            if p[i] <= c && c <= p[i + 2] {
                hit = true;
            }
            i += 3;
        } else {
            if p[i] == c {
                hit = true;
            }
            i += 1;
        }
    }
    None
}

/// Expand a glob into the regular files it names, sorted. A pattern without wildcards names
/// one file (if it exists). A directory in the pattern that cannot be read is an error only
/// when it was named literally.
pub fn expand(pattern: &str) -> io::Result<Vec<PathBuf>> {
    let absolute = pattern.starts_with('/');
    let parts: Vec<&str> = pattern
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    let mut cur: Vec<PathBuf> = vec![if absolute {
        PathBuf::from("/")
    } else {
        PathBuf::from(".")
    }];
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let mut next = Vec::new();
        for dir in &cur {
            if has_magic(part) {
                let rd = match std::fs::read_dir(dir) {
                    Ok(rd) => rd,
                    Err(_) => continue,
                };
                for e in rd {
                    let e = e?;
                    let name = e.file_name().to_string_lossy().into_owned();
                    if matches(part, &name) {
                        next.push(dir.join(&name));
                    }
                }
            } else {
                next.push(dir.join(part));
            }
        }
        if !last {
            next.retain(|p| p.is_dir());
        }
        cur = next;
    }
    let mut files: Vec<PathBuf> = cur
        .into_iter()
        .filter(|p| p.is_file())
        .map(|p| clean(&p, absolute))
        .collect();
    files.sort();
    files.dedup();
    Ok(files)
}

/// Drop the leading `./` added for relative patterns.
fn clean(p: &Path, absolute: bool) -> PathBuf {
    if absolute {
        return p.to_path_buf();
    }
    p.strip_prefix(".")
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn component_matching() {
        assert!(matches("range-*", "range-2025-04-09-s2.jsonl"));
        assert!(!matches("range-*", "trend-2025-04-09-s1.jsonl"));
        assert!(matches("*.jsonl", "a.jsonl"));
        assert!(!matches("*.jsonl", ".hidden.jsonl"));
        assert!(matches(".*", ".hidden"));
        assert!(matches("s?", "s1"));
        assert!(!matches("s?", "s12"));
        assert!(matches("[rt]*", "trend"));
        assert!(!matches("[!rt]*", "trend"));
        assert!(matches("[a-c]x", "bx"));
        assert!(matches("a[", "a["));
        assert!(matches("*", ""));
    }

    #[test]
    fn expands_relative_and_absolute_patterns() {
        let d = std::env::temp_dir().join(format!("kestrel-glob-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("sub")).unwrap();
        for f in ["b-1.jsonl", "a-1.jsonl", "a-2.txt", ".a-3.jsonl"] {
            std::fs::write(d.join("sub").join(f), "x").unwrap();
        }
        let pat = format!("{}/sub/a-*", d.display());
        let got = expand(&pat).unwrap();
        assert_eq!(
            got,
            vec![d.join("sub/a-1.jsonl"), d.join("sub/a-2.txt")],
            "{got:?}"
        );
        let pat = format!("{}/s*/*.jsonl", d.display());
        assert_eq!(expand(&pat).unwrap().len(), 2);
        assert!(
            expand(&format!("{}/nope/*", d.display()))
                .unwrap()
                .is_empty()
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
