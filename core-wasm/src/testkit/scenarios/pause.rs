//! A pre-step policy that pauses the session (a budget ran out): the claim goes back, waking
//! input queues, a restart keeps the pause, and a resume takes up where it stopped.

use super::{Backend, Harness, Reply, request_texts};
use crate::io::{Input, StepDecision};

const WHY: &str =
    r#"{"scope":"session","budget":{"tokens":10},"spent":{"tokens":12,"costUsd":0.0}}"#;

/// The turns after a resume owing a tool's result, with `m2` queued: the owed turn asks the
/// model alone, then `m2` gets its own.
const OWED_THEN_QUEUED: [&str; 5] = [
    "turn/start 2",
    "turn/end 2 completed",
    "turn/start 3",
    "user/message m2",
    "turn/end 3 completed",
];

fn resume() -> Input {
    Input::Resume(r#"{"budget":{"tokens":100},"spent":{"tokens":12,"costUsd":0.0}}"#.into())
}

/// A step paused at its boundary puts its claimed steer back in front, ends the turn `paused`
/// and starts nothing for new followups, not even after a restart; the resume's first step
/// carries on the paused turn (the tool's result and the steer), then the followups run one turn
/// each, in order.
pub fn a_paused_step_puts_its_claim_back_and_a_resume_takes_up_where_it_stopped(
    b: &dyn Backend,
) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([
        Reply::Calls(vec![("c1", "slow", "{}")]),
        Reply::Text("carried on"),
        Reply::Text("two done"),
        Reply::Text("three done"),
    ]);
    h.followup("m1", "work").steer("s1", "also").followup("m2", "two");
    h.hold_decisions = true;
    h.finish_tool("done");
    let mark = h.transcript.len();
    h.decide(StepDecision::Pause(WHY.into()));
    assert_eq!(
        h.since(mark),
        ["budget/exhausted", "splice next-step @0 +s1", "turn/end 1 paused", "status idle"]
    );
    let paused = h.transcript.len();
    h.followup("m3", "three").restart();
    assert_eq!(h.since(paused), ["splice next-turn @1 +m3", "-- restart"]);
    assert!(h.requests.len() == 1 && h.decisions.is_empty(), "nothing started while paused");

    h.hold_decisions = false;
    let resumed = h.transcript.len();
    h.input(resume());
    assert_eq!(
        h.since(resumed)[..7],
        [
            "budget/resumed",
            "status running",
            "turn/start 2",
            "splice next-step @0 -1",
            "step/start 2.1",
            "user/message s1",
            "request/header resume"
        ]
    );
    assert_eq!(
        request_texts(&h, 1),
        ["user:work", "assistant:call c1 slow", "tool:result c1 done", "user:also"]
    );
    assert_eq!(
        h.only(&["user/message", "turn/"])[3..],
        [
            "turn/start 2",
            "user/message s1",
            "turn/end 2 completed",
            "turn/start 3",
            "user/message m2",
            "turn/end 3 completed",
            "turn/start 4",
            "user/message m3",
            "turn/end 4 completed"
        ]
    );
    h.log
}

/// A turn paused between steps with nothing claimed owes the model its tool's result: the resume
/// asks for it in a turn of its own before the queued followup, and a resume of a session that
/// is not paused does nothing.
pub fn a_resume_after_a_pause_between_steps_sends_the_tools_result(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([
        Reply::Calls(vec![("c1", "slow", "{}")]),
        Reply::Text("answered"),
        Reply::Text("two"),
    ]);
    h.followup("m1", "work").followup("m2", "two");
    h.hold_decisions = true;
    h.finish_tool("done");
    let mark = h.transcript.len();
    h.decide(StepDecision::Pause(WHY.into()));
    assert_eq!(h.since(mark), ["budget/exhausted", "turn/end 1 paused", "status idle"]);

    h.hold_decisions = false;
    let resumed = h.transcript.len();
    h.input(resume());
    assert_eq!(
        h.since(resumed)[..4],
        ["budget/resumed", "status running", "turn/start 2", "step/start 2.1"]
    );
    assert_eq!(
        request_texts(&h, 1),
        ["user:work", "assistant:call c1 slow", "tool:result c1 done"]
    );
    assert_eq!(h.only(&["user/message", "turn/"])[3..], OWED_THEN_QUEUED);
    let idle = h.transcript.len();
    h.input(resume());
    assert_eq!(h.transcript.len(), idle, "a resume of a session that is not paused");
    h.log
}

/// A paused session compacted at idle: a followup sent meanwhile still waits once the compaction
/// settles (a waking send latched by a compaction starts nothing while paused); the resume then
/// owes the tool's result first.
pub fn a_compaction_at_idle_while_paused_starts_nothing(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Calls(vec![("c1", "slow", "{}")]), Reply::Hang("the summary")]);
    h.followup("m1", "work");
    h.hold_decisions = true;
    h.finish_tool("done").decide(StepDecision::Pause(WHY.into()));
    h.hold_decisions = false;
    h.input(Input::Compact).followup("m2", "two");
    let mark = h.transcript.len();
    let summary = h.hanging.unwrap();
    h.input(Input::ModelDone(summary));
    assert_eq!(h.since(mark)[1..], ["compacting false"], "paused: the followup waits");

    h.script([Reply::Text("answered"), Reply::Text("two done")]).input(resume());
    assert_eq!(h.only(&["user/message", "turn/"])[3..], OWED_THEN_QUEUED);
    h.log
}
