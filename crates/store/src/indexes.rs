//! What lets a question about a session skip its log: receipts, kept by every commit, and
//! snapshots of the core's state, kept by the session.

use rusqlite::OptionalExtension;

use super::StoreError;
use super::sqlite::Sqlite;
use super::writer::{self, Job};
use crate::receipts::Receipt;

/// A snapshot of a session's core state: what its log says through `next_seq - 1`.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// The session.
    pub session_id: String,
    /// The seq of the first event it does not cover.
    pub next_seq: u64,
    /// The hash of the core (and engine) that wrote it: no other core reads it.
    pub core: String,
    /// The core's durable state (JSON).
    pub state: String,
    /// What the host knew at it (JSON): read without `state` by [`crate::Store::snapshot_head`].
    pub head: Option<String>,
    /// The parent of a continuable child.
    pub parent: Option<String>,
    /// When read: the body of the session's last `goal/change` (not written with it).
    pub goal: Option<String>,
}

/// A snapshot's columns, in the order both reads answer them (`state` last: it may be megabytes).
pub(crate) const SNAPSHOT: &str = "SELECT p.next_seq, p.core, p.parent, s.goal, p.head, p.state \
     FROM snapshots p JOIN sessions s USING (session_id) WHERE session_id = ?1";

/// The same without the core's state, of a snapshot that kept the host's head.
pub(crate) const SNAPSHOT_HEAD: &str = "SELECT p.next_seq, p.core, p.parent, s.goal, p.head, '' \
     FROM snapshots p JOIN sessions s USING (session_id) WHERE session_id = ?1 \
     AND p.head IS NOT NULL";

impl Sqlite {
    /// Keeps a snapshot of a session's core state (replacing the one before).
    pub async fn save_snapshot(&self, snapshot: Snapshot) -> Result<(), StoreError> {
        self.inner.writer.ask(|reply| Job::Snapshot { snapshot, reply }).await?
    }

    /// A session's newest snapshot, with its last goal change.
    pub async fn snapshot(&self, session_id: &str) -> Result<Option<Snapshot>, StoreError> {
        self.read_snapshot(session_id, SNAPSHOT).await
    }

    /// A session's newest snapshot without the core's state (`state` empty), if the host's head
    /// was kept with it, with its last goal change.
    pub async fn snapshot_head(&self, session_id: &str) -> Result<Option<Snapshot>, StoreError> {
        self.read_snapshot(session_id, SNAPSHOT_HEAD).await
    }

    async fn read_snapshot(
        &self,
        session_id: &str,
        sql: &'static str,
    ) -> Result<Option<Snapshot>, StoreError> {
        let session_id = session_id.to_owned();
        self.read(move |conn| {
            conn.query_row(sql, [&session_id], |r| {
                Ok(Snapshot {
                    session_id: session_id.clone(),
                    next_seq: r.get::<_, i64>(0)? as u64,
                    core: r.get(1)?,
                    parent: r.get(2)?,
                    goal: r.get(3)?,
                    head: r.get(4)?,
                    state: r.get(5)?,
                })
            })
            .optional()
        })
        .await
    }

    /// The receipt of a message: from the index, or (for a log older than the index) by
    /// replaying the log. `None` if the session never accepted it.
    pub async fn receipt(
        &self,
        session_id: &str,
        message_id: &str,
    ) -> Result<Option<Receipt>, StoreError> {
        let (session, message) = (session_id.to_owned(), message_id.to_owned());
        let indexed = self
            .read(move |conn| {
                let indexed: Option<bool> = conn
                    .query_row(
                        "SELECT receipts_indexed FROM sessions WHERE session_id = ?1",
                        [&session],
                        |r| r.get(0),
                    )
                    .optional()?;
                match indexed {
                    Some(true) => writer::receipt(conn, &session, &message).map(Some),
                    _ => Ok(None),
                }
            })
            .await?;
        match indexed {
            Some(receipt) => Ok(receipt),
            None => {
                let events = self.events(session_id, None, usize::MAX >> 1).await?;
                Ok(crate::receipts::find(&events, message_id))
            }
        }
    }
}
