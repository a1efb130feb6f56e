-- Indexes kept in the same transactions as the log, so that nothing needs a session in memory
-- or a scan of its log: which sessions recovery must visit at start, receipts, the last goal.

-- 1 unless the session's last commit left it at rest (idle, inbox empty). Sessions stored before
-- this column are visited once at the next start, which clears it for those at rest.
ALTER TABLE sessions ADD COLUMN needs_recovery INTEGER NOT NULL DEFAULT 1;
CREATE INDEX sessions_needing_recovery ON sessions (session_id)
    WHERE needs_recovery = 1 AND disposed = 0;
CREATE INDEX sessions_children ON sessions (parent_session_id)
    WHERE parent_session_id IS NOT NULL;

-- The body of the session's last `goal/change` event.
ALTER TABLE sessions ADD COLUMN goal TEXT;
UPDATE sessions SET goal = (
    SELECT body FROM events e
    WHERE e.session_id = sessions.session_id AND e.type = 'goal/change'
    ORDER BY seq DESC LIMIT 1
);

-- 1 when every splice of the session's log is in `receipts` (sessions created since this
-- migration); older logs are replayed to answer a receipt.
ALTER TABLE sessions ADD COLUMN receipts_indexed INTEGER NOT NULL DEFAULT 0;

-- Each accepted message's receipt, as its splices left it.
CREATE TABLE receipts (
    session_id   TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    state        TEXT NOT NULL,
    target       TEXT NOT NULL,
    inserted_seq INTEGER NOT NULL,
    claimed_seq  INTEGER,
    turn         INTEGER,
    canceled_seq INTEGER,
    PRIMARY KEY (session_id, message_id)
) WITHOUT ROWID;

-- The newest snapshot of each session's core state, taken when it went idle well past the last
-- one: waking a session reads it and only the events after it. Only the core that wrote it
-- (`core`, the hash of the core and engine) reads it; any other core replays the whole log.
CREATE TABLE snapshots (
    session_id TEXT PRIMARY KEY,
    next_seq   INTEGER NOT NULL,
    core       TEXT NOT NULL,
    state      TEXT NOT NULL,
    parent     TEXT
) WITHOUT ROWID;
