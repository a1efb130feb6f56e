//! A live session: its core instance, its log, and the work the core asked for.
//!
//! [`Session::feed`] hands one input to the core and handles the outputs in three passes:
//! 1. the pre-step policy answers at once (enter everything) and the core goes on, so one input
//!    yields every event it leads to;
//! 2. the events are appended to the log in one commit (with the input's idempotency record);
//! 3. only then are subscribers told ([`Notice`]s, in output order: events, status, queue) and
//!    the effects started: model streams, tool calls and retry timers run as tasks whose answers
//!    come back through [`Session::next_answer`]. Nothing outside sees what is not durable.
//!
//! If the core traps, the instance is dropped, in-flight work is abandoned, and a fresh instance
//! is rebuilt from the log and given `recover`.

pub mod child;
mod continuation;
mod effects;
mod load;
mod log;
mod notice;
mod observe;
mod sleep;

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use airlock_core::{CancelCause, Config, Event, Inbox, Input, Output, Status, StepDecision};

use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};

pub use log::{MemoryLog, SessionLog, seq_of};
pub use notice::{Announced, Notice, Outbox, QueueItem};
pub use sleep::SNAPSHOT_EVERY;

use crate::clock::now_ms;
use crate::core_host::{CoreError, CoreHost, WasmCore};
use crate::goal::{Driver, GoalError};
use crate::model::ModelProvider;
use crate::receipts::Marker;
use crate::store::{IdempotencyRecord, Index, StoreError};
use crate::tools::ToolRegistry;
use child::Parent;
use load::Loaded;
use observe::TurnCancel;

/// Why a session could not go on.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The core trapped on this input; the session was rebuilt from its log and the input lost.
    #[error(
        "{0}; the session was rebuilt from its log and this input was not applied, so send it again"
    )]
    Trapped(CoreError),
    /// The core trapped again while recovering: the core itself is broken.
    #[error("the core trapped again while recovering from its log ({0}); the core build is faulty")]
    Broken(CoreError),
    /// The core could not be created or restored.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// The log refused or failed an append; the session was rebuilt from what is durable.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A goal request does not fit the goal.
    #[error(transparent)]
    Goal(#[from] GoalError),
    /// The session's actor is gone (the gateway is shutting down).
    #[error("the session is shutting down; send the input again after the gateway restarts")]
    Gone,
    /// The session is a continuable subagent: work for it comes from its parent only.
    #[error(
        "session {child:?} is a subagent of session {parent:?}: it takes work only from its parent (send_message), so it cannot run a goal of its own"
    )]
    ChildSession {
        /// The subagent.
        child: String,
        /// Its parent.
        parent: String,
    },
}

/// An input the core refused, with its reason.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    /// `unknown-message`, `duplicate-message-id`, `not-queued` or `bad-input`.
    pub code: String,
    /// What was wrong.
    pub message: String,
}

/// What one fed input did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fed {
    /// The core refused the input (nothing was written).
    pub refusal: Option<Refusal>,
    /// Seq of the first event the input wrote (for a send: its insert splice).
    pub first_seq: Option<u64>,
}

/// An idempotency key to record with the events of a send, answered `{messageId, seq}`.
#[derive(Clone, Debug)]
pub struct IdempotencyKey {
    /// The client's key.
    pub key: String,
    /// A hash of the request.
    pub request_hash: String,
    /// The message being sent.
    pub message_id: String,
}

/// An input from a task, tagged with the instance generation it was started for. Boxed: a
/// channel keeps a block of slots per session, and an idle session should hold little.
type Answer = Box<(u64, Input)>;

