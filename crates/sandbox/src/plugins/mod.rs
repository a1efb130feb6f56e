//! Plugin tools: WebAssembly components of the world `airlock:plugin/tool-plugin`, each run in a
//! sandbox that grants only what its manifest names.
//!
//! [`PluginHost::load_dir`] reads `DIR/<name>/plugin.toml` and `DIR/<name>/<name>.wasm` for each
//! plugin, checks the component's imports against its grants (an import it was not granted is
//! refused, naming it), compiles it (machine code cached like the core's) and asks it to
//! `describe` its tools. Every call then runs in a fresh store with the manifest's limits:
//!
//! - **time**: the call (instantiation included) must finish within `timeout_ms`. Wasm yields to
//!   the executor at every epoch tick (a ticker on its own OS thread), so a plugin that spins
//!   holds no worker thread and the timeout always fires → `TIMEOUT`;
//! - **fuel**, when set: running out → `TIMEOUT`;
//! - **memory**: linear memory beyond `memory_mb` traps → `MEMORY_LIMIT`;
//! - **output**: a result over `max_output_kb` → `OUTPUT_TOO_LARGE`;
//! - **logs**: lines beyond `max_log_kb` a call or `log_kb_per_minute` a plugin are dropped,
//!   and counted in one warning at the call's end (`plugins/log.rs`);
//! - anything else that traps (a panic, a stack overflow) → `TRAP`;
//! - with the workspace grant, writing past the tenant's workspace quota → `WORKSPACE_FULL`
//!   (`plugins/workspace.rs`).
//!
//! What `describe` answers is bounded too (`plugins/describe.rs`): too many tools, a name a model
//! API refuses, an oversized description or a schema that is not one, and the plugin is refused.
//!
//! The plugin's own errors map to `BAD_ARGUMENTS`, `DENIED` and `FAILED`. None of this ever
//! fails the gateway or another session: the model just sees an error result.

mod bindings;
mod describe;
mod log;
mod manifest;
mod sandbox;
mod workspace;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use airlock_core::ToolSpec;
use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Trap};

pub use manifest::{DirGrant, Grants, Limits, Manifest, Mode};

use self::bindings::CodePluginPre;
use self::bindings::airlock::plugin::types::ToolError;
use self::log::LogRate;
use self::sandbox::CallState;
use airlock_providers::tools::Approval;
use airlock_providers::tools::{Tool, ToolContext, ToolFuture, ToolOutput, Workspace};

/// The plugin components built from this repository (`plugins/` and the test fixtures in
/// `tests/plugins/`), as `<name>.wasm`.
pub const BUILT_DIR: &str = concat!(env!("OUT_DIR"), "/plugins");

/// How often the epoch advances: the longest a plugin runs before yielding.
const TICK: Duration = Duration::from_millis(2);

/// Import prefixes every plugin may have: what a language runtime needs. The filesystem has
/// only the granted directories in it.
const ALWAYS_GRANTED: &[&str] = &[
    "wasi:cli/",
    "wasi:io/",
    "wasi:clocks/",
    "wasi:random/",
    "wasi:filesystem/",
    "airlock:plugin/log",
    "airlock:plugin/types",
];

/// Import prefixes granted with `workspace`.
const WORKSPACE_IMPORTS: &[&str] = &["airlock:plugin/workspace"];

/// Import prefixes granted with `http_hosts`.
const HTTP_IMPORTS: &[&str] = &["wasi:http/"];

/// Import prefixes granted with `import_sockets` (linked with no network).
const SOCKET_IMPORTS: &[&str] = &["wasi:sockets/"];

/// Why plugins could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// A plugin could not be loaded; the message says what to fix.
    #[error("plugin {0:?}: {1}")]
    Load(String, String),
    /// The plugins directory could not be read.
    #[error("cannot read the plugins directory {0}: {1}")]
    Dir(PathBuf, std::io::Error),
}

/// Compiles and runs plugins; one per process.
pub struct PluginHost {
    engine: Engine,
    cache_dir: Option<PathBuf>,
}

