//! End to end: queue edits and receipts, and, with turns kept running by a held mock reply,
//! steering, queue promotion, cancel
//! with and without the queue, a subscriber that reads nothing for a while, the cross-session
//! stream, and disposal.

use std::time::Duration;

use airlock_tests::Reply;
use airlock_tests::gateway::{Frame, seqs, types};
use airlock_tests::world::{first_chunk, holding, world};
use futures::StreamExt;
use serde_json::{Value, json};

/// A reply that never finishes: the turn runs until cancelled.
fn endless() -> Reply {
    Reply::text("one two three", 3).delay(Duration::from_secs(120))
}

fn entered(frames: &[Frame]) -> Vec<(u64, String)> {
    let mut turn = 0;
    let mut out = Vec::new();
    for frame in frames {
        if let Frame::Event(_, e) = frame {
            if e["type"] == "turn/start" {
                turn = e["data"]["turn"].as_u64().unwrap();
            }
            if e["type"] == "user/message" {
                out.push((turn, e["data"]["id"].as_str().unwrap().to_owned()));
            }
        }
    }
    out
}

#[tokio::test]
async fn promoting_a_queued_followup_steers_the_running_turn_and_receipts_follow_it() {
    let (w, s, mut sse, gate) = holding("first answer here", [Reply::text("Steered.", 1)]).await;
    let m1 = w.send(&s, json!({"content": "first"})).await;
    let m2 = w.send(&s, json!({"content": "second"})).await;
    let (_, receipt) = w.gw.get(&format!("/v1/sessions/{s}/messages/{m2}")).await;
    assert_eq!(
        (receipt["state"].as_str(), receipt["target"].as_str()),
        (Some("pending"), Some("next-turn"))
    );
    let mut frames = sse.until(first_chunk).await;

    let (code, _) = w.gw.post(&format!("/v1/sessions/{s}/queue/{m2}/steer"), json!({})).await;
    assert_eq!(code, 200);
    let (_, receipt) = w.gw.get(&format!("/v1/sessions/{s}/messages/{m2}")).await;
    assert_eq!(
        (receipt["state"].as_str(), receipt["target"].as_str()),
        (Some("pending"), Some("next-step"))
    );
    let (code, _) = w.gw.post(&format!("/v1/sessions/{s}/queue/unknown/steer"), json!({})).await;
    assert_eq!(code, 404);
    gate.notify_one();

    frames.extend(sse.until_idle().await);
    assert_eq!(
        entered(&frames),
        [(1, m1), (1, m2.clone())],
        "the promoted message enters turn 1 at its next step"
    );
    let (_, receipt) = w.gw.get(&format!("/v1/sessions/{s}/messages/{m2}")).await;
    assert_eq!((receipt["state"].as_str(), receipt["turn"].as_u64()), (Some("claimed"), Some(1)));
}

#[tokio::test]
async fn steer_and_inject_sent_while_running_enter_the_same_turn() {
    let (w, s, mut sse, gate) = holding("working on it", [Reply::text("Adjusted.", 1)]).await;
    let m1 = w.send(&s, json!({"content": "work"})).await;
    let mut frames = sse.until(first_chunk).await;
    let ctx = w.send(&s, json!({"content": "fyi", "delivery": "inject"})).await;
    let steer = w.send(&s, json!({"content": "go left", "delivery": "steer"})).await;
    gate.notify_one();
    frames.extend(sse.until_idle().await);
    assert_eq!(entered(&frames), [(1, m1), (1, ctx), (1, steer)]);
    let turns = types(&frames).iter().filter(|t| *t == "turn/start").count();
    assert_eq!(turns, 1);
}

