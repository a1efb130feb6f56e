//! Continuable subagents end to end: `spawn_agent`, `send_message`, the direct-parent rule, the
//! one settlement notice, and continuing a child after a restart. Parent and child run at once,
//! so the child's replies are routed by the text of its last message (`push_for`).

use airlock_tests::Reply;
use airlock_tests::gateway::{Frame, Sse};
use airlock_tests::world::{World, first_chunk, held, world};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::Notify;

/// The JSON a tool answered, from a `tool/result` event.
fn answer_of(result: &Value) -> Value {
    let text = result["data"]["message"]["content"][0]["content"][0]["text"].as_str().unwrap();
    serde_json::from_str(text).unwrap_or(Value::String(text.to_owned()))
}

/// The tool results in a session's log, in order.
async fn tool_results(w: &World, s: &str) -> Vec<Value> {
    w.gw.log(s).await.into_iter().filter(|e| e["type"] == "tool/result").collect()
}

/// The settlement notices a parent got (user messages from `subagent`), in order.
async fn notices(w: &World, s: &str) -> Vec<Value> {
    w.gw.log(s)
        .await
        .into_iter()
        .filter(|e| e["type"] == "user/message" && e["data"]["source"]["kind"] == "subagent")
        .map(|e| e["data"].clone())
        .collect()
}

/// Frames until a settlement notice entered the parent's context, then until idle.
async fn until_notice_handled(sse: &mut Sse) {
    sse.until(|f| matches!(f, Frame::Event(_, e) if e["type"] == "user/message" && e["data"]["source"]["kind"] == "subagent")).await;
    sse.until(|f| *f == Frame::Status("idle".into())).await;
}

/// The user messages of a session's log, as text.
async fn user_texts(w: &World, s: &str) -> Vec<String> {
    w.gw.log(s)
        .await
        .iter()
        .filter(|e| e["type"] == "user/message")
        .map(|e| e["data"]["content"][0]["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A parent session whose model's first answer spawns a child with `prompt`.
async fn spawning(w: &World, prompt: &str) -> (String, Sse) {
    let args = json!({"name": "worker", "prompt": prompt}).to_string();
    w.mock.push_for("PARENT-GO", Reply::tool_call("t1", "spawn_agent", &args, 1));
    let s = w.gw.session().await;
    let sse = w.gw.sse(&s, None).await;
    w.send(&s, json!({"content": "PARENT-GO"})).await;
    (s, sse)
}

#[tokio::test]
async fn spawn_agent_returns_before_the_childs_first_turn_ends_and_the_idle_parent_gets_one_followup_notice()
 {
    let w = world().await;
    let gate = holding_the_child(&w, "Child result.");
    w.mock.push_for("settled", Reply::text("Noted.", 1));
    let (s, mut sse) = spawning(&w, "CHILD-TASK").await;
    sse.until_idle().await; // the parent's turn is over

    let spawned = answer_of(&tool_results(&w, &s).await[0]);
    let child = spawned["childId"].as_str().expect("spawn answers childId").to_owned();
    assert!(spawned["messageId"].is_string(), "{spawned}");
    let child_log = w.gw.log(&child).await;
    assert!(!child_log.iter().any(|e| e["type"] == "turn/end"), "the child is still on it");
    assert_eq!(child_log[0]["type"], "subagent/descriptor", "written before the child's turn");
    let descriptor = &child_log[0]["data"];
    assert_eq!(
        (descriptor["parentSessionId"].as_str(), descriptor["continuable"].as_bool()),
        (Some(s.as_str()), Some(true))
    );
    assert_eq!(descriptor["name"], "worker");

    gate.notify_one();
    until_notice_handled(&mut sse).await;
    let notices = notices(&w, &s).await;
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0]["source"]["delivery"], "followup", "the parent was idle");
    assert_eq!(notices[0]["source"]["childId"], child.as_str());
    assert!(notices[0]["content"][0]["text"].as_str().unwrap().contains("Child result."));
}

#[tokio::test]
async fn two_send_messages_queue_fifo_in_the_child_and_settle_with_one_notice() {
    let w = world().await;
    let gate = holding_the_child(&w, "Working.");
    w.mock.push_for("FIRST-MORE", Reply::text("First more done.", 1));
    w.mock.push_for("SECOND-MORE", Reply::text("Second more done.", 1));
    w.mock.push_for("settled", Reply::text("Noted.", 1));
    let (s, mut sse) = spawning(&w, "CHILD-TASK").await;
    sse.until_idle().await;
    let child = answer_of(&tool_results(&w, &s).await[0])["childId"].as_str().unwrap().to_owned();

    // While the child still works on its first task, the parent sends it two more.
    let send = |id: &str, text: &str| {
        let args = json!({"subagent_id": child, "message": text}).to_string();
        Reply::tool_call(id, "send_message", &args, 1)
    };
    w.mock.push_for("SEND-MORE", send("t2", "FIRST-MORE"));
    w.mock.push(send("t3", "SECOND-MORE")).push(Reply::text("Both sent.", 1));
    w.send(&s, json!({"content": "SEND-MORE"})).await;
    sse.until_idle().await;
    gate.notify_one();

    until_notice_handled(&mut sse).await;
    let texts = user_texts(&w, &child).await;
    assert_eq!(texts, ["CHILD-TASK", "FIRST-MORE", "SECOND-MORE"], "FIFO, one turn each");
    let notices = notices(&w, &s).await;
    assert_eq!(notices.len(), 1, "one settlement for all the work: {notices:?}");
    assert!(notices[0]["content"][0]["text"].as_str().unwrap().contains("Second more done."));
}

#[tokio::test]
async fn the_settlement_notice_arrives_as_steering_when_the_parent_is_running() {
    let w = world().await;
    w.mock.push_for("CHILD-TASK", Reply::text("Quick result.", 1));
    let (parent_reply, gate) = held("Thinking it over");
    w.mock.push_for("messageId", parent_reply);
    w.mock.push_for("settled", Reply::text("Noted while busy.", 1));
    let (s, mut sse) = spawning(&w, "CHILD-TASK").await;
    // The notice is spliced into the running parent's next step.
    sse.until(|f| matches!(f, Frame::Event(_, e) if e["type"] == "agent/inbox/spliced" && e["data"]["target"] == "next-step" && e["data"]["inserted"][0]["source"]["kind"] == "subagent")).await;
    gate.notify_one();
    until_notice_handled(&mut sse).await;
    let notices = notices(&w, &s).await;
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0]["source"]["delivery"], "steer");
    let ends: Vec<Value> =
        w.gw.log(&s).await.into_iter().filter(|e| e["type"] == "turn/end").collect();
    assert_eq!(ends.len(), 1, "the notice joined the running turn");
}

