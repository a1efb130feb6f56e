//! `/v1/sessions`: create, list, read, change (metadata), dispose, status.

use airlock_core::{Status, Target};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::budget::BudgetBody;
use super::error::RequiredJsonBody;
use super::goals::GoalView;
use super::responses::{BodyRefused, Limited, NoSession, SessionFailed, StorageFailed};
use super::{
    Answer, ApiError, AppState, Caller, ErrorBody, JsonBody, QueryParams, SessionId, fields,
};
use crate::schema::status_schema;
use airlock_base::clock::fresh_id;
use airlock_providers::tools::{ClientTool, ToolChoice};
use airlock_sessions::{ForkedFrom, Overview, SessionSpec};
use airlock_store::SessionRow;

/// `/v1/sessions`, `/v1/sessions/{id}` and `/v1/sessions/{id}/status` (paths in the annotations).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(read, update, dispose))
        .routes(routes!(status))
        .routes(routes!(children))
}

/// The new session; every field is optional.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct CreateBody {
    /// 1 to 200 letters, digits, `.`, `_`, `:` or `-`, starting with a letter or digit; a fresh
    /// UUID when absent.
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$(?![\\s\\S])")]
    session_id: Option<String>,
    /// The model spec, e.g. `demo` or `openai:gpt-4o-mini`; the gateway's default when absent.
    model: Option<String>,
    /// The models a step fails over to, in order, when `model` keeps failing with an error that
    /// is not the request's fault (overload, 5xx, a timeout); at most 7. Absent: the gateway's
    /// settings for `model`; `[]`: none.
    #[schema(max_items = 7)]
    fallback: Option<Vec<String>>,
    /// The system prompt.
    system: Option<String>,
    /// The gateway tools the agent may call (all when absent): each a name, or `{name,
    /// approval}` where `approval: "always"` makes each call wait for a person.
    #[schema(value_type = Option<Vec<crate::schema::ToolChoice>>)]
    tools: Option<Vec<ToolChoice>>,
    /// Tools the client runs: a call waits for `POST …/tool-calls/{callId}/result`.
    #[schema(value_type = Option<Vec<crate::schema::ClientTool>>)]
    client_tools: Option<Vec<ClientTool>>,
    /// Anything the caller wants kept with the session (any JSON).
    #[schema(value_type = Option<serde_json::Value>)]
    metadata: Option<Value>,
    /// What it may spend: a step that would start with the budget spent pauses the session
    /// until `PATCH …/budget` raises it.
    budget: Option<BudgetBody>,
}

impl CreateBody {
    /// The session id asked for, and what the session is to be (the gateway's default model when
    /// it names none).
    pub(super) fn into_spec(self, state: &AppState) -> (Option<String>, SessionSpec) {
        let spec = SessionSpec {
            model: self.model.unwrap_or_else(|| state.sessions.default_model().to_owned()),
            fallback: self.fallback,
            system: self.system,
            tools: self.tools,
            client_tools: self.client_tools,
            max_tokens: None,
            budget: self.budget.map(Into::into),
            metadata: self.metadata,
            forked_from: None,
        };
        (self.session_id, spec)
    }
}

/// `Session` as the API shows it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct SessionView {
    session_id: String,
    #[schema(schema_with = status_schema)]
    status: Status,
    /// The seq of the last log event; -1 for an empty log.
    last_seq: i64,
    /// How many messages wait in each inbox list.
    pending: Pending,
    /// Milliseconds since the Unix epoch.
    created_at: u64,
    /// Milliseconds since the Unix epoch.
    updated_at: u64,
    model: String,
    /// The models its steps fail over to, when it was created with its own list (else the
    /// gateway's settings for `model` apply).
    #[serde(skip_serializing_if = "Option::is_none")]
    fallback: Option<Vec<String>>,
    /// Disposed: the log stays readable, input is refused with 409 `session-disposed`.
    disposed: bool,
    /// The session that spawned this one, for a subagent.
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_session_id: Option<String>,
    /// Its goal, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    goal: Option<GoalView>,
    /// For a fork: the session and seq its log was copied from.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::schema::ForkedFrom>)]
    forked_from: Option<ForkedFrom>,
    /// What it may spend, if it has a budget (`GET …/budget` says what it spent).
    #[serde(skip_serializing_if = "Option::is_none")]
    budget: Option<BudgetBody>,
    /// It paused at its budget: messages queue and nothing runs until the budget is raised.
    paused: bool,
    /// What it was created with as `metadata`; a subagent's is `{name}`, the name its parent's
    /// model gave it, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<serde_json::Value>)]
    metadata: Option<Value>,
}

