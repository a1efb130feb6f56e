//! Trace and span ids, derived from what the log says (a session, a turn, a step, a call's seq)
//! so that a trace rebuilt after a restart has the ids it had before; and the W3C `traceparent`
//! a caller sends, read by the SDK's own propagator.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use sha2::{Digest, Sha256};

/// The first bytes of the SHA-256 of `parts`, each ended by a zero byte.
fn digest<const N: usize>(parts: &[&[u8]]) -> [u8; N] {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update(part);
        hash.update([0]);
    }
    let full = hash.finalize();
    let mut bytes = [0; N];
    bytes.copy_from_slice(&full[..N]);
    bytes
}

/// The trace of turn `turn` of `session` when nothing from outside names one.
pub fn turn_trace(session: &str, turn: u64) -> TraceId {
    TraceId::from_bytes(digest(&[session.as_bytes(), b"trace", &turn.to_be_bytes()]))
}

/// The `invoke_agent` span of turn `turn` of `session`.
pub fn turn_span(session: &str, turn: u64) -> SpanId {
    SpanId::from_bytes(digest(&[session.as_bytes(), b"turn", &turn.to_be_bytes()]))
}

/// The `chat` span of step `step` of turn `turn` of `session`.
pub fn step_span(session: &str, turn: u64, step: u64) -> SpanId {
    let (turn, step) = (turn.to_be_bytes(), step.to_be_bytes());
    SpanId::from_bytes(digest(&[session.as_bytes(), b"step", &turn, &step]))
}

/// The `execute_tool` span of the call whose `tool/call` is event `seq` of `session`.
pub fn call_span(session: &str, seq: u64) -> SpanId {
    SpanId::from_bytes(digest(&[session.as_bytes(), b"call", &seq.to_be_bytes()]))
}

/// The `http.server` span of the request that enqueued message `message_id`.
pub fn request_span(message_id: &str) -> SpanId {
    SpanId::from_bytes(digest(&[message_id.as_bytes(), b"request"]))
}

/// The trace of a request that enqueued message `message_id` and named none.
pub fn request_trace(message_id: &str) -> TraceId {
    TraceId::from_bytes(digest(&[message_id.as_bytes(), b"request-trace"]))
}

/// A span of ours, sampled.
pub fn context(trace: TraceId, span: SpanId) -> SpanContext {
    SpanContext::new(trace, span, TraceFlags::SAMPLED, false, TraceState::NONE)
}

/// The span a W3C `traceparent` header names (with its `tracestate`), if it is valid; an invalid
/// one is ignored, as the W3C recommendation says.
pub fn parse_traceparent(traceparent: &str, tracestate: Option<&str>) -> Option<SpanContext> {
    let mut headers = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
    if let Some(state) = tracestate {
        headers.insert("tracestate".to_owned(), state.to_owned());
    }
    let context = TraceContextPropagator::new().extract(&headers);
    let span = context.span().span_context().clone();
    span.is_valid().then_some(span)
}

/// `span` as a `traceparent` header value.
pub fn traceparent(span: &SpanContext) -> String {
    format!("00-{}-{}-{:02x}", span.trace_id(), span.span_id(), span.trace_flags().to_u8())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_depend_only_on_what_the_log_says() {
        assert_eq!(turn_span("s1", 3), turn_span("s1", 3));
        assert_ne!(turn_span("s1", 3), turn_span("s1", 4));
        assert_ne!(turn_span("s1", 3), turn_span("s2", 3));
        assert_ne!(step_span("s1", 1, 12), step_span("s1", 11, 2), "parts are delimited");
        assert!(turn_trace("s1", 1) != TraceId::INVALID && call_span("s1", 9) != SpanId::INVALID);
    }

    #[test]
    fn a_valid_traceparent_is_read_and_written_back_and_a_bad_one_ignored() {
        let header = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let span = parse_traceparent(header, Some("vendor=1")).unwrap();
        assert!(span.is_remote() && span.is_sampled());
        assert_eq!(traceparent(&span), header);
        assert_eq!(span.trace_state().header(), "vendor=1");
        for bad in ["", "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", "garbage"] {
            assert_eq!(parse_traceparent(bad, None), None, "{bad:?}");
        }
    }
}
