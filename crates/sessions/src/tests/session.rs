//! The session driver over the wasm core: the drive loop, and recovery from a trapping instance.

use std::sync::Arc;

use super::MemoryLog;
use crate::owned::summarize;
use crate::session::{Session, SessionError};
use airlock_core::{ContentBlock, Input, Message, Role, Source, Status, Target};
use airlock_providers::tools::ToolRegistry;

use super::demo_rules;

fn session() -> Session {
    session_on(Arc::new(MemoryLog::default()))
}

/// A fresh session `s1` of the demo model, logging to `log`.
fn session_on(log: Arc<MemoryLog>) -> Session {
    super::demo_session("s1", log)
}

fn followup(id: &str, text: &str) -> Input {
    let message = Message {
        id: id.into(),
        role: Role::User,
        content: vec![ContentBlock::Text { text: text.into() }],
        source: Source::of("user"),
    };
    Input::Send { message, target: Target::NextTurn, wakeup: true }
}

async fn types(session: &Session) -> Vec<String> {
    session
        .events()
        .await
        .unwrap()
        .iter()
        .map(|e| {
            serde_json::from_str::<serde_json::Value>(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn demo_tool_call_runs_echo_and_the_answer_summarizes_it() {
    let mut s = session();
    s.feed(followup("m1", r#"/tool echo {"text":"hi"}"#)).await.unwrap();
    s.run_until_idle().await.unwrap();
    let summary = summarize(&s.events().await.unwrap());
    assert_eq!(summary.final_response, "The echo tool returned: echo: hi");
    let types = types(&s).await;
    let call = types.iter().position(|t| t == "tool/call").unwrap();
    assert_eq!(types[call + 1], "tool/result");
    assert_eq!(types.last().unwrap(), "turn/end");
}

#[tokio::test]
async fn a_trapping_core_is_reported_and_rebuilt_from_the_log() {
    let mut s = session();
    s.feed(followup("m1", "hello")).await.unwrap();
    s.run_until_idle().await.unwrap();
    let before = s.events().await.unwrap().len();

    s.core_mut().set_fuel(10);
    let err = s.feed(followup("m2", "again")).await.unwrap_err();
    assert!(matches!(err, SessionError::Trapped(_)), "{err}");
    assert!(err.to_string().contains("rebuilt from its log"), "{err}");
    assert_eq!(s.events().await.unwrap().len(), before, "the trapped input wrote nothing");
    assert_eq!(s.status(), Status::Idle);

    s.feed(followup("m2", "again")).await.unwrap();
    s.run_until_idle().await.unwrap();
    assert!(
        summarize(&s.events().await.unwrap()).final_response.starts_with("You said: \"again\"")
    );
}

/// A follower that reads only after a whole turn was committed still reports each status change
/// between the events it came between, not after them all.
#[tokio::test]
async fn a_late_follower_reports_status_in_its_place_among_the_events() {
    use crate::follow::{Follower, Update};
    use crate::registry::{Registry, SessionSpec};
    use airlock_store::{Durability, Store};

    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("log.db"), Durability::Normal).unwrap();
    let host = super::host();
    let registry = Registry::new(store.clone(), host, ToolRegistry::builtin(), demo_rules());
    registry.create("s".into(), SessionSpec::default(), None).await.unwrap();
    let handle = registry.get("s").unwrap();
    let mut follower = Follower::new(store, "s", Some(handle.clone()), None);
    handle.feed(followup("m1", "hello"), None).await.unwrap();
    handle.idle().await.unwrap(); // the whole turn is committed before the follower reads

    let mut seen = Vec::new();
    loop {
        match follower.next().await.unwrap().unwrap() {
            Update::Event(committed) => {
                let event: serde_json::Value = serde_json::from_str(&committed.json).unwrap();
                seen.push(event["type"].as_str().unwrap().to_owned());
            }
            Update::Status(status) => {
                seen.push(format!("{status:?}"));
                if status == Status::Idle {
                    break;
                }
            }
            Update::Queue(_) | Update::Subagent(..) => {}
        }
    }
    assert_eq!(seen[..3], ["agent/inbox/spliced", "Running", "turn/start"], "{seen:?}");
    assert_eq!(seen[seen.len() - 2..], ["turn/end", "Idle"], "{seen:?}");
}

#[tokio::test]
async fn sends_fed_as_a_group_share_one_commit_and_each_answers_what_it_did() {
    let log = Arc::new(MemoryLog::default());
    let mut s = session_on(log.clone());
    let inject = |id: &str| {
        let Input::Send { message, .. } = followup(id, "later") else { unreachable!() };
        Input::Send { message, target: Target::NextStep, wakeup: false }
    };
    let group =
        vec![(inject("a"), None), (inject("b"), None), (inject("a"), None), (inject("c"), None)];
    let fed = s.feed_group(group, crate::session::Work::Admitted).await.unwrap();
    let firsts: Vec<_> = fed.iter().map(|f| f.first_seq).collect();
    assert_eq!(firsts, [Some(0), Some(1), None, Some(2)], "each its own splice, in order");
    let refusals: Vec<_> =
        fed.iter().map(|f| f.refusal.as_ref().map(|r| r.code.as_str())).collect();
    assert_eq!(refusals, [None, None, Some("duplicate-message-id"), None]);
    assert_eq!(log.appends(), 1, "one commit for all");
    assert_eq!(types(&s).await, ["agent/inbox/spliced"; 3]);
    let queue: Vec<_> = s.queue().into_iter().map(|item| item.message_id).collect();
    assert_eq!(queue, ["a", "b", "c"]);
}
