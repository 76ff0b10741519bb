//! Grading the error messages themselves (TURNS.md §2, `kestrel errors report`).
//!
//! Every repair attempt is a `repair` event on the Bus, and the attempts of one ask are
//! followed by its `turn` event. Read back, they say for each coded error an author was shown
//! (`code` + `rule`) how often the very next reply was an authored turn (the message's repair
//! rate), how often the turn still ended in the fail-closed pass, and what the reply after it
//! cost in tokens. Everything here is exact integer counting in a fixed order, so the report
//! is the same bytes whatever order the Bus files are given in.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::repair::RepairAttempt;
use super::{Outcome, RoutedTurn, TurnClass};
use crate::bus::{Event, canonical_json};

/// One ask as the Bus recorded it: every attempt, then the routed turn (or the
/// `turn-rejected` of a co-pilot proposal).
#[derive(Debug, Clone, PartialEq)]
pub struct AskRecord {
    /// The repair attempts, in order (none for a person's turn typed at the desk).
    pub attempts: Vec<RepairAttempt>,
    /// The turn that acted (authored, provider-error, or the fail-closed pass); `None` for a
    /// proposal that was rejected (by the person, or undecided at the close: a
    /// `turn-rejected` after its attempts). Its replies and their cost count; it is no turn.
    pub turn: Option<RoutedTurn>,
}

impl AskRecord {
    /// Was the ask cut short by a signal (`provider-error kind=interrupted`: the person's
    /// Ctrl-C or SIGTERM, or the desk closing)? The author was stopped, it did not fail, so
    /// such an ask is no turn of the author's: `kestrel errors report` counts it only as
    /// `interrupted`, and `kestrel experiment`'s table not at all (it stays on the Bus).
    pub fn cut_by_a_signal(&self) -> bool {
        let cut = crate::author::ProviderErrorKind::Interrupted.name();
        matches!(self.turn.as_ref().map(|t| &t.outcome), Some(Outcome::ProviderError { message })
            if crate::author::ProviderError::parts(message).0 == Some(cut))
    }
}

/// A Bus file that cannot be read: the 1-based line and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BusFileError {
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

fn bad(line: usize, message: impl Into<String>) -> BusFileError {
    BusFileError {
        line,
        message: message.into(),
    }
}

/// The order a Bus records one ask in: its repair attempts numbered from 0, one after
/// another, then the ask's `turn` (`session::run` writes them so, at once). Held by
/// [`read_asks`] and by a replay of the Bus (`turn::admit::ReplayGate`), so a Bus whose
/// attempts were swapped, dropped or left without their turn is refused by both, with the
/// same words.
#[derive(Debug, Clone, Default)]
pub struct AttemptOrder {
    /// Attempts read since the last turn: the number the next attempt must carry.
    due: usize,
    /// The 1-based Bus line of the first of them.
    from: usize,
}

impl AttemptOrder {
    /// The `repair` event at `line` carries attempt number `attempt`.
    pub fn attempt(&mut self, line: usize, attempt: u32) -> Result<(), BusFileError> {
        if attempt as usize != self.due {
            return Err(bad(
                line,
                format!(
                    "repair attempt {attempt} where attempt {} was due",
                    self.due
                ),
            ));
        }
        if self.due == 0 {
            self.from = line;
        }
        self.due += 1;
        Ok(())
    }

    /// A `turn` (or `turn-rejected`) event: the ask's attempts are complete.
    pub fn turn(&mut self) {
        self.due = 0;
    }

    /// The end of the Bus: no attempts may be left without their turn.
    pub fn finish(&self) -> Result<(), BusFileError> {
        if self.due > 0 {
            return Err(bad(
                self.from,
                "repair attempts with no turn after them (the Bus was cut off)",
            ));
        }
        Ok(())
    }
}

