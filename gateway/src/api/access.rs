//! Who may use the API (`docs/http-api.md`, "Keys and tenants").
//!
//! Once the data file has a key, every `/v1` request needs one: `Authorization: Bearer <key>`, or
//! the cookie `POST /v1/login` sets for the browser page. A key acts for its tenant, whose
//! sessions alone it reaches (any other session id is 404); an admin key reaches every session.
//! Without keys (allowed on loopback only, see [`Exposure`]) anyone on the machine may use the
//! gateway, but no web page may: the Host must be a loopback name (DNS rebinding) and a
//! cross-origin request that changes anything is refused.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use axum::extract::{RawPathParams, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json, RequestExt};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::responses::StorageFailed;
use super::{Answer, ApiError, AppState};
use crate::clock::now_ms;
use crate::store::{Store, StoreError};

/// The cookie the page's requests and streams carry (`EventSource` cannot send a header).
pub const KEY_COOKIE: &str = "airlock_key";

/// Who is asking.
#[derive(Clone, Debug, PartialEq)]
pub enum Caller {
    /// The gateway has no keys: every session.
    Local,
    /// A key of `tenant`; an admin key reaches every tenant's sessions.
    Key {
        /// The key's tenant: the one its new sessions belong to.
        tenant: String,
        /// It reaches every session.
        admin: bool,
    },
}

impl Caller {
    /// The only tenant whose sessions it reaches; `None`: every session.
    pub fn only(&self) -> Option<&str> {
        match self {
            Caller::Key { tenant, admin: false } => Some(tenant),
            _ => None,
        }
    }

    /// The tenant of the sessions it creates.
    pub fn owner(&self) -> Option<String> {
        match self {
            Caller::Local => None,
            Caller::Key { tenant, .. } => Some(tenant.clone()),
        }
    }
}

/// A gateway's rules: whether it has keys yet, and which other origins may change things.
pub struct Access {
    /// Once true, for good: a revoked key is still a key.
    keys: AtomicBool,
    /// When keys were last looked for (ms since the epoch).
    looked: AtomicU64,
    /// The `--cors-origin` list: pages there may change things (`*`: any page).
    origins: Vec<String>,
}

/// How often a gateway without keys looks again: a key made while it runs takes effect within
/// this long.
const LOOK_AGAIN_MS: u64 = 1_000;

impl Access {
    /// Rules that let pages on `origins` change things.
    pub fn new(origins: Vec<String>) -> Access {
        Access { keys: AtomicBool::new(false), looked: AtomicU64::new(0), origins }
    }

    /// Whether the data file has keys (looked up at most once a second until it has).
    async fn keys(&self, store: &Store) -> Result<bool, StoreError> {
        if self.keys.load(Ordering::Relaxed) {
            return Ok(true);
        }
        let now = now_ms();
        let looked = self.looked.load(Ordering::Relaxed);
        if now.saturating_sub(looked) < LOOK_AGAIN_MS
            || self
                .looked
                .compare_exchange(looked, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return Ok(false);
        }
        let has = store.has_keys().await?;
        self.keys.store(has, Ordering::Relaxed);
        Ok(has)
    }

    /// Whether a request from `origin` to `host` may change things: same origin, or listed.
    fn origin_allowed(&self, origin: &str, host: Option<&str>) -> bool {
        let same = host.is_some_and(|host| {
            origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")) == Some(host)
        });
        same || self.origins.iter().any(|o| o == "*" || o == origin)
    }
}

/// Whether a gateway on `addr` may serve without keys: only on loopback.
pub struct Exposure;

impl Exposure {
    /// Refuses a gateway that would serve a non-loopback address to anyone.
    pub async fn check(addr: std::net::SocketAddr, store: &Store) -> Result<(), ExposureError> {
        if addr.ip().is_loopback() || store.has_keys().await? {
            return Ok(());
        }
        Err(ExposureError::NoKeys { addr, store: store.flag() })
    }
}

/// Why a gateway may not serve where it was asked to.
#[derive(Debug, thiserror::Error)]
pub enum ExposureError {
    /// A public address and no keys.
    #[error(
        "refusing to serve {addr} without API keys: anyone who can reach it would own every session. Make a key with `airlock keys create {store} --tenant NAME`, or listen on 127.0.0.1"
    )]
    NoKeys {
        /// The address.
        addr: std::net::SocketAddr,
        /// The flag naming the store.
        store: String,
    },
    /// The keys could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The middleware on every route: who is asking, and whether they may.
