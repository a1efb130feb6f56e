//! Keys and tenants end to end (`docs/http-api.md`, "Keys and tenants"): keys made with
//! `airlock keys`, a real `airlock serve`, and requests as each tenant would make them.

use airlock_tests::MockModel;
use airlock_tests::gateway::{Frame, Gateway, Sse, keyed_client, keys};
use airlock_tests::world::{held, tenants, tenants_with};
use reqwest::{Client, Method};
use serde_json::{Value, json};

async fn call(client: &Client, method: Method, url: String, body: Option<Value>) -> (u16, Value) {
    let mut request = client.request(method, url);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let res = request.send().await.unwrap();
    (res.status().as_u16(), res.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_tenant_reaches_only_its_own_sessions_and_a_revoked_key_is_refused() {
    let t = tenants().await;
    let (a, b, admin) = (keyed_client(&t.a), keyed_client(&t.b), keyed_client(&t.admin));
    let url = |path: &str| t.gw.url(path);
    let (code, made) = call(&b, Method::POST, url("/v1/sessions"), Some(json!({}))).await;
    assert_eq!(code, 201, "{made}");
    let theirs = made["sessionId"].as_str().unwrap().to_owned();
    let (code, _) =
        call(&a, Method::POST, url("/v1/sessions"), Some(json!({"sessionId": "mine"}))).await;
    assert_eq!(code, 201);

    // Every route of B's session answers A as if it did not exist.
    let s = format!("/v1/sessions/{theirs}");
    let routes = [
        (Method::GET, s.clone(), None),
        (Method::GET, format!("{s}/status"), None),
        (Method::GET, format!("{s}/events?format=json"), None),
        (Method::GET, format!("{s}/events"), None),
        (Method::POST, format!("{s}/messages"), Some(json!({"content": "hi"}))),
        (Method::GET, format!("{s}/messages/m1"), None),
        (Method::POST, format!("{s}/runs"), Some(json!({"content": "hi"}))),
        (Method::POST, format!("{s}/cancel"), Some(json!({}))),
        (Method::GET, format!("{s}/queue"), None),
        (Method::PATCH, format!("{s}/queue/m1"), Some(json!({"content": "x"}))),
        (Method::DELETE, format!("{s}/queue/m1"), None),
        (Method::POST, format!("{s}/queue/m1/steer"), None),
        (Method::PUT, format!("{s}/goal"), Some(json!({"objective": "take over"}))),
        (Method::GET, format!("{s}/goal"), None),
        (Method::DELETE, format!("{s}/goal"), None),
        (Method::GET, format!("{s}/children"), None),
        (Method::GET, format!("{s}/files"), None),
        (Method::GET, format!("{s}/files/a.txt"), None),
        (Method::PUT, format!("{s}/files/a.txt"), Some(json!("x"))),
        (Method::DELETE, format!("{s}/files/a.txt"), None),
        (Method::DELETE, s.clone(), None),
    ];
    for (method, path, body) in routes {
        let (code, answer) = call(&a, method.clone(), url(&path), body).await;
        assert_eq!(code, 404, "{method} {path}: {answer}");
        assert_eq!(answer["error"]["code"], "session-not-found", "{method} {path}");
    }
    // Nor can A take B's id.
    let (code, _) =
        call(&a, Method::POST, url("/v1/sessions"), Some(json!({"sessionId": theirs}))).await;
    assert_eq!(code, 409);

    // Lists show each tenant its own; the admin key sees both.
    let ids = |page: Value| -> Vec<String> {
        let items = page["items"].as_array().unwrap().iter();
        items.map(|s| s["sessionId"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(ids(call(&a, Method::GET, url("/v1/sessions"), None).await.1), ["mine"]);
    let listed = ids(call(&b, Method::GET, url("/v1/sessions"), None).await.1);
    assert_eq!(listed, std::slice::from_ref(&theirs));
    let mut all = ids(call(&admin, Method::GET, url("/v1/sessions"), None).await.1);
    all.sort();
    let mut expected = vec!["mine".to_owned(), theirs.clone()];
    expected.sort();
    assert_eq!(all, expected);
    let (code, _) = call(&admin, Method::GET, url(&s), None).await;
    assert_eq!(code, 200, "the admin key reaches every tenant");

    // `/v1/events` shows A only A's sessions: B's new one never appears before A's.
    let mut hub = airlock_tests::gateway::Sse::of(a.get(url("/v1/events")).send().await.unwrap());
    call(&b, Method::POST, url("/v1/sessions"), Some(json!({"sessionId": "b2"}))).await;
    call(&a, Method::POST, url("/v1/sessions"), Some(json!({"sessionId": "a2"}))).await;
    let added = hub.until(|f| matches!(f, Frame::Other(name, _) if name == "session.added")).await;
    let Some(Frame::Other(_, data)) = added.last() else { unreachable!() };
    assert_eq!(data["sessionId"], "a2", "{added:?}");

    // No key, a made-up key, a revoked key: 401.
    let (code, answer) = call(&t.gw.client, Method::GET, url("/v1/sessions"), None).await;
    assert_eq!((code, answer["error"]["code"].as_str()), (401, Some("unauthorized")));
    let (code, _) = call(&keyed_client("ak_0_0"), Method::GET, url("/v1/sessions"), None).await;
    assert_eq!(code, 401);
    let key_id = t.a.split('_').nth(1).unwrap();
    keys(&t.data, &["revoke", key_id]);
    let (code, answer) = call(&a, Method::GET, url("/v1/sessions/mine"), None).await;
    assert_eq!(code, 401, "{answer}");
    let listed = keys(&t.data, &["list"]);
    assert!(listed.contains(key_id) && !listed.contains(&t.a), "never the key itself: {listed}");
}

#[tokio::test]
async fn on_loopback_without_keys_a_foreign_host_and_a_cross_origin_post_get_403() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start().await;
    let gw = Gateway::start(&dir.path().join("airlock.db"), &mock.base_url());
    let client = &gw.client;
    let rebound = client.get(gw.url("/v1/sessions")).header("host", "evil.example:7700");
    let res = rebound.send().await.unwrap();
    assert_eq!(res.status(), 403);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "forbidden-host");

    let page = |origin: &str| {
        client.post(gw.url("/v1/sessions")).header("origin", origin).json(&json!({}))
    };
    let res = page("http://evil.example").send().await.unwrap();
    assert_eq!(res.status(), 403);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "cross-origin");
    // A bodyless POST is refused as well.
    let cancel =
        client.post(gw.url("/v1/sessions/x/cancel")).header("origin", "http://evil.example");
    assert_eq!(cancel.send().await.unwrap().status(), 403);

    // The page the gateway serves itself, and curl (no Origin), may.
    assert_eq!(page(&gw.base).send().await.unwrap().status(), 201);
    let (code, _) = gw.post("/v1/sessions", json!({})).await;
    assert_eq!(code, 201);
    // Reading is no change: a GET from elsewhere is answered (CORS decides what a page sees).
    let read = client.get(gw.url("/v1/sessions")).header("origin", "http://evil.example");
    assert_eq!(read.send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn a_tenant_past_its_quotas_gets_429_and_other_tenants_do_not() {
    let env = [
        ("AIRLOCK_TENANT_SESSIONS", "2"),
        ("AIRLOCK_TENANT_STREAMS", "1"),
        ("AIRLOCK_TENANT_RATE", "1"),
    ];
    let t = tenants_with(&env).await;
    let (a, b) = (keyed_client(&t.a), keyed_client(&t.b));
    let url = |path: &str| t.gw.url(path);
    for id in ["s1", "s2"] {
        let (code, _) =
            call(&a, Method::POST, url("/v1/sessions"), Some(json!({"sessionId": id}))).await;
        assert_eq!(code, 201);
    }
    let res = a.post(url("/v1/sessions")).json(&json!({})).send().await.unwrap();
    assert_eq!(res.status(), 429);
    assert_eq!(res.headers()["retry-after"], "1");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "quota-exceeded", "{body}");
    let (code, _) = call(&b, Method::POST, url("/v1/sessions"), Some(json!({}))).await;
    assert_eq!(code, 201, "another tenant's quota is its own");

    // One message a second, in bursts of two.
    let send = || a.post(url("/v1/sessions/s1/messages")).json(&json!({"content": "hi"}));
    assert_eq!(send().send().await.unwrap().status(), 202);
    assert_eq!(send().send().await.unwrap().status(), 202);
    let res = send().send().await.unwrap();
    assert_eq!(res.status(), 429);
    assert!(res.headers().contains_key("retry-after"));
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate-limited", "{body}");

    // One event stream at a time.
    let first = a.get(url("/v1/sessions/s2/events")).send().await.unwrap();
    assert_eq!(first.status(), 200);
    let second = a.get(url("/v1/events")).send().await.unwrap();
    assert_eq!(second.status(), 429);
    drop(first);
}

#[tokio::test]
async fn a_tenant_at_its_running_turns_quota_gets_429_for_a_message_that_would_wake_another() {
    let t = tenants_with(&[("AIRLOCK_TENANT_TURNS", "1"), ("AIRLOCK_TENANT_RATE", "0")]).await;
    let (a, b) = (keyed_client(&t.a), keyed_client(&t.b));
    let url = |path: &str| t.gw.url(path);
    let (reply, gate) = held("Working on it.");
    t.mock.push(reply);
    for (client, id) in [(&a, "a1"), (&a, "a2"), (&b, "b1")] {
        let body = json!({"sessionId": id, "model": "openai:mock"});
        assert_eq!(call(client, Method::POST, url("/v1/sessions"), Some(body)).await.0, 201);
    }
    let send = async |client: &Client, id: &str, delivery: &str| {
        let body = json!({"content": "hi", "delivery": delivery});
        call(client, Method::POST, url(&format!("/v1/sessions/{id}/messages")), Some(body)).await
    };
    let mut a1 = Sse::of(a.get(url("/v1/sessions/a1/events")).send().await.unwrap());
    assert_eq!(send(&a, "a1", "followup").await.0, 202);
    t.mock.requested(1).await; // a1 runs its turn, held by the mock

    let (code, body) = send(&a, "a2", "followup").await;
    assert_eq!((code, body["error"]["code"].as_str()), (429, Some("quota-exceeded")), "{body}");
    let (code, body) =
        call(&a, Method::POST, url("/v1/runs"), Some(json!({"content": "hi"}))).await;
    assert_eq!(code, 429, "a run in a new session would wake one more: {body}");
    assert_eq!(send(&a, "a2", "inject").await.0, 202, "context wakes nothing");
    assert_eq!(send(&a, "a1", "followup").await.0, 202, "a followup to the running one waits");
    assert_eq!(send(&b, "b1", "followup").await.0, 202, "another tenant's quota is its own");

    gate.notify_one();
    a1.until_idle().await;
    assert_eq!(send(&a, "a2", "followup").await.0, 202, "room again once a1 is idle");
}

/// What the clients spinning on a gateway's port got: every answer's status, and how many there
/// are so far, to wait on.
struct Answers {
    statuses: std::sync::Mutex<Vec<u16>>,
    count: tokio::sync::watch::Sender<usize>,
}

impl Answers {
    fn new() -> std::sync::Arc<Answers> {
        std::sync::Arc::new(Answers { statuses: Default::default(), count: Default::default() })
    }

    fn push(&self, status: u16) {
        self.statuses.lock().unwrap().push(status);
        self.count.send_modify(|count| *count += 1);
    }

    /// Waits until `more` answers came after the `seen`-th.
    async fn more_than(&self, seen: usize, more: usize) -> usize {
        *self.count.subscribe().wait_for(|count| *count >= seen + more).await.unwrap()
    }
}

// Two workers: the clients go on spinning while the test's own task waits for a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_spinning_on_the_port_through_ten_restarts_of_a_keyed_gateway_never_pass_keyless() {
    let mut t = tenants().await;
    let (a, b) = (keyed_client(&t.a), keyed_client(&t.b));
    let (code, made) =
        call(&a, Method::POST, t.gw.url("/v1/sessions"), Some(json!({"sessionId": "theirs"})))
            .await;
    assert_eq!(code, 201, "{made}");
    let base = t.gw.base.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (keyless, other) = (Answers::new(), Answers::new());
    let mut clients = Vec::new();
    for i in 0..24 {
        // Half ask with no key; half with tenant B's key for tenant A's session.
        let (client, answers, path) = match i % 2 {
            0 => (airlock_tests::http_client().build().unwrap(), keyless.clone(), "/v1/sessions"),
            _ => (b.clone(), other.clone(), "/v1/sessions/theirs"),
        };
        let (url, stop) = (format!("{base}{path}"), stop.clone());
        clients.push(tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // A refused or reset connection (the gateway restarting) is no answer.
                if let Ok(res) = client.get(&url).send().await {
                    answers.push(res.status().as_u16());
                }
                tokio::task::yield_now().await;
            }
        }));
    }
    let (mut keyless_seen, mut other_seen) = (0, 0);
    for _ in 0..10 {
        t.gw = t.gw.restart_in_place();
        // Each incarnation, once started, still keeps A's session from B, and answers the
        // spinning clients a while before the next restart.
        let fresh = keyed_client(&t.b);
        let (code, _) = call(&fresh, Method::GET, t.gw.url("/v1/sessions/theirs"), None).await;
        assert_eq!(code, 404);
        keyless_seen = keyless.more_than(keyless_seen, 24).await;
        other_seen = other.more_than(other_seen, 24).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for client in clients {
        client.await.unwrap();
    }
    let keyless = keyless.statuses.lock().unwrap().clone();
    let other = other.statuses.lock().unwrap().clone();
    let wrong: Vec<u16> = keyless.iter().copied().filter(|s| ![401, 503].contains(s)).collect();
    assert!(wrong.is_empty(), "a request without a key got {wrong:?}");
    let wrong: Vec<u16> = other.iter().copied().filter(|s| ![404, 503].contains(s)).collect();
    assert!(wrong.is_empty(), "another tenant's session answered {wrong:?}");
}

