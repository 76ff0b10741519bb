//! Styled snapshots (TestBackend + insta) of the trading chart, the log and the editor, at
//! 100x30 and 200x60, in the dark and the light theme: each snapshot is the pane's cells
//! (symbols) and, under each row, a letter per cell naming its style (fg, bg, modifiers),
//! the letters explained at the end. A colour that changes shows as a changed letter or
//! legend line, not only a changed symbol.
//!
//! `INSTA_UPDATE=always cargo test --test desk_styled` rewrites them; review the diff.

use kestrel_desk::desk::app::{App, Pane};
use kestrel_desk::desk::{self, ui};
use kestrel_desk::market::Ts;
use kestrel_desk::session::Command;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};

/// Two plans that trade on the bundled tape: they buy shares at 09:34, buy calls
/// at 10:21 and sell both by 10:28 (tests/chart-plans.kestrel); played to 10:30.
const PLANS: &str = include_str!("chart-plans.kestrel");

fn session() -> App {
    let house = Some(kestrel_desk::session::agent::Agent::house());
    let mut app =
        desk::inline_app_with(desk::tape_source(None).expect("tape"), house, false).expect("app");
    app.human_turn(PLANS);
    app.send(Command::Seek(Ts::hms(10, 30, 0, 0)));
    app.tick();
    app
}

fn colour(c: Color) -> String {
    match c {
        Color::Rgb(r, g, b) => format!("#{r:02x}{g:02x}{b:02x}"),
        c => format!("{c:?}"),
    }
}

fn describe(s: Style) -> String {
    let mut out = format!(
        "fg {} bg {}",
        s.fg.map(colour).unwrap_or_else(|| "-".into()),
        s.bg.map(colour).unwrap_or_else(|| "-".into())
    );
    let m = s.add_modifier;
    for (flag, name) in [
        (Modifier::BOLD, "bold"),
        (Modifier::DIM, "dim"),
        (Modifier::ITALIC, "italic"),
        (Modifier::UNDERLINED, "underlined"),
    ] {
        if m.contains(flag) {
            out.push(' ');
            out.push_str(name);
        }
    }
    out
}

/// The cells of `r`: each row's symbols, then a row of style letters; the legend last.
fn styled(buf: &Buffer, r: Rect) -> String {
    const LETTERS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut styles: Vec<String> = Vec::new();
    let mut out = String::new();
    for y in r.top()..r.bottom() {
        let mut text = String::new();
        let mut marks = String::new();
        for x in r.left()..r.right() {
            let c = &buf[(x, y)];
            text.push_str(c.symbol());
            let d = describe(c.style());
            let i = styles.iter().position(|s| *s == d).unwrap_or_else(|| {
                styles.push(d);
                styles.len() - 1
            });
            marks.push(LETTERS.chars().nth(i).unwrap_or('?'));
        }
        out.push_str(text.trim_end());
        out.push('\n');
        out.push_str(&marks);
        out.push('\n');
    }
    out.push_str("--\n");
    for (i, s) in styles.iter().enumerate() {
        out.push_str(&format!("{} {s}\n", LETTERS.chars().nth(i).unwrap_or('?')));
    }
    out
}

fn pane(app: &App, pane: Pane, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| ui::draw(f, app)).expect("draw");
    let area = Rect::new(0, 0, w, h);
    let r = ui::layout(app, area)
        .into_iter()
        .find(|(p, _)| *p == pane)
        .map(|(_, r)| r)
        .expect("the pane is on screen");
    styled(t.backend().buffer(), r)
}

fn with_theme(app: &mut App, name: &str) {
    app.theme = app
        .themes
        .iter()
        .position(|t| t.name == name)
        .expect("bundled theme");
}

fn each_size_and_theme(app: &mut App, which: Pane, name: &str) {
    for theme in ["dark", "light"] {
        with_theme(app, theme);
        for (w, h) in [(100u16, 30u16), (200, 60)] {
            insta::assert_snapshot!(format!("{name}_{theme}_{w}x{h}"), pane(app, which, w, h));
        }
    }
}

#[test]
fn the_chart_has_candles_axes_levels_and_marks() {
    let mut app = session();
    let c = &app.snap.chart;
    assert!(
        c.marks
            .iter()
            .any(|m| m.kind == kestrel_desk::session::candles::MarkKind::Buy),
        "the session has a buy to mark: {:?}",
        c.marks
    );
    app.set_focus(Pane::Chart);
    // The cursor on an older candle: the readout shows its time and OHLC.
    for _ in 0..5 {
        app.key(KeyEvent::new(KeyCode::Left, KeyModifiers::NONE));
    }
    each_size_and_theme(&mut app, Pane::Chart, "chart_1m");
    // Five-minute candles, not focused (the legend instead of the readout).
    app.key(KeyEvent::new(KeyCode::Char('m'), KeyModifiers::NONE));
    app.key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::NONE));
    app.set_focus(Pane::Plans);
    each_size_and_theme(&mut app, Pane::Chart, "chart_5m_exec");
}

#[test]
fn the_log_reads_as_typed_rows() {
    let mut app = session();
    app.set_focus(Pane::Bus);
    each_size_and_theme(&mut app, Pane::Bus, "log");
}

#[test]
fn the_editor_with_a_pasted_document_and_a_long_line() {
    let mut app = session();
    app.set_focus(Pane::Editor);
    // The README's plan pasted whole, then a line longer than any pane typed under it
    // with an error at its end.
    app.paste(desk::EXAMPLE_PLAN);
    for c in "  EXIT spot < vwap held 60s @ fair esc bid 30s esc bid 30s esc bid 30s esc bid 30s esc bid 30s @ spot".chars() {
        app.key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }
    assert!(
        !app.editor.diagnostics().is_empty(),
        "the long line has an error"
    );
    each_size_and_theme(&mut app, Pane::Editor, "editor");
}
