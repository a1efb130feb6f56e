//! `airlock acp` end to end: the `agent-client-protocol` crate's client side drives the real
//! binary over its stdin/stdout, its sessions answered by the mock model over HTTP. With
//! `--listen`, the test also reaches the same sessions over the HTTP API (steering, queue edits).

use crate::common;

mod load;

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, PromptRequest, RequestPermissionRequest, SessionId,
    SessionUpdate, StopReason, ToolCallStatus,
};
use airlock_tests::{MockModel, Reply};
use common::acp::{Airlock, Updates, in_session_answering, open};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::Notify;

fn prompt(session: &SessionId, text: &str) -> PromptRequest {
    PromptRequest::new(session.clone(), vec![ContentBlock::from(text.to_owned())])
}

/// Every update already received (the client handler has run for all of them once a response
/// resolves).
fn received(updates: &mut Updates) -> Vec<SessionUpdate> {
    std::iter::from_fn(|| updates.try_recv().ok()).collect()
}

/// Waits for the first streamed text.
async fn first_text(updates: &mut Updates) {
    while let Some(update) = updates.recv().await {
        if matches!(update, SessionUpdate::AgentMessageChunk(_)) {
            return;
        }
    }
    panic!("the updates ended before any text");
}

fn text(chunk: &agent_client_protocol::v1::schema::ContentChunk) -> String {
    match &chunk.content {
        ContentBlock::Text(text) => text.text.clone(),
        other => panic!("not text: {other:?}"),
    }
}

fn message_text(updates: &[SessionUpdate]) -> String {
    updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::AgentMessageChunk(chunk) => Some(text(chunk)),
            _ => None,
        })
        .collect()
}

fn held(text: &str) -> (Reply, Arc<Notify>) {
    let gate = Arc::new(Notify::new());
    (Reply::text(text, 3).hold_until(gate.clone()), gate)
}

fn http() -> reqwest::Client {
    airlock_providers::model::install_tls();
    reqwest::Client::new()
}

