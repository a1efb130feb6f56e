//! What one plugin call runs in: a fresh store holding a WASI context with no ambient authority
//! (no environment, no arguments, no network, only the granted directories and the session's
//! workspace), the `wasi:http`
//! context whose requests go only to granted hosts, and the call's limits.

use std::path::Path;
use std::sync::Arc;

use http::Request;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{Engine, ResourceLimiter, Store};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView};

use super::bindings::airlock::plugin::log::{Host as LogHost, Level};
use super::bindings::airlock::plugin::workspace::Host as WorkspaceHost;
use super::log::{LogBudget, LogRate};
use super::manifest::{Manifest, Mode};
use airlock_providers::tools::{Workspace, WorkspaceError};

/// The state of one call's store.
pub(super) struct CallState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    hooks: Allowlist,
    table: ResourceTable,
    pub(super) limiter: Limiter,
    pub(super) log: LogBudget,
    name: Arc<str>,
    /// The session's workspace, when the plugin is granted it: `workspace` reaches it.
    workspace: Option<Workspace>,
    /// Why a `workspace` write was refused for the quota: the call ends `WORKSPACE_FULL`.
    pub(super) past_quota: Option<String>,
}

impl CallState {
    /// A store on `engine` for one call of the plugin `name` in `dir`, its limits and grants
    /// set from `manifest` (the workspace grant opening `workspace`), its log drawing on the
    /// plugin's `log_rate`; the error says what to fix.
    pub(super) fn store(
        engine: &Engine,
        name: &Arc<str>,
        dir: &Path,
        manifest: &Manifest,
        log_rate: &Arc<LogRate>,
        workspace: Option<&Workspace>,
    ) -> Result<Store<CallState>, String> {
        let mut wasi = WasiCtx::builder();
        // No network through wasi:sockets, whatever is linked: the default address check
        // already refuses every address; this says so for name lookups and both protocols too.
        wasi.allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false);
        let workspace = workspace.filter(|_| manifest.grants.workspace.is_some());
        if let (Some(guest), Some(workspace)) = (&manifest.grants.workspace, workspace) {
            let host = workspace.dir();
            wasi.preopened_dir(host, guest, FsPerms::ReadWrite).map_err(|e| {
                format!(
                    "plugin {name:?}: cannot open the session's workspace {} ({e})",
                    host.display()
                )
            })?;
        }
        for (guest, grant) in &manifest.grants.dirs {
            let host = dir.join(&grant.path);
            let perms = match grant.mode {
                Mode::Ro => FsPerms::ReadOnly,
                Mode::Rw => FsPerms::ReadWrite,
            };
            wasi.preopened_dir(&host, guest, perms).map_err(|e| {
                format!(
                    "plugin {name:?}: cannot open its granted directory {} ({e}); create it or fix `dirs` in plugin.toml",
                    host.display()
                )
            })?;
        }
        let limits = &manifest.limits;
        let state = CallState {
            wasi: wasi.build(),
            http: WasiHttpCtx::new(),
            hooks: Allowlist { manifest: manifest.clone() },
            table: ResourceTable::new(),
            limiter: Limiter { memory_bytes: (limits.memory_mb as usize) << 20, hit: false },
            log: LogBudget::new(limits, log_rate.clone()),
            name: name.clone(),
            workspace: workspace.cloned(),
            past_quota: None,
        };
        let mut store = Store::new(engine, state);
        store.limiter(|state| &mut state.limiter);
        store.set_fuel(limits.fuel.unwrap_or(u64::MAX)).expect("fuel is enabled");
        // Give the executor back the thread at every tick: a plugin that spins never holds a
        // worker, and the call's timeout can always fire.
        store.set_epoch_deadline(1);
        store.epoch_deadline_async_yield_and_update(1);
        Ok(store)
    }
}

/// Links what a plugin may import: WASI (with the authority its context holds), `wasi:http`
/// when granted, and `log`.
pub(super) fn link(linker: &mut Linker<CallState>, http: bool) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    if http {
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)?;
    }
    super::bindings::CodePlugin::add_to_linker::<CallState, HasSelf<CallState>>(linker, |s| s)
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { ctx: &mut self.http, table: &mut self.table, hooks: &mut self.hooks }
    }
}

