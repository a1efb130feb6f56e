//! What model responses cost: one row per event that carries a `usage`, kept by the commit that
//! logs the event, so a session's usage and a tenant's are sums, never a scan of logs.

use rusqlite::params;
use rusqlite::types::Value;
use serde::Serialize;

use super::StoreError;
use super::sqlite::Sqlite;

/// Token counts: of one response, or summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tokens {
    /// Every prompt token, those read from or written to a cache included.
    pub input_tokens: u64,
    /// Completion tokens, reasoning included.
    pub output_tokens: u64,
    /// Prompt tokens served from a cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to a cache.
    pub cache_write_tokens: u64,
    /// Completion tokens spent reasoning.
    pub reasoning_tokens: u64,
}

impl From<&airlock_core::Usage> for Tokens {
    fn from(usage: &airlock_core::Usage) -> Tokens {
        Tokens {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cache_read_tokens: usage.cache_read_tokens.unwrap_or(0),
            cache_write_tokens: usage.cache_write_tokens.unwrap_or(0),
            reasoning_tokens: usage.reasoning_tokens.unwrap_or(0),
        }
    }
}

impl Tokens {
    /// The five counts as the `usage` table's columns take them, in its order: input, output,
    /// cache read, cache write, reasoning.
    pub(crate) fn columns(&self) -> [i64; 5] {
        [
            self.input_tokens,
            self.output_tokens,
            self.cache_read_tokens,
            self.cache_write_tokens,
            self.reasoning_tokens,
        ]
        .map(|n| n.min(i64::MAX as u64) as i64)
    }
}

impl std::ops::AddAssign for Tokens {
    fn add_assign(&mut self, other: Tokens) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
    }
}

/// What the response an event of a commit logs cost, and which model gave it.
#[derive(Clone, Debug, PartialEq)]
pub struct Spent {
    /// The event's seq (one of the commit's).
    pub seq: u64,
    /// The provider that answered (`openai`, `anthropic`, ...).
    pub provider: String,
    /// The model that answered, as the provider names it.
    pub model: String,
    /// What it counted.
    pub tokens: Tokens,
}

/// The usage of one model, summed (over one session, or over a tenant's sessions).
#[derive(Clone, Debug, PartialEq)]
pub struct ModelUsage {
    /// The tenant, in a gateway-wide sum (`None`: sessions made without a key).
    pub tenant: Option<String>,
    /// The provider.
    pub provider: String,
    /// The model.
    pub model: String,
    /// How many responses.
    pub responses: u64,
    /// Their tokens.
    pub tokens: Tokens,
}

/// The columns a sum reads, after `tenant`: provider, model, responses, then the five counts.
pub(crate) const SUMS: &str = "provider, model, COUNT(*), CAST(SUM(input) AS BIGINT), \
    CAST(SUM(output) AS BIGINT), CAST(SUM(cache_read) AS BIGINT), \
    CAST(SUM(cache_write) AS BIGINT), CAST(SUM(reasoning) AS BIGINT)";

impl ModelUsage {
    /// The sum a row of `tenant, SUMS` reads: its tenant, provider and model, then `counts`
    /// (responses and the five token counts).
    pub(crate) fn of(
        tenant: Option<String>,
        provider: String,
        model: String,
        counts: [i64; 6],
    ) -> ModelUsage {
        let [responses, input, output, cache_read, cache_write, reasoning] =
            counts.map(|n| n.max(0) as u64);
        let tokens = Tokens {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: cache_read,
            cache_write_tokens: cache_write,
            reasoning_tokens: reasoning,
        };
        ModelUsage { tenant, provider, model, responses, tokens }
    }
}

/// The SQL of a sum: one session's (`?1`), or sessions' since a time (`?1`, ms), of one tenant
/// (`?2`) or of all, by tenant.
pub(crate) fn sum_sql(scope: Scope, placeholder: fn(usize) -> String) -> String {
    let (p1, p2) = (placeholder(1), placeholder(2));
    match scope {
        Scope::Session => format!(
            "SELECT CAST(NULL AS TEXT), {SUMS} FROM usage WHERE session_id = {p1} \
             GROUP BY provider, model ORDER BY provider, model"
        ),
        Scope::Tenant => format!(
            "SELECT s.tenant, {SUMS} FROM usage u JOIN sessions s USING (session_id) \
             WHERE u.time >= {p1} AND s.tenant = {p2} \
             GROUP BY s.tenant, provider, model ORDER BY provider, model"
        ),
        Scope::All => format!(
            "SELECT s.tenant, {SUMS} FROM usage u JOIN sessions s USING (session_id) \
             WHERE u.time >= {p1} \
             GROUP BY s.tenant, provider, model ORDER BY s.tenant, provider, model"
        ),
    }
}

