//! Drawing: the layout, every pane, the status line, the key footer and the dialogs. Pure
//! functions of the [`App`]; nothing here blocks or mutates the replay.

use super::app::{App, BusMode, Modal, Pane, PromptKind};
use super::keys::Action;
use super::theme::Role;
use crate::bus::PlanState;
use crate::bus::blotter::RiskKind;
use crate::lang;
use crate::session::owner::{NoticeLevel, Owner, PlanLine, TurnLine, proposal_summary};
use crate::turn::Outcome;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, BorderType, Borders, Cell, Clear, Paragraph, Row, Table, Tabs, Wrap,
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

/// How the left column is shared between the Chart and the Editor: `chart_pct` percent to
/// the Chart while a turn is being written (or a draft waits), and while the Editor is
/// empty and not focused, the Chart takes all but the Editor's hint ([`EDITOR_FOLDED`]
/// rows); `e` (or focusing it) opens it again. A desk that is being watched shows its
/// candles, not an empty box.
fn chart_editor(app: &App, chart_pct: u16) -> [Constraint; 2] {
    if app.editor.is_blank() && app.focus != Pane::Editor && !shows_proposal(app) {
        [Constraint::Min(3), Constraint::Length(EDITOR_FOLDED)]
    } else {
        [
            Constraint::Percentage(chart_pct),
            Constraint::Percentage(100 - chart_pct),
        ]
    }
}

/// Does the Editor show the co-pilot proposal waiting (read-only) rather than the
/// person's text? While one waits and the person is not writing (the Editor unfocused):
/// what `a` would route is read where a turn is read, before it is accepted. The person's
/// own draft is kept, and shows again when they focus the Editor or the proposal is
/// decided.
pub fn shows_proposal(app: &App) -> bool {
    app.proposal().is_some() && app.focus != Pane::Editor
}

/// The Editor's height while it is folded (empty, not focused): its borders and the two
/// lines of its hint.
const EDITOR_FOLDED: u16 = 4;

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
        let [chart, editor] = Layout::vertical(chart_editor(app, 55)).areas(left);
        let [plans, bus, journal, tokens] = right_column(app, right);
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
        let [chart, editor] = Layout::vertical(chart_editor(app, 50)).areas(left);
        let [_, body] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(right);
        out.extend([
            (Pane::Chart, chart),
            (Pane::Editor, editor),
            (app.tab, body),
        ]);
    }
    out
}

/// The wide layout's right column: Plans, Bus, Journal, Tokens at 26/28/20/26%, except that
/// Plans grows (to at most 45% of the column, taking the rows from Tokens) when its share
/// would cut a plan's second row: a veto or clamp note on the
/// last plan's `↳` line was off screen until scrolled, with the title saying every plan was
/// in view (5 plans at 160x48).
fn right_column(app: &App, right: Rect) -> [Rect; 4] {
    let old: [Rect; 4] = Layout::vertical([
        Constraint::Percentage(26),
        Constraint::Percentage(28),
        Constraint::Percentage(20),
        Constraint::Percentage(26),
    ])
    .areas(right);
    // A header row and two rows a plan (the narrow form; the wide one needs one) in borders.
    let per = if old[0].width.saturating_sub(2) < 90 {
        2
    } else {
        1
    };
    let need = u16::try_from(3 + per * app.snap.plans.len()).unwrap_or(u16::MAX);
    if need <= old[0].height {
        return old;
    }
    // The rows come out of Tokens (the meter, least read in play) while it keeps its
    // border and a row; the Blotter and the Journal keep theirs.
    let room = old[0].height + old[3].height.saturating_sub(3);
    let plans_h = need
        .min(right.height * 45 / 100)
        .min(room)
        .max(old[0].height);
    Layout::vertical([
        Constraint::Length(plans_h),
        Constraint::Length(old[1].height),
        Constraint::Length(old[2].height),
        Constraint::Fill(1),
    ])
    .areas(right)
}

fn block<'a>(app: &App, pane: Pane, title: String) -> Block<'a> {
    let t = app.theme();
    let focused = app.focus == pane;
    let border = if focused {
        t.ui_border_focus()
    } else {
        t.ui_border()
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
                .fg(t.ui_title())
                .add_modifier(Modifier::BOLD),
        ))
}

