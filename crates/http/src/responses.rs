//! The error answers many routes share, written once for the OpenAPI document: each type here
//! stands for a set of responses in a route's `#[utoipa::path(responses(...))]`.

use std::collections::BTreeMap;

use utoipa::IntoResponses;
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};

/// Error responses (status, description), each with the shared error body.
pub(super) fn errors(answers: &[(&str, &str)]) -> BTreeMap<String, RefOr<Response>> {
    answers
        .iter()
        .map(|(status, description)| {
            let body =
                ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build();
            let response =
                ResponseBuilder::new().description(*description).content("application/json", body);
            (status.to_string(), RefOr::T(response.build()))
        })
        .collect()
}

/// The log could not be read: 503 `storage-unavailable`.
pub struct StorageFailed;

impl IntoResponses for StorageFailed {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[("503", STORAGE)])
    }
}

/// An input to a session failed: 503 `storage-unavailable` (nothing was acknowledged; retry
/// after `Retry-After`) or 500 `core-failed` (the core trapped; the session was rebuilt from its
/// log and the input was not applied).
pub struct SessionFailed;

impl IntoResponses for SessionFailed {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[("503", STORAGE), ("500", CORE)])
    }
}

/// A JSON body was refused: 400, 413 or 415.
pub struct BodyRefused;

impl IntoResponses for BodyRefused {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[
            ("400", "`bad-request`: details name the field"),
            ("413", "`payload-too-large`"),
            ("415", "`unsupported-media-type`: a body that is not JSON"),
        ])
    }
}

/// No session has the id: 404 `session-not-found`.
pub struct NoSession;

impl IntoResponses for NoSession {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[("404", "`session-not-found`")])
    }
}

/// No session has the id, or it has no goal: 404 `session-not-found` or `goal-not-found`.
pub struct NoGoal;

impl IntoResponses for NoGoal {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[("404", "`session-not-found`, `goal-not-found`")])
    }
}

/// The session was disposed: 409 `session-disposed`.
pub struct Disposed;

impl IntoResponses for Disposed {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[(
            "409",
            "`session-disposed`: its log stays readable, it takes no input; or \
             `session-unusable`: this gateway cannot run the stored session (e.g. its model's \
             provider has no key here)",
        )])
    }
}

/// A tenant's quota or rate: 429 `quota-exceeded` or `rate-limited`, with `Retry-After`.
pub struct Limited;

impl IntoResponses for Limited {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[(
            "429",
            "`quota-exceeded` or `rate-limited`: the key's tenant is at its limit; retry after \
             `Retry-After`",
        )])
    }
}

/// An owned run not at idle in the time it was given: 504 `run-timeout`.
pub struct RunTimeout;

impl IntoResponses for RunTimeout {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[(
            "504",
            "`run-timeout`: details give `messageId` and `lastSeq`; the agent keeps working",
        )])
    }
}

const STORAGE: &str = "`storage-unavailable`, or `session-moving` (the session is changing \
    gateways, see docs/deploy.md): retry after `Retry-After`";
const CORE: &str = "`core-failed`: the core trapped; the session was rebuilt from its log and the \
    input was not applied, so send it again";

/// A call that waits for no such answer: 404 `tool-call-not-found` or 409 `not-waiting`.
pub struct NotWaiting;

impl IntoResponses for NotWaiting {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        errors(&[
            ("404", "`session-not-found`, or `tool-call-not-found`: the log has no such call"),
            (
                "409",
                "`not-waiting`: the call has its answer already, or waits for the other kind \
                 (an approval, a client's result); or `session-disposed`",
            ),
        ])
    }
}
