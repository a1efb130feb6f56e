//! The usual end-to-end setting: a mock model and a real `airlock serve` on a temp SQLite file,
//! plus the helpers most tests share.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::Notify;

use crate::gateway::{Frame, Gateway, Sse, keys};
use crate::{MockModel, Reply};

/// A mock model and a gateway whose `openai:` sessions it answers.
pub struct World {
    /// The temp dir holding the database and the core cache.
    pub dir: tempfile::TempDir,
    /// The model.
    pub mock: MockModel,
    /// The gateway.
    pub gw: Gateway,
}

/// A gateway whose data file has keys for tenants `a` and `b` and an admin key (of tenant `ops`).
pub struct Tenants {
    /// The temp dir holding the data file.
    pub dir: tempfile::TempDir,
    /// The model.
    pub mock: MockModel,
    /// The gateway.
    pub gw: Gateway,
    /// The data file.
    pub data: std::path::PathBuf,
    /// Tenant `a`'s key.
    pub a: String,
    /// Tenant `b`'s key.
    pub b: String,
    /// The admin key.
    pub admin: String,
}

/// [`Tenants`] on a fresh data file.
pub async fn tenants() -> Tenants {
    tenants_with(&[]).await
}

/// [`tenants`] whose gateway gets extra environment.
pub async fn tenants_with(env: &[(&str, &str)]) -> Tenants {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start().await;
    let data = dir.path().join("airlock.db");
    let [a, b] = ["a", "b"].map(|tenant| keys(&data, &["create", "--tenant", tenant]));
    let admin = keys(&data, &["create", "--tenant", "ops", "--admin"]);
    let gw = Gateway::start_with(&data, &mock.base_url(), env);
    Tenants { dir, mock, gw, data, a, b, admin }
}

/// A fresh world.
pub async fn world() -> World {
    world_with(&[]).await
}

/// A world whose gateway gets extra environment (timeouts, body limit).
pub async fn world_with(env: &[(&str, &str)]) -> World {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start().await;
    let gw = Gateway::start_with(&dir.path().join("airlock.db"), &mock.base_url(), env);
    World { dir, mock, gw }
}

impl World {
    /// Queues `count` injected messages in session `s` (context that wakes nothing), sixteen
    /// requests at a time: a long queue, or a long log, made fast.
    pub async fn inject(&self, s: &str, count: usize) {
        use futures::StreamExt;
        let sends = (0..count).map(|i| {
            let (client, url) = (self.gw.client.clone(), self.gw.url(&messages(s)));
            async move {
                let body =
                    serde_json::json!({"content": format!("note {i}"), "delivery": "inject"});
                let res = client.post(url).json(&body).send().await.unwrap();
                assert_eq!(res.status(), 202, "{}", res.text().await.unwrap());
            }
        });
        futures::stream::iter(sends).buffer_unordered(16).collect::<Vec<()>>().await;
    }

    /// Runs `content` (a string or blocks) in session `s` as an owned run: its result, once
    /// everything the session did before it is done too.
    pub async fn run(&self, s: &str, content: impl Into<Value>) -> Value {
        let body = serde_json::json!({"content": content.into()});
        let (code, result) = self.gw.post(&format!("/v1/sessions/{s}/runs"), body).await;
        assert_eq!(code, 200, "{result}");
        result
    }

    /// Sends a message (`{content, delivery?}`); answers its id once it was accepted.
    pub async fn send(&self, s: &str, body: Value) -> String {
        let (code, receipt) = self.gw.post(&messages(s), body).await;
        assert_eq!(code, 202, "{receipt}");
        receipt["messageId"].as_str().unwrap().to_owned()
    }
}

/// `/v1/sessions/{s}/messages`.
pub fn messages(s: &str) -> String {
    format!("/v1/sessions/{s}/messages")
}

/// A reply held after its first chunk until the gate opens: the turn runs while the test acts.
pub fn held(text: &str) -> (Reply, Arc<Notify>) {
    let gate = Arc::new(Notify::new());
    (Reply::text(text, 3).hold_until(gate.clone()), gate)
}

/// A fresh world whose model streams `first` and then holds it until the gate is notified,
/// answering `then` after it; and a session, its stream open from the start.
pub async fn holding(
    first: &str,
    then: impl IntoIterator<Item = Reply>,
) -> (World, String, Sse, Arc<Notify>) {
    let w = world().await;
    let (reply, gate) = held(first);
    w.mock.push(reply);
    for reply in then {
        w.mock.push(reply);
    }
    let s = w.gw.session().await;
    let sse = w.gw.sse(&s, None).await;
    (w, s, sse, gate)
}

/// Whether a frame is an `assistant/chunk` event (a turn is streaming).
pub fn first_chunk(frame: &Frame) -> bool {
    matches!(frame, Frame::Event(_, e) if e["type"] == "assistant/chunk")
}
