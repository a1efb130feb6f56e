//! What every layer of the gateway shares, and nothing that knows a session: the host's clock
//! and fresh ids ([`clock`]), the Prometheus registry ([`metrics`]), and giving the memory of
//! dropped sessions back to the system ([`trim`]).

pub mod clock;
pub mod metrics;
pub mod trim;
