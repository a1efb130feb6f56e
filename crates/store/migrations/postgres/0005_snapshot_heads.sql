-- What the host knew at a snapshot (the log's length, the inbox, whether the session is paused
-- at its budget), as JSON beside the core's state: a session brought back into memory reads this
-- and the events after it, and leaves the core's state for when it next works
-- (crates/sessions/src/session/load.rs). NULL for snapshots written before it.
ALTER TABLE snapshots ADD COLUMN head TEXT;
