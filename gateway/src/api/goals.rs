//! `/v1/sessions/{id}/goal`: set, read, pause, resume, complete and clear a session's goal (see
//! [`crate::goal`]). Every change is a durable `goal/change` event before it is answered.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{ApiError, AppState, ErrorBody, JsonBody};
use crate::goal::{Goal, GoalError, GoalOp};
use crate::session::GoalChangeError;

/// The goal routes (paths in the annotations).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(read, set, clear))
        .routes(routes!(pause))
        .routes(routes!(resume))
        .routes(routes!(complete))
}

/// A new goal.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SetBody {
    /// What the rounds work toward.
    objective: String,
    /// Rounds allowed before the goal is `blocked {code: "round-limit"}`; 10 when absent.
    max_rounds: Option<u32>,
}

/// A goal as the API shows it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalView {
    #[serde(flatten)]
    goal: Goal,
    /// Rounds run in this process; a goal loaded after a restart is disarmed until resumed.
    armed: bool,
}

impl GoalView {
    /// The view of a goal and its arming.
    pub fn of((goal, armed): (Goal, bool)) -> GoalView {
        GoalView { goal, armed }
    }
}

/// Sets the session's goal, replacing any other: active and armed, rounds start at the next
/// whole-agent idle.
#[utoipa::path(
    put,
    path = "/v1/sessions/{id}/goal",
    operation_id = "setGoal",
    tag = "goals",
    params(("id" = String, Path, description = "The session id")),
    request_body = SetBody,
    responses(
        (status = 200, description = "The new goal", body = GoalView),
        (status = 400, description = "`bad-request`: details name the field", body = ErrorBody),
        (status = 404, description = "`session-not-found`", body = ErrorBody),
        (status = 409, description = "`session-disposed`, or `child-session`: a continuable subagent runs no goal of its own", body = ErrorBody),
        (status = 503, description = "`storage-unavailable`", body = ErrorBody),
    )
)]
async fn set(
    State(state): State<AppState>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<SetBody>,
) -> Result<Json<GoalView>, ApiError> {
    let op = GoalOp::Set { objective: body.objective, max_rounds: body.max_rounds.unwrap_or(10) };
    change(&state, &id, op).await
}

/// The session's goal.
#[utoipa::path(
    get,
    path = "/v1/sessions/{id}/goal",
    operation_id = "getGoal",
    tag = "goals",
    params(("id" = String, Path, description = "The session id")),
    responses(
        (status = 200, description = "The goal", body = GoalView),
        (status = 404, description = "`session-not-found`, `goal-not-found`", body = ErrorBody),
        (status = 503, description = "`storage-unavailable`", body = ErrorBody),
    )
)]
async fn read(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<GoalView>, ApiError> {
    let handle = state.registry.resume(&id).await?;
    handle.view().goal.map(GoalView::of).map(Json).ok_or_else(|| goal_error(GoalError::NoGoal))
}

/// Stops goal rounds until `resume`.
#[utoipa::path(
    post,
    path = "/v1/sessions/{id}/goal/pause",
    operation_id = "pauseGoal",
    tag = "goals",
    params(("id" = String, Path, description = "The session id")),
    responses(
        (status = 200, description = "The paused goal", body = GoalView),
        (status = 404, description = "`session-not-found`, `goal-not-found`", body = ErrorBody),
        (status = 409, description = "`goal-conflict`: it is not active", body = ErrorBody),
        (status = 503, description = "`storage-unavailable`", body = ErrorBody),
    )
)]
async fn pause(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<GoalView>, ApiError> {
    change(&state, &id, GoalOp::Pause).await
}

/// Makes a paused (or disarmed) goal active and armed again.
#[utoipa::path(
    post,
    path = "/v1/sessions/{id}/goal/resume",
    operation_id = "resumeGoal",
    tag = "goals",
    params(("id" = String, Path, description = "The session id")),
    responses(
        (status = 200, description = "The active goal", body = GoalView),
        (status = 404, description = "`session-not-found`, `goal-not-found`", body = ErrorBody),
        (status = 409, description = "`goal-conflict`: it is blocked or complete; `child-session`: a continuable subagent runs no goal of its own", body = ErrorBody),
        (status = 503, description = "`storage-unavailable`", body = ErrorBody),
    )
)]
async fn resume(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<GoalView>, ApiError> {
    change(&state, &id, GoalOp::Resume).await
}

/// Marks the goal complete: no more rounds.
#[utoipa::path(
    post,
    path = "/v1/sessions/{id}/goal/complete",
    operation_id = "completeGoal",
    tag = "goals",
    params(("id" = String, Path, description = "The session id")),
    responses(
        (status = 200, description = "The completed goal", body = GoalView),
        (status = 404, description = "`session-not-found`, `goal-not-found`", body = ErrorBody),
        (status = 409, description = "`goal-conflict`: it is complete already", body = ErrorBody),
        (status = 503, description = "`storage-unavailable`", body = ErrorBody),
    )
)]
async fn complete(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<GoalView>, ApiError> {
    change(&state, &id, GoalOp::Complete).await
}

/// Removes the goal (a `goal/change {cleared: true, goalId}` event).
#[utoipa::path(
    delete,
    path = "/v1/sessions/{id}/goal",
    operation_id = "clearGoal",
    tag = "goals",
    params(("id" = String, Path, description = "The session id")),
    responses(
        (status = 204, description = "Cleared"),
        (status = 404, description = "`session-not-found`, `goal-not-found`", body = ErrorBody),
        (status = 503, description = "`storage-unavailable`", body = ErrorBody),
    )
)]
async fn clear(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let handle = state.registry.resume(&id).await?;
    handle.change_goal(GoalOp::Clear).await.map_err(change_error)?;
    Ok(StatusCode::NO_CONTENT)
}

async fn change(state: &AppState, id: &str, op: GoalOp) -> Result<Json<GoalView>, ApiError> {
    let handle = state.registry.resume(id).await?;
    let goal = handle.change_goal(op).await.map_err(change_error)?;
    goal.map(GoalView::of).map(Json).ok_or_else(|| goal_error(GoalError::NoGoal))
}

fn change_error(error: GoalChangeError) -> ApiError {
    match error {
        GoalChangeError::Refused(error) => goal_error(error),
        GoalChangeError::ChildSession { ref parent, .. } => {
            let details = serde_json::json!({"parentSessionId": parent});
            ApiError::new(StatusCode::CONFLICT, "child-session", error.to_string()).details(details)
        }
        error => {
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "storage-unavailable", error.to_string())
        }
    }
}

fn goal_error(error: GoalError) -> ApiError {
    match &error {
        GoalError::NoGoal => {
            ApiError::new(StatusCode::NOT_FOUND, "goal-not-found", error.to_string())
        }
        GoalError::Phase { .. } => {
            ApiError::new(StatusCode::CONFLICT, "goal-conflict", error.to_string())
        }
        GoalError::Invalid(message) => {
            let field = if message.contains("maxRounds") { "maxRounds" } else { "objective" };
            ApiError::bad_request(field, message.clone())
        }
    }
}
