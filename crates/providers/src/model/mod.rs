//! Model providers: something that turns a [`ModelRequest`] into a stream of chunks.
//!
//! A provider reports failures as [`ModelError`]s with the core's codes; the core decides what is
//! retried. `demo` is offline and deterministic; over HTTP ([`remote`]), `openai:<model>` and
//! `deepseek:<model>` stream from any OpenAI-compatible chat-completions endpoint ([`openai`])
//! and `anthropic:<model>` from Anthropic's messages API ([`anthropic`]).

#[cfg(feature = "remote")]
pub mod anthropic;
mod demo;
#[cfg(feature = "remote")]
pub mod openai;
#[cfg(feature = "remote")]
pub mod remote;
mod table;

use std::pin::Pin;
use std::sync::Arc;

use airlock_core::{ModelError, ModelRequest, StreamChunk};
use futures::Stream;

pub use demo::Demo;
#[cfg(feature = "remote")]
pub use remote::{Remote, RemoteConfig, Timeouts, Wire};
pub use table::{Chain, DEMO_WINDOW, MOST_IN_CHAIN, ModelSettings, ModelTable, Price};

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
    #[error("unknown model {0:?}: this build offers {OFFERED}")]
    Unknown(String),
    /// A model name that is not a plain name.
    #[error(
        "`{provider}:` takes a model name of 1 to {most} letters, digits, `.`, `_`, `:`, `/`, `@`, `+` or `-`, starting with a letter or digit, not {shown:?}"
    )]
    BadModelName {
        /// The provider named.
        provider: String,
        /// The most characters.
        most: usize,
        /// The start of what was given.
        shown: String,
    },
    /// `anthropic:` with nothing after the colon.
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
    /// `AIRLOCK_THINKING_TOKENS` is not a number of tokens Anthropic takes.
    #[error(
        "AIRLOCK_THINKING_TOKENS={value:?} is not a whole number of at least 1024 tokens; \
         unset it to leave extended thinking off"
    )]
    BadThinkingTokens {
        /// Its value.
        value: String,
    },
    /// The HTTP client could not be built.
    #[error("could not set up the HTTP client: {0}")]
    Client(String),
    /// A model of a chain's fallbacks gives no provider.
    #[error("fallback `{name}`: {source}")]
    Fallback {
        /// The fallback as given.
        name: String,
        /// Why it gives none.
        source: Box<ModelSetupError>,
    },
    /// A chain of more models than a session may fail over through.
    #[error("`{model}` falls back to too many models: a chain holds at most {most}")]
    LongChain {
        /// The session's own model.
        model: String,
        /// The most models in a chain.
        most: usize,
    },
}

/// The models [`from_name`] knows, as an error says them.
#[cfg(feature = "remote")]
const OFFERED: &str =
    "`demo` (offline, no key needed), `openai:<model>`, `deepseek:<model>` and `anthropic:<model>`";
#[cfg(not(feature = "remote"))]
const OFFERED: &str = "`demo` (offline, no key needed): it was built without the `remote` feature";

/// Picks the provider a `--model` value names: `demo`, `openai:<model>`, `deepseek:<model>` or
/// `anthropic:<model>` (those over HTTP read their endpoint and key from the environment).
pub fn from_name(name: &str) -> Result<Arc<dyn ModelProvider>, ModelSetupError> {
    from_name_at(name, None)
}

/// [`from_name`], a model over HTTP served at `base_url` when one is given (instead of
/// `AIRLOCK_BASE_URL` or the provider's own).
fn from_name_at(
    name: &str,
    base_url: Option<&str>,
) -> Result<Arc<dyn ModelProvider>, ModelSetupError> {
    #[cfg(not(feature = "remote"))]
    let _ = base_url;
    match name.split_once(':') {
        None if name == "demo" => Ok(Arc::new(Demo)),
        #[cfg(feature = "remote")]
        Some((provider, model)) if remote::is_remote(provider) => {
            if !model.is_empty() && !valid_model_name(model) {
                let shown = model.chars().take(MODEL_NAME_MOST).collect();
                let provider = provider.to_owned();
                return Err(ModelSetupError::BadModelName {
                    provider,
                    most: MODEL_NAME_MOST,
                    shown,
                });
            }
            let config = RemoteConfig::from_vars(provider, model, |variable| match base_url {
                Some(url) if variable == "AIRLOCK_BASE_URL" => Some(url.to_owned()),
                _ => std::env::var(variable).ok(),
            })?;
            Ok(Arc::new(Remote::new(config)?))
        }
        _ => Err(ModelSetupError::Unknown(name.chars().take(MODEL_NAME_MOST).collect())),
    }
}

/// The most characters of a model's name (what follows `openai:` or `anthropic:`).
pub const MODEL_NAME_MOST: usize = 128;

/// Whether `model` (what follows `openai:`, `deepseek:` or `anthropic:`) may name a model: a
/// [`airlock_base::input::plain_name`] of up to [`MODEL_NAME_MOST`] characters, with the punctuation
/// model names use (`meta-llama/Llama-3.3-70B`, `qwen2.5:7b`, `gpt-4o@2024-08-06`).
pub fn valid_model_name(model: &str) -> bool {
    airlock_base::input::plain_name(model, MODEL_NAME_MOST, &['.', '_', ':', '/', '@', '+', '-'])
}

/// Lets the models this gateway is configured with (its default and those of `table`, with their
/// fallbacks) and the well-known ones be `model` label values of the metrics; every other name is
/// `other`.
pub fn allow_labels(default: &str, table: &ModelTable) {
    let models = &airlock_base::metrics::global().models;
    let configured = std::iter::once(default).chain(table.names());
    for name in configured {
        models.allow(name.split_once(':').map_or(name, |(_, model)| model));
    }
    for name in table::WELL_KNOWN {
        models.allow(name);
    }
}

/// The names [`from_name`] takes in this process's environment, as a regular expression: empty
/// (the gateway's default), `demo`, and `provider:model` for each provider the environment
/// gives a key (or a loopback base URL) for.
pub fn name_pattern() -> String {
    #[cfg(feature = "remote")]
    let ready: Vec<&str> =
        remote::providers().filter(|p| RemoteConfig::from_env(p, "model").is_ok()).collect();
    #[cfg(not(feature = "remote"))]
    let ready: Vec<&str> = Vec::new();
    let remote = match ready.as_slice() {
        [] => String::new(),
        providers => format!(
            "|(?:{}):[A-Za-z0-9][A-Za-z0-9._:/@+-]{{0,{}}}",
            providers.join("|"),
            MODEL_NAME_MOST - 1
        ),
    };
    format!("^(?:demo{remote})?$(?![\\s\\S])")
}

/// Installs ring as the process's TLS crypto backend: reqwest is built without one of its own.
/// Harmless when one is installed already; call it before building any `reqwest::Client`.
#[cfg(feature = "remote")]
pub fn install_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
