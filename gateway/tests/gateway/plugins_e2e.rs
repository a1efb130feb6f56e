//! Plugins through the real `airlock serve`: the demo model calling `calc`, hostile plugins
//! spinning while other sessions carry on, parallel-safe and exclusive calls, and `--core`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use airlock_sandbox::plugins::BUILT_DIR;
use airlock_tests::Reply;
use airlock_tests::gateway::Frame;
use airlock_tests::world::{World, world_with};
use serde_json::{Value, json};

/// A plugins directory with the given `(name, plugin.toml)` pairs, from the built components.
fn plugins(root: &Path, wanted: &[(&str, &str)]) -> PathBuf {
    let dir = root.join("plugins");
    for (name, manifest) in wanted {
        std::fs::create_dir_all(dir.join(name)).unwrap();
        std::fs::write(dir.join(name).join("plugin.toml"), manifest).unwrap();
        let built = Path::new(BUILT_DIR).join(format!("{name}.wasm"));
        std::fs::copy(built, dir.join(name).join(format!("{name}.wasm"))).unwrap();
    }
    dir
}

async fn world_with_plugins(root: &Path, wanted: &[(&str, &str)]) -> World {
    let dir = plugins(root, wanted);
    world_with(&[("AIRLOCK_PLUGINS", dir.to_str().unwrap())]).await
}

async fn session(w: &World, body: Value) -> String {
    let (code, session) = w.gw.post("/v1/sessions", body).await;
    assert_eq!(code, 201, "{session}");
    session["sessionId"].as_str().unwrap().to_owned()
}

fn tool_results(log: &[Value]) -> Vec<&Value> {
    log.iter().filter(|e| e["type"] == "tool/result").collect()
}

