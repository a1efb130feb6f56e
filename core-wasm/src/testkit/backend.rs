//! The cores a [`super::Harness`] drives: the native agent here; the gateway's wasm parity test
//! brings the component.

use crate::config::Config;
use crate::io::{Input, Output};

/// One session's core, however it runs.
pub trait Core {
    /// [`crate::Agent::handle`].
    fn handle(&mut self, input: Input, now: u64) -> Vec<Output>;
    /// [`crate::Agent::snapshot`].
    fn snapshot(&self) -> String;
    /// [`crate::Agent::waiting_state`].
    fn waiting_state(&self) -> Option<String>;
}

/// A core rebuilt from a log, or why it could not be.
pub type Restored = Result<Box<dyn Core>, String>;

/// Makes cores: natively, or as wasm component instances.
pub trait Backend {
    /// A fresh session.
    fn create(&self, config: Config, now: u64) -> Box<dyn Core>;
    /// A session rebuilt from its log, after the snapshot its core wrote when there is one.
    fn restore(&self, config: Config, snapshot: Option<&str>, events: &[String]) -> Restored;
    /// A session whose core was dropped while its turn waited ([`crate::Agent::wake_from`]).
    fn wake_from(
        &self,
        config: Config,
        snapshot: &str,
        events: &[String],
        waiting: &str,
    ) -> Restored;
}

impl Core for crate::Agent {
    fn handle(&mut self, input: Input, now: u64) -> Vec<Output> {
        crate::Agent::handle(self, input, now)
    }
    fn snapshot(&self) -> String {
        crate::Agent::snapshot(self)
    }
    fn waiting_state(&self) -> Option<String> {
        crate::Agent::waiting_state(self)
    }
}

/// The core linked natively.
pub struct Native;

impl Backend for Native {
    fn create(&self, config: Config, now: u64) -> Box<dyn Core> {
        Box::new(crate::Agent::new(config, now))
    }
    fn restore(&self, config: Config, snapshot: Option<&str>, events: &[String]) -> Restored {
        Ok(Box::new(match snapshot {
            Some(snapshot) => crate::Agent::restore_from(config, snapshot, events)?,
            None => crate::Agent::restore(config, events)?,
        }))
    }
    fn wake_from(
        &self,
        config: Config,
        snapshot: &str,
        events: &[String],
        waiting: &str,
    ) -> Restored {
        Ok(Box::new(crate::Agent::wake_from(config, snapshot, events, waiting)?))
    }
}
