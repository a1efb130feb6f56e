//! The metrics of the calls a session makes: each model call's outcome, latency, time to its
//! first chunk and tokens, and each tool call's outcome and time (`crate::metrics`).

use airlock_core::{ModelError, StreamChunk};
use tokio::time::Instant;

use airlock_base::metrics::{Labels, global, outcome};

/// One model call, measured as its stream goes by; a call dropped before its end (aborted) is
/// counted `aborted`.
pub(super) struct ModelCall {
    session_id: String,
    /// The model's own name, for the log (its label may be `other`).
    model: String,
    labels: Labels,
    started: Instant,
    first_chunk: bool,
    ended: bool,
}

impl ModelCall {
    /// A call of `session_id` to `model` of `provider`, starting now. Its `model` label is the
    /// model's name when it is configured or well known, else `other`: a session's model name is
    /// a client's text.
    pub(super) fn start(session_id: &str, provider: &str, model: &str) -> ModelCall {
        let label = global().models.label(model);
        let labels = vec![("provider", provider.to_owned()), ("model", label)];
        let (session_id, model) = (session_id.to_owned(), model.to_owned());
        let started = Instant::now();
        ModelCall { session_id, model, labels, started, first_chunk: false, ended: false }
    }

    /// Takes note of one item of the stream (`None`: it ended).
    pub(super) fn saw(&mut self, item: &Option<Result<StreamChunk, ModelError>>) {
        let metrics = global();
        match item {
            Some(Ok(chunk)) => {
                if !std::mem::replace(&mut self.first_chunk, true) {
                    let took = self.started.elapsed().as_secs_f64();
                    metrics.model_first_chunk_seconds.get_or_create(&self.labels).observe(took);
                }
                if let StreamChunk::Usage { usage } = chunk {
                    let counts = [
                        ("input", Some(usage.input_tokens)),
                        ("output", Some(usage.output_tokens)),
                        ("cache_read", usage.cache_read_tokens),
                        ("cache_write", usage.cache_write_tokens),
                    ];
                    for (kind, tokens) in counts.into_iter().filter_map(|(k, n)| Some((k, n?))) {
                        let labels =
                            [self.labels.clone(), vec![("kind", kind.to_owned())]].concat();
                        metrics.model_tokens.get_or_create(&labels).inc_by(tokens);
                    }
                }
            }
            Some(Err(error)) => {
                let (session_id, provider, model) = self.names();
                let (code, status) = (&error.code, error.status);
                tracing::warn!(
                    session_id,
                    provider,
                    model,
                    code,
                    status,
                    error = error.message,
                    "model call failed"
                );
                self.end(Some(&error.code))
            }
            None => self.end(None),
        }
    }

    fn end(&mut self, error_code: Option<&str>) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        let metrics = global();
        let took = self.started.elapsed().as_secs_f64();
        let (session_id, provider, model) = self.names();
        let outcome_ = outcome(error_code);
        tracing::debug!(
            session_id,
            provider,
            model,
            outcome = outcome_,
            latency_ms = took * 1e3,
            "model call ended"
        );
        metrics.model_seconds.get_or_create(&self.labels).observe(took);
        let outcome = ("outcome", outcome(error_code));
        metrics.model_calls.get_or_create(&[self.labels.clone(), vec![outcome]].concat()).inc();
    }
}

impl ModelCall {
    fn names(&self) -> (&str, &str, &str) {
        (&self.session_id, &self.labels[0].1, &self.model)
    }
}

impl Drop for ModelCall {
    fn drop(&mut self) {
        self.end(Some("ABORTED"));
    }
}

/// Counts, times and logs one tool call of `session_id` that took `since` until now.
pub(super) fn tool_call(session_id: &str, tool: &str, since: Instant, error_code: Option<&str>) {
    let metrics = global();
    let latency_ms = since.elapsed().as_secs_f64() * 1e3;
    tracing::debug!(session_id, tool, outcome = outcome(error_code), latency_ms, "tool call ended");
    let tool = vec![("tool", global().tools.label(tool))];
    metrics.tool_seconds.get_or_create(&tool).observe(since.elapsed().as_secs_f64());
    let outcome = ("outcome", outcome(error_code));
    metrics.tool_calls.get_or_create(&[tool, vec![outcome]].concat()).inc();
}
