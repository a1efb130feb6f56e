//! `/v1/schedules`: a tenant's schedules (see [`airlock_hooks::schedules`]): at each due time of
//! a cron expression a message goes to a session, or to one made from a spec, once however the
//! gateways crash or share the store.

use airlock_core::Delivery;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::fields::Content;
use super::responses::{BodyRefused, StorageFailed, errors};
use super::sessions::CreateBody;
use super::{Answer, ApiError, AppState, Caller, JsonBody};
use crate::schema::{content_blocks_schema, delivery_schema};
use airlock_hooks::schedules::{NewSchedule, ScheduleError, Target};
use airlock_store::Schedule;

/// The schedule routes (paths in the annotations).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create, list))
        .routes(routes!(read, delete))
        .routes(routes!(pause))
        .routes(routes!(resume))
}

/// The `{schedule_id}` of a schedule's routes.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[expect(dead_code, reason = "it only documents the parameter; handlers take `Path<String>`")]
struct ScheduleId {
    /// The schedule's id.
    schedule_id: String,
}

/// A schedule to make: `sessionId`, or `session` to make one.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateScheduleBody {
    /// When it is due: five fields, `minute hour day-of-month month day-of-week`
    /// (`0 8 * * Mon-Fri`), or six or seven with seconds first and a year last (`*/10 * * * * *`).
    /// Day-of-week numbers run 1 (Sunday) to 7 (Saturday); names are clearer.
    #[schema(max_length = 200)]
    cron: String,
    /// The IANA time zone the expression is read in; `UTC` when absent.
    timezone: Option<String>,
    /// The session each message goes to (one of the caller's).
    session_id: Option<String>,
    /// Else: the session to make at the first due time (its `sessionId` is the schedule's id), or
    /// with `fresh`, one for each due time (`<scheduleId>-<due time>`).
    session: Option<CreateBody>,
    /// With `session`: a new session for each due time.
    #[serde(default)]
    fresh: bool,
    /// What each message says, as a message's `content`.
    content: Content,
    /// How each message is queued; `followup` when absent.
    #[serde(default)]
    #[schema(schema_with = delivery_schema)]
    delivery: Delivery,
    /// While the session still runs a turn at a due time: `skip` sends nothing (counted in
    /// `skipped`), `queue` sends the message anyway. `skip` when absent.
    #[schema(pattern = "^(skip|queue)$")]
    overlap: Option<String>,
    /// Due times missed while no gateway ran: `once` fires the latest of them, `all` fires each
    /// (at most 1,000), `skip` fires none; `once` when absent.
    #[schema(pattern = "^(once|all|skip)$")]
    catch_up: Option<String>,
}

/// A schedule.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ScheduleView {
    /// Its id.
    id: String,
    cron: String,
    timezone: String,
    /// The session its messages go to; absent when it makes one (`fresh`: one per due time).
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    /// It makes a new session for each due time.
    fresh: bool,
    /// The message's content blocks.
    #[schema(schema_with = content_blocks_schema)]
    content: serde_json::Value,
    #[schema(pattern = "^(followup|steer|inject)$")]
    delivery: String,
    #[schema(pattern = "^(skip|queue)$")]
    overlap: String,
    #[schema(pattern = "^(once|all|skip)$")]
    catch_up: String,
    /// It fires nothing until resumed.
    paused: bool,
    /// The next due time, in ms since the epoch.
    next_at: u64,
    /// When it was made.
    created_at: u64,
    /// Messages it sent.
    fired: u64,
    /// Due times it passed over: a session still running (`overlap: skip`), missed times not
    /// caught up, a message the session refused (`lastError` says why).
    skipped: u64,
    /// When it last sent one.
    #[serde(skip_serializing_if = "Option::is_none")]
    last_fired_at: Option<u64>,
    /// The session it last sent one to.
    #[serde(skip_serializing_if = "Option::is_none")]
    last_session_id: Option<String>,
    /// Why its last due time sent nothing, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    last_error: Option<String>,
}

impl From<Schedule> for ScheduleView {
    fn from(s: Schedule) -> ScheduleView {
        ScheduleView {
            id: s.schedule_id,
            cron: s.cron,
            timezone: s.timezone,
            session_id: s.session_id,
            fresh: s.fresh,
            content: serde_json::from_str(&s.content).unwrap_or_default(),
            delivery: s.delivery,
            overlap: s.overlap,
            catch_up: s.catch_up,
            paused: s.paused,
            next_at: s.next_at,
            created_at: s.created_at,
            fired: s.fired,
            skipped: s.skipped,
            last_fired_at: s.last_fired_at,
            last_session_id: s.last_session_id,
            last_error: s.last_error,
        }
    }
}

/// The caller's schedules.
#[derive(Serialize, ToSchema)]
struct ScheduleList {
    /// Oldest first.
    items: Vec<ScheduleView>,
}

/// No such schedule: 404 `schedule-not-found`.
struct NoSchedule;

