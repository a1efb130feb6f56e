//! The process's log: `tracing` events on stderr, as text or as JSON lines (`--log-format`),
//! filtered by `AIRLOCK_LOG` (else `RUST_LOG`) in `tracing-subscriber`'s directive syntax,
//! e.g. `AIRLOCK_LOG=debug` or `AIRLOCK_LOG=airlock_gateway=debug,warn`.

use std::io::{BufWriter, IsTerminal};

use clap::ValueEnum;
use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::writer::BoxMakeWriter;

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

/// A server's filter when no variable sets one: every crate of Airlock (`airlock_*` targets)
/// from `info`, the rest from `warn`; rmcp not at all: what fails in it reaches Airlock as an
/// error, said in words where it is met, and its own lines dump Rust values.
const SERVING: &str = "warn,airlock=info,rmcp=off";

/// Installs the log for the process. Unless a variable sets the filter, a server logs its own
/// lines from `info` and other libraries' (rmcp, hyper, wasmtime…) from `warn`; the commands
/// that answer a person say what failed themselves and log errors only.
///
/// A server writes a line per request: its lines go to a thread of their own, which writes
/// whatever has gathered in one go, so no request waits for stderr (nor wakes its reader once a
/// line). Dropping the answered guard writes what is left; none is dropped on the way (a full
/// queue makes the logger wait). A command that answers a person (`serve` is not one) writes its
/// few lines to stderr itself, so they are there even when it ends with `process::exit`.
pub fn init(format: LogFormat, serving: bool) -> Option<WorkerGuard> {
    let filter = EnvFilter::try_from_env("AIRLOCK_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new(if serving { SERVING } else { "error" }));
    let (writer, guard) = match serving {
        true => {
            let (writer, guard) = NonBlockingBuilder::default()
                .lossy(false)
                .thread_name("airlock-log")
                .finish(BufWriter::new(std::io::stderr()));
            (BoxMakeWriter::new(writer), Some(guard))
        }
        false => (BoxMakeWriter::new(std::io::stderr), None),
    };
    let log = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer);
    match format {
        LogFormat::Text => log.with_target(false).with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => log.json().flatten_event(true).with_current_span(true).init(),
    }
    guard
}
