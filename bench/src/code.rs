//! The code tools: a call of `python` (and of `javascript`) as the gateway makes it, in-process
//! through the plugin host the binary links, cold (a fresh instance from the pre-initialized
//! snapshot, as every call is), and beside it the same snippets in `llm-wasm-sandbox` from PyPI
//! (a WebAssembly sandbox for LLM code: CPython under wasmtime-py), as a ratio.
//!
//! Needs `plugins/python/build.sh` and `plugins/javascript/build.sh` to have run (skipped
//! otherwise); the comparison makes its virtualenv under target/ the first time.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use airlock_providers::tools::{Workspace, Workspaces};
use airlock_sandbox::plugins::{Plugin, PluginHost};
use serde_json::{Value, json};

use crate::measure::{percentile, rss_mb};
use crate::{Row, Size};

const SCENARIO: &str = "code tools";
/// The snippets, as the issue names them: the last expression, and imports.
const ONE_PLUS_ONE: &str = "1 + 1";
const IMPORTS: &str = "import json, re\njson.dumps(re.findall('a', 'banana'))";
/// The pinned comparison (`bench/llm-wasm-sandbox.txt`).
const COMPARED: &str = "llm-wasm-sandbox";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The rows of the code tools.
pub async fn calls(work: &Path, size: Size) -> Vec<Row> {
    let (Some(python), javascript) = (load(work, "python").await, load(work, "javascript").await)
    else {
        return Vec::new();
    };
    let workspace = Workspaces::new(work.join("workspaces"), 1 << 30).of(None, "bench");
    let calls = if size.turns >= 1_000 { 200 } else { 20 };
    let mut rows = Vec::new();
    let cold = timed(&python, "python", &workspace, ONE_PLUS_ONE, calls).await;
    rows.push(Row::new(SCENARIO, "python `1 + 1`, median", cold.median, "ms"));
    rows.push(Row::new(SCENARIO, "python `1 + 1`, p99", cold.p99, "ms"));
    let imports = timed(&python, "python", &workspace, IMPORTS, calls).await;
    rows.push(Row::new(SCENARIO, "python `import json, re`…, median", imports.median, "ms"));
    if let Some(javascript) = &javascript {
        let js = timed(javascript, "javascript", &workspace, ONE_PLUS_ONE, calls).await;
        rows.push(Row::new(SCENARIO, "javascript `1 + 1`, median", js.median, "ms"));
    }
    rows.extend(concurrent(&python, &workspace).await);
    let compared = if size.turns >= 1_000 { 10 } else { 1 };
    match llm_wasm_sandbox(work, compared) {
        Ok([one, imports_there]) => {
            let name = format!("{COMPARED} `1 + 1`, median");
            rows.push(Row::new(SCENARIO, name, one, "ms"));
            let name = format!("{COMPARED} `import json, re`…, median");
            rows.push(Row::new(SCENARIO, name, imports_there, "ms"));
            let ratio = format!("{COMPARED} ÷ python, `1 + 1`");
            rows.push(Row::new(SCENARIO, ratio, one / cold.median, "×"));
            let ratio = format!("{COMPARED} ÷ python, `import json, re`…");
            rows.push(Row::new(SCENARIO, ratio, imports_there / imports.median, "×"));
        }
        Err(why) => eprintln!("airlock-bench: {COMPARED} skipped: {why}"),
    }
    rows
}

/// The plugin `name` from `plugins/`, compiled into a cache under `work`; none if not built.
async fn load(work: &Path, name: &str) -> Option<Arc<Plugin>> {
    let dir = repo().join("plugins").join(name);
    if !dir.join(format!("{name}.wasm")).is_file() {
        eprintln!("airlock-bench: {name} skipped: run plugins/{name}/build.sh first");
        return None;
    }
    let host = PluginHost::new(Some(&work.join("plugin-cache"))).expect("a plugin host");
    Some(host.load(&dir).await.unwrap_or_else(|e| panic!("{e}")))
}

