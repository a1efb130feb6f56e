//! AG-UI's `RunAgentInput` as Airlock reads it, with its OpenAPI schema: what a frontend sends,
//! checked whole before anything is done with it.

use std::borrow::Cow;
use std::collections::HashSet;

use airlock_core::{ContentBlock, Message};
use airlock_providers::tools::{ClientTool, valid_name};
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa::openapi::schema::{
    ArrayBuilder, Discriminator, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr};

use super::super::ApiError;
use super::super::fields::{BASE64_PATTERN, IMAGE_TYPES, is_base64};

/// AG-UI's `RunAgentInput` (`@ag-ui/core`): the thread, the run, the conversation as the
/// frontend has it, its tools and its answers to the last run's interrupts. `state`, `context`
/// and `forwardedProps` are taken and not used; other fields are passed over, as AG-UI's own
/// schemas pass them.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = AgUiRunAgentInput)]
pub(super) struct RunAgentInput {
    /// The thread: a session id, the session made on first use.
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$(?![\\s\\S])")]
    pub thread_id: String,
    /// The run, and its idempotency key: the same run posted again runs nothing again.
    #[schema(min_length = 1, max_length = 200)]
    pub run_id: String,
    /// The conversation; the user messages after its last message of another role are the run's
    /// input (those the session has are not sent again).
    pub messages: Vec<InputMessage>,
    /// The tools the frontend runs: the session's client tools when this run makes it.
    #[serde(default)]
    pub tools: Vec<InputTool>,
    /// Answers to the previous run's interrupts.
    #[serde(default)]
    pub resume: Vec<ResumeEntry>,
    /// The frontend's state: not used.
    #[serde(default)]
    #[expect(dead_code, reason = "AG-UI sends it and its schema shows it; Airlock keeps its own")]
    state: Option<Value>,
    /// What the frontend tells the agent besides the conversation: not used.
    #[serde(default)]
    #[expect(dead_code, reason = "AG-UI sends it and its schema shows it; not given to the model")]
    context: Option<Vec<Context>>,
    /// The frontend's own settings: not used.
    #[serde(default)]
    #[expect(dead_code, reason = "AG-UI sends it and its schema shows it")]
    forwarded_props: Option<Value>,
}

impl RunAgentInput {
    /// The input in a request's body; the error says what is wrong with it.
    pub(super) fn parse(body: Value) -> Result<RunAgentInput, ApiError> {
        objects(&body)?;
        let input: RunAgentInput = serde_json::from_value(body)
            .map_err(|e| ApiError::bad_request("body", format!("not a RunAgentInput: {e}")))?;
        input.check()?;
        Ok(input)
    }

    /// Refuses what the schema says and serde cannot: lengths, names, images, repeated tools.
    fn check(&self) -> Result<(), ApiError> {
        let refuse = |field: &str, why: String| Err(ApiError::bad_request(field, why));
        if !(1..=200).contains(&self.run_id.len()) {
            return refuse("runId", "runId must be 1 to 200 characters".to_owned());
        }
        for message in &self.messages {
            if !(1..=200).contains(&message.id().len()) {
                return refuse("messages", "a message id must be 1 to 200 characters".to_owned());
            }
            if let Some(content) = message.content() {
                content.blocks()?;
            }
        }
        let mut names = HashSet::new();
        for tool in &self.tools {
            if !valid_name(&tool.name) {
                let why = format!(
                    "tool name {:?} must be 1 to 64 letters, digits, `_` or `-`",
                    tool.name
                );
                return refuse("tools", why);
            }
            if !names.insert(&tool.name) {
                return refuse("tools", format!("two tools are named {:?}", tool.name));
            }
        }
        Ok(())
    }

    /// The frontend's tools as the session's client tools.
    pub(super) fn client_tools(&self) -> Option<Vec<ClientTool>> {
        let tool = |tool: &InputTool| ClientTool {
            name: tool.name.clone(),
            description: tool.description.clone(),
            parameters: tool.parameters.clone().map(Value::Object),
            timeout_ms: None,
        };
        (!self.tools.is_empty()).then(|| self.tools.iter().map(tool).collect())
    }

    /// The user messages after the last message of another role: the run's input.
    pub(super) fn trailing(&self) -> Vec<Message> {
        let mut trailing: Vec<Message> = (self.messages.iter().rev())
            .map_while(|message| match message {
                InputMessage::User(user) => {
                    Some(Message::user(user.id.clone(), user.content.blocks().expect("checked")))
                }
                _ => None,
            })
            .collect();
        trailing.reverse();
        trailing
    }
}

/// Refuses a list where the input has an object: serde would read a struct from a list of its
/// fields in order.
fn objects(body: &Value) -> Result<(), ApiError> {
    let refuse = |field: &str, what: &str| {
        let why = format!("{what} must be a JSON object");
        Err(ApiError::bad_request(field, why))
    };
    let items = |field: &str| body[field].as_array().into_iter().flatten();
    for (field, what) in [
        ("messages", "each message"),
        ("tools", "each tool"),
        ("resume", "each resume entry"),
        ("context", "each piece of context"),
    ] {
        if items(field).any(|item| !item.is_object()) {
            return refuse(field, what);
        }
    }
    if items("resume").any(|entry| !matches!(entry["payload"], Value::Null | Value::Object(_))) {
        return refuse("resume", "a resume entry's payload");
    }
    Ok(())
}

