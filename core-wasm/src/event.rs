//! The session log's event envelope and payloads (`docs/events.md`).
//!
//! An event serializes as `{"type", "seq", "time", "data", "ignorable"?, "sourceEventSeqs"?}` in that
//! order. Payloads are plain structs; the envelope carries the type name.

use std::borrow::Cow;

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::wire::{Message, ModelError, StreamChunk, Target, TurnEndReason, Usage};

/// One durable fact of a session.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Contiguous from 0 within a session.
    pub seq: u64,
    /// Epoch milliseconds, from the input that caused the event.
    pub time: u64,
    /// The payload.
    pub data: EventData,
    /// On messages: the seqs the message was built from.
    pub source_event_seqs: Option<Vec<u64>>,
}

/// `agent/inbox/spliced`: one mutation of an inbox list, as `Array.splice`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Splice {
    /// The list.
    pub target: Target,
    /// Index in that list.
    pub start: u32,
    /// How many items were removed; absent on a pure insertion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_count: Option<u32>,
    /// Items inserted at `start`.
    pub inserted: Vec<Message>,
    /// `canceled` when a caller removed the items; absent on insertions and claims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<SpliceOutcome>,
}

/// Why items left the inbox other than by a claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SpliceOutcome {
    /// Removed, cleared, cancelled or replaced by a caller.
    Canceled,
}

/// `turn/start`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnStart {
    /// Counts from 1 per session.
    pub turn: u32,
}

/// `turn/end`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnEnd {
    /// The turn.
    pub turn: u32,
    /// How it ended.
    pub reason: TurnEndReason,
}

/// `step/start` and `step/end`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepMark {
    /// The turn.
    pub turn: u32,
    /// Counts from 1 within the turn.
    pub step: u32,
}

/// What every request of a session shares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    /// The model name.
    pub model: String,
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// Names of the tools offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// The output token limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

/// Why a `request/header` was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HeaderReason {
    /// The first request of a session.
    Initial,
    /// The first request after a restore.
    Resume,
    /// The header differs from the last one logged.
    Change,
}

/// `request/header`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestHeader {
    /// The header.
    pub header: Header,
    /// Why it was logged.
    pub reason: HeaderReason,
}

/// `request/context`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestContext {
    /// e.g. `demo`, `openai`.
    pub provider: String,
    /// The model name.
    pub model: String,
    /// The model's context window, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Why this model took over the step: the error that ended the previous model's attempts
    /// (the model before it in the session's chain). Absent when the model is the session's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<ModelError>,
}

impl RequestContext {
    /// Whether `other` names the same model with the same window (whatever made it answer).
    pub fn same_model(&self, other: &RequestContext) -> bool {
        (&self.provider, &self.model, self.context_window)
            == (&other.provider, &other.model, other.context_window)
    }
}

/// `assistant/chunk`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AssistantChunk {
    /// The turn.
    pub turn: u32,
    /// The step.
    pub step: u32,
    /// The delta.
    pub chunk: StreamChunk,
}

/// `assistant/message`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// The turn.
    pub turn: u32,
    /// The step.
    pub step: u32,
    /// The message.
    pub message: Message,
    /// Token counts, when the provider sent them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Set on the prefix committed by a cancel mid-stream.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

/// `tool/call`: the call was dispatched.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallEvent {
    /// The turn.
    pub turn: u32,
    /// The step.
    pub step: u32,
    /// The model's call id.
    pub call_id: String,
    /// The tool.
    pub name: String,
    /// The raw JSON text the model produced.
    pub arguments: String,
    /// A client tool's call: the client runs it and posts the result.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub client: bool,
}

/// `tool/approval`: a call waits for a person, or was approved or denied.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolApproval {
    /// The turn.
    pub turn: u32,
    /// The step.
    pub step: u32,
    /// The model's call id.
    pub call_id: String,
    /// Where the approval stands.
    pub state: ApprovalState,
    /// Why it was denied, when the person said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who answered, when the host knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// For `approved`: the arguments the person had it run with instead of the model's (a JSON
    /// object's text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
}

