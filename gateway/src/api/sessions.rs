//! `/v1/sessions`: create, list, read, dispose, status.

use airlock_core::{CancelCause, Input, Status, Target};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{ApiError, AppState, JsonBody};
use crate::registry::SessionSpec;
use crate::store::SessionRow;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/sessions", get(list).post(create))
        .route("/v1/sessions/{id}", get(read).delete(dispose))
        .route("/v1/sessions/{id}/status", get(status))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateBody {
    session_id: Option<String>,
    model: Option<String>,
    system: Option<String>,
    tools: Option<Vec<String>>,
    metadata: Option<Value>,
}

/// `Session` as the API shows it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SessionView {
    session_id: String,
    status: Status,
    last_seq: i64,
    pending: Value,
    created_at: u64,
    updated_at: u64,
    model: String,
    disposed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_session_id: Option<String>,
}

async fn create(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<CreateBody>,
) -> Result<impl IntoResponse, ApiError> {
    let session_id = body.session_id.unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
    if session_id.is_empty() || session_id.len() > 200 {
        return Err(ApiError::bad_request("sessionId", "sessionId must be 1 to 200 characters"));
    }
    let spec = SessionSpec {
        model: body.model.unwrap_or_else(|| state.registry.default_model().to_owned()),
        system: body.system,
        tools: body.tools,
        metadata: body.metadata,
    };
    let (row, created) = state.registry.create(session_id, spec.clone()).await?;
    if !created && serde_json::from_value::<SessionSpec>(row.spec.clone()).ok() != Some(spec) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "session-conflict",
            "a session with this id exists with other fields; pick another sessionId",
        ));
    }
    let code = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((code, Json(view(&state, row).await?)))
}

#[derive(Deserialize)]
struct ListQuery {
    cursor: Option<String>,
    limit: Option<usize>,
}

async fn list(
    State(state): State<AppState>,
    Query(q): Query<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = q.limit.unwrap_or(100).clamp(1, 1000);
    let rows = state.registry.store().sessions(q.cursor, limit).await?;
    let next_cursor =
        (rows.len() == limit).then(|| rows.last().map(|r| r.session_id.clone())).flatten();
    let mut items = Vec::with_capacity(rows.len());
    for row in rows {
        items.push(view(&state, row).await?);
    }
    Ok(Json(json!({"items": items, "nextCursor": next_cursor})))
}

async fn read(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let row = state
        .registry
        .store()
        .session(&id)
        .await?
        .ok_or_else(|| ApiError::session_not_found(&id))?;
    Ok(Json(view(&state, row).await?))
}

async fn status(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let row = state
        .registry
        .store()
        .session(&id)
        .await?
        .ok_or_else(|| ApiError::session_not_found(&id))?;
    let view = view(&state, row).await?;
    Ok(Json(json!({"sessionId": view.session_id, "status": view.status, "lastSeq": view.last_seq})))
}

async fn dispose(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let row = state
        .registry
        .store()
        .session(&id)
        .await?
        .ok_or_else(|| ApiError::session_not_found(&id))?;
    if !row.disposed {
        if let Ok(handle) = state.registry.get(&id) {
            handle
                .feed(Input::Cancel { cause: CancelCause::Disposed, keep_inbox: false }, None)
                .await?;
        }
        state.registry.store().dispose_session(&id, crate::session::now_ms()).await?;
        state.registry.remove(&id);
    }
    Ok((StatusCode::ACCEPTED, Json(json!({"accepted": true}))))
}

/// A stored row plus what the live session knows (status, log length, queue counts).
async fn view(state: &AppState, row: SessionRow) -> Result<SessionView, ApiError> {
    let (status, last_seq, queue) = match state.registry.get(&row.session_id) {
        Ok(handle) => {
            let view = handle.view();
            (view.status, view.next_seq as i64 - 1, view.queue)
        }
        Err(_) => {
            let last = state.registry.store().last_seq(&row.session_id).await?;
            (Status::Idle, last.map_or(-1, |s| s as i64), Vec::new())
        }
    };
    let count = |target| queue.iter().filter(|i| i.target == target).count();
    Ok(SessionView {
        session_id: row.session_id,
        status,
        last_seq,
        pending: json!({"nextTurn": count(Target::NextTurn), "nextStep": count(Target::NextStep)}),
        created_at: row.created_at,
        updated_at: row.updated_at,
        model: row.spec.get("model").and_then(Value::as_str).unwrap_or_default().to_owned(),
        disposed: row.disposed,
        parent_session_id: row.parent_session_id,
    })
}
