//! Why an input was refused: by the core, by a rule of the host, or by a limit.

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
