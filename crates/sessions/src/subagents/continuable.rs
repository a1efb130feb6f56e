//! Continuable subagents: children a parent keeps talking to.
//!
//! - `spawn_agent {name?, prompt}` creates a child, logs its `subagent/descriptor` before its first
//!   turn, and answers `{childId, messageId}` as soon as the child's inbox accepted the prompt.
//! - `send_message {subagent_id, message}` queues a followup in the child (its next turn, never
//!   steering). Only the exact direct parent may; a child not in memory is brought back from its
//!   log first.
//! - `interrupt_agent {subagent_id}` cancels the child's turn, keeping its inbox.
//! - `list_agents {}` lists the caller's children with their status.
//!
//! When a child settles (whole-agent idle after its work) the parent gets exactly one notice
//! message: a followup when the parent is idle, steering when it is running, an inject (for its
//! next turn) when the gateway is stopping. Work sent to a child while it runs is covered by the
//! same notice, and so is work a restart interrupted: see [`super::settlement`].
//!
//! A continuable child needs durable storage: a child's result must survive its parent's
//! process, so spawning fails with `DURABILITY_FAILED` when the store's flush reaches no
//! durable file (an in-memory store), and so does a settlement.

use std::sync::{Arc, Weak};

use airlock_core::{CancelCause, HostEvent, Input, Status, ToolSpec};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::Settlements;
use crate::actor::SessionHandle;
use crate::registry::Registry;
use crate::session::Notice;
use airlock_providers::tools::{Tool, ToolContext, ToolFuture, ToolOutput};

/// The version of the `subagent/descriptor` this gateway writes.
const DESCRIPTOR_VERSION: u32 = 1;

/// What the four tools share: the registry, and the settlements of its children.
pub struct Continuable {
    registry: Weak<Registry>,
    settlements: Arc<Settlements>,
}

impl Continuable {
    /// The four tools, sharing one state.
    pub fn tools(registry: Weak<Registry>, settlements: Arc<Settlements>) -> Vec<Arc<dyn Tool>> {
        let shared = Arc::new(Continuable { registry, settlements });
        vec![
            Arc::new(SpawnAgent(shared.clone())),
            Arc::new(SendMessage(shared.clone())),
            Arc::new(InterruptAgent(shared.clone())),
            Arc::new(ListAgents(shared)),
        ]
    }

    fn registry(&self) -> Result<Arc<Registry>, ToolOutput> {
        self.registry
            .upgrade()
            .ok_or_else(|| ToolOutput::error("SUBAGENT_FAILED", "the gateway is shutting down"))
    }

    /// The child `subagent_id` of the caller, live: refused unless the caller is its exact
    /// direct parent and it is continuable.
    async fn child_of(
        registry: &Registry,
        parent_id: &str,
        subagent_id: &str,
    ) -> Result<SessionHandle, ToolOutput> {
        let unknown = || {
            ToolOutput::error(
                "DENIED",
                format!(
                    "no subagent {subagent_id:?} belongs to this session; list_agents shows yours"
                ),
            )
        };
        let row = match registry.store().session(subagent_id).await {
            Ok(Some(row)) => row,
            Ok(None) => return Err(unknown()),
            Err(e) => return Err(ToolOutput::error("SUBAGENT_FAILED", e.to_string())),
        };
        if row.parent_session_id.as_deref() != Some(parent_id) {
            return Err(ToolOutput::error(
                "DENIED",
                format!("only the session that spawned subagent {subagent_id:?} may message it"),
            ));
        }
        if !is_continuable(registry, subagent_id).await {
            return Err(ToolOutput::error(
                "DENIED",
                format!(
                    "subagent {subagent_id:?} was a one-shot `agent` run and takes no more messages; spawn_agent makes one that does"
                ),
            ));
        }
        registry
            .resume(subagent_id)
            .await
            .map_err(|e| ToolOutput::error("SUBAGENT_FAILED", e.to_string()))
    }
}

/// Whether a child's log starts with a continuable `subagent/descriptor`.
async fn is_continuable(registry: &Registry, child_id: &str) -> bool {
    let first = registry.store().events(child_id, None, 1).await.unwrap_or_default();
    first.first().and_then(|json| serde_json::from_str::<serde_json::Value>(json).ok()).is_some_and(
        |event| event["type"] == "subagent/descriptor" && event["data"]["continuable"] == true,
    )
}

fn spec(name: &str, description: &str, parameters: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters: parameters.into(),
        parallel_safe: true,
        ..ToolSpec::default()
    }
}

impl Continuable {
    /// Runs one tool call: its arguments parsed as `A` (or `BAD_ARGUMENTS` with `usage`), then
    /// `body`, whose JSON is the tool result.
    fn call<A, F>(
        self: &Arc<Self>,
        arguments: &str,
        usage: &str,
        body: impl FnOnce(Arc<Continuable>, Arc<Registry>, A) -> F,
    ) -> ToolFuture
    where
        A: DeserializeOwned,
        F: Future<Output = Result<serde_json::Value, ToolOutput>> + Send + 'static,
    {
        let started = ToolOutput::arguments::<A>(arguments, usage)
            .and_then(|args| Ok(body(self.clone(), self.registry()?, args)));
        Box::pin(async move {
            match started {
                Ok(running) => {
                    running.await.map_or_else(|failed| failed, |v| ToolOutput::text(v.to_string()))
                }
                Err(failed) => failed,
            }
        })
    }
}

