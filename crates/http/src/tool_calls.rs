//! A person in the loop (`docs/http-api.md`): the calls that wait for an approval or for the
//! client's result, and their answers.

use airlock_core::{CallAnswer, WaitKind, WaitingCall};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::fields::Content;
use super::responses::{
    BodyRefused, Disposed, NoSession, NotWaiting, SessionFailed, StorageFailed,
};
use super::sessions::Accepted;
use super::{Answer, AppState, Caller, ErrorBody, JsonBody, QueryParams, SessionId};

/// `/v1/sessions/{id}/tool-calls` and `…/tool-calls/{call_id}/approve|deny|result` (paths in
/// the annotations).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(approve))
        .routes(routes!(deny))
        .routes(routes!(result))
}

/// The `{id}` and `{call_id}` of a call's routes.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[expect(
    dead_code,
    reason = "it only documents the parameters; handlers take `Path<(String, String)>`"
)]
struct CallPath {
    /// The session id.
    id: String,
    /// The model's call id, from its `tool/call` event.
    call_id: String,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListQuery {
    /// `waiting` (the default): the calls that wait for an answer now.
    #[param(inline)]
    #[allow(dead_code, reason = "one state so far: it is checked, not read")]
    state: Option<CallState>,
}

/// Which calls are listed.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
enum CallState {
    /// They wait for an answer now.
    Waiting,
}

/// A call that waits.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct WaitingView {
    call_id: String,
    name: String,
    /// The raw JSON text the model produced.
    arguments: String,
    /// `approval`: a person approves or denies it; `client`: the client posts its result.
    #[schema(value_type = String, pattern = "^(approval|client)$")]
    kind: WaitKind,
    /// When it started waiting (epoch ms).
    since: u64,
}

/// The calls that wait, in the order the model asked for them.
#[derive(Serialize, ToSchema)]
struct WaitingList {
    items: Vec<WaitingView>,
}

/// Lists the calls of the running step that wait for a person's approval or the client's
/// result.
#[utoipa::path(
    get, path = "/v1/sessions/{id}/tool-calls", operation_id = "listToolCalls", tag = "input",
    params(SessionId, ListQuery),
    responses(
        (status = 200, description = "The waiting calls", body = WaitingList),
        (status = 400, description = "`bad-request`: `state` is not `waiting` (the field is named)", body = ErrorBody),
        NoSession, StorageFailed,
    )
)]
async fn list(
    State(state): State<AppState>,
    Path(id): Path<String>,
    QueryParams(_): QueryParams<ListQuery>,
) -> Answer<Json<WaitingList>> {
    let items = state
        .sessions
        .waiting(&id)
        .await?
        .into_iter()
        .map(|WaitingCall { call_id, name, arguments, kind, since }| WaitingView {
            call_id,
            name,
            arguments,
            kind,
            since,
        })
        .collect();
    Ok(Json(WaitingList { items }))
}

/// How the call is to run.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ApproveBody {
    /// Run it with these arguments instead of the model's (a JSON object, as the tool's
    /// parameters say). Logged with the approval; the call's result tells the model.
    #[schema(value_type = Option<Object>)]
    arguments: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Approves a call that waits for a person: it runs now, with the model's arguments or, when
/// the body gives `arguments`, with those.
#[utoipa::path(
    post, path = "/v1/sessions/{id}/tool-calls/{call_id}/approve", operation_id = "approveToolCall",
    tag = "input", params(CallPath),
    request_body(content = Option<ApproveBody>, description = "Optional: no body counts as `{}`."),
    responses(
        (status = 202, description = "Durable: `tool/approval approved` is logged and the call runs", body = Accepted),
        NotWaiting, BodyRefused, Disposed, SessionFailed,
    )
)]
async fn approve(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path((id, call_id)): Path<(String, String)>,
    JsonBody(ApproveBody { arguments }): JsonBody<ApproveBody>,
) -> Answer<impl IntoResponse> {
    let arguments = arguments.map(|arguments| serde_json::Value::Object(arguments).to_string());
    let answer = CallAnswer::Approve { by: caller.owner(), arguments };
    answer_call(&state, &id, call_id, answer).await
}

/// Why the call must not run.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct DenyBody {
    /// Shown to the model with the error `DENIED_BY_USER`.
    reason: Option<String>,
}

/// Denies a call that waits for a person: it does not run, and the model sees `DENIED_BY_USER`
/// with the reason.
#[utoipa::path(
    post, path = "/v1/sessions/{id}/tool-calls/{call_id}/deny", operation_id = "denyToolCall",
    tag = "input", params(CallPath),
    request_body(content = Option<DenyBody>, description = "Optional: no body counts as `{}`."),
    responses(
        (status = 202, description = "Durable: `tool/approval denied` and the call's error result are logged", body = Accepted),
        NotWaiting, BodyRefused, Disposed, SessionFailed,
    )
)]
async fn deny(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path((id, call_id)): Path<(String, String)>,
    JsonBody(body): JsonBody<DenyBody>,
) -> Answer<impl IntoResponse> {
    let answer = CallAnswer::Deny { reason: body.reason, by: caller.owner() };
    answer_call(&state, &id, call_id, answer).await
}

/// A client tool's result.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ResultBody {
    content: Content,
    /// The tool failed: the model sees the content as an error (`CLIENT_TOOL_ERROR`).
    #[serde(default)]
    is_error: bool,
}

/// Posts the result of a client tool's call; the turn goes on with it.
#[utoipa::path(
    post, path = "/v1/sessions/{id}/tool-calls/{call_id}/result", operation_id = "postToolResult",
    tag = "input", params(CallPath), request_body = ResultBody,
    responses(
        (status = 202, description = "Durable: the call's `tool/result` is logged", body = Accepted),
        NotWaiting, BodyRefused, Disposed, SessionFailed,
    )
)]
async fn result(
    State(state): State<AppState>,
    Path((id, call_id)): Path<(String, String)>,
    JsonBody(body): JsonBody<ResultBody>,
) -> Answer<impl IntoResponse> {
    let answer = CallAnswer::Result { content: body.content.blocks(), is_error: body.is_error };
    answer_call(&state, &id, call_id, answer).await
}

/// Feeds the answer; a refusal is 404 for a call the log never had, 409 `not-waiting` for one
/// that waits for no such answer (answered already, or waiting for the other kind).
async fn answer_call(
    state: &AppState,
    id: &str,
    call_id: String,
    answer: CallAnswer,
) -> Answer<(StatusCode, Json<Accepted>)> {
    state.sessions.answer(id, &call_id, answer).await?;
    Ok((StatusCode::ACCEPTED, Json(Accepted { accepted: true })))
}
