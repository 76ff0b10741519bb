//! SIGTERM, SIGINT and SIGHUP during a run (`kestrel run`, `kestrel agent`, `kestrel
//! experiment`, the desk; `tape gen` / `tape import` and `kestrel grade` stop their work the
//! same way and write nothing). SIGHUP is what a closed terminal window, a dropped ssh
//! session or `tmux kill-session` sends: the desk then leaves as `q` does (the session's
//! `left` record written, a command author's process group killed) instead of dying with
//! its author orphaned. A SIGHUP already ignored when the process starts (`nohup kestrel
//! ...`) stays ignored: the run was asked to outlive its terminal.
//!
//! [`install`] turns the first of these signals into a flag instead of an abrupt exit; the
//! run loops check [`caught`] between tape events (and wakes), an author call in flight is
//! abandoned within 50 ms (`session::Attached`: the call's future is dropped, a command
//! author's process group killed, the ask recorded as a `provider-error kind=interrupted`),
//! and an interrupted run ends as
//! at an error: the Bus gets an `error` event naming the signal and its `session-end`, is
//! flushed and renamed into place (complete JSON Lines, no temporary file left), and the
//! command exits 1 with `error code=INTERRUPTED` on stderr. A second signal while the first is
//! being handled takes the default action (the process ends at once), so a run stuck waiting
//! on an author can still be stopped.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

static CAUGHT: OnceLock<Arc<AtomicUsize>> = OnceLock::new();

/// Catch SIGTERM, SIGINT and SIGHUP (unless ignored, [`hangup_ignored`]) from now on
/// (idempotent). Fails only if the handlers cannot be registered, in which case the default
/// actions stay.
pub(crate) fn install() {
    CAUGHT.get_or_init(|| {
        let flag = Arc::new(AtomicUsize::new(0));
        #[cfg(unix)]
        for sig in [
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGHUP,
        ] {
            if sig == signal_hook::consts::SIGHUP && hangup_ignored() {
                continue;
            }
            // Order matters: the conditional default first, so the second signal kills.
            let armed = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let _ = signal_hook::flag::register_conditional_default(sig, armed.clone());
            let _ = signal_hook::flag::register(sig, armed);
            let _ = signal_hook::flag::register_usize(sig, flag.clone(), sig as usize);
        }
        flag
    });
}

/// The name of the signal caught, if any.
pub(crate) fn caught() -> Option<&'static str> {
    let n = CAUGHT.get()?.load(Ordering::SeqCst);
    match n {
        0 => None,
        #[cfg(unix)]
        n if n == signal_hook::consts::SIGTERM as usize => Some("SIGTERM"),
        #[cfg(unix)]
        n if n == signal_hook::consts::SIGINT as usize => Some("SIGINT"),
        #[cfg(unix)]
        n if n == signal_hook::consts::SIGHUP as usize => Some("SIGHUP"),
        _ => Some("a signal"),
    }
}

/// Was SIGHUP set to be ignored before we started (`nohup`)? Read without changing it.
#[cfg(unix)]
fn hangup_ignored() -> bool {
    // SAFETY: a query only (no new action); `old` is a zeroed, valid sigaction to fill.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGHUP, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}
