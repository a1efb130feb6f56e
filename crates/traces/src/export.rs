//! Spans out over OTLP, batched and bounded: a queue of at most `OTEL_BSP_MAX_QUEUE_SIZE` spans,
//! sent `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` at a time every `OTEL_BSP_SCHEDULE_DELAY` ms (or as
//! soon as a batch is full), each export given `OTEL_BSP_EXPORT_TIMEOUT` ms. A span that finds
//! the queue full, and a batch the collector does not take, are dropped and counted
//! (`airlock_otel_spans_dropped_total`); nothing here ever waits for room, so a slow or dead
//! collector never slows a turn. (The SDK's batch processor does the same, but tells of what it
//! dropped only in its own log.)

use std::time::Duration;

use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use tokio::sync::{mpsc, oneshot};

/// How the queue is sized and drained (the `OTEL_BSP_*` variables, with their defaults).
#[derive(Clone, Copy, Debug)]
pub struct Batching {
    /// Spans waiting at most.
    pub max_queue: usize,
    /// Spans per export at most.
    pub max_batch: usize,
    /// How long a span waits for its batch to fill.
    pub delay: Duration,
    /// How long one export may take.
    pub timeout: Duration,
}

impl Batching {
    /// From the `OTEL_BSP_*` variables; the specification's defaults for those unset or invalid.
    pub fn from_env() -> Batching {
        let var = |name: &str, default: u64| {
            std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
        };
        Batching {
            max_queue: var("OTEL_BSP_MAX_QUEUE_SIZE", 2048).max(1) as usize,
            max_batch: var("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512).max(1) as usize,
            delay: Duration::from_millis(var("OTEL_BSP_SCHEDULE_DELAY", 5000)),
            timeout: Duration::from_millis(var("OTEL_BSP_EXPORT_TIMEOUT", 30000)),
        }
    }
}

/// What the exporter's task is handed.
pub(crate) enum Job {
    Span(Box<SpanData>),
    /// Send everything queued before this, then answer.
    Flush(oneshot::Sender<()>),
}

/// The queue's sending side.
#[derive(Clone, Debug)]
pub(crate) struct Spans(mpsc::Sender<Job>);

impl Spans {
    /// Queues `span`, or drops and counts it when the queue is full.
    pub(crate) fn push(&self, span: SpanData) {
        if self.0.try_send(Job::Span(Box::new(span))).is_err() {
            dropped("queue_full", 1);
        }
    }

    /// Resolves once every span queued before it was sent (or dropped), or after `deadline`.
    pub(crate) async fn flush(&self, deadline: Duration) {
        let (done, sent) = oneshot::channel();
        if self.0.send(Job::Flush(done)).await.is_ok() {
            let _ = tokio::time::timeout(deadline, sent).await;
        }
    }
}

fn dropped(reason: &'static str, count: usize) {
    let labels = vec![("reason", reason.to_owned())];
    airlock_base::metrics::global().spans_dropped.get_or_create(&labels).inc_by(count as u64);
}

/// Starts the task that sends queued spans through `exporter`, and answers the queue.
pub(crate) fn start<E: SpanExporter + 'static>(exporter: E, batching: Batching) -> Spans {
    let (sender, jobs) = mpsc::channel(batching.max_queue);
    tokio::spawn(drain(exporter, batching, jobs));
    Spans(sender)
}

async fn drain<E: SpanExporter>(exporter: E, batching: Batching, mut jobs: mpsc::Receiver<Job>) {
    let mut batch = Vec::with_capacity(batching.max_batch);
    let mut failing = false;
    loop {
        // The first span of a batch waits for nothing; the rest come within the delay.
        let mut flushed = None;
        let deadline = tokio::time::Instant::now() + batching.delay;
        while batch.len() < batching.max_batch && flushed.is_none() {
            let job = if batch.is_empty() {
                jobs.recv().await
            } else {
                match tokio::time::timeout_at(deadline, jobs.recv()).await {
                    Ok(job) => job,
                    Err(_) => break,
                }
            };
            match job {
                Some(Job::Span(span)) => batch.push(*span),
                Some(Job::Flush(done)) => flushed = Some(done),
                None => return,
            }
        }
        if !batch.is_empty() {
            let count = batch.len();
            let sent =
                tokio::time::timeout(batching.timeout, exporter.export(std::mem::take(&mut batch)));
            match sent.await {
                Ok(Ok(())) => {
                    airlock_base::metrics::global().spans_exported.inc_by(count as u64);
                    if failing {
                        tracing::info!("the OTLP collector takes spans again");
                    }
                    failing = false;
                }
                outcome => {
                    let error = match outcome {
                        Ok(Err(error)) => error.to_string(),
                        _ => format!("no answer within {} ms", batching.timeout.as_millis()),
                    };
                    dropped("export_failed", count);
                    if !failing {
                        tracing::warn!(%error, spans = count, "the OTLP collector did not take spans; they are dropped (airlock_otel_spans_dropped_total) until it does");
                    }
                    failing = true;
                }
            }
        }
        if let Some(done) = flushed {
            let _ = done.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
    use std::sync::{Arc, Mutex};

    /// An exporter that keeps what it was given, or fails every export.
    #[derive(Debug, Clone, Default)]
    struct Kept(Arc<Mutex<Vec<usize>>>, bool);

    impl SpanExporter for Kept {
        async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
            if self.1 {
                return Err(OTelSdkError::InternalFailure("down".into()));
            }
            self.0.lock().unwrap().push(batch.len());
            Ok(())
        }
    }

    fn span() -> SpanData {
        let context =
            crate::ids::context(crate::ids::turn_trace("s", 1), crate::ids::turn_span("s", 1));
        SpanData {
            span_context: context,
            parent_span_id: opentelemetry::trace::SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: opentelemetry::trace::SpanKind::Internal,
            name: "x".into(),
            start_time: std::time::SystemTime::UNIX_EPOCH,
            end_time: std::time::SystemTime::UNIX_EPOCH,
            attributes: Vec::new(),
            dropped_attributes_count: 0,
            events: Default::default(),
            links: Default::default(),
            status: opentelemetry::trace::Status::Unset,
            instrumentation_scope: Default::default(),
        }
    }

    fn batching() -> Batching {
        Batching {
            max_queue: 4,
            max_batch: 3,
            delay: Duration::from_secs(3600),
            timeout: Duration::from_secs(1),
        }
    }

    fn dropped_now(reason: &str) -> u64 {
        let labels = vec![("reason", reason.to_owned())];
        airlock_base::metrics::global().spans_dropped.get_or_create(&labels).get()
    }

    #[tokio::test]
    async fn spans_go_out_in_full_batches_and_a_flush_sends_the_rest() {
        let kept = Kept::default();
        let spans = start(kept.clone(), batching());
        for _ in 0..4 {
            spans.push(span());
        }
        spans.flush(Duration::from_secs(5)).await;
        assert_eq!(*kept.0.lock().unwrap(), [3, 1]);
    }

    #[tokio::test]
    async fn a_collector_that_fails_drops_and_counts_its_batches() {
        let before = dropped_now("export_failed");
        let spans = start(Kept(Arc::default(), true), batching());
        spans.push(span());
        spans.push(span());
        spans.flush(Duration::from_secs(5)).await;
        assert!(dropped_now("export_failed") >= before + 2);
    }
}
