//! Drawing: the layout, every pane, the status line, the key footer and the dialogs. Pure
//! functions of the [`App`]; nothing here blocks or mutates the replay.

use super::app::{App, BusMode, Modal, Pane, PromptKind};
use super::keys::Action;
use crate::bus::PlanState;
use crate::bus::blotter::RiskKind;
use crate::lang;
use crate::session::owner::{Owner, PlanLine};
use crate::turn::Outcome;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Axis, Block, BorderType, Borders, Cell, Chart, Clear, Dataset, GraphType, Paragraph, Row,
    Table, Tabs, Wrap,
};

/// Panes that share one tabbed column on a compact screen.
pub const TABBED: [Pane; 5] = [
    Pane::View,
    Pane::Plans,
    Pane::Bus,
    Pane::Journal,
    Pane::Tokens,
];

/// Is the screen wide enough for every pane at once?
pub fn is_wide(area: Rect) -> bool {
    area.width >= 150 && area.height >= 40
}

/// Where each pane is drawn (panes not on screen are absent).
pub fn layout(app: &App, area: Rect) -> Vec<(Pane, Rect)> {
    let [_, main, _] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(area);
    let mut out = Vec::new();
    if is_wide(area) {
        let [left, mid, right] = Layout::horizontal([
            Constraint::Percentage(38),
            Constraint::Percentage(32),
            Constraint::Percentage(30),
        ])
        .areas(main);
        let [chart, editor] =
            Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(left);
        let [plans, bus, journal, tokens] = Layout::vertical([
            Constraint::Percentage(26),
            Constraint::Percentage(28),
            Constraint::Percentage(20),
            Constraint::Percentage(26),
        ])
        .areas(right);
        out.extend([
            (Pane::Chart, chart),
            (Pane::View, mid),
            (Pane::Plans, plans),
            (Pane::Bus, bus),
            (Pane::Journal, journal),
            (Pane::Tokens, tokens),
            (Pane::Editor, editor),
        ]);
    } else {
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(54), Constraint::Percentage(46)])
                .areas(main);
        let [chart, editor] =
            Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(left);
        let [_, body] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(right);
        out.extend([
            (Pane::Chart, chart),
            (Pane::Editor, editor),
            (app.tab, body),
        ]);
    }
    out
}

fn block<'a>(app: &App, pane: Pane, title: String) -> Block<'a> {
    let t = app.theme();
    let focused = app.focus == pane;
    let border = if focused {
        t.c("ui.border_focus")
    } else {
        t.c("ui.border")
    };
    Block::default()
        .borders(Borders::ALL)
        .border_type(if focused {
            BorderType::Thick
        } else {
            BorderType::Plain
        })
        .border_style(Style::default().fg(border))
        .title(Span::styled(
            format!(" {title} "),
            Style::default()
                .fg(t.c("ui.title"))
                .add_modifier(Modifier::BOLD),
        ))
}

