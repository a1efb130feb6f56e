//! `python`: the contract, its files, the hostile code it contains, and its grants at load.

use super::*;

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
