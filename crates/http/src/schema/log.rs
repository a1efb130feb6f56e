//! The log's JSON shapes as OpenAPI schemas (`docs/events.md`): the event envelope as a union
//! tagged by `type`, one named schema per event type, and the messages, blocks, chunks and
//! reasons inside them. The core's types serialize these shapes; the test below holds every
//! event its transcripts write to them.

use serde_json::{Map, Value, json};

use super::{define, object, pascal, reference, tagged, uint};

/// Each event type with the name of its envelope schema and the schema of its `data` (the
/// members of a union in it defined among `schemas`).
fn event_types(schemas: &mut Map<String, Value>) -> Vec<(&'static str, &'static str, Value)> {
    vec![
        ("agent/inbox/spliced", "InboxSplicedEvent", splice()),
        ("turn/start", "TurnStartEvent", object(&["turn"], json!({"turn": turn()}))),
        (
            "turn/end",
            "TurnEndEvent",
            object(
                &["turn", "reason"],
                json!({"turn": turn(), "reason": reference("TurnEndReason")}),
            ),
        ),
        ("step/start", "StepStartEvent", in_step(&[], json!({}))),
        ("step/end", "StepEndEvent", in_step(&[], json!({}))),
        ("user/message", "UserMessageEvent", reference("Message")),
        ("request/header", "RequestHeaderEvent", request_header()),
        (
            "request/context",
            "RequestContextEvent",
            object(
                &["provider", "model"],
                json!({
                    "provider": {"type": "string", "description": "e.g. `demo`, `openai`."},
                    "model": {"type": "string"},
                    "contextWindow": uint("The model's context window in tokens, when known."),
                    "failover": {
                        "allOf": [reference("ModelError")],
                        "description": "A fallback took over the step: the error that ended \
                            the previous model's retries.",
                    },
                }),
            ),
        ),
        (
            "assistant/chunk",
            "AssistantChunkEvent",
            in_step(&["chunk"], json!({"chunk": reference("StreamChunk")})),
        ),
        (
            "assistant/message",
            "AssistantMessageEvent",
            in_step(
                &["message"],
                json!({
                    "message": reference("Message"),
                    "usage": reference("Usage"),
                    "interrupted": {
                        "type": "boolean",
                        "description": "`true` on the prefix a cancel committed mid-stream; \
                            absent otherwise.",
                    },
                }),
            ),
        ),
        (
            "tool/call",
            "ToolCallEvent",
            in_step(
                &["callId", "name", "arguments"],
                json!({
                    "callId": {"type": "string"},
                    "name": {"type": "string"},
                    "arguments": {"type": "string", "description": "The raw JSON text the model produced."},
                    "client": {"type": "boolean", "description": "A client tool's call: the client posts its result."},
                }),
            ),
        ),
        (
            "tool/result",
            "ToolResultEvent",
            in_step(
                &["message"],
                json!({
                    "message": reference("Message"),
                    "error": object(&["name", "code"], json!({
                        "name": {"type": "string"},
                        "code": {"type": "string", "description": "e.g. `UNKNOWN_TOOL`, `TOOL_TIMEOUT`, `TOOL_OUTCOME_UNKNOWN`."},
                    })),
                }),
            ),
        ),
        (
            "llm/retry",
            "LlmRetryEvent",
            in_step(
                &["attempt", "delayMs", "error"],
                json!({
                    "attempt": uint("1 for the first retry."),
                    "delayMs": uint("The wait before this attempt."),
                    "error": reference("ModelError"),
                }),
            ),
        ),
        ("goal/change", "GoalChangeEvent", goal_change(schemas)),
        (
            "subagent/descriptor",
            "SubagentDescriptorEvent",
            object(
                &["childId", "name", "parentSessionId", "continuable", "version"],
                json!({
                    "childId": {"type": "string"},
                    "name": {"type": ["string", "null"]},
                    "parentSessionId": {"type": "string"},
                    "continuable": {"type": "boolean"},
                    "version": uint("The descriptor's format."),
                }),
            ),
        ),
        ("session/end-seed", "EndSeedEvent", object(&[], json!({}))),
        (
            "tool/approval",
            "ToolApprovalEvent",
            in_step(
                &["callId", "state"],
                json!({
                    "callId": {"type": "string"},
                    "state": {"type": "string", "enum": ["requested", "approved", "denied"]},
                    "reason": {"type": "string", "description": "Why it was denied."},
                    "by": {"type": "string", "description": "Who answered: the key's tenant."},
                }),
            ),
        ),
        ("context/compaction", "ContextCompactionEvent", compaction()),
        ("budget/exhausted", "BudgetExhaustedEvent", reference("BudgetPause")),
        ("budget/resumed", "BudgetResumedEvent", budget_said(false)),
    ]
}

