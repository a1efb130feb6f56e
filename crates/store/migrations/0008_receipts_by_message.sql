-- Receipts keyed by their message first. Message ids are UUID v7, ordered by time, so the new
-- receipts of every session land in the table's last leaf: a commit of sends into many sessions
-- writes one page of receipts, where keyed by session first it wrote one page per session.
-- A receipt is still found by (session, message), the whole key.
CREATE TABLE receipts_by_message (
    message_id   TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    state        TEXT NOT NULL,
    target       TEXT NOT NULL,
    inserted_seq INTEGER NOT NULL,
    claimed_seq  INTEGER,
    turn         INTEGER,
    canceled_seq INTEGER,
    PRIMARY KEY (message_id, session_id)
) WITHOUT ROWID;
INSERT INTO receipts_by_message
    SELECT message_id, session_id, state, target, inserted_seq, claimed_seq, turn, canceled_seq
    FROM receipts;
DROP TABLE receipts;
ALTER TABLE receipts_by_message RENAME TO receipts;
