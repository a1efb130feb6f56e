//! `airlock`: the command-line entry point.

use std::process::ExitCode;

fn main() -> ExitCode {
    let runtime = tokio::runtime::Runtime::new().expect("starting the tokio runtime");
    let code = runtime.block_on(airlock_gateway::cli::Cli::from_env_and_file().execute());
    // Do not wait for tasks still blocked in a read of stdin (`stdio`, `acp` after `shutdown`):
    // such a read cannot be cancelled and would hold the exit until the next line.
    runtime.shutdown_background();
    code
}
