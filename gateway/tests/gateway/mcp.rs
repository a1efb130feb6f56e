//! MCP tool sources end to end, with a server nobody on this project wrote: the reference
//! `@modelcontextprotocol/server-everything` from npm (`tests/mcp`, pinned by its lockfile).
//!
//! Ignored by default because it needs Node.js and `npm ci --prefix tests/mcp`; `.ci/run`
//! installs it and runs `cargo test --workspace --test gateway -- --ignored mcp::`. The servers
//! that never start need nothing: those tests always run.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, McpServer, McpServerStdio, NewSessionRequest, PromptRequest,
    SessionUpdate, StopReason, ToolCallStatus,
};
use common::acp::Airlock;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The reference server's entry point, installed by `npm ci --prefix tests/mcp`.
fn everything() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp");
    let entry = root.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        entry.exists(),
        "run `npm ci --prefix tests/mcp` first ({} is missing)",
        entry.display()
    );
    entry
}

/// `--mcp` for the reference server, named `everything`.
fn everything_flag() -> String {
    format!("everything=node {} stdio", everything().display())
}

/// `airlock serve` with the demo model and the MCP server `mcp` (as `--mcp` takes it); answers
/// its base URL.
async fn serve(dir: &Path, mcp: &str) -> (Child, String) {
    let mut child = Command::from(crate::common::airlock())
        .args(["serve", "--listen", "127.0.0.1:0", "--mcp", mcp, "--data"])
        .arg(dir.join("airlock.db"))
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("airlock serve starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let base = loop {
        let line = lines.next_line().await.unwrap().expect("airlock says where it listens");
        if let Some(url) = line.split("listening on ").nth(1) {
            break url.trim().to_owned();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, base)
}

fn http() -> reqwest::Client {
    airlock_providers::model::install_tls();
    reqwest::Client::new()
}

/// `POST /v1/runs` with `content` → the RunResult.
async fn run(base: &str, content: &str) -> Value {
    let res = http()
        .post(format!("{base}/v1/runs"))
        .json(&json!({"content": content}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    res.json().await.unwrap()
}

/// The `tool/result` events of a RunResult.
fn tool_results(result: &Value) -> Vec<&Value> {
    let events = result["events"].as_array().unwrap();
    events.iter().filter(|e| e["type"] == "tool/result").map(|e| &e["data"]).collect()
}

#[tokio::test]
#[ignore = "needs Node.js and `npm ci --prefix tests/mcp`; .ci/run installs them"]
async fn mcp_server_tools_are_listed_namespaced_and_the_demo_model_calls_everything_echo() {
    let dir = tempfile::tempdir().unwrap();
    let (_gateway, base) = serve(dir.path(), &everything_flag()).await;
    let tools: Value =
        reqwest::get(format!("{base}/v1/tools")).await.unwrap().json().await.unwrap();
    let names: Vec<&str> =
        tools["items"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"everything__echo"), "{names:?}");
    assert!(names.contains(&"echo"), "the built-in tools stay: {names:?}");
    let echo = tools["items"].as_array().unwrap().iter().find(|t| t["name"] == "everything__echo");
    assert_eq!(echo.unwrap()["parameters"]["properties"]["message"]["type"], "string");

    let result = run(&base, r#"/tool everything__echo {"message":"hi from airlock"}"#).await;
    let results = tool_results(&result);
    assert_eq!(results.len(), 1, "{result}");
    assert_eq!(results[0]["error"], Value::Null, "{result}");
    let text = results[0]["message"]["content"][0]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("hi from airlock"), "{text}");
    assert_eq!(result["finishReason"], "completed");
}

#[tokio::test]
#[ignore = "needs Node.js and `npm ci --prefix tests/mcp`; .ci/run installs them"]
async fn a_streamable_http_mcp_server_is_reached_by_its_url() {
    let mut server = Command::new("node")
        .arg(everything())
        .arg("streamableHttp")
        .env("PORT", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    let mut said = BufReader::new(server.stderr.take().unwrap()).lines();
    while !said.next_line().await.unwrap().expect("the server starts").contains("listening") {}
    tokio::spawn(async move { while let Ok(Some(_)) = said.next_line().await {} });
    let port = listening_port(server.id().unwrap());

    let dir = tempfile::tempdir().unwrap();
    let (_gateway, base) = serve(dir.path(), &format!("web=http://127.0.0.1:{port}/mcp")).await;
    let result = run(&base, r#"/tool web__echo {"message":"over http"}"#).await;
    let results = tool_results(&result);
    assert_eq!(results.len(), 1, "{result}");
    assert_eq!(results[0]["error"], Value::Null, "{result}");
    assert!(results[0].to_string().contains("over http"), "{result}");
}

/// The TCP port process `pid` listens on: its socket's inode, found in `/proc/net/tcp{,6}`.
fn listening_port(pid: u32) -> u16 {
    let sockets: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|link| {
            let link = link.to_string_lossy().into_owned();
            Some(link.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    for table in ["/proc/net/tcp6", "/proc/net/tcp"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // local address, state (0A: listening), inode
            if fields[3] == "0A" && sockets.iter().any(|inode| inode == fields[9]) {
                let port = fields[1].rsplit(':').next().unwrap();
                return u16::from_str_radix(port, 16).unwrap();
            }
        }
    }
    panic!("process {pid} listens on no TCP port");
}

#[tokio::test]
#[ignore = "needs Node.js and `npm ci --prefix tests/mcp`; .ci/run installs them"]
async fn a_dying_mcp_server_gives_a_tool_error_and_the_turn_completes() {
    let dir = tempfile::tempdir().unwrap();
    let (gateway, base) = serve(dir.path(), &everything_flag()).await;
    // The server is the gateway's only child process.
    let pid = gateway.id().unwrap();
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap();
    let server: i32 =
        children.split_whitespace().next().expect("the MCP server runs").parse().unwrap();
    let killed = std::process::Command::new("kill").args(["-9", &server.to_string()]).status();
    assert!(killed.unwrap().success());

    let result = run(&base, r#"/tool everything__echo {"message":"anyone?"}"#).await;
    let results = tool_results(&result);
    assert_eq!(results.len(), 1, "{result}");
    assert_eq!(results[0]["error"]["code"], "FAILED", "{result}");
    let text = results[0]["message"]["content"][0]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("MCP server everything is not running"), "{text}");
    assert_eq!(result["finishReason"], "completed");
}

#[tokio::test]
#[ignore = "needs Node.js and `npm ci --prefix tests/mcp`; .ci/run installs them"]
async fn acp_session_new_mcp_servers_give_that_session_their_tools() {
    let dir = tempfile::tempdir().unwrap();
    let mut airlock = Airlock::spawn(dir.path(), "http://127.0.0.1:9/v1", "demo", &[]).await;
    let server = McpServer::Stdio(
        McpServerStdio::new("everything", "node")
            .args(vec![everything().display().to_string(), "stdio".into()]),
    );
    airlock
        .client(async |cx, mut updates| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
            let relative = NewSessionRequest::new("work").mcp_servers(vec![server.clone()]);
            let refused = cx.send_request(relative).block_task().await.unwrap_err();
            assert!(format!("{refused:?}").contains("absolute"), "{refused:?}");

            let new = NewSessionRequest::new("/tmp").mcp_servers(vec![server]);
            let session = cx.send_request(new).block_task().await?.session_id;
            let call = r#"/tool everything__echo {"message":"over acp"}"#;
            let prompt = PromptRequest::new(session, vec![ContentBlock::from(call.to_owned())]);
            let answer = cx.send_request(prompt).block_task().await?;
            assert_eq!(answer.stop_reason, StopReason::EndTurn);
            let done = std::iter::from_fn(|| updates.try_recv().ok()).find_map(|u| match u {
                SessionUpdate::ToolCallUpdate(update) => Some(update),
                _ => None,
            });
            let done = done.expect("a tool_call_update");
            assert_eq!(done.fields.status, Some(ToolCallStatus::Completed));
            let content = serde_json::to_value(&done.fields.content).unwrap();
            assert!(content.to_string().contains("over acp"), "{content}");
            Ok(())
        })
        .await;
}

/// `airlock serve --mcp SERVER` that cannot start: its exit code and stderr.
fn refused_at_start(server: &str) -> (Option<i32>, String) {
    let out = common::airlock()
        .args(["serve", "--data", ":memory:", "--listen", "127.0.0.1:0", "--mcp", server])
        .env_remove("AIRLOCK_MCP")
        .env_remove("RUST_LOG")
        .env_remove("AIRLOCK_LOG")
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8(out.stderr).unwrap())
}

/// What the server's library says is its own: one line says what failed, in words, with no Rust
/// type name or value dumped into it, and no line of the library's log besides.
#[test]
fn an_mcp_server_out_of_reach_is_refused_at_start_in_one_line_of_words() {
    let (code, stderr) = refused_at_start("x=http://127.0.0.1:1/mcp");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.starts_with(
            "airlock: MCP server \"x\": http://127.0.0.1:1/mcp did not answer as an MCP server: \
             error sending request for url (http://127.0.0.1:1/mcp)"
        ) && stderr.contains("Connection refused"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!stderr.contains("rmcp::") && !stderr.contains(" { "), "{stderr}");
}

#[test]
fn an_mcp_command_that_exits_at_once_is_refused_saying_it_closed_the_connection() {
    let (code, stderr) = refused_at_start("x=false");
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(
        stderr,
        "airlock: MCP server \"x\": did not start as an MCP server: it closed the connection \
         before answering `initialize` (did it exit? run it by hand to see what it says)\n"
    );
}
