//! The end-to-end tests: the real `airlock` binary, a module per subject (`docs/architecture.md`,
//! "Tests"), with the harness in the `airlock-tests` library. Those that need a tool from another
//! registry or a service are `#[ignore]`d and run by `.ci/run`, by module:
//! `cargo test --workspace --test all -- --ignored browser::`.

mod access;
mod admission;
mod anthropic;
mod browser;
mod budget;
mod cluster;
mod compaction;
mod compose;
mod connections;
mod continuable;
mod e2e;
mod failover;
mod files;
mod forks;
mod generated_clients;
mod goals;
mod limits;
mod logs;
mod metrics;
mod openapi;
mod person;
mod protocols;
mod queue_and_streams;
mod runs;
mod scale;
mod schedules;
mod schemathesis;
mod sessions;
mod storage;
mod subagents;
mod traces;
mod usage;
mod web_demo;
mod webhooks;
