//! What a session is built from: its spec read against the gateway's rules (models and their
//! fallbacks, tools, limits, budget, prices) into [`SessionParts`], and its workspace.

use airlock_core::{Config, StepPolicy};

use super::{Registry, RegistryError, SessionSpec};
use crate::session::{Accounting, Outbox, SessionParts};
use airlock_providers::model::ModelSetupError;
use airlock_providers::tools::{Workspace, offered_tools};
use std::sync::Arc;

impl Registry {
    /// The workspace of the session `session_id` of `tenant`, when the gateway keeps them.
    pub fn workspace_of(&self, tenant: Option<&str>, session_id: &str) -> Option<Workspace> {
        self.rules.workspaces.as_ref().map(|w| w.of(tenant, session_id))
    }

    /// The parts a session is made of, per its spec.
    pub(super) fn build(
        &self,
        session_id: &str,
        spec: &SessionSpec,
        outbox: Arc<Outbox>,
        accounting: Accounting,
    ) -> Result<SessionParts, RegistryError> {
        let chain = self.rules.models.chain(&spec.model, spec.fallback.as_deref());
        let chain = chain.map_err(|e| {
            let field = match e {
                ModelSetupError::Fallback { .. } | ModelSetupError::LongChain { .. } => "fallback",
                _ => "model",
            };
            RegistryError::BadSpec { field, message: e.to_string() }
        })?;
        if let Some(budget) = &spec.budget {
            budget
                .check()
                .map_err(|message| RegistryError::BadSpec { field: "budget", message })?;
        }
        let model = chain.providers[0].clone();
        let client = spec.client_tools.as_deref().unwrap_or_default();
        let asking = &self.rules.approval_for;
        let mut tools = offered_tools(&self.tools, spec.tools.as_deref(), client, asking)
            .map_err(|message| RegistryError::BadSpec { field: "tools", message })?;
        self.session_tools
            .add_to(session_id, &mut tools)
            .map_err(|message| RegistryError::BadSpec { field: "tools", message })?;
        let mut config = Config::new(session_id, model.provider(), model.model());
        config.system = spec.system.clone();
        config.max_tokens = spec.max_tokens;
        // `Session::decide` enters every claim whole, unless the session's budget is spent.
        config.step_policy = StepPolicy::Ask;
        config.limits = self.rules.limits.clone();
        config.context = self.rules.models.policy(&spec.model, model.model());
        config.retry = chain.retry;
        config.fallbacks = chain.fallbacks;
        let log = Arc::new(self.store.clone());
        let models = chain.providers;
        let (host, budget, prices) = (self.host.clone(), spec.budget, self.rules.models.clone());
        let workspace = self.workspace_of(accounting.tenant.as_deref(), session_id);
        Ok(SessionParts {
            host,
            config,
            models,
            tools,
            log,
            outbox,
            accounting,
            budget,
            prices,
            workspace,
            tap: self.rules.tap.clone(),
        })
    }
}
