//! Model providers: something that turns a [`ModelRequest`] into a stream of chunks.
//!
//! A provider reports failures as [`ModelError`]s with the core's codes; the core decides what is
//! retried. `demo` is offline and deterministic; `openai:` and `deepseek:` arrive with the gateway.

mod demo;

use std::pin::Pin;
use std::sync::Arc;

use airlock_core::{ModelError, ModelRequest, StreamChunk};
use futures::Stream;

pub use demo::Demo;

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

/// Why a `--model` value was not understood.
#[derive(Debug, thiserror::Error)]
#[error("unknown model {0:?}: this build offers `demo` (offline, no key needed)")]
pub struct UnknownModel(pub String);

/// Picks the provider a `--model` value names.
pub fn from_name(name: &str) -> Result<Arc<dyn ModelProvider>, UnknownModel> {
    match name {
        "demo" => Ok(Arc::new(Demo)),
        other => Err(UnknownModel(other.to_owned())),
    }
}
