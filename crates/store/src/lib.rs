//! Durable storage: sessions, their logs, idempotency keys, API keys, and (when several gateways
//! share it) which gateway runs which session.
//!
//! [`Store`] is one handle over two backends with the same semantics, the same errors and the same
//! promise (an append resolves once its transaction committed):
//! - `sqlite.rs`: one file, the default. One writer owns the writing connection and commits every
//!   job pending in one transaction per round (group commit), on a thread of its own or on the
//!   thread of a task that waits for a commit ([`CommitOn`]); reads run on a small pool.
//! - `postgres/`: a database several gateways share (`docs/deploy.md`). Each live session is held
//!   by one gateway under a lease whose epoch every append checks in its own transaction, so a
//!   gateway that lost a lease can never append to that log again (fencing).
//!
//! Each backend's schema changes are its numbered files under `crates/store/migrations/`.

mod chain;
mod error;
mod faults;
pub mod hooks;
mod indexes;
mod keys;
mod postgres;
pub mod receipts;
mod schedules;
mod sessions;
mod sqlite;
mod usage;
mod writer;

use std::path::Path;

use crate::receipts::{Mark, Receipt};

pub use chain::MAX_FORK_CHAIN;
use chain::{CHAIN_SQL, Segment};
pub use error::StoreError;
pub use faults::{Faults, Stall};
pub use hooks::{Delivery, Hook, Outcome, Webhook};
pub use indexes::Snapshot;
pub use keys::{KEYS_NOTICE, Key, KeyError, LOGIN_TTL_MS, NewKey, key_hash};
pub use postgres::{Cluster, DEFAULT_POOL, Owner};
pub use schedules::{Fired, Schedule};
pub use sessions::SessionRow;
pub use usage::{ModelUsage, Spent, Tokens};
pub use writer::{CommitOn, Durability};

/// What a commit keeps beside a session's events, in the same transaction, so that no question
/// about a session needs it in memory or a scan of its log.
#[derive(Clone, Debug, Default)]
pub struct Index {
    /// The idempotency records of the keyed sends.
    pub idempotency: Vec<IdempotencyRecord>,
    /// What the events' splices did to receipts, in seq order.
    pub marks: Vec<Mark>,
    /// The session is at rest after these events (idle, inbox empty): recovery at start passes
    /// it by.
    pub at_rest: bool,
    /// What the responses these events log cost.
    pub spent: Vec<Spent>,
    /// What webhooks may report of these events: a delivery for each subscription that wants it.
    pub hooks: Vec<Hook>,
}

/// An idempotency record: the answer given to the first request with this key.
#[derive(Clone, Debug, PartialEq)]
pub struct IdempotencyRecord {
    /// The client's key.
    pub key: String,
    /// The session the request was for.
    pub session_id: String,
    /// A hash of the request body.
    pub request_hash: String,
    /// The answer given (JSON).
    pub response: String,
    /// When it was made (ms since the epoch): it is honoured for a day from then.
    pub created_at: u64,
}

/// The store: cheap to clone. Beside its backend, what wakes the webhook deliverer when a commit
/// of this process wrote deliveries.
#[derive(Clone)]
pub struct Store(Backend, std::sync::Arc<tokio::sync::Notify>);

#[derive(Clone)]
enum Backend {
    Sqlite(sqlite::Sqlite),
    Postgres(postgres::Postgres),
}

