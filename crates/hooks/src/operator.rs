//! What the operator declares in `airlock.toml`: `[webhooks.NAME]` subscriptions and
//! `[schedules.NAME]` schedules. At each start the store's operator entries (ids `config-NAME`)
//! become exactly those declared: a new one is made, a changed one made again, one no longer
//! declared deleted, and one unchanged kept with its state (its pending deliveries, its next due
//! time). They belong to no tenant and hear (or may name) every tenant's sessions.

use std::collections::BTreeMap;

use airlock_core::{ContentBlock, Delivery};
use airlock_sessions::SessionSpec;
use airlock_store::{Schedule, Webhook};
use serde::Deserialize;

use crate::schedules::{NewSchedule, ScheduleError, Schedules, Target};
use crate::webhooks::{NewWebhook, Requester, WebhookError, Webhooks};

/// Everything the operator declares.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Declared {
    /// `[webhooks.NAME]`, by name.
    pub webhooks: BTreeMap<String, DeclaredWebhook>,
    /// `[schedules.NAME]`, by name.
    pub schedules: BTreeMap<String, DeclaredSchedule>,
}

impl Declared {
    /// Makes the store's operator entries those declared.
    pub async fn apply(
        &self,
        webhooks: &Webhooks,
        schedules: &Schedules,
    ) -> Result<(), DeclarationError> {
        declare_webhooks(webhooks, &self.webhooks).await?;
        declare_schedules(schedules, &self.schedules).await
    }
}

/// The prefix of the ids of what the operator declares.
const PREFIX: &str = "config-";

/// `[webhooks.NAME]`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct DeclaredWebhook {
    /// Where deliveries go.
    pub url: String,
    /// The event types wanted.
    pub events: Vec<String>,
    /// What signs them (`whsec_` and base64): the receiver knows it.
    pub secret: String,
    /// Only this session's.
    pub session_id: Option<String>,
}

/// `[schedules.NAME]`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct DeclaredSchedule {
    /// The cron expression.
    pub cron: String,
    /// The IANA time zone; `UTC` when absent.
    pub timezone: Option<String>,
    /// The session each message goes to.
    pub session_id: Option<String>,
    /// Else: the session to make (`{model = "…", system = "…"}`).
    pub session: Option<SessionSpec>,
    /// With `session`: a new one for each due time.
    #[serde(default)]
    pub fresh: bool,
    /// The message's text.
    pub content: String,
    /// `followup` (the default), `steer` or `inject`.
    #[serde(default)]
    pub delivery: Delivery,
    /// `skip` (the default) or `queue`.
    pub overlap: Option<String>,
    /// `once` (the default), `all` or `skip`.
    pub catch_up: Option<String>,
}

/// Why a declaration was refused: which one, and what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum DeclarationError {
    /// A `[webhooks.NAME]`.
    #[error("[webhooks.{0}] {1}")]
    Webhook(String, WebhookError),
    /// A `[schedules.NAME]`.
    #[error("[schedules.{0}] {1}")]
    Schedule(String, ScheduleError),
}

/// The operator: every tenant.
fn operator() -> Requester {
    Requester { tenant: None, every_tenant: true }
}

