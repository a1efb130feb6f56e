//! Schedules against the real binary (`docs/http-api.md`, "Schedules"): due times fired once
//! across `kill -9`s and across gateways sharing PostgreSQL, `overlap`, pausing, and tenants.
//!
//! Each message a schedule sends says which due time it is for (`source: {kind: "schedule",
//! scheduleId, due}`), so a test reads from the log which due times were fired, and how often.

use std::collections::BTreeMap;
use std::sync::Arc;

use airlock_tests::Reply;
use airlock_tests::cluster::{Cluster, Topology};
use airlock_tests::gateway::{Gateway, keyed_client};
use airlock_tests::world::{World, tenants, world};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// Every second.
const EVERY_SECOND: &str = "* * * * * *";

async fn schedule(gw: &Gateway, body: Value) -> Value {
    let (code, made) = gw.post("/v1/schedules", body).await;
    assert_eq!(code, 201, "{made}");
    made
}

/// The schedule, read until `holds` (what the firing did shows there).
async fn until(gw: &Gateway, id: &str, holds: impl Fn(&Value) -> bool) -> Value {
    gw.until(&format!("/v1/schedules/{id}"), holds).await
}

/// The due times of the schedule's messages in a log, with how often each was sent.
fn dues(log: &[Value], id: &str) -> BTreeMap<u64, usize> {
    let mut dues = BTreeMap::new();
    for event in log.iter().filter(|e| e["type"] == "agent/inbox/spliced") {
        for message in event["data"]["inserted"].as_array().into_iter().flatten() {
            let source = &message["source"];
            if source["kind"] == "schedule" && source["scheduleId"] == id {
                *dues.entry(source["due"].as_u64().unwrap()).or_default() += 1;
            }
        }
    }
    dues
}

/// Each due time once, and none missing between the first and the last.
fn once_each_second(dues: &BTreeMap<u64, usize>) {
    assert!(dues.values().all(|&n| n == 1), "a due time fired twice: {dues:?}");
    let (first, last) = (dues.keys().next().unwrap(), dues.keys().next_back().unwrap());
    assert_eq!(dues.len() as u64, (last - first) / 1000 + 1, "a due time is missing: {dues:?}");
}

#[tokio::test]
async fn a_schedule_every_second_fires_each_due_time_once_across_three_kill_9s() {
    let World { dir: _dir, mock, mut gw } = world().await;
    mock.otherwise(|_| Reply::text("Tick.", 1));
    let s = gw.session().await;
    let made = schedule(
        &gw,
        json!({"cron": EVERY_SECOND, "sessionId": s, "content": "tick",
        "overlap": "queue", "catchUp": "all"}),
    )
    .await;
    let id = made["id"].as_str().unwrap().to_owned();
    for kill in 1..=3 {
        until(&gw, &id, |v| v["fired"].as_u64().unwrap() >= 2 * kill).await;
        gw = gw.crash_and_restart();
    }
    let fired = until(&gw, &id, |v| v["fired"].as_u64().unwrap() >= 8).await["fired"].clone();
    let (code, paused) = gw.post(&format!("/v1/schedules/{id}/pause"), json!({})).await;
    assert_eq!(code, 200, "{paused}");
    assert_eq!(paused["paused"], true);
    let dues = dues(&gw.log(&s).await, &id);
    once_each_second(&dues);
    assert!(dues.len() as u64 >= fired.as_u64().unwrap() - 1, "{dues:?} against {fired}");
    let first = *dues.keys().next().unwrap();
    assert_eq!(first, made["nextAt"].as_u64().unwrap(), "the first is the first due time");
}

#[tokio::test]
async fn overlap_skip_sends_nothing_while_a_run_is_still_going() {
    let w = world().await;
    let gate = Arc::new(Notify::new());
    w.mock.push(Reply::text("Slow.", 1).hold_until(gate.clone()));
    let s = w.gw.session().await;
    let made =
        schedule(&w.gw, json!({"cron": EVERY_SECOND, "sessionId": s, "content": "tick"})).await;
    assert_eq!(made["overlap"], "skip");
    let id = made["id"].as_str().unwrap();
    let view = until(&w.gw, id, |v| v["skipped"].as_u64().unwrap() >= 2).await;
    assert_eq!(view["fired"], 1, "one message started the run; the rest were skipped: {view}");
    assert_eq!(dues(&w.gw.log(&s).await, id).len(), 1);
    w.gw.post(&format!("/v1/schedules/{id}/pause"), json!({})).await;
    gate.notify_one();
}

