//! The sessions of a command that runs without a server (`run`, `stdio`, `acp`): sessions over
//! the SQLite file `--data` names, or over a temporary one removed at exit.

use std::path::{Path, PathBuf};

use super::CliError;
use super::args::EmbeddedArgs;
use super::data_lock::DataLock;
use crate::server::{Settings, open_sessions};
use airlock_sessions::{Rules, Sessions};
use airlock_store::Durability;

/// Open sessions, and the temporary directory their file lives in, if any.
pub struct Embedded {
    /// The sessions.
    pub sessions: Sessions,
    /// What they were opened with.
    pub settings: Settings,
    _lock: Option<DataLock>,
    _temp: Option<tempfile::TempDir>,
}

impl Embedded {
    /// Opens `data` (full durability), or a temporary file (gone at exit anyway, so normal).
    /// Nothing is recovered yet: `run` brings back only its own session, `stdio` and `acp` call
    /// [`Sessions::recover`] for all of them, as `serve` does.
    pub async fn open(args: &EmbeddedArgs, cache_dir: Option<&Path>) -> Result<Embedded, CliError> {
        let lock = match args.data.as_deref() {
            Some(path) => DataLock::take(path)?,
            None => None,
        };
        let (temp, path, durability): (_, PathBuf, _) = match args.data.as_deref() {
            Some(path) => (None, path.to_owned(), Durability::Full),
            None => {
                let dir = tempfile::tempdir().map_err(CliError::Temp)?;
                let path = dir.path().join("airlock.db");
                (Some(dir), path, Durability::Normal)
            }
        };
        let workspaces = args.sandbox.workspaces(&path);
        let settings = Settings {
            data: path,
            shared: None,
            durability,
            max_body: airlock_http::DEFAULT_MAX_BODY,
            cors_origins: Vec::new(),
            public_url: None,
            cache_dir: cache_dir.map(Path::to_owned),
            sandbox: args.sandbox.clone().into(),
            rules: Rules {
                workspaces,
                default_model: args.model.model.clone(),
                approval_for: args.sandbox.approval_for.clone(),
                models: std::sync::Arc::new(args.model.table(args.models.clone())),
                ..Rules::default()
            },
            connections: airlock_http::connections::Connections::default(),
            metrics: crate::server::MetricsSettings::default(),
            webhooks: crate::server::WebhookSettings::default(),
            declared: Default::default(),
            traces: None,
        };
        let sessions = open_sessions(&settings).await?;
        Ok(Embedded { sessions, settings, _lock: lock, _temp: temp })
    }
}
