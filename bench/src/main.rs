//! `airlock-bench`: scenarios run against the real `airlock` release binary, with the mock model
//! of `airlock-tests` (the chat-completions streaming wire over a real socket, zero think time).
//!
//! `cargo run --release -p airlock-bench` prints one Markdown table and writes the same rows to
//! `target/bench/latest.json`. `--quick` shrinks every scenario so the whole run takes well under
//! a minute: CI runs it as a smoke check. A benchmark never fails on a time; the table shows each
//! number next to its target, and people read it.

mod cluster;
mod code;
mod conn;
mod enqueue;
mod measure;
mod rotation;
mod scale;
mod sse;
mod traces;
mod turns;
mod waiting;
mod webhooks;

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

/// One number a scenario measured.
pub struct Row {
    /// The scenario.
    pub scenario: &'static str,
    /// What was measured.
    pub measure: String,
    /// The value, in `unit`.
    pub value: f64,
    /// `ms`, `MB`, `KB`, `s`, `req/s`, `×`.
    pub unit: &'static str,
    /// What it should be, in `unit`.
    pub target: Option<Target>,
}

/// The bound a measured value should keep.
#[derive(Clone, Copy)]
pub enum Target {
    /// At most this (a time, a size).
    AtMost(f64),
    /// At least this (a rate).
    AtLeast(f64),
}

impl Row {
    /// A measured value with no target.
    pub fn new(
        scenario: &'static str,
        measure: impl Into<String>,
        value: f64,
        unit: &'static str,
    ) -> Row {
        Row { scenario, measure: measure.into(), value, unit, target: None }
    }

    /// The same row with an upper bound.
    pub fn at_most(self, bound: f64) -> Row {
        Row { target: Some(Target::AtMost(bound)), ..self }
    }

    /// The same row with a lower bound.
    pub fn at_least(self, bound: f64) -> Row {
        Row { target: Some(Target::AtLeast(bound)), ..self }
    }

    fn verdict(&self) -> &'static str {
        match self.target {
            Some(Target::AtMost(bound)) if self.value <= bound => "met",
            Some(Target::AtLeast(bound)) if self.value >= bound => "met",
            Some(_) => "**missed**",
            None => "",
        }
    }

    fn target_text(&self) -> String {
        match self.target {
            Some(Target::AtMost(bound)) => format!("≤ {bound} {}", self.unit),
            Some(Target::AtLeast(bound)) => format!("≥ {bound} {}", self.unit),
            None => String::new(),
        }
    }
}

/// How big the scenarios are.
#[derive(Clone, Copy)]
pub struct Size {
    /// Sessions in the stored-sessions scenarios.
    pub sessions: usize,
    /// Of those, the sessions touched once and evicted again.
    pub touched: usize,
    /// Live idle sessions whose memory is measured.
    pub live: usize,
    /// Events in the log of the session that is woken again and again.
    pub wake_log: usize,
    /// Wakes timed.
    pub wakes: usize,
    /// Events in the log whose receipts are looked up.
    pub receipt_log: usize,
    /// Receipt lookups timed.
    pub lookups: usize,
    /// Turns timed in the one-session stdio scenario.
    pub turns: usize,
    /// Turns run before those are timed.
    pub warmup_turns: usize,
    /// Turns of the long session whose last 100 are timed (none when at most 100).
    pub long_turns: usize,
    /// How long each HTTP load runs, in seconds.
    pub load_seconds: f64,
    /// Events in the long session's log.
    pub long_log: usize,
    /// Items in the long queue.
    pub pending: usize,
    /// Enqueues timed per session in the long-session scenario.
    pub samples: usize,
    /// Sessions waiting for an approval at once.
    pub waiting: usize,
    /// SSE subscribers of one session.
    pub subscribers: usize,
    /// POSTs whose events they all see.
    pub posts: usize,
    /// Idle SSE connections held at once.
    pub idle_streams: usize,
    /// The longest a scenario may take.
    pub limit: Duration,
}

impl Size {
    fn full() -> Size {
        Size {
            sessions: 1_000_000,
            touched: 100_000,
            live: 10_000,
            wake_log: 10_000,
            wakes: 200,
            receipt_log: 100_000,
            lookups: 2_000,
            turns: 1_000,
            warmup_turns: 50,
            long_turns: 1_000,
            load_seconds: 5.0,
            long_log: 100_000,
            pending: 5_000,
            samples: 500,
            waiting: 10_000,
            subscribers: 1_000,
            posts: 20,
            idle_streams: 10_000,
            limit: Duration::from_secs(600),
        }
    }

