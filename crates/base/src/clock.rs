//! The host's clock and its fresh ids. The core never reads a clock: the host reads this one and
//! hands the time in with each input, and storage is handed `now` by its callers.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the epoch.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// A fresh id for a session or a message: a UUID v7, so ids sort by the time they were made.
pub fn fresh_id() -> String {
    uuid::Uuid::now_v7().to_string()
}
