//! Forks (`docs/semantics.md`, "Approvals, client tools and forks"): a new session whose log is
//! another's up to a seq, closed as crash repair closes a turn, then `session/end-seed`.
//!
//! A fork shares that prefix instead of copying it: its row names the session and seq it shares
//! through, and the store reads its log as the shared prefix and then its own events. So a fork of
//! a 100,000-event log writes as little as a fork of an empty one: its row and the few events
//! that seal the prefix. The state the seal needs is folded from the source's newest snapshot
//! and the events after it, not from the whole prefix.

use airlock_core::{Durable, EndSeed, Event, EventData, fold_after, fold_snapshot, repair};

use super::{ForkedFrom, HubNotice, Registry, RegistryError, SessionSpec, valid_session_id};
use airlock_store::{MAX_FORK_CHAIN, SessionRow};

impl Registry {
    /// Forks `source` at `at_seq` (its last event when `None`) into a new session `fork_id` of
    /// `tenant`, and answers its row. The fork's log is the source's events through `at_seq`;
    /// a turn open there is closed `interrupted` with the crash-repair closers, and input still
    /// pending there is cancelled (it was sent to the source); `session/end-seed` ends the seed.
    /// The fork rests until its first input; the source is not touched, and disposing it later
    /// leaves the fork whole. A fork counts as a session of `tenant` (its rate of creations, its
    /// quotas).
    pub async fn fork(
        &self,
        source: &str,
        at_seq: Option<u64>,
        fork_id: String,
        tenant: Option<String>,
    ) -> Result<SessionRow, RegistryError> {
        if !valid_session_id(&fork_id) {
            return Err(RegistryError::BadId(fork_id));
        }
        let row = self.store.session(source).await?;
        let row = row.ok_or_else(|| RegistryError::NotFound(source.to_owned()))?;
        let last = self.store.last_seq(source).await?;
        let at = match (at_seq, last) {
            (Some(at), Some(last)) if at <= last => at,
            (None, Some(last)) => last,
            (at, last) => {
                let logged = match last {
                    Some(last) => format!("its last is {last}"),
                    None => "it has none: send it a message first".to_owned(),
                };
                let (session_id, at) = (source.to_owned(), at.unwrap_or_default());
                return Err(RegistryError::NotLogged { session_id, at, logged });
            }
        };
        self.admit_session(tenant.as_deref()).await?;
        let base = self.shared_base(&row, at).await?;
        let copied = match base {
            Some(_) => Vec::new(),
            None => self.store.events(source, None, at as usize + 1).await?,
        };
        let prefix = self.fold_through(source, at).await?;
        let mut events = copied;
        events.extend(seal(prefix, &fork_id));
        let mut spec: SessionSpec = serde_json::from_value(row.spec).unwrap_or_default();
        spec.forked_from = Some(ForkedFrom { session_id: source.to_owned(), seq: at });
        let _exclusive = self.exclusive(&fork_id).await;
        let mut fork = spec.row(&fork_id, None, tenant);
        fork.shares = base;
        if !self.store.insert_fork(fork.clone(), events).await? {
            return Err(RegistryError::Taken(fork_id));
        }
        airlock_base::metrics::global().stored_sessions.inc();
        let _ = self.hub.send(HubNotice::Added { session_id: fork_id });
        Ok(fork)
    }

    /// Where a fork of `row`'s session at `at` reads its prefix from: the first session of the
    /// source's chain of shared logs whose own events reach `at` (a fork of a fork inside the
    /// part it shares reads from further back). `None` when that chain is as long as a chain may
    /// be: the fork then copies its prefix.
    async fn shared_base(
        &self,
        row: &SessionRow,
        at: u64,
    ) -> Result<Option<(String, u64)>, RegistryError> {
        let (mut base, mut shares) = (row.session_id.clone(), row.shares.clone());
        while let Some((source, _)) = shares.take_if(|(_, through)| at <= *through) {
            shares = self.store.session(&source).await?.and_then(|row| row.shares);
            base = source;
        }
        let mut links = 2; // the fork and `base`
        while let Some((source, _)) = shares {
            links += 1;
            if links > MAX_FORK_CHAIN {
                return Ok(None);
            }
            shares = self.store.session(&source).await?.and_then(|row| row.shares);
        }
        Ok(Some((base, at)))
    }

    /// The durable state of `source`'s log through `at`: from its newest snapshot at or before
    /// `at` and the events after it, else from the whole prefix.
    async fn fold_through(&self, source: &str, at: u64) -> Result<Durable, RegistryError> {
        let unreadable = |message: String| RegistryError::BadSpec { field: "atSeq", message };
        let snapshot = self.store.snapshot(source).await?;
        if let Some(snapshot) = snapshot.filter(|s| s.next_seq > 0 && s.next_seq <= at + 1) {
            let after = snapshot.next_seq - 1;
            let tail = self.store.events(source, Some(after), (at - after) as usize).await?;
            if let Ok(durable) = fold_snapshot(&snapshot.state, &tail) {
                return Ok(durable);
            }
        }
        let prefix = self.store.events(source, None, at as usize + 1).await?;
        fold_after(Durable::default(), &prefix).map_err(unreadable)
    }
}

/// The events that end a fork's prefix (folded into `durable`): the closers of a turn left open,
/// cancelled splices for pending input, and `session/end-seed`; seqs and times continue the
/// prefix.
fn seal(mut durable: Durable, fork_id: &str) -> Vec<String> {
    let time = durable.last_time;
    let mut sealing = match &durable.open_turn {
        Some(open) => repair(open, fork_id, durable.next_seq, time),
        None => Vec::new(),
    };
    for event in &sealing {
        durable.fold(event);
    }
    let pending = durable.inbox.clear();
    let mut seal = |data| {
        let event = Event { seq: durable.next_seq, time, data, source_event_seqs: None };
        durable.fold(&event);
        sealing.push(event);
    };
    for splice in pending {
        seal(EventData::InboxSpliced(splice));
    }
    seal(EventData::EndSeed(EndSeed {}));
    sealing.iter().map(Event::to_json).collect()
}
