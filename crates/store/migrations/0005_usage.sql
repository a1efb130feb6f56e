-- What each model response cost, one row per event that carries a `usage` (an
-- `assistant/message`, or the summary request of a `context/compaction`), written in the same
-- transaction as the event, with the provider and model that answered and the event's time. A
-- session's usage and a tenant's since a time are sums over it. A fork's rows are its own events'
-- only: what its source spent is the source's.
CREATE TABLE usage (
    session_id  TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    time        INTEGER NOT NULL,
    provider    TEXT NOT NULL,
    model       TEXT NOT NULL,
    input       INTEGER NOT NULL,
    output      INTEGER NOT NULL,
    cache_read  INTEGER NOT NULL,
    cache_write INTEGER NOT NULL,
    reasoning   INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE INDEX usage_by_time ON usage (time);

-- The events logged before this table, each credited to the model its session's last
-- `request/context` before it names.
INSERT INTO usage
SELECT session_id, seq, time, provider, model, input, output, cache_read, cache_write, reasoning
FROM (
    SELECT e.session_id, e.seq, e.time,
        COALESCE(json_extract(c.body, '$.data.provider'), '') AS provider,
        COALESCE(json_extract(c.body, '$.data.model'), '') AS model,
        COALESCE(json_extract(e.body, '$.data.usage.inputTokens'), 0) AS input,
        COALESCE(json_extract(e.body, '$.data.usage.outputTokens'), 0) AS output,
        COALESCE(json_extract(e.body, '$.data.usage.cacheReadTokens'), 0) AS cache_read,
        COALESCE(json_extract(e.body, '$.data.usage.cacheWriteTokens'), 0) AS cache_write,
        COALESCE(json_extract(e.body, '$.data.usage.reasoningTokens'), 0) AS reasoning
    FROM events e
    LEFT JOIN events c ON c.session_id = e.session_id AND c.seq = (
        SELECT MAX(seq) FROM events x
        WHERE x.session_id = e.session_id AND x.type = 'request/context' AND x.seq < e.seq
    )
    WHERE e.type IN ('assistant/message', 'context/compaction')
        AND json_extract(e.body, '$.data.usage') IS NOT NULL
);
