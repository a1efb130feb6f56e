//! Input: messages (enqueue-only, answered once durable), receipts, the queue, cancel, compact.

use airlock_core::{Delivery, Message, Target};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa::openapi::schema::Object;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::fields::{self, Content};
use super::responses::{BodyRefused, Disposed, Limited, NoSession, SessionFailed, StorageFailed};
use super::sessions::Accepted;
use super::traced::Traced;
use super::{
    Answer, ApiError, AppState, Caller, ErrorBody, IdempotencyKeyHeader, JsonBody, MessagePath,
    SessionId, TraceHeaders,
};
use crate::schema::{delivery_schema, queue_items_schema, string_enum, target_schema};
use airlock_base::clock::fresh_id;
use airlock_sessions::{InputError, QueueItem, RefusalCode, Sent};
use airlock_store::receipts::Receipt;

/// `/v1/sessions/{id}/messages`, `…/messages/{message_id}`, `…/queue`, `…/queue/{message_id}`,
/// `…/queue/{message_id}/steer`, `…/cancel` and `…/compact` (paths in the annotations).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(send))
        .routes(routes!(receipt))
        .routes(routes!(queue))
        .routes(routes!(edit, remove))
        .routes(routes!(steer))
        .routes(routes!(cancel))
        .routes(routes!(compact))
}

/// A message to send.
#[derive(Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct SendBody {
    content: Content,
    #[serde(default)]
    #[schema(schema_with = delivery_schema)]
    delivery: Delivery,
}

/// `{messageId, seq}`: the message is durable.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct MessageAccepted {
    /// The id of the new message.
    message_id: String,
    /// The seq of the splice that inserted it.
    seq: u64,
}

/// `{messageId}`: the queue operation is durable.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct QueueOpDone {
    message_id: String,
}

/// The pending items of a session.
#[derive(Serialize, ToSchema)]
struct QueueView {
    /// `next-step` items first, then `next-turn`, each in list order.
    #[schema(schema_with = queue_items_schema)]
    items: Vec<QueueItem>,
}

/// Sends a message: answered once it is durable, never when the agent is done with it.
#[utoipa::path(
    post, path = "/v1/sessions/{id}/messages", operation_id = "sendMessage", tag = "input",
    params(SessionId, IdempotencyKeyHeader, TraceHeaders),
    request_body = SendBody,
    responses(
        (status = 202, description = "Durable: the message id and the seq of its insert splice", body = MessageAccepted),
        (status = 400, description = "`bad-request`: details name the field (or the header)", body = ErrorBody),
        (status = 409, description = "`session-disposed`, `idempotency-conflict` (the key was used for another request), `child-session` (a continuable subagent takes followups and injects only from its parent; steering into its running turn is taken) or `session-conflict`", body = ErrorBody),
        BodyRefused, Limited, NoSession, SessionFailed,
    )
)]
async fn send(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<SendBody>,
) -> Answer<Response> {
    let started = std::time::Instant::now();
    let mut message = Message::user(fresh_id(), body.content.clone().blocks());
    let traced = Traced::mark(state.traces.as_ref(), &headers, &mut message);
    let answer = enqueue(&state, &caller, &id, &headers, message, body).await;
    airlock_base::metrics::global().enqueue_seconds.observe(started.elapsed().as_secs_f64());
    Ok(traced.end("/v1/sessions/{id}/messages", answer))
}

/// Admits `message`, sent with `body`: 202 once its insert splice is durable.
async fn enqueue(
    state: &AppState,
    caller: &Caller,
    id: &str,
    headers: &HeaderMap,
    message: Message,
    body: SendBody,
) -> Answer<Response> {
    let message_id = message.id.clone();
    let key = fields::idempotency_key(headers, caller.tenant(), id, &body, &message_id)?;
    Ok(match state.sessions.send(id, message, body.delivery, key).await? {
        Sent::Accepted { seq } => {
            (StatusCode::ACCEPTED, Json(MessageAccepted { message_id, seq })).into_response()
        }
        Sent::Replayed(answer) => {
            let body: Value = serde_json::from_str(&answer).unwrap_or_default();
            (StatusCode::ACCEPTED, Json(body)).into_response()
        }
    })
}

