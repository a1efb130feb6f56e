//! Owned runs: `POST /v1/sessions/{id}/runs` and `POST /v1/runs`. The caller owns the interval
//! from its message's receipt through the next whole-agent idle and gets its [`RunResult`]. A
//! client that goes away cancels nothing: the agent keeps working.

use std::sync::{Arc, Weak};
use std::time::Duration;

use airlock_core::{Delivery, Message, Status};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::events::Tx;
use super::fields::{self, Content};
use super::responses::{BodyRefused, Limited, NoSession, RunTimeout, SessionFailed};
use super::traced::Traced;
use super::{
    Answer, ApiError, AppState, Caller, ErrorBody, IdempotencyKeyHeader, JsonBody, QueryParams,
    SessionId, TraceHeaders, sse,
};
use crate::schema::delivery_schema;
use airlock_base::clock::fresh_id;
use airlock_sessions::{
    Follower, IdempotencyKey, OwnedRun, RunResult, SessionHandle, SessionSpec, Slot, Update,
};

/// `/v1/sessions/{id}/runs` and `/v1/runs` (paths in the annotations).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(session_run)).routes(routes!(new_session_run))
}

/// A message whose interval the caller owns.
#[derive(Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RunBody {
    content: Content,
    #[serde(default)]
    #[schema(schema_with = delivery_schema)]
    delivery: Delivery,
    /// Give up waiting after this many milliseconds, at most a day (504 `run-timeout`); the
    /// agent keeps working. Not part of what an `Idempotency-Key` compares.
    #[serde(default, deserialize_with = "fields::run_timeout", skip_serializing)]
    #[schema(minimum = 0, maximum = 86_400_000)]
    timeout_ms: Option<u64>,
}

/// A message for a new session, whose interval the caller owns.
#[derive(Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NewRunBody {
    content: Content,
    /// The model spec, e.g. `demo` or `openai:gpt-4o-mini`; the gateway's default when absent.
    model: Option<String>,
    /// The system prompt.
    system: Option<String>,
    /// Give up waiting after this many milliseconds, at most a day (504 `run-timeout`); the
    /// agent keeps working. Not part of what an `Idempotency-Key` compares.
    #[serde(default, deserialize_with = "fields::run_timeout", skip_serializing)]
    #[schema(minimum = 0, maximum = 86_400_000)]
    timeout_ms: Option<u64>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct RunQuery {
    /// `true`: the interval as SSE, ending with `event: run.result`.
    stream: Option<bool>,
}

/// Sends a message and answers the result of the interval it starts: from its receipt through
/// the next whole-agent idle, whatever else ran in it. A retry with the same `Idempotency-Key`
/// and body sends nothing: it answers the first run's interval (waiting for it if it still runs).
#[utoipa::path(
    post, path = "/v1/sessions/{id}/runs", operation_id = "runInSession", tag = "runs",
    params(SessionId, RunQuery, IdempotencyKeyHeader, TraceHeaders),
    request_body = RunBody,
    responses(
        (status = 200, description = "The interval's result; with `?stream=true` the interval as \
            SSE (`session.event`, `session.status` and `session.queue` frames), then \
            `event: run.result` with the result, or `event: error` on a timeout", content(
            (crate::schema::RunResult = "application/json"),
            (ref("#/components/schemas/RunStream") = "text/event-stream"),
        )),
        (status = 409, description = "`session-disposed`, `child-session` (a continuable subagent takes work only from its parent), `session-conflict` or `idempotency-conflict` (the key was used for another request)", body = ErrorBody),
        BodyRefused, Limited, NoSession, RunTimeout, SessionFailed,
    )
)]
async fn session_run(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<RunQuery>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<RunBody>,
) -> Answer<Response> {
    let mut message = Message::user(fresh_id(), body.content.clone().blocks());
    let traced = Traced::mark(state.traces.as_ref(), &headers, &mut message);
    let answer = run_in_session(state, caller, id, q, headers, message, body).await;
    Ok(traced.end("/v1/sessions/{id}/runs", answer))
}

