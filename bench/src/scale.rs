//! Scale: a start that does not grow with the stored sessions, memory per live session and after
//! eviction, waking an evicted session with a long log, receipts on a long log, and forks of
//! one.
//!
//! Stored sessions are made quickly: one real session is run through the gateway, then its rows
//! (session, events, receipts) are copied under new ids with SQL, as if the gateway had made them.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use airlock_tests::gateway::Gateway;
use airlock_tests::{MockModel, Reply};
use futures::StreamExt;
use rusqlite::{Connection, params};
use serde_json::json;

use crate::measure::{percentile, pss_mb, rss_mb};
use crate::{Row, Size};

/// A gateway on `db`, and how long it took from spawn to a `200` from `/healthz`.
pub async fn start(db: &Path, mock: &MockModel, env: &[(&str, &str)]) -> (Gateway, f64) {
    let started = Instant::now();
    let gw = Gateway::start_with(db, &mock.base_url(), env);
    let (code, _) = gw.get("/healthz").await;
    assert_eq!(code, 200, "the gateway is ready");
    (gw, started.elapsed().as_secs_f64() * 1000.0)
}

/// A data file holding one session that ran one turn; answers its id.
async fn one_session(db: &Path, mock: &MockModel) -> String {
    let (gw, _) = start(db, mock, &[]).await;
    let s = gw.session().await;
    mock.push(Reply::text("a short answer to a short question", 4));
    let (code, _) = gw.post(&format!("/v1/sessions/{s}/runs"), json!({"content": "hello"})).await;
    assert_eq!(code, 200);
    s
}

/// Copies session `template` as `bench-0000001` … `bench-<n>` (the ids it answers).
fn copy_session(db: &Path, template: &str, n: usize) -> Vec<String> {
    let mut conn = Connection::open(db).expect("the data file opens");
    let tx = conn.transaction().expect("a transaction");
    tx.execute(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?2) \
         INSERT INTO sessions (session_id, created_at, updated_at, spec, disposed, \
         parent_session_id, needs_recovery, receipts_indexed, goal) \
         SELECT printf('bench-%07d', i), created_at, updated_at, spec, 0, NULL, 0, 1, NULL \
         FROM n, sessions WHERE session_id = ?1",
        params![template, n as i64],
    )
    .expect("sessions copied");
    tx.execute(
        "INSERT INTO events (session_id, seq, type, time, body) \
         SELECT s.session_id, e.seq, e.type, e.time, e.body FROM sessions s, events e \
         WHERE s.session_id LIKE 'bench-%' AND e.session_id = ?1",
        [template],
    )
    .expect("events copied");
    tx.execute(
        "INSERT INTO receipts SELECT s.session_id, r.message_id, r.state, r.target, \
         r.inserted_seq, r.claimed_seq, r.turn, r.canceled_seq FROM sessions s, receipts r \
         WHERE s.session_id LIKE 'bench-%' AND r.session_id = ?1",
        [template],
    )
    .expect("receipts copied");
    tx.commit().expect("the copy commits");
    (1..=n).map(|i| format!("bench-{i:07}")).collect()
}

/// Brings each session into memory once (a read of its queue), 16 at a time.
async fn touch(gw: &Gateway, ids: &[String]) {
    futures::stream::iter(ids)
        .for_each_concurrent(16, |id| async move {
            let (code, body) = gw.get(&format!("/v1/sessions/{id}/queue")).await;
            assert_eq!(code, 200, "{body}");
        })
        .await;
}

