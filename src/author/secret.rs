//! The API key: from an environment variable or from a file in the config directory that
//! only its owner can read. The key lives in [`ApiKey`], whose `Debug` and `Display` print
//! `[redacted]`; nothing in the project prints, logs, shows or writes it anywhere but the
//! `Authorization` header and the owner-only key file.

use std::path::{Path, PathBuf};

/// The default environment variable, then the conventional fallback.
pub const DEFAULT_ENV: &str = "KESTREL_API_KEY";
pub const FALLBACK_ENV: &str = "OPENAI_API_KEY";
/// The key file's name inside the config directory.
pub const KEY_FILE: &str = "api-key";

/// A secret API key.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wrap a key (surrounding whitespace, such as a file's final newline, is dropped).
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into().trim().to_string())
    }

    /// The key itself, for the `Authorization` header only.
    pub fn expose_secret(&self) -> &str {
        &self.0
    }

    /// Replace every occurrence of the key in `text` with `[redacted]` (error messages built
    /// from a server's answer, and a command author's stderr, pass through this): the key
    /// anywhere inside longer text, and also its encoded forms a server or a program may echo
    /// — percent-encoded (upper or lower hex, `+` for a space), JSON-escaped, base64 — and a
    /// prefix of it (at least [`MIN_REDACTED_PREFIX`] characters) cut off by the end of the text
    /// or an excerpt's `…`.
    pub fn redact(&self, text: &str) -> String {
        redact_all(text, std::slice::from_ref(self))
    }
}

/// The shortest cut-off prefix of a key that is still redacted.
pub const MIN_REDACTED_PREFIX: usize = 8;

/// The literal forms of `secret` replaced anywhere in a text (besides the percent-encoded
/// ones, which [`replace_encoded`] matches byte by byte): the key, JSON-escaped, base64.
fn forms(secret: &str) -> Vec<String> {
    let json = serde_json::to_string(secret).unwrap_or_default();
    let json = json
        .strip_prefix('"')
        .and_then(|j| j.strip_suffix('"'))
        .unwrap_or("")
        .to_string();
    let mut out = vec![secret.to_string(), json, base64(secret.as_bytes())];
    out.retain(|f| !f.is_empty());
    // Longest first, so a longer form is not broken by a shorter one inside it.
    out.sort_by_key(|f| std::cmp::Reverse(f.len()));
    out.dedup();
    out
}

/// Replace every run of `text` that spells `secret` with any of its bytes percent-encoded
/// (`%2F` or `%2f`, even bytes that need no encoding) or a space as `+`.
fn replace_encoded(text: &str, secret: &str) -> String {
    let t = text.as_bytes();
    let k = secret.as_bytes();
    let hex = |a: u8, b: u8| {
        let d = |c: u8| (c as char).to_digit(16);
        Some((d(a)? * 16 + d(b)?) as u8)
    };
    // The end of a match of `k` starting at `i`, if any.
    let matches_at = |i: usize| {
        let mut j = i;
        for &b in k {
            if t.get(j) == Some(&b) {
                j += 1;
            } else if t.get(j) == Some(&b'%')
                && t.len() >= j + 3
                && hex(t[j + 1], t[j + 2]) == Some(b)
            {
                j += 3;
            } else if b == b' ' && t.get(j) == Some(&b'+') {
                j += 1;
            } else {
                return None;
            }
        }
        Some(j)
    };
    let mut out = Vec::with_capacity(t.len());
    let mut i = 0;
    while i < t.len() {
        match matches_at(i) {
            Some(j) if j > i => {
                out.extend_from_slice(b"[redacted]");
                i = j;
            }
            _ => {
                out.push(t[i]);
                i += 1;
            }
        }
    }
    // Only whole matches of ASCII-or-UTF-8 runs were replaced, at byte boundaries where the
    // key starts and ends; the rest is copied byte for byte.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Standard base64 with padding (a server may echo a Basic or encoded credential).
fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Redact every key of `keys` (see [`ApiKey::redact`]) in `text`.
pub fn redact_all(text: &str, keys: &[ApiKey]) -> String {
    let mut out = text.to_string();
    for k in keys.iter().filter(|k| !k.0.is_empty()) {
        for f in forms(&k.0) {
            out = out.replace(&f, "[redacted]");
        }
        out = replace_encoded(&out, &k.0);
        // A prefix cut off by an excerpt (`…`) or by the end of the text.
        let chars: Vec<char> = k.0.chars().collect();
        for n in (MIN_REDACTED_PREFIX..chars.len()).rev() {
            let prefix: String = chars[..n].iter().collect();
            out = out.replace(&format!("{prefix}…"), "[redacted]…");
            if let Some(head) = out.strip_suffix(prefix.as_str()) {
                out = format!("{head}[redacted]");
            }
        }
    }
    out
}

/// The keys a program could be handed through its environment or find in the key file:
/// the values of [`DEFAULT_ENV`] and [`FALLBACK_ENV`] and the key file's content, for
/// redacting what it writes. Unreadable sources are skipped.
pub fn known_keys() -> Vec<ApiKey> {
    let mut keys: Vec<ApiKey> = [DEFAULT_ENV, FALLBACK_ENV]
        .iter()
        .filter_map(|n| std::env::var(n).ok())
        .map(ApiKey::new)
        .filter(|k| !k.0.is_empty())
        .collect();
    if let Ok(Some(k)) = load_api_key_with(|_| None, None, None) {
        keys.push(k);
    }
    keys.dedup();
    keys
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

impl std::fmt::Display for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

/// The project's config directory (`ProjectDirs::from("", "", "kestrel")`).
pub fn config_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "kestrel").map(|d| d.config_dir().to_path_buf())
}

