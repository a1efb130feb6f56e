//! Context compaction: under pressure inside the turn that needed it, after an overflow with one
//! retried step, at idle as maintenance; and a summary that replay never asks for again.

use serde_json::Value;

use super::{Backend, Harness, Reply, request_texts};
use crate::compaction::{COMPACTION_INSTRUCTION, SUMMARY_PREFIX};
use crate::config::ContextPolicy;
use crate::io::{Input, RefusalCode};

/// The harness session with a context window of `window` tokens, compacting at 80 %.
fn windowed(b: &dyn Backend, window: u64) -> Harness<'_> {
    let mut config = super::super::config();
    config.context = ContextPolicy { window: Some(window), ..ContextPolicy::default() };
    Harness::with_config(b, config)
}

fn counted(tokens: u64, reply: Reply) -> Reply {
    Reply::Counted(tokens, Box::new(reply))
}

fn instruction() -> String {
    format!("user:{COMPACTION_INSTRUCTION}")
}

fn summary(text: &str) -> String {
    format!("user:{SUMMARY_PREFIX}{text}")
}

/// The event at `seq`, parsed.
fn event(h: &Harness, seq: usize) -> Value {
    serde_json::from_str(&h.log[seq]).unwrap()
}

/// The provider counted 70 prompt tokens; with the answer and the next message the estimate
/// reaches 80 % of a 100-token window, so turn 2 summarizes before its request, inside its own
/// step. The request then sends the summary and only the newer message, and the one after it
/// builds on those.
pub fn pressure_compacts_inside_the_turn_that_needed_it(b: &dyn Backend) -> Vec<String> {
    let mut h = windowed(b, 100);
    h.script([counted(70, Reply::Text("first answer"))]).followup("m1", "hi");
    let mark = h.transcript.len();
    h.script([Reply::Text("they greeted"), Reply::Text("second answer")]).followup("m2", "more");
    assert_eq!(
        h.since(mark),
        [
            "splice next-turn @0 +m2",
            "status running",
            "turn/start 2",
            "splice next-turn @0 -1",
            "step/start 2.1",
            "user/message m2",
            "context/compaction pressure through 11",
            "chunk \"second \"",
            "chunk \"answer\"",
            "chunk finish stop",
            "assistant/message [\"second answer\"]",
            "step/end 2.1",
            "turn/end 2 completed",
            "status idle",
        ]
    );
    assert_eq!(request_texts(&h, 1), ["user:hi", "assistant:first answer", &instruction()]);
    assert_eq!(request_texts(&h, 2), [summary("they greeted"), "user:more".into()]);
    let compaction = &event(&h, 19)["data"];
    assert_eq!((compaction["turn"].as_u64(), compaction["step"].as_u64()), (Some(2), Some(1)));
    assert_eq!(compaction["tokensBefore"], 82, "70 counted, 7 for the answer, 5 for m2");
    assert!(compaction["tokensAfter"].as_u64().unwrap() < 80, "{compaction}");
    assert_eq!(compaction["summary"]["source"]["kind"], "compaction");
    h.script([Reply::Text("third answer")]).followup("m3", "again");
    assert_eq!(
        request_texts(&h, 3),
        [
            summary("they greeted"),
            "user:more".into(),
            "assistant:second answer".into(),
            "user:again".into()
        ]
    );
    assert_eq!(h.restored_snapshot(), h.snapshot());
    h.log
}

/// Tool results need their call: a compaction at the step after a tool call keeps the call and
/// its result verbatim after the summary.
pub fn a_compaction_keeps_the_last_tool_calls_and_their_results(b: &dyn Backend) -> Vec<String> {
    let mut h = windowed(b, 100);
    let call = counted(90, Reply::Calls(vec![("c1", "echo", "{}")]));
    h.script([call, Reply::Text("asked for echo"), Reply::Text("done")]).followup("m1", "use echo");
    let lines = h.only(&["step/", "context/", "assistant/"]);
    assert_eq!(
        lines,
        [
            "step/start 1.1",
            "assistant/message [call c1 echo]",
            "step/end 1.1",
            "step/start 1.2",
            "context/compaction pressure through 4",
            "assistant/message [\"done\"]",
            "step/end 1.2",
        ]
    );
    assert_eq!(request_texts(&h, 1), ["user:use echo".into(), instruction()]);
    assert_eq!(
        request_texts(&h, 2),
        [
            summary("asked for echo"),
            "assistant:call c1 echo".into(),
            "tool:result c1 echo: {}".into()
        ]
    );
    h.log
}

