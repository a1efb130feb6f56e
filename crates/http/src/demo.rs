//! The web demo (`web-demo/`), compiled into the binary and served at `/`: a browser client of
//! this same API that loads nothing from anywhere else.
//!
//! The page is plain ES modules (no bundler) plus three vendored libraries, `marked`, `DOMPurify`
//! and `highlight.js`, whose committed copies `web-demo/vendor/update.sh` refreshes from npm; building
//! the gateway needs no npm. The page's `Content-Security-Policy` lets it load and connect to
//! this origin only, so even a model's Markdown cannot make it fetch from elsewhere.

use axum::Router;
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE};
use axum::routing::get;

use super::AppState;

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

/// What the page may load: its own files and streams, nothing from another origin.
const POLICY: &str = "default-src 'self'; img-src 'self' data:; object-src 'none'; \
    base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Every file the page loads: its path, content type and bytes.
const FILES: &[(&str, &str, &[u8])] = &[
    ("/app.js", JS, include_bytes!("../../../web-demo/app.js")),
    ("/style.css", CSS, include_bytes!("../../../web-demo/style.css")),
    ("/favicon.ico", "image/x-icon", include_bytes!("../../../web-demo/favicon.ico")),
    ("/js/api.js", JS, include_bytes!("../../../web-demo/js/api.js")),
    ("/js/attachments.js", JS, include_bytes!("../../../web-demo/js/attachments.js")),
    ("/js/conversation.js", JS, include_bytes!("../../../web-demo/js/conversation.js")),
    ("/js/files.js", JS, include_bytes!("../../../web-demo/js/files.js")),
    ("/js/goal.js", JS, include_bytes!("../../../web-demo/js/goal.js")),
    ("/js/markdown.js", JS, include_bytes!("../../../web-demo/js/markdown.js")),
    ("/js/person.js", JS, include_bytes!("../../../web-demo/js/person.js")),
    ("/js/queue.js", JS, include_bytes!("../../../web-demo/js/queue.js")),
    ("/js/schedules.js", JS, include_bytes!("../../../web-demo/js/schedules.js")),
    ("/js/sessions.js", JS, include_bytes!("../../../web-demo/js/sessions.js")),
    ("/vendor/marked.esm.js", JS, include_bytes!("../../../web-demo/vendor/marked.esm.js")),
    ("/vendor/purify.min.js", JS, include_bytes!("../../../web-demo/vendor/purify.min.js")),
    ("/vendor/highlight.min.js", JS, include_bytes!("../../../web-demo/vendor/highlight.min.js")),
    ("/vendor/highlight.css", CSS, include_bytes!("../../../web-demo/vendor/highlight.css")),
];

/// `/` and every file in [`FILES`].
pub fn router() -> Router<AppState> {
    let page = include_str!("../../../web-demo/index.html");
    let headers = [
        (CONTENT_TYPE, "text/html; charset=utf-8"),
        (CACHE_CONTROL, "no-cache"),
        (CONTENT_SECURITY_POLICY, POLICY),
    ];
    let mut router = Router::new().route("/", get(move || async move { (headers, page) }));
    for &(path, content_type, body) in FILES {
        let headers = [(CONTENT_TYPE, content_type), (CACHE_CONTROL, "no-cache")];
        router = router.route(path, get(move || async move { (headers, body) }));
    }
    router
}