/// Start time and memory with many stored sessions; memory per live idle session; memory once
/// every session was used and dropped again.
pub async fn stored_sessions(work: &Path, size: Size) -> Vec<Row> {
    const S: &str = "stored sessions";
    let mock = MockModel::start().await;
    let db = work.join("stored.db");
    let template = one_session(&db, &mock).await;
    let ids = copy_session(&db, &template, size.sessions - 1);
    let n = size.sessions;

    let file_kb = file_bytes(&db) / 1024.0 / n as f64;
    let (gw, start_ms) = start(&db, &mock, &[("AIRLOCK_IDLE_EVICT", "1h")]).await;
    let (at_start, pss_at_start) = (rss_mb(gw.pid()), pss_mb(gw.pid()));
    let mut rows = vec![
        Row::new(S, format!("{n} stored: start → ready"), start_ms, "ms").at_most(1000.0),
        Row::new(S, format!("{n} stored: RSS after start"), at_start, "MB").at_most(100.0),
        Row::new(S, "data file per stored one-turn session", file_kb, "KB"),
    ];
    touch(&gw, &ids[..size.live]).await;
    let live = size.live as f64;
    let per_session = |rss: f64| (rss - at_start) * 1024.0 / live;
    let awake = per_session(rss_mb(gw.pid()));
    // Idle for `SLEEP_AFTER` (2 s), each session's core instance sleeps.
    gw.until_metric("airlock_sessions_asleep", |asleep| asleep >= live).await;
    let asleep = per_session(rss_mb(gw.pid()));
    let pss = (pss_mb(gw.pid()) - pss_at_start) * 1024.0 / live;
    let live_n = size.live;
    rows.push(Row::new(S, format!("RSS per live session just used ({live_n} live)"), awake, "KB"));
    rows.push(
        Row::new(S, format!("RSS per live idle session ({live_n} live)"), asleep, "KB")
            .at_most(50.0),
    );
    rows.push(Row::new(S, "PSS per live idle session", pss, "KB"));
    drop(gw);

    let (gw, _) = start(&db, &mock, &[("AIRLOCK_IDLE_EVICT", "1s")]).await;
    let touched = Instant::now();
    let ids = &ids[..size.touched.min(ids.len())];
    touch(&gw, ids).await;
    let per_wake = touched.elapsed().as_secs_f64() * 1000.0 / ids.len() as f64;
    let n = ids.len();
    gw.until_metric("airlock_sessions", |live| live == 0.0).await;
    // The evictor gives memory back a tick (a quarter of the idle time) after the last eviction.
    tokio::time::sleep(Duration::from_secs(1)).await;
    rows.push(
        Row::new(S, format!("{n} touched once, all evicted: RSS"), rss_mb(gw.pid()), "MB")
            .at_most(200.0),
    );
    rows.push(Row::new(S, "touching a stored session (16 at a time), mean", per_wake, "ms"));
    rows
}

/// A session whose log holds `events` events or more, made of turns of 1,000 streamed chunks;
/// answers its id and the ids of the messages sent.
async fn long_session(gw: &Gateway, mock: &MockModel, events: usize) -> (String, Vec<String>) {
    let s = gw.session().await;
    let text = "word ".repeat(1000);
    let mut sent = Vec::new();
    let mut logged = 0;
    while logged < events {
        mock.push(Reply::text(&text, 1000));
        let (code, result) =
            gw.post(&format!("/v1/sessions/{s}/runs"), json!({"content": "go on"})).await;
        assert_eq!(code, 200, "{result}");
        sent.push(result["messageId"].as_str().expect("runs name their message").to_owned());
        logged = result["lastSeq"].as_u64().expect("runs say where they ended") as usize + 1;
    }
    (s, sent)
}

/// Waking an evicted session again and again (a read of its queue): one whose log holds
/// `size.wake_log` events of turns with long answers (a conversation of megabytes), and one whose
/// log holds `size.long_log` events of turns with short ones.
pub async fn wake(work: &Path, size: Size) -> Vec<Row> {
    const S: &str = "wake";
    let mock = MockModel::start().await;
    let db = work.join("wake.db");
    let (gw, _) = start(&db, &mock, &[("AIRLOCK_IDLE_EVICT", "1ms")]).await;
    let (long_answers, _) = long_session(&gw, &mock, size.wake_log).await;
    let many_turns = gw.session().await;
    let turns = crate::enqueue::build_log(&gw, &mock, &many_turns, size.long_log).await;
    let logs = [
        (long_answers, format!("{}-event log (answers of 5 KB)", size.wake_log)),
        (many_turns, format!("{}-event log ({turns} turns)", size.long_log)),
    ];
    let mut rows = Vec::new();
    for (s, log) in logs {
        let mut samples = Vec::with_capacity(size.wakes);
        for _ in 0..size.wakes {
            gw.until_metric("airlock_sessions", |live| live == 0.0).await;
            let woken = Instant::now();
            let (code, _) = gw.get(&format!("/v1/sessions/{s}/queue")).await;
            samples.push(woken.elapsed());
            assert_eq!(code, 200);
        }
        rows.push(Row::new(S, format!("wake, {log}: p50"), percentile(&mut samples, 50.0), "ms"));
        rows.push(
            Row::new(S, format!("wake, {log}: p99"), percentile(&mut samples, 99.0), "ms")
                .at_most(5.0),
        );
    }
    rows
}

