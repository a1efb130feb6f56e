//! The turn loop: claim, pre-step policy, steps, the model stream, tool calls, and how a turn ends.

use crate::agent::{Agent, Phase};
use crate::event::{
    AssistantChunk, AssistantMessage, EventData, Header, HeaderReason, LlmRetry, RequestContext,
    RequestHeader, StepMark, ToolCallEvent, ToolError, ToolResultEvent, TurnStart,
};
use crate::io::{ModelRequest, Output, StepDecision, ToolCall, ToolOutcome};
use crate::stream::{assemble, without_tool_calls};
use crate::tools::ToolBatch;
use crate::wire::{
    CancelCause, ContentBlock, FinishReason, Message, ModelError, Role, Source, StreamChunk,
    Target, TurnEndReason,
};

/// The running turn.
pub(crate) struct Turn {
    pub number: u32,
    /// Steps started so far.
    pub step: u32,
    /// A step of this turn hit max-tokens: the turn ends max-tokens (sticky).
    pub max_tokens: bool,
    /// The turn's reason is set: it closes unless next-step work arrived.
    pub wants_end: bool,
    /// Why it stops early, the first cause only: a cancel, or a limit it reached.
    pub stop: Option<Stop>,
    /// The timer of its wall-time limit.
    pub deadline: Option<u64>,
    /// Bytes the current step has streamed.
    pub streamed: u64,
    pub stage: Stage,
}

/// Why a turn stops before the model is done.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Stop {
    /// Cancelled: it ends `aborted`.
    Cancel(CancelCause),
    /// It reached a limit: it ends `error` with this.
    Limit(ModelError),
}

/// What the running turn waits for.
pub(crate) enum Stage {
    /// The pre-step policy's answer about a claim.
    Deciding { decision_id: u64, claimed: Vec<Message> },
    /// Chunks of a model response.
    Streaming { request_id: u64, attempt: u32, chunks: Vec<(u64, StreamChunk)> },
    /// A retry timer.
    Backoff { timer_id: u64, attempt: u32 },
    /// Tool results.
    Tools(ToolBatch),
}

/// How a step ended.
#[derive(Clone, Copy, PartialEq)]
enum StepEnd {
    Completed,
    MaxTokens,
    ToolCalls,
    Aborted,
}

impl Turn {
    fn reason(&self) -> TurnEndReason {
        match &self.stop {
            Some(Stop::Cancel(cause)) => Agent::aborted(*cause),
            Some(Stop::Limit(error)) => TurnEndReason::Error { error: error.clone() },
            None if self.max_tokens => TurnEndReason::MaxTokens,
            None => TurnEndReason::Completed,
        }
    }
}

