//! The deliverer: one task per gateway that claims what is due (of each subscription and session,
//! the oldest waiting delivery), posts it signed, and settles it. A receiver that answers 2xx
//! took it; anything else (another status, a redirect, a refused connection, no answer within the
//! timeout) is tried again after an exponential backoff with jitter, until the retry window is
//! spent; then the subscription is failing. Deliveries run beside the sessions, never in a turn:
//! a slow receiver holds only its own attempts.

use std::time::Duration;

use airlock_store::{Delivery, Outcome, Store};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::address;
use super::sign::{key_of, signature};
use airlock_base::clock::now_ms;

/// How deliveries are sent and retried.
#[derive(Clone, Debug)]
pub struct DeliverySettings {
    /// How long a receiver has to answer (`--webhook-timeout`).
    pub timeout: Duration,
    /// The wait before the first retry; each next one waits three times longer, up to two hours
    /// (`--webhook-retry-after`).
    pub retry_after: Duration,
    /// How long a delivery is retried before its subscription is marked failing
    /// (`--webhook-retry-for`).
    pub retry_for: Duration,
    /// This machine is a place deliveries may go (`--webhooks-allow-loopback`).
    pub loopback: bool,
    /// This gateway's name among those sharing the store: whose claims are whose.
    pub node: String,
}

/// The most deliveries in flight at once.
const IN_FLIGHT: usize = 32;

/// How long a claim keeps other gateways off a delivery: past the timeout of any attempt.
const CLAIM: Duration = Duration::from_secs(120);

/// How often the store is asked for what is due when nothing woke the deliverer (retries that
/// came due, what other gateways committed).
const POLL: Duration = Duration::from_millis(250);

/// The longest wait between two attempts.
const MOST_BETWEEN: Duration = Duration::from_secs(2 * 3600);

/// Delivers what the store holds until `shutdown` turns true.
pub async fn deliver(
    store: Store,
    settings: DeliverySettings,
    mut shutdown: watch::Receiver<bool>,
) {
    let client = match client(&settings) {
        Ok(client) => client,
        Err(error) => {
            tracing::error!(%error, "webhooks cannot be delivered: no HTTP client");
            return;
        }
    };
    // Nothing of this gateway is in flight any more: what it had claimed is due again.
    if let Err(error) = store.release_claims(&settings.node).await {
        tracing::warn!(%error, "could not let go of this gateway's earlier delivery claims");
    }
    let mut attempts: JoinSet<Outcome> = JoinSet::new();
    loop {
        let room = IN_FLIGHT - attempts.len();
        if room > 0 {
            let now = now_ms();
            let until = now + CLAIM.as_millis() as u64;
            match store.claim_deliveries(now, until, &settings.node, room).await {
                Ok(due) => {
                    for delivery in due {
                        let (client, settings) = (client.clone(), settings.clone());
                        let store = store.clone();
                        attempts.spawn(async move {
                            attempt(&client, &settings, &store, delivery).await
                        });
                    }
                }
                Err(error) => tracing::warn!(%error, "could not claim webhook deliveries"),
            }
        }
        tokio::select! {
            Some(done) = attempts.join_next() => {
                let mut outcomes: Vec<Outcome> = done.into_iter().collect();
                while let Some(done) = attempts.try_join_next() {
                    outcomes.extend(done);
                }
                if let Err(error) = store.settle_deliveries(outcomes).await {
                    // Their claims run out, and they are sent again: at least once.
                    tracing::warn!(%error, "could not record how webhook deliveries went");
                }
            }
            () = store.deliveries_written().notified() => {}
            () = tokio::time::sleep(POLL) => {}
            _ = shutdown.changed() => return,
        }
    }
}

fn client(settings: &DeliverySettings) -> reqwest::Result<reqwest::Client> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(address::resolver(settings.loopback))
        .timeout(settings.timeout)
        .user_agent(concat!("airlock/", env!("CARGO_PKG_VERSION"), " (webhooks)"))
        .build()
}

/// The `webhook-id` of a delivery: the same for every attempt of it, and for a report of the same
/// thing written again (a retried run), so a receiver tells a repeat by it.
pub fn message_id(delivery: &Delivery) -> String {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    for part in [&delivery.webhook_id, &delivery.session_id, &delivery.kind, &delivery.key] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    hash.update(delivery.seq.to_be_bytes());
    let digest = hash.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("msg_{hex}")
}

/// What a delivery says beyond what its row keeps: a run's result, read from the log (its row
/// names only the interval).
async fn completed(store: &Store, delivery: &mut Delivery) -> Result<(), String> {
    if delivery.kind != "run.completed" {
        return Ok(());
    }
    let mut data: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&delivery.data).unwrap_or_default();
    let seq = |name: &str| data.get(name).and_then(serde_json::Value::as_u64).unwrap_or(0);
    let (first, last) = (seq("firstSeq"), seq("lastSeq"));
    let count = (last + 1).saturating_sub(first) as usize;
    let events = store.events(&delivery.session_id, first.checked_sub(1), count).await;
    let events = events.map_err(|e| format!("the run's events could not be read: {e}"))?;
    let summary = airlock_sessions::summarize(&events);
    if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(&summary) {
        data.extend(fields);
    }
    delivery.data = serde_json::Value::Object(data).to_string();
    Ok(())
}

