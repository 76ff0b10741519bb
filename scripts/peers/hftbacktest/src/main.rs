//! The hftbacktest side of `scripts/bench-peers.sh` (issue 19).
//!
//! Two modes:
//!
//! ```text
//! peer-hftbacktest convert TAPE OUTDIR   # Kestrel tape -> hftbacktest .npy + plan/level files
//! peer-hftbacktest run OUTDIR cross N    # N level-crossing strategies (levels-N.txt)
//! peer-hftbacktest run OUTDIR hold N     # N strategies that buy at the open and hold
//!                  [--fills FILE]        # (run) also write every fill, one a line
//! ```
//!
//! `convert` reads a Kestrel tape (JSON lines: a header, then `tick` / `iv` / `headline`
//! events) and writes, in OUTDIR:
//!
//! - `exec.npy`: the exec symbol's (SPY's) ticks as hftbacktest `Event`s (exchange and local
//!   flags, feed latency 0): for every tick whose price moved, the old best bid and ask
//!   removed and the new ones added (Kestrel's share book is `last ± 0.01`, docs/tapes.md
//!   "Shares"; a level holds `DEPTH_QTY` shares, since Kestrel's book has no size), then the
//!   trade itself (`px`, `sz`, buy side when the price rose or held, else sell);
//! - `other.npy`: every other symbol's ticks (SPX) as trade events, a second asset, so the
//!   peer reads every tick Kestrel reads (`iv` and `headline` events have no hftbacktest
//!   counterpart and are dropped; the count is printed);
//! - `plans-N.kestrel` and `levels-N.txt` for N in 0, 1, 10, 50: N plans `WHEN spot crosses
//!   above L` / `DO buy 10 shares @ ask` / `EXIT spot crosses below L - 0.50`, with the levels
//!   spread evenly between the session's opening print and its high (on a half cent, so a
//!   print never equals a level); `hold-50.kestrel`: 50 plans that buy 10 shares at the ask on
//!   the first print and hold to the close.
//!
//! `run` builds an hftbacktest `Backtest` (two L2 assets, `HashMapMarketDepth`, tick 0.01,
//! `NoPartialFillExchange`, `ConstantLatency(0, 0)`, no fees, `RiskAdverseQueueModel`; the
//! queue model never matters: every order here is marketable) and drives it with the normal
//! `Bot` API: `wait_next_feed` until the end of the data, the exec symbol's trades from
//! `last_trades`, orders by `submit_buy_order` / `submit_sell_order` (GTC limit at the best
//! ask / bid, which takes the book at once, as Kestrel's `strict-cross-v1` fills a marketable
//! order), fills read back from `orders`. Every wake-up marks every open position at the mid.
//! It prints one summary line: fills, net position, P&L in dollars, and a checksum over every
//! fill and mark, so none of the work can be optimised away.
//!
//! The crossing rule is Kestrel's (docs/runtime.md "Triggers"): a cross above L is a print
//! with `px > L` after a print with `px <= L`; the first print is never a cross. A strategy
//! fires once (as a Kestrel plan's WHEN does); its exit is evaluated from the entry on (the
//! entry print is the exit's first evaluation) and acts once. No entries at or after the
//! plans' `ttl 16:00`; exits still act.

use std::{
    fs::File,
    io::{BufRead, BufReader, BufWriter, Write},
    path::{Path, PathBuf},
    process::ExitCode,
};

use hftbacktest::{
    backtest::{
        Backtest, BacktestError, DataSource, ExchangeKind, L2AssetBuilder,
        assettype::LinearAsset,
        data::write_npy,
        models::{CommonFees, ConstantLatency, RiskAdverseQueueModel, TradingValueFeeModel},
    },
    prelude::*,
};

