//! Shared test helpers.
#![allow(dead_code)]

use std::path::PathBuf;

/// The shared corpus (`../shared/corpus` beside the project), if present. A user's fresh
/// clone has none: callers print a skip message and return.
pub fn shared_corpus() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if p.join("expected.tsv").is_file() {
        Some(p)
    } else {
        eprintln!(
            "SKIP: ../shared/corpus not found at {}: the shared-corpus test is skipped (the project's own fixtures still run)",
            p.display()
        );
        None
    }
}

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The bundled tapes (`tapes/*.jsonl`), sorted.
pub fn bundled_tapes() -> Vec<PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(root().join("tapes"))
        .expect("tapes/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    v.sort();
    assert!(v.len() >= 3, "three bundled tapes");
    v
}