/// Queue counts per inbox list.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct Pending {
    /// Followups waiting for a turn.
    next_turn: usize,
    /// Steering and context waiting for the next step.
    next_step: usize,
}

/// A page of sessions.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct SessionPage {
    items: Vec<SessionView>,
    /// Pass as `cursor` for the next page; `null` on the last one.
    next_cursor: Option<String>,
}

/// `GET /v1/sessions/{id}/status`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct StatusView {
    session_id: String,
    #[schema(schema_with = status_schema)]
    status: Status,
    /// The seq of the last log event; -1 for an empty log.
    last_seq: i64,
}

/// `{accepted: true}`: the request is durable and will take effect.
#[derive(Serialize, ToSchema)]
pub(super) struct Accepted {
    /// Always `true`.
    pub(super) accepted: bool,
}

/// Creates a session, or answers the existing one when the same `sessionId` comes with the same
/// fields.
#[utoipa::path(
    post, path = "/v1/sessions", operation_id = "createSession", tag = "sessions",
    request_body(
        content = Option<CreateBody>,
        description = "Optional: no body counts as `{}`."
    ),
    responses(
        (status = 201, description = "Created", body = SessionView),
        (status = 200, description = "It existed with the same fields", body = SessionView),
        (status = 409, description = "`session-conflict`: it exists with other fields", body = ErrorBody),
        BodyRefused, Limited, SessionFailed,
    )
)]
async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody<CreateBody>,
) -> Answer<impl IntoResponse> {
    let (session_id, spec) = body.into_spec(&state);
    let session_id = session_id.unwrap_or_else(fresh_id);
    let tenant = caller.owner();
    let (row, created) = state.sessions.create(session_id, spec.clone(), tenant.clone()).await?;
    let same = serde_json::from_value::<SessionSpec>(row.spec.clone()).ok() == Some(spec);
    // Another tenant's session is not named: the id is only taken.
    if !created && !(same && (caller.only().is_none() || row.tenant == tenant)) {
        return Err(ApiError::conflict(
            "session-conflict",
            "a session with this id exists with other fields; pick another sessionId",
        ));
    }
    let code = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((code, Json(view(&state, row).await?)))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListQuery {
    /// The `nextCursor` of the previous page.
    cursor: Option<String>,
    /// Sessions per page: 1 to 1000, default 100.
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u64>,
}

/// Lists sessions, a page at a time: the key's tenant's only, unless it is an admin key.
#[utoipa::path(
    get, path = "/v1/sessions", operation_id = "listSessions", tag = "sessions",
    params(ListQuery),
    responses(
        (status = 200, description = "A page of sessions", body = SessionPage),
        (status = 400, description = "`bad-request`: a query parameter does not fit (the field is named)", body = ErrorBody),
        StorageFailed,
    )
)]
async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    QueryParams(q): QueryParams<ListQuery>,
) -> Answer<Json<SessionPage>> {
    let limit = fields::page_limit(q.limit, 100, 1000)?;
    let rows = state.sessions.list(q.cursor, limit, caller.only()).await?;
    let next_cursor =
        (rows.len() == limit).then(|| rows.last().map(|r| r.session_id.clone())).flatten();
    let mut items = Vec::with_capacity(rows.len());
    for row in rows {
        items.push(view(&state, row).await?);
    }
    Ok(Json(SessionPage { items, next_cursor }))
}

/// Reads one session.
#[utoipa::path(
    get, path = "/v1/sessions/{id}", operation_id = "getSession", tag = "sessions",
    params(SessionId),
    responses(
        (status = 200, description = "The session", body = SessionView),
        NoSession, StorageFailed,
    )
)]
async fn read(State(state): State<AppState>, Path(id): Path<String>) -> Answer<impl IntoResponse> {
    let row = state.sessions.row(&id).await?;
    Ok(Json(view(&state, row).await?))
}

