//! The providers over HTTP against a real HTTP mock of each wire (`airlock_tests::MockModel`):
//! chat completions (`openai:`, `deepseek:`) and Anthropic's messages (`anthropic:`). A session's
//! retry of a failed turn is `airlock-sessions`' test; a whole `anthropic:` turn through the
//! gateway is in `tests/tests/all/anthropic.rs`.

mod chat;
mod messages;

use std::sync::Arc;
use std::time::Duration;

use airlock_core::{
    ContentBlock, Message, ModelError, ModelRequest, Role, Source, StreamChunk, ToolSpec,
};
use airlock_providers::model::{ModelProvider, Remote, RemoteConfig, Timeouts, Wire};
use airlock_tests::{MockModel, Reply};
use futures::StreamExt;

/// The stall timeout of the tests' providers.
const STALL: Duration = Duration::from_millis(300);

/// A provider of `wire` at `base_url`, model `test-model`, key `test-key`, short timeouts.
fn config(wire: Wire, base_url: String) -> RemoteConfig {
    RemoteConfig {
        base_url,
        api_key: Some("test-key".into()),
        wire,
        model: "test-model".into(),
        provider_name: if wire == Wire::Chat { "openai" } else { "anthropic" }.into(),
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            first_byte: Duration::from_secs(2),
            stall: STALL,
        },
        thinking_tokens: None,
    }
}

fn provider(wire: Wire, mock: &MockModel) -> Remote {
    Remote::new(config(wire, mock.base_url())).unwrap()
}

fn message(id: &str, role: Role, content: Vec<ContentBlock>) -> Arc<Message> {
    Arc::new(Message { id: id.into(), role, content, source: Source::of("user") })
}

fn text(text: &str) -> ContentBlock {
    ContentBlock::Text { text: text.into() }
}

fn request(messages: Vec<Arc<Message>>) -> ModelRequest {
    ModelRequest {
        request_id: 1,
        route: 0,
        model: "test-model".into(),
        system: None,
        messages,
        tools: Vec::new(),
        max_tokens: None,
    }
}

/// The `echo` tool: `{text}` in, `echo: <text>` out.
fn echo_tool() -> ToolSpec {
    ToolSpec {
        name: "echo".into(),
        description: "Echoes text.".into(),
        parameters: r#"{"type":"object","properties":{"text":{"type":"string"}}}"#.into(),
        parallel_safe: true,
        ..ToolSpec::default()
    }
}

/// A call `id` of `echo` with `{"text":"hi"}`, and its result `echo: hi`.
fn echo_call(id: &str) -> (ContentBlock, ContentBlock) {
    let call = ContentBlock::ToolCall {
        id: id.into(),
        name: "echo".into(),
        arguments: r#"{"text":"hi"}"#.into(),
    };
    let content = vec![text("echo: hi")];
    (call, ContentBlock::ToolResult { tool_call_id: id.into(), content, is_error: false })
}

fn hello() -> ModelRequest {
    request(vec![message("m1", Role::User, vec![text("hello")])])
}

/// Every chunk of the stream, and the error that ended it (nothing may follow an error).
async fn run(provider: &Remote, request: ModelRequest) -> (Vec<StreamChunk>, Option<ModelError>) {
    let mut stream = provider.stream(request);
    let mut chunks = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(chunk) => chunks.push(chunk),
            Err(error) => {
                assert!(stream.next().await.is_none(), "the stream ends at its first error");
                return (chunks, Some(error));
            }
        }
    }
    (chunks, None)
}

/// What arrived of `hello` answered with `reply` in `wire`, and the error that ended it.
async fn failure(wire: Wire, reply: Reply) -> (Vec<StreamChunk>, ModelError) {
    let mock = MockModel::start().await;
    mock.push(reply);
    let (chunks, error) = run(&provider(wire, &mock), hello()).await;
    (chunks, error.expect("the request fails"))
}
