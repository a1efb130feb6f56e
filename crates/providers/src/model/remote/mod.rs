//! `openai:<model>` and `deepseek:<model>`: any OpenAI-compatible chat-completions endpoint.
//!
//! One request is one streaming `POST <base_url>/chat/completions`:
//! 1. `wire` turns the [`ModelRequest`] into the JSON body (`stream: true`, usage requested).
//! 2. The answer's status is checked; a non-2xx becomes a [`ModelError`] through `errors`.
//! 3. The body is read under the first-byte and stall timeouts, parsed as server-sent events by
//!    `eventsource-stream`, and each event's JSON is decoded into stream chunks until `[DONE]`.
//!
//! The stream ends at its first error; the provider never retries (the core does). Dropping the
//! stream drops the connection.

mod config;
mod errors;
mod wire;

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, SystemTime};

use airlock_core::{ModelError, ModelRequest};
use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use reqwest::header::CONTENT_TYPE;
use tokio::time::{Instant, timeout_at};

pub use config::{OpenAiConfig, Timeouts, is_openai_compatible, providers};

use super::{ChunkStream, ModelProvider, ModelSetupError};
use wire::{Decoded, Decoder, Encoded};

/// A chat-completions streaming client for one provider and model.
#[derive(Debug)]
pub struct OpenAi {
    config: OpenAiConfig,
    endpoint: reqwest::Url,
    client: reqwest::Client,
    /// The messages of every session's conversation, encoded once.
    encoded: Encoded,
}

impl OpenAi {
    /// A client for `config`; fails on a base URL that is not http(s).
    pub fn new(config: OpenAiConfig) -> Result<OpenAi, ModelSetupError> {
        super::install_tls();
        let endpoint = config.endpoint()?;
        let client = shared_client(config.timeouts.connect, config.is_local()?)?;
        Ok(OpenAi { config, endpoint, client, encoded: Encoded::default() })
    }

    /// The configuration in use.
    pub fn config(&self) -> &OpenAiConfig {
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

impl ModelProvider for OpenAi {
    fn provider(&self) -> &str {
        &self.config.provider_name
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn stream(&self, request: ModelRequest) -> ChunkStream {
        let provider = self.config.provider_name.clone();
        let timeouts = self.config.timeouts.clone();
        let body = wire::request_body(&request, &self.encoded);
        let mut http = self.client.post(self.endpoint.clone());
        if let Some(key) = &self.config.api_key {
            http = http.bearer_auth(key);
        }
        Box::pin(async_stream::try_stream! {
            let deadline = Instant::now() + timeouts.first_byte;
            let http = http.header(CONTENT_TYPE, "application/json").body(body?);
            let response = open(http, deadline, &provider, &timeouts).await?;
            let events = timed_body(response, deadline, provider.clone(), timeouts).eventsource();
            let mut events = std::pin::pin!(events);
            let mut decoder = Decoder::new(&provider);
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
            if !done {
                decoder.ended()?;
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
