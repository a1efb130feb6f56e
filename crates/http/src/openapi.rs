//! `GET /openapi.json`: the OpenAPI 3.1 document of the API, generated from the handlers.
//!
//! Each handler carries a `#[utoipa::path]`; each route module registers it with utoipa-axum's
//! `routes!`, which takes the route's path from that annotation, so the router and the document
//! cannot disagree. [`router`] starts the document with what belongs to no single handler (title,
//! tags, the error body); [`serve`] hands the finished document, serialized once, to its route.
//!
//! Types from `airlock-core` have no schemas of their own: [`crate::schema`] writes out the few
//! the document shows.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::IntoResponse;
use axum::{Extension, Router};
use serde_json::{Value, json};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::responses::errors;
use super::{AppState, ErrorBody};

/// What the document says about the API as a whole.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Airlock gateway",
        description = "Sessions of an agent over HTTP. Every input that changes a session is \
            enqueue-only: it is answered once it is durable. Every error answers \
            `{\"error\": {code, message, details}}`."
    ),
    tags(
        (name = "sessions", description = "Create, list, read and dispose sessions."),
        (name = "input", description = "Messages, receipts, the queue and cancel."),
        (name = "runs", description = "Owned runs: a message and the result of the interval \
            it starts, through the next whole-agent idle."),
        (name = "observation", description = "A session's log as SSE or JSON pages, and the \
            cross-session stream."),
        (name = "usage", description = "What sessions spent: tokens by model, and their cost."),
        (name = "files", description = "A session's workspace: the files its code tools wrote, \
            and those a client uploads for them."),
        (name = "webhooks", description = "Subscriptions that are told, signed, what a tenant's \
            sessions did: idle, waiting for a person, failed, a run completed, a turn ended."),
        (name = "schedules", description = "Messages sent to a session at each due time of a \
            cron expression, without a client asking."),
        (name = "protocols", description = "Other protocols' faces over the same sessions: \
            AG-UI, and A2A's agent card (its JSON-RPC binding, at `POST /a2a`, is one URL for \
            every method and is not listed; `docs/interfaces.md`)."),
        (name = "service", description = "Health, readiness and this document."),
    ),
    components(schemas(ErrorBody))
)]
struct ApiDoc;

/// The document, serialized once when the router is built: as a gateway without keys serves it,
/// and as one with keys does (with its security schemes).
#[derive(Clone)]
struct Document {
    open: Bytes,
    keyed: Bytes,
}

/// The routes of this module, with the document's title, tags and shared schemas.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi()).routes(routes!(openapi_json))
}

/// Gives the finished document to `GET /openapi.json`, fitted to this gateway: the tools it
/// has and the models it can run.
pub fn serve(
    router: Router<AppState>,
    doc: &utoipa::openapi::OpenApi,
    state: &AppState,
) -> Router<AppState> {
    let mut json = serde_json::to_value(doc).expect("an OpenAPI document serializes");
    plain_parameters(&mut json);
    add_schemas(&mut json);
    drop_null_alternatives(&mut json);
    required_bodies(&mut json);
    link(&mut json);
    guarded(&mut json);
    let tools: Vec<String> = state.sessions.tools().specs().into_iter().map(|t| t.name).collect();
    fit(&mut json, &tools, &airlock_providers::model::name_pattern());
    if state.metrics.key.is_some() {
        metrics_secured(&mut json);
    }
    let open = Bytes::from(serde_json::to_vec(&json).expect("JSON serializes"));
    secured(&mut json);
    let keyed = Bytes::from(serde_json::to_vec(&json).expect("JSON serializes"));
    router.layer(Extension(Document { open, keyed }))
}

/// Who may call, for a gateway with keys: every keyed operation (`/v1` and the other protocols'
/// faces) takes an API key as a bearer token, as `x-api-key` (LangGraph's SDK sends it so) or
/// the browser's sign-in cookie (`POST /v1/login` takes the key alone).
fn secured(doc: &mut Value) {
    doc["components"]["securitySchemes"]["apiKey"] = json!({
        "type": "http",
        "scheme": "bearer",
        "description": "An API key from `airlock keys create`.",
    });
    doc["components"]["securitySchemes"]["apiKeyHeader"] = json!({
        "type": "apiKey",
        "in": "header",
        "name": "x-api-key",
        "description": "An API key from `airlock keys create`, as LangGraph's SDK sends it.",
    });
    doc["components"]["securitySchemes"]["signIn"] = json!({
        "type": "apiKey",
        "in": "cookie",
        "name": super::access::LOGIN_COOKIE,
        "description": "The sign-in token `POST /v1/login` sets for a browser page.",
    });
    for (path, operation) in operations(doc) {
        if !super::access::KEYED.iter().any(|prefix| path.starts_with(prefix)) {
            continue;
        }
        let login = operation.get("operationId").is_some_and(|id| id == "login");
        operation.insert(
            "security".to_owned(),
            match login {
                true => json!([{"apiKey": []}]),
                false => json!([{"apiKey": []}, {"apiKeyHeader": []}, {"signIn": []}]),
            },
        );
    }
}

