//! Who may use the API (`docs/http-api.md`, "Keys and tenants").
//!
//! Once the data file has a key, every `/v1` request needs one: `Authorization: Bearer <key>`, or
//! the sign-in cookie `POST /v1/login` sets for the browser page (a random token that stands for
//! the key, never the key itself). A key acts for its tenant, whose sessions alone it reaches (any
//! other session id is 404); an admin key reaches every session. Without keys (allowed on
//! loopback only, see [`Exposure`]) anyone on the machine may use the gateway, but no web page
//! may: the Host must be a loopback name (DNS rebinding) and a cross-origin request that changes
//! anything is refused.
//!
//! The lock fails closed: whether keys exist is read before the gateway listens, a request never
//! passes as keyless on an answer that is stale or failed (it waits for the one lookup in flight,
//! or gets 503), and once a key exists the gateway never asks again.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use axum::RequestExt;
use axum::extract::{RawPathParams, Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::Response;

use super::{ApiError, AppState};
use airlock_base::clock::now_ms;
use airlock_store::{KEYS_NOTICE, Store, StoreError};

/// The sign-in cookie the page's requests and streams carry (`EventSource` cannot send a header).
pub const LOGIN_COOKIE: &str = "airlock_session";

/// Who is asking.
#[derive(Clone, Debug, PartialEq)]
pub enum Caller {
    /// The gateway has no keys: every session.
    Local,
    /// A key of `tenant`; an admin key reaches every tenant's sessions.
    Key {
        /// The key's id.
        key_id: String,
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
            Caller::Key { tenant, admin: false, .. } => Some(tenant),
            _ => None,
        }
    }

    /// The tenant of the sessions it creates, and whose quotas its requests count against.
    pub fn owner(&self) -> Option<String> {
        self.tenant().map(str::to_owned)
    }

    /// [`Caller::owner`], borrowed.
    pub fn tenant(&self) -> Option<&str> {
        match self {
            Caller::Local => None,
            Caller::Key { tenant, .. } => Some(tenant),
        }
    }

    /// Who asks for webhook subscriptions and schedules: its tenant, and whether it sees every
    /// tenant's.
    pub fn requester(&self) -> airlock_hooks::webhooks::Requester {
        airlock_hooks::webhooks::Requester {
            tenant: self.owner(),
            every_tenant: self.only().is_none(),
        }
    }
}

/// How the gateway is reached from outside.
#[derive(Clone, Debug, Default)]
pub struct AccessSettings {
    /// The `--cors-origin` list: pages there may change things (`*`: any page).
    pub origins: Vec<String>,
    /// `--public-url`: where clients reach the gateway (behind a proxy, say). A page from its
    /// origin may change things whatever `Host` the proxy sends; an `https://` one makes the
    /// sign-in cookie `Secure`.
    pub public_url: Option<String>,
}

/// A gateway's rules: whether it has keys yet, and which other origins may change things.
pub struct Access {
    /// Once true, for good: a revoked key is still a key.
    keys: AtomicBool,
    /// When the store last said it has no keys.
    no_keys_at: Mutex<Instant>,
    /// One lookup at a time: requests that find the answer stale wait for it.
    lookup: tokio::sync::Mutex<()>,
    origins: Vec<String>,
    /// The origin of `--public-url`: the gateway's own, as pages reach it.
    public_origin: Option<String>,
    /// `--public-url` itself, without a trailing `/`.
    public_url: Option<String>,
    /// The sign-in cookie is `Secure` whatever the request says.
    secure: bool,
}

/// How long a gateway believes it has no keys before it asks the store again: a key made by
/// `airlock keys create` in another process takes effect within this long (at once on PostgreSQL,
/// which tells every gateway). A request that finds the answer older waits for the lookup.
const NO_KEYS_FOR: Duration = Duration::from_millis(500);

impl Access {
    /// The rules of a gateway over `store`, read before it serves: a store that cannot say
    /// whether it has keys stops the start, and `--cors-origin '*'` without keys is refused.
    pub async fn load(store: &Store, settings: AccessSettings) -> Result<Access, ExposureError> {
        let keys = store.has_keys().await?;
        if !keys && settings.origins.iter().any(|o| o == "*") {
            return Err(ExposureError::AnyOrigin { store: store.flag() });
        }
        let secure = settings.public_url.as_deref().is_some_and(|url| url.starts_with("https://"));
        Ok(Access {
            keys: AtomicBool::new(keys),
            no_keys_at: Mutex::new(Instant::now()),
            lookup: tokio::sync::Mutex::new(()),
            origins: settings.origins,
            public_origin: settings.public_url.as_deref().map(origin_of),
            public_url: settings.public_url.map(|url| url.trim_end_matches('/').to_owned()),
            secure,
        })
    }

    /// Rules that let pages on `origins` change things, for a store known to have `keys`.
    #[cfg(test)]
    fn known(keys: bool, origins: Vec<String>) -> Access {
        Access {
            keys: AtomicBool::new(keys),
            no_keys_at: Mutex::new(Instant::now()),
            lookup: tokio::sync::Mutex::new(()),
            origins,
            public_origin: None,
            public_url: None,
            secure: false,
        }
    }

