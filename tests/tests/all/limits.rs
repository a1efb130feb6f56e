//! Limits a model cannot exceed, end to end (`docs/semantics.md`, "Limits"): the turn deadline,
//! chunk coalescing, the `Retry-After` cap, and the goal's round maximum.

use std::time::Duration;

use airlock_tests::Reply;
use airlock_tests::gateway::{Frame, types};
use airlock_tests::world::{messages, world, world_with};
use serde_json::json;

/// The `turn/end` among frames.
fn turn_end(frames: &[Frame]) -> serde_json::Value {
    frames
        .iter()
        .find_map(|f| match f {
            Frame::Event(_, e) if e["type"] == "turn/end" => Some(e["data"]["reason"].clone()),
            _ => None,
        })
        .expect("a turn/end")
}

#[tokio::test]
async fn an_endless_stream_ends_at_the_turn_deadline_with_turn_timeout_in_few_log_rows() {
    let w = world_with(&[("AIRLOCK_TURN_TIMEOUT", "1s")]).await;
    // A word every 2 ms, for much longer than the deadline: without coalescing, 500 chunk
    // events a second.
    let endless = "word ".repeat(5_000);
    w.mock.push(Reply::text(&endless, 5_000).delay(Duration::from_millis(2)));
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    w.gw.post(&messages(&s), json!({"content": "talk forever"})).await;
    let frames = sse.until_idle().await;
    let reason = turn_end(&frames);
    assert_eq!(
        (reason["kind"].as_str(), reason["error"]["code"].as_str()),
        (Some("error"), Some("TURN_TIMEOUT")),
        "{reason}"
    );
    let log = w.gw.log(&s).await;
    let chunks = log.iter().filter(|e| e["type"] == "assistant/chunk").count();
    // One chunk event per 50 ms window over a second, give or take the first and the last.
    assert!((2..=30).contains(&chunks), "{chunks} chunk events in {} rows", log.len());
    let message = log.iter().find(|e| e["type"] == "assistant/message").expect("the text is kept");
    assert_eq!(message["data"]["interrupted"], true);
    let kept = message["data"]["message"]["content"][0]["text"].as_str().unwrap();
    assert!(kept.starts_with("word word"), "{kept:.40}");
}

#[tokio::test]
async fn a_retry_after_of_an_hour_ends_the_turn_with_rate_limit_at_once() {
    let w = world().await;
    w.mock.push(Reply::status(429).retry_after("3600"));
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    w.gw.post(&messages(&s), json!({"content": "hi"})).await;
    let frames = sse.until_idle().await;
    let reason = turn_end(&frames);
    assert_eq!(reason["error"]["code"], "RATE_LIMIT", "{reason}");
    assert!(!types(&frames).contains(&"llm/retry".to_owned()), "not waited for");
}

#[tokio::test]
async fn max_rounds_above_the_maximum_is_400_naming_the_field() {
    let w = world().await;
    let s = w.gw.session().await;
    for rounds in [2_147_483_648u64, 1001, 0] {
        let body = json!({"objective": "forever", "maxRounds": rounds});
        let (code, answer) = w.gw.put(&format!("/v1/sessions/{s}/goal"), body).await;
        assert_eq!(code, 400, "{rounds}: {answer}");
        assert_eq!(answer["error"]["details"]["field"], "maxRounds", "{rounds}");
    }
    let body = json!({"objective": "fine", "maxRounds": 1000});
    let (code, _) = w.gw.put(&format!("/v1/sessions/{s}/goal"), body).await;
    assert_eq!(code, 200);
}
