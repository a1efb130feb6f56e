//! Other protocols' faces (`docs/interfaces.md`), each driven by that protocol's own client
//! package as its users run it. The tests that need the package are ignored by default:
//! `.ci/run` installs them (pinned by `tests/protocols/package-lock.json`) and runs
//! `cargo test --workspace --test all -- --ignored protocols::`.

mod a2a;
mod ag_ui;
mod langgraph;

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use airlock_tests::gateway::Gateway;
use airlock_tests::{MockModel, Reply};
use serde_json::Value;

/// A gateway with the demo model; `echo` needs an approval when `approval` says so.
fn gateway(dir: &tempfile::TempDir, approval: bool) -> Gateway {
    let env: &[(&str, &str)] = if approval { &[("AIRLOCK_APPROVAL_FOR", "echo")] } else { &[] };
    Gateway::start_with(&dir.path().join("airlock.db"), "", env)
}

/// A gateway whose model holds its answer until `gate` is notified.
async fn held(dir: &tempfile::TempDir) -> (Gateway, MockModel, Arc<tokio::sync::Notify>) {
    let mock = MockModel::start().await;
    let gate = Arc::new(tokio::sync::Notify::new());
    mock.push(Reply::text("Held, then finished.", 3).hold_until(gate.clone()));
    let env = [("AIRLOCK_MODEL", "openai:mock")];
    let gw = Gateway::start_with(&dir.path().join("airlock.db"), &mock.base_url(), &env);
    (gw, mock, gate)
}

/// Runs `tests/protocols/SCRIPT BASE SCENARIO` with node; answers what it printed (one JSON
/// object), failing with its output unless it succeeded.
fn node(script: &str, base: &str, scenario: &str) -> Value {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("protocols");
    assert!(here.join("node_modules").exists(), "run `npm ci --prefix tests/protocols` first");
    let out = Command::new("node")
        .arg(here.join(script))
        .args([base, scenario])
        .output()
        .unwrap_or_else(|e| panic!("node does not run: {e}"));
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{script} {scenario} failed:\n{stdout}\n{stderr}");
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{script} {scenario} printed no JSON ({e}):\n{stdout}"))
}
