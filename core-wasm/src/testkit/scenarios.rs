//! The transcript scenarios: one per rule of `spec/semantics.md`, each asserting the exact event
//! sequence and returning the log, so the same scenario can run natively and in wasm and the two
//! logs can be compared byte for byte.

use serde_json::Value;

use super::{Backend, Harness, Reply, user};
use crate::io::{Input, StepDecision};
use crate::wire::{CancelCause, ContentBlock, Role, Target};

/// A scenario: runs against a backend, asserts, and returns the log.
pub type Scenario = fn(&dyn Backend) -> Vec<String>;

/// Every scenario, by name.
pub const ALL: &[(&str, Scenario)] = &[
    ("simple_text_turn_in_canonical_order", simple_text_turn_in_canonical_order),
    (
        "tool_round_trip_second_request_carries_the_result",
        tool_round_trip_second_request_carries_the_result,
    ),
    ("one_send_one_turn", one_send_one_turn),
    ("idle_steer_starts_a_turn_at_once", idle_steer_starts_a_turn_at_once),
    (
        "steer_during_a_tool_lands_at_the_next_step_of_the_same_turn",
        steer_during_a_tool_lands_at_the_next_step_of_the_same_turn,
    ),
    (
        "idle_inject_does_not_wake_and_reaches_the_next_request",
        idle_inject_does_not_wake_and_reaches_the_next_request,
    ),
    (
        "inject_during_a_tool_lands_after_that_steps_results",
        inject_during_a_tool_lands_after_that_steps_results,
    ),
    (
        "pre_step_reject_blocks_the_turn_with_no_step_events",
        pre_step_reject_blocks_the_turn_with_no_step_events,
    ),
    ("blocked_turn_parks_the_rest_of_the_queue", blocked_turn_parks_the_rest_of_the_queue),
    ("empty_admitted_batch_makes_no_model_request", empty_admitted_batch_makes_no_model_request),
    ("max_tokens_ends_a_single_step_turn", max_tokens_ends_a_single_step_turn),
    (
        "max_tokens_is_sticky_across_a_steered_continuation",
        max_tokens_is_sticky_across_a_steered_continuation,
    ),
    ("max_tokens_does_not_leak_into_the_next_turn", max_tokens_does_not_leak_into_the_next_turn),
    ("truncated_tool_calls_are_not_run", truncated_tool_calls_are_not_run),
    (
        "cancel_mid_stream_commits_the_interrupted_prefix",
        cancel_mid_stream_commits_the_interrupted_prefix,
    ),
    ("cancel_clears_the_queued_tail", cancel_clears_the_queued_tail),
    ("cancel_with_keep_inbox_parks_the_queue", cancel_with_keep_inbox_parks_the_queue),
    (
        "wake_latch_runs_a_send_that_arrives_while_a_cancel_drains",
        wake_latch_runs_a_send_that_arrives_while_a_cancel_drains,
    ),
    ("idle_cancel_is_a_no_op", idle_cancel_is_a_no_op),
    (
        "cancel_right_after_a_waking_send_gives_one_turn_and_no_step",
        cancel_right_after_a_waking_send_gives_one_turn_and_no_step,
    ),
    ("cancel_clears_steering", cancel_clears_steering),
    (
        "transient_failures_are_retried_then_succeed_in_one_turn",
        transient_failures_are_retried_then_succeed_in_one_turn,
    ),
    (
        "persistent_failure_ends_the_turn_with_error_and_no_message",
        persistent_failure_ends_the_turn_with_error_and_no_message,
    ),
    (
        "undispatched_calls_get_aborted_before_dispatch",
        undispatched_calls_get_aborted_before_dispatch,
    ),
    (
        "parallel_tool_results_are_committed_in_model_order",
        parallel_tool_results_are_committed_in_model_order,
    ),
    (
        "unknown_tool_gives_an_error_result_and_the_turn_goes_on",
        unknown_tool_gives_an_error_result_and_the_turn_goes_on,
    ),
    (
        "queue_edit_remove_and_promote_write_canceled_splices",
        queue_edit_remove_and_promote_write_canceled_splices,
    ),
    (
        "restore_of_a_recorded_log_equals_the_live_state",
        restore_of_a_recorded_log_equals_the_live_state,
    ),
    ("crash_repair_closes_an_open_turn", crash_repair_closes_an_open_turn),
    ("crash_repair_adds_nothing_to_a_balanced_log", crash_repair_adds_nothing_to_a_balanced_log),
    ("accepted_followups_run_after_a_restart", accepted_followups_run_after_a_restart),
];

