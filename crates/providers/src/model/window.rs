//! Context windows: how many tokens a model's request may hold, which decides when a session's
//! conversation is compacted (`docs/semantics.md`, "Context compaction").
//!
//! A window comes from the settings (`[models."openai:NAME"] context_window = N` in
//! `airlock.toml`, or `--context-window` for the command's own model), else from the defaults of
//! well-known models below, else it is unknown and only an overflow answer compacts.

use std::collections::BTreeMap;

use airlock_core::ContextPolicy;
use serde::Deserialize;

/// The demo model's window: small, so a compaction shows after a few dozen turns.
pub const DEMO_WINDOW: u64 = 2_000;

/// What the settings say about one model, as `[models."NAME"]` writes it.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    /// Its context window in tokens.
    pub context_window: Option<u64>,
    /// The share of the window (percent, 1 to 100; 0 never) at which a turn compacts first.
    pub compact_at_percent: Option<u8>,
}

/// The context policy of every model the settings name, by `--model` value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContextWindows {
    models: BTreeMap<String, ModelSettings>,
}

impl ContextWindows {
    /// The settings' `[models]` table.
    pub fn new(models: BTreeMap<String, ModelSettings>) -> ContextWindows {
        ContextWindows { models }
    }

    /// Sets `model`'s window, as `--context-window` does for the command's own model.
    pub fn set_window(&mut self, model: &str, window: u64) {
        self.models.entry(model.to_owned()).or_default().context_window = Some(window);
    }

    /// The policy of a session whose `--model` value is `name` and whose upstream model is
    /// `model`.
    pub fn policy(&self, name: &str, model: &str) -> ContextPolicy {
        let settings = self.models.get(name).copied().unwrap_or_default();
        let default = ContextPolicy::default();
        ContextPolicy {
            window: settings.context_window.or_else(|| known_window(name, model)),
            compact_at_percent: settings.compact_at_percent.unwrap_or(default.compact_at_percent),
        }
    }

    /// The model specs the settings name.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.models.keys().map(String::as_str)
    }

    /// Checks the values: a window of at least 100 tokens, a share of at most 100 %.
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
        let mut windows = ContextWindows::default();
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
            let model = ModelSettings { context_window, compact_at_percent };
            ContextWindows::new(BTreeMap::from([("demo".to_owned(), model)])).check()
        };
        assert!(settings(Some(99), None).unwrap_err().contains("at least 100"));
        assert!(settings(None, Some(101)).unwrap_err().contains("0 (never) to 100"));
        assert!(settings(Some(100), Some(0)).is_ok());
    }
}
