//! Output files written atomically: a temporary sibling (`.NAME.tmp-PID`), renamed over the
//! target only when everything was written; on any failure the temporary file is removed and
//! the target is left as it was.
//!
//! Rewriting an existing file keeps what it was: a **symlink** is written through (the
//! temporary file sits beside the link's final target, which is replaced; the link stays a
//! link), the target's **mode** is copied to the new file (0600 and 0400 stay so), and a
//! **read-only** file is refused (`PermissionDenied`), never rewritten behind its mode.
//! [`same_file`] lets a command refuse an output that names one of its inputs before anything
//! is written.
//!
//! An output that already exists and is **not a regular file** (`/dev/null`, `/dev/stdout`, a
//! FIFO, a terminal) is written into as the shell's `>` would, never replaced: a rename over
//! it would put a regular file where the device or the pipe was (as root, over the system's
//! own `/dev/null`). Nothing is atomic there, and nothing needs to be: there is no file to
//! leave half written. A directory is refused.
//!
//! [`Interruptible`] makes a long write (a generated family, an import) stop at SIGTERM or
//! SIGINT with an error, so the pending file is removed rather than left behind.

use std::io::Write;
use std::path::{Path, PathBuf};

/// A writer into a pending file.
pub(crate) type Sink = Box<dyn Write>;

/// The temporary sibling a file is written to before its rename.
pub(crate) fn temp_path(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "out".into());
    out.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// The temporary siblings of `target` (`.NAME.tmp-PID`) whose process is gone: a run killed
/// with `SIGKILL` (or by the kernel) cannot remove its own, and the file, hidden by its dot,
/// held what it had written with no word to say so. They are named, never removed: a killed
/// model run's Bus may be the only record of what it cost.
fn left_by_killed_runs(target: &Path) -> Vec<(PathBuf, u32)> {
    let Some(name) = target.file_name().map(|n| n.to_string_lossy().to_string()) else {
        return Vec::new();
    };
    let prefix = format!(".{name}.tmp-");
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut left: Vec<(PathBuf, u32)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            let pid: u32 = n.strip_prefix(&prefix)?.parse().ok()?;
            (pid != std::process::id() && !alive(pid)).then(|| (target.with_file_name(&n), pid))
        })
        .take(8)
        .collect();
    left.sort();
    left
}

/// Is process `pid` running (or not ours to signal, which is alive too)?
#[cfg(unix)]
fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 sends nothing; it only asks whether the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(not(unix))]
fn alive(_pid: u32) -> bool {
    true
}

/// Where a write to `out` lands.
#[derive(Debug)]
enum Landing {
    /// A regular file (new or replaced) at `target`, `out`'s final target when it is a
    /// symlink (followed), else itself; with the replaced file's permissions.
    Replace {
        target: PathBuf,
        perms: Option<std::fs::Permissions>,
    },
    /// An existing file that is not a regular one (a device, a FIFO, a terminal, a socket),
    /// written into through `out` as given (`/dev/stdout` is a link the kernel resolves).
    Into(PathBuf),
}

/// This process's standard output or error, when `out` names one of them (`/dev/stdout`,
/// `/dev/fd/1`, `/proc/self/fd/1`, and the same for 2): written through a copy of the
/// descriptor, so a redirect keeps its offset and its append mode (`>> log` is appended
/// to, never replaced by a rename nor written over from its start).
#[derive(Debug, Clone, Copy)]
enum StdStream {
    Out,
    Err,
}

impl StdStream {
    fn named(out: &Path) -> Option<StdStream> {
        match out.to_str()? {
            "/dev/stdout" | "/dev/fd/1" | "/proc/self/fd/1" => Some(StdStream::Out),
            "/dev/stderr" | "/dev/fd/2" | "/proc/self/fd/2" => Some(StdStream::Err),
            _ => None,
        }
    }

