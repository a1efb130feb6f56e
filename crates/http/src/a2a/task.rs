//! A2A tasks read off the log. A task is the interval of the message that started it: from its
//! receipt (the insert splice at the task's seq) through the next whole-agent idle, as an owned
//! run's is. Its state, answer and history come from that interval's events alone, so a task read
//! again, by any gateway, after any restart, says the same thing.

use std::fmt;

use airlock_core::{ContentBlock, Event, EventData, Message, TurnEndReason, WaitingCall, text_of};
use airlock_sessions::valid_session_id;

use super::super::fields::rfc3339;
use super::super::interval::LogEnd;
use serde_json::{Value, json};

/// A task's id: `SESSION:SEQ`, its context (a session) and the seq of its message's receipt.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct TaskId {
    /// The session: the task's context.
    pub session: String,
    /// The seq of the receipt of the message that started it.
    pub seq: u64,
}

impl TaskId {
    /// The id `id` names; `None` when it is not one Airlock made.
    pub(super) fn parse(id: &str) -> Option<TaskId> {
        let (session, seq) = id.rsplit_once(':')?;
        let digits = !seq.is_empty() && seq.len() <= 18 && seq.bytes().all(|b| b.is_ascii_digit());
        let seq = seq.parse().ok().filter(|_| digits)?;
        valid_session_id(session).then(|| TaskId { session: session.to_owned(), seq })
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.session, self.seq)
    }
}

/// Where a task stands: A2A's `TaskState`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    /// Its message waits in the inbox.
    Submitted,
    /// A turn took it, and the agent is not idle yet.
    Working,
    /// A call waits for a person: the next message of the task answers it.
    InputRequired,
    /// The interval's last turn ended `completed` or `max-tokens`.
    Completed,
    /// It ended on a model error, a policy's block, a crash or a budget's pause.
    Failed,
    /// Its turn was cancelled.
    Canceled,
}

/// Every state, with its name on the wire.
const STATES: [(State, &str); 6] = [
    (State::Submitted, "TASK_STATE_SUBMITTED"),
    (State::Working, "TASK_STATE_WORKING"),
    (State::Completed, "TASK_STATE_COMPLETED"),
    (State::Failed, "TASK_STATE_FAILED"),
    (State::Canceled, "TASK_STATE_CANCELED"),
    (State::InputRequired, "TASK_STATE_INPUT_REQUIRED"),
];

impl State {
    /// Its name on the wire.
    pub(super) fn wire(self) -> &'static str {
        STATES.iter().find(|(state, _)| *state == self).map_or("", |(_, name)| name)
    }

    /// The state a request names: `TASK_STATE_*` or its number (proto JSON allows both).
    pub(super) fn named(value: &Value) -> Option<State> {
        let number = |n: u64| STATES.get(usize::try_from(n).ok()?.checked_sub(1)?).map(|s| s.0);
        match value {
            Value::String(name) => STATES.iter().find(|(_, n)| n == name).map(|(state, _)| *state),
            Value::Number(n) => n.as_u64().and_then(number),
            _ => None,
        }
    }

    /// Completed, failed or canceled: it changes no more.
    pub(super) fn terminal(self) -> bool {
        matches!(self, State::Completed | State::Failed | State::Canceled)
    }

    /// Where a blocking send and a stream stop: a terminal state, or waiting for input.
    pub(super) fn stops(self) -> bool {
        self.terminal() || self == State::InputRequired
    }
}

/// What one log event meant to a task being read.
#[derive(Debug, PartialEq)]
pub(super) enum Read {
    /// It is in the task's interval.
    In,
    /// It is, and asks a person to approve a call: the task may now wait for input.
    Asks,
    /// It is past the interval's end: the turn before it ended with the agent going idle.
    Past,
}

/// A task, built by reading its interval's events in order.
pub(super) struct Task {
    /// Its id.
    pub id: TaskId,
    /// The message that started it.
    message: Message,
    /// The seq after the last event read.
    pub next: u64,
    /// The last event's time (ms since the epoch).
    time: u64,
    /// A turn started after the receipt.
    taken: bool,
    /// The last turn's end.
    last_end: Option<TurnEndReason>,
    /// Where the interval ends.
    end: LogEnd,
    /// The agent's messages: their seq and text.
    said: Vec<(u64, String)>,
    /// The calls that wait for a person now.
    waiting: Vec<WaitingCall>,
}