/// Makes the store's operator subscriptions those `declared`.
async fn declare_webhooks(
    webhooks: &Webhooks,
    declared: &BTreeMap<String, DeclaredWebhook>,
) -> Result<(), DeclarationError> {
    let failed = |name: &str| {
        let name = name.to_owned();
        move |error| DeclarationError::Webhook(name, error)
    };
    let stored = webhooks.list(&operator()).await.map_err(failed("*"))?;
    let mut stored: BTreeMap<String, Webhook> = stored
        .into_iter()
        .filter(|w| w.webhook_id.starts_with(PREFIX) && w.tenant.is_none())
        .map(|w| (w.webhook_id.clone(), w))
        .collect();
    for (name, wanted) in declared {
        let id = format!("{PREFIX}{name}");
        let new = NewWebhook {
            url: wanted.url.clone(),
            events: wanted.events.clone(),
            session_id: wanted.session_id.clone(),
        };
        let secret = Some(wanted.secret.clone());
        let made = webhooks.prepare(&operator(), new, id.clone(), secret).await;
        let made = made.map_err(failed(name))?;
        match stored.remove(&id) {
            Some(old) if same_webhook(&old, &made) => continue,
            Some(_) => webhooks.delete(&operator(), &id).await.map_err(failed(name))?,
            None => {}
        }
        webhooks.insert(made).await.map_err(failed(name))?;
        tracing::info!(webhook_id = id, "the operator's webhook subscription is made");
    }
    for (id, _) in stored {
        webhooks.delete(&operator(), &id).await.map_err(failed(&id))?;
        tracing::info!(webhook_id = id, "a webhook subscription no longer declared is deleted");
    }
    Ok(())
}

fn same_webhook(old: &Webhook, new: &Webhook) -> bool {
    (&old.url, &old.events, &old.secret, &old.session_id)
        == (&new.url, &new.events, &new.secret, &new.session_id)
}

/// Makes the store's operator schedules those `declared`.
async fn declare_schedules(
    schedules: &Schedules,
    declared: &BTreeMap<String, DeclaredSchedule>,
) -> Result<(), DeclarationError> {
    let failed = |name: &str| {
        let name = name.to_owned();
        move |error| DeclarationError::Schedule(name, error)
    };
    let stored = schedules.list(&operator()).await.map_err(failed("*"))?;
    let mut stored: BTreeMap<String, Schedule> = stored
        .into_iter()
        .filter(|s| s.schedule_id.starts_with(PREFIX) && s.tenant.is_none())
        .map(|s| (s.schedule_id.clone(), s))
        .collect();
    for (name, wanted) in declared {
        let id = format!("{PREFIX}{name}");
        let target = match (&wanted.session_id, &wanted.session) {
            (Some(session), None) => Target::Session(session.clone()),
            (None, Some(spec)) => {
                Target::Spec { spec: Box::new(spec.clone()), fresh: wanted.fresh }
            }
            _ => {
                let message = "needs either session-id = \"…\" or a session table".to_owned();
                return Err(failed(name)(ScheduleError::Bad { field: "session", message }));
            }
        };
        let new = NewSchedule {
            cron: wanted.cron.clone(),
            timezone: wanted.timezone.clone(),
            target,
            content: vec![ContentBlock::Text { text: wanted.content.clone() }],
            delivery: wanted.delivery,
            overlap: wanted.overlap.clone().unwrap_or_else(|| "skip".into()),
            catch_up: wanted.catch_up.clone().unwrap_or_else(|| "once".into()),
        };
        let made = schedules.prepare(&operator(), new, id.clone()).await.map_err(failed(name))?;
        match stored.remove(&id) {
            Some(old) if same_schedule(&old, &made) => continue,
            Some(_) => schedules.delete(&operator(), &id).await.map_err(failed(name))?,
            None => {}
        }
        schedules.insert(made).await.map_err(failed(name))?;
        tracing::info!(schedule_id = id, "the operator's schedule is made");
    }
    for (id, _) in stored {
        schedules.delete(&operator(), &id).await.map_err(failed(&id))?;
        tracing::info!(schedule_id = id, "a schedule no longer declared is deleted");
    }
    Ok(())
}

fn same_schedule(old: &Schedule, new: &Schedule) -> bool {
    let key = |s: &Schedule| {
        (
            s.cron.clone(),
            s.timezone.clone(),
            s.session_id.clone(),
            s.spec.clone(),
            s.fresh,
            s.content.clone(),
            s.delivery.clone(),
            s.overlap.clone(),
            s.catch_up.clone(),
        )
    };
    key(old) == key(new)
}
