//! The HTTP face of Airlock, the API of `docs/http-api.md`: [`app`] builds the router from an
//! [`AppState`], and [`connections::serve`] runs it on a listener. Each route module has one
//! `router()`, which registers every handler together with its OpenAPI description; [`app`]
//! merges them and serves the whole document as `GET /openapi.json`. The OpenAPI schemas of the
//! lower crates' types, which know nothing of utoipa, are wire-shape types in `schema`.
//!
//! Every handler reaches the sessions through their front door, [`Sessions`], and the store
//! only for API keys, sign-ins and the leases of a shared store.

pub mod connections;
mod schema;

mod a2a;
mod access;
mod ag_ui;
mod budget;
mod demo;
mod error;
mod events;
mod fields;
mod files;
mod forks;
mod forward;
mod goals;
mod interval;
mod langgraph;
mod messages;
mod named;
mod openapi;
mod responses;
mod runs;
mod schedules;
mod sessions;
mod signin;
mod sse;
mod tool_calls;
mod tools;
mod traced;
mod usage;
mod webhooks;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::response::Response;
use tokio::sync::watch;
use tower_http::cors::CorsLayer;
use utoipa_axum::routes;

pub use access::{Access, AccessSettings, Caller, Exposure, ExposureError};
pub use error::{ApiError, ErrorBody, ErrorDetail, JsonBody, QueryParams};

use airlock_sessions::Sessions;

/// What a handler answers: `T`, or an error in the shared shape.
type Answer<T> = Result<T, ApiError>;

/// The `{id}` of a session's routes, as the OpenAPI document shows it.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[expect(dead_code, reason = "it only documents the parameter; handlers take `Path<String>`")]
struct SessionId {
    /// The session id.
    id: String,
}

/// The `{id}` and `{message_id}` of a queued message's routes, as the OpenAPI document shows them.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[expect(
    dead_code,
    reason = "it only documents the parameters; handlers take `Path<(String, String)>`"
)]
struct MessagePath {
    /// The session id.
    id: String,
    /// The message id.
    message_id: String,
}

/// The `Idempotency-Key` header of the routes that take one, as the OpenAPI document shows it.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[expect(dead_code, reason = "it only documents the header; handlers read it from the headers")]
struct IdempotencyKeyHeader {
    /// 1 to 200 visible ASCII characters. A retry with the same key (kept 24 h) and body is
    /// answered as the first request was and does nothing again; the operation says what that
    /// answer is.
    #[param(rename = "Idempotency-Key", pattern = "^[!-~]{1,200}$(?![\\s\\S])")]
    key: Option<String>,
}

/// The W3C trace context headers of the routes that enqueue a message, as the OpenAPI document
/// shows them ([`traced`]).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[expect(dead_code, reason = "it only documents the headers; handlers read them from the headers")]
struct TraceHeaders {
    /// The caller's span (`00-{trace id}-{span id}-{flags}`): the turn that takes the message is
    /// its child in the traces the gateway exports, and the message's source keeps it. An
    /// invalid one is ignored.
    #[param(rename = "traceparent")]
    traceparent: Option<String>,
    /// Vendor trace state that goes with `traceparent`.
    #[param(rename = "tracestate")]
    tracestate: Option<String>,
}

/// The default request body limit: 1 MiB.
pub const DEFAULT_MAX_BODY: usize = 1 << 20;

/// What every handler shares: one `Arc`, so the clone each request and each middleware takes is
/// one count, not one per handle inside.
#[derive(Clone)]
pub struct AppState(Arc<Handles>);

impl AppState {
    /// Shares `handles` with every handler.
    pub fn new(handles: Handles) -> AppState {
        AppState(Arc::new(handles))
    }
}

impl std::ops::Deref for AppState {
    type Target = Handles;

    fn deref(&self) -> &Handles {
        &self.0
    }
}

