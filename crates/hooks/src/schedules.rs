//! Schedules (`docs/http-api.md`, "Schedules"): at each due time of a cron expression in a time
//! zone, a message goes to a session, or to one made from a spec (once, or fresh each time),
//! without a client asking.
//!
//! A due time is fired once, whatever crashes and however many gateways share the store: the
//! gateway that fires it claims it in the store first, and sends the message with an idempotency
//! key made of the schedule and the due time, so a due time fired again after a crash (between
//! the message's commit and the due time moving on) is answered from the key and sends nothing.
//! With gateways sharing PostgreSQL, a schedule whose session runs on another gateway is left to
//! that one.

use std::str::FromStr;
use std::time::Duration;

use airlock_base::clock::now_ms;
use airlock_core::{ContentBlock, Delivery, Message};
use airlock_sessions::{IdempotencyKey, InputError, SessionSpec, Sessions};
use airlock_store::{Fired, Owner, Schedule, StoreError};
use tokio::sync::watch;

use crate::webhooks::Requester;

/// When a schedule is due: its cron expression read in its time zone.
pub struct When {
    cron: jiff_cron::Schedule,
    zone: jiff::tz::TimeZone,
}

impl When {
    /// Reads a cron expression (five fields, `minute hour day-of-month month day-of-week`, or six
    /// or seven with seconds first and a year last) in an IANA time zone (`UTC` when `None`).
    pub fn parse(cron: &str, timezone: &str) -> Result<When, ScheduleError> {
        let fields = cron.split_whitespace().count();
        let expression = match fields {
            5 => format!("0 {cron}"),
            6 | 7 => cron.to_owned(),
            _ => {
                return Err(ScheduleError::bad(
                    "cron",
                    format!(
                        "{cron:?} has {fields} fields: write minute hour day-of-month month \
                         day-of-week (`0 8 * * Mon-Fri`), or seconds first (`*/10 * * * * *`)"
                    ),
                ));
            }
        };
        let cron = jiff_cron::Schedule::from_str(&expression).map_err(|e| {
            ScheduleError::bad("cron", format!("{cron:?} is not a cron expression: {e}"))
        })?;
        let zone = jiff::tz::TimeZone::get(timezone).map_err(|e| {
            ScheduleError::bad(
                "timezone",
                format!(
                    "{timezone:?} is not a time zone ({e}); use an IANA name such as Europe/Paris"
                ),
            )
        })?;
        Ok(When { cron, zone })
    }

    /// The first due time after `ms` (ms since the epoch); `None` when there is none.
    pub fn after(&self, ms: u64) -> Option<u64> {
        let at = jiff::Timestamp::from_millisecond(ms as i64).ok()?.to_zoned(self.zone.clone());
        let next = self.cron.after(at).next()?;
        u64::try_from(next.timestamp().as_millisecond()).ok()
    }
}

/// Where a schedule's messages go.
#[derive(Clone, Debug)]
pub enum Target {
    /// A session that exists.
    Session(String),
    /// A session made from this spec at the first due time, or (`fresh`) at each.
    Spec {
        /// What the session is made with.
        spec: Box<SessionSpec>,
        /// A new session for each due time.
        fresh: bool,
    },
}

/// What is done while the session still runs a turn at a due time.
pub const OVERLAPS: [&str; 2] = ["skip", "queue"];
/// What is done with due times missed while no gateway ran.
pub const CATCH_UPS: [&str; 3] = ["once", "all", "skip"];

/// The most missed due times `catchUp: "all"` fires at once; the ones before are skipped.
const MOST_CAUGHT_UP: usize = 1000;

/// A schedule to make.
#[derive(Clone, Debug)]
pub struct NewSchedule {
    /// The cron expression.
    pub cron: String,
    /// The IANA time zone (`UTC` when absent).
    pub timezone: Option<String>,
    /// Where its messages go.
    pub target: Target,
    /// What each message says.
    pub content: Vec<ContentBlock>,
    /// How it is queued.
    pub delivery: Delivery,
    /// `skip` or `queue`.
    pub overlap: String,
    /// `once`, `all` or `skip`.
    pub catch_up: String,
}

