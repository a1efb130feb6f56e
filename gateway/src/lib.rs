//! The Airlock gateway: the host around the agent core.
//!
//! The core (`airlock-core`) is a deterministic sans-IO state machine. `airlock-sandbox` builds it
//! as a `wasm32-wasip2` component, embeds the bytes, and runs one sandboxed instance per session:
//! inputs go in with the current time, outputs (append this event, call the model, call a tool,
//! ...) come out for the gateway to perform.
//!
//! It stands on crates the compiler keeps below it (`docs/architecture.md`): `airlock-base` (the
//! clock and ids, plain names, metrics, giving freed memory back), `airlock-store` (the durable
//! log on SQLite or PostgreSQL, receipts, keys, leases), `airlock-providers` (model providers,
//! the tool registry and tool policy, MCP tool sources) and `airlock-sandbox` (the wasm core's
//! host and plugin tools, the only crate that names wasmtime). Its own modules form layers that
//! depend one way, bottom to top (the test `gateway/tests/gateway/layers.rs` keeps them so):
//!
//! | layer | modules | what they are |
//! |---|---|---|
//! | helpers | [`schema`], [`admission`], [`connections`] | OpenAPI schemas of the lower crates' types, the one accounting of new work, the accept loop |
//! | goals | [`goal`] | the pure goal driver |
//! | session | [`session`] | one session: feed the core, commit, announce, run effects |
//! | actor | [`actor`] | one task per session, and the handle into it |
//! | intervals | [`owned`], [`follow`] | owned runs and their results; followers of a log |
//! | registry | [`registry`] | the sessions in memory: create, find, evict, wake, recover |
//! | session tools | [`subagents`], [`goal_tool`] | the model tools that act on the registry |
//! | faces | [`api`], [`stdio`], [`acp`] | HTTP/SSE, JSON-RPC on stdio, the Agent Client Protocol |
//! | composition | [`server`] | the one place that wires store, core, tools, registry and faces |
//! | command line | [`cli`] | `airlock serve`, `run`, `stdio`, `acp` |

pub mod acp;
pub mod actor;
pub mod admission;
pub mod api;
pub mod cli;
pub mod connections;
pub mod follow;
pub mod goal;
pub mod goal_tool;
pub mod owned;
pub mod registry;
pub mod schema;
pub mod server;
pub mod session;
pub mod stdio;
pub mod subagents;
