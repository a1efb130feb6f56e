//! `/v1/sessions/{id}/budget`: what a session may spend, what it spent, and whether it paused
//! there; raising the budget resumes it where it stopped.

use axum::Json;
use axum::extract::{Path, State};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::error::RequiredJsonBody;
use super::responses::{BodyRefused, Disposed, Limited, NoSession, SessionFailed};
use super::{Answer, AppState, SessionId, fields};
use airlock_sessions::{Budget, BudgetState};

/// The budget routes (paths in the annotations).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(read, set))
}

/// What a session may spend; a limit left out (or `null`) is no limit. A step that would start
/// with either limit reached does not start: the session pauses.
#[derive(Clone, Copy, Debug, Default, Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct BudgetBody {
    /// Prompt tokens (cached ones included) plus completion tokens of its model responses,
    /// compaction summaries included.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 9007199254740991.0)]
    tokens: Option<u64>,
    /// Their cost in US dollars, by the gateway's prices (`GET …/usage` shows the same cost).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0)]
    cost_usd: Option<f64>,
}

/// Only from a JSON object: serde would take a struct from an array too (`[null, null]`).
impl<'de> Deserialize<'de> for BudgetBody {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<BudgetBody, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct Fields {
            #[serde(default, deserialize_with = "fields::whole")]
            tokens: Option<u64>,
            #[serde(default)]
            cost_usd: Option<f64>,
        }
        let value = Value::deserialize(deserializer)?;
        if !value.is_object() {
            return Err(D::Error::custom("a budget is a JSON object: {tokens?, costUsd?}"));
        }
        let Fields { tokens, cost_usd } = serde_path_to_error::deserialize(value)
            .map_err(|e| D::Error::custom(format_args!("{}: {}", e.path(), e.inner())))?;
        Ok(BudgetBody { tokens, cost_usd })
    }
}

impl From<BudgetBody> for Budget {
    fn from(body: BudgetBody) -> Budget {
        Budget { tokens: body.tokens, cost_usd: body.cost_usd }
    }
}

impl From<Budget> for BudgetBody {
    fn from(budget: Budget) -> BudgetBody {
        BudgetBody { tokens: budget.tokens, cost_usd: budget.cost_usd }
    }
}

/// What a session spent.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct SpentView {
    /// Prompt plus completion tokens.
    tokens: u64,
    /// Their cost in US dollars, for the models that have a price.
    cost_usd: f64,
}

/// A session's budget, what it spent, and whether it paused at the budget.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct BudgetView {
    /// `null`: no budget.
    budget: Option<BudgetBody>,
    spent: SpentView,
    /// It paused at its budget: messages are taken and queued, and nothing runs until the
    /// budget is raised.
    paused: bool,
}

impl From<BudgetState> for BudgetView {
    fn from(state: BudgetState) -> BudgetView {
        let spent = SpentView { tokens: state.spent.tokens, cost_usd: state.spent.cost_usd };
        BudgetView { budget: state.budget.map(Into::into), spent, paused: state.paused }
    }
}

/// The session's budget, what it spent and whether it paused there.
#[utoipa::path(
    get, path = "/v1/sessions/{id}/budget", operation_id = "getBudget", tag = "usage",
    params(SessionId),
    responses(
        (status = 200, description = "Its budget", body = BudgetView),
        NoSession, Disposed, SessionFailed,
    )
)]
async fn read(State(state): State<AppState>, Path(id): Path<String>) -> Answer<Json<BudgetView>> {
    Ok(Json(state.sessions.budget(&id).await?.into()))
}

/// Replaces the session's budget whole (`{}`: none). A session paused at its budget resumes
/// where it stopped when the new budget is not spent (a `budget/resumed` event); otherwise it
/// stays paused.
#[utoipa::path(
    patch, path = "/v1/sessions/{id}/budget", operation_id = "setBudget", tag = "usage",
    params(SessionId),
    request_body = BudgetBody,
    responses(
        (status = 200, description = "The budget after the change", body = BudgetView),
        BodyRefused, NoSession, Disposed, Limited, SessionFailed,
    )
)]
async fn set(
    State(state): State<AppState>,
    Path(id): Path<String>,
    RequiredJsonBody(body): RequiredJsonBody<BudgetBody>,
) -> Answer<Json<BudgetView>> {
    let budget = (body.tokens.is_some() || body.cost_usd.is_some()).then(|| body.into());
    Ok(Json(state.sessions.set_budget(&id, budget).await?.into()))
}
