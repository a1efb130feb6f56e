//! What a session's agent calls out to, and nothing that knows a session: the model providers
//! ([`model`]: the offline demo, OpenAI-compatible APIs), the tool registry with a session's
//! tool policy ([`tools`]), and tools from MCP servers (`mcp`). Plugins, which are tools too,
//! live with the wasm sandbox. The OpenAI-compatible models and MCP reach outside the process:
//! they come with the `remote` feature (on by default; the crates below the faces turn it off).

#[cfg(feature = "remote")]
pub mod mcp;
pub mod model;
pub mod tools;