/// Draw the whole desk.
pub fn draw(f: &mut Frame, app: &App) {
    let t = app.theme();
    let area = f.area();
    f.render_widget(
        Block::default().style(Style::default().bg(t.c("ui.bg")).fg(t.c("ui.fg"))),
        area,
    );
    let [status, main, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_status(f, app, status);
    if !is_wide(area) {
        let [_, right] =
            Layout::horizontal([Constraint::Percentage(54), Constraint::Percentage(46)])
                .areas(main);
        let titles: Vec<&str> = TABBED.iter().map(|p| p.title()).collect();
        let sel = TABBED.iter().position(|p| *p == app.tab).unwrap_or(0);
        f.render_widget(
            Tabs::new(titles)
                .select(sel)
                .style(Style::default().fg(t.c("ui.muted")))
                .highlight_style(
                    Style::default()
                        .fg(t.c("ui.title"))
                        .add_modifier(Modifier::BOLD),
                ),
            Rect { height: 1, ..right },
        );
    }
    for (pane, r) in layout(app, area) {
        match pane {
            Pane::Chart => draw_chart(f, app, r),
            Pane::View => draw_view(f, app, r),
            Pane::Plans => draw_plans(f, app, r),
            Pane::Bus => draw_bus(f, app, r),
            Pane::Journal => draw_journal(f, app, r),
            Pane::Tokens => draw_tokens(f, app, r),
            Pane::Editor => draw_editor(f, app, r),
        }
    }
    draw_footer(f, app, footer);
    if let Some(m) = &app.modal {
        draw_modal(f, app, m, area);
    }
}

fn short_hash(h: &str) -> &str {
    h.get(..12).unwrap_or(h)
}

fn draw_status(f: &mut Frame, app: &App, r: Rect) {
    let t = app.theme();
    let s = &app.snap;
    let base = Style::default()
        .bg(t.c("ui.status_bg"))
        .fg(t.c("ui.status_fg"));
    let play = if s.ended {
        "■ end"
    } else if s.playing {
        "▶ play"
    } else {
        "⏸ paused"
    };
    let author = match app.agent() {
        Some(a) => {
            let state = if !a.attached {
                "detached".to_string()
            } else if a.proposal.is_some() {
                "proposing".to_string()
            } else if let Some((w, _)) = &a.waiting {
                format!("writing @ {w}")
            } else if a.replay_only && a.live {
                "replayed".to_string()
            } else if a.copilot {
                "co-pilot".to_string()
            } else {
                "autopilot".to_string()
            };
            // A live author's last answer: wall time, output tokens, re-asks (measured by the
            // worker around the whole repair loop).
            let last = a
                .last_answer
                .map(|(wall, toks, re)| {
                    format!(" last {:.1}s {toks} tok {re} re-ask", wall.as_secs_f64())
                })
                .unwrap_or_default();
            format!("{} ({state}{last})", a.name)
        }
        None => "none".into(),
    };
    let text = format!(
        " KESTREL │ tape {} │ {} │ {} {} │ mode sim │ author {} │ hash {} (engine) ",
        s.tape.trim_start_matches("bundled:"),
        s.clock,
        play,
        s.speed.label(),
        author,
        short_hash(&s.hash),
    );
    f.render_widget(Paragraph::new(text).style(base), r);
}

fn footer_keys(app: &App) -> Vec<Action> {
    use Action::*;
    match app.focus {
        Pane::Editor => vec![Submit, Leave],
        Pane::Plans => vec![Up, Down, Open, Yank, PlayPause, StandDown, Help, Quit],
        Pane::Bus => vec![
            Up, Down, Open, BusToggle, PlayPause, Faster, Slower, Help, Quit,
        ],
        Pane::View => vec![Up, Down, ShowView, PlayPause, Help, Quit],
        _ => vec![
            PlayPause, Faster, Slower, StepTick, StepBar, Seek, Editor, StandDown, ShowView,
            FocusNext, Help, Quit,
        ],
    }
}

fn draw_footer(f: &mut Frame, app: &App, r: Rect) {
    let t = app.theme();
    let key = Style::default()
        .fg(t.c("ui.title"))
        .add_modifier(Modifier::BOLD);
    let muted = Style::default().fg(t.c("ui.muted"));
    let mut spans = Vec::new();
    // The newest message (a notice of the session: what routed, what was refused, what an
    // agent did to your plans) comes first, so a narrow screen still shows it.
    if let Some(m) = app.message.as_ref().filter(|_| app.proposal().is_none()) {
        let room = usize::from(r.width).saturating_mul(3) / 5;
        let m: String = if m.chars().count() > room {
            let mut s: String = m.chars().take(room.saturating_sub(1)).collect();
            s.push('…');
            s
        } else {
            m.clone()
        };
        spans.push(Span::styled(
            format!(" {m} │"),
            Style::default().fg(t.c("state.info")),
        ));
    }
    if let Some(p) = app.proposal() {
        let author = app.agent().map(|a| a.name.clone()).unwrap_or_default();
        let written = p.run.turn.kestrel.clone();
        let ctx_line = written
            .lines()
            .find(|l| {
                !l.trim().is_empty() && !l.trim_start().starts_with('#') && !l.starts_with("```")
            })
            .unwrap_or("(comments only)")
            .to_string();
        spans.push(Span::styled(
            format!(
                " {} proposes {} @ {}: {} ",
                author,
                p.run.turn.outcome.name(),
                p.wake,
                ctx_line
            ),
            Style::default().fg(t.c("state.warn")),
        ));
        spans.push(Span::styled(app.keys.label(Action::Accept), key));
        spans.push(Span::styled(" accept ", muted));
        spans.push(Span::styled(app.keys.label(Action::Reject), key));
        spans.push(Span::styled(" reject ", muted));
    } else {
        for a in footer_keys(app) {
            spans.push(Span::styled(format!(" {}", app.keys.label(a)), key));
            let word = a.name().replace('_', "-");
            spans.push(Span::styled(format!(" {word}"), muted));
        }
        if app.focus == Pane::Editor {
            spans.push(Span::styled(
                "  (tab indents; arrows move; C-u clears)",
                muted,
            ));
        }
    }
    f.render_widget(Paragraph::new(Line::from(spans)), r);
}

fn draw_view(f: &mut Frame, app: &App, r: Rect) {
    let t = app.theme();
    let fr = &app.snap.frame;
    let budget = fr
        .budget
        .map(|b| format!("{} / {b} tok", fr.tokens))
        .unwrap_or_else(|| format!("{} tok", fr.tokens));
    let title = format!("View {} — {budget}", app.snap.view_name);
    let over = fr.budget.is_some_and(|b| fr.tokens > b);
    let mut lines: Vec<Line> = fr.text.lines().map(|l| Line::from(l.to_string())).collect();
    if !fr.dropped.is_empty() {
        lines.push(Line::from(Span::styled(
            format!("(cut to fit: {})", fr.dropped.join("; ")),
            Style::default().fg(t.c("ui.muted")),
        )));
    }
    let mut b = block(app, Pane::View, title);
    if over {
        b = b.border_style(Style::default().fg(t.c("state.error")));
    }
    f.render_widget(
        Paragraph::new(lines)
            .block(b)
            .style(Style::default().fg(t.c("ui.fg")))
            .scroll((app.view_scroll, 0)),
        r,
    );
}

fn hhmm(secs: f64) -> String {
    let s = secs.max(0.0) as u32;
    format!("{:02}:{:02}", s / 3600, (s / 60) % 60)
}

fn draw_chart(f: &mut Frame, app: &App, r: Rect) {
    let t = app.theme();
    let c = &app.snap.chart;
    let last = c.points.last().map(|p| p.1);
    let title = format!(
        "Chart {} {}  hod {}  lod {}  vwap {}",
        c.sym,
        last.map(|p| format!("{p:.2}"))
            .unwrap_or_else(|| "-".into()),
        c.hod
            .map(|p| format!("{p:.2}"))
            .unwrap_or_else(|| "-".into()),
        c.lod
            .map(|p| format!("{p:.2}"))
            .unwrap_or_else(|| "-".into()),
        c.vwap
            .map(|p| format!("{p:.2}"))
            .unwrap_or_else(|| "-".into()),
    );
    let x0 = f64::from(app.snap.open.0 / 1000);
    let now = f64::from(app.snap.clock.0 / 1000);
    let x1 = now.max(x0 + 15.0 * 60.0);
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for p in &c.points {
        lo = lo.min(p.1);
        hi = hi.max(p.1);
    }
    for v in [c.vwap].into_iter().flatten() {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        lo = 0.0;
        hi = 1.0;
    }
    let pad = ((hi - lo) * 0.08).max(0.05);
    let (lo, hi) = (lo - pad, hi + pad);
    let hline = |y: Option<f64>| y.map(|y| vec![(x0, y), (x1, y)]).unwrap_or_default();
    let hod = hline(c.hod);
    let lod = hline(c.lod);
    let vwap = hline(c.vwap);
    let mut sets = vec![
        Dataset::default()
            .name("hod")
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(t.c("market.hod")))
            .data(&hod),
        Dataset::default()
            .name("lod")
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(t.c("market.lod")))
            .data(&lod),
        Dataset::default()
            .name("vwap")
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(t.c("market.vwap")))
            .data(&vwap),
        Dataset::default()
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(t.c("ui.fg")))
            .data(&c.points),
    ];
    if !c.fires.is_empty() {
        sets.push(
            Dataset::default()
                .name("fire")
                .marker(Marker::Dot)
                .graph_type(GraphType::Scatter)
                .style(Style::default().fg(t.c("market.fire")))
                .data(&c.fires),
        );
    }
    if !c.fills.is_empty() {
        sets.push(
            Dataset::default()
                .name("fill")
                .marker(Marker::Block)
                .graph_type(GraphType::Scatter)
                .style(Style::default().fg(t.c("market.fill")))
                .data(&c.fills),
        );
    }
    let muted = Style::default().fg(t.c("ui.muted"));
    let chart = Chart::new(sets)
        .block(block(app, Pane::Chart, title))
        .x_axis(Axis::default().bounds([x0, x1]).style(muted).labels([
            hhmm(x0),
            hhmm((x0 + x1) / 2.0),
            hhmm(x1),
        ]))
        .y_axis(
            Axis::default()
                .bounds([lo, hi])
                .style(muted)
                .labels([format!("{lo:.1}"), format!("{hi:.1}")]),
        )
        .hidden_legend_constraints((Constraint::Length(0), Constraint::Length(0)));
    f.render_widget(chart, r);
}

