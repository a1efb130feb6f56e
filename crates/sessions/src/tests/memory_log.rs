//! A session log held in memory, for the tests that drive a session without a store.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use airlock_store::{Index, StoreError};
use futures::future::BoxFuture;

use crate::session::{SessionLog, seq_of};

/// Logs held in memory, gone with the process: for tests that drive a [`Session`](crate::session::Session)
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
