//! Any gateway answers any request (`docs/deploy.md`): one for a session that another gateway
//! sharing the store runs is forwarded to it, as it came (method, path, headers, body), and its
//! answer (an SSE stream too) is passed back as it goes. The owner alone feeds the session, so a
//! 202 still means durable and receipts are logged in the order the owner took them.

use std::sync::OnceLock;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::FromRequest;
use axum::extract::{Request, State};
use axum::http::{HeaderName, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use super::AppState;
use super::error::ApiError;
use airlock_sessions::RegistryError;
use airlock_store::Owner;

/// Marks a forwarded request: its receiver answers it itself, whoever runs the session by then.
const FORWARDED: HeaderName = HeaderName::from_static("x-airlock-forwarded");

/// Headers that describe one connection, not the request: never passed on.
const HOP_BY_HOP: [HeaderName; 5] = [
    header::CONNECTION,
    header::TRANSFER_ENCODING,
    header::HOST,
    header::UPGRADE,
    HeaderName::from_static("keep-alive"),
];

/// The middleware on every route: forwards a request about a session another gateway runs.
pub async fn forward(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let store = state.sessions.store();
    if !store.shared() || request.headers().contains_key(&FORWARDED) {
        return next.run(request).await;
    }
    // Whether a session not found yet may be made by the route (a thread, a context).
    let (session_id, request, made_on_use) = match session_in(request.uri().path()) {
        Some(session_id) => {
            let langgraph = request.uri().path().starts_with("/langgraph/");
            (session_id.into_owned(), request, langgraph)
        }
        None => match named_by(request.uri().path()) {
            Some(name) => match named_in_body(request, &state, name).await {
                Ok((Some(named), request)) => (named, request, true),
                Ok((None, request)) => return next.run(request).await,
                Err(refused) => return refused,
            },
            None => return next.run(request).await,
        },
    };
    let session_id = session_id.as_str();
    match state.sessions.locate(session_id).await {
        Ok(Owner::Here) => next.run(request).await,
        // A thread or context is made on first use, by the gateway asked.
        Err(RegistryError::NotFound(_)) if made_on_use => next.run(request).await,
        Ok(Owner::Elsewhere { address }) => {
            let session_id = session_id.to_owned();
            let lease = store.lease().unwrap_or_default();
            let started = std::time::Instant::now();
            let answered = tokio::select! {
                answer = pass_on(&address, request, state.shutdown.clone()) => answer.map_err(|e| Some(e.to_string())),
                // A stalled gateway (paused, swapping) takes the connection but never answers.
                () = lost(&state, &session_id, &address, lease) => Err(None),
            };
            let metrics = airlock_base::metrics::global();
            metrics.forward_seconds.observe(started.elapsed().as_secs_f64());
            let outcome = if answered.is_ok() { "answered" } else { "unreachable" };
            metrics.forwarded.get_or_create(&vec![("outcome", outcome.to_owned())]).inc();
            answered
                .unwrap_or_else(|failed| unreachable_owner(&session_id, &address, lease, failed))
        }
        Err(error) => ApiError::from(error).into_response(),
    }
}

/// The session a path is about: `/v1/sessions/{id}` and LangGraph's `/langgraph/threads/{id}`,
/// and everything under them, its id percent-decoded as the route's own `{id}` is.
pub(crate) fn session_in(path: &str) -> Option<std::borrow::Cow<'_, str>> {
    let rest = path
        .strip_prefix("/v1/sessions/")
        .or_else(|| path.strip_prefix("/langgraph/threads/").filter(|rest| *rest != "search"))?;
    let id = rest.split('/').next().filter(|id| !id.is_empty())?;
    percent_encoding::percent_decode_str(id).decode_utf8().ok()
}

/// How the routes that name their session in the body name it: AG-UI's `threadId`, A2A's
/// context or task.
fn named_by(path: &str) -> Option<fn(&serde_json::Value) -> Option<String>> {
    match path {
        "/ag-ui" => Some(|body| body["threadId"].as_str().map(str::to_owned)),
        "/a2a" => Some(super::a2a::session_named),
        _ => None,
    }
}

