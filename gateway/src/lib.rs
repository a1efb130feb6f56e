//! The Airlock gateway: the host around the agent core.
//!
//! The core (`airlock-core`) is a deterministic sans-IO state machine. `airlock-sandbox` builds it
//! as a `wasm32-wasip2` component, embeds the bytes, and runs one sandboxed instance per session:
//! inputs go in with the current time, outputs (append this event, call the model, call a tool,
//! ...) come out for the gateway to perform.
//!
//! This crate is the `airlock` binary and what only it does: the command line ([`cli`]: `serve`,
//! `run`, `stdio`, `acp`, `keys`, and `airlock.toml`) and the composition root ([`server`]: the
//! one place that opens the store, builds the core host and the tools, opens [`Sessions`] over
//! them and puts the faces in front). Everything else is a crate below it, each with a rule the
//! compiler keeps (`docs/architecture.md`): `airlock-base`, `airlock-store`, `airlock-providers`,
//! `airlock-sandbox`, `airlock-sessions` (the front door, [`Sessions`]), and the faces,
//! `airlock-http` and `airlock-editors`.
//!
//! [`Sessions`]: airlock_sessions::Sessions

pub mod cli;
pub mod server;
