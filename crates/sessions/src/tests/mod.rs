//! The sessions below the front door, driven directly: one session over the wasm core, the
//! registry's eviction, and a turn retried after a model's failure.

mod eviction;
mod layers;
mod memory_log;
mod retry;
mod session;

pub use memory_log::MemoryLog;

use crate::registry::Rules;

/// What the tests' sessions are built with: the demo model, every default.
fn demo_rules() -> Rules {
    Rules { default_model: "demo".into(), ..Rules::default() }
}
