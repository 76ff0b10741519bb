//! `kestrel tokens`: count tokens in files; for turns, the reply, its canonical Kestrel, its
//! JSON-envelope projection and the saving; with `--table`, the table of docs/tokens.md.
//! A file that is a tape (or another file the project writes), or that does not route as a
//! valid turn, is still counted, with a warning on stderr.

use super::lang::read_source;
use super::turn::{AuthorArg, EncodingArg, PhaseArg, ProfileArg};
use crate::tokens::{self, Encoding, TurnTokens};
use crate::turn::{self, Reply, TurnContext};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct TokensArgs {
    /// Files to count (`-` reads stdin).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Tokenizer.
    #[arg(long, value_enum, default_value = "cl100k")]
    pub encoding: EncodingArg,
    /// Print a Markdown table (JSON envelope vs pure Kestrel, and the escaping cost of each
    /// plan's document alone), as in docs/tokens.md ("The table").
    #[arg(long, conflicts_with = "json")]
    pub table: bool,
    #[command(flatten)]
    pub out: super::flags::Json,
    /// The wake the files are routed at (for the turn figures).
    #[arg(long, value_enum, default_value = "mid")]
    pub phase: PhaseArg,
    /// The profile the files are routed under.
    #[arg(long, value_enum, default_value = "authoring-v2")]
    pub profile: ProfileArg,
    /// Who wrote the files.
    #[arg(long, value_enum, default_value = "human")]
    pub author: AuthorArg,
}

fn pct(saving: i64, of: usize) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * saving as f64 / of as f64
    }
}

fn stem(p: &std::path::Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| p.display().to_string())
}

pub fn run(a: &TokensArgs) -> i32 {
    let enc: Encoding = a.encoding.into();
    if let Err(e) = tokens::bpe(enc) {
        errln!("error code=IO message={e}");
        return 1;
    }
    let ctx = TurnContext::new(a.phase.into(), a.profile.into(), a.author.into());
    let mut rows: Vec<(String, String, TurnTokens)> = Vec::new();
    let mut status = 0;
    let mut json = Vec::new();
    for f in &a.files {
        let kind_warning = super::turn::not_a_reply(f);
        if let Some(w) = &kind_warning {
            errln!("{w}");
        }
        let src = match read_source(f) {
            Ok(s) => s,
            Err(c) => {
                status = status.max(c);
                continue;
            }
        };
        let t = turn::route(&Reply::text(src.clone()), &ctx);
        if t.outcome.is_refused() && kind_warning.is_none() {
            let first = t
                .outcome
                .errors()
                .first()
                .map(|e| format!(": {}", e.one_line()))
                .unwrap_or_default();
            errln!(
                "warning code=NOT-A-TURN message={} is not a valid document or turn ({}{first}); counted as text",
                f.display(),
                t.outcome.name()
            );
        }
        // A turn's reply past the reply limit is charged a token per byte (it is refused
        // unread); asked to count a file, this verb counts it.
        let m = match tokens::measure(&src, &t, enc).and_then(|mut m| {
            if src.len() > crate::limits::MAX_REPLY_BYTES {
                m.reply = tokens::count(&src, enc)?;
            }
            Ok(m)
        }) {
            Ok(m) => m,
            Err(e) => {
                errln!("error code=IO message={e}");
                return 1;
            }
        };
        if a.out.json {
            let mut v = m.figures_json();
            if let serde_json::Value::Object(o) = &mut v {
                o.insert("file".into(), f.display().to_string().into());
                o.insert("outcome".into(), t.outcome.name().into());
            }
            json.push(v);
        } else if !a.table {
            let mut s = format!("{}: {} tokens ({})", f.display(), m.reply, enc.name());
            if let (Some(k), Some(e), Some(sv)) = (m.kestrel, m.envelope, m.saving) {
                s.push_str(&format!(
                    "; as a {} turn: kestrel {k}, json envelope {e}, saving {sv} ({:.1}%)",
                    t.outcome.name(),
                    pct(sv, e)
                ));
            } else {
                s.push_str(&format!("; as a turn: {}", t.outcome.name()));
            }
            if let (Some(r), Some(e)) = (m.document_raw, m.document_escaped) {
                s.push_str(&format!("; document raw {r}, escaped {e}"));
            }
            outln!("{s}");
        }
        rows.push((stem(f), t.outcome.name().to_string(), m));
    }
    if a.out.json {
        // One canonical line (keys sorted), as every verb's `--json`.
        let v = serde_json::Value::Array(json);
        outln!("{}", crate::bus::canonical_json(&v));
    }
    if a.table {
        outln!("| Turn | JSON envelope | pure Kestrel | saving |");
        outln!("|---|---:|---:|---:|");
        let (mut te, mut tk) = (0usize, 0usize);
        for (name, outcome, m) in &rows {
            match (m.envelope, m.kestrel, m.saving) {
                (Some(e), Some(k), Some(s)) => {
                    te += e;
                    tk += k;
                    outln!(
                        "| {name} ({outcome}) | {e} tok | {k} tok | {s} tok — {:.1}% fewer |",
                        pct(s, e)
                    );
                }
                _ => outln!("| {name} ({outcome}) | — | — | — |"),
            }
        }
        for (name, _, m) in &rows {
            if let (Some(e), Some(r)) = (m.document_escaped, m.document_raw) {
                let s = e as i64 - r as i64;
                outln!(
                    "| *(the escaping cost alone: the `document` string of {name})* | {e} tok (JSON-escaped) | {r} tok (raw) | {s} tok — {:.1}% |",
                    pct(s, e)
                );
            }
        }
        if tk > 0 {
            let s = te as i64 - tk as i64;
            outln!(
                "| **total** | {te} tok | {tk} tok | {s} tok — {:.1}% fewer |",
                pct(s, te)
            );
        }
        outln!();
        outln!(
            "Measured with `{}` tokens (tiktoken-rs); kestrel and envelope counted without a final newline.",
            enc.name()
        );
    }
    status
}
