//! Work that reports without a client watching: webhook subscriptions and what waits to be
//! delivered to them.
//!
//! A commit that logs an event a webhook may report (a [`Hook`]: the session went idle, a turn
//! ended, a call waits for a person…) writes, in the same transaction, one delivery row for each
//! subscription that wants it, so no report is lost to a crash between the commit and the send.
//! The deliverer above ([`Store::claim_deliveries`]) takes the oldest row of each subscription and
//! session (one at a time, so a receiver hears a session's events in order), sends it, and
//! settles it: delivered rows go, failed ones wait for their next attempt.

use rusqlite::{Connection, OptionalExtension, params};

use super::sqlite::Sqlite;
use super::{Store, StoreError};

/// A logged event a webhook may report: written beside the event by its commit.
#[derive(Clone, Debug, PartialEq)]
pub struct Hook {
    /// The seq of the event it reports.
    pub seq: u64,
    /// Its type: `session.idle`, `turn.ended`, `session.failed`, `session.requires_action`,
    /// `run.completed`.
    pub kind: &'static str,
    /// What tells two reports of one type at one seq apart (a run's message id), else `""`.
    pub key: String,
    /// What it says beyond the session and the seq: a JSON object.
    pub data: String,
    /// When the event happened (ms since the epoch).
    pub time: u64,
}

/// A webhook subscription as stored.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Webhook {
    /// Its id.
    pub webhook_id: String,
    /// The tenant that made it (`None`: made without a key, or by the operator).
    pub tenant: Option<String>,
    /// It hears every tenant's sessions (an admin's, the operator's, or one made without keys).
    pub every_tenant: bool,
    /// It hears only this session.
    pub session_id: Option<String>,
    /// Where deliveries are posted.
    pub url: String,
    /// The event types it wants.
    pub events: Vec<String>,
    /// What signs its deliveries (`whsec_` and base64).
    pub secret: String,
    /// When it was made (ms since the epoch).
    pub created_at: u64,
    /// Deliveries its receiver took.
    pub delivered: u64,
    /// When its receiver last took one.
    pub last_delivered_at: Option<u64>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// When it failed.
    pub last_error_at: Option<u64>,
    /// Since when it is failing: a delivery ran out of attempts; nothing is delivered until it is
    /// resumed.
    pub failing_since: Option<u64>,
    /// Deliveries given up (when it started failing, with those still waiting then).
    pub dropped: u64,
    /// Deliveries waiting (read, never written).
    pub pending: u64,
}

/// A delivery a gateway claimed, with what it needs to send it.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    /// Its row.
    pub delivery_id: i64,
    /// The subscription.
    pub webhook_id: String,
    /// Where it goes.
    pub url: String,
    /// What signs it.
    pub secret: String,
    /// The session it reports.
    pub session_id: String,
    /// The event's seq.
    pub seq: u64,
    /// Its type.
    pub kind: String,
    /// What tells two reports of one type at one seq apart.
    pub key: String,
    /// What it says (a JSON object).
    pub data: String,
    /// When the event happened.
    pub created_at: u64,
    /// Attempts made before this one.
    pub attempts: u32,
}

/// How an attempt of a delivery went.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The receiver took it (a 2xx): it is gone.
    Delivered {
        /// The delivery.
        delivery_id: i64,
        /// Its subscription.
        webhook_id: String,
        /// When.
        at: u64,
    },
    /// It failed; it is tried again at `next_at`.
    Retry {
        /// The delivery.
        delivery_id: i64,
        /// Its subscription.
        webhook_id: String,
        /// Attempts made so far.
        attempts: u32,
        /// When to try again.
        next_at: u64,
        /// Why it failed.
        error: String,
        /// When.
        at: u64,
    },
    /// It ran out of attempts: its subscription is failing, and what waited for it is dropped.
    GaveUp {
        /// The delivery.
        delivery_id: i64,
        /// Its subscription.
        webhook_id: String,
        /// Why the last attempt failed.
        error: String,
        /// When.
        at: u64,
    },
}

