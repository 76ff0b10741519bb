//! Seed 001's experiment in small (the full table: `cargo run --release --example
//! grammar_experiment`, figures in docs/grammar.md): the same seeded author, unconstrained
//! and masked by llguidance with the exported Lark turn grammar. Completed constrained
//! generations never escape the grammar; the unconstrained ones do.

#[path = "grammar_support/experiment.rs"]
mod experiment;

use experiment::{Errors, Vocab, run_arm, targets};

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
