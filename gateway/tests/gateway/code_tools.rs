//! The code tools, `python` (`plugins/python`, CPython through componentize-py) and `javascript`
//! (`plugins/javascript`, StarlingMonkey through jco): the code the model writes, run by the real
//! plugin host in a session's workspace, and the hostile code they must contain. `.ci/run` builds
//! the components with their `build.sh`, then runs these:
//! `cargo test --workspace --test gateway -- --ignored code_tools::`.

use std::path::Path;
use std::sync::Arc;

use airlock_providers::tools::{ToolOutput, Workspace, Workspaces};
use airlock_sandbox::plugins::{Plugin, PluginHost};
use airlock_tests::Reply;
use airlock_tests::world::{World, world_with};
use serde_json::{Value, json};

type Loaded = tokio::sync::OnceCell<Arc<Plugin>>;

/// `plugins/python`, loaded once for every test here (compiling it takes seconds).
async fn python() -> &'static Plugin {
    static PLUGIN: Loaded = Loaded::const_new();
    load(&PLUGIN, "python").await
}

/// `plugins/javascript`, loaded once.
async fn javascript() -> &'static Plugin {
    static PLUGIN: Loaded = Loaded::const_new();
    load(&PLUGIN, "javascript").await
}

async fn load(plugin: &'static Loaded, name: &str) -> &'static Plugin {
    plugin
        .get_or_init(|| async {
            let host = PluginHost::new(Some(&airlock_tests::gateway::compiled_cache())).unwrap();
            host.load(&plugin_dir(name)).await.unwrap_or_else(|e| panic!("{e}"))
        })
        .await
}

fn plugin_dir(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins").join(name)
}

fn python_dir() -> std::path::PathBuf {
    plugin_dir("python")
}

/// A workspace of its own under a fresh root, whose tenant may hold `quota` bytes.
fn workspace(quota: u64) -> (tempfile::TempDir, Workspace) {
    let root = tempfile::tempdir().unwrap();
    let workspace = Workspaces::new(root.path().join("workspaces"), quota).of(None, "s1");
    (root, workspace)
}

/// A secret beside the workspaces, and links to it planted in `workspace` (by a client, or an
/// earlier escape): `absolute`, `relative` and `up` (to the workspaces' parent). Answers the
/// secret's path; its text is "the host's secret".
fn plant(root: &Path, workspace: &Workspace) -> std::path::PathBuf {
    let secret = root.join("secret.txt");
    std::fs::write(&secret, "the host's secret").unwrap();
    workspace.ensure().unwrap();
    std::os::unix::fs::symlink(&secret, workspace.dir().join("absolute")).unwrap();
    std::os::unix::fs::symlink("../../secret.txt", workspace.dir().join("relative")).unwrap();
    std::os::unix::fs::symlink("../..", workspace.dir().join("up")).unwrap();
    secret
}

async fn run_in(workspace: &Workspace, arguments: Value) -> ToolOutput {
    python().await.call_in("python", &arguments.to_string(), Some(workspace)).await
}

async fn run(workspace: &Workspace, code: &str) -> ToolOutput {
    run_in(workspace, json!({ "code": code })).await
}

fn code(output: &ToolOutput) -> Option<&str> {
    output.error_code.as_deref()
}

/// The call's JSON answer: `{stdout, stderr, result?, error?, files?}`.
fn answer(output: &ToolOutput) -> Value {
    let text = airlock_core::text_of(&output.content);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {output:?}"))
}

#[tokio::test]
#[ignore = "needs plugins/python/build.sh (componentize-py from PyPI); .ci/run runs it"]
async fn python_answers_the_last_expression_and_what_was_printed() {
    let (_root, w) = workspace(1 << 20);
    let output = run(&w, "1 + 1").await;
    assert_eq!(code(&output), None, "{output:?}");
    assert_eq!(answer(&output), json!({"stdout": "", "stderr": "", "result": "2"}));
    let output =
        run(&w, "import json, re\nx = 6\nprint('x is', x)\njson.dumps(re.findall('a', 'banana'))")
            .await;
    assert_eq!(
        answer(&output),
        json!({"stdout": "x is 6\n", "stderr": "", "result": "'[\"a\", \"a\", \"a\"]'"})
    );
    let output = run(&w, "import sys\nprint('oops', file=sys.stderr)\nNone").await;
    assert_eq!(answer(&output), json!({"stdout": "", "stderr": "oops\n"}), "None is no result");
    let output = run(&w, "import sqlite3, zipfile, email.mime.text, xml.etree.ElementTree as E\nE.fromstring('<a>1</a>').text").await;
    assert_eq!(answer(&output)["result"], "'1'", "the standard library is there: {output:?}");
}

#[tokio::test]
#[ignore = "needs plugins/python/build.sh (componentize-py from PyPI); .ci/run runs it"]
async fn python_exception_comes_with_its_traceback() {
    let (_root, w) = workspace(1 << 20);
    let output = run(&w, "print('before')\ndef half(n):\n    return n / 0\nhalf(4)").await;
    assert_eq!(code(&output), Some("FAILED"), "{output:?}");
    let answer = answer(&output);
    assert_eq!(answer["stdout"], "before\n", "what it printed before is kept");
    assert_eq!(answer["error"]["type"], "ZeroDivisionError");
    assert_eq!(answer["error"]["message"], "division by zero");
    let traceback = answer["error"]["traceback"].as_str().unwrap();
    assert!(traceback.contains("line 3, in half\n    return n / 0"), "{traceback}");
    assert!(!traceback.contains("app.py"), "the tool's own frames are left out: {traceback}");
    let output = run(&w, "def broken(:\n  pass").await;
    assert_eq!(self::answer(&output)["error"]["type"], "SyntaxError", "{output:?}");
    let output = run_in(&w, json!({"cod": "1"})).await;
    assert_eq!(code(&output), Some("BAD_ARGUMENTS"), "{output:?}");
}

#[tokio::test]
#[ignore = "needs plugins/python/build.sh (componentize-py from PyPI); .ci/run runs it"]
async fn python_output_is_cut_with_a_note() {
    let (_root, w) = workspace(1 << 20);
    let output = run(&w, "print('x' * 100_000)\n'y' * 50_000").await;
    assert_eq!(code(&output), None, "{output:?}");
    let answer = answer(&output);
    let stdout = answer["stdout"].as_str().unwrap();
    assert!(stdout.starts_with(&"x".repeat(20_000)), "the first 20,000 characters are kept");
    assert!(stdout.ends_with("\n[output cut: 80001 more characters not shown]"), "{stdout:.80}");
    let result = answer["result"].as_str().unwrap();
    assert!(result.ends_with("[output cut: 30002 more characters not shown]"), "{result:.80}");
}

#[tokio::test]
#[ignore = "needs plugins/python/build.sh (componentize-py from PyPI); .ci/run runs it"]
async fn python_files_last_between_calls_and_are_listed() {
    let (_root, w) = workspace(1 << 20);
    let output = run(
        &w,
        "import os\nos.makedirs('out', exist_ok=True)\nopen('out/a.txt', 'w').write('hello')",
    )
    .await;
    assert_eq!(answer(&output)["files"], json!([{"path": "out/a.txt", "bytes": 5}]), "{output:?}");
    let output = run(&w, "open('/workspace/out/a.txt').read()").await;
    let answer = answer(&output);
    assert_eq!(answer["result"], "'hello'", "{output:?}");
    assert_eq!(answer.get("files"), None, "a call that writes nothing lists nothing");
    assert_eq!(std::fs::read_to_string(w.dir().join("out/a.txt")).unwrap(), "hello");
    let output = run(&w, "x = 1\nx").await;
    assert_eq!(self::answer(&output)["result"], "1");
    let output = run(&w, "x").await;
    assert_eq!(self::answer(&output)["error"]["type"], "NameError", "variables do not carry over");
}

#[tokio::test]
#[ignore = "needs plugins/python/build.sh (componentize-py from PyPI); .ci/run runs it"]
async fn hostile_python_reads_and_changes_nothing_outside_its_workspace() {
    let (root, w) = workspace(1 << 20);
    let secret = plant(root.path(), &w);
    // Outside the workspace nothing exists (FAILED: FileNotFoundError); a way out of it is
    // refused (DENIED: PermissionError).
    for (attempt, want) in [
        ("open('/etc/passwd').read()", "FAILED"),
        ("import os; os.listdir('/')", "FAILED"),
        ("open('/workspace/../secret.txt').read()", "DENIED"),
        ("open('/workspace/../../secret.txt').read()", "DENIED"),
        ("open('absolute').read()", "DENIED"),
        ("open('relative').read()", "DENIED"),
        ("open('up/secret.txt').read()", "DENIED"),
        ("import os; os.listdir('up')", "DENIED"),
        ("open('../x', 'w').write('x')", "DENIED"),
        ("import os; os.symlink('/etc/passwd', 'mine'); open('mine').read()", "DENIED"),
        ("import os; os.chdir('..'); os.listdir('.')", "DENIED"),
    ] {
        let output = run(&w, attempt).await;
        let text = airlock_core::text_of(&output.content);
        assert!(
            !text.contains("the host's secret") && !text.contains("root:"),
            "{attempt}: {text}"
        );
        assert_eq!(code(&output), Some(want), "{attempt}: {text}");
    }
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "the host's secret");
    assert!(!root.path().join("workspaces/local/x").exists());
}

