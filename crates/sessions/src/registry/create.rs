//! Making sessions: a client's, and a subagent below its parent, each admitted first.

use super::{HubNotice, Registry, RegistryError, SessionSpec, valid_session_id};
use crate::actor::SessionHandle;
use crate::session::{Accounting, Outbox, Session};
use airlock_base::clock::fresh_id;
use airlock_store::{Owner, SessionRow};

impl Registry {
    /// Admits one more session (or fork) of `tenant`: its rate of creations, and its quotas of
    /// sessions and bytes stored.
    pub(super) async fn admit_session(&self, tenant: Option<&str>) -> Result<(), RegistryError> {
        let admission = self.admission();
        admission.create(tenant)?;
        let Some(tenant) = tenant else { return Ok(()) };
        if admission.limits().tenant.sessions > 0 {
            admission.stored(tenant, self.store.tenant_sessions(tenant).await?)?;
        }
        if admission.limits().tenant.bytes > 0 {
            admission.bytes(tenant, self.store.tenant_bytes(tenant).await?)?;
        }
        Ok(())
    }

    /// Creates a child of `parent_id` (a live session) with the parent's model, system prompt and
    /// tools, of the parent's tenant and below the parent's root: refused past the depth of
    /// subagents, or the tenant's quotas, with [`RegistryError::Exceeded`].
    pub async fn create_child(
        &self,
        parent_id: &str,
        name: Option<&str>,
    ) -> Result<SessionHandle, RegistryError> {
        let parent = self.get(parent_id)?;
        let admission = self.admission();
        admission.depth(parent.depth())?;
        // Its first message will need these: a child is not made only to be refused.
        admission.descendant_room(parent.root().unwrap_or(parent_id))?;
        admission.turn_room(parent.tenant())?;
        self.admit_session(parent.tenant()).await?;
        let row = self
            .store
            .session(parent_id)
            .await?
            .ok_or_else(|| RegistryError::NotFound(parent_id.to_owned()))?;
        let mut spec: SessionSpec = serde_json::from_value(row.spec).unwrap_or_default();
        spec.metadata = name.map(|name| serde_json::json!({"name": name}));
        let child_id = fresh_id();
        let root = parent.root().unwrap_or(parent_id);
        let accounting = self.accounting(row.tenant.as_deref(), Some(root), parent.depth() + 1);
        let parent_id = Some(parent_id.to_owned());
        self.insert(child_id.clone(), spec, parent_id, accounting).await?;
        self.resume(&child_id).await
    }

    /// Creates a session of `tenant` (`None`: of no tenant); `Ok((row, false))` when one with
    /// that id exists (the caller compares).
    pub async fn create(
        &self,
        session_id: String,
        spec: SessionSpec,
        tenant: Option<String>,
    ) -> Result<(SessionRow, bool), RegistryError> {
        if !valid_session_id(&session_id) {
            return Err(RegistryError::BadId(session_id));
        }
        self.admit_session(tenant.as_deref()).await?;
        let accounting = self.accounting(tenant.as_deref(), None, 0);
        self.insert(session_id, spec, None, accounting).await
    }

    /// Stores and starts an admitted session whose id was checked (a client's) or made here (a
    /// child's); `Ok((row, false))` when one with that id exists.
    async fn insert(
        &self,
        session_id: String,
        mut spec: SessionSpec,
        parent_session_id: Option<String>,
        accounting: Accounting,
    ) -> Result<(SessionRow, bool), RegistryError> {
        if spec.model.is_empty() {
            spec.model = self.rules.default_model.clone();
        }
        let _exclusive = self.exclusive(&session_id).await;
        // The core comes first: a session whose core cannot start is not stored.
        let tenant = accounting.tenant.as_deref().map(str::to_owned);
        let session =
            Session::create(self.build(&session_id, &spec, Outbox::new(), accounting)?)?;
        let row = spec.row(&session_id, parent_session_id, tenant);
        if !self.store.insert_session(row.clone()).await? {
            let existing = self
                .store
                .session(&session_id)
                .await?
                .ok_or_else(|| RegistryError::NotFound(session_id.clone()))?;
            return Ok((existing, false));
        }
        airlock_base::metrics::global().stored_sessions.inc();
        match self.store.acquire(&session_id).await? {
            Owner::Here => {
                let handle = SessionHandle::spawn(session, Some(self.store.clone()));
                self.go_live(handle);
            }
            // Another gateway sharing the store woke it already: it runs there.
            Owner::Elsewhere { address } => {
                tracing::info!(session_id, address, "a new session was taken by another gateway");
            }
        }
        let _ = self.hub.send(HubNotice::Added { session_id });
        Ok((row, true))
    }
}