fn state_color(app: &App, state: PlanState) -> Style {
    let t = app.theme();
    let k = match state {
        PlanState::Armed | PlanState::Resting => "state.info",
        PlanState::Fired | PlanState::Filled => "state.ok",
        PlanState::StoodDown | PlanState::Expired | PlanState::Done => "ui.muted",
        PlanState::DeArmed | PlanState::Halted => "state.error",
        PlanState::Dormant => "ui.fg",
    };
    Style::default().fg(t.c(k))
}

/// Who armed a plan, as the Plans pane says it.
fn owner_label(o: &Owner) -> String {
    match o {
        Owner::Person => "you".into(),
        Owner::Agent(n) => n.chars().take(5).collect(),
        Owner::Unowned => "-".into(),
    }
}

/// The Plans pane's last column: the last risk decision when it is the newest thing said
/// of the plan, else the clause that fired or why it is in its state.
fn plan_why(p: &PlanLine) -> String {
    match &p.risk {
        Some(r) => {
            let what = match r.kind {
                RiskKind::Veto => format!("VETO {}", r.reason),
                RiskKind::Clamp { from, to } => format!("qty {from}→{to} {}", r.budget),
            };
            format!("{what} · {}", p.note)
        }
        None => p.note.clone(),
    }
}

fn draw_plans(f: &mut Frame, app: &App, r: Rect) {
    let t = app.theme();
    let plans = &app.snap.plans;
    let rows: Vec<Row> = plans
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut row = Row::new(vec![
                Cell::from(p.name.clone()),
                Cell::from(owner_label(&p.owner)),
                Cell::from(Span::styled(
                    crate::bus::canon::state_name(p.state),
                    state_color(app, p.state),
                )),
                Cell::from(format!("{:+.2}/{:.2}R", p.pnl_r, p.budget_r)),
                Cell::from(
                    p.ttl
                        .as_ref()
                        .map(lang::print::ttl_text)
                        .unwrap_or_default(),
                ),
                Cell::from(plan_why(p)),
            ]);
            if i == app.plan_sel && app.focus == Pane::Plans {
                row = row.style(Style::default().bg(t.c("ui.selection_bg")));
            }
            row
        })
        .collect();
    let title = format!(
        "Plans — {} armed",
        plans.iter().filter(|p| p.state == PlanState::Armed).count()
    );
    let table = Table::new(
        rows,
        [
            Constraint::Min(12),
            Constraint::Length(5),
            Constraint::Length(10),
            Constraint::Length(11),
            Constraint::Length(5),
            Constraint::Fill(1),
        ],
    )
    .header(
        Row::new(vec![
            "plan",
            "by",
            "state",
            "pnl/budget",
            "ttl",
            "clause / why",
        ])
        .style(Style::default().fg(t.c("ui.muted"))),
    )
    .block(block(app, Pane::Plans, title));
    if plans.is_empty() {
        f.render_widget(
            Paragraph::new(Span::styled(
                "no plans armed — write one in the Editor (e), or let the agent",
                Style::default().fg(t.c("ui.muted")),
            ))
            .block(block(app, Pane::Plans, "Plans".into())),
            r,
        );
    } else {
        f.render_widget(table, r);
    }
}

