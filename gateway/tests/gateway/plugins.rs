//! Plugin sandboxing: the shipped plugins (`calc`, `notes`, `fetch`, and the Python `wordcount`)
//! and a hostile one (`tests/plugins/hostile`), each a real component built from source, loaded
//! by the real plugin host from a per-test plugins directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use airlock_providers::tools::ToolOutput;
use airlock_sandbox::plugins::{BUILT_DIR, Plugin, PluginHost};
use serde_json::{Value, json};

/// A plugins directory holding one plugin: `<name>/plugin.toml` and the built `<name>.wasm`.
fn plugin_dir(root: &Path, name: &str, manifest: &str) -> PathBuf {
    plugin_dir_as(root, name, name, manifest)
}

/// A plugins directory holding the built plugin `built` under the name `name`.
fn plugin_dir_as(root: &Path, name: &str, built: &str, manifest: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("plugin.toml"), manifest).unwrap();
    let built = Path::new(BUILT_DIR).join(format!("{built}.wasm"));
    std::fs::copy(&built, dir.join(format!("{name}.wasm"))).unwrap();
    dir
}

async fn load(root: &Path, name: &str, manifest: &str) -> Arc<Plugin> {
    load_dir(root, &plugin_dir(root, name, manifest)).await
}

async fn load_dir(root: &Path, dir: &Path) -> Arc<Plugin> {
    let host = PluginHost::new(Some(&root.join("cache"))).unwrap();
    host.load(dir).await.unwrap_or_else(|e| panic!("{e}"))
}

fn code(output: &ToolOutput) -> Option<&str> {
    output.error_code.as_deref()
}

fn text(output: &ToolOutput) -> String {
    airlock_core::text_of(&output.content)
}

/// Calls one tool of the hostile plugin, loaded fresh under `manifest`.
async fn hostile(manifest: &str, tool: &str) -> ToolOutput {
    let root = tempfile::tempdir().unwrap();
    load(root.path(), "hostile", manifest).await.call(tool, "{}").await
}

const HOSTILE: &str = "[limits]\ntimeout_ms = 500\nmemory_mb = 128\n";

#[tokio::test]
async fn hostile_infinite_loop_times_out_within_its_deadline() {
    let root = tempfile::tempdir().unwrap();
    let plugin = load(root.path(), "hostile", HOSTILE).await;
    let started = Instant::now();
    let output = plugin.call("hostile_spin", "{}").await;
    let took = started.elapsed();
    assert_eq!(code(&output), Some("TIMEOUT"), "{output:?}");
    assert!(text(&output).contains("500 ms"), "{output:?}");
    assert!(took >= Duration::from_millis(500) && took < Duration::from_secs(5), "took {took:?}");
}

#[tokio::test]
async fn hostile_memory_bomb_hits_memory_limit() {
    let output = hostile(HOSTILE, "hostile_bomb").await;
    assert_eq!(code(&output), Some("MEMORY_LIMIT"), "{output:?}");
    assert!(text(&output).contains("128 MiB"));
}

#[tokio::test]
async fn hostile_panic_is_a_trap() {
    let root = tempfile::tempdir().unwrap();
    let plugin = load(root.path(), "hostile", HOSTILE).await;
    let output = plugin.call("hostile_crash", "{}").await;
    assert_eq!(code(&output), Some("TRAP"), "{output:?}");
    // The plugin is fine for the next call: every call gets a fresh instance.
    assert_eq!(text(&plugin.call("hostile_ok", "{}").await), "fine");
}

#[tokio::test]
async fn hostile_100_mb_output_is_output_too_large() {
    let output = hostile(&format!("{HOSTILE}max_output_kb = 1024\n"), "hostile_flood").await;
    assert_eq!(code(&output), Some("OUTPUT_TOO_LARGE"), "{output:?}");
    assert!(text(&output).contains("104857600 bytes"), "{output:?}");
}

#[tokio::test]
async fn hostile_deep_recursion_is_a_trap() {
    let output = hostile(HOSTILE, "hostile_recurse").await;
    assert_eq!(code(&output), Some("TRAP"), "{output:?}");
    assert!(text(&output).contains("call stack exhausted"), "{output:?}");
}

