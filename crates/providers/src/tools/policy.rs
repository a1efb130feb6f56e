//! A session's say over its tools (`docs/semantics.md`, "Approvals, client tools and forks"): which gateway
//! tools it offers and which of them wait for a person's approval, and the tools its client runs.

use std::sync::Arc;

use airlock_core::ToolSpec;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Tool, ToolContext, ToolFuture, ToolOutput, ToolRegistry};
use airlock_base::input::whole;

/// How long a client tool's call waits for its result unless the tool says otherwise.
pub const CLIENT_TIMEOUT_MS: u64 = 10 * 60 * 1000;

/// In a gateway's `--approval-for`: every gateway tool.
pub const ASK_ALL: &str = "all";

/// The longest a client tool may ask to wait: a day.
const CLIENT_TIMEOUT_MOST_MS: u64 = 24 * 60 * 60 * 1000;

/// Whether a tool's calls wait for a person.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Approval {
    /// They run at once.
    #[default]
    Never,
    /// Each waits for `approve` or `deny`.
    Always,
}

/// A tool the session offers: its name (with the tool's own approval default), or its name and
/// an approval policy.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ToolChoice {
    /// The tool, with its own default (a plugin's manifest may ask for approval).
    Name(String),
    /// The tool, with this policy.
    Policy(ToolPolicy),
}

/// A tool and whether its calls wait for a person.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolPolicy {
    /// A gateway tool, or one of the session's client tools.
    pub name: String,
    /// `always`: each call waits for `approve` or `deny`.
    pub approval: Approval,
}

impl<'de> Deserialize<'de> for ToolChoice {
    /// A name, or `{name, approval}`; what does not fit says which of the two it was meant as.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match Value::deserialize(deserializer)? {
            Value::String(name) => Ok(ToolChoice::Name(name)),
            policy @ Value::Object(_) => {
                serde_json::from_value(policy).map(ToolChoice::Policy).map_err(|e| {
                    D::Error::custom(format!(
                        "a tool policy is {{name, approval: \"always\"|\"never\"}}: {e}"
                    ))
                })
            }
            other => Err(D::Error::custom(format!(
                "a tool is its name or {{name, approval: \"always\"|\"never\"}}, not {other}"
            ))),
        }
    }
}

impl ToolChoice {
    /// The tool's name.
    pub fn name(&self) -> &str {
        match self {
            ToolChoice::Name(name) | ToolChoice::Policy(ToolPolicy { name, .. }) => name,
        }
    }
}

/// A tool the session's client runs: a call is logged, waits for the client's
/// `POST …/tool-calls/{callId}/result`, and fails `TOOL_TIMEOUT` without one in time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientTool {
    /// 1 to 64 letters, digits, `_` or `-`.
    pub name: String,
    /// What it does, for the model.
    #[serde(default)]
    pub description: String,
    /// The JSON Schema of its arguments (an object); `{"type": "object"}` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    /// How long a call waits for its result: 1 ms to a day, 10 minutes when absent.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "whole")]
    pub timeout_ms: Option<u64>,
}

impl ClientTool {
    /// The tool as the core sees it; the error says what to fix.
    fn spec(&self) -> Result<ToolSpec, String> {
        let name = &self.name;
        if !super::valid_name(name) {
            return Err(format!(
                "client tool name {name:?} must be 1 to 64 letters, digits, `_` or `-`"
            ));
        }
        let parameters = match &self.parameters {
            None => r#"{"type":"object"}"#.to_owned(),
            Some(Value::Object(schema)) => Value::Object(schema.clone()).to_string(),
            Some(_) => {
                return Err(format!(
                    "client tool {name:?}: parameters must be a JSON Schema object"
                ));
            }
        };
        let timeout = self.timeout_ms.unwrap_or(CLIENT_TIMEOUT_MS);
        if !(1..=CLIENT_TIMEOUT_MOST_MS).contains(&timeout) {
            return Err(format!(
                "client tool {name:?}: timeoutMs must be 1 to {CLIENT_TIMEOUT_MOST_MS} (a day)"
            ));
        }
        Ok(ToolSpec {
            name: name.clone(),
            description: self.description.clone(),
            parameters,
            parallel_safe: true,
            approval: false,
            client_timeout_ms: Some(timeout),
        })
    }
}

/// The tools of a session: `registry` narrowed to `choices` (all of it when `None`), with their
/// approval policies, and the client's tools. The gateway tools `asking` names (`all`: every
/// one) wait for approval unless the session's own policy says otherwise. The error says what
/// to fix.
pub fn offered_tools(
    registry: &ToolRegistry,
    choices: Option<&[ToolChoice]>,
    client: &[ClientTool],
    asking: &[String],
) -> Result<ToolRegistry, String> {
    let is_client = |name: &str| client.iter().any(|tool| tool.name == name);
    let mut tools = match choices {
        None => registry.clone(),
        Some(choices) => {
            let names: Vec<String> = choices
                .iter()
                .map(|choice| choice.name().to_owned())
                .filter(|name| !is_client(name))
                .collect();
            registry.only(&names)?
        }
    };
    let asked = |name: &str| asking.iter().any(|a| a == name || a == ASK_ALL);
    let gateway_tools: Vec<Arc<dyn Tool>> = tools.tools().cloned().collect();
    for tool in gateway_tools.into_iter().filter(|tool| asked(&tool.spec().name)) {
        tools.add(Arc::new(Guarded { tool, approval: true }));
    }
    for tool in client {
        if let Some(gateway_tool) = registry.get(&tool.name) {
            return Err(format!(
                "client tool {:?} has the name of the gateway's tool from {}; name it otherwise",
                tool.name,
                gateway_tool.origin()
            ));
        }
        tools.add_new(Arc::new(ClientCall(tool.spec()?)))?;
    }
    for choice in choices.into_iter().flatten() {
        if let ToolChoice::Policy(ToolPolicy { name, approval }) = choice {
            let tool = tools.get(name).expect("every chosen tool is in by now");
            let approval = *approval == Approval::Always;
            tools.add(Arc::new(Guarded { tool, approval }));
        }
    }
    Ok(tools)
}

/// A tool with the session's approval policy.
struct Guarded {
    tool: Arc<dyn Tool>,
    approval: bool,
}

impl Tool for Guarded {
    fn spec(&self) -> ToolSpec {
        ToolSpec { approval: self.approval, ..self.tool.spec() }
    }

    fn call(&self, context: ToolContext, arguments: &str) -> ToolFuture {
        self.tool.call(context, arguments)
    }

    fn origin(&self) -> String {
        self.tool.origin()
    }
}

/// A client tool: the core hands its calls to the client, never to the gateway.
struct ClientCall(ToolSpec);

impl Tool for ClientCall {
    fn spec(&self) -> ToolSpec {
        self.0.clone()
    }

    fn call(&self, _context: ToolContext, _arguments: &str) -> ToolFuture {
        let message = format!("{} runs in the session's client, not in the gateway", self.0.name);
        Box::pin(std::future::ready(ToolOutput::error("CLIENT_TOOL", message)))
    }

    fn origin(&self) -> String {
        "client".into()
    }
}