fn draw_bus(f: &mut Frame, app: &App, r: Rect) {
    let t = app.theme();
    let s = &app.snap;
    let inner_h = r.height.saturating_sub(2) as usize;
    let muted = Style::default().fg(t.c("ui.muted"));
    let (title, lines): (String, Vec<Line>) = match app.bus_mode {
        BusMode::Bus => {
            // Follow the newest, or keep the selected event in view (highlighted).
            let (first, last) = app.bus_window();
            let sel = app.bus_sel.map(|i| i.clamp(first, last));
            let end = sel
                .map(|i| (i - first) as usize + 1)
                .unwrap_or(s.bus.len())
                .max(inner_h.min(s.bus.len()));
            let start = end.saturating_sub(inner_h);
            let hi = Style::default()
                .bg(t.c("ui.selection_bg"))
                .add_modifier(Modifier::BOLD);
            let lines = s.bus[start..end.min(s.bus.len())]
                .iter()
                .enumerate()
                .map(|(k, l)| {
                    if sel == Some(first + (start + k) as u64) {
                        Line::from(Span::styled(l.clone(), hi))
                    } else {
                        Line::from(l.clone())
                    }
                })
                .collect();
            let title = match sel {
                Some(i) => format!(
                    "Bus — event {} of {} [↑↓ select · enter inspect · b: Blotter]",
                    i + 1,
                    s.bus_events
                ),
                None => format!("Bus — {} events [b: Blotter]", s.bus_events),
            };
            (title, lines)
        }
        BusMode::Blotter => {
            let b = &s.book;
            let mut lines = vec![Line::from(Span::styled(
                format!("P&L {:+.2} $  {:+.2} R", b.pnl_usd, b.pnl_r),
                Style::default().add_modifier(Modifier::BOLD),
            ))];
            lines.push(Line::from(Span::styled("positions", muted)));
            for p in &b.positions {
                lines.push(Line::from(format!(
                    "  {} {} {} @ {:.2} mark {:.2} {:+.2}$",
                    p.plan, p.qty, p.instrument, p.avg_px, p.mark, p.pnl_usd
                )));
            }
            lines.push(Line::from(Span::styled("orders", muted)));
            for o in &b.orders {
                lines.push(Line::from(format!(
                    "  {} {} {} {} @ {:.2}",
                    o.plan, o.side, o.qty, o.instrument, o.limit
                )));
            }
            lines.push(Line::from(Span::styled("fills", muted)));
            for x in b.fills.iter().rev().take(inner_h) {
                lines.push(Line::from(format!(
                    "  {} {} {} {} {} @ {:.2}{}",
                    x.time,
                    x.plan,
                    x.side,
                    x.qty,
                    x.instrument,
                    x.px,
                    if x.quoted { " (quoted)" } else { "" }
                )));
            }
            ("Blotter [b: Bus]".to_string(), lines)
        }
    };
    f.render_widget(Paragraph::new(lines).block(block(app, Pane::Bus, title)), r);
}

