//! The flags several commands share, and how they become the library's settings.

use std::path::{Path, PathBuf};
use std::time::Duration;

use airlock_core::Limits;

use clap::{Args, ValueEnum};

use crate::server::Sandbox;
use airlock_providers::mcp::McpServer;
use airlock_providers::model::ModelTable;
use airlock_providers::tools::Workspaces;
use airlock_store::Durability;

/// What runs sandboxed: the core (the built-in one unless `--core` names another component) and
/// the plugin tools under `--plugins`.
#[derive(Clone, Debug, Default, Args)]
pub struct SandboxArgs {
    /// Load plugin tools from this directory (`<name>/plugin.toml` and `<name>/<name>.wasm`).
    #[arg(long, env = "AIRLOCK_PLUGINS")]
    pub plugins: Option<PathBuf>,
    /// Run this component of the world `airlock:core/agent-core` instead of the built-in core.
    #[arg(long, env = "AIRLOCK_CORE")]
    pub core: Option<PathBuf>,
    /// Take tools from an MCP server: `NAME=COMMAND ARG…` (stdio, split like a shell would) or
    /// `NAME=http://…` (streamable HTTP); its tools are `NAME__TOOL`. Repeatable; in the
    /// environment, separate servers with `;`. Not sandboxed, unlike plugins.
    #[arg(long = "mcp", env = "AIRLOCK_MCP", value_delimiter = ';', value_parser = McpServer::parse)]
    pub mcp: Vec<McpServer>,
    /// Each call of this tool waits for a person's approval (`approve`/`deny` over HTTP, a
    /// permission request over ACP, a question with `run --approve ask`), unless a session's own
    /// policy says otherwise; `all`: every tool. Repeatable, or comma-separated.
    #[arg(
        long = "approval-for",
        env = "AIRLOCK_APPROVAL_FOR",
        value_delimiter = ',',
        value_name = "TOOL"
    )]
    pub approval_for: Vec<String>,
    /// Keep each session's workspace (what code tools such as the `python` plugin see as
    /// `/workspace`, and `/v1/sessions/{id}/files`) under this directory, or `off` for none.
    /// Default: `NAME-workspaces` beside the `--data` file `NAME.db`; none with `:memory:`.
    #[arg(long, env = "AIRLOCK_WORKSPACES", value_name = "DIR|off")]
    pub workspaces: Option<PathBuf>,
    /// What the workspaces of all of a tenant's sessions may hold together, in bytes (each file
    /// rounded up to 4 KiB, each directory 4 KiB): an upload past it is 507, a code tool call
    /// that writes past it the tool error `WORKSPACE_FULL`.
    #[arg(long, env = "AIRLOCK_WORKSPACE_QUOTA", default_value_t = DEFAULT_WORKSPACE_QUOTA, value_name = "BYTES")]
    pub workspace_quota: u64,
}

/// 256 MiB.
const DEFAULT_WORKSPACE_QUOTA: u64 = 256 << 20;

impl SandboxArgs {
    /// Where sessions' workspaces live for sessions kept in `data` (`--workspaces`, or beside it).
    pub fn workspaces(&self, data: &Path) -> Option<Workspaces> {
        let root = match &self.workspaces {
            Some(dir) if dir.as_os_str() == "off" => return None,
            Some(dir) => dir.clone(),
            None if data.as_os_str() == ":memory:" => return None,
            None => {
                let stem = data.file_stem().unwrap_or(data.as_os_str()).to_string_lossy();
                data.with_file_name(format!("{stem}-workspaces"))
            }
        };
        Some(Workspaces::new(root, self.workspace_quota))
    }
}

impl From<SandboxArgs> for Sandbox {
    fn from(args: SandboxArgs) -> Sandbox {
        let SandboxArgs { plugins, core, mcp, .. } = args;
        Sandbox { plugins, core, mcp }
    }
}

/// The sessions of a command that runs without a server (`run`, `stdio`, `acp`). They read
/// `airlock.toml` as `serve` does, but for `data` and `listen`: where the server keeps its
/// sessions and listens.
#[derive(Clone, Debug, Args)]
pub struct EmbeddedArgs {
    /// Settings file (default: `./airlock.toml` when it exists): its models, tools and sandbox;
    /// a flag or its variable wins over the file.
    #[arg(long, env = "AIRLOCK_CONFIG")]
    pub config: Option<PathBuf>,
    /// Keep sessions in this SQLite file (default: a temporary file, removed at exit).
    /// `:memory:` keeps nothing on disk (continuable subagents then refuse to start).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// The model of new sessions, its window and its fallbacks.
    #[command(flatten, next_help_heading = MODELS)]
    pub model: ModelArgs,
    /// `[models."NAME"]` of `airlock.toml`.
    #[arg(skip)]
    pub models: ModelTable,
    /// The core and the plugins.
    #[command(flatten, next_help_heading = TOOLS)]
    pub sandbox: SandboxArgs,
}

