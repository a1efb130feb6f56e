//! What one tenant may hold or do (`docs/http-api.md`, "Quotas"): sessions stored, open event
//! streams, and how fast it enqueues. A gateway without keys has no tenants and no quotas.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use super::Caller;
use crate::registry::Registry;
use crate::store::{Store, StoreError};

/// A tenant over one of its quotas.
#[derive(Debug, thiserror::Error)]
pub enum QuotaError {
    /// Enqueueing faster than its rate.
    #[error(
        "tenant {tenant:?} enqueues more than {per_second} messages a second; wait as Retry-After says"
    )]
    RateLimited {
        /// The tenant.
        tenant: String,
        /// Its rate.
        per_second: u32,
        /// Seconds until its bucket has room.
        wait_secs: u64,
    },
    /// Holding as much as it may.
    #[error("tenant {tenant:?} has {most} {what}, its quota; {hint}")]
    Exceeded {
        /// The tenant.
        tenant: String,
        /// The quota.
        most: u64,
        /// What it holds.
        what: &'static str,
        /// What to do.
        hint: &'static str,
    },
    /// The quota could not be checked.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A tenant's quotas (0: none).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TenantLimits {
    /// Sessions stored and not disposed.
    pub sessions: u64,
    /// Event streams open at once.
    pub streams: usize,
    /// Messages and runs enqueued per second, sustained (bursts of twice as many pass).
    pub per_second: u32,
    /// Sessions running a turn at once: a message that would wake one more is refused.
    pub turns: usize,
}

impl Default for TenantLimits {
    fn default() -> TenantLimits {
        TenantLimits { sessions: 10_000, streams: 1_000, per_second: 50, turns: 100 }
    }
}

/// The quotas of every tenant of a gateway.
pub struct Quotas {
    limits: TenantLimits,
    rate: Option<DefaultKeyedRateLimiter<String>>,
    streams: Arc<Mutex<HashMap<String, usize>>>,
}

impl Quotas {
    /// Quotas of `limits` for every tenant.
    pub fn new(limits: TenantLimits) -> Quotas {
        let rate = NonZeroU32::new(limits.per_second).map(|rate| {
            let burst = rate.saturating_mul(NonZeroU32::new(2).expect("2 is not 0"));
            RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst))
        });
        Quotas { limits, rate, streams: Arc::default() }
    }

    /// Admits one more message or run from `caller`: a key's tenant is held to its rate; the
    /// local caller (a gateway without keys) is not.
    pub fn enqueue(&self, caller: &Caller) -> Result<(), QuotaError> {
        let (Some(rate), Caller::Key { tenant, .. }) = (&self.rate, caller) else { return Ok(()) };
        rate.check_key(&tenant.to_owned()).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            QuotaError::RateLimited {
                tenant: tenant.to_owned(),
                per_second: self.limits.per_second,
                wait_secs: wait.as_secs_f64().ceil().max(1.0) as u64,
            }
        })
    }

    /// Admits a message from `caller` that would wake an idle session (`wakes`): a key's tenant
    /// may have at most its quota of sessions running at once. Two such messages at the same
    /// moment may both pass: the quota bounds, it does not count exactly.
    pub fn turn(
        &self,
        registry: &Registry,
        caller: &Caller,
        wakes: bool,
    ) -> Result<(), QuotaError> {
        let Caller::Key { tenant, .. } = caller else { return Ok(()) };
        let most = self.limits.turns;
        if !wakes || most == 0 || registry.running(tenant) < most {
            return Ok(());
        }
        let (what, hint) = ("sessions running a turn", "send again once one of them is idle");
        Err(QuotaError::Exceeded { tenant: tenant.clone(), most: most as u64, what, hint })
    }

    /// Admits one more session of `tenant`.
    pub async fn session(&self, store: &Store, tenant: &str) -> Result<(), QuotaError> {
        let most = self.limits.sessions;
        if most == 0 || store.tenant_sessions(tenant).await? < most {
            return Ok(());
        }
        let (what, hint) = ("sessions", "dispose of some first");
        Err(QuotaError::Exceeded { tenant: tenant.to_owned(), most, what, hint })
    }

    /// Admits one more event stream of `tenant`, for as long as the slot is held.
    pub fn stream(&self, tenant: &str) -> Result<StreamSlot, QuotaError> {
        let mut open = self.streams.lock().expect("streams lock");
        let count = open.entry(tenant.to_owned()).or_default();
        let most = self.limits.streams;
        if most > 0 && *count >= most {
            let (what, hint) = ("event streams open", "close one first");
            return Err(QuotaError::Exceeded {
                tenant: tenant.to_owned(),
                most: most as u64,
                what,
                hint,
            });
        }
        *count += 1;
        Ok(StreamSlot { tenant: tenant.to_owned(), streams: self.streams.clone() })
    }
}

/// One open event stream of a tenant; dropping it frees the place.
pub struct StreamSlot {
    tenant: String,
    streams: Arc<Mutex<HashMap<String, usize>>>,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.streams.lock().expect("streams lock");
        if let Some(count) = open.get_mut(&self.tenant) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.tenant);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_past_its_rate_waits_and_others_do_not() {
        let quotas = Quotas::new(TenantLimits { per_second: 1, ..TenantLimits::default() });
        let key = |tenant: &str| Caller::Key { tenant: tenant.to_owned(), admin: false };
        assert!(quotas.enqueue(&key("a")).is_ok());
        assert!(quotas.enqueue(&key("a")).is_ok(), "a burst of twice the rate passes");
        assert!(quotas.enqueue(&key("a")).is_err());
        assert!(quotas.enqueue(&key("b")).is_ok(), "each tenant has its own bucket");
        assert!(quotas.enqueue(&Caller::Local).is_ok(), "a gateway without keys has no rate");
    }

    #[test]
    fn a_stream_slot_is_freed_when_dropped() {
        let quotas = Quotas::new(TenantLimits { streams: 1, ..TenantLimits::default() });
        let slot = quotas.stream("a").unwrap();
        assert!(quotas.stream("a").is_err());
        assert!(quotas.stream("b").is_ok());
        drop(slot);
        assert!(quotas.stream("a").is_ok());
    }
}
