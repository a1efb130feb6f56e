//! LangGraph runs. `POST /threads/{id}/runs/stream` answers the interrupts its `command.resume`
//! names, sends its input's human messages (those the session has not taken) and streams the
//! interval of the last one, owned as an owned run's is; `GET …/runs/{run}/stream` joins a run
//! again after an event id; `POST …/runs/{run}/cancel` cancels it. A run's id is the seq it
//! starts at; every frame of a log event has the event's seq as `id`.

use airlock_core::{CallAnswer, Delivery, Event, Message, WaitKind, WaitingCall};
use axum::Extension;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::Value;

use super::super::interval::{End, LogEnd};
use super::super::{Answer, ApiError, AppState, Caller, JsonBody, fields, named};
use super::messages::incoming;
use super::stream::{Modes, RunStream};
use super::{conversation, known_assistant};
use airlock_sessions::{InputError, RegistryError, SessionHandle, SessionSpec};

/// `POST /threads/{id}/runs/stream`.
pub(super) async fn stream(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(thread): Path<String>,
    JsonBody(body): JsonBody<Value>,
) -> Answer<Response> {
    let assistant = body["assistant_id"].as_str().unwrap_or_default();
    known_assistant(assistant)?;
    let (modes, names) = Modes::parse(&body["stream_mode"])?;
    let strategy = body["multitask_strategy"].as_str().unwrap_or("reject");
    if !matches!(strategy, "reject" | "enqueue" | "interrupt") {
        return Err(ApiError::bad_request(
            "multitask_strategy",
            "multitask_strategy must be \"reject\", \"enqueue\" or \"interrupt\"; a rollback is not possible, the log is append-only",
        ));
    }
    let human = human_messages(&body["input"])?;
    match named::stored(&state, &caller, &thread).await {
        Err(error)
            if error.status() == StatusCode::NOT_FOUND && body["if_not_exists"] == "create" =>
        {
            named::make(&state, &caller, &thread, SessionSpec::default()).await?;
        }
        stored => drop(stored?),
    }
    let handle = state.sessions.open(&thread).await?;
    let slot = state.sessions.hold_stream(caller.tenant())?;
    handle.settled().await.map_err(RegistryError::Session)?;
    let (conversation, read) = conversation(&state, &thread, u64::MAX).await?;
    let checkpoint =
        body["checkpoint"]["checkpoint_id"].as_str().or(body["checkpoint_id"].as_str());
    let head = conversation.checkpoints.last().map(|(seq, _)| seq.to_string());
    if checkpoint.is_some_and(|checkpoint| Some(checkpoint) != head.as_deref()) {
        return Err(ApiError::bad_request(
            "checkpoint",
            format!(
                "a run goes on from the thread's head checkpoint ({}); to branch from an earlier one, POST /v1/sessions/{thread}/fork makes a new thread from it",
                head.as_deref().unwrap_or("none yet")
            ),
        ));
    }
    // Subscribed before anything is sent: the run misses none of its events.
    let follower = state.sessions.follow(&handle, read);
    let view = handle.view();
    let busy = view.status == airlock_core::Status::Running && view.waiting().is_empty();
    if busy && !human.is_empty() {
        match strategy {
            "reject" => {
                return Err(ApiError::conflict(
                    "thread-busy",
                    format!(
                        "thread {thread:?} is running a run; wait for it, or send multitask_strategy \"enqueue\" (after it) or \"interrupt\" (cancel it first)"
                    ),
                ));
            }
            "interrupt" => state.sessions.cancel(&thread, true).await?,
            _ => {}
        }
    }
    let mut first = view.next_seq;
    if let Some(resume) = body["command"].get("resume") {
        resume_with(&state, &thread, resume, &view.waiting()).await?;
    }
    let sent = state.sessions.inserted(&thread).await?;
    let fresh: Vec<Message> =
        human.into_iter().filter(|m| !sent.iter().any(|(_, old)| old.id == m.id)).collect();
    let end = match fresh.split_last() {
        Some((last, earlier)) => {
            for message in earlier {
                state.sessions.send(&thread, message.clone(), Delivery::Followup, None).await?;
            }
            let run = state.sessions.run(&handle, last.clone(), Delivery::Followup, None);
            let (run, _) = run.await.map_err(ApiError::from)?;
            first = run.first_seq;
            End::Owned(run)
        }
        None if view.next_seq == 0 => End::Empty,
        None => End::Idle(handle.clone()),
    };
    let waits = !handle.view().waiting().is_empty();
    let run =
        RunStream { state, handle, conversation, follower, end, first, modes, waits, _slot: slot };
    let location = format!("/threads/{thread}/runs/{first}");
    let modes = fields_query(&names);
    let mut response = run.start(None);
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&location) {
        headers.insert(header::CONTENT_LOCATION, value);
    }
    if let Ok(value) = HeaderValue::from_str(&format!("{location}/stream?stream_mode={modes}")) {
        headers.insert(header::LOCATION, value);
    }
    Ok(response)
}

