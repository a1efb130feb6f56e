//! Durability at the API's edges, with faults injected into the store: nothing is acknowledged
//! that was not committed, and a subagent's result that cannot be made durable is reported as
//! `DURABILITY_FAILED` to the parent's model instead of as a result.

use crate::common;

use serde_json::{Value, json};

#[tokio::test]
async fn an_enqueue_whose_commit_fails_answers_503_and_no_202() {
    let (_dir, gw) = common::fresh().await;
    let s = gw.session().await;
    let messages = format!("/v1/sessions/{s}/messages");

    gw.store.faults().fail_commits(1);
    let (code, error) = gw.post(&messages, json!({"content": "lost?"})).await;
    assert_eq!((code, &error["error"]["code"]), (503, &json!("storage-unavailable")), "{error}");
    assert!(gw.log(&s).await.is_empty(), "a refused commit wrote nothing");

    let (code, receipt) = gw.post(&messages, json!({"content": "again"})).await;
    assert_eq!(code, 202, "the session was rebuilt from what is durable: {receipt}");
    assert_eq!(receipt["seq"], 0, "the log goes on where the durable part ends");
}

#[tokio::test]
async fn a_settlement_whose_flush_answers_false_gives_the_parents_model_durability_failed() {
    let (_dir, gw) = common::fresh().await;
    let s = gw.session().await;
    let mut sse = gw.sse(&s, "", None).await;

    // spawn_agent's own barrier succeeds; the one at the child's result boundary does not.
    gw.store.faults().flush_false_after(1);
    let spawn = r#"/tool spawn_agent {"name": "helper", "prompt": "hello child"}"#;
    let (code, _) = gw.post(&format!("/v1/sessions/{s}/messages"), json!({"content": spawn})).await;
    assert_eq!(code, 202);
    let notice = loop {
        let frame = sse.next().await;
        let event: Value = serde_json::from_str(&frame.data).unwrap_or_default();
        if event["type"] == "user/message" && event["data"]["source"]["kind"] == "subagent" {
            break event["data"].clone();
        }
    };
    let text = notice["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("DURABILITY_FAILED"), "{text}");
    assert!(!text.contains("You said"), "no result the store could not keep: {text}");
    let spawned = gw.log(&s).await.into_iter().find(|e| e["type"] == "tool/result").unwrap();
    assert!(spawned["data"]["error"].is_null(), "the spawn itself was durable: {spawned}");
}
