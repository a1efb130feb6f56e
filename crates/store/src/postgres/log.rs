//! A session's log in PostgreSQL: appends under the lease (fencing) and reads across a fork's
//! segments.

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;

use super::{Postgres, lease, rows};
use crate::receipts::{Mark, Receipt};
use crate::{CHAIN_SQL, Index, MAX_FORK_CHAIN, Segment, StoreError, head};

impl Postgres {
    /// See [`super::Store::append`].
    pub async fn append(
        &self,
        session_id: &str,
        events: Vec<String>,
        index: Index,
    ) -> Result<(), StoreError> {
        if self.inner.faults.take_commit_failure() {
            return Err(StoreError::Commit("an injected fault refused the commit".into()));
        }
        let epoch = self.held_epoch(session_id).ok_or_else(|| fenced(session_id))?;
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let lease = tx
            .prepare_cached(
                "SELECT epoch FROM leases WHERE session_id = $1 AND node = $2 FOR UPDATE",
            )
            .await?;
        let holds = tx
            .query_opt(&lease, &[&session_id, &self.inner.cluster.node])
            .await
            .map_err(|e| lease::moving_or(session_id, e))?;
        if holds.map(|row| row.get::<_, i64>(0)) != Some(epoch) {
            // The epoch stays in the map, so the next renewal reports the session lost whatever
            // else happens; the registry hears it now.
            drop(self.inner.fenced.send(session_id.to_owned()));
            airlock_base::metrics::global().fenced_appends.inc();
            return Err(fenced(session_id));
        }
        if let Some(stall) = self.inner.faults.take_stall() {
            stall.reached.notify_one();
            stall.resume.notified().await;
        }
        write_events(&tx, session_id, &events, &index).await?;
        tx.commit().await.map_err(|e| StoreError::Commit(StoreError::from(e).to_string()))
    }

    /// See [`super::Store::events`].
    pub async fn events(
        &self,
        session_id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let client = self.client().await?;
        let sql = client
            .prepare_cached(
                "SELECT body FROM events WHERE session_id = $1 AND seq > $2 AND seq <= $3 \
                 ORDER BY seq LIMIT $4",
            )
            .await?;
        let mut events = Vec::new();
        for segment in segments(&client, session_id).await? {
            let left = limit - events.len();
            let from = segment.after(after);
            if left == 0 || from.is_some_and(|from| from >= segment.through) {
                continue;
            }
            let from = from.map_or(-1, |f| f as i64);
            let left = left.min(i64::MAX as usize) as i64;
            let params: [&(dyn ToSql + Sync); 4] =
                [&segment.session_id, &from, &segment.through_sql(), &left];
            let rows = client.query(&sql, &params).await?;
            events.extend(rows.into_iter().map(|row| row.get::<_, String>(0)));
        }
        Ok(events)
    }

    /// See [`super::Store::events_of_type`].
    pub async fn events_of_type(
        &self,
        session_id: &str,
        kind: &'static str,
    ) -> Result<Vec<String>, StoreError> {
        let client = self.client().await?;
        let sql = "SELECT body FROM events WHERE session_id = $1 AND type = $2 AND seq > $3 \
                   AND seq <= $4 ORDER BY seq";
        let mut events = Vec::new();
        for segment in segments(&client, session_id).await? {
            let from = segment.after(None).map_or(-1, |f| f as i64);
            let params: [&(dyn ToSql + Sync); 4] =
                [&segment.session_id, &kind, &from, &segment.through_sql()];
            let rows = client.query(sql, &params).await?;
            events.extend(rows.into_iter().map(|row| row.get::<_, String>(0)));
        }
        Ok(events)
    }

    /// See [`super::Store::last_seq`].
    pub async fn last_seq(&self, session_id: &str) -> Result<Option<u64>, StoreError> {
        last_seq(&self.client().await?, session_id).await
    }
}