/// The text of every message in a request, in order, as `role:text`.
fn request_texts(h: &Harness, index: usize) -> Vec<String> {
    h.requests[index]
        .messages
        .iter()
        .map(|m| {
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
                Role::Tool => "tool",
            };
            let text: Vec<String> = m.content.iter().map(block_text).collect();
            format!("{role}:{}", text.join("|"))
        })
        .collect()
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text { text } | ContentBlock::Reasoning { text } => text.clone(),
        ContentBlock::ToolCall { id, name, .. } => format!("call {id} {name}"),
        ContentBlock::ToolResult { tool_call_id, content, .. } => {
            let inner: Vec<String> = content.iter().map(block_text).collect();
            format!("result {tool_call_id} {}", inner.join(" "))
        }
        ContentBlock::Image { .. } => "image".into(),
    }
}

/// The text turn of `events.md`, in its canonical order.
pub fn simple_text_turn_in_canonical_order(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Text("Hello there")]).followup("m1", "hi");
    assert_eq!(
        h.lines(),
        [
            "splice next-turn @0 +m1",
            "status running",
            "turn/start 1",
            "splice next-turn @0 -1",
            "step/start 1.1",
            "user/message m1",
            "request/header initial",
            "request/context",
            "chunk \"Hello \"",
            "chunk \"there\"",
            "chunk finish stop",
            "assistant/message [\"Hello there\"]",
            "step/end 1.1",
            "turn/end 1 completed",
            "status idle",
        ]
    );
    let message: Value = serde_json::from_str(&h.log[10]).unwrap();
    assert_eq!(message["sourceEventSeqs"], serde_json::json!([7, 8, 9]));
    assert_eq!(message["data"]["message"]["id"], "s1:10");
    assert_eq!(request_texts(&h, 0), ["user:hi"]);
    h.log
}

/// A tool call runs, and the second request of the turn carries its result.
pub fn tool_round_trip_second_request_carries_the_result(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Calls(vec![("c1", "echo", r#"{"text":"x"}"#)]), Reply::Text("done")]);
    h.followup("m1", "use echo");
    assert_eq!(
        h.since(6),
        [
            "request/header initial",
            "request/context",
            "chunk call c1",
            "chunk finish tool-calls",
            "assistant/message [call c1 echo]",
            "tool/call c1 echo",
            "tool/result c1 [\"echo: {\\\"text\\\":\\\"x\\\"}\"]",
            "step/end 1.1",
            "step/start 1.2",
            "chunk \"done\"",
            "chunk finish stop",
            "assistant/message [\"done\"]",
            "step/end 1.2",
            "turn/end 1 completed",
            "status idle",
        ]
    );
    assert_eq!(h.requests.len(), 2);
    assert_eq!(
        request_texts(&h, 1),
        ["user:use echo", "assistant:call c1 echo", "tool:result c1 echo: {\"text\":\"x\"}"]
    );
    h.log
}

/// N followups sent while the agent works give N turns, one `running` and one `idle`.
pub fn one_send_one_turn(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([
        Reply::Calls(vec![("c1", "slow", "{}")]),
        Reply::Text("one"),
        Reply::Text("two"),
        Reply::Text("three"),
    ]);
    h.followup("m1", "first").followup("m2", "second").followup("m3", "third");
    h.finish_tool("slow done");
    let turns: Vec<&str> = h
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("turn/") || l.starts_with("status"))
        .collect();
    assert_eq!(
        turns,
        [
            "status running",
            "turn/start 1",
            "turn/end 1 completed",
            "turn/start 2",
            "turn/end 2 completed",
            "turn/start 3",
            "turn/end 3 completed",
            "status idle",
        ]
    );
    let users: Vec<&str> =
        h.lines().into_iter().filter(|l| l.starts_with("user/message")).collect();
    assert_eq!(users, ["user/message m1", "user/message m2", "user/message m3"]);
    h.log
}

/// A steer on an idle agent starts a turn in the same call.
pub fn idle_steer_starts_a_turn_at_once(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Text("steered")]).steer("s", "go left");
    assert_eq!(
        h.since(0)[..6],
        [
            "splice next-step @0 +s",
            "status running",
            "turn/start 1",
            "splice next-step @0 -1",
            "step/start 1.1",
            "user/message s"
        ]
    );
    assert_eq!(h.lines().last(), Some(&"status idle"));
    h.log
}