/// Shares per level of the converted book (Kestrel's share book has no size).
const DEPTH_QTY: f64 = 1_000_000.0;
/// Shares per order, as the plans' `buy 10 shares`.
const ORDER_QTY: f64 = 10.0;
/// The exit level sits this far below the entry level.
const EXIT_BELOW: f64 = 0.50;
/// The plans' `ttl 16:00`, in ns since midnight.
const TTL_NS: i64 = 16 * 3_600_000_000_000;
const TICK: f64 = 0.01;
const PLAN_COUNTS: [usize; 4] = [0, 1, 10, 50];
const HOLD_COUNT: usize = 50;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["convert", tape, out] => convert(Path::new(tape), Path::new(out)),
        ["run", dir, mode @ ("cross" | "hold"), n, rest @ ..]
            if matches!(rest, [] | ["--fills", _]) =>
        {
            match n.parse::<usize>() {
                Ok(n) => run(
                    Path::new(dir),
                    *mode == "hold",
                    n,
                    rest.get(1).map(Path::new),
                ),
                Err(_) => Err(format!(
                    "error code=USAGE message=N must be a whole number, not `{n}`"
                )),
            }
        }
        _ => Err(
            "error code=USAGE message=usage: peer-hftbacktest convert TAPE OUTDIR | \
                  run OUTDIR cross|hold N [--fills FILE]"
                .to_string(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------------------
// convert

/// The value of `"key":` in a canonical one-line JSON object: a string's contents or a number's
/// text.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("\"{key}\":");
    let at = line.find(&pat)? + pat.len();
    let rest = &line[at..];
    if let Some(s) = rest.strip_prefix('"') {
        Some(&s[..s.find('"')?])
    } else {
        let end = rest.find([',', '}']).unwrap_or(rest.len());
        Some(rest[..end].trim())
    }
}

/// `HH:MM:SS.mmm` as ns since midnight.
fn ts_ns(ts: &str) -> Option<i64> {
    let (hms, ms) = ts.split_once('.').unwrap_or((ts, "0"));
    let mut it = hms.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, s) = (it.next()??, it.next()??, it.next()??);
    let ms: i64 = ms.parse().ok()?;
    Some((((h * 60 + m) * 60 + s) * 1000 + ms) * 1_000_000)
}

fn ev(flags: u64, ts: i64, px: f64, qty: f64) -> Event {
    Event {
        ev: EXCH_EVENT | LOCAL_EVENT | flags,
        exch_ts: ts,
        local_ts: ts,
        px,
        qty,
        order_id: 0,
        ival: 0,
        fval: 0.0,
    }
}

fn cents(px: f64) -> f64 {
    (px * 100.0).round() / 100.0
}

