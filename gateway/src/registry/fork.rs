//! Forks (`docs/semantics.md`, "Approvals, client tools and forks"): a new session whose log is a copy of
//! another's up to a seq, closed as crash repair closes a turn, then `session/end-seed`.

use airlock_core::{EndSeed, Event, EventData, fold_log, repair};

use super::{ForkedFrom, HubNotice, Registry, RegistryError, SessionSpec, valid_session_id};
use crate::store::{Index, Owner, SessionRow};

impl Registry {
    /// Forks `source` at `at_seq` (its last event when `None`) into a new session `fork_id` of
    /// `tenant`, and answers its row. The fork's log is the source's events through `at_seq`;
    /// a turn open there is closed `interrupted` with the crash-repair closers, and input still
    /// pending there is cancelled (it was sent to the source); `session/end-seed` ends the seed.
    /// The fork rests until its first input; the source is not touched.
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
        let mut events = self.store.events(source, None, at as usize + 1).await?;
        events.extend(seal(&events, &fork_id)?);
        let mut spec: SessionSpec = serde_json::from_value(row.spec).unwrap_or_default();
        spec.forked_from = Some(ForkedFrom { session_id: source.to_owned(), seq: at });
        let _exclusive = self.exclusive(&fork_id).await;
        let fork = spec.row(&fork_id, None, tenant);
        if !self.store.insert_session(fork.clone()).await? {
            return Err(RegistryError::Taken(fork_id));
        }
        crate::metrics::global().stored_sessions.inc();
        if let Owner::Elsewhere { address } = self.store.acquire(&fork_id).await? {
            return Err(RegistryError::Elsewhere { session_id: fork_id, address });
        }
        let index = Index { at_rest: true, ..Index::default() };
        let appended = self.store.append(&fork_id, events, index).await;
        // The fork rests; a lease not given back runs out by itself.
        let _ = self.store.release(&fork_id).await;
        appended?;
        let _ = self.hub.send(HubNotice::Added { session_id: fork_id });
        Ok(fork)
    }
}

/// The events that end a fork's copied prefix: the closers of a turn left open, cancelled
/// splices for pending input, and `session/end-seed`; seqs and times continue the prefix.
fn seal(prefix: &[String], fork_id: &str) -> Result<Vec<String>, RegistryError> {
    let unreadable = |message: String| RegistryError::BadSpec { field: "atSeq", message };
    let mut durable = fold_log(prefix).map_err(unreadable)?;
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
    Ok(sealing.iter().map(Event::to_json).collect())
}
