//! What the session keeps of each committed event, besides announcing it: the inbox (for queue
//! snapshots without entering the core), the parent a `subagent/descriptor` names, the goal's
//! view, the turn's cancel channel, and the turn metric.

use airlock_core::{Event, EventData, SpliceOutcome};
use tokio::sync::watch;

use super::{Session, child};

/// Only these event types matter here; a substring test spares the parse of every chunk (a false
/// positive is just parsed and ignored).
const RELEVANT: [&str; 5] =
    ["agent/inbox/spliced", "turn/", "user/message", "goal/change", "subagent/descriptor"];

impl Session {
    /// Folds one committed event (JSON envelope); answers whether it spliced the inbox.
    pub(super) fn observe(&mut self, json: &str) -> bool {
        if !RELEVANT.iter().any(|kind| json.contains(kind)) {
            return false;
        }
        let Ok(Some(event)) = Event::parse(json) else { return false };
        let mut spliced = false;
        match &event.data {
            EventData::InboxSpliced(splice) => {
                if splice.outcome == Some(SpliceOutcome::Canceled) {
                    let removed = self.inbox.removed_by(splice);
                    self.goal.removed(&removed, &splice.inserted);
                }
                self.inbox.apply(splice);
                spliced = true;
            }
            EventData::SubagentDescriptor(_) => {
                self.parent = child::parent_in(&event).or(self.parent.take());
            }
            EventData::TurnEnd(_) => {
                crate::metrics::global().turns.inc();
            }
            EventData::TurnStart(_) => {
                self.cancelled = watch::channel(None).0; // nothing cancelled yet
            }
            _ => {}
        }
        self.goal.observe(&event);
        spliced
    }
}
