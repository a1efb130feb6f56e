//! LangGraph runs. `POST /threads/{id}/runs/stream` answers the interrupts its `command.resume`
//! names, sends its input's human messages (those the session has not taken) and streams the
//! interval of the last one, owned as an owned run's is; `GET …/runs/{run}/stream` joins a run
//! again after an event id; `POST …/runs/{run}/cancel` cancels it. A run's id is the seq it
//! starts at; every frame of a log event has the event's seq as `id`.

use airlock_core::{CallAnswer, Delivery, Event, Message, WaitKind, WaitingCall};
use axum::Extension;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::Value;

use super::super::interval::{End, LogEnd};
use super::super::responses::{BodyRefused, Limited, SessionFailed, StorageFailed};
use super::super::{Answer, ApiError, AppState, Caller, ErrorBody, JsonBody, QueryParams};
use super::super::{fields, named};
use super::input::{Decision, Resume, Typed, Word};
use super::stream::{Modes, RunStream};
use super::wire::{
    CancelQuery, Flag, IfNotExists, JoinQuery, NewRun, RunPath, Strategy, StreamMode, ThreadPath,
    checkpoint_seq,
};
use super::{conversation, known_assistant};
use airlock_base::clock::fresh_id;
use airlock_sessions::{InputError, RegistryError, SessionHandle, SessionSpec};

