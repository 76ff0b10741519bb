//! Deep and wide inputs for every reader of untrusted text (issue 16): the parser, the tape
//! reader, the turn router, the envelope ingest and a replayed Bus. Nesting goes to 100,000,
//! lines to 10 MB, documents past their limits. Each reader answers with a value or its
//! coded error; none panics, aborts or runs unbounded; and where a limit applies, the
//! refusal names it.
//!
//! CI runs `PROPTEST_CASES` unset: 24 cases per property (docs/limits.md gives the time).
//! For 10^6 cases: `PROPTEST_CASES=1000000 cargo test --release --test deep_wide_prop`.

use kestrel_desk::bus::{self, Bus};
use kestrel_desk::engine::EngineConfig;
use kestrel_desk::lang::{self, Mode, Rule};
use kestrel_desk::limits;
use kestrel_desk::market::{Px, TapeReader, open_tape, read_tape_bytes};
use kestrel_desk::session::{self, Recorded, Run, RunConfig};
use kestrel_desk::turn::{self, AuthorKind, Profile, Reply, TurnContext, WakePhase, envelope};
use proptest::prelude::*;
use std::sync::OnceLock;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24)
}

/// One level of nesting, written around `inner` (a trigger or a price).
#[derive(Debug, Clone, Copy)]
enum Level {
    Group,
    Not,
    Min,
    Max,
    Lean,
}

fn level() -> impl Strategy<Value = Level> {
    prop_oneof![
        Just(Level::Group),
        Just(Level::Not),
        Just(Level::Min),
        Just(Level::Max),
        Just(Level::Lean),
    ]
}

/// A depth: mostly around the limit, sometimes far past it (to 100,000).
fn depth() -> impl Strategy<Value = usize> {
    let m = limits::MAX_NESTING as usize;
    prop_oneof![0..=m + 2, m..=4 * m, 1_000..=100_000usize]
}

/// A plan whose WHEN nests `d` trigger levels (groups and NOT) and whose DO price nests `d`
/// price levels (min, max, lean), with the kinds drawn from `kinds`.
fn nested(d: usize, kinds: &[Level], seed: usize) -> (String, usize, usize) {
    let pick = |k: usize| kinds[(k + seed) % kinds.len()];
    let (mut t_open, mut t_close, mut t_depth) = (String::new(), String::new(), 0);
    let (mut p_open, mut p_close, mut p_depth) = (String::new(), Vec::new(), 0);
    for k in 0..d {
        match pick(k) {
            Level::Group => {
                t_open.push('(');
                t_close.push(')');
                t_depth += 1;
            }
            Level::Not => {
                t_open.push_str("NOT ");
                t_depth += 1;
            }
            Level::Min => {
                p_open.push_str("min(");
                p_close.push(", fair)");
                p_depth += 1;
            }
            Level::Max => {
                p_open.push_str("max(");
                p_close.push(", fair)");
                p_depth += 1;
            }
            Level::Lean => {
                p_open.push_str("lean(");
                p_close.push(", fair, 0.5)");
                p_depth += 1;
            }
        }
    }
    // Closers close the innermost level first.
    let p_close: String = p_close.iter().rev().copied().collect();
    let src = format!(
        "PLAN p budget 0.2R ttl 15:00\n  WHEN {t_open}spot > 1{t_close}\n  DO buy 1 +1 C @ {p_open}fair{p_close}\n  EXIT spot < 1\n"
    );
    (src, t_depth, p_depth)
}

fn ctx() -> TurnContext {
    TurnContext::new(WakePhase::Mid, Profile::AuthoringV2, AuthorKind::Model)
}

