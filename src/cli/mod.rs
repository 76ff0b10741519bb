//! The `kestrel` command line. Exit codes everywhere: 0 success, 1 usage or I/O failure,
//! 2 a refused document (or, for `fmt --check`, a file that is not canonical).

mod lang;
pub mod run;
pub mod tape;

use clap::{Parser, Subcommand};

/// Kestrel desk: a terminal desk where a person and an LLM agent fly one trading book.
#[derive(Debug, Parser)]
#[command(name = "kestrel", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Parse a document and print its typed model as JSON.
    ///
    /// Example: kestrel parse examples/chase.kestrel | jq '.statements[0]'
    Parse(lang::ParseArgs),
    /// Print a document in canonical form to stdout.
    ///
    /// Example: kestrel print examples/fade-ladder.kestrel
    Print(lang::PrintArgs),
    /// Rewrite documents in canonical form, or with --check report those that are not.
    ///
    /// Example: kestrel fmt --check examples/*.kestrel
    Fmt(lang::FmtArgs),
    /// Check documents against the grammar and every fail-closed rule.
    ///
    /// Example: kestrel check examples/*.kestrel --format json
    Check(lang::CheckArgs),
    /// Replay a tape headless with armed documents and report per plan.
    ///
    /// Example: kestrel run --tape tapes/shock.jsonl --plans examples/fade.kestrel --r-usd 1000 --json
    Run(run::Args),
    /// List the fail-closed rules with their stable names.
    ///
    /// Example: kestrel rules
    Rules,
}

/// Run the command line; returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = match e.kind() {
                clap::error::ErrorKind::DisplayHelp
                | clap::error::ErrorKind::DisplayVersion
                | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => 0,
                _ => 1,
            };
            let _ = e.print();
            return code;
        }
    };
    run(cli.command)
}

/// Dispatch one command.
pub fn run(cmd: Command) -> i32 {
    match cmd {
        Command::Parse(a) => lang::parse(&a),
        Command::Print(a) => lang::print(&a),
        Command::Fmt(a) => lang::fmt(&a),
        Command::Check(a) => lang::check(&a),
        Command::Rules => lang::rules(),
        Command::Run(a) => run::run(a),
    }
}
