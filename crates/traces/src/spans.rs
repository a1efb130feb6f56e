//! The parts of spans by the GenAI conventions: times, usage, finish reasons, and messages as
//! the conventions' `gen_ai.*.messages` attributes show them.

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use airlock_core::{ContentBlock, FinishReason, Message, Usage};
use opentelemetry::trace::{Link, SpanContext, SpanId, SpanKind, Status};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};

/// A span's parts, before they become its data.
pub(crate) struct Built {
    pub(crate) context: SpanContext,
    pub(crate) parent: SpanId,
    pub(crate) kind: SpanKind,
    pub(crate) name: String,
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) attributes: Vec<KeyValue>,
    pub(crate) events: Vec<opentelemetry::trace::Event>,
    pub(crate) links: Vec<Link>,
    pub(crate) status: Status,
    pub(crate) scope: InstrumentationScope,
}

pub(crate) fn span(built: Built) -> SpanData {
    let mut events = SpanEvents::default();
    events.events = built.events;
    let mut links = SpanLinks::default();
    links.links = built.links;
    SpanData {
        span_context: built.context,
        parent_span_id: built.parent,
        parent_span_is_remote: false,
        span_kind: built.kind,
        name: Cow::Owned(built.name),
        start_time: at(built.start),
        end_time: at(built.end.max(built.start)),
        attributes: built.attributes,
        dropped_attributes_count: 0,
        events,
        links,
        status: built.status,
        instrumentation_scope: built.scope,
    }
}

/// The time an event's `time` (epoch milliseconds) names.
pub(crate) fn at(millis: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(millis)
}

pub(crate) fn span_event(
    name: &'static str,
    time: u64,
    attributes: Vec<KeyValue>,
) -> opentelemetry::trace::Event {
    opentelemetry::trace::Event::new(name, at(time), attributes, 0)
}

pub(crate) fn add_usage(sum: &mut Usage, usage: &Usage) {
    sum.input_tokens += usage.input_tokens;
    sum.output_tokens += usage.output_tokens;
    let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    sum.cache_read_tokens = add(sum.cache_read_tokens, usage.cache_read_tokens);
    sum.cache_write_tokens = add(sum.cache_write_tokens, usage.cache_write_tokens);
    sum.reasoning_tokens = add(sum.reasoning_tokens, usage.reasoning_tokens);
}

pub(crate) fn usage_attributes(usage: &Usage) -> Vec<KeyValue> {
    let mut attributes = vec![
        KeyValue::new("gen_ai.usage.input_tokens", usage.input_tokens as i64),
        KeyValue::new("gen_ai.usage.output_tokens", usage.output_tokens as i64),
    ];
    let optional = [
        ("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens),
        ("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens),
        ("gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens),
    ];
    for (key, value) in optional {
        if let Some(value) = value {
            attributes.push(KeyValue::new(key, value as i64));
        }
    }
    attributes
}

/// A finish reason by the conventions' names.
pub(crate) fn finish_reason(reason: FinishReason) -> &'static str {
    match reason {
        FinishReason::Stop => "stop",
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::MaxTokens => "length",
        FinishReason::Error => "error",
        FinishReason::Aborted => "aborted",
    }
}

/// A message as the conventions' `gen_ai.*.messages` show one: `{role, parts}`.
pub(crate) fn message_json(message: &Message) -> serde_json::Value {
    let role = serde_json::to_value(message.role).unwrap_or_default();
    serde_json::json!({"role": role, "parts": blocks_json(&message.content)})
}

pub(crate) fn blocks_json(blocks: &[ContentBlock]) -> serde_json::Value {
    use serde_json::json;
    let parts = blocks.iter().map(|block| match block {
        ContentBlock::Text { text } => json!({"type": "text", "content": text}),
        ContentBlock::Reasoning { text, .. } => json!({"type": "reasoning", "content": text}),
        ContentBlock::ToolCall { id, name, arguments } => {
            json!({"type": "tool_call", "id": id, "name": name, "arguments": arguments})
        }
        ContentBlock::ToolResult { tool_call_id, content, .. } => {
            json!({"type": "tool_call_response", "id": tool_call_id, "response": blocks_json(content)})
        }
        other => serde_json::to_value(other).unwrap_or_default(),
    });
    serde_json::Value::Array(parts.collect())
}