#[tokio::test]
async fn acp_text_turn_streams_agent_message_chunks_and_ends_end_turn() {
    // Pieces further apart than the host's 50 ms coalescing window: one chunk event each.
    let spaced = Reply::text("Hello there, editor.", 3).delay(Duration::from_millis(60));
    in_session_answering([spaced], async |cx, session, mut updates| {
        let answer = cx.send_request(prompt(&session, "hi")).block_task().await?;
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        let updates = received(&mut updates);
        let chunks = updates.iter().filter(|u| matches!(u, SessionUpdate::AgentMessageChunk(_)));
        assert_eq!(chunks.count(), 3, "streamed, one update per committed chunk");
        assert_eq!(message_text(&updates), "Hello there, editor.");
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn acp_reasoning_streams_agent_thought_chunks() {
    in_session_answering(
        [Reply::text("Done.", 1).reasoning("Let me think.", 2)],
        async |cx, session, mut updates| {
            cx.send_request(prompt(&session, "think")).block_task().await?;
            let thoughts: String = received(&mut updates)
                .iter()
                .filter_map(|u| match u {
                    SessionUpdate::AgentThoughtChunk(chunk) => Some(text(chunk)),
                    _ => None,
                })
                .collect();
            assert_eq!(thoughts, "Let me think.");
            Ok(())
        },
    )
    .await;
}

#[tokio::test]
async fn acp_correlated_max_tokens_turn_stops_max_tokens() {
    in_session_answering(
        [Reply::text("Cut sh", 1).finish_length()],
        async |cx, session, _updates| {
            let answer = cx.send_request(prompt(&session, "long")).block_task().await?;
            assert_eq!(answer.stop_reason, StopReason::MaxTokens);
            Ok(())
        },
    )
    .await;
}

#[tokio::test]
async fn acp_correlated_provider_error_fails_the_prompt_with_a_json_rpc_error() {
    in_session_answering([Reply::status(401)], async |cx, session, _updates| {
        let error = cx.send_request(prompt(&session, "hi")).block_task().await.unwrap_err();
        assert_eq!(error.code.value(), -32603);
        assert!(error.message.starts_with("AUTH: "), "{}", error.message);
        assert_eq!(error.data.as_ref().unwrap()["code"], "AUTH");
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn acp_session_cancel_during_a_slow_stream_stops_cancelled() {
    let (reply, _never) = held("This answer never ends.");
    in_session_answering([reply], async |cx, session, mut updates| {
        let running = cx.send_request(prompt(&session, "slow"));
        first_text(&mut updates).await;
        cx.send_notification(CancelNotification::new(session.clone()))?;
        assert_eq!(running.block_task().await?.stop_reason, StopReason::Cancelled);
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn acp_second_concurrent_prompt_is_refused_naming_the_reason() {
    let (reply, gate) = held("First one.");
    let (_dir, mock, mut airlock) = Airlock::answering([reply], false).await;
    airlock
        .in_session(async |cx, session, mut updates| {
            let first = cx.send_request(prompt(&session, "one"));
            first_text(&mut updates).await;
            let error = cx.send_request(prompt(&session, "two")).block_task().await.unwrap_err();
            assert!(error.message.contains("already in flight"), "{}", error.message);
            gate.notify_one();
            assert_eq!(first.block_task().await?.stop_reason, StopReason::EndTurn);
            assert_eq!(mock.requests().len(), 1, "the refused prompt never reached the model");
            Ok(())
        })
        .await;
}

#[tokio::test]
async fn acp_tool_turn_sends_tool_call_and_tool_call_update() {
    in_session_answering(
        [Reply::tool_call("call-1", "echo", r#"{"text":"hi"}"#, 2), Reply::text("Echoed.", 1)],
        async |cx, session, mut updates| {
            let answer = cx.send_request(prompt(&session, "echo hi")).block_task().await?;
            assert_eq!(answer.stop_reason, StopReason::EndTurn);
            let updates = received(&mut updates);
            let call = updates.iter().find_map(|u| match u {
                SessionUpdate::ToolCall(call) => Some(call),
                _ => None,
            });
            let call = call.expect("a tool_call update");
            assert_eq!(call.tool_call_id.0.as_ref(), "call-1");
            assert_eq!(call.title, "echo");
            assert_eq!(call.raw_input, Some(json!({"text": "hi"})));
            let done = updates.iter().find_map(|u| match u {
                SessionUpdate::ToolCallUpdate(update) => Some(update),
                _ => None,
            });
            let done = done.expect("a tool_call_update");
            assert_eq!(done.tool_call_id.0.as_ref(), "call-1");
            assert_eq!(done.fields.status, Some(ToolCallStatus::Completed));
            let content = serde_json::to_value(&done.fields.content).unwrap();
            assert_eq!(content[0]["content"]["text"], "echo: hi");
            assert_eq!(message_text(&updates), "Echoed.");
            Ok(())
        },
    )
    .await;
}

/// One `echo hi` turn of `airlock acp --approval-for echo`, whose model calls `echo` once and
/// then answers, the client answering the permission request with the option `choice`: the turn
/// ends `end_turn`. Answers the model's mock, the session, the permission requests the client
/// was sent and the status of the call's result.
async fn echo_answered(
    choice: &'static str,
) -> (MockModel, SessionId, Vec<RequestPermissionRequest>, Option<ToolCallStatus>) {
    let (dir, mock) = (tempfile::tempdir().unwrap(), MockModel::start().await);
    mock.push(Reply::tool_call("call-1", "echo", r#"{"text":"hi"}"#, 1))
        .push(Reply::text("Done.", 1));
    let mut airlock = Airlock::start(dir.path(), &mock, &["--approval-for", "echo"]).await;
    let (session, asked, status) = airlock
        .client_choosing(choice, async |cx, mut updates, mut asked| {
            let session = open(&cx).await?;
            let answer = cx.send_request(prompt(&session, "echo hi")).block_task().await?;
            assert_eq!(answer.stop_reason, StopReason::EndTurn);
            let status = received(&mut updates).iter().find_map(|u| match u {
                SessionUpdate::ToolCallUpdate(update) => update.fields.status,
                _ => None,
            });
            Ok((session, std::iter::from_fn(|| asked.try_recv().ok()).collect(), status))
        })
        .await;
    (mock, session, asked, status)
}

/// The last message of the model's request number `index`, as JSON text.
fn last_message(mock: &MockModel, index: usize) -> String {
    mock.requests()[index]["messages"].as_array().unwrap().last().unwrap().to_string()
}

#[tokio::test]
async fn acp_a_call_waiting_for_approval_asks_the_client_and_allow_completes_the_turn() {
    let (mock, session, asked, status) = echo_answered("allow-once").await;
    let [request] = asked.as_slice() else { panic!("one session/request_permission: {asked:?}") };
    assert_eq!(request.session_id, session);
    assert_eq!(request.tool_call.tool_call_id.0.as_ref(), "call-1");
    assert_eq!(request.tool_call.fields.title.as_deref(), Some("echo"));
    assert_eq!(request.tool_call.fields.raw_input, Some(json!({"text": "hi"})));
    let kinds: Vec<String> = request.options.iter().map(|o| format!("{:?}", o.kind)).collect();
    assert_eq!(kinds, ["AllowOnce", "RejectOnce"]);
    assert_eq!(status, Some(ToolCallStatus::Completed));
    let last = last_message(&mock, 1);
    assert!(last.contains("echo: hi"), "the call ran: {last}");
}

#[tokio::test]
async fn acp_rejecting_a_permission_request_denies_the_call() {
    let (mock, _session, asked, status) = echo_answered("reject-once").await;
    assert_eq!(asked.len(), 1, "the client was asked");
    assert_eq!(status, Some(ToolCallStatus::Failed));
    let last = last_message(&mock, 1);
    assert!(last.contains("DENIED_BY_USER"), "the model saw the denial: {last}");
}

#[tokio::test]
async fn acp_turn_that_also_consumed_steering_still_ends_end_turn() {
    let (reply, gate) = held("Working on it.");
    let (_dir, mock, mut airlock) =
        Airlock::answering([reply, Reply::text("Steered as asked.", 1)], true).await;
    let base = airlock.http.clone().unwrap();
    airlock
        .in_session(async |cx, session, mut updates| {
            let running = cx.send_request(prompt(&session, "start"));
            first_text(&mut updates).await;
            let url = format!("{base}/v1/sessions/{}/messages", session.0);
            let steer = json!({"content": "and also this", "delivery": "steer"});
            let res = http().post(url).json(&steer).send().await.unwrap();
            assert_eq!(res.status(), 202);
            gate.notify_one();
            assert_eq!(running.block_task().await?.stop_reason, StopReason::EndTurn);
            let requests = mock.requests();
            assert_eq!(requests.len(), 2, "the steering entered a second step of the turn");
            assert!(requests[1].to_string().contains("and also this"));
            Ok(())
        })
        .await;
}

#[tokio::test]
async fn acp_a_prompt_past_the_sessions_budget_stops_max_turn_requests_saying_why() {
    let replies = [Reply::text("First.", 1).usage(10, 2), Reply::text("After the raise.", 1)];
    let (_dir, mock, mut airlock) = Airlock::answering(replies, true).await;
    let base = airlock.http.clone().unwrap();
    airlock
        .in_session(async |cx, session, mut updates| {
            let budget = format!("{base}/v1/sessions/{}/budget", session.0);
            let res = http().patch(&budget).json(&json!({"tokens": 5})).send().await.unwrap();
            assert_eq!(res.status(), 200);
            let first = cx.send_request(prompt(&session, "one")).block_task().await?;
            assert_eq!(first.stop_reason, StopReason::EndTurn, "nothing was spent before it");
            received(&mut updates);
            let second = cx.send_request(prompt(&session, "two")).block_task().await?;
            assert_eq!(second.stop_reason, StopReason::MaxTurnRequests);
            let said = message_text(&received(&mut updates));
            assert!(
                said.contains("Paused: the session's budget is spent (12 of 5 tokens)"),
                "{said}"
            );
            assert_eq!(mock.requests().len(), 1, "the second prompt waits in the queue");
            let res = http().patch(&budget).json(&json!({"tokens": 100})).send().await.unwrap();
            assert_eq!(res.status(), 200);
            let mut said = String::new();
            while !said.contains("After the raise.") {
                if let Some(SessionUpdate::AgentMessageChunk(chunk)) = updates.recv().await {
                    said += &text(&chunk);
                }
            }
            Ok(())
        })
        .await;
}

#[tokio::test]
async fn acp_prompt_removed_before_it_was_claimed_stops_cancelled() {
    let (reply, gate) = held("Busy with other work.");
    let (_dir, mock, mut airlock) = Airlock::answering([reply], true).await;
    let base = airlock.http.clone().unwrap();
    airlock
        .in_session(async |cx, session, _updates| {
            let sessions = format!("{base}/v1/sessions/{}", session.0);
            // Other work keeps the agent running, so the prompt waits in the queue.
            let busy = json!({"content": "other work"});
            let res = http().post(format!("{sessions}/messages")).json(&busy).send().await.unwrap();
            assert_eq!(res.status(), 202);
            mock.requested(1).await;
            let mut queue = http()
                .get(format!("{sessions}/events"))
                .send()
                .await
                .unwrap()
                .bytes_stream()
                .eventsource();
            let waiting = cx.send_request(prompt(&session, "later"));
            let queued = loop {
                let frame = queue.next().await.unwrap().unwrap();
                let data: Value = serde_json::from_str(&frame.data).unwrap_or_default();
                // The prompt's insert splice: it waits in the queue.
                let inserted = data["data"]["inserted"].as_array().and_then(|i| i.first());
                if frame.event == "session.event"
                    && data["type"] == "agent/inbox/spliced"
                    && let Some(message) = inserted.filter(|m| m["content"][0]["text"] == "later")
                {
                    break message["id"].as_str().unwrap().to_owned();
                }
            };
            let res = http().delete(format!("{sessions}/queue/{queued}")).send().await.unwrap();
            assert_eq!(res.status(), 200);
            gate.notify_one();
            assert_eq!(waiting.block_task().await?.stop_reason, StopReason::Cancelled);
            Ok(())
        })
        .await;
}

#[tokio::test]
async fn acp_stop_reason_comes_from_the_turn_that_claimed_the_prompt() {
    let (gate_one, gate_three) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (_dir, mock, mut airlock) = Airlock::answering(
        [
            Reply::text("Cut sh", 2).finish_length().hold_until(gate_one.clone()),
            Reply::text("Followup done.", 1),
            Reply::text("Also cut sh", 2).finish_length().hold_until(gate_three.clone()),
            Reply::text("Prompt answered.", 1),
        ],
        true,
    )
    .await;
    let base = airlock.http.clone().unwrap();
    airlock
        .in_session(async |cx, session, mut updates| {
            let messages = format!("{base}/v1/sessions/{}/messages", session.0);
            let followup = async |text: &str| {
                let res = http().post(&messages).json(&json!({"content": text})).send().await;
                assert_eq!(res.unwrap().status(), 202);
            };

            // Turn 1 claims the prompt and ends max-tokens; turn 2 (an HTTP followup) completes.
            let first = cx.send_request(prompt(&session, "first prompt"));
            first_text(&mut updates).await;
            followup("a followup from elsewhere").await;
            gate_one.notify_one();
            assert_eq!(first.block_task().await?.stop_reason, StopReason::MaxTokens);

            // Turn 3 (an HTTP followup) ends max-tokens; turn 4 claims the prompt and completes.
            let mut events = http()
                .get(format!("{base}/v1/sessions/{}/events", session.0))
                .send()
                .await
                .unwrap()
                .bytes_stream()
                .eventsource();
            followup("another followup").await;
            mock.requested(3).await;
            let second = cx.send_request(prompt(&session, "second prompt"));
            loop {
                let frame = events.next().await.unwrap().unwrap();
                let event: Value = serde_json::from_str(&frame.data).unwrap_or_default();
                let inserted = &event["data"]["inserted"][0]["content"][0]["text"];
                if event["type"] == "agent/inbox/spliced" && inserted == "second prompt" {
                    break; // admitted behind the running turn
                }
            }
            gate_three.notify_one();
            assert_eq!(second.block_task().await?.stop_reason, StopReason::EndTurn);
            assert_eq!(mock.requests().len(), 4);
            Ok(())
        })
        .await;
}
