//! `airlock acp` as a child process, driven by the `agent-client-protocol` crate's client side
//! over its stdin/stdout, its sessions answered by the mock model over HTTP.

use std::path::Path;
use std::process::Stdio;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    InitializeRequest, NewSessionRequest, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionId, SessionNotification,
    SessionUpdate,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, ByteStreams, Client, Error};
use airlock_tests::{MockModel, Reply};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::mpsc;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

/// Every `session/update` of a connection, in order.
pub type Updates = mpsc::UnboundedReceiver<SessionUpdate>;

/// Every `session/request_permission` of a connection, in order.
pub type Asked = mpsc::UnboundedReceiver<RequestPermissionRequest>;

/// A running `airlock acp`.
pub struct Airlock {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    /// The HTTP API of the same sessions, with `--listen`.
    pub http: Option<String>,
}

impl Airlock {
    /// `airlock acp` on a fresh temp dir (alive as long as the guard) whose model answers
    /// `replies` in order; `listen` also serves HTTP.
    pub async fn answering(
        replies: impl IntoIterator<Item = Reply>,
        listen: bool,
    ) -> (tempfile::TempDir, MockModel, Airlock) {
        let (dir, mock) = (tempfile::tempdir().unwrap(), MockModel::start().await);
        for reply in replies {
            mock.push(reply);
        }
        let args: &[&str] = if listen { &["--listen", "127.0.0.1:0"] } else { &[] };
        let airlock = Airlock::start(dir.path(), &mock, args).await;
        (dir, mock, airlock)
    }

    /// `airlock acp` with more arguments (`--listen …` also serves HTTP), its sessions' model
    /// the mock.
    pub async fn start(dir: &Path, mock: &MockModel, args: &[&str]) -> Airlock {
        Airlock::spawn(dir, &mock.base_url(), "openai:mock", args).await
    }

    /// `airlock acp` on `dir`'s data file, `AIRLOCK_BASE_URL` set to `base_url` and new sessions
    /// on `model`.
    pub async fn spawn(dir: &Path, base_url: &str, model: &str, args: &[&str]) -> Airlock {
        let listen = args.contains(&"--listen");
        let mut command = Command::from(crate::common::airlock());
        command
            .args(["acp", "--model", model, "--data"])
            .arg(dir.join("acp.db"))
            .env("AIRLOCK_BASE_URL", base_url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if listen { Stdio::piped() } else { Stdio::inherit() })
            .kill_on_drop(true);
        command.args(args);
        let mut child = command.spawn().expect("airlock acp starts");
        let http = match child.stderr.take() {
            None => None,
            Some(stderr) => {
                let mut lines = BufReader::new(stderr).lines();
                let base = loop {
                    let line = lines.next_line().await.unwrap().expect("airlock says where");
                    if let Some(url) = line.strip_prefix("airlock: listening on ") {
                        break url.trim().to_owned();
                    }
                };
                tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
                Some(base)
            }
        };
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        Airlock { child, stdin, stdout, http }
    }

    /// Kills the process and waits until it is gone, and its hold on the data file with it.
    pub async fn stop(mut self) {
        self.child.kill().await.expect("airlock acp is killed");
    }

    /// Runs `body` as the ACP client; every `session/update` arrives on its receiver, in order.
    pub async fn client<R>(
        &mut self,
        body: impl AsyncFnOnce(ConnectionTo<Agent>, Updates) -> Result<R, Error>,
    ) -> R {
        self.client_choosing("reject-once", async move |cx, updates, _| body(cx, updates).await)
            .await
    }

    /// [`Airlock::client`] that answers every `session/request_permission` with the option
    /// `choice` and hands `body` each request it answered.
    pub async fn client_choosing<R>(
        &mut self,
        choice: &'static str,
        body: impl AsyncFnOnce(ConnectionTo<Agent>, Updates, Asked) -> Result<R, Error>,
    ) -> R {
        let stdin = self.stdin.take().expect("one client per process").compat_write();
        let transport = ByteStreams::new(stdin, self.stdout.take().unwrap().compat());
        let (tx, rx) = mpsc::unbounded_channel();
        let (asked_tx, asked) = mpsc::unbounded_channel();
        Client
            .v1()
            .name("airlock-test")
            .on_receive_notification(
                async move |note: SessionNotification, _cx| {
                    let _ = tx.send(note.update);
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .on_receive_request(
                async move |request: RequestPermissionRequest,
                            responder: Responder<RequestPermissionResponse>,
                            _cx| {
                    let _ = asked_tx.send(request);
                    let chosen = SelectedPermissionOutcome::new(choice);
                    responder.respond(RequestPermissionResponse::new(
                        RequestPermissionOutcome::Selected(chosen),
                    ))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .connect_with(transport, async move |cx| body(cx, rx, asked).await)
            .await
            .expect("the ACP conversation")
    }

    /// [`Airlock::client`] in a session it opened (`initialize`, then `session/new`).
    pub async fn in_session<R>(
        &mut self,
        body: impl AsyncFnOnce(ConnectionTo<Agent>, SessionId, Updates) -> Result<R, Error>,
    ) -> R {
        self.client(async move |cx, updates| {
            let session = open(&cx).await?;
            body(cx, session, updates).await
        })
        .await
    }
}

/// Runs `body` in a session of a fresh `airlock acp` whose model answers `replies` in turn.
pub async fn in_session_answering<R>(
    replies: impl IntoIterator<Item = Reply>,
    body: impl AsyncFnOnce(ConnectionTo<Agent>, SessionId, Updates) -> Result<R, Error>,
) -> R {
    let (_dir, _mock, mut airlock) = Airlock::answering(replies, false).await;
    airlock.in_session(body).await
}

/// `initialize`, then `session/new`.
pub async fn open(cx: &ConnectionTo<Agent>) -> Result<SessionId, Error> {
    let init = cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
    assert!(init.agent_capabilities.load_session);
    Ok(cx.send_request(NewSessionRequest::new("/tmp")).block_task().await?.session_id)
}
