//! Subagents end to end: the model's `agent` tool runs a one-shot child session through the
//! real binary, the mock model answering parent and child in turn.

use std::sync::Arc;

use airlock_tests::Reply;
use airlock_tests::gateway::Frame;
use airlock_tests::world::{World, world};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// The tool result the parent's model got back (the parent's `tool/result`, parsed).
async fn tool_result(w: &World, s: &str) -> (Value, Value) {
    let log = w.gw.log(s).await;
    let result = log.iter().find(|e| e["type"] == "tool/result").expect("a tool result").clone();
    let text = result["data"]["message"]["content"][0]["content"][0]["text"].as_str().unwrap();
    let answer: Value = serde_json::from_str(text).expect("the agent tool answers JSON");
    (result, answer)
}

fn named<'a>(frames: &'a [Frame], name: &str) -> Vec<&'a Value> {
    frames
        .iter()
        .filter_map(|f| match f {
            Frame::Other(n, data) if n == name => Some(data),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn one_shot_agent_tool_returns_the_childs_last_answer_to_the_parents_next_request() {
    let w = world().await;
    w.mock.push(Reply::tool_call("t1", "agent", r#"{"name":"finder","prompt":"find x"}"#, 2));
    w.mock.push(Reply::text("Child found x.", 2));
    w.mock.push(Reply::text("Parent done.", 1));
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    w.send(&s, json!({"content": "delegate"})).await;
    let frames = sse.until_idle().await;

    let requests = w.mock.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests[1].to_string().contains("find x"), "the child got the prompt");
    assert!(requests[2].to_string().contains("Child found x."), "the parent's next request has it");
    let (result, answer) = tool_result(&w, &s).await;
    assert!(result["data"].get("error").is_none(), "{result}");
    assert_eq!(answer["output"], "Child found x.");
    assert_eq!(answer["stopReason"], "completed");
    let child = answer["childId"].as_str().unwrap();

    let started = named(&frames, "subagent.started");
    let finished = named(&frames, "subagent.finished");
    assert_eq!(started.len(), 1, "{frames:?}");
    assert_eq!(started[0]["childSessionId"], child);
    assert_eq!(finished[0]["status"], "ok");
    assert_eq!(finished[0]["lastAssistantMessage"], "Child found x.");

    let (_, children) = w.gw.get(&format!("/v1/sessions/{s}/children")).await;
    let items = children["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["sessionId"], child);
    assert_eq!(items[0]["parentSessionId"], s.as_str());
    assert_eq!(items[0]["status"], "idle");
    let child_log = w.gw.log(child).await;
    assert!(child_log.iter().any(|e| e["type"] == "turn/end"), "the child has its own log");
}

#[tokio::test]
async fn a_child_error_comes_back_as_a_result_with_stop_reason_error() {
    let w = world().await;
    w.mock.push(Reply::tool_call("t1", "agent", r#"{"prompt":"fail please"}"#, 1));
    w.mock.push(Reply::status(401));
    w.mock.push(Reply::text("The subagent failed; carrying on.", 1));
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    w.send(&s, json!({"content": "delegate"})).await;
    let frames = sse.until_idle().await;
    let (result, answer) = tool_result(&w, &s).await;
    assert!(result["data"].get("error").is_none(), "a child failure is a result: {result}");
    assert_eq!(answer["stopReason"], "error");
    assert_eq!(answer["error"]["code"], "AUTH");
    assert_eq!(named(&frames, "subagent.finished")[0]["status"], "error");
    let end = frames.iter().rev().find_map(|f| match f {
        Frame::Event(_, e) if e["type"] == "turn/end" => Some(e),
        _ => None,
    });
    assert_eq!(end.unwrap()["data"]["reason"]["kind"], "completed", "the parent did not fail");
}

#[tokio::test]
async fn cancelling_the_parent_cancels_the_child_with_cause_parent() {
    let w = world().await;
    let gate = Arc::new(Notify::new());
    w.mock.push(Reply::tool_call("t1", "agent", r#"{"prompt":"work slowly"}"#, 1));
    w.mock.push(Reply::text("never finished", 3).hold_until(gate.clone()));
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    w.send(&s, json!({"content": "delegate"})).await;
    w.mock.requested(2).await; // the child is streaming
    let (code, _) = w.gw.post(&format!("/v1/sessions/{s}/cancel"), json!({})).await;
    assert_eq!(code, 202);
    let frames = sse.until_idle().await;
    let end = frames.iter().rev().find_map(|f| match f {
        Frame::Event(_, e) if e["type"] == "turn/end" => Some(e),
        _ => None,
    });
    assert_eq!(end.unwrap()["data"]["reason"]["kind"], "aborted");
    let (_, answer) = tool_result(&w, &s).await;
    assert_eq!(answer["stopReason"], "aborted", "the call drained with the child's real result");
    let child = answer["childId"].as_str().unwrap();
    let child_log = w.gw.log(child).await;
    let child_end = child_log.iter().rev().find(|e| e["type"] == "turn/end").unwrap();
    assert_eq!(
        child_end["data"]["reason"],
        json!({"kind": "aborted", "reason": {"kind": "parent"}})
    );
}

#[tokio::test]
async fn a_live_one_shot_child_can_be_steered_and_its_answer_reflects_it() {
    let w = world().await;
    let gate = Arc::new(Notify::new());
    w.mock.push_for("delegate", Reply::tool_call("t1", "agent", r#"{"prompt":"CHILD-WORK"}"#, 1));
    w.mock.push_for("CHILD-WORK", Reply::text("First draft", 2).hold_until(gate.clone()));
    w.mock.push_for("STEER-CHILD", Reply::text("Adjusted answer.", 1));
    w.mock.push_for("childId", Reply::text("Parent got it.", 1));
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    w.send(&s, json!({"content": "delegate"})).await;
    let frames = sse.until(|f| matches!(f, Frame::Other(n, _) if n == "subagent.started")).await;
    let child =
        named(&frames, "subagent.started")[0]["childSessionId"].as_str().unwrap().to_owned();

    // The child is an ordinary session: steering it lands in its running turn.
    w.mock.requested(2).await; // the child is streaming its first draft
    w.send(&child, json!({"content": "STEER-CHILD", "delivery": "steer"})).await;
    gate.notify_one();
    sse.until_idle().await;
    let (_, answer) = tool_result(&w, &s).await;
    assert_eq!(answer["output"], "Adjusted answer.", "{answer}");
    assert_eq!(answer["stopReason"], "completed");
    let child_ends = w.gw.log(&child).await.into_iter().filter(|e| e["type"] == "turn/end").count();
    assert_eq!(child_ends, 1, "the steering joined the child's one turn");
}
