//! Building a session's state from its durable log: at a restart, when it is woken after an
//! eviction (from its newest snapshot and the events after it, when its core wrote one), and
//! after a core trap or a failed commit left the instance ahead of the log (from the whole log).
//!
//! A stored session comes back into memory asleep when it can: the host's own facts (the log's
//! length, the inbox, the budget's pause) are kept beside each snapshot as its `head`, so
//! bringing a session back reads that and the events after it, whatever the length of its log
//! and the size of its conversation; the core's state is read when the session next works
//! (`Session::wake`).

use std::sync::Arc;

use airlock_core::{Config, Durable, Event, Inbox, Input, Output, Status};

use super::child::Parent;
use super::{Batch, Outbox, Session, SessionError, SessionLog};
use crate::admission::Admission;
use crate::goal::Driver;
use airlock_providers::model::ModelProvider;
use airlock_providers::tools::ToolRegistry;
use airlock_sandbox::core_host::{CoreError, CoreHost, WasmCore};
use airlock_store::Snapshot;

/// Where a session's newest snapshot stands. A snapshot costs its size to write, and saves the
/// replay of the events after it; so the next one waits until those events weigh as much, which
/// keeps the bytes written for snapshots within the bytes logged, whatever the state's size.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SnapshotMark {
    /// The log's length when it was taken (0: none).
    pub seq: u64,
    /// Its size, in bytes.
    pub len: usize,
    /// The bytes of the events logged since.
    pub logged: usize,
}

/// What the host needs of a snapshot: the log's length, the inbox, and whether the session is
/// paused at its budget. Kept by the host beside the core's state (`Snapshot::head`); an older
/// snapshot's is read from the core's state, whose fields of these names it shares.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Head<I> {
    pub next_seq: u64,
    pub inbox: I,
    #[serde(default)]
    pub paused: bool,
}

/// A core instance (none: the session is asleep) and what the log says, read once from the log.
pub(super) struct Loaded {
    pub core: Option<WasmCore>,
    pub next_seq: u64,
    pub inbox: Inbox,
    /// Where the newest snapshot stands (none: the default).
    pub snapshot: SnapshotMark,
    pub goal: Driver,
    pub parent: Parent,
    /// The log's last word on the budget is `budget/exhausted`.
    pub paused: bool,
}

impl Loaded {
    /// The state of a fresh session.
    pub fn fresh(core: WasmCore) -> Loaded {
        let (inbox, goal) = (Inbox::default(), Driver::default());
        Loaded {
            core: Some(core),
            next_seq: 0,
            inbox,
            snapshot: SnapshotMark::default(),
            goal,
            parent: Parent::default(),
            paused: false,
        }
    }

    /// Asleep, from the head kept with the newest snapshot this core wrote and the events after
    /// it; `None` when there is no such head (an older snapshot, or none), or it does not read.
    pub async fn asleep(
        host: &CoreHost,
        config: &Config,
        log: &dyn SessionLog,
    ) -> Result<Option<Loaded>, SessionError> {
        let snapshot = log.snapshot_head(&config.session_id).await?;
        let Some(snapshot) = snapshot.filter(|s| s.core == host.hash()) else { return Ok(None) };
        let head = snapshot.head.as_deref().unwrap_or_default();
        let head = match serde_json::from_str::<Head<Inbox>>(head) {
            Ok(head) => head,
            Err(error) => {
                let session_id = &config.session_id;
                tracing::warn!(session_id, %error, "the snapshot's head does not read");
                return Ok(None);
            }
        };
        let tail = log.read_from(&config.session_id, head.next_seq).await?;
        // The core state's size is known once it is read (`Session::wake`).
        Loaded::after_snapshot(None, head, &snapshot, usize::MAX, &tail).map(Some)
    }

    /// From the newest snapshot this core wrote and the events after it, else from the log.
    pub async fn load(
        host: &CoreHost,
        config: &Config,
        log: &dyn SessionLog,
    ) -> Result<Loaded, SessionError> {
        let snapshot = log.snapshot(&config.session_id).await?;
        if let Some(snapshot) = snapshot.filter(|s| s.core == host.hash()) {
            let tail = log.read_from(&config.session_id, snapshot.next_seq).await?;
            match Loaded::from_snapshot(host, config, &snapshot, &tail) {
                Ok(loaded) => return Ok(loaded),
                Err(error) => tracing::warn!(
                    session_id = %config.session_id,
                    %error,
                    "the snapshot did not restore; replaying the log"
                ),
            }
        }
        Loaded::from_log(host, config, log).await
    }

