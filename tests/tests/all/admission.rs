//! One accounting for all work (`docs/http-api.md`, "Limits"), end to end against the real
//! binary: a model that splits its work forever, goal rounds of a tenant at its turn quota, held
//! runs past the stream quota, the queue's length, the machine's ceiling of core instances, and a
//! restart with more running sessions than the machine holds. Counts and states, never times.

use std::sync::Arc;
use std::time::Duration;

use airlock_tests::gateway::{Frame, Gateway, Sse, keyed_client, keys};
use airlock_tests::world::{World, messages, world_with};
use airlock_tests::{MockModel, Reply};
use reqwest::Client;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// Replies held after their first chunk, each until [`Gates::open`]: a model still thinking.
#[derive(Clone, Default)]
struct Gates(Arc<std::sync::Mutex<Vec<Arc<Notify>>>>);

impl Gates {
    /// Gates that hold every reply `mock` gives (each of `text`) until they open.
    fn holding(mock: &MockModel, text: &'static str) -> Gates {
        let gates = Gates::default();
        let held = gates.clone();
        mock.otherwise(move |_| held.held(text));
        gates
    }

    /// A reply of `text` held until the gates open.
    fn held(&self, text: &str) -> Reply {
        let gate = Arc::new(Notify::new());
        self.0.lock().unwrap().push(gate.clone());
        Reply::text(text, 2).hold_until(gate)
    }

    /// Lets every reply held so far go on.
    fn open(&self) {
        self.0.lock().unwrap().iter().for_each(|gate| gate.notify_one());
    }
}

/// A gateway whose data file has keys for tenants `a` and `b`, its `openai:` sessions answered
/// by `mock`.
struct Tenants {
    dir: tempfile::TempDir,
    mock: MockModel,
    gw: Gateway,
    a: Client,
    b: Client,
}

async fn tenants(env: &[(&str, &str)]) -> Tenants {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start().await;
    let data = dir.path().join("airlock.db");
    let [a, b] = ["a", "b"].map(|tenant| keys(&data, &["create", "--tenant", tenant]));
    let gw = Gateway::start_with(&data, &mock.base_url(), env);
    Tenants { dir, mock, gw, a: keyed_client(&a), b: keyed_client(&b) }
}

impl Tenants {
    async fn call(&self, client: &Client, method: &str, path: &str, body: Value) -> (u16, Value) {
        let request = client.request(method.parse().unwrap(), self.gw.url(path));
        let request = if body.is_null() { request } else { request.json(&body) };
        let res = request.send().await.unwrap();
        (res.status().as_u16(), res.json().await.unwrap_or(Value::Null))
    }

    /// A new session of the client's tenant whose model is `model`.
    async fn session(&self, client: &Client, model: &str) -> String {
        let (code, made) = self.call(client, "POST", "/v1/sessions", json!({"model": model})).await;
        assert_eq!(code, 201, "{made}");
        made["sessionId"].as_str().unwrap().to_owned()
    }

    /// The SSE stream of a session, as the client sees it.
    async fn sse(&self, client: &Client, session: &str) -> Sse {
        let url = self.gw.url(&format!("/v1/sessions/{session}/events"));
        Sse::of(client.get(url).send().await.unwrap())
    }
}

/// Every session below `root` (the client's view), with its depth below it.
async fn tree(t: &Tenants, client: &Client, root: &str) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    let mut level = vec![root.to_owned()];
    for depth in 1.. {
        let mut next = Vec::new();
        for id in &level {
            let (code, children) =
                t.call(client, "GET", &format!("/v1/sessions/{id}/children"), Value::Null).await;
            assert_eq!(code, 200, "{children}");
            for child in children["items"].as_array().unwrap() {
                let child = child["sessionId"].as_str().unwrap().to_owned();
                found.push((child.clone(), depth));
                next.push(child);
            }
        }
        if next.is_empty() {
            return found;
        }
        level = next;
    }
    unreachable!("the loop returns")
}

