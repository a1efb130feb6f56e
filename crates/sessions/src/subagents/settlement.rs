//! Settlement of continuable children: when a child with work from its parent goes idle, the
//! parent gets exactly one notice.
//!
//! Whether a notice is owed is read from the two logs, never kept in memory, so it survives any
//! number of restarts:
//! - work from the parent is an insert splice in the child's log whose message source is
//!   `coordinator` (`spawn_agent`'s prompt, a `send_message`) or `subagent` (a notice from the
//!   child's own child, which makes it work on);
//! - a notice is an insert splice in the parent's log whose message source is
//!   `{kind: "subagent", childId, throughSeq}`: it covers the child's log through `throughSeq`.
//!
//! A parent is owed a notice exactly when the child's log has work after the last notice's
//! `throughSeq`; the child settles at its next whole-agent idle with nothing newer, and the
//! notice covers everything from that work to there (a turn a restart interrupted included).
//! Before a notice goes out, the store's durability barrier must answer `true`; otherwise the
//! parent's model is told `DURABILITY_FAILED` instead of a result that may not survive.
//!
//! A watcher per child waits for the settlement; a per-child lock makes a send and a settlement
//! exclusive, so work sent while a notice goes out is after its `throughSeq` and owed again.
//! After a restart [`Settlements::recover`] settles every idle child that is owed at once and
//! watches the busy ones.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use airlock_core::{ContentBlock, Delivery, Event, EventData, Message, Source, Status};
use serde_json::{Value, json};

use super::ChildResult;
use crate::actor::{self, SessionHandle};
use crate::registry::{Registry, RegistryError};
use crate::session::child::{COORDINATOR, SUBAGENT};
use crate::session::{Fed, SessionError};
use airlock_base::clock::fresh_id;
use airlock_providers::tools::{ToolContext, ToolOutput};

/// The settlement state of every continuable child: per child, whether a watcher waits for it.
pub struct Settlements {
    registry: Weak<Registry>,
    watched: Mutex<HashMap<String, Arc<tokio::sync::Mutex<bool>>>>,
}

impl Settlements {
    /// No child watched yet.
    pub fn new(registry: Weak<Registry>) -> Settlements {
        Settlements { registry, watched: Mutex::new(HashMap::new()) }
    }

    /// The lock of one child: held across a send or a settlement; `true` while it is watched.
    fn lock_of(&self, child_id: &str) -> Arc<tokio::sync::Mutex<bool>> {
        let mut watched = self.watched.lock().expect("watched lock");
        watched.entry(child_id.to_owned()).or_default().clone()
    }

    /// Queues `text` in the child as the work of its parent's call `from` (a followup, new work
    /// the child's limits admit) and makes sure its settlement is watched for. Answers the message
    /// id, or the tool error saying why the child did not take it (`LIMIT_EXCEEDED` past a limit).
    pub async fn deliver(
        self: &Arc<Self>,
        from: &ToolContext,
        child: &SessionHandle,
        text: String,
    ) -> Result<String, ToolOutput> {
        let parent_id = from.session_id.as_str();
        let lock = self.lock_of(child.id());
        let mut watched = lock.lock().await;
        let mut message = Message::user(fresh_id(), vec![ContentBlock::Text { text }]);
        message.source = Source::of(COORDINATOR);
        from_call(&mut message.source, from);
        let message_id = message.id.clone();
        let failed = |message: String| ToolOutput::error("SUBAGENT_FAILED", message);
        match child.feed_new(Delivery::Followup.send(message), None).await {
            Ok(actor::Admission::Fed(Fed { refusal: None, .. })) => {}
            Ok(actor::Admission::Fed(Fed { refusal: Some(refusal), .. })) => {
                return Err(match refusal.limit {
                    Some(_) => ToolOutput::limit_exceeded(refusal.message),
                    None => failed(refusal.message),
                });
            }
            Ok(_) => unreachable!("no idempotency key"),
            Err(SessionError::Exceeded(exceeded)) => {
                return Err(ToolOutput::limit_exceeded(exceeded));
            }
            Err(error) => return Err(failed(error.to_string())),
        }
        self.watch_once(&mut watched, parent_id, child);
        Ok(message_id)
    }

    /// Starts the child's watcher unless one runs; `watched` is the child's locked flag.
    fn watch_once(self: &Arc<Self>, watched: &mut bool, parent_id: &str, child: &SessionHandle) {
        if !*watched {
            *watched = true;
            tokio::spawn(self.clone().watch(parent_id.to_owned(), child.clone()));
        }
    }

