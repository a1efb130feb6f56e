//! A session paused by its pre-step policy (a budget ran out), and its resume: the claim goes
//! back, waking input waits, and the resume takes up where the paused turn stopped.

use crate::agent::{Agent, Phase};
use crate::event::{EventData, RawJson, Splice};
use crate::inbox::Delivery;
use crate::io::{Output, RefusalCode, Status};
use crate::turn::{Stage, Turn};
use crate::wire::{Message, Role, Target, TurnEndReason};

impl Agent {
    /// The pre-step policy paused the session: `budget/exhausted` says why, the claimed work goes
    /// back to the front of its lists as it was, and the turn ends `paused`.
    pub(crate) fn pause(&mut self, turn: &Turn, why: String) {
        let Stage::Deciding { claimed, .. } = &turn.stage else { unreachable!("deciding") };
        // A host that cannot say why still pauses; the log says what was wrong with its reason.
        let why = RawJson::object(why).unwrap_or_else(|error| {
            RawJson::object(serde_json::json!({ "error": error }).to_string()).expect("an object")
        });
        self.emit(EventData::BudgetExhausted(why), None);
        for target in [Target::NextStep, Target::NextTurn] {
            let back: Vec<Message> =
                claimed.iter().filter(|m| Delivery::target_of(m) == target).cloned().collect();
            if !back.is_empty() {
                self.splice(Splice {
                    target,
                    start: 0,
                    removed_count: None,
                    inserted: back,
                    outcome: None,
                });
            }
        }
        self.end_turn(turn.number, TurnEndReason::Paused);
    }

    /// Takes a paused session up where it stopped: a turn paused after its tool calls ran owes
    /// the model their results, so its first step runs with or without new input.
    pub(crate) fn resume(&mut self, data: String) {
        if !self.durable.paused {
            return;
        }
        let data = match RawJson::object(data) {
            Ok(data) => data,
            Err(message) => return self.refuse(RefusalCode::BadInput, message),
        };
        self.emit(EventData::BudgetResumed(data), None);
        let owed = self.durable.history.last().is_some_and(|m| m.role == Role::Tool);
        match &self.phase {
            Phase::Idle if owed || self.has_runnable_work() => {
                self.out.push(Output::Status(Status::Running));
                self.start_turn_owing(owed);
            }
            Phase::Idle => {}
            // A compaction at idle runs: the turn starts once it settles.
            Phase::Running(_) => (self.latched, self.owed) = (true, owed),
        }
    }
}