fn convert(tape: &Path, out: &Path) -> Result<(), String> {
    let io = |p: &Path, e: std::io::Error| format!("error code=IO message={}: {e}", p.display());
    let f = File::open(tape).map_err(|e| io(tape, e))?;
    std::fs::create_dir_all(out).map_err(|e| io(out, e))?;
    let exec_sym = "SPY";
    let (mut exec, mut other) = (Vec::<Event>::new(), Vec::<Event>::new());
    let (mut prev_px, mut open_px, mut high) = (None::<f64>, None::<f64>, f64::MIN);
    let (mut dropped, mut lines) = (0usize, 0usize);
    for (i, line) in BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|e| io(tape, e))?;
        lines += 1;
        let bad = |what: &str| format!("error code=TAPE line={} message={what}: {line}", i + 1);
        match field(&line, "type") {
            Some("header") => continue,
            Some("tick") => {}
            Some(_) => {
                dropped += 1;
                continue;
            }
            None => return Err(bad("no type")),
        }
        let ts = field(&line, "ts")
            .and_then(ts_ns)
            .ok_or_else(|| bad("bad ts"))?;
        let px: f64 = field(&line, "px")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| bad("bad px"))?;
        let sz: f64 = field(&line, "sz")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        if field(&line, "sym") != Some(exec_sym) {
            other.push(ev(TRADE_EVENT | BUY_EVENT, ts, px, sz));
            continue;
        }
        if prev_px != Some(px) {
            if let Some(old) = prev_px {
                exec.push(ev(DEPTH_EVENT | BUY_EVENT, ts, cents(old - TICK), 0.0));
                exec.push(ev(DEPTH_EVENT | SELL_EVENT, ts, cents(old + TICK), 0.0));
            }
            exec.push(ev(
                DEPTH_EVENT | BUY_EVENT,
                ts,
                cents((px - TICK).max(TICK)),
                DEPTH_QTY,
            ));
            exec.push(ev(
                DEPTH_EVENT | SELL_EVENT,
                ts,
                cents(px + TICK),
                DEPTH_QTY,
            ));
        }
        let side = if prev_px.is_none_or(|p| px >= p) {
            BUY_EVENT
        } else {
            SELL_EVENT
        };
        exec.push(ev(TRADE_EVENT | side, ts, px, sz));
        prev_px = Some(px);
        open_px.get_or_insert(px);
        high = high.max(px);
    }
    let open_px = open_px.ok_or_else(|| format!("error code=TAPE message=no {exec_sym} tick"))?;
    for (name, data) in [("exec.npy", &exec), ("other.npy", &other)] {
        let p = out.join(name);
        let mut w = BufWriter::new(File::create(&p).map_err(|e| io(&p, e))?);
        write_npy(&mut w, data).map_err(|e| io(&p, e))?;
        w.flush().map_err(|e| io(&p, e))?;
    }
    for n in PLAN_COUNTS {
        let levels: Vec<f64> = (0..n)
            .map(|i| {
                let l = open_px + (high - open_px) * (i + 1) as f64 / (n + 1) as f64;
                (l * 100.0).floor() / 100.0 + 0.005
            })
            .collect();
        let mut txt = String::new();
        let mut plans = String::from("USING signal SPY exec SPY\n");
        for (i, l) in levels.iter().enumerate() {
            let x = l - EXIT_BELOW;
            txt.push_str(&format!("{l:.3} {x:.3}\n"));
            plans.push_str(&format!(
                "\nPLAN c{i:02} budget 0.1R ttl 16:00\n  WHEN spot crosses above {l:.3}\n  \
                 DO buy 10 shares @ ask\n  EXIT spot crosses below {x:.3}\n"
            ));
        }
        write(&out.join(format!("levels-{n}.txt")), &txt)?;
        write(&out.join(format!("plans-{n}.kestrel")), &plans)?;
    }
    let mut hold = String::from("USING signal SPY exec SPY\n");
    for i in 0..HOLD_COUNT {
        hold.push_str(&format!(
            "\nPLAN h{i:02} budget 0.1R ttl 16:00\n  WHEN spot > 0\n  DO buy 10 shares @ ask\n"
        ));
    }
    write(&out.join(format!("hold-{HOLD_COUNT}.kestrel")), &hold)?;
    println!(
        "converted {}: {lines} lines, {} {exec_sym} events (depth + trade), {} other-symbol \
         trades, {dropped} iv/headline events dropped; open {open_px:.2} high {high:.2}",
        tape.display(),
        exec.len(),
        other.len()
    );
    Ok(())
}

fn write(p: &Path, s: &str) -> Result<(), String> {
    std::fs::write(p, s).map_err(|e| format!("error code=IO message={}: {e}", p.display()))
}

// ---------------------------------------------------------------------------------------------
// run

#[derive(Clone, Copy, PartialEq)]
enum Stage {
    /// Waiting for the entry cross (or, for a holder, the first print).
    Armed,
    /// Entry order sent, not yet seen filled.
    Entering(OrderId),
    /// Holding; the exit is evaluated.
    Holding,
    /// Exit order sent, not yet seen filled.
    Exiting(OrderId),
    Done,
}

struct Strategy {
    level: f64,
    exit: f64,
    hold: bool,
    stage: Stage,
    /// The previous print seen by the clause being evaluated (entry while armed, exit while
    /// holding).
    prev: Option<f64>,
    position: f64,
    /// Cash in cents: sells minus buys.
    cash_cents: i64,
    fills: u32,
}

fn mix(h: u64, v: u64) -> u64 {
    (h ^ v).wrapping_mul(0x0000_0100_0000_01b3)
}

