//! The turn editor: a small multi-line text area with Kestrel highlighting and a live parse
//! on every edit. Coded errors are drawn under the line they point at.
//!
//! A hand-rolled widget rather than a text-area crate: the desk needs virtual lines (the
//! errors) between buffer lines and per-token styling, which is simpler to own than to bend
//! a general widget into.

use super::theme::{Role, Theme};
use crate::lang::rules::Scope;
use crate::lang::{self, Diagnostic, Mode};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

/// Statement heads and turn directives.
const HEADS: &[&str] = &[
    "PLAN",
    "VIEW",
    "WAKE",
    "POD",
    "BOOK",
    "GRADE",
    "IMPORT",
    "USING",
    "STAND-DOWN",
    "SHOW",
    "CANCEL",
];
const CLAUSES: &[&str] = &[
    "WHEN",
    "DO",
    "ALSO",
    "TP",
    "EXIT",
    "INVALIDATE",
    "RELOAD",
    "CANCEL-IF",
    "ARM",
    "DELIVER",
    "PRIORITY",
    "BUDGET",
    "AND",
    "OR",
    "NOT",
];
const ANCHORS: &[&str] = &[
    "fair",
    "mid",
    "bid",
    "ask",
    "last",
    "intrinsic",
    "basis",
    "min",
    "max",
    "peg",
    "esc",
    "cap",
    "floor",
];
const SERIES: &[&str] = &[
    "spot", "hod", "lod", "vwap", "open", "velocity", "pnl", "fills", "mark", "headline", "iv",
    "phase", "time",
];

/// The editor's state.
#[derive(Debug, Clone)]
pub struct Editor {
    lines: Vec<String>,
    row: usize,
    col: usize,
    /// First buffer line shown.
    pub scroll: usize,
    diags: Vec<Diagnostic>,
    /// The names beyond the text a turn may refer to (the standing book's), so the live
    /// check refuses what the submit would and nothing more.
    scope: Scope,
    /// The line Enter just indented, and by how much: a space typed there first replaces
    /// the automatic indent (the text brings its own, e.g. a paste the terminal did not
    /// bracket), so indentation never stacks.
    auto_indent: Option<(usize, usize)>,
}

impl Default for Editor {
    fn default() -> Self {
        Editor::new("")
    }
}

/// A CANCEL of a name the standing book does not hold, as the submit refuses it (the
/// router's `unknown-ref`, [`crate::turn::cancel_unknown`]): the live check said `parses ✓`
/// and the submit refused.
fn cancel_refusal(text: &str, doc: &lang::ast::Document, scope: &Scope) -> Option<Diagnostic> {
    let lang::ast::StatementKind::Cancel(c) = &doc.statements.first()?.kind else {
        return None;
    };
    let msg = crate::turn::cancel_unknown(&c.target.text, scope)?;
    let span = c.target.span.start as usize..c.target.span.end as usize;
    Some(Diagnostic::new(
        text,
        &lang::diag::LineIndex::new(text),
        lang::diag::Rule::UnknownRef,
        span,
        msg,
        "not in the standing book",
    ))
}

fn char_to_byte(s: &str, col: usize) -> usize {
    s.char_indices().nth(col).map(|(i, _)| i).unwrap_or(s.len())
}

/// A buffer line as the editor draws it: each control character as its Control Pictures
/// symbol, as the Journal shows it ([`lang::diag::visible`]: `␛` for ESC, `␇` for BEL), a
/// tab as `␉`; one character for one, each one column wide, so a column in characters is
/// the same in both. Nothing the text holds reaches the terminal as a control.
pub fn drawn(line: &str) -> String {
    lang::diag::visible(line).replace('\t', "\u{2409}")
}

/// The screen columns of the first `chars` characters of `line` as drawn (a wide character
/// takes two).
fn columns_before(line: &str, chars: usize) -> usize {
    let d = drawn(line);
    super::fit::width(&d[..char_to_byte(&d, chars)])
}

