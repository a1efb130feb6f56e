//! Why a session could not go on.

use crate::admission::Exceeded;
use crate::goal::GoalError;
use airlock_sandbox::core_host::CoreError;
use airlock_store::StoreError;

/// Why a session could not go on.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The core trapped on this input; the session was rebuilt from its log and the input lost.
    #[error(
        "{0}; the session was rebuilt from its log and this input was not applied, so send it again"
    )]
    Trapped(CoreError),
    /// The core trapped again while recovering: the core itself is broken.
    #[error("the core trapped again while recovering from its log ({0}); the core build is faulty")]
    Broken(CoreError),
    /// The core could not be created or restored.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// The log refused or failed an append; the session was rebuilt from what is durable.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A goal request does not fit the goal.
    #[error(transparent)]
    Goal(#[from] GoalError),
    /// The session's actor is gone (the gateway is shutting down).
    #[error("the session is shutting down; send the input again after the gateway restarts")]
    Gone,
    /// New work past a limit (`crate::admission`): nothing was applied.
    #[error(transparent)]
    Exceeded(#[from] Exceeded),
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
}

impl SessionError {
    /// The same failure, for another input of the group it struck (see
    /// `Session::feed_group`): none of them was applied.
    pub fn shared(&self) -> SessionError {
        match self {
            SessionError::Trapped(error) => SessionError::Trapped(error.clone()),
            SessionError::Broken(error) => SessionError::Broken(error.clone()),
            SessionError::Core(error) => SessionError::Core(error.clone()),
            SessionError::Store(error) => SessionError::Store(error.shared()),
            SessionError::Goal(error) => SessionError::Goal(error.clone()),
            SessionError::Gone => SessionError::Gone,
            SessionError::Exceeded(exceeded) => SessionError::Exceeded(exceeded.clone()),
            SessionError::ChildSession { child, parent } => {
                SessionError::ChildSession { child: child.clone(), parent: parent.clone() }
            }
        }
    }
}
