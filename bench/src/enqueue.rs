//! Enqueues over HTTP: `POST …/messages` with `delivery: inject`, which is made durable and
//! answered 202 but starts no turn, so only the enqueue path is measured.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use airlock_tests::gateway::Gateway;
use airlock_tests::{MockModel, Reply};
use bytes::Bytes;
use serde_json::json;

use crate::conn::Conn;
use crate::measure::{Usage, percentile};
use crate::scale::start;
use crate::{Row, Size};

/// A client for many concurrent requests to one gateway.
fn client() -> reqwest::Client {
    airlock_tests::http_client().pool_max_idle_per_host(1024).build().expect("a client")
}

/// The gateway's settings for enqueue loads: what is measured is the enqueue path, so the queue
/// of each session may grow past `--max-queue`'s default.
const UNBOUNDED_QUEUE: &[(&str, &str)] = &[("AIRLOCK_MAX_QUEUE", "0")];

/// As [`UNBOUNDED_QUEUE`], with sessions kept in memory for the whole scenario.
const LONG_LIVED: &[(&str, &str)] = &[("AIRLOCK_MAX_QUEUE", "0"), ("AIRLOCK_IDLE_EVICT", "1h")];

/// The body of every inject.
const INJECT: &str = r#"{"content":"context for later","delivery":"inject"}"#;

/// The path a message to `session` is posted to.
fn messages(session: &str) -> String {
    format!("/v1/sessions/{session}/messages")
}

/// One inject into `session`; answers how long the 202 took.
pub async fn inject(client: &reqwest::Client, gw: &Gateway, session: &str) -> Duration {
    let sent = Instant::now();
    let res = client
        .post(gw.url(&messages(session)))
        .header("content-type", "application/json")
        .body(INJECT)
        .send()
        .await
        .expect("the gateway answers");
    let status = res.status();
    let _ = res.bytes().await;
    assert_eq!(status, 202, "an inject is accepted");
    sent.elapsed()
}

/// `n` injects one after another; their latencies.
async fn sequential(
    client: &reqwest::Client,
    gw: &Gateway,
    session: &str,
    n: usize,
) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        samples.push(inject(client, gw, session).await);
    }
    samples
}

/// Injects at a fixed `rate` per second for `seconds`, each sent on time whatever the others
/// do (an open loop: a slow answer does not delay the next request); their latencies.
async fn at_rate(gw: &Arc<Gateway>, session: &str, rate: u64, seconds: f64) -> Vec<Duration> {
    let client = client();
    let n = (rate as f64 * seconds) as usize;
    let mut ticks = tokio::time::interval(Duration::from_nanos(1_000_000_000 / rate));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut requests = Vec::with_capacity(n);
    for _ in 0..n {
        ticks.tick().await;
        let (client, gw, session) = (client.clone(), gw.clone(), session.to_owned());
        requests.push(tokio::spawn(async move { inject(&client, &gw, &session).await }));
    }
    let mut samples = Vec::with_capacity(n);
    for request in requests {
        samples.push(request.await.expect("a request ran"));
    }
    samples
}

/// The scenario of [`throughput`]'s rows.
const THROUGHPUT: &str = "enqueue (HTTP)";

/// What a flat-out load took: requests per second, the CPU per request in ms of the gateway and
/// of this process (the clients), which share the machine's cores, and what the gateway wrote
/// to its files per request, in KB.
struct Load {
    rate: f64,
    gateway_cpu_ms: f64,
    clients_cpu_ms: f64,
    gateway_written_kb: f64,
}

impl Load {
    /// The load's rows under `measure`: the rate, held to `at_least`, then the CPU and the file
    /// writes it took.
    fn rows(&self, measure: &str, at_least: f64) -> [Row; 4] {
        let (gateway, clients) = (self.gateway_cpu_ms * 1000.0, self.clients_cpu_ms * 1000.0);
        [
            Row::new(THROUGHPUT, measure, self.rate, "req/s").at_least(at_least),
            Row::new(THROUGHPUT, "  gateway CPU per request", gateway, "µs"),
            Row::new(THROUGHPUT, "  bench clients' CPU per request", clients, "µs"),
            Row::new(
                THROUGHPUT,
                "  gateway's file writes per request",
                self.gateway_written_kb,
                "KB",
            ),
        ]
    }
}

