//! The `kestrel` command line. Exit codes everywhere: 0 success, 1 usage or I/O failure,
//! 2 a refused document (or, for `fmt --check`, a file that is not canonical).

pub mod grammar;
mod lang;
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
    /// Tapes: generate seeded synthetic sessions.
    #[command(subcommand)]
    Tape(TapeCommand),
    /// Print the constrained-decoding grammar (GBNF or Lark) generated from the parser.
    ///
    /// Example: kestrel grammar --format lark --scope turn
    Grammar(grammar::Args),
    /// List the fail-closed rules with their stable names.
    ///
    /// Example: kestrel rules
    Rules,
}

#[derive(Debug, Subcommand)]
pub enum TapeCommand {
    /// Generate a seeded synthetic session (or a family of them with --count).
    ///
    /// Example: kestrel tape gen --regime shock --seed 7 -o /tmp/shock.jsonl
    Gen(tape::TapeGenArgs),
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
        Command::Tape(TapeCommand::Gen(a)) => tape::tape_gen(&a),
        Command::Rules => lang::rules(),
        Command::Grammar(a) => grammar::run(&a),
    }
}
