//! Scripted replies and how they are played on the wire.

use std::io;
use std::task::Poll;
use std::time::Duration;

use axum::body::Bytes;
use futures::Stream;
use serde_json::{Value, json};

use super::Asked;
use std::sync::Arc;

use tokio::sync::{Notify, mpsc};

/// One scripted answer to one request: an HTTP error, or a stream in the request's wire.
///
/// On chat completions a stream plays its frames in this order: reasoning deltas, text deltas,
/// tool-call deltas, the frame with `finish_reason`, a usage frame (only when the request asked
/// for it with `stream_options.include_usage`), then `data: [DONE]`. On messages it plays
/// `message_start`, a `ping`, a thinking block (its deltas, then its signature), a text block, a
/// `tool_use` block per call, `message_delta` with the stop reason and usage, then
/// `message_stop`. Faults count those frames: `…_after(k)` acts once `k` frames were sent.
#[derive(Clone, Debug)]
pub struct Reply {
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    Status { status: u16, retry_after: Option<String>, body: Option<String> },
    Stream(Script),
}

#[derive(Clone, Debug, Default)]
struct Script {
    reasoning: Vec<String>,
    /// The thinking block's signature (messages wire).
    signature: Option<String>,
    text: Vec<String>,
    calls: Vec<Call>,
    finish: Option<String>,
    usage: Option<(u64, u64)>,
    cached_tokens: Option<u64>,
    /// Prompt tokens written to the cache (messages wire).
    cache_written: Option<u64>,
    delay: Duration,
    fault: Option<Fault>,
    gate: Option<Arc<Notify>>,
    /// Report a prompt token per four bytes of the request's messages.
    counted: bool,
    /// Send no usage frame even when the request asks for one.
    no_usage: bool,
}

#[derive(Clone, Debug)]
struct Call {
    id: String,
    name: String,
    arguments: Vec<String>,
}

#[derive(Clone, Copy, Debug)]
enum Fault {
    Disconnect(usize),
    Malformed(usize),
    Stall(usize),
    Overloaded(usize),
}

/// Which API a request came in on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Wire {
    /// `POST /v1/chat/completions`.
    Chat,
    /// `POST /v1/messages`.
    Messages,
}

/// A reply made ready for one request.
pub(super) enum Played {
    Status { status: u16, retry_after: Option<String>, body: String },
    Stream(Frames),
}

/// The body of a streamed reply.
pub(super) type Frames = std::pin::Pin<Box<dyn Stream<Item = io::Result<Bytes>> + Send>>;

impl Default for Reply {
    /// The answer when the script is empty: a short text in three chunks.
    fn default() -> Self {
        Reply::text("Hello from the mock model.", 3)
    }
}

impl Reply {
    /// `text` streamed as content deltas in `pieces` chunks, finishing `stop`.
    pub fn text(text: &str, pieces: usize) -> Reply {
        Reply::stream(Script { text: split(text, pieces), ..Script::default() })
    }

    /// One tool call whose arguments arrive split over `pieces` deltas, finishing `tool_calls`.
    /// Only the first delta of the call carries its id and name, as OpenAI sends them.
    pub fn tool_call(id: &str, name: &str, arguments: &str, pieces: usize) -> Reply {
        Reply::stream(Script::default()).and_tool_call(id, name, arguments, pieces)
    }

    /// An HTTP error with an error body in the request's wire naming the status (on messages,
    /// with the error type Anthropic gives that status: 529 is `overloaded_error`).
    pub fn status(status: u16) -> Reply {
        Reply { kind: Kind::Status { status, retry_after: None, body: None } }
    }

    /// Another tool call after the ones already scripted (its delta index is the next one).
    pub fn and_tool_call(mut self, id: &str, name: &str, arguments: &str, pieces: usize) -> Reply {
        let call = Call { id: id.into(), name: name.into(), arguments: split(arguments, pieces) };
        self.script().calls.push(call);
        self
    }

    /// Reasoning deltas (DeepSeek's `reasoning_content`; on messages a thinking block) in
    /// `pieces` chunks before any text.
    pub fn reasoning(mut self, text: &str, pieces: usize) -> Reply {
        self.script().reasoning = split(text, pieces);
        self
    }

