//! Owned runs end to end: `POST /v1/sessions/{id}/runs` and `POST /v1/runs` against the real
//! binary. A run owns the interval from its message's insert splice through the next whole-agent
//! idle; turns are kept running by held mock replies so the tests can act inside an interval.

use airlock_tests::Reply;
use airlock_tests::gateway::Frame;
use airlock_tests::world::{World, first_chunk, holding, world};
use serde_json::{Value, json};

fn runs(s: &str) -> String {
    format!("/v1/sessions/{s}/runs")
}

/// Starts a run in the background (it answers only at idle).
fn spawn_run(w: &World, s: &str, body: Value) -> tokio::task::JoinHandle<(u16, Value)> {
    let (client, url) = (w.gw.client.clone(), w.gw.url(&runs(s)));
    tokio::spawn(async move {
        let res = client.post(url).json(&body).send().await.unwrap();
        (res.status().as_u16(), res.json().await.unwrap())
    })
}

fn event_types(result: &Value) -> Vec<&str> {
    result["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect()
}

/// Checks that `events` are exactly `firstSeq..=lastSeq`.
fn assert_contiguous(result: &Value) {
    let seqs: Vec<u64> =
        result["events"].as_array().unwrap().iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    let (first, last) = (result["firstSeq"].as_u64().unwrap(), result["lastSeq"].as_u64().unwrap());
    assert_eq!(seqs, (first..=last).collect::<Vec<_>>(), "{result}");
}

/// Waits (on a fresh stream) until the session has gone idle after a turn.
/// Waits until the work of an accepted message is done: the stream opens after the send, so its
/// status snapshot is `running` (an `idle` follows) or already `idle`.
async fn until_idle(w: &World, s: &str) {
    let mut sse = w.gw.sse(s, None).await;
    sse.until(|f| *f == Frame::Status("idle".into())).await;
}

#[tokio::test]
async fn run_result_excludes_events_before_the_receipt() {
    let w = world().await;
    w.mock.push(Reply::text("First.", 1)).push(Reply::text("Second.", 2));
    let s = w.gw.session().await;
    w.send(&s, json!({"content": "one"})).await;
    until_idle(&w, &s).await;
    let before = w.gw.log(&s).await.len() as u64;

    let (code, result) = w.gw.post(&runs(&s), json!({"content": "two"})).await;
    assert_eq!(code, 200, "{result}");
    assert_eq!(result["sessionId"], s.as_str());
    assert_eq!(result["firstSeq"], before, "the interval starts at the run's insert splice");
    let receipt = &result["events"][0];
    assert_eq!(receipt["type"], "agent/inbox/spliced");
    assert_eq!(receipt["data"]["inserted"][0]["id"], result["messageId"]);
    assert_contiguous(&result);
    assert_eq!(result["lastSeq"], w.gw.log(&s).await.len() as u64 - 1);
    assert_eq!(result["finalResponse"], "Second.");
    assert_eq!(result["finishReason"], "completed");
    assert_eq!(event_types(&result).iter().filter(|t| **t == "turn/end").count(), 1);
}

#[tokio::test]
async fn run_final_response_is_the_last_assistant_message_even_when_it_is_empty() {
    let (w, s, mut sse, gate) = holding("The first answer.", [Reply::text("", 1)]).await;
    let run = spawn_run(&w, &s, json!({"content": "one"}));
    sse.until(first_chunk).await;
    // A later followup sent before idle belongs to the interval too.
    let later = w.send(&s, json!({"content": "two"})).await;
    gate.notify_one();

    let (code, result) = run.await.unwrap();
    assert_eq!(code, 200, "{result}");
    assert_contiguous(&result);
    let answers: Vec<&Value> = result["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "assistant/message")
        .collect();
    assert_eq!(answers.len(), 2, "both turns are in the interval");
    assert_eq!(answers[0]["data"]["message"]["content"][0]["text"], "The first answer.");
    assert!(
        result["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["type"] == "user/message" && e["data"]["id"] == later.as_str()),
        "the later followup ran inside the interval"
    );
    assert_eq!(result["finalResponse"], "", "the last assistant message was empty");
    assert_eq!(result["finishReason"], "completed");
}

#[tokio::test]
async fn run_interval_includes_steering_sent_before_idle() {
    let (w, s, mut sse, gate) = holding("Going right.", [Reply::text("Going left now.", 2)]).await;
    let run = spawn_run(&w, &s, json!({"content": "go"}));
    sse.until(first_chunk).await;
    let steer = w.send(&s, json!({"content": "go left", "delivery": "steer"})).await;
    gate.notify_one();

    let (code, result) = run.await.unwrap();
    assert_eq!(code, 200, "{result}");
    let steered = result["events"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["type"] == "user/message" && e["data"]["id"] == steer.as_str());
    assert!(steered, "the steering entered a step of the interval: {result}");
    assert_eq!(result["finalResponse"], "Going left now.");
    assert_eq!(result["finishReason"], "completed");
}

#[tokio::test]
async fn run_finish_reason_is_the_last_turn_end_kind() {
    let w = world().await;
    w.mock.push(Reply::text("Cut of", 1).finish_length()).push(Reply::status(401));
    let s = w.gw.session().await;

    let (_, result) = w.gw.post(&runs(&s), json!({"content": "long"})).await;
    assert_eq!(result["finishReason"], "max-tokens");
    assert_eq!(result["finalResponse"], "Cut of");

    let (_, result) = w.gw.post(&runs(&s), json!({"content": "again"})).await;
    assert_eq!(result["finishReason"], "error");
    assert_eq!(result["finalResponse"], "", "a provider error writes no assistant message");
}

#[tokio::test]
async fn run_without_a_turn_has_a_null_finish_reason() {
    let w = world().await;
    let s = w.gw.session().await;
    // Context on an idle agent wakes nothing: the interval is its receipt alone.
    let (code, result) =
        w.gw.post(&runs(&s), json!({"content": "fyi", "delivery": "inject"})).await;
    assert_eq!(code, 200, "{result}");
    assert_eq!(result["finishReason"], Value::Null);
    assert_eq!(result["finalResponse"], "");
    assert_eq!((result["firstSeq"].as_u64(), result["lastSeq"].as_u64()), (Some(0), Some(0)));
    assert_eq!(event_types(&result), ["agent/inbox/spliced"]);
}

#[tokio::test]
async fn run_on_a_running_session_collects_until_the_next_idle() {
    let (w, s, mut sse, gate) =
        holding("Busy with the first.", [Reply::text("Now the second.", 1)]).await;
    w.send(&s, json!({"content": "first"})).await;
    sse.until(first_chunk).await;
    let run = spawn_run(&w, &s, json!({"content": "second"}));
    // The run's message is queued behind the running turn: its insert splice.
    sse.until(|f| {
        matches!(f, Frame::Event(_, e) if e["type"] == "agent/inbox/spliced"
            && e["data"]["inserted"].as_array().is_some_and(|i| !i.is_empty()))
    })
    .await;
    gate.notify_one();

    let (code, result) = run.await.unwrap();
    assert_eq!(code, 200, "{result}");
    assert_contiguous(&result);
    let types = event_types(&result);
    assert_eq!(types[0], "agent/inbox/spliced");
    assert!(
        !types.contains(&"turn/start")
            || types.iter().position(|t| *t == "turn/end")
                < types.iter().position(|t| *t == "turn/start"),
        "the running turn ends inside the interval before the run's own turn starts: {types:?}"
    );
    assert_eq!(types.iter().filter(|t| **t == "turn/end").count(), 2);
    assert_eq!(result["finalResponse"], "Now the second.");
}

#[tokio::test]
async fn run_stream_ends_with_run_result() {
    let w = world().await;
    w.mock.push(Reply::text("Streamed answer.", 3));
    let s = w.gw.session().await;
    let mut stream =
        w.gw.post_sse(&format!("{}?stream=true", runs(&s)), json!({"content": "hi"})).await;
    let mut frames = Vec::new();
    while let Some(frame) = stream.next_or_end().await {
        frames.push(frame);
    }
    let Some(Frame::Other(name, result)) = frames.last() else { panic!("{frames:?}") };
    assert_eq!(name, "run.result");
    assert_eq!(result["finalResponse"], "Streamed answer.");
    let seqs = airlock_tests::gateway::seqs(&frames);
    let (first, last) = (result["firstSeq"].as_u64().unwrap(), result["lastSeq"].as_u64().unwrap());
    assert_eq!(seqs, (first..=last).collect::<Vec<_>>(), "every event of the interval, once");
    let statuses: Vec<&Frame> = frames.iter().filter(|f| matches!(f, Frame::Status(_))).collect();
    assert_eq!(statuses, [&Frame::Status("running".into()), &Frame::Status("idle".into())]);
    assert_eq!(frames[frames.len() - 2], Frame::Status("idle".into()));
}

#[tokio::test]
async fn run_timeout_answers_504_and_the_session_keeps_running() {
    let (w, s, mut sse, gate) = holding("Slow but sure.", []).await;
    let (code, body) = w.gw.post(&runs(&s), json!({"content": "slow", "timeoutMs": 200})).await;
    assert_eq!(code, 504, "{body}");
    assert_eq!(body["error"]["code"], "run-timeout");
    let message_id = body["error"]["details"]["messageId"].as_str().unwrap();
    assert!(body["error"]["details"]["lastSeq"].as_u64().is_some(), "{body}");
    let (_, status) = w.gw.get(&format!("/v1/sessions/{s}/status")).await;
    assert_eq!(status["status"], "running");

    gate.notify_one();
    let frames = sse.until_idle().await;
    let ended = frames.iter().any(|f| {
        matches!(f, Frame::Event(_, e) if e["type"] == "turn/end" && e["data"]["reason"]["kind"] == "completed")
    });
    assert!(ended, "the turn went on and completed after the timeout");
    let (_, receipt) = w.gw.get(&format!("/v1/sessions/{s}/messages/{message_id}")).await;
    assert_eq!(receipt["state"], "claimed");
}

#[tokio::test]
async fn dropping_a_run_request_does_not_cancel_the_run() {
    let (w, s, mut sse, gate) = holding("Still here.", []).await;
    let run = spawn_run(&w, &s, json!({"content": "go"}));
    sse.until(first_chunk).await;
    run.abort(); // the client goes away mid-run
    let _ = run.await;
    gate.notify_one();
    let frames = sse.until_idle().await;
    assert!(frames.iter().any(|f| {
        matches!(f, Frame::Event(_, e) if e["type"] == "turn/end" && e["data"]["reason"]["kind"] == "completed")
    }));
}

#[tokio::test]
async fn run_in_a_new_session_answers_its_result_and_keeps_the_session() {
    let w = world().await;
    w.mock.push(Reply::text("Fresh answer.", 2));
    let (code, result) =
        w.gw.post(
            "/v1/runs",
            json!({"content": "hello", "model": "openai:mock", "system": "Be brief."}),
        )
        .await;
    assert_eq!(code, 200, "{result}");
    assert_eq!(result["finalResponse"], "Fresh answer.");
    assert_eq!(result["firstSeq"], 0);
    let s = result["sessionId"].as_str().unwrap();
    let (code, session) = w.gw.get(&format!("/v1/sessions/{s}")).await;
    assert_eq!((code, session["status"].as_str()), (200, Some("idle")));
    assert_eq!(w.mock.requests()[0]["messages"][0]["content"], "Be brief.");
}

#[tokio::test]
async fn a_run_with_empty_content_is_refused_naming_the_field() {
    let w = world().await;
    let s = w.gw.session().await;
    let (code, body) = w.gw.post(&runs(&s), json!({"content": ""})).await;
    assert_eq!((code, body["error"]["details"]["field"].as_str()), (400, Some("content")));
    assert!(w.gw.log(&s).await.is_empty(), "a refused request writes nothing");
}

#[tokio::test]
async fn a_run_whose_provider_sent_no_usage_has_no_usage_and_one_that_did_sums_it() {
    let w = world().await;
    let s = w.gw.session().await;
    w.mock.push(Reply::text("no counts", 2).without_usage());
    let (code, result) = w.gw.post(&runs(&s), json!({"content": "hi"})).await;
    assert_eq!(code, 200, "{result}");
    assert!(result.get("usage").is_none(), "absent, not zeros: {result}");
    w.mock.push(Reply::text("counted", 2).usage(12, 3));
    let (_, result) = w.gw.post(&runs(&s), json!({"content": "again"})).await;
    assert_eq!(result["usage"], json!({"inputTokens": 12, "outputTokens": 3}));
}

/// Runs `body` at `path` with `Idempotency-Key: key` as `client`: (status, answer).
async fn keyed_run(client: &reqwest::Client, url: String, key: &str, body: Value) -> (u16, Value) {
    let res = client.post(url).header("idempotency-key", key).json(&body).send().await.unwrap();
    (res.status().as_u16(), res.json().await.unwrap())
}

#[tokio::test]
async fn the_same_idempotency_key_on_two_runs_runs_one_turn_and_answers_the_same_result() {
    use airlock_tests::gateway::{Gateway, keyed_client, keys};
    let dir = tempfile::tempdir().unwrap();
    let mock = airlock_tests::MockModel::start().await;
    let data = dir.path().join("airlock.db");
    let [a, b] =
        ["a", "b"].map(|tenant| keyed_client(&keys(&data, &["create", "--tenant", tenant])));
    let env = [("AIRLOCK_MODEL", "openai:mock")];
    let gw = Gateway::start_with(&data, &mock.base_url(), &env);
    let session = async |client: &reqwest::Client| -> String {
        let res = client.post(gw.url("/v1/sessions")).json(&json!({})).send().await.unwrap();
        res.json::<Value>().await.unwrap()["sessionId"].as_str().unwrap().to_owned()
    };
    let (sa, sb) = (session(&a).await, session(&b).await);

    mock.push(Reply::text("Only once.", 2));
    let body = json!({"content": "do it once"});
    let (code, first) = keyed_run(&a, gw.url(&runs(&sa)), "k1", body.clone()).await;
    assert_eq!((code, first["finalResponse"].as_str()), (200, Some("Only once.")), "{first}");
    let (code, again) = keyed_run(&a, gw.url(&runs(&sa)), "k1", body.clone()).await;
    assert_eq!(code, 200);
    assert_eq!(again, first, "the same RunResult, the same messageId");
    assert_eq!(mock.requests().len(), 1, "one model call");
    let log: Value = a
        .get(gw.url(&format!("/v1/sessions/{sa}/events?format=json")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let count =
        |kind: &str| log["events"].as_array().unwrap().iter().filter(|e| e["type"] == kind).count();
    assert_eq!((count("user/message"), count("turn/start")), (1, 1), "one message, one turn");

    let (code, conflict) =
        keyed_run(&a, gw.url(&runs(&sa)), "k1", json!({"content": "other"})).await;
    assert_eq!((code, conflict["error"]["code"].as_str()), (409, Some("idempotency-conflict")));
    let (code, sent) = {
        let res = a
            .post(gw.url(&format!("/v1/sessions/{sa}/messages")))
            .header("idempotency-key", "k1")
            .json(&json!({"content": "do it once", "delivery": "inject"}))
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.json::<Value>().await.unwrap())
    };
    assert_eq!(code, 202, "a message's keys are not a run's: {sent}");
    assert_ne!(sent["messageId"], first["messageId"]);

    // Another tenant's same key is another key: it neither replays nor conflicts with A's.
    let (code, theirs) = keyed_run(&b, gw.url(&runs(&sb)), "k1", body.clone()).await;
    assert_eq!(code, 200, "{theirs}");
    assert_ne!(theirs["messageId"], first["messageId"]);

    // A run in a new session: a retry makes no second session.
    let new = json!({"content": "start fresh"});
    let (code, made) = keyed_run(&a, gw.url("/v1/runs"), "k2", new.clone()).await;
    assert_eq!(code, 200, "{made}");
    let (code, retried) = keyed_run(&a, gw.url("/v1/runs"), "k2", new).await;
    assert_eq!(code, 200);
    assert_eq!(retried, made);
    let listed: Value = a.get(gw.url("/v1/sessions")).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["items"].as_array().unwrap().len(), 2, "{listed}");

    // A retry while the first still runs waits for the same interval.
    let (held, gate) = airlock_tests::world::held("Worth the wait.");
    let before = mock.requests().len();
    mock.push(held);
    let waited = json!({"content": "slowly"});
    let first = tokio::spawn(keyed_run_owned(a.clone(), gw.url(&runs(&sa)), "k3", waited.clone()));
    mock.requested(before + 1).await;
    let second = tokio::spawn(keyed_run_owned(a.clone(), gw.url(&runs(&sa)), "k3", waited));
    gate.notify_one();
    let (first, second) = (first.await.unwrap(), second.await.unwrap());
    assert_eq!(first.0, 200, "{}", first.1);
    assert_eq!(first, second);
    assert_eq!(first.1["finalResponse"], "Worth the wait.");
}

async fn keyed_run_owned(
    client: reqwest::Client,
    url: String,
    key: &'static str,
    body: Value,
) -> (u16, Value) {
    keyed_run(&client, url, key, body).await
}