    /// Whether the store has keys: known for good once it has, else looked up again once the
    /// last "no" is older than [`NO_KEYS_FOR`] (one lookup, which concurrent requests wait for).
    /// A failed lookup is an error, never "no keys".
    async fn keys(&self, store: &Store) -> Result<bool, StoreError> {
        let fresh = || self.no_keys_at.lock().expect("access lock").elapsed() < NO_KEYS_FOR;
        if self.keys.load(Ordering::Acquire) {
            return Ok(true);
        }
        if fresh() {
            return Ok(false);
        }
        let _one = self.lookup.lock().await;
        if self.keys.load(Ordering::Acquire) {
            return Ok(true);
        }
        if fresh() {
            return Ok(false); // looked up while this request waited
        }
        let has = store.has_keys().await?;
        match has {
            true => self.keys_made(),
            false => *self.no_keys_at.lock().expect("access lock") = Instant::now(),
        }
        Ok(has)
    }

    /// `--public-url`, without a trailing `/`: where clients reach the gateway, when it was set.
    pub(crate) fn public_url(&self) -> Option<&str> {
        self.public_url.as_deref()
    }

    /// Whether the gateway is known to have keys, without asking the store.
    pub fn known_keys(&self) -> bool {
        self.keys.load(Ordering::Acquire)
    }

    /// A key was made: every `/v1` request needs one from now on.
    pub fn keys_made(&self) {
        self.keys.store(true, Ordering::Release);
    }

    /// Hears the other processes sharing `store` say a key was made (PostgreSQL), until the
    /// notices end; a store of one gateway says nothing and is asked again instead.
    pub fn hear_keys(self: &std::sync::Arc<Self>, store: &Store) {
        let Some(mut notices) = store.notices() else { return };
        let access = std::sync::Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let heard = notices.recv().await;
                let Some(access) = access.upgrade() else { return };
                match heard {
                    Ok(notice) if notice == KEYS_NOTICE => return access.keys_made(),
                    Ok(_) => {}
                    // Missed notices may have held it: ask the store at the next request.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        let mut at = access.no_keys_at.lock().expect("access lock");
                        *at = at.checked_sub(NO_KEYS_FOR).unwrap_or(*at);
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }

    /// Whether a request from `origin` to `host` may change things: same origin (the `Host` it
    /// was sent to, or `--public-url`'s), or listed.
    fn origin_allowed(&self, origin: &str, host: Option<&str>) -> bool {
        let same = host.is_some_and(|host| {
            origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")) == Some(host)
        });
        same || self.public_origin.as_deref() == Some(origin)
            || self.origins.iter().any(|o| o == "*" || o == origin)
    }

    /// Whether a sign-in cookie for a request with `headers` is `Secure`: `--public-url` is
    /// https, or a proxy says the request came over TLS.
    pub(crate) fn secure(&self, headers: &HeaderMap) -> bool {
        let forwarded = |name: &str| {
            headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_ascii_lowercase)
        };
        self.secure
            || forwarded("x-forwarded-proto")
                .is_some_and(|proto| proto.split(',').next().map(str::trim) == Some("https"))
            || forwarded("forwarded").is_some_and(|f| f.contains("proto=https"))
    }
}

/// The origin of an http(s) URL as a browser's `Origin` names it: scheme and host in lower case,
/// the port unless it is the scheme's own (`HTTPS://Chat.Example:443/app` → `https://chat.example`).
fn origin_of(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let scheme = scheme.to_ascii_lowercase();
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let default_port = if scheme == "https" { ":443" } else { ":80" };
    let host = authority.strip_suffix(default_port).unwrap_or(authority);
    format!("{scheme}://{}", host.to_ascii_lowercase())
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
    /// `--cors-origin '*'` and no keys.
    #[error(
        "refusing --cors-origin '*' without API keys: every web page a person on this machine opens could then use every session. Make a key with `airlock keys create {store} --tenant NAME`, or list the pages' origins instead of '*'"
    )]
    AnyOrigin {
        /// The flag naming the store.
        store: String,
    },
    /// The keys could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The paths that need a key when the gateway has keys: the API and the other protocols' faces
/// (the page, its files, the health checks and the OpenAPI document do not).
pub(crate) const KEYED: [&str; 4] = ["/v1/", "/ag-ui", "/a2a", "/langgraph/"];

