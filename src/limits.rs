//! Resource limits: every bound the desk enforces on untrusted input, in one place.
//!
//! A limit is not grammar (the exported grammar never mentions one): it is how much work the
//! desk agrees to do for one input. Each limit is checked *before* the work it bounds, and a
//! refusal is a coded error like any other (docs/limits.md lists each limit, its error and
//! the test that shows it).
//!
//! The values are generous for real use and small enough that the worst input of each kind
//! costs well under a second:
//!
//! | limit | value | why this value |
//! | --- | --- | --- |
//! | [`MAX_NESTING`] | 64 | real triggers nest 2–4 deep; every recursive walk of the model (check, print, engine) stays far inside a 2 MiB thread stack |
//! | [`MAX_DOCUMENT_BYTES`] | 8 MiB | the largest `.kestrel` file or Bus-embedded document; ~80,000 plan lines |
//! | [`MAX_STATEMENTS`] | 1,000 | statements (PLAN, VIEW, WAKE, ...) per document: a real book holds tens |
//! | [`MAX_REPLY_BYTES`] | 256 KiB | one author reply: a turn is a few KiB; 256 KiB is ~64,000 tokens |
//! | [`MAX_METERED_RUN`] | 64 KiB | the token meter reads a line (a run without `\n`) longer than this in chunks of this size |
//! | [`KEPT_REPLY_BYTES`] | 4 KiB | what is kept of a refused oversized reply (Bus record, re-ask quote) |
//! | [`MAX_GRAMMAR_FREE_TEXT`] | 4,096 | `kestrel grammar` / MCP `grammar`'s `free_text_max`: servers expand a bounded repetition into that many rules, so `{0,4294967295}` would take the server receiving it down; a comment of 4,096 characters is already rambling (the default is 160) |
//! | [`MAX_GRAMMAR_RUN`] | 1,024 | `run_max` likewise (the default is 32) |
//! | [`MAX_RESPONSE_BYTES`] | 8 MiB | one HTTP response body, or one line or event of a stream, from a model server: a turn's JSON is at most ~1.5 MiB (256 KiB, every byte escaped) |
//! | [`MAX_RECORDING_BYTES`] | 64 MiB | one saved Bus, desk session file or script of author replies read whole ([`read_bounded`]): a day's Bus is ~100 KiB–a few MiB (a reply is at most 256 KiB); a person's 8 MiB book armed several times still fits |
//! | [`MAX_TAPE_BYTES`] | 1 GiB | a tape read whole (the desk, `kestrel grade`); `run` and `agent` stream a tape line by line instead. A bundled day is ~3 MiB |
//! | [`MAX_SMALL_FILE_BYTES`] | 1 MiB | a config file (`desk.toml`, a theme, an API key file) |
//! | [`MAX_TIMEOUT_SECS`] | 86,400 s | `--timeout` / `--first-token-timeout`: a session is one day, as every duration in the language; `--timeout 18446744073709551615` overflowed the clock and panicked |

/// How deep groups `( )`, `NOT` and price calls `lean( min( max(` may nest in one line.
pub const MAX_NESTING: u32 = 64;

/// The largest document the parser reads, in bytes.
pub const MAX_DOCUMENT_BYTES: usize = 8 * 1024 * 1024;

/// The most statements one document may hold.
pub const MAX_STATEMENTS: usize = 1_000;

/// The largest reply an author may send for one turn, in bytes.
pub const MAX_REPLY_BYTES: usize = 256 * 1024;

/// The token meter's longest exactly-metered run: a line longer than this is metered in
/// chunks of this many bytes (BPE on one long word costs far more than on words).
pub const MAX_METERED_RUN: usize = 64 * 1024;

/// How much of an oversized reply is kept (on the Bus and in the re-ask).
pub const KEPT_REPLY_BYTES: usize = 4 * 1024;

/// The largest `free_text_max` an exported grammar takes (characters of one free text).
pub const MAX_GRAMMAR_FREE_TEXT: u32 = 4096;

/// The largest `run_max` an exported grammar takes (one run of spaces, digits or name
/// characters, or repeated list items).
pub const MAX_GRAMMAR_RUN: u32 = 1024;

/// The largest HTTP response body, or line or event of a stream, read from a model server.
pub const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

/// The longest `--timeout` or `--first-token-timeout`, in seconds: one day, the longest
/// duration the language takes (a session is one day). Larger values overflowed the
/// monotonic clock (`Instant + Duration`) and panicked at the first wake.
pub const MAX_TIMEOUT_SECS: u64 = 86_400;

/// The largest saved Bus, desk session file or script of author replies read into memory,
/// in bytes (a recording is read whole: its lines refer to each other).
pub const MAX_RECORDING_BYTES: usize = 64 * 1024 * 1024;

/// The largest tape read whole into memory (the desk, `kestrel grade`), in bytes.
pub const MAX_TAPE_BYTES: usize = 1024 * 1024 * 1024;

/// The largest configuration file read (`desk.toml`, a theme, a key file), in bytes.
pub const MAX_SMALL_FILE_BYTES: usize = 1024 * 1024;

