//! The SSE wire: frames as [`Bytes`], which a frame sent to many streams (a session's event to
//! each of its subscribers) shares instead of copying, and the response that sends them with a
//! `: ping` comment after every 15 s without one.

use std::convert::Infallible;
use std::fmt::Write as _;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use airlock_core::Status;
use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use tokio::time::{Instant, Sleep};

use airlock_sessions::Update;

/// The longest a stream stays silent: proxies close connections that look dead.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A frame: `id:` when given, `event:`, then the data, one `data:` line per line of it.
pub(super) fn frame(event: &str, id: Option<u64>, data: &str) -> Bytes {
    let mut out = String::with_capacity(data.len() + event.len() + 40);
    if let Some(id) = id {
        let _ = writeln!(out, "id: {id}");
    }
    let _ = writeln!(out, "event: {event}");
    for line in data.split('\n').map(|line| line.strip_suffix('\r').unwrap_or(line)) {
        out.push_str("data: ");
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    Bytes::from(out)
}

/// The first frame of every stream: `: connected`, and how soon to reconnect after a drop.
pub(super) fn connected() -> Bytes {
    Bytes::from_static(b": connected\nretry: 1000\n\n")
}

/// The frame of a session's update. An event's and a queue's are made once, by the first stream
/// that sends them, and shared by every other.
pub(super) fn update(session_id: &str, update: &Update) -> Bytes {
    match update {
        Update::Event(event) => {
            event.frame(|| frame("session.event", Some(event.seq), &event.json))
        }
        Update::Status(status) => self::status(session_id, *status),
        Update::Queue(snapshot) => snapshot.frame(|json| frame("session.queue", None, json)),
        Update::Subagent(name, data) => frame(name, None, data),
    }
}

/// `session.status`: whole-agent status of a session.
pub(super) fn status(session_id: &str, status: Status) -> Bytes {
    let data = serde_json::json!({"sessionId": session_id, "status": status});
    frame("session.status", None, &data.to_string())
}

/// A `text/event-stream` response of `frames`, with a ping whenever 15 s pass without one.
pub(super) fn response(frames: impl Stream<Item = Bytes> + Send + 'static) -> Response {
    let ping = tokio::time::sleep(KEEP_ALIVE);
    let body = KeepAlive { frames, ping }.map(Ok::<_, Infallible>);
    let headers =
        [(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")];
    (headers, Body::from_stream(body)).into_response()
}

pin_project_lite::pin_project! {
    /// `frames`, and a ping when `ping` fires first; every frame sent sets it 15 s ahead again.
    struct KeepAlive<S> {
        #[pin]
        frames: S,
        #[pin]
        ping: Sleep,
    }
}

impl<S: Stream<Item = Bytes>> Stream for KeepAlive<S> {
    type Item = Bytes;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let mut this = self.project();
        let next = match this.frames.poll_next(cx) {
            Poll::Ready(next) => next,
            Poll::Pending => {
                ready!(this.ping.as_mut().poll(cx));
                Some(Bytes::from_static(b": ping\n\n"))
            }
        };
        this.ping.reset(Instant::now() + KEEP_ALIVE);
        Poll::Ready(next)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use http_body_util::BodyExt;

    use super::*;
    use airlock_sessions::{Committed, QueueSnapshot};

    #[test]
    fn an_event_frame_is_made_once_and_shared_by_every_stream() {
        let event = Committed::new(3, r#"{"seq":3,"type":"turn/end"}"#.to_owned());
        let first = update("s", &Update::Event(event.clone()));
        let second = update("s", &Update::Event(event));
        assert_eq!(
            &first[..],
            b"id: 3\nevent: session.event\ndata: {\"seq\":3,\"type\":\"turn/end\"}\n\n"
        );
        assert_eq!(first.as_ptr(), second.as_ptr(), "the second stream sends the same bytes");
    }

    #[test]
    fn a_queue_frame_is_made_once_and_shared_by_every_stream() {
        let snapshot = Arc::new(QueueSnapshot::new("s", Vec::new()));
        let first = update("s", &Update::Queue(snapshot.clone()));
        let second = update("s", &Update::Queue(snapshot));
        // The data's keys come in the order serde_json keeps (its `preserve_order` feature,
        // which another crate of the workspace may turn on): compared as JSON.
        let frame = std::str::from_utf8(&first).unwrap();
        let data =
            frame.strip_prefix("event: session.queue\ndata: ").and_then(|f| f.strip_suffix("\n\n"));
        let data: serde_json::Value = serde_json::from_str(data.expect(frame)).unwrap();
        assert_eq!(data, serde_json::json!({"sessionId": "s", "items": []}));
        assert_eq!(first.as_ptr(), second.as_ptr());
    }

    #[test]
    fn each_line_of_data_is_a_data_line_of_its_own() {
        let frame = frame("note", None, "one\r\ntwo\nthree");
        assert_eq!(&frame[..], b"event: note\ndata: one\ndata: two\ndata: three\n\n");
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_stream_sends_a_ping_every_15_seconds() {
        let mut body = response(futures::stream::pending()).into_body();
        for _ in 0..2 {
            let started = tokio::time::Instant::now();
            let frame = body.frame().await.expect("a frame").expect("no error");
            assert_eq!(frame.into_data().expect("data"), ": ping\n\n");
            assert_eq!(started.elapsed(), KEEP_ALIVE);
        }
    }
}
