//! [`Driver`]: the pure part of goal continuation. It folds `goal/change` events, decides at
//! whole-agent idle whether a round, the round limit or an owed pause comes next, and turns API
//! and tool requests into inputs. The session feeds what it returns.

use std::collections::BTreeMap;

use airlock_core::{
    ContentBlock, Delivery, Event, EventData, HostEvent, Inbox, Input, Message, Role, Source,
    SpliceOutcome,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Goal, GoalError, GoalOp, GoalReason, MAX_ROUNDS, Phase};

/// The event type that holds the goal.
const CHANGE: &str = "goal/change";

/// A round the driver enqueued, until its turn ends.
#[derive(Clone, Debug, PartialEq)]
struct Round {
    message_id: String,
    /// Its number (`roundsStarted` when it was enqueued).
    number: u32,
    /// A turn entered it; until then it is reserved (queued).
    admitted: bool,
}

/// A pause the driver owes the log.
#[derive(Clone, Debug, PartialEq)]
struct Pause {
    reason: GoalReason,
    /// The reserved round to cancel with it.
    remove: Option<String>,
}

/// The goal of one session and the process-local state that drives it.
#[derive(Clone, Debug, Default)]
pub struct Driver {
    goal: Option<Goal>,
    armed: bool,
    round: Option<Round>,
    /// Owed since a cancel hit a round, or the queue API removed or replaced the reserved one.
    pause: Option<Pause>,
    /// A person set or resumed the goal: the next round may wake parked work.
    released: bool,
}

impl Driver {
    /// The goal folded from a session's log: loaded, but disarmed until resumed.
    pub fn from_log(events: &[String]) -> Driver {
        let mut driver = Driver::default();
        let changes = events.iter().filter(|json| Event::type_of(json).as_deref() == Some(CHANGE));
        for json in changes {
            if let Ok(Some(event)) = Event::parse(json) {
                driver.observe(&event, &Inbox::default());
            }
        }
        driver
    }

    /// The goal, if any.
    pub fn goal(&self) -> Option<&Goal> {
        self.goal.as_ref()
    }

    /// Whether rounds run in this process.
    pub fn armed(&self) -> bool {
        self.armed
    }

    /// Folds a committed event; `inbox` is the inbox as it was before the event.
    pub fn observe(&mut self, event: &Event, inbox: &Inbox) {
        match &event.data {
            EventData::InboxSpliced(splice) if splice.outcome == Some(SpliceOutcome::Canceled) => {
                self.removed(&inbox.removed_by(splice), &splice.inserted);
            }
            EventData::GoalChange(data) => {
                #[derive(Deserialize)]
                struct Change {
                    goal: Option<Goal>,
                }
                self.goal = serde_json::from_str::<Change>(data.get()).ok().and_then(|c| c.goal);
                if !self.goal.as_ref().is_some_and(|g| g.phase == Phase::Active) {
                    self.armed = false;
                }
            }
            EventData::UserMessage(message) => {
                if let Some(round) = &mut self.round
                    && round.message_id == message.id
                {
                    round.admitted = true;
                }
            }
            EventData::TurnEnd(end) => {
                if self.round.as_ref().is_some_and(|r| r.admitted) {
                    self.round = None;
                }
                if !end.reason.continues_drain() {
                    // A turn that failed (or was stopped) after a release parks what follows it
                    // anew: that work waits for a person again.
                    self.released = false;
                }
            }
            _ => {}
        }
    }

    /// Notes a cancel, before the core sees it: a round reserved or running pauses the goal, and
    /// a reserved one is cancelled with the pause, so a person's next message never runs behind
    /// a stale round. A cancel also takes back a release: the stop holds.
    pub fn cancelled(&mut self) {
        self.released = false;
        if let Some(round) = self.round.take() {
            let reason =
                GoalReason::new("cancel", format!("a cancel stopped round {}", round.number));
            let remove = (!round.admitted).then_some(round.message_id);
            self.pause = Some(Pause { reason, remove });
        }
    }

    /// Notes a canceled splice before it applies: removing or replacing the reserved round
    /// through the queue API pauses the goal, saying so (it never waits for a round that is gone).
    fn removed(&mut self, removed: &[Message], reinserted: &[Message]) {
        let Some(round) = &self.round else { return };
        if round.admitted || !removed.iter().any(|m| m.id == round.message_id) {
            return;
        }
        let number = round.number;
        let reason = if reinserted.iter().any(|m| m.id == round.message_id) {
            let message =
                format!("round {number} was edited in the queue; it runs as ordinary work");
            GoalReason::new("round-replaced", message)
        } else {
            GoalReason::new("round-removed", format!("round {number} was removed from the queue"))
        };
        self.round = None;
        self.pause = Some(Pause { reason, remove: None });
    }

