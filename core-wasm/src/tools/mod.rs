//! One step's tool calls: which to dispatch next, which results may be committed, and how the
//! agent runs them.
//!
//! Parallel-safe calls run together (at most [`MAX_PARALLEL`] at once); any other call runs alone.
//! Results are committed in the order the model asked for them, whatever order they finish in.
//!
//! A call may wait instead of running: for a person's approval (`tool/approval requested`), or,
//! for a client tool, for the client's result. A waiting call holds its group as a running one
//! does; the other calls of the group run meanwhile. Its answer comes as [`Input::Answer`].
//!
//! [`Input::Answer`]: crate::Input::Answer

mod answers;

use crate::agent::{Agent, Phase};
use crate::config::ToolSpec;
use crate::event::{
    ApprovalState, EventData, ToolApproval, ToolCallEvent, ToolError, ToolResultEvent,
};
use crate::io::{Output, ToolCall, ToolOutcome, WaitKind, WaitingCall};
use crate::turn::{Stage, StepEnd, Stop, Turn};
use crate::wire::{ContentBlock, Message, Role, Source, Target};

/// The most calls running at once.
pub const MAX_PARALLEL: usize = 10;

/// What a call is doing.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub enum CallState {
    /// Not dispatched yet.
    Waiting,
    /// Logged; waits for a person's approval before it runs.
    Approval {
        /// When it started waiting.
        since: u64,
    },
    /// Handed to the client, which owes a result before the timer fires.
    Client {
        /// When it started waiting.
        since: u64,
        /// The timer of its timeout.
        timer: u64,
    },
    /// Dispatched; the host owes a result.
    Running,
    /// Finished, not yet committed.
    Done {
        /// The result content.
        content: Vec<ContentBlock>,
        /// Set on failure.
        error_code: Option<String>,
    },
    /// Its `tool/result` is logged.
    Committed,
}

/// A tool call of the step.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Call {
    /// The model's call id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// The raw argument text: the model's, or a person's who approved it with others.
    pub arguments: String,
    /// A person approved it with other arguments than the model's: its result says so.
    #[serde(default)]
    pub edited: bool,
    /// Progress.
    pub state: CallState,
}

/// The calls of one step, in model order.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct ToolBatch {
    /// The calls.
    pub calls: Vec<Call>,
    /// Context messages the results carried, spliced in after the batch.
    pub context: Vec<crate::wire::Message>,
}

impl ToolBatch {
    /// A batch of `(id, name, arguments)` calls.
    pub fn new(calls: Vec<(String, String, String)>) -> Self {
        let calls = calls
            .into_iter()
            .map(|(id, name, arguments)| Call {
                id,
                name,
                arguments,
                edited: false,
                state: CallState::Waiting,
            })
            .collect();
        ToolBatch { calls, context: Vec::new() }
    }

    /// Marks the next group as running and returns their indexes: a run of parallel-safe calls
    /// (unknown tools count as such: they never reach the host), or one exclusive call. Nothing
    /// while a call is running or waiting.
    pub fn next_group(&mut self, specs: &[ToolSpec]) -> Vec<usize> {
        if self.calls.iter().any(Call::in_flight) {
            return Vec::new();
        }
        let parallel =
            |name: &str| specs.iter().find(|s| s.name == name).is_none_or(|s| s.parallel_safe);
        let mut group = Vec::new();
        for (index, call) in self.calls.iter().enumerate() {
            if !matches!(call.state, CallState::Waiting) {
                continue;
            }
            let alone = !parallel(&call.name);
            if alone && !group.is_empty() || group.len() == MAX_PARALLEL {
                break;
            }
            group.push(index);
            if alone {
                break;
            }
        }
        for &index in &group {
            self.calls[index].state = CallState::Running;
        }
        group
    }

    /// Records a running call's result; `false` when no running call has that id.
    pub fn finish(
        &mut self,
        id: &str,
        content: Vec<ContentBlock>,
        error_code: Option<String>,
    ) -> bool {
        match self.calls.iter_mut().find(|c| c.id == id && matches!(c.state, CallState::Running)) {
            Some(call) => {
                call.state = CallState::Done { content, error_code };
                true
            }
            None => false,
        }
    }

    /// Answers with an error a call the host never saw (unknown tool, cancelled before dispatch,
    /// denied).
    pub fn answer(&mut self, index: usize, content: Vec<ContentBlock>, code: &str) {
        self.calls[index].state = CallState::Done { content, error_code: Some(code.into()) };
    }

