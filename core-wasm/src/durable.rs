//! The durable state of a session: exactly what its log says, nothing process-local.
//!
//! The live agent changes this state only by folding the events it emits, and `restore` folds a
//! recorded log through the same [`Durable::fold`], so a restored session equals the live one.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::event::{ApprovalState, Event, EventData, Header, RequestContext};
use crate::inbox::Inbox;
use crate::io::{Appended, WaitKind};
use crate::wire::{ContentBlock, Message};

/// Everything the log determines.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Durable {
    /// The seq the next event gets.
    pub next_seq: u64,
    /// The time of the last event.
    pub last_time: u64,
    /// The last turn number started.
    pub turns: u32,
    /// The model-visible messages, in log order: after a compaction, its summary first. They
    /// are shared, not copied, by every model request that sends them.
    pub history: Vec<Arc<Message>>,
    /// For each message of `history`, the seq of the last event it stands for: the event that
    /// logged it, or for a summary the compaction's `throughSeq`.
    pub history_seqs: Vec<u64>,
    /// The prompt size the provider last reported.
    pub prompt: Option<PromptMark>,
    /// Pending input.
    pub inbox: Inbox,
    /// The last `request/header` logged.
    pub header: Option<Header>,
    /// The last `request/context` logged.
    pub context: Option<RequestContext>,
    /// A turn without its `turn/end`.
    pub open_turn: Option<OpenTurn>,
    /// `budget/exhausted` without a `budget/resumed` after it: waking input starts nothing.
    #[serde(default)]
    pub paused: bool,
}

/// The prompt tokens a provider counted for a request, and how many leading messages of the
/// history that request sent: what came after is estimated.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PromptMark {
    /// The provider's count.
    pub tokens: u64,
    /// The messages it covers.
    pub messages: usize,
}

/// A turn the log has not closed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenTurn {
    /// Its number.
    pub turn: u32,
    /// Its open step, if any.
    pub step: Option<OpenStep>,
}

/// A step the log has not closed, and the state of its tool calls.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenStep {
    /// Its number.
    pub step: u32,
    /// Tool calls of the step's assistant message, in model order: `(call id, name)`.
    pub calls: Vec<(String, String)>,
    /// Calls with a `tool/call` event.
    pub dispatched: BTreeSet<String>,
    /// Calls with a `tool/result` event.
    pub answered: BTreeSet<String>,
    /// Client-tool calls (their `tool/call` says so).
    pub client: BTreeSet<String>,
    /// Calls that wait for a person's approval or the client's result.
    pub waiting: BTreeMap<String, Wait>,
    /// Calls a person approved with other arguments than the model's: call id → those.
    #[serde(default)]
    pub edited: BTreeMap<String, String>,
}

/// What a call waits for, and since when.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Wait {
    /// An approval or a client's result.
    pub kind: WaitKind,
    /// The time of the event it started waiting at.
    pub since: u64,
}

impl Durable {
    /// Folds an event the core logs and answers it as the host appends it: with what it does to
    /// receipts and whether the session is at rest after it (no turn open, nothing pending or
    /// paused).
    pub fn append(&mut self, event: &Event) -> Appended {
        let marks = match &event.data {
            EventData::InboxSpliced(splice) => self.inbox.marks(splice, self.turns),
            _ => Vec::new(),
        };
        self.fold(event);
        let at_rest =
            self.open_turn.is_none() && (self.paused || self.inbox.pending().next().is_none());
        Appended { json: event.to_json(), marks, at_rest }
    }

