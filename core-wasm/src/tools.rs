//! One step's tool calls: which to dispatch next, and which results may be committed.
//!
//! Parallel-safe calls run together (at most [`MAX_PARALLEL`] at once); any other call runs alone.
//! Results are committed in the order the model asked for them, whatever order they finish in.

use crate::io::ToolSpec;
use crate::wire::ContentBlock;

/// The most calls running at once.
pub const MAX_PARALLEL: usize = 10;

/// What a call is doing.
#[derive(Debug)]
pub enum CallState {
    /// Not dispatched yet.
    Waiting,
    /// Dispatched; the host owes a result.
    Running,
    /// Finished, not yet committed.
    Done {
        /// The result content.
        content: Vec<ContentBlock>,
        /// Set on failure.
        error_code: Option<String>,
    },
    /// Its `tool/result` is logged.
    Committed,
}

/// A tool call of the step.
#[derive(Debug)]
pub struct Call {
    /// The model's call id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// The raw argument text.
    pub arguments: String,
    /// Progress.
    pub state: CallState,
}

/// The calls of one step, in model order.
#[derive(Debug)]
pub struct ToolBatch {
    /// The calls.
    pub calls: Vec<Call>,
    /// Context messages the results carried, spliced in after the batch.
    pub context: Vec<crate::wire::Message>,
}

impl ToolBatch {
    /// A batch of `(id, name, arguments)` calls.
    pub fn new(calls: Vec<(String, String, String)>) -> Self {
        let calls = calls
            .into_iter()
            .map(|(id, name, arguments)| Call { id, name, arguments, state: CallState::Waiting })
            .collect();
        ToolBatch { calls, context: Vec::new() }
    }

    /// Marks the next group as running and returns their indexes: a run of parallel-safe calls
    /// (unknown tools count as such: they never reach the host), or one exclusive call. Nothing
    /// while a call is running.
    pub fn next_group(&mut self, specs: &[ToolSpec]) -> Vec<usize> {
        if self.calls.iter().any(|c| matches!(c.state, CallState::Running)) {
            return Vec::new();
        }
        let parallel =
            |name: &str| specs.iter().find(|s| s.name == name).is_none_or(|s| s.parallel_safe);
        let mut group = Vec::new();
        for (index, call) in self.calls.iter().enumerate() {
            if !matches!(call.state, CallState::Waiting) {
                continue;
            }
            let alone = !parallel(&call.name);
            if alone && !group.is_empty() || group.len() == MAX_PARALLEL {
                break;
            }
            group.push(index);
            if alone {
                break;
            }
        }
        for &index in &group {
            self.calls[index].state = CallState::Running;
        }
        group
    }

    /// Records a running call's result; `false` when no running call has that id.
    pub fn finish(
        &mut self,
        id: &str,
        content: Vec<ContentBlock>,
        error_code: Option<String>,
    ) -> bool {
        match self.calls.iter_mut().find(|c| c.id == id && matches!(c.state, CallState::Running)) {
            Some(call) => {
                call.state = CallState::Done { content, error_code };
                true
            }
            None => false,
        }
    }

    /// Answers a call the host never saw (unknown tool, cancelled before dispatch) with an error.
    pub fn answer(&mut self, index: usize, content: Vec<ContentBlock>, code: &str) {
        self.calls[index].state = CallState::Done { content, error_code: Some(code.into()) };
    }

    /// Takes the results that can be committed now (a finished prefix in model order).
    pub fn committable(&mut self) -> Vec<(usize, Vec<ContentBlock>, Option<String>)> {
        let mut ready = Vec::new();
        for (index, call) in self.calls.iter_mut().enumerate() {
            match std::mem::replace(&mut call.state, CallState::Committed) {
                CallState::Committed => {}
                CallState::Done { content, error_code } => ready.push((index, content, error_code)),
                other => {
                    call.state = other;
                    break;
                }
            }
        }
        ready
    }

    /// Indexes of calls not dispatched yet.
    pub fn waiting(&self) -> Vec<usize> {
        (0..self.calls.len())
            .filter(|&i| matches!(self.calls[i].state, CallState::Waiting))
            .collect()
    }

    /// Whether every result is committed.
    pub fn all_committed(&self) -> bool {
        self.calls.iter().all(|c| matches!(c.state, CallState::Committed))
    }
}
