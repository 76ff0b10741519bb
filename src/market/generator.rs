//! The seeded synthetic tape generator.
//!
//! A session runs from 09:30:00 to 16:00:00 inclusive with one tick per second for the signal
//! index `SPX` (size 0) and its exec ETF `SPY` (≈ SPX/10 plus a small basis noise), `iv`
//! events for `SPY` and headlines. Regimes: `trend` (drift plus momentum), `range` (mean
//! reversion inside a band) and `shock` (calm, then a selloff at a seeded time with headlines
//! before and at it).
//!
//! Portability: the RNG is ChaCha8 seeded from a BLAKE3 hash of
//! `(regime, seed, date)`; transcendental functions come from `libm` (pure Rust, the same
//! bits on every platform); every price is rounded to cents through the exact [`Px`] type.
//! Same inputs ⇒ same bytes.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::io::{self, Write};

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

use super::tape::{
    Headline, IvChange, SymbolSpec, TAPE_VERSION, TapeEvent, TapeHeader, Tick, VolSpec, write_tape,
};
use super::types::{Date, Px, Sym, Ts};

/// The market regime of a generated session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Regime {
    /// Drift in one direction with momentum.
    Trend,
    /// Mean reversion inside a band around the open.
    Range,
    /// Calm, then a jump / selloff at a seeded time, headlines before and at it.
    Shock,
}

impl Regime {
    /// All regimes, in the order [`generate_family`] cycles them.
    pub const ALL: [Regime; 3] = [Regime::Trend, Regime::Range, Regime::Shock];

    /// `trend`, `range` or `shock`.
    pub fn as_str(self) -> &'static str {
        match self {
            Regime::Trend => "trend",
            Regime::Range => "range",
            Regime::Shock => "shock",
        }
    }

    /// Parse `trend`, `range` or `shock`.
    pub fn parse(s: &str) -> Option<Regime> {
        Regime::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

impl fmt::Display for Regime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The default session date of generated tapes (a Wednesday).
pub const DEFAULT_DATE: Date = Date {
    y: 2025,
    m: 4,
    d: 9,
};

/// Session length in seconds (09:30 to 16:00).
const SESSION_SECS: u32 = 23_400;
/// Seconds in a trading year used to scale annual vols to per-second vols.
const YEAR_SECS: f64 = 252.0 * 23_400.0;
/// Mean of the U-shaped intraday vol factor over the session (normalises it to 1).
const U_MEAN: f64 = 0.65 + 1.4 / 3.0;
/// Seconds between candidate `iv` events.
const IV_EVERY: u32 = 60;

/// The U-shaped intraday volatility factor at session fraction `tau` (mean 1 over the day).
fn u_shape(tau: f64) -> f64 {
    let x = 2.0 * tau - 1.0;
    (0.65 + 1.4 * x * x) / U_MEAN
}

struct Rand {
    rng: ChaCha8Rng,
    spare: Option<f64>,
}

impl Rand {
    fn new(regime: Regime, seed: u64, date: Date) -> Rand {
        let key = format!("kestrel-tape-v1|{}|{}|{}", regime.as_str(), seed, date);
        let seed: [u8; 32] = *blake3::hash(key.as_bytes()).as_bytes();
        Rand {
            rng: ChaCha8Rng::from_seed(seed),
            spare: None,
        }
    }

    /// Uniform in (0, 1].
    fn uniform(&mut self) -> f64 {
        ((self.rng.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in `lo..=hi`.
    fn range(&mut self, lo: u32, hi: u32) -> u32 {
        let span = u64::from(hi - lo) + 1;
        lo + (self.rng.next_u64() % span) as u32
    }

    /// Standard normal (Box–Muller with libm).
    fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        let u1 = self.uniform();
        let u2 = self.uniform();
        let r = libm::sqrt(-2.0 * libm::log(u1));
        let th = 2.0 * std::f64::consts::PI * u2;
        self.spare = Some(r * libm::sin(th));
        r * libm::cos(th)
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        let i = self.range(0, xs.len().saturating_sub(1) as u32) as usize;
        xs.get(i).copied().unwrap_or("")
    }
}

/// Options of [`generate_with`]. The default reproduces [`generate`] byte for byte.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GenOptions {
    /// End the session after this many minutes (the header's `close` moves to
    /// `open + minutes`); `None` or a value past 16:00 keeps the full session. The path up
    /// to the early close is exactly the full session's: only the tail is cut.
    pub minutes: Option<u32>,
    /// The **VWAP edge** knob (tests and grading demos only; 0 = off): every time `SPX`
    /// crosses above its session VWAP (equal-weighted mean of its ticks since the open, as
    /// the runtime computes it for a size-0 index), the next [`EDGE_SECS`] seconds get an
    /// extra drift adding up to this fraction of the price (e.g. `0.004` = +0.4% over five
    /// minutes). A cross while a window is open restarts it. The knob draws no random
    /// numbers, so the noise path is the knob-free session's plus the drift. It makes
    /// "`spot crosses above vwap`, hold five minutes" a plan with a real, known edge; see
    /// `tests/grade.rs`.
    pub vwap_edge: f64,
}

/// Length of the drift window the [`GenOptions::vwap_edge`] knob opens, in seconds.
pub const EDGE_SECS: u32 = 300;

/// A streaming generated session: the header plus an iterator of events (nothing is
/// collected; memory is constant).
pub struct Generator {
    header: TapeHeader,
    regime: Regime,
    rnd: Rand,
    spx: Sym,
    spy: Sym,
    open_ms: u32,
    /// Next session second to produce.
    k: u32,
    queue: VecDeque<TapeEvent>,
    // price state
    x: f64,
    x_open: f64,
    prev_ret: f64,
    basis: f64,
    // regime parameters
    sigma_ann: f64,
    drift_per_sec: f64,
    shock_at: u32,
    shock_len: u32,
    shock_size: f64,
    // vol state
    iv_base: f64,
    iv_noise: f64,
    iv_shock: f64,
    last_iv: f64,
    skew: f64,
    headlines: Vec<(u32, String)>,
    // options
    /// Last session second produced (inclusive).
    last_k: u32,
    edge: f64,
    edge_until: u32,
    spx_sum: i128,
    spx_prev_above: bool,
}

impl fmt::Debug for Generator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Generator")
            .field("name", &self.header.name)
            .field("k", &self.k)
            .finish_non_exhaustive()
    }
}

