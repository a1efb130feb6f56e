//! The session's part in goal continuation: it holds the goal's [`Driver`](crate::goal::Driver),
//! shows it the committed events, and feeds what the driver asks for.

use std::time::Duration;

use airlock_core::Status;
use tokio::time::Instant;

use super::{Session, SessionError};
use crate::admission::{Exceeded, Limit};
use crate::goal::{Goal, GoalOp, GoalReason};
use airlock_base::clock::fresh_id;

impl Session {
    /// The goal and whether it is armed in this process.
    pub fn goal(&self) -> Option<(Goal, bool)> {
        self.goal.goal().map(|goal| (goal.clone(), self.goal.armed()))
    }

    /// Changes the goal as asked; the next [`Session::drive_goal`] acts on it.
    pub async fn change_goal(&mut self, op: GoalOp) -> Result<(), SessionError> {
        if let (Some(parent), GoalOp::Set { .. } | GoalOp::Resume) = (&self.parent.0, &op) {
            let (child, parent) = (self.id().to_owned(), parent.clone());
            return Err(SessionError::ChildSession { child, parent });
        }
        let inputs = self.goal.apply(op, &self.inbox.lock(), fresh_id)?;
        self.feed_all(inputs, None).await?;
        Ok(())
    }

    /// Feeds what the goal needs now: a pause after a cancelled round, or at whole-agent idle
    /// the next round or the round limit (none while the session is paused at its budget). Rounds start `ROUND_PACE` apart at the least; one
    /// held back for it is due at [`Session::round_due`]. A round is new work: past its tenant's
    /// rate or turn quota it waits (the goal says so in a `goal/change`) and starts once it fits.
    pub async fn drive_goal(&mut self) -> Result<(), SessionError> {
        let idle = self.status == Status::Idle;
        let now = Instant::now();
        let paced = self.pace.next_round.is_some_and(|at| now < at)
            || self.pace.retry.is_some_and(|at| now < at);
        self.pace.held = idle && paced;
        let had_round = self.goal.has_round();
        let ready = idle && !paced;
        if ready && self.paused {
            // Paused at its budget: no round starts until the budget is raised (which drives
            // the goal again); the goal says why it waits.
            let why = "the session's budget is spent; raise it to go on";
            let wait = self
                .goal
                .would_start_round(&self.inbox.lock())
                .then(|| self.goal.wait(GoalReason::new("budget", why.to_owned())));
            if let Some(wait) = wait.flatten() {
                self.feed_all(vec![wait], None).await?;
            }
            return Ok(());
        }
        if ready && self.goal.would_start_round(&self.inbox.lock()) {
            self.pace.retry = None;
            if let Err(exceeded) = self.admit_round() {
                let retry = match exceeded.limit {
                    Limit::Turns => ROUND_RETRY,
                    _ => Duration::from_secs(exceeded.retry_after),
                };
                (self.pace.retry, self.pace.held) = (Some(now + retry), true);
                let reason = GoalReason::new(
                    exceeded.limit.flag().trim_start_matches('-'),
                    exceeded.to_string(),
                );
                if let Some(wait) = self.goal.wait(reason) {
                    self.feed_all(vec![wait], None).await?;
                }
                return Ok(());
            }
        }
        let inputs = self.goal.next(ready, &self.inbox.lock(), fresh_id);
        if inputs.is_empty() {
            return Ok(());
        }
        if let Err(error) = self.feed_all(inputs, None).await {
            self.goal.abandon_round();
            return Err(error);
        }
        if !had_round && self.goal.has_round() {
            self.pace.next_round = Some(Instant::now() + ROUND_PACE);
        }
        Ok(())
    }

    /// When a goal round held back by the pace (or waiting for its tenant's rate or turn
    /// quota) may start: drive the goal again then.
    pub fn round_due(&self) -> Option<Instant> {
        let due = self.pace.next_round.into_iter().chain(self.pace.retry).max();
        due.filter(|_| self.pace.held)
    }

    /// Whether a goal round waits for one of its tenant's turn slots: drive the goal again as
    /// soon as one is given back (see [`crate::admission::Admission::turn_freed`]).
    pub fn round_waits_for_a_turn(&self) -> bool {
        self.pace.held && self.pace.retry.is_some()
    }

    /// The gateway's accounting, which a waiting round listens to.
    pub fn admission(&self) -> &std::sync::Arc<crate::admission::Admission> {
        &self.accounting.admission
    }

    /// Admits a goal round as a client's waking send is admitted: the tenant's rate, then its
    /// turn slot (and a subagent's root's slot), held from now until the session is idle again.
    fn admit_round(&mut self) -> Result<(), Exceeded> {
        self.accounting.admission.enqueue(self.accounting.tenant.as_deref())?;
        self.hold_turn()
    }
}

/// How soon a goal round that found its tenant's turns all taken tries again, when no slot was
/// heard given back meanwhile.
const ROUND_RETRY: Duration = Duration::from_secs(1);

/// The least time between the starts of two goal rounds: a goal whose rounds end at once (a
/// fast model, a round with nothing to do) runs a few rounds a second, not thousands of events.
pub const ROUND_PACE: Duration = Duration::from_millis(250);

/// When the next goal round may start, and whether one waits for it.
#[derive(Default)]
pub(super) struct Pace {
    next_round: Option<Instant>,
    /// A round refused by its tenant's rate or turn quota tries again then.
    retry: Option<Instant>,
    held: bool,
}