/// The session a request names in its body, and the request to pass on, its body read whole;
/// `None` for a body that names none (the route itself says what is wrong with it). A body that
/// cannot be read (over the limit) is answered here.
async fn named_in_body(
    request: Request,
    state: &AppState,
    name: fn(&serde_json::Value) -> Option<String>,
) -> Result<(Option<String>, Request), Response> {
    let (head, body) = request.into_parts();
    let read = Bytes::from_request(Request::from_parts(head.clone(), body), state);
    let bytes = match tokio::time::timeout(state.body_timeout, read).await {
        Ok(read) => read.map_err(IntoResponse::into_response)?,
        Err(_) => {
            let why = "the request body did not arrive in time; send it at once";
            return Err(
                ApiError::new(StatusCode::REQUEST_TIMEOUT, "request-timeout", why).into_response()
            );
        }
    };
    let named = serde_json::from_slice(&bytes).ok().as_ref().and_then(name);
    Ok((named, Request::from_parts(head, Body::from(bytes))))
}

/// One client for every forward: connections to the other gateways are kept and reused.
fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        airlock_providers::model::install_tls();
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(2))
            .no_proxy()
            .build()
            .expect("a plain HTTP client builds")
    })
}

/// Sends `request` to the gateway at `address`, and streams its answer back. An SSE stream ends
/// when this gateway stops (the client resumes elsewhere with `Last-Event-ID`); any other answer
/// is passed on whole.
async fn pass_on(
    address: &str,
    request: Request,
    mut stopping: tokio::sync::watch::Receiver<bool>,
) -> Result<Response, reqwest::Error> {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut out =
        client().request(parts.method, format!("{}{path}", address.trim_end_matches('/')));
    for (name, value) in &parts.headers {
        if !HOP_BY_HOP.contains(name) {
            out = out.header(name, value);
        }
    }
    let answer = out
        .header(FORWARDED, "1")
        .body(reqwest::Body::wrap_stream(body.into_data_stream()))
        .send()
        .await?;
    let mut response = Response::builder().status(answer.status().as_u16());
    for (name, value) in answer.headers() {
        if !HOP_BY_HOP.contains(name) && name != header::CONTENT_LENGTH {
            response = response.header(name.as_str(), value.as_bytes());
        }
    }
    let streams = answer
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
    let body = match streams {
        // A stream ends when this gateway stops, as its own streams do.
        true => Body::from_stream(answer.bytes_stream().take_until(async move {
            let _ = stopping.wait_for(|stopping| *stopping).await;
        })),
        false => Body::from_stream(answer.bytes_stream()),
    };
    Ok(response.body(body).expect("a status and headers taken from a response"))
}

/// Resolves once the gateway at `address` no longer holds the session (checked each fifth of
/// the lease time), while the answer it owes has not begun.
async fn lost(state: &AppState, session_id: &str, address: &str, lease: Duration) {
    let tick = (lease / 5).max(Duration::from_millis(10));
    loop {
        tokio::time::sleep(tick).await;
        match state.sessions.store().owner(session_id).await {
            Ok(Owner::Elsewhere { address: now }) if now == address => {}
            Ok(_) => return,
            Err(_) => {} // the database is away: keep waiting for the owner
        }
    }
}

/// The gateway that holds the session did not answer: it may be stopping or dead, and then its
/// lease runs out and another gateway takes the session. `error` is why; `None`: it stopped
/// renewing the lease while the request waited, so the session may be taken at once.
fn unreachable_owner(
    session_id: &str,
    address: &str,
    lease: Duration,
    error: Option<String>,
) -> Response {
    let (message, wait) = match error {
        Some(error) => {
            tracing::warn!(session_id, address, %error, "forwarding to the session's gateway failed");
            let message = format!(
                "session {session_id:?} is run by the gateway at {address}, which did not answer ({error}); send the request again: if that gateway is gone, another takes the session over within {} s",
                lease.as_secs_f64().ceil()
            );
            (message, lease.as_secs().clamp(1, 5))
        }
        None => {
            tracing::warn!(session_id, address, "the session's gateway stopped renewing its lease");
            let message = format!(
                "session {session_id:?} was run by the gateway at {address}, which stopped renewing its lease while this request waited for it; send the request again now: another gateway takes the session over"
            );
            (message, 0)
        }
    };
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "session-moving", message)
        .retry_after(wait)
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_of_a_path_is_its_segment_after_sessions_decoded() {
        assert_eq!(session_in("/v1/sessions/abc/messages").as_deref(), Some("abc"));
        assert_eq!(session_in("/v1/sessions/abc").as_deref(), Some("abc"));
        assert_eq!(session_in("/v1/sessions/a%3Ab/events").as_deref(), Some("a:b"));
        assert_eq!(session_in("/v1/sessions/"), None);
        assert_eq!(session_in("/v1/sessions"), None);
        assert_eq!(session_in("/v1/runs"), None);
        assert_eq!(session_in("/langgraph/threads/t/runs/stream").as_deref(), Some("t"));
        assert_eq!(session_in("/langgraph/threads/search"), None);
    }
}
