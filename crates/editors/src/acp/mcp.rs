//! The MCP servers an ACP client names in `session/new` and `session/load`: started, and their
//! tools given to that session alone, for as long as this process runs it. Stdio and
//! streamable-HTTP servers are taken (the capabilities say `http`); SSE servers, a relative
//! `cwd` and a server that does not start are invalid params, naming the cause.

use std::path::Path;

use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{McpCapabilities, McpServer as AcpServer};
use serde_json::json;

use airlock_providers::mcp::{McpServer, McpSource};
use airlock_sessions::Sessions;

/// What the agent says it takes.
pub(super) fn capabilities() -> McpCapabilities {
    McpCapabilities::new().http(true)
}

/// Checks `cwd`, starts `servers` and gives their tools to `session_id` (when there are any).
pub(super) async fn attach(
    sessions: &Sessions,
    session_id: &str,
    cwd: &Path,
    servers: Vec<AcpServer>,
) -> Result<(), Error> {
    if !cwd.is_absolute() {
        let message = format!("cwd must be an absolute path; got {:?}", cwd.display());
        return Err(invalid(message));
    }
    if servers.is_empty() {
        return Ok(());
    }
    let mut tools = Vec::new();
    for server in servers {
        let server = converted(server).map_err(invalid)?;
        let started = airlock_providers::mcp::connect(&server).await;
        tools.extend(started.map_err(|e| invalid(e.to_string()))?);
    }
    sessions.attach_tools(session_id, tools).map_err(invalid)
}

/// An ACP server description as this gateway's.
fn converted(server: AcpServer) -> Result<McpServer, String> {
    match server {
        AcpServer::Stdio(stdio) => {
            let argv = std::iter::once(stdio.command.display().to_string()).chain(stdio.args);
            let env = stdio.env.into_iter().map(|v| (v.name, v.value)).collect();
            McpServer::new(&stdio.name, McpSource::Command { argv: argv.collect(), env })
        }
        AcpServer::Http(http) => {
            let headers = http.headers.into_iter().map(|h| (h.name, h.value)).collect();
            McpServer::new(&http.name, McpSource::Url { url: http.url, headers })
        }
        AcpServer::Sse(sse) => Err(format!(
            "MCP server {:?} uses SSE, which this agent does not take (its capabilities say \
             http only); serve it over streamable HTTP or stdio",
            sse.name
        )),
        _ => Err("this kind of MCP server is not supported; use stdio or streamable HTTP".into()),
    }
}

fn invalid(message: String) -> Error {
    Error::invalid_params().data(json!(message))
}
