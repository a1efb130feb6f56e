//! Goal continuation end to end: `PUT /v1/sessions/{id}/goal` arms a goal, the gateway enqueues
//! its rounds at whole-agent idle, and the mock model's requests show them.

use airlock_tests::Reply;
use airlock_tests::gateway::{Frame, Sse};
use airlock_tests::world::{World, first_chunk, held, holding, world};
use serde_json::{Value, json};

fn goal_path(s: &str) -> String {
    format!("/v1/sessions/{s}/goal")
}

/// Frames until a `goal/change` whose goal is in `phase`; answers that goal.
async fn until_phase(sse: &mut Sse, phase: &str) -> Value {
    let frames = sse
        .until(|f| matches!(f, Frame::Event(_, e) if e["type"] == "goal/change" && e["data"]["goal"]["phase"] == phase))
        .await;
    let Some(Frame::Event(_, event)) = frames.last() else { unreachable!() };
    event["data"]["goal"].clone()
}

/// The text of the last user message of a model request.
fn last_user_text(request: &Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    let last = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    last["content"].to_string()
}

/// The goal rounds in the log, as `(round, revision)`.
async fn rounds(w: &World, s: &str) -> Vec<(u64, u64)> {
    w.gw.log(s)
        .await
        .iter()
        .filter(|e| e["type"] == "user/message" && e["data"]["source"]["kind"] == "goal")
        .map(|e| {
            let source = &e["data"]["source"];
            (source["round"].as_u64().unwrap(), source["revision"].as_u64().unwrap())
        })
        .collect()
}

#[tokio::test]
async fn goal_with_max_rounds_2_runs_two_rounds_then_blocks_on_round_limit() {
    let w = world().await;
    w.mock.push(Reply::text("Round one done.", 1));
    w.mock.push(Reply::text("Round two done.", 1));
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    let (code, goal) =
        w.gw.put(&goal_path(&s), json!({"objective": "count sheep", "maxRounds": 2})).await;
    assert_eq!(code, 200, "{goal}");
    assert_eq!((goal["phase"].as_str(), goal["armed"].as_bool()), (Some("active"), Some(true)));

    let blocked = until_phase(&mut sse, "blocked").await;
    assert_eq!(blocked["blocked"]["code"], "round-limit");
    assert_eq!(blocked["roundsStarted"], 2);
    let requests = w.mock.requests();
    assert_eq!(requests.len(), 2);
    assert!(last_user_text(&requests[0]).contains("Round: 1/2"), "{}", requests[0]);
    assert!(last_user_text(&requests[1]).contains("Round: 2/2"), "{}", requests[1]);
    assert!(last_user_text(&requests[1]).contains("count sheep"));
    let rounds = rounds(&w, &s).await;
    assert_eq!(rounds.iter().map(|r| r.0).collect::<Vec<_>>(), [1, 2]);
    assert!(rounds[0].1 < rounds[1].1, "each round carries the goal's revision then: {rounds:?}");

    let (_, session) = w.gw.get(&format!("/v1/sessions/{s}")).await;
    assert_eq!(session["goal"]["phase"], "blocked");
    let (code, read) = w.gw.get(&goal_path(&s)).await;
    assert_eq!((code, &read["blocked"]["code"]), (200, &json!("round-limit")));
}

#[tokio::test]
async fn goal_rounds_start_a_quarter_second_apart_at_the_least() {
    let w = world().await;
    for _ in 0..3 {
        w.mock.push(Reply::text("Done at once.", 1));
    }
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    let (code, goal) =
        w.gw.put(&goal_path(&s), json!({"objective": "hurry", "maxRounds": 3})).await;
    assert_eq!(code, 200, "{goal}");
    until_phase(&mut sse, "blocked").await;
    let starts: Vec<u64> =
        w.gw.log(&s)
            .await
            .iter()
            .filter(|e| e["type"] == "user/message" && e["data"]["source"]["kind"] == "goal")
            .map(|e| e["time"].as_u64().expect("an event time"))
            .collect();
    assert_eq!(starts.len(), 3);
    for pair in starts.windows(2) {
        assert!(
            pair[1] - pair[0] >= 250,
            "rounds started {}ms apart: {starts:?}",
            pair[1] - pair[0]
        );
    }
}

