//! The Kestrel language: syntax (winnow), the typed model, the canonical printer, the
//! fail-closed rules and the error format.
//!
//! ```
//! use kestrel_desk::lang;
//! let src = "PLAN probe budget 0.05R ttl +20m\n  WHEN spot crosses above 5200\n  DO buy 1 +1 C @ fair-2c\n";
//! let doc = lang::check(src, lang::Mode::File).expect("valid");
//! assert_eq!(lang::print(&doc), src);
//! ```

pub mod ast;
pub mod card;
pub mod diag;
pub mod grammar;
pub mod lexicon;
pub mod print;
pub mod ranges;
#[cfg(test)]
mod ranges_tape;
#[cfg(test)]
mod ranges_tree;
pub mod rules;
mod syn;
mod syntax;
pub(crate) use syntax::too_large;

pub use ast::Document;
pub use diag::{Diagnostic, LineIndex, RESERVED_WORDS, Rule};
pub use print::{print, print_to};
pub use rules::{Mode, Scope};

/// A document's bytes as text. Bytes that are not UTF-8 are a refused document, not an
/// I/O failure (the file was read; its content is not a document): rule `syntax` at the
/// first bad byte's line and column, as a byte-order mark is refused at line 1 col 1.
pub fn decode(bytes: Vec<u8>) -> Result<String, Diagnostic> {
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let at = e.utf8_error().valid_up_to();
        let bad = e.utf8_error().error_len().unwrap_or(bytes.len() - at);
        let prefix = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
        let shown = bytes[at..at + bad]
            .iter()
            .map(|b| format!("0x{b:02X}"))
            .collect::<Vec<_>>()
            .join(" ");
        let one = bad == 1;
        let what = match (e.utf8_error().error_len().is_none(), one) {
            (true, true) => "ends in the middle of a UTF-8 character",
            (true, false) => "end in the middle of a UTF-8 character",
            (false, true) => "is not UTF-8",
            (false, false) => "are not UTF-8",
        };
        Diagnostic::new(
            prefix,
            &LineIndex::new(prefix),
            Rule::Syntax,
            at..at + bad,
            format!(
                "the document is not UTF-8 text: the {} {shown} here {what}; save the document as UTF-8",
                if one { "byte" } else { "bytes" }
            ),
            "not UTF-8",
        )
    })
}

/// Parse text into a document (syntax only). Every broken line is reported.
pub fn parse(src: &str) -> Result<Document, Vec<Diagnostic>> {
    syntax::parse_document(src)
}

/// Parse and validate under every fail-closed rule, with nothing beyond the document in
/// scope. A document is either returned whole or refused with coded errors.
pub fn check(src: &str, mode: Mode) -> Result<Document, Vec<Diagnostic>> {
    check_in_scope(src, mode, &Scope::default())
}

/// [`check`] with extra names in scope (a turn's standing book, imported files).
pub fn check_in_scope(src: &str, mode: Mode, scope: &Scope) -> Result<Document, Vec<Diagnostic>> {
    let doc = parse(src)?;
    let errors = rules::validate(src, &doc, mode, scope);
    if errors.is_empty() {
        Ok(doc)
    } else {
        Err(errors)
    }
}

/// [`check`] and [`print`] a statement at a time: the canonical text of the document
/// [`check`] returns, or the refusals [`check`] gives (the same codes, spans and messages).
/// Each statement is checked and printed as soon as its last line is read, and dropped:
/// the whole document's model is never held (`kestrel print` of a large document holds its
/// text and the printed text, and one statement).
pub fn check_print(src: &str, mode: Mode) -> Result<String, Vec<Diagnostic>> {
    // The printed text of a valid document is about its own size; a document over the size
    // limit is refused unread, so the reservation is never more than the limit.
    let cap = src.len().min(crate::limits::MAX_DOCUMENT_BYTES);
    let mut out =
        String::from_utf8(crate::limits::big_buffer(cap.saturating_add(64))).unwrap_or_default();
    let mut checker = rules::Checker::new(src, mode, &Scope::default());
    let tail = syntax::parse_statements(src, &mut |st| {
        checker.statement(&st);
        print::print_statement(&mut out, &st);
        Some(st)
    });
    // The lexeme strings kept for reuse go back to the allocator with the document.
    syntax::clear_pool();
    let tail = tail?;
    let errors = checker.finish();
    if !errors.is_empty() {
        return Err(errors);
    }
    print::trivia(&mut out, &tail);
    Ok(out)
}

/// The model as JSON with every span removed: two documents are the same model when these
/// are equal (`parse(print(parse(x))) == parse(x)` modulo spans).
pub fn model_without_spans(doc: &Document) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.remove("span");
                for x in m.values_mut() {
                    strip(x);
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = serde_json::to_value(doc).unwrap_or(serde_json::Value::Null);
    strip(&mut v);
    v
}

