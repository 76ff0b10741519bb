//! Views: the pane catalog rendered as text for a context window (the Frame), under a token
//! budget enforced by measurement.
//!
//! A [`Replay`] walks a tape keeping the market state and the signal symbol's bars; at any
//! instant [`render_frame`] turns a VIEW into the Frame an agent receives. The tape pane is
//! vertical and relative (basis points against a keyframe anchor), so appending a bar
//! appends one line and an agent watching all day pays only for what is new.

pub mod bars;
pub mod render;
pub mod snapshot;

pub use bars::{BASE_SECS, Bar, Bars};
pub use render::{FrameInput, Rendered, Woke, render_frame, tape_section};
pub use snapshot::Snapshot;

use crate::lang::{self, ast};
use crate::market::{MarketState, Sym, TapeError, TapeEvent, TapeHeader, TapeReader, Ts};
use std::io::BufRead;

/// The View used when none is given: what an agent sees by default.
pub const DEFAULT_VIEW: &str = "VIEW default budget 900
  tape 5m
  levels
  chain 0dte strikes 3
  velocity 1m
  kernel
  plans
  headlines last 3
";

/// Why a document did not give exactly one View.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PickError {
    /// No VIEW (or SHOW VIEW), or none of that name.
    None,
    /// Several: their names, for the caller to ask which.
    Several(Vec<String>),
}

/// The one VIEW or SHOW VIEW of `doc` (the one named `name`, when given).
pub fn pick_view(doc: ast::Document, name: Option<&str>) -> Result<ast::View, PickError> {
    let mut views: Vec<ast::View> = doc
        .statements
        .into_iter()
        .filter_map(|s| match s.kind {
            ast::StatementKind::View(v) | ast::StatementKind::ShowView(v) => Some(v),
            _ => None,
        })
        .filter(|v| name.is_none_or(|n| n == v.name.text))
        .collect();
    match views.len() {
        0 => Err(PickError::None),
        1 => Ok(views.remove(0)),
        _ => Err(PickError::Several(
            views.iter().map(|v| v.name.text.clone()).collect(),
        )),
    }
}

/// The default View as a model.
pub fn default_view() -> ast::View {
    match lang::parse(DEFAULT_VIEW).map(|d| d.statements.into_iter().next().map(|s| s.kind)) {
        Ok(Some(ast::StatementKind::View(v))) => v,
        // DEFAULT_VIEW is a constant checked by tests; an empty view is the safe fallback.
        _ => ast::View {
            name: ast::Name {
                text: "default".into(),
                span: ast::Span::default(),
            },
            budget: None,
            panes: Vec::new(),
        },
    }
}

/// The signal and exec symbols of a tape: exec is the symbol with an option chain; signal is
/// the first other symbol (an index), else exec itself.
pub fn symbols_of(header: &TapeHeader) -> Option<(Sym, Sym)> {
    let st = MarketState::new(header);
    let exec = st.exec_symbol().or_else(|| st.symbols().next())?;
    let signal = st.symbols().find(|s| *s != exec).unwrap_or(exec);
    Some((signal, exec))
}

/// A tape being replayed for views: market state plus the signal symbol's bars.
pub struct Replay<R: BufRead> {
    reader: TapeReader<R>,
    pub header: TapeHeader,
    pub market: MarketState,
    pub bars: Bars,
    pub signal: Sym,
    pub exec: Sym,
    pending: Option<TapeEvent>,
}

impl<R: BufRead> Replay<R> {
    /// Start a replay; the View's series that need percentiles are tracked from the start.
    pub fn new(reader: TapeReader<R>, view: &ast::View) -> Result<Self, String> {
        let header = reader.header().clone();
        let (signal, exec) = symbols_of(&header).ok_or("the tape has no symbols")?;
        let mut market = MarketState::new(&header);
        for p in &view.panes {
            if let ast::Pane::Velocity { window } = &p.pane {
                let secs = window.seconds().min(u64::from(u32::MAX)) as u32;
                market.track(
                    signal.as_str(),
                    crate::market::Series::Velocity(secs.max(1)),
                );
            }
        }
        let open = market.open_time();
        Ok(Replay {
            reader,
            header,
            market,
            bars: Bars::new(signal, open),
            signal,
            exec,
            pending: None,
        })
    }

    /// Apply every event up to and including `at`; the clock then reads `at`. A tape whose
    /// last event is before `at` must be whole ([`TapeReader::check_complete`]): a tape cut short
    /// is refused `ends-early`, as `kestrel run` refuses it, rather than framed at `at`
    /// with the market as it stood where the file was cut.
    pub fn advance_to(&mut self, at: Ts) -> Result<(), TapeError> {
        loop {
            let ev = match self.pending.take() {
                Some(ev) => ev,
                None => match self.reader.next() {
                    Some(ev) => ev?,
                    None => {
                        // Only a time past the last event reads what the file lacks.
                        if self.reader.last_ts().is_none_or(|last| at > last) {
                            self.reader.check_complete()?;
                        }
                        break;
                    }
                },
            };
            // A frame is of one session: on a multi-session tape, the first (a `session`
            // event ends it; its times are the next session's).
            if ev.ts() > at || matches!(ev, TapeEvent::Session(_)) {
                self.pending = Some(ev);
                break;
            }
            if let TapeEvent::Tick(t) = &ev {
                self.bars.apply(t);
            }
            self.market.apply(&ev);
        }
        self.market.advance_to(at);
        Ok(())
    }

    /// Render a View at the current instant.
    pub fn frame(
        &self,
        view: &ast::View,
        snapshot: &Snapshot,
        woke: Option<Woke>,
        width: usize,
        count: &dyn Fn(&str) -> usize,
    ) -> Rendered {
        let input = FrameInput {
            tape: &self.header.name,
            market: &self.market,
            bars: &self.bars,
            signal: self.signal,
            exec: self.exec,
            snapshot,
            woke,
            width,
        };
        render_frame(view, &input, count)
    }
}

/// cl100k token count (the meter the desk budgets with).
pub fn cl100k(text: &str) -> usize {
    crate::tokens::count(text, crate::tokens::Encoding::Cl100k).unwrap_or(usize::MAX)
}
