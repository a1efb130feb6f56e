-- API keys: a key is shown once when made; only its SHA-256 is kept. A key acts for its tenant,
-- or for every tenant when `admin`. Revoked keys stay listed.
CREATE TABLE api_keys (
    key_id     TEXT PRIMARY KEY,
    hash       TEXT NOT NULL UNIQUE,
    tenant     TEXT NOT NULL,
    admin      INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
) WITHOUT ROWID;

-- The tenant whose key created the session (a child: its parent's); NULL when the gateway had no
-- keys then, and only an admin key reaches it once it has.
ALTER TABLE sessions ADD COLUMN tenant TEXT;
CREATE INDEX sessions_by_tenant ON sessions (tenant, session_id) WHERE tenant IS NOT NULL;
