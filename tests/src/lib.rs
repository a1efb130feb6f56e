//! Test support for Airlock, shared by the integration tests of the other crates.
//!
//! [`mock_model`] is a real HTTP server that speaks the OpenAI chat-completions streaming wire
//! (server-sent events of `chat.completion.chunk`s), scripted reply by reply, so a test drives the
//! real provider client over a real socket, faults included.
//!
//! [`gateway`] runs the real `airlock serve` binary for end-to-end tests
//! (`tests/tests/all/main.rs`).
//!
//! [`page`] drives the web demo in a real Chromium (`tests/browser.rs`).
//!
//! This crate depends on no Airlock crate: the gateway takes it as a dev-dependency.

pub mod cluster;
pub mod compose;
pub mod gateway;
pub mod mock_model;
pub mod nginx;
pub mod page;
pub mod postgres;
pub mod sse;
pub mod world;

pub use mock_model::{MockModel, Reply};

/// An HTTP client builder, once the crypto provider that the workspace's rustls needs (it is
/// built without a default one) is installed.
pub fn http_client() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

/// The event types of a text turn that streamed `chunks` chunks, in the canonical order of
/// `docs/events.md`.
pub fn text_turn(chunks: usize) -> Vec<&'static str> {
    let mut types = vec![
        "agent/inbox/spliced",
        "turn/start",
        "agent/inbox/spliced",
        "step/start",
        "user/message",
        "request/header",
        "request/context",
    ];
    types.extend(std::iter::repeat_n("assistant/chunk", chunks));
    types.extend(["assistant/message", "step/end", "turn/end"]);
    types
}

/// The ids of the messages a log's splices inserted, in seq order.
pub fn inserted_ids(log: &[serde_json::Value]) -> Vec<&str> {
    log.iter()
        .filter(|e| e["type"] == "agent/inbox/spliced")
        .flat_map(|e| e["data"]["inserted"].as_array().into_iter().flatten())
        .filter_map(|m| m["id"].as_str())
        .collect()
}
