//! `airlock run "task"`: the one-shot CLI. It owns the idle-to-idle interval of a fresh session,
//! so it may report a result: the final response on stdout, and an exit code that is 0 only when
//! the last turn completed.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use airlock_core::{
    CancelCause, Config, ContentBlock, Input, Message, Role, Source, Target, TurnEndReason,
};
use clap::Args;

use crate::core_host::CoreHost;
use crate::model;
use crate::session::{MemoryLog, Session, SessionError, SessionParts};
use crate::summary::summarize;
use crate::tools::ToolRegistry;

/// Arguments of `airlock run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The task, sent as the session's first message.
    pub task: String,
    /// The model: `demo` (offline, no key), `openai:<model>` or `deepseek:<model>`.
    #[arg(long, env = "AIRLOCK_MODEL", default_value = "demo")]
    pub model: String,
}

/// Runs the task; prints the result per `semantics.md` and returns the exit code.
pub async fn run(args: RunArgs, cache_dir: Option<PathBuf>) -> ExitCode {
    match run_task(args, cache_dir).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("airlock: {error}");
            ExitCode::FAILURE
        }
    }
}

#[derive(Debug, thiserror::Error)]
enum RunError {
    #[error(transparent)]
    Model(#[from] model::ModelSetupError),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("the core refused the task ({0}); this is a bug in the core")]
    Refused(String),
}

async fn run_task(args: RunArgs, cache_dir: Option<PathBuf>) -> Result<ExitCode, RunError> {
    let model = model::from_name(&args.model)?;
    let host = Arc::new(CoreHost::new(cache_dir.as_deref()).map_err(SessionError::Core)?);
    let session_id = uuid::Uuid::now_v7().to_string();
    let config = Config::new(&session_id, model.provider(), model.model());
    let log = Arc::new(MemoryLog::default());
    let tools = ToolRegistry::builtin();
    let mut session = Session::create(SessionParts { host, config, model, tools, log })?;

    let task = Message {
        id: uuid::Uuid::now_v7().to_string(),
        role: Role::User,
        content: vec![ContentBlock::Text { text: args.task }],
        source: Source::of("user"),
    };
    let fed =
        session.feed(Input::Send { message: task, target: Target::NextTurn, wakeup: true }).await?;
    if let Some(refusal) = fed.refusal {
        return Err(RunError::Refused(refusal.message));
    }

    // Ctrl-C cancels the run (clearing the inbox); the turn then ends aborted and we exit 1.
    let mut interrupt = std::pin::pin!(tokio::signal::ctrl_c());
    let mut interrupted = false;
    while session.status() == airlock_core::Status::Running {
        tokio::select! {
            answer = session.next_answer() => { session.feed(answer).await?; }
            _ = &mut interrupt, if !interrupted => {
                interrupted = true;
                session.feed(Input::Cancel { cause: CancelCause::User, keep_inbox: false }).await?;
            }
        }
    }
    let events = session.events().await.map_err(SessionError::Store)?;
    Ok(report(&summarize(&events)))
}

/// Prints the owned interval's result and picks the exit code.
fn report(summary: &crate::summary::RunSummary) -> ExitCode {
    let fail = |code: &str, message: &str| {
        eprintln!("airlock: {code}: {message}");
        ExitCode::FAILURE
    };
    match &summary.finish {
        Some(TurnEndReason::Completed) => {
            println!("{}", summary.final_response);
            ExitCode::SUCCESS
        }
        Some(TurnEndReason::Error { error }) => fail(&error.code, &error.message),
        Some(TurnEndReason::MaxTokens) => {
            println!("{}", summary.final_response);
            fail(
                "max-tokens",
                "the answer was cut off at the model's output token limit; raise the limit or ask for less",
            )
        }
        Some(TurnEndReason::Aborted { reason }) => {
            let cause = serde_json::to_value(reason.kind).unwrap_or_default();
            fail("aborted", &format!("the run was cancelled ({})", cause.as_str().unwrap_or("?")))
        }
        Some(TurnEndReason::Blocked) => fail("blocked", "the pre-step policy rejected the task"),
        Some(TurnEndReason::Interrupted) => {
            fail("interrupted", "the run was interrupted by a crash")
        }
        None => fail("no-turn", "the task never started a turn"),
    }
}