/// Read a saved Bus (JSON Lines) into its asks. Fails closed on the first line that is not a
/// Bus event, a `repair` or `turn` record that does not read back, attempts out of order, a
/// file that does not start with `session-start`, or attempts with no turn after them.
pub fn read_asks(bytes: &[u8]) -> Result<Vec<AskRecord>, BusFileError> {
    let mut body = bytes;
    if let Some(b) = body.strip_suffix(b"\n") {
        body = b;
    }
    if body.is_empty() {
        return Err(bad(
            1,
            "empty: a Bus file starts with a session-start event",
        ));
    }
    if let Some(e) = crate::bus::bom_refusal(body) {
        return Err(bad(1, e));
    }
    let mut asks = Vec::new();
    let mut pending: Vec<RepairAttempt> = Vec::new();
    let mut order = AttemptOrder::default();
    for (i, raw) in body.split(|b| *b == b'\n').enumerate() {
        let n = i + 1;
        let line = std::str::from_utf8(raw).map_err(|_| bad(n, "not UTF-8 text"))?;
        if crate::bus::is_blank(line) {
            return Err(bad(n, crate::bus::BLANK_LINE));
        }
        let ev: Event = serde_json::from_str(line).map_err(|e| {
            bad(
                n,
                format!(
                    "not a Bus event: {}",
                    crate::bus::line_error(&e.to_string())
                ),
            )
        })?;
        if n == 1 && !matches!(ev, Event::SessionStart { .. }) {
            return Err(bad(1, "a Bus file starts with a session-start event"));
        }
        match ev {
            Event::Repair { attempt: a, .. } => {
                order.attempt(n, a.attempt)?;
                pending.push(a);
            }
            Event::Turn { turn, .. } => {
                order.turn();
                asks.push(AskRecord {
                    attempts: std::mem::take(&mut pending),
                    turn: Some(*turn),
                });
            }
            // A rejected proposal's attempts (none in a Bus written before 2026-12-06, or
            // for a call nobody answered): an ask with no turn.
            Event::TurnRejected { .. } => {
                order.turn();
                if !pending.is_empty() {
                    asks.push(AskRecord {
                        attempts: std::mem::take(&mut pending),
                        turn: None,
                    });
                }
            }
            _ => {}
        }
    }
    order.finish()?;
    Ok(asks)
}

/// What happened to the turns of one group (all, one author kind, one profile, one file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    /// Turns (`turn` events).
    pub turns: u64,
    /// Turns that ended authored (supersede, stand-down, view-request, cancel, pass).
    pub authored: u64,
    /// Authored turns that needed at least one re-ask.
    pub repaired: u64,
    /// Turns that ended in the terminal fail-closed pass.
    pub fail_closed: u64,
    /// Turns that ended refused without the loop (a person's invalid turn at the desk).
    pub refused: u64,
    /// Turns that ended in a provider error.
    pub provider_error: u64,
    /// Replies written (`repair` events).
    pub attempts: u64,
    /// Re-asks: guided errors shown to the author.
    pub re_asks: u64,
    /// Re-asks whose very next reply was an authored turn.
    pub re_asks_parsed: u64,
    /// Re-asks answered by a provider error rather than a reply.
    pub re_asks_provider_error: u64,
    /// cl100k tokens of every reply written, a bytes/4 estimate for an oversized one kept
    /// apart, and the provider's own `usage` where it sent one
    /// ([`Spend`](super::repair::Spend)).
    pub spend: super::repair::Spend,
    /// Asks a signal cut short ([`AskRecord::cut_by_a_signal`]): counted here and nowhere
    /// else (not as turns, not as provider errors, their replies not as replies), as
    /// `kestrel experiment`'s table leaves them out.
    pub interrupted: u64,
    /// Co-pilot proposals rejected (by the person, or undecided at the close) with their
    /// attempts on the Bus: not turns, but their replies, re-asks and tokens count above.
    pub rejected: u64,
}

impl Totals {
    fn add(&mut self, ask: &AskRecord) {
        if ask.cut_by_a_signal() {
            self.interrupted += 1;
            return;
        }
        let re_asks = ask.attempts.len().saturating_sub(1) as u64;
        match &ask.turn {
            None => self.rejected += 1,
            Some(turn) => {
                self.turns += 1;
                match (&turn.outcome, turn.class()) {
                    (Outcome::Pass { fail_closed: true }, _) => self.fail_closed += 1,
                    (_, TurnClass::Authored) => {
                        self.authored += 1;
                        if re_asks > 0 {
                            self.repaired += 1;
                        }
                    }
                    (_, TurnClass::ProviderError) => self.provider_error += 1,
                    (_, TurnClass::Invalid) => self.refused += 1,
                }
            }
        }
        self.attempts += ask.attempts.len() as u64;
        self.re_asks += re_asks;
        for next in ask.attempts.iter().skip(1) {
            match next_kind(next) {
                Next::Parsed => self.re_asks_parsed += 1,
                Next::ProviderError => self.re_asks_provider_error += 1,
                Next::Refused => {}
            }
        }
        for a in &ask.attempts {
            self.spend.add(a);
        }
    }