/// A real Bus with one supersede (recorded by a live session on the bundled trend tape).
fn real_bus() -> &'static str {
    static BUS: OnceLock<String> = OnceLock::new();
    BUS.get_or_init(|| {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let tape = open_tape(&root.join("tapes/trend-2025-04-09-s1.jsonl")).expect("tape");
        let cfg = RunConfig {
            engine: EngineConfig::strict(Px::from_cents(100_000)),
            profile: Profile::AuthoringV2,
            author: AuthorKind::File,
            open_wake: true,
            view_request_cap: None,
        };
        let mut author = session::scripted(
            "s",
            vec![
                "PLAN p budget 0.2R ttl 15:00\n  WHEN spot > 1\n  DO buy 1 +1 C @ fair\n  EXIT spot < 1\n"
                    .into(),
            ],
        );
        let s = Run::new(tape, cfg, &[], Bus::new(None).keeping()).expect("session");
        let bus = s.run(&mut author).expect("run");
        String::from_utf8(bus.events().iter().flat_map(bus::canonical_line).collect())
            .expect("utf8")
    })
}

const HDR: &str = r#"{"type":"header","v":1,"name":"t","date":"2025-04-09","open":"09:30","close":"16:00","symbols":{"SPY":{"prior_close":100.0}}}"#;

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// The parser on nesting to 100,000: within the limit the document checks and prints
    /// back to itself; past it, the refusal is rule `limit` on the nested line.
    #[test]
    fn the_parser_refuses_nesting_past_the_limit_and_keeps_the_rest(
        d in depth(),
        kinds in prop::collection::vec(level(), 1..5),
        seed in 0usize..8,
    ) {
        let (src, t, p) = nested(d, &kinds, seed);
        let max = limits::MAX_NESTING as usize;
        match lang::check(&src, Mode::File) {
            Ok(doc) => {
                prop_assert!(t <= max && p <= max, "accepted at depth {t}/{p}");
                prop_assert_eq!(lang::print(&doc), src);
            }
            Err(e) => {
                prop_assert!(t > max || p > max, "refused at depth {t}/{p}: {}", e[0].one_line());
                prop_assert!(e.iter().all(|x| x.rule == Rule::Limit), "{}", e[0].one_line());
                let lines: Vec<usize> = e.iter().map(|x| x.line).collect();
                let want: Vec<usize> = [(t > max, 2), (p > max, 3)]
                    .iter()
                    .filter(|(past, _)| *past)
                    .map(|(_, l)| *l)
                    .collect();
                prop_assert_eq!(lines, want);
            }
        }
    }

    /// Wide inputs: long lines (to 10 MB), many terms, many statements. The parser answers
    /// (accepts or refuses) without panicking, and the size limit is named past 8 MiB.
    #[test]
    fn the_parser_answers_wide_and_long_inputs(
        terms in 1usize..20_000,
        line_mb in 0usize..=10,
        junk in "[a-z]{0,40}",
    ) {
        let when = vec!["spot > 1"; terms].join(" AND ");
        let src = format!(
            "PLAN p budget 0.2R ttl 15:00\n  WHEN {when}\n  DO buy 1 +1 C @ fair\n# {}{junk}\n",
            "x".repeat(line_mb * 1_000_000)
        );
        let r = lang::check(&src, Mode::File);
        if src.len() > limits::MAX_DOCUMENT_BYTES {
            let e = r.expect_err("over the size limit");
            prop_assert_eq!(e[0].rule, Rule::Limit);
        } else {
            let doc = r.expect("a wide plan is valid");
            prop_assert_eq!(lang::print(&doc), src);
        }
    }

    /// The turn router on deep, wide and oversized replies, as Kestrel or in the envelope:
    /// exactly one outcome; an oversized reply is refused by rule `limit`.
    #[test]
    fn the_router_answers_deep_wide_and_oversized_replies(
        d in depth(),
        kinds in prop::collection::vec(level(), 1..5),
        pad_kb in prop_oneof![0usize..64, 200usize..10_240],
        as_envelope in any::<bool>(),
    ) {
        let (src, ..) = nested(d, &kinds, 0);
        let body = if as_envelope {
            format!(
                "{{\"actions\": [{{\"kind\": \"supersede\", \"document\": {}}}]}}",
                serde_json::to_string(&src).expect("json")
            )
        } else {
            src
        };
        let reply = format!("{body}{}", " ".repeat(pad_kb * 1024));
        let t = turn::route(&Reply::text(reply.clone()), &ctx());
        if reply.len() > limits::MAX_REPLY_BYTES {
            let e = &t.outcome.errors()[0];
            prop_assert_eq!((e.code.as_str(), e.rule.as_str()), ("TURN", "limit"));
        } else if t.outcome.is_refused() {
            prop_assert!(t.kestrel.is_empty());
        } else {
            prop_assert_eq!(t.outcome.name(), "supersede");
        }
    }

    /// The envelope ingest on JSON nested to 100,000 and arrays of many actions: a text or
    /// an ingest error, never a panic.
    #[test]
    fn the_envelope_ingest_answers_deep_and_wide_json(
        d in 0usize..100_000,
        width in 0usize..5_000,
        open in prop_oneof![Just("["), Just("{\"a\":")],
    ) {
        let close = if open == "[" { "]" } else { "}" };
        let deep = format!(
            "{{\"journal\": \"j\", \"actions\": [{}{}{}]}}",
            open.repeat(d),
            "1",
            close.repeat(d)
        );
        let _ = envelope::ingest(&deep);
        let wide = format!(
            "{{\"actions\": [{}]}}",
            vec!["{\"kind\": \"standDown\", \"reason\": \"r\"}"; width].join(",")
        );
        let _ = envelope::ingest(&wide);
    }

    /// The tape reader on a field nested to 100,000 and lines to 10 MB: the event line is
    /// refused by line number with its reason; a cut tape is `ends-early`.
    #[test]
    fn the_tape_reader_answers_deep_and_long_lines(
        d in 0usize..100_000,
        long_mb in 0usize..=10,
        cut in 1usize..50,
    ) {
        let deep = format!(
            "{HDR}\n{{\"type\":\"tick\",\"ts\":\"09:30:00.000\",\"sym\":\"SPY\",\"px\":1.0,\"sz\":1,\"x\":{}0{}}}\n",
            "[".repeat(d),
            "]".repeat(d)
        );
        match read_tape_bytes(deep.as_bytes()) {
            Ok((_, evs)) => prop_assert_eq!(evs.len(), 1),
            Err(e) => prop_assert_eq!(e.line, 2, "{}", e),
        }
        let long = format!("{HDR}\n{{\"type\":\"headline\",\"ts\":\"09:30:00.000\",\"text\":\"{}\"}}\n", "y".repeat(long_mb * 1_000_000));
        match read_tape_bytes(long.as_bytes()) {
            Ok(_) => prop_assert!(long.len() < 2 * 65_536),
            Err(e) => prop_assert_eq!(e.line, 2, "{}", e),
        }
        // A tape of `cut` one-second ticks, closing at 16:00: cut short.
        let mut t = format!("{HDR}\n");
        for k in 0..cut {
            t.push_str(&format!(
                "{{\"type\":\"tick\",\"ts\":\"09:30:{:02}.000\",\"sym\":\"SPY\",\"px\":1.0,\"sz\":1}}\n",
                k
            ));
        }
        let mut r = TapeReader::new(t.as_bytes()).expect("header");
        for ev in r.by_ref() {
            prop_assert!(ev.is_ok());
        }
        let e = r.check_complete().expect_err("cut short");
        prop_assert_eq!(e.line as usize, cut + 2);
    }

    /// A replayed Bus whose turn carries a generated deep document is refused with a
    /// `REPLAY` error, never armed and never a crash.
    #[test]
    fn a_replayed_bus_with_a_deep_turn_is_refused(
        d in (limits::MAX_NESTING as usize + 1)..100_000,
    ) {
        let bus = real_bus();
        let deep = format!("WHEN {}spot > 1{}", "(".repeat(d), ")".repeat(d));
        // Only the turn record is forged (the repair record before it keeps the reply).
        let forged: String = bus
            .lines()
            .map(|l| {
                if l.contains("\"type\":\"turn\"") {
                    l.replacen("WHEN spot > 1", &deep, 1)
                } else {
                    l.to_string()
                }
            })
            .map(|l| l + "\n")
            .collect();
        prop_assert_ne!(&forged, bus);
        let e = Recorded::from_bus("deep", forged.as_bytes()).err().expect("refused");
        prop_assert!(e.contains("code=REPLAY rule=replay-refused"), "{}", e);
        prop_assert!(e.contains("rule=limit"), "{}", e);
    }
}
