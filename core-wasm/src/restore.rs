//! Rebuilding a session from its log, and crash repair: both pure functions of the log.

use serde::{Deserialize, Serialize};

use crate::agent::{Agent, Phase};
use crate::config::Config;
use crate::durable::{Durable, OpenTurn, Wait};
use crate::event::{Event, EventData, StepMark, ToolError, ToolResultEvent, TurnEnd};
use crate::io::{Output, WaitKind, WaitingCall};
use crate::tools::{CallState, ToolBatch};
use crate::turn::{Stage, Turn};
use crate::wire::{ContentBlock, Message, Role, Source, TurnEndReason};

/// Folds a recorded log (event envelopes in seq order) into durable state. The log must start at
/// seq 0 and have no gaps; unknown event types marked `ignorable` are skipped.
pub fn fold_log<S: AsRef<str>>(events: &[S]) -> Result<Durable, String> {
    fold_after(Durable::default(), events)
}

/// Folds the events after a snapshot (a [`Durable`] as [`Agent::snapshot`] wrote it) onto it.
/// The events must continue the snapshot's log with no gap.
pub fn fold_snapshot<S: AsRef<str>>(snapshot: &str, events: &[S]) -> Result<Durable, String> {
    let durable = serde_json::from_str(snapshot)
        .map_err(|e| format!("the snapshot does not fit this core ({e}); replay the log"))?;
    fold_after(durable, events)
}

/// Folds `events`, which must continue the log `durable` was folded from, onto it.
pub fn fold_after<S: AsRef<str>>(mut durable: Durable, events: &[S]) -> Result<Durable, String> {
    for json in events {
        let Some(event) = Event::parse(json.as_ref()).map_err(|e| e.to_string())? else {
            durable.next_seq += 1;
            continue;
        };
        if event.seq != durable.next_seq {
            return Err(format!(
                "the log is not contiguous: expected seq {} but found {}; the log is damaged",
                durable.next_seq, event.seq
            ));
        }
        durable.fold(&event);
    }
    Ok(durable)
}

/// What an agent holds beyond its durable state while its turn waits ([`Agent::waiting_state`]):
/// written from borrows, read back owned.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Beyond<T, W> {
    turn: T,
    next_id: u64,
    latched: bool,
    owed: bool,
    resumed: bool,
    waiting: W,
}

/// What a call that ran when the gateway stopped is answered.
const RAN_UNKNOWN: &str = "the gateway stopped while this call ran; its outcome is unknown";

/// The events that close a turn a crash left open: one error `tool/result` per call without a
/// result (`TOOL_OUTCOME_UNKNOWN` when its `tool/call` was logged and it ran, else
/// `TOOL_NOT_STARTED`), then `step/end` if a step is open, then `turn/end {interrupted}`. Seqs continue from `next_seq`;
/// every closer takes `time`, the last event's time. Core-made message ids derive from
/// `session_id` and the seq, as live ones do.
pub fn repair(open: &OpenTurn, session_id: &str, next_seq: u64, time: u64) -> Vec<Event> {
    let mut closers: Vec<Event> = Vec::new();
    let push = |closers: &mut Vec<Event>, data: EventData| {
        let seq = next_seq + closers.len() as u64;
        closers.push(Event { seq, time, data, source_event_seqs: None });
    };
    if let Some(step) = &open.step {
        for (call_id, name) in &step.calls {
            if step.answered.contains(call_id) {
                continue;
            }
            let approving = step.waiting.get(call_id).is_some_and(|w| w.kind == WaitKind::Approval);
            let (code, text) = if approving {
                ("TOOL_NOT_STARTED", "the gateway stopped while this call waited for approval")
            } else if step.dispatched.contains(call_id) {
                ("TOOL_OUTCOME_UNKNOWN", RAN_UNKNOWN)
            } else {
                ("TOOL_NOT_STARTED", "the gateway stopped before this call started")
            };
            let seq = next_seq + closers.len() as u64;
            let block = ContentBlock::ToolResult {
                tool_call_id: call_id.clone(),
                content: vec![ContentBlock::Text { text: text.into() }],
                is_error: true,
            };
            let message = Message {
                id: format!("{session_id}:{seq}"),
                role: Role::Tool,
                content: vec![block],
                source: Source::of("tool"),
            };
            let error = Some(ToolError { name: name.clone(), code: code.into() });
            push(
                &mut closers,
                EventData::ToolResult(ToolResultEvent {
                    turn: open.turn,
                    step: step.step,
                    message,
                    error,
                }),
            );
        }
        push(&mut closers, EventData::StepEnd(StepMark { turn: open.turn, step: step.step }));
    }
    push(
        &mut closers,
        EventData::TurnEnd(TurnEnd { turn: open.turn, reason: TurnEndReason::Interrupted }),
    );
    closers
}

