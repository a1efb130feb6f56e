//! The WebAssembly sandbox, the only crate that names wasmtime: the agent core, built from
//! `core-wasm` by `build.rs` and run one instance per session ([`core_host`]), and plugin tools,
//! components that get only what their manifest asks for ([`plugins`]). It knows no session and
//! no storage: the gateway feeds a [`core_host::WasmCore`] and commits what comes out.

pub mod core_host;
pub mod plugins;
