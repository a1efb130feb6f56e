//! A person in the loop against the real binary (`docs/semantics.md`): tool approvals over HTTP,
//! client tools, and forks; a waiting approval survives `kill -9`.

use airlock_tests::Reply;
use airlock_tests::gateway::{Frame, Gateway, Sse};
use airlock_tests::world::{World, world};
use serde_json::{Value, json};

/// A session on the mock model with these extra fields (`tools`, `clientTools`).
async fn session(gw: &Gateway, fields: Value) -> String {
    let mut body = json!({"model": "openai:mock"});
    body.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
    let (code, created) = gw.post("/v1/sessions", body).await;
    assert_eq!(code, 201, "{created}");
    created["sessionId"].as_str().unwrap().to_owned()
}

fn call(s: &str, call_id: &str, verb: &str) -> String {
    format!("/v1/sessions/{s}/tool-calls/{call_id}/{verb}")
}

/// Whether a frame is an event of this type.
fn event(kind: &'static str) -> impl Fn(&Frame) -> bool {
    move |frame| matches!(frame, Frame::Event(_, e) if e["type"] == kind)
}

fn of_type<'l>(log: &'l [Value], kind: &str) -> Vec<&'l Value> {
    log.iter().filter(|e| e["type"] == kind).collect()
}

/// A session whose `echo` needs an approval, a message that makes the model call it, and the
/// stream, read up to the approval request.
async fn waiting_for_approval(w: &World) -> (String, Sse) {
    w.mock
        .push(Reply::tool_call("c1", "echo", r#"{"text":"hi"}"#, 2))
        .push(Reply::text("Echoed.", 2));
    let s = session(&w.gw, json!({"tools": [{"name": "echo", "approval": "always"}]})).await;
    let mut sse = w.gw.sse(&s, None).await;
    w.send(&s, json!({"content": "say hi"})).await;
    sse.until(event("tool/approval")).await;
    (s, sse)
}

#[tokio::test]
async fn an_always_approval_call_waits_running_and_approve_runs_it_and_completes_the_turn() {
    let w = world().await;
    let (s, mut sse) = waiting_for_approval(&w).await;
    let (_, status) = w.gw.get(&format!("/v1/sessions/{s}/status")).await;
    assert_eq!(status["status"], "running", "the step waits, the session runs");
    let (code, list) = w.gw.get(&format!("/v1/sessions/{s}/tool-calls?state=waiting")).await;
    assert_eq!(code, 200, "{list}");
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{list}");
    assert_eq!(items[0]["callId"], "c1");
    assert_eq!(items[0]["name"], "echo");
    assert_eq!(items[0]["arguments"], r#"{"text":"hi"}"#);
    assert_eq!(items[0]["kind"], "approval");
    assert!(items[0]["since"].as_u64().unwrap() > 0);
    assert_eq!(w.mock.requests().len(), 1, "the call has not run");

    let (code, body) = w.gw.post(&call(&s, "c1", "result"), json!({"content": "x"})).await;
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("not-waiting")), "{body}");
    let (code, body) = w.gw.post(&call(&s, "c1", "approve"), json!({})).await;
    assert_eq!(code, 202, "{body}");
    sse.until(|f| *f == Frame::Status("idle".into())).await;

    let log = w.gw.log(&s).await;
    let states: Vec<&Value> =
        of_type(&log, "tool/approval").iter().map(|e| &e["data"]["state"]).collect();
    assert_eq!(states, ["requested", "approved"]);
    let results = of_type(&log, "tool/result");
    assert_eq!(results.len(), 1);
    assert!(results[0]["data"]["error"].is_null(), "{}", results[0]);
    assert_eq!(of_type(&log, "turn/end")[0]["data"]["reason"]["kind"], "completed");
    let (code, body) = w.gw.post(&call(&s, "c1", "approve"), json!({})).await;
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("not-waiting")), "{body}");
    let (code, body) = w.gw.post(&call(&s, "nope", "approve"), json!({})).await;
    assert_eq!(
        (code, body["error"]["code"].as_str()),
        (404, Some("tool-call-not-found")),
        "{body}"
    );
    let (_, list) = w.gw.get(&format!("/v1/sessions/{s}/tool-calls")).await;
    assert_eq!(list["items"], json!([]));
}