/// Whose usage a sum covers.
#[derive(Clone, Copy)]
pub(crate) enum Scope {
    Session,
    Tenant,
    All,
}

impl Sqlite {
    /// See [`crate::Store::session_usage`].
    pub async fn session_usage(&self, session_id: &str) -> Result<Vec<ModelUsage>, StoreError> {
        let sql = sum_sql(Scope::Session, sqlite_placeholder);
        self.sums(sql, vec![session_id.to_owned().into()]).await
    }

    /// See [`crate::Store::tenant_usage`].
    pub async fn tenant_usage(
        &self,
        tenant: Option<&str>,
        since: u64,
    ) -> Result<Vec<ModelUsage>, StoreError> {
        let since = Value::Integer(since.min(i64::MAX as u64) as i64);
        match tenant {
            Some(tenant) => {
                let sql = sum_sql(Scope::Tenant, sqlite_placeholder);
                self.sums(sql, vec![since, tenant.to_owned().into()]).await
            }
            None => self.sums(sum_sql(Scope::All, sqlite_placeholder), vec![since]).await,
        }
    }

    async fn sums(&self, sql: String, values: Vec<Value>) -> Result<Vec<ModelUsage>, StoreError> {
        self.read(move |conn| {
            let mut statement = conn.prepare_cached(&sql)?;
            let rows = statement.query_map(rusqlite::params_from_iter(values), |row| {
                let mut counts = [0; 6];
                for (i, count) in counts.iter_mut().enumerate() {
                    *count = row.get(3 + i)?;
                }
                Ok(ModelUsage::of(row.get(0)?, row.get(1)?, row.get(2)?, counts))
            })?;
            rows.collect()
        })
        .await
    }
}

fn sqlite_placeholder(n: usize) -> String {
    format!("?{n}")
}

/// Keeps what the events of a commit cost (`spent`), each row with its event's time.
pub(crate) fn write_sqlite(
    tx: &rusqlite::Transaction<'_>,
    session_id: &str,
    spent: &[Spent],
    time_of: impl Fn(u64) -> Option<u64>,
) -> Result<(), StoreError> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO usage (session_id, seq, time, provider, model, input, output, \
         cache_read, cache_write, reasoning) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    for s in spent {
        let time = time_of(s.seq).unwrap_or(0) as i64;
        let [input, output, cache_read, cache_write, reasoning] = s.tokens.columns();
        let (seq, provider, model) = (s.seq as i64, &s.provider, &s.model);
        insert.execute(params![
            session_id,
            seq,
            time,
            provider,
            model,
            input,
            output,
            cache_read,
            cache_write,
            reasoning
        ])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::*;

    /// A log written before the usage table: its responses are counted once the table comes,
    /// each credited to the model its session's last `request/context` named.
    #[test]
    fn the_migration_counts_the_responses_logged_before_it() {
        let mut conn = Connection::open_in_memory().unwrap();
        let migrations = crate::sqlite::migrations();
        migrations.to_version(&mut conn, 4).unwrap();
        conn.execute("INSERT INTO sessions VALUES ('s', 0, 0, '{}', 0, NULL, 0, NULL, 1, NULL, NULL, NULL, 0)", [])
            .unwrap();
        let events = [
            ("request/context", r#"{"provider":"openai","model":"a"}"#),
            ("assistant/message", r#"{"usage":{"inputTokens":10,"outputTokens":2}}"#),
            ("request/context", r#"{"provider":"anthropic","model":"b"}"#),
            (
                "context/compaction",
                r#"{"usage":{"inputTokens":5,"outputTokens":1,"cacheReadTokens":4}}"#,
            ),
            ("assistant/message", r#"{"message":{}}"#),
        ];
        for (seq, (kind, data)) in events.iter().enumerate() {
            let body = format!(r#"{{"seq":{seq},"type":"{kind}","time":{seq},"data":{data}}}"#);
            let params = params!["s", seq as i64, kind, seq as i64, body];
            conn.execute("INSERT INTO events VALUES (?1, ?2, ?3, ?4, ?5)", params).unwrap();
        }
        migrations.to_latest(&mut conn).unwrap();
        let rows: Vec<(i64, String, String, i64, i64)> = conn
            .prepare("SELECT seq, provider, model, input, cache_read FROM usage ORDER BY seq")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let expected = [(1, "openai", "a", 10, 0), (3, "anthropic", "b", 5, 4)]
            .map(|(seq, p, m, i, c)| (seq, p.to_owned(), m.to_owned(), i, c));
        assert_eq!(rows, expected);
    }
}
