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
use tokio::time::Instant;

use crate::goal::{Goal, GoalOp};
use crate::session::{
    Accounting, Announced, Budget, BudgetState, Fed, IdempotencyKey, Notice, Outbox, QueueItem,
    Session, SessionError, Work,
};
use airlock_base::clock::now_ms;
use airlock_store::Store;
use group::{Member, feed_group, gather, groupable};
use owners::Owners;
pub use view::View;

mod group;
mod owners;
mod view;

/// The most task answers (model chunks, tool results) folded into one commit.
const MAX_ANSWERS_PER_COMMIT: usize = 256;

/// How long an idle session keeps its core instance before it sleeps (see `session/sleep.rs`).
pub const SLEEP_AFTER: Duration = Duration::from_secs(2);

/// The first wait before a session whose commit failed tries its recovery again; it doubles up
/// to [`REPAIR_MOST`] while storage keeps failing.
const REPAIR_FIRST: Duration = Duration::from_millis(100);
const REPAIR_MOST: Duration = Duration::from_secs(5);

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
        tokio::spawn(run(session, store, inbox, view));
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

    /// Status (current), log length, queue and goal (as of the last commit).
    pub fn view(&self) -> View {
        View { status: self.outbox.status(), ..self.view.lock().expect("view lock").clone() }
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

async fn run(
    mut session: Session,
    store: Option<Store>,
    mut commands: mpsc::Receiver<Box<Command>>,
    view: Arc<Mutex<View>>,
) {
    // Owners waiting for the next whole-agent idle.
    let mut owners = Owners::default();
    // A command taken while gathering a group that could not join it: it goes next.
    let mut held: Option<Command> = None;
    // How long until a session that owes a recovery (a commit failed) tries it again.
    let mut repair_in = REPAIR_FIRST;
    loop {
        if session.fenced() {
            // Another gateway runs the session now; the registry lets go of it at its next
            // renewal. Inputs sent meanwhile are refused as the actor's being gone (retryable).
            tracing::warn!(session_id = session.id(), "this gateway lost the session's lease");
            return;
        }
        if let Some(command) = held.take() {
            held = obey(command, &mut session, store.as_ref(), &mut commands, &mut owners).await;
            *view.lock().expect("view lock") = View::of(&session);
            continue;
        }
        let due = next_deadline(&session, repair_in, Instant::now());
        let timer = async move {
            match due {
                Some((at, duty)) => {
                    tokio::time::sleep_until(at).await;
                    duty
                }
                None => std::future::pending().await,
            }
        };
        // A goal round that waits for one of its tenant's turn slots tries as one is given back.
        let slot_freed = session.round_waits_for_a_turn().then(|| session.admission().turn_freed());
        let slot_freed = async move {
            match slot_freed {
                Some(freed) => freed.await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            duty = timer => match duty {
                Duty::Sleep => {
                    session.sleep().await;
                }
                Duty::Round => {
                    drive_goal(&mut session).await;
                    *view.lock().expect("view lock") = View::of(&session);
                }
                Duty::Repair => {
                    repair_in = match session.repair().await {
                        Ok(()) => REPAIR_FIRST,
                        Err(error) => {
                            tracing::error!(session_id = session.id(), %error, "still cannot recover");
                            (repair_in * 2).min(REPAIR_MOST)
                        }
                    };
                    owners.settle(&mut session);
                    drive_goal(&mut session).await;
                    *view.lock().expect("view lock") = View::of(&session);
                }
            },
            () = slot_freed => {
                drive_goal(&mut session).await;
                *view.lock().expect("view lock") = View::of(&session);
            }
            command = commands.recv() => match command {
                None => break,
                Some(command) => {
                    held = obey(*command, &mut session, store.as_ref(), &mut commands, &mut owners)
                        .await;
                    *view.lock().expect("view lock") = View::of(&session);
                }
            },
            mut answers = session.next_answers() => {
                // Chunks that arrived together are committed together: one fsync, not one each.
                let more = MAX_ANSWERS_PER_COMMIT.saturating_sub(answers.len());
                answers.extend(session.ready_answers(more));
                if let Err(error) = session.feed_all(answers, None).await {
                    tracing::error!(session_id = session.id(), %error, "feeding answers failed");
                }
                owners.settle(&mut session);
                drive_goal(&mut session).await;
                *view.lock().expect("view lock") = View::of(&session);
            }
        }
    }
}

/// What an actor does at a time of its own, when no input came first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Duty {
    /// Idle long enough: drop the core instance until the next input (`session/sleep.rs`).
    Sleep,
    /// A paced goal round is due.
    Round,
    /// A commit failed: try the recovery again.
    Repair,
}

/// The actor's next timed duty and when it is due: the soonest of sleeping, a paced goal round and
/// a repeated recovery (`None`: it waits for input only).
fn next_deadline(session: &Session, repair_in: Duration, now: Instant) -> Option<(Instant, Duty)> {
    let sleep = session.can_sleep().then(|| (now + SLEEP_AFTER, Duty::Sleep));
    let round = session.round_due().map(|at| (at, Duty::Round));
    let repair = session.owes_recovery().then(|| (now + repair_in, Duty::Repair));
    [sleep, round, repair].into_iter().flatten().min_by_key(|(at, _)| *at)
}

/// Carries out one command. Sends that are already waiting behind it join it in one group
/// commit; answers the first command that could not join.
async fn obey(
    command: Command,
    session: &mut Session,
    store: Option<&Store>,
    commands: &mut mpsc::Receiver<Box<Command>>,
    owners: &mut Owners,
) -> Option<Command> {
    match command {
        Command::Goal { op, reply } => {
            let result = session.change_goal(op).await;
            drive_goal(session).await;
            let _ = reply.send(result.map(|()| session.goal()));
            None
        }
        Command::Budget { budget, reply } => {
            let result = session.set_budget(budget).await;
            drive_goal(session).await;
            let _ = reply.send(result);
            None
        }
        Command::Feed { input: Some(input), key, owner, work, reply }
            if groupable(session, &input) =>
        {
            let mut group = vec![Member { input, key, owner, work, reply }];
            let held = gather(session, commands, &mut group);
            feed_group(session, store, group, owners).await;
            held
        }
        Command::Feed { input, key, owner, work, reply } => {
            let waits_only = input.is_none();
            let message_id = input.as_ref().and_then(message_of);
            let outcome = match input {
                Some(input) => take(session, store, input, key, work).await,
                None => Ok(Admission::Fed(Fed::default())),
            };
            // An owner's interval starts with its input's first event; a refused input starts
            // none (dropping the sender tells the owner). A replayed one is the interval its
            // first request started.
            match (owner, &outcome) {
                (Some(owner), Ok(Admission::Replayed(response))) => {
                    owners.attach(owner, response, session);
                }
                (Some(owner), outcome) if waits_only || admitted(outcome) => {
                    own(session, message_id, outcome);
                    owners.push(owner);
                }
                _ => {}
            }
            owners.settle(session);
            drive_goal(session).await;
            let _ = reply.send(outcome); // a caller that went away: the input is in
            None
        }
    }
}

/// The message a send carries.
fn message_of(input: &Input) -> Option<String> {
    match input {
        Input::Send { message, .. } => Some(message.id.clone()),
        _ => None,
    }
}

/// An owner's send that opened an interval: the idle commit that ends it reports its run.
fn own(
    session: &mut Session,
    message_id: Option<String>,
    outcome: &Result<Admission, SessionError>,
) {
    if let (Some(id), Ok(Admission::Fed(Fed { refusal: None, first_seq: Some(seq) }))) =
        (message_id, outcome)
    {
        session.own(id, *seq);
    }
}

/// Whether an input was fed and wrote its first event (an owned interval starts there).
fn admitted(outcome: &Result<Admission, SessionError>) -> bool {
    matches!(outcome, Ok(Admission::Fed(Fed { refusal: None, first_seq: Some(_) })))
}

/// Lets the goal act after an input: owners have been settled, so a round starts a new interval.
/// An agent still idle then may keep a snapshot.
async fn drive_goal(session: &mut Session) {
    if let Err(error) = session.drive_goal().await {
        tracing::error!(session_id = session.id(), %error, "goal round failed");
    }
    session.snapshot_if_due().await;
}

/// Checks the idempotency key (inside the actor, so two requests with one key cannot race), then
/// feeds the input.
async fn take(
    session: &mut Session,
    store: Option<&Store>,
    input: Input,
    key: Option<IdempotencyKey>,
    work: Work,
) -> Result<Admission, SessionError> {
    if let Some(admission) = replay(session.id(), store, key.as_ref()).await? {
        return Ok(admission);
    }
    Ok(Admission::Fed(session.feed_keyed(input, key, work).await?))
}

/// The answer for a key seen before: its first answer for the same request, a conflict for
/// another; `None` for a key not seen (or no key).
async fn replay(
    session_id: &str,
    store: Option<&Store>,
    key: Option<&IdempotencyKey>,
) -> Result<Option<Admission>, SessionError> {
    let (Some(key), Some(store)) = (key, store) else { return Ok(None) };
    let Some(record) = store.idempotency(&key.key, now_ms(), IDEMPOTENCY_TTL_MS).await? else {
        return Ok(None);
    };
    let same = record.session_id == session_id && record.request_hash == key.request_hash;
    Ok(Some(if same { Admission::Replayed(record.response) } else { Admission::KeyConflict }))
}
