//! Turns through `airlock stdio`, driven by this independent JSON-RPC client: one session's
//! prompt → idle, and many sessions in a closed loop. The log is a real file at `full`
//! durability, so every turn is fsynced.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use airlock_tests::MockModel;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, oneshot};

use crate::measure::{Usage, percentile, rss_mb};
use crate::{Row, Size};

/// What the reader hands on: answers by request id, `idle` statuses by session.
#[derive(Default)]
struct Routes {
    answers: HashMap<u64, oneshot::Sender<Value>>,
    idle: HashMap<String, mpsc::UnboundedSender<()>>,
}

/// `airlock stdio` on a data file, its sessions answered by the mock.
struct StdioGateway {
    child: Child,
    stdin: tokio::sync::Mutex<ChildStdin>,
    routes: Arc<Mutex<Routes>>,
    next_id: std::sync::atomic::AtomicU64,
}

impl StdioGateway {
    /// `airlock stdio` with `args` after its own.
    async fn start(db: &Path, mock: &MockModel, args: &[&str]) -> StdioGateway {
        let mut child = Command::new(airlock_tests::gateway::airlock_bin())
            .args(["stdio", "--model", "openai:mock", "--data"])
            .arg(db)
            .args(args)
            .env("AIRLOCK_BASE_URL", mock.base_url())
            .env("AIRLOCK_CACHE_DIR", airlock_tests::gateway::compiled_cache())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("airlock stdio starts");
        // For a profiler: `perf record -g -p PID`, or `perf report --pid PID` of a whole-system one.
        eprintln!("airlock-bench: airlock stdio has pid {}", child.id().unwrap_or_default());
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let routes = Arc::new(Mutex::new(Routes::default()));
        tokio::spawn(read_frames(BufReader::new(stdout), routes.clone()));
        let gateway = StdioGateway {
            child,
            stdin: tokio::sync::Mutex::new(stdin),
            routes,
            next_id: 0.into(),
        };
        gateway.call("initialize", json!({})).await;
        gateway
    }

    fn pid(&self) -> u32 {
        self.child.id().expect("the gateway runs")
    }

    /// Sends a request and waits for its answer (`result`, or panics on an error).
    async fn call(&self, method: &str, params: Value) -> Value {
        let id = self.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (answer, answered) = oneshot::channel();
        self.routes.lock().expect("routes").answers.insert(id, answer);
        let mut line =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        line.push('\n');
        self.stdin.lock().await.write_all(line.as_bytes()).await.expect("stdin is open");
        let frame = answered.await.expect("the gateway answers");
        assert!(frame.get("error").is_none(), "{method} failed: {frame}");
        frame["result"].clone()
    }

    /// Where the `idle` statuses of `session` go from now on.
    fn idle_of(&self, session: &str) -> mpsc::UnboundedReceiver<()> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.routes.lock().expect("routes").idle.insert(session.to_owned(), tx);
        rx
    }

    /// `n` turns of `session`, one after another: how long each took.
    async fn turns(&self, session: &str, n: usize) -> Vec<std::time::Duration> {
        let mut idle = self.idle_of(session);
        let mut took = Vec::with_capacity(n);
        for _ in 0..n {
            let started = Instant::now();
            self.turn(session, &mut idle).await;
            took.push(started.elapsed());
        }
        took
    }

    /// One turn: a prompt, then the session's next `idle`.
    async fn turn(&self, session: &str, idle: &mut mpsc::UnboundedReceiver<()>) {
        let blocks = json!([{"type": "text", "text": "hello"}]);
        self.call("session/prompt", json!({"sessionId": session, "contentBlocks": blocks})).await;
        idle.recv().await.expect("the session goes idle");
    }
}

async fn read_frames(
    mut stdout: BufReader<tokio::process::ChildStdout>,
    routes: Arc<Mutex<Routes>>,
) {
    let mut line = String::new();
    while stdout.read_line(&mut line).await.is_ok_and(|n| n > 0) {
        let frame: Value = serde_json::from_str(&line).expect("stdout carries JSON-RPC frames");
        line.clear();
        let mut routes = routes.lock().expect("routes");
        if let Some(id) = frame["id"].as_u64() {
            if let Some(answer) = routes.answers.remove(&id) {
                let _ = answer.send(frame);
            }
        } else if frame["method"] == "session.status" && frame["params"]["status"] == "idle" {
            let session = frame["params"]["sessionId"].as_str().unwrap_or_default();
            if let Some(idle) = routes.idle.get(session) {
                let _ = idle.send(());
            }
        }
    }
}

/// Turns a session has in the one-session scenario's headline rows. Every step sends the whole
/// conversation, so a turn of a long session costs more than the turn itself (the long-session
/// row shows how much).
const TURNS_PER_SESSION: usize = 100;

