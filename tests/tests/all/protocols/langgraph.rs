//! The LangGraph Platform API under `/langgraph` (`docs/interfaces.md`, "LangGraph"):
//! `@langchain/langgraph-sdk`'s Client against the real gateway (ignored: npm), and what a client
//! cannot see for itself (keys, tenants, refusals) read off the wire.

use airlock_tests::gateway::keyed_client;
use airlock_tests::world::tenants;
use serde_json::{Value, json};

use super::{gateway, held, node};

/// The text of a LangChain message.
fn text(message: &Value) -> &str {
    message["content"].as_str().unwrap_or_default()
}

/// A state's last message.
fn last(values: &Value) -> &Value {
    values["messages"].as_array().and_then(|m| m.last()).unwrap_or(&Value::Null)
}

#[tokio::test]
#[ignore = "needs @langchain/langgraph-sdk from npm; .ci/run installs it"]
async fn a_langgraph_run_streams_values_whose_last_message_is_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, false);
    let seen = node("langgraph.mjs", &gw.base, "values");
    assert_eq!(seen["assistants"][0]["assistant_id"], "agent");
    let thread = seen["thread"]["thread_id"].as_str().unwrap();
    assert_eq!(seen["thread"]["status"], "idle");
    let first = &seen["first"];
    assert_eq!(first["events"][0], "metadata", "{first}");
    assert!(first["events"].as_array().unwrap().iter().skip(1).all(|e| e == "values"), "{first}");
    let answer = last(&first["values"]);
    assert_eq!(answer["type"], "ai");
    assert!(text(answer).contains("hello from LangGraph"), "{first}");
    assert_eq!(first["values"]["messages"][0]["type"], "human");
    // The second run's modes: updates of each node, the answer's text as message chunks.
    let events: Vec<&str> =
        seen["second"]["events"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    for mode in ["updates", "messages", "values"] {
        assert!(events.contains(&mode), "{mode} in {events:?}");
    }
    let parts = seen["second"]["parts"].as_array().unwrap();
    let chunks: String = parts
        .iter()
        .filter(|p| p["event"] == "messages")
        .map(|p| p["data"][0]["content"].as_str().unwrap())
        .collect();
    let state = &seen["state"]["values"];
    assert_eq!(chunks, text(last(state)), "the chunks add up to the answer");
    let chunk_id = &parts.iter().find(|p| p["event"] == "messages").unwrap()["data"][0]["id"];
    assert_eq!(chunk_id, &last(state)["id"], "a chunk's message is the state's");
    // History: a state per message, newest first, each the one before plus one message.
    let history = seen["history"].as_array().unwrap();
    assert_eq!(history.len(), 4, "{history:?}");
    assert_eq!(history[0]["values"], *state);
    assert_eq!(history[3]["values"]["messages"].as_array().unwrap().len(), 1);
    assert_eq!(history[0]["parent_checkpoint"], history[1]["checkpoint"]);
    assert_eq!(seen["found"], json!([thread]), "found by its metadata");
    assert_eq!(seen["after"]["values"], *state);
    let log = gw.log(thread).await;
    assert_eq!(
        log.iter().filter(|e| e["type"] == "turn/end").count(),
        2,
        "the thread is a session"
    );
}

#[tokio::test]
#[ignore = "needs @langchain/langgraph-sdk from npm; .ci/run installs it"]
async fn a_langgraph_interrupt_is_resumed_with_a_command() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, true);
    let seen = node("langgraph.mjs", &gw.base, "interrupt");
    let interrupt = &seen["asked"]["__interrupt__"][0];
    let request = &interrupt["value"]["action_requests"][0];
    assert_eq!(
        (&request["name"], &request["args"]),
        (&json!("echo"), &json!({"text": "approved?"}))
    );
    assert_eq!(seen["waiting"]["status"], "interrupted", "{seen}");
    assert_eq!(seen["waiting"]["interrupts"]["tools"][0]["id"], interrupt["id"]);
    let resumed = &seen["resumed"];
    let messages = resumed["messages"].as_array().unwrap();
    let tool = messages.iter().find(|m| m["type"] == "tool").expect("the approved call ran");
    assert_eq!(text(tool), "echo: approved?");
    assert!(text(last(resumed)).contains("echo: approved?"), "{resumed}");
    assert!(resumed.get("__interrupt__").is_none(), "nothing waits any more");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs @langchain/langgraph-sdk from npm; .ci/run installs it"]
