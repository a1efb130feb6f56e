//! Why a registry operation failed.

use crate::admission::Exceeded;
use crate::session::SessionError;
use airlock_store::StoreError;

/// Why a registry operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// No such session.
    #[error("no session has id {0:?}")]
    NotFound(String),
    /// The session was disposed: its log is readable, it takes no input.
    #[error("session {0:?} was disposed; its log stays readable but it takes no input")]
    Disposed(String),
    /// The spec names something this gateway cannot provide.
    #[error("{message}")]
    BadSpec {
        /// The spec's field: `model` or `tools`.
        field: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// A stored session this gateway cannot build (e.g. its model's provider has no key here):
    /// it stays in the log, and every use answers this, while other sessions work.
    #[error(
        "session {session_id:?} cannot run on this gateway: {message}; its log stays readable (fix the setting and restart, or start a new session)"
    )]
    Unusable {
        /// The session.
        session_id: String,
        /// Why its spec does not build.
        message: String,
    },
    /// A new session's id does not fit `valid_session_id`.
    #[error(
        "the session id {0:?} is not valid: use 1 to 200 letters, digits, `.`, `_`, `:` or `-`, starting with a letter or digit"
    )]
    BadId(String),
    /// Another gateway sharing the store runs the session (it holds the lease).
    #[error(
        "session {session_id:?} is run by the gateway at {address}, and it is moving or that gateway is stopping; send the request again in a moment"
    )]
    Elsewhere {
        /// The session.
        session_id: String,
        /// Where that gateway takes requests.
        address: String,
    },
    /// A fork asked for a seq the source has not logged.
    #[error("session {session_id:?} has no event at seq {at} yet ({logged}); fork at a logged seq")]
    NotLogged {
        /// The source.
        session_id: String,
        /// The seq asked for.
        at: u64,
        /// What it has: its last seq, or none.
        logged: String,
    },
    /// The gateway keeps no workspaces (`--workspaces off`).
    #[error(
        "this gateway keeps no session workspaces (it was started with --workspaces off), so sessions have no files"
    )]
    NoWorkspaces,
    /// A new session's id is taken.
    #[error("a session with id {0:?} exists; pick another sessionId")]
    Taken(String),
    /// New work past a limit (`admission`).
    #[error(transparent)]
    Exceeded(#[from] Exceeded),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The session could not be built.
    #[error(transparent)]
    Session(#[from] SessionError),
}
