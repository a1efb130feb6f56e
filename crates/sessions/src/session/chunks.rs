//! A model stream's answers on their way to the core, coalesced: text that arrives within one
//! [`WINDOW`] becomes one chunk (one `assistant/chunk` event), so a chatty provider cannot turn a
//! step into thousands of log rows. The first chunk after a quiet spell goes at once; a batch
//! also goes once it holds [`MAX_BYTES`], and the stream's end goes with whatever is pending.

use std::time::Duration;

use airlock_core::{Input, StreamChunk};

/// At most one batch of a stream's chunks per this long.
pub const WINDOW: Duration = Duration::from_millis(50);

/// A batch this big goes before its window is over.
pub const MAX_BYTES: u64 = 4096;

/// Answers of one model request that have arrived but are not fed yet.
#[derive(Default)]
pub struct Pending {
    inputs: Vec<Input>,
    bytes: u64,
}

impl Pending {
    /// Adds what the stream yielded (`None`: it ended); answers whether that ends the stream.
    pub fn push(
        &mut self,
        request_id: u64,
        item: Option<Result<StreamChunk, airlock_core::ModelError>>,
    ) -> bool {
        let chunk = match item {
            Some(Ok(chunk)) => chunk,
            Some(Err(error)) => {
                self.inputs.push(Input::ModelFailed { request_id, error });
                return true;
            }
            None => {
                self.inputs.push(Input::ModelDone(request_id));
                return true;
            }
        };
        self.bytes += chunk.output_bytes();
        if let Some(Input::ModelChunk { chunk: last, .. }) = self.inputs.last_mut()
            && merge(last, &chunk)
        {
            return false;
        }
        self.inputs.push(Input::ModelChunk { request_id, chunk });
        false
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty()
    }

    /// Whether it should go without waiting for its window to end.
    pub fn full(&self) -> bool {
        self.bytes >= MAX_BYTES
    }

    /// Everything pending, in order.
    pub fn take(&mut self) -> Vec<Input> {
        self.bytes = 0;
        std::mem::take(&mut self.inputs)
    }
}

/// Appends `next` to `last` when both continue the same block; answers whether it did.
fn merge(last: &mut StreamChunk, next: &StreamChunk) -> bool {
    match (last, next) {
        (
            StreamChunk::TextDelta { index, text },
            StreamChunk::TextDelta { index: next_index, text: more },
        )
        | (
            StreamChunk::ReasoningDelta { index, text, signature: None },
            StreamChunk::ReasoningDelta { index: next_index, text: more, signature: None },
        ) if index == next_index => {
            text.push_str(more);
            true
        }
        (
            StreamChunk::ToolCallDelta { index, id, arguments_delta, .. },
            StreamChunk::ToolCallDelta {
                index: next_index,
                id: next_id,
                name: None,
                arguments_delta: more,
            },
        ) if index == next_index && id == next_id => {
            arguments_delta.push_str(more);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use airlock_core::FinishReason;

    use super::*;

    fn text(index: u32, text: &str) -> Option<Result<StreamChunk, airlock_core::ModelError>> {
        Some(Ok(StreamChunk::TextDelta { index, text: text.into() }))
    }

    #[test]
    fn deltas_of_one_block_merge_and_anything_else_stays_apart() {
        let mut pending = Pending::default();
        for item in [text(0, "Hel"), text(0, "lo"), text(1, "!")] {
            assert!(!pending.push(7, item));
        }
        let finish = StreamChunk::Finish { reason: FinishReason::Stop };
        assert!(!pending.push(7, Some(Ok(finish.clone()))));
        assert!(pending.push(7, None), "the end ends the stream");
        let chunk = |chunk| Input::ModelChunk { request_id: 7, chunk };
        assert_eq!(
            pending.take(),
            [
                chunk(StreamChunk::TextDelta { index: 0, text: "Hello".into() }),
                chunk(StreamChunk::TextDelta { index: 1, text: "!".into() }),
                chunk(finish),
                Input::ModelDone(7),
            ]
        );
        assert!(pending.is_empty());
    }

    #[test]
    fn a_tool_calls_argument_deltas_merge_until_another_call_starts() {
        let call = |id: &str, name: Option<&str>, args: &str| {
            Some(Ok(StreamChunk::ToolCallDelta {
                index: 0,
                id: id.into(),
                name: name.map(Into::into),
                arguments_delta: args.into(),
            }))
        };
        let mut pending = Pending::default();
        pending.push(1, call("a", Some("echo"), "{\"te"));
        pending.push(1, call("a", None, "xt\":1}"));
        pending.push(1, call("b", Some("echo"), "{}"));
        let inputs = pending.take();
        assert_eq!(inputs.len(), 2);
        let Input::ModelChunk { chunk: StreamChunk::ToolCallDelta { arguments_delta, .. }, .. } =
            &inputs[0]
        else {
            panic!("{inputs:?}")
        };
        assert_eq!(arguments_delta, "{\"text\":1}");
    }

    #[test]
    fn a_batch_is_full_at_max_bytes() {
        let mut pending = Pending::default();
        pending.push(1, text(0, &"x".repeat(MAX_BYTES as usize - 1)));
        assert!(!pending.full());
        pending.push(1, text(0, "y"));
        assert!(pending.full());
        pending.take();
        assert!(!pending.full());
    }
}
