-- Sessions: one row per session; its config is the JSON the core is created with.
CREATE TABLE sessions (
    session_id        TEXT PRIMARY KEY,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    spec              TEXT NOT NULL,
    disposed          INTEGER NOT NULL DEFAULT 0,
    parent_session_id TEXT
) WITHOUT ROWID;

-- The session log: append-only and gap-free; an append states the seq it expects.
CREATE TABLE events (
    session_id TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    type       TEXT NOT NULL,
    time       INTEGER NOT NULL,
    body       TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;

-- Idempotency keys of accepted messages, kept 24 hours.
CREATE TABLE idempotency (
    key          TEXT PRIMARY KEY,
    session_id   TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    response     TEXT NOT NULL,
    created_at   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX idempotency_created_at ON idempotency (created_at);
