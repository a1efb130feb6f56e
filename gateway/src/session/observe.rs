//! The parts of a session that follow its log. After each commit, every committed event is shown
//! once, in seq order, to each part that keeps something of it: the goal's driver, the parent a
//! `subagent/descriptor` names, the current turn's cancel signal and the turn metric; then the
//! inbox mirror (for queue snapshots without entering the core) applies its splices.

use airlock_core::{CancelCause, Event, EventData, Inbox};
use tokio::sync::watch;

use super::Session;
use super::child::Parent;
use crate::goal::Driver;

/// The event types some part follows; the others are not parsed at all.
const OBSERVED: [&str; 6] = [
    "agent/inbox/spliced",
    "turn/start",
    "turn/end",
    "user/message",
    "goal/change",
    "subagent/descriptor",
];

/// A part of a session that folds its committed events.
pub(super) trait Observe {
    /// Folds one event; `inbox` is the inbox as it was before the event.
    fn observe(&mut self, event: &Event, inbox: &Inbox);
}

impl Observe for Driver {
    fn observe(&mut self, event: &Event, inbox: &Inbox) {
        Driver::observe(self, event, inbox);
    }
}

/// Tells the tool calls of the current turn that the session was cancelled, with the first cause:
/// a fresh channel at each `turn/start`, so nothing of an earlier turn's cancel carries over.
pub(super) struct TurnCancel(watch::Sender<Option<CancelCause>>);

impl TurnCancel {
    pub(super) fn new() -> TurnCancel {
        TurnCancel(watch::channel(None).0)
    }

    /// Signals `cause`, unless the turn was cancelled already.
    pub(super) fn cancel(&self, cause: CancelCause) {
        self.0.send_if_modified(|first| {
            first.is_none() && {
                *first = Some(cause);
                true
            }
        });
    }

    /// What a tool call of the current turn watches.
    pub(super) fn subscribe(&self) -> watch::Receiver<Option<CancelCause>> {
        self.0.subscribe()
    }
}

impl Observe for TurnCancel {
    fn observe(&mut self, event: &Event, _: &Inbox) {
        if let EventData::TurnStart(_) = event.data {
            *self = TurnCancel::new(); // nothing cancelled yet
        }
    }
}

/// The `airlock_turns_total` metric.
struct TurnMetric;

impl Observe for TurnMetric {
    fn observe(&mut self, event: &Event, _: &Inbox) {
        if let EventData::TurnEnd(_) = event.data {
            crate::metrics::global().turns.inc();
        }
    }
}

impl Session {
    /// Shows one committed event (JSON envelope) to every part that follows the log; answers
    /// whether it spliced the inbox.
    pub(super) fn observe(&mut self, json: &str) -> bool {
        if !Event::type_of(json).is_some_and(|kind| OBSERVED.contains(&kind.as_str())) {
            return false;
        }
        let Ok(Some(event)) = Event::parse(json) else { return false };
        let parts: [&mut dyn Observe; 4] =
            [&mut self.goal, &mut self.parent, &mut self.cancel, &mut TurnMetric];
        for part in parts {
            part.observe(&event, &self.inbox);
        }
        match &event.data {
            EventData::InboxSpliced(splice) => {
                self.inbox.apply(splice);
                true
            }
            _ => false,
        }
    }
}

impl Observe for Parent {
    fn observe(&mut self, event: &Event, _: &Inbox) {
        if let Some(parent) = Parent::named_in(event) {
            *self = parent;
        }
    }
}
