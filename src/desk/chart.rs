//! The trading chart: 1- or 5-minute candles of the signal or exec symbol (from the
//! session's snapshot; the desk keeps no bar state), a labelled price axis with ticks, a
//! time axis, labelled VWAP / HOD / LOD lines, buy / sell marks at the fill price and fires
//! marked, each labelled with its plan in free cells only ([`place_labels`]), volume when the
//! tape has sizes, and a cursor readout (naming the marks there) when focused.
//!
//! Drawn straight into the buffer, every cell with the theme's background, so a light
//! theme reads on a dark terminal. The window follows the newest candle until the cursor
//! moves; it then pans with the cursor (End follows again).

use super::theme::Theme;
use crate::session::candles::{self, Candle, ChartMark, MarkKind};
use crate::session::owner::{ChartData, ChartSeries};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use std::cell::Cell;

/// A level line on the chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Session VWAP.
    Vwap,
    /// High of day.
    Hod,
    /// Low of day.
    Lod,
}

impl Level {
    fn label(self) -> &'static str {
        match self {
            Level::Vwap => "VWAP",
            Level::Hod => "HOD",
            Level::Lod => "LOD",
        }
    }
}

/// What the person chose for the chart: interval, symbol, zoom, cursor.
#[derive(Debug, Clone)]
pub struct ChartState {
    /// Candle size in seconds (60 or 300).
    pub secs: u32,
    /// Which series: 0 the signal symbol, 1 the exec symbol (when it is another).
    pub series: usize,
    /// Columns per candle (1..=4).
    pub zoom: u16,
    /// The candle under the cursor (`None`: the newest, and the window follows).
    pub cursor: Option<usize>,
    /// The rightmost candle shown (`None`: the newest).
    pub right: Option<usize>,
    /// Candles that fit at the last draw (the pan step).
    pub fits: Cell<usize>,
}

impl Default for ChartState {
    fn default() -> Self {
        ChartState {
            secs: 60,
            series: 0,
            zoom: 2,
            cursor: None,
            right: None,
            fits: Cell::new(40),
        }
    }
}

/// A move of the chart's cursor or window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    /// One candle left.
    Left,
    /// One candle right.
    Right,
    /// A window left.
    PageLeft,
    /// A window right.
    PageRight,
    /// The oldest candle.
    First,
    /// The newest candle; the window follows again.
    Follow,
}

impl ChartState {
    /// The series charted of `c` (clamped to what the snapshot has).
    pub fn series_of<'a>(&self, c: &'a ChartData) -> Option<&'a ChartSeries> {
        c.series
            .get(self.series.min(c.series.len().saturating_sub(1)))
    }

    /// The candles charted now.
    pub fn candles(&self, c: &ChartData) -> Vec<Candle> {
        self.series_of(c)
            .map(|s| candles::aggregate(&s.candles.bars, self.secs))
            .unwrap_or_default()
    }

    /// Toggle 1- / 5-minute candles (the cursor stays on the same time).
    pub fn toggle_interval(&mut self, c: &ChartData) {
        let at = self
            .cursor
            .and_then(|i| self.candles(c).get(i).map(|b| b.start));
        self.secs = if self.secs == 60 { 300 } else { 60 };
        self.right = None;
        self.cursor = at.map(|s| {
            let cs = self.candles(c);
            cs.partition_point(|b| b.start <= s).saturating_sub(1)
        });
    }

    /// The next symbol (signal, exec).
    pub fn next_series(&mut self, c: &ChartData) {
        self.series = (self.series + 1) % c.series.len().max(1);
        self.cursor = None;
        self.right = None;
    }

    /// Zoom in (wider candles) or out.
    pub fn zoom(&mut self, zoom_in: bool) {
        self.zoom = if zoom_in {
            (self.zoom + 1).min(4)
        } else {
            self.zoom.saturating_sub(1).max(1)
        };
    }

    /// Move the cursor; the window pans to keep it in view.
    pub fn step(&mut self, m: Move, n: usize) {
        if n == 0 {
            return;
        }
        let last = n - 1;
        let fits = self.fits.get().max(1);
        let cur = self.cursor.unwrap_or(last).min(last);
        let next = match m {
            Move::Left => cur.saturating_sub(1),
            Move::Right => (cur + 1).min(last),
            Move::PageLeft => cur.saturating_sub(fits),
            Move::PageRight => (cur + fits).min(last),
            Move::First => 0,
            Move::Follow => {
                self.cursor = None;
                self.right = None;
                return;
            }
        };
        let right = self.right.unwrap_or(last).min(last);
        let left = (right + 1).saturating_sub(fits);
        let right = if next > right {
            next
        } else if next < left {
            (next + fits - 1).min(last)
        } else {
            right
        };
        self.cursor = Some(next);
        self.right = if right >= last && next == last {
            None
        } else {
            Some(right)
        };
        if next == last && self.right.is_none() {
            self.cursor = None;
        }
    }
}

fn hhmm(secs: u32) -> String {
    format!("{:02}:{:02}", secs / 3600, (secs / 60) % 60)
}

/// A tick step near `raw`: 1, 2, 2.5 or 5 times a power of ten.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * p >= raw {
            return m * p;
        }
    }
    10.0 * p
}

/// Is `x` a whole number (to float noise)?
fn whole(x: f64) -> bool {
    (x - x.round()).abs() < 1e-6
}

/// The decimals that write every multiple of `step` exactly, to the cent: a quarter-dollar
/// step is labelled `519.25`, a 2.5 step `5182.5`. (One decimal for every step under a
/// dollar wrote 519.25 as `519.2` and 518.75 as `518.8`, a nickel off.)
fn decimals(step: f64) -> usize {
    if whole(step) {
        0
    } else if whole(step * 10.0) {
        1
    } else {
        2
    }
}

fn volume_label(v: u64) -> String {
    if v >= 1_000_000 {
        format!("{:.1}M", v as f64 / 1e6)
    } else if v >= 10_000 {
        format!("{}k", v / 1000)
    } else if v >= 1000 {
        format!("{:.1}k", v as f64 / 1e3)
    } else {
        v.to_string()
    }
}

fn put(buf: &mut Buffer, x: u16, y: u16, s: &str, st: Style, area: Rect) {
    for (x, ch) in (x..area.right()).zip(s.chars()) {
        if y >= area.bottom() || x < area.x || y < area.y {
            return;
        }
        let c = &mut buf[(x, y)];
        c.set_char(ch);
        c.set_style(st);
    }
}

/// Where each level is labelled: `(level, price, row, arrow)`. A level in the price range is
/// at its own row, no arrow. One above the window is at the plot's top row with `↑`, one
/// below at its bottom row with `↓`; two or three on one side take a row each from that edge
/// inwards, highest first, so none is drawn over another (an off-window LOD under VWAP's
/// label was lost).
fn level_rows(
    levels: &[(Level, f64)],
    lo: f64,
    hi: f64,
    plot: Rect,
    row_of: impl Fn(f64) -> u16,
) -> Vec<(Level, f64, u16, Option<char>)> {
    let mut above: Vec<(Level, f64)> = levels.iter().copied().filter(|(_, v)| *v > hi).collect();
    let mut below: Vec<(Level, f64)> = levels.iter().copied().filter(|(_, v)| *v < lo).collect();
    above.sort_by(|a, b| b.1.total_cmp(&a.1));
    below.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut out: Vec<(Level, f64, u16, Option<char>)> = levels
        .iter()
        .filter(|(_, v)| *v >= lo && *v <= hi)
        .map(|(l, v)| (*l, *v, row_of(*v), None))
        .collect();
    for (k, (l, v)) in above.iter().enumerate() {
        let y = (plot.top() + k as u16).min(plot.bottom() - 1);
        out.push((*l, *v, y, Some('↑')));
    }
    let n = below.len() as u16;
    for (k, (l, v)) in below.iter().enumerate() {
        let y = (plot.bottom() - n + k as u16).max(plot.top());
        out.push((*l, *v, y, Some('↓')));
    }
    out
}

/// An off-window level's label, the arrow first so a narrow axis never cuts it (`VWAP
/// 5179.81↓` in the 12 columns lost its arrow and read as a level in the window): `↓VWAP
/// 5179.81`, with fewer decimals where that is too wide for `room` columns (`↓VWAP 5179.8`).
fn off_window_label(l: Level, v: f64, arrow: char, room: usize) -> String {
    let at = |dp: usize| format!("{arrow}{} {v:.dp$}", l.label());
    (0..=2)
        .rev()
        .map(at)
        .find(|s| s.chars().count() <= room)
        .unwrap_or_else(|| at(0))
}