/// Appends `events` to `session_id`'s log in `tx`, after checking they continue it, with what
/// `index` keeps beside them.
pub(super) async fn write_events(
    tx: &deadpool_postgres::Transaction<'_>,
    session_id: &str,
    events: &[String],
    index: &Index,
) -> Result<(), StoreError> {
    let heads = events.iter().map(|body| head(body)).collect::<Result<Vec<_>, _>>()?;
    let mut expected = last_seq(tx, session_id).await?.map_or(0, |last| last + 1);
    for head in &heads {
        if head.seq != expected {
            let (session, got) = (session_id.to_owned(), head.seq);
            return Err(StoreError::SeqMismatch { session, expected, got });
        }
        expected += 1;
    }
    let insert = tx
        .prepare_cached(
            "INSERT INTO events (session_id, seq, type, time, body) \
             SELECT $1, * FROM UNNEST($2::bigint[], $3::text[], $4::bigint[], $5::text[])",
        )
        .await?;
    let seqs: Vec<i64> = heads.iter().map(|h| h.seq as i64).collect();
    let kinds: Vec<&str> = heads.iter().map(|h| h.kind.as_str()).collect();
    let times: Vec<i64> = heads.iter().map(|h| h.time as i64).collect();
    tx.execute(&insert, &[&session_id, &seqs, &kinds, &times, &events]).await?;
    for record in &index.idempotency {
        rows::put_idempotency(tx, record).await?;
    }
    for mark in &index.marks {
        mark_receipt(tx, session_id, mark).await?;
    }
    if !index.spent.is_empty() {
        let first = heads.first().map_or(0, |h| h.seq);
        let time_of = |seq: u64| {
            let i = seq.checked_sub(first)? as usize;
            heads.get(i).map(|h| h.time as i64)
        };
        let insert = tx
            .prepare_cached(
                "INSERT INTO usage (session_id, seq, time, provider, model, input, output, \
                 cache_read, cache_write, reasoning) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .await?;
        for s in &index.spent {
            let [input, output, cache_read, cache_write, reasoning] = s.tokens.columns();
            let (seq, time) = (s.seq as i64, time_of(s.seq).unwrap_or(0));
            let params: [&(dyn ToSql + Sync); 10] = [
                &session_id,
                &seq,
                &time,
                &s.provider,
                &s.model,
                &input,
                &output,
                &cache_read,
                &cache_write,
                &reasoning,
            ];
            tx.execute(&insert, &params).await?;
        }
    }
    super::hooks::write_hooks(tx, session_id, &index.hooks).await?;
    if let Some(last) = heads.last() {
        let goal = heads.iter().zip(events).rev().find(|(h, _)| h.kind == "goal/change");
        let goal = goal.map(|(_, body)| body.as_str());
        let update = tx
            .prepare_cached(
                "UPDATE sessions SET updated_at = $2, needs_recovery = $3, \
                 goal = COALESCE($4, goal), bytes = bytes + $5 WHERE session_id = $1",
            )
            .await?;
        let at = last.time as i64;
        let bytes: i64 = events.iter().map(|body| body.len() as i64).sum();
        tx.execute(&update, &[&session_id, &at, &!index.at_rest, &goal, &bytes]).await?;
    }
    Ok(())
}

/// The stretches `session_id`'s log is read from ([`Segment::chain`]).
async fn segments(
    client: &impl GenericClient,
    session_id: &str,
) -> Result<Vec<Segment>, StoreError> {
    let sql = client.prepare_cached(CHAIN_SQL).await?;
    let most = MAX_FORK_CHAIN as i32;
    let rows = client.query(&sql, &[&session_id, &most]).await?;
    let links = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get::<_, Option<i64>>(2).map(|s| s as u64)))
        .collect();
    Ok(Segment::chain(session_id, links))
}

/// The last seq of `session_id`'s log (`None`: empty), its fork prefix included.
async fn last_seq(
    client: &impl GenericClient,
    session_id: &str,
) -> Result<Option<u64>, StoreError> {
    let sql = client
        .prepare_cached(
            "SELECT COALESCE((SELECT MAX(seq) FROM events WHERE session_id = $1), \
             (SELECT base_seq FROM sessions WHERE session_id = $1))",
        )
        .await?;
    let row = client.query_one(&sql, &[&session_id]).await?;
    Ok(row.get::<_, Option<i64>>(0).map(|s| s as u64))
}

fn fenced(session_id: &str) -> StoreError {
    StoreError::Fenced(session_id.to_owned())
}

/// Applies one splice's change to a message's stored receipt.
async fn mark_receipt(
    tx: &deadpool_postgres::Transaction<'_>,
    session_id: &str,
    mark: &Mark,
) -> Result<(), StoreError> {
    let before = rows::receipt(tx, session_id, &mark.message_id).await?;
    match Receipt::apply(before, mark) {
        Some(receipt) => rows::put_receipt(tx, session_id, &receipt).await,
        None => Ok(()),
    }
}
