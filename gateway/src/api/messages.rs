//! Input: messages (enqueue-only, answered once durable), receipts, the queue, cancel.

use airlock_core::{CancelCause, ContentBlock, Input, Message, Role, Source, Status, Target};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, patch, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{ApiError, AppState, JsonBody, receipts};
use crate::actor::{Outcome, SessionHandle};
use crate::session::IdempotencyKey;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/sessions/{id}/messages", post(send))
        .route("/v1/sessions/{id}/messages/{message_id}", get(receipt))
        .route("/v1/sessions/{id}/queue", get(queue))
        .route("/v1/sessions/{id}/queue/{message_id}", patch(edit).delete(remove))
        .route("/v1/sessions/{id}/queue/{message_id}/steer", post(steer))
        .route("/v1/sessions/{id}/cancel", post(cancel))
}

/// `string | [ContentBlock]`.
#[derive(Clone, Deserialize, Serialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Blocks(Vec<ContentBlock>),
}

impl Content {
    fn blocks(self) -> Vec<ContentBlock> {
        match self {
            Content::Text(text) => vec![ContentBlock::Text { text }],
            Content::Blocks(blocks) => blocks,
        }
    }
}

#[derive(Clone, Copy, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
enum Delivery {
    #[default]
    Followup,
    Steer,
    Inject,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct SendBody {
    content: Content,
    #[serde(default)]
    delivery: Delivery,
}

/// The live session, or why there is none: 404 unknown, 409 disposed.
async fn live(state: &AppState, id: &str) -> Result<SessionHandle, ApiError> {
    if let Ok(handle) = state.registry.get(id) {
        return Ok(handle);
    }
    match state.registry.store().session(id).await? {
        Some(row) if row.disposed => Err(ApiError::new(
            StatusCode::CONFLICT,
            "session-disposed",
            format!("session {id:?} was disposed; its log stays readable but it takes no input"),
        )),
        _ => Err(ApiError::session_not_found(id)),
    }
}

fn user_message(id: String, content: Vec<ContentBlock>) -> Message {
    Message { id, role: Role::User, content, source: Source::of("user") }
}

async fn send(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<SendBody>,
) -> Result<impl IntoResponse, ApiError> {
    let handle = live(&state, &id).await?;
    if matches!(&body.content, Content::Text(t) if t.is_empty())
        || matches!(&body.content, Content::Blocks(b) if b.is_empty())
    {
        return Err(ApiError::bad_request(
            "content",
            "content is empty; send some text or content blocks",
        ));
    }
    let message_id = uuid::Uuid::now_v7().to_string();
    let key = match headers.get("idempotency-key") {
        None => None,
        Some(value) => {
            let key = value.to_str().ok().filter(|k| !k.is_empty() && k.len() <= 200).ok_or_else(
                || {
                    ApiError::bad_request(
                        "Idempotency-Key",
                        "the Idempotency-Key header must be 1 to 200 visible ASCII characters",
                    )
                },
            )?;
            let hash = Sha256::digest(serde_json::to_vec(&(&id, &body)).expect("bodies serialize"));
            Some(IdempotencyKey {
                key: key.to_owned(),
                request_hash: format!("{hash:x}"),
                message_id: message_id.clone(),
            })
        }
    };
    let (target, wakeup) = match body.delivery {
        Delivery::Followup => (Target::NextTurn, true),
        Delivery::Steer => (Target::NextStep, true),
        Delivery::Inject => (Target::NextStep, false),
    };
    let message = user_message(message_id.clone(), body.content.blocks());
    match handle.feed(Input::Send { message, target, wakeup }, key).await? {
        Outcome::Fed(fed) => match (fed.refusal, fed.first_seq) {
            (None, Some(seq)) => {
                Ok((StatusCode::ACCEPTED, Json(json!({"messageId": message_id, "seq": seq}))))
            }
            (refusal, _) => Err(ApiError::new(
                StatusCode::CONFLICT,
                "session-conflict",
                refusal.map_or("the session did not take the message".into(), |r| r.message),
            )),
        },
        Outcome::Replayed(response) => {
            let body: Value = serde_json::from_str(&response).unwrap_or_default();
            Ok((StatusCode::ACCEPTED, Json(body)))
        }
        Outcome::KeyConflict => Err(ApiError::new(
            StatusCode::CONFLICT,
            "idempotency-conflict",
            "this Idempotency-Key was used for another request; use a fresh key for a new message",
        )),
    }
}

async fn receipt(
    State(state): State<AppState>,
    Path((id, message_id)): Path<(String, String)>,
) -> Result<impl IntoResponse, ApiError> {
    if state.registry.store().session(&id).await?.is_none() {
        return Err(ApiError::session_not_found(&id));
    }
    let events = state.registry.store().events(&id, None, usize::MAX >> 1).await?;
    let receipt = receipts::find(&events, &message_id).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "message-not-found",
            format!("session {id:?} never accepted a message with id {message_id:?}"),
        )
    })?;
    Ok(Json(receipt))
}

