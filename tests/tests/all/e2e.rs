//! End to end: the real `airlock serve` binary on port 0 with a temp SQLite file, its sessions
//! answered by the mock model over HTTP. Crashes are real `kill -9`s.

use std::time::Duration;

use airlock_tests::Reply;
use airlock_tests::gateway::{Frame, seqs, types};
use airlock_tests::world::{World, held, holding, messages, world, world_with};
use serde_json::{Value, json};

#[tokio::test]
async fn text_turn_over_http_is_acknowledged_before_the_model_answers() {
    let w = world().await;
    let gate = std::sync::Arc::new(tokio::sync::Notify::new());
    w.mock.push(Reply::text("Held but sure.", 3).hold_until(gate.clone()));
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    let (code, receipt) = w.gw.post(&messages(&s), json!({"content": "hello"})).await;
    assert_eq!((code, receipt["seq"].as_u64()), (202, Some(0)));
    let logged = types_of(&w.gw.log(&s).await);
    assert!(
        !logged.contains(&"assistant/message".to_owned()),
        "the answer is not in yet: {logged:?}"
    );
    gate.notify_one();

    let frames = sse.until_idle().await;
    let seqs = seqs(&frames);
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
    let types = types(&frames);
    let chunks = types.iter().filter(|t| *t == "assistant/chunk").count();
    assert_eq!(types, airlock_tests::text_turn(chunks));
    let running = frames.iter().position(|f| *f == Frame::Status("running".into())).unwrap();
    assert_eq!(seqs_before(&frames, running), 1, "running comes right after the insert splice");
}

/// The reason of the last `turn/end` among frames.
fn last_end(frames: &[Frame]) -> Value {
    frames
        .iter()
        .rev()
        .find_map(|f| match f {
            Frame::Event(_, e) if e["type"] == "turn/end" => Some(e["data"]["reason"].clone()),
            _ => None,
        })
        .expect("a turn ended")
}

fn types_of(log: &[Value]) -> Vec<String> {
    log.iter().map(|e| e["type"].as_str().unwrap().to_owned()).collect()
}

fn seqs_before(frames: &[Frame], index: usize) -> usize {
    frames[..index].iter().filter(|f| matches!(f, Frame::Event(..))).count()
}

#[tokio::test]
async fn hundred_concurrent_posts_give_hundred_turns_in_receipt_order() {
    // The first turn waits until every post is acknowledged: all 100 arrive while it runs.
    let (w, s, mut sse, gate) = holding("First of many.", []).await;
    assert_eq!(sse.next().await, Frame::Status("idle".into()), "the snapshot on connect");
    let posts = (0..100).map(|i| {
        let (client, url) = (w.gw.client.clone(), w.gw.url(&messages(&s)));
        tokio::spawn(async move {
            let res = client
                .post(url)
                .json(&json!({"content": format!("message {i}")}))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 202);
            res.json::<Value>().await.unwrap()
        })
    });
    let mut receipts = Vec::new();
    for post in posts {
        receipts.push(post.await.unwrap());
    }
    gate.notify_one();
    receipts.sort_by_key(|r| r["seq"].as_u64());
    let ids: Vec<&str> = receipts.iter().map(|r| r["messageId"].as_str().unwrap()).collect();
    let unique: std::collections::BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), 100, "100 distinct receipts");

    let mut frames = Vec::new();
    while types(&frames).iter().filter(|t| *t == "turn/end").count() < 100
        || frames.last() != Some(&Frame::Status("idle".into()))
    {
        frames.push(sse.next().await);
    }
    let statuses: Vec<&Frame> = frames.iter().filter(|f| matches!(f, Frame::Status(_))).collect();
    assert_eq!(
        statuses,
        [&Frame::Status("running".into()), &Frame::Status("idle".into())],
        "one running, one idle"
    );
    let entered: Vec<&str> = frames
        .iter()
        .filter_map(|f| match f {
            Frame::Event(_, e) if e["type"] == "user/message" => e["data"]["id"].as_str(),
            _ => None,
        })
        .collect();
    assert_eq!(entered, ids, "one turn per message, in receipt order");
}

