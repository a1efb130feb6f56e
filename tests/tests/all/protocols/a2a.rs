//! A2A at `/.well-known/agent-card.json` and `POST /a2a` (`docs/interfaces.md`, "A2A"):
//! `@a2a-js/sdk`'s client against the real gateway (ignored: npm), and what a client cannot see
//! for itself (keys, tenants, refusals, a task joined in flight) read off the wire.

use airlock_tests::gateway::{Gateway, keyed_client};
use airlock_tests::world::tenants;
use serde_json::{Value, json};

use super::{gateway, held, node};

/// The text of a task's first artifact.
fn answer(task: &Value) -> &str {
    task["artifacts"][0]["parts"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
#[ignore = "needs @a2a-js/sdk from npm; .ci/run installs it"]
async fn the_a2a_client_resolves_the_agent_card() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, false);
    let card = &node("a2a.mjs", &gw.base, "card")["card"];
    let interface = &card["supportedInterfaces"][0];
    assert_eq!(interface["url"], format!("{}/a2a", gw.base));
    assert_eq!(
        (&interface["protocolBinding"], &interface["protocolVersion"]),
        (&json!("JSONRPC"), &json!("1.0"))
    );
    assert_eq!(card["capabilities"]["streaming"], true);
    let skills: Vec<&str> =
        card["skills"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert!(skills.contains(&"echo"), "the gateway's tools are its skills: {skills:?}");
}

#[tokio::test]
#[ignore = "needs @a2a-js/sdk from npm; .ci/run installs it"]
async fn send_message_returns_a_completed_a2a_task_with_the_answer_as_an_artifact() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, false);
    let seen = node("a2a.mjs", &gw.base, "send");
    let task = &seen["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    assert!(answer(task).contains("hello from A2A"), "{task}");
    let roles: Vec<&Value> =
        task["history"].as_array().unwrap().iter().map(|m| &m["role"]).collect();
    assert_eq!(roles, ["ROLE_USER", "ROLE_AGENT"]);
    assert_eq!(seen["got"], *task, "GetTask reads the same task");
    assert_eq!(seen["listed"], json!([task]), "ListTasks lists it");
    let context = task["contextId"].as_str().unwrap();
    let log = gw.log(context).await;
    assert!(log.iter().any(|e| e["type"] == "turn/end"), "the context is a session: {log:?}");
}

#[tokio::test]
#[ignore = "needs @a2a-js/sdk from npm; .ci/run installs it"]
async fn a_streamed_a2a_message_yields_status_updates_to_completed() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, false);
    let events = node("a2a.mjs", &gw.base, "stream")["events"].clone();
    let events = events.as_array().unwrap();
    let kinds: Vec<String> = events
        .iter()
        .map(|e| {
            let (kind, value) = e.as_object().unwrap().iter().next().unwrap();
            let state = value["status"]["state"].as_str().unwrap_or("-");
            format!("{kind} {state}")
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "task TASK_STATE_SUBMITTED",
            "statusUpdate TASK_STATE_WORKING",
            "artifactUpdate -",
            "statusUpdate TASK_STATE_COMPLETED"
        ]
    );
    assert!(
        answer(&json!({"artifacts": [events[2]["artifactUpdate"]["artifact"]]}))
            .contains("stream to me")
    );
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs @a2a-js/sdk from npm; .ci/run installs it"]
async fn cancel_task_on_a_slow_a2a_turn_gives_canceled() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, _mock, _gate) = held(&dir).await;
    let base = gw.base.clone();
    let seen = tokio::task::spawn_blocking(move || node("a2a.mjs", &base, "cancel")).await.unwrap();
    assert_eq!(seen["canceled"]["status"]["state"], "TASK_STATE_CANCELED", "{seen}");
    let last = seen["events"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["statusUpdate"]["status"]["state"], "TASK_STATE_CANCELED", "{seen}");
    assert_eq!(seen["again"]["name"], "TaskNotCancelableError", "{seen}");
}

#[tokio::test]
#[ignore = "needs @a2a-js/sdk from npm; .ci/run installs it"]
async fn an_a2a_approval_is_input_required_and_a_follow_up_message_completes_it() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, true);
    let seen = node("a2a.mjs", &gw.base, "approval");
    let first = &seen["first"];
    assert_eq!(first["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{first}");
    let waiting = &first["status"]["message"]["parts"][1]["data"]["waiting"][0];
    assert_eq!(waiting["tool"], "echo", "{first}");
    let second = &seen["second"];
    assert_eq!(second["id"], first["id"], "the same task goes on");
    assert_eq!(second["status"]["state"], "TASK_STATE_COMPLETED", "{second}");
    assert!(answer(second).contains("echo: approved?"), "{second}");
    let log = gw.log(first["contextId"].as_str().unwrap()).await;
    let approvals: Vec<&Value> = log.iter().filter(|e| e["type"] == "tool/approval").collect();
    assert_eq!(approvals.len(), 2, "requested, then approved: {approvals:?}");
    assert_eq!(approvals[1]["data"]["state"], "approved");
}

