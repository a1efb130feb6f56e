//! Turns taken in rotation among three setups (three sessions, or three gateways), each round
//! starting with the next, so that whatever drifts over the run (the store growing, the mock's
//! record) and whatever a turn leaves to the next weigh on the three alike; and the servers the
//! setups report to: one that answers at once, one that never answers.

use std::time::{Duration, Instant};

use airlock_tests::gateway::Gateway;
use axum::http::StatusCode;
use serde_json::json;
use tokio::net::TcpListener;

use crate::measure::percentile;
use crate::{Row, Size};

/// Owned runs in each `(gateway, session, what)` of `setups` in rotation: a median and a p99 row
/// per setup, and the three medians (ms).
pub async fn in_rotation(
    scenario: &'static str,
    setups: [(&Gateway, &str, &str); 3],
    size: Size,
) -> (Vec<Row>, [f64; 3]) {
    let turns = (size.turns / 2).max(20);
    let mut times: [Vec<Duration>; 3] = Default::default();
    for i in 0..size.warmup_turns + turns {
        for k in (0..3).map(|k| (i + k) % 3) {
            let (gw, session, _) = setups[k];
            let took = turn(gw, session, i).await;
            if i >= size.warmup_turns {
                times[k].push(took);
            }
        }
    }
    let mut rows = Vec::new();
    let mut medians = [0.0; 3];
    for ((_, _, what), (times, median)) in setups.iter().zip(times.iter_mut().zip(&mut medians)) {
        *median = percentile(times, 50.0);
        rows.push(Row::new(scenario, format!("turn, {what}, median"), *median, "ms"));
        rows.push(Row::new(scenario, format!("turn, {what}, p99"), percentile(times, 99.0), "ms"));
    }
    (rows, medians)
}

/// The URL `path` of a receiver that answers every POST there 204 at once.
pub async fn answering(path: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let url = format!("http://{}{path}", listener.local_addr().expect("an address"));
    let app =
        axum::Router::new().route(path, axum::routing::post(|| async { StatusCode::NO_CONTENT }));
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// The base URL of a server that takes every connection and holds it, never answering.
pub async fn never_answering() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let url = format!("http://{}", listener.local_addr().expect("an address"));
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
