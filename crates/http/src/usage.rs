//! `/v1/sessions/{id}/usage` and `/v1/usage`: what sessions spent, in tokens and dollars.

use axum::extract::{Path, State};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::responses::{NoSession, StorageFailed};
use super::{Answer, ApiError, AppState, Caller, ErrorBody, QueryParams, SessionId};
use airlock_sessions::{ModelSpending, Spending, Tokens};

/// `/v1/sessions/{id}/usage` and `/v1/usage` (paths in the annotations).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(session_usage)).routes(routes!(tenant_usage))
}

/// Token counts, summed.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct TokensView {
    /// Every prompt token, those read from or written to a cache included.
    input_tokens: u64,
    /// Completion tokens, reasoning included.
    output_tokens: u64,
    /// Prompt tokens served from a cache.
    cache_read_tokens: u64,
    /// Prompt tokens written to a cache.
    cache_write_tokens: u64,
    /// Completion tokens spent reasoning.
    reasoning_tokens: u64,
}

impl From<Tokens> for TokensView {
    fn from(t: Tokens) -> TokensView {
        TokensView {
            input_tokens: t.input_tokens,
            output_tokens: t.output_tokens,
            cache_read_tokens: t.cache_read_tokens,
            cache_write_tokens: t.cache_write_tokens,
            reasoning_tokens: t.reasoning_tokens,
        }
    }
}

/// What some sessions spent.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct UsageView {
    /// Every response's tokens, summed.
    usage: TokensView,
    /// What the responses of priced models cost, in US dollars.
    cost_usd: f64,
    /// Some of `costUsd` comes from the gateway's default prices for well-known models (list
    /// prices when it was built), not from `[models."NAME"]` prices in its settings.
    estimate: bool,
    /// Responses of models without a price: `costUsd` leaves them out.
    unpriced_responses: u64,
    /// By model; in a gateway-wide sum (an admin key's), by tenant and model.
    models: Vec<ModelUsageView>,
}

/// What one model's responses spent.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ModelUsageView {
    /// The tenant, in a gateway-wide sum (absent for sessions made without a key).
    #[serde(skip_serializing_if = "Option::is_none")]
    tenant: Option<String>,
    /// `demo`, `openai`, `deepseek`, `anthropic`.
    provider: String,
    /// The model, as the provider names it.
    model: String,
    /// How many responses.
    responses: u64,
    usage: TokensView,
    /// Their cost in US dollars; absent when the model has no price.
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_usd: Option<f64>,
    /// The price is the gateway's default for a well-known model.
    estimate: bool,
}

impl From<Spending> for UsageView {
    fn from(s: Spending) -> UsageView {
        let model = |m: ModelSpending| ModelUsageView {
            tenant: m.usage.tenant,
            provider: m.usage.provider,
            model: m.usage.model,
            responses: m.usage.responses,
            usage: m.usage.tokens.into(),
            cost_usd: m.cost_usd,
            estimate: m.estimate,
        };
        UsageView {
            usage: s.tokens.into(),
            cost_usd: s.cost_usd,
            estimate: s.estimate,
            unpriced_responses: s.unpriced_responses,
            models: s.models.into_iter().map(model).collect(),
        }
    }
}

/// What a session's own responses spent: every step's and every compaction summary's (a fork's
/// since it was forked; its subagents' are theirs).
#[utoipa::path(
    get, path = "/v1/sessions/{id}/usage", operation_id = "getSessionUsage", tag = "usage",
    params(SessionId),
    responses(
        (status = 200, description = "Its usage and cost", body = UsageView),
        NoSession, StorageFailed,
    )
)]
async fn session_usage(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Answer<Json<UsageView>> {
    Ok(Json(state.sessions.usage(&id).await?.into()))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct UsageQuery {
    /// Count responses logged at or after this time, in milliseconds since the Unix epoch
    /// (default 0: all).
    #[param(minimum = 0)]
    since: Option<i64>,
}

/// What the responses since `since` of the key's tenant's sessions spent (subagents' and
/// disposed sessions' included); an admin key's, or a gateway without keys, every tenant's.
#[utoipa::path(
    get, path = "/v1/usage", operation_id = "getUsage", tag = "usage",
    params(UsageQuery),
    responses(
        (status = 200, description = "The usage and cost", body = UsageView),
        (status = 400, description = "`bad-request`: `since` is not a whole number of 0 or more", body = ErrorBody),
        StorageFailed,
    )
)]
async fn tenant_usage(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    QueryParams(q): QueryParams<UsageQuery>,
) -> Answer<Json<UsageView>> {
    let since = u64::try_from(q.since.unwrap_or(0)).map_err(|_| {
        ApiError::bad_request("since", "`since` is a time in ms since the epoch: 0 or more")
    })?;
    let spending = state.sessions.tenant_usage(caller.only(), since).await?;
    Ok(Json(spending.into()))
}