    /// Ends with this `finish_reason` instead of `stop` / `tool_calls`.
    pub fn finish(mut self, reason: &str) -> Reply {
        self.script().finish = Some(reason.into());
        self
    }

    /// Ends with `finish_reason: "length"`: the output token limit was hit.
    pub fn finish_length(self) -> Reply {
        self.finish("length")
    }

    /// The usage frame reports these counts (default: 10 prompt tokens, one completion token per
    /// delta frame).
    pub fn usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> Reply {
        self.script().usage = Some((prompt_tokens, completion_tokens));
        self
    }

    /// Sends no usage frame, as some OpenAI-compatible servers do even when asked for one.
    pub fn without_usage(mut self) -> Reply {
        self.script().no_usage = true;
        self
    }

    /// The usage frame reports this many cached prompt tokens.
    pub fn cached_tokens(mut self, cached: u64) -> Reply {
        self.script().cached_tokens = Some(cached);
        self
    }

    /// On messages, the thinking block's signature (default `mock-signature`).
    pub fn signed(mut self, signature: &str) -> Reply {
        self.script().signature = Some(signature.into());
        self
    }

    /// On messages, usage reports this many prompt tokens written to the cache.
    pub fn cache_written(mut self, written: u64) -> Reply {
        self.script().cache_written = Some(written);
        self
    }

    /// Waits this long before every frame but the first.
    pub fn delay(mut self, delay: Duration) -> Reply {
        self.script().delay = delay;
        self
    }

    /// Sends the first frame, then holds the rest until `gate` is notified (`notify_one`), so a
    /// test decides when the answer goes on instead of guessing with a delay.
    pub fn hold_until(mut self, gate: Arc<Notify>) -> Reply {
        self.script().gate = Some(gate);
        self
    }

    /// Drops the connection (no terminating chunk) after `frames` frames.
    pub fn disconnect_after(mut self, frames: usize) -> Reply {
        self.script().fault = Some(Fault::Disconnect(frames));
        self
    }

    /// Sends a frame that is not valid JSON after `frames` good ones.
    pub fn malformed_after(mut self, frames: usize) -> Reply {
        self.script().fault = Some(Fault::Malformed(frames));
        self
    }

    /// On messages, sends an `error` event (`overloaded_error`) after `frames` frames, as
    /// Anthropic does when it is overloaded mid-answer.
    pub fn overloaded_after(mut self, frames: usize) -> Reply {
        self.script().fault = Some(Fault::Overloaded(frames));
        self
    }

    /// Sends `frames` frames, then nothing, keeping the connection open until the client leaves.
    pub fn stall_after(mut self, frames: usize) -> Reply {
        self.script().fault = Some(Fault::Stall(frames));
        self
    }

    /// Sets the `Retry-After` header of an HTTP error (seconds or an HTTP date).
    pub fn retry_after(mut self, value: &str) -> Reply {
        if let Kind::Status { retry_after, .. } = &mut self.kind {
            *retry_after = Some(value.into());
        }
        self
    }

    /// Replaces the body of an HTTP error.
    pub fn error_body(mut self, text: &str) -> Reply {
        if let Kind::Status { body, .. } = &mut self.kind {
            *body = Some(text.into());
        }
        self
    }

    /// Unless its usage is scripted, reports the request's size as its prompt tokens: a token per
    /// four bytes of the request's messages, as a real tokenizer roughly would.
    pub(super) fn counted(mut self) -> Reply {
        if let Kind::Stream(script) = &mut self.kind {
            script.counted = true;
        }
        self
    }

    fn stream(script: Script) -> Reply {
        Reply { kind: Kind::Stream(script) }
    }

    /// The stream script; stream-only settings on an HTTP error reply are a mistake in the test.
    fn script(&mut self) -> &mut Script {
        match &mut self.kind {
            Kind::Stream(script) => script,
            Kind::Status { .. } => panic!("this setting applies to streamed replies only"),
        }
    }

