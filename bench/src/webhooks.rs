//! Webhooks: a turn's time through `airlock serve` with subscriptions to every event type whose
//! receiver takes the connection and never answers, beside the same turns without one, in the
//! same run (`docs/http-api.md`, "Webhooks": a dead receiver holds up no turn).

use std::path::Path;
use std::time::{Duration, Instant};

use airlock_tests::gateway::Gateway;
use airlock_tests::{MockModel, Reply};
use serde_json::json;

use crate::measure::percentile;
use crate::{Row, Size};

const SCENARIO: &str = "webhooks";

/// The rows: median and p99 of an owned run's turn, without and with the dead receiver.
pub async fn dead_receiver(work: &Path, size: Size) -> Vec<Row> {
    let mock = MockModel::start().await;
    mock.otherwise(|_| Reply::text("Hello.", 2));
    let env = [("AIRLOCK_WEBHOOKS_ALLOW_LOOPBACK", "true"), ("AIRLOCK_LOG", "error")];
    let gw = Gateway::start_with(&work.join("webhooks.db"), &mock.base_url(), &env);
    let receiver = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let url = format!("http://{}/hooks", receiver.local_addr().expect("an address"));
    // Takes every connection and holds it, never answering.
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = receiver.accept().await {
            held.push(socket);
        }
    });
    let s = gw.session().await;
    let turns = (size.turns / 2).max(20);
    timed(&gw, &s, size.warmup_turns).await;
    let mut without = timed(&gw, &s, turns).await;
    let events = [
        "session.idle",
        "session.requires_action",
        "session.failed",
        "run.completed",
        "turn.ended",
    ];
    for session in [None, Some(s.as_str())] {
        let body = json!({"url": url, "events": events, "sessionId": session});
        let (code, made) = gw.post("/v1/webhooks", body).await;
        assert_eq!(code, 201, "{made}");
    }
    let mut with = timed(&gw, &s, turns).await;
    let (before, after) = (percentile(&mut without, 50.0), percentile(&mut with, 50.0));
    vec![
        Row::new(SCENARIO, "turn without subscriptions, median", before, "ms"),
        Row::new(SCENARIO, "turn without subscriptions, p99", percentile(&mut without, 99.0), "ms"),
        Row::new(SCENARIO, "turn, 2 subscriptions to a dead receiver, median", after, "ms"),
        Row::new(
            SCENARIO,
            "turn, 2 subscriptions to a dead receiver, p99",
            percentile(&mut with, 99.0),
            "ms",
        ),
        Row::new(SCENARIO, "with ÷ without, median", after / before, "×"),
    ]
}

/// `n` owned runs in session `s`, one after another: how long each took.
async fn timed(gw: &Gateway, s: &str, n: usize) -> Vec<Duration> {
    let path = format!("/v1/sessions/{s}/runs");
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let started = Instant::now();
        let (code, result) = gw.post(&path, json!({"content": format!("turn {i}")})).await;
        times.push(started.elapsed());
        assert_eq!(code, 200, "{result}");
    }
    times
}