#[tokio::test]
async fn hostile_fuel_budget_ends_a_loop_as_timeout() {
    let manifest = "[limits]\ntimeout_ms = 60000\nmemory_mb = 64\nfuel = 10_000_000\n";
    let output = hostile(manifest, "hostile_spin").await;
    assert_eq!(code(&output), Some("TIMEOUT"), "{output:?}");
    assert!(text(&output).contains("fuel"), "{output:?}");
}

#[tokio::test]
async fn a_plugin_importing_what_it_was_not_granted_is_refused_at_load() {
    let root = tempfile::tempdir().unwrap();
    // `fetch` imports wasi:http; this manifest grants no host.
    let dir = plugin_dir(root.path(), "fetch", "[limits]\ntimeout_ms = 1000\n");
    let error = PluginHost::new(None).unwrap().load(&dir).await.err().expect("refused");
    let message = error.to_string();
    assert!(message.contains("wasi:http/outgoing-handler"), "{message}");
    assert!(message.contains("http_hosts"), "says how to grant it: {message}");
}

/// The hostile plugin with `/data` (its `./data`, read-only) granted, and a secret beside it.
fn hostile_with_data(root: &Path) -> PathBuf {
    std::fs::write(root.join("secret.txt"), "the secret").unwrap();
    let manifest = format!("{HOSTILE}[grants]\ndirs = {{ \"/data\" = {{ path = \"./data\" }} }}\n");
    let dir = plugin_dir(root, "hostile", &manifest);
    std::fs::create_dir(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/inside.txt"), "inside").unwrap();
    std::os::unix::fs::symlink(root.join("secret.txt"), dir.join("data/link")).unwrap();
    dir
}

#[tokio::test]
async fn hostile_reads_outside_its_grant_find_nothing() {
    let root = tempfile::tempdir().unwrap();
    let plugin = load_dir(root.path(), &hostile_with_data(root.path())).await;
    assert_eq!(text(&plugin.call("hostile_read", r#""/data/inside.txt""#).await), "inside");
    let listed = text(&plugin.call("hostile_list", r#""/data""#).await);
    assert!(listed.contains("inside.txt"), "{listed}");
    let outside = [
        "/etc/passwd",
        "/proc/self/environ",
        "/data/../secret.txt",
        "/data/../../secret.txt",
        "../secret.txt",
        "secret.txt",
        "/data/link",
    ];
    for path in outside {
        let output = plugin.call("hostile_read", &json!(path).to_string()).await;
        assert_eq!(code(&output), Some("DENIED"), "{path}: {output:?}");
        assert!(!text(&output).contains("the secret") && !text(&output).contains("root:"));
    }
    for path in ["/", "/data/..", "/proc", "/etc"] {
        let output = plugin.call("hostile_list", &json!(path).to_string()).await;
        assert_eq!(code(&output), Some("DENIED"), "{path}: {output:?}");
    }
}

#[tokio::test]
async fn hostile_writes_outside_its_grant_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let dir = hostile_with_data(root.path());
    let plugin = load_dir(root.path(), &dir).await;
    for path in ["/data/new.txt", "/data/link", "/data/../x.txt", "/tmp/x.txt", "/x.txt", "x.txt"] {
        let output = plugin.call("hostile_write", &json!(path).to_string()).await;
        assert_eq!(code(&output), Some("DENIED"), "{path}: {output:?}");
    }
    assert!(!dir.join("data/new.txt").exists() && !dir.join("x.txt").exists());
    assert_eq!(std::fs::read_to_string(root.path().join("secret.txt")).unwrap(), "the secret");
}

#[tokio::test]
async fn hostile_sees_no_environment_and_no_arguments() {
    let output = hostile(HOSTILE, "hostile_env").await;
    assert_eq!(text(&output), "vars=[] args=[]");
}

/// The gateway's log lines emitted on this thread while it lives, as JSON.
struct Captured {
    buffer: Arc<std::sync::Mutex<Vec<u8>>>,
    _guard: tracing::subscriber::DefaultGuard,
}

impl Captured {
    fn start() -> Captured {
        let buffer = Arc::new(std::sync::Mutex::new(Vec::new()));
        let writer = buffer.clone();
        let subscriber =
            tracing_subscriber::fmt().json().with_writer(move || Writer(writer.clone())).finish();
        Captured { buffer, _guard: tracing::subscriber::set_default(subscriber) }
    }

    /// The plugin's own lines (their messages' lengths) and the warnings about what it dropped.
    fn of(&self, plugin: &str) -> (Vec<usize>, Vec<Value>) {
        let buffer = self.buffer.lock().unwrap();
        let text = String::from_utf8_lossy(&buffer);
        let lines = text.lines().map(|line| {
            serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"))
        });
        let (mut kept, mut dropped) = (Vec::new(), Vec::new());
        for line in lines.filter(|line| line["fields"]["plugin"] == plugin) {
            if line["fields"]["dropped_lines"].is_u64() {
                dropped.push(line["fields"].clone());
            } else {
                kept.push(line["fields"]["message"].as_str().unwrap().len());
            }
        }
        (kept, dropped)
    }
}

struct Writer(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Writer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

const FLOOD: &str = "[limits]\ntimeout_ms = 60000\nmemory_mb = 64\n";

#[tokio::test]
async fn hostile_log_flood_leaves_its_call_budget_and_one_line_and_returns() {
    let logs = Captured::start();
    let root = tempfile::tempdir().unwrap();
    // Its own name, so that the metric counts only this test's plugin.
    let plugin =
        load_dir(root.path(), &plugin_dir_as(root.path(), "flooder", "hostile", FLOOD)).await;
    let output = plugin.call("hostile_log_flood", "{}").await;
    assert_eq!(text(&output), "flooded", "the call still returns");

    let (kept, dropped) = logs.of("flooder");
    assert!(
        !kept.is_empty() && kept.iter().all(|&len| len == 4096),
        "lines cut to 4 KiB: {kept:?}"
    );
    assert!(kept.iter().sum::<usize>() <= 64 << 10, "at most the 64 KiB budget: {kept:?}");
    assert_eq!(dropped.len(), 1, "one line says what was dropped: {dropped:?}");
    let lines = 20_000 - kept.len() as u64;
    assert_eq!(dropped[0]["dropped_lines"], lines);
    assert_eq!(dropped[0]["dropped_bytes"], lines * 4096);
    assert!(dropped[0]["message"].as_str().unwrap().contains("max_log_kb"), "{dropped:?}");
    let metric = airlock_base::metrics::global()
        .plugin_log_dropped
        .get_or_create(&vec![("plugin", "flooder".to_owned())])
        .get();
    assert_eq!(metric, lines * 4096);
}

#[tokio::test]
async fn hostile_log_floods_share_the_plugins_budget_a_minute() {
    let logs = Captured::start();
    let root = tempfile::tempdir().unwrap();
    let manifest = format!("{FLOOD}max_log_kb = 64\nlog_kb_per_minute = 96\n");
    let plugin = load(root.path(), "hostile", &manifest).await;
    let started = Instant::now();
    for _ in 0..2 {
        assert_eq!(text(&plugin.call("hostile_log_flood", "{}").await), "flooded");
    }
    let minutes = started.elapsed().as_secs_f64() / 60.0;
    let (kept, dropped) = logs.of("hostile");
    assert_eq!(dropped.len(), 2, "one line for each call: {dropped:?}");
    // A line costs its message and 128 bytes; the minute's 96 KiB refill as time passes.
    let cost: usize = kept.iter().map(|len| len + 128).sum();
    let most = (96 << 10) as f64 * (1.0 + minutes);
    assert!(cost as f64 <= most, "{cost} bytes logged, over {most} in {minutes} minutes");
}

/// What loading the hostile plugin says when its `describe` misbehaves as `mode` says.
async fn refused_for_describing(mode: &str) -> String {
    let root = tempfile::tempdir().unwrap();
    let manifest = "[limits]\ntimeout_ms = 60000\nmemory_mb = 256\n\
                    [grants]\ndirs = { \"/describe\" = { path = \"./describe\" } }\n";
    let dir = plugin_dir(root.path(), "hostile", manifest);
    std::fs::create_dir(dir.join("describe")).unwrap();
    std::fs::write(dir.join("describe/mode"), mode).unwrap();
    let host = PluginHost::new(Some(&root.path().join("cache"))).unwrap();
    let error = host.load(&dir).await.err().unwrap_or_else(|| panic!("{mode}: loaded"));
    error.to_string()
}

/// A test per hostile descriptor: loading it is refused with a message holding each needle.
macro_rules! refused_at_load {
    ($($name:ident: $mode:literal => [$($needle:literal),+];)*) => {$(
        #[tokio::test]
        async fn $name() {
            let message = refused_for_describing($mode).await;
            $(assert!(message.contains($needle), "{message}");)+
        }
    )*};
}

refused_at_load! {
    hostile_50000_tools_are_refused_at_load_naming_the_limit: "many" =>
        ["50014 tools, over the limit of 64 tools"];
    hostile_tool_named_a_dot_b_is_refused_at_load_naming_the_rule: "dotted" =>
        ["a tool named \"a.b\"", "[a-zA-Z0-9_-]{1,64}"];
    hostile_tool_name_of_65_characters_is_refused_at_load: "long_name" => ["1 to 64 letters"];
    hostile_tool_offered_twice_is_refused_at_load: "twice" => ["\"hostile_ok\" twice"];
    hostile_5_kb_description_is_refused_at_load_naming_the_limit: "long_description" =>
        ["\"wordy\": its description is 5120 bytes, over the limit of 4096"];
    hostile_20_kb_schema_is_refused_at_load_naming_the_limit: "big_schema" =>
        ["\"schemy\": its parameters schema is", "over the limit of 16384"];
    hostile_schema_that_is_not_a_json_schema_is_refused_at_load: "bad_schema" =>
        ["\"bad\": its parameters are not a valid JSON Schema"];
}

#[tokio::test]
async fn calc_evaluates_and_refuses_bad_arguments() {
    let root = tempfile::tempdir().unwrap();
    let plugin = load(root.path(), "calc", "[limits]\ntimeout_ms = 1000\nmemory_mb = 16\n").await;
    let output = plugin.call("calc", r#"{"expression": "(2 + 3) * 4.5"}"#).await;
    let value: Value = serde_json::from_str(&text(&output)).unwrap();
    assert_eq!(value["value"], 22.5);
    let output = plugin.call("calc", r#"{"expression": "2 +"}"#).await;
    assert_eq!(code(&output), Some("BAD_ARGUMENTS"));
}

const NOTES: &str = "[limits]\ntimeout_ms = 2000\n[grants]\ndirs = { \"/notes\" = { path = \"./data\", mode = \"rw\" } }\n";

#[tokio::test]
async fn notes_writes_inside_its_directory() {
    let root = tempfile::tempdir().unwrap();
    let plugin = load(root.path(), "notes", NOTES).await;
    let output = plugin.call("note_write", r#"{"path": "todo.txt", "text": "buy milk"}"#).await;
    assert_eq!(code(&output), None, "{output:?}");
    let written = std::fs::read_to_string(root.path().join("notes/data/todo.txt")).unwrap();
    assert_eq!(written, "buy milk");
    let output = plugin.call("note_read", r#"{"path": "todo.txt"}"#).await;
    assert_eq!(text(&output), "buy milk");
}

#[tokio::test]
async fn notes_paths_escaping_the_directory_are_denied() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("secret.txt"), "the secret").unwrap();
    let plugin = load(root.path(), "notes", NOTES).await;
    std::os::unix::fs::symlink(root.path().join("secret.txt"), root.path().join("notes/data/link"))
        .unwrap();
    for path in ["../../secret.txt", "/etc/passwd", "link", "sub/../../../secret.txt"] {
        let args = json!({"path": path}).to_string();
        let output = plugin.call("note_read", &args).await;
        assert_eq!(code(&output), Some("DENIED"), "{path}: {output:?}");
        assert!(!text(&output).contains("the secret"));
        let args = json!({"path": path, "text": "overwritten"}).to_string();
        let output = plugin.call("note_write", &args).await;
        assert_eq!(code(&output), Some("DENIED"), "{path}: {output:?}");
    }
    assert_eq!(std::fs::read_to_string(root.path().join("secret.txt")).unwrap(), "the secret");
}

/// A loopback HTTP server answering every GET with `hello from <Host header>`.
async fn web_server() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new().fallback(|headers: axum::http::HeaderMap| async move {
        let host = headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or("?").to_owned();
        format!("hello from {host}")
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    port
}

#[tokio::test]
async fn fetch_reaches_a_granted_host_and_is_denied_elsewhere_even_with_a_lying_host_header() {
    let port = web_server().await;
    let root = tempfile::tempdir().unwrap();
    let manifest =
        format!("[limits]\ntimeout_ms = 5000\n[grants]\nhttp_hosts = [\"127.0.0.1:{port}\"]\n");
    let plugin = load(root.path(), "fetch", &manifest).await;

    let granted = json!({"url": format!("http://127.0.0.1:{port}/hi")}).to_string();
    let output = plugin.call("fetch", &granted).await;
    let answer: Value = serde_json::from_str(&text(&output)).expect("a JSON answer");
    assert_eq!(answer["status"], 200);
    assert_eq!(answer["body"], format!("hello from 127.0.0.1:{port}"));

    // The same server under another name: not granted.
    let other = json!({"url": format!("http://localhost:{port}/hi")}).to_string();
    assert_eq!(code(&plugin.call("fetch", &other).await), Some("DENIED"));
    // Another name that claims the granted host in its Host header.
    let lying = json!({
        "url": format!("http://localhost:{port}/hi"),
        "headers": [["Host", format!("127.0.0.1:{port}")]],
    })
    .to_string();
    assert_eq!(code(&plugin.call("fetch", &lying).await), Some("DENIED"));
    // And the granted URL with a Host header naming another host: the header is refused.
    let smuggled = json!({
        "url": format!("http://127.0.0.1:{port}/hi"),
        "headers": [["host", "evil.example"]],
    })
    .to_string();
    assert_eq!(code(&plugin.call("fetch", &smuggled).await), Some("DENIED"));
}

/// The Python plugin (`plugins/wordcount-py`, componentize-py from PyPI): `.ci/run` builds it
/// with its `build.sh` and then runs this test.
#[tokio::test]
#[ignore = "needs plugins/wordcount-py/build.sh (componentize-py from PyPI); .ci/run runs it"]
async fn python_plugin_is_loaded_and_called() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/wordcount-py");
    let cache = tempfile::tempdir().unwrap();
    let host = PluginHost::new(Some(cache.path())).unwrap();
    let plugin = host.load(&dir).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plugin.specs()[0].name, "wordcount");
    let output = plugin.call("wordcount", r#"{"text": "hello big world"}"#).await;
    let counts: Value = serde_json::from_str(&text(&output)).unwrap();
    assert_eq!(counts, json!({"words": 3, "characters": 15}));
    let output = plugin.call("wordcount", r#"{"txt": 1}"#).await;
    assert_eq!(code(&output), Some("BAD_ARGUMENTS"));
}

/// The JavaScript plugin (`plugins/slugify-js`, `jco componentize` from npm): `.ci/run` builds it
/// with its `build.sh` and then runs this test.
#[tokio::test]
#[ignore = "needs plugins/slugify-js/build.sh (jco from npm); .ci/run runs it"]
async fn javascript_plugin_is_loaded_and_called() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/slugify-js");
    let cache = tempfile::tempdir().unwrap();
    let host = PluginHost::new(Some(cache.path())).unwrap();
    let plugin = host.load(&dir).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plugin.specs()[0].name, "slugify");
    assert!(plugin.specs()[0].parallel_safe);
    let output = plugin.call("slugify", r#"{"text": "Crème Brûlée, 2nd ed."}"#).await;
    assert_eq!(code(&output), None, "{output:?}");
    let slug: Value = serde_json::from_str(&text(&output)).unwrap();
    assert_eq!(slug, json!({"slug": "creme-brulee-2nd-ed"}));
    let output = plugin.call("slugify", r#"{"text": "Straße Łódź", "separator": "_"}"#).await;
    assert_eq!(text(&output), r#"{"slug":"strasse_lodz"}"#);
    let output = plugin.call("slugify", r#"{"txt": 1}"#).await;
    assert_eq!(code(&output), Some("BAD_ARGUMENTS"), "{output:?}");
    assert!(text(&output).contains("`txt`"), "{output:?}");
    // The longest text it takes fits the plugin.toml's fuel and memory; one more is refused.
    let longest: String = "Crème brûlée. ".chars().cycle().take(10_000).collect();
    let longest = json!({ "text": longest }).to_string();
    let output = plugin.call("slugify", &longest).await;
    assert_eq!(code(&output), None, "{output:?}");
    let longer = json!({"text": "x".repeat(10_001)}).to_string();
    assert_eq!(code(&plugin.call("slugify", &longer).await), Some("BAD_ARGUMENTS"));
    assert_eq!(code(&plugin.call("unslugify", "{}").await), Some("FAILED"));
}
