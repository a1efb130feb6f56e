//! One task per live session: it owns the [`Session`] and serializes everything done to it,
//! client inputs and the answers of its own model streams, tool calls and timers.
//!
//! A [`SessionHandle`] is the cheap, cloneable way in: it feeds inputs (answered once their events
//! are committed), subscribes to notices, and reads a view of status and queue that the actor
//! keeps current without a round trip.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_core::{Input, Status};
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::goal::{Goal, GoalOp};
use crate::session::{
    Accounting, Announced, Budget, BudgetState, Fed, IdempotencyKey, Notice, Outbox, QueueItem,
    Session, SessionError, Work,
};
use airlock_base::clock::now_ms;
use airlock_store::Store;
use owners::Owners;
pub use view::View;

mod group;
mod owners;
mod steps;
mod task;
mod view;

/// How long an idle session keeps its core instance before it sleeps (see `session/sleep.rs`).
pub const SLEEP_AFTER: Duration = Duration::from_secs(2);

/// How long an idempotency key is honoured.
pub const IDEMPOTENCY_TTL_MS: u64 = 24 * 60 * 60 * 1000;

/// What the actor answers for an input.
#[derive(Debug)]
pub enum Admission {
    /// The core took the input (or refused it: see [`Fed::refusal`]).
    Fed(Fed),
    /// The idempotency key was seen before with the same request: its first answer (JSON).
    Replayed(String),
    /// The idempotency key was seen before with another request or session.
    KeyConflict,
}

enum Command {
    Feed {
        /// `None`: nothing to feed, only an owner to register (see [`SessionHandle::idle`]).
        input: Option<Input>,
        key: Option<IdempotencyKey>,
        /// Set by an owner: told where the interval that starts with this input ends.
        owner: Option<oneshot::Sender<u64>>,
        /// New work is admitted against the limits as it is fed.
        work: Work,
        reply: oneshot::Sender<Result<Admission, SessionError>>,
    },
    Goal {
        op: GoalOp,
        reply: oneshot::Sender<Result<Option<(Goal, bool)>, SessionError>>,
    },
    Budget {
        budget: Option<Budget>,
        reply: oneshot::Sender<Result<BudgetState, SessionError>>,
    },
}

/// Resolves with the seq of the last event before the next whole-agent idle after an owned input
/// (its interval's `lastSeq`); fails only when the session's actor is gone.
pub type IntervalEnd = oneshot::Receiver<u64>;

/// The way into a live session.
#[derive(Clone)]
pub struct SessionHandle {
    id: Arc<str>,
    /// Boxed: the channel keeps a block of slots per session, and an idle session should hold
    /// little.
    commands: mpsc::Sender<Box<Command>>,
    outbox: Arc<Outbox>,
    view: Arc<Mutex<View>>,
    /// When the session was last given something to do (ms since the epoch).
    used: Arc<AtomicU64>,
    /// Whose session it is and where it stands in its tree.
    accounting: Accounting,
}

