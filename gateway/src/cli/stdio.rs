//! `airlock stdio`: the low-level SDK protocol (see [`crate::stdio`]) on this process's
//! stdin/stdout, over embedded sessions.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

use super::CliError;
use super::embedded::Embedded;

/// Arguments of `airlock stdio`.
#[derive(Debug, Args)]
pub struct StdioArgs {
    /// The sessions (`--model` serves new ones until `initialize` names a model).
    #[command(flatten)]
    pub sessions: super::args::EmbeddedArgs,
}

/// Serves until `shutdown` or the end of stdin; exit 0 unless setup or stdio fails.
pub async fn run(args: StdioArgs, cache_dir: Option<PathBuf>) -> ExitCode {
    let served = async {
        let embedded = Embedded::open(&args.sessions, cache_dir.as_deref()).await?;
        embedded.sessions.recover().await?;
        let serve = airlock_editors::stdio::serve(embedded.sessions.clone(), input(), output());
        // A task of its own, so the runtime's workers run it rather than waking this thread,
        // which only blocks on the runtime, for each frame.
        let served = tokio::spawn(serve).await.map_err(std::io::Error::other);
        served
            .and_then(|served| served)
            .map_err(|e| CliError::Connection(format!("stdio failed: {e}")))?;
        Ok::<_, CliError>(ExitCode::SUCCESS)
    };
    let code = super::exit_code(served.await);
    if code == ExitCode::SUCCESS {
        // Everything is committed and every frame written: end here, without waiting for
        // teardown (sessions, the store's threads, a read of stdin that cannot be cancelled).
        std::process::exit(0);
    }
    code
}

/// Stdin as the protocol reads it. A pipe (how programs drive `airlock stdio`) is read by the
/// runtime's event loop; anything else (a terminal, a file) by tokio's blocking stdin, whose
/// every read is a hand-off to a blocking thread and back.
fn input() -> Box<dyn AsyncRead + Unpin + Send> {
    let pipe =
        std::io::stdin().as_fd().try_clone_to_owned().and_then(pipe::Receiver::from_owned_fd);
    match pipe {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdin()),
    }
}

/// Stdout as the protocol writes it: a pipe is written by the event loop, like [`input`]. Not
/// when stderr is the same pipe: non-blocking belongs to the pipe's open file, so a full pipe
/// would fail a diagnostic written to stderr instead of waiting.
fn output() -> Box<dyn AsyncWrite + Unpin + Send> {
    let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
    if same_file(stdout.as_fd(), stderr.as_fd()) {
        return Box::new(tokio::io::stdout());
    }
    match stdout.as_fd().try_clone_to_owned().and_then(pipe::Sender::from_owned_fd) {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdout()),
    }
}

fn same_file(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> bool {
    let identity = |fd: BorrowedFd<'_>| {
        let metadata = File::from(fd.try_clone_to_owned()?).metadata()?;
        Ok::<_, std::io::Error>((metadata.dev(), metadata.ino()))
    };
    matches!((identity(a), identity(b)), (Ok(a), Ok(b)) if a == b)
}
