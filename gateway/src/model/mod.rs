//! Model providers: something that turns a [`ModelRequest`] into a stream of chunks.
//!
//! A provider reports failures as [`ModelError`]s with the core's codes; the core decides what is
//! retried. `demo` is offline and deterministic; `openai:<model>` and `deepseek:<model>` stream
//! from any OpenAI-compatible chat-completions endpoint ([`openai`]).

mod demo;
pub mod openai;
mod window;

use std::pin::Pin;
use std::sync::Arc;

use airlock_core::{ModelError, ModelRequest, StreamChunk};
use futures::Stream;

pub use demo::Demo;
pub use openai::{OpenAi, OpenAiConfig, Timeouts};
pub use window::{ContextWindows, DEMO_WINDOW, ModelSettings};

/// A model response: chunks until the stream ends, or an error.
pub type ChunkStream = Pin<Box<dyn Stream<Item = Result<StreamChunk, ModelError>> + Send>>;

/// Streams model responses.
pub trait ModelProvider: Send + Sync {
    /// The provider's name, as `request/context` logs it (`demo`, `openai`, ...).
    fn provider(&self) -> &str;
    /// The model name sent upstream.
    fn model(&self) -> &str;
    /// Starts one request. Dropping the stream aborts it.
    fn stream(&self, request: ModelRequest) -> ChunkStream;
}

/// Why a `--model` value gives no provider.
#[derive(Debug, thiserror::Error)]
pub enum ModelSetupError {
    /// No provider has this name.
    #[error(
        "unknown model {0:?}: this build offers `demo` (offline, no key needed), \
         `openai:<model>` and `deepseek:<model>`"
    )]
    Unknown(String),
    /// `openai:` with nothing after the colon.
    #[error("`{provider}:` needs a model name after the colon, e.g. `{provider}:{example}`")]
    MissingModelName {
        /// The provider named.
        provider: &'static str,
        /// A model name to show.
        example: &'static str,
    },
    /// A remote endpoint and no key.
    #[error(
        "`{model}` needs an API key: set {variable} \
         (or point AIRLOCK_BASE_URL at a local server, which needs none)"
    )]
    MissingKey {
        /// The `--model` value.
        model: String,
        /// The environment variable to set.
        variable: &'static str,
    },
    /// `AIRLOCK_BASE_URL` is not an http(s) URL.
    #[error(
        "AIRLOCK_BASE_URL {url:?} is not usable ({reason}); give the endpoint with its version \
         path, e.g. http://127.0.0.1:8000/v1"
    )]
    BadBaseUrl {
        /// The value given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A timeout variable is not a whole number of milliseconds.
    #[error("{variable}={value:?} is not a whole number of milliseconds; unset it for the default")]
    BadTimeout {
        /// The variable.
        variable: &'static str,
        /// Its value.
        value: String,
    },
    /// The HTTP client could not be built.
    #[error("could not set up the HTTP client: {0}")]
    Client(String),
}

/// Picks the provider a `--model` value names: `demo`, `openai:<model>` or `deepseek:<model>`
/// (the latter two read their endpoint and key from the environment).
pub fn from_name(name: &str) -> Result<Arc<dyn ModelProvider>, ModelSetupError> {
    match name.split_once(':') {
        None if name == "demo" => Ok(Arc::new(Demo)),
        Some((provider, model)) if openai::is_openai_compatible(provider) => {
            let config = OpenAiConfig::from_env(provider, model)?;
            Ok(Arc::new(OpenAi::new(config)?))
        }
        _ => Err(ModelSetupError::Unknown(name.to_owned())),
    }
}

/// The names [`from_name`] takes in this process's environment, as a regular expression: empty
/// (the gateway's default), `demo`, and `provider:model` for each provider the environment
/// gives a key (or a loopback base URL) for.
pub fn name_pattern() -> String {
    let ready: Vec<&str> =
        openai::providers().filter(|p| OpenAiConfig::from_env(p, "model").is_ok()).collect();
    let remote = match ready.as_slice() {
        [] => String::new(),
        providers => format!("|(?:{}):[\\s\\S]+", providers.join("|")),
    };
    format!("^(?:demo{remote})?$(?![\\s\\S])")
}

/// Installs ring as the process's TLS crypto backend: reqwest is built without one of its own.
/// Harmless when one is installed already; call it before building any `reqwest::Client`.
pub fn install_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
