//! The session's part in goal continuation: it holds the goal's [`Driver`](crate::goal::Driver),
//! shows it the committed events, and feeds what the driver asks for.

use std::time::Duration;

use airlock_core::Status;
use tokio::time::Instant;

use super::{Session, SessionError};
use crate::clock::fresh_id;
use crate::goal::{Goal, GoalOp};

impl Session {
    /// The goal and whether it is armed in this process.
    pub fn goal(&self) -> Option<(Goal, bool)> {
        self.goal.goal().map(|goal| (goal.clone(), self.goal.armed()))
    }

    /// Changes the goal as asked; the next [`Session::drive_goal`] acts on it.
    pub async fn change_goal(&mut self, op: GoalOp) -> Result<(), SessionError> {
        if let (Some(parent), GoalOp::Set { .. } | GoalOp::Resume) = (&self.parent.0, &op) {
            let (child, parent) = (self.id().to_owned(), parent.clone());
            return Err(SessionError::ChildSession { child, parent });
        }
        let inputs = self.goal.apply(op, &self.inbox.lock(), fresh_id)?;
        self.feed_all(inputs, None).await?;
        Ok(())
    }

    /// Feeds what the goal needs now: a pause after a cancelled round, or at whole-agent idle
    /// the next round or the round limit. Rounds start [`ROUND_PACE`] apart at the least; one
    /// held back for it is due at [`Session::round_due`].
    pub async fn drive_goal(&mut self) -> Result<(), SessionError> {
        let idle = self.status == Status::Idle;
        let paced = self.pace.next_round.is_some_and(|at| Instant::now() < at);
        self.pace.held = idle && paced;
        let had_round = self.goal.has_round();
        let inputs = self.goal.next(idle && !paced, &self.inbox.lock(), fresh_id);
        if inputs.is_empty() {
            return Ok(());
        }
        if let Err(error) = self.feed_all(inputs, None).await {
            self.goal.abandon_round();
            return Err(error);
        }
        if !had_round && self.goal.has_round() {
            self.pace.next_round = Some(Instant::now() + ROUND_PACE);
        }
        Ok(())
    }

    /// When a goal round held back by the pace may start: drive the goal again then.
    pub fn round_due(&self) -> Option<Instant> {
        self.pace.next_round.filter(|_| self.pace.held)
    }
}

/// The least time between the starts of two goal rounds: a goal whose rounds end at once (a
/// fast model, a round with nothing to do) runs a few rounds a second, not thousands of events.
pub const ROUND_PACE: Duration = Duration::from_millis(250);

/// When the next goal round may start, and whether one waits for it.
#[derive(Default)]
pub(super) struct Pace {
    next_round: Option<Instant>,
    held: bool,
}
