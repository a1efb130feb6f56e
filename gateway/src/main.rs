//! `airlock`: the command-line entry point.

use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = airlock_gateway::cli::Cli::from_env_and_file();
    let runtime = cli.runtime().expect("starting the tokio runtime");
    let code = runtime.block_on(cli.execute());
    // Do not wait for tasks still blocked in a read of stdin (`stdio`, `acp` after `shutdown`):
    // such a read cannot be cancelled and would hold the exit until the next line.
    runtime.shutdown_background();
    code
}