#[tokio::test]
async fn cancel_keeps_the_queue_parked_by_default_and_clears_it_with_keep_inbox_false() {
    let w = world().await;
    w.mock.push(endless()).push(endless());
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    w.send(&s, json!({"content": "one"})).await;
    let m2 = w.send(&s, json!({"content": "two"})).await;
    sse.until(first_chunk).await;

    let (code, body) = w.gw.post(&format!("/v1/sessions/{s}/cancel"), json!({})).await;
    assert_eq!((code, body), (202, json!({"accepted": true})));
    let frames = sse.until(|f| *f == Frame::Status("idle".into())).await;
    let ended = frames.iter().find_map(|f| match f {
        Frame::Event(_, e) if e["type"] == "turn/end" => Some(e["data"]["reason"].clone()),
        _ => None,
    });
    assert_eq!(ended, Some(json!({"kind": "aborted", "reason": {"kind": "user"}})));
    let (_, queue) = w.gw.get(&format!("/v1/sessions/{s}/queue")).await;
    assert_eq!(queue["items"][0]["messageId"], m2.as_str(), "parked, not eaten");

    let m3 = w.send(&s, json!({"content": "three"})).await;
    let frames = sse.until(first_chunk).await;
    assert_eq!(
        entered(&frames).first().map(|(_, id)| id.as_str()),
        Some(m2.as_str()),
        "the parked item runs first"
    );
    w.gw.post(&format!("/v1/sessions/{s}/cancel"), json!({"keepInbox": false})).await;
    let frames = sse.until(|f| *f == Frame::Status("idle".into())).await;
    let canceled = frames.iter().any(|f| matches!(f, Frame::Event(_, e) if e["type"] == "agent/inbox/spliced" && e["data"]["outcome"] == "canceled"));
    assert!(canceled, "keepInbox:false clears the queue with a canceled splice");
    let (_, queue) = w.gw.get(&format!("/v1/sessions/{s}/queue")).await;
    assert_eq!(queue["items"], json!([]));
    let (_, receipt) = w.gw.get(&format!("/v1/sessions/{s}/messages/{m3}")).await;
    assert_eq!(receipt["state"], "canceled");
}

#[tokio::test]
async fn a_subscriber_that_reads_nothing_does_not_slow_the_turn_and_later_gets_everything() {
    let w = world().await;
    // Enough text to overflow the socket buffers and the stream's channel of the idle reader.
    let long: String = (0..20_000).map(|i| format!("word{i} ")).collect();
    w.mock.push(Reply::text(&long, 2_000));
    let s = w.gw.session().await;
    let mut idle_reader = w.gw.sse(&s, None).await;
    let mut reader = w.gw.sse(&s, None).await;
    w.send(&s, json!({"content": "talk a lot"})).await;
    let live = reader.until_idle().await;
    let late = idle_reader.until_idle().await;
    assert_eq!(seqs(&late), seqs(&live));
    assert_eq!(seqs(&live), (0..seqs(&live).len() as u64).collect::<Vec<_>>());
}

#[tokio::test]
async fn the_cross_session_stream_announces_sessions_and_their_status() {
    let w = world().await;
    let res = w.gw.client.get(w.gw.url("/v1/events")).send().await.unwrap();
    let mut hub = eventsource_stream::Eventsource::eventsource(res.bytes_stream());
    let s = w.gw.session().await;
    let mut next = async || {
        let frame = tokio::time::timeout(Duration::from_secs(30), hub.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        (frame.event, serde_json::from_str::<Value>(&frame.data).unwrap())
    };
    assert_eq!(next().await, ("session.added".into(), json!({"sessionId": s})));
    w.send(&s, json!({"content": "hi"})).await;
    assert_eq!(
        next().await,
        ("session.status".into(), json!({"sessionId": s, "status": "running"}))
    );
    assert_eq!(next().await, ("session.status".into(), json!({"sessionId": s, "status": "idle"})));
    let deleted = w.gw.client.delete(w.gw.url(&format!("/v1/sessions/{s}"))).send().await.unwrap();
    assert_eq!(deleted.status(), 202);
    assert_eq!(next().await, ("session.removed".into(), json!({"sessionId": s})));
}

#[tokio::test]
async fn a_disposed_session_refuses_input_and_keeps_its_log_readable() {
    let w = world().await;
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    w.send(&s, json!({"content": "hi"})).await;
    sse.until_idle().await;
    let deleted = w.gw.client.delete(w.gw.url(&format!("/v1/sessions/{s}"))).send().await.unwrap();
    assert_eq!(deleted.status(), 202);
    let (code, body) =
        w.gw.post(&format!("/v1/sessions/{s}/messages"), json!({"content": "more"})).await;
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("session-disposed")));
    let (code, session) = w.gw.get(&format!("/v1/sessions/{s}")).await;
    assert_eq!((code, session["disposed"].as_bool()), (200, Some(true)));
    assert!(!w.gw.log(&s).await.is_empty());
}

