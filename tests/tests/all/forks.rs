//! Forks share their prefix (`docs/http-api.md`, "A person in the loop"): a fork's log reads as
//! its source's events through `atSeq`, then its own, whatever is done to the source afterwards,
//! and a fork costs the store its row and a few events, however long the prefix is.

use airlock_tests::gateway::shared_store;
use airlock_tests::world::{World, messages, world_with};
use airlock_tests::{Reply, postgres};
use serde_json::{Value, json};

/// The bytes the gateway's store takes on disk: its data file and write-ahead log, or its
/// database with `AIRLOCK_TEST_STORE=postgres`.
fn stored_bytes(w: &World) -> u64 {
    let data = w.dir.path().join("airlock.db");
    if let Some(database) = shared_store(&data) {
        let size = postgres::query(&database, "SELECT pg_database_size(current_database())");
        return size[0].parse().expect("a size in bytes");
    }
    ["airlock.db", "airlock.db-wal"]
        .iter()
        .filter_map(|name| std::fs::metadata(w.dir.path().join(name)).ok())
        .map(|meta| meta.len())
        .sum()
}

/// Forks `source` (at `at`, else its last event); answers the fork's id.
async fn fork(w: &World, source: &str, at: Option<u64>) -> String {
    let body = match at {
        Some(at) => json!({"atSeq": at}),
        None => json!({}),
    };
    let (code, made) = w.gw.post(&format!("/v1/sessions/{source}/fork"), body).await;
    assert_eq!(code, 201, "{made}");
    made["sessionId"].as_str().unwrap().to_owned()
}

/// A session's whole log, paged.
async fn whole_log(w: &World, s: &str) -> Vec<Value> {
    let mut log = Vec::new();
    loop {
        let after = log.last().map_or(String::new(), |e: &Value| format!("&after={}", e["seq"]));
        let path = format!("/v1/sessions/{s}/events?format=json&limit=5000{after}");
        let (code, page) = w.gw.get(&path).await;
        assert_eq!(code, 200, "{page}");
        log.extend(page["events"].as_array().unwrap().iter().cloned());
        if page["hasMore"] != true {
            return log;
        }
    }
}

#[tokio::test]
async fn two_hundred_forks_of_a_10000_event_log_grow_the_data_file_by_less_than_5_mb() {
    let w = world_with(&[("AIRLOCK_MAX_QUEUE", "20000")]).await;
    let source = w.gw.session().await;
    w.inject(&source, 10_000).await;
    let (_, status) = w.gw.get(&format!("/v1/sessions/{source}/status")).await;
    assert_eq!(status["lastSeq"], 9_999);

    let before = stored_bytes(&w);
    let mut forks = Vec::new();
    for i in 0..200 {
        forks.push(fork(&w, &source, Some(9_999 - i)).await);
    }
    let grown = stored_bytes(&w).saturating_sub(before);
    assert!(grown < 5 << 20, "200 forks wrote {grown} bytes");

    // Each reads as the source's prefix, then the events that seal it.
    let prefix = whole_log(&w, &source).await;
    let last = whole_log(&w, forks.last().unwrap()).await;
    assert_eq!(last[..9_801], prefix[..9_801], "the shared prefix reads as the source's");
    let sealed: Vec<&str> = last[9_801..].iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        sealed,
        ["agent/inbox/spliced", "session/end-seed"],
        "the pending input is cancelled"
    );
}

#[tokio::test]
async fn a_fork_lives_on_after_its_source_is_disposed_and_a_fork_of_a_fork_reads_the_same() {
    let w = world_with(&[]).await;
    let source = w.gw.session().await;
    for text in ["one", "two"] {
        w.mock.push(Reply::text(&format!("Answer {text}."), 2));
        let (code, _) =
            w.gw.post(&format!("/v1/sessions/{source}/runs"), json!({"content": text})).await;
        assert_eq!(code, 200);
    }
    let source_log = whole_log(&w, &source).await;
    let first_turn_end =
        source_log.iter().find(|e| e["type"] == "turn/end").unwrap()["seq"].as_u64().unwrap();
    let child = fork(&w, &source, None).await;
    // A fork of the fork at a seq inside the part it shares reads from the source itself.
    let grandchild = fork(&w, &child, Some(first_turn_end)).await;
    let disposed = w.gw.client.delete(w.gw.url(&format!("/v1/sessions/{source}"))).send().await;
    assert_eq!(disposed.unwrap().status(), 202);

    let child_log = whole_log(&w, &child).await;
    assert_eq!(child_log[..source_log.len()], source_log[..], "disposing the source broke nothing");
    let grandchild_log = whole_log(&w, &grandchild).await;
    let shared = first_turn_end as usize + 1;
    assert_eq!(grandchild_log[..shared], source_log[..shared]);
    assert_eq!(grandchild_log.last().unwrap()["type"], "session/end-seed");

    // Both run turns of their own, on the whole conversation they have.
    for (s, text) in [(&child, "three"), (&grandchild, "again")] {
        w.mock.push(Reply::text("Forked and going.", 2));
        let (code, run) =
            w.gw.post(&format!("/v1/sessions/{s}/runs"), json!({"content": text})).await;
        assert_eq!(
            (code, run["finalResponse"].as_str()),
            (200, Some("Forked and going.")),
            "{run}"
        );
    }
    let asked = w.mock.requests();
    let conversation = |request: &Value| request["messages"].as_array().unwrap().len();
    // The child's request holds both earlier exchanges, the grandchild's only the first.
    assert_eq!(conversation(&asked[asked.len() - 2]), conversation(&asked[asked.len() - 1]) + 2);
    let (code, _) = w.gw.post(&messages(&child), json!({"content": "and on"})).await;
    assert_eq!(code, 202);
}

#[tokio::test]
async fn a_fork_at_a_seq_written_with_a_zero_fraction_is_taken() {
    let w = world_with(&[]).await;
    let s = w.gw.session().await;
    w.inject(&s, 3).await;
    let (code, made) = w.gw.post(&format!("/v1/sessions/{s}/fork"), json!({"atSeq": 1.0})).await;
    assert_eq!(code, 201, "{made}");
    assert_eq!(made["forkedFrom"]["seq"], 1);
}
