//! Approvals over ACP: a call that waits for a person becomes `session/request_permission` to
//! the client (allow once / reject once, with the call's name as its title and its input); the
//! client's answer approves or denies it. A cancelled prompt answers nothing: its cancel ends
//! the wait.

use std::collections::BTreeMap;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionId, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use airlock_core::{ApprovalState, CallAnswer, ContentBlock, Durable, EventData, WaitKind};
use serde_json::json;

use airlock_sessions::{InputError, Sessions};

const ALLOW: &str = "allow-once";
const REJECT: &str = "reject-once";

/// The calls of a session's running step, from its events: what a permission request shows.
#[derive(Default)]
pub(super) struct Calls(BTreeMap<String, (String, String)>);

impl Calls {
    /// Follows one committed event; asks the client about a call that now waits for approval.
    pub(super) fn follow(&mut self, data: &EventData, asker: &Asker) {
        match data {
            EventData::ToolCall(call) => {
                let (name, arguments) = (call.name.clone(), call.arguments.clone());
                self.0.insert(call.call_id.clone(), (name, arguments));
            }
            EventData::ToolApproval(approval) if approval.state == ApprovalState::Requested => {
                if let Some((name, arguments)) = self.0.get(&approval.call_id) {
                    asker.ask(&approval.call_id, name, arguments);
                }
            }
            EventData::TurnEnd(_) => self.0.clear(),
            _ => {}
        }
    }
}

/// Asks one client about one session's waiting calls.
#[derive(Clone)]
pub(super) struct Asker {
    pub cx: ConnectionTo<Client>,
    pub sessions: Sessions,
    pub session_id: SessionId,
}

impl Asker {
    /// Asks about the calls that wait for approval in a log's state (a session being loaded).
    pub(super) fn ask_waiting(&self, durable: &Durable) {
        let Some(step) = durable.open_turn.as_ref().and_then(|open| open.step.as_ref()) else {
            return;
        };
        let blocks = durable.history.iter().rev().flat_map(|message| &message.content);
        for block in blocks {
            if let ContentBlock::ToolCall { id, name, arguments } = block
                && step.waiting.get(id).is_some_and(|wait| wait.kind == WaitKind::Approval)
            {
                self.ask(id, name, arguments);
            }
        }
    }

    /// Sends the request; the client's answer approves or denies the call.
    fn ask(&self, call_id: &str, name: &str, arguments: &str) {
        let input = serde_json::from_str(arguments).unwrap_or_else(|_| json!(arguments));
        let fields = ToolCallUpdateFields::new()
            .title(name.to_owned())
            .raw_input(input)
            .status(ToolCallStatus::Pending);
        let options = vec![
            PermissionOption::new(ALLOW, "Allow once", PermissionOptionKind::AllowOnce),
            PermissionOption::new(REJECT, "Reject", PermissionOptionKind::RejectOnce),
        ];
        let call = ToolCallUpdate::new(call_id.to_owned(), fields);
        let request = RequestPermissionRequest::new(self.session_id.clone(), call, options);
        let (asker, call_id) = (self.clone(), call_id.to_owned());
        tokio::spawn(async move {
            let answer = match asker.cx.send_request(request).block_task().await {
                Ok(response) => match response.outcome {
                    RequestPermissionOutcome::Selected(chosen) if &*chosen.option_id.0 == ALLOW => {
                        CallAnswer::Approve { by: Some("acp".into()), arguments: None }
                    }
                    RequestPermissionOutcome::Selected(_) => CallAnswer::Deny {
                        reason: Some("the person rejected it in the editor".into()),
                        by: Some("acp".into()),
                    },
                    // The prompt was cancelled: its cancel settles the call.
                    _ => return,
                },
                Err(error) => {
                    let session_id = &*asker.session_id.0;
                    tracing::warn!(session_id, call_id, %error, "the permission request failed; the call waits for an answer over HTTP");
                    return;
                }
            };
            // Answered meanwhile (over HTTP, or cancelled): nothing to do.
            let session_id = &*asker.session_id.0;
            let answered = asker.sessions.answer(session_id, &call_id, answer).await;
            if let Err(InputError::Session(error)) = answered {
                tracing::error!(session_id, call_id, %error, "answering the call failed");
            }
        });
    }
}