impl Editor {
    /// An editor holding `text`, the cursor at its end.
    pub fn new(text: &str) -> Editor {
        let mut e = Editor {
            lines: vec![String::new()],
            row: 0,
            col: 0,
            scroll: 0,
            diags: Vec::new(),
            scope: Scope::default(),
            auto_indent: None,
        };
        e.set_text(text);
        e
    }

    /// Replace the text; the cursor goes to the end.
    pub fn set_text(&mut self, text: &str) {
        self.lines = text
            .split('\n')
            .map(|l| l.trim_end_matches('\r').to_string())
            .collect();
        if self.lines.len() > 1 && self.lines.last().is_some_and(String::is_empty) {
            self.lines.pop();
        }
        if self.lines.is_empty() {
            self.lines.push(String::new());
        }
        self.row = self.lines.len() - 1;
        self.col = self.lines[self.row].chars().count();
        self.auto_indent = None;
        self.reparse();
    }

    /// Insert pasted text at the cursor exactly as it is (a bracketed paste: no automatic
    /// indentation, CR LF and CR read as line breaks); the cursor ends after it.
    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let b = char_to_byte(&self.lines[self.row], self.col);
        let rest = self.lines[self.row].split_off(b);
        let mut parts = text.split('\n');
        if let Some(first) = parts.next() {
            self.lines[self.row].push_str(first);
        }
        for p in parts {
            self.row += 1;
            self.lines.insert(self.row, p.to_string());
        }
        self.col = self.lines[self.row].chars().count();
        self.lines[self.row].push_str(&rest);
        self.auto_indent = None;
        self.reparse();
    }

    /// The buffer's lines.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// The text, lines joined with `\n` (one final newline when not empty; blank lines at
    /// the end are not part of the text).
    pub fn text(&self) -> String {
        let mut s = self.lines.join("\n");
        s.truncate(s.trim_end_matches('\n').len());
        if !s.trim().is_empty() {
            s.push('\n');
        }
        s
    }

    /// Is the buffer blank?
    pub fn is_blank(&self) -> bool {
        self.lines.iter().all(|l| l.trim().is_empty())
    }

    /// The cursor (0-based row, column in characters).
    pub fn cursor(&self) -> (usize, usize) {
        (self.row, self.col)
    }

    /// The cursor's screen column in its line as drawn (a wide character before it takes
    /// two columns, a control character's picture one).
    pub fn cursor_x(&self) -> usize {
        columns_before(&self.lines[self.row], self.col)
    }

    /// The live parse's coded errors (empty when the text checks).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diags
    }

    /// Check against these names from now on (the standing book's, as the session's
    /// snapshot gives them): a plan copied with `y` may `ARM` another plan in the book.
    pub fn set_scope(&mut self, scope: &Scope) {
        if self.scope != *scope {
            self.scope = scope.clone();
            self.reparse();
        }
    }

    fn reparse(&mut self) {
        self.diags = if self.is_blank() {
            Vec::new()
        } else {
            let text = self.text();
            match lang::check_in_scope(&text, Mode::Turn, &self.scope) {
                Ok(doc) => cancel_refusal(&text, &doc, &self.scope)
                    .into_iter()
                    .collect(),
                Err(e) => e,
            }
        };
    }

    /// Apply an editing key; returns whether the text or cursor changed.
    pub fn key(&mut self, k: &KeyEvent) -> bool {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        let len = |e: &Editor| e.lines[e.row].chars().count();
        let mut edited = false;
        let auto = self.auto_indent.take();
        match k.code {
            KeyCode::Char(' ')
                if !ctrl
                    && auto == Some((self.row, self.col))
                    && self.lines[self.row]
                        .chars()
                        .take(self.col)
                        .all(|c| c == ' ') =>
            {
                // The text brings its own indentation: drop the automatic one.
                let b = char_to_byte(&self.lines[self.row], self.col);
                self.lines[self.row].replace_range(..b, " ");
                self.col = 1;
                edited = true;
            }
            KeyCode::Char('a') if ctrl => self.col = 0,
            KeyCode::Char('e') if ctrl => self.col = len(self),
            KeyCode::Char('k') if ctrl => {
                let b = char_to_byte(&self.lines[self.row], self.col);
                self.lines[self.row].truncate(b);
                edited = true;
            }
            KeyCode::Char('u') if ctrl => {
                self.set_text("");
                return true;
            }
            KeyCode::Char(c) if !ctrl => {
                let b = char_to_byte(&self.lines[self.row], self.col);
                self.lines[self.row].insert(b, c);
                self.col += 1;
                edited = true;
            }
            KeyCode::Tab => {
                let b = char_to_byte(&self.lines[self.row], self.col);
                self.lines[self.row].insert_str(b, "  ");
                self.col += 2;
                edited = true;
            }
            KeyCode::Enter => {
                let b = char_to_byte(&self.lines[self.row], self.col);
                let rest = self.lines[self.row].split_off(b);
                let cur = &self.lines[self.row];
                let mut indent: String = cur.chars().take_while(|c| *c == ' ').collect();
                let first = cur.split_whitespace().next().unwrap_or("");
                if indent.is_empty() && matches!(first, "PLAN" | "VIEW" | "SHOW" | "POD" | "BOOK") {
                    indent = "  ".into();
                }
                self.row += 1;
                self.col = indent.chars().count();
                if self.col > 0 {
                    self.auto_indent = Some((self.row, self.col));
                }
                self.lines.insert(self.row, indent + rest.trim_start());
                edited = true;
            }
            KeyCode::Backspace => {
                if self.col > 0 {
                    let b = char_to_byte(&self.lines[self.row], self.col - 1);
                    self.lines[self.row].remove(b);
                    self.col -= 1;
                } else if self.row > 0 {
                    let line = self.lines.remove(self.row);
                    self.row -= 1;
                    self.col = len(self);
                    self.lines[self.row].push_str(&line);
                }
                edited = true;
            }
            KeyCode::Delete => {
                if self.col < len(self) {
                    let b = char_to_byte(&self.lines[self.row], self.col);
                    self.lines[self.row].remove(b);
                } else if self.row + 1 < self.lines.len() {
                    let line = self.lines.remove(self.row + 1);
                    self.lines[self.row].push_str(&line);
                }
                edited = true;
            }
            KeyCode::Left => {
                if self.col > 0 {
                    self.col -= 1;
                } else if self.row > 0 {
                    self.row -= 1;
                    self.col = len(self);
                }
            }
            KeyCode::Right => {
                if self.col < len(self) {
                    self.col += 1;
                } else if self.row + 1 < self.lines.len() {
                    self.row += 1;
                    self.col = 0;
                }
            }
            KeyCode::Up => {
                self.row = self.row.saturating_sub(1);
                self.col = self.col.min(len(self));
            }
            KeyCode::Down => {
                self.row = (self.row + 1).min(self.lines.len() - 1);
                self.col = self.col.min(len(self));
            }
            KeyCode::Home => self.col = 0,
            KeyCode::End => self.col = len(self),
            KeyCode::PageUp => self.row = self.row.saturating_sub(10),
            KeyCode::PageDown => self.row = (self.row + 10).min(self.lines.len() - 1),
            _ => return false,
        }
        self.col = self.col.min(len(self));
        if edited {
            self.reparse();
        }
        true
    }

    /// The lines to draw: each buffer line highlighted, each error under its line (a caret
    /// at its column and the code and rule, [`caret_line`], fitted to `width` columns).
    /// Returns the lines and, for each buffer line, the index of its display line (for the
    /// cursor).
    pub fn display(&self, theme: &Theme, width: usize) -> (Vec<Line<'static>>, Vec<usize>) {
        let mut out = Vec::new();
        let mut at = Vec::with_capacity(self.lines.len());
        let err = Style::default().fg(theme.syntax_error());
        for (i, l) in self.lines.iter().enumerate() {
            at.push(out.len());
            out.push(highlight(l, theme));
            for d in self.diags.iter().filter(|d| d.line == i + 1) {
                // Under the character the error points at, in columns.
                let at = columns_before(l, d.col.saturating_sub(1));
                out.push(caret_line(at, d, width, err));
            }
        }
        for d in self
            .diags
            .iter()
            .filter(|d| d.line > self.lines.len() || d.line == 0)
        {
            out.push(Line::from(Span::styled(d.one_line(), err)));
        }
        (out, at)
    }
}

