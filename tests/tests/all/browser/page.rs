//! The page as a newcomer meets it (issue 44): typing starts a session, titles are words, the
//! header names the model, a denied call reads as one, and the page fits a phone.

use std::path::Path;

use airlock_tests::Reply;
use serde_json::json;

use super::{approving_echo, opened};

#[tokio::test]
#[ignore = "needs Chromium and playwright-core; .ci/run installs them"]
async fn typing_into_an_empty_page_starts_a_session_whose_header_names_its_model() {
    let (w, mut page) = opened().await;
    let focused = page.run(json!({"do": "focused"})).await;
    assert_eq!(focused, "textarea#message", "the composer waits for the first words");
    let message = page.run(json!({"do": "field", "selector": "#message"})).await;
    assert_eq!(message["disabled"], false, "{message}");
    assert!(message["placeholder"].as_str().unwrap().contains("start a new session"));

    w.mock.push(Reply::text("Started without a click.", 2));
    page.send("hello there", "followup").await;
    page.wait_text(".msg.assistant", "Started without a click.").await;
    let id = page.shown_session().await;
    let log = w.gw.log(&id).await;
    assert!(log.iter().any(|e| e["type"] == "user/message"), "the message went to {id}");
    page.wait_text("#sessions a[aria-current='page']", "hello there").await;
    page.wait_text("#session-model", "openai:mock").await;
    page.assert_clean().await;
}

