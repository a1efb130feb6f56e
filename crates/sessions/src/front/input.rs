//! Input through the front door: messages, owned runs, the queue's operations, answers to tool
//! calls and goal changes. Each is durable before it is answered.

use airlock_core::{
    CallAnswer, CancelCause, ContentBlock, Delivery, Event, EventData, Input, Message, Status,
    Target,
};

use super::Sessions;
use crate::actor::{Admission, IDEMPOTENCY_TTL_MS, SessionHandle};
use crate::follow::Follower;
use crate::goal::{Goal, GoalOp};
use crate::owned::{OwnError, OwnedRun, RunResult, submit};
use crate::registry::RegistryError;
use crate::session::{IdempotencyKey, Refusal, RefusalCode, SessionError};
use airlock_base::clock::now_ms;
use airlock_core::WaitingCall;

/// A message the session took.
#[derive(Debug)]
pub enum Sent {
    /// Durable: its insert splice has this seq.
    Accepted {
        /// The seq of its insert splice (its receipt).
        seq: u64,
    },
    /// The idempotency key was seen before with the same request: the first answer (JSON).
    Replayed(String),
}

/// Why an input was not taken.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The session could not be reached, or failed.
    #[error(transparent)]
    Session(#[from] RegistryError),
    /// The core (or a limit) refused it; nothing was written.
    #[error("{}", .refusal.message)]
    Refused {
        /// Why.
        refusal: Refusal,
        /// The parent of a continuable child, which alone may give it work.
        parent: Option<String>,
    },
    /// The idempotency key was used for another request.
    #[error("this Idempotency-Key was used for another request; use a fresh key for a new message")]
    KeyConflict,
    /// The session took the input but wrote nothing.
    #[error("the session did not take the message")]
    WroteNothing,
    /// No queued item has this message id (never queued, claimed by a turn, or canceled).
    #[error("no pending item has message id {0:?}; it may have been claimed or removed already")]
    NotQueued(String),
    /// The item cannot steer now.
    #[error("{0}")]
    SteerUnavailable(&'static str),
    /// The call waits for no such answer (answered already, or waiting for the other kind).
    #[error("{0}")]
    NotWaiting(String),
    /// The log has no tool call with this id.
    #[error(
        "session {session_id:?} has no tool call {call_id:?}; GET …/tool-calls lists the waiting ones"
    )]
    NoSuchCall {
        /// The session.
        session_id: String,
        /// The call asked for.
        call_id: String,
    },
}

impl From<SessionError> for InputError {
    fn from(error: SessionError) -> Self {
        InputError::Session(RegistryError::Session(error))
    }
}

impl Sessions {
    /// Sends a message: answers once its insert splice is durable (or, with an idempotency `key`
    /// seen before for the same request, the first answer). Never a result.
    pub async fn send(
        &self,
        session_id: &str,
        message: Message,
        delivery: Delivery,
        key: Option<IdempotencyKey>,
    ) -> Result<Sent, InputError> {
        let handle = self.open(session_id).await?;
        self.registry.admit_input(&handle).await?;
        match handle.feed_new(delivery.send(message), key).await? {
            Admission::Fed(fed) => match (fed.refusal, fed.first_seq) {
                (None, Some(seq)) => Ok(Sent::Accepted { seq }),
                (Some(refusal), _) => Err(refused(&handle, refusal)),
                (None, None) => Err(InputError::WroteNothing),
            },
            Admission::Replayed(answer) => Ok(Sent::Replayed(answer)),
            Admission::KeyConflict => Err(InputError::KeyConflict),
        }
    }

    /// Sends a message as the owner of the interval it starts, through the next whole-agent
    /// idle; answers once it is durable, with a follower of the interval (subscribed before the
    /// message went in: it misses nothing of it).
    pub async fn run(
        &self,
        handle: &SessionHandle,
        message: Message,
        delivery: Delivery,
        key: Option<IdempotencyKey>,
    ) -> Result<(OwnedRun, Follower), InputError> {
        self.registry.admit_input(handle).await?;
        let follower = self.follow(handle, None);
        let run = submit(handle, message, delivery, key).await.map_err(|error| match error {
            OwnError::Refused(refusal) => refused(handle, refusal),
            OwnError::KeyConflict => InputError::KeyConflict,
            OwnError::Session(error) => error.into(),
            OwnError::Store(error) => RegistryError::Store(error).into(),
        })?;
        let follower = follower.starting_at(run.first_seq);
        Ok((run, follower))
    }

