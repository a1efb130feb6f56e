//! What people expect of a chat page (issue 44): copy a message, regenerate an answer and edit a
//! message (each a fork from before its turn, the old branch kept and a link away), code blocks
//! highlighted, and the session list searched and disposed from.

use airlock_tests::Reply;
use serde_json::json;

use super::{conversation, opened};

#[tokio::test]
#[ignore = "needs Chromium and playwright-core; .ci/run installs them"]
async fn regenerate_and_edit_make_a_fork_from_before_the_turn_and_the_old_branch_stays() {
    let (w, mut page) = opened().await;
    let first = page.new_session().await;
    w.mock.push(Reply::text("First answer.", 1));
    page.send("hello", "followup").await;
    page.wait_text(".msg.assistant", "First answer.").await;

    // Copy puts the answer's text on the clipboard.
    page.click(".msg.assistant button[data-label='copy']").await;
    page.wait_count(".msg.assistant button[data-label='copied']", 1).await;
    assert_eq!(page.run(json!({"do": "clipboard"})).await, "First answer.");

    // Regenerate: a fork from before the turn, where the same message is answered again.
    w.mock.push(Reply::text("Second answer.", 1));
    page.click(".msg.assistant button[data-label='regenerate']").await;
    page.wait_text(".msg.assistant", "Second answer.").await;
    let second = page.shown_session().await;
    assert_ne!(second, first);
    assert_eq!(page.texts(".msg.user").await, ["hello"]);
    assert_eq!(page.texts(".msg.assistant").await, ["Second answer."]);
    page.wait_text("#session-parent a.fork-link", "hello").await;
    let (_, view) = w.gw.get(&format!("/v1/sessions/{second}")).await;
    assert_eq!(view["forkedFrom"]["sessionId"], first.as_str());

    // Edit: the message changed, sent in a fork from before its turn.
    w.mock.push(Reply::text("Third answer.", 1));
    page.click(".msg.user button[data-label='edit']").await;
    page.fill(".msg.user form.edit textarea", "hello again").await;
    page.click(".msg.user form.edit button[type='submit']").await;
    page.wait_text(".msg.assistant", "Third answer.").await;
    let third = page.shown_session().await;
    assert!(third != first && third != second);
    assert_eq!(page.texts(".msg.user").await, ["hello again"]);
    let asked = w.mock.requests()[2]["messages"].to_string();
    assert!(asked.contains("hello again") && !asked.contains("First answer"), "{asked}");

    // The old branches are as they were, a link away.
    page.click("#session-parent a.fork-link").await;
    page.wait_text(".msg.assistant", "Second answer.").await;
    assert_eq!(page.shown_session().await, second);
    let log = w.gw.log(&first).await;
    let answers: Vec<_> = log.iter().filter(|e| e["type"] == "assistant/message").collect();
    assert_eq!(answers.len(), 1, "the first branch has its one answer still");
    page.assert_clean().await;
}

#[tokio::test]
#[ignore = "needs Chromium and playwright-core; .ci/run installs them"]
async fn code_blocks_are_highlighted_by_the_vendored_highlighter() {
    let (w, mut page) = opened().await;
    page.new_session().await;
    let code = "```rust\nfn main() {\n    let answer = 42;\n}\n```";
    w.mock.push(Reply::text(&format!("Here:\n\n{code}"), 3));
    page.send("show me code", "followup").await;
    page.wait_count(".msg.assistant pre code.hljs.language-rust", 1).await;
    let keywords = page.texts(".msg.assistant pre code .hljs-keyword").await;
    assert_eq!(keywords, ["fn", "let"], "coloured as Rust");
    let text = page.texts(".msg.assistant pre code").await;
    assert_eq!(text, ["fn main() {\n    let answer = 42;\n}\n"], "the code itself unchanged");
    page.assert_clean().await;
}

#[tokio::test]
#[ignore = "needs Chromium and playwright-core; .ci/run installs them"]
async fn the_session_list_is_searched_by_title_and_a_session_disposed_from_it() {
    let (w, mut page) = opened().await;
    for (text, answer) in [("plan the release", "Planned."), ("count the sheep", "Counted.")] {
        page.new_session().await;
        w.mock.push(Reply::text(answer, 1));
        page.send(text, "followup").await;
        page.wait_text(".msg.assistant", answer).await;
    }
    page.wait_count("#sessions .name", 2).await;
    page.fill("#session-search", "SHEEP").await;
    assert_eq!(page.texts("#sessions .name").await, ["count the sheep"]);
    page.fill("#session-search", "nothing like it").await;
    assert_eq!(page.texts("#sessions li").await, ["No session matches"]);
    page.fill("#session-search", "").await;
    assert_eq!(page.texts("#sessions .name").await, ["count the sheep", "plan the release"]);

    let plan = page
        .run(json!({"do": "attributes", "selector": "#sessions li", "name": "data-session-id"}));
    let plan = plan.await[1].as_str().unwrap().to_owned();
    let row = format!("#sessions li[data-session-id='{plan}'] > button.dispose");
    page.run(json!({"do": "click", "selector": row, "answer": ""})).await;
    page.wait_count("#sessions .name", 1).await;
    let (_, view) = w.gw.get(&format!("/v1/sessions/{plan}")).await;
    assert_eq!(view["disposed"], true);
    assert_eq!(conversation(&mut page).await.len(), 3, "the open session stays as it was");
    page.assert_clean().await;
}

#[tokio::test]
#[ignore = "needs Chromium and playwright-core; .ci/run installs them"]
async fn a_session_renamed_from_its_header_keeps_the_title_in_its_metadata_across_a_reload() {
    let (w, mut page) = opened().await;
    let s = page.new_session().await;
    w.mock.push(Reply::text("Sure.", 1));
    page.send("plan the launch", "followup").await;
    page.wait_text("#session-title", "plan the launch").await;
    page.click("#rename").await;
    page.fill("#rename-input", "Launch plan").await;
    page.run(json!({"do": "press", "key": "Enter"})).await;
    page.wait_text("#session-title", "Launch plan").await;
    page.wait_text("#sessions a[aria-current='page'] .name", "Launch plan").await;
    let (_, view) = w.gw.get(&format!("/v1/sessions/{s}")).await;
    assert_eq!(view["metadata"], json!({"title": "Launch plan"}));
    page.run(json!({"do": "reload"})).await;
    page.wait_text("#session-title", "Launch plan").await;
    page.assert_clean().await;
}
