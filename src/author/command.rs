//! The command author: an external program reads the prompt on stdin and writes its Kestrel
//! reply on stdout (the file-handshake brains of seed 000 §7). A timeout, a non-zero exit, a
//! failure to start, output that is not UTF-8 and an empty reply are provider errors: a
//! program that means to pass writes a comment.
//!
//! How the program is run, so that no program can hang or outlive the author:
//!
//! - **Its own process group.** The child is the leader of a new group; on a timeout the
//!   whole group is killed (`SIGKILL`), so the children of `sh -c` die with it, and so are
//!   any left behind once the reply is read.
//! - **Dies with kestrel** (Linux). The program gets `SIGKILL` when kestrel dies, even by a
//!   `SIGKILL` no handler sees (`PR_SET_PDEATHSIG`, [`die_with_parent`]).
//! - **Both pipes drained at once.** Stdin is written, stdout and stderr are read
//!   concurrently, so a program that writes more than a pipe holds (64 KiB) on stderr before
//!   its reply does not block. Stderr is kept up to [`STDERR_KEPT`] bytes (the rest is read
//!   and dropped).
//! - **Bounded after exit.** When the program has exited, its pipes get [`PIPE_GRACE`] to
//!   close; a grandchild still holding stdout open does not keep the author waiting: its
//!   group is killed and what the program wrote before it exited is the reply.
//! - **No key in its environment.** `KESTREL_API_KEY` and `OPENAI_API_KEY` are removed from
//!   the child's environment unless [`CommandAuthor::pass_api_key`] is set (the
//!   `--pass-api-key` flag).
//! - **Redacted stderr.** What the program wrote on stderr reaches an error message (and so
//!   the Bus) only after every known key is redacted from it ([`secret::redact_all`]).

use super::secret::{self, ApiKey};
use super::{
    Author, AuthorFuture, AuthorInfo, Completion, DeltaSink, Prompt, ProviderErrorKind, excerpt,
};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

/// Ask Linux to `SIGKILL` the program when the thread that started it dies
/// (`PR_SET_PDEATHSIG`): a `kestrel agent` killed with `SIGKILL` cannot kill the author's
/// group itself, and the program, in a group of its own, ran on forever. The signal reaches
/// the program started (`sh -c`, or what `sh` execs in its place), not the children it forks
/// (the setting is not inherited across `fork`). The calls run on threads that live as long
/// as the session, so the signal means "kestrel is gone".
#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut Command) {
    // SAFETY: getpid before the fork; in the child only async-signal-safe calls (prctl,
    // getppid, raise), no allocation.
    let parent = unsafe { libc::getpid() };
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died between the fork and the prctl: the signal will never come.
            if libc::getppid() != parent {
                libc::raise(libc::SIGKILL);
            }
            Ok(())
        });
    }
}

/// The stderr kept for error messages; more is read and dropped.
pub const STDERR_KEPT: usize = 64 * 1024;

/// How long the pipes may stay open once the program has exited.
pub const PIPE_GRACE: Duration = Duration::from_millis(250);

/// Runs `program args...` once per turn.
#[derive(Debug, Clone)]
pub struct CommandAuthor {
    pub program: String,
    pub args: Vec<String>,
    /// The whole run: start, write the prompt, read the reply, exit.
    pub timeout: Duration,
    /// Leave `KESTREL_API_KEY` / `OPENAI_API_KEY` in the program's environment.
    pub pass_api_key: bool,
    /// Keys redacted from the program's stderr (default: [`secret::known_keys`]).
    pub redact: Vec<ApiKey>,
}

/// Kill the process group `pgid` (the program and everything it started).
#[cfg(unix)]
fn kill_group(pgid: Option<u32>) {
    if let Some(id) = pgid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 1) {
        // SAFETY: killpg only sends a signal; a group that is gone gives ESRCH, ignored.
        unsafe {
            libc::killpg(id, libc::SIGKILL);
        }
    }
}

#[cfg(not(unix))]
fn kill_group(_pgid: Option<u32>) {}

/// Kills a command's process group when dropped.
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}

/// Read `r` to its end, each chunk to `take` (which keeps what it keeps: the reply up to
/// its limit, stderr up to [`STDERR_KEPT`]): a pipe is always read to its end, so the program
/// never blocks on a full pipe.
async fn drain<R: AsyncRead + Unpin>(r: Option<R>, mut take: impl FnMut(&[u8])) {
    let Some(mut r) = r else { return };
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => take(&buf[..n]),
        }
    }
}