/// As many injects as `clients` concurrent clients get answered in `seconds`, spread over
/// `sessions`.
async fn flat_out(gw: &Arc<Gateway>, sessions: &[String], clients: usize, seconds: f64) -> Load {
    let body = Bytes::from_static(INJECT.as_bytes());
    let mut conns = Vec::with_capacity(clients);
    for _ in 0..clients {
        conns.push(Conn::open(gw).await);
    }
    eprintln!(
        "airlock-bench: {clients} clients into {} sessions (gateway pid {})",
        sessions.len(),
        gw.pid()
    );
    let (before, bench_before) = (Usage::of(gw.pid()), Usage::of(std::process::id()));
    let done = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let workers: Vec<_> = (conns.into_iter().enumerate())
        .map(|(i, mut conn)| {
            let (body, done, stop) = (body.clone(), done.clone(), stop.clone());
            let path = messages(&sessions[i % sessions.len()]).parse().expect("a path");
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let status = conn.post(&path, &body).await;
                    assert_eq!(status, 202, "an inject is accepted");
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.await.expect("a client ran");
    }
    let done = done.load(Ordering::Relaxed);
    let gateway = Usage::of(gw.pid()).per(before, done);
    Load {
        rate: done as f64 / started.elapsed().as_secs_f64(),
        gateway_cpu_ms: gateway.cpu_ms,
        clients_cpu_ms: Usage::of(std::process::id()).per(bench_before, done).cpu_ms,
        gateway_written_kb: gateway.written_kb,
    }
}

/// Latency at a steady 1,000 requests per second, and the most one session and 100 sessions take.
pub async fn throughput(work: &Path, size: Size) -> Vec<Row> {
    const S: &str = THROUGHPUT;
    let mock = MockModel::start().await;
    // Injects pile up in the queue, thousands of them: the queue's limit is off.
    let (gw, _) = start(&work.join("enqueue.db"), &mock, UNBOUNDED_QUEUE).await;
    let gw = Arc::new(gw);
    let one = gw.session().await;
    sequential(&client(), &gw, &one, 100).await; // warm: connections, the session's core
    let mut steady = at_rate(&gw, &one, 1000, size.load_seconds).await;
    let mut rows = vec![
        Row::new(S, "1 session at 1,000 req/s: p50", percentile(&mut steady, 50.0), "ms"),
        Row::new(S, "1 session at 1,000 req/s: p99", percentile(&mut steady, 99.0), "ms")
            .at_most(5.0),
    ];
    let load = flat_out(&gw, std::slice::from_ref(&one), 64, size.load_seconds).await;
    rows.extend(load.rows("1 session, 64 clients: most", 5000.0));
    let mut many = Vec::with_capacity(100);
    for _ in 0..100 {
        many.push(gw.session().await);
    }
    let load = flat_out(&gw, &many, 200, size.load_seconds).await;
    rows.extend(load.rows("100 sessions, 200 clients: most", 10000.0));
    rows
}

/// Enqueue latency on a fresh session, on one with a long log and on one with many pending
/// items, then again on the same two after a restart.
pub async fn long_sessions(work: &Path, size: Size) -> Vec<Row> {
    const S: &str = "enqueue, long sessions";
    let mock = MockModel::start().await;
    mock.forget_requests();
    let db = work.join("long.db");
    let (gw, _) = start(&db, &mock, LONG_LIVED).await;
    let client = client();
    let fresh = gw.session().await;
    sequential(&client, &gw, &fresh, 20).await;
    let p50 = |mut samples: Vec<Duration>| percentile(&mut samples, 50.0);
    let base = p50(sequential(&client, &gw, &fresh, size.samples).await);

    let long = gw.session().await;
    let turns = build_log(&gw, &mock, &long, size.long_log).await;
    let pending = gw.session().await;
    futures::future::join_all((0..size.pending).map(|_| inject(&client, &gw, &pending))).await;

    let (events, items) = (size.long_log, size.pending);
    let mut rows = vec![Row::new(S, "fresh session: p50", base, "ms")];
    let measure = |rows: &mut Vec<Row>, when: &str, long_p50: f64, pending_p50: f64| {
        rows.push(Row::new(
            S,
            format!("{events} events ({turns} turns){when}: p50"),
            long_p50,
            "ms",
        ));
        rows.push(Row::new(S, "  ÷ fresh p50".to_owned(), long_p50 / base, "×").at_most(1.5));
        rows.push(Row::new(S, format!("{items} pending{when}: p50"), pending_p50, "ms"));
        rows.push(Row::new(S, "  ÷ fresh p50".to_owned(), pending_p50 / base, "×").at_most(1.5));
    };
    let long_p50 = p50(sequential(&client, &gw, &long, size.samples).await);
    let pending_p50 = p50(sequential(&client, &gw, &pending, size.samples).await);
    measure(&mut rows, "", long_p50, pending_p50);

    drop(gw);
    let (gw, _) = start(&db, &mock, LONG_LIVED).await;
    // The first request wakes each session; what is compared is every one after it.
    sequential(&client, &gw, &long, 1).await;
    sequential(&client, &gw, &pending, 1).await;
    let long_p50 = p50(sequential(&client, &gw, &long, size.samples).await);
    let pending_p50 = p50(sequential(&client, &gw, &pending, size.samples).await);
    measure(&mut rows, " after a restart", long_p50, pending_p50);
    rows
}

/// Runs turns of 100 streamed chunks until `session`'s log holds `events` events; answers how
/// many turns that took.
pub async fn build_log(gw: &Gateway, mock: &MockModel, session: &str, events: usize) -> usize {
    let text = "word ".repeat(100);
    let (mut logged, mut turns) = (0, 0);
    while logged < events {
        mock.push(Reply::text(&text, 100));
        let (code, result) =
            gw.post(&format!("/v1/sessions/{session}/runs"), json!({"content": "go on"})).await;
        assert_eq!(code, 200, "{result}");
        logged = result["lastSeq"].as_u64().expect("runs say where they ended") as usize + 1;
        turns += 1;
    }
    turns
}