#[tokio::test]
#[ignore = "needs plugins/python/build.sh (componentize-py from PyPI); .ci/run runs it"]
async fn hostile_python_sees_no_environment_and_no_arguments() {
    let (_root, w) = workspace(1 << 20);
    let output = run(&w, "import os, sys\n(dict(os.environ), sys.argv, os.getcwd())").await;
    assert_eq!(answer(&output)["result"], "({}, [], '/workspace')", "{output:?}");
}

#[tokio::test]
#[ignore = "needs plugins/python/build.sh (componentize-py from PyPI); .ci/run runs it"]
async fn hostile_python_reaches_no_network() {
    let (_root, w) = workspace(1 << 20);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // A socket is refused (DENIED); a name, even an address, is never looked up (FAILED:
    // gaierror, or urllib's URLError around it).
    for (attempt, want) in [
        (format!("import socket; s = socket.socket(); s.connect(('127.0.0.1', {port}))"), "DENIED"),
        (format!("import socket; socket.create_connection(('127.0.0.1', {port}))"), "FAILED"),
        (
            format!("import urllib.request; urllib.request.urlopen('http://127.0.0.1:{port}/')"),
            "FAILED",
        ),
        ("import socket; socket.getaddrinfo('localhost', 80)".to_owned(), "FAILED"),
        (
            "import socket; s = socket.socket(); s.bind(('0.0.0.0', 0)); s.listen()".to_owned(),
            "DENIED",
        ),
    ] {
        let output = run(&w, &attempt).await;
        assert_eq!(code(&output), Some(want), "{attempt}: {output:?}");
    }
    // Nothing connected: a connection would be waiting to be accepted.
    let accepted = tokio::time::timeout(std::time::Duration::ZERO, listener.accept()).await;
    assert!(accepted.is_err(), "the code reached the listener");
}