/// `/metrics` takes the metrics key (`--metrics-key`) as a bearer token.
fn metrics_secured(doc: &mut Value) {
    doc["components"]["securitySchemes"]["metricsKey"] = json!({
        "type": "http",
        "scheme": "bearer",
        "description": "The gateway's metrics key (`--metrics-key`).",
    });
    for (path, operation) in operations(doc) {
        if path == "/metrics" {
            operation.insert("security".to_owned(), json!([{"metricsKey": []}]));
        }
    }
}

/// Writes a route's catch-all parameter (axum's `{*path}`, which takes `/`s too) as OpenAPI's
/// plain `{path}`.
fn plain_parameters(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    let catch_all: Vec<String> = paths.keys().filter(|p| p.contains("{*")).cloned().collect();
    for path in catch_all {
        let item = paths.remove(&path).expect("the path was listed");
        paths.insert(path.replace("{*", "{"), item);
    }
}

/// Adds the schemas written out in [`crate::schema`] (the log's events, the streams' frames),
/// which the derived ones refer to by name.
fn add_schemas(doc: &mut Value) {
    let schemas = doc.pointer_mut("/components/schemas").and_then(Value::as_object_mut);
    let schemas = schemas.expect("the document has schemas");
    for (name, schema) in crate::schema::components() {
        let taken = schemas.insert(name.clone(), schema);
        assert!(taken.is_none(), "two schemas are named {name}");
    }
}

/// An answer that names what other operations take, as OpenAPI links.
struct Links {
    /// The operation and the status of its answer.
    from: (&'static str, &'static str),
    /// The operations it links to.
    to: &'static [&'static str],
    /// Their parameters, each with where it comes from.
    parameters: &'static [(&'static str, &'static str)],
}

const LINKS: [Links; 3] = [
    Links {
        from: ("createSession", "201"),
        to: &[
            "getSession",
            "disposeSession",
            "getSessionStatus",
            "sendMessage",
            "getQueue",
            "cancelSession",
            "compactSession",
            "runInSession",
            "listChildren",
            "getSessionEvents",
            "setGoal",
            "listToolCalls",
            "forkSession",
        ],
        parameters: &[("id", "$response.body#/sessionId")],
    },
    Links {
        from: ("sendMessage", "202"),
        to: &["getReceipt"],
        parameters: &[("id", "$request.path.id"), ("message_id", "$response.body#/messageId")],
    },
    Links {
        from: ("setGoal", "200"),
        to: &["getGoal", "pauseGoal", "resumeGoal", "completeGoal", "clearGoal"],
        parameters: &[("id", "$request.path.id")],
    },
];

/// Writes [`LINKS`] into the document's responses.
fn link(doc: &mut Value) {
    for (_, operation) in operations(doc) {
        let id = operation.get("operationId").and_then(Value::as_str).unwrap_or_default();
        let id = id.to_owned();
        for links in LINKS.iter().filter(|links| links.from.0 == id) {
            let parameters: serde_json::Map<String, Value> = links
                .parameters
                .iter()
                .map(|(name, from)| (name.to_string(), json!(from)))
                .collect();
            let to: serde_json::Map<String, Value> = links
                .to
                .iter()
                .map(|&to| (to.to_owned(), json!({"operationId": to, "parameters": parameters})))
                .collect();
            if let Some(responses) = operation.get_mut("responses") {
                responses[links.from.1]["links"] = Value::Object(to);
            }
        }
    }
}

