//! `kestrel frame`: render a View at a tape time, exactly as an agent would receive it.

use crate::lang::{self, Mode};
use crate::market::{Ts, open_tape};
use crate::view::{self, Replay, Snapshot};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct FrameArgs {
    /// The tape (JSON Lines).
    #[arg(long)]
    pub tape: PathBuf,
    /// Tape time `HH:MM` or `HH:MM:SS` (exchange time).
    #[arg(long)]
    pub at: String,
    /// A document holding the VIEW to render (default: the built-in default view).
    #[arg(long)]
    pub view: Option<PathBuf>,
    /// Which VIEW of the document, when it holds several.
    #[arg(long)]
    pub name: Option<String>,
    /// Wrap lines at this width (0: no wrapping).
    #[arg(long, default_value_t = 0)]
    pub width: usize,
    /// Print the frame and its measurements as JSON.
    #[arg(long)]
    pub json: bool,
}

fn parse_at(s: &str) -> Option<Ts> {
    match s.len() {
        5 => Ts::parse(&format!("{s}:00.000")),
        8 => Ts::parse(&format!("{s}.000")),
        _ => Ts::parse(s),
    }
}

pub fn run(a: &FrameArgs) -> i32 {
    let Some(at) = parse_at(&a.at) else {
        eprintln!(
            "error code=USAGE message=--at {:?} is not a time: write HH:MM or HH:MM:SS",
            a.at
        );
        return 1;
    };
    let view = match &a.view {
        None => view::default_view(),
        Some(p) => {
            let Some(src) = super::lang::read_source(p) else {
                return 1;
            };
            let doc = match lang::check(&src, Mode::Turn) {
                Ok(d) => d,
                Err(errs) => {
                    for e in &errs {
                        eprintln!("{}: {}", p.display(), e.one_line());
                    }
                    return 2;
                }
            };
            match view::pick_view(doc, a.name.as_deref()) {
                Ok(v) => v,
                Err(view::PickError::None) => {
                    eprintln!(
                        "error code=USAGE message={} holds no VIEW{}",
                        p.display(),
                        a.name
                            .as_ref()
                            .map(|n| format!(" named {n}"))
                            .unwrap_or_default()
                    );
                    return 1;
                }
                Err(view::PickError::Several(names)) => {
                    eprintln!(
                        "error code=USAGE message={} holds several views ({}): choose one with --name",
                        p.display(),
                        names.join(", ")
                    );
                    return 1;
                }
            }
        }
    };
    let reader = match open_tape(&a.tape) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{}: {e}", a.tape.display());
            return 1;
        }
    };
    let mut replay = match Replay::new(reader, &view) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error code=TAPE message={e}");
            return 1;
        }
    };
    if let Err(e) = replay.advance_to(at) {
        eprintln!("{}: {e}", a.tape.display());
        return 1;
    }
    let snap = Snapshot::default();
    let r = replay.frame(&view, &snap, None, a.width, &view::cl100k);
    if a.json {
        let v = serde_json::json!({
            "frame": r.text,
            "tokens_cl100k": r.tokens,
            "budget": r.budget,
            "dropped": r.dropped,
        });
        outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        out!("{}", r.text);
        let b = r.budget.map(|b| format!(" of {b}")).unwrap_or_default();
        eprintln!("({} cl100k tokens{b})", r.tokens);
    }
    0
}