impl Task {
    /// A task from the event at its seq; `None` unless it is the receipt of a message.
    pub(super) fn start(id: TaskId, json: &str) -> Option<Task> {
        let event = Event::parse(json).ok().flatten()?;
        let EventData::InboxSpliced(splice) = event.data else { return None };
        let message = splice.inserted.into_iter().next()?;
        (event.seq == id.seq).then(|| Task {
            id,
            message,
            next: event.seq + 1,
            time: event.time,
            taken: false,
            last_end: None,
            end: LogEnd::default(),
            said: Vec::new(),
            waiting: Vec::new(),
        })
    }

    /// Reads the next event of the log.
    pub(super) fn read(&mut self, json: &str) -> Read {
        let Ok(Some(event)) = Event::parse(json) else {
            // One this gateway does not know, ignorable: it is in the interval all the same.
            if let (false, Ok(seq)) = (self.end.ended(), airlock_sessions::seq_of(json)) {
                self.next = seq + 1;
            }
            return Read::In;
        };
        if self.end.past(&event.data) {
            return Read::Past;
        }
        self.next = event.seq + 1;
        self.time = event.time;
        match event.data {
            EventData::TurnStart(_) => self.taken = true,
            EventData::TurnEnd(end) => self.last_end = Some(end.reason),
            EventData::AssistantMessage(said) => {
                let text = text_of(&said.message.content);
                if !text.is_empty() {
                    self.said.push((event.seq, text));
                }
            }
            EventData::ToolApproval(approval) => {
                if approval.state == airlock_core::ApprovalState::Requested {
                    return Read::Asks;
                }
                self.waiting.retain(|call| call.call_id != approval.call_id);
            }
            _ => {}
        }
        Read::In
    }

    /// The agent is idle now, with every event read: the interval is over.
    pub(super) fn idle(&mut self) {
        self.end.idle();
    }

    /// The interval is over.
    pub(super) fn ended(&self) -> bool {
        self.end.ended()
    }

    /// The calls that wait for a person now.
    pub(super) fn waiting(&mut self, waiting: Vec<WaitingCall>) {
        self.waiting = waiting;
    }

    /// The calls that wait for a person now.
    pub(super) fn waiting_calls(&self) -> Vec<WaitingCall> {
        self.waiting.clone()
    }

    /// Where it stands.
    pub(super) fn state(&self) -> State {
        if !self.end.ended() {
            return match (self.waiting.is_empty(), self.taken) {
                (false, _) => State::InputRequired,
                (true, true) => State::Working,
                (true, false) => State::Submitted,
            };
        }
        match &self.last_end {
            None => State::Submitted, // left in the inbox of an agent that stopped
            Some(TurnEndReason::Completed | TurnEndReason::MaxTokens) => State::Completed,
            Some(TurnEndReason::Aborted { .. }) => State::Canceled,
            Some(_) => State::Failed,
        }
    }

    /// Its `TaskStatus`: the state, what the agent says about it, and when.
    pub(super) fn status(&self) -> Value {
        let state = self.state();
        let said = |parts: Value| {
            json!({"messageId": format!("{}:status", self.id), "contextId": self.id.session,
                "taskId": self.id.to_string(), "role": "ROLE_AGENT", "parts": parts})
        };
        let message = match (state, &self.last_end) {
            (State::InputRequired, _) => Some(said(self.asks())),
            (State::Failed, Some(reason)) => Some(said(json!([{"text": failure(reason)}]))),
            (State::Canceled, _) => Some(said(json!([{"text": "the task was canceled"}]))),
            _ => None,
        };
        let mut status = json!({"state": state.wire(), "timestamp": rfc3339(self.time)});
        if let Some(message) = message {
            status["message"] = message;
        }
        status
    }

    /// What the agent asks a person: a line naming each waiting call, how to answer, and the
    /// calls as data.
    fn asks(&self) -> Value {
        let calls: Vec<Value> = self
            .waiting
            .iter()
            .map(|call| {
                json!({"callId": call.call_id, "tool": call.name,
                "arguments": call.arguments, "kind": call.kind})
            })
            .collect();
        let names: Vec<&str> = self.waiting.iter().map(|call| call.name.as_str()).collect();
        let text = format!(
            "The agent asks to run {}. Answer in this task with the text \"approve\" or \"deny\", or a data part {{\"approved\": true}} or {{\"approved\": false, \"reason\": \"why\"}}.",
            names.join(", ")
        );
        json!([{"text": text}, {"data": {"waiting": calls}}])
    }

