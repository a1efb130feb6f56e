//! The WIT export: the `agent` resource of `airlock:core/session`, converting between the WIT
//! types and the crate's own.

use std::cell::RefCell;
use std::sync::Arc;

use airlock::core::types as wit;
use exports::airlock::core::session::{Guest, GuestAgent};

use crate::config::{Config, ContextPolicy, Limits, ModelRoute, RetryPolicy, StepPolicy, ToolSpec};
use crate::inbox::{ReceiptChange, ReceiptMark};
use crate::io::{
    Appended, CallAnswer, HostEvent, Input, Output, RefusalCode, Status, StepDecision, ToolOutcome,
    WaitKind,
};
use crate::wire::{CancelCause, Message, Target};

wit_bindgen::generate!({ world: "agent-core", path: "../wit/core" });

struct Component;

impl Guest for Component {
    type Agent = AgentResource;
}

/// The resource wraps one [`crate::Agent`]; the component model gives it `&self`.
struct AgentResource {
    agent: RefCell<crate::Agent>,
    /// The messages of the last `call-model` output, which the host keeps: the next request
    /// sends only what follows the prefix it shares with them.
    sent: RefCell<Vec<Arc<Message>>>,
}

impl AgentResource {
    fn wrap(agent: crate::Agent) -> Self {
        AgentResource { agent: RefCell::new(agent), sent: RefCell::default() }
    }
}

impl GuestAgent for AgentResource {
    fn new(config: wit::Config, now: u64) -> Self {
        AgentResource::wrap(crate::Agent::new(config_from(config), now))
    }

    fn restore(
        config: wit::Config,
        events: Vec<String>,
    ) -> Result<exports::airlock::core::session::Agent, String> {
        let agent = crate::Agent::restore(config_from(config), &events)?;
        Ok(exports::airlock::core::session::Agent::new(AgentResource::wrap(agent)))
    }

    fn restore_from(
        config: wit::Config,
        snapshot: String,
        events: Vec<String>,
    ) -> Result<exports::airlock::core::session::Agent, String> {
        let agent = crate::Agent::restore_from(config_from(config), &snapshot, &events)?;
        Ok(exports::airlock::core::session::Agent::new(AgentResource::wrap(agent)))
    }

    fn wake_from(
        config: wit::Config,
        snapshot: String,
        events: Vec<String>,
        waiting: String,
    ) -> Result<exports::airlock::core::session::Agent, String> {
        let agent = crate::Agent::wake_from(config_from(config), &snapshot, &events, &waiting)?;
        Ok(exports::airlock::core::session::Agent::new(AgentResource::wrap(agent)))
    }

    fn handle(&self, input: wit::Input, now: u64) -> Vec<wit::Output> {
        match input_from(input) {
            Ok(input) => {
                let outputs = self.agent.borrow_mut().handle(input, now);
                let sent = &mut self.sent.borrow_mut();
                outputs.into_iter().map(|output| output_to(output, sent)).collect()
            }
            Err(message) => {
                vec![wit::Output::Refused(wit::Refusal {
                    code: wit::RefusalCode::BadInput,
                    message,
                })]
            }
        }
    }

    fn snapshot(&self) -> String {
        self.agent.borrow().snapshot()
    }

    fn waiting_state(&self) -> Option<String> {
        self.agent.borrow().waiting_state()
    }
}

fn config_from(c: wit::Config) -> Config {
    Config {
        session_id: c.session_id,
        provider: c.provider,
        model: c.model,
        system: c.system,
        tools: c.tools.into_iter().map(spec_from).collect(),
        max_tokens: c.max_tokens,
        retry: RetryPolicy {
            max_retries: c.retry.max_retries,
            base_delay_ms: c.retry.base_delay_ms,
            max_delay_ms: c.retry.max_delay_ms,
        },
        limits: Limits {
            turn_ms: c.limits.turn_ms,
            max_steps: c.limits.max_steps,
            step_output_bytes: c.limits.step_output_bytes,
            max_retry_after_ms: c.limits.max_retry_after_ms,
        },
        context: ContextPolicy {
            window: c.context.window,
            compact_at_percent: c.context.compact_at_percent,
        },
        step_policy: match c.step_policy {
            wit::StepPolicy::Ask => StepPolicy::Ask,
            wit::StepPolicy::EnterAll => StepPolicy::EnterAll,
        },
        fallbacks: c
            .fallbacks
            .into_iter()
            .map(|r| ModelRoute {
                provider: r.provider,
                model: r.model,
                context_window: r.context_window,
            })
            .collect(),
    }
}

