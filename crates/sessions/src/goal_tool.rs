//! The `goal` model tool: the model ends its session's goal as complete or blocked.

use std::sync::Weak;

use airlock_core::ToolSpec;
use serde::Deserialize;

use crate::goal::GoalOp;
use crate::registry::Registry;
use airlock_providers::tools::{Tool, ToolContext, ToolFuture, ToolOutput};

/// The `goal` model tool: ends the session's goal as complete or blocked.
pub struct GoalTool {
    registry: Weak<Registry>,
}

impl GoalTool {
    /// The tool, for the registry it belongs to.
    pub fn new(registry: Weak<Registry>) -> GoalTool {
        GoalTool { registry }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolArguments {
    status: ToolStatus,
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum ToolStatus {
    Complete,
    Blocked,
}

impl Tool for GoalTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "goal".into(),
            description: "Ends the session's goal: status \"complete\" when it is achieved, \
                \"blocked\" (with a reason) when it cannot be. No more goal rounds follow."
                .into(),
            parameters: r#"{"type":"object","properties":{"status":{"type":"string","enum":["complete","blocked"]},"reason":{"type":"string","description":"Why it is blocked"}},"required":["status"]}"#.into(),
            parallel_safe: false,
            ..ToolSpec::default()
        }
    }

    fn call(&self, context: ToolContext, arguments: &str) -> ToolFuture {
        let registry = self.registry.clone();
        let usage = r#"goal takes {"status": "complete"|"blocked", "reason"?: string}"#;
        let args = ToolOutput::arguments::<ToolArguments>(arguments, usage);
        Box::pin(async move {
            let args = match args {
                Ok(args) => args,
                Err(bad) => return bad,
            };
            let op = match args.status {
                ToolStatus::Complete => GoalOp::Complete,
                ToolStatus::Blocked => GoalOp::Block {
                    reason: args.reason.unwrap_or_else(|| "the model gave no reason".into()),
                },
            };
            let handle = match registry.upgrade().map(|r| r.get(&context.session_id)) {
                Some(Ok(handle)) => handle,
                _ => return ToolOutput::error("FAILED", "the session is shutting down"),
            };
            match handle.change_goal(op).await {
                Ok(Some((goal, _))) => ToolOutput::text(format!(
                    "The goal is now {}.",
                    serde_json::to_value(goal.phase).unwrap_or_default().as_str().unwrap_or("?")
                )),
                Ok(None) => ToolOutput::error("FAILED", "the goal was cleared"),
                Err(error) => ToolOutput::error("DENIED", error.to_string()),
            }
        })
    }
}
