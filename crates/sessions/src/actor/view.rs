//! [`View`]: what a [`super::SessionHandle`] reads of its session without asking the actor.

use std::sync::{Arc, Mutex};

use airlock_core::{Status, WaitingCall};

use crate::goal::Goal;
use crate::session::{Budget, QueueItem, Session, SharedInbox};

/// What a handle can read without asking the actor.
#[derive(Clone, Debug)]
pub struct View {
    /// Whole-agent status.
    pub status: Status,
    /// The log's length.
    pub next_seq: u64,
    /// Pending input, as of now.
    pub inbox: SharedInbox,
    /// The goal, and whether it is armed in this process.
    pub goal: Option<(Goal, bool)>,
    /// The parent of a continuable child, which alone may give it work.
    pub parent: Option<String>,
    /// A compaction at idle runs: not at rest.
    pub compacting: bool,
    /// The calls of the running step that wait for a person or the client, as of now.
    pub waiting: Arc<Mutex<Vec<WaitingCall>>>,
    /// What it may spend (`None`: no limit).
    pub budget: Option<Budget>,
    /// It paused at its budget: waking input starts nothing until the budget is raised.
    pub paused: bool,
}

impl View {
    /// Pending input, `next-step` first.
    pub fn queue(&self) -> Vec<QueueItem> {
        self.inbox.items()
    }

    /// The calls of the running step that wait for an answer.
    pub fn waiting(&self) -> Vec<WaitingCall> {
        self.waiting.lock().expect("waiting lock").clone()
    }
}

impl View {
    /// The view of `session` now.
    pub(super) fn of(session: &Session) -> View {
        let budget = session.budget();
        View {
            status: session.status(),
            next_seq: session.next_seq(),
            inbox: session.inbox(),
            goal: session.goal(),
            parent: session.parent().map(str::to_owned),
            compacting: session.compacting(),
            waiting: session.waiting(),
            budget: budget.budget,
            paused: budget.paused,
        }
    }
}
