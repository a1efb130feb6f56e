//! Sessions other protocols name: AG-UI's threads and A2A's contexts. Such a session is made on
//! first use, in the caller's tenant, with the gateway's default model; another tenant's is not
//! found, as on `/v1`.

#![allow(
    clippy::result_large_err,
    reason = "ApiError is the crate's one error shape, answered by value as every handler's is"
)]

use airlock_sessions::{RegistryError, SessionHandle, SessionSpec};
use airlock_store::SessionRow;

use super::{ApiError, AppState, Caller};

/// The session `id`, made on first use with `spec`'s client tools and the default model.
pub(super) async fn open_or_make(
    state: &AppState,
    caller: &Caller,
    id: &str,
    spec: SessionSpec,
) -> Result<(SessionHandle, SessionRow), ApiError> {
    let (row, _) = make(state, caller, id, spec).await?;
    Ok((state.sessions.open(id).await?, row))
}

/// The session `id`'s row, made now with `spec` and the default model unless it exists; and
/// whether it was made now.
pub(super) async fn make(
    state: &AppState,
    caller: &Caller,
    id: &str,
    spec: SessionSpec,
) -> Result<(SessionRow, bool), ApiError> {
    let (row, made) = match state.sessions.row(id).await {
        Ok(row) => (row, false),
        Err(RegistryError::NotFound(_)) => {
            state.sessions.turn_room(caller.tenant())?;
            let spec = SessionSpec { model: state.sessions.default_model().to_owned(), ..spec };
            state.sessions.create(id.to_owned(), spec, caller.owner()).await?
        }
        Err(error) => return Err(error.into()),
    };
    // Another tenant's, made before or meanwhile.
    Ok((reached(caller, row)?, made))
}

/// The stored session `id`, when the caller reaches it.
pub(super) async fn stored(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> Result<SessionRow, ApiError> {
    reached(caller, state.sessions.row(id).await?)
}

/// `row`, unless it is another tenant's than the caller's (then not found, as on `/v1`).
fn reached(caller: &Caller, row: SessionRow) -> Result<SessionRow, ApiError> {
    match caller.only() {
        Some(only) if row.tenant.as_deref() != Some(only) => {
            Err(ApiError::session_not_found(&row.session_id))
        }
        _ => Ok(row),
    }
}
