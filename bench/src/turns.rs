//! Turns through `airlock stdio`, driven by this independent JSON-RPC client: one session's
//! prompt → idle, and many sessions in a closed loop. The log is a real file at `full`
//! durability, so every turn is fsynced.
//!
//! Any other runtime that speaks the same stdio wire can be driven by the same client, against
//! the same mock, in the same run: `--stdio-cmd "…"` (with `{mock}` for the mock's base URL and
//! `{data}` for a data path in the run's directory) and `--stdio-env K=V`, see [`Runtime`].

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use airlock_tests::MockModel;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, oneshot};

use crate::measure::{Usage, percentile, rss_mb, thread_cpu_ms};
use crate::{Row, Size};

/// The process the turn scenarios drive: `airlock stdio` unless `--stdio-cmd` named another.
pub struct Runtime {
    /// How its rows name it.
    label: String,
    /// The program and its arguments, `{mock}` and `{data}` not yet filled in.
    command: Vec<String>,
    /// Its environment beyond the bench's own, likewise.
    env: Vec<(String, String)>,
}

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

impl Runtime {
    /// Drives `command` (split as a shell would) with `env` (`K=V` each) instead of `airlock
    /// stdio`; answers what is wrong with them.
    pub fn choose(command: &str, env: &[String]) -> Result<(), String> {
        let command = shlex::split(command)
            .filter(|words| !words.is_empty())
            .ok_or_else(|| format!("--stdio-cmd {command:?} is not a command line"))?;
        let env = (env.iter())
            .map(|pair| {
                let (key, value) = pair.split_once('=').ok_or_else(|| {
                    format!("--stdio-env {pair:?} is not K=V (e.g. MOCK_URL={{mock}})")
                })?;
                Ok((key.to_owned(), value.to_owned()))
            })
            .collect::<Result<_, String>>()?;
        let program = Path::new(&command[0]).file_name().map(|n| n.to_string_lossy());
        let label = format!("stdio-cmd: {}", program.unwrap_or_default());
        let _ = RUNTIME.set(Runtime { label, command, env });
        Ok(())
    }

    /// `airlock stdio` itself (`None`), then the runtime `--stdio-cmd` named, if any: each turn
    /// scenario runs for both, so they are measured by one client in one run.
    fn all() -> impl Iterator<Item = Option<&'static Runtime>> {
        [None].into_iter().chain(RUNTIME.get().map(Some))
    }

    /// How rows name a runtime: `stdio` for `airlock stdio` itself.
    fn label(runtime: Option<&Runtime>) -> &str {
        runtime.map_or("stdio", |runtime| runtime.label.as_str())
    }

    /// A scenario's name with the runtime's (`turn (stdio)`), made once.
    fn scenario(name: &str, runtime: Option<&Runtime>) -> &'static str {
        Box::leak(format!("{name} ({})", Runtime::label(runtime)).into_boxed_str())
    }

    /// The command that runs `runtime` (`None`: `airlock stdio`) on `db` against `mock`; `args`
    /// go after `airlock stdio`'s own (another runtime is given none).
    fn command(runtime: Option<&Runtime>, db: &Path, mock: &MockModel, args: &[&str]) -> Command {
        let Some(runtime) = runtime else {
            let mut command = Command::new(airlock_tests::gateway::airlock_bin());
            command.args(["stdio", "--model", "openai:mock", "--data"]).arg(db).args(args);
            command.env("AIRLOCK_BASE_URL", mock.base_url());
            command.env("AIRLOCK_CACHE_DIR", airlock_tests::gateway::compiled_cache());
            return command;
        };
        let fill = |text: &str| {
            text.replace("{mock}", &mock.base_url()).replace("{data}", &db.to_string_lossy())
        };
        let mut command = Command::new(fill(&runtime.command[0]));
        command.args(runtime.command[1..].iter().map(|arg| fill(arg)));
        command.envs(runtime.env.iter().map(|(key, value)| (key, fill(value))));
        command
    }
}

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
    /// `runtime` ([`Runtime`]; `None`: `airlock stdio`) on `db`, with `args` after `airlock
    /// stdio`'s own.
    async fn start(
        runtime: Option<&Runtime>,
        db: &Path,
        mock: &MockModel,
        args: &[&str],
    ) -> StdioGateway {
        let label = Runtime::label(runtime);
        let mut child = Runtime::command(runtime, db, mock, args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|error| panic!("the runtime ({label}) starts: {error}"));
        // For a profiler: `perf record -g -p PID`, or `perf report --pid PID` of a whole-system one.
        let pid = child.id().unwrap_or_default();
        eprintln!("airlock-bench: the runtime ({label}) has pid {pid}");
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
    let mut rows = Vec::new();
    for runtime in Runtime::all() {
        rows.extend(one_session_of(runtime, work, size).await);
    }
    rows
}

