//! The `openai:`/`deepseek:` provider against the mock's chat completions: streaming, tool-call
//! deltas, usage, every error class, and the request body.

use std::time::{Duration, Instant};

use airlock_core::{ContentBlock, FinishReason, Role, StreamChunk, Usage};
use airlock_providers::model::{Remote, Wire};
use airlock_tests::{MockModel, Reply};
use serde_json::json;

use super::{
    STALL, config, echo_call, echo_tool, failure, hello, message, provider, request, run, text,
};

const WIRE: Wire = Wire::Chat;

fn texts(chunks: &[StreamChunk]) -> Vec<&str> {
    chunks
        .iter()
        .filter_map(|c| match c {
            StreamChunk::TextDelta { index: 0, text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn text_streams_in_several_chunks_then_usage_and_stop() {
    let mock = MockModel::start().await;
    mock.push(Reply::text("Hello there, world", 3).usage(12, 3).cached_tokens(4));
    let (chunks, error) = run(&provider(WIRE, &mock), hello()).await;
    assert_eq!(error, None);
    assert_eq!(texts(&chunks), ["Hello ", "there,", " world"]);
    let usage = Usage {
        input_tokens: 12,
        output_tokens: 3,
        cache_read_tokens: Some(4),
        cache_write_tokens: None,
        reasoning_tokens: None,
    };
    assert_eq!(
        chunks[3..],
        [StreamChunk::Finish { reason: FinishReason::Stop }, StreamChunk::Usage { usage }]
    );
    assert_eq!(mock.authorizations(), [Some("Bearer test-key".to_owned())]);
}

#[tokio::test]
async fn tool_call_deltas_repeat_the_id_of_their_call() {
    let mock = MockModel::start().await;
    mock.push(Reply::tool_call("call_a", "echo", r#"{"text":"hi"}"#, 3).and_tool_call(
        "call_b",
        "echo",
        r#"{"text":"yo"}"#,
        2,
    ));
    let (chunks, error) = run(&provider(WIRE, &mock), hello()).await;
    assert_eq!(error, None);
    let mut calls: Vec<(String, String, String)> = Vec::new();
    for chunk in &chunks {
        if let StreamChunk::ToolCallDelta { index, id, name, arguments_delta } = chunk {
            let i = *index as usize;
            if calls.len() == i {
                calls.push((
                    id.clone(),
                    name.clone().expect("name on the first delta"),
                    String::new(),
                ));
            }
            assert_eq!(&calls[i].0, id, "every delta of call {i} carries its id");
            calls[i].2.push_str(arguments_delta);
        }
    }
    let expected = [("call_a", r#"{"text":"hi"}"#), ("call_b", r#"{"text":"yo"}"#)];
    let got: Vec<_> = calls.iter().map(|(id, _, args)| (id.as_str(), args.as_str())).collect();
    assert_eq!(got, expected);
    assert!(chunks.contains(&StreamChunk::Finish { reason: FinishReason::ToolCalls }));
}

#[tokio::test]
async fn finish_reason_length_becomes_max_tokens() {
    let mock = MockModel::start().await;
    mock.push(Reply::text("cut off mid", 2).finish_length());
    let (chunks, error) = run(&provider(WIRE, &mock), hello()).await;
    assert_eq!(error, None);
    assert!(chunks.contains(&StreamChunk::Finish { reason: FinishReason::MaxTokens }));
}

#[tokio::test]
async fn deepseek_reasoning_content_becomes_reasoning_deltas() {
    let mock = MockModel::start().await;
    mock.push(Reply::text("42", 1).reasoning("Let me think.", 2));
    let (chunks, _) = run(&provider(WIRE, &mock), hello()).await;
    assert_eq!(
        chunks[..3],
        [
            StreamChunk::ReasoningDelta { index: 0, text: "Let me ".into(), signature: None },
            StreamChunk::ReasoningDelta { index: 0, text: "think.".into(), signature: None },
            StreamChunk::TextDelta { index: 0, text: "42".into() },
        ]
    );
}

#[tokio::test]
async fn rate_limit_429_reports_retry_after_in_ms() {
    let (_, error) = failure(WIRE, Reply::status(429).retry_after("2")).await;
    assert_eq!(error.code, "RATE_LIMIT");
    assert_eq!((error.status, error.retry_after_ms), (Some(429), Some(2_000)));
    assert!(error.message.contains("mock error 429"), "{}", error.message);
}

#[tokio::test]
async fn server_error_500_is_server() {
    let (_, error) = failure(WIRE, Reply::status(500)).await;
    assert_eq!((error.code.as_str(), error.status), ("SERVER", Some(500)));
    assert_eq!(error.retry_after_ms, None);
}

#[tokio::test]
async fn unavailable_503_is_service_unavailable() {
    let (_, error) = failure(WIRE, Reply::status(503)).await;
    assert_eq!(error.code, "SERVICE_UNAVAILABLE");
}

#[tokio::test]
async fn unauthorized_401_is_auth_with_the_upstream_message() {
    let body =
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#;
    let (_, error) = failure(WIRE, Reply::status(401).error_body(body)).await;
    assert_eq!((error.code.as_str(), error.status), ("AUTH", Some(401)));
    assert!(error.message.contains("Incorrect API key provided"), "{}", error.message);
}

#[tokio::test]
async fn context_length_400_is_context_overflow() {
    let body = r#"{"error":{"message":"This model's maximum context length is 65536 tokens."}}"#;
    let (_, error) = failure(WIRE, Reply::status(400).error_body(body)).await;
    assert_eq!(error.code, "CONTEXT_OVERFLOW");
}

#[tokio::test]
async fn disconnect_mid_stream_is_connection_after_the_chunks_that_arrived() {
    let (chunks, error) =
        failure(WIRE, Reply::text("one two six ten", 4).disconnect_after(2)).await;
    assert_eq!(texts(&chunks), ["one ", "two "]);
    assert_eq!(error.code, "CONNECTION", "{}", error.message);
}

#[tokio::test]
async fn refused_connection_is_connection() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let (_, error) = run(&Remote::new(config(WIRE, base_url)).unwrap(), hello()).await;
    let error = error.unwrap();
    assert_eq!(error.code, "CONNECTION", "{}", error.message);
    assert!(error.message.contains("could not connect to openai"), "{}", error.message);
}

#[tokio::test]
async fn malformed_chunk_is_malformed() {
    let (chunks, error) =
        failure(WIRE, Reply::text("fine, then broken", 3).malformed_after(1)).await;
    assert_eq!(texts(&chunks), ["fine, "]);
    assert_eq!(error.code, "MALFORMED");
    assert!(error.message.contains("oops"), "quotes the bad data: {}", error.message);
}

#[tokio::test]
async fn a_stalled_stream_times_out_after_the_stall_timeout() {
    let mock = MockModel::start().await;
    mock.push(Reply::text("slow and then silent", 4).stall_after(2));
    let started = Instant::now();
    let (chunks, error) = run(&provider(WIRE, &mock), hello()).await;
    let elapsed = started.elapsed();
    let error = error.unwrap();
    assert_eq!(texts(&chunks).len(), 2);
    assert_eq!(error.code, "TIMEOUT");
    assert!(error.message.contains("stopped sending for 0.3 s"), "{}", error.message);
    assert!(elapsed >= STALL && elapsed < STALL * 10, "timed out after {elapsed:?}");
}

#[tokio::test]
async fn no_first_byte_within_the_first_byte_timeout_is_timeout() {
    let mock = MockModel::start().await;
    mock.push(Reply::text("never sent", 2).stall_after(0));
    let mut config = config(WIRE, mock.base_url());
    config.timeouts.first_byte = Duration::from_millis(300);
    let started = Instant::now();
    let (chunks, error) = run(&Remote::new(config).unwrap(), hello()).await;
    let error = error.unwrap();
    assert!(chunks.is_empty());
    assert_eq!(error.code, "TIMEOUT");
    assert!(error.message.contains("no response within 0.3 s"), "{}", error.message);
    assert!(started.elapsed() < Duration::from_millis(1500), "{:?}", started.elapsed());
}

#[tokio::test]
async fn request_body_carries_stream_system_tools_and_tool_results() {
    let mock = MockModel::start().await;
    let (call, result) = echo_call("call_1");
    let reasoning = ContentBlock::Reasoning { text: "private thoughts".into(), signature: None };
    let mut req = request(vec![
        message("u", Role::User, vec![text("say hi")]),
        message("a", Role::Assistant, vec![reasoning, text("Calling echo."), call]),
        message("t", Role::Tool, vec![result]),
    ]);
    req.system = Some("You are terse.".into());
    req.max_tokens = Some(256);
    req.tools = vec![echo_tool()];
    run(&provider(WIRE, &mock), req).await;

    let body = &mock.requests()[0];
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_tokens"], 256);
    let expected_messages = json!([
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "say hi"},
        {"role": "assistant", "content": "Calling echo.", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "echo", "arguments": "{\"text\":\"hi\"}"}}
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "echo: hi"},
    ]);
    assert_eq!(body["messages"], expected_messages);
    let expected_tools = json!([{"type": "function", "function": {
        "name": "echo",
        "description": "Echoes text.",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
    }}]);
    assert_eq!(body["tools"], expected_tools);
}

#[tokio::test]
async fn user_images_are_sent_as_image_url_parts() {
    let mock = MockModel::start().await;
    let image = ContentBlock::Image { media_type: "image/png".into(), data: "iVBOR".into() };
    run(
        &provider(WIRE, &mock),
        request(vec![message("u", Role::User, vec![text("what is it?"), image])]),
    )
    .await;
    let expected = json!([{"role": "user", "content": [
        {"type": "text", "text": "what is it?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
    ]}]);
    assert_eq!(mock.requests()[0]["messages"], expected);
}
