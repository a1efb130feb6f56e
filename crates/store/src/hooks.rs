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
    (webhook_id, session_id, seq, type, key, data, created_at) \
    SELECT w.webhook_id, ?1, ?2, ?3, ?4, ?5, ?6 FROM webhooks w \
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

/// The oldest waiting delivery of each subscription and session that is due and not claimed,
/// claimed by `node` until `?2` (SQLite; `?1` is now, `?4` the most taken).
const CLAIM: &str = "UPDATE webhook_deliveries SET claimed_until = ?2, claimed_by = ?3 \
    WHERE claimed_until <= ?1 AND delivery_id IN ( \
      SELECT d.delivery_id FROM webhook_deliveries d \
      WHERE d.next_at <= ?1 AND d.claimed_until <= ?1 AND NOT EXISTS ( \
        SELECT 1 FROM webhook_deliveries e WHERE e.webhook_id = d.webhook_id \
        AND e.session_id = d.session_id AND e.delivery_id < d.delivery_id) \
      ORDER BY d.delivery_id LIMIT ?4) \
    RETURNING delivery_id, webhook_id, session_id, seq, type, key, data, created_at, attempts";

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

    /// See [`Store::record_hooks`].
    pub async fn record_hooks(&self, session_id: &str, hooks: Vec<Hook>) -> Result<(), StoreError> {
        // Most gateways have no subscription that wants these: then nothing is written.
        let kinds: Vec<String> = hooks.iter().map(|h| format!(" {} ", h.kind)).collect();
        let wanted = self
            .read(move |conn| {
                let mut stmt = conn.prepare_cached(
                    "SELECT 1 FROM webhooks WHERE failing_since IS NULL AND instr(events, ?1) > 0",
                )?;
                for kind in &kinds {
                    if stmt.exists([kind])? {
                        return Ok(true);
                    }
                }
                Ok(false)
            })
            .await?;
        if !wanted {
            return Ok(());
        }
        let session_id = session_id.to_owned();
        self.direct(move |conn| {
            let tx = conn.unchecked_transaction()?;
            write_sqlite(&tx, &session_id, &hooks)?;
            tx.commit()
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
        // Asked a few times a second: a read answers "nothing due" without the writer.
        let due = self
            .read(move |conn| {
                conn.prepare_cached(
                    "SELECT 1 FROM webhook_deliveries WHERE next_at <= ?1 AND claimed_until <= ?1",
                )?
                .exists([now as i64])
            })
            .await?;
        if !due {
            return Ok(Vec::new());
        }
        let node = node.to_owned();
        self.direct(move |conn| {
            let tx = conn.unchecked_transaction()?;
            let mut claimed = Vec::new();
            {
                let mut stmt = tx.prepare_cached(CLAIM)?;
                let rows =
                    stmt.query_map(params![now as i64, until as i64, node, limit as i64], |r| {
                        Ok(Delivery {
                            delivery_id: r.get(0)?,
                            webhook_id: r.get(1)?,
                            url: String::new(),
                            secret: String::new(),
                            session_id: r.get(2)?,
                            seq: r.get::<_, i64>(3)? as u64,
                            kind: r.get(4)?,
                            key: r.get(5)?,
                            data: r.get(6)?,
                            created_at: r.get::<_, i64>(7)? as u64,
                            attempts: r.get::<_, i64>(8)? as u32,
                        })
                    })?;
                for row in rows {
                    claimed.push(row?);
                }
                let mut target =
                    tx.prepare_cached("SELECT url, secret FROM webhooks WHERE webhook_id = ?1")?;
                for delivery in &mut claimed {
                    (delivery.url, delivery.secret) =
                        target.query_row([&delivery.webhook_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
                }
            }
            tx.commit()?;
            claimed.sort_by_key(|d| d.delivery_id);
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
