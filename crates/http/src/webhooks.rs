//! `/v1/webhooks`: a tenant's webhook subscriptions (see [`airlock_hooks::webhooks`]). A
//! subscription is told, signed by the Standard Webhooks rules, what its tenant's sessions (or one
//! of them) did; its secret is shown once, when it is made.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::responses::{BodyRefused, StorageFailed, errors};
use super::{Answer, ApiError, AppState, Caller, JsonBody};
use airlock_hooks::webhooks::{NewWebhook, WebhookError};
use airlock_store::Webhook;

/// The webhook routes (paths in the annotations).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create, list))
        .routes(routes!(read, delete))
        .routes(routes!(resume))
}

/// The `{webhook_id}` of a subscription's routes.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[expect(dead_code, reason = "it only documents the parameter; handlers take `Path<String>`")]
struct WebhookId {
    /// The subscription's id.
    webhook_id: String,
}

/// An event type a subscription may ask for.
#[derive(Serialize, Deserialize, ToSchema)]
#[schema(as = WebhookEventType)]
#[allow(dead_code)] // the document's enum; bodies carry the names as strings
enum EventType {
    /// The agent went idle: `{status, finishReason?}`.
    #[serde(rename = "session.idle")]
    Idle,
    /// Calls wait for a person (an approval) or the client (a client tool): `{waiting: [{callId,
    /// name, arguments, kind, since}]}`, every call waiting then.
    #[serde(rename = "session.requires_action")]
    RequiresAction,
    /// A turn ended in an error: `{turn, error}`.
    #[serde(rename = "session.failed")]
    Failed,
    /// An owned run ended: its `RunResult` without the events (`{messageId, firstSeq, lastSeq,
    /// finalResponse, finishReason, usage?, paused?}`).
    #[serde(rename = "run.completed")]
    RunCompleted,
    /// A turn ended: the `turn/end` event's data (`{turn, reason}`).
    #[serde(rename = "turn.ended")]
    TurnEnded,
}

/// A subscription to make.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateWebhookBody {
    /// Where deliveries are posted: `https://…`, or `http://` to this machine when the gateway runs
    /// with `--webhooks-allow-loopback`. Never a link-local address.
    #[schema(max_length = 2048, pattern = "^https?://")]
    url: String,
    /// The event types wanted (at least one).
    #[schema(value_type = Vec<EventType>, min_items = 1)]
    events: Vec<String>,
    /// Only this session's events (one of the caller's); all of the caller's sessions when absent.
    session_id: Option<String>,
}

/// A webhook subscription.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct WebhookView {
    /// Its id.
    id: String,
    /// Where deliveries are posted.
    url: String,
    /// The event types it is told.
    #[schema(value_type = Vec<EventType>)]
    events: Vec<String>,
    /// The one session it hears, if it hears only one.
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    /// It hears every tenant's sessions (made by an admin key, or without keys).
    every_tenant: bool,
    /// When it was made, in ms since the epoch.
    created_at: u64,
    /// `failing`: a delivery was retried for the whole retry window without a 2xx; nothing is
    /// delivered until `POST …/resume`.
    #[schema(pattern = "^(active|failing)$")]
    status: &'static str,
    /// Since when it is failing.
    #[serde(skip_serializing_if = "Option::is_none")]
    failing_since: Option<u64>,
    /// Why the last failed attempt failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    last_error: Option<String>,
    /// When it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    last_error_at: Option<u64>,
    /// Deliveries its receiver took.
    delivered: u64,
    /// When its receiver last took one.
    #[serde(skip_serializing_if = "Option::is_none")]
    last_delivered_at: Option<u64>,
    /// Deliveries waiting (for their turn, or for a retry).
    pending: u64,
    /// Deliveries given up when it started failing.
    dropped: u64,
}

impl From<Webhook> for WebhookView {
    fn from(w: Webhook) -> WebhookView {
        WebhookView {
            id: w.webhook_id,
            url: w.url,
            events: w.events,
            session_id: w.session_id,
            every_tenant: w.every_tenant,
            created_at: w.created_at,
            status: if w.failing_since.is_some() { "failing" } else { "active" },
            failing_since: w.failing_since,
            last_error: w.last_error,
            last_error_at: w.last_error_at,
            delivered: w.delivered,
            last_delivered_at: w.last_delivered_at,
            pending: w.pending,
            dropped: w.dropped,
        }
    }
}