/// `budget/exhausted` (`paused`: with its `scope`; `BudgetPause`) and `budget/resumed`: the
/// budget and what the session had spent.
fn budget_said(paused: bool) -> Value {
    let limits = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "tokens": uint("Prompt plus completion tokens."),
            "costUsd": {"type": "number", "minimum": 0},
        },
    });
    let spent = object(
        &["tokens", "costUsd"],
        json!({"tokens": uint("Prompt plus completion tokens."), "costUsd": {"type": "number"}}),
    );
    let mut fields = json!({"budget": limits, "spent": spent});
    let mut required = vec!["budget", "spent"];
    if paused {
        let scope = "Whose budget is spent: the session's own.";
        fields["scope"] = json!({"type": "string", "enum": ["session"], "description": scope});
        required.push("scope");
    }
    object(&required, fields)
}

/// The schemas of the log: `Event`, each event type's envelope, and what they hold.
pub fn components() -> Map<String, Value> {
    let mut schemas = Map::new();
    let mut mapping = Map::new();
    let mut one_of = Vec::new();
    for (type_name, schema_name, data) in event_types(&mut schemas) {
        let envelope = object(
            &["type", "seq", "time", "data"],
            json!({
                "type": {"type": "string", "enum": [type_name]},
                "seq": uint("Per session, contiguous from 0, never reused."),
                "time": uint("Epoch milliseconds."),
                "data": data,
                "ignorable": {"type": "boolean", "description": "Old readers may skip it."},
                "sourceEventSeqs": {
                    "type": "array", "items": uint(""),
                    "description": "On messages: the seqs the message was built from.",
                },
            }),
        );
        schemas.insert(schema_name.to_owned(), with_description(envelope, type_name));
        mapping.insert(type_name.to_owned(), json!(format!("#/components/schemas/{schema_name}")));
        one_of.push(reference(schema_name));
    }
    schemas.insert(
        "Event".to_owned(),
        json!({
            "description": "One event of a session's log: `{type, seq, time, data}`, its `data` \
                given by its `type`.",
            "oneOf": one_of,
            "discriminator": {"propertyName": "type", "mapping": mapping},
        }),
    );
    let shapes = [
        ("Message", message()),
        ("MessageSource", source()),
        ("ContentBlock", content_block(&mut schemas)),
        ("StreamChunk", stream_chunk(&mut schemas)),
        ("Usage", usage()),
        ("ModelError", model_error()),
        ("TurnEndReason", turn_end_reason(&mut schemas)),
        ("QueueItem", queue_item()),
        ("BudgetPause", budget_said(true)),
    ];
    schemas.extend(shapes.into_iter().map(|(name, schema)| (name.to_owned(), schema)));
    schemas
}

/// `schema` with the event type named in its description.
fn with_description(mut schema: Value, type_name: &str) -> Value {
    schema["description"] = json!(format!("A `{type_name}` event."));
    schema
}

fn turn() -> Value {
    uint("Counts from 1 per session.")
}

/// `{turn, step, …}`: the payload of an event inside a step.
fn in_step(required: &[&str], properties: Value) -> Value {
    let mut all = json!({"turn": turn(), "step": uint("Counts from 1 within the turn.")});
    all.as_object_mut()
        .expect("an object")
        .extend(properties.as_object().cloned().unwrap_or_default());
    let required: Vec<&str> = ["turn", "step"].iter().chain(required).copied().collect();
    object(&required, all)
}

