//! A turn whose model request fails with a retryable error is retried in the same step, and the
//! retry is logged. (The providers' own tests turn each HTTP failure into its error code.)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use airlock_core::{
    Config, ContentBlock, FinishReason, Input, Message, ModelError, ModelRequest, Role, Source,
    StreamChunk, Target, TurnEndReason,
};
use airlock_providers::model::{ChunkStream, ModelProvider};
use airlock_providers::tools::ToolRegistry;
use serde_json::Value;

use super::MemoryLog;
use crate::owned::summarize;
use crate::session::{Outbox, Session, SessionParts};

/// A model whose first request fails as an HTTP 500 would, and whose others answer `text`.
struct FailsOnce {
    requests: AtomicUsize,
    text: &'static str,
}

impl ModelProvider for FailsOnce {
    fn provider(&self) -> &str {
        "test"
    }

    fn model(&self) -> &str {
        "fails-once"
    }

    fn stream(&self, _request: ModelRequest) -> ChunkStream {
        let items = match self.requests.fetch_add(1, Ordering::SeqCst) {
            0 => vec![Err(ModelError {
                code: "SERVER".into(),
                message: "upstream answered 500".into(),
                status: Some(500),
                retry_after_ms: None,
            })],
            _ => vec![
                Ok(StreamChunk::TextDelta { index: 0, text: self.text.into() }),
                Ok(StreamChunk::Finish { reason: FinishReason::Stop }),
            ],
        };
        Box::pin(futures::stream::iter(items))
    }
}

#[tokio::test]
async fn a_session_retries_a_server_error_then_completes_the_turn() {
    let model = Arc::new(FailsOnce { requests: AtomicUsize::new(0), text: "Recovered." });
    let host = super::host();
    let config = Config::new("s1", model.provider(), model.model());
    let log = Arc::new(MemoryLog::default());
    let tools = ToolRegistry::builtin();
    let (outbox, accounting) = (Outbox::new(), Default::default());
    let parts = SessionParts {
        host,
        config,
        models: vec![model.clone()],
        tools,
        log,
        outbox,
        accounting,
        budget: None,
        prices: Default::default(),
        workspace: None,
        tap: None,
    };
    let mut session = Session::create(parts).unwrap();

    let text = ContentBlock::Text { text: "hello".into() };
    let task = Message {
        id: "m1".into(),
        role: Role::User,
        content: vec![text],
        source: Source::of("user"),
    };
    session
        .feed(Input::Send { message: task, target: Target::NextTurn, wakeup: true })
        .await
        .unwrap();
    session.run_until_idle().await.unwrap();

    let log = session.events().await.unwrap();
    let events: Vec<Value> = log.iter().map(|e| serde_json::from_str(e).unwrap()).collect();
    let retries: Vec<&Value> = events.iter().filter(|e| e["type"] == "llm/retry").collect();
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0]["data"]["attempt"], 1);
    assert_eq!(retries[0]["data"]["error"]["code"], "SERVER");
    assert_eq!(retries[0]["data"]["error"]["status"], 500);
    let summary = summarize(&log);
    assert_eq!(summary.final_response, "Recovered.");
    assert_eq!(summary.finish, Some(TurnEndReason::Completed));
    assert_eq!(model.requests.load(Ordering::SeqCst), 2, "one failed request, one retry");
}