#[tokio::test]
#[ignore = "needs plugins/python/build.sh (componentize-py from PyPI); .ci/run runs it"]
async fn hostile_python_spinning_ends_at_its_timeout_and_the_next_call_works() {
    let (_root, w) = workspace(1 << 20);
    let output = run_in(&w, json!({"code": "while True: pass", "timeout_ms": 300})).await;
    assert_eq!(code(&output), Some("TIMEOUT"), "{output:?}");
    assert!(airlock_core::text_of(&output.content).contains("300 ms"), "{output:?}");
    assert_eq!(answer(&run(&w, "1 + 1").await)["result"], "2");
}

#[tokio::test]
#[ignore = "needs plugins/python/build.sh (componentize-py from PyPI); .ci/run runs it"]
async fn hostile_python_allocations_end_at_the_memory_limit() {
    let (_root, w) = workspace(1 << 20);
    let four_gb = "chunks = [bytearray(2**30) for _ in range(4)]";
    for attempt in [
        four_gb,
        "bytearray(2**31 - 1)",
        "print('x' * 10**9)",
        "['x' * 2**20 for _ in range(1000)]",
    ] {
        let output = run(&w, attempt).await;
        let failed = code(&output);
        let memory_error =
            failed == Some("FAILED") && answer(&output)["error"]["type"] == "MemoryError";
        assert!(failed == Some("MEMORY_LIMIT") || memory_error, "{attempt}: {output:?}");
    }
    assert_eq!(answer(&run(&w, "1 + 1").await)["result"], "2");
}

#[tokio::test]
#[ignore = "needs plugins/python/build.sh (componentize-py from PyPI); .ci/run runs it"]
async fn hostile_python_deep_recursion_is_an_error_and_the_next_call_works() {
    let (_root, w) = workspace(1 << 20);
    let output = run(&w, "def f(n): return f(n + 1)\nf(0)").await;
    assert_eq!(answer(&output)["error"]["type"], "RecursionError", "{output:?}");
    let unbounded = "import sys\nsys.setrecursionlimit(10**7)\ndef f(n): return f(n + 1)\nf(0)";
    let output = run(&w, unbounded).await;
    // CPython's frames are on its heap: the memory limit, or the wasm stack, ends it.
    assert!(matches!(code(&output), Some("MEMORY_LIMIT" | "TRAP")), "{output:?}");
    assert_eq!(answer(&run(&w, "1 + 1").await)["result"], "2");
}

