//! AG-UI (`docs/interfaces.md`, "AG-UI"): `POST /ag-ui` takes a `RunAgentInput` and answers the
//! run as an SSE stream of AG-UI events, so an AG-UI frontend (CopilotKit, `@ag-ui/client`'s
//! `HttpAgent`) talks to Airlock as it is.
//!
//! The thread is a session (made on first use, in the caller's tenant, with the frontend's tools
//! as client tools); the run is the interval of the newest message the session has not seen,
//! owned as an owned run's is, with `runId` as its idempotency key: a retried POST runs nothing
//! again and streams the same run. It ends `RUN_FINISHED` at whole-agent idle, or as soon as every
//! call in flight waits for the frontend: approvals as an `interrupt` outcome, which the next
//! run's `resume` answers; frontend tools as `pendingToolCallIds`, whose results come back as
//! tool messages. Beyond the protocol, `Last-Event-ID` on a retried POST joins the run after
//! that event: every frame that ends a log event's AG-UI events carries its seq as `id`.

#![allow(
    clippy::result_large_err,
    reason = "ApiError is the crate's one error shape, answered by value as every handler's is"
)]

mod input;
mod translate;

use std::collections::HashSet;

use airlock_core::{CallAnswer, Delivery, Message, WaitKind, WaitingCall};
use axum::Extension;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::events::Tx;
use super::interval::End;
use super::responses::{BodyRefused, Limited, SessionFailed};
use super::{Answer, ApiError, AppState, Caller, ErrorBody, JsonBody, fields, named, sse};
use airlock_sessions::{Follower, InputError, RegistryError, SessionHandle, SessionSpec, Slot};
use input::{InputMessage, ResumeEntry, ResumeStatus, RunAgentInput, ToolMessage};
use translate::Translator;

/// `POST /ag-ui` (path in the annotation).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(run))
}

/// Runs the agent on an AG-UI thread and streams the run as AG-UI events.
///
/// `RUN_STARTED`, the text, reasoning and tool calls, then `RUN_FINISHED` or `RUN_ERROR`. The
/// thread is a session,
/// made on first use; `runId` is the run's idempotency key. The run ends at whole-agent idle, or
/// as soon as every call in flight waits for the frontend: approvals as an `interrupt` outcome
/// (the next run's `resume` answers them), frontend tools in `pendingToolCallIds` (their results
/// come back as tool messages). A frame that ends a log event's AG-UI events has its seq as `id`:
/// the same run posted again with `Last-Event-ID` goes on after it.
#[utoipa::path(
    post, path = "/ag-ui", operation_id = "runAgUi", tag = "protocols",
    request_body = RunAgentInput,
    params(("Last-Event-ID" = Option<String>, Header, pattern = "^[0-9]{1,18}$",
        description = "The `id` of the last frame received: the run goes on after it")),
    responses(
        (status = 200, description = "The run as AG-UI events, each a `data:` line", content(
            (ref("#/components/schemas/AgUiStream") = "text/event-stream"),
        )),
        (status = 404, description = "`session-not-found`: the thread is another tenant's", body = ErrorBody),
        (status = 409, description = "`idempotency-conflict` (the runId was used with other messages), `session-disposed` or `child-session`", body = ErrorBody),
        BodyRefused, Limited, SessionFailed,
    )
)]
async fn run(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    JsonBody(input): JsonBody<Value>,
) -> Answer<Response> {
    let input = RunAgentInput::parse(input)?;
    let after = match headers.get("last-event-id") {
        Some(value) => Some(fields::parse_last_event_id(value.as_bytes())?),
        None => None,
    };
    let (handle, client_tools) = open_thread(&state, &caller, &input).await?;
    let slot = state.sessions.hold_stream(caller.tenant())?;
    let known = input.messages.iter().map(|message| message.id().to_owned()).collect();
    let translator = Translator::new(handle.id(), known, client_tools);
    let (follower, end, first, waiting) = begin(&state, &caller, &handle, &input).await?;
    let stream = Stream::new(state, handle, &input, translator, slot, follower, end);
    Ok(stream.start(first, waiting, after))
}

