//! Sessions at scale: a session at rest is dropped from memory and comes back from its log when
//! used, as if it had stayed; a start visits only the sessions the log says need it.

use std::sync::Arc;

use airlock_tests::Reply;
use airlock_tests::gateway::{Frame, Gateway, seqs};
use airlock_tests::world::{World, first_chunk, held, world_with};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// `n` sessions at rest, created 32 at a time.
async fn sessions(gw: &Gateway, n: usize) -> Vec<String> {
    futures::stream::iter(0..n).map(|_| gw.session()).buffer_unordered(32).collect().await
}

/// Runs one owned turn and answers its final response.
async fn run(w: &World, s: &str, text: &str) -> Value {
    w.mock.push(Reply::text(&format!("re: {text}"), 2));
    let (code, result) =
        w.gw.post(&format!("/v1/sessions/{s}/runs"), json!({"content": text})).await;
    assert_eq!(code, 200, "{result}");
    result["finalResponse"].clone()
}

/// A session whose turn streams and then holds (its reply's gate is kept closed).
async fn busy_session(w: &World) -> (String, Arc<Notify>) {
    let busy = w.gw.session().await;
    let mut sse = w.gw.sse(&busy, None).await;
    let (reply, gate) = held("working");
    w.mock.push(reply);
    w.send(&busy, json!({"content": "work"})).await;
    sse.until(first_chunk).await;
    (busy, gate)
}

/// Evicts at once whatever is at rest.
const EVICT_AT_ONCE: [(&str, &str); 1] = [("AIRLOCK_IDLE_EVICT", "1ms")];

#[tokio::test]
async fn twenty_thousand_stored_sessions_start_and_the_oldest_answers() {
    let w = world_with(&[("AIRLOCK_MAX_LIVE_SESSIONS", "1000")]).await;
    let oldest = w.gw.session().await;
    assert_eq!(run(&w, &oldest, "first").await, "re: first");
    let before = w.gw.log(&oldest).await.len();
    let rest = sessions(&w.gw, 19_999).await;
    assert_eq!(rest.len(), 19_999);
    w.gw.until_metric("airlock_sessions", |live| live <= 1000.0).await;

    let World { dir, mock, gw } = w;
    let gw = gw.crash_and_restart();
    let w = World { dir, mock, gw };
    assert_eq!(w.gw.metric("airlock_stored_sessions").await, 20_000.0);
    assert_eq!(w.gw.metric("airlock_sessions").await, 0.0, "nothing needed recovery");
    assert_eq!(run(&w, &oldest, "again").await, "re: again");
    let log = w.gw.log(&oldest).await;
    let seqs: Vec<u64> = log.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..log.len() as u64).collect::<Vec<_>>());
    assert!(log.len() > before);
}

/// The event types and turn-end reasons of a log, and the text of its messages.
fn shape(log: &[Value]) -> Vec<String> {
    log.iter()
        .map(|e| match e["type"].as_str().unwrap() {
            "turn/end" => format!("turn/end {}", e["data"]["reason"]["kind"]),
            "assistant/message" => format!("assistant/message {}", e["data"]["message"]["content"]),
            kind => kind.to_owned(),
        })
        .collect()
}

/// Two turns with the session's SSE open throughout; `between` runs after the first.
async fn two_turns(w: &World, between: impl AsyncFnOnce(&World, &str)) -> (Vec<Value>, Vec<Frame>) {
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    w.mock.push(Reply::text("one", 2));
    w.send(&s, json!({"content": "first"})).await;
    let mut frames = sse.until_idle().await;
    between(w, &s).await;
    w.mock.push(Reply::text("two", 2));
    w.send(&s, json!({"content": "second"})).await;
    frames.extend(sse.until_idle().await);
    (w.gw.log(&s).await, frames)
}

