//! OpenAPI schemas of types that have none of their own, since their crates do not depend on
//! utoipa: the few enums of `airlock-core` the API shows; written out as JSON in `schema/log.rs`
//! and `schema/frames.rs`, the log's events and the streams' frames, and in
//! `schema/langgraph.rs`, the LangGraph face's bodies and answers; and a session's tool policy
//! (`schema/tools.rs`).

mod frames;
mod langgraph;
mod log;
mod sessions;
mod tools;

pub use sessions::{ForkedFrom, Goal, RunResult};
pub use tools::{ClientTool, ToolChoice};

use serde_json::{Map, Value, json};
use utoipa::openapi::schema::{Object, ObjectBuilder, SchemaType, Type};
use utoipa::openapi::{Array, Ref};

/// A string that is one of `values`.
pub fn string_enum(description: &str, values: &[&str]) -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(description))
        .enum_values(Some(values.iter().copied()))
        .build()
}

/// `Status` of `airlock-core`.
pub fn status_schema() -> Object {
    string_enum("Whole-agent status.", &["idle", "running"])
}

/// `Target` of `airlock-core`: the inbox list an item waits in.
pub fn target_schema() -> Object {
    string_enum(
        "The inbox list: `next-turn` (followups) or `next-step` (steering and context).",
        &["next-turn", "next-step"],
    )
}

/// `Delivery` of `airlock-core`: how a message joins the session.
pub fn delivery_schema() -> Object {
    string_enum(
        "How the message joins the session: `followup` waits for the next turn (the default), \
         `steer` joins the running turn at its next step and wakes an idle agent, `inject` is \
         context for the next step and wakes nothing.",
        &["followup", "steer", "inject"],
    )
}

/// The kind of the last turn's end reason in an interval, or `null` when no turn ended.
pub fn finish_reason_schema() -> Object {
    let kinds = log::TURN_END_KINDS.map(Value::from).into_iter().chain([Value::Null]);
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .description(Some("The kind of the last `turn/end`'s reason; `null` if no turn ended."))
        .enum_values(Some(kinds))
        .build()
}

/// Why an interval paused: its `budget/exhausted` data.
pub fn paused_schema() -> Ref {
    Ref::from_schema_name("BudgetPause")
}

/// `[Event]`: log events in seq order.
pub fn events_schema() -> Array {
    Array::new(Ref::from_schema_name("Event"))
}

/// `[ContentBlock]`: a message's content.
pub fn content_blocks_schema() -> Array {
    Array::new(Ref::from_schema_name("ContentBlock"))
}

/// `[QueueItem]`: `{messageId, target, delivery, message}`, as the queue shows them.
pub fn queue_items_schema() -> Array {
    Array::new(Ref::from_schema_name("QueueItem"))
}

/// `Usage` of `airlock-core`: token counts.
pub fn usage_schema() -> Ref {
    Ref::from_schema_name("Usage")
}

/// The schemas written out here rather than derived: the log's and the streams'. The document
/// gets them beside the derived ones, whose names they must not take.
pub fn components() -> Map<String, Value> {
    let mut schemas = log::components();
    schemas.extend(frames::components());
    schemas.extend(langgraph::components());
    schemas
}

/// `{type: object, required, properties}`.
fn object(required: &[&str], properties: Value) -> Value {
    let mut object = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        object["required"] = json!(required);
    }
    object
}

/// A reference to the schema `name` of the document.
fn reference(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// `schema` named `name` among `schemas`; answers a reference to it. Every object a union may
/// hold is named so: a generated client makes a type of each, and with members written inline
/// some generators fail (and others invent names that collide).
fn define(schemas: &mut Map<String, Value>, name: &str, schema: Value) -> Value {
    match schemas.get(name) {
        Some(defined) => assert_eq!(defined, &schema, "two different schemas named {name}"),
        None => drop(schemas.insert(name.to_owned(), schema)),
    }
    reference(name)
}

/// A union of objects told apart by the string field `tag`: each member's name, its tag value
/// and its other fields (those of `required` required), each member defined among `schemas`.
fn tagged(
    schemas: &mut Map<String, Value>,
    tag: &str,
    members: &[(String, &str, &[&str], Value)],
) -> Value {
    let mut one_of = Vec::new();
    let mut mapping = Map::new();
    for (name, value, required, properties) in members {
        let mut fields = properties.as_object().cloned().unwrap_or_default();
        fields.insert(tag.to_owned(), json!({"type": "string", "enum": [value]}));
        let required: Vec<&str> = std::iter::once(tag).chain(required.iter().copied()).collect();
        one_of.push(define(schemas, name, object(&required, Value::Object(fields))));
        mapping.insert((*value).to_owned(), json!(format!("#/components/schemas/{name}")));
    }
    json!({"oneOf": one_of, "discriminator": {"propertyName": tag, "mapping": mapping}})
}

/// `text-delta`, `session.event` → `TextDelta`, `SessionEvent`: a tag value as part of a name.
fn pascal(value: &str) -> String {
    let words = value.split(['-', '.', '/', '_']).filter(|w| !w.is_empty());
    words
        .map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|c| c.to_ascii_uppercase())
                .into_iter()
                .chain(chars)
                .collect::<String>()
        })
        .collect()
}

/// A whole number, at least 0.
fn uint(description: &str) -> Value {
    let mut number = json!({"type": "integer", "minimum": 0});
    if !description.is_empty() {
        number["description"] = json!(description);
    }
    number
}