    /// Its artifact: the agent's last answer, once it completed with one.
    fn artifact(&self) -> Option<Value> {
        let (_, answer) = self.said.last().filter(|_| self.state() == State::Completed)?;
        Some(json!({"artifactId": format!("{}:answer", self.id), "name": "answer",
            "parts": [{"text": answer}]}))
    }

    /// Its `TaskArtifactUpdateEvent`, once it has an artifact.
    pub(super) fn artifact_update(&self) -> Option<Value> {
        let artifact = self.artifact()?;
        Some(json!({"artifactUpdate": {"taskId": self.id.to_string(), "contextId":
            self.id.session, "artifact": artifact, "append": false, "lastChunk": true}}))
    }

    /// Its `TaskStatusUpdateEvent`.
    pub(super) fn status_update(&self) -> Value {
        json!({"statusUpdate": {"taskId": self.id.to_string(), "contextId": self.id.session,
            "status": self.status()}})
    }

    /// The `Task`: with the last `history` messages of it (all when `None`) and its artifacts
    /// when `artifacts`.
    pub(super) fn to_json(&self, history: Option<usize>, artifacts: bool) -> Value {
        let mut messages = vec![self.message_json()];
        messages.extend(self.said.iter().map(|(seq, text)| {
            json!({"messageId": format!("{}:{seq}", self.id.session), "contextId":
                self.id.session, "taskId": self.id.to_string(), "role": "ROLE_AGENT",
                "parts": [{"text": text}]})
        }));
        let keep = history.unwrap_or(messages.len()).min(messages.len());
        let artifacts: Vec<Value> = self.artifact().filter(|_| artifacts).into_iter().collect();
        json!({"id": self.id.to_string(), "contextId": self.id.session, "status": self.status(),
            "artifacts": artifacts, "history": messages.split_off(messages.len() - keep)})
    }

    /// The message that started it, as an A2A `Message`.
    fn message_json(&self) -> Value {
        let parts: Vec<Value> = self
            .message
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text } => Some(json!({"text": text})),
                ContentBlock::Image { media_type, data } => {
                    Some(json!({"raw": data, "mediaType": media_type}))
                }
                _ => None,
            })
            .collect();
        json!({"messageId": self.message.id, "contextId": self.id.session,
            "taskId": self.id.to_string(), "role": "ROLE_USER", "parts": parts})
    }
}

