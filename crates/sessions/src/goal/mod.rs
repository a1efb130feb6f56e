//! Goal continuation (`docs/semantics.md`, "Goal continuation"): a session may hold one goal, and
//! at whole-agent idle the driver enqueues the next round of work toward it as a followup.
//!
//! The goal lives only in the log, as `goal/change` events (a full snapshot, or a clear), which
//! the core numbers and otherwise ignores. [`Driver`] is the pure part: it folds those events,
//! decides the next round or the round limit at idle, and turns API and tool requests into
//! `goal/change` inputs. The session feeds what it returns and shows it the committed events.
//!
//! - A round is a `followup` whose source is `{kind: "goal", goalId, revision, round}`; the
//!   driver keeps its message id only to recognise it in the log, never to map it to a result.
//! - Human work already queued runs first: rounds are enqueued only at whole-agent idle, and
//!   never while work parked by a cancel (or a failed turn) waits: a stop is not undone by the
//!   goal. Only a person's send, a set or a resume wakes parked work.
//! - A cancel while a round is queued or running pauses the goal and cancels the queued round;
//!   removing or editing a queued round through the queue API pauses it too, saying why.
//! - Arming is process-local: a goal loaded from the log after a restart is disarmed until it
//!   is resumed.

mod driver;

pub use driver::Driver;

use serde::{Deserialize, Serialize};

/// The most rounds a goal may have (`maxRounds`).
pub const MAX_ROUNDS: u32 = 1000;

/// Where a goal stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Rounds run at idle (while armed).
    Active,
    /// Stopped by a cancel or a request; `resume` makes it active again.
    Paused,
    /// It cannot go on: see [`Goal::blocked`].
    Blocked,
    /// Done.
    Complete,
}

/// Why a goal is blocked or paused.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GoalReason {
    /// Blocked: `round-limit`, or `model` when the model's `goal` tool blocked it. Paused:
    /// `request` (`POST …/goal/pause`), `cancel` (a cancel hit a round), `round-removed` or
    /// `round-replaced` (a queued round was removed or edited through the queue API).
    pub code: String,
    /// What stopped it, for a person.
    pub message: String,
}

impl GoalReason {
    /// A reason with this code, for a person.
    pub fn new(code: &str, message: impl Into<String>) -> GoalReason {
        GoalReason { code: code.into(), message: message.into() }
    }
}

/// A session's goal, as its last `goal/change` event says.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Goal {
    /// Fresh for each goal set.
    pub id: String,
    /// What the rounds work toward.
    pub objective: String,
    /// Where it stands.
    pub phase: Phase,
    /// Rounds allowed.
    pub max_rounds: u32,
    /// Rounds enqueued so far.
    pub rounds_started: u32,
    /// Goes up by one with every change.
    pub revision: u32,
    /// Set when `phase` is `blocked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<GoalReason>,
    /// Set when `phase` is `paused`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<GoalReason>,
    /// Set while an active goal's next round waits for its tenant's quota: `tenant-turns` (as
    /// many sessions run as the tenant may) or `tenant-rate`. The round starts once it fits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<GoalReason>,
}

/// A request to change the goal (from the HTTP API or the model's `goal` tool).
#[derive(Clone, Debug, PartialEq)]
pub enum GoalOp {
    /// Replace any goal with a fresh, active, armed one.
    Set {
        /// What to work toward.
        objective: String,
        /// Rounds allowed (at least 1).
        max_rounds: u32,
    },
    /// Stop enqueuing rounds.
    Pause,
    /// Make it active and armed again.
    Resume,
    /// Mark it done.
    Complete,
    /// Mark it blocked (the model's `goal` tool).
    Block {
        /// Why.
        reason: String,
    },
    /// Remove it.
    Clear,
}

/// Why a goal request was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum GoalError {
    /// There is no goal to change.
    #[error("the session has no goal; set one with PUT /v1/sessions/{{id}}/goal")]
    NoGoal,
    /// The goal is in a phase the request does not apply to.
    #[error("the goal is {phase:?}; {hint}")]
    Phase {
        /// Its phase.
        phase: Phase,
        /// What to do instead.
        hint: &'static str,
    },
    /// A goal set with an objective that is empty (or only white space).
    #[error("objective is empty; say what the goal is")]
    EmptyObjective,
    /// A goal set with `maxRounds` outside 1 to `MAX_ROUNDS` (1000).
    #[error("maxRounds must be 1 to {MAX_ROUNDS}, not {0}")]
    MaxRounds(u32),
}
