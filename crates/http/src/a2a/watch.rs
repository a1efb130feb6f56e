//! A task followed in its session's log until it stops, and the stream its updates go to.

use std::future::pending;
use std::sync::Arc;

use axum::body::Bytes;
use serde_json::Value;

use super::super::events::Tx;
use super::super::interval::End;
use super::super::{ApiError, sse};
use super::task::{Read, Task};
use super::wire::{self, Fault};
use airlock_sessions::{Committed, Follower, RegistryError, SessionHandle, Update};

/// The next event a follower yields; a session that went away is an error.
pub(super) async fn next_event(follower: &mut Follower) -> Result<Arc<Committed>, Fault> {
    loop {
        match follower.next().await.map_err(ApiError::from)? {
            Some(Update::Event(event)) => return Ok(event),
            Some(_) => continue,
            None => {
                return Err(ApiError::from(RegistryError::Session(
                    airlock_sessions::SessionError::Gone,
                ))
                .into());
            }
        }
    }
}

/// Where a stream's results go, with the request's id.
pub(super) struct Out {
    /// The stream.
    pub tx: Tx,
    /// The request's id.
    pub id: Value,
}

impl Out {
    /// Sends one result; `false` once the client has gone.
    pub(super) async fn send(&self, result: Value) -> bool {
        self.tx.send(frame(&wire::result(&self.id, result))).await.is_ok()
    }
}

/// A JSON-RPC response as an SSE frame.
pub(super) fn frame(response: &Value) -> Bytes {
    sse::frame("message", None, &response.to_string())
}

/// A task followed in its session's log until it stops.
pub(super) struct Watch {
    handle: SessionHandle,
    follower: Follower,
    /// The task, as read so far.
    pub task: Task,
    end: End,
    /// Turns `true` when the gateway shuts down.
    shutdown: tokio::sync::watch::Receiver<bool>,
    /// The seq of the interval's last event, once the agent went idle.
    last: Option<u64>,
    /// A call was asked about since the calls waiting were last read.
    asked: bool,
}

impl Watch {
    /// `task`, followed by `follower` (at the event after the last one it read), its interval
    /// ending at `end`.
    pub(super) fn new(
        handle: SessionHandle,
        follower: Follower,
        task: Task,
        end: End,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> Watch {
        Watch { handle, follower, task, end, shutdown, last: None, asked: false }
    }

    /// Follows the task until it stops: it ends, or waits for a person. Each change of state is
    /// sent to `out` (a completed task's answer first, as its artifact).
    pub(super) async fn until_stop(&mut self, out: Option<&Out>) -> Result<(), Fault> {
        let mut told = self.task.state();
        loop {
            if self.last.is_some_and(|last| self.task.next > last) {
                self.task.idle();
            }
            if self.asked && !self.task.ended() {
                self.read_waiting().await?;
            }
            let state = self.task.state();
            if state != told {
                if let Some(out) = out {
                    let artifact = self.task.artifact_update();
                    for update in artifact.into_iter().chain([self.task.status_update()]) {
                        if !out.send(update).await {
                            return Ok(());
                        }
                    }
                }
                told = state;
            }
            if state.stops() || self.task.ended() {
                return Ok(());
            }
            let gone = async {
                match out {
                    Some(out) => out.tx.closed().await,
                    None => pending().await,
                }
            };
            tokio::select! {
                _ = gone => return Ok(()),
                _ = self.shutdown.changed() => return Err(ApiError::new(
                    axum::http::StatusCode::SERVICE_UNAVAILABLE,
                    "shutting-down",
                    "the gateway is shutting down; GetTask or SubscribeToTask through another gateway, or this one once it is back, goes on with the task",
                ).into()),
                after = self.end.after(), if self.last.is_none() => {
                    self.last = Some(after?.saturating_sub(1));
                }
                event = next_event(&mut self.follower) => {
                    if self.task.read(&event?.json) == Read::Asks {
                        self.asked = true;
                    }
                }
            }
        }
    }

    /// Reads which calls wait, once the log has nothing after what the task read (a batch being
    /// committed may hold more of the same group).
    async fn read_waiting(&mut self) -> Result<(), Fault> {
        self.handle.settled().await.map_err(RegistryError::Session).map_err(ApiError::from)?;
        let view = self.handle.view();
        if view.next_seq <= self.task.next {
            self.task.waiting(view.waiting());
            self.asked = false;
        }
        Ok(())
    }
}
