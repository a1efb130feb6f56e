//! Observation: a session's log as SSE (resumable, served from the log, then live) or as JSON
//! pages, and `/v1/events`, the cross-session stream of sessions added, removed and their status.
//!
//! A session's stream is its follower, polled by the connection itself; `/v1/events` is fed by a
//! task through a bounded channel. A slow reader never slows the agent: it only falls behind the
//! live notices, and then re-reads the log from its cursor.

use std::collections::HashMap;

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
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;
use utoipa::openapi::schema::Object;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::responses::{Limited, NoSession, StorageFailed};
use super::{Answer, ApiError, AppState, Caller, ErrorBody, QueryParams, SessionId, fields, sse};
use crate::admission::Slot;
use crate::follow::Follower;
use crate::registry::{Change, ClusterNotice, HubNotice};
use crate::schema::{events_schema, string_enum};
use crate::session::{Notice, seq_of};

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
    if state.registry.store().session(&id).await?.is_none() {
        return Err(ApiError::session_not_found(&id));
    }
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
    let slot = state.registry.admission().stream(caller.tenant())?;
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
    if state.registry.store().session(&id).await?.is_none() {
        return Err(ApiError::session_not_found(&id));
    }
    let limit = fields::page_limit(q.limit, 500, 5000)?;
    page(&state, &id, fields::after(q.after)?, limit).await
}

/// A JSON page `{events, lastSeq, nextAfter, hasMore}`.
async fn page(
    state: &AppState,
    id: &str,
    after: Option<u64>,
    limit: usize,
) -> Answer<Json<EventsPage>> {
    let mut events = state.registry.store().events(id, after, limit + 1).await?;
    let has_more = events.len() > limit;
    events.truncate(limit);
    let last_seq = state.registry.store().last_seq(id).await?.map_or(-1, |s| s as i64);
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
    // A subscription brings an evicted session back; a disposed one is only read.
    let handle = state.registry.resume(id).await.ok();
    // Subscribe before reading the log: nothing committed in between is missed. The follower
    // keeps the session's outbox, not the session: an idle session is evicted while followed,
    // and its events reach the follower again once it is woken.
    let follower = Follower::with_queue(state.registry.store().clone(), id, handle, after);
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
    let slot = state.registry.admission().stream(caller.tenant())?;
    let (tx, rx) = mpsc::channel(64);
    let tenant = Tenant { only: caller.only().map(str::to_owned), known: HashMap::new() };
    // Subscribed before the answer starts: a session created once a client has it is announced.
    let hub = state.registry.subscribe();
    tokio::spawn(async move {
        let _slot = slot;
        follow_hub(state, hub, tenant, tx).await;
    });
    Ok(sse::response(ReceiverStream::new(rx)))
}

/// Which sessions a hub stream shows: all, or one tenant's (each looked up once, while the
/// answers kept stay under [`Tenant::KEEP`]).
struct Tenant {
    only: Option<String>,
    known: HashMap<String, bool>,
}

impl Tenant {
    /// The most answers a stream keeps: past it they are forgotten and looked up again, so a
    /// stream open for months of new sessions stays small.
    const KEEP: usize = 10_000;

    async fn shows(&mut self, state: &AppState, session_id: &str) -> bool {
        let Some(only) = &self.only else { return true };
        if let Some(&shown) = self.known.get(session_id) {
            return shown;
        }
        let store = state.registry.store();
        let shown = store.session_of_tenant(session_id, only).await.unwrap_or(false);
        if self.known.len() >= Self::KEEP {
            self.known.clear();
        }
        self.known.insert(session_id.to_owned(), shown);
        shown
    }
}

async fn follow_hub(
    state: AppState,
    mut hub: broadcast::Receiver<HubNotice>,
    mut tenant: Tenant,
    tx: Tx,
) {
    let _counted = airlock_base::metrics::SubscriberGuard::new();
    let mut shutdown = state.shutdown.clone();
    if tx.send(sse::connected()).await.is_err() {
        return;
    }
    // Each live session's status changes, through a receiver only: holding its handle would keep
    // it in memory. An evicted session's watcher ends; the session is watched again when woken.
    let watch = |session_id: String, mut notices: broadcast::Receiver<Notice>| {
        let (tx, mut shutdown) = (tx.clone(), state.shutdown.clone());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = shutdown.changed() => return,
                    notice = notices.recv() => match notice {
                        Ok(Notice::Status(status)) => {
                            if tx.send(sse::status(&session_id, status)).await.is_err() { return }
                        }
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => return,
                    },
                }
            }
        })
    };
    // A session woken while a follower kept its outbox is still watched: no second watcher.
    let mut watchers: HashMap<String, tokio::task::JoinHandle<()>> = HashMap::new();
    let mut watch_live = |session_id: &str| {
        watchers.retain(|_, watcher| !watcher.is_finished());
        if !watchers.contains_key(session_id)
            && let Ok(handle) = state.registry.get(session_id)
        {
            watchers
                .insert(session_id.to_owned(), watch(session_id.to_owned(), handle.subscribe()));
        }
    };
    for handle in state.registry.handles() {
        if tenant.shows(&state, handle.id()).await {
            watch_live(handle.id());
        }
    }
    // The other gateways' sessions, when the store is shared (`docs/deploy.md`).
    let mut others = state.registry.store().notices();
    loop {
        let notice = tokio::select! {
            _ = shutdown.changed() => return,
            _ = tx.closed() => return,
            notice = hub.recv() => notice,
            Some(frame) = from_others(&state, &mut others, &mut tenant) => {
                if tx.send(frame).await.is_err() {
                    return;
                }
                continue;
            }
        };
        if let Ok(notice) = &notice
            && !tenant.shows(&state, notice.session_id()).await
        {
            continue;
        }
        let frame = match notice {
            Ok(HubNotice::Woken { session_id }) => {
                watch_live(&session_id);
                continue;
            }
            Ok(HubNotice::Added { session_id }) => {
                watch_live(&session_id);
                sse::frame("session.added", None, &json!({"sessionId": session_id}).to_string())
            }
            Ok(HubNotice::Removed { session_id }) => {
                sse::frame("session.removed", None, &json!({"sessionId": session_id}).to_string())
            }
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return,
        };
        if tx.send(frame).await.is_err() {
            return;
        }
    }
}

/// The next frame from another gateway's notices that this stream shows; `None` (never ready)
/// when the store is not shared.
async fn from_others(
    state: &AppState,
    notices: &mut Option<broadcast::Receiver<String>>,
    tenant: &mut Tenant,
) -> Option<Bytes> {
    let Some(notices) = notices else { return std::future::pending().await };
    let own = state.registry.store().node();
    loop {
        let payload = match notices.recv().await {
            Ok(payload) => payload,
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return std::future::pending().await,
        };
        let Ok(notice) = serde_json::from_str::<ClusterNotice>(&payload) else { continue };
        if Some(notice.node.as_str()) == own
            || !tenant.shows(state, notice.change.session_id()).await
        {
            continue;
        }
        let id = |session_id: &str| json!({"sessionId": session_id}).to_string();
        return Some(match notice.change {
            Change::Added { session_id } => sse::frame("session.added", None, &id(&session_id)),
            Change::Removed { session_id } => sse::frame("session.removed", None, &id(&session_id)),
            Change::Status { session_id, status } => sse::status(&session_id, status),
        });
    }
}