    /// Forgets a round whose inputs were not committed.
    pub fn abandon_round(&mut self) {
        self.round = None;
    }

    /// Stops driving for good (the session is disposed): disarmed, nothing owed.
    pub fn disarm(&mut self) {
        (self.armed, self.round, self.pause, self.released) = (false, None, None, false);
    }

    /// Whether a round was enqueued and has not ended yet.
    pub fn has_round(&self) -> bool {
        self.round.is_some()
    }

    /// What to feed now that the agent is `idle` (or not) with `inbox` pending: a pause that is
    /// owed, the round limit, or the next round. A round waits for idle, for the previous round,
    /// and for parked work (a cancel with `keepInbox`, a failed turn): that work waits for a
    /// person, and only a person's send, set or resume may wake it. Empty when nothing is to do.
    pub fn next(
        &mut self,
        idle: bool,
        inbox: &Inbox,
        round_id: impl FnOnce() -> String,
    ) -> Vec<Input> {
        let pause = self.pause.take();
        let Some(goal) = self.goal.clone().filter(|g| g.phase == Phase::Active) else {
            return Vec::new();
        };
        if let Some(Pause { reason, remove }) = pause {
            let mut inputs: Vec<Input> = remove
                .filter(|id| inbox.get(id).is_some())
                .map(Input::Remove)
                .into_iter()
                .collect();
            inputs.push(change(Goal { phase: Phase::Paused, paused: Some(reason), ..bump(goal) }));
            return inputs;
        }
        if !idle || !self.armed || self.round.is_some() {
            return Vec::new();
        }
        if goal.rounds_started >= goal.max_rounds {
            let message = format!("all {} rounds ran without completing the goal", goal.max_rounds);
            let blocked = GoalReason::new("round-limit", message);
            return vec![change(Goal {
                phase: Phase::Blocked,
                blocked: Some(blocked),
                ..bump(goal)
            })];
        }
        if inbox.has_waking_work() && !self.released {
            return Vec::new();
        }
        self.released = false;
        let goal = Goal { rounds_started: goal.rounds_started + 1, ..bump(goal) };
        let message = round_message(&goal, round_id());
        let number = goal.rounds_started;
        self.round = Some(Round { message_id: message.id.clone(), number, admitted: false });
        vec![change(goal), Delivery::Followup.send(message)]
    }

    /// Whether [`Driver::next`] at idle would start a round now (rather than nothing, a pause or
    /// the round limit).
    pub fn would_start_round(&self, inbox: &Inbox) -> bool {
        let inputs = self.clone().next(true, inbox, String::new);
        inputs.iter().any(|input| matches!(input, Input::Send { .. }))
    }

    /// The `goal/change` that says the next round waits, for `reason`; `None` when the goal says
    /// so already (or is not active).
    pub fn wait(&self, reason: GoalReason) -> Option<Input> {
        let goal = self.goal.clone().filter(|g| g.phase == Phase::Active)?;
        if goal.waiting.as_ref().is_some_and(|waiting| waiting.code == reason.code) {
            return None;
        }
        Some(change(Goal { waiting: Some(reason), ..bump(goal) }))
    }

    /// The inputs a request turns into: a `goal/change`, after cancelling a reserved round the
    /// request makes stale. Arms or disarms as it says.
    pub fn apply(
        &mut self,
        op: GoalOp,
        inbox: &Inbox,
        goal_id: impl FnOnce() -> String,
    ) -> Result<Vec<Input>, GoalError> {
        let current = self.goal.clone();
        let wrong = |goal: &Goal, hint| GoalError::Phase { phase: goal.phase, hint };
        let resume = op == GoalOp::Resume;
        let change = match op {
            GoalOp::Set { objective, max_rounds } => {
                if objective.trim_matches([' ', '\t', '\n', '\r']).is_empty() {
                    return Err(GoalError::EmptyObjective);
                }
                if !(1..=MAX_ROUNDS).contains(&max_rounds) {
                    return Err(GoalError::MaxRounds(max_rounds));
                }
                let goal = Goal {
                    id: goal_id(),
                    objective,
                    phase: Phase::Active,
                    max_rounds,
                    rounds_started: 0,
                    revision: current.map_or(1, |g| g.revision + 1),
                    blocked: None,
                    paused: None,
                    waiting: None,
                };
                (self.armed, self.released) = (true, true);
                change(goal)
            }
            GoalOp::Clear => {
                let goal = current.ok_or(GoalError::NoGoal)?;
                Input::Log(HostEvent::GoalChange(
                    json!({"cleared": true, "goalId": goal.id}).to_string(),
                ))
            }
            op => {
                let goal = current.ok_or(GoalError::NoGoal)?;
                let (phase, blocked, paused) = match (op, goal.phase) {
                    (GoalOp::Pause, Phase::Active | Phase::Paused) => {
                        (Phase::Paused, None, Some(GoalReason::new("request", "paused on request")))
                    }
                    (GoalOp::Pause, _) => {
                        return Err(wrong(&goal, "only an active goal can be paused"));
                    }
                    (GoalOp::Resume, Phase::Active | Phase::Paused) => {
                        (self.armed, self.released) = (true, true);
                        (Phase::Active, None, None)
                    }
                    (GoalOp::Resume, _) => {
                        return Err(wrong(&goal, "set a new goal with PUT to start over"));
                    }
                    (GoalOp::Complete, Phase::Complete) => {
                        return Err(wrong(&goal, "it is done already"));
                    }
                    (GoalOp::Complete, _) => (Phase::Complete, None, None),
                    (GoalOp::Block { reason }, Phase::Active | Phase::Paused) => {
                        (Phase::Blocked, Some(GoalReason::new("model", reason)), None)
                    }
                    (GoalOp::Block { .. }, _) => {
                        return Err(wrong(&goal, "only an active goal can be blocked"));
                    }
                    (GoalOp::Set { .. } | GoalOp::Clear, _) => unreachable!("handled above"),
                };
                change(Goal { phase, blocked, paused, ..bump(goal) })
            }
        };
        self.pause = None;
        // A round still queued is stale once the goal stops or is replaced; a resume keeps it.
        let stale = match resume {
            true => None,
            false => {
                self.round.take().filter(|r| !r.admitted && inbox.get(&r.message_id).is_some())
            }
        };
        Ok(stale.map(|r| Input::Remove(r.message_id)).into_iter().chain([change]).collect())
    }
}

