//! MCP tool sources: the tools of Model Context Protocol servers, reached through the official
//! Rust SDK (`rmcp`), join a session's registry beside the built-in and plugin tools.
//!
//! A server is named and is either a command (stdio: `NAME=COMMAND ARG…`, split as a shell
//! would) or a URL (streamable HTTP: `NAME=http://…`). Its tools are offered as
//! `NAME__TOOL`, since OpenAI-compatible APIs allow only `[a-zA-Z0-9_-]{1,64}` in tool names
//! (other characters become `_`).
//!
//! **Trust.** A plugin runs in a sandbox that grants it only what its manifest names. An MCP
//! server is not sandboxed: a command runs with every right of the user who started Airlock,
//! and a URL is a service Airlock sends the model's arguments to. Airlock bounds only what it
//! sees, with the plugins' error codes: a call past [`CALL_TIMEOUT`] is `TIMEOUT`, a result
//! over [`MAX_OUTPUT`] bytes `OUTPUT_TOO_LARGE`, arguments that are not a JSON object
//! `BAD_ARGUMENTS`, and a result the server marks as an error, or a server that exited or
//! cannot be reached, `FAILED`. A call never waits on a dead server.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use airlock_core::{ContentBlock, ToolSpec};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{ClientInitializeError, Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ServiceError, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;

use crate::tools::{self, Tool, ToolContext, ToolFuture, ToolOutput};

/// The longest a tool call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// The most bytes of text and image data a result may hold (as a plugin's default).
pub const MAX_OUTPUT: usize = 1 << 20;
/// The longest a server may take to start and answer `initialize` and `tools/list`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// An MCP server to take tools from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpServer {
    /// Prefixes its tools' names: `[a-zA-Z0-9_-]`, 1 to 32 characters.
    pub name: String,
    /// How to reach it.
    pub source: McpSource,
}

/// Where an MCP server is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpSource {
    /// A program speaking MCP on its stdin and stdout.
    Command {
        /// The program and its arguments.
        argv: Vec<String>,
        /// Variables set for it, beside the gateway's own.
        env: Vec<(String, String)>,
    },
    /// A streamable-HTTP endpoint.
    Url {
        /// Where it is.
        url: String,
        /// Headers sent with every request (e.g. `Authorization`).
        headers: Vec<(String, String)>,
    },
}

impl McpServer {
    /// A server named `name`, after checking the name.
    pub fn new(name: &str, source: McpSource) -> Result<McpServer, String> {
        let valid = (1..=32).contains(&name.len()) && name.chars().all(tools::name_char);
        if !valid {
            return Err(format!(
                "MCP server name {name:?} must be 1 to 32 letters, digits, `_` or `-` (it \
                 prefixes the tool names)"
            ));
        }
        match &source {
            McpSource::Command { argv, .. } if argv.is_empty() => {
                Err(format!("MCP server {name:?} has an empty command"))
            }
            _ => Ok(McpServer { name: name.to_owned(), source }),
        }
    }

    /// `NAME=COMMAND ARG…` or `NAME=http(s)://…`, as `--mcp` takes it.
    pub fn parse(spec: &str) -> Result<McpServer, String> {
        let (name, rest) = spec.split_once('=').ok_or_else(|| {
            format!(
                "{spec:?} is not an MCP server: give NAME=COMMAND ARG… (stdio) or NAME=http://… \
                 (streamable HTTP)"
            )
        })?;
        let rest = rest.trim();
        if rest.starts_with("http://") || rest.starts_with("https://") {
            return McpServer::new(
                name,
                McpSource::Url { url: rest.to_owned(), headers: Vec::new() },
            );
        }
        let argv = shlex::split(rest)
            .ok_or_else(|| format!("MCP server {name:?}: cannot split the command {rest:?}"))?;
        McpServer::new(name, McpSource::Command { argv, env: Vec::new() })
    }
}

/// Why an MCP server's tools could not be had.
#[derive(Debug, thiserror::Error)]
#[error("MCP server {server:?}: {message}")]
pub struct McpError {
    /// The server's name.
    pub server: String,
    /// What went wrong, and what to do.
    pub message: String,
}

