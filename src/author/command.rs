//! The command author: an external program reads the prompt on stdin and writes its Kestrel
//! reply on stdout (the file-handshake brains of seed 000 §7). A timeout, a non-zero exit, a
//! failure to start, output that is not UTF-8 and an empty reply are provider errors: a
//! program that means to pass writes a comment.

use super::{
    Author, AuthorFuture, AuthorInfo, DeltaSink, Outcome, Prompt, ProviderErrorKind, excerpt,
};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

/// Runs `program args...` once per turn.
#[derive(Debug, Clone)]
pub struct CommandAuthor {
    pub program: String,
    pub args: Vec<String>,
    /// The whole run: start, write the prompt, read the reply, exit.
    pub timeout: Duration,
}

impl CommandAuthor {
    pub fn new(program: impl Into<String>, args: Vec<String>, timeout: Duration) -> Self {
        CommandAuthor {
            program: program.into(),
            args,
            timeout,
        }
    }

    async fn run(&self, prompt: &Prompt, deltas: Option<DeltaSink>) -> Outcome {
        let mut child = match Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
        {
            Ok(c) => c,
            Err(e) => {
                return Outcome::error(
                    ProviderErrorKind::Spawn,
                    format!("cannot start `{}`: {e}", self.program),
                );
            }
        };
        let input = prompt.full_text();
        let mut stdin = child.stdin.take();
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let work = async {
            if let Some(mut w) = stdin.take() {
                // A program that does not read its stdin is allowed: ignore a broken pipe.
                let _ = w.write_all(input.as_bytes()).await;
                let _ = w.shutdown().await;
            }
            let mut out = Vec::new();
            if let Some(r) = stdout.as_mut() {
                let mut buf = [0u8; 4096];
                loop {
                    match r.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            out.extend_from_slice(&buf[..n]);
                            if let (Some(d), Ok(s)) = (&deltas, std::str::from_utf8(&buf[..n])) {
                                let _ = d.send(s.to_string());
                            }
                        }
                    }
                }
            }
            let mut err = Vec::new();
            if let Some(r) = stderr.as_mut() {
                let _ = r.read_to_end(&mut err).await;
            }
            let status = child.wait().await;
            (out, err, status)
        };
        let (out, err, status) = match tokio::time::timeout(self.timeout, work).await {
            Ok(r) => r,
            Err(_) => {
                // kill_on_drop ends the child when `work` (which owns it) is dropped.
                return Outcome::error(
                    ProviderErrorKind::Timeout,
                    format!(
                        "`{}` did not answer within {:?}",
                        self.program, self.timeout
                    ),
                );
            }
        };
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => {
                let e = String::from_utf8_lossy(&err);
                return Outcome::error(
                    ProviderErrorKind::Exit,
                    format!(
                        "`{}` exited with {s}: {}",
                        self.program,
                        excerpt(e.trim(), 200)
                    ),
                );
            }
            Err(e) => {
                return Outcome::error(
                    ProviderErrorKind::Exit,
                    format!("`{}` could not be waited on: {e}", self.program),
                );
            }
        }
        match String::from_utf8(out) {
            Ok(s) if s.trim().is_empty() => Outcome::error(
                ProviderErrorKind::EmptyCompletion,
                format!("`{}` wrote nothing on stdout", self.program),
            ),
            Ok(s) => Outcome::Reply(s),
            Err(_) => Outcome::error(
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
        }
    }

    fn author<'a>(&'a mut self, prompt: &'a Prompt, deltas: Option<DeltaSink>) -> AuthorFuture<'a> {
        Box::pin(self.run(prompt, deltas))
    }
}
