//! `kestrel tape gen`: write seeded synthetic sessions (see `docs/tapes.md`).

use std::io::{self, IsTerminal};
use std::path::{Path, PathBuf};

use crate::market::{
    DEFAULT_DATE, Date, FamilyMember, Generator, Regime, generate_family, write_tape,
};

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
    /// Market regime of the session [default: trend]; with --count K, every session of the
    /// family (without it, a family cycles trend, range, shock).
    #[arg(long, value_enum)]
    pub regime: Option<RegimeArg>,
    /// RNG seed (with --count K, seeds N..N+K-1).
    #[arg(long, allow_negative_numbers = true, default_value_t = 1, value_parser = seed)]
    pub seed: u64,
    /// Session date, YYYY-MM-DD, a weekday [default: 2025-04-09]; with --count K, the first
    /// of K consecutive weekdays.
    #[arg(long)]
    pub date: Option<String>,
    /// Output file, or `-` for standard output; with --count > 1, a directory (created if
    /// missing; a name ending in .jsonl is refused). Required when standard output is a
    /// terminal.
    #[arg(short = 'o', long = "out")]
    pub out: Option<PathBuf>,
    /// Number of sessions: K > 1 writes a family into the -o directory, one file per session
    /// named `<regime>-<date>-s<seed>.jsonl`.
    #[arg(long, allow_negative_numbers = true, default_value_t = 1)]
    pub count: usize,
}

/// `--seed`: a whole number from 0 to 2^64 - 1, said so (before 2026-12-06 `-1` was Rust's
/// `invalid digit found in string`).
fn seed(s: &str) -> Result<u64, String> {
    s.trim().parse::<u64>().map_err(|_| {
        format!(
            "{s:?} is not a seed: a seed is a whole number from 0 to {}",
            u64::MAX
        )
    })
}

const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// The sessions `args` asks for, or the usage message: `--regime` and `--date` apply to
/// every member (a family's dates are consecutive weekdays from `--date`).
pub(crate) fn members(args: &TapeGenArgs) -> Result<Vec<FamilyMember>, String> {
    let date = match &args.date {
        None => DEFAULT_DATE,
        Some(d) => {
            Date::parse(d).ok_or_else(|| format!("--date {d:?} is not a valid YYYY-MM-DD date"))?
        }
    };
    let wd = date.weekday() as usize;
    if wd >= 5 {
        return Err(format!(
            "--date {date} is a {}: sessions are on weekdays (Monday to Friday); e.g. --date {}",
            WEEKDAYS[wd],
            date.next_weekday().unwrap_or(DEFAULT_DATE)
        ));
    }
    if args.count == 0 {
        return Err("--count must be at least 1".into());
    }
    // Seeds N..N+K-1, on consecutive weekdays: neither may wrap around.
    let last = u64::try_from(args.count - 1)
        .ok()
        .and_then(|k| args.seed.checked_add(k));
    if last.is_none() {
        return Err(format!(
            "--seed {} with --count {} runs past the largest seed ({}): seeds are N..N+count-1",
            args.seed,
            args.count,
            u64::MAX
        ));
    }
    // The dates first: a count past the weekdays left is refused before anything is made.
    let mut dates = Vec::new();
    let mut d = Some(date);
    while dates.len() < args.count {
        let day = d.ok_or_else(|| {
            format!(
                "--count {} from --date {date} runs past the last date a tape can have (9999-12-31)",
                args.count
            )
        })?;
        dates.push(day);
        d = day.next_weekday();
    }
    let mut family = generate_family(args.count, args.seed);
    for (m, day) in family.iter_mut().zip(dates) {
        if let Some(r) = args.regime {
            m.regime = r.into();
        }
        m.date = day;
    }
    Ok(family)
}

/// Where the sessions go.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Dest {
    /// Standard output (one session).
    Stdout,
    /// One file.
    File(PathBuf),
    /// A directory, one file per session.
    Dir(PathBuf),
}

/// Where `args` writes, or the usage message. `stdout_is_terminal`: a tape is megabytes of
/// JSON Lines, so it goes to a terminal only when asked for with `-o -`.
pub(crate) fn destination(args: &TapeGenArgs, stdout_is_terminal: bool) -> Result<Dest, String> {
    let dash = args.out.as_deref() == Some(Path::new("-"));
    if args.count > 1 {
        return match &args.out {
            None => Err("--count > 1 needs -o DIR (the family's directory)".into()),
            Some(_) if dash => {
                Err("--count > 1 writes one file per session: give -o DIR, not -o -".into())
            }
            Some(p) if p.extension().is_some_and(|e| e == "jsonl") => Err(format!(
                "with --count > 1, -o is a directory, and {} ends in .jsonl: give a directory, e.g. -o {}",
                p.display(),
                p.with_extension("").display()
            )),
            Some(p) if p.exists() && !p.is_dir() => Err(format!(
                "with --count > 1, -o is a directory, and {} is a file",
                p.display()
            )),
            Some(p) => Ok(Dest::Dir(p.clone())),
        };
    }
    match &args.out {
        Some(_) if dash => Ok(Dest::Stdout),
        Some(p) => Ok(Dest::File(p.clone())),
        None if stdout_is_terminal => Err(
            "standard output is a terminal and a tape is megabytes of JSON Lines: give -o FILE, or -o - to print it anyway"
                .into(),
        ),
        None => Ok(Dest::Stdout),
    }
}

