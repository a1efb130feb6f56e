//! What goes into the core and what comes out: plain data, performed by the host.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::inbox::ReceiptMark;
use crate::wire::{CancelCause, ContentBlock, Message, MessageId, ModelError, StreamChunk, Target};

/// A tool the model may call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments, as JSON text.
    pub parameters: String,
    /// Parallel-safe calls may run together; the others run alone.
    pub parallel_safe: bool,
    /// Each call waits for a person's approval before it runs (`tool/approval`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approval: bool,
    /// A client tool: the session's client runs each call and answers with its result
    /// ([`CallAnswer::Result`]); a call without one after this many milliseconds fails
    /// `TOOL_TIMEOUT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_timeout_ms: Option<u64>,
}

/// Moves a [`ToolSpec`]'s fields into `$to`, a struct with the same fields: the WIT `tool-spec`
/// of the guest's or the host's bindings, or a `ToolSpec` from either. The one list of the fields
/// both sides of the component boundary convert.
#[macro_export]
macro_rules! move_tool_spec {
    ($spec:expr => $to:path) => {{
        let s = $spec;
        $to {
            name: s.name,
            description: s.description,
            parameters: s.parameters,
            parallel_safe: s.parallel_safe,
            approval: s.approval,
            client_timeout_ms: s.client_timeout_ms,
        }
    }};
}

/// Backoff for transient model failures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryPolicy {
    /// Retries before the failure ends the turn.
    pub max_retries: u32,
    /// The first delay; each retry doubles it.
    pub base_delay_ms: u64,
    /// The longest delay.
    pub max_delay_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { max_retries: 4, base_delay_ms: 500, max_delay_ms: 8_000 }
    }
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (1-based); a provider's `Retry-After` wins.
    pub fn delay_ms(&self, attempt: u32, retry_after_ms: Option<u64>) -> u64 {
        retry_after_ms.unwrap_or_else(|| {
            let doubled = self.base_delay_ms.saturating_mul(1u64 << (attempt - 1).min(32));
            doubled.min(self.max_delay_ms)
        })
    }
}

/// What no turn may exceed (0: no limit). A turn that reaches one stops as a cancel would and
/// ends `error` with the code `TURN_TIMEOUT`, `MAX_STEPS` or `OUTPUT_LIMIT`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Wall time of a turn from `turn/start`.
    pub turn_ms: u64,
    /// Steps per turn.
    pub max_steps: u32,
    /// Bytes of text, reasoning and tool-call arguments one step may stream.
    pub step_output_bytes: u64,
    /// The longest provider `Retry-After` waited for; a longer one ends the turn with the
    /// provider's error.
    pub max_retry_after_ms: u64,
}

impl Default for Limits {
    /// 30 minutes a turn, 256 steps, 1 MiB a step, a minute's `Retry-After`.
    fn default() -> Self {
        Limits {
            turn_ms: 30 * 60 * 1000,
            max_steps: 256,
            step_output_bytes: 1 << 20,
            max_retry_after_ms: 60_000,
        }
    }
}

impl Limits {
    /// No limit at all.
    pub fn none() -> Self {
        Limits { turn_ms: 0, max_steps: 0, step_output_bytes: 0, max_retry_after_ms: 0 }
    }
}

/// A session's fixed settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Config {
    /// Also the agent id; core-made message ids derive from it.
    pub session_id: String,
    /// e.g. `demo`, `openai`.
    pub provider: String,
    /// The model name sent upstream.
    pub model: String,
    /// The system prompt.
    pub system: Option<String>,
    /// Tools offered to the model.
    pub tools: Vec<ToolSpec>,
    /// The output token limit.
    pub max_tokens: Option<u32>,
    /// Backoff for transient failures.
    pub retry: RetryPolicy,
    /// What no turn may exceed.
    pub limits: Limits,
    /// When the conversation is compacted.
    pub context: ContextPolicy,
    /// Who decides what each step enters.
    #[serde(default)]
    pub step_policy: StepPolicy,
    /// The models a step fails over to, in order, when the one before answers with a transient
    /// error past its retries (`docs/semantics.md`, "Failover").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<ModelRoute>,
}

/// A model of a session's chain: which provider serves it, under which name, with what window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRoute {
    /// e.g. `anthropic`, `openai`.
    pub provider: String,
    /// The model name sent upstream.
    pub model: String,
    /// Its context window, when known (only logged: compaction follows the session's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
}

/// Who decides what a step enters of the input it claimed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepPolicy {
    /// The host: each claim is an [`Output::DecideStep`], answered with [`Input::Decided`].
    #[default]
    Ask,
    /// Everything claimed enters, in order, without asking: the same log as a host that always
    /// answers `Enter` with every id, one call into the core fewer per step.
    EnterAll,
}

/// When the conversation is summarized (`docs/semantics.md`, "Context compaction").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextPolicy {
    /// The model's context window in tokens; unknown, only an overflow compacts.
    pub window: Option<u64>,
    /// The share of the window (in percent) at which the conversation is compacted before a
    /// model call; 0 never compacts under pressure.
    pub compact_at_percent: u8,
}

