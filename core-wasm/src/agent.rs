//! [`Agent`]: one session's core, its inputs and the inbox operations.

use crate::config::{Config, StepPolicy};
use crate::durable::Durable;
use crate::event::{Event, EventData, RawJson, Splice, TurnEnd};
use crate::inbox::Delivery;
use crate::io::{HostEvent, Input, Output, RefusalCode, Status, StepDecision, WaitingCall};
use crate::turn::{Stop, Turn};
use crate::wire::{AbortReason, CancelCause, Message, Target, TurnEndReason};

/// One session's agent core: a deterministic, sans-IO state machine.
///
/// It owns the session's durable state (folded from the events it writes) and the phase of the
/// running turn. It never reads a clock, draws randomness or touches the outside world: time and
/// ids come in with the inputs, and everything it wants done comes out as [`Output`]s.
///
/// # The drive loop
///
/// 1. Create the agent with [`Agent::new`] for a fresh session, or [`Agent::restore`] from its log
///    after a restart; a restored agent is then given [`Input::Recover`], which closes a turn the
///    crash left open and runs the followups that were accepted but never ran.
/// 2. Feed each input with [`Agent::handle`]`(input, now)`, one at a time, in the order they
///    happened: sends and cancels from clients, and the answers to earlier outputs (policy
///    decisions, model chunks, tool results, timer expiries), keyed by the id the output carried.
/// 3. Perform the returned outputs **in order**: append each event to the log (its `seq` is the
///    one the log must expect) with the facts the [`Appended`](crate::Appended) carries beside it (receipt marks,
///    whether the session rests after it), publish status changes after the events before them, ask the
///    pre-step policy, start model requests and tool calls, abort requests, start retry timers.
///    An input is acknowledged to its sender only once the events it produced are durable.
/// 4. Answer outputs later with inputs (step 2). An answer to something the agent no longer waits
///    for (an aborted request, a superseded decision) is ignored, so the host need not race.
/// 5. When the last output of a call was `Status(Idle)`, nothing is owed: the agent waits for the
///    next send.
/// 6. A host may drop an agent between inputs and bring it back: an idle one from
///    [`Agent::snapshot`] ([`Agent::restore_from`]); one whose turn waits only for people from
///    that and [`Agent::waiting_state`] ([`Agent::wake_from`]), keeping its timers running. The
///    agent brought back is the one dropped.
///
/// Getters: [`Agent::status`], [`Agent::durable`], [`Agent::snapshot`], [`Agent::waiting_state`].
pub struct Agent {
    pub(crate) config: Config,
    pub(crate) durable: Durable,
    pub(crate) phase: Phase,
    /// The next model request, decision or timer id.
    pub(crate) next_id: u64,
    /// A waking send arrived while a cancelled turn drained.
    pub(crate) latched: bool,
    /// A resume arrived while a compaction at idle ran: the turn it starts once that settles owes
    /// the model the paused turn's tool results (`pause.rs`).
    pub(crate) owed: bool,
    /// The next request logs `request/header {reason: "resume"}`.
    pub(crate) resumed: bool,
    pub(crate) now: u64,
    pub(crate) out: Vec<Output>,
    /// The waiting calls last reported ([`Output::Waiting`]).
    pub(crate) waiting: Vec<WaitingCall>,
}

/// Whole-agent phase.
#[expect(
    clippy::large_enum_variant,
    reason = "one per agent, never in a collection: a box would only add an allocation a turn"
)]
pub(crate) enum Phase {
    Idle,
    Running(Turn),
}

impl Agent {
    /// A fresh session.
    pub fn new(config: Config, now: u64) -> Self {
        let durable = Durable { last_time: now, ..Durable::default() };
        Agent {
            config,
            durable,
            phase: Phase::Idle,
            next_id: 1,
            latched: false,
            owed: false,
            resumed: false,
            now,
            out: Vec::new(),
            waiting: Vec::new(),
        }
    }

    /// Whole-agent status.
    pub fn status(&self) -> Status {
        match &self.phase {
            Phase::Running(turn) if !turn.maintenance => Status::Running,
            Phase::Idle | Phase::Running(_) => Status::Idle,
        }
    }

