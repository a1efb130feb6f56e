//! A live session: its core instance, its log, and the work the core asked for.
//!
//! [`Session::feed`] hands one input to the core and performs the outputs in order: events are
//! appended to the log, the pre-step policy answers at once, model streams, tool calls and retry
//! timers run as tasks whose answers come back through [`Session::next_answer`]. If the core traps,
//! the instance is dropped, in-flight work is abandoned, and a fresh instance is rebuilt from the
//! log and given `recover`.

mod log;

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use airlock_core::{Config, Input, Output, Status, StepDecision, ToolOutcome};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};

pub use log::{LogError, MemoryLog, SessionLog, seq_of};

use crate::core_host::{CoreError, CoreHost, WasmCore};
use crate::model::ModelProvider;
use crate::tools::ToolRegistry;

/// Why a session could not go on.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The core trapped on this input; the session was rebuilt from its log and the input lost.
    #[error(
        "{0}; the session was rebuilt from its log and this input was not applied, so send it again"
    )]
    Trapped(CoreError),
    /// The core trapped again while recovering: the core itself is broken.
    #[error("the core trapped again while recovering from its log ({0}); the core build is faulty")]
    Broken(CoreError),
    /// The core could not be created or restored.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// The log refused an event.
    #[error(transparent)]
    Log(#[from] LogError),
}

/// An input the core refused, with its reason.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    /// `unknown-message`, `duplicate-message-id`, `not-queued` or `bad-input`.
    pub code: String,
    /// What was wrong.
    pub message: String,
}

/// Milliseconds since the epoch: the only clock, read by the host, handed to the core.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// An input from a task, tagged with the instance generation it was started for.
type Answer = (u64, Input);

/// One session and everything in flight for it.
pub struct Session {
    host: Arc<CoreHost>,
    config: Config,
    core: WasmCore,
    log: Box<dyn SessionLog>,
    model: Arc<dyn ModelProvider>,
    tools: ToolRegistry,
    status: Status,
    /// Answers from tasks, tagged with the instance generation they were started for.
    answers: (mpsc::UnboundedSender<Answer>, mpsc::UnboundedReceiver<Answer>),
    generation: u64,
    tasks: JoinSet<()>,
    streams: BTreeMap<u64, AbortHandle>,
}

impl Session {
    /// A fresh session whose config offers the model every tool of `tools`.
    pub fn create(
        host: Arc<CoreHost>,
        mut config: Config,
        model: Arc<dyn ModelProvider>,
        tools: ToolRegistry,
        log: Box<dyn SessionLog>,
    ) -> Result<Session, SessionError> {
        config.tools = tools.specs();
        let core = host.create(&config, now_ms())?;
        Ok(Session {
            host,
            config,
            core,
            log,
            model,
            tools,
            status: Status::Idle,
            answers: mpsc::unbounded_channel(),
            generation: 0,
            tasks: JoinSet::new(),
            streams: BTreeMap::new(),
        })
    }

    /// Whole-agent status.
    pub fn status(&self) -> Status {
        self.status
    }

    /// The log so far.
    pub fn events(&self) -> &[String] {
        self.log.events()
    }

    /// The core instance (for tests that need to reach into it, e.g. to lower its fuel).
    pub fn core_mut(&mut self) -> &mut WasmCore {
        &mut self.core
    }

    /// Feeds one input and performs what the core asks for. Returns the core's refusals.
    pub async fn feed(&mut self, input: Input) -> Result<Vec<Refusal>, SessionError> {
        let mut queue = VecDeque::from([input]);
        let mut refusals = Vec::new();
        let mut trapped = None;
        while let Some(input) = queue.pop_front() {
            let outputs = match self.core.handle(input, now_ms()) {
                Ok(outputs) => outputs,
                Err(error) if trapped.is_none() => {
                    self.rebuild()?;
                    trapped = Some(error);
                    queue = VecDeque::from([Input::Recover]);
                    continue;
                }
                Err(error) => return Err(SessionError::Broken(error)),
            };
            for output in outputs {
                self.perform(output, &mut queue, &mut refusals)?;
            }
        }
        match trapped {
            Some(error) => Err(SessionError::Trapped(error)),
            None => Ok(refusals),
        }
    }

    /// Waits for the next answer from a task started for the current instance.
    pub async fn next_answer(&mut self) -> Input {
        loop {
            let (generation, input) =
                self.answers.1.recv().await.expect("the session holds a sender");
            while self.tasks.try_join_next().is_some() {}
            if generation != self.generation {
                continue; // started for an instance that trapped
            }
            if let Input::ModelDone(id) | Input::ModelFailed { request_id: id, .. } = &input {
                self.streams.remove(id);
            }
            return input;
        }
    }

    /// Feeds answers until the agent is idle.
    pub async fn run_until_idle(&mut self) -> Result<(), SessionError> {
        while self.status == Status::Running {
            let answer = self.next_answer().await;
            self.feed(answer).await?;
        }
        Ok(())
    }

    fn perform(
        &mut self,
        output: Output,
        queue: &mut VecDeque<Input>,
        refusals: &mut Vec<Refusal>,
    ) -> Result<(), SessionError> {
        match output {
            Output::AppendEvent(event) => {
                self.log.append(event)?;
            }
            Output::Status(status) => self.status = status,
            Output::DecideStep { decision_id, claimed, .. } => {
                // The default pre-step policy: enter everything claimed.
                let ids = claimed.into_iter().map(|m| m.id).collect();
                queue.push_back(Input::Decided { decision_id, decision: StepDecision::Enter(ids) });
            }
            Output::CallModel(request) => {
                let request_id = request.request_id;
                let mut stream = self.model.stream(request);
                let send = self.sender();
                let handle = self.tasks.spawn(async move {
                    while let Some(item) = stream.next().await {
                        match item {
                            Ok(chunk) => send(Input::ModelChunk { request_id, chunk }),
                            Err(error) => return send(Input::ModelFailed { request_id, error }),
                        }
                    }
                    send(Input::ModelDone(request_id));
                });
                self.streams.insert(request_id, handle);
            }
            Output::CallTool(call) => {
                let running = self.tools.call(&call.name, &call.arguments);
                let send = self.sender();
                self.tasks.spawn(async move {
                    let output = running.await;
                    let outcome = ToolOutcome {
                        call_id: call.call_id,
                        content: output.content,
                        error_code: output.error_code,
                        context: Vec::new(),
                    };
                    send(Input::ToolFinished(outcome));
                });
            }
            Output::AbortModel(request_id) => {
                if let Some(handle) = self.streams.remove(&request_id) {
                    handle.abort();
                }
            }
            Output::RetryAfter { timer_id, delay_ms } => {
                let send = self.sender();
                self.tasks.spawn(async move {
                    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                    send(Input::RetryTimer(timer_id));
                });
            }
            Output::Refused { code, message } => refusals.push(Refusal { code, message }),
        }
        Ok(())
    }

    /// A cheap callback for a task to answer the current instance.
    fn sender(&self) -> impl Fn(Input) + Send + 'static {
        let (tx, generation) = (self.answers.0.clone(), self.generation);
        move |input| {
            let _ = tx.send((generation, input)); // the session is gone: nobody to tell
        }
    }

    /// Replaces a trapped instance with one rebuilt from the log; in-flight work is abandoned.
    fn rebuild(&mut self) -> Result<(), SessionError> {
        self.generation += 1;
        self.tasks.abort_all();
        self.streams.clear();
        self.core = self.host.restore(&self.config, self.log.events())?;
        self.status = Status::Idle;
        Ok(())
    }
}
