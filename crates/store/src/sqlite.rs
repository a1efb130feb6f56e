//! The SQLite backend: one file, one writer that commits in groups (`writer/`), and a small pool of
//! read connections (WAL lets them proceed while the writer commits). Its schema changes are the
//! numbered files in `crates/store/migrations/`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};
use rusqlite_migration::{M, Migrations};
use tokio::sync::oneshot;

use super::writer::{Barrier, CommitOn, Durability, Job, Writer};
use super::{Faults, IdempotencyRecord, Index, MEMORY, Segment, SessionRow, StoreError};

/// The migrations, in order; each is applied once, tracked by SQLite's `user_version`.
pub(crate) fn migrations() -> Migrations<'static> {
    Migrations::new(vec![
        M::up(include_str!("../migrations/0001_init.sql")),
        M::up(include_str!("../migrations/0002_indexes.sql")),
        M::up(include_str!("../migrations/0003_keys.sql")),
        M::up(include_str!("../migrations/0004_logins_forks_bytes.sql")),
        M::up(include_str!("../migrations/0005_usage.sql")),
        M::up(include_str!("../migrations/0006_hooks.sql")),
        M::up(include_str!("../migrations/0007_snapshot_heads.sql")),
        M::up(include_str!("../migrations/0008_receipts_by_message.sql")),
    ])
}

/// Settings for every connection, in one place.
fn configure(conn: &Connection, durability: Durability) -> rusqlite::Result<()> {
    // First: every statement after it, the pragmas included, waits for a lock (a commit, a
    // checkpoint) instead of failing at once with "database is locked".
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    // WAL: readers never block the writer nor the writer them.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // FULL survives power loss; NORMAL may lose the last commits then (never corrupts).
    conn.pragma_update(None, "synchronous", durability.pragma())?;
    conn.pragma_update(None, "foreign_keys", true)?;
    Ok(())
}

/// The SQLite store: cheap to clone.
#[derive(Clone)]
pub struct Sqlite {
    pub(super) inner: Arc<Inner>,
}

/// The most log reads that run at once. Each holds a blocking thread and a pooled connection with
/// its page cache; past a few per core, more only add threads and memory (10,000 SSE streams
/// opened together once made about 90 of each), while the others wait their turn.
const MAX_READS: usize = 8;

pub(super) struct Inner {
    path: PathBuf,
    /// Nothing reaches a disk: [`Sqlite::flush`] answers `false`, and reads go through the
    /// writer's connection (the only one that sees the database).
    in_memory: bool,
    durability: Durability,
    pub(super) writer: Writer,
    readers: Mutex<Vec<Connection>>,
    /// One permit per read that may run at once (see [`MAX_READS`]).
    reads: tokio::sync::Semaphore,
    /// Syncs done by durability barriers ([`Sqlite::flush`] under `normal` durability).
    barrier_syncs: Arc<AtomicU64>,
    faults: Arc<Faults>,
}

