//! `deploy/compose.yaml` as an operator starts it, in Docker's engine: PostgreSQL, three gateways
//! and nginx in their containers, every client reaching only the proxy (`airlock_tests::compose`).
//!
//! Needs the engine and the Debian base image (`tests/compose/engine.sh`): ignored by a plain
//! `cargo test`, and with `--ignored` skipped unless `AIRLOCK_TEST_COMPOSE` is set, as `.ci/run`
//! sets it.

use airlock_tests::cluster::Topology;
use airlock_tests::compose::Compose;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs Docker's engine (AIRLOCK_TEST_COMPOSE); .ci/run starts one"]
async fn the_compose_file_behind_its_proxy_passes_the_kill_9_test() {
    let Some(mut compose) = Compose::up("the_compose_file_behind_its_proxy_passes_the_kill_9_test")
    else {
        return;
    };
    // A run through the proxy, as the README's walk-through makes one.
    let mut client = compose.client(1);
    let s = client.create(json!({})).await;
    let run = |http: &reqwest::Client, base: &str| {
        http.post(format!("{base}/v1/sessions/{s}/runs")).json(&json!({"content": "hello"}))
    };
    let run: Value = client.call(run).await.json().await.unwrap();
    let answer = run["finalResponse"].as_str().unwrap_or_default();
    assert!(answer.contains("hello"), "the demo model answered the run: {run}");
    assert!(compose.holder(&s).starts_with("http://gateway-"), "a gateway holds {s}");
    // The image's plugins (`AIRLOCK_PLUGINS`): a call of `calc` runs in the container's sandbox.
    let calc = |http: &reqwest::Client, base: &str| {
        let content = r#"/tool calc {"expression": "6*7"}"#;
        http.post(format!("{base}/v1/sessions/{s}/runs")).json(&json!({"content": content}))
    };
    let run: Value = client.call(calc).await.json().await.unwrap();
    let answer = run["finalResponse"].as_str().unwrap_or_default();
    assert!(answer.contains(r#""value":42"#), "the calc plugin answered: {run}");
    super::cluster::kill_9_under_load(&mut compose).await;
}
