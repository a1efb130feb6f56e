//! `airlock.toml`: settings for `airlock serve` from a file. A flag wins over its environment
//! variable, which wins over the file, which wins over the built-in default.

use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{ArgMatches, ValueEnum};
use serde::Deserialize;

use super::ServeArgs;
use super::args::DurabilityArg;

/// The keys `airlock.toml` may hold (the long flag names of `airlock serve`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct FileSettings {
    listen: Option<String>,
    data: Option<PathBuf>,
    model: Option<String>,
    durability: Option<String>,
    max_body: Option<usize>,
    cors_origin: Option<Vec<String>>,
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
pub fn apply(
    args: &mut ServeArgs,
    matches: &ArgMatches,
    path: Option<&Path>,
) -> Result<(), String> {
    let (path, named) = match path {
        Some(path) => (path, true),
        None => (Path::new("airlock.toml"), false),
    };
    let Some(file) = read(path, named)? else { return Ok(()) };
    let unset = |id: &str| {
        matches.value_source(id) == Some(ValueSource::DefaultValue)
            || matches.value_source(id).is_none()
    };
    if let Some(listen) = file.listen.filter(|_| unset("listen")) {
        args.listen = listen;
    }
    if let Some(data) = file.data.filter(|_| unset("data")) {
        args.data = data;
    }
    if let Some(model) = file.model.filter(|_| unset("model")) {
        args.model = model;
    }
    if let Some(durability) = file.durability.filter(|_| unset("durability")) {
        args.durability = DurabilityArg::from_str(&durability, true).map_err(|_| {
            format!("{}: durability must be `full` or `normal`, not {durability:?}", path.display())
        })?;
    }
    if let Some(max_body) = file.max_body.filter(|_| unset("max_body")) {
        args.max_body = max_body;
    }
    if let Some(origins) = file.cors_origin.filter(|_| unset("cors_origins")) {
        args.cors_origins = origins;
    }
    if let Some(plugins) = file.plugins.filter(|_| unset("plugins")) {
        args.sandbox.plugins = Some(plugins);
    }
    if let Some(core) = file.core.filter(|_| unset("core")) {
        args.sandbox.core = Some(core);
    }
    let duration = |key: &str, text: String| {
        humantime::parse_duration(&text).map_err(|e| {
            format!("{}: {key} must be a duration like `60s` or `500ms`: {e}", path.display())
        })
    };
    if let Some(idle) = file.idle_evict.filter(|_| unset("idle_evict")) {
        args.idle_evict = duration("idle-evict", idle)?;
    }
    if let Some(max_live) = file.max_live_sessions.filter(|_| unset("max_live_sessions")) {
        args.max_live_sessions = max_live;
    }
    let limits = &mut args.limits;
    if let Some(timeout) = file.turn_timeout.filter(|_| unset("turn_timeout")) {
        limits.turn_timeout = duration("turn-timeout", timeout)?;
    }
    if let Some(steps) = file.max_steps.filter(|_| unset("max_steps")) {
        limits.max_steps = steps;
    }
    if let Some(bytes) = file.max_step_output.filter(|_| unset("max_step_output")) {
        limits.max_step_output = bytes;
    }
    if let Some(wait) = file.max_retry_after.filter(|_| unset("max_retry_after")) {
        limits.max_retry_after = duration("max-retry-after", wait)?;
    }
    if let Some(timeout) = file.header_timeout.filter(|_| unset("header_timeout")) {
        args.header_timeout = duration("header-timeout", timeout)?;
    }
    if let Some(timeout) = file.body_timeout.filter(|_| unset("body_timeout")) {
        args.body_timeout = duration("body-timeout", timeout)?;
    }
    if let Some(max) = file.max_connections.filter(|_| unset("max_connections")) {
        args.max_connections = Some(max);
    }
    if let Some(sessions) = file.tenant_sessions.filter(|_| unset("tenant_sessions")) {
        args.tenant_sessions = sessions;
    }
    if let Some(streams) = file.tenant_streams.filter(|_| unset("tenant_streams")) {
        args.tenant_streams = streams;
    }
    if let Some(rate) = file.tenant_rate.filter(|_| unset("tenant_rate")) {
        args.tenant_rate = rate;
    }
    Ok(())
}
