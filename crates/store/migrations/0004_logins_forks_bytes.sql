-- The browser's sign-ins: `POST /v1/login` makes a random token, sets it as the cookie and keeps
-- only its SHA-256 here, with the key it acts for. Logging out deletes the row; a revoked key's
-- sign-ins end with it.
CREATE TABLE logins (
    token_hash TEXT PRIMARY KEY,
    key_id     TEXT NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX logins_by_key ON logins (key_id);

-- A fork shares its source's log through `base_seq`: its events are `base_session_id`'s (itself
-- read the same way) up to that seq, then its own. NULL for a session with a log of its own.
ALTER TABLE sessions ADD COLUMN base_session_id TEXT;
ALTER TABLE sessions ADD COLUMN base_seq INTEGER;

-- The bytes of the session's own events, kept by every append: a tenant's stored bytes are the
-- sum over its sessions.
ALTER TABLE sessions ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET bytes = (
    SELECT COALESCE(SUM(LENGTH(CAST(body AS BLOB))), 0) FROM events e
    WHERE e.session_id = sessions.session_id
);
