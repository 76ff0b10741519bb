//! The `kestrel` command line. Exit codes everywhere: 0 success, 1 usage or I/O failure,
//! 2 a refused document (or, for `fmt --check`, a file that is not canonical).

mod card;
mod lang;
mod tokens;
mod turn;

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
    /// List the fail-closed rules with their stable names.
    ///
    /// Example: kestrel rules
    Rules,
    /// Route a reply as a turn: the outcome, the journal and the token figures.
    ///
    /// Example: kestrel turn examples/turns/02-stand-down.txt --json
    Turn(turn::TurnArgs),
    /// Count tokens; for turns, reply vs canonical Kestrel vs the JSON envelope.
    ///
    /// Example: kestrel tokens --table examples/turns/*.txt
    Tokens(tokens::TokensArgs),
    /// Print the whole language as a prompt card.
    ///
    /// Example: kestrel card --budget 2000
    Card(card::CardArgs),
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
        Command::Turn(a) => turn::run(&a),
        Command::Tokens(a) => tokens::run(&a),
        Command::Card(a) => card::run(&a),
    }
}
