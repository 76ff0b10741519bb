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
    // A shard run on different tape bytes than the grade was prepared on refuses.
    let t = &p.job.grades[0].tapes[0];
    assert_eq!(t.blake3.len(), 64);
    let mut bytes = std::fs::read(&t.path).unwrap();
    bytes.extend_from_slice(b"\n");
    std::fs::write(&t.path, &bytes).unwrap();
    let e = grade::run_shard(&p, 0, 1, &mut FileTapes::default()).unwrap_err();
    assert_eq!(e.code, "TAPE", "{e:?}");
    assert!(
        e.message.contains("not the ones the grade was prepared on"),
        "{e:?}"
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

/// One plan graded over every tape `--tapes` gives.
const OUT_DOC: &str = "\
PLAN a budget 1R ttl 15:00
  WHEN spot > 1
  DO buy 1 shares @ ask
  EXIT NOT plan(a).filled within 5m

GRADE plan a OVER * FILL strict-cross-v1
  VS null
";

/// `--out` naming an input replaced it: `grade DOC --out DOC` wrote the report over the
/// document, `--out TAPE` over a tape being graded, `grade merge S0 S1 S2 --out S1` over a
/// shard (all exit 0). Each is refused before anything is read, written or removed.
#[test]
fn grade_out_may_not_name_an_input() {
    let d = tmp("out-input");
    family(&d, Regime::Trend, 2, 1, 20, 0.0);
    std::fs::write(d.join("g.kestrel"), OUT_DOC).unwrap();
    let tape = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    let tape_name = tape.file_name().unwrap().to_str().unwrap().to_string();
    let before: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect();
    let base = [
        "grade",
        "g.kestrel",
        "--tapes",
        ".",
        "--draws",
        "1",
        "--resamples",
        "50",
    ];
    for (out, what) in [
        ("g.kestrel", "document g.kestrel"),
        (tape_name.as_str(), "tape "),
    ] {
        for shard in [&[][..], &["--shard", "0/2"][..]] {
            let args = [&base[..], shard, &["--out", out]].concat();
            let (code, stdout, err) = kestrel(&args, &d);
            assert_eq!((code, stdout.as_str()), (1, ""), "{args:?}: {err}");
            assert!(
                err.starts_with(&format!(
                    "error code=USAGE message=--out {out} names an input file ({what}"
                )) && err.contains("refusing to overwrite it"),
                "{args:?}: {err}"
            );
        }
    }
    // The shards of a merge.
    for i in 0..2 {
        let (code, _, err) = kestrel(
            &[
                &base[..],
                &["--shard", &format!("{i}/2"), "--out", &format!("s{i}.part")],
            ]
            .concat(),
            &d,
        );
        assert_eq!(code, 0, "{err}");
    }
    let s1 = std::fs::read(d.join("s1.part")).unwrap();
    let (code, _, err) = kestrel(
        &["grade", "merge", "s0.part", "s1.part", "--out", "s1.part"],
        &d,
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("names an input file (shard s1.part)"), "{err}");
    assert_eq!(
        std::fs::read(d.join("s1.part")).unwrap(),
        s1,
        "the shard is whole"
    );
    // Every input is as it was.
    for (p, bytes) in before {
        assert_eq!(std::fs::read(&p).unwrap(), bytes, "{p:?} was changed");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A refused run (a mistyped flag, a `--tapes` matching nothing, a missing shard) removed an
/// earlier `--out`, a finished shard or report ("note: removed the earlier ..."). It is left
/// as it was, and a note says it is not this run's output; a grade that fails once it has
/// begun still removes it (`sigterm_during_grade_removes_the_earlier_out_and_says_interrupted`).
#[test]
fn a_refused_grade_leaves_an_earlier_out_as_it_was() {
    let d = tmp("out-kept");
    family(&d, Regime::Trend, 2, 1, 20, 0.0);
    std::fs::write(d.join("g.kestrel"), OUT_DOC).unwrap();
    std::fs::write(d.join("keep.jsonl"), "an earlier shard\n").unwrap();
    let base = [
        "grade",
        "g.kestrel",
        "--resamples",
        "50",
        "--out",
        "keep.jsonl",
    ];
    for bad in [
        &["--draws", "1", "--tapes", ".", "--shard", "0/3/"][..],
        &["--draws", "1", "--tapes", "no-such-dir"][..],
        &["--tapes", ".", "--draws", "0"][..],
    ] {
        let args = [&base[..], bad].concat();
        let (code, _, err) = kestrel(&args, &d);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(
            err.contains("note: keep.jsonl is left as it was (this run was refused before it began): it is not this run's output")
                && !err.contains("removed"),
            "{args:?}: {err}"
        );
        assert_eq!(
            std::fs::read_to_string(d.join("keep.jsonl")).unwrap(),
            "an earlier shard\n"
        );
    }
    let (code, _, err) = kestrel(&["grade", "merge", "keep.jsonl", "--out", "report.txt"], &d);
    assert_eq!(code, 1, "{err}");
    std::fs::write(d.join("report.txt"), "an earlier report\n").unwrap();
    let (code, _, err) = kestrel(&["grade", "merge", "g.kestrel", "--out", "report.txt"], &d);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        std::fs::read_to_string(d.join("report.txt")).unwrap(),
        "an earlier report\n"
    );
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
            "with --agent SESSION.jsonl",
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
    // A missing IMPORT is an error naming the file.
    let e = prepare(
        "IMPORT fade FROM other.kestrel\n\nGRADE plan fade OVER tapes/* FILL strict-cross-v1\n",
        &o,
    )
    .err()
    .unwrap();
    assert_eq!(e.code, "GRADE");
    assert!(e.message.contains("cannot read other.kestrel"), "{e}");
    // A view subject needs an agent too; a pod that does not exist is refused.
    for (g, msg) in [
        (
            "GRADE view scan OVER tapes/* FILL strict-cross-v1\n",
            "--agent",
        ),
        (
            "GRADE pod nope OVER tapes/* FILL strict-cross-v1\n",
            "no POD named nope",
        ),
    ] {
        let e = prepare(&format!("{plan}\n{g}"), &o).err().unwrap();
        assert_eq!(e.code, "GRADE");
        assert!(e.message.contains(msg), "{g}: {e}");
    }
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

/// The cells of grade `i` of a JSON report (the whole array, for comparisons).
fn cells_of(report: &str, i: usize) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(report).unwrap();
    v["grades"][i]["cells"].clone()
}

fn mean_units(cell: &serde_json::Value, key: &str) -> i64 {
    (r(&cell[key]) * 10_000.0).round() as i64
}

/// Two independent plans, each a fixed-time round trip in shares, and the POD they share.
/// `GRADE pod desk` grades them as one book: on every tape the book's P&L is the sum of the
/// two plans' (they share no budget, and the pod's day-loss of 5R is far beyond two
/// 100-share holds of five minutes, ≈ ±0.05R each), so the pod's mean per run is exactly
/// the sum of the two plan grades' means (integer 0.0001R units, no rounding between).
/// The pod's null rewrites each root with the same seed as the plan grade's null
/// (`kestrel-grade-null-v1|<plan>|<tape>|<draw>`), so its null mean is the sum too. With a
/// day-loss of 0.0001R the pod halts (flattening) at the first losing mark, and the book is
/// then no longer the sum: the grade sees the POD's risk rule.
#[test]
fn pod_is_one_book_whose_pnl_is_its_plans_pnl() {
    let d = tmp("pod");
    family(&d, Regime::Trend, 2, 11, 30, 0.0);
    family(&d, Regime::Range, 2, 21, 30, 0.0);
    let plans = |loss: &str| {
        format!(
            "POD desk RISK day-loss {loss}R -> halt

PLAN early budget 1R ttl 10:00
  WHEN time >= 09:35 AND time < 09:40
  DO buy 100 shares @ ask
  EXIT time >= 09:40

PLAN late budget 1R ttl 10:00
  WHEN time >= 09:45
  DO buy 100 shares @ ask
  EXIT time >= 09:52

GRADE pod desk OVER tapes/* FILL strict-cross-v1
  VS null
  VS ungated
  BY regime.intraday

GRADE plan early OVER tapes/* FILL strict-cross-v1
  VS null
  BY regime.intraday

GRADE plan late OVER tapes/* FILL strict-cross-v1
  VS null
  BY regime.intraday
"
        )
    };
    let p = prepare(&plans("5"), &options(&d, 3, 200)).unwrap();
    let g = &p.job.grades[0];
    assert_eq!(g.subject_kind, "pod");
    let names: Vec<&str> = g.lineage.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["early", "late"]);
    let results = grade::run_all(&p, &mut FileTapes::default()).unwrap();
    let json = grade::report_json(&p.job, &results);
    let (pod, early, late) = (cells_of(&json, 0), cells_of(&json, 1), cells_of(&json, 2));
    assert_eq!(
        pod.as_array().unwrap().len(),
        2,
        "range and trend, never pooled"
    );
    // Per tape and per draw, the pod's per-plan figures are the plan grades' figures; the
    // book's P&L is their sum (the cells' means are of those sums).
    let units = |gi: usize| -> Vec<&grade::UnitResult> {
        results
            .iter()
            .filter(|u| u.grade == gi && u.kind != RunKind::Ungated)
            .collect()
    };
    let (pu, eu, lu) = (units(0), units(1), units(2));
    assert_eq!(pu.len(), eu.len());
    for ((pu, eu), lu) in pu.iter().zip(&eu).zip(&lu) {
        assert_eq!((pu.tape, pu.kind, pu.draw), (eu.tape, eu.kind, eu.draw));
        assert_eq!(pu.plans[0], eu.plans[0], "{pu:?}");
        assert_eq!(pu.plans[1], lu.plans[0], "{pu:?}");
    }
    for k in 0..2 {
        assert_eq!(pod[k]["cell"], early[k]["cell"]);
        assert_eq!(pod[k]["cell"], late[k]["cell"]);
        assert_eq!(pod[k]["runs"], 2);
        // Both plans trade on every tape (fixed times): the book is active everywhere.
        assert_eq!(pod[k]["active"], 2);
        // Means agree up to the last digit's rounding (each printed mean is rounded).
        let sum = mean_units(&early[k], "mean_r") + mean_units(&late[k], "mean_r");
        assert!(
            (mean_units(&pod[k], "mean_r") - sum).abs() <= 1,
            "{}",
            pod[k]
        );
        // No regime gate: ungated is the book itself.
        assert_eq!(pod[k]["vs"]["ungated"]["diff_mean_r"], "0.0000");
    }
    // The pod's null enters each plan once: two instants per draw, each in 09:30–10:00.
    for u in results
        .iter()
        .filter(|u| u.grade == 0 && u.kind == RunKind::Null)
    {
        assert_eq!(u.instants.len(), 2, "{u:?}");
        assert!(u.plans.iter().all(|x| x.fires == 1), "{u:?}");
    }
    // A day-loss of 0.0001R halts the pod at its first loss: the book is not the sum.
    let p = prepare(&plans("0.0001"), &options(&d, 2, 100)).unwrap();
    let results = grade::run_all(&p, &mut FileTapes::default()).unwrap();
    let halted_late: u64 = results
        .iter()
        .filter(|u| u.grade == 0 && u.kind == RunKind::Plan)
        .map(|u| u.plans[1].fills)
        .sum();
    let free_late: u64 = results
        .iter()
        .filter(|u| u.grade == 2 && u.kind == RunKind::Plan)
        .map(|u| u.plans[0].fills)
        .sum();
    assert_eq!(
        free_late,
        4 * 2,
        "late enters and exits on every tape on its own"
    );
    assert!(
        halted_late < free_late,
        "a halted pod stops `late`: {halted_late}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// IMPORTs are followed, relative to the importing file; the imported plan keeps its own
/// USING and ARM chain; missing and cyclic imports are errors naming the files.
#[test]
fn imports_are_followed_relative_to_the_importing_file() {
    let d = tmp("imports");
    family(&d, Regime::Trend, 2, 5, 30, 0.0);
    std::fs::create_dir_all(d.join("lib")).unwrap();
    let lib = "USING signal SPX exec SPY

PLAN fade budget 1R ttl 10:00
  WHEN time >= 09:36
  DO buy 100 shares @ ask
  EXIT time >= 09:41
  ARM add

PLAN add budget 1R ttl 10:00
  WHEN time >= 09:43
  DO buy 50 shares @ ask
  EXIT time >= 09:47
";
    std::fs::write(d.join("lib/fade.kestrel"), lib).unwrap();
    let main = "IMPORT fade FROM lib/fade.kestrel\n\nGRADE plan fade OVER tapes/* FILL strict-cross-v1\n  VS null\n  BY lineage\n";
    std::fs::write(d.join("main.kestrel"), main).unwrap();
    let source = |path: &Path| Source {
        path: path.display().to_string(),
        doc: lang::check(&std::fs::read_to_string(path).unwrap(), Mode::File).unwrap(),
    };
    let o = options(&d, 3, 100);
    let p = grade::prepare(&[source(&d.join("main.kestrel"))], &o).unwrap();
    let g = &p.job.grades[0];
    assert_eq!(
        g.subject_file,
        d.join("lib/fade.kestrel").display().to_string()
    );
    let paths: Vec<&str> = g.lineage.iter().map(|l| l.path.as_str()).collect();
    assert_eq!(paths, ["fade", "fade>add"]);
    // The same plan graded from its own file gives the same results, unit for unit.
    std::fs::write(
        d.join("lib/direct.kestrel"),
        format!(
            "{lib}\nGRADE plan fade OVER tapes/* FILL strict-cross-v1\n  VS null\n  BY lineage\n"
        ),
    )
    .unwrap();
    let direct = grade::prepare(&[source(&d.join("lib/direct.kestrel"))], &o).unwrap();
    let a = grade::run_all(&p, &mut FileTapes::default()).unwrap();
    let b = grade::run_all(&direct, &mut FileTapes::default()).unwrap();
    assert_eq!(a, b);
    // fade fills once and ARMs add, which fills once: 2 + 2 fills per tape (entry and exit).
    assert!(
        a.iter()
            .filter(|u| u.kind == RunKind::Plan)
            .all(|u| u.plans[0].fills == 2 && u.plans[1].fills == 2)
    );
    // A cycle: x imports y, y imports x.
    std::fs::write(
        d.join("x.kestrel"),
        "IMPORT b FROM y.kestrel\n\nPLAN a budget 1R ttl 10:00\n  WHEN time >= 09:40\n  DO buy 1 shares @ ask\n\nGRADE plan a OVER tapes/* FILL strict-cross-v1\n",
    )
    .unwrap();
    std::fs::write(
        d.join("y.kestrel"),
        "IMPORT a FROM ./x.kestrel\n\nPLAN b budget 1R ttl 10:00\n  WHEN plan(a).filled\n  DO buy 1 shares @ ask\n",
    )
    .unwrap();
    let e = grade::prepare(&[source(&d.join("x.kestrel"))], &o)
        .err()
        .unwrap();
    assert_eq!(e.code, "GRADE");
    assert!(
        e.message.contains("import cycle")
            && e.message.contains("y.kestrel")
            && e.message.contains("x.kestrel"),
        "{e}"
    );
    // An import of a name the file does not define.
    std::fs::write(
        d.join("z.kestrel"),
        "IMPORT nope FROM lib/fade.kestrel\n\nGRADE plan nope OVER tapes/* FILL strict-cross-v1\n",
    )
    .unwrap();
    let e = grade::prepare(&[source(&d.join("z.kestrel"))], &o)
        .err()
        .unwrap();
    assert!(
        e.message.contains("defines no PLAN nope") && e.message.contains("fade.kestrel"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The agent's two turns: at the open it arms `early` and stands up a View `scan` and a
/// WAKE `later` (09:45, once) that delivers it; at `later` it re-sends `early` and adds
/// `late`. Both plans are fixed-time round trips.
const AGENT_SCRIPT: [&str; 2] = [
    "# open: one early round trip, and look again at 09:45
VIEW scan budget 900
  levels
WAKE later WHEN time >= 09:45 DELIVER scan BUDGET 1 wakes/day
PLAN early budget 1R ttl 10:00
  USING signal SPX exec SPY
  WHEN time >= 09:35 AND time < 09:40
  DO buy 100 shares @ ask
  EXIT time >= 09:40
",
    "# later: add a second round trip
PLAN early budget 1R ttl 10:00
  USING signal SPX exec SPY
  WHEN time >= 09:35 AND time < 09:40
  DO buy 100 shares @ ask
  EXIT time >= 09:40
PLAN late budget 1R ttl 10:00
  USING signal SPX exec SPY
  WHEN time >= 09:50
  DO buy 100 shares @ ask
  EXIT time >= 09:55
",
];

/// The same plans as files, armed at the open.
const AGENT_PLANS_AS_FILES: &str = "\
PLAN early budget 1R ttl 10:00
  USING signal SPX exec SPY
  WHEN time >= 09:35 AND time < 09:40
  DO buy 100 shares @ ask
  EXIT time >= 09:40

PLAN late budget 1R ttl 10:00
  USING signal SPX exec SPY
  WHEN time >= 09:50
  DO buy 100 shares @ ask
  EXIT time >= 09:55

GRADE plan early OVER tapes/* FILL strict-cross-v1
  VS null
  BY regime.intraday

GRADE plan late OVER tapes/* FILL strict-cross-v1
  BY regime.intraday
";

const AGENT_GRADES: &str = "\
GRADE wake open OVER tapes/* FILL strict-cross-v1
  VS null
  BY regime.intraday

GRADE wake later OVER tapes/* FILL strict-cross-v1
  VS null
  VS ungated
  BY regime.intraday

GRADE view scan OVER tapes/* FILL strict-cross-v1
  BY regime.intraday

GRADE plan late OVER tapes/* FILL strict-cross-v1
  BY regime.intraday
";

/// Record a session with `kestrel agent` (a scripted author) on one tape of `d/tapes`; the
/// Bus lands in `d/session.jsonl`.
fn record_session(d: &Path) -> PathBuf {
    record_script(d, &AGENT_SCRIPT)
}

/// Record a session of `kestrel agent` whose scripted author answers `replies` in turn.
fn record_script(d: &Path, replies: &[&str]) -> PathBuf {
    let script: String = replies
        .iter()
        .map(|r| serde_json::json!({ "reply": r }).to_string() + "\n")
        .collect();
    std::fs::write(d.join("script.jsonl"), script).unwrap();
    let mut tapes: Vec<PathBuf> = std::fs::read_dir(d.join("tapes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    tapes.sort();
    let (code, _, err) = kestrel(
        &[
            "agent",
            "--tape",
            tapes[0].to_str().unwrap(),
            "--author",
            "script.jsonl",
            "--bus",
            "session.jsonl",
        ],
        d,
    );
    assert_eq!(code, 0, "{err}");
    d.join("session.jsonl")
}

fn agent_family(name: &str) -> PathBuf {
    let d = tmp(name);
    std::fs::create_dir_all(d.join("tapes")).unwrap();
    family(&d.join("tapes"), Regime::Trend, 2, 61, 30, 0.0);
    family(&d.join("tapes"), Regime::Range, 2, 71, 30, 0.0);
    d
}

/// `VS null` on an agent one of whose plans refers to another plan of its turn (the bundled
/// desk plans' `INVALIDATE plan(breakout).filled`) refuses the whole agent, by design (a
/// null draw replays one plan's ARM tree alone, and the agent's null sums every plan's), and
/// says why and what to do instead. It said "which its turn did not arm", which was wrong
/// (the turn armed it, as a plan of its own) and named no way out.
#[test]
fn vs_null_on_an_agent_whose_plan_refers_to_another_says_why_and_what_instead() {
    let d = agent_family("agent-refers");
    record_script(
        &d,
        &["PLAN lead budget 1R ttl 10:00
  USING signal SPX exec SPY
  WHEN time >= 09:35 AND time < 09:40
  DO buy 100 shares @ ask
  EXIT time >= 09:40
PLAN follow budget 1R ttl 10:00
  USING signal SPX exec SPY
  WHEN time >= 09:50
  DO buy 100 shares @ ask
  EXIT time >= 09:55
  INVALIDATE plan(lead).filled -> halt
"],
    );
    let base = ["grade", "--agent", "session.jsonl", "--over", "tapes/*"];
    let (code, _, err) = kestrel(&[&base[..], &["--vs", "null", "--draws", "2"]].concat(), &d);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("follow refers to lead, which is not in follow's ARM tree")
            && err.contains("grade without --vs null (--vs ungated needs no null)"),
        "{err}"
    );
    // Without the null, and against the ungated counterfactual, it grades.
    let (code, _, err) = kestrel(&base, &d);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = kestrel(&[&base[..], &["--vs", "ungated"]].concat(), &d);
    assert_eq!(code, 0, "{err}");
}

/// A saved session's agent graded wake by wake, View by View and plan by plan.
///
/// Worked reasoning. Replayed on any tape, the open turn arms `early` at the first event
/// (09:30:00, the OPEN wake) and `later` fires once at 09:45:00, whose turn stands `early`
/// down (it is flat by then: out at 09:40) and arms `late`, plus a new version of `early`
/// that cannot enter (its WHEN is bounded to 09:35–09:40; with an unbounded WHEN the re-sent
/// version would enter again at 09:45 — a re-sent plan is a new version, and the grade
/// would count that round trip too). Since 2026-12-05 `early`, sent again unchanged, is
/// kept as it stands (done) instead: the same trades. Every entry and exit is on a clock, so each plan
/// trades exactly as the same plan armed at the open from a file:
/// - `GRADE wake open` counts `early` (first armed at the open) and equals `GRADE plan early`
///   from the file, cell for cell, null included: the null's window starts when the agent
///   armed the plan (the open's first event, 09:30:00, the same whole second as the open)
///   and its draws are seeded by plan and tape, so the draws are the same too.
/// - `GRADE wake later` counts `late` only (`early` was re-sent, but it belongs to the turn
///   that first armed it) and its plan figures equal `GRADE plan late` from the file; its
///   null enters between 09:45:00 (when the agent armed it) and the 10:00 ttl.
/// - `GRADE view scan` is the turns that answered the View `scan`: the `later` turn, so
///   `late` again.
/// - `GRADE plan late` with no file defining `late` is the agent's plan `late`.
/// - the whole agent (`--over`) is the book: its mean is early's plus late's.
#[test]
fn an_agent_is_graded_by_wake_view_and_plan() {
    let d = agent_family("agent");
    let session = record_session(&d);
    let bytes = std::fs::read(&session).unwrap();
    let agent = std::sync::Arc::new(
        grade::AgentSession::from_bus(&session.display().to_string(), &bytes).unwrap(),
    );
    let o = Options {
        agent: Some(agent.clone()),
        ..options(&d.join("tapes"), 4, 300)
    };
    let p = prepare(AGENT_GRADES, &o).unwrap();
    let kinds: Vec<(&str, Vec<&str>)> = p
        .job
        .grades
        .iter()
        .map(|g| {
            (
                g.subject_kind.as_str(),
                g.lineage.iter().map(|l| l.name.as_str()).collect(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("wake", vec!["early"]),
            ("wake", vec!["late"]),
            ("view", vec!["late"]),
            ("plan", vec!["late"]),
        ]
    );
    let results = grade::run_all(&p, &mut FileTapes::default()).unwrap();
    let json = grade::report_json(&p.job, &results);
    let files = prepare(AGENT_PLANS_AS_FILES, &options(&d.join("tapes"), 4, 300)).unwrap();
    let fjson = grade::report_json(
        &files.job,
        &grade::run_all(&files, &mut FileTapes::default()).unwrap(),
    );
    // wake open == plan early from the file (bootstrap seeds name the grade line, so compare
    // everything but the intervals), but for the null's figures: the agent's plans, and its
    // null's, arm after the open instant (the OPEN wake fires once it is whole, and its
    // answer acts after it), where the file's arm before it; the plans step once per
    // instant, so a null plan that fires at its first step fires one instant apart.
    let strip = |mut c: serde_json::Value| {
        for cell in c.as_array_mut().unwrap() {
            if let Some(n) = cell["vs"].get_mut("null") {
                for k in [
                    "ci_low_r",
                    "ci_high_r",
                    "ci_excludes_zero",
                    "mean_r",
                    "diff_mean_r",
                ] {
                    assert!(n.get(k).is_some(), "{k} in {n}");
                    n[k] = serde_json::Value::Null;
                }
            }
        }
        c
    };
    assert_eq!(strip(cells_of(&json, 0)), strip(cells_of(&fjson, 0)));
    let late_file = cells_of(&fjson, 1);
    for gi in 1..4 {
        let c = cells_of(&json, gi);
        for k in 0..2 {
            for key in [
                "cell", "runs", "active", "wins", "mean_r", "median_r", "worst_r",
            ] {
                assert_eq!(c[k][key], late_file[k][key], "grade {gi} cell {k} {key}");
            }
        }
    }
    // Every plan trades on every tape: active everywhere.
    assert!(
        cells_of(&json, 1)
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["active"] == 2)
    );
    // late's null enters after the agent armed it at 09:45, before its 10:00 ttl.
    for u in results
        .iter()
        .filter(|u| u.grade == 1 && u.kind == RunKind::Null)
    {
        assert_eq!(u.instants.len(), 1);
        assert!(
            u.instants[0].as_str() >= "09:45:00" && u.instants[0].as_str() < "10:00:00",
            "{u:?}"
        );
    }
    // No gate anywhere: ungated is the plan itself.
    assert!(
        cells_of(&json, 1)
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["vs"]["ungated"]["diff_mean_r"] == "0.0000")
    );

    // The whole agent: every plan it armed, one book.
    let whole = {
        let src = "GRADE wake x OVER tapes/* FILL strict-cross-v1\n  BY regime.intraday\n";
        let doc = lang::check(src, Mode::File).unwrap();
        let g = match &doc.statements[0].kind {
            lang::ast::StatementKind::Grade(g) => g.clone(),
            _ => unreachable!(),
        };
        let o = Options {
            agent: Some(agent.clone()),
            agent_grades: vec![g],
            ..options(&d.join("tapes"), 4, 300)
        };
        grade::prepare(&[], &o).unwrap()
    };
    assert_eq!(whole.job.grades[0].subject_kind, "agent");
    let wjson = grade::report_json(
        &whole.job,
        &grade::run_all(&whole, &mut FileTapes::default()).unwrap(),
    );
    let (w, e) = (cells_of(&wjson, 0), cells_of(&fjson, 0));
    for k in 0..2 {
        // Up to the last digit's rounding (each printed mean is rounded on its own).
        let sum = mean_units(&e[k], "mean_r") + mean_units(&late_file[k], "mean_r");
        assert!((mean_units(&w[k], "mean_r") - sum).abs() <= 1, "{}", w[k]);
    }

    // Sharded and merged: byte-identical with agent subjects.
    let text = grade::report_text(&p.job, &results);
    assert!(text.contains("subject wake later (the agent of"), "{text}");
    for n in [1u64, 2, 3, 5] {
        let files: Vec<(String, String)> = (0..n)
            .map(|i| {
                (
                    format!("s{i}"),
                    grade::run_shard(&p, i, n, &mut FileTapes::default()).unwrap(),
                )
            })
            .collect();
        let (job, merged) = grade::merge_shards(&files).unwrap();
        assert_eq!(merged, results, "N = {n}");
        assert_eq!(grade::report_json(&job, &merged), json, "N = {n}");
        assert_eq!(grade::report_text(&job, &merged), text, "N = {n}");
    }

    // Fail closed: a wake with no plan-arming turn, a view nobody answered, a non-session.
    for (g, msg) in [
        (
            "GRADE wake nope OVER tapes/* FILL strict-cross-v1\n",
            "wakes with turns: later, open",
        ),
        (
            "GRADE view nope OVER tapes/* FILL strict-cross-v1\n",
            "Views answered by plan-arming turns: default, scan",
        ),
        (
            "GRADE plan nope OVER tapes/* FILL strict-cross-v1\n",
            "never armed a plan named nope",
        ),
    ] {
        let e = prepare(g, &o).err().unwrap();
        assert_eq!(e.code, "GRADE");
        assert!(e.message.contains(msg), "{g}: {e}");
    }
    // A line that is no Bus event is a refused recording, as every reader of a Bus says it
    // (`code=GRADE` before 2026-12-06; exit 2 either way).
    let e = grade::AgentSession::from_bus("t.jsonl", b"{\"type\":\"header\"}\n")
        .err()
        .unwrap();
    assert_eq!(e.code, "BUS");
    let _ = std::fs::remove_dir_all(&d);
}

/// Through the binary: `--agent` with GRADE statements, the whole agent with `--over`,
/// shards merged byte for byte, and the errors.
#[test]
fn cli_grades_an_agent() {
    let d = agent_family("agent-cli");
    record_session(&d);
    std::fs::write(d.join("g.kestrel"), AGENT_GRADES).unwrap();
    let base = [
        "grade",
        "g.kestrel",
        "--agent",
        "session.jsonl",
        "--over",
        "tapes/*",
        "--vs",
        "null",
        "--by",
        "regime.intraday",
        "--draws",
        "3",
        "--resamples",
        "200",
    ];
    let (code, single, err) = kestrel(&[&base[..], &["--json"]].concat(), &d);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&single).unwrap();
    assert_eq!(v["grades"].as_array().unwrap().len(), 5);
    assert_eq!(v["grades"][4]["subject_kind"], "agent");
    assert_eq!(
        v["grades"][4]["grade"],
        "GRADE agent session.jsonl OVER tapes/* FILL strict-cross-v1 VS null BY regime.intraday"
    );
    let mut merge = vec![
        "grade".to_string(),
        "merge".to_string(),
        "--json".to_string(),
    ];
    for i in 0..2 {
        let out = format!("s{i}.jsonl");
        let shard = format!("{i}/2");
        let (code, _, err) = kestrel(
            &[&base[..], &["--shard", &shard, "--out", &out]].concat(),
            &d,
        );
        assert_eq!(code, 0, "{err}");
        merge.push(out);
    }
    let merge: Vec<&str> = merge.iter().map(String::as_str).collect();
    let (code, merged, err) = kestrel(&merge, &d);
    assert_eq!(code, 0, "{err}");
    assert_eq!(merged, single);
    // A wake subject without --agent: exit 2, a GRADE error saying what to pass.
    let (code, _, err) = kestrel(&["grade", "g.kestrel"], &d);
    assert_eq!(code, 2);
    assert!(
        err.contains("error code=GRADE") && err.contains("--agent SESSION.jsonl"),
        "{err}"
    );
    // A session given as a document: a usage error pointing at --agent.
    let (code, _, err) = kestrel(&["grade", "session.jsonl"], &d);
    assert_eq!(code, 1);
    assert!(err.contains("pass it with --agent"), "{err}");
    // A session whose turn names another wake than the one it answers is refused as
    // `agent --author` refuses it: it was graded, its turn queued under the wrong wake.
    let bus = std::fs::read_to_string(d.join("session.jsonl")).unwrap();
    let (line, _) = bus
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(r#""type":"turn""#) && l.contains(r#""wake":"later""#))
        .expect("a turn at wake later");
    let tampered: String = bus
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let l = if i == line {
                l.replace(r#""wake":"later""#, r#""wake":"open""#)
            } else {
                l.to_string()
            };
            l + "\n"
        })
        .collect();
    std::fs::write(d.join("tampered.jsonl"), tampered).unwrap();
    let (code, out, err) = kestrel(
        &[
            "grade",
            "--agent",
            "tampered.jsonl",
            "--over",
            "tapes/*",
            "--draws",
            "3",
            "--resamples",
            "200",
        ],
        &d,
    );
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(
        err.starts_with(&format!(
            "error code=REPLAY message=tampered.jsonl: line {}: the turn recorded here names wake \"open\", but it answers wake \"later\"",
            line + 1
        )),
        "{err}"
    );
    let mut tapes: Vec<PathBuf> = std::fs::read_dir(d.join("tapes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    tapes.sort();
    let tape = tapes[0].to_str().unwrap();
    let (code, _, err) = kestrel(&["agent", "--tape", tape, "--author", "tampered.jsonl"], &d);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("code=REPLAY rule=replay-record"), "{err}");
    // A session cut off before its session-end (a killed run, a partial copy) is refused as
    // `agent --author` refuses it (exit 2): it was graded, with no word, as a smaller agent
    // (the turns after the cut gone).
    let lines: Vec<&str> = bus.lines().collect();
    // Before the last wake's View: every turn before it whole, the last one gone.
    let last_turn = lines
        .iter()
        .rposition(|l| l.contains(r#""type":"view-delivered""#))
        .expect("a View delivered");
    let cut: String = lines[..last_turn]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(d.join("cut.jsonl"), cut).unwrap();
    let (code, out, err) = kestrel(
        &[
            "grade",
            "--agent",
            "cut.jsonl",
            "--over",
            "tapes/*",
            "--draws",
            "3",
            "--resamples",
            "200",
        ],
        &d,
    );
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(
        err.starts_with(&format!(
            "error code=BUS message=cut.jsonl: the Bus ends at line {last_turn} without session-end: it was cut off"
        )) && err.contains("a saved session that does not replay is not graded"),
        "{err}"
    );
    let (code, _, err) = kestrel(&["agent", "--tape", tape, "--author", "cut.jsonl"], &d);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("without session-end: it was cut off"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_tape_cut_short_is_refused_not_graded() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let d = std::env::temp_dir().join(format!("kestrel-grade-cut-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let whole = std::fs::read_to_string(root.join("tapes/trend-2025-04-09-s1.jsonl")).unwrap();
    let cut: String = whole
        .lines()
        .take(20_000)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(d.join("cut.jsonl"), cut).unwrap();
    let doc = root.join("examples/grade.kestrel");
    let (code, out, err) = kestrel(
        &[
            "grade",
            doc.to_str().unwrap(),
            "--tapes",
            d.to_str().unwrap(),
        ],
        root,
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.starts_with("error code=TAPE message=") && err.contains("line 20001: ends-early"),
        "{err}"
    );
    assert!(!out.contains("vs null"), "nothing graded: {out}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Shard results whose P&L sums past 64 bits merged with exit 0 and a wrapped (negative)
/// mean; they are refused as a bad shard set.
#[test]
fn a_merge_whose_pnl_sums_would_wrap_is_refused() {
    let d = tmp("merge-wrap");
    let tapes = d.join("tapes");
    std::fs::create_dir_all(&tapes).unwrap();
    family(&tapes, Regime::Trend, 2, 1, 15, 0.0);
    std::fs::write(
        d.join("g.kestrel"),
        "PLAN a budget 1R ttl 09:40\n  WHEN spot > 1\n  DO buy 1 shares @ ask\n\nGRADE plan a OVER tapes/* FILL strict-cross-v1\n  VS null\n",
    )
    .unwrap();
    let (code, _, err) = kestrel(
        &[
            "grade",
            "g.kestrel",
            "--draws",
            "3",
            "--resamples",
            "100",
            "--shard",
            "0/1",
            "--out",
            "s0.jsonl",
        ],
        &d,
    );
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(d.join("s0.jsonl")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for l in lines.iter_mut().skip(1) {
        let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
        for p in v["plans"].as_array_mut().unwrap() {
            p["pnl"] = serde_json::json!(i64::MAX);
        }
        *l = v.to_string();
    }
    std::fs::write(d.join("big.jsonl"), lines.join("\n") + "\n").unwrap();
    let (code, out, err) = kestrel(&["grade", "merge", "big.jsonl"], &d);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.starts_with("error code=SHARD message=") && err.contains("past the 64-bit range"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `--tapes nonexist` said the range "selects no tapes"; it says the path is not there.
#[test]
fn tapes_that_do_not_exist_are_named_not_reported_as_an_empty_range() {
    let d = tmp("no-tapes");
    std::fs::write(
        d.join("g.kestrel"),
        "PLAN a budget 1R ttl 09:40\n  WHEN spot > 1\n  DO buy 1 shares @ ask\n\nGRADE plan a OVER tapes/* FILL strict-cross-v1\n",
    )
    .unwrap();
    for (args, want) in [
        (
            vec!["grade", "g.kestrel", "--tapes", "nonexist"],
            "error code=IO message=--tapes nonexist: no such file or directory",
        ),
        (
            vec!["grade", "g.kestrel", "--tapes", "nonexist/*.jsonl"],
            "error code=IO message=--tapes nonexist/*.jsonl: no such directory nonexist",
        ),
        (
            vec!["grade", "g.kestrel"],
            "error code=IO message=OVER tapes/*: no such directory tapes",
        ),
    ] {
        let (code, _, err) = kestrel(&args, &d);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.starts_with(want), "{args:?}: {err}");
    }
    // An existing directory with no tape still says the range selects none.
    std::fs::create_dir_all(d.join("empty")).unwrap();
    let (code, _, err) = kestrel(&["grade", "g.kestrel", "--tapes", "empty"], &d);
    assert_eq!(code, 1);
    assert!(err.contains("selects no tapes"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `--draws 0` printed a null of "0 seeded draws per tape" with a mean of 0 and a difference
/// against it; `--resamples 0` printed "CI - (fewer than 2 runs)" on cells of four runs and
/// `--resamples 1` a one-resample "interval" that `excludes 0`. Counts too small for a null
/// or for a 95% percentile interval (fewer than 40 resamples: 2.5% of them is not one
/// resample), and counts too large to hold, are usage errors (exit 1), and nothing is graded.
#[test]
fn draws_and_resamples_too_few_for_a_null_or_an_interval_are_refused() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (args, flag) in [
        (["--draws", "0"], "--draws 0"),
        (["--resamples", "0"], "--resamples 0"),
        (["--resamples", "1"], "--resamples 1"),
        (["--resamples", "39"], "--resamples 39"),
    ] {
        let (code, out, err) = kestrel(
            &[&["grade", "examples/grade.kestrel"][..], &args[..]].concat(),
            root,
        );
        assert_eq!(code, 1, "{args:?}: {out}{err}");
        assert!(
            err.starts_with(&format!("error code=USAGE message={flag}: ")),
            "{args:?}: {err}"
        );
        assert_eq!(err.matches("error code=").count(), 1, "{err}");
        assert!(out.is_empty(), "nothing graded: {out}");
    }
    // The floor itself is a percentile interval (the 2nd and the 39th of 40).
    let (code, out, err) = kestrel(
        &[
            "grade",
            "examples/grade.kestrel",
            "--draws",
            "1",
            "--resamples",
            "40",
        ],
        root,
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("(40 resamples), null = 1 seeded draws"),
        "{out}"
    );
    // The library refuses the same counts, and counts too large to run or to hold (a
    // resample count of 2^32 - 1 aborted allocating 64 GiB).
    let d = tmp("counts");
    family(&d, Regime::Trend, 2, 1, 15, 0.0);
    let doc = "PLAN a budget 1R ttl 09:40\n  WHEN spot > 1\n  DO buy 1 shares @ ask\n\nGRADE plan a OVER tapes/* FILL strict-cross-v1\n  VS null\n";
    for (draws, resamples, what) in [
        (0, 2000, "--draws 0"),
        (10_001, 2000, "--draws 10001"),
        (20, 39, "--resamples 39"),
        (20, 1_000_001, "--resamples 1000001"),
        (20, u32::MAX, "--resamples 4294967295"),
    ] {
        let e = match prepare(doc, &options(&d, draws, resamples)) {
            Ok(_) => panic!("{what} should be refused"),
            Err(e) => e,
        };
        assert_eq!(e.code, "USAGE", "{e}");
        assert!(e.message.starts_with(&format!("{what}: ")), "{e}");
        assert_eq!(e.exit_code(), 1);
    }
    for (draws, resamples) in [(1, 40), (10_000, 1_000_000)] {
        assert!(prepare(doc, &options(&d, draws, resamples)).is_ok());
    }
    // A shard whose job carries such counts (its fingerprint recomputed) is not merged.
    let p = prepare(doc, &options(&d, 2, 100)).unwrap();
    let shard = grade::run_shard(&p, 0, 1, &mut FileTapes::default()).unwrap();
    let (head, rest) = shard.split_once('\n').unwrap();
    for (draws, resamples, what) in [(0, 100, "--draws 0"), (2, 1, "--resamples 1")] {
        let mut h: grade::ShardHeader = serde_json::from_str(head).unwrap();
        h.job.draws = draws;
        h.job.resamples = resamples;
        h.fingerprint = h.job.fingerprint();
        let text = format!("{}\n{rest}", serde_json::to_string(&h).unwrap());
        let e = grade::merge_shards(&[("s.jsonl".into(), text)]).unwrap_err();
        assert_eq!(e.code, "SHARD", "{e}");
        assert!(e.message.contains(what), "{e}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A tape refused while the range was read was wrapped twice (`error code=TAPE
/// message=P: error code=TAPE line=1 message=truncated: …`). Every tape error of a grade is
/// one coded line, `error code=TAPE message=PATH line N: REASON: …`, as for a tape that
/// ends early (docs/limits.md).
#[test]
fn a_bad_tape_is_one_coded_line_naming_the_file_and_the_line() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let d = tmp("bad-tape");
    let doc = root.join("examples/grade.kestrel");
    let doc = doc.to_str().unwrap();
    let whole = std::fs::read_to_string(root.join("tapes/range-2025-04-09-s2.jsonl")).unwrap();
    let lines: Vec<&str> = whole.lines().collect();
    let cases: [(&str, String, &str); 3] = [
        // The header line cut short.
        (
            "head",
            "{\"type\":\"tick\"".to_string(),
            "message=bad/range-cut.jsonl line 1: truncated: ",
        ),
        // A line cut short after the header.
        (
            "mid",
            format!("{}\n{}\n{{\"type\":\"tick\"\n", lines[0], lines[1]),
            "message=bad/range-cut.jsonl line 3: truncated: ",
        ),
        // The header is not a header.
        (
            "not-header",
            format!("{}\n", lines[1]),
            "message=bad/range-cut.jsonl line 1: ",
        ),
    ];
    for (what, text, want) in cases {
        let bad = d.join("bad");
        let _ = std::fs::remove_dir_all(&bad);
        std::fs::create_dir_all(&bad).unwrap();
        std::fs::write(bad.join("range-cut.jsonl"), text).unwrap();
        let (code, out, err) = kestrel(&["grade", doc, "--tapes", "bad/"], &d);
        assert_eq!(code, 1, "{what}: {out}{err}");
        assert!(
            err.starts_with("error code=TAPE message=bad/range-cut.jsonl line "),
            "{what}: {err}"
        );
        assert!(err.contains(want), "{what}: {err}");
        assert_eq!(err.matches("code=").count(), 1, "{what}: {err}");
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(out.is_empty(), "{what}: {out}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `OVER 2025-13` passed as a range and then "selects no tapes" (exit 1, `code=USAGE`), and
/// `OVER 2025-04..2025-13` graded April as if December were a later month; a month that is
/// not one (00, 13) is a bad range, refused as an out-of-order one is (`code=GRADE`, exit 2).
#[test]
fn an_impossible_month_is_a_bad_range() {
    let d = tmp("months");
    let tapes = d.join("tapes");
    std::fs::create_dir_all(&tapes).unwrap();
    family(&tapes, Regime::Trend, 2, 1, 15, 0.0);
    let o = options(&tapes, 2, 100);
    let plan = "PLAN a budget 1R ttl 09:40\n  WHEN spot > 1\n  DO buy 1 shares @ ask\n";
    for range in [
        "2025-13",
        "2025-00",
        "2025-04..2025-13",
        "2025-00..2025-04",
        "2025-05..2025-04",
    ] {
        let doc = format!("{plan}\nGRADE plan a OVER {range} FILL strict-cross-v1\n");
        let e = match prepare(&doc, &o) {
            Ok(_) => panic!("OVER {range} should be refused"),
            Err(e) => e,
        };
        assert_eq!(e.code, "GRADE", "{range}: {e}");
        assert!(
            e.message
                .contains("a month range is YYYY-MM[..YYYY-MM] (months 01 to 12), in order"),
            "{range}: {e}"
        );
        std::fs::write(d.join("m.kestrel"), &doc).unwrap();
        let (code, out, err) = kestrel(&["grade", "m.kestrel"], &d);
        assert_eq!(code, 2, "{range}: {out}{err}");
        assert!(
            err.starts_with("error code=GRADE message="),
            "{range}: {err}"
        );
    }
    // Real months still select by date.
    let doc = format!("{plan}\nGRADE plan a OVER 2025-01..2025-12 FILL strict-cross-v1\n");
    assert_eq!(prepare(&doc, &o).unwrap().job.grades[0].tapes.len(), 2);
    let _ = std::fs::remove_dir_all(&d);
}

/// A shard with one result line repeated was refused as "89 results for 88 units (truncated
/// shard?)": it has one too many. The repeated unit is named.
#[test]
fn a_shard_with_a_repeated_result_says_so() {
    let d = tmp("repeated");
    family(&d, Regime::Trend, 2, 1, 15, 0.0);
    let doc = "PLAN a budget 1R ttl 09:40\n  WHEN spot > 1\n  DO buy 1 shares @ ask\n\nGRADE plan a OVER tapes/* FILL strict-cross-v1\n  VS null\n";
    let p = prepare(doc, &options(&d, 2, 100)).unwrap();
    let shard = grade::run_shard(&p, 0, 1, &mut FileTapes::default()).unwrap();
    let lines: Vec<&str> = shard.lines().collect();
    assert_eq!(lines.len(), 1 + 2 * 3);
    let extra = format!("{}\n{}\n", lines.join("\n"), lines[4]);
    let e = grade::merge_shards(&[("t/extra.jsonl".into(), extra)]).unwrap_err();
    assert_eq!(e.code, "SHARD", "{e}");
    assert_eq!(
        e.message,
        "t/extra.jsonl: line 8: unit 3 repeated (first on line 5): a shard holds each unit once",
        "{e}"
    );
    // Fewer results than units is still a truncated shard.
    let cut = format!("{}\n", lines[..6].join("\n"));
    let e = grade::merge_shards(&[("t/cut.jsonl".into(), cut)]).unwrap_err();
    assert!(e.message.contains("5 results for 6 units"), "{e}");
    // Through the binary: exit 1, one coded line.
    std::fs::write(
        d.join("extra.jsonl"),
        format!("{}\n{}\n", lines.join("\n"), lines[4]),
    )
    .unwrap();
    let (code, _, err) = kestrel(&["grade", "merge", "extra.jsonl"], &d);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with("error code=SHARD message=extra.jsonl: line 8: unit 3 repeated"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The agent arms `hold` at the open (it enters at 09:35 and its WHEN stays true) and, at
/// its 09:45 wake, sends the book it keeps: `hold` again, unchanged.
const RESEND_SCRIPT: [&str; 2] = [
    "# open: hold from 09:35
VIEW scan budget 900
  levels
WAKE later WHEN time >= 09:45 DELIVER scan BUDGET 1 wakes/day
PLAN hold budget 1R ttl 10:00
  USING signal SPX exec SPY
  WHEN time >= 09:35
  DO buy 100 shares @ ask
  EXIT time >= 09:55
",
    "# later: keep the book as it is
PLAN hold budget 1R ttl 10:00
  USING signal SPX exec SPY
  WHEN time >= 09:35
  DO buy 100 shares @ ask
  EXIT time >= 09:55
",
];

/// grade.md: "the null makes the entries the subject made there". A plan the agent sends
/// again unchanged is kept as it stands, so it enters once, as its null does (before
/// 2026-12-05 the re-sent plan was a new version that entered again at 09:45: fires 2 on
/// every tape against the null's 1).
#[test]
fn a_re_sent_plan_enters_as_often_as_its_null() {
    let d = agent_family("resend");
    let session = record_script(&d, &RESEND_SCRIPT);
    let bytes = std::fs::read(&session).unwrap();
    let agent = std::sync::Arc::new(
        grade::AgentSession::from_bus(&session.display().to_string(), &bytes).unwrap(),
    );
    let o = Options {
        agent: Some(agent),
        ..options(&d.join("tapes"), 4, 300)
    };
    let p = prepare(
        "GRADE wake open OVER tapes/* FILL strict-cross-v1\n  VS null\n  BY regime.intraday\n",
        &o,
    )
    .unwrap();
    let results = grade::run_all(&p, &mut FileTapes::default()).unwrap();
    let fires = |kind: RunKind, tape: usize| -> Vec<u64> {
        results
            .iter()
            .filter(|u| u.kind == kind && u.tape == tape)
            .map(|u| u.plans[0].fires)
            .collect()
    };
    let tapes = results.iter().map(|u| u.tape).max().unwrap() + 1;
    assert_eq!(tapes, 4);
    for t in 0..tapes {
        assert_eq!(fires(RunKind::Plan, t), [1], "tape {t}");
        let null = fires(RunKind::Null, t);
        assert_eq!(null.len(), 4, "tape {t}");
        assert!(null.iter().all(|&f| f == 1), "tape {t}: {null:?}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `--out -` wrote the report to a file named `-`; it is standard output, as without
/// `--out` (as `tape gen -o -`), for a grade and for a merge.
#[test]
fn out_dash_is_standard_output() {
    let d = tmp("dash");
    std::fs::create_dir_all(d.join("tapes")).unwrap();
    family(&d.join("tapes"), Regime::Trend, 2, 1, 15, 0.0);
    std::fs::write(
        d.join("a.kestrel"),
        "PLAN a budget 1R ttl 09:40\n  WHEN spot > 1\n  DO buy 1 shares @ ask\n\nGRADE plan a OVER tapes/* FILL strict-cross-v1\n",
    )
    .unwrap();
    let (code, plain, err) = kestrel(
        &["grade", "a.kestrel", "--draws", "2", "--resamples", "100"],
        &d,
    );
    assert_eq!(code, 0, "{err}");
    let (code, dash, err) = kestrel(
        &[
            "grade",
            "a.kestrel",
            "--draws",
            "2",
            "--resamples",
            "100",
            "--out",
            "-",
        ],
        &d,
    );
    assert_eq!((code, dash.as_str()), (0, plain.as_str()), "{err}");
    assert!(!d.join("-").exists(), "no file named -");
    let (code, _, err) = kestrel(
        &[
            "grade",
            "a.kestrel",
            "--draws",
            "2",
            "--resamples",
            "100",
            "--shard",
            "0/1",
            "--out",
            "s.jsonl",
        ],
        &d,
    );
    assert_eq!(code, 0, "{err}");
    let (code, merged, err) = kestrel(&["grade", "merge", "s.jsonl", "--out", "-"], &d);
    assert_eq!((code, merged.as_str()), (0, plain.as_str()), "{err}");
    assert!(!d.join("-").exists(), "no file named -");
    let _ = std::fs::remove_dir_all(&d);
}

/// A shard file that is not UTF-8 said `code=IO ... stream did not contain valid UTF-8`,
/// where every other malformed shard says `code=SHARD`. It is a malformed shard: `SHARD`,
/// exit 1, naming the file; a file that cannot be read at all is still `IO`.
#[test]
fn a_shard_that_is_not_utf8_is_a_shard_error() {
    let d = std::env::temp_dir().join(format!("kestrel-grade-utf8-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("bin.jsonl"), b"{\"kind\":\xff\xfe}\n").unwrap();
    let (code, out, err) = kestrel(&["grade", "merge", "bin.jsonl"], &d);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert_eq!(
        err,
        "error code=SHARD message=bin.jsonl: not a kestrel grade shard: not UTF-8 text (invalid byte at offset 8)\n"
    );
    let (code, _, err) = kestrel(&["grade", "merge", "missing.jsonl"], &d);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with("error code=IO message=cannot read missing.jsonl"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A shard's result lines were covered by no hash: one with every plan unit's `pnl` set to
/// 50000 merged into `mean 5.0000R … CI excludes 0` for a plan whose budget is 0.5R. The
/// header now carries the count and BLAKE3 of the result lines; an edited line, one added
/// after a recomputed count, or a header without the digest (an older shard) is refused as
/// `SHARD`, saying to regenerate it.
#[test]
fn an_edited_shard_result_is_refused_by_its_digest() {
    let d = tmp("digest");
    family(&d, Regime::Trend, 2, 1, 15, 0.0);
    let doc = "PLAN a budget 1R ttl 09:40\n  WHEN spot > 1\n  DO buy 1 shares @ ask\n\nGRADE plan a OVER tapes/* FILL strict-cross-v1\n  VS null\n";
    let p = prepare(doc, &options(&d, 2, 100)).unwrap();
    let shard = grade::run_shard(&p, 0, 1, &mut FileTapes::default()).unwrap();
    assert!(grade::merge_shards(&[("s.jsonl".into(), shard.clone())]).is_ok());
    let (head, rest) = shard.split_once('\n').unwrap();
    let h: grade::ShardHeader = serde_json::from_str(head).unwrap();
    let digest = h.results.clone().expect("a digest");
    assert_eq!(digest.lines, 6);
    assert_eq!(
        digest.blake3,
        blake3::hash(rest.as_bytes()).to_hex().to_string()
    );
    // Every plan unit's P&L made 50000: a fake edge.
    let edited: String = rest
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            for p in v["plans"].as_array_mut().unwrap() {
                p["pnl"] = serde_json::json!(50000);
            }
            v.to_string() + "\n"
        })
        .collect();
    assert_ne!(edited, rest);
    let e = grade::merge_shards(&[("s.jsonl".into(), format!("{head}\n{edited}"))]).unwrap_err();
    assert_eq!((e.code, e.exit_code()), ("SHARD", 1), "{e}");
    assert!(
        e.message.starts_with("s.jsonl: the result lines' BLAKE3 ")
            && e.message
                .contains("the shard was changed after it was written; regenerate it"),
        "{e}"
    );
    // An older shard: no digest in its header.
    let mut old = h.clone();
    old.results = None;
    let text = format!("{}\n{rest}", serde_json::to_string(&old).unwrap());
    assert!(
        !text.lines().next().unwrap().contains("\"results\""),
        "{text}"
    );
    let e = grade::merge_shards(&[("old.jsonl".into(), text)]).unwrap_err();
    assert_eq!(e.code, "SHARD", "{e}");
    assert_eq!(
        e.message,
        "old.jsonl: the header carries no results digest (a shard written by an older kestrel): regenerate it with kestrel grade --shard"
    );
    // Through the binary: exit 1, one coded line, no report.
    std::fs::write(d.join("edited.jsonl"), format!("{head}\n{edited}")).unwrap();
    let (code, out, err) = kestrel(&["grade", "merge", "edited.jsonl"], &d);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(
        err.starts_with("error code=SHARD message=edited.jsonl: the result lines' BLAKE3"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A subject whose USING names a symbol the tapes lack is de-armed at every open, and the
/// report read like a plan that never triggered (runs N, active 0, a clean 0 against null)
/// with nothing said. `grade` (and `grade merge`) warns on stderr on how many tapes the
/// subject could not arm and why; a subject that armed everywhere gets no warning.
#[test]
fn a_subject_that_could_not_arm_is_warned_about() {
    let d = tmp("not-armed");
    std::fs::create_dir_all(d.join("tapes")).unwrap();
    family(&d.join("tapes"), Regime::Trend, 2, 1, 15, 0.0);
    std::fs::write(
        d.join("q.kestrel"),
        "PLAN q budget 1R ttl 09:40\n  USING signal QQQ exec SPY\n  WHEN spot > 1\n  DO buy 1 shares @ ask\n\nGRADE plan q OVER tapes/* FILL strict-cross-v1\n  VS null\n",
    )
    .unwrap();
    let base = ["grade", "q.kestrel", "--draws", "2", "--resamples", "100"];
    let (code, report, err) = kestrel(&base, &d);
    assert_eq!(code, 0, "{err}");
    assert!(report.contains("runs 2  active 0"), "{report}");
    let want = "warning code=NOT-ARMED message=GRADE plan q OVER tapes/* FILL strict-cross-v1 VS null: q could not arm on 2 of 2 tapes (their runs count as flat), the first ";
    assert!(err.contains(want), "{err}");
    assert!(
        err.contains(": UNKNOWN symbol QQQ: the tape does not carry it (USING)\n"),
        "{err}"
    );
    // The same from shards merged.
    let (code, _, err) = kestrel(
        &[&base[..], &["--shard", "0/1", "--out", "s.jsonl"]].concat(),
        &d,
    );
    assert_eq!(code, 0, "{err}");
    let (code, merged, err) = kestrel(&["grade", "merge", "s.jsonl"], &d);
    assert_eq!((code, merged.as_str()), (0, report.as_str()), "{err}");
    assert!(err.contains(want), "{err}");
    // A subject that arms says nothing, nor one its regime gate keeps out of these tapes
    // (its choice, which VS ungated measures).
    std::fs::write(
        d.join("a.kestrel"),
        "PLAN a budget 1R ttl 09:40\n  WHEN spot > 1\n  DO buy 1 shares @ ask\n\nGRADE plan a OVER tapes/* FILL strict-cross-v1\n",
    )
    .unwrap();
    std::fs::write(
        d.join("g.kestrel"),
        "PLAN g budget 1R ttl 09:40 regime {intraday: range}\n  WHEN spot > 1\n  DO buy 1 shares @ ask\n\nGRADE plan g OVER tapes/* FILL strict-cross-v1\n  VS ungated\n",
    )
    .unwrap();
    for f in ["a.kestrel", "g.kestrel"] {
        let (code, _, err) = kestrel(&["grade", f, "--draws", "2", "--resamples", "100"], &d);
        assert_eq!(code, 0, "{f}: {err}");
        assert!(!err.contains("NOT-ARMED"), "{f}: {err}");
    }
    // A gated subject that could not run on these tapes anyway is warned of: the symbol is
    // checked before the gate (its reason hid the missing symbol, as in grade.md's example).
    std::fs::write(
        d.join("gq.kestrel"),
        "PLAN gq budget 1R ttl 09:40 regime {intraday: range}\n  USING signal QQQ exec SPY\n  WHEN spot > 1\n  DO buy 1 shares @ ask\n\nGRADE plan gq OVER tapes/* FILL strict-cross-v1\n  VS ungated\n",
    )
    .unwrap();
    let (code, _, err) = kestrel(
        &["grade", "gq.kestrel", "--draws", "2", "--resamples", "100"],
        &d,
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("gq could not arm on 2 of 2 tapes")
            && err.contains(": UNKNOWN symbol QQQ: the tape does not carry it (USING)\n"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A saved Bus or a document among `--tapes` is named for what it is, with what to do
/// (`code=USAGE`, exit 1), as `run --tape` names it: before 2026-12-06 grade said
/// `code=TAPE … bad-header: the first line must be the header, got type "session-start"`.
#[test]
fn a_file_of_another_kind_among_the_tapes_is_named() {
    let d = tmp("wrong-kind");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::write(
        d.join("g.kestrel"),
        std::fs::read(root.join("examples/grade.kestrel")).unwrap(),
    )
    .unwrap();
    std::fs::create_dir_all(d.join("tapes")).unwrap();
    let (code, _, err) = kestrel(
        &[
            "run",
            "--tape",
            &root
                .join("tapes/trend-2025-04-09-s1.jsonl")
                .display()
                .to_string(),
            "--plans",
            &root.join("examples/run-desk.kestrel").display().to_string(),
            "--bus",
            "tapes/s.jsonl",
        ],
        &d,
    );
    assert_eq!(code, 0, "{err}");
    let (code, stdout, err) = kestrel(
        &["grade", "g.kestrel", "--tapes", "tapes", "--draws", "1"],
        &d,
    );
    assert_eq!((code, stdout.as_str()), (1, ""), "{err}");
    assert!(
        err.starts_with("error code=USAGE message=tapes/s.jsonl is a saved Bus (a session's event log), not a tape: it records a run with no author's turn (as kestrel run --bus writes one): run its plans again with kestrel run --tape trend-2025-04-09-s1.jsonl"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
