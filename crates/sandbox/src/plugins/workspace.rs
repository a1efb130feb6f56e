//! A call of a plugin granted the calling session's workspace (`workspace = "/workspace"`): the
//! session's directory is opened read-write where the manifest says (for WASI files), and the
//! `workspace` interface reaches it too (`plugins/sandbox.rs`: there a write past the quota is
//! refused as it is asked). What the call writes is watched against the tenant's quota.
//!
//! WASI gives a host no hook on writes, so for WASI files the quota is kept by looking: the workspace is scanned
//! before the call, every [`WATCH`] while it runs (a call past the quota is stopped there) and
//! after it. A call that ends past the quota has the files it wrote removed and is the tool error
//! `WORKSPACE_FULL`; otherwise the files it wrote are listed in its JSON result as `files`.

use std::time::Duration;

use airlock_core::ContentBlock;
use airlock_providers::tools::{ToolOutput, Workspace, WorkspaceFile};
use serde_json::{Value, json};

use super::Plugin;

/// How often a running call's workspace is measured.
const WATCH: Duration = Duration::from_millis(50);
/// The most files a result lists.
const LISTED_MOST: usize = 100;

/// Runs one call of `plugin` in `workspace`.
pub(super) async fn call(
    plugin: &Plugin,
    tool: &str,
    arguments: &str,
    workspace: &Workspace,
) -> ToolOutput {
    let name = plugin.name();
    let failed = |e: std::io::Error| {
        ToolOutput::error("FAILED", format!("plugin {name}: the session's workspace failed: {e}"))
    };
    let (before, tenant) = match workspace.ensure().and_then(|()| workspace.scan_with_tenant()) {
        Ok(measured) => measured,
        Err(e) => return failed(e),
    };
    // What this workspace may hold: the quota less what the tenant's other workspaces hold.
    let others = tenant.saturating_sub(before.charged);
    let room = workspace.quota().saturating_sub(others);
    let full = |charged: u64| {
        format!(
            "the workspace quota is {} bytes for all of a tenant's sessions; this session's \
             workspace would hold {charged} of them, with {others} held by its other sessions",
            workspace.quota()
        )
    };
    if before.charged > room {
        let why = full(before.charged);
        return ToolOutput::error("WORKSPACE_FULL", format!("{why}; remove files first"));
    }
    let watch = async {
        loop {
            tokio::time::sleep(WATCH).await;
            if let Ok(scan) = workspace.scan()
                && scan.charged > room
            {
                return ToolOutput::error("WORKSPACE_FULL", full(scan.charged));
            }
        }
    };
    let output = plugin.run(tool, arguments, Some(workspace), watch).await;
    let after = match workspace.scan() {
        Ok(scan) => scan,
        Err(e) => return failed(e),
    };
    let written = after.changed_since(&before);
    // Past the quota on WASI files (measured now, or by the watch), or refused a `workspace`
    // write: the call's writes are undone whole.
    let refused = output.error_code.as_deref() == Some("WORKSPACE_FULL");
    if after.charged > room || refused {
        let paths: Vec<&str> = written.iter().map(|file| file.path.as_str()).collect();
        workspace.remove_all(&paths);
        let why = match refused {
            true => airlock_core::text_of(&output.content),
            false => format!("plugin {name} wrote past it: {}", full(after.charged)),
        };
        let removed = match paths.len() {
            0 => String::new(),
            n if n <= LISTED_MOST => {
                format!("; the files it wrote were removed: {}", paths.join(", "))
            }
            n => format!("; the {n} files it wrote were removed"),
        };
        return ToolOutput::error("WORKSPACE_FULL", format!("{why}{removed}"));
    }
    with_files(output, &written)
}

/// `output` with `files` added to its JSON object (a result's or a code error's): what the call
/// wrote, at most [`LISTED_MOST`] of them. Any other output is left as it is.
fn with_files(mut output: ToolOutput, written: &[&WorkspaceFile]) -> ToolOutput {
    if written.is_empty() {
        return output;
    }
    let [ContentBlock::Text { text }] = output.content.as_mut_slice() else {
        return output;
    };
    let Ok(Value::Object(mut answer)) = serde_json::from_str::<Value>(text) else {
        return output;
    };
    let files = written
        .iter()
        .take(LISTED_MOST)
        .map(|file| json!({"path": file.path, "bytes": file.bytes}));
    answer.insert("files".into(), files.collect());
    if written.len() > LISTED_MOST {
        answer.insert("filesNotListed".into(), json!(written.len() - LISTED_MOST));
    }
    *text = Value::Object(answer).to_string();
    output
}
