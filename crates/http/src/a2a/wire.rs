//! A2A's JSON-RPC envelope and the parts of its requests Airlock reads: each refused with
//! JSON-RPC's error codes and a message that says what is wrong and what to send instead.

use airlock_core::{ContentBlock, Message};
use serde_json::{Value, json};

use super::super::fields::{IMAGE_TYPES, is_base64};
use super::super::{ApiError, AppState};
use super::task::TaskId;

/// A JSON-RPC error: A2A's codes, a message for a person, and Airlock's own error code as data.
#[derive(Debug)]
pub(super) struct Fault {
    code: i64,
    message: String,
    data: Option<Value>,
}

impl Fault {
    /// `-32700`: the body is not JSON.
    pub(super) fn parse(message: impl Into<String>) -> Fault {
        Fault { code: -32700, message: message.into(), data: None }
    }

    /// `-32600`: not a JSON-RPC request.
    pub(super) fn request(message: impl Into<String>) -> Fault {
        Fault { code: -32600, message: message.into(), data: None }
    }

    /// `-32601`: no such method.
    pub(super) fn method(method: &str) -> Fault {
        let message = format!(
            "A2A has no method {method:?} here; Airlock answers SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask and SubscribeToTask"
        );
        Fault { code: -32601, message, data: None }
    }

    /// `-32602`: the params are wrong.
    pub(super) fn params(message: impl Into<String>) -> Fault {
        Fault { code: -32602, message: message.into(), data: None }
    }

    /// `-32001`: no such task (or another tenant's).
    pub(super) fn no_task(id: &str) -> Fault {
        let message = format!("no task {id:?}; ListTasks with its contextId lists the tasks there");
        Fault { code: -32001, message, data: None }
    }

    /// `-32002`: the task ended.
    pub(super) fn not_cancelable(id: &TaskId, state: &str) -> Fault {
        let message =
            format!("task {id} is {state}: only a task that has not ended can be canceled");
        Fault { code: -32002, message, data: None }
    }

    /// `-32003`: push notifications are not offered (the card says so).
    pub(super) fn no_push() -> Fault {
        let message = "this agent sends no push notifications (its card says pushNotifications: false); stream with SendStreamingMessage or SubscribeToTask, or poll GetTask";
        Fault { code: -32003, message: message.to_owned(), data: None }
    }

    /// `-32004`: an operation the task's state does not allow.
    pub(super) fn unsupported(message: impl Into<String>) -> Fault {
        Fault { code: -32004, message: message.into(), data: None }
    }

    /// `-32007`: there is no extended card.
    pub(super) fn no_extended_card() -> Fault {
        let message = "this agent has no extended card: the card at /.well-known/agent-card.json is all of it";
        Fault { code: -32007, message: message.to_owned(), data: None }
    }

    /// `-32009`: another version of A2A.
    pub(super) fn version(version: &str) -> Fault {
        let message = format!("A2A-Version {version:?} is not spoken here; send A2A-Version: 1.0");
        Fault { code: -32009, message, data: None }
    }

    /// The JSON-RPC response carrying it.
    pub(super) fn reply(self, id: &Value) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = self.data {
            error["data"] = data;
        }
        json!({"jsonrpc": "2.0", "id": id, "error": error})
    }
}

/// Airlock's errors as JSON-RPC's: a bad request is invalid params, a session not found is a task
/// not found, anything else an internal error; Airlock's code and HTTP status go as data.
impl<E: Into<ApiError>> From<E> for Fault {
    fn from(error: E) -> Fault {
        let error: ApiError = error.into();
        let status = error.status().as_u16();
        let code = match status {
            400 | 409 | 413 | 422 => -32602,
            404 => -32001,
            _ => -32603,
        };
        let data = json!({"code": error.code(), "status": status});
        Fault { code, message: error.message().to_owned(), data: Some(data) }
    }
}

/// A successful JSON-RPC response.
pub(super) fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A message sent to the agent: `SendMessage`'s and `SendStreamingMessage`'s params.
pub(super) struct Send {
    /// The message's id: its idempotency key in its context.
    pub message_id: String,
    /// The context (a session); a new one when the message names none.
    pub context: Option<String>,
    /// The task it continues.
    pub task: Option<TaskId>,
    /// What it says.
    pub content: Vec<ContentBlock>,
    /// Answer once the task is submitted instead of when it stops.
    pub return_immediately: bool,
    /// How many messages of the task's history to answer with (all when absent).
    pub history: Option<usize>,
}

