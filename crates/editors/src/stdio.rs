//! `airlock stdio`: the seed's low-level SDK protocol, newline-delimited JSON-RPC 2.0 on
//! stdin/stdout, so clients of the seed system can drive Airlock unchanged.
//!
//! - `initialize {cwd?, provider?, model?, maxTokens?}` → `{serverInfo: {name, version}}`; the
//!   model applies to sessions created afterwards, chosen as `--model` chooses it.
//! - `session/prompt {sessionId, contentBlocks}` → `{messageId}` once the message is durable; an
//!   unknown `sessionId` creates the session. The insert splice's `session.event` is written
//!   before the response.
//! - `session/compact {sessionId}` → `{}` once a compaction of the idle session has started; its
//!   `context/compaction` event follows as a `session.event`. Refused (-32603) with the code
//!   `session-running`, `compacting` or `nothing-to-compact`.
//! - `shutdown` → `{}` (the last frame: forwarding stops first), then the store is flushed and
//!   the process exits 0. At the end of input the prompted sessions first finish their work (a
//!   dropped connection cancels nothing).
//! - Notifications: `session.event {sessionId, event}` for every committed event of a session the
//!   client prompted, `session.status {sessionId, status}` on whole-agent transitions. There is no
//!   `session.finished` and no per-prompt result: a prompt's receipt proves admission only.
//!
//! Unknown methods answer -32601, invalid parameters -32602; a request that was valid but failed
//! (storage, a refused prompt, a model this gateway cannot reach) answers -32603 with its message
//! and `data: {code}`, the same kebab-case code the HTTP API would give. Lines that are not
//! JSON-RPC requests are ignored. Stdout carries frames only.

use std::collections::HashMap;

use airlock_core::{ContentBlock, Delivery, Message};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};

use airlock_base::clock::fresh_id;
use airlock_providers::model::ModelSetupError;
use airlock_sessions::{
    Follower, InputError, RegistryError, Sent, SessionError, SessionHandle, SessionSpec, Sessions,
    Update,
};

/// The most bytes of queued frames written to stdout at once.
const WRITE_BATCH: usize = 64 * 1024;

/// A JSON-RPC error.
#[derive(Debug)]
struct RpcError {
    code: i64,
    message: String,
    /// `{code}`: what failed, for a program (a failure's only).
    data: Option<Value>,
}

impl RpcError {
    fn invalid_params(message: impl std::fmt::Display) -> RpcError {
        RpcError { code: -32602, message: format!("invalid params: {message}"), data: None }
    }

    /// -32603: a valid request failed; `why` is a kebab-case code (`storage-unavailable`, ...).
    fn failed(why: &str, message: impl std::fmt::Display) -> RpcError {
        RpcError { code: -32603, message: message.to_string(), data: Some(json!({"code": why})) }
    }

    fn registry(error: RegistryError) -> RpcError {
        let why = match &error {
            RegistryError::NotFound(_) => "session-not-found",
            RegistryError::Disposed(_) => "session-disposed",
            RegistryError::BadSpec { .. } | RegistryError::Unusable { .. } => "model-unavailable",
            RegistryError::BadId(_) => return RpcError::invalid_params(error),
            RegistryError::Elsewhere { .. } => "session-moving",
            RegistryError::NotLogged { .. } => "seq-not-logged",
            RegistryError::Taken(_) => "session-conflict",
            RegistryError::NoWorkspaces => "no-workspaces",
            RegistryError::Exceeded(_) | RegistryError::Session(SessionError::Exceeded(_)) => {
                "limit-exceeded"
            }
            RegistryError::Store(_) | RegistryError::Session(_) => "storage-unavailable",
        };
        RpcError::failed(why, error)
    }

    fn input(error: InputError) -> RpcError {
        let why = match error {
            InputError::Session(error) => return RpcError::registry(error),
            InputError::Refused { ref refusal, .. } => {
                return RpcError::failed(refusal.code.as_str(), &refusal.message);
            }
            InputError::KeyConflict => "idempotency-conflict",
            InputError::WroteNothing => "session-conflict",
            InputError::NotQueued(_) => "queue-item-not-found",
            InputError::SteerUnavailable(_) => "steer-unavailable",
            InputError::NotWaiting(_) => "not-waiting",
            InputError::NoSuchCall { .. } => "tool-call-not-found",
        };
        RpcError::failed(why, error)
    }
}