/// A model that splits every step's work in two subagents, as an obedient (or prompt-injected)
/// one does.
fn splitting(mock: &MockModel) {
    mock.otherwise(|n| {
        let call = r#"{"prompt": "split this work in two"}"#;
        let first = Reply::tool_call(&format!("x{n}"), "agent", call, 1);
        first.and_tool_call(&format!("y{n}"), "agent", call, 1)
    });
}

/// The tool results the model was shown, each once (for a failure's message).
fn tool_results(mock: &MockModel) -> String {
    let mut seen = std::collections::BTreeSet::new();
    for request in mock.requests() {
        for message in request["messages"].as_array().into_iter().flatten() {
            if message["role"] == "tool" {
                seen.insert(message["content"].to_string());
            }
        }
    }
    seen.into_iter().collect::<Vec<_>>().join("\n")
}

/// Runs a message in `root` as the client's tenant, in the background.
fn run_in(t: &Tenants, client: &Client, root: &str) -> tokio::task::JoinHandle<(u16, Value)> {
    let (client, url) = (client.clone(), t.gw.url(&format!("/v1/sessions/{root}/runs")));
    tokio::spawn(async move {
        let res = client.post(url).json(&json!({"content": "go"})).send().await.unwrap();
        (res.status().as_u16(), res.json::<Value>().await.unwrap())
    })
}

#[tokio::test]
async fn a_model_that_calls_agent_twice_every_step_stops_at_the_limits_and_the_gateway_lives() {
    let env = [
        ("AIRLOCK_MAX_SUBAGENT_DEPTH", "2"),
        ("AIRLOCK_MAX_STEPS", "2"),
        ("AIRLOCK_TENANT_SESSIONS", "40"),
        ("AIRLOCK_TENANT_TURNS", "5"),
    ];
    let t = tenants(&env).await;
    splitting(&t.mock);
    let root = t.session(&t.a, "openai:mock").await;
    let run = run_in(&t, &t.a, &root);

    // While the tree grows: the gateway answers, and the other tenant's work goes in.
    t.mock.requested(8).await;
    assert_eq!(t.gw.get("/healthz").await.0, 200);
    let other = t.session(&t.b, "demo").await;
    let (code, sent) =
        t.call(&t.b, "POST", &messages(&other), json!({"content": "still here?"})).await;
    assert_eq!(code, 202, "{sent}");

    let (code, result) = run.await.unwrap();
    assert_eq!(code, 200, "{result}");
    let sessions = tree(&t, &t.a, &root).await;
    let deepest = sessions.iter().map(|(_, depth)| *depth).max().unwrap();
    assert_eq!(deepest, 2, "no subagent below --max-subagent-depth: {sessions:?}");
    // Two steps of two calls at the root, each child's the same: at most 4 + 16.
    assert!(sessions.len() <= 20, "{} subagents", sessions.len());
    // The model read why, naming the limit.
    let asked = serde_json::to_string(&t.mock.requests()).unwrap();
    assert!(
        asked.contains("LIMIT_EXCEEDED"),
        "no tool error reached the model: {}",
        tool_results(&t.mock)
    );
    assert!(asked.contains("--max-subagent-depth 2"), "the depth was not named");
    assert_eq!(t.gw.get("/healthz").await.0, 200, "the process lives");
    let (code, _) = t.call(&t.b, "POST", &messages(&other), json!({"content": "and now?"})).await;
    assert_eq!(code, 202);
}

#[tokio::test]
async fn a_subagent_past_the_working_descendants_of_its_root_gets_limit_exceeded() {
    let env = [("AIRLOCK_MAX_DESCENDANTS", "1"), ("AIRLOCK_MAX_STEPS", "2")];
    let t = tenants(&env).await;
    splitting(&t.mock);
    let root = t.session(&t.a, "openai:mock").await;
    let (code, result) = run_in(&t, &t.a, &root).await.unwrap();
    assert_eq!(code, 200, "{result}");
    // A child at work holds the root's one slot: whatever it asks for is refused.
    let asked = serde_json::to_string(&t.mock.requests()).unwrap();
    assert!(
        asked.contains("--max-descendants 1"),
        "the limit was not named: {}",
        tool_results(&t.mock)
    );
    let deepest = tree(&t, &t.a, &root).await.iter().map(|(_, depth)| *depth).max();
    assert_eq!(deepest, Some(1), "no child of a child got to work: {}", tool_results(&t.mock));
}

