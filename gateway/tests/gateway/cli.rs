//! `airlock run` end to end: the real binary, the embedded wasm core, the demo model.

use std::process::Command;

fn airlock_run(task: &str) -> (i32, String, String) {
    let out = crate::common::airlock()
        .args(["run", task])
        .env_remove("AIRLOCK_MODEL")
        .output()
        .expect("airlock runs");
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.code().unwrap_or(-1), text(out.stdout), text(out.stderr))
}

#[test]
fn cli_completed_prints_the_final_response_and_exits_0() {
    let (code, stdout, stderr) = airlock_run("hello");
    assert_eq!(code, 0, "stderr: {stderr}");
    assert!(stdout.starts_with("You said: \"hello\". I am the demo model"), "{stdout}");
    assert!(
        stdout.ends_with(".\n") && stdout.lines().count() == 1,
        "one line with a trailing newline: {stdout:?}"
    );
    assert_eq!(stderr, "");
}

#[test]
fn run_with_a_tool_call_prints_the_summary_of_the_result() {
    let (code, stdout, _) = airlock_run(r#"/tool echo {"text":"hi"}"#);
    assert_eq!(code, 0);
    assert_eq!(stdout, "The echo tool returned: echo: hi\n");
}

#[test]
fn cli_error_prints_code_and_message_and_exits_1() {
    let (code, stdout, stderr) = airlock_run("/fail AUTH the key was rejected");
    assert_eq!(code, 1);
    assert_eq!(stdout, "");
    assert_eq!(stderr, "airlock: AUTH: the key was rejected\n");
}

#[test]
fn run_with_an_unknown_model_says_which_models_exist() {
    let out = crate::common::airlock().args(["run", "--model", "nope", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with("airlock: unknown model \"nope\": this build offers `demo`"),
        "{stderr}"
    );
}

/// Starts `airlock serve` in `dir` with `args`; returns once it listens, then kills it.
pub fn serve_once(dir: &std::path::Path, args: &[&str]) {
    serve_once_with(dir, args, &[]);
}

/// [`serve_once`] with these environment variables set.
pub fn serve_once_with(dir: &std::path::Path, args: &[&str], vars: &[(&str, &str)]) {
    use std::io::{BufRead, BufReader};
    let mut child = crate::common::airlock()
        .arg("serve")
        .args(args)
        .current_dir(dir)
        .env_remove("AIRLOCK_LISTEN")
        .env_remove("AIRLOCK_DATA")
        .envs(vars.iter().copied())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let listening =
        stderr.lines().map_while(Result::ok).any(|l| l.starts_with("airlock: listening on"));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(listening, "airlock serve started");
}

/// `airlock run` against the mock model, with a database the test keeps.
fn run_on_mock(mock_url: &str, dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    crate::common::airlock()
        .arg("run")
        .args(["--model", "openai:mock", "--data"])
        .arg(dir.join("run.db"))
        .args(args)
        .env("AIRLOCK_BASE_URL", mock_url)
        .output()
        .expect("airlock runs")
}

#[tokio::test]
async fn cli_json_prints_the_run_result() {
    let mock = airlock_tests::MockModel::start().await;
    mock.push(airlock_tests::Reply::text("Forty-two.", 2));
    let dir = tempfile::tempdir().unwrap();
    let url = mock.base_url();
    let path = dir.path().to_owned();
    let out =
        tokio::task::spawn_blocking(move || run_on_mock(&url, &path, &["--json", "the answer?"]))
            .await
            .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["finalResponse"], "Forty-two.");
    assert_eq!(result["finishReason"], "completed");
    assert_eq!(result["firstSeq"], 0);
    assert!(out.stderr.is_empty(), "not a terminal: no progress");
}

#[tokio::test]
async fn cli_setup_events_before_the_task_are_not_summarized() {
    let mock = airlock_tests::MockModel::start().await;
    mock.push(airlock_tests::Reply::text("The first task went fine.", 1));
    mock.push(airlock_tests::Reply::status(401));
    let dir = tempfile::tempdir().unwrap();
    let (url, path) = (mock.base_url(), dir.path().to_owned());
    let first = tokio::task::spawn_blocking(move || run_on_mock(&url, &path, &["--json", "setup"]))
        .await
        .unwrap();
    assert_eq!(first.status.code(), Some(0));
    let first: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    let session = first["sessionId"].as_str().unwrap().to_owned();

    // The same session again: its earlier completed turn is not this run's result.
    let (url, path) = (mock.base_url(), dir.path().to_owned());
    let second = tokio::task::spawn_blocking(move || {
        run_on_mock(&url, &path, &["--session", &session, "now fail"])
    })
    .await
    .unwrap();
    assert_eq!(second.status.code(), Some(1));
    assert_eq!(String::from_utf8(second.stdout).unwrap(), "");
    let stderr = String::from_utf8(second.stderr).unwrap();
    assert!(stderr.starts_with("airlock: AUTH: "), "{stderr}");
}

#[tokio::test]
async fn cli_ctrl_c_cancels_the_turn_and_exits_130() {
    let mock = airlock_tests::MockModel::start().await;
    mock.push(
        airlock_tests::Reply::text("never finished", 3).delay(std::time::Duration::from_secs(120)),
    );
    let child = crate::common::airlock()
        .args(["run", "--model", "openai:mock", "slow"])
        .env("AIRLOCK_BASE_URL", mock.base_url())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    mock.requested(1).await; // the turn is streaming
    // Ctrl-C: the run cancels its turn.
    let status =
        std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status();
    assert!(status.unwrap().success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output()).await.unwrap().unwrap();
    assert_eq!(out.status.code(), Some(130), "130, as a shell expects of an interrupted command");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "");
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "airlock: aborted: the run was cancelled (user)\n"
    );
}