/// Why a schedule could not be made, read or changed.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// The request is wrong; `field` names what.
    #[error("{message}")]
    Bad {
        /// The body field.
        field: &'static str,
        /// What is wrong and what to do.
        message: String,
    },
    /// No such schedule (or not the requester's).
    #[error("no schedule {0:?} here; GET /v1/schedules lists yours")]
    NotFound(String),
    /// The session it names is not the requester's, or does not exist.
    #[error("no session {0:?} here; a schedule sends to one of your sessions, or makes one")]
    NoSession(String),
    /// Storage.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ScheduleError {
    fn bad(field: &'static str, message: String) -> ScheduleError {
        ScheduleError::Bad { field, message }
    }
}

/// Schedules: made, listed, read, paused, resumed and deleted by their tenants, and fired by
/// [`fire`].
#[derive(Clone)]
pub struct Schedules {
    sessions: Sessions,
}

impl Schedules {
    /// The schedules of `sessions`' store, whose messages go through `sessions`.
    pub fn new(sessions: Sessions) -> Schedules {
        Schedules { sessions }
    }

    /// Makes a schedule, due first at the first due time from now.
    pub async fn create(
        &self,
        by: &Requester,
        new: NewSchedule,
    ) -> Result<Schedule, ScheduleError> {
        let id = format!("sch_{}", airlock_base::clock::fresh_id().replace('-', ""));
        let schedule = self.prepare(by, new, id).await?;
        self.insert(schedule.clone()).await?;
        Ok(schedule)
    }

    /// Keeps a schedule [`Schedules::prepare`] checked.
    pub async fn insert(&self, schedule: Schedule) -> Result<(), ScheduleError> {
        Ok(self.sessions.store().insert_schedule(schedule).await?)
    }

    /// Checks a schedule to make, and answers it with the id `id`, due first at the first due
    /// time from now, without keeping it.
    pub async fn prepare(
        &self,
        by: &Requester,
        new: NewSchedule,
        id: String,
    ) -> Result<Schedule, ScheduleError> {
        let timezone = new.timezone.unwrap_or_else(|| "UTC".to_owned());
        let when = When::parse(&new.cron, &timezone)?;
        let now = now_ms();
        let next_at = when.after(now).ok_or_else(|| {
            ScheduleError::bad("cron", format!("{:?} is never due after now", new.cron))
        })?;
        if !OVERLAPS.contains(&new.overlap.as_str()) {
            let message = format!("overlap is one of {}", OVERLAPS.join(", "));
            return Err(ScheduleError::bad("overlap", message));
        }
        if !CATCH_UPS.contains(&new.catch_up.as_str()) {
            let message = format!("catchUp is one of {}", CATCH_UPS.join(", "));
            return Err(ScheduleError::bad("catchUp", message));
        }
        let (session_id, spec, fresh) = match new.target {
            Target::Session(session) => {
                if !self.visible(by, &session).await? {
                    return Err(ScheduleError::NoSession(session));
                }
                (Some(session), None, false)
            }
            Target::Spec { spec, fresh } => {
                let spec = serde_json::to_string(&*spec).expect("a spec serializes");
                (None, Some(spec), fresh)
            }
        };
        Ok(Schedule {
            schedule_id: id,
            tenant: by.tenant.clone(),
            cron: new.cron,
            timezone,
            session_id,
            spec,
            fresh,
            content: serde_json::to_string(&new.content).expect("content serializes"),
            delivery: delivery_name(new.delivery).to_owned(),
            overlap: new.overlap,
            catch_up: new.catch_up,
            paused: false,
            next_at,
            created_at: now,
            ..Schedule::default()
        })
    }

    async fn visible(&self, by: &Requester, session: &str) -> Result<bool, StoreError> {
        let store = self.sessions.store();
        match (&by.tenant, by.every_tenant) {
            (Some(tenant), false) => store.session_of_tenant(session, tenant).await,
            _ => Ok(store.session(session).await?.is_some_and(|row| !row.disposed)),
        }
    }

    /// The requester's schedules (an admin's: every one), oldest first.
    pub async fn list(&self, by: &Requester) -> Result<Vec<Schedule>, ScheduleError> {
        let tenant = by.tenant.as_deref().filter(|_| !by.every_tenant);
        Ok(self.sessions.store().schedules(tenant).await?)
    }

    /// One of the requester's schedules.
    pub async fn get(&self, by: &Requester, schedule_id: &str) -> Result<Schedule, ScheduleError> {
        let found = self.sessions.store().schedule(schedule_id).await?;
        found
            .filter(|s| by.every_tenant || s.tenant == by.tenant)
            .ok_or_else(|| ScheduleError::NotFound(schedule_id.to_owned()))
    }

