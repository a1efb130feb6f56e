//! Owned intervals: the only places a result may be reported.
//!
//! Sending a message is enqueue-only; nothing ever reports "the result of message X". An owner
//! instead submits its input with [`submit`] and owns the interval from that input's insert
//! splice (its receipt) through the next whole-agent idle, whatever else happened in between:
//! steering, later followups, turns already running. [`RunResult`] describes that interval: the
//! last committed assistant message in it and the last `turn/end`'s reason. Owned HTTP runs, the
//! one-shot CLI and the ACP bridge are all built on it.

use airlock_core::{Delivery, Event, EventData, Message, TurnEndReason, Usage, text_of};
use serde::Serialize;
use serde_json::json;
use serde_json::value::RawValue;

use crate::actor::{Admission, IntervalEnd, SessionHandle};
use crate::session::{IdempotencyKey, Refusal, RefusalCode, SessionError};
use airlock_store::{Store, StoreError};

/// Why an owned run could not be started or collected.
#[derive(Debug, thiserror::Error)]
pub enum OwnError {
    /// The session did not take the input.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The core (or a limit) refused the input.
    #[error("the session refused the message ({}): {}", .0.code.as_str(), .0.message)]
    Refused(Refusal),
    /// The idempotency key was used for another request.
    #[error("this Idempotency-Key was used for another request; use a fresh key for a new run")]
    KeyConflict,
    /// Reading the interval's events failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A submitted input whose interval is owned by the caller.
pub struct OwnedRun {
    /// The session.
    pub session_id: String,
    /// The submitted message.
    pub message_id: String,
    /// The seq of its insert splice: the interval's first event.
    pub first_seq: u64,
    end: End,
    /// A keyed run: its scoped idempotency key, under which its end is kept once known.
    key: Option<String>,
    handle: SessionHandle,
}

/// Where an owned interval ends.
enum End {
    /// Told by the session's actor at its next whole-agent idle.
    Waiting(IntervalEnd),
    /// Known already: a retried run whose first request kept it.
    Known(u64),
}

/// Submits a message as the owner of the interval it starts; answers once it is durable. With
/// an idempotency `key` seen before for the same request, the run is the first one's: same
/// message, same interval, nothing fed again.
pub async fn submit(
    handle: &SessionHandle,
    message: Message,
    delivery: Delivery,
    key: Option<IdempotencyKey>,
) -> Result<OwnedRun, OwnError> {
    let message_id = message.id.clone();
    let scoped = key.as_ref().map(|key| key.key.clone());
    let (admission, end) = handle.feed_owned(delivery.send(message), key).await?;
    let run = |message_id, first_seq, end| OwnedRun {
        session_id: handle.id().to_owned(),
        message_id,
        first_seq,
        end,
        key: scoped.clone(),
        handle: handle.clone(),
    };
    let fed = match admission {
        Admission::Fed(fed) => fed,
        Admission::Replayed(response) => {
            #[derive(serde::Deserialize)]
            #[serde(rename_all = "camelCase")]
            struct First {
                message_id: String,
                seq: u64,
                last_seq: Option<u64>,
            }
            let first: First = serde_json::from_str(&response).map_err(|e| {
                OwnError::Store(StoreError::NotAnEvent(format!("a stored run's answer: {e}")))
            })?;
            let end = first.last_seq.map_or(End::Waiting(end), End::Known);
            return Ok(run(first.message_id, first.seq, end));
        }
        Admission::KeyConflict => return Err(OwnError::KeyConflict),
    };
    let first_seq = match (fed.refusal, fed.first_seq) {
        (None, Some(seq)) => seq,
        (refusal, _) => {
            return Err(OwnError::Refused(refusal.unwrap_or_else(|| {
                Refusal::new(RefusalCode::NotAdmitted, "the message wrote nothing to the log")
            })));
        }
    };
    Ok(run(message_id, first_seq, End::Waiting(end)))
}

impl OwnedRun {
    /// Waits for the next whole-agent idle; answers the interval's last seq. Cancel-safe: a
    /// timed-out wait can be resumed. A keyed run keeps its end with its idempotency record, so
    /// a retry answers the same interval even from another process.
    pub async fn last_seq(&mut self) -> Result<u64, OwnError> {
        let last = match &mut self.end {
            End::Known(last) => return Ok(*last),
            End::Waiting(end) => match end.await {
                Ok(last) => last,
                // A retry of a run whose interval ended before this process kept ends (a restart
                // in between, long ago): it ended at or before the next idle.
                Err(_) if self.key.is_some() => self.handle.idle().await?,
                Err(_) => return Err(OwnError::Session(SessionError::Gone)),
            },
        };
        self.end = End::Known(last);
        Ok(last)
    }