/// The handles behind an [`AppState`].
pub struct Handles {
    /// The sessions, through their front door.
    pub sessions: Sessions,
    /// Turns `true` when the gateway shuts down: open streams end so clients resume elsewhere.
    pub shutdown: watch::Receiver<bool>,
    /// Who may use it.
    pub access: Arc<Access>,
    /// A request body must arrive within this long.
    pub body_timeout: std::time::Duration,
    /// Turns true once the sessions stored at start are recovered (`/readyz`).
    pub ready: watch::Receiver<bool>,
    /// One `POST /v1/runs` at a time per idempotency key.
    pub runs: Arc<runs::KeyLocks>,
    /// What `/metrics` asks for, and whether the API serves it (not with `--metrics-listen`).
    pub metrics: MetricsAccess,
    /// The tenants' webhook subscriptions.
    pub webhooks: airlock_hooks::webhooks::Webhooks,
    /// The tenants' schedules.
    pub schedules: airlock_hooks::schedules::Schedules,
    /// Where traces go, when they are exported (`--otlp-endpoint`).
    pub traces: Option<airlock_traces::Traces>,
}

/// Where `/metrics` is served and who may read it.
#[derive(Clone, Debug, Default)]
pub struct MetricsAccess {
    /// It has an address of its own: the API's `/metrics` answers 404.
    pub elsewhere: bool,
    /// The key it asks for as `Authorization: Bearer <key>` (`--metrics-key`).
    pub key: Option<Arc<str>>,
}

/// The whole API.
pub fn app(state: AppState, max_body: usize, cors: Option<CorsLayer>) -> Router {
    let router = openapi::router();
    let router = match state.metrics.elsewhere {
        true => router,
        false => router.routes(routes!(metrics)),
    };
    let (router, doc) = router
        .merge(sessions::router())
        .merge(messages::router())
        .merge(runs::router())
        .merge(goals::router())
        .merge(tool_calls::router())
        .merge(forks::router())
        .merge(tools::router())
        .merge(events::router())
        .merge(usage::router())
        .merge(budget::router())
        .merge(files::router())
        .merge(webhooks::router())
        .merge(schedules::router())
        .merge(ag_ui::router())
        .merge(a2a::router())
        .merge(langgraph::router())
        .merge(signin::router())
        .routes(routes!(healthz))
        .routes(routes!(readyz))
        .split_for_parts();
    let router = openapi::serve(router, &doc, &state)
        .merge(demo::router())
        // Inside the guard: a request is forwarded only once its key was checked here.
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), forward::forward))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), access::guard))
        .method_not_allowed_fallback(error::method_not_allowed)
        .fallback(|| async { ApiError::not_found("not-found", "no such route; see /openapi.json") })
        .layer(axum::middleware::from_fn(error::refuse_oversized))
        .layer(axum::middleware::from_fn(measured))
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(state);
    match cors {
        Some(cors) => router.layer(cors),
        None => router,
    }
}

/// Liveness: the process answers.
#[utoipa::path(
    get, path = "/healthz", operation_id = "healthz", tag = "service",
    responses((status = 200, description = "`ok`", body = String, content_type = "text/plain"))
)]
async fn healthz() -> &'static str {
    "ok\n"
}

/// Readiness: the sessions stored at start are recovered. The gateway takes requests before
/// that (a session not recovered yet is recovered when it is used); a balancer that waits for
/// `ready` spreads the load of a restart.
#[utoipa::path(
    get, path = "/readyz", operation_id = "readyz", tag = "service",
    responses(
        (status = 200, description = "`ready`", body = String, content_type = "text/plain"),
        (status = 503, description = "`recovering`: the sessions stored at start are still being brought back", body = ErrorBody),
    )
)]
async fn readyz(axum::extract::State(state): axum::extract::State<AppState>) -> Response {
    use axum::response::IntoResponse;
    match *state.ready.borrow() {
        true => "ready\n".into_response(),
        false => ApiError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "recovering",
            "the sessions stored at start are still being brought back; ask again in a moment",
        )
        .retry_after(1)
        .into_response(),
    }
}

/// Prometheus metrics (`docs/http-api.md`): the text format 0.0.4, or OpenMetrics when the
/// scrape's `Accept` names `application/openmetrics-text`. With `--metrics-key`, only for
/// `Authorization: Bearer <that key>`.
#[utoipa::path(
    get, path = "/metrics", operation_id = "metrics", tag = "service",
    responses(
        (status = 200, description = "The metrics, in the text format the scrape asked for", content(
            (String = "text/plain; version=0.0.4; charset=utf-8"),
            (String = "application/openmetrics-text; version=1.0.0; charset=utf-8"),
        )),
        (status = 401, description = "`unauthorized`: the gateway has a metrics key and the request did not carry it", body = ErrorBody),
    )
)]
async fn metrics(
    axum::extract::State(state): axum::extract::State<AppState>,
    headers: axum::http::HeaderMap,
) -> Response {
    render_metrics(state.metrics.key.as_deref(), &headers)
}

