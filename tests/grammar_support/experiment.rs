//! Seed 001's constrained-decoding experiment, reproduced without a model.
//!
//! The "model" is a seeded stochastic author over the cl100k vocabulary: at each step it
//! proposes the next cl100k token of a valid target turn, but with small probabilities it
//! makes the dry runs' mistakes (it collapses a line break onto one line, `WHEN … DO …`; it
//! writes `@ spot` for a price) or emits a uniformly random vocabulary token (noise). Run
//! unconstrained, its completions are parsed by the real parser and the syntax refusals are
//! counted as grammar escapes. Run constrained, every step's proposal distribution is masked
//! by llguidance, at its default limits, with the exported Lark turn grammar (renormalised
//! over allowed tokens, EOS only where the grammar may end): completed generations must all
//! parse; a generation that reaches the token budget first is a truncation, counted apart; a
//! mask llguidance refuses to compute (a limit) is an engine error.
#![allow(dead_code)]

use kestrel_desk::lang::grammar::{self, GrammarOptions, GrammarScope};
use kestrel_desk::lang::{self, Mode, Rule};
use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::{ApproximateTokEnv, TokEnv, TokRxInfo, TokTrie};
use llguidance::{Matcher, ParserFactory};
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};
use std::collections::HashMap;
use std::sync::Arc;

/// The vocabulary: token bytes, the EOS id, the token environment for llguidance.
pub struct Vocab {
    pub words: Vec<Vec<u8>>,
    pub eos: u32,
    pub env: TokEnv,
    by_bytes: HashMap<Vec<u8>, u32>,
    /// cl100k rank → local id.
    local: HashMap<u32, u32>,
}

impl Vocab {
    /// The cl100k vocabulary. `Some(n)`: only the tokens of `targets`, the adversarial
    /// tokens, every single-byte token and `n` random other tokens (much faster masks);
    /// `None`: all of it.
    pub fn cl100k(targets: &[String], noise: Option<usize>, seed: u64) -> Vocab {
        let bpe = tiktoken_rs::cl100k_base_singleton();
        let all: Vec<(u32, Vec<u8>)> = (0u32..100_256)
            .filter_map(|r| bpe.decode_bytes(&[r]).ok().map(|b| (r, b)))
            .collect();
        let keep: Vec<(u32, Vec<u8>)> = match noise {
            None => all,
            Some(n) => {
                let mut want: std::collections::BTreeSet<u32> = std::collections::BTreeSet::new();
                for t in targets {
                    want.extend(bpe.encode_ordinary(t));
                }
                for s in [
                    " spot", " ", "\t", " DO", " WHEN", " EXIT", " TP", " AND", "spot",
                ] {
                    want.extend(bpe.encode_ordinary(s));
                }
                let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
                for _ in 0..n {
                    want.insert((rng.next_u64() % 100_256) as u32);
                }
                all.into_iter()
                    .filter(|(r, b)| b.len() == 1 || want.contains(r))
                    .collect()
            }
        };
        let mut words = Vec::new();
        let mut by_bytes = HashMap::new();
        let mut local = HashMap::new();
        for (r, b) in keep {
            let id = words.len() as u32;
            by_bytes.entry(b.clone()).or_insert(id);
            local.insert(r, id);
            words.push(b);
        }
        let eos = words.len() as u32;
        words.push(b"\xFF<|endoftext|>".to_vec());
        let info = TokRxInfo::new(words.len() as u32, eos);
        let trie = TokTrie::from(&info, &words);
        let env: TokEnv = Arc::new(ApproximateTokEnv::new(trie));
        Vocab {
            words,
            eos,
            env,
            by_bytes,
            local,
        }
    }

    /// `text` as local token ids (cl100k's own tokenisation).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let bpe = tiktoken_rs::cl100k_base_singleton();
        bpe.encode_ordinary(text)
            .into_iter()
            .flat_map(|r| match self.local.get(&r) {
                Some(&id) => vec![id],
                None => bpe
                    .decode_bytes(&[r])
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|b| self.by_bytes.get(&vec![b]).copied())
                    .collect(),
            })
            .collect()
    }

    fn id(&self, bytes: &[u8]) -> Option<u32> {
        self.by_bytes.get(bytes).copied()
    }
}

/// The author's error rates.
#[derive(Debug, Clone, Copy)]
pub struct Errors {
    /// At a token holding a line break: write a space instead (`WHEN … DO …` on one line).
    pub collapse: f64,
    /// At a price anchor after `@`: write ` spot` instead.
    pub spot_price: f64,
    /// At any step: a uniformly random vocabulary token.
    pub noise: f64,
}

