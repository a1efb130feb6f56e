//! The owners of intervals an actor tells where their intervals end.

use airlock_core::Status;
use tokio::sync::oneshot;

use crate::session::Session;

/// The owners waiting for the end of their intervals, and where the last intervals ended.
#[derive(Default)]
pub(super) struct Owners {
    waiting: Vec<oneshot::Sender<u64>>,
    /// The seqs the last [`ENDS_KEPT`] intervals ended at, oldest first: a retried run (its
    /// idempotency key seen before) finds where its interval ended here.
    ended: std::collections::VecDeque<u64>,
}

/// How many interval ends an actor keeps for retried runs.
const ENDS_KEPT: usize = 64;

impl Owners {
    /// An owner of the interval its input starts.
    pub(super) fn push(&mut self, owner: oneshot::Sender<u64>) {
        self.waiting.push(owner);
    }

    /// Ends the intervals of waiting owners once the agent has been idle: at the first
    /// transition to idle, or at once for an owner whose input left an idle agent idle (an
    /// inject).
    pub(super) fn settle(&mut self, session: &mut Session) {
        let end = match session.take_went_idle() {
            Some(seq) => seq,
            None if !self.waiting.is_empty()
                && session.status() == Status::Idle
                && !session.compacting() =>
            {
                session.next_seq().saturating_sub(1)
            }
            None => return,
        };
        if self.ended.back() != Some(&end) {
            if self.ended.len() == ENDS_KEPT {
                self.ended.pop_front();
            }
            self.ended.push_back(end);
        }
        for owner in self.waiting.drain(..) {
            let _ = owner.send(end); // an owner that went away no longer needs it
        }
        session.forget_owned(); // an idle commit reported them; else they started no turn
    }

    /// An owner of the interval an earlier request started (its answer `response` names the
    /// interval's first seq): told where it ended, or waits for its end. Dropped (the owner
    /// learns nothing here) when it ended before this actor kept ends.
    pub(super) fn attach(
        &mut self,
        owner: oneshot::Sender<u64>,
        response: &str,
        session: &Session,
    ) {
        let first = serde_json::from_str::<serde_json::Value>(response)
            .ok()
            .and_then(|answer| answer["seq"].as_u64());
        let Some(first) = first else { return };
        if let Some(&end) = self.ended.iter().find(|&&end| end >= first) {
            let _ = owner.send(end);
        } else if session.status() == Status::Running || session.compacting() {
            self.waiting.push(owner);
        }
    }
}
