//! The `airlock` command line.

mod acp;
mod approve;
mod args;
mod data_lock;
mod embedded;
mod file;
mod keys;
pub mod log;
mod progress;
mod run;
mod serve;
mod stdio;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use self::file::File;
use crate::server::ServeError;
use airlock_sessions::{InputError, OwnError, RegistryError};

pub use run::RunArgs;
pub use serve::ServeArgs;

/// What every command's `--help` ends with: the model's variables, which no flag names.
const MODEL_VARIABLES: &str = "\
Model variables (for `--model openai:<model>`, `deepseek:<model>` and `anthropic:<model>`):
  OPENAI_API_KEY, DEEPSEEK_API_KEY, ANTHROPIC_API_KEY   the provider's key
  AIRLOCK_BASE_URL          another endpoint of the same wire (no key needed on loopback)
  AIRLOCK_THINKING_TOKENS   Anthropic's extended thinking: tokens a step may think (>= 1024)
  AIRLOCK_CONNECT_TIMEOUT_MS, AIRLOCK_FIRST_BYTE_TIMEOUT_MS, AIRLOCK_STALL_TIMEOUT_MS";

/// `--help`'s heading over the flags every command takes.
const PROCESS: &str = "Logging and cache";

/// Airlock: an LLM agent loop in a WebAssembly sandbox.
#[derive(Debug, Parser)]
#[command(name = "airlock", version, about, after_help = MODEL_VARIABLES)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Where compiled core machine code is cached (default: the user's cache dir).
    #[arg(long, global = true, env = "AIRLOCK_CACHE_DIR", help_heading = PROCESS)]
    cache_dir: Option<PathBuf>,
    /// How the log on stderr is written: `text`, or `json` lines. `AIRLOCK_LOG` (or `RUST_LOG`)
    /// filters it: for `serve` by default Airlock's lines from `info` and other libraries' from
    /// `warn`, rmcp not at all (`warn,airlock=info,rmcp=off`), for the others `error`.
    #[arg(long, global = true, env = "AIRLOCK_LOG_FORMAT", value_enum, default_value = "text",
        help_heading = PROCESS)]
    log_format: log::LogFormat,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the HTTP/SSE API (sessions in a SQLite file, or in PostgreSQL shared with other
    /// gateways).
    #[command(after_help = MODEL_VARIABLES)]
    Serve(Box<ServeArgs>),
    /// Run one task in a fresh session and print the final response.
    #[command(after_help = MODEL_VARIABLES)]
    Run(RunArgs),
    /// Speak the low-level SDK protocol (JSON-RPC lines) on stdin/stdout; the sessions already
    /// in `--data` are recovered first.
    #[command(after_help = MODEL_VARIABLES)]
    Stdio(stdio::StdioArgs),
    /// Be an Agent Client Protocol agent for an editor, on stdin/stdout; the sessions already in
    /// `--data` are recovered first (`session/load` needs `--data` across runs).
    #[command(after_help = MODEL_VARIABLES)]
    Acp(acp::AcpArgs),
    /// Make, list and revoke the API keys of a data file or database.
    Keys(keys::KeysArgs),
}

impl Cli {
    /// Parses the command line, with `airlock.toml`'s values as the defaults of the flags of
    /// `serve`, `run`, `stdio` and `acp` ([`file`]). A bad file ends the process with a message
    /// saying what to fix.
    pub fn from_env_and_file() -> Cli {
        let mut command = Cli::command();
        let matches = command.get_matches_mut();
        let file = match matches.subcommand() {
            Some(("serve" | "run" | "stdio" | "acp", given)) => {
                let serve = command.find_subcommand("serve").expect("serve is a command");
                File::read(serve, given).unwrap_or_else(|message| {
                    eprintln!("airlock: {message}");
                    std::process::exit(2);
                })
            }
            _ => None,
        };
        let Some(file) = file else {
            return Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
        };
        let name = matches.subcommand_name().expect("a command was given");
        // A fresh command: one clap has built cannot have its arguments changed. The global
        // flags (`--cache-dir`, `--log-format`) are the root's.
        let command =
            file.defaults(Cli::command()).mut_subcommand(name, |given| file.defaults(given));
        let matches = command.get_matches();
        let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
        let given = matches.subcommand().expect("a command was given").1;
        match &mut cli.command {
            Command::Serve(args) => file.apply_to_serve(args, given),
            Command::Run(RunArgs { sessions, .. })
            | Command::Stdio(stdio::StdioArgs { sessions })
            | Command::Acp(acp::AcpArgs { sessions, .. }) => {
                file.apply_to_embedded(sessions, given)
            }
            Command::Keys(_) => {}
        }
        cli
    }

    /// The runtime the chosen subcommand runs on. `stdio` serves one client over one pair of
    /// pipes, so one thread runs all of its tasks, its commits included (`server::open_parts`;
    /// only blocking work has threads of its own): a turn's steps are not handed from thread to
    /// thread and back. The other commands get a worker per core.
    pub fn runtime(&self) -> std::io::Result<tokio::runtime::Runtime> {
        match self.command {
            Command::Stdio(_) => tokio::runtime::Builder::new_current_thread().enable_all().build(),
            _ => tokio::runtime::Runtime::new(),
        }
    }

    /// Runs the chosen subcommand.
    pub async fn execute(self) -> ExitCode {
        let cache_dir = self.cache_dir.or_else(airlock_sandbox::core_host::default_cache_dir);
        let serving = matches!(self.command, Command::Serve(_));
        let _log = log::init(self.log_format, serving);
        match self.command {
            Command::Run(args) => run::run(args, cache_dir).await,
            Command::Serve(args) => serve::serve(*args, cache_dir, self.log_format).await,
            Command::Stdio(args) => stdio::run(args, cache_dir).await,
            Command::Acp(args) => acp::run(args, cache_dir).await,
            Command::Keys(args) => keys::run(args).await,
        }
    }
}

/// Why a command could not do its work: printed as `airlock: <error>`, exit code 1.
#[derive(Debug, thiserror::Error)]
enum CliError {
    /// The store, the core, the model or the plugins could not be set up.
    #[error(transparent)]
    Setup(#[from] ServeError),
    /// Another process has the data file.
    #[error(transparent)]
    Lock(#[from] data_lock::LockError),
    /// No temporary directory for a database.
    #[error("cannot make a temporary database: {0}")]
    Temp(std::io::Error),
    /// The session could not be made or found.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The run could not be submitted.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The run's result could not be collected.
    #[error(transparent)]
    Own(#[from] OwnError),
    /// Ctrl-C could not be listened for.
    #[error("cannot listen for Ctrl-C: {0}")]
    Signal(std::io::Error),
    /// The connection to the client (stdin/stdout) failed.
    #[error("{0}")]
    Connection(String),
}

/// The exit code of a command: its own, or 1 with `airlock: <error>` on stderr.
fn exit_code(result: Result<ExitCode, CliError>) -> ExitCode {
    result.unwrap_or_else(|error| {
        eprintln!("airlock: {error}");
        ExitCode::FAILURE
    })
}
