//! The faces of Airlock for editors and SDK clients, each a protocol over one connection that
//! reaches the sessions only through their front door ([`airlock_sessions::Sessions`]):
//!
//! - [`stdio`]: the seed's low-level SDK protocol, newline-delimited JSON-RPC 2.0 on
//!   stdin/stdout (`airlock stdio`);
//! - [`acp`]: the Agent Client Protocol, for editors such as Zed (`airlock acp`).
//!
//! This crate knows no HTTP and no command line.

pub mod acp;
pub mod stdio;
