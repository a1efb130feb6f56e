//! `/metrics` as a Prometheus server scrapes it: Debian's `promtool check metrics` accepts it, and
//! the families an operator needs are there with their labels.
//!
//! Ignored by default because it needs `promtool` (Debian's `prometheus` package); `.ci/run`
//! installs it and runs this with `--ignored`.

use std::io::Write;
use std::process::{Command, Stdio};

use airlock_tests::Reply;
use airlock_tests::gateway::Gateway;
use airlock_tests::world::{world, world_with};
use futures::StreamExt;
use serde_json::{Value, json};

/// `promtool check metrics` on `text`: its exit code and what it printed.
fn promtool(text: &str) -> (Option<i32>, String) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs (install Debian's prometheus package)");
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    (out.status.code(), said.into_owned())
}

#[tokio::test]
#[ignore = "needs promtool (Debian's prometheus package); .ci/run installs it"]
async fn metrics_pass_promtool_and_count_requests_model_calls_tools_and_turns() {
    // `mock` is the gateway's own model, so the metrics name it.
    let w = world_with(&[("AIRLOCK_MODEL", "openai:mock")]).await;
    let s = w.gw.session().await;
    w.mock.push(Reply::tool_call("c1", "echo", r#"{"text":"hi"}"#, 1).usage(7, 2));
    w.mock.push(Reply::text("done", 1)).push(Reply::status(401));
    let runs = format!("/v1/sessions/{s}/runs");
    assert_eq!(w.gw.post(&runs, json!({"content": "use echo"})).await.0, 200);
    assert_eq!(w.gw.post(&runs, json!({"content": "fail"})).await.0, 200);
    assert_eq!(w.gw.get("/v1/nothing-here").await.0, 404);

    let res = w.gw.client.get(w.gw.url("/metrics")).send().await.unwrap();
    assert_eq!(res.headers()["content-type"], "text/plain; version=0.0.4; charset=utf-8");
    let text = res.text().await.unwrap();
    let (code, said) = promtool(&text);
    assert_eq!(code, Some(0), "promtool check metrics: {said}");
    for line in [
        r#"airlock_turns_total{reason="completed"} 1"#,
        r#"airlock_turns_total{reason="error"} 1"#,
        r#"airlock_http_requests_total{method="POST",route="/v1/sessions/{id}/runs",status="200"} 2"#,
        r#"airlock_http_requests_total{method="GET",route="unmatched",status="404"} 1"#,
        r#"airlock_model_calls_total{provider="openai",model="mock",outcome="ok"} 2"#,
        r#"airlock_model_calls_total{provider="openai",model="mock",outcome="auth"} 1"#,
        r#"airlock_model_tokens_total{provider="openai",model="mock",kind="input"} 17"#,
        r#"airlock_tool_calls_total{tool="echo",outcome="ok"} 1"#,
        "airlock_sessions 1",
        "airlock_sse_subscribers 0",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
    }
    for family in [
        "airlock_http_request_duration_seconds",
        "airlock_model_call_duration_seconds",
        "airlock_model_first_chunk_seconds",
        "airlock_tool_call_duration_seconds",
        "airlock_commit_duration_seconds",
        "airlock_commit_batch_size",
        "airlock_core_fuel_per_call",
    ] {
        assert!(text.contains(&format!("# TYPE {family} histogram")), "{family} in:\n{text}");
    }

    let open = w.gw.client.get(w.gw.url("/metrics"));
    let res = open.header("accept", "application/openmetrics-text").send().await.unwrap();
    let content_type = res.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(content_type.starts_with("application/openmetrics-text"), "{content_type}");
    assert!(res.text().await.unwrap().ends_with("# EOF\n"));
}

#[tokio::test]
async fn no_label_comes_from_a_client_and_metrics_stay_small_after_a_thousand_model_names() {
    let w = world().await;
    let huge = format!("openai:{}", "m".repeat(100 << 10));
    let (code, refused) = w.gw.post("/v1/sessions", json!({"model": huge})).await;
    assert_eq!((code, refused["error"]["details"]["field"].as_str()), (400, Some("model")));
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.len() < 1_000, "the answer does not echo the name: {} bytes", message.len());

    // A thousand sessions, each of its own model name, each a turn: one `other` series.
    let runs = (0..1_000).map(|i| {
        let (client, url) = (w.gw.client.clone(), w.gw.url("/v1/runs"));
        async move {
            let body = json!({"content": "hi", "model": format!("openai:tenant-secret-{i}")});
            let res = client.post(url).json(&body).send().await.unwrap();
            assert_eq!(res.status(), 200);
        }
    });
    futures::stream::iter(runs).buffer_unordered(16).collect::<Vec<()>>().await;
    let method = w.gw.client.request("BREW".parse().unwrap(), w.gw.url("/v1/sessions"));
    method.send().await.unwrap();
    let text = w.gw.client.get(w.gw.url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(text.len() < 1 << 20, "/metrics is {} bytes", text.len());
    assert!(!text.contains("tenant-secret"), "a client's model name is a label");
    assert!(!text.contains("BREW"), "a client's method is a label");
    let calls = r#"airlock_model_calls_total{provider="openai",model="other",outcome="ok"} 1000"#;
    assert!(text.lines().any(|l| l == calls), "{calls} in:\n{text}");
}

#[tokio::test]
async fn metrics_served_on_an_address_of_their_own_and_behind_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let mock = airlock_tests::MockModel::start().await;
    let env = [("AIRLOCK_METRICS_LISTEN", "127.0.0.1:0"), ("AIRLOCK_METRICS_KEY", "scrape-me")];
    let gw = Gateway::start_with(&dir.path().join("airlock.db"), &mock.base_url(), &env);
    let line = gw
        .log_lines()
        .into_iter()
        .find_map(|line| line.strip_prefix("airlock: metrics on ").map(str::to_owned));
    let url = line.expect("it says where the metrics are");
    assert_eq!(gw.get("/metrics").await.0, 404, "not on the API's address");
    let plain = gw.client.get(&url).send().await.unwrap();
    assert_eq!(plain.status(), 401);
    let body: Value = plain.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unauthorized");
    let wrong = gw.client.get(&url).bearer_auth("guess").send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    let scraped = gw.client.get(&url).bearer_auth("scrape-me").send().await.unwrap();
    assert_eq!(scraped.status(), 200);
    assert!(scraped.text().await.unwrap().contains("airlock_sessions"));
    let doc: Value =
        gw.client.get(gw.url("/openapi.json")).send().await.unwrap().json().await.unwrap();
    assert!(doc["paths"].get("/metrics").is_none(), "the API does not serve it");
}