/// What `access::guard` answers before any route: 403 on every route (a foreign `Host` to a
/// gateway without keys, a cross-origin change), 401 on every `/v1` route (no valid key, once
/// the gateway has keys) and 503 (the store could not say whether it has keys). Written here
/// once rather than on each route.
fn guarded(doc: &mut Value) {
    let forbidden = "`forbidden-host` (a gateway without keys answers only loopback names) or \
        `cross-origin` (a page elsewhere may not change anything)";
    let unauthorized = "`unauthorized`: no API key, or one that is not valid or was revoked";
    let every = serde_json::to_value(errors(&[("403", forbidden)])).expect("responses serialize");
    let keyed = serde_json::to_value(errors(&[("403", forbidden), ("401", unauthorized)]))
        .expect("responses serialize");
    for (path, operation) in operations(doc) {
        let guard = if path.starts_with("/v1/") { &keyed } else { &every };
        let Some(responses) = operation.get_mut("responses").and_then(Value::as_object_mut) else {
            continue;
        };
        for (status, response) in guard.as_object().into_iter().flatten() {
            responses.entry(status.clone()).or_insert_with(|| response.clone());
        }
    }
}

/// Every operation of the document, with its path.
fn operations(
    doc: &mut Value,
) -> impl Iterator<Item = (&str, &mut serde_json::Map<String, Value>)> {
    let paths = doc.get_mut("paths").and_then(Value::as_object_mut).into_iter().flatten();
    paths.flat_map(|(path, item)| {
        let operations = item.as_object_mut().into_iter().flat_map(|item| item.values_mut());
        operations.filter_map(Value::as_object_mut).map(move |operation| (path.as_str(), operation))
    })
}

/// Narrows what a new session may name to what this gateway has: its tools (none: `tools` must
/// be empty; a client tool may not take one's name) and the models it can run.
fn fit(doc: &mut Value, tools: &[String], model_pattern: &str) {
    let schemas = &mut doc["components"]["schemas"];
    match tools {
        [] => schemas["CreateBody"]["properties"]["tools"]["maxItems"] = json!(0),
        names => {
            schemas["ToolChoice"]["oneOf"][0]["enum"] = json!(names);
            schemas["ToolPolicy"]["properties"]["name"]["enum"] = json!(names);
            schemas["ClientTool"]["properties"]["name"]["not"] = json!({"enum": names});
        }
    }
    schemas["CreateBody"]["properties"]["model"]["pattern"] = json!(model_pattern);
    schemas["NewRunBody"]["properties"]["model"]["pattern"] = json!(model_pattern);
}

/// utoipa writes an `Option<T>` parameter or request body as "`T` or `null`". For a header, a
/// query parameter or a body that may be left out, `required: false` already says so, and `null`
/// is not something a client may send: drop it.
fn drop_null_alternatives(doc: &mut Value) {
    for (_, operation) in operations(doc) {
        let optional = |v: &Value| v.get("required") != Some(&Value::Bool(true));
        for param in
            operation.get_mut("parameters").and_then(Value::as_array_mut).into_iter().flatten()
        {
            if optional(param)
                && let Some(Value::Array(types)) = param.pointer_mut("/schema/type")
            {
                types.retain(|t| t != "null");
                if let [only] = types.as_slice() {
                    param["schema"]["type"] = only.clone();
                }
            }
        }
        let Some(body) = operation.get_mut("requestBody").filter(|b| optional(b)) else { continue };
        for media in body
            .get_mut("content")
            .and_then(Value::as_object_mut)
            .into_iter()
            .flat_map(|c| c.values_mut())
        {
            if let Some(Value::Array(alternatives)) = media.pointer_mut("/schema/oneOf") {
                alternatives.retain(|a| a.get("type") != Some(&Value::from("null")));
                if let [only] = alternatives.as_slice() {
                    media["schema"] = only.clone();
                }
            }
        }
    }
}

/// A body whose schema requires a field cannot be left out: says so where utoipa cannot (a body
/// given by reference to a schema written out in `schema/`).
fn required_bodies(doc: &mut Value) {
    let schemas = doc.pointer("/components/schemas").cloned().unwrap_or_default();
    for (_, operation) in operations(doc) {
        let Some(body) = operation.get_mut("requestBody") else { continue };
        let schema = body.pointer("/content/application~1json/schema").unwrap_or(&Value::Null);
        let schema = match schema["$ref"].as_str() {
            Some(name) => &schemas[name.trim_start_matches("#/components/schemas/")],
            None => schema,
        };
        if schema["required"].as_array().is_some_and(|required| !required.is_empty()) {
            body["required"] = Value::Bool(true);
        }
    }
}

/// This document.
#[utoipa::path(
    get, path = "/openapi.json", operation_id = "getOpenApi", tag = "service",
    responses((status = 200, description = "This OpenAPI document", body = Object))
)]
async fn openapi_json(
    State(state): State<AppState>,
    Extension(doc): Extension<Document>,
) -> impl IntoResponse {
    let doc = if state.access.known_keys() { doc.keyed } else { doc.open };
    ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], doc)
}
