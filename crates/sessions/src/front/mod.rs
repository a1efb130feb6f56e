//! [`Sessions`], the front door: what every face (HTTP, stdio, ACP, the command line) does to
//! the house, each recipe written once.

mod hub;
mod input;
mod usage;

pub use airlock_store::{ModelUsage, Tokens};
pub use hub::HubEvent;
pub use input::{InputError, Sent};
pub use usage::{ModelSpending, Spending};

use std::sync::Arc;

use airlock_core::Status;
use airlock_providers::tools::{Tool, ToolRegistry, Workspace};
use airlock_sandbox::core_host::CoreHost;
use airlock_store::{Owner, SessionRow, Store};

use crate::actor::SessionHandle;
use crate::admission::{Exceeded, Slot};
use crate::follow::Follower;
use crate::goal::{Driver, Goal};
use crate::goal_tool::GoalTool;
use crate::registry::{Registry, RegistryError, Rules, SessionSpec};
use crate::session::QueueItem;
use crate::subagents::{AgentTool, Continuable, Settlements};

/// The sessions of a gateway: the registry, with every tool wired in, and the settlements that
/// tell parents what their continuable children did. Cheap to clone: every clone is the same
/// house.
///
/// A face opens a session ([`Sessions::open`], [`Sessions::open_new`]) to follow it, and names it
/// by id for everything else; what it gets back are plain views ([`Overview`], [`QueueItem`],
/// [`Goal`]) and errors that say what to do next.
#[derive(Clone)]
pub struct Sessions {
    registry: Arc<Registry>,
    settlements: Arc<Settlements>,
    /// Held while a session's stored spec is read, changed and written back.
    spec_writes: Arc<tokio::sync::Mutex<()>>,
}

/// What a session is now: its stored row, and what its live actor knows (or, at rest, what the
/// log says).
#[derive(Clone, Debug)]
pub struct Overview {
    /// The stored row.
    pub row: SessionRow,
    /// What it was created with.
    pub spec: SessionSpec,
    /// Whole-agent status.
    pub status: Status,
    /// The last event's seq (-1: none yet).
    pub last_seq: i64,
    /// Pending input, `next-step` first.
    pub queue: Vec<QueueItem>,
    /// Its goal, and whether it is armed in this process.
    pub goal: Option<(Goal, bool)>,
    /// It paused at its budget.
    pub paused: bool,
}

impl Sessions {
    /// The sessions over `store` whose models get `tools` plus the subagent tools (`agent`,
    /// `spawn_agent`, `send_message`, `interrupt_agent`, `list_agents`), which run children in
    /// this house, and the `goal` tool, which ends a session's goal. Nothing is recovered yet.
    pub fn new(
        store: Store,
        host: Arc<CoreHost>,
        mut tools: ToolRegistry,
        rules: Rules,
    ) -> Sessions {
        let mut settlements = None;
        let registry = Registry::with_tools(store, host, rules, |registry| {
            tools.add(Arc::new(AgentTool::new(registry.clone())));
            tools.add(Arc::new(GoalTool::new(registry.clone())));
            let owed = settlements.insert(Arc::new(Settlements::new(registry.clone())));
            for tool in Continuable::tools(registry.clone(), owed.clone()) {
                tools.add(tool);
            }
            tools
        });
        let settlements = settlements.expect("the registry built its tools");
        Sessions { registry, settlements, spec_writes: Default::default() }
    }

    /// Brings back every stored session that was not at rest ([`Sessions::recover_stored`]),
    /// before anything else is served.
    pub async fn recover(&self) -> Result<usize, RegistryError> {
        self.prepare().await?;
        self.recover_stored().await
    }

    /// What must run before the sessions take requests: their changes are announced and the
    /// other gateways' heard, and the leases of a shared store are renewed.
    pub async fn prepare(&self) -> Result<(), RegistryError> {
        self.registry.store().listen().await?;
        self.registry.start_publishing();
        self.registry.start_leasing();
        Ok(())
    }

