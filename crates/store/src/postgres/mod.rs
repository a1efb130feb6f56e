//! The PostgreSQL backend: the store several gateways share (`docs/deploy.md`).
//!
//! Every write is one transaction on a pooled connection; PostgreSQL groups the commits' WAL
//! flushes itself. Each live session is held by one gateway under a lease ([`lease`]); an append
//! locks the session's lease row and checks the epoch this gateway took, in the same transaction
//! as the events, so a gateway that lost the lease never appends again (fencing).

mod hooks;
mod identity;
mod lease;
mod log;
mod notify;
mod rows;
mod schedules;
mod tls;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deadpool_postgres::{GenericClient, Manager, ManagerConfig, Pool, RecyclingMethod};

use super::{Faults, IdempotencyRecord, Index, SessionRow, Snapshot, StoreError};
use crate::receipts::Receipt;
pub use lease::Owner;
use log::write_events;

/// The migrations, in order; each is applied once, tracked in `airlock_schema`.
const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/postgres/0001_init.sql"),
    include_str!("../../migrations/postgres/0002_logins_forks_bytes.sql"),
    include_str!("../../migrations/postgres/0003_usage.sql"),
    include_str!("../../migrations/postgres/0004_hooks.sql"),
    include_str!("../../migrations/postgres/0005_snapshot_heads.sql"),
    include_str!("../../migrations/postgres/0006_nodes.sql"),
    include_str!("../../migrations/postgres/0007_lease_epochs.sql"),
];

/// Connections one gateway keeps to the database at most, unless told otherwise.
pub const DEFAULT_POOL: usize = 16;

/// How many fenced sessions the registry may fall behind on hearing (renewal finds the rest).
const FENCED_BUFFER: usize = 256;

/// The shortest bound on a lock held or waited for, whatever the lease (tests use a lease of
/// zero).
const SHORTEST_BOUND: Duration = Duration::from_millis(100);

/// `config` with the bounds that keep a stalled gateway from holding a session that is no longer
/// its own: PostgreSQL ends a transaction left idle for half a lease (a gateway paused mid-append
/// holds its lease's row locked: this lets go of it before the lease runs out, so another gateway
/// can take the session then), and a wait for a lock gives up after a quarter of one (answered
/// [`StoreError::Moving`] where it was a lease's row).
fn bounded(mut config: tokio_postgres::Config, lease: Duration) -> tokio_postgres::Config {
    let idle = (lease / 2).max(SHORTEST_BOUND);
    let wait = (lease / 4).max(SHORTEST_BOUND / 2);
    let ours = format!(
        "-c idle_in_transaction_session_timeout={} -c lock_timeout={}",
        idle.as_millis(),
        wait.as_millis()
    );
    let options = match config.get_options() {
        Some(theirs) if !theirs.is_empty() => format!("{theirs} {ours}"),
        _ => ours,
    };
    config.options(options);
    config
}

/// Who this gateway is among those sharing the database.
#[derive(Clone, Debug)]
pub struct Cluster {
    /// This gateway's id, unique among those running (a second one with it is refused). A
    /// process that starts with the id of one before it (restarted in place) drops that one's
    /// leases, as it is gone.
    pub node: String,
    /// Where the other gateways reach this one, to forward a request for a session it holds
    /// (`http://host:port`); unique among those running, as the id.
    pub address: String,
    /// How long a lease lasts unrenewed: when a gateway dies, its sessions move this long after.
    pub lease: Duration,
    /// Connections this gateway keeps to the database at most (besides the two of its own that
    /// listen for notices and hold its name).
    pub pool: usize,
}

impl Cluster {
    /// A process that reads and writes the store but runs no session (`airlock keys`).
    pub fn visitor() -> Cluster {
        let node = airlock_base::clock::fresh_id();
        Cluster { node, address: String::new(), lease: Duration::from_secs(4), pool: 2 }
    }
}

