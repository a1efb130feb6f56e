//! Session rows: one per session, with the indexes its commits keep (whether it needs recovery,
//! its last goal change).

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::StoreError;
use super::sqlite::Sqlite;

/// A session's stored row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRow {
    /// The id.
    pub session_id: String,
    /// Epoch ms.
    pub created_at: u64,
    /// Epoch ms of the last change.
    pub updated_at: u64,
    /// How the session was created (JSON the gateway owns: model, system, tools, metadata).
    pub spec: serde_json::Value,
    /// Disposed sessions keep their log but take no input.
    pub disposed: bool,
    /// The parent of a child session.
    pub parent_session_id: Option<String>,
    /// The tenant whose key created it (a child: its parent's); `None` when the gateway had no
    /// keys then.
    #[serde(skip)]
    pub tenant: Option<String>,
    /// The body of the session's last `goal/change` event.
    #[serde(skip)]
    pub goal: Option<String>,
    /// Its last commit did not leave it at rest: after a restart it needs `recover`.
    #[serde(skip)]
    pub needs_recovery: bool,
    /// A fork: the session whose log it shares, and the last seq it shares (its own events
    /// follow). The store reads the prefix from there.
    #[serde(skip)]
    pub shares: Option<(String, u64)>,
}

impl Sqlite {
    /// One session's row.
    pub async fn session(&self, session_id: &str) -> Result<Option<SessionRow>, StoreError> {
        let session_id = session_id.to_owned();
        self.read(move |conn| {
            conn.query_row(
                &format!("{SESSION_COLUMNS} WHERE session_id = ?1"),
                [&session_id],
                session_row,
            )
            .optional()
        })
        .await
    }

    /// Sessions ordered by id, after `cursor`, at most `limit`; only `tenant`'s when given.
    pub async fn sessions(
        &self,
        cursor: Option<String>,
        limit: usize,
        tenant: Option<&str>,
    ) -> Result<Vec<SessionRow>, StoreError> {
        let sql = match tenant {
            None => format!("{SESSION_COLUMNS} WHERE session_id > ?1 ORDER BY session_id LIMIT ?2"),
            Some(_) => format!(
                "{SESSION_COLUMNS} WHERE tenant = ?3 AND session_id > ?1 ORDER BY session_id LIMIT ?2"
            ),
        };
        self.session_page(sql, cursor, limit, tenant.map(str::to_owned)).await
    }

    /// How many sessions of `tenant` are stored and not disposed.
    pub async fn tenant_sessions(&self, tenant: &str) -> Result<u64, StoreError> {
        self.tenant_total("COUNT(*)", tenant).await
    }

    /// How many bytes of log the sessions of `tenant` that are not disposed keep (a fork: only
    /// its own events).
    pub async fn tenant_bytes(&self, tenant: &str) -> Result<u64, StoreError> {
        self.tenant_total("COALESCE(SUM(bytes), 0)", tenant).await
    }

    /// The SQL aggregate `total` over the sessions of `tenant` that are not disposed.
    async fn tenant_total(&self, total: &'static str, tenant: &str) -> Result<u64, StoreError> {
        let sql = format!("SELECT {total} FROM sessions WHERE tenant = ?1 AND disposed = 0");
        let tenant = tenant.to_owned();
        self.read(move |conn| conn.query_row(&sql, [&tenant], |r| r.get::<_, i64>(0)))
            .await
            .map(|n| n as u64)
    }

    /// Whether `session_id` exists and belongs to `tenant`.
    pub async fn session_of_tenant(
        &self,
        session_id: &str,
        tenant: &str,
    ) -> Result<bool, StoreError> {
        let (session_id, tenant) = (session_id.to_owned(), tenant.to_owned());
        self.read(move |conn| {
            conn.query_row(
                "SELECT EXISTS (SELECT 1 FROM sessions WHERE session_id = ?1 AND tenant = ?2)",
                params![session_id, tenant],
                |r| r.get(0),
            )
        })
        .await
    }

    /// Sessions recovery must visit at start, ordered by id, after `cursor`, at most `limit`: those
    /// whose last commit did not leave them at rest, and every child (its parent may be owed a
    /// notice). Neither disposed.
    pub async fn sessions_to_recover(
        &self,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<Vec<SessionRow>, StoreError> {
        let sql = format!(
            "{SESSION_COLUMNS} WHERE needs_recovery = 1 AND disposed = 0 AND session_id > ?1 \
             UNION {SESSION_COLUMNS} WHERE parent_session_id IS NOT NULL AND disposed = 0 \
             AND session_id > ?1 ORDER BY session_id LIMIT ?2"
        );
        self.session_page(sql, cursor, limit, None).await
    }

    /// The rows `sql` selects with `?1` the cursor (after the first id: `""`), `?2` the limit and,
    /// when given, `?3` the tenant.
    async fn session_page(
        &self,
        sql: String,
        cursor: Option<String>,
        limit: usize,
        tenant: Option<String>,
    ) -> Result<Vec<SessionRow>, StoreError> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(&sql)?;
            let cursor = cursor.unwrap_or_default();
            let rows = match &tenant {
                None => stmt.query_map(params![cursor, limit as i64], session_row)?,
                Some(tenant) => {
                    stmt.query_map(params![cursor, limit as i64, tenant], session_row)?
                }
            };
            rows.collect()
        })
        .await
    }

    /// How many sessions are stored (disposed ones included).
    pub async fn session_count(&self) -> Result<u64, StoreError> {
        self.read(|conn| {
            conn.query_row("SELECT COUNT(*) FROM sessions", [], |r| r.get::<_, i64>(0))
                .map(|n| n as u64)
        })
        .await
    }

    /// The child sessions of a session, oldest first.
    pub async fn children(&self, parent_id: &str) -> Result<Vec<SessionRow>, StoreError> {
        let parent_id = parent_id.to_owned();
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "{SESSION_COLUMNS} WHERE parent_session_id = ?1 ORDER BY created_at, session_id"
            ))?;
            let rows = stmt.query_map(params![parent_id], session_row)?;
            rows.collect()
        })
        .await
    }
}

const SESSION_COLUMNS: &str = "SELECT session_id, created_at, updated_at, spec, disposed, \
     parent_session_id, goal, needs_recovery, tenant, base_session_id, base_seq FROM sessions";

fn session_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRow> {
    let spec: String = r.get(3)?;
    Ok(SessionRow {
        session_id: r.get(0)?,
        created_at: r.get::<_, i64>(1)? as u64,
        updated_at: r.get::<_, i64>(2)? as u64,
        spec: serde_json::from_str(&spec).unwrap_or_default(),
        disposed: r.get(4)?,
        parent_session_id: r.get(5)?,
        goal: r.get(6)?,
        needs_recovery: r.get(7)?,
        tenant: r.get(8)?,
        shares: match (r.get::<_, Option<String>>(9)?, r.get::<_, Option<i64>>(10)?) {
            (Some(source), Some(at)) => Some((source, at as u64)),
            _ => None,
        },
    })
}
