//! One session's sandboxed instance: its `Store`, the capabilities it is handed, and the calls
//! into its `agent` resource, each on a fresh fuel budget.

use std::sync::Arc;

use airlock_core::{Config, Input, Message, Output};
use wasmtime::component::{HasData, Linker, ResourceAny, ResourceTable};
use wasmtime::{Engine, Store, StoreLimits, StoreLimitsBuilder, Trap};
use wasmtime_wasi::cli::{WasiCli, WasiCliView};
use wasmtime_wasi::p2::bindings::{cli, sync::io};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::bindings::exports::airlock::core::session::GuestAgent;
use super::bindings::{AgentCore, AgentCorePre};
use super::convert;
use super::error::CoreError;

/// How much of the core's stderr (a panic message) is kept to explain a trap.
const STDERR_CAPACITY: usize = 64 * 1024;

/// The most linear memory one instance may grow to.
const MEMORY_LIMIT: usize = 1 << 30;

/// What a session's `Store` holds: a WASI context that grants nothing, and the resource table
/// its streams live in.
pub(crate) struct SessionState {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: StoreLimits,
    stderr: MemoryOutputPipe,
}

impl SessionState {
    /// A store for one instance: no env, no args, no preopens, no network; stdin closed, stdout
    /// discarded, stderr captured.
    pub(crate) fn store(engine: &Engine) -> Store<SessionState> {
        let stderr = MemoryOutputPipe::new(STDERR_CAPACITY);
        let wasi = WasiCtx::builder().stderr(stderr.clone()).build();
        let limits = StoreLimitsBuilder::new().memory_size(MEMORY_LIMIT).build();
        let mut store =
            Store::new(engine, SessionState { wasi, table: ResourceTable::new(), limits, stderr });
        store.limiter(|state| &mut state.limits);
        store
    }
}

impl WasiView for SessionState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// Hands the `wasi:io` host functions the resource table alone.
struct HasIo;

impl HasData for HasIo {
    type Data<'a> = &'a mut ResourceTable;
}

/// Links the `wasi:cli` and `wasi:io` interfaces Rust's standard library imports, and nothing
/// else: clocks, randomness, files and sockets stay unlinked, so a core importing them cannot
/// be instantiated at all.
pub(crate) fn link_wasi(linker: &mut Linker<SessionState>) -> wasmtime::Result<()> {
    let l = linker;
    io::error::add_to_linker::<SessionState, HasIo>(l, |s| &mut s.table)?;
    io::poll::add_to_linker::<SessionState, HasIo>(l, |s| &mut s.table)?;
    io::streams::add_to_linker::<SessionState, HasIo>(l, |s| &mut s.table)?;
    cli::exit::add_to_linker::<SessionState, WasiCli>(l, SessionState::cli)?;
    cli::environment::add_to_linker::<SessionState, WasiCli>(l, SessionState::cli)?;
    cli::stdin::add_to_linker::<SessionState, WasiCli>(l, SessionState::cli)?;
    cli::stdout::add_to_linker::<SessionState, WasiCli>(l, SessionState::cli)?;
    cli::stderr::add_to_linker::<SessionState, WasiCli>(l, SessionState::cli)?;
    cli::terminal_input::add_to_linker::<SessionState, WasiCli>(l, SessionState::cli)?;
    cli::terminal_output::add_to_linker::<SessionState, WasiCli>(l, SessionState::cli)?;
    cli::terminal_stdin::add_to_linker::<SessionState, WasiCli>(l, SessionState::cli)?;
    cli::terminal_stdout::add_to_linker::<SessionState, WasiCli>(l, SessionState::cli)?;
    cli::terminal_stderr::add_to_linker::<SessionState, WasiCli>(l, SessionState::cli)?;
    Ok(())
}

/// A live instance and its session's `agent` resource.
struct Live {
    store: Store<SessionState>,
    bindings: AgentCore,
    agent: ResourceAny,
    /// The messages of the agent's last model request, which its next one extends.
    sent: Vec<Arc<Message>>,
}

/// One session's core, running in its own sandboxed instance.
///
/// After a trap the instance is dropped, never entered again: every later call returns
/// [`CoreError::Poisoned`], and the session is rebuilt with [`super::CoreHost::restore`].
pub struct WasmCore {
    live: Option<Live>,
    fuel: u64,
}

impl WasmCore {
    pub(super) fn create(
        mut store: Store<SessionState>,
        pre: &AgentCorePre<SessionState>,
        fuel: u64,
        config: &Config,
        now: u64,
    ) -> Result<WasmCore, CoreError> {
        let config = convert::config_to(config);
        let (bindings, agent) = instantiate(&mut store, pre, "new", fuel, |store, core| {
            core.airlock_core_session().agent().call_constructor(store, &config, now)
        })?;
        Ok(WasmCore { live: Some(Live { store, bindings, agent, sent: Vec::new() }), fuel })
    }

