//! The desk without a terminal: render tests on ratatui's TestBackend at two sizes, and
//! state tests driving the app with synthetic key events over an inline replay.

use kestrel_desk::bus::PlanState;
use kestrel_desk::desk::app::{App, Pane};
use kestrel_desk::desk::handle::SessionHandle;
use kestrel_desk::desk::{self, ui};
use kestrel_desk::market::Ts;
use kestrel_desk::session::agent::Agent as DeskAgent;
use kestrel_desk::session::owner::{NoticeLevel, TurnLine};
use kestrel_desk::session::{Command, Opening, Settings, saved};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::time::Duration;

fn app() -> App {
    desk::inline_app(desk::tape_source(None).unwrap()).unwrap()
}

fn press(app: &mut App, code: KeyCode) {
    app.key(KeyEvent::new(code, KeyModifiers::NONE));
    app.tick();
}

fn ctrl(app: &mut App, c: char) {
    app.key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL));
    app.tick();
}

/// Type text as keys (newlines as Enter; the editor auto-indents, so lines are given bare).
fn typ(app: &mut App, s: &str) {
    for c in s.chars() {
        let code = if c == '\n' {
            KeyCode::Enter
        } else {
            KeyCode::Char(c)
        };
        app.key(KeyEvent::new(code, KeyModifiers::NONE));
    }
    app.tick();
}

fn screen(app: &App, w: u16, h: u16) -> Vec<String> {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| ui::draw(f, app)).unwrap();
    let buf = t.backend().buffer().clone();
    (0..h)
        .map(|y| (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect())
        .collect()
}

fn has(lines: &[String], needle: &str) -> bool {
    lines.iter().any(|l| l.contains(needle))
}

fn ms(h: u32, m: u32, s: u32) -> Ts {
    Ts::hms(h, m, s, 0)
}

#[test]
fn status_line_shows_tape_clock_speed_and_hash() {
    let app = app();
    for (w, h) in [(100, 30), (160, 48)] {
        let s = screen(&app, w, h);
        assert!(s[0].contains("trend-2025-04-09-s1"), "{}", s[0]);
        assert!(s[0].contains("09:30:00.000"), "{}", s[0]);
        assert!(s[0].contains("60x") && s[0].contains("paused"), "{}", s[0]);
        assert!(
            s[0].contains(&format!("hash {}", &app.snap.hash[..12])),
            "{}",
            s[0]
        );
        // Narrow, the least important fields go first; the hash stays.
        assert_eq!(s[0].contains("mode sim"), w >= 160, "{}", s[0]);
        // The footer keeps `? help` and `q quit` at every size.
        let last = &s[usize::from(h) - 1];
        assert!(last.contains("? help") && last.contains("q quit"), "{last}");
    }
}

#[test]
fn every_pane_draws_its_content_at_100x30() {
    let mut app = app();
    app.send(Command::Seek(ms(10, 0, 0)));
    app.human_turn("STAND-DOWN # nothing yet\n");
    app.tick();
    let expect = [
        (Pane::Chart, "Chart SPX"),
        (Pane::View, "FRAME tape="),
        (Pane::Plans, "no plans armed"),
        (Pane::Bus, "stand-down by"),
        (Pane::Journal, "stand-down"),
        (Pane::Tokens, "Tokens (cl100k)"),
        (Pane::Editor, "Editor"),
    ];
    for (pane, needle) in expect {
        app.set_focus(pane);
        let s = screen(&app, 100, 30);
        assert!(
            has(&s, needle),
            "{pane:?} lacks {needle:?}:\n{}",
            s.join("\n")
        );
    }
    // The footer shows keys for the focused pane.
    app.set_focus(Pane::Chart);
    let s = screen(&app, 100, 30);
    assert!(s[29].contains("play-pause"), "{}", s[29]);
}

#[test]
fn wide_screen_shows_every_pane_at_once() {
    let mut app = app();
    app.send(Command::Seek(ms(10, 15, 0)));
    let s = screen(&app, 160, 48);
    for needle in [
        "Chart SPX",
        "View default",
        "FRAME tape=",
        "Plans",
        "Log —",
        "Journal",
        "Tokens (cl100k)",
        "Editor",
        "[levels SPX]",
    ] {
        assert!(has(&s, needle), "missing {needle:?}:\n{}", s.join("\n"));
    }
    // The View pane shows the Frame's token count against its budget.
    assert!(has(&s, "/ 900 tok"), "{}", s.join("\n"));
}

#[test]
fn editor_shows_the_coded_error_under_the_offending_line() {
    let mut app = app();
    press(&mut app, KeyCode::Char('e'));
    assert_eq!(app.focus, Pane::Editor);
    typ(
        &mut app,
        "PLAN probe budget 0.05R ttl +20m\nWHEN spot crosses above\nDO buy 1 +1 C @ fair-2c",
    );
    assert!(!app.editor.diagnostics().is_empty());
    let s = screen(&app, 100, 30);
    let row = s
        .iter()
        .position(|l| l.contains("WHEN spot crosses above"))
        .expect("the line is drawn");
    assert!(s[row + 1].contains("code=PARSE"), "{}", s[row + 1]);
    // Submitting it routes as invalid and keeps the text for fixing.
    ctrl(&mut app, 's');
    let last = app.turn_rows().last().unwrap();
    assert_eq!(last.routed.as_ref().unwrap().outcome.name(), "invalid");
    assert!(!app.editor.is_blank());
}

#[test]
fn submitting_a_valid_plan_routes_as_supersede_and_arms_it() {
    let mut app = app();
    app.send(Command::Seek(ms(9, 40, 0)));
    press(&mut app, KeyCode::Char('e'));
    typ(
        &mut app,
        "PLAN probe budget 0.05R ttl +20m\nUSING signal SPX exec SPY 0dte\nWHEN spot crosses above 5300\nDO buy 1 +1 C @ fair-2c\nEXIT spot < vwap @ fair",
    );
    assert!(
        app.editor.diagnostics().is_empty(),
        "{:?}",
        app.editor.diagnostics()
    );
    ctrl(&mut app, 's');
    let t = app.turn_rows().last().unwrap();
    assert_eq!(t.routed.as_ref().unwrap().outcome.name(), "supersede");
    assert_eq!(t.result, "armed probe", "{t:?}");
    assert!(app.editor.is_blank());
    let p = app.snap.plans.iter().find(|p| p.name == "probe").unwrap();
    assert_eq!(p.state, PlanState::Armed);
    assert!(p.text.starts_with("PLAN probe"));
    // The Bus carries the armed document; the Plans pane lists it.
    assert!(app.snap.bus.iter().any(|l| l.contains("document-armed")));
    app.set_focus(Pane::Plans);
    assert!(has(&screen(&app, 100, 30), "probe"));
    // Enter shows its canonical text; y copies it into the editor.
    press(&mut app, KeyCode::Enter);
    assert!(app.modal.is_some());
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(app.focus, Pane::Editor);
    assert!(app.editor.text().starts_with("PLAN probe"));
}

/// With nobody in the agent's seat, the person's plans read `-` in the `by` column (the
/// agent-seated desk says `you`), and a ttl written from the arming (`+20m`) gave no time:
/// the row shows when the plan expires.
#[test]
fn the_plans_row_names_the_person_and_the_ttls_end_without_an_agent() {
    let mut app = app();
    app.send(Command::Seek(ms(9, 40, 0)));
    app.human_turn("PLAN probe budget 0.05R ttl +20m\n  USING signal SPX exec SPY 0dte\n  WHEN spot crosses above 5300\n  DO buy 1 +1 C @ fair-2c\n");
    let p = app.snap.plans.iter().find(|p| p.name == "probe").unwrap();
    assert_eq!(p.owner, kestrel_desk::session::owner::Owner::Person);
    assert_eq!(p.expires, Some(ms(10, 0, 0)));
    app.set_focus(Pane::Plans);
    for (w, h) in [(100, 30), (160, 48), (200, 60)] {
        let s = screen(&app, w, h);
        let row = s
            .iter()
            .find(|l| l.contains("probe"))
            .unwrap_or_else(|| panic!("{}", s.join("\n")));
        assert!(row.contains(" you "), "{w}x{h}: {row}");
        assert!(row.contains("10:00"), "{w}x{h}: {row}");
        assert!(!row.contains("+20m"), "{w}x{h}: {row}");
    }
}

#[test]
fn stand_down_key_with_a_reason_routes_as_stand_down() {
    let mut app = app();
    app.human_turn("PLAN p budget 0.05R ttl +20m\n  USING signal SPX exec SPY 0dte\n  WHEN spot crosses above 5300\n  DO buy 1 +1 C @ fair-2c\n");
    press(&mut app, KeyCode::Char('s'));
    assert!(has(&screen(&app, 100, 30), "STAND-DOWN"));
    typ(&mut app, "chop, no edge");
    press(&mut app, KeyCode::Enter);
    let t = app.turn_rows().last().unwrap();
    let r = t.routed.as_ref().unwrap();
    assert_eq!(r.outcome.name(), "stand-down");
    assert_eq!(r.kestrel, "STAND-DOWN chop, no edge\n");
    assert_eq!(t.result, "stood down every plan; flat");
    assert!(
        app.snap
            .bus
            .iter()
            .any(|l| l.contains("\"type\":\"stand-down\""))
    );
    assert_eq!(app.outcome_counts()[4], ("stand-down", 1));
}

/// A stand-down said every riding position "rides its TP/EXIT", and a plan with neither
/// kept its shares, unmanaged, to the close. The result keeps its words (a saved session
/// holds the turn to them); a warning names the position with no TP or EXIT.
#[test]
fn a_stand_down_warns_of_a_position_with_no_tp_or_exit() {
    let mut app = app();
    let t = app
        .human_turn("PLAN hold budget 0.25R ttl +3h\n  USING signal SPY exec SPY\n  WHEN spot > 0\n  DO buy 20 shares @ ask\n")
        .expect("routed");
    assert!(t.result.starts_with("armed hold"), "{}", t.result);
    app.send(Command::Seek(ms(9, 31, 0)));
    app.tick();
    let t = app.human_turn("STAND-DOWN lunch\n").expect("routed");
    assert_eq!(
        t.result,
        "stood down every plan; 1 position rides its TP/EXIT: hold SPY shares +20"
    );
    let s = screen(&app, 160, 48);
    assert!(
        s[47].contains("hold SPY shares +20 has no TP or EXIT of its own: it is held to the close"),
        "{}",
        s[47]
    );
}

/// A refused turn's long message, cut to fit the footer, took one column too many: the
/// right end read `? help q qui`. The keys that always show stay whole at every width.
#[test]
fn a_long_message_leaves_help_and_quit_whole_at_the_right() {
    let mut app = app();
    let t = app
        .human_turn("PLAN dip budget 0.25R ttl 30m\n  USING signal SPX exec SPY 0dte\n  WHEN spot < vwap - 5\n  DO buy 1 ATM P @ fair\n")
        .expect("routed");
    assert!(t.result.starts_with("refused"), "{}", t.result);
    for (w, h) in [(100, 30), (160, 48), (200, 60), (80, 24)] {
        let s = screen(&app, w, h);
        let last = s[usize::from(h) - 1].trim_end();
        assert!(last.ends_with("? help q quit"), "{w}x{h}: {last}");
        assert!(last.contains("refused"), "{w}x{h}: {last}");
    }
}

#[test]
fn show_view_picks_panes_from_the_catalog() {
    let mut app = app();
    press(&mut app, KeyCode::Char('v'));
    // tape and levels are checked by default; add chain (third entry).
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Char(' '));
    press(&mut app, KeyCode::Enter);
    let r = app.turn_rows().last().unwrap().routed.clone().unwrap();
    assert_eq!(r.outcome.name(), "view-request", "{r:?}");
    assert_eq!(app.focus, Pane::View);
    assert_eq!(app.snap.view_name, "desk-pick");
    assert!(app.snap.frame.text.contains("[chain"));
    assert!(!app.snap.frame.text.contains("[kernel]"));
}

#[test]
fn replay_controls_move_the_clock() {
    let mut app = app();
    assert_eq!(app.snap.clock, ms(9, 30, 0));
    assert!(!app.snap.playing);
    // Play at 60x: one wall second is a tape minute.
    press(&mut app, KeyCode::Char(' '));
    assert!(app.snap.playing);
    app.send(Command::Tick(Duration::from_secs(1)));
    assert_eq!(app.snap.clock, ms(9, 31, 0));
    // Faster: 600x.
    press(&mut app, KeyCode::Char('+'));
    assert_eq!(app.snap.speed.label(), "600x");
    app.send(Command::Tick(Duration::from_secs(1)));
    assert_eq!(app.snap.clock, ms(9, 41, 0));
    press(&mut app, KeyCode::Char('-'));
    press(&mut app, KeyCode::Char('-'));
    assert_eq!(app.snap.speed.label(), "10x");
    // Pause: time stands still.
    press(&mut app, KeyCode::Char(' '));
    assert!(!app.snap.playing);
    app.send(Command::Tick(Duration::from_secs(5)));
    assert_eq!(app.snap.clock, ms(9, 41, 0));
    // Step a tick: the next event's time (the tape ticks every second).
    let seq = app.snap.seq;
    press(&mut app, KeyCode::Char('.'));
    assert_eq!(app.snap.clock, ms(9, 41, 1));
    assert!(app.snap.seq > seq);
    // Step a bar: the next minute boundary.
    press(&mut app, KeyCode::Char('>'));
    assert_eq!(app.snap.clock, ms(9, 42, 0));
    // Seek forward and back.
    press(&mut app, KeyCode::Char('g'));
    typ(&mut app, "11:15");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.snap.clock, ms(11, 15, 0));
    press(&mut app, KeyCode::Char('g'));
    typ(&mut app, "10:00:30");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.snap.clock, ms(10, 0, 30));
    // A time outside the session says so and does not move.
    press(&mut app, KeyCode::Char('g'));
    typ(&mut app, "08:00");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.snap.clock, ms(10, 0, 30));
    assert!(
        app.message
            .as_deref()
            .unwrap_or("")
            .contains("outside the session 09:30–16:00"),
        "{:?}",
        app.message
    );
    // A bad time is a message, not a move.
    press(&mut app, KeyCode::Char('g'));
    typ(&mut app, "noon");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.snap.clock, ms(10, 0, 30));
    assert!(app.message.as_deref().unwrap_or("").contains("not a time"));
    // Restart asks first; any other key keeps going.
    press(&mut app, KeyCode::Char('R'));
    assert!(has(&screen(&app, 100, 30), "Restart from the open?"));
    press(&mut app, KeyCode::Char('n'));
    assert_eq!(app.snap.clock, ms(10, 0, 30));
    // Restart: back to the open, the book empty.
    press(&mut app, KeyCode::Char('R'));
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(app.snap.clock, ms(9, 30, 0));
    assert!(app.snap.plans.is_empty());
    // Max speed runs to the end of the tape in bounded slices.
    app.send(Command::Speed(kestrel_desk::session::Speed::Max));
    app.send(Command::Play);
    for _ in 0..100_000 {
        if app.snap.ended {
            break;
        }
        app.send(Command::Tick(Duration::from_millis(10)));
    }
    assert!(app.snap.ended);
    assert!(!app.snap.playing);
    assert!(app.snap.clock >= ms(15, 59, 0));
}

/// A script agent: its first reply answers the OPEN wake.
fn script(replies: &[&str]) -> DeskAgent {
    DeskAgent::Script {
        name: "house".into(),
        replies: replies.iter().map(|r| r.to_string()).collect(),
        wakes: Vec::new(),
    }
}

const AGENT_PLAN: &str = "# thesis: a break of 5300 runs\nPLAN agent-p budget 0.05R ttl +20m\n  USING signal SPX exec SPY 0dte\n  WHEN spot crosses above 5300\n  DO buy 1 +1 C @ fair-2c\n";

/// The agent's turns (not the person's), in tape order.
fn agent_rows(app: &App) -> Vec<TurnLine> {
    app.turn_rows()
        .iter()
        .filter(|t| !t.from_desk())
        .cloned()
        .collect()
}

/// A live author's spec: `what` (a `cmd:` line, a URL), the model name and the timeout.
fn live_spec(model: &str, timeout: u64, what: &str) -> kestrel_desk::session::AuthorSpec {
    kestrel_desk::session::AuthorFlags {
        model: model.into(),
        temperature: 0.0,
        timeout,
        ..Default::default()
    }
    .spec(what)
}

/// A command author that takes a second, then answers with [`AGENT_PLAN`] (kept in `dir`).
fn slow_plan_author(dir: &std::path::Path) -> kestrel_desk::session::AuthorSpec {
    let reply = dir.join("reply.txt");
    std::fs::write(&reply, AGENT_PLAN).unwrap();
    live_spec(
        "default",
        20,
        &format!("cat >/dev/null; sleep 1; cat '{}'", reply.display()),
    )
}

/// A desk on the bundled tape with `spec` seated live in co-pilot (saving to `save`), once
/// the author's first proposal waits.
fn copilot_desk(spec: kestrel_desk::session::AuthorSpec, save: Option<std::path::PathBuf>) -> App {
    let settings = Settings {
        agent: Some(DeskAgent::Live(spec)),
        copilot: true,
        ..Settings::default()
    };
    let how = Opening {
        save,
        ..Opening::default()
    };
    let mut app = desk::inline_app_from(desk::tape_source(None).unwrap(), settings, how).unwrap();
    wait_for(&mut app, |a| a.proposal().is_some());
    app
}