    /// A file over a copy of the stream's descriptor.
    #[cfg(unix)]
    fn open(self) -> std::io::Result<std::fs::File> {
        use std::os::fd::AsFd;
        let fd = match self {
            StdStream::Out => std::io::stdout().as_fd().try_clone_to_owned(),
            StdStream::Err => std::io::stderr().as_fd().try_clone_to_owned(),
        };
        fd.map(std::fs::File::from)
    }

    #[cfg(not(unix))]
    fn open(self) -> std::io::Result<std::fs::File> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "standard streams are written by name on Unix only",
        ))
    }
}

/// Where a write to `out` lands (see [`Landing`]). A read-only target and a directory are
/// refused.
fn landing(out: &Path) -> std::io::Result<Landing> {
    if StdStream::named(out).is_some() {
        return Ok(Landing::Into(out.to_path_buf()));
    }
    match std::fs::metadata(out) {
        Ok(m) if m.is_dir() => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::IsADirectory,
                "is a directory",
            ));
        }
        Ok(m) if !m.is_file() => return Ok(Landing::Into(out.to_path_buf())),
        _ => {}
    }
    let target = match std::fs::symlink_metadata(out) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(out).or_else(|_| {
            // A dangling link: write the file it names.
            std::fs::read_link(out).map(|t| match out.parent() {
                Some(dir) if t.is_relative() => dir.join(t),
                _ => t,
            })
        })?,
        _ => out.to_path_buf(),
    };
    match std::fs::metadata(&target) {
        Ok(m) if m.permissions().readonly() => Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "the file is read-only: not rewritten (make it writable first)",
        )),
        Ok(m) => Ok(Landing::Replace {
            target,
            perms: Some(m.permissions()),
        }),
        Err(_) => Ok(Landing::Replace {
            target,
            perms: None,
        }),
    }
}

/// Open an existing non-regular file for writing, as `>` would (it is not created, and a
/// device has nothing to truncate).
fn open_into(p: &Path) -> std::io::Result<std::fs::File> {
    match StdStream::named(p) {
        Some(s) => s.open(),
        None => std::fs::OpenOptions::new().write(true).open(p),
    }
}

/// What tells one existing file from another: its device and inode (through links, `..`,
/// hard links), else its canonical path; `None` for a path that names nothing.
fn existing_id(p: &Path) -> Option<(u64, u64, PathBuf)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let Ok(m) = std::fs::metadata(p) {
            return Some((m.dev(), m.ino(), PathBuf::new()));
        }
    }
    std::fs::canonicalize(p).ok().map(|c| (0, 0, c))
}

/// [`existing_id`], or the path as given for one that names nothing (to tell inputs apart).
pub(crate) fn file_id(p: &Path) -> (u64, u64, PathBuf) {
    existing_id(p).unwrap_or_else(|| (0, 0, p.to_path_buf()))
}

/// Do `a` and `b` name the same existing file (through links, `..`, or hard links)?
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    matches!((existing_id(a), existing_id(b)), (Some(x), Some(y)) if x == y)
}

/// A file being written to its temporary sibling. [`Pending::commit`] renames it into place;
/// dropped uncommitted (an early return on any error), the temporary file is removed. Into a
/// device or a FIFO, there is no temporary file and nothing to rename.
#[derive(Debug)]
pub(crate) struct Pending {
    /// The temporary sibling (`None`: written straight into a non-regular file).
    tmp: Option<PathBuf>,
    out: PathBuf,
    /// The replaced file's permissions, given to the new one.
    perms: Option<std::fs::Permissions>,
    done: bool,
}

impl Pending {
    /// Create the temporary sibling of `out`; the sink writes to it (buffered). The error is
    /// the line to print.
    pub(crate) fn create(out: &Path) -> Result<(Pending, Sink), String> {
        let (pending, f) = Self::open(out)?;
        Ok((pending, Box::new(std::io::BufWriter::new(f))))
    }

