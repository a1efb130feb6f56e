//! Schedules: at each due time of a cron expression, a message is sent to a session. A schedule
//! keeps its next due time; the gateway that fires a due time claims it first (so two gateways
//! sharing the store never fire one twice at once), and moves the due time on once it fired.

use rusqlite::{OptionalExtension, params};

use super::StoreError;
use super::sqlite::Sqlite;

/// A schedule as stored.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schedule {
    /// Its id.
    pub schedule_id: String,
    /// The tenant that made it (`None`: no key); the sessions it makes are that tenant's.
    pub tenant: Option<String>,
    /// The cron expression.
    pub cron: String,
    /// The IANA time zone it is read in.
    pub timezone: String,
    /// The session each message goes to.
    pub session_id: Option<String>,
    /// Else: the spec (JSON) of the session it makes for its messages.
    pub spec: Option<String>,
    /// With a spec: a new session for each due time (else one, made at the first).
    pub fresh: bool,
    /// The message's content blocks (JSON).
    pub content: String,
    /// `followup`, `steer` or `inject`.
    pub delivery: String,
    /// `skip` (no message while the session runs a turn) or `queue`.
    pub overlap: String,
    /// What is done with due times missed while no gateway ran: `all`, `once` or `skip`.
    pub catch_up: String,
    /// It fires nothing.
    pub paused: bool,
    /// Its next due time (ms since the epoch).
    pub next_at: u64,
    /// When it was made.
    pub created_at: u64,
    /// Messages it sent.
    pub fired: u64,
    /// Due times it passed over (a session still running with `overlap: skip`, missed times
    /// not caught up, a message the session did not take).
    pub skipped: u64,
    /// When it last sent one.
    pub last_fired_at: Option<u64>,
    /// The session it last sent one to.
    pub last_session_id: Option<String>,
    /// Why its last due time sent nothing, if it failed.
    pub last_error: Option<String>,
}

/// How a claimed due time went.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fired {
    /// The schedule.
    pub schedule_id: String,
    /// The due time it claimed.
    pub due: u64,
    /// Its next due time.
    pub next_at: u64,
    /// Messages sent.
    pub fired: u64,
    /// Due times passed over.
    pub skipped: u64,
    /// When.
    pub at: u64,
    /// The session sent to.
    pub session_id: Option<String>,
    /// Why a due time sent nothing.
    pub error: Option<String>,
}

pub(crate) const SCHEDULE_COLUMNS: &str = "SELECT schedule_id, tenant, cron, timezone, \
    session_id, spec, fresh, content, delivery, overlap, catch_up, paused, next_at, created_at, \
    fired, skipped, last_fired_at, last_session_id, last_error FROM schedules";

fn schedule_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Schedule> {
    Ok(Schedule {
        schedule_id: r.get(0)?,
        tenant: r.get(1)?,
        cron: r.get(2)?,
        timezone: r.get(3)?,
        session_id: r.get(4)?,
        spec: r.get(5)?,
        fresh: r.get(6)?,
        content: r.get(7)?,
        delivery: r.get(8)?,
        overlap: r.get(9)?,
        catch_up: r.get(10)?,
        paused: r.get(11)?,
        next_at: r.get::<_, i64>(12)? as u64,
        created_at: r.get::<_, i64>(13)? as u64,
        fired: r.get::<_, i64>(14)? as u64,
        skipped: r.get::<_, i64>(15)? as u64,
        last_fired_at: r.get::<_, Option<i64>>(16)?.map(|t| t as u64),
        last_session_id: r.get(17)?,
        last_error: r.get(18)?,
    })
}

