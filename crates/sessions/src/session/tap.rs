//! Every session's committed events for one reader outside the sessions that must never slow them
//! (the trace exporter, `airlock-traces`). A commit hands its events to a bounded channel; a
//! commit that finds it full drops them and counts (`airlock_tap_dropped_total`), and the reader,
//! seeing a seq it did not expect, reads what it missed from the log.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::Committed;

/// The sending side, kept by every session ([`crate::Rules::tap`]).
#[derive(Clone, Debug)]
pub struct Tap(mpsc::Sender<Tapped>);

/// One commit's events of one session, in seq order.
#[derive(Debug)]
pub struct Tapped {
    /// The session.
    pub session_id: Arc<str>,
    /// Its events (never empty).
    pub events: Vec<Arc<Committed>>,
}

impl Tap {
    /// A tap that holds up to `capacity` commits its reader has not taken yet, and its reader.
    pub fn new(capacity: usize) -> (Tap, mpsc::Receiver<Tapped>) {
        let (sender, receiver) = mpsc::channel(capacity);
        (Tap(sender), receiver)
    }

    /// Hands one commit's `events` of `session_id` on, or drops them if the reader is behind.
    pub(super) fn send(&self, session_id: &str, events: Vec<Arc<Committed>>) {
        if events.is_empty() {
            return;
        }
        let tapped = Tapped { session_id: Arc::from(session_id), events };
        if let Err(mpsc::error::TrySendError::Full(tapped)) = self.0.try_send(tapped) {
            airlock_base::metrics::global().tap_dropped.inc_by(tapped.events.len() as u64);
        }
    }
}
