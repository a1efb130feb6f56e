//! Models over HTTP: one transport, one configuration and one error mapping for every wire.
//!
//! One request is one streaming `POST` to the provider's endpoint:
//! 1. The wire (`openai`: chat completions; `anthropic`: messages) turns the [`ModelRequest`]
//!    into the JSON body.
//! 2. The answer's status is checked; a non-2xx becomes a [`ModelError`] through `errors`.
//! 3. The body is read under the first-byte and stall timeouts, parsed as server-sent events by
//!    `eventsource-stream`, and the wire's decoder turns each event into stream chunks until the
//!    wire's last event.
//!
//! The stream ends at its first error; the provider never retries (the core does). Dropping the
//! stream drops the connection.

mod config;
mod encoded;
pub(super) mod errors;

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, SystemTime};

use airlock_core::{ModelError, ModelRequest, StreamChunk};
use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use reqwest::header::CONTENT_TYPE;
use tokio::time::{Instant, timeout_at};

pub use config::{RemoteConfig, Timeouts, Wire, is_remote, providers};
pub(super) use encoded::Encoded;

use super::{ChunkStream, ModelProvider, ModelSetupError, anthropic, openai};

/// A streaming client for one provider and model, speaking its wire.
#[derive(Debug)]
pub struct Remote {
    config: RemoteConfig,
    endpoint: reqwest::Url,
    client: reqwest::Client,
    /// What the wire keeps between requests (every session's messages, encoded once).
    encoder: Encoder,
}

#[derive(Debug)]
enum Encoder {
    Chat(openai::Encoded),
    Messages(anthropic::Encoded),
}

/// What one server-sent event meant.
pub(super) enum Decoded {
    /// Deltas to pass on (possibly none).
    Chunks(Vec<StreamChunk>),
    /// The wire's last event: the response is complete.
    Done,
}

/// Turns the events of one response into chunks.
pub(super) trait Decode: Send {
    /// Decodes one event (`event` is its SSE event name, empty when it has none).
    fn event(&mut self, event: &str, data: &str) -> Result<Decoded, ModelError>;
    /// Whether the model said why it stopped (a finish reason): a body that ends after that
    /// without the wire's last event is complete; before it, broken.
    fn finished(&self) -> bool;
}

impl Remote {
    /// A client for `config`; fails on a base URL that is not http(s).
    pub fn new(config: RemoteConfig) -> Result<Remote, ModelSetupError> {
        super::install_tls();
        let endpoint = config.endpoint()?;
        let client = shared_client(config.timeouts.connect, config.is_local()?)?;
        let encoder = match config.wire {
            Wire::Chat => Encoder::Chat(openai::Encoded::default()),
            Wire::Messages => Encoder::Messages(anthropic::Encoded::default()),
        };
        Ok(Remote { config, endpoint, client, encoder })
    }

    /// The configuration in use.
    pub fn config(&self) -> &RemoteConfig {
        &self.config
    }
}

/// The HTTP client for requests with this connect timeout, local or not: one per process, shared
/// by every session. Building one loads the TLS roots (milliseconds, and over 100 KB), and one
/// client keeps one pool of connections to reuse.
fn shared_client(connect: Duration, local: bool) -> Result<reqwest::Client, ModelSetupError> {
    static CLIENTS: LazyLock<Mutex<HashMap<(Duration, bool), reqwest::Client>>> =
        LazyLock::new(Mutex::default);
    let mut clients = CLIENTS.lock().expect("clients lock");
    if let Some(client) = clients.get(&(connect, local)) {
        return Ok(client.clone());
    }
    let mut builder = reqwest::Client::builder().connect_timeout(connect);
    if local {
        builder = builder.no_proxy(); // a proxy from the environment cannot reach our loopback
    }
    let client = builder.build().map_err(|e| ModelSetupError::Client(e.to_string()))?;
    clients.insert((connect, local), client.clone());
    Ok(client)
}

