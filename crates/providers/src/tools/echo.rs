//! `echo {text}` → `echo: <text>`: the built-in parallel-safe tool.

use airlock_core::ToolSpec;
use serde::Deserialize;

use super::{Tool, ToolContext, ToolFuture, ToolOutput};

/// Echoes its `text` argument.
pub struct Echo;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    text: String,
}

const ECHO_USAGE: &str = r#"echo takes {"text": string}"#;

impl Tool for Echo {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "echo".into(),
            description: "Repeats the given text back, prefixed with `echo: `.".into(),
            parameters: r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}"#.into(),
            parallel_safe: true,
            ..ToolSpec::default()
        }
    }

    fn call(&self, _context: ToolContext, arguments: &str) -> ToolFuture {
        let output = match ToolOutput::arguments::<Arguments>(arguments, ECHO_USAGE) {
            Ok(args) => ToolOutput::text(format!("echo: {}", args.text)),
            Err(bad) => bad,
        };
        Box::pin(std::future::ready(output))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn echo_repeats_its_text_and_rejects_bad_arguments() {
        assert_eq!(
            Echo.call(ToolContext::detached("s"), r#"{"text":"hi"}"#).await,
            ToolOutput::text("echo: hi")
        );
        let bad = Echo.call(ToolContext::detached("s"), "{}").await;
        assert_eq!(bad.error_code.as_deref(), Some("BAD_ARGUMENTS"));
    }
}
