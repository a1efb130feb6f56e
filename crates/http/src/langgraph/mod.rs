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

mod messages;
mod runs;
mod stream;

use airlock_core::{Status, WaitKind, WaitingCall};
use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Extension, Json};
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;

use super::fields::rfc3339;
use super::{Answer, ApiError, AppState, Caller, JsonBody, named};
use airlock_sessions::SessionSpec;
use airlock_store::SessionRow;
use messages::Conversation;

/// The one assistant: its id and its graph's.
const ASSISTANT: &str = "agent";

/// Every route, under `/langgraph`.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .route("/langgraph/info", get(info))
        .route("/langgraph/assistants/search", post(assistants))
        .route("/langgraph/assistants/{assistant_id}", get(assistant))
        .route("/langgraph/threads", post(create))
        .route("/langgraph/threads/search", post(search))
        .route("/langgraph/threads/{thread_id}", get(thread))
        .route("/langgraph/threads/{thread_id}/state", get(state_now))
        .route("/langgraph/threads/{thread_id}/history", post(history))
        .route("/langgraph/threads/{thread_id}/runs/stream", post(runs::stream))
        .route("/langgraph/threads/{thread_id}/runs/{run_id}/stream", get(runs::join))
        .route("/langgraph/threads/{thread_id}/runs/{run_id}/cancel", post(runs::cancel))
}

/// What this server is.
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

/// `POST /assistants/search`: the one assistant (filters by `graph_id` or `name` apply).
async fn assistants(JsonBody(query): JsonBody<Value>) -> Json<Value> {
    let named = |field: &str, value: &str| query[field].as_str().is_none_or(|v| v == value);
    let fits = named("graph_id", ASSISTANT) && named("name", "Airlock");
    let offset = query["offset"].as_u64().unwrap_or(0);
    Json(Value::Array((fits && offset == 0).then(the_assistant).into_iter().collect()))
}

/// `GET /assistants/{id}`.
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

/// `POST /threads`: a new thread (a session), or with `if_exists: "do_nothing"` the one there.
async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody<Value>,
) -> Answer<Json<Value>> {
    let id = match &body["thread_id"] {
        Value::Null => airlock_base::clock::fresh_id(),
        Value::String(id) if airlock_sessions::valid_session_id(id) => id.clone(),
        _ => {
            return Err(ApiError::bad_request(
                "thread_id",
                "thread_id must be 1 to 200 letters, digits, '.', '_', ':' or '-'",
            ));
        }
    };
    let raise = match body["if_exists"].as_str() {
        None | Some("raise") => true,
        Some("do_nothing") => false,
        Some(_) => {
            return Err(ApiError::bad_request(
                "if_exists",
                "if_exists must be \"raise\" or \"do_nothing\"",
            ));
        }
    };
    let metadata = match &body["metadata"] {
        Value::Null => None,
        Value::Object(metadata) if metadata.is_empty() => None,
        metadata @ Value::Object(_) => Some(metadata.clone()),
        _ => return Err(ApiError::bad_request("metadata", "metadata must be an object")),
    };
    let spec = SessionSpec { metadata, ..SessionSpec::default() };
    let (row, made) = named::make(&state, &caller, &id, spec).await?;
    if !made && raise {
        return Err(ApiError::conflict(
            "thread-exists",
            format!("thread {id:?} exists; send if_exists: \"do_nothing\" to have it"),
        ));
    }
    Ok(Json(Thread::read(&state, row).await?.to_json()))
}

