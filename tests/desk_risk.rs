//! Issue 15, part A: risk you can see, a Blotter marked to market, co-pilot that keeps step.
//! State tests over the bundled tape (inline sessions, no terminal) and styled snapshots of
//! the Blotter pane (ratatui TestBackend + insta) at 100x30 and 200x60 in the dark and light
//! themes.

use kestrel_desk::bus::{Bus, PlanState, blotter::Position};
use kestrel_desk::desk::app::{App, BusMode, Pane};
use kestrel_desk::desk::{self, ui};
use kestrel_desk::engine::{Engine, EngineConfig};
use kestrel_desk::lang::{self, Mode};
use kestrel_desk::market::{Px, Ts, open_tape};
use kestrel_desk::session::Command;
use kestrel_desk::session::agent::Agent as DeskAgent;
use kestrel_desk::session::owner::NoticeLevel;
use kestrel_desk::turn::AuthorKind;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::time::Duration;

const TAPE: &str = "tapes/trend-2025-04-09-s1.jsonl";

fn ms(h: u32, m: u32, s: u32) -> Ts {
    Ts::hms(h, m, s, 0)
}

/// A desk on the bundled tape with no agent and no example plan.
fn bare() -> App {
    let src = desk::tape_source(None).expect("bundled tape");
    desk::inline_app_with(src, None, false).expect("app")
}

/// The Plans row of the plan called `name`.
fn plan_row<'a>(app: &'a App, name: &str) -> &'a kestrel_desk::session::owner::PlanLine {
    app.snap
        .plans
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no plan row {name}"))
}

fn submit(app: &mut App, id: u64, text: &str) {
    app.send(Command::Submit {
        id,
        author: "you".into(),
        kind: AuthorKind::Human,
        text: text.into(),
    });
}

fn screen(app: &App, w: u16, h: u16) -> Vec<String> {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| ui::draw(f, app)).expect("draw");
    let buf = t.backend().buffer().clone();
    (0..h)
        .map(|y| (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect())
        .collect()
}