fn draw_journal(f: &mut Frame, app: &App, r: Rect) {
    let t = app.theme();
    let muted = Style::default().fg(t.c("ui.muted"));
    let mut lines: Vec<Line> = Vec::new();
    let rows = app.turn_rows();
    for turn in rows {
        let time = turn.ts().to_string();
        lines.push(Line::from(vec![
            Span::styled(format!("{} ", &time[..8.min(time.len())]), muted),
            Span::styled(
                format!("{} ", turn.author()),
                Style::default().add_modifier(Modifier::BOLD),
            ),
            Span::raw(turn.label()),
        ]));
        if let Some(r) = turn.routed() {
            for j in &r.journal {
                lines.push(Line::from(Span::styled(
                    format!("  # {j}"),
                    Style::default().fg(t.c("syntax.comment")),
                )));
            }
            if let Outcome::StandDown { reason } = &r.outcome {
                lines.push(Line::from(format!("  reason: {reason}")));
            }
            for e in r.outcome.errors().iter().take(2) {
                lines.push(Line::from(Span::styled(
                    format!("  {}", e.one_line()),
                    Style::default().fg(t.c("state.error")),
                )));
            }
        }
    }
    if let Some(p) = app.proposal() {
        lines.push(Line::from(Span::styled(
            format!(
                "{} proposes {} @ {} (accept / reject):",
                app.agent().map(|a| a.name.as_str()).unwrap_or("agent"),
                p.run.turn.outcome.name(),
                p.wake
            ),
            Style::default().fg(t.c("state.warn")),
        )));
        for j in &p.run.turn.journal {
            lines.push(Line::from(Span::styled(
                format!("  # {j}"),
                Style::default().fg(t.c("syntax.comment")),
            )));
        }
    }
    let thinking = app.agent().map(|a| a.thinking.as_str()).unwrap_or("");
    if !thinking.is_empty() {
        lines.push(Line::from(Span::styled("agent is writing…", muted)));
        for l in thinking
            .lines()
            .rev()
            .take(3)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            lines.push(Line::from(Span::styled(format!("  {l}"), muted)));
        }
    }
    let h = r.height.saturating_sub(2) as usize;
    let skip = lines.len().saturating_sub(h);
    let lines: Vec<Line> = lines.into_iter().skip(skip).collect();
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(block(
                app,
                Pane::Journal,
                format!("Journal — {} turns", rows.len()),
            )),
        r,
    );
}

