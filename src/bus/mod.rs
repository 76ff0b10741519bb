//! The event Bus: typed events, the append-only JSON Lines log with canonical serialisation,
//! the [`Blotter`] (a pure projection of the Bus) and the determinism hash.
//!
//! # Canonical form
//!
//! Each event is one line: a JSON object with its keys sorted (serde_json's map is ordered),
//! no insignificant whitespace, a final `\n`. Prices and money are exact decimal strings
//! (`"1.25"`, `"-37.50"`, from the fixed-point [`Px`]); times are `HH:MM:SS.mmm` strings;
//! quantities and ids are integers. No float is ever printed, so the bytes are the same on
//! every machine.
//!
//! The **determinism hash** is the BLAKE3 hash of the Bus bytes, in lowercase hex.

pub mod blotter;
pub mod canon;

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

pub use blotter::Blotter;

use crate::market::{Px, Ts};

/// Serde helpers: a [`Px`] as an exact decimal string.
pub mod px_str {
    use super::*;
    use serde::{Deserializer, Serializer};

    /// Serialise as `Px`'s exact decimal display.
    pub fn serialize<S: Serializer>(p: &Px, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(p)
    }

    /// Parse an exact decimal string (at most 4 decimals).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Px, D::Error> {
        let s = String::deserialize(d)?;
        parse_px(&s).ok_or_else(|| serde::de::Error::custom(format!("bad decimal {s:?}")))
    }
}

/// Serde helpers: a [`Ts`] as `HH:MM:SS.mmm`.
pub mod ts_str {
    use super::*;
    use serde::{Deserializer, Serializer};

    /// Serialise as `HH:MM:SS.mmm`.
    pub fn serialize<S: Serializer>(t: &Ts, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(t)
    }

    /// Parse `HH:MM:SS.mmm`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Ts, D::Error> {
        let s = String::deserialize(d)?;
        Ts::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("bad time {s:?}")))
    }
}

/// Parse an exact decimal (`-12.5`, `0.0125`, `7`) with at most 4 decimals into a [`Px`].
pub fn parse_px(s: &str) -> Option<Px> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let (int, frac) = match body.split_once('.') {
        Some((i, f)) => (i, f),
        None => (body, ""),
    };
    if int.is_empty() || frac.len() > 4 || !int.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if !frac.bytes().all(|c| c.is_ascii_digit()) || (body.contains('.') && frac.is_empty()) {
        return None;
    }
    let mut raw: i64 = int.parse::<i64>().ok()?.checked_mul(10_000)?;
    let mut scale = 1000;
    for c in frac.bytes() {
        raw = raw.checked_add(i64::from(c - b'0') * scale)?;
        scale /= 10;
    }
    Some(Px(if neg { -raw } else { raw }))
}

/// Buy or sell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BusSide {
    /// Buy.
    Buy,
    /// Sell.
    Sell,
}

impl BusSide {
    /// +1 for a buy, -1 for a sell.
    pub fn sign(self) -> i64 {
        match self {
            BusSide::Buy => 1,
            BusSide::Sell => -1,
        }
    }
}

/// A plan's lifecycle state (RUNTIME.md §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlanState {
    /// Waiting to be armed by another plan's `ARM` clause.
    Dormant,
    /// Armed: WHEN is evaluated on every tick.
    Armed,
    /// WHEN was true; entry tickets were sent.
    Fired,
    /// Entry orders rest in the book.
    Resting,
    /// The plan holds a position.
    Filled,
    /// ttl passed: no new entries; inventory is still managed.
    Expired,
    /// STAND-DOWN (or CANCEL): no new entries; inventory rides its TP / EXIT.
    StoodDown,
    /// INVALIDATE (or a POD halt): no new entries.
    Halted,
    /// De-armed before acting (e.g. a predicate on a symbol the tape lacks).
    DeArmed,
    /// Nothing left to do: flat and no resting orders, entries closed.
    Done,
}

/// Why an order exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OrderRole {
    /// DO / ALSO / RELOAD: opens or adds.
    Entry,
    /// TP: takes profit.
    Tp,
    /// EXIT: active out.
    Exit,
    /// Flatten after INVALIDATE `-> halt` or a POD halt.
    Flatten,
}

