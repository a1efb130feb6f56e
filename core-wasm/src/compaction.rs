//! Context compaction (`docs/semantics.md`, "Context compaction"): when the conversation nears
//! the model's context window, or the provider answers that it no longer fits, one summarization
//! request replaces the older messages with a summary.
//!
//! - **Pressure**: before a step's request, the prompt size the provider last reported plus an
//!   estimate of what was added since; at [`ContextPolicy::compact_at_percent`] of the window the
//!   step compacts first.
//! - **Overflow**: a `CONTEXT_OVERFLOW` answer compacts once and retries the step; a second one
//!   ends the turn `error CONTEXT_OVERFLOW`.
//! - **At idle** ([`Input::Compact`]): maintenance. Status stays idle; waking input is latched
//!   until it settles, announced by [`Output::Compacting`].
//!
//! The summarization request sends the messages to summarize unchanged, with the instruction
//! after them, so the provider's prefix cache serves it. The messages the model has not answered
//! yet (a step's new input, or its last tool calls with their results) stay verbatim after the
//! summary. The summary is logged in `context/compaction` and folded from the log like any
//! message: replay and recovery never ask for it again.
//!
//! [`ContextPolicy::compact_at_percent`]: crate::ContextPolicy::compact_at_percent
//! [`Input::Compact`]: crate::Input::Compact

use std::sync::Arc;

use crate::agent::{Agent, Phase};
use crate::config::ToolSpec;
use crate::event::{CompactionTrigger, ContextCompaction, EventData};
use crate::io::{ModelRequest, Output, RefusalCode, Status};
use crate::turn::{Stage, Turn};
use crate::wire::{ContentBlock, Message, ModelError, Role, Source, StreamChunk, Usage};

/// The request a summarization sends after the conversation.
pub const COMPACTION_INSTRUCTION: &str = "Summarize the conversation above for yourself. You \
will go on with only this summary and the messages after it; the older messages will be gone. \
Keep what is needed to continue: the person's goals and requests, decisions made, facts learned, \
names, paths, numbers and tool results that still matter, what was done and what remains. \
Answer with the summary only, as plain text, and call no tools.";

/// What a summary's text starts with in the conversation.
pub const SUMMARY_PREFIX: &str = "Summary of the earlier conversation (its messages were \
compacted into this):\n\n";

/// Tokens an image is counted as, whatever its size.
const IMAGE_TOKENS: u64 = 1_000;

/// What a compaction will summarize, and why.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Plan {
    trigger: CompactionTrigger,
    /// How many leading messages of the history go into the summary.
    cut: usize,
    /// The estimated prompt tokens when it was planned.
    tokens_before: u64,
}

/// A summarization request in flight.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Compacting {
    pub request_id: u64,
    attempt: u32,
    plan: Plan,
    /// The summary's text so far.
    text: String,
    /// What the summary request cost, as the provider reported it.
    usage: Option<Usage>,
}

impl Compacting {
    /// Whether `stage` waits for the summary request `id`.
    pub(crate) fn answers(stage: &Stage, id: u64) -> bool {
        matches!(stage, Stage::Compacting(compacting) if compacting.request_id == id)
    }

    /// Keeps the text of one delta of the summary and its usage (reasoning and tool calls are
    /// dropped).
    pub(crate) fn chunk(&mut self, id: u64, chunk: StreamChunk) {
        match (id == self.request_id, chunk) {
            (true, StreamChunk::TextDelta { text, .. }) => self.text.push_str(&text),
            (true, StreamChunk::Usage { usage }) => self.usage = Some(usage),
            _ => {}
        }
    }
}

/// The estimated tokens of a message as a request sends it: four bytes of text a token, a flat
/// count per image, a little for its envelope. Reasoning is not sent back.
pub fn estimate(message: &Message) -> u64 {
    fn bytes(block: &ContentBlock) -> u64 {
        match block {
            ContentBlock::Text { text } => text.len() as u64,
            ContentBlock::Reasoning { .. } => 0,
            ContentBlock::Image { .. } => IMAGE_TOKENS * 4,
            ContentBlock::ToolCall { id, name, arguments } => {
                (id.len() + name.len() + arguments.len()) as u64
            }
            ContentBlock::ToolResult { tool_call_id, content, .. } => {
                tool_call_id.len() as u64 + content.iter().map(bytes).sum::<u64>()
            }
        }
    }
    4 + message.content.iter().map(bytes).sum::<u64>().div_ceil(4)
}

