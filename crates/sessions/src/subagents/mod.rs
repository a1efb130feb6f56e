//! Subagents: the model tool `agent {name?, prompt}` runs a one-shot child session to
//! whole-agent idle and returns its result as the tool result.
//!
//! A child is an ordinary session whose row names its parent (`parentSessionId`); its events are
//! its own log. The caller owns the whole child lifecycle, so it may report a result: `output` is
//! the child's last non-empty assistant message, `stopReason` one of `completed`, `aborted`,
//! `error`, `max-tokens`, `refusal`. A child that fails is a result, not a tool error; only an
//! infrastructure fault (the child could not be created or run) is. Cancelling the parent
//! cancels the child (cause `parent`), and the call drains with the child's real result. The
//! parent's subscribers see `subagent.started` and `subagent.finished`.

mod continuable;
mod settlement;

pub use continuable::Continuable;
pub use settlement::Settlements;

use std::sync::{Arc, Weak};

use airlock_core::{
    CancelCause, ContentBlock, Delivery, Event, EventData, Input, Message, ToolSpec, TurnEndReason,
    text_of,
};
use serde::Deserialize;
use serde_json::json;

use crate::owned::{OwnError, OwnedRun, submit, summarize};
use crate::registry::{Registry, RegistryError};
use crate::session::{Notice, SessionError};
use airlock_base::clock::fresh_id;
use airlock_providers::tools::{Tool, ToolContext, ToolFuture, ToolOutput};

/// The `agent` tool.
pub struct AgentTool {
    registry: Weak<Registry>,
}

impl AgentTool {
    /// The tool, for the registry it belongs to.
    pub fn new(registry: Weak<Registry>) -> AgentTool {
        AgentTool { registry }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    #[serde(default)]
    name: Option<String>,
    prompt: String,
}

impl Tool for AgentTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "agent".into(),
            description: "Runs a subagent: a fresh session with the same model and tools is given \
                the prompt and works until it is done; its last answer comes back as \
                {childId, output, stopReason}."
                .into(),
            parameters: r#"{"type":"object","properties":{"name":{"type":"string","description":"A short label for the subagent"},"prompt":{"type":"string","description":"The task"}},"required":["prompt"]}"#.into(),
            parallel_safe: true,
            ..ToolSpec::default()
        }
    }

    fn call(&self, context: ToolContext, arguments: &str) -> ToolFuture {
        let registry = self.registry.clone();
        let usage = r#"agent takes {"prompt": string, "name"?: string}"#;
        let args = ToolOutput::arguments::<Arguments>(arguments, usage);
        Box::pin(async move {
            let args = match args {
                Ok(args) => args,
                Err(bad) => return bad,
            };
            let Some(registry) = registry.upgrade() else {
                return ToolOutput::error("SUBAGENT_FAILED", "the gateway is shutting down");
            };
            match run_child(&registry, context, args).await {
                Ok(output) | Err(output) => output,
            }
        })
    }
}

/// Creates the child, runs the prompt to idle, and reports the result. A child past a limit
/// (depth, working subagents, the tenant's quotas) is the error `LIMIT_EXCEEDED` naming it.
async fn run_child(
    registry: &Arc<Registry>,
    mut context: ToolContext,
    args: Arguments,
) -> Result<ToolOutput, ToolOutput> {
    let parent_id = context.session_id.clone();
    let parent = registry.get(&parent_id).map_err(failed)?;
    let child = registry.create_child(&parent_id, args.name.as_deref()).await.map_err(refused)?;
    let child_id = child.id().to_owned();
    let started =
        json!({"parentSessionId": parent_id, "childSessionId": child_id, "name": args.name});
    parent.announce(Notice::Subagent("subagent.started", Arc::from(started.to_string())));

    let mut prompt = Message::user(fresh_id(), vec![ContentBlock::Text { text: args.prompt }]);
    settlement::from_call(&mut prompt.source, &context);
    let mut run: OwnedRun =
        submit(&child, prompt, Delivery::Followup, None).await.map_err(|error| match error {
            OwnError::Refused(refusal) if refusal.limit.is_some() => {
                ToolOutput::limit_exceeded(refusal.message)
            }
            OwnError::Session(SessionError::Exceeded(exceeded)) => {
                ToolOutput::limit_exceeded(exceeded)
            }
            error => failed(error),
        })?;
    let cancel_child = async |child: &crate::actor::SessionHandle| {
        let cancel = Input::Cancel { cause: CancelCause::Parent, keep_inbox: false };
        child.feed(cancel, None).await.map(drop).map_err(failed)
    };
    if context.cancelled.borrow_and_update().is_some() {
        cancel_child(&child).await?; // cancelled while the call was being dispatched
    }
    let last_seq = loop {
        tokio::select! {
            last = run.last_seq() => break last.map_err(failed)?,
            changed = context.cancelled.changed() => {
                if changed.is_err() {
                    // The parent's run is over without a cancel: nothing more to watch.
                    break run.last_seq().await.map_err(failed)?;
                }
                if context.cancelled.borrow().is_some() {
                    cancel_child(&child).await?;
                }
            }
        }
    };
    let result = run.result(registry.store(), last_seq).await.map_err(failed)?;
    let events: Vec<&str> = result.events.iter().map(|e| e.get()).collect();
    let outcome = ChildResult::of(&events);
    parent.announce(outcome.finished(&parent_id, &child_id));
    Ok(ToolOutput::text(outcome.answer(&child_id).to_string()))
}