impl Send {
    /// The params of a send; the fault says what is wrong with them.
    pub(super) fn parse(params: &Value) -> Result<Send, Fault> {
        let message = params.get("message").filter(|m| m.is_object());
        let message = message.ok_or_else(|| {
            Fault::params(
                "params.message is required: {messageId, role: \"ROLE_USER\", parts: [{text}]}",
            )
        })?;
        let text = |field: &str| match message.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Fault::params(format!("message.{field} must be a string"))),
        };
        let message_id = text("messageId")?.ok_or_else(|| Fault::params("message.messageId is required: a fresh id per message (the same id sent again is the same message)"))?;
        if message_id.len() > 200 {
            return Err(Fault::params("message.messageId must be at most 200 characters"));
        }
        if !matches!(message.get("role"), Some(role) if role == "ROLE_USER" || role == 1) {
            return Err(Fault::params(
                "message.role must be \"ROLE_USER\": the agent's messages are its own",
            ));
        }
        let context = text("contextId")?;
        if context.as_deref().is_some_and(|c| !airlock_sessions::valid_session_id(c)) {
            return Err(Fault::params(
                "message.contextId must be 1 to 200 letters, digits, '.', '_', ':' or '-' (it names a session)",
            ));
        }
        let task = match text("taskId")? {
            None => None,
            Some(id) => Some(TaskId::parse(&id).ok_or_else(|| Fault::no_task(&id))?),
        };
        if let (Some(context), Some(task)) = (&context, &task)
            && context != &task.session
        {
            return Err(Fault::params(format!(
                "task {task} is in context {:?}, not {context:?}",
                task.session
            )));
        }
        let parts = message.get("parts").and_then(Value::as_array);
        let parts = parts.filter(|parts| !parts.is_empty()).ok_or_else(|| {
            Fault::params("message.parts must hold at least one part: {text}, {data} or an image as {raw, mediaType}")
        })?;
        let content = parts.iter().map(block).collect::<Result<_, _>>()?;
        let configuration = params.get("configuration").unwrap_or(&Value::Null);
        let history = configuration.get("historyLength").and_then(Value::as_u64);
        Ok(Send {
            message_id,
            context,
            task,
            content,
            return_immediately: configuration["returnImmediately"] == true,
            history: history.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        })
    }

    /// The message as the session takes it.
    pub(super) fn message(&self) -> Message {
        Message::user(self.message_id.clone(), self.content.clone())
    }

    /// The person's answer to the calls that wait: `Some(true)` approves, `Some(false)` denies
    /// (with the reason given), `None` when the message is not an answer.
    pub(super) fn answer(&self) -> Option<(bool, Option<String>)> {
        let [ContentBlock::Text { text }] = self.content.as_slice() else { return None };
        if let Ok(Value::Object(data)) = serde_json::from_str::<Value>(text) {
            let approved = data.get("approved")?.as_bool()?;
            let reason = data.get("reason").and_then(Value::as_str).map(str::to_owned);
            return Some((approved, reason));
        }
        match text.trim().to_ascii_lowercase().as_str() {
            "approve" | "approved" | "yes" => Some((true, None)),
            "deny" | "denied" | "no" => Some((false, None)),
            _ => None,
        }
    }
}

/// A part as a content block: text, data (as its JSON text) or an inline image.
fn block(part: &Value) -> Result<ContentBlock, Fault> {
    if let Some(text) = part.get("text").and_then(Value::as_str) {
        return Ok(ContentBlock::Text { text: text.to_owned() });
    }
    if let Some(data) = part.get("data").filter(|data| !data.is_null()) {
        return Ok(ContentBlock::Text { text: data.to_string() });
    }
    let media_type = part.get("mediaType").and_then(Value::as_str).unwrap_or_default();
    match part.get("raw").and_then(Value::as_str) {
        Some(raw) if IMAGE_TYPES.contains(&media_type) && is_base64(raw) => {
            Ok(ContentBlock::Image { media_type: media_type.to_owned(), data: raw.to_owned() })
        }
        _ => Err(Fault::params(format!(
            "a part must be {{text}}, {{data}} or an image as {{raw: base64, mediaType}} with mediaType one of {}; files by url are not fetched",
            IMAGE_TYPES.join(", ")
        ))),
    }
}

/// The agent card: what the agent is, where its JSON-RPC binding is, and how to authenticate
/// when the gateway has keys.
pub(super) fn card(state: &AppState, base: &str) -> Value {
    let skills: Vec<Value> = state
        .sessions
        .tools()
        .tools()
        .map(|tool| {
            let spec = tool.spec();
            json!({"id": spec.name, "name": spec.name, "description": spec.description,
                "tags": ["tool", tool.origin()]})
        })
        .collect();
    let mut card = json!({
        "name": "Airlock",
        "description": "An LLM agent loop in a WebAssembly sandbox: a context is a session, a task the run of one message, kept in a durable log.",
        "version": env!("CARGO_PKG_VERSION"),
        "supportedInterfaces": [{"url": format!("{base}/a2a"), "protocolBinding": "JSONRPC",
            "protocolVersion": "1.0"}],
        "capabilities": {"streaming": true, "pushNotifications": false,
            "extendedAgentCard": false},
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain"],
        "skills": skills,
    });
    if state.access.known_keys() {
        card["securitySchemes"] = json!({"bearer": {"httpAuthSecurityScheme": {
            "scheme": "Bearer",
            "description": "an Airlock API key (`airlock keys create`); it reaches its tenant's contexts"}}});
        card["securityRequirements"] = json!([{"schemes": {"bearer": {"list": []}}}]);
    }
    card
}
