//! Transcripts: a log's events in, the exact spans out.

use std::sync::Arc;

use opentelemetry::trace::{SpanKind, Status};
use opentelemetry::{InstrumentationScope, Value};
use opentelemetry_sdk::trace::SpanData;
use serde_json::{Value as Json, json};

use crate::calls::Calls;
use crate::fold::{SessionTrace, Settings};
use crate::ids;

/// A session's log, written as the core writes it: seq from 0, one millisecond apart from 1000.
struct Log {
    trace: SessionTrace,
    seq: u64,
    spans: Vec<SpanData>,
}

impl Log {
    fn new(session: &str) -> Log {
        Log { trace: SessionTrace::new(Arc::from(session), 0), seq: 0, spans: Vec::new() }
    }

    fn time(seq: u64) -> u64 {
        1000 + seq
    }

    fn add(&mut self, kind: &str, data: Json, calls: &mut Calls, capture: bool) {
        let mut event =
            json!({"type": kind, "seq": self.seq, "time": Log::time(self.seq), "data": data});
        if kind == "assistant/message" {
            event["sourceEventSeqs"] = json!([]);
        }
        let settings = Settings {
            capture_content: capture,
            scope: InstrumentationScope::builder("airlock").build(),
        };
        self.trace.fold(&event.to_string(), calls, &settings, &mut self.spans);
        self.seq += 1;
    }
}

fn user(text: &str, source: Json) -> Json {
    json!({"id": format!("m-{text}"), "role": "user", "content": [{"type": "text", "text": text}], "source": source})
}

/// A turn with one tool call, the way the demo model runs it: `user` entered at its start.
fn tool_turn(
    log: &mut Log,
    turn: u64,
    user: Json,
    tool: &str,
    arguments: &str,
    calls: &mut Calls,
    capture: bool,
) {
    let chunk = |reason: &str| json!({"turn": turn, "step": 1, "chunk": {"type": "finish", "reason": reason}});
    let steps = [
        ("turn/start", json!({"turn": turn})),
        ("step/start", json!({"turn": turn, "step": 1})),
        ("user/message", user),
        ("request/header", json!({"header": {"model": "demo"}, "reason": "initial"})),
        ("request/context", json!({"provider": "demo", "model": "demo"})),
        ("assistant/chunk", chunk("tool-calls")),
        (
            "assistant/message",
            json!({"turn": turn, "step": 1, "message": {"id": "s:6", "role": "assistant", "content": [{"type": "tool-call", "id": "c1", "name": tool, "arguments": arguments}], "source": {"kind": "model"}}, "usage": {"inputTokens": 10, "outputTokens": 4, "cacheReadTokens": 2}}),
        ),
        (
            "tool/call",
            json!({"turn": turn, "step": 1, "callId": "c1", "name": tool, "arguments": arguments}),
        ),
    ];
    for (kind, data) in steps {
        log.add(kind, data, calls, capture);
    }
}

