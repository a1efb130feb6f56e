//! The sessions of a gateway, behind one front door: [`Sessions`].
//!
//! Every face (HTTP, JSON-RPC on stdio, the Agent Client Protocol, the command line) reaches the
//! house only through [`Sessions`]: create, send, follow, run, the queue's operations, answering
//! a tool call, fork, goal, compact, dispose, list. It owns the one accounting of new work
//! (`admission`): a face asks it for a stream's slot ([`Sessions::hold_stream`]) and whether a
//! turn would fit before it makes a session for a run ([`Sessions::turn_room`]), and meets every
//! other limit as an error of the input it sent. Behind it, in layers that depend one way, bottom
//! to top:
//!
//! | layer | modules | what they are |
//! |---|---|---|
//! | accounting | `admission` | the limits every way work grows is admitted by |
//! | goals | `goal` | the pure goal driver |
//! | session | `session` | one session: feed the core, commit, announce, run effects |
//! | actor | `actor` | one task per session, and the handle into it |
//! | intervals | `owned`, `follow` | owned runs and their results; followers of a log |
//! | registry | `registry` | the sessions in memory: create, find, evict, wake, recover |
//! | session tools | `subagents`, `goal_tool` | the model tools that act on the registry |
//! | front door | `front`: [`Sessions`] | what the faces use |
//!
//! This crate knows no HTTP server, no OpenAPI and no command line.

mod actor;
mod admission;
mod follow;
mod front;
mod goal;
mod goal_tool;
mod owned;
mod registry;
mod session;
mod subagents;

pub use actor::{SessionHandle, View};
pub use admission::{Exceeded, Limit, Limits, Slot, TenantLimits};
pub use follow::{Follower, Update};
pub use front::{
    HubEvent, InputError, ModelSpending, ModelUsage, Overview, Sent, Sessions, Spending, Tokens,
};
pub use goal::{Goal, GoalError, GoalOp, GoalReason, Phase};
pub use owned::{OwnError, OwnedRun, RunResult, Summary, summarize};
pub use registry::{Eviction, ForkedFrom, RegistryError, Rules, SessionSpec, valid_session_id};
pub use session::{
    Budget, BudgetState, Committed, IdempotencyKey, QueueItem, QueueSnapshot, Refusal, RefusalCode,
    SessionError, Spend, Tap, Tapped, seq_of,
};

#[cfg(test)]
mod tests;