#[tokio::test]
#[ignore = "needs plugins/python/build.sh (componentize-py from PyPI); .ci/run runs it"]
async fn hostile_python_starts_no_process() {
    let (_root, w) = workspace(1 << 20);
    for attempt in [
        "import os\nwhile True: os.fork()",
        "import subprocess; subprocess.run(['sh', '-c', 'echo hi'])",
        "import os; os.system('echo hi')",
        "import os; os.execv('/bin/sh', ['sh'])",
        "import multiprocessing; multiprocessing.Process(target=print).start()",
    ] {
        let output = run(&w, attempt).await;
        assert_eq!(code(&output), Some("FAILED"), "{attempt}: {output:?}");
        assert!(answer(&output)["error"]["type"].is_string(), "{attempt}: {output:?}");
    }
}

#[tokio::test]
#[ignore = "needs plugins/python/build.sh (componentize-py from PyPI); .ci/run runs it"]
async fn hostile_python_writing_past_the_workspace_quota_is_stopped_and_undone() {
    let (_root, w) = workspace(1 << 20);
    let output = run(&w, "open('kept.txt', 'w').write('mine')").await;
    assert_eq!(code(&output), None, "{output:?}");
    for attempt in [
        "open('big', 'wb').write(b'x' * 2_000_000)",
        "f = open('endless', 'wb')\nwhile True: f.write(b'x' * 65536)",
        "for i in range(1000): open(f'small-{i}', 'w').close()",
    ] {
        let output = run(&w, attempt).await;
        assert_eq!(code(&output), Some("WORKSPACE_FULL"), "{attempt}: {output:?}");
        let files: Vec<String> = w.scan().unwrap().files.into_keys().collect();
        assert_eq!(files, ["kept.txt"], "{attempt}: what it wrote is removed");
    }
    assert_eq!(answer(&run(&w, "open('kept.txt').read()").await)["result"], "'mine'");
}

// Through the gateway: the demo and the mock model drive the tool; files over HTTP.

/// A gateway with the `python` and `javascript` plugins (and nothing else) under `root`.
async fn gateway_with_python(root: &Path, env: &[(&str, &str)]) -> World {
    for name in ["python", "javascript"] {
        let dir = root.join("plugins").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for file in ["plugin.toml".to_owned(), format!("{name}.wasm")] {
            std::fs::copy(plugin_dir(name).join(&file), dir.join(&file)).unwrap();
        }
    }
    let plugins = root.join("plugins");
    let mut env = env.to_vec();
    env.push(("AIRLOCK_PLUGINS", plugins.to_str().unwrap()));
    world_with(&env).await
}

/// Runs `/tool python {"code": …}` with the demo model; the tool result's text.
async fn demo_python(w: &World, s: &str, code: &str) -> Value {
    demo_tool(w, s, "python", code).await
}

/// Runs `/tool TOOL {"code": …}` with the demo model; the tool result's text.
async fn demo_tool(w: &World, s: &str, tool: &str, code: &str) -> Value {
    let content = format!("/tool {tool} {}", json!({ "code": code }));
    w.run(s, content).await;
    let log = w.gw.log(s).await;
    let result = log.iter().rev().find(|e| e["type"] == "tool/result").expect("a tool result");
    let text = result["data"]["message"]["content"][0]["content"][0]["text"].as_str().unwrap();
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {result}"))
}

