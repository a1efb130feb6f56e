//! Receipts: the admission facts of one message, read from the log (never a result).

use airlock_core::{Event, EventData, Inbox, ReceiptMark, Target};

/// Where one message is: `{messageId, state, target, insertedSeq, claimedSeq?, turn?,
/// canceledSeq?}` as the API shows it.
#[derive(Debug, PartialEq)]
pub struct Receipt {
    /// The message.
    pub message_id: String,
    /// `pending`, `claimed` or `canceled`.
    pub state: &'static str,
    /// The list it was inserted into (or last moved to).
    pub target: Target,
    /// The seq of the splice that inserted it.
    pub inserted_seq: u64,
    /// The seq of the splice that claimed it, once claimed.
    pub claimed_seq: Option<u64>,
    /// The turn that claimed it, once claimed.
    pub turn: Option<u32>,
    /// The seq of the splice that canceled it, once canceled.
    pub canceled_seq: Option<u64>,
}

/// One change a splice makes to a message's receipt.
#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    /// The message.
    pub message_id: String,
    /// The splice's seq.
    pub seq: u64,
    /// What happened to the message.
    pub change: Change,
}

/// What a splice did to a message.
pub use airlock_core::ReceiptChange as Change;

impl Mark {
    /// The core's mark of the splice at `seq`.
    pub fn new(seq: u64, mark: ReceiptMark) -> Mark {
        Mark { message_id: mark.message_id, seq, change: mark.change }
    }
}

/// Follows a log's splices from its start and says what each does to receipts (for a log kept
/// before the receipts index; a live session has its core's marks, [`airlock_core::Appended`]).
#[derive(Clone, Debug, Default)]
pub struct Marker {
    inbox: Inbox,
    turn: u32,
}

impl Marker {
    /// Folds one event; answers the receipt changes it makes.
    pub fn marks(&mut self, event: &Event) -> Vec<Mark> {
        let splice = match &event.data {
            EventData::TurnStart(start) => {
                self.turn = start.turn;
                return Vec::new();
            }
            EventData::InboxSpliced(splice) => splice,
            _ => return Vec::new(),
        };
        let marks = self.inbox.marks(splice, self.turn).into_iter();
        let marks = marks.map(|mark| Mark::new(event.seq, mark)).collect();
        self.inbox.apply(splice);
        marks
    }
}

impl Receipt {
    /// The receipt after `mark` (of this receipt's message); `None` until it was inserted.
    pub fn apply(receipt: Option<Receipt>, mark: &Mark) -> Option<Receipt> {
        match (receipt, mark.change) {
            (receipt, Change::Inserted(target)) => {
                let mut r = receipt.unwrap_or(Receipt {
                    message_id: mark.message_id.clone(),
                    state: "pending",
                    target,
                    inserted_seq: mark.seq,
                    claimed_seq: None,
                    turn: None,
                    canceled_seq: None,
                });
                (r.state, r.target, r.canceled_seq) = ("pending", target, None);
                Some(r)
            }
            (Some(mut r), Change::Claimed { turn }) => {
                (r.state, r.claimed_seq, r.turn) = ("claimed", Some(mark.seq), Some(turn));
                Some(r)
            }
            (Some(mut r), Change::Canceled) => {
                (r.state, r.canceled_seq) = ("canceled", Some(mark.seq));
                Some(r)
            }
            (None, _) => None,
        }
    }

    /// The `state` names a stored receipt may have.
    pub fn state_named(name: &str) -> &'static str {
        match name {
            "claimed" => "claimed",
            "canceled" => "canceled",
            _ => "pending",
        }
    }
}

/// Replays the log's splices to follow one message id; `None` if it was never accepted. (A log
/// kept since receipts were indexed is looked up in the store instead.)
pub fn find(events: &[String], message_id: &str) -> Option<Receipt> {
    let mut marker = Marker::default();
    let mut receipt = None;
    for json in events {
        let Ok(Some(event)) = Event::parse(json) else { continue };
        for mark in marker.marks(&event).iter().filter(|m| m.message_id == message_id) {
            receipt = Receipt::apply(receipt, mark);
        }
    }
    receipt
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    /// Receipts stored before they were keyed by message first are kept, each found again by
    /// its session and message.
    #[test]
    fn the_migration_keeps_every_receipt() {
        let mut conn = Connection::open_in_memory().unwrap();
        let migrations = crate::sqlite::migrations();
        migrations.to_version(&mut conn, 7).unwrap();
        let rows = [("s1", "m2", "claimed", Some(4)), ("s2", "m1", "pending", None)];
        for (session, message, state, claimed) in rows {
            conn.execute(
                "INSERT INTO receipts (session_id, message_id, state, target, inserted_seq, \
                 claimed_seq) VALUES (?1, ?2, ?3, 'next-turn', 1, ?4)",
                rusqlite::params![session, message, state, claimed],
            )
            .unwrap();
        }
        migrations.to_latest(&mut conn).unwrap();
        for (session, message, state, claimed) in rows {
            let receipt = crate::writer::receipt(&conn, session, message).unwrap().unwrap();
            assert_eq!((receipt.state, receipt.claimed_seq), (state, claimed));
        }
        assert!(crate::writer::receipt(&conn, "s1", "m1").unwrap().is_none());
    }
}