    /// Makes the reply ready for `request`, the `number`th request the server received, in the
    /// wire it came in on.
    pub(super) fn play(self, request: &Asked, number: usize, wire: Wire) -> Played {
        match self.kind {
            Kind::Status { status, retry_after, body } => {
                let body = body.unwrap_or_else(|| {
                    let message = format!("mock error {status}");
                    let body = match wire {
                        Wire::Chat => json!({"error": {"message": message, "type": "mock_error", "code": null}}),
                        Wire::Messages => json!({"type": "error", "error": {"type": anthropic_error_type(status), "message": message}}),
                    };
                    body.to_string()
                });
                Played::Status { status, retry_after, body }
            }
            Kind::Stream(script) => Played::Stream(script.play(request, number, wire)),
        }
    }
}

/// What the playing task hands the response body.
enum Out {
    Frame(String),
    Reset,
}

/// The error type Anthropic's API gives an HTTP status.
fn anthropic_error_type(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

impl Script {
    fn play(self, request: &Asked, number: usize, wire: Wire) -> Frames {
        let frames = match wire {
            Wire::Chat => self.frames(request, number),
            Wire::Messages => self.events(request, number),
        };
        let (tx, mut rx) = mpsc::channel::<Out>(4);
        let (delay, fault, gate) = (self.delay, self.fault, self.gate);
        tokio::spawn(async move {
            for (sent, frame) in frames.into_iter().enumerate() {
                if sent > 0 && !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                if let Some(gate) = gate.as_ref().filter(|_| sent == 1) {
                    gate.notified().await;
                }
                let send = match fault {
                    Some(Fault::Disconnect(k)) if k == sent => Out::Reset,
                    Some(Fault::Stall(k)) if k == sent => return tx.closed().await,
                    Some(Fault::Malformed(k)) if k == sent => {
                        Out::Frame("data: {\"choices\": [oops\n\n".into())
                    }
                    Some(Fault::Overloaded(k)) if k == sent => {
                        let error = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
                        Out::Frame(format!("event: error\ndata: {error}\n\n"))
                    }
                    _ => Out::Frame(frame),
                };
                let last = matches!(send, Out::Reset);
                if tx.send(send).await.is_err() || last {
                    return; // the client left, or the connection is to drop
                }
            }
        });
        // hyper drops what it has buffered but not yet written when a body fails, so a reset
        // first answers "pending" once: hyper then flushes the frames sent before it.
        let mut resetting = false;
        Box::pin(futures::stream::poll_fn(move |cx| {
            if resetting {
                let reset = io::Error::new(io::ErrorKind::ConnectionReset, "mock disconnect");
                return Poll::Ready(Some(Err(reset)));
            }
            match rx.poll_recv(cx) {
                Poll::Ready(Some(Out::Frame(frame))) => Poll::Ready(Some(Ok(Bytes::from(frame)))),
                Poll::Ready(Some(Out::Reset)) => {
                    resetting = true;
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
                Poll::Ready(None) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            }
        }))
    }

    /// Every frame of the reply, SSE-encoded, in order.
    fn frames(&self, request: &Asked, number: usize) -> Vec<String> {
        let mut deltas: Vec<Value> = Vec::new();
        deltas.extend(self.reasoning.iter().map(|r| json!({"reasoning_content": r})));
        deltas.extend(self.text.iter().map(|t| json!({"content": t})));
        for (index, call) in self.calls.iter().enumerate() {
            let function = json!({"name": call.name, "arguments": ""});
            let first =
                json!({"index": index, "id": call.id, "type": "function", "function": function});
            deltas.push(json!({"tool_calls": [first]}));
            for piece in &call.arguments {
                let more = json!({"index": index, "function": {"arguments": piece}});
                deltas.push(json!({"tool_calls": [more]}));
            }
        }
        if let Some(first) = deltas.first_mut() {
            first["role"] = json!("assistant");
        }
        let default_finish = if self.calls.is_empty() { "stop" } else { "tool_calls" };
        let finish = self.finish.as_deref().unwrap_or(default_finish);
        let wants_usage = request.include_usage() && !self.no_usage;
        let chunk = |choices: Value, usage: Value| {
            json!({
                "id": format!("chatcmpl-mock-{number}"),
                "object": "chat.completion.chunk",
                "created": 0,
                "model": request.model,
                "choices": choices,
                "usage": usage,
            })
        };
        let mut frames: Vec<Value> = deltas
            .iter()
            .map(|delta| {
                chunk(json!([{"index": 0, "delta": delta, "finish_reason": null}]), Value::Null)
            })
            .collect();
        let delta_frames = frames.len() as u64;
        frames
            .push(chunk(json!([{"index": 0, "delta": {}, "finish_reason": finish}]), Value::Null));
        if wants_usage {
            let prompt = self.prompt_tokens(request);
            let (prompt, completion) = self.usage.unwrap_or((prompt, delta_frames));
            let mut usage = json!({
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            });
            if let Some(cached) = self.cached_tokens {
                usage["prompt_tokens_details"] = json!({"cached_tokens": cached});
            }
            frames.push(chunk(json!([]), usage));
        }
        let mut frames: Vec<String> = frames.iter().map(|f| format!("data: {f}\n\n")).collect();
        frames.push("data: [DONE]\n\n".into());
        frames
    }
}

impl Script {
    /// The prompt tokens usage reports unless scripted: 10, or a token per four bytes of the
    /// request's messages once [`Reply::counted`].
    fn prompt_tokens(&self, request: &Asked) -> u64 {
        if self.counted { request.messages_len() as u64 / 4 } else { 10 }
    }

    /// Every event of the reply in the messages wire, SSE-encoded, in order.
    fn events(&self, request: &Asked, number: usize) -> Vec<String> {
        let prompt = self.prompt_tokens(request);
        let mut blocks: Vec<(Value, Vec<Value>)> = Vec::new();
        if !self.reasoning.is_empty() {
            let mut deltas: Vec<Value> = (self.reasoning.iter())
                .map(|r| json!({"type": "thinking_delta", "thinking": r}))
                .collect();
            let signature = self.signature.as_deref().unwrap_or("mock-signature");
            deltas.push(json!({"type": "signature_delta", "signature": signature}));
            blocks.push((json!({"type": "thinking", "thinking": "", "signature": ""}), deltas));
        }
        if !self.text.is_empty() {
            let deltas = self.text.iter().map(|t| json!({"type": "text_delta", "text": t}));
            blocks.push((json!({"type": "text", "text": ""}), deltas.collect()));
        }
        for call in &self.calls {
            let start = json!({"type": "tool_use", "id": call.id, "name": call.name, "input": {}});
            let deltas = (call.arguments.iter())
                .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}));
            blocks.push((start, deltas.collect()));
        }
        let (prompt, completion) = self.usage.unwrap_or((prompt, blocks.len() as u64));
        let read = self.cached_tokens.unwrap_or(0);
        let written = self.cache_written.unwrap_or(0);
        let usage = json!({
            "input_tokens": prompt.saturating_sub(read + written),
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
            "output_tokens": 1,
        });
        let message = json!({
            "id": format!("msg_mock_{number}"), "type": "message", "role": "assistant",
            "model": request.model, "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": usage,
        });
        let mut events =
            vec![json!({"type": "message_start", "message": message}), json!({"type": "ping"})];
        for (index, (start, deltas)) in blocks.into_iter().enumerate() {
            events.push(
                json!({"type": "content_block_start", "index": index, "content_block": start}),
            );
            for delta in deltas {
                events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
            }
            events.push(json!({"type": "content_block_stop", "index": index}));
        }
        let default_finish = if self.calls.is_empty() { "stop" } else { "tool_calls" };
        let stop_reason = match self.finish.as_deref().unwrap_or(default_finish) {
            "stop" => "end_turn",
            "length" => "max_tokens",
            "tool_calls" => "tool_use",
            other => other,
        };
        events.push(json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": completion},
        }));
        events.push(json!({"type": "message_stop"}));
        events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
            .collect()
    }
}

/// `text` cut into `pieces` parts of nearly equal length (by characters); none when it is empty.
fn split(text: &str, pieces: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let size = chars.len().div_ceil(pieces.clamp(1, chars.len()));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}
