//! The parts of a session that follow its log. After each commit, every committed event is shown
//! once, in seq order, to each part that keeps something of it: the goal's driver, the parent a
//! `subagent/descriptor` names, the current turn's cancel signal and the turn metric; then the
//! inbox mirror (the queue, read without entering the core) applies its splices. Then
//! subscribers are told ([`Session::announce`]).

use airlock_core::{CancelCause, Event, EventData, Inbox, Output, Status, TurnEndReason};
use tokio::sync::watch;

use super::child::Parent;
use super::hooks::{hook_after, hook_reason, run_hook, turn_hooks};
use super::{Committed, Session};
use crate::goal::Driver;
use airlock_core::WaitingCall;
use airlock_store::receipts::Mark;
use airlock_store::{Hook, IdempotencyRecord, Index, Spent, Tokens};

/// The event types some part follows; the others are not parsed at all.
const OBSERVED: [&str; 8] = [
    "agent/inbox/spliced",
    "turn/start",
    "turn/end",
    "llm/retry",
    "context/compaction",
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

/// A session's turns in the metrics (`airlock_turns_total`) and the log: how each ended, its
/// retried model calls and its compactions.
struct TurnLog<'s>(&'s str);

impl Observe for TurnLog<'_> {
    fn observe(&mut self, event: &Event, _: &Inbox) {
        let session_id = self.0;
        match &event.data {
            EventData::TurnEnd(end) => {
                let reason = end.reason.kind();
                airlock_base::metrics::global()
                    .turns
                    .get_or_create(&vec![("reason", reason.into())])
                    .inc();
                match &end.reason {
                    TurnEndReason::Error { error } => tracing::warn!(
                        session_id,
                        turn = end.turn,
                        reason,
                        code = error.code,
                        error = error.message,
                        "turn ended"
                    ),
                    _ => tracing::info!(session_id, turn = end.turn, reason, "turn ended"),
                }
            }
            EventData::LlmRetry(retry) => tracing::warn!(
                session_id,
                turn = retry.turn,
                step = retry.step,
                attempt = retry.attempt,
                code = retry.error.code,
                error = retry.error.message,
                delay_ms = retry.delay_ms,
                "model call failed; retrying"
            ),
            EventData::ContextCompaction(compaction) => tracing::info!(
                session_id, trigger = ?compaction.trigger, through_seq = compaction.through_seq,
                tokens_before = compaction.tokens_before, tokens_after = compaction.tokens_after,
                "conversation compacted"
            ),
            _ => {}
        }
    }
}

/// A committed event, parsed if some part follows it (`None`: no part does, so it is never
/// parsed).
fn followed(json: &str) -> Option<Event> {
    let kind = Event::type_of(json)?;
    OBSERVED.contains(&kind.as_str()).then(|| Event::parse(json).ok().flatten()).flatten()
}

/// Shows one committed event to every part that follows the log (`parts`), then applies its
/// splice to the inbox mirror.
fn observe(parts: [&mut dyn Observe; 4], inbox: &mut Inbox, event: &Event) {
    for part in parts {
        part.observe(event, inbox);
    }
    if let EventData::InboxSpliced(splice) = &event.data {
        inbox.apply(splice);
    }
}

