//! What a session announces to its subscribers, after commit and in output order.

use std::sync::Arc;

use airlock_core::{Delivery, Inbox, Message, Status, Target};
use serde::Serialize;

/// One announcement.
#[derive(Clone, Debug)]
pub enum Notice {
    /// A committed event (JSON envelope).
    Event(Arc<str>),
    /// Whole-agent status changed.
    Status(Status),
    /// The inbox after a splice, `next-step` first.
    Queue(Arc<Vec<QueueItem>>),
    /// A child session started or finished: `subagent.started` / `subagent.finished` and its
    /// JSON data. Not in the log: a live notification only.
    Subagent(&'static str, Arc<str>),
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
