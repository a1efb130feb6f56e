//! `javascript`: the same contract, the workspace through a Node-like `fs`.

use super::*;

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
        // 8 MB a step, so the limit comes in a few hundred milliseconds, well inside the timeout even
        // on a loaded machine (`new Array(n).fill(1)` runs interpreted: seconds to get there).
        "const a = []; while (true) a.push(new Float64Array(1 << 20));",
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