#[tokio::test]
async fn queued_human_work_runs_before_a_goal_round() {
    let (w, s, mut sse, gate) =
        holding("Human one.", [Reply::text("Human two.", 1), Reply::text("The round.", 1)]).await;
    w.send(&s, json!({"content": "first human task"})).await;
    sse.until(first_chunk).await;
    w.send(&s, json!({"content": "second human task"})).await;
    let (code, _) = w.gw.put(&goal_path(&s), json!({"objective": "tidy", "maxRounds": 1})).await;
    assert_eq!(code, 200);
    gate.notify_one();

    until_phase(&mut sse, "blocked").await;
    let requests = w.mock.requests();
    assert_eq!(requests.len(), 3);
    assert!(last_user_text(&requests[1]).contains("second human task"), "{}", requests[1]);
    assert!(last_user_text(&requests[2]).contains("Round: 1/1"), "{}", requests[2]);
}

#[tokio::test]
async fn cancelling_an_admitted_round_pauses_the_goal() {
    let (w, s, mut sse, _gate) = holding("Working on it", [Reply::text("Human answer.", 1)]).await;
    w.gw.put(&goal_path(&s), json!({"objective": "long task", "maxRounds": 3})).await;
    sse.until(first_chunk).await; // the round was admitted and streams

    let (code, _) = w.gw.post(&format!("/v1/sessions/{s}/cancel"), json!({})).await;
    assert_eq!(code, 202);
    let paused = until_phase(&mut sse, "paused").await;
    assert_eq!(paused["roundsStarted"], 1);

    w.run(&s, "a human question").await;
    assert_eq!(rounds(&w, &s).await.len(), 1, "no round after the pause");
    let requests = w.mock.requests();
    assert!(last_user_text(requests.last().unwrap()).contains("a human question"));
    let (_, goal) = w.gw.get(&goal_path(&s)).await;
    assert_eq!(goal["phase"], "paused");
}

#[tokio::test]
async fn the_models_goal_tool_completing_the_goal_stops_the_rounds() {
    let w = world().await;
    w.mock.push(Reply::tool_call("g1", "goal", r#"{"status":"complete"}"#, 1));
    w.mock.push(Reply::text("All done.", 1));
    w.mock.push(Reply::text("Hello.", 1));
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    w.gw.put(&goal_path(&s), json!({"objective": "finish", "maxRounds": 5})).await;

    let complete = until_phase(&mut sse, "complete").await;
    assert_eq!(complete["roundsStarted"], 1);
    sse.until_idle().await;
    w.run(&s, "anything else?").await;
    assert_eq!(rounds(&w, &s).await.len(), 1, "the completed goal ran no second round");
    let requests = w.mock.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests[0]["tools"].to_string().contains("\"goal\""), "the model sees the goal tool");
}

#[tokio::test]
async fn after_restart_a_goal_is_loaded_but_disarmed_until_resume() {
    let (w, s, mut sse, _gate) = holding("Round one, interrupted", []).await;
    w.gw.put(&goal_path(&s), json!({"objective": "survive", "maxRounds": 2})).await;
    sse.until(first_chunk).await;
    drop(sse);

    let World { dir, mock, gw } = w;
    let w = World { dir, mock, gw: gw.crash_and_restart() };
    let (code, goal) = w.gw.get(&goal_path(&s)).await;
    assert_eq!(code, 200, "{goal}");
    assert_eq!((goal["phase"].as_str(), goal["armed"].as_bool()), (Some("active"), Some(false)));
    w.mock.push(Reply::text("Human answer.", 1));
    w.run(&s, "are you there?").await;
    assert_eq!(rounds(&w, &s).await.len(), 1, "a disarmed goal enqueues no round");

    w.mock.push(Reply::text("Round two done.", 1));
    let mut sse = w.gw.sse(&s, Some(w.gw.log(&s).await.len() as u64 - 1)).await;
    let (code, resumed) = w.gw.post(&format!("{}/resume", goal_path(&s)), json!({})).await;
    assert_eq!((code, resumed["armed"].as_bool()), (200, Some(true)), "{resumed}");
    let blocked = until_phase(&mut sse, "blocked").await;
    assert_eq!(blocked["blocked"]["code"], "round-limit");
    let last = w.mock.requests().last().cloned().unwrap();
    assert!(last_user_text(&last).contains("Round: 2/2"), "{last}");
}

#[tokio::test]
async fn goal_requests_that_do_not_fit_answer_400_404_or_409_with_the_reason() {
    let w = world().await;
    w.mock.push(Reply::text("Round one.", 1));
    let s = w.gw.session().await;
    let (code, error) = w.gw.get(&goal_path(&s)).await;
    assert_eq!((code, &error["error"]["code"]), (404, &json!("goal-not-found")));
    let (code, error) = w.gw.put(&goal_path(&s), json!({"objective": "x", "maxRounds": 0})).await;
    assert_eq!((code, &error["error"]["details"]["field"]), (400, &json!("maxRounds")), "{error}");

    w.gw.put(&goal_path(&s), json!({"objective": "x", "maxRounds": 1})).await;
    let (code, done) = w.gw.post(&format!("{}/complete", goal_path(&s)), json!({})).await;
    assert_eq!((code, &done["phase"]), (200, &json!("complete")));
    let (code, error) = w.gw.post(&format!("{}/resume", goal_path(&s)), json!({})).await;
    assert_eq!((code, &error["error"]["code"]), (409, &json!("goal-conflict")));
    assert!(error["error"]["message"].as_str().unwrap().contains("set a new goal"), "{error}");

    let cleared = reqwest::Client::new().delete(w.gw.url(&goal_path(&s))).send().await.unwrap();
    assert_eq!(cleared.status(), 204);
    assert_eq!(w.gw.get(&goal_path(&s)).await.0, 404);
    let log = w.gw.log(&s).await;
    let last_change = log.iter().rev().find(|e| e["type"] == "goal/change").unwrap();
    assert_eq!(last_change["data"]["cleared"], true);
}

/// The queue's items as `(source kind, text)`.
async fn queue(w: &World, s: &str) -> Vec<(String, String)> {
    let (code, queue) = w.gw.get(&format!("/v1/sessions/{s}/queue")).await;
    assert_eq!(code, 200, "{queue}");
    queue["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            let message = &item["message"];
            let text = message["content"][0]["text"].as_str().unwrap_or_default().to_owned();
            (message["source"]["kind"].as_str().unwrap().to_owned(), text)
        })
        .collect()
}

