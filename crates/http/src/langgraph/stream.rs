//! A LangGraph run's stream: the events of its interval, as the stream modes asked for show
//! them, until the interval ends or every call in flight waits for a person (its interrupts).

use airlock_core::{Event, EventData};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::super::events::Tx;
use super::super::interval::{End, LogEnd};
use super::super::{ApiError, AppState, sse};
use super::messages::{Change, Conversation};
use super::wire::{StreamMode, StreamModes};
use super::{interrupts, values};
use airlock_sessions::{Follower, RegistryError, SessionHandle, Slot, Update};

/// The stream modes sent; others asked for (`debug`, `custom`, `events`, `tasks`,
/// `checkpoints`, `messages`) send nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Modes {
    values: bool,
    tuples: bool,
    updates: bool,
}

impl Modes {
    /// `stream_mode`: one mode or a list (`values` when absent); and the modes as a list.
    pub(super) fn parse(asked: Option<StreamModes>) -> (Modes, Vec<StreamMode>) {
        let asked = match asked {
            None => vec![StreamMode::Values],
            Some(StreamModes::One(mode)) => vec![mode],
            Some(StreamModes::Many(modes)) => modes,
        };
        let has = |mode| asked.contains(&mode);
        let modes = Modes {
            values: has(StreamMode::Values),
            tuples: has(StreamMode::MessagesTuple),
            updates: has(StreamMode::Updates),
        };
        (modes, asked)
    }
}

/// One run's stream.
pub(super) struct RunStream {
    pub state: AppState,
    /// The thread's session.
    pub handle: SessionHandle,
    /// The thread before the run's first event.
    pub conversation: Conversation,
    /// The log from the event after the conversation's last.
    pub follower: Follower,
    /// Where the run ends.
    pub end: End,
    /// The seq the run starts at: its id.
    pub first: u64,
    /// What is sent.
    pub modes: Modes,
    /// A call waits for a person as the run starts: once the run has read what the log holds,
    /// it ends with the interrupts of the calls still waiting (new input queues behind them).
    pub waits: bool,
    /// Its place among the tenant's streams, held until it ends.
    pub _slot: Slot,
}

impl RunStream {
    /// Streams the run, the frames of events through `after` left out.
    pub(super) fn start(mut self, after: Option<u64>) -> Response {
        let (tx, rx) = mpsc::channel(64);
        tokio::spawn(async move {
            if let Err(error) = self.stream(after, &tx).await {
                let data = json!({"error": error.code(), "message": error.message()});
                let _ = tx.send(sse::frame("error", None, &data.to_string())).await;
            }
        });
        sse::response(ReceiverStream::new(rx)).into_response()
    }

    async fn stream(&mut self, after: Option<u64>, tx: &Tx) -> Result<(), ApiError> {
        let thread = self.handle.id().to_owned();
        let run_id = self.first.to_string();
        let metadata = json!({"run_id": run_id, "thread_id": thread, "attempt": 1});
        if tx.send(sse::frame("metadata", None, &metadata.to_string())).await.is_err() {
            return Ok(());
        }
        let mut shutdown = self.state.shutdown.clone();
        let (mut next, mut end_at, mut asked) = (self.first, None, self.waits);
        let mut log_end = LogEnd::default();
        let mut failed = false;
        loop {
            if log_end.ended() || end_at.is_some_and(|end: u64| next >= end) {
                break;
            }
            if asked {
                self.handle.settled().await.map_err(RegistryError::Session)?;
                let view = self.handle.view();
                if view.next_seq <= next {
                    asked = false;
                    let waiting = interrupts(&view.waiting());
                    if !waiting.is_empty() {
                        return self.interrupted(waiting, tx).await;
                    }
                }
            }
            let update = tokio::select! {
                _ = shutdown.changed() => return Ok(()),
                _ = tx.closed() => return Ok(()),
                after = self.end.after(), if end_at.is_none() => { end_at = Some(after?); continue }
                update = self.follower.next() => update?,
            };
            let Some(update) = update else { return Ok(()) }; // the session is gone
            let Update::Event(event) = update else { continue };
            next = event.seq + 1;
            let parsed = Event::parse(&event.json).ok().flatten();
            if event.seq >= self.first
                && let Some(parsed) = &parsed
            {
                if log_end.past(&parsed.data) {
                    break;
                }
                if let EventData::ToolApproval(approval) = &parsed.data {
                    asked |= approval.state == airlock_core::ApprovalState::Requested;
                }
            }
            let change = self.conversation.read(&event.json);
            if event.seq < self.first {
                continue;
            }
            if let Some(Change::TurnEnd(_)) = &change {
                failed = self.conversation.failed.is_some();
            }
            let skip = after.is_some_and(|after| event.seq <= after);
            let frames = if skip { Vec::new() } else { self.frames(change, &thread, &run_id) };
            for (name, data) in frames {
                if tx.send(sse::frame(name, Some(event.seq), &data.to_string())).await.is_err() {
                    return Ok(());
                }
            }
        }
        if let (true, Some(error)) = (failed, &self.conversation.failed) {
            let data = json!({"error": error.code, "message": error.message});
            let _ = tx.send(sse::frame("error", None, &data.to_string())).await;
        }
        Ok(())
    }

    /// What one change sends, by the modes asked for.
    fn frames(
        &self,
        change: Option<Change>,
        thread: &str,
        run_id: &str,
    ) -> Vec<(&'static str, Value)> {
        let mut frames = Vec::new();
        match change {
            Some(Change::Message(message)) => {
                if self.modes.updates && message["type"] != "human" {
                    let node = if message["type"] == "tool" { "tools" } else { "agent" };
                    frames.push(("updates", json!({node: {"messages": [message]}})));
                }
                if self.modes.values {
                    frames.push(("values", values(&self.conversation.messages)));
                }
            }
            Some(Change::Delta { id, text }) if self.modes.tuples => {
                let chunk = json!({"type": "AIMessageChunk", "id": id, "content": text,
                    "tool_calls": [], "tool_call_chunks": []});
                let metadata =
                    json!({"langgraph_node": "agent", "thread_id": thread, "run_id": run_id});
                frames.push(("messages", json!([chunk, metadata])));
            }
            _ => {}
        }
        frames
    }

    /// Ends the run at its interrupts: the state with them, and an `updates` event of them.
    async fn interrupted(&self, interrupts: Vec<Value>, tx: &Tx) -> Result<(), ApiError> {
        if self.modes.updates {
            let data = json!({"__interrupt__": interrupts});
            let _ = tx.send(sse::frame("updates", None, &data.to_string())).await;
        }
        if self.modes.values {
            let mut state = values(&self.conversation.messages);
            state["__interrupt__"] = Value::Array(interrupts);
            let _ = tx.send(sse::frame("values", None, &state.to_string())).await;
        }
        Ok(())
    }
}