/// The author of a session, as its `session-start` records it: enough to tell the arms
/// of an experiment apart (`kestrel errors report` splits by [`AuthorIdentity::arm`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthorIdentity {
    /// `openai`, `command`.
    pub kind: String,
    /// The model name (or the command line).
    pub model: String,
    /// Is the exported grammar constraining decoding?
    pub constrained: bool,
    /// The prompt profile's name.
    pub profile: String,
    /// blake3 of the profile's template, hex.
    pub prompt_hash: String,
    /// The output-token limit of one request, where the author has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// The sampling temperature sent to a model, as its shortest round-trip decimal text
    /// (`"0.7"`, `"1.5"`, `"0"`), as the config identity holds it (docs/turns.md). Absent for
    /// a command author and in a Bus written before 2026-12-05, which keeps its bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<String>,
    /// The model server's base URL as messages show it (no userinfo, query values
    /// `[redacted]`): where the turns were written. Not part of the arm (see [`Self::arm`]).
    /// Absent for a command author and in an older Bus.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

impl AuthorIdentity {
    /// One line naming the arm: `kind model profile constrained=on|off [max_tokens=N]
    /// [temperature=T]`. The server is not in it: an arm is the condition the turns were
    /// written under, and one model at one setting served from another port or host is the
    /// same condition (two servers that serve different models under one name are told
    /// apart by `--model`, which a llama.cpp server does not check). A Bus without a
    /// temperature (a command author, an older file) names its arm as before.
    pub fn arm(&self) -> String {
        let mut s = format!(
            "{} {} {} constrained={}",
            self.kind,
            self.model,
            self.profile,
            if self.constrained { "on" } else { "off" }
        );
        if let Some(m) = self.max_tokens {
            s.push_str(&format!(" max_tokens={m}"));
        }
        if let Some(t) = &self.temperature {
            s.push_str(&format!(" temperature={t}"));
        }
        s
    }