impl Sqlite {
    /// Opens (creating and migrating as needed) the database at `path`; [`MEMORY`] opens a
    /// fresh database that lives in this process only. Its commits run where `on` says.
    pub fn open(path: &Path, durability: Durability, on: CommitOn) -> Result<Sqlite, StoreError> {
        let open_error = |message: String| StoreError::Open { path: path.to_owned(), message };
        let in_memory = path == Path::new(MEMORY);
        let conn = match in_memory {
            true => Connection::open_in_memory(),
            false => Connection::open(path),
        };
        let mut conn = conn.map_err(|e| open_error(e.to_string()))?;
        configure(&conn, durability).map_err(|e| open_error(e.to_string()))?;
        migrations().to_latest(&mut conn).map_err(|e| open_error(e.to_string()))?;
        let barrier_syncs = Arc::new(AtomicU64::new(0));
        let wal = (!in_memory && durability == Durability::Normal)
            .then(|| PathBuf::from(format!("{}-wal", path.display())));
        let faults = Arc::new(Faults::default());
        let barrier = Barrier { wal, syncs: barrier_syncs.clone() };
        let writer = Writer::new(conn, barrier, faults.clone(), on);
        let readers = Mutex::new(Vec::new());
        let path = path.to_owned();
        let reads = tokio::sync::Semaphore::new(MAX_READS);
        let inner =
            Inner { path, in_memory, durability, writer, readers, reads, barrier_syncs, faults };
        Ok(Sqlite { inner: Arc::new(inner) })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Appends events (JSON envelopes, contiguous seqs) to a session's log, with what `index`
    /// keeps beside them in the same transaction; resolves once committed.
    pub async fn append(
        &self,
        session_id: &str,
        events: Vec<String>,
        index: Index,
    ) -> Result<(), StoreError> {
        let session_id = session_id.to_owned();
        self.inner.writer.ask(|reply| Job::Append { session_id, events, index, reply }).await?
    }

    /// Records that a session is at rest (after recovery found nothing to do).
    pub async fn set_at_rest(&self, session_id: &str) -> Result<(), StoreError> {
        let session_id = session_id.to_owned();
        self.inner.writer.ask(|reply| Job::AtRest { session_id, reply }).await?
    }

    /// See [`super::Store::set_spec`].
    pub async fn set_spec(&self, session_id: &str, spec: String) -> Result<(), StoreError> {
        let session_id = session_id.to_owned();
        let sql = "UPDATE sessions SET spec = ?2 WHERE session_id = ?1";
        self.direct(move |conn| conn.execute(sql, params![session_id, spec]).map(drop)).await
    }

    /// Inserts a session row, and the first events of its log in the same transaction; `false`
    /// (and nothing written) if a session with that id exists already.
    pub async fn insert_session(
        &self,
        row: SessionRow,
        events: Vec<String>,
    ) -> Result<bool, StoreError> {
        self.inner.writer.ask(|reply| Job::InsertSession { row, events, reply }).await?
    }

    /// Marks a session disposed.
    pub async fn dispose_session(&self, session_id: &str, now: u64) -> Result<(), StoreError> {
        let session_id = session_id.to_owned();
        self.inner.writer.ask(|reply| Job::Dispose { session_id, now, reply }).await?
    }

    /// The durability barrier: resolves once everything sent to the store before it is committed
    /// and on disk (under `normal` durability, commits skip the sync, so this syncs the WAL).
    /// `true` when that reached a database file, `false` for an in-memory store (nothing is
    /// durable); an error when the commit or the sync failed.
    pub async fn flush(&self) -> Result<bool, StoreError> {
        self.inner.writer.ask(|reply| Job::Flush { reply }).await??;
        Ok(!self.inner.in_memory && self.inner.faults.flush_may_succeed())
    }

    /// How many times a durability barrier synced the log itself (under `normal` durability).
    pub fn barrier_syncs(&self) -> u64 {
        self.inner.barrier_syncs.load(Ordering::SeqCst)
    }

    /// The faults a test may inject into this store.
    pub fn faults(&self) -> &Faults {
        &self.inner.faults
    }

    /// Events of a session with seq > `after` (all when `None`), at most `limit`; a fork's
    /// shared prefix is read from the session it shares it with ([`segments`]).
    pub async fn events(
        &self,
        session_id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let session_id = session_id.to_owned();
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT body FROM events WHERE session_id = ?1 AND seq > ?2 AND seq <= ?3 \
                 ORDER BY seq LIMIT ?4",
            )?;
            let mut events = Vec::new();
            for segment in segments(conn, &session_id)? {
                let left = limit - events.len();
                let from = segment.after(after);
                if left == 0 || from.is_some_and(|from| from >= segment.through) {
                    continue;
                }
                let params = params![
                    segment.session_id,
                    from.map_or(-1, |f| f as i64),
                    segment.through_sql(),
                    left as i64
                ];
                let rows = stmt.query_map(params, |r| r.get(0))?;
                for row in rows {
                    events.push(row?);
                }
            }
            Ok(events)
        })
        .await
    }

    /// The events of one type of a session (e.g. `agent/inbox/spliced`), in seq order.
    pub async fn events_of_type(
        &self,
        session_id: &str,
        kind: &'static str,
    ) -> Result<Vec<String>, StoreError> {
        let session_id = session_id.to_owned();
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT body FROM events WHERE session_id = ?1 AND type = ?2 AND seq > ?3 \
                 AND seq <= ?4 ORDER BY seq",
            )?;
            let mut events = Vec::new();
            for segment in segments(conn, &session_id)? {
                let from = segment.after(None).map_or(-1, |f| f as i64);
                let params = params![segment.session_id, kind, from, segment.through_sql()];
                for row in stmt.query_map(params, |r| r.get(0))? {
                    events.push(row?);
                }
            }
            Ok(events)
        })
        .await
    }

    /// The last seq of a session's log (`None` for an empty log); a fork's own, or the end of the
    /// prefix it shares.
    pub async fn last_seq(&self, session_id: &str) -> Result<Option<u64>, StoreError> {
        let session_id = session_id.to_owned();
        self.read(move |conn| super::writer::last_seq(conn, &session_id)).await
    }

    /// The idempotency record for a key, if it is younger than `max_age_ms`.
    pub async fn idempotency(
        &self,
        key: &str,
        now: u64,
        max_age_ms: u64,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        let (key, since) = (key.to_owned(), now.saturating_sub(max_age_ms) as i64);
        self.read(move |conn| {
            conn.query_row(
                "SELECT key, session_id, request_hash, response, created_at FROM idempotency WHERE key = ?1 AND created_at >= ?2",
                params![key, since],
                |r| Ok(IdempotencyRecord { key: r.get(0)?, session_id: r.get(1)?, request_hash: r.get(2)?, response: r.get(3)?, created_at: r.get::<_, i64>(4)? as u64 }),
            )
            .optional()
        })
        .await
    }

    /// Replaces the answer kept for an idempotency key.
    pub async fn set_idempotency_answer(
        &self,
        key: &str,
        response: String,
    ) -> Result<(), StoreError> {
        let key = key.to_owned();
        self.direct(move |conn| {
            conn.execute(
                "UPDATE idempotency SET response = ?2 WHERE key = ?1",
                params![key, response],
            )
        })
        .await?;
        Ok(())
    }

    /// Runs `f` on the writer's connection, outside the group commit (see [`Job::Direct`]).
    pub(super) async fn direct<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        let work = |reply: oneshot::Sender<_>| {
            Job::Direct(Box::new(move |conn: &Connection| drop(reply.send(f(conn)))))
        };
        Ok(self.inner.writer.ask(work).await??)
    }

    pub(super) async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        if self.inner.in_memory {
            return self.direct(f).await;
        }
        let permit = self.inner.reads.acquire().await.map_err(|_| StoreError::Closed)?;
        let inner = self.inner.clone();
        let read = tokio::task::spawn_blocking(move || {
            let pooled = inner.readers.lock().expect("reader pool lock").pop();
            let conn = match pooled {
                Some(conn) => conn,
                None => {
                    let conn = Connection::open(&inner.path)?;
                    configure(&conn, inner.durability)?;
                    // A pooled reader keeps a small private page cache (256 KiB, not SQLite's
                    // 2 MB): the OS caches the file for all of them.
                    conn.pragma_update(None, "cache_size", -256)?;
                    conn
                }
            };
            let result = f(&conn);
            inner.readers.lock().expect("reader pool lock").push(conn);
            Ok(result?)
        });
        let read = read.await.map_err(|_| StoreError::Closed)?;
        drop(permit);
        read
    }
}

