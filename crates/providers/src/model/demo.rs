//! The `demo` model: offline and deterministic, so a newcomer sees streaming and tools with no
//! account, and tests can drive every path of the loop.
//!
//! - An ordinary message gets a short answer about what it received, in several chunks.
//! - `/tool <name> <json>` makes it call that tool; when the result comes back it summarizes it.
//! - `/fail <CODE> [message]` makes it fail with that error code (to see errors end to end).
//! - Asked to summarize the conversation (a compaction), it answers with a short deterministic
//!   summary: how many messages there were and the person's latest ones.
//!
//! It counts tokens as the core estimates them ([`airlock_core::estimate`]), and its context
//! window is [`super::DEMO_WINDOW`]: a long enough session shows a compaction.

use std::sync::Arc;

use airlock_core::{
    COMPACTION_INSTRUCTION, ContentBlock, FinishReason, Message, ModelError, ModelRequest, Role,
    StreamChunk, Usage, estimate_request,
};
use futures::stream;

use super::{ChunkStream, ModelProvider};

/// The offline demo model.
#[derive(Debug, Default)]
pub struct Demo;

impl ModelProvider for Demo {
    fn provider(&self) -> &str {
        "demo"
    }

    fn model(&self) -> &str {
        "demo"
    }

    fn stream(&self, request: ModelRequest) -> ChunkStream {
        let prompt = estimate_request(request.system.as_deref(), &request.tools, &request.messages);
        Box::pin(stream::iter(respond(&request.messages, prompt)))
    }
}

/// The whole deterministic response to a conversation.
fn respond(messages: &[Arc<Message>], prompt: u64) -> Vec<Result<StreamChunk, ModelError>> {
    let Some(last) = messages.last() else {
        return answer("There is nothing to answer yet.", prompt);
    };
    if last.role == Role::Tool {
        return answer(&summarize_results(messages), prompt);
    }
    let text = plain_text(last);
    let text = text.trim();
    if text == COMPACTION_INSTRUCTION {
        return answer(&summarize_conversation(&messages[..messages.len() - 1]), prompt);
    }
    if let Some(rest) = text.strip_prefix("/fail") {
        let rest = rest.trim();
        let (code, message) =
            rest.split_once(' ').unwrap_or((rest, "the demo model failed as asked"));
        let code = if code.is_empty() { "UNKNOWN" } else { code };
        let error = ModelError {
            code: code.to_owned(),
            message: message.to_owned(),
            status: None,
            retry_after_ms: None,
        };
        return vec![Err(error)];
    }
    if let Some(rest) = text.strip_prefix("/tool ") {
        let (name, arguments) = rest.trim().split_once(' ').unwrap_or((rest.trim(), "{}"));
        let id = format!("call_{}", messages.len());
        return vec![
            Ok(StreamChunk::TextDelta { index: 0, text: format!("Calling {name}.") }),
            Ok(StreamChunk::ToolCallDelta {
                index: 0,
                id,
                name: Some(name.to_owned()),
                arguments_delta: arguments.trim().to_owned(),
            }),
            Ok(usage(prompt, 3)),
            Ok(StreamChunk::Finish { reason: FinishReason::ToolCalls }),
        ];
    }
    let reply = format!(
        "You said: \"{text}\". I am the demo model, answering offline in a few chunks. \
         Try `/tool echo {{\"text\":\"hi\"}}` to see a tool call."
    );
    answer(&reply, prompt)
}

/// Streams `text` a few words per chunk, then usage and `stop`.
fn answer(text: &str, prompt: u64) -> Vec<Result<StreamChunk, ModelError>> {
    let words: Vec<&str> = text.split_inclusive(' ').collect();
    let mut chunks: Vec<_> = words
        .chunks(3)
        .map(|w| Ok(StreamChunk::TextDelta { index: 0, text: w.concat() }))
        .collect();
    chunks.push(Ok(usage(prompt, words.len() as u64)));
    chunks.push(Ok(StreamChunk::Finish { reason: FinishReason::Stop }));
    chunks
}

/// The prompt's tokens as the core estimates them ([`Demo::stream`]), and words as output tokens.
fn usage(input_tokens: u64, output_tokens: u64) -> StreamChunk {
    StreamChunk::Usage { usage: Usage { input_tokens, output_tokens, ..Usage::default() } }
}

/// A deterministic summary of `messages`: what they held, and the person's last few messages.
fn summarize_conversation(messages: &[Arc<Message>]) -> String {
    let said_by = |role: Role| {
        (messages.iter()).filter(move |m| m.role == role && m.source.kind != "compaction")
    };
    let count = |role| said_by(role).count();
    let said: Vec<String> = (said_by(Role::User).rev())
        .take(3)
        .map(|m| format!("\"{}\"", clipped(plain_text(m).trim(), 80)))
        .collect();
    let earlier = match messages.first() {
        Some(first) if first.source.kind == "compaction" => " It began with an earlier summary.",
        _ => "",
    };
    let latest = match said.is_empty() {
        true => String::new(),
        false => {
            let said: Vec<String> = said.into_iter().rev().collect();
            format!(" The person's latest messages: {}.", said.join(", "))
        }
    };
    format!(
        "The demo model summarized {} messages: {} from the person, {} answers, {} tool results.{earlier}{latest}",
        messages.len(),
        count(Role::User),
        count(Role::Assistant),
        count(Role::Tool),
    )
}

