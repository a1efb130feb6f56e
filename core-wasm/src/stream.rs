//! Builds an assistant message from the stream chunks of one model response.

use crate::wire::{ContentBlock, FinishReason, StreamChunk, Usage};

/// A model response put together from its chunks.
#[derive(Debug, Default)]
pub struct Assembled {
    /// Blocks in order of their first delta; empty text (and empty reasoning with no signature)
    /// is left out.
    pub content: Vec<ContentBlock>,
    /// The last usage chunk.
    pub usage: Option<Usage>,
    /// The last finish chunk.
    pub finish: Option<FinishReason>,
}

#[derive(PartialEq)]
enum Slot {
    Text(u32),
    Reasoning(u32),
    Call(u32),
}

/// Joins the deltas of one response.
pub fn assemble<'a>(chunks: impl IntoIterator<Item = &'a StreamChunk>) -> Assembled {
    let mut out = Assembled::default();
    let mut slots: Vec<Slot> = Vec::new();
    for chunk in chunks {
        let (slot, fresh) = match chunk {
            StreamChunk::TextDelta { index, text } => {
                (Slot::Text(*index), ContentBlock::Text { text: text.clone() })
            }
            StreamChunk::ReasoningDelta { index, text, signature } => (
                Slot::Reasoning(*index),
                ContentBlock::Reasoning { text: text.clone(), signature: signature.clone() },
            ),
            StreamChunk::ToolCallDelta { index, id, name, arguments_delta } => (
                Slot::Call(*index),
                ContentBlock::ToolCall {
                    id: id.clone(),
                    name: name.clone().unwrap_or_default(),
                    arguments: arguments_delta.clone(),
                },
            ),
            StreamChunk::Usage { usage } => {
                out.usage = Some(usage.clone());
                continue;
            }
            StreamChunk::Finish { reason } => {
                out.finish = Some(*reason);
                continue;
            }
        };
        match slots.iter().position(|s| *s == slot) {
            Some(at) => extend(&mut out.content[at], fresh),
            None => {
                slots.push(slot);
                out.content.push(fresh);
            }
        }
    }
    out.content.retain(|block| match block {
        ContentBlock::Text { text } => !text.is_empty(),
        ContentBlock::Reasoning { text, signature } => !text.is_empty() || signature.is_some(),
        _ => true,
    });
    out
}

fn extend(block: &mut ContentBlock, more: ContentBlock) {
    match (block, more) {
        (ContentBlock::Text { text }, ContentBlock::Text { text: more }) => text.push_str(&more),
        (
            ContentBlock::Reasoning { text, signature },
            ContentBlock::Reasoning { text: more, signature: more_signature },
        ) => {
            text.push_str(&more);
            if let Some(more) = more_signature {
                signature.get_or_insert_default().push_str(&more);
            }
        }
        (
            ContentBlock::ToolCall { id, name, arguments },
            ContentBlock::ToolCall { id: more_id, name: more_name, arguments: more_args },
        ) => {
            if id.is_empty() {
                *id = more_id;
            }
            if name.is_empty() {
                *name = more_name;
            }
            arguments.push_str(&more_args);
        }
        _ => {}
    }
}

/// Drops tool-call blocks: a truncated or half-streamed call is never run.
pub fn without_tool_calls(content: Vec<ContentBlock>) -> Vec<ContentBlock> {
    content.into_iter().filter(|b| !matches!(b, ContentBlock::ToolCall { .. })).collect()
}
