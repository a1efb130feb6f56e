//! Turns and steps: text and tool turns, one send one turn, steer and inject, the pre-step
//! policy, max-tokens, tool scheduling, queue edits.

use serde_json::Value;

use super::{Backend, Harness, Reply, block_text, request_texts, user};
use crate::config::StepPolicy;
use crate::io::{Input, RefusalCode, StepDecision};
use crate::wire::Target;

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
    let turns: Vec<&str> = h.only(&["turn/", "status"]);
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
    let users = h.only(&["user/message"]);
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

/// With `StepPolicy::EnterAll` the core asks nothing before a step, and its log has the events
/// a host answering every `decide-step` with all the claimed ids gets, in the same order with the
/// same seqs and ids (only their times differ: a host's answer is a later input). Here a turn
/// with a tool call, a steer that lands at its second step and a followup that makes a second
/// turn.
pub fn enter_all_writes_the_log_of_a_host_that_enters_every_claim(b: &dyn Backend) -> Vec<String> {
    let run = |policy| {
        let mut config = crate::testkit::config();
        config.step_policy = policy;
        let mut h = Harness::with_config(b, config);
        // A core that asked would wait here for ever, and the assertions below would fail.
        h.hold_decisions = policy == StepPolicy::EnterAll;
        h.script([
            Reply::Calls(vec![("c1", "slow", "{}")]),
            Reply::Text("ok, left"),
            Reply::Text("and done"),
        ]);
        h.followup("m1", "work").followup("m2", "more");
        h.steer("s", "go left");
        h.finish_tool("worked");
        assert!(h.decisions.is_empty(), "{policy:?}: asked {:?}", h.decisions);
        assert_eq!(h.transcript.last().map(String::as_str), Some("status idle"));
        h.log
    };
    let untimed = |log: &[String]| -> Vec<Value> {
        let event = |line: &String| {
            let mut event: Value = serde_json::from_str(line).unwrap();
            event.as_object_mut().unwrap().remove("time");
            event
        };
        log.iter().map(event).collect()
    };
    let asked = run(StepPolicy::Ask);
    let entered = run(StepPolicy::EnterAll);
    assert_eq!(untimed(&entered), untimed(&asked));
    entered
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
    let reject = |h: &mut Harness| {
        h.decide(StepDecision::Reject);
    };
    turn_without_a_step(b, reject, "turn/end 1 blocked").log
}

/// A followup wakes turn 1 and `stop` acts while its first pre-step decision is held: the turn
/// ends at once, `end`, with no step events and no model request.
pub(super) fn turn_without_a_step<'b>(
    b: &'b dyn Backend,
    stop: impl FnOnce(&mut Harness),
    end: &str,
) -> Harness<'b> {
    let mut h = Harness::new(b);
    h.hold_decisions = true;
    h.followup("m1", "hi");
    stop(&mut h);
    assert_eq!(
        h.lines(),
        [
            "splice next-turn @0 +m1",
            "status running",
            "turn/start 1",
            "splice next-turn @0 -1",
            end,
            "status idle"
        ]
    );
    assert!(h.requests.is_empty());
    h
}

/// A blocked turn parks the followups behind it until the next waking send.
pub fn blocked_turn_parks_the_rest_of_the_queue(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.hold_decisions = true;
    h.followup("m1", "one").followup("m2", "two").decide(StepDecision::Reject);
    assert_eq!(h.since(5), ["turn/end 1 blocked", "status idle"]);
    h.hold_decisions = false;
    h.script([Reply::Text("two done"), Reply::Text("three done")]).followup("m3", "three");
    let users: Vec<&str> = h.only(&["user/message", "turn/"]);
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

/// A turn that ends `error` parks the followups behind it until the next waking send, which
/// runs them oldest first, one turn each.
pub fn error_turn_parks_the_rest_of_the_queue(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.hold_decisions = true;
    h.followup("m1", "one").followup("m2", "two");
    h.hold_decisions = false;
    h.script([Reply::Fail("AUTH", None)]).decide(StepDecision::Enter(vec!["m1".into()]));
    assert_eq!(h.since(9), ["step/end 1.1", "turn/end 1 error AUTH", "status idle"]);
    assert!(h.snapshot().contains("\"id\":\"m2\""), "m2 waits: {}", h.snapshot());
    h.script([Reply::Text("two done"), Reply::Text("three done")]).followup("m3", "three");
    assert_eq!(
        h.only(&["user/message", "turn/", "status"]),
        [
            "status running",
            "turn/start 1",
            "user/message m1",
            "turn/end 1 error AUTH",
            "status idle",
            "status running",
            "turn/start 2",
            "user/message m2",
            "turn/end 2 completed",
            "turn/start 3",
            "user/message m3",
            "turn/end 3 completed",
            "status idle"
        ]
    );
    h.log
}

/// A policy that admits nothing ends the turn `completed` without a step or a model request.
pub fn empty_admitted_batch_makes_no_model_request(b: &dyn Backend) -> Vec<String> {
    let nothing = |h: &mut Harness| {
        h.decide(StepDecision::Enter(Vec::new()));
    };
    turn_without_a_step(b, nothing, "turn/end 1 completed").log
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
    let ends = h.only(&["turn/end"]);
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
    assert_eq!(
        h.refusals,
        [RefusalCode::UnknownMessage, RefusalCode::NotQueued, RefusalCode::DuplicateMessageId]
    );
    h.finish_tool("done");
    assert!(h.lines().contains(&"user/message m4"));
    let last = h.requests.last().unwrap();
    assert_eq!(block_text(&last.messages.last().unwrap().content[0]), "two, edited");
    h.log
}