/// [`session_run`] of `message`.
async fn run_in_session(
    state: AppState,
    caller: Caller,
    id: String,
    q: RunQuery,
    headers: HeaderMap,
    message: Message,
    body: RunBody,
) -> Answer<Response> {
    let scope = format!("{id} runs");
    let key = fields::idempotency_key(&headers, caller.tenant(), &scope, &body, &message.id)?;
    // A held run counts as one of the tenant's streams.
    let slot = state.sessions.hold_stream(caller.tenant())?;
    let handle = state.sessions.open(&id).await?;
    let stream = q.stream.unwrap_or(false);
    let owner = Owner { state, handle, stream, timeout: body.timeout_ms, _slot: slot };
    owner.run(message, body.delivery, key).await
}

/// Creates a session, sends it a message and answers the result of the interval it starts. A
/// retry with the same `Idempotency-Key` and body creates nothing and sends nothing: it answers
/// the first run's session and interval.
#[utoipa::path(
    post, path = "/v1/runs", operation_id = "runInNewSession", tag = "runs",
    params(RunQuery, IdempotencyKeyHeader, TraceHeaders),
    request_body = NewRunBody,
    responses(
        (status = 200, description = "The interval's result (`sessionId` names the new \
            session); with `?stream=true` the interval as SSE, as for a session's runs", content(
            (crate::schema::RunResult = "application/json"),
            (ref("#/components/schemas/RunStream") = "text/event-stream"),
        )),
        (status = 409, description = "`idempotency-conflict`: the key was used for another request", body = ErrorBody),
        BodyRefused, Limited, RunTimeout, SessionFailed,
    )
)]
async fn new_session_run(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    QueryParams(q): QueryParams<RunQuery>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<NewRunBody>,
) -> Answer<Response> {
    let mut message = Message::user(fresh_id(), body.content.clone().blocks());
    let traced = Traced::mark(state.traces.as_ref(), &headers, &mut message);
    let answer = run_in_new_session(state, caller, q, headers, message, body).await;
    Ok(traced.end("/v1/runs", answer))
}

/// [`new_session_run`] of `message`.
async fn run_in_new_session(
    state: AppState,
    caller: Caller,
    q: RunQuery,
    headers: HeaderMap,
    message: Message,
    body: NewRunBody,
) -> Answer<Response> {
    let key = fields::idempotency_key(&headers, caller.tenant(), "runs", &body, &message.id)?;
    let slot = state.sessions.hold_stream(caller.tenant())?;
    // One retry at a time per key: the first makes the session, the others find it.
    let _one = match &key {
        Some(key) => Some(state.runs.lock(&key.key).await),
        None => None,
    };
    let first = match &key {
        Some(key) => state.sessions.keyed_session(key).await?,
        None => None,
    };
    let handle = match first {
        Some(handle) => handle,
        None => {
            // The session is made for this run: not when its message would be refused.
            state.sessions.turn_room(caller.tenant())?;
            let spec = SessionSpec {
                model: body.model.clone().unwrap_or_default(),
                system: body.system.clone(),
                ..SessionSpec::default()
            };
            state.sessions.open_new(spec, caller.owner()).await?
        }
    };
    let stream = q.stream.unwrap_or(false);
    let owner = Owner { state, handle, stream, timeout: body.timeout_ms, _slot: slot };
    owner.run(message, Delivery::Followup, key).await
}

/// One owned run being answered.
struct Owner {
    state: AppState,
    handle: SessionHandle,
    stream: bool,
    timeout: Option<u64>,
    /// Its place among the tenant's streams, held until it is answered.
    _slot: Slot,
}

impl Owner {
    async fn run(
        self,
        message: Message,
        delivery: Delivery,
        key: Option<IdempotencyKey>,
    ) -> Answer<Response> {
        let (run, follower) = self.state.sessions.run(&self.handle, message, delivery, key).await?;
        let deadline =
            self.timeout.map(|ms| tokio::time::Instant::now() + Duration::from_millis(ms));
        if self.stream {
            let (tx, rx) = mpsc::channel(64);
            tokio::spawn(self.stream_interval(run, follower, deadline, tx));
            return Ok(sse::response(ReceiverStream::new(rx)));
        }
        let result = self.finish(run, deadline).await?;
        Ok(Json(result).into_response())
    }

