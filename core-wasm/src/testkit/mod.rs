//! A scripted-model harness for transcript tests, shared by the native tests and the gateway's
//! wasm parity test.
//!
//! A [`Harness`] drives any [`Core`] (the native [`crate::Agent`], or the wasm component through
//! the gateway's host) with scripted inputs. It answers the core's outputs itself: the pre-step
//! policy enters everything (unless told to hold), the scripted model plays its next [`Reply`],
//! tools finish at once (unless held), retry timers fire at once; and it checks the facts beside
//! each event against the log folded so far. Time starts at [`START`] and moves one
//! millisecond per input, so every log is reproducible to the byte.

mod backend;
mod scenarios;
mod transcript;

pub use backend::{Backend, Core, Native, Restored};
pub use scenarios::ALL as SCENARIOS;
pub use scenarios::*;

use std::collections::VecDeque;

use serde_json::Value;

use crate::config::{Config, Limits, ToolSpec};
use crate::io::{
    Appended, CallAnswer, Input, ModelRequest, Output, RefusalCode, StepDecision, ToolOutcome,
};
use crate::wire::{
    CancelCause, ContentBlock, FinishReason, Message, ModelError, StreamChunk, Target, Usage,
};

/// The time of a harness session's first input.
pub const START: u64 = 1_764_460_800_000;