/// An input past its size limit: how large it is when that is known (a regular file's
/// size), or only that it went on past the limit (a pipe, a FIFO, a device, stdin: read to
/// the limit and no further).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge {
    /// The limit, in bytes.
    pub limit: usize,
    /// The input's size, when it is a regular file; `None`: more than `limit`.
    pub size: Option<u64>,
}

impl TooLarge {
    /// "is 104857600 bytes", or "is more than 8388608 bytes (read to the limit)".
    pub fn is(&self) -> String {
        match self.size {
            Some(n) => format!("is {n} bytes"),
            None => format!(
                "is more than {} bytes (read up to the limit and no further)",
                self.limit
            ),
        }
    }
}

/// Why a bounded read gave no bytes: an I/O error, or an input past its limit.
#[derive(Debug)]
pub enum ReadError {
    Io(std::io::Error),
    TooLarge(TooLarge),
}

impl std::fmt::Display for TooLarge {
    /// "it is 104857600 bytes, over the limit of 268435456 bytes", for a message after
    /// "cannot read PATH: ".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.size {
            Some(_) => write!(
                f,
                "it {}, over the limit of {} bytes",
                self.is(),
                self.limit
            ),
            None => write!(f, "it {}", self.is()),
        }
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(e) => e.fmt(f),
            ReadError::TooLarge(t) => t.fmt(f),
        }
    }
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        ReadError::Io(e)
    }
}

/// Read all of `r`, at most `limit` bytes: a reader that has more is refused having read
/// `limit + 1` bytes, however long it goes on (`/dev/zero`, `yes`, a FIFO that never
/// closes its write end after a flood). Every input read whole into memory goes through
/// here, each with its own limit; before, the limit was checked after reading everything,
/// so `kestrel check /dev/zero` grew until the machine ran out of memory.
pub fn read_bounded(r: impl std::io::Read, limit: usize) -> Result<Vec<u8>, ReadError> {
    read_bounded_into(r, limit, Vec::new())
}

/// [`read_bounded`] into `buf` (empty; its capacity reserved for what is expected).
fn read_bounded_into(
    r: impl std::io::Read,
    limit: usize,
    mut buf: Vec<u8>,
) -> Result<Vec<u8>, ReadError> {
    use std::io::Read;
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    r.take(cap).read_to_end(&mut buf)?;
    if buf.len() > limit {
        return Err(ReadError::TooLarge(TooLarge { limit, size: None }));
    }
    Ok(buf)
}

/// [`read_bounded`] of the file at `path`. A regular file larger than `limit` is refused
/// unread, with its size; any other file (a FIFO, a device, `/dev/stdin`) is read up to the
/// limit. Pipes and FIFOs are read as files are (`<(cmd)` is an ordinary shell idiom).
pub fn read_file_bounded(path: &std::path::Path, limit: usize) -> Result<Vec<u8>, ReadError> {
    let f = std::fs::File::open(path)?;
    if let Ok(meta) = f.metadata()
        && meta.is_file()
        && meta.len() > u64::try_from(limit).unwrap_or(u64::MAX)
    {
        return Err(ReadError::TooLarge(TooLarge {
            limit,
            size: Some(meta.len()),
        }));
    }
    // A regular file's size is known: its bytes are read into one buffer of that size (and
    // the byte that tells its end), mapped in at once ([`big_buffer`]), where reading into
    // a growing buffer reallocated it a dozen times and faulted its pages in one at a time.
    // A file that grows while read still grows the buffer; one that reports no size (procfs)
    // is read as a stream.
    let expected = f
        .metadata()
        .ok()
        .filter(|m| m.is_file())
        .and_then(|m| usize::try_from(m.len()).ok())
        .unwrap_or(0);
    read_bounded_into(f, limit, big_buffer(expected.saturating_add(1)))
}

/// Below this many bytes a buffer is allocated as any other ([`big_buffer`]).
const BIG_BUFFER: usize = 1 << 20;

/// An empty buffer with room for `cap` bytes. One of at least [`BIG_BUFFER`] bytes (an 8 MB
/// document read whole, or its printed text) has its memory mapped at once, in huge pages
/// where the kernel gives them (Linux: `madvise` `MADV_HUGEPAGE`, then
/// `MADV_POPULATE_WRITE`), instead of a page fault per 4 KiB page as it is first written:
/// about 2,000 faults for 8 MB, 3.5 ms of `kestrel print`'s ~118 ms (docs/language.md,
/// "The print path, 2026-12-06, second pass"). Only advice: the buffer's contents and
/// size are those of `Vec::with_capacity`, and a kernel that refuses the advice leaves it so.
pub fn big_buffer(cap: usize) -> Vec<u8> {
    let mut buf = Vec::with_capacity(cap);
    if cap >= BIG_BUFFER {
        map_now(buf.spare_capacity_mut());
    }
    buf
}