/// Writes each method as a call of the backend's method of the same name and arguments, its
/// `Result` of a [`StoreError`] implied.
macro_rules! delegate {
    ($($(#[doc = $doc:literal])* $vis:vis async fn $name:ident(&self $(, $arg:ident: $ty:ty)*)
        -> $ok:ty;)*) => {
        $($(#[doc = $doc])*
        $vis async fn $name(&self $(, $arg: $ty)*) -> Result<$ok, StoreError> {
            each!(self, $name($($arg),*))
        })*
    };
}

/// Calls the backend's method of the same name.
macro_rules! each {
    ($store:expr, $method:ident($($arg:expr),*)) => {
        match &$store.0 {
            Backend::Sqlite(b) => b.$method($($arg),*).await,
            Backend::Postgres(b) => b.$method($($arg),*).await,
        }
    };
}

impl Store {
    /// Opens (creating and migrating as needed) the SQLite database at `path`; [`MEMORY`] opens a
    /// fresh database that lives in this process only.
    pub fn open(path: &Path, durability: Durability) -> Result<Store, StoreError> {
        Store::open_with(path, durability, CommitOn::Thread)
    }

    /// [`Store::open`], with its commits run where `on` says.
    pub fn open_with(
        path: &Path,
        durability: Durability,
        on: CommitOn,
    ) -> Result<Store, StoreError> {
        let sqlite = sqlite::Sqlite::open(path, durability, on)?;
        Ok(Store(Backend::Sqlite(sqlite), Default::default()))
    }

    /// Connects to (migrating as needed) the PostgreSQL database at `url`, as the gateway
    /// `cluster` describes.
    pub async fn connect(url: &str, cluster: Cluster) -> Result<Store, StoreError> {
        let backend = Backend::Postgres(postgres::Postgres::connect(url, cluster).await?);
        Ok(Store(backend, Default::default()))
    }

    /// The command-line flag that names this store, for a person to type: `--data FILE`, or
    /// `--store URL` without its password.
    pub fn flag(&self) -> String {
        match &self.0 {
            Backend::Sqlite(b) => format!("--data {}", b.path().display()),
            Backend::Postgres(b) => format!("--store {}", b.url()),
        }
    }

    /// The SQLite file, for a SQLite store.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match &self.0 {
            Backend::Sqlite(b) => Some(b.path()),
            Backend::Postgres(_) => None,
        }
    }

    /// Whether other gateways may share this store (then sessions are held by lease).
    pub fn shared(&self) -> bool {
        matches!(self.0, Backend::Postgres(_))
    }

    /// Appends events (JSON envelopes, contiguous seqs) to a session's log, with what `index`
    /// keeps beside them in the same transaction; resolves once committed. In a shared store,
    /// only while this gateway holds the session's lease ([`StoreError::Fenced`] otherwise).
    pub async fn append(
        &self,
        session_id: &str,
        events: Vec<String>,
        index: Index,
    ) -> Result<(), StoreError> {
        let hooks = !index.hooks.is_empty();
        each!(self, append(session_id, events, index))?;
        if hooks {
            self.1.notify_one();
        }
        Ok(())
    }

    delegate! {
        /// Records that a session is at rest (after recovery found nothing to do).
        pub async fn set_at_rest(&self, session_id: &str) -> ();
        /// Replaces what a session was asked to be (its spec, as JSON): a changed budget.
        pub async fn set_spec(&self, session_id: &str, spec: String) -> ();
        /// Marks a session disposed.
        pub async fn dispose_session(&self, session_id: &str, now: u64) -> ();
        /// The durability barrier: resolves once everything sent to the store before it is
        /// committed and on disk. `true` when that reached a database, `false` for an in-memory
        /// store (nothing is durable); an error when the commit or the sync failed.
        pub async fn flush(&self) -> bool;
        /// Events of a session with seq > `after` (all when `None`), at most `limit`.
        pub async fn events(&self, session_id: &str, after: Option<u64>, limit: usize)
            -> Vec<String>;
        /// The events of one type of a session (e.g. `agent/inbox/spliced`), in seq order.
        pub async fn events_of_type(&self, session_id: &str, kind: &'static str) -> Vec<String>;
        /// The last seq of a session's log (`None` for an empty log).
        pub async fn last_seq(&self, session_id: &str) -> Option<u64>;
        /// The idempotency record for a key, if it is younger than `max_age_ms`.
        pub async fn idempotency(&self, key: &str, now: u64, max_age_ms: u64)
            -> Option<IdempotencyRecord>;
        /// Replaces the answer kept for an idempotency key (a run's, once its interval ended).
        pub async fn set_idempotency_answer(&self, key: &str, response: String) -> ();
        /// Keeps a snapshot of a session's core state (replacing the one before).
        pub async fn save_snapshot(&self, snapshot: Snapshot) -> ();
        /// A session's newest snapshot, with its last goal change.
        pub async fn snapshot(&self, session_id: &str) -> Option<Snapshot>;
        /// A session's newest snapshot without the core's state (`state` empty), if the host's
        /// head was kept with it: what brings the session back asleep.
        pub async fn snapshot_head(&self, session_id: &str) -> Option<Snapshot>;
        /// The receipt of a message. `None` if the session never accepted it.
        pub async fn receipt(&self, session_id: &str, message_id: &str) -> Option<Receipt>;
        /// One session's row.
        pub async fn session(&self, session_id: &str) -> Option<SessionRow>;
        /// Sessions ordered by id, after `cursor`, at most `limit`; only `tenant`'s when given.
        pub async fn sessions(&self, cursor: Option<String>, limit: usize, tenant: Option<&str>)
            -> Vec<SessionRow>;
        /// How many sessions of `tenant` are stored and not disposed.
        pub async fn tenant_sessions(&self, tenant: &str) -> u64;
        /// How many bytes of log the sessions of `tenant` that are not disposed keep.
        pub async fn tenant_bytes(&self, tenant: &str) -> u64;
        /// What a session's own events spent, by model.
        pub async fn session_usage(&self, session_id: &str) -> Vec<ModelUsage>;
        /// What the events since `since` (ms since the epoch) of `tenant`'s sessions spent, by
        /// model (disposed sessions included: the money is spent); every tenant's, by tenant, when
        /// `None`.
        pub async fn tenant_usage(&self, tenant: Option<&str>, since: u64) -> Vec<ModelUsage>;
        /// Whether `session_id` exists and belongs to `tenant`.
        pub async fn session_of_tenant(&self, session_id: &str, tenant: &str) -> bool;
        /// Sessions recovery must visit, ordered by id, after `cursor`, at most `limit`: those
        /// whose last commit did not leave them at rest, and every child (its parent may be owed a
        /// notice); neither disposed. In a shared store, only those no live gateway holds: never
        /// leased, or whose lease ran out (their gateway died or stalled).
        pub async fn sessions_to_recover(&self, cursor: Option<String>, limit: usize)
            -> Vec<SessionRow>;
        /// How many sessions are stored (disposed ones included).
        pub async fn session_count(&self) -> u64;
        /// The child sessions of a session, oldest first.
        pub async fn children(&self, parent_id: &str) -> Vec<SessionRow>;
        async fn insert_key(&self, key: Key, hash: String) -> ();
        async fn revoke_key_row(&self, key_id: &str, now: u64) -> Option<Key>;
        async fn insert_login(&self, hash: String, key_id: String, now: u64) -> ();
        /// Every key, oldest first.
        pub async fn keys(&self) -> Vec<Key>;
        /// The unrevoked key whose secret is `secret`.
        pub async fn live_key(&self, secret: &str) -> Option<Key>;
        /// Whether any key was ever made: from then on every `/v1` request needs one.
        pub async fn has_keys(&self) -> bool;
        /// Keeps a new webhook subscription.
        pub async fn insert_webhook(&self, webhook: Webhook) -> ();
        /// The webhook subscriptions `tenant` made for itself (every one when `None`), oldest
        /// first.
        pub async fn webhooks(&self, tenant: Option<&str>) -> Vec<Webhook>;
        /// One webhook subscription.
        pub async fn webhook(&self, webhook_id: &str) -> Option<Webhook>;
        /// Deletes a webhook subscription and what waits for it; `false` if there was none.
        pub async fn delete_webhook(&self, webhook_id: &str) -> bool;
        /// Takes a failing subscription back: it gets deliveries again; `false` if there was none.
        pub async fn resume_webhook(&self, webhook_id: &str) -> bool;
        /// Claims for `node` until `until` the deliveries due at `now` (at most `limit`): of each
        /// subscription and session, the oldest waiting, when no gateway holds it; oldest first.
        pub async fn claim_deliveries(&self, now: u64, until: u64, node: &str, limit: usize)
            -> Vec<Delivery>;
        /// Records how attempts of claimed deliveries went, in one transaction.
        pub async fn settle_deliveries(&self, outcomes: Vec<Outcome>) -> ();
        /// Lets go of the delivery and schedule claims `node` holds (it starts again: nothing of
        /// its is in flight).
        pub async fn release_claims(&self, node: &str) -> ();
        /// Keeps a new schedule.
        pub async fn insert_schedule(&self, schedule: Schedule) -> ();
        /// The schedules of `tenant` (every one when `None`), oldest first.
        pub async fn schedules(&self, tenant: Option<&str>) -> Vec<Schedule>;
        /// One schedule.
        pub async fn schedule(&self, schedule_id: &str) -> Option<Schedule>;
        /// Deletes a schedule; `false` if there was none.
        pub async fn delete_schedule(&self, schedule_id: &str) -> bool;
        /// Pauses a schedule (`next_at` kept when `None`), or resumes it from `next_at`; `false`
        /// if there was none.
        pub async fn pause_schedule(&self, schedule_id: &str, paused: bool, next_at: Option<u64>)
            -> bool;
        /// The schedules due at `now` that no gateway holds, soonest first, at most `limit`.
        pub async fn due_schedules(&self, now: u64, limit: usize) -> Vec<Schedule>;
        /// Claims a schedule's due time `due` for `node` until `until`; `false` when another
        /// gateway holds it, or it moved on.
        pub async fn claim_schedule(&self, schedule_id: &str, due: u64, now: u64, until: u64,
            node: &str) -> bool;
        /// Moves a claimed due time on, with what firing it did.
        pub async fn settle_schedule(&self, fired: Fired) -> ();
    }

    /// Inserts a session row; `false` if a session with that id exists already.
    pub async fn insert_session(&self, row: SessionRow) -> Result<bool, StoreError> {
        each!(self, insert_session(row, Vec::new()))
    }

    /// Inserts a fork's row (`row.shares` names the log it shares) with the events that seal its
    /// shared prefix, all in one transaction; `false` (and nothing written) if a session with that
    /// id exists already.
    pub async fn insert_fork(
        &self,
        row: SessionRow,
        seal: Vec<String>,
    ) -> Result<bool, StoreError> {
        each!(self, insert_session(row, seal))
    }

    /// How many times a durability barrier synced the SQLite log itself (under `normal`
    /// durability); 0 for PostgreSQL, whose every commit is durable.
    pub fn barrier_syncs(&self) -> u64 {
        match &self.0 {
            Backend::Sqlite(b) => b.barrier_syncs(),
            Backend::Postgres(_) => 0,
        }
    }

    /// The TLS version the database connections use, as the server says (`None`: unencrypted,
    /// or a SQLite file).
    pub async fn encryption(&self) -> Result<Option<String>, StoreError> {
        match &self.0 {
            Backend::Sqlite(_) => Ok(None),
            Backend::Postgres(b) => b.encryption().await,
        }
    }

    /// The faults a test may inject into this store.
    pub fn faults(&self) -> &Faults {
        match &self.0 {
            Backend::Sqlite(b) => b.faults(),
            Backend::Postgres(b) => b.faults(),
        }
    }

    async fn login_key_row(&self, hash: String, since: u64) -> Result<Option<Key>, StoreError> {
        each!(self, login_key(hash, since))
    }

    async fn end_login_row(&self, hash: String) -> Result<(), StoreError> {
        each!(self, end_login(hash))
    }

    /// Takes the lease of a session for this gateway: [`Owner::Here`] when it now holds it (a
    /// store of one gateway always answers that), [`Owner::Elsewhere`] when a live gateway holds
    /// it. Taking a lease that ran out moves its epoch on, which fences the gateway that held it.
    pub async fn acquire(&self, session_id: &str) -> Result<Owner, StoreError> {
        match &self.0 {
            Backend::Sqlite(_) => Ok(Owner::Here),
            Backend::Postgres(b) => b.acquire(session_id).await,
        }
    }

    /// Who runs a session now: [`Owner::Here`] also when no live gateway holds it (this one may
    /// take it).
    pub async fn owner(&self, session_id: &str) -> Result<Owner, StoreError> {
        match &self.0 {
            Backend::Sqlite(_) => Ok(Owner::Here),
            Backend::Postgres(b) => b.owner(session_id).await,
        }
    }

    /// Gives up a session's lease (it left memory), so any gateway may take it at once. The lease
    /// given up is the one held now: taken again before the future runs, it is kept.
    pub fn release(
        &self,
        session_id: &str,
    ) -> futures::future::BoxFuture<'static, Result<(), StoreError>> {
        match &self.0 {
            Backend::Sqlite(_) => Box::pin(std::future::ready(Ok(()))),
            Backend::Postgres(b) => Box::pin(b.release(session_id)),
        }
    }

    /// Gives up every lease this gateway holds (it is stopping).
    pub async fn release_all(&self) -> Result<(), StoreError> {
        match &self.0 {
            Backend::Sqlite(_) => Ok(()),
            Backend::Postgres(b) => b.release_all().await,
        }
    }

    /// Extends every lease this gateway holds; answers the sessions whose lease it lost (another
    /// gateway took them while this one could not renew, or an append found them taken).
    pub async fn renew(&self) -> Result<Vec<String>, StoreError> {
        match &self.0 {
            Backend::Sqlite(_) => Ok(Vec::new()),
            Backend::Postgres(b) => b.renew().await,
        }
    }

    /// Tells every gateway sharing the store (this one too) `payload` (a store of one gateway:
    /// nobody).
    pub async fn publish(&self, payload: &str) -> Result<(), StoreError> {
        match &self.0 {
            Backend::Sqlite(_) => Ok(()),
            Backend::Postgres(b) => b.publish(payload).await,
        }
    }

    /// Starts listening for what the gateways sharing the store publish (a store of one:
    /// nothing to listen for).
    pub async fn listen(&self) -> Result<(), StoreError> {
        match &self.0 {
            Backend::Sqlite(_) => Ok(()),
            Backend::Postgres(b) => b.listen().await,
        }
    }

    /// What the gateways sharing the store publish from now on, once [`Store::listen`] started;
    /// `None` for a store of one.
    pub fn notices(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        match &self.0 {
            Backend::Sqlite(_) => None,
            Backend::Postgres(b) => b.notices(),
        }
    }

    /// This gateway's name among those sharing the store.
    pub fn node(&self) -> Option<&str> {
        match &self.0 {
            Backend::Sqlite(_) => None,
            Backend::Postgres(b) => Some(&b.cluster().node),
        }
    }

    /// The sessions an append found another gateway running, as they are found (a store of one
    /// gateway: none). [`Store::renew`] answers them too, so one missed here is not lost.
    pub fn fenced(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        match &self.0 {
            Backend::Sqlite(_) => None,
            Backend::Postgres(b) => Some(b.fenced()),
        }
    }

    /// How long a lease lasts unrenewed (a store of one gateway: none).
    pub fn lease(&self) -> Option<std::time::Duration> {
        match &self.0 {
            Backend::Sqlite(_) => None,
            Backend::Postgres(b) => Some(b.cluster().lease),
        }
    }
}

/// The parts of an event envelope a commit indexes.
#[derive(serde::Deserialize)]
struct Head {
    #[serde(rename = "type")]
    kind: String,
    seq: u64,
    time: u64,
}

/// The head of an event envelope.
fn head(body: &str) -> Result<Head, StoreError> {
    serde_json::from_str(body).map_err(|e| StoreError::NotAnEvent(e.to_string()))
}

/// `--data :memory:`: a store that lives in this process only.
pub const MEMORY: &str = ":memory:";