/// The columns of a webhook, as [`webhook_row`] reads them, with its pending deliveries.
const WEBHOOK_COLUMNS: &str = "SELECT w.webhook_id, w.tenant, w.every_tenant, w.session_id, \
    w.url, w.events, w.secret, w.created_at, w.delivered, w.last_delivered_at, w.last_error, \
    w.last_error_at, w.failing_since, w.dropped, \
    (SELECT COUNT(*) FROM webhook_deliveries d WHERE d.webhook_id = w.webhook_id) FROM webhooks w";

/// The stored form of a list of event types: each between spaces, so one is found as ` type `.
pub(crate) fn stored_events(events: &[String]) -> String {
    format!(" {} ", events.join(" "))
}

/// What the commit of `session_id`'s events writes for its hooks (SQLite): one delivery for each
/// subscription that wants it (`?7` is the type between spaces).
const INSERT_DELIVERIES: &str = "INSERT OR IGNORE INTO webhook_deliveries \
    (webhook_id, session_id, seq, type, key, data, created_at, next_at) \
    SELECT w.webhook_id, ?1, ?2, ?3, ?4, ?5, ?6, CASE WHEN EXISTS (SELECT 1 FROM \
    webhook_deliveries e WHERE e.webhook_id = w.webhook_id AND e.session_id = ?1) \
    THEN 9223372036854775807 ELSE 0 END FROM webhooks w \
    WHERE w.failing_since IS NULL AND instr(w.events, ?7) > 0 \
    AND (w.session_id IS NULL OR w.session_id = ?1) \
    AND (w.every_tenant OR w.tenant = (SELECT tenant FROM sessions WHERE session_id = ?1))";

/// Writes the deliveries of `hooks` (events of `session_id`) in the commit's transaction.
pub(crate) fn write_sqlite(
    conn: &Connection,
    session_id: &str,
    hooks: &[Hook],
) -> rusqlite::Result<()> {
    if hooks.is_empty() {
        return Ok(());
    }
    let mut insert = conn.prepare_cached(INSERT_DELIVERIES)?;
    for hook in hooks {
        let spaced = format!(" {} ", hook.kind);
        insert.execute(params![
            session_id,
            hook.seq as i64,
            hook.kind,
            hook.key,
            hook.data,
            hook.time as i64,
            spaced
        ])?;
    }
    Ok(())
}

fn webhook_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Webhook> {
    let events: String = r.get(5)?;
    let opt = |i: usize| -> rusqlite::Result<Option<u64>> {
        Ok(r.get::<_, Option<i64>>(i)?.map(|n| n as u64))
    };
    Ok(Webhook {
        webhook_id: r.get(0)?,
        tenant: r.get(1)?,
        every_tenant: r.get(2)?,
        session_id: r.get(3)?,
        url: r.get(4)?,
        events: events.split_whitespace().map(str::to_owned).collect(),
        secret: r.get(6)?,
        created_at: r.get::<_, i64>(7)? as u64,
        delivered: r.get::<_, i64>(8)? as u64,
        last_delivered_at: opt(9)?,
        last_error: r.get(10)?,
        last_error_at: opt(11)?,
        failing_since: opt(12)?,
        dropped: r.get::<_, i64>(13)? as u64,
        pending: r.get::<_, i64>(14)? as u64,
    })
}

/// The deliveries due at `?1` that no gateway holds, at most `?2`, soonest first: read, so the
/// writer only claims by key. Only the oldest waiting delivery of a subscription and session (its
/// head) is ever due: the others wait behind it with `next_at` at [`BEHIND`] (`i64::MAX`), and
/// the next is made due when the head goes ([`PROMOTE`]). So this reads the index on `next_at`,
/// however many deliveries wait behind a receiver that does not answer.
pub(crate) const DUE_HEADS: &str = "SELECT delivery_id FROM webhook_deliveries \
    WHERE next_at <= ?1 AND claimed_until <= ?1 ORDER BY next_at, delivery_id LIMIT ?2";

/// The `next_at` of a delivery waiting behind an older one of its subscription and session.
pub const BEHIND: i64 = i64::MAX;