async fn one_session_of(runtime: Option<&Runtime>, work: &Path, size: Size) -> Vec<Row> {
    let s = Runtime::scenario("turn", runtime);
    let mock = MockModel::start().await;
    mock.forget_requests();
    let db = work.join(format!("turn-{}.db", runtime.is_some()));
    let gw = StdioGateway::start(runtime, &db, &mock, &[]).await;
    gw.turns("warm-up", size.warmup_turns).await;
    let before = Usage::of(gw.pid());
    let mut samples = Vec::with_capacity(size.turns);
    for session in 0..size.turns.div_ceil(TURNS_PER_SESSION) {
        let turns = TURNS_PER_SESSION.min(size.turns - samples.len());
        samples.extend(gw.turns(&format!("one-{session}"), turns).await);
    }
    let per_turn = Usage::of(gw.pid()).per(before, size.turns);
    let (mut rows, floor) = floor(s, work, &mock).await;
    let median = percentile(&mut samples, 50.0);
    rows.extend([
        Row::new(s, "prompt → idle, median", median, "ms"),
        Row::new(s, "  ÷ floor", median / floor, "×").at_most(1.5),
        Row::new(s, "prompt → idle, p99", percentile(&mut samples, 99.0), "ms"),
        Row::new(s, "CPU per turn", per_turn.cpu_ms, "ms").at_most(0.45),
        Row::new(s, "  of it in the kernel", per_turn.kernel_ms, "ms"),
        Row::new(s, "context switches per turn", per_turn.switches, "").at_most(12.0),
        Row::new(s, "RSS after the turns", rss_mb(gw.pid()), "MB"),
    ]);
    if size.long_turns > TURNS_PER_SESSION {
        let last = |n: usize| format!("turns {}–{n} of one session", n - 99);
        gw.turns("long", size.long_turns - 100).await;
        let before = Usage::of(gw.pid());
        let mut long = gw.turns("long", 100).await;
        let long_cpu = Usage::of(gw.pid()).per(before, 100).cpu_ms;
        let long_median = percentile(&mut long, 50.0);
        rows.extend([
            Row::new(s, format!("{}, median", last(size.long_turns)), long_median, "ms"),
            Row::new(s, "  ÷ prompt → idle, median", long_median / median, "×").at_most(1.2),
            Row::new(s, "  CPU per turn", long_cpu, "ms"),
        ]);
        if runtime.is_none() {
            let mut compacting = compacting(work, size.long_turns).await;
            let measure = format!("{}, {COMPACTING} compacting, median", last(size.long_turns));
            rows.push(Row::new(s, measure, percentile(&mut compacting, 50.0), "ms"));
        }
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
    let gw = StdioGateway::start(None, &work.join("compacting.db"), &mock, &args).await;
    gw.turns("compacting", n).await.split_off(n - 100)
}

/// What a durable turn cannot go below on this machine now: the mock's round trip (a request and
/// its whole streamed answer) and an fsync of a 4 KB write in the data directory, each the median
/// of 200. A turn waits for one round trip and two commits (its prompt; its answer and end):
/// the rows, that sum, and the CPU the kernel spends on two such commits (which the turn's CPU
/// row includes).
async fn floor(s: &'static str, work: &Path, mock: &MockModel) -> (Vec<Row>, f64) {
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
    let cpu_before = thread_cpu_ms();
    for _ in 0..TIMES {
        std::io::Write::write_all(&mut file, &[7; 4096]).expect("the probe is written");
        let started = Instant::now();
        file.sync_all().expect("the probe is synced");
        fsyncs.push(started.elapsed());
    }
    let commit_cpu = (thread_cpu_ms() - cpu_before) / TIMES as f64;
    let round_trip = percentile(&mut round_trips, 50.0);
    let fsync = percentile(&mut fsyncs, 50.0);
    let floor = round_trip + 2.0 * fsync;
    let rows = vec![
        Row::new(s, "floor: the mock's round trip, median", round_trip, "ms"),
        Row::new(s, "floor: an fsync, median", fsync, "ms"),
        Row::new(s, "floor: a round trip and two fsyncs", floor, "ms"),
        Row::new(s, "floor: CPU of two 4 KB writes and their fsyncs", 2.0 * commit_cpu, "ms"),
    ];
    (rows, floor)
}

/// `sessions` sessions in one process, each sending its next prompt when the last one's turn
/// ended: turns per second.
pub async fn closed_loop(work: &Path, _size: Size) -> Vec<Row> {
    let mut rows = Vec::new();
    for runtime in Runtime::all() {
        rows.extend(closed_loop_of(runtime, work).await);
    }
    rows
}

async fn closed_loop_of(runtime: Option<&Runtime>, work: &Path) -> Vec<Row> {
    let s = Runtime::scenario("closed loop", runtime);
    const SESSIONS: usize = 20;
    const PROMPTS: usize = 10;
    let mock = MockModel::start().await;
    mock.forget_requests();
    let db = work.join(format!("loop-{}.db", runtime.is_some()));
    let gw = Arc::new(StdioGateway::start(runtime, &db, &mock, &[]).await);
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
        Row::new(s, format!("{SESSIONS} sessions × {PROMPTS} prompts"), rate, "turns/s")
            .at_least(1000.0),
        Row::new(s, "CPU per turn", per_turn.cpu_ms, "ms"),
        Row::new(s, "context switches per turn", per_turn.switches, ""),
    ]
}
