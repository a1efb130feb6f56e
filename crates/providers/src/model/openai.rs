//! `openai:<model>` and `deepseek:<model>`: the chat-completions wire that most servers speak.
//! A [`ModelRequest`] as a request body, and the streamed `chat.completion.chunk`s as
//! [`StreamChunk`]s; the transport is [`super::remote`]'s.

use std::collections::BTreeMap;
use std::sync::Arc;

use airlock_core::{
    ContentBlock, FinishReason, Message, ModelError, ModelRequest, Role, StreamChunk, ToolSpec,
    Usage,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::remote::errors;
use super::remote::{Decode, Decoded};

/// The streaming request body for `request`, as JSON bytes: each message's part comes from
/// `encoded`, so only the messages new since a session's last request are encoded now.
pub(super) fn request_body(
    request: &ModelRequest,
    encoded: &Encoded,
) -> Result<Vec<u8>, ModelError> {
    let parts = encoded.parts(&request.messages, part);
    let mut body = Vec::with_capacity(parts.iter().map(|p| p.len() + 1).sum::<usize>() + 256);
    body.extend_from_slice(b"{\"model\":");
    write_json(&mut body, &request.model);
    body.extend_from_slice(b",\"messages\":[");
    let mut first = true;
    let system = request.system.as_ref().map(|system| {
        serde_json::to_string(&json!({"role": "system", "content": system})).expect("JSON")
    });
    for part in system.iter().map(String::as_str).chain(parts.iter().map(|p| &**p)) {
        if !part.is_empty() {
            if !std::mem::take(&mut first) {
                body.push(b',');
            }
            body.extend_from_slice(part.as_bytes());
        }
    }
    body.extend_from_slice(b"],\"stream\":true,\"stream_options\":{\"include_usage\":true}");
    if !request.tools.is_empty() {
        body.extend_from_slice(b",\"tools\":");
        body.extend_from_slice(encoded.tools(&request.tools, tools)?.as_bytes());
    }
    if let Some(max_tokens) = request.max_tokens {
        body.extend_from_slice(b",\"max_tokens\":");
        write_json(&mut body, &max_tokens);
    }
    body.push(b'}');
    Ok(body)
}

fn write_json(out: &mut Vec<u8>, value: &impl serde::Serialize) {
    serde_json::to_writer(out, value).expect("plain data serializes to JSON");
}

/// Each message's chat-completions messages: 0, 1 or more JSON objects, joined by commas.
pub(super) type Encoded = super::remote::Encoded<Arc<str>>;

/// `message` as chat-completions messages, joined by commas.
fn part(message: &Message) -> Arc<str> {
    let mut objects = Vec::new();
    match message.role {
        Role::Assistant => objects.extend(assistant(message)),
        Role::User | Role::Tool => user(message, &mut objects),
    }
    let objects: Vec<String> =
        objects.iter().map(|object| serde_json::to_string(object).expect("JSON")).collect();
    objects.join(",").into()
}

/// `tools` as the body's `tools` array.
fn tools(tools: &[ToolSpec]) -> Result<String, ModelError> {
    let list: Vec<Value> = tools.iter().map(tool).collect::<Result<_, _>>()?;
    Ok(serde_json::to_string(&list).expect("JSON"))
}

/// Text and tool calls; reasoning is never sent back. `None` when nothing is left to send.
fn assistant(message: &Message) -> Option<Value> {
    let text = texts(&message.content);
    let calls: Vec<Value> = message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolCall { id, name, arguments } => Some(json!({
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            })),
            _ => None,
        })
        .collect();
    match (text.is_empty(), calls.is_empty()) {
        (true, true) => None,
        (_, true) => Some(json!({"role": "assistant", "content": text})),
        (true, false) => Some(json!({"role": "assistant", "content": null, "tool_calls": calls})),
        (false, false) => Some(json!({"role": "assistant", "content": text, "tool_calls": calls})),
    }
}

