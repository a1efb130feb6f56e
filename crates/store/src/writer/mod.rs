//! The writer: owns the one writing connection and commits in groups, on a thread of its own or
//! on the thread of a task that waits for a commit ([`CommitOn`]).
//!
//! Each round takes every job waiting, applies each inside its own savepoint (one job's failure
//! does not undo the others), commits once, then answers every job. Callers learn of a commit only
//! after it happened, so nothing is acknowledged that is not durable.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::{Faults, Index, SessionRow, Snapshot, StoreError};
use group::{commit_group, fail_all};
pub(crate) use group::{last_seq, receipt};

mod group;

/// How hard commits hold on to the disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// `synchronous=FULL`: an acknowledged input survives power loss.
    #[default]
    Full,
    /// `synchronous=NORMAL`: faster; power loss may drop the last commits (a crash does not).
    Normal,
}

impl Durability {
    pub(super) fn pragma(self) -> &'static str {
        match self {
            Durability::Full => "FULL",
            Durability::Normal => "NORMAL",
        }
    }
}

type Reply<T> = oneshot::Sender<Result<T, StoreError>>;

/// The most jobs committed in one transaction.
const MAX_GROUP: usize = 1024;

/// The most sessions whose next seq the writer remembers between commits.
const MAX_REMEMBERED_SESSIONS: usize = 65_536;

pub(super) enum Job {
    Append {
        session_id: String,
        events: Vec<String>,
        index: Index,
        reply: Reply<()>,
    },
    AtRest {
        session_id: String,
        reply: Reply<()>,
    },
    Snapshot {
        snapshot: Snapshot,
        reply: Reply<()>,
    },
    /// A new session, with the first events of its log (a fork's seal) in the same savepoint.
    InsertSession {
        row: SessionRow,
        events: Vec<String>,
        reply: Reply<bool>,
    },
    Dispose {
        session_id: String,
        now: u64,
        reply: Reply<()>,
    },
    /// A barrier: answered once every job sent before it is committed and synced to disk.
    Flush {
        reply: Reply<()>,
    },
    /// Work on the writer's connection outside the group commit, run after the group it came
    /// with is committed: a read of an in-memory database (it has no other connection), or a rare
    /// write beside the logs (API keys).
    Direct(Box<dyn FnOnce(&Connection) + Send>),
}

/// Where a SQLite store's commits run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CommitOn {
    /// A thread of the store's own: tasks on any runtime hand it their jobs, and it commits
    /// whatever has arrived as one group.
    #[default]
    Thread,
    /// The thread of a task that waits for its job, once the other tasks ready to run have handed
    /// over theirs (they share the commit): for a runtime of one thread, where a commit then
    /// goes to no other thread and back. That thread is blocked while the commit syncs.
    Caller,
}

/// The handle async code uses to reach the writer.
pub(super) struct Writer(Route);

enum Route {
    /// The writer thread's queue.
    Thread(mpsc::Sender<Job>),
    /// Jobs that the next task to wait for one commits ([`CommitOn::Caller`]).
    Caller(Arc<Mutex<Queued>>),
}

struct Queued {
    jobs: Vec<Job>,
    committer: Committer,
}

/// What a flush does once the commit before it landed. Under `full` durability every commit has
/// synced the WAL already; under `normal` none has, so the barrier syncs the WAL file itself.
pub(super) struct Barrier {
    /// The WAL file to sync, under `normal` durability.
    pub wal: Option<PathBuf>,
    /// Syncs done by barriers.
    pub syncs: Arc<AtomicU64>,
}