impl CommandAuthor {
    /// A program run with the key removed from its environment and its stderr redacted of
    /// the keys known now.
    pub fn new(program: impl Into<String>, args: Vec<String>, timeout: Duration) -> Self {
        CommandAuthor {
            program: program.into(),
            args,
            timeout,
            pass_api_key: false,
            redact: secret::known_keys(),
        }
    }

    async fn run(&self, prompt: &Prompt, deltas: Option<DeltaSink>) -> Completion {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        #[cfg(target_os = "linux")]
        die_with_parent(&mut cmd);
        if !self.pass_api_key {
            cmd.env_remove(secret::DEFAULT_ENV)
                .env_remove(secret::FALLBACK_ENV);
        }
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                return Completion::error(
                    ProviderErrorKind::Spawn,
                    format!("cannot start `{}`: {e}", self.program),
                );
            }
        };
        let pgid = child.id();
        // However the call ends (a timeout, a signal dropping this future), nothing the
        // program started outlives it.
        let _group = GroupGuard(pgid);
        let input = prompt.full_text();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let write = async move {
            if let Some(mut w) = stdin {
                // A program that does not read its stdin is allowed: ignore a broken pipe.
                let _ = w.write_all(input.as_bytes()).await;
                let _ = w.shutdown().await;
            }
        };
        let (mut out, mut err) = (super::Bounded::default(), Vec::new());
        let timed = {
            // The reply is read to its end, kept up to the reply limit and counted past it
            // (the router refuses it by its size; `Bounded`).
            let read_out = drain(stdout, |b| {
                let kept = out.push(b);
                if let (Some(d), Ok(s)) = (&deltas, std::str::from_utf8(kept))
                    && !kept.is_empty()
                {
                    let _ = d.send(secret::redact_all(s, &self.redact));
                }
            });
            let read_err = drain(stderr, |b| {
                let room = STDERR_KEPT.saturating_sub(err.len()).min(b.len());
                err.extend_from_slice(&b[..room]);
            });
            let work = async {
                let pipes = async { tokio::join!(write, read_out, read_err) };
                tokio::pin!(pipes);
                // Wait for the exit, reading all the while; then the pipes get a bounded grace.
                let status = tokio::select! {
                    s = child.wait() => s,
                    _ = &mut pipes => return child.wait().await,
                };
                let _ = tokio::time::timeout(PIPE_GRACE, &mut pipes).await;
                status
            };
            tokio::time::timeout(self.timeout, work).await
        };
        let status = match timed {
            Ok(s) => s,
            Err(_) => {
                kill_group(pgid);
                let _ = child.kill().await;
                return Completion::error(
                    ProviderErrorKind::Timeout,
                    format!(
                        "`{}` did not answer within {:?} (its process group was killed)",
                        self.program, self.timeout
                    ),
                );
            }
        };
        // Whatever the program left running (a grandchild holding stdout) ends with it.
        kill_group(pgid);
        let stderr_text = || {
            let e = secret::redact_all(&String::from_utf8_lossy(&err), &self.redact);
            excerpt(e.trim(), 200)
        };
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => {
                let said = stderr_text();
                let said = if said.is_empty() {
                    " (nothing on stderr)".to_string()
                } else {
                    format!(": {said}")
                };
                return Completion::error(
                    ProviderErrorKind::Exit,
                    format!("`{}` exited with {s}{said}", self.program),
                );
            }
            Err(e) => {
                return Completion::error(
                    ProviderErrorKind::Exit,
                    format!("`{}` could not be waited on: {e}", self.program),
                );
            }
        }
        let out = match out.finish(|h| secret::redact_all(&h, &self.redact)) {
            Ok(out) => out,
            Err(oversized) => return oversized,
        };
        match String::from_utf8(out) {
            Ok(s) if s.trim().is_empty() => Completion::error(
                ProviderErrorKind::EmptyCompletion,
                format!("`{}` wrote nothing on stdout", self.program),
            ),
            // A program that echoes the key (its environment, a config file) does not put
            // it on the Bus or the screen: the reply passes the same redaction as errors.
            Ok(s) => Completion::Reply(secret::redact_all(&s, &self.redact)),
            Err(_) => Completion::error(
                ProviderErrorKind::BadResponse,
                format!("`{}` wrote output that is not UTF-8", self.program),
            ),
        }
    }
}

impl Author for CommandAuthor {
    fn info(&self) -> AuthorInfo {
        AuthorInfo {
            kind: "command",
            model: std::iter::once(self.program.as_str())
                .chain(self.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            constrained: false,
            temperature: None,
            server: None,
            max_tokens: None,
        }
    }

    fn author<'a>(&'a mut self, prompt: &'a Prompt, deltas: Option<DeltaSink>) -> AuthorFuture<'a> {
        Box::pin(self.run(prompt, deltas))
    }
}
