//! `anthropic:<model>`: Anthropic's messages wire. A [`ModelRequest`] as a request body with
//! prompt-caching breakpoints, and the streamed events (`message_start`, `content_block_*`,
//! `message_delta`, `message_stop`, `ping`, `error`) as [`StreamChunk`]s; the transport is
//! [`super::remote`]'s.
//!
//! **Caching.** A step re-sends the whole conversation, so the body marks where its prefix is
//! stable with `cache_control` breakpoints, three of the API's four: the end of the system prompt
//! (the tools before it, or the last tool when there is no system prompt), the last user message
//! (a user turn or the tool results of the step before), and the user message before that, where
//! the previous step's request wrote its cache. The body is a function of the request alone, so
//! a session's requests stay a pure function of its log.
//!
//! **Thinking.** With [`super::RemoteConfig::thinking_tokens`] set, the body turns extended
//! thinking on; thinking blocks come back as reasoning with the block's signature, and are sent
//! back signed as the API requires. Reasoning without a signature (another provider's) is not sent.

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

/// The `max_tokens` of a request that names none (the API requires one): every current Claude
/// model may answer this much.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// What marks a breakpoint, added to the block it ends.
const BREAKPOINT: &str = r#","cache_control":{"type":"ephemeral"}}"#;

/// One message in the messages wire: its role and its content blocks, each as JSON text.
#[derive(Debug)]
pub(super) struct Part {
    /// `user` (user and tool messages) or `assistant`.
    user: bool,
    blocks: Vec<Box<str>>,
}

/// Each message's blocks, encoded once.
pub(super) type Encoded = super::remote::Encoded<Arc<Part>>;

/// The streaming request body for `request`, as JSON bytes; `thinking_tokens` turns extended
/// thinking on.
pub(super) fn request_body(
    request: &ModelRequest,
    encoded: &Encoded,
    thinking_tokens: Option<u32>,
) -> Result<Vec<u8>, ModelError> {
    let parts = encoded.parts(&request.messages, part);
    let turns = turns(&parts);
    let user_turns: Vec<usize> =
        (0..turns.len()).filter(|&i| turns[i].user).rev().take(2).collect();
    let mut body = Vec::with_capacity(256 + parts.iter().map(|p| p.len()).sum::<usize>());
    body.extend_from_slice(b"{\"model\":");
    write_json(&mut body, &request.model);
    let answer = request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    body.extend_from_slice(b",\"max_tokens\":");
    write_json(&mut body, &(answer + thinking_tokens.unwrap_or(0)));
    if let Some(tokens) = thinking_tokens {
        body.extend_from_slice(b",\"thinking\":");
        write_json(&mut body, &json!({"type": "enabled", "budget_tokens": tokens}));
    }
    body.extend_from_slice(b",\"stream\":true");
    if !request.tools.is_empty() {
        let tools = encoded.tools(&request.tools, tools)?;
        body.extend_from_slice(b",\"tools\":");
        match request.system {
            Some(_) => body.extend_from_slice(tools.as_bytes()),
            None => {
                mark(&mut body, tools.strip_suffix(']').expect("a JSON array"));
                body.push(b']');
            }
        }
    }
    if let Some(system) = &request.system {
        body.extend_from_slice(b",\"system\":[");
        mark(&mut body, &json!({"type": "text", "text": system}).to_string());
        body.push(b']');
    }
    body.extend_from_slice(b",\"messages\":[");
    for (i, turn) in turns.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        let role = if turn.user { "user" } else { "assistant" };
        body.extend_from_slice(b"{\"role\":\"");
        body.extend_from_slice(role.as_bytes());
        body.extend_from_slice(b"\",\"content\":[");
        let last = turn.blocks.len() - 1;
        for (j, block) in turn.blocks.iter().enumerate() {
            if j > 0 {
                body.push(b',');
            }
            if j == last && user_turns.contains(&i) {
                mark(&mut body, block);
            } else {
                body.extend_from_slice(block.as_bytes());
            }
        }
        body.extend_from_slice(b"]}");
    }
    body.extend_from_slice(b"]}");
    Ok(body)
}

impl Part {
    fn len(&self) -> usize {
        self.blocks.iter().map(|b| b.len() + 1).sum()
    }
}

/// A message of the body: consecutive messages of one role joined, as the API wants turns to
/// alternate; in a user turn the tool results come first, as it wants them too.
struct Turn<'a> {
    user: bool,
    blocks: Vec<&'a str>,
}

