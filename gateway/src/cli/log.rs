//! The process's log: `tracing` events on stderr, as text or as JSON lines (`--log-format`),
//! filtered by `AIRLOCK_LOG` (else `RUST_LOG`) in `tracing-subscriber`'s directive syntax,
//! e.g. `AIRLOCK_LOG=debug` or `AIRLOCK_LOG=airlock_gateway=debug,warn`.

use std::io::IsTerminal;

use clap::ValueEnum;
use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `message`, the event's fields, and the
    /// fields of the span it happened in.
    Json,
}

/// Installs the log for the process; `default` is the filter when neither variable is set.
pub fn init(format: LogFormat, default: &str) {
    let filter = EnvFilter::try_from_env("AIRLOCK_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new(default));
    let log = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        LogFormat::Text => log.with_target(false).with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => log.json().flatten_event(true).with_current_span(true).init(),
    }
}