struct Timing {
    median: f64,
    p99: f64,
}

/// `calls` calls of `code`, one at a time, after one to warm the caches.
async fn timed(
    plugin: &Plugin,
    tool: &str,
    workspace: &Workspace,
    code: &str,
    calls: usize,
) -> Timing {
    let arguments = json!({ "code": code }).to_string();
    let call = || plugin.call_in(tool, &arguments, Some(workspace));
    let output = call().await;
    assert_eq!(output.error_code, None, "{tool} {code:?}: {output:?}");
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        call().await;
        samples.push(started.elapsed());
    }
    Timing { median: percentile(&mut samples, 50.0), p99: percentile(&mut samples, 99.0) }
}

/// 50 calls at once: the memory each holds while it runs (this process's RSS, during calls
/// that wait 300 ms, less before, over 50), and how long 50 calls of `1 + 1` take together.
async fn concurrent(python: &Plugin, workspace: &Workspace) -> Vec<Row> {
    const AT_ONCE: usize = 50;
    let before = rss_mb(std::process::id());
    let waiting = json!({"code": "import time\ntime.sleep(0.3)"}).to_string();
    let held = futures::future::join_all(
        (0..AT_ONCE).map(|_| python.call_in("python", &waiting, Some(workspace))),
    );
    let sample = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        rss_mb(std::process::id())
    };
    let (outputs, during) = tokio::join!(held, sample);
    assert!(outputs.iter().all(|o| o.error_code.is_none()), "{:?}", outputs[0]);
    let per_call = (during - before) / AT_ONCE as f64;

    let quick = json!({ "code": ONE_PLUS_ONE }).to_string();
    let started = Instant::now();
    let outputs = futures::future::join_all(
        (0..AT_ONCE).map(|_| python.call_in("python", &quick, Some(workspace))),
    )
    .await;
    let took = started.elapsed().as_secs_f64() * 1000.0;
    assert!(outputs.iter().all(|o| o.error_code.is_none()));
    vec![
        Row::new(SCENARIO, "python, memory per concurrent call (50 at once)", per_call, "MB"),
        Row::new(SCENARIO, "python, 50 concurrent `1 + 1`, all done", took, "ms"),
    ]
}

/// The median of `calls` runs of each snippet in llm-wasm-sandbox, in ms, from
/// `bench/llm_wasm_sandbox.py` in its virtualenv (made from `bench/llm-wasm-sandbox.txt`).
fn llm_wasm_sandbox(work: &Path, calls: usize) -> Result<[f64; 2], String> {
    let repo = repo();
    let venv = repo.join("target/llm-wasm-sandbox-venv");
    let made = Command::new("bash")
        .arg(repo.join("tests/python-venv.sh"))
        .arg(&venv)
        .arg(repo.join("bench/llm-wasm-sandbox.txt"))
        .arg(COMPARED)
        .status()
        .map_err(|e| format!("bash: {e}"))?;
    if !made.success() {
        return Err(format!("its virtualenv could not be made ({made})"));
    }
    let ran = Command::new(venv.join("bin/python"))
        .arg(repo.join("bench/llm_wasm_sandbox.py"))
        .arg(calls.to_string())
        .args([ONE_PLUS_ONE, IMPORTS])
        .current_dir(work)
        .output()
        .map_err(|e| format!("python: {e}"))?;
    if !ran.status.success() {
        return Err(String::from_utf8_lossy(&ran.stderr).into_owned());
    }
    // Its own log lines go to stdout too: the answer is the last line.
    let stdout = String::from_utf8_lossy(&ran.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    let medians: Value = serde_json::from_str(last).map_err(|e| format!("{e}: {last:?}"))?;
    let median = |i: usize| medians[i].as_f64().ok_or("no median".to_owned());
    Ok([median(0)?, median(1)?])
}
