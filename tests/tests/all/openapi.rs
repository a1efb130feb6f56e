//! `GET /openapi.json`: a valid OpenAPI 3 document, generated from the handlers, that covers every
//! route the router serves.

use std::collections::BTreeSet;

use airlock_tests::MockModel;
use airlock_tests::gateway::Gateway;
use oas3::spec::{ObjectOrReference, ParameterIn, Schema};
use serde_json::Value;

/// Every route `api::app` serves, as (method, path): keep in step with the route modules.
const ROUTES: &[(&str, &str)] = &[
    ("POST", "/v1/sessions"),
    ("POST", "/ag-ui"),
    ("GET", "/.well-known/agent-card.json"),
    ("GET", "/langgraph/info"),
    ("POST", "/langgraph/assistants/search"),
    ("GET", "/langgraph/assistants/{assistant_id}"),
    ("POST", "/langgraph/threads"),
    ("POST", "/langgraph/threads/search"),
    ("GET", "/langgraph/threads/{thread_id}"),
    ("GET", "/langgraph/threads/{thread_id}/state"),
    ("POST", "/langgraph/threads/{thread_id}/history"),
    ("POST", "/langgraph/threads/{thread_id}/runs/stream"),
    ("GET", "/langgraph/threads/{thread_id}/runs/{run_id}/stream"),
    ("POST", "/langgraph/threads/{thread_id}/runs/{run_id}/cancel"),
    ("GET", "/v1/sessions"),
    ("GET", "/v1/sessions/{id}"),
    ("PATCH", "/v1/sessions/{id}"),
    ("DELETE", "/v1/sessions/{id}"),
    ("GET", "/v1/sessions/{id}/status"),
    ("GET", "/v1/sessions/{id}/usage"),
    ("GET", "/v1/usage"),
    ("GET", "/v1/sessions/{id}/budget"),
    ("PATCH", "/v1/sessions/{id}/budget"),
    ("GET", "/v1/sessions/{id}/files"),
    ("GET", "/v1/sessions/{id}/files/{path}"),
    ("PUT", "/v1/sessions/{id}/files/{path}"),
    ("DELETE", "/v1/sessions/{id}/files/{path}"),
    ("POST", "/v1/sessions/{id}/messages"),
    ("GET", "/v1/sessions/{id}/messages/{message_id}"),
    ("GET", "/v1/sessions/{id}/queue"),
    ("PATCH", "/v1/sessions/{id}/queue/{message_id}"),
    ("DELETE", "/v1/sessions/{id}/queue/{message_id}"),
    ("POST", "/v1/sessions/{id}/queue/{message_id}/steer"),
    ("POST", "/v1/sessions/{id}/cancel"),
    ("POST", "/v1/sessions/{id}/compact"),
    ("POST", "/v1/sessions/{id}/runs"),
    ("POST", "/v1/runs"),
    ("POST", "/v1/login"),
    ("POST", "/v1/logout"),
    ("GET", "/v1/tools"),
    ("GET", "/v1/sessions/{id}/children"),
    ("GET", "/v1/sessions/{id}/tool-calls"),
    ("POST", "/v1/sessions/{id}/tool-calls/{call_id}/approve"),
    ("POST", "/v1/sessions/{id}/tool-calls/{call_id}/deny"),
    ("POST", "/v1/sessions/{id}/tool-calls/{call_id}/result"),
    ("POST", "/v1/sessions/{id}/fork"),
    ("PUT", "/v1/sessions/{id}/goal"),
    ("GET", "/v1/sessions/{id}/goal"),
    ("DELETE", "/v1/sessions/{id}/goal"),
    ("POST", "/v1/sessions/{id}/goal/pause"),
    ("POST", "/v1/sessions/{id}/goal/resume"),
    ("POST", "/v1/sessions/{id}/goal/complete"),
    ("GET", "/v1/sessions/{id}/events"),
    ("GET", "/v1/sessions/{id}/events/page"),
    ("GET", "/v1/events"),
    ("POST", "/v1/webhooks"),
    ("GET", "/v1/webhooks"),
    ("GET", "/v1/webhooks/{webhook_id}"),
    ("DELETE", "/v1/webhooks/{webhook_id}"),
    ("POST", "/v1/webhooks/{webhook_id}/resume"),
    ("POST", "/v1/schedules"),
    ("GET", "/v1/schedules"),
    ("GET", "/v1/schedules/{schedule_id}"),
    ("DELETE", "/v1/schedules/{schedule_id}"),
    ("POST", "/v1/schedules/{schedule_id}/pause"),
    ("POST", "/v1/schedules/{schedule_id}/resume"),
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),
    ("GET", "/openapi.json"),
];