/// `GET /threads/{id}`.
async fn thread(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Answer<Json<Value>> {
    let row = named::stored(&state, &caller, &id).await?;
    Ok(Json(Thread::read(&state, row).await?.to_json()))
}

/// `POST /threads/search`: the caller's threads in id order, filtered by `ids`, `metadata`
/// (every pair equal) and `status`, `offset` and `limit` (10 unless given) applied after.
async fn search(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    JsonBody(query): JsonBody<Value>,
) -> Answer<Json<Value>> {
    let number = |field: &str, default: u64| match &query[field] {
        Value::Null => Ok(default),
        value => value
            .as_u64()
            .ok_or_else(|| ApiError::bad_request(field, format!("{field} must be a whole number"))),
    };
    let (limit, offset) = (number("limit", 10)?.min(1000) as usize, number("offset", 0)? as usize);
    if !matches!(query["sort_by"].as_str(), None | Some("thread_id")) {
        return Err(ApiError::bad_request("sort_by", "threads are listed by thread_id only"));
    }
    let wanted_status = query["status"].as_str();
    let metadata = query["metadata"].as_object().cloned().unwrap_or_default();
    let ids: Option<Vec<String>> = query["ids"]
        .as_array()
        .map(|ids| ids.iter().filter_map(Value::as_str).map(str::to_owned).collect());
    let mut found = Vec::new();
    let mut skipped = 0;
    let mut cursor = None;
    loop {
        let rows = match &ids {
            Some(ids) => {
                let mut rows = Vec::new();
                for id in ids {
                    if let Ok(row) = named::stored(&state, &caller, id).await {
                        rows.push(row);
                    }
                }
                rows
            }
            None => state.sessions.list(cursor.take(), 100, caller.only()).await?,
        };
        let last_page = ids.is_some() || rows.len() < 100;
        cursor = rows.last().map(|row| row.session_id.clone());
        for row in rows.into_iter().filter(|row| row.parent_session_id.is_none()) {
            let kept = row.spec.get("metadata").and_then(Value::as_object);
            let fits = metadata.iter().all(|(k, v)| kept.and_then(|kept| kept.get(k)) == Some(v));
            if !fits {
                continue;
            }
            let thread = Thread::read(&state, row).await?;
            if wanted_status.is_some_and(|status| thread.status() != status) {
                continue;
            }
            if skipped < offset {
                skipped += 1;
                continue;
            }
            found.push(thread.to_json());
            if found.len() == limit {
                return Ok(Json(Value::Array(found)));
            }
        }
        if last_page {
            return Ok(Json(Value::Array(found)));
        }
    }
}

/// `GET /threads/{id}/state`: the state at its head checkpoint.
async fn state_now(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Answer<Json<Value>> {
    let row = named::stored(&state, &caller, &id).await?;
    let thread = Thread::read(&state, row).await?;
    Ok(Json(thread.state_at(thread.conversation.messages.len())))
}

/// `POST /threads/{id}/history`: the states at its checkpoints, newest first: `limit` of them
/// (10 unless given), before the checkpoint `before` names.
async fn history(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    JsonBody(query): JsonBody<Value>,
) -> Answer<Json<Value>> {
    let limit = match &query["limit"] {
        Value::Null => 10,
        limit => limit
            .as_u64()
            .ok_or_else(|| ApiError::bad_request("limit", "limit must be a whole number"))?
            as usize,
    };
    let before = &query["before"];
    let before =
        before["configurable"]["checkpoint_id"].as_str().or(before["checkpoint_id"].as_str());
    let before = match before {
        None => u64::MAX,
        Some(id) => id.parse().map_err(|_| {
            ApiError::bad_request("before", "before must name a checkpoint_id this thread gave")
        })?,
    };
    let row = named::stored(&state, &caller, &id).await?;
    let thread = Thread::read(&state, row).await?;
    let checkpoints = &thread.conversation.checkpoints;
    let states = (1..=checkpoints.len())
        .rev()
        .filter(|&count| checkpoints[count - 1].0 < before)
        .take(limit)
        .map(|count| thread.state_at(count))
        .collect();
    Ok(Json(Value::Array(states)))
}

/// A thread as it is now.
struct Thread {
    row: SessionRow,
    conversation: Conversation,
    /// Whole-agent status.
    running: bool,
    /// The calls that wait for a person.
    waiting: Vec<WaitingCall>,
}

impl Thread {
    /// Reads the thread of `row`: its log, and what waits (a session at rest is not woken).
    async fn read(state: &AppState, row: SessionRow) -> Result<Thread, ApiError> {
        let id = row.session_id.clone();
        let overview = state.sessions.overview(row).await?;
        let waiting = state.sessions.waiting(&id).await?;
        let (conversation, _) = conversation(state, &id, u64::MAX).await?;
        let running = overview.status == Status::Running;
        Ok(Thread { row: overview.row, conversation, running, waiting })
    }

    /// `idle`, `busy`, `interrupted` (a call waits for a person) or `error` (its last turn
    /// failed).
    fn status(&self) -> &'static str {
        match (self.waiting.is_empty(), self.running, &self.conversation.failed) {
            (false, _, _) => "interrupted",
            (true, true, _) => "busy",
            (true, false, Some(_)) => "error",
            (true, false, None) => "idle",
        }
    }

    /// The `Thread`.
    fn to_json(&self) -> Value {
        let session = &self.row.session_id;
        let updated = self.conversation.checkpoints.last().map_or(self.row.updated_at, |c| c.1);
        let metadata = self.row.spec.get("metadata").cloned().unwrap_or_else(|| json!({}));
        let interrupts = interrupts(&self.waiting);
        let mut thread = json!({"thread_id": session, "created_at": rfc3339(self.row.created_at),
            "updated_at": rfc3339(self.row.updated_at), "state_updated_at": rfc3339(updated),
            "metadata": metadata, "status": self.status(),
            "values": values(&self.conversation.messages),
            "interrupts": if interrupts.is_empty() { json!({}) } else { json!({"tools": interrupts}) }});
        if let Some(error) = &self.conversation.failed {
            thread["error"] = json!(format!("{}: {}", error.code, error.message));
        }
        thread
    }

    /// The `ThreadState` after its first `count` messages; the head's (all of them) with what
    /// waits as its task's interrupts.
    fn state_at(&self, count: usize) -> Value {
        let session = &self.row.session_id;
        let checkpoint = |index: usize| {
            let (seq, _) = self.conversation.checkpoints[index];
            json!({"thread_id": session, "checkpoint_ns": "", "checkpoint_id": seq.to_string(),
                "checkpoint_map": null})
        };
        let head = count == self.conversation.messages.len();
        let interrupts = if head { interrupts(&self.waiting) } else { Vec::new() };
        let tasks = match interrupts.is_empty() {
            true => json!([]),
            false => json!([{"id": "tools", "name": "tools", "error": null,
                "interrupts": interrupts, "checkpoint": null, "state": null}]),
        };
        let next = if interrupts.is_empty() { json!([]) } else { json!(["tools"]) };
        let Some(last) = count.checked_sub(1) else {
            return json!({"values": {}, "next": next, "tasks": tasks, "metadata": {},
                "created_at": null, "parent_checkpoint": null, "checkpoint": {"thread_id":
                session, "checkpoint_ns": "", "checkpoint_id": null, "checkpoint_map": null}});
        };
        json!({"values": values(&self.conversation.messages[..count]), "next": next,
            "tasks": tasks, "checkpoint": checkpoint(last),
            "parent_checkpoint": last.checked_sub(1).map(checkpoint),
            "metadata": {"source": "loop", "step": last},
            "created_at": rfc3339(self.conversation.checkpoints[last].1)})
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
