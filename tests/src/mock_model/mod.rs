//! A scriptable mock of the chat-completions and messages (Anthropic) streaming APIs, bound to
//! `127.0.0.1`, port 0.
//!
//! ```no_run
//! # async fn demo() {
//! use airlock_tests::{MockModel, Reply};
//!
//! let mock = MockModel::start().await;
//! mock.push(Reply::status(500)).push(Reply::text("hello", 3));
//! let base_url = mock.base_url(); // http://127.0.0.1:PORT/v1
//! // ... point the client at `base_url` and run it ...
//! assert_eq!(mock.requests().len(), 2);
//! # }
//! ```
//!
//! Each `POST /v1/chat/completions` or `POST /v1/messages` records its body, then takes the next
//! [`Reply`] from the script (a short default text when the script is empty) and plays it in the
//! wire it came in on: an HTTP error, or a stream of chunks with optional delays and faults.
//! Nothing else is served.

mod reply;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header::{AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::serve::ListenerExt;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use reply::Reply;

use reply::{Played, Wire};

/// What the server shares with its handler.
struct Shared {
    script: Mutex<VecDeque<Reply>>,
    /// Replies for requests whose last message contains a marker, taken before the script.
    routed: Mutex<Vec<(String, Reply)>>,
    requests: Mutex<Vec<Recorded>>,
    /// Bodies are not kept (a benchmark's thousands of long requests).
    forget: std::sync::atomic::AtomicBool,
    /// Usage reports the request's size ([`MockModel::count_prompt_tokens`]).
    counted: std::sync::atomic::AtomicBool,
    /// How many requests have arrived.
    arrived: tokio::sync::watch::Sender<usize>,
    /// The reply to a request that finds the script empty, made from its number (1 for the
    /// first request); `None`: a short text.
    otherwise: Mutex<Option<Otherwise>>,
}

/// What [`MockModel::otherwise`] answers with.
type Otherwise = Box<dyn Fn(usize) -> Reply + Send>;

impl Default for Shared {
    fn default() -> Self {
        Shared {
            script: Mutex::default(),
            routed: Mutex::default(),
            requests: Mutex::default(),
            forget: false.into(),
            counted: false.into(),
            arrived: tokio::sync::watch::Sender::new(0),
            otherwise: Mutex::default(),
        }
    }
}

/// One request as it arrived.
struct Recorded {
    body: Value,
    headers: HeaderMap,
}

/// A running mock model server; it stops when dropped.
pub struct MockModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: JoinHandle<()>,
}

impl MockModel {
    /// Binds `127.0.0.1:0` and starts serving with an empty script.
    pub async fn start() -> MockModel {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("a bound listener has an address");
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/v1/chat/completions", post(|s, h, b| answer(s, h, b, Wire::Chat)))
            .route("/v1/messages", post(|s, h, b| answer(s, h, b, Wire::Messages)))
            .with_state(shared.clone());
        let server = tokio::spawn(async move {
            // Each chunk goes out when it is written, as a real provider streams it.
            let listener = listener.tap_io(|tcp| drop(tcp.set_nodelay(true)));
            axum::serve(listener, app).await.expect("the mock model server runs");
        });
        MockModel { addr, shared, server }
    }

    /// The base URL a client is configured with, version path included:
    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues the reply to the next request that finds the script otherwise empty.
    pub fn push(&self, reply: Reply) -> &Self {
        lock(&self.shared.script).push_back(reply);
        self
    }

    /// Queues a reply for the first request whose last message contains `marker`, whatever
    /// the order requests arrive in (sessions that run at once, like a parent and its child).
    pub fn push_for(&self, marker: &str, reply: Reply) -> &Self {
        lock(&self.shared.routed).push((marker.to_owned(), reply));
        self
    }

    /// From now on, answers a request that finds the script empty with `reply(n)`, `n` being the
    /// request's number (1 for the first): a model that does the same thing every step.
    pub fn otherwise(&self, reply: impl Fn(usize) -> Reply + Send + 'static) -> &Self {
        *lock(&self.shared.otherwise) = Some(Box::new(reply));
        self
    }