fn spec_from(s: wit::ToolSpec) -> ToolSpec {
    crate::move_tool_spec!(s => ToolSpec)
}

fn spec_to(s: ToolSpec) -> wit::ToolSpec {
    crate::move_tool_spec!(s => wit::ToolSpec)
}

fn json<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| format!("{what} is not valid: {e}: {text}"))
}

fn target_from(t: wit::Target) -> Target {
    match t {
        wit::Target::NextTurn => Target::NextTurn,
        wit::Target::NextStep => Target::NextStep,
    }
}

fn input_from(input: wit::Input) -> Result<Input, String> {
    Ok(match input {
        wit::Input::Send(s) => Input::Send {
            message: json("message", &s.message)?,
            target: target_from(s.target),
            wakeup: s.wakeup,
        },
        wit::Input::Cancel(c) => Input::Cancel {
            cause: match c.cause {
                wit::CancelCause::User => CancelCause::User,
                wit::CancelCause::Parent => CancelCause::Parent,
                wit::CancelCause::Hook => CancelCause::Hook,
                wit::CancelCause::Disposed => CancelCause::Disposed,
            },
            keep_inbox: c.keep_inbox,
        },
        wit::Input::Remove(id) => Input::Remove(id),
        wit::Input::Clear => Input::Clear,
        wit::Input::Replace(message) => Input::Replace(json("message", &message)?),
        wit::Input::Promote(id) => Input::Promote(id),
        wit::Input::Decided(d) => Input::Decided {
            decision_id: d.decision_id,
            decision: match d.decision {
                wit::StepDecision::Enter(ids) => StepDecision::Enter(ids),
                wit::StepDecision::Reject => StepDecision::Reject,
                wit::StepDecision::Pause(why) => StepDecision::Pause(why),
            },
        },
        wit::Input::ModelChunk(c) => {
            Input::ModelChunk { request_id: c.request_id, chunk: json("stream chunk", &c.chunk)? }
        }
        wit::Input::ModelDone(id) => Input::ModelDone(id),
        wit::Input::ModelFailed(f) => Input::ModelFailed {
            request_id: f.request_id,
            error: crate::wire::ModelError {
                code: f.error.code,
                message: f.error.message,
                status: f.error.status,
                retry_after_ms: f.error.retry_after_ms,
            },
        },
        wit::Input::ToolFinished(t) => Input::ToolFinished(ToolOutcome {
            call_id: t.call_id,
            content: json("tool result content", &t.content)?,
            error_code: t.error_code,
            context: t
                .context
                .iter()
                .map(|m| json("context message", m))
                .collect::<Result<_, _>>()?,
        }),
        wit::Input::Answer(a) => Input::Answer {
            call_id: a.call_id,
            answer: match a.answer {
                wit::CallAnswer::Approve(a) => {
                    CallAnswer::Approve { by: a.by, arguments: a.arguments }
                }
                wit::CallAnswer::Deny(d) => CallAnswer::Deny { reason: d.reason, by: d.by },
                wit::CallAnswer::ClientResult(r) => CallAnswer::Result {
                    content: json("client result content", &r.content)?,
                    is_error: r.is_error,
                },
            },
        },
        wit::Input::TimerFired(id) => Input::TimerFired(id),
        wit::Input::Recover => Input::Recover,
        wit::Input::Compact => Input::Compact,
        wit::Input::Log(wit::HostEvent::GoalChange(data)) => {
            Input::Log(HostEvent::GoalChange(data))
        }
        wit::Input::Log(wit::HostEvent::SubagentDescriptor(data)) => {
            Input::Log(HostEvent::SubagentDescriptor(data))
        }
        wit::Input::Resume(data) => Input::Resume(data),
    })
}