    /// Rebuilds a session from its log, after the snapshot its core wrote when there is one.
    pub(super) fn restore(
        mut store: Store<SessionState>,
        pre: &AgentCorePre<SessionState>,
        (fuel, restore_fuel): (u64, u64),
        config: &Config,
        snapshot: Option<&str>,
        events: &[String],
        waiting: Option<&str>,
    ) -> Result<WasmCore, CoreError> {
        let config = convert::config_to(config);
        let call = match (snapshot, waiting) {
            (Some(_), Some(_)) => "wake-from",
            (Some(_), None) => "restore-from",
            (None, _) => "restore",
        };
        let (bindings, restored) =
            instantiate(&mut store, pre, call, restore_fuel, |store, core| {
                let agent = core.airlock_core_session().agent();
                match (snapshot, waiting) {
                    (Some(snapshot), Some(waiting)) => {
                        agent.call_wake_from(store, &config, snapshot, events, waiting)
                    }
                    (Some(snapshot), None) => {
                        agent.call_restore_from(store, &config, snapshot, events)
                    }
                    (None, _) => agent.call_restore(store, &config, events),
                }
            })?;
        let agent = restored.map_err(CoreError::Restore)?;
        Ok(WasmCore { live: Some(Live { store, bindings, agent, sent: Vec::new() }), fuel })
    }

    /// Feeds one input at time `now` (ms since the epoch); returns what the host must do, in
    /// order.
    ///
    /// Any error but a bad input drops the instance: the core may have moved past outputs the
    /// host never saw, so only its log can say where the session is.
    pub fn handle(&mut self, input: Input, now: u64) -> Result<Vec<Output>, CoreError> {
        if self.live.is_none() {
            return Err(CoreError::Poisoned);
        }
        let input = convert::input_to(input)?;
        let outputs = self
            .call("handle", |guest, store, agent| guest.call_handle(store, agent, &input, now))?;
        let sent = &mut self.live.as_mut().ok_or(CoreError::Poisoned)?.sent;
        let converted: Result<Vec<Output>, CoreError> =
            outputs.into_iter().map(|output| convert::output_from(output, sent)).collect();
        if converted.is_err() {
            self.live = None;
        }
        converted
    }

    /// The durable state as JSON, for comparing a restored session with a live one.
    pub fn snapshot(&mut self) -> Result<String, CoreError> {
        self.call("snapshot", |guest, store, agent| guest.call_snapshot(store, agent))
    }

    /// While the running turn waits only for people or clients, what brings this agent back
    /// with a snapshot taken now ([`super::CoreHost::wake_from`]); `None` at any other time.
    pub fn waiting_state(&mut self) -> Result<Option<String>, CoreError> {
        self.call("waiting-state", |guest, store, agent| guest.call_waiting_state(store, agent))
    }

    /// Calls the agent's export `call` through `f`; an error drops the instance, which is never
    /// entered again.
    fn call<R>(
        &mut self,
        call: &'static str,
        f: impl FnOnce(GuestAgent<'_>, &mut Store<SessionState>, ResourceAny) -> wasmtime::Result<R>,
    ) -> Result<R, CoreError> {
        let live = self.live.as_mut().ok_or(CoreError::Poisoned)?;
        let (bindings, agent) = (&live.bindings, live.agent);
        let guest = bindings.airlock_core_session().agent();
        let answer = enter(&mut live.store, call, self.fuel, |store| f(guest, store, agent));
        if answer.is_err() {
            self.live = None;
        }
        answer
    }

    /// Sets the fuel budget of each later call (tests use a tiny one to force a trap).
    pub fn set_fuel(&mut self, fuel: u64) {
        self.fuel = fuel;
    }

    /// Whether an earlier call trapped and the instance is gone.
    pub fn is_poisoned(&self) -> bool {
        self.live.is_none()
    }
}

/// Runs `call` on a fresh budget of `fuel`; a trap becomes [`CoreError::Trapped`].
/// Instantiates the component and makes its agent with `make`, both on one budget of `fuel`.
fn instantiate<T>(
    store: &mut Store<SessionState>,
    pre: &AgentCorePre<SessionState>,
    call: &'static str,
    fuel: u64,
    make: impl FnOnce(&mut Store<SessionState>, &AgentCore) -> wasmtime::Result<T>,
) -> Result<(AgentCore, T), CoreError> {
    enter(store, call, fuel, |store| {
        let bindings = pre.instantiate(&mut *store)?;
        let made = make(store, &bindings)?;
        Ok((bindings, made))
    })
}

fn enter<R>(
    store: &mut Store<SessionState>,
    call: &'static str,
    fuel: u64,
    f: impl FnOnce(&mut Store<SessionState>) -> wasmtime::Result<R>,
) -> Result<R, CoreError> {
    store.set_fuel(fuel).map_err(|e| trapped(store, call, fuel, &e))?;
    let answer = f(store).map_err(|e| trapped(store, call, fuel, &e))?;
    let left = store.get_fuel().unwrap_or(0);
    airlock_base::metrics::global().core_fuel.observe(fuel.saturating_sub(left) as f64);
    Ok(answer)
}

fn trapped(
    store: &Store<SessionState>,
    call: &'static str,
    fuel: u64,
    error: &wasmtime::Error,
) -> CoreError {
    // The trap itself says what happened; the wasm backtrace around it names no functions (the
    // core is built stripped), so it is left out.
    let trap = error.downcast_ref::<Trap>();
    let out_of_fuel = matches!(trap, Some(Trap::OutOfFuel));
    let mut reason = match trap {
        Some(Trap::OutOfFuel) => format!("it used up its budget of {fuel} fuel units"),
        Some(trap) => trap.to_string(),
        None => format!("{error:#}"),
    };
    let stderr = store.data().stderr.contents();
    if !stderr.is_empty() {
        reason.push_str("; the core wrote to stderr: ");
        reason.push_str(String::from_utf8_lossy(&stderr).trim_end());
    }
    CoreError::Trapped { call, out_of_fuel, reason }
}