impl Agent {
    fn take_turn(&mut self) -> Option<Turn> {
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Running(turn) => Some(turn),
            Phase::Idle => None,
        }
    }

    /// Takes the turn if it is in the stage `matches` accepts; otherwise leaves the phase alone.
    fn turn_in(&mut self, matches: impl FnOnce(&Stage) -> bool) -> Option<Turn> {
        match &self.phase {
            Phase::Running(turn) if matches(&turn.stage) => self.take_turn(),
            _ => None,
        }
    }

    pub(crate) fn start_turn(&mut self) {
        let number = self.durable.turns + 1;
        self.emit(EventData::TurnStart(TurnStart { turn: number }), None);
        let stage = self.claim(number, 1);
        let deadline = (self.config.limits.turn_ms > 0).then(|| {
            let timer_id = self.fresh_id();
            self.out.push(Output::RetryAfter { timer_id, delay_ms: self.config.limits.turn_ms });
            timer_id
        });
        let turn = Turn {
            number,
            step: 0,
            max_tokens: false,
            wants_end: false,
            stop: None,
            deadline,
            streamed: 0,
            stage,
        };
        self.phase = Phase::Running(turn);
    }

    /// Stops the running turn for a limit it reached, as a cancel would, unless it is stopping
    /// already.
    fn stop_at_limit(&mut self, code: &str, message: String) {
        let Phase::Running(turn) = &mut self.phase else { return };
        if turn.stop.is_some() {
            return;
        }
        let error =
            ModelError { code: code.to_owned(), message, status: None, retry_after_ms: None };
        turn.stop = Some(Stop::Limit(error));
        self.abort_turn();
    }

    /// Claims pending input (a `next-turn` item only for the first step) and asks the pre-step
    /// policy about it.
    fn claim(&mut self, turn: u32, step: u32) -> Stage {
        let mut claimed = Vec::new();
        for splice in self.durable.inbox.claim(step == 1) {
            let removed = self.durable.inbox.removed_by(&splice);
            self.splice(splice);
            claimed.extend(removed);
        }
        let decision_id = self.fresh_id();
        let ask = Output::DecideStep { decision_id, turn, step, claimed: claimed.clone() };
        self.out.push(ask);
        Stage::Deciding { decision_id, claimed }
    }

    pub(crate) fn on_decided(&mut self, id: u64, decision: StepDecision) {
        let deciding =
            |s: &Stage| matches!(s, Stage::Deciding { decision_id, .. } if *decision_id == id);
        let Some(turn) = self.turn_in(deciding) else { return };
        let Stage::Deciding { claimed, .. } = &turn.stage else { unreachable!() };
        let admitted: Vec<Message> = match decision {
            StepDecision::Reject => return self.end_turn(turn.number, TurnEndReason::Blocked),
            StepDecision::Enter(ids) => {
                ids.iter().filter_map(|id| claimed.iter().find(|m| &m.id == id).cloned()).collect()
            }
        };
        if admitted.is_empty() && (turn.step == 0 || turn.wants_end) {
            return self.end_turn(turn.number, turn.reason());
        }
        self.start_step(turn, admitted);
    }

    fn start_step(&mut self, mut turn: Turn, admitted: Vec<Message>) {
        turn.step += 1;
        turn.wants_end = false;
        turn.streamed = 0;
        self.emit(EventData::StepStart(StepMark { turn: turn.number, step: turn.step }), None);
        for message in admitted {
            self.emit(EventData::UserMessage(message), None);
        }
        self.log_header();
        self.request_model(turn, 0);
    }

    /// `request/header` when the header changed (or first / after a restore), and
    /// `request/context` when provider or model changed.
    fn log_header(&mut self) {
        let header = Header {
            model: self.config.model.clone(),
            system: self.config.system.clone(),
            tools: (!self.config.tools.is_empty())
                .then(|| self.config.tools.iter().map(|t| t.name.clone()).collect()),
            max_tokens: self.config.max_tokens,
        };
        let reason = match &self.durable.header {
            _ if std::mem::take(&mut self.resumed) => Some(HeaderReason::Resume),
            None => Some(HeaderReason::Initial),
            Some(last) if *last != header => Some(HeaderReason::Change),
            Some(_) => None,
        };
        if let Some(reason) = reason {
            self.emit(EventData::RequestHeader(RequestHeader { header, reason }), None);
        }
        let context = RequestContext {
            provider: self.config.provider.clone(),
            model: self.config.model.clone(),
            context_window: None,
        };
        let changed = self
            .durable
            .context
            .as_ref()
            .is_none_or(|c| c.provider != context.provider || c.model != context.model);
        if changed {
            self.emit(EventData::RequestContext(context), None);
        }
    }

    fn request_model(&mut self, mut turn: Turn, attempt: u32) {
        let request_id = self.fresh_id();
        self.out.push(Output::CallModel(ModelRequest {
            request_id,
            model: self.config.model.clone(),
            system: self.config.system.clone(),
            messages: self.durable.history.clone(),
            tools: self.config.tools.clone(),
            max_tokens: self.config.max_tokens,
        }));
        turn.stage = Stage::Streaming { request_id, attempt, chunks: Vec::new() };
        self.phase = Phase::Running(turn);
    }

    pub(crate) fn on_chunk(&mut self, id: u64, chunk: StreamChunk) {
        let Phase::Running(turn) = &self.phase else { return };
        let (number, step) = (turn.number, turn.step);
        if !matches!(&turn.stage, Stage::Streaming { request_id, .. } if *request_id == id) {
            return;
        }
        let event = AssistantChunk { turn: number, step, chunk: chunk.clone() };
        let seq = self.emit(EventData::AssistantChunk(event), None);
        let most = self.config.limits.step_output_bytes;
        let Phase::Running(turn) = &mut self.phase else { unreachable!() };
        turn.streamed += chunk.output_bytes();
        let over = most > 0 && turn.streamed > most;
        if let Stage::Streaming { chunks, .. } = &mut turn.stage {
            chunks.push((seq, chunk));
        }
        if over {
            let message = format!("the model's answer in step {step} passed {most} bytes");
            self.stop_at_limit("OUTPUT_LIMIT", message);
        }
    }

    pub(crate) fn on_done(&mut self, id: u64) {
        let streaming =
            |s: &Stage| matches!(s, Stage::Streaming { request_id, .. } if *request_id == id);
        let Some(mut turn) = self.turn_in(streaming) else { return };
        let Stage::Streaming { chunks, .. } = &mut turn.stage else { unreachable!() };
        let chunks = std::mem::take(chunks);
        let seqs = chunks.iter().map(|(seq, _)| *seq).collect();
        let assembled = assemble(chunks.iter().map(|(_, c)| c));
        let max_tokens = assembled.finish == Some(FinishReason::MaxTokens);
        let content =
            if max_tokens { without_tool_calls(assembled.content) } else { assembled.content };
        let calls: Vec<_> = content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolCall { id, name, arguments } => {
                    Some((id.clone(), name.clone(), arguments.clone()))
                }
                _ => None,
            })
            .collect();
        self.commit_assistant(&turn, content, assembled.usage, seqs, false);
        if max_tokens {
            self.end_step(turn, StepEnd::MaxTokens);
        } else if calls.is_empty() {
            self.end_step(turn, StepEnd::Completed);
        } else {
            turn.stage = Stage::Tools(ToolBatch::new(calls));
            self.run_tools(turn);
        }
    }

    /// Logs the step's `assistant/message`, citing the chunks it was built from.
    fn commit_assistant(
        &mut self,
        turn: &Turn,
        content: Vec<ContentBlock>,
        usage: Option<crate::wire::Usage>,
        seqs: Vec<u64>,
        interrupted: bool,
    ) {
        let message = Message {
            id: self.derived_id(),
            role: Role::Assistant,
            content,
            source: Source::of("model"),
        };
        let event =
            AssistantMessage { turn: turn.number, step: turn.step, message, usage, interrupted };
        self.emit(EventData::AssistantMessage(event), Some(seqs));
    }

    pub(crate) fn on_failed(&mut self, id: u64, mut error: ModelError) {
        let streaming =
            |s: &Stage| matches!(s, Stage::Streaming { request_id, .. } if *request_id == id);
        let Some(mut turn) = self.turn_in(streaming) else { return };
        let Stage::Streaming { attempt, .. } = turn.stage else { unreachable!() };
        let longest = self.config.limits.max_retry_after_ms;
        let too_long = error.retry_after_ms.filter(|&ms| longest > 0 && ms > longest);
        if let Some(ms) = too_long {
            error.message = format!(
                "{} (the provider asked to wait {ms} ms before retrying, longer than the {longest} ms this gateway waits)",
                error.message
            );
        }
        if !error.is_transient() || attempt >= self.config.retry.max_retries || too_long.is_some() {
            self.emit(EventData::StepEnd(StepMark { turn: turn.number, step: turn.step }), None);
            return self.end_turn(turn.number, TurnEndReason::Error { error });
        }
        let attempt = attempt + 1;
        let delay_ms = self.config.retry.delay_ms(attempt, error.retry_after_ms.take());
        let retry = LlmRetry { turn: turn.number, step: turn.step, attempt, delay_ms, error };
        self.emit(EventData::LlmRetry(retry), None);
        let timer_id = self.fresh_id();
        self.out.push(Output::RetryAfter { timer_id, delay_ms });
        turn.stage = Stage::Backoff { timer_id, attempt };
        self.phase = Phase::Running(turn);
    }

    pub(crate) fn on_timer(&mut self, id: u64) {
        if let Phase::Running(turn) = &self.phase
            && turn.deadline == Some(id)
        {
            let message = format!(
                "turn {} ran for {} ms, its time limit",
                turn.number, self.config.limits.turn_ms
            );
            return self.stop_at_limit("TURN_TIMEOUT", message);
        }
        let waiting = |s: &Stage| matches!(s, Stage::Backoff { timer_id, .. } if *timer_id == id);
        let Some(turn) = self.turn_in(waiting) else { return };
        let Stage::Backoff { attempt, .. } = turn.stage else { unreachable!() };
        self.request_model(turn, attempt);
    }

    pub(crate) fn on_tool(&mut self, outcome: ToolOutcome) {
        let Some(mut turn) = self.turn_in(|s| matches!(s, Stage::Tools(_))) else { return };
        let Stage::Tools(batch) = &mut turn.stage else { unreachable!() };
        if batch.finish(&outcome.call_id, outcome.content, outcome.error_code) {
            batch.context.extend(outcome.context);
        }
        self.run_tools(turn);
    }

    /// Dispatches what may run, commits what finished in model order, and ends the step once every
    /// result is in. Cancelled: nothing more is dispatched; waiting calls are answered
    /// `ABORTED_BEFORE_DISPATCH` while running ones drain.
    fn run_tools(&mut self, mut turn: Turn) {
        loop {
            let committed = self.commit_results(&mut turn);
            let Stage::Tools(batch) = &mut turn.stage else { unreachable!() };
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

    /// Logs the results that are next in model order; `true` if there were any.
    fn commit_results(&mut self, turn: &mut Turn) -> bool {
        let Stage::Tools(batch) = &mut turn.stage else { unreachable!() };
        let ready = batch.committable();
        let any = !ready.is_empty();
        for (index, content, error_code) in ready {
            let Stage::Tools(batch) = &turn.stage else { unreachable!() };
            let call = &batch.calls[index];
            let error = error_code.map(|code| ToolError { name: call.name.clone(), code });
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
            let event = ToolCallEvent {
                turn: turn.number,
                step: turn.step,
                call_id: id.clone(),
                name: name.clone(),
                arguments: arguments.clone(),
            };
            self.emit(EventData::ToolCall(event), None);
            let stopped = match &turn.stop {
                Some(Stop::Cancel(_)) => Some("the turn was cancelled"),
                Some(Stop::Limit(_)) => Some("the turn reached a limit"),
                None => None,
            };
            let answer = if let Some(why) = stopped {
                Some(("ABORTED_BEFORE_DISPATCH", format!("{why} before this call was dispatched")))
            } else if !self.config.tools.iter().any(|t| t.name == name) {
                let known: Vec<_> = self.config.tools.iter().map(|t| t.name.as_str()).collect();
                Some((
                    "UNKNOWN_TOOL",
                    format!("unknown tool {name:?}; available tools: {}", known.join(", ")),
                ))
            } else {
                None
            };
            let Stage::Tools(batch) = &mut turn.stage else { unreachable!() };
            match answer {
                Some((code, text)) => batch.answer(index, vec![ContentBlock::Text { text }], code),
                None => self.out.push(Output::CallTool(ToolCall { call_id: id, name, arguments })),
            }
        }
        any
    }

    /// Logs `step/end` and decides what the turn does next.
    fn end_step(&mut self, mut turn: Turn, end: StepEnd) {
        self.emit(EventData::StepEnd(StepMark { turn: turn.number, step: turn.step }), None);
        match end {
            StepEnd::Aborted => return self.end_turn(turn.number, turn.reason()),
            StepEnd::MaxTokens => turn.max_tokens = true,
            StepEnd::Completed | StepEnd::ToolCalls => {}
        }
        turn.wants_end = end == StepEnd::Completed || turn.max_tokens;
        if turn.wants_end && !self.durable.inbox.has_next_step() {
            return self.end_turn(turn.number, turn.reason());
        }
        let most = self.config.limits.max_steps;
        if most > 0 && turn.step >= most {
            let message = format!("turn {} reached its limit of {most} steps", turn.number);
            let error = ModelError {
                code: "MAX_STEPS".into(),
                message,
                status: None,
                retry_after_ms: None,
            };
            return self.end_turn(turn.number, TurnEndReason::Error { error });
        }
        turn.stage = self.claim(turn.number, turn.step + 1);
        self.phase = Phase::Running(turn);
    }

    /// Aborts the running turn after a cancel or a limit: ends it now unless tool calls must
    /// drain.
    pub(crate) fn abort_turn(&mut self) {
        let Some(mut turn) = self.take_turn() else { return };
        match &mut turn.stage {
            Stage::Deciding { .. } => self.end_turn(turn.number, turn.reason()),
            Stage::Backoff { .. } => self.end_step(turn, StepEnd::Aborted),
            Stage::Streaming { request_id, chunks, .. } => {
                self.out.push(Output::AbortModel(*request_id));
                let chunks = std::mem::take(chunks);
                let assembled = assemble(chunks.iter().map(|(_, c)| c));
                let content = without_tool_calls(assembled.content);
                if !content.is_empty() {
                    let seqs = chunks.iter().map(|(seq, _)| *seq).collect();
                    self.commit_assistant(&turn, content, assembled.usage, seqs, true);
                }
                self.end_step(turn, StepEnd::Aborted)
            }
            Stage::Tools(_) => self.run_tools(turn),
        }
    }
}
