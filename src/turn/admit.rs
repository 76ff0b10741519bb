//! Admission: the one gate every author's turn passes before it can act.
//!
//! Two doors lead to it, and both end in the same router and checker:
//!
//! - [`admit`] takes a live reply (a model, a person at the desk, a program, an envelope, the
//!   MCP `route_turn` tool: [`route`](super::route) is this function). The reply's size is
//!   checked first, against [`MAX_REPLY_BYTES`], before any work is done on it; then it is
//!   routed and checked (parse, menu, every fail-closed rule).
//! - [`readmit`] takes a turn *recorded* on a Bus (a replay). A record is not trusted: its
//!   canonical Kestrel is routed again, under the context of the wake it answers, exactly as a
//!   live reply would be, and the result must be the recorded outcome and the recorded text.
//!   A record that the checker refuses, that is not Kestrel, or that diverges is a coded
//!   `REPLAY` error naming the Bus line; nothing of it is armed.
//!
//! [`ArmedCheck`] then ties a replayed supersede to the `document-armed` record that follows
//! it: the armed text must be the admitted text, and its BLAKE3 the recorded hash.

use super::{Outcome, Reply, RoutedTurn, TurnContext, TurnError, guided_text};
use crate::limits::{KEPT_REPLY_BYTES, MAX_REPLY_BYTES, prefix};

/// Admit a live reply: refuse an oversized one at once (rule `limit`), else route and check
/// it. Never panics; every reply gets exactly one outcome.
pub fn admit(reply: &Reply, ctx: &TurnContext) -> RoutedTurn {
    let n = reply.size();
    if n > MAX_REPLY_BYTES {
        let errors = vec![TurnError::new(
            "TURN",
            "limit",
            format!(
                "{OVERSIZE_HEAD}{n} bytes; a turn is at most {MAX_REPLY_BYTES} bytes (256 KiB): reply with the turn alone, a few plans"
            ),
            0,
            0,
        )];
        return super::turn(
            ctx,
            Outcome::Invalid { errors },
            Vec::new(),
            String::new(),
            super::Source::None,
        );
    }
    super::route_reply(reply, ctx)
}

/// How the refusal of an oversized reply begins; its size follows.
const OVERSIZE_HEAD: &str = "the reply is ";

/// The size in bytes of the oversized reply `e` refused ([`admit`]'s `TURN rule=limit`
/// error), or `None` for any other error.
pub fn oversized_bytes(e: &TurnError) -> Option<usize> {
    if (e.code.as_str(), e.rule.as_str()) != ("TURN", "limit") {
        return None;
    }
    let rest = e.message.strip_prefix(OVERSIZE_HEAD)?;
    rest.split(' ').next()?.parse().ok()
}

/// What of a reply is kept (on the Bus, and quoted in a re-ask): the whole reply when it is
/// within [`MAX_REPLY_BYTES`], else its first [`KEPT_REPLY_BYTES`] bytes, so an oversized
/// reply is never stored whole.
pub fn kept(reply: &Reply) -> &str {
    let w = reply.written();
    if reply.size() > MAX_REPLY_BYTES {
        prefix(w, KEPT_REPLY_BYTES)
    } else {
        w
    }
}

/// Why a recorded turn was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayError {
    /// The 1-based Bus line of the record.
    pub line: usize,
    /// `replay-refused`, `replay-divergence`, `replay-record` or `replay-hash`.
    pub rule: &'static str,
    /// What is wrong.
    pub message: String,
}

impl ReplayError {
    /// The stable error code.
    pub const CODE: &'static str = "REPLAY";

    fn new(line: usize, rule: &'static str, message: impl Into<String>) -> ReplayError {
        ReplayError {
            line,
            rule,
            message: message.into(),
        }
    }

    /// The error as a turn error (a replayed turn refused at its wake).
    pub fn turn_error(&self) -> TurnError {
        TurnError::new(
            Self::CODE,
            self.rule,
            format!("Bus line {}: {}", self.line, self.message),
            0,
            0,
        )
    }
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "error code={} rule={} line={} message={}",
            Self::CODE,
            self.rule,
            self.line,
            self.message.replace('\n', " ")
        )
    }
}

