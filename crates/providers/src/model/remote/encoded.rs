//! A wire's encoding of each message and of the tool list, made once and shared by every request
//! that sends it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use airlock_core::{Message, ModelError, ToolSpec};

/// Each message's encoding in one wire (`P`), made once and shared by every request that sends
/// it. A conversation grows by a message or two per step while each request sends all of it, so
/// encoding it whole every time made a long session's steps grow with its length.
///
/// What is kept is each conversation's last request: its messages and their parts, in order,
/// under the address of its first message. A request that continues it reuses the parts of the
/// messages it shares with it (found by walking both lists, not by looking each message up) and
/// encodes only the messages after them; a compaction (a new first message) or a rebuilt core
/// (new messages) starts a new conversation. Each kept message is held by a [`Weak`], which
/// keeps its address from being reused while the entry lives, so a message found at the same
/// address is the same message. Conversations whose first message is gone are swept when their
/// count has doubled since the last sweep.
///
/// The tool list is kept encoded as well, while requests keep offering the same tools.
pub(in crate::model) struct Encoded<P> {
    conversations: Mutex<Conversations<P>>,
    /// The last tool list and its encoding.
    tools: Mutex<Option<(Vec<ToolSpec>, Arc<str>)>>,
}

struct Conversations<P> {
    /// By the address of the conversation's first message: its messages and their parts.
    by_first: HashMap<usize, Vec<(Weak<Message>, P)>>,
    sweep_at: usize,
}

impl<P> Default for Encoded<P> {
    fn default() -> Self {
        let conversations = Conversations { by_first: HashMap::new(), sweep_at: 0 };
        Encoded { conversations: Mutex::new(conversations), tools: Mutex::default() }
    }
}

impl<P: Clone> Encoded<P> {
    /// Each message's encoding: kept from the conversation's last request, or made now by
    /// `encode`.
    pub(in crate::model) fn parts(
        &self,
        messages: &[Arc<Message>],
        encode: impl Fn(&Message) -> P,
    ) -> Vec<P> {
        let Some(first) = messages.first() else { return Vec::new() };
        let mut conversations = self.conversations.lock().expect("encoded messages lock");
        let kept = conversations.by_first.entry(Arc::as_ptr(first) as usize).or_default();
        let same = |(held, _): &(Weak<Message>, P), message: &Arc<Message>| {
            std::ptr::eq(held.as_ptr(), Arc::as_ptr(message))
        };
        let shared = kept.iter().zip(messages).take_while(|(k, m)| same(k, m)).count();
        kept.truncate(shared);
        kept.extend(messages[shared..].iter().map(|m| (Arc::downgrade(m), encode(m))));
        let parts = kept.iter().map(|(_, part)| part.clone()).collect();
        if conversations.by_first.len() >= conversations.sweep_at {
            let by_first = &mut conversations.by_first;
            by_first.retain(|_, kept| kept.first().is_some_and(|(m, _)| m.strong_count() > 0));
            conversations.sweep_at = (2 * by_first.len()).max(64);
        }
        parts
    }

    /// `tools` encoded: kept while the list is the same, or made now by `encode`.
    pub(in crate::model) fn tools(
        &self,
        tools: &[ToolSpec],
        encode: impl FnOnce(&[ToolSpec]) -> Result<String, ModelError>,
    ) -> Result<Arc<str>, ModelError> {
        let mut last = self.tools.lock().expect("encoded tools lock");
        if let Some((specs, json)) = &*last
            && specs == tools
        {
            return Ok(json.clone());
        }
        let json: Arc<str> = encode(tools)?.into();
        *last = Some((tools.to_vec(), json.clone()));
        Ok(json)
    }
}

impl<P> std::fmt::Debug for Encoded<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.conversations.lock().map(|c| c.by_first.len()).unwrap_or_default();
        f.debug_struct("Encoded").field("conversations", &kept).finish()
    }
}