/// The readout of a candle in at most `width` cells: time and OHLC (and volume), each field
/// whole. Where they do not all fit, whole fields give way, least telling first: the
/// volume, the open, the high, the low; the time and the close stay (`10:30  C 5184.97`),
/// never a field cut in two (`… L 5184.97  C` with no close price).
pub fn readout(b: &Candle, with_volume: bool, width: usize) -> String {
    // Fields in screen order with a rank: the highest gives way first.
    let mut fields = vec![
        (0, hhmm(b.start)),
        (3, format!("O {:.2}", b.open)),
        (2, format!("H {:.2}", b.high)),
        (1, format!("L {:.2}", b.low)),
        (0, format!("C {:.2}", b.close)),
    ];
    if with_volume {
        fields.push((4, format!("V {}", volume_label(b.volume))));
    }
    let join = |f: &[(u8, String)]| {
        f.iter()
            .map(|(_, s)| s.as_str())
            .collect::<Vec<_>>()
            .join("  ")
    };
    while super::fit::width(&join(&fields)) > width {
        match fields.iter().enumerate().max_by_key(|(_, (rank, _))| *rank) {
            Some((i, (rank, _))) if *rank > 0 => {
                fields.remove(i);
            }
            _ => break,
        }
    }
    join(&fields)
}

/// Is a fill's instrument the charted symbol itself (`SPY`, `SPY shares`)?
fn on_symbol(leg: &str, sym: &str) -> bool {
    leg == sym || leg.strip_suffix(" shares") == Some(sym)
}

/// A fill's instrument as a chart label names it when it is not the charted symbol: an
/// option as a trader writes it on a chart (`SPY 2025-04-09 518.00 C` reads `SPY 518C`,
/// `518.50` reads `518.5`), another symbol's shares by the symbol (`SPY shares` reads `SPY`).
/// The date is dropped: the chart is of one session, and the Blotter names the expiry.
fn short_leg(leg: &str) -> String {
    if let Some(sym) = leg.strip_suffix(" shares") {
        return sym.to_string();
    }
    match super::log::option_parts(leg) {
        Some((sym, _expiry, strike, right)) => format!("{sym} {strike}{right}"),
        None => leg.to_string(),
    }
}

/// What a mark says next to it on a chart of `sym`: a fill of another instrument (an option
/// on the charted index, say) names it, since its price is not the chart's
/// (`breakout buy 1 SPY 518C@0.44`); a fire of a clause other than the entry names the
/// clause as the Plans row does (`my-dip TP#1 fired`, against `my-dip fired` for its WHEN).
fn mark_label(m: &ChartMark, sym: &str) -> String {
    let side = match m.kind {
        MarkKind::Fire => return fire_label(&m.plan, &[(fire_clause(m).to_string(), 1)]),
        MarkKind::Buy => "buy",
        MarkKind::Sell => "sell",
    };
    if m.leg.is_empty() || on_symbol(&m.leg, sym) {
        format!("{} {side} {}@{:.2}", m.plan, m.qty, m.px)
    } else {
        format!(
            "{} {side} {} {}@{:.2}",
            m.plan,
            m.qty,
            short_leg(&m.leg),
            m.px
        )
    }
}

/// A fire's clause (`WHEN` when the mark names none).
fn fire_clause(m: &ChartMark) -> &str {
    if m.clause.is_empty() {
        "WHEN"
    } else {
        &m.clause
    }
}

/// One plan's fires on one candle as one label: its clauses in the order they fired, each
/// counted (`vwap-flush fired`, `p fired ×2`, `my-dip TP#1 fired`, `vwap-flush WHEN,
/// RELOAD#1 fired`), so no fire of the plan is left out when labels are short of room.
fn fire_label(plan: &str, clauses: &[(String, usize)]) -> String {
    let times = |k: usize| {
        if k > 1 {
            format!(" ×{k}")
        } else {
            String::new()
        }
    };
    match clauses {
        [(c, k)] if c == "WHEN" => format!("{plan} fired{}", times(*k)),
        [(c, k)] => format!("{plan} {c} fired{}", times(*k)),
        _ => {
            let each: Vec<String> = clauses
                .iter()
                .map(|(c, k)| format!("{c}{}", times(*k)))
                .collect();
            format!("{plan} {} fired", each.join(", "))
        }
    }
}

/// One plan's fires on one candle in a short form that keeps what fired: the clause kinds
/// without their numbers, in order (`headline-puts INVALIDATE`, `my-dip TP ×2`,
/// `vwap-flush WHEN, RELOAD`, `x STOP`), never `fired` alone, which reads as an entry.
fn short_fire_label(plan: &str, clauses: &[(String, usize)], count: usize) -> String {
    let mut kinds: Vec<&str> = Vec::with_capacity(clauses.len());
    for (c, _) in clauses {
        let kind = c.split('#').next().unwrap_or(c);
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    match kinds.as_slice() {
        [kind] if count > 1 => format!("{plan} {kind} ×{count}"),
        _ => format!("{plan} {}", kinds.join(", ")),
    }
}

/// A fill's label in a short form, for where the whole one has no room: the side's letter,
/// the quantity, the instrument when it is not the charted symbol, and the price, counted
/// (`S 48@518.02`, `B 2 SPY 518C@0.44`, `S 48@518.02 ×2`); the plan is in the cursor's
/// readout and the Log.
fn short_fill_label(m: &ChartMark, sym: &str, count: usize) -> String {
    let side = if m.kind == MarkKind::Buy { 'B' } else { 'S' };
    let leg = if m.leg.is_empty() || on_symbol(&m.leg, sym) {
        String::new()
    } else {
        format!(" {}", short_leg(&m.leg))
    };
    let times = if count > 1 {
        format!(" ×{count}")
    } else {
        String::new()
    };
    format!("{side} {}{leg}@{:.2}{times}", m.qty, m.px)
}

/// A marker on the chart: its candle, kind and label. Marks on one candle that say the same
/// are one marker, their label counted (a plan that fired twice in a minute: `… fired ×2`).
#[derive(Debug, Clone, PartialEq)]
struct Shown {
    candle: usize,
    kind: MarkKind,
    label: String,
    /// A shorter label to place where the whole one has no room: a fill's (`S 48@518.02`,
    /// [`short_fill_label`]), a fire's of a clause other than the entry, or one plan's fires
    /// of several (`vwap-flush WHEN, RELOAD`, [`short_fire_label`]); the cursor's readout
    /// still names each mark whole.
    short: Option<String>,
    /// The newest of them, an index into the marks grouped (its price places the marker).
    newest: usize,
}

/// `marks` (candle index, mark), in time order, as one [`Shown`] per candle and label,
/// ordered by their newest mark; the label counts them (`×N`) when there are more than one.
fn group_marks(marks: &[(usize, &ChartMark)], sym: &str) -> Vec<Shown> {
    // Per candle: fills by label, fires by plan (with their clauses in order, counted).
    type Group = (usize, usize, Vec<(String, usize)>);
    let mut at: std::collections::HashMap<(usize, bool, String), Group> =
        std::collections::HashMap::with_capacity(marks.len());
    for (n, (i, m)) in marks.iter().enumerate() {
        let fire = m.kind == MarkKind::Fire;
        let key = if fire {
            m.plan.clone()
        } else {
            mark_label(m, sym)
        };
        let e = at.entry((*i, fire, key)).or_insert((n, 0, Vec::new()));
        e.0 = n;
        e.1 += 1;
        if fire {
            let c = fire_clause(m);
            match e.2.iter_mut().find(|p| p.0 == c) {
                Some(p) => p.1 += 1,
                None => e.2.push((c.to_string(), 1)),
            }
        }
    }
    let mut out: Vec<Shown> = at
        .into_iter()
        .map(|((candle, fire, key), (newest, count, clauses))| Shown {
            candle,
            kind: marks[newest].1.kind,
            short: if fire {
                clauses
                    .iter()
                    .any(|c| c.0 != "WHEN")
                    .then(|| short_fire_label(&key, &clauses, count))
            } else {
                Some(short_fill_label(marks[newest].1, sym, count))
            },
            label: if fire {
                fire_label(&key, &clauses)
            } else if count > 1 {
                format!("{key} ×{count}")
            } else {
                key
            },
            newest,
        })
        .collect();
    out.sort_by_key(|s| s.newest);
    out
}

/// The glyph of a mark.
fn mark_glyph(k: MarkKind) -> &'static str {
    match k {
        MarkKind::Fire => "◆",
        MarkKind::Buy => "▲",
        MarkKind::Sell => "▼",
    }
}