#[tokio::test]
async fn a_paused_schedule_fires_nothing_and_a_resumed_one_fires_again() {
    let w = world().await;
    w.mock.otherwise(|_| Reply::text("Tick.", 1));
    let (quiet, clock) = (w.gw.session().await, w.gw.session().await);
    let paused = schedule(
        &w.gw,
        json!({"cron": EVERY_SECOND, "sessionId": quiet,
        "content": "tick"}),
    )
    .await;
    let id = paused["id"].as_str().unwrap();
    let (code, view) = w.gw.post(&format!("/v1/schedules/{id}/pause"), json!({})).await;
    assert_eq!(code, 200, "{view}");
    // Another schedule is the clock: three of its due times pass.
    let ticking =
        schedule(&w.gw, json!({"cron": EVERY_SECOND, "sessionId": clock, "content": "tick"})).await;
    until(&w.gw, ticking["id"].as_str().unwrap(), |v| v["fired"].as_u64().unwrap() >= 3).await;
    let (_, view) = w.gw.get(&format!("/v1/schedules/{id}")).await;
    assert_eq!((view["fired"].as_u64(), view["paused"].as_bool()), (Some(0), Some(true)));
    assert!(dues(&w.gw.log(&quiet).await, id).is_empty(), "a paused schedule sends nothing");

    let (code, view) = w.gw.post(&format!("/v1/schedules/{id}/resume"), json!({})).await;
    assert_eq!(code, 200, "{view}");
    assert_eq!(view["paused"], false);
    until(&w.gw, id, |v| v["fired"].as_u64().unwrap() >= 1).await;
}

#[tokio::test]
async fn a_schedule_with_a_session_spec_makes_its_session_once_or_fresh_each_time() {
    let w = world().await;
    w.mock.otherwise(|_| Reply::text("Morning summary.", 1));
    let spec = json!({"model": "openai:mock", "system": "Summarize."});
    let once =
        schedule(&w.gw, json!({"cron": EVERY_SECOND, "session": spec, "content": "go"})).await;
    let fresh = schedule(
        &w.gw,
        json!({"cron": EVERY_SECOND, "session": spec, "fresh": true,
        "content": "go"}),
    )
    .await;
    let (once_id, fresh_id) = (once["id"].as_str().unwrap(), fresh["id"].as_str().unwrap());
    until(&w.gw, once_id, |v| v["fired"].as_u64().unwrap() >= 2).await;
    let view = until(&w.gw, fresh_id, |v| v["fired"].as_u64().unwrap() >= 2).await;
    for id in [once_id, fresh_id] {
        w.gw.post(&format!("/v1/schedules/{id}/pause"), json!({})).await;
    }
    let (_, session) = w.gw.get(&format!("/v1/sessions/{once_id}")).await;
    assert_eq!(session["sessionId"], once_id, "the schedule's session has its id: {session}");
    assert!(dues(&w.gw.log(once_id).await, once_id).len() >= 2, "its messages go to that one");
    let last = view["lastSessionId"].as_str().unwrap();
    assert!(last.starts_with(&format!("{fresh_id}-")), "{view}");
    assert_eq!(dues(&w.gw.log(last).await, fresh_id).len(), 1, "one message per fresh session");
}

#[tokio::test]
async fn a_schedule_is_refused_a_bad_expression_zone_or_target() {
    let w = world().await;
    let s = w.gw.session().await;
    let refused = [
        (json!({"cron": "* *", "sessionId": s, "content": "x"}), "cron"),
        (json!({"cron": "61 * * * *", "sessionId": s, "content": "x"}), "cron"),
        (
            json!({"cron": "0 8 * * *", "timezone": "Mars/Base", "sessionId": s, "content": "x"}),
            "timezone",
        ),
        (json!({"cron": "0 8 * * *", "content": "x"}), "sessionId"),
        (json!({"cron": "0 8 * * *", "sessionId": s, "session": {}, "content": "x"}), "sessionId"),
        (json!({"cron": "0 8 * * *", "sessionId": s, "fresh": true, "content": "x"}), "fresh"),
        (
            json!({"cron": "0 8 * * *", "sessionId": s, "content": "x", "overlap": "maybe"}),
            "overlap",
        ),
        (json!({"cron": "0 8 * * *", "sessionId": s, "content": ""}), "content"),
    ];
    for (body, field) in refused {
        let (code, answer) = w.gw.post("/v1/schedules", body.clone()).await;
        assert_eq!(code, 400, "{body}: {answer}");
        assert_eq!(answer["error"]["details"]["field"], field, "{answer}");
    }
    let (code, answer) = w
        .gw
        .post("/v1/schedules", json!({"cron": "0 8 * * *", "sessionId": "nope", "content": "x"}))
        .await;
    assert_eq!((code, answer["error"]["code"].as_str()), (404, Some("session-not-found")));
    let made = schedule(
        &w.gw,
        json!({"cron": "0 8 * * Mon-Fri", "timezone": "Europe/Paris",
        "sessionId": s, "content": "Good morning"}),
    )
    .await;
    assert_eq!(made["timezone"], "Europe/Paris");
    assert_eq!(made["content"], json!([{"type": "text", "text": "Good morning"}]));
    let path = format!("/v1/schedules/{}", made["id"].as_str().unwrap());
    assert_eq!(w.gw.client.delete(w.gw.url(&path)).send().await.unwrap().status(), 204);
    let (code, answer) = w.gw.get(&path).await;
    assert_eq!((code, answer["error"]["code"].as_str()), (404, Some("schedule-not-found")));
}