#[tokio::test]
#[ignore = "needs Chromium and playwright-core; .ci/run installs them"]
async fn a_session_is_titled_by_the_words_of_its_first_message_not_its_markdown_or_json() {
    let (w, mut page) = opened().await;
    page.new_session().await;
    w.mock.push(Reply::text("Noted.", 1));
    page.send("## The **release** plan\n\n- ship it", "followup").await;
    page.wait_text("#session-title", "The release plan").await;
    page.wait_text("#sessions a[aria-current='page'] .name", "The release plan").await;

    page.new_session().await;
    w.mock.push(Reply::text("Counting.", 1));
    page.send(r#"{"priority": 2, "task": "count the sheep"}"#, "followup").await;
    page.wait_text("#session-title", "count the sheep").await;
    let names = page.texts("#sessions .name").await;
    assert_eq!(names, ["count the sheep", "The release plan"], "newest first, as words");
    page.assert_clean().await;
}

#[tokio::test]
#[ignore = "needs Chromium and playwright-core; .ci/run installs them"]
async fn a_denied_call_reads_denied_with_the_reason_once_not_its_code_twice() {
    let (w, mut page) = approving_echo().await;
    page.new_session().await;
    w.mock
        .push(Reply::tool_call("c1", "echo", r#"{"text":"hi"}"#, 1))
        .push(Reply::text("Understood.", 1));
    page.send("echo hi", "followup").await;
    page.fill(".tool .approval .reason", "not today").await;
    page.click(".tool .approval .deny").await;
    page.wait_text(".msg.assistant", "Understood.").await;
    let result = page.texts(".tool .result").await;
    assert_eq!(result, ["← denied, not run: not today"]);
    assert_eq!(page.texts(".tool .decided").await, ["denied: not today"]);
    page.assert_clean().await;
}

#[tokio::test]
#[ignore = "needs Chromium and playwright-core; .ci/run installs them"]
async fn at_390_px_the_page_fits_a_phone_and_the_session_list_slides_in() {
    let (w, mut page) = opened().await;
    page.run(json!({"do": "viewport", "width": 390, "height": 844})).await;
    w.mock.push(Reply::text(&format!("A long word: {}", "w".repeat(300)), 3));
    page.send("a first message from a phone", "followup").await;
    page.wait_text(".turn-end", "completed").await;
    let fits =
        json!({"do": "fits", "selector": "#main button, #main textarea, #main select, .msg"});
    let fits = page.run(fits).await;
    assert_eq!(fits["outside"], json!([]), "{fits}");
    assert_eq!(fits["scrollWidth"], 390, "{fits}");
    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let path = shots.join("web-demo-phone.png");
    page.run(json!({"do": "screenshot", "path": path, "scheme": "light"})).await;

    // The list is off the screen until "Sessions" slides it in; picking a session closes it.
    let visible = json!({"do": "visible", "selector": "#sessions a"});
    assert_eq!(page.run(visible.clone()).await, false, "the list waits off the screen");
    page.click("#nav-toggle").await;
    page.run(json!({"do": "waitVisible", "selector": "#sessions a", "text": "a first message"}))
        .await;
    page.click("#new-session").await;
    page.wait_text("#session-title", "New session").await;
    page.wait_text("#sessions a[aria-current='page']", "New session").await;
    assert_eq!(page.run(visible).await, false, "picking a session closed the list");
    page.assert_clean().await;
}

#[tokio::test]
#[ignore = "needs Chromium and playwright-core; .ci/run installs them"]
async fn a_call_approved_with_edited_arguments_runs_with_them_and_the_card_says_so() {
    let (w, mut page) = approving_echo().await;
    let s = page.new_session().await;
    w.mock
        .push(Reply::tool_call("c1", "echo", r#"{"text":"hi"}"#, 1))
        .push(Reply::text("Done.", 1));
    page.send("echo hi", "followup").await;
    page.click(".tool .approval .edit-arguments").await;
    page.fill(".tool .approval textarea.arguments", r#"{"text": "bye"}"#).await;
    page.click(".tool .approval .approve").await;
    page.wait_text(".msg.assistant", "Done.").await;
    page.wait_text(".tool .result", "echo: bye").await;
    page.wait_text(".tool .decided", r#"approved with edited arguments: {"text":"bye"}"#).await;
    let log = w.gw.log(&s).await;
    let approved =
        log.iter().find(|e| e["type"] == "tool/approval" && e["data"]["state"] == "approved");
    assert_eq!(approved.unwrap()["data"]["arguments"], r#"{"text":"bye"}"#);
    page.assert_clean().await;
}

/// A PNG of 2×1 pixels, in base64.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAYAAAD0In+KAAAADklEQVR4nGP4z8AAQv8BD/kD/YURmXYAAAAASUVORK5CYII=";

#[tokio::test]
#[ignore = "needs Chromium and playwright-core; .ci/run installs them"]
async fn images_picked_or_pasted_are_sent_as_image_blocks_and_shown_in_the_message() {
    let (w, mut page) = opened().await;
    let s = page.new_session().await;
    let file = |what: &str| json!({"do": what, "selector": "#attach-input", "name": "dot.png", "mimeType": "image/png", "base64": PNG});
    page.run(file("pick")).await;
    let mut pasted = file("pasteFile");
    pasted["selector"] = json!("#message");
    page.run(pasted).await;
    page.wait_count("#attachments img", 2).await;
    // A file that is no image is refused, saying what to attach.
    let mut text = file("pick");
    text["mimeType"] = json!("text/plain");
    page.run(text).await;
    page.wait_text(".note", "attach a PNG, JPEG, GIF or WebP image").await;

    w.mock.push(Reply::text("Two dots.", 1));
    page.send("what are these?", "followup").await;
    page.wait_text(".msg.assistant", "Two dots.").await;
    assert_eq!(
        page.run(json!({"do": "imageWidths", "selector": ".msg.user img"})).await,
        json!([2, 2])
    );
    page.wait_count("#attachments img", 0).await;
    let log = w.gw.log(&s).await;
    let sent = log.iter().find(|e| e["type"] == "user/message").unwrap();
    let image = json!({"type": "image", "mediaType": "image/png", "data": PNG});
    let text = json!({"type": "text", "text": "what are these?"});
    assert_eq!(sent["data"]["content"], json!([image, image, text]));
    let asked = w.mock.requests()[0]["messages"].to_string();
    assert!(asked.contains(&format!("data:image/png;base64,{PNG}")), "the model saw them: {asked}");
    let errors = page.run(json!({"do": "errors"})).await;
    assert_eq!(errors, json!([]), "the page threw");
}