impl Default for ContextPolicy {
    /// An unknown window, compacting at 80 % of one once it is known.
    fn default() -> Self {
        ContextPolicy { window: None, compact_at_percent: 80 }
    }
}

impl Config {
    /// A config with no tools, no system prompt, the default retry policy and limits, and an
    /// unknown context window.
    pub fn new(session_id: &str, provider: &str, model: &str) -> Self {
        Config {
            session_id: session_id.to_owned(),
            provider: provider.to_owned(),
            model: model.to_owned(),
            system: None,
            tools: Vec::new(),
            max_tokens: None,
            retry: RetryPolicy::default(),
            limits: Limits::default(),
            context: ContextPolicy::default(),
            step_policy: StepPolicy::default(),
            fallbacks: Vec::new(),
        }
    }

    /// The model of route `route`: 0 the session's own, `i` its `i`-th fallback.
    pub fn route(&self, route: u32) -> ModelRoute {
        match route.checked_sub(1) {
            None => ModelRoute {
                provider: self.provider.clone(),
                model: self.model.clone(),
                context_window: self.context.window,
            },
            Some(i) => self.fallbacks[i as usize].clone(),
        }
    }
}

/// The pre-step policy's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum StepDecision {
    /// Enter these claimed message ids, in this order (a subset of the claim).
    Enter(Vec<MessageId>),
    /// End the turn `blocked`; the claimed work is dropped.
    Reject,
}

/// What a tool call returned.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutcome {
    /// The call this answers.
    pub call_id: String,
    /// The result's content.
    pub content: Vec<ContentBlock>,
    /// Set when the tool failed: why (`TIMEOUT`, `DENIED`, ...).
    pub error_code: Option<String>,
    /// Context messages to splice into `next-step` after the batch's results.
    pub context: Vec<Message>,
}

/// One input to [`crate::Agent::handle`].
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    /// `send(message, target, wakeup)`.
    Send {
        /// The message; its id must not be pending.
        message: Message,
        /// The inbox list.
        target: Target,
        /// Whether it wakes an idle agent.
        wakeup: bool,
    },
    /// `cancel(cause, keepInbox)`.
    Cancel {
        /// Who asked.
        cause: CancelCause,
        /// Keep pending work parked instead of clearing it.
        keep_inbox: bool,
    },
    /// Remove a pending item.
    Remove(MessageId),
    /// A caller's clear of the whole inbox, running or idle: one canceled splice per non-empty
    /// list, `next-step` first (disposal clears the parked items of an idle agent with it).
    Clear,
    /// Replace a pending item with a message of the same id.
    Replace(Message),
    /// Move a queued followup to steering.
    Promote(MessageId),
    /// The pre-step policy decided.
    Decided {
        /// From [`Output::DecideStep`].
        decision_id: u64,
        /// The answer.
        decision: StepDecision,
    },
    /// One delta of a model stream.
    ModelChunk {
        /// From [`Output::CallModel`].
        request_id: u64,
        /// The delta.
        chunk: StreamChunk,
    },
    /// The stream ended normally.
    ModelDone(u64),
    /// The request failed.
    ModelFailed {
        /// From [`Output::CallModel`].
        request_id: u64,
        /// What failed.
        error: ModelError,
    },
    /// A tool call finished.
    ToolFinished(ToolOutcome),
    /// A person's or a client's answer to a call that waits for one; refused `unknown-call` when
    /// no call of the running step has that id, `not-waiting` when it waits for no such answer.
    Answer {
        /// The model's call id.
        call_id: String,
        /// The answer.
        answer: CallAnswer,
    },
    /// The timer with this id ([`Output::StartTimer`]'s) fired: a retry's backoff, the turn's
    /// deadline, or a client tool's timeout.
    TimerFired(u64),
    /// After a restart: close an open turn and run accepted followups.
    Recover,
    /// Summarize the conversation now, as maintenance of an idle agent: status stays idle, and
    /// waking input waits until it settles ([`Output::Compacting`]). Refused `session-running` while a
    /// turn runs, `compacting` during one, `nothing-to-compact` when no message would go.
    Compact,
    /// Log an event the host made: it gets the next seq and the input's time, nothing else
    /// changes.
    Log(HostEvent),
}

/// What a waiting call is told.
#[derive(Clone, Debug, PartialEq)]
pub enum CallAnswer {
    /// Run it (`tool/approval approved`).
    Approve {
        /// Who approved, for the log.
        by: Option<String>,
    },
    /// Do not run it: its result is the error `DENIED_BY_USER` with the reason.
    Deny {
        /// Why, for the model.
        reason: Option<String>,
        /// Who denied, for the log.
        by: Option<String>,
    },
    /// A client tool's result.
    Result {
        /// The result content.
        content: Vec<ContentBlock>,
        /// The client says the tool failed (`CLIENT_TOOL_ERROR`).
        is_error: bool,
    },
}

/// What a waiting call waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WaitKind {
    /// A person's approval.
    Approval,
    /// The client's result.
    Client,
}

