//! The `anthropic:` provider against the mock's messages API, which plays Anthropic's event
//! sequence (`message_start`, `ping`, `content_block_*`, `message_delta`, `message_stop`):
//! streaming, thinking with its signature, tool calls, cache usage, every error class, and the
//! request body with its cache breakpoints.

use airlock_core::{ContentBlock, FinishReason, ModelRequest, Role, StreamChunk, Usage};
use airlock_providers::model::{Remote, Wire};
use airlock_tests::{MockModel, Reply};
use serde_json::{Value, json};

use super::{config, echo_call, echo_tool, failure, hello, message, provider, request, run, text};

const WIRE: Wire = Wire::Messages;

/// The tool calls of `chunks` as (block index, id, name, arguments), checking that every delta
/// of a call carries its id.
fn calls(chunks: &[StreamChunk]) -> Vec<(u32, String, String, String)> {
    let mut calls: Vec<(u32, String, String, String)> = Vec::new();
    for chunk in chunks {
        if let StreamChunk::ToolCallDelta { index, id, name, arguments_delta } = chunk {
            match calls.iter_mut().find(|call| call.0 == *index) {
                Some(call) => {
                    assert_eq!(&call.1, id, "every delta of call {index} carries its id");
                    call.3.push_str(arguments_delta);
                }
                None => {
                    let name = name.clone().expect("the name on the first delta");
                    calls.push((*index, id.clone(), name, arguments_delta.clone()));
                }
            }
        }
    }
    calls
}

#[tokio::test]
async fn text_streams_then_stop_and_usage_with_the_cache_counted_as_input() {
    let mock = MockModel::start().await;
    mock.push(
        Reply::text("Hello there, world", 3).usage(100, 3).cached_tokens(60).cache_written(30),
    );
    let (chunks, error) = run(&provider(WIRE, &mock), hello()).await;
    assert_eq!(error, None);
    let usage = Usage {
        input_tokens: 100,
        output_tokens: 3,
        cache_read_tokens: Some(60),
        cache_write_tokens: Some(30),
        reasoning_tokens: None,
    };
    assert_eq!(
        chunks,
        [
            StreamChunk::TextDelta { index: 0, text: "Hello ".into() },
            StreamChunk::TextDelta { index: 0, text: "there,".into() },
            StreamChunk::TextDelta { index: 0, text: " world".into() },
            StreamChunk::Finish { reason: FinishReason::Stop },
            StreamChunk::Usage { usage },
        ]
    );
    assert_eq!(mock.header("x-api-key"), [Some("test-key".to_owned())]);
    assert_eq!(mock.header("anthropic-version"), [Some("2023-06-01".to_owned())]);
    assert_eq!(mock.authorizations(), [None], "the key is not sent as a bearer token");
}

#[tokio::test]
async fn thinking_streams_as_reasoning_and_keeps_its_signature() {
    let mock = MockModel::start().await;
    mock.push(Reply::text("42", 1).reasoning("Let me think.", 2).signed("sig-abc"));
    let (chunks, error) = run(&provider(WIRE, &mock), hello()).await;
    assert_eq!(error, None);
    let reasoning = |text: &str, signature: Option<&str>| StreamChunk::ReasoningDelta {
        index: 0,
        text: text.into(),
        signature: signature.map(Into::into),
    };
    assert_eq!(
        chunks[..4],
        [
            reasoning("Let me ", None),
            reasoning("think.", None),
            reasoning("", Some("sig-abc")),
            StreamChunk::TextDelta { index: 1, text: "42".into() },
        ]
    );
}