async fn queue(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let handle = live(&state, &id).await?;
    Ok(Json(json!({"items": handle.view().queue})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditBody {
    content: Content,
}

async fn edit(
    State(state): State<AppState>,
    Path((id, message_id)): Path<(String, String)>,
    JsonBody(body): JsonBody<EditBody>,
) -> Result<impl IntoResponse, ApiError> {
    let handle = live(&state, &id).await?;
    let pending = handle
        .view()
        .queue
        .into_iter()
        .find(|i| i.message_id == message_id)
        .ok_or_else(|| ApiError::queue_item_not_found(&message_id))?;
    let message = Message { content: body.content.blocks(), ..pending.message };
    queue_op(&handle, Input::Replace(message), &message_id).await
}

async fn remove(
    State(state): State<AppState>,
    Path((id, message_id)): Path<(String, String)>,
) -> Result<impl IntoResponse, ApiError> {
    let handle = live(&state, &id).await?;
    queue_op(&handle, Input::Remove(message_id.clone()), &message_id).await
}

async fn steer(
    State(state): State<AppState>,
    Path((id, message_id)): Path<(String, String)>,
) -> Result<impl IntoResponse, ApiError> {
    let handle = live(&state, &id).await?;
    let view = handle.view();
    let item = view
        .queue
        .iter()
        .find(|i| i.message_id == message_id)
        .ok_or_else(|| ApiError::queue_item_not_found(&message_id))?;
    let unavailable =
        |why: &str| ApiError::new(StatusCode::CONFLICT, "steer-unavailable", why.to_owned());
    if item.target == Target::NextStep {
        return Err(unavailable("the item is already steering or context"));
    }
    if view.status == Status::Idle {
        return Err(unavailable(
            "the agent is idle: there is no running turn to steer; the item runs as a followup on the next waking send",
        ));
    }
    queue_op(&handle, Input::Promote(message_id.clone()), &message_id).await
}

/// Feeds a queue operation: 200 with the message id, 404 when the core no longer has the item.
async fn queue_op(
    handle: &SessionHandle,
    input: Input,
    message_id: &str,
) -> Result<Json<Value>, ApiError> {
    match handle.feed(input, None).await? {
        Outcome::Fed(fed) if fed.refusal.is_none() => Ok(Json(json!({"messageId": message_id}))),
        _ => Err(ApiError::queue_item_not_found(message_id)),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CancelBody {
    keep_inbox: Option<bool>,
}

async fn cancel(
    State(state): State<AppState>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<CancelBody>,
) -> Result<impl IntoResponse, ApiError> {
    let handle = live(&state, &id).await?;
    // A web "stop" must not eat the queue: HTTP cancel keeps the inbox unless told otherwise.
    let input =
        Input::Cancel { cause: CancelCause::User, keep_inbox: body.keep_inbox.unwrap_or(true) };
    handle.feed(input, None).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({"accepted": true}))))
}