/// A piece of context: a description and a value.
#[derive(Deserialize, ToSchema)]
#[schema(as = AgUiContext)]
struct Context {
    #[expect(dead_code, reason = "read only to refuse what is not context")]
    description: String,
    #[expect(dead_code, reason = "read only to refuse what is not context")]
    value: String,
}

/// A message of the conversation, by `role`. The session keeps its own assistant, system,
/// developer, reasoning and activity messages: of those only the id is read. Its schema is
/// written by hand: utoipa's for a tagged enum wraps each member in an `allOf`, which client
/// generators cannot take.
#[derive(Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(super) enum InputMessage {
    /// The person's.
    User(UserMessage),
    /// A frontend tool's result.
    Tool(ToolMessage),
    /// The agent's.
    Assistant(OtherMessage),
    /// The system's.
    System(OtherMessage),
    /// The developer's.
    Developer(OtherMessage),
    /// The agent's reasoning.
    Reasoning(OtherMessage),
    /// Progress a frontend shows.
    Activity(OtherMessage),
}

/// Each role, the name of its member of [`InputMessage`]'s schema, and what it is.
const ROLES: [(&str, &str, &str); 7] = [
    ("user", "AgUiUserMessage", "The person's: the run's input."),
    ("tool", "AgUiToolMessage", "A frontend tool's result."),
    ("assistant", "AgUiAssistantMessage", "The agent's: the session has its own."),
    ("system", "AgUiSystemMessage", "The system's: the session has its own."),
    ("developer", "AgUiDeveloperMessage", "The developer's: the session has its own."),
    ("reasoning", "AgUiReasoningMessage", "The agent's reasoning: the session has its own."),
    ("activity", "AgUiActivityMessage", "Progress a frontend shows: not the agent's."),
];

impl utoipa::PartialSchema for InputMessage {
    fn schema() -> RefOr<Schema> {
        let mut one_of = OneOfBuilder::new().description(Some(
            "A message of the conversation, by `role`. The session keeps its own assistant, \
             system, developer, reasoning and activity messages: of those only the id is read.",
        ));
        for (_, name, _) in ROLES {
            one_of = one_of.item(Ref::from_schema_name(name));
        }
        let mapping = ROLES.map(|(role, name, _)| (role, format!("#/components/schemas/{name}")));
        one_of.discriminator(Some(Discriminator::with_mapping("role", mapping))).into()
    }
}

impl ToSchema for InputMessage {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("AgUiMessage")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        <UserContent as ToSchema>::schemas(schemas);
        let string = || ObjectBuilder::new().schema_type(Type::String);
        for (role, name, description) in ROLES {
            let mut member = ObjectBuilder::new()
                .description(Some(description))
                .property("role", string().enum_values(Some([role])))
                .required("role")
                .property("id", string().min_length(Some(1)).max_length(Some(200)))
                .required("id");
            if matches!(role, "user" | "tool") {
                member = member
                    .property("content", <UserContent as utoipa::PartialSchema>::schema())
                    .required("content");
            }
            if role == "tool" {
                let error = ObjectBuilder::new()
                    .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
                    .description(Some("Set when the tool failed."));
                member = member
                    .property("toolCallId", string().description(Some("The call it answers.")))
                    .required("toolCallId")
                    .property("error", error);
            }
            schemas.push((name.to_owned(), member.build().into()));
        }
    }
}

/// The person's message.
#[derive(Deserialize)]
pub(super) struct UserMessage {
    /// 1 to 200 characters: the message's id in the session.
    pub id: String,
    /// What it says.
    pub content: UserContent,
}

/// A frontend tool's result.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ToolMessage {
    /// 1 to 200 characters.
    pub id: String,
    /// What the tool returned.
    pub content: UserContent,
    /// The call it answers.
    pub tool_call_id: String,
    /// Set when the tool failed.
    #[serde(default)]
    pub error: Option<String>,
}

/// A message the session has its own of.
#[derive(Deserialize)]
pub(super) struct OtherMessage {
    /// 1 to 200 characters.
    id: String,
}

impl InputMessage {
    /// Its id.
    pub(super) fn id(&self) -> &str {
        match self {
            InputMessage::User(UserMessage { id, .. })
            | InputMessage::Tool(ToolMessage { id, .. }) => id,
            InputMessage::Assistant(other)
            | InputMessage::System(other)
            | InputMessage::Developer(other)
            | InputMessage::Reasoning(other)
            | InputMessage::Activity(other) => &other.id,
        }
    }

    fn content(&self) -> Option<&UserContent> {
        match self {
            InputMessage::User(UserMessage { content, .. })
            | InputMessage::Tool(ToolMessage { content, .. }) => Some(content),
            _ => None,
        }
    }
}

/// A user or tool message's content: a non-empty string, or a non-empty list of text parts and
/// images given as data. Read by [`UserContent::blocks`], whose errors say what is wrong.
#[derive(Deserialize)]
pub(super) struct UserContent(Value);

