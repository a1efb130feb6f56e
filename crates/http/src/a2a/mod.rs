//! A2A (`docs/interfaces.md`, "A2A"): the agent card at `/.well-known/agent-card.json` and A2A
//! 1.0's JSON-RPC binding at `POST /a2a`, so another agent (`@a2a-js/sdk`'s or `a2a-sdk`'s
//! client) calls Airlock as it is.
//!
//! A context is a session (made on first use, in the caller's tenant). A task is the interval of
//! the message that started it ([`task`]), owned as an owned run's is, with the message's
//! `messageId` as its idempotency key: the same message sent again is the same task. A call that
//! waits for a person makes the task `TASK_STATE_INPUT_REQUIRED`, and the task's next message
//! answers it; a message to a task still working joins its interval as a followup.

mod task;
mod watch;
mod wire;

use airlock_core::{CallAnswer, Delivery, Status, WaitKind};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Extension, Json};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::interval::End;
use super::{ApiError, AppState, Caller, fields, named, sse};
use airlock_sessions::{Follower, InputError, RegistryError, SessionHandle, SessionSpec};
use task::{State as TaskState, Task, TaskId};
use watch::{Out, Watch, frame, next_event};
use wire::{Fault, Send, result};

/// The card, in `/openapi.json`, and the JSON-RPC binding, which is not: one URL for every
/// method.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(card)).route("/a2a", post(rpc))
}

/// A2A's agent card: Airlock as an A2A 1.0 agent.
///
/// Its JSON-RPC interface (`--public-url`, else the `Host` asked, then `/a2a`), streaming, one
/// skill per tool, and the `bearer` security scheme when the gateway has keys. Public, as A2A's
/// discovery wants.
#[utoipa::path(
    get, path = "/.well-known/agent-card.json", operation_id = "getAgentCard", tag = "protocols",
    responses((status = 200, description = "The agent card (A2A 1.0's `AgentCard`)",
        body = Object))
)]
async fn card(State(state): State<AppState>, headers: HeaderMap) -> Json<Value> {
    let base = match state.access.public_url() {
        Some(url) => url.to_owned(),
        None => {
            let scheme = if state.access.secure(&headers) { "https" } else { "http" };
            let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
            format!("{scheme}://{}", host.unwrap_or("localhost"))
        }
    };
    Json(wire::card(&state, &base))
}

/// The session a JSON-RPC request is about, for gateways sharing a store (`forward.rs`): its
/// message's context or task, the task it names, or the context it lists.
pub(crate) fn session_named(request: &Value) -> Option<String> {
    let params = &request["params"];
    let message = &params["message"];
    let task = |id: &Value| id.as_str().and_then(TaskId::parse).map(|id| id.session);
    let context = |id: &Value| id.as_str().filter(|id| !id.is_empty()).map(str::to_owned);
    context(&message["contextId"])
        .or_else(|| task(&message["taskId"]))
        .or_else(|| task(&params["id"]))
        .or_else(|| context(&params["contextId"]))
}