#[test]
fn core_flag_refuses_a_component_that_imports_a_clock() {
    let wasm = std::path::Path::new(airlock_sandbox::plugins::BUILT_DIR).join("hostile.wasm");
    let out =
        crate::common::airlock().args(["run", "--core"]).arg(&wasm).arg("hi").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("wasi:clocks/wall-clock"), "names the import: {stderr}");
}

#[test]
fn core_flag_runs_the_built_in_cores_own_file() {
    let dir = tempfile::tempdir().unwrap();
    let core = dir.path().join("core.wasm");
    std::fs::write(&core, airlock_sandbox::core_host::CORE_WASM).unwrap();
    let out = crate::common::airlock()
        .args(["run", "--core"])
        .arg(&core)
        .arg("hello")
        .env_remove("AIRLOCK_MODEL")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8(out.stdout).unwrap().starts_with("You said: \"hello\""));
}

#[test]
fn spawn_agent_with_an_in_memory_store_fails_with_durability_failed() {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::common::airlock()
        .args(["run", "--data", ":memory:", "--json"])
        .arg(r#"/tool spawn_agent {"prompt":"keep this for later"}"#)
        .current_dir(dir.path())
        .env_remove("AIRLOCK_MODEL")
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let result: serde_json::Value =
        serde_json::from_str(&stdout).expect("--json prints a RunResult");
    let events = result["events"].as_array().unwrap();
    let tool_result = events.iter().find(|e| e["type"] == "tool/result").expect("the tool ran");
    assert_eq!(tool_result["data"]["error"]["code"], "DURABILITY_FAILED", "{tool_result}");
    let text = tool_result["data"]["message"]["content"][0]["content"][0]["text"].to_string();
    assert!(text.contains("--data FILE"), "the message says what to do: {text}");
    assert!(!dir.path().join(":memory:").exists(), "an in-memory store writes no file");
}

/// Two processes on one data file would each keep their own idea of every session's log: the
/// second (`serve` or `stdio`) refuses to start, naming the file and the process that has it.
#[test]
fn a_second_gateway_on_the_same_data_file_refuses_to_start_naming_the_file() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let airlock = || {
        let mut command = crate::common::airlock();
        command
            .current_dir(dir.path())
            .env_remove("AIRLOCK_LISTEN")
            .env_remove("AIRLOCK_DATA")
            .env_remove("AIRLOCK_MODEL");
        command
    };
    let serve = ["serve", "--listen", "127.0.0.1:0", "--data", "shared.db"];
    let mut first = airlock().args(serve).stderr(Stdio::piped()).spawn().unwrap();
    let mut stderr = BufReader::new(first.stderr.take().unwrap()).lines();
    assert!(stderr.any(|line| line.unwrap().starts_with("airlock: listening on")));

    let holder = format!(
        "the data file shared.db is in use by another airlock process (pid {})",
        first.id()
    );
    for args in [&serve[..], &["stdio", "--data", "shared.db"]] {
        let out = airlock().args(args).stdin(Stdio::null()).output().unwrap();
        let refused = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {refused}");
        assert!(refused.contains(&holder), "{args:?}: {refused}");
    }
    first.kill().unwrap();
    first.wait().unwrap();
    drop(stderr);
    serve_once(dir.path(), &serve[1..]); // the lock went with the process
}

