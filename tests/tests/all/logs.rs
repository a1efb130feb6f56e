//! The gateway's log as an operator reads it: `--log-format json` writes one JSON object per
//! line on stderr, and a failing turn, a 404 and a shutdown each leave a line saying what
//! happened, with the session, the status or the reason; every request's lines carry its id.

use airlock_tests::Reply;
use airlock_tests::world::world_with;
use serde_json::{Value, json};

/// The log's JSON lines; a line that is not JSON fails the test.
fn json_lines(lines: &[String]) -> Vec<Value> {
    lines.iter().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

/// The first line whose `message` is `message` and whose fields include `fields`.
fn find<'l>(log: &'l [Value], message: &str, fields: &Value) -> &'l Value {
    let has = |line: &Value| {
        line["message"] == message
            && fields.as_object().unwrap().iter().all(|(key, value)| &line[key] == value)
    };
    log.iter().find(|line| has(line)).unwrap_or_else(|| panic!("{message} {fields} in {log:#?}"))
}

#[tokio::test]
async fn json_log_lines_name_a_failing_turn_a_404_and_the_shutdown() {
    let mut w = world_with(&[("AIRLOCK_LOG_FORMAT", "json"), ("AIRLOCK_LOG", "info")]).await;
    // No idle keep-alive connection: the shutdown waits for none.
    w.gw.client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let s = w.gw.session().await;
    w.mock.push(Reply::status(401));
    let (code, run) = w.gw.post(&format!("/v1/sessions/{s}/runs"), json!({"content": "hi"})).await;
    assert_eq!((code, run["finishReason"].as_str()), (200, Some("error")), "{run}");
    assert_eq!(w.gw.get("/v1/sessions/nobody").await.0, 404);
    assert!(w.gw.terminate().success(), "SIGTERM stops it cleanly");

    let log = json_lines(&w.gw.log_lines());
    let failed = find(&log, "model call failed", &json!({"session_id": s, "code": "AUTH"}));
    assert_eq!((failed["level"].as_str(), failed["status"].as_u64()), (Some("WARN"), Some(401)));
    let ended = find(&log, "turn ended", &json!({"session_id": s, "reason": "error"}));
    assert_eq!(ended["code"], "AUTH", "{ended}");
    let missing = find(&log, "answered", &json!({"status": 404}));
    assert_eq!(missing["span"]["route"], "/v1/sessions/{id}", "{missing}");
    assert_eq!(missing["span"]["method"], "GET");
    find(&log, "listening", &json!({}));
    find(&log, "sessions recovered", &json!({"recovered": 0}));
    let stopping = log.iter().position(|l| l["message"].as_str().unwrap().starts_with("shutting"));
    let stopped = log.iter().position(|l| l["message"] == "stopped");
    assert!(stopping.is_some() && stopping < stopped, "shutting down, then stopped: {log:#?}");
}

#[tokio::test]
async fn every_request_line_carries_a_request_id_echoed_in_the_answer_and_its_session() {
    let mut w = world_with(&[("AIRLOCK_LOG_FORMAT", "json"), ("AIRLOCK_LOG", "info")]).await;
    w.gw.client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let s = w.gw.session().await;
    let given =
        w.gw.client
            .get(w.gw.url(&format!("/v1/sessions/{s}")))
            .header("x-request-id", "from-the-proxy-1")
            .header("x-forwarded-for", "203.0.113.7, 10.0.0.2");
    let given = given.send().await.unwrap();
    assert_eq!(given.headers()["x-request-id"], "from-the-proxy-1", "the id it came with");
    let made = w.gw.client.get(w.gw.url("/v1/sessions")).send().await.unwrap();
    let made = made.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert_eq!(made.len(), 36, "a fresh id when none came: {made}");
    // One that a log line could not carry as it is (too long) is replaced.
    let long = "x".repeat(129);
    let replaced = w.gw.client.get(w.gw.url("/healthz")).header("x-request-id", &long);
    let replaced = replaced.send().await.unwrap();
    assert_ne!(replaced.headers()["x-request-id"], long.as_str());
    assert!(w.gw.terminate().success());

    let log = json_lines(&w.gw.log_lines());
    let answered: Vec<&Value> = log.iter().filter(|l| l["message"] == "answered").collect();
    assert!(answered.iter().all(|l| l["span"]["request_id"].is_string()), "{answered:#?}");
    let of_session = answered
        .iter()
        .find(|l| l["span"]["request_id"] == "from-the-proxy-1")
        .unwrap_or_else(|| panic!("the given id in {answered:#?}"));
    assert_eq!(of_session["span"]["session_id"], s.as_str(), "{of_session}");
    assert_eq!(of_session["span"]["forwarded_for"], "203.0.113.7, 10.0.0.2", "who the proxy says");
    let listed = answered.iter().find(|l| l["span"]["request_id"] == made.as_str()).unwrap();
    assert!(listed["span"].get("session_id").is_none(), "no session named: {listed}");
    assert!(listed["span"].get("forwarded_for").is_none(), "no proxy: {listed}");
}