/// A dialog's text on screen `s`, its wrapped lines joined (read across them).
fn dialog_text(s: &[String]) -> String {
    s.iter()
        .filter_map(|l| l.split('║').nth(1))
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A fresh directory for one test's files.
fn tmp(what: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("kestrel-desk-{what}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn bus_has(app: &App, ty: &str) -> bool {
    app.snap
        .bus
        .iter()
        .any(|l| l.contains(&format!("\"type\":\"{ty}\"")))
}

#[test]
fn copilot_holds_the_agents_turn_until_the_person_rejects_or_accepts_it() {
    let src = desk::tape_source(None).unwrap();
    // Reject: the OPEN wake's answer is proposed, not routed; rejecting routes nothing.
    let mut app = desk::inline_app_with(src.clone(), Some(script(&[AGENT_PLAN])), true).unwrap();
    app.send(Command::Seek(ms(9, 31, 0)));
    app.tick();
    let p = app.proposal().expect("the OPEN wake's answer is proposed");
    assert_eq!(p.wake, "open");
    assert_eq!(p.run.turn.outcome.name(), "supersede");
    assert!(bus_has(&app, "view-delivered"));
    assert!(
        !bus_has(&app, "turn"),
        "nothing routes before the person decides"
    );
    let s = screen(&app, 100, 30);
    assert!(s[29].contains("proposes"), "{}", s[29]);
    // The footer says what it would arm (not its first line of code) and keeps help and quit.
    assert!(s[29].contains("proposes: arms agent-p"), "{}", s[29]);
    assert!(
        s[29]
            .trim_end()
            .ends_with("a accept x reject ? help q quit"),
        "{}",
        s[29]
    );
    press(&mut app, KeyCode::Char('x'));
    assert!(app.proposal().is_none());
    assert!(bus_has(&app, "turn-rejected"));
    assert!(!app.snap.plans.iter().any(|p| p.name == "agent-p"));
    let rows = app.turn_rows();
    assert!(
        rows.last().unwrap().label().contains("rejected"),
        "{}",
        rows.last().unwrap().label()
    );
    // Accept: the same answer acts at the tape point of the accept.
    let mut app = desk::inline_app_with(src, Some(script(&[AGENT_PLAN])), true).unwrap();
    app.send(Command::Seek(ms(9, 40, 0)));
    app.tick();
    assert!(app.proposal().is_some());
    press(&mut app, KeyCode::Char('a'));
    assert!(app.proposal().is_none());
    assert!(app.snap.plans.iter().any(|p| p.name == "agent-p"));
    let turn = app
        .snap
        .bus
        .iter()
        .find(|l| l.contains("\"type\":\"turn\""))
        .unwrap();
    assert!(
        turn.contains("\"ts\":\"09:40:00.000\"") && turn.contains("\"wake\":\"open\""),
        "{turn}"
    );
    // The agent's turn is listed in the Journal and Tokens panes (from the Bus).
    let row = app
        .turn_rows()
        .iter()
        .find(|r| r.author() == "house")
        .unwrap();
    assert!(
        row.label().starts_with("supersede @ wake open"),
        "{}",
        row.label()
    );
    assert!(row.tokens().is_some_and(|t| t.reply > 0));
    let s = screen(&app, 160, 48);
    assert!(
        has(&s, "thesis: a break of 5300 runs"),
        "the journal line shows"
    );
}

#[test]
fn switching_to_autopilot_routes_the_waiting_proposal_and_later_wakes_answer_inline() {
    let src = desk::tape_source(None).unwrap();
    let replies = desk::parse_script(desk::HOUSE_AGENT_SCRIPT).unwrap();
    let house = DeskAgent::Script {
        name: "house".into(),
        replies,
        wakes: Vec::new(),
    };
    let mut app = desk::inline_app_with(src, Some(house), true).unwrap();
    app.send(Command::Seek(ms(9, 35, 0)));
    app.tick();
    assert!(app.proposal().is_some());
    press(&mut app, KeyCode::Char('c'));
    assert!(!app.copilot() && app.proposal().is_none());
    app.send(Command::Seek(ms(15, 30, 0)));
    app.tick();
    // The kernel pane counts the wakes the agent was asked at: the OPEN wake, two range
    // breaks (its budget), the last hour.
    assert!(
        app.snap.frame.text.contains(" wakes 4"),
        "{}",
        app.snap.frame.text
    );
    app.send(Command::Seek(ms(16, 0, 0)));
    app.tick();
    let agent_rows = app
        .turn_rows()
        .iter()
        .filter(|r| r.author() == "house")
        .count();
    assert!(
        agent_rows >= 2,
        "the OPEN turn and at least one later wake: {agent_rows}"
    );
    assert!(app.proposal().is_none(), "autopilot answers inline");
}

#[test]
fn copilot_answers_replay_from_a_saved_session_to_the_same_hash() {
    let dir = tmp("agent");
    let path = dir.join("s.jsonl");
    let src = desk::tape_source(None).unwrap();
    let settings = Settings {
        copilot: true,
        agent: Some(script(&[AGENT_PLAN])),
        ..Settings::default()
    };
    let how = Opening {
        save: Some(path.clone()),
        ..Opening::default()
    };
    let mut app = desk::inline_app_from(src, settings, how).unwrap();
    app.send(Command::Seek(ms(9, 45, 0)));
    assert!(app.proposal().is_some());
    press(&mut app, KeyCode::Char('a'));
    app.send(Command::Seek(ms(12, 0, 0)));
    let first = app.snap.clone();
    assert!(first.plans.iter().any(|p| p.name == "agent-p"));
    drop(app);
    let saved = saved::open(&path).unwrap();
    assert!(saved.settings.copilot);
    assert_eq!(saved.last.1, ms(12, 0, 0));
    // Reopened, it resumes where it was left, at the same hash.
    let s = kestrel_desk::session::owner::reopen(&path, None).unwrap();
    let mut h = SessionHandle::inline(s);
    let again = h.latest();
    assert_eq!(again.clock, ms(12, 0, 0));
    assert_eq!(again.hash, first.hash);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Wait (wall time) until the app has an answer from its live worker.
fn wait_for(app: &mut App, what: impl Fn(&App) -> bool) {
    let start = std::time::Instant::now();
    while !what(app) {
        assert!(start.elapsed() < Duration::from_secs(20), "timed out");
        std::thread::sleep(Duration::from_millis(20));
        app.tick();
    }
}

/// The Journal's "agent is writing…" stood under a co-pilot proposal, and after it was
/// rejected, for as long as the author stayed idle (hours of tape), with every attempt of a
/// re-asked reply stitched together. It shows the reply being written, while it is written.
#[test]
fn the_journal_shows_what_the_author_writes_only_while_it_writes_and_only_the_last_attempt() {
    let dir = tmp("writing");
    let reply = dir.join("reply.txt");
    std::fs::write(&reply, AGENT_PLAN).unwrap();
    let count = dir.join("count");
    // The first attempt is refused (not Kestrel); the re-ask is answered with the plan.
    let spec = live_spec(
        "default",
        20,
        &format!(
            "cat >/dev/null; n=$(cat '{c}' 2>/dev/null || echo 0); echo $((n+1)) > '{c}'; \
             if [ \"$n\" = 0 ]; then echo 'PLAN broken-first ((('; else sleep 0.3; cat '{r}'; fi",
            c = count.display(),
            r = reply.display()
        ),
    );
    let src = desk::tape_source(None).unwrap();
    let mut app = desk::inline_app_with(src, Some(DeskAgent::Live(spec)), true).unwrap();
    wait_for(&mut app, |a| a.proposal().is_some());
    let thinking = app.agent().map(|a| a.thinking.clone()).unwrap_or_default();
    assert!(
        thinking.contains("PLAN agent-p") && !thinking.contains("broken-first"),
        "the re-asked reply alone: {thinking:?}"
    );
    for (w, h) in [(160, 48), (200, 60)] {
        let s = screen(&app, w, h);
        assert!(has(&s, "proposes"), "{}", s.join("\n"));
        assert!(!has(&s, "agent is writing"), "{}", s.join("\n"));
    }
    press(&mut app, KeyCode::Char('x'));
    app.send(Command::Seek(ms(9, 45, 0)));
    let s = screen(&app, 160, 48);
    assert!(!has(&s, "agent is writing"), "{}", s.join("\n"));
    assert!(!has(&s, "broken-first"), "{}", s.join("\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_live_command_author_answers_off_the_tape_thread_and_acts_where_its_reply_arrives() {
    let dir = std::env::temp_dir().join(format!("kestrel-desk-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spec = slow_plan_author(&dir);
    let src = desk::tape_source(None).unwrap();
    let mut app = desk::inline_app_with(src, Some(DeskAgent::Live(spec)), false).unwrap();
    // The OPEN wake was asked; the tape moves on while the author writes.
    app.send(Command::Seek(ms(9, 50, 0)));
    assert_eq!(
        app.agent()
            .and_then(|a| a.waiting.as_ref())
            .map(|w| w.0.as_str()),
        Some("open")
    );
    assert!(
        agent_rows(&app).is_empty(),
        "nothing acts before the reply is read"
    );
    wait_for(&mut app, |a| !agent_rows(a).is_empty());
    let line = &agent_rows(&app)[0];
    assert_eq!(line.wake, "open");
    assert_eq!(
        line.ts,
        ms(9, 50, 0),
        "it acts at the tape point its reply arrived"
    );
    assert!(app.snap.plans.iter().any(|p| p.name == "agent-p"));
    let last = app
        .agent()
        .and_then(|a| a.last_answer)
        .expect("the worker measured the answer");
    let (toks, re_asks) = (last.tokens, last.re_asks);
    assert!(toks > 0 && re_asks == 0);
    let s = screen(&app, 160, 48);
    assert!(s[0].contains(&format!("{toks} tok 0 re-ask")), "{}", s[0]);
    // Detach while a call is out: it is dropped as rejected by `detached`.
    press(&mut app, KeyCode::Char('A'));
    assert!(!app.agent_attached());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A trader sought from 09:30 to 11:45 while a slow author wrote its OPEN answer: the answer
/// acted at 11:45 on the 09:30 View and the footer said only `supersede`. It still acts where
/// it arrives (a seek forward is fast play, and the author's latency is part of the run), and
/// its notice says which wake it answers and how old that View is, as a co-pilot proposal's
/// does; an answer within a minute of its wake says nothing more.
#[test]
fn an_autopilot_answer_acting_long_after_its_wake_says_how_old_its_view_is() {
    let dir = tmp("late");
    let spec = slow_plan_author(&dir);
    let src = desk::tape_source(None).unwrap();
    let mut app = desk::inline_app_with(src, Some(DeskAgent::Live(spec)), false).unwrap();
    app.send(Command::Seek(ms(11, 45, 0)));
    wait_for(&mut app, |a| !agent_rows(a).is_empty());
    assert_eq!(
        agent_rows(&app)[0].ts,
        ms(11, 45, 0),
        "it acts where it arrived"
    );
    let m = app.message.clone().unwrap_or_default();
    assert!(
        m.contains(
            "supersede (answer to wake open 09:30, acted 2h15m later: its View is that old)"
        ),
        "{m}"
    );
    let s = screen(&app, 200, 60);
    assert!(
        s.last().is_some_and(|f| f.contains("acted 2h15m later")),
        "{}",
        s.join("\n")
    );
    // On time (the tape paused while it writes): the notice is the outcome alone.
    let spec = slow_plan_author(&dir);
    let src = desk::tape_source(None).unwrap();
    let mut app = desk::inline_app_with(src, Some(DeskAgent::Live(spec)), false).unwrap();
    wait_for(&mut app, |a| !agent_rows(a).is_empty());
    let m = app.message.clone().unwrap_or_default();
    assert!(m.contains("supersede") && !m.contains("later"), "{m}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_saved_session_replays_to_the_same_hash() {
    let dir = tmp("test");
    let path = dir.join("s.jsonl");
    let src = desk::tape_source(None).unwrap();
    let settings = Settings {
        agent: None,
        ..Settings::default()
    };
    let how = Opening {
        save: Some(path.clone()),
        ..Opening::default()
    };
    let mut app = desk::inline_app_from(src, settings, how).unwrap();
    app.send(Command::Seek(ms(9, 40, 0)));
    app.human_turn(desk::EXAMPLE_PLAN);
    app.send(Command::Seek(ms(11, 0, 0)));
    app.human_turn("STAND-DOWN done\n");
    // Rewind: the acts before the target re-run; the one after it waits to replay ...
    app.send(Command::Seek(ms(10, 30, 0)));
    assert_eq!(app.turn_rows().len(), 1);
    app.send(Command::Seek(ms(11, 30, 0)));
    assert_eq!(app.turn_rows().len(), 2, "the recorded stand-down replays");
    // ... until the person acts on another branch: the recorded future is dropped.
    app.send(Command::Seek(ms(10, 30, 0)));
    app.human_turn("STAND-DOWN changed my mind\n");
    assert!(
        app.message.as_deref().unwrap_or("").contains("dropped")
            || app.snap.notices.iter().any(|n| n.text.contains("dropped")),
        "{:?}",
        app.snap.notices
    );
    app.send(Command::Seek(ms(12, 0, 0)));
    assert_eq!(app.turn_rows().len(), 2);
    let first = app.snap.clone();
    drop(app);
    let saved = saved::open(&path).unwrap();
    assert_eq!(saved.tape, "bundled:trend-2025-04-09-s1");
    assert_eq!(saved.acts.len(), 2, "{:?}", saved.acts);
    let bus = std::fs::read(saved::bus_path(&path, first.segment)).unwrap();
    assert_eq!(kestrel_desk::bus::hash_bytes(&bus), first.hash);
    let s = kestrel_desk::session::owner::reopen(&path, None).unwrap();
    let mut h = SessionHandle::inline(s);
    h.send(Command::Seek(ms(12, 0, 0)));
    assert_eq!(h.latest().hash, first.hash);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A desk with `agent` seated (`copilot`: its turns wait for the person), saving to `save`
/// when given, with the person's `turns` taken at their times, played to `to`.
fn desk_with(
    agent: Option<DeskAgent>,
    copilot: bool,
    save: Option<std::path::PathBuf>,
    turns: &[(Ts, &str)],
    to: Ts,
) -> App {
    let src = desk::tape_source(None).unwrap();
    let settings = Settings {
        agent,
        copilot,
        ..Settings::default()
    };
    let how = Opening {
        save,
        ..Opening::default()
    };
    let mut app = desk::inline_app_from(src, settings, how).unwrap();
    for (at, text) in turns {
        app.send(Command::Seek(*at));
        app.human_turn(text);
    }
    app.send(Command::Seek(to));
    app
}

/// [`desk_with`] and nobody in the agent's seat.
fn book_with(save: Option<std::path::PathBuf>, turns: &[(Ts, &str)], to: Ts) -> App {
    desk_with(None, false, save, turns, to)
}

/// A saved session reopened, as it resumes.
fn reopened(path: &std::path::Path) -> std::sync::Arc<kestrel_desk::session::SessionSnapshot> {
    let s = kestrel_desk::session::owner::reopen(path, None).unwrap();
    SessionHandle::inline(s).latest()
}

/// `u`, which asks first, and `y`.
fn undo(app: &mut App) {
    press(app, KeyCode::Char('u'));
    press(app, KeyCode::Char('y'));
}

const SECOND_PLAN: &str = "PLAN my-dip budget 0.2R ttl +30m\n  USING signal SPX exec SPY 0dte\n  WHEN spot < vwap held 30s\n  DO buy 1 ATM P @ min(fair, mid)\n  TP 1.5x @ fair\n  EXIT spot > vwap held 60s\n";

fn names(a: &App) -> Vec<String> {
    a.snap.plans.iter().map(|p| p.name.clone()).collect()
}

#[test]
fn undo_takes_back_the_persons_last_turn_and_a_reopened_session_leaves_it_out() {
    let dir = tmp("undo");
    let path = dir.join("s.jsonl");
    let (t1, t2, end) = (ms(9, 40, 0), ms(10, 5, 0), ms(11, 30, 0));
    let mut app = book_with(
        Some(path.clone()),
        &[(t1, desk::EXAMPLE_PLAN), (t2, SECOND_PLAN)],
        end,
    );
    assert_eq!(names(&app), ["breakout-chase", "my-dip"]);
    assert!(app.editor.text().is_empty());
    // The books the undos must give: the same session without the last turn, then with none.
    let one = book_with(None, &[(t1, desk::EXAMPLE_PLAN)], end)
        .snap
        .clone();
    let none = book_with(None, &[], end).snap.clone();
    assert_ne!(one.hash, app.snap.hash);

    // `u` asks first, naming the turn; any other key keeps it.
    press(&mut app, KeyCode::Char('u'));
    let s = screen(&app, 100, 30);
    assert!(
        has(&s, "Take back your 10:05 turn (armed my-dip)?"),
        "{}",
        s.join("\n")
    );
    press(&mut app, KeyCode::Char('n'));
    assert_eq!(names(&app), ["breakout-chase", "my-dip"], "kept");

    undo(&mut app);
    assert_eq!(app.snap.clock, end, "the session stands where it stood");
    assert_eq!(names(&app), ["breakout-chase"]);
    assert_eq!(
        app.snap.hash, one.hash,
        "the Bus of a run that never had the turn"
    );
    assert_eq!(app.turn_rows().len(), 1);
    let msg = app.message.clone().unwrap_or_default();
    assert!(
        msg.starts_with("undone: your 10:05 turn (armed my-dip)"),
        "{msg}"
    );
    assert!(msg.contains("its text is back in the editor"), "{msg}");
    assert_eq!(app.editor.text().trim_end(), SECOND_PLAN.trim_end());

    // Again: the turn before it. The editor holds a draft (the first one's text), so the
    // undone text is shown instead, and `y` would copy it in.
    undo(&mut app);
    assert!(app.snap.plans.is_empty(), "{:?}", names(&app));
    assert_eq!(app.snap.hash, none.hash);
    assert_eq!(app.editor.text().trim_end(), SECOND_PLAN.trim_end());
    let s = screen(&app, 160, 48);
    assert!(
        has(&s, "PLAN breakout-chase") && has(&s, "y copies into the editor"),
        "{}",
        s.join("\n")
    );
    press(&mut app, KeyCode::Esc);
    let msg = app.message.clone().unwrap_or_default();
    assert!(
        msg.starts_with("undone: your 09:40 turn (PLAN breakout-chase")
            && msg.contains("re-ran to 11:30"),
        "{msg}"
    );

    // Nothing of the person's is left to take back: no question, the session says so.
    press(&mut app, KeyCode::Char('u'));
    assert!(
        app.message
            .as_deref()
            .unwrap_or("")
            .contains("nothing to undo"),
        "{:?}",
        app.message
    );
    assert_eq!(app.snap.hash, none.hash);
    let last = app.snap.clone();
    drop(app);

    // The session file names both undos: reopened, neither turn is in the book.
    let saved = saved::open(&path).unwrap();
    assert!(saved.acts.is_empty(), "{:?}", saved.acts);
    let bus = std::fs::read(saved::bus_path(&path, last.segment)).unwrap();
    assert_eq!(kestrel_desk::bus::hash_bytes(&bus), none.hash);
    let again = reopened(&path);
    assert_eq!((again.clock, &again.hash), (end, &none.hash));
    let _ = std::fs::remove_dir_all(&dir);
}

/// An undo of one turn of two leaves the other in a reopened session; after a rewind, the
/// acts recorded later than the clock (the rewind's future) stay to replay.
#[test]
fn undo_of_one_turn_keeps_the_others_and_a_rewinds_future() {
    let dir = tmp("undo2");
    let path = dir.join("s.jsonl");
    let (t1, t2, t3, end) = (ms(9, 40, 0), ms(10, 5, 0), ms(10, 45, 0), ms(11, 30, 0));
    let mut app = book_with(
        Some(path.clone()),
        &[
            (t1, SECOND_PLAN),
            (t2, desk::EXAMPLE_PLAN),
            (t3, "STAND-DOWN enough\n"),
        ],
        end,
    );
    // Back to 10:30: the stand-down (10:45) is the recorded future; the last turn before the
    // clock is the 10:05 one.
    app.send(Command::Seek(ms(10, 30, 0)));
    undo(&mut app);
    assert!(
        app.message
            .as_deref()
            .unwrap_or("")
            .starts_with("undone: your 10:05 turn"),
        "{:?}",
        app.message
    );
    app.send(Command::Seek(end));
    let want = book_with(None, &[(t1, SECOND_PLAN), (t3, "STAND-DOWN enough\n")], end)
        .snap
        .clone();
    assert_eq!(app.snap.hash, want.hash, "the stand-down replayed at 10:45");
    drop(app);
    let saved = saved::open(&path).unwrap();
    assert_eq!(saved.acts.len(), 2, "{:?}", saved.acts);
    let s = kestrel_desk::session::owner::reopen(&path, None).unwrap();
    let mut h = SessionHandle::inline(s);
    h.send(Command::Seek(end));
    assert_eq!(h.latest().hash, want.hash);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A rewind or an undo starts the Log over from the new run's Bus: its history since the
/// open, not the last 200 events (which, with a pegged order working, are all re-prices).
#[test]
fn after_an_undo_or_a_rewind_the_log_holds_the_runs_history() {
    // A pegged order that never fills: a re-price on almost every SPY tick.
    let peg = "PLAN peg budget 0.2R ttl 15:00\n  USING signal SPX exec SPY 0dte\n  WHEN spot > 1000\n  DO buy 1 -3 P @ fair-50% peg\n";
    let mut app = book_with(
        None,
        &[(ms(9, 31, 0), peg), (ms(9, 35, 0), SECOND_PLAN)],
        ms(10, 30, 0),
    );
    let whole = |app: &App| {
        let rows = app.log.rows();
        assert!(app.snap.bus_events > 200, "{}", app.snap.bus_events);
        assert_eq!(rows.len() as u64, app.snap.bus_events.min(5000));
        assert!(rows[0].time.starts_with("09:30"), "{:?}", rows[0]);
        assert!(rows.iter().all(|r| r.ty != "gap"));
    };
    undo(&mut app);
    assert!(names(&app).iter().all(|n| n != "my-dip"));
    whole(&app);
    app.send(Command::Seek(ms(10, 0, 0)));
    whole(&app);
}

/// After the close nothing acts, but an undo may still take a turn back: the session re-runs
/// to the end without it, and stands at the end again.
#[test]
fn undo_after_the_close_reruns_to_the_end() {
    let end = ms(16, 0, 0);
    let mut app = book_with(None, &[(ms(9, 40, 0), SECOND_PLAN)], end);
    assert!(app.snap.ended);
    // A turn after the close is refused, and the notice says how to go on.
    app.human_turn("STAND-DOWN too late\n");
    let msg = app.message.clone().unwrap_or_default();
    assert!(
        msg.contains("nothing acts after the close")
            && msg.contains("from the chart, Home goes back to the open"),
        "{msg}"
    );
    undo(&mut app);
    let want = book_with(None, &[], end).snap.clone();
    assert!(app.snap.ended, "it stands at the end again");
    assert!(app.snap.plans.is_empty());
    assert_eq!(app.snap.hash, want.hash);
    assert_eq!(app.snap.clock, want.clock);
}

/// An accept made after the person's turn is their last act: the first undo takes it back
/// (the proposal waits again where it was accepted), the next the turn; in the session and
/// in its file. (Going back to a turn the agent answered after is
/// `undoing_a_turn_names_the_agents_answers_after_it_and_goes_back_to_it`.)
#[test]
fn undo_takes_back_an_accept_then_the_turn_before_it() {
    let dir = tmp("undo3");
    let path = dir.join("s.jsonl");
    let t1 = ms(9, 40, 0);
    let mut app = desk_with(
        Some(script(&[AGENT_PLAN])),
        true,
        Some(path.clone()),
        &[(t1, SECOND_PLAN)],
        ms(9, 45, 0),
    );
    assert!(
        app.proposal().is_some(),
        "the OPEN answer waits for the person"
    );
    press(&mut app, KeyCode::Char('a'));
    app.send(Command::Seek(ms(11, 0, 0)));
    assert!(names(&app).contains(&"agent-p".to_string()));
    // The accept is the person's last act: the first undo takes it back (back where it was
    // decided, the proposal waiting), the second the turn before it.
    undo(&mut app);
    assert_eq!(app.snap.clock, ms(9, 45, 0), "back where it was accepted");
    assert!(app.proposal().is_some(), "the proposal waits again");
    assert!(names(&app).contains(&"my-dip".to_string()));
    press(&mut app, KeyCode::Char('a'));
    undo(&mut app);
    assert!(app.proposal().is_some());
    undo(&mut app);
    // No answer of the agent's is recorded after the turn now (a script's proposals are
    // not acts): the session re-runs to where it stood without it.
    assert_eq!(app.snap.clock, ms(9, 45, 0));
    assert!(!app.snap.playing);
    let msg = app.message.clone().unwrap_or_default();
    assert!(
        msg.starts_with("undone: your 09:40 turn (armed my-dip)"),
        "{msg}"
    );
    assert!(
        app.snap
            .plans
            .iter()
            .all(|p| p.name != "my-dip" && p.name != "agent-p")
    );
    assert!(
        app.proposal().is_some(),
        "its answer waits again, not accepted"
    );
    assert_eq!(app.editor.text().trim_end(), SECOND_PLAN.trim_end());
    let want = desk_with(Some(script(&[AGENT_PLAN])), true, None, &[], ms(9, 45, 0))
        .snap
        .clone();
    assert_eq!(app.snap.hash, want.hash);
    drop(app);
    // The file names the undos (two of the accept, one of the turn): reopened, none acts.
    let saved = saved::open(&path).unwrap();
    assert!(saved.acts.is_empty(), "{:?}", saved.acts);
    let again = reopened(&path);
    assert_eq!((again.clock, &again.hash), (ms(9, 45, 0), &want.hash));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A STAND-DOWN puts an autopilot agent in co-pilot (an act of its own); its undo takes the
/// hold back with it, and the agent answers its wakes again as if nothing had been said.
#[test]
fn undo_of_a_stand_down_lifts_the_hold_it_put_on_the_agent() {
    let house = || Some(DeskAgent::house());
    let end = ms(11, 0, 0);
    let mut app = desk_with(
        house(),
        false,
        None,
        &[(ms(9, 40, 0), "STAND-DOWN flat\n")],
        end,
    );
    assert!(app.copilot(), "the stand-down held the agent");
    undo(&mut app);
    assert!(!app.copilot(), "the hold went with it");
    let want = desk_with(house(), false, None, &[], end).snap.clone();
    assert_eq!(app.snap.hash, want.hash);
    assert_eq!(
        names(&app),
        names(&desk_with(house(), false, None, &[], end))
    );
}

#[test]
fn themes_switch_and_keys_show_in_help() {
    let mut app = app();
    let first = app.theme().name.clone();
    press(&mut app, KeyCode::Char('t'));
    assert_ne!(app.theme().name, first);
    press(&mut app, KeyCode::Char('?'));
    let s = screen(&app, 100, 30);
    // The legend first: each pane's terms, 0.25R in dollars at the session's 1R.
    assert!(
        has(&s, "Terms") && has(&s, "bp vs anchor"),
        "{}",
        s.join("\n")
    );
    assert!(has(&s, "0.25R = $250"), "{}", s.join("\n"));
    // The keys below, a page down (a page is the dialog's height); a scroll key keeps the
    // help open.
    press(&mut app, KeyCode::PageDown);
    let s = screen(&app, 100, 30);
    assert!(has(&s, "STAND-DOWN"), "{}", s.join("\n"));
    press(&mut app, KeyCode::Char('q'));
    assert!(!app.quit, "the first key closes help");
    press(&mut app, KeyCode::Char('q'));
    assert!(app.quit);
}

#[test]
fn every_catalog_pane_spelling_is_a_valid_show_view() {
    use kestrel_desk::desk::app::pane_spelling;
    use kestrel_desk::lang::{self, Mode, ast::PANE_CATALOG};
    for p in PANE_CATALOG {
        let text = format!("SHOW VIEW pick budget 900\n  {}\n", pane_spelling(p));
        assert!(lang::check(&text, Mode::Turn).is_ok(), "{p}: {text}");
    }
}

/// Figures for docs/desk.md (run with `--ignored --nocapture`): one full draw at 200x60 of a
/// busy session, and replay at max speed.
#[test]
#[ignore]
fn figures_draw_and_replay_speed() {
    let mut app = app();
    app.human_turn(desk::EXAMPLE_PLAN);
    app.send(Command::Seek(ms(13, 0, 0)));
    app.human_turn("STAND-DOWN measured\n");
    let mut t = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let n = 200;
    let start = std::time::Instant::now();
    for _ in 0..n {
        t.draw(|f| ui::draw(f, &app)).unwrap();
    }
    let per = start.elapsed() / n;
    println!("draw 200x60: {per:?} per frame");
    let mut app = self::app();
    app.human_turn(desk::EXAMPLE_PLAN);
    app.send(Command::Speed(kestrel_desk::session::Speed::Max));
    app.send(Command::Play);
    let start = std::time::Instant::now();
    while !app.snap.ended {
        app.send(Command::Tick(Duration::from_millis(10)));
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "replay at max (inline, snapshot per 10 ms slice): {} tape events in {secs:.2}s = {:.0} events/s",
        app.snap.seq,
        app.snap.seq as f64 / secs
    );
}

#[test]
fn the_house_agent_answers_wakes_on_the_bus_and_human_turns_are_recorded() {
    let src = desk::tape_source(None).unwrap();
    let replies = desk::parse_script(desk::HOUSE_AGENT_SCRIPT).unwrap();
    let run = || {
        let house = DeskAgent::Script {
            name: "house".into(),
            replies: replies.clone(),
            wakes: Vec::new(),
        };
        let mut app = desk::inline_app_with(src.clone(), Some(house), false).unwrap();
        // The OPEN wake's events, before the house plan's repricing fills the Bus tail.
        app.send(Command::Seek(ms(9, 31, 0)));
        let early = app.snap.bus.join("\n");
        app.send(Command::Seek(ms(11, 0, 0)));
        (early, app.snap.clone())
    };
    let (bus, snap) = run();
    assert!(bus.contains("\"type\":\"view-delivered\""), "{bus}");
    assert!(bus.contains("\"wake\":\"open\""), "{bus}");
    assert!(bus.contains("\"type\":\"turn\""), "{bus}");
    assert_eq!(
        run().1.hash,
        snap.hash,
        "the agent on the Bus is deterministic"
    );
    // A person's turn from the editor is a `turn` event too (wake `desk`).
    let mut app = app();
    app.send(Command::Seek(ms(9, 40, 0)));
    app.human_turn("STAND-DOWN # nothing yet\n");
    app.tick();
    let bus = app.snap.bus.join("\n");
    assert!(
        bus.contains("\"type\":\"turn\"") && bus.contains("\"wake\":\"desk\""),
        "{bus}"
    );
}

#[test]
fn any_bus_event_can_be_selected_and_inspected() {
    let mut app = app();
    app.human_turn(desk::EXAMPLE_PLAN);
    app.send(Command::Seek(ms(10, 30, 0)));
    app.tick();
    app.set_focus(Pane::Bus);
    let shown = app.log.shown().len();
    assert!(shown > 2, "the log has rows");
    let newest = app.log.selected().unwrap().json.clone();
    press(&mut app, KeyCode::Up);
    press(&mut app, KeyCode::Up);
    assert_eq!(app.log.sel, Some(shown - 3));
    let picked = app.log.selected().unwrap().clone();
    assert_ne!(picked.json, newest);
    let s = screen(&app, 160, 48);
    assert!(
        has(&s, "scrolled (G follows)"),
        "the title says the log stopped following"
    );
    // New events do not move a scrolled log.
    app.send(Command::Seek(ms(11, 30, 0)));
    app.tick();
    assert_eq!(app.log.selected().map(|r| r.no), Some(picked.no));
    press(&mut app, KeyCode::Enter);
    let Some(kestrel_desk::desk::app::Modal::Event(text)) = &app.modal else {
        panic!("{:?}", app.modal)
    };
    assert_eq!(text, &kestrel_desk::desk::log::inspect(&picked.json));
    assert!(
        text.starts_with(&format!("type: {}\n", picked.ty)),
        "the type comes first: {text}"
    );
    assert!(
        !text.contains("\\n"),
        "line breaks are shown as lines: {text}"
    );
    let s = screen(&app, 160, 48);
    assert!(has(&s, "Event"));
    press(&mut app, KeyCode::Esc);
    assert!(app.modal.is_none());
    press(&mut app, KeyCode::Char('G'));
    assert_eq!(app.log.sel, None, "back to following the newest");
}

#[test]
fn a_dead_provider_answers_with_a_provider_error_and_frees_the_wake() {
    // Nothing listens on port 9: every attempt fails to connect.
    let spec = live_spec("m", 1, "https://127.0.0.1:9/v1");
    let src = desk::tape_source(None).unwrap();
    let mut app = desk::inline_app_with(src, Some(DeskAgent::Live(spec)), false).unwrap();
    // The call ends in a provider error, which is a turn like any other (never a pass): the
    // wake is answered, not held, and later wakes are asked again.
    wait_for(&mut app, |a| !agent_rows(a).is_empty());
    let line = &agent_rows(&app)[0];
    assert_eq!(
        line.routed.as_ref().unwrap().outcome.name(),
        "provider-error"
    );
    assert!(app.agent().unwrap().waiting.is_none());
    // The footer says what failed, not only `provider-error`.
    let s = screen(&app, 160, 48);
    let footer = &s[47];
    assert!(footer.contains("provider-error kind=connect"), "{footer}");
    assert!(
        !footer.contains("provider-error provider-error"),
        "the transport's reason: {footer}"
    );
}

mod keys_prop {
    use super::*;
    use proptest::prelude::*;

    fn key() -> impl Strategy<Value = KeyEvent> {
        let codes = prop_oneof![
            any::<char>().prop_map(KeyCode::Char),
            proptest::sample::select(vec![
                KeyCode::Enter,
                KeyCode::Esc,
                KeyCode::Tab,
                KeyCode::BackTab,
                KeyCode::Backspace,
                KeyCode::Delete,
                KeyCode::Up,
                KeyCode::Down,
                KeyCode::Left,
                KeyCode::Right,
                KeyCode::Home,
                KeyCode::End,
                KeyCode::PageUp,
                KeyCode::PageDown,
            ]),
            proptest::sample::select(" .>+-gesvcaxAtb?yqEnter".chars().collect::<Vec<_>>())
                .prop_map(KeyCode::Char),
        ];
        let mods = proptest::sample::select(vec![
            KeyModifiers::NONE,
            KeyModifiers::SHIFT,
            KeyModifiers::CONTROL,
            KeyModifiers::ALT,
        ]);
        (codes, mods).prop_map(|(c, m)| KeyEvent::new(c, m))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Any key sequence, with the house agent seated in co-pilot and the tape moving,
        /// leaves the desk drawable at both sizes: no key panics it.
        #[test]
        fn any_keys_never_panic_the_desk(keys in proptest::collection::vec(key(), 0..80)) {
            let src = desk::tape_source(None).unwrap();
            let mut app = desk::inline_app_with(src, Some(DeskAgent::house()), true).unwrap();
            for (i, k) in keys.into_iter().enumerate() {
                app.key(k);
                if i % 7 == 0 {
                    app.send(Command::Tick(Duration::from_millis(250)));
                }
                app.tick();
                if app.quit {
                    break;
                }
            }
            let _ = screen(&app, 100, 30);
            let _ = screen(&app, 200, 60);
        }
    }
}

// ---- One owner of a run (the Session): settings, --open, --plans, whose book ----

fn args(argv: &[&str]) -> desk::DeskArgs {
    let cli = kestrel_desk::cli::parse_from(argv).expect("the flags parse");
    match cli.command {
        Some(kestrel_desk::cli::Command::Desk(a)) => a,
        None => cli.desk,
        Some(c) => panic!("not the desk: {c:?}"),
    }
}

fn opened(a: &desk::DeskArgs, save: Option<std::path::PathBuf>) -> SessionHandle {
    SessionHandle::inline(desk::open_session(a, save).expect("the session opens"))
}

/// The house agent is a recording for the bundled tape: seated on any `--tape`, its Journal
/// read "a second break lower" on a tape whose range broke higher. It is seated on the
/// bundled tape's bytes only (by path too), and the footer says why no agent sits elsewhere;
/// `--agent FILE` still seats a script on any tape.
#[test]
fn the_house_agent_sits_only_on_the_tape_it_was_recorded_for() {
    let shock = "tapes/shock-2025-04-09-s7.jsonl";
    let trend = "tapes/trend-2025-04-09-s1.jsonl";
    for (argv, seated) in [
        (vec!["kestrel", "--no-save"], true),
        (vec!["kestrel", "--no-save", "--tape", trend], true),
        (vec!["kestrel", "--no-save", "--tape", shock], false),
        (
            vec![
                "kestrel",
                "--no-save",
                "--tape",
                shock,
                "--agent",
                "examples/house-agent.jsonl",
            ],
            true,
        ),
    ] {
        let a = args(&argv);
        let session = desk::open_session(&a, None).expect("the session opens");
        assert_eq!(session.settings().agent.is_some(), seated, "{argv:?}");
        let (themes, keys, _) = desk::load_config(None);
        let mut app = App::new(SessionHandle::inline(session), themes, keys);
        app.tick();
        desk::opening_message(&mut app, &a, None);
        let m = app.message.clone().unwrap_or_default();
        assert_eq!(
            m.contains("no agent: the house agent is recorded for trend-2025-04-09-s1 only"),
            !seated,
            "{argv:?}: {m}"
        );
    }
}

/// On a tape that does not carry SPX and SPY (an imported SPY-only day) the example plans
/// were armed anyway and each refused at the open (`UNKNOWN symbol SPX`): four refusals on
/// the footer and the Plans pane for a person who asked for none. They are now left out,
/// and the footer says why; a tape that carries them arms them.
#[test]
fn the_example_plans_stay_out_on_a_tape_without_their_symbols_and_the_footer_says_so() {
    let dir = tmp("examples-other-tape");
    let spy = dir.join("spy.jsonl");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args([
            "tape",
            "import",
            "examples/import/spy-trades-quotes.csv",
            "--ts-unit",
            "ns",
            "-o",
        ])
        .arg(&spy)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let spy = spy.display().to_string();
    let shock = "tapes/shock-2025-04-09-s7.jsonl";
    for (argv, armed, says) in [
        (vec!["kestrel", "--no-save", "--tape", shock], true, None),
        (
            vec!["kestrel", "--no-save", "--tape", spy.as_str()],
            false,
            Some(
                "no example plans, no house agent: both are for the bundled tape (--plans, --author)",
            ),
        ),
        (
            vec!["kestrel", "--no-save", "--no-agent", "--tape", spy.as_str()],
            false,
            Some("no example plans: they trade SPX and SPY, not on this tape (--plans arms yours)"),
        ),
    ] {
        let a = args(&argv);
        let session = desk::open_session(&a, None).expect("the session opens");
        let (themes, keys, _) = desk::load_config(None);
        let mut app = App::new(SessionHandle::inline(session), themes, keys);
        app.tick();
        desk::opening_message(&mut app, &a, None);
        assert_eq!(
            !names(&app).is_empty(),
            armed,
            "{argv:?}: {:?}",
            names(&app)
        );
        assert!(
            !bus_has(&app, "error"),
            "{argv:?}: nothing is refused at the open"
        );
        let m = app.message.clone().unwrap_or_default();
        match says {
            Some(w) => assert!(m.contains(w), "{argv:?}: {m}"),
            None => assert!(!m.contains("no example plans"), "{argv:?}: {m}"),
        }
        if let Some(w) = says {
            let s = screen(&app, 100, 30);
            assert!(has(&s, &w[..40]), "{}", s.join("\n"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bare_kestrel_and_kestrel_desk_open_the_same_session() {
    for (bare, sub) in [
        (vec!["kestrel"], vec!["kestrel", "desk"]),
        (
            vec!["kestrel", "--r-usd", "500", "--copilot"],
            vec!["kestrel", "desk", "--r-usd", "500", "--copilot"],
        ),
    ] {
        let (a, b) = (args(&bare), args(&sub));
        let (sa, sb) = (desk::settings(&a).unwrap(), desk::settings(&b).unwrap());
        assert_eq!(sa, sb, "{bare:?} and {sub:?} give one set of settings");
        let (mut ha, mut hb) = (opened(&a, None), opened(&b, None));
        let (la, lb) = (ha.latest(), hb.latest());
        // The session-start event (R, fill model, tape) is the same byte for byte.
        assert_eq!(la.bus[0], lb.bus[0]);
        ha.send(Command::Seek(ms(10, 0, 0)));
        hb.send(Command::Seek(ms(10, 0, 0)));
        assert_eq!(ha.latest().hash, hb.latest().hash);
    }
    // The defaults are the documented ones: 1R = $1000, so the example plan can trade.
    let d = desk::settings(&args(&["kestrel"])).unwrap();
    assert_eq!(d.r_usd, 1000);
    assert_eq!(d.fill, "strict-cross-v1");
    let mut h = opened(&args(&["kestrel"]), None);
    let first = h.latest();
    assert!(
        first.bus[0].contains("\"r_usd\":\"1000"),
        "{}",
        first.bus[0]
    );
    assert!(first.plans.iter().any(|p| p.name == "vwap-flush"));
    h.send(Command::Seek(ms(16, 0, 0)));
    let end = h.latest();
    assert!(
        !end.bus.iter().any(|l| l.contains("exceeds the $0.00 left")),
        "nothing is vetoed for a zero R"
    );
}

#[test]
fn a_session_saved_from_bare_kestrel_reopens_with_open_to_the_same_hash() {
    let dir = tmp("bare");
    let path = dir.join("bare.jsonl");
    let mut h = opened(&args(&["kestrel"]), Some(path.clone()));
    h.send(Command::Seek(ms(11, 0, 0)));
    h.send(Command::Submit {
        id: 1,
        author: "you".into(),
        kind: kestrel_desk::turn::AuthorKind::Human,
        text: "STAND-DOWN enough\n".into(),
    });
    h.send(Command::Speed(kestrel_desk::session::owner::Speed::X600));
    h.send(Command::Seek(ms(11, 30, 0)));
    let first = h.latest();
    drop(h);
    // The header records every setting the hash depends on.
    let head = std::fs::read_to_string(&path).unwrap();
    let head: serde_json::Value = serde_json::from_str(head.lines().next().unwrap()).unwrap();
    assert_eq!(head["settings"]["r_usd"], 1000);
    assert_eq!(head["settings"]["fill"], "strict-cross-v1");
    assert_eq!(head["settings"]["profile"], "authoring-v2");
    assert_eq!(head["settings"]["agent"]["name"], "house");
    assert_eq!(head["tape_blake3"].as_str().unwrap().len(), 64);
    // `kestrel --open FILE` resumes where it was left, at the same hash, and writes nothing
    // until the person acts.
    let reopen = args(&["kestrel", "--open", path.to_str().unwrap()]);
    desk::check(&reopen).expect("a consistent --open");
    let again_path = dir.join("again.jsonl");
    let mut h = opened(&reopen, Some(again_path.clone()));
    let again = h.latest();
    assert_eq!(again.clock, ms(11, 30, 0));
    assert_eq!(again.hash, first.hash);
    assert_eq!(
        again.speed,
        kestrel_desk::session::owner::Speed::X600,
        "it resumes at the speed the person last chose"
    );
    assert!(
        !again.written && !again_path.exists(),
        "nothing written yet"
    );
    // Home: back to the open; playing on replays the same acts to the same hash.
    h.send(Command::Seek(ms(9, 30, 0)));
    h.send(Command::Seek(ms(11, 30, 0)));
    assert_eq!(h.latest().hash, first.hash);
    assert!(!again_path.exists());
    h.send(Command::Submit {
        id: 1,
        author: "you".into(),
        kind: kestrel_desk::turn::AuthorKind::Human,
        text: "# a note\n".into(),
    });
    assert!(h.latest().written && again_path.exists(), "an act writes");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn open_refuses_contradicting_flags_and_names_the_session_of_a_bus_file() {
    let dir = tmp("contra");
    let path = dir.join("s.jsonl");
    let mut h = opened(&args(&["kestrel"]), Some(path.clone()));
    h.send(Command::Seek(ms(9, 45, 0)));
    drop(h);
    let p = path.to_str().unwrap();
    let e = desk::check(&args(&["kestrel", "--open", p, "--r-usd", "250"])).unwrap_err();
    assert!(e.contains("--r-usd 250") && e.contains("1R = $1000"), "{e}");
    let e = desk::check(&args(&["kestrel", "desk", "--open", p, "--no-agent"])).unwrap_err();
    assert!(e.contains("--no-agent"), "{e}");
    // The same R is no contradiction.
    desk::check(&args(&[
        "kestrel",
        "--open",
        p,
        "--r-usd",
        "1000",
        "--no-save",
    ]))
    .unwrap();
    // A Bus file given instead of the session names the session file.
    let bus = saved::bus_path(&path, 0);
    assert!(bus.exists());
    let e = desk::check(&args(&["kestrel", "--open", bus.to_str().unwrap()])).unwrap_err();
    assert!(e.contains("this is a Bus file") && e.contains(p), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn desk_plans_arm_documents_at_the_open_and_a_bad_one_is_refused_first() {
    let a = args(&[
        "kestrel",
        "desk",
        "--no-agent",
        "--plans",
        "examples/fade-ladder.kestrel",
        "examples/shares.kestrel",
    ]);
    let mut h = opened(&a, None);
    let s = h.latest();
    assert!(
        !s.plans.iter().any(|p| p.name == "vwap-flush"),
        "--plans replaces the example plan"
    );
    let armed = s
        .bus
        .iter()
        .filter(|l| l.contains("\"type\":\"document-armed\""))
        .count();
    assert_eq!(armed, 2, "{:?}", s.bus);
    for name in ["band-fade", "vwap-reclaim"] {
        let p = s.plans.iter().find(|p| p.name == name).unwrap();
        assert_eq!(
            p.state,
            PlanState::Armed,
            "{name}: the second file adds to the first"
        );
    }
    assert_eq!(s.turns.len(), 2);
    // They arm at the open, before the first event.
    assert!(s.turns.iter().all(|t| t.ts == ms(9, 30, 0)));
    assert!(s.turns.iter().all(|t| t.author.ends_with(".kestrel")));
    let dir = tmp("plans");
    let bad = dir.join("bad.kestrel");
    std::fs::write(
        &bad,
        "PLAN x budget 1R ttl +5m\n  WHEN spot > 1\n  DO sell 5 ATM C @ bid\n",
    )
    .unwrap();
    let e = desk::check(&args(&["kestrel", "--plans", bad.to_str().unwrap()])).unwrap_err();
    assert!(e.contains("bad.kestrel") && e.contains("code="), "{e}");
    // A file `kestrel run` arms but a turn does not hold (its POD and BOOK) is refused before
    // the terminal is taken: the desk opened with nothing of it armed and one `invalid` row.
    let e = desk::check(&args(&["kestrel", "--plans", "examples/run-desk.kestrel"])).unwrap_err();
    assert!(
        e.starts_with("examples/run-desk.kestrel: error code=TURN rule=menu message=POD in a turn"),
        "{e}"
    );
    assert!(
        e.contains("POD and BOOK are for `kestrel run --plans`"),
        "{e}"
    );
    assert!(desk::check(&args(&["kestrel", "--plans", "examples/desk.kestrel"])).is_ok());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The agent arms `agent-p` at the open and asks to be woken at 09:40, where `second` is
/// its answer.
fn owner_agent(second: &str) -> DeskAgent {
    let open = format!("{AGENT_PLAN}WAKE check WHEN time >= 09:40\n");
    script(&[&open, second])
}

const MINE: &str = "PLAN mine budget 0.05R ttl +60m\n  USING signal SPX exec SPY 0dte\n  WHEN spot crosses above 5400\n  DO buy 1 +1 C @ fair-2c\n";

#[test]
fn an_agents_supersede_replaces_its_own_plans_and_leaves_the_persons_armed() {
    let src = desk::tape_source(None).unwrap();
    let second = "PLAN agent-q budget 0.05R ttl +20m\n  USING signal SPX exec SPY 0dte\n  WHEN spot crosses above 5350\n  DO buy 1 +1 C @ fair-2c\n";
    let mut app = desk::inline_app_with(src, Some(owner_agent(second)), false).unwrap();
    app.send(Command::Seek(ms(9, 35, 0)));
    app.human_turn(MINE);
    app.send(Command::Seek(ms(9, 45, 0)));
    let plan = |n: &str| {
        app.snap
            .plans
            .iter()
            .find(|p| p.name == n)
            .cloned()
            .unwrap()
    };
    assert_eq!(
        plan("agent-p").state,
        PlanState::StoodDown,
        "the agent's own plan was superseded"
    );
    assert_eq!(plan("agent-q").state, PlanState::Armed);
    assert_eq!(
        plan("mine").state,
        PlanState::Armed,
        "the person's plan keeps running"
    );
    assert_eq!(
        plan("mine").owner,
        kestrel_desk::session::owner::Owner::Person
    );
    assert_eq!(
        plan("agent-q").owner,
        kestrel_desk::session::owner::Owner::Agent("house".into())
    );
    // The owners are on the Bus.
    assert!(
        app.snap
            .bus
            .iter()
            .any(|l| l.contains("document-armed") && l.contains("\"owner\":\"person\""))
    );
    // The person's plans join the book; one of the same name replaces the person's own.
    app.human_turn(&MINE.replace("mine", "mine-2"));
    let plan = |app: &App, n: &str| {
        app.snap
            .plans
            .iter()
            .find(|p| p.name == n)
            .cloned()
            .unwrap()
    };
    assert_eq!(plan(&app, "mine").state, PlanState::Armed);
    assert_eq!(plan(&app, "mine-2").state, PlanState::Armed);
    assert_eq!(plan(&app, "agent-q").state, PlanState::Armed);
    let replaced = |app: &App| {
        app.snap
            .bus
            .iter()
            .filter(|l| l.contains("\"plan\":\"mine\",\"reason\":\"superseded\""))
            .count()
    };
    assert_eq!(replaced(&app), 0);
    app.human_turn(&MINE.replace("60m", "90m"));
    assert_eq!(
        replaced(&app),
        1,
        "the older `mine` stood down for the new one"
    );
    assert_eq!(plan(&app, "mine").state, PlanState::Armed);
    assert_eq!(plan(&app, "agent-q").state, PlanState::Armed);
    // The person's STAND-DOWN is the kill switch: every plan.
    app.human_turn("STAND-DOWN flat into lunch\n");
    assert!(
        app.snap.plans.iter().all(|p| p.state != PlanState::Armed),
        "{:?}",
        app.snap.plans
    );
}

#[test]
fn a_persons_stand_down_holds_an_autopilot_agent_and_names_what_rides() {
    let src = desk::tape_source(None).unwrap();
    let second = "PLAN agent-q budget 0.05R ttl +20m\n  USING signal SPX exec SPY 0dte\n  WHEN spot crosses above 5350\n  DO buy 1 +1 C @ fair-2c\n";
    let mut app = desk::inline_app_with(src, Some(owner_agent(second)), false).unwrap();
    assert!(!app.copilot(), "seated in autopilot");
    // The person buys shares at the ask: a position that fills at once and rides.
    app.send(Command::Seek(ms(9, 31, 0)));
    app.human_turn(
        "PLAN grab budget 0.20R ttl +60m\n  USING signal SPX exec SPY\n  WHEN spot > 1\n  DO buy 10 shares @ ask\n",
    );
    app.send(Command::Seek(ms(9, 33, 0)));
    app.human_turn("STAND-DOWN flat into the 09:40 wake\n");
    let t = app.turn_rows().last().unwrap().clone();
    assert_eq!(t.routed.as_ref().unwrap().outcome.name(), "stand-down");
    assert_eq!(
        t.result, "stood down every plan; 1 position rides its TP/EXIT: grab SPY shares +10",
        "{t:?}"
    );
    // The agent is held: the kill switch holds past its next wake.
    assert!(app.copilot(), "the stand-down held the agent in co-pilot");
    assert!(
        app.snap.notices.iter().any(|n| n
            .text
            .contains("house now in co-pilot: a / x decide its turns")),
        "{:?}",
        app.snap.notices
    );
    app.send(Command::Seek(ms(9, 45, 0)));
    let armed = |app: &App, n: &str| {
        app.snap
            .plans
            .iter()
            .any(|p| p.name == n && p.state == PlanState::Armed)
    };
    assert!(
        !armed(&app, "agent-q"),
        "the agent's 09:40 supersede waits for the person"
    );
    let call = app.proposal().map(|p| p.call).expect("a proposal waits");
    // Accepting it routes it: the person stays in charge, nothing is lost.
    app.send(Command::Accept { call });
    assert!(armed(&app, "agent-q"));
    // Taken back before the stand-down and forward again, the hold replays as it happened.
    app.send(Command::Seek(ms(9, 32, 0)));
    assert!(
        !app.copilot(),
        "before the stand-down the agent was in autopilot"
    );
    app.send(Command::Seek(ms(9, 34, 0)));
    assert!(app.copilot(), "the recorded hold replays");
}

#[test]
fn an_agents_cancel_of_a_persons_plan_is_shown_as_a_notice() {
    let src = desk::tape_source(None).unwrap();
    let mut app = desk::inline_app_with(src, Some(owner_agent("CANCEL mine\n")), false).unwrap();
    app.send(Command::Seek(ms(9, 35, 0)));
    app.human_turn(MINE);
    app.send(Command::Seek(ms(9, 45, 0)));
    let mine = app.snap.plans.iter().find(|p| p.name == "mine").unwrap();
    assert_eq!(mine.state, PlanState::StoodDown, "the turn named it");
    assert!(
        app.snap
            .notices
            .iter()
            .any(|n| n.text == "house cancelled your plan mine"),
        "{:?}",
        app.snap.notices
    );
    assert_eq!(
        app.message.as_deref(),
        Some("house cancelled your plan mine")
    );
    let s = screen(&app, 160, 48);
    assert!(has(&s, "house cancelled your plan mine"));
}

#[test]
fn a_persons_turn_is_routed_against_the_standing_book_inside_the_session() {
    let mut app = app();
    app.send(Command::Seek(ms(9, 35, 0)));
    app.human_turn(MINE);
    // A CANCEL of a plan the book does not hold is refused by the router, with the book's
    // names in scope.
    let t = app.human_turn("CANCEL nosuch\n").expect("a turn");
    let r = t.routed.as_ref().unwrap();
    assert_eq!(r.outcome.name(), "invalid", "{r:?}");
    let e = r.outcome.errors()[0].one_line();
    assert!(e.contains("standing book") && e.contains("mine"), "{e}");
    // One that names a live plan stands it down.
    let t = app.human_turn("CANCEL mine\n").expect("a turn");
    assert_eq!(t.result, "mine stood down");
    let mine = app.snap.plans.iter().find(|p| p.name == "mine").unwrap();
    assert_eq!(mine.state, PlanState::StoodDown);
}

#[test]
fn plan_rows_carry_typed_state_budget_and_ttl() {
    let mut app = app();
    app.send(Command::Seek(ms(9, 35, 0)));
    app.human_turn(MINE);
    let p = app.snap.plans.iter().find(|p| p.name == "mine").unwrap();
    assert_eq!(p.budget_r, 0.05);
    assert_eq!(p.expires, Some(ms(10, 35, 0)), "ttl +60m from 09:35");
    assert!(matches!(
        p.ttl,
        Some(kestrel_desk::lang::ast::Ttl::After(_))
    ));
    // The Frame's plans pane reads the same budget and ttl.
    let (name, frame) = {
        app.human_turn("SHOW VIEW p budget 400\n  plans\n");
        (app.snap.view_name.clone(), app.snap.frame.text.clone())
    };
    assert_eq!(name, "p");
    // At its end on the clock, as the Plans pane reads it (`+60m` before 2026-12-05).
    assert!(frame.contains("mine armed 0.00/0.05R ttl 10:35"), "{frame}");
}

/// A plan armed later by an ARM target has no ttl end until it arms: `+30m` runs from then,
/// not from when its document arrived.
#[test]
fn a_chained_plan_has_no_ttl_end_until_it_arms() {
    let mut app = app();
    app.send(Command::Seek(ms(9, 35, 0)));
    app.human_turn(
        "PLAN lead budget 0.05R ttl 15:00\n  WHEN spot > 100000\n  DO buy 1 shares @ ask\n  ARM chained\n\nPLAN chained budget 0.05R ttl +30m\n  WHEN spot > 0\n  DO buy 1 shares @ ask\n",
    );
    let lead = app.snap.plans.iter().find(|p| p.name == "lead").unwrap();
    assert_eq!(lead.expires, Some(ms(15, 0, 0)));
    let chained = app.snap.plans.iter().find(|p| p.name == "chained").unwrap();
    assert_eq!(chained.state, PlanState::Dormant, "{chained:?}");
    assert_eq!(chained.expires, None, "no ttl end before it arms");
}

#[test]
fn nothing_acts_after_the_close_and_a_reopened_rewind_resumes_where_it_was_left() {
    let dir = tmp("end");
    let path = dir.join("s.jsonl");
    let mut h = opened(&args(&["kestrel", "--no-agent"]), Some(path.clone()));
    h.send(Command::Seek(ms(10, 30, 0)));
    h.send(Command::Submit {
        id: 7,
        author: "you".into(),
        kind: kestrel_desk::turn::AuthorKind::Human,
        text: MINE.into(),
    });
    h.send(Command::Seek(ms(16, 30, 0)));
    let end = h.latest();
    assert!(end.ended);
    h.send(Command::Submit {
        id: 8,
        author: "you".into(),
        kind: kestrel_desk::turn::AuthorKind::Human,
        text: "STAND-DOWN too late\n".into(),
    });
    let after = h.latest();
    assert_eq!(
        after.hash, end.hash,
        "an act after the close changes nothing"
    );
    assert_eq!(after.last_submit.as_ref().map(|r| r.id), Some(8));
    assert!(
        after
            .notices
            .last()
            .unwrap()
            .text
            .contains("the tape has ended")
    );
    // Rewind to 10:00 (before the plan) and leave there.
    h.send(Command::Seek(ms(10, 0, 0)));
    let left = h.latest();
    drop(h);
    let saved = saved::open(&path).unwrap();
    assert_eq!(saved.last.1, ms(10, 0, 0), "resumes where the person left");
    assert_eq!(
        saved.acts.len(),
        2,
        "the example and the plan: {:?}",
        saved.acts
    );
    let mut h = SessionHandle::inline(kestrel_desk::session::owner::reopen(&path, None).unwrap());
    let again = h.latest();
    assert_eq!((again.clock, &again.hash), (ms(10, 0, 0), &left.hash));
    // Playing on replays the plan recorded after the rewind point, to the same end.
    h.send(Command::Seek(ms(16, 30, 0)));
    assert_eq!(h.latest().hash, end.hash);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A person's plan named like a live plan of the agent's is not armed (one live plan per
/// name), and the footer and the Journal read `you: supersede → armed` with nothing after
/// it, the editor's ✓ still on: the reason was only in a cut Log row. The turn's result now
/// says it was refused and why, and with another plan armed beside it, names both.
#[test]
fn a_persons_plan_named_like_the_agents_live_plan_says_it_was_not_armed() {
    let src = desk::tape_source(None).unwrap();
    let mut app = desk::inline_app_with(src, Some(script(&[AGENT_PLAN])), false).unwrap();
    app.tick();
    assert!(app.snap.plans.iter().any(|p| p.name == "agent-p"));
    let clash = "PLAN agent-p budget 0.1R ttl +1h\n  USING signal SPX exec SPY 0dte\n  WHEN spot > vwap\n  DO buy 1 ATM C @ fair\n";
    let t = app.human_turn(clash).expect("routed at once");
    assert!(
        t.result
            .starts_with("refused: PLAN agent-p not armed: a live plan of another owner"),
        "{}",
        t.result
    );
    let two = format!(
        "{clash}PLAN mine budget 0.1R ttl +1h\n  WHEN spot > vwap\n  DO buy 1 ATM C @ fair\n"
    );
    let t = app.human_turn(&two).expect("routed at once");
    assert!(
        t.result.starts_with("armed mine; PLAN agent-p not armed: "),
        "{}",
        t.result
    );
    let s = screen(&app, 160, 48);
    assert!(s[47].contains("PLAN agent-p not armed"), "{}", s[47]);
}

/// The agent's plan named like one of the person's live plans is not armed either, and the
/// footer, the Journal and the Tokens pane read `supersede` as if it armed (the Bus's
/// `error` and a Log row `armed  by …` naming no plan were all that said otherwise). The
/// proposal now warns before `a`, and the accepted (or autopilot) turn says it armed
/// nothing and why.
#[test]
fn an_agents_plan_named_like_the_persons_live_plan_says_it_armed_nothing() {
    let second = MINE.replace("5400", "5350");
    let dir = tmp("agent-clash");
    let path = dir.join("s.jsonl");
    let mut app = desk_with(
        Some(owner_agent(&second)),
        true,
        Some(path.clone()),
        &[],
        ms(9, 31, 0),
    );
    let call = app.proposal().map(|p| p.call).expect("the open proposal");
    app.send(Command::Accept { call });
    app.send(Command::Seek(ms(9, 35, 0)));
    app.human_turn(MINE);
    app.send(Command::Seek(ms(9, 45, 0)));
    let call = app.proposal().map(|p| p.call).expect("the 09:40 proposal");
    assert_eq!(
        app.agent().unwrap().proposal_clash,
        vec!["mine".to_string()]
    );
    let s = screen(&app, 200, 48);
    let all = s.join("\n");
    assert!(
        all.contains("mine is a live plan of yours: accepted, the agent's mine will not arm"),
        "{all}"
    );
    app.send(Command::Accept { call });
    let s = screen(&app, 200, 48);
    let footer = &s[47];
    assert!(
        footer.contains("supersede → armed nothing: PLAN mine not armed: a live plan of yours"),
        "{footer}"
    );
    let t = agent_rows(&app).last().cloned().unwrap();
    assert_eq!(
        t.result,
        "armed nothing: PLAN mine not armed: a live plan of yours has that name"
    );
    assert!(
        t.label()
            .starts_with("supersede @ wake check → armed nothing: PLAN mine not armed"),
        "{}",
        t.label()
    );
    let all = s.join("\n");
    assert!(all.contains("refused"), "the Tokens row: {all}");
    assert!(
        !all.contains("armed  by"),
        "the Log's armed row names no plan: {all}"
    );
    // The person's plan is the one that stands, untouched.
    let mine: Vec<_> = app.snap.plans.iter().filter(|p| p.name == "mine").collect();
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0].owner, kestrel_desk::session::owner::Owner::Person);
    drop(app);
    // The session file records the result said, and reopens to the same.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("answered: supersede → armed nothing: PLAN mine"),
        "{text}"
    );
    let mut h = SessionHandle::inline(kestrel_desk::session::owner::reopen(&path, None).unwrap());
    let s = h.latest();
    let t = s.turns.iter().rfind(|t| !t.from_desk()).unwrap();
    assert!(t.result.starts_with("armed nothing: PLAN mine"), "{t:?}");
    let _ = std::fs::remove_dir_all(&dir);

    // In autopilot the turn acts at once and says the same.
    let app = desk_with(
        Some(owner_agent(&second)),
        false,
        None,
        &[(ms(9, 35, 0), MINE)],
        ms(9, 45, 0),
    );
    assert!(
        app.snap.notices.iter().any(|n| n.text.contains(
            "house @ check: supersede → armed nothing: PLAN mine not armed: a live plan of yours"
        )),
        "{:?}",
        app.snap.notices
    );
}

#[test]
fn one_live_plan_per_name_whoever_armed_it() {
    // The person's shares file and the house agent's OPEN answer both name `vwap-reclaim`:
    // the person's arms first (at the open, before the OPEN wake); the agent's is refused.
    let a = args(&["kestrel", "--plans", "examples/shares.kestrel"]);
    let mut h = opened(&a, None);
    let s = h.latest();
    let p = s.plans.iter().find(|p| p.name == "vwap-reclaim").unwrap();
    assert_eq!(p.owner, kestrel_desk::session::owner::Owner::Person);
    let refused = s
        .bus
        .iter()
        .filter(|l| {
            l.contains("\"type\":\"error\"")
                && l.contains("vwap-reclaim not armed: a live plan of another owner")
        })
        .count();
    assert_eq!(
        refused, 1,
        "the agent's same-named plan is refused, with the reason"
    );
    // The refused plan's budget and text do not stand in for the live one's (the agent's
    // says 0.2R, ttl 14:30; the person's 0.1R, ttl 15:00), on the desk or in the View.
    assert_eq!(p.budget_r, 0.1, "{p:?}");
    assert!(p.text.contains("budget 0.1R ttl 15:00"), "{}", p.text);
    assert!(
        s.frame
            .text
            .contains("vwap-reclaim armed 0.00/0.10R ttl 15:00"),
        "{}",
        s.frame.text
    );
}

#[test]
fn a_session_file_edited_to_arm_a_refused_plan_arms_nothing_on_open() {
    let dir = tmp("edited");
    let path = dir.join("s.jsonl");
    let settings = Settings {
        copilot: true,
        agent: Some(script(&[AGENT_PLAN])),
        ..Settings::default()
    };
    let how = Opening {
        save: Some(path.clone()),
        ..Opening::default()
    };
    let mut app = desk::inline_app_from(desk::tape_source(None).unwrap(), settings, how).unwrap();
    app.send(Command::Seek(ms(9, 45, 0)));
    press(&mut app, KeyCode::Char('a'));
    app.send(Command::Seek(ms(10, 0, 0)));
    assert!(app.snap.plans.iter().any(|p| p.name == "agent-p"));
    drop(app);
    // A naked short call, which `check` refuses, written into the recorded answer.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("DO buy 1 +1 C @ fair-2c"));
    std::fs::write(
        &path,
        text.replace("DO buy 1 +1 C @ fair-2c", "DO sell 50 ATM C @ bid"),
    )
    .unwrap();
    let mut h = SessionHandle::inline(kestrel_desk::session::owner::reopen(&path, None).unwrap());
    let s = h.latest();
    assert!(
        !s.plans.iter().any(|p| p.name == "agent-p"),
        "the refused plan is not armed"
    );
    let t = s
        .turns
        .iter()
        .find(|t| !t.from_desk())
        .expect("the agent's turn");
    let r = t.routed.as_ref().unwrap();
    assert_eq!(r.outcome.name(), "invalid");
    assert!(r.outcome.errors()[0].one_line().contains("REPLAY"), "{r:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_click_focuses_the_pane_under_it_and_the_wheel_scrolls_the_log() {
    use ratatui::crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    use ratatui::layout::Rect;
    let mut app = app();
    app.human_turn(desk::EXAMPLE_PLAN);
    app.send(Command::Seek(ms(10, 30, 0)));
    app.tick();
    let area = Rect::new(0, 0, 160, 48);
    let rect = |app: &kestrel_desk::desk::app::App, p: Pane| {
        kestrel_desk::desk::ui::layout(app, area)
            .into_iter()
            .find(|(q, _)| *q == p)
            .map(|(_, r)| r)
            .unwrap()
    };
    let at = |app: &kestrel_desk::desk::app::App, p: Pane| {
        let r = rect(app, p);
        (r.x + r.width / 2, r.y + r.height / 2)
    };
    let mouse = |kind, (column, row): (u16, u16)| MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    };
    let bus = at(&app, Pane::Bus);
    app.mouse(mouse(MouseEventKind::Down(MouseButton::Left), bus), area);
    assert_eq!(app.focus, Pane::Bus);
    let n = app.log.shown().len();
    app.mouse(mouse(MouseEventKind::ScrollUp, bus), area);
    assert_eq!(app.log.sel, Some(n - 4), "the wheel scrolls three rows up");
    app.mouse(mouse(MouseEventKind::ScrollDown, bus), area);
    assert_eq!(
        app.log.sel, None,
        "scrolled back down, the log follows again"
    );
    // Lists: home / g to the top, G / end to the bottom.
    press(&mut app, KeyCode::Home);
    assert_eq!(app.log.sel, Some(0));
    press(&mut app, KeyCode::End);
    assert_eq!(app.log.sel, None);
    // The Editor, empty and not focused, is folded to its hint under a taller Chart; a
    // click on it focuses it and opens it, and leaving it empty folds it again.
    let (folded, tall) = (rect(&app, Pane::Editor), rect(&app, Pane::Chart));
    assert_eq!(folded.height, 4, "folded: borders and the two-line hint");
    app.mouse(
        mouse(
            MouseEventKind::Down(MouseButton::Left),
            at(&app, Pane::Editor),
        ),
        area,
    );
    assert_eq!(app.focus, Pane::Editor);
    let (open, short) = (rect(&app, Pane::Editor), rect(&app, Pane::Chart));
    assert!(open.height > 4 * folded.height, "{open:?}");
    assert_eq!(short.height + open.height, tall.height + folded.height);
    let chart = at(&app, Pane::Chart);
    app.mouse(mouse(MouseEventKind::Down(MouseButton::Left), chart), area);
    assert_eq!(app.focus, Pane::Chart);
    assert_eq!(rect(&app, Pane::Editor), folded);
    // A paste outside the editor focuses it and lands verbatim.
    app.paste("STAND-DOWN   pasted\n");
    assert_eq!(app.focus, Pane::Editor);
    assert_eq!(app.editor.text(), "STAND-DOWN   pasted\n");
}

#[test]
fn a_persons_refused_turn_counts_the_tokens_they_wrote() {
    let mut app = app();
    let text = "PLAN p budget 0.1R ttl 15:00\n  WHEN time >= 10:00\n  DO buy 1 +1 C @ spot\n";
    let row = app.human_turn(text).expect("the turn is back at once");
    assert_eq!(row.routed().map(|r| r.outcome.name()), Some("invalid"));
    let written =
        kestrel_desk::tokens::count_reply(text, kestrel_desk::tokens::Encoding::Cl100k).unwrap();
    assert!(written > 10, "{written}");
    assert_eq!(
        row.tokens().map(|t| t.reply),
        Some(written),
        "the reply as written, not the (empty) canonical text of a refused turn"
    );
    // A turn that parses counts what was written too: comments and all.
    let row = app
        .human_turn("# a note to self\nSTAND-DOWN enough\n")
        .unwrap();
    let whole = kestrel_desk::tokens::count_reply(
        "# a note to self\nSTAND-DOWN enough\n",
        kestrel_desk::tokens::Encoding::Cl100k,
    )
    .unwrap();
    assert_eq!(row.tokens().map(|t| t.reply), Some(whole));
}

/// The README's desk (the bundled examples and the house agent), sought to 10:32 as the
/// reviewer did: `add-on`'s ttl reads `10:51:30`, and the Log holds vwap-flush's and
/// breakout's take-profit orders and fills.
fn readme_desk_at_1032() -> App {
    let session = desk::open_session(&args(&["kestrel", "--no-save"]), None).unwrap();
    let (themes, keys, _) = desk::load_config(None);
    let mut app = App::new(SessionHandle::inline(session), themes, keys);
    app.send(Command::Seek(ms(10, 32, 0)));
    app.tick();
    app
}

/// At 160x48 the Log cut the plan's name in order and fill rows (`order      vwa…: #5 sell 48
/// @ 518.02…`, `breako…: #6 sell 1 @ 1.00…`) while a fire row named it whole: the kind
/// column was ten wide for `suppressed`, and the order's number came before its quantity.
/// Narrow, the kinds take short words and the number follows the instrument, so the name,
/// the quantity and the price are whole at 100x30 (the Bus tab), 160x48 and 200x60.
#[test]
fn the_log_names_an_orders_and_a_fills_plan_whole_beside_its_price() {
    let mut app = readme_desk_at_1032();
    app.set_focus(Pane::Bus);
    for (w, h) in [(100, 30), (160, 48), (200, 60)] {
        let s = screen(&app, w, h);
        let text = s.join("\n");
        for row in [
            "10:24:48 order vwap-flush: sell 48 @ 518.02",
            "10:24:49 fill  vwap-flush: sell 48 @ 518.02",
            "10:29:57 order breakout: sell 1 @ 1.00",
            "10:29:58 fill  breakout: sell 1 @ 1.00",
        ] {
            assert!(has(&s, row), "{w}x{h}: {row}\n{text}");
        }
        assert!(
            !text.contains("vwa…") && !text.contains("breako…"),
            "{w}x{h}:\n{text}"
        );
    }
}

/// The Log never said which option an order or a fill traded: `breakout: sell 1 @ 1.00 SPY…`
/// at 160x48, `SPY 2025-04-09…` at 200x60 (the long name, date first, cut before the strike).
/// An option reads as a trader writes it (`SPY 518C`), and the row keeps its strike and right
/// at every size; shares read as they did.
#[test]
fn the_log_says_which_option_an_order_or_a_fill_traded() {
    let mut app = readme_desk_at_1032();
    app.set_focus(Pane::Bus);
    for (w, h) in [(100, 30), (160, 48), (200, 60)] {
        let s = screen(&app, w, h);
        let text = s.join("\n");
        for row in [
            "10:29:57 order breakout: sell 1 @ 1.00 ",
            "10:29:58 fill  breakout: sell 1 @ 1.00 ",
        ] {
            let line = s.iter().find(|l| l.contains(row));
            assert!(
                line.is_some_and(|l| l.contains(" 518C")),
                "{w}x{h}: {row}\n{text}"
            );
        }
        // The Log's rows (the View's `pos` line keeps the long name).
        assert!(
            !s.iter()
                .any(|l| l.contains(" order ") && l.contains("2025-04-09 5")),
            "{w}x{h}:\n{text}"
        );
    }
    let s = screen(&app, 200, 60);
    let text = s.join("\n");
    assert!(
        has(&s, "10:29:57 order breakout: sell 1 @ 1.00 SPY 518C (#6)"),
        "{text}"
    );
    assert!(
        has(&s, "10:24:48 order vwap-flush: sell 48 @ 518.02 SPY shares"),
        "{text}"
    );
}

/// The Log's title was cut in its keys at 160x48 and 100x30 (`Log — 103 events · following
/// [/ filter ·…`): the shorter title fits whole.
#[test]
fn the_log_title_fits_at_160x48_and_100x30() {
    let mut app = readme_desk_at_1032();
    app.set_focus(Pane::Bus);
    for (w, h) in [(100, 30), (160, 48)] {
        let s = screen(&app, w, h);
        let text = s.join("\n");
        assert!(
            has(&s, "Log — 103 events · following [/ filter] "),
            "{w}x{h}:\n{text}"
        );
        assert!(!text.contains("filter ·…"), "{w}x{h}:\n{text}");
    }
}

/// The `?` legend listed the Log's long kind words (`suppressed`, `stand-down`) where the
/// Log, narrower than 64 columns at every size, writes `muted`, `stop`, `tape` and `news`:
/// the legend says the short word with its meaning.
#[test]
fn the_legend_names_the_kind_words_the_log_shows() {
    let mut app = readme_desk_at_1032();
    app.set_focus(Pane::Bus);
    let log = screen(&app, 160, 48).join("\n");
    assert!(log.contains(" muted ×"), "{log}");
    let kind = desk::legend::lines(1000)
        .into_iter()
        .find(|(term, _)| term.starts_with("log") && term.ends_with("kind"))
        .map(|(_, meaning)| meaning)
        .unwrap_or_default();
    for word in [
        "tape = session",
        "muted = suppressed wake",
        "stop = stand-down",
        "news = headline",
    ] {
        assert!(kind.contains(word), "{word}: {kind}");
    }
    press(&mut app, KeyCode::Char('?'));
    let s = screen(&app, 200, 60);
    assert!(has(&s, "tape = session"), "{}", s.join("\n"));
    assert!(has(&s, "muted = suppressed wake"), "{}", s.join("\n"));
}

/// In the `/` prompt C-u typed a `u` (`/usuppressed`, nothing matched); in the Editor it
/// clears the line, and now in the prompt too.
#[test]
fn c_u_clears_the_log_filters_prompt() {
    let mut app = readme_desk_at_1032();
    app.set_focus(Pane::Bus);
    press(&mut app, KeyCode::Char('/'));
    typ(&mut app, "sup");
    ctrl(&mut app, 'u');
    typ(&mut app, "muted\n");
    assert_eq!(app.log.filter, "muted");
    assert!(!app.log.shown().is_empty());
}

/// With `add-on`'s ttl at `10:51:30` the narrow Plans pane's P&L column lost its budget at
/// 160x48 (`pnl/budget` fell to `pnl`, `+0.11R`): the budget as the plan writes it (`1R`,
/// `0.5R`) leaves room for every name whole. At 100x30 the budget still gives way, and the
/// header says `pnl` over `+0.00R`.
#[test]
fn the_narrow_plans_pane_keeps_pnl_over_budget_beside_a_ttl_with_seconds() {
    let mut app = readme_desk_at_1032();
    // At 200x60 the P&L carries its unit; at 160x48 the header says it (`pnl/bdgt R`).
    for (w, h, head, add_on, puts) in [
        (
            200,
            60,
            "state  pnl/budget  ttl",
            "add-on        you   armed  +0.00R/0.5R 10:51:30",
            "headline-puts you   halted +0.00R/1R   15:30",
        ),
        (
            160,
            48,
            "state  pnl/bdgt R ttl",
            "add-on        you   armed  +0.00/0.5R 10:51:30",
            "headline-puts you   halted +0.00/1R   15:30",
        ),
    ] {
        let s = screen(&app, w, h);
        let text = s.join("\n");
        assert!(has(&s, head), "{w}x{h}:\n{text}");
        assert!(has(&s, add_on), "{w}x{h}:\n{text}");
        assert!(has(&s, puts), "{w}x{h}:\n{text}");
    }
    app.set_focus(Pane::Plans);
    let s = screen(&app, 100, 30);
    let text = s.join("\n");
    assert!(has(&s, "state  pnl    ttl"), "100x30:\n{text}");
    assert!(
        has(&s, "add-on        you   armed  +0.00R 10:51:30"),
        "100x30:\n{text}"
    );
}

/// One cancelled (or stood-down) plan took every plan's budget at 160x48 and 100x30: its
/// 10-column `stood-down` pushed `pnl/budget` out (`breakout  you  armed  +0.00R 15:00`).
/// The state's short word (`stood`) gives way first, and at 100x30 the P&L's own `R` goes to
/// the header (`pnl/bdgt R`) before the budget does. The P&L carries its unit where it fits
/// (`+0.00R/1R`; it read `+0.00/1R` beside the fallback's `+0.00R`).
#[test]
fn a_cancelled_plan_leaves_every_plans_budget_on_the_narrow_plans_pane() {
    let session = desk::open_session(&args(&["kestrel", "--no-save"]), None).unwrap();
    let (themes, keys, _) = desk::load_config(None);
    let mut app = App::new(SessionHandle::inline(session), themes, keys);
    app.send(Command::Seek(ms(10, 0, 0)));
    app.tick();
    app.human_turn("CANCEL vwap-flush\n");
    app.tick();
    app.set_focus(Pane::Plans);
    let s = screen(&app, 160, 48);
    let text = s.join("\n");
    assert!(has(&s, "state   pnl/budget  ttl"), "160x48:\n{text}");
    assert!(
        has(&s, "breakout      you   armed   +0.00R/1R   15:00"),
        "160x48:\n{text}"
    );
    assert!(
        has(&s, "vwap-flush    you   stood   -0.21R/0.5R 15:45"),
        "160x48:\n{text}"
    );
    // The `↳` line says why it stood down.
    assert!(
        has(&s, "↳ cancel · holds +96 SPY shares"),
        "160x48:\n{text}"
    );
    let s = screen(&app, 100, 30);
    let text = s.join("\n");
    assert!(has(&s, "state   pnl/bdgt R ttl"), "100x30:\n{text}");
    assert!(
        has(&s, "breakout      you   armed   +0.00/1R   15:00"),
        "100x30:\n{text}"
    );
    // Wide, the state's word is whole.
    let s = screen(&app, 200, 60);
    assert!(has(&s, "stood-down -0.21R/0.5R"), "{}", s.join("\n"));
}

/// The Plans pane's title said `2 holding` over rows that read `filled`, and the `↳` line
/// put the 09:34 veto before the 10:24 TP, so at 160x48 the newest event was cut (`VETO
/// worst $516.52 > $4.22 left · TP#1 fi…`): the title counts in the rows' words, and the
/// newer of the note and the risk decision comes first.
#[test]
fn the_plans_title_says_filled_and_the_newest_event_leads_the_note_line() {
    let mut app = readme_desk_at_1032();
    app.set_focus(Pane::Plans);
    let s = screen(&app, 160, 48);
    let text = s.join("\n");
    assert!(has(&s, "Plans — 5 · 2 filled · 1 armed"), "{text}");
    assert!(!has(&s, "holding"), "{text}");
    assert!(has(&s, "↳ TP#1 fired 10:24 · VETO worst $516.52"), "{text}");
}

/// After a seek to 09:45:12 with `--copilot`, the footer showed the 09:34 veto notice
/// (the seek passed it after the 09:30 proposal arrived) and not the waiting proposal: a
/// notice the tape has left behind no longer shows over a proposal, which shows with its
/// age, at 100x30 too (its end, the age, was cut there).
#[test]
fn a_waiting_proposal_holds_the_footer_over_an_old_notice_after_a_seek() {
    let session = desk::open_session(&args(&["kestrel", "--no-save", "--copilot"]), None).unwrap();
    let (themes, keys, _) = desk::load_config(None);
    let mut app = App::new(SessionHandle::inline(session), themes, keys);
    app.send(Command::Seek(ms(9, 31, 0)));
    app.tick();
    assert!(app.proposal().is_some(), "the house proposes at wake open");
    app.send(Command::Seek(ms(9, 45, 12)));
    app.tick();
    assert!(app.proposal().is_some());
    for (w, h) in [(160, 48), (100, 30)] {
        let s = screen(&app, w, h);
        let footer = &s[s.len() - 1];
        assert!(
            footer.contains("house proposes: arms vwap-reclaim"),
            "{w}x{h}: {footer}"
        );
        assert!(footer.contains("15m12s ago"), "{w}x{h}: {footer}");
        assert!(!footer.contains("VETO"), "{w}x{h}: {footer}");
    }
}

/// At 100x30 the status line dropped the tape's name whole with a live command author
/// (`│ author command-author.sh (autopilot) │ hash … (engine)`), two columns too long, while
/// the labels stayed: the labels go, `(autopilot)` reads `(auto)`, and the name is cut
/// with `…` (down to its date) before it is dropped.
#[test]
fn the_status_line_keeps_the_tapes_name_beside_a_command_author_at_100x30() {
    let session = desk::open_session(
        &args(&[
            "kestrel",
            "--no-save",
            "--author",
            "cmd:examples/command-author.sh",
        ]),
        None,
    )
    .unwrap();
    let (themes, keys, _) = desk::load_config(None);
    let app = App::new(SessionHandle::inline(session), themes, keys);
    let s = screen(&app, 100, 30);
    assert!(s[0].contains("trend-2025-04-09"), "{}", s[0]);
    assert!(s[0].contains("command-author.sh"), "{}", s[0]);
    assert!(!s[0].contains("(engine)"), "{}", s[0]);
    let s = screen(&app, 200, 60);
    assert!(s[0].contains("tape trend-2025-04-09-s1"), "{}", s[0]);
}

/// At 100x30 the status line dropped the tape's name (which session is this?) while
/// `author house (autopilot)` and `(engine)` stayed: the words that only label give way
/// first, and the tape's name stays with the clock, the play state and the hash.
#[test]
fn the_status_line_keeps_the_tapes_name_at_100x30() {
    let app = readme_desk_at_1032();
    let s = screen(&app, 100, 30);
    assert!(
        s[0].contains("tape trend-2025-04-09-s1 │ 10:32:00.000"),
        "{}",
        s[0]
    );
    assert!(s[0].contains("│ house (autopilot) │"), "{}", s[0]);
    assert!(
        s[0].contains(&format!("hash {}", &app.snap.hash[..12])),
        "{}",
        s[0]
    );
    // Wide, every word is on the line, as it was.
    let s = screen(&app, 160, 48);
    assert!(
        s[0].contains("author house (autopilot) │ hash ") && s[0].contains("(engine)"),
        "{}",
        s[0]
    );
}

#[test]
fn the_plans_and_blotter_keep_every_figure_whole_at_160x48() {
    // The README's desk: the bundled examples and the house agent.
    let session = desk::open_session(&args(&["kestrel", "--no-save"]), None).unwrap();
    let (themes, keys, _) = desk::load_config(None);
    let mut app = App::new(SessionHandle::inline(session), themes, keys);
    app.send(Command::Seek(ms(10, 32, 0)));
    app.tick();
    let s = screen(&app, 160, 48);
    // Every plan's ttl whole (it was `15:…`), and the pane's header over them. (add-on's
    // `+30m` reads at its end, 10:51:30, in the Plans pane and, since 2026-12-05, the View.)
    for ttl in ["15:00", "10:51:30", "15:30", "15:45", "14:30"] {
        assert!(has(&s, ttl), "ttl {ttl} whole:\n{}", s.join("\n"));
    }
    assert!(!s.iter().any(|l| l.contains("15:…")), "{}", s.join("\n"));
    // The last plan's second row (the house's vwap-reclaim, its TP) is on screen: the pane
    // grows to hold every plan's two rows (it was cut until scrolled, the title saying all
    // were in view).
    assert!(has(&s, "↳ TP#1 fired 10:03"), "{}", s.join("\n"));
    press(&mut app, KeyCode::Char('b'));
    let s = screen(&app, 160, 48);
    let text = s.join("\n");
    // The Blotter wraps a row rather than cut a price or a P&L: open P&L in $ and R, each
    // position's P&L and the latest fill's price.
    assert!(has(&s, "open +$166.08 +0.17R"), "{text}");
    assert!(has(&s, "open +$60.00"), "{text}");
    assert!(has(&s, "@ 1.00"), "the latest fill's price:\n{text}");
    assert!(has(&s, "breakout +1 SPY 0dte 518.00 C"), "{text}");
}

#[test]
fn a_notice_goes_stale_when_the_tape_has_moved_on() {
    let session = desk::open_session(&args(&["kestrel", "--no-save"]), None).unwrap();
    let (themes, keys, _) = desk::load_config(None);
    let mut app = App::new(SessionHandle::inline(session), themes, keys);
    app.message_hold = Duration::ZERO;
    app.send(Command::Seek(ms(9, 35, 0)));
    app.tick();
    let veto = app.message.clone().unwrap_or_default();
    assert!(
        veto.contains("VETO"),
        "the 09:34 veto is the news: {veto:?}"
    );
    // Two minutes on, it still is; an hour on, it is not.
    app.send(Command::Seek(ms(9, 37, 0)));
    app.tick();
    assert_eq!(app.message.as_deref(), Some(veto.as_str()));
    app.send(Command::Seek(ms(10, 35, 0)));
    app.tick();
    assert_eq!(app.message, None, "an hour-old veto is not shown as news");
    // A message of the screen's own goes the same way, also when the tape is taken back
    // before it.
    app.message = Some("theme dark".into());
    app.tick();
    app.send(Command::Seek(ms(10, 0, 0)));
    app.tick();
    assert_eq!(app.message, None);
}

// ---- Polish: wrapped panes, scroll hints, names and counts (the user review) ----

/// The README's desk: the example plans and the house agent in autopilot.
fn readme_app() -> App {
    let session = desk::open_session(&args(&["kestrel", "--no-save"]), None).unwrap();
    let (themes, keys, _) = desk::load_config(None);
    App::new(SessionHandle::inline(session), themes, keys)
}

/// A pane's inner rows as drawn (its borders off), trailing spaces kept.
fn pane_rows(app: &App, w: u16, h: u16, pane: Pane) -> Vec<String> {
    let s = screen(app, w, h);
    let r = ui::layout(app, ratatui::layout::Rect::new(0, 0, w, h))
        .into_iter()
        .find(|(p, _)| *p == pane)
        .map(|(_, r)| r)
        .expect("the pane is on screen");
    s[usize::from(r.y) + 1..usize::from(r.bottom()) - 1]
        .iter()
        .map(|l| {
            l.chars()
                .skip(usize::from(r.x) + 1)
                .take(usize::from(r.width) - 2)
                .collect()
        })
        .collect()
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

#[test]
fn the_view_wraps_long_frame_lines_and_scrolls_by_drawn_rows() {
    for (w, h) in [(100, 30), (160, 48), (200, 60)] {
        let mut app = readme_app();
        app.send(Command::Seek(ms(9, 34, 0)));
        app.tick();
        app.set_focus(Pane::View);
        let frame = app.snap.frame.text.clone();
        // Page through the View: every word of the Frame is on screen, in order, none cut
        // at the pane's edge (it was `view=de`, `risk used 0.00R wak`).
        let mut seen: Vec<String> = Vec::new();
        let mut last_top = None;
        loop {
            let rows = pane_rows(&app, w, h, Pane::View);
            let top = app.view_scroll;
            if last_top == Some(top) {
                break;
            }
            last_top = Some(top);
            // Rows not seen yet: the page step is the pane's height.
            let skip = seen_rows(&seen, &rows);
            for r in rows.iter().skip(skip) {
                seen.push(r.clone());
            }
            press(&mut app, KeyCode::PageDown);
        }
        let drawn: Vec<String> = seen.iter().flat_map(|r| words(r)).collect();
        assert!(
            !drawn.iter().any(|w| w.ends_with('…')),
            "{w}x{h}: nothing cut:\n{}",
            seen.join("\n")
        );
        assert_eq!(drawn, words(&frame), "{w}x{h}:\n{}", seen.join("\n"));
        // A continuation hangs four columns under its line's own indent.
        let cont = seen
            .iter()
            .position(|r| r.starts_with("    ") && !r.trim().is_empty())
            .expect("a wrapped line");
        assert!(cont > 0, "{w}x{h}");
        // The end stops with the last row at the bottom; the title counts drawn rows.
        press(&mut app, KeyCode::End);
        let s = screen(&app, w, h);
        let rows = pane_rows(&app, w, h, Pane::View);
        let last = frame
            .lines()
            .last()
            .unwrap()
            .split_whitespace()
            .last()
            .unwrap();
        let (total, shown) = app.view_rows.get();
        if total > shown {
            assert!(
                rows.last().unwrap().contains(last),
                "{w}x{h}: the last row at the bottom:\n{}",
                s.join("\n")
            );
            assert!(
                has(&s, &format!("{}–{total}", total - shown + 1)),
                "{w}x{h}:\n{}",
                s.join("\n")
            );
        }
        press(&mut app, KeyCode::Down);
        assert_eq!(screen(&app, w, h), s, "{w}x{h}: no scrolling past the end");
    }
}

/// How many leading rows of `rows` were already seen (the overlap of a page step that
/// stopped at the end).
fn seen_rows(seen: &[String], rows: &[String]) -> usize {
    (0..=rows.len().min(seen.len()))
        .rev()
        .find(|n| seen[seen.len() - n..] == rows[..*n])
        .unwrap_or(0)
}

#[test]
fn journal_comments_and_help_descriptions_hang_under_their_text() {
    let mut app = readme_app();
    app.tick();
    app.set_focus(Pane::Journal);
    let rows = pane_rows(&app, 100, 30, Pane::Journal);
    let i = rows
        .iter()
        .position(|r| r.starts_with("  # News fade: buy puts"))
        .unwrap_or_else(|| panic!("{}", rows.join("\n")));
    assert!(
        rows[i + 1].starts_with("    down on a headline."),
        "the comment's continuation under its text (it was at column 0):\n{}",
        rows.join("\n")
    );
    // Help: a description's continuation under the description column, not under the keys.
    press(&mut app, KeyCode::Char('?'));
    let s = screen(&app, 100, 30);
    let i = s
        .iter()
        .position(|r| r.contains("status hash … (engine)"))
        .unwrap_or_else(|| panic!("{}", s.join("\n")));
    let col = s[i].find("the determinism hash").unwrap();
    let next = &s[i + 1];
    let text_at = next.find("give the same hash").expect("wrapped");
    assert_eq!(
        next[..text_at].chars().count(),
        s[i][..col].chars().count(),
        "{}",
        s.join("\n")
    );
}

/// Someone writing a first plan (`--no-example`, nothing to yank) found no syntax on the
/// desk and no pointer to the language. `?` shows a plan to start from, and the skeleton
/// it shows arms as it is.
#[test]
fn the_help_shows_a_plan_to_start_from_that_arms_as_it_is() {
    let mut app = app();
    press(&mut app, KeyCode::Char('?'));
    let help = kestrel_desk::desk::ui::help_lines(&app, 98);
    let text: Vec<String> = help
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect();
    let at = text
        .iter()
        .position(|l| l == "Writing a plan")
        .unwrap_or_else(|| panic!("{}", text.join("\n")));
    assert_eq!(text[at + 1], "  PLAN my-break budget 0.1R ttl +30m");
    assert!(
        text.iter().any(|l| l.contains("kestrel card")),
        "{}",
        text.join("\n")
    );
    press(&mut app, KeyCode::Esc);
    let t = app
        .human_turn(kestrel_desk::desk::ui::PLAN_SKELETON)
        .expect("routed at once");
    assert_eq!(t.result, "armed my-break");
}

#[test]
fn the_help_says_it_scrolls_and_how_and_its_keys_scroll_it() {
    let mut app = readme_app();
    press(&mut app, KeyCode::Char('?'));
    let s = screen(&app, 100, 30);
    let bottom = &s[28];
    assert!(
        bottom.contains("↓ more") && bottom.contains("j k") && bottom.contains("pgdn"),
        "the bottom border says there is more and how to scroll:\n{}",
        s.join("\n")
    );
    // j scrolls a row, G goes to the end (and no further), g back to the top.
    press(&mut app, KeyCode::Char('j'));
    assert_eq!(app.modal_scroll, 1);
    assert!(screen(&app, 100, 30)[28].contains("↑↓ more"));
    press(&mut app, KeyCode::Char('G'));
    let s = screen(&app, 100, 30);
    assert!(s[28].contains("↑ more"), "{}", s.join("\n"));
    assert!(
        has(&s, "any other key closes"),
        "the last line shows:\n{}",
        s.join("\n")
    );
    let end = app.modal_scroll;
    press(&mut app, KeyCode::Char('j'));
    press(&mut app, KeyCode::PageDown);
    assert_eq!(app.modal_scroll, end, "no scrolling past the end");
    press(&mut app, KeyCode::Char('g'));
    assert_eq!(app.modal_scroll, 0);
    assert!(app.modal.is_some(), "scroll keys keep the help open");
    // When everything fits, no hint (200x100: the help holds a plan to start from since
    // 2026-12-06, and no longer fits 80 rows).
    let s = screen(&app, 200, 100);
    assert!(!has(&s, "↓ more"), "{}", s.join("\n"));
}

#[test]
fn the_log_names_who_stood_down() {
    let mut app = readme_app();
    app.send(Command::Seek(ms(9, 31, 0)));
    press(&mut app, KeyCode::Char('s'));
    typ(&mut app, "done for the day\n");
    let sums: Vec<&str> = app
        .log
        .rows()
        .iter()
        .filter(|r| r.ty == "stand-down")
        .map(|r| r.summary.as_str())
        .collect();
    assert_eq!(
        sums,
        vec!["stand-down by you (every plan): done for the day"],
        "it was `stand-down by -`"
    );
    // An agent's STAND-DOWN de-arms its own plans and its event names it.
    let src = desk::tape_source(None).unwrap();
    let mut app =
        desk::inline_app_with(src, Some(script(&["STAND-DOWN tired of it"])), false).unwrap();
    app.send(Command::Seek(ms(9, 31, 0)));
    let sums: Vec<String> = app
        .log
        .rows()
        .iter()
        .filter(|r| r.ty == "stand-down")
        .map(|r| r.summary.clone())
        .collect();
    assert_eq!(sums, vec!["stand-down by house (own plans): tired of it"]);
}

#[test]
fn titles_say_one_turn_not_one_turns() {
    let session = desk::open_session(&args(&["kestrel", "--no-save", "--no-agent"]), None).unwrap();
    let (themes, keys, _) = desk::load_config(None);
    let mut app = App::new(SessionHandle::inline(session), themes, keys);
    app.tick();
    let s = screen(&app, 160, 48);
    assert!(has(&s, "Journal — 1 turn "), "{}", s.join("\n"));
    assert!(!has(&s, "1 turns"), "{}", s.join("\n"));
}

#[test]
fn the_log_filter_starts_empty_and_up_recalls_the_one_in_force() {
    let mut app = readme_app();
    app.send(Command::Seek(ms(9, 40, 0)));
    app.set_focus(Pane::Bus);
    press(&mut app, KeyCode::Char('/'));
    typ(&mut app, "plan\n");
    assert_eq!(app.log.filter, "plan");
    press(&mut app, KeyCode::Char('/'));
    let input = |app: &App| match &app.modal {
        Some(desk::app::Modal::Prompt { input, .. }) => input.clone(),
        m => panic!("not the prompt: {m:?}"),
    };
    assert_eq!(input(&app), "", "a new filter starts empty");
    assert!(has(&screen(&app, 100, 30), "now /plan: ↑ recalls it"));
    press(&mut app, KeyCode::Up);
    assert_eq!(input(&app), "plan");
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.log.filter, "plan", "esc keeps the filter in force");
    press(&mut app, KeyCode::Char('/'));
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.log.filter, "", "enter with nothing clears");
}

#[test]
fn attaching_and_detaching_the_agent_says_what_changed() {
    let mut app = readme_app();
    press(&mut app, KeyCode::Char('A'));
    assert!(!app.agent_attached());
    assert_eq!(
        app.message.as_deref(),
        Some("house detached: no longer asked at wakes (A attaches)")
    );
    press(&mut app, KeyCode::Char('A'));
    assert!(app.agent_attached());
    assert_eq!(
        app.message.as_deref(),
        Some("house attached, autopilot: its turns route as they arrive")
    );
    press(&mut app, KeyCode::Char('c'));
    assert_eq!(
        app.message.as_deref(),
        Some("house: co-pilot — its turns wait for a accept / x reject")
    );
    press(&mut app, KeyCode::Char('A'));
    press(&mut app, KeyCode::Char('A'));
    assert_eq!(
        app.message.as_deref(),
        Some("house attached, co-pilot: its turns wait for a / x")
    );
}

#[test]
fn every_config_problem_is_listed_in_the_help_and_counted_on_the_footer() {
    let dir = tmp("config-problems");
    std::fs::create_dir_all(dir.join("themes")).unwrap();
    std::fs::write(dir.join("themes/dark.toml"), "[ui]\nfg = \"notacolor\"\n").unwrap();
    std::fs::write(
        dir.join("keys.toml"),
        "[keys]\nseek = \"ctrl+nothing\"\nnope = \"z\"\n",
    )
    .unwrap();
    let (themes, keys, warnings) = desk::load_config(Some(&dir));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(
        warnings[0].ends_with(
            "dark.toml: error code=THEME key=ui.fg message=not a colour: \"notacolor\" (expected #rrggbb or a colour name); kept the default"
        ),
        "{warnings:?}"
    );
    assert!(warnings[1].contains("keys.toml: error code=KEYS key=nope "));
    assert!(warnings[2].contains("keys.toml: error code=KEYS key=seek "));
    let m = desk::config_message(&warnings).unwrap();
    assert!(
        m.starts_with("3 problems in the config files (? lists them): "),
        "{m}"
    );
    let mut app = App::new(
        SessionHandle::inline(desk::open_session(&args(&["kestrel", "--no-save"]), None).unwrap()),
        themes,
        keys,
    );
    app.warnings = warnings;
    press(&mut app, KeyCode::Char('?'));
    press(&mut app, KeyCode::End);
    let s = screen(&app, 200, 60).join("\n");
    assert!(s.contains("Config: 3 problems"), "{s}");
    for needle in ["key=ui.fg", "key=nope", "key=seek"] {
        assert!(s.contains(needle), "{needle}:\n{s}");
    }
}

#[test]
fn b_on_a_compact_screen_brings_the_blotter_up_and_then_toggles() {
    use kestrel_desk::desk::app::BusMode;
    let mut app = app();
    // Compact (100x30): the tabbed column shows the View; `b` brings the Bus tab up as the
    // Blotter, where before it flipped a pane behind another tab and nothing changed.
    let before = screen(&app, 100, 30);
    assert!(has(&before, "View default"), "{}", before.join("\n"));
    press(&mut app, KeyCode::Char('b'));
    assert_eq!((app.tab, app.bus_mode), (Pane::Bus, BusMode::Blotter));
    let shown = screen(&app, 100, 30);
    assert!(has(&shown, "Blotter"), "{}", shown.join("\n"));
    assert!(!has(&shown, "View default"), "{}", shown.join("\n"));
    // With its tab up, `b` toggles as on a wide screen.
    press(&mut app, KeyCode::Char('b'));
    assert_eq!((app.tab, app.bus_mode), (Pane::Bus, BusMode::Bus));
    press(&mut app, KeyCode::Char('b'));
    assert_eq!(app.bus_mode, BusMode::Blotter);
    // Wide (160x48): every pane is on screen, and `b` only toggles, whatever the tab.
    let mut wide = self::app();
    screen(&wide, 160, 48);
    press(&mut wide, KeyCode::Char('b'));
    assert_eq!(wide.bus_mode, BusMode::Blotter);
    press(&mut wide, KeyCode::Char('b'));
    assert_eq!(wide.bus_mode, BusMode::Bus);
    assert_ne!(wide.tab, Pane::Bus);
}

/// `g` in a list goes to its top; a list at its top (and the Blotter at its glance)
/// has nowhere to go, so there `g` seeks as everywhere else. `home` stays the list's.
#[test]
fn g_in_a_list_goes_to_the_top_then_seeks() {
    use kestrel_desk::desk::app::{BusMode, Modal, PromptKind};
    let seeking = |a: &App| {
        matches!(
            &a.modal,
            Some(Modal::Prompt {
                kind: PromptKind::Seek,
                ..
            })
        )
    };
    let mut app = book_with(
        None,
        &[
            (ms(9, 40, 0), desk::EXAMPLE_PLAN),
            (ms(10, 5, 0), SECOND_PLAN),
        ],
        ms(11, 0, 0),
    );
    assert!(app.snap.plans.len() > 1, "{:?}", names(&app));
    // Plans, the second plan selected: g selects the first, then g seeks.
    app.set_focus(Pane::Plans);
    press(&mut app, KeyCode::Down);
    assert_eq!(app.plan_sel, 1);
    press(&mut app, KeyCode::Char('g'));
    assert_eq!(app.plan_sel, 0);
    assert!(!seeking(&app), "the first g goes to the top");
    assert_eq!(
        app.message.as_deref(),
        Some("top of the list · g again seeks"),
        "and says how to seek"
    );
    press(&mut app, KeyCode::Char('g'));
    assert!(seeking(&app), "at the top, g seeks");
    press(&mut app, KeyCode::Esc);
    // The Log, scrolled down from its top: the same.
    app.set_focus(Pane::Bus);
    app.bus_mode = BusMode::Bus;
    press(&mut app, KeyCode::Char('g'));
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Char('g'));
    assert!(!seeking(&app), "the Log went back to its top");
    press(&mut app, KeyCode::Char('g'));
    assert!(seeking(&app), "at the Log's top, g seeks");
    press(&mut app, KeyCode::Esc);
    // home at the top of a list does not go back to the open.
    let clock = app.snap.clock;
    press(&mut app, KeyCode::Home);
    assert_eq!(app.snap.clock, clock);
    // The Blotter at its glance (its top): g seeks at once.
    app.bus_mode = BusMode::Blotter;
    press(&mut app, KeyCode::Char('g'));
    assert!(seeking(&app), "in the Blotter, g seeks");
}

/// The Blotter scrolls: at 160x48 its pane holds the P&L, the positions and the latest fill
/// (the glance), and the title says how many rows are left out; ↓ and page down go through
/// every order and every fill, the P&L kept on top, `G` goes to the oldest fill, `g` back to
/// the glance and `g` again seeks. Before, only the latest of the session's fills could be
/// seen there, and ↓, page down and the wheel did nothing.
#[test]
fn the_blotter_scrolls_through_every_order_and_fill() {
    use kestrel_desk::desk::app::{BusMode, Modal, PromptKind};
    let mut app = book_with(None, &[(ms(9, 30, 0), desk::DEFAULT_PLANS)], ms(16, 0, 0));
    let fills: Vec<String> = app
        .snap
        .book
        .fills
        .iter()
        .map(|f| format!("{} {} {} {}", f.time, f.plan, f.side, f.qty))
        .collect();
    assert!(fills.len() >= 3, "{fills:?}");
    app.bus_mode = BusMode::Blotter;
    app.set_focus(Pane::Bus);
    let glance = screen(&app, 160, 48);
    let shown = |s: &[String]| fills.iter().filter(|f| has(s, f)).count();
    assert!(shown(&glance) < fills.len(), "{}", glance.join("\n"));
    assert!(has(&glance, "more rows ↓"), "{}", glance.join("\n"));
    assert!(has(&glance, "P&L +$"), "{}", glance.join("\n"));
    // Down a row at a time to the end: every fill and every order passes by, under the P&L.
    let mut seen = std::collections::BTreeSet::new();
    let mut orders = 0;
    let mut last_scroll = 0;
    for _ in 0..200 {
        press(&mut app, KeyCode::Down);
        let s = screen(&app, 160, 48);
        assert!(has(&s, "P&L +$"), "the P&L stays: {}", s.join("\n"));
        assert!(has(&s, "Blotter · rows "), "{}", s.join("\n"));
        for f in &fills {
            if has(&s, f) {
                seen.insert(f.clone());
            }
        }
        orders = orders.max(
            s.iter()
                .filter(|l| l.contains("filled    ") || l.contains("vetoed    "))
                .count(),
        );
        if app.blotter_scroll == last_scroll {
            break;
        }
        last_scroll = app.blotter_scroll;
    }
    assert_eq!(seen.len(), fills.len(), "every fill scrolls by: {seen:?}");
    assert!(orders > 0, "and the orders");
    // G: the oldest fill, at the bottom.
    press(&mut app, KeyCode::Char('g'));
    assert_eq!(app.blotter_scroll, 0, "g goes back to the glance");
    let seeking = |a: &App| {
        matches!(
            &a.modal,
            Some(Modal::Prompt {
                kind: PromptKind::Seek,
                ..
            })
        )
    };
    assert!(!seeking(&app), "the first g goes to the glance");
    press(&mut app, KeyCode::Char('G'));
    let end = screen(&app, 160, 48);
    assert!(has(&end, &fills[0]), "{}", end.join("\n"));
    press(&mut app, KeyCode::PageUp);
    assert!(app.blotter_scroll < last_scroll, "page up");
    press(&mut app, KeyCode::Char('g'));
    press(&mut app, KeyCode::Char('g'));
    assert!(seeking(&app), "at the glance, g seeks");
}

/// An agent whose replies stay invalid through its re-asks ends the turn in the fail-closed
/// pass: the Journal and the notices call it that, not a bare `pass`, which read as if it had
/// chosen to do nothing.
#[test]
fn a_fail_closed_turn_reads_fail_closed_on_the_desk() {
    let bad = "PLAN x budget 5R\n  WHEN spot > 1\n";
    let app = desk_with(
        Some(script(&[bad, bad, bad, bad])),
        false,
        None,
        &[],
        ms(9, 31, 0),
    );
    let rows = agent_rows(&app);
    let open = rows.first().expect("the OPEN turn");
    let routed = open.routed.as_ref().expect("routed");
    assert_eq!(
        routed.outcome,
        kestrel_desk::turn::Outcome::Pass { fail_closed: true }
    );
    assert!(
        open.label().starts_with("fail-closed pass @ wake open"),
        "{}",
        open.label()
    );
    // In co-pilot it is not proposed (since 2026-12-06: `a` and `x` both armed nothing):
    // it routes at once, named the same way, and the notice says it was not proposed.
    let app = desk_with(
        Some(script(&[bad, bad, bad, bad])),
        true,
        None,
        &[],
        ms(9, 30, 1),
    );
    assert!(app.proposal().is_none(), "nothing to decide");
    assert!(
        app.snap
            .notices
            .iter()
            .any(|n| n.text.contains("house: fail-closed pass (refused")
                && n.text
                    .contains("(not proposed: accepted or rejected, it arms nothing)")),
        "{:?}",
        app.snap.notices
    );
    let labels: Vec<String> = agent_rows(&app).iter().map(|t| t.label()).collect();
    assert!(
        labels[0].starts_with("fail-closed pass @ wake open"),
        "{labels:?}"
    );
    // The Bus has its replies and its turn, as an autopilot's: no `turn-rejected`.
    assert!(
        app.snap
            .bus
            .iter()
            .any(|l| l.contains("\"type\":\"repair\"")),
        "{:?}",
        app.snap.bus
    );
    assert!(
        !app.snap
            .bus
            .iter()
            .any(|l| l.contains("\"type\":\"turn-rejected\"")),
        "{:?}",
        app.snap.bus
    );
}

/// An agent's reply with escape sequences in a comment and in its STAND-DOWN reason never
/// puts a control character on the screen (the terminal would obey it: retitle the window,
/// clear the screen); what is left of the sequence shows as text, and the Bus keeps the
/// reply as written. ratatui drops control characters as it lays text into cells; this
/// guards that the desk draws every author's text through it.
#[test]
fn an_agents_escape_sequences_never_reach_the_terminal() {
    let reply = "# hi \u{1b}[7mINVERSE\u{1b}[0m there \u{1b}]0;pwned\u{7} end\nSTAND-DOWN \u{1b}[2J\u{1b}[Hgone\n";
    let app = desk_with(Some(script(&[reply])), false, None, &[], ms(9, 31, 0));
    for (w, h) in [(100, 30), (160, 48), (200, 60)] {
        let lines = screen(&app, w, h);
        for l in &lines {
            assert!(!l.chars().any(char::is_control), "{w}x{h}: {l:?}");
        }
        // The Journal shows beside the rest on a wide screen (a tab on a narrow one).
        if w >= 160 {
            assert!(has(&lines, "INVERSE"), "{w}x{h}:\n{}", lines.join("\n"));
        }
    }
    assert!(
        app.snap.bus.iter().any(|l| l.contains("\\u001b[2J")),
        "the Bus keeps the reply verbatim"
    );
}

/// The rows of the pane whose title starts `title`, inside its borders (a pane's box is
/// found from its top-left corner, the cell before the title's space).
fn pane(lines: &[String], title: &str) -> Vec<String> {
    let rows: Vec<Vec<char>> = lines.iter().map(|l| l.chars().collect()).collect();
    for (y, row) in rows.iter().enumerate() {
        let text: String = row.iter().collect();
        let Some(byte) = text.find(&format!(" {title}")) else {
            continue;
        };
        let x = text[..byte].chars().count().saturating_sub(1);
        let right = (x + 1..row.len())
            .find(|&c| matches!(row[c], '┐' | '┓'))
            .unwrap_or(row.len());
        return rows[y + 1..]
            .iter()
            .take_while(|r| !matches!(r.get(x), Some('└' | '┗')))
            .map(|r| r[x + 1..right.min(r.len())].iter().collect())
            .collect();
    }
    panic!("no pane titled {title}:\n{}", lines.join("\n"))
}

#[test]
fn a_long_book_scrolls_the_plans_pane_to_the_selected_plan_at_every_width() {
    // Twenty-five plans: more than the Plans pane holds at any of these sizes, narrow (two
    // rows a plan) or, from 90 columns inside it (a short wide terminal, or a very wide
    // one), a table of one row a plan.
    let doc: String = (1..=25)
        .map(|i| format!("PLAN book-{i:02} budget 0.1R ttl 15:30\n  WHEN spot > 99999\n  DO buy 1 ATM C @ ask\n\n"))
        .collect();
    let mut app = book_with(None, &[(ms(9, 30, 0), &doc)], ms(9, 31, 0));
    assert_eq!(app.snap.plans.len(), 25, "{:?}", app.snap.plans);
    for _ in 0..8 {
        if app.focus == Pane::Plans {
            break;
        }
        press(&mut app, KeyCode::Tab);
    }
    assert_eq!(app.focus, Pane::Plans);
    for (w, h) in [(100, 30), (160, 48), (200, 60), (210, 30), (320, 60)] {
        press(&mut app, KeyCode::Home);
        let all = screen(&app, w, h);
        assert!(
            has(&all, "of 25 ↕"),
            "{w}x{h}: the title says which plans show:\n{}",
            all.join("\n")
        );
        let top = pane(&all, "Plans —");
        assert!(has(&top, "book-01"), "{w}x{h}:\n{}", top.join("\n"));
        assert!(!has(&top, "book-25"), "{w}x{h}:\n{}", top.join("\n"));
        press(&mut app, KeyCode::End);
        let all = screen(&app, w, h);
        assert!(has(&all, "–25 of 25 ↕"), "{w}x{h}:\n{}", all.join("\n"));
        let end = pane(&all, "Plans —");
        assert!(
            has(&end, "book-25"),
            "{w}x{h}: the selected plan is in view:\n{}",
            end.join("\n")
        );
        assert!(!has(&end, "book-01"), "{w}x{h}:\n{}", end.join("\n"));
    }
}

/// By the close of a day with a pegged order, the Log had dropped every row before about
/// 12:48, the morning's fills and fires with them, with no sign: it kept the last 5,000 rows
/// and the re-prices filled them. Now the oldest chatter goes first and every fire, fill and
/// turn stays, from the open, also when a rewind rebuilds the Log from the run's history.
#[test]
fn the_log_keeps_every_fill_and_fire_of_a_long_day_and_lets_old_chatter_go() {
    // The bundled desk's plans and two pegged orders that never fill: re-prices on almost
    // every tick, thousands by the close.
    // 2R: pegged all day, their limits climb past what a 0.2R budget lets a re-price reach
    // (the re-price is checked since 2026-12-05), and the day is to stay busy.
    let pegs = format!(
        "{}\nPLAN peg-c budget 2R ttl 15:55\n  USING signal SPX exec SPY 0dte\n  WHEN spot > 1000\n  DO buy 1 ATM C @ fair-40% peg\n\nPLAN peg-p budget 2R ttl 15:55\n  USING signal SPX exec SPY 0dte\n  WHEN spot > 1000\n  DO buy 1 ATM P @ fair-40% peg\n",
        desk::DEFAULT_PLANS
    );
    let mut app = book_with(None, &[(ms(9, 30, 0), &pegs)], ms(12, 0, 0));
    // Played on in steps, as a desk at speed sees it: each snapshot holds the newest lines.
    for h in [13, 14, 15] {
        app.send(Command::Seek(ms(h, 0, 0)));
        app.tick();
    }
    app.send(Command::Seek(ms(16, 0, 0)));
    app.tick();
    let check = |app: &App, when: &str| {
        let marks = app.snap.landmarks.clone();
        assert!(
            app.snap.bus_events > 6000,
            "{when}: {} events",
            app.snap.bus_events
        );
        assert!(
            marks.iter().any(|(_, l)| l.contains("\"type\":\"fill\"")),
            "{when}: the day has fills"
        );
        let rows = app.log.rows();
        let nos: std::collections::BTreeSet<u64> = rows.iter().map(|r| r.no).collect();
        for (no, line) in marks.iter() {
            assert!(
                nos.contains(no),
                "{when}: event {no} is not in the Log: {line}"
            );
        }
        assert!(
            rows[0].time.starts_with("09:30") || rows[0].ty == "gap",
            "{when}: {:?}",
            rows[0]
        );
        let chatter = rows
            .iter()
            .filter(|r| r.ty == "order-repriced" || r.ty == "mark")
            .count();
        assert!(chatter <= 5500, "{when}: {chatter} rows of chatter");
        assert!(
            rows.len() < app.snap.bus_events as usize,
            "{when}: old chatter was let go"
        );
        // The fills show in the fill filter, the morning's first among them.
        let fills: Vec<&str> = rows
            .iter()
            .filter(|r| r.ty == "fill")
            .map(|r| r.time.as_str())
            .collect();
        assert!(
            fills.first().is_some_and(|t| t < &"12:00"),
            "{when}: {fills:?}"
        );
    };
    check(&app, "played to the close");
    // A rewind rebuilds the Log from the run's history: the same rows of consequence, and
    // a row that says what was left out.
    app.send(Command::Seek(ms(15, 59, 0)));
    app.tick();
    check(&app, "after a rewind");
    assert!(
        app.log
            .rows()
            .iter()
            .any(|r| r.ty == "gap" && r.summary.contains("left out")),
        "{:?}",
        &app.log.rows()[..3]
    );
}

/// Sending a STAND-DOWN from the kill switch, or a SHOW VIEW from the picker, emptied the
/// editor: the answer cleared it as if the draft had been the turn sent. A draft stays; the
/// editor's own turn still clears it once authored.
#[test]
fn the_kill_switch_and_the_view_picker_leave_a_draft_in_the_editor() {
    let mut app = app();
    press(&mut app, KeyCode::Char('e'));
    typ(&mut app, "PLAN half-written budget 0.1R");
    press(&mut app, KeyCode::Esc);
    let draft = app.editor.text();
    assert!(draft.contains("half-written"), "{draft:?}");
    press(&mut app, KeyCode::Char('v'));
    press(&mut app, KeyCode::Enter);
    let r = app.turn_rows().last().unwrap().routed.clone().unwrap();
    assert_eq!(r.outcome.name(), "view-request");
    app.tick();
    assert_eq!(app.editor.text(), draft, "SHOW VIEW kept the draft");
    press(&mut app, KeyCode::Char('s'));
    typ(&mut app, "flatten");
    press(&mut app, KeyCode::Enter);
    let r = app.turn_rows().last().unwrap().routed.clone().unwrap();
    assert_eq!(r.outcome.name(), "stand-down");
    app.tick();
    assert_eq!(app.editor.text(), draft, "STAND-DOWN kept the draft");
    // The editor's own authored turn clears it.
    app.editor.set_text("SHOW VIEW default\n");
    app.submit();
    app.tick();
    assert_eq!(
        app.editor.text(),
        "",
        "an authored turn from the editor clears it"
    );
}

/// `+++` in a burst ended at 600x, not max: each press stepped from the speed of the last
/// snapshot, which a threaded session had not yet answered. Each press now steps the
/// session's own speed once.
#[test]
fn a_burst_of_speed_keys_steps_once_per_press() {
    let src = desk::tape_source(None).unwrap();
    let h = SessionHandle::spawn(move || {
        kestrel_desk::session::owner::Session::open(src, Settings::default(), Opening::default())
    })
    .unwrap();
    let (themes, keys, _) = desk::load_config(None);
    let mut app = App::new(h, themes, keys);
    assert_eq!(app.snap.speed.label(), "60x");
    let key = |app: &mut App, c: char| app.key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    // No tick between the presses: the desk has not seen an answer to any of them.
    for _ in 0..3 {
        key(&mut app, '+');
    }
    wait_for(&mut app, |a| a.snap.speed.label() == "max");
    for _ in 0..5 {
        key(&mut app, '-');
    }
    wait_for(&mut app, |a| a.snap.speed.label() == "1x");
}

/// Quitting the desk while a command author was writing left the command running (its
/// process group survived, orphaned, until it ended on its own: a paid model call would run
/// on for up to `--timeout`). Closing the desk now abandons the call and kills the group.
#[cfg(unix)]
#[test]
fn closing_the_desk_kills_a_command_author_in_mid_reply() {
    let dir = tmp("quit-author");
    let pid_file = dir.join("pid");
    let spec = live_spec(
        "default",
        120,
        &format!(
            "cat >/dev/null; sleep 60 & echo $! > '{}'; wait",
            pid_file.display()
        ),
    );
    let src = desk::tape_source(None).unwrap();
    let app = desk::inline_app_with(src, Some(DeskAgent::Live(spec)), false).unwrap();
    let t = std::time::Instant::now();
    let pid: i32 = loop {
        if let Some(p) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break p;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the author never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let alive = |pid: i32| {
        // A zombie (killed, not yet reaped by whoever adopted it) is not running.
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit(')').next().map(|r| r.trim_start().to_string()))
            .is_some_and(|r| !r.starts_with('Z'))
    };
    assert!(alive(pid), "the author's sleep runs while it writes");
    drop(app);
    let t = std::time::Instant::now();
    while alive(pid) && t.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(pid), "the author's process group outlived the desk");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A session file whose last line a crash cut short could not be reopened at all (`EOF while
/// parsing`), though the desk promises a crash loses at most the line being written. The
/// cut line is now left out with a notice, and the session reopens as the file without it.
/// Acts written out of tape order are replayed in it; a time that is not one is refused
/// saying so.
#[test]
fn a_session_file_cut_mid_line_reopens_and_its_acts_replay_in_tape_order() {
    let dir = tmp("torn");
    let path = dir.join("s.jsonl");
    let app = book_with(
        Some(path.clone()),
        &[
            (ms(9, 40, 0), SECOND_PLAN),
            (ms(10, 0, 0), "STAND-DOWN enough\n"),
        ],
        ms(10, 30, 0),
    );
    drop(app);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with('\n'));
    // Cut inside the last line, as a crash mid-write leaves it.
    let torn = dir.join("torn.jsonl");
    std::fs::write(&torn, &text[..text.len() - 15]).unwrap();
    let whole = dir.join("whole.jsonl");
    let keep = text[..text.len() - 1].rfind('\n').unwrap() + 1;
    std::fs::write(&whole, &text[..keep]).unwrap();
    let a = reopened(&torn);
    let b = reopened(&whole);
    assert_eq!(a.hash, b.hash, "the cut line is left out, the rest replays");
    assert_eq!(a.clock, b.clock);
    let lines = text.lines().count();
    assert!(
        a.notices.iter().any(|n| n
            .text
            .contains(&format!("last line ({lines}) was cut short"))),
        "{:?}",
        a.notices
    );
    // A line cut in the middle of the file is not a crash's: it is refused, naming it.
    let mut mid: Vec<&str> = text.lines().collect();
    let second = mid[1].to_string();
    mid[1] = &second[..second.len() / 2];
    let e = saved::load(&(mid.join("\n") + "\n")).unwrap_err();
    assert!(e.starts_with("line 2: "), "{e}");
    // Acts out of tape order (an agent's answer asked again after a rewind is written
    // behind the old branch's later acts): each is put in its place, so two swapped acts
    // reopen as the file in order does.
    let mut lines_v: Vec<String> = text.lines().map(String::from).collect();
    let acts: Vec<usize> = lines_v
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains("\"type\":\"act\""))
        .map(|(i, _)| i)
        .collect();
    assert!(acts.len() >= 2, "{text}");
    lines_v.swap(acts[0], acts[1]);
    let swapped = dir.join("swapped.jsonl");
    std::fs::write(&swapped, lines_v.join("\n") + "\n").unwrap();
    let c = reopened(&swapped);
    let d = reopened(&path);
    assert_eq!(c.hash, d.hash, "the acts replay in tape order");
    // A time that is not one is named as such, not as a missing one.
    let bad = text.replacen("\"ts\":\"09:40:00.000\"", "\"ts\":\"25:99:00.000\"", 1);
    assert_ne!(bad, text);
    let e = saved::load(&bad).unwrap_err();
    assert!(e.contains("\"25:99:00.000\" is not a time of day"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The notice that a reopened file's last line was cut short was said, then covered at once
/// by the footer's routine "reopened FILE at ..." line: the person never saw it. It is the
/// first message of the desk.
#[test]
fn the_cut_short_notice_is_the_first_message_of_the_reopened_desk() {
    let dir = tmp("torn-shown");
    let path = dir.join("s.jsonl");
    drop(book_with(
        Some(path.clone()),
        &[
            (ms(9, 40, 0), SECOND_PLAN),
            // Refused: an error notice at 09:45, long before the reopen point.
            (
                ms(9, 45, 0),
                "PLAN nil budget 0R ttl +5m\n  WHEN spot > 1\n  DO buy 1 ATM P @ fair\n",
            ),
        ],
        ms(10, 0, 0),
    ));
    let text = std::fs::read_to_string(&path).unwrap();
    let torn = dir.join("torn.jsonl");
    std::fs::write(&torn, &text[..text.len() - 15]).unwrap();
    let opened = |p: &std::path::Path| {
        let s = kestrel_desk::session::owner::reopen(p, None).unwrap();
        let (themes, keys, _) = desk::load_config(None);
        let mut app = App::new(SessionHandle::inline(s), themes, keys);
        desk::opening_message(
            &mut app,
            &args(&["kestrel", "--open", p.to_str().unwrap()]),
            None,
        );
        app
    };
    let app = opened(&torn);
    let m = app.message.clone().unwrap_or_default();
    assert!(
        m.contains(&format!(
            "last line ({}) was cut short",
            text.lines().count()
        )),
        "{m}"
    );
    assert_eq!(
        app.message_level(),
        kestrel_desk::session::owner::NoticeLevel::Warn
    );
    // A whole file opens with the routine line, though its replay refused a turn at 09:45:
    // an error long before the reopen point is not its news (the default session's footer
    // read `VETO vwap-flush RELOAD#1 …` at a reopen at 10:30, not where it reopened).
    let whole = opened(&path);
    assert!(
        whole.snap.notices.iter().any(|n| {
            n.level == kestrel_desk::session::owner::NoticeLevel::Error && n.ts < whole.snap.clock
        }),
        "{:?}",
        whole.snap.notices
    );
    let m = whole.message.unwrap_or_default();
    assert!(m.starts_with("reopened "), "{m}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A session file edited by hand: an act moved past the tape's end was never replayed, one
/// whose time was moved away from its tape point showed the new time in the Journal but
/// armed at the old point, and a turn whose text was made invalid was refused on replay
/// while its line said it armed a plan; all opened without a word. Each is refused, naming
/// its line.
#[test]
fn an_act_edited_off_its_tape_point_or_its_result_is_refused_naming_its_line() {
    let dir = tmp("misplaced");
    let path = dir.join("s.jsonl");
    drop(book_with(
        Some(path.clone()),
        &[
            (ms(9, 40, 0), SECOND_PLAN),
            (ms(10, 0, 0), "STAND-DOWN enough\n"),
        ],
        ms(10, 30, 0),
    ));
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let k = lines
        .iter()
        .position(|l| l.contains("\"type\":\"act\"") && l.contains("PLAN my-dip"))
        .expect("the person's turn is recorded");
    let v: serde_json::Value = serde_json::from_str(lines[k]).unwrap();
    let edited = |key: &str, to: serde_json::Value| {
        let mut v = v.clone();
        v[key] = to;
        let mut l: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        l[k] = v.to_string();
        let p = dir.join(format!("{key}.jsonl"));
        std::fs::write(&p, l.join("\n") + "\n").unwrap();
        p
    };
    let refused = |p: &std::path::Path| match kestrel_desk::session::owner::reopen(p, None) {
        Ok(_) => panic!("{} reopened", p.display()),
        Err(e) => e,
    };
    let e = refused(&edited("seq", 99_999_999.into()));
    assert!(e.starts_with("error code=SESSION message="), "{e}");
    assert!(
        e.contains(&format!("line {}: the act recorded at seq 99999999", k + 1))
            && e.contains("past the tape's end"),
        "{e}"
    );
    let e = refused(&edited("ts", "09:35:00.000".into()));
    assert!(
        e.contains(&format!("line {}: the act recorded at seq", k + 1))
            && e.contains("09:35:00.000 does not fall at that point of the tape"),
        "{e}"
    );
    // Later than its tape point: it would apply events past where it was taken.
    let e = refused(&edited("ts", "09:50:00.000".into()));
    assert!(e.contains("does not fall at that point"), "{e}");
    // Its text changed to a turn that is refused, the line still saying it armed the plan:
    // replayed, the book would lack the plan.
    assert_eq!(v["result"], "armed my-dip");
    let mut act = v["act"].clone();
    act["text"] = "PLAN my-dip budget 0.2R ttl +30m\n  DO sell 1 -1 P @ mid\n".into();
    let e = refused(&edited("act", act));
    assert!(
        e.contains(&format!(
            "line {}: the turn recorded as \"armed my-dip\" replays as \"refused: ",
            k + 1
        )),
        "{e}"
    );
    // The file as written reopens.
    reopened(&path);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Rewinding while a live agent was writing: its answer, asked again, is recorded after the
/// old branch's later acts (found in review: the session file then read as out of order).
/// It reopens, and at the same hash as the live session.
#[test]
fn a_live_answer_after_a_rewind_reopens_at_the_live_hash() {
    let dir = tmp("rewind-order");
    let path = dir.join("s.jsonl");
    let spec = slow_plan_author(&dir);
    let mut app = desk_with(
        Some(DeskAgent::Live(spec)),
        false,
        Some(path.clone()),
        &[(ms(9, 40, 0), SECOND_PLAN)],
        ms(9, 45, 0),
    );
    // Back before the person's turn while the OPEN call is still out.
    app.send(Command::Seek(ms(9, 35, 0)));
    wait_for(&mut app, |a| !agent_rows(a).is_empty());
    app.send(Command::Seek(ms(10, 0, 0)));
    let hash = app.snap.hash.clone();
    drop(app);
    let s = kestrel_desk::session::owner::reopen(&path, None).expect("it reopens");
    let mut h = SessionHandle::inline(s);
    h.send(Command::Seek(ms(10, 0, 0)));
    assert_eq!(
        h.latest().hash,
        hash,
        "the reopened session is the live one"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A pane's rows inside its borders as a terminal shows them (a wide character once: the
/// cell after it, which it covers, left out), with the pane's rectangle and the cursor.
fn pane_shown(
    app: &App,
    w: u16,
    h: u16,
    pane: Pane,
) -> (Vec<String>, ratatui::layout::Rect, (u16, u16)) {
    use unicode_width::UnicodeWidthStr;
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| ui::draw(f, app)).unwrap();
    let r = ui::layout(app, ratatui::layout::Rect::new(0, 0, w, h))
        .into_iter()
        .find(|(p, _)| *p == pane)
        .map(|(_, r)| r)
        .expect("the pane is on screen");
    let buf = t.backend().buffer().clone();
    let rows = (r.y + 1..r.bottom() - 1)
        .map(|y| {
            let mut row = String::new();
            let mut x = r.x + 1;
            while x < r.right() - 1 {
                let s = buf[(x, y)].symbol();
                row.push_str(s);
                x += u16::try_from(s.width().max(1)).unwrap();
            }
            row
        })
        .collect();
    let c = t.backend().cursor_position();
    (rows, r, (c.x, c.y))
}

/// A stand-down's reason in CJK and emoji wraps in the Journal by screen columns: every
/// word shows whole (the lines were counted in characters, so the first was wider than the
/// pane and `long` read `lo`, its `ng` past the edge).
#[test]
fn a_reason_in_wide_characters_wraps_by_columns_and_loses_no_letter() {
    let mut app = app();
    let reason = "kill — 停止 test 🚨 with a rather long reason that goes on and on past the width of the dialog box to see what happens";
    press(&mut app, KeyCode::Char('s'));
    typ(&mut app, reason);
    press(&mut app, KeyCode::Enter);
    app.set_focus(Pane::Journal);
    for (w, h) in [(100, 30), (160, 48)] {
        let (rows, _, _) = pane_shown(&app, w, h, Pane::Journal);
        let i = rows
            .iter()
            .position(|r| r.starts_with("  reason: "))
            .unwrap_or_else(|| panic!("{w}x{h}:\n{}", rows.join("\n")));
        // The reason's continuation hangs under its text, ten columns in.
        let shown: Vec<&String> = std::iter::once(&rows[i])
            .chain(
                rows[i + 1..]
                    .iter()
                    .take_while(|r| r.starts_with("          ")),
            )
            .collect();
        let text = shown
            .iter()
            .map(|r| r.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(
            words(&text),
            words(&format!("reason: {reason}")),
            "{w}x{h}:\n{}",
            rows.join("\n")
        );
    }
}

/// The editor's cursor and side-scroll count screen columns: a wide character takes two.
/// Typed before the cursor in a long line, the whole insert shows left of the cursor (it
/// was cut after `停止停止`, the `Z` typed last was off the screen and no `»` said the line
/// went on); at the start of the line, the cursor after `名前` is two columns further on
/// for each wide character (it was under `前`).
#[test]
fn the_editor_cursor_and_side_scroll_count_columns() {
    let mut app = app();
    press(&mut app, KeyCode::Char('e'));
    let line = format!(
        "PLAN überlong-名前 budget 0.1R ttl +30m  # {} end",
        "x".repeat(150)
    );
    typ(&mut app, &line);
    press(&mut app, KeyCode::End);
    for _ in 0..5 {
        press(&mut app, KeyCode::Left);
    }
    typ(&mut app, "停止停止停止🚨🚨Z");
    let (rows, r, cursor) = pane_shown(&app, 100, 30, Pane::Editor);
    let row = &rows[0];
    assert!(row.starts_with('«') && row.ends_with('»'), "{row}");
    let at = row
        .find("停止停止停止🚨🚨Z")
        .unwrap_or_else(|| panic!("{row}"));
    let z = unicode_width::UnicodeWidthStr::width(&row[..at]) + 17;
    assert_eq!(
        cursor,
        (r.x + 1 + u16::try_from(z).unwrap(), r.y + 1),
        "the cursor right after the Z:\n{row}"
    );
    press(&mut app, KeyCode::Home);
    for _ in 0..17 {
        press(&mut app, KeyCode::Right);
    }
    let (rows, r, cursor) = pane_shown(&app, 100, 30, Pane::Editor);
    assert!(
        rows[0].starts_with("PLAN überlong-名前 budget"),
        "{}",
        rows[0]
    );
    // 17 characters, 19 columns: `PLAN überlong-` and the two wide ones.
    assert_eq!(cursor, (r.x + 1 + 19, r.y + 1), "{}", rows[0]);
}

/// A tab, BEL and ESC pasted into the editor show as their Control Pictures (as the Journal
/// shows them), one column each, with the error caret and the cursor where they are drawn:
/// the tab drew nothing (its line started at column 0 under an error about a tab at col 1)
/// and `\x07\x1b[31m` drew as `[31m`.
#[test]
fn control_characters_in_the_editor_show_as_pictures() {
    let mut app = app();
    press(&mut app, KeyCode::Char('e'));
    app.paste(
        "PLAN p budget 0.05R ttl +20m\n\tWHEN spot > vwap\n  DO buy 1 +1 C @ fair\u{7}\u{1b}[31m\n",
    );
    app.tick();
    for (w, h) in [(100, 30), (160, 48)] {
        for l in screen(&app, w, h) {
            assert!(!l.chars().any(char::is_control), "{w}x{h}: {l:?}");
        }
        let (rows, _, _) = pane_shown(&app, w, h, Pane::Editor);
        let all = rows.join("\n");
        let tab = rows
            .iter()
            .position(|r| r.starts_with("\u{2409}WHEN spot > vwap"))
            .unwrap_or_else(|| panic!("{w}x{h}:\n{all}"));
        assert!(rows[tab + 1].starts_with("^ code="), "{w}x{h}:\n{all}");
        let bel = rows
            .iter()
            .position(|r| r.contains("fair\u{2407}\u{241b}[31m"))
            .unwrap_or_else(|| panic!("{w}x{h}:\n{all}"));
        // The caret under the BEL's picture (one column a character on this line).
        let col = rows[bel].chars().position(|c| c == '\u{2407}');
        assert_eq!(
            rows[bel + 1].chars().position(|c| c == '^'),
            col,
            "{w}x{h}:\n{all}"
        );
    }
    // The cursor at the end of the tab's line: after its 17 drawn columns.
    press(&mut app, KeyCode::Up);
    press(&mut app, KeyCode::Up);
    press(&mut app, KeyCode::End);
    let (rows, r, cursor) = pane_shown(&app, 100, 30, Pane::Editor);
    let y = rows.iter().position(|l| l.starts_with('\u{2409}')).unwrap();
    assert_eq!(
        cursor,
        (r.x + 1 + 17, r.y + 1 + u16::try_from(y).unwrap()),
        "{}",
        rows.join("\n")
    );
}

/// Every dialog's key hint shows whole at both sizes (SHOW VIEW's read `... SHOW VIEW · esc`
/// with what esc does cut off and no `…`; the Undo dialog is as tall as a long turn needs).
#[test]
fn every_dialogs_key_hint_shows_whole() {
    let mut app = app();
    // A plan to open, and a turn of the person's with a long reason, for the Undo dialog.
    app.human_turn(
        "PLAN p budget 0.05R ttl +20m\n  WHEN spot crosses above 5200\n  DO buy 1 +1 C @ fair-2c\n",
    );
    app.tick();
    assert_eq!(app.snap.plans.len(), 1, "{:?}", app.snap.plans);
    press(&mut app, KeyCode::Char('s'));
    typ(
        &mut app,
        "kill — 停止 test 🚨 with a rather long reason that goes on and on past the width of the dialog box",
    );
    press(&mut app, KeyCode::Enter);
    let dialogs: [(Pane, &[KeyCode], &str); 9] = [
        (
            Pane::Chart,
            &[KeyCode::Char('v')],
            "space toggles · enter routes · esc cancels",
        ),
        (
            Pane::Chart,
            &[KeyCode::Char('s')],
            "reason (enter routes, esc cancels):",
        ),
        (
            Pane::Chart,
            &[KeyCode::Char('g')],
            "tape time HH:MM, HH:MM:SS or HH:MM:SS.mmm (enter seeks):",
        ),
        (
            Pane::Chart,
            &[KeyCode::Char('R')],
            "y / enter: restart · any other key: keep going",
        ),
        (
            Pane::Chart,
            &[KeyCode::Char('u')],
            "y / enter: undo · any other key: keep it",
        ),
        (Pane::Chart, &[KeyCode::Char('?')], "scroll"),
        (
            Pane::Bus,
            &[KeyCode::Char('/')],
            "kind or plan words, all must match (enter filters):",
        ),
        (
            Pane::Bus,
            &[KeyCode::Up, KeyCode::Enter],
            "any other key closes",
        ),
        (
            Pane::Plans,
            &[KeyCode::Enter],
            "y copies into the editor · any key closes",
        ),
    ];
    for (w, h) in [(100, 30), (160, 48)] {
        for (pane, keys, hint) in dialogs {
            app.set_focus(pane);
            for k in keys {
                press(&mut app, *k);
            }
            let s = screen(&app, w, h);
            assert!(app.modal.is_some(), "{keys:?} opens a dialog");
            assert!(
                has(&s, hint),
                "{w}x{h} {keys:?}: no {hint:?}:\n{}",
                s.join("\n")
            );
            press(&mut app, KeyCode::Esc);
            assert!(app.modal.is_none(), "{keys:?}: esc closes it");
        }
    }
}

/// What the trader's `garbage.sh` author wrote, three times over: prose and a fence around
/// something that is not Kestrel.
const GARBAGE: &str = "Sure! Here is my plan:\n```\nBUY 100 SPY AT MARKET NOW!!!\nPLAN yolo budget 99R\n  DO sell 50 -3 C @ mid\n```\n";

/// An agent that wrote no valid turn says what failed: its notice and the Journal name the
/// coded error of its last reply and how far the repair loop went. They read `proposes:
/// nothing (comments only)`, which is an authored pass's, and the Journal `proposes
/// fail-closed pass @ open`; the error was only on the Log's `repair` event. (Since
/// 2026-12-06 it is not proposed in co-pilot: it routes at once.)
#[test]
fn a_failed_agents_proposal_and_journal_say_what_failed() {
    // A fail-closed pass is not proposed since 2026-12-06 (nothing to decide): it routes at
    // once, and its notice (on the footer) and the Journal say what failed.
    let app = desk_with(
        Some(script(&[GARBAGE, GARBAGE, GARBAGE])),
        true,
        None,
        &[],
        ms(9, 30, 1),
    );
    assert!(app.proposal().is_none(), "nothing to decide");
    let said = app
        .snap
        .notices
        .iter()
        .find(|n| n.text.starts_with("house: fail-closed pass"))
        .unwrap_or_else(|| panic!("{:?}", app.snap.notices));
    assert!(
        said.text
            .starts_with("house: fail-closed pass (refused after 2 re-asks: PARSE rule="),
        "{}",
        said.text
    );
    assert_eq!(said.level, NoticeLevel::Error);
    assert!(!said.text.contains("comments only"), "{}", said.text);
    let s = screen(&app, 160, 48);
    let journal = s.join("\n");
    assert!(
        has(&s, "  refused after 2 re-asks: PARSE rule="),
        "the Journal says what failed:\n{journal}"
    );
    let row = &agent_rows(&app)[0];
    assert_eq!(row.label(), "fail-closed pass @ wake open after 2 re-asks");
    assert!(
        row.failure
            .as_deref()
            .is_some_and(|f| f.starts_with("refused after 2 re-asks: PARSE rule=")),
        "{:?}",
        row.failure
    );
    let s = screen(&app, 160, 48);
    assert!(
        has(&s, "  refused after 2 re-asks: PARSE rule="),
        "{}",
        s.join("\n")
    );
}

/// A reply refused unread for its size is said as `reply too large: N bytes > 262144`
/// (not `nothing (comments only)`), and its tokens are an estimate of the whole reply, a
/// quarter of its bytes, labelled `~` in the Tokens pane: the `repair` event said `tokens:
/// 9489024`, the reply's bytes, and the Tokens pane counted the 4 KiB kept of it.
#[test]
fn an_oversized_reply_says_it_was_too_large_and_is_charged_an_estimate() {
    let huge = "# thinking very hard about the tape\n".repeat(9_000);
    let n = huge.len();
    assert!(n > kestrel_desk::limits::MAX_REPLY_BYTES);
    let mut app = desk_with(Some(script(&[&huge])), true, None, &[], ms(9, 30, 1));
    // Not proposed (a fail-closed pass routes at once in co-pilot): its notice says what
    // failed.
    assert!(app.proposal().is_none(), "nothing to decide");
    let want = format!(
        "fail-closed pass (refused, token budget spent: reply too large: {n} bytes > 262144)"
    );
    assert!(
        app.snap.notices.iter().any(|x| x.text.contains(&want)),
        "{:?}",
        app.snap.notices
    );
    let est = n.div_ceil(4);
    let repair = app
        .snap
        .bus
        .iter()
        .find(|l| l.contains("\"type\":\"repair\""))
        .expect("the repair event");
    assert!(repair.contains(&format!("\"tokens\":{est},")), "{repair}");
    let row = &agent_rows(&app)[0];
    assert_eq!(row.oversized, Some(n));
    assert_eq!(row.tokens().map(|t| t.reply), Some(est));
    app.set_focus(Pane::Tokens);
    let s = screen(&app, 160, 48);
    assert!(has(&s, &format!("~{est}")), "{}", s.join("\n"));
}

/// A provider error (the author said nothing: `fail.sh` exits 7) is not a proposal in
/// co-pilot: there is nothing to accept or reject, and it arms nothing. It routes where it
/// arrived, as in autopilot, the tape does not stop for it, and the notice says what failed
/// in the error colour. It paused the tape for `a` / `x` with `proposes: provider-error`.
#[test]
fn a_provider_error_in_copilot_routes_at_once_and_says_what_failed() {
    let spec = live_spec(
        "default",
        20,
        "cat >/dev/null; echo 'model server unreachable: ECONNREFUSED 127.0.0.1:8080' >&2; exit 7",
    );
    let src = desk::tape_source(None).unwrap();
    let mut app = desk::inline_app_with(src, Some(DeskAgent::Live(spec)), true).unwrap();
    assert!(app.copilot());
    wait_for(&mut app, |a| !agent_rows(a).is_empty());
    assert!(app.proposal().is_none(), "nothing to decide");
    let row = &agent_rows(&app)[0];
    assert_eq!(
        row.routed.as_ref().map(|r| r.outcome.name()),
        Some("provider-error")
    );
    let failure = row.failure.clone().unwrap_or_default();
    assert!(
        failure.starts_with("provider error (exit): `")
            && failure.contains("exit status: 7: model server unreachable: ECONNREFUSED"),
        "{failure}"
    );
    assert!(bus_has(&app, "turn") && !bus_has(&app, "turn-rejected"));
    let n = app
        .snap
        .notices
        .iter()
        .rev()
        .find(|n| n.text.contains("provider-error kind=exit"))
        .expect("a notice says what failed");
    assert_eq!(n.level, kestrel_desk::session::owner::NoticeLevel::Error);
    let s = screen(&app, 160, 48);
    assert!(
        has(&s, "ECONNREFUSED"),
        "the Journal says what failed:\n{}",
        s.join("\n")
    );
}

/// A waiting proposal held the footer: the answer to the person's own act (`undone, and
/// back at …`, `nothing to undo`) was never seen. Now the newest message shows in the
/// proposal's place for a few seconds, the proposal's keys kept at the right; then the
/// proposal's line comes back. The proposal's own notice does not take its place.
#[test]
fn a_message_shows_over_a_waiting_proposal_for_a_while() {
    let mut app = desk_with(
        Some(script(&[AGENT_PLAN, AGENT_PLAN, AGENT_PLAN])),
        true,
        None,
        &[],
        ms(9, 31, 0),
    );
    assert!(app.proposal().is_some());
    let footer = |app: &App| screen(app, 100, 30)[29].clone();
    assert!(
        footer(&app).contains("proposes: arms agent-p"),
        "{}",
        footer(&app)
    );
    // `u` with nothing of the person's to take back answers.
    app.message_hold = Duration::from_secs(60);
    press(&mut app, KeyCode::Char('u'));
    let f = footer(&app);
    assert!(f.contains("nothing to undo"), "{f}");
    assert!(
        f.trim_end().ends_with("a accept x reject ? help q quit"),
        "{f}"
    );
    // A turn of the person's while the proposal waits, then `u` `y`: the undo's message.
    app.human_turn(SECOND_PLAN);
    assert!(app.proposal().is_some());
    undo(&mut app);
    assert!(app.proposal().is_some(), "the proposal still waits");
    let f = footer(&app);
    assert!(f.contains("undone: your 09:3"), "{f}");
    // Once the message has been up for its hold, the proposal's line is back.
    app.message_hold = Duration::ZERO;
    assert!(app.tick(), "the footer changes: draw it");
    let f = footer(&app);
    assert!(f.contains("proposes: arms agent-p"), "{f}");
}

/// An undo after seeking back to before the person's turn said `nothing to undo: no turn
/// of yours in this run`, though the turn was recorded and acted again when the tape got
/// there. `u` now offers it (it is ahead of the tape), takes it out of the recorded future,
/// and a reopened session leaves it out too.
#[test]
fn undo_after_seeking_back_takes_back_the_turn_ahead_of_the_tape() {
    let dir = tmp("undo-ahead");
    let path = dir.join("s.jsonl");
    let (t, end) = (ms(10, 40, 0), ms(11, 30, 0));
    let mut app = book_with(Some(path.clone()), &[(t, SECOND_PLAN)], ms(10, 45, 0));
    assert_eq!(names(&app), ["my-dip"]);
    app.send(Command::Seek(ms(10, 10, 0)));
    assert!(app.snap.plans.is_empty());
    press(&mut app, KeyCode::Char('u'));
    let s = screen(&app, 160, 48);
    assert!(
        has(&s, "Take back your 10:40 turn (PLAN my-dip"),
        "{}",
        s.join("\n")
    );
    assert!(has(&s, "ahead of the tape"), "{}", s.join("\n"));
    press(&mut app, KeyCode::Char('y'));
    let msg = app.message.clone().unwrap_or_default();
    assert!(
        msg.starts_with("undone: your 10:40 turn (PLAN my-dip")
            && msg.contains("ahead of the tape: it will not act at 10:40"),
        "{msg}"
    );
    assert_eq!(app.snap.clock, ms(10, 10, 0), "the tape stays where it is");
    assert_eq!(app.editor.text().trim_end(), SECOND_PLAN.trim_end());
    app.send(Command::Seek(end));
    assert!(app.snap.plans.is_empty(), "it did not act at 10:40");
    let none = book_with(None, &[], end).snap.clone();
    assert_eq!(app.snap.hash, none.hash);
    drop(app);
    let saved = saved::open(&path).unwrap();
    assert!(saved.acts.is_empty(), "{:?}", saved.acts);
    let s = kestrel_desk::session::owner::reopen(&path, None).unwrap();
    let mut h = SessionHandle::inline(s);
    h.send(Command::Seek(end));
    assert_eq!(h.latest().hash, none.hash);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A reopened session's live author is never called: its recorded answers act. `A` said
/// `attached, co-pilot: its turns wait for a / x`; it now says what is true, and so does
/// the status line.
#[test]
fn a_reopened_live_author_is_said_to_be_replayed_not_called() {
    let dir = tmp("reopen-live");
    let path = dir.join("s.jsonl");
    let mut app = copilot_desk(slow_plan_author(&dir), Some(path.clone()));
    press(&mut app, KeyCode::Char('a'));
    drop(app);
    let s = kestrel_desk::session::owner::reopen(&path, None).unwrap();
    let (themes, keys, _) = desk::load_config(None);
    let mut app = App::new(SessionHandle::inline(s), themes, keys);
    let s = screen(&app, 200, 48);
    assert!(s[0].contains("replayed, not called"), "{}", s[0]);
    press(&mut app, KeyCode::Char('A'));
    let msg = app.message.clone().unwrap_or_default();
    assert!(
        msg.contains("detached: not asked at wakes")
            && msg.contains("a reopened session's live author is never called"),
        "{msg}"
    );
    press(&mut app, KeyCode::Char('A'));
    let msg = app.message.clone().unwrap_or_default();
    assert!(
        msg.contains(
            "attached, replayed: the live author is not called on a reopened session; its \
             recorded answers act"
        ),
        "{msg}"
    );
    assert!(!msg.contains("wait for"), "{msg}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A command author that counts its asks (a line each in `dir/asks`) and answers the n-th
/// with a plan of its own, `p<n>`, and a wake two minutes on (`w<n>` at 09:31, 09:33, …): a
/// call asked again answers otherwise, and the book shows it.
fn counting_author(dir: &std::path::Path) -> kestrel_desk::session::AuthorSpec {
    let asks = dir.join("asks");
    let sh = dir.join("author.sh");
    std::fs::write(
        &sh,
        format!(
            "cat >/dev/null\nn=$(wc -l < '{a}' 2>/dev/null || echo 0)\nn=$((n + 0))\necho x >> '{a}'\n\
             m=$((31 + 2 * n))\nprintf 'PLAN p%d budget 0.05R ttl +20m\\n  USING signal SPX exec SPY 0dte\\n  \
             WHEN spot crosses above 5300\\n  DO buy 1 +1 C @ fair-2c\\nWAKE w%d WHEN time >= 09:%02d\\n' \
             \"$n\" \"$n\" \"$m\"\n",
            a = asks.display()
        ),
    )
    .unwrap();
    live_spec("default", 20, &format!("sh '{}'", sh.display()))
}

/// A desk with [`counting_author`] seated live in autopilot (saving to `save`), once its
/// first answer (the open's) is in.
fn counting_desk(dir: &std::path::Path, save: Option<std::path::PathBuf>) -> App {
    let settings = Settings {
        agent: Some(DeskAgent::Live(counting_author(dir))),
        ..Settings::default()
    };
    let how = Opening {
        save,
        ..Opening::default()
    };
    let mut app = desk::inline_app_from(desk::tape_source(None).unwrap(), settings, how).unwrap();
    wait_for(&mut app, |a| agent_rows(a).len() == 1);
    app
}

fn asks(dir: &std::path::Path) -> usize {
    std::fs::read_to_string(dir.join("asks"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// After Home the live author was asked again for every wake the record already answered,
/// and its new answers acted where they arrived: the book after Home was another (its hash
/// differed, calls were recorded twice). The record answers them: nobody is asked, nothing
/// is "writing", and the recorded answers act at their points, after Home and after a seek
/// back alike.
#[test]
fn home_and_a_seek_back_replay_a_live_authors_recorded_answers_without_asking_again() {
    let dir = tmp("live-home");
    let path = dir.join("s.jsonl");
    let mut app = counting_desk(&dir, Some(path.clone()));
    // Three more wakes, each answered where the tape stands.
    for (k, to) in [ms(9, 32, 0), ms(9, 34, 0), ms(9, 36, 0)]
        .into_iter()
        .enumerate()
    {
        app.send(Command::Seek(to));
        wait_for(&mut app, |a| agent_rows(a).len() == k + 2);
    }
    app.send(Command::Seek(ms(9, 45, 0)));
    wait_for(&mut app, |a| a.agent().is_some_and(|g| g.waiting.is_none()));
    let first = app.snap.hash.clone();
    let rows = agent_rows(&app).len();
    let asked = asks(&dir);
    assert!(asked >= 4 && rows >= 4, "asked {asked}, rows {rows}");
    assert!(app.snap.plans.iter().any(|p| p.name == "p3"));
    let check = |app: &mut App, what: &str| {
        for to in [ms(9, 31, 30), ms(9, 33, 30), ms(9, 35, 30), ms(9, 45, 0)] {
            app.send(Command::Seek(to));
            let w = app.agent().and_then(|g| g.waiting.clone());
            assert!(w.is_none(), "{what}: writing {w:?} at {to}");
            assert!(
                !screen(app, 200, 48)[0].contains("writing"),
                "{what}: {}",
                screen(app, 200, 48)[0]
            );
        }
        // Time for an author asked by mistake to write its line.
        std::thread::sleep(Duration::from_millis(1500));
        app.tick();
        assert_eq!(asks(&dir), asked, "{what}: the author was asked again");
        assert_eq!(app.snap.hash, first, "{what}: another book");
        assert_eq!(agent_rows(app).len(), rows, "{what}");
    };
    app.set_focus(Pane::Chart);
    press(&mut app, KeyCode::Home);
    assert_eq!(app.snap.clock, app.snap.open);
    check(&mut app, "after Home");
    app.send(Command::Seek(ms(9, 32, 30)));
    check(&mut app, "after a seek back");
    drop(app);
    // Each call is recorded once.
    let saved = saved::open(&path).unwrap();
    let answers = saved
        .acts
        .iter()
        .filter(|(_, _, a)| matches!(a, kestrel_desk::session::owner::Act::Agent(_)))
        .count();
    assert_eq!(answers, rows, "{:?}", saved.acts);
    let _ = std::fs::remove_dir_all(&dir);
}

/// After Home, the person's new act drops the recorded future: the call out whose answer
/// went with it is asked (it would otherwise be out for good, every later wake suppressed).
#[test]
fn a_new_act_after_home_asks_the_call_whose_recorded_answer_it_dropped() {
    let dir = tmp("live-branch");
    let mut app = counting_desk(&dir, None);
    app.send(Command::Seek(ms(9, 35, 0)));
    wait_for(&mut app, |a| agent_rows(a).len() == 2);
    let asked = asks(&dir);
    // Back to 09:31:30: the 09:31 wake is out, its answer recorded at 09:35.
    app.send(Command::Seek(ms(9, 31, 30)));
    assert!(app.agent().is_some_and(|g| g.waiting.is_none()));
    app.human_turn(MINE);
    wait_for(&mut app, |a| agent_rows(a).len() == 2);
    assert_eq!(asks(&dir), asked + 1, "the dropped answer's call is asked");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A proposal still waiting at the close was recorded as `unanswered` (the agent's answer
/// lost) and nothing was said; so was one the person detached the agent over. It is
/// rejected with its outcome, by `close` / `detached`, and the footer says so.
#[test]
fn a_proposal_undecided_at_the_close_or_a_detach_keeps_its_outcome_and_is_said() {
    let src = desk::tape_source(None).unwrap();
    let mut app = desk::inline_app_with(src.clone(), Some(script(&[AGENT_PLAN])), true).unwrap();
    app.send(Command::Seek(ms(9, 31, 0)));
    assert!(app.proposal().is_some());
    app.send(Command::Seek(ms(23, 0, 0)));
    assert!(app.snap.ended);
    assert!(
        app.snap
            .bus
            .iter()
            .any(|l| l.contains("\"type\":\"turn-rejected\"")
                && l.contains("\"by\":\"close\"")
                && l.contains("\"outcome\":\"supersede\"")),
        "{:?}",
        app.snap.bus
    );
    let m = app.message.clone().unwrap_or_default();
    assert_eq!(
        m,
        "house's 09:30 proposal (arms agent-p) was not decided: rejected at the close"
    );
    // Its reply is on the Bus before the rejection (since 2026-12-06), and the Journal
    // keeps what it proposed.
    let rejected = app
        .snap
        .bus
        .iter()
        .position(|l| l.contains("\"type\":\"turn-rejected\"") && l.contains("\"by\":\"close\""))
        .unwrap();
    assert!(
        app.snap.bus[rejected - 1].contains("\"type\":\"repair\""),
        "{}",
        app.snap.bus[rejected - 1]
    );
    assert!(
        agent_rows(&app)
            .iter()
            .any(|t| t.label() == "supersede rejected (close): arms agent-p"),
        "{:?}",
        agent_rows(&app)
            .iter()
            .map(|t| t.label())
            .collect::<Vec<_>>()
    );
    // Detached over it.
    let mut app = desk::inline_app_with(src, Some(script(&[AGENT_PLAN])), true).unwrap();
    app.send(Command::Seek(ms(9, 31, 0)));
    assert!(app.proposal().is_some());
    press(&mut app, KeyCode::Char('A'));
    assert!(!app.agent_attached());
    assert!(
        app.snap
            .bus
            .iter()
            .any(|l| l.contains("\"by\":\"detached\"") && l.contains("\"outcome\":\"supersede\"")),
        "{:?}",
        app.snap.bus
    );
    let m = app.message.clone().unwrap_or_default();
    assert!(
        m.contains("house detached")
            && m.contains(
                "house's 09:30 proposal (arms agent-p) was not decided: rejected at the detach"
            ),
        "{m}"
    );
}

/// A reopened session's live author is not called: once the person acts, its later wakes
/// went to `nobody` one Journal row each (`unanswered rejected (nobody)`) and nothing else
/// said so. The first such wake says it on the footer, and the Journal says `not asked`.
#[test]
fn a_reopened_live_authors_unasked_wake_is_said_once_and_not_called_unanswered() {
    let dir = tmp("reopen-nobody");
    let path = dir.join("s.jsonl");
    let reply = dir.join("reply.txt");
    std::fs::write(
        &reply,
        format!("{AGENT_PLAN}WAKE check WHEN time >= 09:40\nWAKE again WHEN time >= 09:50\n"),
    )
    .unwrap();
    let spec = live_spec(
        "default",
        20,
        &format!("cat >/dev/null; cat '{}'", reply.display()),
    );
    let mut app = copilot_desk(spec, Some(path.clone()));
    press(&mut app, KeyCode::Char('a'));
    drop(app);
    let s = kestrel_desk::session::owner::reopen(&path, None).unwrap();
    let (themes, keys, _) = desk::load_config(None);
    let mut app = App::new(SessionHandle::inline(s), themes, keys);
    app.human_turn(MINE);
    app.send(Command::Seek(ms(9, 45, 0)));
    let m = app.message.clone().unwrap_or_default();
    assert!(
        m.starts_with("the agent is replayed from the record, not called: ")
            && m.contains("wake check 09:40"),
        "{m}"
    );
    app.message = None;
    app.send(Command::Seek(ms(9, 55, 0)));
    assert!(app.message.is_none(), "said once: {:?}", app.message);
    let labels: Vec<String> = agent_rows(&app).iter().map(|t| t.label()).collect();
    assert!(
        labels
            .iter()
            .filter(|l| *l == "not asked (replayed, not called)")
            .count()
            == 2,
        "{labels:?}"
    );
    assert!(
        !labels.iter().any(|l| l.contains("unanswered")),
        "{labels:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `u` after the person's turn and an accept of the agent's proposal took back both without
/// a word: the dialog named only the person's turn, and the documented `undone, and back
/// at …` never showed over the proposal that came back. The dialog names the agent's turn
/// that goes with it, and the message shows over the proposal.
#[test]
fn undo_takes_back_the_accept_after_a_turn_first_and_says_so_over_the_proposal() {
    let src = desk::tape_source(None).unwrap();
    let mut app = desk::inline_app_with(src, Some(script(&[AGENT_PLAN])), true).unwrap();
    app.send(Command::Seek(ms(9, 31, 0)));
    assert!(app.proposal().is_some());
    app.human_turn(MINE);
    press(&mut app, KeyCode::Char('a'));
    assert!(app.proposal().is_none());
    // The accept is the person's last act: `u` takes it back first (before 2026-12-06 it
    // went with the turn, and a reject could not be taken back at all).
    press(&mut app, KeyCode::Char('u'));
    let s = screen(&app, 160, 48);
    let dialog = dialog_text(&s);
    assert!(
        dialog.contains("Take back your accept of house's supersede @ wake open (decided 09:31)?"),
        "{dialog}"
    );
    assert!(
        dialog.contains("the proposal waits for you again"),
        "{dialog}"
    );
    press(&mut app, KeyCode::Char('y'));
    assert!(app.proposal().is_some(), "the proposal comes back");
    let m = app.message.clone().unwrap_or_default();
    assert!(m.starts_with("undone, and back at 09:31"), "{m}");
    assert!(app.message_over_proposal());
    let s = screen(&app, 160, 48);
    assert!(
        s.last()
            .is_some_and(|f| f.contains("undone, and back at 09:31")),
        "{}",
        s.join("\n")
    );
    assert!(names(&app).contains(&"mine".to_string()), "the turn stays");
    // Then the turn: nothing of the agent's is recorded after it now.
    press(&mut app, KeyCode::Char('u'));
    let s = screen(&app, 160, 48);
    assert!(
        has(&s, "Take back your 09:31 turn (armed mine)?"),
        "{}",
        s.join("\n")
    );
    assert!(!has(&s, "With it go"), "{}", s.join("\n"));
}

/// `x` (or `a`) was final: `u` said `nothing to undo: no turn of yours in this run`. The
/// decision is the person's act: `u` takes it back, the session goes back to where it was
/// decided and the proposal waits again; decided the other way, the book is the one a
/// session decided so from the start would give, and a reopened session file agrees.
#[test]
fn undo_takes_back_a_reject_or_an_accept_and_the_proposal_waits_again() {
    let dir = tmp("undo-decision");
    let path = dir.join("s.jsonl");
    let at = ms(9, 31, 0);
    let mut app = desk_with(
        Some(script(&[AGENT_PLAN])),
        true,
        Some(path.clone()),
        &[],
        at,
    );
    assert!(app.proposal().is_some());
    let waiting = app.snap.hash.clone();
    press(&mut app, KeyCode::Char('x'));
    assert!(app.proposal().is_none());
    press(&mut app, KeyCode::Char('u'));
    let s = screen(&app, 100, 30);
    assert!(
        has(&s, "Take back your reject of house's supersede"),
        "{}",
        s.join("\n")
    );
    press(&mut app, KeyCode::Char('n'));
    assert!(app.proposal().is_none(), "any other key keeps it");
    undo(&mut app);
    assert!(app.proposal().is_some(), "the proposal waits again");
    assert_eq!(app.snap.clock, at);
    assert_eq!(app.snap.hash, waiting, "the book before the reject");
    // What to do next first, over the proposal, at the narrowest size.
    let s = screen(&app, 100, 30);
    assert!(
        s[29].contains("undone, and back at 09:31: the proposal waits for you again"),
        "{}",
        s[29]
    );
    // Accepted this time, the book is a direct accept's.
    press(&mut app, KeyCode::Char('a'));
    let mut direct = desk_with(Some(script(&[AGENT_PLAN])), true, None, &[], at);
    press(&mut direct, KeyCode::Char('a'));
    app.send(Command::Seek(ms(10, 30, 0)));
    direct.send(Command::Seek(ms(10, 30, 0)));
    assert_eq!(app.snap.hash, direct.snap.hash);
    assert!(names(&app).contains(&"agent-p".to_string()));
    // And the accept too, from later on the tape: back where it was decided.
    undo(&mut app);
    assert_eq!(app.snap.clock, at);
    assert!(app.proposal().is_some());
    assert!(!names(&app).contains(&"agent-p".to_string()));
    press(&mut app, KeyCode::Char('x'));
    app.send(Command::Seek(ms(10, 30, 0)));
    let last = app.snap.clone();
    drop(app);
    // The file holds one decision, the last reject; reopened, the same book.
    let saved = saved::open(&path).unwrap();
    assert_eq!(saved.acts.len(), 1, "{:?}", saved.acts);
    let again = reopened(&path);
    assert_eq!((again.clock, &again.hash), (last.clock, &last.hash));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A live author's accept taken back: its recorded proposal waits again (the author is not
/// asked again), and the session file keeps the proposal without the accept.
#[test]
fn a_live_authors_accept_taken_back_waits_again_without_asking() {
    let dir = tmp("undo-live-accept");
    let path = dir.join("s.jsonl");
    let mut app = copilot_desk(slow_plan_author(&dir), Some(path.clone()));
    let waiting = app.snap.hash.clone();
    press(&mut app, KeyCode::Char('a'));
    assert!(names(&app).contains(&"agent-p".to_string()));
    undo(&mut app);
    assert!(app.proposal().is_some(), "the proposal waits again");
    assert_eq!(app.snap.hash, waiting);
    assert!(
        app.agent().is_some_and(|a| a.waiting.is_none()),
        "the author is not asked again"
    );
    // The status line still says what its last real answer was sent and got.
    let s = screen(&app, 200, 60);
    assert!(
        s[0].contains("last ") && s[0].contains("re-ask"),
        "{}",
        s[0]
    );
    drop(app);
    let saved = saved::open(&path).unwrap();
    assert!(
        saved.acts.iter().all(|(_, _, a)| matches!(
            a,
            kestrel_desk::session::owner::Act::Agent(
                kestrel_desk::session::agent::AgentAct::Propose { .. }
            )
        )),
        "{:?}",
        saved.acts
    );
    let again = reopened(&path);
    assert_eq!(again.hash, waiting);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A live author in autopilot answers after the person's turn: `u` names the agent's turn
/// that goes with it, and the session goes back to the turn.
#[test]
fn undoing_a_turn_names_the_agents_answers_after_it_and_goes_back_to_it() {
    let dir = tmp("undo-live");
    let mut app = counting_desk(&dir, None);
    app.send(Command::Seek(ms(9, 30, 30)));
    app.human_turn(MINE);
    app.send(Command::Seek(ms(9, 32, 0)));
    wait_for(&mut app, |a| agent_rows(a).len() == 2);
    press(&mut app, KeyCode::Char('u'));
    let s = screen(&app, 160, 48);
    let dialog = dialog_text(&s);
    assert!(
        dialog.contains("Take back your 09:30 turn (armed mine)?"),
        "{dialog}"
    );
    assert!(
        dialog.contains("With it go the agent's turns after it: author.sh's supersede @ wake w0"),
        "{dialog}"
    );
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(app.snap.clock, ms(9, 30, 30), "back at the turn");
    let m = app.message.clone().unwrap_or_default();
    assert!(m.starts_with("undone, and back at 09:30"), "{m}");
    assert!(!names(&app).contains(&"mine".to_string()));
    let _ = std::fs::remove_dir_all(&dir);
}

/// After Home (or a seek back), the person's turns recorded ahead of the tape would be
/// dropped by a new act of theirs: the desk asks first, naming them; `n` keeps them, `y`
/// acts and the drop is said as a warning that stays in the session's notices.
#[test]
fn acting_before_a_turn_ahead_of_the_tape_asks_first_and_warns_of_the_drop() {
    let mut app = book_with(None, &[(ms(10, 0, 0), SECOND_PLAN)], ms(10, 5, 0));
    assert_eq!(names(&app), ["my-dip"]);
    app.set_focus(Pane::Chart);
    press(&mut app, KeyCode::Home);
    assert_eq!(app.snap.clock, app.snap.open);
    assert_eq!(app.snap.turns_ahead.len(), 1, "{:?}", app.snap.turns_ahead);
    press(&mut app, KeyCode::Char('e'));
    typ(
        &mut app,
        "PLAN probe budget 0.05R ttl +20m\nUSING signal SPX exec SPY 0dte\nWHEN spot crosses above 5300\nDO buy 1 +1 C @ fair-2c\nEXIT spot < vwap @ fair",
    );
    ctrl(&mut app, 's');
    let s = screen(&app, 100, 30);
    assert!(
        has(&s, "This drops your 10:00 turn (PLAN my-dip"),
        "{}",
        s.join("\n")
    );
    assert!(has(&s, "y / enter"), "{}", s.join("\n"));
    // Any other key keeps the turn ahead, and the draft.
    press(&mut app, KeyCode::Char('n'));
    assert!(app.modal.is_none());
    assert_eq!(app.snap.turns_ahead.len(), 1);
    assert!(app.turn_rows().is_empty());
    assert!(app.editor.text().starts_with("PLAN probe"));
    // Asked again, yes: the turn acts, the one ahead is dropped with a warning.
    ctrl(&mut app, 's');
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(names(&app), ["probe"]);
    assert!(app.snap.turns_ahead.is_empty());
    let msg = app.message.clone().unwrap_or_default();
    assert!(
        msg.contains("dropped your 10:00 turn (PLAN my-dip"),
        "{msg}"
    );
    assert_eq!(app.message_level(), NoticeLevel::Warn);
    assert!(
        app.snap
            .notices
            .iter()
            .any(|n| n.level == NoticeLevel::Warn && n.text.contains("dropped your 10:00 turn")),
        "{:?}",
        app.snap.notices
    );
    app.send(Command::Seek(ms(10, 30, 0)));
    assert!(
        !names(&app).contains(&"my-dip".to_string()),
        "the dropped turn does not act at 10:00: {:?}",
        names(&app)
    );
}

/// At the tape's end, play and the steps have nothing to do: the footer says so, and what
/// does (Home, R).
#[test]
fn play_and_steps_at_the_tapes_end_say_it_has_ended() {
    let mut app = app();
    app.send(Command::Seek(ms(15, 59, 50)));
    app.send(Command::Speed(kestrel_desk::session::Speed::Max));
    app.send(Command::Play);
    for _ in 0..100_000 {
        if app.snap.ended {
            break;
        }
        app.send(Command::Tick(Duration::from_millis(10)));
    }
    assert!(app.snap.ended);
    for key in [' ', '.', '>'] {
        app.message = None;
        press(&mut app, KeyCode::Char(key));
        let msg = app.message.clone().unwrap_or_default();
        assert_eq!(
            msg, "tape ended 16:00: R restarts, home (chart) back to the open",
            "{key}"
        );
        // Whole on the footer at 100x30 (it was cut before "R restarts").
        let s = screen(&app, 100, 30);
        assert!(has(&s, &msg), "{}", s.join("\n"));
    }
}

/// The empty Plans pane says, in a whole sentence that wraps in the pane, how a plan gets
/// armed; with nobody in the agent's seat it does not send the person to an agent.
#[test]
fn the_empty_plans_pane_says_a_whole_sentence_and_no_agent_without_one() {
    let mut app = book_with(None, &[], ms(10, 0, 0));
    app.set_focus(Pane::Plans);
    for (w, h) in [(100, 30), (160, 48)] {
        let rows = pane_rows(&app, w, h, Pane::Plans);
        let text = rows.iter().map(|r| r.trim()).collect::<Vec<_>>().join(" ");
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            text.starts_with("no plans armed: write one in the Editor (e) and submit it (C-s)."),
            "{w}x{h}: {text:?}\n{}",
            rows.join("\n")
        );
        assert!(!text.contains("agent"), "{w}x{h}: {text}");
    }
}

/// At 100x30 the editor's coded error is readable whole: its area under the text takes the
/// rows it needs, and where it is cut still its last row names F2, which shows it whole.
#[test]
fn the_editors_error_is_readable_whole_at_100x30() {
    let mut app = book_with(None, &[], ms(10, 0, 0));
    press(&mut app, KeyCode::Char('e'));
    typ(
        &mut app,
        "PLAN p budget 0.2R ttl +60m\nUSING signal SPY exec SPY\nWHEN spot > vwap + 1\nDO buy 50 shares @ min(fair, ask)\nTP 1.004x @ fair",
    );
    let whole = desk::editor::message(app.editor.diagnostics()).expect("an error");
    let tail = whole.split_whitespace().last().unwrap().to_string();
    let s = screen(&app, 100, 30);
    // The message ends on screen, or its last row names F2 (and so does the footer).
    assert!(
        has(&s, &tail) || has(&s, "F2 shows it whole"),
        "{tail}:\n{}",
        s.join("\n")
    );
    assert!(has(&s, "F2 error-whole"), "{}", s.join("\n"));
    // F2 shows it whole in a dialog; any other key closes it, the draft kept.
    press(&mut app, KeyCode::F(2));
    let s = screen(&app, 100, 30);
    let flat: String = s
        .iter()
        .map(|l| l.trim_matches(|c: char| c == '│' || c == '║' || c == ' '))
        .collect::<Vec<_>>()
        .join(" ");
    let flat = flat.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("held 60s`)"), "{flat}");
    assert!(has(&s, "Error"), "{}", s.join("\n"));
    press(&mut app, KeyCode::Char('q'));
    assert!(app.modal.is_none());
    assert!(!app.quit);
    assert!(app.editor.text().contains("vwap + 1"));
}

/// The help explains what the Blotter and the Plans show that the person did not write:
/// the `mid` / `model` marks, `lim`, `settled … (close)` and the engine's `STOP`.
#[test]
fn the_help_explains_the_blotters_marks_and_the_engines_stop() {
    let mut app = app();
    press(&mut app, KeyCode::Char('?'));
    let rows: Vec<String> = ui::help_lines(&app, 160)
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect();
    for term in [
        "blotter mid / model",
        "blotter @ 0.44 lim 0.45",
        "blotter settled … (close)",
        "plans  STOP",
    ] {
        assert!(
            rows.iter().any(|r| r.starts_with(term)),
            "{term}:\n{}",
            rows.join("\n")
        );
    }
    let stop = rows.iter().find(|r| r.starts_with("plans  STOP")).unwrap();
    assert!(
        stop.contains("budget stop") && stop.contains("not a clause you wrote"),
        "{stop}"
    );
}

/// A sell of shares with nothing long is refused against `0 long`, not `-0 long`.
#[test]
fn the_naked_sell_refusal_reads_against_0_long() {
    let mut app = book_with(None, &[], ms(10, 50, 0));
    press(&mut app, KeyCode::Char('e'));
    typ(
        &mut app,
        "PLAN flat budget 0.2R ttl +30m\nUSING signal SPY exec SPY\nWHEN spot > 0\nDO sell 200 shares @ bid",
    );
    let m = desk::editor::message(app.editor.diagnostics()).expect("refused");
    assert!(m.contains("rule=naked-sell"), "{m}");
    assert!(m.contains("200 shares short against 0 long"), "{m}");
    assert!(!m.contains("-0"), "{m}");
}

/// The Log's fill rows put the quantity and the price before the instrument's long name: at
/// 160x48 a row cuts the name, not the price (`vwap-flush: buy 100 SPY…` hid it).
#[test]
fn the_logs_fill_rows_keep_the_price_at_160x48() {
    let mut app = readme_app();
    app.send(Command::Seek(ms(10, 32, 0)));
    app.set_focus(Pane::Bus);
    press(&mut app, KeyCode::Char('/'));
    typ(&mut app, "fill");
    press(&mut app, KeyCode::Enter);
    let rows = pane_rows(&app, 160, 48, Pane::Bus);
    let fills: Vec<&String> = rows.iter().filter(|r| r.contains(" fill ")).collect();
    assert!(!fills.is_empty(), "{}", rows.join("\n"));
    for r in fills {
        let at = r.find(" @ ").unwrap_or_else(|| panic!("no price: {r}"));
        let price: String = r[at + 3..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let cents = price.split('.').nth(1).unwrap_or("");
        assert!(cents.len() == 2, "the price cut: {r}");
    }
}

/// keys.toml `play_pause = "p"` with `quit = "p"`: play_pause had no key, the footer still
/// read `p play-pause` and `p` quit the desk. The entry is refused: `space` plays, and the
/// footer and help show the keys each action has.
#[test]
fn a_keys_toml_collision_leaves_the_loser_its_default_key_on_screen_and_in_use() {
    let mut app = app();
    let (keys, warnings) =
        desk::keys::KeyMap::with_overrides(Some("[keys]\nplay_pause = \"p\"\nquit = \"p\"\n"));
    app.keys = keys;
    app.warnings = warnings;
    app.message = desk::config_message(&app.warnings);
    let s = screen(&app, 160, 48);
    assert!(s[47].contains("key=play_pause"), "{}", s[47]);
    assert!(s[47].contains("space play-pause"), "{}", s[47]);
    assert!(!s[47].contains("p play-pause"), "{}", s[47]);
    press(&mut app, KeyCode::Char('?'));
    press(&mut app, KeyCode::End);
    let help = screen(&app, 160, 48).join("\n");
    assert!(
        help.contains("message=\"p\" is also quit's key; kept the default (space)"),
        "{help}"
    );
    assert!(!help.contains("p  play / pause"), "{help}");
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char(' '));
    assert!(app.snap.playing, "space plays");
    assert!(!app.quit);
}

/// keys.toml `play_pause = "x"` took co-pilot reject's default: `x` neither rejected nor
/// played while a proposal waited, and the footer said `x reject`. The entry is refused:
/// `x` rejects.
#[test]
fn a_remap_onto_rejects_key_leaves_x_rejecting_the_agents_proposal() {
    let src = desk::tape_source(None).unwrap();
    let mut app = desk::inline_app_with(src, Some(script(&[AGENT_PLAN])), true).unwrap();
    let (keys, warnings) = desk::keys::KeyMap::with_overrides(Some("[keys]\nplay_pause = \"x\"\n"));
    app.keys = keys;
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    app.send(Command::Seek(ms(9, 31, 0)));
    app.tick();
    assert!(app.proposal().is_some());
    let s = screen(&app, 100, 30);
    assert!(s[29].contains("x reject"), "{}", s[29]);
    press(&mut app, KeyCode::Char('x'));
    assert!(app.proposal().is_none(), "x rejects");
    assert!(bus_has(&app, "turn-rejected"));
}

/// An off-window level's label was `VWAP 5179.81↓` in the axis's 12 columns: the arrow was
/// cut, so VWAP read as a level on the plot's bottom row, and LOD, off the window on the
/// same side, was drawn over. Each now leads with its arrow, on a row of its own.
#[test]
fn off_window_levels_keep_their_arrows_on_rows_of_their_own() {
    let mut app = app();
    app.send(Command::Seek(ms(14, 0, 0)));
    app.tick();
    app.set_focus(Pane::Chart);
    let s = screen(&app, 100, 30);
    let text = s.join("\n");
    assert!(has(&s, "↓VWAP 5179.8"), "{text}");
    assert!(has(&s, "↓LOD 5125.4"), "{text}");
    let row = |needle: &str| s.iter().position(|l| l.contains(needle)).unwrap();
    assert!(
        row("↓VWAP") < row("↓LOD"),
        "VWAP, the higher, is above:\n{text}"
    );
}

/// The footer after an undo named the turn by its first line of code (`undone: your 09:40
/// turn (USING signal SPX exec SPY 0dte)`) where the dialog before it said what the turn did
/// (`armed my-dip`); it now says the same as the dialog.
#[test]
fn the_undo_notice_names_what_the_turn_did_as_the_dialog_does() {
    let text = "# buy the dip\nUSING signal SPX exec SPY 0dte\n\nPLAN my-dip budget 0.2R ttl +30m\n  WHEN spot < vwap held 30s\n  DO buy 1 ATM P @ min(fair, mid)\n";
    let mut app = book_with(None, &[(ms(9, 40, 0), text)], ms(10, 0, 0));
    assert_eq!(names(&app), ["my-dip"]);
    press(&mut app, KeyCode::Char('u'));
    let s = screen(&app, 100, 30);
    assert!(
        has(&s, "Take back your 09:40 turn (armed my-dip)?"),
        "{}",
        s.join("\n")
    );
    press(&mut app, KeyCode::Char('y'));
    let m = app.message.clone().unwrap_or_default();
    assert!(
        m.starts_with("undone: your 09:40 turn (armed my-dip); its text is back in the editor"),
        "{m}"
    );
}

/// At 80x24 the Plans pane (35 columns inside) cut the ttl mid-time (`10:5…` for
/// `10:51:30`) and every name to three letters, so the person's vwap-flush and the agent's
/// vwap-reclaim both read `vwa…`. The budget and then the `by` column give way instead: the
/// ttl stays whole, the names read apart, and the agent's plan says whose it is on its
/// `↳` line.
#[test]
fn the_narrow_plans_pane_keeps_the_ttl_whole_and_the_names_apart_at_80x24() {
    let mut app = readme_app();
    press(&mut app, KeyCode::Char('g'));
    typ(&mut app, "10:30\n");
    app.set_focus(Pane::Plans);
    let rows = pane_rows(&app, 80, 24, Pane::Plans);
    let text = rows.join("\n");
    assert!(has(&rows, "10:51:30"), "the add-on's ttl whole:\n{text}");
    assert!(!text.contains(":…"), "no ttl cut:\n{text}");
    assert!(has(&rows, "ttl"), "{text}");
    // Every plan's row shows a name of its own, and its P&L.
    let names: Vec<&str> = rows[1..]
        .iter()
        .filter(|l| !l.trim_start().starts_with('↳') && !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names.len(), app.snap.plans.len(), "{text}");
    for (i, n) in names.iter().enumerate() {
        assert!(!names[..i].contains(n), "{n} twice:\n{text}");
    }
    assert!(has(&rows, "vwap-f"), "{text}");
    assert!(has(&rows, "vwap-r"), "{text}");
    assert!(has(&rows, "+0.17R"), "{text}");
    // The agent's plan is still said to be the agent's.
    let reclaim = rows
        .iter()
        .position(|l| l.starts_with("vwap-r"))
        .expect("the agent's plan");
    assert!(
        rows[reclaim + 1].contains("by house"),
        "whose it is:\n{text}"
    );
    // The wide table's ttl column is as wide as its widest ttl (it was five: `10:51`).
    let wide = pane_rows(&app, 210, 30, Pane::Plans);
    assert!(has(&wide, "10:51:30"), "{}", wide.join("\n"));
}

/// After a stand-down at 10:30 vwap-flush, vetoed at 09:34, still holds its shares: its
/// note read `↳ VETO worst $516.44 > $4.14 left · stand-d…` at 160x48, the holding the
/// docs promise cut off. What it holds now comes right after why it stood down, ahead of
/// the older veto.
#[test]
fn a_stood_down_plan_says_what_it_holds_before_its_old_veto_at_160x48() {
    let mut app = readme_app();
    press(&mut app, KeyCode::Char('g'));
    typ(&mut app, "10:30\n");
    app.human_turn("STAND-DOWN enough\n");
    let held = app
        .snap
        .book
        .positions
        .iter()
        .find(|x| x.plan == "vwap-flush")
        .expect("vwap-flush still holds its shares")
        .qty;
    let says = format!("stand-down · holds {held:+} SPY shares");
    app.set_focus(Pane::Plans);
    for (w, h) in [(160, 48), (100, 30)] {
        let rows = pane_rows(&app, w, h, Pane::Plans);
        let text = rows.join("\n");
        let at = rows
            .iter()
            .position(|l| l.starts_with("vwap-f"))
            .unwrap_or_else(|| panic!("{w}x{h}:\n{text}"));
        assert!(rows[at + 1].contains(&says), "{w}x{h}: {says}\n{text}");
        if w == 160 {
            assert!(
                rows[at + 1].contains("VETO"),
                "{w}x{h}: the veto still shows\n{text}"
            );
        }
    }
}

/// With a live author whose command is long (`cmd:/tmp/…/slow.sh`), the status line at
/// 100x30 dropped the whole `author … (writing @ open)` field while it wrote: nothing on
/// screen said the co-pilot was thinking. The field is shortened instead (the script's
/// name, then the state alone), and it counts the wall time the author has been writing.
#[test]
fn a_long_named_authors_writing_state_stays_on_the_status_line_with_its_time() {
    let dir = tmp("status-writing");
    let script = dir.join("slow.sh");
    std::fs::write(&script, "#!/bin/sh\ncat >/dev/null\nsleep 30\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let spec = live_spec("default", 60, &format!("cmd:{}", script.display()));
    let src = desk::tape_source(None).unwrap();
    let mut app = desk::inline_app_with(src, Some(DeskAgent::Live(spec)), false).unwrap();
    app.tick();
    assert!(app.agent().is_some_and(|a| a.waiting.is_some()));
    // Since the night of 2026-12-06 the labels give way to keep the tape's name as well.
    let s = screen(&app, 100, 30);
    assert!(
        s[0].contains("trend-2025-04-09-s1 │") && s[0].contains("│ slow.sh (writing @ open 0s) │"),
        "100x30: {}",
        s[0]
    );
    // Narrower, the state alone stays beside the clock, the play state and the hash.
    let s = screen(&app, 70, 24);
    assert!(s[0].contains("│ writing 0s │"), "70x24: {}", s[0]);
    assert!(s[0].contains("hash"), "70x24: {}", s[0]);
    // The seconds count up, and a new second is a change to draw.
    std::thread::sleep(Duration::from_millis(1100));
    assert!(app.tick(), "a new second is drawn");
    let s = screen(&app, 160, 48);
    let secs: u64 = s[0]
        .split("(writing @ open ")
        .nth(1)
        .and_then(|r| r.split("s)").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("160x48: {}", s[0]));
    assert!(secs >= 1, "160x48: {}", s[0]);
    drop(app);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A desk whose live command author's first reply is refused at once and whose re-ask is
/// answered slowly (30 s), once the re-ask is under way (its script and mark in `dir`).
fn refused_then_slow(dir: &std::path::Path) -> App {
    let script = dir.join("again.sh");
    let count = dir.join("count");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncat >/dev/null\nif [ -f '{c}' ]; then sleep 30; fi\ntouch '{c}'\necho 'PLAN broken budget'\n",
            c = count.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let spec = live_spec("default", 60, &format!("cmd:{}", script.display()));
    let src = desk::tape_source(None).unwrap();
    let mut app = desk::inline_app_with(src, Some(DeskAgent::Live(spec)), false).unwrap();
    wait_for(&mut app, |a| a.agent().is_some_and(|g| g.re_asked == 1));
    app
}

/// While a live author's reply was refused and it was asked again, the status line read only
/// `writing @ open 65s`: nothing said a reply came back and was refused until the whole loop
/// ended. It now counts the re-asks as they happen (`writing @ open 0s · re-ask 1`).
#[test]
fn a_refused_reply_shows_its_re_ask_on_the_status_line_while_the_author_writes_again() {
    let dir = tmp("status-re-ask");
    let app = refused_then_slow(&dir);
    assert!(app.agent().is_some_and(|a| a.waiting.is_some()));
    let s = screen(&app, 160, 48);
    assert!(
        s[0].contains("(writing @ open ") && s[0].contains("s · re-ask 1)"),
        "{}",
        s[0]
    );
    drop(app);
    let _ = std::fs::remove_dir_all(&dir);
}

/// While a live author writes again after a refused reply, the Journal says why the reply
/// was refused (its first coded error, and how many more): until 2026-12-06 only the status
/// line's `· re-ask 1` said anything until the whole loop ended.
#[test]
fn the_journal_says_why_a_reply_was_refused_while_the_author_writes_again() {
    let dir = tmp("journal-re-ask");
    let app = refused_then_slow(&dir);
    let refused = app.agent().map(|a| a.refused.clone()).unwrap_or_default();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].starts_with("code="), "{refused:?}");
    let rows: Vec<String> = desk::ui::journal_lines(&app, 200)
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect();
    assert!(
        rows.iter()
            .any(|r| r.starts_with("reply 1 refused, asked again: code=")),
        "{}",
        rows.join("\n")
    );
    drop(app);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The footer named a live command author by its whole `cmd:` path, which took half the
/// line: at 80x24 `cmd:/tmp/adv-trader/author.… proposes: arms…`, the plan's name cut off.
/// It names it by its short name, as the status line does, so `arms <plan>` shows; and the
/// Editor shows the proposal's Kestrel (read-only) until the person focuses it to write.
#[test]
fn a_live_authors_proposal_names_its_plan_at_80x24_and_shows_its_text() {
    let dir = tmp("footer-short");
    let long = dir.join("a-rather-long-directory-for-the-author-script");
    std::fs::create_dir_all(&long).unwrap();
    let reply = dir.join("reply.txt");
    std::fs::write(&reply, AGENT_PLAN).unwrap();
    let script = long.join("author.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\ncat >/dev/null\ncat '{}'\n", reply.display()),
    )
    .unwrap();
    let spec = live_spec("default", 20, &format!("cmd:sh {}", script.display()));
    let mut app = copilot_desk(spec, None);
    let s = screen(&app, 80, 24);
    let footer = &s[23];
    assert!(
        footer.contains("author.sh proposes: arms agent-p"),
        "{footer}"
    );
    assert!(!footer.contains("cmd:"), "{footer}");
    assert!(
        has(&s, "proposal — a accept · x reject"),
        "{}",
        s.join("\n")
    );
    assert!(has(&s, "PLAN agent-p budget 0.05R"), "{}", s.join("\n"));
    assert!(
        has(
            &screen(&app, 160, 48),
            "proposal from author.sh — a accept · x reject"
        ),
        "the author where there is room"
    );
    assert!(has(&s, "DO buy 1 +1 C @ fair-2c"), "{}", s.join("\n"));
    // Focused, the Editor is the person's again (their draft, or its hint).
    press(&mut app, KeyCode::Char('e'));
    let s = screen(&app, 80, 24);
    assert!(!has(&s, "proposal from"), "{}", s.join("\n"));
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char('a'));
    assert!(app.proposal().is_none());
    let s = screen(&app, 80, 24);
    assert!(!has(&s, "proposal from"), "{}", s.join("\n"));
    // The accepted act's notice names the author as the proposal's did, not by its path.
    let footer = &screen(&app, 160, 48)[47];
    assert!(footer.contains("author.sh: supersede"), "{footer}");
    assert!(!footer.contains("cmd:"), "{footer}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The View's `[plans]` line of a vetoed plan said `done … (WHEN fired 09:31)`: the agent
/// acting on it was never told its order was refused, and sent it again. It now leads with
/// the risk decision, as the Plans pane does, and the ttl reads at its end on the clock.
#[test]
fn the_views_plans_line_says_a_plan_was_vetoed() {
    let tiny = "PLAN tiny budget 0.01R ttl +30m\n  USING signal SPX exec SPY 0dte\n  WHEN spot > 0\n  DO buy 1 +1 C @ ask\n";
    let mut app = book_with(None, &[(ms(9, 31, 0), tiny)], ms(9, 32, 0));
    app.human_turn("SHOW VIEW p budget 400\n  plans\n");
    let frame = app.snap.frame.text.clone();
    let line = frame
        .lines()
        .find(|l| l.starts_with("tiny "))
        .unwrap_or_else(|| panic!("{frame}"));
    assert!(line.contains("ttl 10:01 ("), "{line}");
    assert!(line.contains("(VETO worst $"), "{line}");
    assert!(line.contains(" > $10.00 left · "), "{line}");
}

/// A live author's co-pilot proposal still waiting when the desk quit (or was killed) was
/// not in the session file: reopened, the call was rejected by `nobody`, at another hash,
/// with nothing on screen. The answer is recorded when it arrives (an act `propose`), so
/// the reopened desk shows it waiting, at the same hash, and the person decides it there.
#[test]
fn a_proposal_waiting_at_quit_waits_again_on_reopen() {
    let dir = tmp("reopen-proposal");
    let path = dir.join("s.jsonl");
    let app = copilot_desk(slow_plan_author(&dir), Some(path.clone()));
    let hash = app.snap.hash.clone();
    let clock = app.snap.clock;
    // Killed: nothing more is written.
    drop(app);
    let s = kestrel_desk::session::owner::reopen(&path, None).unwrap();
    let (themes, keys, _) = desk::load_config(None);
    let mut app = App::new(SessionHandle::inline(s), themes, keys);
    app.tick();
    assert_eq!(app.snap.clock, clock);
    assert_eq!(
        app.snap.hash, hash,
        "the reopened desk is where it was left"
    );
    let p = app.proposal().expect("the proposal waits again");
    assert_eq!(p.wake, "open");
    assert!(p.run.turn.kestrel.contains("PLAN agent-p"));
    assert!(!bus_has(&app, "turn-rejected"), "nobody rejected it");
    let s = screen(&app, 100, 30);
    assert!(has(&s, "proposes: arms agent-p"), "{}", s.join("\n"));
    // Decided on the reopened desk, it routes as it would have.
    press(&mut app, KeyCode::Char('a'));
    assert!(app.proposal().is_none());
    assert!(
        names(&app).contains(&"agent-p".to_string()),
        "{:?}",
        names(&app)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// There was no way to start in the light theme: `t` was not saved and there was neither a
/// flag nor a config key. `--theme` (checked before the terminal is taken over) and the
/// config directory's `desk.toml` (`theme = "light"`, which `t` writes) now choose it.
#[test]
fn the_desk_starts_in_the_theme_chosen_by_flag_or_config_and_t_saves_it() {
    let a = args(&["kestrel", "desk", "--theme", "light"]);
    assert_eq!(a.theme.as_deref(), Some("light"));
    assert!(desk::check_open(&a).is_ok());
    let bad = desk::check_open(&args(&["kestrel", "desk", "--theme", "purple"])).unwrap_err();
    assert!(
        bad.text
            .contains("error code=USAGE message=--theme purple: no such theme")
            && bad.text.contains("light"),
        "{}",
        bad.text
    );
    assert_eq!(bad.exit, 1);
    let dir = tmp("theme");
    assert_eq!(desk::configured_theme(Some(&dir)), (None, Vec::new()));
    std::fs::write(dir.join("desk.toml"), "# mine\ntheme = \"light\"\n").unwrap();
    assert_eq!(
        desk::configured_theme(Some(&dir)).0.as_deref(),
        Some("light")
    );
    // `t` saves its choice where the desk was told to, keeping the file's other lines.
    let mut app = book_with(None, &[], ms(9, 31, 0));
    assert!(app.set_theme("light"));
    assert!(!app.set_theme("purple"));
    assert_eq!(app.theme().name, "light");
    app.theme_dir = Some(dir.clone());
    press(&mut app, KeyCode::Char('t'));
    assert_eq!(app.theme().name, "high-contrast");
    let saved = std::fs::read_to_string(dir.join("desk.toml")).unwrap();
    assert!(
        saved.contains("# mine") && saved.contains("theme = \"high-contrast\""),
        "{saved}"
    );
    assert!(
        app.message
            .as_deref()
            .unwrap_or("")
            .contains("next desk starts in it"),
        "{:?}",
        app.message
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `t` replaced the first `theme =` line in `desk.toml` even when it was a table's own key
/// (`[mine]\ntheme = "x"`), and appended a new one below a table header, where TOML reads it
/// as the table's: the next desk started in the old theme. Only a top-level line is replaced,
/// and a new one goes above the first header.
#[test]
fn saving_the_theme_writes_a_top_level_key_beside_tables() {
    let dir = tmp("theme-table");
    std::fs::write(dir.join("desk.toml"), "# mine\n[other]\ntheme = \"kept\"\n").unwrap();
    desk::save_theme(&dir, "light").unwrap();
    let saved = std::fs::read_to_string(dir.join("desk.toml")).unwrap();
    assert_eq!(
        saved,
        "# mine\ntheme = \"light\"\n[other]\ntheme = \"kept\"\n"
    );
    assert_eq!(
        desk::configured_theme(Some(&dir)).0.as_deref(),
        Some("light")
    );
    desk::save_theme(&dir, "dark").unwrap();
    let saved = std::fs::read_to_string(dir.join("desk.toml")).unwrap();
    assert_eq!(
        saved,
        "# mine\ntheme = \"dark\"\n[other]\ntheme = \"kept\"\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two desks started in the same second on one tape chose one session name
/// (`<tape>-<unix seconds>`) and both wrote its file and its Bus file, each at its own
/// offset: a line cut mid-line, NULs spliced, both sessions lost, and neither desk said so.
/// Each file is now created exclusively: the desk that comes second takes `<stem>-2`.
#[test]
fn two_desks_given_one_session_name_write_two_sessions() {
    let dir = tmp("same-second");
    // The name both desks chose (the clock's second is the same for both).
    let name = saved::new_session_path(&dir, "trend-2025-04-09-s1");
    let open = || {
        let how = Opening {
            save: Some(name.clone()),
            ..Opening::default()
        };
        let settings = Settings {
            agent: None,
            ..Settings::default()
        };
        desk::inline_app_from(desk::tape_source(None).unwrap(), settings, how).unwrap()
    };
    let mut a = open();
    let mut b = open();
    let second = name.with_file_name(format!(
        "{}-2.jsonl",
        name.file_stem().unwrap().to_str().unwrap()
    ));
    assert_eq!(a.snap.saving.as_deref(), Some(name.as_path()));
    assert_eq!(b.snap.saving.as_deref(), Some(second.as_path()));
    // The footer names the file created, not the name asked for.
    desk::opening_message(&mut b, &args(&["kestrel"]), Some(&name));
    assert_eq!(
        b.message,
        Some(format!("saving to {}", second.display())),
        "the footer names the file"
    );
    a.send(Command::Seek(ms(9, 40, 0)));
    a.human_turn("STAND-DOWN alpha\n");
    b.send(Command::Seek(ms(10, 5, 0)));
    b.human_turn("STAND-DOWN bravo\n");
    a.send(Command::Seek(ms(10, 0, 0)));
    let (ha, hb) = (a.snap.hash.clone(), b.snap.hash.clone());
    for app in [&mut a, &mut b] {
        let last = app.session.leave();
        assert_eq!(last.save_error, None);
        let said = desk::save_report(true, &last).unwrap().unwrap();
        assert!(said.starts_with("session saved: "), "{said}");
        // The signal watch (a hung-up terminal) says what the quit says of the file.
        let watch = desk::signal_watch_says("SIGHUP", true, &last);
        assert_eq!(
            watch,
            format!(
                "interrupted by SIGHUP: the desk closed as q does ({said}; no terminal to restore)"
            )
        );
        let unsaved = desk::signal_watch_says("SIGHUP", false, &last);
        assert!(!unsaved.contains("saved"), "--no-save: {unsaved}");
    }
    drop((a, b));
    for (path, reason, hash) in [(&name, "alpha", ha), (&second, "bravo", hb)] {
        let s = saved::open(path).unwrap();
        assert_eq!(s.acts.len(), 1, "{path:?}: {:?}", s.acts);
        assert!(format!("{:?}", s.acts[0].2).contains(reason));
        let bus = std::fs::read(saved::bus_path(path, 0)).unwrap();
        assert!(!bus.contains(&0), "{path:?}: NUL bytes in the Bus");
        kestrel_desk::bus::parse_bus(&bus).unwrap();
        assert_eq!(kestrel_desk::bus::hash_bytes(&bus), hash);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The desk's files on a disk that is full: `/dev/full` fails every write with ENOSPC.
#[cfg(target_os = "linux")]
fn on_a_full_disk(_: &std::path::Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new().write(true).open("/dev/full")
}

/// The session file is written, its Bus file is on a full disk.
#[cfg(target_os = "linux")]
fn bus_on_a_full_disk(p: &std::path::Path) -> std::io::Result<std::fs::File> {
    if p.to_string_lossy().contains(".bus-") {
        on_a_full_disk(p)
    } else {
        saved::create_exclusive(p)
    }
}

/// On a full disk the desk's Bus stopped mid-string, its session file lost the `left`
/// record, the footer said nothing and the quit said `session saved`, exit 0. The failed
/// write is now kept: the footer shows it at once, coded, in the error colour (and keeps it
/// there), and the quit says the session was not saved (`code=IO`, exit 1).
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_is_shown_at_once_and_the_quit_says_the_session_was_not_saved() {
    let dir = tmp("full-disk");
    for (create, file) in [
        (bus_on_a_full_disk as saved::CreateFile, "Bus file"),
        (on_a_full_disk, "session file"),
    ] {
        let path = dir.join(format!("{}.jsonl", file.replace(' ', "-")));
        let how = Opening {
            save: Some(path.clone()),
            create: Some(create),
            ..Opening::default()
        };
        let settings = Settings {
            agent: None,
            ..Settings::default()
        };
        let mut app =
            desk::inline_app_from(desk::tape_source(None).unwrap(), settings, how).unwrap();
        app.send(Command::Seek(ms(9, 40, 0)));
        app.tick();
        let e = app
            .snap
            .save_error
            .clone()
            .expect("the failed write is kept");
        assert!(
            e.starts_with(&format!("error code=IO message={file} "))
                && e.contains("No space left on device")
                && e.contains("not saved"),
            "{e}"
        );
        assert_eq!(app.message.as_deref(), Some(e.as_str()));
        assert_eq!(app.message_level(), NoticeLevel::Error);
        assert!(
            has(&screen(&app, 160, 48), "error code=IO"),
            "on the footer"
        );
        // Another message does not hide it for good: once that one is gone, it is back.
        app.message = None;
        app.tick();
        assert_eq!(app.message.as_deref(), Some(e.as_str()));
        let last = app.session.leave();
        let said = desk::save_report(true, &last).unwrap_err();
        assert!(
            said.starts_with("error code=IO message=")
                && said.contains("No space left on device")
                && said.contains("the session was NOT saved"),
            "{said}"
        );
        // A signal the draw loop cannot see (a hung-up terminal): the watch that ends the
        // process says the same, not "session saved" (as it did before 2026-12-06).
        let watch = desk::signal_watch_says("SIGHUP", true, &last);
        assert!(
            watch.starts_with(&said)
                && watch.contains("interrupted by SIGHUP")
                && !watch.contains("session saved"),
            "{watch}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A desk's Bus given to `kestrel agent --author` replays its agent's answers, as before
/// (docs/turns.md): it has no `session-end` when the person left before the close, and its
/// person's acts are not on it to replay, so it is not held to the recording; a warning says
/// so and names the session file that replays the desk's session.
#[test]
fn a_desk_bus_replays_headless_as_its_agents_answers_with_a_warning() {
    let dir = tmp("desk-bus");
    let path = dir.join("s.jsonl");
    let app = desk_with(
        Some(script(&[AGENT_PLAN])),
        false,
        Some(path.clone()),
        &[(ms(10, 0, 0), "STAND-DOWN enough\n")],
        ms(10, 30, 0),
    );
    drop(app);
    let bus = saved::bus_path(&path, 0);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args(["agent", "--tape"])
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tapes/trend-2025-04-09-s1.jsonl"
        ))
        .arg("--author")
        .arg(&bus)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.starts_with(&format!(
            "warning code=DESK-BUS message={} is a desk's Bus",
            bus.display()
        )) && err.contains(&format!("kestrel desk --open {}", path.display())),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `kestrel ARGS` in `cwd`: (exit code, stdout, stderr).
fn kestrel_in(cwd: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A desk as bare `kestrel` opens it (the example plans armed at the open, as the person's
/// turn), the house-style script agent seated, played to `to` and saved in `dir`: the
/// session file and its Bus.
fn desk_with_example_plans(
    dir: &std::path::Path,
    to: Ts,
) -> (std::path::PathBuf, std::path::PathBuf) {
    desk_with_example_plans_and(dir, to, AGENT_PLAN)
}

/// [`desk_with_example_plans`] with the seated script's one reply `agent` (at the open).
fn desk_with_example_plans_and(
    dir: &std::path::Path,
    to: Ts,
    agent: &str,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let path = dir.join("s.jsonl");
    let settings = Settings {
        agent: Some(script(&[agent])),
        ..Settings::default()
    };
    let how = Opening {
        save: Some(path.clone()),
        plans: vec![("examples".into(), desk::DEFAULT_PLANS.into())],
        ..Opening::default()
    };
    let mut app = desk::inline_app_from(desk::tape_source(None).unwrap(), settings, how).unwrap();
    app.send(Command::Seek(to));
    drop(app);
    let bus = saved::bus_path(&path, 0);
    (path, bus)
}

/// The default session's Bus (plans armed at the open: the person's `file` turn, written
/// after its `document-armed`) replays headless and grades, exit 0: before 2026-12-06 both
/// refused it, `error code=REPLAY … the supersede recorded here has no document-armed record
/// after it`. The replay arms the person's documents at its open, as the person's; the desk
/// was left at 11:00, so its hash is not the desk's, and a note after the report says so and
/// why, with the desk's hash.
#[test]
fn a_desk_bus_with_plans_armed_at_the_open_replays_and_grades() {
    let dir = tmp("desk-bus-open-plans");
    let (_, bus) = desk_with_example_plans(&dir, ms(11, 0, 0));
    let bytes = std::fs::read(&bus).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    // The desk's order: the person's document, then their turn.
    let armed = lines
        .iter()
        .position(|l| {
            l.contains("\"type\":\"document-armed\"") && l.contains("\"owner\":\"person\"")
        })
        .expect("the person's document");
    let turn = lines
        .iter()
        .position(|l| l.contains("\"type\":\"turn\"") && l.contains("\"author\":\"file\""))
        .expect("the person's file turn");
    assert!(armed < turn, "{armed} {turn}");
    let tape = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tapes/trend-2025-04-09-s1.jsonl"
    );
    let b = bus.display().to_string();
    let replay = |out: &str| {
        kestrel_in(
            &dir,
            &["agent", "--tape", tape, "--author", &b, "--bus", out],
        )
    };
    let (code, out, err) = replay("r1.jsonl");
    assert_eq!(code, 0, "{err}");
    assert!(
        err.starts_with(&format!(
            "warning code=DESK-BUS message={b} is a desk's Bus"
        )),
        "{err}"
    );
    assert!(
        err.contains("over the 1 document(s) the person armed at the open"),
        "{err}"
    );
    // The person's plans armed at the replay's open as the person's, as the desk armed them
    // (before 2026-12-06 without an owner, and the agent's supersede stood them down): the
    // replay writes the desk's Bus up to where the desk was left, and plays on to the close.
    let r1 = std::fs::read_to_string(dir.join("r1.jsonl")).unwrap();
    let first_armed = r1
        .lines()
        .find(|l| l.contains("\"type\":\"document-armed\""))
        .unwrap();
    assert!(
        first_armed.contains("\"breakout\"") && first_armed.contains("\"owner\":\"person\""),
        "{first_armed}"
    );
    assert!(r1.starts_with(&*text) && r1.len() > text.len(), "{r1}");
    // The note names the desk's hash (the BLAKE3 of its Bus) beside this replay's, and why
    // they differ.
    let desk_hash = blake3::hash(&bytes).to_hex().to_string();
    let note = format!(
        "note: {b}: this replay's hash differs from the desk's (the desk's is {}, the BLAKE3 of the file; this replay's is the report's determinism): the desk's Bus stops where the desk was left, before the close",
        &desk_hash[..12]
    );
    assert!(err.contains(&note), "{err}");
    let replay_hash = blake3::hash(r1.as_bytes()).to_hex().to_string();
    assert_ne!(replay_hash, desk_hash);
    assert!(out.contains(&replay_hash[..12]), "{out}");
    // Two replays of one desk's Bus give one hash.
    let (code, _, err) = replay("r2.jsonl");
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(dir.join("r2.jsonl")).unwrap(), r1);
    // Graded: the agent's turn at the open is the subject; the person's plans are context.
    let tapes = dir.join("tapes");
    std::fs::create_dir_all(&tapes).unwrap();
    std::fs::copy(tape, tapes.join("t.jsonl")).unwrap();
    std::fs::write(
        dir.join("g.kestrel"),
        "GRADE wake open OVER tapes/* FILL strict-cross-v1\n  VS null\n",
    )
    .unwrap();
    let (code, out, err) = kestrel_in(
        &dir,
        &[
            "grade",
            "g.kestrel",
            "--agent",
            &b,
            "--draws",
            "3",
            "--resamples",
            "200",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let g = &v["grades"][0];
    assert_eq!(
        g["grade"], "GRADE wake open OVER tapes/* FILL strict-cross-v1 VS null",
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A desk's Bus the replay cannot honour is refused with a coded error that says why: the
/// person's turn at the open no longer the document armed before it (edited, its hash kept
/// consistent) is `REPLAY rule=replay-hash`, exit 2, for `agent --author` and `grade
/// --agent` alike.
#[test]
fn a_desk_bus_whose_persons_turn_is_not_its_document_is_refused() {
    let dir = tmp("desk-bus-edited");
    let (_, bus) = desk_with_example_plans(&dir, ms(9, 45, 0));
    let text = std::fs::read_to_string(&bus).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let at = lines
        .iter()
        .position(|l| {
            l.contains("\"type\":\"document-armed\"") && l.contains("\"owner\":\"person\"")
        })
        .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&lines[at]).unwrap();
    let edited = format!("{}\n# edited\n", v["text"].as_str().unwrap());
    v["blake3"] = blake3::hash(edited.as_bytes()).to_hex().to_string().into();
    v["text"] = edited.into();
    lines[at] = serde_json::to_string(&v).unwrap();
    let edited_bus = dir.join("edited.bus-0.jsonl");
    std::fs::write(&edited_bus, lines.join("\n") + "\n").unwrap();
    let turn = lines
        .iter()
        .position(|l| l.contains("\"type\":\"turn\"") && l.contains("\"author\":\"file\""))
        .unwrap();
    let b = edited_bus.display().to_string();
    let tape = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tapes/trend-2025-04-09-s1.jsonl"
    );
    let (code, _, err) = kestrel_in(&dir, &["agent", "--tape", tape, "--author", &b]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!(
            "error code=REPLAY rule=replay-hash line={} message={b}: the person's supersede recorded here",
            turn + 1
        )) && err.contains(&format!("is not the document armed at line {}", at + 1)),
        "{err}"
    );
    std::fs::write(
        dir.join("g.kestrel"),
        "GRADE wake open OVER tapes/* FILL strict-cross-v1\n",
    )
    .unwrap();
    let (code, _, err) = kestrel_in(&dir, &["grade", "g.kestrel", "--agent", &b]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with("error code=REPLAY message=")
            && err.contains("the person's supersede recorded here")
            && err.contains("(rule replay-hash)"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A desk's session file given where a Bus is read says what it is and names the Bus beside
/// it, `code=USAGE` (the wrong kind of file), exit 1: before 2026-12-06 `errors report` and
/// `grade --agent` listed the Bus reader's event types (`unknown variant desk-session`), and
/// `agent --author` said `expected {"reply": "..."}`.
#[test]
fn a_desk_session_file_given_as_a_bus_names_the_bus_beside_it() {
    let dir = tmp("desk-session-as-bus");
    let (path, bus) = desk_with_example_plans(&dir, ms(9, 40, 0));
    let p = path.display().to_string();
    let b = bus.display().to_string();
    let tape = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tapes/trend-2025-04-09-s1.jsonl"
    );
    std::fs::write(
        dir.join("g.kestrel"),
        "GRADE wake open OVER tapes/* FILL strict-cross-v1\n",
    )
    .unwrap();
    for (args, give) in [
        (vec!["errors", "report", &p], ""),
        (vec!["grade", "g.kestrel", "--agent", &p], " as --agent"),
        (
            vec!["agent", "--tape", tape, "--author", &p],
            " as --author",
        ),
    ] {
        let (code, _, err) = kestrel_in(&dir, &args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert_eq!(
            err.trim_end(),
            format!(
                "error code=USAGE message={p} is a desk session file, not a Bus: its Bus is {b} beside it: give that{give} (kestrel desk --open {p} replays the session)"
            ),
            "{args:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- What the agent's replies cost and how they failed, on screen ----

/// An OpenAI-compatible server on 127.0.0.1 that streams `reply` to every call and ends
/// with a `usage` of `prompt` / `completion` tokens (at most 16 calls).
fn usage_server(reply: &str, prompt: u64, completion: u64) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let reply = reply.to_string();
    std::thread::spawn(move || {
        for _ in 0..16 {
            let Ok((mut sock, _)) = listener.accept() else {
                return;
            };
            let _ = sock.set_read_timeout(Some(Duration::from_secs(5)));
            let mut buf = Vec::new();
            let mut tmp = [0u8; 8192];
            // The request: its head, then its body by Content-Length.
            let mut want = None;
            while let Ok(n) = sock.read(&mut tmp) {
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&tmp[..n]);
                if want.is_none()
                    && let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n")
                {
                    let head = String::from_utf8_lossy(&buf[..p]).to_lowercase();
                    let len = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    want = Some(p + 4 + len);
                }
                if want.is_some_and(|w| buf.len() >= w) {
                    break;
                }
            }
            let chunk = serde_json::json!({"choices": [{"index": 0, "delta": {"content": reply}, "finish_reason": null}]});
            let usage = serde_json::json!({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}});
            let _ = sock.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n\
                     data: {chunk}\n\n\
                     data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\n\
                     data: {usage}\n\ndata: [DONE]\n\n"
                )
                .as_bytes(),
            );
            let _ = sock.shutdown(std::net::Shutdown::Both);
        }
    });
    format!("http://{addr}/v1")
}

/// The Tokens pane's rows at 160x48, from its title down.
fn tokens_pane(app: &App) -> Vec<String> {
    let s = screen(app, 160, 48);
    let top = s
        .iter()
        .position(|l| l.contains("Tokens (cl100k)"))
        .expect("the Tokens pane is on screen at 160x48");
    // Columns are characters: the box lines are several bytes each.
    let at = s[top].find("Tokens (cl100k)").unwrap_or(0);
    let col = s[top][..at].chars().count().saturating_sub(2);
    s[top..]
        .iter()
        .map(|l| l.chars().skip(col).collect())
        .collect()
}

/// Home while a slow live author wrote: its call ran on to its end (a minute for a local
/// model), and the re-run's ask of the same wake queued behind it, the desk reading
/// `writing` all that time, for an answer that was then dropped as stale. A restart or a
/// rewind abandons the call out (its command's process group is killed, a request
/// dropped), so the re-run's ask starts at once.
#[test]
fn home_abandons_a_live_authors_call_out_and_the_rerun_asks_at_once() {
    let dir = tmp("abandon-call");
    let log = dir.join("starts.log");
    let reply = dir.join("reply.txt");
    std::fs::write(&reply, AGENT_PLAN).unwrap();
    let spec = live_spec(
        "default",
        60,
        &format!(
            "echo start >> '{}'; cat >/dev/null; sleep 30; cat '{}'",
            log.display(),
            reply.display()
        ),
    );
    let src = desk::tape_source(None).unwrap();
    let mut app = desk::inline_app_with(src, Some(DeskAgent::Live(spec)), false).unwrap();
    let starts = || {
        std::fs::read_to_string(&log)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    wait_for(&mut app, |_| starts() == 1);
    let first = std::time::Instant::now();
    assert!(app.agent().is_some_and(|a| a.waiting.is_some()));
    std::thread::sleep(Duration::from_millis(1500));
    app.send(Command::Seek(ms(9, 31, 0)));
    app.send(Command::Restart);
    app.tick();
    // The status line's `writing @ open Ns` counts the new call, not the abandoned one.
    let writing = app.writing_for().expect("the re-run's call is out");
    assert!(
        writing + Duration::from_secs(1) < first.elapsed(),
        "{writing:?} against {:?}",
        first.elapsed()
    );
    // The re-run asks the open wake again, well before the first call's 30 s are up.
    let t = std::time::Instant::now();
    wait_for(&mut app, |_| starts() == 2);
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert!(app.agent().is_some_and(|a| a.waiting.is_some()));
    drop(app);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A co-pilot proposal waiting for the person had no row in the Tokens pane: the model had
/// been sent its prompt and had written its reply (and the provider charges for both), but
/// the pane and its cost said nothing until the person decided. It reads `waiting` with
/// what was sent and got and its Kestrel tokens, counted in the total; once accepted, the
/// same figures are the routed turn's row, counted once.
#[test]
fn a_waiting_proposal_has_its_tokens_row_and_is_counted_once_when_decided() {
    let base = usage_server(AGENT_PLAN, 1234, 78);
    let spec = live_spec("m", 10, &base);
    let src = desk::tape_source(None).unwrap();
    let mut app = desk::inline_app_with(src, Some(DeskAgent::Live(spec)), true).unwrap();
    wait_for(&mut app, |a| a.proposal().is_some());
    let pane = tokens_pane(&app);
    let text = pane.join("\n");
    let row = pane
        .iter()
        .find(|l| l.contains(" waiting "))
        .unwrap_or_else(|| panic!("no waiting row: {text}"));
    assert!(
        row.contains("m ") && row.contains("1234*") && row.contains("78*"),
        "{text}"
    );
    let kestrel = app
        .proposal()
        .and_then(|p| p.tokens.as_ref())
        .and_then(|t| t.kestrel)
        .expect("the proposal's Kestrel tokens");
    assert!(row.contains(&format!(" {kestrel} ")), "{text}");
    let total = pane
        .iter()
        .find(|l| l.trim_start_matches('│').starts_with("total"))
        .unwrap_or_else(|| panic!("no total row: {text}"));
    // Sent is the model's alone (the person's plans at the open were sent to nobody).
    assert!(total.contains("1234"), "{text}");
    press(&mut app, KeyCode::Char('a'));
    assert!(app.proposal().is_none());
    let pane = tokens_pane(&app);
    let text = pane.join("\n");
    assert!(!has(&pane, " waiting "), "{text}");
    let row = pane
        .iter()
        .find(|l| l.contains("supersede") && l.contains("1234*"))
        .unwrap_or_else(|| panic!("no routed row: {text}"));
    assert!(
        row.contains("78*") && row.contains(&format!(" {kestrel} ")),
        "{text}"
    );
    let total = pane
        .iter()
        .find(|l| l.trim_start_matches('│').starts_with("total"))
        .unwrap_or_else(|| panic!("no total row: {text}"));
    assert!(total.contains("1234") && !total.contains("2468"), "{text}");
}

/// At 160x48 a live author named by its URL took the status line's room from the tape's
/// name and the mode (`│ 09:30:05 │ ▶ play 1x │ author m @ http://127.0.0.1:… (autopilot last
/// …)`): the tape a trader is watching was not on the line. The URL gives way first; the
/// author's short name and its last answer's figures stay, and at 200x60 all of it shows.
#[test]
fn a_url_authors_address_gives_way_to_the_tapes_name_on_the_status_line() {
    let base = usage_server(AGENT_PLAN, 1234, 78);
    let spec = live_spec("m", 10, &base);
    let src = desk::tape_source(None).unwrap();
    let mut app = desk::inline_app_with(src, Some(DeskAgent::Live(spec)), false).unwrap();
    wait_for(&mut app, |a| !agent_rows(a).is_empty());
    let tape = format!("tape {}", app.snap.tape_name);
    let s = screen(&app, 160, 48);
    assert!(s[0].contains(&tape), "160x48: {}", s[0]);
    assert!(
        s[0].contains("author m (autopilot last "),
        "160x48: {}",
        s[0]
    );
    assert!(
        s[0].contains("sent 1234 got 78 tok 0 re-ask"),
        "160x48: {}",
        s[0]
    );
    assert!(!s[0].contains("http://"), "160x48: {}", s[0]);
    assert!(s[0].contains("hash "), "160x48: {}", s[0]);
    let s = screen(&app, 200, 60);
    assert!(
        s[0].contains(&tape) && s[0].contains("mode sim") && s[0].contains("http://127.0.0.1"),
        "200x60: {}",
        s[0]
    );
}

#[test]
fn a_providers_usage_is_what_the_status_line_and_the_tokens_pane_say_was_sent_and_got() {
    let base = usage_server(AGENT_PLAN, 1234, 78);
    let spec = live_spec("m", 10, &base);
    let src = desk::tape_source(None).unwrap();
    let mut app = desk::inline_app_with(src, Some(DeskAgent::Live(spec)), false).unwrap();
    wait_for(&mut app, |a| !agent_rows(a).is_empty());
    let s = screen(&app, 200, 60);
    // It said 0 tok (or its own cl100k count) where the provider reported 1234 in, 78 out.
    assert!(s[0].contains("sent 1234 got 78 tok 0 re-ask"), "{}", s[0]);
    let pane = tokens_pane(&app);
    let text = pane.join("\n");
    assert!(has(&pane, "sent") && has(&pane, "got"), "{text}");
    assert!(has(&pane, "1234*") && has(&pane, "78*"), "{text}");
    // The prompt side docs/desk.md promises, under the outcome counts that wrap.
    assert!(has(&pane, "prompt: card"), "{text}");
    assert!(has(&pane, "the provider's usage"), "{text}");
}

#[test]
fn without_usage_the_prompt_is_the_desks_estimate_and_a_price_gives_a_cost() {
    let dir = tmp("estimate");
    let spec = slow_plan_author(&dir);
    let src = desk::tape_source(None).unwrap();
    let mut app = desk::inline_app_with(src, Some(DeskAgent::Live(spec)), false).unwrap();
    app.price = Some((3.0, 15.0));
    wait_for(&mut app, |a| !agent_rows(a).is_empty());
    let row = &agent_rows(&app)[0];
    let toks = app.agent().and_then(|a| a.last_answer).unwrap().tokens;
    // The estimate: the card and the View it was sent.
    let sent = app.prompt_tokens.0 + row.view_tokens;
    assert!(
        row.view_tokens > 0,
        "the View's tokens are kept with the turn"
    );
    let s = screen(&app, 200, 60);
    assert!(
        s[0].contains(&format!("sent ~{sent} got {toks} tok 0 re-ask")),
        "{}",
        s[0]
    );
    let pane = tokens_pane(&app);
    assert!(has(&pane, &format!("~{sent}")), "{}", pane.join("\n"));
    let usd = (sent as f64 * 3.0 + toks as f64 * 15.0) / 1e6;
    assert!(
        has(&pane, &format!("agent cost ~${usd:.4}")),
        "{}",
        pane.join("\n")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A command author that writes a reply that never parses: every ask is refused, re-asked.
fn broken_author(dir: &std::path::Path) -> kestrel_desk::session::AuthorSpec {
    let reply = dir.join("broken.txt");
    std::fs::write(&reply, "PLAN broken budget\n  this is not kestrel\n").unwrap();
    live_spec(
        "default",
        20,
        &format!("cat >/dev/null; cat '{}'", reply.display()),
    )
}

/// A live author whose every reply is refused was proposed to the person as a fail-closed
/// pass, the tape held for a choice that armed nothing either way, and rejected its replies
/// left the Bus. Since 2026-12-06 it routes at once in co-pilot, as in autopilot: its
/// attempts (text, coded errors, tokens) are on the Bus, and the Tokens pane counts them.
#[test]
fn a_fail_closed_answer_in_copilot_routes_at_once_with_its_replies_on_the_bus() {
    let dir = tmp("failclosed");
    let settings = Settings {
        agent: Some(DeskAgent::Live(broken_author(&dir))),
        copilot: true,
        ..Settings::default()
    };
    let mut app = desk::inline_app_from(
        desk::tape_source(None).unwrap(),
        settings,
        Opening::default(),
    )
    .unwrap();
    wait_for(&mut app, |a| !agent_rows(a).is_empty());
    assert!(app.copilot());
    assert!(app.proposal().is_none(), "nothing to decide");
    let row = agent_rows(&app)[0].clone();
    assert!(row.attempts > 1, "the loop re-asked");
    let repairs = app
        .snap
        .bus
        .iter()
        .filter(|l| l.contains("\"type\":\"repair\""))
        .count();
    assert_eq!(repairs, row.attempts, "every attempt is on the Bus");
    let spent = row.spend.tokens;
    assert!(spent > 0);
    let pane = tokens_pane(&app);
    let text = pane.join("\n");
    assert!(has(&pane, &format!("repairs {}", row.repairs())), "{text}");
    let r = pane
        .iter()
        .find(|l| l.contains("invalid") && !l.contains("authored"))
        .unwrap_or_else(|| panic!("a row for the fail-closed pass: {text}"));
    assert!(r.contains(&spent.to_string()), "{r}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failing_provider_stays_on_the_status_line_until_an_answer_comes_through() {
    let spec = live_spec("m", 1, "https://127.0.0.1:9/v1");
    let src = desk::tape_source(None).unwrap();
    let mut app = desk::inline_app_with(src, Some(DeskAgent::Live(spec)), false).unwrap();
    wait_for(&mut app, |a| !agent_rows(a).is_empty());
    for (w, h) in [(100, 30), (160, 48)] {
        let s = screen(&app, w, h);
        assert!(
            s[0].contains("provider-error connect ×1"),
            "{w}x{h}: {}",
            s[0]
        );
        assert!(
            !s[0].contains("0 tok"),
            "not a healthy answer's figures: {}",
            s[0]
        );
    }
    // In the error colour.
    let mut t = Terminal::new(TestBackend::new(160, 48)).unwrap();
    t.draw(|f| ui::draw(f, &app)).unwrap();
    let buf = t.backend().buffer().clone();
    let row: String = (0..160).map(|x| buf[(x, 0)].symbol().to_string()).collect();
    let x = row.find("provider-error").unwrap();
    let x = u16::try_from(row[..x].chars().count()).unwrap();
    assert_eq!(buf[(x, 0)].fg, app.theme().state_error());
    // A refused connection sent nothing: no prompt estimate, and with a price no cost.
    app.price = Some((3.0, 15.0));
    let pane = tokens_pane(&app);
    let text = pane.join("\n");
    let row = pane
        .iter()
        .find(|l| l.contains("provider-e"))
        .unwrap_or_else(|| panic!("a row for the provider error: {text}"));
    assert!(!row.contains('~'), "nothing is known sent: {row}");
    assert!(!has(&pane, "agent cost"), "{text}");
}

#[test]
fn a_budget_under_half_a_hundredth_of_r_reads_as_written() {
    let doc = "PLAN tiny budget 0.003R ttl 15:00\n  USING signal SPY exec SPY\n  WHEN spot > vwap held 30s AND NOT phase open\n  DO buy 10 shares @ ask\n  TP 1.002x @ ask\n  EXIT spot < lod @ bid\n";
    let dir = tmp("tiny");
    let f = dir.join("tiny.kestrel");
    std::fs::write(&f, doc).unwrap();
    let a = args(&[
        "kestrel",
        "--plans",
        f.to_str().unwrap(),
        "--no-agent",
        "--no-save",
    ]);
    let mut app = App::new(opened(&a, None), Vec::new(), Default::default());
    app.tick();
    app.send(Command::Seek(ms(10, 0, 0)));
    for (w, h) in [(100, 30), (160, 48), (200, 60)] {
        let s = screen(&app, w, h);
        if has(&s, "tiny") && has(&s, "pnl/budget") {
            assert!(has(&s, "/0.003R"), "{w}x{h}: {}", s.join("\n"));
        }
        assert!(!has(&s, "/0.00R"), "{w}x{h}: {}", s.join("\n"));
    }
    assert!(
        app.snap.frame.text.contains("/0.003R"),
        "{}",
        app.snap.frame.text
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_footer_gives_a_long_message_its_room_before_the_panes_keys() {
    let mut app = app();
    let path =
        "/tmp/tmp.5Y0wofjVo6/.local/share/kestrel/sessions/trend-2025-04-09-s1-1796526389.jsonl";
    app.message = Some(format!("saving to {path}"));
    // At 160x48 the path is whole (it read `saving to…` while the keys kept their room).
    let s = screen(&app, 160, 48);
    assert!(s[47].contains(path), "{}", s[47]);
    assert!(s[47].contains("? help q quit"), "{}", s[47]);
    // Where it cannot be whole, the file is named without its directory.
    let s = screen(&app, 100, 30);
    assert!(
        s[29].contains("saving to trend-2025-04-09-s1-1796526389.jsonl"),
        "{}",
        s[29]
    );
}

#[test]
fn the_narrow_plans_pane_drops_budget_and_by_before_it_cuts_a_name() {
    let base = usage_server(AGENT_PLAN, 10, 10);
    let spec = live_spec("default", 10, &base);
    let src = desk::tape_source(None).unwrap();
    let mut app = desk::inline_app_with(src, Some(DeskAgent::Live(spec)), false).unwrap();
    wait_for(&mut app, |a| {
        a.snap.plans.iter().any(|p| p.name == "agent-p")
    });
    // And one of the person's.
    app.human_turn(desk::EXAMPLE_PLAN);
    let rows = pane_rows(&app, 160, 48, Pane::Plans);
    let text = rows.join("\n");
    for p in &app.snap.plans {
        assert!(
            rows.iter().any(|l| l.starts_with(&format!("{} ", p.name))),
            "{} whole:\n{text}",
            p.name
        );
    }
    // The agent's short name whole wherever it is, never `127.0.0…`.
    let short = app.agent().unwrap().short_name.clone();
    assert!(short.starts_with("127.0.0.1:"), "{short}");
    assert!(!text.contains("127.0.0…"), "{text}");
    assert!(text.contains(&short), "{text}");
    // The agent's name gives way to `agent` before the budget and the person's `you` go:
    // one 15-column URL author took both from every plan, with room to spare.
    assert!(has(&rows, "pnl/budget"), "the budget stays:\n{text}");
    let mine = rows
        .iter()
        .find(|l| l.starts_with("breakout-chase "))
        .unwrap_or_else(|| panic!("the person's plan:\n{text}"));
    assert!(mine.contains(" you "), "{text}");
    let theirs = rows
        .iter()
        .position(|l| l.starts_with("agent-p "))
        .expect("the agent's plan");
    assert!(rows[theirs].contains(" agent "), "{text}");
    assert!(rows[theirs + 1].contains(&format!("by {short}")), "{text}");
}

/// `--price-in` and `--price-out` are checked before the terminal is taken over: both or
/// neither, each a finite number not below 0.
#[test]
fn prices_are_both_or_neither_and_numbers() {
    for (argv, want) in [
        (
            vec!["kestrel", "--price-in", "3"],
            "--price-in and --price-out go together",
        ),
        (
            vec!["kestrel", "--price-out", "15"],
            "--price-in and --price-out go together",
        ),
        (
            vec!["kestrel", "--price-in", "abc", "--price-out", "15"],
            "--price-in \"abc\": not a price",
        ),
        (
            vec!["kestrel", "--price-in", "3", "--price-out", "inf"],
            "--price-out \"inf\": not a price",
        ),
        (
            vec!["kestrel", "--price-in", "NaN", "--price-out", "1"],
            "--price-in \"NaN\": not a price",
        ),
        // A negative amount is a value, refused as negative (it was `unexpected argument
        // '-3' found`).
        (
            vec!["kestrel", "--price-in", "-3", "--price-out", "15"],
            "--price-in \"-3\" is negative: a price is 0 or more dollars per million tokens",
        ),
        (
            vec!["kestrel", "--price-in", "3", "--price-out", "-0.5"],
            "--price-out \"-0.5\" is negative: a price is 0 or more",
        ),
    ] {
        let e = desk::check(&args(&argv)).unwrap_err();
        assert!(e.starts_with("error code=USAGE"), "{argv:?}: {e}");
        assert!(e.contains(want), "{argv:?}: {e}");
    }
    let a = args(&["kestrel", "--price-in", "3", "--price-out", "0.15"]);
    assert_eq!(desk::price_flags(&a), Ok(Some((3.0, 0.15))));
    assert_eq!(desk::price_flags(&args(&["kestrel"])), Ok(None));
}

/// `--author URL --no-agent` opened with `author none`, the author named dropped without a
/// word. An agent named with `--no-agent` is refused as the contradiction it is, naming
/// both flags, before the terminal is taken over.
#[test]
fn an_agent_named_with_no_agent_is_refused() {
    for (argv, named) in [
        (
            vec![
                "kestrel",
                "--author",
                "http://127.0.0.1:18911/v1",
                "--no-agent",
            ],
            "--author http://127.0.0.1:18911/v1",
        ),
        (
            vec![
                "kestrel",
                "desk",
                "--agent",
                "examples/house-agent.jsonl",
                "--no-agent",
            ],
            "--agent examples/house-agent.jsonl",
        ),
    ] {
        let a = args(&argv);
        let e = desk::check(&a).unwrap_err();
        let flag = named.split(' ').next().unwrap();
        assert_eq!(
            e,
            format!(
                "error code=USAGE message=--no-agent and {named} contradict each other: --no-agent seats no agent, {flag} seats one; give one of them"
            ),
            "{argv:?}"
        );
        assert_eq!(desk::check_open(&a).unwrap_err().exit, 1, "{argv:?}");
    }
    // Each alone is taken.
    assert!(desk::desk_agent(&args(&["kestrel", "--no-agent"])).is_ok_and(|a| a.is_none()));
}

/// A plan submitted with its ttl already past, or with an index-level strike on the ETF
/// exec, arms as written (the Bus records the turn as the headless replay arms it), and the
/// submit's result says what the engine saw at the arming, as a warning: the plan expires
/// at once; the strike is far from the exec's spot. A plan with neither says nothing more.
#[test]
fn a_submit_warns_of_a_ttl_already_past_and_a_strike_far_from_spot() {
    let mut app = app();
    app.send(Command::Seek(ms(10, 0, 0)));
    app.human_turn(LATE_PLAN);
    let t = app.turn_rows().last().unwrap().clone();
    assert!(
        t.result.starts_with(
            "armed late; late: its ttl 09:45 is already past at 10:00: it expires at once"
        ),
        "{t:?}"
    );
    assert_eq!(app.message_level(), NoticeLevel::Warn);
    assert!(
        app.snap.notices.iter().any(|n| n.level == NoticeLevel::Warn
            && n.text
                .contains("late: its ttl 09:45 is already past at 10:00")),
        "{:?}",
        app.snap.notices
    );
    app.human_turn("PLAN spx budget 0.25R ttl +1h\n  USING signal SPX exec SPY 0dte\n  WHEN spot > 0\n  DO buy 1 5180 C @ fair\n");
    let t = app.turn_rows().last().unwrap().clone();
    // The spot it names is SPY's last trade on the tape by 10:00, and the percentage is
    // the strike's distance from it.
    let said = t
        .result
        .split("SPY's spot ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .unwrap_or_else(|| panic!("{t:?}"));
    let spot: f64 = said.parse().unwrap();
    let src = desk::tape_source(None).unwrap();
    let last = String::from_utf8_lossy(&src.bytes)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "tick" && v["sym"] == "SPY")
        .take_while(|v| v["ts"].as_str().is_some_and(|t| t <= "10:00:00.000"))
        .last()
        .and_then(|v| v["px"].as_f64())
        .unwrap();
    assert_eq!(format!("{last:.2}"), said, "{t:?}");
    let pct = (5180.0 - spot) / spot * 100.0;
    assert!(
        t.result.contains(&format!(
            "spx: DO#1 strike 5180 is {pct:.0}% above SPY's spot {said}: an SPX level on the SPY exec?"
        )),
        "{t:?}"
    );
    assert_eq!(app.message_level(), NoticeLevel::Warn);
    // Near the money, later ttl: nothing more than the arming.
    app.human_turn("PLAN fine budget 0.25R ttl +1h\n  USING signal SPX exec SPY 0dte\n  WHEN spot > 0\n  DO buy 1 ATM C @ fair\n");
    let t = app.turn_rows().last().unwrap().clone();
    assert_eq!(t.result, "armed fine", "{t:?}");
    assert_eq!(app.message_level(), NoticeLevel::Info);
    // The session file records the result without the warning (a reopen holds the replay to
    // it, and a file saved before the warnings were said reopens as it did): it reopens.
    let dir = tmp("armwarn");
    let path = dir.join("s.jsonl");
    let saved = book_with(
        Some(path.clone()),
        &[(ms(10, 0, 0), LATE_PLAN)],
        ms(10, 5, 0),
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(r#""result":"armed late""#), "{text}");
    let back = reopened(&path);
    assert_eq!(back.hash, saved.snap.hash);
    let _ = std::fs::remove_dir_all(&dir);
}

const LATE_PLAN: &str =
    "PLAN late budget 0.25R ttl 09:45\n  WHEN spot > 0\n  DO buy 1 ATM C @ fair\n";

/// A plan typed in the Editor and not submitted was lost when the person quit (or a signal
/// closed the desk): the `left` record now keeps the draft, and `--open` puts it back in the
/// Editor and says so. A draft changed on a reopened session the person only replayed is
/// written too (its file created for it); a draft submitted is not kept.
#[test]
fn a_draft_not_submitted_is_back_in_the_editor_when_the_session_reopens() {
    let dir = tmp("draft");
    let path = dir.join("s.jsonl");
    let draft = "PLAN later budget 0.1R ttl +30m\nWHEN spot > vwap\nDO buy 1 ATM C @ fair";
    let mut app = book_with(Some(path.clone()), &[], ms(9, 40, 0));
    press(&mut app, KeyCode::Char('e'));
    typ(&mut app, draft);
    let written = app.editor.text();
    assert!(written.contains("WHEN spot > vwap"), "{written}");
    let hash = app.snap.hash.clone();
    let _ = app.session.leave();
    drop(app);
    let saved = saved::open(&path).unwrap();
    assert_eq!(saved.draft.as_deref(), Some(written.as_str()));
    assert!(saved.acts.is_empty(), "a draft is not an act");

    // Reopened (saving to a new file, as `--open` does): the draft is in the Editor, the
    // footer says so, the session is where it was.
    let s = kestrel_desk::session::owner::reopen(&path, Some(dir.join("s2.jsonl"))).unwrap();
    let (themes, keys, _) = desk::load_config(None);
    let mut app = App::new(SessionHandle::inline(s), themes, keys);
    app.tick();
    assert_eq!(app.editor.text(), written);
    assert_eq!(app.snap.hash, hash, "a draft moves nothing on the tape");
    let msg = app.message.clone().unwrap_or_default();
    assert!(
        msg.contains("your draft, not submitted when you left, is back in the Editor"),
        "{msg}"
    );
    let s = screen(&app, 160, 48);
    assert!(has(&s, "your draft"), "{}", s.join("\n"));
    // As `kestrel --open FILE` opens it: the footer says the draft first, where the routine
    // `reopened FILE at …` line had covered it.
    let p = path.display().to_string();
    desk::opening_message(&mut app, &args(&["kestrel", "--open", p.as_str()]), None);
    let msg = app.message.clone().unwrap_or_default();
    assert!(
        msg.starts_with("your draft, not submitted, is back in the Editor (e) · reopened "),
        "{msg}"
    );

    // Changed on the reopened session and left without any act: a new file keeps it.
    press(&mut app, KeyCode::Char('e'));
    typ(&mut app, "\nTP 2x @ fair");
    let changed = app.editor.text();
    let snap = app.session.leave();
    let again = snap.saving.clone().expect("the reopened session saves");
    drop(app);
    assert_eq!(
        saved::open(&again).unwrap().draft.as_deref(),
        Some(changed.as_str())
    );

    // Submitted, the draft is gone: nothing waits in the Editor when it reopens.
    let s = kestrel_desk::session::owner::reopen(&again, Some(dir.join("s3.jsonl"))).unwrap();
    let (themes, keys, _) = desk::load_config(None);
    let mut app = App::new(SessionHandle::inline(s), themes, keys);
    press(&mut app, KeyCode::Char('e'));
    ctrl(&mut app, 's');
    assert!(app.editor.is_blank(), "{}", app.editor.text());
    let snap = app.session.leave();
    let last = snap.saving.clone().unwrap();
    drop(app);
    let reread = saved::open(&last).unwrap();
    assert_eq!(reread.draft, None);
    assert_eq!(reread.acts.len(), 1, "the submit is the act");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The seated agent's reply at the open: a plan of its own that buys once the person's
/// `vwap-flush` (one of the example plans bare `kestrel` arms) has filled, so it trades only
/// on the book the desk flew, the person's plans beside the agent's.
const FOLLOW_PLAN: &str = "# the person's flush filled: follow it\nPLAN follow budget 1R ttl 15:00\n  USING signal SPX exec SPY 0dte\n  WHEN plan(vwap-flush).filled\n  DO buy 1 shares @ ask\n  EXIT T-10\n";

/// A desk's Bus where the person armed plans at the open and did nothing after, and the
/// seated agent's supersede armed its own plan, replays headless with the desk's owners
/// seated: the person's plans stay (the agent's supersede replaced only its own, "Whose
/// book"), fill as at the desk, and the replay writes the desk's Bus byte for byte, so its
/// determinism hash is the desk's; `grade --agent` grades the agent on that book. Before
/// 2026-12-06 the replay had no owners: the agent's supersede stood the person's plans down
/// at 09:30, `follow` never fired, and the hash differed (a note said it could not match).
#[test]
fn a_desk_bus_replays_headless_with_the_desks_owners_and_hash() {
    let dir = tmp("desk-bus-owners");
    let (_, bus) = desk_with_example_plans_and(&dir, ms(16, 30, 0), FOLLOW_PLAN);
    let bytes = std::fs::read(&bus).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let has = |text: &str, ty: &str, what: &str| {
        text.lines()
            .any(|l| l.contains(&format!("\"type\":\"{ty}\"")) && l.contains(what))
    };
    // The desk: both owners named, the person's flush and the agent's follow filled.
    assert!(
        has(&text, "document-armed", "\"owner\":\"person\""),
        "{text}"
    );
    assert!(
        has(&text, "document-armed", "\"owner\":\"agent\""),
        "{text}"
    );
    assert!(has(&text, "fill", "\"plan\":\"vwap-flush\""), "{text}");
    assert!(has(&text, "fill", "\"plan\":\"follow\""), "{text}");
    assert!(has(&text, "session-end", ""), "{text}");
    let tape = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tapes/trend-2025-04-09-s1.jsonl"
    );
    let b = bus.display().to_string();
    let (code, replay_out, err) = kestrel_in(
        &dir,
        &["agent", "--tape", tape, "--author", &b, "--bus", "r.jsonl"],
    );
    assert_eq!(code, 0, "{err}");
    let out = &replay_out;
    let replayed = std::fs::read(dir.join("r.jsonl")).unwrap();
    let r = String::from_utf8_lossy(&replayed);
    // The person's plans were not stood down by the agent's supersede, and filled.
    assert!(!has(&r, "plan-state", "\"reason\":\"superseded\""), "{r}");
    assert!(has(&r, "fill", "\"plan\":\"vwap-flush\""), "{r}");
    assert!(has(&r, "fill", "\"plan\":\"follow\""), "{r}");
    // The desk's bytes, so the desk's hash, and nothing warns of another session.
    assert!(replayed == bytes, "the replay is not the desk's Bus:\n{r}");
    let desk_hash = blake3::hash(&bytes).to_hex().to_string();
    assert!(out.contains(&format!("determinism {desk_hash}")), "{out}");
    assert!(!err.contains("code=DESK-BUS"), "{err}");
    assert!(
        err.contains(&format!(
            "note: {b}: this replay seated the desk's owners and wrote the desk's Bus byte for byte: its hash is the desk's ({}",
            &desk_hash[..12]
        )),
        "{err}"
    );
    // The author's counts are the agent's: one supersede (the person's is not counted).
    assert!(out.contains("wakes 1 | supersede 1 "), "{out}");
    // Graded: the agent's follow trades on the person's flush, as at the desk.
    let tapes = dir.join("tapes");
    std::fs::create_dir_all(&tapes).unwrap();
    std::fs::copy(tape, tapes.join("t.jsonl")).unwrap();
    std::fs::write(
        dir.join("g.kestrel"),
        "GRADE plan follow OVER tapes/* FILL strict-cross-v1\n",
    )
    .unwrap();
    let (code, out, err) = kestrel_in(&dir, &["grade", "g.kestrel", "--agent", &b, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let cell = &v["grades"][0]["cells"][0];
    assert_eq!(cell["active"], 1, "{out}");
    // Its R is the desk's: the replay's report (the desk's Bus) gives follow's P&L.
    let desk_r = replay_out
        .lines()
        .find(|l| l.starts_with("follow "))
        .and_then(|l| l.split_whitespace().nth(7))
        .expect("follow's row in the report");
    assert_eq!(cell["mean_r"], desk_r, "{out}\n{replay_out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A co-pilot proposal the person rejects was written (and paid for): before 2026-12-06 its
/// replies never reached the Bus, only `turn-rejected`, so `kestrel errors report` counted no
/// reply and none of its tokens, the Journal kept only `supersede rejected (human)`, and
/// `kestrel agent --author` read the reject as a provider error (`the recording has no turn
/// for wake open`, exit 1). Its `repair` attempts (with the provider's `usage`) are written
/// before the `turn-rejected`; the report counts them; the replay writes the same rejection.
#[test]
fn a_rejected_proposal_keeps_its_replies_on_the_bus_and_replays_as_rejected() {
    let dir = tmp("rejected-replies");
    let path = dir.join("s.jsonl");
    let base = usage_server(AGENT_PLAN, 1234, 78);
    let mut app = copilot_desk(live_spec("m", 10, &base), Some(path.clone()));
    press(&mut app, KeyCode::Char('x'));
    assert!(app.proposal().is_none());
    let bus = app.snap.bus.clone();
    let at = |ty: &str| {
        bus.iter()
            .position(|l| l.contains(&format!("\"type\":\"{ty}\"")))
            .unwrap_or_else(|| panic!("no {ty}: {bus:?}"))
    };
    let (repair, rejected) = (at("repair"), at("turn-rejected"));
    assert!(repair < rejected, "{bus:?}");
    assert!(
        bus[repair].contains("\"prompt_tokens\":1234")
            && bus[repair].contains("\"completion_tokens\":78")
            && bus[repair].contains("\"wake\":\"open\""),
        "{}",
        bus[repair]
    );
    assert!(
        bus[rejected].contains("\"by\":\"human\""),
        "{}",
        bus[rejected]
    );
    assert!(
        !bus.iter()
            .any(|l| l.contains("\"type\":\"turn\"") && l.contains("\"author\":\"model\""))
    );
    // The Journal keeps what was proposed.
    let row = agent_rows(&app).last().cloned().expect("the rejected row");
    assert!(
        row.label().starts_with("supersede rejected (human): ") && row.label().contains("agent-p"),
        "{}",
        row.label()
    );
    assert_eq!(row.attempts, 1);
    // Played to the close, so the Bus is whole (it has `session-end`) and replays.
    app.send(Command::Speed(kestrel_desk::session::Speed::Max));
    app.send(Command::Play);
    for _ in 0..100_000 {
        if app.snap.ended {
            break;
        }
        app.send(Command::Tick(Duration::from_millis(10)));
    }
    assert!(app.snap.ended);
    drop(app);
    let file = saved::bus_path(&path, 0);
    let saved_bus = std::fs::read_to_string(&file).unwrap();
    let recorded = saved_bus
        .lines()
        .find(|l| l.contains("\"type\":\"turn-rejected\""))
        .expect("the rejection is saved")
        .to_string();
    let b = file.display().to_string();
    // `errors report`: one reply, its provider tokens, the rejected proposal named.
    let (code, out, err) = kestrel_in(&dir, &["errors", "report", &b]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("errors report: 1 file(s), ")
            && out.contains(" 1 repl(ies), 0 re-ask(s), 1 rejected proposal(s)\n"),
        "{out}"
    );
    let all = out
        .lines()
        .find(|l| l.starts_with("all "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        all.contains(" 1234 ") && all.trim_end().ends_with(" 78"),
        "{all}"
    );
    let (code, out, err) = kestrel_in(&dir, &["errors", "report", "--json", &b]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["totals"]["attempts"], 1, "{out}");
    assert_eq!(v["totals"]["rejected"], 1, "{out}");
    assert_eq!(v["totals"]["provider_prompt_tokens"], 1234, "{out}");
    // Replayed headless: the same rejection, after the same attempt, no provider error.
    let tape = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tapes/trend-2025-04-09-s1.jsonl"
    );
    let (code, _, err) = kestrel_in(
        &dir,
        &["agent", "--tape", tape, "--author", &b, "--bus", "r.jsonl"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("code=PROVIDER"), "{err}");
    let replayed = std::fs::read_to_string(dir.join("r.jsonl")).unwrap();
    let lines: Vec<&str> = replayed.lines().collect();
    let rej = lines
        .iter()
        .position(|l| l.contains("\"type\":\"turn-rejected\""))
        .unwrap_or_else(|| panic!("{replayed}"));
    assert_eq!(lines[rej], recorded);
    assert!(
        lines[rej - 1].contains("\"type\":\"repair\"")
            && lines[rej - 1].contains("\"prompt_tokens\":1234"),
        "{}",
        lines[rej - 1]
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("\"type\":\"turn\"") && l.contains("provider-error")),
        "{replayed}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The desk refuses an author flag its agent does not use, as `kestrel agent` does: the
/// house agent and `--no-agent` take none, a command no model setting; a model all.
#[test]
fn the_desk_refuses_author_flags_its_agent_does_not_use() {
    let refused = |argv: &[&str]| desk::desk_agent(&args(argv)).err().unwrap_or_default();
    let e = refused(&["kestrel", "--temperature", "0"]);
    assert!(
        e.starts_with("error code=USAGE message=--temperature is not used by the house agent"),
        "{e}"
    );
    let e = refused(&[
        "kestrel",
        "desk",
        "--no-agent",
        "--max-tokens",
        "9",
        "--constrained",
    ]);
    assert!(
        e.contains("--constrained, --max-tokens are not used with --no-agent"),
        "{e}"
    );
    let e = refused(&[
        "kestrel",
        "--author",
        "cmd:sh examples/command-author.sh",
        "--model",
        "m",
    ]);
    assert!(e.contains("--model is not used by a command"), "{e}");
    for ok in [
        &[
            "kestrel",
            "--author",
            "cmd:sh examples/command-author.sh",
            "--timeout",
            "5",
        ][..],
        &[
            "kestrel",
            "--author",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--temperature",
            "0",
        ],
        &["kestrel", "--no-agent"],
    ] {
        assert!(desk::desk_agent(&args(ok)).is_ok(), "{ok:?}");
    }
}

/// An agent's answer warns of what arming it found (a strike far from spot, a ttl already
/// past) on its notice, as a person's submit does: until 2026-12-06 an agent's warnings were
/// dropped at the desk (the headless `agent` said them).
#[test]
fn an_agents_answer_warns_of_a_strike_far_from_spot() {
    let dir = std::env::temp_dir().join(format!("kestrel-agent-warn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("far.jsonl");
    let reply = "PLAN far budget 0.1R ttl 15:00\n  USING signal SPX exec SPY 0dte\n  WHEN spot > 100000\n  DO buy 1 700 C @ fair\n";
    std::fs::write(
        &script,
        format!("{}\n", serde_json::json!({"wake": "open", "reply": reply})),
    )
    .unwrap();
    let session = desk::open_session(
        &args(&[
            "kestrel",
            "--no-save",
            "--author",
            &script.display().to_string(),
        ]),
        None,
    )
    .unwrap();
    let (themes, keys, _) = desk::load_config(None);
    let mut app = App::new(SessionHandle::inline(session), themes, keys);
    app.send(Command::Seek(ms(9, 31, 0)));
    app.tick();
    let warned: Vec<&str> = app
        .snap
        .notices
        .iter()
        .filter(|n| n.level == NoticeLevel::Warn)
        .map(|n| n.text.as_str())
        .collect();
    assert!(
        warned
            .iter()
            .any(|t| t.contains("supersede") && t.contains("far: ") && t.contains("spot")),
        "{:?}",
        app.snap.notices
    );
    let _ = std::fs::remove_dir_all(&dir);
}
