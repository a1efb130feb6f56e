//! The SSE streams as OpenAPI schemas: each stream is the union of the frames it may send,
//! `{event, id?, data}`, and each frame's `data` is a JSON text whose schema is named in its
//! `contentSchema`, so a client generated from the document has a type for every frame it parses.

use serde_json::{Map, Value, json};

use super::{define, object, pascal, reference};

/// The frames of a session's stream: each frame's `event` and the schema of its data.
const SESSION_FRAMES: [(&str, &str); 5] = [
    ("session.event", "Event"),
    ("session.status", "StatusNotice"),
    ("session.queue", "QueueNotice"),
    ("subagent.started", "SubagentStarted"),
    ("subagent.finished", "SubagentFinished"),
];

/// The AG-UI events `POST /ag-ui` sends.
const AG_UI_EVENTS: [&str; 15] = [
    "RUN_STARTED",
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "REASONING_START",
    "REASONING_MESSAGE_START",
    "REASONING_MESSAGE_CONTENT",
    "REASONING_MESSAGE_END",
    "REASONING_END",
    "TOOL_CALL_START",
    "TOOL_CALL_ARGS",
    "TOOL_CALL_END",
    "TOOL_CALL_RESULT",
    "RUN_FINISHED",
    "RUN_ERROR",
];

/// The schemas of the streams and of the notices their frames carry.
pub fn components() -> Map<String, Value> {
    let run: Vec<(&str, &str)> = SESSION_FRAMES
        .into_iter()
        .chain([("run.result", "RunResult"), ("error", "ErrorBody")])
        .collect();
    let hub = [
        ("session.added", "SessionNotice"),
        ("session.removed", "SessionNotice"),
        ("session.status", "StatusNotice"),
    ];
    let mut schemas = Map::new();
    let streams = [
        (
            "SessionStream",
            frames(
                &mut schemas,
                "A frame of a session's stream (`GET …/events`).",
                &SESSION_FRAMES,
            ),
        ),
        (
            "RunStream",
            frames(&mut schemas, "A frame of an owned run's stream (`?stream=true`).", &run),
        ),
        (
            "HubStream",
            frames(&mut schemas, "A frame of the cross-session stream (`GET /v1/events`).", &hub),
        ),
        ("SessionNotice", object(&["sessionId"], json!({"sessionId": {"type": "string"}}))),
        (
            "StatusNotice",
            object(
                &["sessionId", "status"],
                json!({"sessionId": {"type": "string"}, "status": {"type": "string", "enum": ["idle", "running"]}}),
            ),
        ),
        (
            "QueueNotice",
            object(
                &["sessionId", "items"],
                json!({
                    "sessionId": {"type": "string"},
                    "items": {"type": "array", "items": reference("QueueItem"), "description": "The whole queue, `next-step` items first."},
                }),
            ),
        ),
        (
            "SubagentStarted",
            object(
                &["parentSessionId", "childSessionId", "name"],
                json!({
                    "parentSessionId": {"type": "string"},
                    "childSessionId": {"type": "string"},
                    "name": {"type": ["string", "null"]},
                }),
            ),
        ),
        (
            "SubagentFinished",
            object(
                &[
                    "parentSessionId",
                    "childSessionId",
                    "status",
                    "stopReason",
                    "lastAssistantMessage",
                ],
                json!({
                    "parentSessionId": {"type": "string"},
                    "childSessionId": {"type": "string"},
                    "status": {"type": "string", "enum": ["ok", "error"]},
                    "stopReason": {"type": "string", "description": "The child's last turn end reason kind."},
                    "lastAssistantMessage": {"type": "string"},
                }),
            ),
        ),
        (
            "AgUiStream",
            object(
                &["event", "data"],
                json!({
                    "event": {"type": "string", "description": "The AG-UI event's `type`."},
                    "id": {"type": "string", "pattern": "^[0-9]+$", "description": "On the last frame of a log event's AG-UI events: its seq, to post the run again after it with `Last-Event-ID`."},
                    "data": {
                        "type": "string",
                        "contentMediaType": "application/json",
                        "contentSchema": reference("AgUiEvent"),
                    },
                }),
            ),
        ),
        (
            "AgUiEvent",
            object(
                &["type"],
                json!({"type": {"type": "string", "enum": AG_UI_EVENTS, "description": "What the event is; its other fields are AG-UI's (`@ag-ui/core`)."}}),
            ),
        ),
    ];
    schemas.extend(streams.into_iter().map(|(name, schema)| (name.to_owned(), schema)));
    schemas
}

/// A stream's frames: `event` names the frame; `data` is JSON of the schema named beside it; a
/// log event's frame also has its seq as `id`, the cursor to resume from. Each frame is a schema
/// of `schemas` (`session.status` → `SessionStatusFrame`), the same in every stream that sends it.
fn frames(schemas: &mut Map<String, Value>, description: &str, events: &[(&str, &str)]) -> Value {
    let one_of: Vec<Value> = events
        .iter()
        .map(|&(event, data)| {
            let mut properties = json!({
                "event": {"type": "string", "enum": [event]},
                "data": {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": reference(data),
                },
            });
            let mut required = vec!["event", "data"];
            if event == "session.event" {
                properties["id"] = json!({"type": "string", "pattern": "^[0-9]+$"});
                required.push("id");
            }
            define(schemas, &format!("{}Frame", pascal(event)), object(&required, properties))
        })
        .collect();
    json!({"description": description, "oneOf": one_of})
}
