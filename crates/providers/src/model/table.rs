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
//! - **Prices**: `input_per_mtok`, `output_per_mtok`, `cache_read_per_mtok`,
//!   `cache_write_per_mtok` in US dollars per million tokens, which turn usage into cost; well-known
//!   models have defaults below, marked as estimates.

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
    /// US dollars per million prompt tokens (not read from or written to a cache).
    pub input_per_mtok: Option<f64>,
    /// US dollars per million completion tokens.
    pub output_per_mtok: Option<f64>,
    /// US dollars per million prompt tokens read from a cache (default: `input_per_mtok`).
    pub cache_read_per_mtok: Option<f64>,
    /// US dollars per million prompt tokens written to a cache (default: `input_per_mtok`).
    pub cache_write_per_mtok: Option<f64>,
}

/// What a model's tokens cost, in US dollars per million.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Price {
    /// Prompt tokens neither read from nor written to a cache.
    pub input: f64,
    /// Completion tokens.
    pub output: f64,
    /// Prompt tokens read from a cache.
    pub cache_read: f64,
    /// Prompt tokens written to a cache.
    pub cache_write: f64,
    /// From this build's defaults for a well-known model, not from the settings: list prices
    /// when it was made, which may have changed.
    pub estimate: bool,
}

impl Price {
    /// The cost in US dollars of `input` prompt tokens (of which `cache_read` were read from a
    /// cache and `cache_write` written to one) and `output` completion tokens.
    pub fn cost(&self, input: u64, output: u64, cache_read: u64, cache_write: u64) -> f64 {
        let fresh = input.saturating_sub(cache_read + cache_write);
        let millions = |tokens: u64, per_mtok: f64| tokens as f64 * per_mtok / 1e6;
        millions(fresh, self.input)
            + millions(output, self.output)
            + millions(cache_read, self.cache_read)
            + millions(cache_write, self.cache_write)
    }
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

    /// What the tokens of `provider`'s `model` cost: the settings' prices for its model spec
    /// (`provider:model`, or `demo`), else this build's estimate for a well-known model, else
    /// unknown.
    pub fn price(&self, provider: &str, model: &str) -> Option<Price> {
        let name = match provider {
            "demo" => "demo".to_owned(),
            _ => format!("{provider}:{model}"),
        };
        let settings = self.models.get(&name);
        if let Some(s) = settings
            && let (Some(input), Some(output)) = (s.input_per_mtok, s.output_per_mtok)
        {
            let cache_read = s.cache_read_per_mtok.unwrap_or(input);
            let cache_write = s.cache_write_per_mtok.unwrap_or(input);
            return Some(Price { input, output, cache_read, cache_write, estimate: false });
        }
        if provider == "demo" {
            return Some(Price {
                input: 0.0,
                output: 0.0,
                cache_read: 0.0,
                cache_write: 0.0,
                estimate: false,
            });
        }
        let (_, [input, output, cache_read, cache_write]) =
            PRICES.iter().find(|(prefix, _)| model.starts_with(prefix))?;
        let (input, output, cache_read, cache_write) = (*input, *output, *cache_read, *cache_write);
        Some(Price { input, output, cache_read, cache_write, estimate: true })
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
            let prices = [
                ("input_per_mtok", settings.input_per_mtok),
                ("output_per_mtok", settings.output_per_mtok),
                ("cache_read_per_mtok", settings.cache_read_per_mtok),
                ("cache_write_per_mtok", settings.cache_write_per_mtok),
            ];
            for (key, price) in prices {
                if price.is_some_and(|p| !p.is_finite() || p < 0.0) {
                    return Err(format!("models.{name:?}: {key} must be a price of 0 or more"));
                }
            }
            if settings.input_per_mtok.is_some() != settings.output_per_mtok.is_some() {
                return Err(format!(
                    "models.{name:?}: give input_per_mtok and output_per_mtok together (or neither)"
                ));
            }
        }
        Ok(())
    }
}

/// List prices of well-known models in US dollars per million tokens (input, output, cache
/// read, cache write), by the start of their upstream name (most specific first), as published
/// when this build was made: estimates, which `[models."NAME"]` prices replace.
const PRICES: &[(&str, [f64; 4])] = &[
    ("claude-opus-4-5", [5.0, 25.0, 0.5, 6.25]),
    ("claude-opus-4", [15.0, 75.0, 1.5, 18.75]),
    ("claude-sonnet-4", [3.0, 15.0, 0.3, 3.75]),
    ("claude-3-7-sonnet", [3.0, 15.0, 0.3, 3.75]),
    ("claude-haiku-4-5", [1.0, 5.0, 0.1, 1.25]),
    ("claude-3-5-haiku", [0.8, 4.0, 0.08, 1.0]),
    ("gpt-5-mini", [0.25, 2.0, 0.025, 0.25]),
    ("gpt-5-nano", [0.05, 0.4, 0.005, 0.05]),
    ("gpt-5", [1.25, 10.0, 0.125, 1.25]),
    ("gpt-4.1-mini", [0.4, 1.6, 0.1, 0.4]),
    ("gpt-4.1-nano", [0.1, 0.4, 0.025, 0.1]),
    ("gpt-4.1", [2.0, 8.0, 0.5, 2.0]),
    ("gpt-4o-mini", [0.15, 0.6, 0.075, 0.15]),
    ("gpt-4o", [2.5, 10.0, 1.25, 2.5]),
    ("o4-mini", [1.1, 4.4, 0.275, 1.1]),
    ("o3-mini", [1.1, 4.4, 0.55, 1.1]),
    ("o3", [2.0, 8.0, 0.5, 2.0]),
    ("deepseek-chat", [0.28, 0.42, 0.028, 0.28]),
    ("deepseek-reasoner", [0.28, 0.42, 0.028, 0.28]),
];

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
    fn a_configured_price_wins_over_an_estimate_and_a_cache_costs_what_it_says() {
        let mut settings = ModelSettings {
            input_per_mtok: Some(2.0),
            output_per_mtok: Some(10.0),
            cache_read_per_mtok: Some(0.2),
            ..Default::default()
        };
        let table = ModelTable::new(BTreeMap::from([("openai:mine".to_owned(), settings.clone())]));
        let price = table.price("openai", "mine").unwrap();
        assert!(!price.estimate);
        assert_eq!(price.cache_write, 2.0, "an unpriced cache write costs what input does");
        // 1M prompt tokens, 400k of them from the cache; 100k out.
        let cost = price.cost(1_000_000, 100_000, 400_000, 0);
        assert!((cost - (0.6 * 2.0 + 0.1 * 10.0 + 0.4 * 0.2)).abs() < 1e-9, "{cost}");
        let claude = table.price("anthropic", "claude-sonnet-4-5").unwrap();
        assert!(claude.estimate && claude.cache_read < claude.input);
        assert_eq!(table.price("openai", "something-else"), None);
        assert_eq!(table.price("demo", "demo").unwrap().cost(9, 9, 0, 0), 0.0);
        settings.output_per_mtok = None;
        let table = ModelTable::new(BTreeMap::from([("openai:mine".to_owned(), settings)]));
        assert!(table.check().unwrap_err().contains("together"));
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