#[tokio::test]
#[ignore = "needs plugins/python/build.sh (componentize-py from PyPI); .ci/run runs it"]
async fn python_files_go_over_http_and_last_across_a_restart() {
    let root = tempfile::tempdir().unwrap();
    let mut w = gateway_with_python(root.path(), &[]).await;
    let (_, created) = w.gw.post("/v1/sessions", json!({"model": "demo"})).await;
    let s = created["sessionId"].as_str().unwrap().to_owned();
    let files = format!("/v1/sessions/{s}/files");
    let (status, listed) = w.gw.get(&files).await;
    assert_eq!((status, &listed["items"]), (200, &json!([])), "{listed}");

    let code =
        "open('out.bin', 'wb').write(bytes(range(256)) * 4)\nopen('runs.txt', 'a').write('ran\\n')";
    let wrote = demo_python(&w, &s, code).await;
    let written = json!([{"path": "out.bin", "bytes": 1024}, {"path": "runs.txt", "bytes": 4}]);
    assert_eq!(wrote["files"], written, "{wrote}");
    let (_, listed) = w.gw.get(&files).await;
    assert_eq!(listed["items"][0]["path"], "out.bin");
    assert_eq!(listed["items"][0]["bytes"], 1024);
    let download = w.gw.client.get(w.gw.url(&format!("{files}/out.bin"))).send().await.unwrap();
    assert_eq!(download.status(), 200);
    let header = |name: &str| download.headers()[name].to_str().unwrap().to_owned();
    assert_eq!(header("content-type"), "application/octet-stream");
    assert_eq!(
        header("content-disposition"),
        "attachment; filename=\"out.bin\"; filename*=UTF-8''out.bin"
    );
    assert_eq!(header("x-content-type-options"), "nosniff");
    let bytes = download.bytes().await.unwrap();
    let want: Vec<u8> = (0..4).flat_map(|_| 0..=255u8).collect();
    assert_eq!(bytes.as_ref(), want, "byte for byte");

    let upload = w.gw.client.put(w.gw.url(&format!("{files}/in/data.csv"))).body("a,b\n1,2\n");
    let upload = upload.send().await.unwrap();
    assert_eq!(upload.status(), 200);
    let read = demo_python(&w, &s, "import csv\nlist(csv.reader(open('in/data.csv')))").await;
    assert_eq!(read["result"], "[['a', 'b'], ['1', '2']]", "{read}");
    let csv = w.gw.client.get(w.gw.url(&format!("{files}/in/data.csv"))).send().await.unwrap();
    assert_eq!(csv.headers()["content-type"], "text/csv");

    w.gw = w.gw.restart_in_place();
    let after = demo_python(&w, &s, "open('out.bin', 'rb').read() == bytes(range(256)) * 4").await;
    assert_eq!(after["result"], "True", "the workspace outlived the restart: {after}");
    // The restart read the calls' results from the log: no code ran again.
    let runs = demo_python(&w, &s, "open('runs.txt').read()").await;
    assert_eq!(runs["result"], "'ran\\n'", "{runs}");
    let js = "const b = fs.readFileSync('out.bin'); [b.length, b[255], b[256]]";
    let read = demo_tool(&w, &s, "javascript", js).await;
    assert_eq!(read["result"], "[1024,255,0]", "javascript shares the workspace: {read}");

    for (path, status) in [("nothing", 404), ("..%2Fairlock.db", 400), ("a%2F%2Fb", 400)] {
        let got = w.gw.client.get(w.gw.url(&format!("{files}/{path}"))).send().await.unwrap();
        assert_eq!(got.status(), status, "{path}");
    }
    let gone = w.gw.client.delete(w.gw.url(&format!("{files}/in/data.csv"))).send().await.unwrap();
    assert_eq!(gone.status(), 204);
    let (_, listed) = w.gw.get(&files).await;
    let paths: Vec<&Value> =
        listed["items"].as_array().unwrap().iter().map(|f| &f["path"]).collect();
    assert_eq!(paths, [&json!("out.bin"), &json!("runs.txt")]);

    let workspace = w.dir.path().join("airlock-workspaces/local").join(format!("s-{s}"));
    assert!(workspace.join("out.bin").is_file(), "beside the data file, by default");
    let disposed = w.gw.client.delete(w.gw.url(&format!("/v1/sessions/{s}"))).send().await.unwrap();
    assert!(disposed.status().is_success());
    assert!(!workspace.exists(), "disposing of the session deleted its workspace");
    let (status, _) = w.gw.get(&files).await;
    assert_eq!(status, 409);
}