/// The metrics for a scrape with `headers`, when it carries `key` (if there is one).
fn render_metrics(key: Option<&str>, headers: &axum::http::HeaderMap) -> Response {
    use axum::response::IntoResponse;
    if let Some(key) = key {
        let given = headers.get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        let bearer =
            given.and_then(|v| v.split_once(' ')).filter(|(s, _)| s.eq_ignore_ascii_case("bearer"));
        // Compared as hashes: the time taken says nothing of the key.
        let hash = |text: &str| airlock_store::key_hash(text);
        if bearer.is_none_or(|(_, given)| hash(given.trim()) != hash(key)) {
            return ApiError::unauthorized(
                "/metrics needs the metrics key: send `Authorization: Bearer <key>` (the gateway's --metrics-key)",
            )
            .into_response();
        }
    }
    let accept = headers.get(axum::http::header::ACCEPT).and_then(|v| v.to_str().ok());
    let format = airlock_base::metrics::Format::accepted(accept);
    let content_type = format.content_type();
    let text = airlock_base::metrics::global().render(format);
    ([(axum::http::header::CONTENT_TYPE, content_type)], text).into_response()
}

/// `/metrics` alone, for an address of its own (`--metrics-listen`).
pub fn metrics_app(key: Option<Arc<str>>) -> Router {
    Router::new().route(
        "/metrics",
        axum::routing::get(move |headers: axum::http::HeaderMap| {
            let key = key.clone();
            async move { render_metrics(key.as_deref(), &headers) }
        }),
    )
}

/// A request's id: the `X-Request-Id` it came with (from a proxy, or the gateway that forwarded
/// it), else a fresh one; passed on with it and echoed in the answer.
const REQUEST_ID: axum::http::HeaderName = axum::http::HeaderName::from_static("x-request-id");

/// The id a request came with, if a log line can carry it as it is (1 to 128 visible ASCII
/// characters), else a fresh one.
fn request_id(headers: &axum::http::HeaderMap) -> axum::http::HeaderValue {
    let given = headers.get(&REQUEST_ID).filter(|id| {
        (1..=128).contains(&id.len()) && id.as_bytes().iter().all(u8::is_ascii_graphic)
    });
    given.cloned().unwrap_or_else(|| {
        let fresh = airlock_base::clock::fresh_id();
        axum::http::HeaderValue::from_str(&fresh).expect("a UUID is a header value")
    })
}

/// Counts, times and logs every request by method, matched route and status; what is logged while
/// it is handled carries its method, route, request id, when its path names one its session, and
/// behind a proxy the client it names (`X-Forwarded-For`, as the proxy says: a log field only).
async fn measured(mut request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let route = request.extensions().get::<axum::extract::MatchedPath>();
    let route = route.map_or("unmatched", |route| route.as_str()).to_owned();
    let method = airlock_base::metrics::method_label(request.method().as_str()).to_owned();
    let labels = vec![("method", method), ("route", route)];
    let started = std::time::Instant::now();
    let id = request_id(request.headers());
    request.headers_mut().insert(REQUEST_ID, id.clone());
    // The span keeps its own copy of each field: the path is only borrowed.
    let session = forward::session_in(request.uri().path());
    let forwarded_for = request.headers().get("x-forwarded-for").and_then(|v| v.to_str().ok());
    let span = tracing::info_span!(
        "request",
        method = labels[0].1,
        route = labels[1].1,
        request_id = id.to_str().unwrap_or_default(),
        session_id = session.as_deref(),
        forwarded_for,
    );
    drop(session);
    let mut response = tracing::Instrument::instrument(next.run(request), span.clone()).await;
    response.headers_mut().insert(REQUEST_ID, id);
    let took = started.elapsed();
    let status = response.status().as_u16();
    span.in_scope(|| tracing::info!(status, latency_ms = took.as_secs_f64() * 1e3, "answered"));
    let metrics = airlock_base::metrics::global();
    metrics.http_seconds.get_or_create(&labels).observe(took.as_secs_f64());
    let status = ("status", status.to_string());
    metrics.http_requests.get_or_create(&[labels, vec![status]].concat()).inc();
    response
}
