//! Seed 001's constrained-decoding experiment without a model: prints the table in
//! docs/grammar.md.
//!
//! cargo run --release --example grammar_experiment -- [samples-per-target] [budget...] [--full-vocab] [--plain]
//!
//! `--plain` constrains with `grammar::to_lark_plain` (every line-layer symbol its own
//! lexeme) instead of `grammar::to_lark`, to compare; llguidance runs with its default limits.

#[path = "../tests/grammar_support/experiment.rs"]
mod experiment;

use experiment::{Errors, Export, Vocab, run_arm_with, targets};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let full = args.iter().any(|a| a == "--full-vocab");
    let export = if args.iter().any(|a| a == "--plain") {
        Export::Plain
    } else {
        Export::Lark
    };
    let nums: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let per_target = nums.first().copied().unwrap_or(8);
    let budgets: Vec<usize> = if nums.len() > 1 {
        nums[1..].to_vec()
    } else {
        vec![256, 512]
    };
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let targets = targets(&root);
    let t0 = std::time::Instant::now();
    let vocab = Vocab::cl100k(&targets, if full { None } else { Some(8000) }, 1);
    println!(
        "vocabulary: {} cl100k tokens{} + EOS; {} targets x {per_target} samples per arm; seed 7",
        vocab.words.len() - 1,
        if full {
            " (all)"
        } else {
            " (targets' tokens, every byte, 8000 random)"
        },
        targets.len()
    );
    println!(
        "constraint: {} under llguidance's default limits",
        match export {
            Export::Lark => "grammar::to_lark",
            Export::Plain => "grammar::to_lark_plain",
        }
    );
    let errors = Errors {
        collapse: 0.15,
        spot_price: 0.4,
        noise: 0.01,
    };
    println!(
        "author errors: collapse a line break {:.0}%, `@ spot` {:.0}%, noise token {:.0}% per step\n",
        errors.collapse * 100.0,
        errors.spot_price * 100.0,
        errors.noise * 100.0
    );
    println!(
        "| budget | arm | samples | completed | grammar escapes (of completed) | truncated at budget | semantic refusals (of completed) | engine errors | most items in one mask | most lexer fuel in one mask |"
    );
    println!("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let n = targets.len() * per_target;
    for &budget in &budgets {
        for constrained in [false, true] {
            let t = run_arm_with(
                &vocab,
                &targets,
                errors,
                budget,
                n,
                7,
                constrained.then_some(export),
            );
            let pct = |a: usize, b: usize| {
                if b == 0 {
                    0.0
                } else {
                    100.0 * a as f64 / b as f64
                }
            };
            println!(
                "| {budget} | {} | {} | {} | {} ({:.1}%) | {} ({:.1}%) | {} ({:.1}%) | {} | {} | {} |",
                if constrained {
                    "constrained"
                } else {
                    "unconstrained"
                },
                t.samples,
                t.completed,
                t.escapes,
                pct(t.escapes, t.completed),
                t.truncated,
                pct(t.truncated, t.samples),
                t.semantic,
                pct(t.semantic, t.completed),
                t.engine_errors,
                if constrained {
                    t.max_items.to_string()
                } else {
                    "-".into()
                },
                if constrained {
                    t.max_lexer_fuel.to_string()
                } else {
                    "-".into()
                },
            );
        }
    }
    println!("\n({:.1} s)", t0.elapsed().as_secs_f64());
}
