//! Leases: which gateway runs which live session.
//!
//! A gateway takes a session's lease before it brings the session into memory, renews all its
//! leases together well within the lease time, and gives one up when the session leaves memory.
//! A lease that ran out may be taken by any gateway; taking it moves the epoch on, and an append
//! checks its gateway's epoch under the row's lock, so the gateway that lost it is fenced off.
//! Epochs come from one sequence and are never used twice, so giving up a lease (which matches
//! its epoch, and may run late, in the background) never ends a newer one.

use super::{Postgres, StoreError};

/// Who runs a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owner {
    /// This gateway (or no live gateway: this one may take it).
    Here,
    /// Another live gateway, which takes requests at this address.
    Elsewhere {
        /// `http://host:port`.
        address: String,
    },
}

impl Postgres {
    /// See [`crate::Store::acquire`].
    pub async fn acquire(&self, session_id: &str) -> Result<Owner, StoreError> {
        let client = self.client().await?;
        let take = client
            .prepare_cached(
                "WITH before AS (SELECT node FROM leases WHERE session_id = $1) \
                 INSERT INTO leases (session_id, node, address, epoch, expires_at) \
                 VALUES ($1, $2, $3, nextval('lease_epochs'), \
                 now() + $4::float8 * interval '1 millisecond') \
                 ON CONFLICT (session_id) DO UPDATE SET node = EXCLUDED.node, \
                 address = EXCLUDED.address, epoch = EXCLUDED.epoch, \
                 expires_at = EXCLUDED.expires_at \
                 WHERE leases.expires_at < now() OR leases.node = EXCLUDED.node \
                 RETURNING epoch, (SELECT node FROM before)",
            )
            .await?;
        let cluster = &self.inner.cluster;
        let lease_ms = cluster.lease.as_millis() as f64;
        let taken = client
            .query_opt(&take, &[&session_id, &cluster.node, &cluster.address, &lease_ms])
            .await
            .map_err(|e| moving_or(session_id, e))?;
        if let Some(row) = taken {
            let (epoch, before): (i64, Option<&str>) = (row.get(0), row.get(1));
            if before.is_some_and(|node| node != cluster.node) {
                airlock_base::metrics::global().lease_takeovers.inc();
            }
            let mut held = self.inner.held.lock().expect("leases lock");
            held.insert(session_id.to_owned(), epoch);
            count(&held);
            return Ok(Owner::Here);
        }
        // Held by a live gateway: say where (unless it let go meanwhile).
        match self.owner(session_id).await? {
            Owner::Here => Box::pin(self.acquire(session_id)).await,
            elsewhere => Ok(elsewhere),
        }
    }

    /// See [`crate::Store::owner`].
    pub async fn owner(&self, session_id: &str) -> Result<Owner, StoreError> {
        let client = self.client().await?;
        let find = client
            .prepare_cached(
                "SELECT node, address FROM leases WHERE session_id = $1 AND expires_at >= now()",
            )
            .await?;
        let row = client.query_opt(&find, &[&session_id]).await?;
        Ok(match row {
            Some(row) if row.get::<_, &str>(0) != self.inner.cluster.node => {
                Owner::Elsewhere { address: row.get(1) }
            }
            _ => Owner::Here,
        })
    }

    /// See [`crate::Store::release`].
    pub fn release(
        &self,
        session_id: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send + 'static {
        let epoch = self.forget(session_id);
        let (this, session_id) = (self.clone(), session_id.to_owned());
        async move {
            let Some(epoch) = epoch else { return Ok(()) };
            let client = this.client().await?;
            let sql = "DELETE FROM leases WHERE session_id = $1 AND node = $2 AND epoch = $3";
            client.execute(sql, &[&session_id, &this.inner.cluster.node, &epoch]).await?;
            Ok(())
        }
    }

    /// See [`crate::Store::release_all`].
    pub async fn release_all(&self) -> Result<(), StoreError> {
        let client = self.client().await?;
        client.execute("DELETE FROM leases WHERE node = $1", &[&self.inner.cluster.node]).await?;
        let mut held = self.inner.held.lock().expect("leases lock");
        held.clear();
        count(&held);
        Ok(())
    }

    /// See [`crate::Store::renew`].
    pub async fn renew(&self) -> Result<Vec<String>, StoreError> {
        let before = self.inner.held.lock().expect("leases lock").clone();
        let client = self.client().await?;
        let renew = client
            .prepare_cached(
                "UPDATE leases SET expires_at = now() + $2::float8 * interval '1 millisecond' \
                 WHERE node = $1 RETURNING session_id, epoch",
            )
            .await?;
        let lease_ms = self.inner.cluster.lease.as_millis() as f64;
        let rows = client.query(&renew, &[&self.inner.cluster.node, &lease_ms]).await?;
        // The leases of sessions at rest on a gateway that died: anyone may take them, and
        // nobody holds them any more.
        let sweep =
            "DELETE FROM leases WHERE expires_at < now() - $1::float8 * interval '1 millisecond'";
        client.execute(sweep, &[&lease_ms]).await?;
        let kept: std::collections::HashMap<String, i64> =
            rows.iter().map(|row| (row.get(0), row.get(1))).collect();
        let lost: Vec<String> = before
            .into_iter()
            .filter(|(session, epoch)| kept.get(session) != Some(epoch))
            .map(|(session, _)| session)
            .collect();
        let mut held = self.inner.held.lock().expect("leases lock");
        for session in &lost {
            // Unless it was taken again meanwhile, with a new epoch.
            if held.get(session).is_some_and(|epoch| kept.get(session) != Some(epoch)) {
                held.remove(session);
            }
        }
        count(&held);
        airlock_base::metrics::global().leases_lost.inc_by(lost.len() as u64);
        Ok(lost)
    }

    /// See [`crate::Store::fenced`].
    pub fn fenced(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.inner.fenced.subscribe()
    }

    /// The epoch of the lease this gateway holds on a session.
    pub(super) fn held_epoch(&self, session_id: &str) -> Option<i64> {
        self.inner.held.lock().expect("leases lock").get(session_id).copied()
    }

    /// Forgets a lease this gateway held; answers its epoch.
    fn forget(&self, session_id: &str) -> Option<i64> {
        let mut held = self.inner.held.lock().expect("leases lock");
        let epoch = held.remove(session_id);
        count(&held);
        epoch
    }
}

/// Shows how many leases this gateway holds.
fn count(held: &std::collections::HashMap<String, i64>) {
    airlock_base::metrics::global().leases_held.set(held.len() as i64);
}

/// [`StoreError::Moving`] when `error` is a wait for a lease's row cut short by `lock_timeout`
/// (the row is locked by a gateway that stopped mid-transaction, or by one taking it over);
/// otherwise the error as it is.
pub(super) fn moving_or(session_id: &str, error: tokio_postgres::Error) -> StoreError {
    match error.code() {
        Some(&tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE) => {
            StoreError::Moving(session_id.to_owned())
        }
        _ => error.into(),
    }
}