    /// The session an owned run in a new session with this idempotency key made before: `None`
    /// while the key is new; [`InputError::KeyConflict`] when it was used for another request.
    pub async fn keyed_session(
        &self,
        key: &IdempotencyKey,
    ) -> Result<Option<SessionHandle>, InputError> {
        let store = self.registry.store();
        let first = store.idempotency(&key.key, now_ms(), IDEMPOTENCY_TTL_MS).await;
        match first.map_err(RegistryError::from)? {
            None => Ok(None),
            Some(first) if first.request_hash == key.request_hash => {
                Ok(Some(self.open(&first.session_id).await?))
            }
            Some(_) => Err(InputError::KeyConflict),
        }
    }

    /// The result of an owned run whose interval ended at `last_seq`.
    pub async fn result(&self, run: &OwnedRun, last_seq: u64) -> Result<RunResult, OwnError> {
        run.result(self.registry.store(), last_seq).await
    }

    /// The pending items, `next-step` first.
    pub async fn queue(
        &self,
        session_id: &str,
    ) -> Result<Vec<crate::session::QueueItem>, RegistryError> {
        Ok(self.open(session_id).await?.view().queue())
    }

    /// Replaces the content of a queued message; it keeps its id and place.
    pub async fn edit(
        &self,
        session_id: &str,
        message_id: &str,
        content: Vec<ContentBlock>,
    ) -> Result<(), InputError> {
        let handle = self.open(session_id).await?;
        let queue = handle.view().queue();
        let pending = queue.into_iter().find(|item| item.message_id == message_id);
        let pending = pending.ok_or_else(|| InputError::NotQueued(message_id.to_owned()))?;
        let message = Message { content, ..pending.message };
        queue_op(&handle, Input::Replace(message), message_id).await
    }

    /// Cancels a queued message (a canceled splice in the log).
    pub async fn remove(&self, session_id: &str, message_id: &str) -> Result<(), InputError> {
        let handle = self.open(session_id).await?;
        queue_op(&handle, Input::Remove(message_id.to_owned()), message_id).await
    }

    /// Turns a queued followup into steering for the running turn.
    pub async fn steer(&self, session_id: &str, message_id: &str) -> Result<(), InputError> {
        let handle = self.open(session_id).await?;
        let view = handle.view();
        let queue = view.queue();
        let item = queue.iter().find(|item| item.message_id == message_id);
        let item = item.ok_or_else(|| InputError::NotQueued(message_id.to_owned()))?;
        if item.target == Target::NextStep {
            return Err(InputError::SteerUnavailable("the item is already steering or context"));
        }
        if view.status == Status::Idle {
            return Err(InputError::SteerUnavailable(
                "the agent is idle: there is no running turn to steer; the item runs as a followup on the next waking send",
            ));
        }
        queue_op(&handle, Input::Promote(message_id.to_owned()), message_id).await
    }

    /// Cancels the running turn (a no-op on an idle agent); the queue is kept, parked, unless
    /// `keep_inbox` is false.
    pub async fn cancel(&self, session_id: &str, keep_inbox: bool) -> Result<(), RegistryError> {
        let handle = self.open(session_id).await?;
        handle.feed(Input::Cancel { cause: CancelCause::User, keep_inbox }, None).await?;
        Ok(())
    }

    /// Summarizes an idle session's conversation now; refused (`session-running`, `compacting`,
    /// `nothing-to-compact`) when it cannot.
    pub async fn compact(&self, session_id: &str) -> Result<(), InputError> {
        let handle = self.open(session_id).await?;
        feed(&handle, Input::Compact).await
    }

