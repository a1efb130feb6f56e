//! AG-UI at `POST /ag-ui` (`docs/interfaces.md`, "AG-UI"): `@ag-ui/client`'s `HttpAgent`
//! against the real gateway (ignored: npm), and what a frontend cannot see for itself (keys,
//! tenants, a retried run, a reconnect) read off the wire.

use airlock_tests::gateway::{Gateway, keyed_client};
use airlock_tests::world::tenants;
use serde_json::{Value, json};

use super::{gateway, held, node};

/// The AG-UI events of a run's types.
fn types(run: &Value) -> Vec<&str> {
    run["types"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect()
}

#[tokio::test]
#[ignore = "needs @ag-ui/client from npm; .ci/run installs it"]
async fn http_agent_run_agent_streams_a_demo_turn_whose_every_event_is_valid_ag_ui() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, false);
    let seen = node("ag-ui.mjs", &gw.base, "turn");
    let run = &seen["first"];
    assert_eq!(
        types(run),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED"
        ],
        "{run}"
    );
    assert!(run["text"].as_str().unwrap().contains("hello from AG-UI"), "{run}");
    assert_eq!(run["outcome"], json!({"type": "success"}));
    // The agent's own state: the person's message, then the answer.
    let roles: Vec<&str> =
        seen["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant"]);
    // The thread is a session, and the run is in its log.
    let thread = seen["threadId"].as_str().unwrap();
    let log = gw.log(thread).await;
    assert!(log.iter().any(|e| e["type"] == "turn/end"), "{log:?}");
}

#[tokio::test]
#[ignore = "needs @ag-ui/client from npm; .ci/run installs it"]
async fn an_ag_ui_tool_call_and_its_result_arrive_as_tool_call_events() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, false);
    let run = &node("ag-ui.mjs", &gw.base, "tool")["first"];
    let events = run["events"].as_array().unwrap();
    let start = events.iter().find(|e| e["type"] == "TOOL_CALL_START").expect("a call");
    assert_eq!(start["toolCallName"], "echo");
    let id = &start["toolCallId"];
    let args: String = events
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_ARGS" && e["toolCallId"] == *id)
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(serde_json::from_str::<Value>(&args).unwrap(), json!({"text": "ping"}));
    let result = events.iter().find(|e| e["type"] == "TOOL_CALL_RESULT").expect("a result");
    assert_eq!(result["toolCallId"], *id);
    assert_eq!(result["content"], "echo: ping");
    assert!(run["text"].as_str().unwrap().contains("echo: ping"), "{run}");
}

#[tokio::test]
#[ignore = "needs @ag-ui/client from npm; .ci/run installs it"]
async fn an_ag_ui_approval_is_an_interrupt_and_the_resumed_run_completes() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, true);
    let seen = node("ag-ui.mjs", &gw.base, "approval");
    let first = &seen["first"];
    assert_eq!(first["outcome"]["type"], "interrupt", "{first}");
    let interrupt = &first["outcome"]["interrupts"][0];
    assert_eq!(interrupt["reason"], "tool_approval");
    assert_eq!(interrupt["metadata"]["toolName"], "echo");
    assert_eq!(seen["interrupts"], json!([interrupt["id"]]), "the agent holds it pending");
    assert!(!types(first).contains(&"TOOL_CALL_RESULT"), "nothing ran before the approval");
    let second = &seen["second"];
    assert_eq!(second["outcome"], json!({"type": "success"}), "{second}");
    let result =
        second["events"].as_array().unwrap().iter().find(|e| e["type"] == "TOOL_CALL_RESULT");
    assert_eq!(result.expect("the approved call ran")["content"], "echo: approved?");
    let log = gw.log(seen["threadId"].as_str().unwrap()).await;
    let approvals: Vec<&Value> = log.iter().filter(|e| e["type"] == "tool/approval").collect();
    assert_eq!(approvals.len(), 2, "requested, then approved: {approvals:?}");
    assert_eq!(approvals[1]["data"]["state"], "approved");
}

#[tokio::test]
#[ignore = "needs @ag-ui/client from npm; .ci/run installs it"]
async fn the_same_ag_ui_run_id_posted_twice_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, false);
    let seen = node("ag-ui.mjs", &gw.base, "sameRunId");
    assert_eq!(seen["first"]["events"], seen["second"]["events"], "the same run, told twice");
    let log = gw.log(seen["threadId"].as_str().unwrap()).await;
    let turns = log.iter().filter(|e| e["type"] == "turn/start").count();
    let sent = log.iter().filter(|e| e["type"] == "user/message").count();
    assert_eq!((turns, sent), (1, 1), "{log:?}");
}

