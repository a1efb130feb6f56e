-- The PostgreSQL schema: the same tables as SQLite's migrations 0001 to 0003 leave (see there for
-- what each column means), plus the leases by which gateways sharing the database hold sessions.
-- Session ids sort bytewise (COLLATE "C"), as SQLite sorts them, so pages follow the same order.

CREATE TABLE sessions (
    session_id        TEXT COLLATE "C" PRIMARY KEY,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL,
    spec              TEXT NOT NULL,
    disposed          BOOLEAN NOT NULL DEFAULT false,
    parent_session_id TEXT COLLATE "C",
    needs_recovery    BOOLEAN NOT NULL DEFAULT false,
    goal              TEXT,
    tenant            TEXT
);
CREATE INDEX sessions_needing_recovery ON sessions (session_id)
    WHERE needs_recovery AND NOT disposed;
CREATE INDEX sessions_children ON sessions (parent_session_id)
    WHERE parent_session_id IS NOT NULL;
CREATE INDEX sessions_by_tenant ON sessions (tenant, session_id) WHERE tenant IS NOT NULL;

CREATE TABLE events (
    session_id TEXT COLLATE "C" NOT NULL,
    seq        BIGINT NOT NULL,
    type       TEXT NOT NULL,
    time       BIGINT NOT NULL,
    body       TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE idempotency (
    key          TEXT PRIMARY KEY,
    session_id   TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    response     TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE INDEX idempotency_created_at ON idempotency (created_at);

CREATE TABLE receipts (
    session_id   TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    state        TEXT NOT NULL,
    target       TEXT NOT NULL,
    inserted_seq BIGINT NOT NULL,
    claimed_seq  BIGINT,
    turn         BIGINT,
    canceled_seq BIGINT,
    PRIMARY KEY (session_id, message_id)
);

CREATE TABLE snapshots (
    session_id TEXT PRIMARY KEY,
    next_seq   BIGINT NOT NULL,
    core       TEXT NOT NULL,
    state      TEXT NOT NULL,
    parent     TEXT
);

CREATE TABLE api_keys (
    key_id     TEXT PRIMARY KEY,
    hash       TEXT NOT NULL UNIQUE,
    tenant     TEXT NOT NULL,
    admin      BOOLEAN NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);

-- Which gateway runs a live session. `epoch` grows each time the lease changes hands; every
-- append locks this row and checks it holds the epoch its gateway took, so a gateway whose lease
-- ran out and was taken can never append again. `address` is where the holder takes requests
-- forwarded by the others. The time is the database's own, so gateways' clocks do not matter.
CREATE TABLE leases (
    session_id TEXT COLLATE "C" PRIMARY KEY,
    node       TEXT NOT NULL,
    address    TEXT NOT NULL,
    epoch      BIGINT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX leases_by_node ON leases (node);