async fn runs_cancel_stops_a_slow_langgraph_run() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, _mock, _gate) = held(&dir).await;
    let base = gw.base.clone();
    let seen =
        tokio::task::spawn_blocking(move || node("langgraph.mjs", &base, "cancel")).await.unwrap();
    assert_eq!(seen["canceled"], true, "{seen}");
    assert_eq!(seen["after"]["status"], "idle", "{seen}");
    let thread = seen["after"]["thread_id"].as_str().unwrap();
    let log = gw.log(thread).await;
    let end = log.iter().rev().find(|e| e["type"] == "turn/end").unwrap();
    assert_eq!(end["data"]["reason"]["kind"], "aborted", "{log:?}");
}

#[tokio::test]
#[ignore = "needs @langchain/langgraph-sdk from npm; .ci/run installs it"]
async fn a_langgraph_run_joined_by_id_with_the_sdk_goes_on_after_the_last_event_seen() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, false);
    let seen = node("langgraph.mjs", &gw.base, "join");
    let answer = text(last(&seen["values"]));
    assert!(answer.contains("tell me something"), "{seen}");
    assert_eq!(seen["text"], answer, "every chunk once, none missing: {seen}");
    assert_eq!(seen["rest"], json!(["metadata", "values"]), "nothing seen before again: {seen}");
}