    /// The identity an attached author's [`AuthorInfo`](crate::author::AuthorInfo) gives,
    /// under `profile`: what `kestrel agent` and `kestrel experiment` write on `session-start`.
    pub fn of(info: crate::author::AuthorInfo, profile: crate::turn::Profile) -> AuthorIdentity {
        AuthorIdentity {
            kind: info.kind.to_string(),
            model: info.model,
            constrained: info.constrained,
            profile: profile.name().to_string(),
            prompt_hash: profile.prompt_hash(),
            max_tokens: info.max_tokens,
            temperature: info.temperature.map(|t| format!("{t}")),
            server: info.server,
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One event of the Bus. Every event carries the tape time `ts` it happened at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Event {
    /// The first event: what is being replayed, under which fill model and R.
    SessionStart {
        /// Tape name (header `name`).
        tape: String,
        /// Session date.
        date: String,
        /// Fill model name and version, e.g. `strict-cross-v1`.
        fill_model: String,
        /// Dollars per 1R.
        #[serde(with = "px_str")]
        r_usd: Px,
        /// Session open.
        #[serde(with = "ts_str")]
        open: Ts,
        /// Session close.
        #[serde(with = "ts_str")]
        close: Ts,
        /// Who authors the session's turns, where one attached author does (`kestrel
        /// agent`); absent otherwise, so older Bus files keep their bytes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        author: Option<AuthorIdentity>,
        /// The session's number on a v2 tape (1, 2, …; every event up to the next
        /// `session-start` belongs to it); absent on a v1 tape, whose Bus is unchanged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<u32>,
    },
    /// A document was armed: its canonical text and the BLAKE3 of that text.
    DocumentArmed {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// Canonical text (`lang::print`).
        text: String,
        /// BLAKE3 of `text`, hex.
        blake3: String,
        /// The PLAN names it declares, in order.
        plans: Vec<String>,
        /// Of those, the plans sent again unchanged and kept as they stand (same canonical
        /// text, comments aside, as the owner's standing plan of the name): nothing was stood
        /// down or armed for them. Absent when none was.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        kept: Vec<String>,
        /// Who armed it, where a person and an agent share the book (the desk); absent in
        /// a headless run with one author.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        owner: Option<String>,
    },
    /// A plan changed state.
    PlanState {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// Plan name.
        plan: String,
        /// New state.
        state: PlanState,
        /// Why (always given for de-arm, halt, stand-down, expiry).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A clause's trigger was true and it acted: `WHEN`, `RELOAD#n`, `TP#n`, `EXIT#n`,
    /// `INVALIDATE#n`, `CANCEL-IF#n` (n counts clauses of that kind from 1), or `STOP`: the
    /// engine kept the stop it assumed for shares bought with none written (docs/runtime.md,
    /// "Risk").
    PlanFired {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// Plan name.
        plan: String,
        /// Which clause.
        clause: String,
    },
    /// An order was placed.
    OrderPlaced {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// Order id (1, 2, ... in placement order).
        order: u64,
        /// Plan name.
        plan: String,
        /// Clause that placed it (`DO#1`, `ALSO#1`, `RELOAD#1`, `TP#1`, `EXIT#1`, `FLATTEN`).
        clause: String,
        /// Role.
        role: OrderRole,
        /// Instrument key, e.g. `SPY 2025-04-09 500 C` or `SPY shares`.
        leg: String,
        /// Side.
        side: BusSide,
        /// Quantity (contracts or shares).
        qty: u64,
        /// Limit price.
        #[serde(with = "px_str")]
        limit: Px,
        /// Contract multiplier (100 for options, 1 for shares).
        mult: u32,
    },
    /// A resting order's limit changed (`peg`, `esc`).
    OrderRepriced {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// Order id.
        order: u64,
        /// New limit.
        #[serde(with = "px_str")]
        limit: Px,
        /// `peg` or `esc#n` (borrowed for `peg`: no allocation for the line a pegged order
        /// writes at nearly every tick).
        reason: std::borrow::Cow<'static, str>,
    },
    /// A resting order was pulled.
    OrderCancelled {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// Order id.
        order: u64,
        /// Why.
        reason: String,
    },
    /// An order filled (whole quantity).
    Fill {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// Order id.
        order: u64,
        /// Plan name.
        plan: String,
        /// Instrument key.
        leg: String,
        /// Side.
        side: BusSide,
        /// Quantity.
        qty: u64,
        /// Fill price.
        #[serde(with = "px_str")]
        px: Px,
        /// Contract multiplier.
        mult: u32,
        /// The book it filled against was the tape's quote (v2 tapes), not the model's;
        /// absent (false) on a v1 tape, so v1 Bus bytes are unchanged.
        #[serde(default, skip_serializing_if = "is_false")]
        quoted: bool,
    },
    /// L0 risk reduced a ticket's quantity to fit a budget.
    Clamp {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// Plan name.
        plan: String,
        /// Clause.
        clause: String,
        /// Quantity asked.
        from_qty: u64,
        /// Quantity allowed.
        to_qty: u64,
        /// Which budget bound it (`plan`, `book <name>`).
        budget: String,
        /// Human-readable arithmetic.
        reason: String,
        /// The resting order whose re-price (`esc`, `peg`) it scaled; absent for a ticket
        /// clamped before it was placed (so those lines keep their bytes).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        order: Option<u64>,
    },
    /// L0 risk refused a ticket.
    Veto {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// Plan name.
        plan: String,
        /// Clause.
        clause: String,
        /// Which budget (or other rule) refused it.
        budget: String,
        /// Why.
        reason: String,
        /// The resting order whose re-price (`esc`, `peg`) it refused (the order is then
        /// cancelled); absent for a ticket refused before it was placed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        order: Option<u64>,
    },
    /// A position was settled at the close (0dte options at intrinsic).
    Settlement {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// Plan name.
        plan: String,
        /// Instrument key.
        leg: String,
        /// Signed quantity settled (positive = long).
        qty: i64,
        /// Settlement price.
        #[serde(with = "px_str")]
        px: Px,
        /// Contract multiplier.
        mult: u32,
    },
    /// A position was marked (end of session for positions that do not settle): open P&L.
    Mark {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// Plan name.
        plan: String,
        /// Instrument key.
        leg: String,
        /// Mark price (fair on the tick grid).
        #[serde(with = "px_str")]
        px: Px,
    },
    /// A headline from the tape (the runtime acts on it through `headline` predicates).
    Headline {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// Text.
        text: String,
    },
    /// A WAKE fired: its trigger became true, within its budget, first by priority at this
    /// instant. The session delivers its View and asks the author.
    WakeFired {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// Wake name.
        wake: String,
        /// The trigger, as canonical text.
        why: String,
        /// The View it delivers (empty: the default view).
        deliver: String,
        /// Priority (higher first).
        priority: i64,
        /// Wakes of this name fired today, this one included.
        used: u64,
    },
    /// A WAKE whose trigger became true but did not fire: its budget of wakes per day was
    /// spent, or a higher-priority wake fired at the same instant.
    WakeSuppressed {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// Wake name.
        wake: String,
        /// Why it did not fire.
        reason: String,
    },
    /// A View delivered to the author at a wake: the Frame exactly as sent.
    ViewDelivered {
        /// Tape time (the frozen cutoff of the Frame).
        #[serde(with = "ts_str")]
        ts: Ts,
        /// The wake that asked (`open` for the OPEN wake).
        wake: String,
        /// The View's name.
        view: String,
        /// cl100k tokens of the Frame.
        tokens: u64,
        /// What the budget cut.
        dropped: Vec<String>,
        /// The Frame text.
        frame: String,
    },
    /// An author's routed turn (canonical: the routed record, never the raw reply).
    Turn {
        /// Tape time the reply arrived (and acted).
        #[serde(with = "ts_str")]
        ts: Ts,
        /// The wake it answers.
        wake: String,
        /// The routed turn, typed: a Bus that does not read back as one is refused where
        /// it is read, by the one reader every consumer shares.
        turn: Box<crate::turn::RoutedTurn>,
    },
    /// An agent's turn a person rejected in co-pilot: it was never routed into the book.
    TurnRejected {
        /// Tape time of the rejection.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// The wake it answered.
        wake: String,
        /// Who rejected it (`human`, or `detached` when the author went away first).
        by: String,
        /// The outcome the router gave the turn (what was rejected).
        outcome: String,
    },
    /// One attempt of a bounded repair loop (what was written, the error, whether the next
    /// attempt parsed).
    Repair {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// The wake it answers.
        wake: String,
        /// The attempt, typed.
        attempt: crate::turn::repair::RepairAttempt,
    },
    /// STAND-DOWN act: every plan de-armed; inventory rides its TP / EXIT.
    StandDown {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// Reason as written.
        reason: String,
        /// Whose book was de-armed (an agent's STAND-DOWN de-arms its own plans only);
        /// absent when the whole book was.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        owner: Option<String>,
    },
    /// CANCEL act on a plan by name.
    Cancel {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// The target name.
        target: String,
        /// What it did (or why it did nothing).
        outcome: String,
    },
    /// POD day-loss breached: every plan halted and flattened.
    PodHalt {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// Pod name.
        pod: String,
        /// Loss at the breach, dollars (positive).
        #[serde(with = "px_str")]
        loss_usd: Px,
        /// Day-loss limit, dollars.
        #[serde(with = "px_str")]
        limit_usd: Px,
    },
    /// A plan's maximum adverse excursion over the session (written at the end).
    Excursion {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// Plan name.
        plan: String,
        /// Worst open-plus-realised P&L seen, dollars (≤ 0).
        #[serde(with = "px_str")]
        mae_usd: Px,
    },
    /// Something the runtime could not do (never a crash).
    Error {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// Plan, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        plan: Option<String>,
        /// What went wrong.
        message: String,
    },
    /// The last event.
    SessionEnd {
        /// Tape time.
        #[serde(with = "ts_str")]
        ts: Ts,
        /// Tape events replayed.
        tape_events: u64,
    },
}

impl Event {
    /// Chatter: an event that repeats as a stream while nothing is decided (a working
    /// order's re-price, a mark, a wake's suppression, a worst excursion). The desk's Log
    /// folds it into runs and lets the oldest of it go first; every other event (a fire, a
    /// fill, a turn, a risk decision) it keeps from the open.
    pub fn is_chatter(&self) -> bool {
        matches!(
            self,
            Event::OrderRepriced { .. }
                | Event::Mark { .. }
                | Event::WakeSuppressed { .. }
                | Event::Excursion { .. }
        )
    }
}

/// The canonical line of an event (sorted keys, exact decimals), with its `\n`.
pub fn canonical_line(ev: &Event) -> Vec<u8> {
    let mut out = Vec::with_capacity(160);
    canon::write_canonical(&mut out, ev);
    out
}

/// The reference serialisation the fast writer must match: serde to a JSON value, written
/// with every object's keys sorted.
pub fn canonical_line_reference(ev: &Event) -> Vec<u8> {
    let v = serde_json::to_value(ev).unwrap_or(serde_json::Value::Null);
    let mut out = Vec::with_capacity(160);
    canon::write_json_sorted(&mut out, &v);
    out.push(b'\n');
    out
}

/// A JSON value as canonical text: compact, every object's keys sorted (whatever features
/// serde_json was built with: a dependency may turn on `preserve_order`).
pub fn canonical_json(v: &serde_json::Value) -> String {
    let mut out = Vec::with_capacity(256);
    canon::write_json_sorted(&mut out, v);
    String::from_utf8(out).unwrap_or_default()
}

/// The refusal of a JSON-lines file (a saved Bus, a desk session file, a reply script) that
/// starts with a UTF-8 byte-order mark. The mark is invisible in an editor, and the JSON
/// parser's "expected value at line 1 column 1" does not name it; an editor that adds one is
/// named instead, as the tape reader and the document parser do.
pub(crate) fn bom_refusal(bytes: &[u8]) -> Option<&'static str> {
    bytes
        .starts_with(crate::market::tape::UTF8_BOM)
        .then_some("the file starts with a UTF-8 byte-order mark (U+FEFF): save it without one")
}

/// The refusal of a blank line in a Bus file (an editor's extra line end, a stray empty
/// line): named as the tape reader names one (`blank-line`), not as the JSON parser's "EOF
/// while parsing a value", which reads as a line cut short.
pub const BLANK_LINE: &str = "blank line (every line must be one Bus event)";

/// Is this line of a Bus file (without its line end) blank: empty or only whitespace?
pub fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// Parse one line of a Bus file (without its line end) into its event; a blank line is
/// [`BLANK_LINE`], anything else that is not an event serde_json's message.
fn parse_bus_line(line: &str) -> Result<Event, String> {
    if is_blank(line) {
        return Err(BLANK_LINE.to_string());
    }
    serde_json::from_str::<Event>(line).map_err(|e| line_error(&e.to_string()))
}

/// The JSON parser's word on one line of a JSON Lines file (a Bus, a reply script, a grade
/// shard), as a reader of the file's line N wants it: its position is a column of that line
/// (not "line 1 column C", which read against "line 4:"), a line that ends inside a value is
/// said to be cut short (a file cut mid-line), and serde's words are said plainly: a name
/// that is not one of those allowed there without serde's list of 25 (`unknown variant
/// `header`, expected one of …`), a missing field, JSON that is not JSON. Before 2026-12-06
/// only the first two were.
pub fn line_error(e: &str) -> String {
    let e = e.replace(" at line 1 column ", " at column ");
    // The message and its position (`at column N`), which most of serde's messages end with.
    let (what, at) = match e.rfind(" at column ") {
        Some(i) if e[i + 11..].bytes().all(|b| b.is_ascii_digit()) => (&e[..i], &e[i + 1..]),
        _ => (e.as_str(), ""),
    };
    let paren = |s: &str| {
        if at.is_empty() {
            s.to_string()
        } else {
            format!("{s} ({at})")
        }
    };
    // The first `name` of a message.
    let quoted = |s: &str| s.split('`').nth(1).unwrap_or_default().to_string();
    if what == "EOF while parsing a value" && at == "at column 0" {
        return "the line is empty".into();
    }
    if let Some(rest) = what.strip_prefix("EOF while parsing ") {
        let at = if at.is_empty() {
            String::new()
        } else {
            format!(" {at}")
        };
        return format!("the line is cut short (it ends inside {rest}{at})");
    }
    if what.starts_with("unknown variant `") {
        let allowed = what.matches('`').count().saturating_sub(2) / 2;
        return paren(&format!(
            "`{}` is none of the {allowed} names allowed there",
            quoted(what)
        ));
    }
    if what.starts_with("unknown field `") {
        return paren(&format!("`{}` is not a field allowed there", quoted(what)));
    }
    if what.starts_with("missing field `") {
        return format!("the field `{}` is missing", quoted(what));
    }
    if what.starts_with("duplicate field `") {
        return paren(&format!(
            "the field `{}` appears twice (a key may appear once in an object)",
            quoted(what)
        ));
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = what.strip_prefix(prefix)
            && let Some((got, want)) = rest.split_once(", expected ")
        {
            return paren(&format!("a value is {got} where {want} is expected"));
        }
    }
    const SYNTAX: [&str; 10] = [
        "expected ",
        "trailing ",
        "key must be ",
        "invalid number",
        "number out of range",
        "control character",
        "invalid escape",
        "invalid unicode",
        "lone leading surrogate",
        "recursion limit",
    ];
    if SYNTAX.iter().any(|p| what.starts_with(p)) {
        let what = match what {
            "expected value" => "no JSON value",
            "trailing characters" => "more after one JSON value",
            w => w,
        };
        let at = if at.is_empty() {
            String::new()
        } else {
            format!(" {at}")
        };
        return format!("it is not JSON ({what}{at})");
    }
    e
}

/// Parse a Bus file's bytes back into events. `Err((line, message))` on the first bad line.
pub fn parse_bus(bytes: &[u8]) -> Result<Vec<Event>, (usize, String)> {
    if let Some(e) = bom_refusal(bytes) {
        return Err((0, e.to_string()));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| (0, e.to_string()))?;
    text.lines()
        .enumerate()
        .map(|(i, l)| parse_bus_line(l).map_err(|e| (i + 1, e)))
        .collect()
}

/// The Bus writer: appends canonical lines to a sink (flushed per event), hashes every byte,
/// and projects each event into the [`Blotter`].
pub struct Bus {
    sink: Option<Box<dyn Write>>,
    hasher: blake3::Hasher,
    bytes: u64,
    count: u64,
    error: Option<String>,
    blotter: Blotter,
    keep: Option<Vec<Event>>,
    /// Bytes not yet fed to the hasher, the lines being written into it: BLAKE3 is fed whole
    /// chunks ([`HASH_CHUNK`]) once at least [`HASH_BLOCK`] bytes are here, rather than one
    /// short line at a time (the hash of the stream is the same).
    unhashed: Vec<u8>,
    /// The authoring cost of every `repair` attempt so far.
    spend: crate::turn::repair::Spend,
}

/// How many Bus bytes are gathered before they are fed to the hasher.
const HASH_BLOCK: usize = 64 * 1024;

/// BLAKE3's chunk: the hasher is fed whole chunks only, so that it compresses them many at
/// once (SIMD across chunks) and is never left a part-chunk to finish one block at a time.
const HASH_CHUNK: usize = 1024;

impl std::fmt::Debug for Bus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bus")
            .field("bytes", &self.bytes)
            .field("count", &self.count)
            .finish()
    }
}

impl Bus {
    /// A Bus that writes to `sink` (or only hashes, with `None`).
    pub fn new(sink: Option<Box<dyn Write>>) -> Bus {
        Bus {
            sink,
            hasher: blake3::Hasher::new(),
            bytes: 0,
            count: 0,
            error: None,
            blotter: Blotter::default(),
            keep: None,
            unhashed: Vec::new(),
            spend: crate::turn::repair::Spend::default(),
        }
    }