/// The stretches a session's log is read from ([`Segment::chain`]).
pub(super) fn segments(conn: &Connection, session_id: &str) -> rusqlite::Result<Vec<Segment>> {
    let mut stmt = conn.prepare_cached(super::CHAIN_SQL)?;
    let links = stmt.query_map(params![session_id, super::MAX_FORK_CHAIN as i64], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get::<_, Option<i64>>(2)?.map(|s| s as u64)))
    })?;
    Ok(Segment::chain(session_id, links.collect::<Result<Vec<_>, _>>()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_valid() {
        migrations().validate().unwrap();
    }

    fn event(seq: u64) -> String {
        format!(r#"{{"type":"turn/start","seq":{seq},"time":1,"data":{{"turn":1}}}}"#)
    }

    #[tokio::test]
    async fn appends_are_durable_contiguous_and_refuse_a_gap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let store = Sqlite::open(&path, Durability::Full, CommitOn::Thread).unwrap();
        store.append("s", vec![event(0), event(1)], Index::default()).await.unwrap();
        let gap = store.append("s", vec![event(3)], Index::default()).await.unwrap_err();
        assert!(matches!(gap, StoreError::SeqMismatch { expected: 2, got: 3, .. }), "{gap}");
        let again = store.append("s", vec![event(1)], Index::default()).await.unwrap_err();
        assert!(matches!(again, StoreError::SeqMismatch { expected: 2, got: 1, .. }), "{again}");
        store.append("s", vec![event(2)], Index::default()).await.unwrap();
        drop(store);
        let reopened = Sqlite::open(&path, Durability::Full, CommitOn::Thread).unwrap();
        assert_eq!(reopened.events("s", None, 100).await.unwrap().len(), 3);
        assert_eq!(reopened.events("s", Some(0), 100).await.unwrap(), vec![event(1), event(2)]);
        assert_eq!(reopened.last_seq("s").await.unwrap(), Some(2));
        assert_eq!(reopened.last_seq("other").await.unwrap(), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_reads_at_once_all_answer_and_share_a_few_connections() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            Sqlite::open(&dir.path().join("r.db"), Durability::Full, CommitOn::Thread).unwrap();
        store.append("s", vec![event(0)], Index::default()).await.unwrap();
        let reads = (0..200).map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.events("s", None, 10).await })
        });
        for read in futures::future::join_all(reads).await {
            assert_eq!(read.unwrap().unwrap(), vec![event(0)]);
        }
        let pooled = store.inner.readers.lock().unwrap().len();
        assert!((1..=MAX_READS).contains(&pooled), "{pooled} reader connections");
    }

    #[tokio::test]
    async fn concurrent_appends_to_many_sessions_group_commit() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            Sqlite::open(&dir.path().join("g.db"), Durability::Normal, CommitOn::Thread).unwrap();
        let appends = (0..50).map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                store.append(&format!("s{i}"), vec![event(0)], Index::default()).await
            })
        });
        for append in appends {
            append.await.unwrap().unwrap();
        }
        for i in 0..50 {
            assert_eq!(store.last_seq(&format!("s{i}")).await.unwrap(), Some(0));
        }
    }

    #[tokio::test]
    async fn committing_on_the_callers_thread_commits_what_the_ready_tasks_sent_as_one_group() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let store = Sqlite::open(&path, Durability::Full, CommitOn::Caller).unwrap();
        let appends: Vec<_> = (0..50)
            .map(|i| {
                let store = store.clone();
                tokio::spawn(async move {
                    store.append(&format!("s{i}"), vec![event(0)], Index::default()).await
                })
            })
            .collect();
        for append in appends {
            append.await.unwrap().unwrap();
        }
        assert_eq!(store.inner.writer.groups(), Some(1), "the 50 appends share one commit");
        let gap = store.append("s0", vec![event(2)], Index::default()).await.unwrap_err();
        assert!(matches!(gap, StoreError::SeqMismatch { expected: 1, got: 2, .. }), "{gap}");
        store.append("s0", vec![event(1)], Index::default()).await.unwrap();
        assert!(store.flush().await.unwrap());
        drop(store);
        let reopened = Sqlite::open(&path, Durability::Full, CommitOn::Thread).unwrap();
        for i in 0..50 {
            let last = if i == 0 { 1 } else { 0 };
            assert_eq!(reopened.last_seq(&format!("s{i}")).await.unwrap(), Some(last));
        }
    }

    #[tokio::test]
    async fn an_in_memory_store_reads_its_writes_while_appends_run_and_flushes_false() {
        let store = Sqlite::open(Path::new(MEMORY), Durability::Normal, CommitOn::Thread).unwrap();
        let other = Sqlite::open(Path::new(MEMORY), Durability::Normal, CommitOn::Thread).unwrap();
        let writer = {
            let store = store.clone();
            tokio::spawn(async move {
                for seq in 0..200 {
                    store.append("s", vec![event(seq)], Index::default()).await.unwrap();
                }
            })
        };
        while !writer.is_finished() {
            let seen = store.events("s", None, 1000).await.unwrap().len();
            assert!(seen <= 200);
        }
        writer.await.unwrap();
        assert_eq!(store.last_seq("s").await.unwrap(), Some(199));
        assert_eq!(other.last_seq("s").await.unwrap(), None, "each one is its own database");
        assert!(!store.flush().await.unwrap(), "nothing reached a disk");

        let dir = tempfile::tempdir().unwrap();
        let file =
            Sqlite::open(&dir.path().join("f.db"), Durability::Normal, CommitOn::Thread).unwrap();
        assert!(file.flush().await.unwrap());
    }

    #[tokio::test]
    async fn flush_under_normal_durability_syncs_the_log_and_under_full_needs_no_extra_sync() {
        let dir = tempfile::tempdir().unwrap();
        let normal =
            Sqlite::open(&dir.path().join("n.db"), Durability::Normal, CommitOn::Thread).unwrap();
        normal.append("s", vec![event(0)], Index::default()).await.unwrap();
        assert_eq!(normal.barrier_syncs(), 0, "a commit under normal does not sync");
        assert!(normal.flush().await.unwrap());
        assert_eq!(normal.barrier_syncs(), 1, "the barrier synced the WAL itself");

        let full =
            Sqlite::open(&dir.path().join("f.db"), Durability::Full, CommitOn::Thread).unwrap();
        full.append("s", vec![event(0)], Index::default()).await.unwrap();
        assert!(full.flush().await.unwrap());
        assert_eq!(full.barrier_syncs(), 0, "every commit under full synced already");
    }

    #[tokio::test]
    async fn injected_faults_fail_commits_and_make_flush_answer_false() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            Sqlite::open(&dir.path().join("x.db"), Durability::Normal, CommitOn::Thread).unwrap();
        store.faults().fail_commits(1);
        let failed = store.append("s", vec![event(0)], Index::default()).await.unwrap_err();
        assert!(matches!(failed, StoreError::Commit(_)), "{failed}");
        assert_eq!(store.last_seq("s").await.unwrap(), None, "nothing was written");
        store.append("s", vec![event(0)], Index::default()).await.unwrap();

        store.faults().flush_false_after(1);
        assert!(store.flush().await.unwrap());
        assert!(!store.flush().await.unwrap());
        assert!(!store.flush().await.unwrap());
    }
}
