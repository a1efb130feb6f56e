//! The actor's task: it takes commands and the answers of the session's own work in turn,
//! groups what may share a commit, keeps the view current, and wakes for the session's deadlines
//! (a timer, sleep, a retried recovery).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_core::Input;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::group::{Member, feed_group, gather, groupable};
use super::owners::Owners;
use super::steps::{admitted, drive_goal, message_of, own, replay};
use super::{Admission, Command, SLEEP_AFTER, View};
use crate::session::{Fed, IdempotencyKey, Session, SessionError, Work};
use airlock_store::Store;

/// The most task answers (model chunks, tool results) folded into one commit.
const MAX_ANSWERS_PER_COMMIT: usize = 256;

/// The first wait before a session whose commit failed tries its recovery again; it doubles up
/// to [`REPAIR_MOST`] while storage keeps failing.
const REPAIR_FIRST: Duration = Duration::from_millis(100);
const REPAIR_MOST: Duration = Duration::from_secs(5);

pub(super) async fn run(
    mut session: Session,
    store: Option<Store>,
    mut commands: mpsc::Receiver<Box<Command>>,
    view: Arc<Mutex<View>>,
) {
    // Owners waiting for the next whole-agent idle.
    let mut owners = Owners::default();
    // A command taken while gathering a group that could not join it: it goes next.
    let mut held: Option<Command> = None;
    // How long until a session that owes a recovery (a commit failed) tries it again.
    let mut repair_in = REPAIR_FIRST;
    loop {
        if session.fenced() {
            // Another gateway runs the session now; the store tells the registry, which lets go
            // of it. Inputs sent meanwhile are refused as the actor's being gone (retryable).
            tracing::warn!(session_id = session.id(), "this gateway lost the session's lease");
            return;
        }
        if let Some(command) = held.take() {
            held = obey(command, &mut session, store.as_ref(), &mut commands, &mut owners).await;
            *view.lock().expect("view lock") = View::of(&session);
            continue;
        }
        let due = next_deadline(&session, repair_in, Instant::now());
        let timer = async move {
            match due {
                Some((at, duty)) => {
                    tokio::time::sleep_until(at).await;
                    duty
                }
                None => std::future::pending().await,
            }
        };
        // A goal round that waits for one of its tenant's turn slots tries as one is given back.
        let slot_freed = session.round_waits_for_a_turn().then(|| session.admission().turn_freed());
        let slot_freed = async move {
            match slot_freed {
                Some(freed) => freed.await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            duty = timer => match duty {
                Duty::Sleep => {
                    session.sleep().await;
                }
                Duty::Round => {
                    drive_goal(&mut session).await;
                    *view.lock().expect("view lock") = View::of(&session);
                }
                Duty::Repair => {
                    repair_in = match session.repair().await {
                        Ok(()) => REPAIR_FIRST,
                        Err(error) => {
                            tracing::error!(session_id = session.id(), %error, "still cannot recover");
                            (repair_in * 2).min(REPAIR_MOST)
                        }
                    };
                    owners.settle(&mut session);
                    drive_goal(&mut session).await;
                    *view.lock().expect("view lock") = View::of(&session);
                }
            },
            () = slot_freed => {
                drive_goal(&mut session).await;
                *view.lock().expect("view lock") = View::of(&session);
            }
            command = commands.recv() => match command {
                None => break,
                Some(command) => {
                    held = obey(*command, &mut session, store.as_ref(), &mut commands, &mut owners)
                        .await;
                    *view.lock().expect("view lock") = View::of(&session);
                }
            },
            mut answers = session.next_answers() => {
                // Chunks that arrived together are committed together: one fsync, not one each.
                let more = MAX_ANSWERS_PER_COMMIT.saturating_sub(answers.len());
                answers.extend(session.ready_answers(more));
                if let Err(error) = session.feed_all(answers, None).await {
                    tracing::error!(session_id = session.id(), %error, "feeding answers failed");
                }
                owners.settle(&mut session);
                drive_goal(&mut session).await;
                *view.lock().expect("view lock") = View::of(&session);
            }
        }
    }
    // Out of memory (evicted, or the gateway stops): a session at rest leaves a snapshot of
    // where it stands, so it comes back from that alone (`session/load.rs`), not by folding
    // what it logged since the last one.
    session.sleep().await;
}

/// What an actor does at a time of its own, when no input came first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Duty {
    /// Idle long enough: drop the core instance until the next input (`session/sleep.rs`).
    Sleep,
    /// A paced goal round is due.
    Round,
    /// A commit failed: try the recovery again.
    Repair,
}

/// The actor's next timed duty and when it is due: the soonest of sleeping, a paced goal round and
/// a repeated recovery (`None`: it waits for input only).
fn next_deadline(session: &Session, repair_in: Duration, now: Instant) -> Option<(Instant, Duty)> {
    let sleep = session.can_sleep().then(|| (now + SLEEP_AFTER, Duty::Sleep));
    let round = session.round_due().map(|at| (at, Duty::Round));
    let repair = session.owes_recovery().then(|| (now + repair_in, Duty::Repair));
    [sleep, round, repair].into_iter().flatten().min_by_key(|(at, _)| *at)
}

/// Carries out one command. Sends that are already waiting behind it join it in one group
/// commit; answers the first command that could not join.
async fn obey(
    command: Command,
    session: &mut Session,
    store: Option<&Store>,
    commands: &mut mpsc::Receiver<Box<Command>>,
    owners: &mut Owners,
) -> Option<Command> {
    match command {
        Command::Goal { op, reply } => {
            let result = session.change_goal(op).await;
            drive_goal(session).await;
            let _ = reply.send(result.map(|()| session.goal()));
            None
        }
        Command::Budget { budget, reply } => {
            let result = session.set_budget(budget).await;
            drive_goal(session).await;
            let _ = reply.send(result);
            None
        }
        Command::Feed { input: Some(input), key, owner, work, reply }
            if groupable(session, &input) =>
        {
            let mut group = vec![Member { input, key, owner, work, reply }];
            let held = gather(session, commands, &mut group);
            feed_group(session, store, group, owners).await;
            held
        }
        Command::Feed { input, key, owner, work, reply } => {
            let waits_only = input.is_none();
            let message_id = input.as_ref().and_then(message_of);
            let outcome = match input {
                Some(input) => take(session, store, input, key, work).await,
                None => Ok(Admission::Fed(Fed::default())),
            };
            // An owner's interval starts with its input's first event; a refused input starts
            // none (dropping the sender tells the owner). A replayed one is the interval its
            // first request started.
            match (owner, &outcome) {
                (Some(owner), Ok(Admission::Replayed(response))) => {
                    owners.attach(owner, response, session);
                }
                (Some(owner), outcome) if waits_only || admitted(outcome) => {
                    own(session, message_id, outcome);
                    owners.push(owner);
                }
                _ => {}
            }
            owners.settle(session);
            drive_goal(session).await;
            let _ = reply.send(outcome); // a caller that went away: the input is in
            None
        }
    }
}

/// Checks the idempotency key (inside the actor, so two requests with one key cannot race), then
/// feeds the input.
async fn take(
    session: &mut Session,
    store: Option<&Store>,
    input: Input,
    key: Option<IdempotencyKey>,
    work: Work,
) -> Result<Admission, SessionError> {
    if let Some(admission) = replay(session.id(), store, key.as_ref()).await? {
        return Ok(admission);
    }
    Ok(Admission::Fed(session.feed_keyed(input, key, work).await?))
}
