//! A request that enqueues a message, in the caller's trace (`docs/deploy.md`, "Traces"): the
//! span its W3C `traceparent` (and `tracestate`) header names goes into the message's source as
//! `traceparent`, so the turn that takes the message is that span's child; with traces exported,
//! the request is an `http.server` span too, named in the source as `request`, and the turn links
//! to it.

use std::time::SystemTime;

use airlock_core::Message;
use airlock_traces::{SpanContext, Traces, ids};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use crate::Answer;

/// What a request that sends `message` says of its trace.
pub(crate) struct Traced {
    traces: Option<Traces>,
    caller: Option<SpanContext>,
    message_id: String,
    started: SystemTime,
}

impl Traced {
    /// Reads the trace headers and marks `message` with them (and with the request's span when
    /// traces are exported).
    pub(crate) fn mark(
        traces: Option<&Traces>,
        headers: &HeaderMap,
        message: &mut Message,
    ) -> Traced {
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let caller =
            header("traceparent").and_then(|t| ids::parse_traceparent(t, header("tracestate")));
        let details = &mut message.source.details;
        if let Some(caller) = &caller {
            details.insert("traceparent".into(), ids::traceparent(caller).into());
        }
        if traces.is_some() {
            let trace =
                caller.as_ref().map_or_else(|| ids::request_trace(&message.id), |c| c.trace_id());
            let request = ids::context(trace, ids::request_span(&message.id));
            details.insert("request".into(), ids::traceparent(&request).into());
        }
        let message_id = message.id.clone();
        Traced { traces: traces.cloned(), caller, message_id, started: SystemTime::now() }
    }

    /// Ends the request `route` with `answer`, as the response it makes.
    pub(crate) fn end(self, route: &str, answer: Answer<Response>) -> Response {
        let response = answer.unwrap_or_else(IntoResponse::into_response);
        if let Some(traces) = &self.traces {
            let status = response.status().as_u16();
            let caller = self.caller.as_ref();
            traces.request("POST", route, status, &self.message_id, caller, self.started);
        }
        response
    }
}
