//! OpenAPI schemas of `airlock-core` types, which have none of their own (the core does not
//! depend on utoipa): the few enums the API shows are written out, and messages and log events
//! are described as JSON objects.

use utoipa::openapi::schema::{Object, ObjectBuilder, Type};
use utoipa::openapi::{Array, RefOr, Schema};

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

/// A JSON object whose schema lives in `airlock-core` (a message, a log event).
pub fn json_object(description: &str) -> Object {
    ObjectBuilder::new().schema_type(Type::Object).description(Some(description)).build()
}

/// `[QueueItem]`: `{messageId, target, delivery, message}`, as `GET …/queue` shows them.
pub fn queue_items_schema() -> Array {
    let item = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("messageId", ObjectBuilder::new().schema_type(Type::String))
        .required("messageId")
        .property("target", target_schema())
        .required("target")
        .property("delivery", delivery_schema())
        .required("delivery")
        .property("message", json_object("The queued message: `{id, role, content, source}`."))
        .required("message")
        .build();
    Array::new(RefOr::<Schema>::T(item.into()))
}

/// `[ContentBlock]` or a log event list: JSON objects described by `airlock-core`.
pub fn json_objects(description: &str) -> Array {
    Array::new(RefOr::<Schema>::T(json_object(description).into()))
}