/// The body of a delivery: `{type, timestamp, data}`, the data naming the session and the seq
/// of the event it reports.
pub fn body(delivery: &Delivery) -> String {
    let mut data: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&delivery.data).unwrap_or_default();
    data.insert("sessionId".into(), delivery.session_id.clone().into());
    data.insert("seq".into(), delivery.seq.into());
    let timestamp = jiff::Timestamp::from_millisecond(delivery.created_at as i64)
        .map(|t| t.to_string())
        .unwrap_or_default();
    serde_json::json!({"type": delivery.kind, "timestamp": timestamp, "data": data}).to_string()
}

/// One attempt of a delivery.
async fn attempt(
    client: &reqwest::Client,
    settings: &DeliverySettings,
    store: &Store,
    mut delivery: Delivery,
) -> Outcome {
    let tried = match completed(store, &mut delivery).await {
        Ok(()) => send(client, settings, &delivery).await,
        Err(error) => Err(error),
    };
    let at = now_ms();
    let (delivery_id, webhook_id) = (delivery.delivery_id, delivery.webhook_id.clone());
    let error = match tried {
        Ok(()) => return Outcome::Delivered { delivery_id, webhook_id, at },
        Err(error) => error,
    };
    let attempts = delivery.attempts + 1;
    let wait = backoff(settings.retry_after, attempts);
    let retry_for = settings.retry_for.as_millis() as u64;
    tracing::warn!(
        webhook_id,
        session_id = delivery.session_id,
        seq = delivery.seq,
        attempts,
        error,
        "webhook delivery failed"
    );
    if at.saturating_sub(delivery.created_at) + wait.as_millis() as u64 > retry_for {
        tracing::error!(
            webhook_id,
            "webhook deliveries failed for too long: the subscription is failing"
        );
        return Outcome::GaveUp { delivery_id, webhook_id, error, at };
    }
    let next_at = at + wait.as_millis() as u64;
    Outcome::Retry { delivery_id, webhook_id, attempts, next_at, error, at }
}

/// The wait after the `attempts`-th failed attempt: `first`, tripled each time, at most two hours,
/// within ±20 % at random so that the retries of many deliveries spread out.
fn backoff(first: Duration, attempts: u32) -> Duration {
    let exponent = attempts.saturating_sub(1).min(20);
    let wait = first.saturating_mul(3u32.saturating_pow(exponent)).min(MOST_BETWEEN);
    wait.mul_f64(0.8 + 0.4 * fastrand::f64())
}

async fn send(
    client: &reqwest::Client,
    settings: &DeliverySettings,
    delivery: &Delivery,
) -> Result<(), String> {
    let url = address::check_url(&delivery.url, settings.loopback)?;
    let key = key_of(&delivery.secret).ok_or("the subscription's secret is not a whsec_ secret")?;
    let id = message_id(delivery);
    let timestamp = now_ms() / 1000;
    let body = body(delivery);
    let answer = client
        .post(url)
        .header("webhook-id", &id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature(&key, &id, timestamp, &body))
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| describe(&e))?;
    let status = answer.status();
    if status.is_success() {
        return Ok(());
    }
    let redirect = if status.is_redirection() { " (redirects are not followed)" } else { "" };
    Err(format!("the receiver answered {status}{redirect}"))
}

/// A failed request in a person's words, with its causes.
fn describe(error: &reqwest::Error) -> String {
    let what = if error.is_timeout() {
        "the receiver did not answer in time".to_owned()
    } else if error.is_connect() {
        "could not connect to the receiver".to_owned()
    } else {
        "the request failed".to_owned()
    };
    let mut causes = Vec::new();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        causes.push(cause.to_string());
        source = cause.source();
    }
    match causes.is_empty() {
        true => what,
        false => format!("{what}: {}", causes.join(": ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery() -> Delivery {
        Delivery {
            delivery_id: 7,
            webhook_id: "wh_1".into(),
            url: "https://example.com/in".into(),
            secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
            session_id: "s1".into(),
            seq: 12,
            kind: "session.idle".into(),
            key: String::new(),
            data: r#"{"status":"idle","finishReason":"completed"}"#.into(),
            created_at: 1_764_460_800_123,
            attempts: 0,
        }
    }

    #[test]
    fn the_body_names_the_session_and_seq() {
        let body: serde_json::Value = serde_json::from_str(&body(&delivery())).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"type": "session.idle", "timestamp": "2025-11-30T00:00:00.123Z",
                "data": {"status": "idle", "finishReason": "completed", "sessionId": "s1", "seq": 12}})
        );
    }

    #[test]
    fn a_repeat_has_the_same_message_id() {
        let first = delivery();
        let again = Delivery { delivery_id: 8, attempts: 3, ..delivery() };
        assert_eq!(message_id(&first), message_id(&again));
        let other = Delivery { seq: 13, ..delivery() };
        assert_ne!(message_id(&first), message_id(&other));
    }

    #[test]
    fn backoff_grows_threefold_up_to_two_hours() {
        let first = Duration::from_secs(5);
        for (attempts, base) in [(1, 5), (2, 15), (3, 45), (9, 7200), (40, 7200)] {
            let wait = backoff(first, attempts).as_secs_f64();
            let base = base as f64;
            assert!(wait >= base * 0.8 && wait <= base * 1.2, "{attempts}: {wait}");
        }
    }
}
