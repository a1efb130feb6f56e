//! The LangGraph Platform API as `@langchain/langgraph-sdk` speaks it (`docs/interfaces.md`,
//! "LangGraph"), under `/langgraph`: point the SDK's `apiUrl` at `http://HOST:7700/langgraph`.
//!
//! A thread is a session (made by `POST /threads`, in the caller's tenant); its state is
//! `{messages}` in LangChain's message shape, read off the log ([`messages`]), with a checkpoint
//! after each message the log commits. A run is the interval of the message it sends, streamed
//! as `values`, `messages-tuple` and `updates` events ([`runs`]). A call waiting for a person is
//! an interrupt, which the next run's `command.resume` answers. There is one assistant, `agent`:
//! the gateway's default model with its tools.

#![allow(
    clippy::result_large_err,
    reason = "ApiError is the crate's one error shape, answered by value as every handler's is"
)]

mod input;
mod messages;
mod runs;
mod stream;
mod threads;
mod wire;

use airlock_core::{WaitKind, WaitingCall};
use axum::Json;
use axum::extract::Path;
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::fields::rfc3339;
use super::responses::BodyRefused;
use super::{Answer, ApiError, AppState, ErrorBody, JsonBody};
use messages::Conversation;
use wire::AssistantSearch;

/// The one assistant: its id and its graph's.
const ASSISTANT: &str = "agent";

/// Every route, under `/langgraph`.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(info))
        .routes(routes!(assistants))
        .routes(routes!(assistant))
        .routes(routes!(threads::create))
        .routes(routes!(threads::search))
        .routes(routes!(threads::thread))
        .routes(routes!(threads::state_now))
        .routes(routes!(threads::history))
        .routes(routes!(runs::stream))
        .routes(routes!(runs::join))
        .routes(routes!(runs::cancel))
}

/// What this server is: its version, and which of LangGraph's features it has.
#[utoipa::path(
    get, path = "/langgraph/info", operation_id = "langGraphInfo", tag = "protocols",
    responses((status = 200, description = "The server", body = ref("#/components/schemas/LangGraphInfo")))
)]
async fn info() -> Json<Value> {
    Json(json!({"version": env!("CARGO_PKG_VERSION"),
        "flags": {"assistants": true, "crons": false, "langsmith": false}}))
}

/// The assistant, as LangGraph describes one.
fn the_assistant() -> Value {
    json!({"assistant_id": ASSISTANT, "graph_id": ASSISTANT, "name": "Airlock",
        "description": "The gateway's default model with its tools, in a sandboxed agent loop",
        "config": {}, "context": {}, "metadata": {}, "version": 1,
        "created_at": rfc3339(0), "updated_at": rfc3339(0)})
}

/// The one assistant, `agent`, when it fits the search: `graph_id` and `name` equal to its own,
/// no `metadata` pairs it lacks (it has none), within `offset` and `limit`.
#[utoipa::path(
    post, path = "/langgraph/assistants/search", operation_id = "langGraphSearchAssistants", tag = "protocols",
    request_body(content = ref("#/components/schemas/LangGraphAssistantSearch"),
        description = "Optional: no body counts as `{}`."),
    responses(
        (status = 200, description = "The assistants", body = ref("#/components/schemas/LangGraphAssistants")),
        BodyRefused,
    )
)]
async fn assistants(JsonBody(query): JsonBody<AssistantSearch>) -> Answer<Json<Value>> {
    let limit = query.limit.unwrap_or(10);
    if limit > wire::MAX_LIMIT {
        let why = format!("limit must be at most {}", wire::MAX_LIMIT);
        return Err(ApiError::bad_request("limit", why));
    }
    let fits = query.graph_id.is_none_or(|id| id == ASSISTANT)
        && query.name.is_none_or(|name| name == "Airlock")
        && query.metadata.is_none_or(|metadata| metadata.is_empty())
        && query.offset.unwrap_or(0) == 0
        && limit > 0;
    Ok(Json(Value::Array(fits.then(the_assistant).into_iter().collect())))
}

/// An assistant; Airlock has one, `agent`.
#[utoipa::path(
    get, path = "/langgraph/assistants/{assistant_id}", operation_id = "langGraphGetAssistant", tag = "protocols",
    params(("assistant_id" = String, Path, description = "`agent`, the one assistant")),
    responses(
        (status = 200, description = "The assistant", body = ref("#/components/schemas/LangGraphAssistant")),
        (status = 404, description = "`assistant-not-found`", body = ErrorBody),
    )
)]
async fn assistant(Path(id): Path<String>) -> Answer<Json<Value>> {
    known_assistant(&id)?;
    Ok(Json(the_assistant()))
}

/// The assistant a run names must be `agent`.
fn known_assistant(id: &str) -> Result<(), ApiError> {
    match id == ASSISTANT {
        true => Ok(()),
        false => Err(ApiError::not_found(
            "assistant-not-found",
            format!(
                "no assistant {id:?}: Airlock has one, \"{ASSISTANT}\" (the gateway's default model with its tools)"
            ),
        )),
    }
}

/// A state's values: `{messages}`.
fn values(messages: &[Value]) -> Value {
    json!({"messages": messages})
}

/// The interrupts of the calls waiting for a person, as LangChain's human-in-the-loop middleware
/// asks (one per call: `{action_requests, review_configs}`; its id is the call's).
fn interrupts(waiting: &[WaitingCall]) -> Vec<Value> {
    waiting
        .iter()
        .map(|call| {
            let args = serde_json::from_str::<Value>(&call.arguments).unwrap_or_else(|_| json!({}));
            let description = match call.kind {
                WaitKind::Approval => format!("The agent asks to run {}", call.name),
                WaitKind::Client => {
                    format!("{} runs in the client; its result is given on /v1", call.name)
                }
            };
            json!({"id": call.call_id, "when": "during", "resumable": true, "ns": [],
                "value": {"action_requests": [{"name": call.name, "args": args,
                    "description": description}],
                "review_configs": [{"action_name": call.name,
                    "allowed_decisions": ["approve", "reject"]}]}})
        })
        .collect()
}

/// The conversation of session `id` before seq `before` (all of it: `u64::MAX`), and the seq of
/// the last event read.
async fn conversation(
    state: &AppState,
    id: &str,
    before: u64,
) -> Result<(Conversation, Option<u64>), ApiError> {
    let mut conversation = Conversation::new(id);
    let mut after = None;
    loop {
        let (events, _) = state.sessions.events(id, after, 1000).await?;
        for json in &events {
            let seq = airlock_sessions::seq_of(json)?;
            if seq >= before {
                return Ok((conversation, after));
            }
            conversation.read(json);
            after = Some(seq);
        }
        if events.len() < 1000 {
            return Ok((conversation, after));
        }
    }
}