/// Steering sent while a tool runs enters at the next step of the same turn.
pub fn steer_during_a_tool_lands_at_the_next_step_of_the_same_turn(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Calls(vec![("c1", "slow", "{}")]), Reply::Text("ok, left")]);
    h.followup("m1", "work");
    let mark = h.transcript.len();
    h.steer("s", "go left");
    assert_eq!(h.since(mark), ["splice next-step @0 +s"]);
    h.finish_tool("worked");
    assert_eq!(
        h.since(mark + 1),
        [
            "tool/result c1 [\"worked\"]",
            "step/end 1.1",
            "splice next-step @0 -1",
            "step/start 1.2",
            "user/message s",
            "chunk \"ok, \"",
            "chunk \"left\"",
            "chunk finish stop",
            "assistant/message [\"ok, left\"]",
            "step/end 1.2",
            "turn/end 1 completed",
            "status idle",
        ]
    );
    assert_eq!(request_texts(&h, 1).last().unwrap(), "user:go left");
    h.log
}

/// Context injected on an idle agent wakes nothing and reaches the next request.
pub fn idle_inject_does_not_wake_and_reaches_the_next_request(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.inject("ctx", "the repo is rust");
    assert_eq!(h.lines(), ["splice next-step @0 +ctx"]);
    h.script([Reply::Text("ok")]).followup("m1", "hi");
    assert_eq!(
        h.since(1)[..7],
        [
            "splice next-turn @0 +m1",
            "status running",
            "turn/start 1",
            "splice next-step @0 -1",
            "splice next-turn @0 -1",
            "step/start 1.1",
            "user/message ctx",
        ]
    );
    assert_eq!(request_texts(&h, 0), ["user:the repo is rust", "user:hi"]);
    h.log
}

/// Context injected while a tool runs lands after that step's results, at the next step.
pub fn inject_during_a_tool_lands_after_that_steps_results(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Calls(vec![("c1", "slow", "{}")]), Reply::Text("noted")]);
    h.followup("m1", "work").inject("ctx", "fyi");
    h.finish_tool("worked");
    let tail: Vec<&str> =
        h.lines().into_iter().skip_while(|l| !l.starts_with("tool/result")).take(5).collect();
    assert_eq!(
        tail,
        [
            "tool/result c1 [\"worked\"]",
            "step/end 1.1",
            "splice next-step @0 -1",
            "step/start 1.2",
            "user/message ctx"
        ]
    );
    assert_eq!(
        request_texts(&h, 1),
        ["user:work", "assistant:call c1 slow", "tool:result c1 worked", "user:fyi"]
    );
    h.log
}

/// A rejecting pre-step policy ends the turn `blocked` with no step events and no request.
pub fn pre_step_reject_blocks_the_turn_with_no_step_events(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.hold_decisions = true;
    h.followup("m1", "hi").decide(StepDecision::Reject);
    assert_eq!(
        h.lines(),
        [
            "splice next-turn @0 +m1",
            "status running",
            "turn/start 1",
            "splice next-turn @0 -1",
            "turn/end 1 blocked",
            "status idle"
        ]
    );
    assert!(h.requests.is_empty());
    h.log
}

/// A blocked turn parks the followups behind it until the next waking send.
pub fn blocked_turn_parks_the_rest_of_the_queue(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.hold_decisions = true;
    h.followup("m1", "one").followup("m2", "two").decide(StepDecision::Reject);
    assert_eq!(h.since(5), ["turn/end 1 blocked", "status idle"]);
    h.hold_decisions = false;
    h.script([Reply::Text("two done"), Reply::Text("three done")]).followup("m3", "three");
    let users: Vec<&str> = h
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("user/message") || l.starts_with("turn/"))
        .collect();
    assert_eq!(
        users,
        [
            "turn/start 1",
            "turn/end 1 blocked",
            "turn/start 2",
            "user/message m2",
            "turn/end 2 completed",
            "turn/start 3",
            "user/message m3",
            "turn/end 3 completed"
        ]
    );
    h.log
}