#[tokio::test]
async fn tool_calls_keep_their_block_index_and_id_and_a_call_without_input_gets_an_empty_object() {
    let mock = MockModel::start().await;
    mock.push(
        Reply::text("Calling.", 1)
            .and_tool_call("toolu_a", "echo", r#"{"text":"hi"}"#, 3)
            .and_tool_call("toolu_b", "clock", "", 1),
    );
    let (chunks, error) = run(&provider(WIRE, &mock), hello()).await;
    assert_eq!(error, None);
    assert!(chunks.contains(&StreamChunk::Finish { reason: FinishReason::ToolCalls }));
    assert_eq!(chunks[0], StreamChunk::TextDelta { index: 0, text: "Calling.".into() });
    let call = |index, id: &str, name: &str, arguments: &str| {
        (index, id.to_owned(), name.to_owned(), arguments.to_owned())
    };
    assert_eq!(
        calls(&chunks),
        [call(1, "toolu_a", "echo", r#"{"text":"hi"}"#), call(2, "toolu_b", "clock", "{}")]
    );
}

#[tokio::test]
async fn max_tokens_stop_reason_becomes_max_tokens() {
    let mock = MockModel::start().await;
    mock.push(Reply::text("cut off mid", 2).finish_length());
    let (chunks, _) = run(&provider(WIRE, &mock), hello()).await;
    assert!(chunks.contains(&StreamChunk::Finish { reason: FinishReason::MaxTokens }));
}

#[tokio::test]
async fn overloaded_529_is_service_unavailable_and_retried() {
    let (_, error) = failure(WIRE, Reply::status(529)).await;
    assert_eq!((error.code.as_str(), error.status), ("SERVICE_UNAVAILABLE", Some(529)));
    assert!(error.message.contains("anthropic is overloaded"), "{}", error.message);
    assert!(error.is_transient());
}

#[tokio::test]
async fn overloaded_error_mid_stream_ends_it_after_what_arrived_retryable() {
    let (chunks, error) =
        failure(WIRE, Reply::text("one two six ten", 4).overloaded_after(4)).await;
    assert_eq!(chunks, [StreamChunk::TextDelta { index: 0, text: "one ".into() }]);
    assert_eq!(error.code, "SERVICE_UNAVAILABLE", "{}", error.message);
    assert!(error.message.contains("Overloaded"), "{}", error.message);
    assert!(error.is_transient());
}

#[tokio::test]
async fn rate_limit_429_reports_retry_after_in_ms() {
    let (_, error) = failure(WIRE, Reply::status(429).retry_after("3")).await;
    assert_eq!((error.code.as_str(), error.retry_after_ms), ("RATE_LIMIT", Some(3_000)));
}

#[tokio::test]
async fn unauthorized_401_is_auth_and_not_retried() {
    let (_, error) = failure(WIRE, Reply::status(401)).await;
    assert_eq!((error.code.as_str(), error.status), ("AUTH", Some(401)));
    assert!(!error.is_transient());
}

#[tokio::test]
async fn a_prompt_too_long_400_is_context_overflow() {
    let body = json!({"type": "error", "error": {"type": "invalid_request_error",
        "message": "prompt is too long: 210000 tokens > 200000 maximum"}});
    let (_, error) = failure(WIRE, Reply::status(400).error_body(&body.to_string())).await;
    assert_eq!(error.code, "CONTEXT_OVERFLOW");
    assert!(error.message.contains("210000 tokens > 200000"), "{}", error.message);
    let (_, other) = failure(WIRE, Reply::status(400)).await;
    assert_eq!(other.code, "BAD_REQUEST");
}

#[tokio::test]
async fn a_stream_cut_before_its_stop_reason_is_connection() {
    let (_, error) = failure(WIRE, Reply::text("one two", 2).disconnect_after(5)).await;
    assert_eq!(error.code, "CONNECTION", "{}", error.message);
}

#[tokio::test]
async fn a_malformed_event_is_malformed() {
    let (_, error) = failure(WIRE, Reply::text("fine, then broken", 3).malformed_after(3)).await;
    assert_eq!(error.code, "MALFORMED", "{}", error.message);
}

/// Two steps of a turn with a tool call, the second with thinking: user, assistant (thinking,
/// text, call), the call's result, and a steering message sent meanwhile.
fn second_step() -> ModelRequest {
    let thinking = ContentBlock::Reasoning { text: "hm".into(), signature: Some("sig-1".into()) };
    let unsigned = ContentBlock::Reasoning { text: "another model's".into(), signature: None };
    let (call, result) = echo_call("toolu_1");
    let image = ContentBlock::Image { media_type: "image/png".into(), data: "iVBOR".into() };
    let mut request = request(vec![
        message("u1", Role::User, vec![text("earlier")]),
        message("a1", Role::Assistant, vec![text("noted")]),
        message("u2", Role::User, vec![text("say hi"), image]),
        message("a2", Role::Assistant, vec![unsigned, thinking, text("Calling echo."), call]),
        message("s1", Role::User, vec![text("and be quick")]),
        message("t1", Role::Tool, vec![result]),
    ]);
    request.tools = vec![echo_tool()];
    request
}

fn marked(mut block: Value) -> Value {
    block["cache_control"] = json!({"type": "ephemeral"});
    block
}

#[tokio::test]
async fn the_body_joins_turns_sends_thinking_signed_and_marks_three_cache_breakpoints() {
    let mock = MockModel::start().await;
    let mut step = second_step();
    step.system = Some("You are terse.".into());
    step.max_tokens = Some(256);
    run(&provider(WIRE, &mock), step).await;
    let body = &mock.requests()[0];
    assert_eq!(
        (body["model"].as_str(), body["stream"].as_bool()),
        (Some("test-model"), Some(true))
    );
    assert_eq!(body["max_tokens"], 256);
    assert_eq!(body.get("thinking"), None, "off unless configured");
    assert_eq!(body["system"], json!([marked(json!({"type": "text", "text": "You are terse."}))]));
    assert_eq!(
        body["tools"],
        json!([{"name": "echo", "description": "Echoes text.",
            "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}}}]),
        "the system prompt's breakpoint covers the tools before it"
    );
    let expected = json!([
        {"role": "user", "content": [{"type": "text", "text": "earlier"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "noted"}]},
        {"role": "user", "content": [
            {"type": "text", "text": "say hi"},
            marked(json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}})),
        ]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hm", "signature": "sig-1"},
            {"type": "text", "text": "Calling echo."},
            {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"text": "hi"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "echo: hi"}]},
            marked(json!({"type": "text", "text": "and be quick"})),
        ]},
    ]);
    assert_eq!(body["messages"], expected);
}

#[tokio::test]
async fn without_a_system_prompt_the_last_tool_holds_the_breakpoint_and_thinking_is_budgeted() {
    let mock = MockModel::start().await;
    let mut config = config(WIRE, mock.base_url());
    config.thinking_tokens = Some(2048);
    run(&Remote::new(config).unwrap(), second_step()).await;
    let body = &mock.requests()[0];
    assert_eq!(body.get("system"), None);
    assert_eq!(body["tools"][0]["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 2048}));
    assert_eq!(body["max_tokens"], 8192 + 2048, "the answer's tokens come on top of thinking");
}

#[tokio::test]
async fn a_conversation_encoded_a_step_at_a_time_sends_what_encoding_it_whole_sends() {
    let mock = MockModel::start().await;
    let step = second_step();
    let kept = provider(WIRE, &mock);
    let mut first = step.clone();
    first.messages.truncate(3);
    run(&kept, first).await;
    run(&kept, step.clone()).await;
    run(&provider(WIRE, &mock), step).await;
    let requests = mock.requests();
    assert_eq!(requests[1], requests[2]);
    assert_eq!(
        requests[0]["messages"][2]["content"][1]["cache_control"],
        json!({"type": "ephemeral"})
    );
}