#[test]
fn serve_on_a_public_address_refuses_to_start_without_keys_and_starts_with_one() {
    let dir = tempfile::tempdir().unwrap();
    let airlock = |args: &[&str]| {
        crate::common::airlock()
            .args(args)
            .current_dir(dir.path())
            .env_remove("AIRLOCK_LISTEN")
            .env_remove("AIRLOCK_DATA")
            .output()
            .unwrap()
    };
    let out = airlock(&["serve", "--listen", "0.0.0.0:0", "--data", "open.db"]);
    let refused = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{refused}");
    assert!(refused.contains("refusing to serve 0.0.0.0:"), "{refused}");
    assert!(refused.contains("airlock keys create --data open.db --tenant NAME"), "{refused}");

    // The key alone on stdout, once; the list never shows it.
    let made = airlock(&["keys", "create", "--data", "open.db", "--tenant", "acme"]);
    assert!(made.status.success());
    let key = String::from_utf8(made.stdout).unwrap();
    assert_eq!(key.lines().count(), 1, "{key:?}");
    assert!(key.starts_with("ak_") && key.trim().len() > 60, "{key:?}");
    let listed = String::from_utf8(airlock(&["keys", "list", "--data", "open.db"]).stdout).unwrap();
    assert!(listed.contains("acme") && !listed.contains(key.trim()), "{listed}");

    serve_once(dir.path(), &["--listen", "0.0.0.0:0", "--data", "open.db"]);
}

/// `airlock run --json` on the demo model in `data`, in `session` when given: the run result.
fn demo_run(data: &std::path::Path, session: Option<&str>, task: &str) -> serde_json::Value {
    let mut command = crate::common::airlock();
    command.args(["run", "--json", "--data"]).arg(data);
    if let Some(session) = session {
        command.args(["--session", session]);
    }
    let out = command
        .arg(task)
        .env_remove("AIRLOCK_MODEL")
        .env_remove("AIRLOCK_CONTEXT_WINDOW")
        .output()
        .expect("airlock runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "airlock run {task:?}: {stderr}");
    serde_json::from_slice(&out.stdout).expect("--json prints the run result")
}

#[test]
fn the_demo_model_compacts_a_long_session_of_airlock_run_and_goes_on_from_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("airlock.db");
    let task = |n: usize| format!("step {n}: {}", "please keep track of this detail ".repeat(4));
    let first = demo_run(&data, None, &task(0));
    let session = first["sessionId"].as_str().unwrap().to_owned();
    let compacted = (1..60).find_map(|n| {
        let result = demo_run(&data, Some(&session), &task(n));
        let events = result["events"].as_array().unwrap().clone();
        let compaction = events.into_iter().find(|e| e["type"] == "context/compaction");
        compaction.map(|c| (n, c, result))
    });
    let (turn, compaction, result) = compacted.expect("a compaction within 60 turns");
    assert!(turn >= 5, "the demo window holds a few turns first (compacted at turn {turn})");
    let data = &compaction["data"];
    assert_eq!(data["trigger"], "pressure");
    let before = data["tokensBefore"].as_u64().unwrap();
    assert!(before >= 1_600, "80 % of the demo's 2,000-token window: {before}");
    assert!(data["tokensAfter"].as_u64().unwrap() < before / 2, "{data}");
    let summary = data["summary"]["content"][0]["text"].as_str().unwrap();
    assert!(summary.contains("The demo model summarized"), "{summary}");
    assert_eq!(result["finishReason"], "completed", "the turn went on after it: {result}");
}