    /// After the registry recovered its sessions: every continuable child whose parent is owed a
    /// notice is settled now when it is idle, and watched when it runs (its accepted work
    /// resumed). The notices go out before the gateway listens.
    pub async fn recover(self: &Arc<Self>) {
        let Some(registry) = self.registry.upgrade() else { return };
        let children =
            registry.handles().into_iter().filter_map(|h| h.view().parent.map(|p| (h, p)));
        for (child, parent_id) in children {
            let lock = self.lock_of(child.id());
            let mut watched = lock.lock().await;
            let view = child.view();
            if view.status == Status::Running {
                self.watch_once(&mut watched, &parent_id, &child);
                continue;
            }
            let Some(last_seq) = view.next_seq.checked_sub(1) else { continue };
            if let Err(error) = self.settle(&parent_id, &child, last_seq).await {
                tracing::error!(child_id = child.id(), %error, "no settlement notice");
            }
        }
    }

    /// Waits until the child is idle with nothing newer, then settles it.
    async fn watch(self: Arc<Self>, parent_id: String, child: SessionHandle) {
        let lock = self.lock_of(child.id());
        let settled = async {
            loop {
                let last_seq = child.idle().await?;
                let mut watched = lock.lock().await;
                let view = child.view();
                if view.status == Status::Idle && view.next_seq == last_seq + 1 {
                    *watched = false;
                    return self.settle(&parent_id, &child, last_seq).await;
                }
                // More work came in: it settles at a later idle.
            }
        };
        if let Err(error) = settled.await {
            tracing::error!(child_id = child.id(), %error, "no settlement notice");
        }
    }

    /// Sends the parent the notice it is owed for the child's log through `last_seq`, if any.
    /// The child's lock is held; the parent's may be taken (locks go from child to parent).
    async fn settle(
        self: &Arc<Self>,
        parent_id: &str,
        child: &SessionHandle,
        last_seq: u64,
    ) -> Result<(), RegistryError> {
        let Some(registry) = self.registry.upgrade() else { return Ok(()) };
        let store = registry.store();
        let through = notified_through(&store.events_of_type(parent_id, SPLICE).await?, child.id());
        let unsaid = store.events(child.id(), through, usize::MAX >> 1).await?;
        let Some(first) = first_work(&unsaid) else { return Ok(()) };
        let interval: Vec<&String> =
            unsaid.iter().skip(first).take_while(|json| seq_of(json) <= Some(last_seq)).collect();
        let outcome = ChildResult::of(&interval);
        let answer = match store.flush().await {
            Ok(true) => outcome.answer(child.id()),
            Ok(false) => durability_failed(
                child.id(),
                "this store is in memory, so the subagent's result would not survive a restart; \
                 run with --data FILE",
            ),
            Err(error) => durability_failed(child.id(), &error.to_string()),
        };
        // The notice finishes work admitted before: the parent is brought back whatever the
        // gateway holds.
        let parent = match registry.resume_admitted(parent_id).await {
            Ok(parent) => parent,
            Err(RegistryError::Disposed(_)) => return Ok(()), // nobody left to tell
            Err(error) => return Err(error),
        };
        parent.announce(outcome.finished(parent_id, child.id()));
        let notice = notice(child.id(), last_seq, &answer);
        let delivery = notice_delivery(parent.view().status, registry.shutting_down());
        if let actor::Admission::Fed(Fed { refusal: Some(refusal), .. }) =
            parent.feed(delivery.send(notice), None).await?
        {
            // A parent takes its children's notices (see `session/child.rs`); never silently.
            let message = refusal.message;
            tracing::error!(child_id = child.id(), %message, "the parent refused the notice");
            return Ok(());
        }
        // A parent that is itself a continuable child got work its own parent is owed news of.
        if let Some(grandparent) = parent.view().parent {
            let lock = self.lock_of(parent.id());
            let mut watched = lock.lock().await;
            self.watch_once(&mut watched, &grandparent, &parent);
        }
        Ok(())
    }
}

const SPLICE: &str = "agent/inbox/spliced";

