//! Coded, guided errors (LANGUAGE.md §7): one line for machines, a rendered snippet with a
//! caret and a label for people at a terminal, and JSON.

use serde::Serialize;
use std::fmt;

/// The stable name of the rule a document broke. Names never change once published.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    Syntax,
    BudgetNonpositive,
    PriceMark,
    ExitOnMark,
    HeldCross,
    NakedSell,
    ReservedWord,
    ClauseCount,
    QtyNonpositive,
    FracRange,
    LeanWeight,
    DuplicateName,
    UnknownRef,
    DirectiveInFile,
    // Rules the project adds beyond LANGUAGE.md §6 (docs/language.md lists them).
    PercentileRange,
    TpMultiple,
    DurationZero,
    NumberRange,
    Limit,
    ArmCycle,
}

impl Rule {
    pub const ALL: &'static [Rule] = &[
        Rule::Syntax,
        Rule::BudgetNonpositive,
        Rule::PriceMark,
        Rule::ExitOnMark,
        Rule::HeldCross,
        Rule::NakedSell,
        Rule::ReservedWord,
        Rule::ClauseCount,
        Rule::QtyNonpositive,
        Rule::FracRange,
        Rule::LeanWeight,
        Rule::DuplicateName,
        Rule::UnknownRef,
        Rule::DirectiveInFile,
        Rule::PercentileRange,
        Rule::TpMultiple,
        Rule::DurationZero,
        Rule::NumberRange,
        Rule::Limit,
        Rule::ArmCycle,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Rule::Syntax => "syntax",
            Rule::BudgetNonpositive => "budget-nonpositive",
            Rule::PriceMark => "price-mark",
            Rule::ExitOnMark => "exit-on-mark",
            Rule::HeldCross => "held-cross",
            Rule::NakedSell => "naked-sell",
            Rule::ReservedWord => "reserved-word",
            Rule::ClauseCount => "clause-count",
            Rule::QtyNonpositive => "qty-nonpositive",
            Rule::FracRange => "frac-range",
            Rule::LeanWeight => "lean-weight",
            Rule::DuplicateName => "duplicate-name",
            Rule::UnknownRef => "unknown-ref",
            Rule::DirectiveInFile => "directive-in-file",
            Rule::PercentileRange => "percentile-range",
            Rule::TpMultiple => "tp-multiple",
            Rule::DurationZero => "duration-zero",
            Rule::NumberRange => "number-range",
            Rule::Limit => "limit",
            Rule::ArmCycle => "arm-cycle",
        }
    }

    /// One line on what the rule refuses (for `kestrel card` and the docs).
    pub fn summary(self) -> &'static str {
        match self {
            Rule::Syntax => "text outside the grammar",
            Rule::BudgetNonpositive => "a budget (plan, book, pod, wake, view) must be positive",
            Rule::PriceMark => {
                "a mark (mid, last) may not be the anchor of a price unless min/max guards it with fair, intrinsic or basis"
            }
            Rule::ExitOnMark => {
                "EXIT and INVALIDATE condition on the underlying, never on mark/mid/bid/ask"
            }
            Rule::HeldCross => "a cross is an instant and cannot be held",
            Rule::NakedSell => "an opening sell needs a long leg in the same plan covering it",
            Rule::ReservedWord => "reserved for a future version",
            Rule::ClauseCount => "a PLAN has exactly one WHEN, at least one DO, at most one USING",
            Rule::QtyNonpositive => "a quantity is a positive integer",
            Rule::FracRange => "TP frac is in (0, 1]",
            Rule::LeanWeight => "lean weight is in [0, 1]",
            Rule::DuplicateName => "names are keys: one PLAN, VIEW, WAKE, POD or BOOK per name",
            Rule::UnknownRef => "DELIVER, ARM and plan(...) must name something in scope",
            Rule::DirectiveInFile => "STAND-DOWN, SHOW VIEW and CANCEL belong to turns, not files",
            Rule::PercentileRange => "a percentile pN has N in [0, 100]",
            Rule::TpMultiple => "TP takes profit: its multiple of cost is above 1x",
            Rule::DurationZero => "durations (held, within, esc, velocity, ttl) are positive",
            Rule::NumberRange => {
                "a number fits its field: no strike, quantity, price or duration beyond what a tape can hold, no VIEW budget under 100 tokens"
            }
            Rule::Limit => {
                "a document keeps within the desk's limits: size, statements, nesting depth (docs/limits.md)"
            }
            Rule::ArmCycle => {
                "an ARM target must be armed by a plan that can arm: not only by itself or its own ARM cycle"
            }
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Words reserved for future versions (rule `reserved-word`).
pub const RESERVED_WORDS: &[&str] = &[
    "atomic", "oco", "bracket", "trail", "market", "gtc", "ioc", "fok", "hedge", "roll", "margin",
];

/// Byte offset → 1-based line and column (columns count characters).
pub struct LineIndex<'a> {
    src: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub fn new(src: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(memchr_iter(src));
        LineIndex { src, starts }
    }

    /// 1-based (line, column) of a byte offset (clamped to the text).
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.src.len());
        let line = match self.starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.starts[line];
        let col = self
            .src
            .get(start..offset)
            .map(|s| s.chars().count())
            .unwrap_or(offset - start);
        (line + 1, col + 1)
    }

    /// The byte range of a 1-based line, without its line ending.
    pub fn line_range(&self, line: usize) -> std::ops::Range<usize> {
        let start = self.starts.get(line - 1).copied().unwrap_or(self.src.len());
        let end = self
            .starts
            .get(line)
            .map(|e| e - 1)
            .unwrap_or(self.src.len());
        let end = if self.src[start..end].ends_with('\r') {
            end - 1
        } else {
            end
        };
        start..end
    }
}

