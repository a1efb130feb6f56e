//! Context compaction end to end (`docs/semantics.md`, "Context compaction"): a long session
//! against a small configured window keeps every request within it, and `POST …/compact` is
//! maintenance at idle.

use airlock_tests::Reply;
use airlock_tests::gateway::{Frame, types};
use airlock_tests::world::{held, world, world_with};
use serde_json::{Value, json};

/// The summary's text in a request, as the core writes it.
const SUMMARY: &str = "Summary of the earlier conversation";

/// The text of a chat-completions message.
fn content(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The events of one type in a log.
fn of_type<'l>(log: &'l [Value], kind: &str) -> Vec<&'l Value> {
    log.iter().filter(|e| e["type"] == kind).collect()
}

#[tokio::test]
async fn two_hundred_turns_against_a_configured_window_compact_and_every_request_fits_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("airlock.toml");
    std::fs::write(&config, "[models.\"openai:mock\"]\ncontext_window = 2000\n").unwrap();
    let w = world_with(&[("AIRLOCK_CONFIG", config.to_str().unwrap())]).await;
    w.mock.count_prompt_tokens();
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    for turn in 0..200 {
        let text = format!("message {turn}: {}", "a few words to fill the window ".repeat(3));
        w.send(&s, json!({"content": text})).await;
        sse.until_idle().await;
    }
    let log = w.gw.log(&s).await;
    let context = of_type(&log, "request/context");
    assert_eq!(context[0]["data"]["contextWindow"], 2000, "{:?}", context[0]);
    let compactions = of_type(&log, "context/compaction");
    assert!(compactions.len() >= 5, "{} compactions in 200 turns", compactions.len());
    assert!(compactions.iter().all(|c| c["data"]["trigger"] == "pressure"));
    let turns = of_type(&log, "turn/end");
    assert_eq!(turns.len(), 200);
    assert!(
        turns.iter().all(|t| t["data"]["reason"]["kind"] == "completed"),
        "every turn completed"
    );
    // Bounded: every request, the summaries' included, fits the window as the model counts it.
    let requests = w.mock.requests();
    let largest = requests.iter().map(|r| r["messages"].to_string().len() / 4).max().unwrap();
    assert!(largest <= 2000, "a request of {largest} tokens against a window of 2000");
    // The last request: the summary, then only the newer messages.
    let last = requests.last().unwrap()["messages"].as_array().unwrap().clone();
    assert!(content(&last[0]).starts_with(SUMMARY), "{}", content(&last[0]));
    assert!(last.iter().all(|m| !content(m).contains("message 0:")), "old turns are gone");
    assert!(content(last.last().unwrap()).starts_with("message 199:"));
}

#[tokio::test]
async fn compact_at_idle_leaves_status_idle_and_a_message_sent_meanwhile_runs_after_it() {
    let w = world().await;
    let s = w.gw.session().await;
    let (code, refused) = w.gw.post(&format!("/v1/sessions/{s}/compact"), json!({})).await;
    assert_eq!((code, refused["error"]["code"].as_str()), (409, Some("nothing-to-compact")));
    let mut sse = w.gw.sse(&s, None).await;
    w.send(&s, json!({"content": "hi"})).await;
    sse.until_idle().await;

    let (summary, gate) = held("The person said hi.");
    w.mock.push(summary).push(Reply::text("Hello again.", 2));
    let (code, _) = w.gw.post(&format!("/v1/sessions/{s}/compact"), json!({})).await;
    assert_eq!(code, 202);
    w.mock.requested(2).await;
    let (code, again) = w.gw.post(&format!("/v1/sessions/{s}/compact"), json!({})).await;
    assert_eq!((code, again["error"]["code"].as_str()), (409, Some("compacting")));
    w.send(&s, json!({"content": "after"})).await;
    let (_, status) = w.gw.get(&format!("/v1/sessions/{s}/status")).await;
    assert_eq!(status["status"], "idle", "{status}");
    let waiting = w.gw.log(&s).await;
    assert_eq!(of_type(&waiting, "turn/start").len(), 1, "the message waits for the compaction");

    gate.notify_one();
    let frames = sse.until_idle().await;
    let kinds = types(&frames);
    let compaction = kinds.iter().position(|t| t == "context/compaction").expect("a compaction");
    let running = frames.iter().position(|f| matches!(f, Frame::Status(s) if s == "running"));
    let started = kinds.iter().position(|t| t == "turn/start").expect("the latched turn");
    assert!(running.is_some() && compaction < started, "{kinds:?}");
    let log = w.gw.log(&s).await;
    let event = of_type(&log, "context/compaction")[0]["data"].clone();
    assert_eq!(event["trigger"], "manual");
    assert!(event.get("turn").is_none(), "maintenance belongs to no turn: {event}");
    let turn = w.mock.requests()[2]["messages"].as_array().unwrap().clone();
    let texts: Vec<String> = turn.iter().map(content).collect();
    assert!(
        texts[0].starts_with(SUMMARY) && texts[0].ends_with("The person said hi."),
        "{texts:?}"
    );
    assert_eq!(texts[1..], ["after"]);
}

#[tokio::test]
async fn compact_while_a_turn_runs_is_refused_session_running() {
    let w = world().await;
    let (reply, gate) = held("slow answer");
    w.mock.push(reply);
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    w.send(&s, json!({"content": "hi"})).await;
    w.mock.requested(1).await;
    let (code, refused) = w.gw.post(&format!("/v1/sessions/{s}/compact"), json!({})).await;
    assert_eq!((code, refused["error"]["code"].as_str()), (409, Some("session-running")));
    gate.notify_one();
    sse.until_idle().await;
    let (code, _) = w.gw.post("/v1/sessions/nope/compact", json!({})).await;
    assert_eq!(code, 404, "an unknown session");
}
