//! Sessions leave memory at rest and come back from their snapshot and log, going on as if they
//! had stayed (docs/architecture.md, "Memory is a cache of the log").

use std::sync::Arc;
use std::time::Duration;

use crate::registry::{Eviction, Registry, Rules, SessionSpec};
use airlock_core::{ContentBlock, Delivery, Input, Message};
use airlock_providers::tools::ToolRegistry;
use airlock_store::{Durability, SessionRow, Snapshot, Store};
use serde_json::Value;

use super::demo_rules;

fn followup(id: &str, text: &str) -> Input {
    Delivery::Followup
        .send(Message::user(id.into(), vec![ContentBlock::Text { text: text.into() }]))
}

/// A registry over a fresh store that drops whatever is at rest when asked.
fn registry(dir: &tempfile::TempDir) -> (Arc<Registry>, Store) {
    let store = Store::open(&dir.path().join("log.db"), Durability::Normal).unwrap();
    let host = super::host();
    let eviction = Eviction { idle: Duration::ZERO, max_live: 100 };
    let rules = Rules { eviction, ..demo_rules() };
    let registry = Registry::new(store.clone(), host, ToolRegistry::builtin(), rules);
    (registry, store)
}

/// The log's event types, with the text of each assistant message.
async fn shape(store: &Store, session: &str) -> Vec<String> {
    let events = store.events(session, None, 100_000).await.unwrap();
    events
        .iter()
        .map(|json| {
            let event: Value = serde_json::from_str(json).unwrap();
            match event["type"].as_str().unwrap() {
                "assistant/message" => format!("assistant {}", event["data"]["message"]["content"]),
                kind => kind.to_owned(),
            }
        })
        .collect()
}

/// `turns` demo turns; with `evict`, the session is dropped from memory after each.
async fn turns(registry: &Registry, turns: usize, evict: bool) {
    for turn in 0..turns {
        let handle = registry.resume("s").await.unwrap();
        handle
            .feed(followup(&format!("m{turn}"), &format!("question {turn}")), None)
            .await
            .unwrap();
        handle.idle().await.unwrap();
        drop(handle);
        if evict {
            assert_eq!(registry.evict(), 1, "turn {turn}: the session was at rest");
            assert!(registry.get("s").is_err());
        }
    }
}

#[tokio::test]
async fn a_session_woken_from_its_snapshot_goes_on_as_if_it_had_stayed() {
    let (stayed_dir, woken_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (stayed, stayed_store) = registry(&stayed_dir);
    let (woken, woken_store) = registry(&woken_dir);
    for registry in [&stayed, &woken] {
        registry.create("s".into(), SessionSpec::default(), None).await.unwrap();
    }
    turns(&stayed, 40, false).await;
    turns(&woken, 40, true).await;

    let snapshot = woken_store.snapshot("s").await.unwrap().expect("a long log keeps a snapshot");
    assert!(snapshot.next_seq >= 256, "taken once enough events were logged");
    let (woken_log, stayed_log) = (shape(&woken_store, "s").await, shape(&stayed_store, "s").await);
    assert_eq!(woken_log, stayed_log, "the same events as a session that stayed in memory");
    let headers = woken_log.iter().filter(|t| *t == "request/header").count();
    assert_eq!(headers, 1, "no wake logged a `resume` header");
}

#[tokio::test]
async fn a_snapshot_the_core_cannot_read_falls_back_to_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let (registry, store) = registry(&dir);
    registry.create("s".into(), SessionSpec::default(), None).await.unwrap();
    turns(&registry, 2, true).await;
    let before = shape(&store, "s").await;
    let host = super::host();
    for (core, state) in [("another core", "{}"), (host.hash(), "not the core's state")] {
        let snapshot = Snapshot {
            session_id: "s".into(),
            next_seq: before.len() as u64,
            core: core.into(),
            state: state.into(),
            head: None,
            parent: None,
            goal: None,
        };
        store.save_snapshot(snapshot).await.unwrap();
        turns(&registry, 1, true).await;
    }
    let after = shape(&store, "s").await;
    assert_eq!(after[..before.len()], before[..]);
    assert_eq!(after.iter().filter(|t| *t == "turn/end").count(), 4, "both wakes replayed the log");
}

/// A store in `dir` holding the row of session `s` (a snapshot is kept for a stored session).
pub(super) async fn stored_s(dir: &std::path::Path) -> Store {
    let store = Store::open(&dir.join("log.db"), Durability::Normal).unwrap();
    let row = SessionRow {
        session_id: "s".into(),
        created_at: 0,
        updated_at: 0,
        spec: serde_json::json!({}),
        disposed: false,
        parent_session_id: None,
        tenant: None,
        goal: None,
        needs_recovery: false,
        shares: None,
    };
    store.insert_session(row).await.unwrap();
    store
}

