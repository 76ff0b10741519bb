//! The flag vocabulary every verb shares, written once.
//!
//! - `--json`: every verb whose output is data prints it as JSON with `--json` (flatten
//!   [`Json`]). `--format` only where a verb has several formats of one thing that are not
//!   text-or-JSON (`grammar --format gbnf|lark`); `check --format json` stays as an alias
//!   of `check --json`.
//! - `--r-usd`: dollars per 1R, the same default everywhere ([`DEFAULT_R_USD`], the desk's
//!   own constant), flatten [`RUsd`].
//! - `--fill`: the fill model of a replay, flatten [`Engine`] (with `--r-usd`).
//! - Exit codes (README "The verbs"): [`EXIT_OK`], [`EXIT_USAGE`], [`EXIT_REFUSED`]; every
//!   `--help` ends with [`EXIT_CODES`].

/// Success.
pub(crate) const EXIT_OK: i32 = 0;
/// A usage error (a bad flag or argument, the wrong kind of file) or an I/O error.
pub(crate) const EXIT_USAGE: i32 = 1;
/// A refused document or turn (and, for `fmt --check`, a file that is not canonical).
pub(crate) const EXIT_REFUSED: i32 = 2;

/// The exit code of a coded error line: [`EXIT_REFUSED`] for a refused recording
/// (`code=BUS`, `code=BUS-DIVERGED`, `code=REPLAY`: a saved Bus that is cut, edited, not an
/// event stream or not the session it claims to record), in every verb that reads one
/// (`agent --author`, `grade --agent`, `errors report`); else [`EXIT_USAGE`]. Before
/// 2026-12-06 a cut or edited recording exited 1 or 2 by where it was found.
pub(crate) fn exit_of(line: &str) -> i32 {
    let code = line
        .strip_prefix("error code=")
        .and_then(|rest| rest.split_once(' '))
        .map(|(code, _)| code);
    match code {
        Some(c) if crate::session::replay::REFUSED_RECORDING.contains(&c) => EXIT_REFUSED,
        _ => EXIT_USAGE,
    }
}

/// The footer of every verb's `--help`. Clap tools commonly exit 2 on a usage error; this
/// project keeps 2 for a refused document, as the README states, so usage errors exit 1.
pub(crate) const EXIT_CODES: &str = "Exit status: 0 ok; 1 a usage error (a bad flag or argument, the wrong kind of file: a tape, a Bus, a script of replies, a grade shard, a document or an empty file where another kind is read), an I/O error, or (agent, experiment) an author whose every reply was a provider error (a dead server, a failing command); 2 a refused document, turn or recording (a saved Bus cut, edited or not the session it records; for fmt --check, a file that is not canonical).";

/// Dollars per 1R when `--r-usd` is not given: the desk's default, so `run`, `agent`,
/// `grade` and `desk` agree.
pub(crate) const DEFAULT_R_USD: i64 = crate::session::DEFAULT_R_USD;

/// The fill model when `--fill` is not given.
pub(crate) const DEFAULT_FILL: &str = "strict-cross-v1";

