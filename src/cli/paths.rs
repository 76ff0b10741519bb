//! `kestrel paths`: the directories the desk reads and writes, so a user can find
//! `keys.toml`, add a theme, or open a saved session. The directories are the desk's own
//! (`crate::session::saved::config_dir` / `sessions_dir`, from the platform's conventions via
//! the `directories` crate); this verb only prints them.

use std::path::PathBuf;

/// Arguments of `kestrel paths`.
#[derive(Debug, clap::Args)]
pub struct PathsArgs {
    #[command(flatten)]
    pub out: super::flags::Json,
}

/// One directory: what it is for and where it is (`None`: no home directory to put it in).
struct Dir {
    key: &'static str,
    what: &'static str,
    path: Option<PathBuf>,
}

fn dirs() -> [Dir; 2] {
    [
        Dir {
            key: "config",
            what: "config directory (keys.toml, desk.toml, themes/<name>.toml)",
            path: crate::session::saved::config_dir(),
        },
        Dir {
            key: "sessions",
            what: "saved desk sessions (kestrel desk --open FILE)",
            path: crate::session::saved::sessions_dir(),
        },
    ]
}

fn shown(p: &Option<PathBuf>) -> String {
    p.as_ref().map_or_else(
        || "(none: no home directory)".to_string(),
        |p| p.display().to_string(),
    )
}

/// The lines `kestrel --help` ends with.
pub(crate) fn summary() -> String {
    let mut s = String::from("Paths (kestrel paths):");
    for d in dirs() {
        s.push_str(&format!(
            "\n  {:<9} {}  — {}",
            d.key,
            shown(&d.path),
            d.what
        ));
    }
    s
}

/// Print the directories; exit 0.
pub fn run(a: &PathsArgs) -> i32 {
    if a.out.json {
        let mut m = serde_json::Map::new();
        for d in dirs() {
            let v = d.path.map_or(serde_json::Value::Null, |p| {
                serde_json::Value::String(p.display().to_string())
            });
            m.insert(d.key.to_string(), v);
        }
        outln!(
            "{}",
            crate::bus::canonical_json(&serde_json::Value::Object(m))
        );
    } else {
        for d in dirs() {
            outln!("{:<9} {}", d.key, shown(&d.path));
        }
    }
    super::flags::EXIT_OK
}
