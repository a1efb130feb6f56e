//! Recovery, and what a gateway does when it shares its store with others (`docs/deploy.md`):
//! it renews the leases of the sessions it runs, lets go of those another gateway took (it was
//! stalled past its lease), and takes over those whose gateway died, repairing each exactly as a
//! restart would.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use airlock_core::Status;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use super::evict::at_rest_now;
use super::{HubNotice, Registry, RegistryError};
use crate::session::{Notice, SessionError, Work};
use airlock_store::Owner;

/// A change to a session, as a gateway tells the others sharing its store (for their
/// `GET /v1/events`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterNotice {
    /// The gateway it comes from.
    pub node: String,
    /// What changed.
    #[serde(flatten)]
    pub change: Change,
}

/// What changed, named as the cross-session stream names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event")]
pub enum Change {
    /// A session was created.
    #[serde(rename = "session.added")]
    Added {
        /// The session.
        #[serde(rename = "sessionId")]
        session_id: String,
    },
    /// A session was disposed.
    #[serde(rename = "session.removed")]
    Removed {
        /// The session.
        #[serde(rename = "sessionId")]
        session_id: String,
    },
    /// A session this gateway runs changed status.
    #[serde(rename = "session.status")]
    Status {
        /// The session.
        #[serde(rename = "sessionId")]
        session_id: String,
        /// Its whole-agent status.
        status: Status,
    },
}

impl Change {
    /// The session it is about.
    pub fn session_id(&self) -> &str {
        match self {
            Change::Added { session_id }
            | Change::Removed { session_id }
            | Change::Status { session_id, .. } => session_id,
        }
    }
}

impl Registry {
    /// Brings back the stored sessions the log says were not at rest: each is rebuilt from its
    /// log, its open turn closed, its accepted followups run. Children come back too, for their
    /// parents may be owed a notice. Sessions at rest stay on disk until they are used. Called
    /// once at start, before the gateway is ready; answers how many came back. (In a store shared
    /// by several gateways, only sessions no live gateway holds: see [`Registry::start_leasing`].)
    pub async fn recover_all(&self) -> Result<usize, RegistryError> {
        let stored = self.store.session_count().await?;
        airlock_base::metrics::global().stored_sessions.set(stored as i64);
        self.recover_orphans().await
    }

    /// Brings back every session [`Store::sessions_to_recover`] names, as far as the machine
    /// holds them; answers how many. Those the gateway has no room for (see
    /// [`crate::admission::Admission::instance`]) stay on disk for a later pass.
    async fn recover_orphans(&self) -> Result<usize, RegistryError> {
        let mut count = 0;
        let mut cursor = None;
        let mut left = 0;
        loop {
            let rows = self.store.sessions_to_recover(cursor.clone(), 500).await?;
            let Some(last) = rows.last() else { break };
            cursor = Some(last.session_id.clone());
            for row in rows {
                if self.get(&row.session_id).is_ok() {
                    continue; // a request brought it back already
                }
                let handle = match self.bring_back(row, Work::New).await {
                    Ok(handle) => handle,
                    // Another gateway took it first.
                    Err(RegistryError::Elsewhere { .. }) => continue,
                    Err(
                        RegistryError::Exceeded(_)
                        | RegistryError::Session(SessionError::Exceeded(_)),
                    ) => {
                        left += 1;
                        continue;
                    }
                    Err(error @ RegistryError::Unusable { .. }) => {
                        // One session's setting must not keep the others from coming back.
                        tracing::error!(%error, "a stored session was not brought back");
                        continue;
                    }
                    Err(other) => return Err(other),
                };
                if at_rest_now(&handle) {
                    // Recovery found nothing to do (a log from before the index, or a child).
                    self.store.set_at_rest(handle.id()).await?;
                }
                count += 1;
            }
        }
        self.unrecovered.store(left, std::sync::atomic::Ordering::Relaxed);
        if left > 0 {
            tracing::warn!(
                left,
                "the machine holds no more sessions now; the rest come back as others finish"
            );
        }
        Ok(count)
    }

    /// Brings back, each second, the stored sessions a pass of recovery had no room for, once
    /// the gateway has room again (in a store shared with other gateways, the lease task's
    /// passes do this).
    pub fn start_recovering_leftovers(self: &Arc<Self>) {
        if self.store.shared() {
            return;
        }
        self.every(Duration::from_secs(1), |this| async move {
            let admission = this.admission();
            let left = this.unrecovered.load(std::sync::atomic::Ordering::Relaxed);
            if left > 0
                && admission.instances() < admission.instance_ceiling()
                && let Err(error) = this.recover_orphans().await
            {
                tracing::warn!(%error, "bringing back the sessions left at start failed");
            }
        });
    }

    /// Where a session runs: [`Owner::Here`] when it is live here, or when no live gateway holds
    /// it (this one may take it).
    pub async fn locate(&self, session_id: &str) -> Result<Owner, RegistryError> {
        if self.live.lock().expect("registry lock").contains_key(session_id) {
            return Ok(Owner::Here);
        }
        Ok(self.store.owner(session_id).await?)
    }

