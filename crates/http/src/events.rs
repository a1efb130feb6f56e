//! Observation: a session's log as SSE (resumable, served from the log, then live) or as JSON
//! pages, and `/v1/events`, the cross-session stream of sessions added, removed and their status.
//!
//! A session's stream is its follower, polled by the connection itself; `/v1/events` is fed by a
//! task through a bounded channel. A slow reader never slows the agent: it only falls behind the
//! live notices, and then re-reads the log from its cursor.

use airlock_core::Status;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::json;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use utoipa::openapi::schema::Object;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::responses::{Limited, NoSession, StorageFailed};
use super::{Answer, ApiError, AppState, Caller, ErrorBody, QueryParams, SessionId, fields, sse};
use crate::schema::{events_schema, string_enum};
use airlock_sessions::{Follower, HubEvent, Slot, seq_of};

/// `/v1/sessions/{id}/events`, `…/events/page` and `/v1/events` (paths in the annotations).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(session_events))
        .routes(routes!(session_page))
        .routes(routes!(hub_events))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct EventsQuery {
    /// Only events with a larger seq (`Last-Event-ID` wins over it on the stream).
    #[param(minimum = 0, maximum = 9223372036854775807_u64)]
    after: Option<u64>,
    /// `json` for a JSON page instead of the stream.
    #[param(schema_with = json_format)]
    format: Option<String>,
    /// Events per JSON page: 1 to 5000, default 500.
    #[param(minimum = 1, maximum = 5000)]
    limit: Option<u64>,
}

/// Where a JSON page of the log starts and how long it is.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct PageQuery {
    /// Only events with a larger seq.
    #[param(minimum = 0, maximum = 9223372036854775807_u64)]
    after: Option<u64>,
    /// Events per page: 1 to 5000, default 500.
    #[param(minimum = 1, maximum = 5000)]
    limit: Option<u64>,
}

/// `format`: `json` is the one there is.
fn json_format() -> Object {
    string_enum("`json` for a JSON page instead of the stream.", &["json"])
}

/// A JSON page of a session's log.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct EventsPage {
    /// Log events (envelopes with `seq` and `type`), in seq order.
    #[schema(schema_with = events_schema)]
    events: Vec<Box<RawValue>>,
    /// The seq of the last event in the log; -1 for an empty log.
    last_seq: i64,
    /// Pass as `after` for the next page: the last returned seq, or the given `after`.
    next_after: i64,
    /// Whether more events follow this page.
    has_more: bool,
}

/// Where a stream's task sends its frames.
pub(super) type Tx = mpsc::Sender<Bytes>;

/// A session's log: an SSE stream by default (resumable, no gap, no duplicate), or a JSON page
/// with `Accept: application/json` or `?format=json` (the page `getSessionEventsPage` answers,
/// whose one media type gives a generated client typed events).
///
/// The stream starts with `: connected` and `retry: 1000`, a `session.status` snapshot and, when
/// the inbox is not empty, a `session.queue` snapshot; then each log event as `id: <seq>`,
/// `event: session.event`, `data: <envelope>`, with `session.status` and `session.queue` frames
/// (no `id:`) and `: ping` comments every 15 s. It does not end at idle.
#[utoipa::path(
    get, path = "/v1/sessions/{id}/events", operation_id = "getSessionEvents", tag = "observation",
    params(
        SessionId,
        EventsQuery,
        ("Last-Event-ID" = Option<String>, Header, pattern = "^[0-9]{1,18}$(?![\\s\\S])",
            description = "Resume the stream after this seq (the `id:` of the last frame seen)."),
    ),
    responses(
        (status = 200, description = "The SSE stream, or a JSON page", content(
            (ref("#/components/schemas/SessionStream") = "text/event-stream"),
            (EventsPage = "application/json"),
        )),
        (status = 400, description = "`bad-request`: a query parameter or `Last-Event-ID` does not fit (the field is named)", body = ErrorBody),
        Limited, NoSession, StorageFailed,
    )
)]
async fn session_events(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<EventsQuery>,
    headers: HeaderMap,
) -> Answer<Response> {
    state.sessions.row(&id).await?;
    let after = fields::after(q.after)?;
    let limit = fields::page_limit(q.limit, 500, 5000)?;
    let last_event_id = match headers.get("last-event-id") {
        Some(value) => Some(fields::parse_last_event_id(value.as_bytes())?),
        None => None,
    };
    let json = match q.format.as_deref() {
        None => {
            let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
            accept.contains("application/json") && !accept.contains("text/event-stream")
        }
        Some("json") => true,
        Some(other) => {
            let message =
                format!("format {other:?} is not known; leave it out for the stream or give json");
            return Err(ApiError::bad_request("format", message));
        }
    };
    if json {
        return page(&state, &id, after, limit).await.map(IntoResponse::into_response);
    }
    let after = last_event_id.or(after);
    let slot = state.sessions.hold_stream(caller.tenant())?;
    Ok(sse::response(follow_session(state, id, after, slot)))
}