/// The first `most` characters of `text`, with `…` when cut.
fn clipped(text: &str, most: usize) -> String {
    match text.char_indices().nth(most) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// "The <tool> tool returned: <text>." for each trailing tool result.
fn summarize_results(messages: &[Arc<Message>]) -> String {
    let results = messages.iter().rev().take_while(|m| m.role == Role::Tool);
    let mut lines: Vec<String> = results
        .flat_map(|m| &m.content)
        .filter_map(|block| match block {
            ContentBlock::ToolResult { tool_call_id, content, is_error } => {
                let name = tool_name(messages, tool_call_id).unwrap_or("unknown");
                let text: String = content.iter().map(block_text).collect();
                let verb = if *is_error { "failed with" } else { "returned" };
                Some(format!("The {name} tool {verb}: {text}"))
            }
            _ => None,
        })
        .collect();
    lines.reverse();
    lines.join("\n")
}

fn tool_name<'m>(messages: &'m [Arc<Message>], call_id: &str) -> Option<&'m str> {
    messages.iter().flat_map(|m| &m.content).find_map(|block| match block {
        ContentBlock::ToolCall { id, name, .. } if id == call_id => Some(name.as_str()),
        _ => None,
    })
}

fn plain_text(message: &Message) -> String {
    message.content.iter().map(block_text).collect()
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text { text } => text.clone(),
        ContentBlock::ToolResult { content, .. } => content.iter().map(block_text).collect(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_core::Source;

    fn user(text: &str) -> Arc<Message> {
        Arc::new(Message {
            id: "m".into(),
            role: Role::User,
            content: vec![ContentBlock::Text { text: text.into() }],
            source: Source::of("user"),
        })
    }

    fn texts(chunks: &[Result<StreamChunk, ModelError>]) -> String {
        chunks
            .iter()
            .filter_map(|c| match c {
                Ok(StreamChunk::TextDelta { text, .. }) => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn demo_answer_streams_in_several_chunks_and_is_deterministic() {
        let first = respond(&[user("hello")], 0);
        assert!(
            first.iter().filter(|c| matches!(c, Ok(StreamChunk::TextDelta { .. }))).count() > 2
        );
        assert!(texts(&first).starts_with("You said: \"hello\"."));
        assert_eq!(format!("{first:?}"), format!("{:?}", respond(&[user("hello")], 0)));
    }

    #[test]
    fn demo_tool_command_calls_the_tool_then_summarizes_its_result() {
        let call = respond(&[user("/tool echo {\"text\":\"hi\"}")], 0);
        assert!(call.iter().any(|c| matches!(c, Ok(StreamChunk::ToolCallDelta { name: Some(n), arguments_delta, .. }) if n == "echo" && arguments_delta == "{\"text\":\"hi\"}")));
        let assistant = Arc::new(Message {
            id: "a".into(),
            role: Role::Assistant,
            content: vec![ContentBlock::ToolCall {
                id: "call_1".into(),
                name: "echo".into(),
                arguments: "{}".into(),
            }],
            source: Source::of("model"),
        });
        let result = Arc::new(Message {
            id: "r".into(),
            role: Role::Tool,
            content: vec![ContentBlock::ToolResult {
                tool_call_id: "call_1".into(),
                content: vec![ContentBlock::Text { text: "echo: hi".into() }],
                is_error: false,
            }],
            source: Source::of("tool"),
        });
        assert_eq!(
            texts(&respond(&[user("x"), assistant, result], 0)),
            "The echo tool returned: echo: hi"
        );
    }

    #[test]
    fn demo_summarizes_a_conversation_it_is_asked_to_compact() {
        let instruction = Arc::new(Message {
            id: "i".into(),
            role: Role::User,
            content: vec![ContentBlock::Text { text: COMPACTION_INSTRUCTION.into() }],
            source: Source::of("compaction"),
        });
        let summary = texts(&respond(&[user("plan the trip"), user("to Oslo"), instruction], 0));
        assert_eq!(
            summary,
            "The demo model summarized 2 messages: 2 from the person, 0 answers, 0 tool \
             results. The person's latest messages: \"plan the trip\", \"to Oslo\"."
        );
    }

    #[test]
    fn demo_fail_command_fails_with_the_code() {
        let failed = respond(&[user("/fail AUTH bad key")], 0);
        assert!(
            matches!(&failed[..], [Err(ModelError { code, message, .. })] if code == "AUTH" && message == "bad key")
        );
    }
}