#[tokio::test]
async fn tenant_b_cannot_see_change_or_aim_a_schedule_at_tenant_a() {
    let t = tenants().await;
    let (a, b) = (keyed_client(&t.a), keyed_client(&t.b));
    let res = a.post(t.gw.url("/v1/sessions")).json(&json!({})).send().await.unwrap();
    let sa = res.json::<Value>().await.unwrap()["sessionId"].as_str().unwrap().to_owned();
    let body = json!({"cron": "0 8 * * *", "sessionId": sa, "content": "x"});
    let made: Value =
        a.post(t.gw.url("/v1/schedules")).json(&body).send().await.unwrap().json().await.unwrap();
    let url = t.gw.url(&format!("/v1/schedules/{}", made["id"].as_str().unwrap()));
    let list: Value = b.get(t.gw.url("/v1/schedules")).send().await.unwrap().json().await.unwrap();
    assert_eq!(list["items"], json!([]));
    assert_eq!(b.get(&url).send().await.unwrap().status(), 404);
    assert_eq!(b.post(format!("{url}/pause")).send().await.unwrap().status(), 404);
    assert_eq!(b.delete(&url).send().await.unwrap().status(), 404);
    let res = b.post(t.gw.url("/v1/schedules")).json(&body).send().await.unwrap();
    assert_eq!(res.status(), 404, "B cannot aim a schedule at A's session");
    assert_eq!(a.get(&url).send().await.unwrap().status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn on_three_gateways_sharing_postgres_each_due_time_fires_once() {
    let test = "on_three_gateways_sharing_postgres_each_due_time_fires_once";
    let Some(cluster) = Cluster::start(3, test).await else { return };
    cluster.mock.otherwise(|_| Reply::text("Tick.", 1));
    let gw = &cluster.nodes[0];
    let s = gw.session().await;
    let standing = schedule(
        gw,
        json!({"cron": EVERY_SECOND, "sessionId": s, "content": "tick",
        "overlap": "queue"}),
    )
    .await;
    let fresh = schedule(
        gw,
        json!({"cron": EVERY_SECOND, "session": {"model": "openai:mock"},
        "fresh": true, "content": "tick"}),
    )
    .await;
    let (standing_id, fresh_id) = (standing["id"].as_str().unwrap(), fresh["id"].as_str().unwrap());
    until(gw, standing_id, |v| v["fired"].as_u64().unwrap() >= 6).await;
    until(gw, fresh_id, |v| v["fired"].as_u64().unwrap() >= 6).await;
    for id in [standing_id, fresh_id] {
        gw.post(&format!("/v1/schedules/{id}/pause"), json!({})).await;
    }
    once_each_second(&dues(&cluster.client(1).log(&s).await, standing_id));
    // Each fresh session got one message, and no due time made two sessions.
    let (_, listed) = gw.get("/v1/sessions?limit=1000").await;
    let made: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|row| row["sessionId"].as_str())
        .filter(|id| id.starts_with(&format!("{fresh_id}-")))
        .collect();
    let mut all = BTreeMap::new();
    for session in &made {
        let log = cluster.client(2).log(session).await;
        for (due, n) in dues(&log, fresh_id) {
            *all.entry(due).or_insert(0) += n;
        }
    }
    assert!(all.len() >= 6, "{all:?}");
    once_each_second(&all);
}
