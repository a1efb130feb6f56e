//! The gateway's tests that need more than one module: one binary, a module per subject
//! (`docs/architecture.md`, "Tests"), with `common` the harness they share. Those that need a
//! tool from another registry or a service are `#[ignore]`d and run by `.ci/run`, by module:
//! `cargo test --workspace --test gateway -- --ignored mcp::`.

mod common;

mod acp;
mod cli;
mod code_tools;
mod docs;
mod durability;
mod http_api;
mod mcp;
mod openapi_schemas;
mod plugins;
mod plugins_e2e;
mod postgres_store;
mod settings_file;
mod stdio;
mod wasm_core;