/// `SUBAGENT_FAILED`: the child could not be created or run.
fn failed(error: impl std::fmt::Display) -> ToolOutput {
    ToolOutput::error("SUBAGENT_FAILED", error.to_string())
}

/// Why no child was made: `LIMIT_EXCEEDED` naming the limit, else [`failed`].
pub(crate) fn refused(error: RegistryError) -> ToolOutput {
    match error {
        RegistryError::Exceeded(exceeded)
        | RegistryError::Session(SessionError::Exceeded(exceeded)) => {
            ToolOutput::limit_exceeded(exceeded)
        }
        error => failed(error),
    }
}

/// How a child's interval ended, as a parent is told.
pub(crate) struct ChildResult {
    /// The child's last non-empty assistant message.
    pub output: String,
    /// `completed`, `aborted`, `error`, `max-tokens`, `refusal` or `paused`.
    pub stop_reason: &'static str,
    /// The error of a turn that ended `error` (or that a restart interrupted).
    pub error: Option<serde_json::Value>,
    /// Turns in the interval that a gateway restart interrupted.
    pub interrupted_turns: usize,
}

impl ChildResult {
    /// The outcome of an interval of the child's log (event envelopes in seq order).
    pub fn of<S: AsRef<str>>(events: &[S]) -> ChildResult {
        let summary = summarize(events);
        let stop_reason = match &summary.finish {
            Some(TurnEndReason::Completed) => "completed",
            Some(TurnEndReason::MaxTokens) => "max-tokens",
            Some(TurnEndReason::Aborted { .. }) => "aborted",
            Some(TurnEndReason::Blocked) => "refusal",
            Some(TurnEndReason::Paused) => "paused",
            Some(TurnEndReason::Error { .. } | TurnEndReason::Interrupted) | None => "error",
        };
        let error = match &summary.finish {
            Some(TurnEndReason::Error { error }) => {
                Some(json!({"code": error.code, "message": error.message}))
            }
            Some(TurnEndReason::Paused) => Some(json!({
                "code": "BUDGET_EXHAUSTED",
                "message": "the subagent paused at its budget with its work kept; it goes on once \
                    its budget is raised",
            })),
            Some(TurnEndReason::Interrupted) => Some(json!({
                "code": "INTERRUPTED",
                "message": "the gateway stopped while the subagent's turn ran; the turn was \
                    closed unfinished, so send_message it again if the work is still needed",
            })),
            _ => None,
        };
        let interrupted_turns = events
            .iter()
            .filter(|json| json.as_ref().contains("turn/end"))
            .filter(|json| {
                matches!(Event::parse(json.as_ref()), Ok(Some(Event { data: EventData::TurnEnd(end), .. })) if end.reason == TurnEndReason::Interrupted)
            })
            .count();
        ChildResult { output: last_answer(events), stop_reason, error, interrupted_turns }
    }

    /// `{childId, output, stopReason, error?, interruptedTurns?}`.
    pub fn answer(&self, child_id: &str) -> serde_json::Value {
        let mut answer =
            json!({"childId": child_id, "output": self.output, "stopReason": self.stop_reason});
        if let Some(error) = &self.error {
            answer["error"] = error.clone();
        }
        if self.interrupted_turns > 0 {
            answer["interruptedTurns"] = self.interrupted_turns.into();
        }
        answer
    }

    /// The parent's `subagent.finished` notice.
    pub fn finished(&self, parent_id: &str, child_id: &str) -> Notice {
        let finished = json!({
            "parentSessionId": parent_id,
            "childSessionId": child_id,
            "status": if self.stop_reason == "completed" { "ok" } else { "error" },
            "stopReason": self.stop_reason,
            "lastAssistantMessage": self.output,
        });
        Notice::Subagent("subagent.finished", Arc::from(finished.to_string()))
    }
}

/// The child's last non-empty assistant message.
fn last_answer<S: AsRef<str>>(events: &[S]) -> String {
    events
        .iter()
        .rev()
        .find_map(|json| match Event::parse(json.as_ref()) {
            Ok(Some(Event { data: EventData::AssistantMessage(assistant), .. })) => {
                Some(text_of(&assistant.message.content)).filter(|t| !t.is_empty())
            }
            _ => None,
        })
        .unwrap_or_default()
}
