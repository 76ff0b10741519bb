//! Every case of the shared corpus (`../shared/corpus/expected.tsv`) gets its outcome:
//! valid documents print back byte-identical, invalid ones are refused with the named rule
//! at the named line. Skips with a message when the corpus is absent.

mod common;

use kestrel_desk::lang::{self, Mode};

#[test]
fn shared_corpus_documents_get_their_outcomes() {
    let Some(dir) = common::shared_corpus() else {
        return;
    };
    let tsv = std::fs::read_to_string(dir.join("expected.tsv")).expect("expected.tsv");
    let mut checked = 0;
    let mut failures = Vec::new();
    for row in tsv
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let cols: Vec<&str> = row.split('\t').collect();
        let (file, result) = (cols[0], cols[1]);
        let src = std::fs::read_to_string(dir.join(file)).expect(file);
        match result {
            "accepted" => match lang::check(&src, Mode::File) {
                Ok(doc) => {
                    let printed = lang::print(&doc);
                    if printed != src {
                        failures.push(format!("{file}: print(parse(x)) != x:\n{printed}"));
                    }
                }
                Err(e) => failures.push(format!("{file}: refused: {}", e[0])),
            },
            "refused" => {
                let (rule, line): (&str, usize) = (cols[2], cols[3].parse().expect("line"));
                match lang::check(&src, Mode::File) {
                    Ok(_) => failures.push(format!("{file}: accepted, want {rule}")),
                    Err(errs) => {
                        let first = &errs[0];
                        if first.rule.name() != rule || first.line != line {
                            failures.push(format!(
                                "{file}: want {rule} at line {line}, got {}",
                                first.one_line()
                            ));
                        }
                        assert_eq!(first.code, "PARSE");
                    }
                }
            }
            other => panic!("unknown result {other} in expected.tsv"),
        }
        checked += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 28, "only {checked} corpus rows");
}

#[test]
fn shared_corpus_valid_documents_are_stable_models() {
    let Some(dir) = common::shared_corpus() else {
        return;
    };
    for entry in std::fs::read_dir(dir.join("valid")).expect("valid/") {
        let path = entry.expect("entry").path();
        let src = std::fs::read_to_string(&path).expect("read");
        let a = lang::parse(&src).expect("parses");
        let b = lang::parse(&lang::print(&a)).expect("reparses");
        assert!(lang::model_eq(&a, &b), "{}", path.display());
    }
}
