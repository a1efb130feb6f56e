//! The tool registry: what a session's model may call. Built-in tools live here; plugin tools
//! (sandboxed components, the gateway's `plugins/`) and MCP servers' tools ([`crate::mcp`]) join
//! them at start.

mod echo;
mod policy;
mod workspace;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use airlock_core::{ContentBlock, ToolSpec};

pub use echo::Echo;
pub use policy::{
    ASK_ALL, Approval, CLIENT_TIMEOUT_MS, ClientTool, ToolChoice, ToolPolicy, offered_tools,
};
pub use workspace::{Scan, Workspace, WorkspaceError, WorkspaceFile, Workspaces};

/// The longest tool name OpenAI-compatible APIs take.
pub const NAME_MOST: usize = 64;

/// Whether OpenAI-compatible APIs take `c` in a tool name: `[a-zA-Z0-9_-]`.
pub fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Whether OpenAI-compatible APIs take `name` as a tool name: `[a-zA-Z0-9_-]{1,64}`.
pub fn valid_name(name: &str) -> bool {
    (1..=NAME_MOST).contains(&name.len()) && name.chars().all(name_char)
}

/// What a tool call produced.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutput {
    /// The result content.
    pub content: Vec<ContentBlock>,
    /// Set on failure: why (`BAD_ARGUMENTS`, `TIMEOUT`, ...).
    pub error_code: Option<String>,
}

impl ToolOutput {
    /// A successful text result.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput { content: vec![ContentBlock::Text { text: text.into() }], error_code: None }
    }

    /// A call's arguments parsed as `T`, or the `BAD_ARGUMENTS` failure that shows the model
    /// the expected shape (`usage`, e.g. `echo takes {"text": string}`).
    pub fn arguments<T: serde::de::DeserializeOwned>(text: &str, usage: &str) -> Result<T, Self> {
        serde_json::from_str(text).map_err(|e| {
            let message = format!("{usage}; the arguments {text:?} do not fit: {e}");
            ToolOutput::error("BAD_ARGUMENTS", message)
        })
    }

    /// New work the call asked for ran into one of the gateway's limits: `LIMIT_EXCEEDED`,
    /// which the model reads with the limit's message, naming it and its flag.
    pub fn limit_exceeded(why: impl std::fmt::Display) -> Self {
        const CODE: &str = "LIMIT_EXCEEDED";
        ToolOutput::error(CODE, format!("{CODE}: {why}"))
    }

    /// A failure with a code and a message for the model.
    pub fn error(code: &str, message: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![ContentBlock::Text { text: message.into() }],
            error_code: Some(code.to_owned()),
        }
    }
}

/// A boxed tool future.
pub type ToolFuture = Pin<Box<dyn Future<Output = ToolOutput> + Send>>;

/// Who is calling a tool.
#[derive(Clone, Debug)]
pub struct ToolContext {
    /// The calling session.
    pub session_id: String,
    /// The call's id, as the model gave it (empty outside a session's step).
    pub call_id: String,
    /// Becomes `Some(cause)` when the calling session is cancelled while the call runs. Calls
    /// drain (they keep their real result); a call that runs a child session cancels it.
    pub cancelled: tokio::sync::watch::Receiver<Option<airlock_core::CancelCause>>,
    /// The session's workspace, when the gateway keeps workspaces (code tools get it as
    /// `/workspace`).
    pub workspace: Option<Workspace>,
}

impl ToolContext {
    /// A context for a call outside any cancellable session (tests, tools calling tools).
    pub fn detached(session_id: &str) -> ToolContext {
        ToolContext {
            session_id: session_id.to_owned(),
            call_id: String::new(),
            cancelled: tokio::sync::watch::channel(None).1,
            workspace: None,
        }
    }
}

/// A tool the model can call.
pub trait Tool: Send + Sync {
    /// Name, description, schema, parallel safety.
    fn spec(&self) -> ToolSpec;
    /// Runs one call with the model's raw argument text.
    fn call(&self, context: ToolContext, arguments: &str) -> ToolFuture;
    /// Where it comes from: `builtin`, `plugin:<name>`, `mcp:<server>`, or `client` (a session's
    /// client tool, never listed by `/v1/tools`).
    fn origin(&self) -> String {
        "builtin".into()
    }
}

/// Tools by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl ToolRegistry {
    /// The built-in tools every session has.
    pub fn builtin() -> Self {
        let mut registry = ToolRegistry::default();
        registry.add(Arc::new(Echo));
        registry
    }

    /// Adds a tool, replacing one of the same name.
    pub fn add(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.spec().name, tool);
    }

    /// Adds a tool whose name must be new; the error names the clash.
    pub fn add_new(&mut self, tool: Arc<dyn Tool>) -> Result<(), String> {
        let name = tool.spec().name;
        if let Some(existing) = self.tools.get(&name) {
            return Err(format!(
                "tool {name:?} from {} clashes with the one from {}; tool names must be unique",
                tool.origin(),
                existing.origin()
            ));
        }
        self.tools.insert(name, tool);
        Ok(())
    }

    /// The tool of that name.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.get(name).cloned()
    }

    /// Every tool, by name.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.values()
    }

    /// A registry with only the named tools; an unknown name is an error naming the known ones.
    pub fn only(&self, names: &[String]) -> Result<ToolRegistry, String> {
        let mut only = ToolRegistry::default();
        for name in names {
            let tool = self.tools.get(name).ok_or_else(|| {
                let known: Vec<&str> = self.tools.keys().map(String::as_str).collect();
                format!("unknown tool {name:?}; available tools: {}", known.join(", "))
            })?;
            only.tools.insert(name.clone(), tool.clone());
        }
        Ok(only)
    }

    /// Specs of every tool, by name.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.values().map(|t| t.spec()).collect()
    }

    /// Runs a call; an unknown name is an `UNKNOWN_TOOL` error result.
    pub fn call(&self, name: &str, context: ToolContext, arguments: &str) -> ToolFuture {
        match self.tools.get(name) {
            Some(tool) => tool.call(context, arguments),
            None => {
                let known: Vec<&str> = self.tools.keys().map(String::as_str).collect();
                let message =
                    format!("unknown tool {name:?}; available tools: {}", known.join(", "));
                Box::pin(std::future::ready(ToolOutput::error("UNKNOWN_TOOL", message)))
            }
        }
    }
}