/// One prompt at a time: latency, CPU and context switches per turn over sessions of
/// [`TURNS_PER_SESSION`] turns; then the latency of a session's turns 901 to 1,000.
pub async fn one_session(work: &Path, size: Size) -> Vec<Row> {
    const S: &str = "turn (stdio)";
    let mock = MockModel::start().await;
    mock.forget_requests();
    let gw = StdioGateway::start(&work.join("turn.db"), &mock, &[]).await;
    gw.turns("warm-up", size.warmup_turns).await;
    let before = Usage::of(gw.pid());
    let mut samples = Vec::with_capacity(size.turns);
    for session in 0..size.turns.div_ceil(TURNS_PER_SESSION) {
        let turns = TURNS_PER_SESSION.min(size.turns - samples.len());
        samples.extend(gw.turns(&format!("one-{session}"), turns).await);
    }
    let per_turn = Usage::of(gw.pid()).per(before, size.turns);
    let mut rows = floor(work, &mock).await;
    rows.extend([
        Row::new(S, "prompt → idle, median", percentile(&mut samples, 50.0), "ms").at_most(0.8),
        Row::new(S, "prompt → idle, p99", percentile(&mut samples, 99.0), "ms"),
        Row::new(S, "CPU per turn", per_turn.cpu_ms, "ms").at_most(0.4),
        Row::new(S, "context switches per turn", per_turn.switches, "").at_most(30.0),
        Row::new(S, "RSS after the turns", rss_mb(gw.pid()), "MB"),
    ]);
    if size.long_turns > TURNS_PER_SESSION {
        let last = |n: usize| format!("turns {}–{n} of one session", n - 99);
        let mut long = gw.turns("long", size.long_turns).await.split_off(size.long_turns - 100);
        let measure = format!("{}, median", last(size.long_turns));
        rows.push(Row::new(S, measure, percentile(&mut long, 50.0), "ms"));
        let mut compacting = compacting(work, size.long_turns).await;
        let measure = format!("{}, {COMPACTING} compacting, median", last(size.long_turns));
        rows.push(Row::new(S, measure, percentile(&mut compacting, 50.0), "ms"));
    }
    rows
}

/// The window of the compacting long session, as its row names it.
const COMPACTING: &str = "2,000-token window";

/// The last 100 of `n` turns of one session whose model counts its prompt and has a window of
/// 2,000 tokens: the conversation is compacted every few dozen turns, so a turn costs about what
/// a short session's does, summaries included.
async fn compacting(work: &Path, n: usize) -> Vec<std::time::Duration> {
    let mock = MockModel::start().await;
    mock.forget_requests();
    mock.count_prompt_tokens();
    let args = ["--context-window", "2000"];
    let gw = StdioGateway::start(&work.join("compacting.db"), &mock, &args).await;
    gw.turns("compacting", n).await.split_off(n - 100)
}

/// What a durable turn cannot go below on this machine now: the mock's round trip (a request and
/// its whole streamed answer) and an fsync of a 4 KB write in the data directory, each the median
/// of 200. A turn waits for one round trip and two commits (its prompt; its answer and end).
async fn floor(work: &Path, mock: &MockModel) -> Vec<Row> {
    const S: &str = "turn (stdio)";
    const TIMES: usize = 200;
    let client = airlock_tests::http_client().build().expect("an HTTP client");
    let url = format!("{}/chat/completions", mock.base_url());
    let body = json!({"model": "mock", "stream": true, "messages": [{"role": "user", "content": "hello"}]});
    let mut round_trips = Vec::with_capacity(TIMES);
    for _ in 0..TIMES {
        let started = Instant::now();
        let answer =
            client.post(&url).body(body.to_string()).send().await.expect("the mock answers");
        answer.bytes().await.expect("the mock's answer is read whole");
        round_trips.push(started.elapsed());
    }
    let mut file = std::fs::File::create(work.join("fsync-probe")).expect("a file in the work dir");
    let mut fsyncs = Vec::with_capacity(TIMES);
    for _ in 0..TIMES {
        std::io::Write::write_all(&mut file, &[7; 4096]).expect("the probe is written");
        let started = Instant::now();
        file.sync_all().expect("the probe is synced");
        fsyncs.push(started.elapsed());
    }
    let round_trip = percentile(&mut round_trips, 50.0);
    let fsync = percentile(&mut fsyncs, 50.0);
    vec![
        Row::new(S, "floor: the mock's round trip, median", round_trip, "ms"),
        Row::new(S, "floor: an fsync, median", fsync, "ms"),
        Row::new(S, "floor: a round trip and two fsyncs", round_trip + 2.0 * fsync, "ms"),
    ]
}

/// `sessions` sessions in one process, each sending its next prompt when the last one's turn
/// ended: turns per second.
pub async fn closed_loop(work: &Path, _size: Size) -> Vec<Row> {
    const S: &str = "closed loop (stdio)";
    const SESSIONS: usize = 20;
    const PROMPTS: usize = 10;
    let mock = MockModel::start().await;
    mock.forget_requests();
    let gw = Arc::new(StdioGateway::start(&work.join("loop.db"), &mock, &[]).await);
    let before = Usage::of(gw.pid());
    let started = Instant::now();
    let loops = (0..SESSIONS).map(|i| {
        let gw = gw.clone();
        tokio::spawn(async move {
            let session = format!("loop-{i}");
            let mut idle = gw.idle_of(&session);
            for _ in 0..PROMPTS {
                gw.turn(&session, &mut idle).await;
            }
        })
    });
    for done in futures::future::join_all(loops).await {
        done.expect("a session's loop ran");
    }
    let elapsed = started.elapsed();
    let turns = SESSIONS * PROMPTS;
    let per_turn = Usage::of(gw.pid()).per(before, turns);
    let rate = turns as f64 / elapsed.as_secs_f64();
    vec![
        Row::new(S, format!("{SESSIONS} sessions × {PROMPTS} prompts"), rate, "turns/s")
            .at_least(1000.0),
        Row::new(S, "CPU per turn", per_turn.cpu_ms, "ms"),
        Row::new(S, "context switches per turn", per_turn.switches, ""),
    ]
}
