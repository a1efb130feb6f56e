//! A wire's encoding of each message and of the tool list, made once and shared by every request
//! that sends it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use airlock_core::{Message, ModelError, ToolSpec};

/// Each message's encoding in one wire (`P`), made once and shared by every request that sends
/// it. A conversation grows by a message or two per step while each request sends all of it, so
/// encoding it whole every time made a long session's steps grow with its length.
///
/// The tool list is kept encoded as well, while requests keep offering the same tools.
///
/// Entries are keyed by the message's address and hold a [`Weak`] to it, which keeps that
/// address from being reused while the entry lives: an entry found for a live message is that
/// message's. Entries of dropped messages are swept when the map has doubled since the last
/// sweep.
pub(in crate::model) struct Encoded<P> {
    entries: Mutex<Entries<P>>,
    /// The last tool list and its encoding.
    tools: Mutex<Option<(Vec<ToolSpec>, Arc<str>)>>,
}

struct Entries<P> {
    by_address: HashMap<usize, (Weak<Message>, P)>,
    sweep_at: usize,
}

impl<P> Default for Encoded<P> {
    fn default() -> Self {
        let entries = Entries { by_address: HashMap::new(), sweep_at: 0 };
        Encoded { entries: Mutex::new(entries), tools: Mutex::default() }
    }
}

impl<P: Clone> Encoded<P> {
    /// Each message's encoding: kept, or made now by `encode`.
    pub(in crate::model) fn parts(
        &self,
        messages: &[Arc<Message>],
        encode: impl Fn(&Message) -> P,
    ) -> Vec<P> {
        let mut entries = self.entries.lock().expect("encoded messages lock");
        let parts = messages
            .iter()
            .map(|message| {
                let address = Arc::as_ptr(message) as usize;
                if let Some((_, part)) = entries.by_address.get(&address) {
                    return part.clone();
                }
                let part = encode(message);
                entries.by_address.insert(address, (Arc::downgrade(message), part.clone()));
                part
            })
            .collect();
        if entries.by_address.len() >= entries.sweep_at {
            entries.by_address.retain(|_, (message, _)| message.strong_count() > 0);
            entries.sweep_at = (2 * entries.by_address.len()).max(1024);
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
        let entries = self.entries.lock().map(|e| e.by_address.len()).unwrap_or_default();
        f.debug_struct("Encoded").field("messages", &entries).finish()
    }
}