    fn quick() -> Size {
        Size {
            sessions: 5_000,
            touched: 5_000,
            live: 1_000,
            wake_log: 2_000,
            wakes: 20,
            receipt_log: 10_000,
            lookups: 200,
            turns: 100,
            warmup_turns: 10,
            long_turns: 0,
            load_seconds: 1.0,
            long_log: 5_000,
            pending: 500,
            samples: 100,
            waiting: 200,
            subscribers: 100,
            posts: 5,
            idle_streams: 500,
            limit: Duration::from_secs(60),
        }
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|arg| arg == "--quick");
    // `--only NAME`: run the scenarios whose name contains NAME (e.g. to profile one).
    let only = args.iter().position(|arg| arg == "--only").and_then(|i| args.get(i + 1));
    let runs = |scenario: &str| only.is_none_or(|only| scenario.contains(only.as_str()));
    let size = if quick { Size::quick() } else { Size::full() };
    // `--stdio-cmd "…"` and `--stdio-env K=V`: the turn scenarios drive another runtime.
    let valued = |flag: &str| -> Vec<String> {
        args.windows(2).filter(|pair| pair[0] == flag).map(|pair| pair[1].clone()).collect()
    };
    if let Some(command) = valued("--stdio-cmd").pop()
        && let Err(error) = turns::Runtime::choose(&command, &valued("--stdio-env"))
    {
        eprintln!("airlock-bench: {error}");
        std::process::exit(2);
    }
    let bin = airlock_tests::gateway::airlock_bin();
    eprintln!(
        "airlock-bench: {} with {}",
        if quick { "quick run" } else { "full run" },
        bin.display()
    );
    let work = tempfile::tempdir().expect("a temp dir");
    let mut rows = Vec::new();
    let work = work.path();
    // Each scenario named, with what runs it: skipped unless `--only` picks it.
    macro_rules! scenarios {
        ($($name:literal => $run:path,)*) => {$(
            if runs($name) {
                rows.extend(bounded($name, size, $run(work, size)).await);
            }
        )*};
    }
    scenarios! {
        "turn" => turns::one_session,
        "closed loop" => turns::closed_loop,
        "enqueue" => enqueue::throughput,
        "long sessions" => enqueue::long_sessions,
        "sse" => sse::fan_out,
        "idle streams" => sse::idle_streams,
        "stored sessions" => scale::stored_sessions,
        "wake" => scale::wake,
        "waiting sessions" => waiting::sessions,
        "forks" => scale::forks,
        "receipts" => scale::receipts,
        "cluster" => cluster::scaling,
        "code tools" => code::calls,
        "webhooks" => webhooks::dead_receiver,
        "traces" => traces::dead_collector,
    }
    print_table(&rows);
    write_json(&rows, quick);
}

/// Runs a scenario for at most `size.limit`; a scenario that overruns gives one row saying so.
async fn bounded(
    scenario: &'static str,
    size: Size,
    run: impl Future<Output = Vec<Row>>,
) -> Vec<Row> {
    eprintln!("airlock-bench: {scenario}…");
    match tokio::time::timeout(size.limit, run).await {
        Ok(rows) => rows,
        Err(_) => vec![Row::new(scenario, "timed out after (s)", size.limit.as_secs_f64(), "s")],
    }
}

fn print_table(rows: &[Row]) {
    println!("| scenario | measure | value | target | |");
    println!("|---|---|---:|---:|---|");
    for row in rows {
        let target = row.target_text();
        println!(
            "| {} | {} | {:.2} {} | {} | {} |",
            row.scenario,
            row.measure,
            row.value,
            row.unit,
            target,
            row.verdict()
        );
    }
}

fn write_json(rows: &[Row], quick: bool) {
    let rows: Vec<_> = rows
        .iter()
        .map(|r| {
            let (at_most, at_least) = match r.target {
                Some(Target::AtMost(bound)) => (Some(bound), None),
                Some(Target::AtLeast(bound)) => (None, Some(bound)),
                None => (None, None),
            };
            json!({"scenario": r.scenario, "measure": r.measure, "value": r.value, "unit": r.unit,
                   "atMost": at_most, "atLeast": at_least})
        })
        .collect();
    let dir = target_dir().join("bench");
    let written = std::fs::create_dir_all(&dir).and_then(|()| {
        let text = serde_json::to_string_pretty(&json!({"quick": quick, "rows": rows}))
            .expect("rows serialize");
        std::fs::write(dir.join("latest.json"), text)
    });
    if let Err(error) = written {
        eprintln!("airlock-bench: cannot write {}: {error}", dir.display());
    }
}

/// `target/`: this executable runs from `target/release`.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the process knows its path");
    exe.parent().and_then(|p| p.parent()).map_or_else(|| PathBuf::from("target"), PathBuf::from)
}
