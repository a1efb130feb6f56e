//! `airlock stdio`: the low-level SDK protocol (see [`crate::stdio`]) on this process's
//! stdin/stdout, over embedded sessions.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::embedded::Embedded;

/// Arguments of `airlock stdio`.
#[derive(Debug, Args)]
pub struct StdioArgs {
    /// Keep sessions in this SQLite file (default: a temporary file, removed at exit). Sessions
    /// already in it are recovered first.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// The model for new sessions until `initialize` names one.
    #[arg(long, env = "AIRLOCK_MODEL", default_value = "demo")]
    pub model: String,
    /// The core and the plugins.
    #[command(flatten)]
    pub sandbox: crate::server::Sandbox,
}

/// Serves until `shutdown` or the end of stdin; exit 0 unless setup or stdio fails.
pub async fn run(args: StdioArgs, cache_dir: Option<PathBuf>) -> ExitCode {
    let served = async {
        let (data, cache_dir) = (args.data.as_deref(), cache_dir.as_deref());
        let embedded =
            Embedded::open_and_recover(data, &args.model, &args.sandbox, cache_dir).await?;
        let (stdin, stdout) = (tokio::io::stdin(), tokio::io::stdout());
        crate::stdio::serve(embedded.registry.clone(), stdin, stdout)
            .await
            .map_err(|e| format!("stdio failed: {e}"))?;
        Ok::<_, Box<dyn std::error::Error>>(ExitCode::SUCCESS)
    };
    let code = super::exit_code(served.await);
    if code == ExitCode::SUCCESS {
        // Everything is committed and every frame written: end here, without waiting for
        // teardown (sessions, the store's threads, a read of stdin that cannot be cancelled).
        std::process::exit(0);
    }
    code
}