const SHOCK_PRE: &[&str] = &[
    "Reports: administration weighing emergency tariff measures; details unclear",
    "Unconfirmed reports of a large fund liquidating index futures",
    "Treasury official to make unscheduled statement this afternoon",
    "Sources: regional bank in talks over emergency funding",
];
const SHOCK_AT: &[&str] = &[
    "BREAKING: sweeping new tariffs announced, effective immediately",
    "BREAKING: major bank halts withdrawals; regulators convene",
    "BREAKING: credit downgrade of US sovereign debt announced",
    "BREAKING: geopolitical escalation, markets react sharply",
];
const SHOCK_AFTER: &[&str] = &[
    "Officials decline to comment as selling deepens",
    "VIX spikes; dealers report heavy put demand",
    "Futures volume hits session high as stops trigger",
];
const CALM: &[&str] = &[
    "Fed governor: policy well positioned, data dependent",
    "Treasury auction results in line with expectations",
    "Oil little changed after inventory data",
    "Mega-cap tech leads; breadth positive",
    "Consumer sentiment edges higher in preliminary read",
    "Dollar steady ahead of central bank minutes",
];

/// Start a generated session for `(regime, seed, date)`.
pub fn generate(regime: Regime, seed: u64, date: Date) -> Generator {
    generate_with(regime, seed, date, GenOptions::default())
}

