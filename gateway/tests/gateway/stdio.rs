//! `airlock stdio` end to end: the real binary, JSON-RPC lines on its stdin and stdout.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use airlock_store::{Durability, Store};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// A running `airlock stdio` and the frames it wrote.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    /// Where the child's stderr goes, shown when a frame does not come.
    stderr: std::path::PathBuf,
    seen: Vec<String>,
}

impl Client {
    /// `airlock stdio` on a database in a fresh temp dir, which lives as long as the guard.
    fn fresh() -> (tempfile::TempDir, Client) {
        let dir = tempfile::tempdir().unwrap();
        let client = Client::start(dir.path(), &[]);
        (dir, client)
    }

    /// [`Client::fresh`], initialized to answer with `openai:mock` from `mock`.
    async fn on(mock: &airlock_tests::MockModel) -> (tempfile::TempDir, Client) {
        let dir = tempfile::tempdir().unwrap();
        let mut client = Client::start(dir.path(), &[("AIRLOCK_BASE_URL", &mock.base_url())]);
        client.request(0, "initialize", json!({"provider": "openai", "model": "mock"})).await;
        client.until_response(0).await;
        (dir, client)
    }

    fn start(dir: &Path, env: &[(&str, &str)]) -> Client {
        let mut child = Command::from(crate::common::airlock())
            .args(["stdio", "--data"])
            .arg(dir.join("stdio.db"))
            .env_remove("AIRLOCK_MODEL")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.join("stderr.log")).unwrap())
            .kill_on_drop(true)
            .spawn()
            .expect("airlock stdio starts");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Client { child, stdin, stdout, stderr: dir.join("stderr.log"), seen: Vec::new() }
    }

    async fn write(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }

    async fn request(&mut self, id: u64, method: &str, params: Value) {
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.write(&frame.to_string()).await;
    }

    /// The next frame; every line on stdout must be a JSON-RPC 2.0 frame.
    async fn next(&mut self) -> Option<Value> {
        let Ok(line) = tokio::time::timeout(Duration::from_secs(30), self.stdout.next_line()).await
        else {
            let stderr = std::fs::read_to_string(&self.stderr).unwrap_or_default();
            panic!("no frame within 30 s; after {:#?}\nairlock's stderr:\n{stderr}", self.seen);
        };
        let line = line.unwrap()?;
        self.seen.push(line.clone());
        let frame: Value = serde_json::from_str(&line).expect("stdout carries JSON only");
        assert_eq!(frame["jsonrpc"], "2.0", "{frame}");
        Some(frame)
    }

    /// Frames up to and including the response with `id`.
    async fn until_response(&mut self, id: u64) -> Vec<Value> {
        self.until(|frames| frames.last().is_some_and(|f| f["id"] == id)).await
    }

    /// Frames until the session reports `idle`.
    async fn until_idle(&mut self) -> Vec<Value> {
        self.until(|frames| frames.iter().any(is_idle)).await
    }

    /// Frames until both the response with `id` and the session's `idle` came: a fast turn may
    /// end before its prompt is answered.
    async fn until_answered_and_idle(&mut self, id: u64) -> Vec<Value> {
        self.until(|frames| frames.iter().any(|f| f["id"] == id) && frames.iter().any(is_idle))
            .await
    }

    async fn until(&mut self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let mut frames = Vec::new();
        while !done(&frames) {
            frames.push(self.next().await.expect("more frames before the end of stdout"));
        }
        frames
    }
}

fn is_idle(frame: &Value) -> bool {
    frame["method"] == "session.status" && frame["params"]["status"] == "idle"
}

fn prompt(session: &str, text: &str) -> Value {
    json!({"sessionId": session, "contentBlocks": [{"type": "text", "text": text}]})
}

fn events_of_type<'a>(frames: &'a [Value], kind: &str) -> Vec<&'a Value> {
    frames
        .iter()
        .filter(|f| f["method"] == "session.event" && f["params"]["event"]["type"] == kind)
        .map(|f| &f["params"]["event"])
        .collect()
}

#[tokio::test]
async fn stdio_initialize_answers_server_info() {
    let (_dir, mut client) = Client::fresh();
    client
        .request(1, "initialize", json!({"cwd": "/tmp", "provider": "demo", "model": "demo"}))
        .await;
    let frames = client.until_response(1).await;
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0]["result"]["serverInfo"]["name"], "airlock");
    assert!(frames[0]["result"]["serverInfo"]["version"].is_string());
}