    /// [`create`](Self::create)'s pending file and the file to write (unbuffered).
    pub(crate) fn open(out: &Path) -> Result<(Pending, std::fs::File), String> {
        // Named by the file asked for, not the temporary one beside it, in the verbs' words.
        let landing = landing(out).map_err(|e| super::cannot_write(out, &e))?;
        match landing {
            Landing::Into(p) => {
                let f = open_into(&p).map_err(|e| super::cannot_write(out, &e))?;
                let pending = Pending {
                    tmp: None,
                    out: p,
                    perms: None,
                    done: false,
                };
                Ok((pending, f))
            }
            Landing::Replace { target, perms } => {
                let tmp = temp_path(&target);
                let f = std::fs::File::create(&tmp).map_err(|e| super::cannot_write(out, &e))?;
                for left in left_by_killed_runs(&target) {
                    errln!(
                        "note: {} was left by a run that was killed before it finished (process {} is gone): it holds what that run wrote of {}; rename it to keep it (a Bus cut short reads as far as it goes in kestrel errors report), or remove it",
                        left.0.display(),
                        left.1,
                        target.display()
                    );
                }
                let pending = Pending {
                    tmp: Some(tmp),
                    out: target,
                    perms,
                    done: false,
                };
                Ok((pending, f))
            }
        }
    }

    /// Is it written straight into a stream (a device, a FIFO, standard output), with no
    /// temporary file?
    pub(crate) fn is_stream(&self) -> bool {
        self.tmp.is_none()
    }

    /// Sync the temporary file `f` (written through [`open`](Self::open)) to disk before the
    /// rename; nothing to do for a device or a FIFO.
    pub(crate) fn sync(&self, f: &std::fs::File) -> std::io::Result<()> {
        match self.tmp {
            Some(_) => f.sync_all(),
            None => Ok(()),
        }
    }

    /// Rename the written file into place (flush and drop its sink first). The error is the
    /// line to print; the temporary file is removed.
    pub(crate) fn commit(mut self) -> Result<(), String> {
        let Some(tmp) = self.tmp.clone() else {
            self.done = true;
            return Ok(());
        };
        if let Some(p) = self.perms.clone() {
            std::fs::set_permissions(&tmp, p).map_err(|e| {
                format!(
                    "error code=IO message=cannot keep the mode of {}: {e}",
                    self.out.display()
                )
            })?;
        }
        std::fs::rename(&tmp, &self.out).map_err(|e| super::cannot_write(&self.out, &e))?;
        self.done = true;
        Ok(())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let (false, Some(tmp)) = (self.done, &self.tmp) {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// A writer that fails once SIGTERM or SIGINT was caught ([`signals::install`](crate::signals::install)
/// first), so a long write ends as an error: its [`Pending`] file is removed, and the verb
/// prints [`interrupted`]. Put it under the buffer: it checks at each buffer's flush.
pub(crate) struct Interruptible<W>(pub W);

impl<W: Write> Write for Interruptible<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.check()?;
        self.0.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.check()?;
        self.0.flush()
    }
}

impl<W> Interruptible<W> {
    fn check(&self) -> std::io::Result<()> {
        match crate::signals::caught() {
            // Not `ErrorKind::Interrupted`: `write_all` retries that one.
            Some(sig) => Err(std::io::Error::other(Caught(sig))),
            None => Ok(()),
        }
    }
}

/// The error an [`Interruptible`] writer fails with: the signal's name.
#[derive(Debug)]
struct Caught(&'static str);

impl std::fmt::Display for Caught {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "interrupted by {}", self.0)
    }
}

impl std::error::Error for Caught {}

/// The signal an error from an [`Interruptible`] writer names, if it is one.
pub(crate) fn interrupted(e: &std::io::Error) -> Option<&'static str> {
    e.get_ref()
        .and_then(|x| x.downcast_ref::<Caught>())
        .map(|c| c.0)
}