    fn json(&self) -> Value {
        let mut v = self.json_turns();
        // Only where a proposal was rejected with its attempts: reports of other files
        // keep their bytes.
        if self.rejected > 0 {
            v["rejected"] = Value::from(self.rejected);
        }
        v
    }

    fn json_turns(&self) -> Value {
        json!({
            "turns": self.turns,
            "authored": self.authored,
            "repaired": self.repaired,
            "fail_closed": self.fail_closed,
            "refused": self.refused,
            "provider_error": self.provider_error,
            "attempts": self.attempts,
            "re_asks": self.re_asks,
            "re_asks_parsed": self.re_asks_parsed,
            "re_asks_provider_error": self.re_asks_provider_error,
            "repair_rate": rate(self.re_asks_parsed, self.re_asks - self.re_asks_provider_error),
            "tokens": self.spend.tokens,
            "tokens_estimated": self.spend.tokens_estimated,
            "provider_attempts": self.spend.provider_attempts,
            "provider_prompt_tokens": self.spend.provider_prompt_tokens,
            "provider_completion_tokens": self.spend.provider_completion_tokens,
            "interrupted": self.interrupted,
        })
    }
}

/// How the reply after a re-ask went.
enum Next {
    Parsed,
    Refused,
    ProviderError,
}

fn next_kind(a: &RepairAttempt) -> Next {
    match a.outcome.as_str() {
        "invalid" | "truncated" => Next::Refused,
        "provider-error" => Next::ProviderError,
        _ => Next::Parsed,
    }
}

/// One coded error (`code`, `rule`) across every Bus read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorStats {
    /// `PARSE`, `TURN`, `ENVELOPE`, `TRUNCATED`.
    pub code: String,
    /// The rule name (`syntax`, `menu`, `turn-mix`, ...).
    pub rule: String,
    /// Refused replies that carried it (counted once per reply).
    pub refused: u64,
    /// Of those, the ones the author was re-asked with (the rest ended the loop: its
    /// budget was spent, so the message was never shown).
    pub shown: u64,
    /// Re-asks answered by a provider error instead of a reply (not the message's fault).
    pub provider_error: u64,
    /// Re-asks whose very next reply was an authored turn.
    pub parsed_next: u64,
    /// Re-asks after which the turn still ended in the fail-closed pass.
    pub fail_closed: u64,
    /// cl100k tokens of the reply written after each re-ask.
    pub next_tokens: Vec<u64>,
    /// Its messages (shown or not), and how often each.
    pub messages: BTreeMap<String, u64>,
}

impl ErrorStats {
    /// Re-asks that got a reply (shown less provider errors).
    pub fn replied(&self) -> u64 {
        self.shown - self.provider_error
    }

    /// The most frequent message (ties: the first in byte order).
    pub fn example(&self) -> &str {
        let mut best: Option<(&String, u64)> = None;
        for (m, n) in &self.messages {
            if best.is_none_or(|(_, b)| *n > b) {
                best = Some((m, *n));
            }
        }
        best.map(|(m, _)| m.as_str()).unwrap_or("")
    }

    fn json(&self) -> Value {
        let vals: Vec<i64> = self
            .next_tokens
            .iter()
            .map(|t| i64::try_from(*t).unwrap_or(i64::MAX))
            .collect();
        let median = if vals.is_empty() {
            Value::Null
        } else {
            let (num, den) = crate::grade::stats::median(&vals);
            decimal(num, den)
        };
        json!({
            "code": self.code,
            "rule": self.rule,
            "refused": self.refused,
            "shown": self.shown,
            "unshown": self.refused - self.shown,
            "replied": self.replied(),
            "provider_error": self.provider_error,
            "parsed_next": self.parsed_next,
            "repair_rate": rate(self.parsed_next, self.replied()),
            "fail_closed": self.fail_closed,
            "fail_closed_rate": rate(self.fail_closed, self.shown),
            "next_tokens_median": median,
            "next_tokens_total": self.next_tokens.iter().sum::<u64>(),
            "example": self.example(),
        })
    }
}

