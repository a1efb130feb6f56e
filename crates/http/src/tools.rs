//! `GET /v1/tools`: every tool a session's model may be given, built-in and plugin.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;

/// `/v1/tools` (path in the annotation).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list))
}

/// A tool, as a session's `tools` field names it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ToolView {
    name: String,
    description: String,
    /// JSON Schema of the arguments.
    #[schema(value_type = Object)]
    parameters: Value,
    /// Whether calls may run alongside other parallel-safe calls.
    parallel_safe: bool,
    /// `builtin`, `plugin:<name>` or `mcp:<server>`.
    origin: String,
}

/// The tools.
#[derive(Serialize, ToSchema)]
struct ToolList {
    /// By name.
    items: Vec<ToolView>,
}

/// Lists every tool with its JSON Schema; create a session with `tools: [names]` to offer only
/// some of them to its model.
#[utoipa::path(
    get, path = "/v1/tools", operation_id = "listTools", tag = "sessions",
    responses((status = 200, description = "Every tool", body = ToolList))
)]
async fn list(State(state): State<AppState>) -> Json<ToolList> {
    let items = state
        .sessions
        .tools()
        .tools()
        .map(|tool| {
            let spec = tool.spec();
            ToolView {
                parameters: serde_json::from_str(&spec.parameters)
                    .unwrap_or(Value::String(spec.parameters)),
                name: spec.name,
                description: spec.description,
                parallel_safe: spec.parallel_safe,
                origin: tool.origin(),
            }
        })
        .collect();
    Json(ToolList { items })
}
