//! A session's log as AG-UI events. [`Translator`] turns each committed event into the AG-UI
//! events it means, in order, keeps the stream well formed (every message and tool call it opens
//! it closes), and knows when every call in flight waits for the frontend: an approval or a
//! frontend tool's result, which end the AG-UI run.
//!
//! Its ids come from the log alone, so a run read again (a retry, a reconnect) says the same
//! thing: a streamed message is `{session}:{seq}` of its first chunk, a tool call keeps the
//! model's call id, a tool result its message id.

use std::collections::{BTreeMap, HashSet};

use airlock_core::{
    ApprovalState, ContentBlock, Event, EventData, Role, StreamChunk, TurnEndReason, WaitKind,
    WaitingCall, text_of,
};
use serde_json::{Value, json};

/// Turns a session's events into AG-UI events; see the module's documentation.
pub(super) struct Translator {
    session_id: String,
    /// The messages the frontend sent with the run, which it has: not echoed back.
    known: HashSet<String>,
    /// The names of the frontend's tools.
    client_tools: HashSet<String>,
    /// The assistant text being streamed: its AG-UI message id.
    text: Option<String>,
    /// The reasoning being streamed: its AG-UI message id.
    reasoning: Option<String>,
    /// Tool calls whose `TOOL_CALL_START` was sent and whose `TOOL_CALL_END` was not: their ids
    /// and names.
    streaming: Vec<(String, String)>,
    /// Tool calls whose `TOOL_CALL_END` was sent.
    ended: HashSet<String>,
    /// Calls logged without a result yet.
    open: BTreeMap<String, OpenCall>,
    /// Of those, the ones that wait for the frontend.
    waiting: BTreeMap<String, Wait>,
    /// Why the last turn ended.
    last_end: Option<TurnEndReason>,
}

/// A call logged without a result yet.
struct OpenCall {
    /// The tool.
    name: String,
    /// The model's arguments (JSON text).
    arguments: String,
    /// A frontend tool's.
    client: bool,
}

/// What a call waits for from the frontend.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Wait {
    /// A person's approval.
    Approval,
    /// The frontend runs the tool and sends its result.
    Client,
}

impl Translator {
    /// A translator for `session_id`'s events, for a frontend that has the messages `known` and
    /// runs the tools `client_tools`.
    pub(super) fn new(
        session_id: &str,
        known: HashSet<String>,
        client_tools: HashSet<String>,
    ) -> Translator {
        Translator {
            session_id: session_id.to_owned(),
            known,
            client_tools,
            text: None,
            reasoning: None,
            streaming: Vec::new(),
            ended: HashSet::new(),
            open: BTreeMap::new(),
            waiting: BTreeMap::new(),
            last_end: None,
        }
    }

    /// Takes the calls that wait as the run starts: calls logged before it. (One that waits for
    /// an approval is a frontend tool's if the frontend has a tool of its name.)
    pub(super) fn waiting(&mut self, calls: Vec<WaitingCall>) {
        for call in calls {
            let client = call.kind == WaitKind::Client || self.client_tools.contains(&call.name);
            let wait = if call.kind == WaitKind::Client { Wait::Client } else { Wait::Approval };
            self.waiting.insert(call.call_id.clone(), wait);
            let open = OpenCall { name: call.name, arguments: call.arguments, client };
            self.open.insert(call.call_id, open);
        }
    }

