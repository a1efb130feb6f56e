//! Runs the agent core as a sandboxed WebAssembly component: one [`CoreHost`] per process, one
//! [`WasmCore`] per session.
//!
//! The core is built from source by `build.rs` and embedded as [`CORE_WASM`]. [`CoreHost::new`]
//! compiles it once (or loads its machine code from the disk cache, see `cache.rs`), checks its
//! imports, links it and keeps the `InstancePre`. Each session gets its own `Store`:
//!
//! 1. [`CoreHost::create`] or [`CoreHost::restore`] instantiates the component and makes the
//!    session's `agent` resource.
//! 2. [`WasmCore::handle`] feeds one [`airlock_core::Input`] with the time and returns the
//!    [`airlock_core::Output`]s to perform. Every call runs on a fresh fuel budget, so a core
//!    that would loop forever traps instead.
//! 3. A trap (a panic, a bug, out of fuel) comes back as [`CoreError::Trapped`] and drops the
//!    instance: the `WasmCore` answers [`CoreError::Poisoned`] from then on and the session is
//!    rebuilt from its log with [`CoreHost::restore`].
//!
//! The sandbox grants nothing: the linker provides only the `wasi:cli` and `wasi:io` imports
//! Rust's standard library brings in, with no environment, no arguments, no preopened
//! directories, stdin closed and stdout discarded; stderr is kept (bounded) to explain a trap.
//! Clocks, randomness, files and sockets are not linked at all, so a core asking for them is
//! refused up front ([`CoreError::ForbiddenImports`]).

mod bindings;
pub(crate) mod cache;
mod convert;
mod error;
mod session;

use std::path::{Path, PathBuf};

use airlock_core::Config;
use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Store};

pub use self::error::CoreError;
pub use self::session::WasmCore;

use self::bindings::AgentCorePre;
use self::session::SessionState;

/// The agent core component, built from `core-wasm` by `build.rs`.
pub const CORE_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/airlock_core.wasm"));

/// The fuel budget of one call into the core: roughly that many wasm instructions.
///
/// Far more than any input needs (a `handle` costs thousands to millions), yet it ends a loop
/// that would never stop within a second or two.
pub const DEFAULT_FUEL: u64 = 2_000_000_000;

/// Extra fuel for [`CoreHost::restore`] per byte of log it folds.
pub const RESTORE_FUEL_PER_LOG_BYTE: u64 = 20_000;

/// Import name prefixes the sandbox never grants: the core gets time and ids as inputs.
pub const FORBIDDEN_IMPORT_PREFIXES: &[&str] =
    &["wasi:clocks/", "wasi:random/", "wasi:filesystem/", "wasi:sockets/"];

/// The compiled core, ready to instantiate one sandboxed session after another.
pub struct CoreHost {
    engine: Engine,
    component: Component,
    pre: AgentCorePre<SessionState>,
    fuel: u64,
    cache_file: Option<PathBuf>,
    loaded_from_cache: bool,
    /// Names this build of the core and engine: a snapshot is read only by the core that wrote it.
    hash: String,
}

impl CoreHost {
    /// The embedded core ([`CORE_WASM`]), with its machine code cached in `cache_dir` (none: no
    /// disk cache, compile every time).
    pub fn new(cache_dir: Option<&Path>) -> Result<CoreHost, CoreError> {
        Self::from_component_bytes(CORE_WASM, cache_dir)
    }

    /// Another build of the core (a user-supplied `.wasm` component of the world
    /// `airlock:core/agent-core`), with its machine code cached in `cache_dir`.
    pub fn from_component_bytes(
        wasm: &[u8],
        cache_dir: Option<&Path>,
    ) -> Result<CoreHost, CoreError> {
        let engine =
            Engine::new(&engine_config()).map_err(|e| CoreError::Compile(format!("{e:#}")))?;
        let compiled = cache::load_or_compile(&engine, "core", wasm, cache_dir)?;
        let hash = cache::cache_key(&engine, wasm);

        let forbidden = forbidden_imports(&engine, &compiled.component);
        if !forbidden.is_empty() {
            let imports = imports(&engine, &compiled.component);
            return Err(CoreError::ForbiddenImports { forbidden, imports });
        }

        let mut linker = Linker::new(&engine);
        session::link_wasi(&mut linker).map_err(|e| CoreError::Instantiate(format!("{e:#}")))?;
        let pre = linker
            .instantiate_pre(&compiled.component)
            .and_then(AgentCorePre::new)
            .map_err(|e| CoreError::Instantiate(format!("{e:#}")))?;

        Ok(CoreHost {
            engine,
            component: compiled.component,
            pre,
            fuel: DEFAULT_FUEL,
            cache_file: compiled.file,
            loaded_from_cache: compiled.loaded_from_cache,
            hash,
        })
    }

    /// The same host with another fuel budget per call for the sessions it makes.
    pub fn with_fuel(mut self, fuel: u64) -> CoreHost {
        self.fuel = fuel;
        self
    }

    /// A fresh session.
    pub fn create(&self, config: &Config, now: u64) -> Result<WasmCore, CoreError> {
        WasmCore::create(self.store(), &self.pre, self.fuel, config, now)
    }

