//! The session driver over the wasm core: the drive loop, and recovery from a trapping instance.

use std::sync::Arc;

use airlock_core::{Config, ContentBlock, Input, Message, Role, Source, Status, Target};
use airlock_gateway::core_host::CoreHost;
use airlock_gateway::model;
use airlock_gateway::owned::summarize;
use airlock_gateway::session::{MemoryLog, Session, SessionError, SessionParts};
use airlock_gateway::tools::ToolRegistry;

fn session() -> Session {
    let host = Arc::new(CoreHost::new(None).unwrap());
    let model = model::from_name("demo").unwrap();
    let config = Config::new("s1", model.provider(), model.model());
    Session::create(SessionParts {
        host,
        config,
        model,
        tools: ToolRegistry::builtin(),
        log: Arc::new(MemoryLog::default()),
    })
    .unwrap()
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