/// One session and everything in flight for it.
pub struct Session {
    host: Arc<CoreHost>,
    config: Config,
    /// The core instance; `None` while the session sleeps (see `sleep.rs`).
    core: Option<WasmCore>,
    log: Arc<dyn SessionLog>,
    model: Arc<dyn ModelProvider>,
    tools: ToolRegistry,
    status: Status,
    /// Where notices go, with what subscribers have been told (changed together under a lock).
    outbox: Arc<Outbox>,
    next_seq: u64,
    /// The inbox as the log says, for queue snapshots without entering the core.
    inbox: Inbox,
    /// The inbox and turn as committed, to index what each commit does to receipts.
    marker: Marker,
    /// The log's length when the newest snapshot was taken.
    snapshot_seq: u64,
    answers: (mpsc::UnboundedSender<Answer>, mpsc::UnboundedReceiver<Answer>),
    generation: u64,
    tasks: JoinSet<()>,
    streams: BTreeMap<u64, AbortHandle>,
    /// The seq of the last event before the first transition to idle not yet taken.
    went_idle: Option<u64>,
    /// Tells the tool calls of the current turn that the session was cancelled.
    cancel: TurnCancel,
    /// The goal and its rounds.
    goal: Driver,
    /// The parent of a continuable child, whose inbox only that parent may fill (see [`child`]).
    parent: Parent,
}

impl Session {
    /// A fresh session whose model sees every tool of `parts.tools`.
    pub fn create(parts: SessionParts) -> Result<Session, SessionError> {
        let config = parts.config();
        let core = parts.host.create(&config, now_ms())?;
        Ok(Self::assemble(parts, config, Loaded::fresh(core)))
    }

    /// A session rebuilt from its log (after a restart). Feed it [`Input::Recover`] next.
    pub async fn restore(parts: SessionParts) -> Result<Session, SessionError> {
        let config = parts.config();
        let loaded = Loaded::load(&parts.host, &config, parts.log.as_ref()).await?;
        Ok(Self::assemble(parts, config, loaded))
    }

