//! SSE: many subscribers of one session, and many idle connections held at once. Subscribers are
//! raw HTTP/1.1 connections read by this process, so the client's own cost stays small.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use airlock_tests::MockModel;
use airlock_tests::gateway::Gateway;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use crate::enqueue::inject;
use crate::measure::{percentile, rss_mb};
use crate::scale::start;
use crate::{Row, Size};

/// Opens `GET /v1/sessions/{session}/events` as SSE; answers once the response head arrived.
async fn subscribe(gw: &Gateway, session: &str) -> TcpStream {
    let address = gw.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).await.expect("the gateway accepts");
    let request = format!(
        "GET /v1/sessions/{session}/events HTTP/1.1\r\nhost: {address}\r\naccept: text/event-stream\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.expect("the request is sent");
    stream
}

/// Reads SSE frames from `stream`, telling `seen` the seq of each event with when it arrived.
async fn read_ids(mut stream: TcpStream, seen: mpsc::UnboundedSender<(u64, Instant)>) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut pending = Vec::new();
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let now = Instant::now();
        pending.extend_from_slice(&buf[..n]);
        // Every complete line is looked at once; an `id: N` line names an event.
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            if let Some(id) = line.strip_prefix(b"id:") {
                let seq = std::str::from_utf8(id).ok().and_then(|s| s.trim().parse().ok());
                if let Some(seq) = seq
                    && seen.send((seq, now)).is_err()
                {
                    return;
                }
            }
        }
    }
}

/// Time from a POST to each of `size.subscribers` subscribers seeing its event.
pub async fn fan_out(work: &Path, size: Size) -> Vec<Row> {
    const S: &str = "SSE";
    let mock = MockModel::start().await;
    let (gw, _) = start(&work.join("sse.db"), &mock, &[]).await;
    let session = gw.session().await;
    inject(&gw.client, &gw, &session).await;
    let (seen, mut sightings) = mpsc::unbounded_channel();
    for _ in 0..size.subscribers {
        let stream = subscribe(&gw, &session).await;
        tokio::spawn(read_ids(stream, seen.clone()));
    }
    drop(seen);
    // Every subscriber has the first event (from the log) before the timing starts.
    let mut first = 0;
    while first < size.subscribers {
        let (seq, _) = sightings.recv().await.expect("subscribers read");
        first += usize::from(seq == 0);
    }
    let mut delays = Vec::with_capacity(size.subscribers * size.posts);
    for k in 1..=size.posts as u64 {
        let sent = Instant::now();
        inject(&gw.client, &gw, &session).await;
        let mut got = 0;
        while got < size.subscribers {
            let (seq, at) = sightings.recv().await.expect("subscribers read");
            if seq == k {
                delays.push(at.duration_since(sent));
                got += 1;
            }
        }
    }
    let n = size.subscribers;
    vec![
        Row::new(
            S,
            format!("{n} subscribers, POST → seen: p50"),
            percentile(&mut delays, 50.0),
            "ms",
        ),
        Row::new(
            S,
            format!("{n} subscribers, POST → seen: p99"),
            percentile(&mut delays, 99.0),
            "ms",
        )
        .at_most(20.0),
    ]
}

/// `size.idle_streams` SSE connections held open on 10 sessions: the gateway's memory, and how
/// fast other requests are answered meanwhile.
pub async fn idle_streams(work: &Path, size: Size) -> Vec<Row> {
    const S: &str = "SSE";
    let mock = MockModel::start().await;
    let (gw, _) = start(&work.join("idle.db"), &mock, &[]).await;
    let gw = Arc::new(gw);
    let mut sessions = Vec::new();
    for _ in 0..10 {
        sessions.push(gw.session().await);
    }
    let before = rss_mb(gw.pid());
    let mut streams = Vec::with_capacity(size.idle_streams);
    for chunk in (0..size.idle_streams).collect::<Vec<_>>().chunks(250) {
        let opened = chunk.iter().map(|i| subscribe(&gw, &sessions[i % sessions.len()]));
        for mut stream in futures::future::join_all(opened).await {
            // The response head: the stream is open and followed.
            let mut head = [0u8; 12];
            stream.read_exact(&mut head).await.expect("a response head");
            assert_eq!(&head, b"HTTP/1.1 200", "an SSE stream opens");
            streams.push(stream);
        }
    }
    let held = rss_mb(gw.pid());
    let other = gw.session().await;
    let mut latencies = Vec::new();
    for _ in 0..200 {
        latencies.push(inject(&gw.client, &gw, &other).await);
    }
    let n = size.idle_streams;
    let mut rows = vec![
        Row::new(S, format!("{n} idle streams held: RSS"), held, "MB").at_most(200.0),
        Row::new(S, "  RSS per stream", (held - before) * 1024.0 / n as f64, "KB"),
        Row::new(S, "  meanwhile, enqueue p99", percentile(&mut latencies, 99.0), "ms"),
    ];
    drop(streams);
    gw.until_metric("airlock_sse_subscribers", |n| n == 0.0).await;
    let after = settled_rss_mb(gw.pid());
    rows.push(Row::new(S, "  after they close: RSS ÷ before", after / before, "×").at_most(2.0));
    rows
}

/// The process's RSS once it stops falling (the allocator returns pages a moment after the last
/// stream closes).
fn settled_rss_mb(pid: u32) -> f64 {
    let mut last = rss_mb(pid);
    loop {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let now = rss_mb(pid);
        if now >= last - 0.5 {
            return now;
        }
        last = now;
    }
}
