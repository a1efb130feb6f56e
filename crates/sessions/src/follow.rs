//! Following a session: every committed event after a cursor exactly once and in seq order,
//! read from the log first and then live, with the status and queue notices as they come.
//!
//! The SSE stream, owned runs, `airlock stdio`, `airlock acp` and the CLI's progress all read a
//! session through a [`Follower`]. It subscribes when made, noting which events had been
//! announced by then: those it reads from the log, every later one comes as a notice, in order
//! with the status changes around it. A subscriber that falls behind the live notices re-reads
//! the log from its cursor.

use std::collections::VecDeque;
use std::sync::Arc;

use airlock_core::Status;
use tokio::sync::broadcast::{self, error::RecvError};

use crate::actor::SessionHandle;
use crate::session::{Announced, Committed, Notice, Outbox, QueueSnapshot, seq_of};
use airlock_store::{Store, StoreError};

/// Events per read when catching up from the log.
const PAGE: usize = 500;

/// One thing a follower saw.
#[derive(Clone, Debug)]
pub enum Update {
    /// A committed event.
    Event(Arc<Committed>),
    /// Whole-agent status changed.
    Status(Status),
    /// The queue, `next-step` first, as of the last event yielded before it (once, from
    /// [`Follower::with_queue`]).
    Queue(Arc<QueueSnapshot>),
    /// `subagent.started` / `subagent.finished` and its JSON data.
    Subagent(&'static str, Arc<str>),
}

/// Reads one session's events after a cursor, then live.
pub struct Follower {
    store: Store,
    session_id: String,
    /// The live session's outbox, held so that it outlives an eviction: the session woken later
    /// announces into it.
    outbox: Option<Arc<Outbox>>,
    notices: Option<broadcast::Receiver<Notice>>,
    /// The status when the follower subscribed.
    status_at_start: Option<Status>,
    /// The first event that comes as a notice: the log is read only before it (`None`: all of
    /// it, without a live session or after a lag).
    live_from: Option<u64>,
    /// The seq of the last event yielded (`None`: none yet, start at 0).
    after: Option<u64>,
    backlog: VecDeque<String>,
    catching_up: bool,
    /// After a lag: the status to report once caught up.
    resync_status: bool,
    /// Status notices are held back until the live notices reach this seq, so an owner's
    /// stream shows none from before its interval.
    quiet_before: u64,
    /// The queue as of the last event announced when it subscribed, yielded once the log read
    /// reaches that event ([`Follower::with_queue`]).
    queue: Option<Arc<QueueSnapshot>>,
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
        let outbox = handle.map(|handle| handle.outbox().clone());
        let (notices, announced) = match outbox.as_deref().map(Outbox::subscribe_announced) {
            Some((notices, announced)) => (Some(notices), Some(announced)),
            None => (None, None),
        };
        Follower::of(store, session_id, outbox, notices, announced, after, None)
    }

    /// [`Follower::new`] that also yields the queue, once, where the log read meets the live
    /// notices: as of that event, so the splices of the events after it are every change since.
    /// A session not in memory has nothing pending.
    pub fn with_queue(
        store: Store,
        session_id: &str,
        handle: Option<SessionHandle>,
        after: Option<u64>,
    ) -> Follower {
        let Some(handle) = handle else {
            let empty = Arc::new(QueueSnapshot::new(session_id, Vec::new()));
            return Follower::of(store, session_id, None, None, None, after, Some(empty));
        };
        let (notices, announced, items) = handle.subscribe_with_queue();
        let queue = Some(Arc::new(QueueSnapshot::new(session_id, items)));
        let outbox = Some(handle.outbox().clone());
        Follower::of(store, session_id, outbox, Some(notices), Some(announced), after, queue)
    }

    fn of(
        store: Store,
        session_id: &str,
        outbox: Option<Arc<Outbox>>,
        notices: Option<broadcast::Receiver<Notice>>,
        announced: Option<Announced>,
        after: Option<u64>,
        queue: Option<Arc<QueueSnapshot>>,
    ) -> Follower {
        Follower {
            store,
            session_id: session_id.to_owned(),
            outbox,
            notices,
            status_at_start: announced.map(|a| a.status),
            live_from: announced.map(|a| a.next_seq),
            after,
            backlog: VecDeque::new(),
            catching_up: true,
            resync_status: false,
            quiet_before: 0,
            queue,
        }
    }

    /// Follows a live session from `first_seq` (an owned interval's first event): subscribed
    /// before the input is fed, started once its first event is known.
    pub fn starting_at(mut self, first_seq: u64) -> Follower {
        self.after = first_seq.checked_sub(1);
        self.quiet_before = first_seq;
        self
    }

    /// The status when the follower subscribed (live sessions only): the status notices it
    /// yields are the changes after it.
    pub fn status_at_start(&self) -> Option<Status> {
        self.status_at_start
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
                    tracing::warn!(session_id = %self.session_id, %error, "reading the log failed; retrying");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            }
        }
    }

    /// The next update; `None` once the session is disposed (or, without a live session, at the
    /// end of the log).
    pub async fn next(&mut self) -> Result<Option<Update>, StoreError> {
        loop {
            if let Some(json) = self.backlog.pop_front() {
                let seq = seq_of(&json)?;
                self.after = Some(seq);
                return Ok(Some(Update::Event(Committed::new(seq, json))));
            }
            if self.catching_up {
                // Boxed: a follower waiting for notices (an idle SSE stream) should not carry
                // the space of a log read.
                Box::pin(self.catch_up()).await?;
                continue;
            }
            if let Some(queue) = self.queue.take() {
                return Ok(Some(Update::Queue(queue)));
            }
            if std::mem::take(&mut self.resync_status)
                && let Some(outbox) = &self.outbox
            {
                return Ok(Some(Update::Status(outbox.status())));
            }
            let Some(notices) = self.notices.as_mut() else { return Ok(None) };
            let notice = match notices.recv().await {
                Ok(notice) => notice,
                Err(RecvError::Lagged(_)) => {
                    // Fell behind the live notices: the log has every event, the view the status.
                    self.live_from = None;
                    (self.catching_up, self.resync_status, self.quiet_before) = (true, true, 0);
                    continue;
                }
                Err(RecvError::Closed) => return Ok(None),
            };
            match notice {
                Notice::Event(event) => {
                    let seq = event.seq;
                    if seq >= self.quiet_before {
                        self.quiet_before = 0;
                    }
                    match self.after {
                        Some(after) if seq <= after => {}
                        _ if self.after.map_or(seq == 0, |after| seq == after + 1) => {
                            self.after = Some(seq);
                            return Ok(Some(Update::Event(event)));
                        }
                        // A gap (not while subscribed in time): the log has the rest.
                        _ => (self.catching_up, self.live_from) = (true, None),
                    }
                }
                Notice::Ended => return Ok(None),
                _ if self.quiet_before != 0 => {}
                Notice::Status(status) => return Ok(Some(Update::Status(status))),
                Notice::Subagent(name, data) => return Ok(Some(Update::Subagent(name, data))),
            }
        }
    }

    /// Reads the next page of the log after the cursor, stopping before the first event that
    /// comes as a notice.
    async fn catch_up(&mut self) -> Result<(), StoreError> {
        let start = self.after.map_or(0, |after| after + 1);
        let wanted = self.live_from.map_or(PAGE, |live| live.saturating_sub(start) as usize);
        let page = match wanted.min(PAGE) {
            0 => Vec::new(),
            wanted => self.store.events(&self.session_id, self.after, wanted).await?,
        };
        self.catching_up = page.len() == PAGE;
        self.backlog.extend(page);
        Ok(())
    }
}
