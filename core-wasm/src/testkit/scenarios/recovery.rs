//! Restore and crash repair: a folded log equals the live state; an open turn is closed; accepted
//! followups run after a restart.

use serde_json::Value;

use super::{Backend, Harness, Reply};
use crate::io::{HostEvent, Input, RefusalCode};
use crate::wire::CancelCause;

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

/// A snapshot of the durable state plus the events logged after it restores the same state as
/// the whole log, whatever the snapshot's age; a snapshot that does not fit is refused.
pub fn a_snapshot_and_its_tail_restore_the_live_state(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Calls(vec![("c1", "echo", "{}")]), Reply::Text("a")]).followup("m1", "one");
    let (early, early_len) = (h.snapshot(), h.log.len());
    h.script([Reply::Calls(vec![("c2", "slow", "{}")])]).followup("m2", "two");
    h.inject("ctx", "later").followup("m3", "queued");
    let (late, late_len) = (h.snapshot(), h.log.len());
    assert_eq!(h.restored_from(&early, early_len), h.snapshot(), "an old snapshot, a long tail");
    assert_eq!(h.restored_from(&late, late_len), h.snapshot(), "a fresh snapshot, no tail");
    let refused = b.restore(h.config.clone(), Some("{\"not\": \"a snapshot\"}"), &[]);
    assert!(refused.is_err(), "a snapshot of another shape falls back to the log");
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

/// A session restored from a log at rest without `recover` (the host dropped it from memory
/// while idle and brought it back) writes exactly what the live one would have: no `resume`.
pub fn a_session_restored_at_rest_goes_on_as_the_live_one(b: &dyn Backend) -> Vec<String> {
    let next_turn = |restore: bool| {
        let mut h = Harness::new(b);
        h.script([Reply::Text("one")]).followup("m1", "hi");
        if restore {
            h.wake();
        }
        let mark = h.transcript.len();
        h.script([Reply::Text("two")]).followup("m2", "again");
        (h.since(mark).join("\n"), h.log)
    };
    let ((live, log), (restored, _)) = (next_turn(false), next_turn(true));
    assert_eq!(restored, live);
    assert!(!live.contains("request/header"), "the header did not change: {live}");
    log
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

/// After a restart, pending injects alone start no turn (they never wake); the next waking
/// send's turn claims them with its own message.
pub fn a_restart_with_only_injects_pending_starts_no_turn(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Text("first")]).followup("m1", "one");
    h.inject("ctx", "context");
    let mark = h.transcript.len();
    h.restart();
    assert_eq!(h.since(mark), ["-- restart"], "no status, no turn");
    h.script([Reply::Text("second")]).followup("m2", "two");
    assert_eq!(
        h.since(mark + 1)[..8],
        [
            "splice next-turn @0 +m2",
            "status running",
            "turn/start 2",
            "splice next-step @0 -1",
            "splice next-turn @0 -1",
            "step/start 2.1",
            "user/message ctx",
            "user/message m2",
        ]
    );
    assert_eq!(h.lines().last(), Some(&"status idle"));
    h.log
}

/// A host-made event (`goal/change`, `subagent/descriptor`) takes the next seq where it is fed,
/// at idle or mid-turn, and changes no state: restore folds it as nothing.
pub fn host_events_are_logged_in_place_and_change_nothing_else(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    let goal = r#"{"goal": {"id": "g1", "objective": "ship"}}"#.to_owned();
    h.input(Input::Log(HostEvent::GoalChange(goal)));
    let idle = h.snapshot();
    h.script([Reply::Hang("working")]).followup("m1", "go");
    let descriptor = r#"{"childId":"c","name":"helper","continuable":true}"#.to_owned();
    h.input(Input::Log(HostEvent::SubagentDescriptor(descriptor)));
    assert_eq!(
        h.lines(),
        [
            "goal/change",
            "splice next-turn @0 +m1",
            "status running",
            "turn/start 1",
            "splice next-turn @0 -1",
            "step/start 1.1",
            "user/message m1",
            "request/header initial",
            "request/context",
            "chunk \"working\"",
            "subagent/descriptor",
        ]
    );
    assert!(idle.contains("\"nextSeq\":1"), "only the seq moved: {idle}");
    h.input(Input::Log(HostEvent::GoalChange("[1]".into())));
    assert_eq!(h.refusals.last(), Some(&RefusalCode::BadInput), "data is an object");
    assert_eq!(h.restored_snapshot(), h.snapshot(), "restore folds host events as nothing");
    h.log
}
