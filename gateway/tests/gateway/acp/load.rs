//! `session/load`: a stored session's log replayed to the editor as updates, after a restart and
//! beside a session this gateway cannot run.

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, ImageContent, InitializeRequest, LoadSessionRequest,
    PromptRequest, SessionId, SessionUpdate, StopReason,
};
use airlock_tests::{MockModel, Reply};
use serde_json::{Value, json};

use super::common::acp::{Airlock, open};
use super::{first_text, held, http, message_text, prompt, received, text};

#[tokio::test]
async fn acp_session_load_replays_the_log_as_updates() {
    let (dir, mock) = (tempfile::tempdir().unwrap(), MockModel::start().await);
    mock.push(Reply::text("Remembered answer.", 2));
    let mut first = Airlock::start(dir.path(), &mock, &[]).await;
    let session = first
        .in_session(async |cx, session, _updates| {
            cx.send_request(prompt(&session, "remember this")).block_task().await?;
            Ok(session)
        })
        .await;
    first.stop().await; // a second process on the data file waits for the first to be gone

    let mut second = Airlock::start(dir.path(), &mock, &[]).await;
    second
        .client(async |cx, mut updates| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            cx.send_request(LoadSessionRequest::new(session.clone(), "/tmp")).block_task().await?;
            let replayed = received(&mut updates);
            let user: Vec<String> = replayed
                .iter()
                .filter_map(|u| match u {
                    SessionUpdate::UserMessageChunk(chunk) => Some(text(chunk)),
                    _ => None,
                })
                .collect();
            assert_eq!(user, ["remember this"]);
            assert_eq!(message_text(&replayed), "Remembered answer.");
            let unknown = LoadSessionRequest::new(SessionId::new("nobody"), "/tmp");
            let error = cx.send_request(unknown).block_task().await.unwrap_err();
            assert_eq!(error.code.value(), -32002);
            Ok(())
        })
        .await;
}

/// Each prompt's stop reason comes from the turn that claimed it, not from the last turn of its
/// interval: one interval ends `max-tokens` then `completed`, the other the other way round.
#[tokio::test]
async fn acp_starts_beside_a_stored_session_it_cannot_run_and_load_names_it_and_the_cause() {
    let (dir, mock) = (tempfile::tempdir().unwrap(), MockModel::start().await);
    let (reply, _gate) = held("never finished");
    mock.push(reply);
    let first = Airlock::start(dir.path(), &mock, &["--listen", "127.0.0.1:0"]).await;
    let sessions = format!("{}/v1/sessions", first.http.as_deref().unwrap());
    let created = http().post(&sessions).json(&json!({"model": "openai:mock"})).send().await;
    let session: Value = created.unwrap().json().await.unwrap();
    let id = session["sessionId"].as_str().unwrap().to_owned();
    let sent = http().post(format!("{sessions}/{id}/messages")).json(&json!({"content": "work"}));
    assert_eq!(sent.send().await.unwrap().status(), 202);
    mock.requested(1).await; // its turn is open: the next start must bring it back
    first.stop().await;

    // The model's endpoint now needs a key that is not set; new sessions use the demo.
    let mut second = Airlock::spawn(dir.path(), "https://example.invalid/v1", "demo", &[]).await;
    second
        .client(async |cx, _updates| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            let load = LoadSessionRequest::new(SessionId::new(id.clone()), "/tmp");
            let error = cx.send_request(load).block_task().await.unwrap_err();
            let said = format!("{error:?}");
            assert!(said.contains(&id) && said.contains("API key"), "{said}");
            let fresh = open(&cx).await?;
            let answer = cx.send_request(prompt(&fresh, "hello")).block_task().await?;
            assert_eq!(answer.stop_reason, StopReason::EndTurn);
            Ok(())
        })
        .await;
}

#[tokio::test]
async fn acp_session_load_replays_a_failed_a_cancelled_and_an_image_turn_visibly() {
    let (dir, mock) = (tempfile::tempdir().unwrap(), MockModel::start().await);
    let (slow, _never) = held("Partial ans");
    for reply in [Reply::status(401), slow, Reply::text("Saw it.", 1)] {
        mock.push(reply);
    }
    let mut first = Airlock::start(dir.path(), &mock, &[]).await;
    let session = first
        .in_session(async |cx, session, mut updates| {
            cx.send_request(prompt(&session, "fail")).block_task().await.unwrap_err();
            let running = cx.send_request(prompt(&session, "slow"));
            first_text(&mut updates).await;
            cx.send_notification(CancelNotification::new(session.clone()))?;
            assert_eq!(running.block_task().await?.stop_reason, StopReason::Cancelled);
            let gif = "R0lGODlhAQABAAAAACw=";
            let image = ContentBlock::Image(ImageContent::new(gif, "image/gif"));
            cx.send_request(PromptRequest::new(session.clone(), vec![image])).block_task().await?;
            Ok(session)
        })
        .await;
    first.stop().await;

    let mut second = Airlock::start(dir.path(), &mock, &[]).await;
    second
        .client(async |cx, mut updates| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            cx.send_request(LoadSessionRequest::new(session.clone(), "/tmp")).block_task().await?;
            let replayed = received(&mut updates);
            let said = message_text(&replayed);
            assert!(said.contains("*The turn failed: AUTH: "), "{said}");
            assert!(said.contains("\n\n*The turn was cancelled.*"), "{said}");
            assert!(said.ends_with("Saw it."), "{said}");
            let images = replayed.iter().filter(|u| {
                matches!(u, SessionUpdate::UserMessageChunk(c) if matches!(&c.content, ContentBlock::Image(i) if i.mime_type == "image/gif"))
            });
            assert_eq!(images.count(), 1, "the image prompt comes back as an image");
            Ok(())
        })
        .await;
}
