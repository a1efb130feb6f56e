//! The LangGraph face's schemas (`/langgraph`): the bodies it takes, as `langgraph/wire.rs`
//! reads them (a field left out or `null` is the same), and what it answers, as LangGraph's SDK
//! types them. Each is named with `LangGraph` before the name of its LangGraph type.

use serde_json::{Map, Value, json};

use super::{define, object};

/// LangGraph's stream modes; Airlock sends `values`, `messages-tuple` and `updates`.
const STREAM_MODES: [&str; 9] = [
    "values",
    "messages",
    "messages-tuple",
    "updates",
    "events",
    "debug",
    "custom",
    "tasks",
    "checkpoints",
];

/// An image as a `data:` URL: its type one providers read, its data padded standard base64.
const DATA_URL: &str = r"^data:(?:image/png|image/jpeg|image/gif|image/webp);base64,(?:(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)|(?:[A-Za-z0-9+/]{4})+)$(?![\s\S])";

/// The LangGraph schemas, by name.
pub fn components() -> Map<String, Value> {
    let mut schemas = Map::new();
    requests(&mut schemas);
    answers(&mut schemas);
    schemas
}

/// `T` or `null`: what serde reads as an `Option` field.
fn nullable(schema: Value) -> Value {
    match schema.get("type").and_then(Value::as_str) {
        Some(kind) => {
            let kind = kind.to_owned();
            let mut schema = schema;
            schema["type"] = json!([kind, "null"]);
            schema
        }
        _ => json!({"oneOf": [{"type": "null"}, schema]}),
    }
}

/// A string that is one of `values`, or `null`.
fn one_of(values: &[&str]) -> Value {
    let mut values: Vec<Value> = values.iter().map(|v| json!(v)).collect();
    values.push(Value::Null);
    json!({"type": ["string", "null"], "enum": values})
}

/// A page's size: 0 to 1000, 10 unless given.
fn limit() -> Value {
    json!({"type": ["integer", "null"], "minimum": 0, "maximum": 1000, "description": "10 unless given."})
}

/// Where a page starts.
fn offset() -> Value {
    json!({"type": ["integer", "null"], "minimum": 0, "maximum": u32::MAX})
}

/// A free-form object, or `null`.
fn free_object(description: &str) -> Value {
    json!({"type": ["object", "null"], "description": description})
}

fn requests(schemas: &mut Map<String, Value>) {
    let checkpoint_id = json!({"type": ["string", "null"], "pattern": "^[0-9]{1,18}$(?![\\s\\S])",
        "description": "A checkpoint's id, as a state gave it."});
    let configurable = define(
        schemas,
        "LangGraphConfigurable",
        object(&[], json!({"checkpoint_id": checkpoint_id})),
    );
    let checkpoint = define(
        schemas,
        "LangGraphCheckpointRef",
        object(
            &[],
            json!({"checkpoint_id": checkpoint_id, "configurable": nullable(configurable)}),
        ),
    );
    let entries = [
        (
            "LangGraphAssistantSearch",
            object(
                &[],
                json!({
                    "graph_id": {"type": ["string", "null"]},
                    "name": {"type": ["string", "null"]},
                    "metadata": free_object("Pairs the assistant must have (it has none)."),
                    "limit": limit(),
                    "offset": offset(),
                }),
            ),
        ),
        (
            "LangGraphThreadCreate",
            object(
                &[],
                json!({
                    "thread_id": {"type": ["string", "null"], "pattern": "^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$(?![\\s\\S])",
                        "description": "The thread's id (a session id); a fresh one unless given."},
                    "if_exists": one_of(&["raise", "do_nothing"]),
                    "metadata": free_object("Kept with the thread; `threads/search` filters by it."),
                }),
            ),
        ),
        (
            "LangGraphThreadSearch",
            object(
                &[],
                json!({
                    "ids": {"type": ["array", "null"], "items": {"type": "string"}},
                    "metadata": free_object("Pairs each thread must have."),
                    "status": one_of(&["idle", "busy", "interrupted", "error"]),
                    "limit": limit(),
                    "offset": offset(),
                    "sort_by": one_of(&["thread_id"]),
                    "sort_order": one_of(&["asc"]),
                }),
            ),
        ),
        (
            "LangGraphHistoryQuery",
            object(&[], json!({"limit": limit(), "before": nullable(checkpoint.clone())})),
        ),
    ];
    for (name, schema) in entries {
        define(schemas, name, schema);
    }
    let input = run_input(schemas);
    let command = resume(schemas);
    let mode = json!({"type": "string", "enum": STREAM_MODES});
    define(
        schemas,
        "LangGraphRunCreate",
        object(
            &["assistant_id"],
            json!({
                "assistant_id": {"type": "string", "description": "`agent`, the one assistant."},
                "input": nullable(input),
                "command": nullable(command),
                "stream_mode": {"oneOf": [{"type": "null"}, mode, {"type": "array", "items": mode}],
                    "description": "`values` unless given."},
                "multitask_strategy": one_of(&["reject", "enqueue", "interrupt"]),
                "if_not_exists": one_of(&["create", "reject"]),
                "checkpoint": nullable(checkpoint),
                "checkpoint_id": checkpoint_id,
            }),
        ),
    );
}

