//! A session's SSE stream as a test reads it: frames in order, waited for (never slept for).

use std::time::Duration;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use serde_json::Value;

/// A frame of a session's SSE stream.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    /// A log event: its seq and envelope.
    Event(u64, Value),
    /// `session.status`.
    Status(String),
    /// `session.queue`.
    Queue(Value),
    /// Any other named frame (`run.result`, `error`): its name and data.
    Other(String, Value),
}

type Frames =
    std::pin::Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// An open SSE stream.
pub struct Sse {
    frames: Frames,
}

impl Sse {
    /// The stream of an answer, which must be 200.
    pub fn of(res: reqwest::Response) -> Sse {
        assert_eq!(res.status(), 200, "an SSE stream answers 200");
        Sse { frames: Box::pin(res.bytes_stream().eventsource()) }
    }

    /// The next frame; a stream silent for 30 s fails the test (a hung turn is a bug).
    pub async fn next(&mut self) -> Frame {
        self.next_or_end().await.expect("the stream is open")
    }

    /// The next frame, or `None` once the server closed the stream.
    pub async fn next_or_end(&mut self) -> Option<Frame> {
        let event = tokio::time::timeout(Duration::from_secs(30), self.frames.next())
            .await
            .expect("a frame within 30 s")?
            .expect("a well-formed frame");
        Some(frame_of(&event))
    }

    /// The next frame, or `None` once the stream ended or was cut (its gateway died).
    pub async fn next_unless_cut(&mut self) -> Option<Frame> {
        let event = tokio::time::timeout(Duration::from_secs(30), self.frames.next())
            .await
            .expect("a frame within 30 s")?
            .ok()?;
        Some(frame_of(&event))
    }

    /// Frames until one matches.
    pub async fn until(&mut self, mut done: impl FnMut(&Frame) -> bool) -> Vec<Frame> {
        let mut frames = Vec::new();
        loop {
            let frame = self.next().await;
            if std::env::var_os("E2E_DEBUG").is_some() {
                eprintln!("frame: {frame:?}");
            }
            let stop = done(&frame);
            frames.push(frame);
            if stop {
                return frames;
            }
        }
    }

    /// Frames until `idle` after a `turn/end`, i.e. the end of a drain.
    pub async fn until_idle(&mut self) -> Vec<Frame> {
        let mut ended = false;
        self.until(|f| {
            if let Frame::Event(_, e) = f {
                ended |= e["type"] == "turn/end";
            }
            ended && *f == Frame::Status("idle".into())
        })
        .await
    }
}

fn frame_of(event: &Event) -> Frame {
    let data: Value = serde_json::from_str(&event.data).expect("frames carry JSON");
    match event.event.as_str() {
        "session.event" => Frame::Event(event.id.parse().expect("events have ids"), data),
        "session.status" => Frame::Status(data["status"].as_str().unwrap().to_owned()),
        "session.queue" => Frame::Queue(data),
        other => Frame::Other(other.to_owned(), data),
    }
}

/// The seqs of the log events among frames.
pub fn seqs(frames: &[Frame]) -> Vec<u64> {
    frames
        .iter()
        .filter_map(|f| if let Frame::Event(seq, _) = f { Some(*seq) } else { None })
        .collect()
}

/// The `type`s of the log events among frames.
pub fn types(frames: &[Frame]) -> Vec<String> {
    frames
        .iter()
        .filter_map(|f| {
            if let Frame::Event(_, e) = f { e["type"].as_str().map(str::to_owned) } else { None }
        })
        .collect()
}