#[tokio::test]
async fn a_sibling_sending_to_a_child_is_refused() {
    let w = world().await;
    w.mock.push_for("CHILD-A-TASK", Reply::text("A done.", 1));
    w.mock.push_for("messageId", Reply::text("Spawned A.", 1));
    let (s, mut sse) = spawning(&w, "CHILD-A-TASK").await;
    sse.until_idle().await;
    let a = answer_of(&tool_results(&w, &s).await[0])["childId"].as_str().unwrap().to_owned();

    // The parent spawns B, and B's model tries to give A work.
    let spawn_b = json!({"prompt": "CHILD-B-TASK"}).to_string();
    w.mock.push_for("SPAWN-B", Reply::tool_call("t2", "spawn_agent", &spawn_b, 1));
    let intrude = json!({"subagent_id": a, "message": "INTRUSION"}).to_string();
    w.mock.push_for("CHILD-B-TASK", Reply::tool_call("b1", "send_message", &intrude, 1));
    w.mock.push_for("only the session that spawned", Reply::text("Refused, fine.", 1));
    w.send(&s, json!({"content": "SPAWN-B"})).await;
    let b = loop {
        let results = tool_results(&w, &s).await;
        if let Some(result) =
            results.iter().find(|r| r["data"]["message"]["content"][0]["toolCallId"] == "t2")
        {
            break answer_of(result)["childId"].as_str().unwrap().to_owned();
        }
        sse.next().await;
    };
    // B's prompt was accepted before spawn_agent answered: an idle now means B is done.
    let mut b_sse = w.gw.sse(&b, None).await;
    b_sse.until(|f| *f == Frame::Status("idle".into())).await;
    let refused = &tool_results(&w, &b).await[0];
    assert_eq!(refused["data"]["error"]["code"], "DENIED", "{refused}");
    assert!(!user_texts(&w, &a).await.contains(&"INTRUSION".to_owned()));
}