/// [`generate`] with options (a shortened session, the VWAP edge knob). With
/// `GenOptions::default()` the output is [`generate`]'s, byte for byte. A knob other than the
/// default is recorded in the header's `source` and in a tag (`minutes`, `edge`).
pub fn generate_with(regime: Regime, seed: u64, date: Date, opts: GenOptions) -> Generator {
    let mut rnd = Rand::new(regime, seed, date);
    let spx = Sym::new("SPX").unwrap_or_else(|| unreachable!());
    let spy = Sym::new("SPY").unwrap_or_else(|| unreachable!());

    // Prior close around 5000, and the open gap.
    let spx_prior =
        Px::round_cents(5000.0 * libm::exp(0.02 * rnd.normal())).unwrap_or(Px(50_000_000));
    let spy_prior = Px::round_cents(spx_prior.to_f64() / 10.0).unwrap_or(Px(5_000_000));
    let direction = if rnd.uniform() < 0.5 { 1.0 } else { -1.0 };
    let gap = 0.003 * rnd.normal()
        + match regime {
            Regime::Trend => direction * 0.002,
            _ => 0.0,
        };
    let x_open = libm::log(spx_prior.to_f64()) + gap;

    let n = f64::from(SESSION_SECS);
    let (sigma_ann, drift_total, iv_base, skew) = match regime {
        Regime::Trend => {
            let d = direction * (0.008 + 0.010 * rnd.uniform());
            (
                0.15,
                d,
                0.15 + if direction < 0.0 { 0.02 } else { 0.0 },
                -0.8,
            )
        }
        Regime::Range => (0.13, 0.0, 0.13, -0.7),
        Regime::Shock => (0.10, 0.002, 0.14, -0.8),
    };
    let (shock_at, shock_len, shock_size) = match regime {
        Regime::Shock => (
            rnd.range(5_400, 18_000), // 11:00 .. 14:30
            rnd.range(60, 180),
            0.015 + 0.015 * rnd.uniform(),
        ),
        _ => (u32::MAX, 0, 0.0),
    };

    // Headlines, by session second.
    let mut headlines: Vec<(u32, String)> = Vec::new();
    match regime {
        Regime::Shock => {
            let pre = shock_at.saturating_sub(rnd.range(300, 1_200));
            headlines.push((pre, rnd.pick(SHOCK_PRE).to_string()));
            headlines.push((shock_at, rnd.pick(SHOCK_AT).to_string()));
            let after = shock_at + rnd.range(600, 1_800);
            headlines.push((after.min(SESSION_SECS), rnd.pick(SHOCK_AFTER).to_string()));
            let calm = rnd.range(600, 3_000);
            headlines.push((calm, rnd.pick(CALM).to_string()));
        }
        _ => {
            for _ in 0..2 {
                let at = rnd.range(600, SESSION_SECS - 1_800);
                headlines.push((at, rnd.pick(CALM).to_string()));
            }
        }
    }
    headlines.sort();
    headlines.reverse(); // pop from the back in time order

    let iv0 = round4(iv_base);
    let mut tags = BTreeMap::new();
    tags.insert("date".to_string(), date.to_string());
    tags.insert("regime".to_string(), regime.as_str().to_string());
    tags.insert("source".to_string(), "synthetic".to_string());
    let last_k = match opts.minutes {
        Some(m) if m.saturating_mul(60) < SESSION_SECS => m.max(1) * 60,
        _ => SESSION_SECS,
    };
    let edge = if opts.vwap_edge.is_finite() {
        opts.vwap_edge
    } else {
        0.0
    };
    let mut source = format!("synthetic seed={seed} regime={}", regime.as_str());
    if last_k != SESSION_SECS {
        source.push_str(&format!(" minutes={}", last_k / 60));
        tags.insert("minutes".to_string(), (last_k / 60).to_string());
    }
    if edge != 0.0 {
        source.push_str(&format!(" edge={edge}"));
        tags.insert("edge".to_string(), edge.to_string());
    }
    let header = TapeHeader {
        v: TAPE_VERSION,
        name: tape_name(regime, seed, date),
        date,
        tz: "America/New_York".to_string(),
        open: Ts::hms(9, 30, 0, 0),
        close: Ts(Ts::hms(9, 30, 0, 0).ms() + last_k * 1000),
        symbols: vec![
            SymbolSpec {
                sym: spx,
                prior_close: spx_prior,
                strike_step: None,
            },
            SymbolSpec {
                sym: spy,
                prior_close: spy_prior,
                strike_step: Some(Px::from_cents(100)),
            },
        ],
        vol: vec![VolSpec {
            sym: spy,
            atm_iv: iv0,
            skew,
        }],
        rate: 0.043,
        source,
        tags,
    };

    Generator {
        open_ms: header.open.ms(),
        header,
        regime,
        rnd,
        spx,
        spy,
        k: 0,
        queue: VecDeque::with_capacity(8),
        x: x_open,
        x_open,
        prev_ret: 0.0,
        basis: 0.0,
        sigma_ann,
        drift_per_sec: drift_total / n,
        shock_at,
        shock_len,
        shock_size,
        iv_base,
        iv_noise: 0.0,
        iv_shock: 0.0,
        last_iv: iv0,
        skew,
        headlines,
        last_k,
        edge,
        edge_until: 0,
        spx_sum: 0,
        spx_prev_above: false,
    }
}