/// What holds a cell of the plot, for placing labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// A candle's body or wick.
    Candle,
    /// A mark's glyph.
    Marker,
    /// A label.
    Label,
    /// A level's line (`╌`): a label never lies on its row.
    Level,
}

/// The plot's cells that hold something (candle bodies and wicks, markers, labels), counted
/// from the plot's top-left cell. A cell off the grid counts as a candle's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Occupied {
    width: u16,
    height: u16,
    cells: Vec<Option<Taken>>,
}

impl Occupied {
    /// A grid of `width` x `height` free cells.
    pub fn new(width: u16, height: u16) -> Occupied {
        Occupied {
            width,
            height,
            cells: vec![None; usize::from(width) * usize::from(height)],
        }
    }

    /// Columns of the grid.
    pub fn width(&self) -> u16 {
        self.width
    }

    /// Rows of the grid.
    pub fn height(&self) -> u16 {
        self.height
    }

    /// Put `what` at (x, y); a cell off the grid is ignored.
    pub fn take(&mut self, x: u16, y: u16, what: Taken) {
        if x < self.width && y < self.height {
            self.cells[usize::from(y) * usize::from(self.width) + usize::from(x)] = Some(what);
        }
    }

    /// Does row `y` carry a level's line?
    pub fn is_line(&self, y: u16) -> bool {
        (0..self.width).any(|x| self.at(x, y) == Some(Taken::Level))
    }

    /// What holds (x, y) (`Candle` off the grid).
    pub fn at(&self, x: u16, y: u16) -> Option<Taken> {
        if x >= self.width || y >= self.height {
            return Some(Taken::Candle);
        }
        self.cells[usize::from(y) * usize::from(self.width) + usize::from(x)]
    }
}

/// A mark's label to place, in plot cells: the marker's column, the rows its candle (with the
/// marker) spans, the label's width, and the side tried first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LabelAsk {
    /// The marker's column.
    pub x: u16,
    /// The top row of the marker's candle and the marker.
    pub top: u16,
    /// The bottom row of the marker's candle and the marker.
    pub bottom: u16,
    /// The label's width in cells (its whole text).
    pub width: u16,
    /// Above the candle first (a sell, a fire); else below first (a buy).
    pub above_first: bool,
}

/// How many rows from its candle a label may sit: the row next to the high (or low), or the
/// one past it (a level's row between is passed over, not counted).
pub const LABEL_REACH: u16 = 2;

/// Where each label goes (its first cell), in the order asked, `None` when it has no room.
///
/// The rule: asks are placed in order (the caller puts the newest mark first, so the most
/// recent labels win when space is short). A label sits on one row above its candle's top or
/// below its bottom (the nearest rows first, the preferred side first at each distance, up to
/// [`LABEL_REACH`] rows away, a row with a level's line never one of them and not counted),
/// and spans the marker's column: it starts at the marker and slides left, at most until it
/// ends there. It goes only where every one of its cells is free (no candle, no marker, no
/// other label, no level line: before 2026-12-07 a label lay over the HOD line, `vwap-flush
/// sell 48 SPY@518.02╌█╌█`), wholly inside the grid with its last column
/// left blank (never across or against the price axis), and with a blank cell between it and
/// anything else on its row: another label, another mark's marker, a candle's body or wick (so
/// a label never reads as the next marker's, or as cut by a candle; before 2026-12-06 a label
/// could end against a candle, `breakout TP█`). A label that fits nowhere is left out whole:
/// it is never cut.
pub fn place_labels(occupied: &Occupied, asks: &[LabelAsk]) -> Vec<Option<(u16, u16)>> {
    let (w, h) = (occupied.width(), occupied.height());
    let mut grid = occupied.clone();
    let mut out = Vec::with_capacity(asks.len());
    for a in asks {
        if a.width == 0 || a.width >= w || a.x >= w {
            out.push(None);
            continue;
        }
        // Each side's rows out from the candle, a level's row passed over (not counted).
        let side = |up: bool| -> Vec<u16> {
            let mut out = Vec::with_capacity(usize::from(LABEL_REACH));
            let mut y = if up { a.top } else { a.bottom };
            while out.len() < usize::from(LABEL_REACH) {
                y = match (up, y.checked_sub(1)) {
                    (true, Some(up)) => up,
                    (false, _) if y.saturating_add(1) < h => y + 1,
                    _ => break,
                };
                if !grid.is_line(y) {
                    out.push(y);
                }
            }
            out
        };
        let (above, below) = (side(true), side(false));
        let (first, second) = if a.above_first {
            (above, below)
        } else {
            (below, above)
        };
        let mut rows: Vec<u16> = Vec::with_capacity(usize::from(LABEL_REACH) * 2);
        for d in 0..usize::from(LABEL_REACH) {
            rows.extend(first.get(d));
            rows.extend(second.get(d));
        }
        let fits = |g: &Occupied, x: u16, y: u16| {
            let end = x + a.width;
            // Nothing at all beside it: a label against a candle's body read as cut, or as
            // that candle's (`breakout TP█`).
            let apart = |cx: u16| g.at(cx, y).is_none();
            // Two blank cells from another mark's marker: with one, `vwap-flush sell 48@518.08
            // ▼` read as vwap-flush's sell when the ▼ was breakout's.
            let marker = |cx: u16| g.at(cx, y) == Some(Taken::Marker);
            end < w
                && (x..end).all(|cx| g.at(cx, y).is_none())
                && (x == 0 || apart(x - 1))
                && apart(end)
                && !(x >= 2 && marker(x - 2))
                && !marker(end + 1)
        };
        let lowest = (a.x + 1).saturating_sub(a.width);
        let spot = rows.iter().find_map(|&y| {
            (lowest..=a.x)
                .rev()
                .find(|&x| fits(&grid, x, y))
                .map(|x| (x, y))
        });
        if let Some((x, y)) = spot {
            for cx in x..x + a.width {
                grid.take(cx, y, Taken::Label);
            }
        }
        out.push(spot);
    }
    out
}

/// The focused readout line as (text, the mark it names) pieces that fit in `width` cells:
/// the candle's time and OHLC (`ohlc`), then each mark at the cursor whole. When they do not
/// all fit, the OHLC gives way: the time, as many marks whole as fit, and `+N more` for the
/// rest (every mark is in the Log); when not one mark fits, the OHLC alone.
fn readout_pieces(
    time: &str,
    ohlc: &str,
    marks: &[(MarkKind, String)],
    width: usize,
) -> Vec<(String, Option<MarkKind>)> {
    let piece = |k: MarkKind, s: &str| format!("  {} {s}", mark_glyph(k));
    let wide = super::fit::width;
    let all = wide(ohlc)
        + marks
            .iter()
            .map(|(k, s)| wide(&piece(*k, s)))
            .sum::<usize>();
    let mut out = Vec::new();
    if all <= width || marks.is_empty() {
        out.push((ohlc.to_string(), None));
        out.extend(marks.iter().map(|(k, s)| (piece(*k, s), Some(*k))));
        return out;
    }
    let mut used = wide(time);
    out.push((time.to_string(), None));
    for (n, (k, s)) in marks.iter().enumerate() {
        let p = piece(*k, s);
        let rest = marks.len() - n - 1;
        let more = if rest > 0 {
            wide(&format!("  +{rest} more"))
        } else {
            0
        };
        if used + wide(&p) + more > width {
            if n == 0 {
                // Not one mark fits whole: the OHLC, as when there are none.
                return vec![(ohlc.to_string(), None)];
            }
            out.push((format!("  +{} more", marks.len() - n), None));
            break;
        }
        used += wide(&p);
        out.push((p, Some(*k)));
    }
    out
}

