//! LangGraph threads: made by `POST /threads`, found by `POST /threads/search`, read with their
//! state at the head checkpoint or at each checkpoint before it (`history`).

use airlock_core::{Status, WaitingCall};
use axum::extract::{Path, State};
use axum::{Extension, Json};
use serde_json::{Value, json};

use super::super::fields::rfc3339;
use super::super::responses::{BodyRefused, Limited, SessionFailed, StorageFailed};
use super::super::{Answer, ApiError, AppState, Caller, ErrorBody, JsonBody, named};
use super::messages::Conversation;
use super::wire::{
    HistoryQuery, IfExists, MAX_LIMIT, NewThread, ThreadPath, ThreadSearch, ThreadStatus,
};
use super::{conversation, interrupts, values};
use airlock_sessions::SessionSpec;
use airlock_store::SessionRow;

/// Makes a thread: a session in the caller's tenant, with the gateway's default model.
///
/// With `if_exists: "do_nothing"` a thread that exists is answered as it is.
#[utoipa::path(
    post, path = "/langgraph/threads", operation_id = "langGraphCreateThread", tag = "protocols",
    request_body(content = ref("#/components/schemas/LangGraphThreadCreate"),
        description = "Optional: no body counts as `{}`."),
    responses(
        (status = 200, description = "The thread", body = ref("#/components/schemas/LangGraphThread")),
        (status = 404, description = "`session-not-found`: the id is another tenant's session", body = ErrorBody),
        (status = 409, description = "`thread-exists`: send `if_exists: \"do_nothing\"` to have it", body = ErrorBody),
        BodyRefused, Limited, SessionFailed,
    )
)]
pub(super) async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody<NewThread>,
) -> Answer<Json<Value>> {
    let id = match body.thread_id {
        None => airlock_base::clock::fresh_id(),
        Some(id) if airlock_sessions::valid_session_id(&id) => id,
        Some(_) => {
            return Err(ApiError::bad_request(
                "thread_id",
                "thread_id must be 1 to 200 letters, digits, '.', '_', ':' or '-', starting with a letter or digit",
            ));
        }
    };
    let metadata = body.metadata.filter(|metadata| !metadata.is_empty()).map(Value::Object);
    let spec = SessionSpec { metadata, ..SessionSpec::default() };
    let (row, made) = named::make(&state, &caller, &id, spec).await?;
    if !made && body.if_exists != Some(IfExists::DoNothing) {
        return Err(ApiError::conflict(
            "thread-exists",
            format!("thread {id:?} exists; send if_exists: \"do_nothing\" to have it"),
        ));
    }
    Ok(Json(Thread::read(&state, row).await?.to_json()))
}

/// A thread: its status, metadata, values and interrupts.
#[utoipa::path(
    get, path = "/langgraph/threads/{thread_id}", operation_id = "langGraphGetThread", tag = "protocols",
    params(ThreadPath),
    responses(
        (status = 200, description = "The thread", body = ref("#/components/schemas/LangGraphThread")),
        (status = 404, description = "`session-not-found`", body = ErrorBody),
        StorageFailed,
    )
)]
pub(super) async fn thread(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
) -> Answer<Json<Value>> {
    Ok(Json(Thread::find(&state, &caller, &id).await?.to_json()))
}

