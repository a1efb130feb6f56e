//! The live sessions of a gateway: creating them, finding them, and bringing every stored session
//! back after a restart (crash repair, then the followups that were accepted but never ran).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use airlock_core::{Config, Input};
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use crate::actor::SessionHandle;
use crate::clock::{fresh_id, now_ms};
use crate::core_host::CoreHost;
use crate::model;
use crate::session::{Session, SessionError, SessionParts};
use crate::store::{SessionRow, Store, StoreError};
use crate::tools::ToolRegistry;

/// How a session was asked for: stored with it, so a restart rebuilds the same session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSpec {
    /// `demo`, `openai:<model>`, ...
    pub model: String,
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// Names of the tools the model sees (all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// The output token limit of each model request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Anything the client wants kept with the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
}

/// Why a registry operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// No such session.
    #[error("no session has id {0:?}")]
    NotFound(String),
    /// The session was disposed: its log is readable, it takes no input.
    #[error("session {0:?} was disposed; its log stays readable but it takes no input")]
    Disposed(String),
    /// The spec names something this gateway cannot provide.
    #[error("{0}")]
    BadSpec(String),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The session could not be built.
    #[error(transparent)]
    Session(#[from] SessionError),
}

/// A change to the set of sessions or their status, for `GET /v1/events`.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "event")]
pub enum HubNotice {
    /// A session was created.
    #[serde(rename = "session.added")]
    Added {
        /// The session.
        #[serde(rename = "sessionId")]
        session_id: String,
    },
    /// A session was disposed.
    #[serde(rename = "session.removed")]
    Removed {
        /// The session.
        #[serde(rename = "sessionId")]
        session_id: String,
    },
}

/// Every live session of the gateway.
pub struct Registry {
    store: Store,
    host: Arc<CoreHost>,
    tools: ToolRegistry,
    default_model: String,
    live: Mutex<HashMap<String, SessionHandle>>,
    hub: broadcast::Sender<HubNotice>,
    /// The gateway is stopping: work for later is injected, not woken.
    shutting_down: std::sync::atomic::AtomicBool,
}

impl Registry {
    /// A registry over a store whose sessions' models get `tools`; `default_model` serves
    /// sessions that name none.
    pub fn new(
        store: Store,
        host: Arc<CoreHost>,
        tools: ToolRegistry,
        default_model: String,
    ) -> Arc<Registry> {
        Registry::with_tools(store, host, default_model, |_| tools)
    }

