//! Goal continuation (`spec/semantics.md`, "Goal continuation"): a session may hold one goal, and
//! at whole-agent idle the driver enqueues the next round of work toward it as a followup.
//!
//! The goal lives only in the log, as `goal/change` events (a full snapshot, or a clear), which
//! the core numbers and otherwise ignores. [`Driver`] is the pure part: it folds those events,
//! decides the next round or the round limit at idle, and turns API and tool requests into
//! `goal/change` inputs. The session feeds what it returns and shows it the committed events.
//!
//! - A round is a `followup` whose source is `{kind: "goal", goalId, revision, round}`; the
//!   driver keeps its message id only to recognise it in the log, never to map it to a result.
//! - Human work already queued runs first: rounds are enqueued only at whole-agent idle.
//! - A cancel while a round is queued or running pauses the goal.
//! - Arming is process-local: a goal loaded from the log after a restart is disarmed until it
//!   is resumed.

use std::collections::BTreeMap;
use std::sync::Weak;

use airlock_core::{
    ContentBlock, Delivery, Event, EventData, HostEvent, Input, Message, Role, Source, ToolSpec,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::registry::Registry;
use crate::tools::{Tool, ToolContext, ToolFuture, ToolOutput};

/// Where a goal stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
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

/// Why a goal is blocked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Blocked {
    /// `round-limit`, or `model` when the model's `goal` tool blocked it.
    pub code: String,
    /// What stopped it.
    pub message: String,
}

/// A session's goal, as its last `goal/change` event says.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
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
    pub blocked: Option<Blocked>,
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
#[derive(Debug, PartialEq, thiserror::Error)]
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
    /// The request itself is malformed.
    #[error("{0}")]
    Invalid(String),
}

/// A round the driver enqueued, until its turn ends.
#[derive(Clone, Debug, PartialEq)]
struct Round {
    message_id: String,
    /// A turn entered it.
    admitted: bool,
}

/// The goal of one session and the process-local state that drives it.
#[derive(Debug, Default)]
pub struct Driver {
    goal: Option<Goal>,
    armed: bool,
    round: Option<Round>,
    /// A cancel hit a round since the driver last looked.
    cancelled: bool,
}

impl Driver {
    /// The goal folded from a session's log: loaded, but disarmed until resumed.
    pub fn from_log(events: &[String]) -> Driver {
        let mut driver = Driver::default();
        for json in events.iter().filter(|json| json.contains("goal/change")) {
            if let Ok(Some(event)) = Event::parse(json) {
                driver.observe(&event);
            }
        }
        driver
    }

    /// The goal, if any.
    pub fn goal(&self) -> Option<&Goal> {
        self.goal.as_ref()
    }

    /// Whether rounds run in this process.
    pub fn armed(&self) -> bool {
        self.armed
    }

    /// Folds a committed event.
    pub fn observe(&mut self, event: &Event) {
        match &event.data {
            EventData::GoalChange(data) => {
                #[derive(Deserialize)]
                struct Change {
                    goal: Option<Goal>,
                }
                self.goal = serde_json::from_str::<Change>(data.get()).ok().and_then(|c| c.goal);
                if !self.goal.as_ref().is_some_and(|g| g.phase == Phase::Active) {
                    self.armed = false;
                }
            }
            EventData::UserMessage(message) => {
                if let Some(round) = &mut self.round
                    && round.message_id == message.id
                {
                    round.admitted = true;
                }
            }
            EventData::TurnEnd(_) if self.round.as_ref().is_some_and(|r| r.admitted) => {
                self.round = None;
            }
            _ => {}
        }
    }

    /// Notes a cancel, before the core sees it: a round queued or running then pauses the goal.
    pub fn cancelled(&mut self) {
        if self.round.take().is_some() {
            self.cancelled = true;
        }
    }

    /// Forgets a round whose inputs were not committed.
    pub fn abandon_round(&mut self) {
        self.round = None;
    }

    /// What to feed now that the agent is `idle` (or not): a pause after a cancelled round, the
    /// next round, or the round limit. Empty when there is nothing to do.
    pub fn next(&mut self, idle: bool, round_id: impl FnOnce() -> String) -> Vec<Input> {
        let cancelled = std::mem::take(&mut self.cancelled);
        let Some(goal) = self.goal.clone().filter(|g| g.phase == Phase::Active) else {
            return Vec::new();
        };
        if cancelled {
            return vec![change(Goal { phase: Phase::Paused, ..bump(goal) })];
        }
        if !idle || !self.armed || self.round.is_some() {
            return Vec::new();
        }
        if goal.rounds_started >= goal.max_rounds {
            let message = format!("all {} rounds ran without completing the goal", goal.max_rounds);
            let blocked = Blocked { code: "round-limit".into(), message };
            return vec![change(Goal {
                phase: Phase::Blocked,
                blocked: Some(blocked),
                ..bump(goal)
            })];
        }
        let goal = Goal { rounds_started: goal.rounds_started + 1, ..bump(goal) };
        let message = round_message(&goal, round_id());
        self.round = Some(Round { message_id: message.id.clone(), admitted: false });
        vec![change(goal), Delivery::Followup.send(message)]
    }

