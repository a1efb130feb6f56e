//! What a session announces to its subscribers, after commit and in output order.

use std::sync::{Arc, Mutex, OnceLock};

use airlock_core::{Delivery, Inbox, Message, Status, Target};
use bytes::Bytes;
use serde::Serialize;
use tokio::sync::broadcast;

use crate::goal::Goal;

/// How many notices a slow subscriber may fall behind before it re-reads from the log.
const NOTICE_BUFFER: usize = 128;

/// Where a session's notices go, with what has been announced so far.
///
/// It outlives the session's instance: a session evicted from memory while someone follows it
/// keeps its outbox (the registry holds a weak reference), and the instance woken later announces
/// into the same one, so a follower sees the next event with no gap and no repeat.
pub struct Outbox {
    notices: broadcast::Sender<Notice>,
    announced: Mutex<Announced>,
    /// The goal (and whether it is armed) as the last `goal/change` announced left it, with
    /// that event's seq: what a subscriber told of the change reads at once, before the actor's
    /// view of the session catches up at the end of its step.
    goal: Mutex<Option<ChangedGoal>>,
}

/// The goal, and whether it is armed, as the `goal/change` at `seq` left it.
struct ChangedGoal {
    seq: u64,
    goal: Option<(Goal, bool)>,
}

/// What a session's subscribers have been told so far.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Announced {
    /// The last status announced.
    pub status: Status,
    /// The seq of the first event not announced yet.
    pub next_seq: u64,
}

impl Outbox {
    /// An outbox nobody has subscribed to.
    pub fn new() -> Arc<Outbox> {
        let announced = Announced { status: Status::Idle, next_seq: 0 };
        Arc::new(Outbox {
            notices: broadcast::channel(NOTICE_BUFFER).0,
            announced: announced.into(),
            goal: Mutex::new(None),
        })
    }

    /// Subscribes from now on, with what was announced until then: the receiver gets every event
    /// from `next_seq` on and every status change after `status`.
    pub fn subscribe_announced(&self) -> (broadcast::Receiver<Notice>, Announced) {
        let announced = self.announced.lock().expect("announced lock");
        (self.notices.subscribe(), *announced)
    }

    /// Subscribes from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Notice> {
        self.notices.subscribe()
    }

    /// The last status announced.
    pub fn status(&self) -> Status {
        self.announced.lock().expect("announced lock").status
    }

    /// Whether anyone is subscribed.
    pub fn followed(&self) -> bool {
        self.notices.receiver_count() > 0
    }

    /// Tells subscribers something that changes nothing announced (a queue, a child's progress).
    pub fn send(&self, notice: Notice) {
        let _ = self.notices.send(notice); // nobody listening is fine
    }

    /// Announces a committed event.
    pub(super) fn event(&self, event: Arc<Committed>) {
        let mut announced = self.announced.lock().expect("announced lock");
        announced.next_seq = event.seq + 1;
        let _ = self.notices.send(Notice::Event(event));
    }

    /// Keeps the goal as the `goal/change` at `seq` left it; called before that event is
    /// announced.
    pub(super) fn goal_changed(&self, seq: u64, goal: Option<(Goal, bool)>) {
        *self.goal.lock().expect("goal lock") = Some(ChangedGoal { seq, goal });
    }

    /// The goal as a `goal/change` at `next_seq` or later left it, if one was announced: newer
    /// than a view of the session taken when its log was `next_seq` long.
    pub(crate) fn goal_since(&self, next_seq: u64) -> Option<Option<(Goal, bool)>> {
        let changed = self.goal.lock().expect("goal lock");
        changed
            .as_ref()
            .filter(|changed| changed.seq >= next_seq)
            .map(|changed| changed.goal.clone())
    }

    /// Announces a status change.
    pub(super) fn status_changed(&self, status: Status) {
        let mut announced = self.announced.lock().expect("announced lock");
        announced.status = status;
        let _ = self.notices.send(Notice::Status(status));
    }

    /// Starts over at an instance's state: idle, its log `next_seq` long.
    pub(super) fn reset(&self, next_seq: u64) {
        *self.announced.lock().expect("announced lock") =
            Announced { status: Status::Idle, next_seq };
    }
}

