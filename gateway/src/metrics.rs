//! Process metrics, served as Prometheus text at `/metrics`: live and stored sessions, evictions
//! and wakes, turns, enqueue latency, group-commit sizes, SSE subscribers.

use std::sync::LazyLock;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Every metric of the process.
pub struct Metrics {
    /// Sessions in memory (with a live actor).
    pub sessions: Gauge,
    /// Sessions stored, in memory or not.
    pub stored_sessions: Gauge,
    /// Sessions in memory whose core instance sleeps (dropped until their next input).
    pub asleep: Gauge,
    /// Sessions dropped from memory at rest.
    pub evictions: Counter,
    /// Stored sessions brought back into memory (at start or when used).
    pub wakes: Counter,
    /// Seconds to bring a stored session back into memory.
    pub wake_seconds: Histogram,
    /// Turns ended, whatever their reason.
    pub turns: Counter,
    /// Seconds from a message request to its durable receipt.
    pub enqueue_seconds: Histogram,
    /// Jobs committed per SQLite transaction.
    pub commit_batch: Histogram,
    /// Open SSE streams.
    pub sse_subscribers: Gauge,
    /// Session commits that failed: each session was rebuilt from its log, to recover once
    /// storage takes commits again.
    pub commit_failures: Counter,
    registry: Registry,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
    let mut registry = Registry::with_prefix("airlock");
    let metrics = Metrics {
        sessions: Gauge::default(),
        stored_sessions: Gauge::default(),
        asleep: Gauge::default(),
        evictions: Counter::default(),
        wakes: Counter::default(),
        wake_seconds: Histogram::new(exponential_buckets(0.0001, 2.0, 16)),
        turns: Counter::default(),
        enqueue_seconds: Histogram::new(exponential_buckets(0.0005, 2.0, 14)),
        commit_batch: Histogram::new(exponential_buckets(1.0, 2.0, 11)),
        sse_subscribers: Gauge::default(),
        commit_failures: Counter::default(),
        registry: Registry::default(),
    };
    registry.register("sessions", "Sessions in memory", metrics.sessions.clone());
    registry.register(
        "stored_sessions",
        "Sessions stored, in memory or not",
        metrics.stored_sessions.clone(),
    );
    registry.register(
        "sessions_asleep",
        "Sessions in memory whose core instance sleeps until their next input",
        metrics.asleep.clone(),
    );
    registry.register(
        "evictions",
        "Sessions dropped from memory at rest",
        metrics.evictions.clone(),
    );
    registry.register("wakes", "Stored sessions brought back into memory", metrics.wakes.clone());
    registry.register(
        "wake_seconds",
        "Time to bring a stored session back into memory",
        metrics.wake_seconds.clone(),
    );
    registry.register("turns", "Turns ended", metrics.turns.clone());
    registry.register(
        "enqueue_seconds",
        "Time from a message request to its durable receipt",
        metrics.enqueue_seconds.clone(),
    );
    registry.register(
        "commit_batch_size",
        "Jobs committed per SQLite transaction",
        metrics.commit_batch.clone(),
    );
    registry.register("sse_subscribers", "Open SSE streams", metrics.sse_subscribers.clone());
    registry.register(
        "commit_failures",
        "Session commits that failed (the session recovers from its log once storage returns)",
        metrics.commit_failures.clone(),
    );
    Metrics { registry, ..metrics }
});

/// The process's metrics.
pub fn global() -> &'static Metrics {
    &METRICS
}

impl Metrics {
    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut text = String::new();
        encode(&mut text, &self.registry).expect("writing to a String cannot fail");
        text
    }
}

/// Counts an open SSE stream for as long as it lives.
pub struct SubscriberGuard(());

impl SubscriberGuard {
    /// One more subscriber.
    pub fn new() -> Self {
        global().sse_subscribers.inc();
        SubscriberGuard(())
    }
}

impl Default for SubscriberGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for SubscriberGuard {
    fn drop(&mut self) {
        // The last stream of a burst gone: what the streams held goes back to the system.
        if global().sse_subscribers.dec() == 1
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn_blocking(crate::trim::release_free_memory);
        }
    }
}
