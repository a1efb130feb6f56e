//! Following a session: every committed event after a cursor exactly once and in seq order,
//! read from the log first and then live, with the status and queue notices as they come.
//!
//! The SSE stream, owned runs, `airlock stdio`, `airlock acp` and the CLI's progress all read a
//! session through a [`Follower`]. It subscribes when made, so nothing committed after that is
//! missed; a subscriber that falls behind the live notices re-reads the log from its cursor.

use std::collections::VecDeque;
use std::sync::Arc;

use airlock_core::Status;
use tokio::sync::broadcast::{
    self,
    error::{RecvError, TryRecvError},
};

use crate::actor::SessionHandle;
use crate::session::{Notice, QueueItem, seq_of};
use crate::store::{Store, StoreError};

/// Events per read when catching up from the log.
const PAGE: usize = 500;

/// One thing a follower saw.
#[derive(Clone, Debug)]
pub enum Update {
    /// A committed event.
    Event {
        /// Its seq.
        seq: u64,
        /// Its JSON envelope.
        json: Arc<str>,
    },
    /// Whole-agent status changed.
    Status(Status),
    /// The inbox after a splice, `next-step` first.
    Queue(Arc<Vec<QueueItem>>),
    /// `subagent.started` / `subagent.finished` and its JSON data.
    Subagent(&'static str, Arc<str>),
}

/// Reads one session's events after a cursor, then live.
pub struct Follower {
    store: Store,
    session_id: String,
    handle: Option<SessionHandle>,
    notices: Option<broadcast::Receiver<Notice>>,
    /// The seq of the last event yielded (`None`: none yet, start at 0).
    after: Option<u64>,
    backlog: VecDeque<String>,
    /// Notices taken while catching up, not yet handled.
    pending: VecDeque<Notice>,
    catching_up: bool,
    /// After a lag: the status to report once caught up.
    resync_status: bool,
    /// Status and queue notices are held back until the live notices reach this seq, so an
    /// owner's stream shows none from before its interval.
    quiet_before: u64,
}

impl Follower {
    /// Follows the session from the event after `after`. `handle` is the live session, if any;
    /// without one only the log is read.
    pub fn new(
        store: Store,
        session_id: &str,
        handle: Option<SessionHandle>,
        after: Option<u64>,
    ) -> Follower {
        let notices = handle.as_ref().map(SessionHandle::subscribe);
        Follower {
            store,
            session_id: session_id.to_owned(),
            handle,
            notices,
            after,
            backlog: VecDeque::new(),
            pending: VecDeque::new(),
            catching_up: true,
            resync_status: false,
            quiet_before: 0,
        }
    }

    /// Follows a live session from `first_seq` (an owned interval's first event): subscribed
    /// before the input is fed, started once its first event is known.
    pub fn starting_at(mut self, first_seq: u64) -> Follower {
        self.after = first_seq.checked_sub(1);
        self.quiet_before = first_seq;
        self
    }

    /// The seq of the last event yielded.
    pub fn cursor(&self) -> Option<u64> {
        self.after
    }

    /// [`Follower::next`] for a reader that must not stop: a failed log read (e.g. a busy
    /// database) is reported on stderr and retried from the same cursor.
    pub async fn next_retrying(&mut self) -> Option<Update> {
        loop {
            match self.next().await {
                Ok(update) => return update,
                Err(error) => {
                    eprintln!("airlock: session {}: {error}; retrying", self.session_id);
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            }
        }
    }

    /// The next update; `None` once the session's actor is gone (or, without one, at the end of
    /// the log).
    pub async fn next(&mut self) -> Result<Option<Update>, StoreError> {
        loop {
            if let Some(json) = self.backlog.pop_front() {
                let seq = seq_of(&json)?;
                self.after = Some(seq);
                return Ok(Some(Update::Event { seq, json: Arc::from(json) }));
            }
            if self.catching_up {
                self.catch_up().await?;
                continue;
            }
            if std::mem::take(&mut self.resync_status)
                && let Some(handle) = &self.handle
            {
                return Ok(Some(Update::Status(handle.view().status)));
            }
            let notice = match self.pending.pop_front() {
                Some(notice) => notice,
                None => {
                    let Some(notices) = self.notices.as_mut() else { return Ok(None) };
                    match notices.recv().await {
                        Ok(notice) => notice,
                        Err(RecvError::Lagged(_)) => {
                            self.lagged();
                            continue;
                        }
                        Err(RecvError::Closed) => return Ok(None),
                    }
                }
            };
            match notice {
                Notice::Event(json) => {
                    let seq = seq_of(&json)?;
                    if seq >= self.quiet_before {
                        self.quiet_before = 0;
                    }
                    match self.after {
                        Some(after) if seq <= after => {}
                        _ if self.after.map_or(seq == 0, |after| seq == after + 1) => {
                            self.after = Some(seq);
                            return Ok(Some(Update::Event { seq, json }));
                        }
                        // A gap: the notices started after the cursor. The log has the rest.
                        _ => {
                            self.pending.push_front(Notice::Event(json));
                            self.catching_up = true;
                        }
                    }
                }
                _ if self.quiet_before != 0 => {}
                Notice::Status(status) => return Ok(Some(Update::Status(status))),
                Notice::Queue(items) => return Ok(Some(Update::Queue(items))),
                Notice::Subagent(name, data) => return Ok(Some(Update::Subagent(name, data))),
            }
        }
    }

    /// Reads the next page of the log after the cursor, up to the first event the buffered
    /// notices carry: a status change then keeps its place among the events around it.
    async fn catch_up(&mut self) -> Result<(), StoreError> {
        while let Some(notices) = self.notices.as_mut() {
            match notices.try_recv() {
                Ok(notice) => self.pending.push_back(notice),
                Err(TryRecvError::Lagged(_)) => self.lagged(),
                Err(TryRecvError::Empty | TryRecvError::Closed) => break,
            }
        }
        let start = self.after.map_or(0, |after| after + 1);
        let first_live = self.pending.iter().find_map(|notice| match notice {
            Notice::Event(json) => seq_of(json).ok().filter(|&seq| seq >= start),
            _ => None,
        });
        let wanted = first_live.map_or(PAGE, |seq| PAGE.min((seq - start) as usize));
        let page = match wanted {
            0 => Vec::new(),
            wanted => self.store.events(&self.session_id, self.after, wanted).await?,
        };
        self.catching_up = page.len() == PAGE;
        self.backlog.extend(page);
        Ok(())
    }

    /// Fell behind the live notices: the log has every event, the view the status.
    fn lagged(&mut self) {
        self.pending.clear();
        (self.catching_up, self.resync_status, self.quiet_before) = (true, true, 0);
    }
}