    /// Deletes one of the requester's schedules.
    pub async fn delete(&self, by: &Requester, schedule_id: &str) -> Result<(), ScheduleError> {
        self.get(by, schedule_id).await?;
        self.sessions.store().delete_schedule(schedule_id).await?;
        Ok(())
    }

    /// Pauses one of the requester's schedules: it fires nothing until resumed.
    pub async fn pause(
        &self,
        by: &Requester,
        schedule_id: &str,
    ) -> Result<Schedule, ScheduleError> {
        self.get(by, schedule_id).await?;
        let store = self.sessions.store();
        store.pause_schedule(schedule_id, true, None).await?;
        self.get(by, schedule_id).await
    }

    /// Resumes one of the requester's schedules from the next due time after now (what it
    /// passed over while paused is not fired).
    pub async fn resume(
        &self,
        by: &Requester,
        schedule_id: &str,
    ) -> Result<Schedule, ScheduleError> {
        let schedule = self.get(by, schedule_id).await?;
        let when = When::parse(&schedule.cron, &schedule.timezone)?;
        let next_at = when.after(now_ms()).unwrap_or(u64::MAX >> 1);
        self.sessions.store().pause_schedule(schedule_id, false, Some(next_at)).await?;
        self.get(by, schedule_id).await
    }
}

fn delivery_name(delivery: Delivery) -> &'static str {
    match delivery {
        Delivery::Followup => "followup",
        Delivery::Steer => "steer",
        Delivery::Inject => "inject",
    }
}

/// How often the store is asked what is due.
const POLL: Duration = Duration::from_millis(100);

/// How long a claim keeps other gateways off a due time while this one fires it.
const CLAIM: Duration = Duration::from_secs(60);