/// A message's receipt: where it waits or when it was claimed or canceled; never a result.
#[utoipa::path(
    get, path = "/v1/sessions/{id}/messages/{message_id}", operation_id = "getReceipt", tag = "input",
    params(MessagePath),
    responses(
        (status = 200, description = "The receipt", body = ReceiptView),
        (status = 404, description = "`session-not-found` or `message-not-found`", body = ErrorBody),
        StorageFailed,
    )
)]
async fn receipt(
    State(state): State<AppState>,
    Path((id, message_id)): Path<(String, String)>,
) -> Answer<impl IntoResponse> {
    state.sessions.row(&id).await?;
    let receipt = state.sessions.receipt(&id, &message_id).await?;
    let receipt = receipt.ok_or_else(|| {
        ApiError::not_found(
            "message-not-found",
            format!("session {id:?} never accepted a message with id {message_id:?}"),
        )
    })?;
    Ok(Json(ReceiptView::from(receipt)))
}

/// Where one message is: waiting, taken by a turn, or canceled; never a result.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Receipt)]
struct ReceiptView {
    /// The message.
    message_id: String,
    /// `pending`, `claimed` or `canceled`.
    #[schema(schema_with = receipt_state_schema)]
    state: &'static str,
    /// The list it was inserted into (or last moved to).
    #[schema(schema_with = target_schema)]
    target: Target,
    /// The seq of the splice that inserted it.
    inserted_seq: u64,
    /// The seq of the splice that claimed it, once claimed.
    #[serde(skip_serializing_if = "Option::is_none")]
    claimed_seq: Option<u64>,
    /// The turn that claimed it, once claimed.
    #[serde(skip_serializing_if = "Option::is_none")]
    turn: Option<u32>,
    /// The seq of the splice that canceled it, once canceled.
    #[serde(skip_serializing_if = "Option::is_none")]
    canceled_seq: Option<u64>,
}

impl From<Receipt> for ReceiptView {
    fn from(receipt: Receipt) -> Self {
        let Receipt { message_id, state, target, inserted_seq, claimed_seq, turn, canceled_seq } =
            receipt;
        Self { message_id, state, target, inserted_seq, claimed_seq, turn, canceled_seq }
    }
}

/// `Receipt::state`.
fn receipt_state_schema() -> Object {
    string_enum(
        "Where the message is: waiting, taken by a turn, or canceled.",
        &["pending", "claimed", "canceled"],
    )
}

/// The pending items of a session.
#[utoipa::path(
    get, path = "/v1/sessions/{id}/queue", operation_id = "getQueue", tag = "input",
    params(SessionId),
    responses(
        (status = 200, description = "The queue", body = QueueView),
        NoSession, Disposed, StorageFailed,
    )
)]
async fn queue(State(state): State<AppState>, Path(id): Path<String>) -> Answer<impl IntoResponse> {
    Ok(Json(QueueView { items: state.sessions.queue(&id).await? }))
}

/// New content for a queued message.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct EditBody {
    content: Content,
}

/// Replaces the content of a queued message; it keeps its id and place.
#[utoipa::path(
    patch, path = "/v1/sessions/{id}/queue/{message_id}", operation_id = "editQueueItem", tag = "input",
    params(MessagePath),
    request_body = EditBody,
    responses(
        (status = 200, description = "Replaced", body = QueueOpDone),
        (status = 404, description = "`session-not-found`, or `queue-item-not-found` once claimed or unknown", body = ErrorBody),
        BodyRefused, Disposed, SessionFailed,
    )
)]
async fn edit(
    State(state): State<AppState>,
    Path((id, message_id)): Path<(String, String)>,
    JsonBody(body): JsonBody<EditBody>,
) -> Answer<impl IntoResponse> {
    state.sessions.edit(&id, &message_id, body.content.blocks()).await?;
    Ok(Json(QueueOpDone { message_id }))
}

