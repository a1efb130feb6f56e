//! Live progress of `airlock run` on a terminal: a spinner while the agent waits, the streamed
//! text and the tool calls as they happen, all on stderr. Nothing at all when stderr is not a
//! terminal, so scripts see only the result.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use airlock_core::{Event, EventData, StreamChunk, text_of};
use indicatif::{ProgressBar, ProgressStyle};

use airlock_sessions::Update;

/// What the terminal shows.
pub struct Progress {
    spinner: Option<ProgressBar>,
    /// Streamed text was written without its final newline.
    mid_line: bool,
}

impl Progress {
    /// Progress on stderr, if it is a terminal.
    pub fn on_terminal() -> Option<Progress> {
        std::io::stderr().is_terminal().then(|| {
            let mut progress = Progress { spinner: None, mid_line: false };
            progress.wait("starting");
            progress
        })
    }

    /// Shows one update of the run's interval.
    pub fn show(&mut self, update: &Update) {
        let Update::Event(committed) = update else { return };
        let Ok(Some(event)) = Event::parse(&committed.json) else { return };
        match event.data {
            EventData::StepStart(_) => self.wait("waiting for the model"),
            EventData::AssistantChunk(chunk) => match chunk.chunk {
                StreamChunk::TextDelta { text, .. } => self.write(&text),
                StreamChunk::ReasoningDelta { .. } => self.wait("thinking"),
                _ => {}
            },
            EventData::AssistantMessage(_) => self.end_line(),
            EventData::ToolCall(call) => {
                self.line(&format!("→ {} {}", call.name, call.arguments));
                self.wait(&format!("running {}", call.name));
            }
            EventData::ToolResult(result) => {
                let text = result.message.content.iter().find_map(|block| match block {
                    airlock_core::ContentBlock::ToolResult { content, .. } => {
                        Some(text_of(content))
                    }
                    _ => None,
                });
                let text = text.unwrap_or_default();
                let first = text.lines().next().unwrap_or_default();
                let shown: String = first.chars().take(100).collect();
                let error = result.error.map(|e| format!(" [{}]", e.code)).unwrap_or_default();
                self.line(&format!("← {shown}{error}"));
            }
            EventData::LlmRetry(retry) => self.wait(&format!(
                "the model failed ({}); retry {} in {} ms",
                retry.error.code, retry.attempt, retry.delay_ms
            )),
            EventData::ContextCompaction(compaction) => {
                let after = compaction.tokens_after.map(|t| format!(" → {t}")).unwrap_or_default();
                let tokens = format!("{}{after} tokens", compaction.tokens_before);
                self.line(&format!("⋯ earlier conversation summarized ({tokens})"));
            }
            // The question about it goes to stderr (`approve.rs`): no spinner over it.
            EventData::ToolApproval(_) => self.stop(),
            EventData::TurnEnd(_) => self.stop(),
            _ => {}
        }
    }

    /// Clears the spinner and ends a streamed line.
    pub fn finish(mut self) {
        self.end_line();
    }

    fn wait(&mut self, message: &str) {
        self.end_line();
        let spinner = self.spinner.get_or_insert_with(|| {
            let spinner = ProgressBar::new_spinner();
            spinner.set_style(
                ProgressStyle::with_template("{spinner} {msg}").expect("a valid template"),
            );
            spinner.enable_steady_tick(Duration::from_millis(100));
            spinner
        });
        spinner.set_message(format!("{message}…"));
    }

    fn stop(&mut self) {
        if let Some(spinner) = self.spinner.take() {
            spinner.finish_and_clear();
        }
    }

    fn write(&mut self, text: &str) {
        self.stop();
        let mut stderr = std::io::stderr().lock();
        let _ = stderr.write_all(text.as_bytes());
        let _ = stderr.flush();
        if !text.is_empty() {
            self.mid_line = !text.ends_with('\n');
        }
    }

    fn line(&mut self, text: &str) {
        self.end_line();
        eprintln!("{text}");
    }

    fn end_line(&mut self) {
        self.stop();
        if std::mem::take(&mut self.mid_line) {
            eprintln!();
        }
    }
}