    /// Also keep every event in memory (tests, in-process consumers).
    pub fn keeping(mut self) -> Bus {
        self.keep = Some(Vec::new());
        self
    }

    /// Append one event: serialise canonically, hash, write and flush, project.
    ///
    /// The line is written straight into the bytes not yet hashed, which are fed to the
    /// hasher once they reach [`HASH_BLOCK`] (BLAKE3 hashes a stream: where the pieces are
    /// cut does not change the hash).
    pub fn emit(&mut self, ev: Event) {
        let start = self.line_start();
        canon::write_canonical(&mut self.unhashed, &ev);
        self.line_written(start);
        self.blotter.apply(&ev);
        if let Event::Repair { attempt, .. } = &ev {
            self.spend.add(attempt);
        }
        if let Some(k) = self.keep.as_mut() {
            k.push(ev);
        }
    }

    /// [`emit`](Self::emit) of an [`Event::OrderRepriced`], the line a pegged order writes
    /// at nearly every tick: the same bytes, hash and Blotter, with no [`Event`] built,
    /// matched twice and dropped (unless the Bus keeps its events).
    pub fn emit_repriced(
        &mut self,
        ts: Ts,
        order: u64,
        limit: Px,
        reason: std::borrow::Cow<'static, str>,
    ) {
        if self.keep.is_some() {
            return self.emit(Event::OrderRepriced {
                ts,
                order,
                limit,
                reason,
            });
        }
        let start = self.line_start();
        canon::write_repriced(&mut self.unhashed, ts, order, limit, &reason);
        self.line_written(start);
        self.blotter.repriced(order, limit);
    }