/// The PostgreSQL store: cheap to clone.
#[derive(Clone)]
pub struct Postgres {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    /// The URL without its password.
    url: String,
    cluster: Cluster,
    /// The leases this gateway holds: session id → epoch.
    held: Mutex<HashMap<String, i64>>,
    /// The sessions an append found another gateway running ([`Postgres::fenced`]).
    fenced: tokio::sync::broadcast::Sender<String>,
    faults: Arc<Faults>,
    /// Where to open the connection that listens for other gateways' notices, and how.
    connect: tls::Connect,
    /// What that connection hears, once something asked ([`Postgres::notices`]).
    notices: std::sync::OnceLock<tokio::sync::broadcast::Sender<String>>,
    /// When waiting webhook deliveries were last checked for a head (ms since the epoch).
    heads_checked: std::sync::atomic::AtomicU64,
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(error: tokio_postgres::Error) -> StoreError {
        // The server's own words (with its detail) say more than the client's summary.
        match error.as_db_error() {
            Some(db) => StoreError::Postgres(db.to_string()),
            None => StoreError::Postgres(error.to_string()),
        }
    }
}

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(error: deadpool_postgres::PoolError) -> StoreError {
        StoreError::Postgres(format!("no connection to the database: {error}"))
    }
}

impl Postgres {
    /// Connects to the database at `url` (migrating it as needed) as the gateway `cluster`.
    pub async fn connect(url: &str, cluster: Cluster) -> Result<Postgres, StoreError> {
        let shown = without_password(url);
        let failed = |message: String| StoreError::Connect { url: shown.clone(), message };
        let connect = tls::connect(url).map_err(|e| {
            failed(format!("{e}; a database URL looks like postgres://user:password@host:5432/db"))
        })?;
        let manager = Manager::from_config(
            bounded(connect.0.clone(), cluster.lease),
            connect.1.clone(),
            ManagerConfig { recycling_method: RecyclingMethod::Fast },
        );
        let pool = Pool::builder(manager)
            .max_size(cluster.pool.max(1))
            .build()
            .map_err(|e| failed(e.to_string()))?;
        let mut client = pool.get().await.map_err(|e| {
            failed(format!(
                "{}; check that PostgreSQL runs there and the URL's user, password and database",
                causes(&e)
            ))
        })?;
        migrate(&mut client).await.map_err(|e| failed(format!("migrating: {}", causes(&e))))?;
        // A gateway that runs sessions (not `airlock keys`) is the only one with its name and
        // address; then the leases under its name are its previous run's.
        if !cluster.address.is_empty() {
            identity::claim(&connect, &cluster).await?;
        }
        let sql = "DELETE FROM leases WHERE node = $1";
        let dropped = client.execute(sql, &[&cluster.node]).await?;
        if dropped > 0 {
            tracing::info!(dropped, "dropped the leases of this gateway's previous run");
        }
        drop(client);
        let inner = Inner {
            pool,
            url: shown,
            cluster,
            held: Mutex::default(),
            fenced: tokio::sync::broadcast::channel(FENCED_BUFFER).0,
            faults: Arc::default(),
            connect,
            notices: std::sync::OnceLock::new(),
            heads_checked: Default::default(),
        };
        Ok(Postgres { inner: Arc::new(inner) })
    }

    /// The URL, without its password.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// Who this gateway is.
    pub fn cluster(&self) -> &Cluster {
        &self.inner.cluster
    }

    /// See [`super::Store::encryption`].
    pub async fn encryption(&self) -> Result<Option<String>, StoreError> {
        let sql = "SELECT version FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND ssl";
        let row = self.client().await?.query_opt(sql, &[]).await?;
        Ok(row.map(|row| row.get(0)))
    }

    /// The faults a test may inject.
    pub fn faults(&self) -> &Faults {
        &self.inner.faults
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        Ok(self.inner.pool.get().await?)
    }

    /// See [`super::Store::set_spec`].
    pub async fn set_spec(&self, session_id: &str, spec: String) -> Result<(), StoreError> {
        let sql = "UPDATE sessions SET spec = $2 WHERE session_id = $1";
        self.client().await?.execute(sql, &[&session_id, &spec]).await?;
        Ok(())
    }

