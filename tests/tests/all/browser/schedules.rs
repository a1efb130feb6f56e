//! The page and schedules: a session's schedules listed below its conversation, made from the
//! page's form, paused and deleted there; the messages they send appear in the conversation.

use airlock_tests::Reply;
use airlock_tests::page::Page;
use airlock_tests::world::world_with;
use serde_json::json;

#[tokio::test]
#[ignore = "needs Chromium and playwright-core; .ci/run installs them"]
async fn the_page_makes_pauses_and_deletes_a_sessions_schedules_and_shows_what_they_send() {
    let w = world_with(&[("AIRLOCK_MODEL", "openai:mock")]).await;
    w.mock.otherwise(|_| Reply::text("Done.", 1));
    let mut page = Page::launch();
    page.run(json!({"do": "open", "url": w.gw.url("/")})).await;
    let s = page.new_session().await;

    page.fill("#schedule-cron", "* * * * * *").await;
    page.fill("#schedule-zone", "Europe/Paris").await;
    page.fill("#schedule-content", "tick from the schedule").await;
    page.click("#schedule-add").await;
    page.wait_text("#schedule-items", "tick from the schedule").await;
    page.wait_text("#conversation", "tick from the schedule").await;
    let (_, listed) = w.gw.get("/v1/schedules").await;
    let schedule = &listed["items"][0];
    assert_eq!(schedule["sessionId"], s.as_str());
    assert_eq!(schedule["timezone"], "Europe/Paris");

    page.click("#schedule-items li button").await; // Pause
    page.wait_text("#schedule-items", "paused").await;
    let (_, paused) =
        w.gw.get(&format!("/v1/schedules/{}", schedule["id"].as_str().unwrap())).await;
    assert_eq!(paused["paused"], true);
    page.click("#schedule-items li button:last-child").await; // Delete
    page.wait_count("#schedule-items li", 0).await;
    let (_, listed) = w.gw.get("/v1/schedules").await;
    assert_eq!(listed["items"], json!([]));
    page.assert_clean().await;
}