    /// The result of the interval `first_seq..=last_seq`, read from the log. A keyed run's end is
    /// kept with its idempotency record, so that a retry answers the same interval even from
    /// another process.
    pub async fn result(&self, store: &Store, last_seq: u64) -> Result<RunResult, OwnError> {
        if let Some(key) = &self.key {
            let answer =
                json!({"messageId": self.message_id, "seq": self.first_seq, "lastSeq": last_seq});
            store.set_idempotency_answer(key, answer.to_string()).await?;
        }
        let count = (last_seq + 1).saturating_sub(self.first_seq) as usize;
        let events = store.events(&self.session_id, self.first_seq.checked_sub(1), count).await?;
        Ok(RunResult::of(&self.session_id, &self.message_id, self.first_seq, last_seq, events))
    }
}

/// `RunResult`: what an owned interval produced.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// The session.
    pub session_id: String,
    /// The message that opened the interval.
    pub message_id: String,
    /// What the interval's events add up to.
    #[serde(flatten)]
    pub summary: Summary,
    /// The interval's first seq: the message's insert splice.
    pub first_seq: u64,
    /// The interval's last seq: the last event before whole-agent idle.
    pub last_seq: u64,
    /// Every log event `firstSeq..=lastSeq`, whatever input caused it.
    pub events: Vec<Box<RawValue>>,
}

impl RunResult {
    /// The result of an interval, from its events (JSON envelopes in seq order).
    pub fn of(
        session_id: &str,
        message_id: &str,
        first_seq: u64,
        last_seq: u64,
        events: Vec<String>,
    ) -> RunResult {
        RunResult {
            session_id: session_id.to_owned(),
            message_id: message_id.to_owned(),
            summary: summarize(&events),
            first_seq,
            last_seq,
            events: events.into_iter().filter_map(|e| RawValue::from_string(e).ok()).collect(),
        }
    }
}

/// What the events of an interval add up to; it describes the interval, never one message.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Text of the last committed `assistant/message` (`""` if none, or if it was empty).
    pub final_response: String,
    /// The last `turn/end`'s reason kind (`completed`, `max-tokens`, `error`, ...; `null` if no
    /// turn ended).
    pub finish_reason: Option<&'static str>,
    /// Token usage summed over the assistant messages and compaction summaries that carried it:
    /// `{inputTokens, outputTokens, cacheReadTokens?, cacheWriteTokens?, reasoningTokens?}`;
    /// absent when the provider sent none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The last `turn/end`'s full reason.
    #[serde(skip)]
    pub finish: Option<TurnEndReason>,
    /// Why the interval paused, when its last turn ended `paused`: the `budget/exhausted` data
    /// (`{scope, budget, spent}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused: Option<serde_json::Value>,
}

/// Summarizes the events of an interval (JSON envelopes, in seq order). Unreadable events are
/// skipped: the log's own readers report them.
pub fn summarize<S: AsRef<str>>(events: &[S]) -> Summary {
    let mut summary = Summary::default();
    for json in events {
        match Event::parse(json.as_ref()) {
            Ok(Some(Event { data: EventData::AssistantMessage(assistant), .. })) => {
                summary.final_response = text_of(&assistant.message.content);
                if let Some(usage) = &assistant.usage {
                    add_usage(summary.usage.get_or_insert_default(), usage);
                }
            }
            Ok(Some(Event { data: EventData::ContextCompaction(compaction), .. })) => {
                if let Some(usage) = &compaction.usage {
                    add_usage(summary.usage.get_or_insert_default(), usage);
                }
            }
            Ok(Some(Event { data: EventData::TurnEnd(end), .. })) => {
                if end.reason != TurnEndReason::Paused {
                    summary.paused = None; // a later turn went on
                }
                summary.finish_reason = Some(end.reason.kind());
                summary.finish = Some(end.reason);
            }
            Ok(Some(Event { data: EventData::BudgetExhausted(why), .. })) => {
                summary.paused = serde_json::from_str(why.get()).ok();
            }
            _ => {}
        }
    }
    summary
}

fn add_usage(total: &mut Usage, usage: &Usage) {
    let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    total.input_tokens += usage.input_tokens;
    total.output_tokens += usage.output_tokens;
    total.cache_read_tokens = add(total.cache_read_tokens, usage.cache_read_tokens);
    total.cache_write_tokens = add(total.cache_write_tokens, usage.cache_write_tokens);
    total.reasoning_tokens = add(total.reasoning_tokens, usage.reasoning_tokens);
}