impl ModelProvider for Remote {
    fn provider(&self) -> &str {
        &self.config.provider_name
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn stream(&self, request: ModelRequest) -> ChunkStream {
        let provider = self.config.provider_name.clone();
        let timeouts = self.config.timeouts.clone();
        let (body, mut decoder): (_, Box<dyn Decode>) = match &self.encoder {
            Encoder::Chat(encoded) => (
                openai::request_body(&request, encoded),
                Box::new(openai::Decoder::new(&provider)) as Box<dyn Decode>,
            ),
            Encoder::Messages(encoded) => (
                anthropic::request_body(&request, encoded, self.config.thinking_tokens),
                Box::new(anthropic::Decoder::new(&provider)) as Box<dyn Decode>,
            ),
        };
        let http = self.config.authorize(self.client.post(self.endpoint.clone()));
        Box::pin(async_stream::try_stream! {
            let deadline = Instant::now() + timeouts.first_byte;
            let http = http.header(CONTENT_TYPE, "application/json").body(body?);
            let response = open(http, deadline, &provider, &timeouts).await?;
            let events = timed_body(response, deadline, provider.clone(), timeouts).eventsource();
            let mut events = std::pin::pin!(events);
            let mut done = false;
            while let Some(event) = events.next().await {
                let event = event.map_err(|e| event_error(&provider, e))?;
                match decoder.event(&event.event, &event.data)? {
                    Decoded::Chunks(chunks) => {
                        for chunk in chunks {
                            yield chunk;
                        }
                    }
                    Decoded::Done => {
                        done = true;
                        break;
                    }
                }
            }
            if !done && !decoder.finished() {
                Err(errors::ended_early(&provider))?;
            }
        })
    }
}

/// Sends the request and checks the answer's status and content type; the answer must start
/// before `deadline`.
async fn open(
    http: reqwest::RequestBuilder,
    deadline: Instant,
    provider: &str,
    timeouts: &Timeouts,
) -> Result<reqwest::Response, ModelError> {
    let response = match timeout_at(deadline, http.send()).await {
        Err(_) => return Err(errors::timed_out(provider, false, timeouts.first_byte)),
        Ok(Err(e)) => return Err(errors::send_failed(provider, &e, timeouts.connect)),
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    if !status.is_success() {
        let headers = response.headers().clone();
        // The error body is only quoted: a slow or broken one is not worth more than the status.
        let body = timeout_at(Instant::now() + timeouts.stall, response.text()).await;
        let body = body.ok().and_then(Result::ok).unwrap_or_default();
        return Err(errors::http_status(provider, status, &headers, &body, SystemTime::now()));
    }
    let content_type = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok());
    if let Some(other) = content_type.filter(|t| !t.starts_with("text/event-stream")) {
        let what = format!("expected an event stream, got {other:?}");
        return Err(errors::malformed(provider, what));
    }
    Ok(response)
}

/// The response body, failing with `TIMEOUT` when its first bytes are not there by
/// `first_byte` or any later read takes longer than the stall timeout. Bytes, not events, reset
/// the clock, so SSE keep-alive comments keep a slow but live stream going.
fn timed_body(
    response: reqwest::Response,
    first_byte: Instant,
    provider: String,
    timeouts: Timeouts,
) -> impl Stream<Item = Result<impl AsRef<[u8]>, ModelError>> {
    async_stream::try_stream! {
        let mut deadline = first_byte;
        let mut started = false;
        let mut body = response.bytes_stream();
        loop {
            let waited = if started { timeouts.stall } else { timeouts.first_byte };
            let next = timeout_at(deadline, body.next())
                .await
                .map_err(|_| errors::timed_out(&provider, started, waited))?;
            let Some(bytes) = next else { break };
            let bytes = bytes.map_err(|e| errors::broken(&provider, &e))?;
            started = true;
            deadline = Instant::now() + timeouts.stall;
            yield bytes;
        }
    }
}

fn event_error(provider: &str, error: EventStreamError<ModelError>) -> ModelError {
    match error {
        EventStreamError::Transport(error) => error,
        EventStreamError::Utf8(e) => errors::malformed(provider, format!("not UTF-8 ({e})")),
        EventStreamError::Parser(e) => errors::malformed(provider, format!("not SSE ({e})")),
    }
}