/// A JSON page of a session's log, `{events, lastSeq, nextAfter, hasMore}`: the page that
/// `…/events?format=json` answers, on a route of its own.
#[utoipa::path(
    get, path = "/v1/sessions/{id}/events/page", operation_id = "getSessionEventsPage",
    tag = "observation",
    params(SessionId, PageQuery),
    responses(
        (status = 200, description = "Events in seq order, at most `limit`", body = EventsPage),
        (status = 400, description = "`bad-request`: `after` or `limit` does not fit (the field is named)", body = ErrorBody),
        NoSession, StorageFailed,
    )
)]
async fn session_page(
    State(state): State<AppState>,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<PageQuery>,
) -> Answer<Json<EventsPage>> {
    state.sessions.row(&id).await?;
    let limit = fields::page_limit(q.limit, 500, 5000)?;
    page(&state, &id, fields::after(q.after)?, limit).await
}

/// A JSON page `{events, lastSeq, nextAfter, hasMore}` of a session the caller found stored.
async fn page(
    state: &AppState,
    id: &str,
    after: Option<u64>,
    limit: usize,
) -> Answer<Json<EventsPage>> {
    let (mut events, last_seq) = state.sessions.events(id, after, limit + 1).await?;
    let has_more = events.len() > limit;
    events.truncate(limit);
    let last_seq = last_seq.map_or(-1, |s| s as i64);
    let next_after = match events.last() {
        Some(last) => seq_of(last)? as i64,
        None => after.map_or(-1, |a| a as i64),
    };
    let raw: Vec<Box<RawValue>> =
        events.into_iter().filter_map(|e| RawValue::from_string(e).ok()).collect();
    Ok(Json(EventsPage { events: raw, last_seq, next_after, has_more }))
}

/// Streams one session: snapshots, the log after the cursor, then live. The response body is
/// this stream itself, with no task or channel of its own, and it keeps only its follower while
/// it waits (setting up runs boxed): a held stream costs little more than its connection. A slow
/// reader only ever falls behind the session's notices, and then re-reads the log from its
/// cursor.
fn follow_session(
    state: AppState,
    id: String,
    after: Option<u64>,
    slot: Slot,
) -> impl Stream<Item = Bytes> {
    async_stream::stream! {
        let _counted = airlock_base::metrics::SubscriberGuard::new();
        let _slot = slot;
        let mut shutdown = state.shutdown.clone();
        let (mut follower, snapshots) = Box::pin(start_following(state, &id, after)).await;
        for frame in snapshots {
            yield frame;
        }
        loop {
            let update = tokio::select! {
                _ = shutdown.changed() => break,
                update = follower.next() => update,
            };
            let Ok(Some(update)) = update else { break };
            yield sse::update(&id, &update);
        }
    }
}

/// The follower of a session stream, and the frames it starts with: `: connected` and the
/// status. The follower yields the queue where the log read meets the live events.
async fn start_following(state: AppState, id: &str, after: Option<u64>) -> (Follower, Vec<Bytes>) {
    let follower = state.sessions.watch(id, after).await;
    let mut frames = vec![sse::connected()];
    frames.push(sse::status(id, follower.status_at_start().unwrap_or(Status::Idle)));
    (follower, frames)
}

/// `GET /v1/events`: sessions added and removed, and every session's status changes (the key's
/// tenant's sessions only, unless it is an admin key).
#[utoipa::path(
    get, path = "/v1/events", operation_id = "getEvents", tag = "observation",
    responses((
        status = 200,
        description = "An SSE stream of `session.added`, `session.removed` and `session.status` \
            frames, each with JSON data naming the `sessionId`.",
        content_type = "text/event-stream",
        body = ref("#/components/schemas/HubStream"),
    ), Limited)
)]
async fn hub_events(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Answer<Response> {
    let slot = state.sessions.hold_stream(caller.tenant())?;
    // Subscribed before the answer starts: a session created once a client has it is announced.
    let mut hub = state.sessions.hub(caller.only().map(str::to_owned));
    let mut shutdown = state.shutdown.clone();
    Ok(sse::response(async_stream::stream! {
        let _counted = airlock_base::metrics::SubscriberGuard::new();
        let _slot = slot;
        yield sse::connected();
        let id = |session_id: &str| json!({"sessionId": session_id}).to_string();
        loop {
            let event = tokio::select! {
                _ = shutdown.changed() => break,
                event = hub.recv() => event,
            };
            yield match event {
                Some(HubEvent::Added(session_id)) => {
                    sse::frame("session.added", None, &id(&session_id))
                }
                Some(HubEvent::Removed(session_id)) => {
                    sse::frame("session.removed", None, &id(&session_id))
                }
                Some(HubEvent::Status(session_id, status)) => sse::status(&session_id, status),
                None => break,
            };
        }
    }))
}
