//! Work that starts and reports without a client watching (`docs/http-api.md`, "Webhooks" and
//! "Schedules"): [`webhooks`] tells a tenant's URL, signed, what its sessions did, delivered from
//! the store at least once and in order per session; [`schedules`] sends a session a message at
//! each due time of a cron expression, once however the gateways crash or share the store.

pub mod operator;
pub mod schedules;
pub mod webhooks;
