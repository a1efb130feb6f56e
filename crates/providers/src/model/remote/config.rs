//! Where a provider over HTTP sends requests, in which wire, with which key, and how long it
//! waits.
//!
//! Tests build a [`RemoteConfig`] directly; `--model openai:<model>`, `deepseek:<model>` and
//! `anthropic:<model>` read it from the environment with [`RemoteConfig::from_env`].

use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use crate::model::ModelSetupError;

/// How long a request may wait, at each stage, before it fails with `TIMEOUT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// Opening the TCP (and TLS) connection.
    pub connect: Duration,
    /// From sending the request to the first byte of the response body.
    pub first_byte: Duration,
    /// Between two reads of the response body once it has started.
    pub stall: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            first_byte: Duration::from_secs(60),
            stall: Duration::from_secs(60),
        }
    }
}

/// The JSON a provider speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI's chat completions (`POST …/chat/completions`), which most servers speak.
    Chat,
    /// Anthropic's messages (`POST …/messages`).
    Messages,
}

/// Everything a client of a model over HTTP needs.
#[derive(Clone, PartialEq, Eq)]
pub struct RemoteConfig {
    /// The endpoint including its version path, e.g. `https://api.openai.com/v1`; the client
    /// appends the wire's path (`/chat/completions`, `/messages`).
    pub base_url: String,
    /// The wire's key header when set: `Authorization: Bearer <key>` for chat completions,
    /// `x-api-key` for messages.
    pub api_key: Option<String>,
    /// The JSON the provider speaks.
    pub wire: Wire,
    /// The model name sent upstream, as given.
    pub model: String,
    /// How the provider is named in logs and messages (`openai`, `deepseek`).
    pub provider_name: String,
    /// How long each stage of a request may take.
    pub timeouts: Timeouts,
    /// The messages wire's extended thinking: the tokens a step may spend thinking (at least
    /// 1,024), from `AIRLOCK_THINKING_TOKENS`; none leaves it off.
    pub thinking_tokens: Option<u32>,
}

/// The key never reaches a log or an error message.
impl fmt::Debug for RemoteConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteConfig")
            .field("base_url", &self.base_url)
            .field("wire", &self.wire)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("provider_name", &self.provider_name)
            .field("timeouts", &self.timeouts)
            .field("thinking_tokens", &self.thinking_tokens)
            .finish()
    }
}

/// A provider this module serves.
struct Flavor {
    name: &'static str,
    wire: Wire,
    key_variable: &'static str,
    base_url: &'static str,
    example_model: &'static str,
}

const FLAVORS: [Flavor; 3] = [
    Flavor {
        name: "openai",
        wire: Wire::Chat,
        key_variable: "OPENAI_API_KEY",
        base_url: "https://api.openai.com/v1",
        example_model: "gpt-4o-mini",
    },
    Flavor {
        name: "deepseek",
        wire: Wire::Chat,
        key_variable: "DEEPSEEK_API_KEY",
        base_url: "https://api.deepseek.com/v1",
        example_model: "deepseek-chat",
    },
    Flavor {
        name: "anthropic",
        wire: Wire::Messages,
        key_variable: "ANTHROPIC_API_KEY",
        base_url: "https://api.anthropic.com/v1",
        example_model: "claude-sonnet-4-5",
    },
];

/// The providers this module serves: `openai`, `deepseek`, `anthropic`.
pub fn providers() -> impl Iterator<Item = &'static str> {
    FLAVORS.iter().map(|f| f.name)
}

/// Whether `provider` is one this module serves.
pub fn is_remote(provider: &str) -> bool {
    FLAVORS.iter().any(|f| f.name == provider)
}

impl RemoteConfig {
    /// The config for `provider:model` from the process environment: `AIRLOCK_BASE_URL`, and
    /// `OPENAI_API_KEY`, `DEEPSEEK_API_KEY` or `ANTHROPIC_API_KEY`.
    pub fn from_env(provider: &str, model: &str) -> Result<RemoteConfig, ModelSetupError> {
        RemoteConfig::from_vars(provider, model, |name| std::env::var(name).ok())
    }