/// The estimated prompt tokens of a whole request: its system prompt and tools, and every
/// message ([`estimate`]).
pub fn estimate_request(
    system: Option<&str>,
    tools: &[ToolSpec],
    messages: &[Arc<Message>],
) -> u64 {
    fixed_tokens(system, tools) + messages.iter().map(|m| estimate(m)).sum::<u64>()
}

/// The estimated tokens every request carries: the system prompt and the tools.
fn fixed_tokens(system: Option<&str>, tools: &[ToolSpec]) -> u64 {
    let tools: usize =
        tools.iter().map(|t| t.name.len() + t.description.len() + t.parameters.len()).sum();
    (system.map_or(0, str::len) + tools).div_ceil(4) as u64
}

impl Agent {
    /// The estimated prompt tokens of the next request: the provider's last count plus an
    /// estimate of the messages after the ones it counted; with no count (a new or just
    /// compacted conversation), an estimate of the whole request.
    pub(crate) fn pressure(&self) -> u64 {
        let history = &self.durable.history;
        let (counted, from) = match self.durable.prompt {
            Some(mark) if mark.messages <= history.len() => (mark.tokens, mark.messages),
            _ => (self.fixed_tokens(), 0),
        };
        counted + history[from..].iter().map(|m| estimate(m)).sum::<u64>()
    }

    fn fixed_tokens(&self) -> u64 {
        fixed_tokens(self.config.system.as_deref(), &self.config.tools)
    }

    /// How many leading messages a compaction would summarize: all but those the model has not
    /// answered yet (after its last answer; from its last tool calls on, whose results need
    /// them). `None` when that leaves nothing but an earlier summary to summarize.
    fn cut(&self) -> Option<usize> {
        let history = &self.durable.history;
        let cut = match history.iter().rposition(|m| m.role == Role::Assistant) {
            None => 0,
            Some(last) if crate::durable::tool_calls(&history[last]).is_empty() => last + 1,
            Some(last) => last,
        };
        let summary = history.first().is_some_and(|m| m.source.kind == "compaction");
        (cut > usize::from(summary)).then_some(cut)
    }

    /// Starts the step's request, or first a compaction when the pressure calls for one.
    pub(crate) fn request_or_compact(&mut self, turn: Turn) {
        let policy = &self.config.context;
        let threshold = (policy.window)
            .filter(|_| policy.compact_at_percent > 0)
            .map(|window| window.saturating_mul(u64::from(policy.compact_at_percent)) / 100);
        let pressure = self.pressure();
        if threshold.is_some_and(|threshold| pressure >= threshold)
            && let Some(cut) = self.cut()
        {
            let plan = Plan { trigger: CompactionTrigger::Pressure, cut, tokens_before: pressure };
            return self.request_summary(turn, plan, 0);
        }
        self.request_model(turn, 0)
    }

    /// The step's request did not fit the context window: compact once and retry it; a second
    /// overflow (or nothing to compact) ends the turn with the provider's error.
    pub(crate) fn overflowed(&mut self, mut turn: Turn, mut error: ModelError) {
        match self.cut() {
            Some(cut) if !turn.overflowed => {
                turn.overflowed = true;
                let trigger = CompactionTrigger::Overflow;
                let plan = Plan { trigger, cut, tokens_before: self.pressure() };
                self.request_summary(turn, plan, 0)
            }
            _ => {
                if turn.overflowed {
                    error.message += " (even after the conversation was compacted)";
                }
                self.end_in_error(turn, error)
            }
        }
    }

    /// Asks the model for the summary `plan` describes.
    pub(crate) fn request_summary(&mut self, mut turn: Turn, plan: Plan, attempt: u32) {
        turn.stage = self.summary_request(plan, attempt, turn.route);
        self.phase = Phase::Running(turn);
    }

    fn summary_request(&mut self, plan: Plan, attempt: u32, route: u32) -> Stage {
        let request_id = self.fresh_id();
        let instruction = Message {
            id: format!("{}:compaction:{}", self.config.session_id, self.durable.next_seq),
            role: Role::User,
            content: vec![ContentBlock::Text { text: COMPACTION_INSTRUCTION.into() }],
            source: Source::of("compaction"),
        };
        let mut messages = self.durable.history[..plan.cut].to_vec();
        messages.push(Arc::new(instruction));
        self.out.push(Output::CallModel(ModelRequest {
            request_id,
            route,
            model: self.config.route(route).model,
            system: self.config.system.clone(),
            messages,
            tools: self.config.tools.clone(),
            max_tokens: self.config.max_tokens,
        }));
        Stage::Compacting(Compacting {
            request_id,
            attempt,
            plan,
            text: String::new(),
            usage: None,
        })
    }

