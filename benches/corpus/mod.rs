//! Large deterministic documents for the parser benches (`benches/lang.rs`) and the
//! whole-process comparison (`examples/doc_corpus.rs`, run by `scripts/bench-whole.sh`): a
//! Kestrel document of ladder plans and TOML of the same shape, each of a given byte count.

/// The largest Kestrel document the limits admit is bounded by bytes (8 MiB,
/// `limits::MAX_DOCUMENT_BYTES`) and statements (1,000, `limits::MAX_STATEMENTS`), not by
/// lines: a plan may hold any number of RELOAD rungs. This writes `USING` and up to 999
/// ladder plans (the chase and fade-ladder examples' clauses, with rungs every 0.25 below the
/// entry) of about `target` bytes, spreading the rungs over the plans so the document stays
/// within both limits; every line is canonical, so `kestrel print` gives the same bytes back.
#[allow(dead_code)]
pub fn kestrel_ladders(target: usize) -> String {
    const PLANS: usize = 999;
    // Each plan's share of the bytes: its rungs run until the plan reaches it.
    let share = target / PLANS;
    let mut s = String::with_capacity(target + 4096);
    s.push_str("# Ladder plans: each flush into the band is an entry, not a warning.\n");
    s.push_str("USING signal SPX exec SPY 0dte\n");
    for p in 0..PLANS {
        if s.len() >= target {
            break;
        }
        let level = 5000 + (p % 200);
        let plan_start = s.len();
        s.push_str(&format!(
            "\n# Plan {p}: fade the flush below {level}.\n\
             PLAN band-fade-{p} budget 0.3R ttl 14:45 regime {{intraday: range}}\n  \
             WHEN spot crosses below {level} AND velocity(1m) >= p90\n  \
             DO buy 2 +1 C @ min(fair-3c, mid) peg esc fair 2m esc ask 4m cap fair+5c cancel-if spot < vwap\n"
        ));
        // The closing clauses below are about 170 bytes.
        for r in 0.. {
            if s.len() >= target || s.len() - plan_start + 170 >= share {
                break;
            }
            // The rung's level in cents: 25 cents lower each rung.
            let c = level * 100 - (r + 1) * 25;
            s.push_str(&format!(
                "  RELOAD WHEN spot crosses below {}.{:02} buy 1 -{} P @ lean(bid, fair, 0.4)\n",
                c / 100,
                c % 100,
                r % 5 + 1
            ));
        }
        s.push_str(
            "  TP 1.8x frac 0.5 @ fair                 # bank half\n  \
             CANCEL-IF phase close\n  \
             EXIT spot < vwap held 60s @ fair esc bid 30s\n  \
             INVALIDATE spot > 5160 held 90s -> halt, ride\n",
        );
    }
    s
}

/// Realistic TOML of about `target` bytes: tables, arrays of tables, inline tables, strings,
/// numbers, dates, comments (the shape of a Cargo manifest plus an app config).
#[allow(dead_code)]
pub fn toml(target: usize) -> String {
    let mut s = String::with_capacity(target + 1024);
    let mut n = 0;
    while s.len() < target {
        s.push_str(&format!(
            r#"# Strategy {n}: range fade with a ladder
[strategy-{n}]
name = "band-fade-{n}"
budget = 0.30           # in R
ttl = "14:45"
regime = {{ intraday = "range", vol = "falling" }}
symbols = ["SPX", "SPY"]
enabled = true
created = 2025-04-09T09:30:00Z

[[strategy-{n}.rung]]
trigger = "spot crosses below 5120"
qty = 1
strike = -1
price = {{ anchor = "bid", lean = "fair", weight = 0.4 }}

[[strategy-{n}.rung]]
trigger = "spot crosses below 5114"
qty = 1
strike = -2
price = {{ anchor = "bid", lean = "fair", weight = 0.4 }}

[strategy-{n}.exit]
take-profit = 1.8
fraction = 0.5
invalidate = "spot > 5160 held 90s"

"#
        ));
        n += 1;
    }
    s
}
