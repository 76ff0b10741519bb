//! The runtime seam: what the desk drives behind the replay clock.
//!
//! A [`Runtime`] receives every tape event in order and the acts routed turns carry (arm a
//! document, stand down, cancel). It owns the market state the Frame is rendered from and
//! reports plans, the book, the event stream and the determinism hash. [`MarketOnly`] is the
//! runtime used until the tick engine is wired: it keeps the market and a canonical log of
//! the acts it received (hashed with BLAKE3), and lists armed plans without evaluating them.

use crate::lang::{self, Document, ast::StatementKind};
use crate::market::{MarketState, TapeEvent, TapeHeader, Ts};
use crate::view::Snapshot;
use std::io::Write;

/// One plan as the Plans pane shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanInfo {
    /// The plan's name.
    pub name: String,
    /// armed / fired / resting / filled / expired / stood down / done / de-armed.
    pub state: String,
    /// The plan's budget in R.
    pub budget_r: f64,
    /// Risk used, in R.
    pub used_r: f64,
    /// `ttl` as written (`+30m`, `14:45`).
    pub ttl: String,
    /// The clause that fired last, or why the plan is in its state.
    pub note: String,
    /// The plan in canonical Kestrel.
    pub text: String,
}

/// A mark on the chart: a fill or a fire at a tape time.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// When.
    pub ts: Ts,
    /// The plan.
    pub plan: String,
    /// `buy` / `sell` for fills, the clause for fires.
    pub what: String,
}

/// What the desk drives behind the clock. Implementations must be deterministic: the same
/// events and acts in the same order give the same log bytes and hash.
pub trait Runtime: Send {
    /// `market-only` or `engine`.
    fn name(&self) -> &'static str;
    /// Feed one tape event (in tape order).
    fn on_event(&mut self, ev: &TapeEvent);
    /// The market state (what the Frame is rendered from).
    fn market(&self) -> &MarketState;
    /// Arm a checked document at the current tape time; returns the plans armed.
    fn arm(&mut self, doc: &Document, now: Ts) -> Vec<String>;
    /// STAND-DOWN: de-arm the book; the reason is kept verbatim.
    fn stand_down(&mut self, reason: &str, now: Ts);
    /// CANCEL a plan by name; whether one was live.
    fn cancel(&mut self, target: &str, now: Ts) -> bool;
    /// Armed plans and their states.
    fn plans(&self) -> Vec<PlanInfo>;
    /// The book for the Frame's kernel / plans / blotter panes and the Blotter pane.
    fn book(&self) -> Snapshot;
    /// The newest `n` lines of the event stream (canonical JSON).
    fn tail(&self, n: usize) -> Vec<String>;
    /// Events in the stream so far.
    fn event_count(&self) -> u64;
    /// Fills and fires so far, for the chart.
    fn marks(&self) -> (Vec<Mark>, Vec<Mark>);
    /// The determinism hash of the stream so far (BLAKE3 hex).
    fn hash(&self) -> String;
    /// Close the session at the end of the tape (idempotent).
    fn finish(&mut self) {}
}

/// The runtime used until the engine is wired: market state plus a canonical log of acts.
pub struct MarketOnly {
    market: MarketState,
    plans: Vec<PlanInfo>,
    log: Vec<String>,
    hasher: blake3::Hasher,
    sink: Option<Box<dyn Write + Send>>,
}

impl MarketOnly {
    /// A runtime for a tape; `sink` receives the log as JSON Lines (flushed per line).
    pub fn new(header: &TapeHeader, sink: Option<Box<dyn Write + Send>>) -> MarketOnly {
        let mut m = MarketOnly {
            market: MarketState::new(header),
            plans: Vec::new(),
            log: Vec::new(),
            hasher: blake3::Hasher::new(),
            sink,
        };
        m.emit(serde_json::json!({
            "type": "session-start",
            "tape": header.name,
            "date": header.date.to_string(),
            "runtime": "market-only",
        }));
        m
    }

