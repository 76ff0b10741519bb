//! The desk's handle on its [`Session`]: the session on its own thread, off the draw loop
//! (commands go in over a channel, snapshots come out over a `watch` channel, and neither
//! side waits on the other), or inline for tests and benchmarks (commands apply at once;
//! time moves only by [`Command::Tick`]).

use crate::session::{Command, Session, SessionSnapshot, Speed};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What the handle sends its thread.
enum Msg {
    Command(Command),
    Quit,
}

/// The desk's handle on the session.
pub struct SessionHandle(Inner);

/// A watch on a threaded session's end, for a thread other than the draw loop
/// ([`SessionHandle::ended`]).
pub struct Ended {
    /// Set once the session's thread has sent its last snapshot and dropped its session.
    flag: Arc<AtomicBool>,
    /// The snapshots (the last one is sent before the flag is set).
    rx: tokio::sync::watch::Receiver<Arc<SessionSnapshot>>,
}

impl Ended {
    /// Has the session's thread ended?
    pub fn is_ended(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// The latest snapshot: once [`is_ended`](Self::is_ended), the session's last, whose
    /// [`save_error`](SessionSnapshot::save_error) says whether it was saved whole.
    pub fn last(&self) -> Arc<SessionSnapshot> {
        self.rx.borrow().clone()
    }
}

enum Inner {
    /// The session runs on a thread; the draw loop reads the latest snapshot.
    Threaded {
        /// Commands in.
        tx: mpsc::Sender<Msg>,
        /// Snapshots out (latest wins).
        rx: tokio::sync::watch::Receiver<Arc<SessionSnapshot>>,
        /// The thread.
        join: Option<std::thread::JoinHandle<()>>,
        /// Set once the thread has dropped its session (the `left` record written, a live
        /// author stopped).
        ended: Arc<AtomicBool>,
    },
    /// The session runs in the caller, one command at a time.
    Inline {
        /// The session.
        session: Box<Session>,
        /// The latest snapshot.
        snap: Arc<SessionSnapshot>,
    },
}

impl SessionHandle {
    /// Open a session on its own thread (the session need not be `Send`: it is built
    /// there). Waits only for the first snapshot.
    pub fn spawn<F>(build: F) -> Result<SessionHandle, String>
    where
        F: FnOnce() -> Result<Session, String> + Send + 'static,
    {
        let (tx, crx) = mpsc::channel::<Msg>();
        type First = Result<tokio::sync::watch::Receiver<Arc<SessionSnapshot>>, String>;
        let (itx, irx) = mpsc::channel::<First>();
        let ended = Arc::new(AtomicBool::new(false));
        let ended_in = ended.clone();
        let join = std::thread::Builder::new()
            .name("kestrel-session".into())
            .spawn(move || match build() {
                Ok(mut s) => {
                    let (stx, srx) = tokio::sync::watch::channel(Arc::new(s.snapshot(true)));
                    if itx.send(Ok(srx)).is_ok() {
                        drive(s, crx, stx);
                        ended_in.store(true, Ordering::SeqCst);
                    }
                }
                Err(e) => {
                    let _ = itx.send(Err(e));
                }
            })
            .map_err(|e| e.to_string())?;
        let rx = irx
            .recv()
            .map_err(|_| "the session thread stopped before it started".to_string())??;
        Ok(SessionHandle(Inner::Threaded {
            tx,
            rx,
            join: Some(join),
            ended,
        }))
    }

    /// A watch on the session's thread: whether it has ended (its session dropped) and, once
    /// it has, its last snapshot (`None` inline). The thread ends by itself when a signal is
    /// caught, so the session is left even when the draw loop cannot come back to see the
    /// signal (a hung-up terminal), and the watch can say whether it was saved whole.
    pub fn ended(&self) -> Option<Ended> {
        match &self.0 {
            Inner::Threaded { ended, rx, .. } => Some(Ended {
                flag: ended.clone(),
                rx: rx.clone(),
            }),
            Inner::Inline { .. } => None,
        }
    }

    /// Run a session inline.
    pub fn inline(mut session: Session) -> SessionHandle {
        let snap = Arc::new(session.snapshot(true));
        SessionHandle(Inner::Inline {
            session: Box::new(session),
            snap,
        })
    }

