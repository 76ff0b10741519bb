//! `kestrel tape gen`: write seeded synthetic sessions (see `docs/tapes.md`).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::market::{DEFAULT_DATE, Date, Generator, Regime, generate, generate_family, write_tape};

/// The regime argument of `tape gen`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RegimeArg {
    /// Drift with momentum.
    Trend,
    /// Mean reversion inside a band.
    Range,
    /// Calm, then a selloff at a seeded time.
    Shock,
}

impl From<RegimeArg> for Regime {
    fn from(r: RegimeArg) -> Regime {
        match r {
            RegimeArg::Trend => Regime::Trend,
            RegimeArg::Range => Regime::Range,
            RegimeArg::Shock => Regime::Shock,
        }
    }
}

/// Arguments of `kestrel tape gen`.
#[derive(Clone, Debug, clap::Args)]
pub struct TapeGenArgs {
    /// Market regime of the session (ignored with --count > 1, which cycles regimes).
    #[arg(long, value_enum, default_value = "trend")]
    pub regime: RegimeArg,
    /// RNG seed (with --count K, seeds N..N+K-1).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Session date, YYYY-MM-DD (with --count K, consecutive weekdays from 2025-04-09).
    #[arg(long, default_value = "2025-04-09")]
    pub date: String,
    /// Output file (a directory with --count > 1); standard output when absent and K = 1.
    #[arg(short = 'o', long = "out")]
    pub out: Option<PathBuf>,
    /// Number of sessions: K > 1 writes a family (regimes cycled) into the -o directory.
    #[arg(long, default_value_t = 1)]
    pub count: usize,
}

/// Write a generated session to `path` atomically: a temporary file in the same directory,
/// flushed and synced, then renamed over the target. On failure the temporary is removed.
pub fn write_atomic(path: &Path, g: Generator) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "output path has no file name")
        })?;
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let result = (|| {
        let f = std::fs::File::create(&tmp)?;
        let mut w = io::BufWriter::new(f);
        let header = g.header().clone();
        write_tape(&mut w, &header, g)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn fail(msg: impl std::fmt::Display) -> i32 {
    eprintln!("error code=USAGE message={msg}");
    1
}

/// Run `kestrel tape gen`. Exit codes: 0 ok, 1 usage or I/O error.
pub fn tape_gen(args: &TapeGenArgs) -> i32 {
    let Some(date) = Date::parse(&args.date) else {
        return fail(format!(
            "--date {:?} is not a valid YYYY-MM-DD date",
            args.date
        ));
    };
    match args.count {
        0 => fail("--count must be at least 1"),
        1 => {
            let g = generate(args.regime.into(), args.seed, date);
            match &args.out {
                Some(p) => match write_atomic(p, g) {
                    Ok(()) => 0,
                    Err(e) => fail(format!("cannot write {}: {e}", p.display())),
                },
                None => {
                    let header = g.header().clone();
                    let stdout = io::stdout();
                    let mut w = io::BufWriter::new(stdout.lock());
                    match write_tape(&mut w, &header, g).and_then(|()| w.flush()) {
                        Ok(()) => 0,
                        Err(e) => fail(format!("cannot write to standard output: {e}")),
                    }
                }
            }
        }
        k => {
            let Some(dir) = &args.out else {
                return fail("--count > 1 needs -o DIR");
            };
            if date != DEFAULT_DATE {
                eprintln!(
                    "note: --date is ignored with --count > 1 (families start at {DEFAULT_DATE})"
                );
            }
            if let Err(e) = std::fs::create_dir_all(dir) {
                return fail(format!("cannot create {}: {e}", dir.display()));
            }
            for m in generate_family(k, args.seed) {
                let path = dir.join(m.file_name());
                if let Err(e) = write_atomic(&path, m.generate()) {
                    return fail(format!("cannot write {}: {e}", path.display()));
                }
                outln!("{}", path.display());
            }
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_atomically_and_refuses_bad_dates() {
        let dir = std::env::temp_dir().join(format!("kestrel-tape-gen-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let args = TapeGenArgs {
            regime: RegimeArg::Range,
            seed: 5,
            date: "2025-04-09".into(),
            out: Some(dir.join("fam")),
            count: 2,
        };
        assert_eq!(tape_gen(&args), 0);
        let mut names: Vec<String> = std::fs::read_dir(dir.join("fam"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["range-2025-04-10-s6.jsonl", "trend-2025-04-09-s5.jsonl"]
        );
        let bad = TapeGenArgs {
            date: "2025-13-01".into(),
            ..args.clone()
        };
        assert_eq!(tape_gen(&bad), 1);
        let missing_dir = TapeGenArgs {
            out: Some(dir.join("no/such/dir/x.jsonl")),
            count: 1,
            ..args
        };
        assert_eq!(tape_gen(&missing_dir), 1);
        assert!(!dir.join("no").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