    fn assemble(parts: SessionParts, config: Config, loaded: Loaded) -> Session {
        let SessionParts { host, model, tools, log, outbox, .. } = parts;
        outbox.reset(loaded.next_seq);
        Session {
            host,
            config,
            core: Some(loaded.core),
            log,
            model,
            tools,
            status: Status::Idle,
            outbox,
            next_seq: loaded.next_seq,
            marker: Marker::new(loaded.inbox.clone(), loaded.turns),
            snapshot_seq: loaded.snapshot_seq,
            inbox: loaded.inbox,
            answers: mpsc::unbounded_channel(),
            generation: 0,
            tasks: JoinSet::new(),
            streams: BTreeMap::new(),
            went_idle: None,
            cancel: TurnCancel::new(),
            goal: loaded.goal,
            parent: loaded.parent,
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

    /// The parent of a continuable child (whose inbox only that parent may fill).
    pub fn parent(&self) -> Option<&str> {
        self.parent.0.as_deref()
    }

    /// Pending input, `next-step` first.
    pub fn queue(&self) -> Vec<QueueItem> {
        notice::queue_items(&self.inbox)
    }

    /// Where committed events, status changes and queue snapshots are announced, with what
    /// subscribers have been told so far.
    pub fn outbox(&self) -> Arc<Outbox> {
        self.outbox.clone()
    }

    /// The log so far.
    pub async fn events(&self) -> Result<Vec<String>, StoreError> {
        self.log.read(&self.config.session_id).await
    }

    /// Where the agent last became idle, once: the seq of the last event before the first
    /// transition to idle since the previous call. Owners of intervals end them there.
    pub fn take_went_idle(&mut self) -> Option<u64> {
        self.went_idle.take()
    }

    /// The core instance of a session that is awake (for tests that need to reach into it, e.g.
    /// to lower its fuel).
    pub fn core_mut(&mut self) -> &mut WasmCore {
        self.core.as_mut().expect("the session is awake")
    }

    /// Feeds one input: the core decides, the events are committed, then effects start.
    pub async fn feed(&mut self, input: Input) -> Result<Fed, SessionError> {
        self.feed_keyed(input, None).await
    }

    /// [`Session::feed`] for a send whose idempotency key is recorded in the same commit. A
    /// continuable child refuses a send that is not its parent's to make (see [`child`]).
    pub async fn feed_keyed(
        &mut self,
        input: Input,
        key: Option<IdempotencyKey>,
    ) -> Result<Fed, SessionError> {
        if let Some(parent) = &self.parent.0
            && let Err(refusal) = child::admits(self.id(), parent, &input, self.status)
        {
            return Ok(Fed { refusal: Some(refusal), first_seq: None });
        }
        self.feed_all(vec![input], key).await
    }

    /// Feeds several inputs (e.g. the model chunks that arrived together) with one commit.
    pub async fn feed_all(
        &mut self,
        inputs: Vec<Input>,
        key: Option<IdempotencyKey>,
    ) -> Result<Fed, SessionError> {
        if let Some(Input::Cancel { cause, .. }) = inputs.first() {
            match cause {
                CancelCause::Disposed => self.goal.disarm(),
                _ => self.goal.cancelled(),
            }
            self.cancel.cancel(*cause);
        }
        self.wake().await?;
        let mut queue = VecDeque::from(inputs);
        let mut batch = Batch::default();
        let mut trapped = None;
        while let Some(input) = queue.pop_front() {
            let outputs = match self.core_mut().handle(input, now_ms()) {
                Ok(outputs) => outputs,
                Err(error) if trapped.is_none() => {
                    self.rebuild().await?;
                    trapped = Some(error);
                    batch = Batch::default();
                    queue = VecDeque::from([Input::Recover]);
                    continue;
                }
                Err(error) => return Err(SessionError::Broken(error)),
            };
            for output in outputs {
                match output {
                    Output::DecideStep { decision_id, claimed, .. } => {
                        // The default pre-step policy: enter everything claimed.
                        let ids = claimed.into_iter().map(|m| m.id).collect();
                        queue.push_back(Input::Decided {
                            decision_id,
                            decision: StepDecision::Enter(ids),
                        });
                    }
                    Output::Refused { code, message } => {
                        batch.refusal = Some(Refusal { code, message })
                    }
                    other => batch.outputs.push(other),
                }
            }
        }
        let first_seq = self.commit(&mut batch, key).await?;
        self.start_effects(batch.outputs);
        match trapped {
            Some(error) => Err(SessionError::Trapped(error)),
            None => Ok(Fed { refusal: batch.refusal, first_seq }),
        }
    }

    /// Appends the batch's events in one commit, then announces them.
    async fn commit(
        &mut self,
        batch: &mut Batch,
        key: Option<IdempotencyKey>,
    ) -> Result<Option<u64>, SessionError> {
        let first_seq = self.append(batch, key).await?;
        self.announce(&batch.outputs, first_seq.unwrap_or(self.next_seq));
        Ok(first_seq)
    }

    /// Appends the batch's events, with the idempotency record of a keyed send, in one commit;
    /// answers the first event's seq. When the commit fails the core is ahead of the durable log,
    /// so it is rebuilt from what was committed and nothing is announced.
    async fn append(
        &mut self,
        batch: &mut Batch,
        key: Option<IdempotencyKey>,
    ) -> Result<Option<u64>, SessionError> {
        let events: Vec<String> = batch
            .outputs
            .iter()
            .filter_map(|o| match o {
                Output::AppendEvent(json) => Some(json.clone()),
                _ => None,
            })
            .collect();
        let first_seq = (!events.is_empty()).then_some(self.next_seq);
        if let Some(first) = first_seq {
            let record = key.map(|key| IdempotencyRecord {
                key: key.key,
                session_id: self.config.session_id.clone(),
                request_hash: key.request_hash,
                response: serde_json::json!({"messageId": key.message_id, "seq": first})
                    .to_string(),
                created_at: now_ms(),
            });
            let count = events.len() as u64;
            let index = self.index(&events, &batch.outputs, record);
            if let Err(error) = self.log.append(&self.config.session_id, events, index).await {
                // The core is ahead of the durable log: rebuild it from what was committed.
                batch.outputs.clear();
                self.rebuild().await?;
                return Err(error.into());
            }
            self.next_seq = first + count;
        }
        Ok(first_seq)
    }

    /// What a commit of `events` keeps beside them: the idempotency record, the receipt changes
    /// of its splices, and whether it leaves the session at rest (idle, inbox empty).
    fn index(
        &mut self,
        events: &[String],
        outputs: &[Output],
        idempotency: Option<IdempotencyRecord>,
    ) -> Index {
        let mut marks = Vec::new();
        for json in events {
            let kind = Event::type_of(json);
            if matches!(kind.as_deref(), Some("agent/inbox/spliced" | "turn/start"))
                && let Ok(Some(event)) = Event::parse(json)
            {
                marks.extend(self.marker.marks(&event));
            }
        }
        let status = outputs.iter().rev().find_map(|o| match o {
            Output::Status(status) => Some(*status),
            _ => None,
        });
        let idle = status.unwrap_or(self.status) == Status::Idle;
        let at_rest = idle && self.marker.inbox().pending().next().is_none();
        Index { idempotency, marks, at_rest }
    }

    /// Shows each committed event to the parts that follow the log, then tells subscribers about
    /// events, status changes and the queue, in output order; `first` is the first event's seq.
    fn announce(&mut self, outputs: &[Output], first: u64) {
        let mut spliced = false;
        let mut next = first;
        for output in outputs {
            match output {
                Output::AppendEvent(json) => {
                    next += 1;
                    spliced |= self.observe(json);
                    self.outbox.event(Arc::from(json.as_str()), next);
                }
                Output::Status(status) => {
                    self.set_status(*status, next);
                }
                _ => {}
            }
        }
        if spliced {
            self.outbox.send(Notice::Queue(Arc::new(self.queue())));
        }
    }

    /// Waits for the next answer from a task started for the current instance.
    pub async fn next_answer(&mut self) -> Input {
        loop {
            let answer = self.answers.1.recv().await.expect("the session holds a sender");
            if let Some(input) = self.current(*answer) {
                return input;
            }
        }
    }

    /// The answers that have already arrived (at most `max`), without waiting.
    pub fn ready_answers(&mut self, max: usize) -> Vec<Input> {
        let mut ready = Vec::new();
        while ready.len() < max {
            let Ok(answer) = self.answers.1.try_recv() else { break };
            ready.extend(self.current(*answer));
        }
        ready
    }

    /// The input of an answer meant for the current instance (not one that trapped).
    fn current(&mut self, (generation, input): (u64, Input)) -> Option<Input> {
        while self.tasks.try_join_next().is_some() {}
        if generation != self.generation {
            return None;
        }
        if let Input::ModelDone(id) | Input::ModelFailed { request_id: id, .. } = &input {
            self.streams.remove(id);
        }
        Some(input)
    }

    /// Feeds answers until the agent is idle.
    pub async fn run_until_idle(&mut self) -> Result<(), SessionError> {
        while self.status == Status::Running {
            let answer = self.next_answer().await;
            self.feed(answer).await?;
        }
        Ok(())
    }

    /// Records and announces a status change; `next` is the seq the next event will get.
    fn set_status(&mut self, status: Status, next: u64) {
        if status == self.status {
            return;
        }
        self.status = status;
        if status == Status::Idle && self.went_idle.is_none() {
            self.went_idle = next.checked_sub(1);
        }
        self.outbox.status_changed(status);
    }
}

/// What a session is made of.
pub struct SessionParts {
    /// The compiled core.
    pub host: Arc<CoreHost>,
    /// Its settings; `tools` is filled from `tools`.
    pub config: Config,
    /// Its model.
    pub model: Arc<dyn ModelProvider>,
    /// The tools its model sees.
    pub tools: ToolRegistry,
    /// Where its events go.
    pub log: Arc<dyn SessionLog>,
    /// Where its notices go (an evicted session's outbox when it is woken, so its followers see
    /// no gap).
    pub outbox: Arc<Outbox>,
}

impl SessionParts {
    fn config(&self) -> Config {
        Config { tools: self.tools.specs(), ..self.config.clone() }
    }
}

/// What one feed produced, before it is committed.
#[derive(Default)]
struct Batch {
    outputs: Vec<Output>,
    refusal: Option<Refusal>,
}