#[tokio::test]
async fn approve_with_other_arguments_runs_the_call_with_them_logs_them_and_tells_the_model() {
    let w = world().await;
    let (s, mut sse) = waiting_for_approval(&w).await;
    let (code, body) = w.gw.post(&call(&s, "c1", "approve"), json!({"arguments": [1]})).await;
    assert_eq!((code, body["error"]["code"].as_str()), (400, Some("bad-request")), "{body}");
    assert_eq!(body["error"]["details"]["field"], "arguments", "{body}");
    let edited = json!({"arguments": {"text": "bye"}});
    let (code, body) = w.gw.post(&call(&s, "c1", "approve"), edited).await;
    assert_eq!(code, 202, "{body}");
    sse.until(|f| *f == Frame::Status("idle".into())).await;

    let log = w.gw.log(&s).await;
    let approved = of_type(&log, "tool/approval")[1];
    assert_eq!(approved["data"]["arguments"], r#"{"text":"bye"}"#, "{approved}");
    let result = &of_type(&log, "tool/result")[0]["data"]["message"]["content"][0]["content"];
    assert_eq!(result[1]["text"], "echo: bye", "it ran with the person's arguments: {result}");
    let told = result[0]["text"].as_str().unwrap();
    assert!(told.starts_with("(A person approved this call with other arguments"), "{told}");
    let asked = w.mock.requests()[1]["messages"].to_string();
    assert!(asked.contains("A person approved this call with other arguments"), "{asked}");
}

#[tokio::test]
async fn a_denied_call_sends_the_model_denied_by_user_and_the_reason() {
    let w = world().await;
    let (s, mut sse) = waiting_for_approval(&w).await;
    let (code, body) =
        w.gw.post(&call(&s, "c1", "deny"), json!({"reason": "not in production"})).await;
    assert_eq!(code, 202, "{body}");
    sse.until(|f| *f == Frame::Status("idle".into())).await;
    let requests = w.mock.requests();
    assert_eq!(requests.len(), 2);
    let tool_message = requests[1]["messages"].as_array().unwrap().last().unwrap().to_string();
    assert!(tool_message.contains("DENIED_BY_USER"), "{tool_message}");
    assert!(tool_message.contains("not in production"), "{tool_message}");
    let log = w.gw.log(&s).await;
    let result = of_type(&log, "tool/result")[0];
    assert_eq!(result["data"]["error"]["code"], "DENIED_BY_USER");
    assert_eq!(of_type(&log, "tool/approval")[1]["data"]["reason"], "not in production");
}

#[tokio::test]
async fn a_call_waiting_for_approval_survives_kill_9_and_runs_once_when_approved() {
    survives_kill_9(false).await;
}

#[tokio::test]
async fn a_session_asleep_while_its_call_waits_for_approval_survives_kill_9_and_runs_once() {
    survives_kill_9(true).await;
}

/// A session waiting for an approval (`asleep`: once its core instance has slept) is killed with
/// `kill -9`; after the restart the call still waits, and approving it runs it once.
async fn survives_kill_9(asleep: bool) {
    let mut w = world().await;
    let (s, sse) = waiting_for_approval(&w).await;
    drop(sse);
    if asleep {
        w.gw.until_metric("airlock_sessions_asleep", |n| n >= 1.0).await;
    }
    w.gw = w.gw.crash_and_restart();

    let (_, status) = w.gw.get(&format!("/v1/sessions/{s}/status")).await;
    assert_eq!(status["status"], "running", "still waiting after the restart");
    let (_, list) = w.gw.get(&format!("/v1/sessions/{s}/tool-calls")).await;
    assert_eq!(list["items"][0]["callId"], "c1", "{list}");
    let mut sse = w.gw.sse(&s, None).await;
    let (code, body) = w.gw.post(&call(&s, "c1", "approve"), json!({})).await;
    assert_eq!(code, 202, "{body}");
    sse.until(|f| *f == Frame::Status("idle".into())).await;

    let log = w.gw.log(&s).await;
    let results = of_type(&log, "tool/result");
    assert_eq!(results.len(), 1, "run once: {results:?}");
    assert!(results[0]["data"]["error"].is_null(), "{}", results[0]);
    assert_eq!(of_type(&log, "tool/call").len(), 1);
    assert_eq!(of_type(&log, "turn/end").len(), 1);
    assert_eq!(of_type(&log, "turn/end")[0]["data"]["reason"]["kind"], "completed");
}

/// A session whose call waits for approval sleeps (its core instance dropped) and approving it
/// wakes it where it was: the call runs once and the log goes on with no `resume` header.
#[tokio::test]
async fn a_session_waiting_for_approval_sleeps_and_approving_wakes_it_where_it_was() {
    let w = world().await;
    let (s, mut sse) = waiting_for_approval(&w).await;
    w.gw.until_metric("airlock_sessions_asleep", |n| n >= 1.0).await;
    let (_, status) = w.gw.get(&format!("/v1/sessions/{s}/status")).await;
    assert_eq!(status["status"], "running", "asleep, still waiting");
    let (code, body) = w.gw.post(&call(&s, "c1", "approve"), json!({})).await;
    assert_eq!(code, 202, "{body}");
    sse.until(|f| *f == Frame::Status("idle".into())).await;
    let log = w.gw.log(&s).await;
    assert_eq!(of_type(&log, "tool/result").len(), 1);
    let headers = of_type(&log, "request/header");
    assert!(headers.iter().all(|h| h["data"]["reason"] != "resume"), "{headers:?}");
    assert_eq!(of_type(&log, "turn/end")[0]["data"]["reason"]["kind"], "completed");
}

#[tokio::test]
async fn a_client_tool_call_waits_for_its_result_and_a_second_result_is_refused() {
    let w = world().await;
    w.mock
        .push(Reply::tool_call("c1", "ask_user", r#"{"question":"Colour?"}"#, 2))
        .push(Reply::text("Blue it is.", 2));
    let ask = json!({"name": "ask_user", "description": "Asks the person", "parameters": {"type": "object"}});
    let s = session(&w.gw, json!({"clientTools": [ask]})).await;
    let mut sse = w.gw.sse(&s, None).await;
    w.send(&s, json!({"content": "ask me"})).await;
    let frames = sse.until(event("tool/call")).await;
    let Some(Frame::Event(_, called)) = frames.last() else { unreachable!() };
    assert_eq!(called["data"]["client"], true, "{called}");
    let offered = w.mock.requests()[0]["tools"].to_string();
    assert!(offered.contains("ask_user"), "the model is offered the client tool: {offered}");
    let (_, list) = w.gw.get(&format!("/v1/sessions/{s}/tool-calls")).await;
    assert_eq!(list["items"][0]["kind"], "client", "{list}");

    let (code, body) = w.gw.post(&call(&s, "c1", "approve"), json!({})).await;
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("not-waiting")), "{body}");
    let (code, body) = w.gw.post(&call(&s, "c1", "result"), json!({"content": "blue"})).await;
    assert_eq!(code, 202, "{body}");
    sse.until(|f| *f == Frame::Status("idle".into())).await;
    let last = w.mock.requests()[1]["messages"].as_array().unwrap().last().unwrap().to_string();
    assert!(last.contains("blue"), "{last}");
    let (code, body) = w.gw.post(&call(&s, "c1", "result"), json!({"content": "red"})).await;
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("not-waiting")), "{body}");
}

