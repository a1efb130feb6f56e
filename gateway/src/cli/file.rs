//! `airlock.toml`: settings for `airlock serve` from a file. A flag wins over its environment
//! variable, which wins over the file, which wins over the built-in default.

use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{ArgMatches, ValueEnum};
use serde::Deserialize;

use super::ServeArgs;
use super::args::DurabilityArg;
use airlock_providers::mcp::{McpServer, McpSource};

/// The keys `airlock.toml` may hold (the long flag names of `airlock serve`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct FileSettings {
    listen: Option<String>,
    data: Option<PathBuf>,
    store: Option<String>,
    advertise: Option<String>,
    lease: Option<String>,
    model: Option<String>,
    durability: Option<String>,
    max_body: Option<usize>,
    cors_origin: Option<Vec<String>>,
    public_url: Option<String>,
    plugins: Option<PathBuf>,
    core: Option<PathBuf>,
    idle_evict: Option<String>,
    max_live_sessions: Option<usize>,
    turn_timeout: Option<String>,
    max_steps: Option<u32>,
    max_step_output: Option<u64>,
    max_retry_after: Option<String>,
    header_timeout: Option<String>,
    body_timeout: Option<String>,
    max_connections: Option<usize>,
    tenant_sessions: Option<u64>,
    tenant_streams: Option<usize>,
    tenant_rate: Option<u32>,
    tenant_turns: Option<usize>,
    tenant_creates: Option<u32>,
    tenant_bytes: Option<u64>,
    max_subagent_depth: Option<u32>,
    max_descendants: Option<usize>,
    max_queue: Option<usize>,
    max_instances: Option<u64>,
    metrics_listen: Option<String>,
    metrics_key: Option<String>,
    context_window: Option<u64>,
    /// `[mcp.NAME]`: an MCP server, `command = [...]` or `url = "…"` (as `--mcp`).
    mcp: Option<std::collections::BTreeMap<String, McpEntry>>,
    /// `[models."NAME"]`: per-model settings, which no flag names.
    models: Option<std::collections::BTreeMap<String, airlock_providers::model::ModelSettings>>,
}

/// One `[mcp.NAME]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct McpEntry {
    command: Option<Vec<String>>,
    /// For a command: variables set for it.
    #[serde(default)]
    env: std::collections::BTreeMap<String, String>,
    url: Option<String>,
    /// For a URL: headers sent with every request.
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
}

impl McpEntry {
    fn server(self, name: &str) -> Result<McpServer, String> {
        let (env, headers) = (self.env.into_iter().collect(), self.headers.into_iter().collect());
        match (self.command, self.url) {
            (Some(argv), None) => McpServer::new(name, McpSource::Command { argv, env }),
            (None, Some(url)) => McpServer::new(name, McpSource::Url { url, headers }),
            _ => Err(format!("[mcp.{name}] needs either `command = [...]` or `url = \"…\"`")),
        }
    }
}

/// Reads `path`; `Ok(None)` when it does not exist and was not asked for by name.
fn read(path: &Path, named: bool) -> Result<Option<FileSettings>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !named => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    toml::from_str(&text).map(Some).map_err(|e| format!("{} is not valid: {e}", path.display()))
}