fn round4(x: f64) -> f64 {
    libm::round(x * 10_000.0) / 10_000.0
}

impl Generator {
    /// The session's header.
    pub fn header(&self) -> &TapeHeader {
        &self.header
    }

    /// The regime this session was generated with.
    pub fn regime(&self) -> Regime {
        self.regime
    }

    /// Produce the events of session second `k` into the queue.
    fn step(&mut self) {
        let k = self.k;
        let ts = Ts(self.open_ms + k * 1000);
        while self.headlines.last().is_some_and(|(at, _)| *at == k) {
            if let Some((_, text)) = self.headlines.pop() {
                self.queue
                    .push_back(TapeEvent::Headline(Headline { ts, text }));
            }
        }

        let tau = f64::from(k) / f64::from(SESSION_SECS);
        let u = u_shape(tau);
        let mut sigma = self.sigma_ann;
        let since_shock = k.checked_sub(self.shock_at);
        if let Some(s) = since_shock {
            // Elevated, decaying vol after the shock (half-life one hour).
            let decay = libm::exp(-f64::from(s) * std::f64::consts::LN_2 / 3_600.0);
            sigma = 0.20 + 0.25 * decay;
        }
        let sig_sec = sigma * u / libm::sqrt(YEAR_SECS);
        if k > 0 {
            let z = self.rnd.normal();
            let mut ret = self.drift_per_sec + sig_sec * z;
            if self.edge != 0.0 && k <= self.edge_until {
                ret += self.edge / f64::from(EDGE_SECS);
            }
            match self.regime {
                Regime::Trend => ret += 0.08 * self.prev_ret,
                Regime::Range => {
                    let dev = self.x - self.x_open;
                    let wall = if dev.abs() > 0.006 { 5e-3 } else { 0.0 };
                    ret -= (2.0e-4 + wall) * dev;
                }
                Regime::Shock => {
                    if let Some(s) = since_shock {
                        if s < self.shock_len {
                            ret -= self.shock_size / f64::from(self.shock_len);
                        } else {
                            // Slow partial rebound toward 35% of the drop.
                            ret += 0.35
                                * self.shock_size
                                * 1.0e-4
                                * libm::exp(-f64::from(s - self.shock_len) / 10_000.0);
                        }
                    }
                }
            }
            self.prev_ret = ret;
            self.x += ret;
            self.basis = 0.98 * self.basis + 2.0e-5 * self.rnd.normal();
        }
        let spx_f = libm::exp(self.x);
        let spx = Px::round_cents(spx_f).unwrap_or(Px::CENT);
        let spy = Px::round_cents(spx_f / 10.0 * (1.0 + self.basis)).unwrap_or(Px::CENT);
        if self.edge != 0.0 {
            // The runtime's VWAP of a size-0 index: the mean of its ticks since the open.
            let px = i128::from(spx.max(Px::CENT).raw());
            self.spx_sum += px;
            let n = i128::from(k) + 1;
            let above = px * n > self.spx_sum;
            if k > 0 && above && !self.spx_prev_above {
                self.edge_until = k + EDGE_SECS;
            }
            self.spx_prev_above = above;
        }
        let mut size_mult = u * (1.0 + 2.0 * self.prev_ret.abs() / sig_sec.max(1e-12));
        if since_shock.is_some() {
            size_mult *= 2.5;
        }
        let lots = 1.0 + libm::floor(size_mult * 6.0 * self.rnd.uniform());
        let sz = 100 * (lots.min(500.0) as u64);
        self.queue.push_back(TapeEvent::Tick(Tick {
            ts,
            sym: self.spx,
            px: spx.max(Px::CENT),
            sz: 0,
        }));
        self.queue.push_back(TapeEvent::Tick(Tick {
            ts,
            sym: self.spy,
            px: spy.max(Px::CENT),
            sz,
        }));

        // Implied vol: base, spot-vol beta, shock jump with decay, small OU noise.
        self.iv_noise = 0.995 * self.iv_noise + 0.0004 * self.rnd.normal();
        let mut skew_change = None;
        if since_shock == Some(0) {
            self.iv_shock = 0.12 + 0.06 * self.rnd.uniform();
            skew_change = Some(self.skew - 0.4);
            self.skew -= 0.4;
        } else if since_shock.is_some() {
            self.iv_shock *= libm::exp(-std::f64::consts::LN_2 / 7_200.0);
        }
        if k > 0 && (k.is_multiple_of(IV_EVERY) || skew_change.is_some()) {
            let iv = self.iv_base - 1.5 * (self.x - self.x_open) + self.iv_shock + self.iv_noise;
            let iv = round4(iv.clamp(0.05, 2.0));
            if (iv - self.last_iv).abs() >= 0.0005 || skew_change.is_some() {
                self.last_iv = iv;
                self.queue.push_back(TapeEvent::Iv(IvChange {
                    ts,
                    sym: self.spy,
                    atm_iv: iv,
                    skew: skew_change.map(round4),
                }));
            }
        }
    }
}