impl SessionHandle {
    /// Starts the actor task for a session.
    pub(crate) fn spawn(mut session: Session, store: Option<Store>) -> SessionHandle {
        session.take_went_idle(); // idle before any owner existed ends no interval
        let view = Arc::new(Mutex::new(View::of(&session)));
        let (commands, inbox) = mpsc::channel::<Box<Command>>(256);
        let handle = SessionHandle {
            id: Arc::from(session.id()),
            commands,
            outbox: session.outbox(),
            view: view.clone(),
            used: Arc::new(AtomicU64::new(now_ms())),
            accounting: session.accounting().clone(),
        };
        tokio::spawn(task::run(session, store, inbox, view));
        handle
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The tenant whose session it is, if any (a subagent: its root's).
    pub fn tenant(&self) -> Option<&str> {
        self.accounting.tenant.as_deref()
    }

    /// The root session above a subagent; `None` for a root session.
    pub(crate) fn root(&self) -> Option<&str> {
        self.accounting.root.as_deref()
    }

    /// How many levels below its root session it is (0: a root session).
    pub(crate) fn depth(&self) -> u32 {
        self.accounting.depth
    }

    /// Whole-agent status, as of now.
    pub fn status(&self) -> Status {
        self.outbox.status()
    }

    /// Feeds an input that finishes admitted work (a cancel, a queue edit, an answer, a child's
    /// notice); answers once its events are committed.
    pub(crate) async fn feed(
        &self,
        input: Input,
        key: Option<IdempotencyKey>,
    ) -> Result<Admission, SessionError> {
        self.command(Some(input), key, None, Work::Admitted).await
    }

    /// Feeds new work (a client's send, a model's subagent prompt), admitted against the limits
    /// as it is fed: past one it is refused with `limit-exceeded` ([`crate::admission`]).
    pub(crate) async fn feed_new(
        &self,
        input: Input,
        key: Option<IdempotencyKey>,
    ) -> Result<Admission, SessionError> {
        self.command(Some(input), key, None, Work::New).await
    }

    /// Resolves at the next whole-agent idle (at once when idle) with the log's last seq then.
    pub async fn idle(&self) -> Result<u64, SessionError> {
        let (owner, end) = oneshot::channel();
        self.command(None, None, Some(owner), Work::Admitted).await?;
        end.await.map_err(|_| SessionError::Gone)
    }

    /// Resolves once the actor has finished what it was doing: a batch of events being fed is
    /// committed and announced whole, and [`SessionHandle::view`] shows what it left.
    pub async fn settled(&self) -> Result<(), SessionError> {
        self.command(None, None, None, Work::Admitted).await.map(drop)
    }

    /// Feeds new work as the owner of the interval it starts: from its first event through the
    /// next whole-agent idle. The end is told even if the agent goes idle before this returns.
    /// With an idempotency key seen before for the same request, nothing is fed: the answer is
    /// the first one's, and the end is that of the interval it started.
    pub(crate) async fn feed_owned(
        &self,
        input: Input,
        key: Option<IdempotencyKey>,
    ) -> Result<(Admission, IntervalEnd), SessionError> {
        let (owner, end) = oneshot::channel();
        let admission = self.command(Some(input), key, Some(owner), Work::New).await?;
        Ok((admission, end))
    }

    async fn command(
        &self,
        input: Option<Input>,
        key: Option<IdempotencyKey>,
        owner: Option<oneshot::Sender<u64>>,
        work: Work,
    ) -> Result<Admission, SessionError> {
        self.touch();
        let (reply, answer) = oneshot::channel();
        let command = Command::Feed { input, key, owner, work, reply };
        self.commands.send(Box::new(command)).await.map_err(|_| SessionError::Gone)?;
        answer.await.map_err(|_| SessionError::Gone)?
    }

    /// Changes the goal; answers the goal after the change (committed) and whether it is armed.
    pub(crate) async fn change_goal(
        &self,
        op: GoalOp,
    ) -> Result<Option<(Goal, bool)>, SessionError> {
        self.touch();
        let (reply, answer) = oneshot::channel();
        let command = Box::new(Command::Goal { op, reply });
        self.commands.send(command).await.map_err(|_| SessionError::Gone)?;
        answer.await.map_err(|_| SessionError::Gone)?
    }

    /// Replaces the budget (`None`: none); a session paused at its budget resumes when the new one
    /// is not spent. Answers the state after the change (committed).
    pub(crate) async fn set_budget(
        &self,
        budget: Option<Budget>,
    ) -> Result<BudgetState, SessionError> {
        self.touch();
        let (reply, answer) = oneshot::channel();
        let command = Box::new(Command::Budget { budget, reply });
        self.commands.send(command).await.map_err(|_| SessionError::Gone)?;
        answer.await.map_err(|_| SessionError::Gone)?
    }

    /// Tells the session's subscribers something that is not in its log (a child's progress).
    pub(crate) fn announce(&self, notice: Notice) {
        self.outbox.send(notice);
    }

    /// Subscribes to notices from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Notice> {
        self.outbox.subscribe()
    }

    /// [`Outbox::subscribe_announced`], with the queue as of the last event announced:
    /// the events after it carry every later change, as their splices.
    pub(crate) fn subscribe_with_queue(
        &self,
    ) -> (broadcast::Receiver<Notice>, Announced, Vec<QueueItem>) {
        let inbox = self.view.lock().expect("view lock").inbox.clone();
        // The session announces each event under this lock (`Session::announce`).
        let inbox = inbox.lock();
        let (notices, announced) = self.outbox.subscribe_announced();
        (notices, announced, crate::session::queue_items(&inbox))
    }

    /// Where the session's notices go; it outlives an eviction (see [`Outbox`]).
    pub(crate) fn outbox(&self) -> &Arc<Outbox> {
        &self.outbox
    }

    /// Status (current), log length, queue and goal (as of the last commit; the goal as of the
    /// last `goal/change` announced, if that came later).
    pub fn view(&self) -> View {
        let mut view =
            View { status: self.outbox.status(), ..self.view.lock().expect("view lock").clone() };
        if let Some(goal) = self.outbox.goal_since(view.next_seq) {
            view.goal = goal;
        }
        view
    }

    /// Marks the session as used now (the registry evicts the least recently used first).
    pub(crate) fn touch(&self) {
        self.used.store(now_ms(), Ordering::Relaxed);
    }

    /// When the session was last used (ms since the epoch).
    pub(crate) fn used_at(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Whether this handle is the only way in besides the actor's own: nobody else (a request,
    /// an owned run, a settlement watcher) holds the session, so it may be dropped from memory.
    pub(crate) fn unshared(&self) -> bool {
        // The actor keeps a clone of the view; every other handle is one more.
        Arc::strong_count(&self.view) <= 2
    }
}
