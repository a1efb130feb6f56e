//! Failover end to end: a session on `anthropic:mock` whose settings fall back to `openai:backup`,
//! each model served by its own mock, as `[models."NAME"]` of `airlock.toml` says.

use airlock_tests::MockModel;
use airlock_tests::Reply;
use airlock_tests::world::{World, world_with};
use serde_json::{Value, json};

/// A world whose `anthropic:mock` retries twice and then fails over to `openai:backup`, served
/// by the second mock; a session on it; and the folder of the settings file.
async fn chained() -> (World, MockModel, String, tempfile::TempDir) {
    let backup = MockModel::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("airlock.toml");
    let table = format!(
        "[models.\"anthropic:mock\"]\nretries = 2\nfallback = [\"openai:backup\"]\n\n\
         [models.\"openai:backup\"]\nbase_url = \"{}\"\n",
        backup.base_url()
    );
    std::fs::write(&config, table).unwrap();
    let w = world_with(&[("AIRLOCK_CONFIG", config.to_str().unwrap())]).await;
    let (code, session) = w.gw.post("/v1/sessions", json!({"model": "anthropic:mock"})).await;
    assert_eq!(code, 201, "{session}");
    let s = session["sessionId"].as_str().unwrap().to_owned();
    (w, backup, s, dir)
}

fn of_type<'l>(log: &'l [Value], kind: &str) -> Vec<&'l Value> {
    log.iter().filter(|e| e["type"] == kind).collect()
}

#[tokio::test]
async fn a_provider_overloaded_past_its_retries_fails_over_and_the_turn_completes() {
    let (w, backup, s, _settings) = chained().await;
    for _ in 0..3 {
        w.mock.push(Reply::status(529));
    }
    backup.push(Reply::text("From the backup.", 2).usage(30, 4));
    let result = w.run(&s, json!("hello")).await;
    assert_eq!(result["finishReason"], "completed", "{result}");
    assert_eq!(result["finalResponse"], "From the backup.");
    assert_eq!((w.mock.requests().len(), backup.requests().len()), (3, 1));

    let log = w.gw.log(&s).await;
    let retries = of_type(&log, "llm/retry");
    assert_eq!(retries.len(), 2, "two retries on the first model");
    let contexts: Vec<_> =
        of_type(&log, "request/context").into_iter().map(|e| e["data"].clone()).collect();
    assert_eq!(contexts.len(), 2, "{contexts:?}");
    assert_eq!(
        (&contexts[0]["provider"], &contexts[0]["model"]),
        (&json!("anthropic"), &json!("mock"))
    );
    assert_eq!(
        (&contexts[1]["provider"], &contexts[1]["model"]),
        (&json!("openai"), &json!("backup"))
    );
    assert_eq!(contexts[1]["failover"]["code"], "SERVICE_UNAVAILABLE", "{}", contexts[1]);
    assert_eq!(contexts[1]["failover"]["status"], 529);

    // The next turn starts on the session's own model again.
    w.mock.push(Reply::text("Back home.", 1));
    let result = w.run(&s, json!("again")).await;
    assert_eq!(result["finalResponse"], "Back home.");
    let log = w.gw.log(&s).await;
    let last = of_type(&log, "request/context").pop().unwrap();
    assert_eq!(last["data"]["provider"], "anthropic", "{last}");
    assert!(last["data"].get("failover").is_none(), "{last}");
}

#[tokio::test]
async fn a_refused_key_does_not_fail_over() {
    let (w, backup, s, _settings) = chained().await;
    w.mock.push(Reply::status(401));
    let result = w.run(&s, json!("hello")).await;
    assert_eq!(result["finishReason"], "error", "{result}");
    assert_eq!((w.mock.requests().len(), backup.requests().len()), (1, 0));
    let log = w.gw.log(&s).await;
    let end = of_type(&log, "turn/end").pop().unwrap();
    assert_eq!(end["data"]["reason"]["error"]["code"], "AUTH", "{end}");
}

#[tokio::test]
async fn a_session_names_its_own_fallbacks_and_a_bad_one_is_refused() {
    let (w, backup, _, _settings) = chained().await;
    let spec = json!({"model": "anthropic:mock", "fallback": []});
    let (code, session) = w.gw.post("/v1/sessions", spec).await;
    assert_eq!(code, 201, "{session}");
    assert_eq!(session["fallback"], json!([]), "the session shows its own list");
    let s = session["sessionId"].as_str().unwrap();
    for _ in 0..3 {
        w.mock.push(Reply::status(529));
    }
    let result = w.run(s, json!("hello")).await;
    assert_eq!(result["finishReason"], "error", "no fallback for this session: {result}");
    assert_eq!(backup.requests().len(), 0);

    let spec = json!({"model": "anthropic:mock", "fallback": ["nonsense:x"]});
    let (code, body) = w.gw.post("/v1/sessions", spec).await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["error"]["details"]["field"], "fallback", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("fallback `nonsense:x`: unknown model"), "{message}");
}
