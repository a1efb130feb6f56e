//! Where the interval a protocol's run follows ends.

use airlock_sessions::{OwnedRun, RegistryError, SessionHandle};

use super::ApiError;

/// Where a run a stream follows ends.
pub(super) enum End {
    /// The owned interval of the message it sent.
    Owned(OwnedRun),
    /// The next whole-agent idle (at once when idle): the end of whatever interval is open.
    Idle(SessionHandle),
    /// At once: a session whose log is empty, which nothing was sent.
    Empty,
}

impl End {
    /// The seq after the run's last event.
    pub(super) async fn after(&mut self) -> Result<u64, ApiError> {
        match self {
            End::Owned(run) => Ok(run.last_seq().await? + 1),
            End::Idle(handle) => Ok(handle.idle().await.map_err(RegistryError::Session)? + 1),
            End::Empty => Ok(0),
        }
    }
}