#[tokio::test]
async fn send_message_after_a_gateway_restart_continues_the_child_from_its_log() {
    let w = world().await;
    w.mock.push_for("CHILD-TASK", Reply::text("First result.", 1));
    w.mock.push_for("messageId", Reply::text("Spawned.", 1));
    w.mock.push_for("settled", Reply::text("Noted.", 1));
    let (s, mut sse) = spawning(&w, "CHILD-TASK").await;
    until_notice_handled(&mut sse).await;
    let child = answer_of(&tool_results(&w, &s).await[0])["childId"].as_str().unwrap().to_owned();
    drop(sse);

    let World { dir, mock, gw } = w;
    let w = World { dir, mock, gw: gw.crash_and_restart() };
    let more = json!({"subagent_id": child, "message": "MORE-WORK"}).to_string();
    w.mock.push_for("ASK-AGAIN", Reply::tool_call("t9", "send_message", &more, 1));
    w.mock.push_for("MORE-WORK", Reply::text("Second result.", 1));
    w.mock.push_for("messageId", Reply::text("Sent.", 1));
    w.mock.push_for("Second result.", Reply::text("Noted again.", 1));
    let after = w.gw.log(&s).await.len() as u64 - 1;
    let mut sse = w.gw.sse(&s, Some(after)).await;
    w.send(&s, json!({"content": "ASK-AGAIN"})).await;
    until_notice_handled(&mut sse).await;
    assert_eq!(user_texts(&w, &child).await, ["CHILD-TASK", "MORE-WORK"]);
    let notices = notices(&w, &s).await;
    assert_eq!(notices.len(), 2, "one per settlement, before and after the restart");
    assert!(notices[1]["content"][0]["text"].as_str().unwrap().contains("Second result."));
}

#[tokio::test]
async fn list_agents_shows_the_children_and_interrupt_agent_stops_a_childs_turn() {
    let w = world().await;
    let _gate = holding_the_child(&w, "Slow work");
    let (s, mut sse) = spawning(&w, "CHILD-TASK").await;
    sse.until_idle().await;
    let child = answer_of(&tool_results(&w, &s).await[0])["childId"].as_str().unwrap().to_owned();

    let interrupt = json!({"subagent_id": child}).to_string();
    w.mock.push_for("CHECK-ON-IT", Reply::tool_call("t2", "list_agents", "{}", 1));
    w.mock.push_for("continuable", Reply::tool_call("t3", "interrupt_agent", &interrupt, 1));
    w.mock.push_for("interrupted", Reply::text("Stopped it.", 1));
    w.mock.push_for("settled", Reply::text("Noted.", 1));
    w.send(&s, json!({"content": "CHECK-ON-IT"})).await;
    until_notice_handled(&mut sse).await;

    let results = tool_results(&w, &s).await;
    let listed = answer_of(&results[1]);
    assert_eq!(listed["items"].as_array().unwrap().len(), 1, "{listed}");
    let item = &listed["items"][0];
    assert_eq!(
        (item["subagentId"].as_str(), item["status"].as_str()),
        (Some(child.as_str()), Some("running"))
    );
    assert_eq!(
        (item["name"].as_str(), item["continuable"].as_bool()),
        (Some("worker"), Some(true))
    );
    assert_eq!(answer_of(&results[2])["interrupted"], true);
    let child_log = w.gw.log(&child).await;
    let end = child_log.iter().rev().find(|e| e["type"] == "turn/end").unwrap();
    assert_eq!(end["data"]["reason"], json!({"kind": "aborted", "reason": {"kind": "parent"}}));
    let notices = notices(&w, &s).await;
    assert_eq!(notices.len(), 1);
    assert!(notices[0]["content"][0]["text"].as_str().unwrap().contains("aborted"));
}

#[tokio::test]
async fn spawn_agent_on_an_in_memory_store_answers_durability_failed() {
    let dir = tempfile::tempdir().unwrap();
    let mock = airlock_tests::MockModel::start().await;
    let memory = std::path::Path::new(":memory:");
    let gw = airlock_tests::gateway::Gateway::start(memory, &mock.base_url());
    let w = World { dir, mock, gw };
    w.mock.push_for("DURABILITY_FAILED", Reply::text("No subagent then.", 1));
    let (s, mut sse) = spawning(&w, "CHILD-TASK").await;
    sse.until_idle().await;
    let result = &tool_results(&w, &s).await[0];
    assert_eq!(result["data"]["error"]["code"], "DURABILITY_FAILED", "{result}");
    let (_, children) = w.gw.get(&format!("/v1/sessions/{s}/children")).await;
    assert_eq!(children["items"], json!([]), "no child was created");
}

/// The child a parent's first `spawn_agent` made.
async fn first_child(w: &World, s: &str) -> String {
    answer_of(&tool_results(w, s).await[0])["childId"].as_str().unwrap().to_owned()
}