/// A subscription just made, with its secret.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct CreatedWebhook {
    #[serde(flatten)]
    webhook: WebhookView,
    /// What signs its deliveries (`whsec_…`, Standard Webhooks): shown only now. A receiver
    /// checks each delivery's `webhook-signature` with it.
    secret: String,
}

/// The caller's subscriptions.
#[derive(Serialize, ToSchema)]
struct WebhookList {
    /// Oldest first.
    items: Vec<WebhookView>,
}

/// No such subscription: 404 `webhook-not-found`.
struct NoWebhook;

impl utoipa::IntoResponses for NoWebhook {
    fn responses()
    -> std::collections::BTreeMap<String, utoipa::openapi::RefOr<utoipa::openapi::Response>> {
        errors(&[("404", "`webhook-not-found`: no subscription of the caller's has that id")])
    }
}

/// Makes a webhook subscription. Deliveries are posted as JSON `{type, timestamp, data}` (`data`
/// names the `sessionId` and the `seq` of the event it reports) with the Standard Webhooks
/// headers `webhook-id` (the same for every attempt of one delivery), `webhook-timestamp` and
/// `webhook-signature`; a 2xx answer takes one, anything else is tried again later.
#[utoipa::path(
    post, path = "/v1/webhooks", operation_id = "createWebhook", tag = "webhooks",
    request_body = CreateWebhookBody,
    responses(
        (status = 201, description = "The subscription, with its secret (shown only now)", body = CreatedWebhook),
        (status = 404, description = "`session-not-found`: `sessionId` is not one of the caller's sessions", body = super::ErrorBody),
        BodyRefused, StorageFailed,
    )
)]
async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody<CreateWebhookBody>,
) -> Answer<(StatusCode, Json<CreatedWebhook>)> {
    let new = NewWebhook { url: body.url, events: body.events, session_id: body.session_id };
    let made = state.webhooks.create(&caller.requester(), new).await?;
    let secret = made.secret.clone();
    Ok((StatusCode::CREATED, Json(CreatedWebhook { webhook: made.into(), secret })))
}

/// The caller's webhook subscriptions (an admin key's: every one).
#[utoipa::path(
    get, path = "/v1/webhooks", operation_id = "listWebhooks", tag = "webhooks",
    responses((status = 200, description = "The subscriptions", body = WebhookList), StorageFailed)
)]
async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Answer<Json<WebhookList>> {
    let items = state.webhooks.list(&caller.requester()).await?;
    Ok(Json(WebhookList { items: items.into_iter().map(WebhookView::from).collect() }))
}

/// One webhook subscription: whether it is failing and why, what it delivered and what waits.
#[utoipa::path(
    get, path = "/v1/webhooks/{webhook_id}", operation_id = "getWebhook", tag = "webhooks",
    params(WebhookId),
    responses((status = 200, description = "The subscription", body = WebhookView), NoWebhook, StorageFailed)
)]
async fn read(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Answer<Json<WebhookView>> {
    Ok(Json(state.webhooks.get(&caller.requester(), &id).await?.into()))
}

/// Deletes a webhook subscription and the deliveries waiting for it.
#[utoipa::path(
    delete, path = "/v1/webhooks/{webhook_id}", operation_id = "deleteWebhook", tag = "webhooks",
    params(WebhookId),
    responses((status = 204, description = "Deleted"), NoWebhook, StorageFailed)
)]
async fn delete(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Answer<StatusCode> {
    state.webhooks.delete(&caller.requester(), &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Takes a failing subscription back: what is logged from now on is delivered again (what was
/// dropped when it started failing is not; the session's events say what happened meanwhile).
#[utoipa::path(
    post, path = "/v1/webhooks/{webhook_id}/resume", operation_id = "resumeWebhook", tag = "webhooks",
    params(WebhookId),
    responses((status = 200, description = "The subscription, active", body = WebhookView), NoWebhook, StorageFailed)
)]
async fn resume(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Answer<Json<WebhookView>> {
    Ok(Json(state.webhooks.resume(&caller.requester(), &id).await?.into()))
}

impl From<WebhookError> for ApiError {
    fn from(error: WebhookError) -> Self {
        match error {
            WebhookError::Bad { field, ref message } => ApiError::bad_request(field, message),
            WebhookError::NotFound(_) => {
                ApiError::not_found("webhook-not-found", error.to_string())
            }
            WebhookError::NoSession(_) => {
                ApiError::not_found("session-not-found", error.to_string())
            }
            WebhookError::Random(_) => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", error.to_string())
            }
            WebhookError::Store(store) => store.into(),
        }
    }
}