impl Agent {
    /// The open turn of a restored log as a live one, when its step has calls that wait for an
    /// answer: those wait again (a client's timeout counts from when it started waiting), calls
    /// that ran get `TOOL_OUTCOME_UNKNOWN`, and calls never dispatched run when their turn comes.
    fn waiting_turn(&mut self) -> Option<Turn> {
        let open = self.durable.open_turn.clone()?;
        let step = open.step.filter(|step| !step.waiting.is_empty())?;
        let arguments = |id: &str| {
            self.durable.history.iter().rev().find_map(|message| {
                message.content.iter().find_map(|block| match block {
                    ContentBlock::ToolCall { id: call, arguments, .. } if call == id => {
                        Some(arguments.clone())
                    }
                    _ => None,
                })
            })
        };
        // A call a person approved with other arguments runs with those.
        let calls = step.calls.iter().map(|(id, name)| {
            let edited = step.edited.get(id).cloned();
            (id.clone(), name.clone(), edited.or_else(|| arguments(id)).unwrap_or_default())
        });
        let mut batch = ToolBatch::new(calls.collect());
        for call in &mut batch.calls {
            call.edited = step.edited.contains_key(&call.id);
            call.state = match step.waiting.get(&call.id) {
                _ if step.answered.contains(&call.id) => CallState::Committed,
                Some(Wait { kind: WaitKind::Approval, since }) => {
                    CallState::Approval { since: *since }
                }
                Some(Wait { kind: WaitKind::Client, since }) => {
                    let spec = self.config.tools.iter().find(|t| t.name == call.name);
                    let timeout = spec.and_then(|s| s.client_timeout_ms).unwrap_or_default();
                    let left = (since + timeout).saturating_sub(self.now);
                    let timer = self.fresh_id();
                    self.out.push(Output::StartTimer { timer_id: timer, delay_ms: left });
                    CallState::Client { since: *since, timer }
                }
                None if step.dispatched.contains(&call.id) => CallState::Done {
                    content: vec![ContentBlock::Text { text: RAN_UNKNOWN.into() }],
                    error_code: Some("TOOL_OUTCOME_UNKNOWN".into()),
                },
                None => CallState::Waiting,
            };
        }
        let deadline = self.deadline();
        let mut turn = Turn::new(open.turn, deadline, Stage::Tools(batch));
        turn.step = step.step;
        Some(turn)
    }

    /// Rebuilds a session from its log. The agent is idle; give it [`crate::Input::Recover`] next.
    ///
    /// Without `recover`, an agent restored from a log at rest (no open turn, no waking work) goes
    /// on exactly as the live one would have: the host may drop an idle session from memory and
    /// bring it back later. `recover` (a restart) and crash repair mark the next request `resume`.
    pub fn restore<S: AsRef<str>>(config: Config, events: &[S]) -> Result<Agent, String> {
        Ok(Agent::from_durable(config, fold_log(events)?))
    }

