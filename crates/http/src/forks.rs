//! `POST /v1/sessions/{id}/fork` (`docs/http-api.md`): a new session that starts from another's
//! log.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::{Extension, Json};
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::responses::{BodyRefused, Limited, NoSession, StorageFailed};
use super::sessions::{SessionView, view};
use super::{Answer, AppState, Caller, ErrorBody, JsonBody, SessionId};
use airlock_base::clock::fresh_id;

/// `/v1/sessions/{id}/fork`.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(fork))
}

/// Where the fork starts.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ForkBody {
    /// The last event to copy; the source's last event when absent.
    #[serde(default, deserialize_with = "super::fields::whole")]
    #[schema(minimum = 0)]
    at_seq: Option<u64>,
    /// The fork's id (as for `POST /v1/sessions`); a fresh UUID when absent.
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$(?![\\s\\S])")]
    session_id: Option<String>,
}

/// Forks a session: a new session whose log is the source's events through `atSeq` (a turn open
/// there is closed as crash repair closes it, pending input is cancelled), then
/// `session/end-seed`. The source is unchanged.
#[utoipa::path(
    post, path = "/v1/sessions/{id}/fork", operation_id = "forkSession", tag = "sessions",
    params(SessionId),
    request_body(content = Option<ForkBody>, description = "Optional: no body counts as `{}`."),
    responses(
        (status = 201, description = "The fork, with `forkedFrom`", body = SessionView),
        (status = 409, description = "`seq-not-logged`: the source has no event at `atSeq` yet (or none at all); `session-conflict`: a session has the fork's `sessionId`", body = ErrorBody),
        BodyRefused, NoSession, Limited, StorageFailed,
    )
)]
async fn fork(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ForkBody>,
) -> Answer<impl IntoResponse> {
    let fork_id = body.session_id.unwrap_or_else(fresh_id);
    let row = state.sessions.fork(&id, body.at_seq, fork_id, caller.owner()).await?;
    Ok((StatusCode::CREATED, Json(view(&state, row).await?)))
}
