-- What each model response cost: see the SQLite migration 0005_usage.sql.
CREATE TABLE usage (
    session_id  TEXT COLLATE "C" NOT NULL,
    seq         BIGINT NOT NULL,
    time        BIGINT NOT NULL,
    provider    TEXT NOT NULL,
    model       TEXT NOT NULL,
    input       BIGINT NOT NULL,
    output      BIGINT NOT NULL,
    cache_read  BIGINT NOT NULL,
    cache_write BIGINT NOT NULL,
    reasoning   BIGINT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX usage_by_time ON usage (time);

INSERT INTO usage
SELECT e.session_id, e.seq, e.time,
    COALESCE(c.body::jsonb #>> '{data,provider}', ''),
    COALESCE(c.body::jsonb #>> '{data,model}', ''),
    COALESCE((e.body::jsonb #>> '{data,usage,inputTokens}')::bigint, 0),
    COALESCE((e.body::jsonb #>> '{data,usage,outputTokens}')::bigint, 0),
    COALESCE((e.body::jsonb #>> '{data,usage,cacheReadTokens}')::bigint, 0),
    COALESCE((e.body::jsonb #>> '{data,usage,cacheWriteTokens}')::bigint, 0),
    COALESCE((e.body::jsonb #>> '{data,usage,reasoningTokens}')::bigint, 0)
FROM events e
LEFT JOIN LATERAL (
    SELECT body FROM events x
    WHERE x.session_id = e.session_id AND x.type = 'request/context' AND x.seq < e.seq
    ORDER BY x.seq DESC LIMIT 1
) c ON true
WHERE e.type IN ('assistant/message', 'context/compaction')
    AND e.body::jsonb #> '{data,usage}' IS NOT NULL;