/// Starts or reaches `server` and answers its tools; they keep the connection open while any
/// of them lives, and a command's process ends with the last of them.
pub async fn connect(server: &McpServer) -> Result<Vec<Arc<dyn Tool>>, McpError> {
    let failed = |message: String| McpError { server: server.name.clone(), message };
    let started = tokio::time::timeout(CONNECT_TIMEOUT, start(server)).await;
    let service = started
        .map_err(|_| failed(format!("did not answer within {}s", CONNECT_TIMEOUT.as_secs())))?
        .map_err(failed)?;
    let listed = tokio::time::timeout(CONNECT_TIMEOUT, service.peer().list_all_tools()).await;
    let listed = listed
        .map_err(|_| failed("did not list its tools in time".into()))?
        .map_err(|e| failed(format!("could not list its tools: {}", service_error(&e))))?;
    let connection = Arc::new(Connection { server: server.name.clone(), service });
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    for tool in listed {
        let Some(name) = offered_name(&server.name, &tool.name) else {
            tracing::warn!(server = %server.name, tool = %tool.name, "an MCP tool whose name makes a tool name over 64 characters is left out");
            continue;
        };
        let spec = ToolSpec {
            name,
            description: tool.description.as_deref().unwrap_or_default().to_owned(),
            parameters: Value::Object((*tool.input_schema).clone()).to_string(),
            parallel_safe: tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true),
            ..ToolSpec::default()
        };
        tools.push(Arc::new(McpTool {
            connection: connection.clone(),
            remote: tool.name.into(),
            spec,
        }));
    }
    Ok(tools)
}

/// The client side of a connection to `server`.
async fn start(server: &McpServer) -> Result<RunningService<RoleClient, ()>, String> {
    match &server.source {
        McpSource::Command { argv, env } => {
            let mut command = tokio::process::Command::new(&argv[0]);
            command.args(&argv[1..]).envs(env.iter().map(|(k, v)| (k, v)));
            let (transport, stderr) =
                TokioChildProcess::builder(command).stderr(Stdio::piped()).spawn().map_err(
                    |e| format!("cannot start `{}`: {e}; is it installed and on PATH?", argv[0]),
                )?;
            if let Some(stderr) = stderr {
                tokio::spawn(forward(server.name.clone(), stderr));
            }
            let started = ().serve(transport).await;
            started.map_err(|e| format!("did not start as an MCP server: {}", not_started(&e)))
        }
        McpSource::Url { url, headers } => {
            crate::model::install_tls();
            let mut sent = reqwest::header::HeaderMap::new();
            for (name, value) in headers {
                let header = reqwest::header::HeaderName::try_from(name.as_str());
                let value = reqwest::header::HeaderValue::try_from(value.as_str());
                let (Ok(header), Ok(value)) = (header, value) else {
                    return Err(format!("the header {name:?} is not a valid HTTP header"));
                };
                sent.insert(header, value);
            }
            let client = reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(10))
                .default_headers(sent)
                .build()
                .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
            let config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            let transport = StreamableHttpClientTransport::with_client(client, config);
            let started = ().serve(transport).await;
            started
                .map_err(|e| format!("{url} did not answer as an MCP server: {}", not_started(&e)))
        }
    }
}

/// Why a server did not start, in words a person acts on. rmcp's own messages name its
/// transport's Rust type and dump the messages it got as Rust values.
fn not_started(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::TransportError { error, .. } if closed(&*error.error) => {
            CLOSED.into()
        }
        ClientInitializeError::TransportError { error, .. } => causes(&*error.error),
        ClientInitializeError::ConnectionClosed(_) => CLOSED.into(),
        ClientInitializeError::ExpectedInitResponse(_)
        | ClientInitializeError::ExpectedInitResult(_) => {
            "its answer to `initialize` was not an MCP initialize result".into()
        }
        ClientInitializeError::JsonRpcError(refused) => {
            format!("it refused `initialize`: {}", refused.message)
        }
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => not_started(fallback),
        other => other.to_string(),
    }
}