impl PluginHost {
    /// A host whose compiled plugins are cached in `cache_dir`. Starts the epoch ticker thread.
    pub fn new(cache_dir: Option<&Path>) -> Result<PluginHost, PluginError> {
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true).consume_fuel(true);
        let engine = Engine::new(&config)
            .map_err(|e| PluginError::Load("*".into(), format!("the plugin engine: {e:#}")))?;
        let weak = engine.weak();
        // Its own OS thread: a busy async runtime must not delay the ticks that bound plugins.
        std::thread::Builder::new()
            .name("airlock-plugin-epoch".into())
            .spawn(move || {
                while let Some(engine) = weak.upgrade() {
                    engine.increment_epoch();
                    drop(engine);
                    std::thread::sleep(TICK);
                }
            })
            .map_err(|e| PluginError::Load("*".into(), format!("the epoch ticker: {e}")))?;
        Ok(PluginHost { engine, cache_dir: cache_dir.map(Path::to_owned) })
    }

    /// Loads every plugin under `dir` (one subdirectory each), in name order.
    pub async fn load_dir(&self, dir: &Path) -> Result<Vec<Arc<Plugin>>, PluginError> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map_err(|e| PluginError::Dir(dir.to_owned(), e))?
            .filter_map(Result::ok)
            .filter(|entry| entry.path().join("plugin.toml").is_file())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let mut plugins = Vec::with_capacity(names.len());
        for name in names {
            let plugin_dir = dir.join(&name);
            if !plugin_dir.join(format!("{name}.wasm")).is_file() {
                // One plugin not built yet (e.g. one in another language) must not stop the rest.
                let wanted = plugin_dir.join(format!("{name}.wasm"));
                tracing::warn!(plugin = name, wanted = %wanted.display(), "plugin skipped: not built");
                continue;
            }
            plugins.push(self.load(&plugin_dir).await?);
        }
        Ok(plugins)
    }

    /// Loads the plugin in `dir`: `plugin.toml` and `<dir name>.wasm`.
    pub async fn load(&self, dir: &Path) -> Result<Arc<Plugin>, PluginError> {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let fail = |message: String| PluginError::Load(name.clone(), message);
        let manifest = Manifest::read(&dir.join("plugin.toml")).map_err(fail)?;
        for grant in manifest.grants.dirs.values().filter(|g| g.mode == Mode::Rw) {
            // A read-write directory is the plugin's own storage: made on first load.
            let path = dir.join(&grant.path);
            std::fs::create_dir_all(&path)
                .map_err(|e| fail(format!("cannot create {}: {e}", path.display())))?;
        }
        let wasm_file = dir.join(format!("{name}.wasm"));
        let wasm = std::fs::read(&wasm_file).map_err(|e| {
            fail(format!(
                "cannot read its component {}: {e}; build the plugin first",
                wasm_file.display()
            ))
        })?;
        let compiled = crate::core_host::cache::load_or_compile(
            &self.engine,
            "plugin",
            &wasm,
            self.cache_dir.as_deref(),
        )
        .map_err(|e| fail(e.to_string()))?;
        let component = compiled.component;
        check_imports(&self.engine, &component, &manifest).map_err(fail)?;

        let mut linker = Linker::new(&self.engine);
        let http = !manifest.grants.http_hosts.is_empty();
        sandbox::link(&mut linker, http).map_err(|e| fail(format!("linking: {e:#}")))?;
        let pre = linker
            .instantiate_pre(&component)
            .and_then(CodePluginPre::new)
            .map_err(|e| fail(format!("it is not a `tool-plugin` component: {e:#}")))?;
        let mut plugin = Plugin {
            name: Arc::from(name.as_str()),
            dir: dir.to_owned(),
            log_rate: Arc::new(LogRate::new(manifest.limits.log_kb_per_minute)),
            manifest,
            pre,
            specs: Vec::new(),
        };
        plugin.specs = plugin.describe().await.map_err(fail)?;
        Ok(Arc::new(plugin))
    }
}

