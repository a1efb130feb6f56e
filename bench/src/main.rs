//! `airlock-bench`: scenarios run against the real `airlock` release binary, with the mock model
//! of `airlock-tests` (the chat-completions streaming wire over a real socket, zero think time).
//!
//! `cargo run --release -p airlock-bench` prints one Markdown table and writes the same rows to
//! `target/bench/latest.json`. `--quick` shrinks every scenario so the whole run takes well under
//! a minute: CI runs it as a smoke check. A benchmark never fails on a time; the table shows each
//! number next to its target, and people read it.

mod scale;

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
    /// `ms`, `MB`, `KB`, `s`.
    pub unit: &'static str,
    /// The most it should be, in `unit`.
    pub at_most: Option<f64>,
}

impl Row {
    /// A measured value with no target.
    pub fn new(
        scenario: &'static str,
        measure: impl Into<String>,
        value: f64,
        unit: &'static str,
    ) -> Row {
        Row { scenario, measure: measure.into(), value, unit, at_most: None }
    }

    /// The same row with a target.
    pub fn at_most(self, target: f64) -> Row {
        Row { at_most: Some(target), ..self }
    }

    fn verdict(&self) -> &'static str {
        match self.at_most {
            Some(target) if self.value <= target => "met",
            Some(_) => "**missed**",
            None => "",
        }
    }
}

/// How big the scenarios are.
#[derive(Clone, Copy)]
pub struct Size {
    /// Sessions in the stored-sessions scenarios.
    pub sessions: usize,
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
    /// The longest a scenario may take.
    pub limit: Duration,
}

impl Size {
    fn full() -> Size {
        Size {
            sessions: 100_000,
            live: 10_000,
            wake_log: 10_000,
            wakes: 200,
            receipt_log: 100_000,
            lookups: 2_000,
            limit: Duration::from_secs(600),
        }
    }

    fn quick() -> Size {
        Size {
            sessions: 5_000,
            live: 1_000,
            wake_log: 2_000,
            wakes: 20,
            receipt_log: 10_000,
            lookups: 200,
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
    let bin = airlock_tests::gateway::airlock_bin();
    eprintln!(
        "airlock-bench: {} with {}",
        if quick { "quick run" } else { "full run" },
        bin.display()
    );
    let work = tempfile::tempdir().expect("a temp dir");
    // Compiled core code is kept between runs: no scenario measures cranelift.
    let cache = target_dir().join("bench").join("core-cache");
    let mut rows = Vec::new();
    if runs("stored sessions") {
        rows.extend(
            bounded("stored sessions", size, scale::stored_sessions(work.path(), &cache, size))
                .await,
        );
    }
    if runs("wake") {
        rows.extend(bounded("wake", size, scale::wake(work.path(), &cache, size)).await);
    }
    if runs("receipts") {
        rows.extend(bounded("receipts", size, scale::receipts(work.path(), &cache, size)).await);
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
        let target = row.at_most.map_or(String::new(), |t| format!("≤ {t} {}", row.unit));
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
            json!({"scenario": r.scenario, "measure": r.measure, "value": r.value, "unit": r.unit,
                   "atMost": r.at_most})
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