#[tokio::test]
async fn an_evicted_session_continues_exactly_as_if_it_had_stayed_live() {
    let stayed = world_with(&[]).await;
    let (live_log, _) = two_turns(&stayed, async |_, _| {}).await;

    let w = world_with(&EVICT_AT_ONCE).await;
    let wakes_before = std::cell::Cell::new(0.0);
    let (log, frames) = two_turns(&w, async |w, _| {
        // Followed all along, yet dropped from memory (it may have been, too, between its
        // creation and its first use: the counts are taken here).
        w.gw.until_metric("airlock_sessions", |live| live == 0.0).await;
        wakes_before.set(w.gw.metric("airlock_wakes_total").await);
    })
    .await;
    let wakes = w.gw.metric("airlock_wakes_total").await - wakes_before.get();
    assert_eq!(wakes, 1.0, "the second send woke it");
    assert_eq!(shape(&log), shape(&live_log), "the same events as a session that stayed");
    let seen = seqs(&frames);
    assert_eq!(seen, (0..log.len() as u64).collect::<Vec<_>>(), "the subscriber saw no gap");
    let statuses: Vec<&Frame> = frames.iter().filter(|f| matches!(f, Frame::Status(_))).collect();
    assert_eq!(statuses.len(), 5, "idle at connect, then running and idle twice: {statuses:?}");
}

#[tokio::test]
async fn a_session_with_open_work_is_never_evicted_and_a_kill_9_loses_nothing() {
    let w = world_with(&EVICT_AT_ONCE).await;
    let at_rest = w.gw.session().await;
    assert_eq!(run(&w, &at_rest, "done").await, "re: done");
    w.gw.until_metric("airlock_sessions", |live| live == 0.0).await;

    let (busy, _gate) = busy_session(&w).await;
    // Another session comes and goes while the busy one streams.
    let other = w.gw.session().await;
    assert_eq!(run(&w, &other, "quick").await, "re: quick");
    w.gw.until_metric("airlock_sessions", |live| live == 1.0).await;
    let (_, view) = w.gw.get(&format!("/v1/sessions/{busy}")).await;
    assert_eq!(view["status"], "running", "the busy session stayed in memory, at work");
    let (busy_len, rest_len) = (w.gw.log(&busy).await.len(), w.gw.log(&at_rest).await.len());

    let World { dir, mock, gw } = w;
    let gw = gw.crash_and_restart();
    let w = World { dir, mock, gw };
    assert_eq!(w.gw.metric("airlock_wakes_total").await, 1.0, "only the busy one needed recovery");
    let busy_log = w.gw.log(&busy).await;
    assert_eq!(busy_log.len(), busy_len + 2, "step/end and turn/end closed it");
    assert_eq!(busy_log.last().unwrap()["data"]["reason"]["kind"], "interrupted");
    assert_eq!(w.gw.log(&at_rest).await.len(), rest_len, "the evicted session lost nothing");
    assert_eq!(run(&w, &at_rest, "still here?").await, "re: still here?");
}

#[tokio::test]
async fn recovery_at_start_repairs_an_open_turn_without_loading_the_idle_sessions() {
    let w = world_with(&[]).await;
    let idle = sessions(&w.gw, 3_000).await;
    let (busy, _gate) = busy_session(&w).await;

    let World { dir, mock, gw } = w;
    let gw = gw.crash_and_restart();
    let w = World { dir, mock, gw };
    assert_eq!(w.gw.metric("airlock_sessions").await, 1.0, "the idle sessions stayed on disk");
    assert_eq!(w.gw.metric("airlock_wakes_total").await, 1.0);
    assert_eq!(w.gw.metric("airlock_stored_sessions").await, 3_001.0);
    let log = w.gw.log(&busy).await;
    assert_eq!(log.last().unwrap()["data"]["reason"]["kind"], "interrupted");
    // Reading an idle session's view and log does not bring it into memory.
    let (code, view) = w.gw.get(&format!("/v1/sessions/{}", idle[0])).await;
    assert_eq!((code, &view["status"]), (200, &json!("idle")));
    assert_eq!(w.gw.metric("airlock_sessions").await, 1.0);
}