/// The `--json` help of each verb (by its path of subcommand names): the shape of what it
/// prints. `tests/verbs.rs` runs every verb that offers `--json` and parses the output; the
/// test below checks every entry here names a verb with the flag.
pub(crate) const JSON_VERBS: &[(&[&str], &str)] = &[
    (
        &["parse"],
        "Print the model as one canonical JSON line (keys sorted); without it, the same model indented",
    ),
    (
        &["check"],
        "Print one JSON array, an entry per file: `file`, `ok`, `statements`, `errors`",
    ),
    (
        &["rules"],
        "Print `{\"rules\": [{\"name\", \"summary\"}], \"reserved_words\": [...]}`",
    ),
    (
        &["frame"],
        "Print `{\"frame\", \"tokens_cl100k\", \"budget\", \"dropped\"}`",
    ),
    (
        &["run"],
        "Print the canonical JSON report (one line, keys sorted; docs/runtime.md)",
    ),
    (
        &["agent"],
        "Print the canonical JSON report of `run`, with `author` and the `outcomes` counts",
    ),
    (
        &["grade"],
        "Print the canonical JSON report (one line; docs/grade.md, Report)",
    ),
    (
        &["grade", "merge"],
        "Print the canonical JSON report (one line; docs/grade.md, Report)",
    ),
    (
        &["turn"],
        "Print one JSON object: the routed turn (`outcome` its name), `class`, `menu`, `tokens`",
    ),
    (
        &["tokens"],
        "Print a JSON array, one object per file: `file`, `outcome`, `encoding`, `reply`, `kestrel`, `envelope`, `saving`, `saving_pct`, `document_raw`, `document_escaped`",
    ),
    (
        &["errors", "report"],
        "Print the canonical JSON report (docs/turns.md)",
    ),
    (
        &["tape", "info"],
        "Print one JSON object: `name`, `v`, `tz`, `events` (per kind), `symbols` (`trades`, `quotes`), `sessions` (`session`, `date`, `open`, `close`, `events`, `first`, `last`, `gap_count`, `gaps`), `gap_min_ms`, `options` (`prices`: none, modeled or quoted; `chains`, `quotes`, `contracts`)",
    ),
    (
        &["paths"],
        "Print `{\"config\", \"sessions\"}` (a path, or null without a home directory)",
    ),
];

/// Set the `--json` help of the verb at `path` (left as it is when the path or the flag is
/// not there; the test below checks every entry of [`JSON_VERBS`] is).
pub(crate) fn json_help(c: clap::Command, path: &[&str], help: &'static str) -> clap::Command {
    match path.split_first() {
        None if c.get_arguments().any(|a| a.get_id() == "json") => {
            c.mut_arg("json", |a| a.help(help))
        }
        None => c,
        Some((head, rest)) if c.find_subcommand(head).is_some() => {
            c.mut_subcommand(head, |s| json_help(s, rest, help))
        }
        Some(_) => c,
    }
}

/// `--json`, for every verb whose output is data (its help is set per verb from
/// [`JSON_VERBS`]).
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct Json {
    /// Print the output as JSON (one object or array; the verb's docs give its shape).
    #[arg(long)]
    pub json: bool,
}

/// `--r-usd`, dollars per 1R.
#[derive(Debug, Clone, clap::Args)]
pub struct RUsd {
    /// Dollars per 1R: a positive amount with at most four decimals, as a price is kept
    /// (e.g. 1000, 250.50 or 250.505; the desk takes whole dollars).
    // A negative amount is read as the value it is and refused by the positive-amount
    // check, not taken for an unknown flag.
    #[arg(long = "r-usd", value_name = "USD", default_value_t = DEFAULT_R_USD.to_string(), allow_negative_numbers = true)]
    pub r_usd: String,
}

impl Default for RUsd {
    fn default() -> RUsd {
        RUsd {
            r_usd: DEFAULT_R_USD.to_string(),
        }
    }
}

/// `--fill` and `--r-usd`: how a headless replay's engine fills and sizes (run, agent).
#[derive(Debug, Clone, clap::Args)]
pub struct Engine {
    /// The fill model.
    #[arg(long, default_value = DEFAULT_FILL)]
    pub fill: String,
    #[command(flatten)]
    pub r: RUsd,
}

impl Default for Engine {
    fn default() -> Engine {
        Engine {
            fill: DEFAULT_FILL.into(),
            r: RUsd::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_json_verb_has_the_flag_with_its_own_help() {
        let top = crate::cli::command();
        for (path, help) in JSON_VERBS {
            let mut c = &top;
            for p in *path {
                c = c
                    .find_subcommand(p)
                    .unwrap_or_else(|| panic!("{path:?}: no verb {p}"));
            }
            let arg = c
                .get_arguments()
                .find(|a| a.get_id() == "json")
                .unwrap_or_else(|| panic!("{path:?} has no --json"));
            assert_eq!(
                arg.get_help().map(ToString::to_string).as_deref(),
                Some(*help)
            );
        }
    }
}
