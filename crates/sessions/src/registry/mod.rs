//! The sessions of a gateway: creating them, finding them, keeping in memory only those at work,
//! and bringing back after a restart those the log says were not at rest (crash repair, then the
//! followups that were accepted but never ran).
//!
//! The log is the truth; memory is a cache of it. A session that is idle, has nothing pending
//! and is held by nobody is dropped from memory after `idle_evict` (or, least recently used
//! first, when more than `max_live` are live). Any input, read or subscription brings it back
//! from its log ([`Registry::resume`]). Its [`Outbox`] outlives the eviction while someone
//! follows it, so a follower sees the woken session's events with no gap.

mod cluster;
mod create;
mod error;
mod evict;
mod fork;
mod parts;
mod session_tools;
mod spec;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use airlock_core::{Input, Limits};
use tokio::sync::broadcast;

use crate::actor::SessionHandle;
use crate::admission::Admission;
use crate::session::{Accounting, Notice, Outbox, Session, Work};
use airlock_base::input::plain_name;
use airlock_providers::model;
use airlock_providers::tools::ToolRegistry;
use airlock_sandbox::core_host::CoreHost;
use airlock_store::{Owner, SessionRow, Store};
pub use cluster::{Change, ClusterNotice};
pub use error::RegistryError;
pub use evict::Eviction;
pub use session_tools::SessionTools;
pub use spec::{ForkedFrom, SessionSpec};

/// A change to the set of sessions or their status, for `GET /v1/events`.
#[derive(Clone, Debug)]
pub enum HubNotice {
    /// A session was created.
    Added {
        /// The session.
        session_id: String,
    },
    /// A session was disposed.
    Removed {
        /// The session.
        session_id: String,
    },
    /// A stored session was brought back into memory (after an eviction or at start).
    Woken {
        /// The session.
        session_id: String,
    },
}

/// Whether a new session may have this id: a [`plain_name`] of up to 200 letters, digits, `.`,
/// `_`, `:` or `-`.
pub fn valid_session_id(id: &str) -> bool {
    plain_name(id, 200, &['.', '_', ':', '-'])
}

impl HubNotice {
    /// The session it is about.
    pub fn session_id(&self) -> &str {
        match self {
            HubNotice::Added { session_id }
            | HubNotice::Removed { session_id }
            | HubNotice::Woken { session_id } => session_id,
        }
    }
}

/// What every session of a registry is built with, fixed when the registry is made.
#[derive(Clone, Debug, Default)]
pub struct Rules {
    /// The model of sessions that name none.
    pub default_model: String,
    /// When sessions at rest leave memory.
    pub eviction: Eviction,
    /// What no turn may exceed.
    pub limits: Limits,
    /// The tools whose calls wait for a person's approval unless a session says otherwise
    /// (`all`: every one); [`Sessions::check_approval_for`](crate::Sessions::check_approval_for) says whether each exists.
    pub approval_for: Vec<String>,
    /// The `[models]` table: windows, endpoints, fallbacks, prices.
    pub models: Arc<model::ModelTable>,
    /// The limits every session and turn is admitted by.
    pub admission: crate::admission::Limits,
    /// Where sessions' workspaces live (code tools' `/workspace`, `…/files`); none: sessions
    /// have no workspace.
    pub workspaces: Option<airlock_providers::tools::Workspaces>,
    /// Where every session's committed events also go (the trace exporter), if anywhere.
    pub tap: Option<crate::session::Tap>,
}

/// Every session of the gateway that is in memory.
pub struct Registry {
    store: Store,
    host: Arc<CoreHost>,
    tools: ToolRegistry,
    /// Tools of single sessions (an ACP client's MCP servers).
    session_tools: SessionTools,
    rules: Rules,
    live: Mutex<HashMap<String, SessionHandle>>,
    /// The outboxes of evicted sessions, for as long as someone follows them.
    outboxes: Mutex<HashMap<String, Weak<Outbox>>>,
    /// One lock per session being created or brought back, so it gets one actor, not two.
    waking: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// The one accounting every session and turn of this gateway is admitted by.
    admission: Arc<Admission>,
    /// Stored sessions the last pass of recovery had no room for.
    unrecovered: std::sync::atomic::AtomicUsize,
    /// Wakes the evictor early (more sessions than `max_live`).
    crowded: Arc<tokio::sync::Notify>,
    hub: broadcast::Sender<HubNotice>,
    /// The gateway is stopping: work for later is injected, not woken.
    shutting_down: std::sync::atomic::AtomicBool,
}