#[tokio::test]
#[ignore = "needs plugins/python/build.sh (componentize-py from PyPI); .ci/run runs it"]
async fn the_demo_model_drives_print_the_last_value_and_an_exception_with_its_traceback() {
    let root = tempfile::tempdir().unwrap();
    let w = gateway_with_python(root.path(), &[]).await;
    let (_, created) = w.gw.post("/v1/sessions", json!({"model": "demo"})).await;
    let s = created["sessionId"].as_str().unwrap().to_owned();
    let answered = demo_python(&w, &s, "print('six times seven')\n6 * 7").await;
    assert_eq!(answered, json!({"stdout": "six times seven\n", "stderr": "", "result": "42"}));
    let failed = demo_python(&w, &s, "def f():\n    return {}['key']\nf()").await;
    assert_eq!(failed["error"]["type"], "KeyError", "{failed}");
    let traceback = failed["error"]["traceback"].as_str().unwrap();
    assert!(traceback.contains("line 2, in f"), "{traceback}");
    let log = w.gw.log(&s).await;
    let result = log.iter().rev().find(|e| e["type"] == "tool/result").unwrap();
    assert_eq!(result["data"]["error"]["code"], "FAILED", "the model reads it as a tool error");
    let answer = log.iter().rev().find(|e| e["type"] == "assistant/message").unwrap();
    let text = answer["data"]["message"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("KeyError"), "the demo model summarized the error: {text}");
}

#[tokio::test]
#[ignore = "needs plugins/python/build.sh (componentize-py from PyPI); .ci/run runs it"]
async fn a_spinning_code_call_leaves_other_sessions_working() {
    let root = tempfile::tempdir().unwrap();
    let w = gateway_with_python(root.path(), &[]).await;
    let mut sessions = Vec::new();
    for _ in 0..2 {
        let (_, created) = w.gw.post("/v1/sessions", json!({"model": "demo"})).await;
        sessions.push(created["sessionId"].as_str().unwrap().to_owned());
    }
    let spin = json!({"code": "while True: pass", "timeout_ms": 10_000});
    w.send(&sessions[0], json!({"content": format!("/tool python {spin}")})).await;
    // Another session's code runs, and its turn ends, while the first one's spins.
    let answered = demo_python(&w, &sessions[1], "sum(range(10))").await;
    assert_eq!(answered["result"], "45");
    let (_, status) = w.gw.get(&format!("/v1/sessions/{}/status", sessions[0])).await;
    assert_eq!(status["status"], "running", "{status}");
}

