//! Tools that one session has beside the registry's own: the MCP servers an ACP client names
//! in `session/new` or `session/load`. They live in memory only, as their servers do.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use airlock_providers::tools::{Tool, ToolRegistry};

/// Each session's own tools, by session id.
#[derive(Default)]
pub struct SessionTools(Mutex<HashMap<String, Vec<Arc<dyn Tool>>>>);

impl SessionTools {
    /// Gives `session_id` these tools from its next build on (a new session, or one brought
    /// back), in place of any it had; a name that `shared` has already is refused, naming it.
    pub fn set(
        &self,
        session_id: &str,
        shared: &ToolRegistry,
        tools: Vec<Arc<dyn Tool>>,
    ) -> Result<(), String> {
        let mut check = shared.clone();
        for tool in &tools {
            check.add_new(tool.clone())?;
        }
        self.0.lock().expect("session tools lock").insert(session_id.to_owned(), tools);
        Ok(())
    }

    /// Forgets `session_id`'s own tools (a session built later has only the shared ones).
    pub fn forget(&self, session_id: &str) {
        self.0.lock().expect("session tools lock").remove(session_id);
    }

    /// Adds `session_id`'s own tools to `tools`.
    pub(super) fn add_to(&self, session_id: &str, tools: &mut ToolRegistry) -> Result<(), String> {
        let own = self.0.lock().expect("session tools lock");
        for tool in own.get(session_id).into_iter().flatten() {
            tools.add_new(tool.clone())?;
        }
        Ok(())
    }
}
