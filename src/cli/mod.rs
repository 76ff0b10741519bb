//! The `kestrel` command line. Exit codes everywhere ([`flags::EXIT_CODES`], the footer of
//! every `--help`): 0 success, 1 usage or I/O failure, 2 a refused document (or, for
//! `fmt --check`, a file that is not canonical).
//!
//! # Closed pipes
//!
//! `kestrel frame … 2>&1 | head` closes both output pipes early. Rust ignores SIGPIPE, so a
//! write to a closed pipe returns `EPIPE`, and `println!`/`eprintln!` panic on it (exit 101).
//! Every line the verbs print goes through [`outln!`], [`out!`] and [`errln!`] instead, which
//! drop the write error: output to a reader that has gone is lost, as with any Unix tool, and
//! the exit code is the verb's own. SIGPIPE is *not* reset to its default: the desk, `agent`
//! and `mcp` write to child processes (command authors) and sockets, where a peer that exits
//! must be an error the session records, not a signal that kills the whole process.

/// `println!` that ignores a closed stdout (`kestrel … | head` must not panic).
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($t)*);
    }};
}

/// `print!` that ignores a closed stdout.
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout().lock(), $($t)*);
    }};
}

/// `eprintln!` that ignores a closed stderr (`kestrel … 2>&1 | head` must not panic).
macro_rules! errln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($t)*);
    }};
}
pub(crate) use errln;

pub mod agent;
mod card;
pub mod errors;
pub mod experiment;
pub mod flags;
pub mod frame;
pub mod grade;
pub mod grammar;
pub mod import;
mod lang;
mod mcp;
mod out;
mod paths;
pub mod run;
pub(crate) use crate::signals;
pub(crate) mod sniff;
pub mod tape;
pub mod tape_info;
mod tokens;
mod turn;

use clap::{Parser, Subcommand};

/// An I/O error as the verbs word it after `cannot read PATH: `: `no such file` for a
/// missing one (as `kestrel check` says it), the system's reason otherwise, without the
/// `(os error N)` that Rust appends.
pub(crate) fn io_reason(e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::NotFound => "no such file".into(),
        ErrorKind::PermissionDenied => "permission denied".into(),
        ErrorKind::IsADirectory => "is a directory".into(),
        _ => {
            let s = e.to_string();
            match s.rfind(" (os error ") {
                Some(i) if s.ends_with(')') => s[..i].to_string(),
                _ => s,
            }
        }
    }
}

/// `error code=IO message=cannot read PATH: REASON` ([`io_reason`]).
pub(crate) fn cannot_read(path: &std::path::Path, e: &std::io::Error) -> String {
    format!(
        "error code=IO message=cannot read {}: {}",
        path.display(),
        io_reason(e)
    )
}

/// [`cannot_read`] of a bounded read ([`crate::limits::read_file_bounded`]): an I/O error,
/// or `cannot read PATH: it is N bytes, over the limit of L bytes`.
pub(crate) fn cannot_read_bounded(path: &std::path::Path, e: &crate::limits::ReadError) -> String {
    match e {
        crate::limits::ReadError::Io(e) => cannot_read(path, e),
        crate::limits::ReadError::TooLarge(t) => {
            format!("error code=IO message=cannot read {}: {t}", path.display())
        }
    }
}

/// `error code=IO message=cannot write PATH: REASON`: the file asked for (not a temporary
/// one beside it), `no such directory` when its directory is missing, else [`io_reason`].
pub(crate) fn cannot_write(path: &std::path::Path, e: &std::io::Error) -> String {
    let why = match e.kind() {
        std::io::ErrorKind::NotFound => "no such directory".to_string(),
        _ => io_reason(e),
    };
    format!(
        "error code=IO message=cannot write {}: {why}",
        path.display()
    )
}