#[tokio::test]
#[ignore = "needs @ag-ui/client from npm; .ci/run installs it"]
async fn a_tool_the_ag_ui_frontend_declares_gets_its_result_posted_back() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, false);
    let seen = node("ag-ui.mjs", &gw.base, "clientTool");
    let first = &seen["first"];
    let start = first["events"].as_array().unwrap().iter().find(|e| e["type"] == "TOOL_CALL_START");
    let id = &start.expect("the model called the frontend's tool")["toolCallId"];
    assert_eq!(first["outcome"], json!({"type": "success", "pendingToolCallIds": [id]}));
    let second = &seen["second"];
    let result =
        second["events"].as_array().unwrap().iter().find(|e| e["type"] == "TOOL_CALL_RESULT");
    assert_eq!(result.expect("the result is in the log")["content"], "cerulean");
    assert!(second["text"].as_str().unwrap().contains("cerulean"), "{second}");
    let log = gw.log(seen["threadId"].as_str().unwrap()).await;
    let call = log.iter().find(|e| e["type"] == "tool/call").unwrap();
    assert_eq!(call["data"]["client"], true, "{call}");
}

/// An AG-UI stream's frames: each one's `id` (when it has one) and event.
async fn frames(res: reqwest::Response) -> Vec<(Option<u64>, Value)> {
    assert_eq!(res.status(), 200);
    let text = res.text().await.unwrap();
    text.split("\n\n")
        .filter_map(|frame| {
            let field =
                |name: &str| frame.lines().find_map(|line| line.strip_prefix(name)).map(str::trim);
            let data = field("data:")?;
            Some((field("id:").map(|id| id.parse().unwrap()), serde_json::from_str(data).unwrap()))
        })
        .collect()
}

/// A POST of `input` to `/ag-ui`, after `last_event_id` when given.
async fn post(gw: &Gateway, input: &Value, last_event_id: Option<u64>) -> reqwest::Response {
    post_as(&gw.client, gw, input, last_event_id).await
}

/// [`post`] by `client`.
async fn post_as(
    client: &reqwest::Client,
    gw: &Gateway,
    input: &Value,
    last_event_id: Option<u64>,
) -> reqwest::Response {
    let mut request = client.post(gw.url("/ag-ui")).json(input);
    if let Some(id) = last_event_id {
        request = request.header("last-event-id", id.to_string());
    }
    request.send().await.unwrap()
}

/// A `RunAgentInput` of one user message.
fn input(thread: &str, run: &str, text: &str) -> Value {
    json!({"threadId": thread, "runId": run, "state": {}, "tools": [], "context": [],
        "forwardedProps": {}, "messages": [{"id": format!("{run}-m"), "role": "user",
        "content": text}]})
}

#[tokio::test]
async fn an_ag_ui_run_posted_again_with_last_event_id_goes_on_after_that_event() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, false);
    let input = input("reconnect", "run-1", "/tool echo {\"text\":\"again\"}");
    let whole = frames(post(&gw, &input, None).await).await;
    // Cut after the frame that ends the tool call's first arguments: the text and the call are
    // open there.
    let cut = whole.iter().position(|(_, e)| e["type"] == "TOOL_CALL_ARGS").unwrap();
    let seq = whole[cut].0.expect("a frame that ends a log event's events has its seq");
    let joined = frames(post(&gw, &input, Some(seq)).await).await;
    let events = |frames: &[(Option<u64>, Value)]| frames.iter().map(|(_, e)| e.clone()).collect();
    let rest: Vec<Value> = events(&whole[cut + 1..]);
    let text = whole.iter().find(|(_, e)| e["type"] == "TEXT_MESSAGE_START").unwrap();
    let call = whole.iter().find(|(_, e)| e["type"] == "TOOL_CALL_START").unwrap();
    let mut reopened = vec![whole[0].1.clone(), text.1.clone()];
    let mut call = call.1.clone();
    call.as_object_mut().unwrap().remove("parentMessageId");
    reopened.push(call);
    reopened.extend(rest);
    assert_eq!(events(&joined), reopened);
    let log = gw.log("reconnect").await;
    assert_eq!(log.iter().filter(|e| e["type"] == "user/message").count(), 1, "ran once");
}

#[tokio::test]
async fn an_ag_ui_thread_is_a_session_of_the_callers_tenant() {
    let t = tenants().await;
    let (a, b) = (keyed_client(&t.a), keyed_client(&t.b));
    let input = input("their-thread", "run-1", "hello");
    let res = post(&t.gw, &input, None).await;
    assert_eq!(res.status(), 401, "no key, no run");
    let run = frames(post_as(&a, &t.gw, &input, None).await).await;
    assert_eq!(run.last().unwrap().1["type"], "RUN_FINISHED", "{run:?}");
    let res = a.get(t.gw.url("/v1/sessions/their-thread")).send().await.unwrap();
    assert_eq!(res.status(), 200, "the thread is tenant a's session");
    let res = post_as(&b, &t.gw, &input, None).await;
    assert_eq!(res.status(), 404, "another tenant's thread is not found");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "session-not-found");
}

