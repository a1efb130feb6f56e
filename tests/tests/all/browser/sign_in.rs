//! The page and a gateway with keys: signing in, straight to the gateway and behind the shipped
//! `deploy/nginx.conf` (Debian's nginx, `airlock_tests::nginx`).

use airlock_tests::gateway::{Gateway, keys};
use airlock_tests::nginx::Nginx;
use airlock_tests::page::Page;
use airlock_tests::{MockModel, Reply};
use serde_json::json;

/// A gateway whose data file has a key of the tenant `web` (answered with it), its model the mock.
async fn keyed(dir: &std::path::Path) -> (MockModel, Gateway, String) {
    let mock = MockModel::start().await;
    let data = dir.join("airlock.db");
    let key = keys(&data, &["create", "--tenant", "web"]);
    let env = [("AIRLOCK_MODEL", "openai:mock")];
    let gateway = Gateway::start_with(&data, &mock.base_url(), &env);
    (mock, gateway, key)
}

/// Signs in with `key` (of the tenant `web`), then sends in a new session, which the mock
/// answers with `reply`: the page's first steps with a keyed gateway.
async fn sign_in_and_send(page: &mut Page, mock: &MockModel, key: &str, reply: &str) {
    page.run(json!({"do": "signIn", "key": key})).await;
    page.wait_text("#tenant", "tenant web").await;
    page.run(json!({"do": "waitConnection", "state": "open"})).await;
    page.new_session().await;
    mock.push(Reply::text(reply, 3));
    page.send("hello", "followup").await;
    page.wait_text(".msg.assistant", reply).await;
    page.wait_text(".turn-end", "completed").await;
}

#[tokio::test]
#[ignore = "needs Chromium and playwright-core; .ci/run installs them"]
async fn the_page_signs_in_with_a_key_and_streams_with_an_http_only_cookie() {
    let dir = tempfile::tempdir().unwrap();
    let (mock, gw, key) = keyed(dir.path()).await;
    let mut page = Page::launch();
    page.run(json!({"do": "open", "url": gw.url("/")})).await;
    page.wait_text("#sign-in label", "API key").await;

    page.run(json!({"do": "signIn", "key": "ak_wrong"})).await;
    page.wait_text("#sign-in-why", "not valid").await;
    sign_in_and_send(&mut page, &mock, &key, "Signed in and streaming.").await;

    let cookies = page.run(json!({"do": "scriptCookies"})).await;
    assert_eq!(cookies, "", "the key cookie is HttpOnly: no script reads it");
    page.run(json!({"do": "reload"})).await;
    page.wait_text(".msg.assistant", "Signed in and streaming.").await;
    page.wait_text("#tenant", "tenant web").await;
    assert_eq!(page.run(json!({"do": "errors"})).await, json!([]), "the page threw");
}

/// Through nginx, the page is on the proxy's origin, and the gateway must see that origin in the
/// `Host` it gets (`$http_host`, port and all): with `$host` every change the page made after
/// sign-in was refused `cross-origin`.
#[tokio::test]
#[ignore = "needs Chromium, playwright-core and nginx; .ci/run installs them"]
async fn behind_the_shipped_nginx_the_page_signs_in_sends_and_streams() {
    let dir = tempfile::tempdir().unwrap();
    let (mock, gateway, key) = keyed(dir.path()).await;
    let nginx = Nginx::start(&[gateway.base.trim_start_matches("http://")]);
    let mut page = Page::launch();
    page.run(json!({"do": "open", "url": format!("{}/", nginx.base)})).await;
    sign_in_and_send(&mut page, &mock, &key, "Answered through the proxy.").await;
    assert_eq!(page.run(json!({"do": "errors"})).await, json!([]), "the page threw");
    assert!(!nginx.errors().contains("[error]"), "nginx: {}", nginx.errors());
}