/// Runs the agent on a thread and streams the run.
///
/// Answers the interrupts `command.resume` names, sends `input`'s human messages (those the
/// thread has not taken) and streams the interval of the last one as the stream modes ask:
/// `values`, `messages-tuple` and `updates` (others send nothing). The run ends at whole-agent
/// idle, or with the interrupts of the calls that wait for a person. Its id is in
/// `Content-Location`; `Location` joins it again. A frame of a log event has its seq as `id`.
/// From an earlier `checkpoint` than the head, the run goes on a new thread forked there, named
/// in the `metadata` frame and `Content-Location`.
#[utoipa::path(
    post, path = "/langgraph/threads/{thread_id}/runs/stream", operation_id = "langGraphStreamRun", tag = "protocols",
    params(ThreadPath),
    request_body = ref("#/components/schemas/LangGraphRunCreate"),
    responses(
        (status = 200, description = "The run as LangGraph's stream parts", content(
            (ref("#/components/schemas/LangGraphStream") = "text/event-stream"),
        ), headers(
            ("Content-Location" = String, description = "The run: `/threads/{thread_id}/runs/{run_id}`"),
            ("Location" = String, description = "Its stream, to join again (relative to the SDK's `apiUrl`)"),
        )),
        (status = 404, description = "`session-not-found` (send `if_not_exists: \"create\"` to make the thread), `assistant-not-found`", body = ErrorBody),
        (status = 409, description = "`thread-busy` (see `multitask_strategy`), `session-disposed` or `child-session`", body = ErrorBody),
        BodyRefused, Limited, SessionFailed,
    )
)]
pub(super) async fn stream(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(ThreadPath { thread_id: thread }): Path<ThreadPath>,
    JsonBody(body): JsonBody<NewRun>,
) -> Answer<Response> {
    known_assistant(&body.assistant_id)?;
    let (modes, names) = Modes::parse(body.stream_mode);
    let strategy = body.multitask_strategy.unwrap_or(Strategy::Reject);
    let human = body.input.map(|input| input.human()).transpose()?.unwrap_or_default();
    let own = checkpoint_seq(body.checkpoint_id.as_deref(), "checkpoint_id")?;
    let checkpoint = match &body.checkpoint {
        Some(checkpoint) => checkpoint.seq("checkpoint")?.or(own),
        None => own,
    };
    match named::stored(&state, &caller, &thread).await {
        Err(error)
            if error.status() == StatusCode::NOT_FOUND
                && body.if_not_exists == Some(IfNotExists::Create) =>
        {
            named::make(&state, &caller, &thread, SessionSpec::default()).await?;
        }
        stored => drop(stored?),
    }
    let thread = match checkpoint {
        Some(at) => branch(&state, &caller, thread, at).await?,
        None => thread,
    };
    let handle = state.sessions.open(&thread).await?;
    let slot = state.sessions.hold_stream(caller.tenant())?;
    handle.settled().await.map_err(RegistryError::Session)?;
    let (conversation, read) = conversation(&state, &thread, u64::MAX).await?;
    // Subscribed before anything is sent: the run misses none of its events.
    let follower = state.sessions.follow(&handle, read);
    let view = handle.view();
    let busy = view.status == airlock_core::Status::Running && view.waiting().is_empty();
    if busy && !human.is_empty() {
        match strategy {
            Strategy::Reject => {
                return Err(ApiError::conflict(
                    "thread-busy",
                    format!(
                        "thread {thread:?} is running a run; wait for it, or send multitask_strategy \"enqueue\" (after it) or \"interrupt\" (cancel it first)"
                    ),
                ));
            }
            Strategy::Interrupt => state.sessions.cancel(&thread, true).await?,
            Strategy::Enqueue => {}
        }
    }
    let mut first = view.next_seq;
    if let Some(resume) = body.command.and_then(|command| command.resume) {
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

/// The thread a run from checkpoint `at` of `thread` goes on: the thread itself from its head;
/// from an earlier checkpoint, a new thread forked there (in the caller's tenant, with its
/// metadata), since a thread's log does not branch in place.
async fn branch(
    state: &AppState,
    caller: &Caller,
    thread: String,
    at: u64,
) -> Result<String, ApiError> {
    let (conversation, _) = conversation(state, &thread, u64::MAX).await?;
    let checkpoints = &conversation.checkpoints;
    if checkpoints.last().is_some_and(|&(head, _)| head == at) {
        return Ok(thread);
    }
    if !checkpoints.iter().any(|&(seq, _)| seq == at) {
        return Err(ApiError::bad_request(
            "checkpoint",
            format!(
                "thread {thread:?} has no checkpoint {at}; the states of POST /threads/{thread}/history name those it has"
            ),
        ));
    }
    let fork = state.sessions.fork(&thread, Some(at), fresh_id(), caller.owner()).await?;
    Ok(fork.session_id)
}

/// The modes as the `stream_mode` query parameter: a JSON list, percent-encoded.
fn fields_query(modes: &[StreamMode]) -> String {
    let list = serde_json::to_string(modes).expect("modes serialize");
    form_urlencoded::byte_serialize(list.as_bytes()).collect()
}

/// Joins a run again: its stream from its start, or after `Last-Event-ID` (`-1`: from the
/// start), until it ends.
#[utoipa::path(
    get, path = "/langgraph/threads/{thread_id}/runs/{run_id}/stream", operation_id = "langGraphJoinRun", tag = "protocols",
    params(RunPath,
        ("stream_mode" = Option<String>, Query,
            pattern = "^(values|messages|messages-tuple|updates|events|debug|custom|tasks|checkpoints|\\[(\"(values|messages|messages-tuple|updates|events|debug|custom|tasks|checkpoints)\"(,\"(values|messages|messages-tuple|updates|events|debug|custom|tasks|checkpoints)\")*)?\\])$(?![\\s\\S])",
            description = "A stream mode, or a JSON list of them (`values` unless given)"),
        ("Last-Event-ID" = Option<String>, Header, pattern = "^(-1|[0-9]{1,18})$",
            description = "The `id` of the last frame received: the run goes on after it")),
    responses(
        (status = 200, description = "The run as LangGraph's stream parts", content(
            (ref("#/components/schemas/LangGraphStream") = "text/event-stream"),
        )),
        (status = 400, description = "`bad-request`: `stream_mode` or `Last-Event-ID` is not one", body = ErrorBody),
        (status = 404, description = "`session-not-found`, `run-not-found`", body = ErrorBody),
        (status = 409, description = "`session-disposed`: the thread was disposed on `/v1`", body = ErrorBody),
        Limited, StorageFailed,
    )
)]
pub(super) async fn join(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(RunPath { thread_id: thread, run_id: run }): Path<RunPath>,
    QueryParams(query): QueryParams<JoinQuery>,
    headers: HeaderMap,
) -> Answer<Response> {
    let (modes, _) = Modes::parse(query.modes()?);
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

/// Cancels a run: the thread's running turn, and its inbox cleared. With `wait=1` it answers
/// once the agent is idle.
#[utoipa::path(
    post, path = "/langgraph/threads/{thread_id}/runs/{run_id}/cancel", operation_id = "langGraphCancelRun", tag = "protocols",
    params(RunPath,
        ("wait" = Option<String>, Query, pattern = "^(0|1|true|false)$(?![\\s\\S])",
            description = "`1` answers once the agent is idle (204); `0`, the default, at once (202)"),
        ("action" = Option<String>, Query, pattern = "^interrupt$(?![\\s\\S])",
            description = "`interrupt`, the only one: a rollback is not possible, the log is append-only")),
    responses(
        (status = 202, description = "Cancelled; the turn is stopping"),
        (status = 204, description = "Cancelled; the agent is idle"),
        (status = 400, description = "`bad-request`: `wait` or `action` is not one", body = ErrorBody),
        (status = 404, description = "`session-not-found`, `run-not-found`", body = ErrorBody),
        (status = 409, description = "`run-ended`: there is nothing to cancel; or `session-disposed`", body = ErrorBody),
        SessionFailed,
    )
)]
pub(super) async fn cancel(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(RunPath { thread_id: thread, run_id: run }): Path<RunPath>,
    QueryParams(query): QueryParams<CancelQuery>,
) -> Answer<StatusCode> {
    let (handle, first) = open_run(&state, &caller, &thread, &run).await?;
    if ended(&state, &handle, first).await? {
        return Err(ApiError::conflict(
            "run-ended",
            format!("run {run} of thread {thread:?} ended; there is nothing to cancel"),
        ));
    }
    state.sessions.cancel(&thread, false).await?;
    if query.wait == Some(Flag::On) {
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

/// Answers the calls waiting for a person with `resume`: one decision for them all, LangChain's
/// decisions in the order the interrupts came, or a decision per interrupt id (an id of a call
/// that no longer waits is passed over, as a retried resume's would be).
async fn resume_with(
    state: &AppState,
    thread: &str,
    resume: Resume,
    waiting: &[WaitingCall],
) -> Result<(), ApiError> {
    let approvals = waiting.iter().filter(|call| call.kind == WaitKind::Approval);
    for (i, call) in approvals.enumerate() {
        let decision = match &resume {
            Resume::One(decision) => Some(decision),
            Resume::Decisions(list) => list.decisions.get(i),
            Resume::ById(by_id) => by_id.get(&call.call_id),
        };
        let Some(decision) = decision else { continue };
        match state.sessions.answer(thread, &call.call_id, answer_of(decision)).await {
            Ok(()) | Err(InputError::NotWaiting(_)) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

/// A person's decision on one call.
fn answer_of(decision: &Decision) -> CallAnswer {
    let approve = |arguments| CallAnswer::Approve { by: None, arguments };
    match decision {
        Decision::Yes(true)
        | Decision::Word(Word::Approve)
        | Decision::Typed(Typed::Approve {}) => approve(None),
        Decision::Typed(Typed::Edit { edited_action }) => {
            approve(Some(Value::Object(edited_action.args.clone()).to_string()))
        }
        Decision::Yes(false) | Decision::Word(Word::Reject) => {
            CallAnswer::Deny { reason: None, by: None }
        }
        Decision::Typed(Typed::Reject { message }) => {
            CallAnswer::Deny { reason: message.clone(), by: None }
        }
    }
}
