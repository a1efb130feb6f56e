//! A session's metadata: kept with it from its create, shown in its view, and replaced whole by
//! `PATCH /v1/sessions/{id}` (how the web page keeps a title a person gave).

use airlock_tests::world::world;
use serde_json::json;

#[tokio::test]
async fn patch_session_replaces_its_metadata_whole_and_null_removes_it() {
    let w = world().await;
    let body = json!({"metadata": {"title": "Draft", "project": 7}});
    let (code, created) = w.gw.post("/v1/sessions", body).await;
    assert_eq!(code, 201, "{created}");
    let s = created["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(created["metadata"], json!({"title": "Draft", "project": 7}));

    let path = format!("/v1/sessions/{s}");
    let (code, changed) = w.gw.patch(&path, json!({"metadata": {"title": "Launch plan"}})).await;
    assert_eq!(code, 200, "{changed}");
    assert_eq!(changed["metadata"], json!({"title": "Launch plan"}), "replaced whole");
    assert_eq!(w.gw.get(&path).await.1["metadata"], json!({"title": "Launch plan"}));
    let listed = w.gw.get("/v1/sessions").await.1;
    assert_eq!(listed["items"][0]["metadata"]["title"], "Launch plan");

    // It is no input: the log does not change, and a disposed session takes it too.
    let disposed = reqwest::Client::new().delete(w.gw.url(&path)).send().await.unwrap();
    assert_eq!(disposed.status(), 202);
    let log = w.gw.log(&s).await;
    let (code, cleared) = w.gw.patch(&path, json!({"metadata": null})).await;
    assert_eq!(code, 200, "{cleared}");
    assert!(cleared.get("metadata").is_none(), "{cleared}");
    assert_eq!(w.gw.log(&s).await, log, "nothing logged");

    // What does not fit is refused, naming the field; an unknown session is 404.
    let (code, refused) = w.gw.patch(&path, json!({"title": "x"})).await;
    assert_eq!((code, refused["error"]["code"].as_str()), (400, Some("bad-request")), "{refused}");
    let (code, refused) = w.gw.patch(&path, json!({})).await;
    assert_eq!(code, 400, "metadata must be given: {refused}");
    let (code, _) = w.gw.patch("/v1/sessions/nope", json!({"metadata": {}})).await;
    assert_eq!(code, 404);
}