/// `num / den` rounded half up to 4 decimals, as a JSON number; `null` when `den` is 0.
fn rate(num: u64, den: u64) -> Value {
    ratio4(i128::from(num), i128::from(den))
}

/// `num / den` rounded half away from zero to four decimals, as an exact JSON number (`null`
/// when `den` is 0): the rates of `errors report --json` and the percentages of `tokens
/// --json` / `turn --json`, where a float's every digit (`19.767441860465116`) was printed.
pub(crate) fn ratio4(num: i128, den: i128) -> Value {
    if den == 0 {
        return Value::Null;
    }
    let negative = (num < 0) != (den < 0) && num != 0;
    let (n, d) = (num.unsigned_abs(), den.unsigned_abs());
    let scaled = (n * 20_000 + d) / (2 * d);
    let sign = if negative && scaled > 0 { "-" } else { "" };
    number(&format!("{sign}{}.{:04}", scaled / 10_000, scaled % 10_000))
}

fn decimal(num: i128, den: i128) -> Value {
    if den == 2 {
        number(&format!("{}.{}", num / 2, if num % 2 == 0 { 0 } else { 5 }))
    } else {
        number(&num.to_string())
    }
}

/// An exact decimal string as a JSON number: an integer when it has no fraction, else the
/// shortest float that prints back as the same decimal.
fn number(s: &str) -> Value {
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    };
    if let Ok(i) = s.parse::<u64>() {
        return Value::from(i);
    }
    if let Ok(i) = s.parse::<i64>() {
        return Value::from(i);
    }
    s.parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

/// The aggregate over every Bus file read.
#[derive(Debug, Clone, Default)]
pub struct ErrorsReport {
    /// Per `(code, rule)`.
    pub errors: BTreeMap<(String, String), ErrorStats>,
    /// Every turn.
    pub totals: Totals,
    /// Per author kind (`human`, `model`, `file`), as the turn records carry it.
    pub by_author: BTreeMap<String, Totals>,
    /// Per prompt profile.
    pub by_profile: BTreeMap<String, Totals>,
    /// Per arm: the author identity a Bus's `session-start` records
    /// (`crate::bus::AuthorIdentity::arm`); files without one are in no arm.
    pub by_arm: BTreeMap<String, Totals>,
    /// Per file, by path.
    pub files: BTreeMap<String, Totals>,
}

/// The arm a saved Bus's `session-start` names (`None`: it records no author).
pub fn read_arm(bytes: &[u8]) -> Option<String> {
    let first = bytes.split(|b| *b == b'\n').next()?;
    match serde_json::from_slice::<Event>(first).ok()? {
        Event::SessionStart {
            author: Some(a), ..
        } => Some(a.arm()),
        _ => None,
    }
}

impl ErrorsReport {
    /// Add one file's asks, counted in `arm` too when the file names one.
    pub fn add_file_arm(&mut self, path: &str, arm: Option<&str>, asks: &[AskRecord]) {
        if let Some(arm) = arm {
            let t = self.by_arm.entry(arm.to_string()).or_default();
            for ask in asks {
                t.add(ask);
            }
        }
        self.add_file(path, asks);
    }

    /// Add one file's asks.
    pub fn add_file(&mut self, path: &str, asks: &[AskRecord]) {
        let mut file = self.files.remove(path).unwrap_or_default();
        for ask in asks {
            file.add(ask);
            self.totals.add(ask);
            // A rejected proposal records no turn, so no author kind nor profile: it is
            // counted in `all`, its file and its arm only.
            if let Some(turn) = &ask.turn {
                self.by_author
                    .entry(turn.author.name().to_string())
                    .or_default()
                    .add(ask);
                self.by_profile
                    .entry(turn.profile.name().to_string())
                    .or_default()
                    .add(ask);
            }
            self.add_errors(ask);
        }
        self.files.insert(path.to_string(), file);
    }

