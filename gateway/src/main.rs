//! `airlock`: the command-line entry point.

use std::process::ExitCode;

use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    airlock_gateway::cli::Cli::parse().execute().await
}
