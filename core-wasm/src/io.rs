//! What goes into the core and what comes out: plain data, performed by the host.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::config::ToolSpec;
use crate::inbox::ReceiptMark;
use crate::wire::{CancelCause, ContentBlock, Message, MessageId, ModelError, StreamChunk, Target};

/// The pre-step policy's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum StepDecision {
    /// Enter these claimed message ids, in this order (a subset of the claim).
    Enter(Vec<MessageId>),
    /// End the turn `blocked`; the claimed work is dropped.
    Reject,
    /// Pause the session: log `budget/exhausted` with this data (a JSON object saying why), put
    /// the claimed work back where it was and end the turn `paused`. Until [`Input::Resume`],
    /// waking input queues and starts nothing.
    Pause(String),
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
    /// Resume a paused session: log `budget/resumed` with this data (a JSON object), then take
    /// up where it stopped: a turn paused after its tools ran asks the model again, and queued
    /// work runs. Does nothing when the session is not paused.
    Resume(String),
}

/// What a waiting call is told.
#[derive(Clone, Debug, PartialEq)]
pub enum CallAnswer {
    /// Run it (`tool/approval approved`).
    Approve {
        /// Who approved, for the log.
        by: Option<String>,
        /// Arguments to run it with instead of the model's (a JSON object's text): logged on
        /// `tool/approval`, and said in the call's result, so the model knows what ran.
        arguments: Option<String>,
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
    /// ([`crate::Config::fallbacks`]).
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
    /// After it the session is at rest: no turn open, no message pending (or paused, when what
    /// is pending waits for a resume). Recovery at start
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