    /// [`RemoteConfig::from_env`] with the variables read through `var` (an empty value counts as
    /// unset). A missing key is an error unless the base URL is a loopback address.
    pub fn from_vars(
        provider: &str,
        model: &str,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<RemoteConfig, ModelSetupError> {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let Some(flavor) = FLAVORS.iter().find(|f| f.name == provider) else {
            return Err(ModelSetupError::Unknown(format!("{provider}:{model}")));
        };
        if model.is_empty() {
            return Err(ModelSetupError::MissingModelName {
                provider: flavor.name,
                example: flavor.example_model,
            });
        }
        let base_url = var("AIRLOCK_BASE_URL").unwrap_or_else(|| flavor.base_url.to_owned());
        let api_key = var(flavor.key_variable);
        if api_key.is_none() && !is_loopback(&base_url)? {
            return Err(ModelSetupError::MissingKey {
                model: format!("{provider}:{model}"),
                variable: flavor.key_variable,
            });
        }
        let defaults = Timeouts::default();
        let millis = |variable: &'static str, default: Duration| match var(variable) {
            None => Ok(default),
            Some(value) => value
                .trim()
                .parse()
                .map(Duration::from_millis)
                .map_err(|_| ModelSetupError::BadTimeout { variable, value }),
        };
        let timeouts = Timeouts {
            connect: millis("AIRLOCK_CONNECT_TIMEOUT_MS", defaults.connect)?,
            first_byte: millis("AIRLOCK_FIRST_BYTE_TIMEOUT_MS", defaults.first_byte)?,
            stall: millis("AIRLOCK_STALL_TIMEOUT_MS", defaults.stall)?,
        };
        let thinking_tokens = match var("AIRLOCK_THINKING_TOKENS") {
            None => None,
            Some(value) => match value.trim().parse::<u32>() {
                Ok(tokens) if tokens >= 1024 => Some(tokens),
                _ => return Err(ModelSetupError::BadThinkingTokens { value }),
            },
        };
        Ok(RemoteConfig {
            base_url,
            api_key,
            wire: flavor.wire,
            model: model.to_owned(),
            provider_name: flavor.name.to_owned(),
            timeouts,
            thinking_tokens,
        })
    }

    /// `<base_url>/chat/completions` or `<base_url>/messages`, checked to be an http(s) URL.
    pub fn endpoint(&self) -> Result<reqwest::Url, ModelSetupError> {
        let path = match self.wire {
            Wire::Chat => "chat/completions",
            Wire::Messages => "messages",
        };
        let url = format!("{}/{path}", self.base_url.trim_end_matches('/'));
        let bad =
            |reason: String| ModelSetupError::BadBaseUrl { url: self.base_url.clone(), reason };
        let parsed = reqwest::Url::parse(&url).map_err(|e| bad(e.to_string()))?;
        match parsed.scheme() {
            "http" | "https" => Ok(parsed),
            other => Err(bad(format!("the scheme is {other:?}, not http or https"))),
        }
    }

    /// `http` with the wire's key and version headers.
    pub(super) fn authorize(&self, http: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match (self.wire, &self.api_key) {
            (Wire::Chat, Some(key)) => http.bearer_auth(key),
            (Wire::Chat, None) => http,
            (Wire::Messages, key) => {
                let http = http.header("anthropic-version", "2023-06-01");
                match key {
                    Some(key) => http.header("x-api-key", key),
                    None => http,
                }
            }
        }
    }

    /// Whether requests stay on this machine (where a local server needs no key and no proxy).
    pub fn is_local(&self) -> Result<bool, ModelSetupError> {
        is_loopback(&self.base_url)
    }
}

