//! The PostgreSQL rows beside the logs: sessions, receipts, idempotency records and API keys.

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::Postgres;
use crate::receipts::Receipt;
use crate::usage::{ModelUsage, Scope, sum_sql};
use crate::{IdempotencyRecord, Key, SessionRow, StoreError};

const SESSION_COLUMNS: &str = "SELECT s.session_id, s.created_at, s.updated_at, s.spec, s.disposed, \
     s.parent_session_id, s.goal, s.needs_recovery, s.tenant, s.base_session_id, s.base_seq \
     FROM sessions s";

fn session_row(r: &Row) -> SessionRow {
    let spec: String = r.get(3);
    SessionRow {
        session_id: r.get(0),
        created_at: r.get::<_, i64>(1) as u64,
        updated_at: r.get::<_, i64>(2) as u64,
        spec: serde_json::from_str(&spec).unwrap_or_default(),
        disposed: r.get(4),
        parent_session_id: r.get(5),
        goal: r.get(6),
        needs_recovery: r.get(7),
        tenant: r.get(8),
        shares: match (r.get::<_, Option<String>>(9), r.get::<_, Option<i64>>(10)) {
            (Some(source), Some(at)) => Some((source, at as u64)),
            _ => None,
        },
    }
}

const KEY_COLUMNS: &str = "SELECT key_id, tenant, admin, created_at, revoked_at FROM api_keys";

fn key_row(r: &Row) -> Key {
    Key {
        key_id: r.get(0),
        tenant: r.get(1),
        admin: r.get(2),
        created_at: r.get::<_, i64>(3) as u64,
        revoked_at: r.get::<_, Option<i64>>(4).map(|t| t as u64),
    }
}

