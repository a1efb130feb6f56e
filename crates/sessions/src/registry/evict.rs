//! When sessions at rest leave memory: after being unused for a while, or least recently used
//! first when too many are live. They come back from their logs when used.

use std::sync::Arc;
use std::time::Duration;

use super::{Registry, SessionHandle};
use airlock_base::clock::now_ms;

/// When sessions at rest are dropped from memory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Eviction {
    /// A session at rest for this long is dropped.
    pub idle: Duration,
    /// Past this many live sessions, those at rest are dropped, least recently used first.
    pub max_live: usize,
}

impl Default for Eviction {
    fn default() -> Eviction {
        Eviction { idle: Duration::from_secs(60), max_live: 10_000 }
    }
}

impl Registry {
    pub(super) fn eviction(&self) -> Eviction {
        self.rules.eviction
    }

    /// Drops sessions at rest from memory, as [`Eviction`] says, until the registry is gone.
    pub fn start_evicting(self: &Arc<Self>) {
        let registry = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut freed = false;
            loop {
                let Some(this) = registry.upgrade() else { return };
                let tick = this.eviction().idle / 4;
                let tick = tick.clamp(Duration::from_millis(5), Duration::from_secs(1));
                let evicted = this.evict() > 0;
                if freed && !evicted {
                    // The sessions evicted a tick ago are gone by now: their memory goes back
                    // to the system, not to the allocator's cache.
                    let _ =
                        tokio::task::spawn_blocking(airlock_base::trim::release_free_memory).await;
                }
                freed = evicted;
                let crowded = this.crowded.clone();
                drop(this); // the registry may go while this task sleeps
                tokio::select! {
                    _ = tokio::time::sleep(tick) => {}
                    _ = crowded.notified() => {}
                }
            }
        });
    }

    /// Drops every session at rest that has been unused for `idle`, then the least recently used
    /// ones at rest while more than `max_live` are live. Answers how many were dropped.
    pub fn evict(&self) -> usize {
        let Eviction { idle, max_live } = self.eviction();
        let now = now_ms();
        let mut live = self.live.lock().expect("registry lock");
        let mut candidates: Vec<(u64, String)> = (live.iter())
            .filter(|(_, handle)| at_rest(handle))
            .map(|(id, handle)| (handle.used_at(), id.clone()))
            .collect();
        candidates.sort_unstable();
        // A session leaves this gateway (its lease is given up) once it is out of memory and
        // nobody here follows it: followers see it woken only where their outbox is.
        let mut gone = Vec::new();
        let mut outboxes = self.outboxes.lock().expect("outboxes lock");
        outboxes.retain(|id, outbox| {
            let followed = outbox.strong_count() > 0;
            if !followed && !live.contains_key(id) {
                gone.push(id.clone());
            }
            followed
        });
        let mut evicted = 0;
        for (used, id) in candidates {
            let crowded = live.len() > max_live;
            if !crowded && now.saturating_sub(used) < idle.as_millis() as u64 {
                break; // the rest were used more recently still
            }
            let handle = live.remove(&id).expect("a candidate is live");
            evicted += 1;
            if !handle.outbox().followed() {
                gone.push(id.clone());
            }
            // Kept for the session's followers (the actor ends once its last handle is gone).
            outboxes.insert(id, Arc::downgrade(handle.outbox()));
        }
        let metrics = airlock_base::metrics::global();
        metrics.sessions.dec_by(evicted as i64);
        metrics.evictions.inc_by(evicted as u64);
        // Under the lock: giving a lease up forgets its epoch at once, before a request can find
        // the session gone and take the lease again (a release after that would forget, and
        // delete, the new holding, and the session's next append would be fenced).
        self.release_later(gone);
        drop((live, outboxes));
        evicted
    }
}

/// Whether a live session may be dropped from memory without anything noticing: idle, nothing
/// pending, no armed goal (its rounds live in this process), and held by nobody but the registry
/// (no request, owned run or settlement watcher has it). Followers hold only its outbox.
fn at_rest(handle: &SessionHandle) -> bool {
    handle.unshared() && at_rest_now(handle) && !handle.view().goal.is_some_and(|(_, armed)| armed)
}

/// Whether a session is idle with nothing pending.
pub(super) fn at_rest_now(handle: &SessionHandle) -> bool {
    let view = handle.view();
    view.status == airlock_core::Status::Idle && !view.compacting && view.inbox.is_empty()
}
