//! The session's part in goal continuation: it holds the goal's [`Driver`](crate::goal::Driver),
//! shows it the committed events, and feeds what the driver asks for.

use airlock_core::Status;

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
    /// the next round or the round limit.
    pub async fn drive_goal(&mut self) -> Result<(), SessionError> {
        let idle = self.status == Status::Idle;
        let inputs = self.goal.next(idle, &self.inbox.lock(), fresh_id);
        if inputs.is_empty() {
            return Ok(());
        }
        if let Err(error) = self.feed_all(inputs, None).await {
            self.goal.abandon_round();
            return Err(error);
        }
        Ok(())
    }
}
