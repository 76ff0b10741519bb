//! Property tests on generated documents (not only the corpus):
//! - `print(parse(print(d))) == print(d)` and `parse(print(d))` is the model `d` (spans
//!   aside), for documents generated from the typed model, comments included;
//! - the parser never panics (nor loops) on arbitrary bytes or on mutations of valid text.
//!
//! CI runs the default case counts; `PROPTEST_CASES=200000 cargo test --release --test
//! roundtrip_prop` is the long run documented in docs/language.md.

use kestrel_desk::lang;
use proptest::prelude::*;

#[path = "grammar_support/docgen.rs"]
mod docgen;
use docgen::document;

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(512),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// print(parse(print(d))) == print(d), and the reparsed model is d.
    #[test]
    fn generated_documents_round_trip(d in document()) {
        let text = lang::print(&d);
        let parsed = match lang::parse(&text) {
            Ok(p) => p,
            Err(e) => return Err(TestCaseError::fail(format!("{}\n---\n{text}", e[0]))),
        };
        prop_assert_eq!(lang::print(&parsed), text.clone());
        prop_assert_eq!(lang::model_without_spans(&parsed), lang::model_without_spans(&d), "{}", text);
    }

    /// parse(print(parse(x))) == parse(x) modulo spans, for text that parses at all.
    #[test]
    fn reprinting_is_a_fixed_point(d in document(), spaces in 1usize..4) {
        // Widen the single spaces of canonical text: still parses, prints back canonical.
        let text = lang::print(&d);
        let wide: String = text.lines().map(|l| {
            if l.trim_start().starts_with('#') || l.contains('#') || l.starts_with("STAND-DOWN") { l.to_string() }
            else {
                let indent = l.len() - l.trim_start_matches(' ').len();
                format!("{}{}", &l[..indent], l[indent..].replace(' ', &" ".repeat(spaces)))
            }
        }).collect::<Vec<_>>().join("\n") + "\n";
        if let Ok(x) = lang::parse(&wide) {
            let again = lang::parse(&lang::print(&x)).expect("canonical text parses");
            prop_assert!(lang::model_eq(&again, &x));
            prop_assert_eq!(lang::print(&x), text);
        }
    }

    /// The parser never panics on arbitrary input; it returns a document or coded errors.
    #[test]
    fn parser_never_panics_on_arbitrary_text(s in "\\PC{0,200}") {
        match lang::check(&s, lang::Mode::Turn) {
            Ok(d) => { let _ = lang::print(&d); }
            Err(e) => prop_assert!(!e.is_empty() && e.iter().all(|d| d.line >= 1 && d.col >= 1)),
        }
    }

    #[test]
    fn parser_never_panics_on_arbitrary_bytes(b in proptest::collection::vec(any::<u8>(), 0..300)) {
        let s = String::from_utf8_lossy(&b);
        let _ = lang::check(&s, lang::Mode::File);
    }

    /// Mutations of valid documents: splice, delete, duplicate and replace bytes.
    #[test]
    fn parser_never_panics_on_mutations(d in document(), ops in proptest::collection::vec((0usize..5, any::<usize>(), "[\\PC\t\n]{0,4}"), 1..6)) {
        let mut s = lang::print(&d);
        for (op, at, ins) in ops {
            if s.is_empty() { s.push_str(&ins); continue; }
            let mut at = at % s.len();
            while !s.is_char_boundary(at) { at -= 1; }
            match op {
                0 => s.insert_str(at, &ins),
                1 => { let mut e = (at + 3).min(s.len()); while !s.is_char_boundary(e) { e += 1; } s.replace_range(at..e, ""); }
                2 => { let tail = s[at..].to_string(); s.push_str(&tail); }
                3 => s.replace_range(at..at, "\t"),
                _ => { s.truncate(at); }
            }
        }
        if let Err(e) = lang::check(&s, lang::Mode::Turn) {
            for d in &e {
                prop_assert!(d.start <= d.end && d.end <= s.len(), "bad span {:?} in {:?}", d, s);
                let _ = d.render(&s, "fuzz", false);
            }
        }
    }
}