fn finish_tool_turn(log: &mut Log, turn: u64, calls: &mut Calls, capture: bool) {
    let steps = [
        (
            "tool/result",
            json!({"turn": turn, "step": 1, "message": {"id": "s:8", "role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "content": [{"type": "text", "text": "42"}]}], "source": {"kind": "tool"}}}),
        ),
        ("step/end", json!({"turn": turn, "step": 1})),
        ("step/start", json!({"turn": turn, "step": 2})),
        (
            "llm/retry",
            json!({"turn": turn, "step": 2, "attempt": 1, "delayMs": 250, "error": {"code": "RATE_LIMIT", "message": "slow down"}}),
        ),
        (
            "assistant/message",
            json!({"turn": turn, "step": 2, "message": {"id": "s:12", "role": "assistant", "content": [{"type": "text", "text": "the answer is 42"}], "source": {"kind": "model"}}, "usage": {"inputTokens": 20, "outputTokens": 6}}),
        ),
        ("step/end", json!({"turn": turn, "step": 2})),
        ("turn/end", json!({"turn": turn, "reason": {"kind": "completed"}})),
    ];
    for (kind, data) in steps {
        log.add(kind, data, calls, capture);
    }
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| &kv.value)
}

fn int(span: &SpanData, key: &str) -> i64 {
    match attribute(span, key) {
        Some(Value::I64(value)) => *value,
        other => panic!("{key} of {}: {other:?}", span.name),
    }
}

fn text(span: &SpanData, key: &str) -> String {
    attribute(span, key)
        .map(|v| v.as_str().into_owned())
        .unwrap_or_else(|| panic!("{key} of {}", span.name))
}

/// One session's turn that calls `echo` once, its contents captured or not.
fn echo_turn(capture: bool) -> Log {
    let mut calls = Calls::default();
    let mut log = Log::new("s");
    let asked = user("hi", json!({"kind": "user"}));
    tool_turn(&mut log, 1, asked, "echo", r#"{"text":"42"}"#, &mut calls, capture);
    finish_tool_turn(&mut log, 1, &mut calls, capture);
    log
}

fn millis(time: std::time::SystemTime) -> u64 {
    time.duration_since(std::time::SystemTime::UNIX_EPOCH).unwrap().as_millis() as u64
}

#[test]
fn a_tool_turn_is_one_invoke_agent_span_with_chat_and_execute_tool_children_timed_by_the_log() {
    let log = echo_turn(false);

    let names: Vec<&str> = log.spans.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(names, ["chat demo", "execute_tool echo", "chat demo", "invoke_agent airlock"]);
    let [chat1, tool, chat2, turn] = &log.spans[..] else { unreachable!() };
    let trace = ids::turn_trace("s", 1);
    assert!(log.spans.iter().all(|s| s.span_context.trace_id() == trace), "one trace");
    assert_eq!(turn.span_context.span_id(), ids::turn_span("s", 1));
    assert_eq!(turn.parent_span_id, opentelemetry::trace::SpanId::INVALID, "a root");
    for child in [chat1, tool, chat2] {
        assert_eq!(
            child.parent_span_id,
            turn.span_context.span_id(),
            "{} under the turn",
            child.name
        );
    }
    // Times are the events' times: the turn from turn/start (seq 0) to turn/end (seq 14).
    assert_eq!((millis(turn.start_time), millis(turn.end_time)), (Log::time(0), Log::time(14)));
    assert_eq!((millis(chat1.start_time), millis(chat1.end_time)), (Log::time(1), Log::time(6)));
    assert_eq!((millis(tool.start_time), millis(tool.end_time)), (Log::time(7), Log::time(8)));

    assert_eq!(turn.span_kind, SpanKind::Internal);
    assert_eq!(text(turn, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(text(turn, "gen_ai.conversation.id"), "s");
    assert_eq!(text(turn, "gen_ai.agent.name"), "airlock");
    assert_eq!(text(turn, "airlock.turn.end_reason"), "completed");
    assert_eq!(
        (int(turn, "gen_ai.usage.input_tokens"), int(turn, "gen_ai.usage.output_tokens")),
        (30, 10)
    );

    assert_eq!(chat1.span_kind, SpanKind::Client);
    assert_eq!(text(chat1, "gen_ai.operation.name"), "chat");
    assert_eq!(text(chat1, "gen_ai.provider.name"), "demo");
    assert_eq!(text(chat1, "gen_ai.request.model"), "demo");
    assert_eq!(text(chat1, "gen_ai.response.model"), "demo");
    assert_eq!(text(chat1, "gen_ai.response.id"), "s:6");
    assert_eq!(int(chat1, "gen_ai.usage.input_tokens"), 10);
    assert_eq!(int(chat1, "gen_ai.usage.cache_read.input_tokens"), 2);
    assert!(text(chat1, "gen_ai.response.finish_reasons").contains("tool_calls"));
    assert_eq!(chat2.events.len(), 1, "the retry is an event of its model call");
    assert_eq!(chat2.events[0].name, "airlock.retry");

    assert_eq!(text(tool, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(text(tool, "gen_ai.tool.name"), "echo");
    assert_eq!(text(tool, "gen_ai.tool.call.id"), "c1");
    assert_eq!(text(tool, "airlock.tool.outcome"), "ok");
    assert_eq!(tool.status, Status::Unset);

    for span in &log.spans {
        for key in ["gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments"]
        {
            assert!(attribute(span, key).is_none(), "{} carries {key} without capture", span.name);
        }
    }
}

#[test]
fn contents_are_captured_only_when_asked() {
    let log = echo_turn(true);
    let turn = log.spans.last().unwrap();
    assert!(text(turn, "gen_ai.input.messages").contains("\"content\":\"hi\""));
    assert!(text(turn, "gen_ai.output.messages").contains("the answer is 42"));
    assert_eq!(text(&log.spans[1], "gen_ai.tool.call.arguments"), r#"{"text":"42"}"#);
    assert!(text(&log.spans[1], "gen_ai.tool.call.result").contains("42"));
}

#[test]
fn a_callers_traceparent_becomes_the_turns_parent() {
    let mut calls = Calls::default();
    let mut log = Log::new("s");
    let caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let request = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
    let message = user("hi", json!({"kind": "user", "traceparent": caller, "request": request}));
    tool_turn(&mut log, 1, message, "echo", "{}", &mut calls, false);
    finish_tool_turn(&mut log, 1, &mut calls, false);
    let turn = log.spans.last().unwrap();
    assert_eq!(turn.span_context.trace_id().to_string(), "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(turn.parent_span_id.to_string(), "b7ad6b7169203331");
    assert!(turn.parent_span_is_remote);
    let links: Vec<String> =
        turn.links.iter().map(|l| l.span_context.span_id().to_string()).collect();
    assert_eq!(links, ["00f067aa0ba902b7"], "the turn links to the request's span");
    assert!(log.spans.iter().all(|s| s.span_context.trace_id() == turn.span_context.trace_id()));
}

#[test]
fn a_subagents_turn_goes_under_the_parents_tool_call_and_takes_the_name_it_was_given() {
    let mut calls = Calls::default();
    let mut parent = Log::new("parent");
    let arguments = r#"{"name":"researcher","prompt":"look"}"#;
    tool_turn(
        &mut parent,
        1,
        user("go", json!({"kind": "user"})),
        "agent",
        arguments,
        &mut calls,
        false,
    );

    let mut child = Log::new("child");
    let from = json!({"kind": "user", "parentSessionId": "parent", "parentCallId": "c1"});
    tool_turn(&mut child, 1, user("look", from), "echo", "{}", &mut calls, false);
    finish_tool_turn(&mut child, 1, &mut calls, false);
    finish_tool_turn(&mut parent, 1, &mut calls, false);

    let child_turn = child.spans.last().unwrap();
    let call = parent.spans.iter().find(|s| s.name == "execute_tool agent").unwrap();
    assert_eq!(child_turn.name, "invoke_agent researcher");
    assert_eq!(child_turn.parent_span_id, call.span_context.span_id());
    assert_eq!(child_turn.span_context.trace_id(), call.span_context.trace_id());
    assert!(!child_turn.parent_span_is_remote);
    assert_eq!(text(child_turn, "gen_ai.conversation.id"), "child");
}

#[test]
fn a_failed_turn_ends_its_open_spans_as_errors() {
    let mut calls = Calls::default();
    let mut log = Log::new("s");
    for (kind, data) in [
        ("turn/start", json!({"turn": 1})),
        ("step/start", json!({"turn": 1, "step": 1})),
        (
            "turn/end",
            json!({"turn": 1, "reason": {"kind": "error", "error": {"code": "AUTH", "message": "bad key"}}}),
        ),
    ] {
        log.add(kind, data, &mut calls, false);
    }
    let names: Vec<&str> = log.spans.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(names, ["chat", "invoke_agent airlock"]);
    assert_eq!(log.spans[0].status, Status::error("the model call gave no answer"));
    assert_eq!(log.spans[1].status, Status::error("AUTH: bad key"));
    assert_eq!(text(&log.spans[1], "airlock.turn.end_reason"), "error");
}

#[test]
fn folding_the_same_log_twice_gives_the_same_spans() {
    assert_eq!(echo_turn(true).spans, echo_turn(true).spans);
}

#[test]
fn a_fold_that_catches_up_keeps_the_agents_name() {
    let mut calls = Calls::default();
    let mut earlier = Log::new("child");
    let descriptor = json!({"childId": "child", "name": "researcher", "parentSessionId": "p", "continuable": true, "version": 1});
    earlier.add("subagent/descriptor", descriptor, &mut calls, false);
    let mut later = Log::new("child");
    later.trace.continue_from(&earlier.trace);
    later.seq = 1;
    later.trace.next_seq = 1;
    tool_turn(
        &mut later,
        1,
        user("look", json!({"kind": "coordinator"})),
        "echo",
        "{}",
        &mut calls,
        false,
    );
    finish_tool_turn(&mut later, 1, &mut calls, false);
    assert_eq!(later.spans.last().unwrap().name, "invoke_agent researcher");
}