    /// See [`super::Store::set_at_rest`].
    pub async fn set_at_rest(&self, session_id: &str) -> Result<(), StoreError> {
        let sql = "UPDATE sessions SET needs_recovery = false WHERE session_id = $1";
        self.client().await?.execute(sql, &[&session_id]).await?;
        Ok(())
    }

    /// See [`super::Store::insert_session`] and [`super::Store::insert_fork`]: the row and the
    /// first events of its log in one transaction (no lease: nobody runs the session yet).
    pub async fn insert_session(
        &self,
        row: SessionRow,
        events: Vec<String>,
    ) -> Result<bool, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let (base, base_seq) = match &row.shares {
            Some((source, at)) => (Some(source.as_str()), Some(*at as i64)),
            None => (None, None),
        };
        let inserted = tx
            .execute(
                "INSERT INTO sessions (session_id, created_at, updated_at, spec, disposed, \
                 parent_session_id, tenant, base_session_id, base_seq) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING",
                &[
                    &row.session_id,
                    &(row.created_at as i64),
                    &(row.updated_at as i64),
                    &row.spec.to_string(),
                    &row.disposed,
                    &row.parent_session_id,
                    &row.tenant,
                    &base,
                    &base_seq,
                ],
            )
            .await?;
        if inserted == 1 && !events.is_empty() {
            let index = Index { at_rest: true, ..Index::default() };
            write_events(&tx, &row.session_id, &events, &index).await?;
        }
        tx.commit().await.map_err(|e| StoreError::Commit(StoreError::from(e).to_string()))?;
        Ok(inserted == 1)
    }

    /// See [`super::Store::dispose_session`].
    pub async fn dispose_session(&self, session_id: &str, now: u64) -> Result<(), StoreError> {
        let sql = "UPDATE sessions SET disposed = true, updated_at = $2 WHERE session_id = $1";
        self.client().await?.execute(sql, &[&session_id, &(now as i64)]).await?;
        Ok(())
    }

    /// See [`super::Store::flush`]: every commit is durable already (`synchronous_commit`).
    pub async fn flush(&self) -> Result<bool, StoreError> {
        self.client().await?.simple_query("SELECT 1").await?;
        Ok(self.inner.faults.flush_may_succeed())
    }

    /// See [`super::Store::idempotency`].
    pub async fn idempotency(
        &self,
        key: &str,
        now: u64,
        max_age_ms: u64,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        let since = now.saturating_sub(max_age_ms) as i64;
        let row = self
            .client()
            .await?
            .query_opt(
                "SELECT key, session_id, request_hash, response, created_at FROM idempotency \
                 WHERE key = $1 AND created_at >= $2",
                &[&key, &since],
            )
            .await?;
        Ok(row.map(|r| IdempotencyRecord {
            key: r.get(0),
            session_id: r.get(1),
            request_hash: r.get(2),
            response: r.get(3),
            created_at: r.get::<_, i64>(4) as u64,
        }))
    }

    /// See [`super::Store::set_idempotency_answer`].
    pub async fn set_idempotency_answer(
        &self,
        key: &str,
        response: String,
    ) -> Result<(), StoreError> {
        let sql = "UPDATE idempotency SET response = $2 WHERE key = $1";
        self.client().await?.execute(sql, &[&key, &response]).await?;
        Ok(())
    }

    /// See [`super::Store::save_snapshot`].
    pub async fn save_snapshot(&self, p: Snapshot) -> Result<(), StoreError> {
        self.client()
            .await?
            .execute(
                "INSERT INTO snapshots (session_id, next_seq, core, state, parent, head) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (session_id) DO UPDATE SET \
                 next_seq = EXCLUDED.next_seq, core = EXCLUDED.core, state = EXCLUDED.state, \
                 parent = EXCLUDED.parent, head = EXCLUDED.head",
                &[&p.session_id, &(p.next_seq as i64), &p.core, &p.state, &p.parent, &p.head],
            )
            .await?;
        Ok(())
    }

    /// See [`super::Store::snapshot`].
    pub async fn snapshot(&self, session_id: &str) -> Result<Option<Snapshot>, StoreError> {
        self.read_snapshot(session_id, crate::indexes::SNAPSHOT).await
    }

    /// See [`super::Store::snapshot_head`].
    pub async fn snapshot_head(&self, session_id: &str) -> Result<Option<Snapshot>, StoreError> {
        self.read_snapshot(session_id, crate::indexes::SNAPSHOT_HEAD).await
    }

    async fn read_snapshot(
        &self,
        session_id: &str,
        sql: &str,
    ) -> Result<Option<Snapshot>, StoreError> {
        let sql = sql.replace("?1", "$1");
        let row = self.client().await?.query_opt(&sql, &[&session_id]).await?;
        Ok(row.map(|r| Snapshot {
            session_id: session_id.to_owned(),
            next_seq: r.get::<_, i64>(0) as u64,
            core: r.get(1),
            parent: r.get(2),
            goal: r.get(3),
            head: r.get(4),
            state: r.get(5),
        }))
    }

    /// See [`super::Store::receipt`]: every log here is indexed from its first event.
    pub async fn receipt(
        &self,
        session_id: &str,
        message_id: &str,
    ) -> Result<Option<Receipt>, StoreError> {
        let client = self.client().await?;
        rows::receipt(&client, session_id, message_id).await
    }
}