/// The line under an error: a caret at its column and the code and rule, with `(whole
/// below)` pointing at the message area. Where the words do not fit to the right of the
/// caret in `width` columns they go to its left (`code=PARSE rule=syntax (whole below) ^`),
/// shortened to the code and rule, then the rule, before they are cut: at 100 and 160
/// columns a caret near the end of a line read `^ code=PARSE rule=syntax (whole »`.
fn caret_line(at: usize, d: &Diagnostic, width: usize, err: Style) -> Line<'static> {
    let caret = err.add_modifier(Modifier::BOLD);
    let forms = [
        format!("code={} rule={} (whole below)", d.code, d.rule),
        format!("code={} rule={}", d.code, d.rule),
        format!("rule={}", d.rule),
    ];
    let cols = super::fit::width;
    for t in &forms {
        if at + 2 + cols(t) <= width {
            return Line::from(vec![
                Span::styled(format!("{}^ ", " ".repeat(at)), caret),
                Span::styled(t.clone(), err),
            ]);
        }
        if cols(t) < at {
            return Line::from(vec![
                Span::raw(" ".repeat(at - cols(t) - 1)),
                Span::styled(format!("{t} "), err),
                Span::styled("^", caret),
            ]);
        }
    }
    // Narrower than any form on either side: the caret, and the words cut after it.
    Line::from(vec![
        Span::styled(format!("{}^ ", " ".repeat(at)), caret),
        Span::styled(forms[0].clone(), err),
    ])
}