/// Scripts the child spawned with `CHILD-TASK` to stream `text` and hold its turn until the
/// gate opens; the parent answers the spawn with "Spawned.".
fn holding_the_child(w: &World, text: &str) -> Arc<Notify> {
    let (child_reply, gate) = held(text);
    w.mock.push_for("CHILD-TASK", child_reply);
    w.mock.push_for("messageId", Reply::text("Spawned.", 1));
    gate
}

/// A parent (idle) whose continuable child is busy: spawned with `CHILD-TASK`, its turn held
/// streaming until the gate opens. Answers the parent, its stream, the child and the gate.
async fn a_busy_child(w: &World) -> (String, Sse, String, Arc<Notify>) {
    let gate = holding_the_child(w, "Child working");
    let (s, mut sse) = spawning(w, "CHILD-TASK").await;
    sse.until_idle().await;
    let child = first_child(w, &s).await;
    w.gw.sse(&child, None).await.until(first_chunk).await;
    (s, sse, child, gate)
}

/// Frames (replayed from the log when need be) until a settlement notice entered the parent's
/// context and the turn it joined or started ended.
async fn until_notice_answered(sse: &mut Sse) {
    sse.until(|f| matches!(f, Frame::Event(_, e) if e["type"] == "user/message" && e["data"]["source"]["kind"] == "subagent")).await;
    sse.until(|f| matches!(f, Frame::Event(_, e) if e["type"] == "turn/end")).await;
}

