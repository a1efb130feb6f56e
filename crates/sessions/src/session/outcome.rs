//! What an input did: the events it wrote, or why it was refused (by the core, a rule of the
//! host, or a limit); and the idempotency key a send is recorded with.

use crate::admission::Exceeded;

/// An input the core (or a rule of the host, or a limit) refused, with its reason; it changed
/// nothing.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    /// Why.
    pub code: RefusalCode,
    /// What was wrong, for a person.
    pub message: String,
    /// The limit new work ran into ([`RefusalCode::LimitExceeded`]).
    pub limit: Option<Exceeded>,
}

/// Why an input was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefusalCode {
    /// The core refused it.
    Core(airlock_core::RefusalCode),
    /// A continuable child takes work only from its parent.
    ChildSession,
    /// New work past a limit.
    LimitExceeded,
    /// The input wrote nothing to the log.
    NotAdmitted,
}

impl RefusalCode {
    /// The kebab-case code, as the faces answer it.
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalCode::Core(code) => code.as_str(),
            RefusalCode::ChildSession => "child-session",
            RefusalCode::LimitExceeded => "limit-exceeded",
            RefusalCode::NotAdmitted => "not-admitted",
        }
    }
}

impl Refusal {
    /// A refusal with this code, for a person.
    pub fn new(code: RefusalCode, message: impl Into<String>) -> Refusal {
        Refusal { code, message: message.into(), limit: None }
    }
}

impl From<Exceeded> for Refusal {
    fn from(exceeded: Exceeded) -> Refusal {
        let message = exceeded.to_string();
        Refusal { code: RefusalCode::LimitExceeded, message, limit: Some(exceeded) }
    }
}

/// What one fed input did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fed {
    /// The core refused the input (nothing was written).
    pub refusal: Option<Refusal>,
    /// Seq of the first event the input wrote (for a send: its insert splice).
    pub first_seq: Option<u64>,
}

/// An idempotency key to record with the events of a send, answered `{messageId, seq}`.
#[derive(Clone, Debug)]
pub struct IdempotencyKey {
    /// The client's key.
    pub key: String,
    /// A hash of the request.
    pub request_hash: String,
    /// The message being sent.
    pub message_id: String,
}