    /// What the log says.
    pub fn durable(&self) -> &Durable {
        &self.durable
    }

    /// The durable state as JSON: equal for a live agent and one restored from its log.
    pub fn snapshot(&self) -> String {
        serde_json::to_string(&self.durable).expect("durable state serializes")
    }

    /// Performs one input and returns what the host must do, in order.
    pub fn handle(&mut self, input: Input, now: u64) -> Vec<Output> {
        self.now = now;
        // Only a restored agent is idle with a turn open in its log.
        let restored_open = matches!(self.phase, Phase::Idle) && self.durable.open_turn.is_some();
        if restored_open && !matches!(input, Input::Recover) {
            self.close_open_turn();
        }
        match input {
            Input::Send { message, target, wakeup } => self.send(message, target, wakeup),
            Input::Cancel { cause, keep_inbox } => self.cancel(cause, keep_inbox),
            Input::Remove(id) => match self.durable.inbox.remove(&id) {
                Some(splice) => self.splice(splice),
                None => self.refuse_unknown(&id),
            },
            Input::Clear => self.clear(),
            Input::Replace(message) => self.replace(message),
            Input::Promote(id) => self.promote(&id),
            Input::Decided { decision_id, decision } => self.on_decided(decision_id, decision),
            Input::ModelChunk { request_id, chunk } => self.on_chunk(request_id, chunk),
            Input::ModelDone(request_id) => self.on_done(request_id),
            Input::ModelFailed { request_id, error } => self.on_failed(request_id, error),
            Input::ToolFinished(outcome) => self.on_tool(outcome),
            Input::Answer { call_id, answer } => self.on_answer(&call_id, answer),
            Input::TimerFired(timer_id) => self.on_timer(timer_id),
            Input::Recover => self.recover(),
            Input::Compact => self.compact_at_idle(),
            Input::Log(event) => self.log(event),
            Input::Resume(data) => self.resume(data),
        }
        if self.config.step_policy == StepPolicy::EnterAll {
            self.enter_all_claimed();
        }
        std::mem::take(&mut self.out)
    }

    /// Answers every [`Output::DecideStep`] of this input with everything it claimed, in order,
    /// as a host would right after the input: what each answer outputs follows the rest.
    fn enter_all_claimed(&mut self) {
        let asks = |output: &Output| matches!(output, Output::DecideStep { .. });
        while let Some(at) = self.out.iter().position(asks) {
            let Output::DecideStep { decision_id, claimed, .. } = self.out.remove(at) else {
                unreachable!("found by position")
            };
            let ids = claimed.into_iter().map(|message| message.id).collect();
            self.on_decided(decision_id, StepDecision::Enter(ids));
        }
    }

    /// Logs an event: the durable state folds it, the host is told to append it. Returns its seq.
    pub(crate) fn emit(&mut self, data: EventData, source_event_seqs: Option<Vec<u64>>) -> u64 {
        let event = Event { seq: self.durable.next_seq, time: self.now, data, source_event_seqs };
        let appended = self.durable.append(&event);
        self.out.push(Output::AppendEvent(appended));
        event.seq
    }

    /// The id of a message the core makes, committed by the next event.
    pub(crate) fn derived_id(&self) -> String {
        format!("{}:{}", self.config.session_id, self.durable.next_seq)
    }

    pub(crate) fn fresh_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    pub(crate) fn splice(&mut self, splice: Splice) {
        self.emit(EventData::InboxSpliced(splice), None);
    }

    pub(crate) fn refuse(&mut self, code: RefusalCode, message: String) {
        self.out.push(Output::Refused { code, message });
    }

    fn refuse_unknown(&mut self, id: &str) {
        self.refuse(
            RefusalCode::UnknownMessage,
            format!(
                "no pending message has id {id:?}; it may have been claimed or removed already"
            ),
        );
    }

    fn log(&mut self, event: HostEvent) {
        let (data, wrap): (_, fn(RawJson) -> EventData) = match event {
            HostEvent::GoalChange(data) => (data, EventData::GoalChange),
            HostEvent::SubagentDescriptor(data) => (data, EventData::SubagentDescriptor),
        };
        match RawJson::object(data) {
            Ok(data) => {
                self.emit(wrap(data), None);
            }
            Err(message) => self.refuse(RefusalCode::BadInput, message),
        }
    }