/// Tool results become `role: "tool"` messages (first, so they follow the assistant's calls);
/// text and images become one user message: a plain string when it is all text.
fn user(message: &Message, out: &mut Vec<Value>) {
    let mut parts = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::ToolResult { tool_call_id, content, .. } => out.push(json!({
                "role": "tool",
                "tool_call_id": tool_call_id,
                "content": texts(content),
            })),
            ContentBlock::Text { text } => parts.push(json!({"type": "text", "text": text})),
            ContentBlock::Image { media_type, data } => parts.push(json!({
                "type": "image_url",
                "image_url": {"url": format!("data:{media_type};base64,{data}")},
            })),
            ContentBlock::Reasoning { .. } | ContentBlock::ToolCall { .. } => {}
        }
    }
    if parts.is_empty() {
        return;
    }
    let content = if parts.iter().all(|p| p["type"] == "text") {
        json!(texts(&message.content))
    } else {
        json!(parts)
    };
    out.push(json!({"role": "user", "content": content}));
}

/// The text blocks joined by newlines; an image inside a tool result is named, not sent.
fn texts(blocks: &[ContentBlock]) -> String {
    let texts: Vec<String> = blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.clone()),
            ContentBlock::Image { media_type, .. } => Some(format!("[{media_type} image]")),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

fn tool(spec: &ToolSpec) -> Result<Value, ModelError> {
    let parameters: Value = serde_json::from_str(&spec.parameters).map_err(|e| {
        errors::bad_request(format!(
            "the parameters of the {} tool are not JSON ({e}); fix the tool's JSON Schema",
            spec.name
        ))
    })?;
    Ok(json!({
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": parameters},
    }))
}

/// One `chat.completion.chunk`, as far as it is read.
#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    /// DeepSeek's reasoning text.
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
    /// DeepSeek reports cache hits here.
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

/// Turns the events of one response into chunks, remembering each tool call's id: providers send
/// it on the first delta of a call only, the core wants it on every delta.
pub(super) struct Decoder {
    provider: String,
    call_ids: BTreeMap<u32, String>,
    finished: bool,
}

impl Decoder {
    /// A decoder for one response of `provider`.
    pub(super) fn new(provider: &str) -> Decoder {
        Decoder { provider: provider.to_owned(), call_ids: BTreeMap::new(), finished: false }
    }

    fn delta(&mut self, delta: Delta, out: &mut Vec<StreamChunk>) {
        if let Some(text) = delta.reasoning_content.filter(|t| !t.is_empty()) {
            out.push(StreamChunk::ReasoningDelta { index: 0, text, signature: None });
        }
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            out.push(StreamChunk::TextDelta { index: 0, text });
        }
        for (position, call) in delta.tool_calls.into_iter().flatten().enumerate() {
            let index = call.index.unwrap_or(position as u32);
            if let Some(id) = call.id.filter(|id| !id.is_empty()) {
                self.call_ids.entry(index).or_insert(id);
            }
            let (name, arguments) = match call.function {
                Some(f) => (f.name.filter(|n| !n.is_empty()), f.arguments.unwrap_or_default()),
                None => (None, String::new()),
            };
            out.push(StreamChunk::ToolCallDelta {
                index,
                id: self.call_ids.get(&index).cloned().unwrap_or_default(),
                name,
                arguments_delta: arguments,
            });
        }
    }
}

impl Decode for Decoder {
    fn event(&mut self, event: &str, data: &str) -> Result<Decoded, ModelError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(Decoded::Done);
        }
        if event == "error" {
            return Err(errors::in_stream(&self.provider, data));
        }
        if data.is_empty() {
            return Ok(Decoded::Chunks(Vec::new()));
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            let what = format!("a chunk is not the expected JSON ({e}): {}", errors::quote(data));
            errors::malformed(&self.provider, what)
        })?;
        if chunk.error.is_some() {
            return Err(errors::in_stream(&self.provider, data));
        }
        let mut out = Vec::new();
        for choice in chunk.choices.into_iter().flatten() {
            if let Some(delta) = choice.delta {
                self.delta(delta, &mut out);
            }
            if let Some(reason) = choice.finish_reason {
                self.finished = true;
                out.push(StreamChunk::Finish { reason: finish_reason(&reason) });
            }
        }
        if let Some(usage) = chunk.usage {
            out.push(StreamChunk::Usage { usage: usage.into() });
        }
        Ok(Decoded::Chunks(out))
    }

    fn finished(&self) -> bool {
        self.finished
    }
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "tool_calls" => FinishReason::ToolCalls,
        "length" => FinishReason::MaxTokens,
        "content_filter" => FinishReason::Error,
        _ => FinishReason::Stop,
    }
}

