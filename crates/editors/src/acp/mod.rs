//! `airlock acp`: the Agent Client Protocol (v1, agent side) for editors, on the maintained
//! `agent-client-protocol` crate.
//!
//! Each ACP session is an Airlock session. While a session is attached (by `session/new` or
//! `session/load`), every committed event it logs goes out as a `session/update`: text and
//! reasoning deltas as `agent_message_chunk` / `agent_thought_chunk` (streamed from the committed
//! chunks), tool calls as `tool_call` and their results as `tool_call_update`. `session/load`
//! first replays the log from its committed messages. The MCP servers a client names in either
//! give that session their tools (`acp/mcp.rs`).
//!
//! A prompt is an owned interval: it is admitted as a followup and answered at the next
//! whole-agent idle, once every update of the interval has gone out. Its stop reason comes from
//! the turn that **claimed** its message (admission, not causality): an explicit
//! `session/cancel` → `cancelled`; a prompt never claimed into a turn → `cancelled`; that turn
//! ended `max-tokens` → `max_tokens`, `error` → the prompt fails with a JSON-RPC error,
//! `aborted` by disposal → `cancelled`; anything else → `end_turn`. One prompt at a time per
//! session: a second one is refused, saying why.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ContentBlock as AcpBlock, EmbeddedResourceResource,
    Implementation, InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse,
    NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse,
    SessionId, SessionNotification, StopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, ConnectTo, Error};
use airlock_core::{CancelCause, ContentBlock, Delivery, Event, EventData, Message, TurnEndReason};
use serde_json::json;
use tokio::sync::watch;

mod mcp;
mod permission;
mod updates;

use airlock_base::clock::fresh_id;
use airlock_sessions::{Follower, RegistryError, SessionHandle, SessionSpec, Sessions, Update};
use permission::{Asker, Calls};
use updates::{replayed, updates_of};