    /// Waits for the interval's end (or the deadline) and reads its result.
    async fn finish(
        &self,
        mut run: OwnedRun,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<RunResult, ApiError> {
        let last_seq = match deadline {
            None => run.last_seq().await?,
            Some(deadline) => match tokio::time::timeout_at(deadline, run.last_seq()).await {
                Ok(last) => last?,
                Err(_) => return Err(self.timed_out(&run)),
            },
        };
        Ok(self.state.sessions.result(&run, last_seq).await?)
    }

    /// 504 `run-timeout`: where the log is now, so the caller can follow it from there.
    fn timed_out(&self, run: &OwnedRun) -> ApiError {
        let last_seq = self.handle.view().next_seq.saturating_sub(1);
        ApiError::timeout(
            "run-timeout",
            "the run did not reach idle in time; the agent keeps working: follow its events \
             from lastSeq or read the session later",
        )
        .details(json!({"messageId": run.message_id, "lastSeq": last_seq}))
    }

    /// Streams the interval's frames, then `run.result` (or `error` on a timeout).
    async fn stream_interval(
        self,
        mut run: OwnedRun,
        mut follower: Follower,
        deadline: Option<tokio::time::Instant>,
        tx: Tx,
    ) {
        let id = self.handle.id().to_owned();
        let mut shutdown = self.state.shutdown.clone();
        let mut end = None;
        let mut last_status = None;
        let send = |frame: Bytes| {
            let tx = tx.clone();
            async move { tx.send(frame).await.is_ok() }
        };
        let expired = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(expired);
        while end.is_none_or(|last| follower.cursor().is_none_or(|c| c < last)) {
            let update = tokio::select! {
                _ = shutdown.changed() => return,
                _ = tx.closed() => return,
                () = &mut expired, if end.is_none() => {
                    let _ = send(error_frame(self.timed_out(&run))).await;
                    return;
                }
                last = run.last_seq(), if end.is_none() => match last {
                    Ok(last) => { end = Some(last); continue }
                    Err(error) => { let _ = send(error_frame(error.into())).await; return }
                },
                update = follower.next() => update,
            };
            let update = match update {
                Ok(Some(update)) => update,
                Ok(None) => return, // the session is gone
                Err(error) => {
                    let _ = send(error_frame(error.into())).await;
                    return;
                }
            };
            if let Update::Status(status) = update {
                last_status = Some(status);
            }
            if !send(sse::update(&id, &update)).await {
                return;
            }
        }
        let Some(last_seq) = end else { return };
        // The interval ends at whole-agent idle: say so if the stream has not yet.
        if last_status == Some(Status::Running) && !send(sse::status(&id, Status::Idle)).await {
            return;
        }
        let frame = match self.state.sessions.result(&run, last_seq).await {
            Ok(result) => sse::frame(
                "run.result",
                None,
                &serde_json::to_string(&result).expect("results serialize"),
            ),
            Err(error) => error_frame(error.into()),
        };
        let _ = send(frame).await;
    }
}

/// One `POST /v1/runs` at a time per idempotency key, so that a retry sent while the first is
/// still creating its session finds that session instead of making another.
#[derive(Default)]
pub struct KeyLocks(
    std::sync::Mutex<std::collections::HashMap<String, Weak<tokio::sync::Mutex<()>>>>,
);

impl KeyLocks {
    /// Holds off every other request with `key` while the guard lives.
    pub async fn lock(&self, key: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = {
            let mut locks = self.0.lock().expect("key locks lock");
            locks.retain(|_, lock| lock.strong_count() > 0);
            match locks.get(key).and_then(Weak::upgrade) {
                Some(lock) => lock,
                None => {
                    let lock = Arc::new(tokio::sync::Mutex::new(()));
                    locks.insert(key.to_owned(), Arc::downgrade(&lock));
                    lock
                }
            }
        };
        lock.lock_owned().await
    }
}

/// `event: error` with the error body, for a stream that cannot answer a status code any more.
fn error_frame(error: ApiError) -> Bytes {
    sse::frame("error", None, &error.body_json())
}