fn result_text(result: &Value) -> String {
    result["data"]["message"]["content"][0]["content"][0]["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn demo_model_calls_calc_and_the_answer_shows_in_the_log_and_over_sse() {
    let root = tempfile::tempdir().unwrap();
    let w = world_with_plugins(root.path(), &[("calc", "[limits]\ntimeout_ms = 2000\n")]).await;
    let (_, tools) = w.gw.get("/v1/tools").await;
    let calc = tools["items"].as_array().unwrap().iter().find(|t| t["name"] == "calc").unwrap();
    assert_eq!(calc["origin"], "plugin:calc");
    assert_eq!(calc["parameters"]["required"], json!(["expression"]));

    let s = session(&w, json!({"model": "demo"})).await;
    let mut sse = w.gw.sse(&s, None).await;
    w.send(&s, json!({"content": r#"/tool calc {"expression": "6 * 7"}"#})).await;
    let frames = sse.until_idle().await;
    let results: Vec<&Value> = frames
        .iter()
        .filter_map(|f| match f {
            Frame::Event(_, e) if e["type"] == "tool/result" => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 1, "the result came over SSE");
    assert!(result_text(results[0]).contains(r#""value":42"#), "{}", results[0]);
    let log = w.gw.log(&s).await;
    let answer = log.iter().rev().find(|e| e["type"] == "assistant/message").unwrap();
    let text = answer["data"]["message"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(r#""value":42"#), "the model summarized it: {text}");
}

#[tokio::test]
async fn a_session_can_be_given_only_some_tools() {
    let root = tempfile::tempdir().unwrap();
    let w = world_with_plugins(root.path(), &[("calc", "")]).await;
    let (code, body) = w.gw.post("/v1/sessions", json!({"tools": ["nope"]})).await;
    assert_eq!(code, 400, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("calc"), "names the tools: {body}");
    let s = session(&w, json!({"model": "openai:mock", "tools": ["calc"]})).await;
    w.mock.push(Reply::text("ok", 1));
    let mut sse = w.gw.sse(&s, None).await;
    w.send(&s, json!({"content": "hi"})).await;
    sse.until_idle().await;
    let requests = w.mock.requests();
    let offered: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["calc"]);
}

#[tokio::test]
async fn while_three_hostile_plugins_spin_another_session_still_completes_and_enqueues_answer_fast()
{
    let root = tempfile::tempdir().unwrap();
    let manifest = "[limits]\ntimeout_ms = 4000\nmemory_mb = 64\n";
    let w = world_with_plugins(root.path(), &[("hostile", manifest)]).await;
    let mut spinners = Vec::new();
    for i in 0..3 {
        w.mock.push(Reply::tool_call(&format!("spin-{i}"), "hostile_spin", "{}", 1));
    }
    for _ in 0..3 {
        let s = w.gw.session().await;
        let mut sse = w.gw.sse(&s, None).await;
        w.send(&s, json!({"content": "spin"})).await;
        sse.until(|f| matches!(f, Frame::Event(_, e) if e["type"] == "tool/call")).await;
        spinners.push((s, sse));
    }
    // All three spin now. Another session works as usual.
    w.mock.push(Reply::text("Still responsive.", 3));
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    let mut slowest = Duration::ZERO;
    for i in 0..5 {
        let started = Instant::now();
        w.send(&s, json!({"content": format!("note {i}"), "delivery": "inject"})).await;
        slowest = slowest.max(started.elapsed());
    }
    eprintln!("slowest enqueue while three plugins spin: {slowest:?}");
    assert!(slowest < Duration::from_millis(100), "an enqueue took {slowest:?}");
    w.send(&s, json!({"content": "hello"})).await;
    let frames = sse.until_idle().await;
    assert!(frames.iter().any(|f| matches!(f, Frame::Event(_, e)
        if e["type"] == "turn/end" && e["data"]["reason"]["kind"] == "completed")));
    // The spinners end as TIMEOUT results; their sessions go on.
    for (_, mut sse) in spinners {
        w.mock.push(Reply::text("It timed out.", 1));
        let frames = sse.until_idle().await;
        let timed_out = frames.iter().any(|f| {
            matches!(f, Frame::Event(_, e)
            if e["type"] == "tool/result" && e["data"]["error"]["code"] == "TIMEOUT")
        });
        assert!(timed_out, "{frames:?}");
    }
}

#[tokio::test]
async fn parallel_safe_calls_overlap_and_an_exclusive_call_runs_alone_with_results_in_model_order()
{
    let root = tempfile::tempdir().unwrap();
    let w = world_with_plugins(root.path(), &[("hostile", "[limits]\ntimeout_ms = 5000\n")]).await;
    w.mock.push(
        Reply::tool_call("a", "hostile_nap", "{}", 1)
            .and_tool_call("b", "hostile_nap", "{}", 1)
            .and_tool_call("c", "hostile_nap_alone", "{}", 1),
    );
    w.mock.push(Reply::text("Rested.", 1));
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    w.send(&s, json!({"content": "nap"})).await;
    sse.until_idle().await;
    let log = w.gw.log(&s).await;
    let results = tool_results(&log);
    let ids: Vec<&str> = results
        .iter()
        .map(|r| r["data"]["message"]["content"][0]["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a", "b", "c"], "results in the order the model asked");
    let span = |r: &Value| {
        let v: Value = serde_json::from_str(&result_text(r)).unwrap();
        (v["start"].as_u64().unwrap(), v["end"].as_u64().unwrap())
    };
    let (a, b, c) = (span(results[0]), span(results[1]), span(results[2]));
    assert!(a.0 < b.1 && b.0 < a.1, "the parallel-safe calls overlapped: {a:?} {b:?}");
    assert!(c.0 >= a.1.max(b.1), "the exclusive call ran after both: {c:?} after {a:?} {b:?}");
}

/// The JavaScript plugin from the repository's own `plugins/` (as `--plugins plugins` names it):
/// listed among the tools, and called by the demo model.
#[tokio::test]
#[ignore = "needs plugins/slugify-js/build.sh (jco from npm); .ci/run runs it"]
async fn the_javascript_plugin_is_listed_and_the_demo_model_calls_it() {
    let plugins = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins");
    let w = world_with(&[("AIRLOCK_PLUGINS", plugins.to_str().unwrap())]).await;
    let (_, tools) = w.gw.get("/v1/tools").await;
    let items = tools["items"].as_array().unwrap();
    let slugify = items.iter().find(|t| t["name"] == "slugify").expect("slugify is listed");
    assert_eq!(slugify["origin"], "plugin:slugify-js");
    let s = session(&w, json!({"model": "demo"})).await;
    let task = r#"/tool slugify {"text": "Crème Brûlée, 2nd ed."}"#;
    let (code, run) = w.gw.post(&format!("/v1/sessions/{s}/runs"), json!({"content": task})).await;
    assert_eq!(code, 200, "{run}");
    let answer = r#"The slugify tool returned: {"slug":"creme-brulee-2nd-ed"}"#;
    assert_eq!(run["finalResponse"], answer, "{run}");
}
