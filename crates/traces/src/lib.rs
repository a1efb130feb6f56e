//! What an agent did, in the trace viewers people already watch (`docs/deploy.md`, "Traces").
//!
//! Every session's committed events reach [`Traces`] through the sessions' [`Tap`]; one task
//! folds each session's log into OpenTelemetry GenAI spans (`fold.rs`) and queues them for the
//! OTLP exporter ([`export`]). Span times are the events' times and span ids are derived from the
//! log ([`ids`]), so a turn that a restart cut in two is still one span: a session whose events
//! the task did not see from the start of its turn (after a restart, or events the tap dropped)
//! has that turn read back from the log first.
//!
//! Nothing here slows a session: the tap and the span queue drop (and count) rather than wait.

mod calls;
pub mod export;
mod fold;
pub mod ids;
mod spans;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_sessions::{Sessions, Tap, Tapped};
use opentelemetry::InstrumentationScope;
use opentelemetry::trace::{SpanKind, Status};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SpanData, SpanExporter as _, SpanLinks};
use tokio::sync::mpsc;

use calls::Calls;
pub use export::Batching;
use export::Spans;
use fold::{SessionTrace, Settings as FoldSettings};
/// The span a caller names (a face reads one from a `traceparent` with [`ids::parse_traceparent`]).
pub use opentelemetry::trace::SpanContext;

/// Commits the tap holds for the folding task before it drops them.
const TAP_CAPACITY: usize = 16 * 1024;

/// Sessions whose folds are kept between turns before those at rest are forgotten (one that
/// runs again is read back from its log).
const REMEMBERED_SESSIONS: usize = 10_000;

/// Events read back from the log per page when a session's turn is rebuilt.
const PAGE: usize = 1000;

/// Where and what to export.
#[derive(Clone, Debug, Default)]
pub struct TraceSettings {
    /// The collector's base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`): spans go to `{endpoint}/v1/traces`
    /// unless `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` names the full URL. Neither: no export.
    pub endpoint: Option<String>,
    /// Message contents go into the spans (`--otel-capture-content`; off: they are sensitive).
    pub capture_content: bool,
}

/// A setting that cannot work, said so at start.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// gRPC was asked for.
    #[error(
        "OTEL_EXPORTER_OTLP_PROTOCOL={0} is not built in: Airlock exports OTLP over HTTP \
         (http/protobuf or http/json); point --otlp-endpoint at the collector's HTTP port (4318 \
         by convention, 6006 for Phoenix)"
    )]
    Grpc(String),
    /// The exporter could not be built (an invalid URL or header).
    #[error("the OTLP exporter cannot be set up: {0}")]
    Exporter(String),
}

/// The trace exporter: the tap the sessions are built with, the spans' queue and the folds.
#[derive(Clone, Debug)]
pub struct Traces {
    tap: Tap,
    tapped: Arc<Mutex<Option<mpsc::Receiver<Tapped>>>>,
    spans: Spans,
    scope: InstrumentationScope,
    capture_content: bool,
}

impl Traces {
    /// The exporter `settings` and the standard `OTEL_*` variables ask for, if any; its queue's
    /// task runs from now on (inside a tokio runtime).
    pub fn from_settings(settings: &TraceSettings) -> Result<Option<Traces>, TraceError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let off = var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
            || var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"));
        let traces_endpoint = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
        if off || (settings.endpoint.is_none() && traces_endpoint.is_none()) {
            return Ok(None);
        }
        let protocol = var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"))
            .unwrap_or_else(|| "http/protobuf".into());
        let protocol = match protocol.as_str() {
            "http/protobuf" => Protocol::HttpBinary,
            "http/json" => Protocol::HttpJson,
            other => return Err(TraceError::Grpc(other.to_owned())),
        };
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| TraceError::Exporter(e.to_string()))?;
        let mut builder = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_protocol(protocol);
        if let (None, Some(base)) = (&traces_endpoint, &settings.endpoint) {
            builder = builder.with_endpoint(format!("{}/v1/traces", base.trim_end_matches('/')));
        }
        let mut exporter = builder.build().map_err(|e| TraceError::Exporter(e.to_string()))?;
        exporter.set_resource(&resource());
        let (tap, tapped) = Tap::new(TAP_CAPACITY);
        let version = env!("CARGO_PKG_VERSION");
        Ok(Some(Traces {
            tap,
            tapped: Arc::new(Mutex::new(Some(tapped))),
            spans: export::start(exporter, Batching::from_env()),
            scope: InstrumentationScope::builder("airlock").with_version(version).build(),
            capture_content: settings.capture_content,
        }))
    }

    /// The tap to build the sessions with ([`airlock_sessions::Rules::tap`]).
    pub fn tap(&self) -> Tap {
        self.tap.clone()
    }

    /// Folds what `sessions` commit into spans from now on (once; later calls do nothing).
    pub fn start(&self, sessions: Sessions) {
        let Some(tapped) = self.tapped.lock().expect("tapped lock").take() else { return };
        let settings =
            FoldSettings { capture_content: self.capture_content, scope: self.scope.clone() };
        tokio::spawn(follow(sessions, tapped, settings, self.spans.clone()));
    }

    /// Exports an `http.server` span for the request `method route` that enqueued message
    /// `message_id` from `start` to `end`, under the caller's span `caller` if it named one.
    /// Its id is derived from the message id ([`ids::request_span`]): the turn that takes the
    /// message links to it.
    pub fn request(
        &self,
        method: &str,
        route: &str,
        status: u16,
        message_id: &str,
        caller: Option<&SpanContext>,
        start: std::time::SystemTime,
    ) {
        let trace = caller.map_or_else(|| ids::request_trace(message_id), |c| c.trace_id());
        let attributes = vec![
            opentelemetry::KeyValue::new("http.request.method", method.to_owned()),
            opentelemetry::KeyValue::new("http.route", route.to_owned()),
            opentelemetry::KeyValue::new("http.response.status_code", i64::from(status)),
            opentelemetry::KeyValue::new("airlock.message.id", message_id.to_owned()),
        ];
        self.spans.push(SpanData {
            span_context: ids::context(trace, ids::request_span(message_id)),
            parent_span_id: caller.map_or(opentelemetry::trace::SpanId::INVALID, |c| c.span_id()),
            parent_span_is_remote: caller.is_some(),
            span_kind: SpanKind::Server,
            name: format!("{method} {route}").into(),
            start_time: start,
            end_time: std::time::SystemTime::now(),
            attributes,
            dropped_attributes_count: 0,
            events: Default::default(),
            links: SpanLinks::default(),
            status: if status >= 500 { Status::error(status.to_string()) } else { Status::Unset },
            instrumentation_scope: self.scope.clone(),
        });
    }

    /// Sends what is queued, waiting at most `deadline` (at shutdown).
    pub async fn flush(&self, deadline: Duration) {
        self.spans.flush(deadline).await;
    }
}