/// A session brought back into memory reads the head its last snapshot kept and the events
/// after it, not the core's state: it is asleep, shows what it would have shown awake, and its
/// next input wakes its core, which goes on as if it had stayed.
#[tokio::test]
async fn a_stored_session_comes_back_asleep_from_its_snapshots_head() {
    let (awake_dir, stored_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut awake = session_over(&awake_dir).await;
    let store = stored_s(stored_dir.path()).await;
    let mut stored = session_on(store.clone());
    let turn = async |session: &mut crate::session::Session, turn: usize| {
        session.feed(followup(&format!("m{turn}"), &format!("question {turn}"))).await.unwrap();
        session.run_until_idle().await.unwrap();
    };
    for session in [&mut awake, &mut stored] {
        turn(session, 0).await;
    }
    assert!(stored.sleep().await, "a snapshot and its head are kept");
    let at_snapshot = stored.next_seq();
    for session in [&mut awake, &mut stored] {
        turn(session, 1).await; // logged after the snapshot: the head is folded with it
        let note = vec![ContentBlock::Text { text: "meanwhile".into() }];
        session.feed(Delivery::Inject.send(Message::user("note".into(), note))).await.unwrap();
    }
    assert!(stored.next_seq() > at_snapshot);
    drop(stored);

    let parts = super::demo_parts("s", Arc::new(store.clone()));
    let mut back =
        crate::session::Session::restore(parts, crate::session::Work::New).await.unwrap();
    assert!(!back.can_sleep(), "it came back asleep");
    assert_eq!((back.next_seq(), back.queue()), (awake.next_seq(), awake.queue()));
    for session in [&mut awake, &mut back] {
        turn(session, 2).await;
    }
    assert!(back.can_sleep(), "its input woke it");
    let types = |events: Vec<String>| -> Vec<Value> {
        events
            .iter()
            .map(|json| serde_json::from_str::<Value>(json).unwrap()["type"].take())
            .collect()
    };
    let (back_log, awake_log) = (back.events().await.unwrap(), awake.events().await.unwrap());
    assert_eq!(types(back_log), types(awake_log), "the same events as a session that stayed awake");
}

/// A session over its own store.
async fn session_over(dir: &tempfile::TempDir) -> crate::session::Session {
    session_on(Store::open(&dir.path().join("log.db"), Durability::Normal).unwrap())
}

/// A fresh session `s` of the demo model, logging to `store`.
fn session_on(store: Store) -> crate::session::Session {
    super::demo_session("s", Arc::new(store))
}

#[tokio::test]
async fn a_sleeping_session_wakes_at_its_next_input_as_if_it_had_stayed_awake() {
    let (awake_dir, asleep_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut awake, mut asleep) = (session_over(&awake_dir).await, session_over(&asleep_dir).await);
    for turn in 0..3 {
        for (session, sleeps) in [(&mut awake, false), (&mut asleep, true)] {
            let text = format!("question {turn}");
            session.feed(followup(&format!("m{turn}"), &text)).await.unwrap();
            session.run_until_idle().await.unwrap();
            if sleeps {
                assert!(session.sleep().await, "turn {turn}: an idle session sleeps");
                assert!(!session.can_sleep(), "it sleeps already");
            }
        }
    }
    let shape = |events: Vec<String>| -> Vec<String> {
        let text = |json: &String| {
            let event: Value = serde_json::from_str(json).unwrap();
            format!("{} {}", event["type"], event["data"]["message"]["content"])
        };
        events.iter().map(text).collect()
    };
    let (woken, stayed) = (asleep.events().await.unwrap(), awake.events().await.unwrap());
    assert_eq!(shape(woken), shape(stayed), "the same events, no `resume` header");
    assert_eq!(asleep.queue(), awake.queue());
}

/// A snapshot costs its size to write: one of a long inbox is not written again for every
/// `SNAPSHOT_EVERY` small events, only once the events after it weigh as much.
#[tokio::test]
async fn a_snapshot_waits_until_the_log_has_grown_by_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let store = stored_s(dir.path()).await;
    let mut session = session_on(store.clone());
    let mut sent = 0;
    let mut inject = async |count: usize, text: &str| {
        for _ in 0..count {
            sent += 1;
            let message =
                Message::user(format!("m{sent}"), vec![ContentBlock::Text { text: text.into() }]);
            session.feed(Delivery::Inject.send(message)).await.unwrap();
            session.snapshot_if_due().await;
        }
    };
    let snapshot_seq = async || store.snapshot("s").await.unwrap().map(|s| s.next_seq);
    let big = "x".repeat(4096);

    inject(300, &big).await;
    assert_eq!(snapshot_seq().await, Some(256), "the first after SNAPSHOT_EVERY events");
    inject(300, "small").await;
    assert_eq!(snapshot_seq().await, Some(256), "300 small events weigh less than a 1 MB inbox");
    inject(300, &big).await;
    let next = snapshot_seq().await.unwrap();
    assert!(next > 600, "once the events after it weigh as much, the next is taken: {next}");
}
