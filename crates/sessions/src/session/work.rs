//! New work a session admits (the tenant's rate, the queue's length, a turn slot) and the slots
//! it holds while it works.

use airlock_core::{Input, Status};

use super::{Accounting, Session};
use crate::admission::{Exceeded, Slot};

/// Whether an input is new work, admitted against the limits as it is fed (a send from a client,
/// a model's subagent prompt), or finishes work admitted before (a cancel, an answer, a child's
/// notice, a recovery): counted, never refused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Work {
    /// Admitted as it is fed ([`crate::admission`]).
    New,
    /// Counted, never refused.
    #[default]
    Admitted,
}

/// What a session holds while it is at work: its tenant's turn slot and, below a root session,
/// its root's working-subagent slot.
pub(super) struct Held {
    pub(super) _turn: Slot,
    pub(super) _descendant: Slot,
}

impl Session {
    /// Admits one new send ([`crate::admission`]): the tenant's rate and the queue's length, and,
    /// when it would wake the agent, the tenant's turn slot and the root's working-subagent slot,
    /// which the session then holds until it is idle again. `queued`: sends of the same group
    /// admitted before it.
    pub(super) fn admit(&mut self, input: &Input, queued: usize) -> Result<(), Exceeded> {
        let Input::Send { wakeup, .. } = input else { return Ok(()) };
        let Accounting { admission, tenant, .. } = &self.accounting;
        admission.enqueue(tenant.as_deref())?;
        let pending = self.inbox.lock().pending().count() + queued;
        admission.queue(&self.config.session_id, pending)?;
        if *wakeup && self.held.is_none() {
            self.hold_turn()?;
        }
        Ok(())
    }

    /// Takes the tenant's turn slot and, for a subagent, its root's working-subagent slot: the
    /// session holds both until it is idle again.
    pub(super) fn hold_turn(&mut self) -> Result<(), Exceeded> {
        let Accounting { admission, tenant, root, .. } = &self.accounting;
        let turn = admission.turn(tenant.as_deref())?;
        let descendant = match root {
            Some(root) => admission.descendant(root)?,
            None => Slot::free(),
        };
        self.held = Some(Held { _turn: turn, _descendant: descendant });
        Ok(())
    }

    /// Gives back the slots of a session that is idle and not compacting: what it was admitted
    /// for is done, or never started.
    pub(super) fn release_if_idle(&mut self) {
        if self.status == Status::Idle && !self.compacting {
            self.held = None;
        }
    }
}