    /// A session rebuilt from its log (event JSON, in seq order), as after a crash or a trap.
    pub fn restore(&self, config: &Config, events: &[String]) -> Result<WasmCore, CoreError> {
        self.rebuild(config, None, events, None)
    }

    /// A session rebuilt from a snapshot its core wrote and the events logged after it.
    pub fn restore_from(
        &self,
        config: &Config,
        snapshot: &str,
        events: &[String],
    ) -> Result<WasmCore, CoreError> {
        self.rebuild(config, Some(snapshot), events, None)
    }

    /// A session whose core was dropped while its turn waited for people, rebuilt from a
    /// snapshot, the events after it and what [`WasmCore::waiting_state`] answered then: the
    /// same agent, waiting where it was.
    pub fn wake_from(
        &self,
        config: &Config,
        snapshot: &str,
        events: &[String],
        waiting: &str,
    ) -> Result<WasmCore, CoreError> {
        self.rebuild(config, Some(snapshot), events, Some(waiting))
    }

    /// A restore's fuel grows with what it reads: the snapshot and the events.
    fn rebuild(
        &self,
        config: &Config,
        snapshot: Option<&str>,
        events: &[String],
        waiting: Option<&str>,
    ) -> Result<WasmCore, CoreError> {
        let read = (snapshot.map_or(0, str::len) + waiting.map_or(0, str::len)) as u64
            + events.iter().map(|e| e.len() as u64).sum::<u64>();
        let budget = self.fuel.saturating_add(read.saturating_mul(RESTORE_FUEL_PER_LOG_BYTE));
        let fuel = (self.fuel, budget);
        WasmCore::restore(self.store(), &self.pre, fuel, config, snapshot, events, waiting)
    }

    /// The hash of this core and engine (SHA-256, hex): snapshots are tagged with it.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// Whether the machine code was loaded from the disk cache rather than compiled.
    pub fn loaded_from_cache(&self) -> bool {
        self.loaded_from_cache
    }

    /// The file holding the compiled machine code, when there is a cache dir.
    pub fn cache_file(&self) -> Option<&Path> {
        self.cache_file.as_deref()
    }

    /// Every import of the component, by name (e.g. `wasi:cli/stderr@0.2.6`).
    pub fn imports(&self) -> Vec<String> {
        imports(&self.engine, &self.component)
    }

    /// The imports the sandbox never grants; empty for any host that was built (a component
    /// with such imports is refused by [`CoreHost::from_component_bytes`]).
    pub fn forbidden_imports(&self) -> Vec<String> {
        forbidden_imports(&self.engine, &self.component)
    }

    fn store(&self) -> Store<SessionState> {
        SessionState::store(&self.engine)
    }
}

// The gateway shares one host between threads and moves sessions between them.
const _: fn() = || {
    fn shareable<H: Send + Sync, S: Send>() {}
    shareable::<CoreHost, WasmCore>();
};

/// How much address space one instance's linear memory reserves up front, and again whenever it
/// outgrows that: the core's heap is a few MiB, so growth past it is rare and copies little.
const MEMORY_RESERVATION: u64 = 16 << 20;

/// The engine settings: fuel metering for the deterministic core, NaN canonicalization so a
/// float computation gives the same bits on every machine, and linear memories that reserve
/// only what the core needs.
///
/// By default wasmtime reserves 4 GiB of address space (plus guards) per linear memory to skip
/// bounds checks; with one instance per live session the 128 TiB of a 64-bit address space then
/// runs out at about 30,000 sessions, long before RAM does. With a small reservation, explicit
/// bounds checks and memories that may move on growth, the number of live instances is limited
/// by RAM alone (and by `--max-live-sessions`).
fn engine_config() -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    config.consume_fuel(true);
    config.cranelift_nan_canonicalization(true);
    config.memory_reservation(MEMORY_RESERVATION);
    config.memory_reservation_for_growth(MEMORY_RESERVATION);
    config.memory_guard_size(0);
    config.guard_before_linear_memory(false);
    config.memory_may_move(true);
    config
}

fn imports(engine: &Engine, component: &Component) -> Vec<String> {
    component.component_type().imports(engine).map(|(name, _)| name.to_owned()).collect()
}

/// The imports of `component` whose names start with one of [`FORBIDDEN_IMPORT_PREFIXES`].
pub fn forbidden_imports(engine: &Engine, component: &Component) -> Vec<String> {
    imports(engine, component)
        .into_iter()
        .filter(|name| FORBIDDEN_IMPORT_PREFIXES.iter().any(|prefix| name.starts_with(prefix)))
        .collect()
}

/// Where compiled machine code is cached: `$XDG_CACHE_HOME/airlock`, else `$HOME/.cache/airlock`.
pub fn default_cache_dir() -> Option<PathBuf> {
    let absolute = |var: &str| std::env::var_os(var).map(PathBuf::from).filter(|p| p.is_absolute());
    absolute("XDG_CACHE_HOME")
        .map(|dir| dir.join("airlock"))
        .or_else(|| absolute("HOME").map(|home| home.join(".cache").join("airlock")))
}
