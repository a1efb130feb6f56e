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
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::actor::{IntervalEnd, SessionHandle};
use crate::session::{Refusal, SessionError};
use crate::store::{Store, StoreError};

/// Why an owned run could not be started or collected.
#[derive(Debug, thiserror::Error)]
pub enum OwnError {
    /// The session did not take the input.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The core refused the input.
    #[error("the session refused the message ({}): {}", .0.code, .0.message)]
    Refused(Refusal),
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
    end: IntervalEnd,
}

/// Submits a message as the owner of the interval it starts; answers once it is durable.
pub async fn submit(
    handle: &SessionHandle,
    message: Message,
    delivery: Delivery,
) -> Result<OwnedRun, OwnError> {
    let message_id = message.id.clone();
    let (fed, end) = handle.feed_owned(delivery.send(message)).await?;
    let first_seq = match (fed.refusal, fed.first_seq) {
        (None, Some(seq)) => seq,
        (refusal, _) => {
            return Err(OwnError::Refused(refusal.unwrap_or_else(|| Refusal {
                code: "not-admitted".into(),
                message: "the message wrote nothing to the log".into(),
            })));
        }
    };
    Ok(OwnedRun { session_id: handle.id().to_owned(), message_id, first_seq, end })
}

impl OwnedRun {
    /// Waits for the next whole-agent idle; answers the interval's last seq. Cancel-safe: a
    /// timed-out wait can be resumed.
    pub async fn last_seq(&mut self) -> Result<u64, OwnError> {
        (&mut self.end).await.map_err(|_| OwnError::Session(SessionError::Gone))
    }

    /// The result of the interval `first_seq..=last_seq`, read from the log.
    pub async fn result(&self, store: &Store, last_seq: u64) -> Result<RunResult, OwnError> {
        let count = (last_seq + 1).saturating_sub(self.first_seq) as usize;
        let events = store.events(&self.session_id, self.first_seq.checked_sub(1), count).await?;
        Ok(RunResult::of(&self.session_id, &self.message_id, self.first_seq, last_seq, events))
    }
}

/// `RunResult`: what an owned interval produced.
#[derive(Debug, Serialize, ToSchema)]
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
    #[schema(schema_with = crate::schema::events_schema)]
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Text of the last committed `assistant/message` (`""` if none, or if it was empty).
    pub final_response: String,
    /// The last `turn/end`'s reason kind (`completed`, `max-tokens`, `error`, ...; `null` if no
    /// turn ended).
    #[schema(schema_with = crate::schema::finish_reason_schema)]
    pub finish_reason: Option<&'static str>,
    /// Token usage summed over the assistant messages that carried it: `{inputTokens,
    /// outputTokens, cacheReadTokens?, reasoningTokens?}`; absent when the provider sent none.
    #[schema(schema_with = crate::schema::usage_schema)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The last `turn/end`'s full reason.
    #[serde(skip)]
    pub finish: Option<TurnEndReason>,
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
            Ok(Some(Event { data: EventData::TurnEnd(end), .. })) => {
                summary.finish_reason = Some(end.reason.kind());
                summary.finish = Some(end.reason);
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
    total.reasoning_tokens = add(total.reasoning_tokens, usage.reasoning_tokens);
}
