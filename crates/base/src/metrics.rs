//! Process metrics at `/metrics`: sessions (live, stored, asleep, evicted, woken), turns by end
//! reason, HTTP requests by route and status, model calls (outcome, latency, time to first token,
//! tokens), tool calls, plugin log bytes dropped, enqueue and commit latency, commit batch sizes,
//! SSE subscribers and the core's fuel per call. Served as OpenMetrics when the scrape asks for it, else as the
//! Prometheus text format 0.0.4 ([`Metrics::render`]).

use std::sync::LazyLock;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// A metric's labels, as `(name, value)` pairs.
pub type Labels = Vec<(&'static str, String)>;

/// Histograms by label, each with the buckets its constructor gives.
pub type Histograms = Family<Labels, Histogram, fn() -> Histogram>;

/// Declares every metric once: its field (with the doc a reader of the code sees), how it is
/// made, and the name and help text a scrape sees.
macro_rules! metrics {
    ($($(#[doc = $doc:literal])* $field:ident: $ty:ty = $make:expr, $name:literal, $help:literal;)*)
        => {
        /// Every metric of the process.
        pub struct Metrics {
            $($(#[doc = $doc])* pub $field: $ty,)*
            /// The `model` label values: the configured and well-known models.
            pub models: Vocabulary,
            /// The `tool` label values: the gateway's own tools (built-in, plugins, MCP servers).
            pub tools: Vocabulary,
            registry: Registry,
        }

        static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
            let mut registry = Registry::with_prefix("airlock");
            $(let $field: $ty = $make;
            registry.register($name, $help, $field.clone());)*
            Metrics {
                $($field,)*
                models: Vocabulary::default(),
                tools: Vocabulary::default(),
                registry,
            }
        });
    };
}

metrics! {
    /// Sessions in memory (with a live actor).
    sessions: Gauge = Gauge::default(), "sessions", "Sessions in memory";
    /// Sessions stored, in memory or not.
    stored_sessions: Gauge = Gauge::default(), "stored_sessions",
        "Sessions stored, in memory or not";
    /// Sessions in memory whose core instance sleeps (dropped until their next input).
    asleep: Gauge = Gauge::default(), "sessions_asleep",
        "Sessions in memory whose core instance sleeps until their next input";
    /// Sessions dropped from memory at rest.
    evictions: Counter = Counter::default(), "evictions", "Sessions dropped from memory at rest";
    /// Stored sessions brought back into memory (at start or when used).
    wakes: Counter = Counter::default(), "wakes", "Stored sessions brought back into memory";
    /// Seconds to bring a stored session back into memory.
    wake_seconds: Histogram = buckets(0.0001, 2.0, 16), "wake_seconds",
        "Time to bring a stored session back into memory";
    /// Turns ended, by `reason` (the end reason's kind).
    turns: Family<Labels, Counter> = Family::default(), "turns", "Turns ended, by end reason";
    /// HTTP requests answered, by `method`, `route` (the matched path) and `status`.
    http_requests: Family<Labels, Counter> = Family::default(), "http_requests",
        "HTTP requests answered";
    /// Seconds to answer an HTTP request (to its head), by `method` and `route`.
    http_seconds: Histograms = Family::new_with_constructor(seconds),
        "http_request_duration_seconds", "Time to answer an HTTP request, to its response head";
    /// Model calls ended, by `provider`, `model` and `outcome` (`ok`, `aborted`, or the error
    /// code).
    model_calls: Family<Labels, Counter> = Family::default(), "model_calls",
        "Model calls ended, by outcome";
    /// Seconds a model call took to its end, by `provider` and `model`.
    model_seconds: Histograms = Family::new_with_constructor(seconds),
        "model_call_duration_seconds", "Time from a model call's start to its end";
    /// Seconds from a model call's start to its first chunk, by `provider` and `model`.
    model_first_chunk_seconds: Histograms = Family::new_with_constructor(seconds),
        "model_first_chunk_seconds", "Time from a model call's start to its first chunk";
    /// Tokens the providers reported, by `provider`, `model` and `kind` (`input`, `output`).
    model_tokens: Family<Labels, Counter> = Family::default(), "model_tokens",
        "Tokens the providers reported";
    /// Tool calls ended, by `tool` and `outcome` (`ok` or the error code).
    tool_calls: Family<Labels, Counter> = Family::default(), "tool_calls",
        "Tool calls ended, by outcome";
    /// Seconds a tool call took, by `tool`.
    tool_seconds: Histograms = Family::new_with_constructor(seconds),
        "tool_call_duration_seconds", "Time a tool call took";
    /// Bytes of plugin log lines dropped over the plugin's log budget, by `plugin`.
    plugin_log_dropped: Family<Labels, Counter> = Family::default(), "plugin_log_dropped_bytes",
        "Bytes of plugin log lines dropped over the plugin's log budget";
    /// Seconds from a message request to its durable receipt.
    enqueue_seconds: Histogram = buckets(0.0005, 2.0, 14), "enqueue_seconds",
        "Time from a message request to its durable receipt";
    /// Jobs committed per SQLite transaction.
    commit_batch: Histogram = buckets(1.0, 2.0, 11), "commit_batch_size",
        "Jobs committed per SQLite transaction";
    /// Seconds one SQLite transaction of the writer took, fsync included.
    commit_seconds: Histogram = buckets(0.0001, 2.0, 16), "commit_duration_seconds",
        "Time one SQLite transaction took, fsync included";
    /// Open SSE streams.
    sse_subscribers: Gauge = Gauge::default(), "sse_subscribers", "Open SSE streams";
    /// Session commits that failed: each session was rebuilt from its log, to recover once
    /// storage takes commits again.
    commit_failures: Counter = Counter::default(), "commit_failures",
        "Session commits that failed (the session recovers from its log once storage returns)";
    /// Committed events the trace exporter was not handed because it was behind (it reads them
    /// from the log instead).
    tap_dropped: Counter = Counter::default(), "tap_dropped",
        "Committed events the trace exporter was not handed because it was behind";
    /// Spans the OTLP exporter dropped, by `reason` (`queue_full`: more spans than its queue
    /// holds; `export_failed`: the collector did not take a batch).
    spans_dropped: Family<Labels, Counter> = Family::default(), "otel_spans_dropped",
        "Spans the OTLP exporter dropped, by reason";
    /// Spans the OTLP exporter delivered to the collector.
    spans_exported: Counter = Counter::default(), "otel_spans_exported",
        "Spans the OTLP exporter delivered to the collector";
    /// Session leases this gateway holds (gateways sharing PostgreSQL).
    leases_held: Gauge = Gauge::default(), "leases_held",
        "Session leases this gateway holds (gateways sharing PostgreSQL)";
    /// Session leases this gateway took from a gateway that had stopped renewing them.
    lease_takeovers: Counter = Counter::default(), "lease_takeovers",
        "Session leases this gateway took from a gateway that had stopped renewing them";
    /// Session leases another gateway took from this one (it had stopped renewing them).
    leases_lost: Counter = Counter::default(), "leases_lost",
        "Session leases another gateway took from this one";
    /// Appends refused because another gateway had taken the session's lease.
    fenced_appends: Counter = Counter::default(), "fenced_appends",
        "Appends refused because another gateway had taken the session's lease";
    /// Requests forwarded to the gateway that runs their session, by `outcome` (`answered`, or
    /// `unreachable`: that gateway did not answer).
    forwarded: Family<Labels, Counter> = Family::default(), "forwarded_requests",
        "Requests forwarded to the gateway that runs their session, by outcome";
    /// Seconds from forwarding a request to its answer's head (or giving up).
    forward_seconds: Histogram = buckets(0.0005, 2.0, 16), "forward_duration_seconds",
        "Time from forwarding a request to the gateway that runs its session to its answer's head";
    /// Fuel (about one per wasm instruction) one call into the core used.
    core_fuel: Histogram = buckets(1_000.0, 4.0, 12), "core_fuel_per_call",
        "Fuel one call into the core used";
}

/// A histogram of `count` buckets from `start`, each `factor` times the last.
fn buckets(start: f64, factor: f64, count: u16) -> Histogram {
    Histogram::new(exponential_buckets(start, factor, count))
}

/// Buckets of seconds, from half a millisecond.
fn seconds() -> Histogram {
    buckets(0.0005, 2.0, 16)
}

/// The process's metrics.
pub fn global() -> &'static Metrics {
    &METRICS
}

/// The two text formats `/metrics` speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `application/openmetrics-text; version=1.0.0`.
    OpenMetrics,
    /// `text/plain; version=0.0.4`, what a scrape that asks for nothing else gets.
    Prometheus,
}

impl Format {
    /// The format an `Accept` header asks for: OpenMetrics only when it names it.
    pub fn accepted(accept: Option<&str>) -> Format {
        match accept {
            Some(accept) if accept.contains("application/openmetrics-text") => Format::OpenMetrics,
            _ => Format::Prometheus,
        }
    }

    /// The response's `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

impl Metrics {
    /// Every metric, in `format`.
    pub fn render(&self, format: Format) -> String {
        let mut text = String::new();
        encode(&mut text, &self.registry).expect("writing to a String cannot fail");
        match format {
            Format::OpenMetrics => text,
            Format::Prometheus => prometheus_text(&text),
        }
    }
}

/// OpenMetrics text as the Prometheus text format 0.0.4: a counter's family is named with its
/// `_total` suffix (as its samples are), there is no `# UNIT` and no `# EOF`.
fn prometheus_text(open_metrics: &str) -> String {
    let mut out = String::with_capacity(open_metrics.len());
    let mut help: Option<&str> = None;
    for line in open_metrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            help = Some(rest);
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let suffix = if kind == "counter" { "_total" } else { "" };
            if let Some(help) = help.take() {
                let text = help.split_once(' ').map_or("", |(_, text)| text);
                out.push_str(&format!("# HELP {name}{suffix} {text}\n"));
            }
            out.push_str(&format!("# TYPE {name}{suffix} {kind}\n"));
            continue;
        }
        if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// One outcome label value per error code: `ok`, or the code in lower case (`other` for one that
/// is not a short code of letters, digits and `_`).
pub fn outcome(error_code: Option<&str>) -> String {
    match error_code {
        None => "ok".to_owned(),
        Some(code)
            if (1..=40).contains(&code.len())
                && code.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
        {
            code.to_ascii_lowercase()
        }
        Some(_) => OTHER.to_owned(),
    }
}

/// The label value of everything a [`Vocabulary`] does not name.
pub const OTHER: &str = "other";

/// The values one label may take: what the operator configured, never what a client sent, so
/// that no client can grow the metrics (each label value is a series kept for the process's
/// life) or read another tenant's names in them.
#[derive(Default)]
pub struct Vocabulary(std::sync::RwLock<std::collections::BTreeSet<String>>);

impl Vocabulary {
    /// Lets `value` be a label value.
    pub fn allow(&self, value: &str) {
        self.0.write().expect("vocabulary lock").insert(value.to_owned());
    }

    /// `value` if it is allowed, else [`OTHER`].
    pub fn label(&self, value: &str) -> String {
        let known = self.0.read().expect("vocabulary lock").contains(value);
        if known { value.to_owned() } else { OTHER.to_owned() }
    }
}

/// The method label of an HTTP request: one of HTTP's own, else [`OTHER`].
pub fn method_label(method: &str) -> &str {
    const METHODS: [&str; 9] =
        ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"];
    METHODS.iter().find(|m| **m == method).copied().unwrap_or(OTHER)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_is_a_known_value_or_other() {
        let models = Vocabulary::default();
        models.allow("gpt-4o");
        assert_eq!(models.label("gpt-4o"), "gpt-4o");
        assert_eq!(models.label(&"x".repeat(100_000)), "other");
        assert_eq!(method_label("GET"), "GET");
        assert_eq!(method_label("BREW"), "other");
        assert_eq!(outcome(Some("RATE_LIMIT")), "rate_limit");
        assert_eq!(outcome(Some("a b")), "other");
    }
}