/// Makes due (at `?2`) the delivery after `?1` of its subscription and session: `?1` is going.
pub(crate) const PROMOTE: &str = "UPDATE webhook_deliveries SET next_at = ?2 \
    WHERE delivery_id = (SELECT MIN(e.delivery_id) FROM webhook_deliveries e \
    JOIN webhook_deliveries d ON e.webhook_id = d.webhook_id AND e.session_id = d.session_id \
    WHERE d.delivery_id = ?1 AND e.delivery_id > d.delivery_id)";

/// A claimed delivery with its subscription's URL and secret.
const CLAIMED: &str = "SELECT d.delivery_id, d.webhook_id, w.url, w.secret, d.session_id, \
    d.seq, d.type, d.key, d.data, d.created_at, d.attempts \
    FROM webhook_deliveries d JOIN webhooks w USING (webhook_id) WHERE d.delivery_id = ?1";

impl Sqlite {
    /// See [`Store::insert_webhook`].
    pub async fn insert_webhook(&self, webhook: Webhook) -> Result<(), StoreError> {
        self.direct(move |conn| {
            conn.execute(
                "INSERT INTO webhooks (webhook_id, tenant, every_tenant, session_id, url, events, \
                 secret, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    webhook.webhook_id,
                    webhook.tenant,
                    webhook.every_tenant,
                    webhook.session_id,
                    webhook.url,
                    stored_events(&webhook.events),
                    webhook.secret,
                    webhook.created_at as i64
                ],
            )
            .map(drop)
        })
        .await
    }

    /// See [`Store::webhooks`].
    pub async fn webhooks(&self, tenant: Option<&str>) -> Result<Vec<Webhook>, StoreError> {
        let tenant = tenant.map(str::to_owned);
        self.read(move |conn| {
            let sql = format!(
                "{WEBHOOK_COLUMNS} WHERE ?1 IS NULL OR (w.tenant = ?1 AND NOT w.every_tenant) \
                 ORDER BY w.created_at, w.webhook_id"
            );
            let mut stmt = conn.prepare(&sql)?;
            stmt.query_map([tenant], webhook_row)?.collect()
        })
        .await
    }

    /// See [`Store::webhook`].
    pub async fn webhook(&self, webhook_id: &str) -> Result<Option<Webhook>, StoreError> {
        let id = webhook_id.to_owned();
        self.read(move |conn| {
            let sql = format!("{WEBHOOK_COLUMNS} WHERE w.webhook_id = ?1");
            conn.query_row(&sql, [id], webhook_row).optional()
        })
        .await
    }

    /// See [`Store::delete_webhook`].
    pub async fn delete_webhook(&self, webhook_id: &str) -> Result<bool, StoreError> {
        let id = webhook_id.to_owned();
        self.direct(move |conn| {
            let tx = conn.unchecked_transaction()?;
            tx.execute("DELETE FROM webhook_deliveries WHERE webhook_id = ?1", [&id])?;
            let gone = tx.execute("DELETE FROM webhooks WHERE webhook_id = ?1", [&id])? > 0;
            tx.commit()?;
            Ok(gone)
        })
        .await
    }

    /// See [`Store::resume_webhook`].
    pub async fn resume_webhook(&self, webhook_id: &str) -> Result<bool, StoreError> {
        let id = webhook_id.to_owned();
        self.direct(move |conn| {
            let sql = "UPDATE webhooks SET failing_since = NULL WHERE webhook_id = ?1";
            Ok(conn.execute(sql, [&id])? > 0)
        })
        .await
    }

    /// See [`Store::claim_deliveries`].
    pub async fn claim_deliveries(
        &self,
        now: u64,
        until: u64,
        node: &str,
        limit: usize,
    ) -> Result<Vec<Delivery>, StoreError> {
        // Asked a few times a second, with a backlog when a receiver is down: what is due is
        // read beside the writer, which only claims those rows by key.
        let heads: Vec<i64> = self
            .read(move |conn| {
                let mut due = conn.prepare_cached(DUE_HEADS)?;
                due.query_map(params![now as i64, limit as i64], |r| r.get(0))?.collect()
            })
            .await?;
        if heads.is_empty() {
            return Ok(Vec::new());
        }
        let node = node.to_owned();
        self.direct(move |conn| {
            let tx = conn.unchecked_transaction()?;
            let mut claimed = Vec::new();
            {
                // Still free: no other claim took it since it was read.
                let mut claim = tx.prepare_cached(
                    "UPDATE webhook_deliveries SET claimed_until = ?2, claimed_by = ?3 \
                     WHERE delivery_id = ?1 AND claimed_until <= ?4",
                )?;
                let mut read = tx.prepare_cached(CLAIMED)?;
                for id in heads {
                    if claim.execute(params![id, until as i64, node, now as i64])? == 1 {
                        claimed.push(read.query_row([id], |r| {
                            Ok(Delivery {
                                delivery_id: r.get(0)?,
                                webhook_id: r.get(1)?,
                                url: r.get(2)?,
                                secret: r.get(3)?,
                                session_id: r.get(4)?,
                                seq: r.get::<_, i64>(5)? as u64,
                                kind: r.get(6)?,
                                key: r.get(7)?,
                                data: r.get(8)?,
                                created_at: r.get::<_, i64>(9)? as u64,
                                attempts: r.get::<_, i64>(10)? as u32,
                            })
                        })?);
                    }
                }
            }
            tx.commit()?;
            Ok(claimed)
        })
        .await
    }

    /// See [`Store::settle_deliveries`].
    pub async fn settle_deliveries(&self, outcomes: Vec<Outcome>) -> Result<(), StoreError> {
        self.direct(move |conn| {
            let tx = conn.unchecked_transaction()?;
            for outcome in &outcomes {
                settle_sqlite(&tx, outcome)?;
            }
            tx.commit()
        })
        .await
    }

    /// See [`Store::release_claims`].
    pub async fn release_claims(&self, node: &str) -> Result<(), StoreError> {
        let node = node.to_owned();
        self.direct(move |conn| {
            let tx = conn.unchecked_transaction()?;
            tx.execute(
                "UPDATE webhook_deliveries SET claimed_until = 0, claimed_by = NULL \
                 WHERE claimed_by = ?1",
                [&node],
            )?;
            tx.execute(
                "UPDATE schedules SET claimed_until = 0, claimed_by = NULL WHERE claimed_by = ?1",
                [&node],
            )?;
            tx.commit()
        })
        .await
    }
}

