//! The HTTP API of `spec/http-api.md`: [`app`] builds the router from an [`AppState`]; `main`
//! only binds it. Each route module has one `router()`.

mod error;
mod events;
mod messages;
mod receipts;
mod sessions;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use tokio::sync::watch;
use tower_http::cors::CorsLayer;

pub use error::{ApiError, JsonBody};

use crate::registry::Registry;

/// The default request body limit: 1 MiB.
pub const DEFAULT_MAX_BODY: usize = 1 << 20;

/// Cheap handles shared by every handler.
#[derive(Clone)]
pub struct AppState {
    /// Live sessions.
    pub registry: Arc<Registry>,
    /// Turns `true` when the gateway shuts down: open streams end so clients resume elsewhere.
    pub shutdown: watch::Receiver<bool>,
}

/// The whole API.
pub fn app(state: AppState, max_body: usize, cors: Option<CorsLayer>) -> Router {
    let router = Router::new()
        .merge(sessions::router())
        .merge(messages::router())
        .merge(events::router())
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(|| async { "ready\n" }))
        .fallback(|| async {
            ApiError::new(
                axum::http::StatusCode::NOT_FOUND,
                "not-found",
                "no such route; see /openapi.json",
            )
        })
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(state);
    match cors {
        Some(cors) => router.layer(cors),
        None => router,
    }
}
