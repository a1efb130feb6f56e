//! Why storage failed, as one error for both backends.

use std::path::PathBuf;

/// Why storage failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite said no.
    #[error("storage error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A group commit failed; nothing of it was written.
    #[error(
        "the database did not commit ({0}); nothing was written, so the input can be sent again"
    )]
    Commit(String),
    /// The database could not be opened or migrated.
    #[error("cannot open the database at {path}: {message}; check the path and its permissions")]
    Open {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The PostgreSQL database could not be reached or migrated.
    #[error("cannot use the PostgreSQL database at {url}: {message}")]
    Connect {
        /// The URL, without its password.
        url: String,
        /// What went wrong, and what to check.
        message: String,
    },
    /// An append did not continue the log.
    #[error(
        "log append out of order for session {session}: the log expects seq {expected} but the batch starts at {got}; another writer may share this session"
    )]
    SeqMismatch {
        /// The session.
        session: String,
        /// The next seq of the log.
        expected: u64,
        /// The batch's first seq.
        got: u64,
    },
    /// Something that should be an event envelope is not.
    #[error("not an event envelope: {0}")]
    NotAnEvent(String),
    /// A durability barrier could not sync the log to disk.
    #[error(
        "the log could not be synced to disk ({0}); what was committed may not survive a power loss"
    )]
    Sync(String),
    /// PostgreSQL said no, or could not be reached.
    #[error("PostgreSQL error: {0}")]
    Postgres(String),
    /// This gateway no longer holds the session's lease: another one runs it now.
    #[error(
        "session {0} is now run by another gateway (this one lost its lease); send the input again, and it will reach that gateway"
    )]
    Fenced(String),
    /// The session's lease is being taken over (its gateway stopped answering while it held the
    /// lease's row): the wait for it was cut short.
    #[error(
        "session {0} is changing gateways (the one that ran it stopped answering); send again in a second"
    )]
    Moving(String),
    /// Another running gateway has this one's name or address.
    #[error("this gateway cannot join the others on the database: {0}")]
    Taken(String),
    /// The writer is gone (the process is shutting down).
    #[error("storage is shutting down; try again after the gateway restarts")]
    Closed,
}

impl StoreError {
    /// The same failure, for another job of the commit it struck: nothing of any of them was
    /// written. A session that moved to another gateway moved for each of them; anything else is
    /// that commit's failure.
    pub fn shared(&self) -> StoreError {
        match self {
            StoreError::Fenced(session) => StoreError::Fenced(session.clone()),
            StoreError::Moving(session) => StoreError::Moving(session.clone()),
            other => StoreError::Commit(other.to_string()),
        }
    }
}