/// Draw the whole desk.
pub fn draw(f: &mut Frame, app: &App) {
    let t = app.theme();
    let area = f.area();
    f.render_widget(
        Block::default().style(Style::default().bg(t.ui_bg()).fg(t.ui_fg())),
        area,
    );
    let [status, main, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_status(f, app, status);
    let compact = !is_wide(area);
    app.compact.set(compact);
    if compact {
        let [_, right] =
            Layout::horizontal([Constraint::Percentage(54), Constraint::Percentage(46)])
                .areas(main);
        let titles: Vec<&str> = TABBED.iter().map(|p| p.title()).collect();
        let sel = TABBED.iter().position(|p| *p == app.tab).unwrap_or(0);
        f.render_widget(
            Tabs::new(titles)
                .select(sel)
                .style(Style::default().fg(t.ui_muted()))
                .highlight_style(
                    Style::default()
                        .fg(t.ui_title())
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
    let base = Style::default().bg(t.ui_status_bg()).fg(t.ui_status_fg());
    let play = if s.ended {
        "■ end"
    } else if s.playing {
        "▶ play"
    } else {
        "⏸ paused"
    };
    // Fields in screen order, each form with the rank at which it gives way when the line is
    // narrow, the highest first (the clock, the play state and the hash stay). A live
    // author's long name (its URL or command line) gives way before the tape's name, and so
    // do the words that only label (`author `, the hash's `(engine)`); the last answer's
    // figures go after it.
    let tape = tape_field(s);
    let (tape_forms, tape_kept) = tape_forms(s);
    let hash = format!("hash {}", short_hash(&s.hash));
    let fields = |early: bool| {
        let hash_forms = if early {
            vec![
                (RANK_DETAIL, format!("{hash} (engine)")),
                (20, hash.clone()),
            ]
        } else {
            vec![(20, format!("{hash} (engine)"))]
        };
        [
            vec![(RANK_BRAND, "KESTREL".to_string())],
            if early {
                tape_forms.clone()
            } else {
                vec![(RANK_TAPE, tape.clone())]
            },
            vec![(0, s.clock.to_string())],
            vec![(10, format!("{} {}", play, s.speed.label()))],
            vec![(RANK_MODE, "mode sim".to_string())],
            author_forms(app, early),
            hash_forms,
        ]
    };
    let width = usize::from(r.width);
    // The words that only label give way to keep the tape's name; where it goes all the
    // same (a live author writing at 100x30, any author at 80x24), the line is as it was.
    let text = status_text(&fields(true), width);
    let text = if text.contains(&tape_kept) {
        text
    } else {
        status_text(&fields(false), width)
    };
    // A provider that keeps failing reads in the error colour, on the line until an answer
    // comes through (the footer's notice goes after a few seconds).
    let failing = app.agent().and_then(failing_text);
    let line = match failing
        .as_deref()
        .and_then(|w| text.find(w).map(|i| (i, w.len())))
    {
        Some((i, n)) => Line::from(vec![
            Span::raw(text[..i].to_string()),
            Span::styled(
                text[i..i + n].to_string(),
                Style::default()
                    .fg(t.state_error())
                    .add_modifier(Modifier::BOLD),
            ),
            Span::raw(text[i + n..].to_string()),
        ]),
        None => Line::from(text),
    };
    f.render_widget(Paragraph::new(line).style(base), r);
}

/// `provider-error connect ×3`: the agent's last answers in a row were provider errors,
/// of this kind, so many.
fn failing_text(a: &crate::session::owner::AgentStatus) -> Option<String> {
    a.failing
        .as_ref()
        .map(|(kind, n)| format!("provider-error {kind} ×{n}"))
}

/// What a live author's last answer was sent and wrote, in tokens ([`spend_io`]): the
/// provider's `usage` when every attempt reported one (`sent 1234 got 78`), else the desk's
/// own figures (`sent ~2100 got 107`: the prompt estimated as the card and the View, per
/// attempt; the reply counted in cl100k, `~` too when a reply refused unread for its size
/// was estimated).
fn spend_text(app: &App, last: &crate::session::owner::LastAnswer) -> String {
    let about = if last.estimated { "~" } else { "" };
    let toks = last.tokens;
    let io = spend_io(
        &last.spend,
        u64::from(last.re_asks) + 1,
        Some(app.prompt_tokens.0 + last.view_tokens),
    );
    match io.sent {
        Some(sent) if io.provider => format!("sent {sent} got {}", io.got),
        Some(sent) => format!("sent ~{sent} got {about}{toks}"),
        None => format!("got {about}{toks}"),
    }
}

/// The status line's author field, from its longest form to its shortest: `author
/// cmd:/tmp/x/slow.sh (writing @ open 3s)`, then by its short name (`author slow.sh
/// (writing @ open 3s)`), without the word `author` (`early`: before the tape's name, where
/// that keeps it), without the last answer's figures, `slow.sh (writing 3s)`,
/// and at the last `writing 3s`: while a live author writes, something on the line always
/// says so, and for how long (wall time), where the whole field was dropped at 100x30.
fn author_forms(app: &App, early: bool) -> Vec<(u8, String)> {
    let Some(a) = app.agent() else {
        return vec![(RANK_AUTHOR, "author none".into())];
    };
    // The state, and its brief form (without the wake it answers).
    let (state, brief) = if !a.attached {
        ("detached".to_string(), "detached".to_string())
    } else if a.proposal.is_some() {
        ("proposing".to_string(), "proposing".to_string())
    } else if let Some((w, _)) = &a.waiting {
        let secs = app
            .writing_for()
            .map(|d| format!(" {}s", d.as_secs()))
            .unwrap_or_default();
        // Replies already refused and re-asked: the author is answering, and being
        // refused, not slow.
        let re = match a.re_asked {
            0 => String::new(),
            n => format!(" · re-ask {n}"),
        };
        (
            format!("writing @ {w}{secs}{re}"),
            format!("writing{secs}{re}"),
        )
    } else if a.replay_only && a.live {
        // Reopened: the recorded answers act; the live author is not called.
        let s = "replayed, not called".to_string();
        (s.clone(), s)
    } else if a.copilot {
        ("co-pilot".to_string(), "co-pilot".to_string())
    } else {
        ("autopilot".to_string(), "autopilot".to_string())
    };
    // A live author's last answer: wall time, output tokens, re-asks (measured by the
    // worker around the whole repair loop); `~` when the tokens are an estimate (a reply
    // refused unread for its size).
    // A provider failing: that, until an answer comes through, in every form.
    if let Some(fail) = failing_text(a) {
        let mut forms = vec![
            (
                RANK_LONG_NAME,
                format!("author {} ({state} last: {fail})", a.name),
            ),
            (
                if early { RANK_DETAIL } else { RANK_AUTHOR },
                format!("author {} ({state} last: {fail})", a.short_name),
            ),
        ];
        if early {
            forms.push((
                RANK_AUTHOR,
                format!("{} ({state} last: {fail})", a.short_name),
            ));
        }
        forms.extend([
            (
                RANK_AUTHOR,
                format!("{} ({brief} last: {fail})", a.short_name),
            ),
            (RANK_AUTHOR, format!("{} ({fail})", a.short_name)),
        ]);
        // While it writes again, the shortest form still says so.
        if a.waiting.is_some() && a.attached && a.proposal.is_none() {
            forms.push((RANK_AUTHOR, format!("{brief} · {fail}")));
        } else {
            forms.push((RANK_AUTHOR, fail));
        }
        return distinct_forms(forms);
    }
    let last = a
        .last_answer
        .map(|last| {
            format!(
                " last {:.1}s {} tok {} re-ask",
                last.wall.as_secs_f64(),
                spend_text(app, &last),
                last.re_asks
            )
        })
        .unwrap_or_default();
    let mut forms = vec![(RANK_LONG_NAME, format!("author {} ({state}{last})", a.name))];
    if early {
        forms.extend([
            (
                RANK_DETAIL,
                format!("author {} ({state}{last})", a.short_name),
            ),
            (
                RANK_AUTHOR_EARLY,
                format!("{} ({state}{last})", a.short_name),
            ),
            (RANK_AUTHOR_EARLY, format!("{} ({state})", a.short_name)),
        ]);
    } else {
        forms.extend([
            (
                RANK_AUTHOR,
                format!("author {} ({state}{last})", a.short_name),
            ),
            (RANK_AUTHOR, format!("author {} ({state})", a.short_name)),
        ]);
    }
    forms.push((RANK_AUTHOR, format!("{} ({brief})", a.short_name)));
    if a.waiting.is_some() && a.attached && a.proposal.is_none() {
        forms.push((RANK_AUTHOR, brief));
    } else if early && brief == "autopilot" {
        // Where the tape's name needs the room: `(auto)`, before the name is cut.
        if let Some(f) = forms.last_mut() {
            f.0 = RANK_AUTHOR_EARLY;
        }
        forms.push((RANK_AUTHOR, format!("{} (auto)", a.short_name)));
    }
    distinct_forms(forms)
}

/// The status line's ranks that fields share (see [`status_text`]): the higher gives way
/// first. The clock is 0, the play state 10, the hash 20.
const RANK_BRAND: u8 = 60;
const RANK_MODE: u8 = 50;
/// A live author's form that names it whole (`qwen @ http://127.0.0.1:8080/v1`,
/// `cmd:/tmp/x/slow.sh`): the short name says who it is, and the tape's name matters more.
const RANK_LONG_NAME: u8 = 45;
/// A word that only labels a field (`author ` before the author's name, `(engine)` after the
/// hash): at 100x30 the tape's name went while `author house (autopilot)` stayed whole.
const RANK_DETAIL: u8 = 42;
const RANK_TAPE: u8 = 40;
/// The author's short forms before its last (`command-author.sh (autopilot)`), where the
/// tape's name gives way to them: they give way before the name is cut.
const RANK_AUTHOR_EARLY: u8 = 36;
/// The tape's name without its label, and cut with `…` (see [`tape_forms`]).
const RANK_TAPE_CUT: u8 = 33;
/// The tape's shortest form: it goes before the author's last (`house (proposing)` stays
/// at 80x24, and the line is then as it was).
const RANK_TAPE_LAST: u8 = 31;
const RANK_AUTHOR: u8 = 30;

/// `forms` without a form that the next one repeats, the later (lower) rank kept: an author
/// whose name is its short name has no long form to give way.
fn distinct_forms(forms: Vec<(u8, String)>) -> Vec<(u8, String)> {
    let mut out: Vec<(u8, String)> = Vec::with_capacity(forms.len());
    for f in forms {
        match out.last_mut() {
            Some(last) if last.1 == f.1 => *last = f,
            _ => out.push(f),
        }
    }
    out
}

/// The status line's tape: its name (the header's, as the Frame and `kestrel run` say it,
/// not the path it was opened from), and on a multi-session tape (v2) the session and its
/// date.
fn tape_field(s: &crate::session::SessionSnapshot) -> String {
    // A header whose name is empty or not one line names nothing: its label does.
    let name = if s.tape_name.is_empty() || s.tape_name.chars().any(char::is_control) {
        s.tape.trim_start_matches("bundled:")
    } else {
        &s.tape_name
    };
    match s.session {
        Some(n) => format!("tape {name} · session {n} {}", s.date),
        None => format!("tape {name}"),
    }
}

/// The status line's tape field where the words that only label give way first (see
/// [`tape_field`]): `tape NAME`, then `NAME`, then the name cut with `…` a column at a time
/// down to its date (`shock-2025-04-10-s1844…`, `trend-2025-04-09…`), and the part of the
/// name every form keeps (the line falls back to the old order without it). Until
/// 2026-12-06 the name was dropped whole when it was two columns too long, while `author `
/// and `(autopilot)` stayed.
fn tape_forms(s: &crate::session::SessionSnapshot) -> (Vec<(u8, String)>, String) {
    let whole = tape_field(s);
    let Some(field) = whole.strip_prefix("tape ") else {
        return (vec![(RANK_TAPE, whole.clone())], whole);
    };
    let (name, rest) = match field.find(" · session ") {
        Some(i) => field.split_at(i),
        None => (field, ""),
    };
    // The name through its date (`YYYY-MM-DD`), else its first 8 characters.
    let chars: Vec<char> = name.chars().collect();
    let date_end = (0..chars.len().saturating_sub(9)).find_map(|i| {
        let w = &chars[i..i + 10];
        let digits = [0, 1, 2, 3, 5, 6, 8, 9]
            .iter()
            .all(|&k| w[k].is_ascii_digit());
        (digits && w[4] == '-' && w[7] == '-').then_some(i + 10)
    });
    let min = date_end.unwrap_or(8).min(chars.len());
    let kept: String = chars[..min].iter().collect();
    let mut forms = vec![
        (RANK_TAPE, whole.clone()),
        (RANK_TAPE_CUT, field.to_string()),
    ];
    let len = cols(name);
    for n in (cols(&kept) + 1..len).rev() {
        forms.push((RANK_TAPE_CUT, format!("{}{rest}", super::fit::fit(name, n))));
    }
    if let Some(last) = forms.last_mut() {
        last.0 = RANK_TAPE_LAST;
    }
    (forms, kept)
}

/// The status line from its fields, each given as its forms from the longest to the
/// shortest with the rank at which each gives way: while the line is too wide, the field
/// whose shown form has the highest rank takes its next shorter form, or is dropped when it
/// has none (a last field too long on its own is cut with `…`).
fn status_text(fields: &[Vec<(u8, String)>], width: usize) -> String {
    let mut keep: Vec<&[(u8, String)]> = fields
        .iter()
        .map(Vec::as_slice)
        .filter(|f| !f.is_empty())
        .collect();
    let join = |k: &[&[(u8, String)]]| {
        format!(
            " {} ",
            k.iter()
                .filter_map(|forms| forms.first().map(|(_, f)| f.as_str()))
                .collect::<Vec<_>>()
                .join(" │ ")
        )
    };
    while cols(&join(&keep)) > width && keep.len() > 3 {
        let Some(i) = keep
            .iter()
            .enumerate()
            .max_by_key(|(_, forms)| forms.first().map_or(0, |(rank, _)| *rank))
            .map(|(i, _)| i)
        else {
            break;
        };
        if keep[i].len() > 1 {
            keep[i] = &keep[i][1..];
        } else {
            keep.remove(i);
        }
    }
    super::fit::fit(&join(&keep), width)
}

/// `m` with each word that is a path (it holds a `/` and is not a URL) named by its file
/// name alone: `saving to /home/a/.local/share/kestrel/sessions/x.jsonl` → `saving to
/// x.jsonl`.
fn without_directories(m: &str) -> String {
    m.split(' ')
        .map(|w| {
            if w.contains('/') && !w.contains("://") && !w.ends_with('/') {
                w.rsplit('/').next().unwrap_or(w)
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn footer_keys(app: &App) -> Vec<Action> {
    use Action::*;
    match app.focus {
        Pane::Editor if !app.editor.diagnostics().is_empty() => vec![Submit, ErrorWhole, Leave],
        Pane::Editor => vec![Submit, Leave],
        Pane::Plans => vec![Up, Down, Open, Yank, PlayPause, StandDown, PageDown, Top],
        Pane::Bus if app.bus_mode == BusMode::Blotter => vec![
            Up, Down, PageDown, Top, Bottom, BusToggle, PlayPause, Faster, Slower,
        ],
        Pane::Bus => vec![
            Up, Down, Open, Filter, BusToggle, Bottom, PlayPause, Faster, Slower,
        ],
        Pane::View => vec![Up, Down, ShowView, PlayPause, PageDown],
        Pane::Chart => vec![
            PlayPause,
            Left,
            Right,
            Interval,
            ZoomIn,
            ChartSymbol,
            Bottom,
            Faster,
            Slower,
            Editor,
            FocusNext,
        ],
        _ => vec![
            PlayPause, Faster, Slower, StepTick, StepBar, Seek, Editor, StandDown, ShowView,
            FocusNext,
        ],
    }
}

fn draw_footer(f: &mut Frame, app: &App, r: Rect) {
    let t = app.theme();
    let key = Style::default()
        .fg(t.ui_title())
        .add_modifier(Modifier::BOLD);
    let muted = Style::default().fg(t.ui_muted());
    let mut spans = Vec::new();
    // The newest message (a notice of the session: what routed, what was refused, what an
    // agent did to your plans) comes first, so a narrow screen still shows it.
    let over = app.message_over_proposal();
    if let Some(m) = app
        .message
        .as_ref()
        .filter(|_| app.proposal().is_none() || over)
    {
        // The message before the pane's keys (they give way: `?` lists them); the keys that
        // always show keep their room (`? help q quit`, and `a accept x reject` while a
        // proposal waits). A message too long names its files without their directories
        // (`saving to trend-…-s1.jsonl`) before it is cut (at 160x48 it read `saving to…`).
        let mut always = vec![Action::Help, Action::Quit];
        if app.proposal().is_some() {
            always.extend([Action::Accept, Action::Reject]);
        }
        let keep: usize = always
            .iter()
            .map(|a| 2 + cols(&app.keys.label(*a)) + cols(a.name()))
            .sum();
        // ` {m} │` takes 3 columns more than the message, and one space goes before the
        // keys: a message cut to fit one column less left `q qui` at the right.
        let room = usize::from(r.width).saturating_sub(keep + 4);
        let m = if cols(m) > room {
            super::fit::fit(&without_directories(m), room)
        } else {
            m.clone()
        };
        let colour = match app.message_level() {
            NoticeLevel::Info => Role::StateInfo,
            NoticeLevel::Warn => Role::StateWarn,
            NoticeLevel::Error => Role::StateError,
        };
        spans.push(Span::styled(
            format!(" {m} │"),
            Style::default().fg(t.get(colour)),
        ));
    }
    if let Some(p) = app.proposal() {
        // The author by its short name, as the status line names it when short of room
        // (`author.sh`, not `cmd:/tmp/x/author.sh`): what it would arm is what must show.
        let author = app
            .agent()
            .map(|a| a.short_name.clone())
            .unwrap_or_default();
        let ctx_line = proposal_summary(&p.run);
        // Its age in tape time: the View it answered is that old.
        let age = crate::session::owner::age_text(crate::market::Ts(
            app.snap.clock.0.saturating_sub(p.asked_at.0),
        ));
        // What it would do, then the keys to decide it; `? help` and `q quit` stay at the
        // right. The summary gives way first when the line is short.
        let keys: Vec<Span> = [(Action::Accept, "accept"), (Action::Reject, "reject")]
            .into_iter()
            .chain([(Action::Help, "help"), (Action::Quit, "quit")])
            .flat_map(|(a, word)| {
                [
                    Span::styled(format!(" {}", app.keys.label(a)), key),
                    Span::styled(format!(" {word}"), muted),
                ]
            })
            .collect();
        let keys_w: usize = keys.iter().map(Span::width).sum();
        let used: usize = spans.iter().map(Span::width).sum();
        let room = usize::from(r.width).saturating_sub(used + keys_w + 1);
        // A message shown over it (see `App::message_over_proposal`) leaves the proposal
        // its keys only, for a few seconds.
        let text = if over {
            String::new()
        } else if let Some(why) = p.run.failure() {
            // What failed is long (a coded error): the age comes before it, and the error
            // is what is cut (the age was cut off at every size).
            format!(
                " {author} proposes: {} · wake {} {}, {age} ago · {why}",
                p.run.turn.outcome.label(),
                p.wake,
                p.asked_at.hhmm(),
            )
        } else {
            // Its plans named like the person's live ones will not arm: said before `a`.
            let clash = app
                .agent()
                .and_then(|a| clash_warning(&a.proposal_clash))
                .map_or(String::new(), |c| format!(" · {c}"));
            // Its age stays in view where the line is short (at 100x30 it was cut off with
            // the wake): the wake's name and time give way first, then the summary is cut.
            let head = format!(" {author} proposes: {ctx_line}");
            let whole = format!(
                "{head} · wake {} {}, {age} ago{clash}",
                p.wake,
                p.asked_at.hhmm()
            );
            let short = format!(" · {age} ago{clash}");
            if cols(&whole) <= room {
                whole
            } else if cols(&head) + cols(&short) <= room {
                format!("{head}{short}")
            } else {
                let short = format!(" · {age} ago");
                let head = super::fit::fit(&head, room.saturating_sub(cols(&short)));
                format!("{head}{short}")
            }
        };
        let text = super::fit::fit(&text, room);
        let pad = room.saturating_sub(cols(&text));
        spans.push(Span::styled(text, Style::default().fg(t.state_warn())));
        spans.push(Span::raw(" ".repeat(pad + 1)));
        spans.extend(keys);
    } else {
        // `? help` and `q quit` always show at the right; other keys fill what is left.
        let tail: Vec<Span> = [Action::Help, Action::Quit]
            .iter()
            .flat_map(|a| {
                [
                    Span::styled(format!(" {}", app.keys.label(*a)), key),
                    Span::styled(format!(" {}", a.name().replace('_', "-")), muted),
                ]
            })
            .collect();
        let tail_w: usize = tail.iter().map(Span::width).sum();
        let mut used: usize = spans.iter().map(Span::width).sum();
        let room = usize::from(r.width).saturating_sub(tail_w + 1);
        for a in footer_keys(app) {
            let k = format!(" {}", app.keys.label(a));
            // On the Chart, `G` follows the tape (the footer said `bottom`, the help `follow`).
            let name = match (app.focus, a) {
                (Pane::Chart, Action::Bottom) => "follow".to_string(),
                _ => a.name().replace('_', "-"),
            };
            let word = format!(" {name}");
            let w = cols(&k) + cols(&word);
            if used + w > room {
                break;
            }
            used += w;
            spans.push(Span::styled(k, key));
            spans.push(Span::styled(word, muted));
        }
        if app.focus == Pane::Editor {
            let hint = "  (paste lands as is; tab indents; C-u clears)";
            if used + cols(hint) <= room {
                used += cols(hint);
                spans.push(Span::styled(hint, muted));
            }
        }
        spans.push(Span::raw(" ".repeat(room.saturating_sub(used) + 1)));
        spans.extend(tail);
    }
    f.render_widget(Paragraph::new(Line::from(spans)), r);
}

/// The View's Frame as drawn `w` columns wide: each line of the Frame (unchanged: it is
/// what the agent reads) wrapped at a word, its continuation hung four columns deeper than
/// the line's own indent, so nothing is lost at the pane's edge.
pub fn view_lines(app: &App, w: usize) -> Vec<Line<'static>> {
    let t = app.theme();
    let fr = &app.snap.frame;
    let mut lines: Vec<Line<'static>> = Vec::new();
    for l in fr.text.lines() {
        let lead = l.len() - l.trim_start_matches(' ').len();
        lines.extend(wrap_hang(Line::from(l.to_string()), w, lead + 4));
    }
    if !fr.dropped.is_empty() {
        lines.extend(wrap(
            Line::from(Span::styled(
                format!("(cut to fit: {})", fr.dropped.join("; ")),
                Style::default().fg(t.ui_muted()),
            )),
            w,
        ));
    }
    lines
}

fn draw_view(f: &mut Frame, app: &App, r: Rect) {
    let t = app.theme();
    let fr = &app.snap.frame;
    let budget = fr
        .budget
        .map(|b| format!("{} / {b} tok", fr.tokens))
        .unwrap_or_else(|| format!("{} tok", fr.tokens));
    let over = fr.budget.is_some_and(|b| fr.tokens > b);
    let lines = view_lines(app, usize::from(r.width.saturating_sub(2)));
    // Scrolled by drawn rows (a wrapped line takes several); the scroll stops where the
    // last row is at the bottom, and the title says which rows show when not all fit.
    let h = usize::from(r.height.saturating_sub(2));
    let total = lines.len();
    let top = usize::from(app.view_scroll).min(total.saturating_sub(h));
    app.view_rows.set((total, h));
    let mut title = format!("View {} — {budget}", app.snap.view_name);
    if total > h && h > 0 {
        // Which rows show, said whole: shorter forms before a cut one.
        let (a, b) = (top + 1, (top + h).min(total));
        let room = usize::from(r.width.saturating_sub(4));
        let compact = budget.replace(" / ", "/");
        title = [
            format!("{title} · {a}–{b} of {total} ↕"),
            format!("{title} · {a}–{b}/{total} ↕"),
            format!("View {} {compact} · {a}–{b}/{total} ↕", app.snap.view_name),
            format!("View {compact} · {a}–{b}/{total} ↕"),
        ]
        .into_iter()
        .find(|t| cols(t) <= room)
        .unwrap_or_else(|| format!("View {a}–{b}/{total} ↕"));
    }
    let mut b = block(app, Pane::View, title);
    if over {
        b = b.border_style(Style::default().fg(t.state_error()));
    }
    let shown: Vec<Line> = lines.into_iter().skip(top).take(h).collect();
    f.render_widget(
        Paragraph::new(shown)
            .block(b)
            .style(Style::default().fg(t.ui_fg())),
        r,
    );
}

fn draw_chart(f: &mut Frame, app: &App, r: Rect) {
    let title = super::chart::title(&app.snap.chart, &app.chart, r.width);
    let title = super::fit::fit(&title, usize::from(r.width.saturating_sub(4)));
    let b = block(app, Pane::Chart, title);
    let inner = b.inner(r);
    f.render_widget(b, r);
    super::chart::draw(
        f.buffer_mut(),
        inner,
        &app.snap.chart,
        &app.chart,
        app.theme(),
        app.focus == Pane::Chart,
    );
}

fn state_color(app: &App, state: PlanState) -> Style {
    let t = app.theme();
    let k = match state {
        PlanState::Armed | PlanState::Resting => Role::StateInfo,
        PlanState::Fired | PlanState::Filled => Role::StateOk,
        PlanState::StoodDown | PlanState::Expired | PlanState::Done => Role::UiMuted,
        PlanState::DeArmed | PlanState::Halted => Role::StateError,
        PlanState::Dormant => Role::UiFg,
    };
    Style::default().fg(t.get(k))
}

/// Who armed a plan, as the Plans pane says it.
/// The widest the Plans pane's `by` column gets.
const OWNER_W: usize = 8;

fn owner_label(o: &Owner) -> String {
    match o {
        Owner::Person => "you".into(),
        // A command author's name is its command line: cut with a mark, never silently.
        Owner::Agent(n) => super::fit::fit(n, OWNER_W),
        Owner::Unowned => "-".into(),
    }
}

/// The Plans pane's last column: the last risk decision on the plan's tickets (`VETO worst
/// $58.00 > $0.00 left`, `qty 100→96 plan`) and the clause that fired or why it is in its
/// state, the newer of the two first. A plan whose state does not say it holds (expired, halted, stood
/// down) but still has a position on says what it holds right after why it is in that
/// state, ahead of its older risk decision, so a narrow column cuts the veto rather than
/// the holding (`stand-down · holds +48 SPY shares · VETO worst $516.44 > $4.14 left`):
/// its risk rides until its TP, its EXIT or the close.
fn plan_why(app: &App, p: &PlanLine) -> String {
    // The engine's expiry reason is the Bus's `ttl 15:00:00.000`: on screen, `ttl reached
    // 15:00` (the seconds where the ttl has them).
    let note = match p
        .note
        .strip_prefix("ttl ")
        .and_then(crate::market::Ts::parse_clock)
    {
        Some(at) => format!("ttl reached {}", clock_text(at)),
        None => p.note.clone(),
    };
    let holds: String = if p.state == PlanState::Filled {
        String::new()
    } else {
        app.snap
            .book
            .positions
            .iter()
            .filter(|x| x.plan == p.name)
            .map(|x| {
                let inst = crate::market::options::same_day_name(&x.instrument, &app.snap.date);
                format!(" · holds {:+} {inst}", x.qty)
            })
            .collect()
    };
    match &p.risk {
        Some(r) if !holds.is_empty() => format!("{note}{holds} · {}", r.short()),
        // The newer first, so a cut row keeps the latest event (`TP#1 fired 10:24 · VETO
        // worst …` at 10:24, where the 09:34 veto came first and the TP was cut at 160x48);
        // a veto at the fire's own time is the newer (the engine writes it after the fire).
        Some(r) if p.note_ts.is_some_and(|at| at > r.ts) => format!("{note} · {}", r.short()),
        Some(r) => format!("{} · {note}", r.short()),
        None => format!("{note}{holds}"),
    }
}

/// The style of a plan's last column: a veto in the error colour, a clamp in the warning's.
fn why_style(app: &App, p: &PlanLine) -> Style {
    let t = app.theme();
    match p.risk.as_ref().map(|r| r.kind) {
        Some(RiskKind::Veto) => Style::default().fg(t.state_error()),
        Some(RiskKind::Clamp { .. }) => Style::default().fg(t.state_warn()),
        None => Style::default(),
    }
}

/// The narrow Plans pane's columns after the name, as room allows: the budget beside the
/// P&L (`+0.17R/0.5R`, else `+0.17R`), the `by` column, and the state's word whole
/// (`stood-down`) or short (`stood`).
#[derive(Clone, Copy, PartialEq, Debug)]
struct NarrowCols {
    budget: bool,
    by: By,
    /// The state's short word where it has one ([`short_state`]).
    short: bool,
    /// The P&L beside the budget with its unit (`+0.11R/1R`); else the header says the unit
    /// (`pnl/bdgt R` over `+0.11/1R`), a column narrower.
    unit: bool,
}

/// How the narrow Plans pane's `by` column names a plan's owner.
#[derive(Clone, Copy, PartialEq, Debug)]
enum By {
    /// The author's short name whole (`127.0.0.1:18911`).
    Name,
    /// `you` or `agent`, the agent named on the plan's `↳` line.
    Role,
    /// No `by` column (an agent's plan says whose it is on its `↳` line).
    Off,
}

/// A state's word where the narrow Plans pane is short of room: `stood` for `stood-down`
/// (the plan's `↳` line says `stand-down` and why), the others as the Bus writes them (none
/// is wider than `de-armed`).
fn short_state(s: PlanState) -> &'static str {
    match s {
        PlanState::StoodDown => "stood",
        s => crate::bus::canon::state_name(s),
    }
}

impl NarrowCols {
    /// From the widest to the narrowest: the state's long word gives way first (`stood-down`
    /// reads `stood`; the `↳` line says `stand-down` and why), then the agent's name (to
    /// `agent`, named on the `↳` line), then the budget, then the `by` column. The P&L's own
    /// `R` gives way to the header's (`pnl/bdgt R` over `+0.11/1R`) before the agent's name
    /// and the budget do. The state, the P&L and the ttl always show, whole.
    /// (Until 2026-12-06 the budget went first and the `by` column next: one agent plan with
    /// a 15-column URL author took every plan's budget and the person's `you` at 160x48,
    /// with room to spare; and one stood-down or cancelled plan's 10-column `stood-down`
    /// took every live plan's budget at 160x48 and 100x30.)
    const FORMS: [NarrowCols; 8] = [
        NarrowCols {
            budget: true,
            by: By::Name,
            short: false,
            unit: true,
        },
        NarrowCols {
            budget: true,
            by: By::Name,
            short: true,
            unit: true,
        },
        NarrowCols {
            budget: true,
            by: By::Name,
            short: true,
            unit: false,
        },
        NarrowCols {
            budget: true,
            by: By::Role,
            short: true,
            unit: true,
        },
        NarrowCols {
            budget: true,
            by: By::Role,
            short: true,
            unit: false,
        },
        NarrowCols {
            budget: false,
            by: By::Name,
            short: true,
            unit: true,
        },
        NarrowCols {
            budget: false,
            by: By::Role,
            short: true,
            unit: true,
        },
        NarrowCols {
            budget: false,
            by: By::Off,
            short: true,
            unit: true,
        },
    ];

    /// The header of each column shown.
    fn header(self) -> Vec<String> {
        let pnl = match (self.budget, self.unit) {
            (true, true) => "pnl/budget",
            (true, false) => "pnl/bdgt R",
            (false, _) => "pnl",
        };
        (self.by != By::Off)
            .then_some("by")
            .into_iter()
            .chain(["state", pnl, "ttl"])
            .map(String::from)
            .collect()
    }

    /// One plan's cells, as [`header`](Self::header) names them.
    fn cells(self, p: &PlanLine) -> Vec<String> {
        let pnl = if self.budget && self.unit {
            pnl_budget(p.pnl_r, &short_budget(p.budget_r))
        } else if self.budget {
            format!("{}/{}R", hundredths(p.pnl_r), short_budget(p.budget_r))
        } else {
            r_of(p.pnl_r)
        };
        // The author's short name whole (the column is as wide as its widest value, and
        // gives way when the names need the room): `127.0.0.1:18777`, as the footer and the
        // proposal name it, where a cut `127.0.0…` said nothing.
        let by = |o: &Owner| match (o, self.by) {
            (Owner::Agent(n), By::Name) => n.clone(),
            (Owner::Agent(_), _) => "agent".into(),
            (o, _) => owner_label(o),
        };
        let state = if self.short {
            short_state(p.state)
        } else {
            crate::bus::canon::state_name(p.state)
        };
        (self.by != By::Off)
            .then(|| by(&p.owner))
            .into_iter()
            .chain([state.to_string(), pnl, ttl_cell(p)])
            .collect()
    }
}

/// A plan's P&L over its budget, both in R (`+0.11R/1R`): until 2026-12-06 the P&L had no
/// unit (`+0.11/1R`) while the column's fallback wrote `+0.11R`.
fn pnl_budget(pnl_r: f64, budget: &str) -> String {
    format!("{}R/{budget}R", hundredths(pnl_r))
}

/// A budget in the narrow Plans pane, as the plan writes it (`1R`, `0.5R`, `0.25R`): the
/// View's `1.00`/`0.50` took the column the budget needed at 160x48 once a ttl read
/// `10:51:30`, and the header fell from `pnl/budget` to `pnl`.
fn short_budget(r: f64) -> String {
    super::fit::trim_decimal(&crate::view::render::budget_text(r)).to_string()
}

/// The narrowest name column at which every plan's name, cut with `…`, reads apart from the
/// others (`vwap-f…` and `vwap-r…`, where at four columns both were `vwa…`): at least 4, at
/// most the longest name.
fn distinct_name_width(names: &[&str]) -> usize {
    use std::collections::HashSet;
    let longest = names.iter().map(|n| cols(n)).max().unwrap_or(0).max(4);
    let apart = names.iter().collect::<HashSet<_>>().len();
    (4..longest)
        .find(|&w| {
            let cut: HashSet<String> = names.iter().map(|n| super::fit::fit(n, w)).collect();
            cut.len() == apart
        })
        .unwrap_or(longest)
}

/// The Plans pane when it is too narrow for the last column (under 90 columns inside): each
/// plan on two lines, its row and then what was said of it (a veto or a clamp first), so
/// risk is on screen at every size.
fn draw_plans_narrow(f: &mut Frame, app: &App, r: Rect) {
    let t = app.theme();
    let w = usize::from(r.width.saturating_sub(2));
    let plans = &app.snap.plans;
    // Every column but the name is as wide as its widest value (or its header), so a ttl or
    // a P&L is never cut; the name takes what is left (cut with `…` only when it must).
    // Where the name would be cut so far that two plans read alike, the budget and then
    // the `by` column give way.
    let names: Vec<&str> = plans.iter().map(|p| p.name.as_str()).collect();
    let need = distinct_name_width(&names);
    let layout = |form: NarrowCols| {
        let header = form.header();
        let cells: Vec<Vec<String>> = plans.iter().map(|p| form.cells(p)).collect();
        let widths: Vec<usize> = (0..header.len())
            .map(|c| {
                cells
                    .iter()
                    .map(|row| cols(&row[c]))
                    .chain([cols(&header[c])])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        (form, header, cells, widths)
    };
    let fixed = |widths: &[usize]| widths.iter().map(|w| w + 1).sum::<usize>();
    // The widest form in which every name is whole; else the widest in which the names
    // still read apart; else the narrowest (docs/desk.md "Plans pane, narrow": the budget,
    // then the `by` column give way before names are cut: at 160x48 `brea…` stood next to
    // a whole budget and `127.0.0…`).
    let longest = names.iter().map(|n| cols(n)).max().unwrap_or(4);
    let forms: Vec<_> = NarrowCols::FORMS.into_iter().map(layout).collect();
    let (form, header, cells, widths) = forms
        .iter()
        .find(|(_, _, _, widths)| fixed(widths) + longest <= w)
        .or_else(|| {
            forms
                .iter()
                .find(|(_, _, _, widths)| fixed(widths) + need <= w)
        })
        .or(forms.last())
        .cloned()
        .unwrap_or_else(|| layout(NarrowCols::FORMS[NarrowCols::FORMS.len() - 1]));
    let nw = longest.clamp(4, w.saturating_sub(fixed(&widths)).max(4));
    // The state column (styled in its colour) is the one before the P&L and the ttl.
    let state = widths.len() - 3;
    // Padded by columns (`{:<n$}` pads characters: a wide name would push the row over).
    let pad = super::fit::pad;
    let row_spans = |name: &str, c: &[String], state_style: Style| {
        let last = c.len() - 1;
        let mut spans = vec![Span::raw(format!("{} ", pad(name, nw)))];
        for (i, cell) in c.iter().enumerate() {
            let text = if i == last {
                cell.clone()
            } else {
                pad(cell, widths[i])
            };
            let style = if i == state {
                state_style
            } else {
                Style::default()
            };
            spans.push(Span::styled(text, style));
            if i < last {
                spans.push(Span::raw(" "));
            }
        }
        spans
    };
    let muted = Style::default().fg(t.ui_muted());
    let head = Line::from(row_spans("plan", &header, muted)).style(muted);
    let mut lines: Vec<Line<'static>> = Vec::new();
    for (i, (p, c)) in plans.iter().zip(&cells).enumerate() {
        let name = super::fit::fit(&p.name, nw);
        let mut first = Line::from(row_spans(&name, c, state_color(app, p.state)));
        let why_style = match p.risk {
            Some(_) => why_style(app, p),
            None => muted,
        };
        // Without the `by` column, a plan that is not the person's says whose it is.
        let whose = match &p.owner {
            Owner::Agent(n) if form.by != By::Name => format!("by {n} · "),
            _ => String::new(),
        };
        let mut second = Line::from(Span::styled(
            format!("  ↳ {whose}{}", plan_why(app, p)),
            why_style,
        ));
        if i == app.plan_sel && app.focus == Pane::Plans {
            let bg = Style::default().bg(t.ui_selection_bg());
            first = first.style(bg);
            second = second.style(bg);
        }
        lines.push(fit(first, w));
        lines.push(fit(second, w));
    }
    // The header stays; the rows scroll to keep the selected plan in view, and the title
    // says which plans show when not all fit.
    let (skip, title) = plans_window(app, r, 2);
    let mut body: Vec<Line> = vec![fit(head, w)];
    body.extend(lines.into_iter().skip(skip));
    f.render_widget(
        Paragraph::new(body).block(block(app, Pane::Plans, title)),
        r,
    );
}

/// Which of `len` plans (`per` rows each) show in `h` body rows with plan `sel` selected:
/// the rows skipped to keep the selected plan whole in view, and, when not every plan's
/// name shows, the range of plans whose name row does (1-based; a plan whose second row is
/// cut off counts: its name is on the screen). `None` when every plan's name is in view, or
/// none can be (no body row).
fn plan_rows(h: usize, sel: usize, len: usize, per: usize) -> (usize, Option<(usize, usize)>) {
    let per = per.max(1);
    if h == 0 || len == 0 {
        return (0, None);
    }
    let sel = sel.min(len - 1);
    // Never past the selected plan's name, when one row is all there is.
    let skipped = (per * (sel + 1)).saturating_sub(h).div_ceil(per).min(sel);
    let first = skipped + 1;
    let last = (skipped + h.div_ceil(per)).min(len);
    if first == 1 && last == len {
        (skipped * per, None)
    } else {
        (skipped * per, Some((first, last)))
    }
}

/// The Plans pane's scroll and title, for plans drawn `per` rows each under one header row
/// in `r`: the body rows to skip, and the title with the range of plans in view when not
/// all are (`Plans — 9 · 2 armed · 3–7 of 9 ↕`).
fn plans_window(app: &App, r: Rect, per: usize) -> (usize, String) {
    let plans = &app.snap.plans;
    let h = usize::from(r.height.saturating_sub(3));
    let (skip, range) = plan_rows(h, app.plan_sel, plans.len(), per);
    let title = if let Some((first, last)) = range {
        let rows = format!(" · {first}–{last} of {} ↕", plans.len());
        let title = plans_title(
            plans,
            &app.snap.book.positions,
            usize::from(r.width),
            cols(&rows),
        );
        format!("{title}{rows}")
    } else {
        plans_title(plans, &app.snap.book.positions, usize::from(r.width), 0)
    };
    (skip, title)
}

/// The Plans pane's title: how many plans, and how many are filled, hold a position in
/// another state (from the Blotter's positions: a plan stood down, halted or expired with a
/// position still on, whose `↳` line says `holds`), rest an entry order and are armed
/// (waiting on WHEN), those that are not none, in the rows' own words: `Plans — 5 · 2 filled
/// · 1 resting` (until 2026-12-06 it read `2 holding` over rows that read `filled`). A book
/// with positions on and nothing armed does not read "0 armed". The counts are left off,
/// last first (positions stay longest), where the title and `reserve` cells (the rows
/// shown) would not fit a pane `width` wide.
fn plans_title(
    plans: &[PlanLine],
    positions: &[crate::view::snapshot::PositionRow],
    width: usize,
    reserve: usize,
) -> String {
    let n = |s: PlanState| plans.iter().filter(|p| p.state == s).count();
    let holding = plans
        .iter()
        .filter(|p| p.state != PlanState::Filled && positions.iter().any(|x| x.plan == p.name))
        .count();
    let mut title = format!("Plans — {}", plans.len());
    // The block draws ` {title} ` between its two corners: 4 cells besides the title.
    let room = width.saturating_sub(4 + reserve);
    for (k, name) in [
        (n(PlanState::Filled), "filled"),
        (holding, "holding"),
        (n(PlanState::Resting), "resting"),
        (n(PlanState::Armed), "armed"),
    ] {
        if k == 0 {
            continue;
        }
        let part = format!(" · {k} {name}");
        if cols(&title) + cols(&part) > room {
            break;
        }
        title.push_str(&part);
    }
    title
}

fn draw_plans(f: &mut Frame, app: &App, r: Rect) {
    let t = app.theme();
    let plans = &app.snap.plans;
    if !plans.is_empty() && r.width.saturating_sub(2) < 90 {
        draw_plans_narrow(f, app, r);
        return;
    }
    // Column widths: the fixed columns and their gaps take 35 and the ttl's width (its
    // widest value: `10:51:30` whole, where a 5-column ttl read `10:51`); the name column
    // is as wide as the longest name while the last column keeps at least 24, and both are
    // cut with `…` (at a word for the last), never mid-word without a mark.
    let inner = usize::from(r.width.saturating_sub(2));
    let ttl_w = plans
        .iter()
        .map(|p| cols(&ttl_cell(p)))
        .max()
        .unwrap_or(0)
        .max(5);
    let fixed = 35 + ttl_w;
    let longest = plans.iter().map(|p| cols(&p.name)).max().unwrap_or(4);
    let nw = longest.clamp(4, inner.saturating_sub(fixed + 24).max(12));
    let why_w = inner.saturating_sub(fixed + nw).max(8);
    // The header stays; the rows scroll to keep the selected plan in view, and the title
    // says which plans show when not all fit.
    let (skip, title) = plans_window(app, r, 1);
    let rows: Vec<Row> = plans
        .iter()
        .enumerate()
        .skip(skip)
        .map(|(i, p)| {
            let mut row = Row::new(vec![
                Cell::from(super::fit::fit(&p.name, nw)),
                Cell::from(owner_label(&p.owner)),
                Cell::from(Span::styled(
                    crate::bus::canon::state_name(p.state),
                    state_color(app, p.state),
                )),
                Cell::from(pnl_budget(
                    p.pnl_r,
                    &crate::view::render::budget_text(p.budget_r),
                )),
                Cell::from(ttl_cell(p)),
                Cell::from(Span::styled(
                    super::fit::fit(&plan_why(app, p), why_w),
                    why_style(app, p),
                )),
            ]);
            if i == app.plan_sel && app.focus == Pane::Plans {
                row = row.style(Style::default().bg(t.ui_selection_bg()));
            }
            row
        })
        .collect();
    let table = Table::new(
        rows,
        [
            Constraint::Length(nw as u16),
            Constraint::Length(OWNER_W as u16),
            Constraint::Length(10),
            Constraint::Length(12),
            Constraint::Length(ttl_w as u16),
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
        .style(Style::default().fg(t.ui_muted())),
    )
    .block(block(app, Pane::Plans, title));
    if plans.is_empty() {
        let muted = Style::default().fg(t.ui_muted());
        let mut lines = vec![Line::from(Span::styled(empty_plans_text(app), muted))];
        // Turns recorded ahead of the tape (after a seek back or Home) are on their way.
        for (ts, title) in &app.snap.turns_ahead {
            lines.push(Line::from(Span::styled(
                format!(
                    "your {} turn ({title}) acts when the tape gets there",
                    ts.hhmm()
                ),
                muted,
            )));
        }
        f.render_widget(
            Paragraph::new(lines).wrap(Wrap { trim: true }).block(block(
                app,
                Pane::Plans,
                "Plans".into(),
            )),
            r,
        );
    } else {
        f.render_widget(table, r);
    }
}

/// What the empty Plans pane says: how a plan gets armed, by the person and, when one is
/// attached, by the agent (with `--no-agent` there is no agent to wait for). One sentence,
/// wrapped to the pane.
fn empty_plans_text(app: &App) -> String {
    let (e, submit) = (
        app.keys.label(Action::Editor),
        app.keys.label(Action::Submit),
    );
    let write = format!("no plans armed: write one in the Editor ({e}) and submit it ({submit})");
    match app.agent() {
        Some(a) if a.attached => format!("{write}, or wait for {} to arm one at a wake.", a.name),
        Some(a) => format!(
            "{write}; {} is detached ({} attaches it).",
            a.name,
            app.keys.label(Action::Attach)
        ),
        None => format!("{write}."),
    }
}

fn draw_bus(f: &mut Frame, app: &App, r: Rect) {
    if app.bus_mode == BusMode::Blotter {
        draw_blotter(f, app, r);
        return;
    }
    let t = app.theme();
    let s = &app.snap;
    let room = usize::from(r.width.saturating_sub(4));
    let title = super::fit::fit(&app.log.title(s.bus_events, room), room);
    let b = block(app, Pane::Bus, title);
    let inner = b.inner(r);
    f.render_widget(b, r);
    app.log
        .draw(f.buffer_mut(), inner, t, app.focus == Pane::Bus);
}

/// The Blotter, in the Bus pane's place (`b` toggles). At its top it is the glance
/// ([`blotter_lines`]); scrolled (↓, page down, the wheel) it is every row of the Blotter
/// ([`blotter_view`]), its P&L line kept in place. The title says what is off screen.
pub fn draw_blotter(f: &mut Frame, app: &App, r: Rect) {
    let h = usize::from(r.height.saturating_sub(2));
    let w = usize::from(r.width.saturating_sub(2));
    let v = blotter_view(app, h, w, app.blotter_scroll);
    app.blotter_rows.set((v.max_scroll, v.page));
    let title = match (v.range, v.hidden) {
        (Some((a, b, n)), _) => format!("Blotter · rows {a}–{b} of {n} ↕ [b: Bus]"),
        (None, 0) => "Blotter [b: Bus]".to_string(),
        (None, k) => format!("Blotter · {k} more rows ↓ [b: Bus]"),
    };
    let title = if cols(&title) + 4 <= usize::from(r.width) {
        title
    } else {
        "Blotter [b: Bus]".to_string()
    };
    f.render_widget(
        Paragraph::new(v.lines).block(block(app, Pane::Bus, title)),
        r,
    );
}

/// Money as the Blotter shows it: `+$191.00`, `-$99.00` (the sign of the cents shown, so
/// a loss under half a cent reads `+$0.00`, never `-$0.00`).
fn usd(x: f64) -> String {
    let (sign, v) = shown_hundredths(x);
    format!("{sign}${v:.2}")
}

/// A price as the Blotter shows it: two to four decimals, as [`Px`](crate::market::Px)
/// prints (`482.62`, `482.625`: an average of two fills a cent apart, or a mid between
/// them, is not rounded to a price nobody paid).
fn price_text(x: f64) -> String {
    let s = format!("{x:.4}");
    let keep = s.trim_end_matches('0');
    let dot = keep.find('.').map_or(keep.len(), |d| d + 3);
    s[..keep.len().max(dot).min(s.len())].to_string()
}

/// R as the Blotter shows it: `+0.19R`.
fn r_of(x: f64) -> String {
    format!("{}R", hundredths(x))
}

/// The Plans pane's ttl: when the plan expires, on the tape's clock. A ttl written from
/// the arming (`ttl +30m`) is shown at its end (`11:11`), which is what a trader watches; the
/// document keeps what was written. Seconds show only where the end has them.
fn ttl_cell(p: &PlanLine) -> String {
    p.ttl
        .as_ref()
        .map(|ttl| crate::view::snapshot::ttl_shown(ttl, p.expires))
        .unwrap_or_default()
}

use crate::view::snapshot::clock_text;

/// An R figure to two decimals with the sign of the figure itself: a loss under half a
/// hundredth of R reads `-0.00` (a $4 loss at 1R = $1000 is `-$4.00 -0.00R`). Until
/// 2026-12-06 it read `+0.00`, the sign of what was shown, and a trader read `-$4.00 +0.00R`
/// beside the View's `(-0.00R)` as a gain. A figure of exactly 0 reads `+0.00`.
fn hundredths(x: f64) -> String {
    let (_, v) = shown_hundredths(x);
    let sign = if x < 0.0 { '-' } else { '+' };
    format!("{sign}{v:.2}")
}

/// `x` rounded to hundredths, as the sign of what is shown and its magnitude.
fn shown_hundredths(x: f64) -> (char, f64) {
    let h = (x * 100.0).round();
    (if h < 0.0 { '-' } else { '+' }, h.abs() / 100.0)
}

/// A style for a P&L figure in dollars: up, down, or muted when it shows as `+$0.00` (the
/// colour follows the cents shown, as [`usd`]'s sign does).
fn pnl_style(app: &App, x: f64) -> Style {
    Style::default().fg(app.theme().get(pnl_role(x)))
}

fn pnl_role(x: f64) -> Role {
    let cents = (x * 100.0).round();
    if cents > 0.0 {
        Role::MarketUp
    } else if cents < 0.0 {
        Role::MarketDown
    } else {
        Role::UiMuted
    }
}

/// The Blotter at its top, the glance: the book's P&L (realised and open apart, in $ and R,
/// and what 1R is), positions marked to market (`mid` for shares, `model` for an option's
/// fair), every order with its state and what L0 risk did to it, and the fills, newest
/// first. `h` rows tall, `w` columns wide. Where every row does not fit, the glance keeps
/// the P&L, the positions, the latest fill, then as many orders and fills as fit; the rest
/// is a scroll away ([`blotter_view`]).
pub fn blotter_lines(app: &App, h: usize, w: usize) -> Vec<Line<'static>> {
    blotter_view(app, h, w, 0).lines
}

/// The Blotter as drawn, `h` rows by `w` columns, scrolled `scroll` rows: its lines, and
/// what the title and the scroll keys need.
pub struct BlotterView {
    /// The lines to draw.
    pub lines: Vec<Line<'static>>,
    /// How far it scrolls: 0 when every row fits.
    pub max_scroll: usize,
    /// The rows below the P&L (a page).
    pub page: usize,
    /// Scrolled: the first and last rows shown (from 1) and how many rows there are.
    pub range: Option<(usize, usize, usize)>,
    /// At the top: how many rows the glance leaves out.
    pub hidden: usize,
}

/// The Blotter scrolled `scroll` rows. At 0 it is the glance ([`blotter_lines`]); scrolled
/// it is every row, positions, orders and fills in the glance's order, from its `scroll`-th
/// row on, under the P&L, which stays (what the book stands at is never scrolled away).
/// Where every row fits there is nothing to scroll, and every row shows.
pub fn blotter_view(app: &App, h: usize, w: usize, scroll: usize) -> BlotterView {
    let parts = blotter_parts(app, w);
    let rows = parts.rows();
    let page = h.saturating_sub(parts.pnl.len());
    let fit_all = |l: Vec<Line<'static>>| -> Vec<Line<'static>> {
        l.into_iter().map(|l| fit(l, w)).collect()
    };
    if rows <= page || page == 0 {
        let (mut lines, body) = parts.document();
        lines.extend(body);
        lines.truncate(h.max(1));
        return BlotterView {
            lines: fit_all(lines),
            max_scroll: 0,
            page,
            range: None,
            hidden: 0,
        };
    }
    let max_scroll = rows - page + 1;
    if scroll == 0 {
        let pnl = parts.pnl.len();
        let lines = glance(parts, h);
        return BlotterView {
            hidden: rows.saturating_sub(lines.len().saturating_sub(pnl)),
            lines: fit_all(lines),
            max_scroll,
            page,
            range: None,
        };
    }
    let first = scroll.min(max_scroll) - 1;
    let (mut lines, body) = parts.document();
    lines.extend(body.skip(first).take(page));
    BlotterView {
        lines: fit_all(lines),
        max_scroll,
        page,
        range: Some((first + 1, first + page, rows)),
        hidden: 0,
    }
}

/// The Blotter's rows, each wrapped to `w` columns (a row wraps rather than lose a price
/// or a P&L at the edge): the P&L lines, the positions with the orders' header, the orders
/// (working first, then the rest, newest first), the fills' header and the fills (settled
/// at the close first, then newest first).
struct BlotterParts {
    pnl: Vec<Line<'static>>,
    top: Vec<Line<'static>>,
    orders: Vec<Vec<Line<'static>>>,
    fills_head: Line<'static>,
    fills: Vec<Vec<Line<'static>>>,
}

impl BlotterParts {
    /// How many rows there are below the P&L.
    fn rows(&self) -> usize {
        self.top.len()
            + self.orders.iter().map(Vec::len).sum::<usize>()
            + 1
            + self.fills.iter().map(Vec::len).sum::<usize>()
    }

    /// The P&L lines, and every row below them in order (what [`rows`](Self::rows) counts).
    fn document(self) -> (Vec<Line<'static>>, impl Iterator<Item = Line<'static>>) {
        let body = self
            .top
            .into_iter()
            .chain(self.orders.into_iter().flatten())
            .chain(std::iter::once(self.fills_head))
            .chain(self.fills.into_iter().flatten());
        (self.pnl, body)
    }
}

/// The glance, `h` rows: the P&L, the positions, the latest fill, then orders and fills
/// as fit, half the room each, and what one of them leaves to the other; a row goes in
/// whole or not at all (the orders' header counts the working ones that did not fit).
fn glance(parts: BlotterParts, h: usize) -> Vec<Line<'static>> {
    let mut lines = parts.pnl;
    let mut body = parts.top;
    let room = h.saturating_sub(lines.len() + body.len() + 1);
    let fills_all: usize = parts.fills.iter().map(Vec::len).sum();
    let fills_room = (room / 2)
        .max(parts.fills.first().map_or(1, Vec::len))
        .min(fills_all);
    let mut order_room = room.saturating_sub(fills_room);
    let mut orders_used = 0;
    for row in parts.orders {
        if row.len() > order_room {
            break;
        }
        order_room -= row.len();
        orders_used += row.len();
        body.extend(row);
    }
    body.push(parts.fills_head);
    let mut left = room.saturating_sub(orders_used);
    for row in parts.fills {
        if row.len() > left {
            break;
        }
        left -= row.len();
        body.extend(row);
    }
    lines.extend(body);
    lines.truncate(h.max(1));
    lines
}

/// The Blotter's rows ([`BlotterParts`]), `w` columns wide.
fn blotter_parts(app: &App, w: usize) -> BlotterParts {
    let t = app.theme();
    let b = &app.snap.book;
    let muted = Style::default().fg(t.ui_muted());
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let total = vec![
        Span::styled("P&L ", bold),
        Span::styled(
            format!("{} {}", usd(b.pnl_usd), r_of(b.pnl_r)),
            pnl_style(app, b.pnl_usd).add_modifier(Modifier::BOLD),
        ),
        Span::styled(format!("  1R = ${:.2}", b.r_usd), muted),
    ];
    // Realised and open P&L, the first under a label that a narrow pane shortens.
    let realised = |label: &'static str| {
        vec![
            Span::styled(label, muted),
            Span::styled(
                format!("{} {}", usd(b.realised_usd), r_of(b.realised_r)),
                pnl_style(app, b.realised_usd),
            ),
        ]
    };
    let open = vec![
        Span::styled("  open ", muted),
        Span::styled(
            format!("{} {}", usd(b.open_usd), r_of(b.open_r)),
            pnl_style(app, b.open_usd),
        ),
    ];
    let width = |v: &[Span]| v.iter().map(|s| cols(&s.content)).sum::<usize>();
    // On a tape of several sessions the book above is this session's: say which, and the
    // tape's total so far, first (a two-day run that lost $135.96 read `P&L -$67.98`).
    let session_line = b.tape_total.as_ref().map(|x| {
        Line::from(vec![
            Span::styled(
                format!("session {} · {} · tape total ", x.session, x.date),
                muted,
            ),
            Span::styled(
                format!("{} {}", usd(x.pnl_usd), r_of(x.pnl_r)),
                pnl_style(app, x.pnl_usd),
            ),
            Span::styled(format!(" over {} sessions", x.sessions), muted),
        ])
    });
    let lines = if width(&total) + width(&realised("  realised ")) + width(&open) <= w {
        vec![Line::from([total, realised("  realised "), open].concat())]
    } else if width(&realised("  real ")) + width(&open) <= w {
        // Realised and open on one line under the total, `real` for short.
        let mut v = wrap(Line::from(total), w);
        v.extend(wrap(Line::from([realised("  real "), open].concat()), w));
        v
    } else {
        // Too narrow for one line: the total, then realised and open, a line each.
        let mut v = wrap(Line::from(total), w);
        v.extend(wrap(Line::from(realised("  realised ")), w));
        v.extend(wrap(Line::from(open), w));
        v
    };
    let lines = match session_line {
        Some(l) => wrap(l, w).into_iter().chain(lines).collect(),
        None => lines,
    };
    // An option of the session's own date reads `SPY 0dte 518.00 C`: what a trader calls it,
    // and short enough that a row keeps its figures on one line.
    let inst = |i: &str| crate::market::options::same_day_name(i, &app.snap.date);
    // Sections share the rows: positions and working orders first, then the order log and
    // the fills, newest first, as many as fit. Each row leads with what a trader reads first
    // (open P&L, an order's state) and is cut with `…` at the pane's edge.
    let mut body: Vec<Line<'static>> = Vec::new();
    let head = format!(
        "positions ({}) · mark: mid (shares), model fair (options)",
        b.positions.len()
    );
    let head = if cols(&head) <= w {
        head
    } else {
        format!("positions ({}) · mark: mid / model", b.positions.len())
    };
    body.push(Line::from(Span::styled(head, muted)));
    if b.positions.is_empty() {
        body.push(Line::from(Span::styled("  flat", muted)));
    }
    for p in &b.positions {
        let kind = if p.model { "model" } else { "mid" };
        body.extend(wrap(
            Line::from(vec![
                Span::raw(format!("  {} {:+} {} ", p.plan, p.qty, inst(&p.instrument))),
                Span::styled(
                    format!("open {}", usd(p.open_usd)),
                    pnl_style(app, p.open_usd),
                ),
                // A model's fair value to the cent; a mid and an average as they are.
                Span::raw(if p.model {
                    format!(" {kind} {:.2} avg {}", p.mark, price_text(p.avg_px))
                } else {
                    format!(
                        " {kind} {} avg {}",
                        price_text(p.mark),
                        price_text(p.avg_px)
                    )
                }),
                Span::styled(
                    format!(" real {}", usd(p.real_usd)),
                    pnl_style(app, p.real_usd),
                ),
            ]),
            w,
        ));
    }
    let orders = &b.order_log;
    body.push(Line::from(Span::styled(
        format!(
            "orders ({} working · {} in all)",
            orders.iter().filter(|o| o.state == "working").count(),
            orders.len()
        ),
        muted,
    )));
    // A position settled at the close leaves the book without a fill: it leads the list
    // (nothing trades after the close), `settled`, at its price.
    let settled_rows = b.settled.iter().rev().map(|x| {
        wrap(
            Line::from(vec![
                Span::raw(format!("  {} {} ", x.time, x.plan)),
                Span::styled(format!("settled {:+}", x.qty), muted),
                Span::raw(format!(" {} @ {} (close)", inst(&x.instrument), x.px)),
            ]),
            w,
        )
    });
    let fill_rows: Vec<Vec<Line<'static>>> = settled_rows
        .chain(b.fills.iter().rev().map(|x| {
            let side = Style::default().fg(t.get(if x.side == "buy" {
                Role::MarketUp
            } else {
                Role::MarketDown
            }));
            wrap(
                Line::from(vec![
                    Span::raw(format!("  {} {} ", x.time, x.plan)),
                    Span::styled(format!("{} {}", x.side, x.qty), side),
                    Span::raw(format!(
                        " {} @ {}{}",
                        inst(&x.instrument),
                        px_text(x.px),
                        if x.quoted { " (quoted)" } else { "" }
                    )),
                ]),
                w,
            )
        }))
        .collect();
    // Working orders first (newest first), then the rest, newest first.
    let mut shown: Vec<&crate::view::snapshot::OrderLogRow> = orders
        .iter()
        .rev()
        .filter(|o| o.state == "working")
        .collect();
    shown.extend(orders.iter().rev().filter(|o| o.state != "working"));
    let mut order_rows = Vec::with_capacity(shown.len());
    for o in shown {
        let state_style = match o.state.as_str() {
            "working" => Style::default().fg(t.state_info()),
            "filled" => Style::default().fg(t.state_ok()),
            "vetoed" => Style::default().fg(t.state_error()),
            _ => muted,
        };
        let mut spans = vec![
            Span::raw("  "),
            Span::styled(format!("{:<9} ", o.state), state_style),
            Span::raw(format!("{} ", o.plan)),
        ];
        if o.state != "vetoed" {
            // A filled order reads at its fill price, and its limit beside it when the fill
            // was better (`@ 0.44 lim 0.45`): the limit alone read as the price paid.
            let lim = px_text(o.limit.unwrap_or(0.0));
            let at = match o.fill_px.map(px_text) {
                Some(f) if f != lim => format!("{f} lim {lim}"),
                Some(f) => f,
                None => lim,
            };
            spans.push(Span::raw(format!(
                "{} {} {} @ {at} ",
                o.side,
                o.qty,
                inst(&o.instrument)
            )));
        }
        if let Some(r) = &o.risk {
            let risk_style = if o.state == "vetoed" {
                Style::default().fg(t.state_error())
            } else {
                Style::default().fg(t.state_warn())
            };
            spans.push(Span::styled(format!("{r} "), risk_style));
        }
        // The clause and when it was placed; an order that left the book later says when
        // (`TP#1 10:24:50→10:26:24`: placed, then filled or cancelled).
        let when = match &o.closed {
            Some(c) if *c != o.time => format!("{}→{c}", o.time),
            _ => o.time.clone(),
        };
        spans.push(Span::styled(format!("{} {when}", o.clause), muted));
        order_rows.push(wrap(Line::from(spans), w));
    }
    let head = match b.settled.len() {
        0 => format!("fills ({})", b.fills.len()),
        n => format!("fills ({}) · settled at the close ({n})", b.fills.len()),
    };
    BlotterParts {
        pnl: lines,
        top: body,
        orders: order_rows,
        fills_head: Line::from(Span::styled(head, muted)),
        fills: fill_rows,
    }
}

/// A price as the Bus writes it (`Px`'s Display: two decimals, up to four where the price
/// has them, `1.90`, `0.0125`): an imported tape's sub-cent fill is not rounded on the
/// Blotter. The snapshot carries it as the `f64` of a `Px`, which converts back exactly.
fn px_text(x: f64) -> String {
    crate::market::Px::from_f64_exact(x).map_or_else(|| format!("{x:.2}"), |p| p.to_string())
}

/// A line wrapped at spaces to `w` columns (styles kept): the continuation lines are
/// indented four columns; a word longer than a line is cut with `…` ([`fit`]).
fn wrap(line: Line<'static>, w: usize) -> Vec<Line<'static>> {
    wrap_hang(line, w, 4)
}

/// [`wrap`] with the continuation lines hung `hang` columns in (under the text they
/// continue: a comment's text after `  # `, the help's description column). A pane too
/// narrow for the hang and eight columns of text cuts the line with `…` instead.
pub(crate) fn wrap_hang(line: Line<'static>, w: usize, hang: usize) -> Vec<Line<'static>> {
    let indent = " ".repeat(hang);
    if line_width(&line) <= w || w <= hang + 8 {
        return vec![fit(line, w)];
    }
    // The line as words, each a list of styled pieces, with the spaces before it.
    let mut words: Vec<(usize, Vec<Span<'static>>)> = Vec::new();
    let mut gap = 0usize;
    let mut glued = false;
    let line_style = line.style;
    for sp in line.spans {
        let style = sp.style;
        let text = sp.content.into_owned();
        let mut rest = text.as_str();
        while !rest.is_empty() {
            let spaces = rest.len() - rest.trim_start_matches(' ').len();
            if spaces > 0 {
                gap += spaces;
                glued = false;
                rest = &rest[spaces..];
                continue;
            }
            let end = rest.find(' ').unwrap_or(rest.len());
            let piece = Span::styled(rest[..end].to_string(), style);
            // `@` stays with the price after it.
            let after_at = words
                .last()
                .is_some_and(|(_, p)| p.last().is_some_and(|x| x.content == "@"));
            match words.last_mut() {
                Some((_, pieces)) if glued && gap == 0 => pieces.push(piece),
                Some((_, pieces)) if after_at => {
                    pieces.push(Span::raw(" ".repeat(std::mem::take(&mut gap))));
                    pieces.push(piece);
                }
                _ => words.push((std::mem::take(&mut gap), vec![piece])),
            }
            glued = true;
            rest = &rest[end..];
        }
    }
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut cur: Vec<Span<'static>> = Vec::new();
    let mut cur_w = 0usize;
    for (i, (gap, pieces)) in words.into_iter().enumerate() {
        let ww: usize = pieces.iter().map(|p| cols(&p.content)).sum();
        if i > 0 && cur_w + gap + ww > w {
            out.push(Line::from(std::mem::take(&mut cur)));
            cur.push(Span::raw(indent.clone()));
            cur_w = hang;
        } else if gap > 0 {
            cur.push(Span::raw(" ".repeat(gap)));
            cur_w += gap;
        }
        cur_w += ww;
        cur.extend(pieces);
    }
    out.push(Line::from(cur));
    out.into_iter()
        .map(|l| fit(l.style(line_style), w))
        .collect()
}

/// The columns `s` takes on the screen ([`super::fit::width`]: a wide character two).
fn cols(s: &str) -> usize {
    super::fit::width(s)
}

/// The columns a line takes on the screen.
fn line_width(line: &Line<'_>) -> usize {
    line.spans.iter().map(|sp| cols(&sp.content)).sum()
}

/// A line cut to `w` columns, with `…` where it was cut (styles kept).
fn fit(line: Line<'static>, w: usize) -> Line<'static> {
    if line_width(&line) <= w {
        return line;
    }
    let mut left = w.saturating_sub(1);
    let mut spans = Vec::new();
    for sp in line.spans {
        if left == 0 {
            break;
        }
        let n = cols(&sp.content);
        if n <= left {
            left -= n;
            spans.push(sp);
        } else {
            let c = super::fit::head(&sp.content, left).to_string();
            spans.push(Span::styled(c, sp.style));
            left = 0;
        }
    }
    spans.push(Span::raw("…"));
    Line::from(spans)
}

/// The Journal's lines `w` columns wide: each turn's head (time, author, what came of it),
/// its own-line comments, a stand-down's reason and its first coded errors; then a
/// proposal waiting and the agent's streamed text. A long line wraps at a word with its
/// continuation hung under the text it continues (a comment's text after `  # `).
pub fn journal_lines(app: &App, w: usize) -> Vec<Line<'static>> {
    let t = app.theme();
    let muted = Style::default().fg(t.ui_muted());
    let comment = Style::default().fg(t.syntax_comment());
    let mut lines: Vec<Line<'static>> = Vec::new();
    let mut push = |line: Line<'static>, hang: usize| lines.extend(wrap_hang(line, w, hang));
    for turn in app.turn_rows() {
        let time = turn.ts().to_string();
        let time = format!("{} ", &time[..8.min(time.len())]);
        // The head's continuation goes under the author, after the time.
        let hang = cols(&time);
        push(
            Line::from(vec![
                Span::styled(time, muted),
                Span::styled(
                    format!("{} ", turn.author()),
                    Style::default().add_modifier(Modifier::BOLD),
                ),
                Span::raw(turn.label()),
            ]),
            hang,
        );
        if let Some(r) = turn.routed() {
            for j in &r.journal {
                push(Line::from(Span::styled(format!("  # {j}"), comment)), 4);
            }
            if let Outcome::StandDown { reason } = &r.outcome {
                push(Line::from(format!("  reason: {reason}")), 10);
            }
            for e in r.outcome.errors().iter().take(2) {
                push(
                    Line::from(Span::styled(
                        format!("  {}", e.one_line()),
                        Style::default().fg(t.state_error()),
                    )),
                    4,
                );
            }
        }
        // An agent that wrote no valid turn: what failed (the coded error of its last
        // reply, the transport's report), as an invalid turn shows its errors.
        if let Some(f) = &turn.failure {
            push(
                Line::from(Span::styled(
                    format!("  {f}"),
                    Style::default().fg(t.state_error()),
                )),
                4,
            );
        }
    }
    if let Some(p) = app.proposal() {
        push(
            Line::from(Span::styled(
                format!(
                    "{} proposes {} @ {} (accept / reject):",
                    app.agent().map(|a| a.name.as_str()).unwrap_or("agent"),
                    p.run.turn.outcome.label(),
                    p.wake
                ),
                Style::default().fg(t.state_warn()),
            )),
            4,
        );
        if let Some(f) = p.run.failure() {
            push(
                Line::from(Span::styled(
                    format!("  {f}"),
                    Style::default().fg(t.state_error()),
                )),
                4,
            );
        }
        for j in &p.run.turn.journal {
            push(Line::from(Span::styled(format!("  # {j}"), comment)), 4);
        }
    }
    // What the author is writing, while it writes: once its answer is in (proposed, routed
    // or refused), the proposal and the turn rows say what became of it.
    let thinking = app
        .agent()
        .filter(|a| a.waiting.is_some())
        .map(|a| a.thinking.as_str())
        .unwrap_or("");
    // Why its replies to this wake were refused, while it writes again.
    let refused = app
        .agent()
        .filter(|a| a.waiting.is_some())
        .map_or(&[][..], |a| a.refused.as_slice());
    for (i, why) in refused.iter().enumerate() {
        push(
            Line::from(Span::styled(
                format!("reply {} refused, asked again: {why}", i + 1),
                Style::default().fg(t.state_error()),
            )),
            4,
        );
    }
    if !thinking.is_empty() {
        push(Line::from(Span::styled("agent is writing…", muted)), 4);
        for l in thinking
            .lines()
            .rev()
            .take(3)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            push(Line::from(Span::styled(format!("  {l}"), muted)), 4);
        }
    }
    lines
}

fn draw_journal(f: &mut Frame, app: &App, r: Rect) {
    // The newest rows at the bottom: the latest outcome and the streamed text stay in view.
    let h = usize::from(r.height.saturating_sub(2));
    let lines = journal_lines(app, usize::from(r.width.saturating_sub(2)));
    let skip = lines.len().saturating_sub(h);
    let lines: Vec<Line> = lines.into_iter().skip(skip).collect();
    let n = app.turn_rows().len();
    f.render_widget(
        Paragraph::new(lines).block(block(
            app,
            Pane::Journal,
            format!("Journal — {}", super::fit::count(n as u64, "turn")),
        )),
        r,
    );
}

fn draw_tokens(f: &mut Frame, app: &App, r: Rect) {
    let t = app.theme();
    let muted = Style::default().fg(t.ui_muted());
    let mut rows = Vec::new();
    let (mut tk, mut te) = (0usize, 0usize);
    let mut total = TokenTotal::default();
    let mut repairs = 0usize;
    // The figure columns as wide as their widest figure (an oversized reply's estimate runs
    // to seven digits), so no figure is cut.
    let (mut sent_w, mut got_w) = (4usize, 5usize);
    let live = app.agent().is_some_and(|a| a.live);
    for turn in app.turn_rows() {
        repairs += turn.repairs();
        let io = reply_io(app, turn, live);
        let tok = turn.tokens();
        if tok.is_none() && io.is_none() {
            continue;
        }
        let name = turn
            .routed()
            // The column is narrow: the fail-closed pass reads as its class, as counted
            // below (`invalid 1`).
            .map(|r| match r.outcome {
                Outcome::Pass { fail_closed: true } => "invalid",
                // A supersede that armed none of its plans (their names another owner's
                // live plans) is not shown as if it armed.
                Outcome::Supersede { .. }
                    if turn.result.starts_with("armed nothing")
                        || turn.result.starts_with("refused") =>
                {
                    "refused"
                }
                ref o => o.name(),
            })
            .unwrap_or("rejected");
        tk += tok.and_then(|t| t.kestrel).unwrap_or(0);
        te += tok.and_then(|t| t.envelope).unwrap_or(0);
        let (sent, got) = match io {
            Some(io) => {
                total.add(&io);
                (io.sent_text(), io.got_text())
            }
            None => ("-".to_string(), "-".to_string()),
        };
        sent_w = sent_w.max(cols(&sent));
        got_w = got_w.max(cols(&got));
        // The agent by its short name (its `name` is cut for the status line).
        let author = match app.agent().filter(|_| !turn.from_desk()) {
            Some(a) => a.short_name.clone(),
            None => crate::session::agent::short_author(turn.author()),
        };
        rows.push(token_row(turn.ts().hhmm(), &author, name, (sent, got), tok));
    }
    // A proposal waiting for the person was already sent and written (and is charged for):
    // its row reads `waiting` until it is decided, then the routed or rejected turn's.
    if let Some((a, p)) = app
        .agent()
        .and_then(|a| a.proposal.as_ref().map(|p| (a, p)))
    {
        let attempts = p.run.attempts.len() as u64;
        let io = spend_io(
            &p.run.spend(),
            attempts.max(1),
            a.live.then(|| app.prompt_tokens.0 + p.view_tokens),
        );
        total.add(&io);
        let tok = p.tokens.as_ref();
        tk += tok.and_then(|t| t.kestrel).unwrap_or(0);
        te += tok.and_then(|t| t.envelope).unwrap_or(0);
        let (sent, got) = (io.sent_text(), io.got_text());
        sent_w = sent_w.max(cols(&sent));
        got_w = got_w.max(cols(&got));
        rows.push(token_row(
            p.asked_at.hhmm(),
            &a.short_name,
            "waiting",
            (sent, got),
            tok,
        ));
    }
    let saving = if te > 0 {
        format!("{:.0}%", 100.0 * (te as f64 - tk as f64) / te as f64)
    } else {
        "-".into()
    };
    let (sent_total, got_total) = (total.sent_text(), total.got_text());
    sent_w = sent_w.max(cols(&sent_total));
    got_w = got_w.max(cols(&got_total));
    let counts = app
        .outcome_counts()
        .iter()
        .map(|(n, c)| format!("{n} {c}"))
        .collect::<Vec<_>>()
        .join(" · ");
    let mut foot = vec![
        Line::from(Span::styled(format!("{counts} · repairs {repairs}"), muted)),
        Line::from(Span::styled(
            format!(
                "prompt: card {} · view {} · menu {}",
                app.prompt_tokens.0, app.snap.frame.tokens, app.prompt_tokens.1
            ),
            muted,
        )),
    ];
    if let Some(cost) = total.cost(app.price) {
        foot.push(Line::from(Span::styled(cost, muted)));
    }
    if total.provider || total.estimated() {
        foot.push(Line::from(Span::styled(
            "sent / got: * the provider's usage, ~ the desk's estimate (card + View per ask)",
            muted,
        )));
    }
    let b = block(app, Pane::Tokens, "Tokens (cl100k)".into());
    let inner = b.inner(r);
    f.render_widget(b, r);
    // The lines under the table as tall as they wrap (the prompt side was cut off when the
    // outcome counts took two rows), at most half the pane.
    let foot_p = Paragraph::new(foot).wrap(Wrap { trim: true });
    let foot_h = u16::try_from(foot_p.line_count(inner.width))
        .unwrap_or(u16::MAX)
        .min(inner.height / 2)
        .max(1);
    let [top, bottom] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(foot_h)]).areas(inner);
    f.render_widget(foot_p, bottom);
    let h = usize::from(top.height.saturating_sub(2));
    let skip = rows.len().saturating_sub(h);
    let mut rows: Vec<Vec<String>> = rows.into_iter().skip(skip).collect();
    // The author column as wide as the longest author shown (a command author's script,
    // `command-author.sh`, was cut to `comma…` at every size), at least its header.
    let author_w = rows
        .iter()
        .map(|r| cols(&r[1]))
        .chain([cols("author")])
        .max()
        .unwrap_or(0);
    rows.push(vec![
        "total".into(),
        String::new(),
        String::new(),
        sent_total,
        got_total,
        tk.to_string(),
        te.to_string(),
        saving,
    ]);
    // Every column whole: narrow panes drop the saving column (the total is in the footer
    // line) rather than cut a header.
    let w16 = |w: usize| u16::try_from(w).unwrap_or(u16::MAX);
    let mut widths = vec![
        5u16,
        w16(author_w).max(8),
        10,
        w16(sent_w),
        w16(got_w),
        7,
        8,
        5,
    ];
    let mut header = vec![
        "time", "author", "outcome", "sent", "got", "kestrel", "envelope", "saved",
    ];
    // Nothing was sent to anyone (a script, the house agent, a person): no `sent` column,
    // which leaves the envelope its room at 160x48.
    if !total.any_sent {
        for r in &mut rows {
            r.remove(3);
        }
        widths.remove(3);
        header.remove(3);
    }
    let need = |w: &[u16]| w.iter().sum::<u16>() + w.len() as u16 - 1;
    if need(&widths) > top.width {
        widths.pop();
        header.pop();
        widths[1] = w16(author_w);
    }
    // What was sent and written stays longest, and who wrote it whole: the envelope and
    // Kestrel columns go first, down to when, who, what it routed to, sent and got.
    let core = if total.any_sent { 5 } else { 4 };
    while need(&widths) > top.width && widths.len() > core {
        widths.pop();
        header.pop();
    }
    // Truly narrow: the author is cut (with `…`), down to its header's width.
    let over = need(&widths).saturating_sub(top.width);
    widths[1] = widths[1].saturating_sub(over).max(w16(cols("author")));
    let author_cut = usize::from(widths[1]);
    let last = rows.len().saturating_sub(1);
    let rows: Vec<Row> = rows
        .into_iter()
        .enumerate()
        .map(|(i, mut cells)| {
            cells[1] = super::fit::fit(&cells[1], author_cut);
            let row = Row::new(cells);
            if i == last {
                row.style(Style::default().add_modifier(Modifier::BOLD))
            } else {
                row
            }
        })
        .collect();
    let cols = widths.len();
    let table = Table::new(
        rows,
        widths.iter().map(|w| Constraint::Length(*w)).take(cols),
    )
    .header(Row::new(header).style(muted));
    f.render_widget(table, top);
}

/// One row of the Tokens pane: when, who, what it routed to, what was sent and written,
/// and its Kestrel and envelope tokens with the saving.
fn token_row(
    time: String,
    author: &str,
    outcome: &'static str,
    (sent, got): (String, String),
    tok: Option<&crate::tokens::TurnTokens>,
) -> Vec<String> {
    let figure = |n: Option<usize>| n.map_or("-".to_string(), |x| x.to_string());
    vec![
        time,
        author.to_string(),
        outcome.to_string(),
        sent,
        got,
        figure(tok.and_then(|t| t.kestrel)),
        figure(tok.and_then(|t| t.envelope)),
        tok.and_then(|t| t.saving_pct)
            .map_or("-".to_string(), |p| format!("{p:.0}%")),
    ]
}

/// What one reply (all the attempts of its repair loop) was sent and wrote, in tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct ReplyIo {
    /// Prompt tokens, `None` when nothing was sent (a script's reply, a person's turn).
    sent: Option<u64>,
    /// Reply tokens.
    got: u64,
    /// The figures are the provider's `usage`.
    provider: bool,
    /// The sent figure is the desk's estimate (no `usage`).
    sent_estimated: bool,
    /// The reply figure is in part an estimate (a reply refused unread for its size).
    got_estimated: bool,
}

impl ReplyIo {
    fn mark(&self, estimated: bool) -> (&'static str, &'static str) {
        if self.provider {
            ("", "*")
        } else if estimated {
            ("~", "")
        } else {
            ("", "")
        }
    }
    fn sent_text(&self) -> String {
        let (pre, post) = self.mark(self.sent_estimated);
        self.sent.map_or("-".into(), |n| format!("{pre}{n}{post}"))
    }
    fn got_text(&self) -> String {
        let (pre, post) = self.mark(self.got_estimated);
        format!("{pre}{}{post}", self.got)
    }
}

/// A turn's tokens sent and written: the provider's `usage` when every attempt reported
/// one; else the desk's cl100k count of every reply written (`~` with an oversized
/// reply's estimate in it) and, for a live author, the prompt estimated as the card and
/// the View per attempt. A person's turn counts its words, sending nothing; a turn
/// rejected before anything was written (`unanswered`) has none.
fn reply_io(app: &App, turn: &TurnLine, live: bool) -> Option<ReplyIo> {
    let s = &turn.spend;
    let attempts = turn.attempts as u64;
    if attempts == 0 {
        // A person's turn (no repair loop) counts what was written.
        return turn.tokens().map(|t| ReplyIo {
            got: t.reply as u64,
            got_estimated: turn.oversized.is_some(),
            ..ReplyIo::default()
        });
    }
    let asks = !turn.from_desk() && live;
    Some(spend_io(
        s,
        attempts,
        asks.then(|| app.prompt_tokens.0 + turn.view_tokens),
    ))
}

/// What a repair loop of `attempts` attempts was sent and wrote, from its [`Spend`]: the
/// provider's `usage` when every attempt reported one; else the desk's cl100k count of
/// every reply written (`~` with an oversized reply's estimate in it) and, given the
/// `prompt` an attempt was sent (a live author: the card and the View), that for each
/// attempt a reply came back for (a provider error, a refused connection or an HTTP 500, is
/// not known to have been sent or charged). The status line and the Tokens pane both say
/// it so.
///
/// [`Spend`]: crate::turn::repair::Spend
fn spend_io(s: &crate::turn::repair::Spend, attempts: u64, prompt: Option<usize>) -> ReplyIo {
    if s.provider_attempts >= attempts {
        return ReplyIo {
            sent: Some(s.provider_prompt_tokens),
            got: s.provider_completion_tokens,
            provider: true,
            ..ReplyIo::default()
        };
    }
    ReplyIo {
        sent: prompt
            .filter(|_| s.replies > 0)
            .map(|p| p as u64 * s.replies),
        got: s.tokens + s.tokens_estimated,
        provider: false,
        sent_estimated: true,
        got_estimated: s.tokens_estimated > 0,
    }
}

/// The Tokens pane's running total of [`ReplyIo`]s: sent and written, whether any figure
/// in it is the provider's or an estimate.
#[derive(Clone, Copy, Debug, Default)]
struct TokenTotal {
    sent: u64,
    got: u64,
    provider: bool,
    /// An estimate is in the sent total (the desk's, with no `usage`).
    sent_estimated: bool,
    /// An estimate is in the got total (a reply refused unread for its size).
    got_estimated: bool,
    any_sent: bool,
    /// Tokens written by a model that was sent a prompt (what a provider charges for: a
    /// person's or a script's turn is not in it).
    paid_got: u64,
    /// An oversized reply's estimate is in `paid_got`.
    paid_got_estimated: bool,
}

impl TokenTotal {
    fn add(&mut self, io: &ReplyIo) {
        if let Some(n) = io.sent {
            self.sent += n;
            self.any_sent = true;
            self.sent_estimated |= io.sent_estimated && !io.provider;
            self.paid_got += io.got;
            self.paid_got_estimated |= io.got_estimated;
        }
        self.got += io.got;
        self.provider |= io.provider;
        self.got_estimated |= io.got_estimated;
    }
    /// Is an estimate in either total (the cost is then one too)?
    fn estimated(&self) -> bool {
        self.sent_estimated || self.got_estimated
    }
    fn sent_text(&self) -> String {
        if !self.any_sent {
            return "-".into();
        }
        let about = if self.sent_estimated { "~" } else { "" };
        format!("{about}{}", self.sent)
    }
    fn got_text(&self) -> String {
        let about = if self.got_estimated { "~" } else { "" };
        format!("{about}{}", self.got)
    }
    /// `agent cost ~$0.0123 (in $3.00 / out $15.00 per 1M tokens)` at the `--price-in` /
    /// `--price-out` given: only a model's calls cost, the prompts sent and what it wrote
    /// back, not the person's turns or a script's. `None` when no price was given or
    /// nothing was sent.
    fn cost(&self, price: Option<(f64, f64)>) -> Option<String> {
        let (pi, po) = price?;
        if !self.any_sent {
            return None;
        }
        let usd = (self.sent as f64 * pi + self.paid_got as f64 * po) / 1e6;
        let about = if self.sent_estimated || self.paid_got_estimated {
            "~"
        } else {
            ""
        };
        Some(format!(
            "agent cost {about}${usd:.4} (in ${pi:.2} / out ${po:.2} per 1M tokens)"
        ))
    }
}

fn draw_editor(f: &mut Frame, app: &App, r: Rect) {
    if let Some(p) = app.proposal().filter(|_| shows_proposal(app)) {
        draw_proposal(f, app, p, r);
        return;
    }
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
    let b = block(app, Pane::Editor, title);
    let inner = b.inner(r);
    let (lines, at) = ed.display(t, usize::from(inner.width));
    let widths: Vec<usize> = lines.iter().map(line_width).collect();
    f.render_widget(b, r);
    // The first coded error, whole, in a message area under the text.
    let err = Style::default().fg(t.syntax_error());
    let msg: Vec<String> = super::editor::message(ed.diagnostics())
        .map(|m| super::fit::wrap(&m, usize::from(inner.width.max(1))))
        .unwrap_or_default();
    // As many rows as it needs, the text keeping three (the cursor's line, its caret and
    // one more); cut still, its last row names the key that shows it whole.
    let msg_h = (msg.len() as u16).min(inner.height.saturating_sub(3));
    let msg = if msg.len() > usize::from(msg_h) && msg_h > 0 {
        let mut keep = msg[..usize::from(msg_h) - 1].to_vec();
        keep.push(super::fit::fit(
            &format!(
                "… {} more: {} shows it whole",
                super::fit::count((msg.len() - keep.len()) as u64, "row"),
                app.keys.label(Action::ErrorWhole)
            ),
            usize::from(inner.width.max(1)),
        ));
        keep
    } else {
        msg
    };
    let [text_area, msg_area] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(msg_h)]).areas(inner);
    let inner_h = usize::from(text_area.height);
    let (row, _) = ed.cursor();
    // Columns on the screen, not characters: a wide character takes two.
    let col = ed.cursor_x();
    let cur_line = at.get(row).copied().unwrap_or(0);
    let scroll = cur_line.saturating_sub(inner_h.saturating_sub(2).max(1));
    // The cursor's line (with its error carets) scrolls sideways to keep the cursor in view,
    // as in nano; the other lines stay put. « and » say a line has more.
    let w = usize::from(text_area.width);
    let hs = col.saturating_sub(w.saturating_sub(2));
    let own = at.get(row).copied().unwrap_or(0)..at.get(row + 1).copied().unwrap_or(lines.len());
    let cursor_lines: Vec<Line> = lines
        .get(own.clone())
        .map(<[Line]>::to_vec)
        .unwrap_or_default();
    f.render_widget(Paragraph::new(lines).scroll((scroll as u16, 0)), text_area);
    let more = Style::default()
        .fg(t.ui_title())
        .add_modifier(Modifier::BOLD);
    let base = Style::default().bg(t.ui_bg()).fg(t.ui_fg());
    for y in 0..text_area.height {
        let li = scroll + usize::from(y);
        let Some(lw) = widths.get(li) else {
            break;
        };
        let yy = text_area.y + y;
        let shift = if own.contains(&li) { hs } else { 0 };
        if shift > 0 {
            let one = Rect {
                y: yy,
                height: 1,
                ..text_area
            };
            f.buffer_mut().set_style(one, base);
            for x in one.left()..one.right() {
                f.buffer_mut()[(x, yy)].set_symbol(" ");
            }
            if let Some(l) = cursor_lines.get(li - own.start) {
                f.render_widget(Paragraph::new(skip_cols(l.clone(), shift)), one);
            }
            if *lw > 0 {
                f.buffer_mut()[(text_area.x, yy)]
                    .set_symbol("«")
                    .set_style(more);
            }
        }
        if *lw > shift + w && text_area.width > 0 {
            let right = text_area.right() - 1;
            // A wide character ending under the mark goes with it: drawn, it would cover it.
            if right > text_area.x && cols(f.buffer_mut()[(right - 1, yy)].symbol()) > 1 {
                f.buffer_mut()[(right - 1, yy)].set_symbol(" ");
            }
            f.buffer_mut()[(right, yy)].set_symbol("»").set_style(more);
        }
    }
    if msg_h > 0 {
        let lines: Vec<Line> = msg
            .iter()
            .take(usize::from(msg_h))
            .map(|l| Line::from(Span::styled(l.clone(), err)))
            .collect();
        f.render_widget(Paragraph::new(lines), msg_area);
    }
    if ed.is_blank() && app.focus != Pane::Editor {
        f.render_widget(
            Paragraph::new(Span::styled(
                "press e to write a turn: a PLAN, STAND-DOWN <reason>, SHOW VIEW, CANCEL <plan>",
                Style::default().fg(t.ui_muted()),
            ))
            .wrap(Wrap { trim: true }),
            inner,
        );
    }
    if app.focus == Pane::Editor && app.modal.is_none() {
        let y = text_area.y + (cur_line - scroll) as u16;
        let x = text_area.x + (col - hs) as u16;
        if y < text_area.bottom() && x < text_area.right() {
            f.set_cursor_position((x, y));
        }
    }
}

/// What a proposal's plans named like the person's live plans come to if it is accepted
/// (`vwap-hold is a live plan of yours: accepted, it will not arm`), or `None`.
fn clash_warning(clash: &[String]) -> Option<String> {
    match clash {
        [] => None,
        [one] => Some(format!(
            "{one} is a live plan of yours: accepted, the agent's {one} will not arm"
        )),
        many => Some(format!(
            "{} are live plans of yours: accepted, the agent's will not arm",
            many.join(", ")
        )),
    }
}

/// How many lines of a refused reply the proposal pane shows under its error.
const PROPOSAL_REPLY_LINES: usize = 8;

/// The Editor while a co-pilot proposal waits: the proposed turn's canonical Kestrel, whole
/// (budget, tickets, prices, escalation, wakes), highlighted and wrapped, read-only, under
/// the title `proposal from <author> — a accept · x reject`. An answer with no Kestrel (a
/// fail-closed pass) says what failed. A turn longer than the pane ends on a row saying how
/// many more there are (the Log shows it whole once routed).
fn draw_proposal(f: &mut Frame, app: &App, p: &crate::session::agent::Proposal, r: Rect) {
    let t = app.theme();
    let author = app.agent().map_or("agent", |a| a.short_name.as_str());
    let keys = format!(
        "{} accept · {} reject",
        app.keys.label(Action::Accept),
        app.keys.label(Action::Reject)
    );
    // Its keys stay whole: the author gives way first (the footer names it too).
    let room = usize::from(r.width.saturating_sub(4));
    let title = [
        format!("proposal from {author} — {keys}"),
        format!("proposal — {keys}"),
    ]
    .into_iter()
    .find(|t| cols(t) <= room)
    .unwrap_or_else(|| super::fit::fit(&format!("proposal — {keys}"), room));
    let b = block(app, Pane::Editor, title);
    let inner = b.inner(r);
    f.render_widget(b, r);
    let w = usize::from(inner.width.max(1));
    let mut lines: Vec<Line<'static>> = Vec::new();
    let kestrel = &p.run.turn.kestrel;
    if kestrel.trim().is_empty() {
        let what = p.run.failure().unwrap_or_else(|| proposal_summary(&p.run));
        lines.extend(wrap_hang(
            Line::from(Span::styled(what, Style::default().fg(t.state_warn()))),
            w,
            2,
        ));
        // What the agent wrote, refused: its last reply's first lines, as written (control
        // characters as their symbols), so the person reads the plan before deciding.
        if let Some(last) = p
            .run
            .attempts
            .last()
            .filter(|a| !a.written.trim().is_empty())
        {
            let muted = Style::default().fg(t.ui_muted());
            lines.push(Line::from(Span::styled(
                format!("its last reply (attempt {}), refused:", last.attempt + 1),
                muted,
            )));
            for l in last.written.lines().take(PROPOSAL_REPLY_LINES) {
                let l = crate::lang::diag::visible_line(l);
                lines.extend(wrap_hang(Line::from(format!("  {l}")), w, 4));
            }
            let n = last.written.lines().count();
            if n > PROPOSAL_REPLY_LINES {
                lines.push(Line::from(Span::styled(
                    format!(
                        "  … {} more (the Log shows it whole once decided)",
                        super::fit::count((n - PROPOSAL_REPLY_LINES) as u64, "line")
                    ),
                    muted,
                )));
            }
        }
    }
    // A plan named like one of the person's live plans does not arm if accepted: said
    // before the person decides (until 2026-12-06 only the Log said it, after `a`).
    let clash = app.agent().map_or(&[][..], |a| a.proposal_clash.as_slice());
    if let Some(text) = clash_warning(clash) {
        lines.extend(wrap_hang(
            Line::from(Span::styled(text, Style::default().fg(t.state_warn()))),
            w,
            2,
        ));
    }
    for l in plans_first(kestrel) {
        // A long line wraps under its own indent plus two, as the Journal hangs its text.
        let indent = l.len() - l.trim_start().len();
        lines.extend(wrap_hang(super::editor::highlight(l, t), w, indent + 2));
    }
    let h = usize::from(inner.height);
    if lines.len() > h && h > 0 {
        let more = lines.len() - (h - 1);
        lines.truncate(h - 1);
        lines.push(Line::from(Span::styled(
            super::fit::fit(
                &format!("… {} more", super::fit::count(more as u64, "row")),
                w,
            ),
            Style::default().fg(t.ui_muted()),
        )));
    }
    f.render_widget(Paragraph::new(lines), inner);
}

/// A turn's canonical lines with its PLANs first (what `a` would put at risk, read first on a
/// short pane), then its other statements (VIEW, WAKE, …) in their order; its comments are
/// left out (the Journal shows them). A statement is its head line and the indented lines
/// under it; a USING stays with the statement after it, which it applies to.
fn plans_first(kestrel: &str) -> Vec<&str> {
    let mut blocks: Vec<Vec<&str>> = Vec::new();
    let mut using = false;
    for l in kestrel.lines() {
        let bare = l.trim_start();
        if bare.is_empty() || bare.starts_with('#') {
            continue;
        }
        match blocks.last_mut() {
            Some(b) if using || l.starts_with(char::is_whitespace) => b.push(l),
            _ => blocks.push(vec![l]),
        }
        if !l.starts_with(char::is_whitespace) {
            using = bare.starts_with("USING");
        }
    }
    let is_plan = |b: &Vec<&str>| {
        b.iter()
            .any(|l| !l.starts_with(char::is_whitespace) && l.starts_with("PLAN"))
    };
    let (plans, rest): (Vec<_>, Vec<_>) = blocks.into_iter().partition(is_plan);
    plans.into_iter().chain(rest).flatten().collect()
}

/// A line with its first `n` columns left out (styles kept): the editor's side-scroll. A
/// wide character the edge cuts in two is left out too, its columns past the edge blank.
fn skip_cols(line: Line<'static>, n: usize) -> Line<'static> {
    let mut left = n;
    let mut spans = Vec::new();
    for sp in line.spans {
        if left == 0 {
            spans.push(sp);
            continue;
        }
        let w = cols(&sp.content);
        if w <= left {
            left -= w;
            continue;
        }
        let (blank, rest) = super::fit::skip(&sp.content, left);
        spans.push(Span::styled(" ".repeat(blank), sp.style));
        spans.push(Span::styled(rest.to_string(), sp.style));
        left = 0;
    }
    Line::from(spans).style(line.style)
}

/// The help's lines `w` columns wide: the terms, then the keys, then any problem with the
/// config files (each whole). A description too long for a line wraps at a word and its
/// continuation hangs under the description column, not under the key.
/// The plan `?` shows to start from: one of each clause a first plan needs, valid as it is
/// (a test arms it).
pub const PLAN_SKELETON: &str = "PLAN my-break budget 0.1R ttl +30m
  USING signal SPX exec SPY 0dte
  WHEN spot crosses above hod
  DO buy 1 ATM C @ min(fair, ask)
  TP 1.5x @ fair
  EXIT spot < vwap held 60s @ bid
";

pub fn help_lines(app: &App, w: usize) -> Vec<Line<'static>> {
    let t = app.theme();
    let title_st = Style::default()
        .fg(t.ui_title())
        .add_modifier(Modifier::BOLD);
    let muted = Style::default().fg(t.ui_muted());
    let mut lines: Vec<Line<'static>> = vec![Line::from(Span::styled("Terms", title_st))];
    for (term, meaning) in super::legend::lines(app.snap.settings.r_usd) {
        let col = cols(&term).max(25) + 1;
        lines.extend(wrap_hang(
            Line::from(vec![
                Span::styled(super::fit::pad(&term, col), title_st),
                Span::raw(meaning),
            ]),
            w,
            col,
        ));
    }
    lines.push(Line::from(Span::styled("Keys", title_st)));
    for a in Action::ALL {
        let keys = app.keys.labels(*a).join(" ");
        let col = cols(&keys).max(15) + 1;
        lines.extend(wrap_hang(
            Line::from(vec![
                Span::styled(super::fit::pad(&keys, col), title_st),
                Span::raw(a.describe()),
            ]),
            w,
            col,
        ));
    }
    // Someone writing a first plan had no syntax to start from here (a tester with
    // `--no-example` had nothing to yank either): a plan the desk arms as it is, and where
    // the whole language is.
    lines.push(Line::from(Span::styled("Writing a plan", title_st)));
    for l in PLAN_SKELETON.lines() {
        lines.push(Line::from(Span::raw(format!("  {l}"))));
    }
    lines.extend(wrap(
        Line::from(Span::styled(
            "the whole language: `kestrel card` (what an agent is given) or docs/language.md; \
             in Plans, y copies a plan's text into the editor to start from",
            muted,
        )),
        w,
    ));
    lines.extend(wrap(
        Line::from(Span::styled(
            "mouse: a click focuses a pane, the wheel scrolls it · paste: into the editor as is",
            muted,
        )),
        w,
    ));
    let dir = crate::session::saved::config_dir()
        .map(|d| d.join("keys.toml").display().to_string())
        .unwrap_or_else(|| "keys.toml in the config directory".into());
    lines.extend(wrap(
        Line::from(Span::styled(
            format!(
                "{} · any other key closes · {dir} remaps keys",
                scroll_keys(app)
            ),
            muted,
        )),
        w,
    ));
    if !app.warnings.is_empty() {
        let err = Style::default().fg(t.state_warn());
        lines.push(Line::from(Span::styled(
            format!(
                "Config: {} (each kept its default)",
                super::fit::count(app.warnings.len() as u64, "problem")
            ),
            title_st,
        )));
        for warn in &app.warnings {
            lines.extend(wrap(Line::from(Span::styled(warn.clone(), err)), w));
        }
    }
    lines
}

/// A dialog's key hint, muted, in `w` columns: whole, or cut at a word with `…`.
fn hint(app: &App, text: &str, w: usize) -> Line<'static> {
    Line::from(Span::styled(
        super::fit::fit(text, w),
        Style::default().fg(app.theme().ui_muted()),
    ))
}

/// The keys that scroll a long dialog, as the dialogs name them.
fn scroll_keys(_app: &App) -> &'static str {
    "↑↓ j k pgup pgdn home end scroll"
}

/// A dialog of `lines` (already wrapped to its width) in `r`, scrolled by
/// [`App::modal_scroll`] rows and clamped so the last row stops at the bottom. When the
/// lines do not fit, the bottom border says where the view is and how to scroll
/// (`↓ more · 1–26 of 61 · ↑↓ j k pgup pgdn home end scroll`).
fn draw_scrolled(f: &mut Frame, app: &App, r: Rect, lines: Vec<Line<'static>>, b: Block<'_>) {
    let h = usize::from(r.height.saturating_sub(2));
    let total = lines.len();
    let max = total.saturating_sub(h);
    app.modal_rows.set((total, h));
    let top = usize::from(app.modal_scroll).min(max);
    let mut b = b;
    if total > h && h > 0 {
        let t = app.theme();
        let more = match (top > 0, top < max) {
            (false, true) => "↓ more",
            (true, true) => "↑↓ more",
            _ => "↑ more",
        };
        b = b.title_bottom(Line::from(Span::styled(
            format!(
                " {more} · {}–{} of {total} · {} ",
                top + 1,
                (top + h).min(total),
                scroll_keys(app)
            ),
            Style::default()
                .fg(t.ui_title())
                .add_modifier(Modifier::BOLD),
        )));
    }
    let shown: Vec<Line> = lines.into_iter().skip(top).take(h).collect();
    f.render_widget(Clear, r);
    f.render_widget(Paragraph::new(shown).block(b), r);
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
    let style = Style::default().bg(t.ui_bg()).fg(t.ui_fg());
    let frame_block = |title: &str| {
        Block::default()
            .borders(Borders::ALL)
            .border_type(BorderType::Double)
            .border_style(Style::default().fg(t.ui_border_focus()))
            .title(format!(" {title} "))
            .style(style)
    };
    match m {
        Modal::Help => {
            let r = centered(area, 100, area.height.saturating_sub(2));
            let lines = help_lines(app, usize::from(r.width.saturating_sub(2)));
            draw_scrolled(f, app, r, lines, frame_block("Terms and keys"));
        }
        Modal::Confirm(super::app::Confirm::Restart) => {
            // The plans armed at the open (`--plans`, the examples) are acts too: said, since
            // a trader reads them as how the desk was opened (the tester's R lost them).
            let r = centered(area, 66, 6);
            let w = usize::from(r.width.saturating_sub(2));
            f.render_widget(Clear, r);
            f.render_widget(
                Paragraph::new(vec![
                    Line::from("Restart from the open? The book is emptied, the plans armed at"),
                    Line::from("the open too, and every act of this run is dropped (a saved"),
                    Line::from("session keeps what was written). Home goes back and keeps them."),
                    hint(app, "y / enter: restart · any other key: keep going", w),
                ])
                .block(frame_block("Restart")),
                r,
            );
        }
        Modal::Confirm(super::app::Confirm::Undo { turn, also }) => {
            let second = if also.is_empty() {
                "The session runs again without it; its text comes back to you.".to_string()
            } else {
                format!(
                    "With it go the agent's turns after it: {}. The session goes back to \
                     your turn; its text comes back to you.",
                    also.join("; ")
                )
            };
            draw_question(
                f,
                app,
                area,
                frame_block("Undo"),
                vec![format!("Take back your {turn}?"), second],
                "y / enter: undo · any other key: keep it",
            );
        }
        Modal::Confirm(super::app::Confirm::UndoDecision { what }) => draw_question(
            f,
            app,
            area,
            frame_block("Undo"),
            vec![
                format!("Take back your {what}?"),
                "The session goes back to where you decided and the proposal waits for you \
                 again; what came after it is dropped."
                    .to_string(),
            ],
            "y / enter: undo · any other key: keep it",
        ),
        Modal::Confirm(super::app::Confirm::Branch { dropped, .. }) => draw_question(
            f,
            app,
            area,
            frame_block("Drop the turns ahead?"),
            vec![
                format!("This drops {dropped}, recorded ahead of the tape: go on?"),
                "Acting here starts a new branch: what was recorded after now is dropped."
                    .to_string(),
            ],
            "y / enter: act and drop it · any other key: keep it",
        ),
        Modal::Prompt { kind, input } => {
            let r = centered(area, 70, 5);
            let (title, hint) = match kind {
                PromptKind::StandDown => (
                    "STAND-DOWN",
                    "reason (enter routes, esc cancels):".to_string(),
                ),
                PromptKind::Seek => (
                    "Seek",
                    "tape time HH:MM, HH:MM:SS or HH:MM:SS.mmm (enter seeks):".to_string(),
                ),
                // A new filter starts empty; the one in force is named, ↑ recalls it.
                PromptKind::Filter if app.log.filter.is_empty() => (
                    "Filter",
                    "kind or plan words, all must match (enter filters):".to_string(),
                ),
                PromptKind::Filter => (
                    "Filter",
                    super::fit::fit(
                        &format!(
                            "now /{}: ↑ recalls it · esc keeps it · enter with nothing clears",
                            app.log.filter
                        ),
                        usize::from(r.width.saturating_sub(2)),
                    ),
                ),
            };
            // The input's end (where typing goes) stays in view: a long one shows `…` and its
            // last columns; control characters show as their pictures, as in the editor.
            let room = usize::from(r.width.saturating_sub(4));
            let shown = super::editor::drawn(input);
            let shown = if cols(&shown) > room {
                format!("…{}", super::fit::tail(&shown, room.saturating_sub(1)))
            } else {
                shown
            };
            f.render_widget(Clear, r);
            f.render_widget(
                Paragraph::new(vec![
                    Line::from(Span::styled(hint, Style::default().fg(t.ui_muted()))),
                    Line::from(format!("> {shown}")),
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
                        Line::from(Span::styled(s, Style::default().bg(t.ui_selection_bg())))
                    } else {
                        Line::from(s)
                    }
                })
                .collect();
            lines.push(hint(
                app,
                "space toggles · enter routes · esc cancels",
                usize::from(r.width.saturating_sub(2)),
            ));
            f.render_widget(Clear, r);
            f.render_widget(Paragraph::new(lines).block(frame_block("SHOW VIEW")), r);
        }
        Modal::Event(text) | Modal::Error(text) => {
            let title = if matches!(m, Modal::Error(_)) {
                "Error"
            } else {
                "Event"
            };
            let width = area.width.saturating_sub(8).min(110);
            let w = usize::from(width.saturating_sub(2));
            let mut lines: Vec<Line<'static>> = Vec::new();
            for l in text.lines() {
                let lead = l.len() - l.trim_start_matches(' ').len();
                lines.extend(wrap_hang(Line::from(l.to_string()), w, lead + 4));
            }
            lines.push(hint(
                app,
                &format!("{} · any other key closes", scroll_keys(app)),
                w,
            ));
            let h = u16::try_from(lines.len() + 2)
                .unwrap_or(u16::MAX)
                .min(area.height);
            let r = centered(area, width, h);
            draw_scrolled(f, app, r, lines, frame_block(title));
        }
        Modal::PlanText(text) => {
            let h = (text.lines().count() as u16 + 3).min(area.height);
            let r = centered(area, area.width.saturating_sub(8).min(110), h);
            let mut lines: Vec<Line> = text
                .lines()
                .map(|l| super::editor::highlight(l, t))
                .collect();
            lines.push(hint(
                app,
                "y copies into the editor · any key closes",
                usize::from(r.width.saturating_sub(2)),
            ));
            f.render_widget(Clear, r);
            f.render_widget(Paragraph::new(lines).block(frame_block("Plan")), r);
        }
    }
}

/// A question the person answers with `y` (an undo, a branch): its `lines` and the `keys`
/// hint in `frame`, at most 64 wide, as tall as its lines wrap (a long turn or several turns
/// ahead do not push the hint out of it), centred over `area`.
fn draw_question(
    f: &mut Frame,
    app: &App,
    area: Rect,
    frame: Block,
    lines: Vec<String>,
    keys: &str,
) {
    let width = area.width.min(64);
    let w = usize::from(width.saturating_sub(2));
    let mut lines: Vec<Line> = lines.into_iter().map(Line::from).collect();
    lines.push(hint(app, keys, w));
    let text = Paragraph::new(lines).wrap(Wrap { trim: false });
    let h = u16::try_from(text.line_count(width.saturating_sub(2)) + 2).unwrap_or(u16::MAX);
    let r = centered(area, width, h);
    f.render_widget(Clear, r);
    f.render_widget(text.block(frame), r);
}

#[cfg(test)]
mod tests {
    use super::{
        Owner, PlanLine, PlanState, ReplyIo, Role, TokenTotal, hundredths, plans_title, pnl_role,
        r_of, usd,
    };

    /// The cost is of the model's calls only: the person's turn at the open (441 tokens of
    /// the bundled plans) was charged as the agent's output.
    #[test]
    fn the_cost_counts_the_models_calls_not_the_persons_turns() {
        let mut t = TokenTotal::default();
        let person = ReplyIo {
            got: 441,
            ..ReplyIo::default()
        };
        t.add(&person);
        assert_eq!(t.cost(Some((3.0, 15.0))), None, "nobody was sent a prompt");
        t.add(&ReplyIo {
            sent: Some(2841),
            got: 77,
            provider: true,
            ..ReplyIo::default()
        });
        let usd = (2841.0 * 3.0 + 77.0 * 15.0) / 1e6;
        assert_eq!(
            t.cost(Some((3.0, 15.0))).as_deref(),
            Some(format!("agent cost ${usd:.4} (in $3.00 / out $15.00 per 1M tokens)").as_str())
        );
        assert_eq!(t.got_text(), "518", "the got total still counts every turn");
        assert_eq!(t.cost(None), None, "no price, no cost");
        // An estimated prompt makes the cost an estimate.
        t.add(&ReplyIo {
            sent: Some(100),
            got: 5,
            sent_estimated: true,
            ..ReplyIo::default()
        });
        assert!(
            t.cost(Some((1.0, 1.0)))
                .unwrap()
                .starts_with("agent cost ~$")
        );
    }

    fn plan(name: &str, state: PlanState) -> PlanLine {
        PlanLine {
            name: name.into(),
            owner: Owner::Person,
            state,
            budget_r: 0.5,
            pnl_r: 0.0,
            ttl: None,
            expires: None,
            note: String::new(),
            note_ts: None,
            risk: None,
            text: String::new(),
        }
    }

    fn holds(plan: &str) -> crate::view::snapshot::PositionRow {
        crate::view::snapshot::PositionRow {
            plan: plan.into(),
            instrument: "SPY shares".into(),
            qty: 10,
            avg_px: 500.0,
            mark: 500.0,
            model: false,
            pnl_usd: 0.0,
            real_usd: 0.0,
            open_usd: 0.0,
        }
    }

    #[test]
    fn a_long_agent_name_is_cut_with_a_mark_in_the_by_column() {
        use crate::session::owner::Owner;
        assert_eq!(super::owner_label(&Owner::Agent("house".into())), "house");
        let cmd = super::owner_label(&Owner::Agent("cmd:/tmp/authors/slow.sh".into()));
        assert_eq!(cmd.chars().count(), super::OWNER_W, "{cmd}");
        assert!(cmd.starts_with("cmd:") && cmd.ends_with('…'), "{cmd}");
    }

    #[test]
    fn blotter_prices_keep_what_was_paid_to_four_decimals() {
        assert_eq!(super::price_text(482.625), "482.625");
        assert_eq!(super::price_text(482.62), "482.62");
        assert_eq!(super::price_text(482.6), "482.60");
        assert_eq!(super::price_text(0.0125), "0.0125");
        assert_eq!(super::price_text(5.0), "5.00");
        assert_eq!(super::price_text(-3.1), "-3.10");
        assert_eq!(super::price_text(1.23456), "1.2346");
    }

    #[test]
    fn the_plans_range_counts_every_plan_whose_name_shows() {
        // Nine body rows hold four plans whole and the fifth's name: five names show, so
        // five plans need no range; six read 1–5 (it read 1–4 with the fifth's name in view).
        assert_eq!(super::plan_rows(9, 0, 5, 2), (0, None));
        assert_eq!(super::plan_rows(9, 0, 6, 2), (0, Some((1, 5))));
        // Eight rows: four whole plans, no half one.
        assert_eq!(super::plan_rows(8, 0, 5, 2), (0, Some((1, 4))));
        // The last plan selected: the rows scroll by whole plans to keep it whole.
        assert_eq!(super::plan_rows(9, 4, 5, 2), (2, Some((2, 5))));
        assert_eq!(super::plan_rows(9, 5, 6, 2), (4, Some((3, 6))));
        // No plan, or no room: nothing breaks.
        assert_eq!(super::plan_rows(9, 0, 0, 2), (0, None));
        assert_eq!(super::plan_rows(0, 2, 3, 2), (0, None));
        assert_eq!(super::plan_rows(1, 2, 3, 2), (4, Some((3, 3))));
        // One row a plan (the wide table): the rows scroll a plan at a time.
        assert_eq!(super::plan_rows(5, 0, 5, 1), (0, None));
        assert_eq!(super::plan_rows(5, 0, 9, 1), (0, Some((1, 5))));
        assert_eq!(super::plan_rows(5, 8, 9, 1), (4, Some((5, 9))));
        assert_eq!(super::plan_rows(5, 6, 9, 1), (2, Some((3, 7))));
    }

    #[test]
    fn the_plans_title_counts_what_works_and_gives_way_to_the_rows() {
        use PlanState::*;
        let book: Vec<PlanLine> = [
            ("a", Armed),
            ("r", Resting),
            ("f1", Filled),
            ("f2", Filled),
            ("d", Done),
            ("h", Halted),
        ]
        .into_iter()
        .map(|(n, s)| plan(n, s))
        .collect();
        // The filled plans are counted in their rows' word; the halted one, whose position
        // is still on (its `↳` line says `holds`), holds; the done one, flat, does not.
        let on = [holds("f1"), holds("f2"), holds("h")];
        // A book with positions on and nothing armed does not read "0 armed".
        assert_eq!(
            plans_title(&book[2..], &on, 60, 0),
            "Plans — 4 · 2 filled · 1 holding",
            "nothing armed, two filled, one holding"
        );
        assert_eq!(
            plans_title(&book, &on, 70, 0),
            "Plans — 6 · 2 filled · 1 holding · 1 resting · 1 armed"
        );
        assert_eq!(
            plans_title(&book, &[], 60, 0),
            "Plans — 6 · 2 filled · 1 resting · 1 armed"
        );
        // Narrow, or with the rows' range beside it: the counts go, last first.
        let rows = super::cols(" · 1–4 of 6 ↕");
        assert_eq!(
            plans_title(&book, &on, 52, rows),
            "Plans — 6 · 2 filled · 1 holding"
        );
        assert_eq!(plans_title(&book, &on, 47, rows), "Plans — 6 · 2 filled");
        assert_eq!(plans_title(&book, &on, 20, rows), "Plans — 6");
        assert_eq!(plans_title(&[], &[], 60, 0), "Plans — 0");
    }

    #[test]
    fn a_price_reads_as_the_bus_writes_it() {
        use crate::market::types::Px;
        for raw in [19_000, 125, 50_021_000, -30_000, 0, 123_456_789, 15] {
            let px = Px(raw);
            assert_eq!(super::px_text(px.to_f64()), px.to_string(), "{raw}");
        }
    }

    #[test]
    fn a_pnl_figure_is_coloured_by_the_cents_it_shows() {
        // A loss under half a cent reads `+$0.00`: muted, not red (it was red).
        for (x, shown, role) in [
            (-0.004, "+$0.00", Role::UiMuted),
            (0.004, "+$0.00", Role::UiMuted),
            (-0.006, "-$0.01", Role::MarketDown),
            (0.005, "+$0.01", Role::MarketUp),
            (-287.12, "-$287.12", Role::MarketDown),
            (0.0, "+$0.00", Role::UiMuted),
        ] {
            assert_eq!(usd(x), shown, "{x}");
            assert_eq!(pnl_role(x), role, "{x}");
        }
    }

    #[test]
    fn an_r_figure_has_the_sign_of_the_loss_or_the_gain() {
        // A plan down $0.60 at 1R = $1000 is -0.0006R: it reads -0.00R beside `-$0.60` (it
        // read +0.00R, a gain to the eye).
        for (x, shown) in [
            (-0.0006, "-0.00"),
            (-0.004_9, "-0.00"),
            (0.0004, "+0.00"),
            (-0.005_1, "-0.01"),
            (0.27, "+0.27"),
            (-1.234, "-1.23"),
            (0.0, "+0.00"),
        ] {
            assert_eq!(hundredths(x), shown, "{x}");
            assert_eq!(r_of(x), format!("{shown}R"), "{x}");
        }
    }
}