/// Kestrel desk: a terminal desk where a person and an LLM agent fly one trading book.
#[derive(Debug, Parser)]
#[command(
    name = "kestrel",
    version,
    about,
    long_about = None,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// No subcommand opens the desk.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// With no subcommand, the desk's options: `kestrel --open S` is `kestrel desk --open S`.
    #[command(flatten)]
    pub desk: crate::desk::DeskArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Open the desk (the default): the tape, the chart, the View, plans, and an agent.
    ///
    /// Example: kestrel desk --tape tapes/shock-2025-04-09-s7.jsonl --copilot
    ///
    /// Example: kestrel desk --author http://127.0.0.1:8080/v1 --model qwen2.5 --constrained
    Desk(crate::desk::DeskArgs),
    /// Parse a document and print its typed model as JSON.
    ///
    /// Example: kestrel parse examples/chase.kestrel | jq '.statements[0]'
    Parse(lang::ParseArgs),
    /// Print documents in canonical form to stdout.
    ///
    /// Example: kestrel print examples/fade-ladder.kestrel examples/chase.kestrel
    Print(lang::PrintArgs),
    /// Rewrite documents in canonical form, or with --check report those that are not
    /// (with --diff, what would change).
    ///
    /// Example: kestrel fmt --check --diff examples/*.kestrel
    Fmt(lang::FmtArgs),
    /// Check documents against the grammar and every fail-closed rule.
    ///
    /// Example: kestrel check examples/*.kestrel --json
    Check(lang::CheckArgs),
    /// Render a View at a tape time, exactly as the agent receives it.
    ///
    /// Example: kestrel frame --tape tapes/trend-2025-04-09-s1.jsonl --at 11:30 --view examples/view-wake.kestrel
    Frame(frame::FrameArgs),
    /// Tapes: generate seeded synthetic sessions, import real ones, say what one holds.
    ///
    /// Example: kestrel tape gen --count 12 --seed 100 -o tapes/family
    #[command(subcommand)]
    Tape(TapeCommand),
    /// Replay a tape headless with armed documents and report per plan.
    ///
    /// Example: kestrel run --tape tapes/trend-2025-04-09-s1.jsonl --plans examples/run-desk.kestrel --json
    Run(run::Args),
    /// Print the constrained-decoding grammar (GBNF or Lark) generated from the parser.
    ///
    /// Example: kestrel grammar --format lark --scope turn
    Grammar(grammar::Args),
    /// A headless session with an attached author: wakes, Views, turns, the Bus, the report.
    ///
    /// Example: kestrel agent --tape tapes/trend-2025-04-09-s1.jsonl --author examples/house-agent.jsonl
    Agent(agent::AgentArgs),
    /// Grade plans over many tapes against counterfactuals (VS null, VS ungated), by cell;
    /// shard the work (--shard I/N) and merge shard files (grade merge).
    ///
    /// Example: kestrel grade examples/grade.kestrel --tapes tapes/ --json
    Grade(grade::Args),
    /// List the fail-closed rules with their stable names.
    ///
    /// Example: kestrel rules --json
    Rules(lang::RulesArgs),
    /// Route a reply as a turn: the outcome, the journal and the token figures.
    ///
    /// Example: kestrel turn examples/turns/02-stand-down.txt --json
    Turn(turn::TurnArgs),
    /// Count tokens; for turns, reply vs canonical Kestrel vs the JSON envelope.
    ///
    /// Example: kestrel tokens --table examples/turns/*.txt
    Tokens(tokens::TokensArgs),
    /// Grade the guided error messages from the repair attempts on saved Bus files.
    ///
    /// Example: kestrel errors report runs/*.bus.jsonl --json
    #[command(subcommand)]
    Errors(errors::ErrorsCommand),
    /// Seed 001's experiment on a model server: constrained off/on × authoring-v1/v2 × token
    /// budgets, N turns per arm; the Bus files and the table (escapes, truncations, outcome
    /// rates, tokens and wall time per turn) go to --out.
    ///
    /// Example: kestrel experiment --author http://127.0.0.1:8089/v1 --tape tapes/trend-2025-04-09-s1.jsonl --turns 20 --budgets 256,512 --out /tmp/seed001
    Experiment(experiment::ExperimentArgs),
    /// Print the whole language as a prompt card.
    ///
    /// Example: kestrel card --budget 2000
    Card(card::CardArgs),
    /// Serve the tools (check, print, card, grammar, route_turn, frame, run) over the Model
    /// Context Protocol on stdio; logs on stderr.
    ///
    /// Example: kestrel mcp   (register it in an MCP client as command `kestrel`, args `["mcp"]`)
    Mcp(mcp::McpArgs),
    /// Print where the desk reads its configuration (keys.toml, desk.toml, themes/) and saves
    /// sessions.
    ///
    /// Example: kestrel paths --json
    Paths(paths::PathsArgs),
}

#[derive(Debug, Subcommand)]
pub enum TapeCommand {
    /// Generate a seeded synthetic session (or a family of them with --count).
    ///
    /// Example: kestrel tape gen --regime shock --seed 7 -o /tmp/shock.jsonl
    Gen(tape::TapeGenArgs),
    /// Import trades and quotes from CSV or Databento DBN files into a v2 tape.
    ///
    /// Example: kestrel tape import examples/import/spy-trades.dbn.zst -o /tmp/spy.jsonl
    Import(Box<import::ImportArgs>),
    /// Say what a tape holds: sessions, symbols, events per kind, times, gaps, option prices.
    ///
    /// Example: kestrel tape info tapes/trend-2025-04-09-s1.jsonl
    Info(tape_info::TapeInfoArgs),
}

/// The command line's definition: [`Cli`] with the exit-code footer on every verb's
/// `--help` and, on `kestrel --help`, the config and data directories.
pub fn command() -> clap::Command {
    fn with_footer(mut c: clap::Command) -> clap::Command {
        let names: Vec<String> = c
            .get_subcommands()
            .map(|s| s.get_name().to_string())
            .collect();
        for n in names {
            c = c.mut_subcommand(n, with_footer);
        }
        c.after_help(flags::EXIT_CODES)
    }
    use clap::CommandFactory as _;
    let mut top = with_footer(Cli::command());
    for (path, help) in flags::JSON_VERBS {
        top = flags::json_help(top, path, help);
    }
    top.after_help(format!("{}\n\n{}", paths::summary(), flags::EXIT_CODES))
}

