//! `kestrel frame`: render a View at a tape time, exactly as an agent would receive it.

use crate::lang::{self, Mode};
use crate::market::Ts;
use crate::view::{self, Replay, Snapshot};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct FrameArgs {
    /// The tape (JSON Lines).
    #[arg(long)]
    pub tape: PathBuf,
    /// Tape time `HH:MM`, `HH:MM:SS` or `HH:MM:SS.mmm` (exchange time; `9:45` is `09:45`).
    #[arg(long, allow_negative_numbers = true)]
    pub at: String,
    /// A document holding the VIEW to render (default: the built-in default view).
    #[arg(long)]
    pub view: Option<PathBuf>,
    /// Which VIEW of the --view document, when it holds several (only with --view).
    #[arg(long)]
    pub name: Option<String>,
    /// Wrap lines at this width (0: no wrapping).
    #[arg(long, allow_negative_numbers = true, default_value_t = 0)]
    pub width: usize,
    #[command(flatten)]
    pub out: super::flags::Json,
}

/// The usage error's message for a time that is not one (`flag`: `--at` on the CLI, `at`
/// over MCP): it names every form [`Ts::parse_clock`] takes. Milliseconds are three digits,
/// as on a tape (`11:30:00.5` is refused, not read as `.500` or `.005`).
pub(crate) fn not_a_time(given: &str, flag: &str) -> String {
    format!(
        "{flag} {given:?} is not a time: write HH:MM, HH:MM:SS or HH:MM:SS.mmm (milliseconds as three digits)"
    )
}

/// The usage error's message for a VIEW name given without the document it picks from
/// (`name`, `view`: how the caller names them, `--name`/`--view` on the CLI); it was
/// ignored, and the default view framed.
pub(crate) fn name_without_view(given: &str, name: &str, view: &str) -> String {
    format!(
        "{name} {given:?} picks a VIEW of the {view} document and applies only with {view}: give {view} (a document holding the VIEW), or leave {name} out for the default view"
    )
}

/// The usage error's message for a time outside the session, naming its open and close
/// (`flag`: how the caller names the time, `--at` on the CLI, `at` over MCP); `None` when
/// `at` is inside `[open, close]`.
pub(crate) fn outside_session(
    at: Ts,
    given: &str,
    (open, close): (Ts, Ts),
    flag: &str,
) -> Option<String> {
    let (o, c) = (open.hhmm(), close.hhmm());
    let side = if at < open {
        "before the open"
    } else if at > close {
        "after the close"
    } else {
        return None;
    };
    Some(format!(
        "{flag} {given} is {side}: the session runs {o} to {c} (exchange time); give a time from {o} to {c}"
    ))
}

pub fn run(a: &FrameArgs) -> i32 {
    let Some(at) = Ts::parse_clock(&a.at) else {
        errln!("error code=USAGE message={}", not_a_time(&a.at, "--at"));
        return 1;
    };
    if let (Some(n), None) = (&a.name, &a.view) {
        errln!(
            "error code=USAGE message={}",
            name_without_view(n, "--name", "--view")
        );
        return 1;
    }
    let view = match &a.view {
        None => view::default_view(),
        Some(p) => {
            let src = match super::lang::read_document(p) {
                Ok(s) => s,
                Err(code) => return code,
            };
            let doc = match lang::check(&src, Mode::Turn) {
                Ok(d) => d,
                Err(errs) => {
                    for e in &errs {
                        errln!("{}: {}", p.display(), e.one_line());
                    }
                    return 2;
                }
            };
            match view::pick_view(doc, a.name.as_deref()) {
                Ok(v) => v,
                Err(view::PickError::None) => {
                    errln!(
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
                    errln!(
                        "error code=USAGE message={} holds several views ({}): choose one with --name",
                        p.display(),
                        names.join(", ")
                    );
                    return 1;
                }
            }
        }
    };
    let reader = match super::run::open_tape_or_say(&a.tape) {
        Ok(r) => r,
        Err(e) => {
            errln!("{e}");
            return 1;
        }
    };
    let (open, close) = (reader.header().open, reader.header().close);
    if let Some(e) = outside_session(at, &a.at, (open, close), "--at") {
        errln!("error code=USAGE message={e}");
        return 1;
    }
    let mut replay = match Replay::new(reader, &view) {
        Ok(r) => r,
        Err(e) => {
            errln!("error code=TAPE message={e}");
            return 1;
        }
    };
    if let Err(e) = replay.advance_to(at) {
        errln!("{}: {e}", a.tape.display());
        return 1;
    }
    let snap = Snapshot::default();
    let r = replay.frame(&view, &snap, None, a.width, &view::cl100k);
    if a.out.json {
        let v = serde_json::json!({
            "frame": r.text,
            "tokens_cl100k": r.tokens,
            "budget": r.budget,
            "dropped": r.dropped,
        });
        outln!("{}", crate::bus::canonical_json(&v));
    } else {
        out!("{}", r.text);
        let b = r.budget.map(|b| format!(" of {b}")).unwrap_or_default();
        errln!("({} cl100k tokens{b})", r.tokens);
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_outside_the_session_name_its_open_and_close() {
        let (open, close) = (
            Ts::parse_clock("09:30").unwrap(),
            Ts::parse_clock("16:00").unwrap(),
        );
        let e = outside_session(
            Ts::parse_clock("08:00").unwrap(),
            "08:00",
            (open, close),
            "--at",
        )
        .unwrap();
        assert!(e.starts_with("--at 08:00 is before the open"), "{e}");
        assert!(e.contains("09:30 to 16:00"), "{e}");
        let e = outside_session(
            Ts::parse_clock("16:00:01").unwrap(),
            "16:00:01",
            (open, close),
            "at",
        )
        .unwrap();
        assert!(e.starts_with("at 16:00:01 is after the close"), "{e}");
        for inside in ["09:30", "12:00", "16:00"] {
            assert_eq!(
                outside_session(
                    Ts::parse_clock(inside).unwrap(),
                    inside,
                    (open, close),
                    "--at"
                ),
                None
            );
        }
    }
}