#[tokio::test]
async fn model_faults_are_retried_and_a_persistent_one_ends_the_turn_with_its_code() {
    let w = world_with(&[("AIRLOCK_STALL_TIMEOUT_MS", "500")]).await;
    w.mock
        .push(Reply::status(429).retry_after("0"))
        .push(Reply::status(500))
        .push(Reply::text("stuck", 3).stall_after(1))
        .push(Reply::text("garbled", 3).malformed_after(1))
        .push(Reply::text("Made it.", 2));
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    w.gw.post(&messages(&s), json!({"content": "try hard"})).await;
    let frames = sse.until_idle().await;
    let retries: Vec<String> = frames
        .iter()
        .filter_map(|f| match f {
            Frame::Event(_, e) if e["type"] == "llm/retry" => {
                e["data"]["error"]["code"].as_str().map(str::to_owned)
            }
            _ => None,
        })
        .collect();
    assert_eq!(retries, ["RATE_LIMIT", "SERVER", "TIMEOUT", "MALFORMED"]);
    assert_eq!(last_end(&frames)["kind"], "completed");

    w.mock.push(Reply::text("cut", 3).disconnect_after(1)).push(Reply::text("Again.", 1));
    w.gw.post(&messages(&s), json!({"content": "once more"})).await;
    let frames = sse.until_idle().await;
    let retry = frames.iter().find_map(|f| match f {
        Frame::Event(_, e) if e["type"] == "llm/retry" => Some(e["data"]["error"]["code"].clone()),
        _ => None,
    });
    assert_eq!(retry, Some(json!("CONNECTION")));
    assert_eq!(last_end(&frames)["kind"], "completed");

    for _ in 0..5 {
        w.mock.push(Reply::status(503).retry_after("0"));
    }
    w.gw.post(&messages(&s), json!({"content": "again"})).await;
    let frames = sse.until_idle().await;
    let end = last_end(&frames);
    assert_eq!(
        (end["kind"].as_str(), end["error"]["code"].as_str()),
        (Some("error"), Some("SERVICE_UNAVAILABLE"))
    );
    assert!(
        !types(&frames).contains(&"assistant/message".to_owned()),
        "a provider error writes no message"
    );
}

#[tokio::test]
async fn kill_9_mid_turn_closes_the_turn_interrupted_and_runs_the_queued_followup() {
    let w = world().await;
    w.mock.push(Reply::text("one two three four", 4).delay(Duration::from_secs(60)));
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    w.gw.post(&messages(&s), json!({"content": "first"})).await;
    let (_, queued) = w.gw.post(&messages(&s), json!({"content": "second"})).await;
    let queued_seq = queued["seq"].as_u64().unwrap();
    // Crash once the first chunk is streaming and the queued followup's receipt was seen.
    let (mut chunk, mut receipt) = (false, false);
    let before = sse
        .until(|f| {
            if let Frame::Event(seq, e) = f {
                chunk |= e["type"] == "assistant/chunk";
                receipt |= *seq == queued_seq;
            }
            chunk && receipt
        })
        .await;
    let last_seen = *seqs(&before).last().unwrap();
    drop(sse);

    w.mock.push(Reply::text("Second answered.", 2));
    let World { dir: _dir, mock, gw: gateway } = w;
    let gateway = gateway.crash_and_restart();
    let mut sse = gateway.sse(&s, Some(last_seen)).await;
    // Recovery ran before the gateway listened; the stream may catch up on all of it from the
    // log, so wait for the queued followup's turn to end rather than for a live `idle`.
    let after = sse
        .until(|f| matches!(f, Frame::Event(_, e) if e["type"] == "turn/end" && e["data"]["turn"] == 2))
        .await;
    let seqs = seqs(&after);
    assert_eq!(seqs.first(), Some(&(last_seen + 1)), "resumes right after the pre-crash id");
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "contiguous: {seqs:?}");
    let types = types(&after);
    let interrupted = after.iter().position(|f| matches!(f, Frame::Event(_, e) if e["type"] == "turn/end" && e["data"]["reason"]["kind"] == "interrupted"));
    assert!(interrupted.is_some(), "{types:?}");
    assert_eq!(types[..2], ["step/end", "turn/end"], "{types:?}");
    let log = gateway.log(&s).await;
    let entered: Vec<&str> = log
        .iter()
        .filter(|e| e["type"] == "user/message")
        .filter_map(|e| e["data"]["id"].as_str())
        .collect();
    assert_eq!(entered.last(), queued["messageId"].as_str().as_ref());
    let header = log.iter().rfind(|e| e["type"] == "request/header").unwrap();
    assert_eq!(header["data"]["reason"], "resume");
    assert_eq!(log.last().unwrap()["data"]["reason"]["kind"], "completed");
    drop(mock);
}

