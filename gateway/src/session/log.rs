//! Where a session's events go. Every append states the seq it expects, so a second writer fails
//! loudly instead of forking the log. SQLite joins with the gateway; this is the in-memory log.

use serde::Deserialize;

/// Why an append was refused.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The event's seq is not the next one.
    #[error(
        "log append out of order: the log expects seq {expected} but the event has seq {got}; another writer may share this session"
    )]
    SeqMismatch {
        /// The next seq of the log.
        expected: u64,
        /// The event's seq.
        got: u64,
    },
    /// The core produced something that is not an event envelope.
    #[error(
        "the core emitted an event that is not a JSON envelope with a seq ({0}); the core is faulty"
    )]
    NotAnEvent(String),
}

/// An append-only, gap-free session log.
pub trait SessionLog: Send {
    /// Appends one event (JSON envelope); its seq must be the log's length.
    fn append(&mut self, event: String) -> Result<u64, LogError>;
    /// Every event, in seq order.
    fn events(&self) -> &[String];
}

/// The seq of an event envelope.
pub fn seq_of(event: &str) -> Result<u64, LogError> {
    #[derive(Deserialize)]
    struct Envelope {
        seq: u64,
    }
    serde_json::from_str::<Envelope>(event)
        .map(|e| e.seq)
        .map_err(|e| LogError::NotAnEvent(e.to_string()))
}

/// A log held in memory, gone with the process.
#[derive(Debug, Default)]
pub struct MemoryLog {
    events: Vec<String>,
}

impl SessionLog for MemoryLog {
    fn append(&mut self, event: String) -> Result<u64, LogError> {
        let (expected, got) = (self.events.len() as u64, seq_of(&event)?);
        if got != expected {
            return Err(LogError::SeqMismatch { expected, got });
        }
        self.events.push(event);
        Ok(got)
    }

    fn events(&self) -> &[String] {
        &self.events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_refuses_a_seq_out_of_order() {
        let mut log = MemoryLog::default();
        log.append(r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#.into()).unwrap();
        let err = log
            .append(r#"{"type":"turn/start","seq":2,"time":1,"data":{"turn":2}}"#.into())
            .unwrap_err();
        assert!(matches!(err, LogError::SeqMismatch { expected: 1, got: 2 }), "{err}");
    }
}