const CLOSED: &str = "it closed the connection before answering `initialize` (did it exit? run \
    it by hand to see what it says)";

/// Whether `error` is a pipe to a process that closed its end (it exited).
fn closed(error: &(dyn std::error::Error + 'static)) -> bool {
    let io = error.downcast_ref::<std::io::Error>();
    io.is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

/// A failed request to a running server, in words (see [`not_started`]).
fn service_error(error: &ServiceError) -> String {
    match error {
        ServiceError::McpError(refused) => refused.message.to_string(),
        ServiceError::TransportSend(error) => causes(&*error.error),
        other => other.to_string(),
    }
}

/// An error and its causes, each said once: `error sending request for url (…): tcp connect
/// error: Connection refused (os error 111)`.
fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut said: Vec<String> = Vec::new();
    // The HTTP transport's client error holds reqwest's, whose causes say what failed.
    let client = error.downcast_ref::<StreamableHttpError<reqwest::Error>>();
    let mut next = match client {
        Some(StreamableHttpError::Client(inner)) => {
            Some(inner as &(dyn std::error::Error + 'static))
        }
        _ => Some(error),
    };
    while let Some(error) = next {
        let text = error.to_string();
        if !said.last().is_some_and(|last| last.contains(&text)) {
            said.push(text);
        }
        next = error.source();
    }
    said.join(": ")
}

/// A server's stderr, line by line, into the gateway's log.
async fn forward(server: String, stderr: tokio::process::ChildStderr) {
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(server = %server, "mcp server: {line}");
    }
}

/// `SERVER__TOOL`, with what an OpenAI-compatible API refuses made `_`; `None` past 64.
fn offered_name(server: &str, tool: &str) -> Option<String> {
    let tool: String = tool.chars().map(|c| if tools::name_char(c) { c } else { '_' }).collect();
    let name = format!("{server}__{tool}");
    (name.len() <= tools::NAME_MOST).then_some(name)
}

/// One server's connection, shared by its tools.
struct Connection {
    server: String,
    service: RunningService<RoleClient, ()>,
}

/// A tool of an MCP server.
struct McpTool {
    connection: Arc<Connection>,
    /// Its name on the server.
    remote: String,
    spec: ToolSpec,
}

impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn origin(&self) -> String {
        format!("mcp:{}", self.connection.server)
    }

    fn call(&self, _context: ToolContext, arguments: &str) -> ToolFuture {
        let server = self.connection.server.clone();
        let arguments = match arguments_of(arguments) {
            Ok(arguments) => arguments,
            Err(bad) => return Box::pin(std::future::ready(bad)),
        };
        let peer: Peer<RoleClient> = self.connection.service.peer().clone();
        let params = CallToolRequestParams::new(self.remote.clone()).with_arguments(arguments);
        Box::pin(async move {
            if peer.is_transport_closed() {
                return not_running(&server);
            }
            match tokio::time::timeout(CALL_TIMEOUT, peer.call_tool(params)).await {
                Err(_) => ToolOutput::error(
                    "TIMEOUT",
                    format!(
                        "MCP server {server} did not answer within {}s",
                        CALL_TIMEOUT.as_secs()
                    ),
                ),
                Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                    not_running(&server)
                }
                Ok(Err(e)) => ToolOutput::error(
                    "FAILED",
                    format!("MCP server {server}: {}", service_error(&e)),
                ),
                Ok(Ok(result)) => {
                    let failed = result.is_error == Some(true);
                    output(
                        &server,
                        serde_json::to_value(&result.content).unwrap_or_default(),
                        failed,
                    )
                }
            }
        })
    }
}

/// The model's argument text as the JSON object MCP takes (`""` counts as `{}`).
fn arguments_of(text: &str) -> Result<serde_json::Map<String, Value>, ToolOutput> {
    if text.trim().is_empty() {
        return Ok(serde_json::Map::new());
    }
    match serde_json::from_str(text) {
        Ok(Value::Object(arguments)) => Ok(arguments),
        _ => Err(ToolOutput::error(
            "BAD_ARGUMENTS",
            format!("the arguments must be a JSON object; got {text:?}"),
        )),
    }
}

