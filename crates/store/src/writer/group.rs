//! One group's transaction: each job in a savepoint of its own, one commit, then the answers.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};

use super::{Barrier, Job, Reply};
use crate::receipts::{Mark, Receipt};
use crate::{Index, SessionRow, StoreError};

/// What to tell a job's caller once the group is committed.
enum Answer {
    Unit(Reply<()>, Result<(), StoreError>),
    Bool(Reply<bool>, Result<bool, StoreError>),
    /// A flush: answered after the barrier's sync.
    Flush(Reply<()>),
}

pub(super) fn commit_group(
    conn: &mut Connection,
    group: Vec<Job>,
    next_seq: &mut HashMap<String, u64>,
    barrier: &Barrier,
) {
    let tx = match conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => return fail_all(group, &e.to_string()),
    };
    let mut answers = Vec::with_capacity(group.len());
    let mut touched = Vec::new();
    for job in group {
        match job {
            Job::Append { session_id, events, index, reply } => {
                let result =
                    in_savepoint(&tx, |tx| append(tx, &session_id, &events, &index, next_seq));
                match &result {
                    Ok(()) => touched.push(session_id),
                    Err(_) => {
                        next_seq.remove(&session_id);
                    }
                }
                answers.push(Answer::Unit(reply, result));
            }
            Job::InsertSession { row, events, reply } => {
                let result = in_savepoint(&tx, |tx| {
                    let inserted = insert_session(tx, &row)?;
                    if inserted && !events.is_empty() {
                        let index = Index { at_rest: true, ..Index::default() };
                        append(tx, &row.session_id, &events, &index, next_seq)?;
                    }
                    Ok(inserted)
                });
                if result.is_err() {
                    next_seq.remove(&row.session_id);
                } else if !events.is_empty() {
                    touched.push(row.session_id.clone());
                }
                answers.push(Answer::Bool(reply, result));
            }
            Job::Dispose { session_id, now, reply } => {
                let result = in_savepoint(&tx, |tx| {
                    tx.execute(
                        "UPDATE sessions SET disposed = 1, updated_at = ?2 WHERE session_id = ?1",
                        params![session_id, now as i64],
                    )?;
                    Ok(())
                });
                answers.push(Answer::Unit(reply, result));
            }
            Job::AtRest { session_id, reply } => {
                let result = in_savepoint(&tx, |tx| {
                    tx.execute(
                        "UPDATE sessions SET needs_recovery = 0 WHERE session_id = ?1",
                        [session_id],
                    )?;
                    Ok(())
                });
                answers.push(Answer::Unit(reply, result));
            }
            Job::Snapshot { snapshot: p, reply } => {
                let result = in_savepoint(&tx, |tx| {
                    tx.execute(
                        "INSERT OR REPLACE INTO snapshots (session_id, next_seq, core, state, \
                         parent, head) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                        params![p.session_id, p.next_seq as i64, p.core, p.state, p.parent, p.head],
                    )?;
                    Ok(())
                });
                answers.push(Answer::Unit(reply, result));
            }
            Job::Flush { reply } => answers.push(Answer::Flush(reply)),
            Job::Direct(_) => unreachable!("direct work is taken out of the group"),
        }
    }
    if let Err(e) = tx.commit() {
        for session in touched {
            next_seq.remove(&session);
        }
        for answer in answers {
            let failed = || StoreError::Commit(e.to_string());
            match answer {
                Answer::Unit(reply, _) | Answer::Flush(reply) => drop(reply.send(Err(failed()))),
                Answer::Bool(reply, _) => drop(reply.send(Err(failed()))),
            }
        }
        return;
    }
    let mut synced = None;
    for answer in answers {
        // A caller that went away no longer needs its answer; the data is committed all the same.
        match answer {
            Answer::Unit(reply, result) => drop(reply.send(result)),
            Answer::Bool(reply, result) => drop(reply.send(result)),
            Answer::Flush(reply) => {
                // One sync serves every flush of the group.
                let result = synced.get_or_insert_with(|| barrier.sync());
                drop(reply.send(result.clone().map_err(StoreError::Sync)));
            }
        }
    }
}

fn in_savepoint<T>(
    tx: &rusqlite::Transaction<'_>,
    f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    // Cached: parsing these three statements again for every job costs more than running them.
    let run = |sql: &str| tx.prepare_cached(sql).and_then(|mut statement| statement.execute([]));
    run("SAVEPOINT job")?;
    match f(tx) {
        Ok(value) => {
            run("RELEASE job")?;
            Ok(value)
        }
        Err(e) => {
            run("ROLLBACK TO job")?;
            run("RELEASE job")?;
            Err(e)
        }
    }
}