/// The caller's threads in id order, filtered by `ids`, `metadata` (every pair equal) and
/// `status`; `offset` and `limit` (10 unless given) apply after.
#[utoipa::path(
    post, path = "/langgraph/threads/search", operation_id = "langGraphSearchThreads", tag = "protocols",
    request_body(content = ref("#/components/schemas/LangGraphThreadSearch"),
        description = "Optional: no body counts as `{}`."),
    responses(
        (status = 200, description = "The threads", body = ref("#/components/schemas/LangGraphThreads")),
        BodyRefused, StorageFailed,
    )
)]
pub(super) async fn search(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    JsonBody(query): JsonBody<ThreadSearch>,
) -> Answer<Json<Value>> {
    let limit = query.limit.unwrap_or(10);
    if limit > MAX_LIMIT {
        return Err(ApiError::bad_request("limit", format!("limit must be at most {MAX_LIMIT}")));
    }
    let (limit, offset) = (limit as usize, query.offset.unwrap_or(0) as usize);
    let metadata = query.metadata.unwrap_or_default();
    let mut found = Vec::new();
    if limit == 0 {
        return Ok(Json(Value::Array(found)));
    }
    let mut skipped = 0;
    let mut cursor = None;
    loop {
        let rows = match &query.ids {
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
        let last_page = query.ids.is_some() || rows.len() < 100;
        cursor = rows.last().map(|row| row.session_id.clone());
        for row in rows.into_iter().filter(|row| row.parent_session_id.is_none()) {
            let kept = row.spec.get("metadata").and_then(Value::as_object);
            let fits = metadata.iter().all(|(k, v)| kept.and_then(|kept| kept.get(k)) == Some(v));
            if !fits {
                continue;
            }
            let thread = Thread::read(&state, row).await?;
            if query.status.is_some_and(|status| thread.status() != status) {
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

/// A thread's state at its head checkpoint, with the interrupts that wait.
#[utoipa::path(
    get, path = "/langgraph/threads/{thread_id}/state", operation_id = "langGraphGetThreadState", tag = "protocols",
    params(ThreadPath),
    responses(
        (status = 200, description = "The state", body = ref("#/components/schemas/LangGraphThreadState")),
        (status = 404, description = "`session-not-found`", body = ErrorBody),
        StorageFailed,
    )
)]
pub(super) async fn state_now(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
) -> Answer<Json<Value>> {
    let thread = Thread::find(&state, &caller, &id).await?;
    Ok(Json(thread.state_at(thread.conversation.messages.len())))
}

/// A thread's states at its checkpoints, newest first: `limit` of them (10 unless given),
/// before the checkpoint `before` names.
#[utoipa::path(
    post, path = "/langgraph/threads/{thread_id}/history", operation_id = "langGraphGetThreadHistory", tag = "protocols",
    params(ThreadPath),
    request_body(content = ref("#/components/schemas/LangGraphHistoryQuery"),
        description = "Optional: no body counts as `{}`."),
    responses(
        (status = 200, description = "The states, newest first", body = ref("#/components/schemas/LangGraphThreadStates")),
        (status = 404, description = "`session-not-found`", body = ErrorBody),
        BodyRefused, StorageFailed,
    )
)]
pub(super) async fn history(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
    JsonBody(query): JsonBody<HistoryQuery>,
) -> Answer<Json<Value>> {
    let limit = query.limit.unwrap_or(10);
    if limit > MAX_LIMIT {
        return Err(ApiError::bad_request("limit", format!("limit must be at most {MAX_LIMIT}")));
    }
    let before = match &query.before {
        Some(before) => before.seq("before")?.unwrap_or(u64::MAX),
        None => u64::MAX,
    };
    let thread = Thread::find(&state, &caller, &id).await?;
    let checkpoints = &thread.conversation.checkpoints;
    let states = (1..=checkpoints.len())
        .rev()
        .filter(|&count| checkpoints[count - 1].0 < before)
        .take(limit as usize)
        .map(|count| thread.state_at(count))
        .collect();
    Ok(Json(Value::Array(states)))
}

/// A thread as it is now.
pub(super) struct Thread {
    row: SessionRow,
    conversation: Conversation,
    /// Whole-agent status.
    running: bool,
    /// The calls that wait for a person.
    waiting: Vec<WaitingCall>,
}

impl Thread {
    /// The caller's thread `id`, read.
    async fn find(state: &AppState, caller: &Caller, id: &str) -> Result<Thread, ApiError> {
        Thread::read(state, named::stored(state, caller, id).await?).await
    }

    /// Reads the thread of `row`: its log, and what waits (a session at rest is not woken).
    async fn read(state: &AppState, row: SessionRow) -> Result<Thread, ApiError> {
        let id = row.session_id.clone();
        let overview = state.sessions.overview(row).await?;
        let waiting = state.sessions.waiting(&id).await?;
        let (conversation, _) = conversation(state, &id, u64::MAX).await?;
        let running = overview.status == Status::Running;
        Ok(Thread { row: overview.row, conversation, running, waiting })
    }

    /// `interrupted` (a call waits for a person), `busy`, `error` (its last turn failed) or
    /// `idle`.
    fn status(&self) -> ThreadStatus {
        match (self.waiting.is_empty(), self.running, &self.conversation.failed) {
            (false, _, _) => ThreadStatus::Interrupted,
            (true, true, _) => ThreadStatus::Busy,
            (true, false, Some(_)) => ThreadStatus::Error,
            (true, false, None) => ThreadStatus::Idle,
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
            "metadata": metadata, "status": self.status().name(),
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