impl Sqlite {
    /// See [`crate::Store::insert_schedule`].
    pub async fn insert_schedule(&self, s: Schedule) -> Result<(), StoreError> {
        self.direct(move |conn| {
            conn.execute(
                "INSERT INTO schedules (schedule_id, tenant, cron, timezone, session_id, spec, \
                 fresh, content, delivery, overlap, catch_up, paused, next_at, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                params![
                    s.schedule_id,
                    s.tenant,
                    s.cron,
                    s.timezone,
                    s.session_id,
                    s.spec,
                    s.fresh,
                    s.content,
                    s.delivery,
                    s.overlap,
                    s.catch_up,
                    s.paused,
                    s.next_at as i64,
                    s.created_at as i64
                ],
            )
            .map(drop)
        })
        .await
    }

    /// See [`crate::Store::schedules`].
    pub async fn schedules(&self, tenant: Option<&str>) -> Result<Vec<Schedule>, StoreError> {
        let tenant = tenant.map(str::to_owned);
        self.read(move |conn| {
            let sql = format!(
                "{SCHEDULE_COLUMNS} WHERE ?1 IS NULL OR tenant = ?1 ORDER BY created_at, schedule_id"
            );
            conn.prepare(&sql)?.query_map([tenant], schedule_row)?.collect()
        })
        .await
    }

    /// See [`crate::Store::schedule`].
    pub async fn schedule(&self, schedule_id: &str) -> Result<Option<Schedule>, StoreError> {
        let id = schedule_id.to_owned();
        self.read(move |conn| {
            let sql = format!("{SCHEDULE_COLUMNS} WHERE schedule_id = ?1");
            conn.query_row(&sql, [id], schedule_row).optional()
        })
        .await
    }

    /// See [`crate::Store::delete_schedule`].
    pub async fn delete_schedule(&self, schedule_id: &str) -> Result<bool, StoreError> {
        let id = schedule_id.to_owned();
        self.direct(move |conn| {
            Ok(conn.execute("DELETE FROM schedules WHERE schedule_id = ?1", [id])? > 0)
        })
        .await
    }

    /// See [`crate::Store::pause_schedule`].
    pub async fn pause_schedule(
        &self,
        schedule_id: &str,
        paused: bool,
        next_at: Option<u64>,
    ) -> Result<bool, StoreError> {
        let id = schedule_id.to_owned();
        let next_at = next_at.map(|t| t as i64);
        self.direct(move |conn| {
            let sql = "UPDATE schedules SET paused = ?2, next_at = COALESCE(?3, next_at) \
                       WHERE schedule_id = ?1";
            Ok(conn.execute(sql, params![id, paused, next_at])? > 0)
        })
        .await
    }

    /// See [`crate::Store::due_schedules`].
    pub async fn due_schedules(&self, now: u64, limit: usize) -> Result<Vec<Schedule>, StoreError> {
        self.read(move |conn| {
            let sql = format!(
                "{SCHEDULE_COLUMNS} WHERE paused = 0 AND next_at <= ?1 AND claimed_until <= ?1 \
                 ORDER BY next_at LIMIT ?2"
            );
            conn.prepare_cached(&sql)?
                .query_map(params![now as i64, limit as i64], schedule_row)?
                .collect()
        })
        .await
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
        let (id, node) = (schedule_id.to_owned(), node.to_owned());
        self.direct(move |conn| {
            let sql = "UPDATE schedules SET claimed_until = ?4, claimed_by = ?5 \
                       WHERE schedule_id = ?1 AND next_at = ?2 AND claimed_until <= ?3 \
                       AND paused = 0";
            let claimed =
                conn.execute(sql, params![id, due as i64, now as i64, until as i64, node])?;
            Ok(claimed > 0)
        })
        .await
    }

    /// See [`crate::Store::settle_schedule`].
    pub async fn settle_schedule(&self, fired: Fired) -> Result<(), StoreError> {
        self.direct(move |conn| {
            conn.execute(
                "UPDATE schedules SET next_at = ?3, claimed_until = 0, claimed_by = NULL, \
                 fired = fired + ?4, skipped = skipped + ?5, \
                 last_fired_at = CASE WHEN ?4 > 0 THEN ?6 ELSE last_fired_at END, \
                 last_session_id = COALESCE(?7, last_session_id), last_error = ?8 \
                 WHERE schedule_id = ?1 AND next_at = ?2",
                params![
                    fired.schedule_id,
                    fired.due as i64,
                    fired.next_at as i64,
                    fired.fired as i64,
                    fired.skipped as i64,
                    fired.at as i64,
                    fired.session_id,
                    fired.error
                ],
            )
            .map(drop)
        })
        .await
    }
}