impl Barrier {
    fn sync(&self) -> Result<(), String> {
        let Some(wal) = &self.wal else { return Ok(()) };
        let synced = std::fs::File::open(wal).and_then(|file| file.sync_all());
        match synced {
            Ok(()) => {}
            // No WAL: a checkpoint moved every commit into the database file and synced it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.to_string()),
        }
        self.syncs.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

impl Writer {
    pub(super) fn new(
        conn: Connection,
        barrier: Barrier,
        faults: Arc<Faults>,
        on: CommitOn,
    ) -> Writer {
        let committer = Committer { conn, next_seq: HashMap::new(), barrier, faults, groups: 0 };
        match on {
            CommitOn::Thread => {
                let (jobs, queue) = mpsc::channel();
                std::thread::Builder::new()
                    .name("airlock-sqlite-writer".into())
                    .spawn(move || run(committer, queue))
                    .expect("spawning the writer thread");
                Writer(Route::Thread(jobs))
            }
            CommitOn::Caller => {
                Writer(Route::Caller(Arc::new(Mutex::new(Queued { jobs: Vec::new(), committer }))))
            }
        }
    }

    /// Hands the writer the job `job` makes of its reply, and waits for the reply: sent by the
    /// writer thread once the job's group is committed, or committed here first, with every job
    /// the tasks ready to run send meanwhile ([`CommitOn::Caller`]).
    pub(super) async fn ask<T>(
        &self,
        job: impl FnOnce(oneshot::Sender<T>) -> Job,
    ) -> Result<T, StoreError> {
        let (reply, done) = oneshot::channel();
        match &self.0 {
            Route::Thread(jobs) => jobs.send(job(reply)).map_err(|_| StoreError::Closed)?,
            Route::Caller(queued) => {
                queued.lock().expect("writer lock").jobs.push(job(reply));
                // The other tasks ready now run first: what they send joins this commit.
                tokio::task::yield_now().await;
                let mut queued = queued.lock().expect("writer lock");
                let Queued { jobs, committer } = &mut *queued;
                while !jobs.is_empty() {
                    let group = jobs.drain(..jobs.len().min(MAX_GROUP)).collect();
                    committer.round(group);
                }
            }
        }
        done.await.map_err(|_| StoreError::Closed)
    }

    /// How many groups were committed ([`CommitOn::Caller`] only).
    #[cfg(test)]
    pub(super) fn groups(&self) -> Option<u64> {
        match &self.0 {
            Route::Thread(_) => None,
            Route::Caller(queued) => Some(queued.lock().expect("writer lock").committer.groups),
        }
    }
}

fn run(mut committer: Committer, queue: mpsc::Receiver<Job>) {
    while let Ok(first) = queue.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match queue.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        committer.round(group);
    }
}

/// The one writing connection, and what it remembers between groups.
struct Committer {
    conn: Connection,
    /// The next seq of each session this writer has appended to: the log's own guard against a
    /// second writer or a gap, checked before SQLite's primary key would be.
    next_seq: HashMap<String, u64>,
    barrier: Barrier,
    faults: Arc<Faults>,
    /// Groups committed.
    groups: u64,
}

impl Committer {
    /// Commits the jobs of a group in one transaction, then runs its direct work.
    fn round(&mut self, group: Vec<Job>) {
        let (direct, group): (Vec<_>, Vec<_>) =
            group.into_iter().partition(|job| matches!(job, Job::Direct(_)));
        if !group.is_empty() {
            self.groups += 1;
            airlock_base::metrics::global().commit_batch.observe(group.len() as f64);
            if self.faults.take_commit_failure() {
                fail_all(group, "an injected fault refused the commit");
            } else {
                let started = std::time::Instant::now();
                commit_group(&mut self.conn, group, &mut self.next_seq, &self.barrier);
                let took = started.elapsed().as_secs_f64();
                airlock_base::metrics::global().commit_seconds.observe(took);
            }
            if self.next_seq.len() > MAX_REMEMBERED_SESSIONS {
                // Only a shortcut: a session not remembered has its next seq read from the log.
                self.next_seq.clear();
            }
        }
        for job in direct {
            if let Job::Direct(work) = job {
                work(&self.conn);
            }
        }
    }
}
