//! Gateways sharing PostgreSQL (`docs/deploy.md`) beside one gateway on SQLite: turns per second
//! and enqueue latency, each request sent to a gateway at random (the others forward it to the
//! one running its session). The PostgreSQL rows need `AIRLOCK_TEST_POSTGRES`, a server URL.

use std::path::Path;
use std::time::{Duration, Instant};

use airlock_tests::MockModel;
use airlock_tests::cluster::{Client, Cluster};
use airlock_tests::gateway::Gateway;
use serde_json::json;

use crate::measure::percentile;
use crate::{Row, Size};

const S: &str = "cluster";

/// Sessions, each running turns back to back in the turns measure.
const SESSIONS: usize = 16;

/// Injects per second in the latency measure.
const RATE: u64 = 500;

/// The same load on SQLite, then on PostgreSQL with 1, 2 and 3 gateways.
pub async fn scaling(work: &Path, size: Size) -> Vec<Row> {
    let mock = MockModel::start().await;
    let sqlite = Gateway::start_with(&work.join("cluster.db"), &mock.base_url(), &[]);
    let mut rows = measure("SQLite, 1 gateway", vec![sqlite.base.clone()], size).await;
    drop(sqlite);
    for gateways in 1..=3 {
        let Some(cluster) = Cluster::start(gateways, "the cluster benchmark").await else {
            rows.push(Row::new(S, "PostgreSQL: not run (set AIRLOCK_TEST_POSTGRES)", 0.0, ""));
            break;
        };
        let bases = cluster.nodes.iter().map(|n| n.base.clone()).collect();
        let label = match gateways {
            1 => "PostgreSQL, 1 gateway".to_owned(),
            n => format!("PostgreSQL, {n} gateways"),
        };
        rows.extend(measure(&label, bases, size).await);
    }
    rows
}

async fn measure(label: &str, bases: Vec<String>, size: Size) -> Vec<Row> {
    let client = Client::new(bases, 1);
    let mut sessions = Vec::with_capacity(SESSIONS);
    for i in 0..SESSIONS {
        sessions.push(client.reseeded(i as u64).create(json!({"model": "openai:mock"})).await);
    }
    turns(&client, &sessions, 0.5).await; // warm: connections, cores, prepared statements
    let seconds = size.load_seconds;
    let started = Instant::now();
    let turns = turns(&client, &sessions, seconds).await;
    let rate = turns as f64 / started.elapsed().as_secs_f64();
    let mut latencies = injects(&client, &sessions, seconds).await;
    vec![
        Row::new(S, format!("{label}: {SESSIONS} sessions' turns"), rate, "turns/s"),
        Row::new(
            S,
            format!("{label}: enqueue at {RATE}/s, p99"),
            percentile(&mut latencies, 99.0),
            "ms",
        ),
    ]
}

/// Runs turns back to back in every session for `seconds`; answers how many ended.
async fn turns(client: &Client, sessions: &[String], seconds: f64) -> usize {
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let loops = sessions.iter().enumerate().map(|(i, session)| {
        let mut client = client.reseeded(100 + i as u64);
        async move {
            let url = |base: &str| format!("{base}/v1/sessions/{session}/runs");
            let mut done = 0;
            while Instant::now() < until {
                let run =
                    client.call(|http, base| http.post(url(base)).json(&json!({"content": "go"})));
                run.await.bytes().await.expect("a run's result");
                done += 1;
            }
            done
        }
    });
    futures::future::join_all(loops).await.into_iter().sum()
}

/// Injects (made durable, starting no turn) at [`RATE`] per second for `seconds`, spread over
/// the sessions, each on time whatever the others do; their latencies.
async fn injects(client: &Client, sessions: &[String], seconds: f64) -> Vec<Duration> {
    let mut ticks = tokio::time::interval(Duration::from_nanos(1_000_000_000 / RATE));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let n = (RATE as f64 * seconds) as usize;
    let mut requests = Vec::with_capacity(n);
    for i in 0..n {
        ticks.tick().await;
        let (mut client, session) =
            (client.reseeded(1000 + i as u64), sessions[i % sessions.len()].clone());
        requests.push(tokio::spawn(async move {
            let url = format!("/v1/sessions/{session}/messages");
            let body = json!({"content": "context for later", "delivery": "inject"});
            let sent = Instant::now();
            let res = client.call(|http, base| http.post(format!("{base}{url}")).json(&body)).await;
            res.bytes().await.expect("a receipt");
            sent.elapsed()
        }));
    }
    let mut latencies = Vec::with_capacity(n);
    for request in requests {
        latencies.push(request.await.expect("an inject ran"));
    }
    latencies
}