/// Draw the chart into `area` (the pane's inner area).
pub fn draw(
    buf: &mut Buffer,
    area: Rect,
    c: &ChartData,
    st: &ChartState,
    t: &Theme,
    focused: bool,
) {
    let base = Style::default().bg(t.bg()).fg(t.fg());
    let muted = base.fg(t.muted());
    buf.set_style(area, base);
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            buf[(x, y)].set_char(' ');
        }
    }
    let Some(series) = st.series_of(c) else {
        put(buf, area.x, area.y, "no symbol to chart", muted, area);
        return;
    };
    let bars = candles::aggregate(&series.candles.bars, st.secs);
    if bars.is_empty() {
        put(
            buf,
            area.x,
            area.y,
            &format!("{}: waiting for the first print", series.candles.sym),
            muted,
            area,
        );
        return;
    }
    if area.width < 24 || area.height < 6 {
        let b = bars[bars.len() - 1];
        put(
            buf,
            area.x,
            area.y,
            &readout(&b, false, usize::from(area.width)),
            base,
            area,
        );
        return;
    }
    let has_vol = series.candles.has_volume();
    let axis_w: u16 = 13;
    let vol_h: u16 = match (has_vol, area.height) {
        (false, _) => 0,
        (true, h) if h >= 16 => 3,
        (true, h) if h >= 10 => 2,
        _ => 0,
    };
    let tick_row = area.height >= 12;
    let bottom_rows = 1 + u16::from(tick_row);
    let plot = Rect {
        x: area.x,
        y: area.y + 1,
        width: area.width - axis_w,
        height: area.height - 1 - bottom_rows - vol_h,
    };
    if plot.height < 2 {
        return;
    }
    let zoom = st.zoom.clamp(1, 4);
    let fits = usize::from(plot.width / zoom).max(1);
    st.fits.set(fits);
    let last = bars.len() - 1;
    let right = st.right.unwrap_or(last).min(last);
    let left = (right + 1).saturating_sub(fits);
    let shown = &bars[left..=right];
    let cursor = st.cursor.unwrap_or(last).clamp(left, right);
    let col = |i: usize| plot.x + (i - left) as u16 * zoom + zoom.saturating_sub(1) / 2;

    // The price range: the shown candles, and the levels near them.
    let mut lo = shown.iter().map(|b| b.low).fold(f64::INFINITY, f64::min);
    let mut hi = shown
        .iter()
        .map(|b| b.high)
        .fold(f64::NEG_INFINITY, f64::max);
    let levels: Vec<(Level, f64)> = [
        (Level::Hod, series.hod),
        (Level::Lod, series.lod),
        (Level::Vwap, series.vwap),
    ]
    .into_iter()
    .filter_map(|(l, v)| Some((l, v?)))
    .collect();
    let span = (hi - lo).max(0.01);
    for (_, v) in &levels {
        if *v >= lo - span && *v <= hi + span {
            lo = lo.min(*v);
            hi = hi.max(*v);
        }
    }
    let pad = ((hi - lo) * 0.04).max(0.01);
    let (lo, hi) = (lo - pad, hi + pad);
    let rows = f64::from(plot.height - 1);
    let row_of = |p: f64| -> u16 {
        let r = ((hi - p) / (hi - lo) * rows).round().clamp(0.0, rows);
        plot.y + r as u16
    };
    let axis_x = plot.right();
    let axis_area = Rect {
        x: axis_x,
        y: area.y,
        width: axis_w,
        height: area.height,
    };

    // The price axis: a rule with ticks at round prices.
    for y in plot.top()..plot.bottom() {
        put(buf, axis_x, y, "│", muted, area);
    }
    // A price is in cents: a step finer than a cent's multiples (0.025) is a nickel.
    let step = match nice_step((hi - lo) / (f64::from(plot.height) / 3.0).max(1.0)) {
        s if s < 0.1 && !whole(s * 100.0) => 0.05,
        s => s.max(0.01),
    };
    let dp = decimals(step);
    let mut p = (lo / step).ceil() * step;
    while p <= hi {
        let y = row_of(p);
        put(buf, axis_x, y, "┤", muted, area);
        put(buf, axis_x + 1, y, &format!("{p:.dp$}"), muted, axis_area);
        p += step;
    }

    // Levels: a dashed line across the plot and a label on the axis; one off the window is
    // an arrow-led label at the plot's edge, each on its own row (level_rows).
    let room = usize::from(axis_w - 1);
    let mut line_rows: Vec<u16> = Vec::with_capacity(levels.len());
    for (l, v, y, arrow) in level_rows(&levels, lo, hi, plot, row_of) {
        let col_st = base.fg(t.level(l));
        let text = match arrow {
            None => {
                for x in plot.left()..plot.right() {
                    put(buf, x, y, "╌", col_st, area);
                }
                line_rows.push(y);
                format!("{} {v:.2}", l.label())
            }
            Some(arrow) => off_window_label(l, v, arrow, room),
        };
        put(
            buf,
            axis_x + 1,
            y,
            &text,
            col_st.add_modifier(Modifier::BOLD),
            axis_area,
        );
    }

    // Candles: wick from high to low, body from open to close. Their cells, the level lines
    // and the markers are what a mark's label must leave alone.
    let mut occupied = Occupied::new(plot.width, plot.height);
    let mut occupy = |x: u16, y: u16, what: Taken| {
        if x >= plot.x && y >= plot.y {
            occupied.take(x - plot.x, y - plot.y, what);
        }
    };
    for &y in &line_rows {
        for x in plot.left()..plot.right() {
            occupy(x, y, Taken::Level);
        }
    }
    for (k, b) in shown.iter().enumerate() {
        let i = left + k;
        let x = col(i);
        let colour = if b.close >= b.open {
            t.candle_up()
        } else {
            t.candle_down()
        };
        let s = base.fg(colour);
        let (yh, yl) = (row_of(b.high), row_of(b.low));
        let (yo, yc) = (row_of(b.open), row_of(b.close));
        let (bt, bb) = (yo.min(yc), yo.max(yc));
        for y in yh..=yl {
            let ch = if y >= bt && y <= bb {
                if bt == bb && yh != yl { "━" } else { "█" }
            } else {
                "│"
            };
            put(buf, x, y, ch, s, area);
            occupy(x, y, Taken::Candle);
            if zoom >= 3 && y >= bt && y <= bb {
                put(buf, x + 1, y, ch, s, area);
                occupy(x + 1, y, Taken::Candle);
            }
        }
    }

    // Volume under the plot, in eighths of a row.
    if vol_h > 0 {
        let vmax = shown.iter().map(|b| b.volume).max().unwrap_or(0).max(1);
        let top = plot.bottom();
        const EIGHTHS: [&str; 9] = [" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];
        for (k, b) in shown.iter().enumerate() {
            let x = col(left + k);
            let colour = if b.close >= b.open {
                t.candle_up()
            } else {
                t.candle_down()
            };
            let mut e = (b.volume as f64 / vmax as f64 * f64::from(vol_h) * 8.0).round() as u16;
            for r in (0..vol_h).rev() {
                let n = e.min(8);
                e -= n;
                put(
                    buf,
                    x,
                    top + r,
                    EIGHTHS[usize::from(n)],
                    base.fg(colour).add_modifier(Modifier::DIM),
                    area,
                );
            }
        }
        put(buf, axis_x, top, "┤", muted, area);
        put(
            buf,
            axis_x + 1,
            top,
            &format!("vol {}", volume_label(vmax)),
            muted,
            axis_area,
        );
        for r in 1..vol_h {
            put(buf, axis_x, top + r, "│", muted, area);
        }
    }

    // The time axis: a rule with ticks and HH:MM labels at round times.
    let axis_y = area.bottom() - bottom_rows;
    let label_y = area.bottom() - 1;
    if tick_row {
        for x in plot.left()..plot.right() {
            put(buf, x, axis_y, "─", muted, area);
        }
        put(buf, axis_x, axis_y, "┘", muted, area);
    }
    let per = st.secs;
    let every = [300u32, 600, 900, 1800, 3600, 7200]
        .into_iter()
        .find(|e| u32::from(zoom) * (e / per.max(1)) >= 7)
        .unwrap_or(7200);
    let mut next_free = plot.x;
    for (k, b) in shown.iter().enumerate() {
        if b.start % every != 0 {
            continue;
        }
        let x = col(left + k);
        if tick_row {
            put(buf, x, axis_y, "┴", muted, area);
        }
        if x >= next_free && x + 5 <= plot.right() {
            put(buf, x, label_y, &hhmm(b.start), muted, area);
            next_free = x + 6;
        }
    }

    // Marks: buys and sells at the fill price (the symbol's own price then, for another
    // instrument), fires at the price when they fired. Labels go in free cells only, the
    // newest first (`place_labels`); the cursor's readout and the Log name every mark.
    let span_secs = st.secs;
    let shown_marks: Vec<(usize, &ChartMark)> = c
        .marks
        .iter()
        .filter_map(|m| {
            let i = bars.partition_point(|b| b.start <= m.secs).checked_sub(1)?;
            (i >= left && i <= right && m.secs < bars[i].start + span_secs).then_some((i, m))
        })
        .collect();
    let price_of = |i: usize, m: &ChartMark| -> f64 {
        match m.kind {
            MarkKind::Buy | MarkKind::Sell if on_symbol(&m.leg, &series.candles.sym) => m.px,
            _ => bars[i].close,
        }
    };
    let groups = group_marks(&shown_marks, &series.candles.sym);
    let mut asks: Vec<(LabelAsk, &Shown)> = Vec::with_capacity(groups.len());
    for g in &groups {
        let (i, m) = (g.candle, shown_marks[g.newest].1);
        let x = if zoom >= 2 { col(i) + 1 } else { col(i) };
        let x = x.min(plot.right() - 1);
        let p = price_of(i, m);
        let y = match m.kind {
            MarkKind::Fire => row_of(bars[i].high).saturating_sub(1).max(plot.top()),
            MarkKind::Buy => (row_of(p) + 1).min(plot.bottom() - 1).max(row_of(p)),
            MarkKind::Sell => row_of(p).saturating_sub(1).max(plot.top()),
        };
        put(
            buf,
            x,
            y,
            mark_glyph(m.kind),
            base.fg(t.mark(m.kind)).add_modifier(Modifier::BOLD),
            area,
        );
        occupy(x, y, Taken::Marker);
        let (yh, yl) = (row_of(bars[i].high), row_of(bars[i].low));
        asks.push((
            LabelAsk {
                x: x - plot.x,
                top: yh.min(y) - plot.y,
                bottom: yl.max(y) - plot.y,
                width: super::fit::width(&g.label).try_into().unwrap_or(u16::MAX),
                above_first: m.kind != MarkKind::Buy,
            },
            g,
        ));
    }
    // The newest first: marks are in time order, so the last shown wins space.
    asks.reverse();
    let mut ask_cells: Vec<LabelAsk> = asks.iter().map(|(a, _)| *a).collect();
    let mut at = place_labels(&occupied, &ask_cells);
    // A label left out that has a shorter form is asked again in it (one more pass, the
    // same rule): the chart says `vwap-flush WHEN, RELOAD` or `S 48@518.02` where the whole
    // label has no room.
    let mut texts: Vec<&str> = asks.iter().map(|(_, g)| g.label.as_str()).collect();
    let mut again = false;
    for (k, (_, g)) in asks.iter().enumerate() {
        if let (None, Some(s)) = (at[k], &g.short) {
            ask_cells[k].width = super::fit::width(s).try_into().unwrap_or(u16::MAX);
            texts[k] = s;
            again = true;
        }
    }
    if again {
        at = place_labels(&occupied, &ask_cells);
    }
    for (((_, g), at), text) in asks.iter().zip(at).zip(texts) {
        if let Some((x, y)) = at {
            put(
                buf,
                plot.x + x,
                plot.y + y,
                text,
                base.fg(t.mark(g.kind)),
                plot,
            );
        }
    }

    // The cursor and the readout line.
    if focused {
        let x0 = plot.x + (cursor - left) as u16 * zoom;
        for y in plot.top()..plot.bottom() {
            for dx in 0..zoom {
                if x0 + dx < plot.right() {
                    buf[(x0 + dx, y)].set_bg(t.selection());
                }
            }
        }
        let b = &bars[cursor];
        let at: Vec<(MarkKind, String)> = groups
            .iter()
            .filter(|g| g.candle == cursor)
            .map(|g| (g.kind, g.label.clone()))
            .collect();
        let bold = base.add_modifier(Modifier::BOLD);
        let mut x = area.x;
        for (text, kind) in readout_pieces(
            &hhmm(b.start),
            &readout(b, has_vol, usize::from(area.width)),
            &at,
            usize::from(area.width),
        ) {
            let style = kind.map_or(bold, |k| bold.fg(t.mark(k)));
            put(buf, x, area.y, &text, style, area);
            x = x.saturating_add(super::fit::width(&text).try_into().unwrap_or(u16::MAX));
        }
    } else {
        let mut x = area.x;
        let legend: [(&str, Style); 7] = [
            ("▲ buy ", base.fg(t.mark(MarkKind::Buy))),
            ("▼ sell ", base.fg(t.mark(MarkKind::Sell))),
            ("◆ fire ", base.fg(t.mark(MarkKind::Fire))),
            ("╌ VWAP ", base.fg(t.level(Level::Vwap))),
            ("HOD ", base.fg(t.level(Level::Hod))),
            ("LOD ", base.fg(t.level(Level::Lod))),
            ("· focus: ←→ cursor", muted),
        ];
        for (s, style) in legend {
            let w = super::fit::width(s) as u16;
            if x + w > area.right() {
                break;
            }
            put(buf, x, area.y, s, style, area);
            x += w;
        }
    }
}