/// One arm's counts.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tally {
    pub samples: usize,
    /// Ended with EOS within the budget.
    pub completed: usize,
    /// Reached the token budget first.
    pub truncated: usize,
    /// Completed, and refused by the parser under rule `syntax`.
    pub escapes: usize,
    /// Completed, parsed, and refused by a semantic rule (post-parse, by design).
    pub semantic: usize,
    pub tokens: usize,
    /// The constraint engine refused to compute a mask (a limit): neither a completion nor a
    /// truncation.
    pub engine_errors: usize,
    /// The most Earley items llguidance made for one mask (its default limit,
    /// `step_max_items`, is 50 000).
    pub max_items: usize,
    /// The most lexer fuel llguidance spent on one mask (default limit `step_lexer_fuel`,
    /// 200 000).
    pub max_lexer_fuel: u64,
}

/// Which Lark export constrains the generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Export {
    /// `grammar::to_lark`, the one `kestrel grammar --format lark` prints.
    Lark,
    /// `grammar::to_lark_plain`: the rules as they are, one character per terminal (the
    /// export before the line layer was lexed as gaps), for comparison.
    Plain,
}

/// The exported Lark turn grammar.
pub fn lark_turn(export: Export) -> String {
    let g = grammar::grammar(GrammarOptions {
        scope: GrammarScope::Turn,
        ..GrammarOptions::default()
    });
    match export {
        Export::Lark => grammar::to_lark(&g),
        Export::Plain => grammar::to_lark_plain(&g),
    }
}

/// Targets: the project's example documents and a few directive turns.
/// The example documents the experiment writes toward (docs/grammar.md's nine).
pub const EXAMPLE_TARGETS: [&str; 9] = [
    "chain-and-book.kestrel",
    "chase.kestrel",
    "desk.kestrel",
    "fade-ladder.kestrel",
    "grade.kestrel",
    "run-desk.kestrel",
    "shares.kestrel",
    "spread.kestrel",
    "view-wake.kestrel",
];

pub fn targets(root: &std::path::Path) -> Vec<String> {
    let mut t: Vec<String> = Vec::new();
    // Named, not every file in examples/: an example added later does not change the
    // experiment whose table docs/grammar.md gives.
    for name in EXAMPLE_TARGETS {
        let p = root.join("examples").join(name);
        // A renamed or removed example must not change the experiment in silence.
        t.push(std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())));
    }
    t.push(
        "# the range is intact; nothing to add\nSTAND-DOWN edgeless chop, no defined-risk setup\n"
            .into(),
    );
    t.push("SHOW VIEW probe budget 900\n  gex 0dte\n  skew 25d\n  tape 5m\n# need gamma before I commit\n".into());
    t.push("# check back when the range resolves\nWAKE range-resolves WHEN spot crosses above hod OR spot crosses below lod\n".into());
    t.push("PLAN drive-follow budget 0.2R ttl +40m regime {intraday: trend}\n  USING signal SPX exec SPY 0dte\n  WHEN spot crosses above hod AND velocity(1m) >= p90\n  DO buy 1 +1 C @ min(fair, ask) peg cap fair\n  EXIT spot < vwap held 90s @ fair\n".into());
    t
}

/// Run one arm: `samples` generations, each toward target `i % targets.len()`, constrained
/// by the Lark export under llguidance's default limits (or not constrained).
pub fn run_arm(
    vocab: &Vocab,
    targets: &[String],
    errors: Errors,
    budget: usize,
    samples: usize,
    seed: u64,
    constrained: bool,
) -> Tally {
    let export = constrained.then_some(Export::Lark);
    run_arm_with(vocab, targets, errors, budget, samples, seed, export)
}

