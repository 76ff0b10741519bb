//! `kestrel tape info FILE`: what a tape holds, read in one streaming pass (memory is the
//! counts, not the tape): its sessions, symbols, events per kind, first and last time, the
//! gaps, and whether option prices are quoted or modeled. See docs/tapes.md.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;

use crate::market::{QuoteInst, TapeError, TapeEvent, TapeHeader, TapeReader, Ts, occ_symbol};

/// Arguments of `kestrel tape info`.
#[derive(Clone, Debug, clap::Args)]
pub struct TapeInfoArgs {
    /// The tape (JSON Lines, v1 or v2).
    pub file: PathBuf,
    #[command(flatten)]
    pub out: super::flags::Json,
}

/// The gap above which `info` lists a quiet stretch (longer than 60 s: the `ends-early`
/// bound). Strictly above: one-minute bars (a trade a minute) are the data's spacing, not
/// 390 gaps of exactly a minute hiding a real halt.
pub const GAP_MS: u32 = 60_000;
/// Gaps listed per session (the longest first); the count says how many there were.
const GAPS_SHOWN: usize = 5;

/// Counts of one session.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct SessionInfo {
    /// Number (1, 2, …).
    pub n: u32,
    /// Date.
    pub date: String,
    /// Open and close.
    pub open: Ts,
    pub close: Ts,
    /// Events in the session.
    pub events: u64,
    /// First and last event time.
    pub first: Option<Ts>,
    pub last: Option<Ts>,
    /// Quiet stretches of at least [`GAP_MS`] inside `[open, close]` (start, length ms),
    /// the longest [`GAPS_SHOWN`], and how many there were.
    pub gaps: Vec<(Ts, u32)>,
    pub gap_count: u64,
    /// Per symbol with at least two one-minute closes in the session: its realised vol,
    /// annualised (see [`RealisedVol`]).
    pub realised_vol: BTreeMap<String, f64>,
}

/// A session's realised volatility of one symbol from its trades: the one-minute closes
/// (the last trade of each minute of the session that has one, `open ≤ ts ≤ close`), the
/// log returns between consecutive closes, `sqrt(Σ r²)` the session's realised vol, times
/// `sqrt(252)` annualised. A quiet minute makes the next return span it. Index sizes do
/// not matter; quotes do not count (trades only).
#[derive(Debug, Default, Clone)]
struct RealisedVol {
    /// The minute being filled and its last trade.
    cur: Option<(u32, f64)>,
    /// The previous minute's close.
    prev: Option<f64>,
    sum_sq: f64,
    returns: u64,
}

impl RealisedVol {
    fn close_minute(&mut self) {
        if let Some((_, px)) = self.cur.take() {
            if let Some(p0) = self.prev
                && p0 > 0.0
            {
                let r = libm::log(px / p0);
                self.sum_sq += r * r;
                self.returns += 1;
            }
            self.prev = Some(px);
        }
    }

    fn trade(&mut self, ts: Ts, px: f64) {
        let minute = ts.ms() / 60_000;
        if self.cur.is_some_and(|(m, _)| m != minute) {
            self.close_minute();
        }
        self.cur = Some((minute, px));
    }

    /// Annualised realised vol, once there is a return.
    fn annualised(mut self) -> Option<f64> {
        self.close_minute();
        (self.returns > 0).then(|| libm::sqrt(self.sum_sq * 252.0))
    }
}

/// What a tape holds.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct TapeInfo {
    pub name: String,
    pub v: u64,
    pub tz: String,
    pub sessions: Vec<SessionInfo>,
    /// Events per kind over the whole tape.
    pub kinds: BTreeMap<&'static str, u64>,
    /// Per symbol: trades and quotes.
    pub symbols: BTreeMap<String, (u64, u64)>,
    /// Symbols with an option chain.
    pub chains: Vec<String>,
    /// Option quotes, and the distinct contracts they quote.
    pub option_quotes: u64,
    pub option_contracts: u64,
}

fn kind(ev: &TapeEvent) -> &'static str {
    match ev {
        TapeEvent::Tick(_) => "tick",
        TapeEvent::Iv(_) => "iv",
        TapeEvent::Headline(_) => "headline",
        TapeEvent::Quote(_) => "quote",
        TapeEvent::Session(_) => "session",
    }
}

fn session_of(h: &TapeHeader, n: u32) -> SessionInfo {
    SessionInfo {
        n,
        date: h.date.to_string(),
        open: h.open,
        close: h.close,
        ..SessionInfo::default()
    }
}

/// Note a quiet stretch `[from, to)` of a session (only inside its open..close).
fn gap(s: &mut SessionInfo, from: Ts, to: Ts) {
    let (a, b) = (from.max(s.open), to.min(s.close));
    if b <= a || b.ms() - a.ms() <= GAP_MS {
        return;
    }
    s.gap_count += 1;
    s.gaps.push((a, b.ms() - a.ms()));
    s.gaps.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    s.gaps.truncate(GAPS_SHOWN);
}