/// A `CONTEXT_OVERFLOW` answer (no window known) compacts once and retries the step, with no
/// `llm/retry`; the turn completes.
pub fn overflow_compacts_once_and_retries_the_step(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Text("first answer")]).followup("m1", "hi");
    let mark = h.transcript.len();
    h.script([
        Reply::Fail("CONTEXT_OVERFLOW", None),
        Reply::Text("the summary"),
        Reply::Text("after"),
    ]);
    h.followup("m2", "more");
    assert_eq!(
        h.since(mark + 4),
        [
            "step/start 2.1",
            "user/message m2",
            "context/compaction overflow through 10",
            "chunk \"after\"",
            "chunk finish stop",
            "assistant/message [\"after\"]",
            "step/end 2.1",
            "turn/end 2 completed",
            "status idle",
        ]
    );
    assert_eq!(request_texts(&h, 2), ["user:hi", "assistant:first answer", &instruction()]);
    assert_eq!(request_texts(&h, 3), [summary("the summary"), "user:more".into()]);
    h.log
}

/// Overflow with nothing to summarize ends the turn at once; an overflow of the retried step
/// ends it `error CONTEXT_OVERFLOW` after the one compaction.
pub fn a_second_overflow_ends_the_turn_context_overflow(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Fail("CONTEXT_OVERFLOW", None)]).followup("m1", "a huge paste");
    assert!(h.lines().ends_with(&["turn/end 1 error CONTEXT_OVERFLOW", "status idle"]));
    assert_eq!(h.requests.len(), 1, "nothing to summarize: no summary request");
    h.script([Reply::Text("first answer")]).followup("m2", "hi");
    let mark = h.transcript.len();
    h.script([
        Reply::Fail("CONTEXT_OVERFLOW", None),
        Reply::Text("the summary"),
        Reply::Fail("CONTEXT_OVERFLOW", None),
    ]);
    h.followup("m3", "more");
    assert_eq!(
        h.since(mark + 4),
        [
            "step/start 3.1",
            "user/message m3",
            "context/compaction overflow through 17",
            "step/end 3.1",
            "turn/end 3 error CONTEXT_OVERFLOW",
            "status idle",
        ]
    );
    let end = event(&h, h.log.len() - 1);
    let message = end["data"]["reason"]["error"]["message"].as_str().unwrap();
    assert!(message.ends_with("(even after the conversation was compacted)"), "{message}");
    h.log
}

/// The summary is a logged output: a restart, a wake and a restore from a snapshot fold it from
/// the log and ask the model nothing; the next turn sends it. A crash while the summary was being
/// written closes the turn as any crash does.
pub fn replay_never_asks_for_the_summary_again(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Text("first answer")]).followup("m1", "hi");
    let (early, early_len) = (h.snapshot(), h.log.len());
    h.script([Reply::Fail("CONTEXT_OVERFLOW", None), Reply::Text("the summary")]);
    h.followup("m2", "more");
    let asked = h.requests.len();
    let mark = h.transcript.len();
    h.restart().wake();
    assert_eq!(h.since(mark), ["-- restart", "-- wake"], "nothing to repair, nothing to ask");
    assert_eq!(h.requests.len(), asked);
    assert_eq!(h.restored_from(&early, early_len), h.snapshot());
    h.script([Reply::Text("third")]).followup("m3", "again");
    let texts = request_texts(&h, asked);
    assert_eq!(texts[..2], [summary("the summary"), "user:more".into()]);
    assert_eq!(texts.len(), 4, "summary, more, its answer, again: {texts:?}");
    let mark = h.transcript.len();
    h.script([Reply::Fail("CONTEXT_OVERFLOW", None), Reply::Hang("half a summ")]);
    h.followup("m4", "and again");
    h.restart();
    assert_eq!(h.since(mark + 6), ["-- restart", "step/end 4.1", "turn/end 4 interrupted"]);
    h.log
}