    /// Brings back every stored session that was not at rest, as far as the machine holds them
    /// (the rest as others finish); then every continuable child whose parent is owed a notice
    /// settles (when idle) or is watched (when its work resumed). From then on, sessions at
    /// rest are dropped from memory as [`Rules::eviction`] says.
    pub async fn recover_stored(&self) -> Result<usize, RegistryError> {
        let count = self.registry.recover_all().await?;
        self.settlements.recover().await;
        self.registry.start_evicting();
        self.registry.start_recovering_leftovers();
        Ok(count)
    }

    /// From now on the house is stopping: sessions are no longer woken or recovered here.
    pub fn begin_shutdown(&self) {
        self.registry.begin_shutdown();
    }

    /// The store: for API keys and sign-ins, and the leases a stopping gateway gives up. Sessions
    /// are read and changed through the front door.
    pub fn store(&self) -> &Store {
        self.registry.store()
    }

    /// Waits until everything acknowledged is on disk (at shutdown).
    pub async fn flush(&self) -> Result<(), RegistryError> {
        self.registry.store().flush().await?;
        Ok(())
    }

    /// Whether every tool of [`Rules::approval_for`] exists (`all` names every one); an unknown
    /// name is an error naming the known ones.
    pub fn check_approval_for(&self) -> Result<(), String> {
        self.registry.check_approval_for()
    }

    /// The model a session gets when it names none.
    pub fn default_model(&self) -> &str {
        self.registry.default_model()
    }

    /// Every tool a session may be offered.
    pub fn tools(&self) -> &ToolRegistry {
        self.registry.tools()
    }

    /// A place among `tenant`'s held streams (an SSE stream, a held run), given back when the
    /// slot is dropped; refused past `--tenant-streams`.
    pub fn hold_stream(&self, tenant: Option<&str>) -> Result<Slot, Exceeded> {
        self.registry.admission().stream(tenant)
    }

    /// Whether `tenant` may start one more turn now: a session made for a run is not made only
    /// to be refused.
    pub fn turn_room(&self, tenant: Option<&str>) -> Result<(), Exceeded> {
        self.registry.admission().turn_room(tenant)
    }

    /// Gives `session_id` tools of its own (an editor's MCP servers), beside every session's;
    /// a name that clashes is refused.
    pub fn attach_tools(&self, session_id: &str, tools: Vec<Arc<dyn Tool>>) -> Result<(), String> {
        self.registry.session_tools().set(session_id, self.registry.tools(), tools)
    }

    /// Forgets the tools of [`Sessions::attach_tools`]; a session built later goes without them.
    pub fn forget_tools(&self, session_id: &str) {
        self.registry.session_tools().forget(session_id);
    }

    /// Which gateway runs the session (a store shared by several).
    pub async fn locate(&self, session_id: &str) -> Result<Owner, RegistryError> {
        self.registry.locate(session_id).await
    }

    /// Creates a session, or finds the one with this id: answers its row and whether it is new.
    pub async fn create(
        &self,
        session_id: String,
        spec: SessionSpec,
        tenant: Option<String>,
    ) -> Result<(SessionRow, bool), RegistryError> {
        self.registry.create(session_id, spec, tenant).await
    }

    /// Creates a session with a fresh id and opens it.
    pub async fn open_new(
        &self,
        spec: SessionSpec,
        tenant: Option<String>,
    ) -> Result<SessionHandle, RegistryError> {
        let (row, _) = self.registry.create(airlock_base::clock::fresh_id(), spec, tenant).await?;
        self.registry.resume(&row.session_id).await
    }

    /// The session, woken from its log if it is not in memory.
    pub async fn open(&self, session_id: &str) -> Result<SessionHandle, RegistryError> {
        self.registry.resume(session_id).await
    }

