//! A live session: its core instance, its log, and the work the core asked for.
//!
//! [`Session::feed`] hands one input to the core and handles the outputs in three passes:
//! 1. the pre-step policy answers at once (enter everything) and the core goes on, so one input
//!    yields every event it leads to;
//! 2. the events are appended to the log in one commit (with the input's idempotency record);
//! 3. only then are subscribers told ([`Notice`]s, in output order: events, status, queue) and
//!    the effects started: model streams, tool calls and retry timers run as tasks whose answers
//!    come back through [`Session::next_answers`]. Nothing outside sees what is not durable.
//!
//! If the core traps, the instance is dropped, in-flight work is abandoned, and a fresh instance
//! is rebuilt from the log and given `recover`.

mod budget;
pub mod child;
mod chunks;
mod continuation;
mod effects;
mod error;
mod feed;
mod hooks;
mod load;
mod log;
mod measure;
mod notice;
mod observe;
mod outcome;
mod sleep;
mod tap;
mod work;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use airlock_core::{Config, Input, Status, WaitingCall};

use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};

pub(crate) use budget::cost;
pub use budget::{Budget, BudgetState, Spend};
pub use error::SessionError;
pub use log::{SessionLog, seq_of};
pub use notice::{
    Announced, Committed, Notice, Outbox, QueueItem, QueueSnapshot, SharedInbox, queue_items,
};

use crate::admission::{Instance, Slot};
use crate::goal::Driver;
use airlock_base::clock::now_ms;
use airlock_providers::model::{ModelProvider, ModelTable};
use airlock_providers::tools::ToolRegistry;
use airlock_sandbox::core_host::{CoreHost, WasmCore};
use child::Parent;
use effects::Batch;
pub use load::{Accounting, SessionParts};
use load::{Loaded, SnapshotMark};
use observe::TurnCancel;
pub use outcome::{Fed, IdempotencyKey, Refusal, RefusalCode};
pub use tap::{Tap, Tapped};
use work::Held;
pub use work::Work;

/// Inputs from a task that arrived together, tagged with the instance generation it was started
/// for. Small (the inputs are on the heap): a channel keeps a block of slots per session, and an
/// idle session should hold little.
type Answer = (u64, Vec<Input>);

/// One session and everything in flight for it.
pub struct Session {
    host: Arc<CoreHost>,
    config: Config,
    /// The core instance; `None` while the session sleeps (see `sleep.rs`).
    core: Option<WasmCore>,
    /// The core instance as the gateway counts it ([`crate::admission`]).
    instance: Option<Instance>,
    /// What its work counts against.
    accounting: Accounting,
    /// The slots it holds while at work: from the send that woke it (or taken when it started
    /// by itself) until it is idle again.
    held: Option<Held>,
    log: Arc<dyn SessionLog>,
    /// Its own model, then its fallbacks: a model request's `route` picks one.
    models: Vec<Arc<dyn ModelProvider>>,
    /// The provider and model the log last named in `request/context` (its own model until one
    /// is named): what a response's usage is credited to.
    answering: (String, String),
    tools: ToolRegistry,
    status: Status,
    /// Where notices go, with what subscribers have been told (changed together under a lock).
    outbox: Arc<Outbox>,
    next_seq: u64,
    /// The inbox as the log says, for queue snapshots without entering the core.
    inbox: SharedInbox,
    /// Where the newest snapshot stands.
    snapshot: SnapshotMark,
    answers: (mpsc::UnboundedSender<Answer>, mpsc::UnboundedReceiver<Answer>),
    generation: u64,
    tasks: JoinSet<()>,
    /// The running turn's timers (retry backoff, the turn's deadline): dropped once it is idle.
    timers: Vec<tokio::task::AbortHandle>,
    streams: BTreeMap<u64, AbortHandle>,
    /// The seq of the last event before the first transition to idle not yet taken.
    went_idle: Option<u64>,
    /// The owned intervals open now (their message and first seq): the commit that ends them at
    /// the next whole-agent idle tells webhooks `run.completed` for each.
    owned: Vec<(String, u64)>,
    /// A compaction at idle runs: idle, but busy (awake, owners waiting) until it settles.
    compacting: bool,
    /// The calls of the running step that wait for a person or the client, as the core said:
    /// changed with the commit that logs why, before it is announced.
    waiting: Arc<Mutex<Vec<WaitingCall>>>,
    /// While it sleeps with its turn waiting for people: what brings its core back there, with
    /// the snapshot taken when it fell asleep (see `sleep.rs`).
    waiting_turn: Option<String>,
    /// A commit failed: the instance was rebuilt from what is durable and, as after a restart,
    /// owes `recover` before it takes anything else ([`Session::repair`]).
    owes_recovery: bool,
    /// Another gateway took the session's lease: nothing more may be appended from here.
    fenced: bool,
    /// Tells the tool calls of the current turn that the session was cancelled.
    cancel: TurnCancel,
    /// Where its committed events also go (the trace exporter), if anywhere.
    tap: Option<Tap>,
    /// The goal and its rounds.
    goal: Driver,
    /// How soon the next goal round may start.
    pace: continuation::Pace,
    /// The parent of a continuable child, whose inbox only that parent may fill (see [`child`]).
    parent: Parent,
    /// What it may spend (`None`: no limit); its pre-step policy pauses it there.
    budget: Option<Budget>,
    /// What its committed responses spent: read from the store when a budget first needs it,
    /// then counted commit by commit.
    spent: Option<Spend>,
    /// Its log's last word on the budget is `budget/exhausted`: waking input starts nothing.
    paused: bool,
    /// What responses cost.
    prices: Arc<ModelTable>,
    /// Its workspace, handed to every tool call.
    workspace: Option<airlock_providers::tools::Workspace>,
}