fn run(dir: &Path, hold: bool, n: usize, fills_out: Option<&Path>) -> Result<(), String> {
    // With `--fills FILE`: one line per fill, `HH:MM:SS.mmm side price qty` (the exchange's
    // timestamp), for the script's fill-by-fill comparison with Kestrel's Bus.
    let mut fill_log: Option<String> = fills_out.map(|_| String::new());
    let mut strategies: Vec<Strategy> = if hold {
        (0..n).map(|_| Strategy::new(0.0, 0.0, true)).collect()
    } else {
        let p = dir.join(format!("levels-{n}.txt"));
        let txt = std::fs::read_to_string(&p)
            .map_err(|e| format!("error code=IO message={}: {e}", p.display()))?;
        let mut v = Vec::new();
        for line in txt.lines() {
            let mut it = line.split_whitespace().map(str::parse::<f64>);
            match (it.next(), it.next()) {
                (Some(Ok(l)), Some(Ok(x))) => v.push(Strategy::new(l, x, false)),
                _ => return Err(format!("error code=LEVELS message=bad line `{line}`")),
            }
        }
        if v.len() != n {
            return Err(format!(
                "error code=LEVELS message={} holds {} levels, not {n}",
                p.display(),
                v.len()
            ));
        }
        v
    };

    let mut hbt = backtest(dir)?;
    let err = |e: BacktestError| format!("error code=BACKTEST message={e}");
    let mut checksum: u64 = 0xcbf2_9ce4_8422_2325;
    let mut wakes: u64 = 0;
    let mut last_px: Option<f64> = None;
    loop {
        let r = hbt.wait_next_feed(false, 86_400_000_000_000).map_err(err)?;
        // The last batch of events is processed by the call that returns `EndOfData`: it is
        // read like any other, then the loop ends.
        let end = r == ElapseResult::EndOfData;
        wakes += 1;
        let now = hbt.current_timestamp();
        // Orders sent on an earlier wake-up: read their fills back.
        let orders = hbt.orders(0);
        for s in strategies.iter_mut() {
            let (id, buy) = match s.stage {
                Stage::Entering(id) => (id, true),
                Stage::Exiting(id) => (id, false),
                _ => continue,
            };
            let Some(o) = orders.get(&id) else { continue };
            if o.status != Status::Filled {
                continue;
            }
            let px_cents = (o.exec_price_tick as f64 * o.tick_size * 100.0).round() as i64;
            s.fills += 1;
            checksum = mix(checksum, px_cents as u64);
            if let Some(log) = fill_log.as_mut() {
                let ms = o.exch_timestamp / 1_000_000;
                log.push_str(&format!(
                    "{:02}:{:02}:{:02}.{:03} {} {}.{:02} {}\n",
                    ms / 3_600_000,
                    ms / 60_000 % 60,
                    ms / 1000 % 60,
                    ms % 1000,
                    if buy { "buy" } else { "sell" },
                    px_cents / 100,
                    px_cents % 100,
                    o.exec_qty
                ));
            }
            if buy {
                s.position += o.exec_qty;
                s.cash_cents -= px_cents * o.exec_qty as i64;
                s.stage = Stage::Holding;
            } else {
                s.position -= o.exec_qty;
                s.cash_cents += px_cents * o.exec_qty as i64;
                s.stage = Stage::Done;
            }
        }
        hbt.clear_inactive_orders(Some(0));

        // The exec symbol's print(s) since the last wake-up (one a second on these tapes).
        let print = hbt.last_trades(0).last().map(|t| t.px);
        hbt.clear_last_trades(None);
        if let Some(px) = print {
            last_px = Some(px);
            let (bid, ask) = {
                let d = hbt.depth(0);
                (d.best_bid(), d.best_ask())
            };
            for (i, s) in strategies.iter_mut().enumerate() {
                let id_base = (i as u64) * 2 + 1;
                match s.stage {
                    Stage::Armed if now < TTL_NS => {
                        let fire = if s.hold {
                            px > 0.0
                        } else {
                            s.prev.is_some_and(|p| p <= s.level) && px > s.level
                        };
                        s.prev = Some(px);
                        if fire {
                            hbt.submit_buy_order(
                                0,
                                id_base,
                                ask,
                                ORDER_QTY,
                                TimeInForce::GTC,
                                OrdType::Limit,
                                false,
                            )
                            .map_err(err)?;
                            s.stage = Stage::Entering(id_base);
                            // The entry print is the exit clause's first evaluation.
                            s.prev = Some(px);
                        }
                    }
                    Stage::Holding if !s.hold => {
                        let exit = s.prev.is_some_and(|p| p >= s.exit) && px < s.exit;
                        s.prev = Some(px);
                        if exit {
                            hbt.submit_sell_order(
                                0,
                                id_base + 1,
                                bid,
                                s.position,
                                TimeInForce::GTC,
                                OrdType::Limit,
                                false,
                            )
                            .map_err(err)?;
                            s.stage = Stage::Exiting(id_base + 1);
                        }
                    }
                    _ => {}
                }
            }
        }

        // Mark every open position at the mid, every wake-up.
        let d = hbt.depth(0);
        let mid = (d.best_bid() + d.best_ask()) / 2.0;
        for s in strategies.iter().filter(|s| s.position != 0.0) {
            checksum = mix(checksum, (s.position * mid).to_bits());
        }
        if end {
            break;
        }
    }

    // The close: open positions at the last print (Kestrel marks shares at last).
    let last = last_px.unwrap_or(0.0);
    let last_cents = (last * 100.0).round() as i64;
    let fills: u32 = strategies.iter().map(|s| s.fills).sum();
    let position: f64 = strategies.iter().map(|s| s.position).sum();
    let pnl_cents: i64 = strategies
        .iter()
        .map(|s| s.cash_cents + s.position as i64 * last_cents)
        .sum();
    let sv = hbt.state_values(0);
    let (engine_fills, engine_position) = (sv.num_trades, sv.position);
    hbt.close().map_err(err)?;
    if let (Some(p), Some(log)) = (fills_out, fill_log) {
        write(p, &log)?;
    }
    println!(
        "peer=hftbacktest-0.9.4 mode={} plans={n} wakes={wakes} fills={fills} engine_fills={engine_fills} \
         position={position} engine_position={engine_position} pnl_usd={}.{:02} checksum={checksum:016x}",
        if hold { "hold" } else { "cross" },
        if pnl_cents < 0 {
            format!("-{}", -pnl_cents / 100)
        } else {
            (pnl_cents / 100).to_string()
        },
        pnl_cents.abs() % 100,
    );
    Ok(())
}

