//! What an editor is shown of a session's log: the ACP session updates of each event, as it
//! happens (streamed deltas) and as `session/load` replays it (whole messages).

use agent_client_protocol::v1::schema::{
    ContentBlock as AcpBlock, ContentChunk, ImageContent, SessionUpdate, ToolCall, ToolCallContent,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use airlock_core::{
    ContentBlock, EventData, Message, RawJson, StreamChunk, TurnEndReason, text_of,
};
use serde_json::json;

/// The updates of an event as it happens: streamed deltas, tool calls and their results.
pub(super) fn updates_of(data: &EventData) -> Vec<SessionUpdate> {
    match data {
        EventData::AssistantChunk(chunk) => match &chunk.chunk {
            StreamChunk::TextDelta { text, .. } => {
                vec![SessionUpdate::AgentMessageChunk(chunk_of(text))]
            }
            // A signature-only delta (Anthropic's, after the thinking text) shows nothing.
            StreamChunk::ReasoningDelta { text, .. } if !text.is_empty() => {
                vec![SessionUpdate::AgentThoughtChunk(chunk_of(text))]
            }
            _ => Vec::new(),
        },
        EventData::ToolCall(_) | EventData::ToolResult(_) => tool_updates(data),
        EventData::BudgetExhausted(why) => {
            vec![SessionUpdate::AgentMessageChunk(chunk_of(&format!("\n\n*{}*", paused(why))))]
        }
        _ => Vec::new(),
    }
}

/// What a person reads when the session paused at its budget (`budget/exhausted`'s data).
fn paused(why: &RawJson) -> String {
    let why: serde_json::Value = serde_json::from_str(why.get()).unwrap_or_default();
    let (budget, spent) = (&why["budget"], &why["spent"]);
    let mut limits = Vec::new();
    if let Some(tokens) = budget["tokens"].as_u64() {
        limits.push(format!("{} of {tokens} tokens", spent["tokens"]));
    }
    if let Some(cost) = budget["costUsd"].as_f64() {
        let spent = spent["costUsd"].as_f64().unwrap_or_default();
        limits.push(format!("${spent:.4} of ${cost:.4}"));
    }
    format!(
        "Paused: the session's budget is spent ({}). Your message waits in the queue; raise the \
         budget (PATCH /v1/sessions/{{id}}/budget) to resume.",
        limits.join(", ")
    )
}

/// The updates of an event replayed by `session/load`: whole committed messages.
pub(super) fn replayed(data: &EventData) -> Vec<SessionUpdate> {
    match data {
        EventData::UserMessage(message) => message
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text } => Some(chunk_of(text)),
                ContentBlock::Image { media_type, data } => Some(ContentChunk::new(
                    AcpBlock::Image(ImageContent::new(data.clone(), media_type.clone())),
                )),
                _ => None,
            })
            .map(SessionUpdate::UserMessageChunk)
            .collect(),
        EventData::AssistantMessage(assistant) => message_updates(&assistant.message),
        EventData::ToolCall(_) | EventData::ToolResult(_) => tool_updates(data),
        EventData::TurnEnd(end) => ending(&end.reason)
            .map(|said| SessionUpdate::AgentMessageChunk(chunk_of(&format!("\n\n*{said}*"))))
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

/// How a replayed turn that did not complete says so: live, the prompt's answer told (a stop
/// reason or an error); in a replay, nothing else would.
fn ending(reason: &TurnEndReason) -> Option<String> {
    match reason {
        TurnEndReason::Completed => None,
        TurnEndReason::Error { error } => {
            Some(format!("The turn failed: {}: {}", error.code, error.message))
        }
        TurnEndReason::Aborted { .. } => Some("The turn was cancelled.".into()),
        TurnEndReason::MaxTokens => Some("The answer was cut off at the output limit.".into()),
        TurnEndReason::Blocked => Some("The turn was blocked.".into()),
        TurnEndReason::Interrupted => Some("The turn was interrupted by a restart.".into()),
        TurnEndReason::Paused => Some("Paused: the session's budget is spent.".into()),
    }
}

fn message_updates(message: &Message) -> Vec<SessionUpdate> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(SessionUpdate::AgentMessageChunk(chunk_of(text))),
            ContentBlock::Reasoning { text, .. } if !text.is_empty() => {
                Some(SessionUpdate::AgentThoughtChunk(chunk_of(text)))
            }
            _ => None,
        })
        .collect()
}

fn tool_updates(data: &EventData) -> Vec<SessionUpdate> {
    match data {
        EventData::ToolCall(call) => {
            let input = serde_json::from_str(&call.arguments)
                .unwrap_or_else(|_| json!(call.arguments.clone()));
            let update = ToolCall::new(call.call_id.clone(), call.name.clone())
                .status(ToolCallStatus::InProgress)
                .raw_input(input);
            vec![SessionUpdate::ToolCall(update)]
        }
        EventData::ToolResult(result) => result
            .message
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::ToolResult { tool_call_id, content, is_error } => {
                    let failed = *is_error || result.error.is_some();
                    let status =
                        if failed { ToolCallStatus::Failed } else { ToolCallStatus::Completed };
                    let fields = ToolCallUpdateFields::new()
                        .status(status)
                        .content(vec![ToolCallContent::from(text_of(content))]);
                    Some(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        tool_call_id.clone(),
                        fields,
                    )))
                }
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn chunk_of(text: &str) -> ContentChunk {
    ContentChunk::new(AcpBlock::from(text.to_owned()))
}