/// One JSON-RPC request: answered `200` with its result or error, or with an SSE stream of
/// results for the streaming methods.
async fn rpc(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = match serde_json::from_slice::<Value>(&body) {
        Ok(request) => request,
        Err(e) => {
            return reply(Fault::parse(format!("the body is not JSON: {e}")).reply(&Value::Null));
        }
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let call = Call { state, caller, id };
    match call.serve(&request, &headers).await {
        Ok(response) => response,
        Err(fault) => reply(fault.reply(&call.id)),
    }
}

/// A JSON-RPC response as the HTTP response.
fn reply(response: Value) -> Response {
    Json(response).into_response()
}

/// A request being served: who asks, and the id its answers carry.
struct Call {
    state: AppState,
    caller: Caller,
    id: Value,
}

impl Call {
    async fn serve(&self, request: &Value, headers: &HeaderMap) -> Result<Response, Fault> {
        if request.get("jsonrpc").and_then(Value::as_str) != Some("2.0")
            || !matches!(request.get("id"), None | Some(Value::String(_) | Value::Number(_)))
        {
            return Err(Fault::request(
                "not a JSON-RPC 2.0 request: send {\"jsonrpc\": \"2.0\", \"id\", \"method\", \"params\"}",
            ));
        }
        let method = request.get("method").and_then(Value::as_str).unwrap_or_default();
        if let Some(version) = headers.get("a2a-version") {
            let version = version.to_str().unwrap_or_default().trim();
            if !matches!(version, "" | "1" | "1.0") {
                return Err(Fault::version(version));
            }
        }
        let params = match request.get("params") {
            None | Some(Value::Null) => &json!({}),
            Some(params) if params.is_object() => params,
            Some(_) => return Err(Fault::params("params must be an object")),
        };
        let answer = match method {
            "SendMessage" => {
                let send = Send::parse(params)?;
                let mut watch = self.begin(&send).await?;
                if !send.return_immediately {
                    watch.until_stop(None).await?;
                }
                json!({"task": watch.task.to_json(send.history, true)})
            }
            "SendStreamingMessage" => {
                let send = Send::parse(params)?;
                let watch = self.begin(&send).await?;
                return self.stream(watch, send.history);
            }
            "GetTask" => {
                let watch = self.open(task_id(params)?).await?;
                watch.task.to_json(history(params)?, true)
            }
            "ListTasks" => self.list(params).await?,
            "CancelTask" => {
                let mut watch = self.open(task_id(params)?).await?;
                let state = watch.task.state();
                if state.terminal() {
                    return Err(Fault::not_cancelable(&watch.task.id, state.wire()));
                }
                self.state.sessions.cancel(&watch.task.id.session, false).await?;
                watch.until_stop(None).await?;
                watch.task.to_json(None, true)
            }
            "SubscribeToTask" => {
                let watch = self.open(task_id(params)?).await?;
                let state = watch.task.state();
                if state.terminal() {
                    return Err(Fault::unsupported(format!(
                        "task {} is {}: it changes no more, so there is nothing to subscribe to; GetTask reads it",
                        watch.task.id,
                        state.wire()
                    )));
                }
                return self.stream(watch, None);
            }
            "GetExtendedAgentCard" => return Err(Fault::no_extended_card()),
            "CreateTaskPushNotificationConfig"
            | "GetTaskPushNotificationConfig"
            | "ListTaskPushNotificationConfigs"
            | "DeleteTaskPushNotificationConfig" => return Err(Fault::no_push()),
            method => return Err(Fault::method(method)),
        };
        Ok(reply(result(&self.id, answer)))
    }

    /// Sends the message: a new task (in a new context when it names none), or the next message
    /// of a task, which answers the calls it waits on or joins its interval. Answers the task,
    /// followed from where the log is.
    async fn begin(&self, send: &Send) -> Result<Watch, Fault> {
        let sessions = &self.state.sessions;
        let message = send.message();
        let key = self.key(send);
        let Some(id) = &send.task else {
            // A message sent before is the same task, in the context it made.
            let first = sessions.keyed_session(&key).await.map_err(|e| conflict(e, send))?;
            let context = match (&send.context, first) {
                (Some(context), _) => context.clone(),
                (None, Some(first)) => first.id().to_owned(),
                (None, None) => airlock_base::clock::fresh_id(),
            };
            let (handle, _) =
                named::open_or_make(&self.state, &self.caller, &context, SessionSpec::default())
                    .await?;
            let (run, mut follower) = sessions
                .run(&handle, message, Delivery::Followup, Some(key))
                .await
                .map_err(|e| conflict(e, send))?;
            let id = TaskId { session: context, seq: run.first_seq };
            let receipt = next_event(&mut follower).await?;
            let task = Task::start(id, &receipt.json).ok_or_else(|| {
                Fault::from(ApiError::unavailable("the message's receipt is not in the log".into()))
            })?;
            return Ok(self.watch(handle, follower, task, End::Owned(run)));
        };
        let mut watch = self.open(id.clone()).await?;
        let state = watch.task.state();
        if watch.task.ended() || state.terminal() {
            return Err(Fault::unsupported(format!(
                "task {id} is {}: a task that ended takes no more messages; send one without taskId (contextId {:?}) for a new task",
                state.wire(),
                id.session
            )));
        }
        match (state, send.answer()) {
            (TaskState::InputRequired, Some((approved, reason))) => {
                self.answer(&mut watch, approved, reason).await?;
            }
            (TaskState::InputRequired, None) => {
                return Err(Fault::params(format!(
                    "task {id} waits for a person to approve a call: answer with the text \"approve\" or \"deny\", or a data part {{\"approved\": true}} or {{\"approved\": false, \"reason\": \"why\"}}"
                )));
            }
            (_, Some(_)) => {
                return Err(Fault::unsupported(format!(
                    "task {id} waits for no answer now (it is {}); send what the agent should read as a message",
                    state.wire()
                )));
            }
            (_, None) => {
                let sent = sessions.send(&id.session, message, Delivery::Followup, Some(key));
                sent.await.map_err(|e| conflict(e, send))?;
            }
        }
        Ok(watch)
    }

    /// A message's idempotency key: its `messageId`, in the caller's tenant (A2A's message ids
    /// are unique, and a message that names no context is sent again naming none).
    fn key(&self, send: &Send) -> airlock_sessions::IdempotencyKey {
        let request = (&send.context, &send.task.as_ref().map(TaskId::to_string), &send.content);
        fields::scoped_key(
            self.caller.tenant(),
            "a2a",
            &send.message_id,
            &request,
            &send.message_id,
        )
    }

    /// Answers every call the task waits on: approves, or denies with `reason`.
    async fn answer(
        &self,
        watch: &mut Watch,
        approved: bool,
        reason: Option<String>,
    ) -> Result<(), Fault> {
        let session = &watch.task.id.session;
        for call in watch.task.waiting_calls() {
            if call.kind != WaitKind::Approval {
                return Err(Fault::unsupported(format!(
                    "call {:?} waits for its client's result, which A2A cannot give: POST /v1/sessions/{session}/tool-calls/{}/result gives it",
                    call.call_id, call.call_id
                )));
            }
            let answer = match approved {
                true => CallAnswer::Approve { by: None, arguments: None },
                false => CallAnswer::Deny { reason: reason.clone(), by: None },
            };
            match self.state.sessions.answer(session, &call.call_id, answer).await {
                Ok(()) | Err(InputError::NotWaiting(_)) => {}
                Err(error) => return Err(ApiError::from(error).into()),
            }
        }
        watch.task.waiting(Vec::new());
        Ok(())
    }

    /// The task `id` as the log has it now (the caller's tenant's only), followed from there.
    async fn open(&self, id: TaskId) -> Result<Watch, Fault> {
        let not_found = || Fault::no_task(&id.to_string());
        match named::stored(&self.state, &self.caller, &id.session).await {
            Err(error) if error.status() == 404 => return Err(not_found()),
            stored => stored?,
        };
        let handle = self.state.sessions.open(&id.session).await?;
        handle.settled().await.map_err(RegistryError::Session).map_err(ApiError::from)?;
        let idle = handle.status() == Status::Idle;
        let view = handle.view();
        if id.seq >= view.next_seq {
            return Err(not_found());
        }
        let mut follower = self.state.sessions.follow(&handle, id.seq.checked_sub(1));
        let receipt = next_event(&mut follower).await?;
        let mut task = Task::start(id.clone(), &receipt.json).ok_or_else(not_found)?;
        while task.next < view.next_seq && !task.ended() {
            let event = next_event(&mut follower).await?;
            task.read(&event.json);
        }
        if idle {
            task.idle(); // the interval began before, so it ended by then
        } else {
            task.waiting(view.waiting());
        }
        Ok(self.watch(handle.clone(), follower, task, End::Idle(handle)))
    }

    /// A task to follow from where `follower` is, its interval ending at `end`.
    fn watch(&self, handle: SessionHandle, follower: Follower, task: Task, end: End) -> Watch {
        Watch::new(handle, follower, task, end, self.state.shutdown.clone())
    }

    /// `ListTasks`: the tasks of one context, newest first, a page at a time.
    async fn list(&self, params: &Value) -> Result<Value, Fault> {
        let context = params.get("contextId").and_then(Value::as_str).unwrap_or_default();
        if context.is_empty() {
            return Err(Fault::params(
                "ListTasks needs a contextId: Airlock lists the tasks of one context (a session)",
            ));
        }
        let wanted = match params.get("status") {
            None | Some(Value::Null) => None,
            Some(value) if value == "TASK_STATE_UNSPECIFIED" || value == 0 => None,
            Some(value) => Some(
                TaskState::named(value)
                    .ok_or_else(|| Fault::params(format!("status {value} is not a TaskState")))?,
            ),
        };
        let size = match params.get("pageSize").and_then(Value::as_u64) {
            None | Some(0) => 50,
            Some(size) if size <= 100 => size as usize,
            Some(_) => return Err(Fault::params("pageSize must be at most 100")),
        };
        let before = match params.get("pageToken").and_then(Value::as_str) {
            None | Some("") => u64::MAX,
            Some(token) => token.parse().map_err(|_| {
                Fault::params("pageToken must be the nextPageToken of the page before")
            })?,
        };
        let (history, artifacts) = (history(params)?, params["includeArtifacts"] == true);
        named::stored(&self.state, &self.caller, context).await?;
        let inserted = self.state.sessions.inserted(context).await?;
        let mut seqs: Vec<u64> = inserted
            .into_iter()
            .filter(|(_, message)| message.source.kind == "user")
            .map(|(seq, _)| seq)
            .collect();
        seqs.dedup();
        seqs.reverse();
        let (mut total, mut page, mut more) = (0, Vec::new(), false);
        for seq in seqs {
            let (in_range, room) = (seq < before, page.len() < size);
            if wanted.is_none() && !(in_range && room) {
                total += 1; // counted without being read
                more |= in_range;
                continue;
            }
            let task = self.open(TaskId { session: context.to_owned(), seq }).await?.task;
            if wanted.is_some_and(|wanted| task.state() != wanted) {
                continue;
            }
            total += 1;
            match (in_range, room) {
                (true, true) => page.push(task),
                (true, false) => more = true,
                _ => {}
            }
        }
        let next = page.last().filter(|_| more).map_or(String::new(), |t| t.id.seq.to_string());
        let tasks: Vec<Value> = page.iter().map(|task| task.to_json(history, artifacts)).collect();
        Ok(json!({"tasks": tasks, "nextPageToken": next, "pageSize": size, "totalSize": total}))
    }

    /// The task as an SSE stream: the `Task` first, then its status and artifact updates until it
    /// stops (ends, or waits for input).
    fn stream(&self, mut watch: Watch, history: Option<usize>) -> Result<Response, Fault> {
        let slot = self.state.sessions.hold_stream(self.caller.tenant()).map_err(ApiError::from)?;
        let (tx, rx) = mpsc::channel(16);
        let out = Out { tx, id: self.id.clone() };
        tokio::spawn(async move {
            let _slot = slot;
            let first = json!({"task": watch.task.to_json(history, true)});
            if !out.send(first).await {
                return;
            }
            if let Err(fault) = watch.until_stop(Some(&out)).await {
                let _ = out.tx.send(frame(&fault.reply(&out.id))).await;
            }
        });
        Ok(sse::response(ReceiverStream::new(rx)))
    }
}

/// The `id` param naming a task.
fn task_id(params: &Value) -> Result<TaskId, Fault> {
    let id = params.get("id").and_then(Value::as_str);
    let id = id.ok_or_else(|| Fault::params("params.id must name the task"))?;
    TaskId::parse(id).ok_or_else(|| Fault::no_task(id))
}

/// The `historyLength` param.
fn history(params: &Value) -> Result<Option<usize>, Fault> {
    match params.get("historyLength") {
        None | Some(Value::Null) => Ok(None),
        Some(n) => match n.as_u64() {
            Some(n) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
            None => Err(Fault::params("historyLength must be a whole number")),
        },
    }
}

/// A `messageId` sent before with another message.
fn conflict(error: InputError, send: &Send) -> Fault {
    match error {
        InputError::KeyConflict => Fault::params(format!(
            "messageId {:?} was sent before with another message; give every new message a fresh messageId",
            send.message_id
        )),
        error => ApiError::from(error).into(),
    }
}