/// The child seq the parent's last notice for `child_id` covered, from the parent's splices.
fn notified_through(parent_splices: &[String], child_id: &str) -> Option<u64> {
    parent_splices
        .iter()
        .filter_map(|json| match Event::parse(json) {
            Ok(Some(Event { data: EventData::InboxSpliced(splice), .. })) => Some(splice.inserted),
            _ => None,
        })
        .flatten()
        .filter(|m| {
            m.source.kind == SUBAGENT && m.source.details.get("childId") == Some(&child_id.into())
        })
        .filter_map(|m| m.source.details.get("throughSeq").and_then(Value::as_u64))
        .max()
}

/// The index of the first insert of work from the parent among a child's events.
fn first_work(events: &[String]) -> Option<usize> {
    events.iter().position(|json| match Event::parse(json) {
        Ok(Some(Event { data: EventData::InboxSpliced(splice), .. })) => splice
            .inserted
            .iter()
            .any(|m| m.source.kind == COORDINATOR || m.source.kind == SUBAGENT),
        _ => false,
    })
}

fn seq_of(json: &str) -> Option<u64> {
    crate::session::seq_of(json).ok()
}

/// `{childId, stopReason: "error", error: {code: "DURABILITY_FAILED", message}}`.
fn durability_failed(child_id: &str, why: &str) -> Value {
    let message = format!("the subagent's result could not be made durable: {why}");
    json!({"childId": child_id, "stopReason": "error", "error": {"code": "DURABILITY_FAILED", "message": message}})
}

/// Names in a child's message `source` the parent's call `from` that gave the work:
/// `parentSessionId` and `parentCallId` (a trace puts the child's turn under that call).
pub(crate) fn from_call(source: &mut Source, from: &ToolContext) {
    source.details.insert("parentSessionId".into(), from.session_id.as_str().into());
    if !from.call_id.is_empty() {
        source.details.insert("parentCallId".into(), from.call_id.as_str().into());
    }
}

/// The notice message: the answer for the model, and in its source what it covers.
fn notice(child_id: &str, through_seq: u64, answer: &Value) -> Message {
    let text = format!("Subagent {child_id} settled: {answer}");
    let mut message = Message::user(fresh_id(), vec![ContentBlock::Text { text }]);
    message.source = Source::of(SUBAGENT);
    message.source.details.insert("childId".into(), child_id.into());
    message.source.details.insert("throughSeq".into(), through_seq.into());
    message
}

/// How a settlement notice reaches the parent: it wakes an idle parent, steers a running one,
/// and waits (inject) in a parent whose gateway is stopping.
fn notice_delivery(parent: Status, shutting_down: bool) -> Delivery {
    match (shutting_down, parent) {
        (true, _) => Delivery::Inject,
        (false, Status::Idle) => Delivery::Followup,
        (false, Status::Running) => Delivery::Steer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settlement_notice_follows_up_an_idle_parent_steers_a_running_one_and_waits_in_a_stopping_one()
     {
        assert_eq!(notice_delivery(Status::Idle, false), Delivery::Followup);
        assert_eq!(notice_delivery(Status::Running, false), Delivery::Steer);
        assert_eq!(notice_delivery(Status::Running, true), Delivery::Inject);
        assert_eq!(notice_delivery(Status::Idle, true), Delivery::Inject);
    }

    fn splice(seq: u64, message: &Message) -> String {
        let data = json!({"target": "next-turn", "start": 0, "inserted": [message]});
        json!({"type": SPLICE, "seq": seq, "time": 1, "data": data}).to_string()
    }

    #[test]
    fn the_last_notice_for_a_child_says_how_far_its_parent_was_told() {
        let answer = json!({});
        let parent = [
            splice(0, &notice("c1", 4, &answer)),
            splice(1, &notice("c2", 9, &answer)),
            splice(2, &Message::user(fresh_id(), vec![])),
            splice(3, &notice("c1", 12, &answer)),
        ];
        assert_eq!(notified_through(&parent, "c1"), Some(12));
        assert_eq!(notified_through(&parent, "c2"), Some(9));
        assert_eq!(notified_through(&parent, "c3"), None);
    }

    #[test]
    fn only_the_parents_work_and_grandchild_notices_count_as_owed_work() {
        let mut from_parent = Message::user(fresh_id(), vec![]);
        from_parent.source = Source::of(COORDINATOR);
        let child = [splice(0, &Message::user(fresh_id(), vec![])), splice(1, &from_parent)];
        assert_eq!(first_work(&child), Some(1));
        assert_eq!(first_work(&child[..1]), None, "a person's steering is no work of the parent");
    }
}