#[tokio::test]
async fn a_restart_with_only_injects_pending_starts_no_turn_and_the_next_send_claims_them() {
    let w = world().await;
    let s = w.gw.session().await;
    w.send(&s, json!({"content": "CONTEXT", "delivery": "inject"})).await;
    let before = w.gw.log(&s).await;

    let World { dir, mock, gw } = w;
    let w = World { dir, mock, gw: gw.crash_and_restart() };
    // Recovery ran before the gateway listened: an inject alone woke nothing.
    assert_eq!(w.gw.log(&s).await, before, "no turn, no event");
    let (_, status) = w.gw.get(&format!("/v1/sessions/{s}/status")).await;
    assert_eq!(status["status"], "idle");
    assert!(w.mock.requests().is_empty());

    w.mock.push(Reply::text("With context.", 1));
    let (code, run) = w.gw.post(&format!("/v1/sessions/{s}/runs"), json!({"content": "GO"})).await;
    assert_eq!((code, &run["finalResponse"]), (200, &json!("With context.")), "{run}");
    let asked = w.mock.requests()[0]["messages"].to_string();
    let (context, go) = (asked.find("CONTEXT").unwrap(), asked.find("GO").unwrap());
    assert!(context < go, "the waking send's turn claimed the inject first: {asked}");
    let turns = w.gw.log(&s).await.iter().filter(|e| e["type"] == "turn/start").count();
    assert_eq!(turns, 1);
}