/// The first coded error in words, whole: where, the code and rule, the message (its line
/// breaks as spaces), and how many more there are.
pub fn message(diags: &[Diagnostic]) -> Option<String> {
    let d = diags.first()?;
    let more = match diags.len() {
        1 => String::new(),
        n => format!(" (+{} more)", n - 1),
    };
    Some(format!(
        "line {} col {}: code={} rule={}: {}{more}",
        d.line,
        d.col,
        d.code,
        d.rule,
        d.message.split_whitespace().collect::<Vec<_>>().join(" ")
    ))
}

/// Highlight one line of Kestrel, as [`drawn`] (its control characters visible).
pub fn highlight(line: &str, theme: &Theme) -> Line<'static> {
    let line = drawn(line);
    let line = line.as_str();
    let st = |k: Role| Style::default().fg(theme.get(k));
    let (code, comment) = match line.find('#') {
        Some(i) => (&line[..i], Some(&line[i..])),
        None => (line, None),
    };
    let mut spans = Vec::new();
    let mut word = String::new();
    let mut prev_head = false;
    let flush = |w: &mut String, spans: &mut Vec<Span<'static>>, prev_head: &mut bool| {
        if w.is_empty() {
            return;
        }
        let bare = w.trim_end_matches(['(', ')', ',', ':']);
        let style = if HEADS.contains(&bare) {
            *prev_head = true;
            spans.push(Span::styled(
                w.clone(),
                st(Role::SyntaxKeyword).add_modifier(Modifier::BOLD),
            ));
            w.clear();
            return;
        } else if *prev_head && bare != "VIEW" {
            *prev_head = false;
            st(Role::SyntaxName).add_modifier(Modifier::UNDERLINED)
        } else if CLAUSES.contains(&bare) {
            st(Role::SyntaxClause)
        } else if w.starts_with(|c: char| c.is_ascii_digit())
            || (w.len() > 1
                && w.starts_with(['+', '-'])
                && w[1..].starts_with(|c: char| c.is_ascii_digit()))
        {
            st(Role::SyntaxNumber)
        } else if ANCHORS.iter().any(|a| w.starts_with(a)) {
            st(Role::SyntaxAnchor)
        } else if SERIES.iter().any(|a| w.starts_with(a)) {
            st(Role::SyntaxSeries)
        } else {
            st(Role::UiFg)
        };
        spans.push(Span::styled(w.clone(), style));
        w.clear();
    };
    for ch in code.chars() {
        if ch == ' ' {
            flush(&mut word, &mut spans, &mut prev_head);
            spans.push(Span::raw(" "));
        } else {
            word.push(ch);
        }
    }
    flush(&mut word, &mut spans, &mut prev_head);
    if let Some(c) = comment {
        spans.push(Span::styled(
            c.to_string(),
            st(Role::SyntaxComment).add_modifier(Modifier::ITALIC),
        ));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(s: &str) -> Editor {
        let mut e = Editor::default();
        for c in s.chars() {
            let code = if c == '\n' {
                KeyCode::Enter
            } else {
                KeyCode::Char(c)
            };
            e.key(&KeyEvent::new(code, KeyModifiers::NONE));
        }
        e
    }

    #[test]
    fn typing_edits_and_auto_indents() {
        let e = typed(
            "PLAN p budget 0.05R ttl +20m\nWHEN spot crosses above 5200\nDO buy 1 +1 C @ fair-2c",
        );
        // The line after PLAN is indented; the next keeps the indent.
        assert_eq!(
            e.text(),
            "PLAN p budget 0.05R ttl +20m\n  WHEN spot crosses above 5200\n  DO buy 1 +1 C @ fair-2c\n"
        );
        assert!(e.diagnostics().is_empty(), "{:?}", e.diagnostics());
    }

    #[test]
    fn a_name_in_the_standing_book_resolves_and_one_not_in_it_is_refused() {
        let text = "PLAN a budget 0.05R ttl +20m\n  WHEN spot crosses above 5200\n  DO buy 1 +1 C @ fair-2c\n  ARM b\n";
        let mut e = Editor::new(text);
        let refused: Vec<_> = e.diagnostics().iter().map(|d| d.rule.name()).collect();
        assert_eq!(refused, ["unknown-ref"], "{:?}", e.diagnostics());
        let mut book = Scope::default();
        book.plans.insert("b".to_string());
        e.set_scope(&book);
        assert!(e.diagnostics().is_empty(), "{:?}", e.diagnostics());
        // The book moves on without `b`: the same text is refused again, at once.
        e.set_scope(&Scope::default());
        assert_eq!(e.diagnostics().len(), 1, "{:?}", e.diagnostics());
    }

    /// `CANCEL lat` with `late` in the book read `parses ✓` and the submit refused it as
    /// `unknown-ref`: the live check refuses it too, in the router's words, under the name.
    #[test]
    fn a_cancel_of_a_name_not_in_the_book_is_refused_as_typed() {
        let mut e = Editor::new("CANCEL lat\n");
        let mut book = Scope::default();
        book.plans.insert("late".to_string());
        e.set_scope(&book);
        let d = e.diagnostics();
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].rule.name(), "unknown-ref");
        assert_eq!(
            d[0].message,
            "CANCEL names `lat`, which is not in the standing book; in scope: late"
        );
        assert_eq!((d[0].line, d[0].col), (1, 8));
        e.set_text("CANCEL late\n");
        assert!(e.diagnostics().is_empty(), "{:?}", e.diagnostics());
    }

    #[test]
    fn live_parse_reports_the_offending_line() {
        let e =
            typed("PLAN p budget 0.05R ttl +20m\nWHEN spot crosses above\nDO buy 1 +1 C @ fair-2c");
        assert!(!e.diagnostics().is_empty());
        assert_eq!(e.diagnostics()[0].line, 2);
        let (lines, at) = e.display(&super::super::theme::default_theme(), 200);
        let under: String = lines[at[1] + 1]
            .spans
            .iter()
            .map(|s| s.content.as_ref())
            .collect();
        assert!(under.contains("code=PARSE"), "{under}");
    }

    /// The caret stays under the error's column at every width, and the words beside it
    /// fit the pane where any form of them can: to the right, else to the left.
    #[test]
    fn the_caret_line_fits_the_pane_with_its_words_left_of_a_caret_near_the_end() {
        let theme = super::super::theme::default_theme();
        // The error's column (0-based) and the line under it at each width.
        let under = |doc: &str, width: usize| -> (usize, String) {
            let e = typed(doc);
            let at = e.diagnostics()[0].col - 1;
            let (lines, rows) = e.display(&theme, width);
            let u = lines[rows[1] + 1]
                .spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect();
            (at, u)
        };
        let far =
            "PLAN p budget 0.05R ttl +20m\nWHEN spot > vwap                                      ,";
        let near = "PLAN p budget 0.05R ttl +20m\nWHEN spot > vwap  ,";
        let (far_at, _) = under(far, 200);
        let (near_at, _) = under(near, 200);
        assert!(far_at > 40 && near_at < 30, "{far_at} {near_at}");
        for (doc, width, want) in [
            (far, 200, "^ code=PARSE rule=syntax (whole below)"),
            // At 100 or 160 columns this read `^ code=PARSE rule=syntax (whole »`.
            (far, far_at + 10, "code=PARSE rule=syntax (whole below) ^"),
            (near, near_at + 2 + 22, "^ code=PARSE rule=syntax"),
            (near, near_at + 2 + 11, "^ rule=syntax"),
        ] {
            let (at, u) = under(doc, width);
            assert_eq!(u.find('^'), Some(at), "width {width}: {u}");
            assert_eq!(u.trim(), want, "width {width}");
            assert!(u.chars().count() <= width, "width {width}: {u}");
        }
    }

    #[test]
    fn a_paste_lands_verbatim_and_typed_spaces_replace_the_auto_indent() {
        let doc = "PLAN p budget 0.05R ttl +20m\n  WHEN spot crosses above 5200\n  DO buy 1 +1 C @ fair-2c\n";
        let mut e = Editor::default();
        e.paste(doc);
        assert_eq!(e.text(), doc);
        assert!(e.diagnostics().is_empty(), "{:?}", e.diagnostics());
        // The same text typed key by key (a terminal that does not bracket pastes): the
        // auto-indent after PLAN gives way to the text's own two spaces.
        let typed = typed(doc.trim_end());
        assert_eq!(typed.text(), doc);
    }

    #[test]
    fn control_characters_draw_as_pictures_one_column_each() {
        let theme = super::super::theme::default_theme();
        let text: String = highlight("\tWHEN fair\u{7}\u{1b}[31m", &theme)
            .spans
            .iter()
            .map(|s| s.content.as_ref())
            .collect();
        assert_eq!(text, "\u{2409}WHEN fair\u{2407}\u{241b}[31m");
    }

    #[test]
    fn the_cursor_column_counts_what_is_drawn() {
        // `a b ␉ 停 ␛`: five characters, six columns (the wide one two).
        let mut e = Editor::default();
        e.paste("ab\t停\u{1b}");
        assert_eq!(e.cursor(), (0, 5));
        assert_eq!(e.cursor_x(), 6);
    }

    #[test]
    fn backspace_joins_lines() {
        let mut e = typed("ab\ncd");
        e.key(&KeyEvent::new(KeyCode::Home, KeyModifiers::NONE));
        e.key(&KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE));
        assert_eq!(e.text(), "abcd\n");
        assert_eq!(e.cursor(), (0, 2));
    }
}
