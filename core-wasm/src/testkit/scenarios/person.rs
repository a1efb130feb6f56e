//! A person in the loop: calls that wait for an approval or for a client's result, in the log
//! and across a restart.

use super::{Backend, Harness, Reply, request_texts};
use crate::io::{CallAnswer, RefusalCode};
use crate::testkit::person_config;
use crate::wire::ContentBlock;

fn approve() -> CallAnswer {
    CallAnswer::Approve { by: Some("alice".into()), arguments: None }
}

/// A call that needs an approval waits with the session `running` while the other calls of its
/// group run; `approve` runs it, and the results are committed in model order.
pub fn an_approval_waits_while_the_session_runs_and_approve_runs_the_call(
    b: &dyn Backend,
) -> Vec<String> {
    let mut h = Harness::with_config(b, person_config());
    h.script([
        Reply::Calls(vec![("c1", "guarded", r#"{"path":"/tmp/x"}"#), ("c2", "echo", "{}")]),
        Reply::Text("done"),
    ]);
    h.followup("m1", "go");
    let mark = h.transcript.len();
    h.answer("c2", approve());
    assert_eq!(h.refusals, [RefusalCode::NotWaiting], "an approval for a call that waits for none");
    h.answer("nope", approve());
    assert_eq!(h.refusals, [RefusalCode::NotWaiting, RefusalCode::UnknownCall]);
    assert_eq!(
        h.since(mark - 5),
        [
            "assistant/message [call c1 guarded call c2 echo]",
            "tool/call c1 guarded",
            "tool/approval c1 requested",
            "tool/call c2 echo",
            "waiting [c1 Approval since +6]",
        ]
    );
    h.answer("c1", approve());
    assert_eq!(
        h.since(mark),
        [
            "tool/approval c1 approved by=\"alice\"",
            "waiting []",
            "tool/result c1 [\"echo: {\\\"path\\\":\\\"/tmp/x\\\"}\"]",
            "tool/result c2 [\"echo: {}\"]",
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
    h.answer("c1", approve());
    assert_eq!(h.refusals.last(), Some(&RefusalCode::UnknownCall), "the turn is over");
    h.log
}

/// `approve` with other arguments runs the call with them: they are logged with the approval,
/// and the result the model reads first says so (its own call stays as it made it). Arguments
/// that are no JSON object are refused.
pub fn an_approval_with_other_arguments_runs_the_call_with_them_and_the_model_is_told(
    b: &dyn Backend,
) -> Vec<String> {
    let mut h = Harness::with_config(b, person_config());
    h.script([Reply::Calls(vec![("c1", "guarded", r#"{"path":"/tmp/x"}"#)]), Reply::Text("ok")]);
    h.followup("m1", "go");
    let mark = h.transcript.len();
    let edited = |arguments: &str| CallAnswer::Approve {
        by: Some("alice".into()),
        arguments: Some(arguments.into()),
    };
    h.answer("c1", edited("[1]"));
    assert_eq!(h.refusals, [RefusalCode::BadInput], "arguments that are no object");
    assert_eq!(h.transcript.len(), mark, "a refused answer logs nothing");
    h.answer("c1", edited(r#"{"path":"/tmp/y"}"#));
    let note =
        r#"(A person approved this call with other arguments; it ran with {\"path\":\"/tmp/y\"}.)"#;
    assert_eq!(
        h.since(mark)[..3],
        [
            r#"tool/approval c1 approved by="alice" arguments="{\"path\":\"/tmp/y\"}""#.to_owned(),
            "waiting []".to_owned(),
            format!(r#"tool/result c1 ["{note}" "echo: {{\"path\":\"/tmp/y\"}}"]"#),
        ]
    );
    assert_eq!(
        request_texts(&h, 1)[1..],
        [
            "assistant:call c1 guarded",
            r#"tool:result c1 (A person approved this call with other arguments; it ran with {"path":"/tmp/y"}.) echo: {"path":"/tmp/y"}"#,
        ]
    );
    h.log
}

/// `deny` answers the call `DENIED_BY_USER` with the reason, which the model's next request
/// carries; the call never runs.
pub fn a_denied_call_gives_the_model_denied_by_user_and_the_reason(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::with_config(b, person_config());
    h.script([Reply::Calls(vec![("c1", "guarded", "{}")]), Reply::Text("ok")]);
    h.followup("m1", "go");
    let mark = h.transcript.len();
    let reason = Some("not on a Friday".to_owned());
    h.answer("c1", CallAnswer::Deny { reason, by: None });
    assert_eq!(
        h.since(mark)[..3],
        [
            "tool/approval c1 denied reason=\"not on a Friday\"",
            "tool/result c1 [\"DENIED_BY_USER: the user denied this call: not on a Friday\"] DENIED_BY_USER",
            "waiting []",
        ]
    );
    assert_eq!(
        request_texts(&h, 1)[2],
        "tool:result c1 DENIED_BY_USER: the user denied this call: not on a Friday"
    );
    assert!(h.held_tools.is_empty(), "a denied call never reaches the host");
    h.log
}

/// A cancel while a call waits answers it `ABORTED_BEFORE_DISPATCH`: it never ran.
pub fn a_cancel_while_a_call_waits_for_approval_aborts_it_before_dispatch(
    b: &dyn Backend,
) -> Vec<String> {
    let mut h = Harness::with_config(b, person_config());
    h.script([Reply::Calls(vec![("c1", "guarded", "{}")])]);
    h.followup("m1", "go");
    let mark = h.transcript.len();
    h.cancel(true);
    assert_eq!(
        h.since(mark),
        [
            "tool/result c1 [\"the turn was cancelled before this call was approved\"] ABORTED_BEFORE_DISPATCH",
            "waiting []",
            "step/end 1.1",
            "turn/end 1 aborted user",
            "status idle",
        ]
    );
    h.log
}

/// A restart while a call waits for approval: the call waits again (nothing is logged, the
/// session is `running`), a call that ran meanwhile gets `TOOL_OUTCOME_UNKNOWN`, and approving
/// runs the waiting call once. Crash repair of the same log (a fork's closers) says the call
/// never started.
pub fn a_waiting_approval_survives_a_restart_and_runs_once(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::with_config(b, person_config());
    h.script([
        Reply::Calls(vec![("c1", "wait", "{}"), ("c2", "guarded", r#"{"n":1}"#)]),
        Reply::Text("done"),
    ]);
    h.followup("m1", "go");
    let durable = crate::fold_log(&h.log).expect("the log folds");
    let closers = crate::repair(durable.open_turn.as_ref().unwrap(), "s1", 99, 0);
    let codes: Vec<String> = closers.iter().map(|e| e.to_json()).collect();
    assert!(codes[0].contains("TOOL_OUTCOME_UNKNOWN") && codes[1].contains("TOOL_NOT_STARTED"));
    let mark = h.transcript.len();
    h.restart();
    assert_eq!(
        h.since(mark),
        [
            "-- restart",
            "status running",
            "tool/result c1 [\"the gateway stopped while this call ran; its outcome is unknown\"] TOOL_OUTCOME_UNKNOWN",
            "waiting [c2 Approval since +6]",
        ]
    );
    assert_eq!(h.restored_snapshot(), h.snapshot(), "waiting again is the log's state");
    let mark = h.transcript.len();
    h.answer("c2", approve());
    assert_eq!(
        h.since(mark)[..4],
        [
            "tool/approval c2 approved by=\"alice\"",
            "waiting []",
            "tool/result c2 [\"echo: {\\\"n\\\":1}\"]",
            "step/end 1.1",
        ]
    );
    assert_eq!(h.only(&["tool/result c2"]).len(), 1, "run once");
    assert_eq!(
        h.only(&["request/header", "turn/end"]),
        ["request/header initial", "request/header resume", "turn/end 1 completed",]
    );
    h.log
}

/// A client tool's call is logged for the client and waits for its result, which the model
/// then sees; a second result is refused.
pub fn a_client_tool_call_waits_for_the_clients_result(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::with_config(b, person_config());
    h.hold_timers = true;
    h.script([Reply::Calls(vec![("c1", "pick", r#"{"q":"colour?"}"#)]), Reply::Text("blue it is")]);
    h.followup("m1", "ask me");
    assert_eq!(h.timers, [(3, 60_000)], "the client's timeout");
    assert_eq!(
        h.since(h.transcript.len() - 2),
        ["tool/call c1 pick client", "waiting [c1 Client since +5]",]
    );
    let content = vec![ContentBlock::Text { text: "blue".into() }];
    h.answer("c1", CallAnswer::Result { content: content.clone(), is_error: false });
    assert_eq!(
        h.only(&["tool/result", "turn/end"]),
        ["tool/result c1 [\"blue\"]", "turn/end 1 completed",]
    );
    assert_eq!(request_texts(&h, 1)[2], "tool:result c1 blue");
    h.answer("c1", CallAnswer::Result { content, is_error: false });
    assert_eq!(h.refusals, [RefusalCode::UnknownCall]);
    h.log
}

/// A client tool's call without a result within its timeout fails `TOOL_TIMEOUT`; a restart
/// in between keeps the time it already waited.
pub fn a_client_tool_without_a_result_in_time_fails_tool_timeout(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::with_config(b, person_config());
    h.hold_timers = true;
    h.script([Reply::Calls(vec![("c1", "pick", "{}")]), Reply::Text("too slow")]);
    h.followup("m1", "ask me");
    h.timers.clear();
    h.restart();
    assert_eq!(h.timers, [(1, 60_000 - 1)], "one millisecond passed before the restart");
    h.fire_timer();
    assert_eq!(
        h.only(&["tool/result", "turn/end"]),
        [
            "tool/result c1 [\"the client did not post this call's result within 60000 ms\"] TOOL_TIMEOUT",
            "turn/end 1 completed",
        ]
    );
    h.log
}

/// A turn that waits only for people may lose its core as an idle session does: a snapshot and
/// the waiting turn bring back the same agent, whose log goes on byte for byte as if it had
/// stayed awake. A finished result not yet committed (it waits behind the approval in model
/// order) and a client's timer survive it; a running call or an idle agent has no waiting turn.
pub fn a_waiting_turn_sleeps_and_wakes_where_it_was(b: &dyn Backend) -> Vec<String> {
    let run = |sleeps: bool| {
        let mut h = Harness::with_config(b, person_config());
        h.hold_timers = true;
        h.script([
            Reply::Calls(vec![("c1", "guarded", "{}"), ("c2", "echo", "{}")]),
            Reply::Calls(vec![("c3", "pick", "{}")]),
            Reply::Text("done"),
        ]);
        h.followup("m1", "go");
        assert!(h.waits_only_for_people(), "c1 waits for approval, c2 is done");
        if sleeps {
            h.sleep_while_waiting();
        }
        h.answer("c1", approve());
        assert!(h.waits_only_for_people(), "c3 waits for its client");
        if sleeps {
            h.sleep_while_waiting();
        }
        h.fire_timer();
        assert!(!h.waits_only_for_people(), "idle");
        h
    };
    let (stayed, slept) = (run(false), run(true));
    assert_eq!(slept.log, stayed.log);
    assert_eq!(slept.lines(), stayed.lines());
    assert_eq!(
        slept.only(&["tool/result", "turn/end"]),
        [
            "tool/result c1 [\"echo: {}\"]",
            "tool/result c2 [\"echo: {}\"]",
            "tool/result c3 [\"the client did not post this call's result within 60000 ms\"] TOOL_TIMEOUT",
            "turn/end 1 completed",
        ]
    );
    let mut h = Harness::with_config(b, person_config());
    h.script([Reply::Calls(vec![("c1", "guarded", "{}"), ("c2", "wait", "{}")])]);
    h.followup("m1", "go");
    assert!(!h.waits_only_for_people(), "c2 runs: its answer is owed to this core");
    slept.log
}