/// Starts the run: sends what the session has not taken, answers what waits, and says where the
/// run's stream starts (its first seq, a follower from there, the calls waiting then) and ends.
async fn begin(
    state: &AppState,
    caller: &Caller,
    handle: &SessionHandle,
    input: &RunAgentInput,
) -> Result<(Follower, End, u64, Vec<WaitingCall>), ApiError> {
    let thread = input.thread_id.as_str();
    let trailing = input.trailing();
    let key = trailing.last().map(|last| {
        let scope = format!("{thread} ag-ui");
        fields::scoped_key(caller.tenant(), &scope, &input.run_id, &trailing, &last.id)
    });
    let run = |message: Message, key| async move {
        let sent = state.sessions.run(handle, message, Delivery::Followup, key).await;
        let (run, follower) = sent.map_err(run_conflict)?;
        Ok::<_, ApiError>((follower, run.first_seq, End::Owned(run)))
    };

    // A retried run: the same interval again.
    if let (Some(key), Some(last)) = (&key, trailing.last())
        && state.sessions.keyed_session(key).await.map_err(run_conflict)?.is_some()
    {
        let (follower, first, end) = run(last.clone(), Some(key.clone())).await?;
        return Ok((follower, end, first, Vec::new()));
    }

    // What waits now, and where the log is: the run reads on from there.
    handle.settled().await.map_err(RegistryError::Session)?;
    let view = handle.view();
    let waiting = view.waiting();
    answer_interrupts(state, thread, &input.resume, &waiting).await?;
    answer_tools(state, thread, &input.messages, &waiting).await?;
    let sent: HashSet<String> =
        state.sessions.inserted(thread).await?.into_iter().map(|(_, m)| m.id).collect();
    let fresh: Vec<Message> = trailing.into_iter().filter(|m| !sent.contains(&m.id)).collect();
    let Some((last, earlier)) = fresh.split_last() else {
        let follower = state.sessions.follow(handle, view.next_seq.checked_sub(1));
        let end = if view.next_seq == 0 { End::Empty } else { End::Idle(handle.clone()) };
        return Ok((follower, end, view.next_seq, waiting));
    };
    for message in earlier {
        state.sessions.send(thread, message.clone(), Delivery::Followup, None).await?;
    }
    let (follower, first, end) = run(last.clone(), key).await?;
    Ok((follower, end, first, waiting))
}

/// `runId` reused with other messages is 409.
fn run_conflict(error: InputError) -> ApiError {
    match error {
        InputError::KeyConflict => ApiError::conflict(
            "idempotency-conflict",
            "this runId was used for a run with other messages; use a fresh runId for a new run",
        ),
        error => error.into(),
    }
}

/// The thread's session, made on first use with the frontend's tools as its client tools, and
/// the names of its client tools.
async fn open_thread(
    state: &AppState,
    caller: &Caller,
    input: &RunAgentInput,
) -> Result<(SessionHandle, HashSet<String>), ApiError> {
    let spec = SessionSpec { client_tools: input.client_tools(), ..SessionSpec::default() };
    let (handle, row) = named::open_or_make(state, caller, &input.thread_id, spec).await?;
    let spec = serde_json::from_value::<SessionSpec>(row.spec).ok();
    let tools = spec.and_then(|spec| spec.client_tools).into_iter().flatten();
    Ok((handle, tools.map(|tool| tool.name).collect()))
}

/// Answers the approvals the resume entries name: `resolved` approves (with the payload's
/// `arguments` when it has them) unless the payload says `approved: false`; `cancelled` denies.
/// An entry for a call that waits no more (a retried resume) is passed over.
async fn answer_interrupts(
    state: &AppState,
    thread: &str,
    resume: &[ResumeEntry],
    waiting: &[WaitingCall],
) -> Result<(), ApiError> {
    for entry in resume {
        let waits = waiting.iter().any(|call| call.call_id == entry.interrupt_id);
        if !waits {
            continue;
        }
        let payload = entry.payload.as_ref();
        let reason = payload.and_then(|p| p.reason.clone());
        let arguments = payload.and_then(|p| p.arguments.clone());
        let answer = match (&entry.status, payload.and_then(|p| p.approved)) {
            (ResumeStatus::Cancelled, _) => CallAnswer::Deny {
                reason: Some(reason.unwrap_or_else(|| "the person cancelled it".to_owned())),
                by: None,
            },
            (ResumeStatus::Resolved, Some(false)) => CallAnswer::Deny { reason, by: None },
            (ResumeStatus::Resolved, _) => CallAnswer::Approve {
                by: None,
                arguments: arguments.map(|arguments| Value::Object(arguments).to_string()),
            },
        };
        answer_call(state, thread, &entry.interrupt_id, answer).await?;
    }
    Ok(())
}

/// Answers a call; one that waits no more (answered by the same run posted before) is passed
/// over.
async fn answer_call(
    state: &AppState,
    thread: &str,
    call_id: &str,
    answer: CallAnswer,
) -> Result<(), ApiError> {
    match state.sessions.answer(thread, call_id, answer).await {
        Ok(()) | Err(InputError::NotWaiting(_)) => Ok(()),
        Err(error) => Err(error.into()),
    }
}