/// Cancels a queued message (a canceled splice in the log).
#[utoipa::path(
    delete, path = "/v1/sessions/{id}/queue/{message_id}", operation_id = "removeQueueItem", tag = "input",
    params(MessagePath),
    responses(
        (status = 200, description = "Canceled", body = QueueOpDone),
        (status = 404, description = "`session-not-found`, or `queue-item-not-found` once claimed or unknown", body = ErrorBody),
        Disposed, SessionFailed,
    )
)]
async fn remove(
    State(state): State<AppState>,
    Path((id, message_id)): Path<(String, String)>,
) -> Answer<impl IntoResponse> {
    state.sessions.remove(&id, &message_id).await?;
    Ok(Json(QueueOpDone { message_id }))
}

/// Turns a queued followup into steering for the running turn.
#[utoipa::path(
    post, path = "/v1/sessions/{id}/queue/{message_id}/steer", operation_id = "steerQueueItem", tag = "input",
    params(MessagePath),
    responses(
        (status = 200, description = "It now steers, with the same message id", body = QueueOpDone),
        (status = 404, description = "`session-not-found`, or `queue-item-not-found` when unknown or claimed", body = ErrorBody),
        (status = 409, description = "`steer-unavailable` (the agent is idle, or the item is already in `next-step`) or `session-disposed`", body = ErrorBody),
        SessionFailed,
    )
)]
async fn steer(
    State(state): State<AppState>,
    Path((id, message_id)): Path<(String, String)>,
) -> Answer<impl IntoResponse> {
    state.sessions.steer(&id, &message_id).await?;
    Ok(Json(QueueOpDone { message_id }))
}

/// How to cancel.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CancelBody {
    /// Keep the queue, parked (default `true`); `false` clears it.
    keep_inbox: Option<bool>,
}

/// Cancels the running turn; on an idle agent it is a no-op.
#[utoipa::path(
    post, path = "/v1/sessions/{id}/cancel", operation_id = "cancelSession", tag = "input",
    params(SessionId),
    request_body(
        content = Option<CancelBody>,
        description = "Optional: no body counts as `{}`."
    ),
    responses(
        (status = 202, description = "Durable", body = Accepted),
        BodyRefused, NoSession, Disposed, SessionFailed,
    )
)]
async fn cancel(
    State(state): State<AppState>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<CancelBody>,
) -> Answer<impl IntoResponse> {
    // A web "stop" must not eat the queue: HTTP cancel keeps the inbox unless told otherwise.
    state.sessions.cancel(&id, body.keep_inbox.unwrap_or(true)).await?;
    Ok((StatusCode::ACCEPTED, Json(Accepted { accepted: true })))
}

/// Summarizes the conversation now, as maintenance of an idle session: status stays `idle`, and a
/// message sent meanwhile is accepted and runs once the `context/compaction` event is logged.
#[utoipa::path(
    post, path = "/v1/sessions/{id}/compact", operation_id = "compactSession", tag = "input",
    params(SessionId),
    request_body(content = Option<CompactBody>, description = "Optional: no body counts as `{}`."),
    responses(
        (status = 202, description = "The compaction started; its `context/compaction` event follows", body = Accepted),
        (status = 409, description = "`session-running` (a turn runs: it compacts by itself when the context fills), `compacting` (one runs already), `nothing-to-compact`, or `session-disposed`", body = ErrorBody),
        BodyRefused, NoSession, SessionFailed,
    )
)]
async fn compact(
    State(state): State<AppState>,
    Path(id): Path<String>,
    JsonBody(CompactBody {}): JsonBody<CompactBody>,
) -> Answer<impl IntoResponse> {
    match state.sessions.compact(&id).await {
        Ok(()) => Ok((StatusCode::ACCEPTED, Json(Accepted { accepted: true }))),
        Err(InputError::Refused { refusal, .. }) => {
            use airlock_core::RefusalCode::{Compacting, NothingToCompact, SessionRunning};
            let code = match refusal.code {
                RefusalCode::Core(code @ (SessionRunning | Compacting)) => code.as_str(),
                _ => NothingToCompact.as_str(),
            };
            Err(ApiError::conflict(code, refusal.message))
        }
        Err(error) => Err(error.into()),
    }
}

/// `compact` takes no settings yet.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct CompactBody {}
