//! Fitting text into columns: cut at a word boundary with `…`, never mid-word (a single
//! word longer than the column is the one exception: it is cut with `…`).
//!
//! Widths are terminal columns as ratatui draws the text, not characters: a CJK character
//! or an emoji takes two, a combining mark none, and a control character none (ratatui
//! drops it). Text is cut between graphemes, never inside one.

use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// The columns one grapheme takes on the screen (a control character is not drawn).
fn columns(g: &str) -> usize {
    if g.contains(char::is_control) {
        0
    } else {
        g.width()
    }
}

/// The columns `s` takes on the screen.
pub fn width(s: &str) -> usize {
    s.graphemes(true).map(columns).sum()
}

/// The longest head of `s` at most `w` columns wide (whole graphemes).
pub fn head(s: &str, w: usize) -> &str {
    let mut used = 0;
    for (i, g) in s.grapheme_indices(true) {
        used += columns(g);
        if used > w {
            return &s[..i];
        }
    }
    s
}

/// The longest tail of `s` at most `w` columns wide (whole graphemes).
pub fn tail(s: &str, w: usize) -> &str {
    let mut used = 0;
    for (i, g) in s.grapheme_indices(true).rev() {
        used += columns(g);
        if used > w {
            return &s[i + g.len()..];
        }
    }
    s
}

/// `s` with its first `n` columns left out: how many blank columns a wide grapheme cut in
/// two by the edge leaves (it is dropped), and the rest after it.
pub fn skip(s: &str, n: usize) -> (usize, &str) {
    let mut used = 0;
    for (i, g) in s.grapheme_indices(true) {
        if used >= n {
            return (used - n, &s[i..]);
        }
        used += columns(g);
    }
    (used.saturating_sub(n), "")
}

/// `s` in at most `w` columns: whole, or cut after the last whole word that fits with a
/// `…` after it.
pub fn fit(s: &str, w: usize) -> String {
    if width(s) <= w {
        return s.to_string();
    }
    if w == 0 {
        return String::new();
    }
    let head = head(s, w - 1);
    // The next character after the head: if it is a space the head ends on a whole word.
    let next = s[head.len()..].chars().next();
    let cut = if next.is_some_and(char::is_whitespace) {
        head.trim_end()
    } else {
        match head.rfind(char::is_whitespace) {
            Some(i) if i > 0 => head[..i].trim_end(),
            _ => head,
        }
    };
    format!("{cut}…")
}

/// The first of `forms` (the longest first) that fits `w` columns, else the last.
pub fn first_fitting(forms: Vec<String>, w: usize) -> String {
    let mut last = String::new();
    for f in forms {
        if width(&f) <= w {
            return f;
        }
        last = f;
    }
    last
}

/// A decimal without the zeros after its point, nor the point after none is left (`518.00`
/// reads `518`, `518.50` reads `518.5`, `0.25` stays); a whole number as it is.
pub fn trim_decimal(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// A count with its noun, singular for one: `1 turn`, `0 turns`, `12 events`.
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// [`fit`], padded with spaces to exactly `w` columns.
pub fn cell(s: &str, w: usize) -> String {
    pad(&fit(s, w), w)
}

/// `s` with spaces after it to `w` columns (as `format!("{s:<w$}")` pads to `w` characters).
pub fn pad(s: &str, w: usize) -> String {
    format!("{s}{}", " ".repeat(w.saturating_sub(width(s))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_at_words_with_an_ellipsis() {
        assert_eq!(fit("spot crosses above hod", 30), "spot crosses above hod");
        assert_eq!(fit("spot crosses above hod", 14), "spot crosses…");
        assert_eq!(fit("spot crosses above hod", 13), "spot crosses…");
        assert_eq!(fit("spot crosses above hod", 12), "spot…");
        assert_eq!(fit("breakout-chase", 8), "breakou…");
        assert_eq!(cell("ab", 4), "ab  ");
        assert!(fit("a long line of words", 9).chars().count() <= 9);
    }

    #[test]
    fn widths_are_columns_not_characters() {
        // A CJK character and an emoji take two columns each; a combining mark none.
        assert_eq!(width("停止 🚨"), 7);
        assert_eq!(width("e\u{301}"), 1);
        assert_eq!(head("ab停止", 3), "ab");
        assert_eq!(head("ab停止", 4), "ab停");
        assert_eq!(tail("停止ab", 3), "ab");
        assert_eq!(tail("停止ab", 4), "止ab");
        // Cut by width: `停止 test` is 9 columns, not 7 characters.
        assert_eq!(fit("停止 test 🚨 go", 8), "停止…");
        assert_eq!(fit("停止 test 🚨 go", 10), "停止 test…");
        for w in 0..20 {
            assert!(
                width(&fit("kill — 停止 test 🚨 with a reason", w)) <= w,
                "{w}"
            );
        }
        assert_eq!(skip("ab停止", 2), (0, "停止"));
        assert_eq!(skip("ab停止", 3), (1, "止"));
        assert_eq!(skip("ab停止", 6), (0, ""));
        assert_eq!(skip("ab", 0), (0, "ab"));
        assert_eq!(cell("停", 4), "停  ");
        assert_eq!(width(&cell("停止停止", 5)), 5);
    }

    #[test]
    fn one_is_singular() {
        assert_eq!(count(1, "turn"), "1 turn");
        assert_eq!(count(0, "turn"), "0 turns");
        assert_eq!(count(12, "event"), "12 events");
    }
}

/// `s` wrapped at word boundaries into lines of at most `w` columns (a word longer than
/// `w` is split between graphemes).
pub fn wrap(s: &str, w: usize) -> Vec<String> {
    let w = w.max(1);
    let mut out = Vec::new();
    let mut cur = String::new();
    for word in s.split_whitespace() {
        let mut word = word;
        loop {
            let cl = width(&cur);
            let wl = width(word);
            if cl == 0 && wl <= w {
                cur = word.to_string();
                break;
            } else if cl > 0 && cl + 1 + wl <= w {
                cur.push(' ');
                cur.push_str(word);
                break;
            } else if cl > 0 {
                out.push(std::mem::take(&mut cur));
            } else {
                // At least one grapheme a line (a wide one in a one-column line).
                let mut h = head(word, w);
                if h.is_empty() {
                    h = word.graphemes(true).next().unwrap_or(word);
                }
                out.push(h.to_string());
                word = &word[h.len()..];
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod wrap_tests {
    #[test]
    fn wraps_at_words() {
        assert_eq!(
            super::wrap("code=PARSE rule=syntax: expected a price", 16),
            vec!["code=PARSE", "rule=syntax:", "expected a price"]
        );
        assert_eq!(super::wrap("abcdefgh", 3), vec!["abc", "def", "gh"]);
    }

    #[test]
    fn wraps_by_columns() {
        // Every line at most 10 columns, nothing lost (`long` was cut to `lo` with the rest
        // drawn past the edge when lines were counted in characters).
        let s = "kill — 停止 test 🚨 with a rather long reason";
        let lines = super::wrap(s, 10);
        assert!(lines.iter().all(|l| super::width(l) <= 10), "{lines:?}");
        assert_eq!(lines.join(" "), s);
        assert_eq!(super::wrap("停止停止停", 4), vec!["停止", "停止", "停"]);
        // A wide character alone in a one-column line still moves on.
        assert_eq!(super::wrap("停止", 1), vec!["停", "止"]);
    }
}
