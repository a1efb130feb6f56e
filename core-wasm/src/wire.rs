//! The JSON shapes of `docs/events.md`: messages, content blocks, stream chunks, end reasons.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A message id: a UUID v7 or ULID string from the host, or derived from the session id and a seq.
pub type MessageId = String;

/// `{id, role, content, source}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Unique while pending, never reused.
    pub id: MessageId,
    /// Who speaks.
    pub role: Role,
    /// The message body.
    pub content: Vec<ContentBlock>,
    /// Who made it (`user`, `model`, `tool`, `plugin`, `goal`, `coordinator`, `subagent`).
    pub source: Source,
}

impl Message {
    /// A person's message (source `user`) with this id.
    pub fn user(id: MessageId, content: Vec<ContentBlock>) -> Message {
        Message { id, role: Role::User, content, source: Source::of("user") }
    }
}

/// The text blocks of a message's content, joined.
pub fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The speaker of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A person, a goal round, injected context.
    User,
    /// The model.
    Assistant,
    /// A tool result.
    Tool,
}

/// `{kind, ...}`: the origin of a message; kinds other than `kind` are carried through untouched.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// `user`, `model`, `tool`, `plugin`, `goal`, `coordinator` or `subagent`.
    pub kind: String,
    /// Kind-specific fields (a goal round's `goalId`, `revision`, `round`, ...).
    #[serde(flatten)]
    pub details: BTreeMap<String, Value>,
}

impl Source {
    /// A source with no details.
    pub fn of(kind: &str) -> Self {
        Source { kind: kind.to_owned(), details: BTreeMap::new() }
    }
}

/// One block of message content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// The model's visible reasoning.
    Reasoning {
        /// The text.
        text: String,
        /// The provider's signature over it (Anthropic's thinking blocks), sent back with it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// An inline image.
    #[serde(rename_all = "camelCase")]
    Image {
        /// e.g. `image/png`.
        media_type: String,
        /// Base64 data.
        data: String,
    },
    /// A call the model asked for.
    ToolCall {
        /// The model's call id.
        id: String,
        /// The tool's name.
        name: String,
        /// The raw JSON text the model produced.
        arguments: String,
    },
    /// The answer to a tool call.
    #[serde(rename_all = "camelCase")]
    ToolResult {
        /// The call this answers.
        tool_call_id: String,
        /// What the tool returned.
        content: Vec<ContentBlock>,
        /// Set when the tool failed.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

/// One delta of a model stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum StreamChunk {
    /// Text for the block at `index`.
    TextDelta {
        /// Block index within the message.
        index: u32,
        /// The text.
        text: String,
    },
    /// Reasoning text for the block at `index`.
    ReasoningDelta {
        /// Block index within the message.
        index: u32,
        /// The text.
        text: String,
        /// Part of the block's signature (Anthropic sends it after the text).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Part of a tool call.
    #[serde(rename_all = "camelCase")]
    ToolCallDelta {
        /// Call index within the message.
        index: u32,
        /// The call id.
        id: String,
        /// The tool name (on the first delta of a call).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// More argument text.
        arguments_delta: String,
    },
    /// Token counts.
    Usage {
        /// The counts.
        usage: Usage,
    },
    /// Why the stream ended.
    Finish {
        /// The provider's finish reason.
        reason: FinishReason,
    },
}

impl StreamChunk {
    /// The bytes of output it carries: text, reasoning, tool-call arguments.
    pub fn output_bytes(&self) -> u64 {
        match self {
            StreamChunk::TextDelta { text, .. } | StreamChunk::ReasoningDelta { text, .. } => {
                text.len() as u64
            }
            StreamChunk::ToolCallDelta { arguments_delta, .. } => arguments_delta.len() as u64,
            StreamChunk::Usage { .. } | StreamChunk::Finish { .. } => 0,
        }
    }
}

/// Why a model stream ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FinishReason {
    /// A natural end.
    Stop,
    /// The model wants its tool calls run.
    ToolCalls,
    /// The output token limit was hit.
    MaxTokens,
    /// The provider reported an error.
    Error,
    /// The stream was aborted.
    Aborted,
}

/// Token counts of one model response.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from a cache (part of `input_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Prompt tokens written to a cache (part of `input_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    /// Completion tokens spent reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

/// A model failure as the provider reported it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelError {
    /// `RATE_LIMIT`, `SERVER`, `SERVICE_UNAVAILABLE`, `TIMEOUT`, `CONNECTION`, `MALFORMED`, `AUTH`,
    /// `BAD_REQUEST`, `CONTEXT_OVERFLOW` or `UNKNOWN`.
    pub code: String,
    /// What happened, for a person.
    pub message: String,
    /// The HTTP status, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The provider's `Retry-After`, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

impl ModelError {
    /// Codes that are retried with backoff inside the same step.
    pub fn is_transient(&self) -> bool {
        matches!(
            self.code.as_str(),
            "RATE_LIMIT"
                | "SERVER"
                | "SERVICE_UNAVAILABLE"
                | "TIMEOUT"
                | "CONNECTION"
                | "MALFORMED"
        )
    }
}

/// Who cancelled a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CancelCause {
    /// A person or client.
    User,
    /// The parent session.
    Parent,
    /// A hook.
    Hook,
    /// The session is being disposed of.
    Disposed,
}

/// `{kind: user|parent|hook|disposed}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AbortReason {
    /// The first cause.
    pub kind: CancelCause,
}

/// How a turn ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TurnEndReason {
    /// The model finished.
    Completed,
    /// A step of the turn hit the output token limit.
    MaxTokens,
    /// Cancelled.
    Aborted {
        /// The first cause.
        reason: AbortReason,
    },
    /// The pre-step policy rejected the claimed work.
    Blocked,
    /// The model failed for good.
    Error {
        /// What failed.
        error: ModelError,
    },
    /// Closed by crash repair.
    Interrupted,
    /// The pre-step policy paused the session (a budget ran out): the claimed work went back to
    /// the inbox, and the session takes up where it stopped when it is resumed.
    Paused,
}

impl TurnEndReason {
    /// The wire name of the kind: `completed`, `max-tokens`, `aborted`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            TurnEndReason::Completed => "completed",
            TurnEndReason::MaxTokens => "max-tokens",
            TurnEndReason::Aborted { .. } => "aborted",
            TurnEndReason::Blocked => "blocked",
            TurnEndReason::Error { .. } => "error",
            TurnEndReason::Interrupted => "interrupted",
            TurnEndReason::Paused => "paused",
        }
    }

    /// Whether the loop goes on draining the inbox after this ending.
    pub fn continues_drain(&self) -> bool {
        matches!(self, TurnEndReason::Completed | TurnEndReason::MaxTokens)
    }
}

/// An inbox list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Target {
    /// Followups: one per turn, FIFO.
    NextTurn,
    /// Steering and injected context: all of it at the next step boundary.
    NextStep,
}
