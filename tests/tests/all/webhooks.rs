//! Webhooks against the real binary (`docs/http-api.md`, "Webhooks"): every delivery is checked
//! by the official Standard Webhooks library (PyPI `standardwebhooks`, pinned by
//! `tests/webhooks/requirements.txt`) in a receiver of the tests' own (`tests/webhooks/receiver.py`),
//! which reports each delivery before it answers.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use airlock_tests::Reply;
use airlock_tests::gateway::{Gateway, keyed_client};
use airlock_tests::world::{World, tenants_with, world_with};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

/// The gateway's webhook settings for tests: a receiver on this machine, retries at once.
const ENV: [(&str, &str); 2] =
    [("AIRLOCK_WEBHOOKS_ALLOW_LOOPBACK", "true"), ("AIRLOCK_WEBHOOK_RETRY_AFTER", "100ms")];

/// The test receiver: a process that verifies each delivery and reports it.
struct Receiver {
    _child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    /// Where deliveries go.
    url: String,
    control: String,
    client: reqwest::Client,
}

impl Receiver {
    async fn start() -> Receiver {
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let python = repo.join("target/webhooks-venv/bin/python");
        assert!(
            python.exists(),
            "{} is missing: run tests/python-venv.sh target/webhooks-venv \
             tests/webhooks/requirements.txt standardwebhooks",
            python.display()
        );
        let mut child = Command::new(python)
            .arg(repo.join("tests/webhooks/receiver.py"))
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the receiver starts");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        let port = first["listening"].as_u64().expect("the receiver says its port");
        Receiver {
            _child: child,
            lines,
            url: format!("http://127.0.0.1:{port}/hooks"),
            control: format!("http://127.0.0.1:{port}/_control"),
            client: reqwest::Client::new(),
        }
    }

    /// Steers it: `secret`, `answers`, `hang`.
    async fn steer(&self, body: Value) {
        let res = self.client.post(&self.control).json(&body).send().await.unwrap();
        assert_eq!(res.status(), 204);
    }

    /// The next delivery it got, verified.
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(60), self.lines.next_line())
            .await
            .expect("a delivery within a minute")
            .unwrap()
            .expect("the receiver runs");
        let delivery: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(delivery["verified"], true, "the signature checks out: {delivery}");
        delivery
    }

    /// The next deliveries' types, `count` of them.
    async fn next_types(&mut self, count: usize) -> Vec<Value> {
        let mut got = Vec::new();
        for _ in 0..count {
            got.push(self.next().await);
        }
        got
    }
}

/// Subscribes `client` at `gw` to `events` at the receiver (and tells it the secret); answers the
/// subscription.
async fn subscribe(
    gw: &Gateway,
    client: &reqwest::Client,
    receiver: &Receiver,
    events: &[&str],
) -> Value {
    let body = json!({"url": receiver.url, "events": events});
    let res = client.post(gw.url("/v1/webhooks")).json(&body).send().await.unwrap();
    assert_eq!(res.status(), 201);
    let made: Value = res.json().await.unwrap();
    assert!(made["secret"].as_str().unwrap().starts_with("whsec_"), "{made}");
    receiver.steer(json!({"secret": made["secret"]})).await;
    made
}

async fn session_with(w: &World, fields: Value) -> String {
    let mut body = json!({"model": "openai:mock"});
    body.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
    let (code, created) = w.gw.post("/v1/sessions", body).await;
    assert_eq!(code, 201, "{created}");
    created["sessionId"].as_str().unwrap().to_owned()
}

/// A run of `content` in `s`; answers its `RunResult`.
async fn run(gw: &Gateway, s: &str, content: &str) -> Value {
    let (code, result) =
        gw.post(&format!("/v1/sessions/{s}/runs"), json!({"content": content})).await;
    assert_eq!(code, 200, "{result}");
    result
}

/// The subscription, read until `holds`: the receiver reports a delivery before it answers, and
/// the gateway records how it went after the answer.
async fn settled(gw: &Gateway, id: &str, holds: impl Fn(&Value) -> bool) -> Value {
    gw.until(&format!("/v1/webhooks/{id}"), holds).await
}

fn kinds(deliveries: &[Value]) -> Vec<&str> {
    deliveries.iter().map(|d| d["payload"]["type"].as_str().unwrap()).collect()
}