/// The `[turn/start, turn/end]` times of a session's turns.
fn turns(log: &[Value]) -> Vec<(u64, u64)> {
    let times = |kind: &str| -> Vec<u64> {
        let events = log.iter().filter(|e| e["type"] == kind);
        events.map(|e| e["time"].as_u64().unwrap()).collect()
    };
    times("turn/start").into_iter().zip(times("turn/end")).collect()
}

#[tokio::test]
async fn goal_rounds_under_tenant_turns_2_never_run_3_at_once_and_the_third_waits() {
    let t = tenants(&[("AIRLOCK_TENANT_TURNS", "2")]).await;
    let gates = Gates::holding(&t.mock, "Working toward it.");
    let mut sessions = Vec::new();
    for _ in 0..3 {
        let s = t.session(&t.a, "openai:mock").await;
        sessions.push((s.clone(), t.sse(&t.a, &s).await));
    }
    let mut goals = Vec::new();
    for (s, _) in &sessions {
        let goal = json!({"objective": "count to three", "maxRounds": 2});
        let (code, set) = t.call(&t.a, "PUT", &format!("/v1/sessions/{s}/goal"), goal).await;
        assert_eq!(code, 200, "{set}");
        goals.push(set);
    }
    // Two rounds run and are held; the third session's round waits, and its goal says so.
    t.mock.requested(2).await;
    let (third, _) = &sessions[2];
    let goal = t.call(&t.a, "GET", &format!("/v1/sessions/{third}/goal"), Value::Null).await.1;
    assert_eq!(goal["waiting"]["code"], "tenant-turns", "{goal}");
    assert_eq!(goal["roundsStarted"], 0);

    // From now on the model answers at once: every round runs, two at a time at most.
    t.mock.otherwise(|_| Reply::text("Done with this round.", 2));
    gates.open();
    let mut all = Vec::new();
    for (s, sse) in &mut sessions {
        sse.until(|f| {
            matches!(f, Frame::Event(_, e) if e["type"] == "goal/change"
                && e["data"]["goal"]["phase"] == "blocked")
        })
        .await;
        let path = format!("/v1/sessions/{s}/events?format=json");
        let log = t.call(&t.a, "GET", &path, Value::Null).await.1;
        let ran = turns(log["events"].as_array().unwrap());
        assert_eq!(ran.len(), 2, "both rounds of {s} ran, none skipped");
        all.extend(ran);
    }
    for &(start, end) in &all {
        // Turns overlapping this one's start (a turn logs its end before its slot is free, so
        // one that starts in the same millisecond as another ends did not overlap it).
        let at_once = all.iter().filter(|&&(s, e)| s <= start && start < e).count();
        assert!(at_once <= 2, "{at_once} rounds ran at once at {start}: {all:?}");
        let _ = end;
    }
}

#[tokio::test]
async fn held_runs_past_tenant_streams_get_429_and_the_next_passes_once_one_ends() {
    let t = tenants(&[("AIRLOCK_TENANT_STREAMS", "2")]).await;
    let gates = Gates::holding(&t.mock, "Taking my time.");
    let run = |s: String| {
        let (client, url) = (t.a.clone(), t.gw.url(&format!("/v1/sessions/{s}/runs")));
        tokio::spawn(async move {
            let res = client.post(url).json(&json!({"content": "hold on"})).send().await.unwrap();
            res.status().as_u16()
        })
    };
    let (one, two, three) = (
        t.session(&t.a, "openai:mock").await,
        t.session(&t.a, "openai:mock").await,
        t.session(&t.a, "openai:mock").await,
    );
    let held_runs = [run(one), run(two)];
    t.mock.requested(2).await;
    let path = format!("/v1/sessions/{three}/runs");
    let (code, refused) = t.call(&t.a, "POST", &path, json!({"content": "me too"})).await;
    assert_eq!((code, refused["error"]["code"].as_str()), (429, Some("quota-exceeded")));
    assert_eq!(refused["error"]["details"]["limit"], "tenant-streams", "{refused}");
    let stream = t.a.get(t.gw.url(&format!("/v1/sessions/{three}/events"))).send().await;
    assert_eq!(stream.unwrap().status(), 429, "a held run and a stream count alike");
    let (code, _) = t.call(&t.b, "POST", "/v1/sessions", json!({})).await;
    assert_eq!(code, 201, "another tenant is not held back");

    t.mock.otherwise(|_| Reply::text("Right away.", 1));
    gates.open();
    for held in held_runs {
        assert_eq!(held.await.unwrap(), 200);
    }
    let (code, done) = t.call(&t.a, "POST", &path, json!({"content": "now?"})).await;
    assert_eq!(code, 200, "{done}");
}

