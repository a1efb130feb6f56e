//! The result of an owned interval: what an owner (the one-shot CLI, an owned run) may report.
//!
//! It describes the interval, never a particular message: the final response is the last committed
//! assistant message in it, the finish reason the last `turn/end`'s.

use airlock_core::{ContentBlock, Event, EventData, TurnEndReason};

/// What an owned interval produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunSummary {
    /// Text of the last committed `assistant/message` (`""` if none, or if it was empty).
    pub final_response: String,
    /// The last `turn/end`'s reason (`None` if no turn ended).
    pub finish: Option<TurnEndReason>,
}

/// Summarizes the events of an interval (event JSON, in seq order). Unreadable events are skipped:
/// the log's own readers report them.
pub fn summarize<S: AsRef<str>>(events: &[S]) -> RunSummary {
    let mut summary = RunSummary::default();
    for json in events {
        let Ok(Some(event)) = Event::parse(json.as_ref()) else { continue };
        match event.data {
            EventData::AssistantMessage(assistant) => {
                summary.final_response = assistant
                    .message
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
            }
            EventData::TurnEnd(end) => summary.finish = Some(end.reason),
            _ => {}
        }
    }
    summary
}