/// One line of input that is a request (or a notification, without `id`).
#[derive(Deserialize)]
struct Request {
    jsonrpc: String,
    #[serde(default)]
    id: Option<Value>,
    method: String,
    #[serde(default)]
    params: Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeParams {
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    max_tokens: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptParams {
    session_id: String,
    content_blocks: Vec<ContentBlock>,
}

/// A session whose frames are being written.
struct Forwarded {
    handle: SessionHandle,
    /// How far its events have been written.
    seq: watch::Receiver<Option<u64>>,
    task: tokio::task::JoinHandle<()>,
}

/// The protocol over one pair of streams.
struct Server {
    sessions: Sessions,
    out: mpsc::UnboundedSender<String>,
    forwarded: HashMap<String, Forwarded>,
    /// The model and token limit `initialize` chose for new sessions.
    model: Option<String>,
    max_tokens: Option<u32>,
}

/// Serves the protocol on `input`/`output` until `shutdown` or the end of input.
pub async fn serve(
    sessions: Sessions,
    input: impl tokio::io::AsyncRead + Unpin,
    mut output: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
) -> std::io::Result<()> {
    let (out, mut frames) = mpsc::unbounded_channel::<String>();
    let (stop, mut stopping) = tokio::sync::oneshot::channel::<()>();
    let writer = tokio::spawn(async move {
        let mut stopped = false;
        loop {
            let frame = tokio::select! {
                biased;
                frame = frames.recv() => frame,
                _ = &mut stopping, if !stopped => {
                    // No more frames are taken; those already queued still go out.
                    stopped = true;
                    frames.close();
                    continue;
                }
            };
            let Some(frame) = frame else { break };
            // Every frame already queued goes out in the same write: one write per burst, not
            // one per frame.
            let mut batch = frame;
            batch.push('\n');
            while batch.len() < WRITE_BATCH
                && let Ok(frame) = frames.try_recv()
            {
                batch.push_str(&frame);
                batch.push('\n');
            }
            output.write_all(batch.as_bytes()).await?;
            output.flush().await?;
        }
        Ok::<_, std::io::Error>(())
    });
    let mut server =
        Server { sessions, out, forwarded: HashMap::new(), model: None, max_tokens: None };
    let mut lines = BufReader::new(input).lines();
    let mut ended = true;
    while let Some(line) = lines.next_line().await? {
        let Ok(request) = serde_json::from_str::<Request>(&line) else { continue };
        if request.jsonrpc != "2.0" {
            continue;
        }
        let shutdown = request.method == "shutdown";
        if shutdown {
            // Nothing is forwarded after the answer: it is the last frame.
            server.stop_forwarding().await;
        }
        let answer = server.handle(&request).await;
        if let Some(id) = request.id {
            server.respond(id, answer);
        }
        if shutdown {
            ended = false;
            break;
        }
    }
    if ended {
        // The end of input is a dropped connection, which cancels nothing: let the prompted
        // sessions finish their work (and its frames go out) before the process ends.
        for session in server.forwarded.values() {
            if let Ok(last) = session.handle.idle().await {
                let _ = session.seq.clone().wait_for(|w| w.is_some_and(|w| w >= last)).await;
            }
        }
    }
    // Everything acknowledged is committed already; the barrier makes sure of the rest.
    if let Err(error) = server.sessions.flush().await {
        tracing::error!(%error, "flushing the store at shutdown failed");
    }
    server.stop_forwarding().await;
    drop(server);
    // The writer writes what is queued and ends, whenever the aborted forwarders are dropped.
    let _ = stop.send(());
    writer.await.map_err(std::io::Error::other)?
}

impl Server {
    /// Ends every forwarder, and waits until they have ended: no frame of theirs comes after.
    async fn stop_forwarding(&mut self) {
        for (_, forwarded) in self.forwarded.drain() {
            forwarded.task.abort();
            let _ = forwarded.task.await;
        }
    }

    async fn handle(&mut self, request: &Request) -> Result<Value, RpcError> {
        match request.method.as_str() {
            "initialize" => self.initialize(&request.params),
            "session/prompt" => self.prompt(&request.params).await,
            "session/compact" => self.compact(&request.params).await,
            "shutdown" => Ok(json!({})),
            method => Err(RpcError {
                code: -32601,
                message: format!("method not found: {method}"),
                data: None,
            }),
        }
    }

    fn respond(&self, id: Value, answer: Result<Value, RpcError>) {
        let frame = match answer {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(e) => {
                let mut error = json!({"code": e.code, "message": e.message});
                if let Some(data) = e.data {
                    error["data"] = data;
                }
                json!({"jsonrpc": "2.0", "id": id, "error": error})
            }
        };
        let _ = self.out.send(frame.to_string());
    }

    fn initialize(&mut self, params: &Value) -> Result<Value, RpcError> {
        let params: InitializeParams =
            serde_json::from_value(params.clone()).map_err(RpcError::invalid_params)?;
        let model = match (params.provider.as_deref(), params.model) {
            (None, None) => None,
            (Some("demo"), _) => Some("demo".to_owned()),
            (Some(provider), Some(model)) => Some(format!("{provider}:{model}")),
            (None, Some(model)) => Some(model),
            (Some(provider), None) => {
                return Err(RpcError::invalid_params(format!(
                    "provider {provider:?} needs a model name, e.g. {{\"provider\": \"{provider}\", \"model\": \"...\"}}"
                )));
            }
        };
        if let Some(model) = &model {
            airlock_providers::model::from_name(model).map_err(|error| match error {
                ModelSetupError::Unknown(_) | ModelSetupError::MissingModelName { .. } => {
                    RpcError::invalid_params(error)
                }
                error => RpcError::failed("model-unavailable", error),
            })?;
        }
        (self.model, self.max_tokens) = (model, params.max_tokens);
        Ok(json!({"serverInfo": {"name": "airlock", "version": env!("CARGO_PKG_VERSION")}}))
    }

    async fn prompt(&mut self, params: &Value) -> Result<Value, RpcError> {
        let params: PromptParams =
            serde_json::from_value(params.clone()).map_err(RpcError::invalid_params)?;
        if params.content_blocks.is_empty() {
            return Err(RpcError::invalid_params(
                "contentBlocks is empty; send at least one block",
            ));
        }
        let handle = self.session(&params.session_id).await?;
        let mut forwarded = self.forward(&handle);
        let message = Message::user(fresh_id(), params.content_blocks);
        let message_id = message.id.clone();
        let seq = match self.sessions.send(handle.id(), message, Delivery::Followup, None).await {
            Ok(Sent::Accepted { seq }) => seq,
            Ok(Sent::Replayed(_)) => unreachable!("no idempotency key"),
            Err(InputError::Refused { refusal, .. }) => {
                let message = format!("the session refused the prompt: {}", refusal.message);
                return Err(RpcError::failed(refusal.code.as_str(), message));
            }
            Err(error) => return Err(RpcError::input(error)),
        };
        // The receipt's `session.event` goes out before the response.
        let written = forwarded.wait_for(|written| written.is_some_and(|w| w >= seq)).await;
        if written.is_err() {
            return Err(RpcError::failed(
                "session-stopped",
                "the session stopped before its receipt was written",
            ));
        }
        Ok(json!({"messageId": message_id}))
    }

    /// Compacts an idle session's conversation; its events are forwarded from now on.
    async fn compact(&mut self, params: &Value) -> Result<Value, RpcError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct CompactParams {
            session_id: String,
        }
        let params: CompactParams =
            serde_json::from_value(params.clone()).map_err(RpcError::invalid_params)?;
        let handle = self.sessions.open(&params.session_id).await.map_err(RpcError::registry)?;
        self.forward(&handle);
        self.sessions.compact(handle.id()).await.map_err(RpcError::input)?;
        Ok(json!({}))
    }

    /// The live session, created (with the model `initialize` chose) when it does not exist.
    async fn session(&self, session_id: &str) -> Result<SessionHandle, RpcError> {
        let spec = SessionSpec {
            model: self.model.clone().unwrap_or_default(),
            max_tokens: self.max_tokens,
            ..SessionSpec::default()
        };
        self.sessions.open_or_create(session_id, spec).await.map_err(RpcError::registry)
    }

    /// Starts writing a session's frames, once; answers how far they have been written.
    fn forward(&mut self, handle: &SessionHandle) -> watch::Receiver<Option<u64>> {
        if let Some(forwarded) = self.forwarded.get(handle.id()) {
            return forwarded.seq.clone();
        }
        let (seq, written) = watch::channel(None);
        let after = handle.view().next_seq.checked_sub(1);
        let follower = self.sessions.follow(handle, after);
        let task = tokio::spawn(forward(handle.id().to_owned(), follower, self.out.clone(), seq));
        let forwarded = Forwarded { handle: handle.clone(), seq: written.clone(), task };
        self.forwarded.insert(handle.id().to_owned(), forwarded);
        written
    }
}

/// Writes one session's events and status changes as notifications.
async fn forward(
    session_id: String,
    mut follower: Follower,
    out: mpsc::UnboundedSender<String>,
    written: watch::Sender<Option<u64>>,
) {
    let id = serde_json::to_string(&session_id).expect("strings serialize");
    while let Some(update) = follower.next_retrying().await {
        let frame = match &update {
            Update::Event(event) => format!(
                r#"{{"jsonrpc":"2.0","method":"session.event","params":{{"sessionId":{id},"event":{}}}}}"#,
                event.json
            ),
            Update::Status(status) => json!({
                "jsonrpc": "2.0",
                "method": "session.status",
                "params": {"sessionId": session_id, "status": status},
            })
            .to_string(),
            Update::Subagent(method, data) => {
                format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{data}}}"#)
            }
            Update::Queue(_) => continue,
        };
        if out.send(frame).is_err() {
            return;
        }
        if let Update::Event(event) = update {
            written.send_replace(Some(event.seq));
        }
    }
}