/// What a person reads about a task that failed.
fn failure(reason: &TurnEndReason) -> String {
    match reason {
        TurnEndReason::Error { error } => format!("the model failed ({}): {}", error.code, error.message),
        TurnEndReason::Paused => "a budget ran out, so the session paused; raise it (PUT /v1/sessions/{id}/budget) and send again".to_owned(),
        TurnEndReason::Blocked => "a policy blocked the work before the model was asked".to_owned(),
        reason => format!("the turn ended {}", reason.kind()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64, kind: &str, data: Value) -> String {
        json!({"type": kind, "seq": seq, "time": 1_764_460_800_000u64 + seq, "data": data})
            .to_string()
    }

    fn receipt(seq: u64) -> String {
        let message = json!({"id": "m1", "role": "user", "content": [{"type": "text",
            "text": "hi"}], "source": {"kind": "user"}});
        event(
            seq,
            "agent/inbox/spliced",
            json!({"target": "next-turn", "start": 0,
            "inserted": [message]}),
        )
    }

    fn turn_end(seq: u64, reason: Value) -> String {
        event(seq, "turn/end", json!({"turn": 1, "reason": reason}))
    }

    fn said(seq: u64, text: &str) -> String {
        event(
            seq,
            "assistant/message",
            json!({"turn": 1, "step": 1, "message": {"id": "a",
            "role": "assistant", "content": [{"type": "text", "text": text}],
            "source": {"kind": "model"}}}),
        )
    }

    fn task() -> Task {
        let id = TaskId::parse("ctx:1:4").unwrap();
        assert_eq!(id, TaskId { session: "ctx:1".to_owned(), seq: 4 });
        Task::start(id, &receipt(4)).unwrap()
    }

    #[test]
    fn a_task_id_names_its_session_and_receipt_and_nothing_else_is_one() {
        assert_eq!(TaskId::parse("s:12").unwrap().to_string(), "s:12");
        for bad in ["s", "s:", ":1", "s:x", "s:-1", "s:+1", "a b:1", "s:1234567890123456789"] {
            assert_eq!(TaskId::parse(bad), None, "{bad}");
        }
        let id = TaskId::parse("s:3").unwrap();
        assert!(Task::start(id.clone(), &receipt(4)).is_none(), "another seq");
        assert!(Task::start(id, &event(3, "turn/start", json!({"turn": 1}))).is_none());
    }

    #[test]
    fn a_task_is_submitted_then_working_then_completed_with_its_answer_as_an_artifact() {
        let mut task = task();
        assert_eq!(task.state(), State::Submitted);
        assert_eq!(task.read(&event(5, "turn/start", json!({"turn": 1}))), Read::In);
        assert_eq!(task.state(), State::Working);
        task.read(&said(6, "the answer"));
        task.read(&turn_end(7, json!({"kind": "completed"})));
        assert_eq!(task.state(), State::Working, "the next event says whether it ended");
        assert_eq!(task.read(&receipt(8)), Read::Past, "the agent went idle at 7");
        assert_eq!(task.next, 8);
        assert_eq!(task.state(), State::Completed);
        let json = task.to_json(None, true);
        assert_eq!(json["status"]["state"], "TASK_STATE_COMPLETED");
        assert_eq!(json["artifacts"][0]["parts"], json!([{"text": "the answer"}]));
        let roles: Vec<&Value> =
            json["history"].as_array().unwrap().iter().map(|m| &m["role"]).collect();
        assert_eq!(roles, ["ROLE_USER", "ROLE_AGENT"]);
        assert_eq!(task.to_json(Some(1), false)["history"][0]["role"], "ROLE_AGENT");
        assert_eq!(task.to_json(Some(0), false)["artifacts"], json!([]));
    }

    #[test]
    fn a_task_goes_on_through_the_turns_its_interval_holds_and_ends_at_idle() {
        let mut task = task();
        task.read(&event(5, "turn/start", json!({"turn": 1})));
        task.read(&turn_end(6, json!({"kind": "completed"})));
        assert_eq!(task.read(&event(7, "turn/start", json!({"turn": 2}))), Read::In);
        task.read(&turn_end(
            8,
            json!({"kind": "error", "error": {"code": "AUTH",
            "message": "bad key"}}),
        ));
        task.idle();
        assert_eq!(task.state(), State::Failed);
        let status = task.status();
        assert!(status["message"]["parts"][0]["text"].as_str().unwrap().contains("AUTH"));
    }

    #[test]
    fn a_task_waits_for_input_while_a_call_waits_for_a_person_and_is_canceled_by_an_abort() {
        let mut task = task();
        task.read(&event(5, "turn/start", json!({"turn": 1})));
        let asked = event(
            6,
            "tool/approval",
            json!({"turn": 1, "step": 1, "callId": "c1",
            "state": "requested"}),
        );
        assert_eq!(task.read(&asked), Read::Asks);
        task.waiting(vec![WaitingCall {
            call_id: "c1".to_owned(),
            name: "echo".to_owned(),
            arguments: "{}".to_owned(),
            kind: airlock_core::WaitKind::Approval,
            since: 0,
        }]);
        assert_eq!(task.state(), State::InputRequired);
        assert_eq!(task.status()["message"]["parts"][1]["data"]["waiting"][0]["tool"], "echo");
        task.waiting(Vec::new());
        task.read(&turn_end(7, json!({"kind": "aborted", "reason": {"kind": "user"}})));
        task.idle();
        assert_eq!(task.state(), State::Canceled);
        assert_eq!(task.to_json(None, true)["artifacts"], json!([]));
    }

    #[test]
    fn a_state_is_named_on_the_wire_by_name_or_number() {
        assert_eq!(State::named(&json!("TASK_STATE_WORKING")), Some(State::Working));
        assert_eq!(State::named(&json!(6)), Some(State::InputRequired));
        assert_eq!(State::named(&json!(0)), None);
        assert_eq!(State::named(&json!("working")), None);
        assert_eq!(State::Canceled.wire(), "TASK_STATE_CANCELED");
    }
}