fn splice() -> Value {
    let mut splice = object(
        &["target", "start", "inserted"],
        json!({
            "target": {"type": "string", "enum": ["next-turn", "next-step"]},
            "start": uint("Index in that list."),
            "removedCount": uint("How many items were removed; absent on a pure insertion."),
            "inserted": {"type": "array", "items": reference("Message")},
            "outcome": {"type": "string", "enum": ["canceled"], "description": "Set when a caller removed the items."},
        }),
    );
    splice["description"] = json!("One mutation of an inbox list, as `Array.splice`.");
    splice
}

fn request_header() -> Value {
    let header = object(
        &["model"],
        json!({
            "model": {"type": "string"},
            "system": {"type": "string"},
            "tools": {"type": "array", "items": {"type": "string"}},
            "maxTokens": uint("The output token limit."),
        }),
    );
    object(
        &["header", "reason"],
        json!({"header": header, "reason": {"type": "string", "enum": ["initial", "resume", "change"]}}),
    )
}

fn goal_change(schemas: &mut Map<String, Value>) -> Value {
    let set = object(&["goal"], json!({"goal": reference("Goal")}));
    let cleared = object(
        &["cleared", "goalId"],
        json!({
            "cleared": {"type": "boolean", "description": "Always `true`."},
            "goalId": {"type": "string"},
        }),
    );
    json!({"oneOf": [define(schemas, "GoalSet", set), define(schemas, "GoalCleared", cleared)]})
}

fn compaction() -> Value {
    let mut compaction = object(
        &["summary", "throughSeq", "tokensBefore", "trigger"],
        json!({
            "turn": uint("The turn that needed it; absent for a compaction at idle."),
            "step": uint("The step that needed it."),
            "summary": reference("Message"),
            "throughSeq": uint("The seq of the last event the summary stands for."),
            "tokensBefore": uint("The estimated prompt tokens before."),
            "tokensAfter": uint("The estimated prompt tokens after."),
            "trigger": {"type": "string", "enum": ["pressure", "overflow", "manual"]},
            "usage": {
                "allOf": [reference("Usage")],
                "description": "What the summary request cost, as the provider reported it.",
            },
        }),
    );
    compaction["description"] =
        json!("Later requests send `summary` in place of every message up to `throughSeq`.");
    compaction
}

fn message() -> Value {
    object(
        &["id", "role", "content", "source"],
        json!({
            "id": {"type": "string"},
            "role": {"type": "string", "enum": ["user", "assistant", "tool"]},
            "content": {"type": "array", "items": reference("ContentBlock")},
            "source": reference("MessageSource"),
        }),
    )
}

fn source() -> Value {
    let mut source = object(
        &["kind"],
        json!({
            "kind": {
                "type": "string",
                "description": "`user`, `model`, `tool`, `plugin`, `goal`, `coordinator`, \
                    `subagent` or `compaction`.",
            },
            "delivery": {"type": "string", "enum": ["followup", "steer", "inject"]},
        }),
    );
    source["additionalProperties"] = json!(true);
    source["description"] = json!("Who made a message; other fields depend on `kind`.");
    source
}

fn content_block(schemas: &mut Map<String, Value>) -> Value {
    let members = [
        ("text", &["text"][..], json!({"text": {"type": "string"}})),
        (
            "reasoning",
            &["text"],
            json!({"text": {"type": "string"}, "signature": {"type": "string", "description": "The provider's signature over the reasoning (Anthropic's thinking), sent back with it."}}),
        ),
        (
            "image",
            &["mediaType", "data"],
            json!({"mediaType": {"type": "string"}, "data": {"type": "string", "description": "Base64."}}),
        ),
        (
            "tool-call",
            &["id", "name", "arguments"],
            json!({"id": {"type": "string"}, "name": {"type": "string"}, "arguments": {"type": "string"}}),
        ),
        (
            "tool-result",
            &["toolCallId", "content"],
            json!({
                "toolCallId": {"type": "string"},
                "content": {"type": "array", "items": reference("ContentBlock")},
                "isError": {"type": "boolean", "description": "`true` when the tool failed; absent otherwise."},
            }),
        ),
    ];
    let members = members
        .map(|(kind, required, fields)| (format!("{}Block", pascal(kind)), kind, required, fields));
    tagged(schemas, "type", &members)
}