pub async fn guard(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let access = &state.access;
    let store = state.registry.store();
    let host = request.headers().get(header::HOST).and_then(|h| h.to_str().ok());
    let changes = !matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let cross_origin = changes
        && origin(request.headers()).is_some_and(|origin| !access.origin_allowed(origin, host));
    let caller = if !access.keys(store).await? {
        if host.is_some_and(|host| !loopback_host(host)) {
            return Err(ApiError::forbidden(
                "forbidden-host",
                "this gateway has no API keys, so it answers only requests addressed to a loopback name (localhost, 127.0.0.1, [::1]); make a key with `airlock keys create` to serve other names",
            ));
        }
        if cross_origin {
            return Err(cross_origin_refused());
        }
        Caller::Local
    } else if request.uri().path().starts_with("/v1/") {
        let (secret, from_cookie) = credential(request.headers()).ok_or_else(|| {
            ApiError::unauthorized(
                "this gateway needs an API key: send `Authorization: Bearer <key>`; an operator makes one with `airlock keys create`",
            )
        })?;
        let key = store.live_key(secret).await?.ok_or_else(|| {
            ApiError::unauthorized("the API key is not valid or was revoked; ask for a new one")
        })?;
        // A cookie rides along with any request the browser makes, so a page elsewhere on this
        // site (another port) could use it; a header is only sent by a client that holds the key.
        if from_cookie && cross_origin {
            return Err(cross_origin_refused());
        }
        Caller::Key { tenant: key.tenant, admin: key.admin }
    } else {
        return Ok(next.run(request).await);
    };
    if let Some(tenant) = caller.only()
        && let Ok(params) = request.extract_parts::<RawPathParams>().await
        && let Some((_, id)) = params.iter().find(|(name, _)| *name == "id")
        && !store.session_of_tenant(id, tenant).await?
    {
        return Err(ApiError::session_not_found(id));
    }
    request.extensions_mut().insert(caller);
    Ok(next.run(request).await)
}

fn cross_origin_refused() -> ApiError {
    ApiError::forbidden(
        "cross-origin",
        "a page on another origin may not change anything here; list its origin with --cors-origin to allow it",
    )
}

/// The `Origin` header, when there is one.
fn origin(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::ORIGIN).and_then(|o| o.to_str().ok())
}

/// Whether `host` (a Host header, port and all) names this machine's loopback.
fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The key a request carries, and whether it came in the cookie.
fn credential(headers: &HeaderMap) -> Option<(&str, bool)> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|key| (key.trim(), false));
    bearer.or_else(|| {
        headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).find_map(|v| {
            v.split(';').find_map(|pair| {
                let (name, value) = pair.trim().split_once('=')?;
                (name == KEY_COOKIE).then_some((value, true))
            })
        })
    })
}

/// `POST /v1/login` and `POST /v1/logout`.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(login)).routes(routes!(logout))
}

/// Whom a key acts for.
#[derive(Serialize, ToSchema)]
struct Identity {
    /// Its tenant; `null` when the gateway has no keys.
    tenant: Option<String>,
    /// It reaches every tenant's sessions (always, when the gateway has no keys).
    admin: bool,
}

/// Signs the browser in: the key of the `Authorization` header comes back as an HttpOnly,
/// SameSite=Strict cookie, which the page's requests and event streams then carry.
#[utoipa::path(
    post, path = "/v1/login", operation_id = "login", tag = "access",
    responses(
        (status = 200, description = "Signed in; `Set-Cookie` holds the key", body = Identity),
        (status = 401, description = "`unauthorized`: no key, or not a valid one", body = super::ErrorBody),
        StorageFailed,
    )
)]
async fn login(Extension(caller): Extension<Caller>, headers: HeaderMap) -> Answer<Response> {
    let identity = match &caller {
        Caller::Local => Identity { tenant: None, admin: true },
        Caller::Key { tenant, admin } => Identity { tenant: Some(tenant.clone()), admin: *admin },
    };
    let mut response = Json(identity).into_response();
    if let Some((secret, _)) = credential(&headers) {
        let cookie = format!("{KEY_COOKIE}={secret}; HttpOnly; SameSite=Strict; Path=/v1");
        let cookie = HeaderValue::try_from(cookie)
            .map_err(|_| ApiError::unauthorized("the API key is not valid or was revoked"))?;
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    Ok(response)
}

/// Signs the browser out: the key cookie is cleared.
#[utoipa::path(
    post, path = "/v1/logout", operation_id = "logout", tag = "access",
    responses((status = 204, description = "Signed out"))
)]
async fn logout() -> impl IntoResponse {
    let clear = format!("{KEY_COOKIE}=; HttpOnly; SameSite=Strict; Path=/v1; Max-Age=0");
    (StatusCode::NO_CONTENT, [(header::SET_COOKIE, clear)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_are_told_from_others() {
        for host in ["localhost", "localhost:7700", "127.0.0.1:80", "127.1.2.3", "[::1]:7700"] {
            assert!(loopback_host(host), "{host}");
        }
        for host in
            ["evil.example", "evil.example:7700", "10.0.0.1:7700", "[::2]:1", "localhost.evil"]
        {
            assert!(!loopback_host(host), "{host}");
        }
    }

    #[test]
    fn a_page_on_the_same_origin_or_a_listed_one_may_change_things() {
        let access = Access::new(vec!["https://app.example".into()]);
        assert!(access.origin_allowed("http://127.0.0.1:7700", Some("127.0.0.1:7700")));
        assert!(access.origin_allowed("https://app.example", Some("127.0.0.1:7700")));
        assert!(!access.origin_allowed("http://127.0.0.1:8080", Some("127.0.0.1:7700")));
        assert!(!access.origin_allowed("null", Some("127.0.0.1:7700")));
        assert!(Access::new(vec!["*".into()]).origin_allowed("null", None));
    }

    #[test]
    fn a_key_comes_from_the_header_before_the_cookie() {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_static("a=b; airlock_key=ak_c"));
        assert_eq!(credential(&headers), Some(("ak_c", true)));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer ak_h"));
        assert_eq!(credential(&headers), Some(("ak_h", false)));
    }
}
