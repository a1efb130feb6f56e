//! The sessions below the front door, driven directly: one session over the wasm core, the
//! registry's eviction, and a turn retried after a model's failure.

mod eviction;
mod layers;
mod memory_log;
mod retry;
mod session;
mod waiting;

pub use memory_log::MemoryLog;

use std::sync::{Arc, OnceLock};

use airlock_sandbox::core_host::CoreHost;

use crate::registry::Rules;

/// The one core host of the tests' process (compiling the core takes a CPU-second or two).
fn host() -> Arc<CoreHost> {
    static HOST: OnceLock<Arc<CoreHost>> = OnceLock::new();
    HOST.get_or_init(|| Arc::new(CoreHost::new(None).expect("the embedded core loads"))).clone()
}

/// A fresh session `id` of the demo model with the built-in tools, logging to `log`.
fn demo_session(id: &str, log: Arc<dyn crate::session::SessionLog>) -> crate::session::Session {
    crate::session::Session::create(demo_parts(id, log)).unwrap()
}

/// What [`demo_session`] is made of.
fn demo_parts(id: &str, log: Arc<dyn crate::session::SessionLog>) -> crate::session::SessionParts {
    use crate::session::{Outbox, SessionParts};
    let model = airlock_providers::model::from_name("demo").unwrap();
    let config = airlock_core::Config::new(id, model.provider(), model.model());
    let tools = airlock_providers::tools::ToolRegistry::builtin();
    let (host, outbox, accounting) = (host(), Outbox::new(), Default::default());
    let (budget, prices, workspace) = (None, Default::default(), None);
    let models = vec![model];
    SessionParts {
        host,
        config,
        models,
        tools,
        log,
        outbox,
        accounting,
        budget,
        prices,
        workspace,
        tap: None,
    }
}

/// What the tests' sessions are built with: the demo model, every default.
fn demo_rules() -> Rules {
    Rules { default_model: "demo".into(), ..Rules::default() }
}
