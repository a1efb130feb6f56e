//! Through the gateway: the demo and the mock model drive the tools; files over HTTP; a restart.

use super::*;

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
