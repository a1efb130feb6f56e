//! The one error type of the core host.

/// What went wrong loading, instantiating or driving the core component.
#[derive(Clone, Debug, thiserror::Error)]
pub enum CoreError {
    /// The component bytes could not be compiled to machine code.
    #[error("could not compile the core component: {0}")]
    Compile(String),

    /// The component imports something the sandbox never grants.
    #[error(
        "the core component imports {forbidden:?}; the sandbox never grants clocks, randomness, \
         files or sockets (time and ids come in as inputs), so build the core without them"
    )]
    ForbiddenImports {
        /// The imports the sandbox refuses.
        forbidden: Vec<String>,
        /// Every import of the component, to see where they came from.
        imports: Vec<String>,
    },

    /// The component could not be linked or instantiated in the sandbox.
    #[error("could not instantiate the core component in the sandbox: {0}")]
    Instantiate(String),

    /// The core trapped (a panic, a bug, or it ran out of fuel); its instance is gone.
    #[error(
        "the core trapped in `{call}`: {reason}; this session's instance is discarded and the \
         session will be rebuilt from its log"
    )]
    Trapped {
        /// The export that was running: `new`, `restore`, `handle` or `snapshot`.
        call: &'static str,
        /// Whether it ran out of its fuel budget (a loop that would not end).
        out_of_fuel: bool,
        /// The trap, and what the core printed to stderr before it.
        reason: String,
    },

    /// An earlier call trapped; the instance is never entered again.
    #[error(
        "this session's core instance trapped earlier and is never re-entered; rebuild the \
         session from its log"
    )]
    Poisoned,

    /// The core refused to fold the log into a session.
    #[error("the core could not restore the session from its log: {0}")]
    Restore(String),

    /// A model request said it repeats more messages of the agent's previous one than that had.
    #[error(
        "the core's model request reuses {reused} messages of its previous one, which had only \
         {had}; the session will be rebuilt from its log"
    )]
    Reuse {
        /// How many the request said it reuses.
        reused: u32,
        /// How many the previous request had.
        had: usize,
    },

    /// A message, chunk or list of messages did not survive the trip through JSON text.
    #[error("{what} crossing the core boundary is not valid JSON: {source}")]
    Json {
        /// Which value it was.
        what: &'static str,
        /// The serde error.
        #[source]
        source: std::sync::Arc<serde_json::Error>,
    },
}