/// A command-line parse error (an unknown flag, a bad value, a missing argument) in the
/// verbs' coded form: `error code=USAGE message=WHAT` (clap's indented notes, such as its
/// `tip:` and `[possible values: ...]`, joined onto that line), then clap's usage line and
/// its pointer to `--help`. `--help` and `--version` are not errors and never come here.
pub(crate) fn usage_error(e: &clap::Error) -> String {
    let text = e.to_string();
    let mut lines = text.lines().filter(|l| !l.trim().is_empty()).peekable();
    let first = lines.next().unwrap_or("invalid arguments");
    let mut message = first.strip_prefix("error: ").unwrap_or(first).to_string();
    while let Some(l) = lines.next_if(|l| l.starts_with(char::is_whitespace)) {
        let l = l.trim();
        message.push_str(if l.starts_with("tip:") { "; " } else { " " });
        message.push_str(l);
    }
    let mut out = format!("error code=USAGE message={message}");
    for l in lines {
        out.push('\n');
        out.push_str(l.trim_end());
    }
    out
}

/// The usage error for a verb given without the subcommand it needs (`kestrel tape`),
/// naming its subcommands.
fn missing_subcommand(verb: Option<&str>) -> String {
    let cmd = command();
    let Some(sub) = verb.and_then(|v| cmd.find_subcommand(v)) else {
        return "error code=USAGE message=a subcommand is needed (kestrel --help lists them)"
            .into();
    };
    let names: Vec<&str> = sub
        .get_subcommands()
        .map(clap::Command::get_name)
        .filter(|n| *n != "help")
        .collect();
    format!(
        "error code=USAGE message=kestrel {} needs a subcommand: {} (kestrel {} --help)",
        sub.get_name(),
        names.join(", "),
        sub.get_name()
    )
}

/// Parse a command line (`argv[0]` first) as `main` does: with the author flags that were
/// typed noted, so one an author does not use is refused where a default is not
/// ([`AuthorFlags::refuse_unused`](crate::session::AuthorFlags::refuse_unused)).
pub fn parse_from<I, T>(argv: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::FromArgMatches as _;
    let m = command().try_get_matches_from(argv)?;
    let mut cli = Cli::from_arg_matches(&m)?;
    match (&mut cli.command, m.subcommand()) {
        (Some(Command::Agent(a)), Some((_, sub))) => a.how.note_given(sub),
        (Some(Command::Desk(a)), Some((_, sub))) => a.how.note_given(sub),
        (None, _) => cli.desk.how.note_given(&m),
        _ => {}
    }
    Ok(cli)
}

/// Run the command line; returns the process exit code.
pub fn main() -> i32 {
    let parsed = parse_from(std::env::args_os());
    let cli = match parsed {
        Ok(c) => c,
        Err(e) => {
            let code = match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    flags::EXIT_OK
                }
                clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    // `kestrel tape` alone: the usage error a missing argument is everywhere
                    // else (it exited 0, read as a success), first as every usage error's
                    // coded line is, then the verb's help.
                    let verb = std::env::args_os().nth(1);
                    errln!(
                        "{}",
                        missing_subcommand(verb.as_ref().and_then(|v| v.to_str()))
                    );
                    let _ = e.print();
                    return flags::EXIT_USAGE;
                }
                _ => {
                    errln!("{}", usage_error(&e));
                    return flags::EXIT_USAGE;
                }
            };
            let _ = e.print();
            return code;
        }
    };
    match cli.command {
        Some(c) => run(c),
        None => crate::desk::run(&cli.desk),
    }
}

/// Dispatch one command.
pub fn run(cmd: Command) -> i32 {
    match cmd {
        Command::Desk(a) => crate::desk::run(&a),
        Command::Parse(a) => lang::parse(&a),
        Command::Print(a) => lang::print(&a),
        Command::Fmt(a) => lang::fmt(&a),
        Command::Check(a) => lang::check(&a),
        Command::Tape(TapeCommand::Gen(a)) => tape::tape_gen(&a),
        Command::Tape(TapeCommand::Import(a)) => import::tape_import(&a),
        Command::Tape(TapeCommand::Info(a)) => tape_info::tape_info(&a),
        Command::Rules(a) => lang::rules(&a),
        Command::Agent(a) => agent::run(&a),
        Command::Frame(a) => frame::run(&a),
        Command::Turn(a) => turn::run(&a),
        Command::Tokens(a) => tokens::run(&a),
        Command::Card(a) => card::run(&a),
        Command::Errors(c) => errors::run(&c),
        Command::Experiment(a) => experiment::run(&a),
        Command::Mcp(a) => mcp::run(&a),
        Command::Run(a) => run::run(a),
        Command::Grammar(a) => grammar::run(&a),
        Command::Grade(a) => grade::run(a),
        Command::Paths(a) => paths::run(&a),
    }
}
