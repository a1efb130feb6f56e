//! The effects a commit starts: model streams, tool calls and retry timers run as tasks whose
//! answers come back through [`Session::next_answers`], tagged with the instance generation they
//! were started for.

use std::time::Duration;

use airlock_core::{Input, Output, Status, ToolOutcome};
use futures::{FutureExt, StreamExt};

use tokio::time::Instant;

use super::chunks::{self, Pending};
use super::{Answer, Session, measure};
use airlock_providers::tools::ToolContext;
use airlock_store::{Hook, Spent};

impl Session {
    /// Starts the model streams that `outputs` ask for, taking them out, before those outputs are
    /// committed: the request travels while the log syncs. A request changes nothing outside the
    /// session, and its answers are fed only once the commit is done (the actor takes them after
    /// it); a commit that fails rebuilds the instance, which aborts the stream. Everything else
    /// waits for the commit ([`Session::start_effects`]).
    pub(super) fn start_model_streams(&mut self, outputs: &mut Vec<Output>) {
        for output in outputs.extract_if(.., |output| matches!(output, Output::CallModel(_))) {
            if let Output::CallModel(request) = output {
                self.start_model_stream(request);
            }
        }
    }

    /// Streams the model's answer to `request`, passing what arrived together on as one batch,
    /// at most one batch per [`chunks::WINDOW`], its text merged ([`chunks`]).
    fn start_model_stream(&mut self, request: airlock_core::ModelRequest) {
        let request_id = request.request_id;
        // The core routes only to the models its config names, which are these.
        let model = &self.models[(request.route as usize).min(self.models.len() - 1)];
        let mut call = measure::ModelCall::start(self.id(), model.provider(), model.model());
        let mut stream = model.stream(request);
        let send_all = self.batch_sender();
        let handle = self.tasks.spawn(async move {
            let mut pending = Pending::default();
            let mut window_ends = Instant::now();
            loop {
                let item = if pending.is_empty() {
                    stream.next().await
                } else {
                    tokio::select! {
                        item = stream.next() => item,
                        _ = tokio::time::sleep_until(window_ends) => {
                            send_all(pending.take());
                            window_ends = Instant::now() + chunks::WINDOW;
                            continue;
                        }
                    }
                };
                // What else has arrived (the rest of one read, often up to the end) goes along:
                // one commit for all of it, not one per chunk.
                call.saw(&item);
                let mut ended = pending.push(request_id, item);
                while !ended && let Some(item) = arrived(&mut stream).await {
                    call.saw(&item);
                    ended = pending.push(request_id, item);
                }
                if ended {
                    return send_all(pending.take());
                }
                if pending.full() || Instant::now() >= window_ends {
                    send_all(pending.take());
                    window_ends = Instant::now() + chunks::WINDOW;
                }
            }
        });
        self.streams.insert(request_id, handle);
    }

    /// Starts the work the committed outputs ask for (their model streams are started already).
    pub(super) fn start_effects(&mut self, outputs: Vec<Output>) {
        for output in outputs {
            match output {
                Output::CallTool(call) => {
                    let context = ToolContext {
                        session_id: self.config.session_id.clone(),
                        call_id: call.call_id.clone(),
                        cancelled: self.cancel.subscribe(),
                        workspace: self.workspace.clone(),
                    };
                    let running = self.tools.call(&call.name, context, &call.arguments);
                    let send = self.sender();
                    let session_id = self.config.session_id.clone();
                    self.tasks.spawn(async move {
                        let started = Instant::now();
                        let output = running.await;
                        let code = output.error_code.as_deref();
                        measure::tool_call(&session_id, &call.name, started, code);
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
                Output::StartTimer { timer_id, delay_ms } => {
                    let send = self.sender();
                    self.timers.retain(|timer| !timer.is_finished());
                    self.timers.push(self.tasks.spawn(async move {
                        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                        send(Input::TimerFired(timer_id));
                    }));
                }
                // Timers only matter to a running turn: an idle agent ignores them.
                Output::Status(Status::Idle) => {
                    self.timers.drain(..).for_each(|timer| timer.abort());
                }
                Output::Compacting(busy) => self.compacting = busy,
                Output::CallModel(_)
                | Output::Waiting(_)
                | Output::AppendEvent(_)
                | Output::Status(_)
                | Output::DecideStep { .. }
                | Output::Refused { .. } => {}
            }
        }
    }

    /// A cheap callback for a task to answer the current instance.
    fn sender(&self) -> impl Fn(Input) + Send + 'static {
        let send_all = self.batch_sender();
        move |input| send_all(vec![input])
    }

    /// [`Session::sender`] for answers that arrived together, to be committed together.
    fn batch_sender(&self) -> impl Fn(Vec<Input>) + Send + 'static {
        let (tx, generation) = (self.answers.0.clone(), self.generation);
        move |inputs| {
            let _ = tx.send((generation, inputs)); // the session is gone: nobody to tell
        }
    }

    /// Waits for the next answers from a task started for the current instance: one, or
    /// several that arrived together.
    pub async fn next_answers(&mut self) -> Vec<Input> {
        loop {
            let answer = self.answers.1.recv().await.expect("the session holds a sender");
            if let Some(inputs) = self.current(answer) {
                return inputs;
            }
        }
    }

    /// The answers that have already arrived (about `max`: a task's batch is not split),
    /// without waiting.
    pub fn ready_answers(&mut self, max: usize) -> Vec<Input> {
        let mut ready = Vec::new();
        while ready.len() < max {
            let Ok(answer) = self.answers.1.try_recv() else { break };
            ready.extend(self.current(answer).into_iter().flatten());
        }
        ready
    }

    /// The inputs of an answer meant for the current instance (not one that trapped).
    fn current(&mut self, (generation, inputs): Answer) -> Option<Vec<Input>> {
        while self.tasks.try_join_next().is_some() {}
        if generation != self.generation {
            return None;
        }
        for input in &inputs {
            if let Input::ModelDone(id) | Input::ModelFailed { request_id: id, .. } = input {
                self.streams.remove(id);
            }
        }
        Some(inputs)
    }
}

/// The stream's next item if it has arrived already, without waiting for the network. The
/// connection's own task hands a response over one frame at a time, each when the last was
/// taken, so it gets one turn of the scheduler first.
async fn arrived<S: futures::Stream + Unpin>(stream: &mut S) -> Option<Option<S::Item>> {
    tokio::task::yield_now().await;
    stream.next().now_or_never()
}

/// What one feed produced, before it is committed.
#[derive(Default)]
pub(super) struct Batch {
    pub(super) outputs: Vec<Output>,
    /// How many of them append an event.
    events: usize,
    /// What the responses its events log spent.
    pub(super) spent: Vec<Spent>,
    /// What webhooks may report of its events' turn ends.
    pub(super) hooks: Vec<Hook>,
}

impl Batch {
    pub(super) fn push(&mut self, output: Output) {
        self.events += usize::from(matches!(output, Output::AppendEvent(_)));
        self.outputs.push(output);
    }

    /// How many events it appends.
    pub(super) fn events(&self) -> usize {
        self.events
    }
}