fn stream_chunk(schemas: &mut Map<String, Value>) -> Value {
    let members = [
        (
            "text-delta",
            &["index", "text"][..],
            json!({"index": uint("Block index within the message."), "text": {"type": "string"}}),
        ),
        (
            "reasoning-delta",
            &["index", "text"],
            json!({
                "index": uint("Block index within the message."),
                "text": {"type": "string"},
                "signature": {"type": "string", "description": "Part of the block's signature."},
            }),
        ),
        (
            "tool-call-delta",
            &["index", "id", "argumentsDelta"],
            json!({
                "index": uint("Call index within the message."),
                "id": {"type": "string"},
                "name": {"type": "string"},
                "argumentsDelta": {"type": "string"},
            }),
        ),
        ("usage", &["usage"], json!({"usage": reference("Usage")})),
        (
            "finish",
            &["reason"],
            json!({"reason": {"type": "string", "enum": ["stop", "tool-calls", "max-tokens", "error", "aborted"]}}),
        ),
    ];
    let members = members
        .map(|(kind, required, fields)| (format!("{}Chunk", pascal(kind)), kind, required, fields));
    tagged(schemas, "type", &members)
}

fn usage() -> Value {
    object(
        &["inputTokens", "outputTokens"],
        json!({
            "inputTokens": uint("Prompt tokens."),
            "outputTokens": uint("Completion tokens."),
            "cacheReadTokens": uint("Prompt tokens served from a cache (part of inputTokens)."),
            "cacheWriteTokens": uint("Prompt tokens written to a cache (part of inputTokens)."),
            "reasoningTokens": uint("Completion tokens spent reasoning."),
        }),
    )
}

fn model_error() -> Value {
    object(
        &["code", "message"],
        json!({
            "code": {
                "type": "string",
                "description": "`RATE_LIMIT`, `SERVER`, `SERVICE_UNAVAILABLE`, `TIMEOUT`, \
                    `CONNECTION`, `MALFORMED`, `AUTH`, `BAD_REQUEST`, `CONTEXT_OVERFLOW` or \
                    `UNKNOWN`.",
            },
            "message": {"type": "string"},
            "status": {"type": "integer", "minimum": 100, "maximum": 599},
            "retryAfterMs": uint("The provider's `Retry-After`."),
        }),
    )
}

/// The kinds of a turn's end reason (`TurnEndReason` of `airlock-core`).
pub(super) const TURN_END_KINDS: [&str; 7] =
    ["completed", "max-tokens", "aborted", "blocked", "error", "interrupted", "paused"];

fn turn_end_reason(schemas: &mut Map<String, Value>) -> Value {
    let cause = json!({"type": "string", "enum": ["user", "parent", "hook", "disposed"]});
    let cause = define(schemas, "AbortCause", object(&["kind"], json!({"kind": cause})));
    let members = TURN_END_KINDS.map(|kind| {
        let (required, fields) = match kind {
            "aborted" => (&["reason"][..], json!({"reason": cause.clone()})),
            "error" => (&["error"][..], json!({"error": reference("ModelError")})),
            _ => (&[][..], json!({})),
        };
        (format!("TurnEnd{}", pascal(kind)), kind, required, fields)
    });
    tagged(schemas, "kind", &members)
}

fn queue_item() -> Value {
    object(
        &["messageId", "target", "delivery", "message"],
        json!({
            "messageId": {"type": "string"},
            "target": {"type": "string", "enum": ["next-turn", "next-step"]},
            "delivery": {"type": "string", "enum": ["followup", "steer", "inject"]},
            "message": reference("Message"),
        }),
    )
}

#[cfg(test)]
mod tests {
    use airlock_core::EventData;

    use super::*;

    #[test]
    fn every_event_type_of_the_core_has_a_schema() {
        let typed: Vec<&str> =
            event_types(&mut Map::new()).into_iter().map(|(name, ..)| name).collect();
        assert_eq!(typed, EventData::TYPE_NAMES);
    }
}
