//! What obeying a command takes, alone or in a group commit: the idempotency check, telling an
//! owned interval where it began, and letting the goal act after an input.

use airlock_core::Input;

use super::{Admission, IDEMPOTENCY_TTL_MS};
use crate::session::{Fed, IdempotencyKey, Session, SessionError};
use airlock_base::clock::now_ms;
use airlock_store::Store;

/// The message a send carries.
pub(super) fn message_of(input: &Input) -> Option<String> {
    match input {
        Input::Send { message, .. } => Some(message.id.clone()),
        _ => None,
    }
}

/// An owner's send that opened an interval: the idle commit that ends it reports its run.
pub(super) fn own(
    session: &mut Session,
    message_id: Option<String>,
    outcome: &Result<Admission, SessionError>,
) {
    if let (Some(id), Ok(Admission::Fed(Fed { refusal: None, first_seq: Some(seq) }))) =
        (message_id, outcome)
    {
        session.own(id, *seq);
    }
}

/// Whether an input was fed and wrote its first event (an owned interval starts there).
pub(super) fn admitted(outcome: &Result<Admission, SessionError>) -> bool {
    matches!(outcome, Ok(Admission::Fed(Fed { refusal: None, first_seq: Some(_) })))
}

/// Lets the goal act after an input: owners have been settled, so a round starts a new interval.
/// An agent still idle then may keep a snapshot.
pub(super) async fn drive_goal(session: &mut Session) {
    if let Err(error) = session.drive_goal().await {
        tracing::error!(session_id = session.id(), %error, "goal round failed");
    }
    session.snapshot_if_due().await;
}

/// The answer for a key seen before: its first answer for the same request, a conflict for
/// another; `None` for a key not seen (or no key).
pub(super) async fn replay(
    session_id: &str,
    store: Option<&Store>,
    key: Option<&IdempotencyKey>,
) -> Result<Option<Admission>, SessionError> {
    let (Some(key), Some(store)) = (key, store) else { return Ok(None) };
    let Some(record) = store.idempotency(&key.key, now_ms(), IDEMPOTENCY_TTL_MS).await? else {
        return Ok(None);
    };
    let same = record.session_id == session_id && record.request_hash == key.request_hash;
    Ok(Some(if same { Admission::Replayed(record.response) } else { Admission::KeyConflict }))
}