#[tokio::test]
#[ignore = "needs @a2a-js/sdk from npm; .ci/run installs it"]
async fn the_same_a2a_message_id_twice_is_one_message() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, false);
    let seen = node("a2a.mjs", &gw.base, "sameMessageId");
    assert_eq!(seen["first"], seen["second"], "the same task, told twice");
    let log = gw.log(seen["first"]["contextId"].as_str().unwrap()).await;
    let sent = log.iter().filter(|e| e["type"] == "user/message").count();
    assert_eq!(sent, 1, "{log:?}");
}

/// A JSON-RPC call of `method` by `client`, with `headers`.
async fn call_as(
    client: &reqwest::Client,
    gw: &Gateway,
    method: &str,
    params: Value,
) -> reqwest::Response {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    client.post(gw.url("/a2a")).json(&body).send().await.unwrap()
}

/// [`call_as`] by the gateway's own client, answering the JSON-RPC response.
async fn call(gw: &Gateway, method: &str, params: Value) -> Value {
    let res = call_as(&gw.client, gw, method, params).await;
    assert_eq!(res.status(), 200);
    res.json().await.unwrap()
}

/// A user message's params.
fn say(text: &str, id: &str) -> Value {
    json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]}})
}

#[tokio::test]
async fn an_a2a_context_is_a_session_of_the_callers_tenant() {
    let t = tenants().await;
    let (a, b) = (keyed_client(&t.a), keyed_client(&t.b));
    let mut params = say("hello", "m1");
    params["message"]["contextId"] = json!("their-context");
    let res = call_as(&t.gw.client, &t.gw, "SendMessage", params.clone()).await;
    assert_eq!(res.status(), 401, "no key, no task");
    let res: Value = call_as(&a, &t.gw, "SendMessage", params.clone()).await.json().await.unwrap();
    let task = &res["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{res}");
    let res = a.get(t.gw.url("/v1/sessions/their-context")).send().await.unwrap();
    assert_eq!(res.status(), 200, "the context is tenant a's session");
    let get = json!({"id": task["id"]});
    let res: Value = call_as(&b, &t.gw, "GetTask", get).await.json().await.unwrap();
    assert_eq!(res["error"]["code"], -32001, "another tenant's task is not found: {res}");
    let res: Value = call_as(&b, &t.gw, "SendMessage", params).await.json().await.unwrap();
    assert_eq!(res["error"]["code"], -32001, "nor is its context: {res}");
    // The card is public, and says how to authenticate.
    let card = t.gw.client.get(t.gw.url("/.well-known/agent-card.json")).send().await.unwrap();
    let card: Value = card.json().await.unwrap();
    assert_eq!(card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"], "Bearer");
}

#[tokio::test]
async fn an_a2a_request_is_refused_saying_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, false);
    let post = |body: &'static str| {
        let gw = &gw;
        async move {
            let res = gw.client.post(gw.url("/a2a")).body(body).send().await.unwrap();
            res.json::<Value>().await.unwrap()
        }
    };
    assert_eq!(post("{").await["error"]["code"], -32700);
    assert_eq!(post(r#"{"id": 1, "method": "GetTask"}"#).await["error"]["code"], -32600);
    let code = |res: &Value| res["error"]["code"].as_i64().unwrap();
    let res = call(&gw, "tasks/get", json!({})).await;
    assert_eq!((code(&res), &res["id"]), (-32601, &json!(7)), "{res}");
    let res = call(&gw, "SendMessage", json!({})).await;
    assert_eq!(code(&res), -32602);
    assert!(res["error"]["message"].as_str().unwrap().contains("messageId"), "{res}");
    let mut url = say("hi", "m");
    url["message"]["parts"] = json!([{"url": "https://example.com/a.mp3"}]);
    let res = call(&gw, "SendMessage", url).await;
    assert!(res["error"]["message"].as_str().unwrap().contains("not fetched"), "{res}");
    let res = call(&gw, "GetTask", json!({"id": "nothing:3"})).await;
    assert_eq!(code(&res), -32001);
    let res = call(&gw, "CreateTaskPushNotificationConfig", json!({})).await;
    assert_eq!(code(&res), -32003);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "a:1"}});
    let res = gw.client.post(gw.url("/a2a")).header("A2A-Version", "0.3").json(&body);
    let res: Value = res.send().await.unwrap().json().await.unwrap();
    assert_eq!(code(&res), -32009);
    // A message id used for another message is refused, not taken for the first.
    call(&gw, "SendMessage", say("one", "same")).await;
    let res = call(&gw, "SendMessage", say("two", "same")).await;
    assert_eq!(code(&res), -32602, "{res}");
    assert!(res["error"]["message"].as_str().unwrap().contains("fresh messageId"), "{res}");
    let res = call(&gw, "ListTasks", json!({})).await;
    assert_eq!(code(&res), -32602, "ListTasks needs a context: {res}");
}