/// What `PATCH /v1/sessions/{id}` changes.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct UpdateBody {
    /// What the session keeps as `metadata` from now on, replacing what it kept: any JSON, `null`
    /// for nothing. The web page keeps a session's title there (`{"title": "…"}`).
    #[schema(value_type = serde_json::Value)]
    metadata: Value,
}

/// Changes what a session keeps as `metadata` (its title, say); nothing else about it changes.
/// A disposed session takes it too: it is no input.
#[utoipa::path(
    patch, path = "/v1/sessions/{id}", operation_id = "updateSession", tag = "sessions",
    params(SessionId),
    request_body = UpdateBody,
    responses(
        (status = 200, description = "The session after the change", body = SessionView),
        BodyRefused, NoSession, StorageFailed,
    )
)]
async fn update(
    State(state): State<AppState>,
    Path(id): Path<String>,
    RequiredJsonBody(body): RequiredJsonBody<UpdateBody>,
) -> Answer<impl IntoResponse> {
    let metadata = Some(body.metadata).filter(|metadata| !metadata.is_null());
    let row = state.sessions.set_metadata(&id, metadata).await?;
    Ok(Json(view(&state, row).await?))
}

/// A session's status and log length.
#[utoipa::path(
    get, path = "/v1/sessions/{id}/status", operation_id = "getSessionStatus", tag = "sessions",
    params(SessionId),
    responses(
        (status = 200, description = "Its status", body = StatusView),
        NoSession, StorageFailed,
    )
)]
async fn status(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<impl IntoResponse> {
    let row = state.sessions.row(&id).await?;
    let view = view(&state, row).await?;
    Ok(Json(StatusView {
        session_id: view.session_id,
        status: view.status,
        last_seq: view.last_seq,
    }))
}

/// The child sessions (subagents) of a session.
#[derive(Serialize, ToSchema)]
struct ChildList {
    /// Oldest first, each with its status.
    items: Vec<SessionView>,
}

/// Lists a session's child sessions (its subagents), oldest first, with their status.
#[utoipa::path(
    get, path = "/v1/sessions/{id}/children", operation_id = "listChildren", tag = "sessions",
    params(SessionId),
    responses(
        (status = 200, description = "Its children", body = ChildList),
        NoSession, StorageFailed,
    )
)]
async fn children(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<impl IntoResponse> {
    let mut items = Vec::new();
    for row in state.sessions.children(&id).await? {
        items.push(view(&state, row).await?);
    }
    Ok(Json(ChildList { items }))
}

/// Disposes a session: cancels it and clears its inbox (parked items too); its log stays readable
/// and later input is refused.
#[utoipa::path(
    delete, path = "/v1/sessions/{id}", operation_id = "disposeSession", tag = "sessions",
    params(SessionId),
    responses(
        (status = 202, description = "Disposed (also when it already was)", body = Accepted),
        NoSession, SessionFailed,
    )
)]
async fn dispose(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<impl IntoResponse> {
    state.sessions.dispose(&id).await?;
    Ok((StatusCode::ACCEPTED, Json(Accepted { accepted: true })))
}

/// A stored row plus what the live session knows (status, log length, queue counts).
pub(super) async fn view(state: &AppState, row: SessionRow) -> Answer<SessionView> {
    let Overview { row, spec, status, last_seq, queue, goal, paused } =
        state.sessions.overview(row).await?;
    let count = |target| queue.iter().filter(|i| i.target == target).count();
    Ok(SessionView {
        session_id: row.session_id,
        status,
        last_seq,
        pending: Pending { next_turn: count(Target::NextTurn), next_step: count(Target::NextStep) },
        created_at: row.created_at,
        updated_at: row.updated_at,
        model: spec.model,
        fallback: spec.fallback,
        disposed: row.disposed,
        parent_session_id: row.parent_session_id,
        goal: goal.map(GoalView::of),
        forked_from: spec.forked_from,
        budget: spec.budget.map(Into::into),
        paused,
        metadata: spec.metadata,
    })
}