    /// Takes the results that can be committed now (a finished prefix in model order).
    pub fn committable(&mut self) -> Vec<(usize, Vec<ContentBlock>, Option<String>)> {
        let mut ready = Vec::new();
        for (index, call) in self.calls.iter_mut().enumerate() {
            match std::mem::replace(&mut call.state, CallState::Committed) {
                CallState::Committed => {}
                CallState::Done { content, error_code } => ready.push((index, content, error_code)),
                other => {
                    call.state = other;
                    break;
                }
            }
        }
        ready
    }

    /// Indexes of calls not dispatched yet.
    pub fn waiting(&self) -> Vec<usize> {
        (0..self.calls.len())
            .filter(|&i| matches!(self.calls[i].state, CallState::Waiting))
            .collect()
    }

    /// A stopping turn answers its waiting calls: one that waited for approval never ran
    /// (`ABORTED_BEFORE_DISPATCH`), one the client holds is abandoned (`ABORTED`).
    pub fn settle_waiting(&mut self, why: &str) {
        for call in &mut self.calls {
            let (code, text) = match call.state {
                CallState::Approval { .. } => {
                    ("ABORTED_BEFORE_DISPATCH", format!("{why} before this call was approved"))
                }
                CallState::Client { .. } => {
                    ("ABORTED", format!("{why} while the client ran this call"))
                }
                _ => continue,
            };
            let content = vec![ContentBlock::Text { text }];
            call.state = CallState::Done { content, error_code: Some(code.into()) };
        }
    }

    /// The calls that wait for an answer, in model order.
    pub fn waiting_calls(&self) -> Vec<WaitingCall> {
        let wait = |call: &Call| match call.state {
            CallState::Approval { since } => Some((WaitKind::Approval, since)),
            CallState::Client { since, .. } => Some((WaitKind::Client, since)),
            _ => None,
        };
        self.calls
            .iter()
            .filter_map(|call| {
                let (kind, since) = wait(call)?;
                let (call_id, name) = (call.id.clone(), call.name.clone());
                Some(WaitingCall { call_id, name, arguments: call.arguments.clone(), kind, since })
            })
            .collect()
    }

    /// Whether every result is committed.
    pub fn all_committed(&self) -> bool {
        self.calls.iter().all(|c| matches!(c.state, CallState::Committed))
    }
}

/// Why a stopping turn dispatches nothing more.
fn stop_reason(turn: &Turn) -> Option<&'static str> {
    match &turn.stop {
        Some(Stop::Cancel(_)) => Some("the turn was cancelled"),
        Some(Stop::Limit(_)) => Some("the turn reached a limit"),
        None => None,
    }
}

impl Call {
    fn has_timer(&self, id: u64) -> bool {
        matches!(self.state, CallState::Client { timer, .. } if timer == id)
    }

    /// Running, or waiting for an answer.
    fn in_flight(&self) -> bool {
        matches!(
            self.state,
            CallState::Running | CallState::Approval { .. } | CallState::Client { .. }
        )
    }
}

impl Agent {
    pub(crate) fn on_tool(&mut self, outcome: ToolOutcome) {
        let Some(mut turn) = self.turn_in(|s| matches!(s, Stage::Tools(_))) else { return };
        let Stage::Tools(batch) = &mut turn.stage else { unreachable!() };
        if batch.finish(&outcome.call_id, outcome.content, outcome.error_code) {
            batch.context.extend(outcome.context);
        }
        self.run_tools(turn);
    }

    /// Dispatches what may run, commits what finished in model order, and ends the step once every
    /// result is in. Cancelled: nothing more is dispatched; calls not dispatched yet or waiting
    /// for an answer are answered at once (`settle_waiting`) while running ones drain.
    pub(crate) fn run_tools(&mut self, mut turn: Turn) {
        if let Some(why) = stop_reason(&turn) {
            let Stage::Tools(batch) = &mut turn.stage else { unreachable!() };
            batch.settle_waiting(why);
        }
        loop {
            let committed = self.commit_results(&mut turn);
            let Stage::Tools(batch) = &mut turn.stage else { unreachable!() };
            self.report_waiting(batch.waiting_calls());
            if batch.all_committed() {
                for message in std::mem::take(&mut batch.context) {
                    let splice = self.durable.inbox.insert(Target::NextStep, message);
                    self.splice(splice);
                }
                let end = if turn.stop.is_some() { StepEnd::Aborted } else { StepEnd::ToolCalls };
                return self.end_step(turn, end);
            }
            let dispatched = self.dispatch_tools(&mut turn);
            if !committed && !dispatched {
                self.phase = Phase::Running(turn);
                return;
            }
        }
    }