/// A human turn held streaming with a second human message queued behind it, a goal of
/// `max_rounds` set meanwhile, then a cancel that keeps the inbox: the second message is parked.
async fn parked_behind_a_cancel(w: &World, sse: &mut Sse, s: &str, max_rounds: u32) {
    let (first, _never) = held("Human one, cut short");
    w.mock.push(first);
    w.send(s, json!({"content": "first human task"})).await;
    sse.until(first_chunk).await;
    w.send(s, json!({"content": "second human task"})).await;
    let goal = json!({"objective": "tidy", "maxRounds": max_rounds});
    assert_eq!(w.gw.put(&goal_path(s), goal).await.0, 200);
    let (code, _) = w.gw.post(&format!("/v1/sessions/{s}/cancel"), json!({})).await;
    assert_eq!(code, 202);
}

#[tokio::test]
async fn a_cancel_keeping_the_inbox_parks_human_work_and_no_round_runs_until_the_person_sends() {
    let w = world().await;
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    parked_behind_a_cancel(&w, &mut sse, &s, 1).await;
    // The cancel was answered after the goal had its look at the idle agent.
    let queue = queue(&w, &s).await;
    assert_eq!(queue, [("user".into(), "second human task".into())], "parked, and no round");
    assert!(rounds(&w, &s).await.is_empty());
    let (_, goal) = w.gw.get(&goal_path(&s)).await;
    assert_eq!((goal["phase"].as_str(), goal["armed"].as_bool()), (Some("active"), Some(true)));

    w.mock.push(Reply::text("Human two.", 1));
    w.mock.push(Reply::text("Human three.", 1));
    w.mock.push(Reply::text("The round.", 1));
    w.send(&s, json!({"content": "third human task"})).await;
    until_phase(&mut sse, "blocked").await;
    let asked: Vec<String> = w.mock.requests().iter().map(last_user_text).collect();
    assert_eq!(asked.len(), 4, "{asked:?}");
    assert!(asked[1].contains("second human task"), "the parked work first: {asked:?}");
    assert!(asked[2].contains("third human task"), "{asked:?}");
    assert!(asked[3].contains("Round: 1/1"), "then exactly one round: {asked:?}");
    assert_eq!(rounds(&w, &s).await.len(), 1);
}

