//! The `[models."NAME"]` table of `airlock.toml`: what the settings say about each model a
//! session may name.
//!
//! - **Context window**: how many tokens a model's request may hold, which decides when a
//!   session's conversation is compacted (`docs/semantics.md`, "Context compaction"). It comes
//!   from the settings (`context_window = N`, or `--context-window` for the command's own model),
//!   else from the defaults of well-known models below, else it is unknown and only an overflow
//!   answer compacts.
//! - **Endpoint**: `base_url`, where this model is served (else the provider's variables).
//! - **Failover**: `fallback = ["openai:gpt-4o", …]`, the models a step goes on with when this one
//!   keeps failing (`--fallback` for the command's own model), after `retries` retries.

use std::collections::BTreeMap;
use std::sync::Arc;

use airlock_core::{ContextPolicy, ModelRoute, RetryPolicy};
use serde::Deserialize;

use super::{ModelProvider, ModelSetupError};

/// The demo model's window: small, so a compaction shows after a few dozen turns.
pub const DEMO_WINDOW: u64 = 2_000;

/// The most models of a chain: the model and its fallbacks.
pub const MOST_IN_CHAIN: usize = 8;

/// What the settings say about one model, as `[models."NAME"]` writes it.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    /// Its context window in tokens.
    pub context_window: Option<u64>,
    /// The share of the window (percent, 1 to 100; 0 never) at which a turn compacts first.
    pub compact_at_percent: Option<u8>,
    /// Where it is served: the endpoint with its version path (e.g. `http://127.0.0.1:8000/v1`),
    /// instead of `AIRLOCK_BASE_URL` or the provider's own.
    pub base_url: Option<String>,
    /// The models a step goes on with, in order, when this one fails past its retries with an
    /// error that is not the request's fault.
    pub fallback: Option<Vec<String>>,
    /// How many times a session on this model retries a failed request before its step fails
    /// over or its turn ends (default 4), on each model of its chain.
    pub retries: Option<u32>,
}

/// The `[models]` table: every model the settings name, by `--model` value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelTable {
    models: BTreeMap<String, ModelSettings>,
}

/// The providers of a session's chain, in order, and what its core is told about them.
pub struct Chain {
    /// Its own model first, then its fallbacks.
    pub providers: Vec<Arc<dyn ModelProvider>>,
    /// The fallbacks as the core's config names them.
    pub fallbacks: Vec<ModelRoute>,
    /// How each model's failures are retried.
    pub retry: RetryPolicy,
}

impl ModelTable {
    /// The settings' `[models]` table.
    pub fn new(models: BTreeMap<String, ModelSettings>) -> ModelTable {
        ModelTable { models }
    }

    /// Sets `model`'s window, as `--context-window` does for the command's own model.
    pub fn set_window(&mut self, model: &str, window: u64) {
        self.models.entry(model.to_owned()).or_default().context_window = Some(window);
    }

    /// Sets `model`'s fallbacks, as `--fallback` does for the command's own model.
    pub fn set_fallback(&mut self, model: &str, fallback: Vec<String>) {
        self.models.entry(model.to_owned()).or_default().fallback = Some(fallback);
    }

    /// What the settings say about `name` (nothing, when they name it not).
    pub fn settings(&self, name: &str) -> ModelSettings {
        self.models.get(name).cloned().unwrap_or_default()
    }

    /// The policy of a session whose `--model` value is `name` and whose upstream model is
    /// `model`.
    pub fn policy(&self, name: &str, model: &str) -> ContextPolicy {
        let settings = self.models.get(name);
        let default = ContextPolicy::default();
        ContextPolicy {
            window: settings.and_then(|s| s.context_window).or_else(|| known_window(name, model)),
            compact_at_percent: settings
                .and_then(|s| s.compact_at_percent)
                .unwrap_or(default.compact_at_percent),
        }
    }

    /// The provider of `name`, served where its settings say.
    pub fn provider(&self, name: &str) -> Result<Arc<dyn ModelProvider>, ModelSetupError> {
        super::from_name_at(name, self.models.get(name).and_then(|s| s.base_url.as_deref()))
    }

    /// The chain of a session on `name`: its own provider, then those of `fallback` (a session's
    /// own list), else of its settings' `fallback`.
    pub fn chain(&self, name: &str, fallback: Option<&[String]>) -> Result<Chain, ModelSetupError> {
        let settings = self.settings(name);
        let fallback = fallback.or(settings.fallback.as_deref()).unwrap_or_default();
        if fallback.len() >= MOST_IN_CHAIN {
            return Err(ModelSetupError::LongChain { model: name.to_owned(), most: MOST_IN_CHAIN });
        }
        let mut providers = vec![self.provider(name)?];
        let mut fallbacks = Vec::new();
        for next in fallback {
            let provider = self.provider(next).map_err(|source| ModelSetupError::Fallback {
                name: next.clone(),
                source: Box::new(source),
            })?;
            let window = self.policy(next, provider.model()).window;
            fallbacks.push(ModelRoute {
                provider: provider.provider().to_owned(),
                model: provider.model().to_owned(),
                context_window: window,
            });
            providers.push(provider);
        }
        let default = RetryPolicy::default();
        let retry =
            RetryPolicy { max_retries: settings.retries.unwrap_or(default.max_retries), ..default };
        Ok(Chain { providers, fallbacks, retry })
    }