#[test]
fn cli_on_a_terminal_prints_the_answer_once() {
    // `script` (util-linux) runs the command on a pseudo-terminal and copies what it shows.
    let command = format!("{} run hello", env!("CARGO_BIN_EXE_airlock"));
    let out = Command::new("script")
        .args(["--quiet", "--return", "--command", &command, "/dev/null"])
        .env("AIRLOCK_CACHE_DIR", airlock_tests::gateway::compiled_cache())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script (util-linux) runs");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}");
    assert_eq!(shown.matches(r#"You said: "hello""#).count(), 1, "the answer once: {shown:?}");
}

#[tokio::test]
async fn cli_on_a_terminal_ctrl_c_cancels_the_run_and_exits_130() {
    use tokio::io::AsyncWriteExt;
    let mock = airlock_tests::MockModel::start().await;
    mock.push(
        airlock_tests::Reply::text("never finished", 3).delay(std::time::Duration::from_secs(120)),
    );
    let command = format!("{} run --model openai:mock slow", env!("CARGO_BIN_EXE_airlock"));
    let mut script = tokio::process::Command::new("script")
        .args(["--quiet", "--return", "--command", &command, "/dev/null"])
        .env("AIRLOCK_CACHE_DIR", airlock_tests::gateway::compiled_cache())
        .env("AIRLOCK_BASE_URL", mock.base_url())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("script (util-linux) runs");
    mock.requested(1).await; // the turn is streaming
    // Ctrl-C typed on the terminal: the terminal sends SIGINT to the run.
    let mut keyboard = script.stdin.take().unwrap();
    keyboard.write_all(b"\x03").await.unwrap();
    keyboard.flush().await.unwrap();
    let out = script.wait_with_output().await.unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{shown}");
    assert!(shown.contains("airlock: aborted: the run was cancelled (user)"), "{shown:?}");
}

/// `airlock run --approval-for echo` on the demo model, whose task calls `echo`, with `args` and
/// `stdin` as its standard input.
fn run_asking(args: &[&str], stdin: &str) -> (i32, String, String) {
    use std::io::Write;
    let mut child = crate::common::airlock()
        .args(["run", "--approval-for", "echo"])
        .args(args)
        .arg(r#"/tool echo {"text":"hi"}"#)
        .env_remove("AIRLOCK_MODEL")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("airlock runs");
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.code().unwrap_or(-1), text(out.stdout), text(out.stderr))
}

#[test]
fn run_approve_ask_asks_on_stderr_and_a_y_on_stdin_runs_the_call() {
    let (code, stdout, stderr) = run_asking(&[], "y\n");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stderr, "airlock: run echo {\"text\":\"hi\"}? [y/N] ");
    assert_eq!(stdout, "The echo tool returned: echo: hi\n");
}

#[test]
fn run_approve_ask_with_no_answer_denies_the_call() {
    let (code, stdout, _) = run_asking(&["--approve", "ask"], "");
    assert_eq!(code, 0);
    assert!(stdout.contains("DENIED_BY_USER") && stdout.contains("nobody answered"), "{stdout}");
}

#[test]
fn run_approve_all_and_none_answer_without_asking() {
    let (code, stdout, stderr) = run_asking(&["--approve", "all"], "");
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert_eq!(stdout, "The echo tool returned: echo: hi\n");
    let (code, stdout, stderr) = run_asking(&["--approve", "none"], "");
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert!(stdout.contains("DENIED_BY_USER") && stdout.contains("--approve none"), "{stdout}");
}

#[test]
fn run_approval_for_an_unknown_tool_names_the_known_ones() {
    let (code, _, stderr) = run_asking(&["--approval-for", "nope"], "");
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("--approval-for") && stderr.contains("nope") && stderr.contains("echo"),
        "{stderr}"
    );
}