fn draw_tokens(f: &mut Frame, app: &App, r: Rect) {
    let t = app.theme();
    let muted = Style::default().fg(t.c("ui.muted"));
    let mut rows = Vec::new();
    let (mut tr, mut tk, mut te) = (0usize, 0usize, 0usize);
    let mut repairs = 0usize;
    for turn in app.turn_rows() {
        repairs += turn.repairs();
        let Some(tok) = turn.tokens() else { continue };
        let name = turn
            .routed()
            .map(|r| r.outcome.name())
            .unwrap_or("rejected");
        tr += tok.reply;
        tk += tok.kestrel.unwrap_or(0);
        te += tok.envelope.unwrap_or(0);
        rows.push(Row::new(vec![
            Cell::from(turn.ts().hhmm()),
            Cell::from(turn.author().to_string()),
            Cell::from(name),
            Cell::from(tok.reply.to_string()),
            Cell::from(tok.kestrel.map(|x| x.to_string()).unwrap_or("-".into())),
            Cell::from(tok.envelope.map(|x| x.to_string()).unwrap_or("-".into())),
            Cell::from(
                tok.saving_pct
                    .map(|p| format!("{p:.0}%"))
                    .unwrap_or("-".into()),
            ),
        ]));
    }
    let saving = if te > 0 {
        format!("{:.0}%", 100.0 * (te as f64 - tk as f64) / te as f64)
    } else {
        "-".into()
    };
    let h = r.height.saturating_sub(7) as usize;
    let skip = rows.len().saturating_sub(h);
    let mut rows: Vec<Row> = rows.into_iter().skip(skip).collect();
    rows.push(
        Row::new(vec![
            Cell::from("total"),
            Cell::from(""),
            Cell::from(""),
            Cell::from(tr.to_string()),
            Cell::from(tk.to_string()),
            Cell::from(te.to_string()),
            Cell::from(saving),
        ])
        .style(Style::default().add_modifier(Modifier::BOLD)),
    );
    let counts = app
        .outcome_counts()
        .iter()
        .map(|(n, c)| format!("{n} {c}"))
        .collect::<Vec<_>>()
        .join(" · ");
    let foot = vec![
        Line::from(Span::styled(format!("{counts} · repairs {repairs}"), muted)),
        Line::from(Span::styled(
            format!(
                "prompt: card {} · view {} · menu {}",
                app.prompt_tokens.0, app.snap.frame.tokens, app.prompt_tokens.1
            ),
            muted,
        )),
    ];
    let b = block(app, Pane::Tokens, "Tokens (cl100k)".into());
    let inner = b.inner(r);
    f.render_widget(b, r);
    let [top, bottom] = Layout::vertical([Constraint::Min(1), Constraint::Length(2)]).areas(inner);
    f.render_widget(Paragraph::new(foot).wrap(Wrap { trim: true }), bottom);
    let table = Table::new(
        rows,
        [
            Constraint::Length(5),
            Constraint::Length(8),
            Constraint::Length(10),
            Constraint::Length(5),
            Constraint::Length(7),
            Constraint::Length(8),
            Constraint::Length(5),
        ],
    )
    .header(
        Row::new(vec![
            "time", "author", "outcome", "reply", "kestrel", "envelope", "saved",
        ])
        .style(muted),
    );
    f.render_widget(table, top);
}

