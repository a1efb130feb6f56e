//! A session's budget: what it may spend, what it spent, and the pre-step policy that pauses it
//! when a step would start with the budget spent (`docs/semantics.md`, "Budgets").

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Session, SessionError};
use airlock_core::Input;
use airlock_providers::model::{ModelTable, Price};
use airlock_store::{ModelUsage, Spent, Tokens};

/// What a session may spend; a limit left out is no limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Budget {
    /// Prompt and completion tokens of its model responses, compaction summaries included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Their cost in US dollars, by the `[models]` prices (or this build's estimates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl Budget {
    /// The most tokens a budget may name: the largest whole number every JSON client keeps
    /// exactly (2^53 - 1).
    pub const MAX_TOKENS: u64 = (1 << 53) - 1;

    /// Why this budget cannot be kept, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        match (self.tokens, self.cost_usd) {
            (Some(tokens), _) if tokens > Self::MAX_TOKENS => Err(format!(
                "tokens {tokens} is over {}, the most a budget may name; leave it out for no limit",
                Self::MAX_TOKENS
            )),
            (_, Some(cost)) if !cost.is_finite() || cost < 0.0 => Err(format!(
                "costUsd {cost} is not a cost: give a number of US dollars of 0 or more"
            )),
            _ => Ok(()),
        }
    }

    /// Whether `spend` reached one of its limits.
    pub fn spent_by(&self, spend: &Spend) -> bool {
        self.tokens.is_some_and(|tokens| spend.tokens >= tokens)
            || self.cost_usd.is_some_and(|cost| spend.cost_usd >= cost)
    }
}

/// What a session's model responses spent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Spend {
    /// Prompt tokens (cached ones included) and completion tokens.
    pub tokens: u64,
    /// Their cost in US dollars, for the models that have a price.
    pub cost_usd: f64,
}

impl Spend {
    /// Adds what one response spent, priced by `prices`.
    pub(crate) fn add(&mut self, spent: &Spent, prices: &ModelTable) {
        self.add_tokens(&spent.provider, &spent.model, spent.tokens, prices);
    }

    /// What the store's sums for a session add up to, priced by `prices`.
    pub(crate) fn of(sums: &[ModelUsage], prices: &ModelTable) -> Spend {
        let mut spend = Spend::default();
        for sum in sums {
            spend.add_tokens(&sum.provider, &sum.model, sum.tokens, prices);
        }
        spend
    }

    fn add_tokens(&mut self, provider: &str, model: &str, t: Tokens, prices: &ModelTable) {
        self.tokens += t.input_tokens + t.output_tokens;
        if let Some(price) = prices.price(provider, model) {
            self.cost_usd += cost(&price, &t);
        }
    }
}

/// What `tokens` cost at `price`, in US dollars.
pub(crate) fn cost(price: &Price, t: &Tokens) -> f64 {
    price.cost(t.input_tokens, t.output_tokens, t.cache_read_tokens, t.cache_write_tokens)
}

/// A session's budget, what it spent and whether it waits for more.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetState {
    /// Its budget (`None`: none).
    pub budget: Option<Budget>,
    /// What it spent.
    pub spent: Spend,
    /// It paused at its budget and waits for a larger one.
    pub paused: bool,
}

impl Session {
    /// The session's budget, spend and pause.
    pub fn budget(&self) -> BudgetState {
        let spent = self.spent.unwrap_or_default();
        BudgetState { budget: self.budget, spent, paused: self.paused }
    }

    /// Reads what the session spent so far from the store; commits count on from there.
    pub(super) async fn count_spend(&mut self) -> Result<(), SessionError> {
        let sums = self.log.usage(&self.config.session_id).await?;
        self.spent = Some(Spend::of(&sums, &self.prices));
        Ok(())
    }

    /// Counts the responses of a commit.
    pub(super) fn count(&mut self, committed: &[Spent]) {
        if let Some(spent) = &mut self.spent {
            for response in committed {
                spent.add(response, &self.prices);
            }
        }
    }

    /// Why the next step must not start, as `budget/exhausted` says it: the budget is spent by
    /// what is committed and by `pending`, the responses of the batch not yet committed.
    pub(super) fn exhausted(&self, pending: &[Spent]) -> Option<String> {
        let budget = self.budget?;
        let mut spent = self.spent.unwrap_or_default();
        for response in pending {
            spent.add(response, &self.prices);
        }
        budget
            .spent_by(&spent)
            .then(|| json!({"scope": "session", "budget": budget, "spent": spent}).to_string())
    }

    /// Takes a new budget (`None`: none); a session paused at its budget resumes when the new
    /// one is not spent, admitted as new work is (its tenant's turn slot). Answers the state
    /// after the change, committed.
    pub async fn set_budget(
        &mut self,
        budget: Option<Budget>,
    ) -> Result<BudgetState, SessionError> {
        if self.spent.is_none() {
            self.count_spend().await?;
        }
        self.budget = budget;
        if self.paused && self.exhausted(&[]).is_none() {
            if self.held.is_none() {
                self.hold_turn()?;
            }
            let why = json!({"budget": budget.unwrap_or_default(), "spent": self.spent});
            self.feed_all(vec![Input::Resume(why.to_string())], None).await?;
        }
        Ok(self.budget())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_spent_at_either_limit_and_a_negative_cost_is_refused() {
        let budget = Budget { tokens: Some(100), cost_usd: Some(0.5) };
        assert!(!budget.spent_by(&Spend { tokens: 99, cost_usd: 0.49 }));
        assert!(budget.spent_by(&Spend { tokens: 100, cost_usd: 0.0 }));
        assert!(budget.spent_by(&Spend { tokens: 0, cost_usd: 0.5 }));
        assert!(!Budget::default().spent_by(&Spend { tokens: u64::MAX, cost_usd: 1e9 }));
        assert!(Budget { tokens: None, cost_usd: Some(-1.0) }.check().is_err());
        assert!(Budget { tokens: Some(0), cost_usd: Some(0.0) }.check().is_ok());
        assert!(Budget { tokens: Some(Budget::MAX_TOKENS + 1), cost_usd: None }.check().is_err());
    }
}