impl ToolApproval {
    /// The approval of `call_id` in `turn`.`step`, now `state`: no reason, answerer or arguments.
    pub fn new(turn: u32, step: u32, call_id: &str, state: ApprovalState) -> ToolApproval {
        let call_id = call_id.to_owned();
        ToolApproval { turn, step, call_id, state, reason: None, by: None, arguments: None }
    }
}

/// Where a call's approval stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalState {
    /// It waits for a person.
    Requested,
    /// It may run.
    Approved,
    /// It does not run: its result is `DENIED_BY_USER`.
    Denied,
}

/// `tool/result`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolResultEvent {
    /// The turn.
    pub turn: u32,
    /// The step.
    pub step: u32,
    /// A tool message with one tool-result block.
    pub message: Message,
    /// Set when the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
}

/// `{name, code}` of a failed tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolError {
    /// The tool.
    pub name: String,
    /// e.g. `UNKNOWN_TOOL`, `ABORTED_BEFORE_DISPATCH`, `TOOL_OUTCOME_UNKNOWN`.
    pub code: String,
}

/// `llm/retry`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmRetry {
    /// The turn.
    pub turn: u32,
    /// The step.
    pub step: u32,
    /// 1 for the first retry.
    pub attempt: u32,
    /// The wait before this attempt.
    pub delay_ms: u64,
    /// The failure being retried.
    pub error: ModelError,
}

/// A payload the host made, kept as the exact JSON text it gave: the core never looks inside,
/// and the log gets the same bytes natively and in wasm (a parsed map would reorder keys).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RawJson(Box<serde_json::value::RawValue>);

impl RawJson {
    /// Checks that `text` is one JSON object.
    pub fn object(text: String) -> Result<RawJson, String> {
        if !text.trim_start().starts_with('{') {
            return Err(format!("host event data must be a JSON object: {text}"));
        }
        serde_json::value::RawValue::from_string(text)
            .map(RawJson)
            .map_err(|e| format!("host event data is not valid JSON: {e}"))
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

/// `context/compaction`: later requests send `summary` in place of every message up to
/// `through_seq`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextCompaction {
    /// The turn that needed it; absent for a compaction at idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// The step that needed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// The summary, a user message with source `compaction`.
    pub summary: Message,
    /// The seq of the last event the summary stands for.
    pub through_seq: u64,
    /// The estimated prompt tokens before.
    pub tokens_before: u64,
    /// The estimated prompt tokens after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_after: Option<u64>,
    /// What set it off.
    pub trigger: CompactionTrigger,
    /// What the summary request cost, as the provider reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// What set a compaction off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompactionTrigger {
    /// The next request would pass the share of the context window the policy allows.
    Pressure,
    /// The provider answered that the request did not fit.
    Overflow,
    /// Someone asked for it at idle.
    Manual,
}

/// `session/end-seed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EndSeed {}

macro_rules! event_types {
    ($($variant:ident($payload:ty) = $name:literal,)*) => {
        /// An event's payload; its variant names the event type.
        #[derive(Clone, Debug, PartialEq, Serialize)]
        #[serde(untagged)]
        pub enum EventData {
            $(
                #[doc = concat!("`", $name, "`")]
                $variant($payload),
            )*
        }

        impl EventData {
            /// Every event `type` there is, in the order of `docs/events.md`.
            pub const TYPE_NAMES: &'static [&'static str] = &[$($name,)*];

            /// The event's `type`.
            pub fn type_name(&self) -> &'static str {
                match self {
                    $(EventData::$variant(_) => $name,)*
                }
            }

            /// The payload of an event of `type_name` from its JSON, read once, straight into
            /// its type.
            fn from_parts(type_name: &str, data: &str) -> Result<Option<Self>, serde_json::Error> {
                match type_name {
                    $($name => serde_json::from_str(data).map(|d| Some(EventData::$variant(d))),)*
                    _ => Ok(None),
                }
            }
        }
    };
}