/// Receipt lookups on a session whose log holds `size.receipt_log` events.
pub async fn receipts(work: &Path, size: Size) -> Vec<Row> {
    const S: &str = "receipts";
    let mock = MockModel::start().await;
    let db: PathBuf = work.join("receipts.db");
    let (gw, _) = start(&db, &mock, &[]).await;
    let (s, sent) = long_session(&gw, &mock, size.receipt_log).await;
    let mut samples = Vec::with_capacity(size.lookups);
    for i in 0..size.lookups {
        let id = &sent[i % sent.len()];
        let looked = Instant::now();
        let (code, receipt) = gw.get(&format!("/v1/sessions/{s}/messages/{id}")).await;
        samples.push(looked.elapsed());
        assert_eq!((code, receipt["state"].as_str()), (200, Some("claimed")), "{receipt}");
    }
    let log = size.receipt_log;
    vec![
        Row::new(S, format!("receipt, {log}-event log: p50"), percentile(&mut samples, 50.0), "ms"),
        Row::new(S, format!("receipt, {log}-event log: p99"), percentile(&mut samples, 99.0), "ms")
            .at_most(1.0),
    ]
}

/// The size of the data file at `db` and its write-ahead log, in bytes.
fn file_bytes(db: &Path) -> f64 {
    let wal = db.with_extension("db-wal");
    [db, wal.as_path()]
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len() as f64)
        .sum()
}

/// The bytes the pages in use of the data file at `db` take, as of its last commit (write-ahead
/// log included).
fn used_bytes(db: &Path) -> f64 {
    let conn = Connection::open(db).expect("the data file opens");
    let pragma = |name: &str| -> f64 {
        conn.query_row(&format!("PRAGMA {name}"), [], |row| row.get::<_, i64>(0))
            .expect("a pragma answers") as f64
    };
    (pragma("page_count") - pragma("freelist_count")) * pragma("page_size")
}

/// Forks of a session whose log holds `size.long_log` events, against forks of a one-turn
/// session: a fork shares its source's prefix, so both cost one row and a few events.
pub async fn forks(work: &Path, size: Size) -> Vec<Row> {
    const S: &str = "forks";
    const FORKS: usize = 50;
    let mock = MockModel::start().await;
    let db = work.join("forks.db");
    let (gw, _) = start(&db, &mock, &[]).await;
    let (long, _) = long_session(&gw, &mock, size.long_log).await;
    let (short, _) = long_session(&gw, &mock, 1).await;
    let timed = async |source: &str| {
        let (mut samples, before) = (Vec::with_capacity(FORKS), used_bytes(&db));
        for _ in 0..FORKS {
            let forked = Instant::now();
            let (code, made) = gw.post(&format!("/v1/sessions/{source}/fork"), json!({})).await;
            samples.push(forked.elapsed());
            assert_eq!(code, 201, "{made}");
        }
        let per_fork = (used_bytes(&db) - before) / FORKS as f64 / 1024.0;
        (percentile(&mut samples, 50.0), per_fork)
    };
    let (short_p50, short_bytes) = timed(&short).await;
    let (long_p50, long_bytes) = timed(&long).await;
    let log = size.long_log;
    vec![
        Row::new(S, "fork of a one-turn log: p50", short_p50, "ms"),
        Row::new(S, "fork of a one-turn log: stored per fork", short_bytes, "KB"),
        Row::new(S, format!("fork of a {log}-event log: p50"), long_p50, "ms"),
        Row::new(S, "  ÷ one-turn p50", long_p50 / short_p50, "×").at_most(1.5),
        Row::new(S, format!("fork of a {log}-event log: stored per fork"), long_bytes, "KB")
            .at_most(16.0),
    ]
}
