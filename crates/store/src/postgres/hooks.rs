//! Webhook subscriptions and their deliveries in PostgreSQL: the same rows and rules as SQLite's
//! (`crate::hooks`). A claim is one `UPDATE` whose row locks make two gateways that claim at once
//! take different deliveries: only the gateway that claimed a delivery sends it.

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;

use super::Postgres;
use crate::StoreError;
use crate::hooks::{BEHIND, Delivery, Hook, Outcome, PROMOTE, Webhook, stored_events};

const WEBHOOK_COLUMNS: &str = "SELECT w.webhook_id, w.tenant, w.every_tenant, w.session_id, \
    w.url, w.events, w.secret, w.created_at, w.delivered, w.last_delivered_at, w.last_error, \
    w.last_error_at, w.failing_since, w.dropped, \
    (SELECT COUNT(*) FROM webhook_deliveries d WHERE d.webhook_id = w.webhook_id) FROM webhooks w";

/// How often waiting deliveries are checked for one with none before it (see `claim_deliveries`).
const HEADS_EVERY_MS: u64 = 10_000;

fn webhook_row(r: &tokio_postgres::Row) -> Webhook {
    let opt = |i: usize| r.get::<_, Option<i64>>(i).map(|n| n as u64);
    let events: String = r.get(5);
    Webhook {
        webhook_id: r.get(0),
        tenant: r.get(1),
        every_tenant: r.get(2),
        session_id: r.get(3),
        url: r.get(4),
        events: events.split_whitespace().map(str::to_owned).collect(),
        secret: r.get(6),
        created_at: r.get::<_, i64>(7) as u64,
        delivered: r.get::<_, i64>(8) as u64,
        last_delivered_at: opt(9),
        last_error: r.get(10),
        last_error_at: opt(11),
        failing_since: opt(12),
        dropped: r.get::<_, i64>(13) as u64,
        pending: r.get::<_, i64>(14) as u64,
    }
}

/// Writes the deliveries of `hooks` (events of `session_id`) in a commit's transaction: one for
/// each subscription that wants it.
pub(super) async fn write_hooks(
    client: &impl GenericClient,
    session_id: &str,
    hooks: &[Hook],
) -> Result<(), StoreError> {
    if hooks.is_empty() {
        return Ok(());
    }
    let insert = client
        .prepare_cached(
            "INSERT INTO webhook_deliveries (webhook_id, session_id, seq, type, key, data, \
             created_at, next_at) SELECT w.webhook_id, $1, $2, $3, $4, $5, $6, \
             CASE WHEN EXISTS (SELECT 1 FROM webhook_deliveries e \
             WHERE e.webhook_id = w.webhook_id AND e.session_id = $1) \
             THEN 9223372036854775807 ELSE 0 END FROM webhooks w \
             WHERE w.failing_since IS NULL AND strpos(w.events, $7) > 0 \
             AND (w.session_id IS NULL OR w.session_id = $1) \
             AND (w.every_tenant OR w.tenant = (SELECT tenant FROM sessions WHERE session_id = $1)) \
             ON CONFLICT DO NOTHING",
        )
        .await?;
    for hook in hooks {
        let spaced = format!(" {} ", hook.kind);
        let (seq, time) = (hook.seq as i64, hook.time as i64);
        let params: [&(dyn ToSql + Sync); 7] =
            [&session_id, &seq, &hook.kind, &hook.key, &hook.data, &time, &spaced];
        client.execute(&insert, &params).await?;
    }
    Ok(())
}

impl Postgres {
    /// See [`crate::Store::insert_webhook`].
    pub async fn insert_webhook(&self, webhook: Webhook) -> Result<(), StoreError> {
        let events = stored_events(&webhook.events);
        let created_at = webhook.created_at as i64;
        let params: [&(dyn ToSql + Sync); 8] = [
            &webhook.webhook_id,
            &webhook.tenant,
            &webhook.every_tenant,
            &webhook.session_id,
            &webhook.url,
            &events,
            &webhook.secret,
            &created_at,
        ];
        self.client()
            .await?
            .execute(
                "INSERT INTO webhooks (webhook_id, tenant, every_tenant, session_id, url, events, \
                 secret, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                &params,
            )
            .await?;
        Ok(())
    }

    /// See [`crate::Store::webhooks`].
    pub async fn webhooks(&self, tenant: Option<&str>) -> Result<Vec<Webhook>, StoreError> {
        let sql = format!(
            "{WEBHOOK_COLUMNS} WHERE $1::text IS NULL OR (w.tenant = $1 AND NOT w.every_tenant) \
             ORDER BY w.created_at, w.webhook_id"
        );
        let rows = self.client().await?.query(&sql, &[&tenant]).await?;
        Ok(rows.iter().map(webhook_row).collect())
    }

    /// See [`crate::Store::webhook`].
    pub async fn webhook(&self, webhook_id: &str) -> Result<Option<Webhook>, StoreError> {
        let sql = format!("{WEBHOOK_COLUMNS} WHERE w.webhook_id = $1");
        Ok(self.client().await?.query_opt(&sql, &[&webhook_id]).await?.as_ref().map(webhook_row))
    }

