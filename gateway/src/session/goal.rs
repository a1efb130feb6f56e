//! The session's part in goal continuation: it holds the goal's [`Driver`](crate::goal::Driver),
//! shows it the committed events, and feeds what the driver asks for.

use airlock_core::Status;

use super::{Session, SessionError};
use crate::goal::{Goal, GoalError, GoalOp};

/// Why a goal request failed.
#[derive(Debug, thiserror::Error)]
pub enum GoalChangeError {
    /// The request does not fit the goal.
    #[error(transparent)]
    Refused(#[from] GoalError),
    /// The session failed.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The session's actor is gone (the gateway is shutting down).
    #[error("the session is shutting down; try again after the gateway restarts")]
    Gone,
}

impl Session {
    /// The goal and whether it is armed in this process.
    pub fn goal(&self) -> Option<(Goal, bool)> {
        self.goal.goal().map(|goal| (goal.clone(), self.goal.armed()))
    }

    /// Changes the goal as asked; the next [`Session::drive_goal`] acts on it.
    pub async fn change_goal(&mut self, op: GoalOp) -> Result<(), GoalChangeError> {
        let input = self.goal.apply(op, || uuid::Uuid::now_v7().to_string())?;
        self.feed(input).await?;
        Ok(())
    }

    /// Feeds what the goal needs now: a pause after a cancelled round, or at whole-agent idle
    /// the next round or the round limit.
    pub async fn drive_goal(&mut self) -> Result<(), SessionError> {
        let idle = self.status == Status::Idle;
        let inputs = self.goal.next(idle, || uuid::Uuid::now_v7().to_string());
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