/// Close a session's gap accounting at its end (a quiet stretch up to the close) and its
/// realised vols.
fn end_session(s: &mut SessionInfo, rv: &mut BTreeMap<String, RealisedVol>) {
    let from = s.last.unwrap_or(s.open);
    gap(s, from, s.close);
    for (sym, v) in std::mem::take(rv) {
        if let Some(x) = v.annualised() {
            s.realised_vol.insert(sym, x);
        }
    }
}

/// Read a tape and count what it holds. The first refused line is the error.
pub fn info<R: std::io::BufRead>(mut r: TapeReader<R>) -> Result<TapeInfo, TapeError> {
    let h = r.header().clone();
    let mut out = TapeInfo {
        name: h.name.clone(),
        v: h.v,
        tz: h.tz.clone(),
        chains: h
            .symbols
            .iter()
            .filter(|s| s.strike_step.is_some())
            .map(|s| s.sym.to_string())
            .collect(),
        symbols: h
            .symbols
            .iter()
            .map(|s| (s.sym.to_string(), (0, 0)))
            .collect(),
        ..TapeInfo::default()
    };
    let mut cur = session_of(&h, 1);
    let mut rv: BTreeMap<String, RealisedVol> = BTreeMap::new();
    let mut contracts = BTreeSet::new();
    while let Some(ev) = r.next() {
        let ev = ev?;
        *out.kinds.entry(kind(&ev)).or_default() += 1;
        match &ev {
            TapeEvent::Session(_) => {
                end_session(&mut cur, &mut rv);
                let next = session_of(r.session_header(), r.session_no());
                out.sessions.push(std::mem::replace(&mut cur, next));
                continue;
            }
            TapeEvent::Tick(t) => {
                if let Some(c) = out.symbols.get_mut(t.sym.as_str()) {
                    c.0 += 1;
                }
                if t.ts >= cur.open && t.ts <= cur.close {
                    rv.entry(t.sym.to_string())
                        .or_default()
                        .trade(t.ts, t.px.to_f64());
                }
            }
            TapeEvent::Quote(q) => match &q.inst {
                QuoteInst::Sym(s) => {
                    if let Some(c) = out.symbols.get_mut(s.as_str()) {
                        c.1 += 1;
                    }
                }
                QuoteInst::Option(k) => {
                    out.option_quotes += 1;
                    if let Some(o) = occ_symbol(k) {
                        contracts.insert(o);
                    }
                }
            },
            _ => {}
        }
        let ts = ev.ts();
        let from = cur.last.unwrap_or(cur.open);
        gap(&mut cur, from, ts);
        cur.events += 1;
        cur.first.get_or_insert(ts);
        cur.last = Some(ts);
    }
    r.check_complete()?;
    end_session(&mut cur, &mut rv);
    out.sessions.push(cur);
    out.option_contracts = contracts.len() as u64;
    Ok(out)
}