/// A run's `input`: messages in LangChain's shape (`type`) or OpenAI's (`role`).
fn run_input(schemas: &mut Map<String, Value>) -> Value {
    let image_url = define(
        schemas,
        "LangGraphImageUrl",
        object(&["url"], json!({"url": {"type": "string", "pattern": DATA_URL}})),
    );
    let text = define(
        schemas,
        "LangGraphTextPart",
        object(
            &["type", "text"],
            json!({"type": {"type": "string", "enum": ["text"]},
            "text": {"type": "string"}}),
        ),
    );
    let image = define(
        schemas,
        "LangGraphImagePart",
        object(
            &["type", "image_url"],
            json!({"type": {"type": "string", "enum": ["image_url"]},
                "image_url": {"oneOf": [{"type": "string", "pattern": DATA_URL}, image_url]}}),
        ),
    );
    let part = json!({"oneOf": [{"type": "string"}, text, image]});
    let content = json!({"oneOf": [{"type": "string"}, {"type": "array", "items": part}],
        "description": "Text, or a list of parts; an image as a `data:` URL."});
    let id = json!({"type": ["string", "null"], "minLength": 1, "maxLength": 200});
    let typed = define(
        schemas,
        "LangGraphTypedMessage",
        object(
            &["type", "content"],
            json!({"type": {"type": "string", "enum": ["human", "ai", "tool", "system"]},
                "id": id, "content": content}),
        ),
    );
    let role = define(
        schemas,
        "LangGraphRoleMessage",
        object(
            &["role", "content"],
            json!({"role": {"type": "string", "enum": ["user", "assistant", "tool", "system", "developer"]},
                "id": id, "content": content}),
        ),
    );
    let message = define(
        schemas,
        "LangGraphInputMessage",
        json!({"anyOf": [typed, role], "description": "Only the human (`user`) messages are taken; the thread has the others."}),
    );
    define(
        schemas,
        "LangGraphRunInput",
        object(
            &[],
            json!({"messages": {"oneOf": [{"type": "null"}, message,
                {"type": "array", "items": message}]}}),
        ),
    )
}

/// A run's `command`: its `resume`, the answers to the thread's interrupts.
fn resume(schemas: &mut Map<String, Value>) -> Value {
    let tag = |kind: &str| json!({"type": "string", "enum": [kind]});
    let approve = define(
        schemas,
        "LangGraphApproveDecision",
        object(&["type"], json!({"type": tag("approve")})),
    );
    let edited = define(
        schemas,
        "LangGraphEditedAction",
        object(
            &["args"],
            json!({"args": {"type": "object", "description": "The call's arguments, as the person edited them."}}),
        ),
    );
    let edit = define(
        schemas,
        "LangGraphEditDecision",
        object(&["type", "edited_action"], json!({"type": tag("edit"), "edited_action": edited})),
    );
    let reject = define(
        schemas,
        "LangGraphRejectDecision",
        object(
            &["type"],
            json!({"type": tag("reject"),
            "message": {"type": ["string", "null"], "description": "Why, for the model."}}),
        ),
    );
    let decision = define(
        schemas,
        "LangGraphDecision",
        json!({"anyOf": [{"type": "boolean"}, {"type": "string", "enum": ["approve", "reject"]},
            approve, edit, reject]}),
    );
    let decisions = define(
        schemas,
        "LangGraphDecisions",
        object(
            &["decisions"],
            json!({"decisions": {"type": "array", "items": decision,
            "description": "One per interrupt, in the order they came."}}),
        ),
    );
    let by_id = define(
        schemas,
        "LangGraphDecisionsById",
        json!({"type": "object", "additionalProperties": decision,
            "description": "A decision per interrupt id; an id of a call that no longer waits is passed over."}),
    );
    let resume = json!({"anyOf": [decision, decisions, by_id]});
    define(schemas, "LangGraphCommand", object(&[], json!({"resume": nullable(resume)})))
}

