-- As SQLite's migration 0004: the browser's sign-ins, forks that share their source's log, and
-- the bytes each session's own events take.
CREATE TABLE logins (
    token_hash TEXT PRIMARY KEY,
    key_id     TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX logins_by_key ON logins (key_id);

ALTER TABLE sessions ADD COLUMN base_session_id TEXT COLLATE "C";
ALTER TABLE sessions ADD COLUMN base_seq BIGINT;

ALTER TABLE sessions ADD COLUMN bytes BIGINT NOT NULL DEFAULT 0;
UPDATE sessions SET bytes = (
    SELECT COALESCE(SUM(OCTET_LENGTH(body)), 0) FROM events e WHERE e.session_id = sessions.session_id
);
