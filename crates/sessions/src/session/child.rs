//! A continuable subagent's inbox belongs to its parent: only the parent's work (`spawn_agent`'s
//! prompt, `send_message`), the settlement notices of the child's own children, and steering into
//! its running turn are taken. Anything else would make work its parent is never told of, so it
//! is refused with `child-session` (and a cancel, which makes no work, is always taken).

use airlock_core::{Event, EventData, Input, Status, Target};

use super::{Refusal, RefusalCode};

/// The source kind of work a parent gives its child.
pub const COORDINATOR: &str = "coordinator";

/// The source kind of a settlement notice (a child's result, in its parent's inbox).
pub const SUBAGENT: &str = "subagent";

/// The parent of a continuable child, which alone may give it work (none for other sessions).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parent(pub Option<String>);

impl Parent {
    /// The parent a `subagent/descriptor` event names, if it describes a continuable child.
    pub fn named_in(event: &Event) -> Option<Parent> {
        let EventData::SubagentDescriptor(data) = &event.data else { return None };
        let descriptor: serde_json::Value = serde_json::from_str(data.get()).ok()?;
        let continuable = descriptor["continuable"].as_bool() == Some(true);
        let parent = descriptor["parentSessionId"].as_str().map(str::to_owned);
        continuable.then_some(Parent(parent)).filter(|p| p.0.is_some())
    }
}

/// Whether the continuable child `child` of `parent`, now `status`, takes `input`.
pub fn admits(child: &str, parent: &str, input: &Input, status: Status) -> Result<(), Refusal> {
    let Input::Send { message, target, wakeup } = input else { return Ok(()) };
    let kind = message.source.kind.as_str();
    if kind == COORDINATOR || kind == SUBAGENT {
        return Ok(());
    }
    if *target == Target::NextStep && *wakeup && status == Status::Running {
        return Ok(()); // steering joins the running turn, which the parent's notice covers
    }
    let message = format!(
        "session {child:?} is a subagent of session {parent:?}: its work comes from its parent \
         (send_message in session {parent:?}); here only steering into its running turn and \
         cancel are taken"
    );
    Err(Refusal::new(RefusalCode::ChildSession, message))
}