    /// The summary is in: log it, then go on with the step (or settle, at idle). An empty one
    /// compacts nothing.
    pub(crate) fn summarized(&mut self, mut turn: Turn) {
        let Stage::Compacting(compacting) = &mut turn.stage else { unreachable!() };
        let plan = compacting.plan.clone();
        let text = std::mem::take(&mut compacting.text);
        let usage = compacting.usage.take();
        let text = text.trim();
        if text.is_empty() {
            return match plan.trigger {
                CompactionTrigger::Pressure => self.request_model(turn, 0),
                CompactionTrigger::Manual => self.settle_compaction(),
                CompactionTrigger::Overflow => {
                    let message = "the conversation does not fit the model's context window, \
                                   and the model's summary of it was empty";
                    self.end_in_error(turn, overflow(message))
                }
            };
        }
        let summary = Message {
            id: self.derived_id(),
            role: Role::User,
            content: vec![ContentBlock::Text { text: format!("{SUMMARY_PREFIX}{text}") }],
            source: Source::of("compaction"),
        };
        let kept: u64 = self.durable.history[plan.cut..].iter().map(|m| estimate(m)).sum();
        let tokens_after = self.fixed_tokens() + estimate(&summary) + kept;
        let (number, step) = match turn.maintenance {
            true => (None, None),
            false => (Some(turn.number), Some(turn.step)),
        };
        let event = ContextCompaction {
            turn: number,
            step,
            summary,
            through_seq: self.durable.history_seqs[plan.cut - 1],
            tokens_before: plan.tokens_before,
            tokens_after: Some(tokens_after),
            trigger: plan.trigger,
            usage,
        };
        self.emit(EventData::ContextCompaction(event), None);
        match plan.trigger {
            CompactionTrigger::Manual => self.settle_compaction(),
            CompactionTrigger::Pressure | CompactionTrigger::Overflow => {
                self.request_model(turn, 0)
            }
        }
    }

    /// The summary request failed: retried like a step's when transient; an overflow of the
    /// summary request itself ends the turn `CONTEXT_OVERFLOW`.
    pub(crate) fn summary_failed(&mut self, turn: Turn, mut error: ModelError) {
        let Stage::Compacting(compacting) = &turn.stage else { unreachable!() };
        let (attempt, plan) = (compacting.attempt, compacting.plan.clone());
        if error.code == "CONTEXT_OVERFLOW" {
            error.message += " (the request to summarize the conversation did not fit either)";
            return self.end_in_error(turn, error);
        }
        self.failed(turn, attempt, error, Some(plan))
    }

    /// `compact` at idle: summarize the whole conversation as maintenance.
    pub(crate) fn compact_at_idle(&mut self) {
        let busy = match &self.phase {
            Phase::Running(turn) if turn.maintenance => Some((
                RefusalCode::Compacting,
                "a compaction is running already; its `context/compaction` event will follow",
            )),
            Phase::Running(_) => Some((
                RefusalCode::SessionRunning,
                "a turn is running; a turn compacts by itself when the context fills, and \
                 `compact` is for an idle session",
            )),
            Phase::Idle => None,
        };
        if let Some((code, message)) = busy {
            return self.refuse(code, message.into());
        }
        let Some(cut) = self.cut() else {
            let message = "there is no earlier conversation to summarize yet";
            return self.refuse(RefusalCode::NothingToCompact, message.into());
        };
        let plan = Plan { trigger: CompactionTrigger::Manual, cut, tokens_before: self.pressure() };
        self.out.push(Output::Compacting(true));
        let stage = self.summary_request(plan, 0, 0);
        self.phase = Phase::Running(Turn::maintenance(self.durable.turns, stage));
    }

    /// A compaction at idle is over: the agent is idle again, and runs what arrived meanwhile.
    pub(crate) fn settle_compaction(&mut self) {
        self.phase = Phase::Idle;
        self.out.push(Output::Compacting(false));
        let owed = std::mem::take(&mut self.owed);
        if std::mem::take(&mut self.latched) && (owed || self.has_runnable_work()) {
            self.out.push(Output::Status(Status::Running));
            self.start_turn_owing(owed);
        }
    }
}

fn overflow(message: &str) -> ModelError {
    ModelError {
        code: "CONTEXT_OVERFLOW".into(),
        message: message.into(),
        status: None,
        retry_after_ms: None,
    }
}
