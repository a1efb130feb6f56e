//! The code tools, `python` (`plugins/python`, CPython through componentize-py) and `javascript`
//! (`plugins/javascript`, StarlingMonkey through jco): the code the model writes, run by the real
//! plugin host in a session's workspace, and the hostile code they must contain. `.ci/run` builds
//! the components with their `build.sh`, then runs these:
//! `cargo test --workspace --test gateway -- --ignored code_tools::`.
//!
//! Here: the helpers the modules share. `python` and `javascript` call the plugins through the
//! plugin host as a session would; `through_gateway` runs them in the real `airlock serve`.

mod javascript;
mod python;
mod through_gateway;

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
