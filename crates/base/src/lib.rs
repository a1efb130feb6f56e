//! What every layer of the gateway shares, and nothing that knows a session: the host's clock
//! and fresh ids ([`clock`]), plain names and whole numbers as every face reads them
//! ([`input`]), the Prometheus registry ([`metrics`]), and giving the memory of dropped sessions
//! back to the system ([`trim`]).

pub mod clock;
pub mod input;
pub mod metrics;
pub mod trim;