impl Strategy {
    fn new(level: f64, exit: f64, hold: bool) -> Self {
        Self {
            level,
            exit,
            hold,
            stage: Stage::Armed,
            prev: None,
            position: 0.0,
            cash_cents: 0,
            fills: 0,
        }
    }
}

fn backtest(dir: &Path) -> Result<Backtest<HashMapMarketDepth>, String> {
    let asset = |file: PathBuf, trades_cap: usize| {
        L2AssetBuilder::new()
            .data(vec![DataSource::File(file.to_string_lossy().into_owned())])
            .latency_model(ConstantLatency::new(0, 0))
            .asset_type(LinearAsset::new(1.0))
            .fee_model(TradingValueFeeModel::new(CommonFees::new(0.0, 0.0)))
            .exchange(ExchangeKind::NoPartialFillExchange)
            .queue_model(RiskAdverseQueueModel::new())
            .last_trades_capacity(trades_cap)
            .depth(|| HashMapMarketDepth::new(TICK, 1.0))
            .build()
            .map_err(|e| format!("error code=BACKTEST message={e}"))
    };
    Backtest::builder()
        .add_asset(asset(dir.join("exec.npy"), 16)?)
        .add_asset(asset(dir.join("other.npy"), 0)?)
        .build()
        .map_err(|e| format!("error code=BACKTEST message={e}"))
}
