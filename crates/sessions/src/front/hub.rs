//! The hub: every session's comings and goings and status changes, on this gateway and (when
//! the store is shared) the others, for one tenant or all.

use std::collections::HashMap;

use airlock_core::Status;
use tokio::sync::{broadcast, mpsc};

use super::Sessions;
use crate::registry::{Change, ClusterNotice, HubNotice};
use crate::session::Notice;

/// One thing the hub saw.
#[derive(Clone, Debug, PartialEq)]
pub enum HubEvent {
    /// A session was created (or forked).
    Added(String),
    /// A session was disposed.
    Removed(String),
    /// A session's whole-agent status changed.
    Status(String, Status),
}

impl Sessions {
    /// The hub's events from now on, `tenant`'s sessions only when one is named. Subscribed
    /// before it returns: a session created once the caller has the receiver is announced. The
    /// events stop when the receiver is dropped.
    pub fn hub(&self, tenant: Option<String>) -> mpsc::Receiver<HubEvent> {
        let (tx, rx) = mpsc::channel(64);
        let hub = self.registry.subscribe();
        let tenant = Tenant { only: tenant, known: HashMap::new() };
        tokio::spawn(follow_hub(self.clone(), hub, tenant, tx));
        rx
    }
}

/// Which sessions a hub stream shows: all, or one tenant's (each looked up once, while the
/// answers kept stay under [`Tenant::KEEP`]).
struct Tenant {
    only: Option<String>,
    known: HashMap<String, bool>,
}

impl Tenant {
    /// The most answers a stream keeps: past it they are forgotten and looked up again, so a
    /// stream open for months of new sessions stays small.
    const KEEP: usize = 10_000;

    async fn shows(&mut self, sessions: &Sessions, session_id: &str) -> bool {
        let Some(only) = &self.only else { return true };
        if let Some(&shown) = self.known.get(session_id) {
            return shown;
        }
        let store = sessions.registry.store();
        let shown = store.session_of_tenant(session_id, only).await.unwrap_or(false);
        if self.known.len() >= Self::KEEP {
            self.known.clear();
        }
        self.known.insert(session_id.to_owned(), shown);
        shown
    }
}

type Tx = mpsc::Sender<HubEvent>;

async fn follow_hub(
    sessions: Sessions,
    mut hub: broadcast::Receiver<HubNotice>,
    mut tenant: Tenant,
    tx: Tx,
) {
    // Each live session's status changes, through a receiver only: holding its handle would keep
    // it in memory. An evicted session's watcher ends; the session is watched again when woken.
    let watch = |session_id: String, mut notices: broadcast::Receiver<Notice>| {
        let tx = tx.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = tx.closed() => return,
                    notice = notices.recv() => match notice {
                        Ok(Notice::Status(status)) => {
                            let event = HubEvent::Status(session_id.clone(), status);
                            if tx.send(event).await.is_err() { return }
                        }
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => return,
                    },
                }
            }
        })
    };
    // A session woken while a follower kept its outbox is still watched: no second watcher.
    let mut watchers: HashMap<String, tokio::task::JoinHandle<()>> = HashMap::new();
    let mut watch_live = |session_id: &str| {
        watchers.retain(|_, watcher| !watcher.is_finished());
        if !watchers.contains_key(session_id)
            && let Ok(handle) = sessions.registry.get(session_id)
        {
            watchers
                .insert(session_id.to_owned(), watch(session_id.to_owned(), handle.subscribe()));
        }
    };
    for handle in sessions.registry.handles() {
        if tenant.shows(&sessions, handle.id()).await {
            watch_live(handle.id());
        }
    }
    // The other gateways' sessions, when the store is shared (`docs/deploy.md`).
    let mut others = sessions.registry.store().notices();
    loop {
        let notice = tokio::select! {
            _ = tx.closed() => return,
            notice = hub.recv() => notice,
            Some(event) = from_others(&sessions, &mut others, &mut tenant) => {
                if tx.send(event).await.is_err() {
                    return;
                }
                continue;
            }
        };
        if let Ok(notice) = &notice
            && !tenant.shows(&sessions, notice.session_id()).await
        {
            continue;
        }
        let event = match notice {
            Ok(HubNotice::Woken { session_id }) => {
                watch_live(&session_id);
                continue;
            }
            Ok(HubNotice::Added { session_id }) => {
                watch_live(&session_id);
                HubEvent::Added(session_id)
            }
            Ok(HubNotice::Removed { session_id }) => HubEvent::Removed(session_id),
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return,
        };
        if tx.send(event).await.is_err() {
            return;
        }
    }
}

/// The next event from another gateway's notices that this stream shows; `None` (never ready)
/// when the store is not shared.
async fn from_others(
    sessions: &Sessions,
    notices: &mut Option<broadcast::Receiver<String>>,
    tenant: &mut Tenant,
) -> Option<HubEvent> {
    let Some(notices) = notices else { return std::future::pending().await };
    let own = sessions.registry.store().node();
    loop {
        let payload = match notices.recv().await {
            Ok(payload) => payload,
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return std::future::pending().await,
        };
        let Ok(notice) = serde_json::from_str::<ClusterNotice>(&payload) else { continue };
        if Some(notice.node.as_str()) == own
            || !tenant.shows(sessions, notice.change.session_id()).await
        {
            continue;
        }
        return Some(match notice.change {
            Change::Added { session_id } => HubEvent::Added(session_id),
            Change::Removed { session_id } => HubEvent::Removed(session_id),
            Change::Status { session_id, status } => HubEvent::Status(session_id, status),
        });
    }
}
