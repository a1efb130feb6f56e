//! `airlock run "task"`: the one-shot CLI. It owns the idle-to-idle interval of its session, so it
//! may report a result: the final response on stdout, and an exit code that is 0 only when the
//! last turn completed. Sessions live in a SQLite file: a temporary one unless `--data` names one.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use airlock_core::{ContentBlock, Delivery, Message, TurnEndReason};
use clap::Args;

use super::CliError;
use super::approve::{Approve, Approver};
use super::args::EmbeddedArgs;
use super::embedded::Embedded;
use super::progress::Progress;
use airlock_base::clock::fresh_id;
use airlock_sessions::{SessionSpec, Summary};

/// Arguments of `airlock run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The task, sent as a followup.
    pub task: String,
    /// The system prompt of a new session.
    #[arg(long)]
    pub system: Option<String>,
    /// Continue this session of `--data` instead of starting a fresh one.
    #[arg(long, requires = "data")]
    pub session: Option<String>,
    /// Print the `RunResult` as JSON instead of the final response.
    #[arg(long)]
    pub json: bool,
    /// Who answers a call that waits for approval (see `--approval-for`): `ask` on stderr and
    /// read y/n from stdin, `all` approves every call, `none` denies every call.
    #[arg(long, value_enum, default_value_t = Approve::Ask)]
    pub approve: Approve,
    /// The session's file, model and sandbox.
    #[command(flatten)]
    pub sessions: EmbeddedArgs,
}

/// Runs the task; prints the result per `semantics.md` and returns the exit code.
pub async fn run(args: RunArgs, cache_dir: Option<PathBuf>) -> ExitCode {
    super::exit_code(run_task(args, cache_dir).await)
}

/// Ctrl-C (SIGINT), listened for from the moment it is made.
struct Interrupt {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
}

impl Interrupt {
    fn listen() -> std::io::Result<Interrupt> {
        #[cfg(unix)]
        let interrupt = Interrupt {
            signal: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?,
        };
        #[cfg(not(unix))]
        let interrupt = Interrupt {};
        Ok(interrupt)
    }

    async fn recv(&mut self) {
        #[cfg(unix)]
        self.signal.recv().await;
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}

async fn run_task(args: RunArgs, cache_dir: Option<PathBuf>) -> Result<ExitCode, CliError> {
    let embedded = Embedded::open(&args.sessions, cache_dir.as_deref()).await?;
    let sessions = &embedded.sessions;
    let handle = match &args.session {
        Some(id) => sessions.open(id).await?,
        None => {
            let spec = SessionSpec { system: args.system.clone(), ..SessionSpec::default() };
            sessions.open_new(spec, None).await?
        }
    };
    // Ctrl-C cancels the run (clearing the inbox); its turn then ends aborted and we exit 130,
    // as a shell expects of an interrupted command.
    // Listened for before the task goes in, so an early Ctrl-C is not the default exit.
    let mut interrupt = Interrupt::listen().map_err(CliError::Signal)?;
    let task = Message::user(fresh_id(), vec![ContentBlock::Text { text: args.task.clone() }]);
    let approver = Approver::start(args.approve, sessions.clone(), handle.id().to_owned());
    // The follower was subscribed before the task went in: the progress shows the whole interval.
    let (mut run, mut follower) = sessions.run(&handle, task, Delivery::Followup, None).await?;
    let mut progress = Progress::on_terminal();
    // On a terminal the progress already showed the answer as it streamed: print it once.
    let shown = progress.is_some() && std::io::stdout().is_terminal();
    let print = !args.json && !shown;

    let mut interrupted = false;
    let last_seq = loop {
        tokio::select! {
            last = run.last_seq() => break last?,
            Ok(Some(update)) = follower.next() => {
                approver.follow(&update, &handle);
                if let Some(progress) = progress.as_mut() {
                    progress.show(&update);
                }
            }
            _ = interrupt.recv(), if !interrupted => {
                interrupted = true;
                sessions.cancel(handle.id(), false).await?;
            }
        }
    };
    if let Some(mut progress) = progress {
        // Show the rest of the interval before the result (its calls are all answered).
        while follower.cursor().is_none_or(|seen| seen < last_seq)
            && let Ok(Some(update)) = follower.next().await
        {
            progress.show(&update);
        }
        progress.finish();
    }
    let result = sessions.result(&run, last_seq).await?;
    if args.json {
        println!("{}", serde_json::to_string(&result).expect("results serialize"));
    }
    let code = report(&result.summary, print);
    Ok(if interrupted { ExitCode::from(130) } else { code })
}

/// Reports the owned interval's result (the final response only when `print`) and picks the exit
/// code: 0 only when the last turn completed.
fn report(summary: &Summary, print: bool) -> ExitCode {
    let fail = |code: &str, message: &str| {
        eprintln!("airlock: {code}: {message}");
        ExitCode::FAILURE
    };
    match &summary.finish {
        Some(TurnEndReason::Completed) => {
            if print {
                println!("{}", summary.final_response);
            }
            ExitCode::SUCCESS
        }
        Some(TurnEndReason::Error { error }) => fail(&error.code, &error.message),
        Some(TurnEndReason::MaxTokens) => {
            if print {
                println!("{}", summary.final_response);
            }
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
        Some(TurnEndReason::Paused) => {
            fail("paused", "the session's budget is spent; raise it to let the run go on")
        }
        None => fail("no-turn", "the task never started a turn"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_no_turn_exits_1() {
        assert_eq!(report(&Summary::default(), true), ExitCode::FAILURE);
    }
}
