//! The tool calls that gave child sessions their work, remembered across every session's fold:
//! a child's turn started by a parent's call is a child of that call's span.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use opentelemetry::trace::SpanContext;

/// How many tool calls the fold remembers for the child sessions they start (oldest forgotten
/// first).
const REMEMBERED_CALLS: usize = 4096;

/// The contexts of the tool calls children were given work from, shared by every session's fold:
/// a child's turn started by a parent's call goes under that call's span.
#[derive(Default)]
pub struct Calls {
    by_id: HashMap<(Arc<str>, String), Parent>,
    order: VecDeque<(Arc<str>, String)>,
}

/// A call's span and the agent name its arguments gave the child, if any.
#[derive(Clone)]
pub(crate) struct Parent {
    pub span: SpanContext,
    pub name: Option<String>,
}

impl Calls {
    pub(crate) fn remember(&mut self, session: &Arc<str>, call_id: &str, parent: Parent) {
        let key = (session.clone(), call_id.to_owned());
        if self.by_id.insert(key.clone(), parent).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > REMEMBERED_CALLS {
            let oldest = self.order.pop_front().expect("not empty");
            self.by_id.remove(&oldest);
        }
    }

    pub(crate) fn get(&self, session: &str, call_id: &str) -> Option<&Parent> {
        self.by_id.get(&(Arc::from(session), call_id.to_owned()))
    }
}
