//! Fitting text into columns: cut at a word boundary with `…`, never mid-word (a single
//! word longer than the column is the one exception: it is cut with `…`).

/// `s` in at most `w` characters: whole, or cut after the last whole word that fits with a
/// `…` after it.
pub fn fit(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n <= w {
        return s.to_string();
    }
    if w == 0 {
        return String::new();
    }
    let room = w - 1;
    let head: String = s.chars().take(room).collect();
    // The next character after the head: if it is a space the head ends on a whole word.
    let next = s.chars().nth(room);
    let cut = if next.is_some_and(char::is_whitespace) {
        head.trim_end().to_string()
    } else {
        match head.rfind(char::is_whitespace) {
            Some(i) if i > 0 => head[..i].trim_end().to_string(),
            _ => head,
        }
    };
    format!("{cut}…")
}

/// A count with its noun, singular for one: `1 turn`, `0 turns`, `12 events`.
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// [`fit`], padded with spaces to exactly `w` characters.
pub fn cell(s: &str, w: usize) -> String {
    let f = fit(s, w);
    let n = f.chars().count();
    format!("{f}{}", " ".repeat(w.saturating_sub(n)))
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
    fn one_is_singular() {
        assert_eq!(count(1, "turn"), "1 turn");
        assert_eq!(count(0, "turn"), "0 turns");
        assert_eq!(count(12, "event"), "12 events");
    }
}

/// `s` wrapped at word boundaries into lines of at most `w` characters (a word longer than
/// `w` is split).
pub fn wrap(s: &str, w: usize) -> Vec<String> {
    let w = w.max(1);
    let mut out = Vec::new();
    let mut cur = String::new();
    for word in s.split_whitespace() {
        let mut word = word.to_string();
        loop {
            let cl = cur.chars().count();
            let wl = word.chars().count();
            if cl == 0 && wl <= w {
                cur = word;
                break;
            } else if cl > 0 && cl + 1 + wl <= w {
                cur.push(' ');
                cur.push_str(&word);
                break;
            } else if cl > 0 {
                out.push(std::mem::take(&mut cur));
            } else {
                let head: String = word.chars().take(w).collect();
                word = word.chars().skip(w).collect();
                out.push(head);
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
}