    /// Send a command (never blocks).
    pub fn send(&mut self, c: Command) {
        match &mut self.0 {
            Inner::Threaded { tx, .. } => {
                let _ = tx.send(Msg::Command(c));
            }
            Inner::Inline { session, snap } => {
                session.command(c);
                *snap = Arc::new(session.snapshot(true));
            }
        }
    }

    /// The latest snapshot (never blocks on the session). Inline, a live author's answers
    /// are taken in first.
    pub fn latest(&mut self) -> Arc<SessionSnapshot> {
        match &mut self.0 {
            Inner::Threaded { rx, .. } => rx.borrow_and_update().clone(),
            Inner::Inline { session, snap } => {
                session.poll();
                if session.changed() {
                    *snap = Arc::new(session.snapshot(true));
                }
                snap.clone()
            }
        }
    }

    /// Stop the thread (if any) and wait for it.
    pub fn shutdown(&mut self) {
        if let Inner::Threaded { tx, join, .. } = &mut self.0 {
            let _ = tx.send(Msg::Quit);
            if let Some(j) = join.take() {
                let _ = j.join();
            }
        }
    }

    /// The person leaves: the session is stopped ([`shutdown`](Self::shutdown)), its Bus
    /// written out and its `left` record written, and the last snapshot is given back,
    /// whose [`save_error`](SessionSnapshot::save_error) says whether any of it failed.
    pub fn leave(&mut self) -> Arc<SessionSnapshot> {
        self.shutdown();
        match &mut self.0 {
            Inner::Threaded { rx, .. } => rx.borrow_and_update().clone(),
            Inner::Inline { session, snap } => {
                let _ = session.leave();
                *snap = Arc::new(session.snapshot(false));
                snap.clone()
            }
        }
    }
}

impl Drop for SessionHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The session thread: apply commands as they come, advance while playing, publish
/// snapshots at most ~30 times a second (the Frame at most 4 times a second while playing).
/// Paused, it sleeps until a command comes or a live author may have written (every 100 ms).
/// A caught signal (SIGTERM, SIGINT, SIGHUP) ends it as a quit does: the person leaves (the
/// `left` record written) and the last snapshot says whether the session was saved whole
/// ([`SessionSnapshot::save_error`]); then the session is dropped, which stops a live author.
fn drive(
    mut s: Session,
    rx: mpsc::Receiver<Msg>,
    tx: tokio::sync::watch::Sender<Arc<SessionSnapshot>>,
) {
    drive_until_quit(&mut s, rx, &tx);
    let _ = s.leave();
    let _ = tx.send(Arc::new(s.snapshot(false)));
}

fn drive_until_quit(
    s: &mut Session,
    rx: mpsc::Receiver<Msg>,
    tx: &tokio::sync::watch::Sender<Arc<SessionSnapshot>>,
) {
    let mut last = Instant::now();
    let mut last_pub = Instant::now();
    let mut last_frame = Instant::now();
    loop {
        if crate::signals::caught().is_some() {
            return;
        }
        let wait = if s.playing() {
            Duration::from_millis(if s.speed() == Speed::Max { 0 } else { 10 })
        } else {
            Duration::from_millis(100)
        };
        let first = if wait.is_zero() {
            match rx.try_recv() {
                Ok(c) => Some(c),
                Err(mpsc::TryRecvError::Empty) => None,
                Err(mpsc::TryRecvError::Disconnected) => return,
            }
        } else {
            match rx.recv_timeout(wait) {
                Ok(c) => Some(c),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            }
        };
        let mut commanded = false;
        let mut next = first;
        while let Some(m) = next {
            match m {
                Msg::Quit => return,
                Msg::Command(c) => s.command(c),
            }
            commanded = true;
            next = rx.try_recv().ok();
        }
        let now = Instant::now();
        let dt = now - last;
        last = now;
        if s.playing() {
            s.command(Command::Tick(dt));
        } else {
            s.poll();
        }
        let due = now - last_pub >= Duration::from_millis(33);
        if s.changed() && (commanded || due || !s.playing()) {
            let frame = commanded || !s.playing() || now - last_frame >= Duration::from_millis(250);
            if frame {
                last_frame = now;
            }
            let _ = tx.send(Arc::new(s.snapshot(frame)));
            last_pub = now;
        }
    }
}
