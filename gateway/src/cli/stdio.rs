//! `airlock stdio`: the low-level SDK protocol (see [`crate::stdio`]) on this process's
//! stdin/stdout, over embedded sessions.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::CliError;
use super::embedded::Embedded;

/// Arguments of `airlock stdio`.
#[derive(Debug, Args)]
pub struct StdioArgs {
    /// The sessions (`--model` serves new ones until `initialize` names a model).
    #[command(flatten)]
    pub sessions: super::args::EmbeddedArgs,
}

/// Serves until `shutdown` or the end of stdin; exit 0 unless setup or stdio fails.
pub async fn run(args: StdioArgs, cache_dir: Option<PathBuf>) -> ExitCode {
    let served = async {
        let embedded = Embedded::open(&args.sessions, cache_dir.as_deref()).await?;
        embedded.sessions.recover().await?;
        let (stdin, stdout) = (tokio::io::stdin(), tokio::io::stdout());
        crate::stdio::serve(embedded.sessions.registry.clone(), stdin, stdout)
            .await
            .map_err(|e| CliError::Connection(format!("stdio failed: {e}")))?;
        Ok::<_, CliError>(ExitCode::SUCCESS)
    };
    let code = super::exit_code(served.await);
    if code == ExitCode::SUCCESS {
        // Everything is committed and every frame written: end here, without waiting for
        // teardown (sessions, the store's threads, a read of stdin that cannot be cancelled).
        std::process::exit(0);
    }
    code
}