    /// In a store shared with other gateways: renews this gateway's leases, and takes over the
    /// sessions no live gateway holds, each a fifth of the lease time, until the registry is gone
    /// or stopping. A gateway that dies is thus replaced within the lease time and a fifth.
    pub fn start_leasing(self: &Arc<Self>) {
        let Some(lease) = self.store.lease() else { return };
        let tick = (lease / 5).max(Duration::from_millis(10));
        // Renewing has its own task: taking over many sessions must not delay it.
        self.every(tick, |this| async move {
            match this.store.renew().await {
                Ok(lost) => lost.iter().for_each(|session_id| this.let_go(session_id)),
                Err(error) => tracing::warn!(%error, "renewing this gateway's leases failed"),
            }
        });
        // An append that found the session taken: let go of it at once, not at the next renewal.
        if let Some(mut fenced) = self.store.fenced() {
            let registry = Arc::downgrade(self);
            tokio::spawn(async move {
                // Renewal reports those missed.
                while let Some(session_id) = next(&mut fenced).await {
                    let Some(this) = registry.upgrade() else { return };
                    this.let_go(&session_id);
                }
            });
        }
        self.every(tick, |this| async move {
            if let Err(error) = this.recover_orphans().await {
                tracing::warn!(%error, "taking over the sessions of a gateway that died failed");
            }
        });
    }

    /// In a store shared with other gateways: tells them of this one's session changes (sessions
    /// created and disposed here, and the statuses of those it runs), until the registry is gone.
    pub fn start_publishing(self: &Arc<Self>) {
        let Some(node) = self.store.node().map(str::to_owned) else { return };
        let mut hub = self.subscribe();
        let registry = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut watchers: HashMap<String, tokio::task::JoinHandle<()>> = HashMap::new();
            while let Some(notice) = next(&mut hub).await {
                let Some(this) = registry.upgrade() else { return };
                let session_id = notice.session_id().to_owned();
                let change = match notice {
                    HubNotice::Added { session_id } => Some(Change::Added { session_id }),
                    HubNotice::Removed { session_id } => Some(Change::Removed { session_id }),
                    HubNotice::Woken { .. } => None,
                };
                if let Some(change) = change {
                    this.publish(&ClusterNotice { node: node.clone(), change }).await;
                }
                // A session now running here: its statuses, once per outbox.
                watchers.retain(|_, watcher| !watcher.is_finished());
                if !watchers.contains_key(&session_id)
                    && let Ok(handle) = this.get(&session_id)
                {
                    let notices = handle.subscribe();
                    let watcher = publish_statuses(
                        registry.clone(),
                        node.clone(),
                        session_id.clone(),
                        notices,
                    );
                    watchers.insert(session_id, tokio::spawn(watcher));
                }
            }
        });
    }

    async fn publish(&self, notice: &ClusterNotice) {
        let payload = serde_json::to_string(notice).expect("notices serialize");
        if let Err(error) = self.store.publish(&payload).await {
            tracing::warn!(%error, "telling the other gateways of a session change failed");
        }
    }

    /// Runs `work` every `tick` until the registry is gone or stopping.
    fn every<F: Future<Output = ()> + Send + 'static>(
        self: &Arc<Self>,
        tick: Duration,
        work: impl Fn(Arc<Registry>) -> F + Send + 'static,
    ) {
        let registry = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(tick).await;
                let Some(this) = registry.upgrade() else { return };
                if this.shutting_down() {
                    return;
                }
                work(this).await;
            }
        });
    }

    /// Drops a session whose lease another gateway took (this one stalled past it): it runs there
    /// now, and the next request for it here is forwarded there. Its followers here see their
    /// streams end, to resume there with `Last-Event-ID`.
    fn let_go(&self, session_id: &str) {
        tracing::warn!(session_id, "another gateway took this session's lease; it runs there now");
        self.drop_live(session_id);
    }
}

/// The next value `receiver` gets, passing over what it missed by lagging; `None` once the
/// sender is gone.
async fn next<T: Clone>(receiver: &mut broadcast::Receiver<T>) -> Option<T> {
    loop {
        match receiver.recv().await {
            Ok(value) => return Some(value),
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return None,
        }
    }
}

/// Publishes a session's status changes until its outbox closes or the registry is gone.
async fn publish_statuses(
    registry: std::sync::Weak<Registry>,
    node: String,
    session_id: String,
    mut notices: broadcast::Receiver<Notice>,
) {
    loop {
        match notices.recv().await {
            Ok(Notice::Status(status)) => {
                let Some(this) = registry.upgrade() else { return };
                let (node, session_id) = (node.clone(), session_id.clone());
                this.publish(&ClusterNotice {
                    node,
                    change: Change::Status { session_id, status },
                })
                .await;
            }
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}
