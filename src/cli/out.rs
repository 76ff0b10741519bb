//! Output files written atomically: a temporary sibling (`.NAME.tmp-PID`), renamed over the
//! target only when everything was written; on any failure the temporary file is removed and
//! the target is left as it was.

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

/// A file being written to its temporary sibling. [`Pending::commit`] renames it into place;
/// dropped uncommitted (an early return on any error), the temporary file is removed.
#[derive(Debug)]
pub(crate) struct Pending {
    tmp: PathBuf,
    out: PathBuf,
    done: bool,
}

impl Pending {
    /// Create the temporary sibling of `out`; the sink writes to it (buffered). The error is
    /// the line to print.
    pub(crate) fn create(out: &Path) -> Result<(Pending, Sink), String> {
        let tmp = temp_path(out);
        let f = std::fs::File::create(&tmp)
            .map_err(|e| format!("error code=IO message=cannot create {}: {e}", tmp.display()))?;
        let pending = Pending {
            tmp,
            out: out.to_path_buf(),
            done: false,
        };
        Ok((pending, Box::new(std::io::BufWriter::new(f))))
    }

    /// Rename the written file into place (flush and drop its sink first). The error is the
    /// line to print; the temporary file is removed.
    pub(crate) fn commit(mut self) -> Result<(), String> {
        std::fs::rename(&self.tmp, &self.out).map_err(|e| {
            format!(
                "error code=IO message=cannot write {}: {e}",
                self.out.display()
            )
        })?;
        self.done = true;
        Ok(())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.tmp);
        }
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
/// the target; on failure it is removed.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = temp_path(path);
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    written
        .and_then(|()| std::fs::rename(&tmp, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
}

/// Write a verb's product (a document, a report) to stdout and flush. A reader that has gone
/// (`EPIPE`: `kestrel … | head`) is not an error: the rest is dropped and this returns 0. Any
/// other failure (a full disk behind `> file`) prints a coded error and returns 1.
pub(crate) fn stdout(text: &str) -> i32 {
    let mut o = std::io::stdout().lock();
    match o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        Ok(()) => 0,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            errln!("error code=IO message=cannot write to standard output: {e}");
            1
        }
    }
}