/// Keeps a connection of its own going: when `held` ends (the connection was lost), says so and
/// opens it again with `again`, each second until it is back.
async fn keep_connected<F, Fut>(mut held: tokio::task::JoinHandle<()>, what: &'static str, again: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<tokio::task::JoinHandle<()>, StoreError>>,
{
    loop {
        let _ = (&mut held).await;
        tracing::warn!("{what} was lost");
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            match again().await {
                Ok(back) => {
                    held = back;
                    break;
                }
                Err(error) => tracing::warn!(%error, "opening {what} again"),
            }
        }
    }
}

/// Applies the migrations not applied yet, holding an advisory lock so that gateways starting
/// together migrate once.
async fn migrate(client: &mut deadpool_postgres::Object) -> Result<(), tokio_postgres::Error> {
    let tx = client.transaction().await?;
    // Another gateway's migration may take longer than the pool's `lock_timeout`.
    tx.batch_execute(
        "SET LOCAL lock_timeout = 0; \
         SELECT pg_advisory_xact_lock(hashtext('airlock-migrations')); \
         CREATE TABLE IF NOT EXISTS airlock_schema (version INTEGER NOT NULL)",
    )
    .await?;
    let applied: i64 = tx.query_one("SELECT COUNT(*) FROM airlock_schema", &[]).await?.get(0);
    for (version, sql) in MIGRATIONS.iter().enumerate().skip(applied as usize) {
        tx.batch_execute(sql).await?;
        tx.execute("INSERT INTO airlock_schema (version) VALUES ($1)", &[&(version as i32 + 1)])
            .await?;
    }
    tx.commit().await
}

/// An error and its causes, outermost first: a pool's "error connecting to server" says why only
/// in its source ("connection refused").
fn causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text = format!("{text}: {cause_text}");
        }
        source = cause.source();
    }
    text
}

/// `url` with its password (if any) replaced by `***`, for messages and logs.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        // The key=value form.
        let words = url.split_whitespace().map(|word| match word.starts_with("password=") {
            true => "password=***",
            false => word,
        });
        return words.collect::<Vec<_>>().join(" ");
    };
    let Some((user_info, host)) = rest.rsplit_once('@') else { return url.to_owned() };
    match user_info.split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_password() {
        assert_eq!(
            without_password("postgres://app:s3cr@t@db:5432/airlock"),
            "postgres://app:***@db:5432/airlock"
        );
        assert_eq!(without_password("postgres://app@db/airlock"), "postgres://app@db/airlock");
        assert_eq!(without_password("host=db user=app"), "host=db user=app");
        assert_eq!(
            without_password("host=db password=pw user=app"),
            "host=db password=*** user=app"
        );
    }
}