fn memchr_iter(src: &str) -> impl Iterator<Item = usize> + '_ {
    src.bytes()
        .enumerate()
        .filter(|(_, b)| *b == b'\n')
        .map(|(i, _)| i + 1)
}

/// Text from a document, a reply or a tape as it may reach a terminal: every control
/// character but a line break and a tab (ESC and the rest of C0, DEL) becomes its visible
/// Control Pictures symbol (`␛`, one column wide, so a caret under the line still points at
/// the right place), a C1 control or a bidirectional override becomes `\u{FFFD}`. An
/// escape sequence in a comment, a STAND-DOWN reason or a quoted token is shown, never
/// obeyed (it could retitle the window, clear the screen or write the clipboard).
pub fn visible(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(|c| shown_as(c).is_some()) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(s.chars().map(|c| shown_as(c).unwrap_or(c)).collect())
}

/// [`visible`] on one line: a line break becomes a space (an error or a warning line).
pub fn visible_line(s: &str) -> String {
    visible(s).replace('\n', " ")
}

/// A character no one-line text should hold: a control character (a line break and a tab
/// included) or one [`visible`] would replace (a bidirectional override, a line separator).
pub fn is_control_like(c: char) -> bool {
    c.is_control() || shown_as(c).is_some()
}

/// What [`visible`] shows `c` as, when not as itself.
fn shown_as(c: char) -> Option<char> {
    match c {
        '\n' | '\t' => None,
        '\u{0}'..='\u{1f}' => char::from_u32(0x2400 + c as u32),
        '\u{7f}' => Some('\u{2421}'),
        '\u{80}'..='\u{9f}'
        | '\u{2028}'
        | '\u{2029}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2066}'..='\u{2069}' => Some('\u{FFFD}'),
        _ => None,
    }
}

/// A refusal: a stable code and rule, a guiding message, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// `PARSE` for documents (other layers use their own codes).
    pub code: &'static str,
    pub rule: Rule,
    pub message: String,
    /// A short label for the caret in the rendered snippet.
    pub label: String,
    pub line: usize,
    pub col: usize,
    /// Byte range in the source.
    pub start: usize,
    pub end: usize,
}