#[tokio::test]
async fn stdio_receipt_notification_precedes_the_response() {
    let (_dir, mut client) = Client::fresh();
    client.request(1, "session/prompt", prompt("s1", "hello")).await;
    let frames = client.until_response(1).await;
    let message_id = frames.last().unwrap()["result"]["messageId"].as_str().unwrap().to_owned();
    let receipt = events_of_type(&frames, "agent/inbox/spliced");
    assert_eq!(receipt.first().map(|e| &e["data"]["inserted"][0]["id"]), Some(&json!(message_id)));
    assert_eq!(frames[0]["params"]["sessionId"], "s1");
}

#[tokio::test]
async fn stdio_two_overlapping_prompts_get_receipts_and_run_fifo_with_one_running_and_one_idle() {
    let mock = airlock_tests::MockModel::start().await;
    let gate = std::sync::Arc::new(tokio::sync::Notify::new());
    mock.push(airlock_tests::Reply::text("One.", 2).hold_until(gate.clone()));
    mock.push(airlock_tests::Reply::text("Two.", 2));
    let (_dir, mut client) = Client::on(&mock).await;
    client.request(1, "session/prompt", prompt("burst", "first")).await;
    client.request(2, "session/prompt", prompt("burst", "second")).await;
    let mut frames = client.until_response(1).await;
    frames.extend(client.until_response(2).await);
    gate.notify_one(); // the first turn was still running when the second prompt arrived
    frames.extend(client.until_idle().await);
    let ids: Vec<&Value> = frames.iter().filter_map(|f| f["result"].get("messageId")).collect();
    assert_eq!(ids.len(), 2, "both prompts got receipts");
    let entered: Vec<&Value> =
        events_of_type(&frames, "user/message").into_iter().map(|e| &e["data"]["id"]).collect();
    assert_eq!(entered, ids, "one turn each, in the order sent");
    assert_eq!(events_of_type(&frames, "turn/end").len(), 2);
    let trace: Vec<&Value> = frames
        .iter()
        .filter(|f| f["method"] == "session.status")
        .map(|f| &f["params"]["status"])
        .collect();
    assert_eq!(trace, [&json!("running"), &json!("idle")], "a burst is one interval");
    assert!(frames.iter().all(|f| f["method"] != "session.finished"));
}

#[tokio::test]
async fn stdio_unknown_method_answers_minus_32601() {
    let (_dir, mut client) = Client::fresh();
    client.request(7, "session/teleport", json!({})).await;
    let frames = client.until_response(7).await;
    assert_eq!(frames[0]["error"]["code"], -32601);
    assert!(frames[0]["error"]["message"].as_str().unwrap().contains("session/teleport"));
}