impl Session {
    /// What a commit of `outputs`' events, the first at seq `first`, keeps beside them: the
    /// idempotency record, what the responses among them `spent`, what the core said of each
    /// event (its receipt marks, taken from the outputs, and whether the session rests after it)
    /// as long as the session is idle once they are done, and what webhooks may report of them:
    /// the `hooks` of their turn ends, the agent going idle, and calls starting to wait for a
    /// person (each at the seq of the event before it).
    pub(super) fn index(
        &mut self,
        first: u64,
        outputs: &mut [Output],
        idempotency: Vec<IdempotencyRecord>,
        spent: Vec<Spent>,
        mut hooks: Vec<Hook>,
    ) -> Index {
        let (mut marks, mut at_rest, mut status, mut seq) = (Vec::new(), false, self.status, first);
        let mut last: Option<&str> = None;
        let finish = hooks.iter().rev().find(|h| h.kind == "turn.ended").map(|h| h.data.clone());
        for output in outputs.iter_mut() {
            match output {
                Output::AppendEvent(appended) => {
                    let taken = std::mem::take(&mut appended.marks);
                    marks.extend(taken.into_iter().map(|mark| Mark::new(seq, mark)));
                    at_rest = appended.at_rest;
                    last = Some(&appended.json);
                    seq += 1;
                }
                Output::Status(now) => {
                    if *now == Status::Idle && status == Status::Running {
                        let mut data = serde_json::json!({"status": "idle"});
                        if let Some(reason) = finish.as_deref().and_then(hook_reason) {
                            data["finishReason"] = reason.into();
                        }
                        hooks.push(hook_after("session.idle", seq, last, data));
                        for (message_id, first_seq) in &self.owned {
                            hooks.push(run_hook(message_id, *first_seq, seq, last));
                        }
                    }
                    status = *now;
                }
                Output::Waiting(calls) => {
                    let before = self.waiting.lock().expect("waiting lock");
                    let new = |c: &&WaitingCall| !before.iter().any(|b| b.call_id == c.call_id);
                    if calls.iter().any(|call| new(&call)) {
                        let data = serde_json::json!({"waiting": calls});
                        hooks.push(hook_after("session.requires_action", seq, last, data));
                    }
                }
                _ => {}
            }
        }
        hooks.sort_by_key(|hook| hook.seq); // stable: a turn's end before the idle after it
        Index { idempotency, marks, at_rest: at_rest && status == Status::Idle, spent, hooks }
    }

    /// Follows an event the core just logged (`json`, at `seq`) where the session keeps
    /// something of it before it is committed: the budget's pause, the model the log last named
    /// (a `request/context`), what a response cost, credited to that model (answered), and what
    /// webhooks may report of a turn's end (added to `hooks`).
    pub(super) fn follow(&mut self, seq: u64, json: &str, hooks: &mut Vec<Hook>) -> Option<Spent> {
        // Only the fields read here are deserialized: a step's message is skipped, not built.
        #[derive(serde::Deserialize)]
        struct Fields {
            data: Data,
        }
        #[derive(serde::Deserialize)]
        struct Data {
            provider: Option<String>,
            model: Option<String>,
            usage: Option<airlock_core::Usage>,
        }
        let kind = Event::type_of(json)?;
        match kind.as_str() {
            "request/context" | "assistant/message" | "context/compaction" => {}
            "budget/exhausted" | "budget/resumed" => {
                self.paused = kind == "budget/exhausted";
                return None;
            }
            "turn/end" => {
                hooks.extend(turn_hooks(seq, json));
                return None;
            }
            _ => return None,
        }
        let data = serde_json::from_str::<Fields>(json).ok()?.data;
        if let (Some(provider), Some(model)) = (data.provider, data.model) {
            self.answering = (provider, model);
            return None;
        }
        let (provider, model) = self.answering.clone();
        Some(Spent { seq, provider, model, tokens: Tokens::from(&data.usage?) })
    }

    /// Shows each committed event to the parts that follow the log, then tells subscribers about
    /// events and status changes, in output order; `first` is the first event's seq. The inbox
    /// mirror takes each event's splice and the event is announced under the mirror's lock, so a
    /// subscriber that reads the queue as it subscribes ([`crate::actor::SessionHandle`]) reads it
    /// as of the last event announced: later changes reach it as the events' splices. Each
    /// event's JSON moves into its notice: nothing reads it from the outputs afterwards.
    pub(super) fn announce(&mut self, outputs: &mut [Output], first: u64) {
        let mut next = first;
        let mut tapped = Vec::new();
        for output in outputs {
            match output {
                Output::AppendEvent(appended) => {
                    let event = followed(&appended.json);
                    let committed = Committed::new(next, std::mem::take(&mut appended.json));
                    let mut inbox = self.inbox.lock();
                    if let Some(event) = event {
                        let parts: [&mut dyn Observe; 4] = [
                            &mut self.goal,
                            &mut self.parent,
                            &mut self.cancel,
                            &mut TurnLog(&self.config.session_id),
                        ];
                        observe(parts, &mut inbox, &event);
                        if let EventData::GoalChange(_) = event.data {
                            self.outbox.goal_changed(next, self.goal());
                        }
                    }
                    if self.tap.is_some() {
                        tapped.push(committed.clone());
                    }
                    self.outbox.event(committed);
                    next += 1;
                }
                Output::Status(status) => {
                    self.set_status(*status, next);
                }
                _ => {}
            }
        }
        if let Some(tap) = &self.tap {
            tap.send(&self.config.session_id, tapped);
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