impl Iterator for Generator {
    type Item = TapeEvent;

    fn next(&mut self) -> Option<TapeEvent> {
        loop {
            if let Some(ev) = self.queue.pop_front() {
                return Some(ev);
            }
            if self.k > self.last_k {
                return None;
            }
            self.step();
            self.k += 1;
        }
    }
}

/// The canonical name of a generated tape: `<regime>-<date>-s<seed>`.
pub fn tape_name(regime: Regime, seed: u64, date: Date) -> String {
    format!("{}-{}-s{}", regime.as_str(), date, seed)
}

/// Generate a session and write it canonically to `w`.
pub fn write_generated<W: Write>(
    regime: Regime,
    seed: u64,
    date: Date,
    w: &mut W,
) -> io::Result<()> {
    let g = generate(regime, seed, date);
    let header = g.header().clone();
    write_tape(w, &header, g)
}

/// One member of a tape family (see [`generate_family`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FamilyMember {
    /// Regime.
    pub regime: Regime,
    /// Seed.
    pub seed: u64,
    /// Session date.
    pub date: Date,
}

impl FamilyMember {
    /// `<regime>-<date>-s<seed>.jsonl`.
    pub fn file_name(&self) -> String {
        format!("{}.jsonl", tape_name(self.regime, self.seed, self.date))
    }

    /// Start generating this member.
    pub fn generate(&self) -> Generator {
        generate(self.regime, self.seed, self.date)
    }
}