/// The length of the JSON a frame carries.
fn size(frame: &Frame) -> usize {
    match frame {
        Frame::Event(_, data) | Frame::Queue(data) | Frame::Other(_, data) => {
            data.to_string().len()
        }
        Frame::Status(status) => status.len(),
    }
}

/// What each of `subscribers` streams of session `s` receives for one more queued message,
/// after the queue they were shown when they went live: `(queue frame size, change sizes)`.
async fn one_change(w: &World, s: &str, subscribers: usize) -> (usize, Vec<usize>) {
    let last = w.gw.get(&format!("/v1/sessions/{s}/status")).await.1["lastSeq"].clone();
    let mut streams = Vec::new();
    let mut shown = 0;
    for _ in 0..subscribers {
        // Caught up already: the stream goes live at once, and shows the queue there.
        let mut sse = w.gw.sse(s, last.as_u64()).await;
        let frames = sse.until(|f| matches!(f, Frame::Queue(_))).await;
        shown = size(frames.last().unwrap());
        streams.push(sse);
    }
    w.send(s, json!({"content": "one more", "delivery": "inject"})).await;
    let mut changes = Vec::new();
    for sse in &mut streams {
        let frame = sse.next().await;
        assert!(
            matches!(&frame, Frame::Event(_, e) if e["type"] == "agent/inbox/spliced"),
            "the change is its splice, nothing else: {frame:?}"
        );
        changes.push(size(&frame));
    }
    (shown, changes)
}

#[tokio::test]
async fn each_queue_change_sends_every_subscriber_its_splice_whatever_the_queue_length() {
    let w = world_with(&[("AIRLOCK_MAX_QUEUE", "2000")]).await;
    let (short, long) = (w.gw.session().await, w.gw.session().await);
    w.inject(&short, 10).await;
    w.inject(&long, 1000).await;
    let (_, short_changes) = one_change(&w, &short, 5).await;
    let (shown, long_changes) = one_change(&w, &long, 50).await;
    assert!(shown > 50_000, "the queue of 1,000 is shown once, on subscribing: {shown} bytes");
    let each = short_changes[0];
    assert!(each < 1_000, "a change costs its splice: {each} bytes");
    for change in long_changes {
        assert!(change.abs_diff(each) <= 8, "{change} bytes at 1,000 queued, {each} at 10");
    }
}

#[tokio::test]
async fn a_message_past_the_queue_limit_is_429_naming_it() {
    let w = world_with(&[("AIRLOCK_MAX_QUEUE", "3")]).await;
    let s = w.gw.session().await;
    w.inject(&s, 3).await;
    let (code, refused) =
        w.gw.post(&messages(&s), json!({"content": "a fourth", "delivery": "inject"})).await;
    assert_eq!((code, refused["error"]["code"].as_str()), (429, Some("quota-exceeded")));
    assert_eq!(refused["error"]["details"]["limit"], "max-queue");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("3 messages waiting") && message.contains("--max-queue 3"),
        "{message}"
    );
    assert_eq!(
        w.gw.get(&format!("/v1/sessions/{s}/queue")).await.1["items"].as_array().unwrap().len(),
        3
    );
}