#[tokio::test]
async fn stdio_malformed_lines_are_ignored() {
    let (_dir, mut client) = Client::fresh();
    client.write("this is not json").await;
    client.write(r#"{"no": "method"}"#).await;
    client.write(r#"[1, 2, 3]"#).await;
    client.request(3, "initialize", json!({})).await;
    let frames = client.until_response(3).await;
    assert_eq!(frames.len(), 1, "nothing answered the malformed lines: {frames:?}");
}

#[tokio::test]
async fn stdio_bad_params_answer_minus_32602_naming_the_problem() {
    let (_dir, mut client) = Client::fresh();
    client.request(1, "session/prompt", json!({"sessionId": "s"})).await;
    client.request(2, "initialize", json!({"provider": "nope", "model": "x"})).await;
    let mut frames = client.until_response(1).await;
    frames.extend(client.until_response(2).await);
    assert_eq!(frames[0]["error"]["code"], -32602);
    assert!(frames[0]["error"]["message"].as_str().unwrap().contains("contentBlocks"));
    assert_eq!(frames[1]["error"]["code"], -32602);
    assert!(frames[1]["error"]["message"].as_str().unwrap().contains("unknown model"));
}

#[tokio::test]
async fn stdio_prompt_for_an_unknown_session_creates_it_and_later_prompts_continue_it() {
    let (_dir, mut client) = Client::fresh();
    client.request(1, "session/prompt", prompt("fresh-id", "one")).await;
    let first = client.until_answered_and_idle(1).await;
    client.request(2, "session/prompt", prompt("fresh-id", "two")).await;
    let second = client.until_response(2).await;
    let last_seq = |frames: &[Value]| {
        frames.iter().filter_map(|f| f["params"]["event"]["seq"].as_u64()).max().unwrap()
    };
    let first_of_second =
        second.iter().filter_map(|f| f["params"]["event"]["seq"].as_u64()).min().unwrap();
    assert_eq!(first_of_second, last_seq(&first) + 1, "the same log goes on");
}

#[tokio::test]
async fn stdio_initialize_selects_the_model_like_the_model_flag() {
    let mock = airlock_tests::MockModel::start().await;
    mock.push(airlock_tests::Reply::text("From the mock.", 2));
    let dir = tempfile::tempdir().unwrap();
    let mut client = Client::start(dir.path(), &[("AIRLOCK_BASE_URL", &mock.base_url())]);
    client
        .request(1, "initialize", json!({"provider": "openai", "model": "mock-1", "maxTokens": 99}))
        .await;
    client.until_response(1).await;
    client.request(2, "session/prompt", prompt("m", "hi")).await;
    let frames = client.until_answered_and_idle(2).await;
    let answer = events_of_type(&frames, "assistant/message");
    assert_eq!(answer[0]["data"]["message"]["content"][0]["text"], "From the mock.");
    let request = &mock.requests()[0];
    assert_eq!(
        (request["model"].as_str(), request["max_tokens"].as_u64()),
        (Some("mock-1"), Some(99))
    );
}

#[tokio::test]
async fn stdio_shutdown_flushes_and_exits_0() {
    let (dir, mut client) = Client::fresh();
    client.request(1, "session/prompt", prompt("kept", "remember me")).await;
    let frames = client.until_answered_and_idle(1).await;
    let seen = frames.iter().filter(|f| f["method"] == "session.event").count();
    client.request(2, "shutdown", json!({})).await;
    let frames = client.until_response(2).await;
    assert_eq!(frames.last().unwrap()["result"], json!({}));
    assert_eq!(client.next().await, None, "stdout closes after the response");
    let status = tokio::time::timeout(Duration::from_secs(30), client.child.wait()).await;
    assert_eq!(status.unwrap().unwrap().code(), Some(0));

    let store = Store::open(&dir.path().join("stdio.db"), Durability::Full).unwrap();
    assert_eq!(store.events("kept", None, 1000).await.unwrap().len(), seen);
}

#[tokio::test]
async fn stdio_end_of_input_lets_the_prompted_work_finish_then_exits_0() {
    let (_dir, mut client) = Client::fresh();
    client.request(1, "session/prompt", prompt("eof", "hello")).await;
    client.stdin = None; // the client hangs up right after prompting
    let mut frames = Vec::new();
    while let Some(frame) = client.next().await {
        frames.push(frame);
    }
    let ends = events_of_type(&frames, "turn/end");
    assert_eq!(ends.len(), 1, "the turn ran to its end: {frames:?}");
    assert_eq!(ends[0]["data"]["reason"]["kind"], "completed");
    let status = tokio::time::timeout(Duration::from_secs(30), client.child.wait()).await;
    assert_eq!(status.unwrap().unwrap().code(), Some(0));
}

#[tokio::test]
async fn stdio_notifies_subagent_started_and_finished() {
    let mock = airlock_tests::MockModel::start().await;
    mock.push(airlock_tests::Reply::tool_call("t1", "agent", r#"{"prompt":"help"}"#, 1));
    mock.push(airlock_tests::Reply::text("Helped.", 1));
    mock.push(airlock_tests::Reply::text("Thanks.", 1));
    let (_dir, mut client) = Client::on(&mock).await;
    client.request(1, "session/prompt", prompt("parent", "delegate")).await;
    let frames = client.until_answered_and_idle(1).await;
    let started: Vec<&Value> =
        frames.iter().filter(|f| f["method"] == "subagent.started").map(|f| &f["params"]).collect();
    let finished: Vec<&Value> = frames
        .iter()
        .filter(|f| f["method"] == "subagent.finished")
        .map(|f| &f["params"])
        .collect();
    assert_eq!(started.len(), 1, "{frames:?}");
    assert_eq!(started[0]["parentSessionId"], "parent");
    assert_eq!(finished[0]["childSessionId"], started[0]["childSessionId"]);
    assert_eq!(finished[0]["stopReason"], "completed");
    assert_eq!(finished[0]["lastAssistantMessage"], "Helped.");
}

#[tokio::test]
async fn stdio_a_valid_request_that_fails_answers_minus_32603_with_the_code_in_data() {
    let dir = tempfile::tempdir().unwrap();
    {
        // A session disposed through another face: its log stays, it takes no input.
        let store = Store::open(&dir.path().join("stdio.db"), Durability::Full).unwrap();
        let row = airlock_store::SessionRow {
            session_id: "gone".into(),
            created_at: 1,
            updated_at: 1,
            spec: json!({"model": "demo"}),
            disposed: true,
            parent_session_id: None,
            tenant: None,
            goal: None,
            needs_recovery: false,
            shares: None,
        };
        assert!(store.insert_session(row).await.unwrap());
    }
    let no_key = [("OPENAI_API_KEY", ""), ("AIRLOCK_BASE_URL", "")];
    let mut client = Client::start(dir.path(), &no_key);
    client.request(1, "session/prompt", prompt("gone", "still there?")).await;
    let frames = client.until_response(1).await;
    let error = &frames.last().unwrap()["error"];
    assert_eq!(error["code"], -32603, "a failure, not invalid params: {error}");
    assert_eq!(error["data"]["code"], "session-disposed", "{error}");
    assert!(error["message"].as_str().unwrap().contains("disposed"), "{error}");

    // A model name this build knows, which this machine cannot reach without a key.
    client.request(2, "initialize", json!({"provider": "openai", "model": "gpt-4o-mini"})).await;
    let frames = client.until_response(2).await;
    let error = &frames.last().unwrap()["error"];
    assert_eq!(
        (error["code"].as_i64(), error["data"]["code"].as_str()),
        (Some(-32603), Some("model-unavailable")),
        "{error}"
    );
    assert!(error["message"].as_str().unwrap().contains("OPENAI_API_KEY"), "{error}");
}

/// The frames on stdout, read to its end, and the exit code.
async fn frames_until_exit(
    mut child: Child,
    stdout: impl tokio::io::AsyncRead + Unpin,
) -> (Vec<Value>, Option<i32>) {
    let mut lines = BufReader::new(stdout).lines();
    let mut frames = Vec::new();
    let read = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            frames.push(serde_json::from_str(&line).expect("only frames on stdout"));
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read).await.expect("stdout ends");
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait()).await;
    (frames, status.unwrap().unwrap().code())
}

fn stdio_command(dir: &Path) -> Command {
    let mut command = Command::from(crate::common::airlock());
    command
        .args(["stdio", "--data"])
        .arg(dir.join("stdio.db"))
        .env_remove("AIRLOCK_MODEL")
        .kill_on_drop(true);
    command
}

#[tokio::test]
async fn stdio_serves_requests_read_from_a_file_not_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let requests = dir.path().join("requests.jsonl");
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": prompt("f", "hi")}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}),
    ];
    std::fs::write(&requests, lines.map(|l| format!("{l}\n")).concat()).unwrap();
    let mut child = stdio_command(dir.path())
        .stdin(std::fs::File::open(&requests).unwrap())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (frames, code) = frames_until_exit(child, stdout).await;
    assert!(frames.iter().any(|f| f["id"] == 1 && f["result"]["messageId"].is_string()));
    assert_eq!(frames.last().unwrap()["id"], 2, "{frames:?}");
    assert_eq!(code, Some(0));
}