    fn add_errors(&mut self, ask: &AskRecord) {
        if ask.cut_by_a_signal() {
            // Not the author's: the experiment's table counts none of its replies either.
            return;
        }
        let fail_closed = matches!(
            ask.turn.as_ref().map(|t| &t.outcome),
            Some(Outcome::Pass { fail_closed: true })
        );
        for (i, a) in ask.attempts.iter().enumerate() {
            let next = ask.attempts.get(i + 1);
            // One count per reply for each (code, rule) it carried; the example is the
            // first error of that kind in the reply.
            let mut seen: BTreeMap<(String, String), &str> = BTreeMap::new();
            for e in &a.errors {
                seen.entry((e.code.clone(), e.rule.clone()))
                    .or_insert(e.message.as_str());
            }
            for (key, message) in seen {
                let s = self
                    .errors
                    .entry(key.clone())
                    .or_insert_with(|| ErrorStats {
                        code: key.0.clone(),
                        rule: key.1.clone(),
                        ..ErrorStats::default()
                    });
                s.refused += 1;
                *s.messages.entry(message.replace('\n', " ")).or_insert(0) += 1;
                let Some(next) = next else { continue };
                s.shown += 1;
                match next_kind(next) {
                    Next::Parsed => s.parsed_next += 1,
                    Next::ProviderError => s.provider_error += 1,
                    Next::Refused => {}
                }
                if !matches!(next_kind(next), Next::ProviderError) {
                    s.next_tokens.push(next.tokens as u64);
                }
                if fail_closed {
                    s.fail_closed += 1;
                }
            }
        }
    }

    /// The errors in report order: most shown first, then most refused, then by code and
    /// rule.
    pub fn ranked(&self) -> Vec<&ErrorStats> {
        let mut v: Vec<&ErrorStats> = self.errors.values().collect();
        v.sort_by(|a, b| {
            b.shown
                .cmp(&a.shown)
                .then(b.refused.cmp(&a.refused))
                .then(a.code.cmp(&b.code))
                .then(a.rule.cmp(&b.rule))
        });
        v
    }

    /// The canonical JSON report (sorted keys, one line).
    pub fn json(&self) -> String {
        let group = |m: &BTreeMap<String, Totals>| -> Value {
            Value::Object(m.iter().map(|(k, t)| (k.clone(), t.json())).collect())
        };
        let mut v = json!({
            "errors": self.ranked().into_iter().map(ErrorStats::json).collect::<Vec<_>>(),
            "totals": self.totals.json(),
            "by_author": group(&self.by_author),
            "by_profile": group(&self.by_profile),
            "files": self.files.iter().map(|(p, t)| {
                let mut o = t.json();
                o["path"] = Value::String(p.clone());
                o
            }).collect::<Vec<_>>(),
        });
        // Only where a Bus named its author: reports of older files keep their bytes.
        if !self.by_arm.is_empty() {
            v["by_arm"] = group(&self.by_arm);
        }
        canonical_json(&v)
    }