fn draw_editor(f: &mut Frame, app: &App, r: Rect) {
    let t = app.theme();
    let ed = &app.editor;
    let n = ed.diagnostics().len();
    let status = if ed.is_blank() {
        "empty: submit passes".to_string()
    } else if n == 0 {
        "parses ✓".to_string()
    } else {
        format!("{n} error{}", if n == 1 { "" } else { "s" })
    };
    let title = format!(
        "Editor — {status} — {} submits",
        app.keys.label(Action::Submit)
    );
    let (lines, at) = ed.display(t);
    let inner_h = r.height.saturating_sub(2) as usize;
    let (row, col) = ed.cursor();
    let cur_line = at.get(row).copied().unwrap_or(0);
    let scroll = cur_line.saturating_sub(inner_h.saturating_sub(2).max(1));
    let b = block(app, Pane::Editor, title);
    let inner = b.inner(r);
    f.render_widget(Paragraph::new(lines).block(b).scroll((scroll as u16, 0)), r);
    if ed.is_blank() && app.focus != Pane::Editor {
        f.render_widget(
            Paragraph::new(Span::styled(
                "press e to write a turn: a PLAN, STAND-DOWN <reason>, SHOW VIEW, CANCEL <plan>",
                Style::default().fg(t.c("ui.muted")),
            ))
            .wrap(Wrap { trim: true }),
            inner,
        );
    }
    if app.focus == Pane::Editor && app.modal.is_none() {
        let y = inner.y + (cur_line - scroll) as u16;
        let x = inner.x + col as u16;
        if y < inner.bottom() && x < inner.right() {
            f.set_cursor_position((x, y));
        }
    }
}

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