/// A policy that admits nothing ends the turn `completed` without a step or a model request.
pub fn empty_admitted_batch_makes_no_model_request(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.hold_decisions = true;
    h.followup("m1", "hi").decide(StepDecision::Enter(Vec::new()));
    assert_eq!(
        h.lines(),
        [
            "splice next-turn @0 +m1",
            "status running",
            "turn/start 1",
            "splice next-turn @0 -1",
            "turn/end 1 completed",
            "status idle"
        ]
    );
    assert!(h.requests.is_empty());
    h.log
}

/// A max-tokens finish ends its step and the turn `max-tokens`.
pub fn max_tokens_ends_a_single_step_turn(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::MaxTokens("cut short")]).followup("m1", "write a lot");
    assert_eq!(
        h.since(8),
        [
            "chunk \"cut \"",
            "chunk \"short\"",
            "chunk finish max-tokens",
            "assistant/message [\"cut short\"]",
            "step/end 1.1",
            "turn/end 1 max-tokens",
            "status idle"
        ]
    );
    h.log
}

/// Once a step hit max-tokens, the turn ends max-tokens even if steering continued it.
pub fn max_tokens_is_sticky_across_a_steered_continuation(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Hang("partial"), Reply::Text("continued")]);
    h.followup("m1", "write");
    let request_id = h.hanging.take().unwrap();
    h.steer("s", "and more");
    let finish = crate::wire::StreamChunk::Finish { reason: crate::wire::FinishReason::MaxTokens };
    h.input(Input::ModelChunk { request_id, chunk: finish }).input(Input::ModelDone(request_id));
    let tail: Vec<&str> =
        h.lines().into_iter().skip_while(|l| !l.starts_with("assistant/message")).collect();
    assert_eq!(
        tail,
        [
            "assistant/message [\"partial\"]",
            "step/end 1.1",
            "splice next-step @0 -1",
            "step/start 1.2",
            "user/message s",
            "chunk \"continued\"",
            "chunk finish stop",
            "assistant/message [\"continued\"]",
            "step/end 1.2",
            "turn/end 1 max-tokens",
            "status idle",
        ]
    );
    h.log
}

/// The turn after a max-tokens turn ends `completed` on its own.
pub fn max_tokens_does_not_leak_into_the_next_turn(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::MaxTokens("cut"), Reply::Text("fine")]);
    h.followup("m1", "one").followup("m2", "two");
    let ends: Vec<&str> = h.lines().into_iter().filter(|l| l.starts_with("turn/end")).collect();
    assert_eq!(ends, ["turn/end 1 max-tokens", "turn/end 2 completed"]);
    h.log
}

/// A tool call cut off by the token limit is dropped from the message and not run.
pub fn truncated_tool_calls_are_not_run(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::TruncatedCall("let me call")]).followup("m1", "go");
    assert_eq!(
        h.since(8),
        [
            "chunk \"let \"",
            "chunk \"me \"",
            "chunk \"call\"",
            "chunk call cut",
            "chunk finish max-tokens",
            "assistant/message [\"let me call\"]",
            "step/end 1.1",
            "turn/end 1 max-tokens",
            "status idle",
        ]
    );
    assert!(h.held_tools.is_empty());
    h.log
}

/// Cancel mid-stream commits the streamed prefix as an interrupted message; the next request has it.
pub fn cancel_mid_stream_commits_the_interrupted_prefix(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Hang("half an answer"), Reply::Text("fresh")]).followup("m1", "talk");
    let request_id = h.hanging.unwrap();
    let mark = h.transcript.len();
    h.cancel(true);
    assert_eq!(
        h.since(mark),
        [
            format!("abort request {request_id}").as_str(),
            "assistant/message [\"half an answer\"] interrupted",
            "step/end 1.1",
            "turn/end 1 aborted user",
            "status idle",
        ]
    );
    let message: Value = serde_json::from_str(&h.log[10]).unwrap();
    assert_eq!(message["data"]["interrupted"], true);
    assert_eq!(
        message["sourceEventSeqs"],
        serde_json::json!([7, 8, 9]),
        "cites the chunks before the abort"
    );
    h.followup("m2", "again");
    assert_eq!(request_texts(&h, 1), ["user:talk", "assistant:half an answer", "user:again"]);
    h.log
}

