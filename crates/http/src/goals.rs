//! `/v1/sessions/{id}/goal`: set, read, pause, resume, complete and clear a session's goal (see
//! [`airlock_sessions::Goal`]). Every change is a durable `goal/change` event before it is answered.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::responses::{BodyRefused, Disposed, NoGoal, NoSession, SessionFailed, StorageFailed};
use super::{Answer, AppState, ErrorBody, JsonBody, SessionId, fields};
use airlock_sessions::{Goal, GoalError, GoalOp};

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
    /// What the rounds work toward: some text besides spaces, tabs and line breaks.
    #[schema(pattern = "[^ \t\n\r]")]
    objective: String,
    /// Rounds allowed before the goal is `blocked {code: "round-limit"}`; 10 when absent.
    #[serde(default, deserialize_with = "fields::whole")]
    #[schema(minimum = 1, maximum = 1000)]
    max_rounds: Option<u32>,
}

/// A goal as the API shows it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalView {
    #[serde(flatten)]
    #[schema(value_type = crate::schema::Goal)]
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
    put, path = "/v1/sessions/{id}/goal", operation_id = "setGoal", tag = "goals",
    params(SessionId),
    request_body = SetBody,
    responses(
        (status = 200, description = "The new goal", body = GoalView),
        (status = 409, description = "`session-disposed`, or `child-session`: a continuable subagent runs no goal of its own", body = ErrorBody),
        BodyRefused, NoSession, SessionFailed,
    )
)]
async fn set(
    State(state): State<AppState>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<SetBody>,
) -> Answer<Json<GoalView>> {
    let op = GoalOp::Set { objective: body.objective, max_rounds: body.max_rounds.unwrap_or(10) };
    change(&state, &id, op).await
}

/// The session's goal.
#[utoipa::path(
    get, path = "/v1/sessions/{id}/goal", operation_id = "getGoal", tag = "goals",
    params(SessionId),
    responses(
        (status = 200, description = "The goal", body = GoalView),
        NoGoal, Disposed, StorageFailed,
    )
)]
async fn read(State(state): State<AppState>, Path(id): Path<String>) -> Answer<Json<GoalView>> {
    state
        .sessions
        .goal(&id)
        .await?
        .map(GoalView::of)
        .map(Json)
        .ok_or_else(|| GoalError::NoGoal.into())
}

/// One goal transition, `POST …/goal/{pause,resume,complete}`: the three are alike but for the
/// request, what the answer is, and what a conflict means.
macro_rules! transition {
    ($(#[doc = $doc:tt])* $name:ident, $path:tt, $id:tt, $op:expr, $ok:tt, $conflict:tt) => {
        $(#[doc = $doc])*
        #[utoipa::path(
            post, path = $path, operation_id = $id, tag = "goals",
            params(SessionId),
            responses(
                (status = 200, description = $ok, body = GoalView),
                (status = 409, description = $conflict, body = ErrorBody),
                NoGoal, SessionFailed,
            )
        )]
        async fn $name(
            State(state): State<AppState>,
            Path(id): Path<String>,
        ) -> Answer<Json<GoalView>> {
            change(&state, &id, $op).await
        }
    };
}

transition!(
    /// Stops goal rounds until `resume`.
    pause, "/v1/sessions/{id}/goal/pause", "pauseGoal", GoalOp::Pause,
    "The paused goal", "`goal-conflict`: it is not active"
);

transition!(
    /// Makes a paused (or disarmed) goal active and armed again.
    resume, "/v1/sessions/{id}/goal/resume", "resumeGoal", GoalOp::Resume,
    "The active goal",
    "`goal-conflict`: it is blocked or complete; `child-session`: a continuable subagent runs no \
     goal of its own"
);

transition!(
    /// Marks the goal complete: no more rounds.
    complete, "/v1/sessions/{id}/goal/complete", "completeGoal", GoalOp::Complete,
    "The completed goal", "`goal-conflict`: it is complete already"
);

/// Removes the goal (a `goal/change {cleared: true, goalId}` event).
#[utoipa::path(
    delete, path = "/v1/sessions/{id}/goal", operation_id = "clearGoal", tag = "goals",
    params(SessionId),
    responses(
        (status = 204, description = "Cleared"),
        NoGoal, Disposed, SessionFailed,
    )
)]
async fn clear(State(state): State<AppState>, Path(id): Path<String>) -> Answer<impl IntoResponse> {
    state.sessions.change_goal(&id, GoalOp::Clear).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn change(state: &AppState, id: &str, op: GoalOp) -> Answer<Json<GoalView>> {
    let goal = state.sessions.change_goal(id, op).await?;
    goal.map(GoalView::of).map(Json).ok_or_else(|| GoalError::NoGoal.into())
}