#[tokio::test]
#[ignore = "needs standardwebhooks in target/webhooks-venv (see .ci/run's fetch)"]
async fn idle_requires_action_failed_and_run_completed_each_arrive_once_signed_with_their_seq() {
    let w = world_with(&ENV).await;
    let mut receiver = Receiver::start().await;
    let every = [
        "session.idle",
        "session.requires_action",
        "session.failed",
        "run.completed",
        "turn.ended",
    ];
    let hook = subscribe(&w.gw, &w.gw.client, &receiver, &every).await;
    let s = session_with(&w, json!({"tools": [{"name": "echo", "approval": "always"}]})).await;

    // A run: its turn ends, the agent goes idle, the run completes, all at the turn's end.
    w.mock.push(Reply::text("Hello.", 2));
    let result = run(&w.gw, &s, "hi").await;
    let last = result["lastSeq"].as_u64().unwrap();
    let got = receiver.next_types(3).await;
    assert_eq!(kinds(&got), ["turn.ended", "session.idle", "run.completed"]);
    for delivery in &got {
        let payload = &delivery["payload"];
        assert_eq!(payload["data"]["sessionId"], s.as_str());
        assert_eq!(payload["data"]["seq"], last, "{payload}");
        assert_eq!(delivery["status"], 200);
    }
    assert_eq!(got[0]["payload"]["data"]["reason"]["kind"], "completed");
    assert_eq!(got[1]["payload"]["data"]["finishReason"], "completed");
    let completed = &got[2]["payload"]["data"];
    assert_eq!(completed["finalResponse"], "Hello.");
    assert_eq!(completed["messageId"], result["messageId"]);
    assert_eq!(completed["firstSeq"], result["firstSeq"]);
    assert!(completed.get("events").is_none(), "a delivery carries the summary, not the events");

    // An approval: the session needs a person, at the seq of the approval request.
    w.mock
        .push(Reply::tool_call("c1", "echo", r#"{"text":"hi"}"#, 2))
        .push(Reply::text("Echoed.", 2));
    let (code, _) =
        w.gw.post(&format!("/v1/sessions/{s}/messages"), json!({"content": "echo"})).await;
    assert_eq!(code, 202);
    let waiting = receiver.next().await;
    assert_eq!(waiting["payload"]["type"], "session.requires_action");
    let data = &waiting["payload"]["data"];
    assert_eq!(data["waiting"][0]["callId"], "c1");
    assert_eq!(data["waiting"][0]["kind"], "approval");
    let log = w.gw.log(&s).await;
    let requested = log
        .iter()
        .find(|e| e["type"] == "tool/approval" && e["data"]["state"] == "requested")
        .expect("the approval is logged");
    assert_eq!(data["seq"], requested["seq"]);
    let approve = format!("/v1/sessions/{s}/tool-calls/c1/approve");
    let (code, answer) = w.gw.post(&approve, json!({})).await;
    assert_eq!(code, 202, "{answer}");
    assert_eq!(kinds(&receiver.next_types(2).await), ["turn.ended", "session.idle"]);

    // A turn that fails: the model refuses the key.
    w.mock.push(Reply::status(401));
    let (code, _) =
        w.gw.post(&format!("/v1/sessions/{s}/messages"), json!({"content": "again"})).await;
    assert_eq!(code, 202);
    let got = receiver.next_types(3).await;
    assert_eq!(kinds(&got), ["turn.ended", "session.failed", "session.idle"]);
    assert_eq!(got[1]["payload"]["data"]["error"]["code"], "AUTH");
    assert_eq!(got[2]["payload"]["data"]["finishReason"], "error");
    let end = w.gw.log(&s).await.into_iter().rev().find(|e| e["type"] == "turn/end").unwrap();
    assert_eq!(got[1]["payload"]["data"]["seq"], end["seq"]);

    // Each once: nine deliveries, none waiting.
    let view = settled(&w.gw, hook["id"].as_str().unwrap(), |v| v["delivered"] == 9).await;
    assert_eq!(view["pending"], 0, "{view}");
    assert_eq!(view["status"], "active");
    assert!(view.get("secret").is_none(), "the secret is shown once");
}

#[tokio::test]
#[ignore = "needs standardwebhooks in target/webhooks-venv (see .ci/run's fetch)"]
async fn a_receiver_that_answers_500_gets_the_same_delivery_again() {
    let w = world_with(&ENV).await;
    let mut receiver = Receiver::start().await;
    let hook = subscribe(&w.gw, &w.gw.client, &receiver, &["session.idle"]).await;
    receiver.steer(json!({"answers": [500]})).await;
    let s = w.gw.session().await;
    w.mock.push(Reply::text("Hello.", 2));
    run(&w.gw, &s, "hi").await;
    let first = receiver.next().await;
    assert_eq!(first["status"], 500);
    let again = receiver.next().await;
    assert_eq!(again["status"], 200);
    assert_eq!(again["id"], first["id"], "a repeat keeps its webhook-id");
    assert_eq!(again["payload"], first["payload"]);
    // The receiver reports a delivery before it answers: the gateway records it once answered.
    let view = settled(&w.gw, hook["id"].as_str().unwrap(), |v| v["delivered"] == 1).await;
    assert!(view["lastError"].as_str().unwrap().contains("500"), "{view}");
}

#[tokio::test]
#[ignore = "needs standardwebhooks in target/webhooks-venv (see .ci/run's fetch)"]
async fn a_delivery_cut_by_kill_9_is_delivered_after_the_restart_with_its_webhook_id() {
    let World { dir: _dir, mock, gw } = world_with(&ENV).await;
    let mut receiver = Receiver::start().await;
    let hook = subscribe(&gw, &gw.client, &receiver, &["session.idle"]).await;
    receiver.steer(json!({"hang": true})).await;
    let s = gw.session().await;
    mock.push(Reply::text("Hello.", 2));
    run(&gw, &s, "hi").await;
    // Committed, sent, not yet answered: the gateway dies now.
    let cut = receiver.next().await;
    assert_eq!(cut["status"], "hung");
    let gw = gw.crash_and_restart();
    // The new process sends it again (perhaps before the receiver answers again: then this one
    // is held too, and answered once let go).
    let again = receiver.next().await;
    receiver.steer(json!({"hang": false})).await;
    assert_eq!(again["id"], cut["id"], "the receiver tells the repeat by its webhook-id");
    assert_eq!(again["payload"]["data"]["seq"], cut["payload"]["data"]["seq"]);
    let view = settled(&gw, hook["id"].as_str().unwrap(), |v| v["delivered"] == 1).await;
    assert_eq!(view["pending"], 0, "{view}");
}

#[tokio::test]
#[ignore = "needs standardwebhooks in target/webhooks-venv (see .ci/run's fetch)"]
async fn a_receiver_that_never_answers_holds_up_no_turn() {
    let w = world_with(&ENV).await;
    let mut receiver = Receiver::start().await;
    subscribe(&w.gw, &w.gw.client, &receiver, &["turn.ended", "session.idle", "run.completed"])
        .await;
    receiver.steer(json!({"hang": true})).await;
    let s = w.gw.session().await;
    for turn in 0..5 {
        w.mock.push(Reply::text("Hello.", 2));
        let result = run(&w.gw, &s, &format!("turn {turn}")).await;
        assert_eq!(result["finishReason"], "completed");
    }
    assert_eq!(receiver.next().await["status"], "hung", "the first delivery waits for an answer");
    // Let it go: the rest follow in order.
    receiver.steer(json!({"hang": false})).await;
    let got = receiver.next_types(3).await;
    assert_eq!(kinds(&got), ["session.idle", "run.completed", "turn.ended"]);
    assert!(got.iter().all(|d| d["status"] == 200));
}

#[tokio::test]
#[ignore = "needs standardwebhooks in target/webhooks-venv (see .ci/run's fetch)"]
async fn a_subscription_whose_deliveries_keep_failing_is_marked_failing_with_its_last_error() {
    let env = [
        ("AIRLOCK_WEBHOOKS_ALLOW_LOOPBACK", "true"),
        ("AIRLOCK_WEBHOOK_RETRY_AFTER", "20ms"),
        ("AIRLOCK_WEBHOOK_RETRY_FOR", "300ms"),
    ];
    let w = world_with(&env).await;
    let mut receiver = Receiver::start().await;
    let hook = subscribe(&w.gw, &w.gw.client, &receiver, &["session.idle"]).await;
    receiver.steer(json!({"answers": vec![503; 1000]})).await;
    let s = w.gw.session().await;
    w.mock.push(Reply::text("Hello.", 2));
    run(&w.gw, &s, "hi").await;
    assert_eq!(receiver.next().await["status"], 503);
    let path = format!("/v1/webhooks/{}", hook["id"].as_str().unwrap());
    let view = settled(&w.gw, hook["id"].as_str().unwrap(), |v| v["status"] == "failing").await;
    assert!(view["lastError"].as_str().unwrap().contains("503"), "{view}");
    assert_eq!(view["dropped"], 1, "{view}");
    assert_eq!(view["pending"], 0, "{view}");
    assert!(view["failingSince"].as_u64().is_some());

    // Resumed, it hears what happens from then on.
    let (code, resumed) = w.gw.post(&format!("{path}/resume"), json!({})).await;
    assert_eq!(code, 200, "{resumed}");
    assert_eq!(resumed["status"], "active");
    receiver.steer(json!({"answers": []})).await;
    w.mock.push(Reply::text("Again.", 2));
    let result = run(&w.gw, &s, "again").await;
    let delivery = loop {
        let next = receiver.next().await;
        if next["status"] == 200 {
            break next;
        }
    };
    assert_eq!(delivery["payload"]["data"]["seq"], result["lastSeq"]);
}

#[tokio::test]
#[ignore = "needs standardwebhooks in target/webhooks-venv (see .ci/run's fetch)"]
async fn tenant_b_cannot_see_change_or_receive_tenant_a_subscriptions_or_deliveries() {
    let t = tenants_with(&ENV).await;
    let (a, b, admin) = (keyed_client(&t.a), keyed_client(&t.b), keyed_client(&t.admin));
    let (mut to_a, mut to_b) = (Receiver::start().await, Receiver::start().await);
    let hook_a = subscribe(&t.gw, &a, &to_a, &["session.idle"]).await;
    let id = hook_a["id"].as_str().unwrap();
    let session_of = |client: reqwest::Client| {
        let url = t.gw.url("/v1/sessions");
        async move {
            let res = client.post(url).json(&json!({"model": "openai:mock"})).send().await.unwrap();
            let body: Value = res.json().await.unwrap();
            body["sessionId"].as_str().unwrap().to_owned()
        }
    };
    let (sa, sb) = (session_of(a.clone()).await, session_of(b.clone()).await);

    let list: Value = b.get(t.gw.url("/v1/webhooks")).send().await.unwrap().json().await.unwrap();
    assert_eq!(list["items"], json!([]), "B sees none of A's");
    let url = t.gw.url(&format!("/v1/webhooks/{id}"));
    assert_eq!(b.get(&url).send().await.unwrap().status(), 404);
    assert_eq!(b.delete(&url).send().await.unwrap().status(), 404);
    assert_eq!(b.post(format!("{url}/resume")).send().await.unwrap().status(), 404);
    let onto_a = json!({"url": to_b.url, "events": ["session.idle"], "sessionId": sa});
    let res = b.post(t.gw.url("/v1/webhooks")).json(&onto_a).send().await.unwrap();
    assert_eq!(res.status(), 404, "B cannot subscribe to A's session");
    subscribe(&t.gw, &b, &to_b, &["session.idle"]).await;
    let all: Value =
        admin.get(t.gw.url("/v1/webhooks")).send().await.unwrap().json().await.unwrap();
    assert_eq!(all["items"].as_array().unwrap().len(), 2, "an admin sees every one");

    // A's turn reaches A's receiver; B's receiver hears only B's session.
    for (client, s) in [(&a, &sa), (&b, &sb)] {
        t.mock.push(Reply::text("Hello.", 2));
        let url = t.gw.url(&format!("/v1/sessions/{s}/runs"));
        let res = client.post(url).json(&json!({"content": "hi"})).send().await.unwrap();
        assert_eq!(res.status(), 200);
    }
    assert_eq!(to_a.next().await["payload"]["data"]["sessionId"], sa.as_str());
    assert_eq!(to_b.next().await["payload"]["data"]["sessionId"], sb.as_str());
    assert_eq!(a.get(&url).send().await.unwrap().status(), 200, "A still has its own");
}

/// What a subscription may name is checked when it is made: no plain http elsewhere, no
/// link-local address, this machine only with the flag, known event types.
#[tokio::test]
async fn a_subscription_is_refused_a_url_deliveries_must_never_reach() {
    let w = world_with(&[]).await;
    let refused = [
        (json!({"url": "http://127.0.0.1:9/in", "events": ["session.idle"]}), "url"),
        (json!({"url": "http://hooks.example.com/in", "events": ["session.idle"]}), "url"),
        (json!({"url": "https://169.254.169.254/latest", "events": ["session.idle"]}), "url"),
        (json!({"url": "https://[fe80::1]/in", "events": ["session.idle"]}), "url"),
        (json!({"url": "ftp://example.com/in", "events": ["session.idle"]}), "url"),
        (json!({"url": "https://example.com/in", "events": []}), "events"),
        (json!({"url": "https://example.com/in", "events": ["session.done"]}), "events"),
    ];
    for (body, field) in refused {
        let (code, answer) = w.gw.post("/v1/webhooks", body.clone()).await;
        assert_eq!(code, 400, "{body}: {answer}");
        assert_eq!(answer["error"]["details"]["field"], field, "{answer}");
    }
    let (code, answer) =
        w.gw.post(
            "/v1/webhooks",
            json!({"url": "http://127.0.0.1:9/in",
        "events": ["session.idle"]}),
        )
        .await;
    assert!(answer["error"]["message"].as_str().unwrap().contains("--webhooks-allow-loopback"));
    assert_eq!(code, 400);
    let body = json!({"url": "https://hooks.example.com/in", "events": ["session.idle"],
        "sessionId": "no-such-session"});
    let (code, answer) = w.gw.post("/v1/webhooks", body).await;
    assert_eq!(code, 404, "{answer}");
    let (code, made) =
        w.gw.post(
            "/v1/webhooks",
            json!({"url": "https://hooks.example.com/in",
        "events": ["session.idle", "session.idle"]}),
        )
        .await;
    assert_eq!(code, 201, "{made}");
    assert_eq!(made["events"], json!(["session.idle"]));
    let path = format!("/v1/webhooks/{}", made["id"].as_str().unwrap());
    let (code, _) = w.gw.get(&path).await;
    assert_eq!(code, 200);
    let res = w.gw.client.delete(w.gw.url(&path)).send().await.unwrap();
    assert_eq!(res.status(), 204);
    let (code, answer) = w.gw.get(&path).await;
    assert_eq!(code, 404);
    assert_eq!(answer["error"]["code"], "webhook-not-found");
}

#[tokio::test]
#[ignore = "needs standardwebhooks in target/webhooks-venv (see .ci/run's fetch)"]
async fn the_operator_declares_subscriptions_and_schedules_in_airlock_toml() {
    let dir = tempfile::tempdir().unwrap();
    let mock = airlock_tests::MockModel::start().await;
    mock.otherwise(|_| Reply::text("Tick.", 1));
    let mut receiver = Receiver::start().await;
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    receiver.steer(json!({"secret": secret})).await;
    let config = dir.path().join("airlock.toml");
    let declared = format!(
        "[webhooks.ops]\nurl = \"{}\"\nevents = [\"run.completed\", \"turn.ended\"]\n\
         secret = \"{secret}\"\n\n[schedules.tick]\ncron = \"0 0 1 1 *\"\n\
         session = {{ model = \"openai:mock\" }}\ncontent = \"Happy new year\"\n",
        receiver.url
    );
    std::fs::write(&config, declared).unwrap();
    let mut env = ENV.to_vec();
    env.push(("AIRLOCK_CONFIG", config.to_str().unwrap()));
    let data = dir.path().join("airlock.db");
    let gw = Gateway::start_with(&data, &mock.base_url(), &env);

    let (_, hooks) = gw.get("/v1/webhooks").await;
    assert_eq!(hooks["items"][0]["id"], "config-ops", "{hooks}");
    assert_eq!(hooks["items"][0]["everyTenant"], true);
    let (_, schedules) = gw.get("/v1/schedules").await;
    assert_eq!(schedules["items"][0]["id"], "config-tick", "{schedules}");
    let s = gw.session().await;
    let result = run(&gw, &s, "hi").await;
    let got = receiver.next_types(2).await;
    assert_eq!(kinds(&got), ["turn.ended", "run.completed"]);
    assert_eq!(got[1]["payload"]["data"]["messageId"], result["messageId"]);

    // Declared no more: gone at the next start; the one kept keeps its state.
    let kept = format!(
        "[webhooks.ops]\nurl = \"{}\"\nevents = [\"run.completed\", \"turn.ended\"]\n\
         secret = \"{secret}\"\n",
        receiver.url
    );
    std::fs::write(&config, kept).unwrap();
    let gw = gw.crash_and_restart();
    let (_, schedules) = gw.get("/v1/schedules").await;
    assert_eq!(schedules["items"], json!([]));
    settled(&gw, "config-ops", |v| v["delivered"] == 2).await;
}
