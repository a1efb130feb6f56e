//! `anthropic:` sessions end to end: the real binary against the mock playing Anthropic's
//! messages wire. A turn with thinking and a tool call, its usage with the cache counted, an
//! image, and a too-long prompt that compacts and goes on: what the chat-completions sessions
//! pass, in the other wire.

use airlock_tests::Reply;
use airlock_tests::world::{World, world_with};
use serde_json::{Value, json};

/// A world whose sessions think (1024 tokens) and answer through `anthropic:mock`, and a session.
async fn anthropic() -> (World, String) {
    let w = world_with(&[("AIRLOCK_THINKING_TOKENS", "1024")]).await;
    let (code, session) = w.gw.post("/v1/sessions", json!({"model": "anthropic:mock"})).await;
    assert_eq!(code, 201, "{session}");
    let s = session["sessionId"].as_str().unwrap().to_owned();
    (w, s)
}

/// Runs `content` in session `s`: its result.
async fn run(w: &World, s: &str, content: Value) -> Value {
    let (code, result) =
        w.gw.post(&format!("/v1/sessions/{s}/runs"), json!({"content": content})).await;
    assert_eq!(code, 200, "{result}");
    result
}

#[tokio::test]
async fn an_anthropic_turn_thinks_signed_calls_a_tool_and_counts_the_cache() {
    let (w, s) = anthropic().await;
    w.mock
        .push(
            Reply::tool_call("toolu_1", "echo", r#"{"text":"hi"}"#, 2)
                .reasoning("I should echo.", 1)
                .signed("sig-1")
                .usage(50, 5)
                .cache_written(40),
        )
        .push(Reply::text("Echoed.", 1).usage(60, 2).cached_tokens(40));
    let result = run(&w, &s, json!("say hi")).await;
    assert_eq!(result["finalResponse"], "Echoed.");
    assert_eq!(
        result["usage"],
        json!({"inputTokens": 110, "outputTokens": 7, "cacheReadTokens": 40, "cacheWriteTokens": 40})
    );

    let log = w.gw.log(&s).await;
    let first = log.iter().find(|e| e["type"] == "assistant/message").unwrap();
    let thought = json!({"type": "reasoning", "text": "I should echo.", "signature": "sig-1"});
    assert_eq!(first["data"]["message"]["content"][0], thought, "{first}");

    let second = &w.mock.requests()[1];
    assert_eq!(second["thinking"], json!({"type": "enabled", "budget_tokens": 1024}));
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{second}");
    assert_eq!(
        messages[1]["content"][0],
        json!({"type": "thinking", "thinking": "I should echo.", "signature": "sig-1"}),
        "the thinking block goes back signed"
    );
    let result = &messages[2]["content"][0];
    assert_eq!(
        (result["type"].as_str(), result["tool_use_id"].as_str()),
        (Some("tool_result"), Some("toolu_1"))
    );
    assert_eq!(result["cache_control"], json!({"type": "ephemeral"}), "{result}");
    assert_eq!(messages[0]["content"][0]["cache_control"], json!({"type": "ephemeral"}));
}

#[tokio::test]
async fn an_image_reaches_anthropic_as_a_base64_source() {
    let (w, s) = anthropic().await;
    w.mock.push(Reply::text("A pixel.", 1));
    let image = json!({"type": "image", "mediaType": "image/png", "data": "iVBORw0KGgo="});
    run(&w, &s, json!([{"type": "text", "text": "what is it?"}, image])).await;
    let content = &w.mock.requests()[0]["messages"][0]["content"];
    let source = json!({"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="});
    assert_eq!(content[1]["source"], source, "{content}");
}

#[tokio::test]
async fn a_prompt_too_long_for_anthropic_compacts_once_and_the_step_completes() {
    let (w, s) = anthropic().await;
    w.mock.push(Reply::text("One.", 1));
    run(&w, &s, json!("first")).await;
    let too_long = json!({"type": "error", "error": {"type": "invalid_request_error",
        "message": "prompt is too long: 210000 tokens > 200000 maximum"}});
    w.mock
        .push(Reply::status(400).error_body(&too_long.to_string()))
        .push(Reply::text("They said first.", 1))
        .push(Reply::text("Two.", 1));
    let result = run(&w, &s, json!("second")).await;
    assert_eq!(result["finalResponse"], "Two.");
    let log = w.gw.log(&s).await;
    let compaction = log.iter().find(|e| e["type"] == "context/compaction").expect("compacted");
    assert_eq!(compaction["data"]["trigger"], "overflow", "{compaction}");
    assert_eq!(w.mock.requests().len(), 4, "the first, the refused, the summary, the retry");
}

/// What the gateway sent in a turn with every kind of block (system prompt, tools, an image,
/// thinking, a tool call and its result) fits the official `anthropic` SDK's request types.
#[tokio::test]
#[ignore = "needs the anthropic SDK in target/anthropic-venv (see .ci/run's fetch)"]
async fn anthropic_sdk_request_types_accept_every_body_airlock_sends() {
    use std::io::Write;
    let w = world_with(&[("AIRLOCK_THINKING_TOKENS", "1024")]).await;
    w.mock
        .push(Reply::tool_call("toolu_1", "echo", r#"{"text":"hi"}"#, 2).reasoning("Echo it.", 1))
        .push(Reply::text("Done.", 1));
    let image = json!({"type": "image", "mediaType": "image/png", "data": "iVBORw0KGgo="});
    let body = json!({"content": [{"type": "text", "text": "say hi"}, image],
        "model": "anthropic:mock", "system": "Be brief."});
    let (code, result) = w.gw.post("/v1/runs", body).await;
    assert_eq!(code, 200, "{result}");
    let requests = w.mock.requests();
    assert_eq!(requests.len(), 2);

    let repo = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = repo.join("target/anthropic-venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run tests/python-venv.sh target/anthropic-venv \
         tests/anthropic-sdk/requirements.txt anthropic",
        python.display()
    );
    let mut check = std::process::Command::new(python)
        .arg(repo.join("tests/anthropic-sdk/check_request.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python runs");
    let bodies = serde_json::to_vec(&requests).unwrap();
    check.stdin.take().unwrap().write_all(&bodies).unwrap();
    let out = check.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}