impl super::bindings::airlock::plugin::types::Host for CallState {}

/// `workspace`: the session's workspace, as [`Workspace`] keeps it (paths inside it only, the
/// tenant's quota checked at each write).
impl WorkspaceHost for CallState {
    async fn read(&mut self, path: String) -> Result<Vec<u8>, String> {
        self.workspace()?.read(&path).map_err(errno)
    }

    async fn write(&mut self, path: String, data: Vec<u8>) -> Result<(), String> {
        match self.workspace()?.write(&path, &data) {
            Ok(_) => Ok(()),
            Err(full @ WorkspaceError::Full { .. }) => {
                let why = errno(full);
                self.past_quota = Some(why.clone());
                Err(why)
            }
            Err(e) => Err(errno(e)),
        }
    }

    async fn list_dir(&mut self, path: String) -> Result<Vec<String>, String> {
        self.workspace()?.list_dir(&path).map_err(errno)
    }

    async fn remove(&mut self, path: String) -> Result<(), String> {
        self.workspace()?.remove(&path).map_err(errno)
    }
}

impl CallState {
    fn workspace(&self) -> Result<&Workspace, String> {
        self.workspace.as_ref().ok_or_else(|| {
            "EACCES: this plugin is not granted the session's workspace (`workspace` in plugin.toml)"
                .to_owned()
        })
    }
}

/// A workspace error as `workspace` answers it: its code, then what it says.
fn errno(error: WorkspaceError) -> String {
    let code = match error {
        WorkspaceError::NotFound(_) => "ENOENT",
        WorkspaceError::BadPath(_) => "EACCES",
        WorkspaceError::Full { .. } => "ENOSPC",
        WorkspaceError::Io(_) => "EIO",
    };
    format!("{code}: {error}")
}

impl LogHost for CallState {
    async fn log(&mut self, level: Level, message: String) {
        let Some(message) = self.log.admit(&message) else {
            return;
        };
        let plugin = &*self.name;
        match level {
            Level::Debug => tracing::debug!(plugin, message),
            Level::Info => tracing::info!(plugin, message),
            Level::Warn => tracing::warn!(plugin, message),
            Level::Error => tracing::error!(plugin, message),
        }
    }
}

/// Sends a plugin's requests only to the hosts its manifest grants. The host comes from the
/// request's URL, which is also what the connection is made to (the `Host` header is forbidden
/// to plugins and set from the URL), so a lying header cannot reach another host.
struct Allowlist {
    manifest: Manifest,
}

impl WasiHttpHooks for Allowlist {
    fn send_request(
        &mut self,
        request: Request<wasmtime_wasi_http::WasiBody>,
        options: Option<wasmtime_wasi_http::RequestOptions>,
        fut: Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
    ) -> Box<
        dyn Future<
                Output = wasmtime_wasi_http::Result<(
                    http::Response<wasmtime_wasi_http::WasiBody>,
                    Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
                )>,
            > + Send,
    > {
        drop(fut);
        let uri = request.uri();
        let tls = uri.scheme_str() == Some("https");
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let allowed = uri.host().is_some_and(|host| self.manifest.allows_host(host, port));
        Box::new(async move {
            if !allowed {
                return Err(wasmtime_wasi_http::Error::HttpRequestDenied);
            }
            use http_body_util::BodyExt;
            let (response, io) = wasmtime_wasi_http::default_send_request(request, options).await?;
            Ok((
                response.map(BodyExt::boxed_unsync),
                Box::new(io) as Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
            ))
        })
    }
}

/// Caps linear memory and remembers when the cap was hit, so the trap that follows is reported
/// as `MEMORY_LIMIT`, not as a crash.
pub(super) struct Limiter {
    memory_bytes: usize,
    pub(super) hit: bool,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_bytes {
            self.hit = true;
            return Err(wasmtime::format_err!("the plugin's memory limit was reached"));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}