#[tokio::test]
async fn fifty_concurrent_posts_then_kill_9_lose_no_acknowledged_message() {
    let w = world().await;
    let s = w.gw.session().await;
    let posts = (0..50).map(|i| {
        let (client, url) = (w.gw.client.clone(), w.gw.url(&messages(&s)));
        tokio::spawn(async move {
            let res =
                client.post(url).json(&json!({"content": format!("m{i}")})).send().await.ok()?;
            (res.status() == 202).then_some(())?;
            res.json::<Value>().await.ok()
        })
    });
    let mut acknowledged = Vec::new();
    for post in posts {
        if let Some(receipt) = post.await.unwrap() {
            acknowledged.push(receipt["messageId"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(acknowledged.len(), 50);
    let World { dir: _dir, mock, gw: gateway } = w;
    let gateway = gateway.crash_and_restart();
    let log = gateway.log(&s).await;
    let inserted = airlock_tests::inserted_ids(&log);
    for id in &acknowledged {
        assert!(inserted.contains(&id.as_str()), "acknowledged message {id} is in the log");
    }
    let seqs: Vec<u64> = log.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
    drop(mock);
}

#[tokio::test]
async fn sse_resume_mid_turn_with_last_event_id_or_after_sends_exactly_the_missing_events() {
    let (w, s, mut first, gate) = holding("a b c d e f", []).await;
    w.gw.post(&messages(&s), json!({"content": "stream"})).await;
    let seen =
        first.until(|f| matches!(f, Frame::Event(_, e) if e["type"] == "assistant/chunk")).await;
    let cursor = *seqs(&seen).last().unwrap();
    drop(first);

    let mut by_header = w.gw.sse(&s, Some(cursor)).await;
    let mut by_query = w.gw.sse_query(&s, &format!("?after={cursor}")).await;
    gate.notify_one(); // the turn goes on while both resumed streams follow it
    let a = seqs(&by_header.until_idle().await);
    let b = seqs(&by_query.until_idle().await);
    assert_eq!(a.first(), Some(&(cursor + 1)), "exactly the missing events, from the cursor on");
    assert!(a.windows(2).all(|w| w[1] == w[0] + 1), "no gap, no duplicate: {a:?}");
    assert_eq!(a, b, "Last-Event-ID and ?after= agree");
    let log = w.gw.log(&s).await;
    assert_eq!(*a.last().unwrap() as usize, log.len() - 1, "and nothing after the end is missing");
}

#[tokio::test]
async fn idempotency_key_returns_the_same_receipt_and_conflicts_on_another_body() {
    let w = world().await;
    let s = w.gw.session().await;
    let send = |body: Value| {
        w.gw.client
            .post(w.gw.url(&messages(&s)))
            .header("idempotency-key", "key-1")
            .json(&body)
            .send()
    };
    let first = send(json!({"content": "once", "delivery": "inject"})).await.unwrap();
    assert_eq!(first.status(), 202);
    let first: Value = first.json().await.unwrap();
    let again = send(json!({"content": "once", "delivery": "inject"})).await.unwrap();
    assert_eq!(
        (again.status().as_u16(), again.json::<Value>().await.unwrap()),
        (202, first.clone())
    );
    let other = send(json!({"content": "something else", "delivery": "inject"})).await.unwrap();
    assert_eq!(other.status(), 409);
    assert_eq!(other.json::<Value>().await.unwrap()["error"]["code"], "idempotency-conflict");

    let World { dir: _dir, mock, gw: gateway } = w;
    let gateway = gateway.crash_and_restart();
    let after_restart = gateway
        .client
        .post(gateway.url(&messages(&s)))
        .header("idempotency-key", "key-1")
        .json(&json!({"content": "once", "delivery": "inject"}))
        .send()
        .await
        .unwrap();
    assert_eq!(after_restart.json::<Value>().await.unwrap(), first, "kept across restarts");
    let inserts =
        gateway.log(&s).await.iter().filter(|e| e["type"] == "agent/inbox/spliced").count();
    assert_eq!(inserts, 1, "one insert splice for one key");
    drop(mock);
}

#[tokio::test]
async fn refused_requests_get_the_error_shape_and_write_nothing() {
    // A small body limit: a client still sending a large body when the 413 comes would see a
    // broken pipe instead of the answer.
    let w = world_with(&[("AIRLOCK_MAX_BODY", "1024")]).await;
    let s = w.gw.session().await;
    let gw = &w.gw;
    let url = gw.url(&messages(&s));
    let big = json!({"content": "x".repeat(2000)});
    let cases = [
        (
            gw.client.post(&url).header("content-type", "text/plain").body("hello"),
            415,
            "unsupported-media-type",
        ),
        (
            gw.client
                .post(&url)
                .header("content-type", "application/json")
                .body(r#"{"content": 3}"#),
            400,
            "bad-request",
        ),
        (
            gw.client.post(&url).header("content-type", "application/json").body("{not json"),
            400,
            "bad-request",
        ),
        (gw.client.post(&url).json(&big), 413, "payload-too-large"),
        (
            gw.client.get(gw.url(&format!("/v1/sessions/{s}/events?format=json&limit=many"))),
            400,
            "bad-request",
        ),
        (
            gw.client.post(gw.url("/v1/sessions/nope/messages")).json(&json!({"content": "x"})),
            404,
            "session-not-found",
        ),
        (gw.client.get(gw.url("/v1/nothing")), 404, "not-found"),
    ];
    for (request, status, code) in cases {
        let res = request.send().await.unwrap();
        assert_eq!(res.status().as_u16(), status, "{code}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["error"]["code"], code);
        assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
        assert!(body["error"]["details"].is_object());
    }
    assert!(gw.log(&s).await.is_empty(), "no refused request wrote to the log");
}

#[tokio::test]
async fn serve_starts_beside_a_stored_session_it_cannot_run_which_answers_session_unusable() {
    let w = world().await;
    let (reply, _gate) = held("never finished");
    w.mock.push(reply);
    let broken = w.gw.session().await;
    w.send(&broken, json!({"content": "work"})).await;
    w.mock.requested(1).await; // its turn is open: the next start must bring it back

    // The model's endpoint now needs a key that is not set: that one session cannot run.
    let World { dir: _dir, mock: _mock, gw } = w;
    let gw = gw.crash_and_restart_on("https://example.invalid/v1");
    let said = gw.log_lines().join("\n");
    assert!(said.contains("a stored session was not brought back"), "{said}");
    let (status, body) =
        gw.post(&format!("/v1/sessions/{broken}/messages"), json!({"content": "again"})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "session-unusable");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(&broken) && message.contains("API key"), "{message}");
    let (status, log) = gw.get(&format!("/v1/sessions/{broken}/events/page")).await;
    assert_eq!(status, 200, "its log stays readable");
    assert!(!log["events"].as_array().unwrap().is_empty());

    let (status, run) = gw.post("/v1/runs", json!({"content": "hello", "model": "demo"})).await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["finishReason"], "completed");
}
