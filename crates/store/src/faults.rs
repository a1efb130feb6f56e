//! Faults a test can inject into a [`Store`](super::Store): a commit that fails as a full disk
//! would, a durability barrier that reaches nothing, an append that stalls holding its lease. Off
//! unless a test turns them on; checking them costs one atomic load per commit or flush, and an
//! uncontended lock per PostgreSQL append.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// The faults of one store.
#[derive(Debug)]
pub struct Faults {
    /// Group commits still to fail.
    failing_commits: AtomicU64,
    /// Flushes still to answer as usual before they answer `false` (`u64::MAX`: all of them).
    true_flushes: AtomicU64,
    /// The next append (PostgreSQL) stalls once it holds its lease's row.
    stall: Mutex<Option<Stall>>,
}

/// An append that stops once it holds its lease's row locked, as in a gateway paused mid-append.
#[derive(Clone, Debug, Default)]
pub struct Stall {
    /// Notified when the append holds the row.
    pub reached: Arc<Notify>,
    /// Notify this to let the append go on.
    pub resume: Arc<Notify>,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            failing_commits: AtomicU64::new(0),
            true_flushes: AtomicU64::new(u64::MAX),
            stall: Mutex::default(),
        }
    }
}

impl Faults {
    /// The next `count` group commits fail: nothing of them is written and every job in them
    /// answers [`StoreError::Commit`](super::StoreError::Commit).
    pub fn fail_commits(&self, count: u64) {
        self.failing_commits.store(count, Ordering::SeqCst);
    }

    /// After `count` more flushes answer as usual, flushes answer `false` (nothing durable), as an
    /// in-memory store's do.
    pub fn flush_false_after(&self, count: u64) {
        self.true_flushes.store(count, Ordering::SeqCst);
    }

    /// The next append on PostgreSQL stalls once it holds its lease's row locked, until the
    /// answer's `resume` is notified.
    pub fn stall_next_append(&self) -> Stall {
        let stall = Stall::default();
        *self.stall.lock().expect("faults lock") = Some(stall.clone());
        stall
    }

    /// The stall this append is to make, if any (taking it).
    pub(super) fn take_stall(&self) -> Option<Stall> {
        self.stall.lock().expect("faults lock").take()
    }

    /// Whether this commit is to fail (counting it).
    pub(super) fn take_commit_failure(&self) -> bool {
        take_one(&self.failing_commits)
    }

    /// Whether this flush may answer `true` (counting it).
    pub(super) fn flush_may_succeed(&self) -> bool {
        let left = self.true_flushes.load(Ordering::SeqCst);
        left == u64::MAX || take_one(&self.true_flushes)
    }
}

/// Takes one from a counter that is above zero; `false` at zero.
fn take_one(counter: &AtomicU64) -> bool {
    counter.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok()
}
