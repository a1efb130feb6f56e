//! Receipts: the admission facts of one message, read from the log (never a result).

use airlock_core::{Event, EventData, Inbox, SpliceOutcome, Target};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa::openapi::schema::Object;

use crate::schema::{string_enum, target_schema};

/// `{messageId, state, target, insertedSeq, claimedSeq?, turn?, canceledSeq?}`.
#[derive(Debug, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    /// The message.
    pub message_id: String,
    /// `pending`, `claimed` or `canceled`.
    #[schema(schema_with = state_schema)]
    pub state: &'static str,
    /// The list it was inserted into (or last moved to).
    #[schema(schema_with = target_schema)]
    pub target: Target,
    /// The seq of the splice that inserted it.
    pub inserted_seq: u64,
    /// The seq of the splice that claimed it, once claimed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claimed_seq: Option<u64>,
    /// The turn that claimed it, once claimed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// The seq of the splice that canceled it, once canceled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub canceled_seq: Option<u64>,
}

/// `Receipt::state`.
fn state_schema() -> Object {
    string_enum(
        "Where the message is: waiting, taken by a turn, or canceled.",
        &["pending", "claimed", "canceled"],
    )
}

/// Replays the log's splices to follow one message id; `None` if it was never accepted.
pub fn find(events: &[String], message_id: &str) -> Option<Receipt> {
    let mut inbox = Inbox::default();
    let mut turn = 0;
    let mut receipt: Option<Receipt> = None;
    for json in events {
        let Ok(Some(event)) = Event::parse(json) else { continue };
        match &event.data {
            EventData::TurnStart(start) => turn = start.turn,
            EventData::InboxSpliced(splice) => {
                let removed = inbox.removed_by(splice).iter().any(|m| m.id == message_id);
                let inserted = splice.inserted.iter().any(|m| m.id == message_id);
                inbox.apply(splice);
                if inserted {
                    let r = receipt.get_or_insert(Receipt {
                        message_id: message_id.to_owned(),
                        state: "pending",
                        target: splice.target,
                        inserted_seq: event.seq,
                        claimed_seq: None,
                        turn: None,
                        canceled_seq: None,
                    });
                    (r.state, r.target, r.canceled_seq) = ("pending", splice.target, None);
                } else if removed && let Some(r) = receipt.as_mut() {
                    match splice.outcome {
                        Some(SpliceOutcome::Canceled) => {
                            (r.state, r.canceled_seq) = ("canceled", Some(event.seq))
                        }
                        None => {
                            (r.state, r.claimed_seq, r.turn) =
                                ("claimed", Some(event.seq), Some(turn))
                        }
                    }
                }
            }
            _ => {}
        }
    }
    receipt
}