    /// The text report: one row per error, then the totals.
    pub fn text(&self) -> String {
        let rejected = match self.totals.rejected {
            0 => String::new(),
            n => format!(", {n} rejected proposal(s)"),
        };
        let mut s = format!(
            "errors report: {} file(s), {} turn(s), {} repl(ies), {} re-ask(s){rejected}\n",
            self.files.len(),
            self.totals.turns,
            self.totals.attempts,
            self.totals.re_asks
        );
        s.push_str(&format!(
            "{:<9} {:<18} {:>7} {:>6} {:>6} {:>7} {:>11} {:>8}  {}\n",
            "code",
            "rule",
            "refused",
            "shown",
            "parsed",
            "repair",
            "fail-closed",
            "next-tok",
            "example"
        ));
        let ranked = self.ranked();
        if ranked.is_empty() {
            s.push_str("(no refused replies)\n");
        }
        for e in ranked {
            let j = e.json();
            s.push_str(&format!(
                "{:<9} {:<18} {:>7} {:>6} {:>6} {:>7} {:>11} {:>8}  {}\n",
                e.code,
                e.rule,
                e.refused,
                e.shown,
                e.parsed_next,
                pct(e.parsed_next, e.replied()),
                e.fail_closed,
                show(&j["next_tokens_median"]),
                clip(e.example(), 72)
            ));
        }
        // The group column is as wide as its longest name (an arm names the command or the
        // model: `arm command sh -c ./author.sh authoring-v2 constrained=off` pushed every
        // number out from under its header at the fixed 24 columns before 2026-12-06).
        let groups: Vec<(String, &Totals)> = std::iter::once(("all".to_string(), &self.totals))
            .chain(
                self.by_author
                    .iter()
                    .map(|(k, t)| (format!("author {k}"), t)),
            )
            .chain(
                self.by_profile
                    .iter()
                    .map(|(k, t)| (format!("profile {k}"), t)),
            )
            .chain(self.by_arm.iter().map(|(k, t)| (format!("arm {k}"), t)))
            .chain(self.files.iter().map(|(k, t)| (format!("file {k}"), t)))
            .collect();
        let w = groups
            .iter()
            .map(|(n, _)| n.chars().count())
            .max()
            .unwrap_or(0)
            .max(24);
        s.push_str(&format!(
            "\n{:<w$} {:>5} {:>8} {:>8} {:>11} {:>14} {:>7} {:>7} {:>7} {:>11} {:>10} {:>11} {:>15}\n",
            "group",
            "turns",
            "authored",
            "repaired",
            "fail-closed",
            "provider-error",
            "re-asks",
            "repair",
            "tokens",
            "interrupted",
            "est-tokens",
            "prov-prompt",
            "prov-completion"
        ));
        for (name, t) in groups {
            s.push_str(&format!(
                "{:<w$} {:>5} {:>8} {:>8} {:>11} {:>14} {:>7} {:>7} {:>7} {:>11} {:>10} {:>11} {:>15}\n",
                name,
                t.turns,
                t.authored,
                t.repaired,
                t.fail_closed,
                t.provider_error,
                t.re_asks,
                pct(t.re_asks_parsed, t.re_asks - t.re_asks_provider_error),
                t.spend.tokens,
                t.interrupted,
                t.spend.tokens_estimated,
                provided(t, t.spend.provider_prompt_tokens),
                provided(t, t.spend.provider_completion_tokens)
            ));
        }
        s
    }
}

/// A provider-reported total, `-` when no attempt of the group reported a `usage`.
fn provided(t: &Totals, n: u64) -> String {
    if t.spend.provider_attempts == 0 {
        "-".into()
    } else {
        n.to_string()
    }
}

/// A rate as a percentage with one decimal (rounded half up), `-` when there is none.
fn pct(num: u64, den: u64) -> String {
    if den == 0 {
        return "-".into();
    }
    let (n, d) = (u128::from(num), u128::from(den));
    let tenths = (n * 2000 + d) / (2 * d);
    format!("{}.{}%", tenths / 10, tenths % 10)
}

fn show(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        v => v.to_string(),
    }
}