fn settle_sqlite(conn: &Connection, outcome: &Outcome) -> rusqlite::Result<()> {
    match outcome {
        Outcome::Delivered { delivery_id, webhook_id, at } => {
            conn.prepare_cached(PROMOTE)?.execute(params![delivery_id, *at as i64])?;
            conn.prepare_cached("DELETE FROM webhook_deliveries WHERE delivery_id = ?1")?
                .execute([delivery_id])?;
            conn.prepare_cached(
                "UPDATE webhooks SET delivered = delivered + 1, last_delivered_at = ?2 \
                 WHERE webhook_id = ?1",
            )?
            .execute(params![webhook_id, *at as i64])?;
        }
        Outcome::Retry { delivery_id, webhook_id, attempts, next_at, error, at } => {
            conn.prepare_cached(
                "UPDATE webhook_deliveries SET attempts = ?2, next_at = ?3, claimed_until = 0, \
                 claimed_by = NULL WHERE delivery_id = ?1",
            )?
            .execute(params![delivery_id, *attempts as i64, *next_at as i64])?;
            conn.prepare_cached(
                "UPDATE webhooks SET last_error = ?2, last_error_at = ?3 WHERE webhook_id = ?1",
            )?
            .execute(params![webhook_id, error, *at as i64])?;
        }
        Outcome::GaveUp { webhook_id, error, at, .. } => {
            conn.prepare_cached(
                "UPDATE webhooks SET failing_since = ?3, last_error = ?2, last_error_at = ?3, \
                 dropped = dropped + (SELECT COUNT(*) FROM webhook_deliveries \
                 WHERE webhook_id = ?1) WHERE webhook_id = ?1",
            )?
            .execute(params![webhook_id, error, *at as i64])?;
            conn.prepare_cached("DELETE FROM webhook_deliveries WHERE webhook_id = ?1")?
                .execute([webhook_id])?;
        }
    }
    Ok(())
}

impl Store {
    /// Wakes the deliverer: a commit of this process wrote deliveries.
    pub fn deliveries_written(&self) -> &tokio::sync::Notify {
        &self.1
    }
}