/// The modes as the `stream_mode` query parameter: a JSON list, percent-encoded.
fn fields_query(names: &[String]) -> String {
    form_urlencoded::byte_serialize(Value::from(names.to_vec()).to_string().as_bytes()).collect()
}

/// `GET /threads/{id}/runs/{run}/stream`: the run from its start, or after `Last-Event-ID`.
pub(super) async fn join(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path((thread, run)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Answer<Response> {
    let mut asked = Value::Null;
    for (key, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        if key == "stream_mode" {
            let value = serde_json::from_str(&value).unwrap_or(Value::String(value.into_owned()));
            asked = match (asked, value) {
                (Value::Null, value) => value,
                (Value::Array(mut modes), value) => {
                    modes.push(value);
                    Value::Array(modes)
                }
                (mode, value) => Value::Array(vec![mode, value]),
            };
        }
    }
    let (modes, _) = Modes::parse(&asked)?;
    let after = match headers.get("last-event-id").map(HeaderValue::as_bytes) {
        None | Some(b"-1") => None,
        Some(value) => Some(fields::parse_last_event_id(value)?),
    };
    let (handle, first) = open_run(&state, &caller, &thread, &run).await?;
    let slot = state.sessions.hold_stream(caller.tenant())?;
    let (conversation, read) = conversation(&state, &thread, first).await?;
    let follower = state.sessions.follow(&handle, read);
    let end = End::Idle(handle.clone());
    let waits = !handle.view().waiting().is_empty();
    let run =
        RunStream { state, handle, conversation, follower, end, first, modes, waits, _slot: slot };
    Ok(run.start(after))
}

/// `POST /threads/{id}/runs/{run}/cancel?wait=0|1&action=interrupt`: cancels the thread's
/// running turn and clears its inbox; with `wait=1` answers once the agent is idle.
pub(super) async fn cancel(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path((thread, run)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Answer<StatusCode> {
    let query: Vec<(String, String)> = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let param = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    if param("action").is_some_and(|action| action != "interrupt") {
        return Err(ApiError::bad_request(
            "action",
            "action must be \"interrupt\": a rollback is not possible, the log is append-only",
        ));
    }
    let (handle, first) = open_run(&state, &caller, &thread, &run).await?;
    if ended(&state, &handle, first).await? {
        return Err(ApiError::conflict(
            "run-ended",
            format!("run {run} of thread {thread:?} ended; there is nothing to cancel"),
        ));
    }
    state.sessions.cancel(&thread, false).await?;
    if matches!(param("wait"), Some("1" | "true")) {
        handle.idle().await.map_err(RegistryError::Session)?;
        return Ok(StatusCode::NO_CONTENT);
    }
    Ok(StatusCode::ACCEPTED)
}

/// The thread's session and the seq its run `run` starts at; a run it never had is not found.
async fn open_run(
    state: &AppState,
    caller: &Caller,
    thread: &str,
    run: &str,
) -> Result<(SessionHandle, u64), ApiError> {
    named::stored(state, caller, thread).await?;
    let handle = state.sessions.open(thread).await?;
    handle.settled().await.map_err(RegistryError::Session)?;
    match run.parse::<u64>() {
        Ok(first) if first < handle.view().next_seq => Ok((handle, first)),
        _ => Err(ApiError::not_found(
            "run-not-found",
            format!(
                "thread {thread:?} has no run {run:?}; a run's id is in the Content-Location of the response that started it"
            ),
        )),
    }
}

/// Whether the run starting at `first` has ended: the log says so, or the agent is idle now.
async fn ended(state: &AppState, handle: &SessionHandle, first: u64) -> Result<bool, ApiError> {
    let idle = handle.status() == airlock_core::Status::Idle;
    let mut end = LogEnd::default();
    let mut after = first.checked_sub(1);
    loop {
        let (events, _) = state.sessions.events(handle.id(), after, 1000).await?;
        for json in &events {
            if let Ok(Some(event)) = Event::parse(json)
                && end.past(&event.data)
            {
                return Ok(true);
            }
            after = Some(airlock_sessions::seq_of(json)?);
        }
        if events.len() < 1000 {
            return Ok(idle);
        }
    }
}

/// The human messages of a run's `input` (`{messages: [...]}`), as the session takes them.
fn human_messages(input: &Value) -> Result<Vec<Message>, ApiError> {
    let messages = match input {
        Value::Null => return Ok(Vec::new()),
        Value::Object(input) => input.get("messages").cloned().unwrap_or(Value::Null),
        _ => return Err(ApiError::bad_request("input", "input must be {messages: [...]}")),
    };
    let messages = match messages {
        Value::Null => return Ok(Vec::new()),
        Value::Array(messages) => messages,
        one @ Value::Object(_) => vec![one],
        _ => {
            return Err(ApiError::bad_request(
                "input",
                "input.messages must be a list of messages",
            ));
        }
    };
    let mut human = Vec::new();
    for message in &messages {
        let taken = incoming(message).map_err(|why| ApiError::bad_request("input", why))?;
        human.extend(taken);
    }
    Ok(human)
}

/// Answers the calls waiting for a person with `resume`: one decision for them all, a map of
/// call id to decision, or LangChain's `{decisions: [...]}` in the order the interrupts came.
async fn resume_with(
    state: &AppState,
    thread: &str,
    resume: &Value,
    waiting: &[WaitingCall],
) -> Result<(), ApiError> {
    let approvals: Vec<&WaitingCall> =
        waiting.iter().filter(|call| call.kind == WaitKind::Approval).collect();
    let by_id = resume.as_object().filter(|map| {
        !map.is_empty() && map.keys().all(|key| approvals.iter().any(|call| &call.call_id == key))
    });
    for (i, call) in approvals.iter().enumerate() {
        let decision = match (by_id, resume["decisions"].as_array()) {
            (Some(map), _) => match map.get(&call.call_id) {
                Some(decision) => decision,
                None => continue,
            },
            (None, Some(decisions)) => match decisions.get(i) {
                Some(decision) => decision,
                None => continue,
            },
            (None, None) => resume,
        };
        let answer = answer_of(decision)?;
        match state.sessions.answer(thread, &call.call_id, answer).await {
            Ok(()) | Err(InputError::NotWaiting(_)) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

/// A person's decision on one call.
fn answer_of(decision: &Value) -> Result<CallAnswer, ApiError> {
    let kind = match decision {
        Value::Bool(true) => "approve",
        Value::Bool(false) => "reject",
        Value::String(word) => word.as_str(),
        Value::Object(map) => {
            match (map.get("type").and_then(Value::as_str), map.get("approved")) {
                (Some(kind), _) => kind,
                (None, Some(Value::Bool(true))) => "approve",
                (None, Some(Value::Bool(false))) => "reject",
                _ => "",
            }
        }
        _ => "",
    };
    let reason =
        ["message", "reason"].iter().find_map(|key| decision[*key].as_str()).map(str::to_owned);
    match kind.to_ascii_lowercase().as_str() {
        "approve" | "approved" | "accept" | "yes" => {
            Ok(CallAnswer::Approve { by: None, arguments: None })
        }
        "edit" => {
            let args = decision["edited_action"].get("args").or(decision.get("args"));
            let args = args.filter(|args| args.is_object()).ok_or_else(|| {
                ApiError::bad_request(
                    "command",
                    "an edit decision needs edited_action.args, an object",
                )
            })?;
            Ok(CallAnswer::Approve { by: None, arguments: Some(args.to_string()) })
        }
        "reject" | "deny" | "denied" | "no" | "ignore" | "response" => {
            Ok(CallAnswer::Deny { reason, by: None })
        }
        _ => Err(ApiError::bad_request(
            "command",
            "command.resume must decide each call: true or false, \"approve\" or \"reject\", {type: \"approve\" | \"edit\" | \"reject\"}, a map of interrupt id to one of those, or {decisions: [...]}",
        )),
    }
}