#[tokio::test]
async fn stdio_frames_come_whole_when_stderr_shares_the_stdout_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    let mut child = stdio_command(dir.path())
        .stdin(Stdio::piped())
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for (id, text) in [(1, "one"), (2, "two")] {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": prompt("s", text)});
        stdin.write_all(format!("{request}\n").as_bytes()).await.unwrap();
    }
    drop(stdin); // the end of input: the prompted work finishes, then the process exits
    let stdout = tokio::net::unix::pipe::Receiver::from_owned_fd(reader.into()).unwrap();
    let (frames, code) = frames_until_exit(child, stdout).await;
    assert_eq!(events_of_type(&frames, "turn/end").len(), 2, "{frames:?}");
    assert_eq!(code, Some(0));
}

#[tokio::test]
async fn stdio_starts_beside_a_stored_session_it_cannot_run_which_answers_model_unavailable() {
    let mock = airlock_tests::MockModel::start().await;
    let gate = std::sync::Arc::new(tokio::sync::Notify::new());
    mock.push(airlock_tests::Reply::text("never finished", 2).hold_until(gate));
    let (dir, mut client) = Client::on(&mock).await;
    client.request(1, "session/prompt", prompt("keyed", "work")).await;
    client.until_response(1).await;
    mock.requested(1).await; // its turn is open: the next start must bring it back
    client.child.kill().await.unwrap();

    // The model's endpoint now needs a key that is not set.
    let elsewhere = [("AIRLOCK_BASE_URL", "https://example.invalid/v1")];
    let mut client = Client::start(dir.path(), &elsewhere);
    client.request(2, "session/prompt", prompt("keyed", "again")).await;
    let answer = client.until_response(2).await.pop().unwrap();
    assert_eq!(answer["error"]["data"]["code"], "model-unavailable", "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("\"keyed\"") && message.contains("API key"), "{message}");
    client.request(3, "session/prompt", prompt("fresh", "hello")).await;
    let frames = client.until_answered_and_idle(3).await;
    assert_eq!(events_of_type(&frames, "turn/end")[0]["data"]["reason"]["kind"], "completed");
}