/// One announcement.
#[derive(Clone, Debug)]
pub enum Notice {
    /// A committed event.
    Event(Arc<Committed>),
    /// Whole-agent status changed.
    Status(Status),
    /// A child session started or finished: `subagent.started` / `subagent.finished` and its
    /// JSON data. Not in the log: a live notification only.
    Subagent(&'static str, Arc<str>),
    /// The session was disposed: nothing more comes.
    Ended,
}

/// A committed event as every subscriber gets it: one copy, however many subscribers there are.
#[derive(Debug)]
pub struct Committed {
    /// Its seq.
    pub seq: u64,
    /// Its JSON envelope.
    pub json: String,
    /// Its frame on a stream's wire (SSE), made by the first stream that sends it.
    frame: OnceLock<Bytes>,
}

impl Committed {
    /// The event `seq` with envelope `json`.
    pub fn new(seq: u64, json: String) -> Arc<Committed> {
        Arc::new(Committed { seq, json, frame: OnceLock::new() })
    }

    /// Its stream frame: `make`'s, by the first caller; the same bytes for every later one.
    pub fn frame(&self, make: impl FnOnce() -> Bytes) -> Bytes {
        self.frame.get_or_init(make).clone()
    }
}

/// A pending item, as `session.queue` and `GET …/queue` show it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueItem {
    /// The message id.
    pub message_id: String,
    /// Its list.
    pub target: Target,
    /// `followup`, `steer` or `inject`.
    pub delivery: &'static str,
    /// The message.
    pub message: Message,
}

/// The pending items as a subscriber is shown them when it goes live (later changes are the
/// splices of the log's events): serialized once.
#[derive(Debug)]
pub struct QueueSnapshot {
    /// The session.
    pub session_id: String,
    /// Its pending items, `next-step` first.
    pub items: Vec<QueueItem>,
    json: OnceLock<String>,
    frame: OnceLock<Bytes>,
}

impl QueueSnapshot {
    /// The snapshot of `items`.
    pub fn new(session_id: &str, items: Vec<QueueItem>) -> QueueSnapshot {
        let (json, frame) = Default::default();
        QueueSnapshot { session_id: session_id.to_owned(), items, json, frame }
    }

    /// `{sessionId, items}` as JSON, made by the first subscriber that asks.
    pub fn json(&self) -> &str {
        self.json.get_or_init(|| {
            serde_json::json!({"sessionId": self.session_id, "items": self.items}).to_string()
        })
    }

    /// Its stream frame: `make`'s of [`QueueSnapshot::json`], by the first caller; the same
    /// bytes for every later one.
    pub fn frame(&self, make: impl FnOnce(&str) -> Bytes) -> Bytes {
        self.frame.get_or_init(|| make(self.json())).clone()
    }
}

/// The inbox as the log says, shared by a session and its handles: a handle reads the queue
/// without asking the session's actor, and nothing copies it per enqueue.
#[derive(Clone, Debug, Default)]
pub struct SharedInbox(Arc<Mutex<Inbox>>);

impl SharedInbox {
    /// Shares `inbox`.
    pub fn new(inbox: Inbox) -> SharedInbox {
        SharedInbox(Arc::new(Mutex::new(inbox)))
    }

    /// The inbox now.
    pub fn lock(&self) -> std::sync::MutexGuard<'_, Inbox> {
        self.0.lock().expect("inbox lock")
    }

    /// Its pending items, `next-step` first.
    pub fn items(&self) -> Vec<QueueItem> {
        queue_items(&self.lock())
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.lock().pending().next().is_none()
    }
}

/// The pending items of an inbox, `next-step` first, each list in order.
pub fn queue_items(inbox: &Inbox) -> Vec<QueueItem> {
    inbox
        .pending()
        .map(|(target, message)| QueueItem {
            message_id: message.id.clone(),
            target,
            delivery: Delivery::stamped(message).name(),
            message: message.clone(),
        })
        .collect()
}
