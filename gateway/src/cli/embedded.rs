//! The sessions of a command that runs without a server (`run`, `stdio`, `acp`): a registry over
//! the SQLite file `--data` names, or over a temporary one removed at exit.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::registry::Registry;
use crate::server::{Sandbox, ServeError, Settings, open_registry};
use crate::store::Durability;

/// An open registry, and the temporary directory it lives in, if any.
pub struct Embedded {
    /// The sessions.
    pub registry: Arc<Registry>,
    /// What they were opened with.
    pub settings: Settings,
    _temp: Option<tempfile::TempDir>,
}

/// Why the sessions could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The store, the core or the model.
    #[error(transparent)]
    Setup(#[from] ServeError),
    /// No temporary directory.
    #[error("cannot make a temporary database: {0}")]
    Temp(std::io::Error),
}

impl Embedded {
    /// Opens `data` (full durability), or a temporary file (gone at exit anyway, so normal).
    pub async fn open(
        data: Option<&Path>,
        model: &str,
        sandbox: &Sandbox,
        cache_dir: Option<&Path>,
    ) -> Result<Embedded, EmbedError> {
        let (temp, path, durability): (_, PathBuf, _) = match data {
            Some(path) => (None, path.to_owned(), Durability::Full),
            None => {
                let dir = tempfile::tempdir().map_err(EmbedError::Temp)?;
                let path = dir.path().join("airlock.db");
                (Some(dir), path, Durability::Normal)
            }
        };
        let settings = Settings {
            data: path,
            model: model.to_owned(),
            durability,
            max_body: crate::api::DEFAULT_MAX_BODY,
            cors_origins: Vec::new(),
            cache_dir: cache_dir.map(Path::to_owned),
            sandbox: sandbox.clone(),
        };
        let registry = open_registry(&settings).await?;
        Ok(Embedded { registry, settings, _temp: temp })
    }

    /// [`Embedded::open`], then every stored session is brought back (as `serve` does).
    pub async fn open_and_recover(
        data: Option<&Path>,
        model: &str,
        sandbox: &Sandbox,
        cache_dir: Option<&Path>,
    ) -> Result<Embedded, EmbedError> {
        let embedded = Embedded::open(data, model, sandbox, cache_dir).await?;
        embedded.registry.recover_all().await.map_err(ServeError::from)?;
        Ok(embedded)
    }
}