fn draw_modal(f: &mut Frame, app: &App, m: &Modal, area: Rect) {
    let t = app.theme();
    let style = Style::default().bg(t.c("ui.bg")).fg(t.c("ui.fg"));
    let frame_block = |title: &str| {
        Block::default()
            .borders(Borders::ALL)
            .border_type(BorderType::Double)
            .border_style(Style::default().fg(t.c("ui.border_focus")))
            .title(format!(" {title} "))
            .style(style)
    };
    match m {
        Modal::Help => {
            let r = centered(area, 86, area.height.saturating_sub(2));
            let mut lines: Vec<Line> = Action::ALL
                .iter()
                .map(|a| {
                    Line::from(vec![
                        Span::styled(
                            format!("{:<16}", app.keys.labels(*a).join(" ")),
                            Style::default()
                                .fg(t.c("ui.title"))
                                .add_modifier(Modifier::BOLD),
                        ),
                        Span::raw(a.describe()),
                    ])
                })
                .collect();
            let dir = crate::session::saved::config_dir()
                .map(|d| d.join("keys.toml").display().to_string())
                .unwrap_or_else(|| "keys.toml in the config directory".into());
            lines.push(Line::from(Span::styled(
                format!("any key closes · {dir} remaps keys"),
                Style::default().fg(t.c("ui.muted")),
            )));
            f.render_widget(Clear, r);
            f.render_widget(Paragraph::new(lines).block(frame_block("Keys")), r);
        }
        Modal::Confirm(super::app::Confirm::Restart) => {
            let r = centered(area, 64, 5);
            f.render_widget(Clear, r);
            f.render_widget(
                Paragraph::new(vec![
                    Line::from("Restart from the open? The book is emptied and every act of"),
                    Line::from("this run is dropped (a saved session keeps what was written)."),
                    Line::from(Span::styled(
                        "y / enter: restart · any other key: keep going",
                        Style::default().fg(t.c("ui.muted")),
                    )),
                ])
                .block(frame_block("Restart")),
                r,
            );
        }
        Modal::Prompt { kind, input } => {
            let r = centered(area, 70, 5);
            let (title, hint) = match kind {
                PromptKind::StandDown => ("STAND-DOWN", "reason (enter routes, esc cancels):"),
                PromptKind::Seek => ("Seek", "tape time HH:MM or HH:MM:SS (enter seeks):"),
            };
            f.render_widget(Clear, r);
            f.render_widget(
                Paragraph::new(vec![
                    Line::from(Span::styled(hint, Style::default().fg(t.c("ui.muted")))),
                    Line::from(format!("> {input}")),
                ])
                .block(frame_block(title)),
                r,
            );
        }
        Modal::ViewPicker { sel, checked } => {
            let h = lang::ast::PANE_CATALOG.len() as u16 + 3;
            let r = centered(area, 50, h);
            let mut lines: Vec<Line> = lang::ast::PANE_CATALOG
                .iter()
                .zip(checked)
                .enumerate()
                .map(|(i, (p, c))| {
                    let s = format!(
                        "{} [{}] {}",
                        if i == *sel { ">" } else { " " },
                        if *c { "x" } else { " " },
                        super::app::pane_spelling(p)
                    );
                    if i == *sel {
                        Line::from(Span::styled(s, Style::default().bg(t.c("ui.selection_bg"))))
                    } else {
                        Line::from(s)
                    }
                })
                .collect();
            lines.push(Line::from(Span::styled(
                "space toggles · enter routes SHOW VIEW · esc",
                Style::default().fg(t.c("ui.muted")),
            )));
            f.render_widget(Clear, r);
            f.render_widget(Paragraph::new(lines).block(frame_block("SHOW VIEW")), r);
        }
        Modal::Event(text) => {
            let h = (text.lines().count() as u16 + 3).min(area.height);
            let r = centered(area, area.width.saturating_sub(8).min(110), h);
            let mut lines: Vec<Line> = text.lines().map(|l| Line::from(l.to_string())).collect();
            lines.push(Line::from(Span::styled(
                "any key closes",
                Style::default().fg(t.c("ui.muted")),
            )));
            f.render_widget(Clear, r);
            f.render_widget(
                Paragraph::new(lines)
                    .wrap(Wrap { trim: false })
                    .block(frame_block("Event")),
                r,
            );
        }
        Modal::PlanText(text) => {
            let h = (text.lines().count() as u16 + 3).min(area.height);
            let r = centered(area, area.width.saturating_sub(8).min(110), h);
            let mut lines: Vec<Line> = text
                .lines()
                .map(|l| super::editor::highlight(l, t))
                .collect();
            lines.push(Line::from(Span::styled(
                "y copies into the editor · any key closes",
                Style::default().fg(t.c("ui.muted")),
            )));
            f.render_widget(Clear, r);
            f.render_widget(Paragraph::new(lines).block(frame_block("Plan")), r);
        }
    }
}
