//! Snapshot tests of the desk (ratatui TestBackend + insta): the whole screen at two sizes
//! and each pane in focus, at a fixed tape instant after a deterministic inline replay.
//! Review changes with `cargo insta review` (or `INSTA_UPDATE=always cargo test --test
//! desk_snapshots` to rewrite them) and commit the `.snap` files.

use kestrel_desk::desk::app::{App, Pane};
use kestrel_desk::desk::{self, ui};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn app_at_1030() -> App {
    let mut app = desk::inline_app(desk::tape_source(None).expect("bundled tape")).expect("app");
    // Seek to 10:30 through the seek dialog, as a person would.
    app.key(KeyEvent::new(KeyCode::Char('g'), KeyModifiers::NONE));
    for c in "10:30".chars() {
        app.key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }
    app.key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    app.tick();
    app
}

fn screen(app: &App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| ui::draw(f, app)).expect("draw");
    let buf = t.backend().buffer().clone();
    (0..h)
        .map(|y| {
            let line: String = (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect();
            line.trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn whole_screen_at_two_sizes() {
    let app = app_at_1030();
    insta::assert_snapshot!("screen_100x30", screen(&app, 100, 30));
    insta::assert_snapshot!("screen_160x48", screen(&app, 160, 48));
}

#[test]
fn each_pane_in_focus() {
    let mut app = app_at_1030();
    for (name, pane) in [
        ("view", Pane::View),
        ("chart", Pane::Chart),
        ("plans", Pane::Plans),
        ("bus", Pane::Bus),
        ("journal", Pane::Journal),
        ("tokens", Pane::Tokens),
        ("editor", Pane::Editor),
    ] {
        app.set_focus(pane);
        insta::assert_snapshot!(format!("pane_{name}_160x48"), screen(&app, 160, 48));
    }
}

/// The house agent seated: at 10:30 in autopilot its turns are in the Journal and Tokens
/// panes; in co-pilot its OPEN answer waits in the footer and the Journal.
#[test]
fn the_house_agent_in_autopilot_and_copilot() {
    use kestrel_desk::market::Ts;
    use kestrel_desk::session::Command;
    use kestrel_desk::session::agent::Agent as DeskAgent;
    let src = desk::tape_source(None).expect("bundled tape");
    let mut app = desk::inline_app_with(src.clone(), Some(DeskAgent::house()), false).expect("app");
    app.send(Command::Seek(Ts::hms(10, 30, 0, 0)));
    app.tick();
    insta::assert_snapshot!("house_autopilot_160x48", screen(&app, 160, 48));
    let mut app = desk::inline_app_with(src, Some(DeskAgent::house()), true).expect("app");
    app.send(Command::Seek(Ts::hms(9, 31, 0, 0)));
    app.tick();
    insta::assert_snapshot!("house_copilot_100x30", screen(&app, 100, 30));
}

/// A co-pilot proposal is read before it is accepted: the Editor shows the proposed turn's
/// Kestrel whole (budget, ticket, price, escalation, wake), read-only, titled `proposal
/// from house — a accept · x reject`, and at 80x24 the footer still names the plan it arms.
/// The person saw only the footer's summary (cut to `arms…` at 80x24) and the comments.
#[test]
fn a_copilot_proposal_shows_its_kestrel_in_the_editor() {
    use kestrel_desk::market::Ts;
    use kestrel_desk::session::Command;
    use kestrel_desk::session::agent::Agent as DeskAgent;
    const CHASE: &str = "# chasing calls on any reclaim\nUSING signal SPX exec SPY 0dte\nPLAN agent-chase budget 0.05R ttl +45m\n  WHEN time >= 09:31\n  DO buy 3 ATM C @ 0.10 esc ask 15s\n  TP 2x frac 0.5 @ fair\n  EXIT spot < lod\nWAKE check-in WHEN time >= 09:45\n";
    let agent = DeskAgent::Script {
        name: "house".into(),
        replies: vec![CHASE.to_string()],
        wakes: Vec::new(),
    };
    let src = desk::tape_source(None).expect("bundled tape");
    let mut app = desk::inline_app_with(src, Some(agent), true).expect("app");
    app.send(Command::Seek(Ts::hms(9, 30, 30, 0)));
    app.tick();
    assert!(app.proposal().is_some());
    let small = screen(&app, 80, 24);
    assert!(small.contains("proposal — a accept · x reject"), "{small}");
    assert!(
        small.contains("DO buy 3 ATM C @ 0.10 esc ask 15s"),
        "{small}"
    );
    let footer = small.lines().last().unwrap_or_default();
    assert!(footer.contains("proposes: arms agent-chase"), "{footer}");
    insta::assert_snapshot!("copilot_proposal_80x24", small);
    insta::assert_snapshot!("copilot_proposal_160x48", screen(&app, 160, 48));
}

/// The Tokens pane's author column is as wide as the longest author shown: a command
/// author's script (`--author cmd:examples/command-author.sh`) read `comma…` at every size.
/// It is whole at 160x48 and 200x60 (the Kestrel and envelope columns give way first, what
/// was sent and written stays), and cut with `…` only when the pane is truly narrow.
#[test]
fn the_tokens_pane_shows_the_authors_name_whole_when_there_is_room() {
    use kestrel_desk::market::Ts;
    use kestrel_desk::session::Command;
    use kestrel_desk::session::agent::Agent as DeskAgent;
    let agent = DeskAgent::Script {
        name: "command-author.sh".into(),
        replies: vec!["# nothing in the View calls for a change\n".to_string()],
        wakes: Vec::new(),
    };
    let src = desk::tape_source(None).expect("bundled tape");
    let mut app = desk::inline_app_with(src, Some(agent), false).expect("app");
    app.send(Command::Seek(Ts::hms(9, 31, 0, 0)));
    app.tick();
    app.set_focus(Pane::Tokens);
    for (w, h) in [(160, 48), (200, 60)] {
        let s = screen(&app, w, h);
        assert!(s.contains("09:30 command-author.sh pass"), "{w}x{h}:\n{s}");
        // The figures a trader reads stay beside it.
        assert!(
            s.contains("time  author            outcome"),
            "{w}x{h}:\n{s}"
        );
        assert!(s.contains(" got"), "{w}x{h}:\n{s}");
    }
    // At 100x30 (the Tokens tab) the name and the figures still fit; at 80x24 the name is
    // cut, the figures stay.
    let s = screen(&app, 100, 30);
    assert!(s.contains("09:30 command-author.sh pass"), "100x30:\n{s}");
    let narrow = screen(&app, 80, 24);
    let row = narrow
        .lines()
        .find(|l| l.contains("09:30 comm"))
        .unwrap_or_else(|| panic!("no Tokens row at 80x24:\n{narrow}"));
    assert!(!row.contains("command-author.sh"), "{row}");
    assert!(row.contains('…') && row.contains(" pass"), "{row}");
}