event_types! {
    InboxSpliced(Splice) = "agent/inbox/spliced",
    TurnStart(TurnStart) = "turn/start",
    TurnEnd(TurnEnd) = "turn/end",
    StepStart(StepMark) = "step/start",
    StepEnd(StepMark) = "step/end",
    UserMessage(Message) = "user/message",
    RequestHeader(RequestHeader) = "request/header",
    RequestContext(RequestContext) = "request/context",
    AssistantChunk(AssistantChunk) = "assistant/chunk",
    AssistantMessage(AssistantMessage) = "assistant/message",
    ToolCall(ToolCallEvent) = "tool/call",
    ToolResult(ToolResultEvent) = "tool/result",
    LlmRetry(LlmRetry) = "llm/retry",
    GoalChange(RawJson) = "goal/change",
    SubagentDescriptor(RawJson) = "subagent/descriptor",
    EndSeed(EndSeed) = "session/end-seed",
    ToolApproval(ToolApproval) = "tool/approval",
    ContextCompaction(ContextCompaction) = "context/compaction",
    BudgetExhausted(RawJson) = "budget/exhausted",
    BudgetResumed(RawJson) = "budget/resumed",
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", self.data.type_name())?;
        map.serialize_entry("seq", &self.seq)?;
        map.serialize_entry("time", &self.time)?;
        map.serialize_entry("data", &self.data)?;
        if let Some(seqs) = &self.source_event_seqs {
            map.serialize_entry("sourceEventSeqs", seqs)?;
        }
        map.end()
    }
}

/// An envelope whose payload is kept as the JSON text it was (borrowed), to be read into its
/// type once the type is known.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEvent<'a> {
    #[serde(rename = "type", borrow)]
    type_name: Cow<'a, str>,
    seq: u64,
    time: u64,
    #[serde(default, borrow)]
    data: Option<&'a RawValue>,
    #[serde(default)]
    ignorable: bool,
    #[serde(default)]
    source_event_seqs: Option<Vec<u64>>,
}

/// Why a logged event could not be read.
#[derive(Debug)]
pub struct EventParseError(pub String);

impl std::fmt::Display for EventParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Event {
    /// The envelope as one line of JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("events always serialize")
    }

    /// The `type` of an envelope, read without its payload (`None` when `json` is not one): for
    /// readers that want a few types out of many, so they parse only those.
    pub fn type_of(json: &str) -> Option<String> {
        #[derive(Deserialize)]
        struct Head {
            #[serde(rename = "type")]
            type_name: String,
        }
        serde_json::from_str::<Head>(json).ok().map(|head| head.type_name)
    }

    /// Reads one envelope. `Ok(None)` is an unknown type marked `ignorable`; an unknown type
    /// without that mark is an error, as `events.md` requires.
    pub fn parse(json: &str) -> Result<Option<Event>, EventParseError> {
        let raw: RawEvent = serde_json::from_str(json)
            .map_err(|e| EventParseError(format!("not an event envelope ({e}): {json}")))?;
        let data = raw.data.map_or("null", RawValue::get);
        let data = EventData::from_parts(&raw.type_name, data).map_err(|e| {
            EventParseError(format!("event {} ({}) has a bad payload: {e}", raw.seq, raw.type_name))
        })?;
        match data {
            Some(data) => Ok(Some(Event {
                seq: raw.seq,
                time: raw.time,
                data,
                source_event_seqs: raw.source_event_seqs,
            })),
            None if raw.ignorable => Ok(None),
            None => Err(EventParseError(format!(
                "event {} has unknown type {:?}; upgrade Airlock to read this log",
                raw.seq, raw.type_name
            ))),
        }
    }
}