/// [`run_arm`] with the export to constrain by (`None`: unconstrained). llguidance runs with
/// its default limits (`ParserFactory::new_simple`): a mask it refuses is an engine error.
pub fn run_arm_with(
    vocab: &Vocab,
    targets: &[String],
    errors: Errors,
    budget: usize,
    samples: usize,
    seed: u64,
    export: Option<Export>,
) -> Tally {
    let mut tally = Tally::default();
    let fresh = export.map(|export| {
        let mut factory = ParserFactory::new_simple(&vocab.env).expect("llguidance factory");
        factory.quiet();
        let m = Matcher::new(factory.create_parser(TopLevelGrammar::from_lark(lark_turn(export))));
        assert!(m.get_error().is_none(), "grammar: {:?}", m.get_error());
        m
    });
    let space = vocab.id(b" ");
    let spot = vocab.id(b" spot");
    let encoded: Vec<Vec<u32>> = targets.iter().map(|t| vocab.encode(t)).collect();
    let v = vocab.words.len();
    for s in 0..samples {
        let mut rng =
            ChaCha8Rng::seed_from_u64(seed.wrapping_mul(1_000_003).wrapping_add(s as u64));
        let target = &encoded[s % encoded.len()];
        let mut matcher = fresh.as_ref().map(Matcher::deep_clone);
        let mut pos = 0usize;
        let mut out: Vec<u8> = Vec::new();
        let mut done = false;
        let mut engine_error = false;
        let mut steps = 0;
        while steps < budget {
            steps += 1;
            // The author's proposal: (token, weight, advances the target by).
            let mut props: Vec<(u32, f64, usize)> = Vec::new();
            match target.get(pos) {
                Some(&next) => {
                    let bytes = &vocab.words[next as usize];
                    let mut rest = 1.0 - errors.noise;
                    if bytes.contains(&b'\n') {
                        let collapsed: Vec<u8> = bytes
                            .iter()
                            .map(|&b| if b == b'\n' { b' ' } else { b })
                            .collect();
                        if let Some(c) = vocab.id(&collapsed).or(space) {
                            props.push((c, rest * errors.collapse, 1));
                            rest *= 1.0 - errors.collapse;
                        }
                    }
                    let after_at = out.ends_with(b"@");
                    if after_at && let Some(sp) = spot {
                        props.push((sp, rest * errors.spot_price, 1));
                        rest *= 1.0 - errors.spot_price;
                    }
                    props.push((next, rest, 1));
                }
                None => props.push((vocab.eos, 1.0 - errors.noise, 0)),
            }
            let mask = match matcher.as_mut() {
                Some(m) => {
                    let mask = m.compute_mask();
                    if let Ok(st) = m.last_step_stats() {
                        tally.max_items = tally.max_items.max(st.all_items);
                        tally.max_lexer_fuel = tally.max_lexer_fuel.max(st.lexer_cost);
                    }
                    match mask {
                        Ok(mask) => Some(mask),
                        Err(_) => {
                            engine_error = true;
                            break;
                        }
                    }
                }
                None => None,
            };
            let allowed = |t: u32| mask.as_ref().is_none_or(|mk| mk.is_allowed(t));
            let n_allowed = mask.as_ref().map(|mk| mk.num_set()).unwrap_or(v);
            if n_allowed == 0 {
                break;
            }
            let props: Vec<(u32, f64, usize)> =
                props.into_iter().filter(|(t, _, _)| allowed(*t)).collect();
            let targeted: f64 = props.iter().map(|p| p.1).sum();
            let noise_mass = errors.noise * n_allowed as f64 / v as f64;
            let total = targeted + noise_mass;
            let x = unit(&mut rng) * total;
            let (tok, adv) = if total <= 0.0 || x >= targeted {
                // Noise: a uniformly random allowed token.
                let k = (rng.next_u64() % n_allowed as u64) as usize;
                let t = match &mask {
                    Some(mk) => nth_set(mk, k),
                    None => k as u32,
                };
                (t, 0)
            } else {
                let mut acc = 0.0;
                let mut pick = props[props.len() - 1];
                for p in &props {
                    acc += p.1;
                    if x < acc {
                        pick = *p;
                        break;
                    }
                }
                (pick.0, pick.2)
            };
            if let Some(m) = matcher.as_mut()
                && m.consume_token(tok).is_err()
            {
                engine_error = true;
                break;
            }
            if tok == vocab.eos {
                done = true;
                break;
            }
            pos += adv;
            out.extend_from_slice(&vocab.words[tok as usize]);
        }
        tally.samples += 1;
        tally.tokens += steps;
        if engine_error {
            tally.engine_errors += 1;
            continue;
        }
        if !done {
            tally.truncated += 1;
            continue;
        }
        tally.completed += 1;
        let text = String::from_utf8_lossy(&out).into_owned();
        match lang::parse(&text) {
            Err(errs) if errs.iter().any(|e| e.rule == Rule::Syntax) => tally.escapes += 1,
            Err(_) => tally.semantic += 1,
            Ok(_) => {
                if lang::check(&text, Mode::Turn).is_err() {
                    tally.semantic += 1;
                }
            }
        }
    }
    tally
}

fn unit(rng: &mut ChaCha8Rng) -> f64 {
    ((rng.next_u64() >> 11) as f64) / (1u64 << 53) as f64
}

fn nth_set(mask: &llguidance::toktrie::SimpleVob, k: usize) -> u32 {
    let mut i = 0;
    let mut found = 0;
    mask.iter_set_entries(|t| {
        if i == k {
            found = t as u32;
        }
        i += 1;
    });
    found
}

/// Compile `lark` for `vocab` under llguidance's default limits, consume `prefix` (cl100k's
/// tokenisation) and compute one mask: the items and lexer fuel it took, or the engine's
/// refusal.
pub fn mask_cost(vocab: &Vocab, lark: &str, prefix: &str) -> Result<(usize, u64), String> {
    let mut factory = ParserFactory::new_simple(&vocab.env).expect("llguidance factory");
    factory.quiet();
    let mut m = Matcher::new(factory.create_parser(TopLevelGrammar::from_lark(lark.into())));
    assert!(m.get_error().is_none(), "grammar: {:?}", m.get_error());
    m.consume_tokens(&vocab.encode(prefix))
        .map_err(|e| format!("the prefix {prefix:?}: {e}"))?;
    match m.compute_mask() {
        Ok(_) => {
            let st = m.last_step_stats().map_err(|e| e.to_string())?;
            Ok((st.all_items, st.lexer_cost))
        }
        Err(e) => Err(e.to_string().lines().next().unwrap_or("").to_string()),
    }
}
