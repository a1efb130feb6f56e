//! The two-list inbox. Every change is computed as a [`Splice`] first and then applied by
//! [`Inbox::apply`], the one mutation, so a log folds back into exactly the live lists.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::{Splice, SpliceOutcome};
use crate::wire::{Message, MessageId, Target};

/// What a splice did to one message's receipt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReceiptChange {
    /// Inserted into (or moved to) a list.
    Inserted(Target),
    /// Taken by the running turn.
    Claimed {
        /// The turn.
        turn: u32,
    },
    /// Canceled.
    Canceled,
}

/// One change a splice makes to a message's receipt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceiptMark {
    /// The message.
    pub message_id: MessageId,
    /// What happened to it.
    pub change: ReceiptChange,
}

/// How a pending item was delivered, stamped into its `source.delivery` when it is queued, so the
/// log alone says whether a `next-step` item wakes the agent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Delivery {
    /// `next-turn`, wakes.
    #[default]
    Followup,
    /// `next-step`, wakes.
    Steer,
    /// `next-step`, never wakes.
    Inject,
}

impl Delivery {
    /// The intent of a `send(target, wakeup)`.
    pub fn of(target: Target, wakeup: bool) -> Self {
        match (target, wakeup) {
            (Target::NextTurn, _) => Delivery::Followup,
            (Target::NextStep, true) => Delivery::Steer,
            (Target::NextStep, false) => Delivery::Inject,
        }
    }

    /// The `send` of this intent.
    pub fn send(self, message: Message) -> crate::io::Input {
        let (target, wakeup) = match self {
            Delivery::Followup => (Target::NextTurn, true),
            Delivery::Steer => (Target::NextStep, true),
            Delivery::Inject => (Target::NextStep, false),
        };
        crate::io::Input::Send { message, target, wakeup }
    }

    /// The list a message stamped with its delivery waits in.
    pub fn target_of(message: &Message) -> Target {
        match Delivery::stamped(message) {
            Delivery::Followup => Target::NextTurn,
            Delivery::Steer | Delivery::Inject => Target::NextStep,
        }
    }

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Delivery::Followup => "followup",
            Delivery::Steer => "steer",
            Delivery::Inject => "inject",
        }
    }

    /// Stamps this delivery into the message's source.
    pub fn stamp(self, message: &mut Message) {
        message.source.details.insert("delivery".into(), Value::from(self.name()));
    }

    /// The delivery stamped into a queued message (`inject` when unknown: it never wakes).
    pub fn stamped(message: &Message) -> Self {
        match message.source.details.get("delivery").and_then(Value::as_str) {
            Some("followup") => Delivery::Followup,
            Some("steer") => Delivery::Steer,
            _ => Delivery::Inject,
        }
    }
}

/// Pending input: `next-turn` and `next-step`, ids unique across both.
///
/// Beside the lists it keeps what every send asks of them (is this id pending, does anything
/// pending wake the agent), so a send costs the same with 5 or 5,000 items waiting.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "Lists")]
pub struct Inbox {
    next_turn: Vec<Message>,
    next_step: Vec<Message>,
    /// The list each pending id is in.
    #[serde(skip)]
    ids: BTreeMap<MessageId, Target>,
    /// How many `next-step` items are steers.
    #[serde(skip)]
    steers: usize,
}

/// The lists alone, as a snapshot stores them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Lists {
    next_turn: Vec<Message>,
    next_step: Vec<Message>,
}

impl From<Lists> for Inbox {
    fn from(lists: Lists) -> Inbox {
        let mut inbox = Inbox::default();
        for message in &lists.next_turn {
            inbox.remember(Target::NextTurn, message);
        }
        for message in &lists.next_step {
            inbox.remember(Target::NextStep, message);
        }
        Inbox { next_turn: lists.next_turn, next_step: lists.next_step, ..inbox }
    }
}

impl Inbox {
    fn list(&self, target: Target) -> &Vec<Message> {
        match target {
            Target::NextTurn => &self.next_turn,
            Target::NextStep => &self.next_step,
        }
    }

    fn list_mut(&mut self, target: Target) -> &mut Vec<Message> {
        match target {
            Target::NextTurn => &mut self.next_turn,
            Target::NextStep => &mut self.next_step,
        }
    }

    /// Whether a message with this id is pending.
    pub fn contains(&self, id: &str) -> bool {
        self.ids.contains_key(id)
    }

    /// Where a pending message is.
    pub fn find(&self, id: &str) -> Option<(Target, usize)> {
        let target = *self.ids.get(id)?;
        let index = self.list(target).iter().position(|m| m.id == id)?;
        Some((target, index))
    }

    /// The pending message with this id.
    pub fn get(&self, id: &str) -> Option<&Message> {
        self.find(id).map(|(target, index)| &self.list(target)[index])
    }

    /// Whether anything pending would start a turn: a followup or a steer.
    pub fn has_waking_work(&self) -> bool {
        !self.next_turn.is_empty() || self.steers > 0
    }

    /// Whether steering or context waits for the next step boundary.
    pub fn has_next_step(&self) -> bool {
        !self.next_step.is_empty()
    }

    /// Both lists, `next-step` first.
    pub fn pending(&self) -> impl Iterator<Item = (Target, &Message)> {
        let step = self.next_step.iter().map(|m| (Target::NextStep, m));
        step.chain(self.next_turn.iter().map(|m| (Target::NextTurn, m)))
    }

    /// Appends a message to a list.
    pub fn insert(&self, target: Target, message: Message) -> Splice {
        Splice {
            target,
            start: self.list(target).len() as u32,
            removed_count: None,
            inserted: vec![message],
            outcome: None,
        }
    }