    /// Where the next line starts in the bytes not yet hashed.
    #[inline(always)]
    fn line_start(&mut self) -> usize {
        if self.unhashed.capacity() == 0 {
            self.unhashed.reserve_exact(HASH_BLOCK + HASH_CHUNK + 256);
        }
        self.unhashed.len()
    }

    /// Count, write and flush the line written from `start`; hash whole chunks once a block
    /// is gathered.
    #[inline(always)]
    fn line_written(&mut self, start: usize) {
        let line = &self.unhashed[start..];
        self.bytes += line.len() as u64;
        self.count += 1;
        if let Some(w) = self.sink.as_mut()
            && self.error.is_none()
            && let Err(e) = w.write_all(line).and_then(|_| w.flush())
        {
            self.error = Some(e.to_string());
        }
        if self.unhashed.len() >= HASH_BLOCK {
            let whole = self.unhashed.len() / HASH_CHUNK * HASH_CHUNK;
            self.hasher.update(&self.unhashed[..whole]);
            if self.unhashed.capacity() > 4 * HASH_BLOCK {
                // One huge line (a document's text) is not kept as the buffer.
                let mut rest = Vec::with_capacity(HASH_BLOCK + HASH_CHUNK + 256);
                rest.extend_from_slice(&self.unhashed[whole..]);
                self.unhashed = rest;
            } else {
                self.unhashed.drain(..whole);
            }
        }
    }