/// The goal with its next revision; a change other than [`Driver::wait`] ends any wait.
fn bump(goal: Goal) -> Goal {
    Goal { revision: goal.revision + 1, waiting: None, ..goal }
}

/// A `goal/change` with the full snapshot.
fn change(goal: Goal) -> Input {
    Input::Log(HostEvent::GoalChange(json!({"goal": goal}).to_string()))
}

/// The followup of one round.
fn round_message(goal: &Goal, id: String) -> Message {
    let text = format!(
        "Goal: {}\nRound: {}/{}\nWork toward the goal. When it is achieved, call the `goal` tool \
         with {{\"status\": \"complete\"}}; if it cannot be achieved, call it with \
         {{\"status\": \"blocked\", \"reason\": \"...\"}}.",
        goal.objective, goal.rounds_started, goal.max_rounds
    );
    let details = BTreeMap::from([
        ("goalId".to_owned(), Value::from(goal.id.clone())),
        ("revision".to_owned(), Value::from(goal.revision)),
        ("round".to_owned(), Value::from(goal.rounds_started)),
    ]);
    Message {
        id,
        role: Role::User,
        content: vec![ContentBlock::Text { text }],
        source: Source { kind: "goal".into(), details },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_core::Target;

    fn logged(input: &Input, seq: u64) -> Event {
        let Input::Log(HostEvent::GoalChange(data)) = input else { panic!("not a goal/change") };
        let json = format!(r#"{{"type":"goal/change","seq":{seq},"time":0,"data":{data}}}"#);
        Event::parse(&json).unwrap().unwrap()
    }

    /// Applies a request and folds its `goal/change` (the last input) back in.
    fn apply(driver: &mut Driver, op: GoalOp, inbox: &Inbox) -> Vec<Input> {
        let inputs = driver.apply(op, inbox, || "g1".into()).unwrap();
        driver.observe(&logged(inputs.last().unwrap(), 0), &Inbox::default());
        inputs
    }

    fn set(driver: &mut Driver, max_rounds: u32) {
        apply(driver, GoalOp::Set { objective: "ship it".into(), max_rounds }, &Inbox::default());
    }

    /// An inbox holding one parked followup.
    fn parked() -> Inbox {
        let mut inbox = Inbox::default();
        let message = Message::user("p1".into(), vec![ContentBlock::Text { text: "x".into() }]);
        let mut stamped = message.clone();
        Delivery::Followup.stamp(&mut stamped);
        inbox.apply(&inbox.insert(Target::NextTurn, stamped));
        inbox
    }

    /// Queues a round at idle and folds its events; answers the round's message.
    fn round(driver: &mut Driver, inbox: &Inbox, id: &str) -> Message {
        let inputs = driver.next(true, inbox, || id.into());
        assert_eq!(inputs.len(), 2, "the snapshot, then the round: {inputs:?}");
        driver.observe(&logged(&inputs[0], 1), inbox);
        let Input::Send { message, .. } = &inputs[1] else { panic!("not a send") };
        message.clone()
    }

    fn phase_and_reason(input: &Input) -> (Phase, Option<String>) {
        let goal = match input {
            Input::Log(HostEvent::GoalChange(data)) => {
                serde_json::from_str::<Value>(data).unwrap()["goal"].clone()
            }
            other => panic!("not a goal/change: {other:?}"),
        };
        let goal: Goal = serde_json::from_value(goal).unwrap();
        (goal.phase, goal.paused.map(|r| r.code))
    }

    #[test]
    fn a_round_waits_for_idle_and_for_the_previous_round() {
        let mut driver = Driver::default();
        set(&mut driver, 3);
        let empty = Inbox::default();
        assert!(driver.next(false, &empty, || "r1".into()).is_empty(), "not while running");
        round(&mut driver, &empty, "r1");
        assert_eq!(driver.goal().unwrap().rounds_started, 1);
        assert!(driver.next(true, &empty, || "r2".into()).is_empty(), "round 1 has not run yet");
    }

    #[test]
    fn parked_work_holds_the_round_until_a_person_resumes() {
        let mut driver = Driver::default();
        set(&mut driver, 3);
        driver.cancelled(); // a person's stop, with no round in flight: the goal stays active
        let inbox = parked();
        assert!(driver.next(true, &inbox, || "r1".into()).is_empty(), "the stop holds");
        apply(&mut driver, GoalOp::Resume, &inbox);
        round(&mut driver, &inbox, "r1"); // behind the parked work, which the resume released
    }

    #[test]
    fn a_turn_that_fails_after_a_release_parks_its_followers_for_a_person_again() {
        let mut driver = Driver::default();
        set(&mut driver, 3); // a release: the person asked for rounds
        let end = r#"{"type":"turn/end","seq":1,"time":0,"data":{"turn":1,"reason":{"kind":"error","error":{"code":"AUTH","message":"no"}}}}"#;
        driver.observe(&Event::parse(end).unwrap().unwrap(), &Inbox::default());
        assert!(driver.next(true, &parked(), || "r1".into()).is_empty());
    }

    #[test]
    fn a_cancel_of_a_reserved_round_cancels_it_and_pauses_the_goal() {
        let mut driver = Driver::default();
        set(&mut driver, 3);
        let mut inbox = Inbox::default();
        let message = round(&mut driver, &inbox, "r1");
        inbox.apply(&inbox.insert(Target::NextTurn, message)); // reserved behind other work
        driver.cancelled();
        let inputs = driver.next(true, &inbox, || "r2".into());
        assert_eq!(inputs[0], Input::Remove("r1".into()), "{inputs:?}");
        assert_eq!(phase_and_reason(&inputs[1]), (Phase::Paused, Some("cancel".into())));
    }

    #[test]
    fn removing_or_editing_a_reserved_round_pauses_the_goal_saying_so() {
        for (reinserted, code) in [(false, "round-removed"), (true, "round-replaced")] {
            let mut driver = Driver::default();
            set(&mut driver, 3);
            let message = round(&mut driver, &Inbox::default(), "r1");
            let again = if reinserted { vec![message.clone()] } else { Vec::new() };
            driver.removed(&[message], &again);
            let inputs = driver.next(true, &Inbox::default(), || "r2".into());
            assert_eq!(inputs.len(), 1, "only the pause: {inputs:?}");
            assert_eq!(phase_and_reason(&inputs[0]), (Phase::Paused, Some(code.into())));
        }
    }

    #[test]
    fn a_goal_loaded_from_the_log_is_disarmed() {
        let mut live = Driver::default();
        let op = GoalOp::Set { objective: "x".into(), max_rounds: 2 };
        let inputs = live.apply(op, &Inbox::default(), || "g".into()).unwrap();
        let Input::Log(HostEvent::GoalChange(data)) = &inputs[0] else { unreachable!() };
        let log = [format!(r#"{{"type":"goal/change","seq":0,"time":0,"data":{data}}}"#)];
        let mut loaded = Driver::from_log(&log);
        assert_eq!(loaded.goal().unwrap().phase, Phase::Active);
        assert!(!loaded.armed());
        assert!(loaded.next(true, &Inbox::default(), || "r".into()).is_empty());
    }

    #[test]
    fn requests_that_do_not_fit_the_phase_say_what_to_do() {
        let mut driver = Driver::default();
        let empty = Inbox::default();
        assert_eq!(driver.apply(GoalOp::Pause, &empty, String::new), Err(GoalError::NoGoal));
        set(&mut driver, 1);
        apply(&mut driver, GoalOp::Complete, &empty);
        let error = driver.apply(GoalOp::Resume, &empty, String::new).unwrap_err();
        assert!(error.to_string().contains("set a new goal"), "{error}");
        for max_rounds in [0, MAX_ROUNDS + 1, 2_147_483_648] {
            let op = GoalOp::Set { objective: "y".into(), max_rounds };
            let refused = driver.apply(op, &empty, String::new);
            assert!(matches!(refused, Err(GoalError::MaxRounds(m)) if m == max_rounds));
        }
    }
}