    fn send(&mut self, mut message: Message, target: Target, wakeup: bool) {
        if self.durable.inbox.contains(&message.id) {
            let text = format!(
                "message id {:?} is already pending; use a fresh id per message",
                message.id
            );
            return self.refuse(RefusalCode::DuplicateMessageId, text);
        }
        Delivery::of(target, wakeup).stamp(&mut message);
        let splice = self.durable.inbox.insert(target, message);
        self.splice(splice);
        if wakeup {
            self.wake();
        }
    }

    fn replace(&mut self, mut message: Message) {
        let Some(pending) = self.durable.inbox.get(&message.id) else {
            return self.refuse_unknown(&message.id.clone());
        };
        Delivery::stamped(pending).stamp(&mut message);
        let splice = self.durable.inbox.replace(message).expect("found above");
        self.splice(splice);
    }

    fn promote(&mut self, id: &str) {
        match self.durable.inbox.find(id) {
            Some((Target::NextTurn, _)) => {}
            Some((Target::NextStep, _)) => {
                return self.refuse(RefusalCode::NotQueued, format!("message {id:?} is already steering or context; only a queued followup can be promoted"));
            }
            None => return self.refuse_unknown(id),
        }
        let mut message = self.durable.inbox.get(id).expect("found above").clone();
        let removal = self.durable.inbox.remove(id).expect("found above");
        self.splice(removal);
        Delivery::Steer.stamp(&mut message);
        let insertion = self.durable.inbox.insert(Target::NextStep, message);
        self.splice(insertion);
        self.wake();
    }

    /// A waking input: an idle agent starts a turn now (unless it is paused: the work waits for
    /// the resume); a cancelled turn that is still draining, or a compaction at idle, latches it;
    /// a running turn picks the work up at its next boundary.
    fn wake(&mut self) {
        match &self.phase {
            Phase::Idle if self.durable.paused => {}
            Phase::Idle => {
                self.out.push(Output::Status(Status::Running));
                self.start_turn();
            }
            Phase::Running(turn) if turn.maintenance => self.latched = true,
            Phase::Running(turn) => {
                if turn
                    .stop
                    .as_ref()
                    .is_some_and(|stop| *stop != Stop::Cancel(CancelCause::Disposed))
                {
                    self.latched = true;
                }
            }
        }
    }

    fn clear(&mut self) {
        for splice in self.durable.inbox.clear() {
            self.splice(splice);
        }
    }

    fn cancel(&mut self, cause: CancelCause, keep_inbox: bool) {
        let Phase::Running(turn) = &mut self.phase else {
            return; // Cancelling an idle agent does nothing and arms nothing.
        };
        let first = turn.stop.is_none();
        turn.stop.get_or_insert(Stop::Cancel(cause));
        if turn.maintenance {
            // Cancelling a compaction at idle runs nothing it held back.
            (self.latched, self.owed) = (false, false);
        }
        if !keep_inbox {
            self.clear();
        }
        if first {
            self.abort_turn();
        }
    }

    /// Called when a turn has ended: drain on, or go idle.
    pub(crate) fn after_turn(&mut self, reason: &TurnEndReason) {
        let drain = reason.continues_drain() || std::mem::take(&mut self.latched);
        if drain && self.has_runnable_work() {
            self.start_turn();
        } else {
            self.phase = Phase::Idle;
            self.out.push(Output::Status(Status::Idle));
        }
    }

    /// Whether pending input would start a turn now: waking work, and the session not paused.
    pub(crate) fn has_runnable_work(&self) -> bool {
        !self.durable.paused && self.durable.inbox.has_waking_work()
    }

    pub(crate) fn end_turn(&mut self, number: u32, reason: TurnEndReason) {
        self.phase = Phase::Idle;
        self.emit(EventData::TurnEnd(TurnEnd { turn: number, reason: reason.clone() }), None);
        self.after_turn(&reason);
    }

    pub(crate) fn aborted(cause: CancelCause) -> TurnEndReason {
        TurnEndReason::Aborted { reason: AbortReason { kind: cause } }
    }
}