    /// Hands a call to the host, or for a client tool to the client with its timeout.
    fn start_call(&mut self, batch: &mut ToolBatch, index: usize, call: ToolCall) {
        let spec = self.config.tools.iter().find(|t| t.name == call.name);
        match spec.and_then(|s| s.client_timeout_ms) {
            Some(delay_ms) => {
                let timer = self.fresh_id();
                self.out.push(Output::StartTimer { timer_id: timer, delay_ms });
                batch.calls[index].state = CallState::Client { since: self.now, timer };
            }
            None => {
                batch.calls[index].state = CallState::Running;
                self.out.push(Output::CallTool(call));
            }
        }
    }

    /// Tells the host which calls wait, when that changed.
    fn report_waiting(&mut self, waiting: Vec<WaitingCall>) {
        if waiting != self.waiting {
            self.waiting = waiting.clone();
            self.out.push(Output::Waiting(waiting));
        }
    }

    /// Logs the results that are next in model order; `true` if there were any.
    fn commit_results(&mut self, turn: &mut Turn) -> bool {
        let Stage::Tools(batch) = &mut turn.stage else { unreachable!() };
        let ready = batch.committable();
        let any = !ready.is_empty();
        for (index, content, error_code) in ready {
            let Stage::Tools(batch) = &turn.stage else { unreachable!() };
            let call = &batch.calls[index];
            let error = error_code.map(|code| ToolError { name: call.name.clone(), code });
            let content = match call.edited {
                true => std::iter::once(edited_note(&call.arguments)).chain(content).collect(),
                false => content,
            };
            let block = ContentBlock::ToolResult {
                tool_call_id: call.id.clone(),
                content,
                is_error: error.is_some(),
            };
            let message = Message {
                id: self.derived_id(),
                role: Role::Tool,
                content: vec![block],
                source: Source::of("tool"),
            };
            let event = ToolResultEvent { turn: turn.number, step: turn.step, message, error };
            self.emit(EventData::ToolResult(event), None);
        }
        any
    }

    /// Logs `tool/call` for the next group and hands it to the host; `true` if any was dispatched.
    /// A call the host cannot run (unknown tool, or the turn is cancelled) is answered at once.
    fn dispatch_tools(&mut self, turn: &mut Turn) -> bool {
        let Stage::Tools(batch) = &mut turn.stage else { unreachable!() };
        let group = match turn.stop {
            Some(_) => batch.waiting(),
            None => batch.next_group(&self.config.tools),
        };
        let any = !group.is_empty();
        for index in group {
            let Stage::Tools(batch) = &mut turn.stage else { unreachable!() };
            let call = &batch.calls[index];
            let (id, name, arguments) =
                (call.id.clone(), call.name.clone(), call.arguments.clone());
            let spec = self.config.tools.iter().find(|t| t.name == name);
            let answer = if let Some(why) = stop_reason(turn) {
                Some(("ABORTED_BEFORE_DISPATCH", format!("{why} before this call was dispatched")))
            } else if spec.is_none() {
                let known: Vec<_> = self.config.tools.iter().map(|t| t.name.as_str()).collect();
                Some((
                    "UNKNOWN_TOOL",
                    format!("unknown tool {name:?}; available tools: {}", known.join(", ")),
                ))
            } else {
                None
            };
            let (approval, client) = match (&answer, spec) {
                (None, Some(spec)) => (spec.approval, spec.client_timeout_ms.is_some()),
                _ => (false, false),
            };
            let event = ToolCallEvent {
                turn: turn.number,
                step: turn.step,
                call_id: id.clone(),
                name: name.clone(),
                arguments: arguments.clone(),
                client,
            };
            self.emit(EventData::ToolCall(event), None);
            let Stage::Tools(batch) = &mut turn.stage else { unreachable!() };
            if let Some((code, text)) = answer {
                batch.answer(index, vec![ContentBlock::Text { text }], code);
            } else if approval {
                batch.calls[index].state = CallState::Approval { since: self.now };
                let (turn_number, step) = (turn.number, turn.step);
                let requested = ToolApproval::new(turn_number, step, &id, ApprovalState::Requested);
                self.emit(EventData::ToolApproval(requested), None);
            } else {
                let call = ToolCall { call_id: id, name, arguments };
                self.start_call(batch, index, call);
            }
        }
        any
    }
}

/// What a call's result first says when a person approved it with other arguments: the model
/// sees its call as it made it, so it is told what ran.
fn edited_note(arguments: &str) -> ContentBlock {
    let text =
        format!("(A person approved this call with other arguments; it ran with {arguments}.)");
    ContentBlock::Text { text }
}
