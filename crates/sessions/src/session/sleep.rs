//! Snapshots of the core's state, and sleep.
//!
//! An idle session keeps a snapshot every [`SNAPSHOT_EVERY`] events, so waking it after an
//! eviction folds only the events after it; and not before the log has grown by the last
//! snapshot's size, so a big state (a long inbox) is not written again for every few events. An idle session also sleeps: its core instance (tens
//! of KB of linear memory, a wasmtime store) is dropped after a snapshot of its state is durable,
//! and the next input wakes it from that snapshot in well under a millisecond. Everything else (the inbox mirror, the goal, the
//! subscribers) stays, so sleeping changes nothing anyone can see, not even the log: the core
//! restored from its snapshot is the core that slept.
//!
//! A session whose turn waits only for people (an approval, a client's result) sleeps too: its
//! core's `waiting_state` is kept with the snapshot, its timers keep running, and the answer or
//! a timer that fires wakes the same agent with `wake_from`.

use airlock_core::Status;

use super::load::{Head, Loaded, SnapshotMark};
use super::{Session, SessionError};
use airlock_store::Snapshot;

/// How many events an idle session logs before it keeps a new snapshot of its core's state.
pub const SNAPSHOT_EVERY: u64 = 256;

impl Session {
    /// Keeps a snapshot of the core's state when the agent is idle and at least
    /// [`SNAPSHOT_EVERY`] events, and as many bytes of events as the last snapshot held, were
    /// logged since the last one (`SnapshotMark`), so that waking the session later folds only
    /// the events after it. A failure only costs that speed.
    pub async fn snapshot_if_due(&mut self) {
        let mark = self.snapshot;
        if self.status == Status::Idle
            && self.next_seq >= mark.seq + SNAPSHOT_EVERY
            && mark.logged >= mark.len
        {
            self.save_snapshot().await;
        }
    }

    /// Saves a snapshot of an awake core's state; answers whether it is saved.
    async fn save_snapshot(&mut self) -> bool {
        let Some(core) = self.core.as_mut() else { return false };
        let state = match core.snapshot() {
            Ok(state) => state,
            Err(error) => {
                tracing::warn!(session_id = self.id(), %error, "no snapshot");
                return false;
            }
        };
        let len = state.len();
        let head = {
            let inbox = self.inbox.lock();
            let head = Head { next_seq: self.next_seq, inbox: &*inbox, paused: self.paused };
            serde_json::to_string(&head).expect("an inbox serializes")
        };
        let snapshot = Snapshot {
            session_id: self.config.session_id.clone(),
            next_seq: self.next_seq,
            core: self.host.hash().to_owned(),
            state,
            head: Some(head),
            parent: self.parent.0.clone(),
            goal: None,
        };
        match self.log.save_snapshot(snapshot).await {
            Ok(()) => {
                self.snapshot = SnapshotMark { seq: self.next_seq, len, logged: 0 };
                true
            }
            Err(error) => {
                tracing::warn!(session_id = self.id(), %error, "no snapshot");
                false
            }
        }
    }

    /// Whether the session may sleep now: awake and not compacting, its log keeps snapshots,
    /// and it is idle or its turn seems to wait only for people (some call waits for an answer
    /// and no model stream runs; the core has the last word, [`Session::sleep`]).
    pub fn can_sleep(&self) -> bool {
        let waits =
            || self.streams.is_empty() && !self.waiting.lock().expect("waiting lock").is_empty();
        self.core.is_some()
            && !self.compacting
            && self.log.keeps_snapshots()
            && (self.status == Status::Idle || waits())
    }

    /// Drops the core instance once a snapshot of its state is durable; answers whether it
    /// sleeps. An idle session disowns work a task might still answer, as after a rebuild. A
    /// session whose turn waits only for people keeps what its core answers for that
    /// (`waiting_state`) and its timers (a client's timeout, the turn's deadline), which wake
    /// it when they fire; a call that runs beside the waiting ones keeps it awake.
    pub async fn sleep(&mut self) -> bool {
        if !self.can_sleep() {
            return false;
        }
        let waiting = match (self.status, self.core.as_mut()) {
            (Status::Running, Some(core)) => match core.waiting_state() {
                Ok(Some(waiting)) => Some(waiting),
                Ok(None) | Err(_) => return false,
            },
            _ => None,
        };
        if self.next_seq > self.snapshot.seq && !self.save_snapshot().await {
            return false;
        }
        if waiting.is_none() {
            self.generation += 1;
            self.tasks.abort_all();
            self.streams.clear();
        }
        self.waiting_turn = waiting;
        (self.core, self.instance) = (None, None);
        airlock_base::metrics::global().asleep.inc();
        true
    }

    /// Restores the core of a sleeping session from its snapshot (and any events after it). For
    /// new work (`new`) the instance must fit under the gateway's ceiling; work admitted before
    /// (a cancel, a child's notice, a recovery) is counted but never refused.
    pub(super) async fn wake(&mut self, new: bool) -> Result<(), SessionError> {
        if self.core.is_some() {
            return Ok(());
        }
        let instance = self.accounting.admission.instance_for(new)?;
        let (host, config, log) = (&self.host, &self.config, self.log.as_ref());
        let waiting = self.waiting_turn.take();
        let woken = match &waiting {
            Some(waiting) => Loaded::waiting(host, config, log, self.next_seq, waiting).await,
            None => Loaded::load(host, config, log).await,
        };
        let loaded = match woken {
            Ok(loaded) => loaded,
            Err(error) if waiting.is_some() => {
                // Its turn goes on waiting as after a restart (`recover`), from the whole log.
                tracing::warn!(session_id = self.id(), %error, "the waiting turn did not wake");
                self.owes_recovery = true;
                Loaded::from_log(host, config, log).await?
            }
            Err(error) => return Err(error),
        };
        // Nothing was logged while it slept: the core's snapshot is where the host's is.
        (self.core, self.instance, self.snapshot) = (loaded.core, Some(instance), loaded.snapshot);
        airlock_base::metrics::global().asleep.dec();
        self.recover().await
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.core.is_none() {
            airlock_base::metrics::global().asleep.dec();
        }
    }
}