impl Session {
    /// A fresh session whose model sees every tool of `parts.tools`; refused past the gateway's
    /// ceiling of core instances.
    pub fn create(parts: SessionParts) -> Result<Session, SessionError> {
        let instance = parts.accounting.admission.instance()?;
        let config = parts.config();
        let core = parts.host.create(&config, now_ms())?;
        let mut session = Self::assemble(parts, config, Loaded::fresh(core), Some(instance));
        session.spent = Some(Spend::default());
        Ok(session)
    }

    /// A session rebuilt from its log (after a restart or an eviction): asleep when its newest
    /// snapshot kept the host's head (its core is read when it next works), else awake. Feed it
    /// [`Input::Recover`] next if its log says it was not at rest. For `work` that is new, an
    /// instance must fit under the gateway's ceiling.
    pub async fn restore(parts: SessionParts, work: Work) -> Result<Session, SessionError> {
        let config = parts.config();
        let (log, host) = (parts.log.as_ref(), &parts.host);
        let (loaded, instance) = match Loaded::asleep(host, &config, log).await? {
            Some(loaded) => (loaded, None),
            None => {
                let instance = parts.accounting.admission.instance_for(work == Work::New)?;
                (Loaded::load(host, &config, log).await?, Some(instance))
            }
        };
        let mut session = Self::assemble(parts, config, loaded, instance);
        if session.budget.is_some() {
            session.count_spend().await?;
        }
        Ok(session)
    }

    fn assemble(
        parts: SessionParts,
        config: Config,
        loaded: Loaded,
        instance: Option<Instance>,
    ) -> Session {
        let SessionParts {
            host,
            models,
            tools,
            log,
            outbox,
            accounting,
            budget,
            prices,
            workspace,
            tap,
            ..
        } = parts;
        outbox.reset(loaded.next_seq);
        if loaded.core.is_none() {
            airlock_base::metrics::global().asleep.inc();
        }
        Session {
            host,
            config,
            core: loaded.core,
            instance,
            accounting,
            held: None,
            log,
            answering: (models[0].provider().to_owned(), models[0].model().to_owned()),
            models,
            tools,
            status: Status::Idle,
            outbox,
            next_seq: loaded.next_seq,
            snapshot: loaded.snapshot,
            inbox: SharedInbox::new(loaded.inbox),
            answers: mpsc::unbounded_channel(),
            generation: 0,
            tasks: JoinSet::new(),
            timers: Vec::new(),
            streams: BTreeMap::new(),
            went_idle: None,
            owned: Vec::new(),
            compacting: false,
            waiting: Arc::default(),
            waiting_turn: None,
            owes_recovery: false,
            fenced: false,
            cancel: TurnCancel::new(),
            tap,
            goal: loaded.goal,
            pace: continuation::Pace::default(),
            parent: loaded.parent,
            budget,
            spent: None,
            paused: loaded.paused,
            prices,
            workspace,
        }
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.config.session_id
    }