    /// The session, created with `spec` when there is none with this id.
    pub async fn open_or_create(
        &self,
        session_id: &str,
        spec: SessionSpec,
    ) -> Result<SessionHandle, RegistryError> {
        match self.registry.resume(session_id).await {
            Err(RegistryError::NotFound(_)) => {}
            opened => return opened,
        }
        self.registry.create(session_id.to_owned(), spec, None).await?;
        self.registry.resume(session_id).await
    }

    /// Copies a session's log up to `at_seq` (all of it when none) into a new session.
    pub async fn fork(
        &self,
        source: &str,
        at_seq: Option<u64>,
        fork_id: String,
        tenant: Option<String>,
    ) -> Result<SessionRow, RegistryError> {
        self.registry.fork(source, at_seq, fork_id, tenant).await
    }

    /// The stored row of a session.
    pub async fn row(&self, session_id: &str) -> Result<SessionRow, RegistryError> {
        let row = self.registry.store().session(session_id).await?;
        row.ok_or_else(|| RegistryError::NotFound(session_id.to_owned()))
    }

    /// A page of sessions after `cursor`, `tenant`'s only when one is named.
    pub async fn list(
        &self,
        cursor: Option<String>,
        limit: usize,
        tenant: Option<&str>,
    ) -> Result<Vec<SessionRow>, RegistryError> {
        Ok(self.registry.store().sessions(cursor, limit, tenant).await?)
    }

    /// The child sessions (subagents) of a session, oldest first.
    pub async fn children(&self, session_id: &str) -> Result<Vec<SessionRow>, RegistryError> {
        self.row(session_id).await?;
        Ok(self.registry.store().children(session_id).await?)
    }

    /// What a session is now. One at rest is not woken: it is idle with nothing pending, and
    /// its goal is disarmed; unless it paused at its budget, when work may wait in its queue.
    pub async fn overview(&self, row: SessionRow) -> Result<Overview, RegistryError> {
        let spec: SessionSpec = serde_json::from_value(row.spec.clone()).unwrap_or_default();
        let live = match self.registry.get(&row.session_id) {
            Ok(handle) => Ok(handle),
            Err(_) if spec.budget.is_some() && self.paused_at_rest(&row.session_id).await? => {
                self.open(&row.session_id).await.map_err(|_| ())
            }
            Err(_) => Err(()),
        };
        let (status, last_seq, queue, goal, paused) = match live {
            Ok(handle) => {
                let view = handle.view();
                (view.status, view.next_seq as i64 - 1, view.queue(), view.goal, view.paused)
            }
            Err(_) => {
                let last = self.registry.store().last_seq(&row.session_id).await?;
                let goal = row.goal.as_ref().and_then(|change| {
                    let driver = Driver::from_log(std::slice::from_ref(change));
                    driver.goal().map(|goal| (goal.clone(), false))
                });
                (Status::Idle, last.map_or(-1, |s| s as i64), Vec::new(), goal, false)
            }
        };
        Ok(Overview { row, spec, status, last_seq, queue, goal, paused })
    }

    /// Replaces what a session keeps as `metadata` (`None`: nothing), e.g. the title a person
    /// gave it; answers its row after the change. It is no input: a disposed session takes it.
    pub async fn set_metadata(
        &self,
        session_id: &str,
        metadata: Option<serde_json::Value>,
    ) -> Result<SessionRow, RegistryError> {
        self.rewrite_spec(session_id, |spec| spec.metadata = metadata).await
    }

    /// Changes a session's stored spec with `change`, one change at a time in this process (two
    /// gateways sharing a store may still race: the later write wins); answers its row after.
    async fn rewrite_spec(
        &self,
        session_id: &str,
        change: impl FnOnce(&mut SessionSpec),
    ) -> Result<SessionRow, RegistryError> {
        let _one_at_a_time = self.spec_writes.lock().await;
        let mut row = self.row(session_id).await?;
        let mut spec: SessionSpec = serde_json::from_value(row.spec.take()).map_err(|e| {
            let message = format!("its stored spec does not read ({e})");
            RegistryError::Unusable { session_id: session_id.to_owned(), message }
        })?;
        change(&mut spec);
        row.spec = serde_json::to_value(&spec).expect("specs serialize");
        self.registry.store().set_spec(session_id, row.spec.to_string()).await?;
        Ok(row)
    }