/// Cancel without keepInbox clears the queued followups, then aborts.
pub fn cancel_clears_the_queued_tail(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Hang("working")])
        .followup("m1", "one")
        .followup("m2", "two")
        .followup("m3", "three");
    let mark = h.transcript.len();
    h.cancel(false);
    assert_eq!(h.since(mark)[..2], ["splice next-turn @0 -2 canceled", "abort request 2"]);
    assert_eq!(h.lines().last(), Some(&"status idle"));
    assert!(h.snapshot().contains("\"nextTurn\":[]"));
    h.log
}

/// Cancel with keepInbox aborts only; the queue stays parked until the next waking send.
pub fn cancel_with_keep_inbox_parks_the_queue(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Hang("working"), Reply::Text("two"), Reply::Text("three")]);
    h.followup("m1", "one").followup("m2", "two");
    let mark = h.transcript.len();
    h.cancel(true);
    assert_eq!(h.since(mark).last(), Some(&"status idle"));
    assert!(!h.since(mark).iter().any(|l| l.contains("canceled")));
    h.followup("m3", "three");
    let users: Vec<&str> =
        h.lines().into_iter().filter(|l| l.starts_with("user/message")).collect();
    assert_eq!(users, ["user/message m1", "user/message m2", "user/message m3"]);
    h.log
}

/// A waking send while a cancelled turn drains its tool call is latched and runs after `turn/end`.
pub fn wake_latch_runs_a_send_that_arrives_while_a_cancel_drains(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Calls(vec![("c1", "slow", "{}")]), Reply::Text("latched ran")]);
    h.followup("m1", "work").cancel(true);
    let mark = h.transcript.len();
    h.followup("m2", "after");
    assert_eq!(h.since(mark), ["splice next-turn @0 +m2"]);
    h.finish_tool("drained");
    assert_eq!(
        h.since(mark + 1)[..7],
        [
            "tool/result c1 [\"drained\"]",
            "step/end 1.1",
            "turn/end 1 aborted user",
            "turn/start 2",
            "splice next-turn @0 -1",
            "step/start 2.1",
            "user/message m2",
        ]
    );
    assert_eq!(h.lines().last(), Some(&"status idle"));
    assert_eq!(h.lines().iter().filter(|l| **l == "status running").count(), 1);
    h.log
}

/// Cancelling an idle agent writes nothing, and the next send runs normally.
pub fn idle_cancel_is_a_no_op(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.inject("ctx", "parked").cancel(false);
    assert_eq!(h.lines(), ["splice next-step @0 +ctx"]);
    h.script([Reply::Text("ok")]).followup("m1", "hi");
    assert!(h.lines().contains(&"turn/end 1 completed"));
    h.log
}

/// A cancel right after a waking send (before the policy answered) gives one turn and no step.
pub fn cancel_right_after_a_waking_send_gives_one_turn_and_no_step(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.hold_decisions = true;
    h.followup("m1", "hi").cancel(false);
    assert_eq!(
        h.lines(),
        [
            "splice next-turn @0 +m1",
            "status running",
            "turn/start 1",
            "splice next-turn @0 -1",
            "turn/end 1 aborted user",
            "status idle"
        ]
    );
    let late = h.decisions.remove(0).0;
    h.input(Input::Decided { decision_id: late, decision: StepDecision::Enter(vec!["m1".into()]) });
    assert_eq!(h.transcript.len(), 6, "a late policy answer changes nothing");
    assert!(h.requests.is_empty());
    h.log
}

/// Cancel without keepInbox clears pending steering too.
pub fn cancel_clears_steering(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Calls(vec![("c1", "slow", "{}")])])
        .followup("m1", "work")
        .steer("s", "stop that")
        .followup("m2", "later");
    let mark = h.transcript.len();
    h.cancel(false);
    assert_eq!(
        h.since(mark),
        ["splice next-step @0 -1 canceled", "splice next-turn @0 -1 canceled"]
    );
    h.finish_tool("drained");
    assert_eq!(
        h.since(mark + 2),
        ["tool/result c1 [\"drained\"]", "step/end 1.1", "turn/end 1 aborted user", "status idle"]
    );
    h.log
}

/// Transient failures are retried with backoff inside the same step; one turn, one message.
pub fn transient_failures_are_retried_then_succeed_in_one_turn(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([
        Reply::Fail("RATE_LIMIT", None),
        Reply::Fail("SERVER", None),
        Reply::Fail("RATE_LIMIT", Some(0)),
        Reply::Text("finally"),
    ]);
    h.followup("m1", "hi");
    assert_eq!(
        h.since(8),
        [
            "llm/retry 1 500ms RATE_LIMIT",
            "llm/retry 2 1000ms SERVER",
            "llm/retry 3 0ms RATE_LIMIT",
            "chunk \"finally\"",
            "chunk finish stop",
            "assistant/message [\"finally\"]",
            "step/end 1.1",
            "turn/end 1 completed",
            "status idle",
        ]
    );
    assert_eq!(h.retry_delays, [500, 1000, 0]);
    assert_eq!(h.requests.len(), 4);
    h.log
}

