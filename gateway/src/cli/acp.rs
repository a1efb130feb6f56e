//! `airlock acp`: the Agent Client Protocol (see [`crate::acp`]) on this process's stdin/stdout,
//! over embedded sessions. With `--listen`, the same sessions are also served over HTTP, so a
//! browser or a script can watch, steer or queue work for the editor's agent.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::embedded::Embedded;
use crate::server::{Gateway, bind};

/// Arguments of `airlock acp`.
#[derive(Debug, Args)]
pub struct AcpArgs {
    /// Keep sessions in this SQLite file (default: a temporary file, removed at exit); needed for
    /// `session/load` across runs. Sessions already in it are recovered first.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// The model of new sessions.
    #[arg(long, env = "AIRLOCK_MODEL", default_value = "demo")]
    pub model: String,
    /// Also serve the HTTP API for these sessions on this address (port 0 picks a free one).
    #[arg(long)]
    pub listen: Option<String>,
    /// The core and the plugins.
    #[command(flatten)]
    pub sandbox: crate::server::Sandbox,
}

/// Serves until the client closes stdin.
pub async fn run(args: AcpArgs, cache_dir: Option<PathBuf>) -> ExitCode {
    let served = async {
        let (data, cache) = (args.data.as_deref(), cache_dir.as_deref());
        let embedded = Embedded::open_and_recover(data, &args.model, &args.sandbox, cache).await?;
        let registry = embedded.registry.clone();
        if let Some(listen) = &args.listen {
            let (listener, addr) = bind(listen).await?;
            let gateway = Gateway::over(registry.clone(), embedded.settings.clone());
            eprintln!("airlock: listening on http://{addr}");
            tokio::spawn(gateway.run(listener, std::future::pending()));
        }
        crate::acp::serve(registry, agent_client_protocol::Stdio::new())
            .await
            .map_err(|e| format!("ACP connection failed: {e}"))?;
        Ok::<_, Box<dyn std::error::Error>>(ExitCode::SUCCESS)
    };
    super::exit_code(served.await)
}
