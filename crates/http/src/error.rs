//! The API's one error shape, `{"error": {code, message, details}}`, and the JSON body and query
//! extractors whose rejections use it. Every HTTP status an error answers is chosen here: the
//! lower layers' errors convert in one place (the `From` impls below), and handlers name a
//! refusal by its code through the constructors.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::AppState;
use airlock_sessions::{
    Exceeded, GoalError, InputError, Limit, OwnError, Refusal, RefusalCode, RegistryError,
    SessionError,
};
use airlock_store::StoreError;

/// An error answer: status, kebab-case code, one sentence for a person, details.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    details: Value,
    retry_after: Option<u64>,
}

impl ApiError {
    /// An error with empty details.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, code, message: message.into(), details: json!({}), retry_after: None }
    }

    /// Adds `Retry-After: seconds`.
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// Adds details.
    pub fn details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    /// 404 with this code.
    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, message)
    }

    /// 409 with this code: the request does not fit the session's state.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }

    /// 403 with this code: the request may not be made from where it came.
    pub fn forbidden(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, code, message)
    }

    /// 401 `unauthorized`: no API key, or not a valid one.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    /// 504 with this code: the answer did not come in time.
    pub fn timeout(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::GATEWAY_TIMEOUT, code, message)
    }

    /// 503 `storage-unavailable`, to be retried after a second.
    pub(super) fn unavailable(message: String) -> Self {
        let mut api = Self::new(StatusCode::SERVICE_UNAVAILABLE, "storage-unavailable", message);
        api.retry_after = Some(1);
        api
    }

    /// 400 `bad-request` naming the field.
    pub fn bad_request(field: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad-request", message).details(json!({"field": field}))
    }

    /// 404 `session-not-found`.
    pub fn session_not_found(id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "session-not-found",
            format!("no session has id {id:?}; create it with POST /v1/sessions"),
        )
    }

    /// 409 for an input the session refused: `child-session` (a continuable subagent takes work
    /// only from its parent, named in the details), else `session-conflict`.
    pub fn refused(refusal: Refusal, parent: Option<&str>) -> Self {
        if let Some(exceeded) = refusal.limit {
            return exceeded.into();
        }
        match (refusal.code, parent) {
            (RefusalCode::ChildSession, Some(parent)) => {
                Self::new(StatusCode::CONFLICT, "child-session", refusal.message)
                    .details(json!({"parentSessionId": parent}))
            }
            _ => Self::new(StatusCode::CONFLICT, "session-conflict", refusal.message),
        }
    }
}

/// The body of every error answer: `{"error": {code, message, details}}`.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// The inside of an [`ErrorBody`].
#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// A kebab-case code for programs, e.g. `session-not-found`.
    #[schema(example = "session-not-found")]
    pub code: &'static str,
    /// One sentence for a person: what was wrong and what to do.
    pub message: String,
    /// More facts (a 400 names the field); `{}` when there is nothing to add.
    #[schema(value_type = Object)]
    pub details: Value,
}

impl ApiError {
    fn body(self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail { code: self.code, message: self.message, details: self.details },
        }
    }

    /// Its HTTP status.
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    /// Its kebab-case code.
    pub(crate) fn code(&self) -> &'static str {
        self.code
    }

    /// Its sentence for a person.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    /// The error body as JSON text (for a stream that can no longer answer a status).
    pub fn body_json(self) -> String {
        serde_json::to_string(&self.body()).expect("error bodies serialize")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, retry_after) = (self.status, self.retry_after);
        let mut response = (status, axum::Json(self.body())).into_response();
        if let Some(seconds) = retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if status == StatusCode::UNAUTHORIZED {
            let challenge = HeaderValue::from_static("Bearer");
            response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
        }
        response
    }
}