    /// The bodies of every request received so far, in order (a body that is not JSON is
    /// recorded as a JSON string).
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.shared.requests).iter().map(|r| r.body.clone()).collect()
    }

    /// Resolves once `count` requests have arrived in all (a test's "the model was asked").
    pub async fn requested(&self, count: usize) {
        let mut arrived = self.shared.arrived.subscribe();
        arrived.wait_for(|n| *n >= count).await.expect("the mock holds the sender");
    }

    /// Stops keeping request bodies: [`MockModel::requests`] answers only those before, and
    /// [`MockModel::requested`] still counts every request.
    pub fn forget_requests(&self) {
        self.shared.forget.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// From now on, every reply's usage (unless scripted) counts a prompt token per four bytes
    /// of the request's messages, so a growing conversation reports growing `prompt_tokens`.
    pub fn count_prompt_tokens(&self) {
        self.shared.counted.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// The `Authorization` header of every request received so far, in order.
    pub fn authorizations(&self) -> Vec<Option<String>> {
        self.header(AUTHORIZATION.as_str())
    }

    /// The header `name` of every request received so far, in order.
    pub fn header(&self, name: &str) -> Vec<Option<String>> {
        let requests = lock(&self.shared.requests);
        let value = |r: &Recorded| r.headers.get(name)?.to_str().ok().map(str::to_owned);
        requests.iter().map(value).collect()
    }
}

impl Drop for MockModel {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// What a reply takes from its request, read without building the body's tree: the messages
/// stay slices of the body, so a benchmark's conversations of thousands of messages cost the
/// mock next to nothing. (The sender writes compact JSON, so a message's text is what
/// [`Value::to_string`] would give.)
#[derive(Default, serde::Deserialize)]
struct Asked<'body> {
    #[serde(default)]
    model: Value,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    #[serde(borrow, default)]
    messages: Vec<&'body RawValue>,
}

#[derive(serde::Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

impl Asked<'_> {
    /// Whether the request asked for a usage frame (`stream_options.include_usage`).
    fn include_usage(&self) -> bool {
        self.stream_options.as_ref().is_some_and(|options| options.include_usage)
    }

    /// The length of the request's `messages` array as JSON text.
    fn messages_len(&self) -> usize {
        let commas = self.messages.len().saturating_sub(1);
        2 + commas + self.messages.iter().map(|message| message.get().len()).sum::<usize>()
    }
}

/// A poisoned lock only means another test thread panicked; the data is still usable.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn answer(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
    wire: Wire,
) -> Response {
    if !shared.forget.load(std::sync::atomic::Ordering::Relaxed) {
        let body = serde_json::from_slice(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
        lock(&shared.requests).push(Recorded { body, headers });
    }
    let asked: Asked = serde_json::from_slice(&body).unwrap_or_default();
    let mut number = 0;
    shared.arrived.send_modify(|arrived| {
        *arrived += 1;
        number = *arrived;
    });
    let routed = {
        let mut routed = lock(&shared.routed);
        let last = asked.messages.last().map(|last| last.get());
        let found =
            last.and_then(|last| routed.iter().position(|(marker, _)| last.contains(marker)));
        found.map(|index| routed.remove(index).1)
    };
    let scripted = routed.or_else(|| lock(&shared.script).pop_front());
    let mut reply = scripted.unwrap_or_else(|| match &*lock(&shared.otherwise) {
        Some(otherwise) => otherwise(number),
        None => Reply::default(),
    });
    if shared.counted.load(std::sync::atomic::Ordering::Relaxed) {
        reply = reply.counted();
    }
    match reply.play(&asked, number, wire) {
        Played::Status { status, retry_after, body } => {
            let status = StatusCode::from_u16(status).expect("a scripted status is valid");
            let mut response = (status, [(CONTENT_TYPE, "application/json")], body).into_response();
            if let Some(value) = retry_after {
                let value = value.parse().expect("a scripted Retry-After is a valid header");
                response.headers_mut().insert(RETRY_AFTER, value);
            }
            response
        }
        Played::Stream(frames) => {
            let headers = [(CONTENT_TYPE, "text/event-stream"), (CACHE_CONTROL, "no-cache")];
            (headers, Body::from_stream(frames)).into_response()
        }
    }
}