#[tokio::test]
async fn disposing_an_idle_session_cancels_its_parked_items() {
    let w = world().await;
    w.mock.push(endless());
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    w.send(&s, json!({"content": "one"})).await;
    let parked = w.send(&s, json!({"content": "two"})).await;
    sse.until(first_chunk).await;
    w.gw.post(&format!("/v1/sessions/{s}/cancel"), json!({})).await;
    sse.until(|f| *f == Frame::Status("idle".into())).await;
    let (_, receipt) = w.gw.get(&format!("/v1/sessions/{s}/messages/{parked}")).await;
    assert_eq!(receipt["state"], "pending", "parked while the session lives");

    let res = w.gw.client.delete(w.gw.url(&format!("/v1/sessions/{s}"))).send().await.unwrap();
    assert_eq!(res.status(), 202);
    let (_, receipt) = w.gw.get(&format!("/v1/sessions/{s}/messages/{parked}")).await;
    assert_eq!(receipt["state"], "canceled", "{receipt}");
    let last = w.gw.log(&s).await.pop().unwrap();
    assert_eq!(last["data"]["outcome"], "canceled", "{last}");
}

#[tokio::test]
async fn queue_edit_and_remove_write_canceled_splices_and_receipts_follow_the_message() {
    let w = world().await;
    let gw = &w.gw;
    let s = gw.session().await;
    let (code, injected) = gw
        .post(
            &format!("/v1/sessions/{s}/messages"),
            json!({"content": "ctx", "delivery": "inject"}),
        )
        .await;
    assert_eq!(code, 202);
    let id = injected["messageId"].as_str().unwrap().to_owned();
    let (_, queue) = gw.get(&format!("/v1/sessions/{s}/queue")).await;
    assert_eq!(queue["items"][0]["delivery"], "inject");
    assert_eq!(queue["items"][0]["target"], "next-step");

    let edited = gw
        .client
        .patch(gw.url(&format!("/v1/sessions/{s}/queue/{id}")))
        .json(&json!({"content": "ctx, edited"}))
        .send()
        .await
        .unwrap();
    assert_eq!(edited.status(), 200);
    let (_, queue) = gw.get(&format!("/v1/sessions/{s}/queue")).await;
    assert_eq!(queue["items"][0]["messageId"], id.as_str(), "same message id");
    assert_eq!(queue["items"][0]["message"]["content"][0]["text"], "ctx, edited");

    let (code, body) = gw.post(&format!("/v1/sessions/{s}/queue/{id}/steer"), json!({})).await;
    assert_eq!((code, body["error"]["code"].as_str()), (409, Some("steer-unavailable")));

    let (_, receipt) = gw.get(&format!("/v1/sessions/{s}/messages/{id}")).await;
    assert_eq!(receipt["state"], "pending");
    let removed =
        gw.client.delete(gw.url(&format!("/v1/sessions/{s}/queue/{id}"))).send().await.unwrap();
    assert_eq!(removed.status(), 200);
    let (_, receipt) = gw.get(&format!("/v1/sessions/{s}/messages/{id}")).await;
    assert_eq!(receipt["state"], "canceled");
    let again =
        gw.client.delete(gw.url(&format!("/v1/sessions/{s}/queue/{id}"))).send().await.unwrap();
    assert_eq!(again.status(), 404);
    let (code, body) = gw.get(&format!("/v1/sessions/{s}/messages/nope")).await;
    assert_eq!((code, body["error"]["code"].as_str()), (404, Some("message-not-found")));

    let (_, sent) = gw.post(&format!("/v1/sessions/{s}/messages"), json!({"content": "hi"})).await;
    let mid = sent["messageId"].as_str().unwrap();
    let (_, receipt) = gw.get(&format!("/v1/sessions/{s}/messages/{mid}")).await;
    let claimed =
        (receipt["state"].as_str(), receipt["turn"].as_u64(), receipt["claimedSeq"].as_u64());
    assert_eq!(
        claimed,
        (Some("claimed"), Some(1), Some(sent["seq"].as_u64().unwrap() + 2)),
        "a waking send on an idle agent is claimed at once"
    );
}

#[tokio::test]
async fn cancel_on_an_idle_agent_is_a_no_op() {
    let w = world().await;
    let gw = &w.gw;
    let s = gw.session().await;
    gw.post(&format!("/v1/sessions/{s}/messages"), json!({"content": "x", "delivery": "inject"}))
        .await;
    let (code, body) =
        gw.post(&format!("/v1/sessions/{s}/cancel"), json!({"keepInbox": false})).await;
    assert_eq!((code, body), (202, json!({"accepted": true})));
    assert_eq!(gw.log(&s).await.len(), 1, "nothing written, the queue kept");
}
