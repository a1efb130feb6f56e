//! Clients generated from the gateway's `/openapi.json` by the ecosystem's own generators, used
//! as an app would: `openapi-python-client`, and `openapi-typescript` with `openapi-fetch`. Each
//! creates a session, sends to it, runs in it, runs in a new session and reads the events page,
//! every answer parsed into the generated types (the scripts are in `tests/generated-clients/`).
//!
//! Ignored by default because the generators come from PyPI and npm; `.ci/run` installs them
//! (pinned by `tests/generated-clients/requirements.txt` and its `package-lock.json`) and runs
//! `cargo test --workspace --test all -- --ignored generated_clients::`.

use std::path::{Path, PathBuf};
use std::process::Command;

use airlock_tests::gateway::Gateway;
use serde_json::Value;

/// `tests/generated-clients/`.
fn here() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("generated-clients")
}

/// Runs `command`; answers its stdout, failing with both streams unless it succeeded.
fn run(command: &mut Command) -> String {
    let out = command.output().unwrap_or_else(|e| panic!("{command:?} does not run: {e}"));
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{command:?} failed:\n{stdout}\n{stderr}");
    stdout.into_owned()
}

/// A gateway (the demo model), and its document written to `dir/openapi.json`.
async fn gateway_and_document(dir: &Path) -> (Gateway, PathBuf) {
    let gateway = Gateway::start(&dir.join("airlock.db"), "http://127.0.0.1:9/v1");
    let res = gateway.client.get(gateway.url("/openapi.json")).send().await.unwrap();
    let document = dir.join("openapi.json");
    std::fs::write(&document, res.bytes().await.unwrap()).unwrap();
    (gateway, document)
}

/// What a script printed: the run in the session answered, so did the new session's, and the
/// events page held the turns, each event as its own type.
fn check(seen: &str, event_types: &[&str]) {
    let seen: Value = serde_json::from_str(seen.trim()).expect("the script prints JSON");
    assert!(seen["run"].as_str().unwrap().contains("and now?"), "{seen}");
    assert!(seen["fresh"].as_str().unwrap().contains("hi"), "{seen}");
    assert_ne!(seen["freshSession"], seen["session"], "{seen}");
    let types: Vec<&str> =
        seen["events"].as_array().unwrap().iter().flat_map(Value::as_str).collect();
    for expected in event_types {
        let turns = types.iter().filter(|t| *t == expected).count();
        assert_eq!(turns, 2, "two turns' {expected} among {types:?}");
    }
}

#[tokio::test]
#[ignore = "needs openapi-python-client from PyPI; .ci/run installs it"]
async fn a_client_openapi_python_client_generates_creates_sends_runs_and_reads_events() {
    let venv = here().join("../../target/generated-python-venv/bin");
    assert!(venv.join("openapi-python-client").exists(), "run .ci/run's install of {venv:?}");
    let dir = tempfile::tempdir().unwrap();
    let (gateway, document) = gateway_and_document(dir.path()).await;
    let package = dir.path().join("airlock_client");
    run(Command::new(venv.join("openapi-python-client"))
        .args(["generate", "--meta", "none", "--config"])
        .arg(here().join("python-config.yaml"))
        .arg("--path")
        .arg(&document)
        .arg("--output-path")
        .arg(&package));
    let seen = run(Command::new(venv.join("python"))
        .arg(here().join("client.py"))
        .arg(&gateway.base)
        .env("PYTHONPATH", dir.path()));
    check(&seen, &["TurnStartEvent", "TurnEndEvent"]);
}

#[tokio::test]
#[ignore = "needs openapi-typescript and openapi-fetch from npm; .ci/run installs them"]
async fn a_client_of_openapi_typescript_and_openapi_fetch_creates_sends_runs_and_reads_events() {
    let modules = here().join("node_modules");
    assert!(modules.exists(), "run `npm ci --prefix tests/generated-clients` first");
    let dir = tempfile::tempdir().unwrap();
    let (gateway, document) = gateway_and_document(dir.path()).await;
    // The app: its source, the types generated beside it, the packages it imports.
    let app = dir.path().join("app");
    std::fs::create_dir_all(app.join("src")).unwrap();
    std::fs::copy(here().join("src/client.ts"), app.join("src/client.ts")).unwrap();
    std::fs::copy(here().join("tsconfig.json"), app.join("tsconfig.json")).unwrap();
    std::os::unix::fs::symlink(&modules, app.join("node_modules")).unwrap();
    std::fs::write(app.join("package.json"), r#"{"type": "module"}"#).unwrap();
    run(Command::new(modules.join(".bin/openapi-typescript"))
        .arg(&document)
        .arg("--output")
        .arg(app.join("src/api.d.ts")));
    run(Command::new(modules.join(".bin/tsc")).arg("-p").arg(&app));
    let seen = run(Command::new("node").arg(app.join("build/client.js")).arg(&gateway.base));
    check(&seen, &["turn/start", "turn/end"]);
}
