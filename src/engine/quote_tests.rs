//! Quote-driven fills (tape format v2): with `quote` events on the tape, `strict-cross-v1`
//! fills against the quoted side; the same tape without them fills as v1 always has
//! (shares at last ± 0.01, options at the spread model's book).

use super::*;
use crate::bus::{Bus, BusSide, Event};
use crate::market::read_tape_bytes;

const HDR_SH_V1: &str = r#"{"type":"header","v":1,"name":"q","date":"2025-04-09","open":"09:30","close":"16:00","symbols":{"SPY":{"prior_close":100.0}}}"#;
const HDR_OPT_V1: &str = r#"{"type":"header","v":1,"name":"q-opt","date":"2025-04-09","open":"09:30","close":"16:00","symbols":{"SPY":{"prior_close":100.0,"strike_step":1.0}},"vol":{"SPY":{"atm_iv":0.01,"skew":0.0}},"rate":0.0}"#;

/// `lines` after the header; `v2` makes it a version-2 header (quotes allowed).
fn tape(hdr: &str, v2: bool, lines: &[String]) -> String {
    let mut s = if v2 {
        hdr.replace("\"v\":1", "\"v\":2")
    } else {
        hdr.to_string()
    };
    s.push('\n');
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

fn tick(ts: &str, px: &str) -> String {
    format!(r#"{{"type":"tick","ts":"{ts}.000","sym":"SPY","px":{px},"sz":10}}"#)
}

fn quote(ts: &str, sym: &str, bid: &str, ask: &str) -> String {
    format!(
        r#"{{"type":"quote","ts":"{ts}.000","sym":"{sym}","bid":{bid},"ask":{ask},"bsz":5,"asz":7}}"#
    )
}

fn run(t: &str, plans: &str) -> Bus {
    let (h, evs) = read_tape_bytes(t.as_bytes()).expect("tape");
    let d = crate::lang::check(plans, crate::lang::Mode::File).expect("plans");
    let mut e = Engine::new(
        &h,
        EngineConfig::strict(Px(1000 * 10_000)),
        Bus::new(None).keeping(),
    );
    e.arm_document(&d);
    for ev in &evs {
        e.on_event(ev);
    }
    e.finish()
}

/// (side, px, quoted, ts) of every fill.
fn fills(b: &Bus) -> Vec<(BusSide, String, bool, String)> {
    b.events()
        .iter()
        .filter_map(|e| match e {
            Event::Fill {
                side,
                px,
                quoted,
                ts,
                ..
            } => Some((*side, px.to_string(), *quoted, ts.to_string())),
            _ => None,
        })
        .collect()
}

#[test]
fn share_buy_fills_at_the_quoted_ask_and_without_quotes_at_last_plus_a_cent() {
    let plan = "PLAN up budget 1R ttl +10m\n  WHEN spot > 100.5\n  DO buy 10 shares @ ask\n";
    let ticks = [tick("09:30:00", "100.00"), tick("09:30:02", "100.60")];
    // v1 (and v2 without quotes): the book is last ± 0.01, so the buy fills at 100.61.
    let v1 = fills(&run(&tape(HDR_SH_V1, false, &ticks), plan));
    assert_eq!(
        v1,
        vec![(BusSide::Buy, "100.61".into(), false, "09:30:02.000".into())]
    );
    let v2_bare = fills(&run(&tape(HDR_SH_V1, true, &ticks), plan));
    assert_eq!(v2_bare, v1);
    // With a quote on the tape (bid 100.40 / ask 100.75, wider than last ± 0.01), the same
    // order fills at the quoted ask, and the fill says so.
    let quoted = [
        ticks[0].clone(),
        quote("09:30:01", "SPY", "100.40", "100.75"),
        ticks[1].clone(),
    ];
    let got = fills(&run(&tape(HDR_SH_V1, true, &quoted), plan));
    assert_eq!(
        got,
        vec![(BusSide::Buy, "100.75".into(), true, "09:30:02.000".into())]
    );
}

#[test]
fn resting_share_order_fills_when_the_quoted_ask_crosses_below_its_limit() {
    // Buy @ 100.30 rests (quoted ask 100.50 is above it); trades alone (last 100.25, so
    // last + 0.01 = 100.26 < 100.30) do not fill it while a quote is on the tape; the next
    // quote with ask 100.28 < 100.30 fills it at the limit (strict-cross-v1's on_book).
    let plan = "PLAN dip budget 1R ttl +10m\n  WHEN spot > 0\n  DO buy 10 shares @ 100.30\n";
    let lines = [
        quote("09:30:00", "SPY", "100.40", "100.50"),
        tick("09:30:00", "100.45"),
        tick("09:30:01", "100.25"),
        quote("09:30:02", "SPY", "100.20", "100.28"),
    ];
    let got = fills(&run(&tape(HDR_SH_V1, true, &lines), plan));
    assert_eq!(
        got,
        vec![(BusSide::Buy, "100.30".into(), true, "09:30:02.000".into())]
    );
    // The same trades without quotes: the 100.25 print puts the ask at 100.26 < 100.30.
    let bare = [lines[1].clone(), lines[2].clone()];
    let got = fills(&run(&tape(HDR_SH_V1, false, &bare), plan));
    assert_eq!(
        got,
        vec![(BusSide::Buy, "100.30".into(), false, "09:30:01.000".into())]
    );
}

#[test]
fn option_quote_on_an_occ_symbol_replaces_the_model_book() {
    // Model: S = 100, 90 C fair 10.00, book 9.85 / 10.15 (see tests.rs). The tape quotes the
    // contract at 9.70 / 9.80: a buy @ ask fills at 9.80; a quote on another strike (91 C)
    // leaves the 90 C on the model.
    let plan = "PLAN o budget 2R ttl +10m\n  WHEN spot > 0\n  DO buy 1 90 C @ ask\n";
    let base = [tick("09:30:00", "100.00"), tick("09:30:01", "100.00")];
    let model = fills(&run(&tape(HDR_OPT_V1, false, &base), plan));
    assert_eq!(
        model,
        vec![(BusSide::Buy, "10.15".into(), false, "09:30:00.000".into())]
    );
    let q = [
        quote("09:30:00", "SPY250409C00090000", "9.70", "9.80"),
        base[0].clone(),
        base[1].clone(),
    ];
    let got = fills(&run(&tape(HDR_OPT_V1, true, &q), plan));
    assert_eq!(
        got,
        vec![(BusSide::Buy, "9.80".into(), true, "09:30:00.000".into())]
    );
    let other = [
        quote("09:30:00", "SPY   250409C00091000", "8.00", "8.10"),
        base[0].clone(),
        base[1].clone(),
    ];
    let got = fills(&run(&tape(HDR_OPT_V1, true, &other), plan));
    assert_eq!(got, model);
}

#[test]
fn v1_tapes_refuse_quotes_and_v2_checks_them() {
    use crate::market::TapeErrorKind as K;
    let err = |t: String| read_tape_bytes(t.as_bytes()).unwrap_err();
    let e = err(tape(
        HDR_SH_V1,
        false,
        &[quote("09:30:00", "SPY", "1.00", "1.01")],
    ));
    assert_eq!((e.line, e.kind), (2, K::UnknownType));
    let cases = [
        (
            quote("09:30:00", "SPY", "1.02", "1.01"),
            K::BadPrice,
            "crossed",
        ),
        (
            quote("09:30:00", "SPY", "0", "1.01"),
            K::BadPrice,
            "positive",
        ),
        (
            quote("09:30:00", "QQQ", "1.00", "1.01"),
            K::UnknownSymbol,
            "QQQ",
        ),
        (
            quote("09:30:00", "SPY250409C00090000", "1.00", "1.01"),
            K::UnknownSymbol,
            "strike_step",
        ),
        (
            r#"{"type":"quote","ts":"09:30:00.000","sym":"SPY","bid":1.00,"ask":1.01,"bsz":5}"#
                .to_string(),
            K::MissingField,
            "asz",
        ),
    ];
    for (line, kind, needle) in cases {
        let e = err(tape(HDR_SH_V1, true, std::slice::from_ref(&line)));
        assert_eq!((e.line, e.kind), (2, kind), "{line}: {e}");
        assert!(e.to_string().contains(needle), "{e}");
    }
    let opt = [
        (
            quote("09:30:00", "SPY250409C00090500", "1.00", "1.01"),
            K::BadField,
            "grid",
        ),
        (
            quote("09:30:00", "SPY250408C00090000", "1.00", "1.01"),
            K::BadField,
            "before",
        ),
        (
            quote("09:30:00", "QQQ250409C00090000", "1.00", "1.01"),
            K::UnknownSymbol,
            "QQQ",
        ),
    ];
    for (line, kind, needle) in opt {
        let e = err(tape(HDR_OPT_V1, true, std::slice::from_ref(&line)));
        assert_eq!((e.line, e.kind), (2, kind), "{line}: {e}");
        assert!(e.to_string().contains(needle), "{e}");
    }
    // An option's bid may be 0 (no bid); the canonical form round-trips byte for byte, the
    // padded OCC form is written compact.
    let t = tape(
        HDR_OPT_V1,
        true,
        &[quote("09:30:00", "SPY   250410P00090000", "0", "0.05")],
    );
    let (h, evs) = read_tape_bytes(t.as_bytes()).unwrap();
    let mut out = Vec::new();
    crate::market::write_tape(&mut out, &h, evs).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.ends_with(
            "{\"type\":\"quote\",\"ts\":\"09:30:00.000\",\"sym\":\"SPY250410P00090000\",\"bid\":0.00,\"ask\":0.05,\"bsz\":5,\"asz\":7}\n"
        ),
        "{out}"
    );
    let (h2, evs2) = read_tape_bytes(out.as_bytes()).unwrap();
    let mut again = Vec::new();
    crate::market::write_tape(&mut again, &h2, evs2).unwrap();
    assert_eq!(String::from_utf8(again).unwrap(), out);
}
