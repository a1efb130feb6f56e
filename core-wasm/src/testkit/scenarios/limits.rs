//! The limits no turn may exceed (`Config::limits`): each stops the turn as a cancel would and
//! ends it `error` with its own code.

use super::{Backend, Harness, Reply};
use crate::config::Limits;

fn limited(b: &dyn Backend, limits: Limits) -> Harness<'_> {
    let mut config = super::super::config();
    config.limits = limits;
    Harness::with_config(b, config)
}

/// A turn still running at its time limit stops: the text streamed so far is kept (interrupted)
/// and the turn ends `error TURN_TIMEOUT`; the next send runs as usual.
pub fn a_turn_past_its_time_limit_ends_turn_timeout_keeping_what_streamed(
    b: &dyn Backend,
) -> Vec<String> {
    let mut h = limited(b, Limits { turn_ms: 60_000, ..Limits::none() });
    h.hold_timers = true;
    h.script([Reply::Hang("an endless answer"), Reply::Text("fresh")]).followup("m1", "talk");
    assert_eq!(h.timers.len(), 1, "the deadline is armed at turn/start");
    assert_eq!(h.timers[0].1, 60_000);
    let request_id = h.hanging.unwrap();
    let mark = h.transcript.len();
    h.fire_timer();
    assert_eq!(
        h.since(mark),
        [
            format!("abort request {request_id}").as_str(),
            "assistant/message [\"an endless answer\"] interrupted",
            "step/end 1.1",
            "turn/end 1 error TURN_TIMEOUT",
            "status idle",
        ]
    );
    // The next turn arms its own deadline; the old one firing late changes nothing.
    h.followup("m2", "again");
    assert!(h.lines().ends_with(&["turn/end 2 completed", "status idle"]));
    let mark = h.transcript.len();
    h.fire_timer();
    assert_eq!(h.since(mark), Vec::<&str>::new());
    h.log
}

/// A step that streams more than its output limit stops there: what streamed is kept
/// (interrupted) and the turn ends `error OUTPUT_LIMIT`; the rest of the stream is dropped.
pub fn a_step_past_its_output_limit_ends_output_limit(b: &dyn Backend) -> Vec<String> {
    let mut h = limited(b, Limits { step_output_bytes: 10, ..Limits::none() });
    h.script([Reply::Text("one two three four five")]).followup("m1", "talk");
    let request_id = h.requests[0].request_id;
    assert_eq!(
        h.since(6),
        [
            "request/header initial",
            "request/context",
            "chunk \"one \"",
            "chunk \"two \"",
            "chunk \"three \"",
            format!("abort request {request_id}").as_str(),
            "assistant/message [\"one two three \"] interrupted",
            "step/end 1.1",
            "turn/end 1 error OUTPUT_LIMIT",
            "status idle",
        ]
    );
    h.log
}

/// A turn whose model keeps calling tools ends `error MAX_STEPS` after its last allowed step.
pub fn a_turn_at_its_step_limit_ends_max_steps(b: &dyn Backend) -> Vec<String> {
    let mut h = limited(b, Limits { max_steps: 2, ..Limits::none() });
    let call = |id| Reply::Calls(vec![(id, "echo", "{}")]);
    h.script([call("c1"), call("c2"), call("c3")]).followup("m1", "loop");
    let tail: Vec<&str> = h.lines().into_iter().rev().take(4).collect();
    assert_eq!(
        tail,
        [
            "status idle",
            "turn/end 1 error MAX_STEPS",
            "step/end 1.2",
            "tool/result c2 [\"echo: {}\"]"
        ]
    );
    assert_eq!(h.requests.len(), 2, "no third request");
    h.log
}

/// A provider's `Retry-After` longer than the limit is not waited for: the turn ends with the
/// provider's error (`RATE_LIMIT`) and no retry.
pub fn a_retry_after_past_the_limit_ends_the_turn_with_the_providers_error(
    b: &dyn Backend,
) -> Vec<String> {
    let mut h = limited(b, Limits { max_retry_after_ms: 60_000, ..Limits::none() });
    h.script([Reply::Fail("RATE_LIMIT", Some(3_600_000))]).followup("m1", "hi");
    assert!(h.lines().ends_with(&["step/end 1.1", "turn/end 1 error RATE_LIMIT", "status idle"]));
    assert_eq!(h.retry_delays, Vec::<u64>::new(), "no retry");
    let end: serde_json::Value = serde_json::from_str(h.log.last().unwrap()).unwrap();
    let message = end["data"]["reason"]["error"]["message"].as_str().unwrap();
    assert!(message.contains("3600000 ms") && message.contains("60000 ms"), "{message}");
    h.log
}