#[tokio::test]
async fn past_the_machines_ceiling_new_work_is_503_overloaded_and_running_sessions_go_on() {
    let w = world_with(&[("AIRLOCK_MAX_INSTANCES", "2")]).await;
    let (one, _two) = (w.gw.session().await, w.gw.session().await);
    let res = w.gw.client.post(w.gw.url("/v1/sessions")).json(&json!({})).send().await.unwrap();
    assert_eq!(res.status(), 503);
    assert!(res.headers().contains_key("retry-after"));
    let refused: Value = res.json().await.unwrap();
    assert_eq!(refused["error"]["code"], "overloaded", "{refused}");
    assert_eq!(refused["error"]["details"]["limit"], "max-instances");
    assert_eq!(w.gw.get("/healthz").await.0, 200);
    // A session in memory goes on.
    w.mock.push(Reply::text("Still going.", 2));
    let (code, run) =
        w.gw.post(&format!("/v1/sessions/{one}/runs"), json!({"content": "hi"})).await;
    assert_eq!((code, run["finalResponse"].as_str()), (200, Some("Still going.")), "{run}");
}

#[tokio::test]
async fn a_restart_with_more_running_sessions_than_the_machine_holds_brings_them_all_back() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("airlock.db");
    let mock = MockModel::start().await;
    let gates = Gates::holding(&mock, "Interrupted.");
    let mut gw = Gateway::start(&data, &mock.base_url());
    let _held = gates;
    let mut sessions = Vec::new();
    for _ in 0..5 {
        let s = gw.session().await;
        let (code, _) = gw.post(&messages(&s), json!({"content": "work"})).await;
        assert_eq!(code, 202);
        sessions.push(s);
    }
    mock.requested(5).await;
    gw.kill_9();

    mock.otherwise(|_| Reply::text("Back.", 1));
    let env = [("AIRLOCK_MAX_INSTANCES", "2")];
    let gw = Gateway::start_listening(&data, &mock.base_url(), &env);
    assert_eq!(gw.get("/healthz").await.0, 200, "it answers while it recovers");
    // Two fit at once; the others come back as those go to sleep (their instances freed).
    for s in &sessions {
        let log = until_log(&gw, s, |log| log.iter().any(|e| e["type"] == "turn/end")).await;
        let ended: Vec<&Value> = log.iter().filter(|e| e["type"] == "turn/end").collect();
        assert_eq!(ended[0]["data"]["reason"]["kind"], "interrupted", "{s}");
    }
    let ready = gw.client.get(gw.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);
}

/// The log of session `s` once `holds` says so: a session not in memory yet is not announced
/// to anyone, so this reads its log again every few milliseconds, for at most 60 s.
async fn until_log(gw: &Gateway, s: &str, holds: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (code, page) = gw.get(&format!("/v1/sessions/{s}/events?format=json&limit=5000")).await;
        let log = page["events"].as_array().cloned().unwrap_or_default();
        if code == 200 && holds(&log) {
            return log;
        }
        assert!(std::time::Instant::now() < deadline, "session {s} never got there: {log:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_tenants_sessions_and_forks_a_minute_are_limited_and_another_tenant_is_not() {
    let t = tenants(&[("AIRLOCK_TENANT_CREATES", "3")]).await;
    let s = t.session(&t.a, "demo").await;
    let (code, _) =
        t.call(&t.a, "POST", &messages(&s), json!({"content": "so there is a log"})).await;
    assert_eq!(code, 202);
    let (code, fork) = t.call(&t.a, "POST", &format!("/v1/sessions/{s}/fork"), json!({})).await;
    assert_eq!(code, 201, "{fork}");
    let (code, _) = t.call(&t.a, "POST", "/v1/sessions", json!({})).await;
    assert_eq!(code, 201);
    let (code, refused) = t.call(&t.a, "POST", &format!("/v1/sessions/{s}/fork"), json!({})).await;
    assert_eq!((code, refused["error"]["code"].as_str()), (429, Some("rate-limited")), "{refused}");
    assert_eq!(refused["error"]["details"]["limit"], "tenant-creates");
    let (code, _) = t.call(&t.b, "POST", "/v1/sessions", json!({})).await;
    assert_eq!(code, 201);
    let _ = &t.dir;
}
