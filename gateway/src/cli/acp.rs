//! `airlock acp`: the Agent Client Protocol (see [`crate::acp`]) on this process's stdin/stdout,
//! over embedded sessions. With `--listen`, the same sessions are also served over HTTP, so a
//! browser or a script can watch, steer or queue work for the editor's agent.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::CliError;
use super::embedded::Embedded;
use crate::server::Gateway;

/// Arguments of `airlock acp`.
#[derive(Debug, Args)]
pub struct AcpArgs {
    /// The sessions.
    #[command(flatten)]
    pub sessions: super::args::EmbeddedArgs,
    /// Also serve the HTTP API for these sessions on this address (port 0 picks a free one).
    /// Not read from `airlock.toml`, whose `listen` is the server's.
    #[arg(long)]
    pub listen: Option<String>,
}

/// Serves until the client closes stdin.
pub async fn run(args: AcpArgs, cache_dir: Option<PathBuf>) -> ExitCode {
    let served = async {
        let embedded = Embedded::open(&args.sessions, cache_dir.as_deref()).await?;
        embedded.sessions.recover().await?;
        let sessions = embedded.sessions.clone();
        if let Some(listen) = &args.listen {
            let gateway = Gateway::over(sessions.clone(), embedded.settings.clone()).await?;
            let (listener, addr) = gateway.bind(listen).await?;
            eprintln!("airlock: listening on http://{addr}");
            tokio::spawn(gateway.run(listener, std::future::pending()));
        }
        airlock_editors::acp::serve(sessions, agent_client_protocol::Stdio::new())
            .await
            .map_err(|e| CliError::Connection(format!("ACP connection failed: {e}")))?;
        Ok::<_, CliError>(ExitCode::SUCCESS)
    };
    super::exit_code(served.await)
}
