-- Work that starts and reports without a client watching (crates/store/src/hooks.rs).
--
-- A webhook subscription: a tenant's (or, with `every_tenant`, an admin's or the operator's, for
-- every tenant's sessions), for the event types `events` lists (each between spaces, so one is
-- found with instr), of one session or of all. The secret signs its deliveries (Standard
-- Webhooks), so it is kept as given. A subscription that gave up on a delivery is failing from
-- `failing_since` and gets no deliveries until it is resumed.
CREATE TABLE webhooks (
    webhook_id        TEXT PRIMARY KEY,
    tenant            TEXT,
    every_tenant      INTEGER NOT NULL,
    session_id        TEXT,
    url               TEXT NOT NULL,
    events            TEXT NOT NULL,
    secret            TEXT NOT NULL,
    created_at        INTEGER NOT NULL,
    delivered         INTEGER NOT NULL DEFAULT 0,
    last_delivered_at INTEGER,
    last_error        TEXT,
    last_error_at     INTEGER,
    failing_since     INTEGER,
    dropped           INTEGER NOT NULL DEFAULT 0
);

-- What waits to be delivered: written by the commit that logs the event it reports, so a crash
-- loses none; deleted once the receiver took it. Only the oldest of a subscription's rows for one
-- session is due (in order per session): the others wait behind it with `next_at` at the largest
-- integer, and the next is made due when it goes. `claimed_until` keeps one gateway on it.
CREATE TABLE webhook_deliveries (
    delivery_id   INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id    TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    type          TEXT NOT NULL,
    key           TEXT NOT NULL,
    data          TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    next_at       INTEGER NOT NULL DEFAULT 0,
    claimed_until INTEGER NOT NULL DEFAULT 0,
    claimed_by    TEXT,
    UNIQUE (webhook_id, session_id, seq, type, key)
);
CREATE INDEX webhook_deliveries_order ON webhook_deliveries (webhook_id, session_id, delivery_id);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at);

-- A schedule: at each due time of `cron` in `timezone` its `content` is sent to `session_id`, or
-- to a session made from `spec` (a fresh one each time with `fresh`). `next_at` is the next due
-- time (ms); `claimed_until` keeps one gateway on a due time while it fires it.
CREATE TABLE schedules (
    schedule_id     TEXT PRIMARY KEY,
    tenant          TEXT,
    cron            TEXT NOT NULL,
    timezone        TEXT NOT NULL,
    session_id      TEXT,
    spec            TEXT,
    fresh           INTEGER NOT NULL,
    content         TEXT NOT NULL,
    delivery        TEXT NOT NULL,
    overlap         TEXT NOT NULL,
    catch_up        TEXT NOT NULL,
    paused          INTEGER NOT NULL DEFAULT 0,
    next_at         INTEGER NOT NULL,
    claimed_until   INTEGER NOT NULL DEFAULT 0,
    claimed_by      TEXT,
    created_at      INTEGER NOT NULL,
    fired           INTEGER NOT NULL DEFAULT 0,
    skipped         INTEGER NOT NULL DEFAULT 0,
    last_fired_at   INTEGER,
    last_session_id TEXT,
    last_error      TEXT
);
CREATE INDEX schedules_due ON schedules (next_at) WHERE paused = 0;
