//! Schedules in PostgreSQL: the same rows and rules as SQLite's (`crate::schedules`); a claim is
//! one `UPDATE` that only one gateway's can win.

use tokio_postgres::types::ToSql;

use super::Postgres;
use crate::StoreError;
use crate::schedules::{Fired, SCHEDULE_COLUMNS, Schedule};

fn schedule_row(r: &tokio_postgres::Row) -> Schedule {
    Schedule {
        schedule_id: r.get(0),
        tenant: r.get(1),
        cron: r.get(2),
        timezone: r.get(3),
        session_id: r.get(4),
        spec: r.get(5),
        fresh: r.get(6),
        content: r.get(7),
        delivery: r.get(8),
        overlap: r.get(9),
        catch_up: r.get(10),
        paused: r.get(11),
        next_at: r.get::<_, i64>(12) as u64,
        created_at: r.get::<_, i64>(13) as u64,
        fired: r.get::<_, i64>(14) as u64,
        skipped: r.get::<_, i64>(15) as u64,
        last_fired_at: r.get::<_, Option<i64>>(16).map(|t| t as u64),
        last_session_id: r.get(17),
        last_error: r.get(18),
    }
}

impl Postgres {
    /// See [`crate::Store::insert_schedule`].
    pub async fn insert_schedule(&self, s: Schedule) -> Result<(), StoreError> {
        let (next_at, created_at) = (s.next_at as i64, s.created_at as i64);
        let params: [&(dyn ToSql + Sync); 14] = [
            &s.schedule_id,
            &s.tenant,
            &s.cron,
            &s.timezone,
            &s.session_id,
            &s.spec,
            &s.fresh,
            &s.content,
            &s.delivery,
            &s.overlap,
            &s.catch_up,
            &s.paused,
            &next_at,
            &created_at,
        ];
        self.client()
            .await?
            .execute(
                "INSERT INTO schedules (schedule_id, tenant, cron, timezone, session_id, spec, \
                 fresh, content, delivery, overlap, catch_up, paused, next_at, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
                &params,
            )
            .await?;
        Ok(())
    }

    /// See [`crate::Store::schedules`].
    pub async fn schedules(&self, tenant: Option<&str>) -> Result<Vec<Schedule>, StoreError> {
        let sql = format!(
            "{SCHEDULE_COLUMNS} WHERE $1::text IS NULL OR tenant = $1 \
             ORDER BY created_at, schedule_id"
        );
        Ok(self.client().await?.query(&sql, &[&tenant]).await?.iter().map(schedule_row).collect())
    }

    /// See [`crate::Store::schedule`].
    pub async fn schedule(&self, schedule_id: &str) -> Result<Option<Schedule>, StoreError> {
        let sql = format!("{SCHEDULE_COLUMNS} WHERE schedule_id = $1");
        Ok(self.client().await?.query_opt(&sql, &[&schedule_id]).await?.as_ref().map(schedule_row))
    }

    /// See [`crate::Store::delete_schedule`].
    pub async fn delete_schedule(&self, schedule_id: &str) -> Result<bool, StoreError> {
        let sql = "DELETE FROM schedules WHERE schedule_id = $1";
        Ok(self.client().await?.execute(sql, &[&schedule_id]).await? > 0)
    }

    /// See [`crate::Store::pause_schedule`].
    pub async fn pause_schedule(
        &self,
        schedule_id: &str,
        paused: bool,
        next_at: Option<u64>,
    ) -> Result<bool, StoreError> {
        let sql = "UPDATE schedules SET paused = $2, next_at = COALESCE($3, next_at) \
                   WHERE schedule_id = $1";
        let next_at = next_at.map(|t| t as i64);
        Ok(self.client().await?.execute(sql, &[&schedule_id, &paused, &next_at]).await? > 0)
    }

    /// See [`crate::Store::due_schedules`].
    pub async fn due_schedules(&self, now: u64, limit: usize) -> Result<Vec<Schedule>, StoreError> {
        let client = self.client().await?;
        let sql = client
            .prepare_cached(&format!(
                "{SCHEDULE_COLUMNS} WHERE NOT paused AND next_at <= $1 AND claimed_until <= $1 \
                 ORDER BY next_at LIMIT $2"
            ))
            .await?;
        let (now, limit) = (now as i64, limit as i64);
        Ok(client.query(&sql, &[&now, &limit]).await?.iter().map(schedule_row).collect())
    }

    /// See [`crate::Store::claim_schedule`].
    pub async fn claim_schedule(
        &self,
        schedule_id: &str,
        due: u64,
        now: u64,
        until: u64,
        node: &str,
    ) -> Result<bool, StoreError> {
        let sql = "UPDATE schedules SET claimed_until = $4, claimed_by = $5 \
                   WHERE schedule_id = $1 AND next_at = $2 AND claimed_until <= $3 AND NOT paused";
        let (due, now, until) = (due as i64, now as i64, until as i64);
        let params: [&(dyn ToSql + Sync); 5] = [&schedule_id, &due, &now, &until, &node];
        Ok(self.client().await?.execute(sql, &params).await? > 0)
    }

    /// See [`crate::Store::settle_schedule`].
    pub async fn settle_schedule(&self, f: Fired) -> Result<(), StoreError> {
        let (due, next_at, at) = (f.due as i64, f.next_at as i64, f.at as i64);
        let (fired, skipped) = (f.fired as i64, f.skipped as i64);
        let params: [&(dyn ToSql + Sync); 8] =
            [&f.schedule_id, &due, &next_at, &fired, &skipped, &at, &f.session_id, &f.error];
        self.client()
            .await?
            .execute(
                "UPDATE schedules SET next_at = $3, claimed_until = 0, claimed_by = NULL, \
                 fired = fired + $4, skipped = skipped + $5, \
                 last_fired_at = CASE WHEN $4 > 0 THEN $6 ELSE last_fired_at END, \
                 last_session_id = COALESCE($7, last_session_id), last_error = $8 \
                 WHERE schedule_id = $1 AND next_at = $2",
                &params,
            )
            .await?;
        Ok(())
    }
}