impl From<WireUsage> for Usage {
    fn from(usage: WireUsage) -> Usage {
        let cached = usage.prompt_tokens_details.and_then(|d| d.cached_tokens);
        Usage {
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
            cache_read_tokens: cached.or(usage.prompt_cache_hit_tokens),
            cache_write_tokens: None,
            reasoning_tokens: usage.completion_tokens_details.and_then(|d| d.reasoning_tokens),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(id: &str, role: Role, text: &str) -> Arc<Message> {
        let content = vec![ContentBlock::Text { text: text.into() }];
        Arc::new(Message { id: id.into(), role, content, source: airlock_core::Source::of("user") })
    }

    fn request(messages: Vec<Arc<Message>>) -> ModelRequest {
        ModelRequest {
            request_id: 1,
            route: 0,
            model: "m".into(),
            system: Some("be brief".into()),
            messages,
            tools: Vec::new(),
            max_tokens: Some(64),
        }
    }

    fn body(request: &ModelRequest, encoded: &Encoded) -> Value {
        serde_json::from_slice(&request_body(request, encoded).unwrap()).unwrap()
    }

    #[test]
    fn a_conversation_encoded_a_step_at_a_time_sends_what_encoding_it_whole_sends() {
        let encoded = Encoded::default();
        let first = vec![message("u1", Role::User, "hi"), message("a1", Role::Assistant, "")];
        body(&request(first.clone()), &encoded);
        let mut second = first;
        second.extend([message("a2", Role::Assistant, "hello"), message("u2", Role::User, "more")]);
        let sent = body(&request(second.clone()), &encoded);
        assert_eq!(sent, body(&request(second), &Encoded::default()));
        assert_eq!(
            sent["messages"],
            json!([
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello"},
                {"role": "user", "content": "more"},
            ]),
            "an assistant message with nothing to send is left out"
        );
        assert_eq!(sent["max_tokens"], 64);
        assert_eq!(sent["stream"], true);
    }

    #[test]
    fn a_request_that_leaves_its_conversations_last_request_sends_its_own_messages() {
        let encoded = Encoded::default();
        let first = message("u1", Role::User, "hi");
        let long = vec![
            first.clone(),
            message("a1", Role::Assistant, "x"),
            message("u2", Role::User, "y"),
        ];
        body(&request(long), &encoded);
        let other = vec![first.clone(), message("a1", Role::Assistant, "z")];
        assert_eq!(
            body(&request(other.clone()), &encoded),
            body(&request(other), &Encoded::default())
        );
        let compacted = vec![message("s", Role::User, "summary"), first];
        let sent = body(&request(compacted.clone()), &encoded);
        assert_eq!(sent, body(&request(compacted), &Encoded::default()));
        assert_eq!(sent["messages"][1]["content"], "summary");
    }

    #[test]
    fn a_tool_list_is_encoded_again_when_it_changes() {
        let encoded = Encoded::default();
        let spec = |name: &str| ToolSpec {
            name: name.into(),
            description: "does it".into(),
            parameters: r#"{"type":"object"}"#.into(),
            parallel_safe: true,
            ..ToolSpec::default()
        };
        let mut asked = request(vec![message("u1", Role::User, "hi")]);
        asked.tools = vec![spec("a")];
        assert_eq!(body(&asked, &encoded)["tools"][0]["function"]["name"], "a");
        asked.tools = vec![spec("a"), spec("b")];
        let sent = body(&asked, &encoded);
        assert_eq!(sent["tools"], body(&asked, &Encoded::default())["tools"]);
        assert_eq!(sent["tools"][1]["function"]["parameters"], json!({"type": "object"}));
        asked.tools[1].parameters = "{".into();
        let refused = request_body(&asked, &encoded).unwrap_err();
        assert!(
            refused.message.contains("the parameters of the b tool are not JSON"),
            "{refused:?}"
        );
    }
}
