//! Accepting HTTP connections (`docs/http-api.md`, "Connections"): each is served by hyper with
//! a header-read timeout (which also closes a connection idle between requests), at most
//! [`Connections::max`] at once; one more is answered 503 and closed. On shutdown the listener
//! closes and every connection finishes what it is doing.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// How connections are held to account.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Connections {
    /// A request's head must arrive within this long, and a connection idle between requests
    /// is closed after it.
    pub header_timeout: Duration,
    /// A request's body must arrive within this long (408 otherwise).
    pub body_timeout: Duration,
    /// Connections open at once; past this a new one is refused with 503. `None`: as many as the
    /// process may open files, less [`RESERVED_FILES`].
    pub max: Option<usize>,
}

impl Default for Connections {
    fn default() -> Connections {
        Connections {
            header_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(60),
            max: None,
        }
    }
}

/// Open files kept for everything but connections: the data file and its readers, plugins, the
/// model provider's sockets.
pub const RESERVED_FILES: usize = 512;

/// Raises this process's soft limit on open files to its hard limit (each connection is one);
/// answers the limit, when known.
pub fn raise_open_files_limit() -> Option<usize> {
    #[cfg(target_os = "linux")]
    #[allow(unsafe_code)]
    // SAFETY: `getrlimit` and `setrlimit` read and write the `rlimit` passed by reference only.
    unsafe {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit { rlim_cur: limit.rlim_max, ..limit };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
        Some(usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX))
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// Serves `router` on `listener` until `shutdown` completes, then waits for open connections to
/// finish (`stopping` runs first, to end long-lived streams).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Connections,
    shutdown: impl Future<Output = ()>,
    stopping: impl FnOnce(),
) {
    let files = raise_open_files_limit();
    let max = limits.max.unwrap_or_else(|| {
        files.map_or(10_000, |files| files.saturating_sub(RESERVED_FILES).max(64))
    });
    let permits = Arc::new(Semaphore::new(max.min(Semaphore::MAX_PERMITS)));
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
    tokio::pin!(shutdown);
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                // Out of descriptors or memory for a moment: connections that close free them.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        // Small frames (an SSE event, a 202) go out at once, not after the peer's delayed ACK.
        // (A socket that refuses it still works, only slower.)
        drop(tcp.set_nodelay(true));
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            tokio::spawn(refuse(tcp));
            continue;
        };
        let service = TowerToHyperService::new(router.clone());
        let connection = graceful.watch(http.serve_connection(TokioIo::new(tcp), service));
        tokio::spawn(async move {
            drop(connection.await);
            drop(permit);
        });
    }
    drop(listener);
    stopping();
    graceful.shutdown().await;
}

/// Answers a connection over the limit with 503 and closes it.
async fn refuse(mut tcp: TcpStream) {
    const BODY: &str = r#"{"error":{"code":"too-many-connections","message":"the gateway has as many connections open as it allows; try again in a second","details":{}}}"#;
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{BODY}",
        BODY.len()
    );
    let write = async {
        tcp.write_all(answer.as_bytes()).await?;
        tcp.shutdown().await
    };
    drop(tokio::time::timeout(Duration::from_secs(5), write).await);
}