    /// Disposes a session: cancels it, clears its inbox (parked items too) and deletes its
    /// workspace; its log stays readable and later input is refused. Disposing it again does
    /// nothing.
    pub async fn dispose(&self, session_id: &str) -> Result<(), RegistryError> {
        let row = self.row(session_id).await?;
        if row.disposed {
            return Ok(());
        }
        if let Ok(handle) = self.registry.get(session_id) {
            // The cancel clears the inbox of a running agent; an idle agent's parked items are
            // cleared after it, so every receipt reads `canceled`, none `pending` for ever.
            use airlock_core::{CancelCause, Input};
            let cancel = Input::Cancel { cause: CancelCause::Disposed, keep_inbox: false };
            handle.feed(cancel, None).await?;
            handle.feed(Input::Clear, None).await?;
        }
        let now = airlock_base::clock::now_ms();
        self.registry.store().dispose_session(session_id, now).await?;
        self.registry.remove(session_id);
        if let Some(workspace) = self.registry.workspace_of(row.tenant.as_deref(), session_id) {
            let deleted = tokio::task::spawn_blocking(move || workspace.delete()).await;
            if let Ok(Err(e)) = deleted {
                tracing::warn!(
                    session_id,
                    "could not delete the disposed session's workspace: {e}"
                );
            }
        }
        Ok(())
    }

    /// The workspace of a session not disposed: the files its code tools wrote, which a client
    /// lists, downloads and uploads. Disposing of a session deletes it; a fork starts with an
    /// empty one.
    pub async fn workspace(&self, session_id: &str) -> Result<Workspace, RegistryError> {
        let row = self.row(session_id).await?;
        if row.disposed {
            return Err(RegistryError::Disposed(session_id.to_owned()));
        }
        let workspace = self.registry.workspace_of(row.tenant.as_deref(), session_id);
        workspace.ok_or(RegistryError::NoWorkspaces)
    }

    /// Up to `limit` of a session's events after `after`, and its last seq. The caller knows the
    /// session exists (it read its [`Sessions::row`] or opened it): an unknown id has no events.
    pub async fn events(
        &self,
        session_id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<(Vec<String>, Option<u64>), RegistryError> {
        let store = self.registry.store();
        let events = store.events(session_id, after, limit).await?;
        Ok((events, store.last_seq(session_id).await?))
    }

    /// Where one message is: waiting, claimed by a turn, or canceled (`None`: the session, which
    /// the caller knows exists, never took a message with this id).
    pub async fn receipt(
        &self,
        session_id: &str,
        message_id: &str,
    ) -> Result<Option<airlock_store::receipts::Receipt>, RegistryError> {
        Ok(self.registry.store().receipt(session_id, message_id).await?)
    }

    /// Follows an open session from the event after `after`: its log, then live.
    pub fn follow(&self, handle: &SessionHandle, after: Option<u64>) -> Follower {
        Follower::new(self.registry.store().clone(), handle.id(), Some(handle.clone()), after)
    }

    /// Follows a stored session from the event after `after`, and yields its queue once where
    /// the log read meets the live events. It is woken when it can be; a disposed one is only
    /// read.
    pub async fn watch(&self, session_id: &str, after: Option<u64>) -> Follower {
        // Subscribed before the log is read: nothing committed in between is missed. The
        // follower keeps the session's outbox, not the session: an idle session is evicted while
        // followed, and its events reach the follower again once it is woken.
        let handle = self.registry.resume(session_id).await.ok();
        Follower::with_queue(self.registry.store().clone(), session_id, handle, after)
    }
}