/// Gives the frontend tools' results (tool messages) to the calls that wait for them.
async fn answer_tools(
    state: &AppState,
    thread: &str,
    messages: &[InputMessage],
    waiting: &[WaitingCall],
) -> Result<(), ApiError> {
    for message in messages {
        let InputMessage::Tool(ToolMessage { content, tool_call_id, error, .. }) = message else {
            continue;
        };
        let waits = waiting
            .iter()
            .any(|call| &call.call_id == tool_call_id && call.kind == WaitKind::Client);
        if !waits {
            continue;
        }
        let answer = CallAnswer::Result { content: content.blocks()?, is_error: error.is_some() };
        answer_call(state, thread, tool_call_id, answer).await?;
    }
    Ok(())
}

/// One AG-UI run being streamed.
struct Stream {
    state: AppState,
    handle: SessionHandle,
    thread_id: String,
    run_id: String,
    translator: Translator,
    follower: Follower,
    end: End,
    /// Its place among the tenant's streams, held until it ends.
    _slot: Slot,
}

impl Stream {
    fn new(
        state: AppState,
        handle: SessionHandle,
        input: &RunAgentInput,
        translator: Translator,
        slot: Slot,
        follower: Follower,
        end: End,
    ) -> Stream {
        Stream {
            translator,
            state,
            handle,
            thread_id: input.thread_id.clone(),
            run_id: input.run_id.clone(),
            follower,
            end,
            _slot: slot,
        }
    }

    /// Streams the run from `first` (the seq it starts at) with the calls `waiting` when it
    /// started; the frames of the events through `after` are left out.
    fn start(mut self, first: u64, waiting: Vec<WaitingCall>, after: Option<u64>) -> Response {
        self.translator.waiting(waiting);
        let (tx, rx) = mpsc::channel(64);
        tokio::spawn(async move {
            if let Err(error) = self.stream(first, after, &tx).await {
                let error = json!({"type": "RUN_ERROR", "message": error.message(),
                    "code": error.code()});
                send(&tx, &[error], None).await;
            }
        });
        sse::response(ReceiverStream::new(rx))
    }

    async fn stream(&mut self, first: u64, after: Option<u64>, tx: &Tx) -> Result<(), ApiError> {
        let started = json!({"type": "RUN_STARTED", "threadId": self.thread_id,
            "runId": self.run_id});
        if !send(tx, &[started], None).await {
            return Ok(());
        }
        let mut shutdown = self.state.shutdown.clone();
        let mut next = first;
        let mut end = None;
        // Left out through `after` (a reconnect); then what is open is opened again.
        let mut silent = after.is_some_and(|after| after >= first);
        loop {
            let last = if self.translator.waits_for_frontend() && self.caught_up(next).await? {
                Some(self.translator.interrupted(&self.thread_id, &self.run_id))
            } else if end.is_some_and(|after| next >= after) {
                Some(self.translator.finished(&self.thread_id, &self.run_id))
            } else {
                None
            };
            if let Some(mut events) = last {
                if silent {
                    events.splice(0..0, self.translator.reopen());
                }
                send(tx, &events, None).await;
                return Ok(());
            }
            let update = tokio::select! {
                _ = shutdown.changed() => return Ok(()),
                _ = tx.closed() => return Ok(()),
                after = self.end.after(), if end.is_none() => { end = Some(after?); continue }
                update = self.follower.next() => update?,
            };
            let Some(update) = update else { return Ok(()) }; // the session is gone
            let airlock_sessions::Update::Event(event) = update else { continue };
            next = event.seq + 1;
            let events = self.translator.event(&event.json);
            let events = match silent {
                // The client has the events through `after`: once there, what is open then is
                // opened again, at once (the run may be waiting for its model).
                true if after.is_some_and(|after| event.seq < after) => continue,
                true => {
                    silent = false;
                    self.translator.reopen()
                }
                false => events,
            };
            if !send(tx, &events, Some(event.seq)).await {
                return Ok(());
            }
        }
    }

    /// Whether the log has nothing after `next - 1` once the session's actor has finished what
    /// it was doing (a batch it is committing may hold more calls of the same group).
    async fn caught_up(&self, next: u64) -> Result<bool, ApiError> {
        self.handle.settled().await.map_err(RegistryError::Session)?;
        Ok(self.handle.view().next_seq <= next)
    }
}

/// Sends `events`, the last with `id: seq` when they are a log event's; `false` once the stream
/// is closed.
async fn send(tx: &Tx, events: &[Value], seq: Option<u64>) -> bool {
    for (i, event) in events.iter().enumerate() {
        let id = if i + 1 == events.len() { seq } else { None };
        if tx.send(frame(event, id)).await.is_err() {
            return false;
        }
    }
    true
}

/// An AG-UI event's frame: `event:` its type, `data:` it.
fn frame(event: &Value, id: Option<u64>) -> Bytes {
    sse::frame(event["type"].as_str().unwrap_or("message"), id, &event.to_string())
}
