//! Where a session's events go: the [`Store`] in the gateway, a `MemoryLog` in the tests that
//! drive a session alone. Every append states the seqs it continues with, so a second writer or a
//! gap fails loudly instead of forking the log.

use futures::future::BoxFuture;

use airlock_store::{Index, ModelUsage, Snapshot, Store, StoreError};

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

    /// The session's newest snapshot without the core's state, if the host's head was kept with
    /// it (none: the session comes back awake, from [`SessionLog::snapshot`]).
    fn snapshot_head<'a>(
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

    /// What the session's responses spent, by model (a log that keeps no usage: nothing).
    fn usage<'a>(
        &'a self,
        _session_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<ModelUsage>, StoreError>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
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

    fn snapshot_head<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Snapshot>, StoreError>> {
        Box::pin(Store::snapshot_head(self, session_id))
    }

    fn save_snapshot(&self, snapshot: Snapshot) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(Store::save_snapshot(self, snapshot))
    }

    fn usage<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<ModelUsage>, StoreError>> {
        Box::pin(self.session_usage(session_id))
    }

    fn keeps_snapshots(&self) -> bool {
        true
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
