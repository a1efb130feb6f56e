//! Cancellation and model failures: interrupted prefixes, the queue on cancel, the wake latch,
//! retries, calls never dispatched.

use serde_json::Value;

use super::{Backend, Harness, Reply, request_texts};
use crate::config::ModelRoute;
use crate::io::{Input, StepDecision};
use crate::testkit::config;
use crate::wire::CancelCause;

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
    let users = h.only(&["user/message"]);
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

/// Disposal of an idle agent (a `disposed` cancel, then a clear) cancels its parked items: the
/// cancel itself does nothing on an idle agent, the clear writes one canceled splice per list.
pub fn disposal_cancels_the_parked_items_of_an_idle_agent(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Hang("working")]).followup("m1", "one").followup("m2", "two");
    h.inject("ctx", "context").cancel(true);
    assert_eq!(h.lines().last(), Some(&"status idle"), "m2 and ctx are parked");
    let mark = h.transcript.len();
    h.input(Input::Cancel { cause: CancelCause::Disposed, keep_inbox: false }).input(Input::Clear);
    assert_eq!(
        h.since(mark),
        ["splice next-step @0 -1 canceled", "splice next-turn @0 -1 canceled"]
    );
    let mark = h.transcript.len();
    h.input(Input::Clear);
    assert_eq!(h.since(mark), Vec::<&str>::new(), "an empty inbox clears to nothing");
    h.log
}

/// A cancel right after a waking send (before the policy answered) gives one turn and no step.
pub fn cancel_right_after_a_waking_send_gives_one_turn_and_no_step(b: &dyn Backend) -> Vec<String> {
    let cancel = |h: &mut Harness| {
        h.cancel(false);
    };
    let mut h = super::turn_without_a_step(b, cancel, "turn/end 1 aborted user");
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

/// Past its retries, a transient failure moves the step to the next model of the chain: the log
/// names that model and why, the step completes on it, the turn's later steps stay on it, and the
/// next turn starts on the session's own model again. A terminal error does not fail over.
pub fn a_step_past_its_retries_fails_over_to_the_next_model(b: &dyn Backend) -> Vec<String> {
    let mut config = config();
    config.retry.max_retries = 2;
    let backup =
        ModelRoute { provider: "backup".into(), model: "b-1".into(), context_window: None };
    config.fallbacks = vec![backup];
    let mut h = Harness::with_config(b, config.clone());
    h.script([
        Reply::Fail("SERVICE_UNAVAILABLE", None),
        Reply::Fail("SERVICE_UNAVAILABLE", None),
        Reply::Fail("SERVICE_UNAVAILABLE", None),
        Reply::Calls(vec![("c1", "echo", "{}")]),
        Reply::Text("done"),
        Reply::Text("again"),
    ]);
    h.followup("m1", "hi");
    assert_eq!(
        h.since(7),
        [
            "request/context",
            "llm/retry 1 500ms SERVICE_UNAVAILABLE",
            "llm/retry 2 1000ms SERVICE_UNAVAILABLE",
            "request/context backup:b-1 after SERVICE_UNAVAILABLE",
            "chunk call c1",
            "chunk finish tool-calls",
            "assistant/message [call c1 echo]",
            "tool/call c1 echo",
            "tool/result c1 [\"echo: {}\"]",
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
    let routes: Vec<_> = h.requests.iter().map(|r| (r.route, r.model.as_str())).collect();
    let own = (0, "scripted-1");
    assert_eq!(routes, [own, own, own, (1, "b-1"), (1, "b-1")]);
    let mark = h.transcript.len();
    h.followup("m2", "more");
    assert_eq!(h.only(&["request/context"])[2..], ["request/context"], "back on its own model");
    assert_eq!(h.requests.last().map(|r| r.route), Some(0));
    assert!(h.since(mark).ends_with(&["turn/end 2 completed", "status idle"]));

    let mut h = Harness::with_config(b, config);
    h.script([Reply::Fail("AUTH", None)]).followup("m1", "hi");
    assert_eq!(h.since(8), ["step/end 1.1", "turn/end 1 error AUTH", "status idle"]);
    assert_eq!(h.requests.len(), 1, "AUTH does not fail over");
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