    /// The AG-UI events of the log event `json` (none for one the frontend has no event for, or
    /// one that cannot be read: the log's own readers report those).
    pub(super) fn event(&mut self, json: &str) -> Vec<Value> {
        let Ok(Some(event)) = Event::parse(json) else { return Vec::new() };
        let mut out = Vec::new();
        match event.data {
            EventData::AssistantChunk(chunk) => self.chunk(event.seq, chunk.chunk, &mut out),
            EventData::AssistantMessage(assistant) => {
                self.close_text(&mut out);
                let ended = self.end_calls(&mut out);
                self.ended.extend(ended);
                // A call that came whole, not streamed.
                for block in &assistant.message.content {
                    if let ContentBlock::ToolCall { id, name, arguments } = block
                        && self.ended.insert(id.clone())
                    {
                        out.push(json!({"type": "TOOL_CALL_START", "toolCallId": id,
                            "toolCallName": name}));
                        if !arguments.is_empty() {
                            out.push(json!({"type": "TOOL_CALL_ARGS", "toolCallId": id,
                                "delta": arguments}));
                        }
                        out.push(json!({"type": "TOOL_CALL_END", "toolCallId": id}));
                    }
                }
            }
            EventData::LlmRetry(_) => {
                // The attempt's stream is dropped; the next attempt streams anew.
                self.close_text(&mut out);
                self.end_calls(&mut out);
            }
            EventData::ToolCall(call) => {
                if call.client {
                    self.waiting.insert(call.call_id.clone(), Wait::Client);
                }
                let open =
                    OpenCall { name: call.name, arguments: call.arguments, client: call.client };
                self.open.insert(call.call_id, open);
            }
            EventData::ToolApproval(approval) => match approval.state {
                ApprovalState::Requested => {
                    self.waiting.insert(approval.call_id, Wait::Approval);
                }
                // An approved frontend tool waits for its result next.
                ApprovalState::Approved
                    if self.open.get(&approval.call_id).is_some_and(|call| call.client) =>
                {
                    self.waiting.insert(approval.call_id, Wait::Client);
                }
                ApprovalState::Approved | ApprovalState::Denied => {
                    self.waiting.remove(&approval.call_id);
                }
            },
            EventData::ToolResult(result) => {
                for block in &result.message.content {
                    if let ContentBlock::ToolResult { tool_call_id, content, .. } = block {
                        self.open.remove(tool_call_id);
                        self.waiting.remove(tool_call_id);
                        out.push(json!({"type": "TOOL_CALL_RESULT",
                            "messageId": result.message.id, "toolCallId": tool_call_id,
                            "content": text_of(content), "role": "tool"}));
                    }
                }
            }
            EventData::UserMessage(message) if !self.known.contains(&message.id) => {
                // Sent by another client, or queued before this run: the frontend learns of it.
                self.close_text(&mut out);
                let role = if message.role == Role::User { "user" } else { "system" };
                out.push(json!({"type": "TEXT_MESSAGE_START", "messageId": message.id,
                    "role": role}));
                let text = text_of(&message.content);
                if !text.is_empty() {
                    out.push(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": message.id,
                        "delta": text}));
                }
                out.push(json!({"type": "TEXT_MESSAGE_END", "messageId": message.id}));
                self.known.insert(message.id);
            }
            EventData::TurnEnd(end) => {
                self.close_text(&mut out);
                // A turn that ended leaves no call waiting.
                self.open.clear();
                self.waiting.clear();
                self.last_end = Some(end.reason);
            }
            _ => {}
        }
        out
    }

    fn chunk(&mut self, seq: u64, chunk: StreamChunk, out: &mut Vec<Value>) {
        match chunk {
            StreamChunk::TextDelta { text, .. } => {
                self.close_reasoning(out);
                let id = format!("{}:{seq}", self.session_id);
                let id = open(&mut self.text, id, out, |id| {
                    vec![json!({"type": "TEXT_MESSAGE_START", "messageId": id,
                        "role": "assistant"})]
                });
                if !text.is_empty() {
                    out.push(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": id,
                        "delta": text}));
                }
            }
            StreamChunk::ReasoningDelta { text, .. } => {
                let id = format!("{}:{seq}", self.session_id);
                let id = open(&mut self.reasoning, id, out, |id| {
                    vec![
                        json!({"type": "REASONING_START", "messageId": id}),
                        json!({"type": "REASONING_MESSAGE_START", "messageId": id,
                            "role": "reasoning"}),
                    ]
                });
                if !text.is_empty() {
                    out.push(json!({"type": "REASONING_MESSAGE_CONTENT", "messageId": id,
                        "delta": text}));
                }
            }
            StreamChunk::ToolCallDelta { id, name, arguments_delta, .. } => {
                self.close_reasoning(out);
                if !self.streaming.iter().any(|(open, _)| *open == id) {
                    let name = name.unwrap_or_default();
                    let mut start = json!({"type": "TOOL_CALL_START", "toolCallId": id,
                        "toolCallName": name});
                    if let Some(parent) = &self.text {
                        start["parentMessageId"] = json!(parent);
                    }
                    out.push(start);
                    self.streaming.push((id.clone(), name));
                }
                if !arguments_delta.is_empty() {
                    out.push(json!({"type": "TOOL_CALL_ARGS", "toolCallId": id,
                        "delta": arguments_delta}));
                }
            }
            StreamChunk::Usage { .. } | StreamChunk::Finish { .. } => {}
        }
    }

    fn close_text(&mut self, out: &mut Vec<Value>) {
        self.close_reasoning(out);
        if let Some(id) = self.text.take() {
            out.push(json!({"type": "TEXT_MESSAGE_END", "messageId": id}));
        }
    }

    fn close_reasoning(&mut self, out: &mut Vec<Value>) {
        if let Some(id) = self.reasoning.take() {
            out.push(json!({"type": "REASONING_MESSAGE_END", "messageId": id}));
            out.push(json!({"type": "REASONING_END", "messageId": id}));
        }
    }

    /// The events that open again what is open now, for a stream that joins a run in the
    /// middle: the text, reasoning and tool calls being streamed.
    pub(super) fn reopen(&self) -> Vec<Value> {
        let mut out = Vec::new();
        if let Some(id) = &self.reasoning {
            out.push(json!({"type": "REASONING_START", "messageId": id}));
            out.push(json!({"type": "REASONING_MESSAGE_START", "messageId": id,
                "role": "reasoning"}));
        }
        if let Some(id) = &self.text {
            out.push(json!({"type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant"}));
        }
        for (id, name) in &self.streaming {
            out.push(json!({"type": "TOOL_CALL_START", "toolCallId": id, "toolCallName": name}));
        }
        out
    }

    /// Whether the run can go no further without the frontend: calls are open and each waits
    /// for an approval or a frontend tool's result.
    pub(super) fn waits_for_frontend(&self) -> bool {
        !self.open.is_empty() && self.open.keys().all(|id| self.waiting.contains_key(id))
    }

    /// The events that end a run that waits for the frontend: `RUN_FINISHED` with an
    /// `interrupt` outcome naming each approval, or, when only frontend tools wait, a `success`
    /// naming their calls in `pendingToolCallIds`.
    pub(super) fn interrupted(&mut self, thread_id: &str, run_id: &str) -> Vec<Value> {
        let mut out = self.closed();
        let mut interrupts = Vec::new();
        let mut pending = Vec::new();
        for (id, wait) in &self.waiting {
            let OpenCall { name, arguments, .. } = &self.open[id];
            match wait {
                Wait::Approval => interrupts.push(json!({
                    "id": id,
                    "reason": "tool_approval",
                    "toolCallId": id,
                    "message": format!("The agent wants to call `{name}` with {arguments}: \
                        approve or deny it."),
                    "responseSchema": approval_schema(),
                    "metadata": {"toolName": name, "arguments": arguments},
                })),
                Wait::Client => pending.push(json!(id)),
            }
        }
        let outcome = match interrupts.is_empty() {
            true => json!({"type": "success", "pendingToolCallIds": pending}),
            false => json!({"type": "interrupt", "interrupts": interrupts}),
        };
        out.push(json!({"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id,
            "outcome": outcome}));
        out
    }

    /// The events that end a run at whole-agent idle: `RUN_FINISHED` (`cancelled` for a turn
    /// that was cancelled), or `RUN_ERROR` when the last turn failed or paused at its budget.
    pub(super) fn finished(&mut self, thread_id: &str, run_id: &str) -> Vec<Value> {
        let mut out = self.closed();
        let done = |outcome: &str| {
            json!({"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id,
                "outcome": {"type": outcome}})
        };
        out.push(match &self.last_end {
            Some(TurnEndReason::Error { error }) => {
                json!({"type": "RUN_ERROR", "message": error.message, "code": error.code})
            }
            Some(TurnEndReason::Paused) => json!({"type": "RUN_ERROR", "code": "PAUSED",
                "message": format!("the session paused at its budget; raise it with \
                    PATCH /v1/sessions/{}/budget and run again", self.session_id)}),
            Some(TurnEndReason::Aborted { .. }) => done("cancelled"),
            _ => done("success"),
        });
        out
    }

    /// Closes whatever is open.
    fn closed(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        self.close_text(&mut out);
        self.end_calls(&mut out);
        out
    }

    /// Ends the tool calls being streamed; answers their ids.
    fn end_calls(&mut self, out: &mut Vec<Value>) -> Vec<String> {
        let calls = std::mem::take(&mut self.streaming);
        let ids = calls.into_iter().map(|(id, _)| id);
        ids.inspect(|id| out.push(json!({"type": "TOOL_CALL_END", "toolCallId": id}))).collect()
    }
}

