//! The shared harness of the HTTP tests: a real gateway on port 0 over a temp SQLite file, a
//! client, and an SSE reader that waits for frames (never sleeps).

#![allow(dead_code)]

pub mod acp;

use std::path::PathBuf;
use std::time::Duration;

use std::sync::Arc;

use airlock_gateway::server::{Gateway, Settings};
use airlock_providers::tools::ToolRegistry;
use airlock_sandbox::core_host::CoreHost;
use airlock_sessions::{Rules, Sessions};
use airlock_store::{Durability, Store};
use eventsource_stream::{Event, Eventsource};
use futures::{Stream, StreamExt};
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// A running gateway; dropping it shuts it down.
pub struct TestGateway {
    pub base: String,
    pub client: reqwest::Client,
    /// Its store (a test injects faults through it).
    pub store: airlock_store::Store,
    /// Its SQLite file.
    data: PathBuf,
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<()>>,
}

/// This build's `airlock`, keeping its compiled code where every test's gateway does.
pub fn airlock() -> std::process::Command {
    let mut airlock = std::process::Command::new(env!("CARGO_BIN_EXE_airlock"));
    airlock.env("AIRLOCK_CACHE_DIR", airlock_tests::gateway::compiled_cache());
    airlock
}

/// What the test gateways' sessions are built with: the demo model, every default.
pub fn demo_rules() -> Rules {
    Rules { default_model: "demo".into(), ..Rules::default() }
}

fn settings(data: PathBuf) -> Settings {
    Settings {
        data,
        shared: None,
        durability: Durability::Normal,
        max_body: 1024,
        cors_origins: Vec::new(),
        cache_dir: Some(airlock_tests::gateway::compiled_cache()),
        sandbox: Default::default(),
        rules: demo_rules(),
        connections: Default::default(),
        public_url: None,
        metrics: Default::default(),
        webhooks: Default::default(),
        declared: Default::default(),
        traces: None,
    }
}

/// Starts a gateway on `data` (a file in a temp dir the caller keeps).
pub async fn start(data: PathBuf) -> TestGateway {
    airlock_providers::model::install_tls();
    let gateway = Gateway::start(settings(data)).await.expect("gateway starts");
    gateway.recovered().await;
    serve(gateway).await
}

/// Starts a gateway on a fresh file in its own temp dir, which lives as long as the guard.
pub async fn fresh() -> (tempfile::TempDir, TestGateway) {
    let dir = tempfile::tempdir().unwrap();
    let gw = start(dir.path().join("airlock.db")).await;
    (dir, gw)
}

/// Starts a gateway on `data` whose sessions run in `host` (e.g. one with a tiny fuel budget).
pub async fn start_with_host(data: PathBuf, host: CoreHost) -> TestGateway {
    let store = Store::open(&data, Durability::Normal).unwrap();
    let sessions = Sessions::new(store, Arc::new(host), ToolRegistry::builtin(), demo_rules());
    serve(Gateway::over(sessions, settings(data)).await.expect("the gateway starts")).await
}

async fn serve(gateway: Gateway) -> TestGateway {
    let store = gateway.sessions().store().clone();
    let data = store.sqlite_path().expect("test gateways use SQLite").to_owned();
    let (listener, addr) = gateway.bind("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let done = tokio::spawn(async move {
        gateway.run(listener, async { drop(stopped.await) }).await;
    });
    TestGateway {
        base: format!("http://{addr}"),
        client: reqwest::Client::new(),
        store,
        data,
        stop: Some(stop),
        done: Some(done),
    }
}

impl TestGateway {
    /// Stops it gracefully and waits until it has.
    pub async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.done.take().unwrap().await.unwrap();
    }

    /// Stops it gracefully, then starts a gateway on the same file.
    pub async fn restart(self) -> TestGateway {
        let data = self.data.clone();
        self.stop().await;
        start(data).await
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `POST /v1/sessions` → the session id.
    pub async fn session(&self) -> String {
        let res = self.client.post(self.url("/v1/sessions")).send().await.unwrap();
        assert_eq!(res.status(), 201);
        res.json::<Value>().await.unwrap()["sessionId"].as_str().unwrap().to_owned()
    }

    /// `POST …/messages` with a JSON body → (status, body).
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let res = self.client.post(self.url(path)).json(&body).send().await.unwrap();
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let res = self.client.get(self.url(path)).send().await.unwrap();
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    /// Opens the SSE stream of a session with optional extra query / Last-Event-ID.
    pub async fn sse(&self, session: &str, query: &str, last_event_id: Option<u64>) -> Sse {
        let mut req = self.client.get(self.url(&format!("/v1/sessions/{session}/events{query}")));
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id.to_string());
        }
        let res = req.send().await.unwrap();
        assert_eq!(res.status(), 200);
        assert!(res.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
        Sse { events: Box::pin(res.bytes_stream().eventsource()) }
    }

    /// Sends `text` to an idle session and waits for its turn on the session's stream; answers
    /// the stream, still open, and how many log events it showed.
    pub async fn turn(&self, session: &str, text: &str) -> (Sse, usize) {
        let mut sse = self.sse(session, "", None).await;
        let (code, _) =
            self.post(&format!("/v1/sessions/{session}/messages"), json!({"content": text})).await;
        assert_eq!(code, 202);
        let logged = sse.until_idle().await.iter().filter(|(id, _)| id.is_some()).count();
        (sse, logged)
    }

    /// The log of a session, as JSON events.
    pub async fn log(&self, session: &str) -> Vec<Value> {
        let (status, page) =
            self.get(&format!("/v1/sessions/{session}/events?format=json&limit=5000")).await;
        assert_eq!(status, 200);
        page["events"].as_array().unwrap().clone()
    }
}

/// An open SSE stream.
pub struct Sse {
    events: std::pin::Pin<
        Box<
            dyn Stream<Item = Result<Event, eventsource_stream::EventStreamError<reqwest::Error>>>
                + Send,
        >,
    >,
}

impl Sse {
    /// The next frame (fails the test after 20 s: a hung stream is a bug).
    pub async fn next(&mut self) -> Event {
        tokio::time::timeout(Duration::from_secs(20), self.events.next())
            .await
            .expect("a frame within 20 s")
            .expect("the stream is open")
            .expect("a well-formed frame")
    }

    /// Whether the server ended the stream (within 20 s).
    pub async fn ended(&mut self) -> bool {
        loop {
            match tokio::time::timeout(Duration::from_secs(20), self.events.next()).await {
                Ok(None) | Ok(Some(Err(_))) => return true,
                Ok(Some(Ok(_))) => continue,
                Err(_) => return false,
            }
        }
    }

    /// Frames until (and including) a `session.status` frame with `idle` that follows a
    /// `turn/end`; returns them as `"type"` lines for log events and `status X` for status.
    pub async fn until_idle(&mut self) -> Vec<(Option<u64>, String)> {
        let mut frames = Vec::new();
        let mut ended = false;
        loop {
            let frame = self.next().await;
            let data: Value = serde_json::from_str(&frame.data).unwrap_or(Value::Null);
            let line = match frame.event.as_str() {
                "session.event" => {
                    ended |= data["type"] == "turn/end";
                    data["type"].as_str().unwrap().to_owned()
                }
                "session.status" => format!("status {}", data["status"].as_str().unwrap()),
                other => other.to_owned(),
            };
            // SSE keeps the last id for later frames; only log events carry their own.
            let id = (frame.event == "session.event").then(|| frame.id.parse().ok()).flatten();
            let done = ended && line == "status idle";
            frames.push((id, line));
            if done {
                return frames;
            }
        }
    }
}