impl From<Exceeded> for ApiError {
    fn from(exceeded: Exceeded) -> Self {
        let (status, code) = match exceeded.limit {
            Limit::Instances => (StatusCode::SERVICE_UNAVAILABLE, "overloaded"),
            Limit::Rate | Limit::Creates => (StatusCode::TOO_MANY_REQUESTS, "rate-limited"),
            _ => (StatusCode::TOO_MANY_REQUESTS, "quota-exceeded"),
        };
        let details = json!({"limit": exceeded.limit.flag().trim_start_matches('-')});
        Self::new(status, code, exceeded.to_string())
            .retry_after(exceeded.retry_after)
            .details(details)
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            // Sent again, the request reaches the gateway that runs the session now.
            StoreError::Fenced(_) | StoreError::Moving(_) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "session-moving", error.to_string())
                    .retry_after(1)
            }
            _ => ApiError::unavailable(error.to_string()),
        }
    }
}

impl From<SessionError> for ApiError {
    fn from(error: SessionError) -> Self {
        match error {
            SessionError::Store(error) => error.into(),
            SessionError::Gone => ApiError::unavailable(error.to_string()),
            SessionError::Exceeded(exceeded) => exceeded.into(),
            SessionError::Goal(error) => error.into(),
            SessionError::ChildSession { ref parent, .. } => {
                let details = json!({"parentSessionId": parent});
                ApiError::conflict("child-session", error.to_string()).details(details)
            }
            // The core trapped or could not be built: not the store's fault, nor the client's.
            SessionError::Trapped(_) | SessionError::Broken(_) | SessionError::Core(_) => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "core-failed", error.to_string())
            }
        }
    }
}

impl From<GoalError> for ApiError {
    fn from(error: GoalError) -> Self {
        match &error {
            GoalError::NoGoal => ApiError::not_found("goal-not-found", error.to_string()),
            GoalError::Phase { .. } => ApiError::conflict("goal-conflict", error.to_string()),
            GoalError::EmptyObjective => ApiError::bad_request("objective", error.to_string()),
            GoalError::MaxRounds(_) => ApiError::bad_request("maxRounds", error.to_string()),
        }
    }
}

impl From<OwnError> for ApiError {
    fn from(error: OwnError) -> Self {
        match error {
            OwnError::KeyConflict => ApiError::conflict("idempotency-conflict", error.to_string()),
            OwnError::Session(error) => error.into(),
            OwnError::Store(error) => error.into(),
            OwnError::Refused(refusal) => ApiError::refused(refusal, None),
        }
    }
}

impl From<InputError> for ApiError {
    fn from(error: InputError) -> Self {
        match error {
            InputError::Session(error) => error.into(),
            InputError::Refused { refusal, parent } => {
                ApiError::refused(refusal, parent.as_deref())
            }
            InputError::KeyConflict => {
                ApiError::conflict("idempotency-conflict", error.to_string())
            }
            InputError::WroteNothing => ApiError::conflict("session-conflict", error.to_string()),
            InputError::NotQueued(_) => {
                ApiError::new(StatusCode::NOT_FOUND, "queue-item-not-found", error.to_string())
            }
            InputError::SteerUnavailable(_) => {
                ApiError::conflict("steer-unavailable", error.to_string())
            }
            InputError::NotWaiting(_) => ApiError::conflict("not-waiting", error.to_string()),
            InputError::NoSuchCall { .. } => {
                ApiError::not_found("tool-call-not-found", error.to_string())
            }
        }
    }
}

impl From<RegistryError> for ApiError {
    fn from(error: RegistryError) -> Self {
        match error {
            RegistryError::NotFound(id) => ApiError::session_not_found(&id),
            RegistryError::Disposed(_) => {
                ApiError::new(StatusCode::CONFLICT, "session-disposed", error.to_string())
            }
            RegistryError::BadSpec { field, message } => ApiError::bad_request(field, message),
            RegistryError::Unusable { .. } => {
                ApiError::new(StatusCode::CONFLICT, "session-unusable", error.to_string())
            }
            RegistryError::BadId(_) => ApiError::bad_request("sessionId", error.to_string()),
            RegistryError::NotLogged { .. } => {
                ApiError::conflict("seq-not-logged", error.to_string())
            }
            RegistryError::Taken(_) => ApiError::conflict("session-conflict", error.to_string()),
            RegistryError::Elsewhere { .. } => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "session-moving", error.to_string())
                    .retry_after(1)
            }
            RegistryError::NoWorkspaces => ApiError::not_found("no-workspaces", error.to_string()),
            RegistryError::Store(e) => e.into(),
            RegistryError::Session(e) => e.into(),
            RegistryError::Exceeded(e) => e.into(),
        }
    }
}

