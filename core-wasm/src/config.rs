//! What a session is set up with: its model and the chain it fails over to, its tools, how it
//! retries, its limits, when it compacts and who decides what a step enters.

use serde::{Deserialize, Serialize};

/// A tool the model may call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments, as JSON text.
    pub parameters: String,
    /// Parallel-safe calls may run together; the others run alone.
    pub parallel_safe: bool,
    /// Each call waits for a person's approval before it runs (`tool/approval`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approval: bool,
    /// A client tool: the session's client runs each call and answers with its result
    /// ([`crate::CallAnswer::Result`]); a call without one after this many milliseconds fails
    /// `TOOL_TIMEOUT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_timeout_ms: Option<u64>,
}

/// Moves a [`ToolSpec`]'s fields into `$to`, a struct with the same fields: the WIT `tool-spec`
/// of the guest's or the host's bindings, or a `ToolSpec` from either. The one list of the fields
/// both sides of the component boundary convert.
#[macro_export]
macro_rules! move_tool_spec {
    ($spec:expr => $to:path) => {{
        let s = $spec;
        $to {
            name: s.name,
            description: s.description,
            parameters: s.parameters,
            parallel_safe: s.parallel_safe,
            approval: s.approval,
            client_timeout_ms: s.client_timeout_ms,
        }
    }};
}

/// Backoff for transient model failures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryPolicy {
    /// Retries before the failure ends the turn.
    pub max_retries: u32,
    /// The first delay; each retry doubles it.
    pub base_delay_ms: u64,
    /// The longest delay.
    pub max_delay_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { max_retries: 4, base_delay_ms: 500, max_delay_ms: 8_000 }
    }
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (1-based); a provider's `Retry-After` wins.
    pub fn delay_ms(&self, attempt: u32, retry_after_ms: Option<u64>) -> u64 {
        retry_after_ms.unwrap_or_else(|| {
            let doubled = self.base_delay_ms.saturating_mul(1u64 << (attempt - 1).min(32));
            doubled.min(self.max_delay_ms)
        })
    }
}

/// What no turn may exceed (0: no limit). A turn that reaches one stops as a cancel would and
/// ends `error` with the code `TURN_TIMEOUT`, `MAX_STEPS` or `OUTPUT_LIMIT`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Wall time of a turn from `turn/start`.
    pub turn_ms: u64,
    /// Steps per turn.
    pub max_steps: u32,
    /// Bytes of text, reasoning and tool-call arguments one step may stream.
    pub step_output_bytes: u64,
    /// The longest provider `Retry-After` waited for; a longer one ends the turn with the
    /// provider's error.
    pub max_retry_after_ms: u64,
}

impl Default for Limits {
    /// 30 minutes a turn, 256 steps, 1 MiB a step, a minute's `Retry-After`.
    fn default() -> Self {
        Limits {
            turn_ms: 30 * 60 * 1000,
            max_steps: 256,
            step_output_bytes: 1 << 20,
            max_retry_after_ms: 60_000,
        }
    }
}

impl Limits {
    /// No limit at all.
    pub fn none() -> Self {
        Limits { turn_ms: 0, max_steps: 0, step_output_bytes: 0, max_retry_after_ms: 0 }
    }
}

/// A session's fixed settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Config {
    /// Also the agent id; core-made message ids derive from it.
    pub session_id: String,
    /// e.g. `demo`, `openai`.
    pub provider: String,
    /// The model name sent upstream.
    pub model: String,
    /// The system prompt.
    pub system: Option<String>,
    /// Tools offered to the model.
    pub tools: Vec<ToolSpec>,
    /// The output token limit.
    pub max_tokens: Option<u32>,
    /// Backoff for transient failures.
    pub retry: RetryPolicy,
    /// What no turn may exceed.
    pub limits: Limits,
    /// When the conversation is compacted.
    pub context: ContextPolicy,
    /// Who decides what each step enters.
    #[serde(default)]
    pub step_policy: StepPolicy,
    /// The models a step fails over to, in order, when the one before answers with a transient
    /// error past its retries (`docs/semantics.md`, "Failover").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<ModelRoute>,
}

/// A model of a session's chain: which provider serves it, under which name, with what window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRoute {
    /// e.g. `anthropic`, `openai`.
    pub provider: String,
    /// The model name sent upstream.
    pub model: String,
    /// Its context window, when known (only logged: compaction follows the session's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
}

/// Who decides what a step enters of the input it claimed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepPolicy {
    /// The host: each claim is an [`crate::Output::DecideStep`], answered with
    /// [`crate::Input::Decided`].
    #[default]
    Ask,
    /// Everything claimed enters, in order, without asking: the same log as a host that always
    /// answers `Enter` with every id, one call into the core fewer per step.
    EnterAll,
}

/// When the conversation is summarized (`docs/semantics.md`, "Context compaction").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextPolicy {
    /// The model's context window in tokens; unknown, only an overflow compacts.
    pub window: Option<u64>,
    /// The share of the window (in percent) at which the conversation is compacted before a
    /// model call; 0 never compacts under pressure.
    pub compact_at_percent: u8,
}

impl Default for ContextPolicy {
    /// An unknown window, compacting at 80 % of one once it is known.
    fn default() -> Self {
        ContextPolicy { window: None, compact_at_percent: 80 }
    }
}

impl Config {
    /// A config with no tools, no system prompt, the default retry policy and limits, and an
    /// unknown context window.
    pub fn new(session_id: &str, provider: &str, model: &str) -> Self {
        Config {
            session_id: session_id.to_owned(),
            provider: provider.to_owned(),
            model: model.to_owned(),
            system: None,
            tools: Vec::new(),
            max_tokens: None,
            retry: RetryPolicy::default(),
            limits: Limits::default(),
            context: ContextPolicy::default(),
            step_policy: StepPolicy::default(),
            fallbacks: Vec::new(),
        }
    }

    /// The model of route `route`: 0 the session's own, `i` its `i`-th fallback.
    pub fn route(&self, route: u32) -> ModelRoute {
        match route.checked_sub(1) {
            None => ModelRoute {
                provider: self.provider.clone(),
                model: self.model.clone(),
                context_window: self.context.window,
            },
            Some(i) => self.fallbacks[i as usize].clone(),
        }
    }
}