/// The line for a write that a signal stopped. `partial`: it went straight into a stream
/// (standard output, a FIFO, a device), which got what was written before the signal;
/// otherwise nothing was written in place.
pub(crate) fn interrupted_line(sig: &str, out: &Path, partial: bool) -> String {
    if partial {
        format!(
            "error code=INTERRUPTED message={sig}: {} got only part of the tape",
            out.display()
        )
    } else {
        format!(
            "error code=INTERRUPTED message={sig}: {} was not written (its temporary file is removed)",
            out.display()
        )
    }
}

/// The Bus sink for an optional `--bus OUT`: the pending file and its writer, or neither.
pub(crate) fn bus_sink(out: Option<&Path>) -> Result<(Option<Pending>, Option<Sink>), String> {
    match out {
        None => Ok((None, None)),
        Some(o) => Pending::create(o).map(|(p, w)| (Some(p), Some(w))),
    }
}

/// Commit an optional pending file.
pub(crate) fn commit(pending: Option<Pending>) -> Result<(), String> {
    pending.map_or(Ok(()), Pending::commit)
}

/// Write a whole file atomically: the temporary sibling is written, synced and renamed over
/// the target; on failure it is removed. A symlink is written through, the mode kept, a
/// read-only file refused, and a device or a FIFO written into (see the module notes).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let (target, perms) = match landing(path)? {
        Landing::Into(p) => return open_into(&p).and_then(|mut f| f.write_all(bytes)),
        Landing::Replace { target, perms } => (target, perms),
    };
    let tmp = temp_path(&target);
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        if let Some(p) = perms {
            f.set_permissions(p)?;
        }
        f.sync_all()
    });
    written
        .and_then(|()| std::fs::rename(&tmp, &target))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
}

/// Write a verb's product (a document, a report) to stdout and flush. A reader that has gone
/// (`EPIPE`: `kestrel … | head`) is not an error: the rest is dropped and this returns 0. Any
/// other failure (a full disk behind `> file`) prints a coded error and returns 1.
pub(crate) fn stdout(text: &str) -> i32 {
    stdout_with(|o| o.write_all(text.as_bytes()))
}

/// [`stdout`] of what `write` writes, as it writes it (through a buffer): the same exit
/// code and error line, without the whole text in memory first.
pub(crate) fn stdout_with(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> i32 {
    let mut o = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    match write(&mut o).and_then(|()| o.flush()) {
        Ok(()) => 0,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            errln!(
                "error code=IO message=cannot write to standard output: {}",
                super::io_reason(&e)
            );
            1
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("kestrel-out-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn rewrites_keep_the_mode_write_through_symlinks_and_refuse_read_only_files() {
        let d = dir("keep");
        let f = d.join("a.txt");
        std::fs::write(&f, "old").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_atomic(&f, b"new").unwrap();
        assert_eq!(
            (std::fs::read_to_string(&f).unwrap().as_str(), mode(&f)),
            ("new", 0o600)
        );
        // Through a symlink: the target is replaced, the link stays.
        let link = d.join("link.txt");
        std::os::unix::fs::symlink("a.txt", &link).unwrap();
        write_atomic(&link, b"via link").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "via link");
        assert_eq!(mode(&f), 0o600);
        // Read-only: refused, untouched.
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o400)).unwrap();
        let e = write_atomic(&f, b"nope").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "via link");
        assert_eq!(mode(&f), 0o400);
        // The Bus path too.
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
        let (p, mut w) = Pending::create(&link).unwrap();
        w.write_all(b"bus").unwrap();
        drop(w);
        p.commit().unwrap();
        assert_eq!(
            (std::fs::read_to_string(&f).unwrap().as_str(), mode(&f)),
            ("bus", 0o640)
        );
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // No temporary file is left.
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(same_file(&link, &f) && !same_file(&d, &f));
        let _ = std::fs::remove_dir_all(&d);
    }
}