/// `spawn_agent`.
struct SpawnAgent(Arc<Continuable>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpawnArguments {
    #[serde(default)]
    name: Option<String>,
    prompt: String,
}

impl Tool for SpawnAgent {
    fn spec(&self) -> ToolSpec {
        spec(
            "spawn_agent",
            "Starts a subagent you can keep talking to: a fresh session with the same model and \
             tools is given the prompt. Answers {childId, messageId} at once; when it has \
             finished you get a message with its answer. Use send_message to give it more work.",
            r#"{"type":"object","properties":{"name":{"type":"string","description":"A short label"},"prompt":{"type":"string","description":"The task"}},"required":["prompt"]}"#,
        )
    }

    fn call(&self, context: ToolContext, arguments: &str) -> ToolFuture {
        let usage = r#"spawn_agent takes {"prompt": string, "name"?: string}"#;
        self.0.call(arguments, usage, |shared, registry, args: SpawnArguments| async move {
            let failed =
                |e: &dyn std::fmt::Display| ToolOutput::error("SUBAGENT_FAILED", e.to_string());
            match registry.store().flush().await {
                Ok(true) => {}
                Ok(false) => {
                    return Err(ToolOutput::error(
                        "DURABILITY_FAILED",
                        "a continuable subagent needs durable storage, and this store is in memory; \
                         run with --data FILE, or use the one-shot `agent` tool",
                    ));
                }
                Err(e) => return Err(ToolOutput::error("DURABILITY_FAILED", e.to_string())),
            }
            let parent_id = context.session_id.clone();
            let child = registry
                .create_child(&parent_id, args.name.as_deref())
                .await
                .map_err(super::refused)?;
            let child_id = child.id().to_owned();
            let descriptor = json!({
                "childId": child_id,
                "name": args.name,
                "parentSessionId": parent_id,
                "continuable": true,
                "version": DESCRIPTOR_VERSION,
            });
            let log = Input::Log(HostEvent::SubagentDescriptor(descriptor.to_string()));
            child.feed(log, None).await.map_err(|e| failed(&e))?;
            let message_id =
                shared.settlements.deliver(&context, &child, args.prompt).await?;
            if let Ok(parent) = registry.get(&parent_id) {
                let started = json!({"parentSessionId": parent_id, "childSessionId": child_id, "name": args.name});
                parent
                    .announce(Notice::Subagent("subagent.started", Arc::from(started.to_string())));
            }
            Ok(json!({"childId": child_id, "messageId": message_id}))
        })
    }
}

/// `send_message`.
struct SendMessage(Arc<Continuable>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SendArguments {
    subagent_id: String,
    message: String,
}

impl Tool for SendMessage {
    fn spec(&self) -> ToolSpec {
        // Not parallel-safe: two sends in one step reach the child in the model's order.
        ToolSpec {
            parallel_safe: false,
            ..spec(
                "send_message",
                "Gives one of your subagents (from spawn_agent) more work: the message runs as its \
                 next turn. Answers {messageId}; you get a message with its answer when it is done.",
                r#"{"type":"object","properties":{"subagent_id":{"type":"string"},"message":{"type":"string"}},"required":["subagent_id","message"]}"#,
            )
        }
    }

    fn call(&self, context: ToolContext, arguments: &str) -> ToolFuture {
        let usage = r#"send_message takes {"subagent_id": string, "message": string}"#;
        self.0.call(arguments, usage, |shared, registry, args: SendArguments| async move {
            let child =
                Continuable::child_of(&registry, &context.session_id, &args.subagent_id).await?;
            let message_id = shared.settlements.deliver(&context, &child, args.message).await?;
            Ok(json!({"messageId": message_id}))
        })
    }
}

/// `interrupt_agent`.
struct InterruptAgent(Arc<Continuable>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InterruptArguments {
    subagent_id: String,
}

impl Tool for InterruptAgent {
    fn spec(&self) -> ToolSpec {
        spec(
            "interrupt_agent",
            "Stops one of your subagents' current turn; work already queued for it stays queued.",
            r#"{"type":"object","properties":{"subagent_id":{"type":"string"}},"required":["subagent_id"]}"#,
        )
    }

    fn call(&self, context: ToolContext, arguments: &str) -> ToolFuture {
        let usage = r#"interrupt_agent takes {"subagent_id": string}"#;
        self.0.call(arguments, usage, |_, registry, args: InterruptArguments| async move {
            let child =
                Continuable::child_of(&registry, &context.session_id, &args.subagent_id).await?;
            let was = child.view().status;
            let cancel = Input::Cancel { cause: CancelCause::Parent, keep_inbox: true };
            child
                .feed(cancel, None)
                .await
                .map_err(|e| ToolOutput::error("SUBAGENT_FAILED", e.to_string()))?;
            Ok(json!({"subagentId": args.subagent_id, "interrupted": was == Status::Running}))
        })
    }
}

/// `list_agents`.
struct ListAgents(Arc<Continuable>);

impl Tool for ListAgents {
    fn spec(&self) -> ToolSpec {
        spec(
            "list_agents",
            "Lists your subagents: {items: [{subagentId, name, status, continuable}]}.",
            r#"{"type":"object","properties":{}}"#,
        )
    }

    fn call(&self, context: ToolContext, arguments: &str) -> ToolFuture {
        let usage = "list_agents takes {}";
        self.0.call(arguments, usage, |_, registry, _: serde_json::Value| async move {
            let rows = registry
                .store()
                .children(&context.session_id)
                .await
                .map_err(|e| ToolOutput::error("SUBAGENT_FAILED", e.to_string()))?;
            let mut items = Vec::new();
            for row in rows {
                let status =
                    registry.get(&row.session_id).map_or(Status::Idle, |h| h.view().status);
                let name = row.spec.pointer("/metadata/name").cloned().unwrap_or_default();
                let continuable = is_continuable(&registry, &row.session_id).await;
                items.push(json!({
                    "subagentId": row.session_id,
                    "name": name,
                    "status": status,
                    "continuable": continuable,
                }));
            }
            Ok(json!({"items": items}))
        })
    }
}
