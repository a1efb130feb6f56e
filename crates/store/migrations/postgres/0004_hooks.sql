-- Webhook subscriptions, their deliveries and schedules: see the SQLite migration 0006_hooks.sql.
CREATE TABLE webhooks (
    webhook_id        TEXT PRIMARY KEY,
    tenant            TEXT,
    every_tenant      BOOLEAN NOT NULL,
    session_id        TEXT COLLATE "C",
    url               TEXT NOT NULL,
    events            TEXT NOT NULL,
    secret            TEXT NOT NULL,
    created_at        BIGINT NOT NULL,
    delivered         BIGINT NOT NULL DEFAULT 0,
    last_delivered_at BIGINT,
    last_error        TEXT,
    last_error_at     BIGINT,
    failing_since     BIGINT,
    dropped           BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE webhook_deliveries (
    delivery_id   BIGSERIAL PRIMARY KEY,
    webhook_id    TEXT NOT NULL,
    session_id    TEXT COLLATE "C" NOT NULL,
    seq           BIGINT NOT NULL,
    type          TEXT NOT NULL,
    key           TEXT NOT NULL,
    data          TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    attempts      BIGINT NOT NULL DEFAULT 0,
    next_at       BIGINT NOT NULL DEFAULT 0,
    claimed_until BIGINT NOT NULL DEFAULT 0,
    claimed_by    TEXT,
    UNIQUE (webhook_id, session_id, seq, type, key)
);
CREATE INDEX webhook_deliveries_order ON webhook_deliveries (webhook_id, session_id, delivery_id);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at);

CREATE TABLE schedules (
    schedule_id     TEXT PRIMARY KEY,
    tenant          TEXT,
    cron            TEXT NOT NULL,
    timezone        TEXT NOT NULL,
    session_id      TEXT COLLATE "C",
    spec            TEXT,
    fresh           BOOLEAN NOT NULL,
    content         TEXT NOT NULL,
    delivery        TEXT NOT NULL,
    overlap         TEXT NOT NULL,
    catch_up        TEXT NOT NULL,
    paused          BOOLEAN NOT NULL DEFAULT false,
    next_at         BIGINT NOT NULL,
    claimed_until   BIGINT NOT NULL DEFAULT 0,
    claimed_by      TEXT,
    created_at      BIGINT NOT NULL,
    fired           BIGINT NOT NULL DEFAULT 0,
    skipped         BIGINT NOT NULL DEFAULT 0,
    last_fired_at   BIGINT,
    last_session_id TEXT,
    last_error      TEXT
);
CREATE INDEX schedules_due ON schedules (next_at) WHERE NOT paused;
