//! The parser's whole-process comparison (`scripts/bench-whole.sh`, docs/language.md):
//!
//! ```text
//! cargo run --release --example doc_corpus -- kestrel BYTES > big.kestrel   # ladder plans
//! cargo run --release --example doc_corpus -- toml BYTES > big.toml         # TOML, same shape as benches/lang.rs
//! target/release/examples/doc_corpus toml-roundtrip big.toml > out.toml     # toml_edit parse + print
//! ```
//!
//! `toml-roundtrip` is toml_edit's counterpart of `kestrel print`: read the file, parse it
//! into a format-preserving document, print it to stdout (the same bytes back).

#[path = "../benches/corpus/mod.rs"]
mod corpus;

use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bytes = |i: usize| -> usize {
        args.get(i)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| usage())
    };
    let out = match args.first().map(String::as_str) {
        Some("kestrel") => corpus::kestrel_ladders(bytes(1)),
        Some("toml") => corpus::toml(bytes(1)),
        Some("toml-roundtrip") => {
            let path = args.get(1).unwrap_or_else(|| usage());
            let text = match std::fs::read_to_string(path) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("error code=IO message=cannot read {path}: {e}");
                    std::process::exit(1);
                }
            };
            match text.parse::<toml_edit::DocumentMut>() {
                Ok(doc) => doc.to_string(),
                Err(e) => {
                    eprintln!("error code=TOML message={e}");
                    std::process::exit(2);
                }
            }
        }
        _ => usage(),
    };
    let mut stdout = std::io::stdout().lock();
    if stdout.write_all(out.as_bytes()).is_err() {
        std::process::exit(1);
    }
}

fn usage() -> ! {
    eprintln!("usage: doc_corpus kestrel BYTES | toml BYTES | toml-roundtrip FILE");
    std::process::exit(64);
}