/// Write a generated session to `path` atomically (`cli::out::Pending`: a temporary file
/// beside it, synced, renamed over the target; removed on failure; a device or a FIFO is
/// written into, never replaced). The error is the line to print; a caught SIGINT or
/// SIGTERM stops the write at the next 64 KiB as `code=INTERRUPTED`.
pub(crate) fn write_session(path: &Path, g: Generator) -> Result<(), String> {
    let (pending, f) = super::out::Pending::open(path)?;
    let mut w = io::BufWriter::with_capacity(1 << 16, super::out::Interruptible(f));
    let header = g.header().clone();
    let partial = pending.is_stream();
    let failed = |e: io::Error| match super::out::interrupted(&e) {
        Some(sig) => super::out::interrupted_line(sig, path, partial),
        None => super::cannot_write(path, &e),
    };
    write_tape(&mut w, &header, g).map_err(failed)?;
    let f = w.into_inner().map_err(|e| failed(e.into_error()))?;
    pending.sync(&f.0).map_err(failed)?;
    drop(f);
    pending.commit()
}

fn fail(msg: impl std::fmt::Display) -> i32 {
    errln!("error code=USAGE message={msg}");
    1
}

/// A write that failed: `code=IO`, the reason as the verbs word it (it was `code=USAGE`
/// with Rust's `(os error 2)`).
fn fail_io(path: &std::path::Path, e: &io::Error) -> i32 {
    errln!("{}", super::cannot_write(path, e));
    1
}

/// Run `kestrel tape gen`. Exit codes: 0 ok, 1 usage or I/O error.
pub fn tape_gen(args: &TapeGenArgs) -> i32 {
    tape_gen_to(args, io::stdout().is_terminal())
}