impl utoipa::PartialSchema for UserContent {
    fn schema() -> RefOr<Schema> {
        let part = OneOfBuilder::new()
            .item(Ref::from_schema_name("AgUiTextPart"))
            .item(Ref::from_schema_name("AgUiImagePart"));
        OneOfBuilder::new()
            .description(Some("A non-empty string, or a non-empty list of text and image parts."))
            .item(ObjectBuilder::new().schema_type(Type::String).min_length(Some(1)))
            .item(ArrayBuilder::new().items(part).min_items(Some(1)))
            .into()
    }
}

impl ToSchema for UserContent {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        let string = || ObjectBuilder::new().schema_type(Type::String);
        let tag = |kind: &str| string().enum_values(Some([kind]));
        let text = ObjectBuilder::new()
            .property("type", tag("text"))
            .required("type")
            .property("text", string().min_length(Some(1)))
            .required("text");
        let source = ObjectBuilder::new()
            .property("type", tag("data"))
            .required("type")
            .property("value", string().pattern(Some(BASE64_PATTERN)).min_length(Some(1)))
            .required("value")
            .property("mimeType", string().enum_values(Some(IMAGE_TYPES.iter().copied())))
            .required("mimeType");
        let image = ObjectBuilder::new()
            .property("type", tag("image"))
            .required("type")
            .property("source", source)
            .required("source");
        schemas.push(("AgUiTextPart".to_owned(), text.build().into()));
        schemas.push(("AgUiImagePart".to_owned(), image.build().into()));
    }
}

impl UserContent {
    /// The content as the session's blocks; the error says what is wrong.
    pub(super) fn blocks(&self) -> Result<Vec<ContentBlock>, ApiError> {
        let refuse = |why: String| Err(ApiError::bad_request("messages", why));
        let parts = match &self.0 {
            Value::String(text) if !text.is_empty() => {
                return Ok(vec![ContentBlock::Text { text: text.clone() }]);
            }
            Value::Array(parts) if !parts.is_empty() => parts,
            other => {
                return refuse(format!(
                    "a message's content must be some text or a non-empty list of parts, not \
                     {other}"
                ));
            }
        };
        fn text(field: &Value) -> Option<&str> {
            field.as_str().filter(|text| !text.is_empty())
        }
        let mut blocks = Vec::with_capacity(parts.len());
        for part in parts {
            let source = &part["source"];
            let block = match (part["type"].as_str(), text(&part["text"])) {
                (Some("text"), Some(text)) => ContentBlock::Text { text: text.to_owned() },
                (Some("image"), _) if source["type"] == "data" => {
                    match (text(&source["mimeType"]), text(&source["value"])) {
                        (Some(media_type), Some(data))
                            if IMAGE_TYPES.contains(&media_type) && is_base64(data) =>
                        {
                            let media_type = media_type.to_owned();
                            ContentBlock::Image { media_type, data: data.to_owned() }
                        }
                        _ => {
                            return refuse(
                                "an image must be image/png, image/jpeg, image/gif or image/webp \
                                 with its value in padded standard base64"
                                    .to_owned(),
                            );
                        }
                    }
                }
                _ => {
                    return refuse(format!(
                        "a message part must be some text or an image given as data \
                         ({{\"type\": \"image\", \"source\": {{\"type\": \"data\", \"value\": \
                         BASE64, \"mimeType\": \"image/png\"}}}}), not {part}"
                    ));
                }
            };
            blocks.push(block);
        }
        Ok(blocks)
    }
}

/// A tool the frontend runs.
#[derive(Deserialize, ToSchema)]
#[schema(as = AgUiTool)]
pub(super) struct InputTool {
    /// 1 to 64 letters, digits, `_` or `-`.
    #[schema(pattern = "^[a-zA-Z0-9_-]{1,64}$")]
    name: String,
    /// What it does, for the model.
    #[serde(default)]
    description: String,
    /// The JSON Schema of its arguments.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    parameters: Option<serde_json::Map<String, Value>>,
}

/// An answer to one interrupt.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = AgUiResumeEntry)]
pub(super) struct ResumeEntry {
    /// The interrupt: a call that waits for an approval.
    pub interrupt_id: String,
    /// `resolved` answers it, `cancelled` denies the call.
    pub status: ResumeStatus,
    /// The answer; absent approves the call.
    #[serde(default)]
    pub payload: Option<Approval>,
}

/// A person's answer to an approval.
#[derive(Deserialize, ToSchema)]
#[schema(as = AgUiApproval)]
pub(super) struct Approval {
    /// `false` denies the call; absent or `true` approves it.
    #[serde(default)]
    pub approved: Option<bool>,
    /// Why it was denied, for the model.
    #[serde(default)]
    pub reason: Option<String>,
    /// Run the call with these arguments instead of the model's.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub arguments: Option<serde_json::Map<String, Value>>,
}

/// What a resume entry does.
#[derive(Deserialize, PartialEq, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = AgUiResumeStatus)]
pub(super) enum ResumeStatus {
    /// Answered.
    Resolved,
    /// Abandoned.
    Cancelled,
}
