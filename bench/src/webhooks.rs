//! Webhooks: a turn's time through `airlock serve` in three sessions taken in turn: one heard by
//! no subscription, one by two whose receiver answers at once, one by two whose receiver takes the
//! connection and never answers (`docs/http-api.md`, "Webhooks": a dead receiver holds up no
//! turn). The first two differ by what a subscription costs a turn (its deliveries written in the
//! turn's commit); the last two only by the receiver.

use std::path::Path;
use std::time::{Duration, Instant};

use airlock_tests::gateway::Gateway;
use airlock_tests::{MockModel, Reply};
use axum::http::StatusCode;
use serde_json::json;
use tokio::net::TcpListener;

use crate::measure::percentile;
use crate::{Row, Size};

const SCENARIO: &str = "webhooks";

const EVENTS: [&str; 5] =
    ["session.idle", "session.requires_action", "session.failed", "run.completed", "turn.ended"];

/// The rows: median and p99 of an owned run's turn in each session, and the ratios of medians.
pub async fn dead_receiver(work: &Path, size: Size) -> Vec<Row> {
    let mock = MockModel::start().await;
    mock.otherwise(|_| Reply::text("Hello.", 2));
    let env = [("AIRLOCK_WEBHOOKS_ALLOW_LOOPBACK", "true")];
    let gw = Gateway::start_with(&work.join("webhooks.db"), &mock.base_url(), &env);
    let (live, dead) = (answering().await, never_answering().await);
    let [quiet, heard_live, heard_dead] =
        [gw.session().await, gw.session().await, gw.session().await];
    for (url, session) in [(&live, &heard_live), (&dead, &heard_dead)] {
        for _ in 0..2 {
            let body = json!({"url": url, "events": EVENTS, "sessionId": session});
            let (code, made) = gw.post("/v1/webhooks", body).await;
            assert_eq!(code, 201, "{made}");
        }
    }
    // Turns taken in turn, each round starting with the next session, so that whatever drifts
    // over the run (the store growing, the mock's record) and whatever a turn leaves to the next
    // weigh on the three alike.
    let turns = (size.turns / 2).max(20);
    let sessions = [&quiet, &heard_live, &heard_dead];
    let mut times: [Vec<Duration>; 3] = Default::default();
    for i in 0..size.warmup_turns + turns {
        for k in (0..3).map(|k| (i + k) % 3) {
            let took = turn(&gw, sessions[k], i).await;
            if i >= size.warmup_turns {
                times[k].push(took);
            }
        }
    }
    let [mut none, mut answered, mut hanging] = times;
    let median = |times: &mut Vec<Duration>| percentile(times, 50.0);
    let (none_ms, answered_ms, hanging_ms) =
        (median(&mut none), median(&mut answered), median(&mut hanging));
    let mut rows = Vec::new();
    for (what, times, ms) in [
        ("no subscription", &mut none, none_ms),
        ("2 subscriptions, receiver answers", &mut answered, answered_ms),
        ("2 subscriptions, receiver never answers", &mut hanging, hanging_ms),
    ] {
        rows.push(Row::new(SCENARIO, format!("turn, {what}, median"), ms, "ms"));
        rows.push(Row::new(SCENARIO, format!("turn, {what}, p99"), percentile(times, 99.0), "ms"));
    }
    rows.push(Row::new(SCENARIO, "never answers ÷ answers, median", hanging_ms / answered_ms, "×"));
    rows.push(Row::new(SCENARIO, "answers ÷ no subscription, median", answered_ms / none_ms, "×"));
    rows
}

/// The URL of a receiver that answers every delivery 204 at once.
async fn answering() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let url = format!("http://{}/hooks", listener.local_addr().expect("an address"));
    let app = axum::Router::new()
        .route("/hooks", axum::routing::post(|| async { StatusCode::NO_CONTENT }));
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// The URL of a receiver that takes every connection and holds it, never answering.
async fn never_answering() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let url = format!("http://{}/hooks", listener.local_addr().expect("an address"));
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    url
}

/// Owned run number `i` in session `s`: how long it took.
async fn turn(gw: &Gateway, s: &str, i: usize) -> Duration {
    let started = Instant::now();
    let (code, result) =
        gw.post(&format!("/v1/sessions/{s}/runs"), json!({"content": format!("turn {i}")})).await;
    let took = started.elapsed();
    assert_eq!(code, 200, "{result}");
    took
}
