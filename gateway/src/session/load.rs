//! Building a session's state from its durable log: at a restart, and after a core trap or a
//! failed commit left the instance ahead of the log.

use airlock_core::{Config, Event, Inbox, Status};

use super::child::Parent;
use super::{Session, SessionError, SessionLog};
use crate::core_host::{CoreError, CoreHost, WasmCore};
use crate::goal::Driver;

/// A core instance and what the log says, read once from the log.
pub(super) struct Loaded {
    pub core: WasmCore,
    pub next_seq: u64,
    pub inbox: Inbox,
    pub goal: Driver,
    pub parent: Parent,
}

impl Loaded {
    /// The state of a fresh session.
    pub fn fresh(core: WasmCore) -> Loaded {
        let (inbox, goal) = (Inbox::default(), Driver::default());
        Loaded { core, next_seq: 0, inbox, goal, parent: Parent::default() }
    }

    pub async fn from_log(
        host: &CoreHost,
        config: &Config,
        log: &dyn SessionLog,
    ) -> Result<Loaded, SessionError> {
        let events = log.read(&config.session_id).await?;
        let core = host.restore(config, &events)?;
        let durable = airlock_core::fold_log(&events).map_err(CoreError::Restore)?;
        let goal = Driver::from_log(&events);
        let parent = events
            .iter()
            .filter(|json| Event::type_of(json).as_deref() == Some("subagent/descriptor"))
            .find_map(|json| Event::parse(json).ok().flatten().as_ref().and_then(Parent::named_in))
            .unwrap_or_default();
        Ok(Loaded { core, next_seq: durable.next_seq, inbox: durable.inbox, goal, parent })
    }
}

impl Session {
    /// Replaces the instance with one rebuilt from the durable log; in-flight work is abandoned.
    pub(super) async fn rebuild(&mut self) -> Result<(), SessionError> {
        self.generation += 1;
        self.tasks.abort_all();
        self.streams.clear();
        let loaded = Loaded::from_log(&self.host, &self.config, self.log.as_ref()).await?;
        (self.core, self.next_seq, self.inbox) = (loaded.core, loaded.next_seq, loaded.inbox);
        self.parent = loaded.parent;
        self.goal.abandon_round(); // a round in flight was abandoned with the instance
        self.set_status(Status::Idle, self.next_seq);
        Ok(())
    }
}