#[tokio::test]
async fn a_langgraph_thread_is_a_session_of_the_callers_tenant_and_takes_x_api_key() {
    let t = tenants().await;
    let (a, b) = (keyed_client(&t.a), keyed_client(&t.b));
    let url = t.gw.url("/langgraph/threads");
    let res = t.gw.client.post(&url).json(&json!({"thread_id": "lg"})).send().await.unwrap();
    assert_eq!(res.status(), 401, "no key, no thread");
    let key = t.a.clone();
    let res = t.gw.client.post(&url).header("x-api-key", key).json(&json!({"thread_id": "lg"}));
    let thread: Value = res.send().await.unwrap().json().await.unwrap();
    assert_eq!(thread["thread_id"], "lg", "LangGraph's SDK sends its key as x-api-key: {thread}");
    let res = a.get(t.gw.url("/v1/sessions/lg")).send().await.unwrap();
    assert_eq!(res.status(), 200, "the thread is tenant a's session");
    let res = b.get(t.gw.url("/langgraph/threads/lg")).send().await.unwrap();
    assert_eq!(res.status(), 404, "another tenant's thread is not found");
    let found = b.post(t.gw.url("/langgraph/threads/search")).json(&json!({})).send().await;
    let found: Value = found.unwrap().json().await.unwrap();
    assert_eq!(found, json!([]), "nor listed");
    let res = a.post(&url).json(&json!({"thread_id": "lg"})).send().await.unwrap();
    assert_eq!(res.status(), 409, "made once");
    let res = a.post(&url).json(&json!({"thread_id": "lg", "if_exists": "do_nothing"}));
    assert_eq!(res.send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn a_langgraph_request_is_refused_saying_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, false);
    let post = |path: &str, body: Value| {
        let request = gw.client.post(gw.url(path)).json(&body);
        async move {
            let res = request.send().await.unwrap();
            (res.status().as_u16(), res.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let (code, _) = post("/langgraph/threads", json!({"thread_id": "t"})).await;
    assert_eq!(code, 200);
    let run = |body: Value| post("/langgraph/threads/t/runs/stream", body);
    let (code, body) = run(json!({"assistant_id": "other"})).await;
    assert_eq!((code, &body["error"]["code"]), (404, &json!("assistant-not-found")), "{body}");
    let (code, body) =
        run(json!({"assistant_id": "agent", "input": {"messages": [{"content": "x"}]}})).await;
    assert_eq!(code, 400, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("human"), "{body}");
    let (code, body) = run(json!({"assistant_id": "agent", "checkpoint_id": "7"})).await;
    assert_eq!((code, &body["error"]["details"]["field"]), (400, &json!("checkpoint")), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("history"), "{body}");
    let (code, body) = run(json!({"assistant_id": "agent", "command": {"resume": 42}})).await;
    assert_eq!(code, 400, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("decision"), "{body}");
    let (code, body) = run(json!({"assistant_id": "agent", "command": {"resume": true}})).await;
    assert_eq!(code, 200, "nothing waits: a resume answers nothing ({body})");
    let (code, body) = run(json!({"assistant_id": "agent", "stream_mode": ["values", "x"]})).await;
    assert_eq!((code, &body["error"]["details"]["field"]), (400, &json!("stream_mode")), "{body}");
    let (code, body) = post("/langgraph/threads/search", json!({"limit": 5000})).await;
    assert_eq!((code, &body["error"]["details"]["field"]), (400, &json!("limit")), "{body}");
    let (code, body) = post("/langgraph/threads/t/runs/99/cancel", json!({})).await;
    assert_eq!((code, &body["error"]["code"]), (404, &json!("run-not-found")), "{body}");
    for query in ["action=rollback", "wait=maybe"] {
        let (code, body) =
            post(&format!("/langgraph/threads/t/runs/0/cancel?{query}"), json!({})).await;
        assert_eq!(code, 400, "{query}: {body}");
    }
    let join = gw.client.get(gw.url("/langgraph/threads/t/runs/0/stream?stream_mode=nope"));
    let res = join.send().await.unwrap();
    assert_eq!(res.status(), 400, "an unknown stream mode is refused");
    let (code, _) =
        post("/langgraph/threads/nothing/runs/stream", json!({"assistant_id": "agent"})).await;
    assert_eq!(code, 404, "runs need a thread made first (or if_not_exists: create)");
}

#[tokio::test]
#[ignore = "needs @langchain/langgraph-sdk, React, esbuild and playwright-core from npm and Debian's Chromium; .ci/run installs them"]
async fn a_langgraph_chat_page_with_use_stream_talks_to_airlock_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, false);
    let seen = node("langgraph-browser.mjs", &gw.base, "hello from the browser");
    let messages = seen["messages"].as_array().unwrap();
    assert_eq!(messages[0], json!({"type": "human", "text": "hello from the browser"}), "{seen}");
    let answer = messages.iter().find(|m| m["type"] == "ai").expect("the answer is rendered");
    assert!(answer["text"].as_str().unwrap().contains("hello from the browser"), "{seen}");
    assert_eq!(seen["errors"], json!([]), "the page threw nothing");
}

#[tokio::test]
async fn a_langgraph_run_in_flight_is_joined_after_a_dropped_stream_with_no_gap() {
    use eventsource_stream::Eventsource;
    use futures::StreamExt;

    let dir = tempfile::tempdir().unwrap();
    let (gw, _mock, gate) = held(&dir).await;
    let made = gw.client.post(gw.url("/langgraph/threads")).json(&json!({"thread_id": "flight"}));
    assert_eq!(made.send().await.unwrap().status(), 200);
    let body = json!({"assistant_id": "agent", "stream_mode": ["messages-tuple", "values"],
        "input": {"messages": [{"type": "human", "content": "take your time"}]}});
    let res = gw.client.post(gw.url("/langgraph/threads/flight/runs/stream")).json(&body);
    let res = res.send().await.unwrap();
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    let run = res.headers()["content-location"].to_str().unwrap().to_owned();
    assert!(location.starts_with(&format!("{run}/stream?stream_mode=")), "{location} {run}");
    // The first connection sees the first text, then drops while the model is held.
    let mut first = res.bytes_stream().eventsource();
    let (seen, last_id) = loop {
        let frame = first.next().await.unwrap().unwrap();
        if frame.event == "messages" {
            let data: Value = serde_json::from_str(&frame.data).unwrap();
            break (data[0]["content"].as_str().unwrap().to_owned(), frame.id);
        }
    };
    drop(first);
    // Joined at its Location (relative to the SDK's apiUrl) after that event.
    let join = gw.client.get(gw.url(&format!("/langgraph{location}")));
    let res = join.header("last-event-id", &last_id).send().await.unwrap();
    let mut joined = res.bytes_stream().eventsource();
    let mut rest = String::new();
    let mut last_values = Value::Null;
    while let Some(frame) = joined.next().await {
        let frame = frame.unwrap();
        match frame.event.as_str() {
            "metadata" => gate.notify_one(), // joined: now let the model go on
            "messages" => {
                let data: Value = serde_json::from_str(&frame.data).unwrap();
                rest += data[0]["content"].as_str().unwrap();
            }
            "values" => last_values = serde_json::from_str(&frame.data).unwrap(),
            _ => {}
        }
    }
    assert_eq!(seen + &rest, "Held, then finished.", "every chunk once");
    assert_eq!(text(last(&last_values)), "Held, then finished.");
}

#[tokio::test]
async fn a_langgraph_run_from_an_earlier_checkpoint_goes_on_a_new_thread_forked_there() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, false);
    let made = gw.client.post(gw.url("/langgraph/threads"));
    let made = made.json(&json!({"thread_id": "trunk", "metadata": {"app": "x"}}));
    assert_eq!(made.send().await.unwrap().status(), 200);
    let run = |body: Value| {
        let request = gw.client.post(gw.url("/langgraph/threads/trunk/runs/stream")).json(&body);
        async move {
            let res = request.send().await.unwrap();
            assert_eq!(res.status(), 200);
            let at = res.headers()["content-location"].to_str().unwrap().to_owned();
            let frames = res.text().await.unwrap();
            let data = |event: &str| {
                let frame =
                    frames.split("\n\n").filter(|f| f.contains(&format!("event: {event}\n")));
                let data =
                    frame.last().and_then(|f| f.lines().find_map(|l| l.strip_prefix("data: ")));
                serde_json::from_str::<Value>(data.unwrap_or("null")).unwrap()
            };
            (at, data("metadata"), data("values"))
        }
    };
    let ask = |text: &str| json!({"assistant_id": "agent", "input": {"messages": [{"type": "human", "content": text}]}});
    run(ask("first question")).await;
    run(ask("second question")).await;
    let history = gw.client.post(gw.url("/langgraph/threads/trunk/history")).json(&json!({}));
    let history: Value = history.send().await.unwrap().json().await.unwrap();
    let states = history.as_array().unwrap();
    let after_first =
        states.iter().find(|s| s["values"]["messages"].as_array().unwrap().len() == 2);
    let checkpoint = after_first.unwrap()["checkpoint"].clone();

    let mut branch = ask("another way");
    branch["checkpoint"] = checkpoint;
    let (at, metadata, values) = run(branch).await;
    let fork = metadata["thread_id"].as_str().unwrap();
    assert_ne!(fork, "trunk", "{metadata}");
    assert!(at.starts_with(&format!("/threads/{fork}/runs/")), "{at}");
    let said: Vec<&str> = values["messages"].as_array().unwrap().iter().map(text).collect();
    assert_eq!(said.len(), 4, "{values}");
    assert_eq!((said[0], said[2]), ("first question", "another way"), "{values}");
    // The fork is a thread of its own, with the trunk's metadata; the trunk is as it was.
    let thread = gw.client.get(gw.url(&format!("/langgraph/threads/{fork}")));
    let thread: Value = thread.send().await.unwrap().json().await.unwrap();
    assert_eq!(thread["metadata"]["app"], "x", "{thread}");
    let trunk = gw.client.get(gw.url("/langgraph/threads/trunk/state"));
    let trunk: Value = trunk.send().await.unwrap().json().await.unwrap();
    let said: Vec<&str> =
        trunk["values"]["messages"].as_array().unwrap().iter().map(text).collect();
    assert_eq!((said.len(), said[2]), (4, "second question"), "{trunk}");
}

#[tokio::test]
async fn a_langgraph_run_on_an_interrupted_thread_ends_at_once_with_the_interrupts_still_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, true);
    let made = gw.client.post(gw.url("/langgraph/threads")).json(&json!({"thread_id": "asks"}));
    assert_eq!(made.send().await.unwrap().status(), 200);
    let run = |text: &str| {
        let body = json!({"assistant_id": "agent", "stream_mode": "values",
            "input": {"messages": [{"type": "human", "content": text}]}});
        let request = gw.client.post(gw.url("/langgraph/threads/asks/runs/stream")).json(&body);
        async move { request.send().await.unwrap().text().await.unwrap() }
    };
    let asked = run("/tool echo {\"text\":\"may I?\"}").await;
    assert!(asked.contains("__interrupt__"), "{asked}");
    // Typed instead of answering: the message queues behind the call, and the run says so.
    let typed = run("what now?").await;
    let last = typed.split("\n\n").filter(|f| f.contains("event: values")).last().unwrap();
    assert!(last.contains("__interrupt__") && last.contains("may I?"), "{typed}");
    let queue: Value = gw
        .client
        .get(gw.url("/v1/sessions/asks/queue"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(queue["items"].as_array().map(Vec::len), Some(1), "{queue}");
}
