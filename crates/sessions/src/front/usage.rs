//! What sessions spent: the store's sums of their responses' usage, priced by the `[models]`
//! table; and a session's budget, which pauses it when spent.

use airlock_providers::model::ModelTable;
use airlock_store::{ModelUsage, Tokens};

use super::Sessions;
use crate::registry::RegistryError;
use crate::session::{Budget, BudgetState, Spend, cost, seq_of};

/// What some sessions spent: in all, and by model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spending {
    /// Every token counted.
    pub tokens: Tokens,
    /// What the priced models' tokens cost, in US dollars.
    pub cost_usd: f64,
    /// Some of that cost comes from this build's default prices, not the settings.
    pub estimate: bool,
    /// Responses of models without a price, whose cost `cost_usd` leaves out.
    pub unpriced_responses: u64,
    /// By model (and by tenant, in a gateway-wide sum).
    pub models: Vec<ModelSpending>,
}

/// What one model's responses spent.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSpending {
    /// The sums.
    pub usage: ModelUsage,
    /// Their cost in US dollars, when the model has a price.
    pub cost_usd: Option<f64>,
    /// The price is this build's default for a well-known model.
    pub estimate: bool,
}

impl Spending {
    /// `sums` priced by `table`.
    fn priced(sums: Vec<ModelUsage>, table: &ModelTable) -> Spending {
        let mut spending = Spending::default();
        for usage in sums {
            let t = usage.tokens;
            let price = table.price(&usage.provider, &usage.model);
            let cost_usd = price.map(|price| cost(&price, &t));
            let estimate = price.is_some_and(|p| p.estimate);
            spending.tokens += t;
            spending.cost_usd += cost_usd.unwrap_or(0.0);
            spending.estimate |= estimate;
            if cost_usd.is_none() {
                spending.unpriced_responses += usage.responses;
            }
            spending.models.push(ModelSpending { usage, cost_usd, estimate });
        }
        spending
    }
}

impl Sessions {
    /// What a session's own responses spent (a fork's: since it was forked), summaries of its
    /// compactions included.
    pub async fn usage(&self, session_id: &str) -> Result<Spending, RegistryError> {
        self.row(session_id).await?;
        let sums = self.registry.store().session_usage(session_id).await?;
        Ok(Spending::priced(sums, &self.registry.rules().models))
    }

    /// What the responses since `since` (ms since the epoch) of `tenant`'s sessions spent, its
    /// subagents' and disposed sessions' included; every tenant's, by tenant, when `None`.
    pub async fn tenant_usage(
        &self,
        tenant: Option<&str>,
        since: u64,
    ) -> Result<Spending, RegistryError> {
        let sums = self.registry.store().tenant_usage(tenant, since).await?;
        Ok(Spending::priced(sums, &self.registry.rules().models))
    }

    /// A session's budget and whether it paused at it, as the session says, and what it spent,
    /// as the store sums it.
    pub async fn budget(&self, session_id: &str) -> Result<BudgetState, RegistryError> {
        let view = self.open(session_id).await?.view();
        let sums = self.registry.store().session_usage(session_id).await?;
        let spent = Spend::of(&sums, &self.registry.rules().models);
        Ok(BudgetState { budget: view.budget, spent, paused: view.paused })
    }

    /// Whether a session that is not in memory paused at its budget: its log's last word on
    /// the budget is `budget/exhausted`.
    pub(super) async fn paused_at_rest(&self, session_id: &str) -> Result<bool, RegistryError> {
        let store = self.registry.store();
        let exhausted = store.events_of_type(session_id, "budget/exhausted").await?;
        if exhausted.is_empty() {
            return Ok(false); // never paused: one read
        }
        let resumed = store.events_of_type(session_id, "budget/resumed").await?;
        let last = |events: &[String]| events.last().and_then(|json| seq_of(json).ok());
        Ok(last(&exhausted) > last(&resumed))
    }

    /// Replaces a session's budget (`None`: none), kept with its spec; a session paused at its
    /// budget resumes where it stopped when the new one is not spent.
    pub async fn set_budget(
        &self,
        session_id: &str,
        budget: Option<Budget>,
    ) -> Result<BudgetState, RegistryError> {
        if let Some(budget) = &budget {
            budget
                .check()
                .map_err(|message| RegistryError::BadSpec { field: "budget", message })?;
        }
        let handle = self.open(session_id).await?;
        self.rewrite_spec(session_id, |spec| spec.budget = budget).await?;
        Ok(handle.set_budget(budget).await?)
    }
}