impl Registry {
    /// A registry over a store whose sessions' models get `tools`, each built by `rules`.
    #[cfg(test)]
    pub fn new(
        store: Store,
        host: Arc<CoreHost>,
        tools: ToolRegistry,
        rules: Rules,
    ) -> Arc<Registry> {
        Registry::with_tools(store, host, rules, |_| tools)
    }

    /// [`Registry::new`] for tools that act on the registry itself (the subagent and goal
    /// tools): `tools` is given the registry-to-be, to be upgraded when a tool is called.
    pub fn with_tools(
        store: Store,
        host: Arc<CoreHost>,
        rules: Rules,
        tools: impl FnOnce(&Weak<Registry>) -> ToolRegistry,
    ) -> Arc<Registry> {
        Arc::new_cyclic(|registry| Registry {
            store,
            host,
            tools: tools(registry),
            session_tools: SessionTools::default(),
            admission: Arc::new(Admission::new(rules.admission)),
            rules,
            live: Mutex::new(HashMap::new()),
            outboxes: Mutex::new(HashMap::new()),
            waking: Mutex::new(HashMap::new()),
            unrecovered: Default::default(),
            crowded: Arc::default(),
            hub: broadcast::channel(256).0,
            shutting_down: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Tools of single sessions, beside [`Registry::tools`].
    pub fn session_tools(&self) -> &SessionTools {
        &self.session_tools
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

    /// What every session is built with.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// Every tool sessions may be given.
    pub fn tools(&self) -> &ToolRegistry {
        &self.tools
    }

    /// The default model name.
    pub fn default_model(&self) -> &str {
        &self.rules.default_model
    }

    /// Whether every tool of [`Rules::approval_for`] exists (`all` names every one); an unknown
    /// name is an error naming the known ones.
    pub fn check_approval_for(&self) -> Result<(), String> {
        let names = &self.rules.approval_for;
        for name in names.iter().filter(|name| *name != airlock_providers::tools::ASK_ALL) {
            self.tools.only(std::slice::from_ref(name))?;
        }
        Ok(())
    }

    /// The accounting every session and turn is admitted by.
    pub fn admission(&self) -> Arc<Admission> {
        self.admission.clone()
    }

    /// Admits more input for `handle`'s session (a message, a run, a prompt) beyond what the
    /// session checks as it feeds it ([`crate::session::Work::New`]): its tenant's stored bytes.
    pub async fn admit_input(&self, handle: &SessionHandle) -> Result<(), RegistryError> {
        let admission = self.admission();
        if let (Some(tenant), true) = (handle.tenant(), admission.limits().tenant.bytes > 0) {
            admission.bytes(tenant, self.store.tenant_bytes(tenant).await?)?;
        }
        Ok(())
    }

    /// Session-set changes from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<HubNotice> {
        self.hub.subscribe()
    }

    /// Every live session's handle.
    pub fn handles(&self) -> Vec<SessionHandle> {
        self.live.lock().expect("registry lock").values().cloned().collect()
    }

    /// What a session of `tenant`, `depth` levels below `root` (none: a root session), counts
    /// against.
    fn accounting(&self, tenant: Option<&str>, root: Option<&str>, depth: u32) -> Accounting {
        Accounting {
            admission: self.admission(),
            tenant: tenant.map(Arc::from),
            root: root.map(Arc::from),
            depth,
        }
    }

    /// What a stored session counts against: its tenant, and its root and depth, read up its
    /// parents (a live parent knows its own).
    async fn accounting_of(&self, row: &SessionRow) -> Result<Accounting, RegistryError> {
        let (mut root, mut depth, mut parent) = (None, 0, row.parent_session_id.clone());
        while let Some(id) = parent.take() {
            depth += 1;
            let live = self.live.lock().expect("registry lock").get(&id).cloned();
            if let Some(live) = live {
                let root = live.root().unwrap_or(&id).to_owned();
                let depth = depth + live.depth();
                return Ok(self.accounting(row.tenant.as_deref(), Some(&root), depth));
            }
            parent = self.store.session(&id).await?.and_then(|row| row.parent_session_id);
            root = Some(id);
            if depth >= MAX_LINEAGE {
                break; // a tree this deep was made before the limit; counting stops here
            }
        }
        Ok(self.accounting(row.tenant.as_deref(), root.as_deref(), depth))
    }

    /// Puts a session in memory; tells the evictor when there are too many.
    fn go_live(&self, handle: SessionHandle) {
        let mut live = self.live.lock().expect("registry lock");
        // Counted by change, not set: a process may hold more than one registry (tests do).
        if live.insert(handle.id().to_owned(), handle).is_none() {
            airlock_base::metrics::global().sessions.inc();
        }
        if live.len() > self.eviction().max_live {
            self.crowded.notify_one();
        }
    }

    /// Holds off every other creation or wake of `session_id` while the guard lives.
    async fn exclusive(&self, session_id: &str) -> Exclusive<'_> {
        let lock = {
            let mut waking = self.waking.lock().expect("waking lock");
            waking.entry(session_id.to_owned()).or_default().clone()
        };
        let guard = lock.clone().lock_owned().await;
        Exclusive { registry: self, session_id: session_id.to_owned(), lock, _guard: guard }
    }

    /// The session with this id if it is in memory (see [`Registry::resume`] for any session).
    pub fn get(&self, session_id: &str) -> Result<SessionHandle, RegistryError> {
        let live = self.live.lock().expect("registry lock");
        let handle = live.get(session_id).ok_or_else(|| RegistryError::NotFound(session_id.into()));
        handle.inspect(|handle| handle.touch()).cloned()
    }

    /// Forgets a disposed session's actor (its log stays readable); its followers are told.
    pub fn remove(&self, session_id: &str) {
        self.drop_live(session_id);
        self.release_later(vec![session_id.to_owned()]);
        let _ = self.hub.send(HubNotice::Removed { session_id: session_id.to_owned() });
    }

    /// Takes a session out of memory and ends its followers' streams.
    fn drop_live(&self, session_id: &str) {
        let mut live = self.live.lock().expect("registry lock");
        let outbox = match live.remove(session_id) {
            Some(handle) => {
                airlock_base::metrics::global().sessions.dec();
                Some(handle.outbox().clone())
            }
            None => self
                .outboxes
                .lock()
                .expect("outboxes lock")
                .remove(session_id)
                .and_then(|o| o.upgrade()),
        };
        drop(live);
        if let Some(outbox) = outbox {
            outbox.send(Notice::Ended);
        }
    }

    /// Gives up the leases of sessions that left memory, in the background (a store of one
    /// gateway has none). Called before a request can find them gone (under the registry's
    /// lock, or once they are disposed): each lease's epoch is forgotten here, at once.
    fn release_later(&self, session_ids: Vec<String>) {
        if !self.store.shared() || session_ids.is_empty() {
            return;
        }
        // Each gives up the lease held now, not one taken again meanwhile.
        let releases: Vec<_> = session_ids.iter().map(|id| self.store.release(id)).collect();
        tokio::spawn(async move {
            for (release, session_id) in releases.into_iter().zip(session_ids) {
                if let Err(error) = release.await {
                    // It runs out by itself within the lease time.
                    tracing::warn!(session_id, %error, "giving up a lease failed");
                }
            }
        });
    }

    /// The session with this id, brought back from its log when it is not in memory: new work,
    /// refused while the gateway holds as many core instances as the machine allows.
    pub async fn resume(&self, session_id: &str) -> Result<SessionHandle, RegistryError> {
        self.resume_for(session_id, Work::New).await
    }

    /// [`Registry::resume`] for work admitted before (a child's notice to its parent): never
    /// refused.
    pub async fn resume_admitted(&self, session_id: &str) -> Result<SessionHandle, RegistryError> {
        self.resume_for(session_id, Work::Admitted).await
    }

    async fn resume_for(
        &self,
        session_id: &str,
        work: Work,
    ) -> Result<SessionHandle, RegistryError> {
        if let Ok(handle) = self.get(session_id) {
            return Ok(handle);
        }
        let row = self.store.session(session_id).await?;
        match row {
            Some(row) if row.disposed => Err(RegistryError::Disposed(session_id.to_owned())),
            Some(row) => self.bring_back(row, work).await,
            None => Err(RegistryError::NotFound(session_id.to_owned())),
        }
    }

    /// Rebuilds a stored session from its log. One whose last commit did not leave it at rest is
    /// given `recover` (which closes an open turn and runs accepted followups); one at rest goes
    /// on exactly as if it had stayed in memory. Answers the live one if another call brought it
    /// back first.
    async fn bring_back(
        &self,
        row: SessionRow,
        work: Work,
    ) -> Result<SessionHandle, RegistryError> {
        let _exclusive = self.exclusive(&row.session_id).await;
        if let Ok(handle) = self.get(&row.session_id) {
            return Ok(handle);
        }
        let started = Instant::now();
        let session_id = row.session_id.clone();
        if let Owner::Elsewhere { address } = self.store.acquire(&session_id).await? {
            return Err(RegistryError::Elsewhere { session_id, address });
        }
        let woken = self.restore(row, work).await;
        if woken.is_err() {
            // Not live here after all: any gateway may take it.
            let _ = self.store.release(&session_id).await;
        }
        let handle = woken?;
        self.go_live(handle.clone());
        let metrics = airlock_base::metrics::global();
        metrics.wakes.inc();
        metrics.wake_seconds.observe(started.elapsed().as_secs_f64());
        let _ = self.hub.send(HubNotice::Woken { session_id });
        Ok(handle)
    }

    /// A stored session's actor, rebuilt from its log (and recovered when `row` says so).
    async fn restore(&self, row: SessionRow, work: Work) -> Result<SessionHandle, RegistryError> {
        // Read again under the lease: the gateway that held it before may have written since.
        let row = match self.store.shared() {
            true => self.store.session(&row.session_id).await?.unwrap_or(row),
            false => row,
        };
        let spec: SessionSpec = serde_json::from_value(row.spec.clone()).unwrap_or_default();
        let outbox = self.outboxes.lock().expect("outboxes lock").remove(&row.session_id);
        let outbox = outbox.and_then(|outbox| outbox.upgrade()).unwrap_or_else(Outbox::new);
        let accounting = self.accounting_of(&row).await?;
        let parts =
            self.build(&row.session_id, &spec, outbox, accounting).map_err(
                |error| match error {
                    RegistryError::BadSpec { message, .. } => {
                        RegistryError::Unusable { session_id: row.session_id.clone(), message }
                    }
                    other => other,
                },
            )?;
        let mut session = Session::restore(parts, work).await?;
        if row.needs_recovery {
            session.feed(Input::Recover).await?;
        }
        Ok(SessionHandle::spawn(session, Some(self.store.clone())))
    }
}

/// The most parents read up a stored session's tree to find its root: deeper trees were made
/// before `--max-subagent-depth` existed.
const MAX_LINEAGE: u32 = 64;

/// A session being created or brought back; see [`Registry::exclusive`].
struct Exclusive<'r> {
    registry: &'r Registry,
    session_id: String,
    lock: Arc<tokio::sync::Mutex<()>>,
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

impl Drop for Exclusive<'_> {
    fn drop(&mut self) {
        let mut waking = self.registry.waking.lock().expect("waking lock");
        // The map, this guard's lock and the guard itself: nobody else waits.
        if Arc::strong_count(&self.lock) <= 3 {
            waking.remove(&self.session_id);
        }
    }
}
