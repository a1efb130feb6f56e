//! Conversions between the crate's Rust types (`airlock_core::{Config, Input, Output, ...}`) and
//! the types `bindgen!` generates for the WIT world.
//!
//! Messages, stream chunks and tool content travel as JSON text in WIT: inputs are serialized
//! with `serde_json`, and outputs carrying JSON are parsed back. A parse failure is a
//! [`CoreError::Json`], never a panic. This mirrors `core-wasm/src/guest.rs`, the guest's side.

use std::sync::Arc;

use airlock_core::{
    Appended, CallAnswer, CancelCause, Config, HostEvent, Input, Message, ModelError, ModelRequest,
    Output, ReceiptChange, ReceiptMark, RefusalCode, RetryPolicy, Status, StepDecision, StepPolicy,
    Target, ToolCall, ToolSpec, WaitKind, WaitingCall,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::bindings::airlock::core::types as wit;
use super::error::CoreError;

fn to_json(what: &'static str, value: &impl Serialize) -> Result<String, CoreError> {
    serde_json::to_string(value).map_err(|source| CoreError::Json { what, source: source.into() })
}

fn from_json<T: DeserializeOwned>(what: &'static str, text: &str) -> Result<T, CoreError> {
    serde_json::from_str(text).map_err(|source| CoreError::Json { what, source: source.into() })
}

/// The session config as the core's constructor takes it.
pub(super) fn config_to(c: &Config) -> wit::Config {
    wit::Config {
        session_id: c.session_id.clone(),
        provider: c.provider.clone(),
        model: c.model.clone(),
        system: c.system.clone(),
        tools: c.tools.iter().cloned().map(spec_to).collect(),
        max_tokens: c.max_tokens,
        retry: retry_to(&c.retry),
        limits: wit::Limits {
            turn_ms: c.limits.turn_ms,
            max_steps: c.limits.max_steps,
            step_output_bytes: c.limits.step_output_bytes,
            max_retry_after_ms: c.limits.max_retry_after_ms,
        },
        context: wit::ContextPolicy {
            window: c.context.window,
            compact_at_percent: c.context.compact_at_percent,
        },
        step_policy: match c.step_policy {
            StepPolicy::Ask => wit::StepPolicy::Ask,
            StepPolicy::EnterAll => wit::StepPolicy::EnterAll,
        },
        fallbacks: c
            .fallbacks
            .iter()
            .map(|r| wit::ModelRoute {
                provider: r.provider.clone(),
                model: r.model.clone(),
                context_window: r.context_window,
            })
            .collect(),
    }
}

fn retry_to(r: &RetryPolicy) -> wit::RetryPolicy {
    wit::RetryPolicy {
        max_retries: r.max_retries,
        base_delay_ms: r.base_delay_ms,
        max_delay_ms: r.max_delay_ms,
    }
}

fn spec_to(s: ToolSpec) -> wit::ToolSpec {
    airlock_core::move_tool_spec!(s => wit::ToolSpec)
}

fn spec_from(s: wit::ToolSpec) -> ToolSpec {
    airlock_core::move_tool_spec!(s => ToolSpec)
}

fn target_to(t: Target) -> wit::Target {
    match t {
        Target::NextTurn => wit::Target::NextTurn,
        Target::NextStep => wit::Target::NextStep,
    }
}

fn cause_to(c: CancelCause) -> wit::CancelCause {
    match c {
        CancelCause::User => wit::CancelCause::User,
        CancelCause::Parent => wit::CancelCause::Parent,
        CancelCause::Hook => wit::CancelCause::Hook,
        CancelCause::Disposed => wit::CancelCause::Disposed,
    }
}

fn model_error_to(e: ModelError) -> wit::ModelError {
    wit::ModelError {
        code: e.code,
        message: e.message,
        status: e.status,
        retry_after_ms: e.retry_after_ms,
    }
}

/// One input as the core's `handle` takes it.
pub(super) fn input_to(input: Input) -> Result<wit::Input, CoreError> {
    Ok(match input {
        Input::Send { message, target, wakeup } => wit::Input::Send(wit::Send {
            message: to_json("message", &message)?,
            target: target_to(target),
            wakeup,
        }),
        Input::Cancel { cause, keep_inbox } => {
            wit::Input::Cancel(wit::Cancel { cause: cause_to(cause), keep_inbox })
        }
        Input::Remove(id) => wit::Input::Remove(id),
        Input::Clear => wit::Input::Clear,
        Input::Replace(message) => wit::Input::Replace(to_json("message", &message)?),
        Input::Promote(id) => wit::Input::Promote(id),
        Input::Decided { decision_id, decision } => wit::Input::Decided(wit::Decided {
            decision_id,
            decision: match decision {
                StepDecision::Enter(ids) => wit::StepDecision::Enter(ids),
                StepDecision::Reject => wit::StepDecision::Reject,
                StepDecision::Pause(why) => wit::StepDecision::Pause(why),
            },
        }),
        Input::ModelChunk { request_id, chunk } => wit::Input::ModelChunk(wit::ModelChunk {
            request_id,
            chunk: to_json("stream chunk", &chunk)?,
        }),
        Input::ModelDone(id) => wit::Input::ModelDone(id),
        Input::ModelFailed { request_id, error } => {
            wit::Input::ModelFailed(wit::ModelFailed { request_id, error: model_error_to(error) })
        }
        Input::ToolFinished(t) => wit::Input::ToolFinished(wit::ToolFinished {
            call_id: t.call_id,
            content: to_json("tool result content", &t.content)?,
            error_code: t.error_code,
            context: t
                .context
                .iter()
                .map(|m| to_json("context message", m))
                .collect::<Result<_, _>>()?,
        }),
        Input::Answer { call_id, answer } => wit::Input::Answer(wit::Answer {
            call_id,
            answer: match answer {
                CallAnswer::Approve { by, arguments } => {
                    wit::CallAnswer::Approve(wit::Approve { by, arguments })
                }
                CallAnswer::Deny { reason, by } => wit::CallAnswer::Deny(wit::Deny { reason, by }),
                CallAnswer::Result { content, is_error } => {
                    wit::CallAnswer::ClientResult(wit::ClientResult {
                        content: to_json("client result content", &content)?,
                        is_error,
                    })
                }
            },
        }),
        Input::TimerFired(id) => wit::Input::TimerFired(id),
        Input::Recover => wit::Input::Recover,
        Input::Compact => wit::Input::Compact,
        Input::Log(HostEvent::GoalChange(data)) => {
            wit::Input::Log(wit::HostEvent::GoalChange(data))
        }
        Input::Log(HostEvent::SubagentDescriptor(data)) => {
            wit::Input::Log(wit::HostEvent::SubagentDescriptor(data))
        }
        Input::Resume(data) => wit::Input::Resume(data),
    })
}

/// One output of the core's `handle`, back in the crate's types. `sent` holds the messages of
/// the agent's last model request, which the next one extends (`reused` in the WIT).
pub(super) fn output_from(
    output: wit::Output,
    sent: &mut Vec<Arc<Message>>,
) -> Result<Output, CoreError> {
    Ok(match output {
        wit::Output::AppendEvent(wit::Appended { json, marks, at_rest }) => {
            let marks = marks.into_iter().map(mark_from).collect();
            Output::AppendEvent(Appended { json, marks, at_rest })
        }
        wit::Output::Status(wit::Status::Idle) => Output::Status(Status::Idle),
        wit::Output::Status(wit::Status::Running) => Output::Status(Status::Running),
        wit::Output::DecideStep(d) => Output::DecideStep {
            decision_id: d.decision_id,
            turn: d.turn,
            step: d.step,
            claimed: from_json::<Vec<Message>>("claimed messages", &d.claimed)?,
        },
        wit::Output::CallModel(r) => {
            let reused = usize::try_from(r.reused).unwrap_or(usize::MAX);
            if reused > sent.len() {
                return Err(CoreError::Reuse { reused: r.reused, had: sent.len() });
            }
            let fresh = from_json::<Vec<Arc<Message>>>("model request messages", &r.messages)?;
            sent.truncate(reused);
            sent.extend(fresh);
            Output::CallModel(ModelRequest {
                request_id: r.request_id,
                route: r.route,
                model: r.model,
                system: r.system,
                messages: sent.clone(),
                tools: r.tools.into_iter().map(spec_from).collect(),
                max_tokens: r.max_tokens,
            })
        }
        wit::Output::CallTool(c) => {
            Output::CallTool(ToolCall { call_id: c.call_id, name: c.name, arguments: c.arguments })
        }
        wit::Output::AbortModel(id) => Output::AbortModel(id),
        wit::Output::StartTimer(r) => {
            Output::StartTimer { timer_id: r.timer_id, delay_ms: r.delay_ms }
        }
        wit::Output::Compacting(busy) => Output::Compacting(busy),
        wit::Output::Waiting(calls) => Output::Waiting(
            calls
                .into_iter()
                .map(|c| WaitingCall {
                    call_id: c.call_id,
                    name: c.name,
                    arguments: c.arguments,
                    kind: match c.kind {
                        wit::WaitKind::Approval => WaitKind::Approval,
                        wit::WaitKind::Client => WaitKind::Client,
                    },
                    since: c.since,
                })
                .collect(),
        ),
        wit::Output::Refused(r) => {
            Output::Refused { code: refusal_code_from(r.code), message: r.message }
        }
    })
}

fn refusal_code_from(code: wit::RefusalCode) -> RefusalCode {
    match code {
        wit::RefusalCode::UnknownMessage => RefusalCode::UnknownMessage,
        wit::RefusalCode::DuplicateMessageId => RefusalCode::DuplicateMessageId,
        wit::RefusalCode::NotQueued => RefusalCode::NotQueued,
        wit::RefusalCode::BadInput => RefusalCode::BadInput,
        wit::RefusalCode::SessionRunning => RefusalCode::SessionRunning,
        wit::RefusalCode::Compacting => RefusalCode::Compacting,
        wit::RefusalCode::NothingToCompact => RefusalCode::NothingToCompact,
        wit::RefusalCode::UnknownCall => RefusalCode::UnknownCall,
        wit::RefusalCode::NotWaiting => RefusalCode::NotWaiting,
    }
}

fn target_from(t: wit::Target) -> Target {
    match t {
        wit::Target::NextTurn => Target::NextTurn,
        wit::Target::NextStep => Target::NextStep,
    }
}

fn mark_from(mark: wit::ReceiptMark) -> ReceiptMark {
    let change = match mark.change {
        wit::ReceiptChange::Inserted(target) => ReceiptChange::Inserted(target_from(target)),
        wit::ReceiptChange::Claimed(turn) => ReceiptChange::Claimed { turn },
        wit::ReceiptChange::Canceled => ReceiptChange::Canceled,
    };
    ReceiptMark { message_id: mark.message_id, change }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_json_from_the_core_is_an_error_not_a_panic() {
        let output = wit::Output::DecideStep(wit::DecideStep {
            decision_id: 1,
            turn: 1,
            step: 1,
            claimed: "[{".into(),
        });
        let err = output_from(output, &mut Vec::new()).unwrap_err();
        assert!(matches!(err, CoreError::Json { what: "claimed messages", .. }), "{err}");
    }

    fn call_model(reused: u32, messages: &[&str]) -> wit::Output {
        let messages: Vec<_> =
            messages.iter().map(|id| Message::user(id.to_string(), Vec::new())).collect();
        wit::Output::CallModel(wit::ModelRequest {
            request_id: 1,
            route: 0,
            model: "m".into(),
            system: None,
            reused,
            messages: serde_json::to_string(&messages).unwrap(),
            tools: Vec::new(),
            max_tokens: None,
        })
    }

    fn ids(output: Output) -> Vec<String> {
        let Output::CallModel(request) = output else { panic!("not a model request") };
        request.messages.iter().map(|m| m.id.clone()).collect()
    }

    #[test]
    fn a_model_request_keeps_the_messages_it_reuses_and_adds_the_ones_it_sends() {
        let mut sent = Vec::new();
        assert_eq!(ids(output_from(call_model(0, &["a", "b"]), &mut sent).unwrap()), ["a", "b"]);
        let extended = output_from(call_model(2, &["c"]), &mut sent).unwrap();
        assert_eq!(ids(extended), ["a", "b", "c"]);
        let cut = output_from(call_model(1, &["d"]), &mut sent).unwrap();
        assert_eq!(ids(cut), ["a", "d"]);
        let err = output_from(call_model(3, &[]), &mut sent).unwrap_err();
        assert!(matches!(err, CoreError::Reuse { reused: 3, had: 2 }), "{err}");
    }
}
