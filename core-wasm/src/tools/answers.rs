//! The answers to a step's waiting calls: a person's approval or denial, a client tool's result,
//! and the timer that fails a client tool's call nobody answered in time.

use super::CallState;
use crate::agent::{Agent, Phase};
use crate::event::{ApprovalState, EventData, ToolApproval};
use crate::io::{CallAnswer, RefusalCode, ToolCall};
use crate::turn::{Stage, Turn};
use crate::wire::ContentBlock;

impl Agent {
    /// A person's or the client's answer to a waiting call.
    pub(crate) fn on_answer(&mut self, call_id: &str, answer: CallAnswer) {
        let call = match &self.phase {
            Phase::Running(Turn { stage: Stage::Tools(batch), .. }) => {
                batch.calls.iter().position(|c| c.id == call_id).map(|i| (i, &batch.calls[i]))
            }
            _ => None,
        };
        let Some((index, call)) = call else {
            let text = format!("no call of the running step has id {call_id:?}");
            return self.refuse(RefusalCode::UnknownCall, text);
        };
        let fits = matches!(
            (&call.state, &answer),
            (CallState::Approval { .. }, CallAnswer::Approve { .. } | CallAnswer::Deny { .. })
                | (CallState::Client { .. }, CallAnswer::Result { .. })
        );
        if let CallAnswer::Approve { arguments: Some(arguments), .. } = &answer
            && !is_object(arguments)
        {
            let text = format!(
                "the arguments to run call {call_id:?} with must be a JSON object; got {arguments:?}"
            );
            return self.refuse(RefusalCode::BadInput, text);
        }
        if !fits {
            let text = match &call.state {
                CallState::Approval { .. } => format!(
                    "call {call_id:?} waits for an approval, not a result; approve or deny it"
                ),
                CallState::Client { .. } => format!(
                    "call {call_id:?} waits for its client's result, not an approval; post its result"
                ),
                _ => format!("call {call_id:?} waits for no answer: it already has one"),
            };
            return self.refuse(RefusalCode::NotWaiting, text);
        }
        let mut turn = self.take_turn().expect("a running turn, found above");
        let Stage::Tools(batch) = &mut turn.stage else { unreachable!() };
        let (number, step, name) = (turn.number, turn.step, batch.calls[index].name.clone());
        match answer {
            CallAnswer::Approve { by, arguments } => {
                let approved = ToolApproval::new(number, step, call_id, ApprovalState::Approved);
                let approved = ToolApproval { by, arguments: arguments.clone(), ..approved };
                self.emit(EventData::ToolApproval(approved), None);
                let Stage::Tools(batch) = &mut turn.stage else { unreachable!() };
                if let Some(edited) = arguments {
                    batch.calls[index].arguments = edited;
                    batch.calls[index].edited = true;
                }
                let arguments = batch.calls[index].arguments.clone();
                let call = ToolCall { call_id: call_id.to_owned(), name, arguments };
                self.start_call(batch, index, call);
            }
            CallAnswer::Deny { reason, by } => {
                let denied = ToolApproval::new(number, step, call_id, ApprovalState::Denied);
                let denied = ToolApproval { reason: reason.clone(), by, ..denied };
                self.emit(EventData::ToolApproval(denied), None);
                // The model sees the code as well as the reason.
                let text = match reason {
                    Some(reason) => format!("DENIED_BY_USER: the user denied this call: {reason}"),
                    None => "DENIED_BY_USER: the user denied this call".to_owned(),
                };
                let Stage::Tools(batch) = &mut turn.stage else { unreachable!() };
                batch.answer(index, vec![ContentBlock::Text { text }], "DENIED_BY_USER");
            }
            CallAnswer::Result { content, is_error } => {
                let error_code = is_error.then(|| "CLIENT_TOOL_ERROR".to_owned());
                batch.calls[index].state = CallState::Done { content, error_code };
            }
        }
        self.run_tools(turn);
    }

    /// A client tool's timer fired: its call fails `TOOL_TIMEOUT` unless it was answered.
    /// `false` when no waiting call has that timer.
    pub(crate) fn on_client_timer(&mut self, timer_id: u64) -> bool {
        let timed_out = |s: &Stage| match s {
            Stage::Tools(batch) => batch.calls.iter().any(|c| c.has_timer(timer_id)),
            _ => false,
        };
        let Some(mut turn) = self.turn_in(timed_out) else { return false };
        let Stage::Tools(batch) = &mut turn.stage else { unreachable!() };
        let index = batch.calls.iter().position(|c| c.has_timer(timer_id)).expect("found above");
        let spec = self.config.tools.iter().find(|t| t.name == batch.calls[index].name);
        let ms = spec.and_then(|s| s.client_timeout_ms).unwrap_or_default();
        let text = format!("the client did not post this call's result within {ms} ms");
        batch.answer(index, vec![ContentBlock::Text { text }], "TOOL_TIMEOUT");
        self.run_tools(turn);
        true
    }
}

/// Whether `text` is a JSON object, as a tool's arguments are.
fn is_object(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok_and(|value| value.is_object())
}