fn output_to(output: Output, sent: &mut Vec<Arc<Message>>) -> wit::Output {
    match output {
        Output::AppendEvent(Appended { json, marks, at_rest }) => {
            let marks = marks.into_iter().map(mark_to).collect();
            wit::Output::AppendEvent(wit::Appended { json, marks, at_rest })
        }
        Output::Status(Status::Idle) => wit::Output::Status(wit::Status::Idle),
        Output::Status(Status::Running) => wit::Output::Status(wit::Status::Running),
        Output::DecideStep { decision_id, turn, step, claimed } => {
            wit::Output::DecideStep(wit::DecideStep {
                decision_id,
                turn,
                step,
                claimed: messages_json(&claimed),
            })
        }
        Output::CallModel(r) => {
            let shared = r.messages.iter().zip(sent.iter());
            let reused = shared.take_while(|(new, old)| Arc::ptr_eq(new, old)).count();
            let messages = messages_json(&r.messages[reused..]);
            *sent = r.messages;
            wit::Output::CallModel(wit::ModelRequest {
                request_id: r.request_id,
                route: r.route,
                model: r.model,
                system: r.system,
                reused: u32::try_from(reused).expect("fewer than 2^32 messages"),
                messages,
                tools: r.tools.into_iter().map(spec_to).collect(),
                max_tokens: r.max_tokens,
            })
        }
        Output::CallTool(c) => wit::Output::CallTool(wit::ToolCall {
            call_id: c.call_id,
            name: c.name,
            arguments: c.arguments,
        }),
        Output::AbortModel(id) => wit::Output::AbortModel(id),
        Output::StartTimer { timer_id, delay_ms } => {
            wit::Output::StartTimer(wit::StartTimer { timer_id, delay_ms })
        }
        Output::Compacting(busy) => wit::Output::Compacting(busy),
        Output::Waiting(calls) => wit::Output::Waiting(
            calls
                .into_iter()
                .map(|c| wit::WaitingCall {
                    call_id: c.call_id,
                    name: c.name,
                    arguments: c.arguments,
                    kind: match c.kind {
                        WaitKind::Approval => wit::WaitKind::Approval,
                        WaitKind::Client => wit::WaitKind::Client,
                    },
                    since: c.since,
                })
                .collect(),
        ),
        Output::Refused { code, message } => {
            wit::Output::Refused(wit::Refusal { code: refusal_code_to(code), message })
        }
    }
}

fn refusal_code_to(code: RefusalCode) -> wit::RefusalCode {
    match code {
        RefusalCode::UnknownMessage => wit::RefusalCode::UnknownMessage,
        RefusalCode::DuplicateMessageId => wit::RefusalCode::DuplicateMessageId,
        RefusalCode::NotQueued => wit::RefusalCode::NotQueued,
        RefusalCode::BadInput => wit::RefusalCode::BadInput,
        RefusalCode::SessionRunning => wit::RefusalCode::SessionRunning,
        RefusalCode::Compacting => wit::RefusalCode::Compacting,
        RefusalCode::NothingToCompact => wit::RefusalCode::NothingToCompact,
        RefusalCode::UnknownCall => wit::RefusalCode::UnknownCall,
        RefusalCode::NotWaiting => wit::RefusalCode::NotWaiting,
    }
}

fn messages_json<M: serde::Serialize>(messages: &[M]) -> String {
    serde_json::to_string(messages).expect("messages serialize")
}

export!(Component);

fn target_to(t: Target) -> wit::Target {
    match t {
        Target::NextTurn => wit::Target::NextTurn,
        Target::NextStep => wit::Target::NextStep,
    }
}

fn mark_to(mark: ReceiptMark) -> wit::ReceiptMark {
    let change = match mark.change {
        ReceiptChange::Inserted(target) => wit::ReceiptChange::Inserted(target_to(target)),
        ReceiptChange::Claimed { turn } => wit::ReceiptChange::Claimed(turn),
        ReceiptChange::Canceled => wit::ReceiptChange::Canceled,
    };
    wit::ReceiptMark { message_id: mark.message_id, change }
}