fn dur(ms: u32) -> String {
    let s = ms / 1000;
    if s >= 3600 {
        format!("{}h{:02}m{:02}s", s / 3600, (s / 60) % 60, s % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// The text `tape info` prints.
pub fn render(i: &TapeInfo) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "tape {}  v{}  tz {}", i.name, i.v, i.tz);
    let kinds: Vec<String> = ["tick", "quote", "iv", "headline", "session"]
        .iter()
        .map(|k| format!("{k} {}", i.kinds.get(k).copied().unwrap_or(0)))
        .collect();
    let _ = writeln!(s, "events {}", kinds.join("  "));
    let syms: Vec<String> = i
        .symbols
        .iter()
        .map(|(k, (t, q))| format!("{k} (trades {t}, quotes {q})"))
        .collect();
    let _ = writeln!(s, "symbols {}", syms.join("  "));
    let _ = writeln!(s, "sessions {}", i.sessions.len());
    for x in &i.sessions {
        let t = |x: Option<Ts>| x.map_or_else(|| "-".to_string(), |t| t.to_string());
        let _ = writeln!(
            s,
            "  {} {} {}-{}  events {}  first {}  last {}",
            x.n,
            x.date,
            x.open.hhmm(),
            x.close.hhmm(),
            x.events,
            t(x.first),
            t(x.last)
        );
        if !x.realised_vol.is_empty() {
            let v: Vec<String> = x
                .realised_vol
                .iter()
                .map(|(k, v)| format!("{k} {:.1}%", v * 100.0))
                .collect();
            let _ = writeln!(
                s,
                "    realised vol (1m closes, annualised) {}",
                v.join("  ")
            );
        }
        if x.gap_count == 0 {
            let _ = writeln!(s, "    gaps (> {}) none", dur(GAP_MS));
        } else {
            let g: Vec<String> = x
                .gaps
                .iter()
                .map(|(a, l)| format!("{} for {}", a, dur(*l)))
                .collect();
            let _ = writeln!(
                s,
                "    gaps (> {}) {}: {}{}",
                dur(GAP_MS),
                x.gap_count,
                g.join(", "),
                if x.gap_count as usize > x.gaps.len() {
                    " (longest shown)"
                } else {
                    ""
                }
            );
        }
    }
    let opt = if i.chains.is_empty() {
        "none (no symbol has an option chain)".to_string()
    } else if i.option_quotes == 0 {
        format!(
            "modeled (chain on {}; no option quotes)",
            i.chains.join(", ")
        )
    } else {
        format!(
            "quoted for {} contracts ({} quotes) on {}; every other contract modeled",
            i.option_contracts,
            i.option_quotes,
            i.chains.join(", ")
        )
    };
    let _ = writeln!(s, "option prices {opt}");
    s
}

/// The JSON `tape info --json` prints (one object; docs/tapes.md §6): the same figures as
/// the text, times as `HH:MM:SS.mmm` (`null` for a session without events), gap lengths in
/// milliseconds.
pub fn to_json(i: &TapeInfo) -> serde_json::Value {
    use serde_json::json;
    let t = |x: Option<Ts>| x.map_or(serde_json::Value::Null, |t| json!(t.to_string()));
    let kinds: serde_json::Map<String, serde_json::Value> =
        ["tick", "quote", "iv", "headline", "session"]
            .iter()
            .map(|k| (k.to_string(), json!(i.kinds.get(k).copied().unwrap_or(0))))
            .collect();
    let symbols: serde_json::Map<String, serde_json::Value> = i
        .symbols
        .iter()
        .map(|(k, (tr, q))| (k.clone(), json!({"trades": tr, "quotes": q})))
        .collect();
    let sessions: Vec<serde_json::Value> = i
        .sessions
        .iter()
        .map(|x| {
            json!({
                "session": x.n,
                "date": x.date,
                "open": x.open.hhmm(),
                "close": x.close.hhmm(),
                "events": x.events,
                "first": t(x.first),
                "last": t(x.last),
                "gap_count": x.gap_count,
                "realised_vol": x.realised_vol,
                "gaps": x.gaps.iter().map(|(a, l)| json!({"from": a.to_string(), "ms": l})).collect::<Vec<_>>(),
            })
        })
        .collect();
    let prices = if i.chains.is_empty() {
        "none"
    } else if i.option_quotes == 0 {
        "modeled"
    } else {
        "quoted"
    };
    json!({
        "name": i.name,
        "v": i.v,
        "tz": i.tz,
        "events": kinds,
        "symbols": symbols,
        "sessions": sessions,
        "gap_min_ms": GAP_MS,
        "options": {
            "prices": prices,
            "chains": i.chains,
            "quotes": i.option_quotes,
            "contracts": i.option_contracts,
        },
    })
}

/// Run `kestrel tape info`; the exit code.
pub fn tape_info(a: &TapeInfoArgs) -> i32 {
    let r = match super::run::open_tape_or_say(&a.file) {
        Ok(r) => r,
        Err(e) => {
            errln!("{e}");
            return super::flags::EXIT_USAGE;
        }
    };
    match info(r) {
        Ok(i) if a.out.json => {
            super::out::stdout(&format!("{}\n", crate::bus::canonical_json(&to_json(&i))))
        }
        Ok(i) => super::out::stdout(&render(&i)),
        Err(e) => {
            errln!("{}: {e}", a.file.display());
            super::flags::EXIT_USAGE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HDR: &str = r#"{"type":"header","v":2,"name":"i","date":"2025-04-09","open":"09:30","close":"09:35","symbols":{"SPX":{"prior_close":5000.0},"SPY":{"prior_close":500.0,"strike_step":1.0}},"vol":{"SPY":{"atm_iv":0.2}}}"#;

    fn t(ts: &str, sym: &str) -> String {
        format!(r#"{{"type":"tick","ts":"{ts}","sym":"{sym}","px":500.00,"sz":1}}"#)
    }

    #[test]
    fn counts_sessions_kinds_gaps_and_option_quotes() {
        let lines = [
            HDR.to_string(),
            t("09:30:00.000", "SPY"),
            t("09:30:00.000", "SPX"),
            r#"{"type":"quote","ts":"09:30:01.000","sym":"SPY","bid":499.99,"ask":500.01,"bsz":1,"asz":2}"#.into(),
            r#"{"type":"quote","ts":"09:30:01.000","sym":"SPY250409C00500000","bid":1.00,"ask":1.10,"bsz":1,"asz":2}"#.into(),
            r#"{"type":"quote","ts":"09:30:02.000","sym":"SPY250409C00500000","bid":1.01,"ask":1.11,"bsz":1,"asz":2}"#.into(),
            // 2m58s quiet, then to the close.
            t("09:33:00.000", "SPY"),
            t("09:34:30.000", "SPY"),
            r#"{"type":"session","date":"2025-04-10","open":"09:30","close":"09:32","prior":{"SPX":5001.0,"SPY":500.5}}"#.into(),
            t("09:30:00.000", "SPY"),
            t("09:31:59.000", "SPY"),
        ];
        let text = lines.join("\n") + "\n";
        let i = info(TapeReader::new(text.as_bytes()).unwrap()).unwrap();
        assert_eq!(i.sessions.len(), 2);
        assert_eq!(i.kinds["tick"], 6);
        assert_eq!(i.kinds["quote"], 3);
        assert_eq!(i.kinds["session"], 1);
        assert_eq!(i.symbols["SPY"], (5, 1));
        assert_eq!(i.symbols["SPX"], (1, 0));
        assert_eq!((i.option_quotes, i.option_contracts), (2, 1));
        let s1 = &i.sessions[0];
        assert_eq!((s1.events, s1.date.as_str()), (7, "2025-04-09"));
        assert_eq!(s1.first, Some(Ts::hms(9, 30, 0, 0)));
        assert_eq!(s1.last, Some(Ts::hms(9, 34, 30, 0)));
        // 09:30:02 -> 09:33:00 (2m58s) and 09:33:00 -> 09:34:30 (1m30s); the last 30 s
        // before the close are under a minute.
        assert_eq!(s1.gap_count, 2);
        assert_eq!(
            s1.gaps,
            vec![
                (Ts::hms(9, 30, 2, 0), 178_000),
                (Ts::hms(9, 33, 0, 0), 90_000)
            ]
        );
        let s2 = &i.sessions[1];
        assert_eq!((s2.n, s2.events, s2.gap_count), (2, 2, 1));
        let out = render(&i);
        assert!(out.contains("sessions 2"), "{out}");
        assert!(
            out.contains("option prices quoted for 1 contracts (2 quotes) on SPY"),
            "{out}"
        );
        assert!(out.contains("2 2025-04-10 09:30-09:32  events 2"), "{out}");
        // Without option quotes the chain is modeled.
        let v1: String = [
            HDR.replace("\"v\":2", "\"v\":1"),
            t("09:30:00.000", "SPY"),
            t("09:34:30.000", "SPY"),
        ]
        .join("\n")
            + "\n";
        let i = info(TapeReader::new(v1.as_bytes()).unwrap()).unwrap();
        assert!(render(&i).contains("option prices modeled (chain on SPY; no option quotes)"));
    }

    /// Realised vol from one-minute closes: SPY closes 500, 505, 500 in three minutes (a
    /// minute's earlier trades do not count), SPX one close only (no return, no figure).
    #[test]
    fn realised_vol_is_of_the_one_minute_closes() {
        let lines = [
            HDR.replace("09:35", "09:33"),
            t("09:30:00.000", "SPX"),
            t("09:30:00.000", "SPY"),
            r#"{"type":"tick","ts":"09:30:59.000","sym":"SPY","px":500.00,"sz":1}"#.into(),
            r#"{"type":"tick","ts":"09:31:10.000","sym":"SPY","px":499.00,"sz":1}"#.into(),
            r#"{"type":"tick","ts":"09:31:50.000","sym":"SPY","px":505.00,"sz":1}"#.into(),
            r#"{"type":"tick","ts":"09:32:40.000","sym":"SPY","px":500.00,"sz":1}"#.into(),
        ];
        let text = lines.join("\n") + "\n";
        let i = info(TapeReader::new(text.as_bytes()).unwrap()).unwrap();
        let rv = &i.sessions[0].realised_vol;
        let (r1, r2) = ((505.0f64 / 500.0).ln(), (500.0f64 / 505.0).ln());
        let want = ((r1 * r1 + r2 * r2) * 252.0).sqrt();
        assert!((rv["SPY"] - want).abs() < 1e-12, "{rv:?} vs {want}");
        assert!(!rv.contains_key("SPX"), "{rv:?}");
        let out = render(&i);
        assert!(
            out.contains(&format!(
                "realised vol (1m closes, annualised) SPY {:.1}%",
                want * 100.0
            )),
            "{out}"
        );
        let j = to_json(&i);
        assert_eq!(
            j["sessions"][0]["realised_vol"]["SPY"].as_f64(),
            Some(rv["SPY"])
        );
    }

    #[test]
    fn a_bad_line_is_refused_with_its_number() {
        let text = format!("{HDR}\n{}\nnot json\n", t("09:30:00.000", "SPY"));
        let e = info(TapeReader::new(text.as_bytes()).unwrap()).unwrap_err();
        assert_eq!(e.line, 3);
    }
}