impl std::error::Error for ReplayError {}

/// Admit a turn recorded at Bus line `line`, under `ctx` (the wake it answers): route its
/// canonical Kestrel again as a live reply and require the recorded outcome and text. A
/// refused, truncated or provider-error record arms nothing and must carry no Kestrel.
/// Gives back the record (so a faithful replay writes the same Bus).
pub fn readmit(
    rec: &RoutedTurn,
    ctx: &TurnContext,
    line: usize,
) -> Result<RoutedTurn, ReplayError> {
    let arms_nothing = matches!(
        rec.outcome,
        Outcome::Invalid { .. }
            | Outcome::Truncated { .. }
            | Outcome::ProviderError { .. }
            | Outcome::Pass { fail_closed: true }
    );
    if arms_nothing {
        if !rec.kestrel.is_empty() {
            return Err(ReplayError::new(
                line,
                "replay-record",
                format!(
                    "a {} turn carries Kestrel text; only an authored turn does",
                    rec.outcome.name()
                ),
            ));
        }
        return Ok(rec.clone());
    }
    let again = admit(&Reply::text(rec.kestrel.clone()), ctx);
    if again.outcome.is_refused() {
        return Err(ReplayError::new(
            line,
            "replay-refused",
            format!(
                "the recorded {} turn is refused by the checker: {}",
                rec.outcome.name(),
                guided_text(again.outcome.errors())
            ),
        ));
    }
    if again.outcome != rec.outcome {
        let (said, routed) = match (describe(&rec.outcome), describe(&again.outcome)) {
            // Outcomes that differ only where `describe` does not look: show them whole.
            (a, b) if a == b => (format!("{:?}", rec.outcome), format!("{:?}", again.outcome)),
            ab => ab,
        };
        return Err(ReplayError::new(
            line,
            "replay-divergence",
            format!(
                "the recorded turn says {said} but its Kestrel routes as {routed}{}",
                if again.kestrel != rec.kestrel {
                    " (and the recorded text is not the canonical print of its document)"
                } else {
                    ""
                }
            ),
        ));
    }
    if again.kestrel != rec.kestrel {
        // The outcomes agree: only the text is not what `print` writes for its document.
        return Err(ReplayError::new(
            line,
            "replay-divergence",
            format!(
                "the recorded text is not the canonical print of its document: {}",
                first_difference(&rec.kestrel, &again.kestrel)
            ),
        ));
    }
    Ok(rec.clone())
}

/// An authored turn recorded at Bus line `line` against the reply its last repair attempt
/// (at line `at`) says the author wrote: that reply, routed again under `ctx` as it was live,
/// must give the recorded outcome, canonical text, journal and source. The canonical text is
/// checked against itself by [`readmit`] and the armed document against it by
/// [`ArmedCheck`]; this ties all of them to what the author actually wrote, so a plan or a
/// journal edited consistently in the turn and its `document-armed` record (whose hash
/// anyone can recompute) is not replayed, nor graded, as the author's. A turn that arms
/// nothing (refused, truncated, a provider error, the fail-closed pass) carries no text to
/// check. A person's turn at the desk has no repair attempts, so nothing to check it against.
fn from_reply(
    rec: &RoutedTurn,
    written: &str,
    ctx: &TurnContext,
    line: usize,
    at: usize,
) -> Result<(), ReplayError> {
    if rec.class() != super::TurnClass::Authored {
        return Ok(());
    }
    let again = admit(&Reply::text(written), ctx);
    let differs = if again.outcome != rec.outcome {
        Some(format!(
            "it routes as {} where the turn says {}",
            describe(&again.outcome),
            describe(&rec.outcome)
        ))
    } else if again.kestrel != rec.kestrel {
        Some(format!(
            "its canonical text is not the turn's: {}",
            first_difference(&rec.kestrel, &again.kestrel)
        ))
    } else if again.journal != rec.journal {
        Some(format!(
            "its journal is {:?} where the turn's is {:?}",
            again.journal, rec.journal
        ))
    } else if again.source != rec.source {
        let name = |s: super::Source| {
            serde_json::to_value(s)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        };
        Some(format!(
            "is source {} where the turn says {}",
            name(again.source),
            name(rec.source)
        ))
    } else {
        None
    };
    match differs {
        Some(d) => Err(ReplayError::new(
            line,
            "replay-divergence",
            format!(
                "the turn recorded here is not what its author wrote: the reply recorded at line {at} (its last repair attempt) {d}"
            ),
        )),
        None => Ok(()),
    }
}