/// A family of `count` sessions for multi-tape grading: regimes cycle trend, range, shock;
/// seeds are `seed, seed+1, …`; dates are consecutive weekdays from [`DEFAULT_DATE`].
/// Lazy: nothing is generated until a member's [`FamilyMember::generate`] is called.
pub fn generate_family(count: usize, seed: u64) -> Vec<FamilyMember> {
    let mut out = Vec::with_capacity(count);
    let mut date = DEFAULT_DATE;
    for i in 0..count {
        out.push(FamilyMember {
            regime: Regime::ALL[i % Regime::ALL.len()],
            seed: seed.wrapping_add(i as u64),
            date,
        });
        date = date.next_weekday().unwrap_or(date);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::market::tape::read_tape_bytes;

    fn bytes(regime: Regime, seed: u64) -> Vec<u8> {
        let mut v = Vec::new();
        write_generated(regime, seed, DEFAULT_DATE, &mut v).unwrap();
        v
    }

    #[test]
    fn deterministic_and_seed_sensitive() {
        let a = bytes(Regime::Shock, 7);
        assert_eq!(a, bytes(Regime::Shock, 7));
        assert_ne!(a, bytes(Regime::Shock, 8));
        assert_ne!(a, bytes(Regime::Trend, 7));
    }

    #[test]
    fn session_reads_back_and_spans_the_day() {
        let b = bytes(Regime::Shock, 3);
        let (h, evs) = read_tape_bytes(&b).unwrap();
        assert_eq!(h.tags.get("regime").map(String::as_str), Some("shock"));
        let ticks: Vec<_> = evs
            .iter()
            .filter_map(|e| match e {
                TapeEvent::Tick(t) => Some(*t),
                _ => None,
            })
            .collect();
        assert_eq!(ticks.len(), 2 * 23_401);
        assert_eq!(ticks[0].ts, Ts::hms(9, 30, 0, 0));
        assert_eq!(ticks[ticks.len() - 1].ts, Ts::hms(16, 0, 0, 0));
        assert!(
            evs.iter()
                .filter(|e| matches!(e, TapeEvent::Headline(_)))
                .count()
                >= 3
        );
        assert!(evs.iter().any(|e| matches!(e, TapeEvent::Iv(_))));
        // Canonical: re-writing what was read gives the same bytes.
        let mut again = Vec::new();
        write_tape(&mut again, &h, evs).unwrap();
        assert_eq!(again, b);
    }

    #[test]
    fn options_default_is_generate_and_short_sessions_are_a_prefix() {
        let full = bytes(Regime::Trend, 5);
        let mut d = Vec::new();
        let g = generate_with(Regime::Trend, 5, DEFAULT_DATE, GenOptions::default());
        let h = g.header().clone();
        write_tape(&mut d, &h, g).unwrap();
        assert_eq!(d, full);
        let opts = GenOptions {
            minutes: Some(30),
            vwap_edge: 0.0,
        };
        let short = generate_with(Regime::Trend, 5, DEFAULT_DATE, opts);
        assert_eq!(short.header().close, Ts::hms(10, 0, 0, 0));
        assert_eq!(
            short.header().tags.get("minutes").map(String::as_str),
            Some("30")
        );
        let short: Vec<TapeEvent> = short.collect();
        let (_, long) = read_tape_bytes(&full).unwrap();
        assert_eq!(short[..], long[..short.len()]);
        assert_eq!(short.last().map(TapeEvent::ts), Some(Ts::hms(10, 0, 0, 0)));
    }

    #[test]
    fn vwap_edge_adds_drift_after_up_crosses_only() {
        let opts = |e| GenOptions {
            minutes: Some(60),
            vwap_edge: e,
        };
        let spx = |g: Generator| -> Vec<f64> {
            g.filter_map(|e| match e {
                TapeEvent::Tick(t) if t.sym.as_str() == "SPX" => Some(t.px.to_f64()),
                _ => None,
            })
            .collect()
        };
        let base = spx(generate_with(Regime::Range, 9, DEFAULT_DATE, opts(0.0)));
        let edged = generate_with(Regime::Range, 9, DEFAULT_DATE, opts(0.01));
        assert_eq!(
            edged.header().tags.get("edge").map(String::as_str),
            Some("0.01")
        );
        let edged = spx(edged);
        // Same noise: identical until the first up-cross, then never below the knob-free path.
        assert_eq!(base[..2], edged[..2]);
        assert!(edged.iter().zip(&base).all(|(e, b)| e >= b));
        assert!(edged.last() > base.last());
    }

    #[test]
    fn family_cycles() {
        let f = generate_family(4, 10);
        assert_eq!(f[0].regime, Regime::Trend);
        assert_eq!(f[2].regime, Regime::Shock);
        assert_eq!(f[3].regime, Regime::Trend);
        assert_eq!(f[3].seed, 13);
        assert_eq!(f[0].file_name(), "trend-2025-04-09-s10.jsonl");
        assert_eq!(f[2].date.to_string(), "2025-04-11");
        assert_eq!(f[3].date.to_string(), "2025-04-14");
    }
}