#[tokio::test]
#[ignore = "needs plugins/python/build.sh (componentize-py from PyPI); .ci/run runs it"]
async fn the_model_runs_python_and_reads_its_answer() {
    let root = tempfile::tempdir().unwrap();
    let w = gateway_with_python(root.path(), &[]).await;
    let (_, created) = w.gw.post("/v1/sessions", json!({"model": "openai:mock"})).await;
    let s = created["sessionId"].as_str().unwrap().to_owned();
    let arguments = json!({"code": "sum(range(10))"}).to_string();
    w.mock.push(Reply::tool_call("c1", "python", &arguments, 2));
    w.mock.push(Reply::text("The sum is 45.", 1));
    let result = w.run(&s, "add 0..9 in Python").await;
    assert!(result.to_string().contains("The sum is 45."), "{result}");
    let requests = w.mock.requests();
    let tool_message =
        requests[1]["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool");
    let content = tool_message.expect("the model read the result")["content"].to_string();
    assert!(content.contains(r#"\"result\": \"45\""#), "{content}");
}

#[tokio::test]
#[ignore = "needs plugins/python/build.sh (componentize-py from PyPI); .ci/run runs it"]
async fn python_without_import_sockets_is_refused_at_load_naming_the_grant() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("python");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(python_dir().join("python.wasm"), dir.join("python.wasm")).unwrap();
    std::fs::write(dir.join("plugin.toml"), "[grants]\nworkspace = \"/workspace\"\n").unwrap();
    let host = PluginHost::new(Some(&airlock_tests::gateway::compiled_cache())).unwrap();
    let refused = host.load(&dir).await.err().expect("refused").to_string();
    assert!(refused.contains("wasi:sockets/tcp"), "{refused}");
    assert!(refused.contains("`import_sockets = true`"), "{refused}");
}

#[tokio::test]
#[ignore = "needs plugins/python/build.sh (componentize-py from PyPI); .ci/run runs it"]
async fn python_outside_a_session_says_it_needs_a_workspace() {
    let output = python().await.call("python", r#"{"code": "1"}"#).await;
    assert_eq!(code(&output), Some("FAILED"), "{output:?}");
    assert!(airlock_core::text_of(&output.content).contains("workspace"), "{output:?}");
}

// `javascript`: the same contract, the workspace through a Node-like `fs`.

async fn js(workspace: &Workspace, code: &str) -> ToolOutput {
    js_in(workspace, json!({ "code": code })).await
}

async fn js_in(workspace: &Workspace, arguments: Value) -> ToolOutput {
    javascript().await.call_in("javascript", &arguments.to_string(), Some(workspace)).await
}

#[tokio::test]
#[ignore = "needs plugins/javascript/build.sh (jco from npm); .ci/run runs it"]
async fn javascript_answers_the_last_expression_and_what_was_printed() {
    let (_root, w) = workspace(1 << 20);
    let output = js(&w, "1 + 1").await;
    assert_eq!(code(&output), None, "{output:?}");
    assert_eq!(answer(&output), json!({"stdout": "", "stderr": "", "result": "2"}));
    let output = js(&w, "const x = 6; console.log('x is', x, {a: [1]}); 'ab'.repeat(2)").await;
    let want = json!({"stdout": "x is 6 {\"a\":[1]}\n", "stderr": "", "result": "\"abab\""});
    assert_eq!(answer(&output), want);
    let output = js(&w, "console.error('oops'); let y;").await;
    assert_eq!(
        answer(&output),
        json!({"stdout": "", "stderr": "oops\n"}),
        "undefined is no result"
    );
    let output = js(&w, "[1, 2, 3].map((n) => n * 2).reduce((a, b) => a + b)").await;
    assert_eq!(answer(&output)["result"], "12");
}

#[tokio::test]
#[ignore = "needs plugins/javascript/build.sh (jco from npm); .ci/run runs it"]
async fn javascript_exception_comes_with_its_traceback() {
    let (_root, w) = workspace(1 << 20);
    let output = js(
        &w,
        "console.log('before');\nfunction half(n) {\n  throw new TypeError('no ' + n);\n}\nhalf(4)",
    )
    .await;
    assert_eq!(code(&output), Some("FAILED"), "{output:?}");
    let answer = answer(&output);
    assert_eq!(answer["stdout"], "before\n");
    assert_eq!(
        (&answer["error"]["type"], &answer["error"]["message"]),
        (&json!("TypeError"), &json!("no 4"))
    );
    assert!(answer["error"]["traceback"].as_str().unwrap().contains("half"), "{answer}");
    let output = js(&w, "function (").await;
    assert_eq!(self::answer(&output)["error"]["type"], "SyntaxError", "{output:?}");
    assert_eq!(code(&js_in(&w, json!({"cod": "1"})).await), Some("BAD_ARGUMENTS"));
}

#[tokio::test]
#[ignore = "needs plugins/javascript/build.sh (jco from npm); .ci/run runs it"]
async fn javascript_output_is_cut_with_a_note() {
    let (_root, w) = workspace(1 << 20);
    let output = js(&w, "console.log('x'.repeat(100000)); 'y'.repeat(50000)").await;
    let answer = answer(&output);
    let stdout = answer["stdout"].as_str().unwrap();
    assert!(stdout.starts_with(&"x".repeat(20_000)));
    assert!(stdout.ends_with("\n[output cut: 80001 more characters not shown]"), "{stdout:.80}");
    assert!(
        answer["result"]
            .as_str()
            .unwrap()
            .ends_with("[output cut: 30002 more characters not shown]")
    );
}

#[tokio::test]
#[ignore = "needs plugins/javascript/build.sh (jco from npm); .ci/run runs it"]
async fn javascript_files_last_between_calls_and_are_listed() {
    let (_root, w) = workspace(1 << 20);
    let output = js(&w, "fs.mkdirSync('out'); fs.writeFileSync('out/a.txt', 'hello')").await;
    assert_eq!(answer(&output)["files"], json!([{"path": "out/a.txt", "bytes": 5}]), "{output:?}");
    let read = "fs.appendFileSync('/workspace/out/a.txt', '!'); [fs.readFileSync('out/a.txt', 'utf8'), fs.readdirSync('out'), fs.existsSync('nope')]";
    let output = js(&w, read).await;
    assert_eq!(answer(&output)["result"], r#"["hello!",["a.txt"],false]"#, "{output:?}");
    let output = js(&w, "fs.readFileSync('nope')").await;
    assert_eq!(
        answer(&output)["error"]["message"].as_str().unwrap().split(':').next(),
        Some("ENOENT")
    );
    let output = js(&w, "typeof x").await;
    assert_eq!(answer(&output)["result"], "\"undefined\"", "variables do not carry over");
}

#[tokio::test]
#[ignore = "needs plugins/javascript/build.sh (jco from npm); .ci/run runs it"]
async fn hostile_javascript_reads_and_changes_nothing_outside_its_workspace() {
    let (root, w) = workspace(1 << 20);
    let secret = plant(root.path(), &w);
    for attempt in [
        "fs.readFileSync('/etc/passwd', 'utf8')",
        "fs.readdirSync('/')",
        "fs.readFileSync('../secret.txt', 'utf8')",
        "fs.readFileSync('/workspace/../../secret.txt', 'utf8')",
        "fs.readFileSync('absolute', 'utf8')",
        "fs.readFileSync('relative', 'utf8')",
        "fs.readFileSync('up/secret.txt', 'utf8')",
        "fs.readdirSync('up')",
        "fs.writeFileSync('../x', 'x')",
        "fs.writeFileSync('up/x', 'x')",
        "fs.unlinkSync('../secret.txt')",
    ] {
        let output = js(&w, attempt).await;
        let text = airlock_core::text_of(&output.content);
        assert!(
            !text.contains("the host's secret") && !text.contains("root:"),
            "{attempt}: {text}"
        );
        assert!(matches!(code(&output), Some("DENIED" | "FAILED")), "{attempt}: {text}");
    }
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "the host's secret");
    assert!(!root.path().join("workspaces/local/x").exists());
}

#[tokio::test]
#[ignore = "needs plugins/javascript/build.sh (jco from npm); .ci/run runs it"]
async fn hostile_javascript_sees_no_environment_network_or_processes() {
    let (_root, w) = workspace(1 << 20);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let probe = "[typeof process, typeof require, typeof fetch, typeof XMLHttpRequest, typeof WebSocket, typeof Deno]";
    let output = js(&w, probe).await;
    let none = r#"["undefined","undefined","undefined","undefined","undefined","undefined"]"#;
    assert_eq!(answer(&output)["result"], none);
    for attempt in [
        format!("fetch('http://127.0.0.1:{port}/')"),
        "require('child_process').execSync('echo hi')".to_owned(),
        "process.env".to_owned(),
        // StarlingMonkey's module loader has nothing to load from: it traps.
        "import('node:fs')".to_owned(),
    ] {
        let output = js(&w, &attempt).await;
        assert!(matches!(code(&output), Some("FAILED" | "TRAP")), "{attempt}: {output:?}");
    }
    let accepted = tokio::time::timeout(std::time::Duration::ZERO, listener.accept()).await;
    assert!(accepted.is_err(), "the code reached the listener");
}

#[tokio::test]
#[ignore = "needs plugins/javascript/build.sh (jco from npm); .ci/run runs it"]
async fn hostile_javascript_spinning_recursing_and_allocating_end_as_tool_errors() {
    let (_root, w) = workspace(1 << 20);
    let output = js_in(&w, json!({"code": "while (true) {}", "timeout_ms": 300})).await;
    assert_eq!(code(&output), Some("TIMEOUT"), "{output:?}");
    let output = js(&w, "function f(n) { return f(n + 1); } f(0)").await;
    assert_eq!(answer(&output)["error"]["type"], "InternalError", "too much recursion: {output:?}");
    for attempt in [
        "const a = []; while (true) a.push(new Array(1 << 20).fill(1));",
        "new ArrayBuffer(4 * 2 ** 30)",
        "console.log('x'.repeat(1e9))",
    ] {
        let output = js(&w, attempt).await;
        assert!(matches!(code(&output), Some("MEMORY_LIMIT" | "FAILED")), "{attempt}: {output:?}");
    }
    assert_eq!(answer(&js(&w, "1 + 1").await)["result"], "2", "the next call works");
}

#[tokio::test]
#[ignore = "needs plugins/javascript/build.sh (jco from npm); .ci/run runs it"]
async fn hostile_javascript_writing_past_the_workspace_quota_is_refused() {
    let (_root, w) = workspace(1 << 20);
    assert_eq!(code(&js(&w, "fs.writeFileSync('kept.txt', 'mine')").await), None);
    for attempt in [
        "fs.writeFileSync('big', 'x'.repeat(2000000))",
        "for (let i = 0; ; i++) fs.writeFileSync(`small-${i}`, '')",
        "try { fs.writeFileSync('big', 'x'.repeat(2000000)) } catch (e) {} 'caught'",
    ] {
        let output = js(&w, attempt).await;
        assert_eq!(code(&output), Some("WORKSPACE_FULL"), "{attempt}: {output:?}");
        let files: Vec<String> = w.scan().unwrap().files.into_keys().collect();
        assert_eq!(files, ["kept.txt"], "{attempt}: what it wrote is removed");
    }
}