    /// The input a request turns into (a `goal/change`), arming or disarming as it says.
    pub fn apply(
        &mut self,
        op: GoalOp,
        goal_id: impl FnOnce() -> String,
    ) -> Result<Input, GoalError> {
        let current = self.goal.clone();
        let wrong = |goal: &Goal, hint| GoalError::Phase { phase: goal.phase, hint };
        let input = match op {
            GoalOp::Set { objective, max_rounds } => {
                if objective.trim().is_empty() {
                    return Err(GoalError::Invalid(
                        "objective is empty; say what the goal is".into(),
                    ));
                }
                if max_rounds == 0 {
                    return Err(GoalError::Invalid("maxRounds must be at least 1".into()));
                }
                let goal = Goal {
                    id: goal_id(),
                    objective,
                    phase: Phase::Active,
                    max_rounds,
                    rounds_started: 0,
                    revision: current.map_or(1, |g| g.revision + 1),
                    blocked: None,
                };
                self.armed = true;
                self.round = None;
                change(goal)
            }
            GoalOp::Clear => {
                let goal = current.ok_or(GoalError::NoGoal)?;
                self.round = None;
                Input::Log(HostEvent::GoalChange(
                    json!({"cleared": true, "goalId": goal.id}).to_string(),
                ))
            }
            op => {
                let goal = current.ok_or(GoalError::NoGoal)?;
                let (phase, blocked) = match (op, goal.phase) {
                    (GoalOp::Pause, Phase::Active | Phase::Paused) => (Phase::Paused, None),
                    (GoalOp::Pause, _) => {
                        return Err(wrong(&goal, "only an active goal can be paused"));
                    }
                    (GoalOp::Resume, Phase::Active | Phase::Paused) => {
                        self.armed = true;
                        (Phase::Active, None)
                    }
                    (GoalOp::Resume, _) => {
                        return Err(wrong(&goal, "set a new goal with PUT to start over"));
                    }
                    (GoalOp::Complete, Phase::Complete) => {
                        return Err(wrong(&goal, "it is done already"));
                    }
                    (GoalOp::Complete, _) => (Phase::Complete, None),
                    (GoalOp::Block { reason }, Phase::Active | Phase::Paused) => {
                        (Phase::Blocked, Some(Blocked { code: "model".into(), message: reason }))
                    }
                    (GoalOp::Block { .. }, _) => {
                        return Err(wrong(&goal, "only an active goal can be blocked"));
                    }
                    (GoalOp::Set { .. } | GoalOp::Clear, _) => unreachable!("handled above"),
                };
                if phase != Phase::Active {
                    self.round = None;
                }
                change(Goal { phase, blocked, ..bump(goal) })
            }
        };
        Ok(input)
    }
}

/// The goal with its next revision.
fn bump(goal: Goal) -> Goal {
    Goal { revision: goal.revision + 1, ..goal }
}

/// A `goal/change` with the full snapshot.
fn change(goal: Goal) -> Input {
    Input::Log(HostEvent::GoalChange(json!({"goal": goal}).to_string()))
}

/// The followup of one round.
fn round_message(goal: &Goal, id: String) -> Message {
    let text = format!(
        "Goal: {}\nRound: {}/{}\nWork toward the goal. When it is achieved, call the `goal` tool \
         with {{\"status\": \"complete\"}}; if it cannot be achieved, call it with \
         {{\"status\": \"blocked\", \"reason\": \"...\"}}.",
        goal.objective, goal.rounds_started, goal.max_rounds
    );
    let details = BTreeMap::from([
        ("goalId".to_owned(), Value::from(goal.id.clone())),
        ("revision".to_owned(), Value::from(goal.revision)),
        ("round".to_owned(), Value::from(goal.rounds_started)),
    ]);
    Message {
        id,
        role: Role::User,
        content: vec![ContentBlock::Text { text }],
        source: Source { kind: "goal".into(), details },
    }
}

/// The `goal` model tool: ends the session's goal as complete or blocked.
pub struct GoalTool {
    registry: Weak<Registry>,
}