/// A persistent failure ends the turn `error` after the retries, with no assistant message.
pub fn persistent_failure_ends_the_turn_with_error_and_no_message(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script((0..5).map(|_| Reply::Fail("SERVICE_UNAVAILABLE", None)));
    h.followup("m1", "hi");
    assert_eq!(
        h.since(8),
        [
            "llm/retry 1 500ms SERVICE_UNAVAILABLE",
            "llm/retry 2 1000ms SERVICE_UNAVAILABLE",
            "llm/retry 3 2000ms SERVICE_UNAVAILABLE",
            "llm/retry 4 4000ms SERVICE_UNAVAILABLE",
            "step/end 1.1",
            "turn/end 1 error SERVICE_UNAVAILABLE",
            "status idle",
        ]
    );
    let mut h = Harness::new(b);
    h.script([Reply::Fail("AUTH", None)]).followup("m1", "hi");
    assert_eq!(
        h.since(8),
        ["step/end 1.1", "turn/end 1 error AUTH", "status idle"],
        "AUTH is not retried"
    );
    h.log
}

/// Cancel while one exclusive call runs: it drains; calls not yet dispatched are answered
/// `ABORTED_BEFORE_DISPATCH`, in model order.
pub fn undispatched_calls_get_aborted_before_dispatch(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Calls(vec![
        ("c1", "slow", "{}"),
        ("c2", "echo", "{}"),
        ("c3", "slow", "{}"),
    ])]);
    h.followup("m1", "work");
    let mark = h.transcript.len();
    h.cancel(true);
    assert_eq!(h.since(mark), ["tool/call c2 echo", "tool/call c3 slow"]);
    h.finish_tool("real result");
    assert_eq!(
        h.since(mark + 2),
        [
            "tool/result c1 [\"real result\"]",
            "tool/result c2 [\"the turn was cancelled before this call was dispatched\"] ABORTED_BEFORE_DISPATCH",
            "tool/result c3 [\"the turn was cancelled before this call was dispatched\"] ABORTED_BEFORE_DISPATCH",
            "step/end 1.1",
            "turn/end 1 aborted user",
            "status idle",
        ]
    );
    h.log
}

/// Parallel-safe calls run together and their results are committed in model order.
pub fn parallel_tool_results_are_committed_in_model_order(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([
        Reply::Calls(vec![("c1", "wait", "{}"), ("c2", "wait", "{}"), ("c3", "slow", "{}")]),
        Reply::Text("all done"),
    ]);
    h.followup("m1", "work");
    assert_eq!(h.held_tools.iter().map(|t| t.0.as_str()).collect::<Vec<_>>(), ["c1", "c2"]);
    let mark = h.transcript.len();
    let (c1, c2) = (h.held_tools.remove(0), h.held_tools.remove(0));
    h.held_tools.push(c2);
    h.finish_tool("second");
    assert_eq!(h.transcript.len(), mark, "c2's result waits for c1");
    h.held_tools.push(c1);
    h.finish_tool("first");
    assert_eq!(
        h.since(mark),
        ["tool/result c1 [\"first\"]", "tool/result c2 [\"second\"]", "tool/call c3 slow"]
    );
    h.finish_tool("third");
    assert_eq!(h.since(mark + 3)[..2], ["tool/result c3 [\"third\"]", "step/end 1.1"]);
    h.log
}

/// A call to a tool the session does not have gets an error result; the model sees it.
pub fn unknown_tool_gives_an_error_result_and_the_turn_goes_on(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Calls(vec![("c1", "nope", "{}")]), Reply::Text("sorry")]).followup("m1", "x");
    assert!(h.lines().contains(&"tool/result c1 [\"unknown tool \\\"nope\\\"; available tools: echo, slow, wait\"] UNKNOWN_TOOL"));
    assert_eq!(h.lines().iter().rev().nth(1), Some(&"turn/end 1 completed"));
    h.log
}

