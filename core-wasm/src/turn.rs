//! The turn loop: claim, pre-step policy, steps, the model stream, and how a turn ends (its tool
//! calls in `tools.rs`, its compactions in `compaction.rs`, a pause and its resume in `pause.rs`).

use crate::agent::{Agent, Phase};
use crate::compaction::{Compacting, Plan};
use crate::event::{
    AssistantChunk, AssistantMessage, EventData, Header, HeaderReason, LlmRetry, RequestContext,
    RequestHeader, StepMark, TurnStart,
};
use crate::io::{ModelRequest, Output, StepDecision};
use crate::stream::{assemble, without_tool_calls};
use crate::tools::ToolBatch;
use crate::wire::{
    CancelCause, ContentBlock, FinishReason, Message, ModelError, Role, Source, StreamChunk,
    TurnEndReason,
};

/// The running turn.
#[derive(serde::Serialize, serde::Deserialize)]
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
    /// The current step's request overflowed the context window once (and was compacted).
    pub overflowed: bool,
    /// Not a turn but a compaction at idle (`compaction.rs`): no turn events, status idle.
    pub maintenance: bool,
    /// The model of the session's chain that answers ([`crate::Config::route`]): 0 until a step
    /// fails over, then the fallback for the rest of the turn.
    pub route: u32,
    /// A resumed turn whose first step owes the model the results of the paused turn's tool
    /// calls: it runs even if nothing is claimed.
    pub owed: bool,
    pub stage: Stage,
}

/// Why a turn stops before the model is done.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) enum Stop {
    /// Cancelled: it ends `aborted`.
    Cancel(CancelCause),
    /// It reached a limit: it ends `error` with this.
    Limit(ModelError),
}

/// What the running turn waits for.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) enum Stage {
    /// The pre-step policy's answer about a claim.
    Deciding { decision_id: u64, claimed: Vec<Message> },
    /// Chunks of a model response.
    Streaming { request_id: u64, attempt: u32, chunks: Vec<(u64, StreamChunk)> },
    /// A retry timer; then the step's request again, or the summary's (`compaction.rs`).
    Backoff { timer_id: u64, attempt: u32, compaction: Option<Plan> },
    /// The summary of the conversation (`compaction.rs`).
    Compacting(Compacting),
    /// Tool results.
    Tools(ToolBatch),
}

/// How a step ended.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum StepEnd {
    Completed,
    MaxTokens,
    ToolCalls,
    Aborted,
}

impl Turn {
    /// A turn before its first step.
    pub(crate) fn new(number: u32, deadline: Option<u64>, stage: Stage) -> Turn {
        Turn {
            number,
            step: 0,
            max_tokens: false,
            wants_end: false,
            stop: None,
            deadline,
            streamed: 0,
            overflowed: false,
            maintenance: false,
            route: 0,
            owed: false,
            stage,
        }
    }