    /// A session that fell asleep while its turn waited for people, at `next_seq` (the host's):
    /// the snapshot it kept then and what its core answered for the waiting turn.
    pub async fn waiting(
        host: &CoreHost,
        config: &Config,
        log: &dyn SessionLog,
        next_seq: u64,
        waiting: &str,
    ) -> Result<Loaded, SessionError> {
        let snapshot = log.snapshot(&config.session_id).await?;
        let Some(snapshot) = snapshot.filter(|s| s.core == host.hash() && s.next_seq == next_seq)
        else {
            let text = "the snapshot taken when its turn fell asleep is gone";
            return Err(CoreError::Restore(text.into()).into());
        };
        let core = host.wake_from(config, &snapshot.state, &[], waiting)?;
        Loaded::with_core(core, &snapshot, &[])
    }

    fn from_snapshot(
        host: &CoreHost,
        config: &Config,
        snapshot: &Snapshot,
        tail: &[String],
    ) -> Result<Loaded, SessionError> {
        Loaded::with_core(host.restore_from(config, &snapshot.state, tail)?, snapshot, tail)
    }

    /// `core`, restored from `snapshot` and `tail`, with the host's facts read from them.
    fn with_core(
        core: WasmCore,
        snapshot: &Snapshot,
        tail: &[String],
    ) -> Result<Loaded, SessionError> {
        // The host needs the inbox and counters, not the history the core keeps.
        let head: Head<Inbox> = serde_json::from_str(&snapshot.state).map_err(|e| {
            CoreError::Restore(format!("the snapshot is not the core's state: {e}"))
        })?;
        let len = snapshot.state.len();
        Loaded::after_snapshot(Some(core), head, snapshot, len, tail)
    }

    /// The host's facts at `snapshot` (its `head`; `len`: the size of its core state) with the
    /// events after it folded on.
    fn after_snapshot(
        core: Option<WasmCore>,
        head: Head<Inbox>,
        snapshot: &Snapshot,
        len: usize,
        tail: &[String],
    ) -> Result<Loaded, SessionError> {
        let Head { next_seq, inbox, paused } = head;
        let durable = Durable { next_seq, inbox, paused, ..Durable::default() };
        let durable = airlock_core::fold_after(durable, tail).map_err(CoreError::Restore)?;
        // The goal as its last change left it; a snapshot records no round (a woken goal is
        // disarmed, as after a restart).
        let goal = Driver::from_log(snapshot.goal.as_slice());
        let parent = parent_in(tail).unwrap_or(Parent(snapshot.parent.clone()));
        let (next_seq, inbox, paused) = (durable.next_seq, durable.inbox, durable.paused);
        let logged = tail.iter().map(String::len).sum();
        let snapshot = SnapshotMark { seq: snapshot.next_seq, len, logged };
        Ok(Loaded { core, next_seq, inbox, snapshot, goal, parent, paused })
    }

    /// From the whole log.
    pub async fn from_log(
        host: &CoreHost,
        config: &Config,
        log: &dyn SessionLog,
    ) -> Result<Loaded, SessionError> {
        let events = log.read(&config.session_id).await?;
        let core = host.restore(config, &events)?;
        let durable = airlock_core::fold_log(&events).map_err(CoreError::Restore)?;
        let goal = Driver::from_log(&events);
        let parent = parent_in(&events).unwrap_or_default();
        let (next_seq, inbox, paused) = (durable.next_seq, durable.inbox, durable.paused);
        let snapshot = SnapshotMark::default();
        Ok(Loaded { core: Some(core), next_seq, inbox, snapshot, goal, parent, paused })
    }
}

/// The continuable parent a `subagent/descriptor` among `events` names.
fn parent_in(events: &[String]) -> Option<Parent> {
    events
        .iter()
        .filter(|json| Event::type_of(json).as_deref() == Some("subagent/descriptor"))
        .find_map(|json| Event::parse(json).ok().flatten().as_ref().and_then(Parent::named_in))
}

