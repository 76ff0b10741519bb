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
    /// from a server's answer pass through this).
    pub fn redact(&self, text: &str) -> String {
        if self.0.is_empty() {
            text.to_string()
        } else {
            text.replace(&self.0, "[redacted]")
        }
    }
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
    let text = std::fs::read_to_string(&path)
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