    /// A compaction at idle (`compaction.rs`), after turn `number`.
    pub(crate) fn maintenance(number: u32, stage: Stage) -> Turn {
        Turn { maintenance: true, ..Turn::new(number, None, stage) }
    }

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
    pub(crate) fn take_turn(&mut self) -> Option<Turn> {
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Running(turn) => Some(turn),
            Phase::Idle => None,
        }
    }

    /// Takes the turn if it is in the stage `matches` accepts; otherwise leaves the phase alone.
    pub(crate) fn turn_in(&mut self, matches: impl FnOnce(&Stage) -> bool) -> Option<Turn> {
        match &self.phase {
            Phase::Running(turn) if matches(&turn.stage) => self.take_turn(),
            _ => None,
        }
    }

    pub(crate) fn start_turn(&mut self) {
        self.start_turn_owing(false);
    }

    /// Starts a turn; an `owed` one (resumed after its tool calls ran) claims as a later step
    /// does, so its first step carries on the paused turn and the next followup gets its own.
    pub(crate) fn start_turn_owing(&mut self, owed: bool) {
        let number = self.durable.turns + 1;
        self.emit(EventData::TurnStart(TurnStart { turn: number }), None);
        let stage = self.claim(number, 1, !owed);
        let deadline = self.deadline();
        self.phase = Phase::Running(Turn { owed, ..Turn::new(number, deadline, stage) });
    }

    /// Starts the timer of a turn's wall-time limit, if it has one.
    pub(crate) fn deadline(&mut self) -> Option<u64> {
        (self.config.limits.turn_ms > 0).then(|| {
            let timer_id = self.fresh_id();
            self.out.push(Output::StartTimer { timer_id, delay_ms: self.config.limits.turn_ms });
            timer_id
        })
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

    /// Claims pending input (a `next-turn` item too when `followup`: the first step of a turn)
    /// and asks the pre-step policy about it.
    fn claim(&mut self, turn: u32, step: u32, followup: bool) -> Stage {
        let mut claimed = Vec::new();
        for splice in self.durable.inbox.claim(followup) {
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
            StepDecision::Pause(why) => return self.pause(&turn, why),
            StepDecision::Enter(ids) => {
                ids.iter().filter_map(|id| claimed.iter().find(|m| &m.id == id).cloned()).collect()
            }
        };
        let owed = turn.owed && turn.step == 0;
        if admitted.is_empty() && !owed && (turn.step == 0 || turn.wants_end) {
            return self.end_turn(turn.number, turn.reason());
        }
        self.start_step(turn, admitted);
    }

    fn start_step(&mut self, mut turn: Turn, admitted: Vec<Message>) {
        turn.step += 1;
        turn.wants_end = false;
        turn.streamed = 0;
        turn.overflowed = false;
        self.emit(EventData::StepStart(StepMark { turn: turn.number, step: turn.step }), None);
        for message in admitted {
            self.emit(EventData::UserMessage(message), None);
        }
        self.log_header(turn.route);
        self.request_or_compact(turn);
    }

    /// `request/header` when the header changed (or first / after a restore), and
    /// `request/context` when the model of `route` is not the one that answered last.
    fn log_header(&mut self, route: u32) {
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
        let context = self.context_of(route, None);
        if !self.durable.context.as_ref().is_some_and(|last| last.same_model(&context)) {
            self.emit(EventData::RequestContext(context), None);
        }
    }

    /// The `request/context` of route `route`'s model, taking over after `failover`.
    fn context_of(&self, route: u32, failover: Option<ModelError>) -> RequestContext {
        let route = self.config.route(route);
        RequestContext {
            provider: route.provider,
            model: route.model,
            context_window: route.context_window,
            failover,
        }
    }

    pub(crate) fn request_model(&mut self, mut turn: Turn, attempt: u32) {
        let request_id = self.fresh_id();
        self.out.push(Output::CallModel(ModelRequest {
            request_id,
            route: turn.route,
            model: self.config.route(turn.route).model,
            system: self.config.system.clone(),
            messages: self.durable.history.clone(),
            tools: self.config.tools.clone(),
            max_tokens: self.config.max_tokens,
        }));
        turn.stage = Stage::Streaming { request_id, attempt, chunks: Vec::new() };
        self.phase = Phase::Running(turn);
    }

    pub(crate) fn on_chunk(&mut self, id: u64, chunk: StreamChunk) {
        let Phase::Running(turn) = &mut self.phase else { return };
        if let Stage::Compacting(compacting) = &mut turn.stage {
            return compacting.chunk(id, chunk);
        }
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
        if let Some(turn) = self.turn_in(|s| Compacting::answers(s, id)) {
            return self.summarized(turn);
        }
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

    pub(crate) fn on_failed(&mut self, id: u64, error: ModelError) {
        if let Some(turn) = self.turn_in(|s| Compacting::answers(s, id)) {
            return self.summary_failed(turn, error);
        }
        let streaming =
            |s: &Stage| matches!(s, Stage::Streaming { request_id, .. } if *request_id == id);
        let Some(turn) = self.turn_in(streaming) else { return };
        let Stage::Streaming { attempt, .. } = turn.stage else { unreachable!() };
        if error.code == "CONTEXT_OVERFLOW" {
            return self.overflowed(turn, error);
        }
        self.failed(turn, attempt, error, None);
    }

    /// A request failed: a transient error is retried after a backoff (`compaction` says which
    /// request); past its retries it goes to the next model of the chain, if there is one;
    /// anything else ends the turn with it.
    pub(crate) fn failed(
        &mut self,
        mut turn: Turn,
        attempt: u32,
        mut error: ModelError,
        compaction: Option<Plan>,
    ) {
        let longest = self.config.limits.max_retry_after_ms;
        let too_long = error.retry_after_ms.filter(|&ms| longest > 0 && ms > longest);
        if let Some(ms) = too_long {
            error.message = format!(
                "{} (the provider asked to wait {ms} ms before retrying, longer than the {longest} ms this gateway waits)",
                error.message
            );
        }
        if !error.is_transient() {
            return self.end_in_error(turn, error);
        }
        if attempt >= self.config.retry.max_retries || too_long.is_some() {
            if turn.route as usize >= self.config.fallbacks.len() {
                return self.end_in_error(turn, error);
            }
            turn.route += 1;
            let context = self.context_of(turn.route, Some(error));
            self.emit(EventData::RequestContext(context), None);
            return match compaction {
                Some(plan) => self.request_summary(turn, plan, 0),
                None => self.request_model(turn, 0),
            };
        }
        let attempt = attempt + 1;
        let delay_ms = self.config.retry.delay_ms(attempt, error.retry_after_ms.take());
        if !turn.maintenance {
            let retry = LlmRetry { turn: turn.number, step: turn.step, attempt, delay_ms, error };
            self.emit(EventData::LlmRetry(retry), None);
        }
        let timer_id = self.fresh_id();
        self.out.push(Output::StartTimer { timer_id, delay_ms });
        turn.stage = Stage::Backoff { timer_id, attempt, compaction };
        self.phase = Phase::Running(turn);
    }

    /// Ends the step and the turn with `error`; a compaction at idle just settles.
    pub(crate) fn end_in_error(&mut self, turn: Turn, error: ModelError) {
        if turn.maintenance {
            return self.settle_compaction();
        }
        self.emit(EventData::StepEnd(StepMark { turn: turn.number, step: turn.step }), None);
        self.end_turn(turn.number, TurnEndReason::Error { error });
    }

    pub(crate) fn on_timer(&mut self, id: u64) {
        if self.on_client_timer(id) {
            return;
        }
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
        let Some(mut turn) = self.turn_in(waiting) else { return };
        let Stage::Backoff { attempt, compaction, .. } = &mut turn.stage else { unreachable!() };
        let (attempt, compaction) = (*attempt, compaction.take());
        match compaction {
            Some(plan) => self.request_summary(turn, plan, attempt),
            None => self.request_model(turn, attempt),
        }
    }

    /// Logs `step/end` and decides what the turn does next.
    pub(crate) fn end_step(&mut self, mut turn: Turn, end: StepEnd) {
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
        turn.stage = self.claim(turn.number, turn.step + 1, false);
        self.phase = Phase::Running(turn);
    }

    /// Aborts the running turn after a cancel or a limit: ends it now unless tool calls must
    /// drain.
    pub(crate) fn abort_turn(&mut self) {
        let Some(mut turn) = self.take_turn() else { return };
        match &mut turn.stage {
            Stage::Deciding { .. } => self.end_turn(turn.number, turn.reason()),
            Stage::Backoff { .. } if turn.maintenance => self.settle_compaction(),
            Stage::Backoff { .. } => self.end_step(turn, StepEnd::Aborted),
            Stage::Compacting(compacting) => {
                self.out.push(Output::AbortModel(compacting.request_id));
                match turn.maintenance {
                    true => self.settle_compaction(),
                    false => self.end_step(turn, StepEnd::Aborted),
                }
            }
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