/// `compact` at idle is maintenance: status stays idle, a waking send is accepted but waits,
/// and runs once the summary is logged. It is refused with nothing to summarize, during another
/// compaction, and while a turn runs.
pub fn compact_at_idle_keeps_status_idle_and_latches_a_waking_send(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.input(Input::Compact);
    assert_eq!(h.refusals, [RefusalCode::NothingToCompact]);
    h.script([Reply::Text("first answer")]).followup("m1", "hi");
    let mark = h.transcript.len();
    h.script([Reply::Hang("they greeted"), Reply::Text("second answer")]);
    h.input(Input::Compact).input(Input::Compact).followup("m2", "more");
    assert_eq!(h.refusals, [RefusalCode::NothingToCompact, RefusalCode::Compacting]);
    assert_eq!(h.since(mark), ["compacting true", "splice next-turn @0 +m2"]);
    let summary_request = h.hanging.unwrap();
    h.input(Input::ModelDone(summary_request));
    assert_eq!(
        h.since(mark + 2)[..5],
        [
            "context/compaction manual through 10",
            "compacting false",
            "status running",
            "turn/start 2",
            "splice next-turn @0 -1",
        ]
    );
    assert!(h.lines().ends_with(&["turn/end 2 completed", "status idle"]));
    let compaction = &event(&h, 14)["data"];
    assert!(compaction.get("turn").is_none() && compaction.get("step").is_none(), "{compaction}");
    assert_eq!(request_texts(&h, 2), [summary("they greeted"), "user:more".into()]);
    h.script([Reply::Hang("busy")]).followup("m3", "work");
    h.input(Input::Compact);
    assert_eq!(
        h.refusals,
        [RefusalCode::NothingToCompact, RefusalCode::Compacting, RefusalCode::SessionRunning]
    );
    h.cancel(false);
    h.log
}

/// A cancel abandons a compaction at idle: the request is aborted, nothing is logged, and what
/// it held back stays parked (the cancel kept the inbox), as a cancelled turn's queue does.
pub fn a_cancel_abandons_a_compaction_at_idle(b: &dyn Backend) -> Vec<String> {
    let mut h = Harness::new(b);
    h.script([Reply::Text("first answer")]).followup("m1", "hi");
    let mark = h.transcript.len();
    h.script([Reply::Hang("they greeted")]);
    h.input(Input::Compact).followup("m2", "more").cancel(true);
    let request = h.hanging.unwrap();
    assert_eq!(
        h.since(mark),
        [
            "compacting true",
            "splice next-turn @0 +m2",
            format!("abort request {request}").as_str(),
            "compacting false",
        ]
    );
    h.log
}

/// A cancel during a turn's compaction ends the turn `aborted` as a cancel mid-request does;
/// no summary is logged, and the next turn compacts afresh.
pub fn a_cancel_during_a_turns_compaction_ends_it_aborted(b: &dyn Backend) -> Vec<String> {
    let mut h = windowed(b, 100);
    h.script([counted(70, Reply::Text("first answer")), Reply::Hang("half a summ")]);
    h.followup("m1", "hi").followup("m2", "more");
    let request = h.hanging.unwrap();
    let mark = h.transcript.len();
    h.cancel(false);
    assert_eq!(
        h.since(mark),
        [
            format!("abort request {request}").as_str(),
            "step/end 2.1",
            "turn/end 2 aborted user",
            "status idle",
        ]
    );
    h.script([Reply::Text("a summary"), Reply::Text("third")]).followup("m3", "again");
    assert_eq!(h.only(&["context/"]), ["context/compaction pressure through 11"]);
    h.log
}
