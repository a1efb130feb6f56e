//! A session's workspace over HTTP (`/v1/sessions/{id}/files`): what a client uploads is listed,
//! downloaded byte for byte and removed; paths stay inside the workspace; the tenant's quota,
//! a disposed session and `--workspaces off` are refused with their codes. (The `python` code tool
//! writing there: `gateway/tests/gateway/code_tools/`.)

use airlock_tests::world::{World, world, world_with};
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn session(w: &World) -> String {
    let (code, created) = w.gw.post("/v1/sessions", json!({})).await;
    assert_eq!(code, 201, "{created}");
    created["sessionId"].as_str().unwrap().to_owned()
}

async fn put(w: &World, path: &str, body: &'static [u8]) -> (StatusCode, Value) {
    let answer = w.gw.client.put(w.gw.url(path)).body(body).send().await.unwrap();
    let status = answer.status();
    (status, answer.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn an_uploaded_file_is_listed_downloaded_byte_for_byte_and_removed() {
    let w = world().await;
    let s = session(&w).await;
    let files = format!("/v1/sessions/{s}/files");
    let bytes: &'static [u8] = b"\x00\xffPNG\r\n binary";
    let (status, stored) = put(&w, &format!("{files}/plots/ü b.png"), bytes).await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!((&stored["path"], &stored["bytes"]), (&json!("plots/ü b.png"), &json!(bytes.len())));

    let (_, listed) = w.gw.get(&files).await;
    assert_eq!(listed["items"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["items"][0]["path"], "plots/ü b.png");
    assert_eq!(listed["chargedBytes"], 8192, "the file and its directory, 4 KiB each");
    assert_eq!(listed["quotaBytes"], 256 << 20);

    let got =
        w.gw.client.get(w.gw.url(&format!("{files}/plots/%C3%BC%20b.png"))).send().await.unwrap();
    assert_eq!(got.status(), 200);
    let header = |name: &str| got.headers()[name].to_str().unwrap().to_owned();
    assert_eq!(header("content-type"), "image/png");
    assert_eq!(
        header("content-disposition"),
        "attachment; filename=\"_ b.png\"; filename*=UTF-8''%C3%BC%20b.png"
    );
    assert_eq!(header("content-security-policy"), "sandbox");
    assert_eq!(got.bytes().await.unwrap().as_ref(), bytes);

    let (status, _) = put(&w, &format!("{files}/plots/ü b.png"), b"replaced").await;
    assert_eq!(status, 200, "an upload replaces the file");
    let removed =
        w.gw.client.delete(w.gw.url(&format!("{files}/plots/ü b.png"))).send().await.unwrap();
    assert_eq!(removed.status(), 204);
    let (status, gone) = w.gw.get(&format!("{files}/plots/ü b.png")).await;
    assert_eq!((status, &gone["error"]["code"]), (404, &json!("file-not-found")));
}

#[tokio::test]
async fn paths_out_of_the_workspace_are_refused() {
    let w = world().await;
    let s = session(&w).await;
    let files = format!("/v1/sessions/{s}/files");
    // Encoded, or the client would resolve the dot segments before sending.
    for path in
        ["..%2Fairlock.db", "a%2F..%2F..%2Fx", "a%2F%2Fb", "a%2F%2E%2Fb", "%2Fetc%2Fpasswd", "a%2F"]
    {
        let (status, refused) = put(&w, &format!("{files}/{path}"), b"x").await;
        assert_eq!(status, 400, "{path}: {refused}");
        assert_eq!(refused["error"]["details"]["field"], "path", "{path}");
        let (status, _) = w.gw.get(&format!("{files}/{path}")).await;
        assert_eq!(status, 400, "{path}");
    }
    assert!(!w.dir.path().join("x").exists());
}

#[tokio::test]
async fn an_upload_past_the_tenants_workspace_quota_is_507() {
    let w = world_with(&[("AIRLOCK_WORKSPACE_QUOTA", "32768")]).await;
    let (s, t) = (session(&w).await, session(&w).await);
    // s holds its directory and 8 KiB; t its directory: 16 KiB of the tenant's 32.
    let (status, _) = put(&w, &format!("/v1/sessions/{s}/files/a"), &[7; 8192]).await;
    assert_eq!(status, 200);
    // The quota is the tenant's: another session's workspace counts too.
    let (status, full) = put(&w, &format!("/v1/sessions/{t}/files/b"), &[7; 16385]).await;
    assert_eq!(status, 507, "{full}");
    assert_eq!(full["error"]["code"], "workspace-full");
    let details = json!({"quotaBytes": 32768, "usedBytes": 16384, "wantedBytes": 20480});
    assert_eq!(full["error"]["details"], details);
    let (status, _) = put(&w, &format!("/v1/sessions/{t}/files/b"), &[7; 16384]).await;
    assert_eq!(status, 200, "what fits is taken");
}

#[tokio::test]
async fn disposing_of_a_session_deletes_its_workspace() {
    let w = world().await;
    let s = session(&w).await;
    let (status, _) = put(&w, &format!("/v1/sessions/{s}/files/keep.txt"), b"x").await;
    assert_eq!(status, 200);
    let dir = w.dir.path().join(format!("airlock-workspaces/local/s-{s}"));
    assert!(dir.join("keep.txt").is_file(), "beside the data file, by default");
    let disposed = w.gw.client.delete(w.gw.url(&format!("/v1/sessions/{s}"))).send().await.unwrap();
    assert!(disposed.status().is_success());
    assert!(!dir.exists());
    let (status, refused) = w.gw.get(&format!("/v1/sessions/{s}/files")).await;
    assert_eq!((status, &refused["error"]["code"]), (409, &json!("session-disposed")));
}

#[tokio::test]
async fn a_gateway_without_workspaces_says_so() {
    let w = world_with(&[("AIRLOCK_WORKSPACES", "off")]).await;
    let s = session(&w).await;
    let (status, refused) = w.gw.get(&format!("/v1/sessions/{s}/files")).await;
    assert_eq!((status, &refused["error"]["code"]), (404, &json!("no-workspaces")), "{refused}");
    assert!(!w.dir.path().join("airlock-workspaces").exists());
}
