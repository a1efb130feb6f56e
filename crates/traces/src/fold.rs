//! One session's log folded into spans by the OpenTelemetry GenAI conventions: a turn is an
//! `invoke_agent` span, each step's model call a `chat` span and each tool call an
//! `execute_tool` span, both children of the turn's. Every time is an event's time, every id is
//! derived from the log ([`crate::ids`]), so folding the same events gives the same spans.
//!
//! A span is handed out when it ends: a call at its `tool/result`, a model call at its
//! `assistant/message` (or at the turn's end when it gave none), the turn at `turn/end`.

use std::collections::HashMap;
use std::sync::Arc;

use airlock_core::{
    ApprovalState, ContentBlock, Event, EventData, FinishReason, Message, StreamChunk,
    TurnEndReason, Usage,
};
use opentelemetry::trace::{Link, SpanContext, SpanId, SpanKind, Status, TraceId};
use opentelemetry::{InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::trace::SpanData;

use crate::calls::{Calls, Parent};
use crate::ids;
use crate::spans::{
    Built, add_usage, blocks_json, finish_reason, message_json, span, span_event, usage_attributes,
};

/// The agent name of a session nothing names otherwise.
const AGENT: &str = "airlock";

/// What the fold needs besides the events.
pub struct Settings {
    /// Message contents (inputs, outputs, tool arguments and results) go into attributes.
    pub capture_content: bool,
    /// The scope every span names.
    pub scope: InstrumentationScope,
}

/// One session's log, as far as its open spans go.
pub struct SessionTrace {
    session: Arc<str>,
    agent: String,
    /// The model the last `request/header` asked for.
    requested: Option<String>,
    /// The provider and model the last `request/context` named.
    answering: Option<(String, String)>,
    turn: Option<Turn>,
    step: Option<Step>,
    calls: HashMap<String, Call>,
    /// The seq of the next event expected.
    pub next_seq: u64,
}

struct Turn {
    number: u64,
    start: u64,
    trace: TraceId,
    parent: Option<SpanContext>,
    /// Whether a span of the turn went out: its trace is settled from then on.
    settled: bool,
    links: Vec<Link>,
    usage: Usage,
    input: Vec<serde_json::Value>,
    output: Option<serde_json::Value>,
}

struct Step {
    number: u64,
    start: u64,
    events: Vec<opentelemetry::trace::Event>,
    finish: Option<FinishReason>,
}

struct Call {
    span: SpanId,
    start: u64,
    name: String,
    arguments: String,
    events: Vec<opentelemetry::trace::Event>,
}

impl SessionTrace {
    /// A session whose log is read from `next_seq` on.
    pub fn new(session: Arc<str>, next_seq: u64) -> SessionTrace {
        SessionTrace {
            session,
            agent: AGENT.to_owned(),
            requested: None,
            answering: None,
            turn: None,
            step: None,
            calls: HashMap::new(),
            next_seq,
        }
    }

    /// Takes what `earlier` (a fold of the same session that lost track of it) knew of the
    /// session as a whole: its agent's name and the models last named.
    pub fn continue_from(&mut self, earlier: &SessionTrace) {
        self.agent.clone_from(&earlier.agent);
        self.requested.clone_from(&earlier.requested);
        self.answering.clone_from(&earlier.answering);
    }

    /// The session.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The session, shared.
    pub fn session_arc(&self) -> Arc<str> {
        self.session.clone()
    }

    /// Whether no span of it is open.
    pub fn idle(&self) -> bool {
        self.turn.is_none() && self.calls.is_empty()
    }

    /// Folds the event `json`, handing out the spans it ends.
    pub fn fold(&mut self, json: &str, calls: &mut Calls, s: &Settings, out: &mut Vec<SpanData>) {
        // A stream's chunks matter only for how it finished: the others are not parsed.
        let chunk = json.starts_with(r#"{"type":"assistant/chunk""#);
        if chunk && !json.contains(r#""type":"finish""#) {
            self.next_seq += 1;
            return;
        }
        if let Ok(Some(event)) = Event::parse(json) {
            self.next_seq = event.seq + 1;
            self.event(event, calls, s, out);
        } else {
            self.next_seq += 1;
        }
    }

    fn event(&mut self, event: Event, calls: &mut Calls, s: &Settings, out: &mut Vec<SpanData>) {
        let time = event.time;
        match event.data {
            EventData::TurnStart(start) => {
                let left_open = Status::error("the turn was left open");
                self.end_turn(time, left_open, "unknown", s, out);
                let number = u64::from(start.turn);
                self.turn = Some(Turn {
                    number,
                    start: time,
                    trace: ids::turn_trace(&self.session, number),
                    parent: None,
                    settled: false,
                    links: Vec::new(),
                    usage: Usage::default(),
                    input: Vec::new(),
                    output: None,
                });
            }
            EventData::UserMessage(message) => self.entered(&message, calls, s),
            EventData::StepStart(mark) => {
                let number = u64::from(mark.step);
                self.step = Some(Step { number, start: time, events: Vec::new(), finish: None });
            }
            EventData::RequestHeader(header) => self.requested = Some(header.header.model),
            EventData::RequestContext(context) => {
                if let (Some(error), Some(step)) = (&context.failover, &mut self.step) {
                    let attributes = vec![
                        KeyValue::new("error.type", error.code.clone()),
                        KeyValue::new("airlock.failover.provider", context.provider.clone()),
                        KeyValue::new("airlock.failover.model", context.model.clone()),
                    ];
                    step.events.push(span_event("airlock.failover", time, attributes));
                }
                self.answering = Some((context.provider, context.model));
            }
            EventData::LlmRetry(retry) => {
                if let Some(step) = &mut self.step {
                    let attributes = vec![
                        KeyValue::new("error.type", retry.error.code),
                        KeyValue::new("airlock.retry.attempt", i64::from(retry.attempt)),
                        KeyValue::new("airlock.retry.delay_ms", retry.delay_ms as i64),
                    ];
                    step.events.push(span_event("airlock.retry", time, attributes));
                }
            }
            EventData::AssistantChunk(chunk) => {
                if let (StreamChunk::Finish { reason }, Some(step)) = (chunk.chunk, &mut self.step)
                {
                    step.finish = Some(reason);
                }
            }
            EventData::AssistantMessage(answer) => {
                let output = s.capture_content.then(|| message_json(&answer.message));
                let usage = answer.usage.unwrap_or_default();
                if let Some(turn) = &mut self.turn {
                    add_usage(&mut turn.usage, &usage);
                    turn.output.clone_from(&output);
                }
                self.end_step(time, Some((&answer.message.id, usage, output)), s, out);
            }
            EventData::ToolCall(call) => {
                let span = ids::call_span(&self.session, event.seq);
                if let Some(context) = self.context_of(span) {
                    let name = serde_json::from_str::<serde_json::Value>(&call.arguments)
                        .ok()
                        .and_then(|a| a["name"].as_str().map(str::to_owned));
                    calls.remember(&self.session, &call.call_id, Parent { span: context, name });
                }
                let (name, arguments) = (call.name, call.arguments);
                let open = Call { span, start: time, name, arguments, events: Vec::new() };
                self.calls.insert(call.call_id, open);
            }
            EventData::ToolApproval(approval) => {
                if let Some(call) = self.calls.get_mut(&approval.call_id) {
                    let state = match approval.state {
                        ApprovalState::Requested => "requested",
                        ApprovalState::Approved => "approved",
                        ApprovalState::Denied => "denied",
                    };
                    let mut attributes = vec![KeyValue::new("airlock.approval.state", state)];
                    if let Some(by) = approval.by {
                        attributes.push(KeyValue::new("airlock.approval.by", by));
                    }
                    call.events.push(span_event("airlock.approval", time, attributes));
                }
            }
            EventData::ToolResult(result) => {
                let Some(ContentBlock::ToolResult { tool_call_id, content, .. }) =
                    result.message.content.first()
                else {
                    return;
                };
                if let Some(call) = self.calls.remove(tool_call_id) {
                    let code = result.error.map(|e| e.code);
                    let output = s.capture_content.then(|| blocks_json(content));
                    self.end_call(call, tool_call_id, time, code, output, s, out);
                }
            }
            EventData::TurnEnd(end) => {
                let reason = serde_json::to_value(&end.reason).unwrap_or_default();
                let status = match &end.reason {
                    TurnEndReason::Error { error } => {
                        Status::error(format!("{}: {}", error.code, error.message))
                    }
                    _ => Status::Unset,
                };
                let kind = reason["kind"].as_str().unwrap_or("unknown").to_owned();
                self.end_turn(time, status, &kind, s, out);
            }
            EventData::SubagentDescriptor(raw) => {
                let descriptor: serde_json::Value =
                    serde_json::from_str(raw.get()).unwrap_or_default();
                if let Some(name) = descriptor["name"].as_str() {
                    self.agent = name.to_owned();
                }
            }
            _ => {}
        }
    }

    /// A message entered into the conversation: the turn's first names where the turn belongs
    /// (a caller's `traceparent`, or the parent's tool call that gave a child its work).
    fn entered(&mut self, message: &Message, calls: &Calls, s: &Settings) {
        let Some(turn) = &mut self.turn else { return };
        if s.capture_content {
            turn.input.push(message_json(message));
        }
        let detail = |name: &str| message.source.details.get(name).and_then(|v| v.as_str());
        if let Some(request) = detail("request").and_then(|r| ids::parse_traceparent(r, None)) {
            turn.links.push(Link::with_context(request));
        }
        let from_call = detail("parentSessionId")
            .zip(detail("parentCallId"))
            .and_then(|(session, call)| calls.get(session, call).cloned());
        let from_caller = detail("traceparent").and_then(|t| ids::parse_traceparent(t, None));
        let parent = match (from_call, from_caller) {
            (Some(call), _) => {
                if let Some(name) = call.name {
                    self.agent = name;
                }
                Some(call.span)
            }
            (None, caller) => caller,
        };
        let Some(parent) = parent else { return };
        if turn.parent.is_none() && !turn.settled {
            turn.trace = parent.trace_id();
            turn.parent = Some(parent);
        } else {
            turn.links.push(Link::with_context(parent));
        }
    }

    /// The context of a span of the open turn with id `span`.
    fn context_of(&self, span: SpanId) -> Option<SpanContext> {
        self.turn.as_ref().map(|turn| ids::context(turn.trace, span))
    }

    fn base_attributes(&self) -> Vec<KeyValue> {
        let mut attributes =
            vec![KeyValue::new("gen_ai.conversation.id", self.session.to_string())];
        if let Some((provider, _)) = &self.answering {
            attributes.push(KeyValue::new("gen_ai.provider.name", provider.clone()));
        }
        attributes
    }

    /// Ends the open step's model call at `time`: `answer` is its message id, usage and
    /// (captured) output, none when the call gave no message.
    fn end_step(
        &mut self,
        time: u64,
        answer: Option<(&str, Usage, Option<serde_json::Value>)>,
        s: &Settings,
        out: &mut Vec<SpanData>,
    ) {
        let Some(step) = self.step.take() else { return };
        let Some(turn) = &mut self.turn else { return };
        turn.settled = true;
        let (turn_number, trace, turn_span) =
            (turn.number, turn.trace, ids::turn_span(&self.session, turn.number));
        let model = self.answering.as_ref().map(|(_, model)| model.clone());
        let requested = self.requested.clone().or_else(|| model.clone());
        let mut attributes = self.base_attributes();
        attributes.push(KeyValue::new("gen_ai.operation.name", "chat"));
        attributes.push(KeyValue::new("airlock.step", step.number as i64));
        if let Some(requested) = &requested {
            attributes.push(KeyValue::new("gen_ai.request.model", requested.clone()));
        }
        if let Some(model) = &model {
            attributes.push(KeyValue::new("gen_ai.response.model", model.clone()));
        }
        let status = match &answer {
            Some((id, usage, output)) => {
                attributes.push(KeyValue::new("gen_ai.response.id", id.to_string()));
                attributes.extend(usage_attributes(usage));
                if let Some(output) = output {
                    attributes.push(KeyValue::new("gen_ai.output.messages", output.to_string()));
                }
                Status::Unset
            }
            None => Status::error("the model call gave no answer"),
        };
        if let Some(finish) = step.finish {
            let reason = finish_reason(finish);
            attributes.push(KeyValue::new(
                "gen_ai.response.finish_reasons",
                Value::Array(vec![opentelemetry::StringValue::from(reason)].into()),
            ));
        }
        let name = requested.map_or_else(|| "chat".to_owned(), |model| format!("chat {model}"));
        out.push(span(Built {
            context: ids::context(trace, ids::step_span(&self.session, turn_number, step.number)),
            parent: turn_span,
            kind: SpanKind::Client,
            name,
            start: step.start,
            end: time,
            attributes,
            events: step.events,
            links: Vec::new(),
            status,
            scope: s.scope.clone(),
        }));
    }

    #[allow(clippy::too_many_arguments)]
    fn end_call(
        &mut self,
        call: Call,
        call_id: &str,
        time: u64,
        code: Option<String>,
        output: Option<serde_json::Value>,
        s: &Settings,
        out: &mut Vec<SpanData>,
    ) {
        let Some(turn) = &mut self.turn else { return };
        turn.settled = true;
        let (trace, turn_span) = (turn.trace, ids::turn_span(&self.session, turn.number));
        let mut attributes = self.base_attributes();
        attributes.extend([
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", call.name.clone()),
            KeyValue::new("gen_ai.tool.call.id", call_id.to_owned()),
            KeyValue::new("gen_ai.tool.type", "function"),
            KeyValue::new("airlock.tool.outcome", code.clone().unwrap_or_else(|| "ok".into())),
        ]);
        if s.capture_content {
            attributes.push(KeyValue::new("gen_ai.tool.call.arguments", call.arguments));
            if let Some(output) = output {
                attributes.push(KeyValue::new("gen_ai.tool.call.result", output.to_string()));
            }
        }
        let status = match code {
            Some(code) => {
                attributes.push(KeyValue::new("error.type", code.clone()));
                Status::error(code)
            }
            None => Status::Unset,
        };
        out.push(span(Built {
            context: ids::context(trace, call.span),
            parent: turn_span,
            kind: SpanKind::Internal,
            name: format!("execute_tool {}", call.name),
            start: call.start,
            end: time,
            attributes,
            events: call.events,
            links: Vec::new(),
            status,
            scope: s.scope.clone(),
        }));
    }

    /// Ends the open turn at `time` (and whatever of it is still open) with `status`; `reason` is
    /// its end reason's kind.
    fn end_turn(
        &mut self,
        time: u64,
        status: Status,
        reason: &str,
        s: &Settings,
        out: &mut Vec<SpanData>,
    ) {
        self.end_step(time, None, s, out);
        let open: Vec<(String, Call)> = self.calls.drain().collect();
        for (call_id, call) in open {
            let code = Some("TURN_ENDED".to_owned());
            self.end_call(call, &call_id, time, code, None, s, out);
        }
        let Some(turn) = self.turn.take() else { return };
        let mut attributes = self.base_attributes();
        attributes.extend([
            KeyValue::new("gen_ai.operation.name", "invoke_agent"),
            KeyValue::new("gen_ai.agent.name", self.agent.clone()),
            KeyValue::new("airlock.turn", turn.number as i64),
            KeyValue::new("airlock.turn.end_reason", reason.to_owned()),
        ]);
        if let Some(requested) = &self.requested {
            attributes.push(KeyValue::new("gen_ai.request.model", requested.clone()));
        }
        attributes.extend(usage_attributes(&turn.usage));
        if s.capture_content {
            let input = serde_json::Value::Array(turn.input);
            attributes.push(KeyValue::new("gen_ai.input.messages", input.to_string()));
            if let Some(output) = turn.output {
                attributes.push(KeyValue::new("gen_ai.output.messages", output.to_string()));
            }
        }
        let context = ids::context(turn.trace, ids::turn_span(&self.session, turn.number));
        let mut built = Built {
            context,
            parent: SpanId::INVALID,
            kind: SpanKind::Internal,
            name: format!("invoke_agent {}", self.agent),
            start: turn.start,
            end: time,
            attributes,
            events: Vec::new(),
            links: turn.links,
            status,
            scope: s.scope.clone(),
        };
        let remote = turn.parent.as_ref().is_some_and(SpanContext::is_remote);
        if let Some(parent) = turn.parent {
            built.parent = parent.span_id();
        }
        let mut data = span(built);
        data.parent_span_is_remote = remote;
        out.push(data);
    }
}
