//! Where the interval a protocol's run follows ends.

use airlock_core::EventData;
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

/// Where an interval ends, read off the log: at the first turn end after which the agent went
/// idle, which the next event tells (it starts no turn). An interval whose last turn end is the
/// log's last event ends there once the agent is idle ([`LogEnd::idle`]).
#[derive(Debug, Default)]
pub(super) struct LogEnd {
    /// The last event read ended a turn.
    at_turn_end: bool,
    ended: bool,
}

impl LogEnd {
    /// Reads the next event of the interval; `true` when it is past the interval's end.
    pub(super) fn past(&mut self, data: &EventData) -> bool {
        if self.at_turn_end && !matches!(data, EventData::TurnStart(_)) {
            self.ended = true;
        }
        if !self.ended {
            self.at_turn_end = matches!(data, EventData::TurnEnd(_));
        }
        self.ended
    }

    /// The agent is idle now, with every event read: the interval is over.
    pub(super) fn idle(&mut self) {
        self.ended = true;
    }

    /// The interval is over.
    pub(super) fn ended(&self) -> bool {
        self.ended
    }
}