    /// Whole-agent status.
    pub fn status(&self) -> Status {
        self.status
    }

    /// The seq the next event gets (the log's length).
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// What its work counts against.
    pub fn accounting(&self) -> &Accounting {
        &self.accounting
    }

    /// The parent of a continuable child (whose inbox only that parent may fill).
    pub fn parent(&self) -> Option<&str> {
        self.parent.0.as_deref()
    }

    /// Pending input, `next-step` first.
    #[cfg(test)]
    pub fn queue(&self) -> Vec<QueueItem> {
        self.inbox.items()
    }

    /// The inbox as the log says, kept current after each commit.
    pub fn inbox(&self) -> SharedInbox {
        self.inbox.clone()
    }

    /// Where committed events, status changes and queue snapshots are announced, with what
    /// subscribers have been told so far.
    pub fn outbox(&self) -> Arc<Outbox> {
        self.outbox.clone()
    }

    /// The log so far.
    #[cfg(test)]
    pub async fn events(&self) -> Result<Vec<String>, airlock_store::StoreError> {
        self.log.read(&self.config.session_id).await
    }

    /// The calls of the running step that wait for an answer, kept current after each commit.
    pub fn waiting(&self) -> Arc<Mutex<Vec<WaitingCall>>> {
        self.waiting.clone()
    }

    /// Whether a compaction at idle runs: the agent is idle but not at rest.
    pub fn compacting(&self) -> bool {
        self.compacting
    }

    /// Where the agent last became idle, once: the seq of the last event before the first
    /// transition to idle since the previous call. Owners of intervals end them there.
    pub fn take_went_idle(&mut self) -> Option<u64> {
        self.went_idle.take()
    }

    /// An owned interval opened by `message_id` at `first_seq`: the idle that ends it is
    /// reported as its run's completion.
    pub(crate) fn own(&mut self, message_id: String, first_seq: u64) {
        self.owned.push((message_id, first_seq));
    }

    /// The owned intervals ended without an idle commit (their input left an idle agent idle):
    /// no run is reported for them.
    pub(crate) fn forget_owned(&mut self) {
        self.owned.clear();
    }

    /// The core instance of a session that is awake (for tests that need to reach into it, e.g.
    /// to lower its fuel).
    pub fn core_mut(&mut self) -> &mut WasmCore {
        self.core.as_mut().expect("the session is awake")
    }

    /// Feeds answers until the agent is idle (a session driven without an actor).
    #[cfg(test)]
    pub async fn run_until_idle(&mut self) -> Result<(), SessionError> {
        while self.status == Status::Running {
            let answers = self.next_answers().await;
            self.feed_all(answers, None).await?;
        }
        Ok(())
    }

    /// Records and announces a status change; `next` is the seq the next event will get. A
    /// session at work holds its slots: those its waking send was admitted with, else (it
    /// started by itself: a recovery, a child's notice) slots taken past the limits.
    fn set_status(&mut self, status: Status, next: u64) {
        if status == self.status {
            return;
        }
        self.status = status;
        match status {
            Status::Running if self.held.is_none() => {
                let Accounting { admission, tenant, root, .. } = &self.accounting;
                let turn = admission.turn_forced(tenant.as_deref());
                let descendant = root
                    .as_deref()
                    .map_or_else(Slot::free, |root| admission.descendant_forced(root));
                self.held = Some(Held { _turn: turn, _descendant: descendant });
            }
            Status::Running => {}
            Status::Idle => {
                if self.went_idle.is_none() {
                    self.went_idle = next.checked_sub(1);
                }
                self.release_if_idle();
            }
        }
        self.outbox.status_changed(status);
    }
}