/// An outcome as a replay error names it: the directive and what it names.
fn describe(o: &Outcome) -> String {
    let list = |what: &str, names: &[String]| {
        if names.is_empty() {
            String::new()
        } else {
            format!(" {what} [{}]", names.join(", "))
        }
    };
    match o {
        Outcome::Supersede {
            plans,
            wakes,
            views,
        } => format!(
            "supersede [{}]{}{}",
            plans.join(", "),
            list("wakes", wakes),
            list("views", views)
        ),
        Outcome::StandDown { reason } => format!("stand-down {reason:?}"),
        Outcome::ViewRequest { view, .. } => format!("view-request {view}"),
        Outcome::Cancel { target } => format!("cancel {target}"),
        o => o.name().to_string(),
    }
}

/// The longest line a replay error quotes whole (in characters); a longer one is cut with `…`.
const QUOTED_LINE_MAX: usize = 120;

/// Where a recorded text first differs from the canonical one: `line L differs: recorded
/// `...` canonical `...`` (each line shown with its escapes, cut to [`QUOTED_LINE_MAX`]), or
/// which text has lines the other has not.
fn first_difference(recorded: &str, canonical: &str) -> String {
    let quote = |l: &str| {
        let shown: String = l.escape_debug().collect();
        match shown.char_indices().nth(QUOTED_LINE_MAX) {
            Some((i, _)) => format!("{}…", &shown[..i]),
            None => shown,
        }
    };
    // Only the last line end differs: said so (the line quoted would be empty).
    if recorded.trim_end_matches('\n') == canonical.trim_end_matches('\n') {
        return if recorded.len() < canonical.len() {
            "the recorded text lacks the canonical text's final line end".to_string()
        } else {
            "the recorded text has line ends after the canonical text's last".to_string()
        };
    }
    let (mut r, mut c) = (recorded.split('\n'), canonical.split('\n'));
    let mut n = 0usize;
    loop {
        n += 1;
        match (r.next(), c.next()) {
            (Some(a), Some(b)) if a == b => continue,
            (Some(a), Some(b)) => {
                return format!(
                    "line {n} differs: recorded `{}` canonical `{}`",
                    quote(a),
                    quote(b)
                );
            }
            (Some(a), None) => {
                return format!(
                    "the recorded text goes on past the canonical text's end at line {n}: `{}`",
                    quote(a)
                );
            }
            (None, Some(b)) => {
                return format!(
                    "the recorded text ends before line {n} of the canonical text: `{}`",
                    quote(b)
                );
            }
            (None, None) => return "the texts differ".to_string(),
        }
    }
}