#[tokio::test]
async fn openapi_json_is_valid_openapi_3_and_covers_every_route() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start().await;
    let gateway = Gateway::start(&dir.path().join("airlock.db"), &mock.base_url());

    let res = gateway.client.get(gateway.url("/openapi.json")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/json");
    let text = res.text().await.unwrap();
    let raw: Value = serde_json::from_str(&text).unwrap();
    assert!(raw["openapi"].as_str().unwrap().starts_with("3."), "openapi is {}", raw["openapi"]);

    // Structure: the document deserializes into the OpenAPI 3.1 model, and every `$ref` in it
    // names a schema it defines.
    let spec = oas3::from_json(&text).expect("the document is OpenAPI 3.1");
    spec.validate_version().expect("a supported OpenAPI version");
    let schemas = &spec.components.as_ref().expect("components").schemas;
    for reference in refs(&raw) {
        let name = reference.strip_prefix("#/components/schemas/").unwrap_or_else(|| {
            panic!("{reference} is not a local schema reference");
        });
        assert!(schemas.contains_key(name), "{reference} names no schema");
    }

    // Coverage: exactly the routes the router serves, each with its method.
    let expected: BTreeSet<(String, String)> =
        ROUTES.iter().map(|(m, p)| (m.to_string(), p.to_string())).collect();
    let documented: BTreeSet<(String, String)> =
        spec.operations().map(|(path, method, _)| (method.to_string(), path)).collect();
    let missing: Vec<_> = expected.difference(&documented).collect();
    assert!(missing.is_empty(), "routes missing from /openapi.json: {missing:?}");
    let unknown: Vec<_> = documented.difference(&expected).collect();
    assert!(unknown.is_empty(), "documented routes the test does not know: {unknown:?}");

    // And the list above is the router's: each route is served, not answered by the fallback.
    for (method, path) in ROUTES {
        let url = gateway.url(&path.replace("{id}", "nobody").replace("{message_id}", "nothing"));
        let method_ = method.parse::<reqwest::Method>().unwrap();
        let res = gateway.client.request(method_, url).send().await.unwrap();
        let status = res.status();
        assert_ne!(status, 405, "{method} {path} is not routed");
        if status == 404 {
            let body: Value = res.json().await.unwrap();
            assert_ne!(body["error"]["code"], "not-found", "{method} {path} is not routed");
        }
    }

    for (path, method, op) in spec.operations() {
        let name = format!("{method} {path}");
        // Every `{param}` of the path is a required path parameter.
        let params: Vec<_> = op.parameters.iter().map(|p| p.resolve(&spec).unwrap()).collect();
        for segment in path.split('/').filter_map(|s| s.strip_prefix('{')) {
            let param = segment.trim_end_matches('}');
            assert!(
                params.iter().any(|p| p.name == param
                    && p.location == ParameterIn::Path
                    && p.required == Some(true)),
                "{name}: no path parameter {param}"
            );
        }
        // Every error answer has the shared error body.
        let responses = op.responses.as_ref().unwrap_or_else(|| panic!("{name}: no responses"));
        assert!(!responses.is_empty(), "{name}: no responses");
        for (status, response) in responses {
            let response = response.resolve(&spec).unwrap();
            if status.starts_with('4') || status.starts_with('5') {
                let schema =
                    response.content.get("application/json").and_then(|m| m.schema.as_ref());
                assert!(
                    is_ref_to(schema, "#/components/schemas/ErrorBody"),
                    "{name}: {status} does not answer the error body"
                );
            }
        }
    }

    // The error body is `{error: {code, message, details}}`, all required.
    let error_body = &raw["components"]["schemas"]["ErrorBody"];
    assert_eq!(error_body["required"], serde_json::json!(["error"]));
    let detail = resolve(&raw, &error_body["properties"]["error"]);
    let mut required: Vec<_> =
        detail["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    required.sort();
    assert_eq!(required, ["code", "details", "message"]);

    // What http-api.md promises, spot-checked.
    let op = |method: &str, path: &str| &raw["paths"][path][method.to_lowercase()];
    let codes = |method: &str, path: &str| -> BTreeSet<String> {
        op(method, path)["responses"].as_object().unwrap().keys().cloned().collect()
    };
    let has = |method: &str, path: &str, want: &[&str]| {
        let got = codes(method, path);
        for code in want {
            assert!(got.contains(*code), "{method} {path} lacks {code}: has {got:?}");
        }
    };
    has("POST", "/v1/sessions", &["201", "200", "400", "409", "413", "415"]);
    has("GET", "/v1/sessions", &["200"]);
    has("GET", "/v1/sessions/{id}", &["200", "404"]);
    has("DELETE", "/v1/sessions/{id}", &["202", "404"]);
    has("POST", "/v1/sessions/{id}/messages", &["202", "400", "404", "409", "413", "415", "503"]);
    has("GET", "/v1/sessions/{id}/messages/{message_id}", &["200", "404"]);
    has("PATCH", "/v1/sessions/{id}/queue/{message_id}", &["200", "404", "409"]);
    has("DELETE", "/v1/sessions/{id}/queue/{message_id}", &["200", "404"]);
    has("POST", "/v1/sessions/{id}/queue/{message_id}/steer", &["200", "404", "409"]);
    has("POST", "/v1/sessions/{id}/cancel", &["202", "404", "409"]);
    has("GET", "/v1/sessions/{id}/events", &["200", "400", "404"]);

    let header = |method: &str, path: &str, name: &str| {
        op(method, path)["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|p| p["in"] == "header" && p["name"] == name)
    };
    assert!(header("POST", "/v1/sessions/{id}/messages", "Idempotency-Key"));
    assert!(header("GET", "/v1/sessions/{id}/events", "Last-Event-ID"));

    for path in ["/v1/sessions/{id}/events", "/v1/events"] {
        let content = &op("GET", path)["responses"]["200"]["content"];
        assert!(content.get("text/event-stream").is_some(), "{path} is not documented as SSE");
    }
    assert!(
        op("GET", "/v1/sessions/{id}/events")["responses"]["200"]["content"]
            .get("application/json")
            .is_some(),
        "the JSON page of the events route is not documented"
    );
    for (method, path) in [
        ("POST", "/v1/sessions"),
        ("POST", "/v1/sessions/{id}/messages"),
        ("PATCH", "/v1/sessions/{id}/queue/{message_id}"),
        ("POST", "/v1/sessions/{id}/cancel"),
        ("POST", "/v1/sessions/{id}/compact"),
        ("POST", "/v1/sessions/{id}/runs"),
        ("POST", "/v1/runs"),
    ] {
        let body = &op(method, path)["requestBody"]["content"]["application/json"]["schema"];
        assert!(!body.is_null(), "{method} {path} has no JSON request body");
    }

    drop(gateway);
}

/// `clients/openapi.json`: what the TypeScript client's types are generated from at its build, so
/// a fresh clone builds it without a running gateway.
const COMMITTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../clients/openapi.json");

#[tokio::test]
async fn the_committed_clients_openapi_json_is_what_a_plain_gateway_serves() {
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start_plain(&dir.path().join("airlock.db"));
    let served: Value = gateway.get("/openapi.json").await.1;
    let committed: Option<Value> =
        std::fs::read_to_string(COMMITTED).ok().and_then(|text| serde_json::from_str(&text).ok());
    if committed.as_ref() == Some(&served) {
        return;
    }
    if std::env::var_os("AIRLOCK_BLESS").is_some() {
        let text = serde_json::to_string_pretty(&served).unwrap() + "\n";
        std::fs::write(COMMITTED, text).unwrap();
        return;
    }
    panic!(
        "clients/openapi.json is not the document a plain gateway serves (the API changed): write \
         it anew with `AIRLOCK_BLESS=1 cargo test --test all openapi::the_committed`, and commit it"
    );
}

#[tokio::test]
async fn every_object_a_union_may_hold_is_a_named_schema_and_no_boolean_is_a_constant() {
    // What client generators choke on (openapi-python-client among them): an object written
    // inline in a `oneOf`/`anyOf` (they must invent its name, and two such names may collide) and
    // a boolean `const`. The generated clients themselves are checked in `generated_clients`.
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(&dir.path().join("airlock.db"), "http://127.0.0.1:9/v1");
    let doc: Value = gateway.get("/openapi.json").await.1;
    let mut found = Vec::new();
    unnamed_union_objects_and_boolean_constants(&doc, "#", &mut found);
    assert!(found.is_empty(), "what generated clients cannot take:\n{}", found.join("\n"));
}

/// Appends to `found` the path of each object schema written inline in a union, and of each
/// boolean `const`, under `value`.
fn unnamed_union_objects_and_boolean_constants(value: &Value, at: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for union in ["oneOf", "anyOf"] {
                let members = map.get(union).and_then(Value::as_array).into_iter().flatten();
                for (i, member) in members.enumerate() {
                    let object = member["type"] == "object" || member.get("properties").is_some();
                    if object {
                        found.push(format!("{at}/{union}/{i}: an object not named"));
                    }
                }
            }
            if map.get("const").is_some_and(Value::is_boolean) {
                found.push(format!("{at}: a boolean const"));
            }
            for (key, value) in map {
                unnamed_union_objects_and_boolean_constants(value, &format!("{at}/{key}"), found);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                unnamed_union_objects_and_boolean_constants(item, &format!("{at}/{i}"), found);
            }
        }
        _ => {}
    }
}

/// Whether `schema` is a reference to `target`.
fn is_ref_to(schema: Option<&Schema>, target: &str) -> bool {
    matches!(schema, Some(Schema::Object(object))
        if matches!(object.as_ref(), ObjectOrReference::Ref { ref_path, .. } if ref_path == target))
}

/// Every `$ref` string in a JSON document.
fn refs(value: &Value) -> Vec<String> {
    match value {
        Value::Object(map) => map
            .iter()
            .flat_map(|(key, value)| match (key.as_str(), value) {
                ("$ref", Value::String(r)) => vec![r.clone()],
                _ => refs(value),
            })
            .collect(),
        Value::Array(items) => items.iter().flat_map(refs).collect(),
        _ => Vec::new(),
    }
}

/// `schema`, or the component schema it refers to.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str().and_then(|r| r.strip_prefix("#/components/schemas/")) {
        Some(name) => &doc["components"]["schemas"][name],
        None => schema,
    }
}