/// Who the spans say they come from: `service.name` is `airlock` unless `OTEL_SERVICE_NAME` (or
/// `OTEL_RESOURCE_ATTRIBUTES`) says otherwise.
fn resource() -> Resource {
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| v.contains("service.name="));
    let builder = Resource::builder()
        .with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    if named { builder.build() } else { builder.with_service_name("airlock").build() }
}

/// Folds every tapped commit into its session's spans, reading back from the log what was not
/// seen.
async fn follow(
    sessions: Sessions,
    mut tapped: mpsc::Receiver<Tapped>,
    settings: FoldSettings,
    spans: Spans,
) {
    let mut traces: HashMap<Arc<str>, SessionTrace> = HashMap::new();
    let mut calls = Calls::default();
    let mut out = Vec::new();
    while let Some(Tapped { session_id, events }) = tapped.recv().await {
        let first = events[0].seq;
        let trace = traces
            .entry(session_id.clone())
            .or_insert_with(|| SessionTrace::new(session_id.clone(), 0));
        if trace.next_seq != first {
            catch_up(&sessions, trace, first, &mut calls, &settings).await;
        }
        for event in &events {
            if event.seq == trace.next_seq {
                trace.fold(&event.json, &mut calls, &settings, &mut out);
            }
        }
        for span in out.drain(..) {
            spans.push(span);
        }
        if traces.len() > REMEMBERED_SESSIONS {
            traces.retain(|_, trace| !trace.idle());
        }
    }
}

/// Folds `trace`'s session from the start of the turn open at `upto` (the first event not seen)
/// to just before it, without handing out spans: those that ended then went out before, or
/// are lost.
async fn catch_up(
    sessions: &Sessions,
    trace: &mut SessionTrace,
    upto: u64,
    calls: &mut Calls,
    settings: &FoldSettings,
) {
    let session = trace.session().to_owned();
    let starts = sessions.store().events_of_type(&session, "turn/start").await;
    let starts = starts.unwrap_or_else(|error| {
        tracing::warn!(%error, session, "reading a session's turns back for its trace failed");
        Vec::new()
    });
    let seq = |json: &String| airlock_sessions::seq_of(json).ok();
    let from = starts.iter().filter_map(seq).filter(|&s| s < upto).max();
    let mut fresh = SessionTrace::new(trace.session_arc(), from.unwrap_or(upto));
    fresh.continue_from(trace);
    let mut ignored = Vec::new();
    let mut after = from.and_then(|s| s.checked_sub(1));
    while from.is_some() {
        let page = match sessions.events(&session, after, PAGE).await {
            Ok((page, _)) => page,
            Err(error) => {
                tracing::warn!(%error, session, "reading a session's turn back for its trace failed");
                break;
            }
        };
        let Some(last) = page.last().and_then(seq) else { break };
        for json in &page {
            if seq(json).is_some_and(|s| s < upto) {
                fresh.fold(json, calls, settings, &mut ignored);
            }
        }
        if last + 1 >= upto {
            break;
        }
        after = Some(last);
    }
    fresh.next_seq = upto;
    *trace = fresh;
}
