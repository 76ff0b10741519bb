//! Seed 001's experiment in small (the full table: `cargo run --release --example
//! grammar_experiment`, figures in docs/grammar.md): the same seeded author, unconstrained
//! and masked by llguidance (default limits) with the exported Lark turn grammar. Completed
//! constrained generations never escape the grammar; the unconstrained ones do.

#[path = "grammar_support/experiment.rs"]
mod experiment;

use experiment::{Errors, Export, Vocab, lark_turn, mask_cost, run_arm, targets};

#[test]
fn constrained_generations_that_complete_never_escape() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let targets = targets(&root);
    let vocab = Vocab::cl100k(&targets, Some(2000), 1);
    let errors = Errors {
        collapse: 0.15,
        spot_price: 0.4,
        noise: 0.01,
    };
    let n = targets.len() * 2;
    let free = run_arm(&vocab, &targets, errors, 400, n, 7, false);
    let held = run_arm(&vocab, &targets, errors, 400, n, 7, true);
    eprintln!("unconstrained {free:?}\nconstrained   {held:?}");
    assert_eq!(held.samples, n);
    assert_eq!(held.engine_errors, 0, "llguidance refused a mask");
    assert!(held.completed > 0, "some constrained generations complete");
    assert_eq!(
        held.escapes, 0,
        "a completed constrained generation escaped the grammar"
    );
    assert!(
        free.escapes > 0,
        "the unconstrained author does make the syntax errors"
    );
}

/// With the whole cl100k vocabulary and llguidance's default limits, the masks where the
/// export with one lexeme per line-layer symbol stopped ("Too many items": inside a comment,
/// where every token ending in a newline cost two Earley rows) are computed, with items to
/// spare; the same masks with `to_lark_plain` are refused, which is what this guards.
#[test]
fn masks_fit_llguidance_default_limits_with_the_full_vocabulary() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let vocab = Vocab::cl100k(&targets(&root), None, 1);
    let lark = lark_turn(Export::Lark);
    // (prefix, most items expected): inside a comment a mask takes a handful of items.
    for (prefix, most) in [
        ("# the range is intact", 1_000),
        ("\n\n#", 1_000),
        ("PLAN a budget 0.1R ttl +5m # why", 1_000),
        (
            "PLAN a budget 0.1R ttl +5m\n  WHEN spot > hod\n  # note",
            1_000,
        ),
        ("SHOW VIEW v\n  gex 0dte # gamma", 1_000),
        ("STAND-DOWN edgeless chop", 25_000),
        // The largest mask of the experiment: a value after a comparison (the code layer's
        // one-character terminals), under the default limit, 50 000.
        ("PLAN a budget 0.1R ttl +5m\n  WHEN velocity(1m) < ", 50_000),
    ] {
        let (items, fuel) = mask_cost(&vocab, &lark, prefix).unwrap_or_else(|e| panic!("{e}"));
        eprintln!("{prefix:?}: {items} items, {fuel} lexer fuel");
        assert!(items < most, "{prefix:?}: {items} items");
        assert!(fuel < 100_000, "{prefix:?}: {fuel} lexer fuel");
    }
    let plain = lark_turn(Export::Plain);
    let refused = mask_cost(&vocab, &plain, "# the range is intact");
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.contains("Too many items")),
        "{refused:?}"
    );
}
