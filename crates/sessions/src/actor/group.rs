//! Group commit: the sends already waiting behind one join it, and all of them are fed and
//! committed together (one fsync), each answered what it alone did.

use airlock_core::Input;
use tokio::sync::{mpsc, oneshot};

use super::steps::{admitted, drive_goal, message_of, own, replay};
use super::{Admission, Command, Owners};
use crate::session::{IdempotencyKey, Session, SessionError, Work};
use airlock_store::Store;

/// The most sends that arrived together fed with one commit.
const MAX_GROUP: usize = 256;

/// A send waiting to be fed with the others that arrived with it.
pub(super) struct Member {
    pub(super) input: Input,
    pub(super) key: Option<IdempotencyKey>,
    pub(super) owner: Option<oneshot::Sender<u64>>,
    pub(super) work: Work,
    pub(super) reply: oneshot::Sender<Result<Admission, SessionError>>,
}

/// Sends join a group; a continuable child's are checked one by one against its status.
pub(super) fn groupable(session: &Session, input: &Input) -> bool {
    matches!(input, Input::Send { .. }) && session.parent().is_none()
}

/// Moves the sends already waiting into `group` (each idempotency key at most once, all new work
/// or all admitted); answers the first command that cannot join.
pub(super) fn gather(
    session: &Session,
    commands: &mut mpsc::Receiver<Box<Command>>,
    group: &mut Vec<Member>,
) -> Option<Command> {
    while group.len() < MAX_GROUP {
        let Ok(command) = commands.try_recv() else { return None };
        match *command {
            Command::Feed { input: Some(input), key, owner, work, reply }
                if groupable(session, &input)
                    && work == group[0].work
                    && key.as_ref().is_none_or(|key| {
                        !group.iter().any(|m| m.key.as_ref().is_some_and(|k| k.key == key.key))
                    }) =>
            {
                group.push(Member { input, key, owner, work, reply });
            }
            other => return Some(other),
        }
    }
    None
}

/// The work of a group: all its members' ([`gather`] keeps it one kind).
fn group_work(group: &[Member]) -> Work {
    group.first().map_or(Work::Admitted, |member| member.work)
}

/// Feeds a group of sends with one commit and answers each of them.
pub(super) async fn feed_group(
    session: &mut Session,
    store: Option<&Store>,
    group: Vec<Member>,
    owners: &mut Owners,
) {
    // A replayed or conflicting key is answered at once; the others are fed.
    let mut fed = Vec::with_capacity(group.len());
    for member in group {
        match replay(session.id(), store, member.key.as_ref()).await {
            Ok(None) => fed.push(member),
            Ok(Some(admission)) => {
                if let (Some(owner), Admission::Replayed(response)) = (member.owner, &admission) {
                    owners.attach(owner, response, session);
                }
                drop(member.reply.send(Ok(admission)));
            }
            Err(error) => drop(member.reply.send(Err(error))),
        }
    }
    let work = group_work(&fed);
    let ids: Vec<Option<String>> = fed.iter().map(|m| message_of(&m.input)).collect();
    let (inputs, answers): (Vec<_>, Vec<_>) =
        fed.into_iter().map(|m| ((m.input, m.key), (m.owner, m.reply))).unzip();
    match session.feed_group(inputs, work).await {
        Ok(outcomes) => {
            for ((fed, (owner, reply)), id) in outcomes.into_iter().zip(answers).zip(ids) {
                let outcome = Ok(Admission::Fed(fed));
                if owner.is_some() {
                    own(session, id, &outcome);
                }
                if let Some(owner) = owner.filter(|_| admitted(&outcome)) {
                    owners.push(owner);
                }
                let _ = reply.send(outcome);
            }
        }
        Err(error) => {
            // None of them was applied: each sender is told so, and may send again.
            for (_, reply) in answers {
                let _ = reply.send(Err(error.shared()));
            }
        }
    }
    owners.settle(session);
    drive_goal(session).await;
}