    /// [`Registry::new`] for tools that act on the registry itself (the subagent and goal
    /// tools): `tools` is given the registry-to-be, to be upgraded when a tool is called.
    pub fn with_tools(
        store: Store,
        host: Arc<CoreHost>,
        default_model: String,
        tools: impl FnOnce(&Weak<Registry>) -> ToolRegistry,
    ) -> Arc<Registry> {
        Arc::new_cyclic(|registry| Registry {
            store,
            host,
            tools: tools(registry),
            default_model,
            live: Mutex::new(HashMap::new()),
            hub: broadcast::channel(256).0,
            shutting_down: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Marks the gateway as stopping (see [`Registry::shutting_down`]).
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether the gateway is stopping.
    pub fn shutting_down(&self) -> bool {
        self.shutting_down.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Every tool sessions may be given.
    pub fn tools(&self) -> &ToolRegistry {
        &self.tools
    }

    /// The default model name.
    pub fn default_model(&self) -> &str {
        &self.default_model
    }

    /// Session-set changes from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<HubNotice> {
        self.hub.subscribe()
    }

    /// Every live session's handle.
    pub fn handles(&self) -> Vec<SessionHandle> {
        self.live.lock().expect("registry lock").values().cloned().collect()
    }

    /// Creates a child of `parent_id` with the parent's model, system prompt and tools.
    pub async fn create_child(
        &self,
        parent_id: &str,
        name: Option<&str>,
    ) -> Result<SessionHandle, RegistryError> {
        let parent = self
            .store
            .session(parent_id)
            .await?
            .ok_or_else(|| RegistryError::NotFound(parent_id.to_owned()))?;
        let mut spec: SessionSpec = serde_json::from_value(parent.spec).unwrap_or_default();
        spec.metadata = name.map(|name| serde_json::json!({"name": name}));
        let child_id = fresh_id();
        self.insert(child_id.clone(), spec, Some(parent_id.to_owned())).await?;
        self.get(&child_id)
    }

    /// Creates a session; `Ok((row, false))` when one with that id exists (the caller compares).
    pub async fn create(
        &self,
        session_id: String,
        spec: SessionSpec,
    ) -> Result<(SessionRow, bool), RegistryError> {
        self.insert(session_id, spec, None).await
    }

    async fn insert(
        &self,
        session_id: String,
        mut spec: SessionSpec,
        parent_session_id: Option<String>,
    ) -> Result<(SessionRow, bool), RegistryError> {
        if spec.model.is_empty() {
            spec.model = self.default_model.clone();
        }
        // The core comes first: a session whose core cannot start is not stored.
        let session = Session::create(self.build(&session_id, &spec)?)?;
        let now = now_ms();
        let row = SessionRow {
            session_id: session_id.clone(),
            created_at: now,
            updated_at: now,
            spec: serde_json::to_value(&spec).expect("specs serialize"),
            disposed: false,
            parent_session_id,
        };
        if !self.store.insert_session(row.clone()).await? {
            let existing = self
                .store
                .session(&session_id)
                .await?
                .ok_or_else(|| RegistryError::NotFound(session_id.clone()))?;
            return Ok((existing, false));
        }
        let handle = SessionHandle::spawn(session, Some(self.store.clone()));
        self.live.lock().expect("registry lock").insert(session_id.clone(), handle);
        crate::metrics::global().sessions.inc();
        let _ = self.hub.send(HubNotice::Added { session_id });
        Ok((row, true))
    }

    /// The live session with this id.
    pub fn get(&self, session_id: &str) -> Result<SessionHandle, RegistryError> {
        self.live
            .lock()
            .expect("registry lock")
            .get(session_id)
            .cloned()
            .ok_or_else(|| RegistryError::NotFound(session_id.to_owned()))
    }

    /// Forgets a disposed session's actor (its log stays readable).
    pub fn remove(&self, session_id: &str) {
        if self.live.lock().expect("registry lock").remove(session_id).is_some() {
            crate::metrics::global().sessions.dec();
        }
        let _ = self.hub.send(HubNotice::Removed { session_id: session_id.to_owned() });
    }

    /// Brings back every stored session that is not disposed: rebuilt from its log, its open turn
    /// closed, its accepted followups run. Called once at start, before the gateway is ready.
    pub async fn recover_all(&self) -> Result<usize, RegistryError> {
        let mut count = 0;
        let mut cursor = None;
        loop {
            let rows = self.store.sessions(cursor.clone(), 500).await?;
            let Some(last) = rows.last() else { break };
            cursor = Some(last.session_id.clone());
            for row in rows.into_iter().filter(|r| !r.disposed) {
                self.bring_back(row).await?;
                count += 1;
            }
        }
        Ok(count)
    }

    /// The live session with this id, brought back from its log when it is not in memory.
    pub async fn resume(&self, session_id: &str) -> Result<SessionHandle, RegistryError> {
        if let Ok(handle) = self.get(session_id) {
            return Ok(handle);
        }
        match self.store.session(session_id).await? {
            Some(row) if row.disposed => Err(RegistryError::Disposed(session_id.to_owned())),
            Some(row) => self.bring_back(row).await,
            None => Err(RegistryError::NotFound(session_id.to_owned())),
        }
    }

    /// Rebuilds a stored session from its log, closes its open turn, runs its accepted followups.
    async fn bring_back(&self, row: SessionRow) -> Result<SessionHandle, RegistryError> {
        let spec: SessionSpec = serde_json::from_value(row.spec.clone()).unwrap_or_default();
        let parts = self.build(&row.session_id, &spec)?;
        let mut session = Session::restore(parts).await?;
        session.feed(Input::Recover).await?;
        let handle = SessionHandle::spawn(session, Some(self.store.clone()));
        self.live.lock().expect("registry lock").insert(row.session_id, handle.clone());
        crate::metrics::global().sessions.inc();
        Ok(handle)
    }

    /// The parts a session is made of, per its spec.
    fn build(&self, session_id: &str, spec: &SessionSpec) -> Result<SessionParts, RegistryError> {
        let model =
            model::from_name(&spec.model).map_err(|e| RegistryError::BadSpec(e.to_string()))?;
        let tools = match &spec.tools {
            None => self.tools.clone(),
            Some(names) => self.tools.only(names).map_err(RegistryError::BadSpec)?,
        };
        let mut config = Config::new(session_id, model.provider(), model.model());
        config.system = spec.system.clone();
        config.max_tokens = spec.max_tokens;
        let log = Arc::new(self.store.clone());
        Ok(SessionParts { host: self.host.clone(), config, model, tools, log })
    }
}
