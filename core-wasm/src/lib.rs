//! The Airlock agent core: a deterministic, sans-IO state machine that decides what happens to
//! every input of a session, per `docs/semantics.md`.
//!
//! Data flow: the host feeds [`Input`]s to [`Agent::handle`] with the current time; the agent folds
//! the events it writes into its [`Durable`] state and returns [`Output`]s (append this event,
//! status changed, call the model, call a tool, ...) for the host to perform. Answers come back as
//! inputs keyed by the ids the outputs carried. A session is rebuilt from its log with
//! [`Agent::restore`]; [`repair`] closes a turn a crash left open.
//!
//! The crate builds natively (the fast tests) and for `wasm32-wasip2` as a component of the WIT
//! world `airlock:core/agent-core` (the `guest` module). It uses no clock, no randomness, no
//! `HashMap` and no I/O, so the same inputs give the same log on both.

mod agent;
mod compaction;
mod durable;
mod event;
mod inbox;
mod io;
mod pause;
mod restore;
mod stream;
mod tools;
mod turn;
mod wire;

#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)] // the bindings wit-bindgen generates
mod guest;

#[cfg(feature = "testkit")]
pub mod testkit;

pub use agent::Agent;
mod config;
pub use compaction::{COMPACTION_INSTRUCTION, SUMMARY_PREFIX, estimate, estimate_request};
pub use config::*;
pub use durable::{Durable, OpenStep, OpenTurn, PromptMark};
pub use event::*;
pub use inbox::{Delivery, Inbox, ReceiptChange, ReceiptMark};
pub use io::*;
pub use restore::{fold_after, fold_log, fold_snapshot, repair};
pub use tools::MAX_PARALLEL;
pub use wire::*;