    /// [`Agent::restore`] from a snapshot of the durable state and the events logged after it:
    /// the same agent, without folding the whole log again.
    pub fn restore_from<S: AsRef<str>>(
        config: Config,
        snapshot: &str,
        events: &[S],
    ) -> Result<Agent, String> {
        Ok(Agent::from_durable(config, fold_snapshot(snapshot, events)?))
    }

    /// The running turn and the agent's own counters as JSON, while the turn waits only for
    /// people or clients: some call of its step waits for an approval or a client's result, and
    /// no call runs (so no request, decision or tool call is in flight). `None` at any other
    /// time. With a snapshot of the durable state taken now, [`Agent::wake_from`] brings back
    /// this very agent, so a host may drop a waiting agent as it drops an idle one.
    pub fn waiting_state(&self) -> Option<String> {
        let Phase::Running(turn) = &self.phase else { return None };
        let Stage::Tools(batch) = &turn.stage else { return None };
        let waits = (batch.calls.iter()).any(|call| {
            matches!(call.state, CallState::Approval { .. } | CallState::Client { .. })
        });
        let runs = batch.calls.iter().any(|call| matches!(call.state, CallState::Running));
        if turn.maintenance || runs || !waits {
            return None;
        }
        let beyond = Beyond {
            turn,
            next_id: self.next_id,
            latched: self.latched,
            owed: self.owed,
            resumed: self.resumed,
            waiting: &self.waiting,
        };
        Some(serde_json::to_string(&beyond).expect("a waiting turn serializes"))
    }

    /// [`Agent::restore_from`] for an agent that was dropped while its turn waited: `waiting` is
    /// what [`Agent::waiting_state`] answered when the snapshot was taken. The agent goes on
    /// waiting exactly where it was, timers included (the host keeps those running).
    pub fn wake_from<S: AsRef<str>>(
        config: Config,
        snapshot: &str,
        events: &[S],
        waiting: &str,
    ) -> Result<Agent, String> {
        let beyond: Beyond<Turn, Vec<WaitingCall>> = serde_json::from_str(waiting)
            .map_err(|e| format!("the waiting turn does not fit this core ({e})"))?;
        let mut agent = Agent::restore_from(config, snapshot, events)?;
        if agent.durable.open_turn.as_ref().map(|open| open.turn) != Some(beyond.turn.number) {
            return Err("the waiting turn is not the turn the log has open".into());
        }
        agent.phase = Phase::Running(beyond.turn);
        agent.next_id = beyond.next_id;
        agent.latched = beyond.latched;
        agent.owed = beyond.owed;
        agent.resumed = beyond.resumed;
        agent.waiting = beyond.waiting;
        Ok(agent)
    }

    fn from_durable(config: Config, durable: Durable) -> Agent {
        let mut agent = Agent::new(config, durable.last_time);
        agent.durable = durable;
        agent
    }

    /// Closes a turn the log left open, with the crash-repair closers.
    pub(crate) fn close_open_turn(&mut self) {
        let Some(open) = self.durable.open_turn.clone() else { return };
        self.resumed = true;
        let (next_seq, time) = (self.durable.next_seq, self.durable.last_time);
        for event in repair(&open, &self.config.session_id, next_seq, time) {
            let appended = self.durable.append(&event);
            self.out.push(crate::io::Output::AppendEvent(appended));
        }
    }

    /// After a restart: a turn whose step waits for a person or a client goes on waiting;
    /// any other open turn is closed. Then run the accepted followups that never ran, unless the
    /// session is paused.
    pub(crate) fn recover(&mut self) {
        if !matches!(self.phase, Phase::Idle) {
            return; // a live turn is not a crash
        }
        if let Some(turn) = self.waiting_turn() {
            self.resumed = true;
            self.out.push(crate::io::Output::Status(crate::io::Status::Running));
            return self.run_tools(turn);
        }
        self.close_open_turn();
        self.resumed = true;
        if self.has_runnable_work() {
            self.out.push(crate::io::Output::Status(crate::io::Status::Running));
            self.start_turn();
        }
    }
}