/// A call of the running step that waits for an answer ([`Input::Answer`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitingCall {
    /// The model's call id.
    pub call_id: String,
    /// The tool.
    pub name: String,
    /// The raw JSON text the model produced.
    pub arguments: String,
    /// What it waits for.
    pub kind: WaitKind,
    /// When it started waiting (epoch ms): its `tool/call`, or for a client tool that needed an
    /// approval, the approval.
    pub since: u64,
}

/// A log-only event the host makes, with its `data` as JSON object text; the core's state never
/// depends on it.
#[derive(Clone, Debug, PartialEq)]
pub enum HostEvent {
    /// `goal/change`: `{goal}` or `{cleared: true, goalId}`.
    GoalChange(String),
    /// `subagent/descriptor`: `{childId, name, parentSessionId, continuable, version}`.
    SubagentDescriptor(String),
}

/// Whole-agent status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Nothing to run.
    Idle,
    /// A turn is running or about to.
    Running,
}

/// A model request: everything the provider needs.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelRequest {
    /// Answers come back keyed by this id.
    pub request_id: u64,
    /// Which model of the chain answers: 0 the session's own, `i` its `i`-th fallback
    /// ([`Config::fallbacks`]).
    pub route: u32,
    /// The model name.
    pub model: String,
    /// The system prompt.
    pub system: Option<String>,
    /// The model-visible history, shared with the core's own.
    pub messages: Vec<Arc<Message>>,
    /// Tools offered.
    pub tools: Vec<ToolSpec>,
    /// The output token limit.
    pub max_tokens: Option<u32>,
}

/// A tool call to perform.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// The model's call id; the outcome comes back keyed by it.
    pub call_id: String,
    /// The tool.
    pub name: String,
    /// The raw JSON text the model produced.
    pub arguments: String,
}

/// An event to append, with the facts about it the host keeps in the same commit, so it never
/// derives them again from the JSON: what it does to receipts, and whether the session rests
/// after it.
#[derive(Clone, Debug, PartialEq)]
pub struct Appended {
    /// The event's JSON envelope.
    pub json: String,
    /// What the event (a splice) does to the receipts of the messages it moves; empty for any
    /// other event.
    pub marks: Vec<ReceiptMark>,
    /// After it the session is at rest: no turn open, no message pending. Recovery at start
    /// passes a session by whose last event says so.
    pub at_rest: bool,
}

/// One thing the host must do, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// Append this event to the log (its `seq` is the one the log must expect), keeping beside
    /// it what the core says of it.
    AppendEvent(Appended),
    /// Whole-agent status changed.
    Status(Status),
    /// Ask the pre-step policy about this claim; answer with [`Input::Decided`].
    DecideStep {
        /// Echo it back.
        decision_id: u64,
        /// The turn.
        turn: u32,
        /// The step the decision is for.
        step: u32,
        /// The claimed messages, in entered order.
        claimed: Vec<Message>,
    },
    /// Start a model request; answer with chunks, then done or failed.
    CallModel(ModelRequest),
    /// Run a tool; answer with [`Input::ToolFinished`].
    CallTool(ToolCall),
    /// Stop this model request; later answers to it are ignored.
    AbortModel(u64),
    /// Answer with [`Input::TimerFired`] after the delay.
    StartTimer {
        /// Echo it back.
        timer_id: u64,
        /// How long to wait.
        delay_ms: u64,
    },
    /// The calls that wait for an answer changed: here are all of them now, in model order.
    Waiting(Vec<WaitingCall>),
    /// A compaction at idle started (`true`) or settled (`false`): the agent stays idle but is
    /// busy in between, so the host keeps it awake and its owners waiting.
    Compacting(bool),
    /// The input was refused and changed nothing.
    Refused {
        /// Why.
        code: RefusalCode,
        /// What was wrong, for a person.
        message: String,
    },
}

/// Why the core refused an input; each changed nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefusalCode {
    /// A queue operation names a message no longer pending (claimed or removed).
    UnknownMessage,
    /// A send reuses the id of a message the session has.
    DuplicateMessageId,
    /// A promote names a message that is not a queued followup.
    NotQueued,
    /// The input itself does not fit (the host could not decode it).
    BadInput,
    /// `compact` while a turn runs: a turn compacts by itself.
    SessionRunning,
    /// `compact` while a compaction runs.
    Compacting,
    /// `compact` with no earlier conversation to summarize.
    NothingToCompact,
    /// An answer names a call the running step does not have.
    UnknownCall,
    /// An answer to a call that waits for no such answer.
    NotWaiting,
}

impl RefusalCode {
    /// The kebab-case code, as the faces answer it.
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalCode::UnknownMessage => "unknown-message",
            RefusalCode::DuplicateMessageId => "duplicate-message-id",
            RefusalCode::NotQueued => "not-queued",
            RefusalCode::BadInput => "bad-input",
            RefusalCode::SessionRunning => "session-running",
            RefusalCode::Compacting => "compacting",
            RefusalCode::NothingToCompact => "nothing-to-compact",
            RefusalCode::UnknownCall => "unknown-call",
            RefusalCode::NotWaiting => "not-waiting",
        }
    }
}
