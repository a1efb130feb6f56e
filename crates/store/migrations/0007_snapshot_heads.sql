-- What the host knew at a snapshot (the log's length, the inbox, whether the session is paused
-- at its budget), as JSON beside the core's state: a session brought back into memory reads this
-- and the events after it, and leaves the core's state for when it next works
-- (crates/sessions/src/session/load.rs). NULL for snapshots written before it.
--
-- The table is made again with `state` last, and with a rowid: SQLite reads a row's columns in
-- order, so a column after a state of megabytes would cost a walk through its overflow pages; and
-- a WITHOUT ROWID table reads a whole row to find it by its key (1.3 ms for a state of 7 MB,
-- against 5 µs here).
CREATE TABLE snapshots_by_head (
    session_id TEXT PRIMARY KEY,
    next_seq   INTEGER NOT NULL,
    core       TEXT NOT NULL,
    parent     TEXT,
    head       TEXT,
    state      TEXT NOT NULL
);
INSERT INTO snapshots_by_head (session_id, next_seq, core, parent, head, state)
    SELECT session_id, next_seq, core, parent, NULL, state FROM snapshots;
DROP TABLE snapshots;
ALTER TABLE snapshots_by_head RENAME TO snapshots;