fn append(
    tx: &rusqlite::Transaction<'_>,
    session_id: &str,
    events: &[String],
    index: &Index,
    next_seq: &mut HashMap<String, u64>,
) -> Result<(), StoreError> {
    let expected = match next_seq.get(session_id) {
        Some(&next) => next,
        None => last_seq(tx, session_id)?.map_or(0, |last| last + 1),
    };
    let mut next = expected;
    let mut times = Vec::with_capacity(events.len());
    let mut last_time = None;
    let mut bytes = 0;
    let mut goal = None;
    let mut insert = tx.prepare_cached(
        "INSERT INTO events (session_id, seq, type, time, body) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for body in events {
        let head = crate::head(body)?;
        if head.seq != next {
            return Err(StoreError::SeqMismatch {
                session: session_id.to_owned(),
                expected: next,
                got: head.seq,
            });
        }
        insert.execute(params![session_id, head.seq as i64, head.kind, head.time as i64, body])?;
        last_time = Some(head.time);
        times.push(head.time);
        bytes += body.len() as i64;
        if head.kind == "goal/change" {
            goal = Some(body);
        }
        next += 1;
    }
    for record in &index.idempotency {
        tx.prepare_cached(
            "INSERT OR REPLACE INTO idempotency (key, session_id, request_hash, response, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![record.key, record.session_id, record.request_hash, record.response, record.created_at as i64])?;
    }
    for mark in &index.marks {
        mark_receipt(tx, session_id, mark)?;
    }
    let time_of = |seq: u64| times.get(seq.checked_sub(expected)? as usize).copied();
    crate::usage::write_sqlite(tx, session_id, &index.spent, time_of)?;
    crate::hooks::write_sqlite(tx, session_id, &index.hooks)?;
    if let Some(time) = last_time {
        // The session was last updated when its newest event happened (the core's time).
        tx.prepare_cached(
            "UPDATE sessions SET updated_at = ?2, goal = COALESCE(?3, goal), bytes = bytes + ?4 \
             WHERE session_id = ?1",
        )?
        .execute(params![session_id, time as i64, goal, bytes])?;
        // Apart, and only when it changes: setting the flag, even to what it was, rewrites the
        // session's entry in `sessions_needing_recovery`, one more page in the commit.
        tx.prepare_cached(
            "UPDATE sessions SET needs_recovery = ?2 WHERE session_id = ?1 AND needs_recovery != ?2",
        )?
        .execute(params![session_id, !index.at_rest])?;
    }
    next_seq.insert(session_id.to_owned(), next);
    Ok(())
}

/// The last seq of a session's log (`None`: empty), its fork prefix included.
pub(crate) fn last_seq(conn: &Connection, session_id: &str) -> rusqlite::Result<Option<u64>> {
    let mut own = conn.prepare_cached("SELECT MAX(seq) FROM events WHERE session_id = ?1")?;
    let mut base = conn.prepare_cached("SELECT base_seq FROM sessions WHERE session_id = ?1")?;
    let last: Option<i64> = own.query_row([session_id], |r| r.get(0))?;
    let last = match last {
        Some(last) => Some(last),
        None => base.query_row([session_id], |r| r.get(0)).optional()?.flatten(),
    };
    Ok(last.map(|s| s as u64))
}

/// The receipt of a message, from the index.
pub(crate) fn receipt(
    conn: &Connection,
    session_id: &str,
    message_id: &str,
) -> rusqlite::Result<Option<Receipt>> {
    let mut stmt = conn.prepare_cached(
        "SELECT state, target, inserted_seq, claimed_seq, turn, canceled_seq FROM receipts \
         WHERE session_id = ?1 AND message_id = ?2",
    )?;
    stmt.query_row([session_id, message_id], |r| {
        let (state, target): (String, String) = (r.get(0)?, r.get(1)?);
        Ok(Receipt {
            message_id: message_id.to_owned(),
            state: Receipt::state_named(&state),
            target: serde_json::from_value(serde_json::Value::String(target))
                .unwrap_or(airlock_core::Target::NextTurn),
            inserted_seq: r.get::<_, i64>(2)? as u64,
            claimed_seq: r.get::<_, Option<i64>>(3)?.map(|s| s as u64),
            turn: r.get::<_, Option<u32>>(4)?,
            canceled_seq: r.get::<_, Option<i64>>(5)?.map(|s| s as u64),
        })
    })
    .optional()
}

/// Applies one splice's change to a message's stored receipt.
fn mark_receipt(
    tx: &rusqlite::Transaction<'_>,
    session_id: &str,
    mark: &Mark,
) -> Result<(), StoreError> {
    let Some(r) = Receipt::apply(receipt(tx, session_id, &mark.message_id)?, mark) else {
        return Ok(());
    };
    let target = serde_json::to_value(r.target).expect("targets serialize");
    tx.prepare_cached(
        "INSERT OR REPLACE INTO receipts (session_id, message_id, state, target, inserted_seq, \
         claimed_seq, turn, canceled_seq) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        session_id,
        r.message_id,
        r.state,
        target.as_str(),
        r.inserted_seq as i64,
        r.claimed_seq.map(|s| s as i64),
        r.turn,
        r.canceled_seq.map(|s| s as i64),
    ])?;
    Ok(())
}

fn insert_session(tx: &rusqlite::Transaction<'_>, row: &SessionRow) -> Result<bool, StoreError> {
    // A new session is at rest, and its receipts are indexed from its first splice on.
    let (base, base_seq) = match &row.shares {
        Some((source, at)) => (Some(source.as_str()), Some(*at as i64)),
        None => (None, None),
    };
    let inserted = tx.execute(
        "INSERT OR IGNORE INTO sessions (session_id, created_at, updated_at, spec, disposed, \
         parent_session_id, tenant, needs_recovery, receipts_indexed, base_session_id, base_seq) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, 1, ?8, ?9)",
        params![
            row.session_id,
            row.created_at as i64,
            row.updated_at as i64,
            row.spec.to_string(),
            row.disposed,
            row.parent_session_id,
            row.tenant,
            base,
            base_seq,
        ],
    )?;
    Ok(inserted == 1)
}

pub(super) fn fail_all(group: Vec<Job>, why: &str) {
    for job in group {
        match job {
            Job::Append { reply, .. }
            | Job::AtRest { reply, .. }
            | Job::Snapshot { reply, .. }
            | Job::Dispose { reply, .. }
            | Job::Flush { reply } => drop(reply.send(Err(StoreError::Commit(why.to_owned())))),
            Job::InsertSession { reply, .. } => {
                drop(reply.send(Err(StoreError::Commit(why.to_owned()))))
            }
            Job::Direct(_) => unreachable!("direct work is taken out of the group"),
        }
    }
}