fn answers(schemas: &mut Map<String, Value>) {
    let string = json!({"type": "string"});
    let time = json!({"type": "string", "format": "date-time"});
    let message = define(
        schemas,
        "LangGraphMessage",
        object(
            &["type", "id", "content"],
            json!({"type": {"type": "string", "enum": ["human", "ai", "tool"]}, "id": string,
                "content": {"oneOf": [string, {"type": "array", "items": {"type": "object"}}]}}),
        ),
    );
    let interrupt = define(
        schemas,
        "LangGraphInterrupt",
        object(
            &["id", "value"],
            json!({"id": {"type": "string", "description": "The waiting call's id."},
                "value": {"type": "object", "description": "`{action_requests, review_configs}`, as LangChain's human-in-the-loop middleware asks."}}),
        ),
    );
    let values = define(
        schemas,
        "LangGraphValues",
        object(
            &[],
            json!({"messages": {"type": "array", "items": message},
                "__interrupt__": {"type": "array", "items": interrupt}}),
        ),
    );
    let checkpoint = define(
        schemas,
        "LangGraphCheckpoint",
        object(
            &["thread_id", "checkpoint_ns", "checkpoint_id"],
            json!({"thread_id": string, "checkpoint_ns": string,
                "checkpoint_id": {"type": ["string", "null"], "description": "The seq of the event that committed the state's last message; `null` before any."},
                "checkpoint_map": {"type": "null"}}),
        ),
    );
    let task = define(
        schemas,
        "LangGraphTask",
        object(
            &["id", "name", "interrupts"],
            json!({"id": string, "name": string, "error": {"type": ["string", "null"]},
                "interrupts": {"type": "array", "items": interrupt}}),
        ),
    );
    let assistant = define(
        schemas,
        "LangGraphAssistant",
        object(
            &[
                "assistant_id",
                "graph_id",
                "name",
                "config",
                "metadata",
                "version",
                "created_at",
                "updated_at",
            ],
            json!({"assistant_id": string, "graph_id": string, "name": string,
                "description": string, "config": {"type": "object"}, "context": {"type": "object"},
                "metadata": {"type": "object"}, "version": {"type": "integer"},
                "created_at": time, "updated_at": time}),
        ),
    );
    let thread = define(
        schemas,
        "LangGraphThread",
        object(
            &[
                "thread_id",
                "created_at",
                "updated_at",
                "metadata",
                "status",
                "values",
                "interrupts",
            ],
            json!({"thread_id": string, "created_at": time, "updated_at": time,
                "state_updated_at": time, "metadata": {"type": "object"},
                "status": {"type": "string", "enum": ["idle", "busy", "interrupted", "error"]},
                "values": values,
                "interrupts": {"type": "object", "additionalProperties": {"type": "array", "items": interrupt},
                    "description": "By task: `tools` has the calls that wait for a person."},
                "error": {"type": "string", "description": "Why its last turn failed."}}),
        ),
    );
    let state = define(
        schemas,
        "LangGraphThreadState",
        object(
            &[
                "values",
                "next",
                "tasks",
                "checkpoint",
                "parent_checkpoint",
                "metadata",
                "created_at",
            ],
            json!({"values": values, "next": {"type": "array", "items": string},
                "tasks": {"type": "array", "items": task}, "checkpoint": checkpoint,
                "parent_checkpoint": nullable(checkpoint.clone()), "metadata": {"type": "object"},
                "created_at": {"type": ["string", "null"], "format": "date-time"}}),
        ),
    );
    let list = |items: &Value| json!({"type": "array", "items": items});
    let entries = [
        ("LangGraphAssistants", list(&assistant)),
        ("LangGraphThreads", list(&thread)),
        ("LangGraphThreadStates", list(&state)),
        (
            "LangGraphInfo",
            object(&["version", "flags"], json!({"version": string, "flags": {"type": "object"}})),
        ),
        (
            "LangGraphStream",
            object(
                &["event", "data"],
                json!({
                    "event": {"type": "string", "enum": ["metadata", "values", "updates", "messages", "error"],
                        "description": "`metadata` first (`{run_id, thread_id}`); `values` (the state), `updates` (by node), `messages` (`[chunk, metadata]`) as asked; `error` if the run failed."},
                    "id": {"type": "string", "pattern": "^[0-9]+$", "description": "On a frame of a log event: its seq, to join the run again after it with `Last-Event-ID`."},
                    "data": {"type": "string", "contentMediaType": "application/json"},
                }),
            ),
        ),
    ];
    for (name, schema) in entries {
        define(schemas, name, schema);
    }
}
