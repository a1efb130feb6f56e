//! Connections a client holds open (`docs/http-api.md`, "Connections"): the header timeout, the
//! body timeout and the cap on open connections, against a real `airlock serve`.

use std::time::Duration;

use airlock_tests::world::world_with;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Reads until the server closes the connection; answers what it sent. Fails after `within`.
async fn until_closed(tcp: &mut TcpStream, within: Duration) -> Vec<u8> {
    let mut got = Vec::new();
    tokio::time::timeout(within, tcp.read_to_end(&mut got))
        .await
        .expect("the server closed the connection in time")
        .ok();
    got
}

#[tokio::test]
async fn slowloris_connections_are_closed_at_the_header_timeout_while_healthz_answers() {
    let w = world_with(&[("AIRLOCK_HEADER_TIMEOUT", "2s")]).await;
    let addr = w.gw.base.trim_start_matches("http://").to_owned();
    let mut held = Vec::new();
    for i in 0..3_000 {
        let mut tcp = TcpStream::connect(&addr).await.unwrap();
        // Half a request head, never finished; every third connection sends nothing at all.
        if i % 3 != 0 {
            tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ").await.unwrap();
        }
        held.push(tcp);
    }
    // Each check on a connection of its own: a pooled one, idle past the header timeout, would
    // be closed by the gateway as the dawdlers are, and might be reused just as it closes.
    let fresh = airlock_tests::http_client().pool_max_idle_per_host(0).build().unwrap();
    let healthz = async || fresh.get(w.gw.url("/healthz")).send().await.unwrap().status().as_u16();
    assert_eq!(healthz().await, 200, "the gateway answers while 3,000 connections dawdle");
    let closing = held.iter_mut().map(|tcp| until_closed(tcp, Duration::from_secs(20)));
    let answers = futures::future::join_all(closing).await;
    assert_eq!(answers.len(), 3_000);
    assert_eq!(healthz().await, 200);
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_is_408() {
    let w = world_with(&[("AIRLOCK_BODY_TIMEOUT", "1s")]).await;
    let addr = w.gw.base.trim_start_matches("http://").to_owned();
    let mut slow = TcpStream::connect(&addr).await.unwrap();
    let head = "POST /v1/sessions HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{";
    slow.write_all(head.as_bytes()).await.unwrap();
    let mut answer = [0u8; 512];
    let n = tokio::time::timeout(Duration::from_secs(20), slow.read(&mut answer))
        .await
        .expect("an answer in time")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains(r#""code":"request-timeout""#), "{answer}");
}

#[tokio::test]
async fn a_connection_over_the_cap_is_answered_503_and_closed() {
    let w = world_with(&[("AIRLOCK_MAX_CONNECTIONS", "4")]).await;
    let addr = w.gw.base.trim_start_matches("http://").to_owned();
    let mut open = Vec::new();
    for _ in 0..4 {
        open.push(TcpStream::connect(&addr).await.unwrap());
    }
    // The four are accepted in order; the fifth finds no room.
    let mut fifth = TcpStream::connect(&addr).await.unwrap();
    let answer =
        String::from_utf8(until_closed(&mut fifth, Duration::from_secs(20)).await).unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("retry-after: 1") && answer.contains("too-many-connections"));
    drop(open);
}

/// The gateway's resident memory, in MB.
fn rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS in status");
    let kb: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb / 1024.0
}

#[tokio::test]
async fn after_10000_sse_streams_close_rss_returns_within_twice_its_idle_value() {
    let w = world_with(&[]).await;
    let s = w.gw.session().await;
    let addr = w.gw.base.trim_start_matches("http://").to_owned();
    let idle = rss_mb(w.gw.pid());
    let request = format!("GET /v1/sessions/{s}/events HTTP/1.1\r\nhost: {addr}\r\n\r\n");
    let mut streams = Vec::new();
    for _ in 0..40 {
        let opened = (0..250).map(|_| async {
            let mut tcp = TcpStream::connect(&addr).await.unwrap();
            tcp.write_all(request.as_bytes()).await.unwrap();
            let mut head = [0u8; 12];
            tcp.read_exact(&mut head).await.unwrap();
            assert_eq!(&head, b"HTTP/1.1 200");
            tcp
        });
        streams.extend(futures::future::join_all(opened).await);
    }
    let held = rss_mb(w.gw.pid());
    drop(streams);
    w.gw.until_metric("airlock_sse_subscribers", |n| n == 0.0).await;
    // The memory goes back a moment after the last stream is gone.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut after = rss_mb(w.gw.pid());
    while after > 2.0 * idle && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        after = rss_mb(w.gw.pid());
    }
    assert!(
        after <= 2.0 * idle,
        "idle {idle:.1} MB, 10,000 streams {held:.1} MB, after {after:.1} MB"
    );
}
