//! The effects a commit starts: model streams, tool calls and retry timers run as tasks whose
//! answers come back through [`Session::next_answer`], tagged with the instance generation they
//! were started for.

use std::time::Duration;

use airlock_core::{Input, Output, ToolOutcome};
use futures::StreamExt;

use super::Session;
use crate::tools::ToolContext;

impl Session {
    /// Starts the work the committed outputs ask for.
    pub(super) fn start_effects(&mut self, outputs: Vec<Output>) {
        for output in outputs {
            match output {
                Output::CallModel(request) => {
                    let request_id = request.request_id;
                    let mut stream = self.model.stream(request);
                    let send = self.sender();
                    let handle = self.tasks.spawn(async move {
                        while let Some(item) = stream.next().await {
                            match item {
                                Ok(chunk) => send(Input::ModelChunk { request_id, chunk }),
                                Err(error) => {
                                    return send(Input::ModelFailed { request_id, error });
                                }
                            }
                        }
                        send(Input::ModelDone(request_id));
                    });
                    self.streams.insert(request_id, handle);
                }
                Output::CallTool(call) => {
                    let context = ToolContext {
                        session_id: self.config.session_id.clone(),
                        cancelled: self.cancel.subscribe(),
                    };
                    let running = self.tools.call(&call.name, context, &call.arguments);
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
                Output::AppendEvent(_)
                | Output::Status(_)
                | Output::DecideStep { .. }
                | Output::Refused { .. } => {}
            }
        }
    }

    /// A cheap callback for a task to answer the current instance.
    fn sender(&self) -> impl Fn(Input) + Send + 'static {
        let (tx, generation) = (self.answers.0.clone(), self.generation);
        move |input| {
            let _ = tx.send(Box::new((generation, input))); // the session is gone: nobody to tell
        }
    }
}