/// What the scripted model answers to one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// Streams this text one word per chunk, then finishes `stop`.
    Text(&'static str),
    /// Streams this text, then finishes `max-tokens`.
    MaxTokens(&'static str),
    /// Streams text, then a half-finished tool call, then finishes `max-tokens`.
    TruncatedCall(&'static str),
    /// Streams these tool calls `(id, name, arguments)`, then finishes `tool-calls`.
    Calls(Vec<(&'static str, &'static str, &'static str)>),
    /// Streams this text and then never finishes.
    Hang(&'static str),
    /// Fails with this error code (and `Retry-After` in ms).
    Fail(&'static str, Option<u64>),
    /// Plays the reply with a usage chunk of this many prompt tokens before its finish.
    Counted(u64, Box<Reply>),
}

/// The session config the harness uses: tools `echo` (parallel-safe), `slow` and `wait`
/// (exclusive; the harness holds their results until told).
pub fn config() -> Config {
    let spec = |name: &str, parallel_safe| ToolSpec {
        name: name.into(),
        description: format!("the {name} tool"),
        parameters: r#"{"type":"object"}"#.into(),
        parallel_safe,
        ..ToolSpec::default()
    };
    let mut config = Config::new("s1", "scripted", "scripted-1");
    config.tools = vec![spec("echo", true), spec("slow", false), spec("wait", true)];
    // The limits have scenarios of their own; elsewhere a turn-deadline timer would only fire.
    config.limits = Limits::none();
    config
}

/// [`config`] plus the tools of a person in the loop: `guarded` (parallel-safe, needs an
/// approval, then finishes at once like `echo`) and `pick` (a client tool with a 60 s timeout).
pub fn person_config() -> Config {
    let mut config = config();
    let tool = |name: &str, approval, client_timeout_ms| ToolSpec {
        name: name.into(),
        description: format!("the {name} tool"),
        parameters: r#"{"type":"object"}"#.into(),
        parallel_safe: true,
        approval,
        client_timeout_ms,
    };
    config.tools.push(tool("guarded", true, None));
    config.tools.push(tool("pick", false, Some(60_000)));
    config
}

/// A user message with this id and text.
pub fn user(id: &str, text: &str) -> Message {
    Message::user(id.into(), vec![ContentBlock::Text { text: text.into() }])
}

/// Drives one core and records its log and a compact transcript.
pub struct Harness<'b> {
    backend: &'b dyn Backend,
    config: Config,
    core: Box<dyn Core>,
    now: u64,
    replies: VecDeque<Reply>,
    queue: VecDeque<Input>,
    /// Hold pre-step decisions instead of entering everything.
    pub hold_decisions: bool,
    /// Decisions held: `(decision id, claimed ids)`.
    pub decisions: Vec<(u64, Vec<String>)>,
    /// Tool calls held (`slow` and `wait` calls): `(call id, name, arguments)`.
    pub held_tools: Vec<(String, String, String)>,
    /// Every model request, in order.
    pub requests: Vec<ModelRequest>,
    /// The request id of a hanging stream.
    pub hanging: Option<u64>,
    /// Every retry delay asked for.
    pub retry_delays: Vec<u64>,
    /// Hold timers instead of firing them at once.
    pub hold_timers: bool,
    /// Timers held: `(timer id, delay)`.
    pub timers: Vec<(u64, u64)>,
    /// Refusals, as `code`.
    pub refusals: Vec<RefusalCode>,
    /// The log, as event JSON.
    pub log: Vec<String>,
    /// The log folded, as a host folds it: what the facts beside each new event must say.
    folded: crate::Durable,
    /// Events and status changes, one compact line each.
    pub transcript: Vec<String>,
}

impl<'b> Harness<'b> {
    /// A fresh session with [`config`].
    pub fn new(backend: &'b dyn Backend) -> Self {
        Self::with_config(backend, config())
    }

    /// A fresh session with this config.
    pub fn with_config(backend: &'b dyn Backend, config: Config) -> Self {
        Harness {
            core: backend.create(config.clone(), START),
            backend,
            config,
            now: START,
            replies: VecDeque::new(),
            queue: VecDeque::new(),
            hold_decisions: false,
            decisions: Vec::new(),
            held_tools: Vec::new(),
            requests: Vec::new(),
            hanging: None,
            retry_delays: Vec::new(),
            hold_timers: false,
            timers: Vec::new(),
            refusals: Vec::new(),
            log: Vec::new(),
            folded: crate::Durable::default(),
            transcript: Vec::new(),
        }
    }

    /// Queues scripted model replies, answered in order.
    pub fn script(&mut self, replies: impl IntoIterator<Item = Reply>) -> &mut Self {
        self.replies.extend(replies);
        self
    }

    /// Feeds one input, then answers whatever the core asked for until it waits on the test.
    pub fn input(&mut self, input: Input) -> &mut Self {
        self.queue.push_back(input);
        while let Some(input) = self.queue.pop_front() {
            self.now += 1;
            let outputs = self.core.handle(input, self.now);
            for output in outputs {
                self.perform(output);
            }
        }
        self
    }

    /// `followup`.
    pub fn followup(&mut self, id: &str, text: &str) -> &mut Self {
        self.input(Input::Send { message: user(id, text), target: Target::NextTurn, wakeup: true })
    }

    /// `steer`.
    pub fn steer(&mut self, id: &str, text: &str) -> &mut Self {
        self.input(Input::Send { message: user(id, text), target: Target::NextStep, wakeup: true })
    }

    /// `inject`.
    pub fn inject(&mut self, id: &str, text: &str) -> &mut Self {
        self.input(Input::Send { message: user(id, text), target: Target::NextStep, wakeup: false })
    }

    /// `cancel(user, keep_inbox)`.
    pub fn cancel(&mut self, keep_inbox: bool) -> &mut Self {
        self.input(Input::Cancel { cause: CancelCause::User, keep_inbox })
    }

    /// Answers the oldest held decision.
    pub fn decide(&mut self, decision: StepDecision) -> &mut Self {
        let (decision_id, _) = self.decisions.remove(0);
        self.input(Input::Decided { decision_id, decision })
    }

    /// Fires the oldest held timer.
    pub fn fire_timer(&mut self) -> &mut Self {
        let (timer_id, _) = self.timers.remove(0);
        self.input(Input::TimerFired(timer_id))
    }

    /// Finishes the oldest held tool call with `text`.
    pub fn finish_tool(&mut self, text: &str) -> &mut Self {
        let (call_id, _, _) = self.held_tools.remove(0);
        let content = vec![ContentBlock::Text { text: text.into() }];
        self.input(Input::ToolFinished(ToolOutcome {
            call_id,
            content,
            error_code: None,
            context: Vec::new(),
        }))
    }

    /// Answers a waiting call.
    pub fn answer(&mut self, call_id: &str, answer: CallAnswer) -> &mut Self {
        self.input(Input::Answer { call_id: call_id.into(), answer })
    }

    /// Rebuilds the core from the log so far (as after a crash) and gives it `recover`.
    pub fn restart(&mut self) -> &mut Self {
        self.core =
            self.backend.restore(self.config.clone(), None, &self.log).expect("log restores");
        self.transcript.push("-- restart".into());
        self.input(Input::Recover)
    }

    /// The host dropped the session from memory at rest and brought it back: a core restored
    /// from the log so far, not given `recover`.
    pub fn wake(&mut self) -> &mut Self {
        self.core =
            self.backend.restore(self.config.clone(), None, &self.log).expect("log restores");
        self.transcript.push("-- wake".into());
        self
    }

    /// The host dropped the core while its turn waited for people and brought it back from a
    /// snapshot and the waiting turn, as a gateway does with a session waiting for an approval.
    /// Held timers stay with the host, as a gateway's keep running.
    pub fn sleep_while_waiting(&mut self) -> &mut Self {
        let waiting = self.core.waiting_state().expect("the turn waits only for people");
        let snapshot = self.core.snapshot();
        let config = self.config.clone();
        self.core = (self.backend.wake_from(config, &snapshot, &[], &waiting))
            .expect("a waiting turn wakes from its snapshot");
        self
    }

    /// Whether the turn waits only for people ([`crate::Agent::waiting_state`]).
    pub fn waits_only_for_people(&self) -> bool {
        self.core.waiting_state().is_some()
    }

    /// A core restored from `snapshot` (taken when the log was `through` events long) and the
    /// events after it, without recovery: its own snapshot.
    pub fn restored_from(&self, snapshot: &str, through: usize) -> String {
        let tail = &self.log[through..];
        let core = self.backend.restore(self.config.clone(), Some(snapshot), tail);
        core.expect("snapshot and tail restore").snapshot()
    }

    /// A core restored from the log so far, without recovery.
    pub fn restored_snapshot(&self) -> String {
        self.backend.restore(self.config.clone(), None, &self.log).expect("log restores").snapshot()
    }

    /// The live core's durable state.
    pub fn snapshot(&self) -> String {
        self.core.snapshot()
    }

    /// Transcript lines from `from` on.
    pub fn since(&self, from: usize) -> Vec<&str> {
        self.transcript[from..].iter().map(String::as_str).collect()
    }

    /// The whole transcript.
    pub fn lines(&self) -> Vec<&str> {
        self.since(0)
    }

    /// Transcript lines that start with any of `prefixes`, in order.
    pub fn only(&self, prefixes: &[&str]) -> Vec<&str> {
        self.lines().into_iter().filter(|l| prefixes.iter().any(|p| l.starts_with(p))).collect()
    }

    fn perform(&mut self, output: Output) {
        match output {
            Output::AppendEvent(Appended { json, marks, at_rest }) => {
                let event: Value = serde_json::from_str(&json).expect("events are JSON");
                assert_eq!(event["seq"], self.log.len() as u64, "seqs are contiguous: {json}");
                // The facts beside an event are the log's own: what folding it says.
                let parsed = crate::Event::parse(&json).expect("the core's events parse");
                let expected = self.folded.append(&parsed.expect("the core logs no unknown type"));
                assert_eq!((marks, at_rest), (expected.marks, expected.at_rest), "facts of {json}");
                self.transcript.push(transcript::summarize(&event));
                self.log.push(json);
            }
            Output::Status(status) => self.transcript.push(format!(
                "status {}",
                serde_json::to_value(status).unwrap().as_str().unwrap()
            )),
            Output::DecideStep { decision_id, claimed, .. } => {
                let ids: Vec<String> = claimed.iter().map(|m| m.id.clone()).collect();
                if self.hold_decisions {
                    self.decisions.push((decision_id, ids));
                } else {
                    self.queue.push_back(Input::Decided {
                        decision_id,
                        decision: StepDecision::Enter(ids),
                    });
                }
            }
            Output::CallModel(request) => {
                let request_id = request.request_id;
                self.requests.push(request);
                let reply = self.replies.pop_front().unwrap_or(Reply::Text("(no script)"));
                self.play(request_id, reply);
            }
            Output::CallTool(call) => {
                if call.name == "echo" || call.name == "guarded" {
                    let text = format!("echo: {}", call.arguments);
                    let content = vec![ContentBlock::Text { text }];
                    self.queue.push_back(Input::ToolFinished(ToolOutcome {
                        call_id: call.call_id,
                        content,
                        error_code: None,
                        context: Vec::new(),
                    }));
                } else {
                    self.held_tools.push((call.call_id, call.name, call.arguments));
                }
            }
            Output::AbortModel(request_id) => {
                self.transcript.push(format!("abort request {request_id}"))
            }
            Output::Compacting(busy) => self.transcript.push(format!("compacting {busy}")),
            Output::Waiting(calls) => {
                let calls: Vec<String> = calls
                    .iter()
                    .map(|c| format!("{} {:?} since +{}", c.call_id, c.kind, c.since - START))
                    .collect();
                self.transcript.push(format!("waiting [{}]", calls.join(", ")));
            }
            Output::StartTimer { timer_id, delay_ms } if self.hold_timers => {
                self.timers.push((timer_id, delay_ms));
            }
            Output::StartTimer { timer_id, delay_ms } => {
                self.retry_delays.push(delay_ms);
                self.queue.push_back(Input::TimerFired(timer_id));
            }
            Output::Refused { code, .. } => self.refusals.push(code),
        }
    }

    fn play(&mut self, request_id: u64, reply: Reply) {
        if let Reply::Counted(input_tokens, reply) = reply {
            self.play(request_id, *reply);
            let usage = Usage { input_tokens, output_tokens: 1, ..Usage::default() };
            let chunk = Input::ModelChunk { request_id, chunk: StreamChunk::Usage { usage } };
            let before_finish = self.queue.len().saturating_sub(2);
            return self.queue.insert(before_finish, chunk);
        }
        let chunk = |chunk| Input::ModelChunk { request_id, chunk };
        let words = |text: &'static str| {
            text.split_inclusive(' ')
                .map(move |w| chunk(StreamChunk::TextDelta { index: 0, text: w.into() }))
                .collect::<Vec<_>>()
        };
        let finish = |reason| chunk(StreamChunk::Finish { reason });
        let inputs: Vec<Input> = match reply {
            Reply::Text(text) => {
                [words(text), vec![finish(FinishReason::Stop), Input::ModelDone(request_id)]]
                    .concat()
            }
            Reply::MaxTokens(text) => {
                [words(text), vec![finish(FinishReason::MaxTokens), Input::ModelDone(request_id)]]
                    .concat()
            }
            Reply::TruncatedCall(text) => {
                let call = StreamChunk::ToolCallDelta {
                    index: 0,
                    id: "cut".into(),
                    name: Some("echo".into()),
                    arguments_delta: "{\"te".into(),
                };
                [
                    words(text),
                    vec![
                        chunk(call),
                        finish(FinishReason::MaxTokens),
                        Input::ModelDone(request_id),
                    ],
                ]
                .concat()
            }
            Reply::Calls(calls) => {
                let mut inputs: Vec<Input> = calls
                    .into_iter()
                    .enumerate()
                    .map(|(index, (id, name, args))| {
                        chunk(StreamChunk::ToolCallDelta {
                            index: index as u32,
                            id: id.into(),
                            name: Some(name.into()),
                            arguments_delta: args.into(),
                        })
                    })
                    .collect();
                inputs.extend([finish(FinishReason::ToolCalls), Input::ModelDone(request_id)]);
                inputs
            }
            Reply::Hang(text) => {
                self.hanging = Some(request_id);
                words(text)
            }
            Reply::Fail(code, retry_after_ms) => {
                let error = ModelError {
                    code: code.into(),
                    message: format!("scripted {code}"),
                    status: None,
                    retry_after_ms,
                };
                vec![Input::ModelFailed { request_id, error }]
            }
            Reply::Counted(..) => unreachable!("played above"),
        };
        self.queue.extend(inputs);
    }
}