impl Diagnostic {
    pub(crate) fn new(
        src: &str,
        index: &LineIndex<'_>,
        rule: Rule,
        range: std::ops::Range<usize>,
        message: impl Into<String>,
        label: impl Into<String>,
    ) -> Diagnostic {
        let _ = src;
        let (line, col) = index.line_col(range.start);
        Diagnostic {
            code: "PARSE",
            rule,
            message: message.into(),
            label: label.into(),
            line,
            col,
            start: range.start,
            end: range.end,
        }
    }

    /// The one-line, machine-parseable form.
    pub fn one_line(&self) -> String {
        format!(
            "error code={} rule={} message={} (line {}, col {})",
            self.code,
            self.rule,
            visible_line(&self.message),
            self.line,
            self.col
        )
    }

    /// The rich form for people at a terminal: the one-line error, then the source line with
    /// a caret and label. `color` adds ANSI styling.
    pub fn render(&self, src: &str, path: &str, color: bool) -> String {
        self.render_in(&LineIndex::new(src), path, color)
    }

    /// [`render`](Self::render) with the source's line index built once by the caller: a
    /// document refused in many places (an 8 MB one can have 100,000 refusals) is then
    /// rendered in time linear in its size, not quadratic.
    pub fn render_in(&self, index: &LineIndex<'_>, path: &str, color: bool) -> String {
        use annotate_snippets::{AnnotationKind, Level, Renderer, Snippet};
        let src = index.src;
        let lr = index.line_range(self.line);
        let raw = &src[lr.clone()];
        let mut s = self.start.clamp(lr.start, lr.end) - lr.start;
        let mut e = self.end.clamp(lr.start, lr.end) - lr.start;
        while s > 0 && !raw.is_char_boundary(s) {
            s -= 1;
        }
        while e < raw.len() && !raw.is_char_boundary(e) {
            e += 1;
        }
        if e < s {
            e = s;
        }
        // The line as a terminal may show it ([`visible`]); the span's byte offsets move
        // by what each shown character adds before them.
        let line_text = visible(raw);
        let shift = |at: usize| -> usize {
            raw[..at]
                .chars()
                .filter_map(|c| shown_as(c).map(|v| v.len_utf8() - c.len_utf8()))
                .sum::<usize>()
                + at
        };
        let (s, e) = (shift(s), shift(e));
        let line_text: &str = &line_text;
        let title = format!("[{}] {}", self.rule, visible(&self.message));
        let label = if self.label.is_empty() {
            self.rule.name().to_string()
        } else {
            self.label.clone()
        };
        let report = &[Level::ERROR.primary_title(&title).element(
            Snippet::source(line_text)
                .line_start(self.line)
                .path(path)
                .annotation(AnnotationKind::Primary.span(s..e).label(&label)),
        )];
        let renderer = if color {
            Renderer::styled()
        } else {
            Renderer::plain()
        };
        renderer.render(report).to_string()
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.one_line())
    }
}

impl std::error::Error for Diagnostic {}

#[cfg(test)]
mod tests {
    #[test]
    fn an_escape_in_the_line_is_shown_and_the_caret_stays_under_its_token() {
        let src = "PLAN x budget 1R ttl +5m\n  WHEN spot > 1\n  DO buy 1 +1 C @ \u{1b}[31mfair\n";
        let errs = crate::lang::check(src, crate::lang::Mode::File).expect_err("refused");
        let r = errs[0].render(src, "f", false);
        assert!(!r.chars().any(|c| c.is_control() && c != '\n'), "{r:?}");
        let line = r
            .lines()
            .find(|l| l.contains("DO buy"))
            .expect("source line");
        let caret = r.lines().find(|l| l.contains('^')).expect("caret line");
        let at = line.chars().position(|c| c == '␛').expect("shown escape");
        assert_eq!(caret.chars().position(|c| c == '^'), Some(at), "{r}");
        assert_eq!(
            super::visible("a\u{7f}b\u{85}c\u{202E}d\te\n"),
            "a␡b\u{FFFD}c\u{FFFD}d\te\n"
        );
    }
}
