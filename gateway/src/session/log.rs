//! Where a session's events go: the [`Store`] in the gateway, a [`MemoryLog`] in the tests that
//! drive a session alone. Every append states the seqs it continues with, so a second writer or a
//! gap fails loudly instead of forking the log.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;

use airlock_store::{Index, Snapshot, Store, StoreError};

/// An append-only, gap-free log of many sessions.
pub trait SessionLog: Send + Sync {
    /// Appends events (JSON envelopes with contiguous seqs continuing the log), plus what
    /// `index` keeps beside them, in one commit; resolves once durable.
    fn append<'a>(
        &'a self,
        session_id: &'a str,
        events: Vec<String>,
        index: Index,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Every event of a session, in seq order.
    fn read<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<Vec<String>, StoreError>>;

    /// The events of a session from seq `from` on, in seq order.
    fn read_from<'a>(
        &'a self,
        session_id: &'a str,
        from: u64,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>>;

    /// The session's newest snapshot (none: it is rebuilt from the whole log).
    fn snapshot<'a>(
        &'a self,
        _session_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Snapshot>, StoreError>> {
        Box::pin(std::future::ready(Ok(None)))
    }

    /// Keeps a snapshot (a log that keeps none ignores it).
    fn save_snapshot(&self, _snapshot: Snapshot) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(std::future::ready(Ok(())))
    }

    /// Whether [`SessionLog::snapshot`] answers what [`SessionLog::save_snapshot`] kept.
    fn keeps_snapshots(&self) -> bool {
        false
    }
}

impl SessionLog for Store {
    fn append<'a>(
        &'a self,
        session_id: &'a str,
        events: Vec<String>,
        index: Index,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(Store::append(self, session_id, events, index))
    }

    fn read<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        Box::pin(self.events(session_id, None, usize::MAX >> 1))
    }

    fn read_from<'a>(
        &'a self,
        session_id: &'a str,
        from: u64,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        Box::pin(self.events(session_id, from.checked_sub(1), usize::MAX >> 1))
    }

    fn snapshot<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Snapshot>, StoreError>> {
        Box::pin(Store::snapshot(self, session_id))
    }

    fn save_snapshot(&self, snapshot: Snapshot) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(Store::save_snapshot(self, snapshot))
    }

    fn keeps_snapshots(&self) -> bool {
        true
    }
}

/// Logs held in memory, gone with the process: for tests that drive a [`Session`](super::Session)
/// without a store (`airlock run` keeps its log in a temporary store).
#[derive(Debug, Default)]
pub struct MemoryLog {
    sessions: Mutex<BTreeMap<String, Vec<String>>>,
    /// Appends taken, each one commit.
    appends: AtomicUsize,
}

impl MemoryLog {
    /// How many appends (commits) it has taken.
    pub fn appends(&self) -> usize {
        self.appends.load(Ordering::Relaxed)
    }
}

impl SessionLog for MemoryLog {
    fn append<'a>(
        &'a self,
        session_id: &'a str,
        events: Vec<String>,
        _index: Index,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let mut sessions = self.sessions.lock().expect("memory log lock");
        let log = sessions.entry(session_id.to_owned()).or_default();
        for (expected, event) in (log.len() as u64..).zip(&events) {
            let got = match seq_of(event) {
                Ok(seq) => seq,
                Err(e) => return Box::pin(std::future::ready(Err(e))),
            };
            if got != expected {
                let error =
                    StoreError::SeqMismatch { session: session_id.to_owned(), expected, got };
                return Box::pin(std::future::ready(Err(error)));
            }
        }
        log.extend(events);
        self.appends.fetch_add(1, Ordering::Relaxed);
        Box::pin(std::future::ready(Ok(())))
    }

    fn read<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        self.read_from(session_id, 0)
    }

    fn read_from<'a>(
        &'a self,
        session_id: &'a str,
        from: u64,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        let sessions = self.sessions.lock().expect("memory log lock");
        let events = sessions.get(session_id).map_or(&[][..], |log| log.as_slice());
        let tail = events.get(from as usize..).unwrap_or_default().to_vec();
        Box::pin(std::future::ready(Ok(tail)))
    }
}

/// The seq of an event envelope.
pub fn seq_of(event: &str) -> Result<u64, StoreError> {
    #[derive(serde::Deserialize)]
    struct Envelope {
        seq: u64,
    }
    serde_json::from_str::<Envelope>(event)
        .map(|e| e.seq)
        .map_err(|e| StoreError::NotAnEvent(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn memory_log_refuses_a_seq_out_of_order() {
        let log = MemoryLog::default();
        let event =
            |seq| format!(r#"{{"type":"turn/start","seq":{seq},"time":1,"data":{{"turn":1}}}}"#);
        log.append("s", vec![event(0)], Index::default()).await.unwrap();
        let err = log.append("s", vec![event(2)], Index::default()).await.unwrap_err();
        assert!(matches!(err, StoreError::SeqMismatch { expected: 1, got: 2, .. }), "{err}");
        assert_eq!(log.read("s").await.unwrap(), vec![event(0)]);
    }
}
