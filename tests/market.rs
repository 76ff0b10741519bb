//! Market layer: tapes, the generator and the market model, on hand-worked examples.
//!
//! Set `KESTREL_BLESS=1` to rewrite the shipped tapes in `tapes/` from the generator.

use std::path::PathBuf;

use kestrel_desk::market::*;

const HDR: &str = r#"{"type":"header","v":1,"name":"hand","date":"2025-04-09","tz":"America/New_York","open":"09:30","close":"16:00","symbols":{"SPX":{"prior_close":100.00},"SPY":{"prior_close":10.00,"strike_step":1.00}},"vol":{"SPY":{"atm_iv":0.2,"skew":-0.5}},"rate":0.0,"source":"hand","tags":{"regime":"range","source":"synthetic"}}"#;

fn tape(lines: &[String]) -> String {
    let mut s = format!("{HDR}\n");
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

fn tick(ts: &str, sym: &str, px: &str, sz: u64) -> String {
    format!(r#"{{"type":"tick","ts":"{ts}","sym":"{sym}","px":{px},"sz":{sz}}}"#)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// Replay `text` through a fresh state, returning the state after the events with
/// `ts <= until` (all if `None`).
fn replay(text: &str, until: Option<Ts>) -> MarketState {
    let r = TapeReader::new(text.as_bytes()).expect("header");
    let mut st = MarketState::new(r.header());
    for ev in r {
        let ev = ev.expect("event");
        if until.is_some_and(|u| ev.ts() > u) {
            break;
        }
        st.apply(&ev);
    }
    st
}

#[test]
fn good_tiny_tape_reads_fully() {
    let text = tape(&[
        tick("09:30:00.000", "SPX", "5002.10", 0),
        tick("09:30:00.000", "SPY", "500.12", 1200),
        r#"{"type":"iv","ts":"11:00:00.000","sym":"SPY","atm_iv":0.35}"#.into(),
        r#"{"type":"headline","ts":"13:19:00.000","text":"Tariffs"}"#.into(),
    ]);
    let (h, evs) = read_tape_bytes(text.as_bytes()).unwrap();
    assert_eq!(h.name, "hand");
    assert_eq!(evs.len(), 4);
    match &evs[0] {
        TapeEvent::Tick(t) => {
            assert_eq!((t.px, t.px.to_string()), (Px(50_021_000), "5002.10".into()))
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn each_refusal_gives_line_and_reason() {
    let ok1 = tick("09:30:01.000", "SPY", "10.00", 100);
    let cases = [
        (
            r#"{"type":"tick","ts":"09:30:02.000","sym":"SPY","px":10.0"#.to_string(),
            "truncated",
        ),
        (tick("09:30:00.500", "SPY", "10.00", 100), "out-of-order"),
        (tick("09:30:02.000", "QQQ", "10.00", 100), "unknown-symbol"),
        (tick("09:30:02.000", "SPY", "NaN", 100), "bad-price"),
        (tick("09:30:02.000", "SPY", "-10.00", 100), "bad-price"),
        (
            r#"{"type":"trade","ts":"09:30:02.000"}"#.to_string(),
            "unknown-type",
        ),
        (
            r#"{"type":"tick","ts":"09:30:02.000","sym":"SPY","px":10.0}"#.to_string(),
            "missing-field",
        ),
    ];
    for (bad, reason) in cases {
        let text = tape(&[ok1.clone(), ok1.clone(), bad.clone(), ok1.clone()]);
        let err = read_tape_bytes(text.as_bytes()).expect_err(&bad);
        assert_eq!(err.line, 4, "{bad}");
        let shown = err.to_string();
        assert!(
            shown.starts_with(&format!("error code=TAPE line=4 message={reason}: ")),
            "{shown}"
        );
    }
    let bad_header = HDR.replace(r#""v":1"#, r#""v":"one""#);
    let err = read_tape_bytes(bad_header.as_bytes()).unwrap_err();
    assert_eq!((err.line, err.kind), (1, TapeErrorKind::BadVersion));
}

#[test]
fn series_by_hand() {
    let text = tape(&[
        tick("09:29:59.000", "SPY", "9.90", 100), // pre-open: spot only
        tick("09:30:00.000", "SPX", "100.00", 0),
        tick("09:30:00.000", "SPY", "10.00", 100),
        tick("09:30:00.500", "SPY", "10.20", 300),
        tick("09:30:01.000", "SPX", "101.00", 0),
        tick("09:30:02.000", "SPX", "102.50", 0),
        tick("09:30:02.000", "SPY", "9.80", 100),
    ]);
    let r = TapeReader::new(text.as_bytes()).unwrap();
    let mut st = MarketState::new(r.header());
    let mut evs = r.map(Result::unwrap);

    // UNKNOWN before data.
    assert_eq!(st.spot("SPY"), None);
    assert_eq!(st.value("SPY", Series::Hod), None);
    assert_eq!(st.value("SPY", Series::Vwap), None);
    assert_eq!(st.prior_close("SPY"), Some(Px::from_cents(1000)));
    assert_eq!(st.value("QQQ", Series::Spot), None);
    assert!(!st.has_symbol("QQQ"));

    st.apply(&evs.next().unwrap());
    assert_eq!(st.spot("SPY"), Some(Px::from_cents(990)));
    assert_eq!(
        st.hod("SPY"),
        None,
        "pre-open trades do not make the session high"
    );
    assert_eq!(st.open_px("SPY"), None);

    for ev in evs {
        st.apply(&ev);
    }
    assert_eq!(st.now(), Some(Ts::hms(9, 30, 2, 0)));
    assert_eq!(st.spot("SPY"), Some(Px::from_cents(980)));
    assert_eq!(st.hod("SPY"), Some(Px::from_cents(1020)));
    assert_eq!(st.lod("SPY"), Some(Px::from_cents(980)));
    assert_eq!(st.open_px("SPY"), Some(Px::from_cents(1000)));
    // (10.00*100 + 10.20*300 + 9.80*100) / 500 = 5040 / 500
    assert!(close(st.vwap("SPY").unwrap(), 10.08));
    // Index with sz 0: equal weights, (100 + 101 + 102.5) / 3.
    assert!(close(st.vwap("SPX").unwrap(), 303.5 / 3.0));
    // Samples: 09:30:00 -> 10.00 (the 10.20 at .500 came later), 09:30:01 -> 10.20.
    assert_eq!(st.samples_recorded(), 2);
    assert!(close(
        st.velocity("SPY", 1).unwrap(),
        100.0 * (9.80 / 10.20 - 1.0)
    ));
    assert!(close(st.velocity("SPY", 2).unwrap(), -2.0));
    assert_eq!(
        st.velocity("SPY", 3),
        None,
        "window reaches before the open"
    );
    assert!(close(st.value("SPX", Series::Velocity(2)).unwrap(), 2.5));
    assert!(close(st.time_secs().unwrap(), 34_202.0));
    assert_eq!(
        st.percentile("SPY", Series::Spot, 50.0),
        None,
        "too little history"
    );
    assert!(st.phase_open());
    assert!(!st.phase_close());
    assert!(close(
        st.minutes_to_close().unwrap(),
        (23_400.0 - 2.0) / 60.0
    ));
}

fn ramp(n: u32, extra: &[String]) -> String {
    let mut lines: Vec<String> = (0..n)
        .map(|k| {
            let ts = Ts::hms(9, 30, 0, 0).ms() + k * 1000;
            tick(
                &Ts(ts).to_string(),
                "SPY",
                &Px::from_cents(1000 + i64::from(k)).to_string(),
                100,
            )
        })
        .collect();
    lines.extend_from_slice(extra);
    tape(&lines)
}

#[test]
fn percentile_by_hand_and_no_look_ahead() {
    // SPY at 10.00 + k cents at 09:30:00 + k s, k = 0..59.
    let text = ramp(60, &[]);
    // After the tick at 09:30:29, samples 0..=28 exist: 29 < 30, UNKNOWN.
    let st = replay(&text, Some(Ts::hms(9, 30, 29, 0)));
    assert_eq!(st.samples_recorded(), 29);
    assert_eq!(st.percentile("SPY", Series::Spot, 50.0), None);
    let st = replay(&text, Some(Ts::hms(9, 30, 30, 0)));
    assert_eq!(st.samples_recorded(), 30);
    assert!(close(
        st.percentile("SPY", Series::Spot, 0.0).unwrap(),
        10.00
    ));
    assert!(close(
        st.percentile("SPY", Series::Spot, 100.0).unwrap(),
        10.29
    ));

    // At 09:30:59: samples 10.00..10.58 (59 values). p50: h = 29 -> 10.29.
    // p95: h = 58 * 0.95 = 55.1 -> 10.55 + 0.1 * 0.01.
    let mut st = replay(&text, None);
    assert_eq!(st.samples_recorded(), 59);
    assert!(close(
        st.percentile("SPY", Series::Spot, 50.0).unwrap(),
        10.29
    ));
    assert!(close(
        st.percentile("SPY", Series::Spot, 95.0).unwrap(),
        10.551
    ));
    assert_eq!(st.percentile("SPY", Series::Spot, 101.0), None);
    // Tracked and untracked agree.
    let untracked = st.percentile("SPY", Series::Spot, 95.0);
    assert!(st.track("SPY", Series::Spot));
    assert_eq!(st.percentile("SPY", Series::Spot, 95.0), untracked);
    // Velocity(1) is +0.01/px each second: its samples are all positive.
    assert!(st.percentile("SPY", Series::Velocity(1), 0.0).unwrap() > 0.0);

    // No look-ahead: a tape that shares the prefix but then spikes gives the same answer at
    // 09:30:59, whether the series was tracked from the start or not.
    let spiky = ramp(60, &[tick("09:31:30.000", "SPY", "50.00", 100)]);
    let r = TapeReader::new(spiky.as_bytes()).unwrap();
    let mut st2 = MarketState::new(r.header());
    st2.track("SPY", Series::Spot);
    st2.track("SPY", Series::Hod);
    for ev in r {
        let ev = ev.unwrap();
        if ev.ts() > Ts::hms(9, 30, 59, 0) {
            break;
        }
        st2.apply(&ev);
    }
    assert_eq!(st2.percentile("SPY", Series::Spot, 95.0), untracked);
    assert_eq!(
        st2.percentile("SPY", Series::Hod, 95.0),
        st.percentile("SPY", Series::Hod, 95.0)
    );
    // After the spike the distribution includes it once the clock passes it.
    let st3 = replay(&spiky, None);
    assert_eq!(st3.hod("SPY"), Some(Px::from_cents(5000)));
    // Samples up to 09:31:29 only: the spike at 09:31:30 is not yet sampled.
    assert!(close(
        st3.percentile("SPY", Series::Spot, 100.0).unwrap(),
        10.59
    ));
}

#[test]
fn option_chain_on_the_tape() {
    let text = tape(&[tick("09:30:00.000", "SPY", "9.80", 100)]);
    let st = replay(&text, None);
    assert_eq!(
        st.exec_symbol().map(|s| s.to_string()).as_deref(),
        Some("SPY")
    );
    assert_eq!(st.atm_strike("SPY"), Some(Px::from_cents(1000)));
    assert_eq!(st.strike_for("SPY", -1), Some(Px::from_cents(900)));
    assert_eq!(st.strike_for("SPY", 2), Some(Px::from_cents(1200)));
    assert_eq!(st.strike_for("SPX", 0), None, "no chain on the index");
    let k = Px::from_cents(900);
    let c = st.quote("SPY", Expiry::ZeroDte, k, Right::Call).unwrap();
    let p = st.quote("SPY", Expiry::ZeroDte, k, Right::Put).unwrap();
    assert_eq!(c.intrinsic, Px::from_cents(80));
    assert_eq!(p.intrinsic, Px::ZERO);
    let t = (16.0 - 9.5) * 3600.0 / (365.0 * 86_400.0);
    assert!(close(c.t_years, t));
    // rate 0: C - P = S - K.
    assert!((c.fair - p.fair - 0.80).abs() < 1e-9);
    assert!(c.bid <= c.ask && c.mid == Px((c.bid.raw() + c.ask.raw()) / 2));
    assert!(c.delta > 0.9 && p.delta <= 0.0 && c.gamma >= 0.0);
    // Smile: iv = 0.2 - 0.5 * ln(9 / 9.8).
    assert!(close(c.iv, 0.2 - 0.5 * (9.0f64 / 9.8).ln()));
    // Off-grid strikes and past expiries are UNKNOWN.
    assert_eq!(
        st.quote("SPY", Expiry::ZeroDte, Px::from_cents(950), Right::Call),
        None
    );
    let past = Expiry::Date(Date::parse("2025-04-08").unwrap());
    assert_eq!(st.quote("SPY", past, k, Right::Call), None);
    let later = st.quote("SPY", Expiry::OneDte, k, Right::Put).unwrap();
    assert!(later.t_years > c.t_years);
    let sq = st.share_quote("SPY").unwrap();
    assert_eq!(
        (sq.bid, sq.ask, sq.fair),
        (
            Px::from_cents(979),
            Px::from_cents(981),
            Px::from_cents(980)
        )
    );
    assert!(
        st.gex("SPY", Expiry::ZeroDte, Px::from_cents(1000))
            .is_some()
    );
}

#[test]
fn iv_events_move_the_smile() {
    let text = tape(&[
        tick("09:30:00.000", "SPY", "10.00", 100),
        r#"{"type":"iv","ts":"09:31:00.000","sym":"SPY","atm_iv":0.4}"#.into(),
    ]);
    let before = replay(&text, Some(Ts::hms(9, 30, 0, 0)));
    let after = replay(&text, None);
    let k = Px::from_cents(1000);
    let a = before
        .quote("SPY", Expiry::ZeroDte, k, Right::Call)
        .unwrap();
    let b = after.quote("SPY", Expiry::ZeroDte, k, Right::Call).unwrap();
    assert!(b.fair > a.fair);
    assert_eq!(after.smile("SPY").map(|s| s.skew), Some(-0.5));
}

fn shipped() -> Vec<(Regime, u64, &'static str)> {
    vec![
        (Regime::Trend, 1, "tapes/trend-2025-04-09-s1.jsonl"),
        (Regime::Range, 2, "tapes/range-2025-04-09-s2.jsonl"),
        (Regime::Shock, 7, "tapes/shock-2025-04-09-s7.jsonl"),
    ]
}

#[test]
fn shipped_tapes_regenerate_byte_identical() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for (regime, seed, rel) in shipped() {
        let mut bytes = Vec::new();
        write_generated(regime, seed, DEFAULT_DATE, &mut bytes).unwrap();
        let path = root.join(rel);
        if std::env::var_os("KESTREL_BLESS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        }
        let on_disk = std::fs::read(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert!(
            on_disk == bytes,
            "{rel} differs from the generator's output"
        );
    }
}

#[test]
fn shipped_shock_tape_replays_through_the_model() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let r = open_tape(&root.join("tapes/shock-2025-04-09-s7.jsonl")).unwrap();
    assert_eq!(
        r.header().tags.get("regime").map(String::as_str),
        Some("shock")
    );
    let mut st = MarketState::new(r.header());
    st.track("SPX", Series::Spot);
    st.track("SPX", Series::Velocity(60));
    for ev in r {
        st.apply(&ev.unwrap());
    }
    assert_eq!(st.now(), Some(Ts::hms(16, 0, 0, 0)));
    assert_eq!(st.samples_recorded(), 23_400); // the 16:00:00 sample needs a later clock
    assert!(st.t_minus(0.0) && st.phase_close());
    st.advance_to(Ts::hms(16, 0, 0, 1));
    assert!(!st.phase_close(), "after the close");
    assert_eq!(st.samples_recorded(), 23_401);
    let (hod, lod, spot) = (
        st.hod("SPX").unwrap(),
        st.lod("SPX").unwrap(),
        st.spot("SPX").unwrap(),
    );
    assert!(lod <= spot && spot <= hod);
    let p5 = st.percentile("SPX", Series::Velocity(60), 5.0).unwrap();
    let p95 = st.percentile("SPX", Series::Velocity(60), 95.0).unwrap();
    assert!(p5 < 0.0 && p95 > 0.0);
    assert!(st.headlines().len() >= 3);
    assert!(st.headline_within(u32::MAX));
}

#[test]
fn regimes_differ_measurably() {
    // Mean |close/open - 1| over a few seeds: trend moves more than range; shock has the
    // largest intraday high-low range.
    let stats = |regime: Regime| {
        let (mut mv, mut rng) = (0.0, 0.0);
        for seed in 0..3 {
            let g = generate(regime, seed, DEFAULT_DATE);
            let mut first = None;
            let (mut last, mut hi, mut lo) = (0.0f64, 0.0f64, f64::MAX);
            for ev in g {
                if let TapeEvent::Tick(t) = ev
                    && t.sym.as_str() == "SPX"
                {
                    let p = t.px.to_f64();
                    first.get_or_insert(p);
                    last = p;
                    hi = hi.max(p);
                    lo = lo.min(p);
                }
            }
            mv += (last / first.unwrap() - 1.0).abs();
            rng += hi / lo - 1.0;
        }
        (mv / 3.0, rng / 3.0)
    };
    let (trend, range, shock) = (
        stats(Regime::Trend),
        stats(Regime::Range),
        stats(Regime::Shock),
    );
    assert!(trend.0 > 2.0 * range.0, "{trend:?} {range:?}");
    assert!(shock.1 > range.1, "{shock:?} {range:?}");
}
