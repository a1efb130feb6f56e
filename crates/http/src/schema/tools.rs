//! The OpenAPI schemas of a session's tool policy (`ToolChoice`, `ClientTool` and the like in
//! `tools/policy.rs`), whose types stay free of utoipa. These types are their wire shape, with
//! the same serde attributes, and only document it: the API reads the real ones. Schemathesis and
//! the `openapi_schemas` tests check that the two agree.

#![expect(dead_code, reason = "the types only document the tool policy's JSON; none is built")]

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

/// Whether a tool's calls wait for a person.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Approval {
    /// They run at once.
    Never,
    /// Each waits for `approve` or `deny`.
    Always,
}

/// A tool the session offers: its name (with the tool's own approval default), or its name and
/// an approval policy.
#[derive(Deserialize, ToSchema)]
#[serde(untagged)]
pub enum ToolChoice {
    /// The tool, with its own default (a plugin's manifest may ask for approval).
    Name(String),
    /// The tool, with this policy.
    Policy(ToolPolicy),
}

/// A tool and whether its calls wait for a person.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolPolicy {
    /// A gateway tool, or one of the session's client tools.
    name: String,
    /// `always`: each call waits for `approve` or `deny`.
    approval: Approval,
}

/// A tool the session's client runs: a call is logged, waits for the client's
/// `POST …/tool-calls/{callId}/result`, and fails `TOOL_TIMEOUT` without one in time.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientTool {
    /// 1 to 64 letters, digits, `_` or `-`.
    #[schema(pattern = "^[a-zA-Z0-9_-]{1,64}$")]
    name: String,
    /// What it does, for the model.
    #[serde(default)]
    description: String,
    /// The JSON Schema of its arguments (an object); `{"type": "object"}` when absent.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    parameters: Option<Value>,
    /// How long a call waits for its result: 1 ms to a day, 10 minutes when absent.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 86_400_000)]
    timeout_ms: Option<u64>,
}