/// Refuses a component whose imports go beyond its grants, naming each one.
fn check_imports(
    engine: &Engine,
    component: &Component,
    manifest: &Manifest,
) -> Result<(), String> {
    let http = !manifest.grants.http_hosts.is_empty();
    let sockets = manifest.grants.import_sockets;
    let workspace = manifest.grants.workspace.is_some();
    let any = |prefixes: &[&str], name: &str| prefixes.iter().any(|p| name.starts_with(p));
    let refused: Vec<String> = component
        .component_type()
        .imports(engine)
        .map(|(name, _)| name.to_owned())
        .filter(|name| {
            let granted = any(ALWAYS_GRANTED, name)
                || http && any(HTTP_IMPORTS, name)
                || sockets && any(SOCKET_IMPORTS, name)
                || workspace && any(WORKSPACE_IMPORTS, name);
            !granted
        })
        .collect();
    if refused.is_empty() {
        return Ok(());
    }
    let hint = if refused.iter().any(|n| n.starts_with("wasi:http/")) {
        "; outbound HTTP needs `http_hosts = [...]` under [grants] in plugin.toml"
    } else if refused.iter().any(|n| n.starts_with("airlock:plugin/workspace")) {
        "; the calling session's workspace needs `workspace = \"/workspace\"` under [grants] in \
         plugin.toml"
    } else if refused.iter().any(|n| n.starts_with("wasi:sockets/")) {
        "; a runtime that imports wasi:sockets without using them (CPython's libc) can have them \
         linked with no network: `import_sockets = true` under [grants] in plugin.toml"
    } else {
        "; plugins get only WASI's cli, io, clocks, random and filesystem, airlock:plugin/log, \
         wasi:http when granted, and wasi:sockets with no network when granted"
    };
    Err(format!("it imports {}, which its manifest does not grant{hint}", refused.join(", ")))
}

/// A loaded plugin.
pub struct Plugin {
    name: Arc<str>,
    dir: PathBuf,
    manifest: Manifest,
    pre: CodePluginPre<CallState>,
    specs: Vec<ToolSpec>,
    /// What all its calls together may still log this minute.
    log_rate: Arc<LogRate>,
}

impl Plugin {
    /// Its name (its directory's).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tools it offers.
    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// A fresh sandbox for one call, with `workspace` where the manifest grants the workspace.
    fn store(&self, workspace: Option<&Workspace>) -> Result<wasmtime::Store<CallState>, String> {
        let (engine, manifest) = (self.pre.engine(), &self.manifest);
        CallState::store(engine, &self.name, &self.dir, manifest, &self.log_rate, workspace)
    }

    /// Asks the component for its tools, under the call limits.
    async fn describe(&self) -> Result<Vec<ToolSpec>, String> {
        let mut store = self.store(None)?;
        let timeout = Duration::from_millis(self.manifest.limits.timeout_ms);
        let described = tokio::time::timeout(timeout, async {
            let instance = self.pre.instantiate_async(&mut store).await?;
            instance.call_describe(&mut store).await
        })
        .await;
        store.data().log.report(&self.name, &self.manifest.limits);
        let described = described
            .map_err(|_| format!("`describe` did not answer within {} ms", timeout.as_millis()))?
            .map_err(|e| format!("`describe` failed: {e:#}"))?;
        describe::check(&described)?;
        Ok(described
            .into_iter()
            .map(|spec| ToolSpec {
                name: spec.name,
                description: spec.description,
                parameters: spec.parameters,
                parallel_safe: spec.parallel_safe,
                approval: self.manifest.approval == Approval::Always,
                client_timeout_ms: None,
            })
            .collect())
    }

    /// Runs one call in a fresh sandbox, for no session; every failure is a tool error with
    /// its code.
    pub async fn call(&self, tool: &str, arguments: &str) -> ToolOutput {
        self.call_in(tool, arguments, None).await
    }

    /// Runs one call in a fresh sandbox, for a session with `workspace`, which a plugin granted
    /// the workspace sees (`plugins/workspace.rs`); every failure is a tool error with its code.
    pub async fn call_in(
        &self,
        tool: &str,
        arguments: &str,
        workspace: Option<&Workspace>,
    ) -> ToolOutput {
        match (&self.manifest.grants.workspace, workspace) {
            (None, _) => self.run(tool, arguments, None, std::future::pending()).await,
            (Some(_), Some(workspace)) => workspace::call(self, tool, arguments, workspace).await,
            (Some(_), None) => ToolOutput::error(
                "FAILED",
                format!(
                    "plugin {} works in the calling session's workspace, and this call has none: \
                     the gateway keeps no workspaces (--workspaces off), or the call was made \
                     outside a session",
                    self.name
                ),
            ),
        }
    }