    fn emit(&mut self, v: serde_json::Value) {
        // serde_json's Map is a BTreeMap here: keys come out sorted (canonical).
        let line = v.to_string();
        self.hasher.update(line.as_bytes());
        self.hasher.update(b"\n");
        if let Some(w) = self.sink.as_mut() {
            let ok = w
                .write_all(line.as_bytes())
                .and_then(|_| w.write_all(b"\n"))
                .and_then(|_| w.flush());
            if ok.is_err() {
                self.sink = None;
            }
        }
        self.log.push(line);
    }
}

/// The PLAN statements of a document as Plans-pane rows, in the given state.
pub fn plan_infos(doc: &Document, state: &str) -> Vec<PlanInfo> {
    doc.statements
        .iter()
        .filter_map(|s| match &s.kind {
            StatementKind::Plan(p) => {
                let one = Document {
                    statements: vec![s.clone()],
                    tail: Vec::new(),
                };
                let text = lang::print(&one);
                let head = text
                    .lines()
                    .find(|l| l.starts_with("PLAN"))
                    .unwrap_or_default();
                let ttl = head
                    .split_whitespace()
                    .skip_while(|w| *w != "ttl")
                    .nth(1)
                    .unwrap_or("-")
                    .to_string();
                Some(PlanInfo {
                    name: p.name.text.clone(),
                    state: state.to_string(),
                    budget_r: p.budget.value(),
                    used_r: 0.0,
                    ttl,
                    note: String::new(),
                    text,
                })
            }
            _ => None,
        })
        .collect()
}

impl Runtime for MarketOnly {
    fn name(&self) -> &'static str {
        "market-only"
    }

    fn on_event(&mut self, ev: &TapeEvent) {
        self.market.apply(ev);
    }

    fn market(&self) -> &MarketState {
        &self.market
    }

    fn arm(&mut self, doc: &Document, now: Ts) -> Vec<String> {
        let text = lang::print(doc);
        let infos = plan_infos(doc, "armed");
        let names: Vec<String> = infos.iter().map(|p| p.name.clone()).collect();
        self.emit(serde_json::json!({
            "type": "document-armed",
            "ts": now.to_string(),
            "text": text,
            "blake3": blake3::hash(text.as_bytes()).to_hex().to_string(),
            "plans": names,
        }));
        // A supersede replaces the standing book.
        self.plans = infos
            .into_iter()
            .map(|mut p| {
                p.note = "not evaluated: market-only runtime".into();
                p
            })
            .collect();
        names
    }

    fn stand_down(&mut self, reason: &str, now: Ts) {
        self.emit(serde_json::json!({
            "type": "stand-down", "ts": now.to_string(), "reason": reason,
        }));
        for p in &mut self.plans {
            p.state = "stood down".into();
            p.note = format!("STAND-DOWN {reason}");
        }
    }

    fn cancel(&mut self, target: &str, now: Ts) -> bool {
        let mut hit = false;
        for p in self.plans.iter_mut().filter(|p| p.name == target) {
            hit = true;
            p.state = "stood down".into();
            p.note = "CANCEL".into();
        }
        self.emit(serde_json::json!({
            "type": "cancel", "ts": now.to_string(), "target": target,
            "result": if hit { "stood down" } else { "no such plan" },
        }));
        hit
    }

    fn plans(&self) -> Vec<PlanInfo> {
        self.plans.clone()
    }

    fn book(&self) -> Snapshot {
        Snapshot {
            plans: self
                .plans
                .iter()
                .map(|p| crate::view::snapshot::PlanRow {
                    name: p.name.clone(),
                    state: p.state.clone(),
                    budget_r: p.budget_r,
                    used_r: p.used_r,
                    ttl: p.ttl.clone(),
                    note: p.note.clone(),
                })
                .collect(),
            ..Snapshot::default()
        }
    }

    fn tail(&self, n: usize) -> Vec<String> {
        self.log[self.log.len().saturating_sub(n)..].to_vec()
    }

    fn event_count(&self) -> u64 {
        self.log.len() as u64
    }

    fn marks(&self) -> (Vec<Mark>, Vec<Mark>) {
        (Vec::new(), Vec::new())
    }

    fn hash(&self) -> String {
        self.hasher.finalize().to_hex().to_string()
    }
}