/// Find the key: the named environment variable (default [`DEFAULT_ENV`]), then
/// [`FALLBACK_ENV`], then the key file in `dir` (default [`config_dir`]). `Ok(None)` when
/// there is none; an error when the key file exists but is unreadable or readable by others.
pub fn load_api_key(env_name: Option<&str>, dir: Option<&Path>) -> Result<Option<ApiKey>, String> {
    load_api_key_with(|k| std::env::var(k).ok(), env_name, dir)
}

/// [`load_api_key`] with the environment given as a function (tests).
pub fn load_api_key_with(
    env: impl Fn(&str) -> Option<String>,
    env_name: Option<&str>,
    dir: Option<&Path>,
) -> Result<Option<ApiKey>, String> {
    for name in [env_name.unwrap_or(DEFAULT_ENV), FALLBACK_ENV] {
        if let Some(v) = env(name).filter(|v| !v.trim().is_empty()) {
            return Ok(Some(ApiKey::new(v)));
        }
    }
    let dir = match dir.map(Path::to_path_buf).or_else(config_dir) {
        Some(d) => d,
        None => return Ok(None),
    };
    let path = dir.join(KEY_FILE);
    if !path.exists() {
        return Ok(None);
    }
    check_owner_only(&path)?;
    let text = crate::limits::read_text_bounded(&path, crate::limits::MAX_SMALL_FILE_BYTES)
        .map_err(|e| format!("cannot read the key file {}: {e}", path.display()))?;
    let key = ApiKey::new(text);
    Ok(if key.0.is_empty() { None } else { Some(key) })
}

#[cfg(unix)]
fn check_owner_only(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(|e| format!("cannot stat {}: {e}", path.display()))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(format!(
            "the key file {} is readable by others (mode {:o}): run `chmod 600` on it",
            path.display(),
            mode & 0o777
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_owner_only(_path: &Path) -> Result<(), String> {
    Ok(())
}

/// Write the key file in `dir` (default [`config_dir`]) with owner-only permissions (0600,
/// the directory 0700), replacing any previous key. Returns the file's path.
pub fn store_api_key(key: &ApiKey, dir: Option<&Path>) -> Result<PathBuf, String> {
    let dir = dir
        .map(Path::to_path_buf)
        .or_else(config_dir)
        .ok_or("no config directory on this system")?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join(KEY_FILE);
    write_owner_only(&dir, &path, key.expose_secret())?;
    Ok(path)
}

#[cfg(unix)]
fn write_owner_only(dir: &Path, path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    // Remove first so an old file with wider permissions is not reused.
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("cannot restrict {}: {e}", path.display()))?;
    f.write_all(text.as_bytes())
        .and_then(|_| f.write_all(b"\n"))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(not(unix))]
fn write_owner_only(_dir: &Path, path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, format!("{text}\n"))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}