/// Are two documents the same model, ignoring source spans?
pub fn model_eq(a: &Document, b: &Document) -> bool {
    model_without_spans(a) == model_without_spans(b)
}

/// The bundled example documents (`examples/*.kestrel`), sorted by text: the tests' sample of
/// every statement kind.
#[cfg(test)]
pub(crate) fn example_documents() -> Vec<String> {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut docs: Vec<String> = std::fs::read_dir(format!("{root}/examples"))
        .expect("examples/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "kestrel"))
        .map(|p| std::fs::read_to_string(p).expect("example"))
        .collect();
    docs.sort();
    docs
}

/// A xorshift64 generator seeded with `state` (non-zero): the tests' deterministic draws.
#[cfg(test)]
pub(crate) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One byte `is`, two `are` (the tester read `the bytes 0xE4 0x92 here is not UTF-8`).
    #[test]
    fn a_not_utf8_message_agrees_with_its_bytes() {
        let m = |b: &[u8]| decode(b.to_vec()).unwrap_err().message;
        assert!(
            m(b"a\xFFb").contains("the byte 0xFF here is not UTF-8"),
            "{}",
            m(b"a\xFFb")
        );
        assert!(
            m(b"a\xE4\x92A").contains("the bytes 0xE4 0x92 here are not UTF-8"),
            "{}",
            m(b"a\xE4\x92A")
        );
        assert!(
            m(b"a\xE4\x92")
                .contains("the bytes 0xE4 0x92 here end in the middle of a UTF-8 character"),
            "{}",
            m(b"a\xE4\x92")
        );
        assert!(
            m(b"a\xE4").contains("the byte 0xE4 here ends in the middle"),
            "{}",
            m(b"a\xE4")
        );
    }

    /// Variants of a document: itself, each line left out, each line doubled, and the
    /// statements in reverse (names used above their definition).
    fn variants(src: &str) -> Vec<String> {
        let lines: Vec<&str> = src.split_inclusive('\n').collect();
        let mut out = vec![src.to_string()];
        for k in 0..lines.len() {
            let mut without = String::new();
            let mut doubled = String::new();
            for (n, l) in lines.iter().enumerate() {
                if n != k {
                    without.push_str(l);
                }
                doubled.push_str(l);
                if n == k {
                    doubled.push_str(l);
                }
            }
            out.push(without);
            out.push(doubled);
        }
        let mut blocks: Vec<String> = Vec::new();
        for l in &lines {
            if !l.starts_with([' ', '#', '\n']) || blocks.is_empty() {
                blocks.push(String::new());
            }
            if let Some(b) = blocks.last_mut() {
                b.push_str(l);
            }
        }
        out.push(blocks.iter().rev().map(String::as_str).collect());
        out
    }

    /// `check_print` gives what `check` then `print` give: the same text for a valid
    /// document, the same refusals (rule, span, message, in order) for any other, over
    /// every example and its variants, in both modes.
    #[test]
    fn check_print_is_check_then_print() {
        let extra = [
            "PLAN a budget 1R ttl 15:00\n  WHEN plan(b).fired\n  DO buy 1 ATM C @ fair\n  ARM c\nPLAN b budget 1R ttl 15:00\n  WHEN spot > 1\n  DO buy 1 ATM C @ fair\n".to_string(),
            "WAKE w WHEN spot > 1 DELIVER v\nVIEW v\n  tape\n".to_string(),
            "WAKE w WHEN spot > 1 DELIVER nope\nPLAN a budget 0R ttl +0m\n  WHEN plan(x).filled\n  ARM y\n".to_string(),
            "USING signal SPX exec SPY 9999dte\nPLAN p budget 99999999999999999R ttl 15:00\n  WHEN spot > 1\n  DO buy 1 +1001 C @ fair\n".to_string(),
            "CANCEL p\nSTAND-DOWN done\n".to_string(),
        ];
        let (mut valid, mut refused) = (0, 0);
        for doc in example_documents().iter().chain(extra.iter()) {
            for src in variants(doc) {
                for mode in [Mode::File, Mode::Turn] {
                    let want = check(&src, mode).map(|d| print(&d));
                    let got = check_print(&src, mode);
                    assert_eq!(got, want, "{mode:?}\n{src}");
                    if want.is_ok() {
                        valid += 1;
                    } else {
                        refused += 1;
                    }
                }
            }
        }
        assert!(
            valid > 50 && refused > 50,
            "{valid} valid, {refused} refused"
        );
    }
}