fn turns(parts: &[Arc<Part>]) -> Vec<Turn<'_>> {
    let mut turns: Vec<Turn<'_>> = Vec::new();
    for part in parts.iter().filter(|p| !p.blocks.is_empty()) {
        let blocks = part.blocks.iter().map(|b| &**b);
        if let Some(turn) = turns.last_mut().filter(|turn| turn.user == part.user) {
            turn.blocks.extend(blocks);
        } else {
            turns.push(Turn { user: part.user, blocks: blocks.collect() });
        }
    }
    for turn in turns.iter_mut().filter(|t| t.user) {
        turn.blocks.sort_by_key(|block| !block.starts_with(r#"{"type":"tool_result""#));
    }
    turns
}

/// `object` (JSON text ending in `}`) with a breakpoint added.
fn mark(out: &mut Vec<u8>, object: &str) {
    let open = object.strip_suffix('}').expect("a JSON object");
    out.extend_from_slice(open.as_bytes());
    out.extend_from_slice(BREAKPOINT.as_bytes());
}

fn write_json(out: &mut Vec<u8>, value: &impl serde::Serialize) {
    serde_json::to_writer(out, value).expect("plain data serializes to JSON");
}

/// `message`'s blocks in the messages wire. Empty text is left out (the API refuses it), and so
/// is reasoning without a signature.
fn part(message: &Message) -> Arc<Part> {
    let user = message.role != Role::Assistant;
    let blocks = message.content.iter().filter_map(|block| block_json(block, user));
    Arc::new(Part { user, blocks: blocks.map(|b| b.to_string().into_boxed_str()).collect() })
}

fn block_json(block: &ContentBlock, user: bool) -> Option<Value> {
    Some(match block {
        ContentBlock::Text { text } if !text.is_empty() => json!({"type": "text", "text": text}),
        ContentBlock::Image { media_type, data } => json!({
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }),
        ContentBlock::ToolResult { tool_call_id, content, is_error } if user => {
            let inner: Vec<Value> = content.iter().filter_map(|b| block_json(b, true)).collect();
            let mut result = json!({"type": "tool_result", "tool_use_id": tool_call_id});
            if !inner.is_empty() {
                result["content"] = Value::Array(inner);
            }
            if *is_error {
                result["is_error"] = json!(true);
            }
            result
        }
        ContentBlock::ToolCall { id, name, arguments } if !user => {
            // The core runs only calls whose arguments are a JSON object; anything else was
            // answered with an error, and the API needs an object here all the same.
            let input = serde_json::from_str::<Value>(arguments)
                .ok()
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({}));
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
        ContentBlock::Reasoning { text, signature: Some(signature) } if !user => {
            json!({"type": "thinking", "thinking": text, "signature": signature})
        }
        _ => return None,
    })
}

/// `tools` as the body's `tools` array.
fn tools(tools: &[ToolSpec]) -> Result<String, ModelError> {
    let list = tools
        .iter()
        .map(|spec| {
            let schema: Value = serde_json::from_str(&spec.parameters).map_err(|e| {
                errors::bad_request(format!(
                    "the parameters of the {} tool are not JSON ({e}); fix the tool's JSON Schema",
                    spec.name
                ))
            })?;
            Ok(json!({"name": spec.name, "description": spec.description, "input_schema": schema}))
        })
        .collect::<Result<Vec<Value>, ModelError>>()?;
    Ok(serde_json::to_string(&list).expect("JSON"))
}

/// One streamed event, as far as it is read; types the API adds later are passed over.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: Started,
    },
    ContentBlockStart {
        index: u32,
        content_block: StartBlock,
    },
    ContentBlockDelta {
        index: u32,
        delta: BlockDelta,
    },
    ContentBlockStop {
        index: u32,
    },
    MessageDelta {
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Error,
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct Started {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StartBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

/// Usage as `message_start` and `message_delta` report it: input tokens exclude what was read
/// from or written to the cache.
#[derive(Clone, Copy, Default, Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// `self` with what `later` reports (`message_delta`'s counts are totals so far).
    fn update(self, later: WireUsage) -> WireUsage {
        WireUsage {
            input_tokens: later.input_tokens.or(self.input_tokens),
            output_tokens: later.output_tokens.or(self.output_tokens),
            cache_creation_input_tokens: later
                .cache_creation_input_tokens
                .or(self.cache_creation_input_tokens),
            cache_read_input_tokens: later.cache_read_input_tokens.or(self.cache_read_input_tokens),
        }
    }
}

impl From<WireUsage> for Usage {
    /// The core counts every prompt token as input, cached ones included (as chat completions
    /// does), and says how many of them the cache served or took.
    fn from(usage: WireUsage) -> Usage {
        let read = usage.cache_read_input_tokens;
        let written = usage.cache_creation_input_tokens;
        Usage {
            input_tokens: usage.input_tokens.unwrap_or(0)
                + read.unwrap_or(0)
                + written.unwrap_or(0),
            output_tokens: usage.output_tokens.unwrap_or(0),
            cache_read_tokens: read,
            cache_write_tokens: written,
            reasoning_tokens: None,
        }
    }
}

/// What a block of the response is, by its index.
enum Block {
    Other,
    Call {
        id: String,
        /// Whether any of its input arrived.
        input: bool,
    },
}

/// Turns the events of one response into chunks; a block keeps the API's index.
pub(super) struct Decoder {
    provider: String,
    blocks: BTreeMap<u32, Block>,
    usage: WireUsage,
    finished: bool,
}

impl Decoder {
    /// A decoder for one response of `provider`.
    pub(super) fn new(provider: &str) -> Decoder {
        Decoder {
            provider: provider.to_owned(),
            blocks: BTreeMap::new(),
            usage: WireUsage::default(),
            finished: false,
        }
    }

    fn call_delta(&mut self, index: u32, name: Option<String>, arguments: String) -> StreamChunk {
        let id = match self.blocks.get_mut(&index) {
            Some(Block::Call { id, input }) => {
                *input |= !arguments.is_empty();
                id.clone()
            }
            _ => String::new(),
        };
        StreamChunk::ToolCallDelta { index, id, name, arguments_delta: arguments }
    }
}

impl Decode for Decoder {
    fn event(&mut self, event: &str, data: &str) -> Result<Decoded, ModelError> {
        let data = data.trim();
        if event == "error" {
            return Err(errors::in_stream(&self.provider, data));
        }
        if data.is_empty() {
            return Ok(Decoded::Chunks(Vec::new()));
        }
        let parsed: Event = serde_json::from_str(data).map_err(|e| {
            let what = format!("an event is not the expected JSON ({e}): {}", errors::quote(data));
            errors::malformed(&self.provider, what)
        })?;
        let mut out = Vec::new();
        match parsed {
            Event::MessageStart { message } => {
                self.usage = self.usage.update(message.usage.unwrap_or_default());
            }
            Event::ContentBlockStart { index, content_block } => match content_block {
                StartBlock::Text { text } if !text.is_empty() => {
                    out.push(StreamChunk::TextDelta { index, text });
                }
                StartBlock::Thinking { thinking } if !thinking.is_empty() => {
                    out.push(StreamChunk::ReasoningDelta {
                        index,
                        text: thinking,
                        signature: None,
                    });
                }
                StartBlock::ToolUse { id, name } => {
                    self.blocks.insert(index, Block::Call { id, input: false });
                    out.push(self.call_delta(index, Some(name), String::new()));
                }
                _ => {
                    self.blocks.insert(index, Block::Other);
                }
            },
            Event::ContentBlockDelta { index, delta } => out.extend(match delta {
                BlockDelta::TextDelta { text } => Some(StreamChunk::TextDelta { index, text }),
                BlockDelta::ThinkingDelta { thinking } => {
                    Some(StreamChunk::ReasoningDelta { index, text: thinking, signature: None })
                }
                BlockDelta::SignatureDelta { signature } => Some(StreamChunk::ReasoningDelta {
                    index,
                    text: String::new(),
                    signature: Some(signature),
                }),
                BlockDelta::InputJsonDelta { partial_json } => {
                    Some(self.call_delta(index, None, partial_json))
                }
                BlockDelta::Other => None,
            }),
            Event::ContentBlockStop { index } => {
                // A call to a tool without parameters streams no input: its arguments are `{}`.
                if matches!(self.blocks.get(&index), Some(Block::Call { input: false, .. })) {
                    out.push(self.call_delta(index, None, "{}".to_owned()));
                }
            }
            Event::MessageDelta { delta, usage } => {
                self.usage = self.usage.update(usage.unwrap_or_default());
                if let Some(reason) = delta.stop_reason {
                    self.finished = true;
                    out.push(StreamChunk::Finish { reason: finish_reason(&reason) });
                    out.push(StreamChunk::Usage { usage: self.usage.into() });
                }
            }
            Event::MessageStop => return Ok(Decoded::Done),
            Event::Error => return Err(errors::in_stream(&self.provider, data)),
            Event::Other => {}
        }
        Ok(Decoded::Chunks(out))
    }

    fn finished(&self) -> bool {
        self.finished
    }
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::MaxTokens,
        "refusal" => FinishReason::Error,
        _ => FinishReason::Stop, // end_turn, stop_sequence, pause_turn
    }
}
