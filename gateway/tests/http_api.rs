//! The HTTP API in-process on a real port: the SSE log, the queue and receipts, idle cancel,
//! a restart, metrics. Resume, idempotency and refusals run against the binary in `tests/`.

mod common;

use serde_json::{Value, json};

#[tokio::test]
async fn message_is_acknowledged_with_id_and_seq_and_sse_shows_the_canonical_order() {
    let dir = tempfile::tempdir().unwrap();
    let gw = common::start(dir.path().join("a.db")).await;
    let s = gw.session().await;
    let mut sse = gw.sse(&s, "", None).await;
    let status = sse.next().await;
    assert_eq!((status.event.as_str(), status.data.contains("idle")), ("session.status", true));

    let (code, receipt) =
        gw.post(&format!("/v1/sessions/{s}/messages"), json!({"content": "hello"})).await;
    assert_eq!(code, 202);
    assert_eq!(receipt["seq"], 0);
    assert!(receipt["messageId"].is_string());

    let frames = sse.until_idle().await;
    let lines: Vec<&str> =
        frames.iter().map(|(_, l)| l.as_str()).filter(|l| *l != "session.queue").collect();
    let chunks = lines.iter().filter(|l| **l == "assistant/chunk").count();
    assert!(chunks >= 3, "streamed in several chunks: {lines:?}");
    let mut expected = vec![
        "agent/inbox/spliced",
        "status running",
        "turn/start",
        "agent/inbox/spliced",
        "step/start",
        "user/message",
        "request/header",
        "request/context",
    ];
    expected.extend(std::iter::repeat_n("assistant/chunk", chunks));
    expected.extend(["assistant/message", "step/end", "turn/end", "status idle"]);
    assert_eq!(lines, expected);
    let ids: Vec<u64> = frames.iter().filter_map(|(id, _)| *id).collect();
    assert_eq!(ids, (0..ids.len() as u64).collect::<Vec<_>>(), "contiguous seqs as SSE ids");
}

#[tokio::test]
async fn sessions_survive_a_restart_and_their_seqs_continue() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let gw = common::start(db.clone()).await;
    let s = gw.session().await;
    let mut sse = gw.sse(&s, "", None).await;
    gw.post(&format!("/v1/sessions/{s}/messages"), json!({"content": "before"})).await;
    let before = sse.until_idle().await.iter().filter(|(id, _)| id.is_some()).count() as u64;
    drop(sse);
    gw.stop().await;

    let gw = common::start(db).await;
    let (code, session) = gw.get(&format!("/v1/sessions/{s}")).await;
    assert_eq!(code, 200);
    assert_eq!(session["lastSeq"], before - 1);
    let mut sse = gw.sse(&s, "", Some(before - 1)).await;
    let (code, receipt) =
        gw.post(&format!("/v1/sessions/{s}/messages"), json!({"content": "after"})).await;
    assert_eq!((code, receipt["seq"].as_u64()), (202, Some(before)));
    let frames = sse.until_idle().await;
    assert!(
        frames.iter().any(|(_, l)| l == "request/header"),
        "the first request after a restart says resume"
    );
    let log = gw.log(&s).await;
    let turns: Vec<&Value> =
        log.iter().filter(|e| e["type"] == "turn/start").map(|e| &e["data"]["turn"]).collect();
    assert_eq!(turns, [1, 2]);
    let header = log.iter().rev().find(|e| e["type"] == "request/header").unwrap();
    assert_eq!(header["data"]["reason"], "resume");
}

#[tokio::test]
async fn metrics_count_sessions_turns_enqueues_commits_and_subscribers() {
    let dir = tempfile::tempdir().unwrap();
    let gw = common::start(dir.path().join("a.db")).await;
    let s = gw.session().await;
    let mut sse = gw.sse(&s, "", None).await;
    gw.post(&format!("/v1/sessions/{s}/messages"), json!({"content": "count me"})).await;
    sse.until_idle().await;
    let res = gw.client.get(gw.url("/metrics")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let text = res.text().await.unwrap();
    let value = |name: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} in {text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert!(value("airlock_turns_total") >= 1.0);
    assert!(value("airlock_sessions") >= 1.0);
    assert!(value("airlock_sse_subscribers") >= 1.0, "this test's stream is open");
    assert!(value("airlock_enqueue_seconds_count") >= 1.0);
    assert!(value("airlock_commit_batch_size_count") >= 1.0);
}

#[tokio::test]
async fn graceful_shutdown_ends_open_streams_and_keeps_every_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    let gw = common::start(db.clone()).await;
    let s = gw.session().await;
    let mut sse = gw.sse(&s, "", None).await;
    gw.post(&format!("/v1/sessions/{s}/messages"), json!({"content": "bye"})).await;
    let seen = sse.until_idle().await.iter().filter(|(id, _)| id.is_some()).count();
    let hub = gw.client.get(gw.url("/v1/events")).send().await.unwrap();
    assert_eq!(hub.status(), 200);
    gw.stop().await; // returns only once every stream has closed
    assert!(sse.ended().await, "the open stream ended so its client can resume elsewhere");
    let gw = common::start(db).await;
    assert_eq!(gw.log(&s).await.len(), seen);
}
