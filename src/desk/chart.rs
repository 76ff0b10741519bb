//! The trading chart: 1- or 5-minute candles of the signal or exec symbol (from the
//! session's snapshot; the desk keeps no bar state), a labelled price axis with ticks, a
//! time axis, labelled VWAP / HOD / LOD lines, buy / sell marks at the fill price with their
//! plan, fires marked, volume when the tape has sizes, and a cursor readout when focused.
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

fn decimals(step: f64) -> usize {
    if step >= 1.0 {
        0
    } else if step >= 0.1 {
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

/// Write `s` from (x, y) into blank cells only, stopping at the first cell in use.
fn put_blank(buf: &mut Buffer, x: u16, y: u16, s: &str, st: Style, area: Rect) {
    for (x, ch) in (x..area.right()).zip(s.chars()) {
        if buf[(x, y)].symbol() != " " {
            return;
        }
        let c = &mut buf[(x, y)];
        c.set_char(ch);
        c.set_style(st);
    }
}

/// The readout of a candle: time and OHLC (and volume).
pub fn readout(b: &Candle, with_volume: bool) -> String {
    let mut s = format!(
        "{}  O {:.2}  H {:.2}  L {:.2}  C {:.2}",
        hhmm(b.start),
        b.open,
        b.high,
        b.low,
        b.close
    );
    if with_volume {
        s.push_str(&format!("  V {}", volume_label(b.volume)));
    }
    s
}

/// Is a fill's instrument the charted symbol itself (`SPY`, `SPY shares`)?
fn on_symbol(leg: &str, sym: &str) -> bool {
    leg == sym || leg.strip_suffix(" shares") == Some(sym)
}

/// What a mark says next to it.
fn mark_label(m: &ChartMark) -> String {
    match m.kind {
        MarkKind::Fire => format!("{} fired", m.plan),
        MarkKind::Buy => format!("{} buy {}@{:.2}", m.plan, m.qty, m.px),
        MarkKind::Sell => format!("{} sell {}@{:.2}", m.plan, m.qty, m.px),
    }
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
        put(buf, area.x, area.y, &readout(&b, false), base, area);
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
    let step = nice_step((hi - lo) / (f64::from(plot.height) / 3.0).max(1.0)).max(0.01);
    let dp = decimals(step);
    let mut p = (lo / step).ceil() * step;
    while p <= hi {
        let y = row_of(p);
        put(buf, axis_x, y, "┤", muted, area);
        put(buf, axis_x + 1, y, &format!("{p:.dp$}"), muted, axis_area);
        p += step;
    }

    // Levels: a dashed line across the plot and a label on the axis (an arrow when the level
    // is off the window).
    for (l, v) in &levels {
        let col_st = base.fg(t.level(*l));
        let (y, arrow) = if *v > hi {
            (plot.top(), "↑")
        } else if *v < lo {
            (plot.bottom() - 1, "↓")
        } else {
            (row_of(*v), "")
        };
        if arrow.is_empty() {
            for x in plot.left()..plot.right() {
                put(buf, x, y, "╌", col_st, area);
            }
        }
        put(
            buf,
            axis_x + 1,
            y,
            &format!("{} {v:.2}{arrow}", l.label()),
            col_st.add_modifier(Modifier::BOLD),
            axis_area,
        );
    }

    // Candles: wick from high to low, body from open to close.
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
            if zoom >= 3 && y >= bt && y <= bb {
                put(buf, x + 1, y, ch, s, area);
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
    // instrument), fires at the price when they fired; the newest labelled with its plan.
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
    let mut placed: Vec<(u16, u16, &ChartMark)> = Vec::new();
    for (i, m) in &shown_marks {
        let x = if zoom >= 2 { col(*i) + 1 } else { col(*i) };
        let p = price_of(*i, m);
        let y = match m.kind {
            MarkKind::Fire => row_of(bars[*i].high).saturating_sub(1).max(plot.top()),
            MarkKind::Buy => (row_of(p) + 1).min(plot.bottom() - 1).max(row_of(p)),
            MarkKind::Sell => row_of(p).saturating_sub(1).max(plot.top()),
        };
        let glyph = match m.kind {
            MarkKind::Fire => "◆",
            MarkKind::Buy => "▲",
            MarkKind::Sell => "▼",
        };
        put(
            buf,
            x.min(plot.right() - 1),
            y,
            glyph,
            base.fg(t.mark(m.kind)).add_modifier(Modifier::BOLD),
            area,
        );
        placed.push((x.min(plot.right() - 1), y, m));
    }
    for (x, y, m) in placed.iter().rev() {
        put_blank(
            buf,
            x + 1,
            *y,
            &mark_label(m),
            base.fg(t.mark(m.kind)),
            plot,
        );
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
        let mut text = readout(b, has_vol);
        for (_, m) in shown_marks.iter().filter(|(i, _)| *i == cursor) {
            text.push_str("  · ");
            text.push_str(&mark_label(m));
        }
        put(
            buf,
            area.x,
            area.y,
            &text,
            base.add_modifier(Modifier::BOLD),
            area,
        );
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
            let w = s.chars().count() as u16;
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
    if t.chars().count() + hint.chars().count() + 4 <= usize::from(width) {
        t + hint
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
