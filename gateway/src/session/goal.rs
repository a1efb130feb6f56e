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
        if let (Some(parent), GoalOp::Set { .. } | GoalOp::Resume) = (&self.parent, &op) {
            let (child, parent) = (self.id().to_owned(), parent.clone());
            return Err(GoalChangeError::ChildSession { child, parent });
        }
        let inputs = self.goal.apply(op, &self.inbox, || uuid::Uuid::now_v7().to_string())?;
        self.feed_all(inputs, None).await?;
        Ok(())
    }

    /// Feeds what the goal needs now: a pause after a cancelled round, or at whole-agent idle
    /// the next round or the round limit.
    pub async fn drive_goal(&mut self) -> Result<(), SessionError> {
        let idle = self.status == Status::Idle;
        let inputs = self.goal.next(idle, &self.inbox, || uuid::Uuid::now_v7().to_string());
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
