//! An idle session sleeps: its core instance (tens of KB of linear memory, a wasmtime store) is
//! dropped after a snapshot of its state is durable, and the next input wakes it from that
//! snapshot in well under a millisecond. Everything else (the inbox mirror, the goal, the
//! subscribers) stays, so sleeping changes nothing anyone can see, not even the log: the core
//! restored from its snapshot is the core that slept.

use airlock_core::Status;

use super::load::Loaded;
use super::{Session, SessionError};

impl Session {
    /// Whether the session may sleep now: awake, idle, and its log keeps snapshots.
    pub fn can_sleep(&self) -> bool {
        self.core.is_some() && self.status == Status::Idle && self.log.keeps_snapshots()
    }

    /// Drops the core instance once a snapshot of its state is durable; answers whether it
    /// sleeps. Work a task might still answer is disowned first, as after a rebuild.
    pub async fn sleep(&mut self) -> bool {
        if !self.can_sleep() || (self.next_seq > self.snapshot_seq && !self.save_snapshot().await) {
            return false;
        }
        self.generation += 1;
        self.tasks.abort_all();
        self.streams.clear();
        self.core = None;
        crate::metrics::global().asleep.inc();
        true
    }

    /// Restores the core of a sleeping session from its snapshot (and any events after it).
    pub(super) async fn wake(&mut self) -> Result<(), SessionError> {
        if self.core.is_some() {
            return Ok(());
        }
        let loaded = Loaded::load(&self.host, &self.config, self.log.as_ref()).await?;
        self.core = Some(loaded.core);
        crate::metrics::global().asleep.dec();
        Ok(())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.core.is_none() {
            crate::metrics::global().asleep.dec();
        }
    }
}