    /// Runs one call in a fresh sandbox, with `workspace` opened; `stop` ends it early with the
    /// tool error it resolves to.
    async fn run(
        &self,
        tool: &str,
        arguments: &str,
        workspace: Option<&Workspace>,
        stop: impl Future<Output = ToolOutput>,
    ) -> ToolOutput {
        let mut store = match self.store(workspace) {
            Ok(store) => store,
            Err(message) => return ToolOutput::error("FAILED", message),
        };
        let limits = &self.manifest.limits;
        let timeout = self.manifest.timeout(arguments);
        let ran = tokio::select! {
            ran = tokio::time::timeout(timeout, async {
                let instance = self.pre.instantiate_async(&mut store).await?;
                instance.call_call(&mut store, tool, arguments).await
            }) => Ok(ran),
            stopped = stop => Err(stopped),
        };
        store.data().log.report(&self.name, limits);
        let name = &self.name;
        if let Some(why) = store.data_mut().past_quota.take() {
            return ToolOutput::error("WORKSPACE_FULL", format!("plugin {name}: {why}"));
        }
        match ran {
            Err(stopped) => stopped,
            Ok(Err(_)) => ToolOutput::error(
                "TIMEOUT",
                format!("plugin {name} did not finish within its {} ms limit", timeout.as_millis()),
            ),
            Ok(Ok(Err(_))) if store.data().limiter.hit => ToolOutput::error(
                "MEMORY_LIMIT",
                format!("plugin {name} went over its {} MiB memory limit", limits.memory_mb),
            ),
            Ok(Ok(Err(error))) if error.downcast_ref::<Trap>() == Some(&Trap::OutOfFuel) => {
                ToolOutput::error("TIMEOUT", format!("plugin {name} used up its fuel budget"))
            }
            Ok(Ok(Err(error))) => {
                ToolOutput::error("TRAP", format!("plugin {name} crashed: {}", trap_text(&error)))
            }
            Ok(Ok(Ok(Ok(text)))) if text.len() as u64 > limits.max_output_kb << 10 => {
                ToolOutput::error(
                    "OUTPUT_TOO_LARGE",
                    format!(
                        "plugin {name} returned {} bytes, over its {} KiB limit",
                        text.len(),
                        limits.max_output_kb
                    ),
                )
            }
            Ok(Ok(Ok(Ok(text)))) => ToolOutput::text(text),
            Ok(Ok(Ok(Err(ToolError::BadArguments(m))))) => ToolOutput::error("BAD_ARGUMENTS", m),
            Ok(Ok(Ok(Err(ToolError::Denied(m))))) => ToolOutput::error("DENIED", m),
            Ok(Ok(Ok(Err(ToolError::Failed(m))))) => ToolOutput::error("FAILED", m),
        }
    }

    /// One [`Tool`] per spec, for the tool registry.
    pub fn tools(self: &Arc<Self>) -> Vec<Arc<dyn Tool>> {
        self.specs
            .iter()
            .map(|spec| {
                Arc::new(PluginTool { plugin: self.clone(), spec: spec.clone() }) as Arc<dyn Tool>
            })
            .collect()
    }
}

/// The threads plugin calls run on, apart from the gateway's: however hard plugins spin, the
/// gateway's own workers stay free to answer requests and commit events. Made once, never dropped.
fn plugin_runtime() -> &'static tokio::runtime::Handle {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .thread_name("airlock-plugin")
                .enable_all()
                .build()
                .expect("starting the plugin runtime")
        })
        .handle()
}

/// The first line of a trap: what happened, without wasmtime's backtrace.
fn trap_text(error: &wasmtime::Error) -> String {
    match error.downcast_ref::<Trap>() {
        Some(trap) => trap.to_string(),
        None => format!("{error}").lines().next().unwrap_or_default().to_owned(),
    }
}

/// One tool of a plugin.
struct PluginTool {
    plugin: Arc<Plugin>,
    spec: ToolSpec,
}

impl Tool for PluginTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn call(&self, context: ToolContext, arguments: &str) -> ToolFuture {
        let (plugin, name, arguments) =
            (self.plugin.clone(), self.spec.name.clone(), arguments.to_owned());
        let workspace = context.workspace;
        let running = plugin_runtime()
            .spawn(async move { plugin.call_in(&name, &arguments, workspace.as_ref()).await });
        Box::pin(async move {
            running
                .await
                .unwrap_or_else(|e| ToolOutput::error("TRAP", format!("the call failed: {e}")))
        })
    }

    fn origin(&self) -> String {
        format!("plugin:{}", self.plugin.name)
    }
}
