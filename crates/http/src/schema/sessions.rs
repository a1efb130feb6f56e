//! The OpenAPI schemas of the session types the API shows as they are (a goal, an owned run's
//! result, where a fork came from), whose crate `airlock-sessions` stays free of utoipa. These
//! types are their wire shape, with the same serde attributes, and only document it: the API
//! writes the real ones. Schemathesis and the `openapi_schemas` tests check that the two agree.

#![expect(dead_code, reason = "the types only document the sessions' JSON; none is built")]

use serde::Serialize;
use utoipa::ToSchema;

/// Where a goal stands.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Rounds run at idle (while armed).
    Active,
    /// Stopped by a cancel or a request; `resume` makes it active again.
    Paused,
    /// It cannot go on: see `blocked`.
    Blocked,
    /// Done.
    Complete,
}

/// Why a goal is blocked or paused.
#[derive(Serialize, ToSchema)]
pub struct GoalReason {
    /// Blocked: `round-limit`, or `model` when the model's `goal` tool blocked it. Paused:
    /// `request` (`POST …/goal/pause`), `cancel` (a cancel hit a round), `round-removed` or
    /// `round-replaced` (a queued round was removed or edited through the queue API).
    code: String,
    /// What stopped it, for a person.
    message: String,
}

/// A session's goal, as its last `goal/change` event says.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Goal {
    /// Fresh for each goal set.
    id: String,
    /// What the rounds work toward.
    objective: String,
    /// Where it stands.
    phase: Phase,
    /// Rounds allowed.
    max_rounds: u32,
    /// Rounds enqueued so far.
    rounds_started: u32,
    /// Goes up by one with every change.
    revision: u32,
    /// Set when `phase` is `blocked`.
    #[serde(skip_serializing_if = "Option::is_none")]
    blocked: Option<GoalReason>,
    /// Set when `phase` is `paused`.
    #[serde(skip_serializing_if = "Option::is_none")]
    paused: Option<GoalReason>,
    /// Set while an active goal's next round waits for its tenant's quota: `tenant-turns` (as
    /// many sessions run as the tenant may) or `tenant-rate`. The round starts once it fits.
    #[serde(skip_serializing_if = "Option::is_none")]
    waiting: Option<GoalReason>,
}

/// `RunResult`: what an owned interval produced.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// The session.
    session_id: String,
    /// The message that opened the interval.
    message_id: String,
    /// What the interval's events add up to.
    #[serde(flatten)]
    summary: Summary,
    /// The interval's first seq: the message's insert splice.
    first_seq: u64,
    /// The interval's last seq: the last event before whole-agent idle.
    last_seq: u64,
    /// Every log event `firstSeq..=lastSeq`, whatever input caused it.
    #[schema(schema_with = super::events_schema)]
    events: Vec<serde_json::Value>,
}

/// What the events of an interval add up to; it describes the interval, never one message.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Text of the last committed `assistant/message` (`""` if none, or if it was empty).
    final_response: String,
    /// The last `turn/end`'s reason kind (`completed`, `max-tokens`, `error`, ...; `null` if no
    /// turn ended).
    #[schema(schema_with = super::finish_reason_schema)]
    finish_reason: Option<String>,
    /// Token usage summed over the assistant messages that carried it: `{inputTokens,
    /// outputTokens, cacheReadTokens?, cacheWriteTokens?, reasoningTokens?}`; absent when the
    /// provider sent none.
    #[schema(schema_with = super::usage_schema)]
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<serde_json::Value>,
    /// When the last turn ended `paused`: why, as its `budget/exhausted` said (`{scope, budget,
    /// spent}`). The work waits in the queue until the budget is raised.
    #[schema(schema_with = super::paused_schema)]
    #[serde(skip_serializing_if = "Option::is_none")]
    paused: Option<serde_json::Value>,
}

/// Where a fork's log was copied from.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkedFrom {
    /// The source session.
    session_id: String,
    /// The seq of the last event copied.
    seq: u64,
}
