//! What sessions spent (`docs/http-api.md`, "Usage"): `/v1/sessions/{id}/usage` and `/v1/usage`
//! against the sum of the logs' usage, compaction summaries included, per tenant.

use airlock_tests::gateway::keyed_client;
use airlock_tests::world::tenants_with;
use reqwest::Client;
use serde_json::{Value, json};

async fn call(client: &Client, url: String, body: Option<Value>) -> (u16, Value) {
    let request = match body {
        Some(body) => client.post(url).json(&body),
        None => client.get(url),
    };
    let res = request.send().await.unwrap();
    (res.status().as_u16(), res.json().await.unwrap_or(Value::Null))
}

/// The usage the log's events carry (`assistant/message` and `context/compaction`), summed:
/// `[input, output, responses]`.
fn logged_usage(log: &[Value]) -> [u64; 3] {
    let mut sum = [0; 3];
    for event in log {
        if !matches!(event["type"].as_str(), Some("assistant/message" | "context/compaction")) {
            continue;
        }
        let usage = &event["data"]["usage"];
        if usage.is_object() {
            sum[0] += usage["inputTokens"].as_u64().unwrap();
            sum[1] += usage["outputTokens"].as_u64().unwrap();
            sum[2] += 1;
        }
    }
    sum
}

fn totals(usage: &Value) -> [u64; 2] {
    ["inputTokens", "outputTokens"].map(|k| usage[k].as_u64().unwrap())
}

#[tokio::test]
async fn usage_per_session_and_per_tenant_is_the_sum_of_the_logs_compactions_included() {
    let settings = tempfile::tempdir().unwrap();
    let config = settings.path().join("airlock.toml");
    let table = "[models.\"openai:mock\"]\ncontext_window = 400\n\
                 input_per_mtok = 2.0\noutput_per_mtok = 10.0\n";
    std::fs::write(&config, table).unwrap();
    let t = tenants_with(&[("AIRLOCK_CONFIG", config.to_str().unwrap())]).await;
    t.mock.count_prompt_tokens();
    let (a, b, admin) = (keyed_client(&t.a), keyed_client(&t.b), keyed_client(&t.admin));
    let gw = t.gw.with_key(&t.admin); // reads every tenant's logs
    let url = |path: &str| gw.url(path);
    let mut sessions = Vec::new();
    for (client, runs) in [(&a, 6), (&b, 1)] {
        let (code, session) =
            call(client, url("/v1/sessions"), Some(json!({"model": "openai:mock"}))).await;
        assert_eq!(code, 201, "{session}");
        let s = session["sessionId"].as_str().unwrap().to_owned();
        for run in 0..runs {
            let text = format!("run {run}: {}", "words that fill the window ".repeat(12));
            let runs = url(&format!("/v1/sessions/{s}/runs"));
            let (code, result) = call(client, runs, Some(json!({"content": text}))).await;
            assert_eq!(code, 200, "{result}");
        }
        sessions.push(s);
    }
    let (sa, sb) = (&sessions[0], &sessions[1]);
    let log_a = gw.log(sa).await;
    let compactions = log_a.iter().filter(|e| e["type"] == "context/compaction");
    assert!(compactions.clone().count() >= 1, "the window is small enough to compact");
    assert!(compactions.clone().all(|c| c["data"]["usage"]["inputTokens"].as_u64() > Some(0)));
    let [input, output, responses] = logged_usage(&log_a);

    let (code, usage) = call(&a, url(&format!("/v1/sessions/{sa}/usage")), None).await;
    assert_eq!(code, 200, "{usage}");
    assert_eq!(totals(&usage["usage"]), [input, output], "{usage}");
    let model = &usage["models"][0];
    assert_eq!((&model["provider"], &model["model"]), (&json!("openai"), &json!("mock")));
    assert_eq!(model["responses"], responses);
    let cost = (input as f64 * 2.0 + output as f64 * 10.0) / 1e6;
    assert!((usage["costUsd"].as_f64().unwrap() - cost).abs() < 1e-12, "{usage}");
    assert_eq!((&usage["estimate"], &usage["unpricedResponses"]), (&json!(false), &json!(0)));

    // Each tenant sees its own sessions' sum; an admin key sees both, by tenant.
    let (_, of_a) = call(&a, url("/v1/usage"), None).await;
    assert_eq!(totals(&of_a["usage"]), [input, output], "{of_a}");
    let (_, of_b) = call(&b, url("/v1/usage"), None).await;
    let [b_input, b_output, _] = logged_usage(&gw.log(sb).await);
    assert_eq!(totals(&of_b["usage"]), [b_input, b_output], "{of_b}");
    let (code, _) = call(&b, url(&format!("/v1/sessions/{sa}/usage")), None).await;
    assert_eq!(code, 404, "b never sees a's session");
    let (_, all) = call(&admin, url("/v1/usage"), None).await;
    assert_eq!(totals(&all["usage"]), [input + b_input, output + b_output], "{all}");
    let tenants: Vec<_> = all["models"].as_array().unwrap().iter().map(|m| &m["tenant"]).collect();
    assert_eq!(tenants, [&json!("a"), &json!("b")], "{all}");

    let (_, later) = call(&a, url("/v1/usage?since=99999999999999"), None).await;
    assert_eq!(totals(&later["usage"]), [0, 0], "{later}");
    let (code, bad) = call(&a, url("/v1/usage?since=yesterday"), None).await;
    assert_eq!(code, 400, "{bad}");
}