#[tokio::test]
async fn subscribe_to_task_joins_an_a2a_task_in_flight() {
    use eventsource_stream::Eventsource;
    use futures::StreamExt;

    let dir = tempfile::tempdir().unwrap();
    let (gw, _mock, gate) = held(&dir).await;
    let mut params = say("take your time", "slow");
    params["configuration"] = json!({"returnImmediately": true});
    let res = call(&gw, "SendMessage", params).await;
    let task = &res["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_SUBMITTED", "{res}");
    let res = call_as(&gw.client, &gw, "SubscribeToTask", json!({"id": task["id"]})).await;
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let mut stream = res.bytes_stream().eventsource();
    let mut states = Vec::new();
    while let Some(frame) = stream.next().await {
        let frame: Value = serde_json::from_str(&frame.unwrap().data).unwrap();
        assert_eq!(frame["id"], 7);
        let result = &frame["result"];
        let status = match (result.get("task"), result.get("statusUpdate")) {
            (Some(task), _) => &task["status"],
            (_, Some(update)) => &update["status"],
            _ => continue,
        };
        let state = status["state"].as_str().unwrap().to_owned();
        if state == "TASK_STATE_WORKING" {
            gate.notify_one(); // joined while the model was held: let it answer
        }
        states.push(state);
    }
    assert!(states.iter().any(|state| state == "TASK_STATE_WORKING"), "{states:?}");
    assert_eq!(states.last().map(String::as_str), Some("TASK_STATE_COMPLETED"), "{states:?}");
    let done = call(&gw, "GetTask", json!({"id": task["id"]})).await;
    assert_eq!(answer(&done["result"]), "Held, then finished.");
    let again = call(&gw, "SubscribeToTask", json!({"id": task["id"]})).await;
    assert_eq!(again["error"]["code"], -32004, "an ended task has nothing to subscribe to");
}

#[tokio::test]
async fn list_tasks_pages_an_a2a_contexts_tasks_newest_first_and_filters_by_state() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&dir, false);
    let mut ids = Vec::new();
    for n in 1..=3 {
        let mut params = say(&format!("message {n}"), &format!("m{n}"));
        params["message"]["contextId"] = json!("listed");
        ids.push(call(&gw, "SendMessage", params).await["result"]["task"]["id"].clone());
    }
    let list = |params: Value| call(&gw, "ListTasks", params);
    let first = &list(json!({"contextId": "listed", "pageSize": 2})).await["result"];
    let listed: Vec<&Value> = first["tasks"].as_array().unwrap().iter().map(|t| &t["id"]).collect();
    assert_eq!(listed, [&ids[2], &ids[1]], "newest first: {first}");
    assert_eq!((&first["totalSize"], &first["pageSize"]), (&json!(3), &json!(2)));
    assert_eq!(first["tasks"][0]["artifacts"], json!([]), "artifacts only when asked");
    let token = first["nextPageToken"].clone();
    let params = json!({"contextId": "listed", "pageSize": 2, "pageToken": token,
        "includeArtifacts": true, "historyLength": 1});
    let rest = &list(params).await["result"];
    assert_eq!(rest["tasks"].as_array().unwrap().len(), 1, "{rest}");
    assert_eq!(rest["tasks"][0]["id"], ids[0]);
    assert_eq!(rest["nextPageToken"], "", "the last page");
    assert!(answer(&rest["tasks"][0]).contains("message 1"), "{rest}");
    assert_eq!(rest["tasks"][0]["history"].as_array().unwrap().len(), 1);
    let done = &list(json!({"contextId": "listed", "status": "TASK_STATE_COMPLETED"})).await;
    assert_eq!(done["result"]["totalSize"], 3, "{done}");
    let working = &list(json!({"contextId": "listed", "status": "TASK_STATE_WORKING"})).await;
    assert_eq!(
        working["result"],
        json!({"tasks": [], "nextPageToken": "", "pageSize": 50,
        "totalSize": 0})
    );
}
