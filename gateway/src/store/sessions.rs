//! Session rows: one per session, with the indexes its commits keep (whether it needs recovery,
//! its last goal change).

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::{Store, StoreError};

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
    /// The body of the session's last `goal/change` event.
    #[serde(skip)]
    pub goal: Option<String>,
    /// Its last commit did not leave it at rest: after a restart it needs `recover`.
    #[serde(skip)]
    pub needs_recovery: bool,
}

impl Store {
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

    /// Sessions ordered by id, after `cursor`, at most `limit`.
    pub async fn sessions(
        &self,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<Vec<SessionRow>, StoreError> {
        let sql = format!("{SESSION_COLUMNS} WHERE session_id > ?1 ORDER BY session_id LIMIT ?2");
        self.session_page(sql, cursor, limit).await
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
        self.session_page(sql, cursor, limit).await
    }

    /// The rows `sql` selects with `?1` the cursor (after the first id: `""`) and `?2` the limit.
    async fn session_page(
        &self,
        sql: String,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<Vec<SessionRow>, StoreError> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(&sql)?;
            let rows = stmt
                .query_map(params![cursor.as_deref().unwrap_or(""), limit as i64], session_row)?;
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
     parent_session_id, goal, needs_recovery FROM sessions";

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
    })
}