/// Editing, removing and promoting queued items each write canceled splices; bad ids are refused.
pub fn queue_edit_remove_and_promote_write_canceled_splices(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Calls(vec![("c1", "slow", "{}")]), Reply::Text("a"), Reply::Text("b")]);
    h.followup("m1", "work").followup("m2", "two").followup("m3", "three").followup("m4", "four");
    let mark = h.transcript.len();
    h.input(Input::Replace(user("m2", "two, edited")));
    h.input(Input::Remove("m3".into()));
    h.input(Input::Promote("m4".into()));
    h.input(Input::Remove("nope".into()));
    h.input(Input::Promote("m4".into()));
    h.input(Input::Send { message: user("m2", "dup"), target: Target::NextTurn, wakeup: true });
    assert_eq!(
        h.since(mark),
        [
            "splice next-turn @0 -1 +m2 canceled",
            "splice next-turn @1 -1 canceled",
            "splice next-turn @1 -1 canceled",
            "splice next-step @0 +m4",
        ]
    );
    assert_eq!(h.refusals, ["unknown-message", "not-queued", "duplicate-message-id"]);
    h.finish_tool("done");
    assert!(h.lines().contains(&"user/message m4"));
    let last = h.requests.last().unwrap();
    assert_eq!(block_text(&last.messages.last().unwrap().content[0]), "two, edited");
    h.log
}

/// Folding a recorded log gives the same durable state as living through it.
pub fn restore_of_a_recorded_log_equals_the_live_state(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Calls(vec![("c1", "echo", "{}")]), Reply::Text("a"), Reply::Hang("b")]);
    h.followup("m1", "one")
        .followup("m2", "two")
        .cancel(true)
        .inject("ctx", "later")
        .followup("m3", "parked");
    h.input(Input::Cancel { cause: CancelCause::User, keep_inbox: true });
    assert_eq!(h.restored_snapshot(), h.snapshot(), "at idle");
    h.script([Reply::Calls(vec![("c1", "echo", "{}"), ("c2", "slow", "{}")])])
        .followup("m4", "work");
    assert!(h.snapshot().contains("\"dispatched\":[\"c1\",\"c2\"]"), "{}", h.snapshot());
    assert_eq!(h.restored_snapshot(), h.snapshot(), "mid-turn, a tool call running");
    h.log
}

/// A crash mid-tool-call: restart closes the open turn with result, step and turn closers.
pub fn crash_repair_closes_an_open_turn(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Calls(vec![("c1", "slow", "{}"), ("c2", "slow", "{}")])])
        .followup("m1", "work");
    let mark = h.transcript.len();
    h.restart();
    assert_eq!(
        h.since(mark),
        [
            "-- restart",
            "tool/result c1 [\"the gateway stopped while this call ran; its outcome is unknown\"] TOOL_OUTCOME_UNKNOWN",
            "tool/result c2 [\"the gateway stopped before this call started\"] TOOL_NOT_STARTED",
            "step/end 1.1",
            "turn/end 1 interrupted",
        ]
    );
    let last: Value = serde_json::from_str(h.log.last().unwrap()).unwrap();
    let before: Value = serde_json::from_str(&h.log[h.log.len() - 5]).unwrap();
    assert_eq!(last["time"], before["time"], "closers take the last event's time");
    h.log
}

/// A balanced log gets no closers on restart.
pub fn crash_repair_adds_nothing_to_a_balanced_log(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Text("fine")]).followup("m1", "hi");
    let mark = h.transcript.len();
    h.restart();
    assert_eq!(h.since(mark), ["-- restart"]);
    h.log
}

/// After a restart, accepted followups that never ran are run; the first request says `resume`.
pub fn accepted_followups_run_after_a_restart(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Hang("mid"), Reply::Text("resumed")])
        .followup("m1", "one")
        .followup("m2", "two");
    h.inject("ctx", "stays");
    let mark = h.transcript.len();
    h.restart();
    assert_eq!(
        h.since(mark)[..9],
        [
            "-- restart",
            "step/end 1.1",
            "turn/end 1 interrupted",
            "status running",
            "turn/start 2",
            "splice next-step @0 -1",
            "splice next-turn @0 -1",
            "step/start 2.1",
            "user/message ctx",
        ]
    );
    assert!(h.lines().contains(&"request/header resume"));
    assert_eq!(h.lines().last(), Some(&"status idle"));
    h.log
}