    /// The model specs the settings name, with those they fall back to.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        let fallbacks = self.models.values().flat_map(|s| s.fallback.iter().flatten());
        self.models.keys().chain(fallbacks).map(String::as_str)
    }

    /// Checks the values: a window of at least 100 tokens, a share of at most 100 %, an http(s)
    /// base URL, at most [`MOST_IN_CHAIN`] models in a chain and none falling back to itself, at
    /// most 10 retries.
    pub fn check(&self) -> Result<(), String> {
        for (name, settings) in &self.models {
            if settings.context_window.is_some_and(|window| window < 100) {
                return Err(format!("models.{name:?}: context_window must be at least 100 tokens"));
            }
            if settings.compact_at_percent.is_some_and(|percent| percent > 100) {
                return Err(format!(
                    "models.{name:?}: compact_at_percent must be 0 (never) to 100"
                ));
            }
            if let Some(url) = &settings.base_url {
                let scheme = url.split_once("://").map(|(scheme, _)| scheme);
                if !matches!(scheme, Some("http" | "https")) {
                    return Err(format!(
                        "models.{name:?}: base_url must be an http(s) URL with its version path, \
                         e.g. http://127.0.0.1:8000/v1, not {url:?}"
                    ));
                }
            }
            let fallback = settings.fallback.as_deref().unwrap_or_default();
            if fallback.len() >= MOST_IN_CHAIN {
                return Err(format!(
                    "models.{name:?}: fallback names {} models; a chain holds at most {MOST_IN_CHAIN}",
                    fallback.len() + 1
                ));
            }
            if fallback.iter().any(|next| next == name) {
                return Err(format!("models.{name:?}: fallback names the model itself"));
            }
            if settings.retries.is_some_and(|retries| retries > 10) {
                return Err(format!("models.{name:?}: retries must be 0 to 10"));
            }
        }
        Ok(())
    }
}

/// The windows of well-known models, by the start of their upstream name (most specific first).
const KNOWN: &[(&str, u64)] = &[
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("gpt-5", 400_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("deepseek-chat", 128_000),
    ("deepseek-reasoner", 128_000),
    ("claude-", 200_000),
];

/// Models known by name, whose names the metrics show as they are (`airlock_base::metrics::Vocabulary`).
pub const WELL_KNOWN: &[&str] = &[
    "demo",
    "gpt-5",
    "gpt-5-mini",
    "gpt-5-nano",
    "gpt-4.1",
    "gpt-4.1-mini",
    "gpt-4.1-nano",
    "gpt-4o",
    "gpt-4o-mini",
    "gpt-4-turbo",
    "gpt-4",
    "gpt-3.5-turbo",
    "o1",
    "o1-mini",
    "o3",
    "o3-mini",
    "o4-mini",
    "deepseek-chat",
    "deepseek-reasoner",
    "claude-opus-4-1",
    "claude-opus-4-5",
    "claude-sonnet-4-5",
    "claude-haiku-4-5",
    "claude-sonnet-4-0",
    "claude-3-7-sonnet-latest",
    "claude-3-5-haiku-latest",
];

/// A well-known model's window: the demo's own, or by the upstream model's name.
fn known_window(name: &str, model: &str) -> Option<u64> {
    if name == "demo" {
        return Some(DEMO_WINDOW);
    }
    KNOWN.iter().find(|(prefix, _)| model.starts_with(prefix)).map(|&(_, window)| window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configured_window_wins_over_a_known_one_which_wins_over_none() {
        let mut windows = ModelTable::default();
        assert_eq!(windows.policy("openai:gpt-4o-mini", "gpt-4o-mini").window, Some(128_000));
        assert_eq!(windows.policy("openai:gpt-4.1-nano", "gpt-4.1-nano").window, Some(1_047_576));
        assert_eq!(windows.policy("openai:my-local", "my-local").window, None);
        let claude = windows.policy("anthropic:claude-sonnet-4-5", "claude-sonnet-4-5");
        assert_eq!(claude.window, Some(200_000));
        assert_eq!(windows.policy("demo", "demo").window, Some(DEMO_WINDOW));
        windows.set_window("openai:gpt-4o", 5_000);
        let policy = windows.policy("openai:gpt-4o", "gpt-4o");
        assert_eq!((policy.window, policy.compact_at_percent), (Some(5_000), 80));
    }

    #[test]
    fn a_window_too_small_or_a_share_over_100_is_refused() {
        let settings = |context_window, compact_at_percent| {
            let model = ModelSettings { context_window, compact_at_percent, ..Default::default() };
            ModelTable::new(BTreeMap::from([("demo".to_owned(), model)])).check()
        };
        assert!(settings(Some(99), None).unwrap_err().contains("at least 100"));
        assert!(settings(None, Some(101)).unwrap_err().contains("0 (never) to 100"));
        assert!(settings(Some(100), Some(0)).is_ok());
    }
}