/// [`tape_gen`] with the terminal test given (tests).
pub(crate) fn tape_gen_to(args: &TapeGenArgs, stdout_is_terminal: bool) -> i32 {
    let family = match members(args) {
        Ok(f) => f,
        Err(e) => return fail(e),
    };
    let dest = match destination(args, stdout_is_terminal) {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    if !matches!(dest, Dest::Stdout) {
        // A file being written stops at a signal and is removed, not left half written.
        super::signals::install();
    }
    match dest {
        Dest::File(p) => match write_session(&p, family[0].generate()) {
            Ok(()) => 0,
            Err(line) => {
                errln!("{line}");
                1
            }
        },
        Dest::Stdout => {
            let g = family[0].generate();
            let header = g.header().clone();
            super::out::stdout_with(|mut w| write_tape(&mut w, &header, g))
        }
        Dest::Dir(dir) => {
            if let Err(line) = room_for(&dir, family.len()) {
                errln!("{line}");
                return 1;
            }
            if let Err(e) = std::fs::create_dir_all(&dir) {
                return fail_io(&dir, &e);
            }
            for m in family {
                let path = dir.join(m.file_name());
                if let Err(line) = write_session(&path, m.generate()) {
                    errln!("{line}");
                    return 1;
                }
                outln!("{}", path.display());
            }
            0
        }
    }
}

/// Bytes of one generated session, a little over the bundled tapes' (3.24 MB each): what
/// `--count K` is taken to need, K times over.
const SESSION_BYTES: u64 = 3_300_000;

/// Refuse a family that cannot fit: `--count K` sessions of [`SESSION_BYTES`] against the
/// space free on `dir`'s filesystem (its nearest existing ancestor's, before it is made).
/// Before 2026-12-06 `--count 100000` (about 330 GB) wrote 23 GB in ten minutes, on its way
/// to filling the disk. Where the free space cannot be read, nothing is refused.
fn room_for(dir: &Path, count: usize) -> Result<(), String> {
    let need = SESSION_BYTES.saturating_mul(count as u64);
    let Some(free) = free_bytes(dir) else {
        return Ok(());
    };
    if need <= free {
        return Ok(());
    }
    let gb = |b: u64| b as f64 / 1e9;
    Err(format!(
        "error code=IO message=--count {count} writes about {:.1} GB ({:.1} MB a session) and the filesystem of {} has {:.1} GB free: give a smaller --count (at most {}) or another -o",
        gb(need),
        SESSION_BYTES as f64 / 1e6,
        dir.display(),
        gb(free),
        free / SESSION_BYTES
    ))
}

/// Bytes free to an unprivileged writer on the filesystem holding `p` (or its nearest
/// existing ancestor).
#[cfg(unix)]
fn free_bytes(p: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let mut at = if p.as_os_str().is_empty() {
        Path::new(".")
    } else {
        p
    };
    while !at.exists() {
        at = match at.parent() {
            Some(q) if !q.as_os_str().is_empty() => q,
            _ => Path::new("."),
        };
    }
    let c = std::ffi::CString::new(at.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a NUL-terminated path; `st` is written by statvfs before it is read.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    // `u64` on Linux, narrower elsewhere (macOS's `fsblkcnt_t` is 32 bits).
    #[allow(clippy::useless_conversion)]
    let (blocks, size) = (u64::from(st.f_bavail), u64::from(st.f_frsize));
    Some(blocks.saturating_mul(size))
}

#[cfg(not(unix))]
fn free_bytes(_: &Path) -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A family larger than the disk is refused before a file is written, naming the count
    /// that fits; one that fits is not.
    #[test]
    fn a_family_that_cannot_fit_is_refused_before_anything_is_written() {
        let dir = std::env::temp_dir().join(format!("kestrel-room-{}", std::process::id()));
        let free = free_bytes(&dir).expect("statvfs of the temp dir");
        let too_many = usize::try_from(free / SESSION_BYTES + 1).unwrap();
        let e = room_for(&dir, too_many).unwrap_err();
        assert!(
            e.starts_with(&format!(
                "error code=IO message=--count {too_many} writes about "
            )) && e.contains(&format!("(at most {})", too_many - 1)),
            "{e}"
        );
        assert!(!dir.exists(), "nothing made");
        assert_eq!(room_for(&dir, 1), Ok(()));
    }

    fn gen_args(out: Option<PathBuf>, count: usize) -> TapeGenArgs {
        TapeGenArgs {
            regime: None,
            seed: 5,
            date: None,
            out,
            count,
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn writes_atomically_and_refuses_bad_dates() {
        let dir = std::env::temp_dir().join(format!("kestrel-tape-gen-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let args = gen_args(Some(dir.join("fam")), 2);
        assert_eq!(tape_gen_to(&args, false), 0);
        assert_eq!(
            names(&dir.join("fam")),
            ["range-2025-04-10-s6.jsonl", "trend-2025-04-09-s5.jsonl"]
        );
        let bad = TapeGenArgs {
            date: Some("2025-13-01".into()),
            ..args.clone()
        };
        assert_eq!(tape_gen_to(&bad, false), 1);
        let missing_dir = TapeGenArgs {
            out: Some(dir.join("no/such/dir/x.jsonl")),
            count: 1,
            ..args
        };
        assert_eq!(tape_gen_to(&missing_dir, false), 1);
        assert!(!dir.join("no").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_family_honours_regime_and_date() {
        let a = TapeGenArgs {
            regime: Some(RegimeArg::Shock),
            date: Some("2025-04-10".into()),
            ..gen_args(None, 3)
        };
        let m = members(&a).unwrap();
        let got: Vec<String> = m.iter().map(FamilyMember::file_name).collect();
        // Thursday, Friday, then Monday: weekends are skipped.
        assert_eq!(
            got,
            [
                "shock-2025-04-10-s5.jsonl",
                "shock-2025-04-11-s6.jsonl",
                "shock-2025-04-14-s7.jsonl"
            ]
        );
        let sat = TapeGenArgs {
            date: Some("2025-04-12".into()),
            ..gen_args(None, 1)
        };
        let e = members(&sat).unwrap_err();
        assert!(
            e.contains("is a Saturday") && e.contains("2025-04-14"),
            "{e}"
        );
        let sun = TapeGenArgs {
            date: Some("2025-04-13".into()),
            ..gen_args(None, 1)
        };
        assert!(members(&sun).unwrap_err().contains("Sunday"));
    }

    #[test]
    fn destinations() {
        let dash = Some(PathBuf::from("-"));
        assert_eq!(destination(&gen_args(None, 1), false), Ok(Dest::Stdout));
        assert!(destination(&gen_args(None, 1), true).is_err());
        assert_eq!(
            destination(&gen_args(dash.clone(), 1), true),
            Ok(Dest::Stdout)
        );
        let e = destination(&gen_args(Some("file.jsonl".into()), 2), false).unwrap_err();
        assert!(
            e.contains("-o is a directory") && e.contains("-o file"),
            "{e}"
        );
        assert!(destination(&gen_args(dash, 2), false).is_err());
        assert!(destination(&gen_args(None, 2), false).is_err());
        assert_eq!(
            destination(&gen_args(Some("fam".into()), 2), false),
            Ok(Dest::Dir("fam".into()))
        );
    }
}