/// Fires the due times of the store's schedules until `shutdown` turns true; `node` is this
/// gateway's name among those sharing the store.
pub async fn fire(sessions: Sessions, node: String, mut shutdown: watch::Receiver<bool>) {
    let store = sessions.store().clone();
    loop {
        let now = now_ms();
        match store.due_schedules(now, 32).await {
            Ok(due) => {
                for schedule in due {
                    if let Err(error) = fire_one(&sessions, &node, schedule, now).await {
                        tracing::warn!(%error, "a schedule's due time could not be fired");
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "could not read the schedules that are due"),
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// Fires one schedule's due time(s), if this gateway may and wins the claim.
async fn fire_one(
    sessions: &Sessions,
    node: &str,
    schedule: Schedule,
    now: u64,
) -> Result<(), StoreError> {
    // A session another gateway runs is left to it.
    let standing = match (&schedule.session_id, schedule.fresh) {
        (Some(session), _) => Some(session),
        (None, false) => Some(&schedule.schedule_id), // the session it made
        (None, true) => None,
    };
    if let Some(session) = standing
        && let Ok(Owner::Elsewhere { .. }) = sessions.locate(session).await
    {
        return Ok(());
    }
    let store = sessions.store();
    let (id, due) = (schedule.schedule_id.clone(), schedule.next_at);
    let until = now + CLAIM.as_millis() as u64;
    if !store.claim_schedule(&id, due, now, until, node).await? {
        return Ok(()); // another gateway fires it
    }
    let when = match When::parse(&schedule.cron, &schedule.timezone) {
        Ok(when) => when,
        Err(error) => {
            let fired = Fired {
                schedule_id: id,
                due,
                next_at: u64::MAX >> 1,
                at: now,
                error: Some(error.to_string()),
                ..Fired::default()
            };
            return store.settle_schedule(fired).await;
        }
    };
    // The due times from the claimed one through now: more than one when no gateway ran.
    let mut times = vec![due];
    while let Some(next) = when.after(*times.last().expect("one at least")) {
        if next > now {
            break;
        }
        times.push(next);
        if times.len() > MOST_CAUGHT_UP * 4 {
            times.drain(..times.len() - MOST_CAUGHT_UP);
        }
    }
    let next_at = when.after(*times.last().expect("one at least")).unwrap_or(u64::MAX >> 1);
    let fire: Vec<u64> = match (times.len(), schedule.catch_up.as_str()) {
        (1, _) => times.clone(),
        (_, "all") => times.iter().rev().take(MOST_CAUGHT_UP).rev().copied().collect(),
        (_, "skip") => Vec::new(),
        _ => times.last().copied().into_iter().collect(), // once
    };
    let mut fired = Fired {
        schedule_id: id,
        due,
        next_at,
        skipped: (times.len() - fire.len()) as u64,
        at: now,
        ..Fired::default()
    };
    for time in fire {
        match send(sessions, &schedule, time).await {
            Ok(Some(session)) => {
                fired.fired += 1;
                fired.session_id = Some(session);
                fired.error = None;
            }
            Ok(None) => fired.skipped += 1, // overlap: the session still runs a turn
            Err(error) => {
                tracing::warn!(schedule_id = schedule.schedule_id, %error, "a schedule's message was not sent");
                fired.skipped += 1;
                fired.error = Some(error.to_string());
            }
        }
    }
    store.settle_schedule(fired).await
}

/// Sends the message of `schedule`'s due time `due`; answers the session it went to, or `None`
/// when `overlap: skip` passed it over.
async fn send(
    sessions: &Sessions,
    schedule: &Schedule,
    due: u64,
) -> Result<Option<String>, InputError> {
    let session_id = match (&schedule.session_id, &schedule.spec) {
        (Some(session), _) => session.clone(),
        (None, Some(spec)) => {
            let id = match schedule.fresh {
                true => format!("{}-{due}", schedule.schedule_id),
                false => schedule.schedule_id.clone(),
            };
            let spec: SessionSpec = serde_json::from_str(spec)
                .map_err(|e| InputError::Session(bad_spec(e.to_string())))?;
            sessions.create(id.clone(), spec, schedule.tenant.clone()).await?;
            id
        }
        (None, None) => return Err(InputError::Session(bad_spec("no session and no spec".into()))),
    };
    let handle = sessions.open(&session_id).await?;
    if schedule.overlap == "skip" && handle.status() == airlock_core::Status::Running {
        return Ok(None);
    }
    let content: Vec<ContentBlock> = serde_json::from_str(&schedule.content)
        .map_err(|e| InputError::Session(bad_spec(format!("its content: {e}"))))?;
    let delivery = match schedule.delivery.as_str() {
        "steer" => Delivery::Steer,
        "inject" => Delivery::Inject,
        _ => Delivery::Followup,
    };
    // One key per due time, in the schedule's tenant's scope: a due time sent again after a
    // crash is answered from it and sends nothing. Its scope `#schedule` is no session id, so no
    // client's key (`tenant scope key`) is ever the same.
    let tenant = schedule.tenant.as_deref().unwrap_or("");
    let key = IdempotencyKey {
        key: format!("{tenant} #schedule {}:{due}", schedule.schedule_id),
        request_hash: format!("{}:{due}", schedule.schedule_id),
        message_id: airlock_base::clock::fresh_id(),
    };
    let mut message = Message::user(key.message_id.clone(), content);
    message.source = airlock_core::Source::of("schedule");
    let details = [("scheduleId", schedule.schedule_id.clone().into()), ("due", due.into())];
    message.source.details.extend(details.map(|(k, v)| (k.to_owned(), v)));
    sessions.send(&session_id, message, delivery, Some(key)).await?;
    Ok(Some(session_id))
}

fn bad_spec(message: String) -> airlock_sessions::RegistryError {
    airlock_sessions::RegistryError::BadSpec { field: "session", message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_fields_are_minutes_and_six_take_seconds() {
        let at = 1_764_460_800_000; // 2025-11-30T00:00:00Z, a Sunday
        let hourly = When::parse("0 * * * *", "UTC").unwrap();
        assert_eq!(hourly.after(at), Some(at + 3_600_000));
        let every_second = When::parse("* * * * * *", "UTC").unwrap();
        assert_eq!(every_second.after(at), Some(at + 1_000));
        assert_eq!(every_second.after(at + 1), Some(at + 1_000));
        let paris = When::parse("0 8 * * *", "Europe/Paris").unwrap();
        assert_eq!(paris.after(at), Some(at + 7 * 3_600_000), "08:00 in Paris is 07:00 UTC");
    }

    #[test]
    fn a_bad_expression_or_zone_names_its_field() {
        for (cron, zone, field) in [
            ("* *", "UTC", "cron"),
            ("61 * * * *", "UTC", "cron"),
            ("* * * * *", "Mars/Base", "timezone"),
        ] {
            match When::parse(cron, zone) {
                Err(ScheduleError::Bad { field: got, .. }) => assert_eq!(got, field),
                _ => panic!("{cron} in {zone} is refused"),
            }
        }
    }
}