#[tokio::test]
async fn a_client_tool_without_a_result_in_time_fails_tool_timeout() {
    let w = world().await;
    w.mock.push(Reply::tool_call("c1", "ask_user", "{}", 1)).push(Reply::text("Never mind.", 1));
    let ask = json!({"name": "ask_user", "timeoutMs": 300});
    let s = session(&w.gw, json!({"clientTools": [ask]})).await;
    let mut sse = w.gw.sse(&s, None).await;
    w.send(&s, json!({"content": "ask me"})).await;
    sse.until(event("turn/end")).await;
    let log = w.gw.log(&s).await;
    assert_eq!(of_type(&log, "tool/result")[0]["data"]["error"]["code"], "TOOL_TIMEOUT");
    assert_eq!(of_type(&log, "turn/end")[0]["data"]["reason"]["kind"], "completed");
}

#[tokio::test]
async fn a_bad_tool_policy_or_client_tool_is_refused_naming_what_to_fix() {
    let w = world().await;
    let bad = [
        json!({"tools": [{"name": "nope", "approval": "always"}]}),
        json!({"tools": [{"name": "echo", "approval": "sometimes"}]}),
        json!({"clientTools": [{"name": "a.b"}]}),
        json!({"clientTools": [{"name": "echo"}]}),
        json!({"clientTools": [{"name": "ask", "parameters": "text"}]}),
    ];
    for fields in bad {
        let mut body = json!({"model": "openai:mock"});
        body.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
        let (code, answer) = w.gw.post("/v1/sessions", body.clone()).await;
        assert_eq!(code, 400, "{body} → {answer}");
        assert!(!answer["error"]["message"].as_str().unwrap().is_empty());
    }
}