#[tokio::test]
async fn an_ag_ui_input_is_refused_saying_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, false);
    let refused = |input: Value| {
        let gw = &gw;
        async move {
            let res = post(gw, &input, None).await;
            let code = res.status().as_u16();
            (code, res.json::<Value>().await.unwrap())
        }
    };
    let (code, body) = refused(json!({"runId": "r", "messages": []})).await;
    assert_eq!(code, 400, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("threadId"), "{body}");
    let (code, body) = refused(input("not a thread id", "r", "hi")).await;
    assert_eq!(code, 400, "{body}");
    let mut image = input("t", "r", "hi");
    image["messages"][0]["content"] = json!([{"type": "audio", "source": {"type": "url",
        "value": "https://example.com/a.mp3"}}]);
    let (code, body) = refused(image).await;
    assert_eq!(code, 400, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("text or an image"), "{body}");
    // The same runId with other messages is another run.
    frames(post(&gw, &input("t", "r", "hi"), None).await).await;
    let (code, body) = refused(input("t", "r", "something else")).await;
    assert_eq!(code, 409, "{body}");
    assert_eq!(body["error"]["code"], "idempotency-conflict");
}

#[tokio::test]
async fn an_ag_ui_run_with_nothing_to_send_finishes_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, false);
    let empty = json!({"threadId": "quiet", "runId": "r", "messages": []});
    let run = frames(post(&gw, &empty, None).await).await;
    let types: Vec<&Value> = run.iter().map(|(_, e)| &e["type"]).collect();
    assert_eq!(types, ["RUN_STARTED", "RUN_FINISHED"]);
    // And again once the thread has done something.
    frames(post(&gw, &input("quiet", "r2", "hello"), None).await).await;
    let mut again = input("quiet", "r3", "hello");
    again["messages"].as_array_mut().unwrap().push(json!({"id": "a", "role": "assistant"}));
    let run = frames(post(&gw, &again, None).await).await;
    let types: Vec<&Value> = run.iter().map(|(_, e)| &e["type"]).collect();
    assert_eq!(types, ["RUN_STARTED", "RUN_FINISHED"]);
}

#[tokio::test]
async fn an_ag_ui_run_in_flight_is_joined_again_after_a_dropped_stream_with_no_gap() {
    use eventsource_stream::Eventsource;
    use futures::StreamExt;

    let dir = tempfile::tempdir().unwrap();
    let (gw, _mock, gate) = held(&dir).await;
    let input = input("in-flight", "run-1", "take your time");
    // The first connection sees the first chunk, then drops while the model is held.
    let mut first = post(&gw, &input, None).await.bytes_stream().eventsource();
    let mut seen = Vec::new();
    let last_id = loop {
        let frame = first.next().await.unwrap().unwrap();
        let event: Value = serde_json::from_str(&frame.data).unwrap();
        seen.push(event.clone());
        if event["type"] == "TEXT_MESSAGE_CONTENT" {
            break frame.id.parse::<u64>().unwrap();
        }
    };
    drop(first);
    // The same run, posted again after that event, joins it where it is.
    let mut joined = post(&gw, &input, Some(last_id)).await.bytes_stream().eventsource();
    let mut rest = Vec::new();
    loop {
        let frame = joined.next().await.unwrap().unwrap();
        let event: Value = serde_json::from_str(&frame.data).unwrap();
        if event["type"] == "TEXT_MESSAGE_START" {
            gate.notify_one(); // reopened: now let the model go on
        }
        let done = event["type"] == "RUN_FINISHED";
        rest.push(event);
        if done {
            break;
        }
    }
    let text = |events: &[Value]| -> String {
        let deltas = events.iter().filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT");
        deltas.map(|e| e["delta"].as_str().unwrap()).collect()
    };
    assert_eq!(text(&seen) + &text(&rest), "Held, then finished.", "{seen:?} {rest:?}");
    let types: Vec<&str> = rest.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types[..2], ["RUN_STARTED", "TEXT_MESSAGE_START"], "{types:?}");
    assert_eq!(types.last(), Some(&"RUN_FINISHED"));
    let log = gw.log("in-flight").await;
    assert_eq!(log.iter().filter(|e| e["type"] == "user/message").count(), 1, "one run");
}
