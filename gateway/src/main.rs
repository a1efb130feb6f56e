//! `airlock`: the command-line entry point.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    airlock_gateway::cli::Cli::from_env_and_file().execute().await
}
