//! A thread's state as LangGraph shows it, read off the log: `{messages: [...]}` in LangChain's
//! message shape, one checkpoint after each message the log commits.

use airlock_core::{
    ContentBlock, Event, EventData, Message, ModelError, StreamChunk, TurnEndReason,
};
use serde_json::{Value, json};

/// What one log event adds to a thread.
#[derive(Debug, PartialEq)]
pub(super) enum Change {
    /// A message, committed: the state has one more, and a new checkpoint.
    Message(Value),
    /// Text of the assistant's message being streamed (the id its committed message will have).
    Delta {
        /// The message's id.
        id: String,
        /// The text.
        text: String,
    },
    /// A turn ended.
    TurnEnd(TurnEndReason),
}

/// A thread's messages so far, read event by event.
pub(super) struct Conversation {
    session: String,
    /// Every message committed so far, in LangChain's shape.
    pub messages: Vec<Value>,
    /// The checkpoint after each of them: the seq and time (ms) of its event.
    pub checkpoints: Vec<(u64, u64)>,
    /// The last turn ended on this model error.
    pub failed: Option<ModelError>,
    /// The id of the assistant message being streamed.
    streaming: Option<String>,
}

impl Conversation {
    /// An empty thread of session `session`.
    pub(super) fn new(session: &str) -> Conversation {
        Conversation {
            session: session.to_owned(),
            messages: Vec::new(),
            checkpoints: Vec::new(),
            failed: None,
            streaming: None,
        }
    }

    /// Reads the next log event: what it adds, if anything.
    pub(super) fn read(&mut self, json: &str) -> Option<Change> {
        let Ok(Some(event)) = Event::parse(json) else { return None };
        let seq = event.seq;
        let message = match event.data {
            EventData::AssistantChunk(chunk) => {
                let StreamChunk::TextDelta { text, .. } = chunk.chunk else { return None };
                let id = self.streaming.get_or_insert_with(|| format!("{}:{seq}", self.session));
                return Some(Change::Delta { id: id.clone(), text });
            }
            EventData::TurnEnd(end) => {
                self.failed = match &end.reason {
                    TurnEndReason::Error { error } => Some(error.clone()),
                    _ => None,
                };
                return Some(Change::TurnEnd(end.reason));
            }
            EventData::UserMessage(message) => human(&message),
            EventData::AssistantMessage(said) => {
                self.streaming = None;
                let first = event.source_event_seqs.as_ref().and_then(|seqs| seqs.first());
                ai(&said.message, &format!("{}:{}", self.session, first.unwrap_or(&seq)))
            }
            EventData::ToolResult(result) => {
                tool(&result.message, &format!("{}:{seq}", self.session))
            }
            _ => return None,
        };
        self.messages.push(message.clone());
        self.checkpoints.push((seq, event.time));
        Some(Change::Message(message))
    }
}

/// A person's message: LangChain's `human`.
fn human(message: &Message) -> Value {
    json!({"type": "human", "id": message.id, "content": content(&message.content)})
}

/// The model's message: LangChain's `ai`, its tool calls with their arguments parsed.
fn ai(message: &Message, id: &str) -> Value {
    let calls: Vec<Value> = message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolCall { id, name, arguments } => {
                let args = serde_json::from_str::<Value>(arguments)
                    .ok()
                    .filter(Value::is_object)
                    .unwrap_or_else(|| json!({}));
                Some(json!({"type": "tool_call", "id": id, "name": name, "args": args}))
            }
            _ => None,
        })
        .collect();
    let text: String = airlock_core::text_of(&message.content);
    json!({"type": "ai", "id": id, "content": text, "tool_calls": calls})
}

/// A tool's result: LangChain's `tool`.
fn tool(message: &Message, id: &str) -> Value {
    let result = message.content.iter().find_map(|block| match block {
        ContentBlock::ToolResult { tool_call_id, content, is_error } => {
            Some((tool_call_id, content, *is_error))
        }
        _ => None,
    });
    let Some((call, content, failed)) = result else {
        return json!({"type": "tool", "id": id, "content": "", "tool_call_id": ""});
    };
    let status = if failed { "error" } else { "success" };
    json!({"type": "tool", "id": id, "content": airlock_core::text_of(content),
        "tool_call_id": call, "status": status})
}

/// A message's content: its text when that is all it holds, else LangChain's content blocks.
fn content(blocks: &[ContentBlock]) -> Value {
    if let [ContentBlock::Text { text }] = blocks {
        return Value::String(text.clone());
    }
    let parts: Vec<Value> = blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(json!({"type": "text", "text": text})),
            ContentBlock::Image { media_type, data } => Some(json!({"type": "image_url",
                "image_url": {"url": format!("data:{media_type};base64,{data}")}})),
            _ => None,
        })
        .collect();
    Value::Array(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64, kind: &str, data: Value) -> String {
        json!({"type": kind, "seq": seq, "time": 1, "data": data}).to_string()
    }

    #[test]
    fn a_conversation_reads_the_log_as_langchain_messages_with_streamed_ids_kept() {
        let mut thread = Conversation::new("t");
        let user = json!({"id": "u1", "role": "user", "content": [{"type": "text", "text": "hi"}],
            "source": {"kind": "user"}});
        assert_eq!(
            thread.read(&event(3, "user/message", user)),
            Some(Change::Message(json!({"type": "human", "id": "u1", "content": "hi"})))
        );
        let delta = |seq, text: &str| {
            event(
                seq,
                "assistant/chunk",
                json!({"turn": 1, "step": 1,
            "chunk": {"type": "text-delta", "index": 0, "text": text}}),
            )
        };
        assert_eq!(
            thread.read(&delta(5, "Call")),
            Some(Change::Delta { id: "t:5".into(), text: "Call".into() })
        );
        assert_eq!(
            thread.read(&delta(6, "ing")),
            Some(Change::Delta { id: "t:5".into(), text: "ing".into() })
        );
        let said = json!({"type": "assistant/message", "seq": 8, "time": 1, "sourceEventSeqs": [5, 6, 7],
            "data": {"turn": 1, "step": 1, "message": {"id": "a", "role": "assistant", "content": [
                {"type": "text", "text": "Calling"},
                {"type": "tool-call", "id": "c1", "name": "echo", "arguments": "{\"text\":\"x\"}"}],
                "source": {"kind": "model"}}}});
        let Some(Change::Message(ai)) = thread.read(&said.to_string()) else { panic!() };
        assert_eq!(
            ai,
            json!({"type": "ai", "id": "t:5", "content": "Calling", "tool_calls": [
            {"type": "tool_call", "id": "c1", "name": "echo", "args": {"text": "x"}}]})
        );
        let result = json!({"turn": 1, "step": 1, "message": {"id": "r", "role": "tool", "content": [
            {"type": "tool-result", "toolCallId": "c1", "content": [{"type": "text", "text": "x"}]}],
            "source": {"kind": "tool"}}});
        let Some(Change::Message(tool)) = thread.read(&event(9, "tool/result", result)) else {
            panic!()
        };
        assert_eq!(
            tool,
            json!({"type": "tool", "id": "t:9", "content": "x", "tool_call_id": "c1", "status": "success"})
        );
        assert_eq!(thread.messages.len(), 3);
        assert_eq!(thread.checkpoints.iter().map(|c| c.0).collect::<Vec<_>>(), [3, 8, 9]);
        assert_eq!(thread.read(&event(10, "step/end", json!({"turn": 1, "step": 1}))), None);
    }
}