/// Serves ACP over `transport` until the client goes away.
pub async fn serve(
    sessions: Sessions,
    transport: impl ConnectTo<Agent> + 'static,
) -> Result<(), Error> {
    let bridge = Arc::new(Bridge { sessions, attached: Mutex::new(HashMap::new()) });
    let (new, load, prompt, cancel) = (bridge.clone(), bridge.clone(), bridge.clone(), bridge);
    Agent
        .v1()
        .name("airlock")
        .on_receive_request(
            async |init: InitializeRequest, responder: Responder<InitializeResponse>, _cx| {
                let capabilities = AgentCapabilities::new()
                    .load_session(true)
                    .prompt_capabilities(
                        PromptCapabilities::new().image(true).embedded_context(true),
                    )
                    .mcp_capabilities(mcp::capabilities());
                responder.respond(
                    InitializeResponse::new(init.protocol_version)
                        .agent_capabilities(capabilities)
                        .agent_info(Implementation::new("airlock", env!("CARGO_PKG_VERSION"))),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest, responder: Responder<NewSessionResponse>, cx| {
                responder.respond_with_result(new.new_session(req, cx).await)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest, responder: Responder<LoadSessionResponse>, cx| {
                responder.respond_with_result(load.load_session(req, cx).await)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder: Responder<PromptResponse>, _cx| {
                prompt.prompt(req, responder)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |note: CancelNotification, _cx| {
                cancel.cancel(&note.session_id);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await
}

/// The ACP sessions of one connection.
struct Bridge {
    sessions: Sessions,
    attached: Mutex<HashMap<String, Attached>>,
}

/// A session whose events go out as updates.
struct Attached {
    handle: SessionHandle,
    /// The seq of the last event whose updates went out.
    sent: watch::Receiver<Option<u64>>,
    forwarder: tokio::task::JoinHandle<()>,
    /// The prompt in flight, if any.
    prompt: Option<Arc<InFlight>>,
}

/// A prompt in flight.
#[derive(Default)]
struct InFlight {
    /// `session/cancel` arrived for it.
    cancelled: AtomicBool,
}

impl Drop for Bridge {
    fn drop(&mut self) {
        for attached in self.attached.get_mut().expect("sessions lock").values() {
            attached.forwarder.abort();
            // Their MCP servers were this client's; a session built later goes without them.
            self.sessions.forget_tools(attached.handle.id());
        }
    }
}

impl Bridge {
    async fn new_session(
        &self,
        req: NewSessionRequest,
        cx: ConnectionTo<Client>,
    ) -> Result<NewSessionResponse, Error> {
        let id = fresh_id();
        mcp::attach(&self.sessions, &id, &req.cwd, req.mcp_servers).await?;
        let handle = self.sessions.open_or_create(&id, SessionSpec::default()).await;
        let handle = handle.map_err(Error::into_internal_error)?;
        self.attach(handle, None, cx);
        Ok(NewSessionResponse::new(SessionId::new(id)))
    }

    /// Replays the log as updates, then attaches: the live updates follow without a gap.
    async fn load_session(
        &self,
        req: LoadSessionRequest,
        cx: ConnectionTo<Client>,
    ) -> Result<LoadSessionResponse, Error> {
        let id = req.session_id.0.to_string();
        mcp::attach(&self.sessions, &id, &req.cwd, req.mcp_servers).await?;
        let handle = match self.sessions.open(&id).await {
            Ok(handle) => handle,
            Err(RegistryError::NotFound(_)) => {
                return Err(agent_client_protocol::v1::schema::Error::session_not_found(
                    req.session_id,
                )
                .into());
            }
            Err(error) => return Err(Error::into_internal_error(error)),
        };
        let (events, _) = self
            .sessions
            .events(&id, None, usize::MAX >> 1)
            .await
            .map_err(Error::into_internal_error)?;
        let mut last = None;
        for json in &events {
            let Ok(Some(event)) = Event::parse(json) else { continue };
            last = Some(event.seq);
            for update in replayed(&event.data) {
                cx.send_notification(SessionNotification::new(req.session_id.clone(), update))?;
            }
        }
        // A call that waited across a restart is asked about again.
        let asker =
            Asker { cx: cx.clone(), sessions: self.sessions.clone(), session_id: req.session_id };
        if let Ok(durable) = airlock_core::fold_log(&events) {
            asker.ask_waiting(&durable);
        }
        self.attach(handle, last, cx);
        Ok(LoadSessionResponse::new())
    }

    /// Sends the session's events after `after` as updates, from now on.
    fn attach(&self, handle: SessionHandle, after: Option<u64>, cx: ConnectionTo<Client>) {
        let (sent_tx, sent) = watch::channel(after);
        let follower = self.sessions.follow(&handle, after);
        let session_id = SessionId::new(handle.id().to_owned());
        let asker = Asker { cx, sessions: self.sessions.clone(), session_id };
        let forwarder = tokio::spawn(forward(follower, asker, sent_tx));
        let attached = Attached { handle, sent, forwarder, prompt: None };
        let old = self.attached.lock().expect("sessions lock").insert(attached.id(), attached);
        if let Some(old) = old {
            old.forwarder.abort();
        }
    }

    /// Admits the prompt and answers it in a task of its own: the connection keeps reading
    /// (`session/cancel` must get through).
    fn prompt(
        self: &Arc<Self>,
        req: PromptRequest,
        responder: Responder<PromptResponse>,
    ) -> Result<(), Error> {
        let id = req.session_id.0.to_string();
        let content = match blocks(req.prompt) {
            Ok(content) => content,
            Err(error) => return responder.respond_with_error(error),
        };
        let (handle, sent, in_flight) = {
            let mut sessions = self.attached.lock().expect("sessions lock");
            let Some(attached) = sessions.get_mut(&id) else {
                let error =
                    agent_client_protocol::v1::schema::Error::session_not_found(req.session_id);
                return responder.respond_with_error(error.into());
            };
            if attached.prompt.is_some() {
                return responder.respond_with_error(Error::new(
                    -32600,
                    "a prompt is already in flight for this session; wait for its stop reason \
                     or send session/cancel first",
                ));
            }
            let in_flight = Arc::new(InFlight::default());
            attached.prompt = Some(in_flight.clone());
            (attached.handle.clone(), attached.sent.clone(), in_flight)
        };
        let bridge = self.clone();
        tokio::spawn(async move {
            let result = bridge.answer(&handle, content, sent, &in_flight).await;
            if let Some(attached) = bridge.attached.lock().expect("sessions lock").get_mut(&id) {
                attached.prompt = None;
            }
            let _ = responder.respond_with_result(result); // the client may be gone
        });
        Ok(())
    }

    /// Owns the prompt's interval: admission through whole-agent idle, every update sent.
    async fn answer(
        &self,
        handle: &SessionHandle,
        content: Vec<ContentBlock>,
        mut sent: watch::Receiver<Option<u64>>,
        in_flight: &InFlight,
    ) -> Result<PromptResponse, Error> {
        let message = Message::user(fresh_id(), content);
        let message_id = message.id.clone();
        let (mut run, _) = self
            .sessions
            .run(handle, message, Delivery::Followup, None)
            .await
            .map_err(Error::into_internal_error)?;
        let last_seq = run.last_seq().await.map_err(Error::into_internal_error)?;
        // Ordered delivery: every update of the interval goes out before the answer.
        sent.wait_for(|sent| sent.is_some_and(|s| s >= last_seq))
            .await
            .map_err(|_| Error::internal_error().data(json!("the session's updates stopped")))?;
        if in_flight.cancelled.load(Ordering::SeqCst) {
            return Ok(PromptResponse::new(StopReason::Cancelled));
        }
        // Only the interval is read: its turn ends in it.
        let count = (last_seq + 1).saturating_sub(run.first_seq) as usize;
        let (interval, _) = self
            .sessions
            .events(handle.id(), run.first_seq.checked_sub(1), count)
            .await
            .map_err(Error::into_internal_error)?;
        let last_end = interval.iter().rev().find_map(|json| match Event::parse(json) {
            Ok(Some(Event { data: EventData::TurnEnd(end), .. })) => Some(end.reason),
            _ => None,
        });
        if last_end == Some(TurnEndReason::Paused) {
            // Paused at the budget: the prompt waits in the queue (the updates said why).
            return Ok(PromptResponse::new(StopReason::MaxTurnRequests));
        }
        let receipt = self.sessions.receipt(handle.id(), &message_id).await;
        let Some(turn) = receipt.map_err(Error::into_internal_error)?.and_then(|r| r.turn) else {
            // Never claimed into a turn (removed, or parked behind a failed turn).
            return Ok(PromptResponse::new(StopReason::Cancelled));
        };
        let ended = interval.iter().find_map(|json| match Event::parse(json) {
            Ok(Some(Event { data: EventData::TurnEnd(end), .. })) if end.turn == turn => {
                Some(end.reason)
            }
            _ => None,
        });
        stop_reason(ended)
    }

    /// `session/cancel`: cancels the running turn and clears the queue; the prompt in flight
    /// answers `cancelled` at idle.
    fn cancel(&self, session_id: &SessionId) {
        let sessions = self.attached.lock().expect("sessions lock");
        let Some(attached) = sessions.get(session_id.0.as_ref()) else { return };
        let Some(in_flight) = &attached.prompt else { return };
        in_flight.cancelled.store(true, Ordering::SeqCst);
        let (sessions, session_id) = (self.sessions.clone(), attached.id());
        tokio::spawn(async move {
            if let Err(error) = sessions.cancel(&session_id, false).await {
                tracing::error!(session_id, %error, "cancel failed");
            }
        });
    }
}

impl Attached {
    fn id(&self) -> String {
        self.handle.id().to_owned()
    }
}

/// The stop reason of the turn that claimed the prompt.
fn stop_reason(ended: Option<TurnEndReason>) -> Result<PromptResponse, Error> {
    let stop = match ended {
        Some(TurnEndReason::MaxTokens) => StopReason::MaxTokens,
        Some(TurnEndReason::Error { error }) => {
            let message = format!("{}: {}", error.code, error.message);
            return Err(Error::new(-32603, message).data(json!(error)));
        }
        Some(TurnEndReason::Aborted { reason }) if reason.kind == CancelCause::Disposed => {
            StopReason::Cancelled
        }
        _ => StopReason::EndTurn,
    };
    Ok(PromptResponse::new(stop))
}

/// Sends each committed event's updates, and how far it got; asks the client about each call
/// that waits for approval.
async fn forward(mut follower: Follower, asker: Asker, sent: watch::Sender<Option<u64>>) {
    let mut calls = Calls::default();
    while let Some(update) = follower.next_retrying().await {
        let Update::Event(committed) = update else { continue };
        if let Ok(Some(event)) = Event::parse(&committed.json) {
            for update in updates_of(&event.data) {
                let note = SessionNotification::new(asker.session_id.clone(), update);
                if asker.cx.send_notification(note).is_err() {
                    return; // the client is gone
                }
            }
            calls.follow(&event.data, &asker);
        }
        sent.send_replace(Some(committed.seq));
    }
}

/// A prompt's content as Airlock content blocks.
fn blocks(prompt: Vec<AcpBlock>) -> Result<Vec<ContentBlock>, Error> {
    let mut out = Vec::with_capacity(prompt.len());
    for block in prompt {
        out.push(match block {
            AcpBlock::Text(text) => ContentBlock::Text { text: text.text },
            AcpBlock::Image(image) => {
                ContentBlock::Image { media_type: image.mime_type, data: image.data }
            }
            AcpBlock::ResourceLink(link) => {
                ContentBlock::Text { text: format!("[{}]({})", link.name, link.uri) }
            }
            AcpBlock::Resource(resource) => match resource.resource {
                EmbeddedResourceResource::TextResourceContents(text) => {
                    ContentBlock::Text { text: format!("{}\n{}", text.uri, text.text) }
                }
                _ => return Err(unsupported("a binary embedded resource")),
            },
            AcpBlock::Audio(_) => return Err(unsupported("audio")),
            _ => return Err(unsupported("this content block type")),
        });
    }
    if out.is_empty() {
        return Err(Error::invalid_params().data(json!("the prompt is empty; send some text")));
    }
    Ok(out)
}

fn unsupported(what: &str) -> Error {
    Error::invalid_params().data(json!(format!(
        "{what} is not supported in prompts; send text, images or text resources"
    )))
}