/// A session with parked human work, then `resume`: the round is queued behind the parked work,
/// which the resume released and which now runs (held). Answers the world, the session and its
/// stream, the round's message id and the gate.
async fn a_queued_round() -> (World, String, Sse, String, std::sync::Arc<tokio::sync::Notify>) {
    let w = world().await;
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    parked_behind_a_cancel(&w, &mut sse, &s, 2).await;
    let (second, gate) = held("Human two, slowly");
    w.mock.push(second);
    let (code, goal) = w.gw.post(&format!("{}/resume", goal_path(&s)), json!({})).await;
    assert_eq!(code, 200, "{goal}");
    let (code, queue) = w.gw.get(&format!("/v1/sessions/{s}/queue")).await;
    assert_eq!(code, 200);
    let items = queue["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "the parked work runs, the round waits behind it: {queue}");
    assert_eq!(items[0]["message"]["source"]["kind"], "goal");
    let round = items[0]["messageId"].as_str().unwrap().to_owned();
    (w, s, sse, round, gate)
}

#[tokio::test]
async fn cancel_while_a_round_is_queued_pauses_the_goal_and_cancels_the_round() {
    let (w, s, mut sse, round, _gate) = a_queued_round().await;

    let (code, _) = w.gw.post(&format!("/v1/sessions/{s}/cancel"), json!({})).await;
    assert_eq!(code, 202);
    let (_, goal) = w.gw.get(&goal_path(&s)).await;
    assert_eq!(goal["phase"], "paused", "{goal}");
    assert_eq!(goal["paused"]["code"], "cancel", "{goal}");
    let (_, receipt) = w.gw.get(&format!("/v1/sessions/{s}/messages/{round}")).await;
    assert_eq!(receipt["state"], "canceled", "{receipt}");
    assert!(queue(&w, &s).await.is_empty());

    w.mock.push(Reply::text("Human three.", 1));
    w.run(&s, "third human task").await;
    let asked = last_user_text(w.mock.requests().last().unwrap());
    assert!(asked.contains("third human task"), "the person's message ran first: {asked}");
    assert!(rounds(&w, &s).await.is_empty(), "the canceled round never ran");

    w.mock.push(Reply::text("Round two done.", 1));
    let (code, _) = w.gw.post(&format!("{}/resume", goal_path(&s)), json!({})).await;
    assert_eq!(code, 200);
    let blocked = until_phase(&mut sse, "blocked").await;
    assert_eq!(blocked["blocked"]["code"], "round-limit");
    assert_eq!(rounds(&w, &s).await.iter().map(|r| r.0).collect::<Vec<_>>(), [2], "one round");
}

#[tokio::test]
async fn deleting_a_queued_goal_round_pauses_the_goal_with_a_reason_and_it_does_not_stall() {
    let (w, s, mut sse, round, gate) = a_queued_round().await;

    let removed =
        w.gw.client.delete(w.gw.url(&format!("/v1/sessions/{s}/queue/{round}"))).send().await;
    assert_eq!(removed.unwrap().status(), 200);
    let (_, goal) = w.gw.get(&goal_path(&s)).await;
    assert_eq!(
        (goal["phase"].as_str(), goal["paused"]["code"].as_str()),
        (Some("paused"), Some("round-removed")),
        "{goal}"
    );
    assert!(goal["paused"]["message"].as_str().unwrap().contains("removed"), "{goal}");

    gate.notify_one();
    sse.until(
        |f| matches!(f, Frame::Event(_, e) if e["type"] == "turn/end" && e["data"]["turn"] == 2),
    )
    .await;
    sse.until(|f| *f == Frame::Status("idle".into())).await;
    assert!(rounds(&w, &s).await.is_empty(), "the paused goal queued nothing at idle");
    w.mock.push(Reply::text("Round two done.", 1));
    let (code, _) = w.gw.post(&format!("{}/resume", goal_path(&s)), json!({})).await;
    assert_eq!(code, 200);
    let blocked = until_phase(&mut sse, "blocked").await;
    assert_eq!(blocked["roundsStarted"], 2);
    assert_eq!(rounds(&w, &s).await.len(), 1, "the resumed goal went on with one round");
}