fn blotter_text(app: &App) -> String {
    ui::blotter_lines(app, 60, 200)
        .iter()
        .map(|l| {
            l.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A clamp (100 shares on a 0.1R budget) and a veto (a call on a 0.01R budget): each is in
/// the plan's row, in the Blotter's order rows, and on the status line as a notice.
#[test]
fn a_veto_and_a_clamp_show_in_the_plan_row_the_blotter_and_the_notice() {
    let mut app = bare();
    submit(
        &mut app,
        1,
        "PLAN sized budget 0.1R ttl +30m\n  USING signal SPX exec SPY\n  WHEN spot > 0\n  DO buy 100 shares @ ask\n",
    );
    app.send(Command::Seek(ms(9, 31, 0)));
    let sized = plan_row(&app, "sized");
    let clamp = sized
        .risk
        .as_ref()
        .expect("a clamp on the plan's ticket")
        .short();
    assert!(clamp.starts_with("qty 100→"), "{clamp}");
    assert_eq!(app.message_level(), NoticeLevel::Warn, "{:?}", app.message);
    let notice = app.message.clone().unwrap_or_default();
    assert!(notice.contains("qty 100→"), "{notice}");
    let b = blotter_text(&app);
    assert!(
        b.lines()
            .any(|l| l.contains("sized") && l.contains("filled") && l.contains(&clamp)),
        "the order row says it was clamped:\n{b}"
    );

    submit(
        &mut app,
        2,
        "PLAN tiny budget 0.01R ttl +30m\n  USING signal SPX exec SPY 0dte\n  WHEN spot > 0\n  DO buy 1 +1 C @ ask\n",
    );
    app.send(Command::Seek(ms(9, 32, 0)));
    let tiny = plan_row(&app, "tiny");
    let veto = tiny.risk.as_ref().expect("a veto").short();
    assert!(veto.starts_with("VETO worst $"), "{veto}");
    assert!(veto.contains("> $10.00 left"), "{veto}");
    assert_eq!(app.message_level(), NoticeLevel::Error, "{:?}", app.message);
    assert!(
        app.message
            .as_deref()
            .unwrap_or("")
            .starts_with("VETO tiny")
    );
    let b = blotter_text(&app);
    assert!(
        b.lines()
            .any(|l| l.contains("tiny") && l.contains("vetoed") && l.contains(&veto)),
        "the order row says it was vetoed:\n{b}"
    );
    // On screen at 100x30 and 200x60: each plan's rows in the Plans pane carry its decision
    // (the row, then what was said of it under it where the pane is narrow).
    app.set_focus(Pane::Plans);
    for (w, h) in [(100, 30), (200, 60)] {
        app.tab = Pane::Plans;
        let s = screen(&app, w, h);
        let said = |plan: &str, what: &str| {
            s.iter().enumerate().any(|(i, l)| {
                l.contains(&format!("{plan} "))
                    && (l.contains(what) || s.get(i + 1).is_some_and(|n| n.contains(what)))
            })
        };
        assert!(said("tiny", "VETO worst"), "{w}x{h}\n{}", s.join("\n"));
        assert!(said("sized", "qty 100→"), "{w}x{h}\n{}", s.join("\n"));
    }
}

/// A CANCEL that cancels nothing is a refusal, said as an error: of a name not in the book
/// (the router refuses it) and of a plan no longer live (the session refuses it).
#[test]
fn a_refused_cancel_is_an_error_notice() {
    let mut app = bare();
    submit(&mut app, 1, "CANCEL nothing-here\n");
    assert_eq!(app.message_level(), NoticeLevel::Error, "{:?}", app.message);
    let m = app.message.clone().unwrap_or_default();
    assert!(m.contains("refused") && m.contains("nothing-here"), "{m}");
    submit(
        &mut app,
        2,
        "PLAN gone budget 0.1R ttl +30m\n  USING signal SPX exec SPY\n  WHEN spot > 99999\n  DO buy 1 shares @ bid\n",
    );
    submit(&mut app, 3, "CANCEL gone\n");
    assert_eq!(app.message_level(), NoticeLevel::Info, "{:?}", app.message);
    submit(&mut app, 4, "CANCEL gone\n");
    let m = app.message.clone().unwrap_or_default();
    assert_eq!(app.message_level(), NoticeLevel::Error, "{m}");
    assert!(m.contains("refused"), "{m}");
    assert!(!m.ends_with("cancel"), "{m}");
    let row = app.turn_rows().last().expect("journal row").label();
    assert!(row.contains("refused"), "{row}");
}

/// Open P&L follows the market event by event: after every tape event the shares position
/// is marked at the exec symbol's mid (qty × mid − cost, exactly), and an option position
/// at its model fair on the cent grid, labelled as a model price.
#[test]
fn open_pnl_follows_the_market_tick_by_tick() {
    let mut reader = open_tape(std::path::Path::new(TAPE)).expect("tape");
    let header = reader.header().clone();
    let doc = lang::check(
        "PLAN shares budget 1R ttl 15:00\n  USING signal SPX exec SPY\n  WHEN spot > 0\n  DO buy 10 shares @ ask\n\n\
         PLAN calls budget 1R ttl 15:00\n  USING signal SPX exec SPY 0dte\n  WHEN spot > 0\n  DO buy 1 +1 C @ ask\n",
        Mode::File,
    )
    .expect("plans check");
    let mut e = Engine::new(
        &header,
        EngineConfig::strict(Px(1000 * 10_000)),
        Bus::new(None),
    );
    e.arm_document(&doc);
    let until = ms(10, 0, 0);
    let mut seen = std::collections::BTreeSet::new();
    let mut checked = 0;
    let mut option_marks = std::collections::BTreeSet::new();
    for ev in reader.by_ref() {
        let ev = ev.expect("event");
        if ev.ts() > until {
            break;
        }
        e.on_event(&ev);
        let b = e.bus().blotter();
        let Some(p) = b.positions.get("shares").and_then(|m| m.get("SPY shares")) else {
            continue;
        };
        let mid = e.market().share_quote("SPY").expect("quote").mid;
        // The live mark is held per instrument; a position reads it through the Blotter.
        let (mark, model) = b.mark_of("SPY shares", p);
        assert_eq!(mark, Some(mid), "marked at the mid at {}", ev.ts());
        assert!(!model);
        let open = b.open_pnl_of("SPY shares", p);
        let want = i128::from(mid.0) * i128::from(p.qty) - p.cost;
        assert_eq!(i128::from(open), want);
        assert_eq!(b.open("shares"), open);
        seen.insert(open);
        checked += 1;
        let opt: Vec<(&String, &Position)> = b
            .positions
            .get("calls")
            .map(|m| m.iter().filter(|(_, p)| p.qty != 0).collect())
            .unwrap_or_default();
        for (leg, o) in opt {
            let (mark, model) = b.mark_of(leg, o);
            assert!(model, "an option is marked at its model fair");
            assert_eq!(mark.map(|m| m.0 % 100), Some(0), "on the cent grid");
            option_marks.insert(mark);
        }
    }
    assert!(checked > 1000, "checked {checked} events");
    assert!(seen.len() > 20, "open P&L took {} values", seen.len());
    assert!(
        option_marks.len() > 5,
        "option marks {}",
        option_marks.len()
    );
}

/// An option the tape quotes is marked at its quote's mid, and the Blotter says so (`mid`,
/// not `model`): its fair is the quote's mid (docs/tapes.md §1a). The desk had labelled every
/// option mark `model`, so a trader on an imported tape could not tell a vendor's book from
/// Black-Scholes at a guessed `--iv`.
#[test]
fn a_quoted_option_is_marked_at_its_quote_not_labelled_a_model_price() {
    let text = std::fs::read_to_string(TAPE).expect("tape");
    let mut lines = text.lines();
    let header = lines
        .next()
        .expect("header")
        .replacen("\"v\":1", "\"v\":2", 1);
    let mut tape = header + "\n";
    for line in lines {
        if line.contains("\"ts\":\"09:35") {
            break;
        }
        tape.push_str(line);
        tape.push('\n');
        if line.contains("\"sym\":\"SPY\"") {
            let ts = &line[line.find("\"ts\":").expect("ts")..][6..18];
            for k in 510..=525 {
                tape.push_str(&format!(
                    "{{\"type\":\"quote\",\"ts\":\"{ts}\",\"sym\":\"SPY250409C00{k}000\",\"bid\":1.00,\"ask\":1.10,\"bsz\":10,\"asz\":10}}\n"
                ));
            }
        }
    }
    let path = std::env::temp_dir().join(format!("kestrel-quoted-{}.jsonl", std::process::id()));
    std::fs::write(&path, tape).expect("write tape");
    let mut reader = open_tape(&path).expect("quoted tape reads");
    let header = reader.header().clone();
    let doc = lang::check(
        "PLAN calls budget 1R ttl 15:00\n  USING signal SPX exec SPY 0dte\n  WHEN spot > 0\n  DO buy 1 +1 C @ ask\n",
        Mode::File,
    )
    .expect("plan checks");
    let mut e = Engine::new(
        &header,
        EngineConfig::strict(Px(1000 * 10_000)),
        Bus::new(None),
    );
    e.arm_document(&doc);
    let mut marked = 0;
    for ev in reader.by_ref() {
        let ev = ev.expect("event");
        e.on_event(&ev);
        // The buy fills at the open's first tick, before that second's quotes are read.
        if ev.ts() < ms(9, 30, 1) {
            continue;
        }
        let b = e.bus().blotter();
        let open: Vec<(&String, &Position)> = b
            .positions
            .get("calls")
            .map(|m| m.iter().filter(|(_, p)| p.qty != 0).collect())
            .unwrap_or_default();
        for (leg, p) in open {
            let (mark, model) = b.mark_of(leg, p);
            assert_eq!(mark, Some(Px(10_500)), "the quote's mid, {leg}");
            assert!(!model, "a quoted option's mark is the market's, {leg}");
            marked += 1;
        }
    }
    let _ = std::fs::remove_file(&path);
    assert!(marked > 100, "marked {marked} times");
}

/// Co-pilot: a proposal pauses the tape at the event it appeared on; the person moves the
/// clock, accepts, and it routes then, with its age in tape time recorded and said; the
/// tape plays on after it.
#[test]
fn a_copilot_proposal_pauses_the_tape_and_routes_at_its_acceptance_with_its_age() {
    let src = desk::tape_source(None).expect("bundled tape");
    let mut app = desk::inline_app_with(src, Some(DeskAgent::house()), true).expect("app");
    let p = app.proposal().cloned().expect("the OPEN answer waits");
    assert_eq!(p.asked_at, ms(9, 30, 0));
    app.send(Command::Play);
    app.send(Command::Tick(Duration::from_millis(500)));
    assert!(!app.snap.playing, "the waiting proposal pauses the tape");
    assert_eq!(app.snap.clock, ms(9, 30, 0));
    // The person looks ahead two minutes, then accepts.
    app.send(Command::Seek(ms(9, 32, 0)));
    let footer = screen(&app, 200, 60).pop().unwrap_or_default();
    assert!(footer.contains("wake open 09:30, 2m00s ago"), "{footer}");
    app.send(Command::Accept { call: p.call });
    assert!(app.proposal().is_none());
    let m = app.message.clone().unwrap_or_default();
    assert!(m.contains("accepted 2m00s later"), "{m}");
    let turn = app
        .turn_rows()
        .iter()
        .rfind(|r| r.author() == "house")
        .cloned()
        .expect("the agent's turn");
    assert_eq!(turn.ts(), ms(9, 32, 0), "routed at its acceptance");
    assert!(
        app.snap.playing,
        "the tape plays on once the proposal is answered"
    );
    // Playing on at max, the next proposal stops the tape at the event it appeared on.
    app.send(Command::Speed(kestrel_desk::session::Speed::Max));
    for _ in 0..2000 {
        app.send(Command::Tick(Duration::from_millis(16)));
        if app.proposal().is_some() || app.snap.ended {
            break;
        }
    }
    let next = app.proposal().cloned().expect("a later wake's proposal");
    assert!(!app.snap.playing);
    assert_eq!(app.snap.clock, next.asked_at, "stopped at the wake");
}

/// A recorded script answers by wake: a reply tagged with a wake answers that wake even when
/// an earlier wake went unasked (no drift by position in the file).
#[test]
fn a_script_answers_by_wake_not_by_position() {
    use kestrel_desk::session::{TurnSource, WakeAsk};
    use kestrel_desk::turn::{Profile, TurnContext, WakePhase};
    let script = "{\"wake\": \"open\", \"reply\": \"STAND-DOWN open\\n\"}\n\
                  {\"wake\": \"range-break\", \"reply\": \"STAND-DOWN range\\n\"}\n\
                  {\"wake\": \"last-hour\", \"reply\": \"STAND-DOWN late\\n\"}\n";
    let DeskAgent::Script { .. } = DeskAgent::script("s", script).expect("script") else {
        panic!("a script")
    };
    let replies = kestrel_desk::session::parse_script_by_wake(script).expect("parse");
    let mut src = kestrel_desk::session::scripted_by_wake("s", replies);
    let ctx = TurnContext::new(WakePhase::Mid, Profile::AuthoringV2, AuthorKind::File);
    let ask = |wake: &str| WakeAsk {
        ts: ms(15, 0, 0),
        wake: wake.into(),
        phase: WakePhase::Mid,
        frame: String::new(),
        prompt: String::new(),
    };
    // The open and the range break went unanswered; the last hour gets its own reply.
    let a = src.answer(&ask("last-hour"), &ctx);
    assert_eq!(a.run.turn.outcome.name(), "stand-down");
    assert!(
        format!("{:?}", a.run.turn.outcome).contains("late"),
        "{:?}",
        a.run.turn.outcome
    );
    let b = src.answer(&ask("open"), &ctx);
    assert!(format!("{:?}", b.run.turn.outcome).contains("open"));
}

/// The styled buffer of a rectangle: one line per row, runs of one style as
/// `«fg/bg/modifiers»text`.
fn styled(buf: &ratatui::buffer::Buffer, r: ratatui::layout::Rect) -> String {
    let mut out = String::new();
    for y in r.top()..r.bottom() {
        let mut last = String::new();
        for x in r.left()..r.right() {
            let c = &buf[(x, y)];
            let st = format!("«{:?}/{:?}/{:?}»", c.fg, c.bg, c.modifier);
            if st != last {
                out.push_str(&st);
                last = st;
            }
            out.push_str(c.symbol());
        }
        out.push('\n');
    }
    out
}

/// A session with a veto, a clamp, filled and working orders and an open position, at a
/// fixed instant, in the Blotter.
fn blotter_app() -> App {
    let mut app = bare();
    submit(
        &mut app,
        1,
        "PLAN sized budget 0.1R ttl +30m\n  USING signal SPX exec SPY\n  WHEN spot > 0\n  DO buy 100 shares @ ask\n\n\
         PLAN tiny budget 0.01R ttl +30m\n  USING signal SPX exec SPY 0dte\n  WHEN spot > 0\n  DO buy 1 +1 C @ ask\n\n\
         PLAN calls budget 0.5R ttl +60m\n  USING signal SPX exec SPY 0dte\n  WHEN spot > 0\n  DO buy 1 +1 C @ ask\n  TP 3x @ fair\n",
    );
    app.send(Command::Seek(ms(9, 50, 0)));
    app.set_focus(Pane::Bus);
    app.bus_mode = BusMode::Blotter;
    app
}

#[test]
fn blotter_snapshots_in_two_sizes_and_two_themes() {
    let mut app = blotter_app();
    for theme in ["dark", "light"] {
        app.theme = app
            .themes
            .iter()
            .position(|t| t.name == theme)
            .expect("bundled theme");
        for (w, h) in [(100u16, 30u16), (200, 60)] {
            if w < 150 {
                app.tab = Pane::Bus;
            }
            let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
            t.draw(|f| ui::draw(f, &app)).expect("draw");
            let area = ratatui::layout::Rect::new(0, 0, w, h);
            let r = ui::layout(&app, area)
                .into_iter()
                .find(|(p, _)| *p == Pane::Bus)
                .map(|(_, r)| r)
                .expect("the Bus pane is on screen");
            let text = styled(t.backend().buffer(), r);
            assert!(text.contains("1R = $1000.00"), "{text}");
            insta::assert_snapshot!(format!("blotter_{theme}_{w}x{h}"), text);
        }
    }
}

/// The default session (bare `kestrel`: the bundled tape, examples/run-desk.kestrel armed,
/// the house agent seated) shows the product within the first simulated hour, played at max
/// as a person would: a fire, a fill, an open P&L that moves with the market, and an exit.
#[test]
fn the_default_session_fires_fills_moves_and_exits_within_the_first_hour() {
    use clap::Parser;
    let cli = kestrel_desk::cli::Cli::try_parse_from(["kestrel"]).expect("flags");
    let a = cli.desk;
    let session = desk::open_session(&a, None).expect("the default session opens");
    let mut h = kestrel_desk::desk::handle::SessionHandle::inline(session);
    let first = h.latest();
    assert!(first.agent.as_ref().is_some_and(|g| g.name == "house"));
    // At 60x, a wall second of play is a minute of tape: one look a tape minute.
    h.send(Command::Speed(kestrel_desk::session::Speed::X60));
    h.send(Command::Play);
    let mut opens = std::collections::BTreeSet::new();
    let mut last;
    loop {
        h.send(Command::Tick(Duration::from_secs(1)));
        last = h.latest();
        opens.insert((last.book.open_usd * 100.0).round() as i64);
        if last.clock >= ms(10, 30, 0) || last.ended {
            break;
        }
    }
    let bus = last.bus.join("\n");
    let b = &last.book;
    assert!(
        last.plans.iter().any(|p| p.note.contains("WHEN fired")) || bus.contains("plan-fired"),
        "a fire"
    );
    assert!(
        !b.fills.is_empty(),
        "a fill: {:?}\n{:?}",
        last.plans
            .iter()
            .map(|p| (&p.name, p.state, &p.note))
            .collect::<Vec<_>>(),
        last.notices
    );
    assert!(
        opens.len() > 10,
        "open P&L moved through {} values",
        opens.len()
    );
    assert!(
        b.fills.iter().any(|f| f.side == "sell"),
        "an exit (a sell): {:?}",
        b.fills
    );
    assert!(b.realised_usd != 0.0, "the exit realised P&L");
    assert!(
        !bus.contains("\"type\":\"stand-down\""),
        "the house agent does not stand the book down in the first hour"
    );
}

/// An order row says when it left the book as well as when it was placed: a take-profit that
/// rests, then fills, reads `TP#1 <placed>→<filled>` with the fill's own time; an entry that
/// filled as it was placed carries one time.
#[test]
fn an_order_row_says_when_it_was_placed_and_when_it_left_the_book() {
    let mut app = bare();
    submit(
        &mut app,
        1,
        "PLAN flip budget 0.5R ttl +90m\n  USING signal SPX exec SPY\n  WHEN spot > 0\n  DO buy 10 shares @ ask\n  TP 1.001x @ ask\n",
    );
    app.send(Command::Seek(ms(11, 0, 0)));
    let b = &app.snap.book;
    let tp = b
        .order_log
        .iter()
        .find(|o| o.plan == "flip" && o.clause.starts_with("TP"))
        .expect("the take-profit was placed");
    assert_eq!(tp.state, "filled", "{tp:?}");
    let sold = b
        .fills
        .iter()
        .rfind(|f| f.plan == "flip" && f.side == "sell")
        .expect("the take-profit's fill");
    assert_eq!(tp.closed.as_deref(), Some(sold.time.as_str()), "{tp:?}");
    assert_ne!(tp.time, sold.time, "it rested before it filled: {tp:?}");
    let entry = b
        .order_log
        .iter()
        .find(|o| o.plan == "flip" && o.clause.starts_with("DO"))
        .expect("the entry");
    let text = blotter_text(&app);
    let row = |clause: &str| {
        text.lines()
            .find(|l| l.contains("flip") && l.contains(clause))
            .unwrap_or_else(|| panic!("no {clause} row:\n{text}"))
            .to_string()
    };
    assert!(
        row("TP#1").ends_with(&format!("TP#1 {}→{}", tp.time, sold.time)),
        "{text}"
    );
    let filled_as_placed = entry.closed.as_deref() == Some(entry.time.as_str());
    assert!(filled_as_placed, "{entry:?}");
    assert!(
        row("DO#1").ends_with(&format!("DO#1 {}", entry.time)),
        "{text}"
    );
}

/// A 0dte option held to the close settles without a fill: the Blotter lists the settlement
/// with the fills (`settled +1 SPY 0dte … @ <intrinsic> (close)`), at the Bus's price, and
/// the position leaves the book.
#[test]
fn a_position_settled_at_the_close_is_listed_with_the_fills() {
    let mut app = bare();
    submit(
        &mut app,
        1,
        "PLAN hold budget 0.5R ttl 15:30\n  USING signal SPX exec SPY 0dte\n  WHEN spot > 0\n  DO buy 1 ATM C @ ask\n",
    );
    app.send(Command::Seek(ms(16, 0, 0)));
    while !app.snap.ended {
        app.send(Command::StepTick);
        app.tick();
    }
    let bus = app.snap.bus.join("\n");
    let line = bus
        .lines()
        .find(|l| l.contains("\"type\":\"settlement\"") && l.contains("\"plan\":\"hold\""))
        .unwrap_or_else(|| panic!("the call settles at the close:\n{bus}"));
    let v: serde_json::Value = serde_json::from_str(line).expect("a Bus line");
    let px = v["px"].as_str().expect("a price");
    let b = &app.snap.book;
    assert!(
        b.positions.iter().all(|p| p.plan != "hold"),
        "{:?}",
        b.positions
    );
    let s = b.settled.first().expect("a settlement in the book");
    assert_eq!(
        (s.plan.as_str(), s.qty),
        ("hold", v["qty"].as_i64().unwrap())
    );
    let text = blotter_text(&app);
    assert!(text.contains("settled at the close (1)"), "{text}");
    let row = text
        .lines()
        .find(|l| l.contains("hold settled"))
        .unwrap_or_else(|| panic!("no settlement row:\n{text}"));
    assert!(
        row.contains("settled +1 SPY 0dte") && row.ends_with(&format!("@ {px} (close)")),
        "{row}"
    );
}

/// A plan whose state hides its position (expired at its ttl with shares still on) says
/// what it holds in its Plans row, on a narrow screen and a wide one; the Plans title
/// counts it as holding.
#[test]
fn an_expired_plan_that_still_holds_says_so_in_its_row() {
    let mut app = bare();
    submit(
        &mut app,
        1,
        "PLAN brief budget 0.5R ttl +5m\n  USING signal SPX exec SPY\n  WHEN spot > 0\n  DO buy 10 shares @ ask\n",
    );
    app.send(Command::Seek(ms(9, 40, 0)));
    let row = plan_row(&app, "brief");
    assert_eq!(row.state, PlanState::Expired, "{row:?}");
    let held = app
        .snap
        .book
        .positions
        .iter()
        .find(|p| p.plan == "brief")
        .expect("the shares are still on")
        .qty;
    let says = format!("holds {held:+} SPY shares");
    // The Bus's reason `ttl 09:35:00.000` reads `ttl reached 09:35` on screen.
    let at = row
        .note
        .strip_prefix("ttl ")
        .and_then(|t| t.get(..5))
        .unwrap_or_else(|| panic!("an expiry reason: {:?}", row.note));
    let reached = format!("ttl reached {at} · {says}");
    app.set_focus(Pane::Plans);
    for (w, h) in [(100, 30), (200, 60)] {
        app.tab = Pane::Plans;
        let s = screen(&app, w, h);
        assert!(
            s.iter().any(|l| l.contains(&reached)),
            "{w}x{h}: {reached}\n{}",
            s.join("\n")
        );
        assert!(
            s.iter().any(|l| l.contains("Plans — 1 · 1 holding")),
            "{w}x{h}\n{}",
            s.join("\n")
        );
    }
}

/// A plan yanked with `y`, edited and sent again replaces the old one (the person's turns add
/// to the book): the editor checks the copy against the standing book, so an `ARM` of another
/// plan in the book is not refused; and the row of the new plan (and its View line) starts
/// clean, `re-armed 09:40`, with no veto of the plan it replaced, and says what the replaced
/// plan still holds.
#[test]
fn a_plan_sent_again_reads_re_armed_and_its_copy_may_arm_a_plan_in_the_book() {
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let mut app = bare();
    let first = "USING signal SPX exec SPY\nPLAN big budget 0.01R ttl +90m\n  WHEN spot > 0\n  DO buy 10 shares @ ask\n  ARM follow\nPLAN follow budget 0.1R ttl +90m\n  WHEN spot > 0\n  DO buy 1 shares @ ask\n";
    submit(&mut app, 1, first);
    app.send(Command::Seek(ms(9, 40, 0)));
    assert!(
        plan_row(&app, "big").risk.is_some(),
        "the first `big` was vetoed: {:?}",
        plan_row(&app, "big")
    );
    // y on `big`: its text, ARM and all, checks against the book.
    app.set_focus(Pane::Plans);
    app.plan_sel = app
        .snap
        .plans
        .iter()
        .position(|p| p.name == "big")
        .expect("big");
    app.key(KeyEvent::new(KeyCode::Char('y'), KeyModifiers::NONE));
    app.tick();
    let copy = app.editor.text();
    assert!(copy.contains("ARM follow"), "{copy}");
    assert!(
        app.editor.diagnostics().is_empty(),
        "{:?}",
        app.editor.diagnostics()
    );
    let alone = lang::check(&copy, Mode::Turn).expect_err("alone, `follow` is not in scope");
    assert_eq!(alone[0].rule.name(), "unknown-ref");
    // Sent again with a WHEN that does not fire at once: it replaces the first.
    let again = copy.replace("WHEN spot > 0", "WHEN spot > 100000");
    submit(&mut app, 2, &again);
    let big = plan_row(&app, "big");
    // The first `big` bought 1 share (its 10 clamped to its budget): the note says so, as
    // the new version can enter again beside it.
    assert_eq!(
        big.note, "re-armed 09:40: big holds +1 SPY shares: the new version can enter again",
        "{big:?}"
    );
    assert!(
        big.risk.is_none(),
        "the replaced plan's veto is not the new one's: {big:?}"
    );
    assert!(
        app.snap.plans.iter().any(|p| p.name == "follow"),
        "the rest of the book stays"
    );
    let shown = screen(&app, 100, 30).join("\n");
    assert!(shown.contains("re-armed 09:40"), "{shown}");
    // The View an agent reads says the same (not `(superseded)` beside `armed`).
    let frame = &app.snap.frame.text;
    let line = frame
        .lines()
        .find(|l| l.starts_with("big "))
        .unwrap_or_else(|| panic!("no [plans] line for big:\n{frame}"));
    assert!(
        line.starts_with("big armed ")
            && line.ends_with(
                "(re-armed 09:40: big holds +1 SPY shares: the new version can enter again)"
            ),
        "{line}"
    );
    // A CANCEL reaches the plan the row shows (the newest of that name, not the one it
    // replaced, which fired and so is still live after its stand-down), and what is said
    // of it then is its own.
    submit(&mut app, 3, "CANCEL big\n");
    let big = plan_row(&app, "big");
    assert_eq!(big.state, PlanState::StoodDown, "{big:?}");
    assert_eq!(big.note, "cancel", "{big:?}");
}

/// A filled order reads at the price it filled at, with its limit beside it when the fill
/// was better: a buy limited at fair+10c that crossed the ask read `@ <limit>` alone, as if
/// the limit were the price paid.
#[test]
fn a_filled_order_reads_at_its_fill_price_beside_its_limit() {
    let mut app = bare();
    submit(
        &mut app,
        1,
        "PLAN lift budget 0.5R ttl +90m\n  USING signal SPX exec SPY 0dte\n  WHEN spot > 0\n  DO buy 1 ATM C @ fair+10c\n",
    );
    app.send(Command::Seek(ms(10, 0, 0)));
    let b = &app.snap.book;
    let o = b
        .order_log
        .iter()
        .find(|o| o.plan == "lift")
        .expect("the entry");
    assert_eq!(o.state, "filled", "{o:?}");
    let fill = b.fills.iter().find(|f| f.plan == "lift").expect("its fill");
    assert_eq!(o.fill_px, Some(fill.px), "{o:?} {fill:?}");
    let (paid, limit) = (fill.px, o.limit.expect("a limit"));
    assert!(
        paid < limit,
        "the ask was under fair+10c: {paid} vs {limit}"
    );
    let text = blotter_text(&app);
    let row = text
        .lines()
        .find(|l| l.contains("filled") && l.contains("lift"))
        .unwrap_or_else(|| panic!("no row:\n{text}"));
    assert!(
        row.contains(&format!("@ {paid:.2} lim {limit:.2} ")),
        "{row}"
    );
}

/// `hold`'s entry fills on the Blotter (`09:30:01 hold buy 10 SPY shares @ …` rows under
/// `fills`; the order rows start with their state).
fn hold_buys(app: &App) -> usize {
    blotter_text(app)
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .filter(|l| l.contains(" hold buy 10 SPY shares"))
        .count()
}

/// A person who submits a plan again unchanged (yanked with `y` and sent back, or pasted
/// again) keeps it as it stands: it filled at 09:30 and its WHEN is still true at 09:40, and
/// it does not buy again (before 2026-12-05 it was a new version that bought a second 10
/// shares at once, with nothing on screen saying so). Submitted changed, it is a new
/// version, and the footer says what the replaced one still holds, as a warning.
#[test]
fn a_plan_submitted_again_unchanged_does_not_enter_again() {
    let mut app = bare();
    let plan = "PLAN hold budget 1R ttl +90m\n  USING signal SPX exec SPY\n  WHEN spot > 0\n  DO buy 10 shares @ ask\n  EXIT time >= 15:00\n";
    submit(&mut app, 1, plan);
    app.send(Command::Seek(ms(9, 40, 0)));
    assert_eq!(hold_buys(&app), 1, "{}", blotter_text(&app));
    submit(&mut app, 2, plan);
    let notice = app.message.clone().unwrap_or_default();
    assert!(
        notice.contains("kept hold as it stands (sent unchanged)"),
        "{notice}"
    );
    app.send(Command::Seek(ms(9, 50, 0)));
    assert_eq!(hold_buys(&app), 1, "{}", blotter_text(&app));
    assert_eq!(plan_row(&app, "hold").state, PlanState::Filled);

    submit(&mut app, 3, &plan.replace("15:00", "15:30"));
    let notice = app.message.clone().unwrap_or_default();
    assert!(
        notice.contains("hold holds +10 SPY shares: the new version can enter again"),
        "{notice}"
    );
    assert_eq!(app.message_level(), NoticeLevel::Warn, "{notice}");
    app.send(Command::Seek(ms(10, 0, 0)));
    assert_eq!(hold_buys(&app), 2, "{}", blotter_text(&app));
}

/// The engine's own stop (`STOP`, the assumed 1% share stop of shares bought with none
/// written) sold a position and the footer said nothing, where a clamp gets a notice. It
/// now says so as a warning, with what it sold and at what price.
#[test]
fn the_engines_assumed_stop_selling_a_position_is_a_notice() {
    let src = desk::tape_source(Some("tapes/shock-2025-04-09-s7.jsonl")).expect("shock tape");
    let mut app = desk::inline_app_with(src, None, false).expect("app");
    submit(
        &mut app,
        1,
        "USING signal SPY exec SPY\nPLAN nostop budget 0.1R ttl 15:30\n  WHEN time >= 10:30\n  DO buy 1000 shares @ ask\n  EXIT T-10\n",
    );
    app.send(Command::Seek(ms(11, 45, 0)));
    let stop = app
        .snap
        .notices
        .iter()
        .find(|n| n.text.starts_with("nostop STOP:"))
        .unwrap_or_else(|| panic!("no STOP notice: {:?}", app.snap.notices));
    assert_eq!(stop.level, NoticeLevel::Warn);
    assert!(
        stop.text.contains("sold 20 SPY shares @ ")
            && stop.text.contains("the engine's assumed 1% stop"),
        "{}",
        stop.text
    );
}

/// A re-price veto's row note was the Bus's long reason (`VETO re-price esc#1 to 0.64:
/// worst case $128.00 exceeds the $…`), cut before the room left at every size; a fire's
/// veto reads `VETO worst $X > $Y left`. The re-price's leads with the same figures now
/// (`… (re-price esc#1 0.25)` after them), so they show in the Plans pane at 100x30.
#[test]
fn a_re_price_veto_reads_in_the_short_form() {
    let mut app = bare();
    submit(
        &mut app,
        1,
        "PLAN esc-veto budget 0.01R ttl 12:00\n  USING signal SPX exec SPY 0dte\n  WHEN time >= 09:31\n  DO buy 1 +2 C @ 0.05 esc ask 10s\n",
    );
    app.send(Command::Seek(ms(9, 35, 0)));
    let row = plan_row(&app, "esc-veto");
    let veto = row.risk.as_ref().expect("a veto").short();
    assert!(veto.starts_with("VETO worst $"), "{veto}");
    assert!(
        veto.ends_with(" > $10.00 left (re-price esc#1 0.25)"),
        "{veto}"
    );
    app.set_focus(Pane::Plans);
    app.tab = Pane::Plans;
    let s = screen(&app, 100, 30);
    assert!(
        s.iter()
            .any(|l| l.contains("VETO worst $25.00 > $10.00 left")),
        "{}",
        s.join("\n")
    );
}