/// `--help`'s heading over the model flags.
pub const MODELS: &str = "Models";
/// `--help`'s heading over the flags of the core, the tools and their sandbox.
pub const TOOLS: &str = "Tools";

/// The model of sessions that name none: `--model`, `--context-window`, `--fallback`.
#[derive(Clone, Debug, Args)]
pub struct ModelArgs {
    /// The model of sessions that name none: `demo` (offline, no key), `openai:<model>`,
    /// `deepseek:<model>` or `anthropic:<model>`.
    #[arg(long, env = "AIRLOCK_MODEL", default_value = "demo")]
    pub model: String,
    /// The context window of `--model` in tokens (default: known for well-known models and the
    /// demo; others: `[models."NAME"] context_window` in `airlock.toml`); the conversation is
    /// compacted before it fills.
    #[arg(long, env = "AIRLOCK_CONTEXT_WINDOW", value_parser = clap::value_parser!(u64).range(100..))]
    pub context_window: Option<u64>,
    /// A model the steps of `--model`'s sessions fail over to when it keeps failing (overload,
    /// 5xx, timeouts), e.g. `openai:gpt-4o`. Repeatable, in order; in the environment,
    /// comma-separated. Others: `[models."NAME"] fallback` in `airlock.toml`.
    #[arg(
        long = "fallback",
        env = "AIRLOCK_FALLBACK",
        value_delimiter = ',',
        value_name = "MODEL"
    )]
    pub fallback: Vec<String>,
}

impl ModelArgs {
    /// `table` (the file's `[models]`) with `--context-window` and `--fallback` set for
    /// `--model` over what it says.
    pub fn table(&self, mut table: ModelTable) -> ModelTable {
        if let Some(window) = self.context_window {
            table.set_window(&self.model, window);
        }
        if !self.fallback.is_empty() {
            table.set_fallback(&self.model, self.fallback.clone());
        }
        table
    }
}

/// What no turn may exceed (`docs/semantics.md`, "Limits"); 0 turns a limit off.
#[derive(Clone, Debug, Args)]
pub struct LimitsArgs {
    /// End a turn still running after this long (`error TURN_TIMEOUT`), e.g. `30m`; `0s`: never.
    #[arg(long, env = "AIRLOCK_TURN_TIMEOUT", default_value = "30m", value_parser = humantime::parse_duration)]
    pub turn_timeout: Duration,
    /// End a turn after this many steps (`error MAX_STEPS`).
    #[arg(long, env = "AIRLOCK_MAX_STEPS", default_value_t = Limits::default().max_steps)]
    pub max_steps: u32,
    /// End a turn whose step streams more than this many bytes (`error OUTPUT_LIMIT`).
    #[arg(long, env = "AIRLOCK_MAX_STEP_OUTPUT", default_value_t = Limits::default().step_output_bytes)]
    pub max_step_output: u64,
    /// The longest provider `Retry-After` waited for; a longer one ends the turn with the
    /// provider's error (`RATE_LIMIT`).
    #[arg(long, env = "AIRLOCK_MAX_RETRY_AFTER", default_value = "60s", value_parser = humantime::parse_duration)]
    pub max_retry_after: Duration,
}

impl From<&LimitsArgs> for Limits {
    fn from(args: &LimitsArgs) -> Limits {
        Limits {
            turn_ms: args.turn_timeout.as_millis() as u64,
            max_steps: args.max_steps,
            step_output_bytes: args.max_step_output,
            max_retry_after_ms: args.max_retry_after.as_millis() as u64,
        }
    }
}

/// `--durability`: how hard commits hold on to the disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum DurabilityArg {
    /// Every commit survives power loss.
    #[default]
    Full,
    /// Faster; power loss may drop the last commits (a crash does not).
    Normal,
}

impl From<DurabilityArg> for Durability {
    fn from(arg: DurabilityArg) -> Durability {
        match arg {
            DurabilityArg::Full => Durability::Full,
            DurabilityArg::Normal => Durability::Normal,
        }
    }
}