/// The chart pane's title: symbol, interval, last price, and whether the window follows.
pub fn title(c: &ChartData, st: &ChartState, width: u16) -> String {
    let Some(s) = st.series_of(c) else {
        return "Chart".into();
    };
    let last = s
        .candles
        .bars
        .last()
        .map(|b| format!("{:.2}", b.close))
        .unwrap_or_else(|| "-".into());
    let follow = if st.cursor.is_none() && st.right.is_none() {
        ""
    } else {
        " · panned (end follows)"
    };
    let t = format!(
        "Chart {} {} {}{}",
        s.candles.sym,
        if st.secs == 60 { "1m" } else { "5m" },
        last,
        follow
    );
    let hint = " [m 1m/5m · o symbol · z/Z zoom]";
    if super::fit::width(&t) + super::fit::width(hint) + 4 <= usize::from(width) {
        t + hint
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_axis_label_writes_its_tick_exactly() {
        // The step's decimals: every multiple of it written to the cent, none a nickel off.
        for (step, dp) in [
            (1.0, 0),
            (5.0, 0),
            (2.5, 1),
            (0.5, 1),
            (0.2, 1),
            (0.25, 2),
            (0.05, 2),
        ] {
            assert_eq!(decimals(step), dp, "step {step}");
            for k in 0..8 {
                let v = 518.0 + f64::from(k) * step;
                let text = format!("{v:.dp$}");
                assert!(
                    (text.parse::<f64>().unwrap() - v).abs() < 1e-9,
                    "{v} as {text}"
                );
            }
        }
    }

    #[test]
    fn nice_steps_are_round() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(0.021), 0.025);
        assert_eq!(nice_step(12.0), 20.0);
    }

    #[test]
    fn the_cursor_pans_the_window_and_end_follows_again() {
        let mut s = ChartState::default();
        s.fits.set(10);
        s.step(Move::Left, 100);
        assert_eq!((s.cursor, s.right), (Some(98), Some(99)));
        for _ in 0..10 {
            s.step(Move::Left, 100);
        }
        assert_eq!(s.cursor, Some(88));
        assert_eq!(
            s.right,
            Some(97),
            "the window panned to keep the cursor in view"
        );
        s.step(Move::Follow, 100);
        assert_eq!((s.cursor, s.right), (None, None));
    }

    fn free_grid(w: u16, h: u16, candles: &[(u16, u16, u16)]) -> Occupied {
        let mut o = Occupied::new(w, h);
        for &(x, top, bottom) in candles {
            for y in top..=bottom {
                o.take(x, y, Taken::Candle);
            }
        }
        o
    }

    fn ask(x: u16, top: u16, bottom: u16, width: u16, above_first: bool) -> LabelAsk {
        LabelAsk {
            x,
            top,
            bottom,
            width,
            above_first,
        }
    }

    /// The rule's promises, for any grid and asks: each placed label is whole, on free
    /// cells only, inside the plot with its last column blank, a cell apart from other
    /// labels and markers on its row, spanning its marker's column, near its candle.
    fn check_layout(o: &Occupied, asks: &[LabelAsk], at: &[Option<(u16, u16)>]) {
        assert_eq!(at.len(), asks.len());
        let mut labels = Occupied::new(o.width(), o.height());
        for (a, p) in asks.iter().zip(at) {
            let Some((x, y)) = *p else { continue };
            let end = x + a.width;
            assert!(end < o.width(), "{a:?} at {p:?} reaches the axis");
            assert!(x <= a.x && a.x < end, "{a:?} at {p:?} misses its marker");
            // Rows out from the candle, a level's row not counted.
            let away = |r: std::ops::Range<u16>| r.filter(|&r| !o.is_line(r)).count();
            assert!(
                y < a.top && away(y..a.top) <= usize::from(LABEL_REACH)
                    || y > a.bottom && away(a.bottom + 1..y + 1) <= usize::from(LABEL_REACH),
                "{a:?} at {p:?} is not next to its candle"
            );
            assert!(!o.is_line(y), "{a:?} at {p:?} lies on a level's line");
            for cx in x..end {
                assert_eq!(
                    o.at(cx, y),
                    None,
                    "{a:?} at {p:?} covers a candle or marker"
                );
                assert_eq!(labels.at(cx, y), None, "{a:?} at {p:?} covers a label");
            }
            for cx in [x.checked_sub(1), Some(end)].into_iter().flatten() {
                assert_ne!(
                    labels.at(cx, y),
                    Some(Taken::Label),
                    "{a:?} touches a label"
                );
                assert_eq!(o.at(cx, y), None, "{a:?} touches a marker or a candle");
            }
            for cx in [x.checked_sub(2), Some(end + 1)].into_iter().flatten() {
                assert_ne!(
                    o.at(cx, y),
                    Some(Taken::Marker),
                    "{a:?} ends one blank cell from a marker not its own"
                );
            }
            for cx in x..end {
                labels.take(cx, y, Taken::Label);
            }
        }
    }

    #[test]
    fn a_label_goes_above_a_sell_and_below_a_buy_in_free_cells() {
        // One candle at column 10, rows 4..=8, a sell marker above it at row 3.
        let mut o = free_grid(40, 14, &[(10, 4, 8)]);
        o.take(11, 3, Taken::Marker);
        let asks = [ask(11, 3, 8, 6, true), ask(11, 4, 8, 6, false)];
        let at = place_labels(&o, &asks);
        assert_eq!(at, vec![Some((11, 2)), Some((11, 9))]);
        check_layout(&o, &asks, &at);
    }

    /// A level's row is never a label's: the label goes past it (the row beyond is as near),
    /// else to the other side, else in its short form, else nowhere.
    #[test]
    fn a_label_passes_over_a_level_line() {
        let line = |o: &mut Occupied, y: u16| {
            for x in 0..o.width() {
                o.take(x, y, Taken::Level);
            }
        };
        // A sell over a candle at column 10 (rows 4..=8), the HOD line on row 3 above it.
        let mut o = free_grid(40, 14, &[(10, 4, 8)]);
        line(&mut o, 3);
        let asks = [ask(10, 4, 8, 6, true)];
        let at = place_labels(&o, &asks);
        assert_eq!(at, vec![Some((10, 2))], "the row past the line");
        check_layout(&o, &asks, &at);
        // Lines on rows 1..=3 too: the row under the candle.
        for y in 0..3 {
            line(&mut o, y);
        }
        let at = place_labels(&o, &asks);
        assert_eq!(at, vec![Some((10, 9))], "the other side");
        check_layout(&o, &asks, &at);
        // Lines everywhere but the candle's rows: no room at all.
        for y in 9..14 {
            line(&mut o, y);
        }
        assert_eq!(place_labels(&o, &asks), vec![None]);
    }

    #[test]
    fn a_fill_has_a_short_form() {
        let fill = |kind: MarkKind, leg: &str| ChartMark {
            leg: leg.into(),
            px: 518.02,
            ..mark(34_205, kind, "vwap-flush")
        };
        let sell = fill(MarkKind::Sell, "SPY shares");
        let shorts = |marks: &[(usize, &ChartMark)], sym: &str| -> Vec<Option<String>> {
            group_marks(marks, sym)
                .into_iter()
                .map(|s| s.short)
                .collect()
        };
        let s = |v: &str| Some(v.to_string());
        assert_eq!(shorts(&[(0, &sell)], "SPY"), vec![s("S 48@518.02")]);
        assert_eq!(shorts(&[(0, &sell)], "SPX"), vec![s("S 48 SPY@518.02")]);
        assert_eq!(
            shorts(&[(0, &sell), (0, &sell)], "SPY"),
            vec![s("S 48@518.02 ×2")]
        );
        let call = fill(MarkKind::Buy, "SPY 2025-04-09 518.00 C");
        assert_eq!(
            shorts(&[(0, &call)], "SPX"),
            vec![s("B 48 SPY 518C@518.02")]
        );
    }

    #[test]
    fn a_label_slides_left_off_a_taller_neighbour_and_off_the_axis() {
        // The marker's candle at 30 (rows 5..=8); its neighbour at 32 reaches row 2.
        let o = free_grid(36, 12, &[(30, 5, 8), (32, 2, 8)]);
        let asks = [ask(31, 5, 8, 10, true)];
        let at = place_labels(&o, &asks);
        // Above, it would end at its marker's column right against the neighbour's body
        // (column 32, rows 2..=8): it goes below, on the first row free of both.
        assert_eq!(at, vec![Some((25, 9))], "below, apart from the neighbour");
        check_layout(&o, &asks, &at);
        // With the neighbour a column further off, it ends at its marker above, a blank
        // cell from the neighbour.
        let o = free_grid(36, 12, &[(30, 5, 8), (33, 2, 8)]);
        let at = place_labels(&o, &asks);
        assert_eq!(at, vec![Some((22, 4))], "it ends at its marker's column");
        check_layout(&o, &asks, &at);
        // Next to the axis: a label never reaches the plot's last column.
        let o = free_grid(20, 6, &[(18, 2, 3)]);
        let asks = [ask(19, 2, 3, 5, true)];
        let at = place_labels(&o, &asks);
        assert_eq!(at, vec![None], "it would end in the last column");
        let asks = [ask(17, 2, 3, 5, true)];
        let at = place_labels(&o, &asks);
        assert_eq!(
            at,
            vec![Some((14, 1))],
            "it ends just left of the last column"
        );
        check_layout(&o, &asks, &at);
    }

    #[test]
    fn the_first_asked_wins_when_space_is_short_and_the_rest_are_left_out_whole() {
        // A plot two rows high: the only free rows are row 0 above and none below.
        let o = free_grid(30, 3, &[(5, 1, 2), (7, 1, 2)]);
        let asks = [ask(6, 1, 2, 12, true), ask(6, 1, 2, 12, true)];
        let at = place_labels(&o, &asks);
        assert_eq!(at, vec![Some((6, 0)), None]);
        check_layout(&o, &asks, &at);
        // As wide as the plot: dropped, never cut; a cell narrower fits (the last column
        // stays blank).
        let asks = [ask(6, 1, 2, 30, true)];
        assert_eq!(place_labels(&o, &asks), vec![None]);
        let asks = [ask(6, 1, 2, 29, true)];
        assert_eq!(place_labels(&o, &asks), vec![Some((0, 0))]);
    }

    /// The arrow leads and is never what a narrow axis cuts: decimals go first.
    #[test]
    fn an_off_window_label_keeps_its_arrow_in_the_axis() {
        assert_eq!(
            off_window_label(Level::Vwap, 5179.81, '↓', 12),
            "↓VWAP 5179.8"
        );
        assert_eq!(
            off_window_label(Level::Hod, 5193.82, '↑', 12),
            "↑HOD 5193.82"
        );
        assert_eq!(
            off_window_label(Level::Vwap, 517.6, '↓', 12),
            "↓VWAP 517.60"
        );
        assert!(off_window_label(Level::Vwap, 51790.81, '↓', 12).starts_with('↓'));
    }

    /// Two levels off the window on one side take a row each, the higher above.
    #[test]
    fn off_window_levels_on_one_side_take_a_row_each() {
        let plot = Rect::new(0, 1, 40, 10);
        let levels = [
            (Level::Hod, 5300.0),
            (Level::Lod, 5125.4),
            (Level::Vwap, 5179.81),
        ];
        let rows = level_rows(&levels, 5200.0, 5250.0, plot, |_| 5);
        let row = |l: Level| rows.iter().find(|r| r.0 == l).map(|r| (r.2, r.3));
        assert_eq!(row(Level::Hod), Some((1, Some('↑'))));
        assert_eq!(row(Level::Vwap), Some((9, Some('↓'))));
        assert_eq!(row(Level::Lod), Some((10, Some('↓'))));
    }

    #[test]
    fn labels_keep_a_blank_cell_from_other_labels_and_two_from_markers() {
        let mut o = free_grid(40, 6, &[(4, 3, 5), (16, 3, 5)]);
        o.take(17, 2, Taken::Marker);
        // The first label ends at 14, two blank cells before the other mark's marker (17):
        // from 5 it would end at 15, one blank cell from it, and read as that marker's
        // (before 2026-12-06 one blank cell was enough).
        let asks = [ask(5, 3, 5, 11, true), ask(17, 2, 5, 8, true)];
        let at = place_labels(&o, &asks);
        check_layout(&o, &asks, &at);
        assert_eq!(at[0], Some((4, 2)));
        assert_eq!(at[1], Some((17, 1)));
        // A wider label slides further left for the same reason.
        let asks = [ask(5, 3, 5, 12, true)];
        let at = place_labels(&o, &asks);
        assert_eq!(
            at,
            vec![Some((3, 2))],
            "from 4 it would end one blank cell from the marker at 17"
        );
        check_layout(&o, &asks, &at);
    }

    proptest::proptest! {
        #[test]
        fn labels_never_cover_candles_or_labels_nor_cross_the_axis(
            w in 4u16..90,
            h in 2u16..30,
            candles in proptest::collection::vec((0u16..90, 0u16..30, 0u16..8), 0..40),
            asks in proptest::collection::vec((0u16..90, 0u16..30, 0u16..8, 0u16..40, proptest::bool::ANY), 0..30),
        ) {
            let candles: Vec<(u16, u16, u16)> = candles
                .into_iter()
                .map(|(x, y, n)| (x % w, y % h, (y % h + n).min(h - 1)))
                .collect();
            let mut o = free_grid(w, h, &candles);
            let asks: Vec<LabelAsk> = asks
                .into_iter()
                .map(|(x, y, n, width, above)| {
                    let (x, top) = (x % w, y % h);
                    o.take(x, top, Taken::Marker);
                    ask(x, top, (top + n).min(h - 1), width, above)
                })
                .collect();
            let at = place_labels(&o, &asks);
            check_layout(&o, &asks, &at);
        }
    }

    fn bar(start: u32, o: f64, h: f64, l: f64, c: f64) -> Candle {
        Candle {
            start,
            open: o,
            high: h,
            low: l,
            close: c,
            volume: 0,
        }
    }

    fn mark(secs: u32, kind: MarkKind, plan: &str) -> ChartMark {
        ChartMark {
            secs,
            kind,
            plan: plan.into(),
            clause: if kind == MarkKind::Fire { "WHEN" } else { "" }.into(),
            leg: if kind == MarkKind::Fire { "" } else { "SPX" }.into(),
            qty: if kind == MarkKind::Fire { 0 } else { 48 },
            px: 5210.36,
        }
    }

    /// A zig-zag session of 1-minute candles from 09:30 with a fire, a buy and a sell on
    /// many of them, plans with long names.
    fn busy_chart() -> ChartData {
        let mut bars = Vec::new();
        let mut px = 5200.0;
        for k in 0..60u32 {
            let d = if (k / 5) % 2 == 0 { 1.5 } else { -1.3 };
            let (o, c) = (px, px + d);
            bars.push(bar(34_200 + 60 * k, o, o.max(c) + 0.8, o.min(c) - 0.6, c));
            px = c;
        }
        let mut marks = Vec::new();
        for k in (0..60u32).step_by(3) {
            let s = 34_200 + 60 * k + 5;
            marks.push(mark(s, MarkKind::Fire, "vwap-flush"));
            marks.push(mark(s + 1, MarkKind::Buy, "vwap-flush"));
            marks.push(mark(s + 20, MarkKind::Sell, "breakout-continuation"));
        }
        ChartData {
            series: vec![ChartSeries {
                candles: candles::Candles {
                    sym: "SPX".into(),
                    bars,
                },
                hod: None,
                lod: None,
                vwap: None,
            }],
            marks,
        }
    }

    fn rows(buf: &Buffer) -> Vec<String> {
        let a = buf.area;
        (a.top()..a.bottom())
            .map(|y| {
                (a.left()..a.right())
                    .map(|x| buf[(x, y)].symbol())
                    .collect()
            })
            .collect()
    }

    fn render(c: &ChartData, w: u16, h: u16, zoom: u16) -> Vec<String> {
        let area = Rect::new(0, 0, w, h);
        let mut buf = Buffer::empty(area);
        let st = ChartState {
            zoom,
            ..ChartState::default()
        };
        draw(
            &mut buf,
            area,
            c,
            &st,
            &super::super::theme::default_theme(),
            false,
        );
        rows(&buf)
    }

    #[test]
    fn drawn_labels_are_whole_off_the_candles_and_left_of_the_axis() {
        let c = busy_chart();
        let bare = ChartData {
            marks: Vec::new(),
            ..c.clone()
        };
        let texts: Vec<String> = c.marks.iter().map(|m| mark_label(m, "SPX")).collect();
        for (w, h) in [
            (24u16, 6u16),
            (30, 10),
            (52, 12),
            (60, 20),
            (100, 30),
            (160, 40),
        ] {
            for zoom in 1..=4 {
                let with = render(&c, w, h, zoom);
                let without = render(&bare, w, h, zoom);
                let plot_right = usize::from(w - 13);
                let mut whole = 0;
                for (y, (row, plain)) in with.iter().zip(&without).enumerate() {
                    let cells: Vec<char> = row.chars().collect();
                    let plain: Vec<char> = plain.chars().collect();
                    // The candles are all still there (a marker may sit on one).
                    for (x, (a, b)) in cells.iter().zip(&plain).enumerate() {
                        if "█│━".contains(*b) && x < plot_right {
                            assert!(
                                a == b || "▲▼◆".contains(*a),
                                "{w}x{h} zoom {zoom}: ({x}, {y}) {b:?} covered by {a:?}\n{}",
                                with.join("\n")
                            );
                        }
                    }
                    // A plan's name is only ever part of a whole label, left of the axis.
                    let mut from = 0;
                    while let Some(at) = ["vwap-flush", "breakout"]
                        .iter()
                        .filter_map(|p| row[from..].find(p).map(|i| i + from))
                        .min()
                    {
                        let rest = &row[at..];
                        let text = texts
                            .iter()
                            .filter(|t| rest.starts_with(t.as_str()))
                            .max_by_key(|t| t.len())
                            .unwrap_or_else(|| {
                                panic!("{w}x{h} zoom {zoom}: a cut label on row {y}: {row:?}")
                            });
                        let x = row[..at].chars().count();
                        assert!(
                            x + text.chars().count() < plot_right,
                            "{w}x{h} zoom {zoom}: {text:?} reaches the axis"
                        );
                        whole += 1;
                        from = at + text.len();
                    }
                }
                if w >= 100 {
                    assert!(whole > 0, "{w}x{h} zoom {zoom}: some labels fit");
                }
            }
        }
    }

    /// A mark's label never covers a level's line nor a candle (at 100x30 until 2026-12-07
    /// a fill's label lay over the HOD line, against its candles: `vwap-flush sell 48
    /// SPY@518.02╌█╌█╌█╌█╌╌│HOD`): the chart drawn with and without its marks differs only in
    /// cells that were blank, and in markers.
    #[test]
    fn labels_leave_the_level_lines_and_the_candles_alone() {
        let mut c = busy_chart();
        let s = &mut c.series[0];
        let hi = s
            .candles
            .bars
            .iter()
            .map(|b| b.high)
            .fold(f64::MIN, f64::max);
        let lo = s
            .candles
            .bars
            .iter()
            .map(|b| b.low)
            .fold(f64::MAX, f64::min);
        // Lines through the candles' highs and lows, where labels go.
        s.hod = Some(hi);
        s.lod = Some(lo);
        s.vwap = Some(lo + (hi - lo) * 0.55);
        let bare = ChartData {
            marks: Vec::new(),
            ..c.clone()
        };
        let mut label_cells = 0;
        for (w, h) in [(60u16, 20u16), (100, 30), (160, 48), (200, 60)] {
            for zoom in 1..=4 {
                let with = render(&c, w, h, zoom);
                let without = render(&bare, w, h, zoom);
                let plot_right = usize::from(w - 13);
                let mut lines = 0;
                for (y, (row, plain)) in with.iter().zip(&without).enumerate().skip(1) {
                    let plain: Vec<char> = plain.chars().collect();
                    lines += usize::from(plain[..plot_right].contains(&'╌'));
                    for (x, (a, b)) in row.chars().zip(plain).enumerate().take(plot_right) {
                        if a == b || "▲▼◆".contains(a) {
                            continue;
                        }
                        assert_eq!(
                            b,
                            ' ',
                            "{w}x{h} zoom {zoom}: ({x}, {y}) {b:?} covered by {a:?}\n{}",
                            with.join("\n")
                        );
                        label_cells += 1;
                    }
                }
                assert!(lines >= 2, "{w}x{h} zoom {zoom}: the levels are drawn");
            }
        }
        assert!(label_cells > 0, "some labels are drawn");
    }

    #[test]
    fn marks_on_one_candle_with_one_label_are_counted_once() {
        let a = mark(34_205, MarkKind::Fire, "p");
        let b = mark(34_210, MarkKind::Fire, "p");
        let q = mark(34_215, MarkKind::Fire, "q");
        let g = group_marks(&[(0, &a), (0, &q), (0, &b), (1, &a)], "SPX");
        let labels: Vec<(usize, &str)> = g.iter().map(|s| (s.candle, s.label.as_str())).collect();
        assert_eq!(
            labels,
            vec![(0, "q fired"), (0, "p fired ×2"), (1, "p fired")]
        );
    }

    /// A plan's entry reads `fired`; its other clauses say which fired, and one plan's fires
    /// on one candle are one label naming each (not `fired ×2`, and none left out).
    #[test]
    fn a_fire_of_another_clause_names_the_clause() {
        let when = mark(34_205, MarkKind::Fire, "my-dip");
        let tp = ChartMark {
            clause: "TP#1".into(),
            ..mark(34_215, MarkKind::Fire, "my-dip")
        };
        let exit = ChartMark {
            clause: "EXIT#1".into(),
            ..mark(34_225, MarkKind::Fire, "my-dip")
        };
        assert_eq!(mark_label(&when, "SPX"), "my-dip fired");
        assert_eq!(mark_label(&tp, "SPX"), "my-dip TP#1 fired");
        assert_eq!(mark_label(&exit, "SPX"), "my-dip EXIT#1 fired");
        let g = group_marks(
            &[(0, &when), (0, &tp), (1, &tp), (1, &exit), (1, &tp)],
            "SPX",
        );
        let labels: Vec<(usize, &str)> = g.iter().map(|s| (s.candle, s.label.as_str())).collect();
        assert_eq!(
            labels,
            vec![
                (0, "my-dip WHEN, TP#1 fired"),
                (1, "my-dip TP#1 ×2, EXIT#1 fired")
            ]
        );
    }

    /// The short form of a fire keeps the clause kind: an invalidation, a take-profit, an
    /// exit or the engine's stop never reads `fired`, as an entry does.
    #[test]
    fn the_short_form_of_a_fire_keeps_its_clause_kind() {
        let fire = |plan: &str, clause: &str| ChartMark {
            clause: clause.into(),
            ..mark(34_205, MarkKind::Fire, plan)
        };
        let inv = fire("headline-puts", "INVALIDATE#1");
        let tp = fire("x", "TP#1");
        let exit = fire("x", "EXIT#2");
        let stop = fire("y", "STOP");
        let when = fire("z", "");
        let shorts = |marks: &[(usize, &ChartMark)]| -> Vec<(String, Option<String>)> {
            group_marks(marks, "SPX")
                .into_iter()
                .map(|s| (s.label, s.short))
                .collect()
        };
        let s = |v: &str| Some(v.to_string());
        assert_eq!(
            shorts(&[(0, &inv)]),
            vec![(
                "headline-puts INVALIDATE#1 fired".into(),
                s("headline-puts INVALIDATE")
            )]
        );
        assert_eq!(
            shorts(&[(0, &stop)]),
            vec![("y STOP fired".into(), s("y STOP"))]
        );
        assert_eq!(shorts(&[(0, &when)]), vec![("z fired".into(), None)]);
        assert_eq!(
            shorts(&[(0, &tp), (0, &tp)]),
            vec![("x TP#1 fired ×2".into(), s("x TP ×2"))]
        );
        assert_eq!(
            shorts(&[(1, &tp), (1, &exit)]),
            vec![("x TP#1, EXIT#2 fired".into(), s("x TP, EXIT"))]
        );
        let w = fire("x", "WHEN");
        assert_eq!(
            shorts(&[(2, &w), (2, &tp)]),
            vec![("x WHEN, TP#1 fired".into(), s("x WHEN, TP"))]
        );
    }

    #[test]
    fn a_fill_of_another_instrument_names_it_and_the_charted_one_does_not() {
        let fill = |leg: &str, px: f64| ChartMark {
            secs: 37_656,
            kind: MarkKind::Buy,
            plan: "breakout".into(),
            clause: String::new(),
            leg: leg.into(),
            qty: 2,
            px,
        };
        let opt = fill("SPY 2025-04-09 518.00 C", 0.44);
        assert_eq!(mark_label(&opt, "SPX"), "breakout buy 2 SPY 518C@0.44");
        // On the option's own underlying's chart the option is still not the symbol.
        assert_eq!(mark_label(&opt, "SPY"), "breakout buy 2 SPY 518C@0.44");
        let half = fill("SPX 2025-04-09 5182.50 P", 3.10);
        assert_eq!(mark_label(&half, "SPX"), "breakout buy 2 SPX 5182.5P@3.10");
        let shares = fill("SPY shares", 516.52);
        assert_eq!(mark_label(&shares, "SPY"), "breakout buy 2@516.52");
        assert_eq!(mark_label(&shares, "SPX"), "breakout buy 2 SPY@516.52");
        // A key the chart does not know how to shorten is shown as it is.
        let odd = fill("ES future", 5200.25);
        assert_eq!(mark_label(&odd, "SPX"), "breakout buy 2 ES future@5200.25");
    }

    /// At 80x24 the focused chart's readout was cut at the pane's edge mid-field
    /// (`10:30  O 5184.97  H 5184.97  L 5184.97  C`, no close price): whole fields give way
    /// instead, and the time and the close stay.
    #[test]
    fn the_readout_gives_way_a_whole_field_at_a_time_and_keeps_the_close() {
        let mut b = bar(10 * 3600 + 30 * 60, 5184.5, 5185.3, 5183.9, 5184.97);
        b.volume = 1200;
        let full = "10:30  O 5184.50  H 5185.30  L 5183.90  C 5184.97  V 1.2k";
        assert_eq!(readout(&b, true, 80), full);
        assert_eq!(
            readout(&b, true, 55),
            "10:30  O 5184.50  H 5185.30  L 5183.90  C 5184.97"
        );
        assert_eq!(
            readout(&b, true, 40),
            "10:30  H 5185.30  L 5183.90  C 5184.97"
        );
        assert_eq!(readout(&b, false, 30), "10:30  L 5183.90  C 5184.97");
        assert_eq!(readout(&b, false, 20), "10:30  C 5184.97");
        assert_eq!(
            readout(&b, false, 5),
            "10:30  C 5184.97",
            "the least it says"
        );
        for w in 16..70 {
            let r = readout(&b, true, w);
            assert!(r.chars().count() <= w, "{w}: {r}");
            assert!(r.ends_with("C 5184.97") || r.ends_with('k'), "{w}: {r}");
        }
    }

    #[test]
    fn the_readout_names_the_marks_whole_or_counts_them() {
        let ohlc = "10:25  O 5177.27  H 5180.06  L 5175.93  C 5176.94";
        let marks = vec![
            (MarkKind::Buy, "vwap-flush buy 48@5210.36".to_string()),
            (MarkKind::Fire, "breakout fired".to_string()),
        ];
        let text = |w: usize| -> String {
            readout_pieces("10:25", ohlc, &marks, w)
                .into_iter()
                .map(|(s, _)| s)
                .collect()
        };
        assert_eq!(
            text(120),
            format!("{ohlc}  ▲ vwap-flush buy 48@5210.36  ◆ breakout fired")
        );
        assert_eq!(text(45), "10:25  ▲ vwap-flush buy 48@5210.36  +1 more");
        assert_eq!(
            text(60),
            "10:25  ▲ vwap-flush buy 48@5210.36  ◆ breakout fired"
        );
        assert_eq!(text(30), ohlc, "not one mark fits: the OHLC");
        for w in [30, 45, 52, 60, 120] {
            assert!(text(w).chars().count() <= w.max(ohlc.len()));
        }
    }
}