    /// See [`crate::Store::delete_webhook`].
    pub async fn delete_webhook(&self, webhook_id: &str) -> Result<bool, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        tx.execute("DELETE FROM webhook_deliveries WHERE webhook_id = $1", &[&webhook_id]).await?;
        let gone = tx.execute("DELETE FROM webhooks WHERE webhook_id = $1", &[&webhook_id]).await?;
        tx.commit().await?;
        Ok(gone > 0)
    }

    /// See [`crate::Store::resume_webhook`].
    pub async fn resume_webhook(&self, webhook_id: &str) -> Result<bool, StoreError> {
        let sql = "UPDATE webhooks SET failing_since = NULL WHERE webhook_id = $1";
        Ok(self.client().await?.execute(sql, &[&webhook_id]).await? > 0)
    }

    /// See [`crate::Store::claim_deliveries`].
    pub async fn claim_deliveries(
        &self,
        now: u64,
        until: u64,
        node: &str,
        limit: usize,
    ) -> Result<Vec<Delivery>, StoreError> {
        let client = self.client().await?;
        // A commit that wrote a delivery behind a head that another gateway's transaction was
        // deleting at that moment saw the head, and that transaction saw no delivery behind it
        // to make due: now and then, a delivery with none before it is made due.
        let checked = &self.inner.heads_checked;
        if now.saturating_sub(checked.load(std::sync::atomic::Ordering::Relaxed)) >= HEADS_EVERY_MS
        {
            checked.store(now, std::sync::atomic::Ordering::Relaxed);
            let sql = "UPDATE webhook_deliveries d SET next_at = $1 WHERE d.next_at = $2 \
                       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e \
                       WHERE e.webhook_id = d.webhook_id AND e.session_id = d.session_id \
                       AND e.delivery_id < d.delivery_id)";
            client.execute(sql, &[&(now as i64), &BEHIND]).await?;
        }
        let claim = client
            .prepare_cached(
                "UPDATE webhook_deliveries c SET claimed_until = $2, claimed_by = $3 \
                 FROM webhooks w WHERE w.webhook_id = c.webhook_id AND c.claimed_until <= $1 \
                 AND c.next_at <= $1 AND c.delivery_id IN ( \
                   SELECT delivery_id FROM webhook_deliveries \
                   WHERE next_at <= $1 AND claimed_until <= $1 \
                   ORDER BY next_at, delivery_id LIMIT $4) \
                 RETURNING c.delivery_id, c.webhook_id, w.url, w.secret, c.session_id, c.seq, \
                 c.type, c.key, c.data, c.created_at, c.attempts",
            )
            .await?;
        let (now, until, limit) = (now as i64, until as i64, limit as i64);
        let rows = client.query(&claim, &[&now, &until, &node, &limit]).await?;
        let mut claimed: Vec<Delivery> = rows
            .iter()
            .map(|r| Delivery {
                delivery_id: r.get(0),
                webhook_id: r.get(1),
                url: r.get(2),
                secret: r.get(3),
                session_id: r.get(4),
                seq: r.get::<_, i64>(5) as u64,
                kind: r.get(6),
                key: r.get(7),
                data: r.get(8),
                created_at: r.get::<_, i64>(9) as u64,
                attempts: r.get::<_, i64>(10) as u32,
            })
            .collect();
        claimed.sort_by_key(|d| d.delivery_id);
        Ok(claimed)
    }

    /// See [`crate::Store::settle_deliveries`].
    pub async fn settle_deliveries(&self, outcomes: Vec<Outcome>) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        for outcome in &outcomes {
            match outcome {
                Outcome::Delivered { delivery_id, webhook_id, at } => {
                    let promote = PROMOTE.replace("?1", "$1").replace("?2", "$2");
                    tx.execute(&promote, &[delivery_id, &(*at as i64)]).await?;
                    let sql = "DELETE FROM webhook_deliveries WHERE delivery_id = $1";
                    tx.execute(sql, &[delivery_id]).await?;
                    let sql = "UPDATE webhooks SET delivered = delivered + 1, \
                               last_delivered_at = $2 WHERE webhook_id = $1";
                    tx.execute(sql, &[webhook_id, &(*at as i64)]).await?;
                }
                Outcome::Retry { delivery_id, webhook_id, attempts, next_at, error, at } => {
                    let sql = "UPDATE webhook_deliveries SET attempts = $2, next_at = $3, \
                               claimed_until = 0, claimed_by = NULL WHERE delivery_id = $1";
                    let (attempts, next_at) = (*attempts as i64, *next_at as i64);
                    tx.execute(sql, &[delivery_id, &attempts, &next_at]).await?;
                    let sql = "UPDATE webhooks SET last_error = $2, last_error_at = $3 \
                               WHERE webhook_id = $1";
                    tx.execute(sql, &[webhook_id, error, &(*at as i64)]).await?;
                }
                Outcome::GaveUp { webhook_id, error, at, .. } => {
                    let sql = "UPDATE webhooks SET failing_since = $3, last_error = $2, \
                               last_error_at = $3, dropped = dropped + (SELECT COUNT(*) \
                               FROM webhook_deliveries WHERE webhook_id = $1) WHERE webhook_id = $1";
                    tx.execute(sql, &[webhook_id, error, &(*at as i64)]).await?;
                    let sql = "DELETE FROM webhook_deliveries WHERE webhook_id = $1";
                    tx.execute(sql, &[webhook_id]).await?;
                }
            }
        }
        tx.commit().await?;
        Ok(())
    }

    /// See [`crate::Store::release_claims`].
    pub async fn release_claims(&self, node: &str) -> Result<(), StoreError> {
        let client = self.client().await?;
        let sql = "UPDATE webhook_deliveries SET claimed_until = 0, claimed_by = NULL \
                   WHERE claimed_by = $1";
        client.execute(sql, &[&node]).await?;
        let sql = "UPDATE schedules SET claimed_until = 0, claimed_by = NULL WHERE claimed_by = $1";
        client.execute(sql, &[&node]).await?;
        Ok(())
    }
}
