//! The Airlock gateway: the host around the agent core.
//!
//! The core (`airlock-core`) is a deterministic sans-IO state machine. The gateway builds it as a
//! `wasm32-wasip2` component (see `build.rs`), embeds the bytes, and runs one sandboxed instance
//! per session through [`core_host`]: inputs go in with the current time, outputs (append this
//! event, call the model, call a tool, ...) come out for the host to perform.

pub mod acp;
pub mod actor;
pub mod api;
pub mod cli;
pub mod core_host;
pub mod follow;
pub mod goal;
pub mod metrics;
pub mod model;
pub mod owned;
pub mod plugins;
pub mod registry;
pub mod server;
pub mod session;
pub mod stdio;
pub mod store;
pub mod subagents;
pub mod tools;