    /// Folds one event, the only way durable state changes.
    pub fn fold(&mut self, event: &Event) {
        self.next_seq = event.seq + 1;
        self.last_time = event.time;
        match &event.data {
            EventData::InboxSpliced(splice) => {
                self.inbox.apply(splice);
            }
            EventData::TurnStart(start) => {
                self.turns = start.turn;
                self.open_turn = Some(OpenTurn { turn: start.turn, step: None });
            }
            EventData::StepStart(mark) => {
                if let Some(open) = &mut self.open_turn {
                    open.step = Some(OpenStep::new(mark.step));
                }
            }
            EventData::UserMessage(message) => self.remember(message, event.seq),
            EventData::RequestHeader(header) => self.header = Some(header.header.clone()),
            EventData::RequestContext(context) => self.context = Some(context.clone()),
            EventData::AssistantMessage(assistant) => {
                if let Some(step) = self.open_step() {
                    step.calls = tool_calls(&assistant.message);
                }
                if let Some(usage) = &assistant.usage {
                    let messages = self.history.len();
                    self.prompt = Some(PromptMark { tokens: usage.input_tokens, messages });
                }
                self.remember(&assistant.message, event.seq);
            }
            EventData::ToolCall(call) => {
                if let Some(step) = self.open_step() {
                    step.dispatched.insert(call.call_id.clone());
                    if call.client {
                        step.client.insert(call.call_id.clone());
                        step.wait(&call.call_id, WaitKind::Client, event.time);
                    }
                }
            }
            EventData::ToolApproval(approval) => {
                if let Some(step) = self.open_step() {
                    let id = &approval.call_id;
                    match approval.state {
                        ApprovalState::Requested => step.wait(id, WaitKind::Approval, event.time),
                        ApprovalState::Approved if step.client.contains(id) => {
                            step.wait(id, WaitKind::Client, event.time);
                        }
                        ApprovalState::Approved | ApprovalState::Denied => {
                            step.waiting.remove(id);
                        }
                    }
                    if let Some(arguments) = &approval.arguments {
                        step.edited.insert(id.clone(), arguments.clone());
                    }
                }
            }
            EventData::ToolResult(result) => {
                if let Some(step) = self.open_step() {
                    for block in &result.message.content {
                        if let ContentBlock::ToolResult { tool_call_id, .. } = block {
                            step.waiting.remove(tool_call_id);
                            step.answered.insert(tool_call_id.clone());
                        }
                    }
                }
                self.remember(&result.message, event.seq);
            }
            EventData::ContextCompaction(compaction) => {
                let through = compaction.through_seq;
                let gone = self.history_seqs.partition_point(|&seq| seq <= through);
                self.history.splice(..gone, [Arc::new(compaction.summary.clone())]);
                self.history_seqs.splice(..gone, [through]);
                self.prompt = None;
            }
            EventData::StepEnd(_) => {
                if let Some(open) = &mut self.open_turn {
                    open.step = None;
                }
            }
            EventData::TurnEnd(_) => self.open_turn = None,
            EventData::BudgetExhausted(_) => self.paused = true,
            EventData::BudgetResumed(_) => self.paused = false,
            EventData::AssistantChunk(_)
            | EventData::LlmRetry(_)
            | EventData::GoalChange(_)
            | EventData::SubagentDescriptor(_)
            | EventData::EndSeed(_) => {}
        }
    }

    fn remember(&mut self, message: &Message, seq: u64) {
        self.history.push(Arc::new(message.clone()));
        self.history_seqs.push(seq);
    }

    fn open_step(&mut self) -> Option<&mut OpenStep> {
        self.open_turn.as_mut().and_then(|open| open.step.as_mut())
    }
}

impl OpenStep {
    fn new(step: u32) -> OpenStep {
        OpenStep {
            step,
            calls: Vec::new(),
            dispatched: BTreeSet::new(),
            answered: BTreeSet::new(),
            client: BTreeSet::new(),
            waiting: BTreeMap::new(),
            edited: BTreeMap::new(),
        }
    }

    fn wait(&mut self, call_id: &str, kind: WaitKind, since: u64) {
        self.waiting.insert(call_id.to_owned(), Wait { kind, since });
    }
}

/// `(call id, name)` of each tool-call block, in model order.
pub fn tool_calls(message: &Message) -> Vec<(String, String)> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolCall { id, name, .. } => Some((id.clone(), name.clone())),
            _ => None,
        })
        .collect()
}