/// BLAKE3 of a text, hex (the hash a `document-armed` record carries).
pub fn text_hash(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

/// Ties each replayed supersede to the `document-armed` record the engine wrote after it
/// (an author's turn is recorded, then armed), or, for a person's turn at the desk, to the
/// one just before it (the desk arms the person's document, then records the turn).
#[derive(Debug, Default)]
pub struct ArmedCheck {
    /// A supersede admitted at this line whose `document-armed` has not been seen yet.
    waiting: Option<(usize, String)>,
    /// The last `document-armed` record no supersede was waiting for, since the last turn:
    /// what a person's supersede recorded next armed.
    before: Option<(usize, String)>,
}

impl ArmedCheck {
    /// A supersede turn (with its canonical text) was admitted at `line`.
    pub fn supersede(&mut self, line: usize, kestrel: &str) -> Result<(), ReplayError> {
        self.unmatched()?;
        self.waiting = Some((line, kestrel.to_string()));
        Ok(())
    }

    /// A `document-armed` record at `line`: its hash must be the BLAKE3 of its text, and
    /// after a supersede its text must be the admitted text.
    pub fn armed(&mut self, line: usize, text: &str, blake3: &str) -> Result<(), ReplayError> {
        if text_hash(text) != blake3 {
            return Err(ReplayError::new(
                line,
                "replay-hash",
                format!(
                    "the document-armed hash {blake3} is not the BLAKE3 of its text ({})",
                    text_hash(text)
                ),
            ));
        }
        match self.waiting.take() {
            Some((at, admitted)) if admitted != text => {
                return Err(ReplayError::new(
                    line,
                    "replay-hash",
                    format!(
                        "the document armed here ({blake3}) is not the supersede admitted at line {at} ({})",
                        text_hash(&admitted)
                    ),
                ));
            }
            Some(_) => self.before = None,
            None => self.before = Some((line, text.to_string())),
        }
        Ok(())
    }

    /// A person's supersede (with its canonical text) was admitted at `line`: the desk armed
    /// it just before recording it.
    pub fn armed_before(&mut self, line: usize, kestrel: &str) -> Result<(), ReplayError> {
        self.unmatched()?;
        match self.before.take() {
            Some((_, text)) if text == kestrel => Ok(()),
            Some((at, text)) => Err(ReplayError::new(
                line,
                "replay-hash",
                format!(
                    "the person's supersede recorded here ({}) is not the document armed at line {at} ({})",
                    text_hash(kestrel),
                    text_hash(&text)
                ),
            )),
            None => Err(ReplayError::new(
                line,
                "replay-hash",
                "the person's supersede recorded here has no document-armed record before it (the desk arms the person's document, then records their turn)",
            )),
        }
    }

    /// Another turn, or the end of the Bus: a supersede still waiting never armed.
    pub fn unmatched(&mut self) -> Result<(), ReplayError> {
        match self.waiting.take() {
            Some((at, _)) => Err(ReplayError::new(
                at,
                "replay-hash",
                "the supersede recorded here has no document-armed record after it",
            )),
            None => Ok(()),
        }
    }
}

/// A replayed turn refused at its wake: invalid, with the `REPLAY` error, arming nothing.
pub fn refused(ctx: &TurnContext, e: &ReplayError) -> RoutedTurn {
    let errors = vec![e.turn_error()];
    super::turn(
        ctx,
        Outcome::Invalid { errors },
        Vec::new(),
        String::new(),
        super::Source::None,
    )
}

/// Walks a saved Bus in order and admits each recorded turn under the context of its wake:
/// the names in scope are those the Bus armed before it (every `document-armed` record's
/// plans, views and wakes), the SHOW VIEW requests already answered at that wake are
/// counted, and every `document-armed` record is checked against its hash and against the
/// supersede before it ([`ArmedCheck`]). The scope is the union of everything armed so far,
/// so it can only be wider than the live book's; the replaying session admits each turn again
/// under the live context when it is asked ([`readmit`]).
#[derive(Debug, Default)]
pub struct ReplayGate {
    scope: crate::lang::Scope,
    views_requested: u32,
    armed: ArmedCheck,
    /// The wake whose View was delivered last (name, tape time, Bus line): the wake the
    /// turns after it answer.
    delivered: Option<(String, crate::market::Ts, usize)>,
    /// Each ask's repair attempts in order, then its turn: the order `kestrel errors
    /// report` holds a Bus to.
    attempts: super::report::AttemptOrder,
    /// The Bus is a headless agent's (`kestrel agent`, `kestrel experiment`: its
    /// `session-start` names the author): every turn acts at the instant of the wake it
    /// answers.
    headless: bool,
    /// The last repair attempt since the last turn (its Bus line and the reply as written):
    /// the reply the next turn was routed from.
    reply: Option<(usize, String)>,
}

impl ReplayGate {
    /// Feed a non-turn Bus event at `line`.
    pub fn event(&mut self, line: usize, ev: &crate::bus::Event) -> Result<(), ReplayError> {
        if let crate::bus::Event::SessionStart { author, .. } = ev {
            self.headless = author.is_some();
        }
        if let crate::bus::Event::ViewDelivered { ts, wake, .. } = ev {
            self.delivered = Some((wake.clone(), *ts, line));
        }
        if let crate::bus::Event::DocumentArmed {
            text,
            blake3,
            plans,
            ..
        } = ev
        {
            self.armed.armed(line, text, blake3)?;
            self.scope.plans.extend(plans.iter().cloned());
            if let Ok(doc) = crate::lang::parse(text) {
                for st in &doc.statements {
                    use crate::lang::ast::StatementKind;
                    match &st.kind {
                        StatementKind::View(v) => {
                            self.scope.views.insert(v.name.text.clone());
                        }
                        StatementKind::Wake(w) => {
                            self.scope.wakes.insert(w.name.text.clone());
                        }
                        _ => {}
                    }
                }
            }
        }
        Ok(())
    }

    /// The turn recorded at `line` names `wake`: it must be the wake it answers, the one
    /// whose View was delivered last (a SHOW VIEW's View is delivered under the wake it was
    /// asked at, and a wake that fires while a reply is outstanding delivers nothing, so a
    /// re-ask, a repair and a late answer all name it). A turn a person wrote at the desk
    /// ([`DESK_WAKE`](crate::session::owner::DESK_WAKE)) answers no wake; a turn before any
    /// View names its own.
    pub fn answers(&self, line: usize, wake: &str) -> Result<(), ReplayError> {
        if wake == crate::session::owner::DESK_WAKE {
            return Ok(());
        }
        match &self.delivered {
            Some((w, ts, at)) if w != wake => Err(ReplayError::new(
                line,
                "replay-record",
                format!(
                    "the turn recorded here names wake {wake:?}, but it answers wake {w:?} (whose View was delivered at {ts}, line {at}): a recorded turn names the wake it answers"
                ),
            )),
            _ => Ok(()),
        }
    }

    /// An authored turn answering a wake is recorded after the repair attempt(s) it was
    /// routed from (`session::run` writes them together); only a turn written at the desk
    /// ([`DESK_WAKE`](crate::session::owner::DESK_WAKE): a person's, or a document the desk
    /// opened with) has none. An author's turn without them could not be held to what the
    /// author wrote ([`from_reply`]).
    fn written(&self, line: usize, wake: &str, rec: &RoutedTurn) -> Result<(), ReplayError> {
        if self.reply.is_some()
            || wake == crate::session::owner::DESK_WAKE
            || rec.class() != super::TurnClass::Authored
        {
            return Ok(());
        }
        Err(ReplayError::new(
            line,
            "replay-record",
            format!(
                "the {} turn recorded here answers wake {wake:?} but no repair attempt before it records the reply it was routed from",
                rec.outcome.name()
            ),
        ))
    }

    /// The turn recorded at `line`, at tape time `ts`, answering `wake` (which
    /// [`answers`](Self::answers) checked): no turn is recorded before the View it answers
    /// was delivered, and a headless agent's turn (a Bus whose `session-start` names its
    /// author) is recorded at the wake's own instant, since `kestrel agent` acts on a reply
    /// there; only the desk's co-pilot answers later, and its Bus names no author. A time
    /// moved on a saved turn would otherwise be ignored or, later, replayed and graded as
    /// a delayed act the session never made.
    pub fn arrived(
        &self,
        line: usize,
        wake: &str,
        ts: crate::market::Ts,
    ) -> Result<(), ReplayError> {
        if wake == crate::session::owner::DESK_WAKE {
            return Ok(());
        }
        let Some((w, at, view)) = &self.delivered else {
            return Ok(());
        };
        if w != wake {
            return Ok(());
        }
        if ts < *at {
            return Err(ReplayError::new(
                line,
                "replay-record",
                format!(
                    "the turn recorded here at {ts} answers wake {wake:?}, whose View was delivered later, at {at} (line {view}): a turn is recorded when or after its wake fires"
                ),
            ));
        }
        if self.headless && ts != *at {
            return Err(ReplayError::new(
                line,
                "replay-record",
                format!(
                    "the turn recorded here at {ts} answers wake {wake:?}, which fired at {at} (line {view}): a headless agent's turn acts at its wake's instant"
                ),
            ));
        }
        Ok(())
    }

    /// The wake whose View was delivered last and its tape time: the wake the next turn
    /// answers ([`answers`](Self::answers) checks it names it).
    pub fn delivered(&self) -> Option<(&str, crate::market::Ts)> {
        self.delivered.as_ref().map(|(w, ts, _)| (w.as_str(), *ts))
    }

    /// Is the turn recorded next, naming `wake`, the person's at the desk? A turn the desk
    /// wrote for the person ([`DESK_WAKE`](crate::session::owner::DESK_WAKE), with no repair
    /// attempt before it: nobody was asked) is: what the person typed (`human`) and the
    /// documents the desk armed for them at the open (`--plans`, or the example plans bare
    /// `kestrel` arms: `file`). An author's turn has its attempts whatever its wake is named,
    /// but for a provider error, which a person's turn never is; a model's is never the
    /// person's. (Before 2026-12-06 only a `human` turn was the person's, and the opening
    /// documents' turns were refused as an author's supersede that never armed.)
    pub fn persons(&self, wake: &str, turn: &RoutedTurn) -> bool {
        use super::AuthorKind;
        turn.author == AuthorKind::Human
            || (wake == crate::session::owner::DESK_WAKE
                && self.reply.is_none()
                && turn.author != AuthorKind::Model
                && !matches!(turn.outcome, Outcome::ProviderError { .. }))
    }

    /// Admit the turn recorded at `line`, and hold it to the reply its last repair attempt
    /// recorded, if it has one ([`from_reply`]). `persons`: the person's turn at the desk
    /// ([`persons`](Self::persons)), tied to the document armed just before it.
    pub fn turn(
        &mut self,
        line: usize,
        rec: &RoutedTurn,
        persons: bool,
    ) -> Result<RoutedTurn, ReplayError> {
        let mut ctx = TurnContext::new(rec.phase, rec.profile, rec.author);
        ctx.views_requested = self.views_requested;
        ctx.standing = Some(self.scope.clone());
        let t = readmit(rec, &ctx, line)?;
        if let Some((at, written)) = self.reply.take() {
            from_reply(&t, &written, &ctx, line, at)?;
        }
        match &t.outcome {
            Outcome::Supersede { .. } if persons => {
                self.armed.armed_before(line, &t.kestrel)?;
            }
            Outcome::Supersede { .. } => self.armed.supersede(line, &t.kestrel)?,
            _ => self.armed.unmatched()?,
        }
        self.armed.before = None;
        if matches!(t.outcome, Outcome::ViewRequest { .. }) {
            self.views_requested += 1;
        } else {
            self.views_requested = 0;
        }
        Ok(t)
    }

    /// Feed the Bus event at `line`, whatever it is: a repair attempt must be the one due
    /// ([`AttemptOrder`](super::report::AttemptOrder), as `kestrel errors report` holds
    /// it); a turn is checked against the wake it answers ([`answers`](Self::answers)) and
    /// admitted ([`turn`](Self::turn)), and comes back admitted; any other event is fed to
    /// [`event`](Self::event). The one walk that replay (`session::Recorded`) and a grade of
    /// a saved agent (`grade::agent`) share.
    pub fn record(
        &mut self,
        line: usize,
        ev: &crate::bus::Event,
    ) -> Result<Option<RoutedTurn>, ReplayError> {
        self.event(line, ev)?;
        match ev {
            crate::bus::Event::Repair { attempt, .. } => {
                self.attempts
                    .attempt(line, attempt.attempt)
                    .map_err(out_of_order)?;
                self.reply = Some((line, attempt.written.clone()));
                Ok(None)
            }
            crate::bus::Event::Turn { ts, wake, turn } => {
                self.attempts.turn();
                self.answers(line, wake)?;
                self.arrived(line, wake, *ts)?;
                self.written(line, wake, turn)?;
                let persons = self.persons(wake, turn);
                self.turn(line, turn, persons).map(Some)
            }
            // A proposal rejected (co-pilot) or left undecided at the close ends its ask as
            // a turn does: its attempts (written before it since 2026-12-06) are complete,
            // nothing routed, and the next ask starts over.
            crate::bus::Event::TurnRejected { .. } => {
                self.attempts.turn();
                self.reply = None;
                self.views_requested = 0;
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// The end of the Bus: a supersede must have armed, and no repair attempts may be left
    /// without their turn.
    pub fn finish(&mut self) -> Result<(), ReplayError> {
        self.armed.unmatched()?;
        self.attempts.finish().map_err(out_of_order)
    }
}

/// Repair attempts out of order (swapped, dropped, or with no turn after them): the record
/// is not the one the session wrote.
fn out_of_order(e: super::report::BusFileError) -> ReplayError {
    ReplayError::new(e.line, "replay-record", e.message)
}

#[cfg(test)]
mod tests {
    use super::first_difference;

    /// A person's supersede is armed before it is recorded (the desk's order); an author's
    /// after. Each is tied to its own document, and a person's turn with no document just
    /// before it, or another one, is refused.
    #[test]
    fn a_persons_supersede_is_tied_to_the_document_armed_before_it() {
        let h = |t: &str| super::text_hash(t);
        let mut c = super::ArmedCheck::default();
        c.armed(3, "PLAN a", &h("PLAN a")).unwrap();
        c.armed_before(4, "PLAN a").unwrap();
        // The author's order still holds after it.
        c.supersede(6, "PLAN b").unwrap();
        c.armed(7, "PLAN b", &h("PLAN b")).unwrap();
        // What was armed for the author is not a person's document.
        let e = c.armed_before(9, "PLAN b").unwrap_err();
        assert_eq!((e.line, e.rule), (9, "replay-hash"), "{}", e.message);
        let mut c = super::ArmedCheck::default();
        c.armed(3, "PLAN a", &h("PLAN a")).unwrap();
        let e = c.armed_before(4, "PLAN z").unwrap_err();
        assert!(
            e.message.contains("is not the document armed at line 3"),
            "{}",
            e.message
        );
    }

    /// The person's turns at the desk are those it wrote with nobody asked: typed (`human`)
    /// or the documents armed at the open (`file`, wake `desk`, no repair attempt before
    /// it). An author's turn (attempts before it, or a model's) at a WAKE named `desk` is not.
    #[test]
    fn a_file_turn_at_the_desk_with_no_attempt_is_the_persons() {
        use crate::turn::{AuthorKind, Reply, TurnContext, WakePhase};
        let turn = |kind| {
            let ctx = TurnContext::new(WakePhase::Open, crate::turn::Profile::AuthoringV2, kind);
            crate::turn::route(&Reply::text("STAND-DOWN enough\n"), &ctx)
        };
        let mut g = super::ReplayGate::default();
        assert!(g.persons("desk", &turn(AuthorKind::File)));
        assert!(g.persons("open", &turn(AuthorKind::Human)));
        assert!(!g.persons("open", &turn(AuthorKind::File)));
        assert!(!g.persons("desk", &turn(AuthorKind::Model)));
        g.reply = Some((3, "STAND-DOWN enough\n".into()));
        assert!(!g.persons("desk", &turn(AuthorKind::File)));
    }

    /// Texts that differ only in their last line end quoted an empty line ("ends before
    /// line 7 of the canonical text: ``").
    #[test]
    fn a_difference_in_the_last_line_end_is_named() {
        assert_eq!(
            first_difference("PLAN a\n  WHEN x", "PLAN a\n  WHEN x\n"),
            "the recorded text lacks the canonical text's final line end"
        );
        assert_eq!(
            first_difference("PLAN a\n\n\n", "PLAN a\n"),
            "the recorded text has line ends after the canonical text's last"
        );
        assert_eq!(
            first_difference("PLAN   a\n", "PLAN a\n"),
            "line 1 differs: recorded `PLAN   a` canonical `PLAN a`"
        );
    }
}