    /// The loop's claim: all of `next-step`, plus the first `next-turn` item when `first_of_turn`.
    /// One pure-deletion splice per non-empty list, `next-step` first.
    pub fn claim(&self, first_of_turn: bool) -> Vec<Splice> {
        let mut splices = Vec::new();
        if !self.next_step.is_empty() {
            splices.push(removal(Target::NextStep, 0, self.next_step.len(), None));
        }
        if first_of_turn && !self.next_turn.is_empty() {
            splices.push(removal(Target::NextTurn, 0, 1, None));
        }
        splices
    }

    /// A caller's clear: one canceled splice per non-empty list, `next-step` first.
    pub fn clear(&self) -> Vec<Splice> {
        [Target::NextStep, Target::NextTurn]
            .into_iter()
            .filter(|&t| !self.list(t).is_empty())
            .map(|t| removal(t, 0, self.list(t).len(), Some(SpliceOutcome::Canceled)))
            .collect()
    }

    /// A caller's removal of one item.
    pub fn remove(&self, id: &str) -> Option<Splice> {
        let (target, index) = self.find(id)?;
        Some(removal(target, index, 1, Some(SpliceOutcome::Canceled)))
    }

    /// An edit: the item with the message's id is replaced in place.
    pub fn replace(&self, message: Message) -> Option<Splice> {
        let (target, index) = self.find(&message.id)?;
        Some(Splice {
            inserted: vec![message],
            ..removal(target, index, 1, Some(SpliceOutcome::Canceled))
        })
    }

    /// The messages a splice would remove.
    pub fn removed_by(&self, splice: &Splice) -> Vec<Message> {
        self.removed(splice).to_vec()
    }

    fn removed(&self, splice: &Splice) -> &[Message] {
        let list = self.list(splice.target);
        let start = (splice.start as usize).min(list.len());
        let end = (start + splice.removed_count.unwrap_or(0) as usize).min(list.len());
        &list[start..end]
    }

    /// What `splice` does to receipts, applied to this inbox while turn `turn` is the last
    /// started: each message it removes is claimed by that turn (or canceled, for a cancel), each
    /// it inserts is inserted into its list (a message moved between lists only that).
    pub fn marks(&self, splice: &Splice, turn: u32) -> Vec<ReceiptMark> {
        let inserted = |id: &str| splice.inserted.iter().any(|m| m.id == id);
        let removal = match splice.outcome {
            Some(SpliceOutcome::Canceled) => ReceiptChange::Canceled,
            None => ReceiptChange::Claimed { turn },
        };
        let mark = |message_id: &str, change| ReceiptMark { message_id: message_id.into(), change };
        let removed = self.removed(splice).iter().filter(|m| !inserted(&m.id));
        let mut marks: Vec<ReceiptMark> = removed.map(|m| mark(&m.id, removal)).collect();
        let target = ReceiptChange::Inserted(splice.target);
        marks.extend(splice.inserted.iter().map(|m| mark(&m.id, target)));
        marks
    }

    /// Applies a splice and returns the removed messages. A splice that does not fit the lists
    /// (a corrupt log) removes what it can.
    pub fn apply(&mut self, splice: &Splice) -> Vec<Message> {
        let list = self.list_mut(splice.target);
        let start = (splice.start as usize).min(list.len());
        let end = (start + splice.removed_count.unwrap_or(0) as usize).min(list.len());
        let removed: Vec<Message> =
            list.splice(start..end, splice.inserted.iter().cloned()).collect();
        for message in &removed {
            self.forget(splice.target, message);
        }
        for message in &splice.inserted {
            self.remember(splice.target, message);
        }
        removed
    }

    fn remember(&mut self, target: Target, message: &Message) {
        self.ids.insert(message.id.clone(), target);
        if target == Target::NextStep && Delivery::stamped(message) == Delivery::Steer {
            self.steers += 1;
        }
    }

    fn forget(&mut self, target: Target, message: &Message) {
        self.ids.remove(&message.id);
        if target == Target::NextStep && Delivery::stamped(message) == Delivery::Steer {
            self.steers -= 1;
        }
    }
}

fn removal(target: Target, start: usize, count: usize, outcome: Option<SpliceOutcome>) -> Splice {
    Splice {
        target,
        start: start as u32,
        removed_count: Some(count as u32),
        inserted: Vec::new(),
        outcome,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(id: &str, delivery: Delivery) -> Message {
        let mut message = Message::user(id.into(), Vec::new());
        delivery.stamp(&mut message);
        message
    }

    #[test]
    fn pending_ids_and_steers_follow_every_splice_and_a_snapshot() {
        let mut inbox = Inbox::default();
        inbox.apply(&inbox.insert(Target::NextStep, sent("context", Delivery::Inject)));
        assert!(inbox.contains("context") && !inbox.has_waking_work());
        inbox.apply(&inbox.insert(Target::NextStep, sent("steer", Delivery::Steer)));
        assert!(inbox.has_waking_work());
        inbox.apply(&inbox.replace(sent("steer", Delivery::Inject)).expect("pending"));
        assert!(inbox.contains("steer") && !inbox.has_waking_work());
        inbox.apply(&inbox.insert(Target::NextStep, sent("again", Delivery::Steer)));

        let read: Inbox = serde_json::from_str(&serde_json::to_string(&inbox).unwrap()).unwrap();
        assert_eq!(read, inbox, "a snapshot's inbox knows its ids and steers again");
        assert!(read.contains("again") && read.has_waking_work());

        for claim in inbox.claim(true) {
            inbox.apply(&claim);
        }
        assert!(!inbox.contains("context") && !inbox.has_waking_work());
        assert_eq!(inbox, Inbox::default());
    }
}
