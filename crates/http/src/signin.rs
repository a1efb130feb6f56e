//! Signing in: `POST /v1/login` trades a key for the `airlock_session` cookie a browser then
//! sends instead of the key, and `POST /v1/logout` ends it.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::access::{Caller, Credential, LOGIN_COOKIE, credential, login_token};
use super::responses::StorageFailed;
use super::{Answer, ApiError, AppState};
use airlock_base::clock::now_ms;
use airlock_store::LOGIN_TTL_MS;

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

/// Signs the browser in: for the key of the `Authorization` header, a fresh sign-in token comes
/// back as an HttpOnly, SameSite=Strict cookie (`Secure` behind https), which the page's
/// requests and event streams then carry. The key itself is never set as a cookie.
#[utoipa::path(
    post, path = "/v1/login", operation_id = "login", tag = "access",
    responses(
        (status = 200, description = "Signed in; `Set-Cookie` holds the sign-in token", body = Identity),
        (status = 401, description = "`unauthorized`: no key, or not a valid one", body = super::ErrorBody),
        StorageFailed,
    )
)]
async fn login(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
) -> Answer<Response> {
    let identity = match &caller {
        Caller::Local => Identity { tenant: None, admin: true },
        Caller::Key { tenant, admin, .. } => {
            Identity { tenant: Some(tenant.clone()), admin: *admin }
        }
    };
    let mut response = Json(identity).into_response();
    if let (Caller::Key { key_id, .. }, Some(Credential::Key(_))) = (&caller, credential(&headers))
    {
        let store = state.sessions.store();
        let token = store.create_login(key_id, now_ms()).await.map_err(|error| match error {
            airlock_store::KeyError::Store(error) => ApiError::from(error),
            other => ApiError::unavailable(other.to_string()),
        })?;
        let max_age = LOGIN_TTL_MS / 1000;
        let secure = if state.access.secure(&headers) { "; Secure" } else { "" };
        let cookie = format!(
            "{LOGIN_COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/v1; Max-Age={max_age}{secure}"
        );
        let cookie = HeaderValue::try_from(cookie).expect("a token is a header value");
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    Ok(response)
}

/// Signs the browser out: its sign-in ends (the token no longer works anywhere) and the cookie
/// is cleared.
#[utoipa::path(
    post, path = "/v1/logout", operation_id = "logout", tag = "access",
    responses((status = 204, description = "Signed out"), StorageFailed)
)]
async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Answer<impl IntoResponse> {
    if let Some(token) = login_token(&headers) {
        state.sessions.store().end_login(token).await?;
    }
    let secure = if state.access.secure(&headers) { "; Secure" } else { "" };
    let clear = format!("{LOGIN_COOKIE}=; HttpOnly; SameSite=Strict; Path=/v1; Max-Age=0{secure}");
    Ok((StatusCode::NO_CONTENT, [(header::SET_COOKIE, clear)]))
}
