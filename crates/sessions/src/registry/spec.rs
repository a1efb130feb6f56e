//! What a session is asked to be: stored with it, so a restart rebuilds the same session.

use serde::{Deserialize, Serialize};

use crate::session::Budget;
use airlock_base::clock::now_ms;
use airlock_providers::tools::{ClientTool, ToolChoice};
use airlock_store::SessionRow;

/// How a session was asked for: stored with it, so a restart rebuilds the same session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSpec {
    /// `demo`, `openai:<model>`, ...
    pub model: String,
    /// The models its steps fail over to, in order (`docs/semantics.md`, "Failover"); absent:
    /// what the gateway's settings say for `model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Vec<String>>,
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The gateway tools the model sees (all when absent), each by name or with an approval
    /// policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolChoice>>,
    /// The tools the session's client runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_tools: Option<Vec<ClientTool>>,
    /// The session this one was forked from, and the seq its copy ends at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkedFrom>,
    /// The output token limit of each model request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Anything the client wants kept with the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
    /// What it may spend: a step that would start with it spent pauses the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
}

/// Where a fork's log was copied from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkedFrom {
    /// The source session.
    pub session_id: String,
    /// The seq of the last event copied.
    pub seq: u64,
}

impl SessionSpec {
    /// The row of a new session asked for this way, created now.
    pub fn row(
        &self,
        session_id: &str,
        parent: Option<String>,
        tenant: Option<String>,
    ) -> SessionRow {
        let now = now_ms();
        SessionRow {
            session_id: session_id.to_owned(),
            created_at: now,
            updated_at: now,
            spec: serde_json::to_value(self).expect("specs serialize"),
            disposed: false,
            parent_session_id: parent,
            tenant,
            goal: None,
            needs_recovery: false,
            shares: None,
        }
    }
}