fn is_loopback(base_url: &str) -> Result<bool, ModelSetupError> {
    let url = reqwest::Url::parse(base_url).map_err(|e| ModelSetupError::BadBaseUrl {
        url: base_url.to_owned(),
        reason: e.to_string(),
    })?;
    let host = url.host_str().unwrap_or_default();
    let ip = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>();
    Ok(host.eq_ignore_ascii_case("localhost") || ip.is_ok_and(|ip| ip.is_loopback()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> =
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    #[test]
    fn openai_defaults_to_the_public_endpoint_and_reads_its_key() {
        let config =
            RemoteConfig::from_vars("openai", "gpt-4o", vars(&[("OPENAI_API_KEY", "sk-1")]))
                .unwrap();
        assert_eq!(config.base_url, "https://api.openai.com/v1");
        assert_eq!(config.api_key.as_deref(), Some("sk-1"));
        assert_eq!(config.model, "gpt-4o");
        assert_eq!(
            config.endpoint().unwrap().as_str(),
            "https://api.openai.com/v1/chat/completions"
        );
        assert!(!format!("{config:?}").contains("sk-1"), "the key is redacted");
    }

    #[test]
    fn deepseek_without_a_key_names_the_variable_to_set() {
        let err = RemoteConfig::from_vars("deepseek", "deepseek-chat", vars(&[])).unwrap_err();
        assert!(err.to_string().contains("set DEEPSEEK_API_KEY"), "{err}");
    }

    #[test]
    fn anthropic_speaks_messages_at_its_endpoint_with_its_key() {
        let key = vars(&[("ANTHROPIC_API_KEY", "sk-ant-1")]);
        let config = RemoteConfig::from_vars("anthropic", "claude-x", key).unwrap();
        assert_eq!(config.wire, Wire::Messages);
        assert_eq!(config.endpoint().unwrap().as_str(), "https://api.anthropic.com/v1/messages");
        let err = RemoteConfig::from_vars("anthropic", "claude-x", vars(&[])).unwrap_err();
        assert!(err.to_string().contains("set ANTHROPIC_API_KEY"), "{err}");
        let thinking = vars(&[("ANTHROPIC_API_KEY", "k"), ("AIRLOCK_THINKING_TOKENS", "2048")]);
        let config = RemoteConfig::from_vars("anthropic", "claude-x", thinking).unwrap();
        assert_eq!(config.thinking_tokens, Some(2048));
        let little = vars(&[("ANTHROPIC_API_KEY", "k"), ("AIRLOCK_THINKING_TOKENS", "100")]);
        let err = RemoteConfig::from_vars("anthropic", "claude-x", little).unwrap_err();
        assert!(err.to_string().contains("at least 1024"), "{err}");
    }

    #[test]
    fn a_loopback_base_url_needs_no_key() {
        for url in ["http://127.0.0.1:8000/v1", "http://localhost:1/v1", "http://[::1]:9/v1/"] {
            let config =
                RemoteConfig::from_vars("openai", "m", vars(&[("AIRLOCK_BASE_URL", url)])).unwrap();
            assert_eq!(config.api_key, None);
            assert!(config.endpoint().unwrap().as_str().ends_with("/v1/chat/completions"));
        }
        let remote = vars(&[("AIRLOCK_BASE_URL", "https://example.com/v1")]);
        assert!(RemoteConfig::from_vars("openai", "m", remote).is_err());
    }

    #[test]
    fn an_empty_model_name_is_refused_with_an_example() {
        let err = RemoteConfig::from_vars("openai", "", vars(&[])).unwrap_err();
        assert!(err.to_string().contains("openai:gpt-4o-mini"), "{err}");
    }

    #[test]
    fn timeouts_come_from_millisecond_variables_and_bad_ones_are_named() {
        let set = vars(&[
            ("AIRLOCK_BASE_URL", "http://127.0.0.1:1/v1"),
            ("AIRLOCK_STALL_TIMEOUT_MS", "250"),
        ]);
        let config = RemoteConfig::from_vars("openai", "m", set).unwrap();
        assert_eq!(config.timeouts.stall, Duration::from_millis(250));
        assert_eq!(config.timeouts.first_byte, Timeouts::default().first_byte);
        let bad = vars(&[
            ("AIRLOCK_BASE_URL", "http://127.0.0.1:1/v1"),
            ("AIRLOCK_FIRST_BYTE_TIMEOUT_MS", "soon"),
        ]);
        let err = RemoteConfig::from_vars("openai", "m", bad).unwrap_err();
        assert!(err.to_string().starts_with("AIRLOCK_FIRST_BYTE_TIMEOUT_MS=\"soon\""), "{err}");
    }
}