fn not_running(server: &str) -> ToolOutput {
    ToolOutput::error(
        "FAILED",
        format!(
            "MCP server {server} is not running (it exited or closed the connection); its tools \
             work again once the gateway is restarted"
        ),
    )
}

/// An MCP result's content blocks (as JSON) as this gateway's content: text and images as they
/// are, anything else (audio, resources, links) as its JSON text.
fn output(server: &str, content: Value, failed: bool) -> ToolOutput {
    let blocks = content.as_array().cloned().unwrap_or_default();
    let content: Vec<ContentBlock> = blocks
        .into_iter()
        .map(|block| match (block["type"].as_str(), &block["text"], &block["data"]) {
            (Some("text"), Value::String(text), _) => ContentBlock::Text { text: text.clone() },
            (Some("image"), _, Value::String(data)) => ContentBlock::Image {
                media_type: block["mimeType"].as_str().unwrap_or("image/png").to_owned(),
                data: data.clone(),
            },
            _ => ContentBlock::Text { text: block.to_string() },
        })
        .collect();
    let size: usize = content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => text.len(),
            ContentBlock::Image { data, .. } => data.len(),
            _ => 0,
        })
        .sum();
    if size > MAX_OUTPUT {
        let message =
            format!("MCP server {server} returned {size} bytes; the limit is {MAX_OUTPUT}");
        return ToolOutput::error("OUTPUT_TOO_LARGE", message);
    }
    ToolOutput { content, error_code: failed.then(|| "FAILED".to_owned()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_is_a_command_split_like_a_shell_or_a_url() {
        let server = McpServer::parse("everything=npx -y '@mcp/server everything'").unwrap();
        let argv = ["npx", "-y", "@mcp/server everything"].map(String::from).to_vec();
        assert_eq!(server.source, McpSource::Command { argv, env: vec![] });
        let url = McpServer::parse("web=http://127.0.0.1:9/mcp").unwrap();
        let headers = vec![];
        assert_eq!(url.source, McpSource::Url { url: "http://127.0.0.1:9/mcp".into(), headers });
        assert!(McpServer::parse("no-equals-sign").unwrap_err().contains("NAME=COMMAND"));
        assert!(McpServer::parse("a.b=cmd").unwrap_err().contains("letters, digits"));
        assert!(McpServer::parse("empty=").unwrap_err().contains("empty command"));
    }

    #[test]
    fn tool_names_are_namespaced_and_fit_what_openai_compatible_apis_take() {
        assert_eq!(offered_name("everything", "echo").as_deref(), Some("everything__echo"));
        assert_eq!(offered_name("fs", "read.file v2").as_deref(), Some("fs__read_file_v2"));
        assert_eq!(offered_name("s", &"x".repeat(70)), None);
    }

    #[test]
    fn results_keep_text_and_images_and_name_what_is_over_the_limit() {
        let content = serde_json::json!([
            {"type": "text", "text": "hi"},
            {"type": "image", "data": "aGk=", "mimeType": "image/gif"},
            {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
        ]);
        let out = output("s", content, false);
        assert_eq!(out.error_code, None);
        assert_eq!(out.content[0], ContentBlock::Text { text: "hi".into() });
        assert!(
            matches!(&out.content[1], ContentBlock::Image { media_type, .. } if media_type == "image/gif")
        );
        assert!(matches!(&out.content[2], ContentBlock::Text { text } if text.contains("audio")));
        let failed = output("s", serde_json::json!([{"type": "text", "text": "no"}]), true);
        assert_eq!(failed.error_code.as_deref(), Some("FAILED"));
        let big = serde_json::json!([{"type": "text", "text": "x".repeat(MAX_OUTPUT + 1)}]);
        assert_eq!(output("s", big, false).error_code.as_deref(), Some("OUTPUT_TOO_LARGE"));
        assert_eq!(arguments_of("[1]").unwrap_err().error_code.as_deref(), Some("BAD_ARGUMENTS"));
        assert!(arguments_of("").unwrap().is_empty());
    }
}