    /// The calls of the running step that wait for a person or the client. A session at rest is
    /// not woken (nothing waits); one whose turn was left open by a stop is, since its calls may
    /// wait again.
    pub async fn waiting(&self, session_id: &str) -> Result<Vec<WaitingCall>, RegistryError> {
        if let Ok(handle) = self.registry.get(session_id) {
            return Ok(handle.view().waiting());
        }
        match self.row(session_id).await? {
            row if row.needs_recovery => Ok(self.open(session_id).await?.view().waiting()),
            _ => Ok(Vec::new()),
        }
    }

    /// Answers a call that waits: approve or deny it, or give a client tool's result.
    pub async fn answer(
        &self,
        session_id: &str,
        call_id: &str,
        answer: CallAnswer,
    ) -> Result<(), InputError> {
        let handle = self.open(session_id).await?;
        let input = Input::Answer { call_id: call_id.to_owned(), answer };
        let Err(InputError::Refused { refusal, .. }) = feed(&handle, input).await else {
            return Ok(());
        };
        if refusal.code == RefusalCode::Core(airlock_core::RefusalCode::NotWaiting) {
            return Err(InputError::NotWaiting(refusal.message));
        }
        if self.called(session_id, call_id).await? {
            return Err(InputError::NotWaiting(format!(
                "call {call_id:?} waits for no answer: it has its result already"
            )));
        }
        Err(InputError::NoSuchCall {
            session_id: session_id.to_owned(),
            call_id: call_id.to_owned(),
        })
    }

    /// Every message ever sent to the session, with the seq of its receipt: each one its inbox
    /// took, claimed, pending or removed since.
    pub async fn inserted(&self, session_id: &str) -> Result<Vec<(u64, Message)>, RegistryError> {
        let splices =
            self.registry.store().events_of_type(session_id, "agent/inbox/spliced").await?;
        let mut messages = Vec::new();
        for json in splices {
            if let Ok(Some(Event { seq, data: EventData::InboxSpliced(splice), .. })) =
                Event::parse(&json)
            {
                messages.extend(splice.inserted.into_iter().map(|message| (seq, message)));
            }
        }
        Ok(messages)
    }

    /// Whether the session's log has a `tool/call` with this id.
    async fn called(&self, session_id: &str, call_id: &str) -> Result<bool, RegistryError> {
        let calls = self.registry.store().events_of_type(session_id, "tool/call").await?;
        let needle =
            format!("\"callId\":{}", serde_json::to_string(call_id).expect("strings serialize"));
        Ok(calls.iter().any(|event| event.contains(&needle)))
    }

    /// The session's goal, and whether it is armed in this process.
    pub async fn goal(&self, session_id: &str) -> Result<Option<(Goal, bool)>, RegistryError> {
        Ok(self.open(session_id).await?.view().goal)
    }

    /// Changes the goal with a durable `goal/change` event; answers the goal after it (none once
    /// cleared).
    pub async fn change_goal(
        &self,
        session_id: &str,
        op: GoalOp,
    ) -> Result<Option<(Goal, bool)>, RegistryError> {
        Ok(self.open(session_id).await?.change_goal(op).await?)
    }
}

/// The refusal of an input to `handle`'s session, with the parent that alone may give work to
/// a continuable child.
fn refused(handle: &SessionHandle, refusal: Refusal) -> InputError {
    InputError::Refused { refusal, parent: handle.view().parent }
}

/// Feeds an input with no key: taken, or refused.
async fn feed(handle: &SessionHandle, input: Input) -> Result<(), InputError> {
    match handle.feed(input, None).await? {
        Admission::Fed(fed) => match fed.refusal {
            None => Ok(()),
            Some(refusal) => Err(refused(handle, refusal)),
        },
        Admission::Replayed(_) | Admission::KeyConflict => unreachable!("fed without a key"),
    }
}

/// Feeds a queue operation; a refusal means the core no longer has the item.
async fn queue_op(
    handle: &SessionHandle,
    input: Input,
    message_id: &str,
) -> Result<(), InputError> {
    match feed(handle, input).await {
        Err(InputError::Refused { .. }) => Err(InputError::NotQueued(message_id.to_owned())),
        done => done,
    }
}