/// The middleware on every route: who is asking, and whether they may.
pub async fn guard(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let access = &state.access;
    let store = state.sessions.store();
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
    } else if KEYED.iter().any(|prefix| request.uri().path().starts_with(prefix)) {
        let key = match credential(request.headers()) {
            None => {
                return Err(ApiError::unauthorized(
                    "this gateway needs an API key: send `Authorization: Bearer <key>`; an operator makes one with `airlock keys create`",
                ));
            }
            Some(Credential::Key(secret)) => store.live_key(secret).await?.ok_or_else(|| {
                ApiError::unauthorized("the API key is not valid or was revoked; ask for a new one")
            })?,
            Some(Credential::Login(token)) => {
                // A cookie rides along with any request the browser makes, so a page elsewhere
                // on this site (another port) could use it; a header is only sent by a client
                // that holds the key.
                if cross_origin {
                    return Err(cross_origin_refused());
                }
                store.login_key(token, now_ms()).await?.ok_or_else(|| {
                    ApiError::unauthorized(
                        "the sign-in ended (signed out, expired, or its key was revoked); sign in again with POST /v1/login",
                    )
                })?
            }
        };
        Caller::Key { key_id: key.key_id, tenant: key.tenant, admin: key.admin }
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

/// What a request presents.
#[derive(Debug, PartialEq)]
pub(crate) enum Credential<'r> {
    /// `Authorization: Bearer <key>` (the scheme in any case, RFC 7235).
    Key(&'r str),
    /// The sign-in cookie's token.
    Login(&'r str),
}

/// The credential a request carries: the `Authorization` header, then `x-api-key`, then the
/// cookie.
pub(crate) fn credential(headers: &HeaderMap) -> Option<Credential<'_>> {
    let bearer = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| {
        let (scheme, key) = v.trim_start().split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| Credential::Key(key.trim()))
    });
    // LangGraph's SDK sends its key as `x-api-key`.
    let api_key = || {
        let key = headers.get("x-api-key").and_then(|v| v.to_str().ok()).map(str::trim);
        key.filter(|key| !key.is_empty()).map(Credential::Key)
    };
    bearer.or_else(api_key).or_else(|| login_token(headers).map(Credential::Login))
}

/// The sign-in cookie's token, when the request carries one.
pub(crate) fn login_token(headers: &HeaderMap) -> Option<&str> {
    headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).find_map(|v| {
        v.split(';').find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == LOGIN_COOKIE && !value.is_empty()).then_some(value)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

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
        let access = Access::known(false, vec!["https://app.example".into()]);
        assert!(access.origin_allowed("http://127.0.0.1:7700", Some("127.0.0.1:7700")));
        assert!(access.origin_allowed("https://app.example", Some("127.0.0.1:7700")));
        assert!(!access.origin_allowed("http://127.0.0.1:8080", Some("127.0.0.1:7700")));
        assert!(!access.origin_allowed("null", Some("127.0.0.1:7700")));
        assert!(Access::known(false, vec!["*".into()]).origin_allowed("null", None));
    }

    #[test]
    fn behind_a_proxy_a_page_from_the_public_url_may_change_things_whatever_host_it_sends() {
        let public_origin = Some(origin_of("https://Chat.Example:443/airlock/"));
        let behind = Access { public_origin, ..Access::known(true, Vec::new()) };
        assert!(behind.origin_allowed("https://chat.example", Some("10.0.0.5:7700")));
        assert!(!behind.origin_allowed("http://chat.example", Some("10.0.0.5:7700")));
        assert!(!behind.origin_allowed("https://evil.example", Some("10.0.0.5:7700")));
        assert_eq!(origin_of("http://localhost:8080"), "http://localhost:8080");
        assert_eq!(origin_of("http://user@h:80/x?y"), "http://h");
    }

    #[test]
    fn a_key_comes_from_the_header_before_the_cookie_and_the_scheme_is_any_case() {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_static("a=b; airlock_session=as_c"));
        assert_eq!(credential(&headers), Some(Credential::Login("as_c")));
        for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
            let value = HeaderValue::try_from(format!("{scheme} ak_h")).unwrap();
            headers.insert(header::AUTHORIZATION, value);
            assert_eq!(credential(&headers), Some(Credential::Key("ak_h")), "{scheme}");
        }
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic ak_h"));
        assert_eq!(credential(&headers), Some(Credential::Login("as_c")), "not a bearer key");
    }

    #[test]
    fn the_sign_in_cookie_is_secure_behind_https() {
        let access = Access::known(true, Vec::new());
        let mut headers = HeaderMap::new();
        assert!(!access.secure(&headers));
        headers.insert("x-forwarded-proto", HeaderValue::from_static("https"));
        assert!(access.secure(&headers));
        let mut headers = HeaderMap::new();
        headers.insert("forwarded", HeaderValue::from_static("for=1.2.3.4;proto=https"));
        assert!(access.secure(&headers));
        let behind = Access { secure: true, ..Access::known(true, Vec::new()) };
        assert!(behind.secure(&HeaderMap::new()), "--public-url https://… says so");
    }

    #[tokio::test]
    async fn no_keys_is_believed_briefly_then_the_store_is_asked_again() {
        let store =
            Store::open(std::path::Path::new(airlock_store::MEMORY), Default::default()).unwrap();
        let access = Access::known(false, Vec::new());
        *access.no_keys_at.lock().unwrap() -= NO_KEYS_FOR * 2;
        assert!(!access.keys(&store).await.unwrap());
        store.create_key("a", false, 1).await.unwrap();
        assert!(!access.keys(&store).await.unwrap(), "believed for a while");
        *access.no_keys_at.lock().unwrap() -= NO_KEYS_FOR * 2;
        assert!(access.keys(&store).await.unwrap(), "asked again");
    }
}