/// Fills every `serve` setting that was left at its default from the file.
pub fn apply(args: &mut ServeArgs, matches: &ArgMatches) -> Result<(), String> {
    let config = args.config.clone();
    let (path, named) = match config.as_deref() {
        Some(path) => (path, true),
        None => (Path::new("airlock.toml"), false),
    };
    let Some(file) = read(path, named)? else { return Ok(()) };
    let unset = |id: &str| {
        matches.value_source(id) == Some(ValueSource::DefaultValue)
            || matches.value_source(id).is_none()
    };
    // A duration is checked even where its flag wins: a mistake in the file is one either way.
    let duration = |key: &str, text: Option<String>| {
        text.map(|text| {
            humantime::parse_duration(&text).map_err(|e| {
                format!("{}: {key} must be a duration like `60s` or `500ms`: {e}", path.display())
            })
        })
        .transpose()
    };
    let durability = file
        .durability
        .map(|durability| {
            DurabilityArg::from_str(&durability, true).map_err(|_| {
                let file = path.display();
                format!("{file}: durability must be `full` or `normal`, not {durability:?}")
            })
        })
        .transpose()?;
    fill(&mut args.listen, file.listen, unset("listen"));
    fill(&mut args.data, file.data, unset("data"));
    fill(&mut args.cluster.store, file.store.map(Some), unset("store"));
    fill(&mut args.cluster.advertise, file.advertise.map(Some), unset("advertise"));
    fill(&mut args.cluster.lease, duration("lease", file.lease)?, unset("lease"));
    fill(&mut args.model, file.model, unset("model"));
    fill(&mut args.durability, durability, unset("durability"));
    fill(&mut args.max_body, file.max_body, unset("max_body"));
    fill(&mut args.cors_origins, file.cors_origin, unset("cors_origins"));
    fill(&mut args.public_url, file.public_url.map(Some), unset("public_url"));
    fill(&mut args.sandbox.plugins, file.plugins.map(Some), unset("plugins"));
    fill(&mut args.sandbox.core, file.core.map(Some), unset("core"));
    let mcp = file.mcp.map(|servers| {
        let servers = servers.into_iter().map(|(name, entry)| entry.server(&name));
        servers.collect::<Result<Vec<_>, _>>().map_err(|e| format!("{}: {e}", path.display()))
    });
    fill(&mut args.sandbox.mcp, mcp.transpose()?, unset("mcp"));
    fill(&mut args.idle_evict, duration("idle-evict", file.idle_evict)?, unset("idle_evict"));
    fill(&mut args.max_live_sessions, file.max_live_sessions, unset("max_live_sessions"));
    let limits = &mut args.limits;
    let turn_timeout = duration("turn-timeout", file.turn_timeout)?;
    fill(&mut limits.turn_timeout, turn_timeout, unset("turn_timeout"));
    fill(&mut limits.max_steps, file.max_steps, unset("max_steps"));
    fill(&mut limits.max_step_output, file.max_step_output, unset("max_step_output"));
    let max_retry_after = duration("max-retry-after", file.max_retry_after)?;
    fill(&mut limits.max_retry_after, max_retry_after, unset("max_retry_after"));
    let header_timeout = duration("header-timeout", file.header_timeout)?;
    fill(&mut args.header_timeout, header_timeout, unset("header_timeout"));
    let body_timeout = duration("body-timeout", file.body_timeout)?;
    fill(&mut args.body_timeout, body_timeout, unset("body_timeout"));
    fill(&mut args.max_connections, file.max_connections.map(Some), unset("max_connections"));
    fill(&mut args.tenant_sessions, file.tenant_sessions, unset("tenant_sessions"));
    fill(&mut args.tenant_streams, file.tenant_streams, unset("tenant_streams"));
    fill(&mut args.tenant_rate, file.tenant_rate, unset("tenant_rate"));
    fill(&mut args.tenant_turns, file.tenant_turns, unset("tenant_turns"));
    fill(&mut args.tenant_creates, file.tenant_creates, unset("tenant_creates"));
    fill(&mut args.tenant_bytes, file.tenant_bytes, unset("tenant_bytes"));
    fill(&mut args.max_subagent_depth, file.max_subagent_depth, unset("max_subagent_depth"));
    fill(&mut args.max_descendants, file.max_descendants, unset("max_descendants"));
    fill(&mut args.max_queue, file.max_queue, unset("max_queue"));
    if file.max_instances == Some(0) {
        return Err(format!("{}: max-instances must be at least 1", path.display()));
    }
    fill(&mut args.max_instances, file.max_instances.map(Some), unset("max_instances"));
    fill(&mut args.metrics_listen, file.metrics_listen.map(Some), unset("metrics_listen"));
    fill(&mut args.metrics_key, file.metrics_key.map(Some), unset("metrics_key"));
    fill(&mut args.context_window, file.context_window.map(Some), unset("context_window"));
    if let Some(models) = file.models {
        let models = airlock_providers::model::ContextWindows::new(models);
        models.check().map_err(|error| format!("{}: {error}", path.display()))?;
        args.models = models;
    }
    Ok(())
}

/// Sets `slot` to the file's `value`, if it has one and the flag was left unset.
fn fill<T>(slot: &mut T, value: Option<T>, flag_unset: bool) {
    if let (Some(value), true) = (value, flag_unset) {
        *slot = value;
    }
}
