//! A session whose turn waits only for a person or a client sleeps as an idle one does, and wakes
//! on the answer or on its timer as if it had stayed awake (docs/architecture.md, "Memory is a
//! cache of the log").

use std::sync::Arc;

use airlock_core::{CallAnswer, ContentBlock, Delivery, Input, Message};
use airlock_providers::tools::{ClientTool, ToolRegistry, offered_tools};
use serde_json::Value;

use crate::session::Session;

/// A demo session whose `echo` waits for approval and whose client runs `pick` (50 ms to answer).
async fn session_in(dir: &tempfile::TempDir) -> Session {
    let store = super::eviction::stored_s(dir.path()).await;
    let mut parts = super::demo_parts("s", Arc::new(store));
    let pick = ClientTool {
        name: "pick".into(),
        description: "the client picks".into(),
        parameters: None,
        timeout_ms: Some(50),
    };
    parts.tools = offered_tools(&ToolRegistry::builtin(), None, &[pick], &["echo".into()]).unwrap();
    Session::create(parts).unwrap()
}

fn followup(id: &str, text: &str) -> Input {
    Delivery::Followup
        .send(Message::user(id.into(), vec![ContentBlock::Text { text: text.into() }]))
}

/// Feeds `text` and runs the turn until a call waits for an answer; with `sleeps`, the session
/// then sleeps.
async fn until_waiting(session: &mut Session, id: &str, text: &str, sleeps: bool) {
    session.feed(followup(id, text)).await.unwrap();
    while session.waiting().lock().unwrap().is_empty() {
        let answers = session.next_answers().await;
        session.feed_all(answers, None).await.unwrap();
    }
    if sleeps {
        assert!(session.sleep().await, "{text}: a session waiting only for a person sleeps");
        assert!(!session.can_sleep(), "it sleeps already");
    }
}

/// The log's event types, with each message's content.
async fn shape(session: &Session) -> Vec<String> {
    let text = |json: &String| {
        let event: Value = serde_json::from_str(json).unwrap();
        format!("{} {}", event["type"], event["data"]["message"]["content"])
    };
    session.events().await.unwrap().iter().map(text).collect()
}

#[tokio::test]
async fn a_session_waiting_for_a_person_sleeps_and_wakes_on_the_answer_or_its_timer_as_if_awake() {
    let (awake_dir, asleep_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut awake, mut asleep) = (session_in(&awake_dir).await, session_in(&asleep_dir).await);
    for (session, sleeps) in [(&mut awake, false), (&mut asleep, true)] {
        until_waiting(session, "m1", r#"/tool echo {"text":"hi"}"#, sleeps).await;
        let call_id = session.waiting().lock().unwrap()[0].call_id.clone();
        let approve = CallAnswer::Approve { by: Some("alice".into()), arguments: None };
        session.feed(Input::Answer { call_id, answer: approve }).await.unwrap();
        session.run_until_idle().await.unwrap();
        // Nobody answers `pick`: its timer, kept while the core sleeps, wakes it.
        until_waiting(session, "m2", "/tool pick {}", sleeps).await;
        session.run_until_idle().await.unwrap();
    }
    let (woken, stayed) = (shape(&asleep).await, shape(&awake).await);
    assert_eq!(woken, stayed, "the same events, no `resume` header");
    let approval = woken.iter().filter(|line| line.starts_with("\"tool/approval\"")).count();
    assert_eq!(approval, 2, "requested and approved once: {woken:#?}");
    assert!(woken.iter().any(|line| line.contains("did not post")), "the timeout: {woken:#?}");
    assert_eq!(asleep.queue(), awake.queue());
}

/// Without the snapshot it fell asleep with (here its store has no row for it, so none reads
/// back), a waiting session wakes as after a restart: its turn waits again from the log (a
/// `resume` header at the next request) and the answer completes it.
#[tokio::test]
async fn a_waiting_session_whose_snapshot_is_gone_wakes_as_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let store =
        airlock_store::Store::open(&dir.path().join("log.db"), airlock_store::Durability::Normal)
            .unwrap();
    let mut parts = super::demo_parts("s", Arc::new(store));
    parts.tools = offered_tools(&ToolRegistry::builtin(), None, &[], &["echo".into()]).unwrap();
    let mut session = Session::create(parts).unwrap();
    until_waiting(&mut session, "m1", r#"/tool echo {"text":"hi"}"#, true).await;
    let call_id = session.waiting().lock().unwrap()[0].call_id.clone();
    let approve = CallAnswer::Approve { by: None, arguments: None };
    session.feed(Input::Answer { call_id, answer: approve }).await.unwrap();
    session.run_until_idle().await.unwrap();
    let events = session.events().await.unwrap();
    let reasons: Vec<Value> = (events.iter())
        .map(|json| serde_json::from_str::<Value>(json).unwrap())
        .filter(|event| event["type"] == "request/header")
        .map(|event| event["data"]["reason"].clone())
        .collect();
    assert_eq!(reasons, ["initial", "resume"]);
    assert!(events.last().unwrap().contains("\"completed\""), "{:?}", events.last());
}