/// The id of the message `slot` streams; when none is, `id`, opened with `start`'s events.
fn open(
    slot: &mut Option<String>,
    id: String,
    out: &mut Vec<Value>,
    start: impl FnOnce(&str) -> Vec<Value>,
) -> String {
    slot.get_or_insert_with(|| {
        out.extend(start(&id));
        id
    })
    .clone()
}

/// What a resume entry's `payload` may say to an approval interrupt.
fn approval_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "approved": {"type": "boolean", "description": "false denies the call; absent or \
                true approves it"},
            "reason": {"type": "string", "description": "why it was denied, for the model"},
            "arguments": {"type": "object", "description": "run the call with these arguments \
                instead of the model's"},
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The envelope of event `seq` of type `kind` with `data`.
    fn event(seq: u64, kind: &str, data: Value) -> String {
        json!({"seq": seq, "time": 0, "type": kind, "data": data}).to_string()
    }

    fn types(events: &[Value]) -> Vec<&str> {
        events.iter().map(|e| e["type"].as_str().unwrap()).collect()
    }

    #[test]
    fn a_run_waits_for_the_frontend_only_once_no_call_of_the_group_still_runs() {
        let mut t = Translator::new("s", HashSet::new(), HashSet::new());
        let call = |seq, id: &str| {
            event(
                seq,
                "tool/call",
                json!({"turn": 1, "step": 1, "callId": id, "name": "echo",
                "arguments": "{}"}),
            )
        };
        t.event(&call(5, "asks"));
        t.event(&event(
            6,
            "tool/approval",
            json!({"turn": 1, "step": 1, "callId": "asks", "state": "requested"}),
        ));
        assert!(t.waits_for_frontend(), "the one open call waits for a person");
        t.event(&call(7, "runs"));
        assert!(!t.waits_for_frontend(), "another call of the group runs");
        let result = json!({"turn": 1, "step": 1, "message": {"id": "r1", "role": "tool",
            "source": {"kind": "tool"},
            "content": [{"type": "tool-result", "toolCallId": "runs",
                "content": [{"type": "text", "text": "done"}]}]}});
        let events = t.event(&event(8, "tool/result", result));
        assert_eq!(
            events,
            [json!({"type": "TOOL_CALL_RESULT", "messageId": "r1",
            "toolCallId": "runs", "content": "done", "role": "tool"})]
        );
        assert!(t.waits_for_frontend());
        let end = t.interrupted("thread", "run");
        assert_eq!(end[0]["outcome"]["type"], "interrupt");
        assert_eq!(end[0]["outcome"]["interrupts"][0]["toolCallId"], "asks");
    }

    #[test]
    fn a_stream_joined_in_the_middle_opens_again_what_is_open() {
        let mut t = Translator::new("s", HashSet::new(), HashSet::new());
        let chunk = |seq, chunk: Value| {
            event(seq, "assistant/chunk", json!({"turn": 1, "step": 1, "chunk": chunk}))
        };
        let text = t.event(&chunk(3, json!({"type": "text-delta", "index": 0, "text": "Hi"})));
        assert_eq!(types(&text), ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]);
        let call = t.event(&chunk(
            4,
            json!({"type": "tool-call-delta", "index": 1, "id": "c1",
            "name": "echo", "argumentsDelta": "{"}),
        ));
        assert_eq!(call[0]["parentMessageId"], "s:3");
        assert_eq!(
            t.reopen(),
            [
                json!({"type": "TEXT_MESSAGE_START", "messageId": "s:3", "role": "assistant"}),
                json!({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "echo"})
            ]
        );
        let end = t.finished("thread", "run");
        assert_eq!(types(&end), ["TEXT_MESSAGE_END", "TOOL_CALL_END", "RUN_FINISHED"]);
    }
}