/// The reasons a session's turns ended, in order.
async fn turn_ends(w: &World, s: &str) -> Vec<String> {
    w.gw.log(s)
        .await
        .iter()
        .filter(|e| e["type"] == "turn/end")
        .map(|e| e["data"]["reason"]["kind"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_childs_turn_cut_by_kill_9_settles_after_the_restart_with_one_notice_saying_so_and_only_one()
 {
    let w = world().await;
    let (s, sse, child, _never) = a_busy_child(&w).await;
    let before = w.gw.log(&s).await.len() as u64 - 1;
    drop(sse);

    // The restart closes the child's turn; the idle child owes its parent a notice, which goes
    // out before the gateway listens.
    w.mock.push_for("settled", Reply::text("Noted the interruption.", 1));
    let World { dir, mock, gw } = w;
    let w = World { dir, mock, gw: gw.crash_and_restart() };
    assert_eq!(turn_ends(&w, &child).await, ["interrupted"]);
    let mut sse = w.gw.sse(&s, Some(before)).await;
    until_notice_answered(&mut sse).await;
    let told = notices(&w, &s).await;
    assert_eq!(told.len(), 1, "{told:?}");
    let text = told[0]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("INTERRUPTED") && text.contains(r#""interruptedTurns":1"#), "{text}");
    assert_eq!(told[0]["source"]["childId"], child.as_str());

    drop(sse);
    let World { dir, mock, gw } = w;
    let w = World { dir, mock, gw: gw.crash_and_restart() };
    assert_eq!(notices(&w, &s).await.len(), 1, "a second restart owes nothing more");
}

#[tokio::test]
async fn work_sent_just_before_kill_9_runs_after_the_restart_and_settles_in_one_notice() {
    let w = world().await;
    let (s, mut sse, child, _never) = a_busy_child(&w).await;

    // The parent gives the busy child more work: accepted, queued behind the running turn.
    let more = json!({"subagent_id": child, "message": "MORE-WORK"}).to_string();
    w.mock.push_for("SEND-MORE", Reply::tool_call("t2", "send_message", &more, 1));
    w.mock.push_for("messageId", Reply::text("Sent.", 1));
    w.send(&s, json!({"content": "SEND-MORE"})).await;
    sse.until_idle().await;
    let queued = w.gw.get(&format!("/v1/sessions/{child}/queue")).await.1;
    assert_eq!(queued["items"][0]["message"]["content"][0]["text"], "MORE-WORK", "{queued}");
    let before = w.gw.log(&s).await.len() as u64 - 1;
    drop(sse);

    w.mock.push_for("MORE-WORK", Reply::text("More work done.", 1));
    w.mock.push_for("settled", Reply::text("Noted.", 1));
    let World { dir, mock, gw } = w;
    let w = World { dir, mock, gw: gw.crash_and_restart() };
    let mut sse = w.gw.sse(&s, Some(before)).await;
    until_notice_answered(&mut sse).await;
    assert_eq!(user_texts(&w, &child).await, ["CHILD-TASK", "MORE-WORK"]);
    assert_eq!(turn_ends(&w, &child).await, ["interrupted", "completed"]);
    let notices = notices(&w, &s).await;
    assert_eq!(notices.len(), 1, "one notice for all the work: {notices:?}");
    let text = notices[0]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("More work done.") && text.contains(r#""stopReason":"completed""#),
        "{text}"
    );
    assert!(text.contains(r#""interruptedTurns":1"#), "the cut turn is folded in: {text}");
}

#[tokio::test]
async fn a_continuable_child_takes_no_followup_over_http_but_steering_into_its_running_turn() {
    let w = world().await;
    let (s, _sse, child, gate) = a_busy_child(&w).await;
    let mut child_sse = w.gw.sse(&child, None).await;

    let messages = format!("/v1/sessions/{child}/messages");
    for body in
        [json!({"content": "from a person"}), json!({"content": "fyi", "delivery": "inject"})]
    {
        let (code, error) = w.gw.post(&messages, body).await;
        assert_eq!((code, &error["error"]["code"]), (409, &json!("child-session")), "{error}");
        assert_eq!(error["error"]["details"]["parentSessionId"], s.as_str());
        assert!(error["error"]["message"].as_str().unwrap().contains("send_message"), "{error}");
    }
    let (code, error) =
        w.gw.post(&format!("/v1/sessions/{child}/runs"), json!({"content": "x"})).await;
    assert_eq!((code, &error["error"]["code"]), (409, &json!("child-session")), "{error}");
    let goal = json!({"objective": "side work", "maxRounds": 1});
    let (code, error) = w.gw.put(&format!("/v1/sessions/{child}/goal"), goal).await;
    assert_eq!((code, &error["error"]["code"]), (409, &json!("child-session")), "{error}");

    w.mock.push_for("STEER-IN", Reply::text("Steered.", 1));
    w.mock.push_for("settled", Reply::text("Noted.", 1));
    let (code, _) = w.gw.post(&messages, json!({"content": "STEER-IN", "delivery": "steer"})).await;
    assert_eq!(code, 202, "steering joins the running turn, which the parent is told of");
    gate.notify_one();
    child_sse.until_idle().await;
    assert_eq!(user_texts(&w, &child).await, ["CHILD-TASK", "STEER-IN"]);
    let (code, error) =
        w.gw.post(&messages, json!({"content": "again", "delivery": "steer"})).await;
    assert_eq!((code, &error["error"]["code"]), (409, &json!("child-session")), "idle: {error}");
    let (code, _) = w.gw.post(&format!("/v1/sessions/{child}/cancel"), json!({})).await;
    assert_eq!(code, 202, "a cancel is always taken");
}

#[tokio::test]
async fn a_grandchilds_result_that_wakes_an_idle_child_settles_it_again_for_its_parent() {
    let w = world().await;
    let spawn = |prompt: &str| {
        let args = json!({"prompt": prompt}).to_string();
        Reply::tool_call("s1", "spawn_agent", &args, 1)
    };
    let (grandchild_reply, gate) = held("G-RESULT");
    w.mock.push_for("PARENT-GO", spawn("C-TASK"));
    w.mock.push_for("C-TASK", spawn("G-TASK"));
    w.mock.push_for("G-TASK", grandchild_reply);
    w.mock.push_for("G-RESULT", Reply::text("C-RELAYS", 1));
    w.mock.push_for("C-RELAYS", Reply::text("Parent noted.", 1));
    w.mock.push_for("messageId", Reply::text("Spawned.", 1));
    w.mock.push_for("messageId", Reply::text("Spawned.", 1));
    w.mock.push_for("settled", Reply::text("Noted.", 1));
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    w.send(&s, json!({"content": "PARENT-GO"})).await;
    // The child spawned the grandchild and settled once: the grandchild is still at work.
    until_notice_answered(&mut sse).await;
    gate.notify_one();

    // The grandchild's result wakes the idle child; its answer is owed to the parent again.
    let relayed = |f: &Frame| matches!(f, Frame::Event(_, e) if e["type"] == "user/message" && e["data"]["content"][0]["text"].as_str().is_some_and(|t| t.contains("C-RELAYS")));
    sse.until(relayed).await;
    let notices = notices(&w, &s).await;
    assert_eq!(notices.len(), 2, "one per settlement of the child: {notices:?}");
    assert!(notices[1]["content"][0]["text"].as_str().unwrap().contains("C-RELAYS"));
}