impl Postgres {
    async fn session_rows(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<SessionRow>, StoreError> {
        let rows = self.client().await?.query(sql, params).await?;
        Ok(rows.iter().map(session_row).collect())
    }

    /// See [`crate::Store::session`].
    pub async fn session(&self, session_id: &str) -> Result<Option<SessionRow>, StoreError> {
        let sql = format!("{SESSION_COLUMNS} WHERE s.session_id = $1");
        Ok(self.session_rows(&sql, &[&session_id]).await?.pop())
    }

    /// See [`crate::Store::sessions`].
    pub async fn sessions(
        &self,
        cursor: Option<String>,
        limit: usize,
        tenant: Option<&str>,
    ) -> Result<Vec<SessionRow>, StoreError> {
        let (cursor, limit) = (cursor.unwrap_or_default(), limit as i64);
        match tenant {
            None => {
                let sql = format!(
                    "{SESSION_COLUMNS} WHERE s.session_id > $1 ORDER BY s.session_id LIMIT $2"
                );
                self.session_rows(&sql, &[&cursor, &limit]).await
            }
            Some(tenant) => {
                let sql = format!(
                    "{SESSION_COLUMNS} WHERE s.tenant = $3 AND s.session_id > $1 \
                     ORDER BY s.session_id LIMIT $2"
                );
                self.session_rows(&sql, &[&cursor, &limit, &tenant]).await
            }
        }
    }

    /// See [`crate::Store::tenant_sessions`].
    pub async fn tenant_sessions(&self, tenant: &str) -> Result<u64, StoreError> {
        let sql = "SELECT COUNT(*) FROM sessions WHERE tenant = $1 AND NOT disposed";
        let row = self.client().await?.query_one(sql, &[&tenant]).await?;
        Ok(row.get::<_, i64>(0) as u64)
    }

    /// See [`crate::Store::tenant_bytes`].
    pub async fn tenant_bytes(&self, tenant: &str) -> Result<u64, StoreError> {
        let sql = "SELECT COALESCE(SUM(bytes), 0)::BIGINT FROM sessions \
                   WHERE tenant = $1 AND NOT disposed";
        let row = self.client().await?.query_one(sql, &[&tenant]).await?;
        Ok(row.get::<_, i64>(0) as u64)
    }

    /// See [`crate::Store::session_usage`].
    pub async fn session_usage(&self, session_id: &str) -> Result<Vec<ModelUsage>, StoreError> {
        let sql = sum_sql(Scope::Session, |n| format!("${n}"));
        self.sums(&sql, &[&session_id]).await
    }

    /// See [`crate::Store::tenant_usage`].
    pub async fn tenant_usage(
        &self,
        tenant: Option<&str>,
        since: u64,
    ) -> Result<Vec<ModelUsage>, StoreError> {
        let since = since.min(i64::MAX as u64) as i64;
        match tenant {
            Some(tenant) => {
                let sql = sum_sql(Scope::Tenant, |n| format!("${n}"));
                self.sums(&sql, &[&since, &tenant]).await
            }
            None => self.sums(&sum_sql(Scope::All, |n| format!("${n}")), &[&since]).await,
        }
    }

    async fn sums(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<ModelUsage>, StoreError> {
        let rows = self.client().await?.query(sql, params).await?;
        let sum = |row: &Row| {
            let counts = std::array::from_fn(|i| row.get::<_, i64>(3 + i));
            ModelUsage::of(row.get(0), row.get(1), row.get(2), counts)
        };
        Ok(rows.iter().map(sum).collect())
    }

    /// See [`crate::Store::session_of_tenant`].
    pub async fn session_of_tenant(
        &self,
        session_id: &str,
        tenant: &str,
    ) -> Result<bool, StoreError> {
        let sql = "SELECT EXISTS (SELECT 1 FROM sessions WHERE session_id = $1 AND tenant = $2)";
        Ok(self.client().await?.query_one(sql, &[&session_id, &tenant]).await?.get(0))
    }

    /// See [`crate::Store::sessions_to_recover`]: those no live gateway holds. A session
    /// never leased (or let go) is visited only when its last commit did not leave it at rest; one
    /// whose lease ran out also when it is a child.
    pub async fn sessions_to_recover(
        &self,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<Vec<SessionRow>, StoreError> {
        let sql = format!(
            "{SESSION_COLUMNS} LEFT JOIN leases l USING (session_id) \
             WHERE NOT s.disposed AND s.session_id > $1 AND ( \
               (l.session_id IS NULL AND s.needs_recovery) \
               OR (l.expires_at < now() AND (s.needs_recovery OR s.parent_session_id IS NOT NULL))) \
             ORDER BY s.session_id LIMIT $2"
        );
        self.session_rows(&sql, &[&cursor.unwrap_or_default(), &(limit as i64)]).await
    }

    /// See [`crate::Store::session_count`].
    pub async fn session_count(&self) -> Result<u64, StoreError> {
        let row = self.client().await?.query_one("SELECT COUNT(*) FROM sessions", &[]).await?;
        Ok(row.get::<_, i64>(0) as u64)
    }

    /// See [`crate::Store::children`].
    pub async fn children(&self, parent_id: &str) -> Result<Vec<SessionRow>, StoreError> {
        let sql = format!(
            "{SESSION_COLUMNS} WHERE s.parent_session_id = $1 ORDER BY s.created_at, s.session_id"
        );
        self.session_rows(&sql, &[&parent_id]).await
    }

    /// See [`crate::Store::create_key`].
    pub async fn insert_key(&self, key: Key, hash: String) -> Result<(), StoreError> {
        self.client()
            .await?
            .execute(
                "INSERT INTO api_keys (key_id, hash, tenant, admin, created_at) \
                 VALUES ($1, $2, $3, $4, $5)",
                &[&key.key_id, &hash, &key.tenant, &key.admin, &(key.created_at as i64)],
            )
            .await?;
        Ok(())
    }

    /// See [`crate::Store::keys`].
    pub async fn keys(&self) -> Result<Vec<Key>, StoreError> {
        let sql = format!("{KEY_COLUMNS} ORDER BY created_at, key_id");
        Ok(self.client().await?.query(&sql, &[]).await?.iter().map(key_row).collect())
    }

    /// See [`crate::Store::revoke_key`].
    pub async fn revoke_key_row(&self, key_id: &str, now: u64) -> Result<Option<Key>, StoreError> {
        let client = self.client().await?;
        let sql = "UPDATE api_keys SET revoked_at = $2 WHERE key_id = $1 AND revoked_at IS NULL";
        client.execute(sql, &[&key_id, &(now as i64)]).await?;
        client.execute("DELETE FROM logins WHERE key_id = $1", &[&key_id]).await?;
        let sql = format!("{KEY_COLUMNS} WHERE key_id = $1");
        Ok(client.query_opt(&sql, &[&key_id]).await?.as_ref().map(key_row))
    }

    /// See [`crate::Store::live_key`].
    pub async fn live_key(&self, secret: &str) -> Result<Option<Key>, StoreError> {
        let hash = crate::keys::key_hash(secret);
        let client = self.client().await?;
        let sql = client
            .prepare_cached(&format!("{KEY_COLUMNS} WHERE hash = $1 AND revoked_at IS NULL"))
            .await?;
        Ok(client.query_opt(&sql, &[&hash]).await?.as_ref().map(key_row))
    }

    /// See [`crate::Store::create_login`].
    pub async fn insert_login(
        &self,
        hash: String,
        key_id: String,
        now: u64,
    ) -> Result<(), StoreError> {
        let sql = "INSERT INTO logins (token_hash, key_id, created_at) VALUES ($1, $2, $3)";
        self.client().await?.execute(sql, &[&hash, &key_id, &(now as i64)]).await?;
        Ok(())
    }

    /// See [`crate::Store::login_key`].
    pub async fn login_key(&self, hash: String, since: u64) -> Result<Option<Key>, StoreError> {
        let client = self.client().await?;
        let sql = format!(
            "{} WHERE l.token_hash = $1 AND l.created_at >= $2 AND k.revoked_at IS NULL",
            crate::keys::LOGIN_KEY_COLUMNS
        );
        let sql = client.prepare_cached(&sql).await?;
        Ok(client.query_opt(&sql, &[&hash, &(since as i64)]).await?.as_ref().map(key_row))
    }

    /// See [`crate::Store::end_login`].
    pub async fn end_login(&self, hash: String) -> Result<(), StoreError> {
        let sql = "DELETE FROM logins WHERE token_hash = $1";
        self.client().await?.execute(sql, &[&hash]).await?;
        Ok(())
    }

    /// See [`crate::Store::has_keys`].
    pub async fn has_keys(&self) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let sql = client.prepare_cached("SELECT EXISTS (SELECT 1 FROM api_keys)").await?;
        Ok(client.query_one(&sql, &[]).await?.get(0))
    }
}

/// The receipt of a message, from the index.
pub(super) async fn receipt(
    client: &impl GenericClient,
    session_id: &str,
    message_id: &str,
) -> Result<Option<Receipt>, StoreError> {
    let sql = client
        .prepare_cached(
            "SELECT state, target, inserted_seq, claimed_seq, turn, canceled_seq FROM receipts \
             WHERE session_id = $1 AND message_id = $2",
        )
        .await?;
    let row = client.query_opt(&sql, &[&session_id, &message_id]).await?;
    Ok(row.map(|r| Receipt {
        message_id: message_id.to_owned(),
        state: Receipt::state_named(r.get(0)),
        target: serde_json::from_value(serde_json::Value::String(r.get(1)))
            .unwrap_or(airlock_core::Target::NextTurn),
        inserted_seq: r.get::<_, i64>(2) as u64,
        claimed_seq: r.get::<_, Option<i64>>(3).map(|s| s as u64),
        turn: r.get::<_, Option<i64>>(4).map(|t| t as u32),
        canceled_seq: r.get::<_, Option<i64>>(5).map(|s| s as u64),
    }))
}

/// Stores a message's receipt as it now stands.
pub(super) async fn put_receipt(
    client: &impl GenericClient,
    session_id: &str,
    r: &Receipt,
) -> Result<(), StoreError> {
    let sql = client
        .prepare_cached(
            "INSERT INTO receipts (session_id, message_id, state, target, inserted_seq, \
             claimed_seq, turn, canceled_seq) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
             ON CONFLICT (session_id, message_id) DO UPDATE SET state = EXCLUDED.state, \
             target = EXCLUDED.target, inserted_seq = EXCLUDED.inserted_seq, \
             claimed_seq = EXCLUDED.claimed_seq, turn = EXCLUDED.turn, \
             canceled_seq = EXCLUDED.canceled_seq",
        )
        .await?;
    let target = serde_json::to_value(r.target).expect("targets serialize");
    let params: [&(dyn ToSql + Sync); 8] = [
        &session_id,
        &r.message_id,
        &r.state,
        &target.as_str(),
        &(r.inserted_seq as i64),
        &r.claimed_seq.map(|s| s as i64),
        &r.turn.map(i64::from),
        &r.canceled_seq.map(|s| s as i64),
    ];
    client.execute(&sql, &params).await?;
    Ok(())
}

/// Stores the answer given to a keyed request.
pub(super) async fn put_idempotency(
    client: &impl GenericClient,
    record: &IdempotencyRecord,
) -> Result<(), StoreError> {
    let sql = client
        .prepare_cached(
            "INSERT INTO idempotency (key, session_id, request_hash, response, created_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (key) DO UPDATE SET \
             session_id = EXCLUDED.session_id, request_hash = EXCLUDED.request_hash, \
             response = EXCLUDED.response, created_at = EXCLUDED.created_at",
        )
        .await?;
    let created_at = record.created_at as i64;
    let params: [&(dyn ToSql + Sync); 5] =
        [&record.key, &record.session_id, &record.request_hash, &record.response, &created_at];
    client.execute(&sql, &params).await?;
    Ok(())
}