fn clip(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut out: String = s.chars().take(width - 1).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_round_half_up_to_four_decimals() {
        assert_eq!(rate(2, 3).to_string(), "0.6667");
        assert_eq!(rate(1, 2).to_string(), "0.5");
        assert_eq!(rate(3, 3).to_string(), "1");
        assert_eq!(rate(0, 3).to_string(), "0");
        assert_eq!(rate(1, 0), Value::Null);
        assert_eq!(pct(2, 3), "66.7%");
        assert_eq!(pct(1, 8), "12.5%");
        assert_eq!(pct(0, 0), "-");
        assert_eq!(decimal(7, 2).to_string(), "3.5");
        assert_eq!(decimal(8, 2).to_string(), "4");
        assert_eq!(decimal(9, 1).to_string(), "9");
    }

    /// A negative ratio (a turn whose Kestrel costs more tokens than its envelope) rounds
    /// half away from zero, as a positive one rounds half up.
    #[test]
    fn signed_ratios_round_away_from_zero() {
        assert_eq!(ratio4(-1600, 171).to_string(), "-9.3567");
        assert_eq!(ratio4(1600, 171).to_string(), "9.3567");
        assert_eq!(ratio4(-1, 20_000).to_string(), "-0.0001");
        assert_eq!(ratio4(-1, 30_000).to_string(), "0");
        assert_eq!(ratio4(-200, 100).to_string(), "-2");
        assert_eq!(ratio4(5, 0), Value::Null);
    }

    /// A co-pilot proposal rejected with its attempts on the Bus (2026-12-06) is an ask with
    /// no turn: its replies and tokens count, it is no turn and in no author group; a
    /// `turn-rejected` with no attempts (an older Bus, a call nobody answered) adds nothing.
    #[test]
    fn a_rejected_proposals_attempts_count_as_replies_with_no_turn() {
        let start = "{\"close\":\"16:00:00.000\",\"date\":\"2025-04-09\",\"fill_model\":\"strict-cross-v1\",\"open\":\"09:30:00.000\",\"r_usd\":\"1000.00\",\"tape\":\"t\",\"type\":\"session-start\"}\n";
        let rejected = "{\"by\":\"human\",\"outcome\":\"pass\",\"ts\":\"09:30:01.000\",\"type\":\"turn-rejected\",\"wake\":\"open\"}\n";
        let attempt = |n: u32, next: &str| {
            format!(
                "{{\"attempt\":{{\"attempt\":{n},\"errors\":[],\"guided\":null,\"next_parsed\":{next},\"outcome\":\"pass\",\"tokens\":7,\"usage\":{{\"completion_tokens\":5,\"prompt_tokens\":100}},\"written\":\"# hold\\n\"}},\"ts\":\"09:30:01.000\",\"type\":\"repair\",\"wake\":\"open\"}}\n"
            )
        };
        let old = format!("{start}{rejected}");
        assert_eq!(read_asks(old.as_bytes()).unwrap(), vec![]);
        let new = format!("{start}{}{rejected}", attempt(0, "null"));
        let asks = read_asks(new.as_bytes()).unwrap();
        assert_eq!(asks.len(), 1);
        assert!(asks[0].turn.is_none());
        let mut r = ErrorsReport::default();
        r.add_file("b", &asks);
        assert_eq!(
            (r.totals.turns, r.totals.attempts, r.totals.rejected),
            (0, 1, 1)
        );
        assert_eq!(r.totals.spend.provider_prompt_tokens, 100);
        assert!(r.by_author.is_empty() && r.by_profile.is_empty());
        assert!(
            r.text()
                .starts_with("errors report: 1 file(s), 0 turn(s), 1 repl(ies), 0 re-ask(s), 1 rejected proposal(s)\n"),
            "{}",
            r.text()
        );
        assert!(r.json().contains("\"rejected\":1"), "{}", r.json());
        // Attempts left before a rejection are not carried into the next ask.
        let next = format!("{new}{}", attempt(1, "null"));
        assert_eq!(read_asks(next.as_bytes()).unwrap_err().line, 4);
    }

    #[test]
    fn bad_bus_files_name_the_line() {
        assert_eq!(read_asks(b"").unwrap_err().line, 1);
        let tape = b"{\"type\":\"header\",\"v\":1}\n";
        assert_eq!(read_asks(tape).unwrap_err().line, 1);
        let start = "{\"close\":\"16:00:00.000\",\"date\":\"2025-04-09\",\"fill_model\":\"strict-cross-v1\",\"open\":\"09:30:00.000\",\"r_usd\":\"1000.00\",\"tape\":\"t\",\"type\":\"session-start\"}\n";
        let ok =
            format!("{start}{{\"text\":\"h\",\"ts\":\"09:30:00.000\",\"type\":\"headline\"}}\n");
        assert_eq!(read_asks(ok.as_bytes()).unwrap(), vec![]);
        let cut = format!("{ok}{{\"text\":\"h\",\"ts\":\"09:3");
        let e = read_asks(cut.as_bytes()).unwrap_err();
        assert_eq!(e.line, 3, "{e:?}");
        let bad_attempt = format!(
            "{ok}{{\"attempt\":{{\"x\":1}},\"ts\":\"09:30:00.000\",\"type\":\"repair\",\"wake\":\"open\"}}\n"
        );
        let e = read_asks(bad_attempt.as_bytes()).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("not a Bus event"), "{e:?}");
    }
}