impl Session {
    /// Replaces the instance with one rebuilt from the durable log; in-flight work is abandoned.
    pub(super) async fn rebuild(&mut self) -> Result<(), SessionError> {
        self.generation += 1;
        self.tasks.abort_all();
        self.streams.clear();
        // The session was at work: its new instance is counted, never refused.
        (self.core, self.instance, self.waiting_turn) = (None, None, None);
        let loaded = Loaded::from_log(&self.host, &self.config, self.log.as_ref()).await?;
        self.instance = Some(self.accounting.admission.instance_forced());
        (self.core, self.next_seq) = (loaded.core, loaded.next_seq);
        *self.inbox.lock() = loaded.inbox;
        self.parent = loaded.parent;
        self.paused = loaded.paused;
        self.goal.abandon_round(); // a round in flight was abandoned with the instance
        self.compacting = false; // and so was a compaction at idle
        self.waiting.lock().expect("waiting lock").clear(); // `recover` tells them again
        // A session that owes a recovery may have a turn open in its log: not idle until then.
        let status = if self.owes_recovery { Status::Running } else { Status::Idle };
        self.set_status(status, self.next_seq);
        Ok(())
    }

    /// Whether another gateway took the session's lease: this instance is done.
    pub fn fenced(&self) -> bool {
        self.fenced
    }

    /// Whether a failed commit left the session owing a recovery ([`Session::repair`]).
    pub fn owes_recovery(&self) -> bool {
        self.owes_recovery
    }

    /// After a failed commit: recovers the rebuilt instance as a restart would (an open turn is
    /// closed `interrupted`, accepted work runs). Until that commits, every input is refused
    /// with the storage error.
    pub async fn repair(&mut self) -> Result<(), SessionError> {
        if !self.owes_recovery {
            return Ok(());
        }
        self.wake(false).await?;
        self.recover().await
    }

    /// Gives an instance rebuilt from the whole log `recover`, when the session owes it.
    pub(super) async fn recover(&mut self) -> Result<(), SessionError> {
        if !self.owes_recovery {
            return Ok(());
        }
        let mut batch = Batch::default();
        if let Err(trap) = self.decide(Input::Recover, &mut batch) {
            self.owes_recovery = false;
            return Err(self.recover_from_trap(trap).await);
        }
        let starts_a_turn = batch.outputs.iter().any(|o| matches!(o, Output::Status(_)));
        self.commit(batch, Vec::new()).await?;
        self.owes_recovery = false;
        if !starts_a_turn {
            self.set_status(Status::Idle, self.next_seq);
        }
        Ok(())
    }
}

/// What a session is made of.
pub struct SessionParts {
    /// The compiled core.
    pub host: Arc<CoreHost>,
    /// Its settings; `tools` is filled from `tools`.
    pub config: Config,
    /// Its models: its own, then its fallbacks ([`Config::fallbacks`]), one for each route of
    /// a model request.
    pub models: Vec<Arc<dyn ModelProvider>>,
    /// The tools its model sees.
    pub tools: ToolRegistry,
    /// Where its events go.
    pub log: Arc<dyn SessionLog>,
    /// Where its notices go (an evicted session's outbox when it is woken, so its followers see
    /// no gap).
    pub outbox: Arc<Outbox>,
    /// What its work counts against.
    pub accounting: Accounting,
    /// What it may spend (`None`: no limit).
    pub budget: Option<super::Budget>,
    /// What responses cost, by model.
    pub prices: Arc<airlock_providers::model::ModelTable>,
    /// Its workspace, which code tools see (none: the gateway keeps none).
    pub workspace: Option<airlock_providers::tools::Workspace>,
    /// Where its committed events also go (the trace exporter), if anywhere.
    pub tap: Option<super::Tap>,
}

/// What a session's work counts against: the gateway's [`Admission`], its tenant, and where it
/// stands in its tree of subagents. Fixed for the session's life.
#[derive(Clone, Default)]
pub struct Accounting {
    /// The gateway's accounting.
    pub admission: Arc<Admission>,
    /// The tenant whose session it is (a subagent: its root's).
    pub tenant: Option<Arc<str>>,
    /// The root session above a subagent; `None` for a root session.
    pub root: Option<Arc<str>>,
    /// How many levels below its root it is (0: a root session).
    pub depth: u32,
}

impl SessionParts {
    pub(super) fn config(&self) -> Config {
        Config { tools: self.tools.specs(), ..self.config.clone() }
    }
}
