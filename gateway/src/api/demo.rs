//! The web demo (`web-demo/`), compiled into the binary and served at `/`: a browser client of
//! this same API that loads nothing from anywhere else.

use axum::Router;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::IntoResponse;
use axum::routing::get;

use super::AppState;

/// One embedded file with its content type.
fn file(content_type: &'static str, body: &'static str) -> impl IntoResponse + Clone {
    ([(CONTENT_TYPE, content_type), (CACHE_CONTROL, "no-cache")], body)
}

/// `/`, `/app.js` and `/style.css`.
pub fn router() -> Router<AppState> {
    let page = file("text/html; charset=utf-8", include_str!("../../../web-demo/index.html"));
    let script = file("text/javascript; charset=utf-8", include_str!("../../../web-demo/app.js"));
    let style = file("text/css; charset=utf-8", include_str!("../../../web-demo/style.css"));
    Router::new()
        .route("/", get(move || async move { page }))
        .route("/app.js", get(move || async move { script }))
        .route("/style.css", get(move || async move { style }))
}
