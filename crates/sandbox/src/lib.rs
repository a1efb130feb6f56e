//! The WebAssembly sandbox, the only crate that names wasmtime: the agent core, built from
//! `core-wasm` by `build.rs` and run one instance per session ([`core_host`]), and plugin tools,
//! components that get only what their manifest asks for (`plugins`, with the `plugins` feature:
//! on by default, off below the faces, as their grants include outbound HTTP). It knows no
//! session and no storage: the gateway feeds a [`core_host::WasmCore`] and commits what comes
//! out.

pub mod core_host;
#[cfg(feature = "plugins")]
pub mod plugins;