#[tokio::test]
async fn a_fork_inside_a_turn_copies_the_prefix_closes_it_and_runs_turns_of_its_own() {
    let w = world().await;
    w.mock
        .push(Reply::tool_call("c1", "echo", r#"{"text":"hi"}"#, 1))
        .push(Reply::text("Echoed.", 1))
        .push(Reply::text("The fork answers.", 1));
    let s = session(&w.gw, json!({})).await;
    let mut sse = w.gw.sse(&s, None).await;
    w.send(&s, json!({"content": "say hi"})).await;
    sse.until(event("turn/end")).await;
    let source = w.gw.log(&s).await;
    let at = of_type(&source, "tool/call")[0]["seq"].as_u64().unwrap();

    let (code, fork) =
        w.gw.post(&format!("/v1/sessions/{s}/fork"), json!({"atSeq": at, "sessionId": "f1"})).await;
    assert_eq!(code, 201, "{fork}");
    assert_eq!(fork["sessionId"], "f1");
    assert_eq!(fork["forkedFrom"], json!({"sessionId": s, "seq": at}));
    let copy = w.gw.log("f1").await;
    assert_eq!(copy[..=at as usize], source[..=at as usize], "the copied prefix");
    let closers: Vec<String> = copy[at as usize + 1..]
        .iter()
        .map(|e| match e["data"]["error"]["code"].as_str() {
            Some(code) => format!("{} {code}", e["type"].as_str().unwrap()),
            None => e["type"].as_str().unwrap().to_owned(),
        })
        .collect();
    assert_eq!(
        closers,
        ["tool/result TOOL_OUTCOME_UNKNOWN", "step/end", "turn/end", "session/end-seed",]
    );
    assert_eq!(copy[copy.len() - 2]["data"]["reason"]["kind"], "interrupted");

    // After the seed: its own copy of the source's `turn/end` is not the one waited for.
    let mut fork_sse = w.gw.sse("f1", Some(copy.len() as u64 - 1)).await;
    w.send("f1", json!({"content": "and now?"})).await;
    fork_sse.until(event("turn/end")).await;
    let copy = w.gw.log("f1").await;
    let answer = of_type(&copy, "assistant/message").last().unwrap()["data"]["message"].to_string();
    assert!(answer.contains("The fork answers."), "{answer}");
    assert_eq!(of_type(&copy, "turn/start").len(), 2, "its own turn");
    assert_eq!(w.gw.log(&s).await, source, "the source is unchanged");

    let (code, body) = w.gw.post(&format!("/v1/sessions/{s}/fork"), json!({"atSeq": 10_000})).await;
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("seq-not-logged")), "{body}");
    let (code, body) =
        w.gw.post(&format!("/v1/sessions/{s}/fork"), json!({"sessionId": "f1"})).await;
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("session-conflict")), "{body}");
    let (code, _) = w.gw.post("/v1/sessions/nope/fork", json!({})).await;
    assert_eq!(code, 404);
}