    /// The determinism hash so far: BLAKE3 of the Bus bytes, hex.
    pub fn hash_hex(&self) -> String {
        if self.unhashed.is_empty() {
            return self.hasher.finalize().to_hex().to_string();
        }
        let mut h = self.hasher.clone();
        h.update(&self.unhashed);
        h.finalize().to_hex().to_string()
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Events written so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The first write error, if any (the Bus keeps hashing and projecting after it).
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Mark an instrument with open positions at the market in the Blotter (not an event:
    /// nothing is written or hashed). See [`Blotter::mark_live`].
    pub fn mark_live(&mut self, leg: &str, px: Px, model: bool) {
        self.blotter.mark_live(leg, px, model);
    }

    /// The authoring cost of every `repair` attempt so far: cl100k tokens written, the
    /// estimates of oversized replies, and the provider's `usage`.
    pub fn spend(&self) -> crate::turn::repair::Spend {
        self.spend
    }

    /// The Blotter projected from every event so far.
    pub fn blotter(&self) -> &Blotter {
        &self.blotter
    }

    /// Kept events (empty unless [`keeping`](Self::keeping)).
    pub fn events(&self) -> &[Event] {
        self.keep.as_deref().unwrap_or(&[])
    }

    /// Flush and give back the sink.
    pub fn into_sink(mut self) -> io::Result<Option<Box<dyn Write>>> {
        if let Some(w) = self.sink.as_mut() {
            w.flush()?;
        }
        Ok(self.sink.take())
    }
}

/// The determinism hash of Bus bytes (BLAKE3, hex).
pub fn hash_bytes(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// serde's words on a line are said plainly, the position a column of the line.
    #[test]
    fn line_errors_say_serdes_words_plainly() {
        let e = |line: &str| {
            let e = serde_json::from_str::<Event>(line).expect_err(line);
            line_error(&e.to_string())
        };
        assert_eq!(e(""), "the line is empty");
        assert_eq!(
            e("{\"type\":\"fil"),
            "the line is cut short (it ends inside a string at column 12)"
        );
        let m = e("{\"type\":\"header\"}");
        assert!(m.starts_with("`header` is none of the "), "{m}");
        assert!(m.ends_with(" names allowed there (at column 16)"), "{m}");
        assert!(!m.contains("expected"), "{m}");
        assert_eq!(e("{\"t\":1}"), "the field `type` is missing");
        assert_eq!(e("hello"), "it is not JSON (no JSON value at column 1)");
        let trailing = serde_json::from_str::<serde_json::Value>("{} x").expect_err("two");
        assert_eq!(
            line_error(&trailing.to_string()),
            "it is not JSON (more after one JSON value at column 4)"
        );
    }

    #[test]
    fn px_strings_round_trip() {
        for s in ["0.00", "1.25", "-37.50", "5002.10", "0.0125"] {
            let p = parse_px(s).unwrap();
            assert_eq!(p.to_string(), s);
        }
        assert_eq!(parse_px("7"), Some(Px(70_000)));
        assert_eq!(parse_px("1.23456"), None);
        assert_eq!(parse_px("1."), None);
        assert_eq!(parse_px("abc"), None);
        assert_eq!(parse_px(""), None);
    }

    /// The hash fed in whole chunks is the hash of the bytes, after every event, across block
    /// boundaries and with lines longer than a block.
    #[test]
    fn buffered_hash_is_the_hash_of_the_bytes() {
        let mut bus = Bus::new(None);
        let mut all = Vec::new();
        for i in 0..600u32 {
            let text = "x".repeat(if i == 300 {
                // Past the size of buffer kept.
                4 * HASH_BLOCK + 7
            } else if i % 97 == 5 {
                HASH_BLOCK + 3
            } else {
                (i % 50) as usize
            });
            let ev = Event::Headline { ts: Ts(i), text };
            all.extend_from_slice(&canonical_line(&ev));
            bus.emit(ev);
            assert_eq!(bus.hash_hex(), hash_bytes(&all), "after event {i}");
        }
        assert_eq!(bus.bytes(), all.len() as u64);
    }

    /// A sink whose bytes the test reads back.
    #[derive(Clone, Default)]
    struct Shared(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// `emit_repriced` writes, hashes and projects what `emit` of the same event does: the
    /// sink's bytes, the hash after every line (across block boundaries), the counts and the
    /// Blotter (the orders' limits), with reasons that take the fast path and ones that
    /// need escaping or are long; a keeping Bus keeps the event.
    #[test]
    fn emit_repriced_is_emit_of_the_event() {
        let (sa, sb) = (Shared::default(), Shared::default());
        let mut a = Bus::new(Some(Box::new(sa.clone())));
        let mut b = Bus::new(Some(Box::new(sb.clone())));
        let mut kept = Bus::new(None).keeping();
        for order in 1..=3u64 {
            let ev = Event::OrderPlaced {
                ts: Ts::hms(9, 30, 0, 0),
                order,
                plan: format!("p{order}"),
                clause: "DO#1".into(),
                role: OrderRole::Entry,
                leg: "SPY 2025-04-09 500 P".into(),
                side: BusSide::Buy,
                qty: 1,
                limit: Px(12_300),
                mult: 100,
            };
            a.emit(ev.clone());
            b.emit(ev.clone());
            kept.emit(ev);
        }
        let reasons = [
            "peg",
            "esc#1",
            "esc#12",
            "covered",
            "pe\"g",
            "\n",
            &"r".repeat(40),
        ];
        let limits = [0, 5, 100, 12_345, 1_000_000, -250, i64::MAX, i64::MIN + 1];
        for i in 0..4_000u64 {
            let ts = Ts(Ts::hms(9, 30, 0, 0).0 + (i * 997 % 50_000_000) as u32);
            let order = [1, 2, 3, 7, u64::MAX][(i % 5) as usize];
            let limit = Px(limits[(i % 8) as usize].saturating_add(i as i64 % 3));
            let reason = reasons[(i % 7) as usize].to_string();
            let ev = Event::OrderRepriced {
                ts,
                order,
                limit,
                reason: reason.clone().into(),
            };
            a.emit(ev.clone());
            b.emit_repriced(ts, order, limit, reason.clone().into());
            kept.emit_repriced(ts, order, limit, reason.into());
            assert_eq!(b.hash_hex(), a.hash_hex(), "after line {i}");
            assert_eq!(kept.events().last(), Some(&ev));
        }
        assert!(a.bytes() > 4 * HASH_BLOCK as u64);
        assert_eq!(*sb.0.borrow(), *sa.0.borrow());
        assert_eq!((b.bytes(), b.count()), (a.bytes(), a.count()));
        assert_eq!(b.blotter(), a.blotter());
        assert_eq!(kept.blotter(), a.blotter());
        assert_eq!(kept.hash_hex(), a.hash_hex());
    }

    #[test]
    fn canonical_lines_sort_keys_and_print_exact_decimals() {
        let ev = Event::Fill {
            ts: Ts::hms(9, 30, 1, 0),
            order: 3,
            plan: "p".into(),
            leg: "SPY shares".into(),
            side: BusSide::Buy,
            qty: 10,
            px: Px(5_001_200),
            mult: 1,
            quoted: false,
        };
        let line = String::from_utf8(canonical_line(&ev)).unwrap();
        assert_eq!(
            line,
            "{\"leg\":\"SPY shares\",\"mult\":1,\"order\":3,\"plan\":\"p\",\"px\":\"500.12\",\"qty\":10,\"side\":\"buy\",\"ts\":\"09:30:01.000\",\"type\":\"fill\"}\n"
        );
        let back = parse_bus(line.as_bytes()).unwrap();
        assert_eq!(back, vec![ev]);
    }
}