impl GoalTool {
    /// The tool, for the registry it belongs to.
    pub fn new(registry: Weak<Registry>) -> GoalTool {
        GoalTool { registry }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolArguments {
    status: ToolStatus,
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum ToolStatus {
    Complete,
    Blocked,
}

impl Tool for GoalTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "goal".into(),
            description: "Ends the session's goal: status \"complete\" when it is achieved, \
                \"blocked\" (with a reason) when it cannot be. No more goal rounds follow."
                .into(),
            parameters: r#"{"type":"object","properties":{"status":{"type":"string","enum":["complete","blocked"]},"reason":{"type":"string","description":"Why it is blocked"}},"required":["status"]}"#.into(),
            parallel_safe: false,
        }
    }

    fn call(&self, context: ToolContext, arguments: &str) -> ToolFuture {
        let registry = self.registry.clone();
        let usage = r#"goal takes {"status": "complete"|"blocked", "reason"?: string}"#;
        let args = ToolOutput::arguments::<ToolArguments>(arguments, usage);
        Box::pin(async move {
            let args = match args {
                Ok(args) => args,
                Err(bad) => return bad,
            };
            let op = match args.status {
                ToolStatus::Complete => GoalOp::Complete,
                ToolStatus::Blocked => GoalOp::Block {
                    reason: args.reason.unwrap_or_else(|| "the model gave no reason".into()),
                },
            };
            let handle = match registry.upgrade().map(|r| r.get(&context.session_id)) {
                Some(Ok(handle)) => handle,
                _ => return ToolOutput::error("FAILED", "the session is shutting down"),
            };
            match handle.change_goal(op).await {
                Ok(Some((goal, _))) => ToolOutput::text(format!(
                    "The goal is now {}.",
                    serde_json::to_value(goal.phase).unwrap_or_default().as_str().unwrap_or("?")
                )),
                Ok(None) => ToolOutput::error("FAILED", "the goal was cleared"),
                Err(error) => ToolOutput::error("DENIED", error.to_string()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logged(input: &Input, seq: u64) -> Event {
        let Input::Log(HostEvent::GoalChange(data)) = input else { panic!("not a goal/change") };
        let json = format!(r#"{{"type":"goal/change","seq":{seq},"time":0,"data":{data}}}"#);
        Event::parse(&json).unwrap().unwrap()
    }

    fn set(driver: &mut Driver, max_rounds: u32) {
        let op = GoalOp::Set { objective: "ship it".into(), max_rounds };
        let input = driver.apply(op, || "g1".into()).unwrap();
        driver.observe(&logged(&input, 0));
    }

    #[test]
    fn a_round_waits_for_idle_and_for_the_previous_round() {
        let mut driver = Driver::default();
        set(&mut driver, 3);
        assert!(driver.next(false, || "r1".into()).is_empty(), "not while running");
        let inputs = driver.next(true, || "r1".into());
        assert_eq!(inputs.len(), 2, "the snapshot, then the round");
        driver.observe(&logged(&inputs[0], 1));
        assert_eq!(driver.goal().unwrap().rounds_started, 1);
        assert!(driver.next(true, || "r2".into()).is_empty(), "round 1 has not run yet");
    }

    #[test]
    fn a_goal_loaded_from_the_log_is_disarmed() {
        let mut live = Driver::default();
        let input = live.apply(GoalOp::Set { objective: "x".into(), max_rounds: 2 }, || "g".into());
        let Input::Log(HostEvent::GoalChange(data)) = input.unwrap() else { unreachable!() };
        let log = [format!(r#"{{"type":"goal/change","seq":0,"time":0,"data":{data}}}"#)];
        let mut loaded = Driver::from_log(&log);
        assert_eq!(loaded.goal().unwrap().phase, Phase::Active);
        assert!(!loaded.armed());
        assert!(loaded.next(true, || "r".into()).is_empty());
    }

    #[test]
    fn requests_that_do_not_fit_the_phase_say_what_to_do() {
        let mut driver = Driver::default();
        assert_eq!(driver.apply(GoalOp::Pause, String::new), Err(GoalError::NoGoal));
        set(&mut driver, 1);
        let done = driver.apply(GoalOp::Complete, String::new).unwrap();
        driver.observe(&logged(&done, 1));
        let error = driver.apply(GoalOp::Resume, String::new).unwrap_err();
        assert!(error.to_string().contains("set a new goal"), "{error}");
        let zero = GoalOp::Set { objective: "y".into(), max_rounds: 0 };
        assert!(matches!(driver.apply(zero, String::new), Err(GoalError::Invalid(_))));
    }
}
