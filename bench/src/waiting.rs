//! Sessions waiting for a person: each one's turn waits for an approval. Once they sleep (their
//! core instances dropped after `SLEEP_AFTER`, as idle sessions' are), the gateway's memory with
//! all of them waiting; then approving each, which wakes its core to take the answer.

use std::path::Path;
use std::time::Instant;

use airlock_tests::MockModel;
use futures::StreamExt;
use serde_json::json;

use crate::measure::rss_mb;
use crate::scale::start;
use crate::{Row, Size};

/// `size.waiting` sessions of the demo model, each waiting for an approval of its `echo` call.
pub async fn sessions(work: &Path, size: Size) -> Vec<Row> {
    const S: &str = "waiting sessions";
    let n = size.waiting;
    let mock = MockModel::start().await;
    let most = (2 * n).to_string();
    let env = [
        ("AIRLOCK_TENANT_SESSIONS", most.as_str()),
        ("AIRLOCK_TENANT_TURNS", most.as_str()),
        ("AIRLOCK_TENANT_RATE", "1000000"),
        ("AIRLOCK_TENANT_CREATES", "1000000"),
        ("AIRLOCK_MAX_INSTANCES", most.as_str()),
    ];
    let (gw, _) = start(&work.join("waiting.db"), &mock, &env).await;
    let at_start = rss_mb(gw.pid());
    let gw = &gw;
    let ids: Vec<String> = futures::stream::iter(0..n)
        .map(|_| async move {
            let tools = json!([{"name": "echo", "approval": "always"}]);
            let (code, session) =
                gw.post("/v1/sessions", json!({"model": "demo", "tools": tools})).await;
            assert_eq!(code, 201, "{session}");
            let id = session["sessionId"].as_str().expect("a session id").to_owned();
            let call = json!({"content": r#"/tool echo {"text":"hi"}"#});
            let (code, body) = gw.post(&format!("/v1/sessions/{id}/messages"), call).await;
            assert_eq!(code, 202, "{body}");
            id
        })
        .buffer_unordered(32)
        .collect()
        .await;
    // Each sleeps `SLEEP_AFTER` (2 s) after its call began to wait.
    gw.until_metric("airlock_sessions_asleep", |asleep| asleep >= n as f64).await;
    let rss = rss_mb(gw.pid());
    let per_session = (rss - at_start) * 1024.0 / n as f64;
    let approving = Instant::now();
    futures::stream::iter(&ids)
        .for_each_concurrent(32, |id| async move {
            let (code, calls) =
                gw.get(&format!("/v1/sessions/{id}/tool-calls?state=waiting")).await;
            assert_eq!(code, 200, "{calls}");
            let call = calls["items"][0]["callId"].as_str().expect("a waiting call").to_owned();
            let path = format!("/v1/sessions/{id}/tool-calls/{call}/approve");
            let (code, body) = gw.post(&path, json!({})).await;
            assert!(code == 200 || code == 202, "{code} {body}");
        })
        .await;
    let per_approval = approving.elapsed().as_secs_f64() * 1000.0 / n as f64;
    vec![
        Row::new(S, format!("{n} waiting, asleep: RSS"), rss, "MB").at_most(500.0),
        Row::new(S, "RSS per waiting session", per_session, "KB"),
        Row::new(
            S,
            "approving a sleeping one (its core wakes; 32 at a time), mean",
            per_approval,
            "ms",
        ),
    ]
}