impl utoipa::IntoResponses for NoSchedule {
    fn responses()
    -> std::collections::BTreeMap<String, utoipa::openapi::RefOr<utoipa::openapi::Response>> {
        errors(&[("404", "`schedule-not-found`: no schedule of the caller's has that id")])
    }
}

/// Makes a schedule, due first at the expression's first due time from now.
#[utoipa::path(
    post, path = "/v1/schedules", operation_id = "createSchedule", tag = "schedules",
    request_body = CreateScheduleBody,
    responses(
        (status = 201, description = "The schedule", body = ScheduleView),
        (status = 404, description = "`session-not-found`: `sessionId` is not one of the caller's sessions", body = super::ErrorBody),
        BodyRefused, StorageFailed,
    )
)]
async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody<CreateScheduleBody>,
) -> Answer<(StatusCode, Json<ScheduleView>)> {
    let target = match (body.session_id, body.session) {
        (Some(session), None) if !body.fresh => Target::Session(session),
        (None, Some(session)) => {
            let (named, spec) = session.into_spec(&state);
            if named.is_some() {
                return Err(ApiError::bad_request(
                    "session.sessionId",
                    "a schedule names the sessions it makes; leave out session.sessionId",
                ));
            }
            Target::Spec { spec: Box::new(spec), fresh: body.fresh }
        }
        (Some(_), None) => {
            return Err(ApiError::bad_request("fresh", "fresh goes with session, not sessionId"));
        }
        _ => {
            return Err(ApiError::bad_request(
                "sessionId",
                "name one of sessionId (a session of yours) or session (the spec of one to make)",
            ));
        }
    };
    let new = NewSchedule {
        cron: body.cron,
        timezone: body.timezone,
        target,
        content: body.content.blocks(),
        delivery: body.delivery,
        overlap: body.overlap.unwrap_or_else(|| "skip".into()),
        catch_up: body.catch_up.unwrap_or_else(|| "once".into()),
    };
    let made = state.schedules.create(&caller.requester(), new).await?;
    Ok((StatusCode::CREATED, Json(made.into())))
}

/// The caller's schedules (an admin key's: every one).
#[utoipa::path(
    get, path = "/v1/schedules", operation_id = "listSchedules", tag = "schedules",
    responses((status = 200, description = "The schedules", body = ScheduleList), StorageFailed)
)]
async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Answer<Json<ScheduleList>> {
    let items = state.schedules.list(&caller.requester()).await?;
    Ok(Json(ScheduleList { items: items.into_iter().map(ScheduleView::from).collect() }))
}

/// One schedule: its next due time and what it did.
#[utoipa::path(
    get, path = "/v1/schedules/{schedule_id}", operation_id = "getSchedule", tag = "schedules",
    params(ScheduleId),
    responses((status = 200, description = "The schedule", body = ScheduleView), NoSchedule, StorageFailed)
)]
async fn read(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Answer<Json<ScheduleView>> {
    Ok(Json(state.schedules.get(&caller.requester(), &id).await?.into()))
}

/// Deletes a schedule (the sessions it made stay).
#[utoipa::path(
    delete, path = "/v1/schedules/{schedule_id}", operation_id = "deleteSchedule", tag = "schedules",
    params(ScheduleId),
    responses((status = 204, description = "Deleted"), NoSchedule, StorageFailed)
)]
async fn delete(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Answer<StatusCode> {
    state.schedules.delete(&caller.requester(), &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Pauses a schedule: it fires nothing until resumed.
#[utoipa::path(
    post, path = "/v1/schedules/{schedule_id}/pause", operation_id = "pauseSchedule", tag = "schedules",
    params(ScheduleId),
    responses((status = 200, description = "The schedule, paused", body = ScheduleView), NoSchedule, StorageFailed)
)]
async fn pause(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Answer<Json<ScheduleView>> {
    Ok(Json(state.schedules.pause(&caller.requester(), &id).await?.into()))
}

/// Resumes a schedule from its first due time after now (the times it passed while paused are
/// not fired).
#[utoipa::path(
    post, path = "/v1/schedules/{schedule_id}/resume", operation_id = "resumeSchedule", tag = "schedules",
    params(ScheduleId),
    responses((status = 200, description = "The schedule, running", body = ScheduleView), NoSchedule, StorageFailed)
)]
async fn resume(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Answer<Json<ScheduleView>> {
    Ok(Json(state.schedules.resume(&caller.requester(), &id).await?.into()))
}

impl From<ScheduleError> for ApiError {
    fn from(error: ScheduleError) -> Self {
        match error {
            ScheduleError::Bad { field, ref message } => ApiError::bad_request(field, message),
            ScheduleError::NotFound(_) => {
                ApiError::not_found("schedule-not-found", error.to_string())
            }
            ScheduleError::NoSession(_) => {
                ApiError::not_found("session-not-found", error.to_string())
            }
            ScheduleError::Store(store) => store.into(),
        }
    }
}
