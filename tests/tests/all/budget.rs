//! Budgets that pause (`docs/semantics.md`, "Budgets"): a session stops at its token budget with
//! nothing lost, says why over HTTP and SSE (ACP: `gateway/tests/gateway/acp/mod.rs`), keeps the
//! pause across a `kill -9`, and a raised budget resumes it where it stopped.

use airlock_tests::Reply;
use airlock_tests::gateway::Frame;
use airlock_tests::world::world;
use serde_json::{Value, json};

fn kinds(log: &[Value], kind: &str) -> Vec<Value> {
    log.iter().filter(|e| e["type"] == kind).cloned().collect()
}

fn ends(log: &[Value]) -> Vec<String> {
    let reason = |e: Value| e["data"]["reason"]["kind"].as_str().unwrap().to_owned();
    kinds(log, "turn/end").into_iter().map(reason).collect()
}

#[tokio::test]
async fn a_session_stops_at_its_token_budget_with_nothing_lost_and_a_raise_resumes_it() {
    let w = world().await;
    w.mock
        .push(Reply::tool_call("c1", "echo", r#"{"text":"hi"}"#, 1).usage(50, 10))
        .push(Reply::text("Carried on with the echo.", 2).usage(70, 5))
        .push(Reply::text("Then the second task.", 2).usage(80, 5));
    let body = json!({"model": "openai:mock", "budget": {"tokens": 50}});
    let (code, created) = w.gw.post("/v1/sessions", body).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        (created["budget"].clone(), created["paused"].clone()),
        (json!({"tokens": 50}), json!(false))
    );
    let s = created["sessionId"].as_str().unwrap().to_owned();
    let mut sse = w.gw.sse(&s, None).await;

    // The first step runs (nothing spent yet); its 60 tokens spend the budget, so the step that
    // would send the echo's result does not start.
    let result = w.run(&s, "first task").await;
    assert_eq!(result["finishReason"], "paused", "{result}");
    let spent = json!({"scope": "session", "budget": {"tokens": 50}, "spent": {"tokens": 60, "costUsd": 0.0}});
    assert_eq!(result["paused"], spent);
    assert_eq!(w.mock.requests().len(), 1);
    let frames = sse.until(|f| matches!(f, Frame::Event(_, e) if e["type"] == "turn/end")).await;
    let exhausted = frames.iter().find_map(|f| match f {
        Frame::Event(_, e) if e["type"] == "budget/exhausted" => Some(e["data"].clone()),
        _ => None,
    });
    assert_eq!(exhausted, Some(spent), "the SSE stream says why");

    // New work is taken and waits; nothing runs.
    let second = w.send(&s, json!({"content": "second task"})).await;
    let (_, view) = w.gw.get(&format!("/v1/sessions/{s}")).await;
    assert_eq!((view["status"].as_str(), view["paused"].as_bool()), (Some("idle"), Some(true)));
    assert_eq!(view["pending"]["nextTurn"], 1);
    let (code, budget) = w.gw.get(&format!("/v1/sessions/{s}/budget")).await;
    assert_eq!(code, 200);
    assert_eq!(
        budget,
        json!({"budget": {"tokens": 50}, "spent": {"tokens": 60, "costUsd": 0.0}, "paused": true})
    );

    // A kill -9 keeps the pause: after the restart nothing runs, the message still waits.
    let gw = w.gw.crash_and_restart_in_place();
    let (_, view) = gw.get(&format!("/v1/sessions/{s}")).await;
    assert_eq!(
        (view["paused"].as_bool(), view["pending"]["nextTurn"].as_u64()),
        (Some(true), Some(1))
    );
    let (code, refused) =
        gw.patch(&format!("/v1/sessions/{s}/budget"), json!({"tokens": -1})).await;
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(code == 400 && message.contains("tokens: -1 is not a whole number"), "{refused}");
    let (code, still) = gw.patch(&format!("/v1/sessions/{s}/budget"), json!({"tokens": 60})).await;
    assert_eq!((code, still["paused"].as_bool()), (200, Some(true)), "{still}");
    assert_eq!(w.mock.requests().len(), 1, "still spent: nothing ran");

    // Raising it resumes where it stopped: the echo's result goes to the model first, then the
    // second task runs in a turn of its own.
    let mut sse = gw.sse(&s, None).await;
    let (code, raised) =
        gw.patch(&format!("/v1/sessions/{s}/budget"), json!({"tokens": 1000})).await;
    assert_eq!((code, raised["paused"].as_bool()), (200, Some(false)), "{raised}");
    let mut ended = 0;
    sse.until(|f| {
        ended += usize::from(matches!(f, Frame::Event(_, e) if e["type"] == "turn/end"));
        ended == 3 // the paused turn's, and the two after the resume
    })
    .await;
    let requests = w.mock.requests();
    assert_eq!(requests.len(), 3);
    let resumed = requests[1]["messages"].to_string();
    assert!(resumed.contains("\"tool\"") && !resumed.contains("second task"), "{resumed}");
    assert!(requests[2]["messages"].to_string().contains("second task"));
    let log = gw.log(&s).await;
    assert_eq!(ends(&log), ["paused", "completed", "completed"]);
    assert_eq!(kinds(&log, "budget/resumed").len(), 1);
    let receipt = gw.get(&format!("/v1/sessions/{s}/messages/{second}")).await.1;
    assert_eq!((receipt["state"].as_str(), receipt["turn"].as_u64()), (Some("claimed"), Some(3)));
}

#[tokio::test]
async fn a_bad_budget_is_refused_naming_the_field() {
    let w = world().await;
    let body = json!({"model": "openai:mock", "budget": {"costUsd": -2}});
    let (code, refused) = w.gw.post("/v1/sessions", body).await;
    assert_eq!(
        (code, refused["error"]["details"]["field"].as_str()),
        (400, Some("budget")),
        "{refused}"
    );
    let s = w.gw.session().await;
    let (code, refused) =
        w.gw.patch(&format!("/v1/sessions/{s}/budget"), json!({"tokenz": 5})).await;
    assert_eq!(code, 400, "{refused}");
    let (code, none) = w.gw.patch(&format!("/v1/sessions/{s}/budget"), json!({})).await;
    assert_eq!((code, none["budget"].clone()), (200, Value::Null), "{none}");
}
