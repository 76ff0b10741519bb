//! GRADE end to end on generated tape families: a plan with an edge the generator builds in
//! is told apart from one without, against `VS null`; shards merge into the single-run report
//! byte for byte; resolution and shard files fail closed.

use std::path::{Path, PathBuf};
use std::process::Command;

use kestrel_desk::grade::{self, FileTapes, Options, RunKind, Source};
use kestrel_desk::lang::{self, Mode};
use kestrel_desk::market::{
    DEFAULT_DATE, EDGE_SECS, GenOptions, Px, Regime, TapeEvent, generate_with, read_tape_file,
    write_tape,
};

/// Write `count` sessions of `regime` (seeds `seed..`, consecutive weekdays from `date0`
/// days after 2025-04-09), each `minutes` long, into `dir`.
fn family(dir: &Path, regime: Regime, count: u64, seed: u64, minutes: u32, edge: f64) {
    let mut date = DEFAULT_DATE;
    for i in 0..count {
        let g = generate_with(
            regime,
            seed + i,
            date,
            GenOptions {
                minutes: Some(minutes),
                vwap_edge: edge,
            },
        );
        let h = g.header().clone();
        let mut f = std::io::BufWriter::new(
            std::fs::File::create(dir.join(format!("{}.jsonl", h.name))).unwrap(),
        );
        write_tape(&mut f, &h, g).unwrap();
        date = date.next_weekday().unwrap();
    }
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kestrel-grade-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn options(tapes: &Path, draws: u32, resamples: u32) -> Options {
    Options {
        tapes: Some(tapes.display().to_string()),
        draws,
        resamples,
        ..Options::new(Px::from_cents(100_000))
    }
}

fn prepare(doc: &str, opts: &Options) -> Result<grade::Prepared, grade::GradeError> {
    let d = lang::check(doc, Mode::File).unwrap_or_else(|e| panic!("{e:?}"));
    grade::prepare(
        &[Source {
            path: "grade.kestrel".into(),
            doc: d,
        }],
        opts,
    )
}

/// Parse a 4-decimal R string from the JSON report.
fn r(v: &serde_json::Value) -> f64 {
    v.as_str()
        .unwrap_or_else(|| panic!("not a decimal string: {v}"))
        .parse()
        .unwrap()
}

const EDGE_DOC: &str = "\
PLAN vwap-cross budget 1R ttl 10:00
  WHEN spot crosses above vwap
  DO buy 100 shares @ ask
  EXIT NOT plan(vwap-cross).filled within 5m

PLAN vwap-dip budget 1R ttl 10:00
  WHEN spot crosses below vwap
  DO buy 100 shares @ ask
  EXIT NOT plan(vwap-dip).filled within 5m

GRADE plan vwap-cross OVER tapes/trend-* FILL strict-cross-v1
  VS null

GRADE plan vwap-dip OVER tapes/range-* FILL strict-cross-v1
  VS null
";

/// Session length of the test tapes (minutes) and the VWAP-edge knob of the trend tapes.
const MINUTES: u32 = 45;
const EDGE: f64 = 0.004;

/// The generator's edge windows on a tape, recomputed from its `SPX` ticks by the knob's
/// documented rule (an up-cross of the equal-weighted session mean opens `EDGE_SECS`
/// seconds of drift on the following seconds): `edge[k]` is true when session second `k`
/// carries the drift.
fn edge_seconds(path: &Path) -> (Vec<bool>, f64) {
    let (_, evs) = read_tape_file(path).unwrap();
    let spx: Vec<i128> = evs
        .iter()
        .filter_map(|e| match e {
            TapeEvent::Tick(t) if t.sym.as_str() == "SPX" => Some(i128::from(t.px.raw())),
            _ => None,
        })
        .collect();
    let spy0 = evs
        .iter()
        .find_map(|e| match e {
            TapeEvent::Tick(t) if t.sym.as_str() == "SPY" => Some(t.px.to_f64()),
            _ => None,
        })
        .unwrap();
    let mut edge = vec![false; spx.len() + 1];
    let (mut sum, mut prev_above, mut until) = (0i128, false, 0usize);
    for (k, px) in spx.iter().enumerate() {
        sum += px;
        let above = px * (k as i128 + 1) > sum;
        if k > 0 && above && !prev_above {
            until = k + EDGE_SECS as usize;
        }
        prev_above = above;
        if k + 1 < edge.len() {
            edge[k + 1] = k < until; // second k + 1 is inside the window
        }
    }
    (edge, spy0)
}

/// The edge: a trigger the generator makes predictive, told apart from one it does not.
///
/// **Why the edge exists.** The trend tapes are generated with the VWAP-edge knob at
/// `EDGE` = 0.4%: each time SPX crosses above its session VWAP, the next 300 seconds carry
/// an extra drift adding up to +0.4%. `vwap-cross` enters on exactly that cross (its signal
/// is SPX, whose VWAP the runtime computes as the generator does), buying 100 SPY at the ask,
/// and exits 5 minutes after its fill (`NOT plan(vwap-cross).filled within 5m` turns true
/// 301 s after the fill): its hold covers the whole window. With SPY ≈ $500 the edge is worth
/// 100 × 500 × 0.004 ≈ $200 = 0.20R (1R = $1000), less the round-trip spread of the share
/// book (2 × $0.01 × 100 = $2). The trend drift itself (0.8–1.8% a day, ≈ 0.02% per five
/// minutes) and the momentum term (8% of the last second's return) are the same for any
/// five-minute hold, so they add noise but no difference.
///
/// **What the null gets.** `VS null` enters the same 100 shares at a seeded random second of
/// the active window (09:30–10:00) and keeps the same exit. Its hold captures the drift only
/// for the part of its 300 s that falls inside some edge window: a fraction `f` of the
/// plan's. The test recomputes the windows from each tape's SPX ticks and averages the
/// coverage over every possible entry second, so the expected difference per tape is
/// `100 · S · EDGE · (1 − f)` dollars, computed here independently of the grade. Noise:
/// five minutes of SPX near the open has σ ≈ 0.15 / √(252·23400) · 1.8 · √300 ≈ 0.19%, about
/// 0.1R per run, so with 20 tapes the mean difference has a standard error of about
/// 0.025R: an edge of ≈ 0.15R is six standard errors away from zero, and the 95% interval
/// must exclude 0 and contain the worked-out expectation.
///
/// **No edge.** The range tapes have no knob. `vwap-dip` buys the first down-cross of VWAP
/// and holds five minutes. The range regime mean-reverts toward the open with a half-life of
/// about an hour (2e-4 of the deviation per second): over five minutes that pulls the price
/// back by ≈ 6% of its deviation from the open, and near the open both the plan's entries
/// (at VWAP, hence near the open price) and the null's (symmetric around it) have a mean
/// deviation near zero, so the expected difference is ≈ 0 (at most ≈ $3 = 0.003R, far inside
/// the interval's half-width of ≈ 0.03R). The interval must include 0.
#[test]
fn edge_is_told_apart_from_no_edge_against_null() {
    let d = tmp("edge");
    family(&d, Regime::Trend, 20, 100, MINUTES, EDGE);
    family(&d, Regime::Range, 20, 200, MINUTES, 0.0);
    let p = prepare(EDGE_DOC, &options(&d, 20, 2000)).unwrap();
    assert_eq!(p.job.unit_count(), 2 * 20 * 21);
    let results = grade::run_all(&p, &mut FileTapes::default()).unwrap();
    let report: serde_json::Value =
        serde_json::from_str(&grade::report_json(&p.job, &results)).unwrap();

    // The expected difference of the edge plan, from the tapes alone.
    let window = 1800usize; // 09:30:00 ..< 10:00:00, in seconds
    let mut expected = 0.0;
    for t in &p.job.grades[0].tapes {
        let (edge, spy) = edge_seconds(Path::new(&t.path));
        // A null entering at second u holds the returns of seconds u ..= u + 300.
        let cover: f64 = (0..window)
            .map(|u| {
                (u..=u + 300)
                    .filter(|&j| edge.get(j) == Some(&true))
                    .count() as f64
            })
            .sum::<f64>()
            / window as f64;
        let f = cover / f64::from(EDGE_SECS);
        assert!((0.0..=1.0).contains(&f), "{f}");
        expected += 100.0 * spy * EDGE * (1.0 - f) / 1000.0;
    }
    expected /= 20.0;
    // Windows cover part of the morning, not all of it: the null gets some of the edge.
    assert!(expected > 0.05 && expected < 0.20, "expected {expected}");

    eprintln!("worked-out expected difference vs null: {expected:.4}R");
    let edge_cell = &report["grades"][0]["cells"][0];
    assert_eq!(edge_cell["cell"], "all");
    assert_eq!(edge_cell["runs"], 20);
    let v = &edge_cell["vs"]["null"];
    let (lo, hi, diff) = (r(&v["ci_low_r"]), r(&v["ci_high_r"]), r(&v["diff_mean_r"]));
    assert!(
        lo > 0.0,
        "edge plan: CI must exclude 0 and be positive: {v}"
    );
    assert_eq!(v["ci_excludes_zero"], true);
    assert!(
        lo <= expected && expected <= hi,
        "worked-out expectation {expected:.4}R outside the CI [{lo}, {hi}] (mean {diff})"
    );
    // The plan's own mean is the whole edge less the spread: ≈ 0.20R - 0.002R, within noise.
    let mean = r(&edge_cell["mean_r"]);
    assert!((0.12..0.28).contains(&mean), "edge plan mean {mean}");

    let no_edge = &report["grades"][1]["cells"][0]["vs"]["null"];
    let (lo, hi) = (r(&no_edge["ci_low_r"]), r(&no_edge["ci_high_r"]));
    assert!(
        lo <= 0.0 && 0.0 <= hi,
        "no-edge plan: CI must include 0: {no_edge}"
    );
    assert_eq!(no_edge["ci_excludes_zero"], false);
    assert!(
        hi - lo < 0.15,
        "the no-edge interval is informative: {no_edge}"
    );

    // Null draws: the same entry count as the plan, at seeded instants in the window.
    for u in results.iter().filter(|u| u.kind == RunKind::Null) {
        assert_eq!(u.instants.len(), 1);
        assert!(u.instants[0].as_str() >= "09:30:00" && u.instants[0].as_str() < "10:00:00");
        assert_eq!(u.plans[0].fires, 1, "{u:?}");
    }
    let again = grade::run_all(&p, &mut FileTapes::default()).unwrap();
    assert_eq!(results, again, "seeded: the same draws every run");

    let text = grade::report_text(&p.job, &results);
    assert!(
        text.contains("excludes 0") && text.contains("includes 0"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

const SHARD_DOC: &str = "\
USING signal SPX exec SPY 0dte

BOOK spy budget 3R coverage SPY

PLAN breakout budget 1R ttl 10:00 regime {intraday: trend}
  WHEN spot crosses above vwap
  DO buy 100 shares @ ask
  EXIT NOT plan(breakout).filled within 5m
  ARM add-on

PLAN add-on budget 0.5R ttl +10m
  WHEN velocity(1m) > 0
  DO buy 1 ATM C @ fair+2c
  EXIT spot < vwap

PLAN unrelated budget 1R ttl 15:00
  WHEN spot > 1
  DO buy 1 shares @ ask

PLAN vwap-dip budget 1R ttl 10:00
  WHEN spot crosses below vwap
  DO buy 100 shares @ ask
  RELOAD WHEN spot < lod buy 100 shares @ ask
  EXIT NOT plan(vwap-dip).filled within 5m

GRADE plan breakout OVER tapes/* FILL strict-cross-v1
  VS null
  VS ungated
  BY regime.intraday
  BY lineage

GRADE plan vwap-dip OVER tapes/*-s3* FILL strict-cross-v1
  VS null
  BY regime.intraday
";

fn shard_family() -> PathBuf {
    let d = tmp("shards");
    family(&d, Regime::Trend, 3, 1, 30, EDGE);
    family(&d, Regime::Range, 2, 30, 30, 0.0);
    family(&d, Regime::Shock, 2, 40, 30, 0.0);
    d
}

#[test]
fn sharded_and_merged_equals_single_run_byte_for_byte() {
    let d = shard_family();
    let p = prepare(SHARD_DOC, &options(&d, 4, 400)).unwrap();
    let total = p.job.unit_count();
    // breakout: 7 tapes × (1 + 4 + 1); vwap-dip: the s3* tapes × (1 + 4).
    let dips = p.job.grades[1].tapes.len() as u64;
    assert!(dips >= 1);
    assert_eq!(total, 7 * 6 + dips * 5);
    let single = grade::run_all(&p, &mut FileTapes::default()).unwrap();
    let json = grade::report_json(&p.job, &single);
    let text = grade::report_text(&p.job, &single);
    for n in [1u64, 2, 3, 7] {
        let mut files: Vec<(String, String)> = (0..n)
            .map(|i| {
                let s = grade::run_shard(&p, i, n, &mut FileTapes::default()).unwrap();
                (format!("shard-{i}-of-{n}"), s)
            })
            .collect();
        files.reverse(); // merge does not care about order
        let (job, merged) = grade::merge_shards(&files).unwrap();
        assert_eq!(merged, single, "N = {n}");
        assert_eq!(grade::report_json(&job, &merged), json, "N = {n}");
        assert_eq!(grade::report_text(&job, &merged), text, "N = {n}");
    }
    // The cells: regime × lineage, never averaged; the gate keeps breakout off non-trend tapes.
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let cells: Vec<String> = v["grades"][0]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cell"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        cells,
        [
            "regime.intraday=range lineage=breakout",
            "regime.intraday=range lineage=breakout>add-on",
            "regime.intraday=shock lineage=breakout",
            "regime.intraday=shock lineage=breakout>add-on",
            "regime.intraday=trend lineage=breakout",
            "regime.intraday=trend lineage=breakout>add-on",
        ]
    );
    let lineage = &v["grades"][0]["lineage"];
    assert_eq!(lineage[1]["parent"], "breakout");
    for c in v["grades"][0]["cells"].as_array().unwrap() {
        let gated_out = !c["cell"].as_str().unwrap().contains("trend");
        if gated_out {
            // Gated out: no run, no null entry; the ungated plan trades.
            assert_eq!(c["active"], 0, "{c}");
            assert_eq!(c["mean_r"], "0.0000");
            assert_eq!(c["vs"]["null"]["diff_mean_r"], "0.0000");
        }
    }
    assert!(
        !v.to_string().contains("unrelated"),
        "only the lineage runs"
    );
    let _ = std::fs::remove_dir_all(&d);
}

fn kestrel(args: &[&str], cwd: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("spawn kestrel");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cli_shards_merge_like_a_single_run_and_refuse_bad_sets() {
    let d = shard_family();
    // `OVER tapes/*` relative to the working directory: put the family in ./tapes.
    let tapes = d.join("tapes");
    std::fs::create_dir_all(&tapes).unwrap();
    for e in std::fs::read_dir(&d).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "jsonl") {
            std::fs::rename(&p, tapes.join(p.file_name().unwrap())).unwrap();
        }
    }
    std::fs::write(d.join("g.kestrel"), SHARD_DOC).unwrap();
    let base = ["grade", "g.kestrel", "--draws", "3", "--resamples", "300"];
    let (code, single, err) = kestrel(&[&base[..], &["--json"]].concat(), &d);
    assert_eq!(code, 0, "{err}");
    let (code, single_text, _) = kestrel(&base, &d);
    assert_eq!(code, 0);
    assert!(single_text.contains("vs ungated"), "{single_text}");
    let mut shard_files = Vec::new();
    for i in 0..3 {
        let out = format!("s{i}.jsonl");
        let shard = format!("{i}/3");
        let (code, _, err) = kestrel(
            &[&base[..], &["--shard", &shard, "--out", &out]].concat(),
            &d,
        );
        assert_eq!(code, 0, "{err}");
        shard_files.push(out);
    }
    let mut merge = vec!["grade", "merge"];
    merge.extend(shard_files.iter().map(String::as_str));
    let (code, merged, err) = kestrel(&[&merge[..], &["--json"]].concat(), &d);
    assert_eq!(code, 0, "{err}");
    assert_eq!(merged, single);
    let (code, merged_text, _) = kestrel(&merge, &d);
    assert_eq!(code, 0);
    assert_eq!(merged_text, single_text);
    // A missing shard, a repeated shard, a truncated shard: refused, exit 1.
    let (code, _, err) = kestrel(&["grade", "merge", "s0.jsonl", "s1.jsonl"], &d);
    assert_eq!(code, 1);
    assert!(err.contains("missing shards: 2/3"), "{err}");
    let (code, _, err) = kestrel(&["grade", "merge", "s0.jsonl", "s0.jsonl", "s1.jsonl"], &d);
    assert_eq!(code, 1);
    assert!(err.contains("given twice"), "{err}");
    let s2 = std::fs::read_to_string(d.join("s2.jsonl")).unwrap();
    let cut: Vec<&str> = s2.lines().collect();
    std::fs::write(
        d.join("s2cut.jsonl"),
        cut[..cut.len() - 1].join("\n") + "\n",
    )
    .unwrap();
    let (code, _, err) = kestrel(
        &["grade", "merge", "s0.jsonl", "s1.jsonl", "s2cut.jsonl"],
        &d,
    );
    assert_eq!(code, 1);
    assert!(err.contains("truncated"), "{err}");
    // Usage.
    let (code, _, err) = kestrel(&["grade", "g.kestrel", "--shard", "3/3"], &d);
    assert_eq!(code, 1);
    assert!(err.contains("--shard"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn resolution_fails_closed() {
    let d = tmp("resolve");
    family(&d, Regime::Trend, 2, 1, 15, 0.0);
    let o = options(&d, 2, 100);
    let plan = "PLAN a budget 1R ttl 09:40\n  WHEN spot > 1\n  DO buy 1 shares @ ask\n";
    let cases: [(&str, &str, &str); 6] = [
        (
            "GRADE plan nope OVER tapes/* FILL strict-cross-v1\n",
            "GRADE",
            "no PLAN named nope",
        ),
        (
            "GRADE wake a OVER tapes/* FILL strict-cross-v1\n",
            "GRADE",
            "only plan subjects",
        ),
        (
            "GRADE plan a OVER tapes/* FILL optimistic-v9\n",
            "GRADE",
            "unknown fill model",
        ),
        (
            "GRADE plan a OVER tapes/zzz-* FILL strict-cross-v1\n",
            "USAGE",
            "selects no tapes",
        ),
        (
            "GRADE plan a OVER 2025-05 FILL strict-cross-v1\n",
            "USAGE",
            "selects no tapes",
        ),
        ("", "USAGE", "no GRADE statement"),
    ];
    for (g, code, msg) in cases {
        let e = match prepare(&format!("{plan}\n{g}"), &o) {
            Ok(_) => panic!("{g} should fail"),
            Err(e) => e,
        };
        assert_eq!(e.code, code, "{g}: {e}");
        assert!(e.message.contains(msg), "{g}: {e}");
    }
    // A subject reading a plan outside its lineage is refused, not silently de-armed.
    let doc = "PLAN a budget 1R ttl 09:40\n  WHEN plan(b).fired\n  DO buy 1 shares @ ask\n\n\
               PLAN b budget 1R ttl 09:40\n  WHEN spot > 1\n  DO buy 1 shares @ ask\n\n\
               GRADE plan a OVER tapes/* FILL strict-cross-v1\n";
    let e = prepare(doc, &o).err().unwrap();
    assert!(e.message.contains("outside the lineage"), "{e}");
    // IMPORTs are not followed, and say so.
    let e = prepare(
        "IMPORT fade FROM other.kestrel\n\nGRADE plan fade OVER tapes/* FILL strict-cross-v1\n",
        &o,
    )
    .err()
    .unwrap();
    assert!(e.message.contains("does not follow IMPORTs"), "{e}");
    // Month ranges select by the tape's date tag: both tapes are in April 2025.
    let p = prepare(
        &format!("{plan}\nGRADE plan a OVER 2025-03..2025-04 FILL strict-cross-v1\n"),
        &o,
    )
    .unwrap();
    assert_eq!(p.job.grades[0].tapes.len(), 2);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn example_grades_the_bundled_tapes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (code, out, err) = kestrel(
        &["grade", "examples/grade.kestrel", "--draws", "4", "--json"],
        root,
    );
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let g = &v["grades"][0];
    assert_eq!(g["tapes"].as_array().unwrap().len(), 3);
    assert_eq!(g["gated"], true);
    let cells: Vec<&str> = g["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cell"].as_str().unwrap())
        .collect();
    assert_eq!(
        cells,
        [
            "regime.intraday=range",
            "regime.intraday=shock",
            "regime.intraday=trend"
        ]
    );
    // One tape per cell: no interval from a single run.
    assert!(g["cells"][0]["vs"]["null"]["ci_low_r"].is_null());
    // A refused document exits 2; an unknown subject is a GRADE error, exit 2.
    let d = tmp("cli-refuse");
    std::fs::write(
        d.join("bad.kestrel"),
        "PLAN x budget 0R ttl +1m\n  WHEN spot > 1\n  DO buy 1 shares @ ask\n",
    )
    .unwrap();
    std::fs::write(
        d.join("nope.kestrel"),
        "GRADE plan nope OVER tapes/* FILL strict-cross-v1\n",
    )
    .unwrap();
    let (code, _, _) = kestrel(&["grade", d.join("bad.kestrel").to_str().unwrap()], root);
    assert_eq!(code, 2);
    let (code, _, err) = kestrel(&["grade", d.join("nope.kestrel").to_str().unwrap()], root);
    assert_eq!(code, 2);
    assert!(err.contains("error code=GRADE"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}