/// The `airlock_session` cookie a `Set-Cookie` header sets, and the header.
fn sign_in_cookie(res: &reqwest::Response) -> (String, String) {
    let header = res.headers()["set-cookie"].to_str().unwrap().to_owned();
    let value = header.split(';').next().unwrap().strip_prefix("airlock_session=").unwrap();
    (value.to_owned(), header)
}

#[tokio::test]
async fn the_sign_in_cookie_is_a_token_not_the_key_and_sign_out_or_revoking_ends_it() {
    let t = tenants_with(&[("AIRLOCK_PUBLIC_URL", "https://agents.example")]).await;
    let plain = airlock_tests::http_client().build().unwrap();
    let login = || {
        // The scheme in any case (RFC 7235).
        plain.post(t.gw.url("/v1/login")).header("authorization", format!("bEaReR {}", t.a))
    };
    let res = login().send().await.unwrap();
    assert_eq!(res.status(), 200);
    let (token, header) = sign_in_cookie(&res);
    assert!(!token.contains(&t.a) && !t.a.contains(&token), "the cookie is not the key");
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/v1", "Secure"] {
        assert!(header.contains(attribute), "{attribute} missing: {header}");
    }
    let with = |token: &str| {
        plain.get(t.gw.url("/v1/sessions")).header("cookie", format!("airlock_session={token}"))
    };
    assert_eq!(with(&token).send().await.unwrap().status(), 200);
    assert_eq!(with(&t.a).send().await.unwrap().status(), 401, "the key itself is no cookie");

    // Signing out ends the token everywhere, not only in this browser.
    let out =
        plain.post(t.gw.url("/v1/logout")).header("cookie", format!("airlock_session={token}"));
    assert_eq!(out.send().await.unwrap().status(), 204);
    assert_eq!(with(&token).send().await.unwrap().status(), 401);

    // Revoking the key ends its sign-ins.
    let (again, _) = sign_in_cookie(&login().send().await.unwrap());
    assert_eq!(with(&again).send().await.unwrap().status(), 200);
    keys(&t.data, &["revoke", t.a.split('_').nth(1).unwrap()]);
    let res = with(&again).send().await.unwrap();
    assert_eq!(res.status(), 401);
    let body: Value = res.json().await.unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("sign in again"), "{body}");
}

#[tokio::test]
async fn a_gateway_without_keys_refuses_to_start_with_cors_origin_any() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(airlock_tests::gateway::airlock_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--cors-origin", "*", "--data"])
        .arg(dir.path().join("airlock.db"))
        .env("AIRLOCK_CACHE_DIR", airlock_tests::gateway::compiled_cache())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--cors-origin '*' without API keys"), "{stderr}");
    assert!(stderr.contains("airlock keys create"), "it says what to do: {stderr}");
}