/// The longest request target the API reads.
const MAX_URI: usize = 8 << 10;
/// The most header bytes (names and values) the API reads.
const MAX_HEADERS: usize = 32 << 10;

/// Refuses, in the shared error shape, a request whose target or headers are too long (HTTP's
/// own refusals of these have no body).
pub async fn refuse_oversized(request: Request, next: axum::middleware::Next) -> Response {
    let uri = request.uri().path().len() + request.uri().query().map_or(0, |q| q.len() + 1);
    if uri > MAX_URI {
        let message = format!(
            "the request target is {uri} bytes, over the {MAX_URI} allowed; send less in the query"
        );
        return ApiError::new(StatusCode::URI_TOO_LONG, "uri-too-long", message).into_response();
    }
    let headers: usize =
        request.headers().iter().map(|(name, value)| name.as_str().len() + value.len()).sum();
    if headers > MAX_HEADERS {
        let message = format!(
            "the request headers are {headers} bytes, over the {MAX_HEADERS} allowed; send fewer or shorter ones"
        );
        return ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers-too-large",
            message,
        )
        .into_response();
    }
    next.run(request).await
}

/// 405 `method-not-allowed`: the path exists, not with this method.
pub async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        "this path does not take that method; see /openapi.json for the ones it takes",
    )
}

/// Query parameters: a value that does not fit is 400 `bad-request` in the shared error shape.
pub struct QueryParams<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> axum::extract::FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or_default();
        let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize(de).map(QueryParams).map_err(|e| {
            let field = e.path().to_string();
            ApiError::bad_request(
                if field == "." { "query" } else { &field },
                format!("the query is not valid: {}", e.inner()),
            )
        })
    }
}

/// A JSON body: a body that is not `application/json` is 415, bad JSON is 400 naming where, a body
/// over the limit is 413, one that does not arrive in time is 408, and no body at all counts as
/// `{}`.
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        json_body(req, state, false).await.map(JsonBody)
    }
}

/// A [`JsonBody`] that must be sent: no body at all is 400 (`{}` is a body), for a request whose
/// empty body would mean something nobody should get by accident.
pub struct RequiredJsonBody<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for RequiredJsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        json_body(req, state, true).await.map(RequiredJsonBody)
    }
}

/// Reads a JSON body (see [`JsonBody`]); with `required`, no body at all is 400.
async fn json_body<T: DeserializeOwned>(
    req: Request,
    state: &AppState,
    required: bool,
) -> Result<T, ApiError> {
    let content_type = req.headers().get(header::CONTENT_TYPE).cloned();
    let within = state.body_timeout;
    let read = tokio::time::timeout(within, Bytes::from_request(req, state)).await;
    let read = read.map_err(|_| {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "request-timeout",
            format!(
                "the request body did not arrive within {} s; send it at once",
                within.as_secs()
            ),
        )
    })?;
    let bytes = read.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload-too-large",
                "the request body is over the size limit; send less, or raise --max-body",
            )
        } else {
            ApiError::bad_request(
                "body",
                format!("the request body could not be read: {rejection}"),
            )
        }
    })?;
    let is_json = content_type
        .as_ref()
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"));
    if !bytes.is_empty() && !is_json {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "the request body must be JSON; send it with `content-type: application/json`",
        ));
    }
    if required && bytes.is_empty() {
        let message = "the request needs a JSON body; send `{}` to mean none of its fields";
        return Err(ApiError::bad_request("body", message));
    }
    let body: &[u8] = if bytes.is_empty() { b"{}" } else { &bytes };
    // Every body is an object: serde would also read a struct from a list of its fields.
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ApiError::bad_request("body", "the request body must be a JSON object"));
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let field = e.path().to_string();
        ApiError::bad_request(
            if field == "." { "body" } else { &field },
            format!("the request body is not valid: {}", e.inner()),
        )
    })
}
