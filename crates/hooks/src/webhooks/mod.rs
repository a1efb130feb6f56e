//! Webhook subscriptions (`docs/http-api.md`, "Webhooks"): a tenant asks to be told, at a URL of
//! its own, when its sessions go idle, need a person, fail, end a turn or finish a run. What is
//! told comes from the log: each commit writes the deliveries of what it logged (`airlock-store`'s
//! `hooks`), and [`deliver`] sends them, signed, at least once and in order per session.

mod address;
mod deliver;
mod sign;

use airlock_store::{Store, StoreError, Webhook};

pub use deliver::{DeliverySettings, deliver};
pub use sign::signature;

/// The event types a subscription may ask for.
pub const EVENT_TYPES: [&str; 5] =
    ["session.idle", "session.requires_action", "session.failed", "run.completed", "turn.ended"];

/// Who asks: a tenant, or someone who sees every tenant's sessions (an admin key, the operator, or
/// anyone on a gateway without keys).
#[derive(Clone, Debug, PartialEq)]
pub struct Requester {
    /// The tenant (`None`: no key).
    pub tenant: Option<String>,
    /// It sees every tenant's sessions.
    pub every_tenant: bool,
}

/// A subscription to make.
#[derive(Clone, Debug, Default)]
pub struct NewWebhook {
    /// Where deliveries go.
    pub url: String,
    /// The event types wanted.
    pub events: Vec<String>,
    /// Only this session's.
    pub session_id: Option<String>,
}

/// Why a subscription could not be made, read or changed.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// The request is wrong; `field` names what.
    #[error("{message}")]
    Bad {
        /// The body field.
        field: &'static str,
        /// What is wrong and what to do.
        message: String,
    },
    /// No such subscription (or not the requester's).
    #[error("no webhook subscription {0:?} here; GET /v1/webhooks lists yours")]
    NotFound(String),
    /// The session it names is not the requester's, or does not exist.
    #[error("no session {0:?} here; a subscription names one of your sessions, or none for all")]
    NoSession(String),
    /// The system's random source failed.
    #[error("the system's random number source failed: {0}")]
    Random(String),
    /// Storage.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Webhook subscriptions: made, listed, read, resumed and deleted by their tenants.
#[derive(Clone)]
pub struct Webhooks {
    store: Store,
    /// http to this machine is allowed (`--webhooks-allow-loopback`).
    loopback: bool,
}

impl Webhooks {
    /// Subscriptions kept in `store`.
    pub fn new(store: Store, loopback: bool) -> Webhooks {
        Webhooks { store, loopback }
    }

    /// Makes a subscription; answers it with its secret (shown this once).
    pub async fn create(&self, by: &Requester, new: NewWebhook) -> Result<Webhook, WebhookError> {
        let id = format!("wh_{}", airlock_base::clock::fresh_id().replace('-', ""));
        let webhook = self.prepare(by, new, id, None).await?;
        self.insert(webhook.clone()).await?;
        Ok(webhook)
    }

    /// Keeps a subscription [`Webhooks::prepare`] checked.
    pub async fn insert(&self, webhook: Webhook) -> Result<(), WebhookError> {
        Ok(self.store.insert_webhook(webhook).await?)
    }

    /// Checks a subscription to make, and answers it with the id `id`, signed by `secret` (a
    /// fresh one when `None`), without keeping it.
    pub async fn prepare(
        &self,
        by: &Requester,
        new: NewWebhook,
        id: String,
        secret: Option<String>,
    ) -> Result<Webhook, WebhookError> {
        let bad = |field, message: String| WebhookError::Bad { field, message };
        let url = address::check_url(&new.url, self.loopback).map_err(|m| bad("url", m))?;
        let mut events: Vec<String> = Vec::new();
        for event in new.events {
            if !EVENT_TYPES.contains(&event.as_str()) {
                let known = EVENT_TYPES.join(", ");
                return Err(bad("events", format!("{event:?} is not an event type; use {known}")));
            }
            if !events.contains(&event) {
                events.push(event);
            }
        }
        if events.is_empty() {
            let known = EVENT_TYPES.join(", ");
            return Err(bad("events", format!("name at least one event type: {known}")));
        }
        if let Some(session) = &new.session_id {
            let visible = match (&by.tenant, by.every_tenant) {
                (Some(tenant), false) => self.store.session_of_tenant(session, tenant).await?,
                _ => self.store.session(session).await?.is_some_and(|row| !row.disposed),
            };
            if !visible {
                return Err(WebhookError::NoSession(session.clone()));
            }
        }
        let secret = match secret {
            Some(secret) if sign::key_of(&secret).is_some() => secret,
            Some(_) => {
                let message = "a secret is `whsec_` and the base64 of its key bytes".to_owned();
                return Err(bad("secret", message));
            }
            None => sign::new_secret().map_err(|e| WebhookError::Random(e.to_string()))?,
        };
        Ok(Webhook {
            webhook_id: id,
            tenant: by.tenant.clone(),
            every_tenant: by.every_tenant,
            session_id: new.session_id,
            url: url.to_string(),
            events,
            secret,
            created_at: airlock_base::clock::now_ms(),
            ..Webhook::default()
        })
    }

    /// The requester's subscriptions (an admin's: every one), oldest first.
    pub async fn list(&self, by: &Requester) -> Result<Vec<Webhook>, WebhookError> {
        let tenant = by.tenant.as_deref().filter(|_| !by.every_tenant);
        Ok(self.store.webhooks(tenant).await?)
    }

    /// One of the requester's subscriptions.
    pub async fn get(&self, by: &Requester, webhook_id: &str) -> Result<Webhook, WebhookError> {
        let found = self.store.webhook(webhook_id).await?;
        found
            .filter(|w| by.every_tenant || (w.tenant == by.tenant && !w.every_tenant))
            .ok_or_else(|| WebhookError::NotFound(webhook_id.to_owned()))
    }

    /// Deletes one of the requester's subscriptions, with what waits for it.
    pub async fn delete(&self, by: &Requester, webhook_id: &str) -> Result<(), WebhookError> {
        self.get(by, webhook_id).await?;
        self.store.delete_webhook(webhook_id).await?;
        Ok(())
    }

    /// Takes a failing subscription back: what is logged from now on is delivered again.
    pub async fn resume(&self, by: &Requester, webhook_id: &str) -> Result<Webhook, WebhookError> {
        self.get(by, webhook_id).await?;
        self.store.resume_webhook(webhook_id).await?;
        self.get(by, webhook_id).await
    }
}