#[cfg(target_os = "linux")]
fn map_now(mem: &mut [std::mem::MaybeUninit<u8>]) {
    const PAGE: usize = 4096;
    const HUGE: usize = 2 << 20;
    let start = mem.as_mut_ptr() as usize;
    let end = start + mem.len();
    // Only whole pages inside the buffer are advised (never a page another allocation
    // shares); the huge-page advice only for whole 2 MiB-aligned runs of them.
    let advise = |align: usize, advice: libc::c_int| {
        let (a, b) = (start.next_multiple_of(align), end / align * align);
        if b > a {
            // SAFETY: [a, b) lies inside `mem`, memory this process owns and holds
            // exclusively (`&mut`). Neither advice changes what the memory holds: huge
            // pages only change how it is mapped, and `MADV_POPULATE_WRITE` maps the pages as
            // a write would without writing. A refusal (an older kernel, no memory to map
            // ahead) leaves the memory as it was, to be faulted in as it is written.
            unsafe {
                libc::madvise(a as *mut libc::c_void, b - a, advice);
            }
        }
    };
    advise(HUGE, libc::MADV_HUGEPAGE);
    advise(PAGE, libc::MADV_POPULATE_WRITE);
}

#[cfg(not(target_os = "linux"))]
fn map_now(_mem: &mut [std::mem::MaybeUninit<u8>]) {}

/// [`read_file_bounded`] as UTF-8 text: bytes that are not UTF-8 are an I/O error of kind
/// `InvalidData`, `not UTF-8 text` (as [`crate::cli::cannot_read_bounded`] words it).
pub fn read_text_bounded(path: &std::path::Path, limit: usize) -> Result<String, ReadError> {
    let b = read_file_bounded(path, limit)?;
    String::from_utf8(b)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text").into())
}

/// The first `max` bytes of `s`, cut back to a character boundary.
pub(crate) fn prefix(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An endless reader is cut at the limit and refused, never read to its end; a reader
    /// within the limit is read whole, one at the limit too.
    #[test]
    fn a_bounded_read_stops_at_its_limit() {
        let t = std::time::Instant::now();
        match read_bounded(std::io::repeat(0), 1024) {
            Err(ReadError::TooLarge(TooLarge { limit, size })) => {
                assert_eq!((limit, size), (1024, None));
            }
            other => panic!("expected too large, got {other:?}"),
        }
        match read_bounded(std::io::repeat(b'#'), MAX_DOCUMENT_BYTES) {
            Err(ReadError::TooLarge(t)) => {
                assert_eq!(
                    t.is(),
                    "is more than 8388608 bytes (read up to the limit and no further)"
                );
            }
            other => panic!("expected too large, got {:?}", other.map(|b| b.len())),
        }
        assert!(t.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(read_bounded(&b"abc"[..], 3).unwrap(), b"abc");
        assert_eq!(read_bounded(&b""[..], 0).unwrap(), b"");
        assert!(matches!(
            read_bounded(&b"abcd"[..], 3),
            Err(ReadError::TooLarge(_))
        ));
    }

    /// A regular file past the limit is refused by its size, unread.
    #[test]
    fn a_regular_file_past_the_limit_is_refused_with_its_size() {
        let d = std::env::temp_dir().join(format!("kestrel-limits-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("big.txt");
        std::fs::write(&f, vec![b'a'; 100]).unwrap();
        match read_file_bounded(&f, 99) {
            Err(ReadError::TooLarge(t)) => assert_eq!(t.is(), "is 100 bytes"),
            other => panic!("expected too large, got {other:?}"),
        }
        assert_eq!(read_file_bounded(&f, 100).unwrap().len(), 100);
        let e = read_file_bounded(&f, 10).unwrap_err();
        assert_eq!(e.to_string(), "it is 100 bytes, over the limit of 10 bytes");
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A file read into a buffer mapped ahead (over [`BIG_BUFFER`]) is read byte for byte,
    /// at the limit too, and one byte past it is still refused; a buffer mapped ahead is an
    /// empty one with the room asked for, and holds what is written into it.
    #[test]
    fn a_large_file_is_read_whole_into_a_buffer_mapped_ahead() {
        let d = std::env::temp_dir().join(format!("kestrel-limits-big-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("big.txt");
        let want: Vec<u8> = (0..3 * BIG_BUFFER + 12_345)
            .map(|k| (k % 251) as u8)
            .collect();
        std::fs::write(&f, &want).unwrap();
        assert_eq!(read_file_bounded(&f, want.len()).unwrap(), want);
        assert_eq!(read_file_bounded(&f, MAX_DOCUMENT_BYTES).unwrap(), want);
        assert!(matches!(
            read_file_bounded(&f, want.len() - 1),
            Err(ReadError::TooLarge(_))
        ));
        let _ = std::fs::remove_dir_all(&d);

        let mut b = big_buffer(5 << 20);
        assert!(b.is_empty() && b.capacity() >= 5 << 20);
        b.extend_from_slice(&want);
        assert_eq!(b, want);
    }

    #[test]
    fn prefix_cuts_on_a_char_boundary() {
        assert_eq!(prefix("abc", 10), "abc");
        assert_eq!(prefix("abc", 2), "ab");
        // `é` is two bytes: a cut inside it backs off to before it.
        assert_eq!(prefix("aé", 2), "a");
        assert_eq!(prefix("", 0), "");
    }
}
